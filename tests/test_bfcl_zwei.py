"""BFCL, part two: its files held to its runner's rules, its tools as its generation sends them, its overalls
as it computes them, a sample drawn across each file, and every line of every form bounded."""

import collections
import json
import shutil

import pytest

from conftest import ROOT, completion, meldungen, vorbereitet

import bfcl_pruefer
import messen

BFCL = ROOT / "tests" / "bfcl"
HINWEIS = " Note that the provided function is in Python 3 syntax."


def zeilen(datei):
    return datei.read_text().splitlines(keepends=True)


def kopie(tmp_path, kategorie, fragen=None, antworten=None):
    """A category's file and its possible_answer in tmp_path, each as given (a list of lines) or as shipped."""
    (tmp_path / "possible_answer").mkdir(exist_ok=True)
    name = f"BFCL_v4_{kategorie}.json"
    (tmp_path / name).write_text("".join(fragen or zeilen(BFCL / name)))
    if (BFCL / "possible_answer" / name).exists():
        (tmp_path / "possible_answer" / name).write_text(
            "".join(antworten or zeilen(BFCL / "possible_answer" / name)))
    return tmp_path / name


def geaendert(zeile, **felder):
    return json.dumps({**json.loads(zeile), **felder}) + "\n"


def roh(kategorie):
    return [json.loads(z) for z in zeilen(BFCL / f"BFCL_v4_{kategorie}.json")]


ANTWORTEN = zeilen(BFCL / "possible_answer" / "BFCL_v4_simple_python.json")
FRAGEN = zeilen(BFCL / "BFCL_v4_simple_python.json")
PA = "possible_answer/BFCL_v4_simple_python.json"


def funktionen_umbenannt(*namen):
    """The first multiple case, its first functions named as given."""
    fall = roh("multiple")[0]
    for f, n in zip(fall["function"], namen):
        f["name"] = n
    return fall


@pytest.mark.parametrize("fragen, antworten, zeile, meldung", [
    (None, [ANTWORTEN[0], ANTWORTEN[0], *ANTWORTEN[2:]], f"{PA}:2",
     f"the id {json.loads(ANTWORTEN[0])['id']} where the case on that line of BFCL_v4_simple_python.json is "
     f"{json.loads(FRAGEN[1])['id']}; BFCL's runner pairs the two files line by line"),
    (None, ANTWORTEN[1:] + ANTWORTEN[:1], f"{PA}:1",
     f"the id {json.loads(ANTWORTEN[1])['id']} where the case on that line of BFCL_v4_simple_python.json is "
     f"{json.loads(FRAGEN[0])['id']}; BFCL's runner pairs the two files line by line"),
    (None, ANTWORTEN[:-1], PA, f"no expected call for {json.loads(FRAGEN[-1])['id']} (its lines end before the "
     "cases do); BFCL's runner pairs the two files line by line"),
    (FRAGEN[:-1], None, f"{PA}:60", "an expected call beyond the last case of BFCL_v4_simple_python.json; BFCL's "
     "runner pairs the two files line by line"),
    (None, [geaendert(ANTWORTEN[0], ground_truth=[{k: dict.fromkeys(v, []) for k, v in
                                                   json.loads(ANTWORTEN[0])["ground_truth"][0].items()}]),
            *ANTWORTEN[1:]], "BFCL_v4_simple_python.json:1",
     f"every argument of the expected call {next(iter(json.loads(ANTWORTEN[0])['ground_truth'][0]))} accepts no "
     "value ([]): no answer could pass"),
], ids=["id zweimal", "um eine zeile verschoben", "antworten zu kurz", "antworten zu lang", "nichts angenommen"])
def test_a_possible_answer_file_bfcls_runner_would_refuse_is_refused_with_file_and_line(
        cli, tmp_path, fragen, antworten, zeile, meldung):
    datei = kopie(tmp_path, "simple_python", fragen, antworten)
    status, out, err = cli("--selbsttest", "--faelle", str(datei))
    assert (status, meldungen(err), out) == (2, [f"messen: {tmp_path / zeile}: {meldung}"], "")


@pytest.mark.parametrize("fall, meldung", [
    (funktionen_umbenannt("triangle_properties.get", "triangle_properties_get"),
     "triangle_properties.get and triangle_properties_get are both sent as triangle_properties_get (dots as "
     "underscores, as BFCL sends them), and one name can be one tool only"),
    (funktionen_umbenannt("get weather"), "the function 'get weather' is no name a tool may have "
     "(^[a-zA-Z0-9_-]{1,64}$, dots as underscores)"),
    (funktionen_umbenannt("f" * 65), f"the function '{'f' * 65}' is no name a tool may have "
     "(^[a-zA-Z0-9_-]{1,64}$, dots as underscores)"),
], ids=["zwei zu einem namen", "leerzeichen", "65 zeichen"])
def test_functions_no_server_could_take_as_tools_are_refused_with_file_and_line(cli, tmp_path, fall, meldung):
    fragen = zeilen(BFCL / "BFCL_v4_multiple.json")
    datei = kopie(tmp_path, "multiple", [fragen[0], json.dumps(fall) + "\n", *fragen[2:]])
    status, out, err = cli("--selbsttest", "--faelle", str(datei))
    assert (status, meldungen(err)) == (2, [f"messen: {datei}:2: {meldung}"])


