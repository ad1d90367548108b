"""BFCL, part three: its multi-turn categories, asked as its FC mode asks them against a loopback endpoint that
plays a scripted model, each call run on BFCL's own backends, and messen's verdict held against BFCL's own runner
and checker on the same transcripts (where bfcl-eval is at hand: MESSEN_BFCL=1 installs it)."""

import copy
import json
import shutil
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import ROOT, meldungen, messung, vorbereitet, zeilen
from bfcl_spieler import ABWEICHUNGEN, als_text_im_ersten, leer_im_ersten, weggelassen

import bfcl_pruefer
import bfcl_spieler
import messen

HINWEIS = " Note that the provided function is in Python 3 syntax."


@pytest.fixture(scope="module")
def bfcl():
    """(the data folder, BFCL's verdict on a transcript, the scripted model's signatures)."""
    pytest.importorskip("mpmath", reason="BFCL's MathAPI needs mpmath: pip install '.[test]'")
    urteil = bfcl_pruefer.mehrzug()
    if urteil is None:
        pytest.skip("bfcl-eval is not installed (MESSEN_BFCL=1 installs it without its dependencies)")
    return bfcl_pruefer.daten(), urteil, bfcl_spieler.signaturen(bfcl_pruefer.backends())


def spiele(cli, endpunkt, bfcl, kategorie, plan=None, *extra, tag="mt"):
    """Measure a category's sample with the scripted model (following plan): (exit, --json's figures, the saved
    outputs by id, the endpoint)."""
    ordner, _, signaturen = bfcl
    spieler = bfcl_spieler.Spieler(ordner, plan, (kategorie,), signaturen)

    def antwort(fall, body, nummer):
        return spieler.antwort(body)
    e = endpunkt(antwort)
    status, out, err = cli(*messung(e.url, "--faelle", str(ordner), "--stufen", kategorie, "--tag", tag, "--json",
                                    *extra))
    assert status in (0, 1), err
    gespeichert = {a["id"]: a for a in zeilen(cli.ausgabe / f"{tag}.jsonl")[1:]}
    return status, json.loads(out), gespeichert, e


def bfcls(bfcl, kategorie, gespeichert):
    """BFCL's own verdict on each saved output: id -> True / False."""
    ordner, urteil, _ = bfcl
    faelle = bfcl_spieler.faelle(ordner, (kategorie,))
    verdikt = {}
    for i, a in gespeichert.items():
        schritte = [z for z in a["zuege"] if z["zweck"] == "schritt"]
        runden = [[z["nachricht"] for z in schritte if z["runde"] == t] for t in range(schritte[-1]["runde"] + 1)]
        verdikt[i] = urteil(copy.deepcopy(faelle[i][0]), faelle[i][1], runden)
    return verdikt


@pytest.mark.parametrize("kategorie", bfcl_spieler.KATEGORIEN)
def test_the_ground_truth_passes_every_sampled_case_of_each_category(cli, endpunkt, bfcl, kategorie):
    status, k, gespeichert, _ = spiele(cli, endpunkt, bfcl, kategorie, None, "--stichprobe", "6")
    assert (status, k["bfcl"]["stufen"], k["bfcl"]["multi_turn"], k["bfcl"]["fehlgeschlagen"]) == (
        0, {kategorie: 6 / 6}, 6 / 6, [])
    assert k["bfcl"]["fehlt"]["multi_turn"] == [x for x in bfcl_spieler.KATEGORIEN if x != kategorie]
    assert set(bfcls(bfcl, kategorie, gespeichert).values()) == {True}


@pytest.mark.parametrize("art", ABWEICHUNGEN)
def test_each_departure_gets_bfcls_own_verdict(cli, endpunkt, bfcl, art):
    kategorie = {"nicht_angeboten": "multi_turn_miss_func", "ungefragt": "multi_turn_miss_param"}.get(
        art, "multi_turn_base")
    status, k, gespeichert, _ = spiele(cli, endpunkt, bfcl, kategorie, ABWEICHUNGEN[art], "--stichprobe", "8")
    verdikt = bfcls(bfcl, kategorie, gespeichert)
    assert sorted(k["bfcl"]["fehlgeschlagen"]) == sorted(i for i, v in verdikt.items() if not v)
    # and each departure fails as many of the 8 as BFCL's checker does: none where it is harmless to BFCL
    assert len(k["bfcl"]["fehlgeschlagen"]) == GESCHEITERT[art]
    assert status == 0


