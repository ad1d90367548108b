"""Properties of everything that reads what a server sends (hypothesis).

Whatever the message, the reader and the grader return, never raise; a saved
line is ASCII JSON that grades back to the same result; the capped body of a
too-deep JSON text equals the capped value.
"""

import copy
import json

import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import messen
from conftest import FAELLE

EINSTELLUNG = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# text from the pieces the call reader looks for, and any Unicode (lone surrogates too)
STUECKE = ["<think>", "</think>", "<tool_call>", "</tool_call>", "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]",
           "<|python_tag|>", "```json", "```", "{", "}", "[", "]", '"name"', '"arguments"', '"parameters"',
           ":", ",", ";", " ", "\n", '"', "\\", "<|eot_id|>", "get_contact", '{"contact_id": "x"}', "\ud83d"]
TEXT = st.lists(st.one_of(st.sampled_from(STUECKE), st.text(max_size=5)), max_size=40).map("".join)
JSON_WERT = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda kinder: st.lists(kinder, max_size=4) | st.dictionaries(TEXT, kinder, max_size=4),
    max_leaves=25)


def feld(name, werte):
    return st.one_of(st.just({}), werte.map(lambda w: {name: w}))


AUFRUF = st.fixed_dictionaries({}, optional={
    "function": st.fixed_dictionaries({}, optional={"name": st.one_of(TEXT, JSON_WERT),
                                                     "arguments": st.one_of(TEXT, JSON_WERT)}),
    "id": JSON_WERT})
NACHRICHT = st.builds(
    lambda *teile: {k: v for t in teile for k, v in t.items()},
    feld("content", st.one_of(TEXT, JSON_WERT)),
    feld("tool_calls", st.one_of(st.lists(st.one_of(AUFRUF, JSON_WERT), max_size=4), JSON_WERT)),
    feld("function_call", st.one_of(AUFRUF.map(lambda a: a.get("function", {})), JSON_WERT)),
    feld("reasoning_content", st.one_of(TEXT, JSON_WERT)),
    feld("reasoning", TEXT))
FINISH = st.sampled_from([None, "stop", "length", "tool_calls", "eos_token"])


def pruefe_bewertung(fall, b):
    assert isinstance(b["aufrufe"], list)
    for a in b["aufrufe"]:
        assert set(a) == {"name", "args"}
        assert a["name"] is None or isinstance(a["name"], str)
        assert a["args"] is None or isinstance(a["args"], dict)
    assert 0 <= b["treffer"] <= b["soll"] == len(fall["erwartet"])
    assert 0 <= b["offen"] <= len(b["aufrufe"])
    assert b["mangel"] in (None, "leer", "abgeschnitten", "im_denken")
    assert b["mangel"] is None or not messen.gelungen(b)


@EINSTELLUNG
@given(fall=st.sampled_from(FAELLE), nachricht=NACHRICHT, finish=FINISH)
def test_jede_nachricht_wird_bewertet(fall, nachricht, finish):
    b = messen.bewerte_ausgabe(fall, nachricht, finish)
    pruefe_bewertung(fall, b)
    # the saved line is ASCII JSON and grades back to the same result
    zeile = messen.als_zeile({"nachricht": nachricht, "aufrufe": b["aufrufe"]})
    gelesen = json.loads(zeile.decode("ascii"))
    assert messen.bewerte_ausgabe(fall, gelesen["nachricht"], finish) == b
    # and the failed-case list and the metrics take it
    a = dict(b, id=fall["id"], stufe=fall["stufe"], lauf=0, nachricht=nachricht, usage={}, verworfen=0,
             latenz_s=0.1, ende=1.0, sitzung=0)
    messen.fehlschlaege(FAELLE, [a])
    messen.kennzahlen(FAELLE, [a])


@EINSTELLUNG
@given(text=TEXT)
def test_jeder_text_wird_gelesen(text):
    aufrufe, form = messen.text_aufrufe(text)
    assert form in ("parser", "eigen")
    for a in aufrufe:
        assert a["name"] is None or isinstance(a["name"], str)
        assert a["args"] is None or isinstance(a["args"], dict)


@EINSTELLUNG
@given(wert=JSON_WERT, grenze=st.integers(1, 6))
def test_gekappter_text_gleicht_dem_gekappten_wert(wert, grenze):
    # both keep `grenze` levels of containers, the outermost counted as 1
    assert json.loads(messen.gekappt(json.dumps(wert), grenze)) == messen.kappe(copy.deepcopy(wert), grenze)


def antwort_von(koerper, status=200):
    r = requests.Response()
    r.status_code, r._content, r.encoding = status, koerper, None
    return r


@EINSTELLUNG
@given(body=st.one_of(JSON_WERT.map(lambda w: json.dumps(w).encode()),
                      st.fixed_dictionaries({"choices": st.lists(JSON_WERT, max_size=3), "usage": JSON_WERT})
                      .map(lambda w: json.dumps(w).encode()),
                      st.binary(max_size=200)))
def test_jeder_koerper_wird_gelesen(body):
    antwort = messen.chat_antwort(antwort_von(body), 0.1)
    if antwort is not None:
        assert isinstance(antwort.nachricht, dict) and isinstance(antwort.usage, dict)
        assert antwort.finish is None or isinstance(antwort.finish, str)
        pruefe_bewertung(FAELLE[0], messen.bewerte_ausgabe(FAELLE[0], antwort.nachricht, antwort.finish))
    messen.servermeldung(body.decode("utf-8", "replace"), 400)
