"""Properties of everything that reads what a server sends (hypothesis).

Whatever the message, the reader and the grader return, never raise; a saved
line is ASCII JSON that grades back to the same result; the capped body of a
too-deep JSON text equals the capped value.
"""

import collections
import copy
import json
import re

import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import messen
from conftest import FAELLE as ROHE_FAELLE

FAELLE = [messen.als_fall(f) for f in ROHE_FAELLE]  # the chapter's 42, as a run holds them

# derandomize: the same examples every run, so the counts of what they reached are facts, not luck
EINSTELLUNG = settings(max_examples=100, deadline=None, derandomize=True, database=None,
                       suppress_health_check=[HealthCheck.too_slow])

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
    assert isinstance(b.aufrufe, tuple)
    for a in b.aufrufe:
        assert set(a) in ({"name", "args", "quelle"}, {"name", "args", "quelle", "geschrieben"})
        assert ("geschrieben" in a) == (a["args"] is None) and len(a.get("geschrieben", "")) <= 80 + 30
        assert a["name"] is None or isinstance(a["name"], str)
        assert a["args"] is None or isinstance(a["args"], dict)
    assert 0 <= b.treffer <= b.soll == len(fall.art.weise.soll(fall))
    assert 0 <= b.offen <= len(b.aufrufe)
    assert b.mangel in (None, "leer", "abgeschnitten", "im_denken", "angekuendigt")
    assert b.mangel is None or not messen.gelungen(b)


def gespeichert(fall, nachricht, usage, finish):
    """An output as a run saves it: one turn (an S7 job's one step)."""
    return dict(id=fall.id, stufe=fall.stufe, lauf=0, ende=1.0, sitzung=0, zuege=[dict(
        zweck="schritt" if fall.stufe == "S7" else "frage", nachricht=nachricht, usage=usage, verworfen=0,
        latenz_s=0.1, finish_reason=finish, **({"ergebnisse": []} if fall.stufe == "S7" else {}))])


@EINSTELLUNG
@given(fall=st.sampled_from(FAELLE), nachricht=NACHRICHT, finish=FINISH)
def test_jede_nachricht_wird_bewertet(fall, nachricht, finish):
    b = messen.bewerte_ausgabe(fall, nachricht, finish)
    pruefe_bewertung(fall, b)
    # the saved line is ASCII JSON and grades back to the same result
    zeile = messen.als_zeile({"nachricht": nachricht})  # a results line holds what came, no grade
    gelesen = json.loads(zeile.decode("ascii"))
    assert messen.bewerte_ausgabe(fall, gelesen["nachricht"], finish) == b
    # and the failed-case list and the metrics take it
    a = messen.bewerte_gespeichert(fall, gespeichert(fall, nachricht, {}, finish))
    messen.fehllisten(FAELLE, [a])
    messen.kennzahlen(FAELLE, [a])


# A property that must reach its checks counts what its examples reached in a counter of its own
# (erreicht, passed in by its test), and its test asserts the counts: no test leans on another's.

@EINSTELLUNG
@given(fall=st.sampled_from([f for f in FAELLE if f.erwartet]), data=st.data())
def erwartete_aufrufe_treffen(fall, data, erreicht):
    """The expected calls, in any order, any argument order, padded values, native or as text: a hit."""
    aufrufe = data.draw(st.permutations(fall.erwartet))
    aufrufe = [{"name": a["name"], "args": dict(data.draw(st.permutations(list(a["args"].items()))))}
               for a in aufrufe]
    if data.draw(st.booleans()):
        aufrufe = [{"name": a["name"], "args": {k: f" {v}\n" for k, v in a["args"].items()}} for a in aufrufe]
    form = data.draw(st.sampled_from(sorted(FORMEN)))
    b = messen.bewerte_ausgabe(fall, FORMEN[form](aufrufe), "stop")
    assert messen.gelungen(b) and b.treffer == len(fall.erwartet), (form, b)
    assert b.form == ("nativ" if form == "nativ" else "eigen" if form in ("zaun", "prosa") else "parser")
    erreicht["treffer"] += 1
    # one value changed: no longer a hit
    falsch = copy.deepcopy(aufrufe)
    mit_args = [a for a in falsch if a["args"]]
    if mit_args:
        a = data.draw(st.sampled_from(mit_args))
        a["args"][data.draw(st.sampled_from(sorted(a["args"])))] += "x"
        assert not messen.gelungen(messen.bewerte_ausgabe(fall, FORMEN[form](falsch), "stop"))
        erreicht["verfehlt"] += 1


