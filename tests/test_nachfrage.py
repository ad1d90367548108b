"""S5 in full: ask back, then finish the job (--nachfrage), over loopback HTTP.

A model that holds still in S5 gets the user's reply (`nachtrag`) and must then make
the calls of `danach`, graded with passt and bewerte like any other step.
"""

import json
import re
import subprocess
import sys
import threading
import time

import pytest

from conftest import (vorbereitet, BY_ID, FAELLE, KAPITEL_FEHLER, ROOT, completion, meldungen, messung, mit_fehlern,
                      openai_nachricht, richtig, zeilen, zug, zweiter_zug)
from messen import EROEFFNUNG, KATALOG, pruefe_fall

S5 = [f for f in FAELLE if f["stufe"] == "S5"]
FRAGE = "Which one do you mean? Please give me the missing value."


def json_lauf(cli, *argv):
    status, out, err = cli(*argv, "--json")
    assert status == 0, err
    return json.loads(out)


def fragt_nach(danach=None, erst=None):
    """Holds still in S5 with a question, then answers the reply with `danach[id]` (default: right).
    erst[id] replaces the first answer of a case."""
    danach, erst = danach or {}, erst or {}

    def antwort(fall, body, nummer):
        if zweiter_zug(body):
            return completion(openai_nachricht(danach.get(fall["id"], fall["danach"])), "tool_calls")
        if fall["id"] in erst:
            return completion(openai_nachricht(erst[fall["id"]]))
        if fall["stufe"] == "S5":
            return completion({"role": "assistant", "content": FRAGE})
        return richtig(fall, body, nummer)
    return antwort


# ---------------------------------------------------------------------------
# The case file: a reply and the calls after it, hand-written for all eight S5 cases
# ---------------------------------------------------------------------------

def test_jeder_s5_fall_hat_nachtrag_und_danach():
    assert [f["id"] for f in FAELLE if "nachtrag" in f] == [f["id"] for f in S5] == [f"S5-{i}" for i in range(1, 9)]
    assert [s["name"] for f in S5 for s in f["danach"]] == [
        "book_room", "delete_contact", "update_contact", "send_email", "book_room", "get_events", "add_note",
        "create_event"]


@pytest.mark.parametrize("fall", S5, ids=lambda f: f["id"])
def test_jeder_wert_von_danach_ist_ableitbar(fall):
    """From the question, the reply and the opening (where "tomorrow" is 2026-03-17), and nothing else."""
    quelle = fall["frage"] + " " + fall["nachtrag"] + " " + EROEFFNUNG
    for soll in fall["danach"]:
        for k, v in soll["args"].items():
            assert v in quelle, (k, v)


@pytest.mark.parametrize("aenderung, meldung", [
    ({"danach": [{"name": "get_events", "args": {"calendar": "team"}}]},
     "expected call get_events lacks its required argument 'date'"),
    ({"danach": [{"name": "fly", "args": {}}]}, "expected tool 'fly' is not in the built-in catalogue (give your own tools with --katalog FILE)"),
    ({"danach": []}, "'danach' must list the calls expected after the reply"),
    ({"nachtrag": " "}, "'nachtrag' must be a non-empty string (the user's reply)"),
], ids=["pflichtargument", "unbekanntes werkzeug", "leer", "leerer nachtrag"])
def test_die_falldatei_prueft_nachtrag_und_danach(aenderung, meldung):
    assert pruefe_fall(dict(BY_ID["S5-1"], **aenderung)) == meldung


def test_nachtrag_und_danach_nur_zusammen_und_nur_in_s5():
    ohne = {k: v for k, v in BY_ID["S5-1"].items() if k != "danach"}
    assert pruefe_fall(ohne) == "'nachtrag' needs 'danach' beside it"
    s2 = dict(BY_ID["S2-7"], nachtrag="x", danach=BY_ID["S5-1"]["danach"])
    assert pruefe_fall(s2) == "'nachtrag' belongs to S5 only, not to S2"


# ---------------------------------------------------------------------------
# Without the flag nothing changes
# ---------------------------------------------------------------------------

