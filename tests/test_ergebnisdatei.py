"""A damaged results file: every hand edit gives one line naming file:line and exit 2, never a
traceback; hypothesis mutates saved lines at random to show it."""

import contextlib
import functools
import io
import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import messen
from conftest import ROOT, URTEIL_ANFANG, schluss


@functools.lru_cache(maxsize=None)
def gesunde_datei():
    """A complete saved run of the self-test endpoint with --nachfrage (built once): its lines."""
    faelle, _ = messen.lade_faelle(ROOT / "faelle.jsonl")
    server, url = messen.selbsttest_server(faelle)
    ordner = Path(tempfile.mkdtemp())
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert messen.main(["--url", url, "--modell", "m", "--tag", "t", "--nachfrage",
                                "--ausgabe", str(ordner)]) == 0
        return tuple((ordner / "t.jsonl").read_text().splitlines())
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(ordner)


def bewerten_mit(zeilen_):
    """--bewerten of a file with these lines: (status, stdout, stderr)."""
    with tempfile.TemporaryDirectory() as ordner:
        (Path(ordner) / "t.jsonl").write_text("\n".join(zeilen_) + "\n")
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = messen.main(["--bewerten", "t", "--ausgabe", ordner])
        return status, out.getvalue(), err.getvalue().replace(ordner, "DIR")


def geaendert(zeile, feld, wert, weg=False):
    """The line with one field of its output (or of its settings) set to wert (a function: of the value it
    had), or removed; feld may be a path into the line ("zuege.0.usage": the first turn's usage)."""
    daten = json.loads(zeilen_alle()[zeile])
    ziel = daten["einstellungen"] if zeile == 0 else daten
    *pfad, feld = feld.split(".")
    for teil in pfad:
        ziel = ziel[int(teil) if teil.isdigit() else teil]
    feld = int(feld) if feld.isdigit() else feld
    wert = wert(ziel[feld]) if callable(wert) else wert
    ziel.pop(feld, None) if weg else ziel.__setitem__(feld, wert)
    neu = list(zeilen_alle())
    neu[zeile] = json.dumps(daten)
    return neu


def zeilen_alle():
    return gesunde_datei()


def test_die_gesunde_datei_liest_sich():
    status, out, err = bewerten_mit(zeilen_alle())
    assert (status, err) == (0, "")
    assert "By stage: S1 100 %, S2 100 %, S3 100 %, S4 100 %, S5 100 %." in out.splitlines()


S5_ZEILE = 1 + 34  # the first S5 output (S5-1) of the 42


@pytest.mark.parametrize("zeile, feld, wert, weg, warum", [
    (S5_ZEILE, "zuege", "yes", False, "zuege is not a list of turns"),
    (S5_ZEILE, "zuege", [], False, "zuege is not a list of turns"),
    (S5_ZEILE, "zuege.1.zweck", "nochmal", False, "a cross-check out of place in S5-1 (frage, nochmal)"),
    (S5_ZEILE, "zuege.1", {"zweck": "nachfrage", "fehlt": 3}, False,
     'turn 2 is not a failed turn ({"zweck", "fehlt": why})'),
    (S5_ZEILE, "zuege.1.ergebnisse", "x", False, "turn 2 ergebnisse is not a list of results"),
    (1, "zuege.0", {"zweck": "frage", "fehlt": "timeout"}, False, "turn 1: a failed frage, which a run never saves"),
    (1, "zuege.0.zweck", "antwort", False, "turn 1 zweck is not what a turn is for"),
    (1, "zuege.0.zweck", "schritt", False, "turn 1 has no ergebnisse"),  # a step holds what the world sent
    (1, "zuege.0.zweck", "nachfrage", False, "the turns nachfrage in S1-1, a case of S1"),
    (1, "zuege", lambda z: z + z, False, "the turns frage, frage in S1-1, a case of S1"),
    (1, "zuege.0.strom", {"chunks": 1, "defekte": [2]}, False, "turn 1 strom is not a stream's record"),
    (1, "zuege.0.finish_reason", None, True, "turn 1 has no finish_reason"),
    (1, "zuege.0", "frage", False, "turn 1 is not an object"),
    (0, "n", None, True, "n is not a whole number of at least 1"),
    (0, "n", "1", False, "n is not a whole number of at least 1"),
    (0, "temp", "warm", False, "temp is not a number of at least 0"),
    (0, "extra", [], False, "extra is not an object"),
    (1, "ende", "gestern", False, "ende is not a time"),
    (1, "ende", 1e20, False, "ende is not a time"),
    (1, "zuege.0.latenz_s", -1, False, "turn 1 latenz_s is not a number of seconds"),
    (1, "lauf", 3, False, "lauf 3 in a run of n 1"),
    (1, "lauf", 1.5, False, "lauf is not a whole number of at least 0"),
    (1, "zuege.0.usage", "many", False, "turn 1 usage is not an object"),
    (1, "stufe", "S4", False, "stufe S4 for S1-1, a case of S1"),
    (1, "zuege.0.verworfen", True, False, "turn 1 verworfen is not a whole number of at least 0"),
    (1, "id", "S9-9", False, "not an output of a known case"),
    (2, "zuege", lambda z: z + [dict(z[0], zweck="nachfrage")], False, "a second turn in S1-2, which has none"),
])
def test_jede_handaenderung_ist_eine_zeile(zeile, feld, wert, weg, warum):
    status, out, err = bewerten_mit(geaendert(zeile, feld, wert, weg))
    assert (status, out) == (2, "")
    assert err == f"messen: DIR/t.jsonl:{zeile + 1}: the results file is damaged ({warum})\n"


