#!/usr/bin/env python3
"""messen.py - a test bench for tool calling behind an OpenAI-compatible endpoint.

It sends 42 hand-set cases (faelle.jsonl) to a chat-completions endpoint with an
eleven-tool catalogue, reads the calls out of every answer, grades them
structurally (passt, bewerte) and prints five metrics and the line per stage:

    formkorrekt          share of S1-S3 outputs a call can be read from
    richtig_je_schritt   expected calls hit, across all steps
    auftraege_gelungen   outputs with every step right and nothing spare
    schritte_je_auftrag  calls emitted per output
    stillgehalten        share of S4/S5 outputs without any call

Usage:
    python3 messen.py --url http://localhost:8009/v1/chat/completions \\
        --modell qwen3.8-27b --temp 0.0 --n 1 --tag gross
    python3 messen.py --selbsttest          # loopback endpoint, must print 100 %
    python3 messen.py --bewerten gross      # grade a saved run again, no server
    python3 messen.py --vergleich gross klein

Exit status: 0 a complete measurement, 1 the run failed (server or network),
2 bad usage or bad input, 130 interrupted. Every answered output is kept in
ergebnisse/<tag>.jsonl; the same command again asks only for what is missing.

What it deliberately does not do: it never executes a tool (one answer per case,
no second turn), never compares text (a call is a name plus a dictionary), never
normalises values beyond stripping whitespace ("1.5" is not "15", "Kunde" is not
"kunde"), and never grades a transport failure as an answer.
"""

import argparse
import datetime
import hashlib
import json
import math
import os
import queue
import random
import re
import statistics
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import requests
from requests.adapters import HTTPAdapter
from requests.auth import AuthBase
from urllib3.util.retry import Retry

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
        "status": {"type": "string", "enum": STATUS, "description": "Only contacts with this status."},
    }, []),
    _werkzeug("get_contact", "Fetch one contact with all its details.",
              {"contact_id": CONTACT_ID}, ["contact_id"]),
    _werkzeug("create_contact", "Create a new contact.", {
        "name": _text("First and last name, as written in the request."),
        "email": _text("Email address, as written in the request."),
        "company": _text("Company name, as written in the request."),
    }, ["name"]),
    _werkzeug("update_contact", "Change fields of an existing contact; pass only the fields to change.", {
        "contact_id": CONTACT_ID,
        "status": {"type": "string", "enum": STATUS, "description": "The new status."},
        "email": _text("The new email address."),
        "company": _text("The new company name."),
    }, ["contact_id"]),
    _werkzeug("delete_contact", "Delete a contact for good.", {"contact_id": CONTACT_ID}, ["contact_id"]),
    _werkzeug("add_note", "Add a text note to a contact.", {
        "contact_id": CONTACT_ID,
        "text": _text("The note, word for word as given in the request."),
    }, ["contact_id", "text"]),
    _werkzeug("list_calendars", "List the calendars and their keys.", {}, []),
    _werkzeug("get_events", "List the events of one calendar on one day.", {
        "calendar": {"type": "string", "enum": KALENDER, "description": "The calendar's key."},
        "date": DATUM,
    }, ["calendar", "date"]),
    _werkzeug("create_event", "Put an event into a calendar.", {
        "calendar": {"type": "string", "enum": KALENDER, "description": "The calendar's key."},
        "title": _text("The event's title, as written in the request."),
        "date": DATUM,
        "start": _zeit("Start time"),
        "end": _zeit("End time"),
    }, ["calendar", "title", "date", "start", "end"]),
    _werkzeug("book_room", "Book a meeting room.", {
        "room": {"type": "string", "enum": RAEUME, "description": "The room's name."},
        "date": DATUM,
        "start": _zeit("Start time"),
        "end": _zeit("End time"),
    }, ["room", "date", "start", "end"]),
    _werkzeug("send_email", "Send an email.", {
        "to": _text("The recipient's email address."),
        "subject": _text("The subject line, word for word as given in the request."),
        "body": _text("The message text, word for word as given in the request."),
    }, ["to", "subject", "body"]),
]
WERKZEUGE = {w["function"]["name"]: w["function"]["parameters"] for w in KATALOG}  # name -> parameters

# ---------------------------------------------------------------------------
# The opening (system message) and the stages
# ---------------------------------------------------------------------------

EROEFFNUNG = """\
You are the assistant of a small company's CRM. You work with its contacts, calendars and meeting rooms through the tools you are given.

Today is Monday, 2026-03-16. "Tomorrow" is 2026-03-17.

The calendars and their keys:
- team: the team calendar
- vertrieb: the sales calendar
- raum: the room-booking calendar (it records bookings; it is not a room)
- privat: the user's private calendar
The meeting rooms are besprechung, konferenz and workshop.

Rules:
- When a tool fits the request, call it, with every value exactly as the request gives it. When the request needs several calls, make them all in this one answer.
- When a tool fits but a mandatory value is missing from the request and cannot be derived from it or from this message, do not guess and do not look it up: ask the user for it.
- A contact is addressed only by its contact_id; a name is not enough.
- When no tool fits, answer in text."""

STUFEN = ("S1", "S2", "S3", "S4", "S5")
STILL = ("S4", "S5")  # stages where the right answer is no call at all

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


class Unterbrochen(Abbruch):
    status = 130


# ---------------------------------------------------------------------------
# Loading and checking faelle.jsonl
# ---------------------------------------------------------------------------

FELDER = {"id": str, "stufe": str, "frage": str, "erwartet": list}


def lade_faelle(pfad):
    """Read and check the case file; return (faelle, sha256 of the file).

    Every violation names file:line."""
    try:
        daten = Path(pfad).read_bytes()
    except OSError as e:
        raise Eingabefehler(f"{pfad}: cannot read the case file ({e.strerror})")
    try:
        text = daten.decode("utf-8")
    except UnicodeDecodeError as e:
        zeile = daten[:e.start].count(b"\n") + 1
        raise Eingabefehler(f"{pfad}:{zeile}: not UTF-8")
    faelle, gesehen = [], {}  # gesehen: id -> line
    for nr, zeile in enumerate(text.splitlines(), 1):
        if not zeile.strip():
            continue
        try:
            fall = json.loads(zeile)
        except ValueError as e:
            raise Eingabefehler(f"{pfad}:{nr}: not JSON ({e.msg})")
        fehler = pruefe_fall(fall)
        if not fehler and fall["id"] in gesehen:
            fehler = f"duplicate id {fall['id']} (first on line {gesehen[fall['id']]})"
        if fehler:
            raise Eingabefehler(f"{pfad}:{nr}: {fehler}")
        gesehen[fall["id"]] = nr
        fall["_zeile"] = nr
        faelle.append(fall)
    if not faelle:
        raise Eingabefehler(f"{pfad}: no cases in the file")
    return faelle, hashlib.sha256(daten).hexdigest()


