"""BFCL's cases through messen: its files read as its categories, its verdict beside messen's.

The sample under tests/bfcl is 220 cases drawn from bfcl-eval 2026.3.23 (Apache-2.0): 60 simple_python,
40 each of multiple, parallel, parallel_multiple and irrelevance. tests/bfcl/antworten.jsonl holds answers
to each (made by tests/bfcl_aufnahme.py, and a real SmolLM2 run on llama-server) with BFCL's own verdict on
each, from its checker; where bfcl-eval is at hand, a test asks that checker again.
"""

import collections
import json
import shutil

import pytest

from conftest import ROOT, completion, meldungen, vorbereitet

import bfcl_pruefer
import messen

BFCL = ROOT / "tests" / "bfcl"
AUFGENOMMEN = [json.loads(z) for z in (BFCL / "antworten.jsonl").read_text().splitlines()]
VARIANTEN = list(dict.fromkeys(a["variante"] for a in AUFGENOMMEN))
KATEGORIEN = {"simple_python": 60, "multiple": 40, "parallel": 40, "parallel_multiple": 40, "irrelevance": 40}


def schluessel(body):
    """A case as a request names it: its messages and its tools' names."""
    return json.dumps([body["messages"], [w["function"]["name"] for w in body["tools"]]])


FAELLE = messen.lade_faelle(BFCL)[0]
BY_SCHLUESSEL = {schluessel({"messages": f.nachrichten, "tools": f.werkzeuge}): f.id for f in FAELLE}
ANTWORT = {(a["id"], a["variante"]): a for a in AUFGENOMMEN}


def aufgenommen(fall, body, nummer):
    """The recorded answer of the variant the request's model names, with its finish_reason and usage."""
    a = ANTWORT[BY_SCHLUESSEL[schluessel(body)], body["model"]]
    return completion(a["nachricht"], a["finish_reason"], a["usage"])


def lauf(cli, endpunkt, variante, *extra):
    e = endpunkt(aufgenommen)
    status, out, err = vorbereitet(cli, "--url", e.url, "--modell", variante, "--tag", variante, "--faelle",
                                   str(BFCL), *extra)
    return out, e


def test_the_sample_holds_at_least_200_cases_of_the_five_categories_with_answers_to_each():
    assert collections.Counter(f.stufe for f in FAELLE) == KATEGORIEN
    assert sum(KATEGORIEN.values()) == 220
    je = collections.Counter(a["variante"] for a in AUFGENOMMEN)
    assert {v: je[v] for v in ("richtig", "anders", "falsch", "text", "kaputt")} == dict.fromkeys(
        ("richtig", "anders", "falsch", "text", "kaputt"), 220)
    assert je["echt"] == 220  # the real model's answers to every case


@pytest.mark.parametrize("variante", VARIANTEN)
def test_messens_bfcl_verdict_is_bfcls_own_on_every_recorded_answer(cli, endpunkt, variante):
    """Over real HTTP, the whole command line: the cases BFCL's checker failed are those messen's BFCL verdict
    fails, category by category."""
    out, _ = lauf(cli, endpunkt, variante, "--json")
    k = json.loads(out)
    eigene = [a for a in AUFGENOMMEN if a["variante"] == variante]
    assert sorted(k["bfcl"]["fehlgeschlagen"]) == sorted(a["id"] for a in eigene if not a["bfcl"])
    assert k["bfcl"]["gesamt"] == sum(a["bfcl"] for a in eigene) / 220
    stufe = {f.id: f.stufe for f in FAELLE}
    assert k["bfcl"]["stufen"] == {s: sum(a["bfcl"] for a in eigene if stufe[a["id"]] == s) / n
                                   for s, n in KATEGORIEN.items()}


