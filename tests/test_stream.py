"""--stream over loopback HTTP: the stream assembled as the OpenAI spec says, graded like any
answer, and every way a stream breaks counted in diagnose.stream_defekt."""

import json
import math
import time

from hypothesis import given, settings
from hypothesis import strategies as st

import messen
from conftest import BY_ID, completion, gestreamt, messung, openai_nachricht, richtig, vorbereitet, zeilen

ALLE_100 = "By stage: S1 100 %, S2 100 %, S3 100 %, S4 100 %, S5 100 %."


def json_lauf(cli, *argv):
    status, out, err = cli(*argv, "--json")
    assert status == 0, err
    return json.loads(out)


def sse(chunks, fertig=True):
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + ("data: [DONE]\n\n" if fertig else "")


def strom_von(chunks, fertig=True):
    """An answer function that streams these chunks for every case expecting calls (right elsewhere)."""
    def antwort(fall, body, nummer):
        if not body.get("stream") or not fall["erwartet"]:
            return richtig(fall, body, nummer)
        return 200, sse(chunks(fall), fertig), {"Content-Type": "text/event-stream"}
    return antwort


def delta(d, finish=None):
    return {"choices": [{"index": 0, "delta": d, "finish_reason": finish}]}


def ruf_deltas(fall, ohne_index=False, verliert=False):
    """Each expected call as a stream sends it; verliert: the last argument fragment is lost."""
    deltas = []
    for i, s in enumerate(fall["erwartet"]):
        args = json.dumps(s["args"])
        kopf = {"index": i, "id": f"c{i}", "type": "function", "function": {"name": s["name"]}}
        weiter = {"index": i, "function": {"arguments": args[:5]}}
        rest = {"index": i, "function": {"arguments": args[5:]}}
        if ohne_index:
            kopf, weiter, rest = ({k: v for k, v in d.items() if k != "index"} for d in (kopf, weiter, rest))
        deltas += [delta({"tool_calls": [kopf]}), delta({"tool_calls": [weiter]})]
        deltas += [] if verliert else [delta({"tool_calls": [rest]})]
    return deltas + [delta({}, "tool_calls"), {"choices": [], "usage": {"prompt_tokens": 1500, "completion_tokens": 9}}]


# ---------------------------------------------------------------------------
# A healthy stream scores as without --stream
# ---------------------------------------------------------------------------

def test_ein_gesunder_strom_wie_ohne(cli, endpunkt, tmp_path):
    server = endpunkt()
    status, out, err = cli(*messung(server.url, "--tag", "s", "--stream"))
    assert status == 0, err
    assert ALLE_100 in out.splitlines() and "tag s, streamed: 42 cases" in out.splitlines()[0]
    assert all(b["stream"] is True and b["stream_options"] == {"include_usage": True} for _, b in server.anfragen)
    gespeichert = {a["id"]: a for a in zeilen(tmp_path / "ergebnisse" / "s.jsonl")[1:]}
    s32 = gespeichert["S3-2"]
    stuecke = [math.ceil(len(json.dumps(c["args"])) / 5) for c in BY_ID["S3-2"]["erwartet"]]
    assert s32["strom"] == {"chunks": 1 + sum(1 + n for n in stuecke) + 2, "defekte": []}  # role, calls, end
    assert [c["function"]["arguments"] for c in s32["nachricht"]["tool_calls"]] == \
        [json.dumps(c["args"]) for c in BY_ID["S3-2"]["erwartet"]]
    assert s32["usage"]["prompt_tokens"] > 300 and s32["finish_reason"] == "tool_calls"
    assert gespeichert["S4-2"]["nachricht"]["content"] == "Which contact do you mean? Please give me its contact_id."
    k = json_lauf(cli, "--bewerten", "s")  # regraded from the assembled messages
    assert (k["auftraege_gelungen"], k["stream"], k["diagnose"]["stream_defekt"]) == (42 / 42, True, 0)
    plain = json_lauf(cli, *messung(endpunkt().url, "--tag", "p"))
    assert {m: plain[m] for m in messen.METRIKEN} == {m: k[m] for m in messen.METRIKEN}


# ---------------------------------------------------------------------------
# A broken stream: counted, with the plain answer beside it
# ---------------------------------------------------------------------------

