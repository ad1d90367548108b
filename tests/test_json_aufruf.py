"""One untagged JSON call with text after it is read one way wherever it stands: the call-shaped values the answer
opens with are its calls, whatever follows them (prose, a result the model wrote back, another call after that, a
cut), as docs/messen.md says. Over loopback HTTP, in a chapter case."""

import json

import pytest

from conftest import BY_ID, completion, messung, richtig, vorbereitet

FALL = "S2-4"
RUF = json.dumps({"name": BY_ID[FALL]["erwartet"][0]["name"], "arguments": BY_ID[FALL]["erwartet"][0]["args"]})


@pytest.mark.parametrize("danach, finish", [
    (" I have looked the contact up for you.", "stop"),  # the call, then prose
    ('\n{"result": {"contact_id": "11d3e7b0"}}', "stop"),  # then its result, as a model writing back its transcript
    ('\n{"result": 3}\n{"name": "list_calendars", "arguments": {}}', "stop"),  # a result, then a call: not read
    ('\n{"name": "list_calen', "length"),  # cut after a complete call: the complete one is the answer
], ids=["prosa", "ergebnis", "ergebnis_und_ruf", "abgeschnitten"])
def test_ein_json_aufruf_mit_text_danach(cli, endpunkt, danach, finish):
    def antwort(fall, body, nummer):
        if fall["id"] == FALL:
            return completion({"role": "assistant", "content": RUF + danach}, finish)
        return richtig(fall, body, nummer)
    vorbereitet(cli, *messung(endpunkt(antwort).url))
    k = json.loads(cli("--bewerten", "m", "--json")[1])
    assert (k["auftraege_gelungen"], k["gelungen_nativ"], k["formkorrekt"]) == (42 / 42, 41 / 42, 28 / 28)
    assert k["diagnose"]["unlesbar"] == {}  # no malformed call where a whole one stood


def test_ein_angefangener_json_aufruf_bleibt_ein_versuch(cli, endpunkt):
    """Text that only starts like a call and breaks off is one malformed attempt, never an answer in words."""
    def antwort(fall, body, nummer):
        if fall["id"] == FALL:
            return completion({"role": "assistant", "content": '{"name": "get_contact", "arguments": {"contact_'})
        return richtig(fall, body, nummer)
    vorbereitet(cli, *messung(endpunkt(antwort).url))
    k = json.loads(cli("--bewerten", "m", "--json")[1])
    assert (k["auftraege_gelungen"], k["formkorrekt"]) == (41 / 42, 27 / 28)


def im_zaun(fall, body, nummer):
    """The reference's steps, each written as a ```json block of its calls: right as meant, no tool_calls."""
    antwort = richtig(fall, body, nummer)
    rufe = antwort["choices"][0]["message"].get("tool_calls")
    if not rufe:
        return antwort
    return completion({"role": "assistant", "content": "```json\n" + json.dumps([
        {"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])} for c in rufe]) + "\n```"})


def test_die_schritte_eines_jobs_zaehlen_in_der_diagnose(cli, endpunkt):
    """An S7-only run whose every step came as text: the steps' forms count as a chapter answer's do, never "all
    clear ... calls from tool_calls"."""
    from conftest import GANZ_FAELLE
    vorbereitet(cli, *messung(endpunkt(im_zaun).url, "--ganz", "--stufen", "S7"))
    status, out, err = cli("--bewerten", "m")
    rufe = sum(len(s) for f in GANZ_FAELLE for s in f["loesung"])
    assert (status, [z for z in out.splitlines() if z.startswith("Diagnosis")]) == (
        0, ["Diagnosis: the server did its part; the model did not"])
    assert f"  eigenes_format {rufe}: calls were written in a format of the model's own" in "\n".join(out.splitlines())
    k = json.loads(cli("--bewerten", "m", "--json")[1])
    assert (k["erledigt"], k["erledigt_nativ"], k["diagnose"]["eigenes_format"]) == (26 / 26, 0 / 26, rufe)