def test_the_recorded_verdicts_are_bfcls_checkers_where_bfcl_eval_is_at_hand(bfcl_urteil):
    urteil = bfcl_urteil
    roh = {}
    for datei in BFCL.glob("BFCL_v*_*.json"):
        kategorie = datei.stem.split("_", 2)[2]
        pa = BFCL / "possible_answer" / datei.name
        antworten = {a["id"]: a for a in map(json.loads, pa.read_text().splitlines())} if pa.exists() else {}
        roh |= {r["id"]: (kategorie, r, antworten.get(r["id"]))
                for r in map(json.loads, datei.read_text().splitlines())}
    anders = [(a["id"], a["variante"]) for a in AUFGENOMMEN if urteil(*roh[a["id"]], a["nachricht"]) != a["bfcl"]]
    assert anders == []
    assert len(AUFGENOMMEN) == 220 * len(VARIANTEN)


def test_the_stage_line_reads_the_categories_and_bfcls_line_stands_beside_it(cli, endpunkt):
    """Calls written as text: messen reads them as the model meant them (100 % where they are right), BFCL's FC
    mode sees no call, and credits irrelevance with restraint where the text call does not decode."""
    out, _ = lauf(cli, endpunkt, "text")
    zeilen = out.splitlines()
    assert "By stage: simple_python 100 %, multiple 100 %, parallel 100 %, parallel_multiple 100 %, irrelevance 0 %." \
        in zeilen
    assert ("BFCL's verdict (tool_calls only, as its FC mode): simple_python 0 %, multiple 0 %, parallel 0 %, "
            "parallel_multiple 0 %, irrelevance 100 %; BFCL's overall non-live 0 % (partial: without simple_java, "
            "simple_javascript); all cases together 18.2 % (messen's share, no figure of BFCL's).") in zeilen
    assert "BFCL counts 40 irrelevance answers as restraint that messen does not: 40 written as text." in zeilen
    assert 40 / 220 == pytest.approx(0.182, abs=5e-4)


def test_several_accepted_values_optional_arguments_and_bfcls_string_rules_are_bfcls(cli, endpunkt):
    """The "anders" answers: other accepted values, other case and punctuation, an int for a float, optional
    arguments left out, parallel calls in another order. BFCL takes each; so does messen, on every case
    but the 40 irrelevance ones, whose empty answer is no answer to messen and no call to BFCL."""
    out, _ = lauf(cli, endpunkt, "anders", "--json")
    k = json.loads(out)
    assert k["stufen"] == {"simple_python": 1.0, "multiple": 1.0, "parallel": 1.0, "parallel_multiple": 1.0,
                           "irrelevance": 0.0}
    assert k["bfcl"]["gesamt"] == 220 / 220
    assert k["fehlerarten"]["leer"] == 40


VARIABLE = {  # answers BFCL takes by its is_variable rule: a value of the accepted values' type, not the schema's
    "simple_python_307": [("game_result_get_winner", {"teams": ["Lakers", "Clippers"], "date": "2021-01-28",
                                                       "venue": True})],
    "parallel_152": [("math_power", {"base": 3, "exponent": 5, "mod": None}),
                     ("math_power", {"base": 2, "exponent": 3, "mod": None})],
    "parallel_multiple_21": [("data_loading", {"file_path": "dataset.csv"}),
                             ("linear_regression_fit", {"x": "data['sales']", "y": "data['future_sales']",
                                                        "return_residuals": True})],
    "live_simple_30-8-0": [("aws_lexv2_models_list_exports", {"botId": "my-bot-id", "botVersion": "v2",
                                                               "filterName": None})],
    "live_multiple_23-5-0": [("search_products", {"color": "red", "size": "8", "category": "shoes",
                                                  "price_max": None})],
}


