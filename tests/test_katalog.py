"""Your own catalogue (--katalog) and the variants of a catalogue (--variante), over loopback HTTP.

The catalogue and the six cases are the example in docs/katalog.md, read from it, so that
what it shows is what is tested.
"""

import json
import re

import pytest

import messen
from conftest import (urteil_von, bewertet, erwartet_von, BY_ID, FAELLE, ROOT, UNBEKANNT, completion, messung, openai_nachricht, richtig, vorbereitet,
                      zeilen)

BEISPIEL = (ROOT / "docs" / "katalog.md").read_text(encoding="utf-8")
KATALOG_TEXT = re.search(r"```json\n(\{\n  \"werkzeuge\".*?)\n```", BEISPIEL, re.S).group(1)
FAELLE_TEXT = re.search(r"```jsonl\n(\{\"id\": \"S1-1\".*?)\n```", BEISPIEL, re.S).group(1) + "\n"
BIB = json.loads(KATALOG_TEXT)
BIB_FAELLE = [json.loads(z) for z in FAELLE_TEXT.splitlines()]
BIB_FRAGE = {f["frage"]: f for f in BIB_FAELLE}


def bibliothek(tmp_path, katalog=KATALOG_TEXT):
    (tmp_path / "bibliothek.json").write_text(katalog if isinstance(katalog, str) else json.dumps(katalog))
    (tmp_path / "bibliothek.jsonl").write_text(FAELLE_TEXT)
    return ["--katalog", str(tmp_path / "bibliothek.json"), "--faelle", str(tmp_path / "bibliothek.jsonl")]


def bib_richtig(fall, body, nummer):
    """The library's cases answered right (conftest knows only the chapter's questions)."""
    fall = BIB_FRAGE[body["messages"][1]["content"]]
    return completion(openai_nachricht(fall["erwartet"]), "tool_calls" if fall["erwartet"] else "stop")


def json_lauf(cli, *argv):
    status, out, err = cli(*argv, "--json")
    assert status == 0, err
    return json.loads(out)


def umbenannt_richtig(fall, body, nummer):
    """A model that reads the renamed catalogue: the expected calls in its names."""
    karte = messen.SYNONYME
    aufrufe = [{"name": karte["werkzeuge"][s["name"]], "args": {karte["argumente"][k]: v for k, v in s["args"].items()}}
               for s in erwartet_von(fall)]
    return completion(openai_nachricht(aufrufe), "tool_calls" if aufrufe else "stop")


def namen(body):
    return [w["function"]["name"] for w in body["tools"]]


# ---------------------------------------------------------------------------
# --katalog: a catalogue of another domain, measured, regraded and compared by tag alone
# ---------------------------------------------------------------------------

def test_die_bibliothek_wird_gemessen_bewertet_und_verglichen(cli, endpunkt, tmp_path):
    server = endpunkt(bib_richtig)
    status, out, err = cli(*messung(server.url, "--tag", "a", *bibliothek(tmp_path)))
    assert status == 0, err
    assert out.splitlines()[0].startswith("Model m, temp 0.0, n 1, tag a, catalogue bibliothek.json: 6 cases, 6 outputs")
    assert "By stage: S1 100 %, S2 100 %, S3 100 %, S4 100 %, S5 100 %." in out.splitlines()
    assert server.zahl() == 6
    s1 = next(b for _, b in server.anfragen if b["messages"][1]["content"] == BIB_FAELLE[0]["frage"])
    s2 = next(b for _, b in server.anfragen if b["messages"][1]["content"] == BIB_FAELLE[1]["frage"])
    assert s2["tools"] == BIB["werkzeuge"] and s2["messages"][0] == {"role": "system", "content": BIB["eroeffnung"]}
    assert namen(s1) == ["borrow_book", "renew_loan"]  # narrowed by nur, in the catalogue's order
    e = zeilen(tmp_path / "ergebnisse" / "a.jsonl")[0]["einstellungen"]
    assert (e["katalog_datei"], e["faelle_datei"]) == (str(tmp_path / "bibliothek.json"),
                                                      str(tmp_path / "bibliothek.jsonl"))
    assert e["katalog_sha256"] == messen.lade_katalog(tmp_path / "bibliothek.json").sha != messen.STANDARD.sha
    k = json_lauf(cli, "--bewerten", "a")  # by the tag alone
    assert (k["faelle"], k["auftraege_gelungen"], k["katalog"]) == (6, 6 / 6, str(tmp_path / "bibliothek.json"))
    falsch = endpunkt(lambda fall, body, nummer: completion(openai_nachricht([]))
                      if body["messages"][1]["content"] == BIB_FAELLE[2]["frage"] else bib_richtig(fall, body, nummer))
    vorbereitet(cli, *messung(falsch.url, "--tag", "b", *bibliothek(tmp_path)))
    status, out, err = cli("--vergleich", "a", "b")
    assert status == 0, err
    assert "0 cases better and 1 worse in b than in a (auftraege_gelungen over the 6 cases compared: " \
           f"{-100 / 6:.1f} points)" in out


