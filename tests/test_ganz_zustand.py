"""S7 graded as the end state really is, on jobs a guess cannot pass; its costs; its own jobs checked.

Three models that cut corners, each a loopback endpoint: one guesses from the question alone,
one hedges (every branch the question names, at once), one never reads a result. Each scores at
most 10 %; the reference scores 100 %.
"""

import json
import re
import statistics

import pytest

import messen
from conftest import (BY_ID, GANZ_FAELLE, completion, fall_von, messung, mit_erstellten_ids, openai_nachricht, prompt_tokens,
                      richtig, vorbereitet, wie_geschrieben, wie_gezogen, zeilen, zug_karte)
from test_ganz import json_lauf, schritt

SCHREIBEND = {"create_contact", "update_contact", "delete_contact", "add_note", "create_event", "book_room",
              "send_email"}
JOBS = len(GANZ_FAELLE)


def antwort_mit(aufrufe, text="Done."):
    return completion(openai_nachricht(aufrufe), "tool_calls") if aufrufe else \
        completion({"role": "assistant", "content": text})


# ---------------------------------------------------------------------------
# Three models that cut corners
# ---------------------------------------------------------------------------

def geraten(fall, schluessel, wert):
    """What a model that never saw a result writes for a value: the value where the question gives it,
    else a guess from the question (an address from a name, the first room, date and times it names)."""
    frage = fall["frage"]
    if not isinstance(wert, str) or wert in frage:
        return wert
    namen = re.findall(r"\b[A-Z][a-z]+ [A-Z][a-z]+\b", frage)
    zeiten, tage = re.findall(r"\b\d\d:\d\d\b", frage), re.findall(r"\d{4}-\d\d-\d\d", frage)
    return {"to": (namen[0].lower().replace(" ", ".") if namen else "info") + "@example.com",
            "contact_id": "00000000-0000-4000-8000-000000000000",
            "room": next((r for r in messen.RAEUME if r in frage), "besprechung"),
            "date": tage[0] if tage else "2026-03-17",
            "start": zeiten[0] if zeiten else "09:00", "end": zeiten[1] if len(zeiten) > 1 else "10:00",
            }.get(schluessel, "?")


def geratene(fall, aufrufe):
    return [{"name": c["name"], "args": {k: geraten(fall, k, v) for k, v in c["args"].items()}} for c in aufrufe]


def geratene_antwort(fall):
    """A closing answer naming what the guess would be: an address from the name in the question."""
    return "Done. " + " ".join(geraten(fall, "to", w) if "@" in w else "?" for w in fall.get("antwort", []))


def raet(fall, body, nummer):
    """Guesses from the question alone: every write of the job at once, no lookup, then an answer."""
    if fall["stufe"] != "S7":
        return richtig(fall, body, nummer)
    if schritt(body) == 0:
        schreibt = geratene(fall, [c for s in fall["loesung"] for c in s if c["name"] in SCHREIBEND])
        if schreibt:
            return antwort_mit(schreibt)
    return antwort_mit([], geratene_antwort(fall))


def sichert_ab(fall, body, nummer):
    """Hedges: the lookups and, at once, every write for every room the question names."""
    if fall["stufe"] != "S7":
        return richtig(fall, body, nummer)
    if schritt(body) > 0:
        return antwort_mit([], geratene_antwort(fall))
    lesen = [c for s in fall["loesung"] for c in s if c["name"] not in SCHREIBEND]
    schreibt = geratene(fall, [c for s in fall["loesung"] for c in s if c["name"] in SCHREIBEND])
    raeume = [r for r in messen.RAEUME if r in fall["frage"]] or [None]
    alle = [dict(c, args=dict(c["args"], room=r)) if c["name"] == "book_room" and r else c
            for c in schreibt for r in (raeume if c["name"] == "book_room" else [None])]
    return antwort_mit(lesen + list({json.dumps(c, sort_keys=True): c for c in alle}.values()))


def liest_nicht(fall, body, nummer):
    """Never reads a result: the reference's steps in order, each value a result gave replaced by a guess."""
    if fall["stufe"] != "S7":
        return richtig(fall, body, nummer)
    k = schritt(body)
    if k < len(fall["loesung"]) - 1:
        return antwort_mit(geratene(fall, fall["loesung"][k]))
    return antwort_mit([], geratene_antwort(fall))


