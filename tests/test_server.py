"""Know the server before you blame it: loopback endpoints that tell who they are as each real one does.

/v1/models's owned_by as each server's source fills it (vLLM "vllm", llama.cpp "llamacpp", Ollama
"library", LM Studio "organization_owner", SGLang "sglang"), TGI's /info, llama.cpp's /props with its
chat template; then what the diagnosis and --pruefen say of one and the same model output on each.
"""

import json

import pytest

import messen
from conftest import (meldungen, erwartet_von, BY_ID, UNERKANNT, completion, fall_von, messung, openai_nachricht, richtig, vorbereitet, zeilen,
                      zweiter_zug)

QWEN_VORLAGE = ("{%- if tools %}<|im_start|>system\n# Tools\n<tools>{{ tools }}</tools>\nFor each function call, "
                "return a json object within <tool_call></tool_call> XML tags{%- endif %}")


def modelle(besitzer, modell="m"):
    return {"object": "list", "data": [{"id": modell, "object": "model", "owned_by": besitzer}]}


SERVER = {
    "vLLM": {"/v1/models": modelle("vllm"), "/version": {"version": "0.32.0"}},
    "llama.cpp": {"/v1/models": modelle("llamacpp"),
                  "/props": {"chat_template": QWEN_VORLAGE, "build_info": "b7000-abc123",
                             "chat_template_caps": {"supports_tools": True, "supports_tool_calls": True}}},
    "llama.cpp ohne props": {"/v1/models": modelle("llamacpp")},
    "Ollama": {"/v1/models": modelle("library"), "/api/version": {"version": "0.12.3"}},
    # a namespaced model: Ollama names its namespace as the owner, its own page tells it
    "Ollama mit Namensraum": {"/v1/models": modelle("hf.co/me", "hf.co/me/ft"), "/api/version": {"version": "0.12.3"}},
    "LM Studio": {"/v1/models": modelle("organization_owner")},
    "SGLang": {"/v1/models": modelle("sglang")},
    "TGI": {"/v1/models": modelle("m"), "/info": {"model_id": "m", "version": "3.3.4"}},
    "unbekannt": {},
    "Proxy": {"/v1/models": modelle("openai")},  # LiteLLM names every model's owner "openai": the server is unknown
}
FREMDE_SCHALTER = ("--jinja", "--enable-auto-tool-choice", "--tool-call-parser", "--chat-template-file",
                   "--reasoning-format", "Modelfile", "--chat-template")


def bereit(fall, body, nummer):
    """Right in every case; 'OK' to --pruefen's own questions."""
    return richtig(fall, body, nummer) if fall else completion({"role": "assistant", "content": "OK"})


def nackt(fall, body, nummer):
    """A model that writes its calls as bare JSON in content (not its template's <tool_call> tags)."""
    soll = erwartet_von(fall)
    if not soll:
        return richtig(fall, body, nummer)
    if body.get("tool_choice") == "required":  # the probe: it loops until the limit
        return completion({"role": "assistant", "content": '{"name": "get_contact"}}' + ".000000" * 60}, "length")
    return completion({"role": "assistant", "content": "\n".join(
        json.dumps({"name": s["name"], "arguments": s["args"]}) for s in soll)})


def diagnose_von(out):
    return out.split("\n\nDiagnosis")[1].split("\n\n")[0].splitlines()


