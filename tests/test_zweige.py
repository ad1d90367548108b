"""Branches users reach that no other test walks: the stream's rarer defects, a cross-check whose
plain request fails, --pruefen's "cannot tell" lines, the self-test streamed, a file that is no run."""

import json

import pytest

import messen

from conftest import meldungen, BY_ID, completion, fall_von, messung, prompt_tokens, richtig

ALLE_100 = "By stage: S1 100 %, S2 100 %, S3 100 %, S4 100 %, S5 100 %."


def json_lauf(cli, *argv):
    status, out, err = cli(*argv, "--json")
    assert status == 0, err
    return json.loads(out)


def strom(body, chunks, ende="data: [DONE]\n\n"):
    """The chunks as SSE; a dict chunk as JSON, a str as it stands; the usage a tool-aware template costs."""
    chunks = chunks + [{"choices": [], "usage": {"prompt_tokens": prompt_tokens(body), "completion_tokens": 9}}]
    text = "".join(f"data: {c if isinstance(c, str) else json.dumps(c)}\n\n" for c in chunks) + ende
    return 200, text, {"Content-Type": "text/event-stream"}


def aufruf_chunks(fall, index=0):
    return [{"choices": [{"index": index, "delta": {"tool_calls": [{"index": i, "id": f"c{i}", "type": "function",
                                                                     "function": {"name": s["name"],
                                                                                  "arguments": json.dumps(s["args"])}}]},
                          "finish_reason": None}]} for i, s in enumerate(fall["erwartet"])] + \
        [{"choices": [{"index": index, "delta": {}, "finish_reason": "tool_calls"}]}]


@pytest.mark.parametrize("zusatz, ende, art, verworfen", [
    ([], "data: [DONE]\n\ndata: {\"choices\": []}\n\n", "strom_nach_done", 0),
    (["{not json"], "data: [DONE]\n\n", "strom_kein_json", 0),
    ([{"choices": [{"index": 1, "delta": {"content": "another choice"}, "finish_reason": "stop"}]}],
     "data: [DONE]\n\n", None, 28),
])
def test_seltene_defekte_des_stroms(cli, endpunkt, zusatz, ende, art, verworfen):
    def antwort(fall, body, nummer):
        if not body.get("stream") or not fall["erwartet"]:
            return richtig(fall, body, nummer)
        return strom(body, aufruf_chunks(fall) + zusatz, ende)
    status, out, err = cli(*messung(endpunkt(antwort).url, "--stream"))
    assert status == 0, err
    assert ALLE_100 in out.splitlines()  # the calls came whole: notes, no figure moved
    k = json_lauf(cli, "--bewerten", "m")
    assert (k["diagnose"]["protokoll"], k["diagnose"]["verworfen"], k["diagnose"]["strom_defekt"]) == \
        ({art: 28} if art else {}, verworfen, 0)


def test_eine_gegenprobe_deren_anfrage_scheitert(cli, endpunkt, tmp_path):
    # the stream breaks S2-1's call; the plain request is refused: the stream's part cannot be told
    def antwort(fall, body, nummer):
        if fall["id"] != "S2-3":
            return richtig(fall, body, nummer)
        if not body.get("stream"):
            return 400, {"error": {"message": "stream: false is not supported"}}, {}
        kaputt = aufruf_chunks(fall)
        kaputt[0]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] = '{"contact_id": '
        return strom(body, kaputt)
    k = json_lauf(cli, *messung(endpunkt(antwort).url, "--stream"))
    assert (k["diagnose"]["strom_defekt"], k["diagnose"]["strom_ungeprueft"], k["auftraege_gelungen"]) == \
        (0, 1, 41 / 42)
    s23 = next(json.loads(z) for z in (tmp_path / "ergebnisse" / "m.jsonl").read_text().splitlines()[1:]
               if json.loads(z)["id"] == "S2-3")
    assert s23["zuege"][1:] == [{"zweck": "ohne_strom",
                                 "fehlt": "S2-3: the server answered 400: stream: false is not supported"}]


def test_selbsttest_gestreamt(cli):
    status, out, err = cli("--selbsttest", "--stream")
    assert status == 0, err
    assert ALLE_100 in out.splitlines() and ", streamed: 42 cases" in out.splitlines()[0]


def test_eine_datei_ohne_einstellungszeile(cli, tmp_path):
    ordner = tmp_path / "ergebnisse"
    ordner.mkdir()
    (ordner / "x.jsonl").write_text(json.dumps({"id": "S1-1", "stufe": "S1"}) + "\n")
    assert cli("--bewerten", "x") == (2, "", f"messen: {ordner / 'x.jsonl'}:1: not a results file of messen.py (no "
                                             "settings line)\n")


# ---------------------------------------------------------------------------
# --pruefen: the lines that cannot tell, and say why
# ---------------------------------------------------------------------------

def gesund(fall, body, nummer):
    if fall is None:
        return completion({"role": "assistant", "content": "OK"}, "length")
    return richtig(fall, body, nummer)


def test_pruefen_ohne_s3_und_ohne_rueckfrage(cli, endpunkt, tmp_path):
    datei = tmp_path / "f.jsonl"
    datei.write_text("".join(json.dumps(BY_ID[i]) + "\n" for i in ("S1-1", "S2-1", "S4-1")))
    status, out, err = cli("--pruefen", "--nachfrage", *messung(endpunkt(gesund).url, "--faelle", str(datei)))
    assert (status, meldungen(err)) == (0, [])
    assert out.splitlines()[6:10] == [
        "  ?     streamed and plain answers give the same calls: cannot tell, the case file has no S3 case",
        "  ?     several calls come in one answer: cannot tell, the case file has no S3 case",
        "  ok    the answers keep the protocol a run checks (4 answers, one of them S4-1, where no call is due)",
        "  ?     a second turn (--nachfrage) is accepted: cannot tell, the case file has no case with a reply "
        "(nachtrag)"]


def test_pruefen_ohne_aufruf_in_s3(cli, endpunkt):
    server = endpunkt(lambda fall, body, nummer: completion({"role": "assistant", "content": "I cannot."})
                      if fall and fall["stufe"] == "S3" else gesund(fall, body, nummer))
    status, out, err = cli("--pruefen", *messung(server.url))
    assert (status, meldungen(err)) == (0, [])
    assert out.splitlines()[6:8] == [
        "  ?     streamed and plain answers give the same calls: cannot tell, no call came in S3-1 without stream; "
        f"{messen.WEITER_MESSEN}",
        "  ?     several calls come in one answer: cannot tell, S3-1 brought at most one call, asked for several or "
        f"not; {messen.WEITER_MESSEN}"]
    # the last request of S3-1 asks for several calls; the protocol's check then asks S4-1
    assert [(fall_von(b).get("id"), b.get("parallel_tool_calls")) for _, b in server.anfragen][-2:] == [
        ("S3-1", True), ("S4-1", None)]
