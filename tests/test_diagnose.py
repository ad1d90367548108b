"""Blame the right party: what the server did is named, never scored as the model's skill.

Each server-side failure is sent by a loopback endpoint; the run counts it with its
hint, and --pruefen fails on it. A healthy server is all clear.
"""

import json
import os
import re

import pytest

from conftest import (meldungen, schluss, vorbereitet, BY_ID, KAPITEL_FEHLER, LM_STUDIO, UNBEKANNT, UNERKANNT, completion, messung, mit_fehlern, openai_nachricht,
                      fall_von, prompt_tokens, richtig)
import messen
from messen import KATALOG

KLAR = "Diagnosis: all clear (every output an answer, calls from tool_calls)."
NICHT = "The figures above measure that setting, not the model."
HINWEIS = {  # an unknown server: each fix in words, never another server's flag
    "katalog_fehlt": "the catalogue never reached the prompt: outputs sent the whole catalogue cost no more "
                     "prompt_tokens than S1's, sent a few of its tools; the chat template ignores `tools`: a chat "
                     "template that renders the tools, in the model's own turn format",
    "leer": "outputs with neither a call nor text; the server returned nothing: check its chat template and "
            "stop tokens",
    "abgeschnitten": "outputs cut off by the token limit without a complete call; raise max_tokens with --extra "
                     "'{\"max_tokens\": 4096}', or the server's own limit; for thinking models, the thinking budget",
    "im_denken": "outputs whose whole answer (calls or text) stands in a reasoning field, graded as no answer; "
                 "check how the server's reasoning and tool-call parsers are paired",
}
NULL = {"leer": 0, "abgeschnitten": 0, "schleife": 0, "aus_text": 0, "teilweise_geparst": 0, "protokoll": {}, "eigenes_format": 0,
        "text_ungeklaert": 0, "probe": None, "im_denken": 0, "leer_ungezaehlt": 0, "sofort_beendet": 0,
        "katalog_fehlt": False,
        "verworfen": 0, "strom_defekt": 0, "strom_ungeprueft": 0, "label_umgeschrieben": 0, "text_form": None, "katalog_unklar": None,
        "unlesbar": {}, "gemischt": {}, "markiert": 0, "strom_abgebrochen": 0, "denken_im_text": 0,
        "fremde_vorlage": 0}


def json_lauf(cli, *argv):
    status, out, err = cli(*argv, "--json")
    assert status == 0, err
    return json.loads(out)


def diagnose_block(out):
    return out.split("\n\n")[4].splitlines()


def in_faellen(anders):
    """anders: id -> the response body for that case; the rest answered right."""
    def antwort(fall, body, nummer):
        return anders[fall["id"]] if fall["id"] in anders else richtig(fall, body, nummer)
    return antwort


LEER = completion({"role": "assistant", "content": None})
GEDACHT = completion({"role": "assistant", "content": "",
                      "reasoning_content": 'I call it. <tool_call>{"name": "list_calendars", "arguments": {}}'
                                           '</tool_call>'})
ABGESCHNITTEN = completion({"role": "assistant", "content": "<think>The user wants"}, "length")
HALBER_AUFRUF = completion({"role": "assistant", "content": '<tool_call>{"name": "list_contacts", "arg'}, "length")


def test_ein_gesunder_server_ist_klar(cli, endpunkt):
    server = endpunkt(mit_fehlern(KAPITEL_FEHLER))
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    assert diagnose_block(out) == [KLAR]
    assert "By stage: S1 100 %, S2 91.7 %, S3 100 %, S4 100 %, S5 87.5 %." in out.splitlines()
    assert json_lauf(cli, "--bewerten", "m")["diagnose"] == NULL