def test_erwartete_aufrufe_treffen_in_jeder_form():
    erreicht = collections.Counter()
    erwartete_aufrufe_treffen(erreicht=erreicht)
    assert erreicht["treffer"] >= 50 and erreicht["verfehlt"] >= 30, erreicht


def _json(aufrufe, schluessel="arguments"):
    return [{"name": a["name"], schluessel: a["args"]} for a in aufrufe]


FORMEN = {  # form -> the calls as a message of that form
    "nativ": lambda aufrufe: {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{i}", "type": "function", "function": {"name": a["name"], "arguments": json.dumps(a["args"])}}
        for i, a in enumerate(aufrufe)]},
    "hermes": lambda aufrufe: {"content": "".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in _json(aufrufe))},
    "mistral": lambda aufrufe: {"content": "[TOOL_CALLS] " + json.dumps(_json(aufrufe))},
    "llama": lambda aufrufe: {"content": "<|python_tag|>" + "; ".join(json.dumps(c) for c in _json(aufrufe,
                                                                                                  "parameters"))},
    "nackt": lambda aufrufe: {"content": json.dumps(_json(aufrufe))},
    "zaun": lambda aufrufe: {"content": "```json\n" + json.dumps(_json(aufrufe)) + "\n```"},
    "prosa": lambda aufrufe: {"content": "I will do that now: " + json.dumps(_json(aufrufe)) + " Done."},
}


@EINSTELLUNG
@given(text=TEXT)
def test_jeder_text_wird_gelesen(text):
    aufrufe, form = messen.text_aufrufe(text)
    assert form in ("parser", "eigen")
    for a in aufrufe:
        assert a["name"] is None or isinstance(a["name"], str)
        assert a["args"] is None or isinstance(a["args"], dict)


NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,7}", fullmatch=True)
# subtle: a value holding ``` would end a fence early; no reader of a fence can know better
WERT = st.one_of(st.text(st.characters(codec="utf-8", exclude_characters="`"), max_size=6), st.integers(),
                 st.booleans())
ARGS = st.dictionaries(NAME, WERT, min_size=1, max_size=3)


@EINSTELLUNG
@given(aufrufe=st.lists(st.fixed_dictionaries({"name": NAME, "args": ARGS}), min_size=1, max_size=3),
       form=st.sampled_from(["hermes", "mistral", "llama", "nackt", "zaun", "prosa"]))
def test_textaufrufe_mit_argumenten_werden_gelesen(aufrufe, form):
    gelesen, _ = messen.lies_aufrufe(FORMEN[form](aufrufe))
    assert gelesen == [dict(c, quelle=QUELLE[form]) for c in aufrufe]  # every example has arguments: each is read


QUELLE = {"nativ": "tool_calls", "hermes": "<tool_call>", "mistral": "[TOOL_CALLS]", "llama": "<|python_tag|>",
          "nackt": "bare JSON", "zaun": "a ``` fence", "prosa": "JSON in prose"}  # the form each is written in


@EINSTELLUNG
@given(wert=JSON_WERT, grenze=st.integers(1, 6))
def test_gekappter_text_gleicht_dem_gekappten_wert(wert, grenze):
    # both keep `grenze` levels of containers, the outermost counted as 1
    # (kappe also spells NaN and Infinity as strings, so strict JSON is saved: both sides pass it)
    assert messen.kappe(json.loads(messen.gekappt(json.dumps(wert), grenze))) == messen.kappe(copy.deepcopy(wert),
                                                                                            grenze)


