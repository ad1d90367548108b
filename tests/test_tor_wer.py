"""The gate weighs what answered and only what is evidence: the model and the build each answer names, tool-call ids
only where a server drew them, answers the same to the letter only where a model would not give them, one run never
against itself. Each over loopback HTTP, with servers shaped as the real ones: what vLLM, llama.cpp, Ollama, SGLang,
LM Studio and TGI put in a completion's "model", "system_fingerprint" and call ids."""

import collections
import itertools
import json
import random
import re
import shutil
import uuid

import pytest

import messen

from conftest import FAELLE, completion, messung, richtig, vorbereitet, zeilen
from test_tor import RUFEN, STILL, erfunden, sonst_richtig, tor


def gesagt(antwort, **felder):
    """A server's answer with what it says of itself (model, system_fingerprint) and its calls' ids."""
    def neu(fall, body, nummer):
        x = json.loads(json.dumps(antwort(fall, body, nummer)))
        ids = felder.get("ids")
        for i, c in enumerate(x["choices"][0]["message"].get("tool_calls") or []):
            c["id"] = ids(fall, c, i) if ids else c["id"]
        for feld in ("model", "system_fingerprint"):
            wert = felder.get(feld)
            if callable(wert):
                wert = wert(fall, body, nummer)
            if wert is None:
                x.pop(feld, None)
            else:
                x[feld] = wert
        return x
    return neu


def echo(fall, body, nummer):
    """vLLM, SGLang, Ollama and a proxy name the model the request asked for."""
    return body["model"]


def gezogen(fall, c, i):
    return f"chatcmpl-tool-{uuid.uuid4().hex}"  # vLLM's: drawn afresh for every call


# ---------------------------------------------------------------------------
# What answered: the model and the build each answer names
# ---------------------------------------------------------------------------

def test_ein_router_der_mit_dem_basismodell_antwortet(cli, endpunkt):
    """B asks for the fine-tune; the router answers every request with the base, under the base's name."""
    vorbereitet(cli, *messung(endpunkt(gesagt(richtig, model=echo)).url, "--tag", "a", "--modell", "base"))
    router = endpunkt(gesagt(richtig, model="base"))
    vorbereitet(cli, *messung(router.url, "--tag", "b", "--modell", "ft"))
    assert cli("--vergleich", "a", "b", "--streng")[::2] == (2, (
        "messen: cannot tell whether the model of b is worse than a's: b asked for \"ft\", but its answers name "
        "\"base\", the model a asked for: a router answered b with a's model; send b's requests to its model and "
        "measure it anew (--neu); --streng exits 2\n"))
    assert [z["zuege"][0]["wer"] for z in zeilen(cli.ausgabe / "b.jsonl")[1:3]] == [{"modell": "base"}] * 2


def test_ein_anderes_modell_als_das_gefragte(cli, endpunkt):
    """The server names the model asked (a's answers show it); b's answers name a third one."""
    vorbereitet(cli, *messung(endpunkt(gesagt(richtig, model=echo)).url, "--tag", "a", "--modell", "base"))
    vorbereitet(cli, *messung(endpunkt(gesagt(richtig, model="other")).url, "--tag", "b", "--modell", "ft"))
    assert cli("--vergleich", "a", "b", "--streng")[::2] == (2, (
        "messen: cannot tell whether the model of b is worse than a's: b asked for \"ft\", but its answers name "
        "\"other\", not \"ft\", where a's answers name the model it asked for: another model answered b; send b's "
        "requests to its model and measure it anew (--neu); --streng exits 2\n"))