GESCHEITERT = {"weggelassen": 8, "wert_geaendert": 7, "extra_lesen": 0, "vertauscht": 3, "zu_frueh": 7,
               "ungefragt": 3, "nicht_angeboten": 2, "falscher_typ": 2, "einundzwanzig": 8, "zwanzig": 0, "kaputt": 8}


def test_an_empty_answer_where_calls_are_due_is_the_servers_and_calls_as_text_are_named(cli, endpunkt, bfcl):
    _, k, _, _ = spiele(cli, endpunkt, bfcl, "multi_turn_base", leer_im_ersten, "--stichprobe", "2")
    assert (k["bfcl"]["fehlgeschlagen"], k["fehlerarten"]["leer"]) == (["multi_turn_base_50", "multi_turn_base_150"], 2)
    status, out, err = cli("--bewerten", "mt")
    assert status == 0
    assert "Diagnosis: what the server did, not the model" in out.splitlines()
    assert "      differs:   the last step is no answer (leer: see the diagnosis)" in out.splitlines()
    _, k, _, _ = spiele(cli, endpunkt, bfcl, "multi_turn_base", als_text_im_ersten, "--stichprobe", "2", tag="text")
    assert k["fehlerarten"]["kein_aufruf"] == 2
    status, out, err = cli("--bewerten", "text")
    assert "      failed in: turn 1, expected: get_flight_cost(travel_from='RMS', travel_to='SBK', travel_date=" \
           "'2026-10-06', travel_class='economy')" in out.splitlines()
    assert "      differs:   turn 1: no call, where the ground truth calls (its calls written as text, which BFCL " \
           "does not read: get_flight_cost(travel_from=\"RMS\", travel_to=\"SBK\", travel_date=\"2026-10-06\", " \
           "travel_class=\"economy\"))" in out.splitlines()


def test_a_comparison_stops_on_the_model_that_drops_calls_and_bewerten_regrades_alike(cli, endpunkt, bfcl):
    ordner, _, signaturen = bfcl
    spieler = {}

    def antwort(fall, body, nummer):
        return spieler["jetzt"].antwort(body)
    e = endpunkt(antwort)
    ergebnisse = {}
    for tag, plan in (("gut", None), ("weg", weggelassen)):
        spieler["jetzt"] = bfcl_spieler.Spieler(ordner, plan, ("multi_turn_base",), signaturen)
        ergebnisse[tag] = json.loads(vorbereitet(cli, *messung(e.url, "--faelle", str(ordner), "--stufen",
                                                                "multi_turn_base", "--stichprobe", "8", "--tag", tag,
                                                                "--json"))[1])
    status, wieder, err = cli("--bewerten", "weg", "--json")
    assert (status, json.loads(wieder)["bfcl"]) == (0, ergebnisse["weg"]["bfcl"])
    status, out, err = cli("--vergleich", "gut", "weg", "--streng")
    zeilen = out.splitlines()
    assert status == 3, err
    assert zeilen[zeilen.index("Worse in B (8):") + 1:zeilen.index("Worse in B (8):") + 4] == [
        "  multi_turn_base_12  Pop on over to the 'Documents' directory and craft a new file dubbed 'summary.txt', "
        "would you? If it already exists, return an error",
        "      A: 6 requests (right)",
        "      B: 6 requests (turn 1: the state differs from the ground truth's in GorillaFileSystem.root)"]
    assert [z.split() for z in zeilen if z.startswith("BFCL multi")] == [
        ["BFCL", "multi_turn_base", "100", "%", "0", "%", "-100", "points"],
        ["BFCL", "multi-turn", "(partial)", "100", "%", "0", "%", "-100", "points"]]