def pruefe_fall(fall):
    """Return what is wrong with one case, or None."""
    if not isinstance(fall, dict):
        return "a case must be a JSON object"
    for feld, typ in FELDER.items():
        if not isinstance(fall.get(feld), typ) or (typ is str and not fall[feld].strip()):
            return f"field '{feld}' missing or not a {'list' if typ is list else 'non-empty string'}"
    if fall["stufe"] not in STUFEN:
        return f"unknown stage '{fall['stufe']}' (known: {', '.join(STUFEN)})"
    for soll in fall["erwartet"]:
        fehler = pruefe_aufruf(soll)
        if fehler:
            return fehler
    if fall["stufe"] in STILL and fall["erwartet"]:
        return f"stage {fall['stufe']} expects no call, but 'erwartet' lists {len(fall['erwartet'])}"
    if fall["stufe"] not in STILL and not fall["erwartet"]:
        return f"stage {fall['stufe']} expects at least one call"
    return pruefe_nur(fall)


def pruefe_aufruf(soll):
    if not isinstance(soll, dict) or not isinstance(soll.get("name"), str) or not isinstance(soll.get("args"), dict):
        return "each expected call must be {\"name\": string, \"args\": object}"
    if soll["name"] not in WERKZEUGE:
        return f"expected tool '{soll['name']}' is not in the catalogue"
    parameter = WERKZEUGE[soll["name"]]
    fremd = sorted(set(soll["args"]) - set(parameter["properties"]))
    if fremd:
        return f"{soll['name']} has no argument '{fremd[0]}'"
    fehlt = [p for p in parameter["required"] if p not in soll["args"]]
    if fehlt:
        return f"expected call {soll['name']} lacks its required argument '{fehlt[0]}'"
    return None


def pruefe_nur(fall):
    if "nur" not in fall:
        return "stage S1 needs 'nur' (the tools offered)" if fall["stufe"] == "S1" else None
    if fall["stufe"] != "S1":
        return f"'nur' narrows the catalogue in S1 only, not in {fall['stufe']}"
    nur = fall["nur"]
    if not isinstance(nur, list) or not nur or not all(isinstance(n, str) for n in nur):
        return "'nur' must be a non-empty list of tool names"
    unbekannt = [n for n in nur if n not in WERKZEUGE]
    if unbekannt:
        return f"'nur' names '{unbekannt[0]}', which is not in the catalogue"
    fehlt = [s["name"] for s in fall["erwartet"] if s["name"] not in nur]
    if fehlt:
        return f"'nur' leaves out the expected tool '{fehlt[0]}'"
    return None


# ---------------------------------------------------------------------------
# Asking the endpoint: the only network code
# ---------------------------------------------------------------------------

RETRY_STATUS = (408, 429, 500, 502, 503, 504)
BACKOFF = 0.5  # seconds; urllib3 waits 0, 1, 2, 4 ... between attempts

HINWEISE = [  # (pattern in a server's message, what to do about it)
    (r"--enable-auto-tool-choice", "start vLLM with --enable-auto-tool-choice --tool-call-parser <the model's parser>"),
    (r"--jinja", "start llama-server with --jinja"),
    (r"does not support tools", "this Ollama model's template has no tools; pick a model that supports them"),
    (r"context (length|size|window)", "the question and catalogue exceed the server's context; start it with a larger one"),
    (r"does not exist|not found", "check --modell and --url against the server's /v1/models"),
]
KEY_HINWEIS = "put the key in OPENAI_API_KEY or name its variable with --key-env"


def anfrage(fall, modell, temp, extra):
    """The request body for one case."""
    werkzeuge = KATALOG
    if "nur" in fall:
        werkzeuge = [w for w in KATALOG if w["function"]["name"] in fall["nur"]]
    body = {
        "model": modell,
        "messages": [{"role": "system", "content": EROEFFNUNG}, {"role": "user", "content": fall["frage"]}],
        "tools": werkzeuge,
        "tool_choice": "auto",
        "temperature": temp,
    }
    body.update(extra)
    return body


class BearerAuth(AuthBase):
    """The API key as a bearer token; as requests auth it wins over user:password in the URL."""

    def __init__(self, key):
        self.key = key

    def __call__(self, r):
        r.headers["Authorization"] = f"Bearer {self.key}"
        return r


class Endpunkt:
    """One chat-completions endpoint; a requests session per thread."""

    def __init__(self, url, modell, temp, extra, key, timeout, versuche):
        self.url, self.modell, self.temp, self.extra = url, modell, temp, extra
        self.timeout, self.versuche = timeout, versuche
        self.auth = BearerAuth(key) if key else None  # None: user:password in the URL, if any, as Basic
        self._lokal = threading.local()

    def session(self):
        s = getattr(self._lokal, "session", None)
        if s is None:
            retry = Retry(total=self.versuche - 1, allowed_methods=None, status_forcelist=RETRY_STATUS,
                          backoff_factor=BACKOFF, respect_retry_after_header=True, raise_on_status=False)
            s = self._lokal.session = requests.Session()
            s.mount("http://", HTTPAdapter(max_retries=retry))
            s.mount("https://", HTTPAdapter(max_retries=retry))
        return s

    def frage(self, fall):
        """Ask one case; return (message, usage, latency) or raise Serverfehler."""
        body = anfrage(fall, self.modell, self.temp, self.extra)
        for versuch in range(1, self.versuche + 1):
            start = time.perf_counter()
            try:
                r = self.session().post(self.url, json=body, auth=self.auth, timeout=self.timeout)
            except requests.RequestException as e:
                raise Serverfehler(f"{fall['id']}: no answer from the server after {self.versuche} attempts: {grund(e)}")
            latenz = time.perf_counter() - start
            if not 200 <= r.status_code < 300:
                raise Serverfehler(f"{fall['id']}: the server answered {r.status_code}: {servermeldung(r.text, r.status_code)}")
            nachricht, usage = chat_nachricht(r)
            if nachricht is not None:
                return nachricht, usage, latenz
            # subtle: a proxy's HTML page arrives as 200; it is a fault, never an answer
            if 1 < versuch < self.versuche:  # the waits urllib3's Retry makes: 0, 1, 2 s ...
                time.sleep(BACKOFF * 2 ** (versuch - 1))
        raise Serverfehler(f"{fall['id']}: the server answered {r.status_code} but not with a chat completion "
                           f"({self.versuche} attempts): {servermeldung(r.text)}")


def chat_nachricht(r):
    """The assistant message and usage of a chat completion, or (None, None)."""
    try:
        body = r.json()
    except ValueError:
        return None, None
    wahl = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(wahl, list) or not wahl or not isinstance(wahl[0], dict):
        return None, None
    nachricht = wahl[0].get("message")
    if not isinstance(nachricht, dict):
        return None, None
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    return nachricht, usage