def test_a_value_where_bfcl_expects_a_variable_or_null_is_graded_as_bfcl_grades_it(cli, endpunkt):
    """A string for an array whose accepted value is a variable's name, null for an optional float, true for a
    string: BFCL's checker takes each, as its accepted values' type, not the schema's; a list holding the variable's
    name it does not take."""
    faelle = {schluessel({"messages": f.nachrichten, "tools": f.werkzeuge}): f.id
              for f in messen.lade_faelle(REGELN)[0]}

    def antwort(fall, body, nummer):
        aufrufe = VARIABLE[faelle[schluessel(body)]]
        if body["model"] == "liste":
            aufrufe = [(n, {k: [v] if k == "x" else v for k, v in a.items()}) for n, a in aufrufe]
        return completion({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, (n, a) in enumerate(aufrufe)]}, "tool_calls")
    url = endpunkt(antwort).url
    k = json.loads(vorbereitet(cli, "--url", url, "--modell", "m", "--faelle", str(REGELN), "--json")[1])
    assert (k["bfcl"]["gesamt"], k["auftraege_gelungen"]) == (5 / 5, 5 / 5)
    k = json.loads(vorbereitet(cli, "--url", url, "--modell", "liste", "--tag", "liste", "--faelle", str(REGELN),
                               "--json")[1])
    assert (k["bfcl"]["fehlgeschlagen"], k["fehlgeschlagen"]) == (["parallel_multiple_21"], ["parallel_multiple_21"])


def test_a_bfcl_case_is_sent_as_bfcl_sends_it(cli, endpunkt):
    """Its messages as given, no system message of messen's; its functions as OpenAI tools: dots replaced,
    a dict an object, a float a number with BFCL's note."""
    _, e = lauf(cli, endpunkt, "richtig")
    roh = {r["id"]: r for d in BFCL.glob("BFCL_v*_*.json") for r in map(json.loads, d.read_text().splitlines())}
    for _, body in e.anfragen:
        fall = roh[BY_SCHLUESSEL[schluessel(body)]]
        assert body["messages"] == fall["question"][0]
        assert [w["function"]["name"] for w in body["tools"]] == [f["name"].replace(".", "_") for f in fall["function"]]
    mit_punkt = next(r for r in roh.values() if "." in r["function"][0]["name"])
    body = next(b for _, b in e.anfragen if b["messages"] == mit_punkt["question"][0])
    assert body["tools"][0]["function"]["name"] == mit_punkt["function"][0]["name"].replace(".", "_")
    assert body["tools"][0]["function"]["parameters"]["type"] == "object"
    mit_float = next((r, k) for r in roh.values() for k, p in r["function"][0]["parameters"]["properties"].items()
                     if p["type"] == "float")
    body = next(b for _, b in e.anfragen if b["messages"] == mit_float[0]["question"][0])
    p = body["tools"][0]["function"]["parameters"]["properties"][mit_float[1]]
    assert (p["type"], p["format"]) == ("number", "float")
    assert p["description"] == mit_float[0]["function"][0]["parameters"]["properties"][mit_float[1]]["description"] + \
        " This is a float type value."
    assert len(e.anfragen) == 220


def test_a_comparison_of_bfcl_runs_shows_each_category_and_stops_on_the_worse_model(cli, endpunkt, tmp_path):
    lauf(cli, endpunkt, "richtig")
    lauf(cli, endpunkt, "falsch")
    status, out, err = cli("--vergleich", "richtig", "falsch", "--streng")
    assert status == 3, err
    zeilen = out.splitlines()
    falsch = [a for a in AUFGENOMMEN if a["variante"] == "falsch"]
    einfach = sum(a["bfcl"] for a in falsch if a["id"].startswith("simple_python")) / 60
    assert any(z.split() == ["BFCL", "simple_python", "100.0", "%", f"{einfach * 100:.1f}", "%",
                             f"{(einfach - 1) * 100:+.1f}", "pp"] or
               z.split()[:2] == ["BFCL", "simple_python"] for z in zeilen), out
    assert any(z.startswith("BFCL pooled") for z in zeilen), out
    schlechter = json.loads(cli("--vergleich", "richtig", "falsch", "--json")[1])["schlechter"]
    assert zeilen[zeilen.index(f"Worse in B ({len(schlechter)}):") + 31] == \
        f"  ... and {len(schlechter) - 10} more (--alle shows every one)"  # ten cases of three lines each
    alle = cli("--vergleich", "richtig", "falsch", "--alle")[1].splitlines()
    lang = next(f for f in FAELLE if len(f.frage) > 240 and f.id in {a["id"] for a in falsch if not a["bfcl"]})
    assert f"  {lang.id}  {lang.frage[:240]}... ({len(lang.frage)} characters)" in alle  # a paragraph, cut
    assert len([z for z in alle if z.startswith("      B: ")]) == len(schlechter)