def mit_werten(weeks, author):
    """The library answered right but for renew_loan's weeks (S1-1) and search_books' author (S2-2)."""
    def antwort(fall, body, nummer):
        frage = body["messages"][1]["content"]
        if frage in (BIB_FAELLE[0]["frage"], BIB_FAELLE[2]["frage"]):
            aufruf = ({"name": "renew_loan", "args": {"book_id": "B-1042", **weeks}} if frage == BIB_FAELLE[0]["frage"]
                      else {"name": "search_books", "args": {"author": author}})
            return completion(openai_nachricht([aufruf]), "tool_calls")
        return bib_richtig(fall, body, nummer)
    return antwort


@pytest.mark.parametrize("weeks, author", [({}, "Fontane"), ({"weeks": 4}, "Theodor Fontane"), ({"weeks": 4.0}, "Fontane")])
def test_andere_werte_und_weglassbare_passen(cli, endpunkt, tmp_path, weeks, author):
    """docs/katalog.md's S1-1 takes weeks left out or 4 (an integer, so 4.0 is 4), S2-2 either author it names."""
    status, out, err = cli(*messung(endpunkt(mit_werten(weeks, author)).url, *bibliothek(tmp_path)))
    assert (status, out.splitlines()[9]) == (0, "By stage: S1 100 %, S2 100 %, S3 100 %, S4 100 %, S5 100 %."), err


def test_andere_werte_im_fehlschlag(cli, endpunkt, tmp_path):
    status, out, err = cli(*messung(endpunkt(mit_werten({"weeks": 2}, "T. Fontane")).url, "--tag", "b",
                                    *bibliothek(tmp_path)))
    assert (status, out.splitlines()[9]) == (0, "By stage: S1 0 %, S2 50 %, S3 100 %, S4 100 %, S5 100 %."), err
    assert out.split("Failed (2):\n")[1].splitlines() == [
        "  S1-1  Renew the loan of the book B-1042.",
        '      expected: renew_loan(book_id="B-1042", weeks=4 or left out)',
        '      came:     renew_loan(book_id="B-1042", weeks=2)',
        "      differs:  renew_loan: weeks 2 instead of 4 or left out",
        "  S2-2  Find the books by Fontane.",
        '      expected: search_books(author=one of "Fontane", "Theodor Fontane")',
        '      came:     search_books(author="T. Fontane")',
        '      differs:  search_books: author "T. Fontane" instead of one of "Fontane", "Theodor Fontane"']
    k = json_lauf(cli, "--bewerten", "b")  # regraded from the file: the same two failures
    assert k["auftraege_gelungen"] == 4 / 6


def test_ein_lauf_auf_anderem_katalog_wird_nie_verglichen(cli, endpunkt, tmp_path):
    vorbereitet(cli, *messung(endpunkt(bib_richtig).url, "--tag", "a", *bibliothek(tmp_path)))
    anders = dict(BIB, eroeffnung=BIB["eroeffnung"] + " Be brief.")
    (tmp_path / "zwei").mkdir()
    vorbereitet(cli, *messung(endpunkt(bib_richtig).url, "--tag", "b", *bibliothek(tmp_path / "zwei", anders)))
    assert cli("--vergleich", "a", "b") == (
        2, "", "messen: a and b were measured on different catalogues or openings; they cannot be compared\n")


def test_der_verschobene_katalog(cli, endpunkt, tmp_path):
    vorbereitet(cli, *messung(endpunkt(bib_richtig).url, "--tag", "a", *bibliothek(tmp_path)))
    (tmp_path / "bibliothek.json").rename(tmp_path / "woanders.json")
    pfad = tmp_path / "ergebnisse" / "a.jsonl"
    assert cli("--bewerten", "a") == (
        2, "", f"messen: {pfad} was measured with a catalogue that is not found: {tmp_path / 'bibliothek.json'} "
               "(gone or unreadable), the built-in one (another); give the one it was measured with as --katalog "
               "FILE\n")
    k = json_lauf(cli, "--bewerten", "a", "--katalog", str(tmp_path / "woanders.json"))
    assert (k["faelle"], k["auftraege_gelungen"]) == (6, 6 / 6)