def test_ein_router_der_zwei_modelle_mischt(cli, endpunkt):
    """Half of b's requests go to the fine-tune, half to the base: a mixed run, named in its diagnosis too."""
    mischer = gesagt(richtig, model=lambda fall, body, nummer: "ft" if int(fall["id"].split("-")[1]) % 2 else "base")
    vorbereitet(cli, *messung(endpunkt(gesagt(richtig, model=echo)).url, "--tag", "a", "--modell", "ft"))
    rc, out, err = cli(*messung(endpunkt(mischer).url, "--tag", "b", "--modell", "ft"))
    namen = genannt(zeilen(cli.ausgabe / "b.jsonl")[1:], "modell")
    assert rc == 0 and sorted(namen.values()) == sorted([sum(int(f["id"].split("-")[1]) % 2 == w for f in FAELLE)
                                                         for w in (0, 1)])
    erster, zweiter = namen.most_common()
    liste = f"\"{erster[0]}\" in {erster[1]}, \"{zweiter[0]}\" in {zweiter[1]}"
    zeilen_out = out.splitlines()
    assert "Diagnosis: what the server did, not the model" in zeilen_out
    assert (f"  gemischt modell 42: answers that name 2 models ({liste}): a router or a pool answered the run with "
            "several, or one was restarted during it; its outputs mix them, so no comparison holds them to one "
            "model; measure it anew (--neu) where one model answers.") in zeilen_out
    assert cli("--vergleich", "a", "b", "--streng")[::2] == (2, (
        f"messen: cannot tell whether the model of b is worse than a's: b's answers name 2 models ({liste}): a "
        "router or a pool answered it with several; measure b anew (--neu) where one model answers; --streng "
        "exits 2\n"))


def genannt(ausgaben, feld):
    """What the saved outputs' answers name as feld of wer, counted."""
    return collections.Counter(a["zuege"][0]["wer"][feld] for a in ausgaben)


def test_ein_pool_zweier_builds(cli, endpunkt):
    """One model behind a router over two llama-server builds: the pages come from one, each completion's
    system_fingerprint names its own build."""
    from test_tor_beweis import QWEN, llama
    pool = itertools.cycle(["b6800-1a2b3c4", "b7011-5d6e7f8"])
    seiten = llama("b6800", QWEN)
    vorbereitet(cli, *messung(endpunkt(gesagt(richtig, model="m", system_fingerprint="b6800-1a2b3c4"),
                                       seiten).url, "--tag", "a"))
    b = endpunkt(gesagt(richtig, model="m", system_fingerprint=lambda fall, body, nummer: next(pool)), seiten)
    rc, out, err = cli(*messung(b.url, "--tag", "b"))
    assert rc == 0
    assert "Diagnosis: what the server did, not the model" in out.splitlines()
    assert ("  gemischt build 42: answers that name 2 builds (\"b6800-1a2b3c4\" in 21, \"b7011-5d6e7f8\" in 21): a "
            "router or a pool answered the run with several, or one was restarted during it; its outputs mix them, "
            "so no comparison holds them to one build; measure it anew (--neu) where one build answers.") \
        in out.splitlines()
    assert cli("--vergleich", "a", "b", "--streng")[::2] == (2, (
        "messen: cannot tell whether the model of b is worse than a's: b's answers name 2 builds (\"b6800-1a2b3c4\" "
        "in 21, \"b7011-5d6e7f8\" in 21): a router or a pool answered it with several; measure b anew (--neu) where "
        "one build answers; --streng exits 2\n"))


# What each server puts in a completion, as its source writes it: (model, system_fingerprint, call id)
SERVER = {
    "vllm": (echo, None, gezogen),  # serving_chat.py: the served name asked; random_tool_call_id
    "llama.cpp": ("qwen3-8b-q4_k_m.gguf", "b6800-1a2b3c4", lambda fall, c, i: uuid.uuid4().hex[:32]),  # alias, build
    "ollama": (echo, "fp_ollama", lambda fall, c, i: f"call_{uuid.uuid4().hex[:8]}"),
    "sglang_kimi": (echo, None, lambda fall, c, i: f"functions.{c['function']['name']}:{i}"),  # counted, not drawn
    "lm_studio": ("qwen3-8b", "qwen3-8b", lambda fall, c, i: str(random.randrange(10 ** 9))),
    "tgi": ("tgi", "3.3.4-sha-9f38d93", lambda fall, c, i: "0"),  # its model id whatever is asked
}


