"""Whose a failure is, decided once: for a run of each single kind, the diagnosis's heading and the gate's exit
say the same, over loopback HTTP. B answers in one broken shape where A, on the same endpoint, is right in every
case; "not the model" never goes with exit 3, "cannot be told" goes with exit 2, the model's with exit 3.
"""

import itertools
import re

import pytest

from conftest import FAELLE, completion, messung, openai_nachricht, richtig, vorbereitet

RUFEN = {f["id"] for f in FAELLE if f["stufe"] in ("S1", "S2", "S3")}  # 28 calling cases
MEHRERE = {f["id"] for f in FAELLE if len(f["erwartet"]) > 1}  # the cases with several calls (S3's)
DENKEN = " ".join(f"Step {i}: the user may mean room number {i * 7}, so I weigh it." for i in range(60))  # no loop

MODELL = "Diagnosis: the server did its part; the model did not"
UNKLAR = "Diagnosis: whose some outputs are cannot be told"
SERVER = "Diagnosis: what the server did, not the model"


def leer(fall, body, nummer):
    """Nothing at all, for 20 completion tokens counted (the endpoint adds usage): tokens the server never sent."""
    return completion({"role": "assistant", "content": None})


def abgeschnitten(fall, body, nummer):
    """Cut at the limit (no limit set by the run) before a call was complete."""
    return completion({"role": "assistant", "content": '<tool_call>{"name": "get_con'}, "length")


def im_denken(fall, body, nummer):
    """The calls only in a reasoning field, the content empty (a reasoning parser took the whole answer)."""
    return completion({"role": "assistant", "content": None, "reasoning_content": "<tool_call>"
                       + str(fall["erwartet"]) + "</tool_call>"})


def schleife(fall, body, nummer):
    """A loop to the limit: one piece repeated until the tokens ran out."""
    return completion({"role": "assistant", "content": "Let me see. " + "and then I look at the calendar again, " * 12},
                      "length")


def denkt_zu_lange(fall, body, nummer):
    """A thinking model that thinks past the limit: reasoning only, finish_reason length, no content."""
    return completion({"role": "assistant", "content": None, "reasoning_content": DENKEN}, "length")


def abgelehnt(fall, body, nummer):
    """llama.cpp's 500 "Failed to parse input" on every case: its parser refused what the model wrote."""
    if fall["id"] not in RUFEN:
        return richtig(fall, body, nummer)
    text = '<tool_call>\n{"name": "' + fall["erwartet"][0]["name"] + '", "arguments": {'
    return 500, {"error": {"code": 500, "message": f"Failed to parse input at pos 12: {text}",
                           "type": "server_error"}}, {}


def erster_von_mehreren(fall, body, nummer):
    """Several calls due, the first came complete, then the limit cut the answer."""
    if fall["id"] not in MEHRERE:
        return richtig(fall, body, nummer)
    return completion(openai_nachricht(fall["erwartet"][:1]), "length")


def diagnose_von(out):
    """The comparison's diagnosis: its heading, and each kind's row (kind, A's outputs, B's, whose)."""
    zeilen = out.splitlines()
    i = next(i for i, z in enumerate(zeilen) if z.startswith("Diagnosis"))
    reihen = [re.fullmatch(r"  (.+?) +(\S+) +(\S+)  ((?:the|cannot) .+)", z).groups()
              for z in itertools.takewhile(lambda z: ": " not in z, zeilen[i + 2:])]
    return zeilen[i], reihen


@pytest.mark.parametrize("antwort, kopf, rc", [
    (leer, SERVER, 2),
    (abgeschnitten, UNKLAR, 2),
    (im_denken, UNKLAR, 2),
    (schleife, MODELL, 3),
    (denkt_zu_lange, UNKLAR, 2),
    (abgelehnt, UNKLAR, 2),
    (erster_von_mehreren, UNKLAR, 2),
], ids=["leer", "abgeschnitten", "im_denken", "schleife", "denkt_zu_lange", "abgelehnt", "erster_von_mehreren"])
def test_kopf_und_ausgang_sagen_dasselbe(cli, endpunkt, antwort, kopf, rc):
    vorbereitet(cli, *messung(endpunkt(richtig).url, "--tag", "a"))
    vorbereitet(cli, *messung(endpunkt(antwort).url, "--tag", "b"))
    status, out, err = cli("--vergleich", "a", "b", "--streng")
    kopf_b, reihen = diagnose_von(out)
    assert (kopf_b, status) == (kopf, rc), out + err
    assert reihen and [r[1] for r in reihen] == ["0"] * len(reihen)  # A: all clear, every kind B's alone