KAPUTT = [
    ("{", "messen: {p}: not JSON (Expecting property name enclosed in double quotes)"),
    ("[]", 'messen: {p}: not a JSON object with "werkzeuge" and "eroeffnung"'),
    ({"werkzeuge": [], "eroeffnung": "x"}, 'messen: {p}: "werkzeuge" must be a non-empty list of tools'),
    (dict(BIB, eroeffnung=" "), 'messen: {p}: "eroeffnung" must be a non-empty string (the system message)'),
    (dict(BIB, werkzeuge=[BIB["werkzeuge"][0], {"type": "function"}]),
     'messen: {p}: tool 2: not {"type": "function", "function": {...}}'),
    (dict(BIB, werkzeuge=[BIB["werkzeuge"][0], {"type": "function", "function": {"parameters": {}}}]),
     "messen: {p}: tool 2: no name"),
    (dict(BIB, werkzeuge=[BIB["werkzeuge"][0], BIB["werkzeuge"][0]]),
     "messen: {p}: tool 2: the name 'search_books' is taken (tool 1)"),
    (dict(BIB, werkzeuge=[{"type": "function", "function": dict(BIB["werkzeuge"][0]["function"], name="find books")}]),
     "messen: {p}: tool 1: the name \"find books\" is not 1 to 64 letters, digits, '_' or '-'"),
    (dict(BIB, werkzeuge=[{"type": "function", "function": dict(BIB["werkzeuge"][0]["function"],
                                                               parameters={"type": "string"})}]),
     'messen: {p}: tool 1: "parameters" is not an object schema ({"type": "object", "properties": {...}})'),
    (dict(BIB, werkzeuge=[{"type": "function", "function": dict(BIB["werkzeuge"][2]["function"], parameters={
        "type": "object", "properties": {}, "required": ["book_id"]})}]),
     "messen: {p}: tool 1: \"required\" names 'book_id', which is not in \"properties\""),
    (dict(BIB, ablenkung=[BIB["werkzeuge"][1]]), "messen: {p}: decoy 1: the name 'borrow_book' is taken (tool 2)"),
    (dict(BIB, synonyme={"werkzeuge": {"search_books": "x"}, "argumente": {}}),
     "messen: {p}: \"synonyme\" has no other name for 'borrow_book' in \"werkzeuge\""),
    ('{"werkzeuge": ' + "[" * 100_000 + "]" * 100_000 + "}", "messen: {p}: not JSON (nested too deep)"),
    ('{"werkzeuge": ' + "[" * 101 + "]" * 101 + "}",
     "messen: {p}: nested deeper than 100 levels; no tool's schema needs that"),
    ('{"werkzeuge": [' + "7" * 5000 + "]}", "messen: {p}: not JSON (a number of more than 4,300 digits)"),
]


@pytest.mark.parametrize("katalog, meldung", KAPUTT, ids=[
    "kein json", "keine karte", "keine werkzeuge", "keine eroeffnung", "ohne function", "ohne name", "doppelt",
    "name mit leerzeichen", "kein objektschema", "required fehlt", "ablenkung doppelt", "synonyme fehlt",
    "zu tief", "tiefer als 100", "zu lange zahl"])
def test_jeder_kaputte_katalog_ist_eine_zeile(cli, endpunkt, tmp_path, katalog, meldung):
    server = endpunkt(bib_richtig)
    argv = bibliothek(tmp_path, katalog)
    assert cli(*messung(server.url, *argv)) == (2, "", meldung.replace("{p}", str(tmp_path / "bibliothek.json")) + "\n")
    assert server.zahl() == 0


def test_die_faelle_werden_gegen_den_katalog_geprueft(cli, endpunkt, tmp_path):
    argv = bibliothek(tmp_path)
    (tmp_path / "bibliothek.jsonl").write_text(FAELLE_TEXT + json.dumps(BY_ID["S2-7"]) + "\n")
    server = endpunkt(bib_richtig)
    assert cli(*messung(server.url, *argv)) == (
        2, "", f"messen: {tmp_path / 'bibliothek.jsonl'}:7: expected tool 'update_contact' is not in the catalogue "
               f"{tmp_path / 'bibliothek.json'}\n")
    # every faulty line its own line: the library's four that call (S4 and S5 call nothing), not the chapter's S2-7
    assert cli(*messung(server.url, "--faelle", str(tmp_path / "bibliothek.jsonl"))) == (2, "", "".join(
        f"messen: {tmp_path / 'bibliothek.jsonl'}:{nr}: expected tool '{name}' is not in the built-in catalogue "
        "(give your own tools with --katalog FILE)\n"
        for nr, name in enumerate(["renew_loan", "borrow_book", "search_books", "renew_loan"], 1)))
    assert server.zahl() == 0