def test_leere_antworten_gelingen_nie(cli, endpunkt):
    server = endpunkt(in_faellen({"S2-1": LEER, "S4-1": LEER, "S5-1": LEER}))
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    assert diagnose_block(out) == ["Diagnosis: what the server did, not the model",
                                   f"  leer           3: {HINWEIS['leer']}. {NICHT}"]
    assert "      came:     nothing (neither a call nor text)" in out.splitlines()
    k = json_lauf(cli, "--bewerten", "m")
    assert k["diagnose"] == dict(NULL, leer=3)
    assert (k["stillgehalten"], k["auftraege_gelungen"]) == (12 / 14, 39 / 42)
    assert (k["stufen"]["S4"], k["stufen"]["S5"]) == (5 / 6, 7 / 8)


def test_leere_antworten_ohne_zaehlung_sind_nicht_die_des_servers(cli, endpunkt):
    """Empty answers of which the server counted no tokens: WESSEN cannot tell whose they are, and neither does the
    diagnosis's heading; one with counted tokens beside them is the server's."""
    ohne = completion({"role": "assistant", "content": None}, usage={"prompt_tokens": 300})
    server = endpunkt(in_faellen({"S2-1": ohne, "S4-1": ohne}))
    status, out, err = cli(*messung(server.url, "--tag", "ohne"))
    assert status == 0, err
    assert diagnose_block(out) == ["Diagnosis: whose some outputs are cannot be told",
                                   f"  leer           2: {HINWEIS['leer']}. All of them came without a token count, so "
                                   "whose they are cannot be told: a server that reports usage: an empty answer for "
                                   "counted tokens is the server's."]
    server = endpunkt(in_faellen({"S2-1": ohne, "S4-1": LEER}))
    status, out, err = cli(*messung(server.url, "--tag", "beide"))
    assert diagnose_block(out)[:2] == ["Diagnosis: what the server did and what cannot be told",
                                       f"  leer           2: {HINWEIS['leer']}. 1 of them came without a token count, "
                                       "so whose those are cannot be told: a server that reports usage: an empty "
                                       "answer for counted tokens is the server's."]
    assert json_lauf(cli, "--bewerten", "beide")["diagnose"] == dict(NULL, leer=2, leer_ungezaehlt=1)


def test_ein_server_der_nichts_sagt_haelt_nicht_still(cli, endpunkt):
    server = endpunkt(lambda fall, body, nummer: LEER)
    k = json_lauf(cli, *messung(server.url))
    assert (k["stillgehalten"], k["auftraege_gelungen"], k["stufen"]["S4"]) == (0 / 14, 0 / 42, 0 / 6)
    assert k["diagnose"]["leer"] == 42


def test_abgeschnitten(cli, endpunkt):
    fertiger_aufruf = completion(openai_nachricht(BY_ID["S1-1"]["erwartet"]), "length")
    server = endpunkt(in_faellen({"S4-2": ABGESCHNITTEN, "S2-3": HALBER_AUFRUF, "S1-1": fertiger_aufruf}))
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    # no limit set: the server's own may have cut them, so whose they are cannot be told (WESSEN's row)
    # S4-2's cut <think> stands in the content: the reasoning parser is off, the server's (a note beside)
    assert diagnose_block(out) == ["Diagnosis: what the server did and what cannot be told",
                                   f"  abgeschnitten  2: {HINWEIS['abgeschnitten']}. No limit was set for this run, so "
                                   "the server's own may have cut them: whose they are cannot be told; a token limit "
                                   "set for both runs (--extra '{\"max_tokens\": 512}'), measured again settles it.",
                                   "  denken_im_text 1: outputs whose content holds the model's reasoning between its "
                                   "family's delimiters (<think>, Harmony's analysis channel, Gemma 4's thought "
                                   "channel, [THINK]); the server's reasoning parser is off: how the server's "
                                   "reasoning and tool-call parsers are paired. They were graded without it; an agent "
                                   "on this server receives the reasoning as content."]
    k = json_lauf(cli, "--bewerten", "m")
    assert k["fehlgeschlagen"] == ["S2-3", "S4-2"]  # S1-1's call was complete: an answer, and right
    assert k["stillgehalten"] == 13 / 14


