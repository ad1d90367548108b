"""Each model family's own call form, read as its engines' tool parsers read it, when a server whose parser is off
returns it as content. Every example names its source: the family's chat template or the parser that reads it."""

import json

import pytest

import messen

from conftest import completion, messung, vorbereitet

WETTER = {"name": "get_weather", "args": {"city": "Tokyo", "days": 3}}
ZWEI = [WETTER, {"name": "get_time", "args": {"zone": "JST"}}]
TYPEN = {"get_weather": {"city": "string", "days": "integer"}, "get_time": {"zone": "string"}}
DS = "｜"  # DeepSeek's bar, U+FF5C, and its space ▁ (U+2581), as its special tokens are spelled

# (form, its mark, text, the calls read); each example's source stands beside it
BEISPIELE = [
    # Qwen3's chat template (Hermes): one <tool_call> block of JSON per call; vLLM hermes_tool_parser.py
    ("hermes", "<tool_call>", '<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", '
     '"arguments": {"city": "Tokyo", "days": 3}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": '
     '{"zone": "JST"}}\n</tool_call>', ZWEI),
    # Qwen3-Coder's chat template; vLLM qwen3xml_tool_parser.py: values raw text, typed by the tool's schema
    ("qwen3_xml", "<function=", "<tool_call>\n<function=get_weather>\n<parameter=city>\nTokyo\n</parameter>\n"
     "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>", [WETTER]),
    # GLM-4.5's chat template; vLLM glm4_moe_tool_parser.py: strings raw, other values JSON
    ("glm", "<arg_key>", "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Tokyo</arg_value>\n"
     "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call><tool_call>get_time\n<arg_key>zone</arg_key>\n"
     "<arg_value>JST</arg_value>\n</tool_call>", ZWEI),
    # Kimi K2's chat template; vLLM kimi_k2_tool_parser.py: functions.NAME:IDX, then its JSON arguments
    ("kimi", "<|tool_call_begin|>", "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
     '<|tool_call_argument_begin|>{"city": "Tokyo", "days": 3}<|tool_call_end|><|tool_call_begin|>functions.get_time:1'
     '<|tool_call_argument_begin|>{"zone": "JST"}<|tool_call_end|><|tool_calls_section_end|>', ZWEI),
    # Kimi K3's XTML (vLLM kimi_k3_tool_parser.py's docstring): a type other than string is JSON
    ("kimi", "<|open|>call", '<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>'
     '<|open|>argument key="city" type="string"<|sep|>Tokyo<|close|>argument<|sep|>'
     '<|open|>argument key="days" type="integer"<|sep|>3<|close|>argument<|sep|><|close|>call<|sep|>'
     "<|close|>tools<|sep|>", [WETTER]),
    # DeepSeek V3's chat template; vLLM deepseekv3_tool_parser.py: function<sep>NAME, then a ```json fence
    ("deepseek", f"<{DS}tool▁call▁begin{DS}>", f"<{DS}tool▁calls▁begin{DS}><{DS}tool▁call▁begin{DS}>function"
     f'<{DS}tool▁sep{DS}>get_weather\n```json\n{{"city": "Tokyo", "days": 3}}\n```<{DS}tool▁call▁end{DS}>'
     f"<{DS}tool▁calls▁end{DS}>", [WETTER]),
    # DeepSeek V3.1's chat template; vLLM deepseekv31_tool_parser.py: NAME<sep>{JSON}
    ("deepseek", f"<{DS}tool▁call▁begin{DS}>", f"<{DS}tool▁calls▁begin{DS}><{DS}tool▁call▁begin{DS}>get_weather"
     f'<{DS}tool▁sep{DS}>{{"city": "Tokyo", "days": 3}}<{DS}tool▁call▁end{DS}><{DS}tool▁call▁begin{DS}>get_time'
     f'<{DS}tool▁sep{DS}>{{"zone": "JST"}}<{DS}tool▁call▁end{DS}><{DS}tool▁calls▁end{DS}>', ZWEI),
    # DeepSeek V3.2's DSML (vLLM deepseekv32_tool_parser.py, SGLang's test_function_call_parser.py)
    ("deepseek", "DSML", '<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" '
     'string="true">Tokyo</｜DSML｜parameter>\n<｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>\n'
     "</｜DSML｜invoke>\n</｜DSML｜function_calls>", [WETTER]),
    # Gemma 4 (vLLM gemma4_tool_parser.py's docstring): bare keys, strings between <|"|>
    ("gemma4", "<|tool_call>", '<|channel>thought\nThe user wants the weather.<channel|><|tool_call>call:get_weather'
     '{city:<|"|>Tokyo<|"|>,days:3}<tool_call|><|tool_call>call:get_time{zone:<|"|>JST<|"|>}<tool_call|>', ZWEI),
    # Llama 4's chat template; vLLM llama4_pythonic_tool_parser.py
    ("llama", "<|python_start|>", '<|python_start|>[get_weather(city="Tokyo", days=3), get_time(zone="JST")]'
     "<|python_end|>", ZWEI),
    # Llama 3.1's chat template (the JSON tool call); vLLM llama_tool_parser.py
    ("llama", "<|python_tag|>", '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Tokyo", "days": 3}}',
     [WETTER]),
    # Mistral's v11 tokenizer (mistral-common); vLLM mistral_tool_parser.py
    ("mistral", "[TOOL_CALLS]", '[TOOL_CALLS]get_weather[ARGS]{"city": "Tokyo", "days": 3}[TOOL_CALLS]get_time'
     '[ARGS]{"zone": "JST"}', ZWEI),
    # gpt-oss (Harmony, openai/harmony's format docs; vLLM openai_tool_parser.py): analysis, then the call
    ("harmony", "to=functions.", "<|channel|>analysis<|message|>The user wants the weather.<|end|><|start|>assistant"
     '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Tokyo", "days": 3}<|call|>',
     [WETTER]),
    # the recipient before the channel, and no <|constrain|>
    ("harmony", "to=functions.", '<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>'
     '{"city": "Tokyo", "days": 3}<|call|>', [WETTER]),
    # Harmony with its special tokens stripped (skip_special_tokens): the family still shows
    ("harmony", "to=functions.", 'analysisThe user wants the weather.assistantcommentary to=functions.get_weather '
     'json{"city": "Tokyo", "days": 3}', [WETTER]),
]