def test_ein_kleiner_katalog_kann_katalog_fehlt_nicht_sagen(cli, endpunkt, tmp_path):
    """Three small tools add far fewer tokens than 200: the counts cannot tell, and say so."""
    def antwort(fall, body, nummer):
        if body["messages"][1]["content"] == messen.PRUEF_FRAGE:
            return completion({"role": "assistant", "content": "OK"}, "length")
        return bib_richtig(fall, body, nummer)
    server = endpunkt(antwort)
    k = json_lauf(cli, *messung(server.url, "--tag", "a", *bibliothek(tmp_path)))
    assert k["diagnose"]["katalog_fehlt"] is None
    schwelle = messen.lade_katalog(tmp_path / "bibliothek.json").schwelle_s1(
        messen.lade_faelle(tmp_path / "bibliothek.jsonl", messen.lade_katalog(tmp_path / "bibliothek.json"))[0])
    assert cli("--bewerten", "a")[1].splitlines()[-1] == UNBEKANNT(
        f"the tools S1 leaves out add about {schwelle:.0f} tokens, fewer than counts vary by")
    assert messen.lade_katalog(tmp_path / "bibliothek.json").schwelle() == \
        200 * len(json.dumps(BIB["werkzeuge"])) / len(json.dumps(messen.KATALOG)) < messen.WENIGER_TOKENS
    status, out, err = cli("--pruefen", *messung(server.url, *bibliothek(tmp_path)))
    assert status == 0, err
    assert out.splitlines()[3].startswith("  ?     the catalogue reaches the prompt: cannot tell (prompt_tokens ")
    assert out.splitlines()[3].endswith(" with all three tools, 300 without: tools this small add too few tokens "
                                        "to tell)")
    assert out.splitlines()[4] == "  ok    a call comes back as tool_calls (S1-1)"


# ---------------------------------------------------------------------------
# --variante
# ---------------------------------------------------------------------------

def test_synonyme_mit_alten_namen_nur_s4_und_s5(cli, endpunkt, tmp_path):
    server = endpunkt(richtig)  # answers in the old names
    k = json_lauf(cli, *messung(server.url, "--tag", "syn", "--variante", "synonyme"))
    assert (k["auftraege_gelungen"], k["stillgehalten"], k["variante"]) == (14 / 42, 14 / 14, "synonyme")
    body = next(b for _, b in server.anfragen if b["messages"][1]["content"] == BY_ID["S2-7"]["frage"])
    assert namen(body) == list(messen.SYNONYME["werkzeuge"].values())
    assert "- A contact is addressed only by its person_id; a name is not enough." in body["messages"][0]["content"]
    edit = next(w["function"] for w in body["tools"] if w["function"]["name"] == "edit_person")
    assert list(edit["parameters"]["properties"]) == ["person_id", "state", "mail_address", "organisation"]
    assert edit["parameters"]["properties"]["state"]["enum"] == messen.STATUS  # enum values stay
    e = zeilen(tmp_path / "ergebnisse" / "syn.jsonl")[0]["einstellungen"]
    assert (e["variante"], e["umbenennung"]) == ("synonyme", messen.SYNONYME)
    a = bewertet(tmp_path / "ergebnisse" / "syn.jsonl")[("S2-7", 0)]
    assert a.note.aufrufe[0]["name"] == "update_contact (an old name)"


def test_synonyme_gelesen_wie_ohne_variante(cli, endpunkt, tmp_path):
    server = endpunkt(umbenannt_richtig)
    k = json_lauf(cli, *messung(server.url, "--tag", "syn", "--variante", "synonyme", "--weiter"))
    assert (k["auftraege_gelungen"], k["weiter"]) == (42 / 42, 10 / 10)
    s61 = next(b for _, b in server.anfragen if b["messages"][1]["content"] == BY_ID["S6-1"]["frage"])
    assert s61["messages"][2]["tool_calls"][0]["function"]["name"] == "add_person"
    assert json.loads(s61["messages"][3]["content"]) == {"person_id": "a71c3e92-5d0b-4f68-8e24-c9b61f0d3a57",
                                                         "full_name": "Lena Vogt", "organisation": "Brenner GmbH"}
    assert json_lauf(cli, "--bewerten", "syn")["auftraege_gelungen"] == 42 / 42  # regraded with the saved map


