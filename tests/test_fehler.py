"""Faults of the server and the network, nothing lost, bad input, secrets."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import ABBRECHEN, FAELLE, ROOT, Halter, meldungen, messung, richtig, vorbereitet, warte_bis, zeilen
import messen

ALLE_100 = "By stage: S1 100 %, S2 100 %, S3 100 %, S4 100 %, S5 100 %."
IDS = [f["id"] for f in FAELLE]


def erst(fehler, fall_ids):
    """The first request of each named case gets `fehler`; every other request is answered right."""
    def antwort(fall, body, nummer):
        if fall["id"] in fall_ids and nummer == 1:
            return fehler(fall) if callable(fehler) else fehler
        return richtig(fall, body, nummer)
    return antwort


def immer(fehler, ab="S1-1"):
    """From case `ab` on, every request gets `fehler`."""
    def antwort(fall, body, nummer):
        if IDS.index(fall["id"]) >= IDS.index(ab):
            return fehler
        return richtig(fall, body, nummer)
    return antwort


def freier_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------
# Retried: the run completes and the fault never becomes a score
# ---------------------------------------------------------------------------

def test_voruebergehende_fehler_werden_wiederholt(cli, endpunkt):
    halter = Halter()  # S1-7's first request is held: a timeout that no healthy answer can run into
    faelle = {
        "S1-3": (429, {"error": {"message": "rate limited"}}, {"Retry-After": "0"}),
        "S1-4": (503, "Service Unavailable", {"Content-Type": "text/plain"}),
        "S1-5": (502, "<html><body><h1>502 Bad Gateway</h1></body></html>", {"Content-Type": "text/html"}),
        "S1-6": ABBRECHEN,                                            # dropped connection
        "S1-7": halter,                                               # a timeout
        "S2-1": "<html><title>Login</title></html>",                  # 200, not a chat completion
        "S2-2": (504, "Gateway Timeout", {}),
        "S2-3": (408, "", {}),
        "S2-4": (500, {"error": {"message": "CUDA out of memory"}}, {}),
    }

    def antwort(fall, body, nummer):
        if fall["id"] in faelle and nummer == 1:
            f = faelle[fall["id"]]
            return f(fall) if callable(f) else f
        return richtig(fall, body, nummer)
    server = endpunkt(antwort)
    status, out, err = cli(*messung(server.url, "--timeout", "2"))
    halter.los.set()
    assert status == 0, err
    assert ALLE_100 in out.splitlines()
    assert server.zahl() == 42 + len(faelle)
    assert all(server.zahl(i) == 2 for i in faelle)


def test_retry_after_wird_befolgt(cli, endpunkt):
    server = endpunkt(erst((429, {"error": {"message": "slow down"}}, {"Retry-After": "1"}), {"S1-1"}))
    start = time.monotonic()
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    assert time.monotonic() - start >= 1.0
    assert server.zahl("S1-1") == 2
    # a wait the run honours is said while it waits, in one line
    assert meldungen(err) == ["messen: S1-1: the server answered 429 and asks to wait 1 s; waiting"]


# ---------------------------------------------------------------------------
# Not retried: the run stops at once with the server's own message, status 1
# ---------------------------------------------------------------------------

VLLM_TOOLS = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
VLLM_HINWEIS = "(start vLLM with --enable-auto-tool-choice --tool-call-parser <the model's parser>)"


@pytest.mark.parametrize("status, body, meldung", [
    (400, {"error": {"message": VLLM_TOOLS, "type": "BadRequestError", "param": None, "code": 400}},
     f"400: {VLLM_TOOLS} {VLLM_HINWEIS}"),                                          # vLLM >= 0.10.1
    (400, {"object": "error", "message": VLLM_TOOLS, "type": "BadRequestError", "param": None, "code": 400},
     f"400: {VLLM_TOOLS} {VLLM_HINWEIS}"),                                          # older vLLM, SGLang
    (404, {"object": "error", "message": "The model `qwen` does not exist.", "type": "NotFoundError", "code": 404},
     "404: The model `qwen` does not exist. (check --modell and --url against the server's /v1/models)"),
    (400, {"error": {"message": "registry.ollama.ai/library/gemma:2b does not support tools", "type": "api_error",
                     "param": None, "code": None}},
     "400: registry.ollama.ai/library/gemma:2b does not support tools "
     "(this Ollama model's template has no tools; pick a model that supports them)"),
    (400, {"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                     "type": "exceed_context_size_error"}},
     "400: the request exceeds the available context size, try increasing it "
     "(the question and catalogue exceed the server's context; start it with a larger one)"),
    (422, {"error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096",
           "error_type": "validation"},
     "422: Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096"),  # TGI
    (401, "Unauthorized\n", "401: Unauthorized (put the key in OPENAI_API_KEY or name its variable with --key-env)"),
    (403, "<html><head><title>403 Forbidden</title></head><body><h1>403 Forbidden</h1></body></html>",
     "403: 403 Forbidden"),
    (400, "", "400: (empty body)"),
])
def test_client_fehler_halten_sofort(cli, endpunkt, tmp_path, status, body, meldung):
    server = endpunkt(immer((status, body, {}), ab="S1-3"))
    rc, out, err = cli(*messung(server.url, "--tag", "t"))
    assert (rc, out) == (1, "")
    assert err.splitlines() == [
        f"messen: S1-3: the server answered {meldung}",
        f"messen: 2 of 42 outputs are saved in {tmp_path / 'ergebnisse' / 't.jsonl'}; "
        "fix what the server objects to, then run again"]
    assert server.zahl("S1-3") == 1  # not retried


def test_ein_500_der_bleibt_haelt_nach_den_versuchen(cli, endpunkt):
    server = endpunkt(immer((500, {"error": {"code": 500, "message": "tools param requires --jinja flag",
                                             "type": "server_error"}}, {})))
    rc, out, err = cli(*messung(server.url, "--versuche", "2"))
    assert rc == 1
    assert err.splitlines()[:2] == [  # each attempt asked again is said at once, with why
        "messen: S1-1: the server answered 500: tools param requires --jinja flag (start llama-server with --jinja); "
        "asking again (attempt 2 of 2)",
        "messen: S1-1: the server answered 500: tools param requires --jinja flag (start llama-server with --jinja)"]
    assert server.zahl() == 2


def test_kein_server(cli, tmp_path):
    rc, out, err = cli(*messung(f"http://127.0.0.1:{freier_port()}/v1", "--versuche", "2", "--tag", "t"))
    assert rc == 1
    nochmal, erste = err.splitlines()[:2]
    assert nochmal.startswith("messen: S1-1: NewConnectionError") and nochmal.endswith("; asking again (attempt 2 of 2)")
    assert erste.startswith("messen: S1-1: no answer from the server after 2 attempts: NewConnectionError")
    assert "Connection refused" in erste
    assert len(zeilen(tmp_path / "ergebnisse" / "t.jsonl")) == 1  # the settings line, no output graded


def test_200_ohne_completion_haelt_nach_den_versuchen(cli, endpunkt):
    server = endpunkt(immer("<html><title>Proxy login</title></html>"))
    rc, out, err = cli(*messung(server.url, "--versuche", "2"))
    assert rc == 1
    assert err.splitlines()[:2] == [
        "messen: S1-1: the server answered 200 but not with a chat completion: Proxy login; asking again (attempt 2 "
        "of 2)", "messen: S1-1: the server answered 200 but not with a chat completion (2 attempts): Proxy login"]
    assert server.zahl() == 2


# ---------------------------------------------------------------------------
# Nothing lost: resume, refuse, keep aside, drop half a line
# ---------------------------------------------------------------------------

def test_fortsetzen_nach_abbruch(cli, endpunkt, tmp_path):
    kaputt = endpunkt(immer((400, {"error": {"message": "bad"}}, {}), ab="S3-1"))
    rc, _, err = cli(*messung(kaputt.url, "--tag", "t"))
    assert rc == 1, err
    pfad = tmp_path / "ergebnisse" / "t.jsonl"
    assert len(zeilen(pfad)) == 1 + 20

    gut = endpunkt()
    rc, out, err = cli(*messung(gut.url, "--tag", "t"))
    assert rc == 0, err
    assert gut.zahl() == 22                                        # only what was missing
    assert err.splitlines()[:2] == [f"messen: {pfad} holds 20 outputs; asking for the rest",
                                    f"messen: {pfad} was measured at {kaputt.url}; the rest is asked at {gut.url}"]
    assert ALLE_100 in out.splitlines()
    z = zeilen(pfad)
    assert [a["id"] for a in z[1:]] == IDS
    assert [a["sitzung"] for a in z[1:]] == [0] * 20 + [1] * 22


@pytest.mark.parametrize("anders, meldung", [
    (["--temp", "0.7"], "temp 0.0, not 0.7"),
    (["--n", "2"], "n 1, not 2"),
    (["--modell", "anderes"], 'modell "m", not "anderes"'),
    (["--extra", '{"top_p": 0.5}'], 'extra {}, not {"top_p": 0.5}'),
])
def test_andere_einstellungen_werden_abgelehnt(cli, endpunkt, tmp_path, anders, meldung):
    kaputt = endpunkt(immer((400, {"error": {"message": "bad"}}, {}), ab="S2-1"))
    vorbereitet(cli, *messung(kaputt.url, "--tag", "t"), status=1)
    gut = endpunkt()
    rc, out, err = cli(*messung(gut.url, "--tag", "t"), *anders)
    pfad = tmp_path / "ergebnisse" / "t.jsonl"
    assert (rc, out, err) == (2, "", f"messen: {pfad} was measured with {meldung}; use another --tag, "
                                     "or --neu to measure anew (the old file is kept)\n")
    assert gut.zahl() == 0


def test_andere_falldatei_wird_abgelehnt(cli, endpunkt, tmp_path):
    gut = endpunkt()
    vorbereitet(cli, *messung(gut.url, "--tag", "t"))
    kopie = tmp_path / "faelle.jsonl"
    kopie.write_text((ROOT / "faelle.jsonl").read_text() + "\n")  # the same cases, another file
    rc, out, err = cli(*messung(gut.url, "--tag", "t", "--faelle", str(kopie)))
    assert (rc, err) == (2, f"messen: {tmp_path / 'ergebnisse' / 't.jsonl'} was measured with another case file; "
                            "use another --tag, or --neu to measure anew (the old file is kept)\n")
    assert gut.zahl() == 42


def test_vollstaendiger_lauf_wird_nicht_neu_gemessen(cli, endpunkt, tmp_path):
    server = endpunkt()
    vorbereitet(cli, *messung(server.url, "--tag", "t"))
    pfad = tmp_path / "ergebnisse" / "t.jsonl"
    vorher = pfad.read_bytes()
    rc, out, err = cli(*messung(server.url, "--tag", "t"))
    assert rc == 0 and ALLE_100 in out.splitlines()
    assert err == f"messen: {pfad} holds a complete run, shown as saved (--neu measures anew)\n"
    assert server.zahl() == 42 and pfad.read_bytes() == vorher

    rc, out, err = cli(*messung(server.url, "--tag", "t", "--neu"))
    assert rc == 0
    assert err.splitlines()[0] == f"messen: the earlier {pfad} is kept as {pfad.with_name('t.alt-1.jsonl')}"
    assert server.zahl() == 84
    assert pfad.with_name("t.alt-1.jsonl").read_bytes() == vorher
    rc, out, _ = cli("--bewerten", "t.alt-1")
    assert rc == 0 and ALLE_100 in out.splitlines()


def test_halbe_letzte_zeile_wird_neu_gefragt(cli, endpunkt, tmp_path):
    server = endpunkt()
    vorbereitet(cli, *messung(server.url, "--tag", "t"))
    pfad = tmp_path / "ergebnisse" / "t.jsonl"
    daten = pfad.read_bytes()
    pfad.write_bytes(daten[:-40])  # a killed process: the last line half-written
    rc, out, err = cli(*messung(server.url, "--tag", "t"))
    assert rc == 0, err
    assert server.zahl() == 43 and server.zahl("S5-8") == 2
    assert [a["id"] for a in zeilen(pfad)[1:]] == IDS


def test_beschaedigte_zeile_in_der_mitte(cli, endpunkt, tmp_path):
    server = endpunkt()
    vorbereitet(cli, *messung(server.url, "--tag", "t"))
    pfad = tmp_path / "ergebnisse" / "t.jsonl"
    z = pfad.read_text().splitlines()
    z[5] = z[5][:30]
    pfad.write_text("\n".join(z) + "\n")
    rc, out, err = cli(*messung(server.url, "--tag", "t"))
    assert (rc, err) == (2, f"messen: {pfad}:6: not JSON; the results file is damaged\n")
    assert server.zahl() == 42


@pytest.mark.parametrize("parallel, beantwortet", [("1", 4), ("4", 11)])
def test_strg_c_behaelt_alles_und_sagt_wie_weiter(endpunkt, tmp_path, parallel, beantwortet):
    # S1-5 is held, and every request after the first `beantwortet` others: at the signal, what is in flight is
    # known exactly, however slow the machine
    los, gezaehlt, lock = threading.Event(), [], threading.Lock()

    def antwort(fall, body, nummer):
        with lock:
            halten = fall["id"] == "S1-5" or len(gezaehlt) >= beantwortet
            gezaehlt.append(fall["id"]) if not halten else None
        if halten:
            los.wait(30)
        return richtig(fall, body, nummer)
    server = endpunkt(antwort)
    pfad = tmp_path / "t.jsonl"
    # SIGINT at its default in the child, however the suite was started (nohup, a background job)
    proc = subprocess.Popen([sys.executable, str(ROOT / "messen.py"), *messung(server.url, "--tag", "t"),
                             "--parallel", parallel, "--ausgabe", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        gespeichert = lambda: len(pfad.read_bytes().split(b"\n")) - 2 if pfad.exists() else 0  # noqa: E731
        in_flug = 1 + (int(parallel) - 1)  # S1-5, and each other worker's held request
        warte_bis(lambda: gespeichert() == beantwortet and server.zahl() == beantwortet + in_flug,
                  was="the answered outputs saved and every worker's request held")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        los.set()
    ids = [a["id"] for a in zeilen(pfad)[1:]]
    assert proc.returncode == 130
    assert err.splitlines()[-1] == (f"messen: interrupted; {beantwortet} of 42 outputs are saved in {pfad}; the same "
                                    f"command again asks for the {42 - beantwortet} missing")
    assert "Traceback" not in err
    assert sorted(ids) == sorted(gezaehlt) and "S1-5" not in ids  # everything answered is there, nothing else


# ---------------------------------------------------------------------------
# Secrets: the key and URL credentials are never printed nor saved
# ---------------------------------------------------------------------------

def test_schluessel_und_passwort_bleiben_geheim(cli, endpunkt, tmp_path, monkeypatch):
    monkeypatch.setenv("MEIN_KEY", "sk-geheim-4711")

    def antwort(fall, body, nummer):
        if fall["id"] == "S3-1":
            return 401, {"error": {"message": "Invalid key sk-geheim-4711"}}, {}
        return richtig(fall, body, nummer)
    server = endpunkt(antwort)
    mit_passwort = server.url.replace("http://", "http://nutzer:pw-9876@") + "?api-key=qk-123&v=2"
    rc, out, err = cli("--url", mit_passwort, "--modell", "m", "--key-env", "MEIN_KEY", "--tag", "t")
    assert rc == 1
    assert meldungen(err)[0] == "messen: S3-1: the server answered 401: Invalid key *** " \
                                  "(put the key in OPENAI_API_KEY or name its variable with --key-env)"
    assert server.anfragen[0][0]["Authorization"] == "Bearer sk-geheim-4711"
    gespeichert = (tmp_path / "ergebnisse" / "t.jsonl").read_text()
    assert zeilen(tmp_path / "ergebnisse" / "t.jsonl")[0]["einstellungen"]["url"] == \
        server.url + "?api-key=%2A%2A%2A&v=2"
    for geheim in ("sk-geheim-4711", "pw-9876", "qk-123", "nutzer"):
        assert geheim not in out + err + gespeichert


# ---------------------------------------------------------------------------
# Bad command lines: one line, status 2, no request
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("argv, meldung", [
    (["--n", "0"], "argument --n: must be at least 1, got 0"),
    (["--n", "zwei"], "argument --n: not a number: 'zwei'"),
    (["--temp", "-0.5"], "argument --temp: must be at least 0, got -0.5"),
    (["--temp", "warm"], "argument --temp: not a number: 'warm'"),
    (["--temp", "nan"], "argument --temp: must be at least 0, got nan"),
    (["--parallel", "0"], "argument --parallel: must be at least 1, got 0"),
    (["--tag", "../weg"], "argument --tag: '../weg': a tag holds only letters, digits, '.', '_' and '-' "
                          "and does not start with '.'"),
    (["--tag", "a/b"], "argument --tag: 'a/b': a tag holds only letters, digits, '.', '_' and '-' "
                       "and does not start with '.'"),
    (["--extra", "[1]"], 'argument --extra: must be a JSON object, such as {"top_p": 0.9}'),
    (["--extra", "{top_p: 1}"], "argument --extra: not JSON (Expecting property name enclosed in double quotes); "
                                "give a JSON object such as '{\"top_p\": 0.9}'"),
    (["--url", "ftp://127.0.0.1/v1"], "argument --url: not an http(s) URL: 'ftp://127.0.0.1/v1'"),
    (["--url", "localhost:8009"], "argument --url: not an http(s) URL: 'localhost:8009'"),
    (["--frobnicate"], "unrecognized arguments: --frobnicate"),
])
def test_schlechte_befehlszeile(cli, endpunkt, argv, meldung):
    server = endpunkt()
    rc, out, err = cli(*messung(server.url), *argv)
    assert (rc, out, err) == (2, "", f"messen: {meldung}\n")
    assert server.zahl() == 0


def test_ohne_url_und_modell(cli):
    assert cli() == (2, "", "messen: --url and --modell are needed to measure "
                            "(or --selbsttest, --bewerten TAG, --vergleich A B)\n")


def test_bewerten_eines_unbekannten_laufs(cli, tmp_path):
    assert cli("--bewerten", "fehlt") == (
        2, "", f"messen: no saved run 'fehlt' ({tmp_path / 'ergebnisse' / 'fehlt.jsonl'} does not exist)\n")


@pytest.mark.parametrize("argv", [
    ["--n", "0"],
    ["--faelle", "/nonexistent/faelle.jsonl"],
    ["--url", f"http://127.0.0.1:{freier_port()}/v1", "--versuche", "1"],
    ["--bewerten", "fehlt"],
])
def test_nie_ein_traceback(tmp_path, argv):
    basis = ["--url", "http://127.0.0.1:9/v1", "--modell", "m"]
    r = subprocess.run([sys.executable, str(ROOT / "messen.py"), *basis, *argv, "--ausgabe", str(tmp_path)],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode in (1, 2)
    assert r.stderr.startswith("messen: ") and "Traceback" not in r.stderr


def test_ohne_vollstaendige_erste_zeile_beginnt_der_lauf_neu(cli, endpunkt, tmp_path):
    pfad = tmp_path / "ergebnisse" / "t.jsonl"
    pfad.parent.mkdir()
    pfad.write_bytes(b'{"einstellungen": {"modell": "m", "te')  # killed while writing the settings
    server = endpunkt()
    rc, out, err = cli(*messung(server.url, "--tag", "t"))
    assert rc == 0, err
    assert server.zahl() == 42
    assert zeilen(pfad)[0]["einstellungen"]["modell"] == "m" and len(zeilen(pfad)) == 43


def test_bewerten_eines_laufs_ohne_ausgabe(cli, endpunkt, tmp_path):
    server = endpunkt(immer((400, {"error": {"message": "bad"}}, {})))
    assert cli(*messung(server.url, "--tag", "t"))[0] == 1
    assert cli("--bewerten", "t") == (
        2, "", f"messen: {tmp_path / 'ergebnisse' / 't.jsonl'} holds no output yet; "
               "run the command that measures it\n")


@pytest.mark.parametrize("argv, meldung", [
    (["--pruefen", "--bewerten", "t"], "--pruefen and --bewerten are two modes of their own; give one of them"),
    (["--pruefen", "--vergleich", "a", "b"], "--pruefen and --vergleich are two modes of their own; give one of them"),
    (["--selbsttest", "--pruefen"], "--selbsttest and --pruefen are two modes of their own; give one of them"),
    (["--selbsttest", "--bewerten", "t"], "--selbsttest and --bewerten are two modes of their own; give one of them"),
    (["--selbsttest", "--bild", "x.svg"], "--bild goes with --bewerten TAG or --vergleich A B [C ...]"),
    (["--bewerten", "t", "--json", "--markdown"], "--json and --markdown are two forms of one summary; give one of them"),
])
def test_schalter_die_sich_ausschliessen(cli, argv, meldung):
    assert cli(*argv) == (2, "", f"messen: {meldung}\n")


# ---------------------------------------------------------------------------
# Paths no other test runs: the order not restored, a closed stdout, signals outside a run,
# a results file that cannot be read, a run graded on another case file or catalogue
# ---------------------------------------------------------------------------

def test_ein_fertiger_lauf_der_nicht_geordnet_werden_kann(cli, endpunkt, tmp_path):
    def antwort(fall, body, nummer):
        if fall["id"] == "S1-1":  # answered after every other case was asked: certainly out of order
            frist = time.monotonic() + 20
            while server.zahl() < 42 and time.monotonic() < frist:
                time.sleep(0.01)
        return richtig(fall, body, nummer)
    server = endpunkt(antwort)
    (tmp_path / "ergebnisse").mkdir()
    (tmp_path / "ergebnisse" / "t.jsonl.tmp").mkdir()  # the rewrite in case order cannot be made
    rc, out, err = cli(*messung(server.url, "--tag", "t", "--parallel", "2"))
    pfad = tmp_path / "ergebnisse" / "t.jsonl"
    assert rc == 0 and ALLE_100 in out.splitlines()
    # the server was identified before the first request and saved in the settings line: nothing is left to save
    assert meldungen(err) == [f"messen: {pfad} is complete but could not be put in case order (Is a directory)"]
    ids = [a["id"] for a in zeilen(pfad)[1:]]
    assert sorted(ids) == sorted(IDS) and ids != IDS and ids.index("S1-1") > ids.index("S1-2")
    assert cli("--bewerten", "t")[0] == 0  # read in any order


def test_ein_geschlossenes_stdout_endet_still(endpunkt, tmp_path):
    vorbereitet_pfad = tmp_path / "t.jsonl"
    r = subprocess.run([sys.executable, str(ROOT / "messen.py"), *messung(endpunkt().url, "--tag", "t"),
                        "--ausgabe", str(tmp_path)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and vorbereitet_pfad.exists()
    proc = subprocess.Popen([sys.executable, str(ROOT / "messen.py"), "--bewerten", "t", "--ausgabe", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader went away (| head) before a line was printed
    err = proc.stderr.read().decode()
    assert (proc.wait(timeout=30), err) == (1, "")


@pytest.mark.parametrize("signal_, status, wort", [(signal.SIGINT, 130, "interrupted"),
                                                   (signal.SIGTERM, 143, "terminated")])
def test_ein_signal_waehrend_pruefen(endpunkt, signal_, status, wort):
    frei = threading.Event()
    # --pruefen's first request is its own question, no case: held, then answered in a word
    server = endpunkt(lambda fall, body, nummer: (frei.wait(20), {"choices": [
        {"index": 0, "message": {"role": "assistant", "content": "OK"}, "finish_reason": "length"}]})[1])
    proc = subprocess.Popen([sys.executable, str(ROOT / "messen.py"), "--pruefen", *messung(server.url)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        frist = time.monotonic() + 10
        while server.zahl() == 0 and time.monotonic() < frist:
            time.sleep(0.02)
        assert server.zahl() == 1, "--pruefen never asked"
        proc.send_signal(signal_)
        out, err = proc.communicate(timeout=10)
    finally:
        frei.set()
    assert (proc.returncode, meldungen(err)) == (status, [f"messen: {wort}"])


def test_eine_ergebnisdatei_die_nicht_gelesen_werden_kann(cli, tmp_path):
    (tmp_path / "ergebnisse" / "t.jsonl").mkdir(parents=True)
    rc, out, err = cli("--bewerten", "t")
    assert (rc, out) == (2, "")
    assert err.startswith(f"messen: {tmp_path / 'ergebnisse' / 't.jsonl'}: cannot read (") and len(err.splitlines()) == 1


def test_bewerten_findet_die_falldatei_und_den_katalog_des_laufs(cli, endpunkt, tmp_path):
    """--bewerten takes the saved case file while its hash matches, else --faelle, else refuses in one line."""
    eigene = tmp_path / "eigene.jsonl"
    eigene.write_text("".join(json.dumps(f) + "\n" for f in FAELLE[:20]))
    vorbereitet(cli, *messung(endpunkt().url, "--tag", "t", "--faelle", str(eigene)))
    pfad = tmp_path / "ergebnisse" / "t.jsonl"
    assert json.loads(cli("--bewerten", "t", "--json")[1])["faelle"] == 20  # found by the saved path alone
    kopie = tmp_path / "kopie.jsonl"
    eigene.rename(kopie)
    assert cli("--bewerten", "t") == (
        2, "", f"messen: {pfad} was measured on a case file that is not found: {eigene} and "
               f"{messen.faelle_standard()} are gone or hold other cases; give the one it was measured on with "
               "--faelle FILE\n")
    assert json.loads(cli("--bewerten", "t", "--json", "--faelle", str(kopie))[1])["faelle"] == 20
    z = pfad.read_text().splitlines()
    e = json.loads(z[0])
    e["einstellungen"]["katalog_sha256"] = "0" * 64
    pfad.write_text("\n".join([json.dumps(e)] + z[1:]) + "\n")
    assert cli("--bewerten", "t", "--faelle", str(kopie)) == (
        2, "", f"messen: {pfad} was measured with a catalogue that is not found: the built-in one (another); "
               "give the one it was measured with as --katalog FILE\n")


def test_hilfe_nennt_beispiele_exit_status_und_den_ort_der_laeufe():
    r = subprocess.run([sys.executable, str(ROOT / "messen.py"), "--help"], capture_output=True, text=True,
                       timeout=30, env={**os.environ, "COLUMNS": "1000"})  # no path broken by wrapping
    assert r.returncode == 0
    hilfe = r.stdout.splitlines()
    assert "  messen --vergleich base finetune --streng                          before against after; exit 3 if " \
           "worse" in hilfe
    assert "--bewerten and --vergleich read the runs saved in ergebnisse/ of the current folder (or --ausgabe)." \
        in hilfe
    assert hilfe[-4].startswith("exit status: 0 a complete measurement") and hilfe[-1] == "is missing."
    # the --faelle default names the file it is, wherever messen runs from (argparse wraps the line)
    assert f"(default: the 42 cases installed with messen: {ROOT / 'faelle.jsonl'})" in " ".join(r.stdout.split())


@pytest.mark.parametrize("extra, beispiel", [("max_tokens=5", '{"max_tokens": 5}'), ("seed=7", '{"seed": 7}'),
                                            ("nonsense", '{"top_p": 0.9}')])
def test_extra_zeigt_die_json_form(cli, extra, beispiel):
    rc, out, err = cli("--selbsttest", "--extra", extra)
    assert (rc, out) == (2, "")
    assert err == f"messen: argument --extra: not JSON (Expecting value); give a JSON object such as '{beispiel}'\n"


@pytest.mark.parametrize("status", [501, 405])
def test_eine_adresse_die_keinen_post_nimmt(cli, endpunkt, status):
    server = endpunkt(lambda fall, body, nummer: (status, "<html><body>Unsupported method ('POST')</body></html>",
                                                  {"Content-Type": "text/html"}))
    basis = server.url.removesuffix("/v1/chat/completions")
    rc, out, err = cli("--url", basis + "/", "--modell", "m")
    assert rc == 1
    assert meldungen(err)[0] == (f"messen: S1-1: the server answered {status}: Unsupported method ('POST'); {basis}/ "
                                 "takes no POST of a chat completion: give the endpoint, such as "
                                 "http://host:port/v1/chat/completions (or the base URL ending in /v1)")
    assert server.zahl() == 1  # not retried: asking again cannot help