@pytest.mark.parametrize("name, zeichen, text, soll", BEISPIELE, ids=[f"{b[0]}-{i}" for i, b in enumerate(BEISPIELE)])
def test_jede_familie_wird_gelesen(name, zeichen, text, soll):
    aufrufe, form = messen.lies_aufrufe({"role": "assistant", "content": text}, TYPEN)
    assert [messen.aufruf_kern(c) for c in aufrufe] == soll
    assert (form, {c["quelle"] for c in aufrufe}) == ("parser", {zeichen})


# truncated or malformed: never a well-formed call (a cut one stands as a malformed call attempt, args None)
KAPUTT = [
    '<tool_call>\n<function=get_weather>\n<parameter=city>\nTokyo\n</parameter>\n<parameter=days>\n3',  # cut
    "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Tokyo",
    '<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "To',
    f"<{DS}tool▁calls▁begin{DS}><{DS}tool▁call▁begin{DS}>get_weather<{DS}tool▁sep{DS}>{{\"city\": \"Tokyo\"",
    '<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" string="true">Tok',
    '<|tool_call>call:get_weather{city:<|"|>Tokyo',
    '<|tool_call>call:get_weather{city:Tokyo Japan}<tool_call|>',  # a bare value that is no JSON
    '<|python_start|>[get_weather(city="Tokyo", days=3',
    '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Tok',
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Tokyo"\n</tool_call>',
]