def test_aufrufe_im_denken(cli, endpunkt):
    server = endpunkt(in_faellen({"S1-8": GEDACHT, "S4-3": GEDACHT}))
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    # WESSEN's cannot-tell: the model answered there, or the server's reasoning parser took its answer
    assert diagnose_block(out) == ["Diagnosis: whose some outputs are cannot be told",
                                   f"  im_denken      2: {HINWEIS['im_denken']}. Whether the model answered inside "
                                   "its reasoning or the server's reasoning parser took its answer cannot be told "
                                   "here."]
    assert "      came:     calls in a reasoning field only" in out.splitlines()
    k = json_lauf(cli, "--bewerten", "m")
    assert (k["fehlgeschlagen"], k["schritte_je_auftrag"]) == (["S1-8", "S4-3"], 36 / 42)


def test_finish_reason_wird_gespeichert(cli, endpunkt, tmp_path):
    server = endpunkt(in_faellen({"S4-2": ABGESCHNITTEN}))
    vorbereitet(cli, *messung(server.url, "--tag", "t"))
    zeilen = [json.loads(z) for z in (tmp_path / "ergebnisse" / "t.jsonl").read_text().splitlines()[1:]]
    assert {a["id"]: a["zuege"][0]["finish_reason"] for a in zeilen}["S4-2"] == "length"
    assert {a["zuege"][0]["finish_reason"] for a in zeilen} == {"length", "tool_calls", "stop"}


def ohne_katalog(fall, body, nummer):
    """A template that drops `tools`: the prompt costs the same whatever tools are sent."""
    return completion(openai_nachricht([]), usage={"prompt_tokens": 290, "completion_tokens": 30})


def test_der_katalog_fehlt(cli, endpunkt):
    server = endpunkt(ohne_katalog)
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    assert diagnose_block(out) == ["Diagnosis: what the server did, not the model",
                                   f"  katalog_fehlt  yes: {HINWEIS['katalog_fehlt']}. {NICHT}"]
    k = json_lauf(cli, "--bewerten", "m")
    assert k["diagnose"] == dict(NULL, katalog_fehlt=True)
    assert k["stillgehalten"] == 14 / 14  # the model did hold still: the diagnosis says why that means little


def test_ohne_usage_ist_der_katalog_unbekannt(cli, endpunkt):
    server = endpunkt(lambda fall, body, nummer: dict(richtig(fall, body, nummer), usage=None))
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    assert diagnose_block(out) == [UNBEKANNT("the server sent no plausible prompt_tokens")]
    assert json_lauf(cli, "--bewerten", "m")["diagnose"]["katalog_fehlt"] is None


def test_ein_katalog_der_nur_in_einem_lauf_fehlt_laesst_kein_urteil_zu(cli, endpunkt):
    vorbereitet(cli, *messung(endpunkt(ohne_katalog).url, "--tag", "eigen"))
    vorbereitet(cli, *messung(endpunkt().url, "--tag", "passend"))
    status, out, err = cli("--vergleich", "eigen", "passend")
    assert status == 0, err
    zeilen = out.splitlines()
    assert "  katalog_fehlt     yes     0  the server's" in zeilen  # B: all clear
    assert f"  katalog_fehlt: {HINWEIS['katalog_fehlt']}. {NICHT}" in zeilen
    grund = "the catalogue never reached the prompt in eigen (katalog_fehlt), in the other run it did"
    assert schluss(out)[-2].startswith("28 cases better and 0 worse in passend than in eigen ")
    assert schluss(out)[-2].endswith(f"exact sign test p = 7.45e-09. Cannot tell whether the model changed: {grund}.")
    assert "Warning" not in out
    md = cli("--vergleich", "eigen", "passend", "--markdown")[1].splitlines()
    assert "| diagnosis: katalog_fehlt | yes | no | |" in md
    assert md[-2].endswith(f"Cannot tell whether the model changed: {grund}.")
    reihe = cli("--vergleich", "eigen", "passend", "eigen", "--markdown")[1].splitlines()
    assert "| diagnosis: katalog_fehlt | yes | no | yes |" in reihe
    v = json.loads(cli("--vergleich", "eigen", "passend", "--json")[1])
    assert (v["nicht_vergleichbar"], v["a_kennzahlen"]["diagnose"]["katalog_fehlt"]) == (grund, True)
    status, _, err = cli("--vergleich", "eigen", "passend", "--streng")
    assert (status, err) == (2, f"messen: cannot tell whether the model of passend is worse than eigen's: {grund}; "
                                "--streng exits 2\n")