def test_the_tools_each_request_offers_are_bfcls_with_the_held_back_function_added_at_its_turn(cli, endpunkt, bfcl):
    ordner = bfcl[0]
    _, _, gespeichert, e = spiele(cli, endpunkt, bfcl, "multi_turn_miss_func", None, "--stichprobe", "1")
    (fall, _), = [bfcl_spieler.faelle(ordner, ("multi_turn_miss_func",))[i] for i in gespeichert]
    (t, (name,)), = fall["missed_function"].items()
    doku = {}
    for k in fall["involved_classes"]:
        datei = {"GorillaFileSystem": "gorilla_file_system", "TwitterAPI": "posting_api", "MathAPI": "math_api",
                 "MessageAPI": "message_api", "TicketAPI": "ticket_api", "TradingBot": "trading_bot",
                 "TravelAPI": "travel_booking", "VehicleControlAPI": "vehicle_control"}[k]
        doku.update({f["name"]: f for f in map(json.loads, (ordner / "multi_turn_func_doc" / f"{datei}.json")
                                               .read_text().splitlines())})
    for _, body in e.anfragen:
        runde = sum(m["role"] == "user" for m in body["messages"]) - 1
        namen = [w["function"]["name"] for w in body["tools"]]
        erwartet = [n for n in doku if n != name] + [name] * (runde >= int(t))
        assert namen == erwartet
        for w in body["tools"]:
            f = doku[w["function"]["name"]]
            hinweis = "" if f["name"] == name else HINWEIS
            assert (w["function"]["description"], w["function"]["response"]) == (f["description"] + hinweis,
                                                                                   f["response"])
        if runde == int(t):
            assert body["messages"][-1]["role"] != "user" or body["messages"][-1]["content"] == \
                "I have updated some more functions you can choose from. What about now?"
    assert sum(m["role"] == "user" for m in e.anfragen[-1][1]["messages"]) == len(fall["question"])


def kopie(tmp_path, ordner, kategorie="multi_turn_base", n=3, fragen=None, antworten=None):
    """The first n cases of a category, its possible_answer and the function docs in tmp_path/data, each line as
    given where a list of (index, changed object) says so."""
    ziel = tmp_path / "data"
    (ziel / "possible_answer").mkdir(parents=True)
    shutil.copytree(ordner / "multi_turn_func_doc", ziel / "multi_turn_func_doc")
    for teil, aenderung in (("", fragen), ("possible_answer/", antworten)):
        zeilen = [json.loads(z) for z in (ordner / f"{teil}BFCL_v4_{kategorie}.json").read_text().splitlines()[:n]]
        for i, wie in aenderung or ():
            wie(zeilen[i])
        (ziel / f"{teil}BFCL_v4_{kategorie}.json").write_text("".join(json.dumps(z) + "\n" for z in zeilen))
    return ziel


def gt_kaputt(z):
    z["ground_truth"][0][0] = "os.cd(folder='document')"


def gt_anderer_fall(z):
    z["id"] = "multi_turn_base_7"


def gt_kurz(z):
    z["ground_truth"].pop()


def klasse_fremd(z):
    z["involved_classes"].append("WebSearchAPI")


def fehlt_fremd(z):
    z["missed_function"] = {"3": ["format_disk"]}
    z["question"][3] = []


@pytest.mark.parametrize("fragen, antworten, meldung", [
    (None, [(1, gt_kaputt)], "{d}/possible_answer/BFCL_v4_multi_turn_base.json:2: the expected call \"os.cd("
     "folder='document')\" is no call messen can read (not one call of a name)"),
    (None, [(2, gt_anderer_fall)], "{d}/possible_answer/BFCL_v4_multi_turn_base.json:3: the id multi_turn_base_7 "
     "where the case on that line of BFCL_v4_multi_turn_base.json is multi_turn_base_2; BFCL's runner pairs the two "
     "files line by line"),
    (None, [(0, gt_kurz)], "{d}/possible_answer/BFCL_v4_multi_turn_base.json:1: \"ground_truth\" lists the calls of "
     "each of the case's 4 turns, a list per turn"),
    ([(2, klasse_fremd)], None, "{d}/BFCL_v4_multi_turn_base.json:3: \"involved_classes\" lists classes of BFCL's "
     "multi-turn backends (GorillaFileSystem, MathAPI, MessageAPI, TwitterAPI, TicketAPI, TradingBot, TravelAPI, "
     "VehicleControlAPI)"),
    ([(0, fehlt_fremd)], None, "{d}/BFCL_v4_multi_turn_base.json:1: the function format_disk held back until turn 4 "
     "is no function of TwitterAPI or GorillaFileSystem"),
])
def test_a_broken_multi_turn_line_names_its_file_and_line(cli, bfcl, tmp_path, fragen, antworten, meldung):
    ziel = kopie(tmp_path, bfcl[0], fragen=fragen, antworten=antworten)
    status, out, err = cli("--selbsttest", "--faelle", str(ziel / "BFCL_v4_multi_turn_base.json"))
    assert (status, meldungen(err)) == (2, ["messen: " + meldung.format(d=ziel)])