# ---------------------------------------------------------------------------
# Who is it: the settings line, the summary, --pruefen
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, erkannt", [
    ("vLLM", {"name": "vLLM", "version": "0.32.0", "beleg": "/v1/models: owned_by vllm", "vorlage": None}),
    ("llama.cpp", {"name": "llama.cpp", "version": "b7000-abc123", "beleg": "/v1/models: owned_by llamacpp",
                   "vorlage": {"werkzeuge": True, "form": "<tool_call>", "sha256": "c0b94690239d"}}),  # the template's
    ("Ollama", {"name": "Ollama", "version": "0.12.3", "beleg": "/v1/models: owned_by library", "vorlage": None}),
    ("Ollama mit Namensraum", {"name": "Ollama", "version": "0.12.3", "beleg": "/api/version: its version alone",
                               "vorlage": None}),
    ("LM Studio", {"name": "LM Studio", "version": None, "beleg": "/v1/models: owned_by organization_owner",
                   "vorlage": None}),
    ("SGLang", {"name": "SGLang", "version": None, "beleg": "/v1/models: owned_by sglang", "vorlage": None}),
    ("TGI", {"name": "TGI", "version": "3.3.4", "beleg": "/info: model_id and version", "vorlage": None}),
    ("unbekannt", None),
    ("Proxy", None),
])
def test_der_server_wird_erkannt(cli, endpunkt, tmp_path, name, erkannt):
    server = endpunkt(bereit, SERVER[name])
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    assert zeilen(tmp_path / "ergebnisse" / "m.jsonl")[0]["einstellungen"]["server"] == erkannt
    zeile = out.splitlines()[1]
    assert zeile == (f"Server: {messen.server_wort(erkannt)}" if erkannt else
                     "Server: not identified (its /v1/models names no owner messen knows, and no page of its own "
                     "told it)")
    assert server.zahl() == 42  # what it says of itself costs no request of the model
    assert json.loads(cli("--bewerten", "m", "--json")[1])["auftraege_gelungen"] == 1.0
    status, out, err = cli("--pruefen", *messung(server.url))
    assert out.splitlines()[2] == (f"  ok    which server this is: {messen.server_wort(erkannt)}" if erkannt else
                                   "  ?     which server this is: not identified (its /v1/models names no owner "
                                   "messen knows, and no page of its own told it)")


def roh(daten):
    """A GET answered with these bytes as they are, JSON or not."""
    def sende(h):
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(daten)))
        h.end_headers()
        h.wfile.write(daten)
    return sende


def test_tief_verschachtelte_seiten_sagen_nichts(cli, endpunkt, tmp_path):
    """JSON nested deeper than Python's parser goes, on every page messen asks: the server is not identified."""
    tief = roh(b'{"data": ' + b"[" * 100000 + b"]" * 100000 + b"}")
    server = endpunkt(bereit, {s: tief for s in ("/v1/models", "/version", "/props", "/api/version", "/info")})
    status, out, err = cli(*messung(server.url))
    assert status == 0 and meldungen(err) == []  # progress and where it saved only
    assert zeilen(tmp_path / "ergebnisse" / "m.jsonl")[0]["einstellungen"]["server"] is None
    status, out, err = cli("--pruefen", *messung(server.url))
    assert (status, meldungen(err)) == (0, []) and out.splitlines()[2] == UNERKANNT


def test_eine_basis_url_ohne_v1(endpunkt):
    assert messen.server_adressen("http://h:8/v1/chat/completions") == ("http://h:8", "http://h:8/v1/models")
    assert messen.server_adressen("https://h/proxy/v1/chat/completions?k=1") == (
        "https://h/proxy", "https://h/proxy/v1/models?k=1")
    assert messen.server_adressen("http://h:8/chat/completions") == ("http://h:8", "http://h:8/v1/models")


# ---------------------------------------------------------------------------
# One model output, bare JSON, read on each server
# ---------------------------------------------------------------------------

def test_llama_cpp_mit_werkzeug_vorlage_und_einer_schleifenden_probe(cli, endpunkt):
    server = endpunkt(nackt, SERVER["llama.cpp"])
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    assert diagnose_von(out) == [
        ": the server did its part; the model did not",
        f"  eigenes_format 37: {messen.EIGENES_FORMAT} (llama.cpp's /props: its chat template renders the tools, "
        "which asks for <tool_call>; it wrote bare JSON)."]
    assert "parser is off" not in out and "--jinja" not in out
    assert server.zahl() == 42  # no probe: the server showed its parser on