def liest_keinen_kontakt(fall, body, nummer):
    """Lists the contacts and never reads one: takes the one whose surname the question's address holds (of
    namesakes, the last listed; where no surname is held, the last listed), and does the job's writes with it."""
    if fall["stufe"] != "S7":
        return richtig(fall, body, nummer)
    k, liste = schritt(body), next((json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"), {})
    lesen = [c for c in fall["loesung"][0] if c["name"] == "list_contacts"]
    if k == 0 and lesen:
        return antwort_mit(lesen)
    adresse = next(iter(re.findall(r"[\w.+-]+@[\w.-]+\.\w+", fall["frage"])), "")
    kontakte = liste.get("contacts", [])
    genannt = [c for c in kontakte if c["name"].split()[-1].lower() in adresse.lower()] or kontakte
    if k <= 1 and genannt:
        wahl = genannt[-1]["contact_id"]  # every other value the question does not give, guessed
        return antwort_mit([{"name": c["name"], "args": {a: wahl if a == "contact_id" else geraten(fall, a, v)
                                                         for a, v in c["args"].items()}}
                            for s in fall["loesung"] for c in s if c["name"] in SCHREIBEND])
    return antwort_mit([], "Done.")


PER_ADRESSE = ["S7-9", "S7-13", "S7-26"]  # "the one whose email address is X": only reading each contact tells


def test_wer_keinen_kontakt_liest_faellt_wo_nur_das_lesen_entscheidet(cli, endpunkt):
    """It passes only the job a list settles (S7-22: delete those whose status is inaktiv)."""
    k = json_lauf(cli, *messung(endpunkt(liest_keinen_kontakt).url, "--ganz", "--stufen", "S7"))
    bestanden = {f["id"] for f in GANZ_FAELLE} - set(k["fehlgeschlagen"])
    ohne_lesen = {f["id"] for f in GANZ_FAELLE if all(c["name"] != "get_contact" for s in f["loesung"] for c in s)}
    assert bestanden == {"S7-22"} and bestanden <= ohne_lesen and not bestanden & set(PER_ADRESSE)


@pytest.mark.parametrize("modell", [raet, sichert_ab, liest_nicht], ids=lambda m: m.__name__)
def test_wer_raet_besteht_hoechstens_zehn_prozent(cli, endpunkt, modell):
    k = json_lauf(cli, *messung(endpunkt(modell).url, "--ganz", "--stufen", "S7", "--tag", "g"))
    # a guessed time of day can meet the one a run drew (the hours move by a draw of 1 in up to 15): a job passes only
    # where this run's draw put a time at the guess's 09:00, and then by luck (one job in 12 runs tried); there a
    # guess can also book the fallback before the refusal it waits for (spare: ueberzaehlig, S7-12)
    bestanden = {f["id"] for f in GANZ_FAELLE} - set(k["fehlgeschlagen"])
    getroffen = {f["id"] for f in GANZ_FAELLE if "09:00" in zug_karte(cli.ausgabe / "g.jsonl", f["id"]).values()}
    assert bestanden <= getroffen and k["erledigt"] == len(bestanden) / JOBS
    arten = {a: n for a, n in k["fehlerarten"].items() if n}
    assert set(arten) <= {"falscher_zustand", "ueberzaehlig"} and arten.get("ueberzaehlig", 0) <= len(getroffen)
    assert sum(arten.values()) == JOBS - len(bestanden)


def test_die_referenz_besteht_ganz(cli, endpunkt):
    k = json_lauf(cli, *messung(endpunkt().url, "--ganz", "--stufen", "S7"))
    assert (k["erledigt"], k["erledigt_ki"][1]) == (JOBS / JOBS, 1.0)


# ---------------------------------------------------------------------------
# The end state as it is: one job, one shortcut each
# ---------------------------------------------------------------------------

def mit_schritten(fall_id, schritte, pfad=None):
    """The reference everywhere but in one job, which takes these steps (a list of call lists, a body, or a
    (status, text, headers) the endpoint sends as it stands, or a text: a closing answer in the values the run
    saved at pfad drew, known as no model can know them unread)."""
    def antwort(fall, body, nummer):
        if fall["id"] != fall_id:
            return richtig(fall, body, nummer)
        k = schritt(body)
        x = schritte[k] if k < len(schritte) else []
        if isinstance(x, str):
            return completion({"role": "assistant", "content": wie_gezogen(pfad, fall_id, x)})
        return x if isinstance(x, (dict, tuple)) else antwort_mit(mit_erstellten_ids(fall, body, x),
                                                                   " ".join(fall.get("antwort", [])) or "Done.")
    return antwort


def zustand(cli, endpunkt, fall_id, schritte):
    vorbereitet(cli, *messung(endpunkt(mit_schritten(fall_id, schritte, cli.ausgabe / "m.jsonl")).url, "--ganz",
                              "--stufen", "S7"))
    status, out, err = cli("--bewerten", "m")
    k = json_lauf(cli, "--bewerten", "m")
    return fall_id not in k["fehlgeschlagen"], next(  # the run's drawn values as the case file has them
        (wie_geschrieben(cli.ausgabe / "m.jsonl", fall_id, z.split("differs:   ")[1]) for z in out.splitlines()[next(
            i for i, z in enumerate(out.splitlines()) if z.startswith(f"  {fall_id}  ")):]
         if "differs:" in z), None) if fall_id in k["fehlgeschlagen"] else None


def L(fall_id, k):
    return BY_ID[fall_id]["loesung"][k]


@pytest.mark.parametrize("fall_id, schritte, erledigt, warum", [
    # the same mail sent twice is a spare mail
    ("S7-3", [L("S7-3", 0), L("S7-3", 1) * 2], False, 'the end state differs: a mail to "tk@nordwind-gmbh.example", '
     'subject "Offer" spare'),
    ("S7-3", [L("S7-3", 0), L("S7-3", 1), L("S7-3", 1)], False, 'the end state differs: a mail to '
     '"tk@nordwind-gmbh.example", subject "Offer" spare'),
    # each event entered twice: two spare events
    ("S7-8", [L("S7-8", 0), L("S7-8", 1) * 2], False, 'the end state differs: the event "Call Nordwind" in the '
     'calendar team on 2026-03-17, 10:00-10:30 spare; the event "Demo Südwind" in the calendar team on 2026-03-17, '
     '15:00-16:00 spare'),
    # a contact created twice is there twice
    ("S7-2", [L("S7-2", 0) * 2, L("S7-2", 1)], False, 'the end state differs: a new contact "Jonas Weber" (email '
     '"jonas@weber-partner.example") spare'),
    # the other path to the same contact: created bare, its address set, then the note
    ("S7-2", [[{"name": "create_contact", "args": {"name": "Jonas Weber"}}],
              [{"name": "update_contact", "args": {"contact_id": messen.neue_id(1),
                                                   "email": "jonas@weber-partner.example"}}],
              L("S7-2", 1)], True, None),
    # answered without any call, the address guessed
    ("S7-6", [completion({"role": "assistant", "content": "Lea Hoffmann's address is lea.hoffmann@example.com."})],
     False, "the closing answer does not name lea.h@suedwind.example"),
    # the address only in the reasoning, then a refusal
    ("S7-6", [L("S7-6", 0), L("S7-6", 1), completion({"role": "assistant", "content":
                                                      "<think>It is lea.h@suedwind.example.</think>I cannot share that."})],
     False, "the closing answer does not name lea.h@suedwind.example"),
    # the right answer, cut by the token limit after the value: a closing answer the limit merely ended
    ("S7-6", [L("S7-6", 0), L("S7-6", 1), completion({"role": "assistant", "content":
                                                      "Lea Hoffmann's address is lea.h@suedwind.example, and her"},
                                                     "length")], True, None),
    # both rooms at once, the first one free: a spare booking
    ("S7-11", [L("S7-11", 0), L("S7-11", 1) + [dict(L("S7-11", 1)[0], args=dict(L("S7-11", 1)[0]["args"],
                                                                                  room="workshop"))]],
     False, 'the end state differs: a room booking of "workshop" on 2026-03-19, 13:00-14:00 spare'),
    # the other Paul Richter deleted, without checking his address
    ("S7-9", [L("S7-9", 0), [{"name": "delete_contact", "args": {"contact_id": L("S7-9", 1)[0]["args"]["contact_id"]}}]],
     False, "the end state differs: contact Paul Richter deleted; contact Paul Richter not deleted"),
    # the taken room found by looking at the booking calendar first: the same end state, no refusal met
    ("S7-12", [L("S7-12", 0) + [{"name": "get_events", "args": {"calendar": "raum", "date": "2026-03-23"}}],
               L("S7-12", 2)], True, None),
])
def test_der_endzustand_wie_er_ist(cli, endpunkt, fall_id, schritte, erledigt, warum):
    assert zustand(cli, endpunkt, fall_id, schritte) == (erledigt, warum)


def antwort(text):
    return completion({"role": "assistant", "content": text})


@pytest.mark.parametrize("fall_id, schritte, erledigt, warum", [
    # the same update again in the next request changes nothing, and is spare
    ("S7-1", [L("S7-1", 0), L("S7-1", 1), L("S7-1", 1)], False,
     'update_contact(contact_id="5b2c9e14-7a3f-4d81-b6e0-2f9a8c1d4e73", status="kunde") repeats a write of the job'),
    # both rooms at once: the fallback was sent before the refusal it waits for came back
    ("S7-5", [L("S7-5", 0), L("S7-5", 1) + L("S7-5", 2)], False,
     'book_room(room="workshop", date="2026-03-20", start="10:00", end="11:00") came before the refusal it waits for'),
    # a decoy's call changes nothing, and is spare
    ("S7-1", [L("S7-1", 0), L("S7-1", 1) + [{"name": "send_sms", "args": {"phone": "+49", "text": "x"}}]], False,
     'send_sms(phone="+49", text="x") is no tool of the CRM'),
    # the asked values in another case: named all the same
    ("S7-14", [L("S7-14", 0), L("S7-14", 1), antwort("Status: Interessent. Address: Sara@Neumann-Beratung.example.")],
     True, None),
    # every status named: a hedge, not an answer
    ("S7-14", [L("S7-14", 0), L("S7-14", 1), antwort("sara@neumann-beratung.example; her status is one of lead, "
                                                     "interessent, kunde or inaktiv")],
     False, "the closing answer names lead beside interessent; the closing answer names kunde beside interessent; "
     "the closing answer names inaktiv beside interessent"),
    # the refused booking asked again once before the other room: a spare write, as S7-5 is no job to retry blindly
    ("S7-5", [L("S7-5", 0), L("S7-5", 1), L("S7-5", 1), L("S7-5", 2), L("S7-5", 3)], False,
     'book_room(room="konferenz", date="2026-03-20", start="10:00", end="11:00") repeats a write of the job'),
    # a guess with no call: the right address (as the run drew it) among rivals, or alone, counts only where a
    # result of the job gave it
    ("S7-6", ["I did not look it up, but at Südwind AG it is one of lea.hoffmann@suedwind.example, "
              "lea.h@suedwind.example, l.hoffmann@suedwind.example or hoffmann@suedwind.example."], False,
     "the closing answer names lea.h@suedwind.example, which no result of this job gave; the closing answer names "
     "lea.hoffmann@suedwind.example beside lea.h@suedwind.example; the closing answer names l.hoffmann@suedwind.example "
     "beside lea.h@suedwind.example; the closing answer names hoffmann@suedwind.example beside lea.h@suedwind.example"),
    ("S7-6", ["Lea Hoffmann's address is lea.h@suedwind.example."], False,
     "the closing answer names lea.h@suedwind.example, which no result of this job gave"),
    # an enum value is named as a status or in the value's sentence, the right one also as a German word's stem;
    # "lead" the verb in another sentence is no rival, "prospect" no name of interessent
    ("S7-14", [L("S7-14", 0), L("S7-14", 1), antwort("Sara Neumann: sara@neumann-beratung.example, status "
                                                     "interessent. I can lead you to her notes.")], True, None),
    ("S7-14", [L("S7-14", 0), L("S7-14", 1), antwort("Ihre Adresse ist sara@neumann-beratung.example, sie ist "
                                                     "Interessentin.")], True, None),
    ("S7-14", [L("S7-14", 0), L("S7-14", 1), antwort("sara@neumann-beratung.example; her status is prospect.")],
     False, "the closing answer does not name interessent"),
    ("S7-14", [L("S7-14", 0), L("S7-14", 1), antwort("sara@neumann-beratung.example. Status: lead. Well, interessent.")],
     False, "the closing answer names lead beside interessent"),
    # the value told beside the calls, then "see above": told all the same
    ("S7-6", [L("S7-6", 0), L("S7-6", 1), completion(dict(openai_nachricht(L("S7-6", 1)),
                                                          content="Her address is lea.h@suedwind.example."),
                                                     "tool_calls"), antwort("Done, see above.")], True, None),
    ("S7-6", [L("S7-6", 0), L("S7-6", 1), antwort("Done, see above.")], False,
     "the closing answer does not name lea.h@suedwind.example"),
    # a closing answer wholly inside <think>: the model's, not a server that returned nothing
    ("S7-6", [L("S7-6", 0), L("S7-6", 1), antwort("<think>It is lea.h@suedwind.example.</think>")], False,
     "the last step is no answer: its whole text stood inside <think>, the model thought and never answered"),
])
def test_der_weg_und_die_antwort(cli, endpunkt, fall_id, schritte, erledigt, warum):
    assert zustand(cli, endpunkt, fall_id, schritte) == (erledigt, warum)


def test_eine_lange_differenz_wird_gekuerzt(cli, endpunkt):
    viele = [{"name": "send_email", "args": {"to": f"x{i}@y.example", "subject": "s" * 100, "body": "b"}}
             for i in range(100)]
    erledigt, warum = zustand(cli, endpunkt, "S7-3", [L("S7-3", 0), L("S7-3", 1) + viele])
    assert not erledigt and len(warum) < 700 and warum.endswith(" more")
    assert re.search(r"; \.\.\. and (\d+) more$", warum)


# ---------------------------------------------------------------------------
# Costs counted once, as the server counted them
# ---------------------------------------------------------------------------

def test_die_kosten_sind_was_der_server_zaehlte(cli, endpunkt, tmp_path):
    server = endpunkt()
    k = json_lauf(cli, *messung(server.url, "--ganz", "--stufen", "S7"))
    bodies = [b for _, b in server.anfragen]
    assert len(bodies) == sum(len(f["loesung"]) for f in GANZ_FAELLE)
    assert k["tokens"] == {"prompt": sum(map(prompt_tokens, bodies)), "completion": 20 * len(bodies)}
    schritte = [s["latenz_s"] for a in zeilen(tmp_path / "ergebnisse" / "m.jsonl")[1:] for s in a["zuege"]]
    assert len(schritte) == len(bodies) and k["latenz_s"] == statistics.median(schritte)  # the median per request


def test_s7_hat_seine_eigene_eroeffnung(cli, endpunkt):
    server = endpunkt()
    vorbereitet(cli, *messung(server.url, "--ganz", "--stufen", "S2,S7"))
    systeme = {b["messages"][0]["content"] for _, b in server.anfragen}
    assert systeme == {messen.EROEFFNUNG, messen.EROEFFNUNG_GANZ}
    assert "make them all in this one answer" not in messen.EROEFFNUNG_GANZ
    assert "do not guess and do not look it up" not in messen.EROEFFNUNG_GANZ


def test_ein_ergebnis_wird_begrenzt(cli, endpunkt):
    gross = "x" * 200_000
    server = endpunkt(mit_schritten("S7-16", [L("S7-16", 0) * 50 + [
        {"name": "add_note", "args": {"contact_id": L("S7-16", 0)[0]["args"]["contact_id"], "text": gross}}],
        L("S7-16", 0) * 50, L("S7-16", 1)]))
    vorbereitet(cli, *messung(server.url, "--ganz", "--stufen", "S7"))
    letzte = max((len(json.dumps(b)) for _, b in server.anfragen), default=0)
    assert letzte < 3_000_000  # 50 results of 20,000 characters at most, and the calls' own values cut
    tool = [m for _, b in server.anfragen for m in b["messages"] if m["role"] == "tool"]
    assert max(len(m["content"]) for m in tool) <= messen.ERGEBNIS_HOECHSTENS + 100
    assert any("(cut: 198000 characters more)" in m["content"] for m in tool)


# ---------------------------------------------------------------------------
# Own S7 jobs: each broken one refused with file:line and exit 2
# ---------------------------------------------------------------------------

def job(**mehr):
    fall = json.loads(json.dumps(BY_ID["S7-3"]))
    fall.update(mehr)
    return fall


def welt_mit(**teile):
    return dict(BY_ID["S7-3"]["welt"], **teile)


TOM = "8e41d2a7-3c6b-4f09-a1d5-7b2e9f0c6a38"


@pytest.mark.parametrize("fall, meldung", [
    (job(loesung=[[{"name": "get_contact", "args": {"contact_id": TOM[:-1] + "9"}}], BY_ID["S7-3"]["loesung"][1], []]),
     f"the world refuses step 1's get_contact (no contact has the id {TOM[:-1]}9); a job's 'fehler' counts writes "
     "the world turns down (a room already taken), never a read, which a model can leave out"),
    # the same read refused, counted as the job's recovery: refused all the same
    (job(fehler=1, loesung=[[{"name": "get_contact", "args": {"contact_id": TOM[:-1] + "9"}}]] +
         BY_ID["S7-3"]["loesung"]),
     f"the world refuses step 1's get_contact (no contact has the id {TOM[:-1]}9); a job's 'fehler' counts writes "
     "the world turns down (a room already taken), never a read, which a model can leave out"),
    (job(loesung=[[{"name": "book_room", "args": {"room": "workshop", "date": "2026-03-17", "start": "10:00",
                                                  "end": "09:00"}}], BY_ID["S7-3"]["loesung"][1], []]),
     "the world refuses step 1's book_room (the start 10:00 is not before the end 09:00); a reference meets only "
     "the refusals 'fehler' counts, for a job that tests recovery"),
    (job(fehler=1), "'fehler' counts 1 refused calls, the replay of 'loesung' meets 0"),
    (job(antwort=["tom.keller@example.com"]),
     "'antwort' names \"tom.keller@example.com\", which no value of the replay's results holds"),
    # a key of every result is no value a result gives: a model making no call would name it
    (job(antwort=["contact_id"]), "'antwort' names \"contact_id\", which no value of the replay's results holds"),
    (job(antwort=["Offer"]), "'antwort' names \"Offer\", which the question gives already: a model that makes no "
                             "call would pass"),
    (job(welt=welt_mit(kontakte=[dict(BY_ID["S7-3"]["welt"]["kontakte"][1], company="Nordwind GmbH ")])),
     "welt's kontakte #1 has company \"Nordwind GmbH \", not null or a non-empty string without leading or "
     "trailing spaces"),
    (job(welt=welt_mit(kontakte=[dict(BY_ID["S7-3"]["welt"]["kontakte"][1], contact_id=messen.neue_id(2))])),
     f"a contact of 'welt' has the id {messen.neue_id(2)}, which the world gives the 2. contact a job creates"),
    (job(welt=welt_mit(kontakte=[dict(BY_ID["S7-3"]["welt"]["kontakte"][1]), dict(BY_ID["S7-3"]["welt"]["kontakte"][1])])),
     f"two contacts of 'welt' have the id {TOM}"),
    (job(welt=welt_mit(termine=[{"calendar": "team", "title": "t", "date": "2026-03-17", "start": "10:00"}])),
     "welt's termine #1 has no end"),
    (job(welt=welt_mit(termine=[{"calendar": "team", "title": "t", "date": "2026-03-17", "start": 10, "end": "11:00"}])),
     "welt's termine #1 has start 10, not a time HH:MM"),
    (job(welt=welt_mit(termine=[{"calendar": "team", "title": "t", "date": "2026-03-17", "start": "11:00",
                                 "end": "10:00"}])), "welt's termine #1 starts at 11:00, not before its end 10:00"),
    (job(welt=welt_mit(kontakte=[dict(BY_ID["S7-3"]["welt"]["kontakte"][1], notizen="Call back.")])),
     "welt's kontakte #1 has notizen \"Call back.\", not a list of strings"),
    (job(welt=welt_mit(kontakte=[dict(BY_ID["S7-3"]["welt"]["kontakte"][1], status="vip")])),
     "welt's kontakte #1 has status \"vip\", not one of lead, interessent, kunde, inaktiv"),
    (job(welt=welt_mit(kontakte=[dict(BY_ID["S7-3"]["welt"]["kontakte"][1], phone="1")])),
     "welt's kontakte #1 has a field phone the world does not know"),
    (job(welt=welt_mit(ausgang=[{"to": "a@b.example", "subject": "s"}])), "welt's ausgang #1 has no body"),
    (job(loesung=[[{"name": "get_contact", "args": {"contact_id": TOM}}],
                  [{"name": "get_contact", "args": {"contact_id": TOM}}], []]),
     "the reference changes nothing and names no value: a model that does nothing would pass"),
])
def test_ein_kaputter_eigener_job_wird_abgelehnt(cli, tmp_path, fall, meldung):
    datei = tmp_path / "faelle.jsonl"
    datei.write_text("".join(json.dumps(f, ensure_ascii=False) + "\n" for f in
                             [f.roh for f in messen.lade_faelle(messen.Path(messen.__file__).with_name("faelle.jsonl"))[0]
                              if f.stufe != "S7"] + [fall]), encoding="utf-8")
    nr = len(datei.read_text(encoding="utf-8").splitlines())
    assert cli("--selbsttest", "--ganz", "--faelle", str(datei)) == (2, "", f"messen: {datei}:{nr}: {meldung}\n")


@pytest.mark.parametrize("feld", ["finish_reason", "usage", "latenz_s", "ergebnisse", "nachricht"])
def test_ein_beschaedigter_schritt_ist_eine_beschaedigte_zeile(cli, endpunkt, tmp_path, feld):
    vorbereitet(cli, *messung(endpunkt().url, "--ganz", "--stufen", "S7"))
    datei = tmp_path / "ergebnisse" / "m.jsonl"
    z = datei.read_text().splitlines()
    job_ = json.loads(z[1])
    del job_["zuege"][0][feld]
    datei.write_text("\n".join([z[0], json.dumps(job_)] + z[2:]) + "\n")
    assert cli("--bewerten", "m") == (2, "", f"messen: {datei}:2: the results file is damaged (turn 1 has no {feld})\n")


def test_stufen_ohne_s7_neben_ganz(cli):
    assert cli("--selbsttest", "--ganz", "--stufen", "S2") == (
        2, "", "messen: --ganz asks S7, which --stufen S2 leaves out; add S7 to --stufen, or drop --ganz\n")


def test_im_loop_nennt_die_welt_die_gesendeten_namen(cli, endpunkt):
    u = messen.SYNONYME["werkzeuge"]["update_contact"]
    i = messen.SYNONYME["argumente"]["contact_id"]
    bloss = completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c0", "type": "function", "function": {"name": u, "arguments": json.dumps({i: L("S7-1", 1)[0]["args"][
            "contact_id"]})}}]}, "tool_calls")
    liste = [{"name": messen.SYNONYME["werkzeuge"]["list_contacts"], "args": {
        messen.SYNONYME["argumente"].get("company", "company"): "Nordwind GmbH"}}]
    server = endpunkt(mit_schritten("S7-1", [liste, bloss]))  # the id the listing gave, and no field
    vorbereitet(cli, *messung(server.url, "--ganz", "--stufen", "S7", "--variante", "synonyme"))
    antwort = [m["content"] for _, b in server.anfragen if fall_von(b)["id"] == "S7-1"
               for m in b["messages"] if m["role"] == "tool"][-1]
    s, e, c = (messen.SYNONYME["argumente"][x] for x in ("status", "email", "company"))
    assert json.loads(antwort) == {"error": f"{u} needs a field to change: {s}, {e} or {c}"}


