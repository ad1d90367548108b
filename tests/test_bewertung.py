"""Grading (the chapter's rules, one row each) and reading calls out of an answer."""

import json

import pytest

import messen
from conftest import ROOT
from messen import befunde, bewerte, fehlerarten_von, kein_befund, lies_aufrufe, passt, vorzeichentest

ID = "11d3e7b0-4c52-4a1e-9b8f-0d6a3f2c5e10"
SOLL = {"name": "update_contact", "args": {"contact_id": ID, "status": "kunde"}}
ALLE = {"name": "list_contacts", "args": {}}
TEAM = {"name": "get_events", "args": {"calendar": "team", "date": "2026-03-17"}}
VERTRIEB = {"name": "get_events", "args": {"calendar": "vertrieb", "date": "2026-03-17"}}


def ruf(name, **args):
    return {"name": name, "args": args}


# ---------------------------------------------------------------------------
# passt: one row per rule of the chapter
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("ist, soll, erwartet", [
    (ruf("update_contact", contact_id=ID, status="kunde"), SOLL, True),             # exact
    (ruf("update_contact", status="kunde", contact_id=ID), SOLL, True),             # arguments in any order
    (ruf("update_contact", contact_id=ID), SOLL, False),                            # a missing argument
    (ruf("list_contacts", company="Nordwind GmbH"), ALLE, False),                   # an invented filter
    (ruf("update_contact", contact_id=ID, status="kunde", email="x@y.z"), SOLL, False),  # any extra argument
    (ruf("update_contact", contact_id=f" {ID}\n", status=" kunde "), SOLL, True),   # values stripped
    (ruf("update_contact", contact_id=ID, status="Kunde"), SOLL, False),            # no case folding
    (ruf("get_events", calendar="team", date="2026-3-17"), TEAM, False),            # no date normalising
    (ruf("x", n=5), ruf("x", n="5"), True),                                         # compared as strings
    (ruf("x", n="15"), ruf("x", n=1.5), False),                                     # 1.5 is not 15
    (ruf("delete_contact", contact_id=ID), ruf("get_contact", contact_id=ID), False),  # wrong tool
    ({"name": "update_contact", "args": None}, SOLL, False),                        # malformed arguments
])
def test_passt(ist, soll, erwartet):
    assert passt(ist, soll) is erwartet


# ---------------------------------------------------------------------------
# bewerte: one actual call never covers two expected steps
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("ist_liste, soll_liste, erwartet", [
    ([TEAM], [TEAM, TEAM], (1, 0)),                 # one call, two identical steps: one hit
    ([TEAM, TEAM], [TEAM], (1, 1)),                 # a repeated call is spare
    ([VERTRIEB, TEAM], [TEAM, VERTRIEB], (2, 0)),   # order of calls does not matter
    ([TEAM], [TEAM, VERTRIEB], (1, 0)),             # three of four is not all
    ([], [TEAM], (0, 0)),
    ([ALLE], [], (0, 1)),                           # a call where none was expected is spare
])
def test_bewerte(ist_liste, soll_liste, erwartet):
    assert bewerte(ist_liste, soll_liste) == erwartet


# ---------------------------------------------------------------------------
# Reading calls: native tool_calls and the text forms
# ---------------------------------------------------------------------------

def text(inhalt):
    return {"role": "assistant", "content": inhalt}


TEAM_JSON = '{"name": "get_events", "arguments": {"calendar": "team", "date": "2026-03-17"}}'
TEAM_LLAMA = '{"name": "get_events", "parameters": {"calendar": "team", "date": "2026-03-17"}}'
KAPUTT = {"name": None, "args": None}


