"""The command line end to end over real HTTP: the chapter's figures, the request,
the saved run, and a right answer graded right in every shape real servers send."""

import json
import random

import pytest

from conftest import (AUS_TEXT, BY_ID, LM_STUDIO, FAELLE, KAPITEL_FEHLER, TEXT_ANTWORT, completion, messung, mit_fehlern,
                      openai_nachricht, richtig, zeilen)
import messen
from messen import EROEFFNUNG, KATALOG

KAPITEL_ZEILE = "By stage: S1 100 %, S2 91.7 %, S3 100 %, S4 100 %, S5 87.5 %."
SOLL_AUFRUFE = sum(len(f["erwartet"]) for f in FAELLE)  # 37


def json_lauf(cli, *argv):
    status, out, err = cli(*argv, "--json")
    assert status == 0, err
    return json.loads(out)


# ---------------------------------------------------------------------------
# The chapter's first measurement
# ---------------------------------------------------------------------------

def test_die_messung_des_kapitels(cli, endpunkt, tmp_path):
    server = endpunkt(mit_fehlern(KAPITEL_FEHLER))
    status, out, err = cli(*messung(server.url, "--temp", "0.0", "--n", "1", "--tag", "gross"))
    assert status == 0, err
    zeilen_out = out.splitlines()
    assert KAPITEL_ZEILE in zeilen_out
    assert "formkorrekt          100 %" in zeilen_out
    assert "auftraege_gelungen   95.2 %   (95 % interval 84.2 % to 98.7 %)" in zeilen_out
    assert "stillgehalten        92.9 %" in zeilen_out
    assert "  S2-9  Book the room besprechung tomorrow from 10:00 to 11:00." in zeilen_out
    assert '      differs:  book_room: room "raum" instead of "besprechung"' in zeilen_out
    assert "      differs:  spare call list_calendars; spare call get_events" in zeilen_out
    assert "Failed (2):" in zeilen_out
    assert "Failure classes: falscher_wert 1, ueberzaehlig 2." in zeilen_out

    k = json_lauf(cli, "--bewerten", "gross")
    assert k["auftraege_gelungen"] == 40 / 42
    assert k["stillgehalten"] == 13 / 14
    assert k["formkorrekt"] == 28 / 28
    assert k["richtig_je_schritt"] == (SOLL_AUFRUFE - 1) / SOLL_AUFRUFE
    assert k["schritte_je_auftrag"] == (SOLL_AUFRUFE + 2) / 42
    assert k["stufen"] == {"S1": 1.0, "S2": 11 / 12, "S3": 1.0, "S4": 1.0, "S5": 7 / 8}
    assert k["fehlgeschlagen"] == ["S2-9", "S5-8"]
    assert k["fehlerarten"] == {"kein_aufruf": 0, "falsches_werkzeug": 0, "falscher_wert": 1, "fehlendes_argument": 0,
                                "erfundenes_argument": 0, "ueberzaehlig": 2, "fehlerhaft": 0, "leer": 0,
                                "abgeschnitten": 0, "schleife": 0, "im_denken": 0, "angekuendigt": 0, "falscher_zustand": 0,
                                "schrittgrenze": 0, "kontextgrenze": 0}
    assert (k["modell"], k["tag"], k["temp"], k["n"], k["faelle"], k["ausgaben"]) == ("m", "gross", 0.0, 1, 42, 42)

    status, out2, err = cli("--bewerten", "gross")
    assert status == 0 and out2 == out  # the saved run graded again gives the same summary
    assert server.zahl() == 42          # and --bewerten asked no server


