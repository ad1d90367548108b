"""Shared data and the loopback endpoint the tests run the command line against.

The endpoint is a real http.server on 127.0.0.1 in a thread; a test hands it a
function `antwort(fall, body, nummer)` that returns what to send for a request:
a dict (a JSON body with status 200), a tuple (status, body, headers),
ABBRECHEN to close the connection without an answer, or a function that writes
raw bytes to the handler itself (a body cut off, a trickle). `fall` is None for a
request whose question is no case (--pruefen asks such).
"""

import collections
import subprocess
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import messen  # noqa: E402

ALLE_FAELLE = [json.loads(z) for z in (ROOT / "faelle.jsonl").read_text(encoding="utf-8").splitlines() if z.strip()]
FAELLE = [f for f in ALLE_FAELLE if f["stufe"] not in messen.SPAETER]  # the chapter's 42: what a plain run asks
WEITER_FAELLE = [f for f in ALLE_FAELLE if f["stufe"] == "S6"]
GANZ_FAELLE = [f for f in ALLE_FAELLE if f["stufe"] == "S7"]
BY_ID = {f["id"]: f for f in ALLE_FAELLE}
SYNONYM = messen.variante(messen.STANDARD, "synonyme")
BY_FRAGE = {**{SYNONYM.als_gesendet(f["frage"]): f for f in ALLE_FAELLE},  # a question as synonyme words it
            **{f["frage"]: f for f in ALLE_FAELLE}}
ABBRECHEN = object()
TEXT_ANTWORT = "Which contact do you mean? Please give me its contact_id."
LM_STUDIO = {"/v1/models": {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "organization_owner"}]}}
# a server that names itself LM Studio: the family where a probe (tool_choice "required") tells whose text calls are;
# on one messen does not identify, a probe proves nothing (it may force "required" with a grammar)
UNERKANNT = ("  ?     which server this is: not identified (its /v1/models names no owner messen knows, and no page "
             "of its own told it)")  # --pruefen's line for the loopback endpoint, which answers no GET
AUS_TEXT = ("the server's tool-call parser is off or reads another form: the model's prompt template in LM Studio, "
            "with tool use on")  # the fix on LM Studio, where a probe that came back as text again shows it
UNBEKANNT = ("Diagnosis: all clear (every output an answer, calls from tool_calls; whether the catalogue reached "
             "the prompt cannot be told: {})."
             ).format  # each with its one reason


# ---------------------------------------------------------------------------
# What a server sends
# ---------------------------------------------------------------------------

def completion(nachricht, finish="stop", usage=None):
    """A chat completion; without `usage`, the endpoint adds one as a tool-aware template would."""
    body = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1767225600, "model": "m",
            "choices": [{"index": 0, "message": nachricht, "finish_reason": finish}]}
    if usage is not None:
        body["usage"] = usage
    return body


def gestreamt(body, stueck=5):
    """A chat completion as a server streams it when asked to: content and each call's arguments in
    pieces of `stueck` characters, the name once, finish_reason, usage, [DONE]."""
    wahl = body["choices"][0]
    nachricht, deltas = wahl["message"], [{"role": "assistant"}]
    teile = lambda text: [text[i:i + stueck] for i in range(0, len(text), stueck)] or [""]  # noqa: E731
    deltas += [{"content": t} for t in teile(nachricht["content"])] if nachricht.get("content") else []
    for i, c in enumerate(nachricht.get("tool_calls") or []):
        args = c["function"]["arguments"]
        args = args if isinstance(args, str) else json.dumps(args)
        deltas.append({"tool_calls": [{"index": i, "id": c.get("id", f"call_{i}"), "type": "function",
                                       "function": {"name": c["function"]["name"]}}]})
        deltas += [{"tool_calls": [{"index": i, "function": {"arguments": t}}]} for t in teile(args)]
    chunks = [{"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": wahl.get("finish_reason")}]})
    chunks.append({"choices": [], "usage": body.get("usage")})
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


