"""S7, the whole job: a loop against the simulated CRM, graded on the end state, over loopback HTTP."""

import json

import pytest

import messen
from conftest import (BY_ID, GANZ_FAELLE, completion, messung, openai_nachricht,
                      richtig, vorbereitet, zeilen)

REFERENZ_ANFRAGEN = sum(len(f["loesung"]) for f in GANZ_FAELLE)


def json_lauf(cli, *argv):
    status, out, err = cli(*argv, "--json")
    assert status == 0, err
    return json.loads(out)


def schritt(body):
    """How many answers the conversation holds: the index of the step asked."""
    return sum(m["role"] == "assistant" for m in body["messages"])


# ---------------------------------------------------------------------------
# The cases and the world
# ---------------------------------------------------------------------------

def ergebnisse_der_referenz(fall):
    """Replay loesung on its world: the results of each step."""
    welt, schritte = messen.welt_von(fall), []
    for aufrufe in fall["loesung"]:
        schritte.append([messen.fuehre_aus(welt, c["name"], c["args"]) for c in aufrufe])
    return schritte


@pytest.mark.parametrize("fall", GANZ_FAELLE, ids=lambda f: f["id"])
def test_jede_loesung_laesst_sich_abspielen(fall):
    schritte = ergebnisse_der_referenz(fall)
    fehler = sum("error" in e for s in schritte for e in s)
    assert fehler == fall.get("fehler", 0)
    frueher, aus_ergebnis = fall["frage"] + messen.EROEFFNUNG, 0
    for aufrufe, ergebnisse in zip(fall["loesung"], schritte):
        for c in aufrufe:
            for wert in c["args"].values():
                assert wert in frueher, (fall["id"], c, wert)  # in the question, the opening or an earlier result
                aus_ergebnis += wert not in fall["frage"] + messen.EROEFFNUNG
        frueher += json.dumps(ergebnisse, ensure_ascii=False)
    for wert in fall.get("antwort", []):  # what the closing answer must name, only a result gives
        assert wert in frueher and wert not in fall["frage"], (fall["id"], wert)
    # a later step needs what only an earlier result gives, or the job goes on another way after an error
    assert aus_ergebnis > 0 or fehler > 0
    assert sum(bool(s) for s in fall["loesung"]) >= 2 and fall["loesung"][-1] == []


def test_die_faelle_decken_ab_was_verlangt_ist():
    assert len(GANZ_FAELLE) >= 10
    assert any(len(s) > 1 for f in GANZ_FAELLE for s in f["loesung"])                  # several calls in one step
    assert any(f.get("fehler") for f in GANZ_FAELLE)                                   # a tool reports an error
    enden_lesend = [f for f in GANZ_FAELLE if messen.welt_nach(f) == messen.kanonisch(messen.welt_von(f))]
    assert len(enden_lesend) >= 1                                                      # the answer is text


def test_die_welt_ist_deterministisch_und_lehnt_ab_ohne_zu_aendern():
    fall = BY_ID["S7-5"]
    welt = messen.welt_von(fall)
    vorher = messen.kanonisch(messen.welt_von(fall))
    assert messen.fuehre_aus(welt, "book_room", {"room": "konferenz", "date": "2026-03-20", "start": "10:00",
                                                 "end": "11:00"}) == {
        "error": "the room konferenz is taken on 2026-03-20 from 09:30 to 10:30"}
    for name, args, fehler in [
        ("get_contact", {"contact_id": "nobody"}, "no contact has the id nobody"),
        ("update_contact", {"contact_id": "x", "status": "vip"}, "status must be one of lead, interessent, kunde, inaktiv"),
        ("create_event", {"calendar": "team", "title": "t", "date": "tomorrow", "start": "10:00", "end": "11:00"},
         "the date tomorrow is not YYYY-MM-DD"),
        ("send_email", {"to": "nobody", "subject": "s", "body": "b"}, "nobody is not an email address"),
        ("delete_contact", {}, "delete_contact needs contact_id"),
        ("list_contacts", {"name": "Anna"}, "list_contacts has no argument name"),
        ("fly", {}, "there is no tool fly"),
    ]:
        assert messen.fuehre_aus(welt, name, args) == {"error": fehler}
    assert messen.kanonisch(welt) == vorher
    # two creations in another order give the same ids
    a, b = messen.welt_von(fall), messen.welt_von(fall)
    for welt_, reihe in ((a, ("X", "Y")), (b, ("Y", "X"))):
        for name in reihe:
            messen.fuehre_aus(welt_, "create_contact", {"name": name})
    assert messen.kanonisch(a) == messen.kanonisch(b)


