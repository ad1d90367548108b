"""Whose fault: the model's own call format, cut answers, refusals, reasoning-only answers
and token counts no server measured, each attributed to the right party over loopback HTTP."""

import json

import pytest

from conftest import meldungen, AUS_TEXT, BY_ID, LM_STUDIO, completion, fall_von, messung, openai_nachricht, prompt_tokens, richtig, zweiter_zug
from test_diagnose import HINWEIS, NICHT, NULL, diagnose_block, fehler_zeilen, gesund, in_faellen, json_lauf

S3_8 = BY_ID["S3-8"]["erwartet"]  # three calls


# ---------------------------------------------------------------------------
# Cut by the token limit: the server's max_tokens, whatever came before the cut
# ---------------------------------------------------------------------------

def test_ein_abgeschnittener_auftrag_mit_fertigen_aufrufen_ist_abgeschnitten(cli, endpunkt):
    assert len(S3_8) == 3
    zwei_von_drei = completion(openai_nachricht(S3_8[:2]), "length")
    einer_von_zwei = completion(openai_nachricht(BY_ID["S3-6"]["erwartet"][:1]), "length")
    alle = completion(openai_nachricht(BY_ID["S3-1"]["erwartet"]), "length")  # complete: the limit merely ended it
    server = endpunkt(in_faellen({"S3-8": zwei_von_drei, "S3-6": einer_von_zwei, "S3-1": alle}))
    k = json_lauf(cli, *messung(server.url))
    assert k["fehlgeschlagen"] == ["S3-6", "S3-8"]
    assert k["diagnose"] == dict(NULL, abgeschnitten=2)
    assert k["fehlerarten"]["abgeschnitten"] == 2
    assert k["fehlerarten"]["kein_aufruf"] == 0  # the missing steps are the cut's, not the model's
    status, out, _ = cli("--bewerten", "m")
    assert diagnose_block(out) == ["Diagnosis: whose some outputs are cannot be told",
                                   f"  abgeschnitten  2: {HINWEIS['abgeschnitten']}. No limit was set for this run, so "
                                   "the server's own may have cut them: whose they are cannot be told; a token limit "
                                   "set for both runs (--extra '{\"max_tokens\": 512}'), measured again settles it."]


def test_ein_aufruf_in_s4_mit_length_ist_ueberzaehlig(cli, endpunkt):
    # the call was made before the limit came: the model's spare call, not the server's limit
    server = endpunkt(in_faellen({"S4-1": completion(openai_nachricht([{"name": "list_calendars", "args": {}}]),
                                                     "length"),
                                  "S5-1": completion({"role": "assistant", "content": '{"name": "delete_con'},
                                                     "length")}))
    k = json_lauf(cli, *messung(server.url))
    assert (k["diagnose"]["abgeschnitten"], k["fehlerarten"]["ueberzaehlig"], k["stillgehalten"]) == (1, 1, 12 / 14)


# ---------------------------------------------------------------------------
# Refusals and content filters: answers without a call, never empty
# ---------------------------------------------------------------------------

ABGELEHNT = completion({"role": "assistant", "content": None, "refusal": "I can't help with that request."})
GEFILTERT = completion({"role": "assistant", "content": "I can't discuss that."}, "content_filter")


@pytest.mark.parametrize("antwort", [ABGELEHNT, GEFILTERT], ids=["refusal", "content_filter"])
def test_eine_ablehnung_ist_eine_antwort_ohne_aufruf(cli, endpunkt, antwort):
    server = endpunkt(in_faellen({"S4-1": antwort, "S5-1": antwort, "S2-1": antwort}))
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    assert diagnose_block(out)[0].startswith("Diagnosis: all clear")
    k = json_lauf(cli, "--bewerten", "m")
    assert (k["stillgehalten"], k["fehlgeschlagen"]) == (14 / 14, ["S2-1"])  # held still; S2-1 the model's miss
    assert k["fehlerarten"]["kein_aufruf"] == 1 and k["fehlerarten"]["leer"] == 0


def test_nur_im_denken_geantwortet_ist_keine_antwort(cli, endpunkt):
    # the text an agent would show stands in reasoning_content; content is empty
    gedacht = completion({"role": "assistant", "content": "", "reasoning_content": "CRM is Customer Relationship "
                                                                                    "Management."})
    server = endpunkt(in_faellen({"S4-2": gedacht}))
    k = json_lauf(cli, *messung(server.url))
    assert k["diagnose"] == dict(NULL, im_denken=1)
    assert (k["stillgehalten"], k["fehlgeschlagen"]) == (13 / 14, ["S4-2"])