def test_without_bfcls_function_docs_or_backends_or_mpmath_one_line_says_what_to_do(cli, bfcl, tmp_path):
    ziel = kopie(tmp_path, bfcl[0])
    shutil.rmtree(ziel / "multi_turn_func_doc")
    status, out, err = cli("--selbsttest", "--faelle", str(ziel))
    assert (status, meldungen(err)) == (2, [f"messen: {ziel}/multi_turn_func_doc/posting_api.json: cannot "
                                            "read it (No such file or directory)"])
    ziel = kopie(tmp_path / "2", bfcl[0])  # no bfcl_eval beside it, and none installed where messen runs
    ergebnis = subprocess.run([sys.executable, str(ROOT / "messen.py"), "--selbsttest", "--faelle", str(ziel)],
                              capture_output=True, text=True, timeout=60, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert (ergebnis.returncode, ergebnis.stderr.splitlines()) == (2, [
        f"messen: {ziel}: BFCL's multi-turn cases run on its backends (bfcl_eval/eval_checker/multi_turn_eval/"
        "func_source_code), which are neither in the package this folder is part of nor installed: give --faelle "
        "the folder bfcl_eval/data of the bfcl-eval wheel or of a clone of BFCL"])
    paket = tmp_path / "3" / "bfcl_eval"
    quelle = paket.joinpath("eval_checker", "multi_turn_eval", "func_source_code")
    quelle.mkdir(parents=True)
    for d in (paket, paket / "eval_checker", paket / "eval_checker" / "multi_turn_eval", quelle):
        (d / "__init__.py").write_text("")
    for modul in ("gorilla_file_system", "posting_api"):
        (quelle / f"{modul}.py").write_text("import mpmath_fehlt\n")
    shutil.copytree(ziel, paket / "data")
    ergebnis = subprocess.run([sys.executable, str(ROOT / "messen.py"), "--selbsttest", "--faelle",
                               str(paket / "data")], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                              env={"PATH": "/usr/bin:/bin"})
    assert (ergebnis.returncode, ergebnis.stderr.splitlines()) == (2, [
        "messen: BFCL's TwitterAPI needs the package mpmath_fehlt, which is not installed: pip install "
        "'messen[bfcl]' (or pip install mpmath_fehlt)"])


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                    lambda innen: st.lists(innen, max_size=3) | st.dictionaries(st.text(max_size=4), innen, max_size=3),
                    max_leaves=8)
ARGUMENTE = st.one_of(st.dictionaries(st.sampled_from(["folder", "a", "b c", "class", "x"]), JSON, max_size=3).map(
    json.dumps), st.dictionaries(st.sampled_from(["folder", "a"]), JSON, max_size=2), st.sampled_from(
    ['{"a": NaN}', "null", "[1]", "{", "", '"{}"']), JSON)
RUF = st.fixed_dictionaries({"id": st.text(max_size=3)}, optional={"function": st.fixed_dictionaries(
    {}, optional={"name": st.sampled_from(["cd", "ls", "mean", "x y", ""]) | JSON, "arguments": ARGUMENTE})})
