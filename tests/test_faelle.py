"""faelle.jsonl: counts, the chapter's verbatim cases, every case against the catalogue,
and every bad case file stopped before any request with file:line."""

import json
import re
from collections import Counter

import pytest

from conftest import BY_ID, FAELLE, ROOT, messung
from messen import KATALOG, WERKZEUGE, pruefe_fall

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def test_stufen_und_ids():
    assert Counter(f["stufe"] for f in FAELLE) == {"S1": 8, "S2": 12, "S3": 8, "S4": 6, "S5": 8}
    zahl = Counter(f["stufe"] for f in FAELLE)
    assert [f["id"] for f in FAELLE] == [f"{s}-{i}" for s in sorted(zahl) for i in range(1, zahl[s] + 1)]


def test_die_faelle_des_kapitels_woertlich():
    assert BY_ID["S2-7"] == {
        "id": "S2-7", "stufe": "S2",
        "frage": "Set the status of the contact 11d3e7b0-4c52-4a1e-9b8f-0d6a3f2c5e10 to kunde.",
        "erwartet": [{"name": "update_contact",
                      "args": {"contact_id": "11d3e7b0-4c52-4a1e-9b8f-0d6a3f2c5e10", "status": "kunde"}}]}
    assert BY_ID["S5-2"]["frage"] == "Delete the contact of Mr Rutkowski."
    assert BY_ID["S4-2"]["frage"] == "What does CRM stand for?"
    assert BY_ID["S5-8"]["frage"] == "Put the appointment into the calendar tomorrow morning."
    assert [(s["name"], s["args"]["room"]) for s in BY_ID["S2-9"]["erwartet"]] == [("book_room", "besprechung")]


def test_katalog():
    namen = [w["function"]["name"] for w in KATALOG]
    assert len(namen) == len(set(namen)) == 11
    for name in ("list_contacts", "get_contact", "update_contact", "delete_contact", "list_calendars",
                 "get_events", "book_room"):
        assert name in namen
    assert "company" in WERKZEUGE["list_contacts"]["properties"]
    assert WERKZEUGE["list_calendars"]["properties"] == {}
    assert "kunde" in WERKZEUGE["update_contact"]["properties"]["status"]["enum"]
    assert "besprechung" in WERKZEUGE["book_room"]["properties"]["room"]["enum"]
    for w in KATALOG:
        p = w["function"]["parameters"]
        assert set(p["required"]) <= set(p["properties"])
        assert all(q.get("description") for q in p["properties"].values()), w["function"]["name"]


def test_jede_stufe_haelt_ihre_regel():
    for f in FAELLE:
        assert pruefe_fall(f) is None, f["id"]
        if f["stufe"] == "S1":
            assert 2 <= len(f["nur"]) <= 4 and len(f["erwartet"]) == 1, f["id"]
        elif f["stufe"] == "S2":
            assert "nur" not in f and len(f["erwartet"]) == 1, f["id"]
        elif f["stufe"] == "S3":
            assert 2 <= len(f["erwartet"]) <= 3, f["id"]
        else:
            assert f["erwartet"] == [], f["id"]
    assert any(len({s["name"] for s in f["erwartet"]}) < len(f["erwartet"]) for f in FAELLE if f["stufe"] == "S3")


@pytest.mark.parametrize("fall", [f for f in FAELLE if f["erwartet"]], ids=lambda f: f["id"])
def test_jeder_wert_im_format_seiner_beschreibung(fall):
    for soll in fall["erwartet"]:
        eigenschaften = WERKZEUGE[soll["name"]]["properties"]
        for k, v in soll["args"].items():
            beschreibung = eigenschaften[k]
            assert isinstance(v, str)
            if "enum" in beschreibung:
                assert v in beschreibung["enum"], (k, v)
            if "YYYY-MM-DD" in beschreibung["description"]:
                assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", v), (k, v)
            if "HH:MM" in beschreibung["description"]:
                assert re.fullmatch(r"\d{2}:\d{2}", v), (k, v)
            if k == "contact_id":
                assert UUID.fullmatch(v) and v in fall["frage"], v
            if k in ("to", "name", "company", "subject", "body", "text", "title", "email"):
                assert v in fall["frage"], (k, v)  # written in the question, word for word