def prompt_tokens(body):
    """What a template that renders the tools costs: 300 tokens plus one per 4 characters of tools."""
    return 300 + len(json.dumps(body.get("tools", []))) // 4


def openai_nachricht(aufrufe):
    """The plain OpenAI shape: arguments as JSON strings, content None beside calls."""
    if not aufrufe:
        return {"role": "assistant", "content": TEXT_ANTWORT}
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{i}", "type": "function", "function": {"name": a["name"], "arguments": json.dumps(a["args"])}}
        for i, a in enumerate(aufrufe)]}


def erwartet_von(fall):
    """The calls a case's answer must make, read from the case file itself, never through messen: in S6
    those after the tools' results (its first step is sent as done), elsewhere the expected ones."""
    return fall["danach"] if fall["stufe"] == "S6" else fall["erwartet"]


def richtig(fall, body, nummer):
    """Every case answered with its expected calls (in S6, those after the tools' results; in S7, the
    reference's step after as many answers as the conversation holds)."""
    if fall["stufe"] == "S7":
        soll = mit_erstellten_ids(fall, body, fall["loesung"][sum(m["role"] == "assistant" for m in body["messages"])])
        text = {"role": "assistant", "content": " ".join(fall.get("antwort", [])) or "Done."}
        return completion(openai_nachricht(soll) if soll else text, "tool_calls" if soll else "stop")
    aufrufe = erwartet_von(fall)
    return completion(openai_nachricht(aufrufe), "tool_calls" if aufrufe else "stop")


def mit_erstellten_ids(fall, body, aufrufe):
    """The reference's calls as they stand in the case file: the endpoint (in_der_welt) puts every value the
    conversation showed into the run's drawn values, the created contacts' ids among them."""
    return aufrufe


# A run draws each S7 job's values (ids, addresses, times of day: messen.gezogen); the tests' models answer in the
# case file's values, and the endpoint writes each value the conversation showed (its question and the results of
# its calls) as the run drew it, as a model that reads does. A value it never showed stays as the file has it.
FIRMEN = sorted({k["company"] for f in GANZ_FAELLE for k in f["welt"].get("kontakte", []) if k.get("company")} |
                set(messen.FIRMEN), key=len, reverse=True)  # the companies a world has, or a draw gives
WERT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}|"  # bounded: a 5 MB reply stays quick
                  r"(?<![\w.+-])[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,4}|(?<![\d:])\d\d:\d\d(?![\d:])|"
                  + "|".join(map(re.escape, FIRMEN)))


def werte_karte(alt, neu):
    """Two texts alike but for drawn values: file value -> drawn value; None where they differ elsewhere."""
    if alt is None or neu is None or WERT.split(alt) != WERT.split(neu):
        return None
    return dict(zip(WERT.findall(alt), WERT.findall(neu)))


def katalog_von(body):
    """The catalogue a request sent: synonyme where its tools carry the other names."""
    namen = {t["function"]["name"] for t in body.get("tools", [])}
    return SYNONYM if namen & set(SYNONYM.umbenennung["werkzeuge"].values()) else messen.STANDARD


def gezeigt(fall, body):
    """file value -> the run's, for each value this S7 conversation showed: its question's, and its results' as the
    same calls return them in the file's world (replayed there, named as the case file names them)."""
    katalog = katalog_von(body)
    karte = werte_karte(katalog.als_gesendet(fall["frage"]), body["messages"][1]["content"]) or {}
    welt, rufe = messen.welt_von(messen.als_fall(fall)), {}
    attrappen = tuple(t["function"]["name"] for t in body.get("tools", []) if t["function"]["name"] in messen.ATTRAPPEN)
    for m in body["messages"][2:]:
        zurueck = {v: k for k, v in karte.items()}
        rufe.update({c["id"]: c["function"] for c in m.get("tool_calls") or []})
        if m["role"] != "tool" or m["tool_call_id"] not in rufe:
            continue
        f = rufe[m["tool_call_id"]]
        try:
            args = json.loads(WERT.sub(lambda w: zurueck.get(w.group(), w.group()), f["arguments"]))
        except json.JSONDecodeError:
            continue
        c = {"name": f["name"], "args": args}
        if katalog.umbenennung and isinstance(args, dict):
            c = messen.zurueckbenannt([c], katalog.umbenennung)[0]
        e = messen.fuehre_aus(welt, c["name"], c["args"], messen.gesendete_namen(katalog), attrappen)
        karte |= werte_karte(messen.ergebnis_text(messen.umbenannte_args(katalog, e)), m["content"]) or {}
    return karte