def test_bewerten_regrades_a_bfcl_run_to_the_same_figures(cli, endpunkt):
    out, _ = lauf(cli, endpunkt, "falsch", "--json")
    status, wieder, err = cli("--bewerten", "falsch", "--json")
    assert status == 0, err
    assert json.loads(wieder)["bfcl"] == json.loads(out)["bfcl"]


def test_a_category_without_its_possible_answer_file_is_named_with_where_bfcl_keeps_it(cli, tmp_path):
    shutil.copy(BFCL / "BFCL_v4_parallel.json", tmp_path / "BFCL_v4_parallel.json")
    status, out, err = cli("--selbsttest", "--faelle", str(tmp_path / "BFCL_v4_parallel.json"))
    assert (status, meldungen(err)) == (2, [
        f"messen: {tmp_path / 'possible_answer' / 'BFCL_v4_parallel.json'}: cannot read it (No such file or "
        "directory); BFCL keeps a category's expected calls in possible_answer/BFCL_v4_parallel.json"])


def test_a_category_messen_does_not_read_is_named(cli, tmp_path):
    datei = tmp_path / "BFCL_v4_simple_java.json"
    datei.write_text((BFCL / "BFCL_v4_simple_python.json").read_text().splitlines()[0] + "\n")
    status, out, err = cli("--selbsttest", "--faelle", str(datei))
    assert (status, meldungen(err)) == (2, [
        f"messen: {datei}: messen reads BFCL's Python categories (simple_python, multiple, parallel, "
        "parallel_multiple, irrelevance, live_simple, live_multiple, live_parallel, live_parallel_multiple, "
        "live_irrelevance, multi_turn_base, multi_turn_miss_func, multi_turn_miss_param, multi_turn_long_context), "
        "not simple_java"])


def test_a_broken_line_names_its_file_and_line(cli, tmp_path):
    (tmp_path / "possible_answer").mkdir()
    zeilen = (BFCL / "BFCL_v4_multiple.json").read_text().splitlines()
    (tmp_path / "BFCL_v4_multiple.json").write_text("\n".join(zeilen[:2] + ['{"id": "multiple_x", "question": [[]]']))
    shutil.copy(BFCL / "possible_answer" / "BFCL_v4_multiple.json", tmp_path / "possible_answer")
    status, out, err = cli("--selbsttest", "--faelle", str(tmp_path / "BFCL_v4_multiple.json"))
    assert status == 2
    assert meldungen(err) == [f"messen: {tmp_path / 'BFCL_v4_multiple.json'}:3: not JSON (Expecting ',' delimiter)"]


def test_a_catalogue_of_ones_own_does_not_go_with_bfcl_cases(cli, endpunkt):
    e = endpunkt(aufgenommen)
    status, out, err = cli("--url", e.url, "--modell", "richtig", "--faelle", str(BFCL), "--variante", "synonyme")
    assert (status, meldungen(err)) == (2, [
        f"messen: {BFCL}: each BFCL case brings its own functions; --katalog and --variante choose the tools for "
        "the chapter's cases and yours"])
    assert e.anfragen == []


# ---------------------------------------------------------------------------
# Drawn answers, held against BFCL's own checker where it is at hand
# ---------------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bfcl_aufnahme import eingesetzt, faelle as roh_faelle  # noqa: E402

REGELN = BFCL / "regeln"  # five cases whose accepted values name a variable or accept null (BFCL's is_variable)
ROH = roh_faelle() + roh_faelle(REGELN)
BY_ID = {f.id: f for f in FAELLE + messen.lade_faelle(REGELN)[0]}
WERTE = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-3, 3, width=16) |
                     st.sampled_from(["", "a", "A b", "x,y", "New York"]),
                     lambda k: st.lists(k, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "name"]), k,
                                                                          max_size=2), max_leaves=4)


