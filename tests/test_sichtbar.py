"""Faults a user would see, each with a test that fails when the fault is put back.

Each test is named by what the user would see: a wrong interval, a call assembled from the
wrong fragments, two answers merged, a special token taken for restraint, a second turn
that never counts, an output too many, a results file other tools cannot read, a renaming
that makes two names one.
"""

import json

import pytest

import messen
from conftest import (FAELLE, completion, meldungen, messung, openai_nachricht, richtig, vorbereitet,
                      zweiter_zug)


def json_lauf(cli, *argv):
    status, out, err = cli(*argv, "--json")
    assert status == 0, err
    return json.loads(out)


def sse(chunks):
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


def delta(d, finish=None, index=0):
    return {"choices": [{"index": index, "delta": d, "finish_reason": finish}]}


def test_ein_perfekter_lauf_mit_wiederholungen_hat_das_intervall_seiner_faelle(cli, endpunkt):
    # 126 outputs of 42 cases: at 100 % the repeats say nothing about the cases, so the interval is the 42 cases'
    status, out, err = cli(*messung(endpunkt().url, "--n", "3"))
    assert status == 0, err
    assert "auftraege_gelungen   100 %   (95 % interval 91.6 % to 100 %)" in out.splitlines()
    status, out, err = cli(*messung(endpunkt(lambda fall, body, nummer: completion(
        openai_nachricht([] if fall["erwartet"] else [{"name": "list_calendars", "args": {}}]))).url,
        "--n", "3", "--tag", "null"))
    assert "auftraege_gelungen   0 %   (95 % interval 0 % to 8.4 %)" in out.splitlines()


def test_fragmente_ohne_index_gehoeren_zum_letzten_aufruf():
    # three calls streamed without index: each fragment goes on with the call named last
    chunks = [delta({"role": "assistant"})]
    for name, args in (("a", '{"x": 1}'), ("b", '{"y": 2}'), ("c", '{"z": 3}')):
        chunks += [delta({"tool_calls": [{"id": name, "function": {"name": name, "arguments": ""}}]}),
                   delta({"tool_calls": [{"function": {"arguments": args[:4]}}]}),
                   delta({"tool_calls": [{"function": {"arguments": args[4:]}}]})]
    antwort = messen.strom_antwort(sse(chunks + [delta({}, "tool_calls")]), 0.1)
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in antwort.nachricht["tool_calls"]] == \
        [("a", '{"x": 1}'), ("b", '{"y": 2}'), ("c", '{"z": 3}')]
    assert antwort.strom["defekte"] == ["a call delta without index", messen.OHNE_USAGE]


def test_zwei_gestreamte_wahlen_werden_nicht_vermischt():
    chunks = [delta({"content": "zero"}), delta({"content": "one"}, index=1), delta({"content": " only"}),
              delta({}, "stop"), delta({}, "stop", index=1)]
    antwort = messen.strom_antwort(sse(chunks), 0.1)
    assert (antwort.nachricht["content"], antwort.weitere) == ("zero only", 1)


@pytest.mark.parametrize("token", ["<|eot_id|>", "<|im_end|>", "</s>"])
def test_ein_sondertoken_allein_haelt_nicht_still(cli, endpunkt, token):
    server = endpunkt(lambda fall, body, nummer: completion({"role": "assistant", "content": token})
                      if fall["id"] in ("S4-1", "S5-1") else richtig(fall, body, nummer))
    k = json_lauf(cli, *messung(server.url))
    # a stop token written as text is something the model wrote: no empty answer of the server's (WESSEN)
    assert (k["stillgehalten"], k["diagnose"]["leer"], k["fehlgeschlagen"]) == (12 / 14, 0, ["S4-1", "S5-1"])


def test_eine_spaetere_zeile_derselben_ausgabe_gilt(cli, endpunkt, tmp_path):
    # a run stopped after it asked S5-1's second turn again, before it put the file in order: both lines stand
    vorbereitet(cli, *messung(endpunkt(lambda fall, body, nummer: completion(openai_nachricht(
        fall["danach"]), "tool_calls") if zweiter_zug(body) else richtig(fall, body, nummer)).url, "--nachfrage"))
    pfad = tmp_path / "ergebnisse" / "m.jsonl"
    zeilen_ = pfad.read_text().splitlines()
    i = next(i for i, z in enumerate(zeilen_) if json.loads(z).get("id") == "S5-1")
    zeilen_.append(zeilen_[i])
    zeilen_[i] = json.dumps(dict(json.loads(zeilen_[i]), zweite={"fehlt": "S5-1, second turn: the server answered 500"}))
    pfad.write_text("\n".join(zeilen_) + "\n")
    status, out, err = cli("--bewerten", "m", "--json")
    assert (status, meldungen(err), json.loads(out)["nachfrage"], json.loads(out)["ausgaben"]) == (0, [], 8 / 8, 42)


def test_eine_spaeter_nachgefragte_zweite_runde_ersetzt_die_fruehere_zeile(cli, endpunkt, tmp_path):
    # S5-1's second turn fails (400) once: its first answer is saved with the fault; the same command asks the
    # second turn again and saves a later line for the same output, which replaces the first
    def antwort(fall, body, nummer):
        if fall["id"] == "S5-1" and zweiter_zug(body) and nummer == 2:
            return 400, {"error": {"message": "context too long"}}, {}
        if zweiter_zug(body):
            return completion(openai_nachricht(fall["danach"]), "tool_calls")
        return richtig(fall, body, nummer)
    server = endpunkt(antwort)
    vorbereitet(cli, *messung(server.url, "--nachfrage"), status=1)
    k = json_lauf(cli, *messung(server.url, "--nachfrage"))
    assert (k["ausgaben"], k["nachfrage"]) == (42, 8 / 8)
    status, out, err = cli("--bewerten", "m", "--json")
    assert (status, meldungen(err), json.loads(out)["nachfrage"]) == (0, [], 8 / 8)