def in_der_welt(fall, body, was):
    """A reply written in the case file's values, in the values of the run's draw that the conversation showed."""
    if not (fall and fall["stufe"] == "S7" and isinstance(was, dict) and "choices" in was):
        return was
    karte = gezeigt(fall, body)
    if not karte:
        return was
    return json.loads(nach_karte(karte, json.dumps(was, ensure_ascii=False)))


def nach_karte(karte, text):
    """text with each value karte maps mapped, and every time of day moved as the times karte maps move."""
    zeiten = [(int(a[:2]), int(b[:2])) for a, b in karte.items() if ":" in a]
    um = zeiten[0][1] - zeiten[0][0] if zeiten else 0  # every time of a job moves by the same hours
    klein = {a.lower(): b for a, b in karte.items()}  # an address in capitals: the drawn one in the same capitals
    gross = lambda w, neu: f"{w.split('@')[0]}{neu.split('@')[0][len(w.split('@')[0]):]}@{w.split('@')[1]}" \
        if "@" in w else neu  # noqa: E731
    ersetzt = lambda w: karte[w] if w in karte else gross(w, klein[w.lower()]) if w.lower() in klein else \
        f"{int(w[:2]) + um:02}{w[2:]}" if ":" in w and um else w  # noqa: E731
    return WERT.sub(lambda w: ersetzt(w.group()), text)

def zug_karte(pfad, fall_id, lauf=0):
    """file value -> drawn value of one S7 job's output in a saved run (its settings line's ziehung)."""
    ziehung = json.loads(Path(pfad).read_text(encoding="utf-8").splitlines()[0])["einstellungen"].get("ziehung")
    fall = BY_ID[fall_id]
    return werte_karte(json.dumps(fall, ensure_ascii=False), json.dumps(messen.gezogen(
        messen.als_fall(fall), messen.job_salz(ziehung, fall_id, lauf)).roh, ensure_ascii=False)) or {}


def wie_gezogen(pfad, fall_id, text, lauf=0):
    """A text in the case file's values, in those the saved run drew for the job's output."""
    return nach_karte(zug_karte(pfad, fall_id, lauf), text)


def wie_geschrieben(pfad, fall_id, text, lauf=0):
    """A text in the values a saved run drew for a job, in the case file's (what a test's expectation names)."""
    return nach_karte({v: k for k, v in zug_karte(pfad, fall_id, lauf).items()}, text)



KAPITEL_FEHLER = {  # the chapter's two failures
    "S2-9": [{"name": "book_room", "args": {"room": "raum", "date": "2026-03-17", "start": "10:00", "end": "11:00"}}],
    "S5-8": [{"name": "list_calendars", "args": {}}, {"name": "get_events", "args": {"calendar": "team", "date": "2026-03-17"}}],
}


def mit_fehlern(fehler):
    """Right everywhere except the cases in fehler (id -> calls sent instead)."""
    def antwort(fall, body, nummer):
        aufrufe = fehler.get(fall["id"], erwartet_von(fall))
        return completion(openai_nachricht(aufrufe), "tool_calls" if aufrufe else "stop")
    return antwort