# ---------------------------------------------------------------------------
# A bad case file: a line per fault naming file:line, status 2, no request sent
# ---------------------------------------------------------------------------

GUT = json.dumps(BY_ID["S2-1"])


def fall(**aenderung):
    return json.dumps({**BY_ID["S2-7"], **aenderung})


def anders(**aenderung):
    """S2-7 whose expected call has the fields given (args, oder, optional), as bytes."""
    return fall(erwartet=[{**BY_ID["S2-7"]["erwartet"][0], **aenderung}]).encode()


@pytest.mark.parametrize("inhalt, meldung", [
    (b"\xff\xfe", "{p}:1: not UTF-8"),
    (b"", "{p}: no cases in the file"),
    (b"\n\n", "{p}: no cases in the file"),
    (f"{GUT}\n{{id: 1}}\n".encode(), "{p}:2: not JSON (Expecting property name enclosed in double quotes)"),
    (f"{GUT}\n{'[' * 100_000}{']' * 100_000}\n".encode(), "{p}:2: not JSON (nested too deep)"),
    (f"{GUT}\n{'[' * 101}{']' * 101}\n".encode(), "{p}:2: nested deeper than 100 levels, where a case nests a few"),
    (f"{GUT}\n{{\"id\": {'7' * 5000}}}\n".encode(), "{p}:2: not JSON (a number of more than 4,300 digits)"),
    (b"[1, 2]", "{p}:1: a case must be a JSON object"),
    (json.dumps({"id": "S2-1", "stufe": "S2", "erwartet": []}).encode(),
     "{p}:1: field 'frage' missing or not a non-empty string"),
    (fall(erwartet={}).encode(), "{p}:1: field 'erwartet' missing or not a list"),
    (f"{GUT}\n\n{GUT}".encode(), "{p}:3: duplicate id S2-1 (first on line 1)"),
    (fall(stufe="S8").encode(), "{p}:1: unknown stage 'S8' (known: S1, S2, S3, S4, S5, S6, S7)"),
    (fall(erwartet=[{"name": "fly", "args": {}}]).encode(), "{p}:1: expected tool 'fly' is not in the built-in catalogue (give your own tools with --katalog FILE)"),
    (fall(erwartet=[{"name": "list_contacts"}]).encode(),
     '{p}:1: each expected call must be {{"name": string, "args": object}}'),
    (fall(erwartet=[{"name": "update_contact", "args": {"contact_id": "x", "colour": "red"}}]).encode(),
     "{p}:1: update_contact has no argument 'colour'"),
    (fall(erwartet=[{"name": "get_events", "args": {"calendar": "team"}}]).encode(),
     "{p}:1: expected call get_events lacks its required argument 'date'"),
    (fall(stufe="S2", nur=["update_contact"]).encode(), "{p}:1: 'nur' narrows the catalogue in S1 only, not in S2"),
    (fall(stufe="S1").encode(), "{p}:1: stage S1 needs 'nur' (the tools offered)"),
    (fall(stufe="S1", nur=["update_contact", "fly"]).encode(), "{p}:1: 'nur' names 'fly', which is not in the built-in catalogue"),
    (fall(stufe="S1", nur=["get_contact"]).encode(), "{p}:1: 'nur' leaves out the expected tool 'update_contact'"),
    (fall(stufe="S4").encode(), "{p}:1: stage S4 expects no call, but 'erwartet' lists 1"),
    (fall(stufe="S5").encode(), "{p}:1: stage S5 expects no call, but 'erwartet' lists 1"),
    (fall(erwartet=[]).encode(), "{p}:1: stage S2 expects at least one call"),
    (anders(oder={"status": ["Kunde"]}), "{p}:1: the expected value of 'status' in update_contact is \"Kunde\", "
     'not one of its enum ("lead", "interessent", "kunde", "inaktiv")'),
    (anders(oder={"status": "kunde"}), "{p}:1: 'oder' in update_contact must be an object of argument -> a non-empty "
     "list of the values it accepts"),
    (anders(optional={"email": []}), "{p}:1: 'optional' in update_contact must be an object of argument -> a "
     "non-empty list of the values it accepts"),
    (anders(oder={"email": ["a@b.example"]}), "{p}:1: update_contact: 'oder' names 'email', which 'args' lacks (one "
     "that may be left out goes in 'optional')"),
    (anders(optional={"status": ["kunde"]}), "{p}:1: update_contact: 'status' stands in 'args' and in 'optional', "
     "where an argument that may be left out stands alone"),
    (anders(args={"status": "kunde"}, optional={"contact_id": ["x"]}), "{p}:1: expected call update_contact lacks "
     "its required argument 'contact_id' (the tool requires it, so it cannot be optional)"),
    (anders(optional={"colour": ["red"]}), "{p}:1: update_contact has no argument 'colour'"),
    (anders(optional={"email": [" a@b.example"]}), "{p}:1: the expected value of 'email' in update_contact has "
     "leading or trailing spaces; a stripped answer can never equal it"),
])
def test_schlechte_falldatei(cli, endpunkt, tmp_path, inhalt, meldung):
    server = endpunkt()
    p = tmp_path / "faelle.jsonl"
    p.write_bytes(inhalt)
    status, out, err = cli(*messung(server.url, "--faelle", str(p)))
    assert (status, out, err) == (2, "", "messen: " + meldung.format(p=p) + "\n")
    assert server.zahl() == 0