def test_ohne_schalter_bleibt_alles(cli, endpunkt, tmp_path):
    server = endpunkt(mit_fehlern(KAPITEL_FEHLER))
    status, out, err = cli(*messung(server.url, "--tag", "t"))
    assert status == 0, err
    assert server.zahl() == 42 and not any(zweiter_zug(b) for _, b in server.anfragen)
    assert "By stage: S1 100 %, S2 91.7 %, S3 100 %, S4 100 %, S5 87.5 %." in out.splitlines()
    assert not any(z.startswith("nachfrage") for z in out.splitlines())
    assert all(zug(a, "nachfrage") is None for a in zeilen(tmp_path / "ergebnisse" / "t.jsonl")[1:])
    assert json_lauf(cli, "--bewerten", "t")["nachfrage"] is None


# ---------------------------------------------------------------------------
# With --nachfrage
# ---------------------------------------------------------------------------

def test_haelt_still_und_erledigt_dann(cli, endpunkt, tmp_path):
    server = endpunkt(fragt_nach())
    status, out, err = cli(*messung(server.url, "--tag", "t", "--nachfrage", "--temp", "0.2"))
    assert status == 0, err
    assert "nachfrage            100 %   (S5 outputs that held still, then hit every call after the reply)" \
        in out.splitlines()
    assert server.zahl() == 42 + 8
    zweite = [b for _, b in server.anfragen if zweiter_zug(b)]
    s51 = next(b for b in zweite if b["messages"][1]["content"] == BY_ID["S5-1"]["frage"])
    assert s51["messages"] == [{"role": "system", "content": EROEFFNUNG},
                               {"role": "user", "content": "Book the room konferenz tomorrow."},
                               {"role": "assistant", "content": FRAGE},
                               {"role": "user", "content": "From 14:00 to 15:00."}]
    assert (s51["tools"], s51["temperature"], s51["tool_choice"]) == (KATALOG, 0.2, "auto")
    gespeichert = {a["id"]: a for a in zeilen(tmp_path / "ergebnisse" / "t.jsonl")[1:]}
    assert zug(gespeichert["S5-1"], "nachfrage")["nachricht"]["tool_calls"][0]["function"]["name"] == "book_room"
    assert [z["zweck"] for z in gespeichert["S4-1"]["zuege"]] == ["frage"]
    k = json_lauf(cli, "--bewerten", "t")
    assert (k["nachfrage"], k["auftraege_gelungen"], k["stillgehalten"]) == (8 / 8, 42 / 42, 14 / 14)


def test_wer_zuerst_ruft_bekommt_keinen_zweiten_zug(cli, endpunkt):
    server = endpunkt(fragt_nach(erst={"S5-8": KAPITEL_FEHLER["S5-8"]}))
    k = json_lauf(cli, *messung(server.url, "--nachfrage"))
    assert server.zahl() == 42 + 7
    assert k["nachfrage"] == 7 / 8 and k["stufen"]["S5"] == 7 / 8


def test_ein_aufruf_als_text_bekommt_den_zweiten_zug_doch_er_zaehlt_nicht(cli, endpunkt, tmp_path):
    """What is asked follows from the raw answer, never from a grade: an S5 answer with no tool_calls but a call
    written as text gets its second turn (a later reader might read no call there); graded, the first turn
    did not hold still, so the second counts nowhere, in the figures and the lists alike."""
    zaun = "```json\n" + json.dumps({"name": "book_room", "arguments": {"room": "konferenz"}}) + "\n```"

    def antwort(fall, body, nummer):
        if fall["id"] == "S5-1" and not zweiter_zug(body):
            return completion({"role": "assistant", "content": zaun})
        return fragt_nach()(fall, body, nummer)
    server = endpunkt(antwort)
    status, out, err = cli(*messung(server.url, "--nachfrage", "--tag", "t"))
    assert status == 0, err
    assert server.zahl() == 42 + 8 and server.zahl("S5-1") == 2
    assert "Not done after the reply" not in out
    s51 = next(a for a in zeilen(tmp_path / "ergebnisse" / "t.jsonl")[1:] if a["id"] == "S5-1")
    assert [z["zweck"] for z in s51["zuege"]] == ["frage", "nachfrage"]
    k = json_lauf(cli, "--bewerten", "t")
    assert (k["nachfrage"], k["stufen"]["S5"], k["fehlgeschlagen"]) == (7 / 8, 7 / 8, ["S5-1"])