def servermeldung(text, status=None):
    """The server's own message from each real error shape, plus a hint."""
    meldung = None
    try:
        body = json.loads(text)
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
        zeilen = [z.strip() for z in re.sub(r"<[^>]*>", "\n", text or "").splitlines() if z.strip()]
        meldung = zeilen[0] if zeilen else "(empty body)"
    meldung = " ".join(meldung.split())[:300]
    for muster, hinweis in HINWEISE:
        if re.search(muster, meldung, re.I):
            return f"{meldung} ({hinweis})"
    return f"{meldung} ({KEY_HINWEIS})" if status == 401 else meldung


def grund(e):
    """The innermost reason of a requests exception, in one line."""
    innen = e.args[0] if e.args else e
    innen = getattr(innen, "reason", None) or innen  # urllib3's MaxRetryError carries the cause
    return " ".join(f"{type(innen).__name__}: {innen}".split())[:300]


# ---------------------------------------------------------------------------
# Reading calls out of an answer: native tool_calls, then text forms
# ---------------------------------------------------------------------------

DENKEN = re.compile(r"<think>.*?</think>", re.S)
HERMES = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.S)
MISTRAL_ARGS = re.compile(r"\s*([A-Za-z_][\w.-]*)\s*(?:\[CALL_ID\]\s*\w+\s*)?\[ARGS\]")
FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)
SONDERTOKEN = re.compile(r"<\|(?:eom_id|eot_id|end|im_end)\|>|</s>")
NAME_IM_TEXT = re.compile(r'"name"\s*:\s*"([^"]*)"')


def lies_aufrufe(nachricht):
    """Return (calls, read_from_text); a call is {"name": str|None, "args": dict|None}."""
    roh = nachricht.get("tool_calls") or []
    if not roh and isinstance(nachricht.get("function_call"), dict):
        roh = [{"function": nachricht["function_call"]}]  # the pre-tools OpenAI shape
    if roh:
        return [nativer_aufruf(c) for c in roh], False
    aufrufe = text_aufrufe(inhalt(nachricht))
    return aufrufe, bool(aufrufe)


def nativer_aufruf(c):
    f = c.get("function") if isinstance(c, dict) else None
    if not isinstance(f, dict) or not isinstance(f.get("name"), str):
        return {"name": None, "args": None}
    return {"name": f["name"], "args": lies_args(f.get("arguments"))}


def lies_args(arguments):
    """Arguments as a dict; None when they do not parse to a JSON object."""
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}  # llama.cpp and others send "" for a call without arguments
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    return arguments if isinstance(arguments, dict) else None


def inhalt(nachricht):
    """The message's text: a string, or the text parts of a content list."""
    c = nachricht.get("content")
    if isinstance(c, list):
        c = "".join(t.get("text", "") for t in c if isinstance(t, dict) and isinstance(t.get("text"), str))
    return c if isinstance(c, str) else ""


def text_aufrufe(text):
    """Calls written as text when the server's tool-call parser is off."""
    text = DENKEN.sub("", text)
    if "</think>" in text:  # the template opened <think> itself
        text = text.rsplit("</think>", 1)[1]
    text = SONDERTOKEN.sub("", text.split("<think>", 1)[0]).strip()
    if "<tool_call>" in text:  # Hermes, Qwen: one block per call
        return [a for block in HERMES.findall(text) for a in json_aufrufe(block, True)]
    if "[TOOL_CALLS]" in text:  # Mistral
        return mistral_aufrufe(text.split("[TOOL_CALLS]", 1)[1])
    if "<|python_tag|>" in text:  # Llama 3.x, several joined by "; "
        return json_aufrufe(text.split("<|python_tag|>", 1)[1], True)
    m = FENCE.match(text)
    return json_aufrufe(m.group(1) if m else text, False)


def mistral_aufrufe(rest):
    rest = rest.strip()
    if rest.startswith(("[", "{")):
        return json_aufrufe(rest, True)
    aufrufe = []  # the newer form: name[ARGS]{...}name[ARGS]{...}
    while rest:
        m = MISTRAL_ARGS.match(rest)
        if not m:
            break
        try:
            args, ende = json.JSONDecoder().raw_decode(rest, m.end())
        except ValueError:
            return aufrufe + [{"name": m.group(1), "args": None}]
        aufrufe.append({"name": m.group(1), "args": lies_args(args)})
        rest = rest[ende:].lstrip()
    return aufrufe or [{"name": None, "args": None}]


def json_aufrufe(text, getaggt):
    """Calls from a run of JSON values; a tagged form that does not parse is one malformed call.

    Untagged text counts as calls only when all of it is call-shaped JSON; a text
    that merely starts like one ({"name": ...) and breaks off is a malformed attempt.
    """
    werte = json_folge(text.strip())
    if werte is None:
        if getaggt or re.match(r'\s*\[?\s*\{\s*"name"', text):
            m = NAME_IM_TEXT.search(text)
            return [{"name": m.group(1) if m else None, "args": None}]
        return []
    flach = [w for wert in werte for w in (wert if isinstance(wert, list) else [wert])]
    if not getaggt and not (flach and all(isinstance(w, dict) and isinstance(w.get("name"), str)
                                          and ("arguments" in w or "parameters" in w) for w in flach)):
        return []  # a text answer that happens to be JSON
    return [json_aufruf(w) for w in flach]


def json_aufruf(w):
    if not isinstance(w, dict) or not isinstance(w.get("name"), str):
        return {"name": None, "args": None}
    return {"name": w["name"], "args": lies_args(w.get("arguments", w.get("parameters")))}


def json_folge(text):
    """JSON values separated by whitespace, ';' or ','; None if any part fails to parse."""
    werte, pos, decoder = [], 0, json.JSONDecoder()
    while True:
        while pos < len(text) and text[pos] in " \t\r\n;,":
            pos += 1
        if pos == len(text):
            return werte or None
        try:
            wert, pos = decoder.raw_decode(text, pos)
        except ValueError:
            return None
        werte.append(wert)


# ---------------------------------------------------------------------------
# Grading: structural, never textual (the chapter's passt and bewerte)
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


def bewerte_ausgabe(fall, nachricht):
    """Grade one output: the record a report and the metrics read."""
    aufrufe, aus_text = lies_aufrufe(nachricht)
    treffer, offen = bewerte(aufrufe, fall["erwartet"])
    return {"aufrufe": aufrufe, "aus_text": aus_text, "treffer": treffer, "offen": offen,
            "soll": len(fall["erwartet"]), "fehlerhaft": sum(a["args"] is None for a in aufrufe)}


def gelungen(a):
    """Every expected step hit and nothing spare; never three of four."""
    return a["treffer"] == a["soll"] and a["offen"] == 0