def falsch_in(ids):
    """Wrong in the given cases: no call where calls are expected, a call where none is."""
    return mit_fehlern({i: [] if BY_ID[i]["erwartet"] else [{"name": "list_calendars", "args": {}}] for i in ids})


# ---------------------------------------------------------------------------
# The loopback endpoint
# ---------------------------------------------------------------------------

def fall_von(body):
    """The case a request asks (its first user message: a second turn ends with the reply), or {}; an S7 job also
    in the values its run drew."""
    fragen = [m["content"] for m in body.get("messages", []) if m["role"] == "user"]
    if not fragen or fragen[0] in BY_FRAGE:
        return BY_FRAGE.get(fragen[0], {}) if fragen else {}
    return next((f for f in GANZ_FAELLE for wie in (str, SYNONYM.als_gesendet)
                 if werte_karte(wie(f["frage"]), fragen[0]) is not None), {})


def zweiter_zug(body):
    """Does the request carry the user's reply after a first answer (S5, --nachfrage)?"""
    return len(body.get("messages", [])) > 2


class StillerServer(ThreadingHTTPServer):
    verbindungen = 0  # connections accepted, a request in them or not (a TLS handshake has none)

    def process_request(self, request, client_address):
        self.verbindungen += 1
        super().process_request(request, client_address)

    def handle_error(self, request, client_address):
        """A client that gave up (a --timeout cut the answer) is no error of the test's server."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


SELBST = {"/v1/models": {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "messen-selbsttest"}]}}
# what the tests' endpoint says of itself unless a test gives other pages: the loopback endpoint messen knows, with
# an unknown server's words and no probe; one server, whatever its port, as a comparison needs


class Endpunkt:
    def __init__(self, antwort, seiten=None):
        self.antwort = antwort
        # path -> JSON a GET of it answers (what a server says of itself); else 404. {}: a server that tells nothing
        self.seiten = SELBST if seiten is None else seiten
        self.geholt = []  # the paths GET asked, in arrival order
        self.anfragen = []  # (headers, body) in arrival order
        self.je_fall = collections.Counter()  # case id -> requests so far (None: not a case)
        self.lock = threading.Lock()
        self.gleichzeitig = self.hoechstens = 0
        self.server = StillerServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1/chat/completions"
        threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True).start()

    @property
    def verbindungen(self):
        return self.server.verbindungen

    def zahl(self, fall_id=None):
        """Requests so far: all of them, or those of one case."""
        return len(self.anfragen) if fall_id is None else self.je_fall[fall_id]

    def _handler(self):
        endpunkt = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers do: no connection and thread per request
            wbufsize = -1                  # headers and body in one send: no delayed-ACK stall
            disable_nagle_algorithm = True

            def do_GET(self):
                self.body = {}
                endpunkt.geholt.append(self.path)
                if self.path in endpunkt.seiten:
                    self.sende(endpunkt.seiten[self.path])
                else:
                    self.send_error(404)

            def do_POST(self):
                body = self.body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fall = fall_von(body) or None
                with endpunkt.lock:
                    endpunkt.anfragen.append((dict(self.headers), body))
                    endpunkt.je_fall[fall and fall["id"]] += 1
                    nummer = endpunkt.zahl(fall and fall["id"])  # 1 for the first request of this case
                    endpunkt.gleichzeitig += 1
                    endpunkt.hoechstens = max(endpunkt.hoechstens, endpunkt.gleichzeitig)
                try:
                    was = in_der_welt(fall, body, endpunkt.antwort(fall, body, nummer))
                finally:
                    with endpunkt.lock:  # counted while being worked on, not while bytes travel
                        endpunkt.gleichzeitig -= 1
                try:
                    self.sende(was)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def sende(self, was):
                if was is ABBRECHEN:
                    self.close_connection = True
                    return
                if callable(was):
                    self.close_connection = True
                    return was(self)
                status, body, header = was if isinstance(was, tuple) else (200, was, {})
                if self.command == "GET":
                    body = json.dumps(body).encode()
                elif isinstance(body, dict) and "choices" in body and "usage" not in body:
                    body = dict(body, usage={"prompt_tokens": prompt_tokens(self.body), "completion_tokens": 20})
                if self.body.get("stream") is True and isinstance(body, dict) and "choices" in body:
                    body, header = gestreamt(body), {"Content-Type": "text/event-stream", **header}
                daten = body if isinstance(body, bytes) else (
                    body.encode() if isinstance(body, str) else json.dumps(body).encode())
                self.send_response(status)
                header = {"Content-Type": "application/json", **header}
                for k, v in header.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(daten)))
                self.end_headers()
                self.wfile.write(daten)

            def log_message(self, *_):
                pass

        return Handler

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpunkt():
    """Start loopback endpoints: endpunkt(antwort) -> Endpunkt; all stopped after the test."""
    gestartet = []

    def starte(antwort=richtig, seiten=None):
        e = Endpunkt(antwort, seiten)
        gestartet.append(e)
        return e
    yield starte
    for e in gestartet:
        e.stop()


@pytest.fixture
def cli(capsys, tmp_path, monkeypatch, request):
    """Run the command line in this process: cli(*argv) -> (status, stdout, stderr).

    Results go to tmp_path unless --ausgabe is given; no API key is set unless a test sets one. What
    messen wrote to stderr in each call is shown beside a failed test's report (pytest_runtest_makereport).
    """
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    request.node.messen_stderr = []

    def lauf(*argv):
        argv = list(argv)
        if "--ausgabe" not in argv:
            argv += ["--ausgabe", str(tmp_path / "ergebnisse")]
        status = messen.main(argv)
        out, err = capsys.readouterr()
        request.node.messen_stderr.append((argv, status, err))
        return status, out, err
    lauf.ausgabe = tmp_path / "ergebnisse"  # where the runs are saved unless --ausgabe is given
    return lauf


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report shows messen's stderr of every command line it ran: `assert 2 == 0` alone
    says nothing of why."""
    bericht = (yield).get_result()
    laeufe = getattr(item, "messen_stderr", None)
    if bericht.failed and laeufe:
        text = "\n".join(f"$ messen {' '.join(argv)}\n  -> exit {status}\n{err}" for argv, status, err in laeufe)
        bericht.sections.append(("messen's stderr", text[-20_000:]))


