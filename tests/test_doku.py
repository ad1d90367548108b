"""The README and docs/ stay true: every `messen ...` example parses as the command line takes it,
every quoted output is what the code prints (the block names the scenario that prints it), and the
data shown is valid JSON.

A quoted output block is preceded by `<!-- geprueft: NAME -->` (a scenario below, run over
loopback) or `<!-- gemessen: COMMAND -->` (measured on a real server by a script of tests/)."""

import json
import os
import re
import shlex
import subprocess
import sys

import pytest

import messen
from conftest import FAELLE, erwartet_von, KAPITEL_FEHLER, ROOT, completion, falsch_in, messung, mit_fehlern, openai_nachricht, richtig, \
    vorbereitet

DATEIEN = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(?:<!-- (geprueft|gemessen): ([^>]*?) -->\n)?```(\w*)\n(.*?)```", re.S)


def bloecke():
    """(file name, marker kind, marker value, language, text) of every fenced block."""
    return [(pfad.name if pfad.name == "README.md" else f"docs/{pfad.name}", *m.groups())
            for pfad in DATEIEN for m in BLOCK.finditer(pfad.read_text(encoding="utf-8"))]


def befehle():
    return [(datei, re.split(r"\s+# ", zeile)[0].strip()) for datei, _, _, sprache, text in bloecke() if sprache == "sh"
            for zeile in text.splitlines() if zeile.startswith(("messen ", "python3 messen.py "))]


def test_es_gibt_beispiele_und_ausgaben():
    assert len(befehle()) >= 15 and sum(art == "geprueft" for _, art, *_ in bloecke()) >= 5


@pytest.mark.parametrize("datei, befehl", befehle(), ids=lambda x: x if isinstance(x, str) and len(x) < 40 else None)
def test_jedes_beispiel_ist_ein_gueltiger_aufruf(datei, befehl):
    argv = shlex.split(befehl)
    argv = argv[1:] if argv[0] == "messen" else argv[2:]
    args = messen.parser().parse_args(argv)  # bad usage raises Eingabefehler, naming the option
    assert args.url or args.selbsttest or args.bewerten or args.vergleich, befehl


@pytest.mark.parametrize("datei, art, wert, sprache, text", [b for b in bloecke() if b[3] in ("json", "jsonl")],
                         ids=lambda x: x if isinstance(x, str) and x.startswith(("docs", "README")) else None)
def test_gezeigte_daten_sind_json(datei, art, wert, sprache, text):
    if sprache == "json":
        json.loads(text)
    else:
        assert all(isinstance(json.loads(z), dict) for z in text.splitlines() if z.strip())


def test_jede_gezeigte_ausgabe_sagt_wie_sie_geprueft_wird():
    ohne = [(datei, text[:60]) for datei, art, _, sprache, text in bloecke() if sprache in ("", "text") and not art]
    assert ohne == []
    for datei, art, wert, _, _ in bloecke():
        if art == "gemessen":
            assert (ROOT / wert.split()[-1]).is_file(), (datei, wert)


# ---------------------------------------------------------------------------
# The scenarios that print what the docs quote
# ---------------------------------------------------------------------------

def kapitel(cli, endpunkt):
    return vorbereitet(cli, *messung(endpunkt(mit_fehlern(KAPITEL_FEHLER)).url, "--modell", "qwen3.8-27b",
                                     "--tag", "gross"))[1]


def klein(cli, endpunkt):
    kapitel(cli, endpunkt)
    vorbereitet(cli, *messung(endpunkt(mit_fehlern(dict(KAPITEL_FEHLER, **{"S2-1": []}))).url, "--modell",
                              "qwen3.8-27b", "--tag", "klein"))
    return vorbereitet(cli, "--vergleich", "gross", "klein")[1]


def urteil(cli, endpunkt):
    leer = completion({"role": "assistant", "content": None})
    erfunden = {i: [dict(s, args=dict(s["args"], company="Acme")) for s in erwartet_von(f)]
                for i, f in ((i, next(f.roh for f in messen.lade_faelle(ROOT / "faelle.jsonl")[0] if f.id == i))
                             for i in ("S2-4", "S2-5", "S2-6"))}
    modell = mit_fehlern(erfunden)
    vorbereitet(cli, *messung(endpunkt().url, "--tag", "a"))
    vorbereitet(cli, *messung(endpunkt(lambda fall, body, nummer: leer if fall["id"] in ("S2-1", "S2-2", "S2-3")
                                       else modell(fall, body, nummer)).url, "--tag", "b"))
    return vorbereitet(cli, "--vergleich", "a", "b")[1]


def reihe(cli, endpunkt):
    for tag, antwort in [("basis", falsch_in(["S1-1", "S2-2", "S2-9", "S3-3", "S4-1", "S5-8"])),
                         ("ft-1", mit_fehlern(KAPITEL_FEHLER)), ("ft-2", richtig)]:
        vorbereitet(cli, *messung(endpunkt(antwort).url, "--modell", "qwen3-1.7b-ft", "--tag", tag))
    return vorbereitet(cli, "--vergleich", "basis", "ft-1", "ft-2")[1]


def vllm400(cli, endpunkt):
    meldung = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
    server = endpunkt(lambda fall, body, nummer: (400, {"object": "error", "message": meldung, "code": 400}, {}))
    return cli(*messung(server.url))[2]


def bfcl(cli, endpunkt):
    """SmolLM2's real answers to the BFCL sample (tests/bfcl/antworten.jsonl, "echt"), replayed over loopback."""
    from test_bfcl import BFCL, aufgenommen
    return vorbereitet(cli, "--url", endpunkt(aufgenommen).url, "--modell", "echt", "--tag", "smollm2", "--faelle",
                       str(BFCL), "--extra", '{"max_tokens": 256}')[1]


