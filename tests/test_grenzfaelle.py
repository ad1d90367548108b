"""Smaller promises: a usable tag for any model name, a complete run shown from a folder that
cannot be written, strict JSON saved whatever a server sends, a permutation test that ends."""

import json
import time
from fractions import Fraction

import pytest

import messen
from conftest import completion, messung, openai_nachricht, richtig, zeilen


@pytest.mark.parametrize("modell, tag", [
    ("qwen3.8-27b", "qwen3.8-27b"),
    ("Ünïcode-modell", "Unicode-modell"),
    ("模型", "c98e118e"),
    ("模型-7b", "7b-0fe75223"),
    ("型号-7b", "7b-14832025"),   # another name of another script: another tag
])
def test_ein_tag_fuer_jeden_modellnamen(modell, tag):
    assert messen.tag_von(modell) == tag


def test_nicht_ascii_namen_stossen_nicht_zusammen_und_stehen_wie_geschrieben(cli, endpunkt, tmp_path):
    server = endpunkt()
    for modell in ("模型", "型号"):
        status, out, err = cli("--url", server.url, "--modell", modell)
        assert status == 0, err
        assert out.splitlines()[0].startswith(f"Model {modell}, temp 0.0, n 1, tag ")
    assert sorted(p.name for p in (tmp_path / "ergebnisse").glob("*.jsonl")) == ["322408c5.jsonl", "c98e118e.jsonl"]
    status, out, err = cli("--url", server.url, "--modell", "模型", "--tag", "322408c5")
    assert (status, err.splitlines()[-1]) == (2, f"messen: {tmp_path / 'ergebnisse' / '322408c5.jsonl'} was "
                                                 "measured with modell \"型号\", not \"模型\"; use another --tag, or "
                                                 "--neu to measure anew (the old file is kept)")


def test_ein_fertiger_lauf_wird_ohne_sperre_gezeigt(cli, endpunkt, tmp_path):
    server = endpunkt()
    assert cli(*messung(server.url, "--tag", "t"))[0] == 0
    ordner = tmp_path / "ergebnisse"
    (ordner / ".t.jsonl.lock").unlink()
    (ordner / ".t.jsonl.lock").mkdir()  # a lock that cannot be opened, as in a folder we may not write
    status, out, err = cli(*messung(server.url, "--tag", "t"))
    assert (status, server.zahl()) == (0, 42)
    assert out.splitlines()[1].startswith("Shown as saved: measured ")
    # an incomplete one cannot go on there: one line, exit 2
    (ordner / "t.jsonl").write_text("\n".join((ordner / "t.jsonl").read_text().splitlines()[:10]) + "\n")
    assert cli(*messung(server.url, "--tag", "t"))[::2] == (
        2, f"messen: {ordner / 't.jsonl'} holds 9 outputs; asking for the rest\nmessen: {ordner}: cannot write there, so the run "
           "cannot go on (its lock file .t.jsonl.lock cannot be opened)\n")


def test_nan_und_infinity_werden_als_strenges_json_gespeichert(cli, endpunkt, tmp_path):
    roh = json.dumps(completion(openai_nachricht([]), usage={"prompt_tokens": 5, "completion_tokens": 1}))
    roh = roh.replace('"prompt_tokens": 5', '"prompt_tokens": NaN, "score": Infinity, "tief": [-Infinity]')

    def antwort(fall, body, nummer):
        return (200, roh.encode(), {}) if fall["id"] == "S4-1" else richtig(fall, body, nummer)
    server = endpunkt(antwort)
    status, out, err = cli(*messung(server.url, "--tag", "t"))
    assert status == 0, err

    def streng(text):
        raise ValueError(f"not strict JSON: {text}")
    for z in (tmp_path / "ergebnisse" / "t.jsonl").read_text().splitlines():
        json.loads(z, parse_constant=streng)
    s4 = {a["id"]: a for a in zeilen(tmp_path / "ergebnisse" / "t.jsonl")[1:]}["S4-1"]
    assert s4["zuege"][0]["usage"] == {"prompt_tokens": "nan", "score": "inf", "tief": ["-inf"], "completion_tokens": 1}


