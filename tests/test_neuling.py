"""A newcomer's first hour: time to plan by, and every line readable on its own, over loopback HTTP."""

import codecs
import itertools
import json
import os
import pty
import re
import select
import subprocess
import sys
import threading
import time

import pytest

import messen
from conftest import (BY_ID, wie_geschrieben, GANZ_FAELLE, ROOT, Halter, completion, messung, openai_nachricht, richtig, vorbereitet,
                      zweiter_zug)

ZEILE = re.compile(r"messen: (\d+)/(\d+) (\S*)\s+\d+:\d\d so far(, \d+\.\d s a request \(median\))?"
                   r"(, about \d+:\d\d left \(\d+:\d\d to \d+:\d\d\))?(, in flight: \S+ for \d+:\d\d( and \d+ more)?)?"
                   r"\x1b\[K")


def lies_pty(fd, proc):
    """Everything the process writes to the pseudo-terminal until it ends (bounded by the process)."""
    return "".join(teil for _, teil in lies_pty_mit_zeit(fd, proc))


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
    text, gespeichert = text.replace("\r\n", "\n").rsplit("messen: saved: ", 1)  # the run's last line, its own
    assert gespeichert == f"{tmp_path / 'm.jsonl'} (42 outputs)\n"
    zeilen = [z for z in text.split("\r") if z]
    stand = [ZEILE.fullmatch(z.rstrip("\n")) for z in zeilen]
    assert all(stand), [z for z, m in zip(zeilen, stand) if not m][:3]
    # one line, rewritten from the first second (0/42) and for every output; a tick between repeats a count
    fertig = [int(m.group(1)) for m in stand]
    assert fertig == sorted(fertig) and sorted(set(fertig)) == list(range(0, 43))
    # the time left from the fifth request on (a tenth of 42 expected), never on the last line
    assert {f for f, m in zip(fertig, stand) if m.group(5)} == set(range(5, 42))
    assert zeilen[-1].endswith("\n") and "messen: 42/42 outputs" not in text  # no plain lines on a terminal