@pytest.mark.parametrize("form", list(SERVER))
def test_ein_ehrlicher_server_bei_temperatur_0(cli, endpunkt, form):
    """One honest server of each shape, the base and the fine-tune it serves at temperature 0, the fine-tune wrong
    in 8 calling cases: worse beyond chance (exit 3), never "not asked", "mixed" or "another model"."""
    model, fingerprint, ids = SERVER[form]
    acht = RUFEN[:8]
    a = gesagt(richtig, model=model, system_fingerprint=fingerprint, ids=ids)
    b = gesagt(sonst_richtig({i: erfunden(i) for i in acht}), model=model, system_fingerprint=fingerprint, ids=ids)
    vorbereitet(cli, *messung(endpunkt(a).url, "--tag", "a", "--modell", "base"))
    vorbereitet(cli, *messung(endpunkt(b).url, "--tag", "b", "--modell", "ft"))
    rc, out, err = cli("--vergleich", "a", "b", "--streng")
    assert (rc, err) == (3, f"messen: b is worse than a beyond chance at 5 % over all cases (p = {2 / 2 ** 8:.3g}) "
                            f"and in calling (p = {2 * 2 / 2 ** 8:.3g}, Holm-corrected); --streng exits 3\n")
    assert "gemischt" not in cli("--bewerten", "b")[1]


def test_ein_server_der_einen_namen_fuer_alles_sagt(cli, endpunkt):
    """A single-model llama-server names its alias whatever is asked: no evidence, nothing said."""
    vorbereitet(cli, *messung(endpunkt(gesagt(richtig, model="alias")).url, "--tag", "a", "--modell", "base"))
    vorbereitet(cli, *messung(endpunkt(gesagt(richtig, model="alias")).url, "--tag", "b", "--modell", "ft"))
    assert cli("--vergleich", "a", "b", "--streng")[::2] == (0, "")


# ---------------------------------------------------------------------------
# Evidence that the model was asked: ids only where drawn, replays only where a model would not repeat itself
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("ids", [lambda fall, c, i: f"functions.{c['function']['name']}:{i}",
                                 lambda fall, c, i: f"call_{i}",
                                 lambda fall, c, i: "call_0123456789abcdef"],  # drawn once, seen in every call
                         ids=["kimi_k2", "call_n", "immer_dieselbe"])
def test_gezaehlte_ids_sind_kein_beleg(cli, endpunkt, ids):
    """B, another model with 8 cases wrong, under ids every run repeats: worse beyond chance, never "not asked"."""
    acht = RUFEN[:8]
    rc, out, err = tor(cli, endpunkt, gesagt(richtig, ids=ids),
                       gesagt(sonst_richtig({i: erfunden(i) for i in acht}), ids=ids))
    assert (rc, err) == (3, f"messen: b is worse than a beyond chance at 5 % over all cases (p = {2 / 2 ** 8:.3g}) "
                            f"and in calling (p = {2 * 2 / 2 ** 8:.3g}, Holm-corrected); --streng exits 3\n")


LANG = ("I looked through the catalogue for a tool that does this, and none of them fits: {}. Tell me which of "
        "the contacts, meetings or rooms you mean, and what to do with it, and I will call the right one.")


def schreibend(zufall):
    """A model at a temperature above 0: its text answers (S4, S5) drawn afresh, each over 200 characters."""
    def antwort(fall, body, nummer):
        if fall["erwartet"]:
            return richtig(fall, body, nummer)
        return completion({"role": "assistant", "content": LANG.format(zufall.getrandbits(64))})
    return antwort


def cache(antwort):
    """A response cache keyed on the messages: the stored answer, with fresh call ids."""
    gespeichert = {}

    def neu(fall, body, nummer):
        x = json.loads(json.dumps(gespeichert.setdefault(fall["id"], antwort(fall, body, nummer))))
        for c in x["choices"][0]["message"].get("tool_calls") or []:
            c["id"] = f"call_{uuid.uuid4().hex}"
        return x
    return neu


def test_ein_cache_mit_frischen_ids_bei_temperatur_0_7(cli, endpunkt):
    zwischen = cache(gesagt(schreibend(random.Random(1)), ids=gezogen))
    temp = ("--temp", "0.7")
    vorbereitet(cli, *messung(endpunkt(zwischen).url, "--tag", "a", *temp))
    vorbereitet(cli, *messung(endpunkt(zwischen).url, "--tag", "b", *temp))
    vorbereitet(cli, *messung(endpunkt(gesagt(schreibend(random.Random(2)), ids=gezogen)).url, "--tag", "c", *temp))
    still = ", ".join(STILL[:12]) + " and 2 more"
    assert cli("--vergleich", "a", "b", "--streng")[::2] == (2, (
        f"messen: cannot tell whether the model of b is worse than a's: b's model was not asked: at temperature 0.7, "
        f"where a model draws each answer afresh, its answers to 14 cases ({still}) equal a's to the letter, each "
        "of 200 characters or more: a replay (a response cache), whatever their tool-call ids; measure b again with "
        "that cache off (--neu); --streng exits 2\n"))
    assert cli("--vergleich", "a", "c", "--streng")[::2] == (0, "")  # asked afresh: no word of a replay