def test_ein_verlorenes_fragment_je_aufruf(cli, endpunkt, tmp_path):
    server = endpunkt(strom_von(lambda fall: ruf_deltas(fall, verliert=True)))
    status, out, err = cli(*messung(server.url, "--tag", "t", "--stream"))
    assert status == 0, err
    k = json_lauf(cli, "--bewerten", "t")
    # S1-8 and S2-1 call list_calendars with {}: five characters, nothing after the first fragment to lose
    mit_aufruf = 8 + 12 + 8 - 2
    assert (k["diagnose"]["stream_defekt"], k["auftraege_gelungen"]) == (mit_aufruf, (14 + 2) / 42)
    assert server.zahl() == 42 + mit_aufruf  # one plain request at temperature 0 per broken output
    ohne = [b for _, b in server.anfragen if not b.get("stream")]
    assert all(b["temperature"] == 0.0 and "stream_options" not in b for b in ohne)
    s11 = next(a for a in zeilen(tmp_path / "ergebnisse" / "t.jsonl")[1:] if a["id"] == "S1-1")
    assert s11["strom"]["defekte"] == []
    assert s11["strom"]["ohne_strom"]["nachricht"]["tool_calls"][0]["function"]["arguments"] == \
        json.dumps(BY_ID["S1-1"]["erwartet"][0]["args"])
    assert f"  stream_defekt  {mit_aufruf}: outputs whose stream broke the protocol" in out


def test_jeder_bruch_des_protokolls(cli, endpunkt):
    faelle = {
        "ohne index": lambda fall: ruf_deltas(fall, ohne_index=True),
        "name wechselt": lambda fall: [delta({"tool_calls": [{"index": 0, "function": {"name": "a"}}]}),
                                       delta({"tool_calls": [{"index": 0, "function": {"name": "b"}}]}),
                                       delta({}, "tool_calls")],
        "nach dem ende": lambda fall: [delta({}, "stop"), delta({"content": "more"})],
    }
    for name, chunks in faelle.items():
        k = json_lauf(cli, *messung(endpunkt(strom_von(chunks)).url, "--tag", name.replace(" ", "-"), "--stream"))
        assert k["diagnose"]["stream_defekt"] == 28, name
    k = json_lauf(cli, *messung(endpunkt(strom_von(ruf_deltas, fertig=False)).url, "--tag", "ohne-done", "--stream"))
    assert (k["diagnose"]["stream_defekt"], k["auftraege_gelungen"]) == (28, 42 / 42)  # the calls themselves came
    plain = endpunkt(lambda fall, body, nummer: (200, json.dumps(completion(openai_nachricht(fall["erwartet"]))),
                                                 {}))
    k = json_lauf(cli, *messung(plain.url, "--tag", "plain", "--stream"))
    assert (k["diagnose"]["stream_defekt"], k["auftraege_gelungen"]) == (42, 42 / 42)


def test_die_defekte_stehen_in_der_datei(cli, endpunkt, tmp_path):
    vorbereitet(cli, *messung(endpunkt(strom_von(lambda fall: ruf_deltas(fall, ohne_index=True),
                                                 fertig=False)).url, "--tag", "t", "--stream"))
    s11 = next(a for a in zeilen(tmp_path / "ergebnisse" / "t.jsonl")[1:] if a["id"] == "S1-1")
    assert s11["strom"] == {"chunks": 5, "defekte": ["a call delta without index", "no [DONE]"]}


def test_timeout_begrenzt_den_ganzen_strom(cli, endpunkt):
    def tropfen(fall, body, nummer):
        if fall["id"] != "S1-1":
            return richtig(fall, body, nummer)
        daten = gestreamt(completion(openai_nachricht(fall["erwartet"])), stueck=1).encode()

        def schreibe(handler):
            handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: "
                                + str(len(daten)).encode() + b"\r\n\r\n")
            for i in range(0, len(daten), 40):
                handler.wfile.write(daten[i:i + 40])
                handler.wfile.flush()
                time.sleep(0.05)
        return schreibe
    server = endpunkt(tropfen)
    start = time.monotonic()
    status, out, err = cli(*messung(server.url, "--stream", "--timeout", "0.5", "--versuche", "1"))
    assert time.monotonic() - start < 3  # the whole stream would take over 10 s
    assert (status, err.splitlines()[0]) == (1, "messen: S1-1: no answer from the server after 1 attempt: "
                                                "Timeout: no complete answer within --timeout 0.5 s")


# ---------------------------------------------------------------------------
# --pruefen: the stream line and the parallel_tool_calls line
# ---------------------------------------------------------------------------

def gesund(fall, body, nummer):
    if fall is None:
        return completion({"role": "assistant", "content": "OK"}, "length")
    return richtig(fall, body, nummer)