@pytest.mark.parametrize("name", ["llama.cpp ohne props", "vLLM", "TGI"])
def test_ein_server_der_required_erzwingt_wird_nicht_gefragt(cli, endpunkt, name):
    server = endpunkt(nackt, SERVER[name])
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    d = diagnose_von(out)
    assert d[0] == ": whose some calls are cannot be told" and d[1].startswith("  text_ungeklaert 37: calls were read "
                                                                               "from the answer text (bare JSON)")
    wer = name.split()[0]
    assert (f"(no probe was asked: {wer} forces tool_choice \"required\" with a grammar where its structured output "
            "works, so its answer would prove nothing about whether its parser reads this model's form)") in d[1]
    assert "parser is off" not in out and server.zahl() == 42


def test_vllm_nennt_den_parser_der_die_form_liest(cli, endpunkt):
    status, out, err = cli(*messung(endpunkt(nackt, SERVER["vLLM"]).url))
    assert ("either the server does not read this form (set --enable-auto-tool-choice with the --tool-call-parser "
            "that reads the form the model writes (llama3_json for bare JSON)), or the model writes a form its "
            "template's parser does not read") in diagnose_von(out)[1]


def test_ollama_wird_nie_gefragt_und_heisst_nie_parser_aus(cli, endpunkt):
    server = endpunkt(nackt, SERVER["Ollama"])
    status, out, err = cli(*messung(server.url))
    d = diagnose_von(out)
    assert "(no probe was asked: Ollama ignores tool_choice (ollama/ollama #8421, #11171))" in d[1]
    assert "a model whose template renders the tools and reads the call form it writes (its Modelfile's TEMPLATE)" \
        in d[1]
    assert "parser is off" not in out and server.zahl() == 42


@pytest.mark.parametrize("name", ["unbekannt", "Proxy", "LM Studio", "SGLang"])
def test_ein_anderer_server_bekommt_keinen_fremden_schalter(cli, endpunkt, name):
    def als_text_auch_gefragt(fall, body, nummer):
        soll = erwartet_von(fall)
        return completion({"role": "assistant", "content": "".join(
            f"<tool_call>{json.dumps({'name': s['name'], 'arguments': s['args']})}</tool_call>" for s in soll)}) \
            if soll else richtig(fall, body, nummer)
    server = endpunkt(als_text_auch_gefragt, SERVER[name])
    status, out, err = cli(*messung(server.url))
    eigene = {"LM Studio": "the model's prompt template in LM Studio, with tool use on",
              "SGLang": "--tool-call-parser for the form the model writes (qwen25 for <tool_call>)"}.get(name)
    if name == "LM Studio":  # the probe tells: it came back as text again
        zeile = next(z for z in out.splitlines() if z.startswith("  aus_text       37: calls were read from the "
                                                                  "answer text, not from tool_calls"))
        assert zeile.endswith(f"reads another form: {eigene}. The figures above measure that setting, not the model.")
    else:  # SGLang forces "required" with a grammar, an unknown server may: no probe, cannot tell
        zeile = next(z for z in out.splitlines() if z.startswith("  text_ungeklaert 37: "))
        assert f"either the server does not read this form (set {eigene or messen.UNBEKANNTER_SERVER.parser}), " \
            "or the model writes a form its template's parser does not read" in zeile
        assert server.zahl() == 42  # no probe asked
    erlaubt = {"SGLang": ("--tool-call-parser",)}.get(name, ())
    assert not [s for s in FREMDE_SCHALTER if s in out and s not in erlaubt]
    status, out, err = cli("--pruefen", *messung(server.url))
    assert not [s for s in FREMDE_SCHALTER if s in out and s not in erlaubt]


# ---------------------------------------------------------------------------
# A handler's call syntax with the arguments lost: a call, never restraint, never "no call"
# ---------------------------------------------------------------------------

def funktions_syntax(fall, body, nummer):
    """Every answer a call in llama-cpp-python's handler syntax, its arguments lost: S5 and S4 too."""
    if not fall:
        return bereit(fall, body, nummer)
    name = (erwartet_von(fall) or [{"name": "book_room" if fall["stufe"] == "S5" else "list_contacts"}])[0]["name"]
    return completion({"role": "assistant", "content": f"functions.{name}:"})


