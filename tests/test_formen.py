"""The shapes real servers break calls into: each blamed on the party that made it.

A loopback endpoint sends each shape (a parser that stops after the first call,
arguments encoded twice or sent as an object, calls lost, ids missing, bare JSON
while the parser is on); the run grades what the model meant, and the diagnosis
names the server's part.
"""

import json

import pytest

import messen
from conftest import erwartet_von, BY_ID, LM_STUDIO, FAELLE, completion, fall_von, meldungen, messung, openai_nachricht, richtig
from test_diagnose import NICHT, NULL, json_lauf

SOLL_AUFRUFE = sum(len(f["erwartet"]) for f in FAELLE)  # 37
MEHRERE = [f["id"] for f in FAELLE if len(f["erwartet"]) > 1]  # the S3 cases
GEMEINT = "The figures grade the calls as the model wrote them; gelungen_nativ is what an agent on this server gets done."


def hermes_block(a):
    return f"<tool_call>\n{json.dumps({'name': a['name'], 'arguments': a['args']})}\n</tool_call>"


def diagnose_von(out):
    return out.split("\n\nDiagnosis")[1].split("\n\n")[0].splitlines()


# ---------------------------------------------------------------------------
# A parser that stops after the first call (llama.cpp #14101, SGLang #18102)
# ---------------------------------------------------------------------------

def teilweise(fall, body, nummer):
    """The first call as tool_calls, the rest left in content as the template wrote them."""
    soll = erwartet_von(fall)
    if len(soll) < 2:
        return richtig(fall, body, nummer)
    nachricht = dict(openai_nachricht(soll[:1]), content="\n".join(map(hermes_block, soll[1:])))
    return completion(nachricht, "tool_calls")


def test_ein_teilweise_geparster_aufruf_wird_dem_modell_gutgeschrieben(cli, endpunkt):
    server = endpunkt(teilweise)
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    assert "By stage: S1 100 %, S2 100 %, S3 100 %, S4 100 %, S5 100 %." in out.splitlines()
    assert diagnose_von(out) == [
        ": what the server did, not the model",
        f"  teilweise_geparst {len(MEHRERE)}: outputs with calls in tool_calls and further calls left as text in the "
        "content beside them; the server's tool-call parser stopped after the first call (llama.cpp #14101 and "
        "SGLang #18102 left <tool_call> blocks so): an agent receives only what came as tool_calls; update the "
        f"server or report it. {GEMEINT}"]
    k = json_lauf(cli, "--bewerten", "m")
    assert (k["auftraege_gelungen"], k["gelungen_nativ"]) == (42 / 42, (42 - len(MEHRERE)) / 42)
    assert k["diagnose"] == dict(NULL, teilweise_geparst=len(MEHRERE))
    assert server.zahl() == 42  # calls came as tool_calls: no probe


def test_ein_echo_des_aufrufs_im_text_zaehlt_einmal(cli, endpunkt):
    # a server that keeps the raw text beside tool_calls lost nothing, and the model called once
    def antwort(fall, body, nummer):
        soll = erwartet_von(fall)
        if not soll:
            return richtig(fall, body, nummer)
        return completion(dict(openai_nachricht(soll), content="\n".join(map(hermes_block, soll))), "tool_calls")
    server = endpunkt(antwort)
    k = json_lauf(cli, *messung(server.url))
    assert (k["auftraege_gelungen"], k["gelungen_nativ"], k["schritte_je_auftrag"]) == (1.0, 1.0, SOLL_AUFRUFE / 42)
    assert k["diagnose"] == NULL


# ---------------------------------------------------------------------------
# Arguments encoded twice, sent as an object; calls lost; ids missing
# ---------------------------------------------------------------------------

def argumente_als(kodiere):
    def antwort(fall, body, nummer):
        body_ = richtig(fall, body, nummer)
        for c in body_["choices"][0]["message"].get("tool_calls") or []:
            c["function"]["arguments"] = kodiere(json.loads(c["function"]["arguments"]))
        return body_
    return antwort


@pytest.mark.parametrize("kodiere, art, kopf", [
    # on a server not known to encode twice, the model may have written its arguments as a JSON string: the
    # heading says so as the line does (llama.cpp #19520)
    (lambda args: json.dumps(json.dumps(args)), "argumente_doppelt", ": whose some outputs are cannot be told"),
    (lambda args: args, "argumente_objekt", ": what the server did, not the model"),  # llama.cpp #20198, SGLang, TGI
])
def test_argumente_in_falscher_form_werden_wie_gemeint_bewertet(cli, endpunkt, kodiere, art, kopf):
    server = endpunkt(argumente_als(kodiere))
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    assert diagnose_von(out)[0] == kopf
    assert diagnose_von(out)[1].startswith(f"  protokoll {art} {SOLL_AUFRUFE}: ")
    assert diagnose_von(out)[1].endswith(GEMEINT)
    k = json_lauf(cli, "--bewerten", "m")
    assert (k["formkorrekt"], k["auftraege_gelungen"]) == (28 / 28, 42 / 42)
    assert k["gelungen_nativ"] == 14 / 42  # only the answers without a call: a client's json.loads fails on the rest
    assert k["diagnose"] == dict(NULL, protokoll={art: SOLL_AUFRUFE})
    status, md, _ = cli("--bewerten", "m", "--markdown")
    assert f"| diagnosis: protokoll.{art} | {SOLL_AUFRUFE} |" in md.splitlines()