def abweichungen(ist_liste, soll_liste):
    """Why an output failed, in words: which call or argument differed."""
    offen, fehlend = list(ist_liste), []
    for soll in soll_liste:  # take out the hits first, as bewerte does
        i = next((i for i, ist in enumerate(offen) if passt(ist, soll)), None)
        if i is None:
            fehlend.append(soll)
        else:
            offen.pop(i)
    gruende = []
    for soll in fehlend:  # a missed step beside a call of the same tool: name the argument
        i = next((i for i, ist in enumerate(offen) if ist["name"] == soll["name"]), None)
        gruende.append(f"{soll['name']} not called" if i is None else arg_abweichung(offen.pop(i), soll))
    gruende += [f"malformed call {ist['name'] or '?'}" if ist["args"] is None else f"spare call {ist['name']}"
                for ist in offen]
    return gruende


def arg_abweichung(ist, soll):
    if ist["args"] is None:
        return f"{soll['name']}: arguments are not a JSON object"
    teile = []
    for k, v in soll["args"].items():
        if k not in ist["args"]:
            teile.append(f"{k} missing")
        elif str(ist["args"][k]).strip() != str(v):
            teile.append(f"{k} {json.dumps(ist['args'][k], ensure_ascii=False)} instead of {json.dumps(v, ensure_ascii=False)}")
    teile += [f"{k} not expected" for k in ist["args"] if k not in soll["args"]]
    return f"{soll['name']}: " + ", ".join(teile)


# ---------------------------------------------------------------------------
# Metrics: pure functions from graded outputs to figures
# ---------------------------------------------------------------------------

BOOTSTRAP = 2000  # resamples for the interval; seed fixed so a run always prints the same


def anteil(zaehler, nenner):
    return zaehler / nenner if nenner else None


def kennzahlen(faelle, ausgaben):
    """The five metrics, the stages, and what repeated runs and costs add."""
    mit = [a for a in ausgaben if a["stufe"] not in STILL]
    still = [a for a in ausgaben if a["stufe"] in STILL]
    je_fall = erfolge_je_fall(faelle, ausgaben)  # id -> (successes, outputs)
    stufe_von = {f["id"]: f["stufe"] for f in faelle}
    k = {
        "faelle": len(faelle),
        "ausgaben": len(ausgaben),
        "formkorrekt": anteil(sum(bool(a["aufrufe"]) and not a["fehlerhaft"] for a in mit), len(mit)),
        "richtig_je_schritt": anteil(sum(a["treffer"] for a in ausgaben), sum(a["soll"] for a in ausgaben)),
        "auftraege_gelungen": anteil(sum(map(gelungen, ausgaben)), len(ausgaben)),
        "schritte_je_auftrag": anteil(sum(len(a["aufrufe"]) for a in ausgaben), len(ausgaben)),
        "stillgehalten": anteil(sum(not a["aufrufe"] for a in still), len(still)),
        "stufen": {s: anteil(sum(gelungen(a) for a in ausgaben if a["stufe"] == s),
                             sum(a["stufe"] == s for a in ausgaben)) for s in STUFEN},
        "alle_n": anteil(sum(e == m for e, m in je_fall.values()), len(je_fall)),
        "alle_n_stufen": {s: anteil(sum(e == m for i, (e, m) in je_fall.items() if stufe_von[i] == s),
                                    sum(stufe_von[i] == s for i in je_fall)) for s in STUFEN},
        "gelungen_ki": bootstrap_ki(list(je_fall.values())),
        "fehlgeschlagen": [i for i, (e, m) in je_fall.items() if e < m],
        # well-formed calls in the text mean the server's parser is off; a malformed one
        # lands in the text with the parser on too, and is the model's fault
        "aus_text": sum(c["args"] is not None for a in ausgaben if a["aus_text"] for c in a["aufrufe"]),
    }
    k.update(kosten(ausgaben))
    return k


def erfolge_je_fall(faelle, ausgaben):
    """id -> (successes, outputs), in case order, for the cases that have outputs."""
    je_fall = {f["id"]: [0, 0] for f in faelle}
    for a in ausgaben:
        je_fall[a["id"]][0] += gelungen(a)
        je_fall[a["id"]][1] += 1
    return {i: tuple(v) for i, v in je_fall.items() if v[1]}


def bootstrap_ki(paare, stufe=0.95):
    """Percentile bootstrap over cases for sum(successes) / sum(outputs).

    Each case keeps its n outputs together: the cases, not the outputs, are the
    sample, since one case's outputs are not independent of each other.
    """
    if not paare:
        return None
    rng = random.Random(0)
    werte = sorted(sum(e for e, _ in z) / sum(m for _, m in z)
                   for z in (rng.choices(paare, k=len(paare)) for _ in range(BOOTSTRAP)))
    rand = (1 - stufe) / 2
    return [werte[int(rand * BOOTSTRAP)], werte[int((1 - rand) * BOOTSTRAP) - 1]]


def kosten(ausgaben):
    """Median latency, tokens, and wall time summed over the sessions of a run."""
    sitzungen = {}  # session -> (first start, last end)
    for a in ausgaben:
        anfang, ende = a["ende"] - a["latenz_s"], a["ende"]
        alt = sitzungen.get(a["sitzung"], (anfang, ende))
        sitzungen[a["sitzung"]] = (min(alt[0], anfang), max(alt[1], ende))
    return {
        "latenz_s": statistics.median(a["latenz_s"] for a in ausgaben) if ausgaben else None,
        "tokens": {t: sum(int((a.get("usage") or {}).get(f"{t}_tokens") or 0) for a in ausgaben)
                   for t in ("prompt", "completion")},
        "dauer_s": sum(ende - anfang for anfang, ende in sitzungen.values()),
    }


def vorzeichentest(b, c):
    """Exact two-sided sign test (McNemar's exact test on the flipped cases).

    p = min(1, 2 * sum_{i=0}^{min(b,c)} C(b+c, i) / 2^(b+c)); p = 1 when nothing flipped.
    """
    m = b + c
    if m == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(m, i) for i in range(min(b, c) + 1)) / 2 ** m)


# ---------------------------------------------------------------------------
# The saved run: ergebnisse/<tag>.jsonl, a settings line, then one line per output
# ---------------------------------------------------------------------------

VERGLICHEN = ("modell", "temp", "n", "extra", "faelle_sha256", "katalog_sha256")  # must match to resume


def katalog_hash():
    """The catalogue and the opening: both shape every answer."""
    return hashlib.sha256(json.dumps([KATALOG, EROEFFNUNG], sort_keys=True).encode()).hexdigest()