@pytest.mark.parametrize("nachricht, finish", [
    ({"role": "assistant", "content": FRAGE}, "length"),  # cut off: no answer, so no restraint
    ({"role": "assistant", "content": FRAGE}, "tool_calls"),  # calls announced and lost: the model did call
    ({"role": "assistant", "content": "  "}, "stop"),  # nothing said
    ({"role": "assistant", "content": None, "function_call": {"name": "book_room", "arguments": "{}"}}, "stop"),
], ids=["abgeschnitten", "angekuendigt", "leer", "function_call"])
def test_was_roh_nicht_stillhielt_bekommt_keinen_zweiten_zug(cli, endpunkt, nachricht, finish):
    def antwort(fall, body, nummer):
        if fall["id"] == "S5-1" and not zweiter_zug(body):
            return completion(nachricht, finish)
        return fragt_nach()(fall, body, nummer)
    server = endpunkt(antwort)
    k = json_lauf(cli, *messung(server.url, "--nachfrage"))
    assert (server.zahl("S5-1"), server.zahl(), k["nachfrage"]) == (1, 42 + 7, 7 / 8)


def test_ein_wert_geht_im_zweiten_zug_verloren(cli, endpunkt):
    falsch = [{"name": "book_room", "args": {"room": "konferenz", "date": "2026-03-17", "start": "14:00"}}]
    server = endpunkt(fragt_nach(danach={"S5-1": falsch}))
    status, out, err = cli(*messung(server.url, "--nachfrage", "--tag", "t"))
    assert status == 0, err
    zeilen_out = out.splitlines()
    assert "nachfrage            87.5 %   (S5 outputs that held still, then hit every call after the reply)" \
        in zeilen_out
    ab = zeilen_out.index("Not done after the reply (1):")
    assert zeilen_out[ab + 1:] == [
        "  S5-1  Book the room konferenz tomorrow.  /  reply: From 14:00 to 15:00.",
        '      expected: book_room(room="konferenz", date="2026-03-17", start="14:00", end="15:00")',
        '      came:     book_room(room="konferenz", date="2026-03-17", start="14:00")',
        "      differs:  book_room: end missing"]
    k = json_lauf(cli, "--bewerten", "t")
    assert (k["nachfrage"], k["stufen"]["S5"]) == (7 / 8, 8 / 8)  # the first turn held still: S5 is right
    status, out2, _ = cli("--bewerten", "t")
    assert out2 == out


def test_mit_n_2_hat_jede_ausgabe_ihren_zweiten_zug(cli, endpunkt):
    server = endpunkt(fragt_nach())
    k = json_lauf(cli, *messung(server.url, "--nachfrage", "--n", "2"))
    assert server.zahl() == 84 + 16 and k["nachfrage"] == 16 / 16


def test_fortsetzen_zwischen_den_zuegen(cli, endpunkt, tmp_path):
    """The second turn of S5-3 fails: the message names it, the first answer is saved, and resuming
    asks only that second turn, then the rest."""
    def kaputt(fall, body, nummer):
        if zweiter_zug(body) and fall["id"] == "S5-3":
            return 400, {"error": {"message": "bad request"}}, {}
        return fragt_nach()(fall, body, nummer)
    server = endpunkt(kaputt)
    rc, _, err = cli(*messung(server.url, "--nachfrage", "--tag", "t"))
    pfad = tmp_path / "ergebnisse" / "t.jsonl"
    ids = [f["id"] for f in FAELLE]
    assert rc == 1
    assert meldungen(err) == ["messen: S5-3, second turn: the server answered 400: bad request",
                              f"messen: {ids.index('S5-3')} of 42 outputs are saved in {pfad}; fix what the server "
                              "objects to, then run again"]
    gespeichert = zeilen(pfad)[1:]
    assert [a["id"] for a in gespeichert] == ids[:ids.index("S5-3") + 1]
    assert zug(gespeichert[-1], "nachfrage") == {"zweck": "nachfrage",
                                                 "fehlt": "S5-3, second turn: the server answered 400: bad request"}
    status, out, err = cli("--bewerten", "t")
    assert f"is incomplete ({ids.index('S5-3')} of 42 outputs)" in err
    gut = endpunkt(fragt_nach())
    k = json_lauf(cli, *messung(gut.url, "--nachfrage", "--tag", "t"))
    assert (gut.zahl("S5-3"), gut.zahl()) == (1, 1 + 2 * 5)  # S5-3's second turn alone, then S5-4 to S5-8
    assert zweiter_zug(gut.anfragen[0][1])
    assert [a["id"] for a in zeilen(pfad)[1:]] == ids  # put in case order, each once
    assert k["nachfrage"] == 8 / 8 and k["ausgaben"] == 42