@pytest.mark.parametrize("nachricht, aufrufe, form", [
    ({"content": None, "tool_calls": [{"function": {"name": "list_calendars", "arguments": ""}}]},
     [ruf("list_calendars")], "nativ"),                                   # "" means {}
    ({"tool_calls": [{"id": 0, "function": {"name": "get_events", "arguments": TEAM["args"]}}]},
     [TEAM], "nativ"),                                                    # TGI: an object
    ({"tool_calls": [{"function": {"name": "get_events", "arguments": '{"calendar": "team"'}}]},
     [{"name": "get_events", "args": None}], "nativ"),                    # does not parse: malformed
    ({"tool_calls": [{"function": {"name": "get_events", "arguments": '["team"]'}}]},
     [{"name": "get_events", "args": None}], "nativ"),                    # not an object: malformed
    ({"content": "", "tool_calls": None}, [], None),                      # SGLang without calls
    ({"function_call": {"name": "list_calendars", "arguments": "{}"}}, [ruf("list_calendars")], "nativ"),
    (text(f"<tool_call>\n{TEAM_JSON}\n</tool_call>"), [TEAM], "parser"),
    (text('<tool_call>{"arguments": {"date": "2026-03-17", "calendar": "team"}, "name": "get_events"}</tool_call>'),
     [TEAM], "parser"),                                                   # keys in either order
    (text(f"<think>I might call <tool_call>{json.dumps(ALLE)}</tool_call></think>\nWhich one?"), [], None),
    (text(f"Let me see, <tool_call>{TEAM_JSON}</tool_call> no.</think>\n\nWhich one?"), [], None),
    (text(f"<think>\nteam calendar\n</think>\n\n<tool_call>\n{TEAM_JSON}\n</tool_call>"), [TEAM], "parser"),
    (text(f"[TOOL_CALLS] [{TEAM_JSON}, {TEAM_JSON.replace('team', 'vertrieb')}]"), [TEAM, VERTRIEB], "parser"),
    (text('[TOOL_CALLS]get_events[ARGS]{"calendar": "team", "date": "2026-03-17"}'), [TEAM], "parser"),
    (text(f"<|python_tag|>{TEAM_LLAMA}; {TEAM_LLAMA.replace('team', 'vertrieb')}<|eom_id|>"), [TEAM, VERTRIEB], "parser"),
    (text(TEAM_LLAMA), [TEAM], "parser"),                                 # bare JSON
    (text(f"[{TEAM_JSON}]"), [TEAM], "parser"),
    (text(f"```json\n{TEAM_JSON}\n```"), [TEAM], "eigen"),                # no parser reads a fence
    (text(f"I will look it up.\n```json\n{TEAM_JSON}\n```\nDone."), [TEAM], "eigen"),
    (text(f"```\n{TEAM_JSON}\n```\n```json\n{TEAM_JSON.replace('team', 'vertrieb')}\n```"), [TEAM, VERTRIEB], "eigen"),
    (text(f"Calling now: {TEAM_JSON} and that is all."), [TEAM], "eigen"),  # JSON in prose
    (text(f"Calling now: [{TEAM_JSON}]"), [TEAM], "eigen"),
    (text("Here is an example: ```json\n{\"answer\": 42}\n```"), [], None),  # a fence that holds no call
    (text('Calling {"name": "get_events", "arguments": {"calendar"'), [], None),  # prose that breaks off
    ({"content": None, "refusal": "I cannot help with that."}, [], None),  # an OpenAI refusal: text
    (text('<tool_call>{"name": "get_events", "arguments": {"calendar": </tool_call>'),
     [{"name": "get_events", "args": None}], "parser"),                   # a recognised form that breaks
    (text('{"name": "get_events", "arguments": {"calendar"'), [{"name": "get_events", "args": None}], "parser"),
    (text("[TOOL_CALLS] [{oops}]"), [KAPUTT], "parser"),
    (text("CRM stands for Customer Relationship Management."), [], None),
    (text('{"answer": "Customer Relationship Management"}'), [], None),   # JSON, but not a call
    (text("42"), [], None),
])
def test_lies_aufrufe(nachricht, aufrufe, form):
    gelesen, gefunden = lies_aufrufe(nachricht)
    assert ([{"name": c["name"], "args": c["args"]} for c in gelesen], gefunden) == (aufrufe, form)


@pytest.mark.parametrize("nachricht, quellen", [
    ({"tool_calls": [{"function": {"name": "get_events", "arguments": '{"calendar": "team"'}}]},
     [("tool_calls", '{"calendar": "team"')]),                            # malformed: its arguments as sent
    (text(f"<tool_call>\n{TEAM_JSON}\n</tool_call>"), [("<tool_call>", None)]),
    (text(f"```json\n{TEAM_JSON}\n```"), [("a ``` fence", None)]),
    (text(f"Calling now: {TEAM_JSON} and that is all."), [("JSON in prose", None)]),
    (text(TEAM_LLAMA), [("bare JSON", None)]),
    (text('[get_events(calendar="team", date="2026-03-17")]'), [("[f(a=1)]", None)]),
    (text("functions.get_events:"), [("functions.NAME: with nothing after it", "functions.get_events:")]),
    (text('<tool_call>{"name": "get_events", "arguments": {"calendar": </tool_call>\nmore'),
     [("<tool_call>", '<tool_call>{"name": "get_events", "arguments": {"calendar": </tool_call> more')]),
    ({"content": f"<tool_call>{TEAM_JSON.replace('team', 'vertrieb')}</tool_call>",
      "tool_calls": [{"function": {"name": "get_events", "arguments": json.dumps(TEAM["args"])}}]},
     [("tool_calls", None), ("<tool_call>", None)]),                     # the native ones first
])
def test_jeder_aufruf_sagt_woher_er_kam(nachricht, quellen):
    """Each call carries its source, and a malformed one what was written: read once, never again."""
    assert [(c["quelle"], c.get("geschrieben")) for c in lies_aufrufe(nachricht)[0]] == quellen