def test_finish_reason_tool_calls_ohne_aufruf_sind_verlorene_aufrufe(cli, endpunkt):
    verloren = completion({"role": "assistant", "content": None}, "tool_calls")  # SGLang #26790
    server = endpunkt(lambda fall, body, nummer: verloren if fall["id"] in ("S2-1", "S2-2") else
                      richtig(fall, body, nummer))
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    assert ("  protokoll aufrufe_verloren 2: outputs with finish_reason tool_calls but no call; the server's parser "
            "lost the calls: a client is told to run calls and finds none (SGLang #26790; vLLM #53255). "
            f"{GEMEINT}") in diagnose_von(out)
    k = json_lauf(cli, "--bewerten", "m")
    assert k["diagnose"] == dict(NULL, protokoll={"aufrufe_verloren": 2})  # no answer, not an empty one
    assert k["fehlerarten"]["angekuendigt"] == 2 and k["fehlerarten"]["leer"] == 0
    assert k["auftraege_gelungen"] == 40 / 42


def test_fehlende_und_doppelte_ids(cli, endpunkt):
    def antwort(fall, body, nummer):
        body_ = richtig(fall, body, nummer)
        rufe = body_["choices"][0]["message"].get("tool_calls") or []
        for c in rufe:
            if fall["id"] == "S2-1":
                del c["id"]
            elif fall["id"] in MEHRERE:
                c["id"] = "call_0"  # every call of the answer under one id
        return body_
    server = endpunkt(antwort)
    k = json_lauf(cli, *messung(server.url))
    doppelt = sum(len(BY_ID[i]["erwartet"]) for i in MEHRERE)
    assert k["diagnose"]["protokoll"] == {"id_fehlt": 1 + doppelt}
    assert (k["auftraege_gelungen"], k["gelungen_nativ"]) == (1.0, 1.0)  # each call itself is as it should be


# ---------------------------------------------------------------------------
# Bare JSON: whose it is, settled by one request with tool_choice "required"
# ---------------------------------------------------------------------------

def nackt(aufrufe):
    return json.dumps([{"name": a["name"], "arguments": a["args"]} for a in aufrufe])


def nackt_ausser_gefordert(gefordert):
    """Bare JSON in content when asked with "auto"; what `gefordert` returns when asked with "required"."""
    def antwort(fall, body, nummer):
        if body.get("tool_choice") == "required":
            return gefordert(fall, body, nummer)
        soll = erwartet_von(fall)
        return completion({"role": "assistant", "content": nackt(soll)}) if soll else richtig(fall, body, nummer)
    return antwort


def test_nacktes_json_bei_laufendem_parser_ist_das_format_des_modells(cli, endpunkt):
    server = endpunkt(nackt_ausser_gefordert(richtig), LM_STUDIO)  # a server where the probe tells
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    assert "--jinja" not in out
    assert diagnose_von(out) == [
        ": the server did its part; the model did not",
        f"  eigenes_format {SOLL_AUFRUFE}: {messen.EIGENES_FORMAT} (S1-1 asked again with tool_choice \"required\" "
        "at temperature 0 came back as tool_calls: the server's parser works for this template; it wrote bare JSON)."]
    anfragen = [b for _, b in server.anfragen]
    assert len(anfragen) == 43 and anfragen[-1]["tool_choice"] == "required" and anfragen[-1]["temperature"] == 0.0
    assert fall_von(anfragen[-1])["id"] == "S1-1"
    # saved with the run: regrading reads the same, and asks nothing
    server.stop()
    k = json_lauf(cli, "--bewerten", "m")
    assert k["diagnose"] == dict(NULL, eigenes_format=SOLL_AUFRUFE, probe='S1-1 asked again with tool_choice '
                                 '"required" at temperature 0 came back as tool_calls', text_form="bare JSON")
    assert (k["auftraege_gelungen"], k["gelungen_nativ"]) == (1.0, 14 / 42)


def test_nacktes_json_auf_einem_unbekannten_server_kann_es_nicht_sagen(cli, endpunkt):
    """The same answers from a server that does not say who it is: it may force "required" with a grammar, so
    no probe is asked, and whose the text calls are cannot be told."""
    server = endpunkt(nackt_ausser_gefordert(richtig))
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    assert diagnose_von(out) == [
        ": whose some calls are cannot be told",
        f"  text_ungeklaert {SOLL_AUFRUFE}: calls were read from the answer text (bare JSON), never from tool_calls, "
        "and whose that is cannot be told (no probe tells on a server messen does not identify: it may force "
        "tool_choice \"required\" with a grammar, so even an answer as tool_calls would prove nothing about its "
        "parser): either the server does not read this form (set the server's tool-call parser for this model's "
        "template (its name and option depend on the server)), or the model writes a form its template's parser "
        "does not read (train or prompt it on its template's form)."]
    assert server.zahl() == 42  # no probe


