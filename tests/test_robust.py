"""Any answer, any disk, two runs at once: never a crash, a hang or a damaged file.

Each test sends what a hostile or broken server sends, over real loopback HTTP.
"""

import gzip
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import (urteil_von, FAELLE, ROOT, completion, meldungen, messung, openai_nachricht, richtig, tropfend,
                      warte_bis, zeilen)

IDS = [f["id"] for f in FAELLE]
ALLE_100 = "By stage: S1 100 %, S2 100 %, S3 100 %, S4 100 %, S5 100 %."
MESSEN = [sys.executable, str(ROOT / "messen.py")]


def json_lauf(cli, *argv):
    status, out, err = cli(*argv, "--json")
    assert status == 0, err
    return json.loads(out)


def nur_in(anders, antwort=richtig):
    """`anders[id](fall)` for the named cases on their first request; the rest answered right."""
    def a(fall, body, nummer):
        if fall and fall["id"] in anders and nummer == 1:
            return anders[fall["id"]](fall)
        return antwort(fall, body, nummer)
    return a


def text(inhalt):
    return lambda fall: completion({"role": "assistant", "content": inhalt})


def argumente(args_text):
    """The expected tool called with `args_text` as its arguments string."""
    return lambda fall: completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": fall["erwartet"][0]["name"], "arguments": args_text}}]})


# ---------------------------------------------------------------------------
# 1. Any answer is saved, graded and shown, in time linear in its length
# ---------------------------------------------------------------------------

PATHOLOGISCH = {  # (what the server sends, in S4-1 as text and in S2-1 as arguments)
    "lone surrogate": "\ud83d",
    "deep brackets": "[" * 5000,
    "fence and whitespace": "```json" + " " * 200_000,
    "unclosed thinks": "<think>" * 50_000,
    "unclosed tool calls": "<tool_call>" + " " * 200_000 + "x",
    "angle brackets": "<" * 200_000,
}


@pytest.mark.parametrize("inhalt", PATHOLOGISCH.values(), ids=PATHOLOGISCH.keys())
def test_jede_antwort_wird_gespeichert_und_bewertet(cli, endpunkt, tmp_path, inhalt):
    server = endpunkt(nur_in({"S4-1": text(inhalt), "S2-1": argumente(inhalt)}))
    status, out, err = cli(*messung(server.url, "--tag", "t"))
    assert status == 0, err
    pfad = tmp_path / "ergebnisse" / "t.jsonl"
    roh = pfad.read_bytes()
    roh.decode("utf-8")  # every saved line is valid UTF-8 ...
    gespeichert = zeilen(pfad)
    assert len(gespeichert) == 43
    s41 = gespeichert[1 + IDS.index("S4-1")]
    assert s41["zuege"][0]["nachricht"]["content"] == inhalt  # ... and reads back to what the server sent
    k = json_lauf(cli, "--bewerten", "t")
    assert k["fehlgeschlagen"][0] == "S2-1"  # arguments that are no JSON object: a malformed call
    assert k["formkorrekt"] == 27 / 28
    status, out2, _ = cli("--bewerten", "t")
    assert status == 0 and out2 == out


def test_ein_zu_tief_geschachtelter_koerper_wird_gekappt_gelesen(cli, endpunkt, tmp_path):
    tief = "[" * 3000 + "]" * 3000
    koerper = ('{"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", '
               '"tool_calls": [{"type": "function", "function": {"name": "update_contact", "arguments": '
               '{"contact_id": ' + tief + '}}}]}}]}')
    server = endpunkt(nur_in({"S2-7": lambda fall: (200, koerper, {})}))
    status, out, err = cli(*messung(server.url, "--tag", "t"))
    assert status == 0, err
    # the body keeps 100 levels; contact_id opens on level 9, so 92 lists wrap the marker
    gekappt = json.dumps(json.loads("[" * 92 + '"(nested too deep to read)"' + "]" * 92))
    assert f"      came:     update_contact(contact_id={gekappt[:120]}... ({len(gekappt)} characters))" \
        in out.splitlines()
    assert json_lauf(cli, "--bewerten", "t")["fehlgeschlagen"] == ["S2-7"]