def lies_lauf(pfad, faelle):
    """Settings and graded outputs of a saved run; a half-written last line is dropped.

    A file without one complete line (killed before its settings were written)
    gives (None, [], 0): a fresh start."""
    try:
        daten = pfad.read_bytes()
    except OSError as e:
        raise Eingabefehler(f"{pfad}: cannot read ({e.strerror})")
    zeilen = daten.split(b"\n")
    werte, gueltig = [], 0  # gueltig: bytes up to the end of the last complete line
    for nr, zeile in enumerate(zeilen, 1):
        if nr == len(zeilen):
            break  # subtle: the piece after the last newline is half a line of a killed process
        try:
            wert = json.loads(zeile) if zeile.strip() else None
        except ValueError:
            raise Eingabefehler(f"{pfad}:{nr}: not JSON; the results file is damaged")
        if wert is not None:
            werte.append((nr, wert))
        gueltig += len(zeile) + 1
    if not werte:
        return None, [], 0
    if not isinstance(werte[0][1], dict) or not isinstance(werte[0][1].get("einstellungen"), dict):
        raise Eingabefehler(f"{pfad}:1: not a results file of messen.py (no settings line)")
    faelle_by_id = {f["id"]: f for f in faelle}
    ausgaben = []
    for nr, a in werte[1:]:
        fall = faelle_by_id.get(a.get("id")) if isinstance(a, dict) else None
        if fall is None or not all(f in a for f in SPEICHERFELDER) or not isinstance(a["nachricht"], dict):
            raise Eingabefehler(f"{pfad}:{nr}: not an output of a known case; the results file is damaged")
        a.update(bewerte_ausgabe(fall, a["nachricht"]))  # graded again: the current grader decides
        ausgaben.append(a)
    return werte[0][1]["einstellungen"], ausgaben, gueltig


def pruefe_einstellungen(pfad, alt, neu):
    for feld in VERGLICHEN:
        if alt.get(feld) != neu[feld]:
            was = {"faelle_sha256": "another case file", "katalog_sha256": "another catalogue or opening"}
            anders = was.get(feld, f"{feld} {json.dumps(alt.get(feld))}, not {json.dumps(neu[feld])}")
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


def ordne(pfad, einstellungen, ausgaben, reihenfolge):
    """Rewrite the file in case order once complete, so any --parallel gives the same file."""
    sortiert = sorted(ausgaben, key=lambda a: (reihenfolge[a["id"]], a["lauf"]))
    if [id(a) for a in sortiert] == [id(a) for a in ausgaben]:
        return sortiert
    tmp = pfad.with_name(pfad.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps({"einstellungen": einstellungen}, ensure_ascii=False) + "\n")
        for a in sortiert:
            f.write(json.dumps(speicherform(a), ensure_ascii=False) + "\n")
    os.replace(tmp, pfad)
    return sortiert


SPEICHERFELDER = ("id", "stufe", "lauf", "sitzung", "nachricht", "aufrufe", "treffer", "offen",
                  "latenz_s", "usage", "ende")


def speicherform(a):
    return {f: a[f] for f in SPEICHERFELDER}


# ---------------------------------------------------------------------------
# Measuring: ask every missing output, save each line as it arrives
# ---------------------------------------------------------------------------


def beantworte(endpunkt, auftraege, parallel):
    """Yield (fall, lauf, answer) as answers arrive; K requests in flight at once."""
    if parallel == 1:
        for fall, lauf in auftraege:
            yield fall, lauf, endpunkt.frage(fall)
        return
    warteschlange, fertig, halt = queue.Queue(), queue.Queue(), threading.Event()
    for auftrag in auftraege:
        warteschlange.put(auftrag)

    def arbeiter():
        while not halt.is_set():
            try:
                fall, lauf = warteschlange.get_nowait()
            except queue.Empty:
                return
            try:
                fertig.put((fall, lauf, endpunkt.frage(fall), None))
            except Exception as e:  # handed to the main thread, which stops the run
                fertig.put((fall, lauf, None, e))

    # daemon threads: Ctrl-C or a fault ends the run without waiting for requests in flight
    for _ in range(min(parallel, len(auftraege))):
        threading.Thread(target=arbeiter, daemon=True).start()
    for _ in auftraege:
        fall, lauf, antwort, e = fertig.get()
        if e is None:
            yield fall, lauf, antwort
            continue
        halt.set()
        while True:  # keep what already arrived, then stop
            try:
                fall, lauf, antwort, anderer = fertig.get_nowait()
            except queue.Empty:
                raise e
            if anderer is None:
                yield fall, lauf, antwort


def messe(args, faelle, pfad, einstellungen, ausgaben, start):
    """Ask for the outputs still missing; return all outputs, graded."""
    erledigt = {(a["id"], a["lauf"]) for a in ausgaben}
    auftraege = [(f, lauf) for f in faelle for lauf in range(args.n) if (f["id"], lauf) not in erledigt]
    sitzung = max((a["sitzung"] for a in ausgaben), default=-1) + 1
    endpunkt = Endpunkt(args.url, args.modell, args.temp, args.extra, args.key, args.timeout, args.versuche)
    gesamt = len(faelle) * args.n
    pfad.parent.mkdir(parents=True, exist_ok=True)
    with open(pfad, "r+b" if pfad.exists() else "wb") as roh:
        roh.truncate(start)  # drops a half-written last line
        roh.seek(start)
        if start == 0:
            roh.write((json.dumps({"einstellungen": einstellungen}, ensure_ascii=False) + "\n").encode())
        try:
            for fall, lauf, (nachricht, usage, latenz) in beantworte(endpunkt, auftraege, args.parallel):
                a = {"id": fall["id"], "stufe": fall["stufe"], "lauf": lauf, "sitzung": sitzung,
                     "nachricht": nachricht, "usage": usage, "latenz_s": round(latenz, 4),
                     "ende": round(time.time(), 4)}
                a.update(bewerte_ausgabe(fall, nachricht))
                roh.write((json.dumps(speicherform(a), ensure_ascii=False) + "\n").encode())
                roh.flush()  # answered is saved: an interrupted run loses nothing
                ausgaben.append(a)
                fortschritt(len(ausgaben), gesamt, fall["id"])
        except (Abbruch, KeyboardInterrupt) as e:
            fortschritt_ende()
            weiter = (f"{len(ausgaben)} of {gesamt} outputs are saved in {pfad}; "
                      f"the same command again asks for the {gesamt - len(ausgaben)} missing")
            if isinstance(e, KeyboardInterrupt):
                raise Unterbrochen(f"interrupted; {weiter}") from None
            raise type(e)(f"{e}\nmessen: {weiter}") from None
    fortschritt_ende()
    return ordne(pfad, einstellungen, ausgaben, {f["id"]: i for i, f in enumerate(faelle)})


def fortschritt(fertig, gesamt, fall_id):
    if sys.stderr.isatty():
        print(f"\rmessen: {fertig}/{gesamt} {fall_id:<8}", end="", file=sys.stderr, flush=True)
    elif fertig == gesamt or fertig * 10 // gesamt != (fertig - 1) * 10 // gesamt:
        print(f"messen: {fertig}/{gesamt} outputs", file=sys.stderr, flush=True)