# ---------------------------------------------------------------------------
# The second turn of --nachfrage is an answer too
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("zweite, schluessel", [
    (completion({"role": "assistant", "content": None}), "leer"),
    (completion({"role": "assistant", "content": "I will delete"}, "length"), "abgeschnitten"),
])
def test_eine_leere_zweite_antwort_steht_in_der_diagnose(cli, endpunkt, zweite, schluessel):
    def antwort(fall, body, nummer):
        if zweiter_zug(body):
            return zweite if fall["id"] == "S5-2" else completion(openai_nachricht(fall["danach"]), "tool_calls")
        if fall["stufe"] == "S5":
            return completion({"role": "assistant", "content": "Which contact do you mean?"})
        return richtig(fall, body, nummer)
    server = endpunkt(antwort)
    k = json_lauf(cli, *messung(server.url, "--nachfrage"))
    assert k["diagnose"] == dict(NULL, **{schluessel: 1})
    assert k["nachfrage"] == 7 / 8
    status, out, _ = cli("--bewerten", "m")
    assert not out.count("Diagnosis: all clear")


# ---------------------------------------------------------------------------
# Token counts no server measured are unknown, and never overflow a sum
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("zahl", [0, -5, 12.5, 10 ** 400, "300", True, 10 ** 9 + 1])
def test_unplausible_tokenzahlen_sind_unbekannt(cli, endpunkt, zahl):
    server = endpunkt(lambda fall, body, nummer: dict(richtig(fall, body, nummer),
                                                      usage={"prompt_tokens": zahl, "completion_tokens": zahl}))
    k = json_lauf(cli, *messung(server.url))
    assert k["diagnose"]["katalog_fehlt"] is None
    assert k["tokens"] == {"prompt": 0, "completion": 0}
    assert json_lauf(cli, "--bewerten", "m")["tokens"] == {"prompt": 0, "completion": 0}  # the saved file reads


def test_weniger_tokens_mit_dem_ganzen_katalog_sagen_nichts(cli, endpunkt):
    # a server that counts only uncached tokens: S1's first requests cost more than the rest
    def antwort(fall, body, nummer):
        teuer = fall["stufe"] == "S1"
        return dict(richtig(fall, body, nummer), usage={"prompt_tokens": 1900 if teuer else 60,
                                                         "completion_tokens": 20})
    server = endpunkt(antwort)
    k = json_lauf(cli, *messung(server.url))
    assert k["diagnose"]["katalog_fehlt"] is None


# ---------------------------------------------------------------------------
# --pruefen names the party the same way
# ---------------------------------------------------------------------------

def text_antwort(inhalt):
    return lambda fall, body, nummer: completion({"role": "assistant", "content": inhalt}) if fall \
        else gesund(fall, body, nummer)


def test_pruefen_ein_zaun_ist_das_format_des_modells(cli, endpunkt):
    server = endpunkt(text_antwort('```json\n{"name": "get_contact", "arguments": {}}\n```'))
    status, out, err = cli("--pruefen", *messung(server.url))
    assert status == 0, err  # the server is set up right; the model is not
    assert ("  ?     a call comes back as tool_calls: in S1-1 the model wrote its call in a format of its own (a ``` "
            "block or JSON in prose), which no tool-call parser turns into tool_calls: an agent on this server "
            "receives text, not calls. That is the model, not the server's setting: train or prompt it on its "
            "chat template's tool-call format; a run can go ahead: it grades such calls as meant, and "
            "gelungen_nativ counts what an agent gets done") in out.splitlines()
    assert out.splitlines()[-1] == ("Nothing failed; the 2 checks marked ? cannot tell because of the model's "
                                    "answers, not the server's set-up: a run can go ahead.")
    assert "--jinja" not in out


def test_pruefen_getaggt_ohne_native_ist_der_parser(cli, endpunkt):
    server = endpunkt(text_antwort('<tool_call>{"name": "get_contact", "arguments": {}}</tool_call>'), LM_STUDIO)
    status, out, err = cli("--pruefen", *messung(server.url))
    assert status == 1
    assert fehler_zeilen(out) == ["  FAIL  a call comes back as tool_calls: in S1-1 calls were read from the answer "
                                  'text, not from tool_calls (S1-1 asked again with tool_choice "required" at '
                                  f"temperature 0 came back as text again); {AUS_TEXT}"]
    assert [b["tool_choice"] for _, b in server.anfragen if fall_von(b).get("id") == "S1-1"] == ["auto", "required"]