def test_each_function_is_sent_with_the_python_hint_bfcls_generation_adds(cli, endpunkt):
    """Over real HTTP: every tool's description is the function's own with BFCL's hint after it; the checker's
    schema (what a call is graded by) is the function's as written."""
    e = endpunkt(lambda fall, body, nummer: completion({"role": "assistant", "content": "No."}))
    vorbereitet(cli, "--url", e.url, "--modell", "m", "--faelle", str(BFCL))
    beschreibung = {json.dumps(f["parameters"], sort_keys=True): f["description"]
                    for k in ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
                    for r in roh(k) for f in r["function"]}
    gesendet = [w["function"] for _, b in e.anfragen for w in b.get("tools", [])]
    assert len(e.anfragen) == 220 and len(gesendet) == sum(len(r["function"]) for k in (
        "simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance") for r in roh(k))
    assert all(w["description"].endswith(HINWEIS) for w in gesendet)
    einfach = roh("simple_python")[0]["function"][0]
    assert messen.bfcl_werkzeug(einfach)["function"]["description"] == einfach["description"] + HINWEIS
    assert "Python 3" not in json.dumps(messen.lade_faelle(BFCL)[0][0]["erwartet"][0]["_schema"])


def test_the_tools_sent_are_bfcls_own_loader_and_converter_where_bfcl_eval_is_at_hand(cli, endpunkt):
    werkzeuge = bfcl_pruefer.gesendet()
    if werkzeuge is None:
        pytest.skip("bfcl-eval is not installed (MESSEN_BFCL=1 installs it without its dependencies)")
    e = endpunkt(lambda fall, body, nummer: completion({"role": "assistant", "content": "No."}))
    vorbereitet(cli, "--url", e.url, "--modell", "m", "--faelle", str(BFCL))
    gesendet = collections.Counter(json.dumps([b["messages"], b.get("tools", [])]) for _, b in e.anfragen)
    bfcls = collections.Counter(json.dumps([r["question"][0], werkzeuge(r, k)]) for k in (
        "simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance") for r in roh(k))
    assert (gesendet, sum(gesendet.values())) == (bfcls, 220)


# ---------------------------------------------------------------------------
# BFCL's own overalls, and the restraint BFCL counts that messen does not
# ---------------------------------------------------------------------------

LIVE = {"simple_python": "live_simple", "multiple": "live_multiple", "parallel": "live_parallel",
        "parallel_multiple": "live_parallel_multiple", "irrelevance": "live_irrelevance"}


def mit_live(ordner):
    """The sample's five categories in ordner, and each again as its live counterpart (ids prefixed live_)."""
    ordner.mkdir()
    for kategorie, live in LIVE.items():
        kopie(ordner, kategorie)
        for unter in ("", "possible_answer/"):
            quelle = BFCL / f"{unter}BFCL_v4_{kategorie}.json"
            if quelle.exists():
                (ordner / f"{unter}BFCL_v4_{live}.json").write_text("".join(
                    geaendert(z, id="live_" + json.loads(z)["id"]) for z in zeilen(quelle)))
    return ordner


def nur_einfach_richtig(fall, body, nummer):
    """The recorded right answer to each simple case (live or not), "No." to every other."""
    from test_bfcl import ANTWORT, BY_SCHLUESSEL, schluessel
    id_ = BY_SCHLUESSEL.get(schluessel(body)) if body.get("tools") else None
    if id_ and id_.startswith("simple_python"):
        return completion(ANTWORT[id_, "richtig"]["nachricht"])
    return completion({"role": "assistant", "content": "No."})


def test_bfcls_overalls_are_bfcls_a_model_that_never_calls_reads_0_percent(cli, endpunkt, tmp_path):
    """The whole folder, live categories too: a model that never calls reads 0 % in both of BFCL's overalls,
    whatever irrelevance reads; the pooled share is named messen's."""
    ordner = mit_live(tmp_path / "d")
    nie = endpunkt(lambda fall, body, nummer: completion({"role": "assistant", "content": "No."}))
    out = vorbereitet(cli, "--url", nie.url, "--modell", "m", "--tag", "nie", "--faelle", str(ordner))[1]
    assert ("BFCL's verdict (tool_calls only, as its FC mode): simple_python 0 %, multiple 0 %, parallel 0 %, "
            "parallel_multiple 0 %, irrelevance 100 %, live_simple 0 %, live_multiple 0 %, live_parallel 0 %, "
            "live_parallel_multiple 0 %, live_irrelevance 100 %; BFCL's overall non-live 0 %, live 0 %; pooled by "
            f"messen over all {80 / 440 * 100:.1f} %.") in out.splitlines()
    assert not any(z.startswith("BFCL counts") for z in out.splitlines())  # "No." is restraint to both


