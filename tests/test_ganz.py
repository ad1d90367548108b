"""S7, the whole job: a loop against the simulated CRM, graded on the end state, over loopback HTTP."""

import json
import uuid

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
    welt, schritte = messen.welt_von(messen.als_fall(fall)), []
    for aufrufe in fall["loesung"]:
        schritte.append([messen.fuehre_aus(welt, c["name"], c["args"]) for c in aufrufe])
    return schritte


SCHREIBEND = {"create_contact", "update_contact", "delete_contact", "add_note", "create_event", "book_room",
              "send_email"}


@pytest.mark.parametrize("fall", GANZ_FAELLE, ids=lambda f: f["id"])
def test_jede_loesung_laesst_sich_abspielen(fall):
    schritte = ergebnisse_der_referenz(fall)
    fehler = sum("error" in e for s in schritte for e in s)
    assert fehler == fall.get("fehler", 0)
    frueher, aus_ergebnis = fall["frage"] + messen.EROEFFNUNG_GANZ, 0
    for aufrufe, ergebnisse in zip(fall["loesung"], schritte):
        for c in aufrufe:
            for wert in c["args"].values():
                assert wert in frueher, (fall["id"], c, wert)  # in the question, the opening or an earlier result
                aus_ergebnis += c["name"] in SCHREIBEND and wert not in fall["frage"] + messen.EROEFFNUNG_GANZ
        frueher += json.dumps(ergebnisse, ensure_ascii=False)
    for wert in fall.get("antwort", []):  # what the closing answer must name, only a result gives
        assert wert in frueher and wert not in fall["frage"], (fall["id"], wert)
        aus_ergebnis += 1
    # subtle: what makes a guess fail: every job writes or names a value that only a result gives
    assert aus_ergebnis > 0
    assert sum(bool(s) for s in fall["loesung"]) >= 2 and fall["loesung"][-1] == []


def test_die_faelle_decken_ab_was_verlangt_ist():
    assert len(GANZ_FAELLE) >= 24
    assert any(len(s) > 1 for f in GANZ_FAELLE for s in f["loesung"])                  # several calls in one step
    assert len([f for f in GANZ_FAELLE if f.get("fehler")]) >= 2                       # a refused call, recovered
    assert len([f for f in GANZ_FAELLE if f.get("antwort")]) >= 3                      # a value to report
    assert all(3 <= len(f["loesung"]) <= 5 for f in GANZ_FAELLE)                       # 3 to 5 requests
    assert sum(len(f["loesung"]) >= 4 for f in GANZ_FAELLE) >= 5
    # the room asked first: free in as many jobs as it is taken in
    erster = [f for f in GANZ_FAELLE if "if konferenz is taken" in f["frage"] or "if besprechung is taken" in f["frage"]]
    assert sorted(bool(f.get("fehler")) for f in erster) == [False, False, True, True]
    # no address follows from a name: a guess of first.last@example.com never meets one
    adressen = {k["email"] for f in GANZ_FAELLE for k in f["welt"].get("kontakte", [])}
    geraten = {k["name"].lower().replace(" ", ".") + "@example.com" for f in GANZ_FAELLE
               for k in f["welt"].get("kontakte", [])}
    assert adressen and not adressen & geraten


def test_die_ids_sind_gueltige_uuids_und_eine_je_anlage():
    welt = messen.welt_von(messen.als_fall(BY_ID["S7-2"]))
    ids = [messen.fuehre_aus(welt, "create_contact", {"name": "X"})["contact_id"] for _ in range(2)]
    assert ids[0] != ids[1]  # created twice is there twice
    for i in ids + [k["contact_id"] for f in GANZ_FAELLE for k in f["welt"].get("kontakte", [])]:
        u = uuid.UUID(i)
        assert (str(u), u.version, u.variant) == (i, 4, uuid.RFC_4122)


# ---------------------------------------------------------------------------
# The world's rules: each one row, and a change of a rule by one step fails its row
# ---------------------------------------------------------------------------

TAG, RAUM = "2026-03-20", {"termine": [{"calendar": "raum", "title": "konferenz", "date": "2026-03-20",
                                       "start": "10:00", "end": "11:00"}],
                          "kontakte": [{"contact_id": "5b2c9e14-7a3f-4d81-b6e0-2f9a8c1d4e73", "name": "Anna Berg"}]}