@pytest.fixture
def bild():
    """Tests that draw a picture need matplotlib (the extra 'bild'); without it they are skipped, saying so."""
    return pytest.importorskip("matplotlib", reason="--bild needs matplotlib: pip install '.[bild]'")


def vorbereitet(cli, *argv, status=0):
    """A set-up run of a test: its exit status asserted, so a failure says where it began."""
    ergebnis = cli(*argv)
    assert ergebnis[0] == status, f"the set-up run {' '.join(argv)} exited {ergebnis[0]}: {ergebnis[2]}"
    return ergebnis


def messung(endpunkt_url, *extra):
    return ["--url", endpunkt_url, "--modell", "m", *extra]


def zeilen(pfad):
    return [json.loads(z) for z in Path(pfad).read_text(encoding="utf-8").splitlines()]


def zug(a, zweck="frage"):
    """The saved output's turn for zweck (the question, "nachfrage", "ohne_strom", ...), or None."""
    return next((z for z in a["zuege"] if z["zweck"] == zweck), None)


def bewertet(pfad):
    """A saved run's outputs as messen grades them on reading ({(id, lauf): grade}): a results file holds
    what came, never a grade."""
    faelle, _ = messen.lade_faelle(ROOT / "faelle.jsonl")
    return {(a.id, a.lauf): a for a in messen.lies_lauf(Path(pfad), faelle)[1]}


class Halter:
    """A request the test holds: its handler waits (until release, or 30 s) and then closes the connection
    without an answer. A timeout provoked so never depends on how fast the machine answers the rest."""

    def __init__(self):
        self.los = threading.Event()

    def __call__(self, *_):
        def warte(handler):
            self.los.wait(30)
        return warte