def test_bfcls_non_live_overall_is_a_mean_of_categories_and_its_live_one_a_mean_of_cases(cli, endpunkt, tmp_path):
    """Right on the simple cases only: non-live is (1 + 0 + 0 + 0) / 4, live 60 of the 180 live call cases."""
    ordner = mit_live(tmp_path / "d")
    e = endpunkt(nur_einfach_richtig)
    k = json.loads(vorbereitet(cli, "--url", e.url, "--modell", "m", "--tag", "einfach", "--faelle", str(ordner),
                               "--json")[1])["bfcl"]
    assert (k["stufen"]["simple_python"], k["stufen"]["live_simple"]) == (1, 1)
    assert (k["nicht_live"], k["live"], k["gesamt"]) == ((1 + 0 + 0 + 0) / 4, 60 / (60 + 40 + 40 + 40),
                                                         (2 * 60 + 2 * 40) / 440)
    vorbereitet(cli, "--url", e.url, "--modell", "m", "--tag", "zwei", "--faelle", str(ordner))
    tabelle = cli("--vergleich", "einfach", "zwei")[1].splitlines()
    assert [z.split()[:3] for z in tabelle if z.startswith(("BFCL non-live", "BFCL live ", "BFCL pooled"))] == [
        ["BFCL", "non-live", "25"], ["BFCL", "live", f"{60 / 180 * 100:.1f}"], ["BFCL", "pooled", f"{200 / 440 * 100:.1f}"]]
    # a folder without a live file: BFCL's live overall is not shown, and non-live is "-" until all four are asked
    teil = tmp_path / "teil"
    teil.mkdir()
    kopie(teil, "simple_python"), kopie(teil, "irrelevance")
    out = vorbereitet(cli, "--url", e.url, "--modell", "m", "--tag", "teil", "--faelle", str(teil))[1]
    assert ("BFCL's verdict (tool_calls only, as its FC mode): simple_python 100 %, irrelevance 100 %; BFCL's "
            "overall non-live -; pooled by messen over all 100 %.") in out.splitlines()


def test_a_line_counts_the_irrelevance_answers_bfcl_takes_for_restraint_and_messen_does_not(cli, endpunkt):
    """Calls written as text, a malformed call, an answer cut at the cap: BFCL's FC mode sees no call in any of
    them and counts restraint; messen counts none of them as restraint, and says so by reason."""
    irrelevant = [r["id"] for r in roh("irrelevance")]

    def antwort(fall, body, nummer):
        from test_bfcl import BY_SCHLUESSEL, schluessel
        i = irrelevant.index(BY_SCHLUESSEL[schluessel(body)]) if body.get("tools") and \
            BY_SCHLUESSEL[schluessel(body)] in irrelevant else None
        name = body["tools"][0]["function"]["name"] if body.get("tools") else None
        if i is not None and i < 19:
            return completion({"role": "assistant", "content": json.dumps({"name": name, "arguments": {}})})
        if i == 19:
            return completion({"role": "assistant", "content": None, "tool_calls": [{
                "id": "call_1", "type": "function", "function": {"name": name, "arguments": "{\"x\": "}}]},
                "tool_calls")
        if i == 20:
            return completion({"role": "assistant", "content": "Let me think about"}, "length",
                              {"prompt_tokens": 50, "completion_tokens": 256, "total_tokens": 306})
        return completion({"role": "assistant", "content": "No."})
    e = endpunkt(antwort)
    out = vorbereitet(cli, "--url", e.url, "--modell", "m", "--faelle", str(BFCL), "--stufen", "irrelevance",
                      "--extra", '{"max_tokens": 256}')[1]
    zeilen_ = out.splitlines()
    assert f"By stage: irrelevance {19 / 40 * 100:.1f} %." in zeilen_  # messen: the 19 "No." held still
    assert f"BFCL's verdict (tool_calls only, as its FC mode): irrelevance 100 %; pooled by messen over all 100 %." \
        in zeilen_
    assert ("BFCL counts 21 irrelevance answers as restraint that messen does not: 19 written as text, 1 malformed "
            "(fehlerhaft), 1 cut by the token limit (abgeschnitten).") in zeilen_
