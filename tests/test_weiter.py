"""S6 in full: after the tools' results, go on (--weiter), over loopback HTTP.

Each S6 request carries the first step as the assistant's tool_calls and each call's
result as a tool message; the calls that follow are graded against `danach` with passt
and bewerte, and `weiter` is the share of S6 outputs that went on right.
"""

import hashlib
import json
import re

import pytest

from conftest import (meldungen, bewertet, vorbereitet, BY_ID, FAELLE, ROOT, WEITER_FAELLE, completion, messung, openai_nachricht, richtig,
                      zeilen)
import messen
from messen import EROEFFNUNG, pruefe_fall

WEITER_ZEILE = "weiter               {}   (S6 outputs that went on right after the tools' results)"


def json_lauf(cli, *argv):
    status, out, err = cli(*argv, "--json")
    assert status == 0, err
    return json.loads(out)


def nach_ergebnis(body):
    return any(m["role"] == "tool" for m in body["messages"])


def weiter_mit(danach):
    """Right in S1-S5; after the results, `danach(fall)` instead of the expected calls."""
    def antwort(fall, body, nummer):
        if fall["stufe"] != "S6":
            return richtig(fall, body, nummer)
        assert nach_ergebnis(body)
        aufrufe = danach(fall)
        return completion(openai_nachricht(aufrufe), "tool_calls" if aufrufe else "stop")
    return antwort


def nur_im_ergebnis(fall):
    """The values of danach that neither the question nor the opening gives: only the results do."""
    quelle = fall["frage"] + " " + EROEFFNUNG
    return {v for s in fall["danach"] for v in s["args"].values() if v not in quelle}


def erfunden(fall):
    """danach with every value that only the results give replaced by a made-up one."""
    fremd = nur_im_ergebnis(fall)
    return [{"name": s["name"], "args": {k: "0f0f0f0f-1111-4222-8333-444455556666" if v in fremd else v
                                         for k, v in s["args"].items()}} for s in fall["danach"]]


# ---------------------------------------------------------------------------
# The case file: hand-set S6 cases, each value of danach derivable
# ---------------------------------------------------------------------------

def test_die_s6_faelle():
    assert [f["id"] for f in WEITER_FAELLE] == [f"S6-{i}" for i in range(1, 11)]
    for f in WEITER_FAELLE:
        assert pruefe_fall(f) is None, f["id"]
        assert len(f["ergebnis"]) == len(f["erwartet"]) >= 1, f["id"]
    braucht_ergebnis = [f["id"] for f in WEITER_FAELLE if nur_im_ergebnis(f)]
    assert braucht_ergebnis == ["S6-1", "S6-2", "S6-3", "S6-4", "S6-5"]
    assert [f["id"] for f in WEITER_FAELLE if f["danach"] == []] == ["S6-7", "S6-8", "S6-9", "S6-10"]
    assert [f["id"] for f in WEITER_FAELLE if any("error" in e for e in f["ergebnis"] if isinstance(e, dict))] \
        == ["S6-6", "S6-9"]


@pytest.mark.parametrize("fall", WEITER_FAELLE, ids=lambda f: f["id"])
def test_jeder_wert_von_danach_steht_in_frage_eroeffnung_oder_ergebnis(fall):
    quelle = fall["frage"] + " " + EROEFFNUNG + " " + json.dumps(fall["ergebnis"])
    for soll in fall["danach"]:
        for k, v in soll["args"].items():
            assert v in quelle, (k, v)
    # a retry of the failed step with the same values is never what comes next
    if any("error" in e for e in fall["ergebnis"] if isinstance(e, dict)):
        assert not any(s in fall["erwartet"] for s in fall["danach"])


@pytest.mark.parametrize("aenderung, meldung", [
    ({"ergebnis": []}, "'ergebnis' must list one result per expected call (1), in their order"),
    ({"ergebnis": {"contact_id": "x"}}, "'ergebnis' must list one result per expected call (1), in their order"),
    ({"danach": {}}, "'danach' must list the calls expected after the results"),
    ({"danach": [{"name": "add_note", "args": {"text": "x"}}]},
     "expected call add_note lacks its required argument 'contact_id'"),
    ({"danach": [{"name": "fly", "args": {}}]}, "expected tool 'fly' is not in the built-in catalogue (give your own tools with --katalog FILE)"),
    ({"nachtrag": "x"}, "'nachtrag' belongs to S5 only, not to S6"),
], ids=["leer", "kein array", "danach kein array", "pflichtargument", "unbekanntes werkzeug", "nachtrag"])
def test_die_falldatei_prueft_ergebnis_und_danach(aenderung, meldung):
    assert pruefe_fall(dict(BY_ID["S6-1"], **aenderung)) == meldung