def test_funktions_syntax_ist_ein_aufruf(cli, endpunkt):
    server = endpunkt(funktions_syntax)
    vorbereitet(cli, *messung(server.url))
    k = json.loads(cli("--bewerten", "m", "--json")[1])
    assert (k["stillgehalten"], k["stufen"]["S4"], k["stufen"]["S5"]) == (0 / 14, 0.0, 0.0)  # no restraint credited
    zweite = sum(len(BY_ID[i]["erwartet"]) - 1 for i in BY_ID if i.startswith("S3"))  # one attempt, one step
    assert (k["fehlerarten"]["kein_aufruf"], k["fehlerarten"]["ueberzaehlig"]) == (zweite, 14)
    assert k["fehlerarten"]["fehlerhaft"] == 8 + 12 + 8  # one malformed call in each S1-S3 case
    status, out, err = cli("--pruefen", *messung(server.url))
    zeile = next(z for z in out.splitlines() if "a call comes back as tool_calls" in z)
    assert zeile == ('  ?     a call comes back as tool_calls: cannot tell; in S1-1 a call came as text in a handler\'s '
                     'syntax with its arguments missing ("functions.get_contact:"): the model stopped there, or the '
                     f"server lost them; set {messen.UNBEKANNTER_SERVER.parser}, and look at the server's log")
    assert "the model answered without one" not in out


def test_im_vergleich_sind_verlorene_argumente_nicht_zu_klaeren(cli, endpunkt):
    vorbereitet(cli, *messung(endpunkt().url, "--tag", "a"))
    vorbereitet(cli, *messung(endpunkt(lambda f, b, n: funktions_syntax(f, b, n) if f["id"] in ("S2-1", "S2-2")
                                       else richtig(f, b, n)).url, "--tag", "b"))
    v = json.loads(cli("--vergleich", "a", "b", "--json")[1])
    assert v["unklar"] == ["S2-1", "S2-2"] and v["wessen"]["S2-1"]["gruende"] == ["argumente_fehlen"]


# ---------------------------------------------------------------------------
# One reading per run: no two lines explain the same evidence in opposite ways
# ---------------------------------------------------------------------------

FORMEN = {
    "hermes": lambda s: "".join(f"<tool_call>{json.dumps({'name': c['name'], 'arguments': c['args']})}</tool_call>"
                                for c in s),
    "nackt": lambda s: "\n".join(json.dumps({"name": c["name"], "arguments": c["args"]}) for c in s),
    "zaun": lambda s: "```json\n" + json.dumps([{"name": c["name"], "arguments": c["args"]} for c in s]) + "\n```",
    "pythonisch": lambda s: "[" + ", ".join(f"{c['name']}(" + ", ".join(f"{k}={v!r}" for k, v in c["args"].items())
                                            + ")" for c in s) + "]",
}


LESARTEN = [(server, gemischt, probe) for server in SERVER for probe in ("text", "nativ", "schleife")
            for gemischt in [("nackt", "zaun")]]  # every server and every probe answer, with a fence beside
LESARTEN += [(server, gemischt, "text") for server in ("unbekannt", "vLLM", "llama.cpp")
             for gemischt in [("hermes", "zaun"), ("pythonisch",), ("hermes", "nackt")]]  # every other mix


@pytest.mark.parametrize("server_name, gemischt, probe", LESARTEN)
def test_eine_lesart_je_lauf(cli, endpunkt, server_name, gemischt, probe):
    def antwort(fall, body, nummer):
        soll = erwartet_von(fall)
        if not soll:
            return richtig(fall, body, nummer)
        if body.get("tool_choice") == "required":
            return {"text": completion({"role": "assistant", "content": FORMEN[gemischt[0]](soll)}),
                    "nativ": richtig(fall, body, nummer), "schleife": nackt(fall, body, nummer)}[probe]
        return completion({"role": "assistant", "content": FORMEN[gemischt[int(fall["id"][-1]) % len(gemischt)]](soll)})
    status, out, err = cli(*messung(endpunkt(antwort, SERVER[server_name]).url))
    assert status == 0, err
    text = "\n".join(diagnose_von(out))
    aus = "parser is off" in text
    an = "the server's parser works" in text or "renders the tools" in text
    assert not (aus and an), text
    assert not (aus and "text_ungeklaert" in text), text
    if server_name in ("vLLM", "llama.cpp", "llama.cpp ohne props", "Ollama", "Ollama mit Namensraum", "TGI"):
        assert not aus  # none of them can have its parser off and still answer tool_choice "auto"