def test_reihenfolge_und_ablenkung_senden_was_sie_sagen(cli, endpunkt, tmp_path):
    server = endpunkt()
    k = json_lauf(cli, *messung(server.url, "--tag", "ord", "--variante", "reihenfolge"))
    assert k["auftraege_gelungen"] == 42 / 42
    gesendet = [namen(b) for _, b in server.anfragen]
    alle = [n for n in gesendet if len(n) == 11]
    assert len(alle) == 34 and all(n == alle[0] for n in alle)
    assert sorted(alle[0]) == sorted(messen.WERKZEUGE) and alle[0] != list(messen.WERKZEUGE)
    s1 = next(b for _, b in server.anfragen if b["messages"][1]["content"] == BY_ID["S1-1"]["frage"])
    assert namen(s1) == [n for n in alle[0] if n in BY_ID["S1-1"]["nur"]]
    e = zeilen(tmp_path / "ergebnisse" / "ord.jsonl")[0]["einstellungen"]
    assert (e["variante"], e["seed"]) == ("reihenfolge", messen.REIHENFOLGE_SEED)

    server = endpunkt()
    k = json_lauf(cli, *messung(server.url, "--tag", "abl", "--variante", "ablenkung"))
    assert (k["auftraege_gelungen"], k["stillgehalten"]) == (42 / 42, 14 / 14)
    koeder = ["list_companies", "cancel_event", "send_sms", "archive_contact"]
    assert all(namen(b)[:4] == koeder for _, b in server.anfragen)  # S1's requests too
    s1 = next(b for _, b in server.anfragen if b["messages"][1]["content"] == BY_ID["S1-1"]["frage"])
    assert namen(s1) == koeder + BY_ID["S1-1"]["nur"]
    assert zeilen(tmp_path / "ergebnisse" / "abl.jsonl")[0]["einstellungen"]["ablenkung"] == koeder


def test_kein_koeder_passt_je(cli):
    """No decoy is an expected call anywhere, and none takes a value an S5 case lacks from its question."""
    koeder = {w["function"]["name"] for w in messen.ABLENKUNG}
    assert len(koeder) >= 4 and not koeder & set(messen.WERKZEUGE)
    assert not any(s["name"] in koeder for f in messen.lade_faelle(ROOT / "faelle.jsonl")[0]
                   for s in f.art.weise.alle(f))


def test_eine_variante_bleibt_beim_tag(cli, endpunkt, tmp_path):
    kaputt = endpunkt(lambda fall, body, nummer: (400, {"error": {"message": "bad"}}, {})
                      if fall["id"] == "S3-1" else richtig(fall, body, nummer))
    vorbereitet(cli, *messung(kaputt.url, "--tag", "t", "--variante", "reihenfolge"), status=1)
    gut = endpunkt()
    assert cli(*messung(gut.url, "--tag", "t", "--variante", "ablenkung")) == (
        2, "", f"messen: {tmp_path / 'ergebnisse' / 't.jsonl'} was measured with variante \"reihenfolge\", not "
               "\"ablenkung\"; use another --tag, or --neu to measure anew (the old file is kept)\n")
    assert gut.zahl() == 0


def test_vergleich_plain_gegen_synonyme(cli, endpunkt):
    vorbereitet(cli, *messung(endpunkt().url, "--tag", "plain"))
    vorbereitet(cli, *messung(endpunkt().url, "--tag", "syn", "--variante", "synonyme"))
    status, out, err = cli("--vergleich", "plain", "syn")
    assert status == 0, err
    assert out.splitlines()[1].startswith("B: Model m, temp 0.0, n 1, tag syn, variant synonyme: 42 cases")
    assert urteil_von(out) == (
        f"0 cases better and 28 worse in syn than in plain (auftraege_gelungen over the 42 cases compared: "
        f"{-28 / 42 * 100:.1f} points); exact sign test p = {2 / 2 ** 28:.3g}: syn is worse beyond chance at 5 %. "
        f"By kind, Holm-corrected for the two: calling (S1-S3) 0 better, 28 worse, p = {2 * 2 / 2 ** 28:.3g}; "
        "holding still (S4, S5) 0 better, 0 worse, p = 1. syn is worse beyond chance at 5 % in calling.")
    assert ("The catalogues sent differ (the catalogue as written in plain, the variant synonyme in syn): the "
            "difference may be the catalogue's, not the model's; compare models under the same catalogue."
            ) in out.splitlines()
    vorbereitet(cli, *messung(endpunkt().url, "--tag", "ord", "--variante", "reihenfolge"))
    vorbereitet(cli, *messung(endpunkt().url, "--tag", "abl", "--variante", "ablenkung"))
    status, out, err = cli("--vergleich", "plain", "syn", "ord", "abl")
    assert status == 0, err
    assert "auftraege_gelungen        100 %     33.3 %      100 %      100 %" in out.splitlines()
    assert "falsches_werkzeug             0         37          0          0" in out.splitlines()


