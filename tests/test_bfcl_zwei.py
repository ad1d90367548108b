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
