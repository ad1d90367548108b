"""BFCL, part two: its files held to its runner's rules, its tools as its generation sends them, its overalls
as it computes them, a sample drawn across each file, and every line of every form bounded."""

import collections
import json

import pytest

from conftest import ROOT, completion, meldungen, schluss, vorbereitet

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
    eigene = [f["description"] for k in ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
              for r in roh(k) for f in r["function"]]
    gesendet = [w["function"] for _, b in e.anfragen for w in b.get("tools", [])]
    assert len(e.anfragen) == 220 and len(gesendet) == sum(len(r["function"]) for k in (
        "simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance") for r in roh(k))
    assert sorted(w["description"] for w in gesendet) == sorted(d + HINWEIS for d in eigene)
    einfach = roh("simple_python")[0]["function"][0]
    assert messen.bfcl_werkzeug(einfach)["function"]["description"] == einfach["description"] + HINWEIS
    assert "Python 3" not in json.dumps(messen.lade_faelle(BFCL)[0][0].erwartet[0]["_schema"])


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
            "live_parallel_multiple 0 %, live_irrelevance 100 %; BFCL's overall non-live 0 % (partial: without "
            "simple_java, simple_javascript), live 0 %; all cases together "
            f"{80 / 440 * 100:.1f} % (messen's share, no figure of BFCL's).") in out.splitlines()
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
    tabelle = schluss(cli("--vergleich", "einfach", "zwei")[1])
    assert tabelle[-3] == ("BFCL's verdict (tool_calls only), paired: 0 (0 better, 0 worse): exact sign test p = 1: "
                           "the difference is not beyond chance at 5 %; --streng stops on messen's test above, never "
                           "on this alone.")  # the server broke nothing: no word of what it broke
    # BFCL's simple is a mean of simple_python, simple_java and simple_javascript, which messen never runs: its
    # non-live overall is partial, and named so; live has all four of its categories here
    assert [z.split()[:4] for z in tabelle if z.startswith(("BFCL non-live", "BFCL live ", "BFCL pooled"))] == [
        ["BFCL", "non-live", "(partial)", "25"], ["BFCL", "live", f"{60 / 180 * 100:.1f}", "%"],
        ["BFCL", "pooled", f"{200 / 440 * 100:.1f}", "%"]]
    assert k["fehlt"] == {"nicht_live": ["simple_java", "simple_javascript"], "live": []}
    # a folder without a live file: BFCL's live overall is not shown, and non-live is partial over what was asked
    teil = tmp_path / "teil"
    teil.mkdir()
    kopie(teil, "simple_python"), kopie(teil, "irrelevance")
    out = vorbereitet(cli, "--url", e.url, "--modell", "m", "--tag", "teil", "--faelle", str(teil))[1]
    assert ("BFCL's verdict (tool_calls only, as its FC mode): simple_python 100 %, irrelevance 100 %; BFCL's "
            "overall non-live 100 % (partial: without simple_java, simple_javascript, multiple, parallel, "
            "parallel_multiple); all cases together 100 % (messen's share, no figure of BFCL's).") in out.splitlines()


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
    assert ("BFCL's verdict (tool_calls only, as its FC mode): irrelevance 100 %; all cases together 100 % (messen's "
            "share, no figure of BFCL's).") in zeilen_
    assert ("BFCL counts 21 irrelevance answers as restraint that messen does not: 19 written as text, 1 malformed "
            "(fehlerhaft), 1 cut by the token limit (abgeschnitten).") in zeilen_


# ---------------------------------------------------------------------------
# --stichprobe: N cases of each file, drawn across it, the same each time
# ---------------------------------------------------------------------------

def gefragt(endpunkt_):
    from test_bfcl import BY_SCHLUESSEL, schluessel
    return [BY_SCHLUESSEL[schluessel({"tools": [], **b})] for _, b in endpunkt_.anfragen]


def test_a_sample_is_n_cases_of_each_file_drawn_across_it_and_the_same_each_time(cli, endpunkt):
    """--stichprobe 4: of each category's file the cases at (i + 1/2) * size / 4, never its first lines; asked the
    same in a second run, saved with the run, graded the same by --bewerten."""
    nein = lambda fall, body, nummer: completion({"role": "assistant", "content": "No."})  # noqa: E731
    e1, e2 = endpunkt(nein), endpunkt(nein)
    vorbereitet(cli, "--url", e1.url, "--modell", "m", "--tag", "s1", "--faelle", str(BFCL), "--stichprobe", "4")
    vorbereitet(cli, "--url", e2.url, "--modell", "m", "--tag", "s2", "--faelle", str(BFCL), "--stichprobe", "4")
    erwartet = [roh(k)[int((i + 0.5) * len(roh(k)) / 4)]["id"] for k in (
        "simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance") for i in range(4)]
    assert erwartet[:4] == [roh("simple_python")[i]["id"] for i in (7, 22, 37, 52)]  # 60 cases: 7.5, 22.5, ...
    assert sorted(gefragt(e1)) == sorted(gefragt(e2)) == sorted(erwartet)
    einstellungen = json.loads((cli.ausgabe / "s1.jsonl").read_text().splitlines()[0])["einstellungen"]
    assert einstellungen["stichprobe"] == 4
    status, out, err = cli("--bewerten", "s1")
    assert (status, out.splitlines()[0]) == (0, f"Model m, temp 0.0, n 1, tag s1: 20 cases, 20 outputs, measured "
                                                f"{einstellungen['datum']}"), err
    # a file of fewer cases than the sample is asked whole
    e3 = endpunkt(nein)
    vorbereitet(cli, "--url", e3.url, "--modell", "m", "--tag", "s3", "--faelle", str(BFCL / "BFCL_v4_parallel.json"),
                "--stichprobe", "100")
    assert len(e3.anfragen) == 40