def test_selbsttest_hinterlaesst_nichts(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, out, err = cli("--selbsttest", "--ausgabe", "ergebnisse")
    assert status == 0, err
    assert "By stage: S1 100 %, S2 100 %, S3 100 %, S4 100 %, S5 100 %." in out.splitlines()
    assert list(tmp_path.iterdir()) == []


def test_anfrage(cli, endpunkt, monkeypatch):
    server = endpunkt()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-1")
    basis = server.url.removesuffix("/chat/completions")  # a base URL ending in /v1 is completed
    status, _, err = cli("--url", basis, "--modell", "qwen", "--temp", "0.3",
                         "--extra", '{"chat_template_kwargs": {"enable_thinking": false}}')
    assert status == 0, err
    koepfe = {b["messages"][-1]["content"]: (h, b) for h, b in server.anfragen}
    h, b = koepfe[BY_ID["S2-7"]["frage"]]
    assert h["Authorization"] == "Bearer sk-test-1"
    assert b == {"model": "qwen", "temperature": 0.3, "tool_choice": "auto", "tools": KATALOG,
                 "messages": [{"role": "system", "content": EROEFFNUNG},
                              {"role": "user", "content": BY_ID["S2-7"]["frage"]}],
                 "chat_template_kwargs": {"enable_thinking": False}}
    _, b1 = koepfe[BY_ID["S1-1"]["frage"]]
    assert [w["function"]["name"] for w in b1["tools"]] == ["get_contact", "delete_contact"]


def test_gespeicherter_lauf(cli, endpunkt, tmp_path):
    server = endpunkt()
    status, _, err = cli(*messung(server.url, "--modell", "Org/Model 7B:q4"))
    assert status == 0, err
    z = zeilen(tmp_path / "ergebnisse" / "Org-Model-7B-q4.jsonl")  # the tag derived from the model
    e = z[0]["einstellungen"]
    assert (e["modell"], e["url"], e["temp"], e["n"], e["tag"]) == ("Org/Model 7B:q4", server.url, 0.0, 1, "Org-Model-7B-q4")
    assert len(e["faelle_sha256"]) == len(e["katalog_sha256"]) == 64
    assert [(a["id"], a["stufe"], a["lauf"]) for a in z[1:]] == [(f["id"], f["stufe"], 0) for f in FAELLE]
    s27 = z[1:][[f["id"] for f in FAELLE].index("S2-7")]
    assert {f for a in z[1:] for f in a} == {"id", "stufe", "lauf", "sitzung", "ende", "zuege"}  # what came, no grade
    [zug] = s27["zuege"]  # one turn: the question's answer
    assert set(zug) == {"zweck", "nachricht", "finish_reason", "usage", "latenz_s", "verworfen", "wer"}  # no stream
    assert zug["wer"] == {"modell": "m"}  # what the answer says answered it (its "model"; no system_fingerprint)
    assert zug["zweck"] == "frage" and zug["nachricht"] == openai_nachricht(BY_ID["S2-7"]["erwartet"])
    assert zug["usage"]["prompt_tokens"] == 300 + len(json.dumps(KATALOG)) // 4 and zug["latenz_s"] >= 0
    assert zug["finish_reason"] == "tool_calls" and zug["verworfen"] == 0


# ---------------------------------------------------------------------------
# Every response shape real servers send: a right answer scores 100 % in each
# ---------------------------------------------------------------------------

def vllm(fall):
    rufe = [{"id": f"chatcmpl-tool-{i}", "type": "function",
             "function": {"name": a["name"], "arguments": json.dumps(a["args"])}} for i, a in enumerate(fall["erwartet"])]
    nachricht = {"role": "assistant", "content": None if rufe else TEXT_ANTWORT, "refusal": None, "annotations": None,
                 "audio": None, "function_call": None, "tool_calls": rufe,
                 # reasoning is never read, even when it holds call-like text
                 "reasoning_content": '<tool_call>{"name": "list_calendars", "arguments": {}}</tool_call>',
                 "reasoning": "maybe list_calendars"}
    body = completion(nachricht, "tool_calls" if rufe else "stop")
    body["choices"][0].update(logprobs=None, stop_reason=None)
    body["prompt_logprobs"] = None
    return body


def llama_cpp(fall):
    if not fall["erwartet"]:
        return completion({"role": "assistant", "content": TEXT_ANTWORT})
    buchstaben = random.Random(fall["id"]).choices("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ", k=32)
    return completion({"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": a["name"], "arguments": json.dumps(a["args"])},
         "id": "".join(buchstaben) + str(i)} for i, a in enumerate(fall["erwartet"])]}, "tool_calls")


def ollama(fall):
    return completion({"role": "assistant", "content": "" if fall["erwartet"] else TEXT_ANTWORT, "tool_calls": [
        {"id": f"call_{i}", "index": i, "type": "function",
         "function": {"name": a["name"], "arguments": json.dumps(a["args"])}}
        for i, a in enumerate(fall["erwartet"])] or None}, "tool_calls" if fall["erwartet"] else "stop")


def tgi(fall):
    if not fall["erwartet"]:
        return completion({"role": "assistant", "content": TEXT_ANTWORT}, "eos_token")
    return completion({"role": "assistant", "tool_calls": [
        {"id": str(i), "type": "function", "function": {"name": a["name"], "description": None, "arguments": a["args"]}}
        for i, a in enumerate(fall["erwartet"])]}, "eos_token")