def test_der_strom_wird_hinter_einem_prompt_cache_nicht_beschuldigt(cli, endpunkt):
    zaehler = {"S3-1": 0}

    def cache(fall, body, nummer):
        """The first S3-1 request is answered fresh, every later one from a cache that answers otherwise."""
        if fall and fall["id"] == "S3-1" and not zweiter_zug(body):
            zaehler["S3-1"] += 1
            soll = fall["erwartet"] if zaehler["S3-1"] == 1 else fall["erwartet"][:1]
            return completion(openai_nachricht(soll), "tool_calls")
        return richtig(fall, body, nummer) if fall else completion({"role": "assistant", "content": "OK"})
    status, out, err = cli("--pruefen", *messung(endpunkt(cache).url))
    zeile = next(z for z in out.splitlines() if "streamed and plain" in z)
    assert zeile == ("  ok    streamed and plain answers give the same calls (S3-1: asked again, plain and streamed "
                     "gave the same calls; the first answers differed because the server answers a repeated prompt "
                     "otherwise, a prompt cache or several slots, not because of the stream)")
    assert fall_von  # the helpers the endpoints share stay imported


def test_eine_schleifende_probe_sagt_nichts(cli, endpunkt):
    status, out, err = cli(*messung(endpunkt(nackt, SERVER["LM Studio"]).url))  # where a probe is sent
    d = diagnose_von(out)
    assert d[0] == ": whose some calls are cannot be told" and "aus_text" not in out
    assert ('(S1-1 asked again with tool_choice "required" at temperature 0 was cut by the token limit while looping, '
            "which tells nothing)") in d[1]


@pytest.mark.parametrize("name, whose, kopf", [
    ("llama.cpp", "a client's json.loads(arguments) gives a string, not the arguments (llama.cpp #19520)",
     "Diagnosis: what the server did, not the model"),
    ("vLLM", "a client's json.loads(arguments) gives a string, not the arguments; whose that is cannot be told: the "
             "model may have written its arguments as a JSON string inside its call, or the server encoded them twice",
     "Diagnosis: whose some outputs are cannot be told"),  # the heading says what its line says
])
def test_doppelt_kodiert_ist_nur_auf_llama_cpp_des_servers(cli, endpunkt, name, whose, kopf):
    def doppelt(fall, body, nummer):
        antwort = bereit(fall, body, nummer)
        for c in antwort["choices"][0]["message"].get("tool_calls") or []:
            c["function"]["arguments"] = json.dumps(c["function"]["arguments"])
        return antwort
    status, out, err = cli(*messung(endpunkt(doppelt, SERVER[name]).url))
    assert f"  protokoll argumente_doppelt 37: calls whose arguments were encoded twice, a JSON string holding the " \
           f"object's JSON text; {whose}." in out
    assert kopf in out.splitlines()


ABGELEHNT_ZEILE = (
    "answers the server refused with 500 (\"Failed to parse input\", or \"does not match the expected ... format\"): "
    "its tool-call parser could not read what the model wrote, graded here as the text the error quotes, where it "
    "quotes one (else as no answer); an agent receives an error, not an answer; whose that is cannot be told: a call "
    "the model wrote wrongly, or a chat template whose call form is not the model's (try the model's own, in its own "
    "turn format); the server's log shows what the model wrote (llama.cpp #23838, #26381).")
PEG = "The model produced output that does not match the expected peg-native format"


