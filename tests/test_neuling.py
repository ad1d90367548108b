"""A newcomer's first hour: time to plan by, and every line readable on its own, over loopback HTTP."""

import json
import os
import pty
import re
import select
import subprocess
import sys

import pytest

import messen
from conftest import (BY_ID, GANZ_FAELLE, ROOT, completion, messung, openai_nachricht, richtig, vorbereitet,
                      zweiter_zug)

ZEILE = re.compile(r"messen: (\d+)/(\d+) (\S+)\s+\d+:\d\d so far, \d+\.\d s a request \(median\)"
                   r"(, about \d+:\d\d left)?\x1b\[K")


def lies_pty(fd, proc):
    """Everything the process writes to the pseudo-terminal until it ends (bounded by the process)."""
    teile = []
    while True:
        bereit, _, _ = select.select([fd], [], [], 30)
        if not bereit:
            break
        try:
            teil = os.read(fd, 65536)
        except OSError:  # the other side closed: Linux says EIO
            break
        if not teil:
            break
        teile.append(teil)
    proc.wait(timeout=30)
    return b"".join(teile).decode()


def test_die_fortschrittszeile_auf_einem_terminal(endpunkt, tmp_path):
    server = endpunkt()
    herr, knecht = pty.openpty()
    proc = subprocess.Popen([sys.executable, str(ROOT / "messen.py"), *messung(server.url), "--ausgabe",
                             str(tmp_path)], stdout=subprocess.DEVNULL, stderr=knecht, stdin=subprocess.DEVNULL)
    os.close(knecht)
    try:
        text = lies_pty(herr, proc)
    finally:
        os.close(herr)
    assert proc.returncode == 0
    zeilen = [z for z in text.replace("\r\n", "\n").split("\r") if z]
    stand = [ZEILE.fullmatch(z.rstrip("\n")) for z in zeilen]
    assert all(stand), [z for z, m in zip(zeilen, stand) if not m][:3]
    assert [int(m.group(1)) for m in stand] == list(range(1, 43))  # one line, rewritten for every output
    assert [bool(m.group(4)) for m in stand] == [False] * 4 + [True] * 37 + [False]  # from the fifth, but the last
    assert zeilen[-1].endswith("\n") and "messen: 42/42 outputs" not in text  # no plain lines on a terminal


def test_ohne_terminal_bleiben_die_schlichten_zeilen(cli, endpunkt):
    status, out, err = cli(*messung(endpunkt().url))
    assert [z for z in err.splitlines() if z.startswith("messen: ")] == [
        f"messen: {n}/42 outputs" for n in (5, 9, 13, 17, 21, 26, 30, 34, 38, 42)]


def test_uhrzeit():
    assert [messen.uhrzeit(s) for s in (0, 59.6, 134, 3599, 4000)] == ["0:00", "1:00", "2:14", "59:59", "1:06:40"]


# ---------------------------------------------------------------------------
# One count per word
# ---------------------------------------------------------------------------

def test_klassen_und_diagnose_zaehlen_dasselbe(cli, endpunkt):
    schleife = completion({"role": "assistant", "content": "Let me see. " + "and then I check it again " * 12}, "length")
    abgeschnitten = completion({"role": "assistant", "content": "I will look up the contact and"}, "length")
    leer = completion({"role": "assistant", "content": None})

    def antwort(fall, body, nummer):
        if zweiter_zug(body) and fall["id"] == "S5-1":
            return leer  # an empty second turn counts in both
        return {"S2-1": schleife, "S2-2": schleife, "S2-3": abgeschnitten, "S2-4": leer}.get(
            fall["id"], completion({"role": "assistant", "content": "Which one?"}) if fall["stufe"] == "S5" and
            not zweiter_zug(body) else None) or richtig(fall, body, nummer)
    vorbereitet(cli, *messung(endpunkt(antwort).url, "--nachfrage"))
    k = json.loads(cli("--bewerten", "m", "--json")[1])
    d, f = k["diagnose"], k["fehlerarten"]
    assert (d["schleife"], d["abgeschnitten"], d["leer"]) == (2, 1, 2)
    assert (f["schleife"], f["abgeschnitten"], f["leer"]) == (d["schleife"], d["abgeschnitten"], d["leer"])
    text = cli("--bewerten", "m")[1]
    assert "Failure classes: kein_aufruf 7, leer 2, abgeschnitten 1, schleife 2." in text.splitlines()


# ---------------------------------------------------------------------------
# A malformed call shows what came
# ---------------------------------------------------------------------------