ANNA = "5b2c9e14-7a3f-4d81-b6e0-2f9a8c1d4e73"


@pytest.mark.parametrize("name, args, ergebnis", [
    # a room is taken by an overlap only: a booking that ends when another starts is no clash, either way round
    ("book_room", {"room": "konferenz", "date": TAG, "start": "11:00", "end": "12:00"},
     {"booked": {"room": "konferenz", "date": TAG, "start": "11:00", "end": "12:00"}}),
    ("book_room", {"room": "konferenz", "date": TAG, "start": "09:00", "end": "10:00"},
     {"booked": {"room": "konferenz", "date": TAG, "start": "09:00", "end": "10:00"}}),
    ("book_room", {"room": "konferenz", "date": TAG, "start": "10:59", "end": "12:00"},
     {"error": "the room konferenz is taken on 2026-03-20 from 10:00 to 11:00"}),
    ("book_room", {"room": "konferenz", "date": TAG, "start": "09:00", "end": "10:01"},
     {"error": "the room konferenz is taken on 2026-03-20 from 10:00 to 11:00"}),
    ("book_room", {"room": "workshop", "date": TAG, "start": "10:00", "end": "11:00"},   # another room is free
     {"booked": {"room": "workshop", "date": TAG, "start": "10:00", "end": "11:00"}}),
    ("book_room", {"room": "konferenz", "date": "2026-03-21", "start": "10:00", "end": "11:00"},  # another day
     {"booked": {"room": "konferenz", "date": "2026-03-21", "start": "10:00", "end": "11:00"}}),
    ("book_room", {"room": "kantine", "date": TAG, "start": "10:00", "end": "11:00"},
     {"error": "room must be one of besprechung, konferenz, workshop"}),
    ("create_event", {"calendar": "team", "title": "t", "date": TAG, "start": "11:00", "end": "11:00"},
     {"error": "the start 11:00 is not before the end 11:00"}),
    ("create_event", {"calendar": "team", "title": "t", "date": TAG, "start": "23:59", "end": "24:00"},
     {"error": "the time 24:00 is not HH:MM"}),
    ("create_event", {"calendar": "team", "title": "t", "date": "2026-3-20", "start": "10:00", "end": "11:00"},
     {"error": "the date 2026-3-20 is not YYYY-MM-DD"}),
    ("create_event", {"calendar": "Team", "title": "t", "date": TAG, "start": "10:00", "end": "11:00"},
     {"error": "calendar must be one of team, vertrieb, raum, privat"}),
    ("create_event", {"calendar": "team", "title": " Kick-off ", "date": TAG, "start": "10:00", "end": "11:00"},
     {"created": {"calendar": "team", "title": "Kick-off", "date": TAG, "start": "10:00", "end": "11:00"}}),
    ("get_events", {"calendar": "raum", "date": TAG}, {"events": [{"title": "konferenz", "start": "10:00",
                                                                   "end": "11:00"}]}),
    ("get_events", {"calendar": "team", "date": TAG}, {"events": []}),
    ("update_contact", {"contact_id": ANNA, "status": "vip"},
     {"error": "status must be one of lead, interessent, kunde, inaktiv"}),
    ("update_contact", {"contact_id": ANNA}, {"error": "update_contact needs a field to change: status, email or company"}),
    ("update_contact", {"contact_id": ANNA, "status": "kunde"}, {"contact_id": ANNA, "updated": {"status": "kunde"}}),
    ("update_contact", {"contact_id": ANNA, "status": 3}, {"error": "status must be a string"}),
    ("get_contact", {"contact_id": ANNA.upper()}, {"error": f"no contact has the id {ANNA.upper()}"}),
    ("get_contact", {"contact_id": f" {ANNA} "}, {"contact_id": ANNA, "name": "Anna Berg", "email": None,
                                                  "company": None, "status": "lead", "notes": []}),
    ("delete_contact", {}, {"error": "delete_contact needs contact_id"}),
    ("list_contacts", {"name": "Anna"}, {"error": "list_contacts has no argument name"}),
    ("list_contacts", {"status": "kunde"}, {"contacts": []}),
    ("send_email", {"to": "nobody", "subject": "s", "body": "b"}, {"error": "nobody is not an email address"}),
    ("send_email", {"to": "a b@c.de", "subject": "s", "body": "b"}, {"error": "a b@c.de is not an email address"}),
    ("send_email", {"to": "a@c.de", "subject": "s", "body": "b"}, {"sent": True}),
    ("fly", {}, {"error": "there is no tool fly"}),
    ("get_contact", ["x"], {"error": "the arguments are not a JSON object"}),
])
def test_jede_regel_der_welt(name, args, ergebnis):
    fall = messen.Fall("x", welt=RAUM)
    welt = messen.welt_von(fall)
    vorher = messen.kanonisch(messen.welt_von(fall), fall)
    assert messen.fuehre_aus(welt, name, args) == ergebnis
    if "error" in ergebnis or name.startswith(("get", "list")):
        assert messen.kanonisch(welt, fall) == vorher  # refused or read: nothing changed