def antwort_von(koerper, status=200):
    r = requests.Response()
    r.status_code, r._content, r.encoding = status, koerper, None
    return r


# mostly chat completions with hostile contents (a valid envelope), some anything at all
WAHL = st.fixed_dictionaries({"index": st.just(0), "message": NACHRICHT},
                             optional={"finish_reason": st.one_of(FINISH, JSON_WERT), "logprobs": JSON_WERT})
HUELLE = st.fixed_dictionaries({"choices": st.lists(st.one_of(WAHL, JSON_WERT), min_size=1, max_size=3)
                                .filter(lambda c: isinstance(c[0], dict) and "message" in c[0])},
                               optional={"usage": st.one_of(JSON_WERT, st.dictionaries(
                                   st.sampled_from(["prompt_tokens", "completion_tokens"]),
                                   st.one_of(st.integers(), JSON_WERT))), "id": JSON_WERT})
# subtle: hypothesis adapts what it draws to what the code under test does, so the share of envelopes
# drawn moves with the code; eight branches of ten keep it above the 60 % the last test asks for
KOERPER = st.one_of(*[HUELLE.map(lambda w: json.dumps(w).encode()) for _ in range(8)],  # eight, not one deduplicated
                    st.builds(lambda art, rest, huelle: json.dumps(huelle(
        f"The model produced output that does not match the expected {art} format{rest}")).encode(),
        st.sampled_from(["peg-native", "peg-gemma4", "", "peg native"]), st.sampled_from(["", ".", " (pos 3)"]),
        st.sampled_from([lambda m: {"error": {"code": 500, "message": m}}, lambda m: {"message": m}])),
    JSON_WERT.map(lambda w: json.dumps(w).encode()), st.binary(max_size=200))


@EINSTELLUNG
@given(body=KOERPER, fall=st.sampled_from(FAELLE))
def koerper_gelesen(body, fall, erreicht):
    antwort = messen.chat_antwort(antwort_von(body), 0.1)
    erreicht["koerper"] += 1
    if antwort is not None:
        erreicht["antwort"] += 1
        assert isinstance(antwort.nachricht, dict) and isinstance(antwort.usage, dict)
        assert antwort.finish is None or isinstance(antwort.finish, str)
        b = messen.bewerte_ausgabe(fall, antwort.nachricht, antwort.finish)
        pruefe_bewertung(fall, b)
        a = messen.bewerte_gespeichert(fall, gespeichert(fall, antwort.nachricht, antwort.usage, antwort.finish))
        assert messen.kennzahlen(FAELLE, [a]).ausgaben == 1
    messen.servermeldung(body.decode("utf-8", "replace"), 400)


def test_jeder_koerper_wird_gelesen():
    erreicht = collections.Counter()
    koerper_gelesen(erreicht=erreicht)
    assert erreicht["antwort"] >= 0.6 * erreicht["koerper"], erreicht  # most examples reach the grader


def passt_wie_gedruckt(ist, soll):
    """passt exactly as the chapter prints it: the reference messen's one walk must agree with."""
    if ist["name"] != soll["name"] or ist["args"] is None:
        return False
    # Mandatory: every expected argument is there with the expected value.
    for k, v in soll["args"].items():
        if str(ist["args"].get(k, "")).strip() != str(v):
            return False
    # No extra, unexpected argument (invented filters count as wrong).
    return set(ist["args"]) == set(soll["args"])