def test_ein_kaputter_aufruf_im_zaun_zeigt_seinen_text(cli, endpunkt):
    geschrieben = '```json\n{"name": "get_contact", "arguments": {"contact_id": get("5b2c")}}\n```'

    def antwort(fall, body, nummer):
        return completion({"role": "assistant", "content": geschrieben}) if fall["id"] == "S1-1" else \
            richtig(fall, body, nummer)
    status, out, err = cli(*messung(endpunkt(antwort).url))
    zeilen = out.splitlines()
    i = zeilen.index(f"  S1-1  {BY_ID['S1-1']['frage']}")
    assert zeilen[i + 2:i + 5] == [
        "      came:     get_contact(<malformed arguments>)",
        '      written:  a ``` fence: "```json {"name": "get_contact", "arguments": {"contact_id": get("5b2c")}} ```"',
        "      differs:  get_contact: arguments are not a JSON object"]
    assert ("  unlesbar       1: calls whose arguments do not parse, by the form they were written in: a ``` fence 1; "
            "the failed list shows what was written.") in out
    k = json.loads(cli("--bewerten", "m", "--json")[1])
    assert k["unlesbar_geschrieben"] == [{"id": "S1-1", "lauf": 0, "zug": 1, "form": "a ``` fence", "text":
                                          '```json {"name": "get_contact", "arguments": {"contact_id": get("5b2c")}} '
                                          '```'}]
    assert k["diagnose"]["unlesbar"] == {"a ``` fence": 1}


# ---------------------------------------------------------------------------
# S7: no line contradicts the one before
# ---------------------------------------------------------------------------

def test_s7_zeilen_widersprechen_sich_nicht(cli, endpunkt):
    schritt = lambda body: sum(m["role"] == "assistant" for m in body["messages"])  # noqa: E731

    def antwort(fall, body, nummer):
        if fall["id"] == "S7-4" and schritt(body) == 1:  # the booking at the wrong time
            return completion(openai_nachricht([{"name": "book_room", "args": {
                "room": "besprechung", "date": "2026-03-18", "start": "10:00", "end": "11:30"}}]), "tool_calls")
        if fall["id"] == "S7-3" and schritt(body) == 2:  # the closing answer empty
            return completion({"role": "assistant", "content": None})
        return richtig(fall, body, nummer)
    status, out, err = cli(*messung(endpunkt(antwort).url, "--ganz", "--stufen", "S7"))
    zeilen = out.splitlines()
    i = zeilen.index(f"  S7-3  {BY_ID['S7-3']['frage']}")
    assert zeilen[i + 2].endswith("| no answer (leer)")
    assert zeilen[i + 3] == "      differs:   the last step is no answer (leer: see the diagnosis)"
    i = zeilen.index(f"  S7-4  {BY_ID['S7-4']['frage']}")
    assert zeilen[i + 3] == ('      differs:   the end state differs: a room booking of "besprechung" on 2026-03-18, '
                             '14:00-15:30 missing; a room booking of "besprechung" on 2026-03-18, 10:00-11:30 spare')
    assert "1 requests" not in out and len(GANZ_FAELLE) == 26


@pytest.mark.parametrize("typ, wert, abhilfe", [
    ("integer", "15", "; write it as 15, without quotes"),
    ("number", "2.5", "; write it as 2.5, without quotes"),
    ("integer", "2.5", ""),  # no integer: no fix to name
    ("boolean", "false", "; write it as false, without quotes"),
    ("string", 15, '; write it in quotes, "15"'),
])
def test_ein_typfehler_nennt_die_abhilfe(typ, wert, abhilfe):
    assert messen.typ_abhilfe(wert, typ) == abhilfe


def test_die_restzeit_zaehlt_anfragen(monkeypatch):
    """The time left counts requests, not outputs: with the chapter's cases answered first (one request each)
    and 26 S7 jobs still ahead (as many requests as their references), five answers of one second each leave
    the chapter's 37 requests and the jobs' own, not 63 outputs of one second."""
    import types
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    faelle = [f for f in messen.lade_faelle(ROOT / "faelle.jsonl")[0] if f["stufe"] != "S6"]
    lauf = messen.Lauf()
    anzeige = messen.Fortschritt(0, len(faelle), 1, sum(messen.erwartete_anfragen(f, lauf) for f in faelle))
    for f in faelle[:5]:
        anzeige.weiter(types.SimpleNamespace(anfragen=((1.0, {}),)), f["id"], messen.erwartete_anfragen(f, lauf))
    rest = 37 + sum(len(f["loesung"]) for f in GANZ_FAELLE)
    assert anzeige.stand().endswith(f", 1.0 s a request (median), about {messen.uhrzeit(rest)} left")
    assert rest == 37 + 84 and messen.uhrzeit(rest) == "2:01"  # outputs left would say 1:03