@pytest.mark.parametrize("antwort", ['She said "yes".', "C:\\Kunden\\Berg", "line one\nline two"])
def test_ein_eigener_job_mit_einer_antwort_in_zeichen_die_json_maskiert(cli, tmp_path, antwort):
    """A value with a quote, a backslash or a newline is found among the results' values (not in their JSON
    text); a job of one lookup and an answer is a job too. The self-test's model names it and scores 100 %."""
    fall = job(id="S7-eigen", frage=f"Look up the contact {TOM} and tell me its last note.",
               welt=welt_mit(kontakte=[dict(BY_ID["S7-3"]["welt"]["kontakte"][1], notizen=[antwort])]),
               loesung=[[{"name": "get_contact", "args": {"contact_id": TOM}}], []], antwort=[antwort])
    datei = tmp_path / "faelle.jsonl"
    datei.write_text("".join(json.dumps(f, ensure_ascii=False) + "\n" for f in
                             [f.roh for f in messen.lade_faelle(messen.Path(messen.__file__).with_name("faelle.jsonl"))[0]
                              if f.stufe != "S7"] + [fall]), encoding="utf-8")
    status, out, err = cli("--selbsttest", "--ganz", "--faelle", str(datei), "--stufen", "S7")
    assert (status, err) == (0, "messen: 1/1 outputs\n") and "erledigt             100 %" in out