def test_ein_server_der_den_zweiten_zug_immer_ablehnt(cli, endpunkt, tmp_path):
    """Each run saves what it got and names the second turn; --parallel stops its workers."""
    server = endpunkt(lambda fall, body, nummer: (400, {"error": {"message": "no assistant messages"}}, {})
                      if zweiter_zug(body) else fragt_nach()(fall, body, nummer))
    rc, _, err = cli(*messung(server.url, "--nachfrage", "--tag", "t", "--parallel", "3"))
    assert rc == 1 and "second turn: the server answered 400: no assistant messages" in meldungen(err)[0]
    # subtle: S1-S4's 34, less any still in flight past NACHLAUF on a loaded machine; the message counts the file
    fertig = [a for a in zeilen(tmp_path / "ergebnisse" / "t.jsonl")[1:] if "fehlt" not in (zug(a, "nachfrage") or {})]
    assert 30 <= len(fertig) <= 34 and all(a["stufe"] != "S5" for a in fertig)
    rc, _, err = cli(*messung(server.url, "--nachfrage", "--tag", "t"))
    assert meldungen(err)[0].endswith(f"t.jsonl holds {len(fertig)} outputs; asking for the rest")
    assert rc == 1 and meldungen(err)[1].endswith(", second turn: the server answered 400: no assistant messages")
    assert not [a for a in zeilen(tmp_path / "ergebnisse" / "t.jsonl")[1:] if a["stufe"] != "S5" and zug(a, "nachfrage")]