KLEIN_NAME = st.sampled_from(["a", "b"])
KLEIN_WERT = st.one_of(st.sampled_from(["", "x", " x", "x ", "1.5", "15"]), st.integers(0, 2))
KLEIN_ARGS = st.dictionaries(KLEIN_NAME, KLEIN_WERT, max_size=2)
KLEIN_RUF = st.fixed_dictionaries({"name": st.sampled_from(["f", "g"]), "args": st.one_of(st.none(), KLEIN_ARGS)})
SOLL_RUF = st.fixed_dictionaries({"name": st.sampled_from(["f", "g"]),
                                  "args": st.dictionaries(KLEIN_NAME, st.sampled_from(["", "x", "1.5", "15"]),
                                                          max_size=2)})


@EINSTELLUNG
@given(ist=KLEIN_RUF, soll=SOLL_RUF)
def test_passt_entscheidet_wie_das_kapitel_und_sagt_warum(ist, soll):
    """messen's passt is the chapter's; the walk that says why (warum_nicht, trifft) decides as it does."""
    gruende = list(messen.warum_nicht(ist, soll))
    assert messen.passt(ist, soll) == passt_wie_gedruckt(ist, soll) == messen.trifft(ist, soll) == (gruende == [])


@EINSTELLUNG
@given(ist=st.lists(KLEIN_RUF, max_size=4), soll=st.lists(SOLL_RUF, max_size=3))
def test_bewerte_wie_gedruckt_und_der_weg_daneben(ist, soll):
    """The chapter's bewerte and the walk beside it (zuordnung) count the same hits and the same calls left over,
    wherever a case says no more than the chapter's; bewertet takes the chapter's there."""
    treffer, offen, fehlend = messen.zuordnung(ist, soll)
    assert messen.bewerte(ist, soll) == messen.bewertet(ist, soll) == (treffer, len(offen))
    assert len(fehlend) == len(soll) - treffer


@EINSTELLUNG
@given(ist=st.lists(KLEIN_RUF, max_size=4), soll=st.lists(SOLL_RUF, max_size=3), still=st.booleans())
def test_befunde_nur_wo_bewerte_verfehlt(ist, soll, still):
    """Befunde stand exactly where bewerte finds a missed step or a spare call: one per missed step, one per
    call left over; a call named beside a step it stood in for (falsches_werkzeug) is counted no more."""
    treffer, offen = messen.bewerte(ist, soll)
    gefunden = messen.befunde(ist, soll, still)
    assert (gefunden == []) == (treffer == len(soll) and offen == 0)
    gepaart = sum(b.text.startswith(tuple(f"{s['name']}: " for s in soll)) for b in gefunden)
    assert len(gefunden) == (len(soll) - treffer) + offen - gepaart
    assert sum(b.arten == () for b in gefunden) == sum("falsches_werkzeug" in b.arten for b in gefunden)


ABLEHNUNG = st.one_of(  # llama.cpp's refusal and its near misses, in both shapes servers send errors
    st.builds(lambda pos, text, huelle: json.dumps(huelle(f"Failed to parse input at pos {pos}: {text}")).encode(),
              st.integers(0, 10 ** 6), TEXT, st.sampled_from([lambda m: {"error": {"code": 500, "message": m}},
                                                               lambda m: {"message": m}])),
    st.builds(lambda art, rest, huelle: json.dumps(huelle(
        f"The model produced output that does not match the expected {art} format{rest}")).encode(),
        st.sampled_from(["peg-native", "peg-gemma4", "", "peg native"]), st.sampled_from(["", ".", " (pos 3)"]),
        st.sampled_from([lambda m: {"error": {"code": 500, "message": m}}, lambda m: {"message": m}])),
    JSON_WERT.map(lambda w: json.dumps(w).encode()), st.binary(max_size=200))