def test_ohne_terminal_bleiben_die_schlichten_zeilen(cli, endpunkt):
    status, out, err = cli(*messung(endpunkt().url))
    assert [z for z in err.splitlines() if z.startswith("messen: ")] == [
        f"messen: {n}/42 outputs" for n in (5, 9, 13, 17, 21, 26, 30, 34, 38, 42)] + [
        f"messen: saved: {cli.ausgabe / 'm.jsonl'} (42 outputs)"]


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
    # the Markdown rows are the diagnosis's lines, counts only: no words of the form, no dict of forms
    md = [z for z in cli("--bewerten", "m", "--markdown")[1].splitlines() if z.startswith("| diagnosis: ")]
    assert md == ["| diagnosis: unlesbar | 1 |"]


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
    i = next(i for i, z in enumerate(zeilen) if z.startswith("  S7-3  "))  # its question in the run's values
    assert zeilen[i + 2].endswith("| no answer (leer)")
    assert zeilen[i + 3] == "      differs:   the last step is no answer (leer: see the diagnosis)"
    i = next(i for i, z in enumerate(zeilen) if z.startswith("  S7-4  "))
    assert wie_geschrieben(cli.ausgabe / "m.jsonl", "S7-4", zeilen[i + 3]) == ('      differs:   the end state differs: a room booking of "besprechung" on 2026-03-18, '
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


def ohne_laengste(luecken):
    return (sum(luecken) - max(luecken)) / (len(luecken) - 1)


def test_die_restzeit_aus_dem_takt_der_anfragen():
    """The time left: the requests still expected at the pace they came back lately, with its range; none
    before five came and a tenth of those expected; one request held long does not move it."""
    weit = 1 + 1 / 7 ** 0.5  # the chance of a pace over seven requests, half of the fifteen answered
    # the chapter's 37 left after 15 answered in a second each, and S7's 26 jobs, as many as their references
    offen = 37 + sum(len(f["loesung"]) for f in GANZ_FAELLE)
    assert offen == 121 and sum(f.art.weise.anfragen(f, messen.Lauf()) for f in map(messen.als_fall, GANZ_FAELLE)) == 121 - 37
    # the high end no more than the slowest gap, a second, for each request left
    assert messen.resttakt(list(range(1, 16)), offen, 0) == pytest.approx((121, 121 / weit, 121))
    # while the 16th is in flight: half a second on, all count down; three and ten seconds on, it is overdue, so
    # the 120 after it hold their pace and the high end grows with the seconds it has taken beyond the median gap
    assert messen.resttakt(list(range(1, 16)), offen, 0, jetzt=15.5) == pytest.approx((120.5, 121 / weit - 0.5, 121))
    assert messen.resttakt(list(range(1, 16)), offen, 0, jetzt=18) == pytest.approx((120, 120 / weit, 120 * weit + 2))
    assert messen.resttakt(list(range(1, 16)), offen, 0, jetzt=25) == pytest.approx((120, 120 / weit, 120 * weit + 9))
    assert messen.resttakt(list(range(1, 16)), 0, 0, jetzt=25) == (0, 0, 0)  # none left, however long it takes
    # the 13th held for ten seconds: the pace stays a second a request, the range widens to take it in
    gehalten = list(range(1, 13)) + [22, 23, 24]
    assert messen.resttakt(gehalten, offen, 0)[:2] == pytest.approx((121, 121 / weit))
    # half as fast lately: the pace follows, the range reaches down to the whole run's (1.5 s, the median gap)
    langsamer = list(range(1, 11)) + [12, 14, 16, 18, 20, 22, 24, 26, 28, 30]
    assert messen.resttakt(langsamer, offen, 0) == pytest.approx((242, 121 * 1.5 / (1 + 1 / 10 ** 0.5), 242))
    # --parallel 2, requests of 8 s each, the two slots 0.3 s apart: answers come back 0.3 s and 7.7 s apart in
    # turn; the pace is 4 s an answer, which gaps over two answers give, and single gaps' median does not
    paarweise = [t for k in range(1, 11) for t in (8 * k, 8 * k + 0.3)]
    assert messen.resttakt(paarweise, 100, 0, parallel=2)[0] == pytest.approx(100 * 8 / 2)
    assert messen.resttakt(paarweise, 100, 0)[0] == pytest.approx(100 * (0.3 * 10 + 7.7 * 9) / 19)  # single gaps
    assert messen.resttakt(list(range(1, 5)), 10, 0) is None  # four came
    # short and long answers mixed: the time left for 100 more is their mean pace, the longest gap left out, and
    # moves little; the last few answers' median said 2 s, a third of the pace, at every one of these answers
    luecken = [2, 15, 2, 15, 2, 15, 2, 15, 15, 2, 2, 15, 2, 2, 2, 2, 15, 2, 2, 2, 15, 2, 2, 15, 2, 2, 15, 2, 2, 2,
               15, 2, 15]
    zeiten = list(itertools.accumulate(luecken))
    mitten = [messen.resttakt(zeiten[:n], 100, 0)[0] for n in range(13, 34)]
    assert mitten == [pytest.approx(100 * ohne_laengste(luecken[:n])) for n in range(13, 34)]
    assert max(mitten) / min(mitten) < 1.25 and min(mitten) > 100 * 3 * 2
    assert messen.resttakt(list(range(1, 11)), 100, 0) is None  # ten of 110: less than a tenth


def lies_pty_mit_zeit(fd, proc, schaue=None):
    """What the process writes to the pseudo-terminal until it ends, each piece with when it came (monotonic
    seconds), each whole line (as rewritten with \\r) shown to schaue as it comes; bounded by the process."""
    teile, utf8, angefangen = [], codecs.getincrementaldecoder("utf-8")(), ""  # a split character stays whole
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
        teile.append((time.monotonic(), utf8.decode(teil)))
        if schaue:
            *fertig, angefangen = (angefangen + teile[-1][1]).replace("\r\n", "\n").replace("\n", "\r").split("\r")
            for zeile in filter(None, fertig):
                schaue(zeile)
    proc.wait(timeout=30)
    return teile


def test_ein_langsamer_server_laesst_niemanden_blind_warten(endpunkt, tmp_path):
    """On a terminal, against a server that holds S2-3's first request past --timeout and answers the second
    half of the run at half the speed of the first: the line ticks while a request is in flight, the request
    asked again is named with why, and once a quarter of the requests are done the real end falls within half
    the low end and twice the high end of the time left shown (a second more for its rounding)."""
    halter = Halter()

    def antwort(fall, body, nummer):
        if fall is not None and fall["id"] == "S2-3" and nummer == 1:
            return halter(fall, body, nummer)
        time.sleep(0.05 if server.zahl() <= 21 else 0.1)
        return richtig(fall, body, nummer)
    server = endpunkt(antwort)
    herr, knecht = pty.openpty()
    proc = subprocess.Popen([sys.executable, str(ROOT / "messen.py"), *messung(server.url, "--timeout", "3"),
                             "--ausgabe", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=knecht,
                            stdin=subprocess.DEVNULL)
    os.close(knecht)
    try:
        teile = lies_pty_mit_zeit(herr, proc)
    finally:
        halter.los.set()
        os.close(herr)
    assert proc.returncode == 0
    zeilen = [(t, z.strip("\n")) for t, teil in teile for z in teil.replace("\r\n", "\n").split("\r") if z.strip()]
    assert ("messen: S2-3: Timeout: no complete answer within --timeout 3 s; asking again (attempt 2 of 4)" in
            [z.replace("\x1b[K", "") for _, z in zeilen])
    stand = [(t, ZEILE.fullmatch(z)) for t, z in zeilen if ZEILE.fullmatch(z)]
    # it ticked while S2-3 was held: a line of the same count, naming what is in flight and since when
    assert any(re.search(r"in flight: S2-3 for 0:0[1-9]", m.group(0)) for _, m in stand)
    ende = stand[-1][0]
    geschaetzt = [(int(m.group(1)), ende - t, *map(sekunden, re.findall(r"\d+:\d\d", m.group(5))[1:]))
                  for t, m in stand if m.group(5) and int(m.group(1)) >= 42 / 4]
    assert geschaetzt and all(lo / 2 - 1 <= echt <= 2 * hi + 1 for _, echt, lo, hi in geschaetzt), geschaetzt


def test_die_restzeit_zaehlt_herunter_waehrend_eine_anfrage_unterwegs_ist(endpunkt, tmp_path):
    """On a terminal: five answers a second apart, then S1-6 held. The ticks while it is in flight count the time
    left down from the line of the fifth output, never up; once it has taken longer than the gaps, the high end
    grows. S1-6 is let go as soon as a tick shows both (the test fails if none does within 30 s)."""
    los, gesehen = threading.Event(), []

    def antwort(fall, body, nummer):
        if fall is not None and fall["id"] == "S1-6":
            los.wait(30)
        elif fall is not None and fall["id"] in ("S1-1", "S1-2", "S1-3", "S1-4", "S1-5"):
            time.sleep(1)
        return richtig(fall, body, nummer)

    def schaue(zeile):
        m = ZEILE.fullmatch(zeile)
        if m and m.group(1) == "5" and m.group(5):
            gesehen.append((bool(m.group(6)), *map(sekunden, re.findall(r"\d+:\d\d", m.group(5)))))
            if gesehen[-1][0] and gesehen[-1][1] < gesehen[0][1] and gesehen[-1][3] > gesehen[0][3]:
                los.set()
    server = endpunkt(antwort)
    herr, knecht = pty.openpty()
    proc = subprocess.Popen([sys.executable, str(ROOT / "messen.py"), *messung(server.url), "--ausgabe",
                             str(tmp_path)], stdout=subprocess.DEVNULL, stderr=knecht, stdin=subprocess.DEVNULL)
    os.close(knecht)
    try:
        lies_pty_mit_zeit(herr, proc, schaue)
    finally:
        los.set()
        os.close(herr)
    assert proc.returncode == 0
    # the first line of five outputs is the fifth output's own, with nothing in flight; the ticks name S1-6
    assert not gesehen[0][0] and all(unterwegs for unterwegs, *_ in gesehen[1:])
    mitten = [mitte for _, mitte, _, _ in gesehen]
    assert mitten == sorted(mitten, reverse=True) and mitten[-1] < mitten[0], gesehen
    assert gesehen[-1][3] > gesehen[0][3], gesehen


def sekunden(uhr):
    minuten, s = uhr.split(":")
    return 60 * int(minuten) + int(s)


def test_die_form_der_meisten_textaufrufe_und_die_wanduhr_zweier_sitzungen(cli, endpunkt):
    """The diagnosis names the form most text calls were written in (one ``` fence first among bare JSON does not
    name them all); a run measured in two sittings says what its wall time counts."""
    def antwort(fall, body, nummer):
        aufrufe = [{"name": c["name"], "arguments": c["args"]} for c in fall["erwartet"]]
        if fall["stufe"] != "S1" or not aufrufe:
            return richtig(fall, body, nummer)
        text = json.dumps(aufrufe[0])
        return completion({"role": "assistant", "content": f"```json\n{text}\n```" if fall["id"] == "S1-1" else text})
    status, out, err = cli(*messung(endpunkt(antwort).url, "--json"))
    assert (status, json.loads(out)["diagnose"]["text_form"]) == (0, "bare JSON"), err
    # a second tag: stopped at S2-1 by a refusal, then resumed
    halt = endpunkt(lambda fall, body, nummer: (400, {"error": {"message": "no"}}, {}) if fall["id"] == "S2-1"
                    else richtig(fall, body, nummer))
    assert cli(*messung(halt.url, "--tag", "zwei"))[0] == 1
    status, out, err = cli(*messung(endpunkt().url, "--tag", "zwei"))
    zeile = next(z for z in out.splitlines() if z.startswith("Latency "))
    assert status == 0 and zeile.endswith(" s (the 2 sittings' own, each from its first request to its last answer, "
                                          "added up; the time between them left out)"), zeile


def test_in_eine_datei_eine_zeile_je_minute(capsys):
    """Into a file or pipe, between the plain line of every tenth output, the ticker's line once a minute says the
    time so far and what is in flight."""
    anzeige = messen.Fortschritt(0, 42, 42, terminal=False)
    schluessel = anzeige.gesendet("S1-1")
    anzeige.zeige(takt=True)
    anzeige.zurueck(schluessel, 0.5)
    anzeige.ende()
    assert capsys.readouterr().err == "messen: 0/42 outputs, 0:00 so far, in flight: S1-1 for 0:00\n"


def test_a_run_of_jobs_counts_its_requests_beside_its_outputs(capsys):
    """A job (S7, a BFCL multi-turn case) is many requests: the ticker's line counts those answered too."""
    anzeige = messen.Fortschritt(0, 12, 90, terminal=False, je_anfrage=True)
    for i in range(3):
        anzeige.zurueck(anzeige.gesendet(f"multi_turn_base_0, turn 1 step {i + 1}"), 0.5)
    schluessel = anzeige.gesendet("multi_turn_base_0, turn 2 step 1")
    anzeige.zeige(takt=True)
    anzeige.zurueck(schluessel, 0.5)
    anzeige.ende()
    assert capsys.readouterr().err == ("messen: 0/12 outputs, 3 requests, 0:00 so far, 0.5 s a request (median), "
                                       "in flight: multi_turn_base_0, turn 2 step 1 for 0:00\n")