@pytest.mark.parametrize("text", KAPUTT)
def test_abgeschnitten_oder_kaputt_ist_kein_aufruf(text):
    aufrufe, form = messen.lies_aufrufe({"role": "assistant", "content": text}, TYPEN)
    assert aufrufe and all(c["args"] is None for c in aufrufe) and form == "parser"


# prose that looks like a call, or names a form, is no call
PROSA = [
    'The answer is {"name": "Tokyo", "population": 14000000}.',
    "I would use get_weather(city) here, but which city do you mean?",
    "Kimi writes <|tool_call_begin|> before a call; I have nothing to call.",
    'Sure. Here is the JSON you asked for: {"city": "Tokyo"}',
]


@pytest.mark.parametrize("text", PROSA)
def test_prosa_ist_kein_aufruf(text):
    aufrufe, form = messen.lies_aufrufe({"role": "assistant", "content": text}, TYPEN)
    assert [c for c in aufrufe if c["args"] is not None] == []


@pytest.mark.parametrize("text, denken", [
    ("<think>\nLet me see.\n</think>\n\nWhich city?", True),
    ("<|channel|>analysis<|message|>Let me see.<|end|><|start|>assistant<|channel|>final<|message|>Which city?", True),
    ("<|channel>thought\nLet me see.<channel|>Which city?", True),
    ("[THINK]Let me see.[/THINK]Which city?", True),
    ("Which city?", False),
])
def test_denken_im_text_wird_erkannt(text, denken):
    nachricht = {"role": "assistant", "content": text}
    assert messen.denken_im_text(nachricht) is denken
    assert messen.ohne_denken(text).strip().endswith("Which city?") and "Let me see" not in messen.ohne_denken(text)


def test_jede_familie_nennt_den_parser_ihres_servers():
    """Where calls stay text, the fix names the server's own parser for the family's form."""
    vllm, sglang = ({"name": n} for n in ("vLLM", "SGLang"))
    assert messen.abhilfe("parser", vllm, "<arg_key>") == ("--enable-auto-tool-choice with the --tool-call-parser "
                                                           "that reads the form the model writes (glm45 for <arg_key>)")
    assert messen.abhilfe("parser", sglang, "to=functions.") == ("--tool-call-parser for the form the model writes "
                                                                 "(gpt-oss for to=functions.)")
    assert messen.abhilfe("parser", vllm, "<|tool_call>") .endswith("(gemma4 for <|tool_call>)")


GEMMA_S2 = '<|tool_call>call:{name}{{{args}}}<tool_call|>'


def gemma(fall, body, nummer):
    """A Gemma 4 model on a server whose parser is off: its calls as content, in its own form."""
    if not fall["erwartet"]:
        return completion({"role": "assistant", "content": "Which contact do you mean?"})
    text = "".join(GEMMA_S2.format(name=c["name"], args=",".join(
        f'{k}:<|"|>{v}<|"|>' if isinstance(v, str) else f"{k}:{json.dumps(v)}" for k, v in c["args"].items()))
        for c in fall["erwartet"])
    return completion({"role": "assistant", "content": text})


def test_ein_lauf_mit_gemma4_aufrufen_als_text(cli, endpunkt):
    """Every call read as meant, none reaches an agent; the diagnosis never says all clear, never blames the model."""
    k = json.loads(vorbereitet(cli, *messung(endpunkt(gemma).url, "--json"))[1])
    assert (k["auftraege_gelungen"], k["gelungen_nativ"]) == (42 / 42, 14 / 42)
    out = cli("--bewerten", "m")[1]
    assert "Diagnosis: all clear" not in out and "the model did not" not in out
    assert "<|tool_call>" in out  # the form named


# ---------------------------------------------------------------------------
# --lesen: what messen reads from an answer, end to end
# ---------------------------------------------------------------------------