def tropfend(kopf, daten, pause=0.05, stueck=1):
    """A response written by hand a piece at a time: its headers, then `stueck` bytes every `pause` seconds.
    The returned function's `gesendet` lists, per request, how many body bytes went out before the client
    gave up: a body cut short shows the client's deadline without timing anything."""
    gesendet = []

    def antwort(*_):
        def schreibe(handler):
            gesendet.append(0)
            handler.wfile.write(kopf.encode() + b"\r\n\r\n")
            for i in range(0, len(daten), stueck):
                handler.wfile.write(daten[i:i + stueck])
                handler.wfile.flush()
                gesendet[-1] = i + stueck
                time.sleep(pause)
        return schreibe
    antwort.gesendet = gesendet
    return antwort


def warte_bis(bedingung, frist=30, was="the moment the test waits for"):
    """Wait for a moment the test brings about (a guard: it comes in far less than `frist` seconds)."""
    ende = time.monotonic() + frist
    while not bedingung() and time.monotonic() < ende:
        time.sleep(0.02)
    assert bedingung(), f"{was} did not come within {frist} s"


def langsam(sekunden, antwort=richtig):
    def a(fall, body, nummer):
        time.sleep(sekunden)
        return antwort(fall, body, nummer)
    return a


def meldungen(err):
    """stderr without the progress lines (a run's counts, --pruefen's check as it starts) and a complete run's last
    line, where it saved what."""
    return [z for z in err.splitlines()
            if not re.fullmatch(r"messen: \d+/\d+ outputs|messen: checking .* \.\.\.|messen: saved: .* outputs?\)", z)]


# ---------------------------------------------------------------------------
# The project's wheel, for the install tests
# ---------------------------------------------------------------------------

@pytest.fixture(scope="session")
def rad(tmp_path_factory):
    """The project built once as a wheel, when the first test that needs it asks (collecting builds nothing);
    its source holds no case file any more, so the installed command cannot read the source tree."""
    ordner = tmp_path_factory.mktemp("messen-rad")
    quelle = ordner / "quelle"  # a copy without any other file of the tree
    quelle.mkdir()
    for name in ("messen.py", "faelle.jsonl", "pyproject.toml", "README.md"):
        (quelle / name).write_bytes((ROOT / name).read_bytes())
    pip = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(ordner / "rad"),
                          str(quelle)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr
    (quelle / "faelle.jsonl").unlink()
    return next((ordner / "rad").glob("messen-*.whl"))


URTEIL_ANFANG = re.compile(r"\d+ cases? better and \d+ worse in |The calls as meant and those an agent gets point "
                           "different ways")  # a verdict's first line
URTEIL_WEITER = re.compile(r"\d+ cases? could go either way|On the model's|Counting the outputs|By kind, |What an "
                           r"agent gets done|BFCL's verdict \(tool_calls only\), paired")  # its later lines


def urteile(out):
    """Each verdict a summary prints (a pair's one, a series' one per pair), its lines joined as one text."""
    texte = []
    for z in (z.strip() for z in out.splitlines()):
        if URTEIL_ANFANG.match(z):
            texte.append(z)
        elif texte and URTEIL_WEITER.match(z) and not texte[-1].endswith("\n"):
            texte[-1] += " " + z
        elif texte:
            texte[-1] += "\n"
    return [t.rstrip("\n") for t in texte]


def urteil_von(out):
    """The one verdict of a pair's summary, as one text."""
    (text,) = urteile(out)
    return text


def schluss(out):
    """A comparison's text up to its verdict's last line (the resolution), where the diagnosis and the case lists
    follow it: what a test reads as the verdict's end."""
    zeilen = out.splitlines()
    ende = next(i for i, z in enumerate(zeilen) if z.startswith(("Diagnosis", "A Diagnosis")))
    return zeilen[:ende - 1]