def test_nan_und_ein_aufruf_ohne_namen(cli, endpunkt):
    """NaN is no JSON value: a call whose arguments hold it is malformed, never the contact "nan"; a call that
    names no tool is answered so, not as "there is no tool None"."""
    kaputt = completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c0", "type": "function", "function": {"name": "create_contact", "arguments": '{"name": NaN}'}},
        {"id": "c1", "type": "function", "function": {"name": None, "arguments": "{}"}}]}, "tool_calls")
    server = endpunkt(mit_schritten("S7-2", [kaputt]))
    vorbereitet(cli, *messung(server.url, "--ganz", "--stufen", "S7"))
    antworten = [json.loads(m["content"]) for _, b in server.anfragen
                 if b["messages"][1]["content"] == BY_ID["S7-2"]["frage"] for m in b["messages"] if m["role"] == "tool"]
    assert antworten == [{"error": "the arguments are not a JSON object"}, {"error": "the call names no tool"}]


# ---------------------------------------------------------------------------
# Two more that cut corners, over all the jobs: a repeater and a hedger that reads first
# ---------------------------------------------------------------------------

def schreibt(fall):
    return any(c["name"] in SCHREIBEND for s in fall["loesung"] for c in s)


def wiederholt(im_naechsten):
    """The reference's way with every call sent twice: in the same answer, or again in the next request."""
    def antwort(fall, body, nummer):
        if fall["stufe"] != "S7":
            return richtig(fall, body, nummer)
        k, loesung = schritt(body), fall["loesung"]
        jetzt = loesung[k] if k < len(loesung) else []
        vorher = loesung[k - 1] if im_naechsten and 0 < k <= len(loesung) else []
        aufrufe = jetzt + vorher if im_naechsten else jetzt * 2
        return antwort_mit(aufrufe, " ".join(fall.get("antwort", [])) or "Done.")
    antwort.__name__ = "im_naechsten" if im_naechsten else "in_derselben"
    return antwort