# ---------------------------------------------------------------------------
# --pruefen: is my server set up right?
# ---------------------------------------------------------------------------

def gesund(fall, body, nummer):
    if fall is None:  # the check's own question
        return completion({"role": "assistant", "content": "OK"}, "length")
    return richtig(fall, body, nummer)


def test_pruefen_auf_einem_gesunden_server(cli, endpunkt):
    server = endpunkt(gesund, {})  # a server that does not say who it is
    status, out, err = cli("--pruefen", *messung(server.url))
    assert (status, meldungen(err)) == (0, [])
    ohne, mit = prompt_tokens({}), prompt_tokens({"tools": KATALOG})
    assert out.splitlines() == [
        f"Checking {server.url} with model m, 8 checks, at most 14 requests of up to --timeout 120 s and 3 pages of "
        "up to 10 s (28:30 at most; longer only where a request the server fails is asked again):",
        "  ok    the endpoint answers and accepts the model name",
        UNERKANNT,
        f"  ok    the catalogue reaches the prompt (prompt_tokens {mit} with all eleven tools, {ohne} without)",
        "  ok    a call comes back as tool_calls (S1-1)",
        "  ok    usage and finish_reason are present",
        "  ok    streamed and plain answers give the same calls (S3-1: 2 calls)",
        "  ok    several calls come in one answer (S3-1: 2 calls)",
        "  ok    the answers keep the protocol a run checks (5 answers, one of them S4-1, where no call is due)",
        out.splitlines()[-2],
        "The server is set up for a measurement."]
    # the pace of the four requests of cases, what the planned run takes at it; --timeout 120 s is enough here
    assert re.fullmatch(r"Pace: a request of a case took \d+\.\d s here on average \(4 requests of S1, S3, S4: "
                        r"median \d+\.\d s, the slowest \d+\.\d s; answers cut at 512 tokens\); the run these "
                        r"settings plan, 42 requests at --parallel 1, takes about 0:0\d at that pace \(0:0\d to "
                        r"0:\d\d, were every request as fast as the fastest or as slow as the slowest\)\. " + LAST,
                        out.splitlines()[-2])
    koerper = [b for _, b in server.anfragen]
    assert len(koerper) == 3 + 2 + 1
    assert [b.get("max_tokens") for b in koerper] == [1, 1, 512, 512, 512, 512]
    assert ["tools" in b for b in koerper] == [False, True, True, True, True, True]
    # S3-1 plain and streamed (with usage asked for), at temperature 0; several calls came unasked, so
    # parallel_tool_calls is never sent
    assert [(b.get("stream"), b.get("stream_options"), b.get("parallel_tool_calls"), b["temperature"])
            for b in koerper[3:5]] == [(None, None, None, 0.0), (True, {"include_usage": True}, None, 0.0)]
    assert fall_von(koerper[5])["id"] == "S4-1"  # the protocol's check asks where no call is due


KERNE = f"{os.cpu_count()} core{'s' if os.cpu_count() != 1 else ''}"  # '2 cores', as a reader counts them
LAST = (r"This machine's load was \d+\.\d\d? meanwhile \(the 1-minute average; " + KERNE +
        r"\): the run's pace follows its load then\.")  # the loopback server shares the machine


def fehler_zeilen(out):
    return [z for z in out.splitlines() if z.startswith("  FAIL")]