def test_lesen_liest_jede_zeile_fuer_sich():
    import subprocess
    import sys
    from pathlib import Path
    zeilen = [
        {"role": "assistant", "content": BEISPIELE[1][2], "tools": [{"type": "function", "function": {
            "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                                                  "days": {"type": "integer"}}}}}]},
        "kaputt",
        completion({"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_time", "arguments": '{"zone": "JST"}'}}]}),
        {"role": "assistant", "content": "<think>Which one?</think>Which contact do you mean?"},
        {"role": "assistant", "content": KAPUTT[2]},
        {"model": "m"},
        {"role": "assistant", "content": ""},
    ]
    eingabe = "\n".join(z if isinstance(z, str) else json.dumps(z) for z in zeilen) + "\n"
    lauf = subprocess.run([sys.executable, str(Path(messen.__file__)), "--lesen"], input=eingabe,
                          capture_output=True, text=True, timeout=60)
    assert (lauf.returncode, lauf.stderr) == (0, "")
    assert [json.loads(z) for z in lauf.stdout.splitlines()] == [
        {"aufrufe": [WETTER], "form": "qwen3_xml", "wessen": "offen", "denken_im_text": False},
        {"zeile": 2, "fehler": "not JSON (Expecting value: line 1 column 1 (char 0))"},
        {"aufrufe": [ZWEI[1]], "form": "nativ", "wessen": "modell", "denken_im_text": False},
        {"aufrufe": [], "form": "none", "wessen": "modell", "denken_im_text": True},
        {"aufrufe": [{"name": "get_weather", "args": None}], "form": "kimi", "wessen": "offen",
         "denken_im_text": False},
        {"zeile": 6, "fehler": "neither a chat completion nor an assistant message (content or tool_calls)"},
        {"aufrufe": [], "form": "none", "wessen": "offen", "denken_im_text": False},
    ]


def test_pruefen_mit_gemma4_aufrufen_als_text(cli, endpunkt):
    """--pruefen on the same server: never "that is the model", never "set up"; the form is named."""
    server = endpunkt(lambda fall, body, nummer: gemma(fall, body, nummer) if fall else
                      completion({"role": "assistant", "content": "OK"}, "length"))
    status, out, err = cli("--pruefen", *messung(server.url))
    zeile = next(z for z in out.splitlines() if "a call comes back as tool_calls" in z)
    assert zeile.startswith("  ?     a call comes back as tool_calls: cannot tell; in S1-1 calls were read from the "
                            "answer text (<|tool_call>), never from tool_calls")
    assert "that is the model" not in out and "set up for a measurement" not in out


# ---------------------------------------------------------------------------
# Any call, written as each family's template writes it, is read back exactly (hypothesis)
# ---------------------------------------------------------------------------

from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

NAME = st.from_regex(r"[a-z][a-z_]{0,15}", fullmatch=True)
TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="<>|"), max_size=30).filter(
    lambda t: t == t.strip())  # noqa: E731  a value as a template writes it between its delimiters
WERT = st.one_of(TEXT, st.integers(-10 ** 6, 10 ** 6), st.booleans(), st.lists(TEXT, max_size=3))
ARGS = st.dictionaries(st.from_regex(r"[a-z][a-z_]{0,9}", fullmatch=True), WERT, max_size=4)
RUFE = st.lists(st.fixed_dictionaries({"name": NAME, "args": ARGS}), min_size=1, max_size=3)
SCHEMA = {str: "string", int: "integer", bool: "boolean", list: "array"}


def roh(v):
    return v if isinstance(v, str) else json.dumps(v)


def gemma_wert(v):
    if isinstance(v, str):
        return f'<|"|>{v}<|"|>'
    if isinstance(v, list):
        return "[" + ",".join(gemma_wert(x) for x in v) + "]"
    return json.dumps(v)


