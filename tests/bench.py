"""Benchmark: the two speed targets of messen.py, measured as ratios in one run.

    python3 tests/bench.py

1. Overhead: a whole 42-case run against an instant loopback endpoint, against the
   floor: a bare loop of 42 POSTs of the same size over one requests.Session in a
   fresh interpreter (start-up, the requests import, loopback HTTP). Target <= 1.5.
2. Parallel: against an endpoint that answers in 200 ms with 8 slots, the time of
   --parallel 1 over the time of --parallel 8. Target >= 5.

Both servers are messen.py's own loopback endpoint (127.0.0.1 only) in this process;
the measured programs run as subprocesses. Not collected by pytest (its name does not start with test_).
"""

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MESSEN = ROOT / "messen.py"
sys.path.insert(0, str(ROOT))

import messen  # noqa: E402  (its loopback endpoint, and a request body of the real size)

FAELLE, _ = messen.lade_faelle(ROOT / "faelle.jsonl")
RUNDEN = 7  # runs of each program in the overhead measurement, alternating; the median counts

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


def dauer(argv):
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    return time.perf_counter() - start


def messen_lauf(url, ordner, tag, *extra):
    return [sys.executable, str(MESSEN), "--url", url, "--modell", "bench", "--tag", tag,
            "--ausgabe", ordner, "--neu", *extra]


def overhead(ordner):
    s, url = server(0, 64)
    body = Path(ordner) / "body.json"
    body.write_text(json.dumps(messen.anfrage(FAELLE[12], "bench", 0.0, {})))
    boden, lauf = [], []
    for i in range(RUNDEN):
        boden.append(dauer([sys.executable, "-c", FLOOR, url, str(body)]))
        lauf.append(dauer(messen_lauf(url, ordner, "overhead")))
    s.shutdown()
    return statistics.median(boden), statistics.median(lauf)


def parallel(ordner):
    s, url = server(0.2, 8)
    eins = dauer(messen_lauf(url, ordner, "p1", "--parallel", "1"))
    acht = dauer(messen_lauf(url, ordner, "p8", "--parallel", "8"))
    s.shutdown()
    return eins, acht


def main():
    with tempfile.TemporaryDirectory() as ordner:
        boden, lauf = overhead(ordner)
        print(f"overhead: 42 bare POSTs {boden:.3f} s, messen.py run {lauf:.3f} s (medians of {RUNDEN}): "
              f"ratio {lauf / boden:.2f} (target <= 1.5)")
        eins, acht = parallel(ordner)
        print(f"parallel: 200 ms server with 8 slots, --parallel 1 {eins:.2f} s, --parallel 8 {acht:.2f} s: "
              f"speed-up {eins / acht:.1f}x (target >= 5)")
        ok = lauf / boden <= 1.5 and eins / acht >= 5
    print("both targets met" if ok else "a target was missed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