def test_bei_temperatur_0_beweisen_gleiche_antworten_nichts(cli, endpunkt):
    """The same cache at temperature 0: answers the same to the letter are what one model gives; said, exit 0."""
    zwischen = cache(gesagt(richtig, ids=gezogen))
    vorbereitet(cli, *messung(endpunkt(zwischen).url, "--tag", "a"))
    vorbereitet(cli, *messung(endpunkt(zwischen).url, "--tag", "b"))
    rc, out, err = cli("--vergleich", "a", "b", "--streng")
    assert (rc, err) == (0, "")
    assert ("All 42 answers of b are a's to the letter (call ids aside): at temperature 0 one model answers so, and "
            "a response cache would too; that is no evidence either way (at --temp 0.7 a replay shows, long answers "
            "equal to the letter).") in out.splitlines()


def test_ein_lauf_gegen_sich_selbst(cli, endpunkt):
    vorbereitet(cli, *messung(endpunkt().url, "--tag", "a"))
    assert cli("--vergleich", "a", "a", "--streng")[::2] == (2, (
        "messen: cannot tell whether the model of a is worse than a's: a and a are one run (each output saved alike, "
        "to the moment): compared with itself it tells nothing of a model; compare it with another model's run; "
        "--streng exits 2\n"))
    shutil.copy(cli.ausgabe / "a.jsonl", cli.ausgabe / "kopie.jsonl")  # one file under two tags
    rc, out, err = cli("--vergleich", "a", "kopie", "--streng")
    assert rc == 2 and "are one run (each output saved alike, to the moment)" in err


# ---------------------------------------------------------------------------
# What an answer is: a loop reached the cap; max_tokens as servers take it
# ---------------------------------------------------------------------------

FORMULAR = "Please fill in:\n" + "Name: ______________________\n" * 3  # three blank form lines
LINEAL = "Done.\n" + "-" * 120  # a ruler of dashes
TABELLE = "| contact | date |\n|---|---|\n" + "|         |      |\n" * 3  # three equal empty rows
SATZ = "and then I look at the calendar again to see whether the meeting is there, " * 6  # a loop, over 60


@pytest.mark.parametrize("text, schleife", [(FORMULAR, False), (LINEAL, False), (TABELLE, False),
                                            ("abcdefghij0123456789" * 3, False),  # a piece of 20, three times
                                            (SATZ, True)])
def test_was_eine_schleife_ist(text, schleife):
    assert messen.schleift({"role": "assistant", "content": text}) is schleife


@pytest.mark.parametrize("text", [FORMULAR, LINEAL, TABELLE, SATZ])
def test_unter_der_grenze_ist_keine_antwort_eine_schleife(cli, endpunkt, text):
    """B's S4/S5 answers end repeating, but stopped at 40 of 256 tokens: answers, no loop, the same model as A."""
    kurz = completion({"role": "assistant", "content": text}, "stop", {"prompt_tokens": 900, "completion_tokens": 40})
    rc, out, err = tor(cli, endpunkt, richtig, sonst_richtig({i: kurz for i in STILL}), "--extra",
                       '{"max_tokens": 256}')
    assert (rc, err) == (0, "")
    k = json.loads(cli("--bewerten", "b", "--json")[1])
    assert (k["stillgehalten"], k["diagnose"]["schleife"], k["diagnose"]["abgeschnitten"]) == (14 / 14, 0, 0)


