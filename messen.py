#!/usr/bin/env python3
"""messen.py - a test bench for tool calling behind an OpenAI-compatible endpoint.

It sends 42 hand-set cases (faelle.jsonl) to a chat-completions endpoint with an eleven-tool
catalogue, reads the calls out of every answer, grades them structurally (passt, bewerte) and prints
five metrics and the line per stage:

    formkorrekt          share of S1-S3 outputs a call can be read from
    richtig_je_schritt   expected calls hit, across all steps
    auftraege_gelungen   outputs with every step right and nothing spare
    schritte_je_auftrag  calls emitted per output
    stillgehalten        share of S4/S5 outputs that answer without any call

Behind flags: S6 (--weiter: the next calls after the tools' results), S7 (--ganz: whole jobs
in a loop against a simulated CRM, erledigt on the end state), S5's second turn (--nachfrage),
some stages (--stufen), your own tools (--katalog), a changed catalogue (--variante), the
stream (--stream), and the Berkeley Function Calling Leaderboard's files (--faelle), graded
by BFCL's rules with BFCL's own verdict beside.

Usage (--help gives every option and the exit statuses, README.md the guide):
    python3 messen.py --url http://localhost:8009/v1/chat/completions \\
        --modell qwen3.8-27b --temp 0.0 --n 1 --tag gross
    python3 messen.py --selbsttest          # loopback endpoint, must print 100 %
    python3 messen.py --vergleich gross klein

Every answer is kept in ergebnisse/<tag>.jsonl; the same command again asks only for what is missing.

Beside the figures stands a diagnosis of whose each failure is: the server's (only where the
response proves it, in that server's own options), the model's, or cannot tell, and why; a
comparison gives a verdict on the model only where counting the last for B and against B agree.

It never executes a tool against anything real and never grades a transport failure as an answer. It compares
calls, never text, with two exceptions said where they stand: an S7 job's closing answer must name the values the
job found, and BFCL's files are graded by BFCL's rules, which normalise strings (case, spaces, punctuation) as
BFCL's checker does; the chapter's cases compare each value as a stripped string (docs/messen.md says each in full).
"""

import argparse
import collections
import contextlib
import copy
import datetime
import email.utils
import errno
import fractions
import functools
import gc
import hashlib
import http.client
import io
import itertools
import json
import keyword
import math
import os
import queue
import random
import re
import statistics
import shlex
import signal
import socket
import sys
import threading
import time
import textwrap
import typing
import unicodedata
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urljoin, urlsplit, urlunsplit

try:  # the OS lock on a results file
    import fcntl
except ImportError:  # Windows
    fcntl = None
    import msvcrt

import requests
from requests.adapters import HTTPAdapter
from requests.auth import AuthBase
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import DecodeError, LocationValueError, MaxRetryError, ProtocolError, ReadTimeoutError
from urllib3.util.retry import Retry


# ===========================================================================
# Part one: the chapter. Its catalogue and stages, passt and bewerte, the five metrics, the report.
# ===========================================================================


# ---------------------------------------------------------------------------
# The catalogue: eleven tools of a small CRM (contacts, calendars, rooms)
# ---------------------------------------------------------------------------


STATUS = ["lead", "interessent", "kunde", "inaktiv"]
KALENDER = ["team", "vertrieb", "raum", "privat"]
RAEUME = ["besprechung", "konferenz", "workshop"]

CONTACT_ID = {"type": "string", "description": "The contact's id, a UUID such as 11d3e7b0-4c52-4a1e-9b8f-0d6a3f2c5e10."}
DATUM = {"type": "string", "description": "A date in the format YYYY-MM-DD."}


def _zeit(was):
    return {"type": "string", "description": f"{was}, in the format HH:MM (24 hours)."}


def _text(beschreibung):
    return {"type": "string", "description": beschreibung}


def _werkzeug(name, beschreibung, eigenschaften, pflicht):
    return {"type": "function", "function": {
        "name": name, "description": beschreibung,
        "parameters": {"type": "object", "properties": eigenschaften, "required": pflicht}}}


KATALOG = [
    _werkzeug("list_contacts", "List contacts. Without filters it lists all contacts.", {
        "company": _text("Only contacts of this company, its name exactly as written."),
        "status": {"type": "string", "enum": STATUS, "description": "Only contacts with this status."}}, []),
    _werkzeug("get_contact", "Fetch one contact with all its details.", {"contact_id": CONTACT_ID}, ["contact_id"]),
    _werkzeug("create_contact", "Create a new contact.", {
        "name": _text("First and last name, as written in the request."),
        "email": _text("Email address, as written in the request."),
        "company": _text("Company name, as written in the request.")}, ["name"]),
    _werkzeug("update_contact", "Change fields of an existing contact; pass only the fields to change.", {
        "contact_id": CONTACT_ID,
        "status": {"type": "string", "enum": STATUS, "description": "The new status."},
        "email": _text("The new email address."),
        "company": _text("The new company name.")}, ["contact_id"]),
    _werkzeug("delete_contact", "Delete a contact for good.", {"contact_id": CONTACT_ID}, ["contact_id"]),
    _werkzeug("add_note", "Add a text note to a contact.", {
        "contact_id": CONTACT_ID,
        "text": _text("The note, word for word as given in the request.")}, ["contact_id", "text"]),
    _werkzeug("list_calendars", "List the calendars and their keys.", {}, []),
    _werkzeug("get_events", "List the events of one calendar on one day.", {
        "calendar": {"type": "string", "enum": KALENDER, "description": "The calendar's key."},
        "date": DATUM}, ["calendar", "date"]),
    _werkzeug("create_event", "Put an event into a calendar.", {
        "calendar": {"type": "string", "enum": KALENDER, "description": "The calendar's key."},
        "title": _text("The event's title, as written in the request."),
        "date": DATUM, "start": _zeit("Start time"), "end": _zeit("End time")},
        ["calendar", "title", "date", "start", "end"]),
    _werkzeug("book_room", "Book a meeting room.", {
        "room": {"type": "string", "enum": RAEUME, "description": "The room's name."},
        "date": DATUM, "start": _zeit("Start time"), "end": _zeit("End time")}, ["room", "date", "start", "end"]),
    _werkzeug("send_email", "Send an email.", {
        "to": _text("The recipient's email address."),
        "subject": _text("The subject line, word for word as given in the request."),
        "body": _text("The message text, word for word as given in the request.")}, ["to", "subject", "body"])]
WERKZEUGE = {w["function"]["name"]: w["function"]["parameters"] for w in KATALOG}  # name -> parameters

# ---------------------------------------------------------------------------
# The opening (system message) and the stages
# ---------------------------------------------------------------------------


# the messages as sent, a string per line of text (and per piece of a long line)
KOPF = (
    "You are the assistant of a small company's CRM. You work with its contacts, calendars and meeting "
    "rooms through the tools you are given.\n"
    "\n"
    "Today is Monday, 2026-03-16. \"Tomorrow\" is 2026-03-17.\n"
    "\n"
    "The calendars and their keys:\n"
    "- team: the team calendar\n"
    "- vertrieb: the sales calendar\n"
    "- raum: the room-booking calendar (it records bookings; it is not a room)\n"
    "- privat: the user's private calendar\n"
    "The meeting rooms are besprechung, konferenz and workshop.\n")
EROEFFNUNG = KOPF + (
    "\n"
    "Rules:\n"
    "- When a tool fits the request, call it, with every value exactly as the request gives it. When the "
    "request needs several calls, make them all in this one answer.\n"
    "- When a tool fits but a mandatory value is missing from the request and cannot be derived from it "
    "or from this message, do not guess and do not look it up: ask the user for it.\n"
    "- A contact is addressed only by its contact_id; a name is not enough.\n"
    "- When no tool fits, answer in text.")


def figur_gezeigt(ks):
    return True


class Figur(typing.NamedTuple):
    """A figure the text report and every table show: its field of Kennzahlen, whether runs show it (a test of
    their Kennzahlen), and the words the text report puts beside it (a function of one run's settings and
    Kennzahlen, or None). The chapter's five stand first; a stage's own figures are rows of its stage, each with
    its value as a function of the run's outputs (wert). A headline (the picture's, the tables' interval) names
    the field of its interval, of its twin with every call from tool_calls, and its title."""
    name: str
    gezeigt: typing.Callable = figur_gezeigt
    worte: typing.Callable = None
    wert: typing.Callable = None
    ki: str = None  # a headline: the field of its 95 % interval (Wilson's, over its cases)
    nativ: str = None  # and of its twin with every call from tool_calls
    titel: str = None  # and what the picture calls it
    anteil: bool = True  # a share, in % and its differences in points; else a count per output, to two decimals


def gemessen_in(name):
    return lambda ks: any(getattr(k, name) is not None for k in ks)  # a figure a run asked for


def anders_als(name, gemeint):
    return lambda ks: any(getattr(k, name) != getattr(k, gemeint) for k in ks)  # where text calls made a difference


def weise_soll(fall):
    return fall.erwartet


def weise_alle(fall):
    return [*fall.erwartet, *(fall.danach or [])]


def weise_pruefe(fall, katalog):
    return pruefe_frage(fall, katalog)


def weise_nachrichten(fall, lauf):
    return eroeffnet(lauf.katalog.eroeffnung, fall, lauf.katalog)


def weise_werkzeuge(fall, katalog):
    return angeboten(fall, katalog)


def weise_frage(e, fall, erste, k):
    return frage_fall(e, fall, erste)


def weise_anfragen(fall, lauf):
    return (2 if lauf.stream and lauf.temp == 0 else 1) * (2 if lauf.nachfrage and fall.nachtrag is not None else 1)


def weise_folge(haupt):
    return haupt in ([FRAGE], [FRAGE, NACHFRAGE])


def weise_bewerte(*x):
    return bewerte_frage(*x)


def weise_urteil(fall, nachricht):
    return None


def weise_antworten(fall, wie):
    """What the self-test's endpoint answers for a case (wie: a text as sent): its expected calls to its question
    from the user, S5's calls after the reply to the reply; ((role of the last message, its text), calls)."""
    paare = [(("user", wie(fall.frage)), fall.erwartet)]
    return paare + [(("user", wie(fall.nachtrag)), fall.danach)] if fall.nachtrag is not None else paare


def weise_zeilen(a, fall, mehrere):
    return fall_zeilen(a, mehrere, kurz(fall.frage, 240), fall.erwartet, a.note)


class Weise(typing.NamedTuple):
    """How a stage's cases are checked, asked, graded and listed when failed, each a function of the case: a stage
    asked another way is a row of its own and its functions. The defaults are the chapter's (one question, graded
    on its expected calls; S5's second turn where the case has a reply)."""
    soll: typing.Callable = weise_soll  # the calls an answer is graded against
    alle: typing.Callable = weise_alle  # every call the case names
    pruefe: typing.Callable = weise_pruefe  # what is wrong with it, or None
    nachrichten: typing.Callable = weise_nachrichten
    werkzeuge: typing.Callable = weise_werkzeuge  # the tools its request offers
    frage: typing.Callable = weise_frage  # its turns, a 2nd turn's fault
    anfragen: typing.Callable = weise_anfragen  # a draw's: S5's reply, a stream's twin (FRAGEREGEL)
    folge: typing.Callable = weise_folge  # its outputs' requests, in order
    bewerte: typing.Callable = weise_bewerte  # a saved output graded (bewerte_gespeichert)
    urteil: typing.Callable = weise_urteil  # BFCL's verdict on an answer, where its checker judges
    schluss: bool = False  # a text answer ends it as an answer (a job's step), whatever the stage
    zeilen: typing.Callable = weise_zeilen  # a failed output
    antworten: typing.Callable = weise_antworten  # how the self-test's loopback endpoint answers it


def nach_ergebnis_soll(fall):
    return fall.danach


def nach_ergebnis_nachrichten(fall, lauf):
    return Weise().nachrichten(fall, lauf) + ergebnis_nachrichten(fall, lauf.katalog)


def nach_ergebnis_antworten(fall, wie):
    """S6's, on the self-test's endpoint: after the tools' results (a tool message last), the calls after them."""
    return weise_antworten(fall, wie) + [(("tool", wie(fall.frage)), fall.danach)]


def nach_ergebnis_zeilen(a, f, mehrere):
    return (fall_zeilen(
        a, mehrere, f"{f.frage}  /  {aufrufe_text(f.erwartet)} returned " + kurz(" and ".join(json.dumps(
            x, ensure_ascii=False) for x in f.ergebnis), 240), f.danach, a.note))


NACH_ERGEBNIS = Weise(  # S6: the first step sent as done, with the tools' results; graded on the calls after them
    soll=nach_ergebnis_soll, nachrichten=nach_ergebnis_nachrichten, zeilen=nach_ergebnis_zeilen,
    antworten=nach_ergebnis_antworten)


def schleife_soll(fall):
    return []


def schleife_alle(fall):
    return [soll for schritt in fall.loesung for soll in schritt]


def schleife_pruefe(fall, katalog):
    return pruefe_ganz(fall, katalog)


def schleife_frage(e, fall, erste, k):
    return frage_ganz(e, fall, k), None


def schleife_nachrichten(fall, lauf):
    return eroeffnet(lauf.katalog.eroeffnung_ganz, fall, lauf.katalog)


def schleife_anfragen(fall, lauf):
    return len(fall.loesung)


def schleife_folge(haupt):
    return set(haupt) == {SCHRITT}


def schleife_bewerte(*x):
    return bewerte_job(*x)


def schleife_zeilen(a, fall, mehrere):
    return ganz_zeilen(a, mehrere, fall)


SCHLEIFE = Weise(  # S7: the whole job in a loop against its world, graded on the end state and the way
    soll=schleife_soll, alle=schleife_alle,
    pruefe=schleife_pruefe, frage=schleife_frage,
    nachrichten=schleife_nachrichten, schluss=True,
    anfragen=schleife_anfragen, folge=schleife_folge,
    bewerte=schleife_bewerte, zeilen=schleife_zeilen)


def bfcl_weise_nachrichten(fall, lauf):
    return bfcl_nachrichten(fall, lauf.system)


def bfcl_weise_werkzeuge(fall, k):
    return fall.werkzeuge


def bfcl_weise_urteil(fall, nachricht):
    return bfcl_urteil(fall, nachricht)


BFCL_WEISE = Weise(  # BFCL's: its own messages and functions, and its checker's verdict beside messen's
    nachrichten=bfcl_weise_nachrichten, werkzeuge=bfcl_weise_werkzeuge,
    urteil=bfcl_weise_urteil)


def spaeter(name):
    """A stage's function defined further down (part three), called by its name when called: the table stands in
    the chapter's part, whose thousand lines hold the chapter, and a later stage's behaviour lives with its kind."""
    def rufe(*x):
        return globals()[name](*x)
    rufe.__name__ = name
    return rufe


MEHRZUG = BFCL_WEISE._replace(  # BFCL's multi-turn: turns of steps, each call run on BFCL's backends
    frage=spaeter("mehrzug_frage"), anfragen=spaeter("mehrzug_anfragen"), folge=schleife_folge,
    bewerte=spaeter("mehrzug_bewerte"), zeilen=spaeter("mehrzug_zeilen"), urteil=weise_urteil, schluss=True,
    pruefe=spaeter("mehrzug_pruefe"))


def stufe_bfcl(self):
    return self.pruefer is not None


class Stufe(typing.NamedTuple):
    """One stage, a row that every stage-dependent part reads: the case check, asking, grading and the failed
    lists (its weise), the settings and their hashes, the figures (its own as Figur rows), the comparison, the
    picture and --pruefen."""
    name: str
    was: str  # what it measures, in two words (the picture's axis)
    still: bool = False  # the right answer is no call at all: stillgehalten counts it
    feld: str = None  # a stage beyond the chapter's: Lauf's field and the settings key that ask it (--FELD);
    # its cases have a hash of their own (FELD_sha256), and the chapter's five figures leave it out
    neben: str = None  # what the case file gives after the first step: the user's reply, or the tools' results
    neben_pruefe: typing.Callable = None  # case -> what is wrong with that field and danach, or None
    neben_noetig: str = None  # its cases must give it, and what it is (S6: what each call of the first step returned)
    figuren: tuple = ()  # the figures it adds to the report and the tables (Figur): a later stage's own first
    liste: str = None  # the title of its failed list (the chapter's stages share "Failed")
    hilfe: str = None  # a later stage's: what its flag asks, for --help
    weise: Weise = Weise()  # how its cases are asked, graded and listed
    pruefer: str = None  # a BFCL category's checker: simple, multiple, parallel or irrelevance
    bfcl = property(stufe_bfcl)  # its cases bring their functions, BFCL's checker judges


def nachfrage_worte(e, k):
    return "S5 outputs that held still, then hit every call after the reply"


def nachfrage_wert(aus):
    if not any(a.mit_nachfrage for a in aus):
        return None  # a run without --nachfrage
    return anteil(sum(a.nachfrage is not None and gelungen(a.nachfrage) for a in aus if a.mit_nachfrage),
                  sum(a.mit_nachfrage for a in aus))


def weiter_worte(e, k):
    return "S6 outputs that went on right after the tools' results"


def weiter_wert(ausgaben):
    return stufen_figur(ausgaben, "S6")


def erledigt_figur_worte(e, k):
    return erledigt_worte(k)


def erledigt_wert(a):
    return stufen_figur(a, "S7")


def erledigt_nativ_worte(e, k):
    return "with every call from tool_calls: the jobs an agent on this server gets done"


def erledigt_nativ_wert(a):
    return stufen_figur(a, "S7", gelungen_nativ)


STUFEN_TABELLE = (
    Stufe("S1", "narrowed"),  # a catalogue narrowed by the case's nur
    Stufe("S2", "one call"),  # one call from all the tools
    Stufe("S3", "several"),  # several calls in one answer
    Stufe("S4", "no tool fits", still=True),
    # a mandatory value missing: ask back
    Stufe("S5", "value missing", still=True, neben="nachtrag", neben_pruefe=spaeter("pruefe_nachtrag"), figuren=(
        # S5 outputs that held still, then hit every call after the reply; None for a run without --nachfrage
        Figur("nachfrage", gemessen_in("nachfrage"), nachfrage_worte, nachfrage_wert),)),
    # after the tool's result: its first step is given as done, not asked
    Stufe("S6", "after result", feld="weiter", neben="ergebnis", neben_pruefe=spaeter("pruefe_ergebnis"),
          neben_noetig="what each call of the first step returned", liste="After the tool's result",
          weise=NACH_ERGEBNIS, hilfe="send the tools' results after the first step and grade the calls (or the text) "
          "that follow",
          figuren=(Figur("weiter", gemessen_in("weiter"), weiter_worte, weiter_wert),)),
    # the whole job, in a loop against its case's simulated CRM
    Stufe("S7", "whole job", feld="ganz", liste="The whole job", weise=SCHLEIFE, figuren=(
        Figur("erledigt", gemessen_in("erledigt"), erledigt_figur_worte, erledigt_wert,
              ki="erledigt_ki", nativ="erledigt_nativ", titel="S7 jobs done"),
        Figur("erledigt_nativ", anders_als("erledigt_nativ", "erledigt"), erledigt_nativ_worte,
              erledigt_nativ_wert)),
          hilfe="whole jobs, each in a loop against a simulated CRM, graded on the end state (erledigt)"),
    # BFCL's single-turn Python categories, read from its files (--faelle), each with its checker's kind: simple (its
    # one function), multiple (one call), parallel (calls in any order), irrelevance (no call at all)
    *(Stufe(name, f"BFCL {was}", still=art == "irrelevance", weise=BFCL_WEISE, pruefer=art) for name, was, art in (
        ("simple_python", "simple", "simple"), ("multiple", "multiple", "multiple"), ("parallel", "parallel",
        "parallel"), ("parallel_multiple", "par. mult.", "parallel"), ("irrelevance", "irrelevance", "irrelevance"),
        ("live_simple", "live simple", "simple"), ("live_multiple", "live mult.", "multiple"),
        ("live_parallel", "live par.", "parallel"), ("live_parallel_multiple", "live p. m.", "parallel"),
        ("live_irrelevance", "live irrel.", "irrelevance"))),
    # and its multi-turn categories: a case of turns against BFCL's own backends, graded as its runner grades
    *(Stufe(f"multi_turn_{name}", f"BFCL {was}", weise=MEHRZUG, pruefer="multi_turn", liste=f"Failed in multi_turn_"
            f"{name}") for name, was in (
        ("base", "m.t. base"), ("miss_func", "m.t. miss func"), ("miss_param", "m.t. miss param"),
        ("long_context", "m.t. long ctx"))))
STUFE = {s.name: s for s in STUFEN_TABELLE}
STUFEN = tuple(STUFE)
STILL = tuple(s.name for s in STUFEN_TABELLE if s.still)  # stages where the right answer is no call at all
SPAETER = {s.name: f"--{s.feld}" for s in STUFEN_TABELLE if s.feld}  # stages beyond the chapter's, and the flag of each
SPAETER_FELDER = {s.name: s.feld for s in STUFEN_TABELLE if s.feld}  # and the field and settings key of each
DANACH_NEBEN = {s.name: s.neben for s in STUFEN_TABELLE if s.neben}  # what precedes the calls after the first step
BFCL_STUFEN = tuple(s.name for s in STUFEN_TABELLE if s.bfcl)


def figuren_gelungen_nativ(e, k):
    return "with every call from tool_calls: what an agent on this server gets done"


def figuren_worte(e, k):
    return k.gelungen_ki and f"95 % interval {intervall_worte(k.gelungen_ki)}"


FIGUREN = (  # every figure beside the per-stage line, in the order the report and the tables show them
    Figur("formkorrekt"), Figur("richtig_je_schritt"),
    Figur("auftraege_gelungen", worte=figuren_worte,
          ki="gelungen_ki", nativ="gelungen_nativ", titel="All cases"),
    Figur("gelungen_nativ", anders_als("gelungen_nativ", "auftraege_gelungen"),
          figuren_gelungen_nativ),
    Figur("schritte_je_auftrag", anteil=False), Figur("stillgehalten")) + tuple(
        f for s in STUFEN_TABELLE for f in s.figuren)
KOPF_FIGUREN = tuple(f for f in FIGUREN if f.ki)  # the headlines, the chapter's first: a run shows its first measured
KAPITEL_STUFEN = tuple(s.name for s in STUFEN_TABELLE if not s.bfcl)  # the stages a case file of ours may name
GANZ = "S7"  # the whole job: its opening in its hash, its worlds, its refusal of a catalogue without a simulation

# ---------------------------------------------------------------------------
# Grading: structural, never textual (the chapter's passt and bewerte, and the walk beside them)
# ---------------------------------------------------------------------------


def passt(ist, soll):
    if ist["name"] != soll["name"] or ist["args"] is None:
        return False
    # Mandatory: every expected argument is there with the expected value.
    for k, v in soll["args"].items():
        if str(ist["args"].get(k, "")).strip() != str(v):
            return False
    # No extra, unexpected argument (invented filters count as wrong).
    return set(ist["args"]) == set(soll["args"])


def bewerte(ist_liste, soll_liste):
    offen = list(ist_liste)
    treffer = 0
    for soll in soll_liste:
        for i, ist in enumerate(offen):
            if passt(ist, soll):
                treffer += 1
                offen.pop(i)
                break
    return treffer, len(offen)


# passt and bewerte above stand word for word as the chapter prints them, and decide every case written as the
# chapter writes one (a name and its arguments). A case may say more: values it accepts beside the expected one
# (oder), arguments it allows (optional), parameters its schema types (_typen, from a user's catalogue), BFCL's
# checker's rules (_schema). Those cases go through the walk below, which keeps the chapter's rules, adds theirs,
# and says for each broken rule why (tests/test_eigenschaften.py holds the two equal where both apply).
ERWEITERUNGEN = ("oder", "optional", "_typen", "_schema")  # what an expected call may carry beyond the chapter's


def erweitert(soll):
    return any(k in soll for k in ERWEITERUNGEN)


def trifft(ist, soll):
    """passt, with the rules a case adds: no rule of warum_nicht broken."""
    if ist["name"] != soll["name"] or ist["args"] is None:
        return False  # the chapter's first rule, here too: most calls fail it, and a walk costs more
    return next(warum_nicht(ist, soll), None) is None


def zuordnung(ist_liste, soll_liste):
    """bewerte's walk with trifft: (treffer, the calls left over, the expected steps missed). Each expected step
    takes the first call left that hits it, as bewerte takes it, so that one call never covers two steps."""
    offen, fehlend = list(ist_liste), []
    for soll in soll_liste:
        i = next((i for i, ist in enumerate(offen) if trifft(ist, soll)), None)
        if i is None:
            fehlend.append(soll)
        else:
            offen.pop(i)
    return len(soll_liste) - len(fehlend), offen, fehlend


def bewertet(ist_liste, soll_liste):
    """(treffer, offen) of an answer: the chapter's bewerte for a case as the chapter writes one, else its walk."""
    if not any(map(erweitert, soll_liste)):
        return bewerte(ist_liste, soll_liste)
    treffer, offen, _ = zuordnung(ist_liste, soll_liste)
    return treffer, len(offen)


def warum_nicht(ist, soll):
    """Each rule of passt (and of what the case adds) that ist breaks, as (code, words): the codes are the failure
    classes'."""
    if ist["name"] != soll["name"] or ist["args"] is None:
        yield ("falsches_werkzeug", f"{ist['name']} instead of {soll['name']}") if ist["name"] != soll["name"] else \
            ("fehlerhaft", "arguments are not a JSON object")
        return
    if "_schema" in soll:  # a BFCL case's: its checker's rules, not the chapter's
        yield from bfcl_warum(ist["args"], soll)
        return
    oder, optional, typen = soll.get("oder", {}), soll.get("optional", {}), soll.get("_typen", {})
    # Mandatory: every expected argument is there with the expected value (or one its case accepts beside it).
    for k, v in soll["args"].items():
        if k not in ist["args"]:
            yield "fehlendes_argument", f"{k} missing"
        elif not any(wert_passt(ist["args"][k], w, typen.get(k)) for w in [v, *oder.get(k, ())]):
            yield "falscher_wert", f"{k} {kurz(json.dumps(ist['args'][k], ensure_ascii=False))} instead of " + \
                eines([v, *oder.get(k, ())])
    # No extra, unexpected argument (invented filters count as wrong); an optional one has a value it accepts.
    for k in ist["args"]:
        if k in optional and not any(wert_passt(ist["args"][k], w, typen.get(k)) for w in optional[k]):
            yield "falscher_wert", f"{k} {kurz(json.dumps(ist['args'][k], ensure_ascii=False))} instead of " \
                                   f"{eines(optional[k])} or left out"
        elif k not in soll["args"] and k not in optional:
            yield "erfundenes_argument", f"{kurz(k, 40)} not expected"


def eines(werte):
    """'"a"', or 'one of "a", "b"': the values an argument accepts, as the failed list names them."""
    texte = [kurz(json.dumps(w, ensure_ascii=False)) for w in werte]
    return texte[0] if len(texte) == 1 else "one of " + ", ".join(texte)


def wert_passt(ist, soll, typ=None):
    """One value as the chapter compares it: as text, the answer's stripped, so that "1.5" is not "15".
    Where the parameter's schema types it (typ: number, integer, boolean, array, object), as that type: 21.0 is 21,
    the string "21" is not, "true" is not true, and neither "['B-1']" nor '["B-1"]' is the list ["B-1"]."""
    if typ in ("number", "integer"):
        return ist_zahl(ist) and ist_zahl(soll) and ist == soll
    if typ in ("array", "object"):
        return gleich_getypt(ist, soll)
    return isinstance(ist, bool) and ist is soll if typ == "boolean" else str(ist).strip() == str(soll)


def gleich_getypt(ist, soll):
    """Two JSON values alike in type and value all the way down: a list item by item, an object key by key, a
    number as a number (never a bool), a string as the chapter compares one (the answer's stripped)."""
    if isinstance(soll, list):
        return isinstance(ist, list) and len(ist) == len(soll) and all(map(gleich_getypt, ist, soll))
    if isinstance(soll, dict):
        return isinstance(ist, dict) and ist.keys() == soll.keys() and all(gleich_getypt(ist[k], soll[k]) for k in soll)
    if isinstance(soll, str):
        return isinstance(ist, str) and ist.strip() == soll
    if isinstance(soll, bool) or soll is None:
        return ist is soll
    return ist_zahl(ist) and ist == soll


def ist_zahl(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


class Note(typing.NamedTuple):
    """One answer graded, in one walk: what the figures, the diagnosis, the comparison, the reports and the
    picture read, and nothing else (no call is read out of a message after grading). An S7 job is one Note
    too, its steps in job."""
    aufrufe: tuple  # every call read, the native ones first: {"name", "args", "quelle"[, "geschrieben"]}
    form: str  # None (no call), nativ, parser, eigen, versuch or teilweise (see lies_aufrufe)
    treffer: int  # expected steps hit (bewerte); an S7 job: 1 when done
    offen: int  # calls left over (bewerte)
    soll: int  # expected steps
    mangel: str  # why it is no answer at all (see mangel), or None
    still: bool  # its stage's right answer is no call (S4, S5)
    nativ: int  # calls the server sent in tool_calls
    protokoll: dict  # what of the OpenAI shape broke, by kind (see protokoll_von)
    text: str  # what the model wrote instead, its first line
    schleife: bool  # cut off while repeating itself
    inhalt_da: bool  # any content at all, whitespace included
    finish: str  # finish_reason
    completion_tokens: int  # as the server counted them, or None
    nur_gedacht: bool  # its whole text stood inside <think>
    befunde: tuple  # why it failed, as Befunde: the failure classes with their words
    gestreamt: bool = False
    defekte: tuple = ()  # what its stream broke of the protocol
    gegenprobe: dict = None  # the stream's cross-check read once (see mit_gegenprobe)
    job: "Job" = None  # an S7 job's steps
    bfcl: bool = None  # a BFCL case's: BFCL's own verdict (its FC mode: tool_calls only; see bfcl_urteil)
    grenze: int = None  # the max_tokens the user set for it, without which a cut answer is no evidence on the model
    denken_im_text: bool = False  # its content holds reasoning delimiters: the server's reasoning parser was off
    fremde_marken: bool = False  # its content writes a chat template's turn markers as text (FREMDE_MARKEN)
    wer: dict = None  # what the answer says answered it: {"modell", "build"} (wer_antwortete)
    abdruck: tuple = None  # (its digest without call ids, the call ids, its characters): see abdruck

    @property
    def fehlerhaft(self):
        return sum(c["args"] is None for c in self.aufrufe)

    @property
    def wessen(self):
        """Whose a failed answer is, for the verdict on the model and the diagnosis: (kind, reason) by the first
        row of WESSEN its evidence meets, else the model's with its reason; None for a success."""
        if gelungen(self):
            return None
        w = wessen_zeile(self)
        return (w.wessen, w.grund) if w else ("modell", self.mangel)


def bewerte_ausgabe(fall, nachricht, finish=None, umbenennung=None, usage=None, grenze=None):
    """Grade one answer: its Note, from the message alone (and grenze, the max_tokens it was asked with). Only an
    answer reaches passt and bewerte (none, see mangel, never succeeds); under synonyme its calls are named back
    first. A count outweighs a label (llama.cpp before #7198 labelled a cut stop). The cycle collector pauses
    meanwhile (ohne_zyklensammler: a hostile answer grades 40 % faster)."""
    with ohne_zyklensammler():
        soll = fall.art.weise.soll(fall)  # values a family writes as raw text are typed by its schema (_typen)
        aufrufe, form = lies_aufrufe(nachricht, {s["name"]: s["_typen"] for s in soll if "_typen" in s})
        if umbenennung:
            aufrufe = zurueckbenannt(aufrufe, umbenennung)
        treffer, offen = bewertet(aufrufe, soll)
        vollstaendig = bool(aufrufe) and treffer == len(soll) and offen == 0
        still = fall.stufe in STILL
        tokens = zahl_oder_none(usage, "completion_tokens")
        # a count outweighs a label both ways: at the cap an answer is cut whatever finish_reason says, and one that
        # stopped below it by its own count is no loop, however its text ends; only where no count or cap tells,
        # a text ending in a loop is one
        unter = None not in (tokens, grenze) and tokens < grenze and finish != "length"
        schleife = not unter and schleift(nachricht)
        gekappt_ = finish == "length" or schleife or None not in (tokens, grenze) and tokens >= grenze
        fehlt = mangel(nachricht, aufrufe, finish, vollstaendig, still or fall.art.weise.schluss, gekappt_)
        gedacht = fehlt == "leer" and "<think>" in inhalt(nachricht)
        return Note(aufrufe=tuple(aufrufe), form=form, treffer=treffer, offen=offen, soll=len(soll), mangel=fehlt,
                    still=still, nativ=len(native_rohe(nachricht)), protokoll=protokoll_von(nachricht, finish),
                    text=erste_zeile(nachricht), schleife=schleife, inhalt_da=inhalt(nachricht) != "", finish=finish,
                    completion_tokens=tokens, nur_gedacht=gedacht, denken_im_text=denken_im_text(nachricht),
                    fremde_marken=any(m in inhalt(nachricht) for m in FREMDE_MARKEN),
                    befunde=tuple(kein_befund(fehlt, schleife, gedacht) if fehlt else [] if vollstaendig or
                                  not soll and not aufrufe else befunde(aufrufe, soll, still, treffer)),
                    bfcl=fall.art.weise.urteil(fall, nachricht), grenze=grenze)


def kein_befund(fehlt, schleife, gedacht=False):
    """An output that is no answer fails once, by its reason: a loop is a cut answer the diagnosis names apart;
    a text wholly inside <think> is the model's, which thought and never answered."""
    art = "schleife" if fehlt == "abgeschnitten" and schleife else fehlt  # the same word as the failure class
    return [Befund((art,), NUR_GEDACHT if gedacht else f"no answer ({art}: see the diagnosis)")]


NUR_GEDACHT = "no answer: its whole text stood inside <think>, the model thought and never answered"


def mangel(nachricht, aufrufe, finish, vollstaendig, still, gekappt_):
    """Why an output is no answer at all, or None when it is one. 'abgeschnitten': cut off (gekappt_) before it did
    its job (a complete answer the limit merely ended counts; in S4/S5 (still) a complete call had failed before
    it); 'im_denken': no call nor text, but a reasoning field that holds the answer (an agent receives neither);
    'angekuendigt': finish_reason tool_calls, yet no call came, not even as text (SGLang #26790): in S4/S5 never
    restraint; 'leer': neither a call nor text, once reasoning blocks are removed."""
    if gekappt_ and not vollstaendig and not (still and any(c["args"] is not None for c in aufrufe)):
        return "abgeschnitten"
    if finish == "tool_calls" and not aufrufe:
        return "angekuendigt"
    if aufrufe or SONDERTOKEN.sub("", ohne_denken(inhalt(nachricht))).strip():
        return None
    denken = (nachricht.get(f) for f in ("reasoning_content", "reasoning"))  # where a reasoning parser put it all
    return "im_denken" if any(isinstance(d, str) and d.strip() for d in denken) else "leer"


def gelungen(b):
    """An answer with every expected step hit and nothing spare; never three of four (b: its Note)."""
    return b.mangel is None and b.treffer == b.soll and b.offen == 0


def gelungen_nativ(b):
    """Gelungen with every call from tool_calls and arguments an OpenAI-API client can json.loads into
    an object: what an agent on the server gets done."""
    return gelungen(b) and b.form in (None, "nativ") and not {"argumente_objekt", "argumente_doppelt",
                                                                "geparst_abgelehnt"} & set(b.protokoll)


FEHLERARTEN = ("kein_aufruf", "falsches_werkzeug", "falscher_wert", "fehlendes_argument", "erfundenes_argument",
               "ueberzaehlig", "fehlerhaft", "leer", "abgeschnitten", "schleife", "im_denken", "angekuendigt",
               "falscher_zustand", "schrittgrenze", "kontextgrenze")
Befund = collections.namedtuple("Befund", "arten text mal", defaults=(1,))
# one fault: the failure classes it counts once each, its words, and how many faults it stands for (mal: the
# spare calls past BEFUNDE_EINZELN, counted in one Befund per class without words, so a hostile answer of
# 100,000 calls grades in linear time with a small constant)
BEFUNDE_EINZELN = 100  # spare calls named one by one; no line shows more than a few dozen


def befunde(ist_liste, soll_liste, still, treffer=None):
    """Why an answer's calls missed, as Befunde: the hits taken out first, as bewerte takes them; each missed
    step paired with a spare call of its tool (its broken rules, each class once per step), else with a
    spare call of another tool (falsches_werkzeug; that call is then named, not counted), else kein_aufruf;
    each call left over ueberzaehlig (in S4/S5 every call) or fehlerhaft (malformed). treffer: bewerte's, where
    known: with none, no hit is looked for again."""
    _, offen, fehlend = zuordnung(ist_liste, soll_liste) if treffer != 0 else (0, list(ist_liste), list(soll_liste))
    paare = []
    for soll in fehlend:
        i = next((i for i, ist in enumerate(offen) if ist["name"] == soll["name"]), None)
        paare.append((soll, None if i is None else offen.pop(i)))
    andere = [j for j, c in enumerate(offen) if c["args"] is not None]  # well-formed spare calls, by position
    schritte, frei = [], list(andere)  # frei: those no missed step has taken yet, in order
    for soll, ist in paare:
        if ist is None:
            # a missed step is named with its values: beside a call of the same tool, the name alone would mislead
            schritte.append(Befund(("falsches_werkzeug" if frei else "kein_aufruf",),
                                   f"{aufruf_text(soll)} not called"))
            frei = frei[1:]
            continue
        regeln = list(warum_nicht(ist, soll))
        schritte.append(Befund(tuple(dict.fromkeys(code for code, _ in regeln)),
                               f"{soll['name']}: " + ", ".join(text for _, text in regeln)))
    genommen = set(andere) - set(frei)
    spare, kaputt = ("ueberzaehlig",), ("ueberzaehlig",) if still else ("fehlerhaft",)
    einzeln = [Befund(() if j in genommen else spare, f"spare call {ist['name']}") if ist["args"] is not None
               else Befund(kaputt, f"malformed call {ist['name'] or '?'}")
               for j, ist in enumerate(offen[:BEFUNDE_EINZELN])]
    rest = offen[BEFUNDE_EINZELN:]
    weitere_kaputt = sum(ist["args"] is None for ist in rest)
    weitere_spare = len(rest) - weitere_kaputt - sum(j >= BEFUNDE_EINZELN for j in genommen)
    return schritte + einzeln + [Befund(arten, None, zahl) for arten, zahl in
                                 ((spare, weitere_spare), (kaputt, weitere_kaputt)) if zahl]


def fehlerarten_von(b):
    """What went wrong in one graded answer, by kind: a reason vocabulary a report can count."""
    arten = collections.Counter()
    for befund in b.befunde:
        for art in befund.arten:
            arten[art] += befund.mal
    return arten

# ---------------------------------------------------------------------------
# Metrics: pure functions from graded outputs to figures
# ---------------------------------------------------------------------------


Z = 1.959963984540054  # the standard normal's 97.5 % point: two-sided 95 % intervals


def anteil(zaehler, nenner):
    return zaehler / nenner if nenner else None


Tokens = collections.namedtuple("Tokens", "prompt completion")  # a run's tokens, added up
Anfragen = collections.namedtuple("Anfragen", "median referenz")  # the requests an S7 job took, and the reference's


class Kennzahlen(typing.NamedTuple):
    """A run's figures, read by field; only als_json makes them keys (in this order). A stage's own figures (its
    Figur rows) have their field here too, and each headline its interval's (tests/test_messen.py holds the fields
    equal to the stage table's)."""
    faelle: int
    ausgaben: int
    formkorrekt: float  # the chapter's five
    richtig_je_schritt: float
    auftraege_gelungen: float
    schritte_je_auftrag: float
    stillgehalten: float
    gelungen_nativ: float
    nachfrage: float  # S5's second turn (--nachfrage); these three and bfcl None for a run that did not ask them
    weiter: float  # S6 (--weiter)
    erledigt: float  # S7 (--ganz), and its twin with every call from tool_calls
    erledigt_nativ: float
    anfragen_je_job: Anfragen
    bfcl: "BfclZahlen"
    stufen: dict  # stage -> share
    alle_n: float
    alle_n_stufen: dict  # stage -> share
    gelungen_ki: list  # [low, high], Wilson's
    erledigt_ki: list
    unlesbar_geschrieben: dict
    fehlerarten: dict  # class -> count, zeros included
    fehlgeschlagen: list
    diagnose: "Diagnose"
    latenz_s: float
    tokens: Tokens
    dauer_s: float


def kennzahlen(faelle, ausgaben, katalog=None, einstellungen=None):
    """The five metrics (the chapter's, over S1-S5: a run with --weiter stays comparable), the stages, and what
    repeats and costs add; the failure classes take every stage. katalog: the one sent (None: the chapter's);
    einstellungen: the run's settings line."""
    kapitel = [a.note for a in ausgaben if a.stufe not in SPAETER]
    mit = [a.note for a in ausgaben if a.stufe not in SPAETER and a.stufe not in STILL]
    still = [a.note for a in ausgaben if a.stufe in STILL]
    stufe_von = {f.id: f.stufe for f in faelle}
    stufen = [s for s in STUFEN if s in stufe_von.values()]  # S6 only in a run that asks it
    alle_faelle = erfolge_je_fall(faelle, ausgaben)  # id -> (successes, outputs)
    je_fall = {i: v for i, v in alle_faelle.items() if stufe_von[i] not in SPAETER}
    return Kennzahlen(faelle=len(faelle),
        ausgaben=fertig(ausgaben),  # a first answer whose second turn is still to be asked is not one yet
        formkorrekt=anteil(sum(bool(b.aufrufe) and not b.fehlerhaft for b in mit), len(mit)),
        richtig_je_schritt=anteil(sum(b.treffer for b in kapitel), sum(b.soll for b in kapitel)),
        auftraege_gelungen=anteil(sum(map(gelungen, kapitel)), len(kapitel)),
        gelungen_nativ=anteil(sum(map(gelungen_nativ, kapitel)), len(kapitel)),
        schritte_je_auftrag=anteil(sum(len(b.aufrufe) for b in kapitel), len(kapitel)),
        stillgehalten=anteil(sum(not b.aufrufe and b.mangel is None for b in still), len(still)),
        **{f.name: f.wert(ausgaben) for s in STUFEN_TABELLE for f in s.figuren},  # a stage's own: nachfrage, weiter ...
        anfragen_je_job=anfragen_je_job(ausgaben), bfcl=bfcl_figuren(ausgaben),
        stufen={s: anteil(sum(gelungen(a.note) for a in ausgaben if a.stufe == s),
                          sum(a.stufe == s for a in ausgaben)) for s in stufen},
        alle_n=anteil(sum(e == m for e, m in je_fall.values()), len(je_fall)),
        alle_n_stufen={s: anteil(sum(e == m for i, (e, m) in alle_faelle.items() if stufe_von[i] == s),
                                 sum(stufe_von[i] == s for i in alle_faelle)) for s in stufen},
        gelungen_ki=wilson_ki(list(je_fall.values())),
        **{f.ki: wilson_ki([v for i, v in alle_faelle.items() if stufe_von[i] == s.name])  # a stage's headline
           for s in STUFEN_TABELLE for f in s.figuren if f.ki},
        fehlgeschlagen=[i for i, (e, m) in alle_faelle.items() if e < m],
        diagnose=diagnose(ausgaben, (katalog or STANDARD).schwelle_s1(faelle), einstellungen),
        unlesbar_geschrieben=[{"id": a.id, "lauf": a.lauf, "zug": zug, "form": form, "text": text}
                              for a in ausgaben if a.note.job is None
                              for zug, b in enumerate(a.noten, 1) for form, text in unlesbar_von(b)],
        fehlerarten=fehlerarten(faelle, ausgaben), **kosten(ausgaben))


def fehlerarten(faelle, ausgaben):
    """Every failure class with its count over the run's answers, second turns included (as the
    diagnosis counts them), zeros included."""
    summe = sum((fehlerarten_von(b) for a in ausgaben for b in a.noten), collections.Counter())
    return {art: summe[art] for art in FEHLERARTEN}


def stufen_figur(ausgaben, stufe, gelingt=None):
    """A later stage's own figure: the share of its outputs that succeeded (S6, weiter: hit every call after
    the tools' results, or for danach [] answered without one; S7, erledigt: the reference's end state, then
    an answer without a call); None for a run that did not ask the stage."""
    eigene = [a.note for a in ausgaben if a.stufe == stufe]
    return anteil(sum(map(gelingt or gelungen, eigene)), len(eigene)) if eigene else None


def wilson_ki(paare):
    """95 % interval for sum(successes) / sum(outputs) over cases: Wilson's score interval. With p = S / M,
    z = 1.96 and N outputs that count as independent: (p + z²/2N  ±  z · sqrt(p(1-p)/N + z²/4N²)) / (1 + z²/N).
    Unlike a percentile bootstrap it does not collapse at 0 or 100 %: 42 of 42 gives 91.6 % to 100 %. With one
    output per case N is the number of cases. With n per case, a case's outputs are not independent, so N is the
    effective sample size M / deff, from the ratio estimator's variance over the K cases, var(p) = K/(K-1) ·
    Σ (s_i - p·m_i)² / M², as N = p(1-p) / var(p), kept between K (a case's outputs all alike) and M (all
    independent); at p = 0 or 1, where that variance says nothing, N = K."""
    if not paare:
        return None
    k, s, m = len(paare), sum(e for e, _ in paare), sum(m for _, m in paare)
    p, n = s / m, k
    if m > k and 0 < p < 1 and k > 1:
        varianz = k / (k - 1) * sum((e - p * mi) ** 2 for e, mi in paare) / m ** 2
        n = m if varianz == 0 else min(m, max(k, p * (1 - p) / varianz))
    z2 = Z * Z
    mitte = (p + z2 / (2 * n)) / (1 + z2 / n)
    halb = Z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    # subtle: the interval holds p exactly; rounding would put 1 - 1e-16 above 42 of 42
    return [0.0 if s == 0 else min(p, mitte - halb), 1.0 if s == m else max(p, mitte + halb)]


# ---------------------------------------------------------------------------
# Report: the text of one run
# ---------------------------------------------------------------------------


def prozent(x):
    """0.9166 -> '91.7 %', 1.0 -> '100 %' (one decimal, a trailing .0 dropped)."""
    return "-" if x is None else f"{x * 100:.1f}".removesuffix(".0") + " %"


def wert(f, x):
    return "-" if x is None else prozent(x) if f.anteil else f"{x:.2f}"


def stufenzeile(stufen, wort="By stage"):
    return f"{wort}: " + ", ".join(f"{s} {prozent(x)}" for s, x in stufen.items() if x is not None) + "."


def kopfzeile(e, k):
    ausgaben = mal(k.ausgaben, "output") + ("" if vollstaendig(e, k) else f" of {k.faelle * e['n']} (incomplete)")
    return (f"Model {e['modell']}, temp {e['temp']}, n {e['n']}, tag {e['tag']}{wie_gesendet(e)}: "
            f"{mal(k.faelle, 'case')}, {ausgaben}, measured {e['datum']}")


def vollstaendig(e, k):
    return k.ausgaben == k.faelle * e["n"]


def bericht_text(e, k, faelle, ausgaben, gezeigt=False, hoechstens=None):
    zeilen = [kopfzeile(e, k)] + ([gezeigt_zeile(e, ausgaben)] if gezeigt else []) + \
        ([f"Server: {server_wort(e['server'], e.get('server_angabe'))}"] if "server" in e else []) + \
        nochmal_satz(e["tag"], ausgaben) + [""]  # no server line for a run saved before it was identified
    for f in figuren(k):
        worte = f.worte and f.worte(e, k)
        zeilen.append(f"{f.name:<20} {wert(f, getattr(k, f.name))}" + (f"   ({worte})" if worte else ""))
    if e["n"] > 1:
        zeilen.append(f"{'alle_n':<20} {prozent(k.alle_n)}   (cases whose {e['n']} outputs all succeeded)")
    zeilen += ["", stufenzeile(k.stufen)]
    if k.bfcl:
        zeilen += bfcl_zeilen(k.bfcl)
    if e["n"] > 1:
        zeilen.append(stufenzeile(k.alle_n_stufen, f"All {e['n']} by stage"))
    zeilen.append("Failure classes: " + (", ".join(f"{art} {zahl}" for art, zahl in k.fehlerarten.items() if zahl)
                                         or "none") + ".")  # what to train next
    sitzungen = len({a.sitzung for a in ausgaben})
    zeilen += ["", f"Latency {k.latenz_s:.2f} s median per request; tokens {k.tokens.prompt} prompt, "
               f"{k.tokens.completion} completion; wall time {k.dauer_s:.1f} s" +
               (f" (the {sitzungen} sittings' own, each from its first request to its last answer, added up; the "
                "time between them left out)" if sitzungen > 1 else "")]
    zeilen += [""] + diagnose_zeilen(k.diagnose, e)
    zeilen += fehllisten(faelle, ausgaben, hoechstens)
    return "\n".join(zeilen)


def figuren(*ks):
    """The figures the runs show (FIGUREN): the chapter's five, and each other where it tells something."""
    return [f for f in FIGUREN if f.gezeigt(ks)]


def intervall_worte(ki):
    return f"{prozent(ki[0])} to {prozent(ki[1])}"


def stufen_von(*ks):
    """The stages any of the runs has outputs in: S6 only where a run measured it."""
    return [s for s in STUFEN if any(k.stufen.get(s) is not None for k in ks)]


# ===========================================================================
# Part two: running it. The catalogue sent, settings, cases, the request, the call reader, saving, measuring.
# ===========================================================================


# ---------------------------------------------------------------------------
# Words: a count, a list of cases, a value and a call as a line shows them
# ---------------------------------------------------------------------------


def mal(zahl, wort):
    """'1 case', '2 cases'."""
    return f"{zahl} {wort}{'s' * (zahl != 1)}"


def einige(ids, hoechstens=12):
    """'S2-1, S2-2, S2-3': cases named, cut after a dozen, with how many more."""
    return ", ".join(ids[:hoechstens]) + (f" and {len(ids) - hoechstens:,} more" if len(ids) > hoechstens else "")


def kurz(text, laenge=120):
    """A value as shown in the failed-case list: a 5 MB argument is cut, not printed."""
    return text if len(text) <= laenge else f"{text[:laenge]}... ({len(text)} characters)"


def aufruf_text(c):
    """One call as the lists show it, at most ANDERS_HOECHSTENS characters however many arguments it has."""
    if c["args"] is None:
        return f"{kurz(c['name'] or '?')}(<malformed arguments>)"
    oder = c.get("oder", {})  # an expected call's alternatives and optional arguments (pruefe_aufruf)
    teile = [f"{kurz(k, 40)}={eines([v, *oder.get(k, ())])}" for k, v in list(c["args"].items())[:20]] + \
        [f"{kurz(k, 40)}={eines(ws)} or left out" for k, ws in c.get("optional", {}).items()]
    mehr = [f"... {len(c['args']) - 20} more"] if len(c["args"]) > 20 else []
    return kurz(f"{kurz(c['name'])}(" + ", ".join(teile + mehr) + ")", ANDERS_HOECHSTENS)


# ---------------------------------------------------------------------------
# Errors: one class per exit status, one boundary in main()
# ---------------------------------------------------------------------------


class Abbruch(Exception):
    """A run that cannot go on; the message is one line for the user."""
    status = 1


class Eingabefehler(Abbruch):
    status = 2


class Serverfehler(Abbruch):
    status = 1


class Anfragefehler(Serverfehler):
    """The server refused the request itself: asking again as it stands cannot help."""


class Unterbrochen(Abbruch):
    """Ctrl-C (130) or SIGTERM (143) during a run."""

    def __init__(self, text, status=130):
        super().__init__(text)
        self.status = status


class Beendet(KeyboardInterrupt):
    """SIGTERM, ended like Ctrl-C: what was answered is kept."""
    status = 143

# ---------------------------------------------------------------------------
# The catalogue as a run sends it: the chapter's, a user's file, or a variant of either
# ---------------------------------------------------------------------------


SYNONYME = {  # --variante synonyme: a hand-written other name for every tool and every parameter
    "werkzeuge": {"list_contacts": "find_people", "get_contact": "fetch_person", "create_contact": "add_person",
                  "update_contact": "edit_person", "delete_contact": "remove_person", "add_note": "attach_comment",
                  "list_calendars": "show_calendars", "get_events": "find_appointments",
                  "create_event": "schedule_appointment", "book_room": "reserve_room", "send_email": "deliver_mail"},
    "argumente": {"company": "organisation", "status": "state", "contact_id": "person_id", "name": "full_name",
                  "email": "mail_address", "text": "comment", "calendar": "calendar_key", "date": "day",
                  "title": "summary", "start": "begins", "end": "ends", "room": "meeting_room", "to": "recipient",
                  "subject": "subject_line", "body": "message"}}
ABLENKUNG = [  # --variante ablenkung: near misses, never right in any case (nor in S4, nor for what S5 lacks)
    _werkzeug("list_companies", "List the companies the contacts work for.", {
        "industry": _text("Only companies of this industry."),
    }, []),
    _werkzeug("cancel_event", "Cancel an event in a calendar.", {
        "calendar": {"type": "string", "enum": KALENDER, "description": "The calendar's key."},
        "event_id": _text("The event's id."),
    }, ["calendar", "event_id"]),
    _werkzeug("send_sms", "Send a text message to a mobile phone.", {
        "phone": _text("The mobile number, in international format."),
        "text": _text("The message text."),
    }, ["phone", "text"]),
    _werkzeug("archive_contact", "Archive a contact: hidden from every list, but kept.",
              {"contact_id": CONTACT_ID}, ["contact_id"])]
VARIANTEN = ("synonyme", "reihenfolge", "ablenkung")
REIHENFOLGE_SEED = 1  # --variante reihenfolge: the order is random.Random(seed), saved with the run


class Katalog(typing.NamedTuple):
    """The tools and the opening a run sends, and what the cases are checked and graded against. A variant is a
    transform Katalog -> Katalog (see variante): it changes what is sent, never `schema`, `sha` and `datei`, which stay
    those of the catalogue as written, so that the cases, their grading and comparisons stay the same."""
    werkzeuge: list  # the tool objects every request carries, in this order (S1 narrows them)
    eroeffnung: str  # the system message
    schema: dict  # name -> parameters, of the catalogue as written
    sha: str  # sha256 of the catalogue as written and its opening
    zeichen: int  # characters of its tools as JSON: how many prompt tokens rendering them adds, roughly
    datei: str = None  # the file it was read from; None: the chapter's, built in
    synonyme: dict = None  # the map a synonyme variant uses, when the catalogue brings one
    ablenkung: list = None  # the decoys an ablenkung variant adds, when the catalogue brings them
    variante: str = None  # synonyme, reihenfolge or ablenkung; None: as written
    umbenennung: dict = None  # synonyme: {"werkzeuge": {old: new}, "argumente": {old: new}}, as sent
    eroeffnung_ganz: str = None  # S7's system message; only the chapter's catalogue has a world to run
    seed: int = None  # reihenfolge: the seed of the order sent
    zusatz: tuple = ()  # ablenkung: the decoys' names, offered in S1 too
    sprache: object = None  # synonyme: text -> the text naming every tool and parameter as sent

    def als_gesendet(self, text):
        """A question or a user's reply as sent: under synonyme no original name reaches the model."""
        return self.sprache(text) if self.sprache else text

    def name(self):
        return f"the catalogue {self.datei}" if self.datei else "the built-in catalogue"

    def schwelle(self):
        """The prompt tokens the whole catalogue must add over none for its tools to have reached the
        prompt (--pruefen): KATALOG_TOKENS for the chapter's eleven, in proportion to its size for another."""
        return KATALOG_TOKENS * self.zeichen / STANDARD.zeichen

    def schwelle_s1(self, faelle):
        """The prompt tokens the whole catalogue must add over S1's few tools (a run's diagnosis):
        KATALOG_TOKENS for what the chapter's S1 leaves out, in proportion to what the cases' S1
        leaves out of the catalogue sent (the median over its cases); 0 without an S1 case."""
        ganz = len(json.dumps(self.werkzeuge))
        weg = [ganz - len(json.dumps(angeboten(f, self))) for f in faelle if f.nur is not None]
        return KATALOG_TOKENS * statistics.median(weg) / S1_WEGGELASSEN if weg else 0

    def beschreibung(self):
        """What a results file records of the catalogue sent: the variant, and a hash of the tools and
        opening as sent, which a renaming map or the decoys change."""
        gesendet = hashlib.sha256(json.dumps([self.werkzeuge, self.eroeffnung], sort_keys=True).encode()).hexdigest()
        return {"variante": self.variante, "seed": self.seed, "umbenennung": self.umbenennung,
                "ablenkung": list(self.zusatz) or None, "gesendet_sha256": gesendet}


def katalog_von(werkzeuge, eroeffnung, **mehr):
    schema = {w["function"]["name"]: w["function"]["parameters"] for w in werkzeuge}
    sha = hashlib.sha256(json.dumps([werkzeuge, eroeffnung], sort_keys=True).encode()).hexdigest()
    return Katalog(werkzeuge, eroeffnung, schema, sha, len(json.dumps(werkzeuge)), **mehr)


# S7 asks a whole job, which one answer cannot do: its rules say how a job is done, in the same voice
EROEFFNUNG_GANZ = KOPF + (
    "\n"
    "Rules:\n"
    "- Do the whole job the request describes, one step at a time. Look up with the tools what the job "
    "needs and the request does not give; call what depends on a result only after that result has come; "
    "then answer the user in text, without a call.\n"
    "- Use every value exactly as the request or a tool's result gives it; never guess a value, an "
    "address or an id.\n"
    "- A contact is addressed only by its contact_id; when the request names a contact another way, find "
    "its contact_id with the tools.\n"
    "- When a tool refuses a call, read why, and go on as the request says for that case.\n"
    "- When the request asks you to tell it something, name it in your answer.")


STANDARD = katalog_von(KATALOG, EROEFFNUNG, synonyme=SYNONYME, ablenkung=ABLENKUNG, eroeffnung_ganz=EROEFFNUNG_GANZ)

# ---------------------------------------------------------------------------
# Settings: one frozen object, read once from the command line, that travels
# ---------------------------------------------------------------------------


FAELLE_DATEI = "faelle.jsonl"


def faelle_standard():
    """The case file beside messen.py, or the one `pip install` put under <prefix>/share/messen:
    the module lies in <prefix>/lib/pythonX.Y/site-packages (Windows: <prefix>/Lib/site-packages),
    or, with `pip install --target DIR`, in DIR itself."""
    hier = Path(__file__).resolve()
    orte = [hier.with_name(FAELLE_DATEI)] + [hier.parents[k] / "share" / "messen" / FAELLE_DATEI
                                             for k in (3, 2, 0) if len(hier.parents) > k]
    return next((o for o in orte if o.is_file()), orte[0])


class Lauf(typing.NamedTuple):
    """What a measurement is asked with; a mode (self-test, --pruefen) makes a changed copy."""
    url: str = None
    modell: str = None
    temp: float = 0.0
    n: int = 1
    tag: str = None
    extra: dict = {}  # one dict every Lauf without --extra shares: it is read, never changed
    ausgabe: Path = Path("ergebnisse")
    faelle: Path = None
    parallel: int = 1
    timeout: float = 120.0
    versuche: int = 4
    key: str = None
    neu: bool = False
    nachfrage: bool = False  # S5's second turn: the user's reply, then the calls after it
    klaeren: bool = False  # ask again the saved outputs whose grade is the server's or cannot tell
    spaeter: frozenset = frozenset()  # the later stages asked, by name (their rows' flags: S6 --weiter, S7 --ganz)
    stream: bool = False  # every request streamed, as an agent asks
    system: str = None  # --system: a system message before each BFCL case's own messages
    stufen: tuple = None  # --stufen: only the cases of these stages; None: all a run asks
    stichprobe: int = None  # --stichprobe: N cases of each BFCL file, drawn evenly across it; None: all
    timeout_nochmal: bool = True  # a request over --timeout is asked again (--pruefen: not, it would take as long)
    welt_salz: str = None  # S7: what the ids of created contacts are drawn from, the run's (its settings line's)
    ziehung: str = None  # S7: what each job's world values are drawn from (gezogen); None: the values as written
    ohne_proxy: bool = False  # the self-test's loopback requests never go through a proxy
    katalog: Katalog = STANDARD  # the tools and the opening sent: --katalog, --variante
    form: str = "text"  # a row of FORMEN: text, json or markdown
    alle: bool = False  # every failed output in the lists, not the first FEHLSCHLAEGE_GEZEIGT
    server: str = None  # --server: what the user states serves the URL, where no page identifies it
    mit_vorlage: bool = False  # --mit-vorlage: a comparison of each model with its own chat template

# ---------------------------------------------------------------------------
# Loading and checking faelle.jsonl
# ---------------------------------------------------------------------------


NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")  # a tool name every server takes (OpenAI's rule)


def lade_katalog(pfad):
    """Read and check a catalogue file: {"werkzeuge": [OpenAI tool objects], "eroeffnung": the system
    message}, and optionally "synonyme" and "ablenkung" for the variants. Every fault is one line."""
    try:
        daten = Path(pfad).read_bytes()
    except OSError as e:
        raise Eingabefehler(f"{pfad}: cannot read the catalogue ({e.strerror})")
    k = json_zeile(pfad, 0, daten, "; no tool's schema needs that")
    if not isinstance(k, dict):
        raise Eingabefehler(f"{pfad}: not a JSON object with \"werkzeuge\" and \"eroeffnung\"")
    if not isinstance(k.get("werkzeuge"), list) or not k["werkzeuge"]:
        raise Eingabefehler(f"{pfad}: \"werkzeuge\" must be a non-empty list of tools")
    if not isinstance(k.get("eroeffnung"), str) or not k["eroeffnung"].strip():
        raise Eingabefehler(f"{pfad}: \"eroeffnung\" must be a non-empty string (the system message)")
    pruefe_werkzeuge(pfad, "tool", k["werkzeuge"], {})
    ablenkung = k.get("ablenkung")
    if ablenkung is not None:
        if not isinstance(ablenkung, list) or not ablenkung:
            raise Eingabefehler(f"{pfad}: \"ablenkung\" must be a non-empty list of decoy tools")
        namen = {w["function"]["name"]: i for i, w in enumerate(k["werkzeuge"], 1)}
        pruefe_werkzeuge(pfad, "decoy", ablenkung, namen)
    if k.get("synonyme") is not None:
        pruefe_synonyme(pfad, k["synonyme"], k["werkzeuge"])
    return katalog_von(k["werkzeuge"], k["eroeffnung"], datei=str(Path(pfad).resolve()), synonyme=k.get("synonyme"),
                       ablenkung=ablenkung)


def pruefe_werkzeuge(pfad, wort, werkzeuge, vergeben):
    """Each tool an OpenAI tool object with a unique name and an object schema; vergeben: names taken."""
    eigene = {}  # name -> number
    for nr, w in enumerate(werkzeuge, 1):
        fehler = werkzeug_fehler(w)
        name = None if fehler else w["function"]["name"]
        if name in eigene or name in vergeben:
            fehler = f"the name '{name}' is taken (tool {eigene.get(name) or vergeben[name]})"
        if fehler:
            raise Eingabefehler(f"{pfad}: {wort} {nr}: {fehler}")
        eigene[name] = nr


def werkzeug_fehler(w):
    """What is wrong with one tool object, or None."""
    f = w.get("function") if isinstance(w, dict) else None
    if not isinstance(f, dict) or w.get("type", "function") != "function":
        return "not {\"type\": \"function\", \"function\": {...}}"
    if not f.get("name"):
        return "no name"
    if not isinstance(f["name"], str) or not NAME.fullmatch(f["name"]):
        return f"the name {json.dumps(f['name'])} is not 1 to 64 letters, digits, '_' or '-'"
    p = f.get("parameters")
    if not isinstance(p, dict) or p.get("type") != "object" or not isinstance(p.get("properties", {}), dict):
        return "\"parameters\" is not an object schema ({\"type\": \"object\", \"properties\": {...}})"
    pflicht = p.get("required", [])
    if not isinstance(pflicht, list) or not all(isinstance(x, str) for x in pflicht):
        return "\"required\" is not a list of parameter names"
    fehlt = [x for x in pflicht if x not in p.get("properties", {})]
    return f"\"required\" names '{fehlt[0]}', which is not in \"properties\"" if fehlt else None


FELDER = {"id": str, "stufe": str, "frage": str, "erwartet": list}


class Fall(typing.NamedTuple):
    """A case as loaded, frozen, read by field: the file's fields (None where its line has none) and its kind, its
    stage's row (art), which says how it is asked, graded and listed (art.weise) and, for BFCL's, by which checker
    (art.pruefer). roh: the line as read, which the hashes and the drawn values start from. A turn graded alone (S5's
    reply, a probe) is of no stage, graded the chapter's way."""
    id: str
    stufe: str = None
    frage: str = ""
    erwartet: list = ()  # the calls expected of its first answer (S7's: none, its loesung is the way)
    nur: list = None  # S1's tools offered
    nachtrag: str = None  # S5's reply from the user; danach: S5's and S6's calls after it or after ergebnis, the
    danach: list = None  # tools' results
    ergebnis: list = None
    welt: dict = None  # S7's: its world, the reference's steps, the refusals they meet, what the answer names
    loesung: list = None
    fehler: int = 0
    antwort: list = ()
    zeile: int = None  # its line in the file
    nachrichten: list = None  # BFCL's: its messages and functions as sent
    werkzeuge: list = None
    mehrzug: dict = None  # BFCL's multi-turn: its turns, their expected calls, its backends' classes (mehrzug_fall)
    roh: dict = None
    art: Stufe = Stufe(None, "a turn alone")


def als_fall(roh, **mehr):
    """A checked line as its record (keys loading added start with '_': _zeile, BFCL's _nachrichten, _werkzeuge)."""
    return Fall(**{k.lstrip("_"): v for k, v in roh.items() if k.lstrip("_") in Fall._fields}, roh=roh,
                art=STUFE[roh["stufe"]], **mehr)


def zu_tief(wert):
    """Is a value nested deeper than TIEFE levels (an iterative walk: no depth exhausts the stack)?"""
    stapel, grenze = [(wert, 1)], TIEFE
    while stapel:
        x, tiefe = stapel.pop()
        if isinstance(x, (dict, list)):
            if tiefe > grenze:
                return True
            stapel += [(v, tiefe + 1) for v in (x.values() if isinstance(x, dict) else x)]
    return False


def lade_faelle(pfad, katalog=STANDARD, stichprobe=None, stufen=None, einzug=False):
    """Read and check the case file against the catalogue as written; return (faelle, sha256 of the file).
    Every violation names file:line. BFCL's files are read as BFCL's (lade_bfcl), a sample of them too, and of
    its categories those asked (stufen)."""
    if ist_bfcl(pfad):
        return lade_bfcl(pfad, stichprobe, stufen, einzug)
    if stichprobe:
        raise Eingabefehler(f"--stichprobe draws from BFCL's files; {pfad} is asked whole (--stufen asks its stages)")
    try:
        daten = Path(pfad).read_bytes()
    except OSError as e:
        raise Eingabefehler(f"{pfad}: cannot read the case file ({e.strerror})")
    faelle, gesehen, fehler = [], {}, []  # gesehen: id -> line; fehler: each faulty line's first fault
    for nr, zeile in enumerate(daten.split(b"\n"), 1):
        try:
            fall = json_zeile(pfad, nr, zeile)
        except Eingabefehler as e:
            fehler.append(str(e))
            continue
        falsch = fall is not None and (pruefe_fall(fall, katalog) or fall["id"] in gesehen and
                                       f"duplicate id {fall['id']} (first on line {gesehen[fall['id']]})")
        if falsch:
            fehler.append(f"{pfad}:{nr}: {falsch}")
        elif fall is not None:
            gesehen[fall["id"]], fall["_zeile"] = nr, nr
            faelle.append(mit_typen(als_fall(fall), katalog))
    if fehler:  # every faulty line, a line each, the rest counted: one run of the check finds them all
        mehr = len(fehler) - FEHLER_HOECHSTENS
        rest = [f"{pfad}: {mal(mehr, 'more faulty line')}"] * (mehr > 0)
        raise Eingabefehler("\nmessen: ".join(fehler[:FEHLER_HOECHSTENS] + rest))
    if not faelle:
        raise Eingabefehler(f"{pfad}: no cases in the file")
    return faelle, faelle_hash(daten)


FEHLER_HOECHSTENS = 12  # faulty lines of a case file named one by one; the rest are counted


def json_zeilen(pfad, zeilen):
    """(line number, value) of each line of a file of JSON lines (lines as bytes), blank lines left out, one line
    at a time; the first fault stops it."""
    return ((nr, w) for nr, zeile in enumerate(zeilen, 1) for w in [json_zeile(pfad, nr, zeile)] if w is not None)


def json_zeile(pfad, nr, zeile, tief=", where a case nests a few"):
    """One line's value (nr 0: a whole file's), or None for a blank line; UTF-8, JSON and nesting checked, a fault
    file:line. A byte-order mark, as some editors write, is no part of the first line."""
    wo = f"{pfad}:{nr}" if nr else pfad
    try:
        wert = json.loads(zeile.decode("utf-8-sig" if nr < 2 else "utf-8")) if zeile.strip() else None
    except UnicodeDecodeError:
        raise Eingabefehler(f"{wo}: not UTF-8")
    except (ValueError, RecursionError) as e:
        warum = "nested too deep" if isinstance(e, RecursionError) else getattr(e, "msg", None) or (
            "a number of more than 4,300 digits" if "digits" in str(e) else str(e)[:200])  # the parser's words
        raise Eingabefehler(f"{wo}: not JSON ({warum})")
    if zu_tief(wert):
        raise Eingabefehler(f"{wo}: nested deeper than {TIEFE} levels{tief}")
    return wert


TYPEN = ("number", "integer", "boolean", "array", "object")  # schema types compared as that type, not as text


def mit_typen(fall, katalog):
    """Each expected call of a tool with typed parameters carries their types (_typen: name -> type), which passt
    compares by, in the call's JSON the record and its roh share; the chapter's catalogue has none, so its cases
    stay as written."""
    for soll in fall.art.weise.alle(fall):
        typen = {k: p.get("type") for k, p in katalog.schema[soll["name"]].get("properties", {}).items()
                 if isinstance(p, dict) and p.get("type") in TYPEN}
        # a list or an object expected where the schema names no type: compared as what it is, never as its text
        typen.update({k: {list: "array", dict: "object"}[type(v)] for k, v in soll["args"].items()
                      if isinstance(v, (list, dict)) and k not in typen})
        if typen:
            soll["_typen"] = typen
    return fall


def intern_weg(wert):
    """A case as the file has it: without what loading added (keys starting with '_'), at any depth."""
    if isinstance(wert, dict):
        return {k: intern_weg(v) for k, v in wert.items() if not k.startswith("_")}
    return [intern_weg(v) for v in wert] if isinstance(wert, list) else wert


def faelle_hash(daten):
    """sha256 of a case file's bytes without its S6 and S7 lines: what a run of the chapter's stages depends on.
    A file that gained S6 or S7 cases keeps its hash, so a run measured before them still finds the file and compares
    with runs measured after; the S6 cases a run with --weiter asked, and the S7 ones of --ganz, have hashes of their
    own (stufen_hash)."""
    zeilen = daten.splitlines(keepends=True)
    namen = [json.dumps(stufe).encode() for stufe in SPAETER]  # the find first: most lines name none
    return hashlib.sha256(b"".join(z for z in zeilen if not any(n in z for n in namen) or
                                   not ist_spaeter(z))).hexdigest()


def ist_spaeter(zeile):
    try:
        fall = json.loads(zeile)
    except ValueError:
        return False  # lade_faelle names the line
    return isinstance(fall, dict) and fall.get("stufe") in SPAETER


def stufen_hash(faelle, stufe):
    """sha256 of a later stage's cases as read (S7's with its opening): a run resumes and compares on the same."""
    return hashlib.sha256(json.dumps([intern_weg(f.roh) for f in faelle if f.stufe == stufe] +
                                     ([EROEFFNUNG_GANZ] if stufe == GANZ else []), sort_keys=True).encode()).hexdigest()


WELCHER_KATALOG = " (give your own tools with --katalog FILE)"


def faelle_fuer(faelle, spaeter, stufen, pfad):
    """The cases a run asks: a later stage's only where it is asked (spaeter: their names, by their flags, S6
    --weiter, S7 --ganz), which then needs its cases; only the stages named by --stufen, where it names some."""
    an = {s: s in spaeter for s in SPAETER}
    for stufe, flagge in SPAETER.items():
        if an[stufe] and not any(f.stufe == stufe for f in faelle):
            raise Eingabefehler(f"{pfad}: no {stufe} case in the file, so {flagge} has nothing to measure")
        if stufen and stufe in stufen and not an[stufe]:
            raise Eingabefehler(f"--stufen names {stufe}, which only {flagge} asks; add {flagge}")
    gefragt = [f for f in faelle if an.get(f.stufe, True) and (not stufen or f.stufe in stufen)]
    if not gefragt and stufen:
        raise Eingabefehler(f"{pfad}: no case of {', '.join(stufen)} in the file, so --stufen leaves nothing to ask")
    if not gefragt:
        spaeter = sorted({f.stufe for f in faelle})
        flaggen = " and ".join(SPAETER[st] for st in spaeter)
        raise Eingabefehler(f"{pfad}: every case is of {', '.join(spaeter)}, which only {flaggen} asks; add {flaggen}")
    return gefragt


def pruefe_fall(fall, katalog=STANDARD):
    """Return what is wrong with one case, or None: as its stage's row checks it (pruefe_frage, pruefe_ganz)."""
    if not isinstance(fall, dict):
        return "a case must be a JSON object"
    stufe = fall.get("stufe")
    return (STUFE[stufe].weise if isinstance(stufe, str) and stufe in STUFE else Weise()).pruefe(fall, katalog)


def pruefe_frage(fall, katalog):
    """A case asked as one question: the chapter's fields, a known stage, its nur, what follows its first step."""
    for feld, typ in FELDER.items():
        if not isinstance(fall.get(feld), typ) or (typ is str and not fall[feld].strip()):
            return f"field '{feld}' missing or not a {'list' if typ is list else 'non-empty string'}"
    if fall["stufe"] not in KAPITEL_STUFEN:
        return f"unknown stage '{fall['stufe']}' (known: {', '.join(KAPITEL_STUFEN)})"
    for soll in fall["erwartet"]:
        fehler = pruefe_aufruf(soll, katalog)
        if fehler:
            return fehler
    if fall["stufe"] in STILL and fall["erwartet"]:
        return f"stage {fall['stufe']} expects no call, but 'erwartet' lists {len(fall['erwartet'])}"
    if fall["stufe"] not in STILL and not fall["erwartet"]:
        return f"stage {fall['stufe']} expects at least one call"
    return pruefe_nur(fall, katalog) or pruefe_danach(fall, katalog)


def pruefe_aufruf(soll, katalog):
    if not isinstance(soll, dict) or not isinstance(soll.get("name"), str) or not isinstance(soll.get("args"), dict):
        return "each expected call must be {\"name\": string, \"args\": object}"
    if soll["name"] not in katalog.schema:
        return f"expected tool '{soll['name']}' is not in {katalog.name()}{WELCHER_KATALOG * (not katalog.datei)}"
    parameter, name, args = katalog.schema[soll["name"]], soll["name"], soll["args"]
    oder, optional = soll.get("oder", {}), soll.get("optional", {})
    feld = next((f for f, x in (("oder", oder), ("optional", optional)) if not isinstance(x, dict) or
                 not all(isinstance(w, list) and w for w in x.values())), None)
    if feld:
        return f"'{feld}' in {name} must be an object of argument -> a non-empty list of the values it accepts"
    fremd = sorted((set(args) | set(optional)) - set(parameter.get("properties", {})))
    if fremd:
        return f"{name} has no argument '{fremd[0]}'"
    fehlt = [p for p in parameter.get("required", []) if p not in args]
    if fehlt:
        return f"expected call {name} lacks its required argument '{fehlt[0]}'" + \
            " (the tool requires it, so it cannot be optional)" * (fehlt[0] in optional)
    doppelt = [f"'oder' names '{k}', which 'args' lacks (one that may be left out goes in 'optional')"
               for k in oder if k not in args] + [f"'{k}' stands in 'args' and in 'optional', where an argument that "
                                                  "may be left out stands alone" for k in optional if k in args]
    if doppelt:
        return f"{name}: {doppelt[0]}"
    werte = list(args.items()) + [(k, w) for x in (oder, optional) for k, ws in x.items() for w in ws]
    gepolstert = [k for k, v in werte if str(v) != str(v).strip()]
    if gepolstert:  # passt strips the answer's value, never the expected one
        return (f"the expected value of '{gepolstert[0]}' in {name} has leading or trailing spaces; "
                "a stripped answer can never equal it")
    falsch = next((f for k, v in werte for f in [wert_fehler(k, v, parameter["properties"][k])] if f), None)
    return f"the expected value of '{falsch[0]}' in {name} is {falsch[1]}" if falsch else None


SCHEMA_TYPEN = {"string": str, "number": (int, float), "integer": int, "boolean": bool, "object": dict, "array": list}


def wert_fehler(name, wert, schema):
    """(name, what is wrong) when an expected value no answer can match: outside the parameter's enum, or of
    another type than its schema says; else None."""
    if not isinstance(schema, dict):
        return None
    if isinstance(schema.get("enum"), list) and wert not in schema["enum"]:
        return name, f"{json.dumps(wert, ensure_ascii=False)}, not one of its enum " \
                     f"({', '.join(json.dumps(e, ensure_ascii=False) for e in schema['enum'])})"
    typ = schema.get("type")
    erwartet = SCHEMA_TYPEN.get(typ) if isinstance(typ, str) else None
    ganz = typ == "integer" and isinstance(wert, float) and wert.is_integer()
    if erwartet and (not isinstance(wert, erwartet) or isinstance(wert, bool) and typ != "boolean") and not ganz:
        return name, f"{json.dumps(wert, ensure_ascii=False)}, not of the type {typ} its schema says" + \
            typ_abhilfe(wert, typ)
    return None


def typ_abhilfe(wert, typ):
    """'; write it as 15, without quotes': the fix for a value written as text that its type reads."""
    if isinstance(wert, str):
        try:
            gelesen = json.loads(wert.strip())
        except ValueError:
            gelesen = None
        passt_ = typ == "boolean" and isinstance(gelesen, bool) or typ in ("number", "integer") and \
            ist_zahl(gelesen) and (typ == "number" or float(gelesen).is_integer())
        if passt_:
            return f"; write it as {json.dumps(gelesen)}, without quotes"
    if typ == "string" and not isinstance(wert, (dict, list)):
        return f"; write it in quotes, {json.dumps(json.dumps(wert))}"
    return ""


def pruefe_nur(fall, katalog):
    if "nur" not in fall:
        return "stage S1 needs 'nur' (the tools offered)" if fall["stufe"] == "S1" else None
    if fall["stufe"] != "S1":
        return f"'nur' narrows the catalogue in S1 only, not in {fall['stufe']}"
    nur = fall["nur"]
    if not isinstance(nur, list) or not nur or not all(isinstance(n, str) for n in nur):
        return "'nur' must be a non-empty list of tool names"
    unbekannt = [n for n in nur if n not in katalog.schema]
    if unbekannt:
        return f"'nur' names '{unbekannt[0]}', which is not in {katalog.name()}"
    fehlt = [s["name"] for s in fall["erwartet"] if s["name"] not in nur]
    return f"'nur' leaves out the expected tool '{fehlt[0]}'" if fehlt else None

# ---------------------------------------------------------------------------
# Asking the endpoint: the only network code
# ---------------------------------------------------------------------------


TIEFE = 100  # levels of JSON nesting kept; deeper values become ZU_TIEF
ZU_TIEF = "(nested too deep to read)"


def ganzzahl(ziffern):
    """A JSON integer as Python reads it; one of more digits than Python converts (4,300) stays its digits,
    as a string, so that a hostile usage count or argument is no reason to lose the whole answer."""
    return int(ziffern) if len(ziffern) <= 4000 else ziffern


def kein_json(wort):
    raise ValueError(f"{wort} is no JSON value")


DECODER = json.JSONDecoder(parse_int=ganzzahl)  # what a server sends: a stream's chunks, its error pages
RUF_DECODER = json.JSONDecoder(parse_int=ganzzahl, parse_constant=kein_json)  # a call's JSON: NaN, Infinity are none
RETRY_STATUS = (408, 429, 500, 502, 503, 504)
BACKOFF = 0.5  # seconds; urllib3 waits 0, 1, 2, 4 ... between attempts

HINWEISE = [  # (pattern in a server's message, what to do about it)
    (r"--enable-auto-tool-choice", "start vLLM with --enable-auto-tool-choice --tool-call-parser <the model's parser>"),
    (r"--jinja", "start llama-server with --jinja"),
    (r"does not support tools", "this Ollama model's template has no tools; pick a model that supports them"),
    (r"context (length|size|window)",
     "the question and catalogue exceed the server's context; start it with a larger one"),
    (r"does not exist|not found", "check --modell and --url against the server's /v1/models")]
KEY_HINWEIS = "put the key in OPENAI_API_KEY or name its variable with --key-env"


def anfrage(fall, lauf, extra=None):
    """The request body for one case, with the run's catalogue (S1: narrowed by nur) and --extra
    (or `extra` in its place); its messages and tools as the case's stage asks it (weise)."""
    body = {"model": lauf.modell, "messages": fall.art.weise.nachrichten(fall, lauf),
            "tools": fall.art.weise.werkzeuge(fall, lauf.katalog), "tool_choice": "auto", "temperature": lauf.temp}
    if not body["tools"]:  # a BFCL irrelevance case may offer none: sent without, as BFCL sends it
        del body["tools"], body["tool_choice"]
    if lauf.stream:
        body.update(stream=True, stream_options={"include_usage": True})
    body.update(lauf.extra if extra is None else extra)
    return body


def eroeffnet(eroeffnung, fall, katalog):
    """A case's first messages: the opening its stage sends, then its question in the catalogue's words."""
    return [{"role": "system", "content": eroeffnung}, {"role": "user", "content": katalog.als_gesendet(fall.frage)}]


def angeboten(fall, katalog):
    """The tools a case is sent: the run's catalogue, in S1 narrowed by nur (decoys stay offered)."""
    if fall.nur is None:
        return katalog.werkzeuge
    nur = {neuer_name(katalog, n) for n in fall.nur}.union(katalog.zusatz)
    return [w for w in katalog.werkzeuge if w["function"]["name"] in nur]


class BearerAuth(AuthBase):
    """The API key as a bearer token; as requests auth it wins over user:password in the URL."""

    def __init__(self, key):
        self.key = key

    def __call__(self, r):
        r.headers["Authorization"] = f"Bearer {self.key}"
        return r


class Endpunkt:
    """One chat-completions endpoint; a requests session per thread. Retries are urllib3's Retry, driven here, not
    in the adapter, so that what it cannot see (a body cut off, an attempt over --timeout, a 200 that is no chat
    completion) is retried by the same rules and waits."""

    def __init__(self, lauf, bericht=None):
        self.lauf = lauf
        self.auth = BearerAuth(lauf.key) if lauf.key else None  # None: user:password in the URL as Basic
        self._lokal = threading.local()
        self.bericht = bericht  # a run's Fortschritt: told each request in flight and each asked again

    def session(self):
        s = getattr(self._lokal, "session", None)
        if s is None:
            s = self._lokal.session = requests.Session()
            # subtle: what requests reads from the environment on every request (proxies and NO_PROXY,
            # REQUESTS_CA_BUNDLE, .netrc) is read here once, for the run's one URL: a walk of os.environ
            # per request was a tenth of the bench's own cost
            s.trust_env = False
            if not self.lauf.ohne_proxy:
                s.proxies = requests.utils.get_environ_proxies(self.lauf.url)
                s.verify = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
                s.auth = requests.utils.get_netrc_auth(self.lauf.url)
            s.mount("http://", FristAdapter(max_retries=0))
            s.mount("https://", FristAdapter(max_retries=0))
            s.hooks["response"].append(nicht_woandershin)
        return s

    def frage(self, fall, body=None):
        """Ask one case; return the Antwort or raise Serverfehler. The run's Fortschritt, where there is one,
        is told the request is in flight until it ends."""
        schluessel, antwort = self.bericht and self.bericht.gesendet(fall.id), None
        try:
            antwort = self.versucht(fall, body or anfrage(fall, self.lauf))
            return antwort
        finally:
            if self.bericht:
                self.bericht.zurueck(schluessel, antwort and antwort.latenz)

    def versucht(self, fall, body):
        """The attempts of one request, each fault asked again by urllib3's Retry rules (and said so)."""
        retry = Retry(total=self.lauf.versuche - 1, allowed_methods=None, status_forcelist=RETRY_STATUS,
                      backoff_factor=BACKOFF, respect_retry_after_header=True)
        frei, versuch = True, 1  # one reopened keep-alive connection per request costs no attempt
        while True:
            try:
                r, latenz = self.versuch(body)
            except LocationValueError as e:  # urllib3 could not parse the URL: no attempt can send it
                raise Anfragefehler(f"{fall.id}: the request cannot be sent ({e}); check --url") from None
            except Woandershin as e:
                raise Anfragefehler(f"{fall.id}: the server redirected the request ({e.status} to {e.ziel}), to "
                                    "another host than --url; messen does not follow it, since the answers would be "
                                    "credited to the server asked (and the key is never sent there): give that "
                                    "address as --url if it is the server you mean") from None
            except requests.RequestException as e:
                aussichtslos(fall, e, self.lauf.url)
                if frei and verbindung_verloren(e):
                    frei = False
                    continue
                if isinstance(e, requests.Timeout) and not self.lauf.timeout_nochmal:
                    raise Serverfehler(f"{fall.id}: {grund(e)}; not asked again, since at temperature 0 it would "
                                       f"take as long again: {schleife_hinweis(self.lauf)}") from None
                r, kurz_ = None, f"{grund(e)}{proxy_hinweis(self.lauf.url, self.session())}"
                warum = f"no answer from the server after {mal(self.lauf.versuche, 'attempt')}: {kurz_}"
            else:
                antwort = chat_antwort(r, latenz, body.get("stream") is True) or abgelehnte_antwort(r, latenz)
                if antwort is not None:
                    return antwort
                warum = fehlerbild(fall, r, self.lauf.versuche, body.get("stream") is True)
                kurz_ = re.sub(r" \(\d+ attempts?\)", "", warum)  # the count is the final line's
            try:
                retry = retry.increment(method="POST", url=self.lauf.url, response=None if r is None else r.raw)
            except MaxRetryError:
                abgebrochen = r is not None and body.get("stream") is True and 200 <= r.status_code < 300 and \
                    ist_strom(r) and strom_antwort(koerper_text(r), latenz, abgebrochen=True)
                if abgebrochen:  # the server's answer as it broke off: saved as the server's, the run goes on
                    return abgebrochen
                raise Serverfehler(f"{fall.id}: {warum}") from None
            versuch, warte = versuch + 1, None if r is None else wartezeit(r)
            if self.bericht and not (warte and warte > 0):  # a wait the server asks for is said below
                self.bericht.nochmal(fall.id, kurz_, versuch, self.lauf.versuche)
            if warte is None:
                retry.sleep()
            elif warte > WARTEN_HOECHSTENS:
                raise Serverfehler(f"{fall.id}: {warum}; the server asks to wait {in_worten(warte)} before the "
                                   f"next request, longer than {WARTEN_HOECHSTENS} s, so the run stops here") from None
            elif warte > 0:
                zeile = f"messen: {fall.id}: the server answered {r.status_code} and asks to wait " \
                        f"{in_worten(warte)}; waiting\n"
                if self.bericht:  # on its own line, never inside the status line
                    self.bericht.schreibe(zeile, neu=True)
                else:
                    sys.stderr.write(zeile)
                    sys.stderr.flush()
                time.sleep(warte)

    def versuch(self, body):
        """One POST, bounded as a whole by --timeout: (response with its body read, latency).
        requests' timeout bounds each socket read, so a server that trickles a byte at a time would hold the run
        forever. The body is read here as it arrives instead, each read waiting only for what is left of --timeout, the
        deadline checked between reads: no thread per attempt."""
        start = time.perf_counter()
        FRIST.ende = start + self.lauf.timeout  # the status line and headers too (FristSocket)
        try:
            r = self.session().post(self.lauf.url, json=body, auth=self.auth, timeout=self.lauf.timeout, stream=True)
        except requests.exceptions.ReadTimeout:
            raise zu_spaet(self.lauf.timeout) from None
        laenge = r.headers.get("Content-Length", "")
        if re.fullmatch(r"[0-9]{1,20}", laenge) and int(laenge) > GROESSTE_ANTWORT:
            r.close()
            raise ZuGross(f"the server announced {int(laenge):,} bytes, more than the {GROESSTE_ANTWORT >> 20} MB "
                          "an answer may have")
        r._content = b"".join(lies_koerper(r, start + self.lauf.timeout, self.lauf.timeout))
        r._content_consumed = True
        r.close()  # read to its end: the connection goes back to the pool
        return r, time.perf_counter() - start

    def hole(self, adresse):
        """GET one of the server's pages about itself: its JSON object, or None for anything else
        (an error status, no JSON, a timeout: nothing told). Bounded by KENNUNG_FRIST, at most 1 MB."""
        frist = min(self.lauf.timeout, KENNUNG_FRIST)
        start = time.perf_counter()
        FRIST.ende = start + frist
        try:
            r = self.session().get(adresse, auth=self.auth, timeout=frist, stream=True)
            if r.status_code != 200:
                r.close()
                return None
            wert = json.loads(b"".join(lies_koerper(r, start + frist, frist, 1 << 20)))  # ZuGross past 1 MB
            return wert if isinstance(wert, dict) else None
        except (requests.RequestException, LocationValueError, ValueError, OSError, RecursionError):
            return None  # RecursionError: JSON nested deeper than the parser goes


class Woandershin(requests.RequestException):
    """A redirect to another scheme, host or port than the one asked: not followed."""

    def __init__(self, ziel, status):
        super().__init__(ziel)
        self.ziel, self.status = ziel, status


def nicht_woandershin(r, *args, **kwargs):
    """requests' response hook, before it follows a redirect: one to another host is refused (Woandershin), so that
    no answer from elsewhere is credited to the server asked; one within the server is followed as before."""
    ziel = r.headers.get("Location") if r.is_redirect else None
    if ziel and eine_url(urljoin(r.url, ziel))[:3] != eine_url(r.url)[:3]:
        r.close()
        raise Woandershin(ohne_geheimnis(urljoin(r.url, ziel)), r.status_code)
    return r


LESEN = 1 << 16  # bytes a read of a body takes at most; it returns what has arrived
GROESSTE_ANTWORT = 64 << 20  # bytes an answer may have (decoded); a larger one is a failure, never read to its end


class ZuGross(requests.RequestException):
    """An answer larger than GROESSTE_ANTWORT: asked again as any fault."""


def lies_koerper(r, ende, timeout, hoechstens=GROESSTE_ANTWORT):
    """The pieces of a body as they arrive, until its end; requests.Timeout at the deadline `ende`
    (perf_counter seconds), ZuGross past `hoechstens` bytes, and requests' own errors for a body
    cut off or badly encoded. A body not read to its end takes its connection with it."""
    lies = getattr(r.raw, "read1", r.raw.read)  # read1 (urllib3 >= 2.2) returns what one recv brought
    gelesen = 0
    try:
        while True:
            rest = ende - time.perf_counter()
            if rest <= 0:
                raise zu_spaet(timeout)
            sock = getattr(r.raw.connection, "sock", None)
            if sock is not None:
                sock.settimeout(rest)
            teil = lies(LESEN, decode_content=True)
            if not teil:
                return
            gelesen += len(teil)
            if gelesen > hoechstens:
                r.raw.close()
                raise ZuGross(f"the answer grew past {hoechstens >> 20} MB; it was not read further")
            yield teil
    except BaseException as e:  # every fault closes the connection; urllib3's named as requests names them
        r.raw.close()
        if isinstance(e, ReadTimeoutError):
            raise zu_spaet(timeout) from None
        for art, als in ((ProtocolError, requests.exceptions.ChunkedEncodingError),
                         (DecodeError, requests.exceptions.ContentDecodingError)):
            if isinstance(e, art):
                raise als(e) from None
        raise


FRIST = threading.local()  # ende: the perf_counter deadline of the request this thread is asking


class FristSocket:
    """A socket whose every receive waits at most until the request's deadline (FRIST.ende): a server
    that trickles its status line and headers a byte at a time is cut at --timeout, as a trickled
    body is. requests' own timeout bounds each read alone."""

    def __init__(self, sock, ende):
        self._sock, self._ende = sock, ende

    def recv_into(self, puffer, *args):
        rest = self._ende - time.perf_counter()
        if rest <= 0:
            raise socket.timeout("the deadline passed")
        self._sock.settimeout(rest)
        return self._sock.recv_into(puffer, *args)

    def makefile(self, mode="rb", buffering=None, **_):
        self._sock._io_refs += 1  # as socket.makefile counts it, so that closing the file closes no more
        return io.BufferedReader(socket.SocketIO(self, "rb"))

    def __getattr__(self, name):
        return getattr(self._sock, name)


class MitFrist:
    """Reads a response through FristSocket while FRIST holds a deadline (a mixin for urllib3's connections)."""

    def getresponse(self):
        echt, ende = self.sock, getattr(FRIST, "ende", None)
        if echt is not None and ende is not None:
            self.sock = FristSocket(echt, ende)
        try:
            return super().getresponse()
        finally:
            if isinstance(self.sock, FristSocket):
                self.sock = echt  # a connection closed meanwhile has sock None, and keeps it


FRIST_POOLS = {schema: type(f"Frist{pool.__name__}", (pool,), {"ConnectionCls": type(
    f"Frist{verbindung.__name__}", (MitFrist, verbindung), {})})  # urllib3's, their connections read by MitFrist
    for schema, pool, verbindung in (("http", HTTPConnectionPool, HTTPConnection),
                                     ("https", HTTPSConnectionPool, HTTPSConnection))}


class FristAdapter(HTTPAdapter):
    """requests' adapter, its connections bounded by the deadline (direct, or through an HTTP proxy)."""

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = FRIST_POOLS

    def proxy_manager_for(self, proxy, **kwargs):
        manager = super().proxy_manager_for(proxy, **kwargs)
        if not proxy.lower().startswith("socks"):
            manager.pool_classes_by_scheme = FRIST_POOLS
        return manager


def zu_spaet(timeout):
    return requests.Timeout(f"no complete answer within --timeout {timeout:g} s")


def schleife_hinweis(lauf):
    """What to do about a request over --timeout, never repeating a setting the user gave already."""
    grenze = token_grenze({"extra": lauf.extra})
    if grenze is not None:
        return f"the answers are cut at max_tokens {grenze} already (--extra), so the server is slow: give a " \
               f"larger --timeout than {lauf.timeout:g} s (--pruefen says how long its requests take)"
    return ("a model that repeats itself until its token limit is cut short by --extra '{\"max_tokens\": 256}'; "
            "a slow server needs a larger --timeout")
WARTEN_HOECHSTENS = 60  # seconds of Retry-After a run waits; a longer wait stops it (the same command resumes)


def wartezeit(r):
    """The seconds a 429, 503 or 413 asks to wait (Retry-After: seconds or an HTTP date), or None.
    Read here, not by urllib3, which caps the wait and raises on a header it cannot read."""
    wert = r.headers.get("Retry-After", "").strip() if r.status_code in Retry.RETRY_AFTER_STATUS_CODES else ""
    if re.fullmatch(r"[0-9]{1,12}", wert):  # subtle: str.isdigit takes "¹", which float() refuses
        return float(wert)
    try:
        return max(0.0, email.utils.parsedate_to_datetime(wert).timestamp() - time.time()) if wert else None
    except (TypeError, ValueError, IndexError, OverflowError):
        return None  # a header no one can read asks for nothing


def in_worten(sekunden):
    """86400 -> '24 h': a wait as a person says it."""
    for grenze, teiler, einheit in ((120, 1, "s"), (7200, 60, "min"), (172800, 3600, "h")):
        if sekunden < grenze:
            return f"{sekunden / teiler:.0f} {einheit}"
    return f"{sekunden / 86400:,.0f} days"


def aussichtslos(fall, e, url):
    """Raise at once for a transport error that asking again cannot mend, with its fix."""
    text = grund(e)
    if isinstance(e, requests.exceptions.SSLError):
        raise Anfragefehler(f"{fall.id}: the TLS connection to the server failed ({text}); for a self-signed "
                            "certificate, set REQUESTS_CA_BUNDLE to the file of the CA that signed it")
    if isinstance(e, requests.exceptions.InvalidSchema) and "socks" in str(e).lower():
        raise Anfragefehler(f"{fall.id}: a SOCKS proxy is set for {urlsplit(url).hostname}, but requests lacks "
                            "SOCKS support: pip install 'requests[socks]' (or set NO_PROXY to bypass the proxy)")
    if isinstance(e, (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema,
                      requests.exceptions.MissingSchema)):
        raise Anfragefehler(f"{fall.id}: the request cannot be sent ({text}); check --url")


def verbindung_verloren(e):
    """Did the server close a kept-alive connection as the request went out: reopen, not an attempt."""
    innen = e.args[0] if isinstance(e, requests.ConnectionError) and e.args else None
    ursache = innen.args[1] if isinstance(innen, ProtocolError) and len(innen.args) > 1 else None
    return isinstance(ursache, (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError))


def proxy_hinweis(url, session):
    """When a proxy from the environment carried the request, say so: its failure is not the server's."""
    proxy = requests.utils.select_proxy(url, session.proxies)
    return f" (through the proxy {ohne_geheimnis(proxy)} from the environment; to bypass it, set " \
           f"NO_PROXY={urlsplit(url).hostname})" if proxy else ""


Antwort = collections.namedtuple("Antwort", "nachricht usage latenz finish weitere strom abgelehnt wer",
                                 defaults=(None, None, None))
# weitere: choices beyond the one graded (a server or proxy that set n); strom: with --stream, {"chunks": n, "defekte":
# [what broke the protocol]}; abgelehnt: the server's words where it refused the model's own output
# (abgelehnte_antwort); wer: what the answer says answered it (wer_antwortete), or None
ABGELEHNT = re.compile(r"Failed to parse input at pos \d+: (.*)", re.S)
# a later llama.cpp's words for the same refusal, without the text: "The model produced output that does not match
# the expected peg-native format" (llama.cpp #26381, #27025); the model's text is only in the server's log
ABGELEHNT_OHNE_TEXT = re.compile(r"The model produced output that does not match the expected [\w-]+ format")
ABGELEHNT_WARUM = ("whose that is cannot be told: a call the model wrote wrongly, or a chat template whose call form "
                   "is not the model's (try the model's own, in its own turn format); the server's log shows what "
                   "the model wrote")


def abgelehnte_antwort(r, latenz):
    """llama.cpp's 500 where its tool-call parser cannot read what the model wrote ("Failed to parse input at
    pos N: <the text>", llama.cpp #23838, #24644; in later builds without the text, ABGELEHNT_OHNE_TEXT): the same
    again on every attempt at temperature 0, so it is the model's answer, the text it quotes (or none), refused
    by the server, and never a fault to ask again; else None."""
    try:
        daten = r.json() if r.status_code == 500 else None
    except ValueError:
        return None
    fehler = daten.get("error") if isinstance(daten, dict) and isinstance(daten.get("error"), dict) else daten
    meldung = fehler.get("message") if isinstance(fehler, dict) else None
    if not isinstance(meldung, str):
        return None
    treffer = ABGELEHNT.match(meldung)
    if treffer is None and not ABGELEHNT_OHNE_TEXT.match(meldung):
        return None
    return Antwort({"role": "assistant", "content": treffer and treffer.group(1)}, {}, latenz, None, 0, None,
                   kurz(meldung, 300))


@contextlib.contextmanager
def ohne_zyklensammler():
    """Python's cycle collector paused while one answer is read or graded: an answer's objects form no cycles,
    but each collection walks them all again, which made a hostile answer's 166,000 calls grade 40 % slower at
    5 MB than at ten times 0.5 MB (tests/bench.py). Only a thread that found it running pauses and resumes it,
    so that with --parallel it never stays paused."""
    lief = gc.isenabled()
    if lief:
        gc.disable()
    try:
        yield
    finally:
        if lief:
            gc.enable()


@ohne_zyklensammler()
def chat_antwort(r, latenz, strom=False):
    """The Antwort of a 2xx chat completion, or None when the response is none (fehlerbild says why).
    strom: the request asked for a stream, which is assembled here; a plain answer to it is taken,
    and counted as a defect of the stream."""
    if not 200 <= r.status_code < 300 or (r.history and r.request.method != "POST"):
        return None
    if strom and ist_strom(r):
        return strom_antwort(koerper_text(r), latenz)
    antwort = ganze_antwort(r, latenz)
    return antwort._replace(strom={"chunks": 0, "defekte": [NICHT_GESTREAMT]}) if strom and antwort else antwort


def ganze_antwort(r, latenz):
    body = koerper_json(r)
    wahl = body.get("choices") if isinstance(body, dict) else None
    wahl = [c for c in wahl if isinstance(c, dict)] if isinstance(wahl, list) else []
    erste = next((c for c in wahl if c.get("index") == 0), wahl[0] if wahl else {})
    nachricht = erste.get("message")
    if not isinstance(nachricht, dict):
        return None
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    finish = erste.get("finish_reason") if isinstance(erste.get("finish_reason"), str) else None
    return Antwort(nachricht, usage, latenz, finish, len(wahl) - 1, wer=wer_antwortete(body))


WER_FELDER = {"model": "modell", "system_fingerprint": "build"}  # a completion's words on what answered it


def wer_antwortete(body, bisher=None):
    """What a completion (or a stream's chunk) says answered it: the model it names and the build (system_fingerprint,
    llama.cpp's build_info, TGI's version), each a string cut at 200 characters; None where it names neither. In a
    stream the first chunk that names one counts (bisher: what earlier chunks named)."""
    wer = dict(bisher or {})
    for feld, name in WER_FELDER.items():
        x = body.get(feld) if isinstance(body, dict) else None
        if name not in wer and isinstance(x, str) and x.strip():
            wer[name] = x[:200]
    return wer or None


def koerper_text(r):
    """The body as text, bad bytes replaced: a stream (SSE) always as UTF-8, as its specification says; anything else as
    UTF-8 (JSON's) unless the server names another charset. subtle: requests takes ISO-8859-1 for any text/* without a
    charset, and llama.cpp and Ollama send text/event-stream so: "Zürich" would arrive as "ZÃ¼rich"."""
    typ = r.headers.get("Content-Type", "").lower()
    kodierung = "utf-8" if "event-stream" in typ or "charset" not in typ else r.encoding or "utf-8"
    try:
        return r.content.decode(kodierung, errors="replace")
    except LookupError:
        return r.content.decode("utf-8", errors="replace")


def koerper_json(r):
    """The body as JSON, or None; one nested deeper than the parser can go is read capped."""
    text = koerper_text(r)
    try:
        return kappe(json.loads(text, parse_int=ganzzahl))
    except RecursionError:
        try:
            return kappe(json.loads(gekappt(text), parse_int=ganzzahl))
        except (ValueError, RecursionError):
            return None
    except ValueError:
        return None


STRUKTUR = re.compile(r'["\\\[\]{}]')


def gekappt(text, grenze=TIEFE):
    """JSON text with every container nested deeper than `grenze` replaced by ZU_TIEF (a linear scan)."""
    teile, letzt, tiefe, schnitt, im_string, escape_bis = [], 0, 0, None, False, -1
    for m in STRUKTUR.finditer(text):
        i, c = m.start(), m.group()
        if i <= escape_bis:
            continue  # the character after a backslash
        if im_string:
            escape_bis = i + 1 if c == "\\" else escape_bis
            im_string = c != '"'
        elif c == '"':
            im_string = True
        elif c in "[{":
            tiefe += 1
            schnitt = i if tiefe == grenze + 1 else schnitt
        elif c in "]}":
            if tiefe == grenze + 1:
                teile += [text[letzt:schnitt], json.dumps(ZU_TIEF)]
                letzt = i + 1
            tiefe -= 1
    return "".join(teile) + text[letzt:]


def fehlerbild(fall, r, versuche, strom=False):
    """Why a response is no chat completion, in one line; raises at once when retrying cannot help."""
    text = koerper_text(r)
    if r.history and r.request.method != "POST":
        raise Anfragefehler(f"{fall.id}: the server redirected the request ({r.history[0].status_code} to "
                            f"{ohne_geheimnis(r.url)}) and it arrived as a {r.request.method}, not a POST; "
                            "give the address it redirects to as --url")
    if r.status_code in (404, 405, 501) and "chat/completions" not in urlsplit(r.url).path:
        raise Anfragefehler(f"{fall.id}: the server answered {r.status_code}: {servermeldung(text, r.status_code)}; "
                            f"{ohne_geheimnis(r.url)} takes no POST of a chat completion: give the endpoint, "
                            "such as http://host:port/v1/chat/completions (or the base URL ending in /v1)")
    if r.status_code == 501:
        raise Anfragefehler(f"{fall.id}: the server answered 501 ({servermeldung(text, r.status_code)}): "
                            f"{ohne_geheimnis(r.url)} does not take a POST; check --url")
    if not 200 <= r.status_code < 300:
        meldung = f"{fall.id}: the server answered {r.status_code}: {servermeldung(text, r.status_code)}"
        if r.status_code not in RETRY_STATUS and not (r.status_code == 413 and wartezeit(r) is not None):
            raise Anfragefehler(meldung)  # a 413 that names a wait is a server busy for now
        return meldung[len(fall.id) + 2:]
    if strom and ist_strom(r):
        fehler = next((d for d in sse_daten(text) if '"error"' in d), None)
        return (f"the stream ended in an error event ({mal(versuche, 'attempt')}): {servermeldung(fehler)}" if fehler
                else f"the stream held no chat completion ({mal(versuche, 'attempt')})")
    if ist_strom(r):
        raise Anfragefehler(f"{fall.id}: the server answered with a stream (SSE), not one chat completion; "
                            "the bench asks for one only with --stream, so the server or a proxy forces it")
    return f"the server answered {r.status_code} but not with a chat completion ({mal(versuche, 'attempt')}): " \
           f"{servermeldung(text)}"


def servermeldung(text, status=None):
    """The server's own message from each real error shape, plus a hint."""
    meldung = None
    try:
        body = json_laden(text, DECODER)
    except ValueError:
        body = None
    if isinstance(body, dict):
        fehler = body.get("error")
        if isinstance(fehler, dict) and fehler.get("message"):
            meldung = str(fehler["message"])       # OpenAI, vLLM >= 0.10.1, llama.cpp, Ollama
        elif isinstance(fehler, str) and fehler:
            meldung = fehler                       # TGI, Ollama's native shape
        elif body.get("message") or body.get("detail"):
            meldung = str(body.get("message") or body.get("detail"))  # older vLLM, SGLang, FastAPI
    if meldung is None:  # plain text or HTML: its first line that says something
        zeilen = [z.strip() for z in re.sub(r"<[^<>]*>", "\n", text[:100_000]).splitlines() if z.strip()]
        meldung = zeilen[0] if zeilen else "(empty body)"
    meldung = " ".join(meldung[:1000].split())[:300]
    for muster, hinweis in HINWEISE:
        if re.search(muster, meldung, re.I):
            return f"{meldung} ({hinweis})"
    return f"{meldung} ({KEY_HINWEIS})" if status == 401 else meldung


def grund(e):
    """The innermost reason of a requests exception, in one line."""
    if isinstance(e, ZuGross):
        return str(e)
    if isinstance(e, requests.exceptions.ContentDecodingError):
        return f"the body could not be decoded as its Content-Encoding says ({' '.join(str(e).split())[:200]})"
    if isinstance(e, requests.exceptions.ChunkedEncodingError):
        return f"the body was cut off ({' '.join(str(e).split())[:200]})"
    innen = e.args[0] if e.args and not isinstance(e.args[0], str) else e
    innen = getattr(innen, "reason", None) or innen  # urllib3's MaxRetryError carries the cause
    return " ".join(f"{type(innen).__name__}: {innen}".split())[:300]

# ---------------------------------------------------------------------------
# Reading calls out of an answer: native tool_calls, then text forms
# ---------------------------------------------------------------------------


MISTRAL_ARGS = re.compile(r"\s*([A-Za-z_][\w.-]*)\s*(?:\[CALL_ID\]\s*\w+\s*)?\[ARGS\]")
SONDERTOKEN = re.compile(r"<\|(?:eom_id|eot_id|end|im_end)\|>|</s>")
FREMDE_MARKEN = ("<|im_start|>", "<|im_end|>", "<start_of_turn>", "<end_of_turn>", "<|eot_id|>", "<|start_header_id|>",
                 "</s>")  # a chat template's turn markers (ChatML's, Gemma's, Llama 3's, the end of a sequence):
# written as text, the model never saw its own end-of-turn token, so the template is not the model's
NAME_IM_TEXT = re.compile(r'"name"\s*:\s*"([^"]*)"')
AUFRUF_IN_PROSA = re.compile(r'\[\s*\{\s*"name"|\{\s*"name"')
# subtle: every pattern that reads what a server sends is linear; the rest is str.find
# and json.JSONDecoder.raw_decode, so a hostile answer grades in time linear in its length


NATIV = "tool_calls"  # the source of a call the server sent in tool_calls; a text call's is the form it was written in


def lies_aufrufe(nachricht, typen=None):
    """Return (calls, form); a call is {"name": str|None, "args": dict|None, "quelle": NATIV or the text form it was
    written in (schreibform)}, a malformed one with what was written (geschrieben, 80 characters at most). form: None
    (no call), 'nativ', 'parser' (text in a form a server's parser reads when on), 'eigen' (a ``` fence or JSON in
    prose: no parser reads it), 'versuch' (functions.NAME: and nothing after), or 'teilweise' (tool_calls and more
    calls as text in a parser's form: a parser that stopped after the first). Every call the model wrote is read,
    the native ones first; a fence beside tool_calls stays 'eigen'."""
    roh = native_rohe(nachricht)
    nativ = [dict(nativer_aufruf(c), quelle=NATIV) for c in roh]
    for c, r in zip(nativ, roh):
        if c["args"] is None:  # what stood where its arguments belong: a call {"function": true} is shown as true
            f = r.get("function") if isinstance(r, dict) else r
            c["geschrieben"] = kurz(str(f.get("arguments") if isinstance(f, dict) else f), 80)
    denkfrei = ohne_denken(inhalt(nachricht)).strip()
    text, form = text_aufrufe(denkfrei, typen)
    text = weitere(text, nativ)
    if not text:
        return nativ, "nativ" if nativ else None
    quelle, gezeigt = schreibform(denkfrei, form), kurz(denkfrei.replace("\n", " "), 80)
    for c in text:
        c["quelle"] = quelle
        if c["args"] is None:
            c["geschrieben"] = gezeigt
    return nativ + text, "teilweise" if nativ and form == "parser" else form


def schreibform(text, form):
    """The form text calls were written in, as the diagnosis names it (text: without reasoning, stripped)."""
    if HANDLER.match(text):
        return "functions.NAME:" if form != "versuch" else "functions.NAME: with nothing after it"
    familie = familienform(text)
    if familie:
        return familie.zeichen
    tag = next((t for t in TAG_FORMEN if t in text), None)
    if tag:
        return tag
    if form == "eigen":
        return "a ``` fence" if "```" in text else "JSON in prose"
    return "[f(a=1)]" if PYTHONISCH.match(text) else "bare JSON"


def aufruf_kern(c):
    """A call as it is compared and executed: its name and arguments, not where it came from."""
    return {"name": c["name"], "args": c["args"]}


def weitere(text, nativ):
    """The text calls that are not a copy of a native one: a server that echoes the raw call into
    content beside tool_calls lost nothing, and the model wrote it once."""
    offen = [aufruf_kern(c) for c in nativ]
    rest = []
    for c in text:
        if c in offen:
            offen.remove(c)
        else:
            rest.append(c)
    return rest


def native_rohe(nachricht):
    """The calls as the server sent them in tool_calls (or the pre-tools function_call), as a list."""
    roh = nachricht.get("tool_calls") or []
    if not roh and isinstance(nachricht.get("function_call"), dict):
        roh = [{"function": nachricht["function_call"]}]  # the pre-tools OpenAI shape
    return roh if isinstance(roh, list) else [roh]


def nativer_aufruf(c):
    f = c.get("function") if isinstance(c, dict) else None
    if not isinstance(f, dict) or not isinstance(f.get("name"), str):
        return {"name": None, "args": None}
    return {"name": f["name"], "args": lies_args(f.get("arguments"))}


def lies_args(arguments):
    """Arguments as a dict; None when they do not parse to a JSON object. Arguments encoded twice (a JSON string
    holding the object's JSON text) are unwrapped once: graded as meant, counted in protokoll."""
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}  # llama.cpp and others send "" for a call without arguments
    for _ in range(2):
        if not isinstance(arguments, str):
            break
        try:
            arguments = json_laden(arguments)
        except ValueError:
            return None
    return kappe(arguments) if isinstance(arguments, dict) else None


PROTOKOLL = ("argumente_objekt", "argumente_doppelt", "aufrufe_verloren", "id_fehlt", "geparst_abgelehnt")


def protokoll_von(nachricht, finish):
    """What of an answer's tool_calls breaks the OpenAI shape, by kind ({kind: count}, zeros left out):
    arguments as an object or encoded twice, finish_reason tool_calls without a call, a call
    without an id or with one another call of the answer has. None of it is the model's."""
    arten, ids = collections.Counter(), collections.Counter()
    roh = nachricht.get("tool_calls") or []
    roh = roh if isinstance(roh, list) else [roh]
    for c in roh:
        f = c.get("function") if isinstance(c, dict) else None
        args = f.get("arguments") if isinstance(f, dict) else None
        arten["argumente_objekt"] += isinstance(args, dict)
        arten["argumente_doppelt"] += doppelt_kodiert(args)
        ids[c.get("id") if isinstance(c, dict) and isinstance(c.get("id"), str) else ""] += 1
    arten["id_fehlt"] = sum(zahl for i, zahl in ids.items() if not i.strip() or zahl > 1)
    arten["aufrufe_verloren"] = finish == "tool_calls" and not roh and not nachricht.get("function_call")
    return {art: int(arten[art]) for art in PROTOKOLL if arten[art]}


def doppelt_kodiert(arguments):
    """Is this a JSON string whose value is a string holding a JSON object (llama.cpp #19520)?"""
    if not isinstance(arguments, str):
        return False
    try:
        innen = json_laden(arguments)
        return isinstance(innen, str) and isinstance(json_laden(innen), dict)
    except ValueError:
        return False


def json_wert(text, pos=0, decoder=RUF_DECODER):
    """(value, end) of the JSON value at text[pos:]; ValueError if there is none.
    Too deep for the parser counts as not JSON: a malformed call, never a crash."""
    try:
        return decoder.raw_decode(text, pos)
    except RecursionError:
        raise ValueError("nested too deep") from None


def json_laden(text, decoder=RUF_DECODER):
    """The JSON value that is all of text (json.loads); too deep counts as not JSON."""
    wert, ende = json_wert(text, len(text) - len(text.lstrip()), decoder)
    if text[ende:].strip():
        raise ValueError("extra data after the JSON value")
    return wert


def kappe(wert, grenze=TIEFE):
    """The value, with every container nested deeper than `grenze` replaced by ZU_TIEF.
    Iterative, so a deep value cannot exhaust the stack here or when it is saved, printed or compared later."""
    stapel = [(wert, 1)] if isinstance(wert, (dict, list)) else []
    while stapel:
        behaelter, tiefe = stapel.pop()
        for k in (range(len(behaelter)) if isinstance(behaelter, list) else list(behaelter)):
            if isinstance(behaelter[k], (dict, list)):
                if tiefe >= grenze:
                    behaelter[k] = ZU_TIEF
                else:
                    stapel.append((behaelter[k], tiefe + 1))
            elif type(behaelter[k]) is float and not math.isfinite(behaelter[k]):
                behaelter[k] = str(behaelter[k])  # NaN and Infinity, which strict JSON has no word for
    return wert


def inhalt(nachricht):
    """The message's text: a string, the text parts of a content list, or a refusal (OpenAI)."""
    c = nachricht.get("content")
    if isinstance(c, list):
        c = "".join(t.get("text", "") for t in c if isinstance(t, dict) and isinstance(t.get("text"), str))
    c = c if isinstance(c, str) else ""
    return c if c.strip() or not isinstance(nachricht.get("refusal"), str) else nachricht["refusal"]


@functools.lru_cache(maxsize=2)
def ohne_denken(text):
    """The text without its reasoning, as each family delimits it (DENKEN: <think> of Qwen3 and DeepSeek-R1,
    Harmony's analysis channel, Gemma 4's thought channel, Magistral's [THINK]), an unclosed block cut off.
    subtle: one answer's grading asks it three times of one text (the calls, the reason, the first line): kept for
    the last two texts, each a scan of a 5 MB answer saved twice."""
    text = DENKEN.sub("", text) if denk_marke(text) else text
    return text.rsplit("</think>", 1)[1] if "</think>" in text else text  # the template opened <think> itself


DENKEN = re.compile(r"<think>.*?(?:</think>|\Z)|(?:<\|start\|>assistant)?<\|channel\|>analysis<\|message\|>.*?"
                    r"(?:<\|end\|>|\Z)|<\|channel>.*?(?:<channel\|>|\Z)|\[THINK\].*?(?:\[/THINK\]|\Z)", re.S)
DENK_MARKEN = ("<think>", "</think>", "<|channel|>analysis", "<|channel>", "[THINK]")  # reasoning left in the
# content: the server's reasoning parser is off (denken_im_text)


def denk_marke(text):
    """Does the text hold a reasoning delimiter? subtle: a find per mark, not one regex: a 5 MB text of '[' made
    the regex try [THINK] at every character, ten times the time of the whole grading."""
    return any(m in text for m in DENK_MARKEN)


def denken_im_text(nachricht):
    """Does the content hold a family's reasoning delimiters: the server's reasoning parser was not applied?"""
    return denk_marke(inhalt(nachricht))


def text_aufrufe(text, typen=None):
    """Calls written as text, and their form: 'parser' for the forms a server's tool-call
    parser reads (it was off), 'eigen' for those no parser reads (the model's own), 'versuch'
    for a handler's call syntax whose arguments are missing (functions.NAME: and nothing after:
    a call attempt, never an answer in words; whose the lost arguments are cannot be told)."""
    text = SONDERTOKEN.sub("", text).strip()
    handler = HANDLER.match(text)
    familie = None if handler else familienform(text)
    if familie:  # a family's own form, its calls read as its parser reads them
        return familie.lies(text, typen), "parser"
    if handler:  # llama-cpp-python's functionary handler, and the harmony format's to=functions.NAME
        rest = text[handler.end():].strip()
        if not rest:
            return [{"name": handler.group(1), "args": None}], "versuch"
        try:
            args = json_laden(rest)
        except ValueError:
            args = None
        return [{"name": handler.group(1), "args": kappe(args) if isinstance(args, dict) else None}], "parser"
    pythonisch = pythonische_aufrufe(text) if PYTHONISCH.match(text) else []
    if pythonisch:
        return pythonisch, "parser"
    if "[TOOL_CALLS]" in text:  # Mistral
        return mistral_aufrufe(text.split("[TOOL_CALLS]", 1)[1]), "parser"
    if "<|python_tag|>" in text:  # Llama 3.x, several joined by "; "
        return json_aufrufe(text.split("<|python_tag|>", 1)[1], True), "parser"
    if not text.startswith("```"):
        aufrufe = json_aufrufe(text, False)  # bare JSON: Llama's and the generic parsers read it
        if aufrufe or sieht_aus_wie_aufruf(text):
            return aufrufe, "parser"
    return eigene_aufrufe(text), "eigen"


# ---------------------------------------------------------------------------
# Each family's own call form, as its chat template writes it and its engines' tool parsers read it
# ---------------------------------------------------------------------------


class Aufrufform(typing.NamedTuple):
    """One model family's call form, one row of AUFRUFFORMEN: its mark in a text (the special tokens kept, as a
    server whose parser is off returns them) and how schreibform names the form, the name --lesen gives it, how its
    complete calls are read (text, typen: tool -> parameter -> schema type; a malformed or cut call is {"name",
    "args": None}), and the tool-call parser that reads it in vLLM and in SGLang."""
    zeichen: str
    name: str
    lies: typing.Callable
    vllm: str = None
    sglang: str = None


def roher_wert(text, typ=None):
    """A value a family writes as raw text (Qwen3-Coder's parameters, GLM's arg_value): typed by the tool's schema
    where it says a type other than string, as vLLM's parsers type it; a list or an object also without one."""
    if typ == "string" or typ is None and not text.lstrip().startswith(("[", "{")):
        return text
    try:
        return json_laden(text)
    except ValueError:
        return text


def mit_args(name, text):
    """A call of name whose arguments are the JSON object text is, whole; malformed (args None) otherwise."""
    try:
        args = json_laden(text) if text.strip() else {}
    except ValueError:
        args = None
    return {"name": name, "args": kappe(args) if isinstance(args, dict) else None}


def zwischen(text, anfang, ende):
    """The pieces of text that stand after each `anfang`, each up to its `ende`: (piece, whether ende came)."""
    for teil in text.split(anfang)[1:]:
        stueck, da, _ = teil.partition(ende)
        yield stueck, bool(da)


def xml_aufrufe(text, typen=None):
    """Qwen3-Coder: <function=N><parameter=K>V</parameter>...</function>, each value raw text typed by its schema;
    and Llama 3.1's <function=N>{JSON}</function>."""
    aufrufe = []
    for block, ganz in zwischen(text, "<function=", "</function>"):
        name, da, rumpf = block.partition(">")
        name = name.strip()
        if not (ganz and da and name):
            aufrufe.append({"name": name or None, "args": None})
        elif rumpf.strip().startswith("{"):
            aufrufe.append(mit_args(name, rumpf))
        else:
            args, typ = {}, (typen or {}).get(name, {})
            for p, p_ganz in zwischen(rumpf, "<parameter=", "</parameter>"):
                k, p_da, v = p.partition(">")
                if not (p_ganz and p_da):
                    args = None
                    break
                args[k.strip()] = roher_wert(v.removeprefix("\n").removesuffix("\n"), typ.get(k.strip()))
            aufrufe.append({"name": name, "args": args})
    return aufrufe


def glm_aufrufe(text, typen=None):
    """GLM 4.5-4.7: <tool_call>N<arg_key>K</arg_key><arg_value>V</arg_value>...</tool_call>, strings raw and other
    values JSON; a call without arguments is its name alone."""
    aufrufe = []
    for block, ganz in zwischen(text, "<tool_call>", "</tool_call>"):
        name, *paare = block.split("<arg_key>")
        name, args = name.strip(), {}
        typ = (typen or {}).get(name, {})
        for paar in paare:
            k, da, rest = paar.partition("</arg_key>")
            v, zu, danach = rest.strip().removeprefix("<arg_value>").partition("</arg_value>")
            if not (da and zu and rest.strip().startswith("<arg_value>")) or danach.strip():
                args = None
                break
            args[k.strip()] = roher_wert(v, typ.get(k.strip()))
        ok = ganz and args is not None and re.fullmatch(r"[A-Za-z_][\w.-]*", name)
        aufrufe.append({"name": name or None, "args": args if ok else None})
    return aufrufe


def tool_call_aufrufe(text, typen=None):
    """<tool_call> blocks: Hermes' JSON (Qwen3, Qwen2.5), or GLM's <arg_key> form, or Qwen3-Coder's <function=>."""
    if "<function=" in text:
        return xml_aufrufe(text, typen)
    bloecke = [b for b, _ in zwischen(text, "<tool_call>", "</tool_call>")]
    if "<arg_key>" in text or bloecke and all(re.fullmatch(r"\s*[A-Za-z_][\w.-]*\s*", b) for b in bloecke):
        return glm_aufrufe(text, typen)
    # a tag with no call after it is no call attempt: prose that names `<tool_call>`, a template's instruction
    # repeated ("within <tool_call></tool_call> XML tags")
    return [a for block in bloecke if block.strip()[:1] in ("{", "[") for a in json_aufrufe(block, True)]


DEEPSEEK = ("<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>")  # U+FF5C and U+2581, as its tokens are


def deepseek_aufrufe(text, typen=None):
    """DeepSeek V3: <｜tool▁call▁begin｜>function<｜tool▁sep｜>N then a ```json fence; V3.1: N<｜tool▁sep｜>{JSON};
    each up to <｜tool▁call▁end｜>."""
    anfang, sep, ende = DEEPSEEK
    aufrufe = []
    for block, ganz in zwischen(text, anfang, ende):
        links, da, rechts = block.partition(sep)
        if links.strip() == "function":  # V3: the name on the line after the separator, then a fence
            links, _, rechts = rechts.partition("\n")
            rechts = re.sub(r"^\s*```(?:json)?|```\s*$", "", rechts.strip())
        name = links.strip() or None
        aufrufe.append(mit_args(name, rechts) if ganz and da and name else {"name": name, "args": None})
    return aufrufe


DSML = re.compile(r"[｜|]{1,2}DSML[｜|]{1,2}")  # some servers write its bars as ASCII, doubled


def dsml_aufrufe(text, typen=None):
    """DeepSeek V3.2 and V4's DSML: <｜DSML｜invoke name="N"><｜DSML｜parameter name="K" string="true">V
    </｜DSML｜parameter>...</｜DSML｜invoke>; string="false" values are JSON."""
    aufrufe = []
    for block, ganz in zwischen(DSML.sub("｜DSML｜", text), '<｜DSML｜invoke name="', "</｜DSML｜invoke>"):
        name, da, rumpf = block.partition('">')
        args = {} if ganz and da else None
        for p, p_ganz in zwischen(rumpf, '<｜DSML｜parameter name="', "</｜DSML｜parameter>"):
            m = re.match(r'([^"]*)"(?:\s+string="(true|false)")?\s*>', p)
            if args is None or not (m and p_ganz):
                args = None
                break
            args[m.group(1)] = roher_wert(p[m.end():], "json" if m.group(2) == "false" else "string")
        aufrufe.append({"name": name or None, "args": args})
    return aufrufe


def kimi_aufrufe(text, typen=None):
    """Kimi K2: <|tool_call_begin|>functions.N:0<|tool_call_argument_begin|>{JSON}<|tool_call_end|>."""
    aufrufe = []
    for block, ganz in zwischen(text, "<|tool_call_begin|>", "<|tool_call_end|>"):
        kopf, da, args = block.partition("<|tool_call_argument_begin|>")
        name = re.sub(r"^functions\.|:\d+$", "", kopf.strip()) or None
        aufrufe.append(mit_args(name, args) if ganz and da and name else {"name": name, "args": None})
    return aufrufe


def kimi3_aufrufe(text, typen=None):
    """Kimi's successor: <|open|>call tool="N"<|sep|><|open|>argument key="K" type="string"<|sep|>V
    <|close|>argument<|sep|>...<|close|>call<|sep|>; a value of another type than string is JSON."""
    aufrufe = []
    for block, ganz in zwischen(text, "<|open|>call", "<|close|>call"):
        m = re.match(r'[^<]*?tool="([^"]*)"[^<]*<\|sep\|>', block)
        args = {} if ganz and m else None
        for k, typ, v in re.findall(r'<\|open\|>argument key="([^"]*)"(?: type="([^"]*)")?[^<]*<\|sep\|>(.*?)'
                                    r'<\|close\|>argument', block, re.S) if args is not None else []:
            args[k] = roher_wert(v, "string" if typ in ("", "string") else "json")
        aufrufe.append({"name": m.group(1) if m else None, "args": args})
    return aufrufe


HARMONY_KOPF = re.compile(r"to=functions\.([\w.\-]+)((?:\s|<\|(?:channel|constrain|message)\|>|commentary|json)*)")


def harmony_aufrufe(text, typen=None):
    """gpt-oss (Harmony): ... to=functions.N<|channel|>commentary <|constrain|>json<|message|>{JSON}, the recipient
    before or after the channel, <|constrain|> perhaps missing, calls joined by <|call|>; stripped of its tokens,
    'commentary to=functions.N json{JSON}'."""
    aufrufe = []
    for m in HARMONY_KOPF.finditer(text):
        try:
            args, _ = json_wert(text, m.end())
        except ValueError:
            args = None
        aufrufe.append({"name": m.group(1), "args": kappe(args) if isinstance(args, dict) else None})
    return aufrufe


GEMMA_TEXT = '<|"|>'  # Gemma 4's string quote, a token of its own


def gemma_aufrufe(text, typen=None):
    """Gemma 4: <|tool_call>call:N{key:<|"|>text<|"|>,n:1.5e-05}<tool_call|>: keys bare, strings between <|"|>,
    the rest JSON's numbers, true, false, objects and lists; read by writing it as JSON."""
    aufrufe = []
    for block, ganz in zwischen(text, "<|tool_call>", "<tool_call|>"):
        m = re.match(r"\s*call:([\w.\-]+)\s*(\{.*\})\s*$", block, re.S) if ganz else None
        try:
            args = json_laden(gemma_als_json(m.group(2))) if m else None
        except ValueError:
            args = None
        aufrufe.append({"name": m.group(1) if m else (re.findall(r"call:([\w.\-]+)", block) or [None])[0],
                        "args": kappe(args) if isinstance(args, dict) else None})
    return aufrufe


def gemma_als_json(text):
    """Gemma 4's arguments as JSON text: each <|"|>...<|"|> a JSON string, each bare key quoted."""
    teile, rest = [], text
    while GEMMA_TEXT in rest:
        vorher, _, rest = rest.partition(GEMMA_TEXT)
        inhalt_, da, rest = rest.partition(GEMMA_TEXT)
        if not da:
            raise ValueError("an open string")
        teile += [re.sub(r"([{,]\s*)([A-Za-z_][\w.\-]*)\s*:", r'\1"\2":', vorher), json.dumps(inhalt_)]
    return "".join(teile) + re.sub(r"([{,]\s*)([A-Za-z_][\w.\-]*)\s*:", r'\1"\2":', rest)


def llama4_aufrufe(text, typen=None):
    """Llama 4: [f(a=1), g(b='x')] inside <|python_start|>...<|python_end|>."""
    rumpf = text.split("<|python_start|>", 1)[1].split("<|python_end|>", 1)[0].strip()
    return pythonische_aufrufe(rumpf) if PYTHONISCH.match(rumpf) else [{"name": None, "args": None}]


AUFRUFFORMEN = (  # each family's form, weighed in this order: the first whose mark a text holds reads it
    Aufrufform("<function=", "qwen3_xml", xml_aufrufe, "qwen3_xml", "qwen3_coder"),
    Aufrufform("<arg_key>", "glm", glm_aufrufe, "glm45", "glm45"),
    Aufrufform("<tool_call>", "hermes", tool_call_aufrufe, "hermes", "qwen25"),
    Aufrufform("<|tool_call_begin|>", "kimi", kimi_aufrufe, "kimi_k2", "kimi_k2"),
    Aufrufform("<|open|>call", "kimi", kimi3_aufrufe, "kimi_k3"),
    Aufrufform(DEEPSEEK[0], "deepseek", deepseek_aufrufe, "deepseek_v3 or deepseek_v31", "deepseekv3 or deepseekv31"),
    Aufrufform("DSML", "deepseek", dsml_aufrufe, "deepseek_v32", "deepseekv32"),
    Aufrufform("<|tool_call>", "gemma4", gemma_aufrufe, "gemma4"),
    Aufrufform("<|python_start|>", "llama", llama4_aufrufe, "llama4_pythonic", "pythonic"),
    Aufrufform("to=functions.", "harmony", harmony_aufrufe, "openai", "gpt-oss"))


@functools.lru_cache(maxsize=2)  # asked twice of one text: its calls, then the name of their form
def familienform(text):
    """The row of AUFRUFFORMEN whose mark the text holds first in that order, or None. A Harmony recipient opening
    the text alone is the handler's form (HANDLER), read before."""
    return next((f for f in AUFRUFFORMEN if f.zeichen in text and not (f.name == "harmony" and HANDLER.match(text))),
                None)


def unlesbar_von(b):
    """(form, the first 80 characters it was read from) for each malformed call of a graded output: a call
    in tool_calls whose arguments do not parse shows them as sent; one read from text shows the text."""
    return [(c["quelle"], c["geschrieben"]) for c in b.aufrufe if c["args"] is None and "geschrieben" in c]


def textform(aufrufe):
    """The form text calls were written in, as the diagnosis names it (aufrufe: as lies_aufrufe reads them)."""
    return next((c["quelle"] for c in aufrufe if c["quelle"] != NATIV), None)


HANDLER = re.compile(r"(?:to=)?functions\.([A-Za-z_][\w-]*)(?::\d+(?=\s*\{))?(?:\s*<\|[a-z]+\|>)?\s*:?")
# Kimi K2's functions.NAME:0{...} with its tokens stripped, too
PYTHONISCH = re.compile(r"\[?\s*[A-Za-z_]\w*\(")  # [get_contact(contact_id="...")]: vLLM's pythonic parser
PYTHONISCH_HOECHSTENS = 20_000  # characters: a longer text is no pythonic call list a parser would take


def pythonische_aufrufe(text):
    """Calls in the pythonic form, each argument a Python literal; where it does not parse so, one
    malformed call if the name is a tool's (snake_case: get_contact), else none (words, "Hello(world)")."""
    name = re.search(r"[A-Za-z_]\w*", text).group()
    try:
        if len(text) > PYTHONISCH_HOECHSTENS:
            raise ValueError("too long")
        import ast  # here: only an answer in the pythonic form needs it, and every run paid for its import
        baum = ast.parse(text, mode="eval").body
        aufrufe = baum.elts if isinstance(baum, (ast.List, ast.Tuple)) else [baum]
        if not aufrufe or not all(isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and not c.args and
                                  all(k.arg for k in c.keywords) for c in aufrufe):
            raise ValueError("not calls")
        gelesen = [{"name": c.func.id, "args": {k.arg: ast.literal_eval(k.value) for k in c.keywords}} for c in aufrufe]
        # subtle: a literal JSON has no word for (a set, bytes, 1j) is no argument a client could take
        return [dict(c, args=kappe(json.loads(json.dumps(c["args"], allow_nan=False)))) for c in gelesen]
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        return [{"name": name, "args": None}] if "_" in name.strip("_") else []


def eigene_aufrufe(text):
    """Calls in ``` fences, or else the first call-shaped JSON in prose: forms of the model's own."""
    bloecke = [(i[4:] if i.startswith("json") else i).strip() for i in re.findall("```(.*?)```", text, re.S)]
    if bloecke:
        return [a for b in bloecke for a in json_aufrufe(b, False)]
    m = AUFRUF_IN_PROSA.search(text) if '"name"' in text else None  # the find first: a long text without is quick
    if not m:
        return []
    try:
        wert, _ = json_wert(text, m.start())
    except ValueError:
        return []  # prose that breaks off inside braces is a text answer
    return als_aufrufe([wert], False)


def mistral_aufrufe(rest):
    rest = rest.strip()
    if rest.startswith(("[", "{")):
        return json_aufrufe(rest, True)
    aufrufe = []  # the newer form: name[ARGS]{...}, each call after a [TOOL_CALLS] of its own (v11) or not
    while rest:
        rest = rest.removeprefix("[TOOL_CALLS]")
        m = MISTRAL_ARGS.match(rest)
        if not m:
            break
        try:
            args, ende = json_wert(rest, m.end())
        except ValueError:
            return aufrufe + [{"name": m.group(1), "args": None}]
        aufrufe.append({"name": m.group(1), "args": lies_args(args)})
        rest = rest[ende:].lstrip()
    return aufrufe or [{"name": None, "args": None}]


def sieht_aus_wie_aufruf(text):
    """Does the text open like a call: {"name" or [{"name", whitespace anywhere between?"""
    t = text.lstrip()
    t = t[1:].lstrip() if t.startswith("[") else t
    return t.startswith("{") and t[1:].lstrip().startswith('"name"')


def json_aufrufe(text, getaggt):
    """Calls from a run of JSON values; a tagged form that does not parse whole is one malformed call. Untagged, the
    call-shaped values the text opens with are the calls, whatever follows them (prose, a result the model wrote
    back, a cut); a text that only starts like one ({"name": ...) and breaks off is a malformed attempt."""
    werte, ganz = json_folge(text.strip())
    aufrufe = als_aufrufe(werte, getaggt) if ganz or not getaggt else []
    if not aufrufe and not getaggt:  # the call-shaped values it opens with: the first that is no call ends them
        aufrufe = als_aufrufe(werte[:next((i for i, w in enumerate(werte) if not als_aufrufe([w], False)), 0)], False)
    versuch, m = getaggt or sieht_aus_wie_aufruf(text), NAME_IM_TEXT.search(text)
    return aufrufe or ([{"name": m.group(1) if m else None, "args": None}] if versuch else [])


def als_aufrufe(werte, getaggt):
    """Calls from parsed JSON values; untagged, only when every value is call-shaped."""
    flach = [w for wert in werte for w in (wert if isinstance(wert, list) else [wert])]
    if not getaggt and not (flach and all(isinstance(w, dict) and isinstance(w.get("name"), str)
                                          and ("arguments" in w or "parameters" in w) for w in flach)):
        return []  # a text answer that happens to be JSON
    return [json_aufruf(w) for w in flach]


def json_aufruf(w):
    if not isinstance(w, dict) or not isinstance(w.get("name"), str):
        return {"name": None, "args": None}
    return {"name": w["name"], "args": lies_args(w.get("arguments", w.get("parameters")))}


def json_folge(text, trenner=re.compile(r"[ \t\r\n;,]*")):
    """JSON values separated by whitespace, ';' or ',' from the start: (those that parse, whether all of it did)."""
    werte, pos = [], 0
    while True:
        pos = trenner.match(text, pos).end()
        if pos == len(text):
            return werte, True
        try:
            wert, pos = json_wert(text, pos)
        except ValueError:
            return werte, False
        werte.append(wert)


def schleift(nachricht):
    """Does the text end in one piece of SCHLEIFE_ZEICHEN characters or more repeated three times or more, a piece
    that says something (a model looping until its token limit)? Blank form lines, rulers and a table's empty rows
    are no piece. subtle: a periodic text equals itself shifted by its period; the piece being cut, the test
    compares the last two periods with the two before them, and a short period repeats as its multiples."""
    text = next((t for t in (inhalt(nachricht), nachricht.get("reasoning_content"), nachricht.get("reasoning"))
                 if isinstance(t, str) and t), "")[-1200:]  # whatever the model wrote, in any field, a string
    return any(text[-3 * p:-p] == text[-2 * p:] and len(WORTLOS.sub("", text[-p:])) >= SCHLEIFE_WORTZEICHEN
               for p in range(SCHLEIFE_ZEICHEN, min(400, len(text) // 3) + 1))


SCHLEIFE_ZEICHEN = 60  # a repeated piece shorter than this is no loop; a short one repeats as its multiples
SCHLEIFE_WORTZEICHEN = 20  # letters and digits a piece holds at least: whitespace, rulers and table borders say nothing
WORTLOS = re.compile(r"[\W_]+")


def zahl_oder_none(usage, feld):
    """A token count from usage, or None for anything no server measured: not a whole
    number, 0 or less, above 10^9 (so no sum of counts can overflow)."""
    x = usage.get(feld) if isinstance(usage, dict) else None
    return x if type(x) is int and 0 < x <= TOKENS_HOECHSTENS else None


def erste_zeile(nachricht, laenge=100):
    """What the model wrote, its first line that says something, cut at `laenge` (for the failed-case list)."""
    zeile = next((z.strip() for z in ohne_denken(inhalt(nachricht)).splitlines() if z.strip()), "")
    return zeile if len(zeile) <= laenge else zeile[:laenge] + "..."


# ---------------------------------------------------------------------------
# The saved run: ergebnisse/<tag>.jsonl, a settings line, then one line per output
# ---------------------------------------------------------------------------


class Ausgabe(typing.NamedTuple):
    """One output as it is read back: who it is, its grade, its second turn's, what it cost; zeile is the
    line as saved (what came, never a grade), which only the saved run's own functions read."""
    id: str
    stufe: str
    lauf: int
    sitzung: int
    ende: float
    note: Note  # the question's answer graded, or an S7 job's
    zeile: dict
    latenz_s: float  # the seconds its question took (an S7 job: all its steps)
    usage: dict  # the question's token counts (an S7 job: its steps', added up)
    anfragen: tuple  # (seconds, usage) of each request that came back, cross-checks left out: its costs
    verworfen: int  # choices beyond the one graded, over its requests
    mit_nachfrage: bool = False  # the run asks S5's second turn here
    nachfrage: Note = None  # that turn graded; None where it never came
    nachfrage_fehlt: bool = False  # that turn failed when the first was saved: still to be asked
    frueher: tuple = ()  # the draws asked before this one (--klaeren), graded as outputs, newest first

    @property
    def noten(self):
        """Its answers graded: the question's, then S5's second turn's where it came."""
        return (self.note, self.nachfrage) if self.nachfrage else (self.note,)


def bewerte_gespeichert(fall, a, umbenennung=None, nachfrage=False, welt_salz=None, grenze=None, ziehung=None):
    """A saved output graded from its turns, as its stage's row grades it (bewerte_frage, bewerte_job), with what
    it cost; the draws asked before it (frueher) graded alike."""
    fragen = [z for z in a["zuege"] if z["zweck"] in (FRAGE, SCHRITT) and "fehlt" not in z]
    anfragen = [z for z in a["zuege"] if z["zweck"] in ANFRAGEN and "fehlt" not in z]
    frueher = tuple(bewerte_gespeichert(fall, {**a, "zuege": f, "frueher": []}, umbenennung, nachfrage, welt_salz,
                                        grenze, ziehung) for f in a.get("frueher") or ())
    roh = Ausgabe(**{f: a[f] for f in ("id", "stufe", "lauf", "sitzung", "ende")}, note=None, zeile=a,
                  latenz_s=sum(z["latenz_s"] for z in fragen), usage=fragen[0]["usage"], frueher=frueher,
                  verworfen=sum(z["verworfen"] for z in anfragen),
                  anfragen=tuple((z["latenz_s"], z["usage"]) for z in anfragen))
    return fall.art.weise.bewerte(fall, a, roh, fragen, umbenennung, nachfrage, welt_salz, grenze, ziehung)


def bewerte_frage(fall, a, roh, fragen, umbenennung, nachfrage, welt_salz, grenze, ziehung):
    """One question's answer, with its stream's cross-checks, and (nachfrage) S5's reply where the run asked for
    one (None where it never came)."""
    teile = {}
    for z in a["zuege"]:  # each request with the cross-checks that follow it
        if z["zweck"] in ANFRAGEN:
            teile[z["zweck"]] = vorige = (z, [])
        else:
            vorige[1].append(z)
    mit_nachfrage = bool(nachfrage and fall.nachtrag is not None)
    z, pruefungen = teile.get(NACHFRAGE, ({"fehlt": None}, []))
    note = bewerte_zug(fall, *teile[FRAGE], umbenennung, grenze)
    return roh._replace(note=note, mit_nachfrage=mit_nachfrage, nachfrage_fehlt=z.get("fehlt") is not None,
                        nachfrage=None if not mit_nachfrage or "fehlt" in z or not gelungen(note) else  # held still
                        bewerte_zug(Fall(fall.id, erwartet=fall.danach), z, pruefungen, umbenennung, grenze))


def bewerte_zug(fall, z, pruefungen, umbenennung, grenze=None):
    """One turn graded against what fall expects, with its stream's cross-checks."""
    b = mit_gegenprobe(bewerte_ausgabe(fall, z["nachricht"], z["finish_reason"], umbenennung, z["usage"], grenze)
                       ._replace(**kennung_von(z)), z.get("strom"), pruefungen, umbenennung)
    if z.get("abgelehnt"):  # what the server refused to parse: graded as the text it was, an agent got an error
        b = b._replace(protokoll=dict(b.protokoll, geparst_abgelehnt=1))
    ohne = next((p for p in pruefungen if p["zweck"] == OHNE_STROM and "nachricht" in p), None)
    if ohne and hat_denken(z["nachricht"]) != hat_denken(ohne["nachricht"]):  # one of the two lost it
        b = b._replace(defekte=b.defekte + (DENKEN_NUR_EINMAL,))
    return b


DENKEN_NUR_EINMAL = "reasoning in one of the stream and the plain answer only"


def hat_denken(nachricht):
    return any(isinstance(nachricht.get(f), str) and nachricht[f].strip() for f in ("reasoning_content", "reasoning"))


def kennung_von(z):
    """A turn's Note fields of what answered it and of its print (for comparing two runs' answers)."""
    return {"wer": z.get("wer"), "abdruck": abdruck(z["nachricht"])}


def abdruck(nachricht):
    """(digest, call ids, characters) of a message: the digest of all it holds but its calls' ids, Python's hash of
    its strings (cheap on a 5 MB answer; compared within one process only), what tells answers the same to the
    letter, ids aside; the ids, which tell a cache that keeps them; and how much free text (content, reasoning) it
    holds, which a model at a temperature above 0 does not write twice alike, as it may its calls."""
    rohe = [c if isinstance(c, dict) else {} for c in native_rohe(nachricht)]
    teile = tuple((k, v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str))
                  for k, v in sorted(nachricht.items()) if k not in ("tool_calls", "function_call")) + tuple(
        (str(f.get("name")), f.get("arguments") if isinstance(f.get("arguments"), str) else json.dumps(
            f.get("arguments"), sort_keys=True, default=str)) for c in rohe for f in [c.get("function") or {}]
        if isinstance(f, dict))
    text = sum(len(v) for k, v in nachricht.items() if isinstance(v, str) and k != "role")
    return hash(teile), tuple(c.get("id") for c in rohe), text


SPEICHERFELDER = ("id", "stufe", "lauf", "sitzung", "ende", "zuege")  # what came, never a grade: a reader grades it
# A turn is one request's answer and what it was for (zweck): the question, S5's reply to the user's answer, an S7
# job's step (with the results the world sent back), and a stream's cross-checks, each after the turn it checks:
FRAGE, NACHFRAGE, SCHRITT, OHNE_STROM, NOCHMAL = "frage", "nachfrage", "schritt", "ohne_strom", "nochmal"
ANFRAGEN = (FRAGE, NACHFRAGE, SCHRITT)  # the requests a run's costs count; a cross-check is the bench's own
# Files before 2026-12 hold the first turn's fields in the line (with the grades aufrufe, treffer and offen, which
# reading ignores), S5's reply as zweite, a stream's cross-checks in strom.ohne_strom and S7's steps as verlauf.
NEUERE_FELDER = {"finish_reason": None, "verworfen": 0}  # absent from runs saved before they were


def als_zeile(wert):
    """One line of a results file. ASCII JSON: a lone surrogate a server sent (half an emoji)
    stays an escape, so every line is valid UTF-8 and reads back to the same value."""
    return (json.dumps(wert, ensure_ascii=True) + "\n").encode("ascii")


def lies_lauf(pfad, faelle):
    """Settings and graded outputs of a saved run; a half-written last line is dropped. A file without one complete
    line (killed before its settings were written) gives (None, [], 0): a fresh start."""
    try:
        daten = pfad.read_bytes()
    except OSError as e:
        raise Eingabefehler(f"{pfad}: cannot read ({e.strerror})")
    zeilen = daten.split(b"\n")
    werte, gueltig = [], 0  # gueltig: bytes up to the end of the last complete line
    for nr, roh in enumerate(zeilen, 1):
        if nr == len(zeilen):
            break  # subtle: the piece after the last newline is half a line of a killed process
        try:
            wert = json.loads(roh) if roh.strip() else None
        except (ValueError, RecursionError):
            raise Eingabefehler(f"{pfad}:{nr}: not JSON; the results file is damaged")
        if wert is not None:
            werte.append((nr, wert))
        gueltig += len(roh) + 1
    if not werte:
        return None, [], 0
    if not isinstance(werte[0][1], dict) or not isinstance(werte[0][1].get("einstellungen"), dict):
        raise Eingabefehler(f"{pfad}:1: not a results file of messen.py (no settings line)")
    e = werte[0][1]["einstellungen"]
    pruefe_einstellungszeile(pfad, werte[0][0], e)
    faelle_by_id = {f.id: f for f in faelle}
    ausgaben = {}  # (id, lauf) -> output; a later line (a second turn or a draw asked again) stands for it
    for nr, a in werte[1:]:
        a, alt = gelesene_ausgabe(pfad, nr, a, faelle_by_id, e), ausgaben.get((a.get("id"), a.get("lauf")))
        ausgaben[(a.id, a.lauf)] = a if alt is None else als_evidenz(a, alt, faelle_by_id[a.id], e)
    return e, list(ausgaben.values()), gueltig


def als_evidenz(a, alt, fall, e, ganz=False):
    """A later line for an output, with the earlier kept as evidence: no answer is thrown away. Only a second
    turn asked again continues the earlier line (whose second turn failed) from its first turn; an output asked
    again whole (ganz: known to be) holds the earlier turns in frueher already, or gets them here."""
    erste = [z for z in alt.zeile["zuege"] if z["zweck"] != NACHFRAGE]
    if alt.zeile["zuege"] in a.zeile.get("frueher", []) or not ganz and alt.nachfrage_fehlt and \
            a.zeile["zuege"][:len(erste)] == erste:
        return a
    zeile = dict(a.zeile, frueher=[alt.zeile["zuege"]] + alt.zeile.get("frueher", []) + a.zeile.get("frueher", []))
    return gelesene_ausgabe(None, None, zeile, {fall.id: fall}, e)


def pruefe_einstellungszeile(pfad, nr, e):
    """Every field of a settings line as EINSTELLUNGEN says; the first at fault is named with file:line."""
    beschaedigt(pfad, nr, next((f"{feld} {x.falsch}" for feld, x in EINSTELLUNGEN.items()
                                if feld in e or x.vorgabe is PFLICHT if not x.pruefe(e.get(feld))), None))


def gelesene_ausgabe(pfad, nr, a, faelle_by_id, e):
    """One saved output, checked against the run's settings (e) and graded again: the current grader decides."""
    fall = faelle_by_id.get(a.get("id")) if isinstance(a, dict) and isinstance(a.get("id"), str) else None
    if fall is None:
        beschaedigt(pfad, nr, "not an output of a known case")
    if "zuege" not in a:  # a line saved before 2026-12, read as turns: the checks of turns name what is wrong
        a = dict({f: a[f] for f in SPEICHERFELDER if f in a}, zuege=als_zuege({**NEUERE_FELDER, **a}))
    beschaedigt(pfad, nr, next((f"{feld} {was}" for feld, (pruefe, was) in AUSGABE.items()
                                if not pruefe(a.get(feld))), None))
    for zuege in [a["zuege"], *(a.get("frueher") or [])]:  # each draw's turns, the earlier ones' too
        beschaedigt(pfad, nr, next(filter(None, (zug_fehler(z, i, i == len(zuege))
                                                 for i, z in enumerate(zuege, 1))), None))
        beschaedigt(pfad, nr, folge_fehler([z["zweck"] for z in zuege], fall, e))
    if a["stufe"] != fall.stufe:
        beschaedigt(pfad, nr, f"stufe {a['stufe']} for {fall.id}, a case of {fall.stufe}")
    if a["lauf"] >= e["n"]:
        beschaedigt(pfad, nr, f"lauf {a['lauf']} in a run of n {e['n']}")
    if e.get("stufen") and a["stufe"] not in e["stufen"]:
        beschaedigt(pfad, nr, f"an output of {fall.id}, a case of {a['stufe']}, in a run of "
                              f"{', '.join(e['stufen'])}")
    for stufe, flagge in SPAETER.items():
        if a["stufe"] == stufe and not e.get(STUFE[stufe].feld):
            beschaedigt(pfad, nr, f"an output of {fall.id}, a case of {stufe}, in a run without {flagge}")
    return bewerte_gespeichert(fall, a, e.get("umbenennung"), e.get("nachfrage"), e.get("welt_salz"), token_grenze(e),
                               e.get("ziehung"))


def folge_fehler(zwecke, fall, e):
    """What is wrong with the order of an output's turns, or None: an S7 job's steps, else the question and
    perhaps S5's reply; a stream's plain cross-check right after the turn it checks, its repeat after it."""
    haupt = [z for z in zwecke if z in ANFRAGEN]
    if not fall.art.weise.folge(haupt):
        return f"the turns {', '.join(zwecke)} in {fall.id}, a case of {fall.stufe}"
    if NACHFRAGE in haupt and fall.nachtrag is None:
        return f"a second turn in {fall.id}, which has none"
    if NACHFRAGE in haupt and not e.get("nachfrage"):
        return f"a second turn in {fall.id}, in a run without --nachfrage"
    if zwecke[0] not in ANFRAGEN or any(z == OHNE_STROM and v not in (FRAGE, NACHFRAGE) or
                                        z == NOCHMAL and v != OHNE_STROM for v, z in zip(zwecke, zwecke[1:])):
        return f"a cross-check out of place in {fall.id} ({', '.join(zwecke)})"
    return None


def als_zuege(a):
    """The turns of a line saved before 2026-12 (its first turn's fields in the line, zweite, strom.ohne_strom,
    verlauf); a cross-check saved without its costs counts none, as then. What does not fit is kept as it is,
    for the checks of turns to name."""
    if a.get("verlauf") is not None:
        v = a["verlauf"]
        return [{"zweck": SCHRITT, **s, "verworfen": 0} if isinstance(s, dict) else s for s in v] \
            if isinstance(v, list) else v
    z = a.get("zweite")
    zweite = [] if not z else [z] if not isinstance(z, dict) else [{"zweck": NACHFRAGE, **z}] if "fehlt" in z else \
        alter_zug(NACHFRAGE, {"usage": {}, "latenz_s": 0, "finish_reason": None, "verworfen": 0, **z})
    return alter_zug(FRAGE, a) + zweite


def alter_zug(zweck, a):
    """An old answer as a turn, with the cross-checks its strom held."""
    zug_ = {"zweck": zweck, **{f: a[f] for f in ("nachricht", "finish_reason", "usage", "latenz_s", "verworfen")
                               if f in a}}
    strom = a.get("strom")
    if strom is None:
        return [zug_]
    zug_["strom"] = {f: strom[f] for f in ("chunks", "defekte") if f in strom} if isinstance(strom, dict) else strom
    ohne = strom.get("ohne_strom") if isinstance(strom, dict) else None
    def pruefung(zweck, x):
        return (x if not isinstance(x, dict) else {"zweck": zweck, **x} if "fehlt" in x else {
            "zweck": zweck, "nachricht": x.get("nachricht"), "finish_reason": x.get("finish_reason"), "usage": {},
            "latenz_s": 0, "verworfen": 0})
    return [zug_] + ([] if ohne is None else [pruefung(OHNE_STROM, ohne)] + (
        [pruefung(NOCHMAL, ohne["nochmal"])] if isinstance(ohne, dict) and "nochmal" in ohne else []))


def beschaedigt(pfad, nr, warum):
    if warum:
        raise Eingabefehler(f"{pfad}:{nr}: the results file is damaged ({warum})")


def zahl_ist(x, ganz=False, bis=math.inf):
    """A number from 0 to `bis` (a whole one if ganz), as a results file holds it; never a bool."""
    if isinstance(x, bool) or not isinstance(x, int if ganz else (int, float)):
        return False
    return 0 <= x <= bis if isinstance(x, int) else math.isfinite(x) and 0 <= x <= bis


PFLICHT = object()  # a settings field every results file has had: no default for older ones


def text_oder_nichts(x):
    return x is None or isinstance(x, str)


Einstellung = collections.namedtuple("Einstellung", "pruefe falsch vorgabe verglichen anders",
                                     defaults=(PFLICHT, False, None))


def ist_text(x):
    return isinstance(x, str)


def einstellungen_n(x):
    return zahl_ist(x, True) and x >= 1


def ist_objekt(x):
    return isinstance(x, dict)


def einstellungen_variante(x):
    return x is None or isinstance(x, str) and x in VARIANTEN


def einstellungen_stufen(x):
    return x is None or isinstance(x, list) and x and all(s in STUFEN for s in x)


def einstellungen_stichprobe(x):
    return x is None or zahl_ist(x, True) and x >= 1


def einstellungen_umbenennung(x):
    return (x is None or isinstance(x, dict) and all(
        isinstance(x.get(t), dict) and all(isinstance(v, str) for v in x[t].values())
        for t in ("werkzeuge", "argumente")))


def einstellungen_ablenkung(x):
    return x is None or isinstance(x, list) and all(isinstance(n, str) for n in x)


def ganze_zahl_oder_nichts(x):
    return x is None or zahl_ist(x, True)


def einstellungen_probe(x):
    return x is None or ist_probe(x)


def server_oder_nichts(x):
    return x is None or ist_server(x)


def ja_oder_nein(x):
    return isinstance(x, bool)


# pruefe: the check a results file's value must pass, falsch: what is wrong when it fails; vorgabe: the value of a
# run saved before the field was (PFLICHT: every file has it); verglichen: a run is resumed only under the same
# value (what makes two runs not comparable is nicht_vergleichbar's); anders: how the refusal names another value
# ("another case file"), else by the values
EINSTELLUNGEN = {"modell": Einstellung(ist_text, "is not a string", verglichen=True),
    "url": Einstellung(text_oder_nichts, "is not a string", None),  # which server: nicht_vergleichbar reads it
    "temp": Einstellung(zahl_ist, "is not a number of at least 0", verglichen=True),
    "n": Einstellung(einstellungen_n, "is not a whole number of at least 1", verglichen=True),
    "extra": Einstellung(ist_objekt, "is not an object", verglichen=True),
    **{f: Einstellung(ja_oder_nein, "is not true or false", False, True)
       for f in ("nachfrage", *SPAETER_FELDER.values(), "stream")},
    "system": Einstellung(text_oder_nichts, "is not a string", None, True, "another system message (--system)"),
    "variante": Einstellung(einstellungen_variante,
                            f"is not one of {', '.join(VARIANTEN)}", None, True),
    "stufen": Einstellung(einstellungen_stufen,
                          "is not a list of stages", None, True),
    "stichprobe": Einstellung(einstellungen_stichprobe, "is not a whole number of at "
                              "least 1", None, True),
    "faelle_sha256": Einstellung(ist_text, "is not a string", verglichen=True,
                                 anders="another case file"),
    **{f"{s.feld}_sha256": Einstellung(text_oder_nichts, "is not a string", None, True, f"other {s.name} cases")
       for s in STUFEN_TABELLE if s.feld},
    "katalog_sha256": Einstellung(ist_text, "is not a string", verglichen=True,
                                  anders="another catalogue or opening"),
    "umbenennung": Einstellung(einstellungen_umbenennung,
                               "is not {\"werkzeuge\": {old: new}, \"argumente\": {old: new}}",
                               None, True, "another renaming map (synonyme)"),
    "ablenkung": Einstellung(einstellungen_ablenkung,
                             "is not a list of tool names", None, True, "other decoys"),
    "seed": Einstellung(ganze_zahl_oder_nichts, "is not a whole number", None, True),
    # compared only where a run saved it: before, a variant's map and decoys were compared by name
    "gesendet_sha256": Einstellung(text_oder_nichts, "is not a string", None, True,
                                   "other tools or opening as sent (the renaming map or the decoys changed)"),
    "faelle_datei": Einstellung(text_oder_nichts, "is not a path", None),
    "katalog_datei": Einstellung(text_oder_nichts, "is not a path", None),
    "tag": Einstellung(ist_text, "is not a string"),
    "datum": Einstellung(ist_text, "is not a string"),
    "probe": Einstellung(einstellungen_probe, "is not a probe's record", None),
    "welt_salz": Einstellung(text_oder_nichts, "is not a string", None),  # S7's created ids; none before it was
    "ziehung": Einstellung(text_oder_nichts, "is not a string", None),  # S7's world values; none before they were
    "server": Einstellung(server_oder_nichts, "is not a server's record", None),
    "server_danach": Einstellung(server_oder_nichts, "is not a server's record", None),  # changed
    "server_angabe": Einstellung(text_oder_nichts, "is not a string", None),  # --server
    "frageregel": Einstellung(ganze_zahl_oder_nichts, "is not a whole number", None),  # FRAGEREGEL
}


def ist_server(x):
    """{"name": str, "version": str or null, "beleg": str or null, "vorlage": null or {"werkzeuge", "form"}}."""
    v = x.get("vorlage") if isinstance(x, dict) else None
    return isinstance(x, dict) and isinstance(x.get("name"), str) and \
        all(isinstance(x.get(f), (str, type(None))) for f in ("version", "beleg")) and \
        (v is None or isinstance(v, dict) and isinstance(v.get("werkzeuge"), (bool, type(None))) and
         isinstance(v.get("form"), (str, type(None))))


def ausgabe_stufe(x):
    return x in STUFEN


def ganze_zahl(x):
    return zahl_ist(x, True)


def ausgabe_ende(x):
    return zahl_ist(x, bis=1e11)


def ausgabe_zuege(x):
    return isinstance(x, list) and x != []


def ausgabe_frueher(x):
    return x is None or isinstance(x, list) and all(isinstance(z, list) for z in x)


AUSGABE = {"stufe": (ausgabe_stufe, "is not a stage"),
    "lauf": (ganze_zahl, "is not a whole number of at least 0"),
    "sitzung": (ganze_zahl, "is not a whole number of at least 0"),
    "ende": (ausgabe_ende, "is not a time"),  # 1e11 s: the year 5138
    "zuege": (ausgabe_zuege, "is not a list of turns"),
    "frueher": (ausgabe_frueher,
                "is not a list of earlier turns")}


def zug_zweck(x):
    return x in ANFRAGEN + (OHNE_STROM, NOCHMAL)


def zug_latenz_s(x):
    return zahl_ist(x, bis=1e7)


def zug_finish_reason(x):
    return isinstance(x, (str, type(None)))


def zug_strom(x):
    return (x is None or isinstance(x, dict) and zahl_ist(x.get("chunks"), True) and isinstance(
        x.get("defekte"), list) and all(isinstance(d, str) for d in x["defekte"]))


def zug_wer(x):
    return x is None or isinstance(x, dict) and set(x) <= set(WER_FELDER.values()) and all(
        isinstance(v, str) for v in x.values())


def zug_ergebnisse(x):
    return x is None or isinstance(x, list)


ZUG = {"zweck": (zug_zweck, "is not what a turn is for"),
    "nachricht": (ist_objekt, "is not an object"),
    "usage": (ist_objekt, "is not an object"),
    "latenz_s": (zug_latenz_s, "is not a number of seconds"),
    "finish_reason": (zug_finish_reason, "is not a string or null"),
    "verworfen": (ganze_zahl, "is not a whole number of at least 0"),
    "strom": (zug_strom, "is not a stream's record"),
    "ergebnisse": (zug_ergebnisse, "is not a list of results"),
    "abgelehnt": (text_oder_nichts, "is not the server's words"),
    "wer": (zug_wer, "is not what answered ({\"modell\", \"build\"}: strings)"),
    "runde": (ganze_zahl_oder_nichts, "is not a turn's index (a whole number of at least 0)")}


def zug_fehler(z, i, letzter=False):
    """What is wrong with turn i of an output, or None; a turn that failed holds only why (fehlt), and only a second
    turn, a cross-check, or a job's last step (refused for its length) fails without ending the run."""
    if isinstance(z, dict) and "fehlt" in z:
        if set(z) != {"zweck", "fehlt"} or not isinstance(z["fehlt"], str):
            return f"turn {i} is not a failed turn ({{\"zweck\", \"fehlt\": why}})"
        return None if z["zweck"] in (NACHFRAGE, OHNE_STROM, NOCHMAL) or z["zweck"] == SCHRITT and letzter and i > 1 \
            else \
            f"turn {i}: a failed {z['zweck']}, which a run never saves"
    if not isinstance(z, dict):
        return f"turn {i} is not an object"
    kann_fehlen = ("strom", "abgelehnt", "wer", "runde") + (() if z.get("zweck") == SCHRITT else ("ergebnisse",))
    fehlt = [f for f in ZUG if f not in z and f not in kann_fehlen]  # a step holds what the world sent
    return f"turn {i} has no {fehlt[0]}" if fehlt else next(
        (f"turn {i} {feld} {was}" for feld, (pruefe, was) in ZUG.items() if not pruefe(z.get(feld))), None)


def ist_probe(x):
    """{"fall": id, "nachricht": {...}, "finish_reason": str or null} or {"fall": id, "fehlt": text}."""
    return isinstance(x, dict) and isinstance(x.get("fall"), str) and (
        isinstance(x.get("nachricht"), dict) and isinstance(x.get("finish_reason"), (str, type(None)))
        or isinstance(x.get("fehlt"), str))


def pruefe_einstellungen(pfad, alt, neu):
    """A run is resumed only under the settings it was measured with (EINSTELLUNGEN's verglichen)."""
    for feld, x in EINSTELLUNGEN.items():
        if not x.verglichen or feld == "gesendet_sha256" and feld not in alt:
            continue  # a run saved before gesendet_sha256: its variant's map and decoys are compared by name
        wert = alt.get(feld, None if x.vorgabe is PFLICHT else x.vorgabe)
        if wert != neu[feld]:
            anders = x.anders or f"{feld} {json.dumps(wert, ensure_ascii=False)}, not " \
                                 f"{json.dumps(neu[feld], ensure_ascii=False)}"
            raise Eingabefehler(f"{pfad} was measured with {anders}; use another --tag, "
                                f"or --neu to measure anew (the old file is kept)")


def beiseite(pfad):
    """Rename a finished run out of the way: gross.jsonl -> gross.alt-1.jsonl."""
    k = 1
    while pfad.with_name(f"{pfad.stem}.alt-{k}.jsonl").exists():
        k += 1
    ziel = pfad.with_name(f"{pfad.stem}.alt-{k}.jsonl")
    pfad.rename(ziel)
    return ziel


def ordne(pfad, einstellungen, ausgaben, reihenfolge, ersetzt=0):
    """Rewrite the file in case order once complete, so any --parallel gives the same file;
    and without the lines that later ones replaced (ersetzt: how many)."""
    sortiert = sorted(ausgaben, key=lambda a: (reihenfolge[a.id], a.lauf))
    if not ersetzt and [id(a) for a in sortiert] == [id(a) for a in ausgaben]:
        return sortiert
    try:
        schreibe_neu(pfad, einstellungen, sortiert)
    except OSError as e:  # the run is complete and saved; only its order is left as it came
        print(f"messen: {pfad} is complete but could not be put in case order ({e.strerror})", file=sys.stderr)
    return sortiert


def schreibe_neu(pfad, einstellungen, ausgaben):
    """Replace a results file whole, through a temporary file: its settings line, then the outputs."""
    tmp = pfad.with_name(pfad.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(als_zeile({"einstellungen": einstellungen}))
            f.writelines(als_zeile(speicherform(a.zeile)) for a in ausgaben)
        os.replace(tmp, pfad)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


def speicherform(zeile):
    return {f: zeile[f] for f in SPEICHERFELDER + ("frueher",) if f in zeile}  # frueher: only what was asked again


@contextlib.contextmanager
def allein(pfad):
    """Hold the OS lock of one results file for a whole run; a killed process holds none.
    The lock is a file of its own beside the results, since those are renamed and replaced."""
    sperre = pfad.with_name(f".{pfad.name}.lock")
    try:
        f = open(sperre, "a+b")
    except OSError:
        if not pfad.is_file():
            raise
        yield False  # a folder we cannot write to: a complete run there can still be shown
        return
    try:
        try:
            if fcntl:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            else:
                msvcrt.locking(f.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            raise Eingabefehler(f"another run is measuring tag '{pfad.stem}' now ({pfad}); "
                                "wait for it to end, or use another --tag") from None
        yield True
    finally:
        f.close()

# ---------------------------------------------------------------------------
# Measuring: ask every missing output, save each line as it arrives
# ---------------------------------------------------------------------------


def kosten(ausgaben):
    """Median latency per request, tokens, and wall time summed over the sessions of a run;
    the second turns of --nachfrage are requests too."""
    sitzungen = collections.defaultdict(list)  # session -> each output's start and end
    for a in ausgaben:
        sitzungen[a.sitzung] += [a.ende - a.latenz_s, a.ende]
    anfragen = [x for a in ausgaben for x in a.anfragen]  # (seconds, usage)
    return {"latenz_s": statistics.median(s for s, _ in anfragen) if anfragen else None,
        "tokens": Tokens(*(sum(zahl_oder_none(u, f"{t}_tokens") or 0 for _, u in anfragen)
                           for t in ("prompt", "completion"))),
        "dauer_s": sum(max(t) - min(t) for t in sitzungen.values())}


def frage_fall(endpunkt, fall, erste=None):
    """One output: (its turns, the second turn's fault or None). With --nachfrage, an S5 answer that may have held
    still (still_roh) gets its second turn at once, saved in one line; where that fails, only it is asked again later
    (erste: the turns saved before it). An S7 job is asked by frage_ganz (its stage's row)."""
    zuege = erste or gefragt(endpunkt, fall, anfrage(fall, endpunkt.lauf), FRAGE)
    nachricht = zuege[0]["nachricht"]
    if not endpunkt.lauf.nachfrage or fall.nachtrag is None or not still_roh(nachricht, zuege[0]["finish_reason"]):
        return zuege, None  # no second turn: not done
    try:
        return zuege + gefragt(endpunkt, fall._replace(id=f"{fall.id}, second turn"),
                               nachfrage_anfrage(fall, endpunkt.lauf, nachricht), NACHFRAGE), None
    except Serverfehler as e:
        return zuege + [{"zweck": NACHFRAGE, "fehlt": str(e)}], e


FRAGEREGEL = 1  # the rule, saved with the run, by which its further requests were asked from the raw answers:
# an S5 second turn where still_roh holds, a stream's plain twin at temperature 0 for every streamed answer, the
# stream again where the twin's raw answer differs (roh_kern); None in a file saved before, asked by its grade


def gefragt(endpunkt, wer, body, zweck):
    """Ask one request: its turn, and its cross-check's. With --stream at temperature 0, every streamed answer is
    asked once more plain (OHNE_STROM); where that differs, the stream once more too (NOCHMAL), which tells a
    broken stream from the model's noise. The raw answers alone decide (FRAGEREGEL), never a grade.
    subtle: a server with a prompt cache or several slots may answer a repeated prompt otherwise even
    at temperature 0 (llama.cpp does); the repeated stream is as warm as the plain request. At a
    temperature above 0 a plain answer may differ by sampling alone, so none is asked."""
    antwort = endpunkt.frage(wer, body)
    zuege = [zug(zweck, antwort)]
    if antwort.strom is None or endpunkt.lauf.temp != 0:
        return zuege
    schlicht = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    zuege.append(nochmal_gefragt(endpunkt, wer, schlicht, OHNE_STROM))
    if "nachricht" in zuege[-1] and roh_kern(zuege[-1]["nachricht"]) != roh_kern(antwort.nachricht):
        zuege.append(nochmal_gefragt(endpunkt, wer, body, NOCHMAL))
    return zuege


def still_roh(nachricht, finish):
    """Might this answer have held still, read raw: no tool_calls, some text, and not cut off or announcing calls.
    Every answer a grade can count as holding still is one; a text call gets its second turn too (ungraded)."""
    return not native_rohe(nachricht) and finish not in ("length", "tool_calls") and bool(inhalt(nachricht).strip())


def roh_kern(nachricht):
    """What an answer said, raw: its text, and each call's function as sent (its name and arguments; ids apart)."""
    return inhalt(nachricht).strip(), [c.get("function") if isinstance(c, dict) else c for c in native_rohe(nachricht)]


def nochmal_gefragt(endpunkt, wer, body, zweck):
    """One more request of a cross-check: its turn, or {"zweck", "fehlt": why}."""
    try:
        return zug(zweck, endpunkt.frage(wer, body))
    except Serverfehler as e:
        return {"zweck": zweck, "fehlt": str(e)}


def zug(zweck, antwort, **mehr):
    """One turn as saved: what came back for one request, and what the request was for."""
    z = {"zweck": zweck, "nachricht": antwort.nachricht, "finish_reason": antwort.finish, "usage": antwort.usage,
         "latenz_s": round(antwort.latenz, 4), "verworfen": antwort.weitere}
    return dict(z, **({"strom": antwort.strom} if antwort.strom is not None else {}),
                **({"abgelehnt": antwort.abgelehnt} if antwort.abgelehnt else {}),
                **({"wer": antwort.wer} if antwort.wer else {}), **mehr)


def fertig(ausgaben, klaeren=False):
    """The outputs that need nothing more: what completeness is counted in (with --klaeren, an output whose
    grade is the server's or cannot tell needs asking again)."""
    return sum(not noch_offen(a, klaeren) for a in ausgaben)


def noch_offen(a, klaeren):
    """Is a saved output still to be asked: its second turn failed, or (--klaeren) it is no evidence on the model."""
    return a.nachfrage_fehlt or klaeren and ungeklaert(a)


def ungeklaert(a):
    """Is a graded output no evidence on the model: its grade, or its second turn's, the server's or cannot tell?
    A cut one is not asked again: under the same settings it is cut again (a limit settles it, KLAERT)."""
    return any(x and x[0] in ("server", "unklar") and x[1] != "abgeschnitten" for x in (b.wessen for b in a.noten))


def beantworte(endpunkt, auftraege, parallel):
    """Yield (fall, lauf, (turns, the second turn's fault or None)) as answers arrive; K cases in
    flight at once. auftraege: (fall, lauf, the turns saved before a failed second turn, or None)."""
    if parallel == 1:
        for fall, lauf, erste in auftraege:
            yield fall, lauf, fall.art.weise.frage(endpunkt, fall, erste, lauf)
        return
    warteschlange, fertig_, halt = queue.Queue(), queue.Queue(), threading.Event()
    for auftrag in auftraege:
        warteschlange.put(auftrag)

    def arbeiter():
        while not halt.is_set():
            try:
                fall, lauf, erste = warteschlange.get_nowait()
            except queue.Empty:
                return
            try:
                fertig_.put((fall, lauf, fall.art.weise.frage(endpunkt, fall, erste, lauf), None))
            except Exception as e:  # handed to the main thread, which stops the run
                fertig_.put((fall, lauf, None, e))

    # daemon threads: Ctrl-C or a fault ends the run without waiting long for requests in flight
    for _ in range(min(parallel, len(auftraege))):
        threading.Thread(target=arbeiter, daemon=True).start()
    try:
        for erhalten in range(1, len(auftraege) + 1):
            fall, lauf, antwort, e = fertig_.get()
            if e is None:
                yield fall, lauf, antwort
                continue
            halt.set()
            # the requests taken but not reported are in flight; keep what of them arrives within NACHLAUF
            def unterwegs():
                return len(auftraege) - warteschlange.qsize() - erhalten
            ende = time.monotonic() + NACHLAUF
            while unterwegs() > 0:
                try:
                    fall, lauf, antwort, anderer = fertig_.get(timeout=max(0.0, ende - time.monotonic()))
                except queue.Empty:
                    break
                erhalten += 1
                if anderer is None:
                    yield fall, lauf, antwort
            raise e
    finally:
        halt.set()  # the caller stopped (a second turn failed): no worker takes another case


NACHLAUF = 0.5  # seconds a fault waits for the answers still in flight, so that little is asked twice


def messe(lauf, faelle, pfad, einstellungen, ausgaben, start):
    """Ask for the outputs still missing; return all outputs, graded."""
    da = {(a.id, a.lauf): a for a in ausgaben}
    auftraege = [(f, k, gespeicherte_antwort(da.get((f.id, k)), lauf.klaeren)) for f in faelle
                 for k in range(lauf.n) if (f.id, k) not in da or noch_offen(da[(f.id, k)], lauf.klaeren)]
    sitzung = max((a.sitzung for a in ausgaben), default=-1) + 1
    gesamt, fertige = len(faelle) * lauf.n, fertig(ausgaben, lauf.klaeren)
    ersetzt = {(a.id, a.lauf): a for a in ausgaben if noch_offen(a, lauf.klaeren)}  # replaced by a later line
    offen = sum(1 if erste else f.art.weise.anfragen(f, lauf) for f, _, erste in auftraege)  # requests expected
    anzeige = Fortschritt(fertige, gesamt, offen, parallel=lauf.parallel,
                          je_anfrage=any(f.art.weise.schluss for f, _, _ in auftraege))  # jobs: many requests each
    with open(pfad, "r+b" if pfad.exists() else "wb", buffering=0) as roh:
        try:
            roh.truncate(start)  # drops a half-written last line
            roh.seek(start)
            if start == 0:
                schreibe(roh, als_zeile({"einstellungen": einstellungen}))
            for fall, k, (zuege, fehler) in beantworte(Endpunkt(lauf, anzeige), auftraege, lauf.parallel):
                a, alt = ausgabe_von(lauf, fall, k, sitzung, zuege), ersetzt.get((fall.id, k))
                if alt is not None and gespeicherte_antwort(alt, lauf.klaeren) is None:  # asked again whole
                    a = als_evidenz(a, alt, fall, einstellungen, ganz=True)
                schreibe(roh, als_zeile(speicherform(a.zeile)))  # answered is saved: an interrupted run loses nothing
                if (fall.id, k) in ersetzt:
                    ausgaben[:] = [b for b in ausgaben if (b.id, b.lauf) != (fall.id, k)]
                ausgaben.append(a)
                fertige += not fehler
                if not fehler:
                    anzeige.weiter(a, fall.id, fall.art.weise.anfragen(fall, lauf))
                if fehler:
                    raise fehler
        except (Abbruch, KeyboardInterrupt, OSError) as e:
            anzeige.ende()
            fehler = angehalten(e, pfad, gespeichert(pfad, faelle, fertige), gesamt)
            fehler.ursache = e  # the cause alone, for a run whose file is gone (the self-test's)
            raise fehler from None
    anzeige.ende()
    return ordne(pfad, einstellungen, ausgaben, {f.id: i for i, f in enumerate(faelle)}, len(ersetzt))


def nach_dem_lauf(lauf, pfad, einstellungen, faelle, ausgaben):
    """After the last answer: which server it was, again (a server that took the run's requests answers its
    own pages too; another one than before the first request is saved as server_danach), then, where the calls
    came as text only, the probe (probe_fall); both saved in the settings line, so that --bewerten reads the same."""
    endpunkt, neu = Endpunkt(lauf), dict(einstellungen)
    jetzt = erkenne_server(endpunkt)
    if neu.get("server") and jetzt and kennung(jetzt) != kennung(neu["server"]):
        neu["server_danach"] = jetzt
        print(f"messen: the server changed during the run: {server_wort(neu['server'])} at its start, "
              f"{server_wort(jetzt)} at its end; its outputs mix the two (--neu measures anew)", file=sys.stderr)
    neu["server"] = neu.get("server") or jetzt
    fall = probe_fall(faelle, ausgaben, neu["server"])
    if fall is not None and not neu.get("probe"):
        neu["probe"] = probe_von(endpunkt, fall, lauf)
    if neu != einstellungen:
        try:
            schreibe_neu(pfad, neu, ausgaben)
        except OSError as e:
            print(f"messen: {pfad} is complete, but what was learnt of the server could not be saved with it "
                  f"({e.strerror})", file=sys.stderr)
    return neu


def gespeichert(pfad, faelle, gezaehlt):
    """How many outputs a stopped run's file holds, read back from it. subtle: Ctrl-C may fall between a line written
    and the count that follows it; the file is what the next run finds, so the message says what the file says."""
    try:
        return fertig(lies_lauf(pfad, faelle)[1])
    except (Abbruch, OSError):
        return gezaehlt


def ausgabe_von(lauf, fall, k, sitzung, zuege):
    """One output as it is saved and graded; a later line for the same output replaces an earlier one."""
    a = {"id": fall.id, "stufe": fall.stufe, "lauf": k, "sitzung": sitzung, "ende": round(time.time(), 4),
         "zuege": zuege}
    return bewerte_gespeichert(fall, a, lauf.katalog.umbenennung, lauf.nachfrage, lauf.welt_salz,
                               token_grenze({"extra": lauf.extra}), lauf.ziehung)


def gespeicherte_antwort(a, klaeren=False):
    """The saved turns before a failed second turn, asked again from there; else None (asked whole)."""
    if a is None or not a.nachfrage_fehlt or klaeren and ungeklaert(a):
        return None
    return [z for z in a.zeile["zuege"] if z["zweck"] != NACHFRAGE]


def schreibe(roh, daten):
    """Write all of daten to an unbuffered file: a full disk raises here, not at close."""
    while daten:
        daten = daten[roh.write(daten):]


def angehalten(e, pfad, gespeichert, gesamt):
    """The one error a stopped run ends with: the cause, what is saved, and what to do next."""
    fehlt = gesamt - gespeichert
    stand = f"{gespeichert} of {gesamt} outputs are saved in {pfad}"
    weiter = f"{stand}; the same command again asks for the {fehlt} missing"
    if isinstance(e, KeyboardInterrupt):
        return Unterbrochen(f"{'terminated' if isinstance(e, Beendet) else 'interrupted'}; {weiter}",
                            getattr(e, "status", 130))
    if isinstance(e, OSError):
        return Abbruch(f"cannot write {pfad} ({e.strerror or e}); {weiter} once there is room")
    if isinstance(e, Anfragefehler):
        wie = " (with none saved, the same tag takes corrected settings)" if not gespeichert else ""
        return Anfragefehler(f"{e}\nmessen: {stand}; fix what the server objects to, then run again{wie}")
    return type(e)(f"{e}\nmessen: {weiter}")

# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise Eingabefehler(message)


def zahl(minimum, typ):
    def pruefe(text):
        try:
            x = typ(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}")
        if not math.isfinite(x) or x < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {text}")
        return x
    return pruefe


def url_arg(text):
    teile = urlsplit(text)
    if teile.scheme not in ("http", "https") or not teile.hostname:
        raise argparse.ArgumentTypeError(f"not an http(s) URL: {ohne_geheimnis(text)!r}")
    try:
        teile.port
    except ValueError:
        raise argparse.ArgumentTypeError(f"{ohne_geheimnis(text)!r}: the port is not a number from 0 to 65535")
    pfad = teile.path.rstrip("/")
    if pfad.endswith("/v1"):
        pfad += "/chat/completions"
    return urlunsplit(teile._replace(path=pfad))


def stufen_arg(text):
    namen = {s.upper(): s for s in STUFEN}  # s2 is S2, SIMPLE_PYTHON simple_python
    stufen = tuple(dict.fromkeys(namen.get(s.strip().upper(), s.strip()) for s in text.split(",") if s.strip()))
    fremd = [s for s in stufen if s not in STUFEN]
    if not stufen or fremd:
        raise argparse.ArgumentTypeError(f"{text!r}: name stages from {', '.join(KAPITEL_STUFEN)} (or BFCL's "
                                         f"categories: {', '.join(BFCL_STUFEN)}), separated by commas")
    return tuple(s for s in STUFEN if s in stufen)


def tag_arg(text):
    if not re.fullmatch(r"[A-Za-z0-9._-]+", text) or text.startswith("."):
        raise argparse.ArgumentTypeError(f"{text!r}: a tag holds only letters, digits, '.', '_' and '-' "
                                         "and does not start with '.'")
    return text


VOM_BENCH = {  # keys --extra may not set, and why
    "model": "use --modell", "temperature": "use --temp", "n": "use --n; each output is its own request",
    "stream": "use --stream", "stream_options": "--stream sets them", "messages": "the bench sets them for every case",
    "tools": "the bench sends its catalogue", "tool_choice": "the bench asks with \"auto\"",
    "functions": "the bench sends its catalogue as tools", "function_call": "the bench asks with \"auto\""}


def extra_arg(text):
    try:
        x = json.loads(text)
    except ValueError as e:
        k, gleich, v = text.partition("=")
        beispiel = json.dumps({k.strip(): json_oder_text(v.strip())}) if gleich and k.strip() else '{"top_p": 0.9}'
        raise argparse.ArgumentTypeError(f"not JSON ({e.msg}); give a JSON object such as '{beispiel}'")
    if not isinstance(x, dict):
        raise argparse.ArgumentTypeError('must be a JSON object, such as {"top_p": 0.9}')
    falsch = next((k for k in TOKEN_GRENZEN if k in x and (type(x[k]) is not int or x[k] == 0)), None)
    if falsch:
        raise argparse.ArgumentTypeError(
            f"'{falsch}' is {json.dumps(x[falsch])}: give a whole number of tokens, such as {{\"{falsch}\": 256}}, "
            "or -1 for no limit (as llama-server and Ollama take it)")
    verboten = [k for k in x if k in VOM_BENCH]
    if verboten:
        raise argparse.ArgumentTypeError(
            f"'{verboten[0]}' is the bench's to set ({VOM_BENCH[verboten[0]]}); --extra adds keys such as "
            "top_p, max_tokens, seed or chat_template_kwargs, and replaces none")
    return x


def json_oder_text(wert):
    """'5' -> 5, 'abc' -> 'abc': the value of a key=value the user meant as JSON."""
    try:
        return json.loads(wert)
    except ValueError:
        return wert


def bild_arg(text):
    pfad = Path(text)
    if pfad.suffix.lower() not in (".svg", ".png"):
        raise argparse.ArgumentTypeError(f"{text!r}: a picture is .svg or .png")
    return pfad


GEHEIM_NAME = re.compile(r"key|token|secret|sig|pass", re.I)  # query keys whose values are never printed


def ohne_geheimnis(adresse):
    """The URL without user:password, and with key- or token-like query values hidden."""
    teile = urlsplit(adresse)
    netz = teile.netloc.rsplit("@", 1)[-1]
    abfrage = urlencode([(k, "***" if GEHEIM_NAME.search(k) else v)
                         for k, v in parse_qsl(teile.query, keep_blank_values=True)])
    return urlunsplit(teile._replace(netloc=netz, query=abfrage))


EPILOG = """\
examples:
  messen --url http://localhost:8000/v1 --modell base --pruefen      check the server's set-up
  messen --url http://localhost:8000/v1 --modell base --tag base     measure, saved as ergebnisse/base.jsonl
  messen --vergleich base finetune --streng                          before against after; exit 3 if worse

--bewerten and --vergleich read the runs saved in ergebnisse/ of the current folder (or --ausgabe).

exit status: 0 a complete measurement (--pruefen: no check failed), 1 the run failed (server, network, disk;
--pruefen: a check failed), 2 bad usage or input (--streng: not comparable, or cannot tell), 3 --streng: the last run's
model is worse beyond chance, 130 interrupted, 143 terminated. The same command again asks only for what
is missing."""


def parser():
    p = Parser(prog="messen", description="Measure how well a model behind an OpenAI-compatible chat endpoint "
                                          "calls tools: by default the chapter's 42 cases in five stages (S5's "
                                          "second turn with --nachfrage, S6 with --weiter, S7 with --ganz); your "
                                          "own with --faelle, BFCL's files too.",
               epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", type=url_arg, help="chat-completions URL (a base URL ending in /v1 is completed)")
    p.add_argument("--modell", help="model name, sent as 'model'")
    p.add_argument("--temp", type=zahl(0, float), default=0.0, help="temperature (default 0.0)")
    p.add_argument("--n", type=zahl(1, int), default=1, help="outputs per case, each its own request (default 1)")
    p.add_argument("--tag", type=tag_arg, help="name of the run (default: from the model name)")
    p.add_argument("--ausgabe", type=Path, default=Path("ergebnisse"), help="results folder (default ergebnisse)")
    p.add_argument("--faelle", type=Path, default=None, help="case file, or BFCL's files (a BFCL_v4_*.json beside "
                   "its possible_answer/, or their folder) (default: the 42 cases installed with messen: "
                   f"{faelle_standard()})")
    p.add_argument("--system", metavar="TEXT", help="a system message sent before each BFCL case's messages "
                                                    "(BFCL's FC mode sends none)")
    p.add_argument("--katalog", type=Path, metavar="FILE", help="your own tools and opening: a JSON object with "
                                                                 "werkzeuge and eroeffnung (default: the chapter's)")
    p.add_argument("--variante", choices=VARIANTEN, help="measure on a changed catalogue: other names (synonyme), "
                                                         "another order (reihenfolge), or decoys added (ablenkung)")
    p.add_argument("--extra", type=extra_arg, default={}, help="JSON object of keys added to every request body")
    p.add_argument("--parallel", type=zahl(1, int), default=1, help="requests in flight at once (default 1)")
    p.add_argument("--timeout", type=zahl(0.001, float), default=120.0, help="seconds per request (default 120)")
    p.add_argument("--versuche", type=zahl(1, int), default=4, help="attempts per request (default 4)")
    p.add_argument("--key-env", default="OPENAI_API_KEY", help="variable holding the API key (default OPENAI_API_KEY)")
    p.add_argument("--neu", action="store_true", help="measure anew; the old run is renamed, never deleted")
    p.add_argument("--klaeren", action="store_true", help="ask again, in the same file, the outputs whose grade is "
                   "the server's or cannot tell (after fixing the server); the earlier answers are kept")
    for name, form in FORMEN.items():
        if form.hilfe:
            p.add_argument(f"--{name}", action="store_true", help=form.hilfe)
    p.add_argument("--alle", action="store_true", help="list every failed output and every flipped case, not only "
                                                       f"the first {FEHLSCHLAEGE_GEZEIGT}")
    p.add_argument("--bewerten", type=tag_arg, metavar="TAG",
                   help="grade the saved run TAG (in --ausgabe) again, no server")
    p.add_argument("--vergleich", type=tag_arg, nargs="+", metavar="TAG",
                   help="compare saved runs: A B, or a series A B C ... (each against the first)")
    p.add_argument("--streng", action="store_true",
                   help="with --vergleich: exit 3 when the last run's model is worse than the first's beyond chance "
                        f"at {NIVEAU_WORT}%, 2 when the runs are not comparable or the evidence cannot settle it")
    p.add_argument("--mit-vorlage", action="store_true", help="with --vergleich: each model with its own chat template")
    p.add_argument("--bild", type=bild_arg, metavar="FILE",
                   help="with --bewerten or --vergleich: draw the run(s) as FILE.svg or FILE.png (matplotlib)")
    p.add_argument("--nachfrage", action="store_true", help="S5: after an answer that may have held still, "
                                                            "send the user's reply and grade the calls that follow")
    for s in STUFEN_TABELLE:  # a later stage's flag, from its row: --weiter, --ganz
        if s.feld:
            p.add_argument(f"--{s.feld}", action="store_true", help=f"also {s.name}: {s.hilfe}")
    p.add_argument("--stufen", type=stufen_arg, metavar="S2,S6", help="ask only the cases of these stages")
    p.add_argument("--stichprobe", type=zahl(1, int), metavar="N", help="BFCL's cases: N of each category, drawn "
                   "evenly across its file, the same N each time")
    p.add_argument("--stream", action="store_true", help="ask every request streamed, as an agent does; the "
                                                         "stream is assembled, graded, and checked for defects")
    p.add_argument("--server", metavar="TEXT", help="what serves the URL where messen cannot identify it (a proxy "
                   "before vLLM 0.11, say): saved with the run; runs stated alike are one server to --vergleich")
    p.add_argument("--pruefen", action="store_true", help="check the server's set-up with a few requests")
    p.add_argument("--selbsttest", action="store_true", help="measure the built-in loopback endpoint")
    p.add_argument("--lesen", action="store_true", help="read answers (JSON lines on stdin) and write what is read")
    return p


def tag_von(modell):
    """A tag from a model name: its letters without accents, or for a name of other scripts a short
    hash, so that two such names never share a tag."""
    ohne_akzente = "".join(c for c in unicodedata.normalize("NFKD", modell) if not unicodedata.combining(c))
    tag = re.sub(r"[^A-Za-z0-9._-]+", "-", ohne_akzente.encode("ascii", "ignore").decode()).strip("-.")
    if tag and ohne_akzente.isascii():
        return tag
    return "-".join(filter(None, [tag, hashlib.sha256(modell.encode()).hexdigest()[:8]]))


def lauf_aus(args):
    """The settings of this invocation, read once; the catalogue is chosen here, once."""
    tag = args.tag or (tag_von(args.modell) if args.modell else None)
    katalog = lade_katalog(args.katalog) if args.katalog else STANDARD
    if args.variante and (args.bewerten or args.vergleich):
        raise Eingabefehler("--variante chooses what a measurement sends; --bewerten and --vergleich read it "
                            "from the saved run")
    for stufe, flagge in SPAETER.items():
        if getattr(args, STUFE[stufe].feld) and args.stufen and stufe not in args.stufen:
            raise Eingabefehler(f"{flagge} asks {stufe}, which --stufen {','.join(args.stufen)} leaves out; add "
                                f"{stufe} to --stufen, or drop {flagge}")
    if args.ganz and args.katalog:
        raise Eingabefehler(f"--ganz runs {GANZ} against a simulated CRM of the chapter's eleven tools; {args.katalog} "
                            "has no simulation: measure your own tools without --ganz")
    bringt = {"synonyme": katalog.synonyme, "ablenkung": katalog.ablenkung}.get(args.variante, True)
    if not bringt:
        was = {"synonyme": "\"synonyme\": {\"werkzeuge\": {old: new}, \"argumente\": {old: new}}",
               "ablenkung": "\"ablenkung\": a list of decoy tools"}[args.variante]
        raise Eingabefehler(f"{args.katalog}: --variante {args.variante} needs {was} in the catalogue file")
    eigen = {"tag": tag, "faelle": args.faelle or faelle_standard(), "key": os.environ.get(args.key_env),
             "katalog": variante(katalog, args.variante),
             "form": next((n for n in FORMEN if getattr(args, n, False)), "text"),
             "spaeter": frozenset(st for st, f in SPAETER_FELDER.items() if getattr(args, f))}  # the rest: as given
    return Lauf(**{f: getattr(args, f) for f in Lauf._fields if hasattr(args, f) and f not in eigen}, **eigen)


def spaeter_von(e):
    """The later stages a saved run asked, from its settings line: a key each (weiter, ganz)."""
    return frozenset(st for st, f in SPAETER_FELDER.items() if e.get(f))


def einstellungen_fuer(lauf, sha, faelle):
    """The settings line of a results file: what was asked, and the files and catalogue it was asked with,
    so that --bewerten and --vergleich find them again and anyone can see what was sent."""
    return {"modell": lauf.modell, "url": ohne_geheimnis(lauf.url), "temp": lauf.temp, "n": lauf.n,
            "extra": lauf.extra, "nachfrage": lauf.nachfrage, "stream": lauf.stream, "system": lauf.system,
            "stufen": list(lauf.stufen) if lauf.stufen else None, "stichprobe": lauf.stichprobe, "tag": lauf.tag,
            "datum": datetime.date.today().isoformat(), **lauf.katalog.beschreibung(),
            "faelle_sha256": sha, "faelle_datei": str(Path(lauf.faelle).resolve()),
            **{f: st in lauf.spaeter for st, f in SPAETER_FELDER.items()},  # a key each, as files have always had
            **{f: (getattr(lauf, f) or os.urandom(8).hex()) if GANZ in lauf.spaeter else None
               for f in ("welt_salz", "ziehung")},
            "frageregel": FRAGEREGEL, **{f"{f}_sha256": stufen_hash(faelle, st) if st in lauf.spaeter else None
                                         for st, f in SPAETER_FELDER.items()},
            "katalog_sha256": lauf.katalog.sha, "katalog_datei": lauf.katalog.datei, "server_angabe": lauf.server}


def zeige(lauf, e, faelle, ausgaben, gezeigt=False):
    """Print the summary of one run; return its figures."""
    k = kennzahlen(faelle, ausgaben, lauf.katalog, e)
    print(FORMEN[lauf.form].lauf(e, k, faelle, ausgaben, gezeigt, None if lauf.alle else FEHLSCHLAEGE_GEZEIGT))
    return k


def lauf_messen(lauf, alle, sha, sagen=True):
    """Measure (or resume) the run lauf.tag on the cases it asks of `alle`, print its summary, return its figures;
    where it asked anything, its last line says where it saved what (sagen: not for the self-test's own folder)."""
    pfad = lauf.ausgabe / f"{lauf.tag}.jsonl"
    faelle = faelle_fuer(alle, lauf.spaeter, lauf.stufen, lauf.faelle)
    with dateifehler_vorab(pfad), allein(pfad) as gesperrt:  # messe turns its own file errors into exit 1
        einstellungen, ausgaben, start = vorgefunden(lauf, alle, len(faelle), pfad, einstellungen_fuer(lauf, sha, alle))
        lauf = lauf._replace(welt_salz=einstellungen.get("welt_salz"), ziehung=einstellungen.get("ziehung"))
        gezeigt = fertig(ausgaben, lauf.klaeren) == len(faelle) * lauf.n
        if not gezeigt and not gesperrt:
            raise Eingabefehler(f"{pfad.parent}: cannot write there, so the run cannot go on (its lock file "
                                f".{pfad.name}.lock cannot be opened)")
        if not gezeigt and not ausgaben:  # identified before the first request too: a change on the way shows
            einstellungen = dict(einstellungen, server=erkenne_server(Endpunkt(lauf)))
        if not gezeigt:
            ausgaben = messe(lauf, faelle, pfad, einstellungen, ausgaben, start)
            einstellungen = nach_dem_lauf(lauf, pfad, einstellungen, faelle, ausgaben)
    k = zeige(lauf, einstellungen, faelle, ausgaben, gezeigt)
    if sagen and not gezeigt:
        print(f"messen: saved: {pfad} ({mal(fertig(ausgaben), 'output')})", file=sys.stderr)
    return k


@contextlib.contextmanager
def dateifehler_vorab(pfad):
    """Before any request, a results file that cannot be written is bad input: exit 2, one line."""
    try:
        pfad.parent.mkdir(parents=True, exist_ok=True)
        yield
    except OSError as e:
        lang = " (use a shorter --tag)" if e.errno == errno.ENAMETOOLONG else ""
        raise Eingabefehler(f"{e.filename or pfad}: cannot write the results there ({e.strerror}){lang}") from None


def wiedererkannt(lauf, pfad, alt, url):
    """A run resumed: the server at its URL identified again. Another family, build, version or chat template than
    the one it was measured on is refused (its outputs would mix two servers); another URL is named."""
    anders = alt.get("url") not in (None, url)
    # a run stopped before its start's identification was saved: the one at the old URL is asked, where it answers
    vorher = alt.get("server") or anders and erkenne_server(Endpunkt(lauf._replace(url=alt["url"])))
    jetzt = erkenne_server(Endpunkt(lauf))
    if jetzt and vorher and kennung(jetzt) != kennung(vorher):
        raise Eingabefehler(f"{pfad} was measured on {server_wort(vorher)} at {alt['url']}; {url} is now "
                            f"{server_wort(jetzt)}: resume it on that server, or use another --tag (--neu measures "
                            "anew)")
    if anders:
        print(f"messen: {pfad} was measured at {alt['url']}; the rest is asked at {url}", file=sys.stderr)


def vorgefunden(lauf, alle, gefragt, pfad, einstellungen):
    """What the results file holds already: (settings, outputs, where to go on writing).
    gefragt: how many of all cases the run asks (S6 with --weiter only)."""
    if pfad.exists() and lauf.neu:
        print(f"messen: the earlier {pfad} is kept as {beiseite(pfad)}", file=sys.stderr)
    elif pfad.exists():
        try:
            alt, ausgaben, start = lies_lauf(pfad, alle)
        except Eingabefehler:  # what another sample or case file asked reads as damaged: first, how it was asked
            if zuerst := lies_einstellungen(pfad):
                pruefe_einstellungen(pfad, zuerst, einstellungen)
            raise
        if ausgaben:  # subtle: with nothing saved yet, corrected settings start the run afresh
            pruefe_einstellungen(pfad, alt, einstellungen)
            zustand = "a complete run, shown as saved (--neu measures anew)" \
                if fertig(ausgaben, lauf.klaeren) == gefragt * lauf.n else \
                f"{fertig(ausgaben, lauf.klaeren)} outputs that need nothing more; asking for the rest" \
                if lauf.klaeren else f"{fertig(ausgaben)} outputs; asking for the rest"
            print(f"messen: {pfad} holds {zustand}", file=sys.stderr)
            if fertig(ausgaben, lauf.klaeren) < gefragt * lauf.n:
                wiedererkannt(lauf, pfad, alt, einstellungen["url"])
            return alt, ausgaben, start
    return einstellungen, [], 0


def gespeichert_pfad(lauf, tag_name):
    pfad = lauf.ausgabe / f"{tag_name}.jsonl"
    if not pfad.exists():
        raise Eingabefehler(f"no saved run '{tag_name}' ({pfad} does not exist)")
    return pfad


def gemessen_mit(lauf, tags, faelle_gegeben):
    """The case file and catalogue saved runs were measured on: found by the paths saved with them while
    their hashes match, else as given (--faelle, --katalog), else the defaults. Returns (lauf with the
    catalogue found, the cases, the case file's sha256). Runs on different ones are never compared."""
    pfade = [gespeichert_pfad(lauf, t) for t in tags]
    es = [lies_einstellungen(p) for p in pfade]
    for feld, was in (("faelle_sha256", "case files"), ("katalog_sha256", "catalogues or openings"),
                      ("stichprobe", "samples of BFCL's cases (--stichprobe)"),
                      *((f"{f}_sha256", f"{st} cases") for st, f in SPAETER_FELDER.items())):
        if len({json.dumps(e.get(feld)) for e in es
                if feld.removesuffix("_sha256") not in SPAETER_FELDER.values() or e.get(feld)}) > 1:
            raise Eingabefehler(f"{' and '.join(tags)} were measured on different {was}; they cannot be compared")
    katalog = finde_katalog(pfade[0], es[0], lauf.katalog if lauf.katalog.datei else None)
    faelle_pfad, faelle, sha = finde_faelle(pfade, es, faelle_gegeben, katalog)
    return lauf._replace(katalog=katalog, faelle=faelle_pfad), faelle, sha


def lies_einstellungen(pfad):
    """The settings line of a results file, its fields checked; {} when the line is no settings line
    (lies_lauf says later what is wrong with it)."""
    try:
        with open(pfad, "rb") as f:
            e = json.loads(f.readline()).get("einstellungen")
    except (OSError, ValueError, AttributeError, RecursionError):
        return {}
    if not isinstance(e, dict):
        return {}
    pruefe_einstellungszeile(pfad, 1, e)
    return e


def finde_faelle(pfade, es, gegeben, katalog):
    """The case file the runs were measured on, as (path, cases, sha256): every candidate (the paths the
    runs saved, --faelle, the installed file) tried against every hash they saved (faelle_sha256, and
    weiter_sha256 where a run asked S6); the first that matches all."""
    sha = es[0].get("faelle_sha256")
    if not isinstance(sha, str):
        ort = gegeben or faelle_standard()
        return (Path(ort), *lade_faelle(ort, katalog, es[0].get("stichprobe"), gefragte_stufen(es)))
    spaeter = {stufe: next((e[f"{feld}_sha256"] for e in es if isinstance(e.get(f"{feld}_sha256"), str)), None)
               for stufe, feld in SPAETER_FELDER.items()}  # the later stages' hashes
    spaetere = any(spaeter.values())
    orte = list(dict.fromkeys(str(o) for o in [*(e.get("faelle_datei") for e in es), gegeben, faelle_standard()]
                              if isinstance(o, (str, Path))))
    for ort in orte:
        try:
            if not ist_bfcl(ort) and faelle_hash(Path(ort).read_bytes()) != sha:
                continue  # the find first: a case file of another hash is not read
            faelle, gelesen = lade_faelle(ort, katalog, es[0].get("stichprobe"), gefragte_stufen(es))
            if gelesen != sha and ist_bfcl(ort) and Path(ort).is_dir():  # saved before the multi-turn categories
                faelle, gelesen = lade_faelle(ort, katalog, es[0].get("stichprobe"), gefragte_stufen(es), True)
        except (OSError, Eingabefehler):
            continue  # gone, or not a case file for this catalogue: the next place may hold it
        if gelesen == sha and all(h is None or stufen_hash(faelle, stufe) == h for stufe, h in spaeter.items()):
            return Path(ort), faelle, gelesen
    welche = f"other cases (or other {' or '.join(SPAETER)} cases)" if spaetere else "other cases"
    raise Eingabefehler(f"{pfade[0]} was measured on a case file that is not found: {' and '.join(orte)} are gone or "
                        f"hold {welche}; give the one it was measured on with --faelle FILE")


def gefragte_stufen(es):
    """The stages every run asked, where each named its own (--stufen); None, all, where one asked all."""
    if any(not e.get("stufen") for e in es):
        return None
    return sorted({s for e in es for s in e["stufen"]})


def finde_katalog(pfad, e, gegeben):
    sha = e.get("katalog_sha256")
    if not isinstance(sha, str):
        return gegeben or STANDARD
    gespeichert, orte = e.get("katalog_datei"), []  # orte: each place tried, with why it was not the one
    for katalog in (gespeichert, gegeben, STANDARD):
        try:
            katalog = lade_katalog(katalog) if isinstance(katalog, str) else katalog
        except Eingabefehler:
            orte.append(f"{katalog} (gone or unreadable)")
            continue  # the saved file is gone or broken: the next place may still hold it
        if katalog is not None and katalog.sha == sha:
            return katalog
        if katalog is not None:
            orte.append(f"{katalog.datei or 'the built-in one'} (another)")
    raise Eingabefehler(f"{pfad} was measured with a catalogue that is not found: {', '.join(orte)}; give the one "
                        "it was measured with as --katalog FILE")


def pruefe_gespeichert(lauf, alle, pfad, e, ausgaben):
    """A saved run as the reports take it: (its settings, the cases it asked, its outputs)."""
    if e is None or not ausgaben:
        raise Eingabefehler(f"{pfad} holds no output yet; run the command that measures it")
    faelle = faelle_fuer(alle, spaeter_von(e), e.get("stufen"), lauf.faelle)
    if fertig(ausgaben) < len(faelle) * e["n"]:
        print(f"messen: {pfad} is incomplete ({fertig(ausgaben)} of {len(faelle) * e['n']} outputs); "
              "the command that measured it, run again, asks for the rest", file=sys.stderr)
    return dict(e, tag=pfad.name.removesuffix(".jsonl")), faelle, ausgaben  # labelled by the tag given


def bewerten(lauf, faelle, tag_name, bild=None):
    pfad = gespeichert_pfad(lauf, tag_name)
    e, faelle, ausgaben = pruefe_gespeichert(lauf, faelle, pfad, *lies_lauf(pfad, faelle)[:2])
    k = zeige(lauf, e, faelle, ausgaben)
    if bild:
        zeichne(bild, [Gemessen(e, k, faelle, ausgaben)])
    return 0


def vergleich(lauf, faelle, tags, streng=False, bild=None):
    """Compare saved runs, each later one with the first; each run is (settings, figures,
    per-case successes, what it did). With --streng, exit 3 when the last is worse beyond chance."""
    pfade = [gespeichert_pfad(lauf, t) for t in tags]
    gelesen = [lies_lauf(pfad, faelle)[:2] for pfad in pfade]  # (settings, outputs), each file read once
    laeufe = [Gemessen(e, kennzahlen(eigene, aus, lauf.katalog, e), eigene, aus, was_geschah(aus))
              for e, eigene, aus in (pruefe_gespeichert(lauf, faelle, p, *g) for p, g in zip(pfade, gelesen))]
    halb = [r.tag for r in laeufe if not vollstaendig(r.einstellungen, r.kennzahlen)]
    if streng and halb:
        raise Eingabefehler(f"--streng needs complete runs; {' and '.join(halb)} {'is' if len(halb) == 1 else 'are'} "
                            "incomplete: finish measuring first")
    vs = [vergleiche(laeufe[0], spaeter, lauf.mit_vorlage) for spaeter in laeufe[1:]]
    form = FORMEN[lauf.form]  # a pair, or a series
    print(form.paar(laeufe[0], laeufe[1], vs[0], {f.id: f for f in faelle}, None if lauf.alle else
                    FEHLSCHLAEGE_GEZEIGT) if len(laeufe) == 2 else form.reihe(laeufe, vs))
    if bild:
        zeichne(bild, laeufe, urteil(vs[-1])[0])  # the verdict on the last run, as its first line says it
    status = vs[-1].status if streng else 0
    if status:
        print(f"messen: {streng_satz(vs[-1], [laeufe[0], laeufe[-1]])}; --streng exits {status}", file=sys.stderr)
    return status


def ausfuehren(args, lauf):
    if args.lesen and not any(getattr(args, n) for n in ("selbsttest", "pruefen", "bewerten", "vergleich")):
        return lesen(sys.stdin, sys.stdout)
    for namen, was in ((("selbsttest", "pruefen", "bewerten", "vergleich", "lesen"), "two modes of their own"),
                       (FORMEN, "two forms of one summary")):
        if len(gegeben := [f"--{n}" for n in namen if getattr(args, n, False)]) > 1:
            raise Eingabefehler(f"{' and '.join(gegeben)} are {was}; give one of them")
    if args.bild and not (args.vergleich or args.bewerten):
        raise Eingabefehler("--bild goes with --bewerten TAG or --vergleich A B [C ...]")
    for flagge in ("streng", "mit_vorlage"):
        if getattr(args, flagge) and not args.vergleich:
            raise Eingabefehler(f"--{flagge.replace('_', '-')} goes with --vergleich A B [C ...]")
    if args.vergleich and len(args.vergleich) < 2:
        raise Eingabefehler("argument --vergleich: needs two runs or more (A B, or a series A B C ...)")
    if args.bild:
        pyplot()  # before any work: a missing matplotlib is bad usage
    if args.vergleich or args.bewerten:
        lauf, faelle, _ = gemessen_mit(lauf, args.vergleich or [args.bewerten], args.faelle)
        if args.vergleich:
            return vergleich(lauf, faelle, args.vergleich, args.streng, args.bild)
        return bewerten(lauf, faelle, args.bewerten, args.bild)
    faelle, sha = lade_faelle(lauf.faelle, lauf.katalog, lauf.stichprobe, lauf.stufen)
    if lauf.katalog is not STANDARD and any(STUFE[f.stufe].bfcl for f in faelle):
        raise Eingabefehler(f"{lauf.faelle}: each BFCL case brings its own functions; --katalog and --variante "
                            "choose the tools for the chapter's cases and yours")
    if lauf.system is not None and not all(STUFE[f.stufe].bfcl for f in faelle):
        raise Eingabefehler(f"--system goes with BFCL's cases; {lauf.faelle} is sent the catalogue's opening "
                            "(your own: --katalog FILE)")
    if args.selbsttest:
        return selbsttest(lauf, faelle, sha)
    if not lauf.url or not lauf.modell:
        raise Eingabefehler("--url and --modell are needed to measure "
                            "(or --selbsttest, --bewerten TAG, --vergleich A B)")
    if args.pruefen:
        return pruefen(lauf, faelle_fuer(faelle, lauf.spaeter, lauf.stufen, lauf.faelle))
    if lauf.extra.get("parallel_tool_calls") is False:
        print(f"messen: warning: {PARALLEL_AUS}", file=sys.stderr)
    lauf_messen(lauf, faelle, sha)
    return 0


def beenden(signum, frame):
    raise Beendet()


def main(argv=None):
    for strom in (sys.stdout, sys.stderr):  # whatever a server sent prints, on any terminal
        if hasattr(strom, "reconfigure"):
            strom.reconfigure(errors="backslashreplace")
    vorher_ = sys.stdout, sys.stderr
    sys.stderr = Sichtbar(sys.stderr)  # what a model or a server wrote never reaches a terminal as a command
    try:
        return haupt(argv)
    finally:
        sys.stdout, sys.stderr = vorher_


STEUERZEICHEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# C0 but tab and newline, DEL, C1, and the bidirectional overrides that reorder what a terminal shows


def als_escape(m):
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def sichtbar(text):
    """Text with each control character shown as its escape (\\x1b, \\u202e): an OSC 52 that writes the clipboard, a
    cursor move that overwrites the line above, a reordering of a line, each shows as the text it is."""
    return STEUERZEICHEN.sub(als_escape, text)


class Sichtbar:
    """A text stream whose writes show control characters (sichtbar): every human output, the terminal's and
    Markdown's; --json's stays raw (JSON escapes them itself). roh is the stream beneath, for the status line's
    own carriage return and erase."""

    def __init__(self, roh):
        self.roh = roh

    def write(self, text):
        return self.roh.write(sichtbar(text))

    def __getattr__(self, name):
        return getattr(self.roh, name)


def haupt(argv):
    geheim = []  # never printed: the API key and a password inside the URL
    vorher = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    if vorher is not None:
        signal.signal(signal.SIGTERM, beenden)  # SIGTERM ends a run as Ctrl-C does
    try:
        args = parser().parse_args(argv)
        lauf = lauf_aus(args)
        if lauf.form != "json" and not args.lesen:  # JSON escapes what it holds itself
            sys.stdout = Sichtbar(sys.stdout)
        geheim = [g for g in (lauf.key, lauf.url and urlsplit(lauf.url).password) if g]
        geheim += [v for k, v in parse_qsl(urlsplit(lauf.url or "").query) if GEHEIM_NAME.search(k) and v]
        geheim += [quote(g) for g in geheim]  # as it stands in a URL a message quotes
        return ausfuehren(args, lauf)
    except Abbruch as e:
        text = str(e)
        for g in geheim:
            text = text.replace(g, "***")
        print(f"messen: {text}", file=sys.stderr)
        return e.status
    except KeyboardInterrupt as e:
        print(f"messen: {'terminated' if isinstance(e, Beendet) else 'interrupted'}", file=sys.stderr)
        return getattr(e, "status", 130)
    except BrokenPipeError:  # the reader of stdout went away (| head); the run itself is saved
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    finally:
        if vorher is not None:
            signal.signal(signal.SIGTERM, vorher)


# ===========================================================================
# Part three: beyond the chapter. Later stages, BFCL, variants, the stream, diagnosis, comparison and the rest.
# ===========================================================================


# ---------------------------------------------------------------------------
# Later stages: S5's second turn, S6, and S7's whole job against a simulated CRM
# ---------------------------------------------------------------------------


def pruefe_nachtrag(fall):
    """S5's after-field: the user's reply, a non-empty string; after a reply the right answer is always a call."""
    if not isinstance(fall["nachtrag"], str) or not fall["nachtrag"].strip():
        return "'nachtrag' must be a non-empty string (the user's reply)"
    if not isinstance(fall["danach"], list) or not fall["danach"]:
        return "'danach' must list the calls expected after the reply"
    return None


def pruefe_ergebnis(fall):
    """S6's after-field: one result per expected call, in their order; subtle: after a result the right answer may
    be text (danach [])."""
    ergebnis = fall["ergebnis"]
    if not isinstance(ergebnis, list) or len(ergebnis) != len(fall["erwartet"]):
        return f"'ergebnis' must list one result per expected call ({len(fall['erwartet'])}), in their order"
    if not isinstance(fall["danach"], list):
        return "'danach' must list the calls expected after the results"
    return None


def pruefe_danach(fall, katalog):
    """What follows the first step, with the calls expected after it (danach), as its stage's row checks it: S5's
    reply from the user (nachtrag), S6's results of the tools (ergebnis, one per expected call, in order)."""
    stufe = STUFE[fall["stufe"]]
    neben = stufe.neben
    fremd = next((f for f in DANACH_NEBEN.values() if f in fall and f != neben), None)
    if fremd:
        andere = next(s for s, f in DANACH_NEBEN.items() if f == fremd)
        return f"'{fremd}' belongs to {andere} only, not to {fall['stufe']}"
    da = [f for f in (neben, "danach") if f in fall]
    if stufe.neben_noetig and len(da) < 2:
        return f"stage {fall['stufe']} needs '{neben}' ({stufe.neben_noetig}) and 'danach'"
    if not da:
        return None
    if neben is None:
        return f"'danach' belongs to {' or '.join(DANACH_NEBEN)} only, not to {fall['stufe']}"
    if len(da) == 1:
        return f"'{da[0]}' needs '{({neben, 'danach'} - set(da)).pop()}' beside it"
    return stufe.neben_pruefe(fall) or next(filter(None, (pruefe_aufruf(soll, katalog) for soll in fall["danach"])),
                                            None)


def pruefe_ganz(fall, katalog):
    """An S7 case: id, frage, welt (kontakte, termine, ausgang) and loesung (the reference's steps of calls, the last
    [] for the closing answer); optionally fehler (the refusals the reference meets) and antwort (the values the
    closing answer must name). Replayed on its world, the reference must meet exactly those refusals, find every
    antwort value in a result, and change the world or name a value, or a model doing nothing would pass."""
    for feld in ("id", "frage"):
        if not isinstance(fall.get(feld), str) or not fall[feld].strip():
            return f"field '{feld}' missing or not a non-empty string"
    fremd = next((f for f in fall if f not in ("id", "stufe", "frage", "welt", "loesung", "fehler", "antwort")), None)
    if fremd:
        return f"'{fremd}' does not belong to {GANZ}"
    loesung = fall.get("loesung")
    if not isinstance(loesung, list) or len(loesung) < 2 or loesung[-1] != [] or \
            not all(isinstance(s, list) and s for s in loesung[:-1]):
        return "'loesung' must list the steps of calls, at least one, and end with [] (the closing text answer)"
    if not isinstance(fall.get("fehler", 0), int) or isinstance(fall.get("fehler"), bool) or fall.get("fehler", 0) < 0:
        return "'fehler' must be a whole number of at least 0"
    antwort = fall.get("antwort", [])
    if not isinstance(antwort, list) or not all(isinstance(a, str) and a.strip() for a in antwort):
        return "'antwort' must list the values the closing answer has to name"
    schon = next((a for a in antwort if genannt(a, fall["frage"])), None)
    if schon:
        return f"'antwort' names {json.dumps(schon, ensure_ascii=False)}, which the question gives already: a model " \
               "that makes no call would pass"
    return pruefe_welt(fall.get("welt")) or \
        next(filter(None, (pruefe_aufruf(soll, katalog) for schritt in loesung for soll in schritt)), None) or \
        pruefe_referenz(als_fall(fall))


def _wort(x):
    """A non-empty string without padding: a padded one no stripped filter or call could ever match."""
    return isinstance(x, str) and x.strip() == x != ""


WORT = (_wort, "a non-empty string without leading or trailing spaces")


def wort_oder_null(x):
    return x is None or _wort(x)


WORT_ODER_NULL = (wort_oder_null, "null or a non-empty string without leading or trailing spaces")


def welt_felder_kontakte_status(x):
    return x in STATUS


def welt_felder_kontakte_notizen(x):
    return isinstance(x, list) and all(isinstance(n, str) for n in x)


def welt_felder_termine_calendar(x):
    return x in KALENDER


def welt_felder_termine_date(x):
    return isinstance(x, str) and bool(DATUM_MUSTER.fullmatch(x))


def ist_uhrzeit(x):
    return isinstance(x, str) and bool(ZEIT_MUSTER.fullmatch(x))


WELT_FELDER = {  # part of a world -> {field: (check, what it must be)}; fields without a default are needed
    "kontakte": {"contact_id": WORT, "name": WORT, "email": WORT_ODER_NULL, "company": WORT_ODER_NULL,
                 "status": (welt_felder_kontakte_status, f"one of {', '.join(STATUS)}"),
                 "notizen": (welt_felder_kontakte_notizen,
                             "a list of strings")},
    "termine": {"calendar": (welt_felder_termine_calendar, f"one of {', '.join(KALENDER)}"), "title": WORT,
                "date": (welt_felder_termine_date, "a date YYYY-MM-DD"),
                "start": (ist_uhrzeit, "a time HH:MM"),
                "end": (ist_uhrzeit, "a time HH:MM")},
    "ausgang": {f: (ist_text, "a string") for f in ("to", "subject", "body")}}
WELT_VORGABEN = {"email", "company", "status", "notizen"}  # a contact's fields that welt_von fills in


def pruefe_welt(welt):
    """What is wrong with a starting world, or None: its parts, each record's fields and their types,
    an event that ends before it starts, two contacts with one id."""
    if not isinstance(welt, dict) or set(welt) - set(WELT_FELDER) or \
            not all(isinstance(welt.get(t, []), list) for t in WELT_FELDER):
        return "'welt' must be an object of the lists kontakte, termine and ausgang"
    for teil, felder in WELT_FELDER.items():
        for nr, x in enumerate(welt.get(teil, []), 1):
            wo = f"welt's {teil} #{nr}"
            if not isinstance(x, dict):
                return f"{wo} is not an object"
            fehlt = next((f for f in felder if f not in x and f not in WELT_VORGABEN), None)
            fremd = next((f for f in x if f not in felder), None)
            falsch = next((f for f, (pruefe, _) in felder.items() if f in x and not pruefe(x[f])), None)
            if fehlt or fremd or falsch:
                return f"{wo} " + (f"has no {fehlt}" if fehlt else f"has a field {fremd} the world does not know"
                                   if fremd else f"has {falsch} {json.dumps(x[falsch])}, not {felder[falsch][1]}")
            if teil == "termine" and x["start"] >= x["end"]:
                return f"{wo} starts at {x['start']}, not before its end {x['end']}"
    ids = collections.Counter(k["contact_id"] for k in welt.get("kontakte", []))
    doppelt = next((i for i, n in ids.items() if n > 1), None)
    if doppelt:
        return f"two contacts of 'welt' have the id {doppelt}"
    vergeben = next(((i, NEUE_IDS.index(i) + 1) for i in ids if i in NEUE_IDS), None)
    return vergeben and f"a contact of 'welt' has the id {vergeben[0]}, which the world gives the " \
                        f"{vergeben[1]}. contact a job creates"


def pruefe_referenz(fall):
    """Replay the reference on its world: what no model could meet, or a do-nothing model would; or None."""
    welt, ergebnisse = abgespielt(fall)
    abgelehnt = [(nr, soll, e["error"]) for nr, (schritt, es) in enumerate(zip(fall.loesung, ergebnisse), 1)
                 for soll, e in zip(schritt, es) if "error" in e]
    gelesen = next((x for x in abgelehnt if x[1]["name"] in LESEND), None)
    if gelesen:  # a read changes nothing: a model that never sent it would pass as well, without recovering
        nr, soll, grund = gelesen
        return (f"the world refuses step {nr}'s {soll['name']} ({grund}); a job's 'fehler' counts writes the world "
                "turns down (a room already taken), never a read, which a model can leave out")
    if len(abgelehnt) != fall.fehler:
        if len(abgelehnt) > fall.fehler:
            nr, soll, grund = abgelehnt[fall.fehler]
            return (f"the world refuses step {nr}'s {soll['name']} ({grund}); a reference meets only the refusals "
                    "'fehler' counts, for a job that tests recovery")
        return f"'fehler' counts {fall.fehler} refused calls, the replay of 'loesung' meets {len(abgelehnt)}"
    gesehen = "\n".join(werte_von(ergebnisse))  # the results' values, never their keys
    fehlt = next((w for w in fall.antwort if not genannt(w, gesehen)), None)
    if fehlt:
        return f"'antwort' names {json.dumps(fehlt, ensure_ascii=False)}, which no value of the replay's results holds"
    if kanonisch(welt, fall) == kanonisch(welt_von(fall), fall) and not fall.antwort:
        return "the reference changes nothing and names no value: a model that does nothing would pass"
    return None


def werte_von(x):
    """Every string and number a result holds, at any depth: what a closing answer could name of it."""
    if isinstance(x, (dict, list)):
        return [w for v in (x.values() if isinstance(x, dict) else x) for w in werte_von(v)]
    return [] if x is None or isinstance(x, bool) else [str(x)]


def ergebnis_nachrichten(fall, katalog):
    """S6: the first step as the assistant's tool_calls, then each call's result as a tool message."""
    gesendet = [{"name": neuer_name(katalog, s["name"]), "args": umbenannte_args(katalog, s["args"])}
                for s in fall.erwartet]
    return werkzeug_runde(fall.id, gesendet, fall.ergebnis, katalog)


def werkzeug_runde(schluessel, aufrufe, ergebnisse, katalog, gesagt=None):
    """One round of tools as the conversation carries it: the assistant's calls (name and args as sent) beside what
    it told the user (gesagt), then one tool message per call, the result's keys in the names the catalogue sent.
    content "" where nothing was told: TGI refuses a message without content, LM Studio refused null. The ids are 9
    letters or digits, the only ids Mistral's templates take, fixed by `schluessel`: a request is the same each time."""
    ids = [hashlib.sha256(f"{schluessel}/{i}".encode()).hexdigest()[:9] for i in range(len(aufrufe))]
    rufe = [{"id": i, "type": "function", "function": {"name": begrenzt(c["name"]),
                                                        "arguments": json.dumps(begrenzt(c["args"]))}}
            for i, c in zip(ids, aufrufe)]
    gesagt = begrenzt(gesagt) if isinstance(gesagt, str) else ""
    return [{"role": "assistant", "content": gesagt, "tool_calls": rufe}] + [
        {"role": "tool", "tool_call_id": i, "content": ergebnis_text(umbenannte_args(katalog, e))}
        for i, e in zip(ids, ergebnisse)]


WERT_HOECHSTENS = 2_000  # characters of one string a conversation carries back (a model's 170 KB note)
EINTRAEGE_HOECHSTENS = 200  # keys of one object, items of one list (a model's 200,000 arguments)
ERGEBNIS_HOECHSTENS = 20_000  # characters of one tool message: a request never passes a few MB


def begrenzt(wert):
    """A value with each string cut at WERT_HOECHSTENS characters and each object or list at EINTRAEGE_HOECHSTENS
    entries, saying so: still the JSON it was."""
    if isinstance(wert, str) and len(wert) > WERT_HOECHSTENS:
        return f"{wert[:WERT_HOECHSTENS]}... (cut: {len(wert) - WERT_HOECHSTENS} characters more)"
    mehr = f"(cut: {len(wert) - EINTRAEGE_HOECHSTENS} entries more)" if isinstance(wert, (dict, list)) and \
        len(wert) > EINTRAEGE_HOECHSTENS else None
    if isinstance(wert, dict):
        kurz_ = {k: begrenzt(v) for k, v in list(wert.items())[:EINTRAEGE_HOECHSTENS]}
        return dict(kurz_, **{"...": mehr}) if mehr else kurz_
    return [begrenzt(v) for v in wert[:EINTRAEGE_HOECHSTENS]] + [mehr] * bool(mehr) if isinstance(wert, list) else wert


def ergebnis_text(ergebnis):
    """A tool's result as its message carries it, bounded: long strings cut, a long whole cut with a note."""
    text = json.dumps(begrenzt(ergebnis), ensure_ascii=False)
    if len(text) <= ERGEBNIS_HOECHSTENS:
        return text
    mehr = len(text) - ERGEBNIS_HOECHSTENS
    return f"{text[:ERGEBNIS_HOECHSTENS]} ... (the result is cut here: {mehr} characters more)"


def nachfrage_anfrage(fall, lauf, nachricht):
    """The second turn: the question, the first answer's content as returned, and the user's reply."""
    body = anfrage(fall, lauf)
    body["messages"] += [{"role": "assistant", "content": nachricht.get("content") or ""},
                         {"role": "user", "content": lauf.katalog.als_gesendet(fall.nachtrag)}]
    return body

KALENDER_NAMEN = {"team": "the team calendar", "vertrieb": "the sales calendar",
                  "raum": "the room-booking calendar", "privat": "the user's private calendar"}
DATUM_MUSTER, ZEIT_MUSTER = re.compile(r"\d{4}-\d{2}-\d{2}"), re.compile(r"([01]\d|2[0-3]):[0-5]\d")


class CrmFehler(Exception):
    """A tool call the CRM refuses: it changes nothing and returns {"error": ...}."""


def welt_von(fall, salz=None):
    """A fresh copy of a case's starting world: {"kontakte": [...], "termine": [...], "ausgang": [...],
    "neu": 0, "salz": salz}. A contact is {contact_id, name, email, company, status, notizen}; an event
    {calendar, title, date, start, end}, a room booking an event of the calendar raum titled with the room; a
    mail {to, subject, body}; neu counts the contacts created, whose ids follow from it and the job's salz."""
    w = copy.deepcopy(fall.welt)
    return {"kontakte": [dict({"email": None, "company": None, "status": "lead", "notizen": []}, **k)
                         for k in w.get("kontakte", [])],
            "termine": list(w.get("termine", [])), "ausgang": list(w.get("ausgang", [])), "neu": 0, "salz": salz}


def kanonisch(welt, fall):
    """The world as one comparable value, as tau-bench's to_hashable compares: the contacts the job found
    by their id; the contacts it created by their content, whatever id they got (the same contact by
    another path is the same); events, bookings and mails as multisets (a spare copy is spare)."""
    alt = {k["contact_id"] for k in fall.welt.get("kontakte", [])}
    def reihe(xs):
        return sorted(xs, key=lambda x: json.dumps(x, sort_keys=True))
    return {"kontakte": [k for k in welt["kontakte"] if k["contact_id"] in alt],  # in the world's order, as found
            "neu": reihe({f: v for f, v in k.items() if f != "contact_id"} for k in welt["kontakte"]
                         if k["contact_id"] not in alt),
            "termine": reihe(welt["termine"]), "ausgang": reihe(welt["ausgang"])}


def fuehre_aus(welt, name, args, namen=None, attrappen=()):
    """Execute one call against the world: its result as the CRM returns it, {"error": ...} for a call it
    refuses (an unknown tool or argument, a missing or invalid value, an unknown id, a taken room); a
    refused call changes nothing. Strings are taken stripped, as passt compares them. namen: tool and
    parameter names as the catalogue sent them (a variant), which every text of the result then uses.
    attrappen: the decoys the catalogue offered (ablenkung), answered as the tools they claim to be."""
    nenne = functools.partial(benannt, namen or {})
    tools = {**CRM, **{n: ATTRAPPEN[n] for n in attrappen}}
    if not isinstance(name, str):
        return {"error": "the call names no tool"}
    if name not in tools:
        return {"error": f"there is no tool {nenne(name)}"}
    if not isinstance(args, dict):
        return {"error": "the arguments are not a JSON object"}
    schema = SCHEMATA[name]
    fremd = sorted(set(args) - set(schema["properties"]))
    fehlt = [p for p in schema["required"] if p not in args]
    falsch = next((k for k, v in args.items() if k in schema["properties"] and not isinstance(v, str)), None)
    args = {k: v.strip() if isinstance(v, str) else v for k, v in args.items()}
    ausser = next((k for k, v in args.items() if v not in schema["properties"].get(k, {}).get("enum", [v])), None)
    grund = (fremd and f"{nenne(name)} has no argument {nenne(fremd[0])}") or \
        (fehlt and f"{nenne(name)} needs {nenne(fehlt[0])}") or (falsch and f"{nenne(falsch)} must be a string") or \
        (ausser and f"{nenne(ausser)} must be one of {', '.join(schema['properties'][ausser]['enum'])}")
    if grund:
        return {"error": grund}
    try:
        return tools[name](welt, **args)
    except CrmFehler as e:
        return {"error": CRM_NAME.sub(lambda m: nenne(m.group(1)), str(e))}


CRM_NAME = re.compile(r"«(\w+)»")  # a tool's or parameter's name in a CrmFehler's text, named as sent


def benannt(namen, name):
    """A tool's or parameter's name as the catalogue sent it (namen: original -> sent); an old name the
    model wrote, as it wrote it (never a word of what messen knows of it)."""
    return namen.get(name, str(name).removesuffix(ALTER_NAME))


def kontakt(welt, contact_id):
    treffer = next((k for k in welt["kontakte"] if k["contact_id"] == contact_id), None)
    if treffer is None:
        raise CrmFehler(f"no contact has the id {contact_id}")
    return treffer


def neue_id(nummer, salz=None):
    """The id of the world's nummer-th new contact: a valid version-4 UUID, one per creation (a contact created
    twice is there twice), the same in every replay of one job's output. salz: the job's and the run's (job_salz),
    so no id can be known before the run gives it; None: the reference's replay, and runs saved without one."""
    quelle = f"kontakt/{nummer}" if salz is None else f"kontakt/{salz}/{nummer}"
    h = hashlib.sha256(quelle.encode()).hexdigest()
    # str(uuid.UUID(h[:32], version=4)) spelled out: importing uuid (and platform with it) cost every run 3 ms
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"


def job_salz(welt_salz, fall_id, lauf):
    """What a job's drawn values come from: the run's salt (saved in its settings line), the job, the output."""
    return None if welt_salz is None else f"{welt_salz}/{fall_id}/{lauf}"


def gezogen(fall, salz):
    """An S7 job in values drawn from salz (job_salz of the run's ziehung): each contact id of its world another
    UUID, each address another tag before its @, a company the question does not name another of FIRMEN, every time
    of day moved by the same whole hours (order and clashes stay). Question, world, reference and answer change
    alike: the same job, in values no case file or other job's transcript gives. salz None: the case as written."""
    if salz is None:
        return fall
    def zufall(x):
        return int(hashlib.sha256(f"{salz}/{x}".encode()).hexdigest()[:8], 16)
    kontakte, text = fall.welt.get("kontakte", []), json.dumps(fall.roh, ensure_ascii=False)
    ungenannt = list(dict.fromkeys(k["company"] for k in kontakte if (k.get("company") or fall.frage) not in
                                   fall.frage))
    ersatz = {k["contact_id"]: neue_id(k["contact_id"], salz) for k in kontakte} | {
        k["email"]: k["email"].replace("@", f".{zufall(k['email']) % 9000 + 1000}@", 1) for k in kontakte if
        k.get("email")} | dict(zip(ungenannt, random.Random(zufall("firmen")).sample(
            [f for f in FIRMEN if f not in text], len(ungenannt))))
    stunden = [int(h) for h, _ in TAGESZEIT.findall(text)]
    um = [d for d in range(-min(stunden, default=0), 24 - max(stunden, default=23)) if d] or [0]
    d = um[zufall("zeit") % len(um)]
    text = TAGESZEIT.sub(lambda m: f"{int(m.group(1)) + d:02}:{m.group(2)}", text)
    text = re.sub(r"(?<![\w.+@-])(%s)(?![\w@-]|\.\w)" % ("|".join(map(re.escape, ersatz)) or "(?!)"),  # (?!): none
                  lambda m: ersatz[m.group(1)], text)
    return als_fall(json.loads(text))


FIRMEN = ("Nordlicht GmbH", "Seeblick AG", "Bergwerk KG", "Talhof eG", "Lindenhof GmbH", "Eichbaum AG", "Mühlbach KG",
          "Sonnenhang eG", "Waldrand GmbH", "Feldweg AG", "Hafenblick KG", "Rosental eG")  # a company the job must read
TAGESZEIT = re.compile(r"(?<![\d:])([01]\d|2[0-3]):([0-5]\d)(?![\d:])")


NEUE_IDS = [neue_id(n) for n in range(1, 101)]  # the ids the reference's replay gives the first hundred created


def zeitraum(date, start, end):
    if not DATUM_MUSTER.fullmatch(date):
        raise CrmFehler(f"the date {date} is not YYYY-MM-DD")
    for t in (start, end):
        if not ZEIT_MUSTER.fullmatch(t):
            raise CrmFehler(f"the time {t} is not HH:MM")
    if start >= end:
        raise CrmFehler(f"the start {start} is not before the end {end}")


def crm_list_contacts(welt, company=None, status=None):
    return {"contacts": [{"contact_id": k["contact_id"], "name": k["name"], "company": k["company"],
                          "status": k["status"]} for k in sorted(welt["kontakte"], key=lambda k: k["name"])
                         if (company is None or k["company"] == company) and (status is None or k["status"] == status)]}


def crm_get_contact(welt, contact_id):
    k = kontakt(welt, contact_id)
    return {"contact_id": k["contact_id"], "name": k["name"], "email": k["email"], "company": k["company"],
            "status": k["status"], "notes": list(k["notizen"])}


def crm_create_contact(welt, name, email=None, company=None):
    welt["neu"] += 1
    neu = neue_id(welt["neu"], welt["salz"])
    welt["kontakte"].append({"contact_id": neu, "name": name, "email": email, "company": company, "status": "lead",
                             "notizen": []})
    return {"contact_id": neu}


def crm_update_contact(welt, contact_id, **felder):
    k = kontakt(welt, contact_id)
    if not felder:
        raise CrmFehler("«update_contact» needs a field to change: «status», «email» or «company»")
    k.update(felder)
    return {"contact_id": contact_id, "updated": {f: felder[f] for f in sorted(felder)}}


def crm_delete_contact(welt, contact_id):
    welt["kontakte"].remove(kontakt(welt, contact_id))
    return {"deleted": contact_id}


def crm_add_note(welt, contact_id, text):
    kontakt(welt, contact_id)["notizen"].append(text)
    return {"contact_id": contact_id, "notes": len(kontakt(welt, contact_id)["notizen"])}


def crm_list_calendars(welt):
    # subtle: not "name": under synonyme a result's key that is a parameter's name is renamed (full_name)
    return {"calendars": [{"key": k, "description": n} for k, n in KALENDER_NAMEN.items()]}


def crm_get_events(welt, calendar, date):
    return {"events": [{"title": t["title"], "start": t["start"], "end": t["end"]}
                       for t in sorted(welt["termine"], key=lambda t: t["start"])
                       if t["calendar"] == calendar and t["date"] == date]}


def crm_create_event(welt, calendar, title, date, start, end):
    zeitraum(date, start, end)
    termin = {"calendar": calendar, "title": title, "date": date, "start": start, "end": end}
    welt["termine"].append(termin)
    return {"created": termin}


def crm_book_room(welt, room, date, start, end):
    zeitraum(date, start, end)
    belegt = next((t for t in welt["termine"] if t["calendar"] == "raum" and t["title"] == room and
                   t["date"] == date and t["start"] < end and start < t["end"]), None)
    if belegt:
        raise CrmFehler(f"the room {room} is taken on {date} from {belegt['start']} to {belegt['end']}")
    welt["termine"].append({"calendar": "raum", "title": room, "date": date, "start": start, "end": end})
    return {"booked": {"room": room, "date": date, "start": start, "end": end}}


def crm_send_email(welt, to, subject, body):
    if not re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", to):
        raise CrmFehler(f"{to} is not an email address")
    welt["ausgang"].append({"to": to, "subject": subject, "body": body})
    return {"sent": True}


CRM = {"list_contacts": crm_list_contacts, "get_contact": crm_get_contact, "create_contact": crm_create_contact,
       "update_contact": crm_update_contact, "delete_contact": crm_delete_contact, "add_note": crm_add_note,
       "list_calendars": crm_list_calendars, "get_events": crm_get_events, "create_event": crm_create_event,
       "book_room": crm_book_room, "send_email": crm_send_email}  # tool name -> function


def crm_cancel_event(welt, calendar, event_id):
    raise CrmFehler(f"no event of the calendar {calendar} has the id {event_id}")  # events have none


def attrappen_list_companies(welt, industry=None):
    return {"companies": sorted({k["company"] for k in welt["kontakte"] if k["company"]})}


def attrappen_send_sms(welt, phone, text):
    return {"sent": True}


def attrappen_archive_contact(welt, contact_id):
    return {"archived": kontakt(welt, contact_id)["contact_id"]}


ATTRAPPEN = {  # --variante ablenkung: each decoy answers as the tool it claims to be, and changes nothing;
    # a call of one is spare all the same (LESEND)
    "list_companies": attrappen_list_companies,
    "cancel_event": crm_cancel_event, "send_sms": attrappen_send_sms,
    "archive_contact": attrappen_archive_contact}
SCHEMATA = {**WERKZEUGE, **{w["function"]["name"]: w["function"]["parameters"] for w in ABLENKUNG}}
LESEND = {"list_contacts", "get_contact", "list_calendars", "get_events"}  # the tools that change nothing


def abgespielt(fall):
    """The reference replayed on a fresh copy of its world: (the world it leaves, each step's results)."""
    welt = welt_von(fall)
    return welt, [[fuehre_aus(welt, soll["name"], soll["args"]) for soll in schritt] for schritt in fall.loesung]


def zustand_anders(ist, soll):
    """Which part of an end state differs from the reference's, in the user's terms (a contact, a room
    booking, an event, a mail), each spare or missing copy counted; None when they are equal."""
    teile = []
    ist_k, soll_k = ({k["contact_id"]: k for k in w["kontakte"]} for w in (ist, soll))
    for i in dict.fromkeys([*soll_k, *ist_k]):
        a, b = ist_k.get(i), soll_k.get(i)
        if a is None:
            teile.append(f"contact {b['name']} deleted")
        elif b is None:
            teile.append(f"contact {a['name']} not deleted")
        elif a != b:
            teile.append(f"contact {b['name']}: " + ", ".join(
                f"{f} {kurz(json.dumps(a[f], ensure_ascii=False), 60)} instead of "
                f"{kurz(json.dumps(b[f], ensure_ascii=False), 60)}" for f in a if a[f] != b.get(f)))
    for teil in ("neu", "termine", "ausgang"):
        def zaehle(w):
            return collections.Counter(json.dumps(x, sort_keys=True) for x in w[teil])
        mehr, weniger = zaehle(ist) - zaehle(soll), zaehle(soll) - zaehle(ist)
        for wie, zahl in (("missing", weniger), ("spare", mehr)):
            teile += [f"{was_im_crm(teil, json.loads(x))} {wie}" + (f" ({n} times)" if n > 1 else "")
                      for x, n in zahl.items()]
    return gekuerzt(teile) or None


ANDERS_HOECHSTENS = 600  # characters of a "differs" line: a model's 5 MB of spare mails stay in the file


def gekuerzt(teile, alle=None, wort=""):
    """'a; b; c' cut after whole parts at ANDERS_HOECHSTENS characters, naming how many more (alle: how many
    parts there are, where `teile` holds only the first of them)."""
    alle = len(teile) if alle is None else alle
    text = ""
    for k, teil in enumerate(teile):
        if text and len(text) + len(teil) > ANDERS_HOECHSTENS:
            return f"{text}; ... and {alle - k} more{wort}"
        text = f"{text}; {teil}" if text else teil
    return f"{text}; ... and {alle - len(teile)} more{wort}" if alle > len(teile) else text


def was_im_crm(teil, x):
    """One record as the user knows it: 'a room booking of besprechung on 2026-03-18, 14:00-15:30'."""
    def k(v):
        return kurz(json.dumps(v, ensure_ascii=False), 60)
    if teil == "neu":
        felder = ", ".join(f"{f} {k(x[f])}" for f in ("email", "company") if x.get(f))
        notizen = f", {len(x['notizen'])} note{'s' * (len(x['notizen']) != 1)}" if x.get("notizen") else ""
        return f"a new contact {k(x['name'])}" + (f" ({felder}{notizen})" if felder or notizen else "")
    if teil == "ausgang":
        return f"a mail to {k(x['to'])}, subject {k(x['subject'])}"
    zeit = f"on {x['date']}, {x['start']}-{x['end']}"
    if x["calendar"] == "raum":
        return f"a room booking of {k(x['title'])} {zeit}"
    return f"the event {k(x['title'])} in the calendar {x['calendar']} {zeit}"


class Job(typing.NamedTuple):
    """What an S7 job's Note holds of its way: its requests, the reference's steps, whether a limit ended it
    (the step limit, or the server's context), and each step graded as it came."""
    schritte: int
    referenz: int
    grenze: bool
    gekommen: tuple  # a Note per step
    frage: str = ""  # the question and the reference's steps as this output's draw (gezogen) asked them
    loesung: str = ""


def bewerte_ganz(fall, verlauf, umbenennung=None, voll=False, salz=None, grenze=None):
    """Grade one S7 job on its end state and its way: every step's calls run again on a fresh copy of the world
    (the tools are deterministic: this is the world the loop left), compared with the world the reference leaves.
    erledigt (treffer 1) needs that, no spare write (im_job), and a closing answer that names the values antwort
    lists and none of their alternatives (genannt). Its Note is an answer's, its steps in job. voll: the request
    after the last step was refused for its length, which ended the job."""
    schritte = [bewerte_ausgabe(fall, s["nachricht"], s["finish_reason"], umbenennung, s["usage"],
                                grenze)._replace(defekte=tuple((s.get("strom") or {}).get("defekte", [])),
                                                 **kennung_von(s))
                for s in verlauf]  # each step as its stage grades one (a text ends the job), with what its stream broke
    gelaufen = gelaufene_aufrufe([b.aufrufe for b in schritte])
    welt, weg, ergebnisse = im_job(fall, gelaufen, salz)
    letzte, texte = schritte[-1], [ohne_denken(inhalt(s["nachricht"])) for s in verlauf]
    # subtle: a closing text the limit merely ended still closes the job, as a complete answer does elsewhere
    beendet = not voll and not gelaufen[-1] and (letzte.mangel is None or letzte.mangel == "abgeschnitten" and
                                    texte[-1].strip() != "")
    zustand = zustand_anders(kanonisch(welt, fall), kanonisch(abgespielt(fall)[0], fall))  # the reference's
    weg = [] if zustand else weg  # a spare write that left its trace is named by the end state
    teile = ([f"the end state differs: {zustand}"] if zustand else []) + \
        (antwort_fehler(fall, "\n".join(texte), ergebnisse) if beendet else []) + weg
    alle = [c for aufrufe in gelaufen for c in aufrufe]
    nativ = [c for c in alle if c["quelle"] == NATIV]
    fehlt = None if beendet else letzte.mangel
    grenze = "kontext" if voll else not beendet and fehlt is None and len(verlauf) >= schrittgrenze(fall)
    # an S7 job's line sums its steps' tokens: whose an empty last step is, its own count says
    return letzte._replace(aufrufe=tuple(nativ + [c for c in alle if c["quelle"] != NATIV]),
        form=next((c["quelle"] for c in alle if c["quelle"] != NATIV), "nativ" if nativ else None),
        treffer=int(beendet and not teile), offen=0, soll=1, nativ=len(nativ), mangel=fehlt, still=False,
        protokoll=dict(sum((collections.Counter(b.protokoll) for b in schritte), collections.Counter())),
        befunde=tuple(job_befunde(fehlt, letzte, beendet, teile, weg, grenze, verlauf)),
        job=Job(len(verlauf), len(fall.loesung), bool(grenze), tuple(schritte), fall.frage, " | ".join(
            aufrufe_text(s) if s else "an answer" for s in fall.loesung)))


def job_befunde(fehlt, letzte, beendet, teile, weg, grenze, verlauf):
    """A failed job's one Befund: no answer, the step limit, or what differs (the end state, the closing answer:
    falscher_zustand; the way: ueberzaehlig), in one line."""
    if fehlt:
        return letzte.befunde
    if grenze == "kontext":  # the model's: it grew the conversation past what the server takes, on the same server
        return [Befund(("kontextgrenze",), f"the conversation outgrew the server's context at step {len(verlauf) + 1}")]
    if not beendet:
        return [Befund(("schrittgrenze",), f"still calling after {len(verlauf)} requests, the step limit") if grenze
                else Befund(("falscher_zustand",), "no closing answer")]
    arten = (("falscher_zustand",) if len(teile) > len(weg) else ()) + (("ueberzaehlig",) if weg else ())
    return [Befund(arten, gekuerzt(teile))] if teile else []


def gelaufene_aufrufe(schritte):
    """The calls of each step that the loop runs: all, but a call written as text that repeats one run before
    (a model quoting what it did in its closing answer is not doing it again)."""
    frueher, gelaufen = set(), []
    for aufrufe in schritte:
        gelaufen.append([c for c in aufrufe if c["quelle"] == NATIV or kern_text(c) not in frueher])
        frueher.update(map(kern_text, aufrufe))
    return gelaufen


def kern_text(c):
    """A call as the world takes it, comparable: its name and its arguments, strings stripped."""
    args = c["args"] if not isinstance(c["args"], dict) else \
        {k: v.strip() if isinstance(v, str) else v for k, v in c["args"].items()}
    return json.dumps({"name": c["name"], "args": args}, sort_keys=True, ensure_ascii=False)


def im_job(fall, gelaufen, salz=None):
    """Run a job's calls on a fresh copy of its world: (the world they leave, what was wrong with the way, every
    result). A write is spare when it repeats one of the job (same tool, same arguments, refused or not), when it
    is a decoy's or no tool's of the CRM, or when the reference makes it only after a refusal and it was sent
    before that refusal came back (a hedge: both rooms booked at once)."""
    welt, warten = welt_von(fall, salz), nach_ablehnung(fall)
    erst = {}  # a call -> the step it was first sent in
    for nr, aufrufe in enumerate(gelaufen):
        for c in aufrufe:
            erst.setdefault(kern_text(c), nr)
    weg, geschrieben, ergebnisse = [], set(), []
    for nr, aufrufe in enumerate(gelaufen):
        for c in aufrufe:
            k = kern_text(c)
            wartet = warten.get(k)
            ergebnisse.append(fuehre_aus(welt, c["name"], c["args"], attrappen=ATTRAPPEN))
            if c["name"] in LESEND or c["args"] is None:
                continue
            weg += [f"{aufruf_text(c)} {grund}" for grund in (
                "is no tool of the CRM" * (c["name"] not in CRM), "repeats a write of the job" * (k in geschrieben),
                "came before the refusal it waits for" * (wartet in erst and erst[wartet] >= nr)) if grund][:1]
            geschrieben.add(k)
    return welt, weg, ergebnisse


def nach_ablehnung(fall):
    """The reference's writes that follow a refusal: {a write: the refused call it waits for}."""
    _, ergebnisse = abgespielt(fall)
    warten, abgelehnt = {}, None
    for schritt, es in zip(fall.loesung, ergebnisse):
        if abgelehnt:
            warten.update({kern_text(dict(c, quelle=NATIV)): abgelehnt for c in schritt if c["name"] not in LESEND})
        abgelehnt = next((kern_text(c) for c, e in zip(schritt, es) if "error" in e), abgelehnt)
    return warten


E_MAIL = re.compile(r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}")  # bounded: linear in any text
ENUMS = [p["enum"] for t in WERKZEUGE.values() for p in t["properties"].values() if "enum" in p]
ENUM_WOERTER = {x for e in ENUMS for x in e}


def antwort_fehler(fall, erzaehlt, ergebnisse):
    """What the job's told text lacks or hedges: each value of antwort not named, or named though no result of this
    job nor the question gave it (a guess); each rival named beside it, whether a result showed it or not: another
    address, or another value of its field's enum named in its sentence or as a status (als_rivale)."""
    antwort, gegeben = fall.antwort, "\n".join(werte_von(ergebnisse) + [fall.frage])
    teile = [f"the closing answer does not name {w}" if not genannt(w, erzaehlt, True) else
             f"the closing answer names {w}, which no result of this job gave" for w in antwort
             if not (genannt(w, erzaehlt, True) and genannt(w, gegeben))]
    soll = {w.lower() for w in antwort}
    for w in antwort:
        enum = w.lower() in ENUM_WOERTER
        andere = [x for e in ENUMS if w.lower() in e for x in e] if enum else \
            [m.lower() for m in E_MAIL.findall(erzaehlt)] if E_MAIL.fullmatch(w) else []
        teile += [f"the closing answer names {x} beside {w}" for x in dict.fromkeys(andere) if x not in soll and
                  genannt(w, erzaehlt, True) and (not enum or als_rivale(x, w, erzaehlt))]
    return teile


def als_rivale(x, w, text):
    """Is the enum value x named beside w: in a sentence that names w ('a lead or an interessent'), or as a status
    ('status: lead')? Not a word of another sentence ('I can lead you to her notes')."""
    return any(genannt(x, satz) and genannt(w, satz, True) for satz in re.split(r"[.!?;\n]+(?:\s|$)", text)) or \
        re.search(rf"\bstatus\W{{1,3}}(?:is\s+)?{re.escape(x)}\b", text, re.IGNORECASE) is not None


def genannt(wert, text, stamm=False):
    """Does the text name the value? An enum word or an address as a whole word, in any case (Lea.H@...), an enum
    word with stamm also as a word's stem (Interessentin); any other value as it stands (a name, a date)."""
    if wert.lower() in ENUM_WOERTER or E_MAIL.fullmatch(wert):
        ende = r"(?![-]|\.\w)" if stamm and wert.lower() in ENUM_WOERTER else r"(?![\w-]|\.\w)"
        return re.search(rf"(?<![\w.+-]){re.escape(wert)}{ende}", text, re.IGNORECASE) is not None
    return wert in text


def bewerte_job(fall, a, roh, fragen, umbenennung, nachfrage, welt_salz, grenze, ziehung):
    """An S7 job on its end state and its way, in the values its output was drawn in; its steps' streams are not
    cross-checked (what they broke stands in protokoll), its costs are its steps' added up."""
    defekte = dict.fromkeys(d for z in fragen for d in (z.get("strom") or {}).get("defekte", []))
    voll = any("fehlt" in z for z in a["zuege"])  # a step refused for its length (frage_ganz)
    salz, fall = job_salz(welt_salz, a["id"], a["lauf"]), gezogen(fall, job_salz(ziehung, a["id"], a["lauf"]))
    note = bewerte_ganz(fall, fragen, umbenennung, voll, salz, grenze)._replace(defekte=tuple(defekte))
    return roh._replace(note=note, usage={f: sum(zahl_oder_none(z["usage"], f) or 0 for z in fragen)  # a job's
                                          for f in ("prompt_tokens", "completion_tokens")})  # unmeasured: none


def anfragen_je_job(ausgaben):
    """The median number of requests a job took (S7's), beside the reference's; None for a run of no job."""
    s7 = [a.note.job for a in ausgaben if a.note.job is not None]
    return Anfragen(statistics.median(j.schritte for j in s7), statistics.median(j.referenz for j in s7)) \
        if s7 else None


def frage_ganz(endpunkt, fall, k=0):
    """S7: the whole job in a loop, one output: each answer's calls run against the job's own world, sent back with
    one tool message each, until an answer without a call or the step limit; each turn keeps what the world gave."""
    lauf, namen = endpunkt.lauf, gesendete_namen(endpunkt.lauf.katalog)
    fall = gezogen(fall, job_salz(lauf.ziehung, fall.id, k))
    welt, body, zuege = welt_von(fall, job_salz(lauf.welt_salz, fall.id, k)), anfrage(fall, lauf), []
    frueher = []
    for schritt in range(schrittgrenze(fall)):
        try:
            antwort = endpunkt.frage(fall._replace(id=f"{fall.id}, step {schritt + 1}"), body)
        except Anfragefehler as e:  # the conversation the job grew no longer fits: the job ends there, not the run
            if schritt == 0 or not KONTEXT_VOLL.search(str(e)):
                raise
            zuege.append({"zweck": SCHRITT, "fehlt": str(e)})
            break
        frueher.append(lies_aufrufe(antwort.nachricht)[0])
        aufrufe = gelaufene_aufrufe(frueher)[-1]  # a call quoted as text again is not run again
        zurueck = zurueckbenannt(aufrufe, lauf.katalog.umbenennung) if lauf.katalog.umbenennung else aufrufe
        ergebnisse = [fuehre_aus(welt, c["name"], c["args"], namen, lauf.katalog.zusatz) for c in zurueck]
        zuege.append(zug(SCHRITT, antwort, ergebnisse=begrenzt(ergebnisse)))  # saved as sent: bounded
        if not aufrufe:
            break
        # the calls as the model named them (a malformed one as {}), beside what it told; their results
        body["messages"] += werkzeug_runde(f"{fall.id}/{schritt}", [
            {"name": c["name"] or "?", "args": {} if c["args"] is None else c["args"]} for c in aufrufe],
            ergebnisse, lauf.katalog, antwort.nachricht.get("content") if native_rohe(antwort.nachricht) else None)
    return zuege


KONTEXT_VOLL = re.compile(r"context (length|size|window)|maximum context|exceeds? the available context|"
                          r"context_length_exceeded|longer than the model's context|must be <= \d+|too many tokens|"
                          r"input is too long", re.I)
# llama.cpp's exceed_context_size_error, vLLM's "maximum context length", SGLang's "longer than the model's
# context length", TGI's "inputs tokens + max_new_tokens must be <= N": a request refused for its length


def gesendete_namen(katalog):
    """original -> sent, for every tool and parameter a variant renamed; {} for the catalogue as written."""
    u = katalog.umbenennung
    return {**u["argumente"], **u["werkzeuge"]} if u else {}


def schrittgrenze(fall):
    """Requests a job may take: twice the reference's, at least 6; a job still calling then has failed."""
    return max(6, 2 * len(fall.loesung))


def ganz_zeilen(a, mehrere, fall):
    """One failed S7 job: the question, the reference step by step, the steps that came, why it failed."""
    lauf = f" #{a.lauf + 1}" if mehrere else ""
    return [f"  {a.id}{lauf}  {a.note.job.frage}", f"      reference: {a.note.job.loesung}",
            f"      came:      {kurz(' | '.join(map(schritt_text, a.note.job.gekommen)), 3 * ANDERS_HOECHSTENS)}",
            f"      differs:   {warum_ganz(a.note)}"]


def warum_ganz(b):
    """Why an S7 job failed, in one line: its one Befund."""
    return ("the last step is " if b.mangel else "") + b.befunde[0].text


def schritt_text(b):
    """One step of a job as it came: its calls, the answer's first line, or why it is no answer."""
    if b.aufrufe:
        return aufrufe_text(b.aufrufe)
    if b.mangel and not (b.mangel == "abgeschnitten" and b.text):
        return f"no answer ({b.mangel})"
    return f"the answer \"{b.text}\"" + (" (cut by the token limit)" if b.mangel else "")


def erledigt_worte(k):
    j = k.anfragen_je_job
    return (f"95 % interval {intervall_worte(k.erledigt_ki)}; S7 jobs done: the reference's end state, then an "
            f"answer; {j.median:g} request{'s' * (j.median != 1)} per job, the reference {j.referenz:g}, medians")

# ---------------------------------------------------------------------------
# BFCL's files: the Berkeley Function Calling Leaderboard's cases, each category a stage
# ---------------------------------------------------------------------------


BFCL_DATEI = re.compile(r"BFCL_v\d+_(\w+)\.json")  # BFCL_v4_simple_python.json: its category is simple_python
BFCL_OPENAPI = {"integer": "integer", "number": "number", "float": "number", "string": "string", "boolean": "boolean",
                "bool": "boolean", "array": "array", "list": "array", "dict": "object", "object": "object",
                "tuple": "array", "any": "string"}  # BFCL's GORILLA_TO_OPENAPI, for the Python categories' types
BFCL_HINWEIS = " Note that the provided function is in Python 3 syntax."  # every category messen reads is Python
BFCL_PYTHON = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list, "tuple": list,
               "dict": dict, "any": str}  # its checker's PYTHON_TYPE_MAPPING: the types a Python case may name


def ist_bfcl(pfad):
    """Is this BFCL's data: a directory of its files, or one file of JSON lines with "question" and "function"?"""
    pfad = Path(pfad)
    if pfad.is_dir():
        return True
    try:
        with open(pfad, "rb") as f:
            erste = next((z for z in f if z.strip()), b"")
        fall = json.loads(erste.decode("utf-8-sig"))
    except (OSError, ValueError, RecursionError):
        return False  # lade_faelle says what is wrong with it
    return isinstance(fall, dict) and "question" in fall and ("function" in fall or "involved_classes" in fall)


def lade_bfcl(pfad, stichprobe=None, stufen=None, einzug=False):
    """BFCL's question files with their possible_answer/ beside them: a file, or a directory's files of the categories
    messen knows (the stage table's BFCL rows); with stichprobe N, N cases of each drawn evenly across its file. Read a
    line at a time: what stays are the cases kept. A category not among stufen is hashed, not read. Returns (faelle,
    sha256 of every file: the categories', and where one is multi-turn, its function docs). einzug: a folder's
    single-turn files alone, as messen read it before it read the multi-turn categories (a run saved then)."""
    pfad = Path(pfad)
    if pfad.is_dir():
        try:
            namen = sorted(os.listdir(pfad))
        except OSError as e:
            raise Eingabefehler(f"{pfad}: cannot read the folder ({e.strerror})")
        dateien = [pfad / n for s in STUFEN_TABELLE if s.bfcl and not (einzug and s.pruefer == "multi_turn")
                   for n in namen if (m := BFCL_DATEI.fullmatch(n)) and m[1] == s.name]
        if not dateien:
            raise Eingabefehler(f"{pfad}: no BFCL file of a category messen reads ({', '.join(BFCL_STUFEN)})")
    else:
        dateien = [pfad]
    faelle, sha, gesehen = [], hashlib.sha256(), {}
    stufen = set(stufen or ()) & {bfcl_kategorie(d) for d in dateien}  # none of its categories: all read
    for datei in dateien:
        kategorie = bfcl_kategorie(datei)
        antwort = None if STUFE[kategorie].still else datei.parent / "possible_answer" / datei.name
        zahl = [sum(bool(z.strip()) for z in bfcl_lesen(d, sha)) for d in (datei, antwort) if d][0]
        if stufen and kategorie not in stufen:
            continue  # hashed all the same: a run's hash never depends on what it asked
        behalten = {int((i + 0.5) * zahl / stichprobe) for i in range(stichprobe)} if stichprobe else None
        paare = itertools.zip_longest(json_zeilen(datei, bfcl_lesen(datei)),
                                      json_zeilen(antwort, bfcl_lesen(antwort)) if antwort else ())
        for i, ((nr, roh), (anr, erwartet)) in enumerate((f or (None, None), a or (None, None)) for f, a in paare):
            fall = als_fall(bfcl_fall(datei, nr, roh, kategorie, antwort and (antwort, anr, erwartet), gesehen))
            if behalten is None or i in behalten:
                faelle.append(fall)
    if not faelle:
        raise Eingabefehler(f"{pfad}: no cases in the file")
    for doku in bfcl_dokus(dateien):
        sha.update(doku.read_bytes())  # what the multi-turn cases send
    bfcl_backends(faelle)
    return faelle, sha.hexdigest()


def bfcl_dokus(dateien):
    """The function docs beside BFCL's multi-turn files among dateien, each of BFCL_KLASSEN's that is there."""
    ordner = dict.fromkeys(d.parent for d in dateien if STUFE[bfcl_kategorie(d)].pruefer == "multi_turn")
    return [o / "multi_turn_func_doc" / datei for o in ordner for _, datei in sorted(BFCL_KLASSEN.values())
            if (o / "multi_turn_func_doc" / datei).is_file()]


def bfcl_kategorie(datei):
    m = BFCL_DATEI.fullmatch(datei.name)
    if not m:
        raise Eingabefehler(f"{datei}: a BFCL file is named as BFCL names it (BFCL_v4_simple_python.json): "
                            "its name gives its category")
    if m[1] not in BFCL_STUFEN:
        raise Eingabefehler(f"{datei}: messen reads BFCL's Python categories ({', '.join(BFCL_STUFEN)}), "
                            f"not {m[1]}")
    return m[1]


def bfcl_lesen(datei, sha=None):
    """A BFCL file's lines as bytes, one at a time, each added to sha where one is given."""
    try:
        with open(datei, "rb") as f:
            for zeile in f:
                sha and sha.update(zeile)
                yield zeile
    except OSError as e:
        wo = f"; BFCL keeps a category's expected calls in possible_answer/{datei.name}" * (
            e.errno == errno.ENOENT and datei.parent.name == "possible_answer")
        raise Eingabefehler(f"{datei}: cannot read it ({e.strerror}){wo}")


def bfcl_fall(datei, nr, roh, kategorie, antwort, gesehen):
    """One BFCL case as messen asks and grades it: its messages as given, its functions as BFCL's generation
    sends them to OpenAI-style tools, and each expected call with its accepted values and its function's schema
    as written. antwort: (file, line, object) of the possible_answer line BFCL's runner pairs with it."""
    if roh is None:
        raise Eingabefehler(f"{antwort[0]}:{antwort[1]}: an expected call beyond the last case of {datei.name}; "
                            "BFCL's runner pairs the two files line by line")
    wo, mehrzug = f"{datei}:{nr}", STUFE[kategorie].pruefer == "multi_turn"
    if fehler := (mehrzug_fehler if mehrzug else bfcl_fehler)(roh):
        raise Eingabefehler(f"{wo}: {fehler}")
    if roh["id"] in gesehen:
        raise Eingabefehler(f"{wo}: duplicate id {roh['id']} (first in {gesehen[roh['id']]})")
    gesehen[roh["id"]] = f"{datei.name}:{nr}"
    if mehrzug:
        return mehrzug_fall(datei, nr, roh, kategorie, antwort)
    soll = [] if antwort is None else [bfcl_soll(wo, g, roh["function"], kategorie) for g in bfcl_erwartet(
        roh["id"], *antwort)]
    nachrichten = roh["question"][0]
    return {"id": roh["id"], "stufe": kategorie, "erwartet": soll, "_zeile": nr,
            "frage": next((m["content"] for m in reversed(nachrichten) if m["role"] == "user"), ""),
            "_nachrichten": nachrichten, "_werkzeuge": [bfcl_werkzeug(f) for f in roh["function"]]}


def bfcl_erwartet(id_, datei, nr, erwartet):
    """The expected calls of the case id_ from the possible_answer line BFCL's runner pairs with it."""
    wo = f"{datei}:{nr}" if nr else f"{datei}"
    if nr is None:
        raise Eingabefehler(f"{wo}: no expected call for {id_} (its lines end before the cases do); BFCL's runner "
                            "pairs the two files line by line")
    if not isinstance(erwartet, dict) or erwartet.get("id") != id_:
        was = f"the id {erwartet['id']}" if isinstance(erwartet, dict) and "id" in erwartet else "no id"
        raise Eingabefehler(f"{wo}: {was} where the case on that line of {Path(datei).name} is {id_}; BFCL's runner "
                            "pairs the two files line by line")
    if not isinstance(erwartet.get("ground_truth"), list) or not erwartet["ground_truth"]:
        raise Eingabefehler(f"{wo}: no expected call for {id_} (\"ground_truth\" is a list of calls)")
    return erwartet["ground_truth"]


def bfcl_fehler(roh):
    """What keeps a BFCL line from being a case messen can ask, or None."""
    if not isinstance(roh, dict) or not isinstance(roh.get("id"), str):
        return "a BFCL case is an object with an \"id\""
    frage = roh.get("question")
    if not isinstance(frage, list) or len(frage) != 1:
        return "a case of one turn has \"question\": [[messages]]; messen reads no multi-turn category"
    if not isinstance(frage[0], list) or not frage[0] or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in frage[0]):
        return "\"question\"[0] must be a non-empty list of {\"role\", \"content\"} messages"
    funktionen = roh.get("function")
    if not isinstance(funktionen, list):
        return "\"function\" must be a list of functions"
    for f in funktionen:
        if not isinstance(f, dict) or not isinstance(f.get("name"), str) or not isinstance(
                f.get("parameters"), dict) or not isinstance(f["parameters"].get("properties"), dict):
            return "each function needs a \"name\" and \"parameters\" with \"properties\""
        typ = next((t for p in f["parameters"]["properties"].values() for t in bfcl_typen(p) if t not in BFCL_PYTHON),
                   False)
        if typ is not False:
            return f"{f['name']} has a parameter of type {typ!r}, which no Python case of BFCL has"
    namen = [bfcl_name(f["name"]) for f in funktionen]
    falsch = next((n for n in namen if not NAME.fullmatch(n)), None)
    if falsch is not None:  # BFCL's handler sends it so, and a strict server refuses the whole request (400)
        return f"the function {falsch!r} is no name a tool may have (^[a-zA-Z0-9_-]{{1,64}}$, dots as underscores)"
    doppelt = [f["name"] for f in funktionen if namen.count(bfcl_name(f["name"])) > 1]
    if doppelt:
        return f"{' and '.join(doppelt[:2])} are both sent as {bfcl_name(doppelt[0])} (dots as underscores, as " \
               "BFCL sends them), and one name can be one tool only"
    return None


def bfcl_typen(p):
    """The types a parameter names, its items' type included (what BFCL's checker looks up)."""
    if not isinstance(p, dict):
        return [None]
    items = p.get("items") if p.get("type") in ("array", "tuple") else None
    return [p.get("type")] + ([items.get("type") if isinstance(items, dict) else None] if items is not None or
                              p.get("type") in ("array", "tuple") else [])


def bfcl_soll(wo, g, funktionen, kategorie):
    """One expected call: {name as sent: {parameter: [accepted values, "" where leaving it out is right]}}. A
    simple category's is checked against its one function, as BFCL's checker does."""
    if not isinstance(g, dict) or len(g) != 1 or not isinstance(next(iter(g.values())), dict) or not all(
            isinstance(v, list) for v in next(iter(g.values())).values()):
        raise Eingabefehler(f"{wo}: an expected call is {{\"function\": {{\"parameter\": [accepted values]}}}}")
    name, werte = next(iter(g.items()))
    if werte and not any(werte.values()):
        raise Eingabefehler(f"{wo}: every argument of the expected call {name} accepts no value ([]): no answer "
                            "could pass")
    if STUFE[kategorie].pruefer == "simple" and funktionen:
        funktion = funktionen[0]
    else:
        funktion = next((f for f in funktionen if f["name"] == name), None)
        if funktion is None:
            raise Eingabefehler(f"{wo}: the expected call {name} is none of the case's functions")
    return {"name": bfcl_name(funktion["name"]), "args": werte, "_schema": funktion["parameters"]}


def bfcl_name(name):
    """A function's name as BFCL sends it to OpenAI-style tools: no dots (^[a-zA-Z0-9_-]{1,64}$)."""
    return name.replace(".", "_")


def bfcl_werkzeug(funktion, hinweis=BFCL_HINWEIS):
    """A BFCL function as its generation sends it: the language's hint added to its description (as
    load_dataset_entry does), then as convert_to_tool makes it an OpenAI tool: the name without dots, the
    parameters an object, every type mapped (an unknown one is a string), a float a number with its note."""
    f = copy.deepcopy(funktion)
    f["name"], f["description"] = bfcl_name(f["name"]), f.get("description", "") + hinweis
    f["parameters"]["type"] = "object"
    f["parameters"]["properties"] = bfcl_eigenschaften(f["parameters"]["properties"])
    return {"type": "function", "function": f}


def bfcl_eigenschaften(eigenschaften):
    """BFCL's _cast_to_openai_type: each property's type as OpenAPI names it, a level of items and properties
    deep, as BFCL goes."""
    for p in eigenschaften.values():
        typ = p.get("type", "string")
        if typ == "float":
            p["format"] = "float"
            p["description"] = p.get("description", "") + " This is a float type value."
        p["type"] = BFCL_OPENAPI.get(typ, "string")
        if p["type"] in ("array", "object") and isinstance(p.get("properties"), dict):
            p["properties"] = bfcl_eigenschaften(p["properties"])
        elif p["type"] in ("array", "object") and isinstance(p.get("items"), dict):
            items = p["items"]
            items["type"] = BFCL_OPENAPI.get(items.get("type"), "string")
            if items["type"] == "array" and isinstance(items.get("items"), dict):
                items["items"]["type"] = BFCL_OPENAPI.get(items["items"].get("type"), "string")
            elif items["type"] == "object" and isinstance(items.get("properties"), dict):
                items["properties"] = bfcl_eigenschaften(items["properties"])
    return eigenschaften


def bfcl_nachrichten(fall, system):
    """A BFCL case's messages as given, no opening of ours; with --system, that before them, in one system
    message with the case's own where it has one (many chat templates take one, and only first)."""
    nachrichten = list(fall.nachrichten)
    if system is None:
        return nachrichten
    if nachrichten[0]["role"] == "system":
        return [{"role": "system", "content": f"{system}\n\n{nachrichten[0]['content']}"}] + nachrichten[1:]
    return [{"role": "system", "content": system}] + nachrichten


# BFCL's checker (ast_checker, for Python), rule by rule: where a BFCL case accepts several values, leaves an
# argument optional or ignores case and punctuation, it accepts what BFCL accepts and refuses what it refuses.


def bfcl_warum(args, soll):
    """The first rule of BFCL's simple_function_checker that a call's arguments break, as (code, words); BFCL
    stops at the first, and so does this."""
    schema, moeglich = soll["_schema"], soll["args"]
    for k in schema.get("required", []):
        if k not in args:
            yield "fehlendes_argument", f"{k} missing"
            return
    for k, wert in args.items():
        if k not in schema["properties"] or k not in moeglich:
            yield "erfundenes_argument", f"{kurz(k, 40)} not expected"
            return
        if not bfcl_wert_passt(wert, moeglich[k], schema["properties"][k]):
            yield "falscher_wert", f"{k} {kurz(json.dumps(wert, ensure_ascii=False))} is none of " \
                                   f"{kurz(json.dumps(moeglich[k], ensure_ascii=False))}"
            return
    fehlt = next((k for k, werte in moeglich.items() if k not in args and "" not in werte), None)
    if fehlt:
        yield "fehlendes_argument", f"{fehlt} missing (its expected values do not include leaving it out)"


def bfcl_wert_passt(wert, moeglich, p):
    """One value as BFCL's checker takes it: its type (an int for a float; a value of the accepted values' own
    type where they are a variable's name), then a string, a list, a dict or a list of dicts with its string
    rules, anything else by ==."""
    typ = BFCL_PYTHON[p["type"]]
    innen = BFCL_PYTHON[p["items"]["type"]] if p["type"] in ("array", "tuple") else None
    if p["type"] == "float" and type(wert) is int:
        wert = float(wert)
    ok, variabel = bfcl_typ_passt(wert, moeglich, typ, innen)
    if not ok:
        return False
    if not variabel and typ is dict:
        return bfcl_dict_passt(wert, moeglich)
    if not variabel and typ is list and innen is dict:
        return any(len(wert) == len(m) and all(bfcl_dict_passt(w, [d]) for w, d in zip(wert, m)) for m in moeglich)
    if not variabel and typ is str:
        return bfcl_glatt(wert) in [bfcl_glatt(m) for m in moeglich if type(m) is str]
    if not variabel and typ is list:
        return [bfcl_glatt(w) if type(w) is str else w for w in wert] in [
            [bfcl_glatt(x) if type(x) is str else x for x in m] for m in moeglich]
    return wert in moeglich


def bfcl_typ_passt(wert, moeglich, typ, innen=None):
    """BFCL's type_checker: (valid, is_variable). The accepted values' type, where it is not the schema's, marks a
    variable's name; an array's items are checked one level deep against some accepted list."""
    ihr_typ = next((type(m) for m in moeglich if m != ""), None)
    variabel = ihr_typ is not None and ihr_typ != typ
    if type(wert) == typ:
        if innen is None:
            return True, variabel
        if any(type(m) is not list or all(bfcl_typ_passt(w, m, innen)[0] for w in wert) for m in moeglich):
            return True, variabel
        return False, False
    return (True, True) if ihr_typ is not None and type(wert) == ihr_typ else (False, False)


def bfcl_dict_passt(wert, moeglich):
    """BFCL's dict_checker: some accepted dict has every key given, with a value it accepts, and lacks none
    it does not mark optional."""
    for m in moeglich:
        if m == "":
            continue
        if all(k in m and (bfcl_glatt(v) if type(v) is str else v) in
               [bfcl_glatt(x) if type(x) is str else x for x in m[k]] for k, v in wert.items()) and \
                all(k in wert or "" in werte for k, werte in m.items()):
            return True
    return False


def bfcl_glatt(text):
    """BFCL's standardize_string: no spaces nor ,./-_*^, lower case, single quotes as double."""
    return re.sub(r"[ ,./\-_*^]", "", text).lower().replace("'", '"')


def bfcl_urteil(fall, nachricht):
    """BFCL's verdict on an answer, as its FC mode reads one: only tool_calls count, each call's arguments
    json.loads'ed into an object, or the answer holds no call; then its checker by category (parallel: in
    any order; multiple: the first call; else: exactly one)."""
    rohe = nachricht.get("tool_calls")
    decodiert = None
    if isinstance(rohe, list) and all(isinstance(c, dict) and isinstance(c.get("function"), dict) and
                                      "name" in c["function"] for c in rohe):
        try:
            decodiert = [(c["function"]["name"], json.loads(c["function"].get("arguments"))) for c in rohe]
        except (TypeError, ValueError, RecursionError):
            decodiert = None
    elif nachricht.get("content") == "":
        decodiert = []  # BFCL decodes an empty text to no call at all
    if decodiert is not None and not all(isinstance(a, dict) for _, a in decodiert):
        decodiert = None
    if fall.stufe in STILL:
        return not decodiert
    if decodiert is None or len(decodiert) != len(fall.erwartet):
        return False
    ist = [{"name": n, "args": a} for n, a in decodiert]
    if STUFE[fall.stufe].pruefer != "parallel":
        return trifft(ist[0], fall.erwartet[0])
    treffer, offen = bewertet(ist, fall.erwartet)
    return treffer == len(fall.erwartet) and offen == 0
BfclZahlen = collections.namedtuple("BfclZahlen", "gesamt fehlgeschlagen stufen nicht_live live multi_turn "
                                                  "ohne_agentisch still_anders fehlt")
# BFCL's verdict: pooled over all its cases (messen's pooling), failed ids, by category, BFCL's own overalls over the
# categories asked (None where none of theirs was), why BFCL counted restraint where messen did not ({why: count}),
# and what each overall lacks of BFCL's formula ({overall: [categories]}: partial where any)
BFCL_GESAMT = {"nicht_live": ("simple_python", "multiple", "parallel", "parallel_multiple"),  # unweighted mean
               "live": ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple"),  # by cases
               "multi_turn": ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
                              "multi_turn_long_context")}  # an unweighted mean of the four
BFCL_UEBER_FAELLE = ("live",)  # BFCL's overalls that are means over cases; the others are means of categories
BFCL_GEWICHTE = {"nicht_live": 10, "live": 10, "irrelevanz": 10, "multi_turn": 30}  # BFCL's overall weighs these
# and its agentic part (40), which messen never runs: its overall without that part, where all of these were run
BFCL_IRRELEVANZ = ("irrelevance", "live_irrelevance")  # an unweighted mean in BFCL's overall
BFCL_GESAMT_WORTE = {"nicht_live": "non-live", "live": "live", "multi_turn": "multi-turn"}
BFCL_NIE = {"nicht_live": ("simple_java", "simple_javascript")}  # in BFCL's simple (a mean of the three languages),
# which messen never runs: its simple is simple_python's alone, so its non-live overall is always partial


def bfcl_figuren(ausgaben):
    """BFCL's own verdict (bfcl_urteil) as the share of outputs it accepts, over all and by category; None for
    a run of no BFCL case."""
    eigene = [a for a in ausgaben if a.note.bfcl is not None]
    if not eigene:
        return None
    je = {s: [a.note.bfcl for a in eigene if a.stufe == s] for s in BFCL_STUFEN}
    da = {g: [s for s in kategorien if je[s]] for g, kategorien in BFCL_GESAMT.items()}  # the categories asked
    return BfclZahlen(gesamt=statistics.fmean(a.note.bfcl for a in eigene),
                      fehlgeschlagen=list(dict.fromkeys(a.id for a in eigene if not a.note.bfcl)),
                      stufen={s: statistics.fmean(x) for s, x in je.items() if x},  # as eval_runner_helper's:
                      **{g: bfcl_gesamt(g, [je[s] for s in da[g]]) for g in BFCL_GESAMT},
                      ohne_agentisch=bfcl_ohne_agentisch(je),
                      still_anders=dict(collections.Counter(
                          a.note.mangel or ("fehlerhaft" if a.note.fehlerhaft else "text") for a in eigene
                          if a.note.still and a.note.bfcl and not gelungen(a.note)).most_common()),
                      fehlt={g: [*BFCL_NIE.get(g, ()), *(s for s in kategorien if not je[s])]
                             for g, kategorien in BFCL_GESAMT.items() if da[g]})


def bfcl_gesamt(g, je):
    """One of BFCL's overalls from its categories' verdicts (each a list), as eval_runner_helper's: a mean of the
    categories' shares, or (live) of all their cases; None where none was asked."""
    if not je:
        return None
    return statistics.fmean(b for x in je for b in x) if g in BFCL_UEBER_FAELLE else \
        statistics.fmean(statistics.fmean(x) for x in je)


def bfcl_ohne_agentisch(je):
    """BFCL's overall without its agentic part (eval_runner_helper's weights 10:10:10:30 of non-live, live, both
    irrelevance categories and multi-turn, normalised), where every category of these was asked; else None."""
    if not all(je[s] for g in BFCL_GESAMT for s in BFCL_GESAMT[g]) or not all(je[s] for s in BFCL_IRRELEVANZ):
        return None
    teile = {g: bfcl_gesamt(g, [je[s] for s in BFCL_GESAMT[g]]) for g in BFCL_GESAMT}
    teile["irrelevanz"] = statistics.fmean(statistics.fmean(je[s]) for s in BFCL_IRRELEVANZ)
    return sum(w * teile[g] for g, w in BFCL_GEWICHTE.items()) / sum(BFCL_GEWICHTE.values())


def bfcl_zeilen(bfcl):
    """BFCL's verdict by category, its own overalls (each partial where a category of BFCL's formula is missing,
    and named so), messen's pooling, and why BFCL's restraint is not messen's."""
    gesamt = [f"{w} {prozent(getattr(bfcl, g))}" + (f" (partial: without {', '.join(bfcl.fehlt[g])})"
                                                    if bfcl.fehlt.get(g) else "")
              for g, w in BFCL_GESAMT_WORTE.items() if getattr(bfcl, g) is not None] + (
        [f"without its agentic part {prozent(bfcl.ohne_agentisch)} (partial: without "
         f"{', '.join(BFCL_NIE['nicht_live'])} and the agentic categories)"] if bfcl.ohne_agentisch is not None else [])
    zeilen = [stufenzeile(bfcl.stufen, BFCL_WORT)[:-1] + (f"; BFCL's overall {', '.join(gesamt)}" if gesamt else "")
              + f"; all cases together {prozent(bfcl.gesamt)} (messen's share, no figure of BFCL's)."]
    anders = bfcl.still_anders
    if anders:
        zeilen.append(f"BFCL counts {sum(anders.values())} irrelevance answers as restraint that messen does not: "
                      + ", ".join(f"{n} {BFCL_ANDERS.get(w, w)}" for w, n in anders.items()) + ".")
    return zeilen


BFCL_WORT = "BFCL's verdict (tool_calls only, as its FC mode)"
BFCL_ANDERS = {"text": "written as text", "fehlerhaft": "malformed (fehlerhaft)", "abgeschnitten": "cut by the token "
               "limit (abgeschnitten)", "leer": "empty (leer)", "im_denken": "only in a reasoning field (im_denken)",
               "angekuendigt": "announced as tool_calls, none sent (angekuendigt)"}

# ---------------------------------------------------------------------------
# BFCL's multi-turn categories: a case in turns, each call run on BFCL's own backends
# ---------------------------------------------------------------------------


BFCL_KLASSEN = {  # a backend class -> its module under func_source_code/ and its functions under multi_turn_func_doc/,
    # as bfcl_eval.constants.executable_backend_config names the eight its multi-turn categories involve
    "GorillaFileSystem": ("gorilla_file_system", "gorilla_file_system.json"), "MathAPI": ("math_api", "math_api.json"),
    "MessageAPI": ("message_api", "message_api.json"), "TwitterAPI": ("posting_api", "posting_api.json"),
    "TicketAPI": ("ticket_api", "ticket_api.json"), "TradingBot": ("trading_bot", "trading_bot.json"),
    "TravelAPI": ("travel_booking", "travel_booking.json"),
    "VehicleControlAPI": ("vehicle_control", "vehicle_control.json")}
BFCL_ZUSTANDSLOS = ("MathAPI",)  # made without a scenario, as BFCL makes its stateless classes
BFCL_PAKET = ("bfcl_eval", "eval_checker", "multi_turn_eval", "func_source_code")  # where the backends are
BFCL_SCHRITTE = 20  # steps with calls in one turn before BFCL's runner force-quits the case (MAXIMUM_STEP_LIMIT)
BFCL_NACHGEREICHT = "I have updated some more functions you can choose from. What about now?"  # miss_func's turn
BFCL_VERBOTEN = ("kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run")  # names BFCL never runs
BFCL_GELADEN = {}  # the package folder -> {class name: class}, each module imported once per process


def mehrzug_fall(datei, nr, roh, kategorie, antwort):
    """One multi-turn case (checked by mehrzug_fehler) as BFCL's generation asks it: its turns, the involved classes'
    functions (those held back until their turn apart, each added at its turn without the language's hint, as BFCL
    adds them), and per turn the ground truth's calls, read (never run) from its possible_answer line."""
    wo = f"{datei}:{nr}"
    soll = bfcl_erwartet(roh["id"], *antwort)
    awo = f"{antwort[0]}:{antwort[1]}"
    if len(soll) != len(roh["question"]) or not all(isinstance(t, list) for t in soll):
        raise Eingabefehler(f"{awo}: \"ground_truth\" lists the calls of each of the case's {len(roh['question'])} "
                            "turns, a list per turn")
    funktionen = [f for k in roh["involved_classes"] for f in bfcl_funktionen(datei.parent, k)]  # (doc, tool)
    nachgereicht = {}
    for t, namen in roh.get("missed_function", {}).items():
        for name in namen:
            f = next((f for f in funktionen if f[0]["name"] == name), None)
            if f is None:
                raise Eingabefehler(f"{wo}: the function {name} held back until turn {int(t) + 1} is no function "
                                    f"of {' or '.join(roh['involved_classes'])}")
            funktionen.remove(f)
            nachgereicht.setdefault(str(int(t)), []).append(bfcl_werkzeug(f[0], hinweis=""))
    mehrzug = {"runden": roh["question"], "soll": [[bfcl_soll_ruf(awo, c) for c in t] for t in soll],
               "nachgereicht": nachgereicht, "klassen": roh["involved_classes"],
               "start": roh.get("initial_config", {}), "lang": "long_context" in kategorie,
               "quelle": str(datei.parent)}
    erste = roh["question"][0]
    return {"id": roh["id"], "stufe": kategorie, "erwartet": [], "_zeile": nr, "_mehrzug": mehrzug,
            "frage": next((m["content"] for m in reversed(erste) if m["role"] == "user"), ""),
            "_nachrichten": erste, "_werkzeuge": [w for _, w in funktionen]}


def mehrzug_fehler(roh):
    """What keeps a multi-turn line from being a case messen can ask, or None."""
    if not isinstance(roh, dict) or not isinstance(roh.get("id"), str):
        return "a BFCL case is an object with an \"id\""
    turns, klassen = roh.get("question"), roh.get("involved_classes")
    if not isinstance(turns, list) or not turns or not all(isinstance(t, list) and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in t) for t in turns):
        return "a multi-turn case has \"question\": a list of turns, each a list of {\"role\", \"content\"} messages"
    if not isinstance(klassen, list) or not klassen or not all(k in BFCL_KLASSEN for k in klassen):
        return f"\"involved_classes\" lists classes of BFCL's multi-turn backends ({', '.join(BFCL_KLASSEN)})"
    if not isinstance(roh.get("initial_config", {}), dict):
        return "\"initial_config\" is an object of each class's scenario"
    fehlend = roh.get("missed_function", {})
    if not isinstance(fehlend, dict) or not all(
            isinstance(t, str) and t.isdigit() and int(t) < len(turns) and not turns[int(t)] and isinstance(n, list)
            and all(isinstance(x, str) for x in n) for t, n in fehlend.items()):
        return "\"missed_function\" maps an empty turn's index to the names of the functions it adds"
    leer = [i + 1 for i, t in enumerate(turns) if not t and str(i) not in fehlend]
    return f"turn {leer[0]} has no message and adds no function" if leer else None


@functools.lru_cache(maxsize=None)
def bfcl_funktionen(ordner, klasse):
    """A backend class's functions as its multi_turn_func_doc/ file gives them, one JSON object per line, each with
    its tool as sent (bfcl_werkzeug), read and made once: ((doc, tool), ...), shared by the cases, changed by none."""
    datei = ordner / "multi_turn_func_doc" / BFCL_KLASSEN[klasse][1]
    funktionen = []
    for nr, f in json_zeilen(datei, bfcl_lesen(datei)):
        if not isinstance(f, dict) or not isinstance(f.get("name"), str) or not isinstance(
                f.get("parameters"), dict) or not isinstance(f["parameters"].get("properties"), dict):
            raise Eingabefehler(f"{datei}:{nr}: each function needs a \"name\" and \"parameters\" with \"properties\"")
        funktionen.append((f, bfcl_werkzeug(f)))
    return tuple(funktionen)


def bfcl_soll_ruf(wo, text):
    """A ground-truth call as BFCL writes it (sort('final_report.pdf'), cd(folder='..')): [name, positional
    values, keyword values, the text], read by ast as literals; BFCL evals it, messen never runs what it reads."""
    import ast  # here: a run of no multi-turn case never loads it
    try:
        knoten = ast.parse(text, mode="eval").body
        if not isinstance(knoten, ast.Call) or not isinstance(knoten.func, ast.Name) or \
                any(k.arg is None for k in knoten.keywords):
            raise ValueError("not one call of a name")
        return [knoten.func.id, [ast.literal_eval(a) for a in knoten.args],
                {k.arg: ast.literal_eval(k.value) for k in knoten.keywords}, text]
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError) as e:
        raise Eingabefehler(f"{wo}: the expected call {kurz(text, 80)!r} is no call messen can read ({e})") from None


def bfcl_backends(faelle):
    """Import BFCL's backend classes the multi-turn cases involve, from the bfcl_eval package their folder lies in
    (bfcl_eval/data), else an installed one; say once where from. Importing them runs BFCL's modules, as its own
    runner does; no code a model wrote is ever run."""
    import importlib  # here: a run of no multi-turn case never loads it
    for quelle in dict.fromkeys(f.mehrzug["quelle"] for f in faelle if f.mehrzug):
        wurzel, neu = Path(quelle).parent.parent, quelle not in BFCL_GELADEN
        if Path(wurzel, *BFCL_PAKET).is_dir() and str(wurzel) not in sys.path:
            sys.path.insert(0, str(wurzel))
        klassen = BFCL_GELADEN.setdefault(quelle, {})
        for k in dict.fromkeys(k for f in faelle if f.mehrzug for k in f.mehrzug["klassen"]):
            try:
                modul = importlib.import_module(".".join(BFCL_PAKET + (BFCL_KLASSEN[k][0],)))
            except ImportError as e:
                del BFCL_GELADEN[quelle]
                raise Eingabefehler(bfcl_ohne(quelle, k, e)) from None
            klassen[k] = getattr(modul, k)
        if neu:
            print(f"messen: BFCL's multi-turn backends from {sichtbar(str(Path(modul.__file__).parent))}",
                  file=sys.stderr, flush=True)


def bfcl_ohne(quelle, klasse, e):
    """Why a backend class cannot be imported, and what to do."""
    if e.name and e.name.split(".")[0] != "bfcl_eval":
        return (f"BFCL's {klasse} needs the package {e.name}, which is not installed: pip install 'messen[bfcl]' "
                f"(or pip install {e.name})")
    return (f"{quelle}: BFCL's multi-turn cases run on its backends (bfcl_eval/eval_checker/multi_turn_eval/"
            f"func_source_code), which are neither in the package this folder is part of nor installed: give "
            f"--faelle the folder bfcl_eval/data of the bfcl-eval wheel or of a clone of BFCL")


def bfcl_instanzen(m):
    """Fresh instances of a case's classes, each loaded with its scenario as BFCL loads it, and every public method
    of theirs by name (a later class's wins, as in BFCL's mapping): ({class: instance}, {name: method})."""
    instanzen = {}
    for k in m["klassen"]:
        instanzen[k] = BFCL_GELADEN[m["quelle"]][k]()
        if k not in BFCL_ZUSTANDSLOS:
            instanzen[k]._load_scenario(copy.deepcopy(m["start"].get(k, {})), long_context=m["lang"])
    import inspect  # here: a run of no multi-turn case never loads it
    methoden = {n: f for i in instanzen.values() for n, f in inspect.getmembers(i, inspect.ismethod)
                if not n.startswith("_")}
    return instanzen, methoden


def bfcl_rufe(methoden, name, args, positionen=()):
    """Run one call on the instances by its name with keyword values (never eval'ed), and give its result as BFCL's
    executor words it: a string as it is, a dict as JSON (json.dumps' defaults), else str(); an error as
    "Error during execution: ...", a name no method has as Python's NameError, and BFCL's forbidden names refused."""
    if name in BFCL_VERBOTEN:
        return f"Error during execution: Function call {name} is not allowed."
    if not all(k.isidentifier() and not keyword.iskeyword(k) for k in args):  # BFCL's eval of name(k=v) fails
        try:  # compiled only, to word the SyntaxError as BFCL's eval does; nothing of it runs
            compile(f"{name}({','.join(f'{k}={v!r}' for k, v in args.items())})", "<string>", "eval")
        except (SyntaxError, ValueError) as e:
            return f"Error during execution: {e}"
    if name not in methoden:
        return f"Error during execution: name '{name}' is not defined"
    try:
        ergebnis = methoden[name](*positionen, **args)
    except Exception as e:  # noqa: BLE001  anything a backend raises is its result, as in BFCL's executor
        return f"Error during execution: {e}"
    if type(ergebnis) is dict:
        try:
            return json.dumps(ergebnis)
        except (TypeError, ValueError):
            return str(ergebnis)
    return ergebnis if type(ergebnis) is str else str(ergebnis)


def bfcl_decodiert(nachricht):
    """An answer's calls as BFCL's FC handler decodes them: [(name, arguments)] from tool_calls, each json.loads'ed
    into an object; None where it cannot (text, no tool_calls, arguments that do not decode): that ends the turn
    with nothing of the step run; [] (no call) ends it too."""
    rohe = nachricht.get("tool_calls")
    if not isinstance(rohe, list):
        return [] if nachricht.get("content") == "" else None
    try:
        aufrufe = [(c["function"]["name"], json.loads(a) if isinstance(a := c["function"].get("arguments"), str)
                    else a) for c in rohe]
    except (TypeError, KeyError, ValueError, RecursionError):
        return None
    # a name that is no string but a key of a dict (a number, null) still runs in BFCL, as an error: here too
    return [(n if isinstance(n, str) else str(n), a) for n, a in aufrufe] if all(
        isinstance(a, dict) and not isinstance(n, (list, dict)) for n, a in aufrufe) else None


def mehrzug_frage(endpunkt, fall, erste, k):
    """A multi-turn case asked as BFCL's FC mode asks it (inference_multi_turn_FC): each turn's messages, then
    steps while the model calls: each decoded call run on the case's instances and its result sent back in a tool
    message; a held-back function added at its turn with BFCL's prompt; a turn's 21st step with calls force-quits
    the case. Each step saved as a turn of its output, with its turn's index and its results."""
    m, lauf = fall.mehrzug, endpunkt.lauf
    _, methoden = bfcl_instanzen(m)
    body, zuege = anfrage(fall, lauf), []
    body["messages"] = []
    for t, nachrichten in enumerate(m["runden"]):
        if str(t) in m["nachgereicht"]:
            body["tools"] = body.get("tools", []) + m["nachgereicht"][str(t)]
            nachrichten = [{"role": "user", "content": BFCL_NACHGEREICHT}]
        body["messages"] += bfcl_nachrichten(fall._replace(nachrichten=nachrichten), lauf.system) if t == 0 \
            else nachrichten
        for schritt in range(BFCL_SCHRITTE + 1):
            antwort = endpunkt.frage(fall._replace(id=f"{fall.id}, turn {t + 1} step {schritt + 1}"), body)
            body["messages"].append(antwort.nachricht)
            aufrufe = bfcl_decodiert(antwort.nachricht)
            ergebnisse = [bfcl_rufe(methoden, n, a) for n, a in aufrufe or ()]
            zuege.append(zug(SCHRITT, antwort, ergebnisse=begrenzt(ergebnisse), runde=t))
            if not aufrufe:
                break
            body["messages"] += [{"role": "tool", "content": e, "tool_call_id": c.get("id")}
                                 for e, c in zip(ergebnisse, antwort.nachricht["tool_calls"])]
        else:
            return zuege, None  # force-quit: BFCL asks no further turn, and its runner fails the case
    return zuege, None


def mehrzug_anfragen(fall, lauf):
    """The requests the ground truth takes: a step of its calls and a closing answer per turn that has calls."""
    return sum(2 if t else 1 for t in fall.mehrzug["soll"])


def mehrzug_pruefe(fall, katalog):
    return None  # checked as it was read (mehrzug_fall)


FEHLT = object()  # an attribute an instance does not have


class Runde(typing.NamedTuple):
    """What BFCL's runner found in a multi-turn case: its verdict and, where it failed, why, in which turn (from 1),
    and what differed (the attributes, the results missing) or that it was force-quit."""
    gut: bool
    runde: int = None
    warum: str = None  # zustand, ergebnis, leer, abgebrochen
    was: str = ""


def mehrzug_urteil(fall, schritte):
    """BFCL's verdict on a multi-turn case (eval_runner's _evaluate_single_multi_turn_entry, multi_turn_checker):
    schritte, per turn asked, the steps' decoded calls (those that decode to none dropped). A case with fewer turns
    than the ground truth fails; after each turn whose ground truth has calls, the model's instances must equal
    the ground truth's run on fresh ones (public attributes), and the ground truth's results must all be among the
    model's of every turn so far (a multiset, in any order). A turn whose ground truth is empty is not judged:
    its calls run and their effect carries on, as in BFCL's runner (its irrelevance checker is never called)."""
    m = fall.mehrzug
    if len(schritte) != len(m["soll"]):
        return Runde(False, len(schritte), "abgebrochen", f"{len(schritte)} of {len(m['soll'])} turns")
    (modell, mm), (wahr, wm) = bfcl_instanzen(m), bfcl_instanzen(m)
    alle = []
    for t, (gekommen, soll) in enumerate(zip(schritte, m["soll"])):
        alle += [bfcl_rufe(mm, n, a) for aufrufe in gekommen for n, a in aufrufe]
        erwartet = [bfcl_rufe(wm, n, kw, pos) for n, pos, kw, _ in soll]
        if not soll:
            continue
        if not gekommen:
            return Runde(False, t + 1, "leer", "no call")
        anders = [f"{k}.{a}" for k, i in wahr.items() for a, w in vars(i).items()
                  if not a.startswith("_") and getattr(modell[k], a, FEHLT) != w]  # one the model's lacks differs
        if anders:
            return Runde(False, t + 1, "zustand", ", ".join(anders))
        rest = list(alle)
        fehlt = [e for e in erwartet if not (e in rest and rest.remove(e) is None)]
        if fehlt:
            return Runde(False, t + 1, "ergebnis", " | ".join(kurz(e, 120) for e in fehlt))
    return Runde(True)


def mehrzug_bewerte(fall, a, roh, fragen, umbenennung, nachfrage, welt_salz, grenze, ziehung):
    """A multi-turn case graded from its saved steps: BFCL's verdict (mehrzug_urteil) is messen's, each step graded
    as a job's is, and where it failed, the step that ended the failing turn says whose: an empty or cut answer,
    calls written as text, are evidence on the server as in the single-turn categories; else the model's."""
    schritte = [bewerte_ausgabe(fall, s["nachricht"], s["finish_reason"], None, s["usage"], grenze)._replace(
        defekte=tuple((s.get("strom") or {}).get("defekte", [])), **kennung_von(s)) for s in fragen]
    runden, letzte = [[] for _ in range(max(z["runde"] for z in fragen) + 1)], {}
    for z, b in zip(fragen, schritte):
        letzte[z["runde"]] = b  # the step that ended its turn
        if aufrufe := bfcl_decodiert(z["nachricht"]):
            runden[z["runde"]].append(aufrufe)
    urteil = mehrzug_urteil(fall, runden)
    abgebrochen = urteil.warum == "abgebrochen"
    b = schritte[-1] if urteil.gut or abgebrochen else letzte[urteil.runde - 1]
    nativ = [c for s in schritte for c in s.aufrufe if c["quelle"] == NATIV]
    text = [] if urteil.gut else [c for c in b.aufrufe if c["quelle"] != NATIV]
    mangel = None if urteil.gut or abgebrochen else b.mangel
    note = b._replace(
        treffer=int(urteil.gut), offen=0, soll=1, still=False, bfcl=urteil.gut, nativ=len(nativ), mangel=mangel,
        aufrufe=tuple(nativ + text), form=text[0]["quelle"] if text else "nativ" if nativ else None,
        protokoll=dict(sum((collections.Counter(s.protokoll) for s in schritte), collections.Counter())),
        befunde=() if urteil.gut else b.befunde if mangel else (mehrzug_befund(urteil, text, b),),
        job=Job(len(schritte), mehrzug_anfragen(fall, None), abgebrochen, tuple(schritte), fall.frage,
                mehrzug_runde_text(fall, urteil.runde)))
    return roh._replace(note=note, usage={f: sum(zahl_oder_none(z["usage"], f) or 0 for z in fragen)
                                          for f in ("prompt_tokens", "completion_tokens")})


MEHRZUG_WARUM = {"zustand": ("falscher_zustand", "the state differs from the ground truth's in {was}"),
                 "ergebnis": ("falscher_zustand", "the ground truth's results missing from the model's: {was}"),
                 "leer": ("kein_aufruf", "no call, where the ground truth calls"),
                 "abgebrochen": ("schrittgrenze", f"force-quit after {BFCL_SCHRITTE + 1} steps with calls in one "
                                 "turn: {was} asked")}


def mehrzug_befund(urteil, text, b):
    """Why BFCL's runner failed the case, in messen's words: the turn, and what differed; where the turn ended on
    calls BFCL could not run (their arguments do not decode, or written as text: b, the step that ended it), those."""
    art, worte = MEHRZUG_WARUM[urteil.warum]
    kaputt = sum(c["args"] is None for c in b.aufrufe if c["quelle"] == NATIV)
    wo = f"turn {urteil.runde}: " if urteil.warum != "abgebrochen" else ""
    if urteil.warum == "leer" and kaputt:
        art, worte = "fehlerhaft", f"{mal(kaputt, 'call')} whose arguments do not decode, so BFCL ran none of the step"
    schrift = f" (its calls written as text, which BFCL does not read: {aufrufe_text(text)})" if text else ""
    return Befund((art,), kurz(wo + worte.format(was=urteil.was) + schrift, ANDERS_HOECHSTENS))


def mehrzug_runde_text(fall, runde):
    """The turn a case failed in: its user message and the ground truth's calls; the whole case's where it passed."""
    if runde is None or runde > len(fall.mehrzug["soll"]) or runde < 1:
        return ""
    m, t = fall.mehrzug, runde - 1
    frage = BFCL_NACHGEREICHT if str(t) in m["nachgereicht"] else next(
        (x["content"] for x in reversed(m["runden"][t]) if x["role"] == "user"), "")
    return f"turn {runde}" + (f": {kurz(frage, 240)}  /" if t else ",") + " expected: " + (
        ", ".join(c[3] for c in m["soll"][t]) or "no call")


def mehrzug_zeilen(a, fall, mehrere):
    """One failed multi-turn case: its first question, the turn it failed in with its expected calls, what came in
    its steps, why."""
    lauf, b = f" #{a.lauf + 1}" if mehrere else "", a.note
    gekommen = kurz(" | ".join(map(schritt_text, b.job.gekommen)), 3 * ANDERS_HOECHSTENS)
    return [f"  {a.id}{lauf}  {kurz(b.job.frage, 240)}", *[f"      failed in: {b.job.loesung}"] * bool(b.job.loesung),
            f"      came:      {gekommen}", f"      differs:   {warum_ganz(b)}"]


# ---------------------------------------------------------------------------
# Variants: a catalogue renamed, reordered or with decoys
# ---------------------------------------------------------------------------


def wie_gesendet(e):
    """', streamed, variant synonyme, catalogue tools.json': how a run asked, beyond the chapter's way."""
    variante, datei = e.get("variante"), e.get("katalog_datei")
    return (", streamed" if e.get("stream") else "") + (f", variant {variante}" if variante else "") + \
        (f", catalogue {Path(datei).name}" if datei else "")


def variante(katalog, name):
    """The catalogue as the variant `name` sends it (None: as written)."""
    if name is None:
        return katalog
    return {"synonyme": umbenannt, "reihenfolge": umgeordnet, "ablenkung": abgelenkt}[name](katalog)


def umbenannt(katalog):
    """Every tool and parameter under its other name; the descriptions and the opening follow where they name one as a
    whole word (never inside another name): a tool's name in any style, a parameter's where it looks like an identifier
    (contact_id, contactId, id2), since a parameter such as `text` or `date` is a word of the prose too; the questions
    and replies follow when sent (Katalog.als_gesendet). Enum values stay: the opening and the questions use them."""
    werkzeuge, argumente = katalog.synonyme["werkzeuge"], katalog.synonyme["argumente"]
    karte = {**{n: v for n, v in argumente.items() if re.search(r"[_\d]|[a-z][A-Z]", n)}, **werkzeuge}  # identifiers
    namen = sorted(karte, key=len, reverse=True)
    alt = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, namen)) + r")(?![\w-])") if namen else None

    def text(t):
        return alt.sub(lambda m: karte[m.group()], t) if alt and isinstance(t, str) else t

    def schema(p):
        return dict(p, properties={argumente[k]: dict(v, description=text(v["description"]))
                                   if "description" in v else v for k, v in p.get("properties", {}).items()},
                    required=[argumente[k] for k in p.get("required", [])])
    neu = [{"type": "function", "function": dict(w["function"], name=werkzeuge[w["function"]["name"]],
                                                 parameters=schema(w["function"]["parameters"]),
                                                 **({"description": text(w["function"]["description"])}
                                                    if "description" in w["function"] else {}))}
           for w in katalog.werkzeuge]
    return katalog._replace(werkzeuge=neu, eroeffnung=text(katalog.eroeffnung), variante="synonyme", sprache=text,
                            eroeffnung_ganz=text(katalog.eroeffnung_ganz),
                            umbenennung={"werkzeuge": dict(werkzeuge), "argumente": dict(argumente)})


def umgeordnet(katalog):
    """The same tools in another order, drawn with a fixed seed (never the order as written)."""
    zufall, werkzeuge = random.Random(REIHENFOLGE_SEED), list(katalog.werkzeuge)
    while len(werkzeuge) > 1 and werkzeuge == katalog.werkzeuge:
        zufall.shuffle(werkzeuge)
    return katalog._replace(werkzeuge=werkzeuge, variante="reihenfolge", seed=REIHENFOLGE_SEED)


def abgelenkt(katalog):
    """The decoys first, then the tools: a model that picks by position or by a near name picks a decoy."""
    return katalog._replace(werkzeuge=list(katalog.ablenkung) + list(katalog.werkzeuge),
                            variante="ablenkung", zusatz=tuple(w["function"]["name"] for w in katalog.ablenkung))


def pruefe_synonyme(pfad, synonyme, werkzeuge):
    """A map for every tool and every parameter name, to new names that are all different from the old."""
    teile = {"werkzeuge": {w["function"]["name"] for w in werkzeuge},
             "argumente": {a for w in werkzeuge for a in w["function"]["parameters"].get("properties", {})}}
    for teil, alt in teile.items():
        karte = synonyme.get(teil) if isinstance(synonyme, dict) else None
        if not isinstance(karte, dict) or not all(isinstance(v, str) and NAME.fullmatch(v) for v in karte.values()):
            raise Eingabefehler(f"{pfad}: \"synonyme\" needs \"{teil}\": {{old name: new name}}, each new name 1 to "
                                "64 letters, digits, '_' or '-'")
        fehlt = sorted(alt - set(karte))
        if fehlt:
            raise Eingabefehler(f"{pfad}: \"synonyme\" has no other name for '{fehlt[0]}' in \"{teil}\"")
        neu = list(karte.values())
        doppelt = sorted({v for v in neu if neu.count(v) > 1} | (set(neu) & alt))  # a new name must name one thing
        if doppelt:
            raise Eingabefehler(f"{pfad}: \"synonyme\" gives '{doppelt[0]}' in \"{teil}\" twice or as an old name")


def neuer_name(katalog, name):
    """A tool's name as the catalogue sent names it (synonyme renames it)."""
    return katalog.umbenennung["werkzeuge"].get(name, name) if katalog.umbenennung else name


def umbenannte_args(katalog, wert):
    """Arguments, or a tool's result, with each key that is a parameter's name as the catalogue sent names it."""
    if isinstance(wert, list) and katalog.umbenennung:
        return [umbenannte_args(katalog, w) for w in wert]
    if not isinstance(wert, dict) or not katalog.umbenennung:
        return wert
    return {katalog.umbenennung["argumente"].get(k, k): umbenannte_args(katalog, v) for k, v in wert.items()}


ALTER_NAME = " (an old name)"  # marks a name the renamed catalogue no longer has: it never fits


def zurueckbenannt(aufrufe, umbenennung):
    """Calls in the renamed catalogue's names, named as the cases name them. A name of the catalogue
    as written is not one of the renamed: it is marked, so that passt never takes it."""
    werkzeuge, argumente = ({neu: alt for alt, neu in umbenennung[t].items()} for t in ("werkzeuge", "argumente"))
    def zurueck(name, karte):
        return karte.get(name, name + ALTER_NAME if name in karte.values() else name)
    return [dict(c, name=c["name"] if c["name"] is None else zurueck(c["name"], werkzeuge),
                 args=None if c["args"] is None else {zurueck(k, argumente): v for k, v in c["args"].items()})
            for c in aufrufe]

# ---------------------------------------------------------------------------
# The stream: server-sent events read as one answer, and checked against the plain one
# ---------------------------------------------------------------------------


NICHT_GESTREAMT = "a plain answer to a streamed request"
STROM_FEHLER = "an error event mid-stream, after every attempt"
OHNE_USAGE = "no usage chunk"  # every streamed request asks for one (stream_options.include_usage)


def ist_strom(r):
    return "event-stream" in r.headers.get("Content-Type", "") or r.content.lstrip()[:5] == b"data:"


def strom_antwort(text, latenz, abgebrochen=False):
    """The Antwort of a streamed chat completion (SSE), assembled as the OpenAI spec says: content
    deltas joined; calls keyed by index, their id, type and name taken once, argument fragments
    joined in order; reasoning kept apart; finish_reason from the last choice chunk that has one;
    usage from the last chunk that has it. None when no chunk holds a choice, or when any chunk is an
    error event (vLLM sends {"error": ...} when its tool parser raises mid-stream): no answer, asked again.
    abgebrochen: after the last attempt, what came before the error event is the answer, its defect named
    (STROM_FEHLER), so that the run saves it as the server's and goes on."""
    teile = {"content": [], "reasoning_content": [], "refusal": []}
    rufe, defekte, weitere = {}, {}, set()  # rufe: index -> call; defekte: an ordered set
    finish, usage, chunks, fertig, gewaehlt, wer = None, {}, 0, False, False, None
    for daten in sse_daten(text):
        if fertig:
            defekte["data after [DONE]"] = 1
        if daten.strip() == "[DONE]":
            fertig = True
            continue
        try:
            chunk = kappe(json_laden(daten, DECODER))
        except (ValueError, RecursionError):
            defekte["a chunk that is not JSON"] = 1
            continue
        if not isinstance(chunk, dict):
            continue
        if chunk.get("error") is not None:
            if not abgebrochen:
                return None  # fehlerbild names the server's words
            defekte[STROM_FEHLER], gewaehlt = 1, True
            break
        chunks += 1
        wer = wer_antwortete(chunk, wer)
        usage = chunk["usage"] if isinstance(chunk.get("usage"), dict) else usage
        for wahl in chunk.get("choices") if isinstance(chunk.get("choices"), list) else []:
            if not isinstance(wahl, dict) or wahl.get("index", 0) != 0:
                weitere.add(json.dumps(wahl.get("index") if isinstance(wahl, dict) else None))
                continue
            delta, gewaehlt = wahl.get("delta") if isinstance(wahl.get("delta"), dict) else {}, True
            nimm_delta(delta, teile, rufe, defekte, finish is not None)
            finish = wahl["finish_reason"] if isinstance(wahl.get("finish_reason"), str) else finish
    if not gewaehlt:
        return None
    if not fertig and STROM_FEHLER not in defekte:
        defekte["no [DONE]"] = 1
    if not usage:
        defekte[OHNE_USAGE] = 1
    nachricht = {"role": "assistant", "content": "".join(teile["content"]) if teile["content"] else None}
    nachricht.update({f: "".join(t) for f, t in teile.items() if t and f != "content"})
    if rufe:
        nachricht["tool_calls"] = [{"id": c["id"], "type": c["type"] or "function", "function": {
            "name": c["name"], "arguments": "".join(c["arguments"])}} for _, c in sorted(rufe.items())]
    return Antwort(nachricht, usage, latenz, finish, len(weitere), {"chunks": chunks, "defekte": list(defekte)},
                   wer=wer)


def nimm_delta(delta, teile, rufe, defekte, nach_ende):
    """Add one delta of choice 0 to what is assembled so far; note what breaks the protocol."""
    for feld, ziel in (("content", "content"), ("reasoning_content", "reasoning_content"),
                       ("reasoning", "reasoning_content"), ("refusal", "refusal")):
        if isinstance(delta.get(feld), str) and delta[feld]:
            teile[ziel].append(delta[feld])
            if nach_ende:
                defekte["fragments after finish_reason"] = 1
    for c in delta.get("tool_calls") if isinstance(delta.get("tool_calls"), list) else []:
        if not isinstance(c, dict):
            continue
        f = c.get("function") if isinstance(c.get("function"), dict) else {}
        index = c.get("index")
        if type(index) is not int:
            defekte["a call delta without index"] = 1
            # subtle: a delta that names a call starts one; without a name it goes on with the last
            index = len(rufe) if f.get("name") or not rufe else max(rufe)
        ruf = rufe.setdefault(index, {"id": None, "type": None, "name": None, "arguments": []})
        if nach_ende:
            defekte["fragments after finish_reason"] = 1
        for schluessel, wert in (("id", c.get("id")), ("type", c.get("type")), ("name", f.get("name"))):
            if isinstance(wert, str) and wert:
                if ruf[schluessel] is None:
                    ruf[schluessel] = wert
                elif schluessel in STROM_EINMAL and ruf[schluessel] != wert:
                    defekte[STROM_EINMAL[schluessel][0]] = 1
                elif schluessel == "name":  # OpenAI sends the name once, in the call's first delta
                    defekte[STROM_EINMAL["name"][1]] = 1
        args = f.get("arguments")
        if isinstance(args, str):
            ruf["arguments"].append(args)
        elif args is not None:  # the spec's arguments are a string of JSON, sent in fragments
            defekte["arguments that are not a string"] = 1
            ruf["arguments"].append(json.dumps(args))


STROM_EINMAL = {"name": ("a name that changes within a call", "a name sent twice within a call"),
                "id": ("an id that changes within a call",)}  # what a call's deltas send once


def sse_daten(text):
    """The data of each server-sent event: its data: lines joined by newlines (comments and other fields skipped)."""
    daten = []
    for zeile in text.splitlines():
        if zeile.startswith("data:"):
            daten.append(zeile[5:].removeprefix(" "))
        elif not zeile and daten:
            yield "\n".join(daten)
            daten = []
    if daten:
        yield "\n".join(daten)


def mit_gegenprobe(b, strom, pruefungen, umbenennung):
    """The Note with its stream's defects and its cross-check read once (gegenprobe): the calls of the same
    request without stream, and of the stream asked again, each as a multiset beside the streamed answer's,
    and the plain answer's calls for the failed list; None where none was asked (or the output succeeded)."""
    b = b._replace(gestreamt=strom is not None, defekte=tuple((strom or {}).get("defekte", [])))
    ohne_strom = next((z for z in pruefungen if z["zweck"] == OHNE_STROM), {})
    if "nachricht" not in ohne_strom or gelungen(b):
        return b
    def lies(n):
        return zurueckbenannt(lies_aufrufe(n)[0], umbenennung) if umbenennung else lies_aufrufe(n)[0]
    ohne = lies(ohne_strom["nachricht"])
    nochmal = next((z for z in pruefungen if z["zweck"] == NOCHMAL), None)  # none before repeats were asked:
    # the stream's own stands in
    return b._replace(gegenprobe={"gestreamt": als_menge(b.aufrufe), "ohne": als_menge(ohne), "ohne_aufrufe": ohne,
        "nochmal": als_menge(b.aufrufe) if nochmal is None else
        als_menge(lies(nochmal["nachricht"])) if "nachricht" in nochmal else None})

# ---------------------------------------------------------------------------
# Diagnosis and servers: whose each failure is
# ---------------------------------------------------------------------------


def probe_anfrage(fall, lauf):
    """The probe: the case as the run asked it, but plain, at temperature 0, and with tool_choice
    "required", which every server with a working tool-call parser answers as tool_calls."""
    body = anfrage(fall, lauf._replace(temp=0.0, stream=False))
    body["tool_choice"] = "required"
    return body


KENNUNG_FRIST = 10  # seconds a page about the server may take: it is no answer of the model


def erkenne_server(endpunkt):
    """Which software serves the endpoint, from what it tells of itself: /v1/models's owned_by (each server fills it
    its own way), then the family's own page where it has one (vLLM's /version, Ollama's /api/version, TGI's /info,
    llama.cpp's /props with its chat template); where no owner names a family, the pages of the families known by their
    page alone (TGI's /info). Two or three GETs, after the last answer; a server that tells nothing stays unknown."""
    wurzel, modelle = server_adressen(endpunkt.lauf.url)
    familie, beleg = server_aus_modellen(endpunkt.hole(modelle), endpunkt.lauf.modell)
    if familie is None:
        for f in FAMILIEN.values():
            seite = endpunkt.hole(wurzel + f.seite) if f.erkennt else None
            if seite and f.erkennt(seite):
                return server_kennung(f, f"{f.seite}: {f.erkennt.__doc__}", seite)
        return None
    return server_kennung(familie, beleg, endpunkt.hole(wurzel + familie.seite) if familie.seite else None)


def server_adressen(url):
    """(the server's root, its /v1/models) from the chat URL."""
    teile = urlsplit(url)
    pfad = teile.path
    wurzel_pfad = pfad[:pfad.index("/v1/")] if "/v1/" in pfad else pfad.rsplit("/chat/completions", 1)[0]
    wurzel = urlunsplit((teile.scheme, teile.netloc, wurzel_pfad, "", ""))
    return wurzel, urlunsplit((teile.scheme, teile.netloc, wurzel_pfad + "/v1/models", teile.query, ""))


def server_aus_modellen(liste, modell):
    """(the family or None, what told it) from /v1/models's owned_by; TGI fills it with the model's id."""
    daten = liste.get("data") if isinstance(liste, dict) else None
    eintraege = [d for d in daten if isinstance(d, dict)] if isinstance(daten, list) else []
    eintrag = next((d for d in eintraege if d.get("id") == modell), eintraege[0] if eintraege else None)
    besitzer = eintrag.get("owned_by") if eintrag else None
    familie = next((f for f in FAMILIEN.values() if besitzer in f.owned_by), None) if isinstance(besitzer, str) \
        else None
    return (familie, f"/v1/models: owned_by {besitzer}") if familie else (None, None)


def server_kennung(familie, beleg, seite):
    """The settings line's record of the server: {"name", "version", "beleg", "vorlage"} (vorlage: where
    the family's page tells it, the chat template, whether it renders tools and which call form it asks for)."""
    seite = seite or {}
    version = seite.get(familie.version_feld)
    return {"name": familie.name, "version": version if isinstance(version, str) else None, "beleg": beleg,
            "vorlage": vorlage_von(seite) if familie.zeigt_vorlage else None}


class Familie(typing.NamedTuple):
    """What messen knows of one server family: how it is recognised, what it does with tool_choice
    "required" (the probe), its own option for each fix, its parsers' names by the form a model writes,
    and its quirks, each with the issue thread that shows it (docs/diagnose.md). A new family is one
    record of FAMILIEN and its test. What stands outside the records, and why: what a server's message
    says (HINWEISE, matched on its text before the server is known), llama.cpp's refusal to parse
    (ABGELEHNT, matched on the error body alone) and a context overflow (KONTEXT_VOLL, said in the same
    words by several families); each names the servers it was seen on, none decides whose a failure is."""
    name: str
    parser: str  # the fix where calls stay text: its option that reads the model's form ({parser}: its name)
    vorlage: str  # the fix where the catalogue never reaches the prompt
    denken: str  # the fix where a reasoning parser took the answer
    owned_by: tuple = ()  # what its /v1/models fills owned_by with
    seite: str = None  # its own page about itself, asked once it is recognised
    version_feld: str = "version"  # the key of that page that holds its version
    erkennt: object = None  # seite -> bool: the family known by its page alone (its docstring says by what)
    zeigt_vorlage: bool = False  # its page tells the chat template and whether it renders tools (llama.cpp /props)
    # what a probe (tool_choice "required") tells there: 'frei' it tells, 'grammatik' the server forces it with
    # a grammar (a native answer proves only that it can emit calls), 'keine' it ignores tool_choice,
    # 'unbekannt' the server is not known, and may force it by grammar: a probe proves nothing either way
    probe: str = "frei"
    probe_grund: str = ""  # why no probe is asked there, with its threads
    parser_namen: tuple = ()  # (the form a model writes, the parser that reads it)
    doppelt_kodiert: bool = False  # shown to encode arguments twice


def tgi_info(seite):
    """model_id and version"""
    return isinstance(seite.get("model_id"), str) and isinstance(seite.get("version"), str)


def ollama_version(seite):
    """its version alone"""
    return set(seite) == {"version"} and isinstance(seite["version"], str)


UNBEKANNTER_SERVER = Familie("an unknown server", probe="unbekannt",
    parser="the server's tool-call parser for this model's template (its name and option depend on the server)",
    vorlage="a chat template that renders the tools",
    denken="how the server's reasoning and tool-call parsers are paired")
SELBSTTEST = "messen-selbsttest"  # the owner the built-in loopback endpoint names
FAMILIEN = {f.name: f for f in (Familie("vLLM", owned_by=("vllm",), seite="/version", probe="grammatik",
            parser="--enable-auto-tool-choice with the --tool-call-parser that reads the form the model writes{parser}",
            vorlage="--chat-template with a template that renders tools",
            denken="--reasoning-parser paired with --tool-call-parser",
            parser_namen=(("[TOOL_CALLS]", "mistral"), ("<|python_tag|>", "llama3_json"), ("bare JSON", "llama3_json"),
                          ("[f(a=1)]", "pythonic")) + tuple((f.zeichen, f.vllm) for f in AUFRUFFORMEN if f.vllm)),
    Familie("llama.cpp", owned_by=("llamacpp",), seite="/props", version_feld="build_info", zeigt_vorlage=True,
            probe="grammatik", doppelt_kodiert=True,  # llama.cpp #19520
            parser="--jinja (the default in current builds) with a chat template whose call form the model writes "
                   "(--chat-template-file)",
            vorlage="--chat-template-file with a tool-aware template (llama.cpp's models/templates/ holds some)",
            denken="--reasoning-format"),
    # SGLang turns "required" into a JSON-schema constraint and parses the result itself, whatever its
    # --tool-call-parser (serving_chat.py, "Handle required or named tool choice")
    Familie("SGLang", owned_by=("sglang",), probe="grammatik",
            parser="--tool-call-parser for the form the model writes{parser}",
            vorlage="--chat-template with a template that renders tools", denken="--reasoning-parser",
            parser_namen=(("[TOOL_CALLS]", "mistral"), ("<|python_tag|>", "llama3"), ("[f(a=1)]", "pythonic")) +
            tuple((f.zeichen, f.sglang) for f in AUFRUFFORMEN if f.sglang)),
    # owned_by is "library", or a namespaced model's namespace (hf.co/me/..., me/ft): its page alone tells it
    Familie("Ollama", owned_by=("library",), seite="/api/version", erkennt=ollama_version, probe="keine",
            probe_grund="ignores tool_choice (ollama/ollama #8421, #11171)",
            parser="a model whose template renders the tools and reads the call form it writes (its Modelfile's "
                   "TEMPLATE)", vorlage="a model whose template supports tools", denken="the model's think setting"),
    Familie("LM Studio", owned_by=("organization_owner",),
            parser="the model's prompt template in LM Studio, with tool use on",
            vorlage="a prompt template that renders tools", denken="the model's reasoning setting"),
    Familie("TGI", seite="/info", erkennt=tgi_info, probe="grammatik",
            parser="a model TGI supports for tools (it reads calls by grammar only)",
            vorlage="a model whose tokenizer_config has a tool-aware chat_template", denken="its reasoning settings"),
    UNBEKANNTER_SERVER._replace(name="the self-test's loopback endpoint", owned_by=(SELBSTTEST,)))}


def familie_von(server):
    """The family record of a settings line's server; an unknown (or unnamed) one's words otherwise."""
    return FAMILIEN.get(server["name"], UNBEKANNTER_SERVER) if server else UNBEKANNTER_SERVER


def parser_gezeigt(server):
    """Does the server itself show its tool-call parser on for this model's template? llama.cpp derives
    its parser from the template, and /props says the template renders tools."""
    return bool(familie_von(server).zeigt_vorlage and (server.get("vorlage") or {}).get("werkzeuge"))


def abhilfe(was, server, form=None):
    """The fix `was` (parser, vorlage, denken) in the identified server's own words; for an unknown one in
    words, never another server's flag."""
    familie = familie_von(server)
    text = getattr(familie, was)
    parser = dict(familie.parser_namen).get(form)
    return text.replace("{parser}", f" ({parser} for {form})" if parser else "")


TAG_FORMEN = tuple(dict.fromkeys(("<tool_call>", "[TOOL_CALLS]", "<|python_tag|>") + tuple(
    f.zeichen for f in AUFRUFFORMEN)))  # the call marks a chat template may ask for


def vorlage_von(props):
    """What llama.cpp's /props says of its chat template: {"werkzeuge": renders tools (True/False/None),
    "form": the call tag it asks the model to write, or None}; None without a template."""
    vorlage = props.get("chat_template")
    if not isinstance(vorlage, str):
        return None
    caps = props.get("chat_template_caps") if isinstance(props.get("chat_template_caps"), dict) else {}
    werkzeuge = caps.get("supports_tool_calls", caps.get("supports_tools"))
    return {"werkzeuge": werkzeuge if isinstance(werkzeuge, bool) else "tools" in vorlage,
            "form": next((f for f in TAG_FORMEN if f in vorlage), None),
            "sha256": hashlib.sha256(vorlage.encode("utf-8", "surrogatepass")).hexdigest()[:12]}


KATALOG_TOKENS = 200
S1_WEGGELASSEN = 4010.5  # characters of the tools the chapter's S1 leaves out, the median over its cases
# subtle: the full catalogue is about 4,800 characters of JSON and S1's two to four tools 600 to 1,500, so a template
# that renders tools adds roughly a thousand tokens to S2-S5 over S1; less than 200 more means the tools never reached
# the prompt. Clearly fewer (a server that counts only uncached tokens) says nothing either way.
WENIGER_TOKENS = 50
TOKENS_HOECHSTENS = 10 ** 9  # a count above this is no count a server measured


def strom_defekt(a):
    """Did the stream change what was graded: a failed output (or second turn) whose same request
    without stream, at temperature 0, gave other calls, while the stream asked again gave the same?"""
    g = a.gegenprobe
    return bool(g) and g["ohne"] != g["gestreamt"] and g["nochmal"] == g["gestreamt"]


def als_menge(aufrufe):
    """Calls as a comparable multiset: the order of calls and of their arguments does not matter."""
    return sorted(json.dumps(aufruf_kern(c), sort_keys=True) for c in aufrufe)


def strom_ungeprueft(b):
    """A failed streamed output whose stream's part cannot be told: no plain answer beside it (a
    temperature above 0, or the plain request failed), or the stream asked again gave calls of its own."""
    if not b.gestreamt or gelungen(b):
        return False
    g = b.gegenprobe
    return g is None or g["ohne"] != g["gestreamt"] and g["nochmal"] not in (g["gestreamt"], g["ohne"])


def sofort_beendet(a):
    """Nothing at all, for at most the one token that ends a turn, and the turn ended there."""
    return a.mangel == "leer" and not a.inhalt_da and a.completion_tokens is not None and \
        a.completion_tokens <= 1 and a.finish == "stop"


class Wessen(typing.NamedTuple):
    """One row of the one table that says whose a failed answer is: its reason, whose (server, modell, unklar), the
    test on its Note. The verdict on the model (ausgang), the diagnosis's counts of these reasons and their owners,
    and the diagnosis's heading all read these rows and no other; the words of each reason's line stand in
    DIAGNOSE_HINWEISE under the same reason."""
    grund: str
    wessen: str
    trifft: typing.Callable


def abgelehnt(a):
    return "geparst_abgelehnt" in a.protokoll


def strom_abgebrochen(a):
    return STROM_FEHLER in a.defekte


def fremde_vorlage(a):
    return a.fremde_marken


def geschleift(a):
    return a.mangel == "abgeschnitten" and a.schleife


def gekappt_unter_grenze(a):
    return a.mangel == "abgeschnitten" and a.grenze is not None


def gekappt_ohne_grenze(a):
    return a.mangel == "abgeschnitten"


def angekuendigt(a):
    return a.mangel == "angekuendigt"


def im_denken(a):
    return a.mangel == "im_denken"


def argumente_fehlen(a):
    return a.form == "versuch" and not a.still


def markiert_ungelesen(a):
    return a.form == "parser" and not a.still and all(c["args"] is None for c in a.aufrufe if c["quelle"] != NATIV) \
        and any(c["quelle"] in TAG_FORMEN for c in a.aufrufe)


def leer_gezaehlt(a):
    return a.mangel == "leer" and not a.inhalt_da and a.completion_tokens is not None


def leer_ungezaehlt(a):
    return a.mangel == "leer" and not a.inhalt_da


WESSEN = (  # whose a failed answer is, by the evidence its Note holds, weighed in this order (Wessen rows):
    # 'server' only where the response itself proves it; 'unklar' (cannot tell) where nothing settles it
    Wessen("strom_abgebrochen", "server", strom_abgebrochen),  # an error event mid-stream, after every attempt
    Wessen("strom_defekt", "server", strom_defekt),  # a stream its plain twin shows broken
    Wessen("strom_ungeprueft", "unklar", strom_ungeprueft),  # a stream the cross-check cannot settle
    # refused by the server's parser: the model wrote a call wrongly, or the parser rejects a form it should read
    Wessen("geparst_abgelehnt", "unklar", abgelehnt),
    # an answer cut while it repeats itself is the model's: it loops, whatever the limit; runs are compared only
    # under the same server, chat template and settings. A cut one is the model's under a limit the user set (the
    # same for both runs); without one, the server's own limit may have cut it, which cannot be told
    # a template's turn markers written as text: the model never saw its own end-of-turn token, and a model on
    # another family's template loops and rambles past it: the set-up's, not the model's
    Wessen("fremde_vorlage", "server", fremde_vorlage),
    Wessen("schleife", "modell", geschleift),
    Wessen("abgeschnitten", "modell", gekappt_unter_grenze),
    Wessen("abgeschnitten", "unklar", gekappt_ohne_grenze),
    Wessen("angekuendigt", "unklar", angekuendigt),  # calls a parser dropped after announcing
    Wessen("im_denken", "unklar", im_denken),  # an answer left in a reasoning field
    # functions.NAME: and nothing after: the model's, or a handler's that lost the arguments (in S4/S5 it is a
    # spare call all the same)
    Wessen("argumente_fehlen", "unklar", argumente_fehlen),
    # a family's call marks in the content, no call among them complete: the server's parser was not applied, and
    # whether it would have read them (or the model wrote them wrongly, or a limit cut them) cannot be told
    Wessen("markiert", "unklar", markiert_ungelesen),
    # nothing at all: whose by the completion tokens the server counted (whitespace or a stop token written as
    # text is something the model wrote): none or one, the end of the turn alone, is a model that ends at once
    # (a fine-tune whose end-of-turn token was trained everywhere); more, tokens the server never sent
    Wessen("sofort_beendet", "modell", sofort_beendet),
    Wessen("leer", "server", leer_gezaehlt),
    Wessen("leer", "unklar", leer_ungezaehlt))
WESSEN_GRUENDE = tuple(dict.fromkeys(w.grund for w in WESSEN))
WESSEN_ARTEN = ("server", "modell", "unklar")  # in the order a heading names them


def wessen_zeile(b):
    """The row of WESSEN a failed answer's evidence meets first, or None (a success, or the model's own failure)."""
    return None if gelungen(b) else next((w for w in WESSEN if w.trifft(b)), None)


def wessen_zaehlen(k):
    """reason -> {whose: answers}, over every answer of a run, as WESSEN decides each: what the diagnosis's lines
    of these reasons count, and whose each line is."""
    zahlen = {}
    for b in k.alle:
        w = wessen_zeile(b)
        if w:
            zahlen.setdefault(w.grund, collections.Counter())[w.wessen] += 1
    return {g: dict(zahlen[g]) for g in WESSEN_GRUENDE if g in zahlen}


def je_grund(grund):
    """The diagnosis count of one reason of WESSEN: its answers, whoever's."""
    def zaehle(k):
        return sum(k.wessen_je_grund.get(grund, {}).values())
    zaehle.__name__ = f"zaehle_{grund}"
    return zaehle


Lage = collections.namedtuple("Lage", "alle ausgaben text eigen wessen grund server probe katalog protokoll "
                                      "wessen_je_grund")


# what a diagnosis counts from: every answer, the outputs, well-formed text calls in a parser's form and in the model's
# own, whose the first are (TEXT_WESSEN) and why, server, probe, katalog_befund's pair, the protocol's notes by kind,
# and the answers of each reason of WESSEN by whose (wessen_zaehlen)
def unlesbar_zaehlen(k):
    """Calls whose arguments do not parse, by form, in the answers whose failure WESSEN leaves to the model (or to
    its argumente_fehlen row): a cut call is the cut's, a call the server refused to parse is the refusal's."""
    return dict(collections.Counter(form for b in k.alle if b.job is None and not b.mangel and
                                    getattr(wessen_zeile(b), "grund", "argumente_fehlen") == "argumente_fehlen"
                                    for form, _ in unlesbar_von(b)))


def diagnose_zahlen_protokoll(k):
    return {a: k.protokoll[a] for a in PROTOKOLL + tuple(STROM_NOTIZEN.values()) if k.protokoll[a]}


def diagnose_zahlen_eigenes_format(k):
    return k.eigen + (k.text if k.wessen == "modell" else 0)


def diagnose_zahlen_text_ungeklaert(k):
    return k.text if k.wessen == "unklar" else 0


def diagnose_zahlen_probe(k):
    return beleg_text(k.grund, k.server, k.probe) if k.text and k.grund not in ("vorlage", NATIV) else None


def diagnose_zahlen_text_form(k):
    return (max(n := collections.Counter(textform(b.aufrufe) for b in k.alle if b.form in (
        "parser", "eigen")), key=n.get, default=None))


def diagnose_zahlen_leer_ungezaehlt(k):
    return k.wessen_je_grund.get("leer", {}).get("unklar", 0)


def diagnose_zahlen_katalog_unklar(k):
    return k.katalog[1]


def diagnose_zahlen_gemischt(k):
    return gemischt(k.ausgaben)


def diagnose_zahlen_wessen_je_grund(k):
    return k.wessen_je_grund


DIAGNOSE_ZAHLEN = {  # the kinds a diagnosis counts beside DIAGNOSE_HINWEISE's, whose rows carry their own count
    "sofort_beendet": je_grund("sofort_beendet"),
    "protokoll": diagnose_zahlen_protokoll,
    "eigenes_format": diagnose_zahlen_eigenes_format,
    "text_ungeklaert": diagnose_zahlen_text_ungeklaert,
    "probe": diagnose_zahlen_probe,
    "text_form": diagnose_zahlen_text_form,  # the form most were in (one ``` fence among JSON names none)
    "unlesbar": unlesbar_zaehlen,
    "leer_ungezaehlt": diagnose_zahlen_leer_ungezaehlt,  # of leer: no count tells whose
    "katalog_unklar": diagnose_zahlen_katalog_unklar,
    "strom_ungeprueft": je_grund("strom_ungeprueft"),
    "gemischt": diagnose_zahlen_gemischt,  # {modell or build: {name: answers}} where the answers name two or more
    "wessen_je_grund": diagnose_zahlen_wessen_je_grund}
# each a count but katalog_fehlt (bool or None), words (probe, text_form, katalog_unklar), protokoll, unlesbar by kind


def diagnose(ausgaben, schwelle=KATALOG_TOKENS, einstellungen=None):
    """What the server did, counted apart from the model's skill, over every answer (second turns too), each kind by
    its row's count (ZAEHLEN); all zero / False / empty when clear. TEXT_WESSEN settles whose text calls in a parser's
    form are: the model's format (eigenes_format), the parser's (aus_text), or text_ungeklaert. What a stream broke
    is a note in protokoll unless the cross-check shows it changed the calls (strom_defekt)."""
    e = einstellungen or {}
    alle = [b for a in ausgaben for b in antworten(a)]
    heil = {form: sum(c["args"] is not None and c["quelle"] != NATIV for b in alle if b.form == form
                      for c in b.aufrufe) for form in ("parser", "eigen")}
    wessen, grund = text_wessen(any(b.nativ for b in alle), e.get("server"), e.get("probe"))
    k = Lage(alle, ausgaben, heil["parser"], heil["eigen"], wessen, grund, e.get("server"), e.get("probe"),
             katalog_befund(ausgaben, schwelle), sum((collections.Counter(b.protokoll) + collections.Counter(
                 STROM_NOTIZEN.get(d, d) for d in b.defekte) for b in alle), collections.Counter()), None)
    k = k._replace(wessen_je_grund=wessen_zaehlen(k))
    return Diagnose(**{name: zaehle(k) for name, zaehle in ZAEHLEN.items()})


def antworten(a):
    """The answers an output holds, each graded: its Notes, an S7 job's steps in the job's place."""
    return [b for n in a.noten for b in (n.job.gekommen if n.job else (n,))]


STROM_NOTIZEN = {  # what a stream broke of the protocol -> its kind in protokoll
    "no [DONE]": "strom_ohne_done", OHNE_USAGE: "strom_ohne_usage", NICHT_GESTREAMT: "strom_ohne_strom",
    "a call delta without index": "strom_ohne_index", "a name that changes within a call": "strom_name_wechselt",
    "fragments after finish_reason": "strom_nach_ende", "data after [DONE]": "strom_nach_done",
    "a chunk that is not JSON": "strom_kein_json", "an id that changes within a call": "strom_id_wechselt",
    "a name sent twice within a call": "strom_name_doppelt", "arguments that are not a string": "strom_args_kein_text",
    DENKEN_NUR_EINMAL: "strom_denken_anders"}


PROBE_WIE = "asked again with tool_choice \"required\" at temperature 0"
Beleg = collections.namedtuple("Beleg", "nativ server probe antwort")


def text_wessen_vorlage(x):
    return parser_gezeigt(x.server)


def text_wessen_tool_calls(x):
    return x.nativ


def text_wessen_keine(x):
    return familie_von(x.server).probe == "keine"


def text_wessen_grammatik(x):
    return familie_von(x.server).probe == "grammatik"


def text_wessen_unbekannt(x):
    return familie_von(x.server).probe == "unbekannt"


def text_wessen_probe_fehlt(x):
    return not x.probe


def text_wessen_probe_ohne_antwort(x):
    return x.antwort is None


def text_wessen_probe_abgeschnitten(x):
    return x.antwort.finish == "length"


def text_wessen_probe_nativ(x):
    return x.antwort.nativ or x.antwort.form in ("nativ", "teilweise")


def text_wessen_probe_text(x):
    return x.antwort.aufrufe


def text_wessen_probe_ohne_aufruf(x):
    return True


# the run's evidence on its text calls: whether any answer came as tool_calls, the server's record, the probe's
# record as saved, and its answer graded (None where none came)
TEXT_WESSEN = (  # whose well-formed calls left as text in a parser's form are, by the run's evidence, weighed in
    # this order: (reason, kind, test); the diagnosis and --pruefen read it, and the comparison through the diagnosis
    ("vorlage", "modell", text_wessen_vorlage),  # the server's page shows its parser on for the template
    ("tool_calls", "modell", text_wessen_tool_calls),  # other answers came as tool_calls: the parser is on
    # no probe tells where the server ignores tool_choice, forces "required" by a grammar (a native answer proves
    # only that it can emit calls), or is not identified (it may force it)
    ("keine", "unklar", text_wessen_keine),
    ("grammatik", "unklar", text_wessen_grammatik),
    ("unbekannt", "unklar", text_wessen_unbekannt),
    ("probe_fehlt", "unklar", text_wessen_probe_fehlt),  # a run saved before messen asked one, or stopped before it
    ("probe_ohne_antwort", "unklar", text_wessen_probe_ohne_antwort),
    ("probe_abgeschnitten", "unklar", text_wessen_probe_abgeschnitten),  # cut or looping: it tells nothing
    ("probe_nativ", "modell", text_wessen_probe_nativ),  # parser works
    ("probe_text", "server", text_wessen_probe_text),  # text again: the parser is off or reads another form
    ("probe_ohne_aufruf", "unklar", text_wessen_probe_ohne_aufruf))


def text_wessen(nativ, server, probe):
    """(kind, reason) of a run's well-formed calls left as text in a parser's form: the first row of TEXT_WESSEN
    the evidence meets (nativ: any answer of the run came as tool_calls; probe: the probe's record as saved)."""
    antwort = bewerte_ausgabe(Fall("probe"), probe["nachricht"], probe["finish_reason"]) \
        if probe and "nachricht" in probe else None
    x = Beleg(nativ, server, probe, antwort)
    return next((art, grund) for grund, art, trifft in TEXT_WESSEN if trifft(x))


def beleg_text(grund, server, probe):
    """What the probe saw, or why none tells, in words, for the diagnosis and --pruefen (grund: text_wessen's)."""
    name, wie = (server or {}).get("name"), probe and f"{probe['fall']} {PROBE_WIE}"
    if grund == "keine":
        return f"no probe was asked: {name} {familie_von(server).probe_grund}"
    if grund == "grammatik":
        return (f"{wie} tells nothing on {name}, which forces \"required\" with a grammar: an answer as tool_calls "
                "proves only that it can emit calls, not that its parser reads this model's form") if probe else \
            (f"no probe was asked: {name} forces tool_choice \"required\" with a grammar where its structured output "
             "works, so its answer would prove nothing about whether its parser reads this model's form")
    if grund == "unbekannt":
        return ("no probe tells on a server messen does not identify: it may force tool_choice \"required\" with a "
                "grammar, so even an answer as tool_calls would prove nothing about its parser")
    if grund == "probe_fehlt":
        return "no probe was asked (a run saved before messen asked one, or stopped before it)"
    if grund == "probe_ohne_antwort":
        return f"{wie} got no answer: {probe['fehlt']}"
    if grund == "probe_abgeschnitten":
        return f"{wie} was cut by the token limit{' while looping' if schleift(probe['nachricht']) else ''}, " \
               "which tells nothing"
    return {"probe_nativ": f"{wie} came back as tool_calls", "probe_text": f"{wie} came back as text again"}.get(
        grund, f"{wie} came back without any call")


def katalog_befund(ausgaben, schwelle=KATALOG_TOKENS):
    """(katalog_fehlt, why the counts cannot tell or None): katalog_fehlt is True when outputs sent the
    whole catalogue cost less than `schwelle` more prompt tokens than S1's, None when the counts cannot
    tell, for the one reason named."""
    s1 = [t for a in ausgaben if a.stufe == "S1" for t in [zahl_oder_none(a.usage, "prompt_tokens")] if t]
    voll = [t for a in ausgaben if a.stufe != "S1" for t in [zahl_oder_none(a.usage, "prompt_tokens")] if t]
    if not any(a.stufe == "S1" for a in ausgaben):
        return None, "the run has no S1 case, whose few tools the whole catalogue is weighed against"
    if not s1 or not voll:
        return None, "the server sent no plausible prompt_tokens"
    if schwelle < WENIGER_TOKENS:
        return None, f"the tools S1 leaves out add about {schwelle:.0f} tokens, fewer than counts vary by"
    mehr = statistics.median(voll) - statistics.median(s1)
    if mehr < -WENIGER_TOKENS:
        return None, ("the whole catalogue cost fewer prompt_tokens than S1's few tools, so the server counts "
                      "something else")
    return mehr < schwelle, None


NEU_GEMESSEN = {"abgeschnitten", "strom_ungeprueft"}  # settled by other settings for both runs, not by asking again
KLAERT = {  # what would settle each cannot-tell reason of WESSEN (and of a comparison), for the exit-2 line
    "strom_ungeprueft": "the plain cross-check, asked at --temp 0 only: measure at --temp 0, or without --stream",
    "geparst_abgelehnt": "what the model wrote, in the server's log: a call written wrongly, or a form its parser "
                         "rejects",
    "angekuendigt": "the server's tool-call parser, checked with --pruefen: the calls it announced are lost there",
    "im_denken": "the server's reasoning parser paired with its tool-call parser (--pruefen)",
    "argumente_fehlen": "what the model wrote, in the server's log: the arguments, or a handler that lost them",
    "markiert": "the server's tool-call parser for the form the model writes turned on (the diagnosis names it), "
                "measured again",
    "leer": "a server that reports usage: an empty answer for counted tokens is the server's",
    "abgeschnitten": "a token limit set for both runs (--extra '{\"max_tokens\": 512}'), measured again",
    "text_ungeklaert": "a server that says who it is, or a probe where it tells (--pruefen)",
    "argumente_doppelt": "a server known not to encode arguments twice",
    "nachfrage_fehlt": "the second turns, asked again by the same command"}


def ausgaenge_je_fall(faelle, ausgaben, mit_nachfrage=False, nativ=None, temp=None):
    """id -> per draw (each output's, in lauf order), (kind, reason, turn) where it failed, else None: what the
    verdict reads. mit_nachfrage: S5's second turn counts (turn 2); nativ: the run's (diagnosis, server), by which
    an output done as meant whose calls an agent does not receive fails too (NICHT_NATIV). An earlier draw the server
    spoiled is replaced by the later; at temperature 0 (temp) so is one that cannot be told, where the later draw is
    evidence on the model: at temperature 0 a model answers one way, so the draw that shows it settles the one
    that could not (a server fixed between them, asked again with --klaeren)."""
    je_fall = {f.id: {} for f in faelle}
    for a in ausgaben:
        x = [ausgang(b, mit_nachfrage, nativ) for b in (a,) + a.frueher]
        weg = ("server", "unklar") if temp == 0 and (x[0] is None or x[0][0] == "modell") else ("server",)
        je_fall[a.id][a.lauf] = x[:1] + [y for y in x[1:] if not y or y[0] not in weg]
    return {i: [x for k in sorted(v) for x in v[k]] for i, v in je_fall.items() if v}


def nicht_nativ_geparst_abgelehnt(a, d, s):
    return "geparst_abgelehnt" in a.protokoll


def nicht_nativ_argumente_objekt(a, d, s):
    return "argumente_objekt" in a.protokoll


def nicht_nativ_doppelt_beim_server(a, d, s):
    return ("argumente_doppelt" in a.protokoll and
        familie_von(s).doppelt_kodiert)


def nicht_nativ_doppelt(a, d, s):
    return "argumente_doppelt" in a.protokoll


def nicht_nativ_teilweise_geparst(a, d, s):
    return a.form == "teilweise"


def nicht_nativ_aus_text(a, d, s):
    return a.form != "eigen" and d.aus_text


def nicht_nativ_text_ungeklaert(a, d, s):
    return a.form != "eigen" and d.text_ungeklaert


def nicht_nativ_eigenes_format(a, d, s):
    return True


NICHT_NATIV = (  # whose it is that an output done as meant reached an agent as no calls, or as calls it cannot
    # json.loads, weighed in this order: (reason, kind, test of its Note, the run's diagnosis and its server)
    ("geparst_abgelehnt", "unklar", nicht_nativ_geparst_abgelehnt),
    ("argumente_objekt", "server", nicht_nativ_argumente_objekt),  # an object, not a string
    # twice-encoded: the server's only on a server shown to do it
    ("argumente_doppelt", "server", nicht_nativ_doppelt_beim_server),
    ("argumente_doppelt", "unklar", nicht_nativ_doppelt),
    ("teilweise_geparst", "server", nicht_nativ_teilweise_geparst),  # the first call alone parsed
    # a parser's form, as the run's diagnosis weighs it: the parser off, or cannot tell; else the model's format
    ("aus_text", "server", nicht_nativ_aus_text),
    ("text_ungeklaert", "unklar", nicht_nativ_text_ungeklaert),
    ("eigenes_format", "modell", nicht_nativ_eigenes_format))


def ausgang(a, mit_nachfrage, nativ=None):
    """One draw's (kind, reason, turn) where it failed, else None (see ausgaenge_je_fall)."""
    x = a.note.wessen and a.note.wessen + (1,)
    if not x and mit_nachfrage and a.mit_nachfrage:
        x = ("unklar", "nachfrage_fehlt", 2) if a.nachfrage is None else a.nachfrage.wessen and \
            a.nachfrage.wessen + (2,)
    return x if x or not nativ or gelungen_nativ(a.note) else \
        next((art, grund, 1) for grund, art, trifft in NICHT_NATIV if trifft(a.note, *nativ))


def probe_von(endpunkt, fall, lauf):
    """Ask the probe for one case; its record as the settings line saves it."""
    try:
        antwort = endpunkt.frage(fall, probe_anfrage(fall, lauf))
    except Serverfehler as e:
        return {"fall": fall.id, "fehlt": str(e)}
    return {"fall": fall.id, "nachricht": antwort.nachricht, "finish_reason": antwort.finish}


def probe_fall(faelle, ausgaben, server=None):
    """The first case whose answer (an S7 step's too) holds a well-formed text call in a parser's form, where only a
    probe can tell whose it is (text_wessen); None when no probe is needed or can tell."""
    alle = [(a.id, b) for a in ausgaben for b in antworten(a)]
    if text_wessen(any(b.nativ for _, b in alle), server, None)[1] != "probe_fehlt":
        return None  # something settles it already, or no probe can
    ids = {i for i, b in alle if b.form == "parser" and any(c["args"] is not None for c in b.aufrufe)}
    return next((f for f in faelle if f.id in ids), None)

NICHT_DAS_MODELL = "The figures above measure that setting, not the model."
IM_DENKEN_FOLGE = ("Whether the model answered inside its reasoning or the server's reasoning parser took its answer "
                   "cannot be told here.")


def leer_folge(d):
    """The leer line's end, as WESSEN weighs each: the server's for completion tokens it counted and never sent,
    cannot tell for those it gave no count for."""
    if not d.leer_ungezaehlt:
        return NICHT_DAS_MODELL
    alle = d.leer_ungezaehlt == d.leer
    return (f"{'All' if alle else d.leer_ungezaehlt} of them came without a token count, so whose "
            f"{'they are' if alle else 'those are'} cannot be told: {KLAERT['leer']}.")
EIGENES_FORMAT = ("calls were written in a format of the model's own (a ``` block, JSON in prose, or text beside "
                  "other answers' tool_calls), which no tool-call parser turns into tool_calls: an agent on this "
                  "server receives text, not calls. That is the model's output format, not a server setting: "
                  "train or prompt it on its chat template's tool-call format. The figures grade these calls as "
                  "calls; gelungen_nativ is what an agent gets done")
SOFORT_BEENDET = ("answers that ended at once: nothing but the end of the turn (completion_tokens 0 or 1, "
                  "finish_reason stop). The model ends its turn before it answers, as a fine-tune does whose "
                  "end-of-turn token was trained at every position; not the server")
SCHLEIFE_FOLGE = ("A comparison under the same server, chat template and limit counts these outputs as the "
                  "model's.")
ABGESCHNITTEN_FOLGE = ("No limit was set for this run, so the server's own may have cut them: whose they are cannot be "
                       "told; " + KLAERT["abgeschnitten"] + " settles it.")
VERWORFEN_FOLGE = "The choice graded is the model's answer as any other; nothing is blamed on the server for it."
NACH_DEM_GEMEINTEN = ("The figures grade the calls as the model wrote them; gelungen_nativ is what an agent on "
                      "this server gets done.")
Hinweis = collections.namedtuple("Hinweis", "was abhilfe wessen folge zaehle")


def diagnose_hinweise_katalog_fehlt_hinweis(k):
    return k.katalog[0]


def diagnose_hinweise_teilweise_geparst_hinweis(k):
    return sum(b.form == "teilweise" for b in k.alle)


def diagnose_hinweise_aus_text_hinweis(k):
    return k.text if k.wessen == "server" else 0


def diagnose_hinweise_label_umgeschrieben_hinweis(k):
    return sum(not b.aufrufe and bool(b.text) for b in k.alle) * all(b.finish == NATIV for b in k.alle)


def diagnose_hinweise_denken_im_text_hinweis(k):
    return sum(b.denken_im_text for b in k.alle)


def diagnose_hinweise_verworfen_hinweis(k):
    return sum(bool(a.verworfen) for a in k.ausgaben)


# a diagnosis count's line: what it counts, the fix (in the identified server's options), whose it is (a tuple of
# server, modell, unklar, empty for a note that blames no one; None for a reason of WESSEN, whose rows decide it
# per answer), what follows for the figures (or a function of the diagnosis), and its count over the run's Lage.
# Rows whose reason is WESSEN's count per answer; the others (katalog_fehlt, aus_text, teilweise_geparst,
# label_umgeschrieben, verworfen) are a run's: they weigh all its answers together.
DIAGNOSE_HINWEISE = {
    "katalog_fehlt": Hinweis("the catalogue never reached the prompt: outputs sent the whole catalogue cost no more "
                             "prompt_tokens than S1's, sent a few of its tools",
                             "the chat template ignores `tools`: {vorlage}, in the model's own turn format",
                             ("server",), NICHT_DAS_MODELL,
                             diagnose_hinweise_katalog_fehlt_hinweis),
    "leer": Hinweis("outputs with neither a call nor text", "the server returned nothing: check its chat template "
                    "and stop tokens", None, leer_folge, je_grund("leer")),
    "abgeschnitten": Hinweis("outputs cut off by the token limit without a complete call",
                             "raise max_tokens with --extra '{\"max_tokens\": 4096}', or the server's own limit; "
                             "for thinking models, the thinking budget", None, ABGESCHNITTEN_FOLGE,
                             je_grund("abgeschnitten")),
    "teilweise_geparst": Hinweis("outputs with calls in tool_calls and further calls left as text in the content "
                                 "beside them", "the server's tool-call parser stopped after the first call "
                                 "(llama.cpp #14101 and SGLang #18102 left <tool_call> blocks so): an agent receives "
                                 "only what came as tool_calls; update the server or report it", ("server",),
                                 NACH_DEM_GEMEINTEN, diagnose_hinweise_teilweise_geparst_hinweis),
    "schleife": Hinweis("outputs cut off by the token limit while their text repeated one piece over and over",
                        "the model loops: more max_tokens only makes it longer; cap it (--extra '{\"max_tokens\": "
                        "256}') and check the chat template, since a wrong one makes small models loop", None,
                        SCHLEIFE_FOLGE, je_grund("schleife")),
    "aus_text": Hinweis("calls were read from the answer text, not from tool_calls",
                        "the server's tool-call parser is off or reads another form: {parser}", ("server",),
                        NICHT_DAS_MODELL, diagnose_hinweise_aus_text_hinweis),
    "im_denken": Hinweis("outputs whose whole answer (calls or text) stands in a reasoning field, graded as no answer",
                         "check {denken}", None, IM_DENKEN_FOLGE, je_grund("im_denken")),
    "label_umgeschrieben": Hinweis("answers of text alone labelled finish_reason tool_calls, where every answer "
                                   "is so labelled: a proxy or the server rewrites the label", "remove what rewrites "
                                   "it and measure again: a cut answer or lost calls cannot be told by it here",
                                   ("server",), "They are graded as calls announced and lost (angekuendigt), whose "
                                   "they are cannot be told.",
                                   diagnose_hinweise_label_umgeschrieben_hinweis),  # a label no answer deserves
    "denken_im_text": Hinweis("outputs whose content holds the model's reasoning between its family's delimiters "
                              "(<think>, Harmony's analysis channel, Gemma 4's thought channel, [THINK])",
                              "the server's reasoning parser is off: {denken}", ("server",),
                              "They were graded without it; an agent on this server receives the reasoning as "
                              "content.", diagnose_hinweise_denken_im_text_hinweis),
    "verworfen": Hinweis("outputs held several choices: the one with index 0 was graded, the others dropped",
                         "the server or a proxy set n", (), VERWORFEN_FOLGE,
                         diagnose_hinweise_verworfen_hinweis),
    "fremde_vorlage": Hinweis("outputs that write a chat template's turn markers as text (<|im_end|>, <|im_start|>, "
                              "<end_of_turn>, <|eot_id|>, </s>): the model never saw its own end-of-turn token, so "
                              "this chat template is not the model's", "serve it with the chat template in its own "
                              "turn format: {vorlage}", None, NICHT_DAS_MODELL, je_grund("fremde_vorlage")),
    "strom_abgebrochen": Hinweis("streamed answers the server broke off with an error event, at every attempt "
                                 "(graded as what came before it)", "the server's streamed parser raised mid-stream "
                                 "(vLLM sends {\"error\": ...} so): measure without --stream to see the model, and "
                                 "update the server or report it", None, NICHT_DAS_MODELL,
                                 je_grund("strom_abgebrochen")),
    "markiert": Hinweis("outputs whose content holds a model family's call marks with no complete call among "
                        "them (cut, malformed, or a variant of the form messen does not read)",
                        "the server's tool-call parser was not applied: set {parser}", None,
                        "Whose they are cannot be told: the parser would have read them, or the model wrote them "
                        "wrongly.", je_grund("markiert")),
    "strom_defekt": Hinweis("failed outputs whose same request without stream, at temperature 0, gave other calls "
                            "(both stand in the failed-case list)",
                            "the server's streamed tool-call parser is at fault, not the model: measure without "
                            "--stream to see the model, and update the server or report it (vLLM, SGLang, Ollama "
                            "and llama.cpp have each had such bugs)", None, NICHT_DAS_MODELL,
                            je_grund("strom_defekt"))}
ZAEHLEN = {**{name: h.zaehle for name, h in DIAGNOSE_HINWEISE.items()}, **DIAGNOSE_ZAHLEN}  # every kind -> its count


class Diagnose(collections.namedtuple("Diagnose", ZAEHLEN)):
    """What diagnose counts, a field per kind, read by field; whose each reason of WESSEN was (wessen_je_grund)
    decides its line's owner and stays out of the JSON, whose lines say it."""
    __slots__ = ()
    NICHT_IM_JSON = ("wessen_je_grund",)


PROTOKOLL_HINWEISE = {  # what a client sees of each protocol deviation, and which servers have had it
    "argumente_objekt": ("calls whose arguments came as a JSON object, not as a string of JSON",
                         "an OpenAI-API client's json.loads(arguments) fails on each (llama.cpp #20198, SGLang, "
                         "TGI 2.x send them so)"),
    "argumente_doppelt": ("calls whose arguments were encoded twice, a JSON string holding the object's JSON text",
                          "a client's json.loads(arguments) gives a string, not the arguments (llama.cpp #19520)"),
    "aufrufe_verloren": ("outputs with finish_reason tool_calls but no call",
                         "the server's parser lost the calls: a client is told to run calls and finds none "
                         "(SGLang #26790; vLLM #53255)"),
    "geparst_abgelehnt": ("answers the server refused with 500 (\"Failed to parse input\", or \"does not match the "
                          "expected ... format\"): its tool-call parser could not read what the model wrote, graded "
                          "here as the text the error quotes, where it quotes one (else as no answer)",
                          f"an agent receives an error, not an answer; {ABGELEHNT_WARUM} (llama.cpp #23838, #26381)"),
    "id_fehlt": ("calls without an id, or with an id another call of the same answer has",
                 "an agent cannot send their results back, since a tool message names its call by id "
                 "(llama.cpp #11992, LM Studio #830)"),
    "strom_ohne_done": ("streams that ended without data: [DONE]", "a client that waits for it waits until its "
                        "timeout (TGI before 2.2 sent none)"),
    "strom_ohne_usage": ("streams without the usage chunk stream_options asked for", "a client cannot count the "
                         "tokens, nor the diagnosis tell whether the catalogue reached the prompt"),
    "strom_ohne_strom": ("plain answers to a streamed request", "a client that reads the stream finds none"),
    "strom_ohne_index": ("streams with a call delta without index", "a client cannot tell which call a fragment "
                         "belongs to"),
    "strom_name_wechselt": ("streams whose call changed its name midway", "a client runs the first name or the last"),
    "strom_nach_ende": ("streams with fragments after finish_reason", "a client that stops there loses them"),
    "strom_nach_done": ("streams with data after [DONE]", "a client that stops there loses it"),
    "strom_kein_json": ("streams with a chunk that is not JSON", "a client's parser fails on it"),
    "strom_id_wechselt": ("streams whose call deltas changed a call's id", "a client keys the call by the first and "
                          "cannot send its result back under the other"),
    "strom_name_doppelt": ("streams that sent a call's name in two deltas", "a client that appends the deltas, as "
                           "the spec lets it, gets the name twice (get_contactget_contact)"),
    "strom_args_kein_text": ("streams whose call arguments came as JSON values, not as fragments of a string",
                             "a client that joins the fragments fails on them"),
    "strom_denken_anders": ("answers whose reasoning came in the stream or in the same request's plain answer, not "
                            "in both", "the server's reasoning parser streams otherwise than it answers plain: an "
                            "agent that streams sees another answer")}
GEWAEHLTE_GRENZE = {  # the hint where the user capped max_tokens: never "raise it" beside "cap it"
    "abgeschnitten": "under the cap this run chose (max_tokens {grenze}) the model did not finish: that is the model "
                     "at this budget; raise the cap only where a right answer needs more",
    "schleife": "under the cap this run chose (max_tokens {grenze}) the model repeats itself: more tokens only make "
                "it longer; check the chat template, since a wrong one makes small models loop"}
GRENZE_FOLGE = ("A comparison with another run under the same cap counts these outputs as the model's.")
STROM_NOTIZ = ("A note on the stream: it changed what was graded only where strom_defekt counts an output.")
STROM_UNGEPRUEFT = ("failed streamed outputs whose stream's part cannot be told: at a temperature above 0 no plain "
                    "request is asked, since its answer can differ by sampling alone; where one was asked and "
                    "failed, its fault stands in the results file; where the stream asked again gave calls of its "
                    "own, the server answers a repeated prompt otherwise (a prompt cache, several slots). --pruefen "
                    "checks the stream at temperature 0")


def server_wort(s, angabe=None):
    """'llama.cpp b6800 (/v1/models: owned_by llamacpp; chat template 3f2a9c0d1e4b)'; angabe: what the user stated."""
    if s is None:
        return "not identified (its /v1/models names no owner messen knows, and no page of its own told it)" + \
            (f"; stated as {angabe!r} (--server)" if angabe else "")
    vorlage = (s.get("vorlage") or {}).get("sha256")
    return f"{s['name']}{' ' + s['version'] if s['version'] else ''} ({s['beleg']}" + \
        (f"; chat template {vorlage})" if vorlage else ")")


def kennung(s, ohne_vorlage=False):
    """What makes a server the same server: its family, build or version, and chat template (not where the user
    compares each model with its own, --mit-vorlage)."""
    return s and (s["name"], s["version"], None if ohne_vorlage else (s.get("vorlage") or {}).get("sha256"))


def anderer_server(sa, sb):
    """What differs between two runs' servers, and what settles it: only the chat template differing may be what
    a fine-tune ships (--mit-vorlage)."""
    if sa["name"] != sb["name"]:
        return "another server, whose own limits are measured with its model; measure both on one"
    if sa["version"] != sb["version"]:
        was = "build or version" + " and chat template" * (kennung(sa)[2] != kennung(sb)[2])
        return f"another {was}, whose own limits are measured with its model; measure both on one build"
    return ("another chat template, whose rendering is measured with its model; measure both on one, or, where the "
            "fine-tune ships its own template, compare each model with its own: --mit-vorlage")


def vorlage_digest(e):
    """A run's chat template as its server named it (llama.cpp's digest), or None."""
    return ((e.get("server") or {}).get("vorlage") or {}).get("sha256")


def eine_url(url):
    """One server, however its URL is written: loopback by any name, a default port, a trailing slash."""
    t = urlsplit(url or "")
    host = "loopback" if t.hostname in ("localhost", "127.0.0.1", "::1") else t.hostname
    port = t.netloc.rpartition(":")[2] if re.search(r":\d+$", t.netloc) else {"https": "443"}.get(t.scheme, "80")
    return t.scheme, host, port, t.path.rstrip("/")


Diagnosezeile = collections.namedtuple("Diagnosezeile", "name wessen zahl text einheit")
# one line of a diagnosis: its key (a protocol note's as protokoll.KIND), whose it is (a tuple of server, modell,
# unklar), its count ("yes" where it is one), what it means with the fix, and whether it counts outputs or calls


def diagnose_befunde(d, e=None):
    """The diagnosis as its lines, built once: each count's, in DIAGNOSE_HINWEISE's order, then the protocol's notes,
    then the counts whose words depend on the run (the heading, the text, the Markdown rows and the picture's note
    are all read from these). e: the run's settings (the server, and the max_tokens the user chose, under which a
    cut or looping answer is the model's)."""
    e = e or {}
    server, grenze, zeilen = e.get("server"), token_grenze(e), []
    for name, h in DIAGNOSE_HINWEISE.items():
        if not getattr(d, name):
            continue
        was = h.was + (f" ({d.probe})" if name == "aus_text" and d.probe else "")
        wessen = wessen_der_zeile(d, name) if h.wessen is None else h.wessen
        folge = h.folge(d) if callable(h.folge) else h.folge  # leer's depends on the counts
        abhilfe = hinweis(name, server, d.text_form)
        if grenze is not None and name in GEWAEHLTE_GRENZE:
            abhilfe, folge = GEWAEHLTE_GRENZE[name].format(grenze=grenze), GRENZE_FOLGE
        zahl = "yes" if getattr(d, name) is True else getattr(d, name)
        zeilen.append(Diagnosezeile(name, wessen, zahl, f"{was}; {abhilfe}. {folge}", "outputs"))
    # as WESSEN and NICHT_NATIV weigh the answers they stand in: refused and lost calls cannot be told
    unklar = {"geparst_abgelehnt", "aufrufe_verloren"} | (set() if familie_von(server).doppelt_kodiert else
                                                         {"argumente_doppelt"})
    zeilen += [Diagnosezeile(f"protokoll.{art}", ("unklar" if art in unklar else "server",), zahl,  # as NICHT_NATIV
                             f"{PROTOKOLL_HINWEISE[art][0]}; {protokoll_hinweis(art, server)}. "
                             f"{STROM_NOTIZ if art in STROM_NOTIZEN.values() else NACH_DEM_GEMEINTEN}", "outputs")
               for art, zahl in d.protokoll.items()]
    return zeilen + laufzeilen(d, server, e.get("probe"))


def laufzeilen(d, server, probe):
    """The diagnosis's lines whose words depend on the run's evidence, each built only where it counts something."""
    versuch, zeilen = VERSUCH in d.unlesbar, []
    if d.strom_ungeprueft:
        zeilen.append(Diagnosezeile("strom_ungeprueft", wessen_der_zeile(d, "strom_ungeprueft"), d.strom_ungeprueft,
                                    f"{STROM_UNGEPRUEFT}.", "outputs"))
    if d.text_ungeklaert:
        zeilen.append(Diagnosezeile("text_ungeklaert", ("unklar",), d.text_ungeklaert,
                                    f"{ungeklaert_text(d.probe, server, d.text_form)}.", "calls"))
    if d.sofort_beendet:
        zeilen.append(Diagnosezeile("sofort_beendet", wessen_der_zeile(d, "sofort_beendet"), d.sofort_beendet,
                                    f"{SOFORT_BEENDET}.", "outputs"))
    if d.eigenes_format:
        zeilen.append(Diagnosezeile("eigenes_format", ("modell",), d.eigenes_format,
                                    f"{EIGENES_FORMAT}{eigen_beleg(d, server, probe)}.", "outputs"))
    for feld, namen in d.gemischt.items():
        zeilen.append(Diagnosezeile(f"gemischt.{feld}", ("server",), sum(namen.values()), (
            f"answers that name {len(namen)} {WER_WORT[feld]}s ({namen_text(namen)}): a router or a pool answered "
            f"the run with several, or one was restarted during it; its outputs mix them, so no comparison holds "
            f"them to one {WER_WORT[feld]}; measure it anew (--neu) where one {WER_WORT[feld]} answers."), "outputs"))
    if d.unlesbar:
        zeilen.append(Diagnosezeile("unlesbar", ("modell",) * bool(set(d.unlesbar) - {VERSUCH}) + ("unklar",) * versuch,
                                    sum(d.unlesbar.values()), unlesbar_text(d.unlesbar),
                                    "calls" if versuch else "outputs"))
    return zeilen


def wessen_der_zeile(d, grund):
    """Whose a diagnosis line of a reason of WESSEN is: the owners WESSEN gave the answers it counts."""
    return tuple(art for art in WESSEN_ARTEN if d.wessen_je_grund.get(grund, {}).get(art))


def diagnose_zeilen(d, e=None):
    """The diagnosis block: its heading, then each of its lines (diagnose_befunde); one line when all is clear."""
    zeilen = diagnose_befunde(d, e)
    if not zeilen:
        unbekannt = f"; whether the catalogue reached the prompt cannot be told: {d.katalog_unklar}" \
            if d.katalog_fehlt is None else ""
        return [f"Diagnosis: all clear (every output an answer, calls from tool_calls{unbekannt})."]
    return [diagnose_kopf(zeilen)] + [f"  {b.name.replace('.', ' '):<14} {b.zahl}: {b.text}" for b in zeilen]


def unlesbar_text(unlesbar):
    formen = ", ".join(f"{form} {zahl}" for form, zahl in unlesbar.items())
    wessen_ = (" Those written as functions.NAME: with nothing after it are the model's, or a handler's that "
               "lost the arguments: that cannot be told here." if VERSUCH in unlesbar else "")
    return (f"calls whose arguments do not parse, by the form they were written in: {formen}; the failed list shows "
            "what was written. The model wrote them: train or prompt it on its template's call format." + wessen_)


VERSUCH = "functions.NAME: with nothing after it"


def diagnose_kopf(zeilen):
    """The diagnosis's heading, naming every kind its lines are of (whose each is), so that none contradicts it."""
    arten = [w for art, w in (("server", "what the server did"), ("modell", "what the model did"),
                              ("unklar", "what cannot be told")) if any(art in b.wessen for b in zeilen)]
    was = "calls" if any("unklar" in b.wessen and b.einheit == "calls" for b in zeilen) else "outputs"
    if len(arten) > 1:
        return f"Diagnosis: {', '.join(arten[:-1])} and {arten[-1]}"
    return {"what the server did": "Diagnosis: what the server did, not the model",
            "what the model did": "Diagnosis: the server did its part; the model did not",
            "what cannot be told": f"Diagnosis: whose some {was} are cannot be told"}.get(
        arten[0] if arten else None, "Diagnosis: nothing blamed on the server; a note")


def protokoll_hinweis(art, server):
    """What a client sees of a protocol deviation, and whose it is: arguments encoded twice are the
    server's only on one known to do so (llama.cpp #19520); elsewhere a model that writes its
    arguments as a JSON string inside its call text arrives so too (vLLM's Hermes parser passes it on)."""
    if art == "argumente_doppelt" and not familie_von(server).doppelt_kodiert:
        return ("a client's json.loads(arguments) gives a string, not the arguments; whose that is cannot be told: "
                "the model may have written its arguments as a JSON string inside its call, or the server encoded "
                "them twice")
    return PROTOKOLL_HINWEISE[art][1]


def hinweis(name, server, form=None):
    """The fix of a diagnosis key, in the identified server's own options."""
    text = DIAGNOSE_HINWEISE[name].abhilfe
    for platz in ("vorlage", "denken", "parser"):  # subtle: not str.format: the hints quote JSON's braces
        text = text.replace(f"{{{platz}}}", abhilfe(platz, server, form)) if f"{{{platz}}}" in text else text
    return text


def ungeklaert_text(probe, server, form):
    """Text calls in a parser's form whose owner nothing settles: both readings, each fix in the server's words."""
    return (f"calls were read from the answer text ({form or 'a form a tool-call parser reads'}), never from "
            f"tool_calls, and whose that is cannot be told ({probe}): either the server does not read this form "
            f"(set {abhilfe('parser', server, form)}), or the model writes a form its template's parser does not "
            "read (train or prompt it on its template's form)" +
            ("; --pruefen asks again" if familie_von(server).probe == "frei" else ""))


def eigen_beleg(d, server, probe):
    """Why calls left as text are the model's: what shows the parser on (TEXT_WESSEN's evidence), and the form
    the template asks for."""
    form = f"; it wrote {d.text_form}" if d.text_form else ""
    grund = text_wessen(False, server, probe)[1]
    if grund == "vorlage":
        gefragt = f", which asks for {server['vorlage']['form']}" if server["vorlage"]["form"] else ""
        return f" ({server['name']}'s /props: its chat template renders the tools{gefragt}{form})"
    if grund == "probe_nativ":
        return f" ({beleg_text(grund, server, probe)}: the server's parser works for this template{form})"
    return f" ({form[2:]})" if form else ""

# ---------------------------------------------------------------------------
# Comparison of saved runs and the verdict: --vergleich A B [C ...]
# ---------------------------------------------------------------------------


def erfolge_je_fall(faelle, ausgaben):
    """id -> (successes, outputs), in case order, for the cases that have outputs."""
    je_fall = {f.id: [0, 0] for f in faelle}
    for a in ausgaben:
        je_fall[a.id][0] += gelungen(a.note)
        je_fall[a.id][1] += 1
    return {i: tuple(v) for i, v in je_fall.items() if v[1]}


def vorzeichentest(b, c):
    """Exact two-sided sign test (McNemar's exact test on the flipped cases):
    p = min(1, 2 * sum_{i=0}^{min(b,c)} C(b+c, i) / 2^(b+c)); p = 1 when nothing flipped."""
    m = b + c
    return 1.0 if m == 0 else min(1.0, 2 * sum(math.comb(m, i) for i in range(min(b, c) + 1)) / 2 ** m)


def permutationstest(differenzen):
    """Exact two-sided paired permutation test of per-case differences d_i (fractions). Under no difference each
    d_i is as likely +|d_i| as -|d_i|, so p = #{signs e: |sum e_i |d_i|| >= |sum d_i|} / 2^m over the m cases with
    d_i != 0. The d_i are made integers on their common grid and the sums counted by dynamic programming, so the
    test is exact; with one output per case it is the sign test."""
    d = [x for x in differenzen if x]
    if not d:
        return 1.0
    skala = math.lcm(*(x.denominator for x in d))
    ganz = [abs(int(x * skala)) for x in d]
    verteilung = {0: 1}  # sum -> number of sign patterns giving it
    for g in ganz:
        neu = collections.Counter()
        for summe, zahl in verteilung.items():
            neu[summe + g] += zahl
            neu[summe - g] += zahl
        verteilung = neu
    t = abs(int(sum(d) * skala))
    return min(1.0, sum(z for summe, z in verteilung.items() if abs(summe) >= t) / 2 ** len(ganz))


GENAU_HOECHSTENS = 5_000_000  # sums times cases the exact count may walk; beyond it, a seeded Monte Carlo
MONTE_CARLO = 20_000  # sign patterns drawn


def genau_machbar(differenzen):
    """Can the exact permutation test count every sum in time (hand-merged runs with many
    different per-case counts make the common grid fine and the sums many)?"""
    d = [x for x in differenzen if x]
    if not d:
        return True
    skala = math.lcm(*(x.denominator for x in d))
    summen = min(2 ** len(d), 2 * sum(abs(int(x * skala)) for x in d) + 1)
    return summen * len(d) <= GENAU_HOECHSTENS


def permutationstest_mc(differenzen, runden=MONTE_CARLO):
    """The permutation test by drawing sign patterns (random.Random(0)):
    p = (1 + #{draws: |sum e_i |d_i|| >= |sum d_i|}) / (1 + runden), never 0."""
    d = [abs(float(x)) for x in differenzen if x]
    t = abs(float(sum(differenzen))) - 1e-9  # subtle: float sums of equal patterns may differ in the last bit
    zufall = random.Random(0)
    extrem = sum(abs(sum(x if zufall.random() < 0.5 else -x for x in d)) >= t for _ in range(runden))
    return (1 + extrem) / (1 + runden)


NIVEAU = 0.05  # the one level a comparison reads every test at: beyond chance is p below it
NIVEAU_WORT = f"{NIVEAU * 100:g} %"


def jenseits_zufall(p):
    return p < NIVEAU


GRUPPEN = {"aufrufen": "calling", "stillhalten": "holding still"}  # judged apart: one cannot pay for the other
TEILE = ("gesamt",) + tuple(GRUPPEN)


def gruppe(stufe):
    return "stillhalten" if stufe in STILL else "aufrufen"


class Gemessen(typing.NamedTuple):
    """One saved run as a comparison takes it: its settings, figures, cases and outputs, and what it did in each
    case, one line (was_geschah)."""
    einstellungen: dict
    kennzahlen: Kennzahlen
    faelle: list
    ausgaben: list
    was: dict = None

    @property
    def tag(self):
        return self.einstellungen["tag"]


class Test(typing.NamedTuple):
    """One paired test: the cases better and worse in B, its p, which test, the cases compared, the mean per-case
    change and its direction; for a group, p Holm-corrected; the verdict read at NIVEAU (urteil_von)."""
    besser: list
    schlechter: list
    p: float
    test: str
    faelle: int
    aenderung: float
    richtung: str  # besser, schlechter, gleich: the summed per-case differences, never a count of cases
    p_holm: float = None
    urteil: str = None  # besser, schlechter, offen

    @property
    def p_urteil(self):
        """The p its verdict is read at: Holm's for a group, its own over all cases."""
        return self.p if self.p_holm is None else self.p_holm

    @property
    def geflippt(self):
        return len(self.besser) + len(self.schlechter)


class Teil(typing.NamedTuple):
    """A part of the verdict (over all cases, calling, holding still, what an agent gets done), taken twice: with
    every output that is no evidence on the model counted for B, and against B; urteil is what both say (robust)."""
    urteil: str  # besser, schlechter, offen; unklar where the two differ
    fuer_b: Test
    gegen_b: Test
    gruende: tuple = ()  # why outputs counted both ways are no evidence (the cannot-tell reasons), where named

    @property
    def p(self):
        return max(self.fuer_b.p_urteil, self.gegen_b.p_urteil)

    @property
    def beide_gleich(self):
        return (self.fuer_b.besser, self.fuer_b.schlechter) == (self.gegen_b.besser, self.gegen_b.schlechter)


Flip = collections.namedtuple("Flip", "art gruende in_ zug ziehungen")  # whose a flipped case is (modell, server,
# unklar), its reasons, the runs whose outputs they are (A, B: the JSON's "in"), the turn that failed (2: S5's), and
# with several draws in a run, which: "B #2 of 3"


def vergleich_gesamt(self):
    return self.modell[TEILE[0]]


class Vergleich(collections.namedtuple("Vergleich", (
        "a b besser schlechter p test aufloesung faelle_verglichen aenderung jenseits_zufall richtung wessen "
        "serverseitig unklar modell grenze gruppen_stufen nicht_vergleichbar "
        "mit_weiter mit_ganz "  # a later stage's: its cases are in the test (a field per row with a flag)
        "mit_kapitel mit_nachfrage differenz gegenlauf nativ bfcl rueck ergebnis gleich mit_vorlage"),
        defaults=(None,) * 3 + ((), None, None, None))):
    """A comparison of two runs, made once by vergleiche: the test as the outputs stand, each part's both ways, the
    flips and whose, what makes the runs not comparable, the end (ergebnis) with its exit status; all read it.
    aufloesung: (cases, p), the least the test can call beyond chance, or None; wessen: id -> Flip; modell: part
    (TEILE) -> Teil; grenze: the token limit both runs were asked with, or None; mit_weiter, mit_ganz and
    mit_nachfrage: S6's cases, S7's, S5's second turns are in the test; differenz: figure -> B minus A; nativ (a
    Teil): gelungen_nativ paired, where text calls changed what an agent gets done; bfcl (a Test): BFCL's verdict
    paired, for BFCL runs; rueck: kinds that moved the other way in either count; gegenlauf: a Gegenlauf or None;
    gleich: at temperature 0, (answers the same to the letter, call ids aside, answers both runs have), else None;
    mit_vorlage: (A's chat template, B's) where each model was compared with its own (--mit-vorlage), else None."""
    __slots__ = ()

    @property
    def teile(self):
        """Every part a verdict folds over, by the rows of TEILARTEN: the model's three, and what an agent gets done
        where it was tested."""
        return {r.name: t for r in TEILARTEN for t in [r.nimm(self)] if t is not None}

    gesamt = property(vergleich_gesamt)  # the part over all cases

    @property
    def status(self):
        """--streng's exit status: 2 or 3 by STRENG, else 0."""
        return STRENG.get(self.ergebnis, 0)


def vergleiche(a, b, mit_vorlage=False):
    """The paired test of two runs (Gemessen) as their outputs stand (every draw), then the verdict on the model:
    taken twice, every output that is no evidence on the model (the server's, cannot tell) counted for B and
    against B, over all cases and, Holm-corrected, calling and holding still apart; only what both say stands."""
    ea, ka, eb, kb = a.einstellungen, a.kennzahlen, b.einstellungen, b.kennzahlen
    nachfrage = bool(ea.get("nachfrage") and eb.get("nachfrage"))
    xa, xb = (ausgaenge_je_fall(r.faelle, r.ausgaben, nachfrage, temp=r.einstellungen.get("temp")) for r in (a, b))
    gemeinsam = [i for i in xa if i in xb]  # an incomplete run: only cases both have answered are compared
    einzeln = all(len(xa[i]) == len(xb[i]) == 1 for i in gemeinsam)
    stufe = {f.id: f.stufe for f in a.faelle}
    # a case that failed only after the user's reply (S5's second turn) failed in calling, not in holding still
    art = {i: "aufrufen" if (fehl := [o for o in xa[i] + xb[i] if o is not None]) and all(o[2] == 2 for o in fehl)
           else gruppe(stufe[i]) for i in gemeinsam}
    stand = {i: differenz_je_fall(xa[i], xb[i]) for i in gemeinsam}
    alle = paartest(stand, einzeln)
    fuer, gegen = ({i: differenz_je_fall(xa[i], xb[i], s) for i in gemeinsam} for s in ("fuer_b", "gegen_b"))
    wer = {i: wessen_flip(xa[i], xb[i], fuer[i], gegen[i]) for i in gemeinsam
           if stand[i] or vorzeichen(fuer[i]) != vorzeichen(gegen[i])}
    server = [i for i in wer if wer[i].art == "server"]
    fuer, gegen = (modelltests(d, art, einzeln) for d in (fuer, gegen))  # part (TEILE) -> its Test, each way
    teile = {t: Teil(robust(fuer[t], gegen[t]), fuer[t], gegen[t]) for t in TEILE}
    v = Vergleich(a=ea["tag"], b=eb["tag"], besser=alle.besser, schlechter=alle.schlechter, p=alle.p, test=alle.test,
        aufloesung=TESTS[alle.test].aufloesung(alle.faelle), faelle_verglichen=alle.faelle,
        aenderung=alle.aenderung,
        jenseits_zufall=jenseits_zufall(alle.p), richtung=alle.richtung,
        wessen=wer, serverseitig=server, unklar=[i for i in wer if wer[i].art == "unklar"],
        modell=teile, grenze=token_grenze(ea), gruppen_stufen={g: ", ".join(filter(None, [
            stufen_kurz(sorted({stufe[i] for i in gemeinsam if art[i] == g == gruppe(stufe[i])})),
            "S5's second turns" * any(art[i] == g != gruppe(stufe[i]) for i in gemeinsam)])) for g in GRUPPEN},
        nicht_vergleichbar=nicht_vergleichbar(ea, ka, a.ausgaben, eb, kb, b.ausgaben, gemeinsam, mit_vorlage),
        mit_vorlage=tuple(vorlage_digest(e) for e in (ea, eb)) if mit_vorlage else None,
        **{f"mit_{s.feld}": None not in (getattr(ka, s.figuren[0].name), getattr(kb, s.figuren[0].name))
           for s in STUFEN_TABELLE if s.feld},  # mit_weiter, mit_ganz: a later stage's cases are in the test
        mit_kapitel=ka.auftraege_gelungen is not None and kb.auftraege_gelungen is not None, mit_nachfrage=nachfrage,
        differenz={m: None if None in (x, y) else y - x for m in (f.name for f in figuren(ka, kb))
                   for x, y in [(getattr(ka, m), getattr(kb, m))]},
        gegenlauf=gegenlauf(a, b), nativ=nativ_test(a, b, nachfrage, gemeinsam, einzeln),
        bfcl=bfcl_test(a.ausgaben, b.ausgaben, gemeinsam, einzeln),
        # a kind that moved the other way (in either count): a gain in one kind never reads as "better" alone
        rueck=[g for g in GRUPPEN if "schlechter" in (teile[g].fuer_b.richtung, teile[g].gegen_b.richtung)],
        gleich=gleiche_antworten(a.ausgaben, b.ausgaben) if ea.get("temp") == 0 else None)
    return v._replace(ergebnis=ergebnis(v))


def gleiche_antworten(aa, ab):
    """(answers the same to the letter but for call ids, answers both runs have), each output as it stands."""
    xa, xb = abdruecke(aa), abdruecke(ab)
    beide = [k for k in xa if k in xb]
    return sum(xa[k][0] == xb[k][0] for k in beide), len(beide)


def vorlage_satz(v):
    """With --mit-vorlage, what was compared: each model with its own chat template, the change named."""
    if not v.mit_vorlage:
        return ""
    ta, tb = v.mit_vorlage
    was = (f"{v.a} on chat template {ta}, {v.b} on {tb}" if ta != tb else f"one chat template in both ({ta})") \
        if ta and tb else "neither server named its chat template, so the change cannot be shown"
    return f"\nCompared as model and chat template (--mit-vorlage): {was}; every other setting is the same."


def gleich_satz(v):
    """At temperature 0, what answers the same to the letter prove: nothing either way (one model answers so, and a
    cache would too); said where every one is, never a reason to stop."""
    if not v.gleich or v.gleich[0] < v.gleich[1] or v.nicht_vergleichbar:
        return ""
    return (f"\nAll {v.gleich[1]} answers of {v.b} are {v.a}'s to the letter (call ids aside): at "
            "temperature 0 one model answers so, and a response cache would too; that is no evidence either way "
            "(at --temp 0.7 a replay shows, long answers equal to the letter).")


# The calls as meant and the calls an agent gets moved different ways from A to B: the two figures' names, each
# run's (meant, native) values, and the calls each run's server sent in tool_calls over all its answers.
Gegenlauf = collections.namedtuple("Gegenlauf", "gemeint nativ a b aufrufe")


def gegenlauf(a, b):
    """The first headline both runs measured (the chapter's, S7's in runs of S7 alone) where its two figures
    moved different ways; else None."""
    for gemeint, nativ in ((f.name, f.nativ) for f in KOPF_FIGUREN):
        (x, xn), (y, yn) = werte = [(getattr(r.kennzahlen, gemeint), getattr(r.kennzahlen, nativ)) for r in (a, b)]
        if None not in (x, xn, y, yn):
            return Gegenlauf(gemeint, nativ, *werte, tuple(sum(n.nativ for o in r.ausgaben for n in antworten(o))
                                                           for r in (a, b))) \
                if vorzeichen(y - x) * vorzeichen(yn - xn) < 0 else None
    return None


def stufen_kurz(stufen):
    """['S1', 'S2', 'S3', 'S6'] -> 'S1-S3, S6'; a stage not numbered (BFCL's categories) stands alone."""
    laeufe = []
    def nummer(s):
        return int(s[1:]) if re.fullmatch(r"S\d+", s) else None
    for s in stufen:
        if laeufe and nummer(s) is not None and nummer(laeufe[-1][-1]) == nummer(s) - 1:
            laeufe[-1].append(s)
        else:
            laeufe.append([s])
    return ", ".join(f"{x[0]}-{x[-1]}" if len(x) > 2 else ", ".join(x) for x in laeufe)


def differenz_je_fall(xa, xb, szenario=None):
    """B's success rate in a case minus A's (a Fraction), from each run's outputs (see ausgaenge_je_fall).
    szenario None: the outputs as they stand. 'fuer_b' / 'gegen_b': an output that is no evidence on the
    model, the server's or cannot-tell, counts as a success in B / in A and as a failure in the other: only
    the model's own outputs are evidence, so a verdict stands only where both ways agree."""
    sa = erfolge(xa, szenario == "gegen_b")
    sb = erfolge(xb, szenario == "fuer_b")
    return fractions.Fraction(sb, len(xb)) - fractions.Fraction(sa, len(xa))


def erfolge(x, ohne_beleg_gelingt=False):
    return sum(o is None or ohne_beleg_gelingt and o[0] != "modell" for o in x)


def vorzeichen(d):
    return None if d is None else (d > 0) - (d < 0)


def wessen_flip(xa, xb, fuer, gegen):
    """Whose a flip (or a case that could flip) is: where the outputs that are no evidence on the model decide
    its direction (counted for B and against B, it differs), the server's where it spoiled one, else cannot
    tell; else the model's (a Flip)."""
    offen = fuer != gegen  # with --n, outputs that change a case's size decide too, not only those that turn it
    art = "modell" if not offen else "server" if any(o and o[0] == "server" for o in xa + xb) else "unklar"
    fehl = [o for o in xa + xb if o is not None and o[0] == art]
    return Flip(art, list(dict.fromkeys(o[1] for o in fehl if o[1])),
                [lauf for lauf, x in (("A", xa), ("B", xb)) if any(o is not None and o[0] == art for o in x)],
                max((o[2] for o in fehl), default=1), [f"{lauf} #{k} of {len(x)}" for lauf, x in (("A", xa), ("B", xb))
                                                       if len(x) > 1 for k, o in enumerate(x, 1) if o and o[0] == art])


def modelltests(d, art, einzeln):
    """The model's test over all cases compared and over each group of GRUPPEN (art: each case's),
    Holm-corrected for the groups that have cases (p_holm), each with its verdict."""
    tests = {"gesamt": paartest(d, einzeln)}
    tests.update({g: paartest({i: x for i, x in d.items() if art[i] == g}, einzeln) for g in GRUPPEN})
    mit = sorted((tests[g].p, g) for g in GRUPPEN if tests[g].faelle)
    holm, schranke = {g: 1.0 for g in GRUPPEN}, 0.0
    for rang, (p, g) in enumerate(mit):  # Holm: the k-th smallest p times (m - k + 1), never below the one before
        schranke = max(schranke, min(1.0, p * (len(mit) - rang)))
        holm[g] = schranke
    tests.update({g: tests[g]._replace(p_holm=holm[g]) for g in GRUPPEN})
    return {t: urteil_von(x) for t, x in tests.items()}


def urteil_von(t):
    """A test with its verdict, read at NIVEAU on the p it is read at: its direction, else offen."""
    return t._replace(urteil=t.richtung if jenseits_zufall(t.p_urteil) else "offen")


def robust(fuer, gegen):
    """What both ways of counting the cannot-tell outputs say: besser, schlechter, offen; else unklar."""
    return fuer.urteil if fuer.urteil == gegen.urteil else "unklar"


def ergebnis(v):
    """The comparison's end, folded over its parts: nicht_vergleichbar, schlechter (in any part, beyond chance
    both ways), unklar (worse one way only), besser, or offen."""
    if v.nicht_vergleichbar:
        return "nicht_vergleichbar"
    if any(t.urteil == "schlechter" for t in v.teile.values()):
        return "schlechter"
    if any(x.urteil == "schlechter" for t in v.teile.values() for x in (t.fuer_b, t.gegen_b)):
        return "unklar"
    return "besser" if v.gesamt.urteil == "besser" and not v.rueck else "offen"


STRENG = {"nicht_vergleichbar": 2, "schlechter": 3, "unklar": 2}  # --streng's exit; else 0


def paartest_rand(k):
    return vorzeichentest(k, 0)


class Paartest(typing.NamedTuple):
    """A paired test a comparison may take: its name in the resolution sentence and in the verdict, p from the
    per-case differences d, whether it takes them (einzeln: one output per case in both runs; the first row that
    takes them is the test), and what its resolution counts, with the p of k of them one way and none back."""
    wort: str
    satz: str
    p: typing.Callable
    nimmt: typing.Callable
    ganz: str = "cases whose every output flips"
    rand: typing.Callable = paartest_rand  # k cases whose every output flips give 2 / 2^k in each

    def aufloesung(self, faelle):
        """The fewest cases one way, none back, it calls beyond chance, and their p; None if none can."""
        return next(((k, self.rand(k)) for k in range(1, faelle + 1) if jenseits_zufall(self.rand(k))), None)


def sign_p(d):
    return (vorzeichentest(sum(x > 0 for x in d), sum(
        x < 0 for x in d)))


def nimmt_einzeln(einzeln, d):
    return einzeln


def nimmt_genau(einzeln, d):
    return genau_machbar(d)


def nimmt_immer(einzeln, d):
    return True


TESTS = {"sign": Paartest("sign test", "exact sign test", sign_p, nimmt_einzeln,  # the flipped cases, one output each
                          "cases"),
         "permutation": Paartest("permutation test", "exact permutation test of the per-case differences",
                                 permutationstest, nimmt_genau),  # gains power from repeats
         "monte-carlo": Paartest("permutation test", f"permutation test of the per-case differences, over "
                                 f"{MONTE_CARLO:,} sign patterns drawn with seed 0 (too many sums to count exactly)",
                                 permutationstest_mc, nimmt_immer)}


def paartest(differenzen, einzeln):
    """The paired test of per-case differences (None: left out): the first of TESTS that takes them."""
    d = {i: x for i, x in differenzen.items() if x is not None}
    besser = [i for i in d if d[i] > 0]  # ids better in B, worse in B
    schlechter = [i for i in d if d[i] < 0]
    test = next(n for n, t in TESTS.items() if t.nimmt(einzeln, list(d.values())))
    p = TESTS[test].p(list(d.values()))
    aenderung = float(sum(d.values()) / len(d)) if d else 0.0
    return Test(besser, schlechter, p, test, len(d), aenderung,
                "besser" if aenderung > 0 else "schlechter" if aenderung < 0 else "gleich")


def token_grenze(e):
    """The completion-token limit a run was asked with, or None (the server's own, or none: -1 is llama-server's and
    Ollama's "no limit"). A value of another type, saved before --extra refused it, is no limit messen can count."""
    extra = e.get("extra") or {}
    x = next((extra[f] for f in TOKEN_GRENZEN if f in extra), None)
    return x if type(x) is int and x > 0 else None


TOKEN_GRENZEN = ("max_tokens", "max_completion_tokens")  # what --extra may cap an answer's tokens by


PROMPT_FAKTOR = 2  # the same cases' prompts cost this many times more in one run: not the same prompt
# subtle: two tokenizers count one text within some tens of per cent of each other; the eleven tools
# alone are about a thousand tokens, three times a case without them


def nicht_vergleichbar(ea, ka, aa, eb, kb, ab, gemeinsam, mit_vorlage=False):
    """Why two runs measure something else than their models, or None: no case in common, a setting
    asked differently (temperature, stream, any --extra), the catalogue that reached one prompt only
    (katalog_fehlt, or the prompt tokens of the cases both share), a tool-call parser off in one only."""
    if not gemeinsam:
        return "the runs have no case in common"
    for feld in ("temp", "stream"):
        if ea.get(feld, False) != eb.get(feld, False):
            return f"{feld} {json.dumps(ea.get(feld, False))} in {ea['tag']}, {json.dumps(eb.get(feld, False))} " \
                   f"in {eb['tag']}: measure both with the same"
    anders = [f for f in dict.fromkeys([*ea["extra"], *eb["extra"]])
              if ea["extra"].get(f, ...) != eb["extra"].get(f, ...)]
    if anders:
        def wert(e, f):
            return json.dumps(e["extra"][f]) if f in e["extra"] else "unset"
        return "--extra differs (" + ", ".join(f"{f} {wert(ea, f)} in {ea['tag']}, {wert(eb, f)} in {eb['tag']}"
                                               for f in anders) + "): measure both with the same" + \
            ("; parallel_tool_calls false makes S3 measure that setting" if "parallel_tool_calls" in anders else "")
    sa, sb = ea.get("server"), eb.get("server")
    for e in (ea, eb):
        if e.get("server_danach"):
            return f"the server of {e['tag']} changed during the run: {server_wort(e['server'])} at its start, " \
                   f"{server_wort(e['server_danach'])} at its end; measure it anew (--neu) on one"
    if sa and sb and kennung(sa, mit_vorlage) != kennung(sb, mit_vorlage):  # llama-server, say, reads no
        # parallel_tool_calls as false; with --mit-vorlage the template is part of what is compared
        return f"{ea['tag']} was served by {server_wort(sa)}, {eb['tag']} by {server_wort(sb)}: " + \
            anderer_server(sa, sb)
    angabe = [e.get("server_angabe") for e in (ea, eb)]
    if not (sa and sb) and eine_url(ea.get("url")) != eine_url(eb.get("url")) and \
            (sa or sb or None in angabe or angabe[0] != angabe[1]):
        wer = " and ".join(e["tag"] for e, s in ((ea, sa), (eb, sb)) if not s)
        return f"{ea['tag']} was measured at {ea.get('url')}, {eb['tag']} at {eb.get('url')}, and the server of " \
               f"{wer} was not identified: whether both are one server cannot be told; measure both on one " \
               "identified server, or at one URL, or state the one behind both with --server"
    kopie = nicht_gefragt(ea, aa, eb, ab) or anders_beantwortet(ea, aa, eb, ab)
    if kopie:
        return kopie
    for e, k, anderer in ((ea, ka, kb), (eb, kb, ka)):
        if k.diagnose.katalog_fehlt is True and anderer.diagnose.katalog_fehlt is not True:
            return f"the catalogue never reached the prompt in {e['tag']} (katalog_fehlt), in the other run it did"
        if k.diagnose.aus_text and not anderer.diagnose.aus_text:
            return f"the server's tool-call parser was off in {e['tag']} (aus_text), in the other run it was on"
    return prompt_anders(ea, aa, eb, ab, gemeinsam)


def nicht_gefragt(ea, aa, eb, ab):
    """Why one run's model was not asked, or None: one run compared with itself; answers identical to the other
    run's, messages and drawn tool-call ids alike (a response cache keyed on the messages, not on the model); at a
    temperature above 0, long answers identical to the letter whatever their ids (a cache that draws new ids). The
    later of the two runs holds the copies."""
    eins = ein_lauf(ea, aa, eb, ab)
    if eins:
        return eins
    xa, xb = abdruecke(aa), abdruecke(ab)
    gleich = [k for k in xa if k in xb and xa[k][0] == xb[k][0]]  # in case order
    gezogen_ = gezogene_ids(aa) & gezogene_ids(ab)
    mit_ids = list(dict.fromkeys(k[0] for k in gleich if xa[k][1] and xa[k][1] == xb[k][1]
                                 and set(xa[k][1]) <= gezogen_))
    (alt, _), (neu, _) = sorted([(ea, aa), (eb, ab)], key=lambda x: max(a.ende for a in x[1]))
    if mit_ids:
        return f"{neu['tag']}'s model was not asked: the answers to {mal(len(mit_ids), 'case')} ({einige(mit_ids)}) " \
               f"are {alt['tag']}'s, tool-call ids included, as a response cache that keys on the messages and not " \
               f"on the model gives them; measure {neu['tag']} again with that cache off (--neu)"
    lang = [k for k in xa if k in xb and min(xa[k][2], xb[k][2]) >= WIEDERGABE_ZEICHEN]
    wieder = list(dict.fromkeys(k[0] for k in lang if xa[k][0] == xb[k][0]))
    if ea.get("temp", 0) > 0 and len(wieder) >= WIEDERGABE_MINDESTENS and len(wieder) >= WIEDERGABE_ANTEIL * len(
            dict.fromkeys(k[0] for k in lang)):
        return f"{neu['tag']}'s model was not asked: at temperature {ea['temp']:g}, where a model draws each answer " \
               f"afresh, its answers to {mal(len(wieder), 'case')} ({einige(wieder)}) equal {alt['tag']}'s to the " \
               f"letter, each of {WIEDERGABE_ZEICHEN} characters or more: a replay (a response cache), whatever " \
               f"their tool-call ids; measure {neu['tag']} again with that cache off (--neu)"
    return None


def anders_beantwortet(ea, aa, eb, ab):
    """Why the runs' answers were not the asked models', by what they name, or None: a run whose answers name two
    models or builds (a router, a pool); answers of B, which asked for another model than A, under the name A asked
    for and was answered by; a run answered under another name than it asked for, where the other run's answers name
    the model it asked for (so the server names what answers). One name in both runs whatever is asked (a single-model
    server's alias, TGI's model id) is no evidence."""
    for e, aus in ((ea, aa), (eb, ab)):
        mehrere = gemischt(aus)
        if mehrere:  # the first of modell and build its answers name several of
            feld, namen = next(iter(mehrere.items()))
            return f"{e['tag']}'s answers name {len(namen)} {WER_WORT[feld]}s ({namen_text(namen)}): a router or a " \
                   f"pool answered it with several; measure {e['tag']} anew (--neu) where one {WER_WORT[feld]} answers"
    (na, ga), (nb, gb) = ((einziger(genannt_je(aus, "modell")), e.get("modell")) for e, aus in ((ea, aa), (eb, ab)))
    if None in (na, nb) or ein_name(ga, gb):
        return None
    nennt = [e for e, n, g in ((ea, na, ga), (eb, nb, gb)) if ein_name(n, g)]  # runs answered as asked
    if len(nennt) != 1:
        return None  # both as asked, or neither: a constant name, or the names of the files two servers loaded
    x, (y, ny) = nennt[0], next((e, n) for e, n in ((ea, na), (eb, nb)) if e is not nennt[0])
    wie = f"the model {x['tag']} asked for: a router answered {y['tag']} with {x['tag']}'s model" if ein_name(na, nb) \
        else f"not {json.dumps(y.get('modell'))}, where {x['tag']}'s answers name the model it asked for: another " \
             f"model answered {y['tag']}"
    return f"{y['tag']} asked for {json.dumps(y.get('modell'))}, but its answers name {json.dumps(ny)}, {wie}; " \
           f"send {y['tag']}'s requests to its model and measure it anew (--neu)"


WER_WORT = {"modell": "model", "build": "build"}


def noten_von(aus):
    """Every answer of a run's outputs graded, every draw's."""
    return (b for a in aus for x in (a,) + a.frueher for b in antworten(x))


def genannt_je(aus, feld):
    """What a run's answers name as feld of wer (modell, build), with how many answers name it."""
    return collections.Counter(b.wer[feld] for b in noten_von(aus) if feld in (b.wer or {}))


def gemischt(aus):
    """{feld: {name: answers}} for each of modell and build that a run's answers name two or more of; {} else."""
    return {feld: dict(n.most_common()) for feld in WER_FELDER.values() for n in [genannt_je(aus, feld)] if len(n) > 1}


def einziger(zahl):
    return next(iter(zahl)) if len(zahl) == 1 else None


def ein_name(x, y):
    """Do two model names name one model, as servers write it: case, an owner or path before the last '/', Ollama's
    ':latest' and a file's '.gguf' aside."""
    def kern(n):
        n = str(n).strip().lower().rsplit("/", 1)[-1]
        return n.removesuffix(":latest").removesuffix(".gguf")
    return None not in (x, y) and kern(x) == kern(y)


def namen_text(namen):
    return ", ".join(f"{json.dumps(n, ensure_ascii=False)} in {zahl}" for n, zahl in list(namen.items())[:4]) + \
        (f" and {len(namen) - 4} more" if len(namen) > 4 else "")


WIEDERGABE_ZEICHEN = 200  # an answer this long, the same to the letter in two runs at a temperature above 0, was
WIEDERGABE_MINDESTENS = 5  # replayed where at least this many cases, and WIEDERGABE_ANTEIL of those with answers
WIEDERGABE_ANTEIL = 3 / 4  # this long in both runs, are so: a peaked model repeats a short answer, not five long ones
DETERMINISTISCH = re.compile(r"functions\.[^\s:]+:\d+|(?:call|tool_call|tool|fc)?[_-]?\d{1,6}")
# ids counted, not drawn, which recur in every run: vLLM's and SGLang's Kimi-K2 ids (functions.get_contact:0), call_0


def abdruecke(aus):
    """(id, lauf, answer) -> its abdruck, for each answer of each output as it stands (its last draw)."""
    return {(a.id, a.lauf, k): b.abdruck for a in aus for k, b in enumerate(antworten(a)) if b.abdruck}


def gezogene_ids(aus):
    """The tool-call ids a run's server drew: eight characters or more, of no counting scheme (DETERMINISTISCH),
    each seen once over all the run's answers; an id that recurs within one run is counted, not drawn."""
    zahl = collections.Counter(i for b in noten_von(aus) if b.abdruck for i in b.abdruck[1])
    return {i for i, n in zahl.items() if n == 1 and isinstance(i, str) and len(i) >= 8
            and not DETERMINISTISCH.fullmatch(i)}


def ein_lauf(ea, aa, eb, ab):
    """Why two runs are one, or None: outputs saved line for line alike, to the moment each was saved (--vergleich a a,
    or one file under two tags)."""
    def gespeichert_(a):
        return a.sitzung, a.ende, tuple(b.abdruck for b in antworten(a))
    za = {(a.id, a.lauf): gespeichert_(a) for a in aa}
    gleich = [a.id for a in ab if za.get((a.id, a.lauf)) == gespeichert_(a)]
    if not gleich:
        return None
    if len(gleich) == len(aa) == len(ab):
        return f"{ea['tag']} and {eb['tag']} are one run (each output saved alike, to the moment): compared with " \
               "itself it tells nothing of a model; compare it with another model's run"
    return f"{eb['tag']} holds {mal(len(gleich), 'output')} of {ea['tag']}'s run, saved alike to the moment " \
           f"({einige(list(dict.fromkeys(gleich)))}): copied, not asked; measure {eb['tag']} anew (--neu)"


def prompt_anders(ea, aa, eb, ab, gemeinsam):
    """The catalogue dropped in one run, seen without S1: the prompts of the chapter's cases both runs
    share cost PROMPT_FAKTOR times more in one (medians); None where the counts cannot tell."""
    if ea.get("variante") != eb.get("variante"):
        return None  # decoys add tools to one prompt: a variant is compared as what it is
    teilen = set(gemeinsam)
    za, zb = ({a.id: t for a in aus if a.stufe not in SPAETER and a.id in teilen and a.lauf == 0
               for t in [zahl_oder_none(a.usage, "prompt_tokens")] if t} for aus in (aa, ab))
    beide = [i for i in za if i in zb]
    if not beide:
        return None
    ma, mb = statistics.median(za[i] for i in beide), statistics.median(zb[i] for i in beide)
    if max(ma, mb) < PROMPT_FAKTOR * min(ma, mb):
        return None
    weniger = ea if ma < mb else eb
    return (f"the prompts of the {mal(len(beide), 'case')} both runs share cost {ma:g} tokens in {ea['tag']} and "
            f"{mb:g} in {eb['tag']} (medians): the catalogue never reached {weniger['tag']}'s prompts, or its chat "
            "template differs")


def urteil(v):
    """The verdict, a line for each part (none of them long): what flipped as the outputs stand, and the test; whose
    the flips are and the model's test over all cases; the same by kind, calling and holding still apart; and where
    the evidence cannot settle it, why. Where a whole run measured a setting, that no verdict can be given."""
    b, s, g = len(v.besser), len(v.schlechter), v.gegenlauf
    satz = (f"The calls as meant and those an agent gets point different ways: {g.gemeint} {prozent(g.a[0])} in "
            f"{v.a}, {prozent(g.b[0])} in {v.b}; {g.nativ} {prozent(g.a[1])} and {prozent(g.b[1])}; native calls: "
            f"{v.a} {g.aufrufe[0]}, {v.b} {g.aufrufe[1]}. " if g else "")
    satz += (f"{b} case{'s' * (b != 1)} better and {s} worse in {v.b} than in {v.a} "
            f"({figur(v)} over the {mal(v.faelle_verglichen, 'case')} compared: "
            f"{differenz(v.aenderung)}); {TESTS[v.test].satz} p = {v.p:.3g}")
    if v.nicht_vergleichbar:
        return [satz + f". Cannot tell whether the model changed: {v.nicht_vergleichbar}."]
    m = v.gesamt
    if v.serverseitig or v.unklar:
        satz += f".\n{herkunft(v)}.\n" + ("On the model's " if m.beide_gleich else "Counting the outputs that are no "
                                          "evidence on the model for B and against B: ") + modell_zahlen(m)
    ganz = " as a whole, not in every kind (below)" if m.urteil == "besser" and v.rueck else ""
    satz += ": " + schluss(m, v.b, ganz) + "\nBy kind, Holm-corrected for the two: " + "; ".join(
        gruppe_text(v, g) for g in GRUPPEN) + "." + gruppen_schluss(v) + "".join(
        r.satz(v, t) for r in TEILARTEN if r.satz for t in [r.nimm(v)] if t) + bfcl_satz(v) + gleich_satz(v) + \
        vorlage_satz(v)
    return satz.split("\n")


def nativ_test(a, b, nachfrage, gemeinsam, einzeln):
    """Where text calls changed what an agent gets done in either run, gelungen_nativ paired as the model's
    test is, counted for B and against B (NICHT_NATIV says whose each such output is); else None."""
    if not (nativ_anders(a.kennzahlen) or nativ_anders(b.kennzahlen)):
        return None
    xa, xb = (ausgaenge_je_fall(r.faelle, r.ausgaben, nachfrage, (r.kennzahlen.diagnose, r.einstellungen.get(
        "server")), r.einstellungen.get("temp")) for r in (a, b))
    fuer, gegen = (urteil_von(paartest({i: differenz_je_fall(xa[i], xb[i], s) for i in gemeinsam}, einzeln))
                   for s in ("fuer_b", "gegen_b"))
    gruende = dict.fromkeys(x[1] for r in (xa, xb) for i in gemeinsam for x in r[i] if x and x[0] == "unklar")
    return Teil(robust(fuer, gegen), fuer, gegen, tuple(gruende))


def bfcl_test(aa, ab, gemeinsam, einzeln):
    """BFCL's own verdict paired as the model's test is, over the BFCL cases both runs have; None for runs of
    none. No output is set aside as the server's: BFCL's verdict is what its FC mode receives, whoever broke it."""
    xa, xb = ({a.id: [] for a in aus if a.note.bfcl is not None} for aus in (aa, ab))
    for x, aus in ((xa, aa), (xb, ab)):
        for a in aus:
            if a.id in x:
                x[a.id] += [d.note.bfcl for d in (a,) + a.frueher]  # every draw: none is set aside
    beide = [i for i in gemeinsam if i in xa and i in xb]
    return urteil_von(paartest({i: fractions.Fraction(sum(xb[i]), len(xb[i])) - fractions.Fraction(sum(xa[i]),
                                                                                                   len(xa[i]))
                                for i in beide}, einzeln)) if beide else None


def bfcl_satz(v):
    """BFCL's verdict, paired: told, never a reason for --streng to stop (it counts the server's faults too)."""
    t = v.bfcl
    if not t:
        return ""
    warum = f"it counts what the server broke ({mal(len(v.serverseitig), 'case')} here) as the model's, so " \
        if v.serverseitig else ""
    return (f"\nBFCL's verdict (tool_calls only), paired: {t.geflippt} "
            f"({len(t.besser)} better, {len(t.schlechter)} worse): {TESTS[t.test].satz} p = {t.p:.3g}: "
            f"{schluss(t, v.b)[:-1]}; {warum}--streng stops on messen's test above, never on this alone.")


def nativ_satz(v, n):
    """What an agent gets done, paired: gelungen_nativ's test, both ways where cannot-tell outputs decide."""
    satz = f"\nWhat an agent gets done (gelungen_nativ, every call from tool_calls): {modell_zahlen(n)}: "
    if n.urteil == "schlechter":
        return satz + f"{v.b} is worse beyond chance at {NIVEAU_WORT}: its calls reach an agent less often."
    return satz + schluss(n, v.b)


class Teilart(typing.NamedTuple):
    """A part of the verdict, one row: its name, how it is taken from a comparison (a Teil, or None where it was
    not tested), the words --streng stops with where it is worse (p filled in), and its sentence on stdout (None:
    the verdict's own sentences tell it, as they tell the model's three). Vergleich.teile, the end (ergebnis) and
    its exit, --streng's words and stdout all fold over these rows: a new part is a row and its functions."""
    name: str
    nimm: typing.Callable
    wort: str
    satz: typing.Callable = None


def nimm_gesamt(v):
    return v.modell["gesamt"]


def nimm_aufrufen(v):
    return v.modell["aufrufen"]


def nimm_stillhalten(v):
    return v.modell["stillhalten"]


def nimm_nativ(v):
    return v.nativ


TEILARTEN = (Teilart("gesamt", nimm_gesamt, "over all cases (p = {p})"),
             Teilart("aufrufen", nimm_aufrufen, "in calling (p = {p}, Holm-corrected)"),
             Teilart("stillhalten", nimm_stillhalten, "in holding still (p = {p}, Holm-corrected)"),
             Teilart("nativ", nimm_nativ, "in what an agent gets done (gelungen_nativ, p = {p})", nativ_satz))
TEILART = {r.name: r for r in TEILARTEN}


def herkunft(v):
    """'3 cases could go either way by outputs the server spoiled, in b (leer: S2-1, S2-2, S2-3)', and those by
    outputs whose fault cannot be told."""
    teile = []
    for ids, wie in ((v.serverseitig, "the server spoiled"), (v.unklar, "whose fault cannot be told")):
        if ids:
            gruende = "; ".join(f"{g}: {einige([i for i in ids if g in v.wessen[i].gruende])}"
                                for g in dict.fromkeys(g for i in ids for g in v.wessen[i].gruende))
            teile.append(f"{mal(len(ids), 'case')} could go either way by outputs {wie}, in "
                         f"{' and '.join(laeufe_von(v, ids))} ({gruende})")
    return "; ".join(teile)


def laeufe_von(v, ids):
    """The tags of the runs whose outputs are no evidence in these cases (the runs to ask again)."""
    return [t for x, t in (("A", v.a), ("B", v.b)) if any(x in v.wessen[i].in_ for i in ids)]


def befehl(e, *mehr):
    """The command that measured a run, from its settings line (its URL as saved), with mehr (--klaeren)."""
    teile = ["python3", "messen.py", "--url", e.get("url") or "URL", "--modell", e["modell"], "--tag", e["tag"],
             "--temp", f"{e['temp']:g}", "--n", str(e["n"])] + ["--extra", json.dumps(e["extra"])] * bool(e["extra"])
    teile += [f"--{f}" for f in ("nachfrage", "stream", *SPAETER_FELDER.values()) if e.get(f)]
    teile += [x for f, flagge in (("stufen", "--stufen"), ("stichprobe", "--stichprobe"), ("variante", "--variante"),
                                  ("system", "--system"),
                                  ("katalog_datei", "--katalog"), ("server_angabe", "--server")) if e.get(f)
              for x in (flagge, ",".join(e[f]) if f == "stufen" else str(e[f]))]
    anders = e.get("faelle_datei") and Path(e["faelle_datei"]) != faelle_standard().resolve()
    return " ".join(map(shlex.quote, teile + ["--faelle", e["faelle_datei"]] * bool(anders) + list(mehr)))


def modell_zahlen(t):
    """'3 (0 better, 3 worse): exact sign test p = 0.25', both ways where the cannot-tell ones decide."""
    def zahlen(x):
        return f"{x.geflippt} ({len(x.besser)} better, {len(x.schlechter)} worse)"
    f, g = t.fuer_b, t.gegen_b
    if t.beide_gleich:
        return f"{zahlen(f)}: {TESTS[f.test].satz} p = {f.p:.3g}"
    return f"{zahlen(f)} counted for B: p = {f.p:.3g}, {zahlen(g)} counted against B: p = {g.p:.3g}"


def schluss(t, b, ganz=""):
    """The end of a verdict: better or worse beyond chance, not, or cannot tell (t: a part of v.modell)."""
    if t.urteil == "unklar":
        return "cannot tell: counted for B and against B, the cases that could go either way give different verdicts."
    if t.urteil in ("besser", "schlechter"):
        return f"{b} is {'better' if t.urteil == 'besser' else 'worse'} beyond chance at {NIVEAU_WORT}{ganz}."
    return f"the difference is not beyond chance at {NIVEAU_WORT}."


def gruppe_text(v, g):
    """'calling (S1-S3) 0 better, 3 worse, p = 0.5' (p Holm-corrected), both ways where they differ."""
    f, w = v.modell[g].fuer_b, v.modell[g].gegen_b
    if not f.faelle and not w.faelle:
        return f"{GRUPPEN[g]}: no case compared"
    name = f"{GRUPPEN[g]} ({v.gruppen_stufen[g]})"
    def zahlen(x):
        return f"{len(x.besser)} better, {len(x.schlechter)} worse, p = {x.p_holm:.3g}"
    if v.modell[g].beide_gleich:
        return f"{name} {zahlen(f)}"
    return f"{name} {zahlen(f)} counted for B, {zahlen(w)} counted against B"


def gruppen_schluss(v):
    """What the groups add to the verdict: a group worse or better beyond chance, one that cannot be
    told, or a whole that reads better while one kind moved the other way."""
    urteile = {g: v.modell[g].urteil for g in GRUPPEN}
    teile = [f"{v.b} is {'better' if u == 'besser' else 'worse'} beyond chance at {NIVEAU_WORT} in {GRUPPEN[g]}"
             for g, u in urteile.items() if u in ("besser", "schlechter")]
    teile += [f"In {GRUPPEN[g]}, cannot tell: counted for B and against B, the verdicts differ"
              for g, u in urteile.items() if u == "unklar"]
    if v.gesamt.urteil == "besser" and v.rueck:
        teile.append(f"{v.b} is worse in {' and '.join(GRUPPEN[g] for g in v.rueck)}: not better in both kinds")
    return "".join(f" {t}." for t in teile)


def figur(v):
    """What the per-case test of a comparison counts: the chapter's tasks, S6's and S7's where both runs have them."""
    return " and ".join(["auftraege_gelungen"] * v.mit_kapitel +
                        ["nachfrage"] * bool(v.mit_nachfrage) +
                        [s.figuren[0].name for s in STUFEN_TABELLE if s.feld and getattr(v, f"mit_{s.feld}")])


def aufloesung_satz(v):
    """What this comparison could resolve at all: so that a small difference is read as a question."""
    if v.aufloesung is None:
        return (f"With {mal(v.faelle_verglichen, 'case')} compared, no difference can be called beyond chance at "
                f"{NIVEAU_WORT}.")
    (k, p), t = v.aufloesung, TESTS[v.test]
    return (f"Resolution: with {mal(v.faelle_verglichen, 'case')} compared, the least the {t.wort} calls beyond "
            f"chance at {NIVEAU_WORT} is {k} {t.ganz} one way and none back (p = {p:.3g}), "
            f"{differenz(k / v.faelle_verglichen).lstrip('+')} of {figur(v)}; a smaller "
            "difference is a question for more repeats (--n), not a verdict.")


def differenz(d, anteil=True):
    if d is None or not anteil:
        return "-" if d is None else f"{d:+.2f}"
    return f"{d * 100:+.1f}".replace("+0.0", "0").removesuffix(".0") + " points"


def vergleich_text(a, b, v, faelle, hoechstens=None):
    zeilen = [f"A: {kopfzeile(a.einstellungen, a.kennzahlen)}", f"B: {kopfzeile(b.einstellungen, b.kennzahlen)}", ""]
    zeilen += tabelle_text(zahlen_zeilen([a, b], differenz_spalte=True), ["A", "B", "B - A"]) + [""]
    zeilen += vergleich_hinweise(a.einstellungen, b.einstellungen)[:-1]
    zeilen += [""] * (zeilen[-1] != "") + halb_satz([a, b]) + urteil(v) + [aufloesung_satz(v), ""]  # the verdict
    # before the diagnosis and the long lists
    zeilen += vergleich_diagnose(a, b)
    for titel, ids in (("Better in B", v.besser), ("Worse in B", v.schlechter)):
        zeilen += fall_liste(f"{titel} ({len(ids)}):", hoechstens, [[  # a BFCL question: a paragraph, cut
            f"  {i}  {kurz(faelle[i].frage, 240)}{server_vermerk(v, i)}", f"      A: {a.was[i]}",
            f"      B: {b.was[i]}"] for i in ids])
    return "\n".join(zeilen)


WESSEN_WORTE = {"server": "the server's", "modell": "the model's", "unklar": "cannot be told"}


def vergleich_diagnose(a, b):
    """Both runs' diagnoses as one table, a row per kind (its outputs in A and in B, whose), each kind's words once
    beneath it (B's, or A's where only A has it); where both are all clear, that in one line."""
    je = [{z.name: z for z in diagnose_befunde(r.kennzahlen.diagnose, r.einstellungen)} for r in (a, b)]
    if not any(je):
        klar = [diagnose_zeilen(r.kennzahlen.diagnose, r.einstellungen)[0] for r in (a, b)]
        return [klar[0].replace("all clear", "all clear in A and B", 1)] if klar[0] == klar[1] else \
            [f"A {klar[0]}", f"B {klar[1]}"]
    namen = list(dict.fromkeys([*je[0], *je[1]]))
    breite = max(map(len, namen)) + 2
    zeilen = [diagnose_kopf([*je[0].values(), *je[1].values()]), f"  {'':<{breite}}{'A':>6}{'B':>6}  whose"]
    for n in namen:
        za, zb = je[0].get(n), je[1].get(n)
        wessen = dict.fromkeys((za.wessen if za else ()) + (zb.wessen if zb else ()))
        zeilen.append(f"  {n.replace('.', ' '):<{breite}}{za.zahl if za else 0:>6}{zb.zahl if zb else 0:>6}  "
                      + " / ".join(WESSEN_WORTE[w] for w in wessen))
    return zeilen + [f"  {n.replace('.', ' ')}: {(je[1].get(n) or je[0][n]).text}" for n in namen]


def vergleich_markdown(a, b, v, _faelle=None, _hoechstens=None):
    """The pair as a table, headed by the two runs (model, settings, date, complete or not), then the verdict."""
    kopf = [f"A: {kopfzeile(a.einstellungen, a.kennzahlen)}  ", f"B: {kopfzeile(b.einstellungen, b.kennzahlen)}", ""]
    zeilen = tabelle_markdown(zahlen_zeilen([a, b], differenz_spalte=True), ["metric", a.tag, b.tag, "difference"])
    return "\n".join(kopf + zeilen + [""] + vergleich_hinweise(a.einstellungen, b.einstellungen) + halb_satz([a, b]) +
                     urteil(v) + [aufloesung_satz(v)])


def halb_satz(laeufe):
    """Where a run is incomplete, that beside the verdict: 'Incomplete: b holds 12 of 42 outputs; ...'; and each
    run's outputs asked again (nochmal_satz)."""
    halb = [f"{r.tag} holds {komplett([r])[0]} outputs" for r in laeufe
            if not vollstaendig(r.einstellungen, r.kennzahlen)]
    return ([f"Incomplete: {' and '.join(halb)}; the test compares only the cases the runs share, and the figures "
             "are those of the outputs saved."] if halb else []) + [z for r in laeufe
                                                                   for z in nochmal_satz(r.tag, r.ausgaben)]


def nochmal_satz(tag, ausgaben):
    """How often a run's outputs were asked again (--klaeren), and how many draws came back as the one before."""
    wieder = [a for a in ausgaben if a.frueher]
    gleich = sum(x.note.wessen is not None and x.note.wessen == y.note.wessen
                 for a in wieder for x, y in zip((a,) + a.frueher, a.frueher))
    zahl = sum(len(a.frueher) for a in wieder)
    gleich_ = f"; {gleich} came back failing as the draw before, for the same reason: its cause was not fixed"
    return [f"Asked again: {tag} asked {mal(len(wieder), 'output')} again, {mal(zahl, 'time')} in all (--klaeren); "
            "the figures grade each output's last draw, a comparison counts every draw the server did not spoil" +
            gleich_ * bool(gleich) + "."] if wieder else []


def zahlen_zeilen(laeufe, differenz_spalte=False):
    """The rows every table of runs shows, one cell per run (a pair's Markdown, a series as text and Markdown):
    whether each is complete, the figures, the headline's interval, the stages, the failure classes, and in
    Markdown the diagnosis; with differenz_spalte, the last run's difference from the first beside them.
    Each row is (label, cells, difference, Markdown only)."""
    ks = [r.kennzahlen for r in laeufe]
    def unterschied(x, y, anteil=True):
        return differenz(None if None in (x, y) else y - x, anteil)
    zeilen = [] if all(komplett(laeufe, True)) else [("complete", komplett(laeufe), "", False)]
    zeilen += [(f.name, [wert(f, getattr(k, f.name)) for k in ks], unterschied(getattr(ks[0], f.name), getattr(
        ks[-1], f.name), f.anteil), False) for f in figuren(*ks)]
    if any(r.einstellungen["n"] > 1 for r in laeufe):
        zeilen.append(("alle_n", [prozent(r.kennzahlen.alle_n) if r.einstellungen["n"] > 1 else "-" for r in laeufe],
                       "", False))
    zeilen.append(("95 % interval", ["-" if ki is None else f"{ki[0] * 100:.1f}-{ki[1] * 100:.1f}"
                                          for ki in (kopfzahl(k)[2] for k in ks)], "", False))
    if any(k.anfragen_je_job for k in ks):  # S7: a job's requests, the median, beside the reference's
        zeilen.append(("requests per job", [f"{j.median:g} (ref. {j.referenz:g})" if j else "-"
                                            for j in (k.anfragen_je_job for k in ks)], "", False))
    zeilen += [(s, [prozent(k.stufen.get(s)) for k in ks],
                unterschied(ks[0].stufen.get(s), ks[-1].stufen.get(s)), False) for s in stufen_von(*ks)]
    bfcl = [bfcl_zellen(k) for k in ks]
    zeilen += [(n, [prozent(b.get(n)) for b in bfcl], unterschied(bfcl[0].get(n), bfcl[-1].get(n)), False)
               for n in dict.fromkeys(n for b in bfcl for n in b)]
    zeilen += [(art, [str(k.fehlerarten[art]) for k in ks],
                f"{ks[-1].fehlerarten[art] - ks[0].fehlerarten[art]:+d}", False) for art in FEHLERARTEN
               if any(k.fehlerarten[art] for k in ks)]
    je_lauf = [{b.name: b.zahl for b in diagnose_befunde(k.diagnose)} for k in ks]
    for n in dict.fromkeys(n for d in je_lauf for n in d):  # a run without the line: no, or none counted
        nein = "no" if "yes" in (d.get(n) for d in je_lauf) else "0"
        zeilen.append((f"diagnosis: {n}", [str(d.get(n, nein)) for d in je_lauf], "", True))
    return [(name, zellen + [anders] * differenz_spalte, nur_md) for name, zellen, anders, nur_md in zeilen]


def bfcl_zellen(k):
    """A run's BFCL figures by row: each category's, BFCL's overalls, then messen's pooling; {} for a run of none."""
    b = k.bfcl
    if not b:
        return {}
    def teil(g):
        return " (partial)" if b.fehlt.get(g) else ""
    return {n: x for n, x in {**{f"BFCL {s}": x for s, x in b.stufen.items()},
                              **{f"BFCL {w}{teil(g)}": getattr(b, g) for g, w in BFCL_GESAMT_WORTE.items()},
                              "BFCL overall w/o agentic (partial)": b.ohne_agentisch,
                              "BFCL pooled": b.gesamt}.items() if x is not None}


def tabelle_markdown(zeilen, kopf):
    # an empty cell: "| |"
    def zeile(zellen):
        return "|" + "".join(f" {z} |" if z else " |" for z in zellen)
    return [zeile(kopf), "|---" * len(kopf) + "|"] + [zeile([name, *zellen]) for name, zellen, _ in zeilen]


def tabelle_text(zeilen, kopf):
    breite = max(10, *map(len, kopf), *(len(z) for _, zellen, nur_md in zeilen if not nur_md for z in zellen))
    links = max(20, *(len(name) + 1 for name, _, nur_md in zeilen if not nur_md))  # BFCL parallel_multiple
    def spalten(werte):
        return "".join(f" {w:>{breite}}" for w in werte)
    return [f"{'':<{links}}{spalten(kopf)}"] + [f"{name:<{links}}{spalten(zellen)}".rstrip()
                                                for name, zellen, nur_md in zeilen if not nur_md]


def diagnose_kurz(d):
    """'katalog_fehlt yes, leer 3': the diagnosis's lines in a few words; "" when all is clear."""
    return ", ".join(f"{b.name} {b.zahl}" for b in diagnose_befunde(d))


def server_vermerk(v, i):
    """Whose a flipped case is, beside it, and in which run: '  (the server's, in B: leer)', '  (cannot tell, in
    A: strom_ungeprueft)', '  (the model's, in A: cut off at the token limit 256 in both runs)'; and '(second turn)'
    where that flipped."""
    w = v.wessen.get(i)
    if w is None:
        return ""
    zug = " (second turn)" if w.zug == 2 else ""
    gruende = [GRENZE_TEXT.format(grenze=v.grenze) if g in ("abgeschnitten", "schleife") and v.grenze else
               EIGENE_GRENZE[g] if g in EIGENE_GRENZE else g for g in w.gruende]
    if not gruende:
        return zug
    wer = {"server": "the server's", "unklar": "cannot tell", "modell": "the model's"}[w.art]
    return f"{zug}  ({wer}, in {' and '.join(w.in_)}: {', '.join(dict.fromkeys(gruende))})"


GRENZE_TEXT = "cut off at the token limit {grenze} in both runs"
EIGENE_GRENZE = {  # without a limit the user set, a server's own may differ between the runs (a smaller context)
    "abgeschnitten": "cut off at the server's own token limit, which may differ between the runs; set one for both "
                     "(--extra '{\"max_tokens\": 512}')", "schleife": "looping until the server's own token limit"}


def vergleich_hinweise(ea, eb):
    """What the text of a comparison says beside the table: differing n or stages, a later stage in one run only,
    another catalogue or system message sent."""
    zeilen = []
    if ea["n"] != eb["n"]:
        zeilen.append(f"The runs have different n ({ea['n']} and {eb['n']}): cases are compared by their success "
                      "rates.")
    if ea.get("stufen") != eb.get("stufen"):
        zeilen.append(f"The runs asked different stages ({stufen_wort(ea)} in {ea['tag']}, {stufen_wort(eb)} in "
                      f"{eb['tag']}): the test compares the cases both have.")
    if bool(ea.get("nachfrage")) != bool(eb.get("nachfrage")):
        zeilen.append(f"Only {(ea if ea.get('nachfrage') else eb)['tag']} asked S5's second turn (--nachfrage): the "
                      "test compares the first turns, the second stays out of it.")
    for stufe, flagge in SPAETER.items():
        feld = STUFE[stufe].feld
        if ea.get(feld, False) != eb.get(feld, False):
            zeilen.append(f"Only {(ea if ea.get(feld) else eb)['tag']} measured {stufe} ({flagge}): the test "
                          f"compares the cases both have, {stufe} stays out of it.")
    if ea.get("variante") != eb.get("variante"):
        def wie(e):
            return f"the variant {e['variante']}" if e.get("variante") else "the catalogue as written"
        zeilen.append(f"The catalogues sent differ ({wie(ea)} in {ea['tag']}, {wie(eb)} in {eb['tag']}): the "
                      "difference may be the catalogue's, not the model's; compare models under the same catalogue.")
    if ea.get("system") != eb.get("system"):  # like a variant: the same model may be asked both ways on purpose
        def wie(e):
            return (f"--system {kurz(json.dumps(e['system'], ensure_ascii=False), 60)}" if e.get(
                "system") is not None else "no --system")
        zeilen.append(f"The system messages sent differ ({wie(ea)} in {ea['tag']}, {wie(eb)} in {eb['tag']}): the "
                      "difference may be the system message's, not the model's; compare models under the same one.")
    return zeilen + [""] if zeilen else []


def stufen_wort(e):
    return ", ".join(e["stufen"]) if e.get("stufen") else "all"


def reihe_text(laeufe, vs):
    """A series: one column per run, the first the baseline; each later run compared with it."""
    zeilen = [f"{i + 1}: {kopfzeile(r.einstellungen, r.kennzahlen)}" for i, r in enumerate(laeufe)]
    zeilen += [""] + tabelle_text(zahlen_zeilen(laeufe), [r.tag for r in laeufe])
    zeilen += ["", "Each run against the first:"] + [f"  {z}" for z in halb_satz(laeufe)]
    for r, v in zip(laeufe[1:], vs):
        zeilen += [f"  {z}" for z in vergleich_hinweise(laeufe[0].einstellungen, r.einstellungen)[:-1] + urteil(v)]
    return "\n".join(zeilen + [""] + list(dict.fromkeys(map(aufloesung_satz, vs))))


def reihe_markdown(laeufe, vs):
    zeilen = tabelle_markdown(zahlen_zeilen(laeufe), [""] + [r.tag for r in laeufe]) + [""] + halb_satz(laeufe)
    for r, v in zip(laeufe[1:], vs):
        zeilen += vergleich_hinweise(laeufe[0].einstellungen, r.einstellungen)[:-1] + urteil(v)
    return "\n".join(zeilen + list(dict.fromkeys(map(aufloesung_satz, vs))))


def komplett(laeufe, nur_ob=False):
    """Per run of a series: 'yes', or how many of its outputs are saved."""
    return [vollstaendig(e, k) if nur_ob else "yes" if vollstaendig(e, k) else f"{k.ausgaben} of "
            f"{k.faelle * e['n']}" for e, k in ((r.einstellungen, r.kennzahlen) for r in laeufe)]


def was_geschah(ausgaben):
    """id -> what the run did in that case, one line (for flipped cases), from the grades alone."""
    je_fall = {}
    def ok(b):
        return "right" if gelungen(b) else gruende_von(b)
    for a in ausgaben:
        b, n = a.note, a.nachfrage
        zeile = f"{mal(b.job.schritte, 'request')} ({'right' if gelungen(b) else warum_ganz(b)})" if b.job else \
            f"{aufrufe_text(b.aufrufe, b.mangel)} ({ok(b)})"  # a job: its requests and its end state
        if n:  # a second turn flips a case too: it is shown
            zeile += f"; after the reply: {aufrufe_text(n.aufrufe, n.mangel)} ({ok(n)})"
        je_fall.setdefault(a.id, []).append(zeile)
    return {i: kurz(" | ".join(t), ZEILE_HOECHSTENS) for i, t in je_fall.items()}  # a line a terminal can show


def streng_satz(v, laeufe):
    """Why --streng stops, in one line: the parts worse beyond chance, each with the p its verdict was read at; or
    why it cannot tell, and the way out: what settles it, the run to ask again with its cases and its command."""
    a, b, e = v.a, v.b, {r.tag: r.einstellungen for r in laeufe}
    if v.ergebnis == "nicht_vergleichbar":
        return f"cannot tell whether the model of {b} is worse than {a}'s: {v.nicht_vergleichbar}"
    if v.ergebnis == "schlechter":
        wo = [TEILART[t].wort.format(p=f"{x.p:.3g}") for t, x in v.teile.items() if x.urteil == "schlechter"]
        eigene = ", on the flips the server does not explain" if v.serverseitig else ""
        return f"{b} is worse than {a} beyond chance at {NIVEAU_WORT} {' and '.join(wo)}{eigene}"
    if v.nativ and v.nativ.urteil == "unklar" and not v.unklar:
        warum = "; ".join(f"{g}: settled by {KLAERT[g]}" for g in v.nativ.gruende if g in KLAERT)
        parser = "".join(f" (where {r.tag}'s parser is off: {abhilfe('parser', s, d.text_form)})" for r in laeufe
                         for d, s in [(r.kennzahlen.diagnose, r.einstellungen.get("server"))] if d.text_ungeklaert)
        was = "its text calls, whose owner cannot be told (the diagnosis names them)" \
            if v.nativ.gruende == ("text_ungeklaert",) else "its outputs whose calls an agent cannot use, whose " \
            f"fault cannot be told ({warum or 'the diagnosis names them'})"
        return (f"cannot tell whether {b} is worse than {a} in what an agent gets done (gelungen_nativ): counted "
                f"against B only, {was}, make it worse beyond chance; settle that{parser} and measure again")
    ids = v.unklar + v.serverseitig
    gruende = {art: dict.fromkeys(g for i in ids if v.wessen[i].art == art for g in v.wessen[i].gruende)
               for art in ("unklar", "server")}
    klaert = [f"{g}: {KLAERT[g]}" for g in gruende["unklar"] if g in KLAERT] + [
        f"the server's {', '.join(gruende['server'])}: fix the server (the diagnosis says how)"
    ] * bool(gruende["server"])
    nochmal = [t for t in laeufe_von(v, ids) if gruende["server"] or set(gruende["unklar"]) - NEU_GEMESSEN]
    gezogen_ = [t for t in nochmal if e[t].get("temp") != 0 and not klaeren_fragt(laeufe, t, ids)]
    nochmal = [t for t in nochmal if klaeren_fragt(laeufe, t, ids)]  # never a command that would ask nothing
    wo = {"A": a, "B": b}  # with --n, the outputs that decide too: 'S2-1 (b #2 of 3, b #3 of 3)'
    namen = [i + " (" * bool(w.ziehungen) + ", ".join(wo[z[0]] + z[1:] for z in w.ziehungen) + ")" * bool(w.ziehungen)
             for i in ids for w in [v.wessen[i]]]
    return (f"cannot tell whether {b} is worse than {a}: {mal(len(ids), 'case')} ({einige(namen)}) could go "
            f"either way by outputs of {' and '.join(laeufe_von(v, ids))} that are no evidence on the model, worse "
            f"beyond chance counted against B only; what would settle it: "
            f"{'; '.join(klaert) or 'the diagnosis names what is unclear'}" +
            "".join(f"; then ask {t}'s outputs again: {befehl(e[t], '--klaeren')}" for t in nochmal) +
            "".join(f"; {t}'s were asked again already: at temperature {e[t]['temp']:g} each answer is another draw, "
                    f"which settles none before it, so fix what spoiled them and measure {t} anew (--neu)"
                    for t in gezogen_))


def klaeren_fragt(laeufe, tag, ids):
    """Would --klaeren ask anything of run tag's outputs in these cases: is the last draw of one still no evidence?"""
    return any(ungeklaert(a) for r in laeufe if r.einstellungen["tag"] == tag for a in r.ausgaben if a.id in ids)

# ---------------------------------------------------------------------------
# Output forms: the failed-case lists, JSON and Markdown, for a run, a series and a comparison
# ---------------------------------------------------------------------------


def als_json(x):
    """A record as JSON takes it: each NamedTuple an object of its fields, all the way down."""
    if hasattr(x, "_asdict"):
        return {k.removesuffix("_"): als_json(v) for k, v in x._asdict().items()  # Flip.in_ is the JSON's "in"
                if k not in getattr(x, "NICHT_IM_JSON", ())}
    if isinstance(x, dict):
        return {k: als_json(v) for k, v in x.items()}
    return [als_json(v) for v in x] if isinstance(x, (list, tuple)) else x


def aufrufe_text(liste, mangel_=None):
    """Calls in one line, cut after whole calls at ANDERS_HOECHSTENS characters, naming how many more."""
    if not liste:
        return {"leer": "nothing (neither a call nor text)", "abgeschnitten": "cut off by the token limit",
                "im_denken": "calls in a reasoning field only",
                "angekuendigt": "no call, though finish_reason said tool_calls"}.get(mangel_, "no call")
    return gekuerzt(list(map(aufruf_text, liste[:GEZEIGTE_AUFRUFE])), len(liste), " calls")


GEZEIGTE_AUFRUFE = 20  # calls of one answer a line shows at most


FEHLSCHLAEGE_GEZEIGT = 10  # outputs a failed-case list shows unless --alle


def fehllisten(faelle, ausgaben, hoechstens=None):
    """The failed-case lists, each from the grades and its case: the chapter's stages, S6 after the tool's
    result (what the tools returned), S5 after the user's reply, S7's whole jobs (the reference step by step)."""
    by_id, mehrere = {f.id: f for f in faelle}, any(a.lauf for a in ausgaben)
    # (title, the outputs it lists, one output's lines)
    listen = [("Failed", [a for a in ausgaben if not STUFE[a.stufe].liste and not gelungen(a.note)], Weise().zeilen)]
    listen += [(s.liste, [a for a in ausgaben if a.stufe == s.name and not gelungen(a.note)], s.weise.zeilen)
               for s in STUFEN_TABELLE if s.liste]
    listen.insert(min(2, len(listen)), ("Not done after the reply", [  # after S6's, where reports have always had it
        a for a in ausgaben if a.nachfrage is not None and not gelungen(a.nachfrage)], nachfrage_zeilen))
    return [z for titel, falsch, zeilen in listen for z in
            fall_liste(f"{titel} ({len(falsch)}):", hoechstens, [zeilen(a, by_id[a.id], mehrere) for a in falsch])]


def nachfrage_zeilen(a, fall, mehrere):
    """An output whose second turn failed, in the failed list: the question, the user's reply, what came."""
    return fall_zeilen(a, mehrere, f"{fall.frage}  /  reply: {fall.nachtrag}", fall.danach, a.nachfrage)


def fall_liste(titel, hoechstens, bloecke):
    """A failed-case list: its first `hoechstens` outputs (None: all), and how many more and how to see them."""
    if not bloecke:
        return []
    mehr = len(bloecke) - hoechstens if hoechstens is not None and len(bloecke) > hoechstens else 0
    return ["", titel] + [z for block in bloecke[:len(bloecke) - mehr] for z in block] + \
        ([f"  ... and {mehr} more (--alle shows every one)"] if mehr else [])


def fall_zeilen(a, mehrere, frage, erwartet, b):
    """One output in a failed-case list: the question, what was expected, what came (b), how it differs.
    mehrere: the run has repeats, so each line names its output (#1, #2 ...)."""
    lauf = f" #{a.lauf + 1}" if mehrere else ""
    gruende = gruende_von(b) if b.befunde else ""
    ohne = b.gegenprobe["ohne_aufrufe"] if strom_defekt(b) else None
    geschrieben = f': "{kurz(b.text, 100)}"' if not b.aufrufe and b.text else ""  # what came instead
    unlesbar = unlesbar_von(b)
    return [f"  {a.id}{lauf}  {frage}", f"      expected: {aufrufe_text(erwartet)}",
            f"      came:     {aufrufe_text(b.aufrufe, b.mangel)}{geschrieben}"] + \
        [f"      written:  {form}: \"{text}\"" for form, text in dict(unlesbar).items()] + \
        ([f"      plain:    {aufrufe_text(ohne)} (the same request without stream: strom_defekt)"] if ohne else []) + \
        ([f"      differs:  {gruende}"] if gruende else [])


def gruende_von(b):
    """Why a graded output failed, in one line: no answer at all, or which call or argument differed, cut after
    whole parts and counting the rest (the Befunde without words among them)."""
    return gekuerzt([x.text for x in b.befunde if x.text is not None], sum(x.mal for x in b.befunde))


def gezeigt_zeile(e, ausgaben):
    """The header line of a run shown from its file: a pasted summary must not pass for a new one."""
    zuletzt = datetime.datetime.fromtimestamp(max(a.ende for a in ausgaben)).strftime("%Y-%m-%d %H:%M")
    return (f"Shown as saved: measured {e['datum']}, last answer {zuletzt}; nothing was asked now "
            "(--neu measures anew).")


def bericht_json(e, k, gezeigt=False):
    return {"modell": e["modell"], "tag": e["tag"], "temp": e["temp"], "n": e["n"],
            "variante": e.get("variante"), "katalog": e.get("katalog_datei"), "stream": e.get("stream", False),
            **als_json(k), "nur_gezeigt": gezeigt}


def nativ_anders(k):
    """Did calls written as text change what succeeded (a headline: the chapter's tasks, S7's jobs): then what an
    agent gets done is shown, and paired in a comparison."""
    return any(getattr(k, f.nativ) != getattr(k, f.name) for f in KOPF_FIGUREN)


def bericht_markdown(e, k, faelle, ausgaben, _gezeigt=False, hoechstens=None):
    halb = "" if vollstaendig(e, k) else f", {k.ausgaben} of {k.faelle * e['n']} outputs: incomplete"
    kopf = f"**{e['modell']}** (tag {e['tag']}, temp {e['temp']}, n {e['n']}{wie_gesendet(e)}, " \
           f"{mal(k.faelle, 'case')}{halb})"
    kosten = [("latency, median per request", [f"{k.latenz_s:.2f} s"], False),
              ("tokens, prompt / completion", [f"{k.tokens.prompt} / {k.tokens.completion}"], False),
              ("failed", [einige(k.fehlgeschlagen, hoechstens or len(k.fehlgeschlagen)) or "none"], False)]
    zeilen = zahlen_zeilen([Gemessen(e, k, faelle, ausgaben)]) + kosten
    return "\n".join([kopf, ""] + tabelle_markdown(zeilen, ["metric", "value"]))


ZEILE_HOECHSTENS = 900  # characters of what a comparison shows of one case's outputs


Form = collections.namedtuple("Form", "hilfe lauf paar reihe")


def als_json_lauf(e, k, faelle, ausgaben, gezeigt, n):
    return json.dumps(bericht_json(e, k, gezeigt), ensure_ascii=False)


def als_json_vergleich(a, b, v, faelle, n):
    return (json.dumps(dict(als_json(v), **{f"{x}_kennzahlen": bericht_json(
        r.einstellungen, r.kennzahlen) for x, r in (("a", a), ("b", b))}), ensure_ascii=False))


def als_json_reihe(laeufe, vs):
    return (json.dumps({"laeufe": [bericht_json(r.einstellungen, r.kennzahlen) for r in
        laeufe], "vergleiche": als_json(vs)}, ensure_ascii=False))


# how a summary is printed: --NAME's help (None: the default, no flag), and a function to one text for a run
# (settings, figures, cases, outputs, shown as saved, list length), a pair (run A, run B, comparison, cases by id,
# list length) and a series ([(settings, figures)], comparisons); a new form is one row and its three functions
FORMEN = {"text": Form(None, bericht_text, vergleich_text, reihe_text),
    "json": Form("print the summary as one JSON object",  # a run's figures; a comparison beside both runs'
                 als_json_lauf,
                 als_json_vergleich,
                 als_json_reihe),
    "markdown": Form("print the summary as a Markdown table", bericht_markdown, vergleich_markdown, reihe_markdown)}

# ---------------------------------------------------------------------------
# What messen reads from one answer: --lesen
# ---------------------------------------------------------------------------


LESEN_FORM = {**{f.zeichen: f.name for f in AUFRUFFORMEN}, "[TOOL_CALLS]": "mistral", "<|python_tag|>": "llama",
              "bare JSON": "json", "[f(a=1)]": "pythonic", "a ``` fence": "fence", "JSON in prose": "json",
              "functions.NAME:": "handler", "functions.NAME: with nothing after it": "handler"}  # schreibform -> name


def lesen(eingabe, ausgabe):
    """--lesen: each JSON line of eingabe, a chat completion or an assistant message (with "tools", the tools
    offered, beside it where their schema types the values), read as a run reads it: one JSON line each on ausgabe,
    a line that cannot be read an object naming why, and the rest go on."""
    for nr, zeile in enumerate(eingabe, 1):
        if not zeile.strip():
            continue
        try:
            x = json_laden(zeile, DECODER)
        except ValueError as e:
            gelesen = {"zeile": nr, "fehler": f"not JSON ({e})"}
        else:
            try:
                gelesen = gelesen_von(x)
            except Lesefehler as e:
                gelesen = {"zeile": nr, "fehler": str(e)}
        ausgabe.write(json.dumps(gelesen, ensure_ascii=False) + "\n")
    return 0


class Lesefehler(ValueError):
    """A line --lesen cannot read: no completion and no message."""


def gelesen_von(x):
    """What messen reads from one answer: its calls, the form they came in, whose that form is, and whether its
    content holds reasoning a server's reasoning parser should have taken."""
    if not isinstance(x, dict):
        raise Lesefehler("not a JSON object")
    wahl = x.get("choices")
    nachricht = wahl[0].get("message") if isinstance(wahl, list) and wahl and isinstance(wahl[0], dict) else x
    if not isinstance(nachricht, dict) or not {"content", "tool_calls", "function_call"} & set(nachricht):
        raise Lesefehler("neither a chat completion nor an assistant message (content or tool_calls)")
    typen = {w["function"]["name"]: {k: p.get("type") for k, p in w["function"].get("parameters", {}).get(
        "properties", {}).items() if isinstance(p, dict)} for w in x.get("tools") or [] if isinstance(w, dict) and
        isinstance(w.get("function"), dict) and isinstance(w["function"].get("name"), str)}
    aufrufe, form = lies_aufrufe(nachricht, typen)
    return {"aufrufe": [aufruf_kern(c) for c in aufrufe], "form": lesen_form(aufrufe, form),
            "wessen": lesen_wessen(nachricht, aufrufe, form), "denken_im_text": denken_im_text(nachricht)}


def lesen_form(aufrufe, form):
    """The form the calls came in, as --lesen names it: nativ, a family's (hermes, qwen3_xml, ...), or none."""
    if not aufrufe:
        return "none"
    return "nativ" if form == "nativ" else LESEN_FORM.get(textform(aufrufe), textform(aufrufe))


def lesen_wessen(nachricht, aufrufe, form):
    """Whose the form of one answer is, without the run around it: calls the server sent, text and the model's own
    forms are the model's; a family's form left as text, a handler's call without arguments, an empty answer and one
    standing only in a reasoning field are open (the server's parser not applied, a form it does not read, or what
    only the run's counts can tell)."""
    if form in ("parser", "teilweise", "versuch"):
        return "offen"
    if aufrufe or SONDERTOKEN.sub("", ohne_denken(inhalt(nachricht))).strip():
        return "modell"
    return "offen"


# ---------------------------------------------------------------------------
# Checking a server before a long run: --pruefen
# ---------------------------------------------------------------------------


PRUEF_FRAGE = "Say OK."
PRUEF_ID = "check"  # stands where a case id stands in the endpoint's messages


def ohne_id(e):
    """A Serverfehler of the check's own requests, without the id its message begins with."""
    return str(e).removeprefix(f"{PRUEF_ID}: ")
PRUEF_TOKENS = 512  # per answer in the call check; --extra max_tokens overrides it


def pruef_grenze(lauf):
    """The token limit --pruefen's answers are asked with: PRUEF_TOKENS, or --extra's (None: no limit, -1)."""
    return token_grenze({"extra": {"max_tokens": PRUEF_TOKENS, **lauf.extra}})
SEITEN = 1 + sum(bool(f.erkennt) for f in FAMILIEN.values())  # the GETs erkenne_server sends at most
STROM_GLEICH, MEHRERE = "streamed and plain answers give the same calls", "several calls come in one answer"


# --pruefen's checks in its order, each with what every check may read (server: [the server], once identified)
def pruef_schritt_modell(endpunkt, lauf, faelle, antworten, server):
    return [pruef_modell(endpunkt, lauf, antworten)]


def pruef_schritt_server(endpunkt, lauf, faelle, antworten, server):
    return pruef_server(endpunkt, server)


def pruef_schritt_katalog(endpunkt, lauf, faelle, antworten, server):
    ergebnis = pruef_katalog(endpunkt, lauf, antworten, server[0])
    server.append(ergebnis[0])  # after the server: whether the catalogue reaches the prompt, for the checks after
    return [ergebnis]


def pruef_schritt_aufruf(endpunkt, lauf, faelle, antworten, server):
    return [pruef_aufruf(endpunkt, lauf, faelle, antworten, server[0], katalog_fehlt=server[1:2] == [False])]


def pruef_schritt_felder(endpunkt, lauf, faelle, antworten, server):
    return [pruef_felder(antworten)]


def pruef_schritt_s3(endpunkt, lauf, faelle, antworten, server):
    return pruef_s3(endpunkt, lauf, faelle, antworten, KATALOG_ZUERST if server[1:2] == [False] else WEITER_MESSEN)


def pruef_schritt_protokoll(endpunkt, lauf, faelle, antworten, server):
    return [pruef_protokoll(endpunkt, lauf, faelle, antworten, server[0] if server else None)]


PROTOKOLL_GEPRUEFT = "the answers keep the protocol a run checks"


ZUGLEICH = ", at once"  # the copies of one request asked together, which tell what --parallel gains
ZUGLEICH_HOECHSTENS = 8


def zugleich(lauf):
    """How many copies of one request --pruefen asks at once: --parallel's (up to 8), none at --parallel 1."""
    return min(lauf.parallel, ZUGLEICH_HOECHSTENS) if lauf.parallel > 1 else 0


def zugleich_anfragen(lauf):
    """The requests zugleich costs: its copies, asked twice."""
    return 2 * zugleich(lauf)


def pruef_zugleich(endpunkt, fall, body, k):
    """The answers to k copies of one request sent together. A server on a CPU answers two at once hardly faster
    than one after the other, so the pace of requests asked singly says nothing of --parallel until this does."""
    antworten, fehler = [], []

    def frage():
        try:
            antworten.append(endpunkt.frage(fall._replace(id=fall.id + ZUGLEICH), body))
        except Serverfehler as e:
            fehler.append(e)
    faeden = [threading.Thread(target=frage, daemon=True) for _ in range(k)]
    for faden in faeden:
        faden.start()
    for faden in faeden:
        faden.join()
    if fehler:
        raise fehler[0]
    return antworten


def pruef_protokoll(endpunkt, lauf, faelle, antworten, server):
    """Every answer --pruefen received, and one to a case where no call is due (S4), through the checks a run
    applies: arguments as objects or encoded twice, ids missing or shared, calls announced and lost, a parser
    that stopped after the first call, nothing sent for tokens counted. Whose each is, as a run's diagnosis says.
    At --parallel K, that case is asked alone and then K times at once (zugleich), for the pace."""
    still = next((f for f in faelle if f.stufe in STILL), None)
    if still is not None:
        body = anfrage(still, lauf, {"max_tokens": PRUEF_TOKENS, **lauf.extra})
        try:
            antworten.append(endpunkt.frage(still, body))
            if zugleich(lauf):  # twice: a slot that has not seen the catalogue yet reads it in the first
                runden = [pruef_zugleich(endpunkt, still, body, zugleich(lauf)) for _ in range(2)]
                endpunkt.bericht.zugleich = antworten[-1], runden
                antworten += runden[0] + runden[1]
        except Serverfehler as e:
            return False, f"{PROTOKOLL_GEPRUEFT}: {still.id}, where no call is due, fails: {e}"
    befunde = collections.Counter(art for a in antworten for art in protokoll_befunde(a))
    nicht_klar = {"geparst_abgelehnt", "aufrufe_verloren"} | (set() if familie_von(server).doppelt_kodiert else
                                                             {"argumente_doppelt"})  # as the run's diagnosis
    worte = [f"{PROTOKOLL_WORTE.get(art, PROTOKOLL_HINWEISE.get(art, (art,))[0])} in {zahl} of "
             f"{len(antworten)} answers" for art, zahl in befunde.items()]
    wer = f"{len(antworten)} answers, {f'one of them {still.id}, where no call is due' if still else 'no S4 case'}"
    if any(art not in nicht_klar for art in befunde):
        return False, f"{PROTOKOLL_GEPRUEFT}: {'; '.join(worte)}: the server's, as a run would name it; " \
                      f"{protokoll_abhilfe(befunde, server)}"
    if befunde:
        return None, f"{PROTOKOLL_GEPRUEFT}: cannot tell; {'; '.join(worte)}: {protokoll_abhilfe(befunde, server)}"
    return True, f"{PROTOKOLL_GEPRUEFT} ({wer})"


PROTOKOLL_WORTE = {"teilweise_geparst": "calls in tool_calls with more left as text beside them",
                   "fremde_vorlage": "answers that write a chat template's turn markers as text (<|im_end|>, "
                                     "<end_of_turn>, <|eot_id|>, </s>): this chat template is not the model's",
                   "leer": "answers with neither a call nor text for the tokens the server counted"}


def protokoll_befunde(antwort):
    """What of one answer a run names as the protocol's or the server's: PROTOKOLL's kinds, a parser that stopped
    after the first call (teilweise_geparst), nothing sent for two or more tokens counted (leer)."""
    b = bewerte_ausgabe(Fall("pruefen"), antwort.nachricht, antwort.finish, usage=antwort.usage)
    return list(b.protokoll) + ["geparst_abgelehnt"] * bool(antwort.abgelehnt) + ["fremde_vorlage"] * \
        b.fremde_marken + \
        ["teilweise_geparst"] * (b.form == "teilweise") + ["leer"] * (b.wessen == ("server", "leer"))


def protokoll_abhilfe(befunde, server):
    """What a run's diagnosis says of each kind found, in the server's words."""
    return "; ".join(protokoll_hinweis(art, server) if art in PROTOKOLL_HINWEISE else hinweis(art, server)
                     for art in befunde)


def pruef_schritt_nachfrage(endpunkt, lauf, faelle, antworten, server):
    return [pruef_nachfrage(endpunkt, lauf, faelle)]


def pruef_schritt_weiter(endpunkt, lauf, faelle, antworten, server):
    return [pruef_weiter(endpunkt, lauf, faelle)]


def pruefen(lauf, faelle):
    """A handful of requests and a checklist, each line printed as its check ends; 0 when the server is set up for a
    measurement. A request that times out is not asked again: at temperature 0 it would take as long again."""
    lauf, stand = lauf._replace(timeout_nochmal=False), Pruefstand()
    endpunkt, antworten = Endpunkt(lauf, stand), []
    server = []  # the server, once the model check has passed and it is identified

    # each check: (the lines it prints, the requests it sends at most, the check); the first line counts both
    pruefungen = [(("the endpoint answers and accepts the model name",), 1, pruef_schritt_modell),
                  (("which server this is",), 0, pruef_schritt_server),
                  (("the catalogue reaches the prompt",), 1, pruef_schritt_katalog),
                  (("a call comes back as tool_calls",), 6, pruef_schritt_aufruf),  # up to five S1 cases, the probe
                  (("usage and finish_reason are present",), 0, pruef_schritt_felder),
                  ((STROM_GLEICH, MEHRERE), 5, pruef_schritt_s3),  # plain and streamed, each once more, parallel
                  ((PROTOKOLL_GEPRUEFT,), 1 + zugleich_anfragen(lauf), pruef_schritt_protokoll)]  # every answer,
    # one where none is due, and that one asked --parallel times at once, twice: what --parallel gains here
    pruefungen += [((was,), 1, p) for was, p, ja in (  # the later turns asked
        ("a second turn (--nachfrage) is accepted", pruef_schritt_nachfrage, lauf.nachfrage),
        ("the tools' results (--weiter) are accepted", pruef_schritt_weiter, "S6" in lauf.spaeter)) if ja]
    anfragen = sum(a for _, a, _ in pruefungen)
    print(f"Checking {ohne_geheimnis(lauf.url)} with model {lauf.modell}, {sum(len(z) for z, _, _ in pruefungen)} "
          f"checks, at most {anfragen} requests of up to --timeout {lauf.timeout:g} s and {SEITEN} pages of up to "
          f"{KENNUNG_FRIST} s ({uhrzeit(anfragen * lauf.timeout + SEITEN * KENNUNG_FRIST)} at most; longer only where "
          "a request the server fails is asked again):", flush=True)
    punkte = []
    try:
        for i, (namen, _, pruefung) in enumerate(pruefungen):
            stand.beginne("; ".join(namen))
            ergebnis = pruefung(endpunkt, lauf, faelle, antworten, server)
            stand.loesche()
            print("".join(f"  {'ok' if ok else '?' if ok is None else 'FAIL':<5} {text}\n" for ok, text in ergebnis),
                  end="", flush=True)  # each line as its check ends
            punkte += ergebnis
            if not punkte[0][0]:  # the endpoint does not answer: nothing else can be checked, and each line says so
                print("".join(f"  -     {n}: not checked, the endpoint does not answer\n" for z, _, _ in
                              pruefungen[i + 1:] for n in z), end="", flush=True)
                break
    finally:
        stand.halt.set()
        stand.loesche()
    kopien = {id(a) for runde in (stand.zugleich or (None, []))[1] for a in runde}
    takt = pruef_takt(lauf, faelle, stand.anfragen, [a for a in antworten if id(a) not in kopien], stand.zugleich)
    if takt:
        print(takt, flush=True)
    fehler = sum(ok is False for ok, _ in punkte)
    if fehler:
        print(f"{fehler} check{'s' * (fehler != 1)} failed: fix {'them' if fehler != 1 else 'it'} before a long run.")
        return 1
    print(pruef_schluss([text for ok, text in punkte[2:] if ok is None]))  # a server not known is a note
    return 0


def pruef_schluss(offen):
    """The last line says whether to go on: set up; every ? the model's answer, so a run can go ahead; or read
    the ? first, each naming what would settle it."""
    if not offen:
        return "The server is set up for a measurement."
    if all(GEHT_WEITER in text for text in offen):
        return (f"Nothing failed; {'the ' * (len(offen) != 1)}{mal(len(offen), 'check')} marked ? cannot tell "
                f"because of the model's answers, not the server's set-up: {GEHT_WEITER}.")
    return (f"Nothing failed, but {mal(len(offen), 'check')} (?) cannot say the server is set up: "
            f"{'they say' if len(offen) != 1 else 'it says'} what would settle it; read "
            f"{'them' if len(offen) != 1 else 'it'} before a long run.")


def pruef_server(endpunkt, gefunden):
    """Which server this is: a line that names it, or says it did not tell; gefunden keeps it for the checks
    after (their fixes are its own options)."""
    gefunden.append(erkenne_server(endpunkt))
    return [(True if gefunden[0] else None, f"which server this is: {server_wort(gefunden[0])}")]


def pruef_anfrage(endpunkt, lauf, antworten, mit_katalog):
    """One request of at most one token (or --extra's max_tokens), with or without the catalogue; its Antwort."""
    body = {"model": lauf.modell, "temperature": lauf.temp, "max_tokens": 1, **lauf.extra,
            "messages": [{"role": "system", "content": lauf.katalog.eroeffnung},
                         {"role": "user", "content": PRUEF_FRAGE}]}
    if mit_katalog:
        body.update(tools=lauf.katalog.werkzeuge, tool_choice="auto")
    antwort = endpunkt.frage(Fall(PRUEF_ID), body)
    antworten.append(antwort)
    return antwort


def pruef_modell(endpunkt, lauf, antworten):
    try:
        pruef_anfrage(endpunkt, lauf, antworten, False)
    except Serverfehler as e:
        return False, f"the endpoint answers and accepts the model name: {ohne_id(e)}"
    return True, "the endpoint answers and accepts the model name"


def pruef_katalog(endpunkt, lauf, antworten, server=None):
    zahl, worte = len(lauf.katalog.werkzeuge), "no one two three four five six seven eight nine ten eleven".split()
    was = "the catalogue reaches the prompt"
    werkzeuge = f"{worte[zahl] if zahl < len(worte) else zahl} tool{'s' * (zahl != 1)}"  # 'eleven tools
    try:
        mit = zahl_oder_none(pruef_anfrage(endpunkt, lauf, antworten, True).usage, "prompt_tokens")
    except Serverfehler as e:
        return False, f"{was}: a request with the {werkzeuge} fails: {ohne_id(e)}"
    ohne = zahl_oder_none(antworten[0].usage, "prompt_tokens")
    if mit is None or ohne is None:
        return None, f"{was}: cannot tell, the server sends no usage with plausible prompt_tokens"
    zahlen = f"prompt_tokens {mit} with all {werkzeuge}, {ohne} without"
    if mit - ohne < -WENIGER_TOKENS:
        return None, f"{was}: cannot tell ({zahlen}: fewer with tools, so the server counts something else)"
    if lauf.katalog.schwelle() < WENIGER_TOKENS:
        return None, f"{was}: cannot tell ({zahlen}: tools this small add too few tokens to tell)"
    if mit - ohne < lauf.katalog.schwelle():
        return False, f"{was}: {zahlen}; {hinweis('katalog_fehlt', server)}"
    return True, f"{was} ({zahlen})"


def pruef_aufruf(endpunkt, lauf, faelle, antworten, server=None, versuche=5, katalog_fehlt=False):
    """Up to five S1 cases (the easiest calls) until one comes back; how it came back, and whose it is.
    Each answer is cut at PRUEF_TOKENS unless --extra sets max_tokens: seconds, not minutes."""
    was = "a call comes back as tool_calls"
    auswahl = [f for f in faelle if f.stufe == "S1"][:versuche]
    ersatz = "" if auswahl else " (the case file has no S1 case; tried the first cases that expect a call)"
    auswahl = auswahl or [f for f in faelle if f.erwartet][:versuche]
    grenze = pruef_grenze(lauf)
    gruende = []
    for fall in auswahl:
        try:
            antwort = endpunkt.frage(fall, anfrage(fall, lauf, {"max_tokens": PRUEF_TOKENS, **lauf.extra}))
        except Serverfehler as e:
            return False, f"{was}: {e}"
        antworten.append(antwort)
        if antwort.abgelehnt:
            return None, (f"{was}: cannot tell; in {fall.id} the server refused what the model wrote with 500 "
                          f"({antwort.abgelehnt}): {ABGELEHNT_WARUM}")
        b = bewerte_ausgabe(fall, antwort.nachricht, antwort.finish, lauf.katalog.umbenennung, antwort.usage, grenze)
        grund = b.form if b.aufrufe else b.mangel
        if b.nativ:
            return True, f"{was} ({fall.id}){ersatz}"
        if b.mangel in ("leer", "angekuendigt", "im_denken") and b.wessen[0] != "modell":  # as a run's verdict is
            return pruef_keine_antwort(was, fall, b, server)
        if grund == "parser":
            return pruef_probe(endpunkt, lauf, fall, was, server, antwort)
        if grund == "versuch":
            return None, (f"{was}: cannot tell; in {fall.id} a call came as text in a handler's syntax with its "
                          f"arguments missing (\"{erste_zeile(antwort.nachricht)}\"): the model stopped there, or "
                          f"the server lost them; set {abhilfe('parser', server)}, and look at the server's log")
        if grund == "eigen":
            return None, (f"{was}: in {fall.id} the model wrote its call in a format of its own (a ``` block or "
                          "JSON in prose), which no tool-call parser turns into tool_calls: an agent on this server "
                          "receives text, not calls. That is the model, not the server's setting: train or prompt "
                          f"it on its chat template's tool-call format; {GEHT_WEITER}: it grades such calls as "
                          "meant, and gelungen_nativ counts what an agent gets done")
        gruende.append(grund)
    if not auswahl:
        return None, f"{was}: cannot tell, the case file has no case that expects a call"
    if gruende and all(g == "abgeschnitten" for g in gruende) and token_grenze({"extra": lauf.extra}):
        return None, (f"{was}: cannot tell, every answer of {len(gruende)} ran past the cap you chose "
                      f"(max_tokens {grenze}) before a call came: the model rambles or loops at this budget; a "
                      "measurement under the same cap counts that as the model's")
    if gruende and all(g == "abgeschnitten" for g in gruende):
        return None, (f"{was}: cannot tell, every answer of {len(gruende)} was cut at {grenze} tokens before a call "
                      f"or text came (finish_reason length), as a thinking model's is; give it more with "
                      f"--extra '{{\"max_tokens\": 4096}}'")
    warum = "the catalogue does not reach the prompt (above), so the model was never offered the tools: fix that " \
        "first" if katalog_fehlt else "the model answered without one: that is the model, not the server's " \
        f"setting, and {GEHT_WEITER}: its figures measure it"
    return None, (f"{was}: cannot tell, no call came in {len(auswahl)} {'S1 ' * (not ersatz)}"
                  f"case{'s' * (len(auswahl) != 1)} within {grenze} tokens ({warum}){ersatz}")


def pruef_keine_antwort(was, fall, b, server):
    """An answer that is none and not the model's, as WESSEN weighs it for a run: the server's fails the check
    (nothing sent for tokens it counted), what cannot be told says what would settle it."""
    art, grund = b.wessen
    if art == "server":
        return False, (f"{was}: in {fall.id} came {aufrufe_text([], b.mangel)}, for {b.completion_tokens} "
                       f"completion tokens the server counted; {hinweis('leer', server)}")
    if grund == "im_denken":  # here the check itself is what would settle it: name the setting to look at
        return None, (f"{was}: cannot tell; in {fall.id} {DIAGNOSE_HINWEISE[grund].was}: the model answered inside "
                      f"its reasoning, or the server's reasoning parser took its answer; {hinweis(grund, server)}")
    return None, (f"{was}: cannot tell; in {fall.id} came {aufrufe_text([], b.mangel)}, and whose that is "
                  f"cannot be told: {KLAERT_IM_PRUEFEN.get(grund, KLAERT[grund])}")


KLAERT_IM_PRUEFEN = {  # what settles a reason where KLAERT's words would send --pruefen to itself
    "angekuendigt": "what the model wrote, in the server's log: calls in a form its tool-call parser does not read, "
                    "or to a tool it does not know; the calls it announced are lost there"}


def pruef_probe(endpunkt, lauf, fall, was, server, antwort):
    """A call came as text in a parser's form: the evidence, then the probe where it can tell, says
    whose that is, as in a run's diagnosis."""
    form = textform(lies_aufrufe(antwort.nachricht)[0])
    urteil, grund = text_wessen(False, server, None)
    if grund == "vorlage":
        gefragt = f" and asks for {server['vorlage']['form']}" if server["vorlage"]["form"] else ""
        return None, (f"{was}: in {fall.id} the model wrote its call as text ({form}), while {server['name']}'s "
                      f"chat template renders the tools{gefragt}: the format is the model's own: train or prompt it "
                      "on its chat template's tool-call format")
    probe = probe_von(endpunkt, fall, lauf) if grund == "probe_fehlt" else None  # where a probe can tell
    urteil, grund = text_wessen(False, server, probe)
    wie = beleg_text(grund, server, probe)
    if urteil == "server":
        return False, (f"{was}: in {fall.id} {DIAGNOSE_HINWEISE['aus_text'].was} ({wie}); "
                       f"{hinweis('aus_text', server, form)}")
    if urteil == "modell":
        return None, (f"{was}: in {fall.id} the model wrote its call as text, and {wie}: the server's parser "
                      "works for this template, so the format is the model's own: train or prompt it on its chat "
                      "template's tool-call format")
    return None, f"{was}: cannot tell; in {fall.id} {ungeklaert_text(wie, server, form)}"


def pruef_takt(lauf, faelle, anfragen, antworten=(), zugleich_=None):
    """The pace the checks' requests of cases showed, what the planned run takes at it, and the --timeout to give
    where the default is short: 'Pace: ...'; None where no case was asked. anfragen: (whose, seconds) of each;
    antworten: the answers asked one at a time, whose tokens tell how long an answer to the cap takes."""
    dauern = [sekunden for wer, sekunden in anfragen if wer != PRUEF_ID and not wer.endswith(ZUGLEICH)]
    if not dauern:
        return None
    stufe = {f.id: f.stufe for f in faelle}
    gefragt = stufen_kurz(sorted({stufe[wer] for wer, _ in anfragen if wer in stufe}, key=STUFEN.index))
    anzahl = sum(f.art.weise.anfragen(f, lauf) for f in faelle) * lauf.n
    gewinn, wie = pruef_gewinn(lauf, zugleich_)
    # a run takes the sum of its requests: their mean, which the long answers of S3-S5 pull above the median
    mittel, mitte, schnellste, laengste = statistics.fmean(dauern), statistics.median(dauern), min(dauern), max(dauern)
    grenze = pruef_grenze(lauf)
    kappe_ = token_grenze({"extra": lauf.extra})  # the run's own cap: without one, its answers run on past 512
    voll, je_token = pruef_bis_zur_grenze(antworten, kappe_, laengste)
    bis = (f"or every answer to run to the cap of {kappe_} tokens, at {je_token * 1000:.1f} ms a token here"
           if je_token else "or as slow as the slowest")
    satz = (f"Pace: a request of a case took {mittel:.1f} s here on average ({mal(len(dauern), 'request')} of "
            f"{gefragt}: median {mitte:.1f} s, the slowest {laengste:.1f} s; answers "
            f"{f'cut at {grenze} tokens' if grenze else 'without a token limit'}){wie}; the run these settings plan, "
            f"{mal(anzahl, 'request')} at --parallel {lauf.parallel}, takes about "
            f"{uhrzeit(anzahl * mittel / gewinn)} at that pace ({uhrzeit(anzahl * schnellste / gewinn)} to "
            f"{uhrzeit(anzahl * voll / gewinn)}, were every request as fast as the fastest {bis}).")
    genug = math.ceil(3 * laengste / 10) * 10  # three times the slowest: a full answer runs longer than a cut one
    if genug > lauf.timeout:
        satz += f" --timeout {lauf.timeout:g} s is short for it: give --timeout {genug}."
    if eine_url(lauf.url)[1] == "loopback" and hasattr(os, "getloadavg"):  # the server shares this machine
        satz += (f" This machine's load was {os.getloadavg()[0]:.1f} meanwhile (the 1-minute average; "
                 f"{mal(os.cpu_count() or 1, 'core')}): the run's pace follows its load then.")
    return satz


def pruef_bis_zur_grenze(antworten, grenze, laengste):
    """How long a request takes whose answer runs to the cap, and the seconds a token: a straight line through
    the answers' seconds over their completion tokens (the prompt's time, then each token's). A small model loops
    to the cap in many cases, which the checks' few answers may not show. (laengste, None) without a cap, or where
    fewer than three answers counted tokens, all alike, or the line does not rise."""
    punkte = [(t, a.latenz) for a in antworten for t in [zahl_oder_none(a.usage, "completion_tokens")]
              if t and a.latenz]
    if not grenze or len(punkte) < 3 or len({t for t, _ in punkte}) < 2:
        return laengste, None
    mt, ms = statistics.fmean(t for t, _ in punkte), statistics.fmean(s for _, s in punkte)
    je_token = sum((t - mt) * (s - ms) for t, s in punkte) / sum((t - mt) ** 2 for t, _ in punkte)
    if je_token <= 0:
        return laengste, None
    return max(laengste, ms + je_token * (grenze - mt)), je_token


def pruef_gewinn(lauf, zugleich_):
    """What --parallel gains on this server, as measured: one request asked alone against K copies of it asked at
    once, twice (a slot that has not read the catalogue yet does so in the first round, as a run's slots do once);
    the better round's gain, between 1 and K, and its words for the pace. zugleich_: the Pruefstand's (the answer
    alone, the rounds), None where they were not asked or failed: no gain, and said so."""
    if lauf.parallel == 1:
        return 1, ""
    if not zugleich_:
        return 1, "; what --parallel gains here was not measured, so it is counted as none"
    allein, runden = zugleich_
    gewinn, was = max(pruef_runde(allein, kopien) for kopien in runden)
    return gewinn, f"; {was}: --parallel {lauf.parallel} gains {gewinn:.1f}x here"


def pruef_runde(allein, kopien):
    """One round's gain and its words. The copies may answer at other lengths than the one alone (a server's slots
    differ in their cache even at temperature 0), so the gain is of completion tokens a second where the server
    counts them; the slowest copy is how long they took together."""
    zusammen = max(a.latenz for a in kopien)
    tokens = [zahl_oder_none(a.usage, "completion_tokens") for a in (allein, *kopien)]
    if all(tokens):
        gewinn = sum(tokens[1:]) / zusammen / (tokens[0] / allein.latenz)
        was = (f"{len(kopien)} copies of one request asked at once gave {sum(tokens[1:])} completion tokens in "
               f"{zusammen:.1f} s, it alone {tokens[0]} in {allein.latenz:.1f} s")
    else:
        gewinn = len(kopien) * allein.latenz / zusammen
        was = (f"{len(kopien)} copies of one request asked at once took {zusammen:.1f} s together, it alone "
               f"{allein.latenz:.1f} s")
    return min(len(kopien), max(1.0, gewinn)), was


PRUEF_RUECKFRAGE = "Which one do you mean? Please give me the missing value."


def pruef_nachfrage(endpunkt, lauf, faelle):
    """--nachfrage: one two-turn request (the question, a question back, the user's reply) is accepted."""
    was = "a second turn (--nachfrage) is accepted"
    fall = next((f for f in faelle if f.nachtrag is not None), None)
    if fall is None:
        return None, f"{was}: cannot tell, the case file has no case with a reply (nachtrag)"
    body = nachfrage_anfrage(fall, lauf._replace(extra={"max_tokens": PRUEF_TOKENS, **lauf.extra}),
                             {"content": PRUEF_RUECKFRAGE})
    return pruef_angenommen(endpunkt, was, fall._replace(id=f"{fall.id}, second turn"), body, fall.id, "reply")


def pruef_weiter(endpunkt, lauf, faelle):
    """--weiter: one request that carries a first step and its tool results is accepted."""
    was = "the tools' results (--weiter) are accepted"
    fall = next(f for f in faelle if f.art.weise is NACH_ERGEBNIS)  # faelle_fuer made sure there is one
    body = anfrage(fall, lauf, {"max_tokens": PRUEF_TOKENS, **lauf.extra})
    return pruef_angenommen(endpunkt, was, fall, body, fall.id, "results")


def pruef_angenommen(endpunkt, was, wer, body, fall_id, wonach):
    """A request of more than one turn is accepted: ok, naming the calls that came after `wonach`."""
    try:
        antwort = endpunkt.frage(wer, body)
    except Serverfehler as e:
        return False, f"{was}: {e}"
    aufrufe, _ = lies_aufrufe(antwort.nachricht)
    kam = ", ".join(a["name"] or "?" for a in aufrufe) or "no call"
    return True, f"{was} ({fall_id}: {kam} after the {wonach})"


def pruef_s3(endpunkt, lauf, faelle, antworten=None, naechstes=None):
    """Two checks on the first S3 case at temperature 0: streamed and plain give the same calls; and
    several calls come without asking for them (llama.cpp takes parallel_tool_calls from the template)."""
    fall = next((f for f in faelle if f.stufe == "S3"), None)
    if fall is None:
        return [(None, f"{w}: cannot tell, the case file has no S3 case") for w in (STROM_GLEICH, MEHRERE)]

    abgelehnt = []

    def frage(stream=False, **mehr):
        lauf_ = lauf._replace(temp=0.0, stream=stream)
        body = anfrage(fall, lauf_, {"max_tokens": PRUEF_TOKENS, **lauf.extra, **mehr})
        antwort = endpunkt.frage(fall, body)
        if antworten is not None and not stream:  # a stream's own defects are its line's
            antworten.append(antwort)
        abgelehnt.append(antwort.abgelehnt)
        return lies_aufrufe(antwort.nachricht)[0]
    try:
        schlicht = frage()
    except Serverfehler as e:
        return [(False, f"{STROM_GLEICH}: {e}"), (None, f"{MEHRERE}: not checked, the plain request failed")]
    if abgelehnt[0]:  # no call came, since the server refused what came: not the model's answer alone
        return [(None, f"{w}: cannot tell; in {fall.id} the server refused what the model wrote with 500 "
                       f"({abgelehnt[0]}): {ABGELEHNT_WARUM}") for w in (STROM_GLEICH, MEHRERE)]
    try:
        zeile_strom = pruef_strom(fall, STROM_GLEICH, schlicht, frage(stream=True), frage, naechstes)
    except Serverfehler as e:
        zeile_strom = False, f"{STROM_GLEICH}: the streamed request fails: {e}"
    return [zeile_strom, pruef_mehr(lauf, fall, MEHRERE, schlicht, frage, naechstes)]


def pruef_strom(fall, was, schlicht, strom, frage, naechstes=None):
    """The stream gives the plain answer's calls. Where it does not, each is asked once more before the
    stream is blamed, as a run's cross-check does: behind a prompt cache or several slots, a repeated
    prompt is answered otherwise at temperature 0, streamed or not."""
    if not schlicht:
        return None, f"{was}: cannot tell, no call came in {fall.id} without stream; {naechstes or WEITER_MESSEN}"
    if als_menge(strom) == als_menge(schlicht):
        return True, f"{was} ({fall.id}: {mal(len(schlicht), 'call')})"
    nochmal, strom_nochmal = frage(), frage(stream=True)
    wie = f"in {fall.id} the stream gave {aufrufe_text(strom)}, the plain answer {aufrufe_text(schlicht)}"
    if als_menge(strom_nochmal) == als_menge(nochmal):
        return True, (f"{was} ({fall.id}: asked again, plain and streamed gave the same calls; the first answers "
                      "differed because the server answers a repeated prompt otherwise, a prompt cache or several "
                      "slots, not because of the stream)")
    if als_menge(strom_nochmal) == als_menge(strom) and als_menge(nochmal) == als_menge(schlicht):
        return False, f"{was}: {wie}, and the same again when asked once more; {DIAGNOSE_HINWEISE['strom_defekt'][1]}"
    return None, (f"{was}: cannot tell; {wie}, and asked once more each gave other calls again: the server answers "
                  "one prompt otherwise from request to request at temperature 0, so no answer here tells the stream")


def pruef_mehr(lauf, fall, was, schlicht, frage, naechstes=None):
    """Several calls in one answer, unasked; else asked with parallel_tool_calls: true, which a server
    may refuse (then the bench, which never sends the field itself, has nothing to change)."""
    gesetzt = lauf.extra.get("parallel_tool_calls")
    if gesetzt is False:
        return False, f"{was}: {PARALLEL_AUS}: leave it out"
    if gesetzt is not None:
        return None, f"{was}: --extra sets parallel_tool_calls, so each request asks for it"
    if len(schlicht) > 1:
        return True, f"{was} ({fall.id}: {len(schlicht)} calls)"
    try:
        ausdruecklich = frage(parallel_tool_calls=True)
    except Anfragefehler as e:
        return None, (f"{was}: cannot tell, {fall.id} brought {mal(len(schlicht), 'call')}, and the server refuses "
                      f"the field parallel_tool_calls ({e}); the bench never sends it, so a run is not affected: do "
                      "not add it with --extra")
    except Serverfehler as e:
        return None, f"{was}: cannot tell, asked with parallel_tool_calls the request failed: {e}"
    if len(ausdruecklich) > 1:
        return False, (f"{was}: in {fall.id} only when asked: this server sends one call per answer unless "
                       "asked: --extra '{\"parallel_tool_calls\": true}'")
    return None, (f"{was}: cannot tell, {fall.id} brought at most one call, asked for several or not; "
                  f"{naechstes or WEITER_MESSEN}")


GEHT_WEITER = "a run can go ahead"  # a ? that is the model's answer says so, and the last line reads it
WEITER_MESSEN = f"that is the model's answer, not the server's set-up: {GEHT_WEITER}, and S3's figure measures it"
KATALOG_ZUERST = "the catalogue does not reach the prompt (above): fix that first"  # never the model's below that
PARALLEL_AUS = ("--extra sets parallel_tool_calls false, so the S3 cases, which need several calls in one answer, "
                "measure that setting, not the model")


def pruef_felder(antworten):
    was = "usage and finish_reason are present"
    antworten = [a for a in antworten if not a.abgelehnt]  # an error the server sent for an answer has neither
    if len(antworten) < 2:
        return None, f"{was}: cannot tell, only the answer without tools was seen"
    fehlt = [f for f, da in (("usage", all(zahl_oder_none(a.usage, "prompt_tokens") is not None for a in antworten)),
                             ("finish_reason", all(a.finish for a in antworten))) if not da]
    if fehlt:
        return False, (f"{was}: the server sends no {' and no plausible '.join(fehlt)}, so the diagnosis cannot "
                       "tell whether the catalogue reached the prompt or an answer was cut off")
    if antworten[0].finish == "tool_calls":  # asked without tools: no call can have been announced
        return False, (f"{was}, but the answer to \"{PRUEF_FRAGE}\", asked without tools, is labelled finish_reason "
                       "tool_calls: a proxy or the server rewrites the label, so lost calls cannot be told from it")
    return True, was

# ---------------------------------------------------------------------------
# The self-test: a loopback endpoint that answers every case with its expected calls
# ---------------------------------------------------------------------------


def selbsttest_server(faelle, verzoegerung=0.0, plaetze=8, katalog=STANDARD, ziehung=None, n=1, welt_salz=None):
    """Start the built-in endpoint on 127.0.0.1; return (server, url). It answers each case with its expected calls
    as the catalogue sent names them, after `verzoegerung` seconds in one of `plaetze` slots (tests/bench.py plays a
    slow server so); its prompt_tokens grow with the tools sent, as a template that renders them does."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    wie, jobs = katalog.als_gesendet, collections.defaultdict(list)  # the questions and replies as sent
    for f, k in ((f, k) for f in faelle if f.stufe == GANZ for k in range(n)):  # S7: each output's values,
        neu = {a: neue_id(i, job_salz(welt_salz, f.id, k)) for i, a in enumerate(NEUE_IDS[:20], 1)}  # its creations'
        g = json.dumps(gezogen(f, job_salz(ziehung, f.id, k)).roh)
        jobs[wie(json.loads(g)["frage"])].append(json.loads(re.sub("|".join(neu), lambda m: neu[m.group()], g)))
    antwort = functools.partial(selbsttest_antwort, katalog, {  # each stage's row says what its cases are answered
        "antworten": {k: soll for f in faelle if f.stufe != GANZ for k, soll in f.art.weise.antworten(f, wie)},
        "jobs": jobs})
    frei = threading.BoundedSemaphore(plaetze)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
        wbufsize = -1                  # headers and body in one send: no delayed-ACK stall
        disable_nagle_algorithm = True

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with frei:
                time.sleep(verzoegerung)
            nachricht, finish, usage = antwort(body)
            strom = bool(body.get("stream"))
            self.sende(200, "text/event-stream" if strom else "application/json", (als_strom(
                nachricht, finish, usage) if strom else json.dumps({"object": "chat.completion", "choices": [
                    {"index": 0, "message": nachricht, "finish_reason": finish}], "usage": usage})).encode())

        def do_GET(self):
            """What it says of itself, as a server does in /v1/models: the self-test's own owner."""
            self.sende(200 if self.path.endswith("/v1/models") else 404, "application/json", json.dumps(
                {"object": "list", "data": [{"id": "selbsttest", "object": "model", "owned_by": SELBSTTEST}]}).encode())

        def sende(self, status, typ, daten):
            self.send_response(status)
            self.send_header("Content-Type", typ)
            self.send_header("Content-Length", str(len(daten)))
            self.end_headers()
            self.wfile.write(daten)

        def log_message(self, *_):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()  # quick shutdown
    return server, f"http://127.0.0.1:{server.server_port}/v1/chat/completions"


def selbsttest_antwort(katalog, bekannt, body):
    """The self-test's answer to one request: (message, finish_reason, usage): a case's expected calls in the
    names sent, S5's calls after the reply, S6's after the results, S7's reference step after as many answers."""
    letzte, frage = body["messages"][-1], body["messages"][1]["content"]
    text, jobs = "Which one do you mean?", bekannt["jobs"]
    if frage in jobs:  # under --n, the output whose world the results so far showed most of
        gesehen = " ".join(m["content"] for m in body["messages"] if m["role"] == "tool")
        job = max(jobs[frage], key=lambda g: sum(w in gesehen for w in re.findall(r'"((?:[^"\\]|\\.)+)"',
                                                                                  json.dumps(g))))
        erwartet = job["loesung"][sum(m["role"] == "assistant" for m in body["messages"])]
        text = " ".join(job.get("antwort", [])) or "Done."
    else:
        erwartet = bekannt["antworten"].get(("tool", frage) if letzte["role"] == "tool" else
                                            ("user", letzte["content"]), [])
    rufe = [{"id": f"call_{i}", "type": "function", "function": {
        "name": neuer_name(katalog, s["name"]), "arguments": json.dumps(umbenannte_args(katalog, s["args"]))}}
        for i, s in enumerate(erwartet)]
    nachricht = {"role": "assistant", "content": None if rufe else text, **({"tool_calls": rufe} if rufe else {})}
    return nachricht, "tool_calls" if rufe else "stop", {
        "prompt_tokens": 300 + len(json.dumps(body.get("tools", []))) // 4, "completion_tokens": 30 * len(rufe) + 10}


def als_strom(nachricht, finish, usage):
    """A message as a server streams it (SSE): the role, the content, each call's name and then its
    arguments in two fragments, the finish_reason, the usage, [DONE]."""
    deltas = [{"role": "assistant"}] + ([{"content": nachricht["content"]}] if nachricht.get("content") else [])
    for i, c in enumerate(nachricht.get("tool_calls") or []):
        args = c["function"]["arguments"]
        deltas.append({"tool_calls": [{"index": i, "id": c["id"], "type": "function",
                                       "function": {"name": c["function"]["name"], "arguments": ""}}]})
        deltas += [{"tool_calls": [{"index": i, "function": {"arguments": teil}}]}
                   for teil in (args[:len(args) // 2], args[len(args) // 2:])]
    chunks = [{"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks += [{"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}, {"choices": [], "usage": usage}]
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


def selbsttest(lauf, faelle, sha):
    """Measure the built-in endpoint in a temporary folder; 0 only if every figure is 100 %."""
    import tempfile

    gefragt = faelle_fuer(faelle, lauf.spaeter, lauf.stufen, lauf.faelle)  # one that asks nothing: the user's
    if all(STUFE[f.stufe].bfcl for f in faelle):  # BFCL's: its expected calls are no answer the endpoint could give
        je = collections.Counter(f.stufe for f in gefragt)
        print(f"Read {mal(len(gefragt), 'BFCL case')} from {lauf.faelle}: "
              f"{', '.join(f'{s} {n}' for s, n in je.items())}. The self-test asks nothing of them; "
              "point --url at a server to measure them.")
        return 0
    lauf = lauf._replace(ziehung=os.urandom(8).hex(), welt_salz=os.urandom(8).hex())  # known to the endpoint too
    server, adresse = selbsttest_server(faelle, katalog=lauf.katalog, ziehung=lauf.ziehung, n=lauf.n,
                                        welt_salz=lauf.welt_salz)
    try:
        with tempfile.TemporaryDirectory() as ordner:
            k = lauf_messen(lauf._replace(url=adresse, modell="selbsttest", tag="selbsttest",
                                          ausgabe=Path(ordner), neu=False, ohne_proxy=True), faelle, sha, False)
    except Abbruch as e:
        if isinstance(e, Unterbrochen):
            raise
        ursache = getattr(e, "ursache", e)  # its folder is gone: no word of resuming it
        grund = f"cannot write its results ({ursache.strerror or ursache})" if isinstance(ursache, OSError) \
            else str(ursache).splitlines()[0]
        raise Abbruch(f"the self-test failed: {grund}; {selbsttest_schuld(lauf.faelle, faelle)}") from None
    finally:
        server.shutdown()
        server.server_close()
    anteile = [x for f in figuren(k) if f.anteil and (x := getattr(k, f.name)) is not None] + \
        [x for x in k.stufen.values() if x is not None]  # None: a case file without that stage
    if any(x != 1 for x in anteile) or diagnose_befunde(k.diagnose):  # a line of the diagnosis: not all clear
        raise Abbruch(f"the self-test did not score 100 % everywhere: "
                      f"{selbsttest_schuld(lauf.faelle, faelle, k.stufen)}")
    return 0


def selbsttest_schuld(datei, faelle, stufen=None):
    """Whom a failed self-test blames: two cases that ask one question but expect different calls cannot both be
    answered right, so the case file is at fault; a stage asked another way than the chapter's whose row does not
    say how the loopback endpoint answers it (Weise.antworten) cannot be answered, so that row is; only otherwise
    this installation is. stufen: the run's share per stage, where it came to figures."""
    erste = {}  # question -> first case asking it
    for f in faelle:
        anderer = erste.setdefault(f.frage, f)
        if f.art.weise.alle(anderer) != f.art.weise.alle(f):
            return (f"{datei}:{anderer.zeile} ({anderer.id}) and {datei}:{f.zeile} ({f.id}) ask the "
                    "same question but expect different calls; the case file is at fault")
    ohne = [s.name for s in STUFEN_TABELLE if (stufen or {}).get(s.name) not in (None, 1)
            and s.weise.nachrichten is not weise_nachrichten and s.weise.antworten is weise_antworten]
    if ohne:
        return (f"{', '.join(ohne)} {'is' if len(ohne) == 1 else 'are'} asked another way than the chapter's, and "
                "the row does not say how the self-test's endpoint answers it (Weise.antworten): the stage's row "
                "is at fault, not this installation")
    return "this installation is broken"


def pyplot():
    """matplotlib's pyplot without a screen; exit 2 naming the install when it is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise Eingabefehler("--bild needs matplotlib: pip install matplotlib (or pip install 'messen[bild]')") \
            from None
    # text in an SVG stays text; a name with $ in it is drawn as written, never as mathtext
    plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "text.parse_math": False})
    return plt


def kopfzahl(k):
    """The headline a run shows (its first measured: auftraege_gelungen; in a run of S7 alone, erledigt), its value,
    its interval and its value with every call from tool_calls."""
    f = next((f for f in KOPF_FIGUREN if getattr(k, f.name) is not None), KOPF_FIGUREN[0])
    return f, getattr(k, f.name), getattr(k, f.ki), getattr(k, f.nativ)


def bfcl_balken(achse, k, gezeigte_stufen, versatz, breite, label):
    """BFCL's own verdict per category, an outline over the bar as meant: where the two differ, it shows."""
    if k.bfcl:
        gemessen = [(j, s) for j, s in enumerate(gezeigte_stufen) if s in k.bfcl.stufen]
        achse.bar([j + versatz for j, _ in gemessen], [100 * k.bfcl.stufen[s] for _, s in gemessen], breite,
                  hatch="//", fill=False, label=label)


def zeichne(pfad, laeufe, satz=None):
    """Each run's stage line as bars, the headline with its interval, the failure classes per output
    (shares, so that runs with different --n compare), side by side, each bar with its value; under the title, a
    comparison's verdict (satz), "cannot tell" and why where the runs are not comparable."""
    plt = pyplot()
    fig, (stufen, kopf, arten) = plt.subplots(1, 3, figsize=(13, 4.6), gridspec_kw={"width_ratios": [3, 1.3, 3]})
    ks = [r.kennzahlen for r in laeufe]
    breite = 0.8 / len(laeufe)
    gezeigt = [a for a in FEHLERARTEN if any(k.fehlerarten[a] for k in ks)] or ["kein_aufruf"]
    gezeigte_stufen = stufen_von(*ks)
    nativ = any(kopfzahl(k)[3] != kopfzahl(k)[1] for k in ks)
    for i, (e, k) in enumerate((r.einstellungen, r.kennzahlen) for r in laeufe):
        versatz = (i - (len(laeufe) - 1) / 2) * breite
        gemessen = [(j, s) for j, s in enumerate(gezeigte_stufen) if k.stufen.get(s) is not None]  # no bar at 0
        balken = stufen.bar([j + versatz for j, _ in gemessen], [100 * k.stufen[s] for _, s in gemessen], breite,
                            label=sichtbar(e["tag"]))
        stufen.bar_label(balken, fmt="%.0f", fontsize=7)
        bfcl_balken(stufen, k, gezeigte_stufen, versatz, breite, "BFCL's verdict (hatched)" if i == 0 else None)
        _, kopfwert, ki, kopfwert_nativ = kopfzahl(k)
        if kopfwert is not None:  # a run of S6 alone has none of the chapter's tasks, nor a job
            (lo, hi), wert_ = ki, 100 * kopfwert
            fehler = [[max(0.0, wert_ - 100 * lo)], [max(0.0, 100 * hi - wert_)]]  # subtle: 0.9999... at 100 %
            kopf.bar_label(kopf.bar(i - 0.15 * nativ, wert_, 0.6 - 0.3 * nativ, yerr=fehler, capsize=4), fmt="%.1f",
                           fontsize=7, padding=6)
            if nativ:  # what an agent on the server gets done, beside the figure as meant, where they differ
                kopf.bar_label(kopf.bar(i + 0.2, 100 * kopfwert_nativ, 0.25, hatch="//", fill=False), fmt="%.1f",
                               fontsize=7)
        anteile = [100 * k.fehlerarten[a] / max(1, k.ausgaben) for a in gezeigt]
        arten.bar_label(arten.bar([j + versatz for j in range(len(gezeigt))], anteile, breite), fmt="%.0f", fontsize=7)
    stufen.set(xticks=range(len(gezeigte_stufen)), ylim=(0, 112),
               ylabel=f"tasks done, % (auftraege_gelungen{''.join(eigene)})" if (eigene := [
                   f"; {s}: {f.name}" for s in gezeigte_stufen for f in STUFE[s].figuren if f.ki]) else
               "tasks done (auftraege_gelungen), %", title="By stage")
    bfcl = any(STUFE[s].bfcl for s in gezeigte_stufen)  # a category names itself; its names are long: slanted
    stufen.set_xticklabels(gezeigte_stufen if bfcl else [f"{s}\n{STUFE[s].was}" for s in gezeigte_stufen],
                           **({"rotation": 30, "ha": "right"} if bfcl else {}))
    stufen.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16 - 0.1 * bfcl), ncol=len(laeufe), frameon=False)
    zahl = kopfzahl(ks[0])[0] if len({kopfzahl(k)[0] for k in ks}) == 1 else KOPF_FIGUREN[0]  # the one all show
    kopf.set(xticks=range(len(laeufe)), xticklabels=[sichtbar(r.tag) for r in laeufe], ylim=(0, 112), ylabel="%",
             title=f"{zahl.titel}, 95 % interval" + f"\nhatched: {zahl.nativ}, every call from tool_calls" * nativ)
    arten.set(xticks=range(len(gezeigt)), ylabel="per 100 outputs", title="Failure classes")
    arten.set_xticklabels(gezeigt, rotation=30, ha="right")
    titel = [sichtbar(" | ".join(f"{e['tag']}: {e['modell']}, {e['datum']}" + (
        "" if vollstaendig(e, r.kennzahlen) else f", incomplete ({komplett([r])[0]})")
        for r in laeufe for e in [r.einstellungen]))] + textwrap.wrap(sichtbar(satz or ""), 160)
    fig.suptitle("\n".join(titel), fontsize=10 if len(titel) == 1 else 8)
    notizen = [sichtbar(f"{r.tag}: diagnosis: {diagnose_kurz(r.kennzahlen.diagnose)}") for r in laeufe
               if diagnose_kurz(r.kennzahlen.diagnose)]
    if notizen:  # what the server did stands beside the bars, so that a fixed template never reads as a regression
        fig.text(0.01, 0.005, "\n".join(notizen), fontsize=7, va="bottom")
    fig.tight_layout(rect=(0, 0.03 * len(notizen), 1, 1 - 0.03 * (len(titel) - 1)))
    try:
        fig.savefig(pfad)
    except OSError as e:
        raise Eingabefehler(f"--bild {pfad}: cannot write the picture ({e.strerror})") from None
    finally:
        plt.close(fig)

# ---------------------------------------------------------------------------
# The status line: what a run shows on stderr while it measures
# ---------------------------------------------------------------------------


TAKT = {True: 2.0, False: 60.0}  # seconds between status lines: on a terminal, into a file or pipe


class Anzeige:
    """What shows on stderr while requests are in flight, so that no wait is blind: a line drawn every TAKT
    seconds (zeige), what is in flight and for how long, and each request asked again with why, said at once.
    Endpunkt reports each request to it (gefragt, zurueck, nochmal)."""

    def __init__(self, terminal=None):
        self.start, self.anfragen, self.zeiten = time.monotonic(), [], []  # (whose, seconds) each took; when it came
        self.unterwegs, self.sperre = {}, threading.Lock()  # a request in flight -> (whose, since when)
        self.terminal = sys.stderr.isatty() if terminal is None else terminal
        self.halt = threading.Event()
        threading.Thread(target=self.ticke, daemon=True).start()

    def ticke(self):
        while not self.halt.wait(TAKT[self.terminal]):
            self.zeige(takt=True)

    def gesendet(self, wer):
        """A request sent; the key its end is reported with."""
        schluessel = object()
        with self.sperre:
            self.unterwegs[schluessel] = (wer, time.monotonic())
        return schluessel

    def zurueck(self, schluessel, sekunden=None):
        """A request ended: answered (its seconds), or given up."""
        with self.sperre:
            wer, _ = self.unterwegs.pop(schluessel, (None, None))
            if sekunden is not None:
                self.anfragen.append((wer, sekunden))
                self.zeiten.append(time.monotonic())

    def nochmal(self, wer, grund, versuch, versuche):
        self.schreibe(f"messen: {wer}: {grund}; asking again (attempt {versuch} of {versuche})\n", neu=True)

    def schreibe(self, text, neu=False):
        """Write a status line: its own carriage return and erase as they are, what it shows made visible."""
        kopf, fuss = "\r" * text.startswith("\r"), "\033[K" * text.endswith("\033[K")
        text = ("\r\033[K" if neu and self.terminal else "") + kopf + sichtbar(text[len(kopf):len(text) - len(fuss)])
        with self.sperre:
            roh = getattr(sys.stderr, "roh", sys.stderr)
            roh.write(text + fuss)
            roh.flush()

    def in_flug(self, jetzt):
        """', in flight: S2-5 for 0:45 and 2 more', or ''."""
        with self.sperre:
            unterwegs = sorted(self.unterwegs.values(), key=lambda x: x[1])
        if not unterwegs:
            return ""
        wer, seit = unterwegs[0]
        return f", in flight: {wer} for {uhrzeit(jetzt - seit)}" + \
            (f" and {len(unterwegs) - 1} more" if len(unterwegs) > 1 else "")

    def ende(self):
        self.halt.set()
        if self.terminal:
            self.schreibe("\n")


class Fortschritt(Anzeige):
    """What a run shows on stderr from its first second: on a terminal one line, rewritten at every output and
    every TAKT seconds (done of all, the time so far and left, the median request, what is in flight); into a file
    or pipe a line at every tenth output and once a minute. The time left: the requests still expected at the
    pace they came back lately (resttakt)."""

    def __init__(self, fertig, gesamt, offen, terminal=None, parallel=1, je_anfrage=False):
        self.fertig, self.gesamt, self.offen = fertig, gesamt, offen  # offen: requests the outputs left expect
        self.je_anfrage = je_anfrage  # outputs of many requests each (S7, BFCL's multi-turn): the requests counted
        self.parallel, self.fall_id = parallel, ""  # --parallel: the answers that come back in one bunch (resttakt)
        super().__init__(terminal)
        if self.terminal:  # from the first second, before any answer
            self.zeige()

    def weiter(self, a, fall_id, erwartet=1):
        with self.sperre:
            self.fertig, self.offen, self.fall_id = self.fertig + 1, self.offen - erwartet, fall_id
        zehntel = self.fertig == self.gesamt or self.fertig * 10 // self.gesamt != (self.fertig - 1) * 10 // self.gesamt
        if self.terminal or zehntel:
            self.zeige()

    def zeige(self, takt=False):
        if self.terminal:
            self.schreibe(f"\rmessen: {self.fertig}/{self.gesamt} {self.fall_id:<8} {self.stand()}\033[K")
        elif takt:
            self.schreibe(f"messen: {self.fertig}/{self.gesamt} outputs, {self.stand()}\n")
        else:  # subtle: one write with its newline, so that Ctrl-C cannot fall between the line and its end
            self.schreibe(f"messen: {self.fertig}/{self.gesamt} outputs\n")

    def stand(self):
        """'2:14 so far, 27.1 s a request (median), about 8:40 left (6:10 to 11:20), in flight: S2-5 for 0:45'."""
        jetzt = time.monotonic()
        with self.sperre:
            teile = [f"{len(self.anfragen):,} requests"] * self.je_anfrage + [
                f"{uhrzeit(jetzt - self.start)} so far"] + (
                [f"{statistics.median(s for _, s in self.anfragen):.1f} s a request (median)"] if self.anfragen else [])
            rest = resttakt(self.zeiten, self.offen, self.start, self.parallel, jetzt) \
                if self.fertig < self.gesamt else None
        if rest:
            teile.append(f"about {uhrzeit(rest[0])} left ({uhrzeit(rest[1])} to {uhrzeit(rest[2])})")
        return ", ".join(teile) + self.in_flug(jetzt)


class Pruefstand(Anzeige):
    """What --pruefen shows on stderr while a check runs: its name as it starts; on a terminal a line ticking
    with the seconds it has taken and the request in flight, cleared before the check's line is printed."""

    def __init__(self, terminal=None):
        self.was, self.seit = None, time.monotonic()
        self.zugleich = None  # (an answer asked alone, two rounds of its copies asked at once): --parallel's gain
        super().__init__(terminal)

    def beginne(self, was):
        self.was, self.seit = was, time.monotonic()
        self.schreibe(f"\rmessen: checking {was} ...\033[K" if self.terminal else f"messen: checking {was} ...\n")

    def zeige(self, takt=False):
        if self.was and self.terminal:
            jetzt = time.monotonic()
            self.schreibe(f"\rmessen: checking {self.was}, {uhrzeit(jetzt - self.seit)}{self.in_flug(jetzt)}\033[K")

    def loesche(self):
        """Clear the ticking line, so that a check's line on stdout stands alone."""
        if self.terminal:
            self.schreibe("\r\033[K")


def resttakt(zeiten, offen, start, parallel=1, jetzt=None):
    """(seconds left, low, high), or None until five requests and a tenth of those expected came back: the requests
    still expected (offen) times the mean gap, its longest left out (one request held does not move it), over the
    run or over its last K (half the run, 5 to 60) where that is slower (a server slowing down); a median of the
    last few would leap between short and long answers. The range from those K gaps' quartiles and the run's
    median gap, widened by 1 + 1/sqrt(K), its high end
    never above the slowest gap so far (the open one since the last answer too) for each request left. Between
    answers (jetzt)
    all three count down, by at most one request's share: the request in flight overdue, the rest still take
    their pace, and the high end grows with the seconds it has taken.
    subtle: with --parallel P, answers come back in bunches of P (gaps of 0.3 s and 7.7 s in turn), whose median
    is either; a gap is taken over P answers and divided by P, which is the pace whatever the bunching."""
    n, offen = len(zeiten), max(0, offen)
    if n < 5 or n < (n + offen) / 10:
        return None
    p = max(1, min(parallel, n))
    luecken = [(b - a) / p for a, b in zip([start] * p + zeiten, zeiten)]  # seconds per answer, over P answers
    seit = 0 if jetzt is None else max(0, jetzt - zeiten[-1])
    k = max(5, min(60, n // 2))
    viertel, alle, weit = statistics.quantiles(luecken[-k:], n=4), statistics.median(luecken), 1 + 1 / math.sqrt(k)
    mitte = offen * max(ohne_laengste(luecken), ohne_laengste(luecken[-k:]))
    tief, hoch = offen * min(viertel[0], alle) / weit, offen * max(viertel[2], alle) * weit
    danach = (max(1, offen) - 1) / max(1, offen)  # the share of the requests after the one in flight
    hoch = max(hoch - seit, hoch * danach + seit - mitte / max(1, offen))
    return (max(mitte - seit, mitte * danach), max(tief - seit, tief * danach),
            min(hoch, offen * max(luecken + [(seit + zeiten[-1] - zeiten[-p]) / p])))


def ohne_laengste(luecken):
    """The mean of the gaps but the longest one."""
    return statistics.fmean(sorted(luecken)[:-1])


def uhrzeit(sekunden):
    """134 -> '2:14', 4000 -> '1:06:40'."""
    s = int(round(sekunden))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"

# ---------------------------------------------------------------------------
# Run as a script
# ---------------------------------------------------------------------------


if __name__ == "__main__":
    sys.exit(main())