@pytest.mark.parametrize("modell", [wiederholt(False), wiederholt(True)], ids=lambda m: m.__name__)
def test_wer_jeden_aufruf_wiederholt_besteht_nur_jobs_ohne_schreiben(cli, endpunkt, modell):
    k = json_lauf(cli, *messung(endpunkt(modell).url, "--ganz", "--stufen", "S7"))
    assert sorted(k["fehlgeschlagen"]) == sorted(f["id"] for f in GANZ_FAELLE if schreibt(f))
    assert k["erledigt"] == 3 / 26  # S7-6, S7-14, S7-20: they only read, and name what they read


def bucht_alle_raeume(fall, body, nummer):
    """Reads the event's time as the reference does, then books every room the question names at once."""
    if fall["stufe"] != "S7":
        return richtig(fall, body, nummer)
    k, loesung = schritt(body), fall["loesung"]
    erste = next((i for i, s in enumerate(loesung) if any(c["name"] == "book_room" for c in s)), len(loesung))
    if k != erste:  # the reference's way, but for the fallback booking, which went out at once
        return antwort_mit([c for c in mit_erstellten_ids(fall, body, loesung[k] if k < len(loesung) else [])
                            if c["name"] != "book_room"],
                           " ".join(fall.get("antwort", [])) or "Done.")
    buchung = next(c for c in loesung[k] if c["name"] == "book_room")
    raeume = [r for r in messen.RAEUME if r in fall["frage"]]
    return antwort_mit([c for c in loesung[k] if c is not buchung] +
                       [dict(buchung, args=dict(buchung["args"], room=r)) for r in raeume])