# ---------------------------------------------------------------------------
# The loop, end to end
# ---------------------------------------------------------------------------

def test_ein_modell_das_die_referenz_geht(cli, endpunkt, tmp_path):
    server = endpunkt()  # richtig answers each step with the reference's next
    status, out, err = cli(*messung(server.url, "--ganz"))
    assert status == 0, err
    assert ("erledigt             100 %   (S7 jobs done: the reference's end state, then an answer; 3 requests per "
            "job, the reference 3, medians)") in out.splitlines()
    assert "By stage: S1 100 %, S2 100 %, S3 100 %, S4 100 %, S5 100 %, S7 100 %." in out.splitlines()
    assert server.zahl() == 42 + REFERENZ_ANFRAGEN  # one request per step
    k = json_lauf(cli, "--bewerten", "m")  # regraded from the file, no server
    assert (k["erledigt"], k["auftraege_gelungen"], k["anfragen_je_job"]) == (1.0, 1.0, {"median": 3, "referenz": 3})
    s71 = next(a for a in zeilen(tmp_path / "ergebnisse" / "m.jsonl")[1:] if a["id"] == "S7-1")
    assert [len(s["ergebnisse"]) for s in s71["verlauf"]] == [1, 1, 0]
    assert s71["verlauf"][0]["ergebnisse"][0]["contacts"][0]["name"] == "Anna Berg"


def test_gestreamt_und_unter_synonymen_ebenso(cli, endpunkt):
    k = json_lauf(cli, *messung(endpunkt().url, "--ganz", "--stream", "--tag", "s"))
    assert k["erledigt"] == 1.0

    def umbenannt(fall, body, nummer):  # a model that reads the renamed catalogue
        antwort = richtig(fall, body, nummer)
        for c in antwort["choices"][0]["message"].get("tool_calls") or []:
            c["function"]["name"] = messen.SYNONYME["werkzeuge"][c["function"]["name"]]
            c["function"]["arguments"] = json.dumps({messen.SYNONYME["argumente"][a]: v for a, v in
                                                     json.loads(c["function"]["arguments"]).items()})
        return antwort
    server = endpunkt(umbenannt)
    k = json_lauf(cli, *messung(server.url, "--ganz", "--variante", "synonyme", "--tag", "syn"))
    assert (k["erledigt"], k["auftraege_gelungen"]) == (1.0, 1.0)
    # the results came back in the new names too
    zweiter = next(b for _, b in server.anfragen if b["messages"][1]["content"] == BY_ID["S7-1"]["frage"]
                   and len(b["messages"]) > 2)
    assert "person_id" in zweiter["messages"][-1]["content"] and "contact_id" not in zweiter["messages"][-1]["content"]


def test_ein_modell_das_nach_dem_ersten_schritt_aufhoert(cli, endpunkt):
    def erster_schritt(fall, body, nummer):
        if fall["stufe"] != "S7":
            return richtig(fall, body, nummer)
        soll = fall["loesung"][0] if schritt(body) == 0 else []
        return completion(openai_nachricht(soll), "tool_calls" if soll else "stop")
    status, out, err = cli(*messung(endpunkt(erster_schritt).url, "--ganz"))
    assert status == 0, err
    k = json_lauf(cli, "--bewerten", "m")
    assert (k["erledigt"], k["fehlerarten"]["falscher_zustand"], k["fehlgeschlagen"][:1]) == (0.0, 10, ["S7-1"])
    assert "      differs:   the end state differs: contact Anna Berg: status \"interessent\" instead of \"kunde\"" \
        in out.splitlines()