def test_runs_of_different_samples_are_not_compared_and_a_sample_is_bfcls_only(cli, endpunkt):
    nein = endpunkt(lambda fall, body, nummer: completion({"role": "assistant", "content": "No."}))
    vorbereitet(cli, "--url", nein.url, "--modell", "m", "--tag", "vier", "--faelle", str(BFCL), "--stichprobe", "4")
    vorbereitet(cli, "--url", nein.url, "--modell", "m", "--tag", "fuenf", "--faelle", str(BFCL), "--stichprobe", "5")
    vorbereitet(cli, "--url", nein.url, "--modell", "m", "--tag", "alle", "--faelle", str(BFCL))
    for b in ("fuenf", "alle"):
        assert cli("--vergleich", "vier", b)[::2] == (2, f"messen: vier and {b} were measured on different samples "
                                                         "of BFCL's cases (--stichprobe); they cannot be compared\n")
    vorbereitet(cli, "--url", nein.url, "--modell", "m", "--tag", "vier2", "--faelle", str(BFCL), "--stichprobe", "4")
    assert cli("--vergleich", "vier", "vier2")[0] == 0
    status, _, err = cli("--url", nein.url, "--modell", "m", "--tag", "vier", "--faelle", str(BFCL),
                         "--stichprobe", "5")
    assert (status, err) == (2, f"messen: {cli.ausgabe / 'vier.jsonl'} was measured with stichprobe 4, not 5; use "
                                "another --tag, or --neu to measure anew (the old file is kept)\n")
    status, _, err = cli("--url", nein.url, "--modell", "m", "--tag", "kapitel", "--stichprobe", "5")
    assert (status, err) == (2, f"messen: --stichprobe draws from BFCL's files; {messen.faelle_standard()} is asked "
                                "whole (--stufen asks its stages)\n")
    assert cli("--url", nein.url, "--modell", "m", "--stichprobe", "0")[0] == 2


# ---------------------------------------------------------------------------
# Every line bounded: a comparison of 300 flipped cases
# ---------------------------------------------------------------------------

def test_no_line_of_a_comparison_grows_with_its_cases(cli, endpunkt, tmp_path):
    """300 irrelevance cases B's server answered empty: the case lists in a line stop after a dozen, the flip list
    after ten (--alle shows all 300), and no line of the text, the Markdown or stderr reaches 1,000 characters."""
    viele = tmp_path / "viele"
    viele.mkdir()
    irrelevanz = zeilen(BFCL / "BFCL_v4_irrelevance.json")
    (viele / "BFCL_v4_irrelevance.json").write_text("".join(
        geaendert(irrelevanz[i % 40], id=f"irrelevance_{i}") for i in range(300)))
    for tag, text in (("a", "No."), ("b", "")):
        e = endpunkt(lambda fall, body, nummer, text=text: completion({"role": "assistant", "content": text}))
        vorbereitet(cli, "--url", e.url, "--modell", "m", "--tag", tag, "--faelle", str(viele))
    status, out, err = cli("--vergleich", "a", "b", "--streng")
    assert status == 2
    z = out.splitlines()
    assert z[z.index("Worse in B (300):") + 31] == "  ... and 290 more (--alle shows every one)"
    assert ("300 cases could go either way by outputs the server spoiled, in b (leer: "
            + ", ".join(f"irrelevance_{i}" for i in range(12)) + " and 288 more).") in z
    assert "BFCL's verdict (tool_calls only), paired: 0 (0 better, 0 worse): exact sign test p = 1: the difference " \
           "is not beyond chance at 5 %; it counts what the server broke (300 cases here) as the model's, so " \
           "--streng stops on messen's test above, never on this alone." in z
    markdown = cli("--vergleich", "a", "b", "--markdown")[1]
    alle = cli("--vergleich", "a", "b", "--alle")[1]
    assert len([x for x in alle.splitlines() if x.startswith("      B: ")]) == 300
    einzeln = "".join(cli("--bewerten", "b", *form)[1] for form in ((), ("--markdown",)))
    assert "| failed | " + ", ".join(f"irrelevance_{i}" for i in range(10)) + " and 290 more |" in einzeln
    assert max(map(len, (out + markdown + err + alle + einzeln).splitlines())) < 1000