def test_am_limit_schleift_es(cli, endpunkt):
    """The same text at the cap (256 of 256) is a loop, whatever the label says."""
    voll = completion({"role": "assistant", "content": SATZ}, "stop", {"prompt_tokens": 900, "completion_tokens": 256})
    vorbereitet(cli, *messung(endpunkt(sonst_richtig({i: voll for i in STILL})).url, "--tag", "b", "--extra",
                              '{"max_tokens": 256}'))
    k = json.loads(cli("--bewerten", "b", "--json")[1])
    assert (k["stillgehalten"], k["diagnose"]["schleife"]) == (0 / 14, 14)


def test_max_tokens_minus_1_ist_keine_grenze(cli, endpunkt):
    """llama-server's and Ollama's "no limit": a perfect model holds still, and --pruefen cuts nothing."""
    server = endpunkt(lambda fall, body, nummer: richtig(fall, body, nummer) if fall else
                      completion({"role": "assistant", "content": "OK"}))  # --pruefen's "Say OK." too
    k = json.loads(vorbereitet(cli, *messung(server.url, "--extra", '{"max_tokens": -1}', "--json"))[1])
    assert (k["stillgehalten"], k["auftraege_gelungen"], k["diagnose"]["abgeschnitten"]) == (14 / 14, 42 / 42, 0)
    assert all(body["max_tokens"] == -1 for _, body in server.anfragen)  # sent as the user gave it
    status, out, err = cli("--pruefen", *messung(server.url, "--extra", '{"max_tokens": -1}'))
    assert "answers without a token limit" in out and "cut at" not in out


@pytest.mark.parametrize("extra, wert", [('{"max_tokens": "256"}', '"256"'), ('{"max_tokens": 256.0}', "256.0"),
                                         ('{"max_completion_tokens": true}', "true"), ('{"max_tokens": 0}', "0")])
@pytest.mark.parametrize("modus", [(), ("--pruefen",)])
def test_max_tokens_eines_anderen_typs_wird_vorher_abgelehnt(cli, endpunkt, extra, wert, modus):
    server = endpunkt()
    name = json.loads(extra).popitem()[0]
    assert cli(*modus, *messung(server.url, "--extra", extra))[::2] == (2, (
        f"messen: argument --extra: '{name}' is {wert}: give a whole number of tokens, such as {{\"{name}\": 256}}, "
        "or -1 for no limit (as llama-server and Ollama take it)\n"))
    assert server.zahl() == 0 and not (cli.ausgabe / "m.jsonl").exists()  # nothing sent, nothing saved


# ---------------------------------------------------------------------------
# Ways out that lead out: --klaeren after the server is fixed
# ---------------------------------------------------------------------------

LEER_UNGEZAEHLT = completion({"role": "assistant", "content": None}, usage={})  # empty, no token count
SECHS = RUFEN[8:14]


def kaputt_dann_heil(stand):
    return sonst_richtig({i: (lambda nummer: LEER_UNGEZAEHLT if stand["kaputt"] else None) for i in SECHS})


def test_klaeren_nach_der_reparatur_bei_temperatur_0(cli, endpunkt):
    stand = {"kaputt": True}
    vorbereitet(cli, *messung(endpunkt().url, "--tag", "a"))
    b = endpunkt(kaputt_dann_heil(stand))
    vorbereitet(cli, *messung(b.url, "--tag", "b"))
    rc, out, err = cli("--vergleich", "a", "b", "--streng")
    assert rc == 2 and err.rstrip().endswith(f"then ask b's outputs again: python3 messen.py --url {b.url} --modell m "
                                             "--tag b --temp 0 --n 1 --klaeren; --streng exits 2")
    stand["kaputt"] = False  # the server fixed
    vorbereitet(cli, *messung(b.url, "--tag", "b", "--klaeren"))
    assert b.zahl() == 42 + 6
    assert cli("--vergleich", "a", "b", "--streng")[::2] == (0, "")  # the right draws settle the empty ones