def test_eine_variante_ohne_karte_oder_koeder(cli, endpunkt, tmp_path):
    ohne = {k: v for k, v in BIB.items() if k not in ("synonyme", "ablenkung")}
    argv = bibliothek(tmp_path, ohne)
    server = endpunkt(bib_richtig)
    for variante, was in (("synonyme", '"synonyme": {"werkzeuge": {old: new}, "argumente": {old: new}}'),
                          ("ablenkung", '"ablenkung": a list of decoy tools')):
        assert cli(*messung(server.url, *argv, "--variante", variante)) == (
            2, "", f"messen: {tmp_path / 'bibliothek.json'}: --variante {variante} needs {was} in the catalogue "
                   "file\n")
    k = json_lauf(cli, *messung(server.url, *argv, "--variante", "reihenfolge", "--tag", "ord"))
    assert k["auftraege_gelungen"] == 6 / 6 and server.zahl() == 6


def test_die_bibliothek_unter_ihren_synonymen(cli, endpunkt, tmp_path):
    server = endpunkt(bib_richtig)  # the old names
    k = json_lauf(cli, *messung(server.url, *bibliothek(tmp_path), "--variante", "synonyme", "--tag", "s"))
    assert (k["auftraege_gelungen"], k["stillgehalten"]) == (2 / 6, 2 / 2)
    assert namen(server.anfragen[0][1]) == ["lend_item", "extend_lending"]  # S1-1, narrowed in the new names
    assert len(FAELLE) == 42


# ---------------------------------------------------------------------------
# A variant's identity, and renaming in any style
# ---------------------------------------------------------------------------

def chapter_datei(tmp_path, **mehr):
    """The chapter's catalogue as a file of one's own, with its synonyms and decoys (changed by mehr)."""
    katalog = {"werkzeuge": messen.KATALOG, "eroeffnung": messen.EROEFFNUNG, "synonyme": messen.SYNONYME,
               "ablenkung": messen.ABLENKUNG, **mehr}
    (tmp_path / "kapitel.json").write_text(json.dumps(katalog))
    return ["--katalog", str(tmp_path / "kapitel.json")]


@pytest.mark.parametrize("variante, aenderung, was", [
    ("synonyme", lambda: {"synonyme": {**messen.SYNONYME, "werkzeuge": {**messen.SYNONYME["werkzeuge"],
                                                                       "get_contact": "look_up_person"}}},
     "another renaming map (synonyme)"),
    ("ablenkung", lambda: {"ablenkung": [dict(messen.ABLENKUNG[0], function=dict(
        messen.ABLENKUNG[0]["function"], description="List all companies."))] + messen.ABLENKUNG[1:]},
     "other tools or opening as sent (the renaming map or the decoys changed)"),
])
def test_ein_fortgesetzter_lauf_mit_geaenderter_karte_wird_abgelehnt(cli, endpunkt, tmp_path, variante, aenderung,
                                                                    was):
    kaputt = endpunkt(lambda fall, body, nummer: (400, {"error": {"message": "bad"}}, {})
                      if fall["id"] == "S3-1" else umbenannt_richtig(fall, body, nummer))
    vorbereitet(cli, *messung(kaputt.url, "--tag", "t", "--variante", variante, *chapter_datei(tmp_path)), status=1)
    gut = endpunkt(umbenannt_richtig)
    assert cli(*messung(gut.url, "--tag", "t", "--variante", variante, *chapter_datei(tmp_path, **aenderung()))) == (
        2, "", f"messen: {tmp_path / 'ergebnisse' / 't.jsonl'} was measured with {was}; use another --tag, or --neu "
               "to measure anew (the old file is kept)\n")
    assert gut.zahl() == 0