def test_ein_modell_das_seinen_ersten_schritt_wiederholt(cli, endpunkt):
    def immer_wieder(fall, body, nummer):
        if fall["stufe"] != "S7":
            return richtig(fall, body, nummer)
        return completion(openai_nachricht(fall["loesung"][0]), "tool_calls")
    server = endpunkt(immer_wieder)
    status, out, err = cli(*messung(server.url, "--ganz"))
    assert status == 0, err  # the run ends
    k = json_lauf(cli, "--bewerten", "m")
    assert (k["erledigt"], k["fehlerarten"]["schrittgrenze"]) == (0.0, 10)
    assert server.zahl() == 42 + sum(max(6, 2 * len(f["loesung"])) for f in GANZ_FAELLE)  # twice the reference, 6 at least


def test_ohne_den_schalter_bleibt_alles_beim_kapitel(cli, endpunkt):
    server = endpunkt()
    k = json_lauf(cli, *messung(server.url))
    assert (server.zahl(), k["erledigt"], k["anfragen_je_job"], list(k["stufen"])) == (
        42, None, None, ["S1", "S2", "S3", "S4", "S5"])


def test_ein_abgebrochener_job_wird_von_vorn_gefragt(cli, endpunkt, tmp_path):
    def bricht(fall, body, nummer):
        if fall["id"] == "S7-3" and schritt(body) == 1 and nummer == 2:
            return 400, {"error": {"message": "bad"}}, {}
        return richtig(fall, body, nummer)
    server = endpunkt(bricht)
    vorbereitet(cli, *messung(server.url, "--ganz", "--stufen", "S7"), status=1)
    gut = endpunkt()
    k = json_lauf(cli, *messung(gut.url, "--ganz", "--stufen", "S7"))
    ab = [f["id"] for f in GANZ_FAELLE].index("S7-3")  # S7-1 and S7-2 were saved; S7-3 whole again, and the rest
    assert k["erledigt"] == 1.0 and gut.zahl() == sum(len(f["loesung"]) for f in GANZ_FAELLE[ab:])


def test_eigener_katalog_ohne_s7(cli, tmp_path):
    (tmp_path / "k.json").write_text(json.dumps({"werkzeuge": messen.KATALOG, "eroeffnung": "x"}))
    assert cli("--selbsttest", "--ganz", "--katalog", str(tmp_path / "k.json")) == (
        2, "", f"messen: --ganz runs S7 against a simulated CRM of the chapter's eleven tools; {tmp_path / 'k.json'} "
               "has no simulation: measure your own tools without --ganz\n")


def test_der_selbsttest_und_der_vergleich_mit_s7(cli, endpunkt):
    status, out, err = cli("--selbsttest", "--ganz")
    assert status == 0, err
    vorbereitet(cli, *messung(endpunkt().url, "--ganz", "--tag", "a"))

    def s71_falsch(fall, body, nummer):
        if fall["id"] == "S7-1":
            return completion(openai_nachricht([]))
        return richtig(fall, body, nummer)
    vorbereitet(cli, *messung(endpunkt(s71_falsch).url, "--ganz", "--tag", "b"))
    v = json.loads(cli("--vergleich", "a", "b", "--json")[1])
    assert (v["schlechter"], v["mit_ganz"], v["b_kennzahlen"]["erledigt"]) == (["S7-1"], True, 9 / 10)
    status, out, err = cli("--vergleich", "a", "b")
    assert "over the 52 cases compared" in out and "auftraege_gelungen and erledigt" in out


def test_wiederholt_parallel_gemischt_abgelehnt_bild_und_markdown(cli, endpunkt, tmp_path):
    server = endpunkt()
    k = json_lauf(cli, *messung(server.url, "--ganz", "--stufen", "S7", "--n", "2", "--parallel", "3"))
    assert (k["erledigt"], k["ausgaben"], server.zahl()) == (1.0, 20, 2 * REFERENZ_ANFRAGEN)  # steps of a job in order
    status, out, err = cli(*messung(server.url, "--n", "2"))  # the same tag without --ganz
    assert status == 2 and "was measured with ganz true, not false" in err
    status, md, err = cli("--bewerten", "m", "--markdown")
    assert "| erledigt | 100 % |" in md.splitlines() and "| S7 | 100 % |" in md.splitlines()
    svg = tmp_path / "s7.svg"
    assert cli("--bewerten", "m", "--bild", str(svg))[0] == 0
    assert "whole job" in svg.read_text()
