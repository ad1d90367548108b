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