@pytest.mark.parametrize("antwort, zeile", [
    (ohne_katalog, "  FAIL  the catalogue reaches the prompt: prompt_tokens 290 with all eleven tools, 290 "
                   "without; the chat template ignores `tools`: a chat template that renders the tools, in the "
                   "model's own turn format"),
    (lambda fall, body, nummer: dict(gesund(fall, body, nummer), usage=None),
     "  FAIL  usage and finish_reason are present: the server sends no usage, so the diagnosis cannot tell "
     "whether the catalogue reached the prompt or an answer was cut off"),
    (lambda fall, body, nummer: (400, {"error": {"message": '"auto" tool choice requires --enable-auto-tool-choice '
                                                            'and --tool-call-parser to be set'}}, {})
     if "tools" in body else gesund(fall, body, nummer),
     '  FAIL  the catalogue reaches the prompt: a request with the eleven tools fails: the server answered '
     '400: "auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set (start vLLM with '
     "--enable-auto-tool-choice --tool-call-parser <the model's parser>)"),
], ids=["katalog_fehlt", "ohne usage", "vllm ohne tool parser"])
def test_pruefen_schlaegt_fehl(cli, endpunkt, antwort, zeile):
    server = endpunkt(antwort)
    status, out, err = cli("--pruefen", *messung(server.url))
    assert status == 1, err
    assert zeile in fehler_zeilen(out)
    assert out.splitlines()[-1].endswith("failed: fix it before a long run.") or \
        out.splitlines()[-1].endswith("failed: fix them before a long run.")
    assert server.zahl() <= 7 + 3 + 1  # two requests of one token, at most five S1 cases, three of S3-1, S4-1


def test_pruefen_sagt_bei_antworten_im_denken_was_es_nicht_weiss(cli, endpunkt):
    """An answer left in a reasoning field is WESSEN's cannot-tell in a run's verdict, and so in --pruefen."""
    server = endpunkt(lambda fall, body, nummer: GEDACHT if fall else gesund(fall, body, nummer))
    status, out, err = cli("--pruefen", *messung(server.url))
    assert (status, fehler_zeilen(out)) == (0, [])
    assert ("  ?     a call comes back as tool_calls: cannot tell; in S1-1 outputs whose whole answer (calls or text) "
            "stands in a reasoning field, graded as no answer: the model answered inside its reasoning, or the "
            "server's reasoning parser took its answer; check how the server's reasoning and tool-call parsers are "
            "paired") in out.splitlines()


def tags_als_text(fall, body, nummer):
    return completion({"role": "assistant", "content": '<tool_call>{"name": "get_contact", "arguments": {}}'
                       '</tool_call>'}) if fall else gesund(fall, body, nummer)


def test_pruefen_schlaegt_fehl_wo_die_probe_den_parser_zeigt(cli, endpunkt):
    server = endpunkt(tags_als_text, LM_STUDIO)  # a server where the probe tells
    status, out, err = cli("--pruefen", *messung(server.url))
    assert status == 1, err
    assert fehler_zeilen(out) == [
        "  FAIL  a call comes back as tool_calls: in S1-1 calls were read from the answer text, not from "
        'tool_calls (S1-1 asked again with tool_choice "required" at temperature 0 came back as text again); the '
        "server's tool-call parser is off or reads another form: the model's prompt template in LM Studio, with "
        "tool use on"]
    assert server.zahl() <= 7 + 3 + 1  # and the probe


def test_pruefen_zaehlt_die_zeilen_die_es_druckt(cli, endpunkt):
    """S3-1's plain request refused: both checks of S3 say so, each on its line, and the first line counts them."""
    server = endpunkt(lambda fall, body, nummer: (400, {"error": {"message": "bad request"}}, {})
                      if fall is not None and fall["id"] == "S3-1" and not body.get("stream") else
                      gesund(fall, body, nummer), {})
    status, out, err = cli("--pruefen", *messung(server.url))
    zeilen = out.splitlines()
    punkte = [z for z in zeilen if re.match(r"  (ok|\?|FAIL|-) ", z)]
    assert (status, int(re.search(r", (\d+) checks, ", zeilen[0])[1]), len(punkte)) == (1, 8, 8)
    assert punkte[-3:] == [
        "  FAIL  streamed and plain answers give the same calls: S3-1: the server answered 400: bad request",
        "  ?     several calls come in one answer: not checked, the plain request failed",
        "  ok    the answers keep the protocol a run checks (4 answers, one of them S4-1, where no call is due)"]