def test_unter_synonymen_nennt_die_welt_die_gesendeten_namen():
    namen = {**messen.SYNONYME["argumente"], **messen.SYNONYME["werkzeuge"]}
    welt = messen.welt_von(messen.Fall("x", welt=RAUM))
    u, s = messen.SYNONYME["werkzeuge"]["update_contact"], messen.SYNONYME["argumente"]["status"]
    e, c = messen.SYNONYME["argumente"]["email"], messen.SYNONYME["argumente"]["company"]
    assert messen.fuehre_aus(welt, "update_contact", {"contact_id": ANNA}, namen) == {
        "error": f"{u} needs a field to change: {s}, {e} or {c}"}
    assert messen.fuehre_aus(welt, "list_contacts", {"nickname": "x"}, namen) == {
        "error": f"{messen.SYNONYME['werkzeuge']['list_contacts']} has no argument nickname"}
    assert messen.fuehre_aus(welt, "update_contact", {"contact_id": ANNA, "status": "x"}, namen) == {
        "error": f"{s} must be one of lead, interessent, kunde, inaktiv"}


# ---------------------------------------------------------------------------
# The loop, end to end
# ---------------------------------------------------------------------------

def test_ein_modell_das_die_referenz_geht(cli, endpunkt, tmp_path):
    server = endpunkt()  # richtig answers each step with the reference's next
    status, out, err = cli(*messung(server.url, "--ganz"))
    assert status == 0, err
    assert ("erledigt             100 %   (95 % interval 87.1 % to 100 %; S7 jobs done: the reference's end state, "
            "then an answer; 3 requests per job, the reference 3, medians)") in out.splitlines()  # 26 of 26
    assert "By stage: S1 100 %, S2 100 %, S3 100 %, S4 100 %, S5 100 %, S7 100 %." in out.splitlines()
    assert server.zahl() == 42 + REFERENZ_ANFRAGEN  # one request per step
    k = json_lauf(cli, "--bewerten", "m")  # regraded from the file, no server
    assert (k["erledigt"], k["auftraege_gelungen"], k["anfragen_je_job"]) == (1.0, 1.0, {"median": 3, "referenz": 3})
    s71 = next(a for a in zeilen(tmp_path / "ergebnisse" / "m.jsonl")[1:] if a["id"] == "S7-1")
    assert [(z["zweck"], len(z["ergebnisse"])) for z in s71["zuege"]] == [("schritt", 1), ("schritt", 1), ("schritt", 0)]
    assert s71["zuege"][0]["ergebnisse"][0]["contacts"][0]["name"] == "Anna Berg"


def test_gestreamt_und_unter_synonymen_ebenso(cli, endpunkt):
    k = json_lauf(cli, *messung(endpunkt().url, "--ganz", "--stream", "--tag", "s"))
    assert k["erledigt"] == 1.0
    for variante in ("reihenfolge", "ablenkung"):  # the tools in another order, decoys beside them
        k = json_lauf(cli, *messung(endpunkt().url, "--ganz", "--stufen", "S7", "--variante", variante,
                                    "--tag", variante))
        assert k["erledigt"] == 26 / 26

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
    assert (k["erledigt"], k["fehlerarten"]["falscher_zustand"], k["fehlgeschlagen"][:1]) == (0.0, 26, ["S7-1"])
    assert "      differs:   the end state differs: contact Anna Berg: status \"interessent\" instead of \"kunde\"" \
        in out.splitlines()
    assert ('      came:      list_contacts(company="Nordwind GmbH") | the answer "Which contact do you mean? Please '
            'give me its contact_id."') in out.splitlines()