JSON_WERT = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                         lambda kinder: st.lists(kinder, max_size=3) | st.dictionaries(st.text(max_size=5), kinder,
                                                                                       max_size=3), max_leaves=6)


def zahl(x, ganz=False, bis=float("inf")):
    return not isinstance(x, bool) and isinstance(x, int if ganz else (int, float)) and 0 <= x <= bis


GUELTIG = {  # what each field may hold, as the results file's description says (None: the field may be absent)
    0: {"modell": str, "tag": str, "datum": str, "faelle_sha256": str, "katalog_sha256": str,
        "temp": lambda x: zahl(x), "n": lambda x: zahl(x, True) and x >= 1, "extra": dict,
        # the file holds S5's second turns: a run without --nachfrage is damaged; with --weiter it lacks S6
        "nachfrage": lambda x: x is True, "weiter": bool, "stream": bool,
        "variante": lambda x: x is None or x in ("synonyme", "reihenfolge", "ablenkung"),
        "faelle_datei": (str, type(None)), "katalog_datei": (str, type(None)), "weiter_sha256": (str, type(None)),
        "gesendet_sha256": (str, type(None)), "seed": lambda x: x is None or zahl(x, True),
        "ablenkung": lambda x: x is None or isinstance(x, list) and all(isinstance(n, str) for n in x),
        "probe": lambda x: x is None or isinstance(x, dict) and isinstance(x.get("fall"), str) and (
            isinstance(x.get("nachricht"), dict) and isinstance(x.get("finish_reason"), (str, type(None)))
            or isinstance(x.get("fehlt"), str))},
    1: {"stufe": lambda x: x == "S1", "lauf": lambda x: x == 0 and not isinstance(x, bool),
        "sitzung": lambda x: zahl(x, True), "ende": lambda x: zahl(x, bis=1e11),
        # subtle: no value these draw is a list of turns S1-1 could have, so every one is damage
        "zuege": lambda x: False,
        "zuege.0.zweck": lambda x: x == "frage",  # S1-1's one turn: the question
        "zuege.0.nachricht": dict, "zuege.0.usage": dict, "zuege.0.latenz_s": lambda x: zahl(x, bis=1e7),
        "zuege.0.finish_reason": (str, type(None)), "zuege.0.verworfen": lambda x: zahl(x, True),
        "zuege.0.strom": lambda x: x is None or isinstance(x, dict) and zahl(x.get("chunks"), True) and isinstance(
            x.get("defekte"), list) and all(isinstance(d, str) for d in x["defekte"]),
        "zuege.0.ergebnisse": lambda x: x is None or isinstance(x, list),  # a step's; the question ignores them
        "zuege.0.fehlt": lambda x: False},  # a question never fails in a saved line
}
ABGLEICH = {"faelle_sha256", "katalog_sha256", "weiter_sha256"}  # hashes the files are looked for by
PFLICHT = {0: {"modell", "tag", "datum", "faelle_sha256", "katalog_sha256", "temp", "n", "extra"},
           1: {"stufe", "lauf", "sitzung", "ende", "zuege", *(f"zuege.0.{f}" for f in (
               "zweck", "nachricht", "usage", "latenz_s", "finish_reason", "verworfen"))}}


def gueltig(zeile, feld, wert):
    regel = GUELTIG[zeile][feld]
    return regel(wert) if callable(regel) and not isinstance(regel, type) else isinstance(wert, regel)