def test_pruefen_kann_es_ohne_kennung_des_servers_nicht_sagen(cli, endpunkt):
    """The same answers from a server that does not say who it is: a probe would prove nothing, none is asked."""
    server = endpunkt(tags_als_text)
    status, out, err = cli("--pruefen", *messung(server.url))
    zeile = next(z for z in out.splitlines() if "a call comes back as tool_calls" in z)
    assert zeile == (
        "  ?     a call comes back as tool_calls: cannot tell; in S1-1 calls were read from the answer text "
        "(<tool_call>), never from tool_calls, and whose that is cannot be told (no probe tells on a server messen "
        "does not identify: it may force tool_choice \"required\" with a grammar, so even an answer as tool_calls "
        "would prove nothing about its parser): either the server does not read this form (set the server's "
        "tool-call parser for this model's template (its name and option depend on the server)), or the model "
        "writes a form its template's parser does not read (train or prompt it on its template's form)")
    assert out.splitlines()[-1].startswith("Nothing failed, but ") and out.splitlines()[-1].endswith(
        " (?) cannot say the server is set up: they say what would settle it; read them before a long run.")
    assert not [b for _, b in server.anfragen if b.get("tool_choice") == "required"]


def test_pruefen_ein_unbekanntes_modell(cli, endpunkt):
    server = endpunkt(lambda fall, body, nummer: (404, {"error": {"message": "model 'qwn' not found"}}, {}))
    status, out, err = cli("--pruefen", *messung(server.url, "--modell", "qwn"))
    assert status == 1
    assert out.splitlines()[1:] == [
        "  FAIL  the endpoint answers and accepts the model name: the server answered 404: model 'qwn' "
        "not found (check --modell and --url against the server's /v1/models)",
        *[f"  -     {was}: not checked, the endpoint does not answer" for was in (
            "which server this is", "the catalogue reaches the prompt", "a call comes back as tool_calls",
            "usage and finish_reason are present", "streamed and plain answers give the same calls",
            "several calls come in one answer", "the answers keep the protocol a run checks")],
        "1 check failed: fix it before a long run."]
    assert server.zahl() == 1


def test_pruefen_ein_modell_das_nie_ruft(cli, endpunkt):
    server = endpunkt(lambda fall, body, nummer: gesund(fall, body, nummer) if fall is None else
                      completion(openai_nachricht([])))
    status, out, err = cli("--pruefen", *messung(server.url))
    assert status == 0, err
    assert ("  ?     a call comes back as tool_calls: cannot tell, no call came in 5 S1 cases within 512 tokens "
            "(the model answered without one: that is the model, not the server's setting, and a run can go ahead: "
            "its figures measure it)") in out.splitlines()
    # no call came back as tool_calls, nor any other way: never "set up", but every ? is the model's answer
    ende = [z for z in out.splitlines() if not z.startswith("  ")][-1]
    assert ende == ("Nothing failed; the 3 checks marked ? cannot tell because of the model's answers, not the "
                    "server's set-up: a run can go ahead.")


# ---------------------------------------------------------------------------
# Whose text calls are: one row per kind of evidence in messen.TEXT_WESSEN
# ---------------------------------------------------------------------------

LLAMA_VORLAGE = {"name": "llama.cpp", "version": "b1", "beleg": "x", "vorlage": {"werkzeuge": True, "form": None}}
SERVER = {name: {"name": name, "version": None, "beleg": "x", "vorlage": None}
          for name in ("Ollama", "vLLM", "LM Studio")}
TEXT_RUF = {"role": "assistant", "content": '<tool_call>{"name": "list_contacts", "arguments": {}}</tool_call>'}


def probe(nachricht, finish="stop"):
    return {"fall": "S1-1", "nachricht": nachricht, "finish_reason": finish}