def test_jeder_fehler_einer_falldatei_eine_zeile(cli, endpunkt, tmp_path):
    """Every faulty line is named, one line each, a dozen at most and the rest counted; good lines say nothing."""
    server = endpunkt()
    p = tmp_path / "faelle.jsonl"
    falsch = [fall(stufe="S8"), "{id: 1}", GUT, fall(erwartet=[])] + [fall(id=f"X-{i}", stufe="S4") for i in range(12)]
    p.write_text("\n".join(falsch) + "\n")
    status, out, err = cli(*messung(server.url, "--faelle", str(p)))
    assert (status, out) == (2, "")
    assert err.splitlines()[:4] == [
        f"messen: {p}:1: unknown stage 'S8' (known: S1, S2, S3, S4, S5, S6, S7)",
        f"messen: {p}:2: not JSON (Expecting property name enclosed in double quotes)",
        f"messen: {p}:4: stage S2 expects at least one call",
        f"messen: {p}:5: stage S4 expects no call, but 'erwartet' lists 1"]
    assert err.splitlines()[4:] == [f"messen: {p}:{nr}: stage S4 expects no call, but 'erwartet' lists 1"
                                    for nr in range(6, 14)] + [f"messen: {p}: 3 more faulty lines"]
    assert server.zahl() == 0


def test_fehlende_falldatei(cli, endpunkt, tmp_path):
    server = endpunkt()
    p = tmp_path / "fehlt.jsonl"
    status, out, err = cli(*messung(server.url, "--faelle", str(p)))
    assert (status, err) == (2, f"messen: {p}: cannot read the case file (No such file or directory)\n")
    assert server.zahl() == 0


def test_eine_falldatei_mit_bom(cli, endpunkt, tmp_path):
    """A byte-order mark, as some editors write before UTF-8, is no part of the first case."""
    p = tmp_path / "faelle.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" + (ROOT / "faelle.jsonl").read_bytes())
    status, out, err = cli(*messung(endpunkt().url, "--faelle", str(p), "--json"))
    assert (status, json.loads(out)["auftraege_gelungen"]) == (0, 42 / 42), err