SCHREIBEN = {  # each family's call as its chat template writes it
    "hermes": lambda c: f'<tool_call>\n{json.dumps({"name": c["name"], "arguments": c["args"]})}\n</tool_call>',
    "qwen3_xml": lambda c: f"<tool_call>\n<function={c['name']}>\n" + "".join(
        f"<parameter={k}>\n{roh(v)}\n</parameter>\n" for k, v in c["args"].items()) + "</function>\n</tool_call>",
    "glm": lambda c: f"<tool_call>{c['name']}\n" + "".join(
        f"<arg_key>{k}</arg_key>\n<arg_value>{roh(v)}</arg_value>\n" for k, v in c["args"].items()) + "</tool_call>",
    "kimi": lambda c: f"<|tool_call_begin|>functions.{c['name']}:0<|tool_call_argument_begin|>"
                      f"{json.dumps(c['args'])}<|tool_call_end|>",
    "deepseek": lambda c: f"<{DS}tool▁call▁begin{DS}>{c['name']}<{DS}tool▁sep{DS}>{json.dumps(c['args'])}"
                          f"<{DS}tool▁call▁end{DS}>",
    "dsml": lambda c: f'<｜DSML｜invoke name="{c["name"]}">\n' + "".join(
        f'<｜DSML｜parameter name="{k}" string="{"true" if isinstance(v, str) else "false"}">{roh(v)}'
        f"</｜DSML｜parameter>\n" for k, v in c["args"].items()) + "</｜DSML｜invoke>",
    "gemma4": lambda c: f"<|tool_call>call:{c['name']}{{" + ",".join(
        f"{k}:{gemma_wert(v)}" for k, v in c["args"].items()) + "}<tool_call|>",
    "harmony": lambda c: f"<|start|>assistant<|channel|>commentary to=functions.{c['name']} <|constrain|>json"
                         f"<|message|>{json.dumps(c['args'])}<|call|>",
    "mistral": lambda c: f"[TOOL_CALLS]{c['name']}[ARGS]{json.dumps(c['args'])}",
}
HUELLE = {"kimi": ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"),
          "deepseek": (f"<{DS}tool▁calls▁begin{DS}>", f"<{DS}tool▁calls▁end{DS}>"),
          "dsml": ("<｜DSML｜function_calls>\n", "\n</｜DSML｜function_calls>")}


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(rufe=RUFE, form=st.sampled_from(sorted(SCHREIBEN)), denken=st.booleans())
def test_jeder_aufruf_jeder_familie_wird_genau_gelesen(rufe, form, denken):
    vorne, hinten = HUELLE.get(form, ("", ""))
    text = ("<think>\nFirst the weather.\n</think>\n\n" if denken else "") + vorne + "".join(
        SCHREIBEN[form](c) for c in rufe) + hinten
    typen = {}  # the tools' schemas: one tool called twice has one, so a key keeps one type
    for c in rufe:
        for k, v in c["args"].items():
            assume(typen.setdefault(c["name"], {}).setdefault(k, SCHEMA[type(v)]) == SCHEMA[type(v)])
    aufrufe, _ = messen.lies_aufrufe({"role": "assistant", "content": text}, typen)
    assert [messen.aufruf_kern(c) for c in aufrufe] == rufe


@pytest.mark.parametrize("text", [
    "No tool fits here. A model on this server would write `<tool_call>` before a call, but I have none to make.",
    "I answer within <tool_call></tool_call> XML tags when I call a function; here I need the contact's name.",
])
def test_ein_tag_ohne_aufruf_danach_ist_kein_versuch(text):
    """A tag with no call after it is no call attempt: no false S4 failure, no parser 'stopped after the first'."""
    assert messen.lies_aufrufe({"role": "assistant", "content": text}) == ([], None)
    neben = {"role": "assistant", "content": text, "tool_calls": [
        {"id": "call_a1b2c3d4", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]}
    assert messen.lies_aufrufe(neben)[1] == "nativ"  # beside native calls: never "teilweise"