def sglang(fall):
    return completion({"role": "assistant", "content": None if fall["erwartet"] else TEXT_ANTWORT,
                       "reasoning_content": None, "tool_calls": [
        {"id": f"call_{i}", "index": i, "type": "function", "function": {"name": a["name"], "arguments": a["args"]}}
        for i, a in enumerate(fall["erwartet"])] or None}, "tool_calls" if fall["erwartet"] else "stop")


def lm_studio(fall):
    return completion({"role": "assistant", "content": "" if fall["erwartet"] else TEXT_ANTWORT, "tool_calls": [
        {"id": "", "type": "function", "function": {"name": a["name"], "arguments": json.dumps(a["args"])}}
        for a in fall["erwartet"]]}, "tool_calls" if fall["erwartet"] else "stop")


def openai(fall):
    body = completion(dict(openai_nachricht(fall["erwartet"]), refusal=None, annotations=[]))
    return body


def als_text(form):
    """A shape in which the calls stand in content (the server's parser off)."""
    def antwort(fall):
        return completion({"role": "assistant", "content": form(fall["erwartet"]) if fall["erwartet"] else TEXT_ANTWORT})
    antwort.__name__ = form.__name__
    return antwort


def hermes(aufrufe):
    return "\n".join(f"<tool_call>\n{json.dumps(ordnung(i, a))}\n</tool_call>" for i, a in enumerate(aufrufe))


def ordnung(i, a):  # keys in either order
    return {"name": a["name"], "arguments": a["args"]} if i % 2 == 0 else {"arguments": a["args"], "name": a["name"]}


def qwen3(aufrufe):
    return "<think>\nThe user wants this. <tool_call>{\"name\": \"delete_contact\", \"arguments\": {}}</tool_call>?\n</think>\n\n" + hermes(aufrufe)


def mistral(aufrufe):
    return "[TOOL_CALLS] " + json.dumps([{"name": a["name"], "arguments": a["args"]} for a in aufrufe])


def llama3(aufrufe):
    return "<|python_tag|>" + "; ".join(json.dumps({"name": a["name"], "parameters": a["args"]}) for a in aufrufe)


def nackt(aufrufe):
    liste = [{"name": a["name"], "arguments": a["args"]} for a in aufrufe]
    return json.dumps(liste[0] if len(liste) == 1 else liste)


def zaun(aufrufe):
    return "```json\n" + nackt(aufrufe) + "\n```"


NATIV = [vllm, llama_cpp, ollama, tgi, sglang, lm_studio, openai]
GEMEINT = ("The figures grade the calls as the model wrote them; gelungen_nativ is what an agent on this server "
           "gets done.")
OBJEKT = (f"  protokoll argumente_objekt {SOLL_AUFRUFE}: calls whose arguments came as a JSON object, not as a string "
          "of JSON; an OpenAI-API client's json.loads(arguments) fails on each (llama.cpp #20198, SGLang, TGI 2.x "
          f"send them so). {GEMEINT}")
ABWEICHEND = {tgi: OBJEKT, sglang: OBJEKT, lm_studio: (
    f"  protokoll id_fehlt {SOLL_AUFRUFE}: calls without an id, or with an id another call of the same answer has; "
    "an agent cannot send their results back, since a tool message names its call by id (llama.cpp #11992, "
    f"LM Studio #830). {GEMEINT}")}
TEXTFORMEN = [hermes, qwen3, mistral, llama3, nackt, zaun]


@pytest.mark.parametrize("form", NATIV + [als_text(f) for f in TEXTFORMEN],
                         ids=[f.__name__ for f in NATIV] + [f.__name__ for f in TEXTFORMEN])
def test_jede_form_richtig_gelesen(cli, endpunkt, form):
    server = endpunkt(lambda fall, body, nummer: form(fall), None if form in NATIV else LM_STUDIO)  # the probe tells
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    assert "By stage: S1 100 %, S2 100 %, S3 100 %, S4 100 %, S5 100 %." in out.splitlines()
    diagnose = out.split("\n\nDiagnosis")[1].splitlines()
    if form in NATIV and form not in ABWEICHEND:
        assert diagnose == [": all clear (every output an answer, calls from tool_calls)."]
    elif form in NATIV:  # graded as meant, and named as the server's shape
        assert diagnose == [": what the server did, not the model", ABWEICHEND[form]]
    elif form.__name__ == "zaun":  # no parser reads a fence: the model's format, and no server flag named
        assert diagnose == [": the server did its part; the model did not", EIGEN_ZEILE.format(form="a ``` fence")]
    else:  # the probe came back as text again: the parser is off (and Qwen3's <think> left in: its reasoning's)
        assert diagnose == [": what the server did, not the model",
                            f"  aus_text       {SOLL_AUFRUFE}: calls were read from the answer text, not from "
                            'tool_calls (S1-1 asked again with tool_choice "required" at temperature 0 came back as '
                            f"text again); {AUS_TEXT}. The figures above measure that setting, not the model."] + [
            "  denken_im_text 28: outputs whose content holds the model's reasoning between its family's delimiters "
            "(<think>, Harmony's analysis channel, Gemma 4's thought channel, [THINK]); the server's reasoning parser "
            "is off: the model's reasoning setting. They were graded without it; an agent on this server receives "
            "the reasoning as content."] * (form.__name__ == "qwen3")
    # shown whenever text calls or arguments a client cannot json.loads change what an agent gets done
    if form not in NATIV or form in (tgi, sglang):
        assert "gelungen_nativ       33.3 %   (with every call from tool_calls: what an agent on this server gets " \
               "done)" in out.splitlines()
    else:
        assert not [z for z in out.splitlines() if z.startswith("gelungen_nativ")]