def test_namen_in_jeder_schreibweise_werden_umbenannt(tmp_path):
    werkzeuge = [{"type": "function", "function": {"name": "lookupBook", "description": None, "parameters": {
        "type": "object", "properties": {"bookId": {"type": "string", "description": "The bookId, as lookupBook "
                                                                                      "takes it."},
                                         "title": {"type": "string", "description": None}},
        "required": ["bookId"]}}},
        {"type": "function", "function": {"name": "lend", "parameters": {"type": "object", "properties": {}}}}]
    eroeffnung = "Call lookupBook with a bookId, or lend; lookupBooks and lend-all are no tools. Give the title."
    synonyme = {"werkzeuge": {"lookupBook": "findVolume", "lend": "borrow"},
                "argumente": {"bookId": "volumeId", "title": "heading"}}
    datei = tmp_path / "b.json"
    datei.write_text(json.dumps({"werkzeuge": werkzeuge, "eroeffnung": eroeffnung, "synonyme": synonyme}))
    k = messen.variante(messen.lade_katalog(datei), "synonyme")
    assert k.eroeffnung == ("Call findVolume with a volumeId, or borrow; lookupBooks and lend-all are no tools. "
                            "Give the title.")  # a prose word stays; a name inside another name stays
    erstes = k.werkzeuge[0]["function"]
    assert (erstes["name"], erstes["description"]) == ("findVolume", None)
    assert erstes["parameters"]["properties"] == {
        "volumeId": {"type": "string", "description": "The volumeId, as findVolume takes it."},
        "heading": {"type": "string", "description": None}}
    assert "description" not in k.werkzeuge[1]["function"]


# ---------------------------------------------------------------------------
# Values by their schema: numbers as numbers, booleans as booleans, strings as the chapter compares them
# ---------------------------------------------------------------------------

HEIZUNG = {"werkzeuge": [{"type": "function", "function": {
    "name": "set_heating", "description": "Set the heating.", "parameters": {"type": "object", "properties": {
        "degrees": {"type": "number"}, "eco": {"type": "boolean"},
        "room": {"type": "string", "enum": ["kitchen", "office"]}}, "required": ["degrees", "room"]}}}],
    "eroeffnung": "You control the heating."}
HEIZ_FALL = {"id": "S2-1", "stufe": "S2", "frage": "Heat the office to 21 degrees, in eco mode.",
             "erwartet": [{"name": "set_heating", "args": {"degrees": 21, "eco": True, "room": "office"}}]}


def heizung(tmp_path, fall=HEIZ_FALL):
    (tmp_path / "h.json").write_text(json.dumps(HEIZUNG))
    (tmp_path / "h.jsonl").write_text(json.dumps(fall) + "\n")
    return ["--katalog", str(tmp_path / "h.json"), "--faelle", str(tmp_path / "h.jsonl")]