# ---------------------------------------------------------------------------
# The exact sign test, against p-values computed by hand
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("b, c, p", [
    (0, 0, 1.0),
    (2, 0, 2 * 1 / 4),                    # 0.5
    (0, 5, 2 * 1 / 32),                   # 0.0625
    (6, 0, 2 * 1 / 64),                   # 0.03125
    (1, 9, 2 * (1 + 10) / 1024),          # 0.021484375
    (3, 3, 1.0),                          # 2 * 42/64 capped at 1
    (2, 8, 2 * (1 + 10 + 45) / 1024),     # 0.109375
])
def test_vorzeichentest(b, c, p):
    assert vorzeichentest(b, c) == pytest.approx(p, abs=1e-15)


# ---------------------------------------------------------------------------
# Failure classes: one row per class
# ---------------------------------------------------------------------------

def ausgabe(*aufrufe, mangel=None):
    return {"aufrufe": list(aufrufe), "mangel": mangel}


def note(befunde_):
    """A Note that holds these Befunde and nothing else of weight: what the failure classes read."""
    return messen.Note(aufrufe=(), form=None, treffer=0, offen=0, soll=1, mangel=None, still=False, nativ=0,
                       protokoll={}, text="", schleife=False, inhalt_da=False, finish=None, completion_tokens=None,
                       nur_gedacht=False, befunde=tuple(befunde_))


KAPUTT_RUF = {"name": "get_events", "args": None}  # a malformed call of a tool named


@pytest.mark.parametrize("a, soll, still, arten", [
    (ausgabe(), [SOLL], False, {"kein_aufruf": 1}),                                   # the step got no call
    (ausgabe(ruf("delete_contact", contact_id=ID)), [SOLL], False, {"falsches_werkzeug": 1}),
    (ausgabe(ruf("update_contact", contact_id=ID, status="lead")), [SOLL], False, {"falscher_wert": 1}),
    (ausgabe(ruf("update_contact", contact_id=ID)), [SOLL], False, {"fehlendes_argument": 1}),
    (ausgabe(ruf("list_contacts", company="Nordwind GmbH")), [ALLE], False, {"erfundenes_argument": 1}),
    (ausgabe(ruf("update_contact", contact_id="x", email="e")), [SOLL], False,     # each kind once per step
     {"falscher_wert": 1, "fehlendes_argument": 1, "erfundenes_argument": 1}),
    (ausgabe(TEAM, VERTRIEB), [TEAM], False, {"ueberzaehlig": 1}),                  # one beyond what was expected
    (ausgabe(ALLE, TEAM), [], True, {"ueberzaehlig": 2}),                           # S4/S5: every call
    (ausgabe(KAPUTT_RUF), [TEAM], False, {"fehlerhaft": 1}),                            # a malformed call of the step's tool
    (ausgabe(TEAM, KAPUTT_RUF), [TEAM], False, {"fehlerhaft": 1}),                      # a malformed spare call
    (ausgabe(KAPUTT_RUF), [], True, {"ueberzaehlig": 1}),                               # S4/S5: malformed is still a call
    (ausgabe(mangel="leer"), [SOLL], False, {"leer": 1}),                           # no answer: its reason, once
    (ausgabe(mangel="abgeschnitten"), [], True, {"abgeschnitten": 1}),
    (ausgabe(SOLL), [SOLL], False, {}),                                             # right: nothing
])
def test_fehlerarten(a, soll, still, arten):
    gefunden = kein_befund(a["mangel"], False) if a["mangel"] else befunde(a["aufrufe"], soll, still)
    assert fehlerarten_von(note(gefunden)) == arten


# ---------------------------------------------------------------------------
# Whose a failed output is: one row per kind of evidence in messen.WESSEN
# ---------------------------------------------------------------------------

GELADEN = {f.id: f for f in messen.lade_faelle(ROOT / "faelle.jsonl")[0]}  # as a run loads them


def gespeichert(fall_id, nachricht, finish="stop", usage=None):
    """A saved output, graded as a run grades what it saved."""
    a = {"id": fall_id, "stufe": GELADEN[fall_id].stufe, "lauf": 0, "sitzung": 0, "ende": 1.0, "zuege": [{
        "zweck": "frage", "nachricht": nachricht, "finish_reason": finish, "usage": usage or {}, "latenz_s": 0.1,
        "verworfen": 0}]}
    return messen.bewerte_gespeichert(GELADEN[fall_id], a)


SCHLEIFE_TEXT = "I will look that up for you now. " * 10