def test_wer_beide_raeume_zugleich_bucht_faellt_wo_die_referenz_wartet(cli, endpunkt):
    k = json_lauf(cli, *messung(endpunkt(bucht_alle_raeume).url, "--ganz", "--stufen", "S7"))
    wartet = [f["id"] for f in GANZ_FAELLE if f.get("fehler")]  # the reference books the fallback after a refusal
    assert wartet == ["S7-5", "S7-12"] and set(wartet) <= set(k["fehlgeschlagen"])
    # where the first room is free, the second is a spare booking: those fail too, and nothing else
    assert sorted(k["fehlgeschlagen"]) == ["S7-11", "S7-12", "S7-4", "S7-5"]


def test_ein_job_der_den_kontext_sprengt_endet_allein(cli, endpunkt):
    """The conversation of one job outgrows the server's context at step 3 (llama.cpp's 400): that job fails as
    the model's, and the run goes on; read back, it grades the same."""
    voll = {"error": {"code": 400, "message": "request (4476 tokens) exceeds the available context size (4096 tokens)",
                      "type": "exceed_context_size_error", "n_prompt_tokens": 4476, "n_ctx": 4096}}
    schritte = [L("S7-9", 0), L("S7-9", 1), (400, json.dumps(voll), {})]
    status, out, err = cli(*messung(endpunkt(mit_schritten("S7-9", schritte)).url, "--ganz", "--stufen", "S7"))
    assert status == 0, err
    assert "      differs:   the conversation outgrew the server's context at step 3" in out.splitlines()
    k = json_lauf(cli, "--bewerten", "m")
    assert (k["fehlgeschlagen"], k["erledigt"], k["fehlerarten"]["kontextgrenze"]) == (["S7-9"], 25 / 26, 1)
    # refused at the job's first request: the question and catalogue do not fit, the run stops (a setting)
    status, out, err = cli(*messung(endpunkt(mit_schritten("S7-9", [(400, json.dumps(voll), {})])).url, "--ganz",
                                    "--stufen", "S7", "--tag", "erster"))
    assert status == 1 and "messen: S7-9, step 1: the server answered 400: request (4476 tokens) exceeds the " \
        "available context size (4096 tokens) (the question and catalogue exceed the server's context; start it " \
        "with a larger one)" in err.splitlines()