NACHRICHT = st.fixed_dictionaries({"role": st.just("assistant")}, optional={
    "content": st.none() | st.sampled_from(["", "Done.", "[]"]), "tool_calls": st.lists(RUF, max_size=3) | JSON})


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(nachricht=NACHRICHT)
def test_any_answer_is_decoded_as_bfcls_fc_handler_decodes_it(bfcl, nachricht):
    """Whether a step runs calls, and which (as BFCL's call text name(k=repr(v))), is BFCL's own decoding's."""
    from bfcl_eval.model_handler.utils import convert_to_function_call
    try:
        antwort = [{c["function"]["name"]: c["function"]["arguments"]} for c in nachricht["tool_calls"]]
    except (KeyError, TypeError):
        antwort = nachricht.get("content")
    try:
        bfcls = convert_to_function_call(antwort)
    except Exception:  # noqa: BLE001  BFCL's runner: the turn ends
        bfcls = None
    eigene = messen.bfcl_decodiert(nachricht)
    assert [f"{n}({','.join(f'{k}={v!r}' for k, v in a.items())})" for n, a in eigene or ()] == (bfcls or [])


def test_bfcls_overall_without_its_agentic_part_weighs_its_parts_as_bfcl_does_where_all_were_run():
    je = {s: [True, True] for s in messen.BFCL_STUFEN}
    je["multi_turn_base"] = [False, False]  # multi-turn 3/4
    je["live_irrelevance"] = [True, False]  # irrelevance (1 + 1/2) / 2
    je["live_simple"] = [False] * 6  # live, over its cases: 6 of 12 right
    assert messen.bfcl_ohne_agentisch(je) == pytest.approx((10 * 1 + 10 * 6 / 12 + 10 * 3 / 4 + 30 * 3 / 4) / 60)
    je["multi_turn_long_context"] = []
    assert messen.bfcl_ohne_agentisch(je) is None


def test_the_multi_turn_overall_is_the_unweighted_mean_of_bfcls_verdicts_on_the_four(cli, endpunkt, bfcl):
    """The four categories in one run: the scripted model takes the first case whose messages fit, and so fails
    some of the twins it cannot tell apart; messen's figure is BFCL's formula on BFCL's own verdicts."""
    ordner, urteil, signaturen = bfcl
    spieler = bfcl_spieler.Spieler(ordner, None, bfcl_spieler.KATEGORIEN, signaturen)

    def antwort(fall, body, nummer):
        return spieler.antwort(body)
    e = endpunkt(antwort)
    status, out, err = cli(*messung(e.url, "--faelle", str(ordner), "--stichprobe", "4", "--stufen",
                                    ",".join(bfcl_spieler.KATEGORIEN), "--tag", "vier", "--json"))
    k = json.loads(out)["bfcl"]
    je = {kat: [] for kat in bfcl_spieler.KATEGORIEN}
    for a in zeilen(cli.ausgabe / "vier.jsonl")[1:]:
        je[a["stufe"]].append(bfcls(bfcl, a["stufe"], {a["id"]: a})[a["id"]])
    assert status == 0
    assert k["multi_turn"] == pytest.approx(sum(sum(x) / len(x) for x in je.values()) / 4)
    assert k["stufen"] == {kat: pytest.approx(sum(x) / 4) for kat, x in je.items()}
    assert 0 < k["multi_turn"] < 1  # the twins: some right, some not


def test_a_run_saved_before_the_multi_turn_categories_is_still_found_in_its_folder(cli, endpunkt, bfcl, tmp_path):
    """A folder's hash once left out the multi-turn files, which messen did not read: a run saved so (here: on
    the folder before they were copied in) is regraded and compared on the same folder with them."""
    from test_bfcl import BFCL, aufgenommen
    ordner = tmp_path / "data"
    shutil.copytree(BFCL, ordner, ignore=shutil.ignore_patterns("regeln", "*.jsonl", "*.md"))
    e = endpunkt(aufgenommen)
    vorher = json.loads(vorbereitet(cli, "--url", e.url, "--modell", "echt", "--tag", "alt", "--faelle", str(ordner),
                                    "--json")[1])["bfcl"]
    for teil in ("BFCL_v4_multi_turn_base.json", "possible_answer/BFCL_v4_multi_turn_base.json", "multi_turn_func_doc"):
        (shutil.copytree if teil.endswith("doc") else shutil.copy)(bfcl[0] / teil, ordner / teil)
    status, out, err = cli("--bewerten", "alt", "--json", "--faelle", str(ordner))
    assert (status, json.loads(out)["bfcl"]) == (0, vorher), err