def test_klaeren_nach_der_reparatur_bei_temperatur_0_7(cli, endpunkt):
    """At 0.7 a re-ask is another draw: the empty ones stay, and the way out is to measure anew, never a --klaeren
    that would ask nothing."""
    stand, temp = {"kaputt": True}, ("--temp", "0.7")
    vorbereitet(cli, *messung(endpunkt().url, "--tag", "a", *temp))
    b = endpunkt(kaputt_dann_heil(stand))
    vorbereitet(cli, *messung(b.url, "--tag", "b", *temp))
    stand["kaputt"] = False
    vorbereitet(cli, *messung(b.url, "--tag", "b", *temp, "--klaeren"))
    rc, out, err = cli("--vergleich", "a", "b", "--streng")
    assert rc == 2 and "--klaeren" not in err
    assert err.rstrip().endswith("b's were asked again already: at temperature 0.7 each answer is another draw, "
                                 "which settles none before it, so fix what spoiled them and measure b anew (--neu); "
                                 "--streng exits 2")


# ---------------------------------------------------------------------------
# Output that cannot harm: control characters shown, a redirect elsewhere refused, names drawn as text
# ---------------------------------------------------------------------------

OSC52 = "\x1b]52;c;ZWNobyBoaQ==\x07"  # writes the clipboard
HOCH = "\x1b[1A\x1b[2K"  # the line above, erased


def test_steuerzeichen_werden_sichtbar(cli, endpunkt):
    seiten = {"/v1/models": {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "llamacpp"}]},
              "/props": {"build_info": f"b6800{OSC52}", "chat_template": "{{ tools }}<tool_call>"}}
    s21, s22 = RUFEN[8], RUFEN[9]
    boese = completion({"role": "assistant", "content": f"{OSC52}No.{HOCH}Diagnosis: all clear\u202e"})
    name = completion({"role": "assistant", "content": None, "tool_calls": [{"id": "call_x1234567", "type": "function",
                       "function": {"name": f"get{HOCH}contact", "arguments": json.dumps({f"k{OSC52}": 1})}}]},
                      "tool_calls")
    server = endpunkt(sonst_richtig({s22: boese, s21: name}), seiten)
    rc, out, err = cli(*messung(server.url, "--alle"))
    for text in (out, err, cli("--bewerten", "m", "--markdown")[1], cli("--bewerten", "m", "--alle")[1]):
        assert not any(c in text for c in "\x1b\x07\u202e")
    assert "\\x1b]52;c;ZWNobyBoaQ==\\x07No.\\x1b[1A\\x1b[2KDiagnosis: all clear\\u202e" in out
    assert "get\\x1b[1A\\x1b[2Kcontact" in out
    assert "\x1b" not in cli("--bewerten", "m", "--json", "--alle")[1]  # JSON escapes what it holds itself
    assert [c["function"]["name"] for a in zeilen(cli.ausgabe / "m.jsonl")[1:] if a["id"] == s21
            for c in a["zuege"][0]["nachricht"]["tool_calls"]] == [f"get{HOCH}contact"]  # the file keeps what came
    fehler = endpunkt(lambda fall, body, nummer: (400, {"error": {"message": f"bad{HOCH}request"}}, {}))
    rc, out, err = cli(*messung(fehler.url, "--tag", "f"))
    assert rc == 1 and "\x1b" not in err and "bad\\x1b[1A\\x1b[2Krequest" in err


def test_eine_umleitung_zu_einem_anderen_host_wird_abgelehnt(cli, endpunkt):
    anderer = endpunkt()
    server = endpunkt(lambda fall, body, nummer: (307, "", {"Location": anderer.url}))
    rc, out, err = cli(*messung(server.url))
    assert (rc, err.splitlines()[0]) == (1, (
        f"messen: S1-1: the server redirected the request (307 to {anderer.url}), to another host than --url; messen "
        "does not follow it, since the answers would be credited to the server asked (and the key is never sent "
        "there): give that address as --url if it is the server you mean"))
    assert (anderer.zahl(), server.zahl()) == (0, 1)  # nothing reached the other host; not asked again


def test_ein_name_mit_dollar_wird_als_text_gezeichnet(cli, endpunkt, bild, tmp_path):
    vorbereitet(cli, *messung(endpunkt().url, "--modell", "a$b$c\x1b[2K", "--tag", "dollar"))
    pfad = tmp_path / "d.svg"
    rc, out, err = cli("--bewerten", "dollar", "--bild", str(pfad))
    assert (rc, err) == (0, "")
    # drawn as written, its dollars kept, its control character shown
    assert "dollar: a$b$c\\x1b[2K" in pfad.read_text(encoding="utf-8")