def test_ein_langer_wert_wird_in_der_liste_gekuerzt(cli, endpunkt):
    lang = {"name": "get_contact", "args": {"contact_id": "x" * 1_000_000}}
    server = endpunkt(nur_in({"S2-1": lambda fall: completion(openai_nachricht([lang]))}))
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    assert f'      came:     get_contact(contact_id="{"x" * 119}... (1000002 characters))' in out.splitlines()
    assert len(out) < 5000


# ---------------------------------------------------------------------------
# 2. One run per results file
# ---------------------------------------------------------------------------

def starte(url, ordner, *extra):
    return subprocess.Popen([*MESSEN, *messung(url, "--tag", "t"), "--ausgabe", str(ordner), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def haelt_an(fall_id, frei):
    """Answers right, but holds the request for fall_id until `frei` is set: a run certain to be mid-way."""
    def antwort(fall, body, nummer):
        if fall["id"] == fall_id:
            assert frei.wait(30), "the test never released the held request"
        return richtig(fall, body, nummer)
    return antwort


@pytest.mark.parametrize("parallel", ["1", "3"])
def test_ein_zweiter_lauf_desselben_tags_wird_abgelehnt(endpunkt, tmp_path, parallel):
    frei = threading.Event()
    server = endpunkt(haelt_an("S1-3", frei))
    erster = starte(server.url, tmp_path, "--parallel", parallel)
    try:
        warte_bis(lambda: server.zahl("S1-3") == 1, was="the first run's request for S1-3")
        # refused at once: a second run that measured would wait for the held S1-3 past the subprocess's limit
        zweiter = subprocess.run([*MESSEN, *messung(server.url, "--tag", "t"), "--ausgabe", str(tmp_path),
                                  "--parallel", parallel], capture_output=True, text=True, timeout=20)
    finally:
        frei.set()
    assert (zweiter.returncode, zweiter.stdout, zweiter.stderr) == (
        2, "", f"messen: another run is measuring tag 't' now ({tmp_path / 't.jsonl'}); "
               "wait for it to end, or use another --tag\n")
    out, err = erster.communicate(timeout=20)
    assert erster.returncode == 0, err
    assert ALLE_100 in out.splitlines()
    assert [a["id"] for a in zeilen(tmp_path / "t.jsonl")[1:]] == IDS
    assert server.zahl() == 42


def test_nach_kill_9_geht_der_lauf_weiter(endpunkt, tmp_path):
    frei = threading.Event()
    server = endpunkt(haelt_an("S1-6", frei))
    erster = starte(server.url, tmp_path)
    try:
        warte_bis(lambda: server.zahl("S1-6") == 1, was="the first run's request for S1-6")
        erster.kill()  # SIGKILL: no handler runs, and the OS drops its lock
        erster.communicate(timeout=10)
    finally:
        frei.set()
    assert [a["id"] for a in zeilen(tmp_path / "t.jsonl")[1:]] == IDS[:5]  # the kill cut the run short
    zweiter = subprocess.run([*MESSEN, *messung(server.url, "--tag", "t"), "--ausgabe", str(tmp_path)],
                             capture_output=True, text=True, timeout=30)
    assert zweiter.returncode == 0, zweiter.stderr
    assert server.zahl() == 6 + 37  # the second run asked only for the 37 missing
    ids = [a["id"] for a in zeilen(tmp_path / "t.jsonl")[1:]]
    assert ids == IDS  # nothing lost, nothing twice


# ---------------------------------------------------------------------------
# 3. --extra adds, never replaces
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("schluessel, warum", [
    ("model", "use --modell"), ("temperature", "use --temp"), ("n", "use --n; each output is its own request"),
    ("stream", "use --stream"), ("stream_options", "--stream sets them"), ("messages", "the bench sets them for every case"),
    ("tools", "the bench sends its catalogue"), ("tool_choice", 'the bench asks with "auto"'),
])
def test_extra_ersetzt_nichts(cli, endpunkt, schluessel, warum):
    server = endpunkt()
    rc, out, err = cli(*messung(server.url, "--extra", json.dumps({"top_p": 0.9, schluessel: 1})))
    assert (rc, out, err) == (2, "", f"messen: argument --extra: '{schluessel}' is the bench's to set ({warum}); "
                                     "--extra adds keys such as top_p, max_tokens, seed or chat_template_kwargs, "
                                     "and replaces none\n")
    assert server.zahl() == 0


def test_extra_fuegt_hinzu(cli, endpunkt):
    server = endpunkt()
    rc, _, err = cli(*messung(server.url, "--extra", '{"max_tokens": 64, "seed": 7}'))
    assert rc == 0, err
    body = server.anfragen[0][1]
    assert (body["max_tokens"], body["seed"], body["temperature"], body["tool_choice"]) == (64, 7, 0.0, "auto")


# ---------------------------------------------------------------------------
# 4. Transport: a body cut off is retried; --timeout bounds the whole request
# ---------------------------------------------------------------------------

def roh(kopf, koerper, pause=0.0):
    """Write a response by hand: headers, then the body (byte by byte with a pause, if given)."""
    def schreibe(handler):
        handler.wfile.write(kopf.encode() + b"\r\n\r\n")
        if not pause:
            handler.wfile.write(koerper)
            return
        for b in koerper:
            handler.wfile.write(bytes([b]))
            handler.wfile.flush()
            time.sleep(pause)
    return lambda fall: schreibe


def ganz(fall):
    return json.dumps(richtig(fall, {}, 1)).encode()


@pytest.mark.parametrize("fehler", [
    lambda fall: roh(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(ganz(fall))}",
                     ganz(fall)[:40])(fall),                               # IncompleteRead
    lambda fall: roh("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
                     "Content-Length: 30", gzip.compress(ganz(fall))[:30])(fall),  # a broken gzip body
    lambda fall: roh("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked",
                     b"10\r\n{\"choices\": [{\"in")(fall),                  # a chunked body cut off
], ids=["incomplete read", "broken gzip", "chunked cut off"])
def test_ein_abgeschnittener_koerper_wird_wiederholt(cli, endpunkt, fehler):
    server = endpunkt(nur_in({"S1-2": fehler, "S3-4": fehler}))
    rc, out, err = cli(*messung(server.url))
    assert rc == 0, err
    assert ALLE_100 in out.splitlines()
    assert (server.zahl(), server.zahl("S1-2"), server.zahl("S3-4")) == (44, 2, 2)


def test_ein_koerper_der_immer_abbricht_haelt_mit_dem_grund(cli, endpunkt):
    kopf = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500"
    server = endpunkt(lambda fall, body, nummer: roh(kopf, b'{"choices": [')(fall))
    rc, out, err = cli(*messung(server.url, "--versuche", "2"))
    assert rc == 1
    assert meldungen(err)[0].startswith("messen: S1-1: the body was cut off (")
    assert meldungen(err)[0].endswith("; asking again (attempt 2 of 2)")
    assert meldungen(err)[1].startswith("messen: S1-1: no answer from the server after 2 attempts: "
                                        "the body was cut off (")
    assert "IncompleteRead" in meldungen(err)[1]
    assert server.zahl() == 2


def test_timeout_begrenzt_die_ganze_anfrage(cli, endpunkt):
    """A server that trickles a byte every 50 ms never lets one socket read time out."""
    daten = ganz(next(f for f in FAELLE if f["id"] == "S1-1"))
    tropfen = tropfend(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(daten)}", daten)
    server = endpunkt(nur_in({"S1-1": tropfen}))
    rc, out, err = cli(*messung(server.url, "--timeout", "1"))
    assert rc == 0, err
    assert server.zahl("S1-1") == 2 and ALLE_100 in out.splitlines()
    assert tropfen.gesendet[0] < len(daten)  # cut mid-body: the whole of it would take len * 50 ms, over 20 s


def test_timeout_nach_allen_versuchen(cli, endpunkt):
    daten = b"{" + b" " * 400 + b"}"
    tropfen = tropfend(f"HTTP/1.1 200 OK\r\nContent-Length: {len(daten)}", daten)
    server = endpunkt(tropfen)
    rc, out, err = cli(*messung(server.url, "--timeout", "0.3", "--versuche", "2"))
    assert (rc, meldungen(err)[:2]) == (1, [
        "messen: S1-1: Timeout: no complete answer within --timeout 0.3 s; asking again (attempt 2 of 2)",
        "messen: S1-1: no answer from the server after 2 attempts: Timeout: no complete answer within --timeout 0.3 s"])
    assert len(tropfen.gesendet) == 2 and max(tropfen.gesendet) < len(daten)  # each attempt cut mid-body


def test_ein_stream_wird_benannt(cli, endpunkt):
    sse = 'data: {"choices": [{"index": 0, "delta": {"content": "Hi"}}]}\n\ndata: [DONE]\n\n'
    server = endpunkt(lambda fall, body, nummer: (200, sse, {"Content-Type": "text/event-stream"}))
    rc, out, err = cli(*messung(server.url))
    assert rc == 1
    assert meldungen(err)[0] == ("messen: S1-1: the server answered with a stream (SSE), not one chat completion; "
                                 "the bench asks for one only with --stream, so the server or a proxy forces it")
    assert server.zahl() == 1


def test_eine_umleitung_die_ein_get_macht_wird_benannt(cli, endpunkt):
    server = endpunkt(lambda fall, body, nummer: (301, "", {"Location": "/v2/chat/completions"}))
    rc, out, err = cli(*messung(server.url))
    assert rc == 1
    ziel = server.url.replace("/v1/", "/v2/")
    assert meldungen(err)[0] == (f"messen: S1-1: the server redirected the request (301 to {ziel}) and it arrived "
                                 "as a GET, not a POST; give the address it redirects to as --url")


# ---------------------------------------------------------------------------
# 5. Files: one line, exit 2 before any request, exit 1 with the count mid-run
# ---------------------------------------------------------------------------

def test_ausgabe_ist_eine_datei(cli, endpunkt, tmp_path):
    datei = tmp_path / "datei"
    datei.write_text("x")
    server = endpunkt()
    for ausgabe in (datei, datei / "unter"):
        rc, out, err = cli(*messung(server.url, "--tag", "t"), "--ausgabe", str(ausgabe))
        assert rc == 2 and out == ""
        assert err in (f"messen: {ausgabe}: cannot write the results there (File exists)\n",
                       f"messen: {ausgabe}: cannot write the results there (Not a directory)\n")
    assert server.zahl() == 0


def test_ein_zu_langer_name(cli, endpunkt, tmp_path):
    server = endpunkt()
    rc, out, err = cli(*messung(server.url, "--modell", "m" * 300))
    assert (rc, out) == (2, "")
    # the class of failure, not one errno's words: one line, the path named, what to do
    assert len(err.splitlines()) == 1 and err.startswith("messen: ") and "m" * 300 in err
    assert err.endswith(") (use a shorter --tag)\n") and ": cannot write the results there (" in err
    assert server.zahl() == 0


def test_ein_ordner_der_nichts_annimmt(cli, endpunkt):
    """sysfs refuses a new folder even to root, as a read-only folder refuses a user."""
    server = endpunkt()
    rc, out, err = cli(*messung(server.url, "--tag", "t"), "--ausgabe", "/sys/kernel/ergebnisse")
    assert (rc, out, len(err.splitlines())) == (2, "", 1)  # EPERM here, EROFS where /sys is mounted read-only
    assert err.startswith("messen: /sys/kernel/ergebnisse: cannot write the results there (") and err.endswith(")\n")
    assert server.zahl() == 0


def test_eine_volle_platte_mitten_im_lauf(endpunkt, tmp_path):
    """RLIMIT_FSIZE stands for a full disk: writes past the limit fail with EFBIG."""
    server = endpunkt()
    grenze = 8_000  # bytes: the settings line and some outputs (a whole run is about 18,000)

    def begrenzt():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (grenze, grenze))
    r = subprocess.run([*MESSEN, *messung(server.url, "--tag", "t"), "--ausgabe", str(tmp_path)],
                       capture_output=True, text=True, timeout=30, preexec_fn=begrenzt)
    pfad = tmp_path / "t.jsonl"
    gespeichert = len(pfad.read_bytes().split(b"\n")) - 2  # complete lines less the settings line
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert meldungen(r.stderr) == [f"messen: cannot write {pfad} (File too large); {gespeichert} of 42 outputs are "
                                   f"saved in {pfad}; the same command again asks for the {42 - gespeichert} "
                                   "missing once there is room"]
    assert 0 < gespeichert < 42
    r = subprocess.run([*MESSEN, *messung(server.url, "--tag", "t"), "--ausgabe", str(tmp_path)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert [a["id"] for a in zeilen(pfad)[1:]] == IDS


def test_sigterm_endet_wie_strg_c(endpunkt, tmp_path):
    def antwort(fall, body, nummer):
        if fall["id"] == "S1-5":
            time.sleep(5)
        return richtig(fall, body, nummer)
    server = endpunkt(antwort)
    proc = starte(server.url, tmp_path)
    warte_bis(lambda: server.zahl("S1-5") == 1)
    proc.terminate()
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 143
    assert err.splitlines()[-1] == (f"messen: terminated; 4 of 42 outputs are saved in {tmp_path / 't.jsonl'}; "
                                    "the same command again asks for the 38 missing")


# ---------------------------------------------------------------------------
# 6. A saved run never passes for a new one
# ---------------------------------------------------------------------------

def test_ein_gezeigter_lauf_sagt_es_im_kopf(cli, endpunkt, tmp_path):
    server = endpunkt()
    rc, neu, _ = cli(*messung(server.url, "--tag", "t"))
    assert rc == 0 and "Shown as saved" not in neu
    rc, gezeigt, _ = cli(*messung(server.url, "--tag", "t"))
    kopf = gezeigt.splitlines()[1]
    ende = max(a["ende"] for a in zeilen(tmp_path / "ergebnisse" / "t.jsonl")[1:])
    zuletzt = time.strftime("%Y-%m-%d %H:%M", time.localtime(ende))
    datum = zeilen(tmp_path / "ergebnisse" / "t.jsonl")[0]["einstellungen"]["datum"]  # as saved, not as the clock is
    assert kopf == (f"Shown as saved: measured {datum}, last answer {zuletzt}; "
                    "nothing was asked now (--neu measures anew).")
    assert (json_lauf(cli, *messung(server.url, "--tag", "t"))["nur_gezeigt"],
            json_lauf(cli, *messung(server.url, "--tag", "u"))["nur_gezeigt"]) == (True, False)
    assert server.zahl() == 84


# ---------------------------------------------------------------------------
# 7. Smaller things
# ---------------------------------------------------------------------------

def test_ein_erwarteter_wert_mit_leerzeichen_wird_abgelehnt(cli, tmp_path):
    zeilen_ = (ROOT / "faelle.jsonl").read_text().splitlines()
    nr = next(i for i, z in enumerate(zeilen_) if '"id": "S2-7"' in z or '"id":"S2-7"' in z)
    zeilen_[nr] = zeilen_[nr].replace('"status": "kunde"', '"status": "kunde "').replace('"status":"kunde"',
                                                                                       '"status":"kunde "')
    datei = tmp_path / "faelle.jsonl"
    datei.write_text("\n".join(zeilen_) + "\n")
    assert cli("--selbsttest", "--faelle", str(datei)) == (
        2, "", f"messen: {datei}:{nr + 1}: the expected value of 'status' in update_contact has leading or "
               "trailing spaces; a stripped answer can never equal it\n")


def test_der_selbsttest_beschuldigt_die_falldatei(cli, tmp_path):
    faelle = [dict(f) for f in FAELLE]
    s25 = next(i for i, f in enumerate(faelle) if f["id"] == "S2-5")
    s24 = next(i for i, f in enumerate(faelle) if f["id"] == "S2-4")
    faelle[s25]["frage"] = faelle[s24]["frage"]
    datei = tmp_path / "faelle.jsonl"
    datei.write_text("".join(json.dumps(f) + "\n" for f in faelle))
    rc, out, err = cli("--selbsttest", "--faelle", str(datei))
    assert (rc, meldungen(err)) == (1, [
        f"messen: the self-test did not score 100 % everywhere: {datei}:{s24 + 1} (S2-4) and {datei}:{s25 + 1} "
        "(S2-5) ask the same question but expect different calls; the case file is at fault"])


def test_bewerten_und_vergleich_nennen_den_gegebenen_tag(cli, endpunkt, tmp_path):
    server = endpunkt()
    assert cli(*messung(server.url, "--tag", "t"))[0] == 0
    assert cli(*messung(server.url, "--tag", "t", "--neu"))[0] == 0
    # each run's date as saved, not the clock at assert time (which may have passed midnight)
    alt, neu = (zeilen(tmp_path / "ergebnisse" / f"{t}.jsonl")[0]["einstellungen"]["datum"] for t in ("t.alt-1", "t"))
    rc, out, _ = cli("--bewerten", "t.alt-1")
    assert (rc, out.splitlines()[0]) == (0, f"Model m, temp 0.0, n 1, tag t.alt-1: 42 cases, 42 outputs, measured {alt}")
    rc, out, _ = cli("--vergleich", "t.alt-1", "t")
    assert rc == 0
    assert out.splitlines()[:2] == [f"A: Model m, temp 0.0, n 1, tag t.alt-1: 42 cases, 42 outputs, measured {alt}",
                                    f"B: Model m, temp 0.0, n 1, tag t: 42 cases, 42 outputs, measured {neu}"]
    assert urteil_von(out).startswith("0 cases better and 0 worse in t than in t.alt-1")


def test_mehrere_choices(cli, endpunkt):
    def zwei(fall, body, nummer):
        falsch = completion(openai_nachricht([{"name": "list_calendars", "args": {}}]))["choices"][0]
        body = richtig(fall, body, nummer)
        body["choices"] = [dict(falsch, index=1), body["choices"][0]]  # index 0 comes second
        return body
    server = endpunkt(zwei)
    rc, out, err = cli(*messung(server.url))
    assert rc == 0, err
    assert ALLE_100 in out.splitlines()
    assert ("  verworfen      42: outputs held several choices: the one with index 0 was graded, the others "
            "dropped; the server or a proxy set n. The choice graded is the model's answer as any other; nothing is "
            "blamed on the server for it.") in out.splitlines()
    # a note that blames no one: the verdict takes the graded choice as the model's, and so does the heading
    assert "Diagnosis: nothing blamed on the server; a note" in out.splitlines()


def test_nach_einem_fehlschlag_ohne_ausgabe_gelten_neue_einstellungen(cli, endpunkt, tmp_path):
    falsch = endpunkt(lambda fall, body, nummer: (404, {"error": {"message": "model 'qwn' not found"}}, {}))
    rc, _, err = cli("--url", falsch.url, "--modell", "qwn", "--tag", "t")
    assert rc == 1
    assert meldungen(err) == [
        "messen: S1-1: the server answered 404: model 'qwn' not found "
        "(check --modell and --url against the server's /v1/models)",
        f"messen: 0 of 42 outputs are saved in {tmp_path / 'ergebnisse' / 't.jsonl'}; fix what the server objects "
        "to, then run again (with none saved, the same tag takes corrected settings)"]
    gut = endpunkt()
    rc, out, err = cli("--url", gut.url, "--modell", "qwen", "--tag", "t")
    assert rc == 0, err
    assert zeilen(tmp_path / "ergebnisse" / "t.jsonl")[0]["einstellungen"]["modell"] == "qwen"


# ---------------------------------------------------------------------------
# 8. Installing: a `messen` command that finds its case file
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("art", ["--prefix", "--target"])
def test_pip_install_gibt_einen_befehl_der_seine_faelle_findet(tmp_path, rad, art):
    ziel = tmp_path / "ziel"
    vorher = installiert()
    # --ignore-installed: a messen installed where the tests run is never uninstalled by this test
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed", art,
                        str(ziel), str(rad)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert installiert() == vorher  # the environment the tests run in is as it was
    modul = next(ziel.glob("messen.py" if art == "--target" else "lib*/python*/site-packages/messen.py"))
    anderswo = tmp_path / "anderswo"
    anderswo.mkdir()
    r = subprocess.run([str(ziel / "bin" / "messen"), "--selbsttest"], cwd=anderswo, capture_output=True,
                       text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(modul.parent)))
    assert r.returncode == 0, r.stderr
    assert ALLE_100 in r.stdout.splitlines()
    assert list(anderswo.iterdir()) == []


def installiert():
    """Where the running environment has messen installed, and its version (None: not installed)."""
    import importlib.metadata
    try:
        d = importlib.metadata.distribution("messen")
    except importlib.metadata.PackageNotFoundError:
        return None
    return str(d.locate_file("")), d.version, [str(f) for f in d.files or []]


def test_eine_zahl_von_5000_ziffern_in_usage(cli, endpunkt):
    """A token count of more digits than Python converts is no count: the answer is kept and graded, and the run
    goes on (it was read as no chat completion, asked again, and the run stopped)."""
    riesig = "7" * 5000

    def antwort(fall, body, nummer):
        text = json.dumps(completion(openai_nachricht(fall["erwartet"])))
        return 200, text.replace('"choices"', f'"usage": {{"prompt_tokens": {riesig}, "completion_tokens": 5}}, '
                                              '"choices"', 1), {}
    k = json_lauf(cli, *messung(endpunkt(antwort).url))
    assert (k["auftraege_gelungen"], k["tokens"]) == (42 / 42, {"prompt": 0, "completion": 42 * 5})