EIGEN_ZEILE = (f"  eigenes_format {SOLL_AUFRUFE}: calls were written in a format of the model's own (a ``` block, "
               "JSON in prose, or text beside other answers' tool_calls), which no tool-call parser turns into "
               "tool_calls: an agent on this server receives text, not calls. That is the model's output format, "
               "not a server setting: train or prompt it on its chat template's tool-call format. The figures "
               "grade these calls as calls; gelungen_nativ is what an agent gets done (it wrote {form}).")


@pytest.mark.parametrize("form, aus_text, eigenes_format, gelungen_nativ", [
    (zaun, 0, SOLL_AUFRUFE, 14 / 42),     # S4 and S5 hold still; every call is text no agent receives
    (hermes, SOLL_AUFRUFE, 0, 14 / 42),   # a parser reads the tags: the server's setting
    (nackt, SOLL_AUFRUFE, 0, 14 / 42),
])
def test_wer_den_textaufruf_schrieb(cli, endpunkt, form, aus_text, eigenes_format, gelungen_nativ):
    server = endpunkt(lambda fall, body, nummer: als_text(form)(fall), LM_STUDIO)  # a server where the probe tells
    k = json_lauf(cli, *messung(server.url))
    assert (k["diagnose"]["aus_text"], k["diagnose"]["eigenes_format"]) == (aus_text, eigenes_format)
    assert (k["auftraege_gelungen"], k["gelungen_nativ"]) == (42 / 42, gelungen_nativ)


def test_textaufrufe_neben_nativen_sind_das_format_des_modells(cli, endpunkt):
    # the parser is demonstrably on: a Hermes block beside tool_calls elsewhere is the model's own doing
    def antwort(fall, body, nummer):
        return als_text(hermes)(fall) if fall["id"] in ("S2-1", "S3-1") else richtig(fall, body, nummer)
    server = endpunkt(antwort)
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    schritte = len(BY_ID["S2-1"]["erwartet"]) + len(BY_ID["S3-1"]["erwartet"])
    assert out.split("\n\nDiagnosis")[1].splitlines()[:2] == [
        ": the server did its part; the model did not",
        EIGEN_ZEILE.replace(str(SOLL_AUFRUFE), str(schritte), 1).format(form="<tool_call>")]
    assert "gelungen_nativ       95.2 %   (with every call from tool_calls: what an agent on this server gets " \
           "done)" in out.splitlines()
    k = json_lauf(cli, "--bewerten", "m")
    assert (k["diagnose"]["aus_text"], k["diagnose"]["eigenes_format"], k["gelungen_nativ"]) == (0, schritte, 40 / 42)
    status, md, _ = cli("--bewerten", "m", "--markdown")
    assert "| gelungen_nativ | 95.2 % |" in md.splitlines()