def test_ein_abgelehnter_text_ohne_wortlaut(cli, endpunkt, tmp_path):
    """A later llama.cpp refuses what the model wrote with 500 "... does not match the expected peg-native format"
    (llama.cpp #26381), without the text, the same at every attempt at temperature 0 (seen on a real llama-server
    with SmolLM2 on Llama 3.1's template): an answer refused, graded as none, cannot tell; the run goes on, and
    before, it stopped at the first such case with "the same command again asks for the missing", which at
    temperature 0 it would not get either."""
    def antwort(fall, body, nummer):
        if fall and fall["id"] in ("S2-1", "S4-1"):
            return 500, {"error": {"code": 500, "message": PEG, "type": "server_error"}}, {}
        return bereit(fall, body, nummer)
    server = endpunkt(antwort, SERVER["llama.cpp"])
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    assert (server.zahl("S2-1"), server.zahl("S4-1")) == (1, 1)  # never asked again
    gespeichert = {a["id"]: a["zuege"] for a in zeilen(tmp_path / "ergebnisse" / "m.jsonl")[1:]}
    assert [(z["nachricht"], z["abgelehnt"]) for z in gespeichert["S2-1"]] == [
        ({"role": "assistant", "content": None}, PEG)]
    assert f"\n  protokoll geparst_abgelehnt 2: {ABGELEHNT_ZEILE} The figures grade the calls as" in out
    k = json.loads(cli("--bewerten", "m", "--json")[1])
    # an error is no restraint: S4-1 fails with S2-1, each cannot tell
    assert (k["auftraege_gelungen"], k["stillgehalten"]) == (40 / 42, 13 / 14)  # S4 and S5: 14 cases
    assert k["diagnose"]["protokoll"] == {"geparst_abgelehnt": 2}


def test_pruefen_ein_abgelehnter_text_ohne_wortlaut(cli, endpunkt):
    """--pruefen on the same: the call check cannot tell and names the one thing to try; usage is checked on the
    answers that came, not on the error."""
    def antwort(fall, body, nummer):
        if fall and fall["stufe"] in ("S1", "S3"):
            return 500, {"error": {"code": 500, "message": PEG, "type": "server_error"}}, {}
        return bereit(fall, body, nummer)
    status, out, err = cli("--pruefen", *messung(endpunkt(antwort, SERVER["llama.cpp"]).url))
    assert status == 0, err
    assert (f"  ?     a call comes back as tool_calls: cannot tell; in S1-1 the server refused what the model wrote "
            f"with 500 ({PEG}): whose that is cannot be told: a call the model wrote wrongly, or a chat template whose "
            "call form is not the model's (try the model's own, in its own turn format); the server's log shows what "
            "the model wrote") in out.splitlines()
    assert "  ok    usage and finish_reason are present" in out.splitlines()
    assert [z for z in out.splitlines() if z.startswith(("  ?     streamed", "  ?     several"))] == [
        f"  ?     {was}: cannot tell; in S3-1 the server refused what the model wrote with 500 ({PEG}): whose that is "
        "cannot be told: a call the model wrote wrongly, or a chat template whose call form is not the model's (try "
        "the model's own, in its own turn format); the server's log shows what the model wrote"
        for was in ("streamed and plain answers give the same calls", "several calls come in one answer")]
    assert out.splitlines()[-1].startswith("Nothing failed, but 4 checks (?) cannot say the server is set up")


