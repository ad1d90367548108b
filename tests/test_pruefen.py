"""--pruefen as a checklist that shows itself: each line as its check ends, kept on Ctrl-C, and a
request that times out asked once."""

import json
import signal
import subprocess
import sys

import pytest

from test_diagnose import LAST
from conftest import meldungen, ROOT, Halter, completion, messung, richtig, warte_bis


def gesund(fall, body, nummer):
    if fall is None:
        return completion({"role": "assistant", "content": "OK"}, "length")
    return richtig(fall, body, nummer)


def starte_pruefen(url, *extra):
    return subprocess.Popen([sys.executable, str(ROOT / "messen.py"), "--pruefen", *messung(url, *extra)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def test_jede_zeile_sobald_ihre_pruefung_endet_und_strg_c_behaelt_sie(endpunkt):
    # the S3 requests are held: the lines before them must already stand, and stay when Ctrl-C comes
    halter = Halter()
    server = endpunkt(lambda fall, body, nummer: halter() if fall and fall["stufe"] == "S3"
                      else gesund(fall, body, nummer))
    proc = starte_pruefen(server.url)
    try:
        zeilen = [proc.stdout.readline() for _ in range(6)]  # blocks until each is printed
        assert [z[:7] for z in zeilen] == ["Checkin", "  ok   ", "  ok   ", "  ok   ", "  ok   ", "  ok   "]
        warte_bis(lambda: server.zahl("S3-1") == 1, was="the held S3 request")
        assert server.zahl() == 2 + 1 + 1  # the model and the catalogue, S1-1, and S3-1 held
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=10)
    finally:
        halter.los.set()
    assert (proc.returncode, meldungen(err)) == (130, ["messen: interrupted"])
    assert zeilen[5] == "  ok    usage and finish_reason are present\n" and rest == ""
    # each check said as it starts (stderr), the held one last: no wait is blind
    assert err.splitlines()[:-1] == [f"messen: checking {was} ..." for was in (
        "the endpoint answers and accepts the model name", "which server this is", "the catalogue reaches the prompt",
        "a call comes back as tool_calls", "usage and finish_reason are present",
        "streamed and plain answers give the same calls; several calls come in one answer")]


def test_ein_zeitueberschreitender_check_wird_nicht_wiederholt(cli, endpunkt):
    halter = Halter()
    server = endpunkt(lambda fall, body, nummer: halter() if fall and fall["id"] == "S1-1"
                      else gesund(fall, body, nummer))
    try:
        status, out, err = cli("--pruefen", *messung(server.url, "--timeout", "1"))
    finally:
        halter.los.set()
    assert status == 1
    assert ("  FAIL  a call comes back as tool_calls: S1-1: Timeout: no complete answer within --timeout 1 s; not "
            "asked again, since at temperature 0 it would take as long again: a model that repeats itself until its "
            "token limit is cut short by --extra '{\"max_tokens\": 256}'; a slow server needs a larger --timeout"
            ) in out.splitlines()
    assert server.zahl("S1-1") == 1


def test_ein_server_der_nie_antwortet(endpunkt):
    halter = Halter()
    server = endpunkt(halter)
    try:
        r = subprocess.run([sys.executable, str(ROOT / "messen.py"), "--pruefen", *messung(server.url, "--timeout",
                                                                                           "3")],
                           capture_output=True, text=True, timeout=60)
    finally:
        halter.los.set()
    assert (r.returncode, server.zahl()) == (1, 1)
    assert r.stdout.splitlines()[1].startswith("  FAIL  the endpoint answers and accepts the model name: Timeout: "
                                               "no complete answer within --timeout 3 s; not asked again")


def test_die_zeitueberschreitung_wiederholt_keine_gegebene_einstellung(cli, endpunkt):
    """With max_tokens given, the hint never tells the user to add it: the server is slow."""
    halter = Halter()
    server = endpunkt(lambda fall, body, nummer: halter() if fall and fall["id"] == "S1-1"
                      else gesund(fall, body, nummer))
    try:
        status, out, err = cli("--pruefen", *messung(server.url, "--timeout", "1", "--extra", '{"max_tokens": 256}'))
    finally:
        halter.los.set()
    assert ("  FAIL  a call comes back as tool_calls: S1-1: Timeout: no complete answer within --timeout 1 s; not "
            "asked again, since at temperature 0 it would take as long again: the answers are cut at max_tokens 256 "
            "already (--extra), so the server is slow: give a larger --timeout than 1 s (--pruefen says how long "
            "its requests take)") in out.splitlines()


def test_der_takt_plant_den_lauf_und_das_timeout(cli, endpunkt):
    """The pace of the checks' requests of cases, the run these settings plan at it (--parallel, --ganz's jobs
    counted), and the --timeout to give where the one given is short: three times the slowest, in tens."""
    import re
    import time

    def langsam(fall, body, nummer):
        if fall is not None:
            time.sleep(0.5)
        return gesund(fall, body, nummer)
    status, out, err = cli("--pruefen", *messung(endpunkt(langsam).url, "--timeout", "1", "--parallel", "2",
                                                 "--ganz"))
    takt = next(z for z in out.splitlines() if z.startswith("Pace: "))
    m = re.fullmatch(r"Pace: a request of a case took (\d+\.\d) s here on average \(4 requests of S1, S3, S4: "
                     r"median \d+\.\d s, the slowest (\d+\.\d) s; answers cut at 512 tokens\); 2 copies of one "
                     r"request asked at once gave 40 completion tokens in \d+\.\d s, it alone 20 in \d+\.\d s: "
                     r"--parallel 2 gains (\d\.\d)x here; the run these "
                     r"settings plan, 126 requests at --parallel 2, takes about (\d+):(\d\d) at that pace "
                     r"\(\d+:\d\d to \d+:\d\d, were every request as fast as the fastest or as slow as the "
                     r"slowest\)\. --timeout 1 s is short for it: give --timeout (\d+)\. " + LAST, takt)
    assert m, takt  # 42 of the chapter's, 84 of S7's 26 jobs
    mittel, langsamste, gewinn, minuten, sekunden, genug = float(m[1]), float(m[2]), float(m[3]), int(m[4]), \
        int(m[5]), int(m[6])
    assert 1 <= gewinn <= 2  # a threaded server: two at once, as fast as one at a time at most twice
    assert mittel >= 0.5 and abs(60 * minuten + sekunden - 126 * mittel / gewinn) <= 126 * 0.05 / gewinn + 2
    assert genug % 10 == 0 and 3 * langsamste <= genug < 3 * langsamste + 10


def test_der_takt_misst_was_parallel_gewinnt(cli, endpunkt):
    """A server that answers one request at a time gains nothing from --parallel 4: the copies of S4-1 asked four
    at once, twice, take four times one's time, and the run is planned at the pace of one request after the other
    (before, 42 requests over --parallel 4, a quarter of the time the run took)."""
    import re
    import threading
    import time
    einer = threading.Lock()

    def nacheinander(fall, body, nummer):
        with einer:
            if fall is not None:
                time.sleep(0.2)
            return gesund(fall, body, nummer)
    server = endpunkt(nacheinander)
    status, out, err = cli("--pruefen", *messung(server.url, "--parallel", "4"))
    assert status == 0 and " 8 checks, at most 22 requests " in out.splitlines()[0]
    assert server.zahl("S4-1") == 1 + 2 * 4  # alone, then four at once, twice
    takt = next(z for z in out.splitlines() if z.startswith("Pace: "))
    m = re.search(r"\(4 requests of S1, S3, S4: .*\); 4 copies of one request asked at once gave 80 completion "
                  r"tokens in (\d+\.\d) s, it alone 20 in (\d+\.\d) s: --parallel 4 gains 1\.0x here; the run "
                  r"these settings plan, 42 requests at --parallel 4, takes about (\d+):(\d\d) at that pace", takt)
    assert m, takt
    zusammen, allein = float(m[1]), float(m[2])
    assert zusammen >= 4 * 0.2 and allein >= 0.2
    mittel = float(re.search(r"took (\d+\.\d) s here on average", takt)[1])
    assert abs(60 * int(m[3]) + int(m[4]) - 42 * mittel) <= 42 * 0.05 + 2  # no gain: one after the other


def test_der_takt_reicht_bis_zur_grenze(cli, endpunkt):
    """Answers whose seconds rise with their tokens: the range of the plan runs to every answer at the cap the user
    chose, the prompt's time and each token's read off the checks' answers (0.1 s and 4 ms a token here)."""
    import re
    import time

    def je_token(fall, body, nummer):
        if fall is None:
            return gesund(fall, body, nummer)
        tokens = 100 if fall["stufe"] == "S3" else 20
        time.sleep(0.1 + 0.004 * tokens)
        return dict(gesund(fall, body, nummer), usage={"prompt_tokens": 1500, "completion_tokens": tokens})
    status, out, err = cli("--pruefen", *messung(endpunkt(je_token).url, "--extra", '{"max_tokens": 256}'))
    takt = next(z for z in out.splitlines() if z.startswith("Pace: "))
    m = re.search(r"the run these settings plan, 42 requests at --parallel 1, takes about \d+:\d\d at that pace "
                  r"\(\d+:\d\d to (\d+):(\d\d), were every request as fast as the fastest or every answer to run "
                  r"to the cap of 256 tokens, at (\d+\.\d) ms a token here\)\.", takt)
    assert m, takt
    gelesen = float(m[3]) / 1000
    assert 0.0035 <= gelesen <= 0.006  # 4 ms a token, and what a busy loopback adds
    bis = 60 * int(m[1]) + int(m[2])
    assert 42 * (0.1 + 0.004 * 256) - 1 <= bis <= 42 * (0.1 + gelesen * 256) + 6  # 47 s and what the loopback adds
    # without a cap the run's answers are not cut at the checks' 512 tokens: no bound is read off them
    status, out, err = cli("--pruefen", *messung(endpunkt(je_token).url))
    takt = next(z for z in out.splitlines() if z.startswith("Pace: "))
    assert "were every request as fast as the fastest or as slow as the slowest)." in takt, takt


@pytest.mark.parametrize("temp, anfragen", [("0", 2 * 42), ("0.7", 42)])
def test_der_takt_zaehlt_die_zwillinge_des_stroms(cli, endpunkt, temp, anfragen):
    """Streamed at temperature 0, every answer has its plain twin (FRAGEREGEL): the run these settings plan is
    twice the requests; above 0 no twin is asked."""
    status, out, err = cli("--pruefen", *messung(endpunkt(gesund).url, "--stream", "--temp", temp))
    takt = next(z for z in out.splitlines() if z.startswith("Pace: "))
    assert (status, f"the run these settings plan, {anfragen} requests at --parallel 1" in takt) == (0, True), takt


# ---------------------------------------------------------------------------
# --pruefen applies the run's own checks: seven faulty shapes fail or cannot tell, clean ones are set up
# ---------------------------------------------------------------------------

def geformt(aendern):
    """A healthy server whose calls are changed as a faulty one sends them; its own question answered plain."""
    def antwort(fall, body, nummer):
        x = json.loads(json.dumps(gesund(fall, body, nummer)))
        return aendern(x, fall) if fall else x
    return antwort


def rufe(x):
    return x["choices"][0]["message"].get("tool_calls") or []


def als_objekt(x, fall):
    for c in rufe(x):
        c["function"]["arguments"] = json.loads(c["function"]["arguments"])
    return x


def doppelt(x, fall):
    for c in rufe(x):
        c["function"]["arguments"] = json.dumps(c["function"]["arguments"])
    return x


def ohne_id(x, fall):
    for c in rufe(x):
        c["id"] = ""
    return x


def nur_der_erste(x, fall):
    """The parser stopped after the first call: the rest stays in the content as Hermes blocks."""
    m = x["choices"][0]["message"]
    if len(rufe(x)) > 1:
        m["content"] = "".join(f'<tool_call>{{"name": "{c["function"]["name"]}", "arguments": '
                               f'{c["function"]["arguments"]}}}</tool_call>' for c in m["tool_calls"][1:])
        m["tool_calls"] = m["tool_calls"][:1]
    return x


def leer(x, fall):
    return completion({"role": "assistant", "content": ""}, "stop", {"prompt_tokens": 900, "completion_tokens": 9}) \
        if not fall["erwartet"] else x


def verloren(x, fall):
    return completion({"role": "assistant", "content": None}, "tool_calls") if not fall["erwartet"] else x


from test_server import SERVER  # noqa: E402  the pages each family serves about itself

FORMEN = {  # shape -> (its pages, how its answers differ, the line --pruefen gives)
    "tgi_objekt": (SERVER["TGI"], als_objekt, "  FAIL  the answers keep the protocol a run checks: calls whose "
                   "arguments came as a JSON object, not as a string of JSON in 2 of 5 answers"),
    "sglang_objekt": (SERVER["SGLang"], als_objekt, "  FAIL  the answers keep the protocol a run checks: calls whose "
                      "arguments came as a JSON object, not as a string of JSON in 2 of 5 answers"),
    "doppelt": (SERVER["llama.cpp"], doppelt, "  FAIL  the answers keep the protocol a run checks: calls whose "
                "arguments were encoded twice, a JSON string holding the object's JSON text in 2 of 5 answers: the "
                "server's"),
    "lm_studio_ohne_id": (SERVER["LM Studio"], ohne_id, "  FAIL  the answers keep the protocol a run checks: calls "
                          "without an id, or with an id another call of the same answer has in 2 of 5 answers"),
    "nur_der_erste": (SERVER["vLLM"], nur_der_erste, "  FAIL  the answers keep the protocol a run checks: calls in "
                      "tool_calls with more left as text beside them in 1 of 5 answers: the server's"),
    "leer": (SERVER["vLLM"], leer, "  FAIL  the answers keep the protocol a run checks: answers with neither a call "
             "nor text for the tokens the server counted in 1 of 5 answers: the server's"),
    "verloren": (SERVER["SGLang"], verloren, "  ?     the answers keep the protocol a run checks: cannot tell; "
                 "outputs with finish_reason tool_calls but no call in 1 of 5 answers"),
}


@pytest.mark.parametrize("form", list(FORMEN))
def test_pruefen_sieht_was_der_lauf_sieht(cli, endpunkt, form):
    seiten, aendern, zeile = FORMEN[form]
    status, out, err = cli("--pruefen", *messung(endpunkt(geformt(aendern), seiten).url))
    assert any(z.startswith(zeile) for z in out.splitlines()), out
    assert "The server is set up for a measurement." not in out
    assert (status, out.splitlines()[-1].split(",")[0]) == ((1, "1 check failed: fix it before a long run.") if
                                                            "FAIL" in zeile else (0, "Nothing failed"))


@pytest.mark.parametrize("name", ["vLLM", "llama.cpp", "Ollama", "Proxy"])
def test_pruefen_auf_sauberen_servern(cli, endpunkt, name):
    """Clean vLLM, llama.cpp, Ollama and an OpenAI-shaped proxy: set up, the protocol's check among the oks."""
    status, out, err = cli("--pruefen", *messung(endpunkt(gesund, SERVER[name]).url))
    assert out.splitlines()[-1] == "The server is set up for a measurement." and status == 0, out
    assert any(z.startswith("  ok    the answers keep the protocol a run checks (") for z in out.splitlines())