def umformungen(w):
    """What a model may make of an accepted value: BFCL's string rules, an int for a float, a type changed."""
    if isinstance(w, str):
        return [w, w.upper(), w.replace(" ", ""), w + ".", f"'{w}'", w + "x"]
    if isinstance(w, bool):
        return [w, not w, str(w).lower()]
    if isinstance(w, (int, float)):
        return [w, float(w), int(w) if float(w).is_integer() else w, str(w), w + 1]
    if isinstance(w, list):
        return [w, list(reversed(w)), w[:-1], [x.upper() if isinstance(x, str) else x for x in w]]
    if isinstance(w, dict):
        return [w, {k: v for k, v in list(w.items())[:-1]}]
    return [w, "None", 0]  # null, accepted where an optional value may be left null


@st.composite
def antworten(draw):
    kategorie, roh, pa = draw(st.sampled_from(ROH))
    gesollt = [next(iter(g.items())) for g in pa["ground_truth"]] if pa else \
        [(roh["function"][0]["name"], {k: [WERT] for k in roh["function"][0]["parameters"].get("required", [])})
         for WERT in ["x"]]
    aufrufe, arten = [], ["weg", "so", "so", "umgeformt", "zufall"] if draw(st.booleans()) else ["so"]
    for name, args in gesollt:  # half of the answers meant to pass, each argument as accepted or left out where it may
        gegeben = {}
        for k, werte in args.items():
            akzeptiert = [eingesetzt(w) for w in werte if w != ""]
            art = draw(st.sampled_from(arten + ["weg"] * ("" in werte)))
            if art == "weg" or not akzeptiert:
                continue
            w = draw(st.sampled_from(akzeptiert))
            gegeben[k] = draw(WERTE) if art == "zufall" else draw(st.sampled_from(umformungen(w))) \
                if art == "umgeformt" else w
        if len(arten) > 1 and draw(st.integers(0, 9)) == 0:
            gegeben[draw(st.sampled_from(["extra", "unit"]))] = draw(WERTE)
        name = draw(st.sampled_from([name.replace(".", "_")] * 4 + [name, name + "_x"] * (len(arten) > 1)))
        aufrufe.append({"name": name, "arguments": json.dumps(gegeben)})
    aufrufe = draw(st.permutations(aufrufe))
    if aufrufe and draw(st.integers(0, 9)) == 0:
        aufrufe = aufrufe[:-1] if draw(st.booleans()) else aufrufe + aufrufe[:1]
    if aufrufe and draw(st.integers(0, 9)) == 0:
        aufrufe[0] = dict(aufrufe[0], arguments=draw(st.sampled_from(['{"a": 1', "[1]", "null", "NaN", ""])))
    nachricht = {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": c} for i, c in enumerate(aufrufe)]} if aufrufe or \
        draw(st.booleans()) else {"role": "assistant", "content": draw(st.sampled_from(["", "No tool fits."]))}
    return kategorie, roh, pa, nachricht


@pytest.fixture(scope="module")
def bfcl_urteil():
    urteil = bfcl_pruefer.laden()
    if urteil is None:
        pytest.skip("bfcl-eval is not installed (MESSEN_BFCL=1 installs it without its dependencies)")
    return urteil


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fall=antworten())
def test_messens_bfcl_verdict_is_bfcls_on_drawn_answers(bfcl_urteil, fall):
    kategorie, roh, pa, nachricht = fall
    assert messen.bfcl_urteil(BY_ID[roh["id"]], nachricht) == bfcl_urteil(kategorie, roh, pa, nachricht)


JSON_WERTE = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                          lambda k: st.lists(k, max_size=3) | st.dictionaries(st.text(max_size=8), k, max_size=3),
                          max_leaves=8)
NACHRICHTEN = st.fixed_dictionaries({"role": st.just("assistant")}, optional={
    "content": st.none() | st.text(max_size=20),
    "tool_calls": st.none() | JSON_WERTE | st.lists(st.fixed_dictionaries({}, optional={
        "id": JSON_WERTE, "function": JSON_WERTE | st.fixed_dictionaries({}, optional={
            "name": st.text(max_size=10) | JSON_WERTE, "arguments": st.text(max_size=20) | JSON_WERTE})}), max_size=3)})


