"""Benchmark: the speed and memory targets of messen.py, measured as ratios in one run.

    python3 tests/bench.py

1. Overhead: a whole 42-case run against an instant loopback endpoint, against the
   floor: a bare loop of 42 POSTs of the same size over one requests.Session in a
   fresh interpreter (start-up, the requests import, loopback HTTP). Target <= 1.2,
   for messen as installed (`messen`, or `python3 -m messen`: its bytecode cached, as
   pip leaves it). `python3 messen.py` is shown beside it: a script is compiled anew
   on every start, about 45 ms for this file on the 2-core machine.
2. Parallel: against an endpoint that answers in 200 ms with 8 slots, the time of
   --parallel 1 over the time of --parallel 8. Target >= 5.
3. Pathological answers: each hostile shape at 5 MB is read from its body, graded,
   saved and read back; target well under a second. Its time over that of the same
   shape at 0.5 MB shows the cost is linear (about 10; quadratic would be about 100).
4. A hostile run: S2-7 answered with 30,000 <tool_call> tags each opening a call (360 KB), the rest right;
   the whole run and a regrade (--bewerten) each, target < 10 s on two cores.
5. A large BFCL file: 12,000 simple_python cases (the sample's 60, again and again, 11 MB
   with their possible answers), read a line at a time: the peak of memory while reading
   over what the cases read hold, target <= 1.1 (the file is never held whole); and what
   --stichprobe 10 holds over that, target <= 0.01.

Both servers are messen.py's own loopback endpoint (127.0.0.1 only) in this process;
the measured programs run as subprocesses. Not collected by pytest (its name does not start with test_).
"""

import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MESSEN = ROOT / "messen.py"
sys.path.insert(0, str(ROOT))

import messen  # noqa: E402  (its loopback endpoint, and a request body of the real size)

FAELLE, _ = messen.lade_faelle(ROOT / "faelle.jsonl")
RUNDEN = 15  # runs of each program in the overhead measurement, alternating; the median counts

FLOOR = """
import json, sys, requests
body = json.load(open(sys.argv[2]))
s = requests.Session()
for _ in range(42):
    s.post(sys.argv[1], json=body, timeout=30).json()
"""


def server(verzoegerung, plaetze):
    """messen.py's own loopback endpoint, slowed down; (server, url)."""
    return messen.selbsttest_server(FAELLE, verzoegerung, plaetze)


def dauer(argv, env=None):
    """Wall seconds of one program. subtle: a blocking wait, not subprocess.run(timeout=...), which polls in
    steps of up to 50 ms and so rounds every time up to the next step; a watchdog stops a hung program."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wachhund = threading.Timer(120, proc.kill)
    wachhund.start()
    try:
        status = proc.wait()
    finally:
        wachhund.cancel()
    if status:
        raise subprocess.CalledProcessError(status, argv)
    return time.perf_counter() - start


def messen_lauf(url, ordner, tag, *extra, modul=False):
    programm = ["-m", "messen"] if modul else [str(MESSEN)]
    return [sys.executable, *programm, "--url", url, "--modell", "bench", "--tag", tag,
            "--ausgabe", ordner, "--neu", *extra]


def mit_bytecode(ordner):
    """The environment of an installed messen: its bytecode cached (in a folder of the benchmark's own)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return dict(env, PYTHONPATH=str(ROOT), PYTHONPYCACHEPREFIX=str(Path(ordner) / "pycache"))


def overhead(ordner):
    """Medians of the floor, the installed messen and the script, run in turns: (floor, installed, script)."""
    s, url = server(0, 64)
    body = Path(ordner) / "body.json"
    body.write_text(json.dumps(messen.anfrage(FAELLE[12], messen.Lauf(modell="bench"))))
    env = mit_bytecode(ordner)
    dauer(messen_lauf(url, ordner, "modul", modul=True), env)  # writes the bytecode once
    boden, modul, skript = [], [], []
    for i in range(RUNDEN):
        boden.append(dauer([sys.executable, "-c", FLOOR, url, str(body)]))
        modul.append(dauer(messen_lauf(url, ordner, "modul", modul=True), env))
        skript.append(dauer(messen_lauf(url, ordner, "skript")))
    s.shutdown()
    return statistics.median(boden), statistics.median(modul), statistics.median(skript)


def parallel(ordner):
    s, url = server(0.2, 8)
    eins = dauer(messen_lauf(url, ordner, "p1", "--parallel", "1"))
    acht = dauer(messen_lauf(url, ordner, "p8", "--parallel", "8"))
    s.shutdown()
    return eins, acht


KLEIN, GROSS = 500_000, 5_000_000  # characters of a pathological answer


def als_text(inhalt):
    return {"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": inhalt}}]}


def als_argumente(args):
    return {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [
        {"type": "function", "function": {"name": "get_contact", "arguments": args}}]}}]}