def mehrzug(cli, endpunkt):
    """BFCL's multi-turn: a scripted model that leaves out the last call of its first turn with calls, on 4 cases."""
    import bfcl_pruefer
    import bfcl_spieler
    if bfcl_pruefer.mehrzug() is None:
        pytest.skip("bfcl-eval is not installed (MESSEN_BFCL=1 installs it without its dependencies)")
    pytest.importorskip("mpmath", reason="BFCL's MathAPI needs mpmath: pip install '.[test]'")
    ordner = bfcl_pruefer.daten()
    spieler = bfcl_spieler.Spieler(ordner, bfcl_spieler.weggelassen, ("multi_turn_base",),
                                   bfcl_spieler.signaturen(bfcl_pruefer.backends()))
    e = endpunkt(lambda fall, body, nummer: spieler.antwort(body))
    return vorbereitet(cli, *messung(e.url, "--faelle", str(ordner), "--stufen", "multi_turn_base", "--stichprobe",
                                     "4", "--tag", "mt"))[1]


def pruefen(cli, endpunkt):
    """--pruefen on a server set up right, whose model brings no call in S3 (the README's third step)."""
    from test_pruefen import gesund

    def antwort(fall, body, nummer):
        if fall is not None and fall["stufe"] == "S3":
            return completion({"role": "assistant", "content": "I will do that."})
        return gesund(fall, body, nummer)
    status, out, err = cli("--url", endpunkt(antwort).url, "--modell", "base", "--pruefen")
    assert status == 0, err
    return out


SZENARIEN = {f.__name__: f for f in (kapitel, klein, urteil, reihe, vllm400, bfcl, mehrzug, pruefen)}
DATUM = re.compile(r"measured \d{4}-\d{2}-\d{2}")


@pytest.mark.parametrize("datei, art, wert, sprache, text", [b for b in bloecke() if b[1] == "geprueft"],
                         ids=lambda x: x if isinstance(x, str) and x in SZENARIEN else None)
def test_jede_gezeigte_ausgabe_ist_was_messen_druckt(cli, endpunkt, datei, art, wert, sprache, text):
    gedruckt = {DATUM.sub("measured DATE", z) for z in SZENARIEN[wert](cli, endpunkt).splitlines()}
    fehlt = [z for z in text.splitlines() if DATUM.sub("measured DATE", z) not in gedruckt]
    assert fehlt == [], f"{datei}: lines the scenario {wert} does not print"
    assert openai_nachricht  # the helpers the scenarios share stay imported


def anker(titel):
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as '-'."""
    return re.sub(r"[^\w\- ]", "", titel.strip().lower()).replace(" ", "-")


def test_jeder_verweis_fuehrt_zu_einer_datei_und_ueberschrift():
    koepfe = {p.resolve(): {anker(z.lstrip("#")) for z in p.read_text(encoding="utf-8").splitlines()
                            if z.startswith("#")} for p in DATEIEN}
    kaputt = []
    for pfad in DATEIEN:
        for m in re.finditer(r"\]\(([^)#]*)(#[^)]*)?\)", pfad.read_text(encoding="utf-8")):
            ziel, a = m.groups()
            if ziel.startswith("http"):
                continue
            datei = (pfad.parent / ziel).resolve() if ziel else pfad.resolve()
            if not datei.exists() or a and datei in koepfe and a[1:] not in koepfe[datei]:
                kaputt.append((pfad.name, ziel, a))
    assert kaputt == []



def test_was_die_einrichtung_dem_leser_erklaert(cli):
    """The set-up's note holds: the self-test's schritte_je_auftrag is the 42 cases' expected calls per case."""
    status, out, err = cli("--selbsttest")
    soll = sum(len(f["erwartet"]) for f in FAELLE)
    zahl = re.search(r"^schritte_je_auftrag +(\S+)$", out, re.M)[1]
    assert (status, soll, zahl) == (0, 37, f"{37 / 42:.2f}")
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"`schritte_je_auftrag` reads {zahl} there, not 1: it counts calls per output, and the 42 cases expect " \
           f"{soll} calls" in readme


def test_die_uebersprungenen_tests_sind_benannt(tmp_path):
    """Without bfcl-eval at hand, the README's 31 tests are skipped, each named with why (-rs)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MESSEN_BFCL", "PYTEST_ADDOPTS")}
    env.update(HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path))  # an empty cache: bfcl-eval is not at hand
    lauf = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "tests/test_bfcl.py",
                           "tests/test_bfcl_zwei.py", "tests/test_bfcl_mehrzug.py", "tests/test_doku.py", "-k",
                           "at_hand or drawn_answers or mehrzug"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    grund = "bfcl-eval is not installed (MESSEN_BFCL=1 installs it without its dependencies)"
    uebersprungen = [re.fullmatch(r"SKIPPED \[(\d+)\] (tests/\w+\.py):\d+: (.*)", z).groups()
                     for z in lauf.stdout.splitlines() if z.startswith("SKIPPED")]  # -rs names each, by its line
    assert {(datei, warum) for _, datei, warum in uebersprungen} == {
        (f"tests/{d}.py", grund) for d in ("test_bfcl", "test_bfcl_zwei", "test_bfcl_mehrzug", "test_doku")}
    assert sum(int(n) for n, _, _ in uebersprungen) == 31
    assert "The 31 tests that hold" in (ROOT / "README.md").read_text(encoding="utf-8")