@EINSTELLUNG
@given(body=ABLEHNUNG, status=st.sampled_from([500, 400, 503]))
def test_eine_ablehnung_des_parsers_wird_gelesen_oder_ist_keine(body, status):
    """Whatever a 4xx/5xx body holds: a refusal of the parser (500 only) is the text it quotes, anything else none."""
    antwort = messen.abgelehnte_antwort(antwort_von(body, status), 0.1)
    try:
        daten = json.loads(body)
    except ValueError:
        daten = None
    fehler = daten.get("error") if isinstance(daten, dict) and isinstance(daten.get("error"), dict) else daten
    meldung = fehler.get("message") if isinstance(fehler, dict) else None
    mit_text = isinstance(meldung, str) and re.match(r"Failed to parse input at pos \d+: ", meldung)
    ohne_text = isinstance(meldung, str) and re.match(
        r"The model produced output that does not match the expected [\w-]+ format", meldung)  # llama.cpp #26381
    assert (antwort is not None) == (status == 500 and bool(mit_text or ohne_text))
    if antwort is not None:
        inhalt = meldung.split(": ", 1)[1] if mit_text else None
        assert antwort.nachricht == {"role": "assistant", "content": inhalt}
        assert antwort.abgelehnt == messen.kurz(meldung, 300) and antwort.finish is None


@EINSTELLUNG
@given(st.integers(min_value=1, max_value=10**6), st.none() | st.text(max_size=40))
def test_eine_neue_id_ist_die_uuid_der_frueheren_versionen(nummer, salz):
    """A created contact's id, spelled out without importing uuid, is the version-4 UUID earlier versions drew with
    it: a saved S7 run regrades to the same ids."""
    import hashlib
    import uuid
    quelle = f"kontakt/{nummer}" if salz is None else f"kontakt/{salz}/{nummer}"
    assert messen.neue_id(nummer, salz) == str(uuid.UUID(hashlib.sha256(quelle.encode()).hexdigest()[:32], version=4))


@EINSTELLUNG
@given(st.booleans())
def test_ein_antwort_zu_bewerten_laesst_den_zyklensammler_wie_er_war(lief):
    """Grading pauses Python's cycle collector for one answer and leaves it as it found it: running, or paused by
    whoever paused it."""
    import gc
    fall = next(f for f in FAELLE if f.id == "S2-7")
    nachricht = {"role": "assistant", "content": '{"name": "x", "arguments": {}} ' * 50}
    (gc.enable if lief else gc.disable)()
    try:
        b = messen.bewerte_ausgabe(fall, nachricht, "stop")
        assert (len(b.aufrufe), gc.isenabled()) == (50, lief)
    finally:
        gc.enable()


@EINSTELLUNG
@given(model=JSON_WERT, fingerprint=JSON_WERT, bisher=st.one_of(st.none(), st.just({"modell": "vorher"})))
def test_was_eine_antwort_ueber_sich_sagt_wird_gelesen(model, fingerprint, bisher):
    """A completion's model and system_fingerprint, whatever a server put there: a string kept (cut at 200), the
    rest left out; in a stream the first chunk that names one counts."""
    wer = messen.wer_antwortete({"model": model, "system_fingerprint": fingerprint}, bisher)
    soll = dict(bisher or {})
    for name, x in (("modell", model), ("build", fingerprint)):
        if name not in soll and isinstance(x, str) and x.strip():
            soll[name] = x[:200]
    assert wer == (soll or None)


@EINSTELLUNG
@given(nachricht=NACHRICHT, ids=st.lists(TEXT, min_size=4, max_size=4))
def test_ein_abdruck_sieht_von_den_ids_ab(nachricht, ids):
    """Two messages alike but for their calls' ids leave one digest; the ids are what differs."""
    def mit_ids(n, neue):
        if not isinstance(n.get("tool_calls"), list):
            return n
        return dict(n, tool_calls=[dict(c, id=i) if isinstance(c, dict) else c
                                   for c, i in zip(n["tool_calls"], neue)])
    x, y = messen.abdruck(mit_ids(nachricht, ids)), messen.abdruck(mit_ids(nachricht, ids[::-1]))
    assert (x[0], x[2]) == (y[0], y[2]) and isinstance(x[0], int) and x[2] >= 0
