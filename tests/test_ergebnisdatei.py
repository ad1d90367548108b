"""A damaged results file: every hand edit gives one line naming file:line and exit 2, never a
traceback; hypothesis mutates saved lines at random to show it."""

import contextlib
import functools
import io
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import messen
from conftest import ROOT


@functools.lru_cache(maxsize=None)
def gesunde_datei():
    """A complete saved run of the self-test endpoint with --nachfrage (built once): its lines."""
    faelle, _ = messen.lade_faelle(ROOT / "faelle.jsonl")
    server, url = messen.selbsttest_server(faelle)
    ordner = Path(tempfile.mkdtemp())
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert messen.main(["--url", url, "--modell", "m", "--tag", "t", "--nachfrage",
                                "--ausgabe", str(ordner)]) == 0
        return tuple((ordner / "t.jsonl").read_text().splitlines())
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(ordner)


def bewerten_mit(zeilen_):
    """--bewerten of a file with these lines: (status, stdout, stderr)."""
    with tempfile.TemporaryDirectory() as ordner:
        (Path(ordner) / "t.jsonl").write_text("\n".join(zeilen_) + "\n")
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = messen.main(["--bewerten", "t", "--ausgabe", ordner])
        return status, out.getvalue(), err.getvalue().replace(ordner, "DIR")


def geaendert(zeile, feld, wert, weg=False):
    """The line with one field of its output (or of its settings) set to wert, or removed."""
    daten = json.loads(zeilen_alle()[zeile])
    ziel = daten["einstellungen"] if zeile == 0 else daten
    ziel.pop(feld, None) if weg else ziel.__setitem__(feld, wert)
    neu = list(zeilen_alle())
    neu[zeile] = json.dumps(daten)
    return neu


def zeilen_alle():
    return gesunde_datei()


def test_die_gesunde_datei_liest_sich():
    status, out, err = bewerten_mit(zeilen_alle())
    assert (status, err) == (0, "")
    assert "By stage: S1 100 %, S2 100 %, S3 100 %, S4 100 %, S5 100 %." in out.splitlines()


S5_ZEILE = 1 + 34  # the first S5 output (S5-1) of the 42


@pytest.mark.parametrize("zeile, feld, wert, weg, warum", [
    (S5_ZEILE, "zweite", "yes", False, "zweite is not a second turn"),
    (0, "n", None, True, "n is not a whole number of at least 1"),
    (0, "n", "1", False, "n is not a whole number of at least 1"),
    (0, "temp", "warm", False, "temp is not a number of at least 0"),
    (0, "extra", [], False, "extra is not an object"),
    (1, "ende", "gestern", False, "ende is not a time"),
    (1, "ende", 1e20, False, "ende is not a time"),
    (1, "latenz_s", -1, False, "latenz_s is not a number of seconds"),
    (1, "lauf", 3, False, "lauf 3 in a run of n 1"),
    (1, "lauf", 1.5, False, "lauf is not a whole number of at least 0"),
    (1, "usage", "many", False, "usage is not an object"),
    (1, "stufe", "S4", False, "stufe S4 for S1-1, a case of S1"),
    (1, "verworfen", True, False, "verworfen is not a whole number of at least 0"),
    (1, "id", "S9-9", False, "not an output of a known case"),
    (2, "zweite", {"nachricht": {}}, False, "a second turn in S1-2, which has none"),
])
def test_jede_handaenderung_ist_eine_zeile(zeile, feld, wert, weg, warum):
    status, out, err = bewerten_mit(geaendert(zeile, feld, wert, weg))
    assert (status, out) == (2, "")
    assert err == f"messen: DIR/t.jsonl:{zeile + 1}: the results file is damaged ({warum})\n"


JSON_WERT = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                         lambda kinder: st.lists(kinder, max_size=3) | st.dictionaries(st.text(max_size=5), kinder,
                                                                                       max_size=3), max_leaves=6)
FELDER = ["id", "stufe", "lauf", "sitzung", "nachricht", "usage", "latenz_s", "ende", "finish_reason", "verworfen",
          "zweite", "aufrufe", "treffer"]
EINSTELLUNGEN = ["modell", "temp", "n", "extra", "nachfrage", "tag", "datum", "faelle_sha256", "katalog_sha256"]
gesehen = {"2": 0, "0": 0}


@settings(max_examples=150, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(zeile=st.sampled_from([0, 1, S5_ZEILE]), index=st.integers(0, 20), wert=JSON_WERT, weg=st.booleans())
def test_jede_beschaedigung_ist_eine_zeile_oder_wird_gelesen(zeile, index, wert, weg):
    felder = EINSTELLUNGEN if zeile == 0 else FELDER
    status, out, err = bewerten_mit(geaendert(zeile, felder[index % len(felder)], wert, weg))
    gesehen[str(status)] += 1
    assert status in (0, 2)
    if status == 2:  # one line, naming the file (and the line where the file is at fault)
        assert len(err.splitlines()) == 1 and err.startswith("messen: DIR/t.jsonl")


def test_die_eigenschaft_sah_beides():
    # run after the property above (file order): it reached both outcomes, not only one
    assert gesehen["2"] >= 30 and gesehen["0"] >= 10, gesehen