@pytest.mark.parametrize("nativ, server, probe_, urteil", [
    (False, LLAMA_VORLAGE, None, ("modell", "vorlage")),              # its /props: the template renders tools
    (True, SERVER["LM Studio"], None, ("modell", "tool_calls")),      # other answers came as tool_calls
    (False, SERVER["Ollama"], None, ("unklar", "keine")),             # it ignores tool_choice
    (False, SERVER["vLLM"], probe(openai_nachricht([{"name": "list_contacts", "args": {}}])),
     ("unklar", "grammatik")),                                        # "required" by grammar: native proves nothing
    (False, None, None, ("unklar", "unbekannt")),                     # not identified: it may force it
    (False, SERVER["LM Studio"], None, ("unklar", "probe_fehlt")),
    (False, SERVER["LM Studio"], {"fall": "S1-1", "fehlt": "timeout"}, ("unklar", "probe_ohne_antwort")),
    (False, SERVER["LM Studio"], probe(TEXT_RUF, "length"), ("unklar", "probe_abgeschnitten")),
    (False, SERVER["LM Studio"], probe(openai_nachricht([{"name": "list_contacts", "args": {}}])),
     ("modell", "probe_nativ")),                                      # the parser works for this template
    (False, SERVER["LM Studio"], probe(TEXT_RUF), ("server", "probe_text")),  # text again: the parser is off
    (False, SERVER["LM Studio"], probe({"role": "assistant", "content": "Sure."}), ("unklar", "probe_ohne_aufruf")),
])
def test_wessen_die_textaufrufe_sind(nativ, server, probe_, urteil):
    import messen
    assert messen.text_wessen(nativ, server, probe_) == urteil


@pytest.mark.parametrize("usage, zeile", [
    ({"prompt_tokens": 900, "completion_tokens": 7},
     "  FAIL  a call comes back as tool_calls: in S1-1 came nothing (neither a call nor text), for 7 completion "
     "tokens the server counted; the server returned nothing: check its chat template and stop tokens"),
    ({}, "  ?     a call comes back as tool_calls: cannot tell; in S1-1 came nothing (neither a call nor text), and "
         "whose that is cannot be told: a server that reports usage: an empty answer for counted tokens is the "
         "server's"),
])
def test_pruefen_wiegt_eine_leere_antwort_wie_das_urteil(cli, endpunkt, usage, zeile):
    """An empty answer is never "the model answered without a call": --pruefen weighs it as a run's verdict does
    (WESSEN), the server's for tokens it counted, cannot tell without a count."""
    server = endpunkt(lambda fall, body, nummer: gesund(fall, body, nummer) if fall is None else
                      completion({"role": "assistant", "content": ""}, "stop", usage))
    status, out, err = cli("--pruefen", *messung(server.url))
    assert zeile in out.splitlines(), out
    # without usage, the check of usage fails too: the answers' own line says cannot tell; with it, the check of
    # the protocol names the empty answers as a run would, the server's
    assert (status, len(fehler_zeilen(out))) == (1, 1 + bool(usage)) and (zeile in fehler_zeilen(out)) == bool(usage)
    assert bool(usage) == any(z.startswith("  FAIL  the answers keep the protocol a run checks: answers with neither "
                                           "a call nor text for the tokens the server counted in ")
                              for z in fehler_zeilen(out)), err


def test_pruefen_widerspricht_keinem_fail_darueber(cli, endpunkt):
    """Under "the catalogue does not reach the prompt", no line says the model answered without a call."""
    status, out, err = cli("--pruefen", *messung(endpunkt(ohne_katalog).url))
    zeilen = out.splitlines()
    assert status == 1 and zeilen[3].startswith("  FAIL  the catalogue reaches the prompt")
    assert zeilen[4] == ("  ?     a call comes back as tool_calls: cannot tell, no call came in 5 S1 cases within 512 "
                         "tokens (the catalogue does not reach the prompt (above), so the model was never offered the "
                         "tools: fix that first)")
    assert "that is the model" not in out