def test_nacktes_json_und_eine_probe_als_text_ist_der_parser(cli, endpunkt):
    def auch_gefordert_nackt(fall, body, nummer):
        return completion({"role": "assistant", "content": nackt(erwartet_von(fall))})
    server = endpunkt(nackt_ausser_gefordert(auch_gefordert_nackt), LM_STUDIO)
    k = json_lauf(cli, *messung(server.url))
    assert (k["diagnose"]["aus_text"], k["diagnose"]["eigenes_format"], k["diagnose"]["text_ungeklaert"]) == \
        (SOLL_AUFRUFE, 0, 0)
    assert server.zahl() == 43


def test_nacktes_json_und_eine_abgelehnte_probe_kann_es_nicht_sagen(cli, endpunkt):
    abgelehnt = (400, {"error": {"message": "tool_choice \"required\" is not supported"}}, {})
    server = endpunkt(nackt_ausser_gefordert(lambda *_: abgelehnt), LM_STUDIO)
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    assert diagnose_von(out) == [
        ": whose some calls are cannot be told",
        f"  text_ungeklaert {SOLL_AUFRUFE}: calls were read from the answer text (bare JSON), never from tool_calls, "
        "and whose that is cannot be told (S1-1 asked again with tool_choice \"required\" at temperature 0 got no "
        "answer: S1-1: the server answered 400: tool_choice \"required\" is not supported): either the server does "
        "not read this form (set the model's prompt template in LM Studio, with tool use on), or the model writes a "
        "form its template's parser does not read (train or prompt it on its template's form); --pruefen asks "
        "again."]
    assert NICHT not in out
    assert json_lauf(cli, "--bewerten", "m")["diagnose"]["text_ungeklaert"] == SOLL_AUFRUFE


def test_pruefen_fragt_die_probe_und_sagt_wessen(cli, endpunkt):
    def antwort(fall, body, nummer):
        if fall is None:
            return completion({"role": "assistant", "content": "OK"}, "length")
        return nackt_ausser_gefordert(richtig)(fall, body, nummer)
    server = endpunkt(antwort, LM_STUDIO)
    status, out, err = cli("--pruefen", *messung(server.url))
    assert status == 0, err
    assert ("  ?     a call comes back as tool_calls: in S1-1 the model wrote its call as text, and S1-1 asked again "
            "with tool_choice \"required\" at temperature 0 came back as tool_calls: the server's parser works for "
            "this template, so the format is the model's own: train or prompt it on its chat template's tool-call "
            "format") in out.splitlines()
    assert "--jinja" not in out


# ---------------------------------------------------------------------------
# A small catalogue of one's own: what S1 leaves out decides what the token counts can tell
# ---------------------------------------------------------------------------

FUENF = messen.KATALOG[:5]  # list_contacts ... delete_contact
FUENF_FAELLE = [
    {"id": "S1-1", "stufe": "S1", "frage": "Show me all contacts.", "nur": [w["function"]["name"] for w in FUENF[:4]],
     "erwartet": [{"name": "list_contacts", "args": {}}]},
    {"id": "S2-1", "stufe": "S2", "frage": "Delete the contact 11d3e7b0-4c52-4a1e-9b8f-0d6a3f2c5e10.",
     "erwartet": [{"name": "delete_contact", "args": {"contact_id": "11d3e7b0-4c52-4a1e-9b8f-0d6a3f2c5e10"}}]},
    BY_ID["S4-2"],
]


@pytest.fixture
def fuenf(tmp_path):
    katalog, faelle = tmp_path / "fuenf.json", tmp_path / "fuenf.jsonl"
    katalog.write_text(json.dumps({"werkzeuge": FUENF, "eroeffnung": messen.EROEFFNUNG}))
    faelle.write_text("".join(json.dumps(f) + "\n" for f in FUENF_FAELLE))
    return ["--katalog", str(katalog), "--faelle", str(faelle)]


def test_fuenf_werkzeuge_von_denen_s1_vier_bietet(cli, endpunkt, fuenf):
    status, out, err = cli("--selbsttest", *fuenf)
    assert (status, meldungen(err)) == (0, [])
    assert out.splitlines()[-1].startswith("Diagnosis: all clear")

    def antwort(fall, body, nummer):
        frage = body["messages"][1]["content"]
        soll = next(f for f in FUENF_FAELLE if f["frage"] == frage)["erwartet"]
        return completion(openai_nachricht(soll), "tool_calls" if soll else "stop")
    server = endpunkt(antwort)
    k = json_lauf(cli, *messung(server.url, *fuenf))
    assert k["diagnose"]["katalog_fehlt"] is None  # one tool left out adds too few tokens to tell
    assert k["auftraege_gelungen"] == 1.0