def koerper_tief(laenge):
    tief = "[" * (laenge // 2) + "]" * (laenge // 2)
    return ('{"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": [{"function": '
            '{"name": "get_contact", "arguments": {"contact_id": ' + tief + '}}}]}}]}')


PATHOLOGISCH = {  # name -> laenge -> the body as the server sends it
    "[ x N as content": lambda n: json.dumps(als_text("[" * n)),
    "[ x N as arguments": lambda n: json.dumps(als_argumente("[" * n)),
    "```json + N spaces": lambda n: json.dumps(als_text("```json" + " " * n)),
    "<think> x N, never closed": lambda n: json.dumps(als_text("<think>" * (n // 7))),
    "<tool_call> + N spaces": lambda n: json.dumps(als_text("<tool_call>" + " " * n + "x")),
    "lone surrogates x N": lambda n: json.dumps(als_text("\ud83d" * n)),
    "N/30 calls as text": lambda n: json.dumps(als_text('{"name": "x", "arguments": {}} ' * (n // 30))),
    "N/100 tool_calls": lambda n: json.dumps({"choices": [{"index": 0, "message": {"tool_calls": [
        {"function": {"name": "get_contact", "arguments": '{"contact_id": "a"}'}}] * (n // 100)}}]}),
    "body nested N/2 deep": koerper_tief,
}


class Koerper:
    """What chat_antwort reads of a response: status, bytes, charset, headers, redirects."""

    def __init__(self, text):
        self.status_code, self.content, self.encoding, self.history = 200, text.encode(), None, []
        self.headers = {"Content-Type": "application/json"}


def einmal(text, fall):
    """Seconds to grade one saved answer (as --bewerten does), and for the whole path of a run:
    receive it, grade it, save its line, read the line back and grade it again, show it."""
    start = time.perf_counter()
    antwort = messen.chat_antwort(Koerper(text), 0.0)
    b = messen.bewerte_ausgabe(fall, antwort.nachricht, antwort.finish)
    zeile = messen.als_zeile({"nachricht": antwort.nachricht})  # a results line holds what came, no grade
    gelesen = json.loads(zeile)["nachricht"]
    messen.aufrufe_text(b.aufrufe)
    mitte = time.perf_counter()
    messen.bewerte_ausgabe(fall, gelesen, antwort.finish)
    ende = time.perf_counter()
    return ende - mitte, ende - start


def pathologisch():
    fall = next(f for f in FAELLE if f.id == "S2-7")
    zeilen, schlimmste = [], 0.0
    for name, bauen in PATHOLOGISCH.items():
        (klein, _), (gross, weg) = einmal(bauen(KLEIN), fall), einmal(bauen(GROSS), fall)
        schlimmste = max(schlimmste, gross)
        zeilen.append(f"  {name:<27} grading 0.5 MB {klein:.3f} s, 5 MB {gross:.3f} s (ratio {gross / klein:4.1f}); "
                      f"whole path 5 MB {weg:.2f} s")
    return zeilen, schlimmste


def feindlich(ordner):
    """(seconds of the run, of its regrade) with S2-7 answered by 30,000 <tool_call> tags each opening a call, on the tests' own
    loopback endpoint (tests/conftest.py), every other case right."""
    from conftest import Endpunkt, completion, richtig

    def antwort(fall, body, nummer):
        if fall["id"] == "S2-7":
            return completion({"role": "assistant", "content": "<tool_call>{" * 30_000})
        return richtig(fall, body, nummer)
    s = Endpunkt(antwort)
    lauf = dauer(messen_lauf(s.url, ordner, "feind"))
    regrade = dauer([sys.executable, str(MESSEN), "--bewerten", "feind", "--ausgabe", ordner])
    s.stop()
    return lauf, regrade


def bfcl_speicher(ordner):
    """(peak while reading over what the cases hold, what a sample of 10 holds over that) for 12,000 cases."""
    quelle = ROOT / "tests" / "bfcl"
    ziel = Path(ordner) / "bfcl"
    (ziel / "possible_answer").mkdir(parents=True)
    for unter in ("", "possible_answer/"):
        zeilen = (quelle / f"{unter}BFCL_v4_simple_python.json").read_text().splitlines()
        (ziel / f"{unter}BFCL_v4_simple_python.json").write_text("".join(
            json.dumps({**json.loads(zeilen[i % len(zeilen)]), "id": f"simple_python_{i}"}) + "\n"
            for i in range(12_000)))
    gehalten = []
    for stichprobe in (None, 10):
        gc.collect()
        tracemalloc.start()
        faelle = messen.lade_faelle(ziel, stichprobe=stichprobe)
        gc.collect()
        gehalten.append(tracemalloc.get_traced_memory())
        tracemalloc.stop()
        del faelle
    (ganz, spitze), (probe, _) = gehalten
    return spitze / ganz, probe / ganz, ganz


def main():
    with tempfile.TemporaryDirectory() as ordner:
        boden, lauf, skript = overhead(ordner)
        print(f"overhead: 42 bare POSTs {boden:.3f} s, messen as installed {lauf:.3f} s (medians of {RUNDEN}): "
              f"ratio {lauf / boden:.2f} (target <= 1.2); python3 messen.py {skript:.3f} s, ratio {skript / boden:.2f} "
              "(compiled on every start)")
        eins, acht = parallel(ordner)
        print(f"parallel: 200 ms server with 8 slots, --parallel 1 {eins:.2f} s, --parallel 8 {acht:.2f} s: "
              f"speed-up {eins / acht:.1f}x (target >= 5)")
        zeilen, schlimmste = pathologisch()
        print("pathological answers:")
        print("\n".join(zeilen))
        print(f"pathological: slowest grading of a 5 MB answer {schlimmste:.2f} s (target < 1)")
        feind, regrade = feindlich(ordner)
        print(f"hostile run: 30,000 <tool_call> tags in S2-7, the run {feind:.2f} s, its regrade {regrade:.2f} s "
              "(target < 10 each)")
        spitze, probe, ganz = bfcl_speicher(ordner)
        print(f"large BFCL file: 12,000 cases hold {ganz / 2 ** 20:.1f} MiB; the peak while reading is {spitze:.2f} "
              f"of that (target <= 1.1); --stichprobe 10 holds {probe:.4f} of it (target <= 0.01)")
        ok = lauf / boden <= 1.2 and eins / acht >= 5 and schlimmste < 1 and max(feind, regrade) < 10 and \
            spitze <= 1.1 and probe <= 0.01
    print("all five targets met" if ok else "a target was missed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