def fortschritt_ende():
    if sys.stderr.isatty():
        print(file=sys.stderr)


# ---------------------------------------------------------------------------
# Report: text, JSON, Markdown
# ---------------------------------------------------------------------------

METRIKEN = ("formkorrekt", "richtig_je_schritt", "auftraege_gelungen", "schritte_je_auftrag", "stillgehalten")
TEXT_HINWEIS = ("calls were read from the answer text, not from tool_calls: that is the server's setting, "
                "not the model's skill (vLLM: --enable-auto-tool-choice --tool-call-parser ...; llama.cpp: --jinja)")


def prozent(x):
    """0.9166 -> '91.7 %', 1.0 -> '100 %' (one decimal, a trailing .0 dropped)."""
    if x is None:
        return "-"
    return f"{x * 100:.1f}".removesuffix(".0") + " %"


def wert(name, x):
    if name == "schritte_je_auftrag":
        return "-" if x is None else f"{x:.2f}"
    return prozent(x)


def stufenzeile(stufen, wort="By stage"):
    return f"{wort}: " + ", ".join(f"{s} {prozent(stufen[s])}" for s in STUFEN if stufen[s] is not None) + "."


def kopfzeile(e, k):
    return (f"Model {e['modell']}, temp {e['temp']}, n {e['n']}, tag {e['tag']}: "
            f"{k['faelle']} cases, {k['ausgaben']} outputs, measured {e['datum']}")


def bericht_text(e, k, faelle, ausgaben):
    zeilen = [kopfzeile(e, k), ""]
    for name in METRIKEN:
        zeile = f"{name:<20} {wert(name, k[name])}"
        if name == "auftraege_gelungen" and k["gelungen_ki"]:
            lo, hi = k["gelungen_ki"]
            zeile += f"   (95 % interval {prozent(lo)} to {prozent(hi)})"
        zeilen.append(zeile)
    if e["n"] > 1:
        zeilen.append(f"{'alle_n':<20} {prozent(k['alle_n'])}   (cases whose {e['n']} outputs all succeeded)")
    zeilen += ["", stufenzeile(k["stufen"])]
    if e["n"] > 1:
        zeilen.append(stufenzeile(k["alle_n_stufen"], f"All {e['n']} by stage"))
    zeilen += ["", f"Latency {k['latenz_s']:.2f} s median per request; tokens {k['tokens']['prompt']} prompt, "
               f"{k['tokens']['completion']} completion; wall time {k['dauer_s']:.1f} s"]
    if k["aus_text"]:
        zeilen.append(f"Note: {k['aus_text']} {TEXT_HINWEIS}.")
    zeilen += fehlschlaege(faelle, ausgaben)
    return "\n".join(zeilen)


def aufruf_text(c):
    if c["args"] is None:
        return f"{c['name'] or '?'}(<malformed arguments>)"
    return f"{c['name']}(" + ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in c["args"].items()) + ")"


def aufrufe_text(liste):
    return "; ".join(map(aufruf_text, liste)) if liste else "no call"


def fehlschlaege(faelle, ausgaben):
    faelle_by_id = {f["id"]: f for f in faelle}
    falsch = [a for a in ausgaben if not gelungen(a)]
    if not falsch:
        return []
    zeilen = ["", f"Failed ({len(falsch)}):"]
    for a in falsch:
        fall = faelle_by_id[a["id"]]
        lauf = f" #{a['lauf'] + 1}" if any(b["lauf"] for b in ausgaben) else ""
        zeilen += [f"  {a['id']}{lauf}  {fall['frage']}",
                   f"      expected: {aufrufe_text(fall['erwartet'])}",
                   f"      came:     {aufrufe_text(a['aufrufe'])}"]
        gruende = abweichungen(a["aufrufe"], fall["erwartet"])
        if gruende:
            zeilen.append(f"      differs:  {'; '.join(gruende)}")
    return zeilen


def bericht_json(e, k):
    return {"modell": e["modell"], "tag": e["tag"], "temp": e["temp"], "n": e["n"],
            **{f: k[f] for f in ("faelle", "ausgaben") + METRIKEN + ("stufen", "alle_n", "alle_n_stufen", "gelungen_ki",
                                                            "fehlgeschlagen", "latenz_s", "tokens", "dauer_s")}}


def bericht_markdown(e, k):
    zeilen = [f"**{e['modell']}** (tag {e['tag']}, temp {e['temp']}, n {e['n']}, {k['faelle']} cases)", "",
              "| metric | value |", "|---|---|"]
    zeilen += [f"| {name} | {wert(name, k[name])} |" for name in METRIKEN]
    if k["gelungen_ki"]:
        zeilen.append(f"| auftraege_gelungen, 95 % interval | {prozent(k['gelungen_ki'][0])} to {prozent(k['gelungen_ki'][1])} |")
    if e["n"] > 1:
        zeilen.append(f"| alle_n | {prozent(k['alle_n'])} |")
    zeilen += [f"| {s} | {prozent(k['stufen'][s])} |" for s in STUFEN if k["stufen"][s] is not None]
    return "\n".join(zeilen)


# ---------------------------------------------------------------------------
# Comparison of two saved runs: --vergleich A B
# ---------------------------------------------------------------------------


def vergleiche(a, b):
    """Per-case success rates of two runs, the flipped cases and the sign test."""
    (ea, ka, ja), (eb, kb, jb) = a, b
    besser, schlechter = [], []  # ids better in B, worse in B
    for fall_id, (ga, na) in ja.items():
        if fall_id not in jb:
            continue  # an incomplete run: only cases both have answered are compared
        gb, nb = jb[fall_id]
        if gb / nb > ga / na:
            besser.append(fall_id)
        elif gb / nb < ga / na:
            schlechter.append(fall_id)
    p = vorzeichentest(len(besser), len(schlechter))
    return {"a": ea["tag"], "b": eb["tag"], "besser": besser, "schlechter": schlechter, "p": p,
            "jenseits_zufall": p < 0.05,
            "differenz": {m: None if ka[m] is None or kb[m] is None else kb[m] - ka[m] for m in METRIKEN}}


def urteil(v):
    b, s = len(v["besser"]), len(v["schlechter"])
    satz = (f"{b} case{'s' * (b != 1)} better and {s} worse in {v['b']} than in {v['a']}; "
            f"exact sign test p = {v['p']:.3g}: ")
    if v["jenseits_zufall"]:
        return satz + "the difference is beyond chance at 5 %."
    return satz + "the difference is not beyond chance at 5 %."


def differenz(name, d):
    if d is None:
        return "-"
    if name == "schritte_je_auftrag":
        return f"{d:+.2f}"
    return f"{d * 100:+.1f}".replace("+0.0", "0").removesuffix(".0") + " points"