def test_die_id_eines_neuen_kontakts_kennt_erst_der_lauf(cli, endpunkt, tmp_path):
    """A created contact's id is drawn from the run and the job: the one in the case file, sent at once with
    the creation, names no contact; each output of each run gets its own; read back, the run grades the same."""
    im_fall = L("S7-2", 1)[0]["args"]["contact_id"]
    erledigt, warum = zustand(cli, endpunkt, "S7-2", [L("S7-2", 0) + L("S7-2", 1)])
    assert (erledigt, warum) == (False, 'the end state differs: a new contact "Jonas Weber" (email '
                                        '"jonas@weber-partner.example", 1 note) missing; a new contact "Jonas Weber" '
                                        '(email "jonas@weber-partner.example") spare')
    for tag, n in (("a", "2"), ("b", "1")):
        vorbereitet(cli, *messung(endpunkt().url, "--ganz", "--stufen", "S7", "--n", n, "--tag", tag))
    ids = [a["zuege"][0]["ergebnisse"][0]["contact_id"] for tag in ("a", "b")
           for a in zeilen(tmp_path / "ergebnisse" / f"{tag}.jsonl")[1:] if a["id"] == "S7-2"]
    assert len(ids) == len(set(ids)) == 3 and im_fall not in ids
    assert json_lauf(cli, "--bewerten", "a")["erledigt"] == 52 / 52