def test_der_permutationstest_endet_bei_vielen_verschiedenen_zahlen():
    # 42 cases with per-case rates on 42 different grids: the exact count would need ~2^42 sums
    differenzen = [Fraction(1 + i % 3, k) for i, k in enumerate(range(3, 45))]
    assert not messen.genau_machbar(differenzen)
    start = time.monotonic()
    p = messen.permutationstest_mc(differenzen)
    assert time.monotonic() - start < 60  # a guard: the exact count would not end at all
    assert 0 < p <= 1 / (1 + messen.MONTE_CARLO) * 2  # all one way: as extreme as it gets
    # where both can run, they agree
    klein = [Fraction(1, 3), Fraction(-2, 3), Fraction(1), Fraction(1, 2), Fraction(1, 3), Fraction(2, 3)] * 2
    assert messen.genau_machbar(klein)
    assert messen.permutationstest_mc(klein) == pytest.approx(messen.permutationstest(klein), abs=0.01)


def test_dreissigtausend_aufrufe_als_text_bleiben_kurze_zeilen(cli, endpunkt):
    """A hostile answer of 30,000 <tool_call> tags each opening a call (360 KB): each call is read once, with its form and what was
    written, and every line of the summary stays short and counts what it leaves out."""
    def antwort(fall, body, nummer):
        if fall["id"] == "S2-7":  # the full stop: a text that ends repeating one piece is a loop, whatever its label
            return completion({"role": "assistant", "content": "<tool_call>{" * 30_000 + "."})
        return richtig(fall, body, nummer)
    server = endpunkt(antwort)
    status, out, err = cli(*messung(server.url))
    assert status == 0, err
    for befehl in ([], ["--bewerten", "m"]):
        zeilen_ = (cli(*befehl)[1] if befehl else out).splitlines()
        assert max(map(len, zeilen_)) <= 1000
        came = next(z for z in zeilen_ if z.startswith("      came:"))
        assert came == "      came:     " + "; ".join(["?(<malformed arguments>)"] * 20) + "; ... and 29980 more calls"
        differs = next(z for z in zeilen_ if z.startswith("      differs:"))
        assert differs.startswith('      differs:  update_contact(contact_id="11d3e7b0-4c52-4a1e-9b8f-0d6a3f2c5e10", '
                                  'status="kunde") not called; malformed call ?; ')
        assert differs.endswith(f"; ... and {30_000 - differs.count('malformed call ?')} more")
        assert ('      written:  <tool_call>: "' + "<tool_call>{" * 6 + '<tool_ca... (360001 characters)"') in zeilen_
        assert "Failure classes: kein_aufruf 1, fehlerhaft 30000." in zeilen_


def test_ein_vergleich_mit_dreissigtausend_aufrufen_bleibt_kurz(cli, endpunkt):
    """The comparison's line for a flipped case stays short too: its calls and its reasons each cut, counted."""
    def antwort(fall, body, nummer):
        if fall["id"] == "S2-7":
            return completion({"role": "assistant", "content": "<tool_call>{" * 30_000 + "."})
        return richtig(fall, body, nummer)
    gut, schlecht = endpunkt(), endpunkt(antwort)
    assert cli(*messung(gut.url, "--tag", "gut"))[0] == 0
    assert cli(*messung(schlecht.url, "--tag", "schlecht"))[0] == 0
    status, out, err = cli("--vergleich", "gut", "schlecht")
    zeile = next(z for z in out.splitlines() if z.startswith("      B: "))
    assert status == 0 and max(map(len, out.splitlines())) <= 1000
    assert zeile.startswith("      B: " + "; ".join(["?(<malformed arguments>)"] * 20) + "; ... and 29980 more calls (")
    assert zeile.endswith(" characters)")