def test_pruefen_jede_antwort_an_der_eigenen_grenze_abgeschnitten(cli, endpunkt):
    server = endpunkt(lambda fall, body, nummer: completion(
        {"role": "assistant", "content": "", "reasoning_content": "Let me think"}, "length")
        if fall else gesund(fall, body, nummer))
    status, out, err = cli("--pruefen", *messung(server.url))
    assert status == 0, err
    assert ("  ?     a call comes back as tool_calls: cannot tell, every answer of 5 was cut at 512 tokens before a "
            "call or text came (finish_reason length), as a thinking model's is; give it more with --extra "
            "'{\"max_tokens\": 4096}'") in out.splitlines()
    assert "answered without one" not in out


def test_pruefen_nimmt_max_tokens_aus_extra(cli, endpunkt):
    # a server that refuses max_tokens 1 must not fail "accepts the model name" when --extra sets it
    def antwort(fall, body, nummer):
        if body.get("max_tokens") == 1:
            return 400, {"error": {"message": "max_tokens must be at least 16"}}, {}
        return gesund(fall, body, nummer)
    server = endpunkt(antwort)
    status, out, err = cli("--pruefen", *messung(server.url, "--extra", '{"max_tokens": 64}'))
    assert (status, meldungen(err)) == (0, [])
    assert [b["max_tokens"] for _, b in server.anfragen] == [64] * 6  # S4-1 among them (the protocol's check)


def test_pruefen_ohne_katalog_zeile_vier_kann_nichts_sagen(cli, endpunkt):
    server = endpunkt(lambda fall, body, nummer: (500, {"error": "tools broke"}, {}) if "tools" in body
                      else gesund(fall, body, nummer))
    status, out, err = cli("--pruefen", *messung(server.url, "--versuche", "1"))
    assert status == 1
    assert "  ?     usage and finish_reason are present: cannot tell, only the answer without tools was seen" \
        in out.splitlines()


@pytest.mark.parametrize("usage, zeile", [
    ({"prompt_tokens": 10 ** 400}, "  ?     the catalogue reaches the prompt: cannot tell, the server sends no usage "
                                   "with plausible prompt_tokens"),
    ({"prompt_tokens": 0}, "  ?     the catalogue reaches the prompt: cannot tell, the server sends no usage "
                           "with plausible prompt_tokens"),
])
def test_pruefen_unplausible_tokenzahlen(cli, endpunkt, usage, zeile):
    server = endpunkt(lambda fall, body, nummer: dict(gesund(fall, body, nummer), usage=usage))
    status, out, err = cli("--pruefen", *messung(server.url))
    assert zeile in out.splitlines()
    assert status == 1 and fehler_zeilen(out) == [
        "  FAIL  usage and finish_reason are present: the server sends no usage, so the diagnosis cannot tell "
        "whether the catalogue reached the prompt or an answer was cut off"]


def test_pruefen_weniger_tokens_mit_katalog(cli, endpunkt):
    server = endpunkt(lambda fall, body, nummer: dict(gesund(fall, body, nummer), usage={
        "prompt_tokens": 40 if "tools" in body else 400, "completion_tokens": 1}))
    status, out, err = cli("--pruefen", *messung(server.url))
    assert ("  ?     the catalogue reaches the prompt: cannot tell (prompt_tokens 40 with all eleven tools, 400 "
            "without: fewer with tools, so the server counts something else)") in out.splitlines()


def test_pruefen_ohne_s1_faelle(cli, endpunkt, tmp_path):
    ohne_s1 = tmp_path / "faelle.jsonl"
    ohne_s1.write_text("\n".join(json.dumps(f) for f in (BY_ID["S2-1"], BY_ID["S4-1"])) + "\n")
    server = endpunkt(gesund)
    status, out, err = cli("--pruefen", *messung(server.url, "--faelle", str(ohne_s1)))
    assert (status, meldungen(err)) == (0, [])
    assert ("  ok    a call comes back as tool_calls (S2-1) (the case file has no S1 case; tried the first cases "
            "that expect a call)") in out.splitlines()
    assert prompt_tokens({}) < 1000