def vergleich_text(a, b, v, faelle):
    (ea, ka), (eb, kb) = a[:2], b[:2]
    zeilen = [f"A: {kopfzeile(ea, ka)}", f"B: {kopfzeile(eb, kb)}", "",
              f"{'':<20} {'A':>8} {'B':>8}   B - A"]
    zeilen += [f"{m:<20} {wert(m, ka[m]):>8} {wert(m, kb[m]):>8}   {differenz(m, v['differenz'][m])}" for m in METRIKEN]
    zeilen += ["", "A " + stufenzeile(ka["stufen"]), "B " + stufenzeile(kb["stufen"])]
    if ea["n"] != eb["n"]:
        zeilen.append(f"The runs have different n ({ea['n']} and {eb['n']}): cases are compared by their success rates.")
    for titel, ids in (("Better in B", v["besser"]), ("Worse in B", v["schlechter"])):
        if ids:
            zeilen += ["", f"{titel} ({len(ids)}):"]
            zeilen += [f"  {i}  {faelle[i]['frage']}\n      A: {a[3][i]}\n      B: {b[3][i]}" for i in ids]
    zeilen += ["", urteil(v)]
    return "\n".join(zeilen)


def vergleich_markdown(a, b, v):
    (ea, ka), (eb, kb) = a[:2], b[:2]
    zeilen = [f"| metric | {ea['tag']} | {eb['tag']} | difference |", "|---|---|---|---|"]
    zeilen += [f"| {m} | {wert(m, ka[m])} | {wert(m, kb[m])} | {differenz(m, v['differenz'][m])} |" for m in METRIKEN]
    zeilen += [f"| {s} | {prozent(ka['stufen'][s])} | {prozent(kb['stufen'][s])} | "
               f"{differenz(s, None if ka['stufen'][s] is None else kb['stufen'][s] - ka['stufen'][s])} |"
               for s in STUFEN if ka["stufen"][s] is not None]
    return "\n".join(zeilen + ["", urteil(v)])


def was_geschah(faelle, ausgaben):
    """id -> what the run did in that case, one line (for flipped cases)."""
    faelle_by_id = {f["id"]: f for f in faelle}
    je_fall = {}
    for a in ausgaben:
        ok = "right" if gelungen(a) else "; ".join(abweichungen(a["aufrufe"], faelle_by_id[a["id"]]["erwartet"]))
        je_fall.setdefault(a["id"], []).append(f"{aufrufe_text(a['aufrufe'])} ({ok})")
    return {i: " | ".join(t) for i, t in je_fall.items()}


# ---------------------------------------------------------------------------
# The self-test: a loopback endpoint that answers every case with its expected calls
# ---------------------------------------------------------------------------


def selbsttest_server(faelle, verzoegerung=0.0, plaetze=8):
    """Start the built-in endpoint on 127.0.0.1; return (server, url).

    It answers each case with its expected calls, after `verzoegerung` seconds in
    one of `plaetze` slots (tests/bench.py uses both to play a slow server).
    """
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    antworten = {f["frage"]: f["erwartet"] for f in faelle}
    frei = threading.BoundedSemaphore(plaetze)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
        wbufsize = -1                  # headers and body in one send: no delayed-ACK stall
        disable_nagle_algorithm = True

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with frei:
                time.sleep(verzoegerung)
            erwartet = antworten.get(body["messages"][-1]["content"], [])
            rufe = [{"id": f"call_{i}", "type": "function",
                     "function": {"name": s["name"], "arguments": json.dumps(s["args"])}}
                    for i, s in enumerate(erwartet)]
            nachricht = {"role": "assistant", "content": None if rufe else "Which one do you mean?"}
            if rufe:
                nachricht["tool_calls"] = rufe
            daten = json.dumps({"object": "chat.completion", "choices": [
                {"index": 0, "message": nachricht, "finish_reason": "tool_calls" if rufe else "stop"}],
                "usage": {"prompt_tokens": 900, "completion_tokens": 30 * len(rufe) + 10}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(daten)))
            self.end_headers()
            self.wfile.write(daten)

        def log_message(self, *_):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()  # quick shutdown
    return server, f"http://127.0.0.1:{server.server_port}/v1/chat/completions"


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
    pfad = teile.path.rstrip("/")
    if pfad.endswith("/v1"):
        pfad += "/chat/completions"
    return urlunsplit(teile._replace(path=pfad))


def tag_arg(text):
    if not re.fullmatch(r"[A-Za-z0-9._-]+", text) or text.startswith("."):
        raise argparse.ArgumentTypeError(f"{text!r}: a tag holds only letters, digits, '.', '_' and '-' "
                                         "and does not start with '.'")
    return text


def json_objekt(text):
    try:
        x = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not JSON ({e.msg})")
    if not isinstance(x, dict):
        raise argparse.ArgumentTypeError('must be a JSON object, such as {"top_p": 0.9}')
    return x


def ohne_geheimnis(adresse):
    """The URL without user:password, and with key- or token-like query values hidden."""
    teile = urlsplit(adresse)
    netz = teile.netloc.rsplit("@", 1)[-1]
    abfrage = urlencode([(k, "***" if re.search(r"key|token|secret|sig|pass", k, re.I) else v)
                         for k, v in parse_qsl(teile.query, keep_blank_values=True)])
    return urlunsplit(teile._replace(netloc=netz, query=abfrage))


def parser():
    p = Parser(prog="messen.py", description="Measure how well a model behind an OpenAI-compatible "
                                             "chat endpoint calls tools (42 cases, five stages).")
    p.add_argument("--url", type=url_arg, help="chat-completions URL (a base URL ending in /v1 is completed)")
    p.add_argument("--modell", help="model name, sent as 'model'")
    p.add_argument("--temp", type=zahl(0, float), default=0.0, help="temperature (default 0.0)")
    p.add_argument("--n", type=zahl(1, int), default=1, help="outputs per case, each its own request (default 1)")
    p.add_argument("--tag", type=tag_arg, help="name of the run (default: from the model name)")
    p.add_argument("--ausgabe", type=Path, default=Path("ergebnisse"), help="results folder (default ergebnisse)")
    p.add_argument("--faelle", type=Path, default=Path(__file__).with_name("faelle.jsonl"), help="case file")
    p.add_argument("--extra", type=json_objekt, default={}, help="JSON object merged into every request body")
    p.add_argument("--parallel", type=zahl(1, int), default=1, help="requests in flight at once (default 1)")
    p.add_argument("--timeout", type=zahl(0.001, float), default=120.0, help="seconds per request (default 120)")
    p.add_argument("--versuche", type=zahl(1, int), default=4, help="attempts per request (default 4)")
    p.add_argument("--key-env", default="OPENAI_API_KEY", help="variable holding the API key (default OPENAI_API_KEY)")
    p.add_argument("--neu", action="store_true", help="measure anew; the old run is renamed, never deleted")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument("--markdown", action="store_true", help="print the summary as a Markdown table")
    p.add_argument("--bewerten", type=tag_arg, metavar="TAG", help="grade the saved run TAG again, no server")
    p.add_argument("--vergleich", type=tag_arg, nargs=2, metavar=("A", "B"), help="compare two saved runs")
    p.add_argument("--selbsttest", action="store_true", help="measure the built-in loopback endpoint")
    return p


