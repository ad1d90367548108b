"""Benchmark: BFCL's 800 multi-turn cases against a loopback endpoint that plays their ground truth, and what a
regrade costs beside BFCL's own checker on the same transcripts.

    MESSEN_BFCL=1 python3 tests/bench_bfcl_mehrzug.py [--stichprobe N]

1. All 800 cases in one command of messen, --parallel 1. Target: 100 % in each category, and BFCL's multi-turn
   overall 100 %. A case of multi_turn_base and its twin in miss_param or long_context can be alike in messages
   and tools (24 turns are) and unlike in their ground truth; the scripted model tells them apart by the order
   messen asks them in (bfcl_spieler.Spieler's der_reihe_nach). The endpoint runs in a process of its own and
   writes down every request; then each category alone, a command each, for the time a category takes.
2. messen's own cost per request: its wall time over the same requests sent by a bare loop
   (one requests.Session, in order, to the same endpoint), per request.
3. The regrade: messen's grading of the four runs' saved outputs (bewerte_gespeichert: every step graded, every
   case run again on BFCL's backends), in this process with its cases read, against BFCL's own runner and checker
   (bfcl_pruefer.mehrzug) on the same transcripts, also with its cases read. Target <= 2x. Beside it the whole
   command, `messen --bewerten` (start-up, the files read and checked, the report).

Needs bfcl-eval (MESSEN_BFCL=1 installs it without its dependencies) and mpmath. 127.0.0.1 only.
Not collected by pytest (its name does not start with test_).
"""

import copy
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import bfcl_pruefer  # noqa: E402
import bfcl_spieler  # noqa: E402

SPIELER = """
import json, sys, threading
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
sys.path.insert(0, {tests!r})
import bfcl_pruefer, bfcl_spieler
spieler = bfcl_spieler.Spieler({ordner!r}, None, {kategorien!r}, bfcl_spieler.signaturen(bfcl_pruefer.backends()),
                               der_reihe_nach=True)
log = open({log!r}, "w")
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = -1  # headers and body in one send: no delayed-ACK stall
    disable_nagle_algorithm = True
    def do_POST(self):
        roh = self.rfile.read(int(self.headers["Content-Length"]))
        log.write(roh.decode() + "\\n")
        d = json.dumps(spieler.antwort(json.loads(roh))).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(d))); self.end_headers(); self.wfile.write(d)
    def log_message(self, *a): pass
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_port, flush=True)
s.serve_forever()
"""


def spieler(ordner, kategorien, log):
    p = subprocess.Popen([sys.executable, "-c", SPIELER.format(tests=str(ROOT / "tests"), ordner=str(ordner),
                                                               kategorien=kategorien, log=str(log))],
                         stdout=subprocess.PIPE, text=True)
    return p, f"http://127.0.0.1:{p.stdout.readline().strip()}/v1/chat/completions"


def main():
    stichprobe = sys.argv[sys.argv.index("--stichprobe") + 1:][:1] if "--stichprobe" in sys.argv else []
    ordner, urteil = bfcl_pruefer.daten(), bfcl_pruefer.mehrzug()
    if urteil is None:
        sys.exit("bfcl-eval is not at hand: MESSEN_BFCL=1 installs it")
    tmp = Path(tempfile.mkdtemp())
    messen_s = bar_s = anfragen = 0
    for kategorie in ("alle", *bfcl_spieler.KATEGORIEN):
        kategorien = bfcl_spieler.KATEGORIEN if kategorie == "alle" else (kategorie,)
        log = tmp / f"{kategorie}.log"
        p, url = spieler(ordner, kategorien, log)
        try:
            t = time.perf_counter()
            r = subprocess.run([sys.executable, str(ROOT / "messen.py"), "--url", url, "--modell", "m", "--faelle",
                                str(ordner), "--stufen", ",".join(kategorien), "--tag", kategorie, "--ausgabe",
                                str(tmp), "--json", *(["--stichprobe", *stichprobe] if stichprobe else [])],
                               capture_output=True, text=True, check=True)
            dauer = time.perf_counter() - t
            bodies = log.read_text().splitlines()
            p.kill()  # a fresh one for the bare loop: the scripted model counts the cases begun
            p, url = spieler(ordner, kategorien, tmp / f"{kategorie}.nochmal.log")
            t = time.perf_counter()
            with requests.Session() as s:
                for b in bodies:
                    s.post(url, data=b.encode(), headers={"Content-Type": "application/json"}).json()
            bar = time.perf_counter() - t
        finally:
            p.kill()
        k = json.loads(r.stdout)["bfcl"]
        print(f"{kategorie}: {', '.join(f'{s} {x:.0%}' for s, x in k['stufen'].items())}, multi-turn overall "
              f"{k['multi_turn']:.0%}; {len(bodies)} requests; messen {dauer:.1f} s, the bare loop {bar:.1f} s: "
              f"{1000 * (dauer - bar) / len(bodies):.2f} ms of messen's per request")
        if kategorie != "alle":
            messen_s, bar_s, anfragen = messen_s + dauer, bar_s + bar, anfragen + len(bodies)
    print(f"the four alone: messen {messen_s:.1f} s, the bare loop {bar_s:.1f} s, {anfragen} requests: "
          f"{1000 * (messen_s - bar_s) / anfragen:.2f} ms of messen's per request")
    regrade(ordner, urteil, tmp)


def regrade(ordner, urteil, tmp):
    """messen's grading of each run, and its --bewerten, against BFCL's runner and checker on its transcripts."""
    sys.path.insert(0, str(ROOT))
    import messen
    messen_s = bfcl_s = note_s = 0
    for kategorie in bfcl_spieler.KATEGORIEN:
        mfaelle = {f.id: f for f in messen.lade_bfcl(ordner / f"BFCL_v4_{kategorie}.json")[0]}
        gespeichert = [json.loads(z) for z in (tmp / f"{kategorie}.jsonl").read_text().splitlines()[1:]]
        t = time.perf_counter()
        for a in gespeichert:
            messen.bewerte_gespeichert(mfaelle[a["id"]], a)
        note_s += time.perf_counter() - t
        t = time.perf_counter()
        r = subprocess.run([sys.executable, str(ROOT / "messen.py"), "--bewerten", kategorie, "--ausgabe", str(tmp),
                            "--faelle", str(ordner), "--stufen", kategorie, "--json"], capture_output=True, text=True,
                           check=True)
        messen_s += time.perf_counter() - t
        eigene = set(json.loads(r.stdout)["bfcl"]["fehlgeschlagen"])
        faelle = bfcl_spieler.faelle(ordner, (kategorie,))
        laeufe = []
        for zeile in (tmp / f"{kategorie}.jsonl").read_text().splitlines()[1:]:
            a = json.loads(zeile)
            schritte = [z for z in a["zuege"] if z["zweck"] == "schritt"]
            laeufe.append((a["id"], [[z["nachricht"] for z in schritte if z["runde"] == t]
                                     for t in range(schritte[-1]["runde"] + 1)]))
        t = time.perf_counter()
        bfcls = {i for i, runden in laeufe if not urteil(copy.deepcopy(faelle[i][0]), faelle[i][1], runden)}
        bfcl_s += time.perf_counter() - t
        assert bfcls == eigene, (kategorie, bfcls ^ eigene)
    print(f"regrade: messen's grading {note_s:.2f} s, BFCL's runner and checker {bfcl_s:.2f} s: "
          f"{note_s / bfcl_s:.2f}x (target <= 2); the whole command, messen --bewerten, {messen_s:.1f} s for the four")


if __name__ == "__main__":
    main()