@settings(max_examples=300, deadline=None)
@given(fall=st.sampled_from(FAELLE), nachricht=NACHRICHTEN)
def test_any_answer_a_server_sends_gets_a_bfcl_verdict_and_a_grade(fall, nachricht):
    """Whatever shape a server's message has, BFCL's verdict is a verdict and the grade a grade: never an exception;
    and an answer without tool_calls is never a call to BFCL."""
    note = messen.bewerte_ausgabe(fall, nachricht, "stop")
    assert note.bfcl in (True, False)
    if not nachricht.get("tool_calls"):
        assert note.bfcl is (fall.stufe == "irrelevance")


def test_an_irrelevance_case_without_functions_is_sent_without_tools(cli, endpunkt, tmp_path):
    """BFCL's live_irrelevance has cases that offer no function at all: sent without tools and tool_choice, as
    BFCL's FC mode sends them (a server may refuse "tools": [])."""
    roh = json.loads((BFCL / "BFCL_v4_irrelevance.json").read_text().splitlines()[0])
    (tmp_path / "BFCL_v4_live_irrelevance.json").write_text(json.dumps(dict(roh, id="live_irrelevance_1-0-0",
                                                                             function=[])) + "\n")
    e = endpunkt(lambda fall, body, nummer: completion({"role": "assistant", "content": "It is sunny."}))
    out = vorbereitet(cli, "--url", e.url, "--modell", "m", "--faelle", str(tmp_path / "BFCL_v4_live_irrelevance.json"),
                      "--json")[1]
    assert [("tools" in b, "tool_choice" in b, b["messages"]) for _, b in e.anfragen] == [
        (False, False, roh["question"][0])]
    assert (json.loads(out)["stufen"], json.loads(out)["bfcl"]["gesamt"]) == ({"live_irrelevance": 1.0}, 1 / 1)


def test_the_picture_names_the_categories_and_shows_bfcls_verdict_hatched(cli, endpunkt, tmp_path, bild):
    lauf(cli, endpunkt, "echt")
    svg = tmp_path / "b.svg"
    assert cli("--bewerten", "echt", "--bild", str(svg))[0] == 0
    inhalt = svg.read_text()
    assert "BFCL's verdict (hatched)" in inhalt
    assert all(f">{s}</text>" in inhalt for s in KATEGORIEN)


def test_system_puts_a_system_message_before_each_cases_own_and_joins_one_the_case_has(cli, endpunkt, tmp_path):
    roh = [json.loads(z) for z in (BFCL / "BFCL_v4_irrelevance.json").read_text().splitlines()[:2]]
    eigene = dict(roh[1], question=[[{"role": "system", "content": "Answer briefly."}, *roh[1]["question"][0]]])
    datei = tmp_path / "BFCL_v4_irrelevance.json"
    datei.write_text(json.dumps(roh[0]) + "\n" + json.dumps(eigene) + "\n")
    e = endpunkt(lambda fall, body, nummer: completion({"role": "assistant", "content": "No."}))
    vorbereitet(cli, "--url", e.url, "--modell", "m", "--faelle", str(datei), "--system", "You are terse.")
    assert [b["messages"] for _, b in e.anfragen] == [
        [{"role": "system", "content": "You are terse."}, *roh[0]["question"][0]],
        [{"role": "system", "content": "You are terse.\n\nAnswer briefly."}, *roh[1]["question"][0]]]
    status, out, err = cli("--url", e.url, "--modell", "m", "--faelle", str(datei), "--system", "Be kind.")
    assert (status, meldungen(err)[-1].startswith("messen: ")) == (2, True)
    assert "another system message (--system)" in meldungen(err)[-1]
    assert len(e.anfragen) == 2  # a run under another system message is not resumed: nothing asked