def test_pruefen_sieht_den_verlorenen_teil(cli, endpunkt):
    def antwort(fall, body, nummer):
        if body.get("stream") and fall and fall["erwartet"]:
            return 200, sse(ruf_deltas(fall, verliert=True)), {"Content-Type": "text/event-stream"}
        return gesund(fall, body, nummer)
    status, out, err = cli("--pruefen", *messung(endpunkt(antwort).url))
    assert status == 1
    zeile = next(z for z in out.splitlines() if "streamed and plain" in z)
    assert zeile.startswith('  FAIL  streamed and plain answers give the same calls: in S3-1 the stream gave '
                            'get_events(<malformed arguments>); get_events(<malformed arguments>), the plain answer '
                            'get_events(calendar="team", date="2026-03-18"); get_events(calendar="vertrieb", '
                            'date="2026-03-18"); the server\'s streamed tool-call parser is at fault')


def test_pruefen_mehrere_aufrufe_nur_auf_verlangen(cli, endpunkt):
    def antwort(fall, body, nummer):
        if fall and fall["stufe"] == "S3" and not body.get("parallel_tool_calls"):
            return completion(openai_nachricht(fall["erwartet"][:1]), "tool_calls")
        return gesund(fall, body, nummer)
    status, out, err = cli("--pruefen", *messung(endpunkt(antwort).url))
    assert status == 1
    assert "  FAIL  several calls come in one answer: in S3-1 only when asked: this server sends one call per " \
           "answer unless asked: --extra '{\"parallel_tool_calls\": true}'" in out.splitlines()


# ---------------------------------------------------------------------------
# The same answer, split into chunks in every way, assembles to the same message
# ---------------------------------------------------------------------------

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)
AUFRUF = st.fixed_dictionaries({"name": st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
                                "arguments": st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), TEXT,
                                                             max_size=3).map(json.dumps)})


def zerlegt(text, schnitte):
    punkte = sorted({min(s, len(text)) for s in schnitte})
    return [text[a:b] for a, b in zip([0] + punkte, punkte + [len(text)]) if b > a] or [""]


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(inhalt=st.one_of(st.none(), TEXT.filter(bool)), aufrufe=st.lists(AUFRUF, max_size=3),
       schnitte=st.lists(st.integers(0, 40), max_size=6), crlf=st.booleans(), kommentar=st.booleans())
def test_jede_zerlegung_ergibt_dieselbe_nachricht(inhalt, aufrufe, schnitte, crlf, kommentar):
    chunks = [delta({"role": "assistant"})] + [delta({"content": t}) for t in zerlegt(inhalt or "", schnitte)
                                                if inhalt]
    for i, a in enumerate(aufrufe):
        chunks.append(delta({"tool_calls": [{"index": i, "id": f"id{i}", "type": "function",
                                             "function": {"name": a["name"], "arguments": ""}}]}))
        chunks += [delta({"tool_calls": [{"index": i, "function": {"arguments": t}}]})
                   for t in zerlegt(a["arguments"], schnitte)]
    chunks += [delta({}, "tool_calls" if aufrufe else "stop"), {"choices": [], "usage": {"prompt_tokens": 7}}]
    text = sse(chunks)
    if kommentar:
        text = ": keep-alive\n\n" + text
    if crlf:
        text = text.replace("\n", "\r\n")
    antwort = messen.strom_antwort(text, 0.1)
    erwartet = {"role": "assistant", "content": inhalt}
    if aufrufe:
        erwartet["tool_calls"] = [{"id": f"id{i}", "type": "function", "function": a} for i, a in enumerate(aufrufe)]
    assert antwort.nachricht == erwartet
    assert (antwort.finish, antwort.usage, antwort.strom["defekte"]) == \
        ("tool_calls" if aufrufe else "stop", {"prompt_tokens": 7}, [])
    # and it grades as the same message sent whole
    assert messen.lies_aufrufe(antwort.nachricht) == messen.lies_aufrufe(erwartet)


def test_ein_fehler_im_strom_wird_benannt(cli, endpunkt):
    """vLLM sends an error mid-stream as a data event: no answer, the server's words, retried as any fault."""
    server = endpunkt(lambda fall, body, nummer: (200, 'data: {"error": {"message": "boom", "code": 500}}\n\n',
                                                  {"Content-Type": "text/event-stream"}))
    status, out, err = cli(*messung(server.url, "--stream", "--versuche", "2"))
    assert (status, err.splitlines()[0]) == (1, "messen: S1-1: the stream held no chat completion (2 attempts): boom")
    assert server.zahl() == 2