def test_ergebnis_nur_in_s6_und_nie_ohne_danach():
    ohne = {k: v for k, v in BY_ID["S6-1"].items() if k not in ("ergebnis", "danach")}
    assert pruefe_fall(ohne) == "stage S6 needs 'ergebnis' (what each call of the first step returned) and 'danach'"
    s2 = dict(BY_ID["S2-7"], ergebnis=[{}], danach=[])
    assert pruefe_fall(s2) == "'ergebnis' belongs to S6 only, not to S2"
    s4 = dict(BY_ID["S4-1"], danach=[])
    assert pruefe_fall(s4) == "'danach' belongs to S5 or S6 only, not to S4"


def test_weiter_ohne_s6_faelle(cli, endpunkt, tmp_path):
    datei = tmp_path / "f.jsonl"
    datei.write_text(json.dumps(BY_ID["S2-7"]) + "\n")
    server = endpunkt()
    assert cli(*messung(server.url, "--faelle", str(datei), "--weiter")) == (
        2, "", f"messen: {datei}: no S6 case in the file, so --weiter has nothing to measure\n")
    assert server.zahl() == 0
    datei.write_text(json.dumps(BY_ID["S6-1"]) + "\n")
    assert cli("--selbsttest", "--faelle", str(datei)) == (
        2, "", f"messen: {datei}: every case is of S6, which only --weiter asks; add --weiter\n")


# ---------------------------------------------------------------------------
# Without the flag nothing changes; with it, the request and the figure
# ---------------------------------------------------------------------------

def test_ohne_schalter_keine_s6_anfrage(cli, endpunkt):
    server = endpunkt()
    k = json_lauf(cli, *messung(server.url, "--tag", "t"))
    assert server.zahl() == 42 and not any(nach_ergebnis(b) for _, b in server.anfragen)
    assert (k["faelle"], k["weiter"], sorted(k["stufen"])) == (42, None, ["S1", "S2", "S3", "S4", "S5"])