def test_fortsetzen_nach_kill_9_zwischen_den_zuegen(endpunkt, tmp_path):
    """SIGKILL while a second turn is in flight: nothing half-saved, nothing twice, only the rest asked."""
    frei = threading.Event()

    def haelt(fall, body, nummer):
        if zweiter_zug(body) and fall["id"] == "S5-2":
            assert frei.wait(30), "the test never released the held second turn"
        return fragt_nach()(fall, body, nummer)
    server = endpunkt(haelt)
    argv = [sys.executable, str(ROOT / "messen.py"), *messung(server.url, "--nachfrage", "--tag", "t"),
            "--ausgabe", str(tmp_path)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        frist = time.monotonic() + 10
        while server.zahl("S5-2") < 2 and time.monotonic() < frist:
            time.sleep(0.02)
        assert server.zahl("S5-2") == 2, "the run never reached S5-2's second turn"
        proc.kill()
        proc.wait(timeout=10)
    finally:
        frei.set()
    ids = [f["id"] for f in FAELLE]
    assert [a["id"] for a in zeilen(tmp_path / "t.jsonl")[1:]] == ids[:ids.index("S5-2")]  # cut short there
    vorher = server.zahl()
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert server.zahl() - vorher == 7 * 2  # S5-2 (both turns again) to S5-8, nothing before
    gespeichert = zeilen(tmp_path / "t.jsonl")[1:]
    assert [a["id"] for a in gespeichert] == ids
    assert all("nachricht" in zug(a, "nachfrage") for a in gespeichert if a["stufe"] == "S5")


def test_mit_und_ohne_schalter_mischen_sich_nicht(cli, endpunkt, tmp_path):
    kaputt = endpunkt(lambda fall, body, nummer: (400, {"error": {"message": "bad"}}, {})
                      if fall["id"] == "S3-1" else richtig(fall, body, nummer))
    vorbereitet(cli, *messung(kaputt.url, "--tag", "t"), status=1)
    gut = endpunkt(fragt_nach())
    rc, out, err = cli(*messung(gut.url, "--tag", "t", "--nachfrage"))
    assert (rc, err) == (2, f"messen: {tmp_path / 'ergebnisse' / 't.jsonl'} was measured with nachfrage false, "
                            "not true; use another --tag, or --neu to measure anew (the old file is kept)\n")
    assert gut.zahl() == 0


def test_vergleich_und_markdown_zeigen_nachfrage(cli, endpunkt):
    vorbereitet(cli, *messung(endpunkt(fragt_nach(danach={"S5-1": []})).url, "--nachfrage", "--tag", "a"))
    vorbereitet(cli, *messung(endpunkt(fragt_nach()).url, "--nachfrage", "--tag", "b"))
    status, out, err = cli("--vergleich", "a", "b")
    assert status == 0, err
    assert "nachfrage                  87.5 %        100 % +12.5 points" in out.splitlines()
    status, out, _ = cli("--bewerten", "a", "--markdown")
    assert "| nachfrage | 87.5 % |" in out.splitlines()
    assert [z for z in meldungen(err) if re.match("messen: ", z)] == []


def test_pruefen_mit_nachfrage_schickt_einen_zweiten_zug(cli, endpunkt):
    def antwort(fall, body, nummer):
        if fall is None:
            return completion({"role": "assistant", "content": "OK"}, "length")
        return fragt_nach()(fall, body, nummer)
    server = endpunkt(antwort)
    status, out, err = cli("--pruefen", "--nachfrage", *messung(server.url))
    assert (status, meldungen(err)) == (0, [])
    assert out.splitlines()[-3] == "  ok    a second turn (--nachfrage) is accepted (S5-1: " + \
        ", ".join(c["name"] for c in BY_ID["S5-1"]["danach"]) + " after the reply)"
    zweite = server.anfragen[-1][1]
    assert [m["role"] for m in zweite["messages"]] == ["system", "user", "assistant", "user"]
    assert zweite["messages"][3]["content"] == BY_ID["S5-1"]["nachtrag"]


def test_pruefen_mit_nachfrage_die_abgelehnt_wird(cli, endpunkt):
    def antwort(fall, body, nummer):
        if zweiter_zug(body):
            return 400, {"error": {"message": "Conversation roles must alternate"}}, {}
        return completion({"role": "assistant", "content": "OK"}, "length") if fall is None \
            else fragt_nach()(fall, body, nummer)
    server = endpunkt(antwort)
    status, out, err = cli("--pruefen", "--nachfrage", *messung(server.url))
    assert status == 1
    assert ("  FAIL  a second turn (--nachfrage) is accepted: S5-1, second turn: the server answered 400: "
            "Conversation roles must alternate") in out.splitlines()


def test_die_kosten_zaehlen_die_zweiten_zuege(cli, endpunkt):
    server = endpunkt(fragt_nach())
    ohne = json_lauf(cli, *messung(server.url, "--tag", "ohne"))
    mit = json_lauf(cli, *messung(server.url, "--tag", "mit", "--nachfrage"))
    zweite = [b for _, b in server.anfragen if zweiter_zug(b)]
    assert len(zweite) == 8
    # each second turn's usage is added: the loopback endpoint counts 20 completion tokens per answer
    assert mit["tokens"]["completion"] == ohne["tokens"]["completion"] + 8 * 20
    assert mit["tokens"]["prompt"] > ohne["tokens"]["prompt"]


def test_ein_vergleich_sagt_wo_nur_ein_lauf_nachfragte(cli, endpunkt):
    """As for S6 and S7 in one run only: the line beside the table says the second turn stays out of the test."""
    server = endpunkt(fragt_nach(danach={"S5-1": []}))
    vorbereitet(cli, *messung(server.url, "--tag", "ohne"))
    vorbereitet(cli, *messung(server.url, "--nachfrage", "--tag", "mit"))
    satz = ("Only mit asked S5's second turn (--nachfrage): the test compares the first turns, the second stays out "
            "of it.")
    for paar in (("ohne", "mit"), ("mit", "ohne")):
        status, out, err = cli("--vergleich", *paar)
        assert (status, satz in out.splitlines()) == (0, True), err
    assert satz in cli("--vergleich", "ohne", "mit", "--markdown")[1].splitlines()
    assert "  " + satz in cli("--vergleich", "ohne", "mit", "ohne")[1].splitlines()  # a series, indented
    assert not [z for z in cli("--vergleich", "mit", "mit")[1].splitlines() if z.startswith("Only ")]