def test_ein_vom_parser_abgelehnter_aufruf_ist_eine_antwort(cli, endpunkt, tmp_path):
    """llama.cpp's 500 "Failed to parse input at pos N: <text>" (llama.cpp #23838, #24644) is the same on every
    attempt at temperature 0: the output is the text it quotes, refused by the server, and the run goes on."""
    text = '<tool_call>\n{"name": "list_contacts", "arguments": {}}\n</tool_call>'

    def antwort(fall, body, nummer):
        if fall and fall["id"] == "S2-1":
            return 500, {"error": {"code": 500, "message": f"Failed to parse input at pos 12: {text}",
                                   "type": "server_error"}}, {}
        return bereit(fall, body, nummer)
    server = endpunkt(antwort, SERVER["llama.cpp"])
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    assert server.zahl("S2-1") == 1  # never asked again
    [zug] = next(a for a in zeilen(tmp_path / "ergebnisse" / "m.jsonl")[1:] if a["id"] == "S2-1")["zuege"]
    assert (zug["nachricht"], zug["abgelehnt"]) == ({"role": "assistant", "content": text},
                                                    f"Failed to parse input at pos 12: {text}")
    assert f"\n  protokoll geparst_abgelehnt 1: {ABGELEHNT_ZEILE} The figures grade the calls as" in out
    assert "Diagnosis: what the model did and what cannot be told" in out.splitlines()  # as its lines say
    k = json.loads(cli("--bewerten", "m", "--json")[1])
    assert (k["auftraege_gelungen"], k["gelungen_nativ"]) == (42 / 42, 41 / 42)  # right as meant; an agent got a 500


def test_zwei_server_sind_nicht_vergleichbar(cli, endpunkt):
    """A on vLLM, B on llama-server: each server's own limits (llama-server reads no parallel_tool_calls as
    false) are measured with its model, so the pair cannot tell the models apart."""
    vorbereitet(cli, *messung(endpunkt(bereit, SERVER["vLLM"]).url, "--tag", "a"))
    vorbereitet(cli, *messung(endpunkt(bereit, SERVER["llama.cpp"]).url, "--tag", "b"))
    grund = ("a was served by vLLM 0.32.0 (/v1/models: owned_by vllm), b by llama.cpp b7000-abc123 (/v1/models: "
             "owned_by llamacpp; chat template c0b94690239d): another server, whose own limits are measured with its "
             "model; measure both on one")
    assert cli("--vergleich", "a", "b", "--streng")[::2] == (
        2, f"messen: cannot tell whether the model of b is worse than a's: {grund}; --streng exits 2\n")


def test_fortgesetzt_bei_einem_anderen_server_wird_abgelehnt(cli, endpunkt, tmp_path):
    kaputt = endpunkt(lambda fall, body, nummer: (400, {"error": {"message": "bad"}}, {})
                      if fall and fall["id"] == "S3-1" else bereit(fall, body, nummer), SERVER["vLLM"])
    assert cli(*messung(kaputt.url, "--tag", "t"))[0] == 1
    anders = endpunkt(bereit, SERVER["llama.cpp"])
    pfad = tmp_path / "ergebnisse" / "t.jsonl"
    assert cli(*messung(anders.url, "--tag", "t")) == (2, "", (
        f"messen: {pfad} holds 20 outputs; asking for the rest\n"
        f"messen: {pfad} was measured on vLLM 0.32.0 (/v1/models: owned_by vllm) at {kaputt.url}; {anders.url} is "
        "now llama.cpp b7000-abc123 (/v1/models: owned_by llamacpp; chat template c0b94690239d): resume it on that "
        "server, or use another --tag (--neu measures anew)\n"))
    assert anders.zahl() == 0  # nothing asked of it


def test_ein_unbekannter_server_an_anderer_adresse_ist_nicht_vergleichbar(cli, endpunkt):
    """Two servers that do not say who they are, at two URLs: whether they are one cannot be told."""
    a, b = endpunkt(bereit, SERVER["unbekannt"]), endpunkt(bereit, SERVER["Proxy"])
    vorbereitet(cli, *messung(a.url, "--tag", "a"))
    vorbereitet(cli, *messung(b.url, "--tag", "b"))
    grund = (f"a was measured at {a.url}, b at {b.url}, and the server of a and b was not identified: whether both "
             "are one server cannot be told; measure both on one identified server, or at one URL, or state the one "
             "behind both with --server")
    assert cli("--vergleich", "a", "b", "--streng")[::2] == (
        2, f"messen: cannot tell whether the model of b is worse than a's: {grund}; --streng exits 2\n")
    vorbereitet(cli, *messung(a.url, "--tag", "c"))  # the same URL: one server, identified or not
    assert cli("--vergleich", "a", "c", "--streng")[::2] == (0, "")