def test_ein_stream_sagt_was_antwortete(cli, endpunkt):
    """With --stream, what the chunks say answered (llama-server names its build in every chunk) is saved too."""
    from conftest import gestreamt

    def strom(fall, body, nummer):
        text = gestreamt(dict(richtig(fall, body, nummer), usage={"prompt_tokens": 900, "completion_tokens": 20}))
        teile = [z.replace('{"choices"', '{"model": "qwen", "system_fingerprint": "b6800-1a2b3c4", "choices"', 1)
                 for z in text.split("\n\n")]
        return 200, "\n\n".join(teile), {"Content-Type": "text/event-stream"}
    vorbereitet(cli, *messung(endpunkt(strom).url, "--stream"))
    assert {json.dumps(a["zuege"][0]["wer"]) for a in zeilen(cli.ausgabe / "m.jsonl")[1:]} == {
        json.dumps({"modell": "qwen", "build": "b6800-1a2b3c4"})}


# ---------------------------------------------------------------------------
# A fine-tune that brings its own chat template: model and template compared, the change named
# ---------------------------------------------------------------------------

def test_ein_modell_mit_seiner_eigenen_vorlage(cli, endpunkt):
    from test_tor_beweis import OHNE_PARALLEL, QWEN, kurz, llama
    vorbereitet(cli, *messung(endpunkt(seiten=llama("b6800", QWEN)).url, "--tag", "a"))
    vorbereitet(cli, *messung(endpunkt(sonst_richtig({i: erfunden(i) for i in RUFEN[:8]}),
                                       llama("b6800", OHNE_PARALLEL)).url, "--tag", "b"))
    rc, out, err = cli("--vergleich", "a", "b", "--streng")  # another template: not comparable as models alone
    assert rc == 2 and err.endswith("another chat template, whose rendering is measured with its model; measure both on "
                                    "one, or, where the fine-tune ships its own template, compare each model with its "
                                    "own: --mit-vorlage; --streng exits 2\n")
    rc, out, err = cli("--vergleich", "a", "b", "--streng", "--mit-vorlage")
    assert (rc, err) == (3, f"messen: b is worse than a beyond chance at 5 % over all cases (p = {2 / 2 ** 8:.3g}) "
                            f"and in calling (p = {2 * 2 / 2 ** 8:.3g}, Holm-corrected); --streng exits 3\n")
    assert (f"Compared as model and chat template (--mit-vorlage): a on chat template {kurz(QWEN)}, b on "
            f"{kurz(OHNE_PARALLEL)}; every other setting is the same.") in out.splitlines()
    assert json.loads(cli("--vergleich", "a", "b", "--mit-vorlage", "--json")[1])["mit_vorlage"] == [
        kurz(QWEN), kurz(OHNE_PARALLEL)]
    vorbereitet(cli, *messung(endpunkt(seiten=llama("b7011", OHNE_PARALLEL)).url, "--tag", "c"))
    rc, out, err = cli("--vergleich", "a", "c", "--streng", "--mit-vorlage")
    assert rc == 2 and "another build or version and chat template" in err  # another build stays not comparable


def test_das_bild_traegt_das_urteil(cli, endpunkt, bild, tmp_path):
    """A comparison's picture carries its verdict under the title, and "cannot tell" where runs are not comparable."""
    vorbereitet(cli, *messung(endpunkt().url, "--tag", "a"))
    vorbereitet(cli, *messung(endpunkt(sonst_richtig({i: erfunden(i) for i in RUFEN[:8]})).url, "--tag", "b"))
    vorbereitet(cli, *messung(endpunkt().url, "--tag", "c", "--temp", "0.7"))
    for b, wort in (("b", "0 cases better and 8 worse in b than in a"),
                    ("c", "Cannot tell whether the model changed: temp 0.0 in a, 0.7 in c")):
        pfad = tmp_path / f"{b}.svg"
        assert cli("--vergleich", "a", b, "--bild", str(pfad))[0] == 0
        text = " ".join(re.findall(r">([^<>]*)</text>", pfad.read_text(encoding="utf-8")))  # its lines, as drawn
        assert wort in text and "a: m," in text and f"{b}: m," in text, wort  # the tags tell runs of one model apart