@settings(max_examples=300, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(zeile=st.sampled_from([0, 1]), index=st.integers(0, 30), wert=JSON_WERT, weg=st.booleans())
def test_jede_beschaedigung_ist_eine_zeile_oder_wird_gelesen(zeile, index, wert, weg):
    """Every field of the settings line and of an output set to any JSON value, or removed where the file
    may lack it: a value the field may hold reads (exit 0), any other is one line naming file:line (exit 2)."""
    felder = sorted(GUELTIG[zeile])
    feld = felder[index % len(felder)]
    weg = weg and feld in PFLICHT[zeile]  # an absent optional field takes its default
    status, out, err = bewerten_mit(geaendert(zeile, feld, wert, weg))
    beschaedigt = feld in PFLICHT[zeile] if weg else not gueltig(zeile, feld, wert)
    anderswo = not beschaedigt and feld in ABGLEICH and wert != json.loads(zeilen_alle()[0])["einstellungen"][feld]
    assert status == (2 if beschaedigt or anderswo else 0), (feld, wert, weg, err)
    if beschaedigt:  # a run without --nachfrage is a true or false that reads; its second turns are the damage
        linie = S5_ZEILE + 1 if (zeile, feld, wert) == (0, "nachfrage", False) and not weg else zeile + 1
        assert err.startswith(f"messen: DIR/t.jsonl:{linie}: the results file is damaged (") and \
            len(err.splitlines()) == 1, err
    elif anderswo:  # a hash no file here has: the files it was measured on are not found
        assert err.startswith("messen: DIR/t.jsonl was measured ") and len(err.splitlines()) == 1, err
    else:
        # a run that asked more (S6 too, or n outputs a case) reads as incomplete: that many are missing
        soll = 52 if (feld, wert) == ("weiter", True) else 42 * wert if feld == "n" and not weg else 42
        assert out.startswith("Model ") and err == (
            f"messen: DIR/t.jsonl is incomplete (42 of {soll} outputs); the command that measured it, run again, "
            "asks for the rest\n" if soll > 42 else ""), err


def ohne_nachfrage(zeilen_):
    kopf = json.loads(zeilen_[0])
    kopf["einstellungen"]["nachfrage"] = False
    return [json.dumps(kopf)] + list(zeilen_[1:])


def test_zeilen_einer_stufe_ohne_ihren_schalter():
    # a second turn in a run that says it asked none
    status, out, err = bewerten_mit(ohne_nachfrage(zeilen_alle()))
    assert (status, err) == (2, f"messen: DIR/t.jsonl:{S5_ZEILE + 1}: the results file is damaged (a second turn in "
                                "S5-1, in a run without --nachfrage)\n")
    # an S6 output in a run without --weiter
    s6 = dict(json.loads(zeilen_alle()[1]), id="S6-1", stufe="S6")
    status, out, err = bewerten_mit(list(zeilen_alle()) + [json.dumps(s6)])
    assert (status, err) == (2, f"messen: DIR/t.jsonl:{len(zeilen_alle()) + 1}: the results file is damaged (an "
                                "output of S6-1, a case of S6, in a run without --weiter)\n")


@pytest.mark.parametrize("feld, wert, warum", [
    ("faelle_datei", 5, "faelle_datei is not a path"),
    ("katalog_datei", ["k.json"], "katalog_datei is not a path"),
    ("katalog_sha256", None, "katalog_sha256 is not a string"),
    ("url", ["http://127.0.0.1:1/v1"], "url is not a string"),  # the comparison reads which server it was
])
def test_eine_beschaedigte_einstellung_beim_suchen_der_dateien(feld, wert, warum):
    status, out, err = bewerten_mit(geaendert(0, feld, wert))
    assert (status, out, err) == (2, "", f"messen: DIR/t.jsonl:1: the results file is damaged ({warum})\n")


# ---------------------------------------------------------------------------
# Files of the format before the redesign (their lines held grades) regrade to the same figures
# ---------------------------------------------------------------------------

ALTE = ROOT / "tests" / "alte_laeufe"
GEMESSEN_AUF = ("--faelle", str(ALTE / "faelle.jsonl"))  # the case file they were measured on (S7's since changed)


MIT_ALLEN_ARTEN = "Diagnosis: what the server did and what the model did"


def kopf_seit_2026_12(text):
    """An older version's text with the diagnosis of today: its heading names every kind its lines are of (these
    runs have the server's and the model's: leer, eigenes_format, schleife, a loop being the model's as WESSEN, the
    one table of whose, says since 2026-12-07), and a looping answer's line names the failure class it counts in
    (every cut answer of these runs loops) and what follows from it for a comparison."""
    return text.replace("Diagnosis: what the server did, not the model", MIT_ALLEN_ARTEN).replace(
        "no answer (abgeschnitten: see the diagnosis)", "no answer (schleife: see the diagnosis)").replace(
        "No answer came: whether the model loops or its chat template makes it loop cannot be told here.",
        "A comparison under the same server, chat template and limit counts these outputs as the model's.")


def seit_2026_12(k):
    """A run's JSON as an older version printed it, with what the diagnosis says since: strom_defekt renamed
    (was stream_defekt), and sofort_beendet counted (answers that ended at once, none in these runs); and the
    failure class kontextgrenze (an S7 job whose conversation outgrew the server's context, none here),
    erledigt_nativ beside erledigt, leer_ungezaehlt (empty answers without a token count), and bfcl (BFCL's own verdict, for runs of its cases: none here);
    and label_umgeschrieben (text alone labelled tool_calls where every answer is: none here), and gemischt
    (answers that name two models or builds: none here), and markiert (a family's call marks with no complete call
    among them: none here), strom_abgebrochen (streams broken off by an error event: none here), and
    denken_im_text (reasoning delimiters left in the content: none here), and fremde_vorlage (a template's turn markers
    written as text: none here)."""
    d = dict(k["diagnose"])
    d["strom_defekt"] = d.pop("stream_defekt")
    return dict(k, diagnose=dict(d, sofort_beendet=0, leer_ungezaehlt=0, label_umgeschrieben=0,
                                                          gemischt={}, markiert=0, strom_abgebrochen=0,
                                                          denken_im_text=0, fremde_vorlage=0), fehlerarten=dict(k["fehlerarten"], kontextgrenze=0),
                erledigt_nativ=k["erledigt"], bfcl=None)  # S7's jobs done natively: here, where none wrote text, all


@pytest.mark.parametrize("format", ["", "ohne_noten"])  # ef89b6a's lines with grades, 472e864's without
@pytest.mark.parametrize("tag", ["kapitel", "alles", "strom", "synonyme"])
def test_alte_dateien_ergeben_dieselben_zahlen(cli, tmp_path, tag, format):
    ordner = tmp_path / "alt"
    ordner.mkdir()
    for name in ("kapitel", "alles", "strom", "synonyme"):
        (ordner / f"{name}.jsonl").write_bytes((ALTE / format / f"{name}.jsonl").read_bytes())
    status, out, err = cli("--bewerten", tag, "--json", "--ausgabe", str(ordner), *GEMESSEN_AUF)
    assert (status, err) == (0, "")
    alt = (ALTE / f"{tag}.json").read_text(encoding="utf-8")
    assert json.loads(out) == seit_2026_12(json.loads(alt))
    status, out, err = cli("--bewerten", tag, "--alle", "--ausgabe", str(ordner), *GEMESSEN_AUF)
    assert (status, out, err) == (0, kopf_seit_2026_12((ALTE / f"{tag}.txt").read_text(encoding="utf-8")), "")
    if tag == "alles":
        status, out, err = cli("--vergleich", "kapitel", "alles", "--json", "--ausgabe", str(ordner), *GEMESSEN_AUF)
        alt = (ALTE / "vergleich-kapitel-alles.json").read_text(encoding="utf-8")
        neu = json.loads(out)
        assert neu.pop("nativ")["urteil"] == "offen"  # gelungen_nativ paired, since 2026-12: as auftraege_gelungen
        assert neu.pop("mit_kapitel") is True  # since 2026-12: whether the chapter's cases are in the test
        assert neu.pop("bfcl") is None  # since 2026-12: BFCL's own verdict paired, for runs of its cases
        assert neu.pop("gegenlauf") is None  # since 2026-12: as meant and native point the same way here
        assert neu.pop("gleich") == [42, 42]  # since 2026-12-07: at temperature 0, answers the same to the letter
        assert neu.pop("mit_vorlage") is None  # since 2026-12-07: no --mit-vorlage
        alt = json.loads(alt)
        alt["a_kennzahlen"], alt["b_kennzahlen"] = map(seit_2026_12, (alt["a_kennzahlen"], alt["b_kennzahlen"]))
        # since 2026-12 the server's outputs count for B and against B (S3-2's empty one in alles): the model's
        # test and whose each flip is changed by that principle; the flips, figures and the verdict did not
        neu_modell, alt_modell = neu.pop("modell"), alt.pop("modell")
        assert (neu.pop("serverseitig"), neu.pop("wessen")) == (["S3-2"], {"S3-2": {"art": "server", "gruende": [
            "leer"], "in": ["A", "B"], "zug": 1, "ziehungen": ["B #1 of 2", "B #2 of 2"]}}) and (alt.pop("serverseitig"), alt.pop("wessen")) == ([], {})
        assert (neu_modell["gesamt"]["urteil"], neu_modell["gesamt"]["fuer_b"]["faelle"]) == ("offen", 42)
        assert alt_modell["gesamt"]["urteil"] == "offen"
        neu.pop("rueck"), alt.pop("rueck")
        alt.pop("server_allein")  # since 2026-12-04: the server's flips count both ways, no verdict of their own
        assert (status, neu) == (0, alt)
        # the text: the same but for the table of figures, which is now the series' (one rows model)
        status, out, err = cli("--vergleich", "kapitel", "alles", "--ausgabe", str(ordner), *GEMESSEN_AUF)
        alt = kopf_seit_2026_12((ALTE / "vergleich-kapitel-alles.txt").read_text(encoding="utf-8")).splitlines()
        ab = alt.index("A " + MIT_ALLEN_ARTEN)
        neu = out.splitlines()
        # since 2026-12 a line says that only alles asked S5's second turn, which stays out of the test
        neu.remove("Only alles asked S5's second turn (--nachfrage): the test compares the first turns, the second "
                   "stays out of it.")
        # the verdict's first sentence (the flips as they stand) is the same; what follows weighs S3-2 both ways
        vorn = lambda z: re.split(r"[.:] ", z)[0]  # noqa: E731
        i = next(i for i, z in enumerate(neu) if URTEIL_ANFANG.match(z))  # the verdict: a line a part since 2026-12
        # since 2026-12-07 the verdict stands before the diagnosis, and the two runs' diagnoses are one table: a row
        # per kind with A's and B's outputs, each kind's words once
        alte = [m.groups() for z in alt[ab:-2] if (m := re.fullmatch(r"([AB])   (\S+) +(\d+): (.*)", z))]
        hinweise = [z for z in alt[ab:-2] if z and not z.startswith(("A ", "B "))]
        zahl = {(lauf, art): n for lauf, art, n, _ in alte}
        reihen = [(art, zahl.get(("A", art), "0"), zahl.get(("B", art), "0"))
                  for art in dict.fromkeys(a for _, a, _, _ in alte)]
        d = neu.index(MIT_ALLEN_ARTEN)
        assert [tuple(z.split()[:3]) for z in neu[d + 2:d + 2 + len(reihen)]] == reihen
        assert [z for z in neu[d + 2 + len(reihen):] if z.startswith("  ")][:len(reihen)] == [
            f"  {art}: {text}" for lauf, art, _, text in alte if lauf == "B"]
        assert (status, neu[:3], neu[i - 1 - len(hinweise):i - 1], vorn(neu[i]), schluss(out)[-1]) == \
            (0, alt[:3], hinweise, vorn(alt[-2]), alt[-1])


@pytest.mark.parametrize("tag, zeile, aendern, warum", [
    ("alles", 70, lambda a: a.update(zweite="yes"), "turn 2 is not an object"),
    ("alles", 70, lambda a: a["zweite"].update(nachricht=[]), "turn 2 nachricht is not an object"),
    ("alles", 70, lambda a: a.pop("latenz_s"), "turn 1 has no latenz_s"),
    ("alles", 106, lambda a: a.update(verlauf=[{"nachricht": {}}]), "turn 1 has no usage"),
    ("alles", 106, lambda a: a.update(verlauf={}), "zuege is not a list of turns"),
    ("strom", 5, lambda a: a["strom"].update(ohne_strom=[]), "turn 2 is not an object"),
    ("strom", 5, lambda a: a["strom"].update(chunks="viele"), "turn 1 strom is not a stream's record"),
])
def test_eine_alte_zeile_wird_als_zuege_geprueft(cli, tmp_path, tag, zeile, aendern, warum):
    """A hand-damaged line of the format before turns: read as turns, and the damage named as one."""
    zeilen_ = (ALTE / "ohne_noten" / f"{tag}.jsonl").read_text(encoding="utf-8").splitlines()
    a = json.loads(zeilen_[zeile - 1])
    aendern(a)
    zeilen_[zeile - 1] = json.dumps(a)
    (tmp_path / f"{tag}.jsonl").write_text("\n".join(zeilen_) + "\n", encoding="utf-8")
    assert cli("--bewerten", tag, "--ausgabe", str(tmp_path), *GEMESSEN_AUF) == (
        2, "", f"messen: {tmp_path / tag}.jsonl:{zeile}: the results file is damaged ({warum})\n")