def test_system_does_not_go_with_the_chapters_cases(cli, endpunkt):
    e = endpunkt()
    status, out, err = cli("--url", e.url, "--modell", "m", "--system", "You are terse.")
    assert (status, meldungen(err)) == (2, [
        f"messen: --system goes with BFCL's cases; {messen.faelle_standard()} is sent the catalogue's opening (your "
        "own: --katalog FILE)"])
    assert e.anfragen == []


def test_streamed_bfcl_answers_get_the_same_verdicts(cli, endpunkt):
    """--stream: the calls a stream assembles to are graded by both verdicts as the plain answers are."""
    out, e = lauf(cli, endpunkt, "falsch", "--stream", "--json")
    k = json.loads(out)
    assert len({BY_SCHLUESSEL[schluessel(b)] for _, b in e.anfragen if b.get("stream") is True}) == 220
    falsch = [a for a in AUFGENOMMEN if a["variante"] == "falsch"]
    assert sorted(k["bfcl"]["fehlgeschlagen"]) == sorted(a["id"] for a in falsch if not a["bfcl"])
    assert k["diagnose"]["strom_defekt"] == 0


def test_a_folder_without_a_bfcl_file_is_named(cli, tmp_path):
    (tmp_path / "notizen.json").write_text("{}\n")
    status, out, err = cli("--selbsttest", "--faelle", str(tmp_path))
    assert (status, meldungen(err)) == (2, [
        f"messen: {tmp_path}: no BFCL file of a category messen reads (simple_python, multiple, parallel, "
        "parallel_multiple, irrelevance, live_simple, live_multiple, live_parallel, live_parallel_multiple, "
        "live_irrelevance, multi_turn_base, multi_turn_miss_func, multi_turn_miss_param, multi_turn_long_context)"])


@pytest.mark.parametrize("zeile, meldung", [
    (b"\xff\n", "not UTF-8"),
    (json.dumps({"id": "irrelevance_x", "tief": json.loads("[" * 150 + "]" * 150)}).encode() + b"\n",
     "nested deeper than 100 levels, where a case nests a few"),
], ids=["kein utf-8", "zu tief"])
def test_a_bfcl_file_is_checked_line_by_line_as_a_case_file_is(cli, tmp_path, zeile, meldung):
    datei = tmp_path / "BFCL_v4_irrelevance.json"
    datei.write_bytes((BFCL / "BFCL_v4_irrelevance.json").read_bytes().splitlines(keepends=True)[0] + zeile)
    status, out, err = cli("--selbsttest", "--faelle", str(datei))
    assert (status, meldungen(err)) == (2, [f"messen: {datei}:2: {meldung}"])


def test_a_comparison_of_runs_sent_other_system_messages_says_so_beside_the_verdict(cli, endpunkt, tmp_path):
    """As a variant against its base: the same model may be asked with and without a system message on purpose,
    so the verdict stands, and beside it that the difference may be the system message's."""
    datei = tmp_path / "BFCL_v4_irrelevance.json"
    datei.write_text("".join((BFCL / "BFCL_v4_irrelevance.json").read_text().splitlines(keepends=True)[:3]))
    e = endpunkt(lambda fall, body, nummer: completion({"role": "assistant", "content": "No."}))
    for tag, mehr in (("ohne", []), ("mit", ["--system", "You are terse."]), ("anders", ["--system", "Be kind."])):
        vorbereitet(cli, "--url", e.url, "--modell", "m", "--faelle", str(datei), "--tag", tag, *mehr)
    hinweis = ("The system messages sent differ ({} in {}, {} in {}): the difference may be the system message's, "
               "not the model's; compare models under the same one.")
    status, out, _ = cli("--vergleich", "ohne", "mit", "--streng")
    assert status == 0 and hinweis.format("no --system", "ohne", '--system "You are terse."', "mit") in out.splitlines()
    out = cli("--vergleich", "mit", "anders", "--markdown")[1]
    assert hinweis.format('--system "You are terse."', "mit", '--system "Be kind."', "anders") in out.splitlines()
    assert not [z for z in cli("--vergleich", "mit", "mit")[1].splitlines() if z.startswith("The system messages")]