@pytest.mark.parametrize("argumente, gelungen", [
    ('{"degrees": 21.0, "eco": true, "room": "office"}', 1.0),   # 21.0 is 21
    ('{"degrees": 21, "eco": true, "room": " office"}', 1.0),    # a string stripped, as the chapter's passt does
    ('{"degrees": "21", "eco": true, "room": "office"}', 0.0),   # the string "21" is no number
    ('{"degrees": 21, "eco": "true", "room": "office"}', 0.0),   # nor "true" a boolean
    ('{"degrees": 21.5, "eco": true, "room": "office"}', 0.0),
])
def test_werte_nach_ihrem_schema(cli, endpunkt, tmp_path, argumente, gelungen):
    server = endpunkt(lambda fall, body, nummer: completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c0", "type": "function", "function": {"name": "set_heating", "arguments": argumente}}]}, "tool_calls"))
    k = json_lauf(cli, *messung(server.url, *heizung(tmp_path)))
    assert k["auftraege_gelungen"] == gelungen
    assert k["fehlerarten"]["falscher_wert"] == (1 - gelungen)


@pytest.mark.parametrize("args, warum", [
    ({"degrees": 21, "room": "garage"}, "the expected value of 'room' in set_heating is \"garage\", not one of its "
                                        "enum (\"kitchen\", \"office\")"),
    ({"degrees": "21", "room": "office"}, "the expected value of 'degrees' in set_heating is \"21\", not of the type "
                                          "number its schema says; write it as 21, without quotes"),
    ({"degrees": 21, "eco": "true", "room": "office"}, "the expected value of 'eco' in set_heating is \"true\", not "
                                                       "of the type boolean its schema says; write it as true, without "
                                                       "quotes"),
    ({"degrees": 21, "eco": "yes", "room": "office"}, "the expected value of 'eco' in set_heating is \"yes\", not of "
                                                      "the type boolean its schema says"),
])
def test_ein_erwarteter_wert_den_kein_modell_treffen_kann(cli, tmp_path, args, warum):
    argv = heizung(tmp_path, dict(HEIZ_FALL, erwartet=[{"name": "set_heating", "args": args}]))
    assert cli("--selbsttest", *argv) == (2, "", f"messen: {tmp_path / 'h.jsonl'}:1: {warum}\n")


BUECHER = {"werkzeuge": [{"type": "function", "function": {
    "name": "lend_books", "description": "Lend books.", "parameters": {"type": "object", "properties": {
        "book_ids": {"type": "array", "items": {"type": "string"}}, "member": {"type": "object"}},
        "required": ["book_ids"]}}}], "eroeffnung": "You run the library."}
BUCH_FALL = {"id": "S2-1", "stufe": "S2", "frage": "Lend B-1 and B-2 to member 7.",
             "erwartet": [{"name": "lend_books", "args": {"book_ids": ["B-1", "B-2"], "member": {"id": 7}}}]}


@pytest.mark.parametrize("argumente, gelungen", [
    ({"book_ids": ["B-1", "B-2"], "member": {"id": 7}}, 1.0),
    ({"book_ids": [" B-1", "B-2 "], "member": {"id": 7.0}}, 1.0),  # strings stripped, 7.0 is 7, as for a scalar
    ({"book_ids": "['B-1', 'B-2']", "member": {"id": 7}}, 0.0),  # the Python repr of the list, as a string
    ({"book_ids": '["B-1", "B-2"]', "member": {"id": 7}}, 0.0),  # the list as JSON text: a string, not a list
    ({"book_ids": ["B-2", "B-1"], "member": {"id": 7}}, 0.0),  # another order is another list
    ({"book_ids": ["B-1", "B-2"], "member": "{'id': 7}"}, 0.0),  # an object's repr
    ({"book_ids": ["B-1", "B-2"], "member": {"id": True}}, 0.0),  # true is no 7, nor 1
])
def test_listen_und_objekte_nach_ihrem_typ(cli, endpunkt, tmp_path, argumente, gelungen):
    """An array or an object is compared as what its schema says, all the way down: a string is not a list."""
    (tmp_path / "b.json").write_text(json.dumps(BUECHER))
    (tmp_path / "b.jsonl").write_text(json.dumps(BUCH_FALL) + "\n")
    server = endpunkt(lambda fall, body, nummer: completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c0", "type": "function", "function": {"name": "lend_books", "arguments": json.dumps(argumente)}}]},
        "tool_calls"))
    k = json_lauf(cli, *messung(server.url, "--katalog", str(tmp_path / "b.json"), "--faelle",
                                str(tmp_path / "b.jsonl")))
    assert (k["auftraege_gelungen"], k["fehlerarten"]["falscher_wert"]) == (gelungen, 1 - gelungen)


def test_eine_liste_ohne_typ_im_schema_ist_eine_liste(cli, endpunkt, tmp_path):
    """Where the schema names no type, an expected list is compared as a list, never as its text."""
    katalog = json.loads(json.dumps(BUECHER))
    katalog["werkzeuge"][0]["function"]["parameters"]["properties"]["book_ids"] = {"description": "The books."}
    (tmp_path / "b.json").write_text(json.dumps(katalog))
    (tmp_path / "b.jsonl").write_text(json.dumps(BUCH_FALL) + "\n")
    for ids, gelungen in ((["B-1", "B-2"], 1.0), ("['B-1', 'B-2']", 0.0)):
        server = endpunkt(lambda fall, body, nummer, ids=ids: completion({"role": "assistant", "content": None,
            "tool_calls": [{"id": "c0", "type": "function", "function": {"name": "lend_books", "arguments": json.dumps(
                {"book_ids": ids, "member": {"id": 7}})}}]}, "tool_calls"))
        k = json_lauf(cli, *messung(server.url, "--katalog", str(tmp_path / "b.json"), "--faelle",
                                    str(tmp_path / "b.jsonl"), "--tag", f"t{gelungen}"))
        assert k["auftraege_gelungen"] == gelungen