@pytest.mark.parametrize("fall_id, nachricht, finish, usage, urteil", [
    ("S2-7", text(""), "stop", {"completion_tokens": 7}, ("server", "leer")),        # nothing, tokens counted
    ("S2-7", text(""), "stop", None, ("unklar", "leer")),                           # nothing, and no count
    ("S2-7", text("  "), "stop", {"completion_tokens": 7}, ("modell", "leer")),     # whitespace the model wrote
    ("S2-7", text(""), "tool_calls", None, ("unklar", "angekuendigt")),             # calls announced, none came
    ("S2-7", {"content": "", "reasoning_content": "update_contact ..."}, "stop", None, ("unklar", "im_denken")),
    ("S2-7", text("Let me think"), "length", None, ("unklar", "abgeschnitten")),     # cut, and no limit the user set
    ("S2-7", text(SCHLEIFE_TEXT), "length", None, ("modell", "schleife")),
    ("S2-7", text("functions.update_contact:"), "stop", None, ("unklar", "argumente_fehlen")),
    ("S4-1", text("functions.list_contacts:"), "stop", None, ("modell", None)),    # in S4 a spare call all the same
    ("S2-7", text("Which contact?"), "stop", None, ("modell", None)),
    ("S4-1", text("CRM stands for Customer Relationship Management."), "stop", None, None),  # right: nobody's fault
])
def test_wessen_je_beleg(fall_id, nachricht, finish, usage, urteil):
    assert gespeichert(fall_id, nachricht, finish, usage).note.wessen == urteil


def test_abgeschnitten_unter_der_eigenen_grenze_ist_des_modells():
    a = {"id": "S2-7", "stufe": "S2", "lauf": 0, "sitzung": 0, "ende": 1.0, "zuege": [{
        "zweck": "frage", "nachricht": text("Let me think"), "finish_reason": "length", "usage": {}, "latenz_s": 0.1,
        "verworfen": 0}]}
    note = messen.bewerte_gespeichert(GELADEN["S2-7"], a, grenze=512).note
    assert (note.wessen, note.grenze) == (("modell", "abgeschnitten"), 512)


def test_viele_ueberzaehlige_aufrufe_zaehlen_jeden_und_nennen_wenige():
    """Past BEFUNDE_EINZELN the spare calls are counted without words: every one in the failure classes, the
    line naming the first and counting the rest; a step that took a spare call of another tool counts it no more."""
    rufe = [ruf("list_calendars")] * 250 + [KAPUTT_RUF] * 20
    a = note(befunde(rufe, [SOLL], False))
    assert fehlerarten_von(a) == {"falsches_werkzeug": 1, "ueberzaehlig": 249, "fehlerhaft": 20}
    zeile = messen.gruende_von(a)
    gezeigt = zeile.count("spare call list_calendars")
    assert zeile.startswith(f'update_contact(contact_id="{ID}", status="kunde") not called; spare call list_calendars; ')
    assert zeile.endswith(f"; ... and {1 + 270 - 1 - gezeigt} more") and len(zeile) < 700


# ---------------------------------------------------------------------------
# After grading only grades travel: the figures, the lists and the comparison read Notes, never a saved line
# ---------------------------------------------------------------------------

def test_nach_der_bewertung_reisen_nur_noten():
    """Outputs whose saved lines are taken away after grading give the same figures, failed lists and per-case
    lines; the grade itself cannot be changed."""
    from conftest import openai_nachricht
    faelle = [f for f in GELADEN.values() if f.stufe not in messen.SPAETER]  # the chapter's 42
    ausgaben = []
    for nr, f in enumerate(faelle):
        falsch = nr % 3 == 0  # every third wrong: a call where none fits, or text where a call does
        nachricht = openai_nachricht([] if falsch == bool(f.erwartet) else f.erwartet or [ALLE])
        a = {"id": f.id, "stufe": f.stufe, "lauf": 0, "sitzung": 0, "ende": 1.0, "zuege": [{
            "zweck": "frage", "nachricht": nachricht, "finish_reason": "stop", "latenz_s": 0.1, "verworfen": 0,
            "usage": {"prompt_tokens": 10, "completion_tokens": 20}}]}
        ausgaben.append(messen.bewerte_gespeichert(f, a))
    ohne_zeilen = [a._replace(zeile=None) for a in ausgaben]
    zeigen = lambda aus: (messen.kennzahlen(faelle, aus), messen.fehllisten(faelle, aus, None),  # noqa: E731
                          messen.was_geschah(aus))
    k, listen, geschah = zeigen(ausgaben)
    assert (k.auftraege_gelungen, len(k.fehlgeschlagen)) == (28 / 42, 14)
    assert zeigen(ohne_zeilen) == (k, listen, geschah)
    with pytest.raises(AttributeError):  # a frozen record: no field can be set
        ausgaben[0].note.treffer = 1