def einstellungen_fuer(args):
    return {"modell": args.modell, "url": ohne_geheimnis(args.url), "temp": args.temp, "n": args.n,
            "extra": args.extra, "tag": args.tag, "datum": datetime.date.today().isoformat(),
            "faelle_sha256": args.faelle_sha256, "katalog_sha256": katalog_hash()}


def zeige(args, e, faelle, ausgaben):
    """Print the summary of one run; return its figures."""
    k = kennzahlen(faelle, ausgaben)
    if args.json:
        print(json.dumps(bericht_json(e, k), ensure_ascii=False))
    elif args.markdown:
        print(bericht_markdown(e, k))
    else:
        print(bericht_text(e, k, faelle, ausgaben))
    return k


def lauf_messen(args, faelle):
    """Measure (or resume) the run args.tag, print its summary, return its figures."""
    pfad = args.ausgabe / f"{args.tag}.jsonl"
    einstellungen, ausgaben, start = einstellungen_fuer(args), [], 0
    if pfad.exists() and args.neu:
        print(f"messen: the earlier {pfad} is kept as {beiseite(pfad)}", file=sys.stderr)
    elif pfad.exists():
        alt, ausgaben, start = lies_lauf(pfad, faelle)
        if alt is not None:
            pruefe_einstellungen(pfad, alt, einstellungen)
            einstellungen = alt
        if len(ausgaben) == len(faelle) * args.n:
            print(f"messen: {pfad} holds a complete run, shown as saved (--neu measures anew)", file=sys.stderr)
        else:
            print(f"messen: {pfad} holds {len(ausgaben)} outputs; asking for the rest", file=sys.stderr)
    ausgaben = messe(args, faelle, pfad, einstellungen, ausgaben, start)
    return zeige(args, einstellungen, faelle, ausgaben)


def gespeichert_pfad(args, tag_name):
    pfad = args.ausgabe / f"{tag_name}.jsonl"
    if not pfad.exists():
        raise Eingabefehler(f"no saved run '{tag_name}' ({pfad} does not exist)")
    return pfad


def lade_gespeichert(args, faelle, tag_name):
    pfad = gespeichert_pfad(args, tag_name)
    e, ausgaben, _ = lies_lauf(pfad, faelle)
    return pruefe_gespeichert(args, faelle, pfad, e, ausgaben)


def pruefe_gespeichert(args, faelle, pfad, e, ausgaben):
    """A saved run is graded only on the case file and catalogue it was measured with."""
    if e is None or not ausgaben:
        raise Eingabefehler(f"{pfad} holds no output yet; the command that measured it goes on")
    if e.get("faelle_sha256") != args.faelle_sha256:
        raise Eingabefehler(f"{pfad} was measured on another case file than {args.faelle}")
    if e.get("katalog_sha256") != katalog_hash():
        raise Eingabefehler(f"{pfad} was measured with another catalogue or opening than this messen.py")
    if len(ausgaben) < len(faelle) * e["n"]:
        print(f"messen: {pfad} is incomplete ({len(ausgaben)} of {len(faelle) * e['n']} outputs); "
              "the command that measured it goes on", file=sys.stderr)
    return e, ausgaben


def selbsttest(args, faelle):
    """Measure the built-in endpoint in a temporary folder; 0 only if every figure is 100 %."""
    import tempfile

    server, adresse = selbsttest_server(faelle)
    try:
        with tempfile.TemporaryDirectory() as ordner:
            args.url, args.modell, args.tag, args.ausgabe = adresse, "selbsttest", "selbsttest", Path(ordner)
            k = lauf_messen(args, faelle)
    finally:
        server.shutdown()
        server.server_close()
    anteile = [k[m] for m in METRIKEN if m != "schritte_je_auftrag"] + list(k["stufen"].values())
    if any(x != 1 for x in anteile):
        raise Abbruch("the self-test did not score 100 % everywhere: this installation is broken")
    return 0


def vergleich(args, faelle):
    """Compare two saved runs; each run is (settings, figures, per-case successes, what it did)."""
    pfade = [gespeichert_pfad(args, t) for t in args.vergleich]
    gelesen = [lies_lauf(pfad, faelle)[:2] for pfad in pfade]  # (settings, outputs), each file read once
    for feld, was in (("faelle_sha256", "case files"), ("katalog_sha256", "catalogues or openings")):
        if (gelesen[0][0] or {}).get(feld) != (gelesen[1][0] or {}).get(feld):
            raise Eingabefehler(f"{' and '.join(args.vergleich)} were measured on different {was}; "
                                "they cannot be compared")
    a, b = [(e, kennzahlen(faelle, aus), erfolge_je_fall(faelle, aus), was_geschah(faelle, aus))
            for e, aus in (pruefe_gespeichert(args, faelle, p, *g) for p, g in zip(pfade, gelesen))]
    v = vergleiche(a[:3], b[:3])
    if args.json:
        print(json.dumps(dict(v, a_kennzahlen=bericht_json(*a[:2]), b_kennzahlen=bericht_json(*b[:2])),
                         ensure_ascii=False))
    elif args.markdown:
        print(vergleich_markdown(a, b, v))
    else:
        print(vergleich_text(a, b, v, {f["id"]: f for f in faelle}))
    return 0


def ausfuehren(args):
    faelle, args.faelle_sha256 = lade_faelle(args.faelle)
    if args.selbsttest:
        return selbsttest(args, faelle)
    if args.vergleich:
        return vergleich(args, faelle)
    if args.bewerten:
        e, ausgaben = lade_gespeichert(args, faelle, args.bewerten)
        zeige(args, e, faelle, ausgaben)
        return 0
    if not args.url or not args.modell:
        raise Eingabefehler("--url and --modell are needed to measure (or --selbsttest, --bewerten TAG, --vergleich A B)")
    args.tag = args.tag or re.sub(r"[^A-Za-z0-9._-]+", "-", args.modell).strip("-.") or "lauf"
    lauf_messen(args, faelle)
    return 0


def main(argv=None):
    geheim = []  # never printed: the API key and a password inside the URL
    try:
        args = parser().parse_args(argv)
        args.key = os.environ.get(args.key_env)
        geheim = [g for g in (args.key, args.url and urlsplit(args.url).password) if g]
        return ausfuehren(args)
    except Abbruch as e:
        text = str(e)
        for g in geheim:
            text = text.replace(g, "***")
        print(f"messen: {text}", file=sys.stderr)
        return e.status
    except KeyboardInterrupt:
        print("messen: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of stdout went away (| head); the run itself is saved
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