def in_zaeunen(fall, body, nummer):
    """The reference's way, every call written as JSON in a ``` fence: done as meant, no call an agent receives."""
    antwort = richtig(fall, body, nummer)
    nachricht = antwort["choices"][0]["message"]
    rufe = [{"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
            for c in nachricht.pop("tool_calls", None) or []]
    if rufe:
        nachricht["content"] = "".join(f"```json\n{json.dumps(r)}\n```\n" for r in rufe)
        antwort["choices"][0]["finish_reason"] = "stop"
    return antwort


def test_erledigt_nativ_steht_neben_erledigt(cli, endpunkt):
    """Jobs done with calls an agent never receives (every call in a fence): erledigt as meant, erledigt_nativ
    what an agent gets done; against a native run the gate pairs it and stops on it."""
    vorbereitet(cli, *messung(endpunkt().url, "--ganz", "--stufen", "S7", "--tag", "a"))
    status, out, err = cli(*messung(endpunkt(in_zaeunen).url, "--ganz", "--stufen", "S7", "--tag", "b"))
    assert status == 0, err
    assert ("erledigt_nativ       0 %   (with every call from tool_calls: the jobs an agent on this server gets "
            "done)") in out.splitlines()
    k = json_lauf(cli, "--bewerten", "b")
    assert (k["erledigt"], k["erledigt_nativ"]) == (26 / 26, 0 / 26)
    status, out, err = cli("--vergleich", "a", "b", "--streng")
    assert status == 3 and "in what an agent gets done (gelungen_nativ, p = " in err