def test_kaputte_aufrufe_zaehlen_als_aufruf_und_nicht_formkorrekt(cli, endpunkt):
    kaputt = '<tool_call>{"name": "delete_contact", "arguments": {"contact_id": </tool_call>'

    def antwort(fall, body, nummer):
        if fall["id"] in ("S2-3", "S4-1"):
            return completion({"role": "assistant", "content": kaputt})
        return richtig(fall, body, nummer)
    server = endpunkt(antwort)
    k = json_lauf(cli, *messung(server.url))
    assert k["formkorrekt"] == 27 / 28
    assert k["stillgehalten"] == 13 / 14
    assert k["auftraege_gelungen"] == 40 / 42
    assert k["schritte_je_auftrag"] == (SOLL_AUFRUFE - 1 + 2) / 42
    status, out, _ = cli("--bewerten", "m")
    # a family's call mark with no complete call is the server's parser not applied, or the model's slip: cannot
    # tell; in S4 any call attempt is a spare call, the model's: counted by form, the text shown
    assert status == 0
    assert out.split("\n\nDiagnosis")[1].split("\n\n")[0].splitlines() == [
        ": what the model did and what cannot be told",
        "  markiert       1: outputs whose content holds a model family's call marks with no complete call among them "
        "(cut, malformed, or a variant of the form messen does not read); the server's tool-call parser was not "
        "applied: set the server's tool-call parser for this model's template (its name and option depend on the "
        "server). Whose they are cannot be told: the parser would have read them, or the model wrote them wrongly.",
        "  unlesbar       1: calls whose arguments do not parse, by the form they were written in: <tool_call> 1; the "
        "failed list shows what was written. The model wrote them: train or prompt it on its template's call format."]
    assert f'      written:  <tool_call>: "{kaputt}"' in out.splitlines()
    assert k["unlesbar_geschrieben"] == [{"id": i, "lauf": 0, "zug": 1, "form": "<tool_call>", "text": kaputt}
                                         for i in ("S2-3", "S4-1")]


def test_der_zweite_aufruf_desselben_werkzeugs_fehlt(cli, endpunkt):
    # S3-3 deletes two contacts; the answer deletes one: the line names the missing call with its values
    erster, zweiter = BY_ID["S3-3"]["erwartet"]
    server = endpunkt(mit_fehlern({"S3-3": [erster]}))
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    zeilen_out = out.splitlines()
    i = zeilen_out.index(f"  S3-3  {BY_ID['S3-3']['frage']}")
    assert zeilen_out[i + 2:i + 4] == [
        f'      came:     delete_contact(contact_id="{erster["args"]["contact_id"]}")',
        f'      differs:  delete_contact(contact_id="{zweiter["args"]["contact_id"]}") not called']


def test_jede_figur_hat_ihr_feld():
    """Kennzahlen's fields are written out; every figure row of FIGUREN (the stages' own too) and every headline's
    interval has its field, so that a stage's figure added as a row cannot be forgotten there."""
    felder = set(messen.Kennzahlen._fields)
    assert {f.name for f in messen.FIGUREN} - felder == set()
    assert {f.ki for f in messen.FIGUREN if f.ki} - felder == set()
    assert {f.nativ for f in messen.FIGUREN if f.nativ} - felder == set()
    # and a comparison has a field for each later stage, whose cases are in its test or not
    assert {f"mit_{s.feld}" for s in messen.STUFEN_TABELLE if s.feld} - set(messen.Vergleich._fields) == set()


def test_jede_stufe_mit_nebenfeld_prueft_es():
    """A stage whose cases give something after the first step checks that field in its own row (neben_pruefe):
    a stage added with a field and no check would let a wrong-typed one pass the case check."""
    ohne = [s.name for s in messen.STUFEN_TABELLE if s.neben and s.neben_pruefe is None]
    assert ohne == []
    assert messen.pruefe_danach({"stufe": "S5", "nachtrag": 5, "danach": [], "erwartet": []}, messen.STANDARD) == \
        "'nachtrag' must be a non-empty string (the user's reply)"


@pytest.mark.parametrize("stufen, schuld", [
    (None, "this installation is broken"),
    ({"S2": 0.5, "S6": 0.5}, "this installation is broken"),  # S6's row says how the endpoint answers it
    ({"S2": 1.0, "simple_python": 0.5}, "simple_python is asked another way than the chapter's, and the row does not "
     "say how the self-test's endpoint answers it (Weise.antworten): the stage's row is at fault, not this "
     "installation"),
])
def test_der_selbsttest_beschuldigt_die_installation_nur_wo_sie_schuld_ist(stufen, schuld):
    faelle = [messen.als_fall(f) for f in FAELLE]
    assert messen.selbsttest_schuld("faelle.jsonl", faelle, stufen) == schuld


def test_ein_lauf_sagt_wo_er_was_gespeichert_hat(cli, endpunkt):
    """A complete run's last line says where it saved what; shown again, a run asks nothing and says nothing."""
    server = endpunkt()
    status, out, err = cli(*messung(server.url, "--tag", "t"))
    pfad = cli.ausgabe / "t.jsonl"
    assert (status, err.splitlines()[-1]) == (0, f"messen: saved: {pfad} (42 outputs)")
    status, out, err = cli(*messung(server.url, "--tag", "t"))
    assert status == 0 and "saved:" not in err
    status, out, err = cli("--selbsttest")
    assert status == 0 and "saved:" not in err  # its folder is gone when it ends