def test_ein_modell_das_seinen_ersten_schritt_wiederholt(cli, endpunkt):
    def immer_wieder(fall, body, nummer):
        if fall["stufe"] != "S7":
            return richtig(fall, body, nummer)
        return completion(openai_nachricht(fall["loesung"][0]), "tool_calls")
    server = endpunkt(immer_wieder)
    status, out, err = cli(*messung(server.url, "--ganz"))
    assert status == 0, err  # the run ends
    k = json_lauf(cli, "--bewerten", "m")
    assert (k["erledigt"], k["fehlerarten"]["schrittgrenze"]) == (0.0, 26)
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
    assert (v["schlechter"], v["mit_ganz"], v["b_kennzahlen"]["erledigt"]) == (["S7-1"], True, 25 / 26)
    status, out, err = cli("--vergleich", "a", "b")
    assert "over the 68 cases compared" in out and "auftraege_gelungen and erledigt" in out
    # the flip explained by its end state, not by spare calls against an empty list
    assert ('      B: 1 request (the end state differs: contact Anna Berg: status "interessent" instead of "kunde")'
            in out.splitlines())


def test_wiederholt_parallel_gemischt_abgelehnt_bild_und_markdown(cli, endpunkt, tmp_path):
    server = endpunkt()
    k = json_lauf(cli, *messung(server.url, "--ganz", "--stufen", "S7", "--n", "2", "--parallel", "3"))
    assert (k["erledigt"], k["ausgaben"], server.zahl()) == (1.0, 52, 2 * REFERENZ_ANFRAGEN)  # steps of a job in order
    status, out, err = cli(*messung(server.url, "--n", "2"))  # the same tag without --ganz
    assert status == 2 and "was measured with ganz true, not false" in err
    status, md, err = cli("--bewerten", "m", "--markdown")
    assert {"| erledigt | 100 % |", "| S7 | 100 % |", "| requests per job | 3 (ref. 3) |"} <= set(md.splitlines())
    pytest.importorskip("matplotlib", reason="--bild needs matplotlib: pip install '.[bild]'")
    svg = tmp_path / "s7.svg"
    assert cli("--bewerten", "m", "--bild", str(svg))[0] == 0
    assert {"whole job", "S7 jobs done, 95 % interval", "tasks done, % (auftraege_gelungen; S7: erledigt)"} <= {
        t for t in ("whole job", "S7 jobs done, 95 % interval", "tasks done, % (auftraege_gelungen; S7: erledigt)")
        if t in svg.read_text()}


def test_ein_vergleich_nur_von_s7_zeigt_sein_intervall(cli, endpunkt):
    """A comparison of S7 alone: the tables' interval row is erledigt's, as the headline of such a run is."""
    server = endpunkt()
    for tag in ("a", "b"):
        vorbereitet(cli, *messung(server.url, "--ganz", "--stufen", "S7", "--tag", tag))
    ki = json_lauf(cli, "--bewerten", "a")["erledigt_ki"]
    assert ki == [messen.wilson_ki([(1, 1)] * 26)[0], 1.0]
    zelle = f"{ki[0] * 100:.1f}-{ki[1] * 100:.1f}"
    assert f"| 95 % interval | {zelle} | {zelle} | |" in cli("--vergleich", "a", "b", "--markdown")[1].splitlines()
    status, out, err = cli("--vergleich", "a", "b", "a", "--markdown")  # a series: one column per run
    assert f"| 95 % interval | {zelle} | {zelle} | {zelle} |" in out.splitlines()
    # the test counts erledigt alone: no chapter's case is in it
    status, out, err = cli("--vergleich", "a", "b")
    assert "0 cases better and 0 worse in b than in a (erledigt over the 26 cases compared: 0 points)" in out