def test_eine_ausgabe_zu_viel_ist_eine_beschaedigung(cli, endpunkt, tmp_path):
    vorbereitet(cli, *messung(endpunkt().url))
    pfad = tmp_path / "ergebnisse" / "m.jsonl"
    zeilen_ = pfad.read_text().splitlines()
    zeilen_.append(json.dumps(dict(json.loads(zeilen_[1]), lauf=1)))  # lauf 1 in a run of n 1: a 43rd output
    pfad.write_text("\n".join(zeilen_) + "\n")
    assert cli("--bewerten", "m") == (2, "", f"messen: {pfad}:44: the results file is damaged (lauf 1 in a run "
                                             "of n 1)\n")


def test_ein_fortgesetzter_lauf_hinterlaesst_nur_ganze_zeilen(cli, endpunkt, tmp_path):
    # a run killed while writing leaves half a line; the run resumed must leave a file any JSON-lines reader reads
    vorbereitet(cli, *messung(endpunkt().url))
    pfad = tmp_path / "ergebnisse" / "m.jsonl"
    zeilen_ = pfad.read_text().splitlines(keepends=True)
    pfad.write_text("".join(zeilen_[:11]) + zeilen_[11][:25])
    server = endpunkt()
    vorbereitet(cli, *messung(server.url))
    assert server.zahl() == 42 - 10
    assert [json.loads(z)["id"] for z in pfad.read_text().splitlines()[1:]] == [f["id"] for f in FAELLE]
    # a long half line and one output missing: what the resumed run writes is shorter than what was left
    zeilen_ = pfad.read_text().splitlines(keepends=True)
    pfad.write_text("".join(zeilen_[:42]) + zeilen_[42][:-2] + " " * 100_000)
    vorbereitet(cli, *messung(server.url))
    assert [json.loads(z)["id"] for z in pfad.read_text().splitlines()[1:]] == [f["id"] for f in FAELLE]


def test_eine_synonymkarte_die_einen_alten_namen_nimmt(cli, tmp_path):
    karte = {"werkzeuge": {**messen.SYNONYME["werkzeuge"], "get_contact": "list_contacts"},
             "argumente": messen.SYNONYME["argumente"]}
    (tmp_path / "k.json").write_text(json.dumps({"werkzeuge": messen.KATALOG, "eroeffnung": messen.EROEFFNUNG,
                                                 "synonyme": karte}))
    assert cli("--selbsttest", "--katalog", str(tmp_path / "k.json"), "--variante", "synonyme") == (
        2, "", f"messen: {tmp_path / 'k.json'}: \"synonyme\" gives 'list_contacts' in \"werkzeuge\" twice or as an "
               "old name\n")


# ---------------------------------------------------------------------------
# A newcomer's summary: ten failures, what the model wrote, a loop named as one
# ---------------------------------------------------------------------------

JAVASCRIPT = "```js\nfetch('/contacts').then(r => r.json())\n```"


def test_die_liste_zeigt_zehn_und_sagt_wie_alle(cli, endpunkt):
    server = endpunkt(lambda fall, body, nummer: completion({"role": "assistant", "content": JAVASCRIPT})
                      if fall["erwartet"] else richtig(fall, body, nummer))
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    zeilen_ = out.splitlines()
    assert "Failed (28):" in zeilen_ and zeilen_[-1] == "  ... and 18 more (--alle shows every one)"
    assert sum(z.startswith("      came:     ") for z in zeilen_) == 10
    assert "      came:     no call: \"```js\"" in zeilen_  # the first line of what the model wrote
    status, out, err = cli("--bewerten", "m", "--alle")
    assert sum(z.startswith("      came:     ") for z in out.splitlines()) == 28 and "more (--alle" not in out


def test_ein_modell_das_sich_wiederholt_wird_benannt(cli, endpunkt):
    schleife = completion({"role": "assistant", "content": "Here is the list:\n" + "<list-contact>\n" * 40}, "length")
    abgeschnitten = completion({"role": "assistant", "content": "I will now look up the calendar and then"}, "length")
    server = endpunkt(lambda fall, body, nummer: schleife if fall["id"] in ("S1-1", "S1-2", "S2-1") else
                      abgeschnitten if fall["id"] == "S2-2" else richtig(fall, body, nummer))
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    assert ("  schleife       3: outputs cut off by the token limit while their text repeated one piece over and "
            "over; the model loops: more max_tokens only makes it longer; cap it (--extra '{\"max_tokens\": 256}') "
            "and check the chat template, since a wrong one makes small models loop. A comparison under the same "
            "server, chat template and limit counts these outputs as the model's.") in out.splitlines()
    k = json_lauf(cli, "--bewerten", "m")
    assert (k["diagnose"]["schleife"], k["diagnose"]["abgeschnitten"], k["auftraege_gelungen"]) == (3, 1, 38 / 42)


@pytest.mark.parametrize("nachricht", [{"reasoning_content": True}, {"content": None, "reasoning": 5},
                                       {"content": [], "reasoning_content": ["x"]}])
def test_eine_abgeschnittene_antwort_mit_fremden_feldern(nachricht):
    # found by the property on another hypothesis version: a reasoning field that is no string, cut at the limit
    b = messen.bewerte_ausgabe(messen.als_fall(FAELLE[0]), nachricht, "length")
    assert (b.mangel, b.schleife) == ("abgeschnitten", False)