def test_die_anfrage_nach_dem_ergebnis(cli, endpunkt, tmp_path):
    server = endpunkt(weiter_mit(lambda f: f["danach"]))
    status, out, err = cli(*messung(server.url, "--tag", "t", "--weiter"))
    assert status == 0, err
    assert WEITER_ZEILE.format("100 %") in out.splitlines()
    assert "By stage: S1 100 %, S2 100 %, S3 100 %, S4 100 %, S5 100 %, S6 100 %." in out.splitlines()
    assert server.zahl() == 42 + 10 and server.zahl("S6-5") == 1
    body = next(b for _, b in server.anfragen if b["messages"][1]["content"] == BY_ID["S6-5"]["frage"])
    system, user, assistent, *werkzeuge = body["messages"]
    assert (system, user) == ({"role": "system", "content": EROEFFNUNG},
                              {"role": "user", "content": BY_ID["S6-5"]["frage"]})
    assert assistent["role"] == "assistant" and assistent["content"] == ""
    ids = [c["id"] for c in assistent["tool_calls"]]
    assert all(re.fullmatch(r"[A-Za-z0-9]{9}", i) for i in ids) and len(set(ids)) == 2
    assert [(c["type"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in assistent["tool_calls"]] == [("function", s["name"], s["args"]) for s in BY_ID["S6-5"]["erwartet"]]
    assert [(m["role"], m["tool_call_id"], json.loads(m["content"])) for m in werkzeuge] == \
        [("tool", i, e) for i, e in zip(ids, BY_ID["S6-5"]["ergebnis"])]
    gespeichert = {i: a for (i, _), a in bewertet(tmp_path / "ergebnisse" / "t.jsonl").items()}
    assert zeilen(tmp_path / "ergebnisse" / "t.jsonl")[0]["einstellungen"]["weiter"] is True
    assert gespeichert["S6-5"].note.treffer == 2 and gespeichert["S6-7"].note.treffer == 0
    k = json_lauf(cli, "--bewerten", "t")
    assert (k["weiter"], k["auftraege_gelungen"], k["faelle"], k["stufen"]["S6"]) == (10 / 10, 42 / 42, 52, 10 / 10)


def test_wer_den_ersten_schritt_wiederholt(cli, endpunkt):
    server = endpunkt(weiter_mit(lambda f: f["erwartet"]))
    status, out, err = cli(*messung(server.url, "--tag", "t", "--weiter"))
    assert status == 0, err
    assert WEITER_ZEILE.format("0 %") in out.splitlines()
    teil = out[out.index("After the tool's result (10):"):].splitlines()
    assert teil[1:5] == [
        '  S6-1  Create a contact for Lena Vogt of Brenner GmbH and add the note "Met at the trade fair." to it.  /  '
        'create_contact(name="Lena Vogt", company="Brenner GmbH") returned {"contact_id": '
        '"a71c3e92-5d0b-4f68-8e24-c9b61f0d3a57", "name": "Lena Vogt", "company": "Brenner GmbH"}',
        '      expected: add_note(contact_id="a71c3e92-5d0b-4f68-8e24-c9b61f0d3a57", text="Met at the trade fair.")',
        '      came:     create_contact(name="Lena Vogt", company="Brenner GmbH")',
        '      differs:  add_note(contact_id="a71c3e92-5d0b-4f68-8e24-c9b61f0d3a57", text="Met at the trade fair.") '
        'not called; spare call create_contact']
    assert "Failed (" not in out  # S1-S5 right: their list stays empty
    k = json_lauf(cli, "--bewerten", "t")
    assert (k["weiter"], k["auftraege_gelungen"], k["fehlgeschlagen"]) == (0 / 10, 42 / 42, [f"S6-{i}" for i in
                                                                                             range(1, 11)])


def test_wer_den_wert_erfindet_statt_ihn_zu_lesen(cli, endpunkt):
    server = endpunkt(weiter_mit(erfunden))
    k = json_lauf(cli, *messung(server.url, "--tag", "t", "--weiter"))
    assert k["weiter"] == 5 / 10
    assert k["fehlgeschlagen"] == ["S6-1", "S6-2", "S6-3", "S6-4", "S6-5"]
    assert k["fehlerarten"]["falscher_wert"] == 1 + 1 + 1 + 2 + 2


def test_leer_nach_dem_ergebnis_ist_keine_antwort(cli, endpunkt):
    server = endpunkt(weiter_mit(lambda f: f["danach"]))
    server.antwort = lambda fall, body, nummer: completion({"role": "assistant", "content": ""}) \
        if fall["id"] == "S6-8" else weiter_mit(lambda f: f["danach"])(fall, body, nummer)
    k = json_lauf(cli, *messung(server.url, "--tag", "t", "--weiter"))
    assert (k["weiter"], k["diagnose"]["leer"], k["fehlerarten"]["leer"]) == (9 / 10, 1, 1)


def test_der_text_der_erste_fehlschlag(cli, endpunkt):
    """The failed-case section shows what the tool returned and what came."""
    server = endpunkt(weiter_mit(lambda f: f["erwartet"] if f["id"] == "S6-9" else f["danach"]))
    status, out, err = cli(*messung(server.url, "--tag", "t", "--weiter"))
    assert status == 0, err
    assert out.splitlines()[-5:] == [
        "After the tool's result (1):",
        '  S6-9  Delete the contact 7d2f4b81-9e3c-4a65-b0d8-1c6e5a7f9b42.  /  '
        'delete_contact(contact_id="7d2f4b81-9e3c-4a65-b0d8-1c6e5a7f9b42") returned '
        '{"error": "no contact with the id 7d2f4b81-9e3c-4a65-b0d8-1c6e5a7f9b42"}',
        "      expected: no call",
        '      came:     delete_contact(contact_id="7d2f4b81-9e3c-4a65-b0d8-1c6e5a7f9b42")',
        "      differs:  spare call delete_contact"]
    assert WEITER_ZEILE.format("90 %") in out.splitlines()


# ---------------------------------------------------------------------------
# Resume, --n, --parallel, comparisons and --pruefen
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("schalter, anders", [
    (["--weiter"], "weiter true, not false"), (["--stream"], "stream true, not false"),
    (["--variante", "reihenfolge"], 'variante "reihenfolge", not null')], ids=["weiter", "stream", "variante"])
def test_ein_tag_behaelt_seine_schalter(cli, endpunkt, tmp_path, schalter, anders):
    """A run measured with a flag is never resumed without it: the halves would not measure one thing."""
    kaputt = endpunkt(lambda fall, body, nummer: (400, {"error": {"message": "bad"}}, {})
                      if fall["id"] == "S3-1" else richtig(fall, body, nummer))
    vorbereitet(cli, *messung(kaputt.url, "--tag", "t", *schalter), status=1)
    server = endpunkt()
    assert cli(*messung(server.url, "--tag", "t")) == (
        2, "", f"messen: {tmp_path / 'ergebnisse' / 't.jsonl'} was measured with {anders}; use "
               "another --tag, or --neu to measure anew (the old file is kept)\n")
    assert server.zahl() == 0


def test_n_2_parallel_und_fortsetzen(cli, endpunkt, tmp_path):
    kaputt = endpunkt(lambda fall, body, nummer: (400, {"error": {"message": "bad"}}, {})
                      if fall["id"] == "S6-10" else weiter_mit(lambda f: f["danach"])(fall, body, nummer))
    vorbereitet(cli, *messung(kaputt.url, "--tag", "t", "--weiter", "--n", "2"), status=1)
    gut = endpunkt(weiter_mit(lambda f: f["danach"]))
    k = json_lauf(cli, *messung(gut.url, "--tag", "t", "--weiter", "--n", "2", "--parallel", "4"))
    assert (k["ausgaben"], k["weiter"], k["alle_n_stufen"]["S6"]) == (104, 20 / 20, 10 / 10)
    assert gut.zahl() == 104 - (kaputt.zahl() - 1)  # only what was missing: the refused request saved nothing


def test_vergleich_mit_und_ohne_weiter(cli, endpunkt):
    vorbereitet(cli, *messung(endpunkt().url, "--tag", "a"))
    vorbereitet(cli, *messung(endpunkt(weiter_mit(lambda f: f["erwartet"])).url, "--tag", "b", "--weiter"))
    status, out, err = cli("--vergleich", "a", "b")
    assert status == 0, err
    assert "weiter                        -        0 %          -" in out.splitlines()
    assert "Only b measured S6 (--weiter): the test compares the cases both have, S6 stays out of it." \
        in out.splitlines()
    assert "(auftraege_gelungen over the 42 cases compared: 0 points)" in out


def test_vergleich_zweier_laeufe_mit_weiter(cli, endpunkt):
    vorbereitet(cli, *messung(endpunkt(weiter_mit(lambda f: f["danach"])).url, "--tag", "a", "--weiter"))
    vorbereitet(cli, *messung(endpunkt(weiter_mit(lambda f: f["erwartet"])).url, "--tag", "b", "--weiter"))
    status, out, err = cli("--vergleich", "a", "b", "--streng")
    # S6 is calling: ten worse there, 2 * 2 / 2 ** 10 with Holm
    assert (status, err.splitlines()[-1]) == (3, "messen: b is worse than a beyond chance at 5 % over all cases "
                                                 f"(p = {2 / 2 ** 10:.3g}) and in calling (p = {2 * 2 / 2 ** 10:.3g}, "
                                                 "Holm-corrected); --streng exits 3")
    assert "calling (S1-S3, S6) 0 better, 10 worse" in out
    assert "weiter                     100 %         0 % -100 points" in out.splitlines()
    assert "0 cases better and 10 worse in b than in a (auftraege_gelungen and weiter over the 52 cases compared: " \
           f"{-10 / 52 * 100:.1f} points)" in out
    status, out, _ = cli("--vergleich", "a", "b", "--markdown")
    assert "| S6 | 100 % | 0 % | -100 points |" in out.splitlines()


def test_pruefen_mit_weiter(cli, endpunkt):
    def antwort(fall, body, nummer):
        if fall is None:
            return completion({"role": "assistant", "content": "OK"}, "length")
        return weiter_mit(lambda f: f["danach"])(fall, body, nummer)
    server = endpunkt(antwort)
    status, out, err = cli("--pruefen", "--weiter", *messung(server.url))
    assert (status, meldungen(err)) == (0, [])
    assert out.splitlines()[-3] == "  ok    the tools' results (--weiter) are accepted (S6-1: add_note after the results)"
    assert [m["role"] for m in server.anfragen[-1][1]["messages"]] == ["system", "user", "assistant", "tool"]


def test_selbsttest_mit_weiter(cli):
    status, out, err = cli("--selbsttest", "--weiter")
    assert status == 0, err
    assert WEITER_ZEILE.format("100 %") in out.splitlines()
    assert len(FAELLE) + len(WEITER_FAELLE) == 52


def test_das_bild_zeigt_s6(cli, endpunkt, tmp_path, bild):
    vorbereitet(cli, *messung(endpunkt(weiter_mit(lambda f: f["danach"])).url, "--tag", "a", "--weiter"))
    vorbereitet(cli, *messung(endpunkt(weiter_mit(erfunden)).url, "--tag", "b", "--weiter"))
    svg = tmp_path / "b.svg"
    status, out, err = cli("--vergleich", "a", "b", "--bild", str(svg))
    assert (status, err) == (0, "")
    bild = svg.read_text()
    assert "after result" in bild and ">50<" in bild  # b's S6 bar: 5 of 10


def test_laeufe_von_vor_s6_bleiben_vergleichbar(cli, endpunkt, tmp_path):
    """The case file's hash leaves its S6 lines out: a run saved before they existed still finds the
    file and compares with a run measured after; a --weiter run keeps its S6 cases' own hash."""
    vorbereitet(cli, *messung(endpunkt().url, "--tag", "neu"))
    kapitel = b"".join(z for z in (ROOT / "faelle.jsonl").read_bytes().splitlines(keepends=True)
                       if b'"S6"' not in z and b'"S7"' not in z)
    pfad = tmp_path / "ergebnisse" / "neu.jsonl"
    e = zeilen(pfad)[0]["einstellungen"]
    assert e["faelle_sha256"] == hashlib.sha256(kapitel).hexdigest() and e["weiter_sha256"] is None
    alt = tmp_path / "ergebnisse" / "alt.jsonl"  # as the version before S6 saved it: no paths, no S6 hash
    z = pfad.read_text().splitlines()
    kopf = json.loads(z[0])
    for feld in ("faelle_datei", "katalog_datei", "weiter_sha256", "stream", "variante", "seed", "umbenennung",
                 "ablenkung", "weiter"):
        del kopf["einstellungen"][feld]
    alt.write_text("\n".join([json.dumps(kopf)] + z[1:]) + "\n")
    status, out, err = cli("--vergleich", "alt", "neu")
    assert status == 0, err
    assert "0 cases better and 0 worse in neu than in alt" in out


def test_andere_s6_faelle_werden_abgelehnt(cli, endpunkt, tmp_path):
    eigene = tmp_path / "f.jsonl"
    eigene.write_text("".join(json.dumps(f) + "\n" for f in [BY_ID["S2-7"], BY_ID["S6-1"], BY_ID["S6-7"]]))
    vorbereitet(cli, *messung(endpunkt(weiter_mit(lambda f: f["danach"])).url, "--tag", "t", "--weiter",
                              "--faelle", str(eigene)))
    geaendert = dict(BY_ID["S6-7"], danach=[{"name": "list_calendars", "args": {}}])
    eigene.write_text("".join(json.dumps(f) + "\n" for f in [BY_ID["S2-7"], BY_ID["S6-1"], geaendert]))
    assert cli("--bewerten", "t") == (
        2, "", f"messen: {tmp_path / 'ergebnisse' / 't.jsonl'} was measured on a case file that is not found: {eigene} "
               f"and {messen.faelle_standard()} are gone or hold other cases (or other S6 or S7 cases); give the one it was "
               "measured on with --faelle FILE\n")
    # the file it was measured on, given: found though the saved path now holds other S6 cases
    alt = tmp_path / "alt.jsonl"
    alt.write_text("".join(json.dumps(f) + "\n" for f in [BY_ID["S2-7"], BY_ID["S6-1"], BY_ID["S6-7"]]))
    status, out, err = cli("--bewerten", "t", "--faelle", str(alt), "--json")
    assert (status, err, json.loads(out)["weiter"]) == (0, "", 2 / 2)
    server = endpunkt()
    assert cli(*messung(server.url, "--tag", "t", "--weiter", "--faelle", str(eigene)))[2] == (
        f"messen: {tmp_path / 'ergebnisse' / 't.jsonl'} was measured with other S6 cases; use another --tag, or "
        "--neu to measure anew (the old file is kept)\n")
    assert server.zahl() == 0


def test_eine_basis_ohne_s6_vergleicht_mit_einem_weiter_lauf_in_beiden_reihenfolgen(cli, endpunkt, tmp_path):
    # the base was measured on a file with all S6 cases, the fine-tune with --weiter on one with two of them:
    # the same chapter's cases, so they compare, whichever comes first
    alle, zwei = tmp_path / "alle.jsonl", tmp_path / "zwei.jsonl"
    alle.write_text("".join(json.dumps(f) + "\n" for f in FAELLE + WEITER_FAELLE))
    zwei.write_text("".join(json.dumps(f) + "\n" for f in FAELLE + [BY_ID["S6-1"], BY_ID["S6-7"]]))
    vorbereitet(cli, *messung(endpunkt().url, "--tag", "basis", "--faelle", str(alle)))
    vorbereitet(cli, *messung(endpunkt(weiter_mit(lambda f: f["danach"])).url, "--tag", "ft", "--weiter",
                              "--faelle", str(zwei)))
    for reihe in (["basis", "ft"], ["ft", "basis"]):
        status, out, err = cli("--vergleich", *reihe, "--streng")
        assert (status, err) == (0, ""), reihe
        assert "0 cases better and 0 worse" in out


ACHSEN_NULL = 2  # ticks labelled 0: the stages and the headline (the failure classes start above it)


def test_das_bild_zeichnet_nur_gemessene_stufen(cli, endpunkt, tmp_path, bild):
    nur_s6 = tmp_path / "s6.jsonl"
    nur_s6.write_text("".join(json.dumps(f) + "\n" for f in WEITER_FAELLE))
    vorbereitet(cli, *messung(endpunkt(weiter_mit(lambda f: f["danach"])).url, "--tag", "s6", "--weiter",
                              "--faelle", str(nur_s6)))
    svg = tmp_path / "s6.svg"
    assert cli("--bewerten", "s6", "--bild", str(svg)) == (0, cli("--bewerten", "s6")[1], "")
    bild = svg.read_text()
    assert "after result" in bild and "narrowed" not in bild and ">100<" in bild
    # a run without S6 beside one with it: no S6 bar at 0 for the first
    vorbereitet(cli, *messung(endpunkt().url, "--tag", "a"))
    vorbereitet(cli, *messung(endpunkt(weiter_mit(lambda f: f["danach"])).url, "--tag", "b", "--weiter"))
    svg = tmp_path / "ab.svg"
    assert cli("--vergleich", "a", "b", "--bild", str(svg))[0] == 0
    bild = svg.read_text()
    assert bild.count(">100<") == 2 + 5 + 6  # the two axes' top ticks, a's five stages, b's six
    assert bild.count(">0<") == ACHSEN_NULL + 2  # the axes' zero ticks, and the failure-class panel's two bars


# ---------------------------------------------------------------------------
# --stufen: only the cases of the stages named
# ---------------------------------------------------------------------------

def test_nur_die_genannten_stufen(cli, endpunkt, tmp_path):
    server = endpunkt(weiter_mit(lambda f: f["danach"]))
    k = json_lauf(cli, *messung(server.url, "--tag", "s6", "--stufen", "S6", "--weiter"))
    assert (server.zahl(), k["ausgaben"], k["weiter"], list(k["stufen"])) == (10, 10, 10 / 10, ["S6"])
    assert zeilen(tmp_path / "ergebnisse" / "s6.jsonl")[0]["einstellungen"]["stufen"] == ["S6"]
    k = json_lauf(cli, *messung(endpunkt().url, "--tag", "s2", "--stufen", "s2,S4"))
    assert (k["ausgaben"], list(k["stufen"])) == (12 + 6, ["S2", "S4"])
    # resumed with other stages: refused; S6 without --weiter: refused; an unknown stage: usage
    assert cli(*messung(server.url, "--tag", "s2", "--stufen", "S2"))[2] == (
        f"messen: {tmp_path / 'ergebnisse' / 's2.jsonl'} was measured with stufen [\"S2\", \"S4\"], not [\"S2\"]; use "
        "another --tag, or --neu to measure anew (the old file is kept)\n")
    assert cli(*messung(server.url, "--tag", "x", "--stufen", "S6")) == (
        2, "", "messen: --stufen names S6, which only --weiter asks; add --weiter\n")
    assert cli(*messung(server.url, "--tag", "x", "--stufen", "S9"))[2] == (
        "messen: argument --stufen: 'S9': name stages from S1, S2, S3, S4, S5, S6, S7 (or BFCL's categories: "
        "simple_python, multiple, parallel, parallel_multiple, irrelevance, live_simple, live_multiple, live_parallel, "
        "live_parallel_multiple, live_irrelevance, multi_turn_base, multi_turn_miss_func, multi_turn_miss_param, "
        "multi_turn_long_context), separated by commas\n")
    # compared with a run of all stages: on the cases both have
    vorbereitet(cli, *messung(endpunkt().url, "--tag", "alle"))
    status, out, err = cli("--vergleich", "alle", "s2")
    assert status == 0, err
    assert "The runs asked different stages (all in alle, S2, S4 in s2): the test compares the cases both have." \
        in out.splitlines()
    assert "over the 18 cases compared" in out
