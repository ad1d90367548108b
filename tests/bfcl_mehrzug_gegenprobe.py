"""A check kept apart from the suite: every departure of the scripted model (bfcl_spieler.ABWEICHUNGEN, and the
ground truth itself) played through a sample of each of BFCL's four multi-turn categories over loopback, and
messen's verdict on each case held against BFCL's own runner and checker on the same transcripts; then
bfcl.multi_turn held against BFCL's formula, the unweighted mean of the four categories.

    MESSEN_BFCL=1 python3 tests/bfcl_mehrzug_gegenprobe.py [--stichprobe N]     (default 20 of each category)

Prints a line per departure and category, and exits 1 on the first case where the two verdicts differ.
127.0.0.1 only. Not collected by pytest (its name does not start with test_).
"""

import copy
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import bfcl_pruefer  # noqa: E402
import bfcl_spieler  # noqa: E402
from conftest import Endpunkt  # noqa: E402


def endpunkt(spieler):
    """The suite's loopback endpoint (conftest.Endpunkt, in this process) whose model is spieler["jetzt"]."""
    def antwort(fall, body, nummer):
        return spieler["jetzt"].antwort(body)
    return Endpunkt(antwort).url


def main():
    n = sys.argv[sys.argv.index("--stichprobe") + 1] if "--stichprobe" in sys.argv else "20"
    ordner, urteil = bfcl_pruefer.daten(), bfcl_pruefer.mehrzug()
    if urteil is None:
        sys.exit("bfcl-eval is not at hand: MESSEN_BFCL=1 installs it")
    signaturen, spieler, tmp = bfcl_spieler.signaturen(bfcl_pruefer.backends()), {}, Path(tempfile.mkdtemp())
    url, faelle, gleich = endpunkt(spieler), 0, 0
    for art, plan in {"wahr": None, **bfcl_spieler.ABWEICHUNGEN, "leer_im_ersten": bfcl_spieler.leer_im_ersten,
                      "als_text_im_ersten": bfcl_spieler.als_text_im_ersten}.items():
        anteile = []
        for kategorie in bfcl_spieler.KATEGORIEN:
            spieler["jetzt"] = bfcl_spieler.Spieler(ordner, plan, (kategorie,), signaturen)
            tag = f"{art}-{kategorie}"
            r = subprocess.run([sys.executable, str(ROOT / "messen.py"), "--url", url, "--modell", "m", "--faelle",
                                str(ordner), "--stufen", kategorie, "--stichprobe", n, "--tag", tag, "--ausgabe",
                                str(tmp), "--json"], capture_output=True, text=True, check=True)
            k = json.loads(r.stdout)["bfcl"]
            roh = bfcl_spieler.faelle(ordner, (kategorie,))
            bfcls = {}
            for zeile in (tmp / f"{tag}.jsonl").read_text().splitlines()[1:]:
                a = json.loads(zeile)
                schritte = [z for z in a["zuege"] if z["zweck"] == "schritt"]
                runden = [[z["nachricht"] for z in schritte if z["runde"] == t]
                          for t in range(schritte[-1]["runde"] + 1)]
                bfcls[a["id"]] = urteil(copy.deepcopy(roh[a["id"]][0]), roh[a["id"]][1], runden)
            anders = set(k["fehlgeschlagen"]) ^ {i for i, v in bfcls.items() if not v}
            faelle, gleich = faelle + len(bfcls), gleich + len(bfcls) - len(anders)
            anteile.append(statistics.fmean(bfcls.values()))
            print(f"{art:20} {kategorie:24} BFCL {statistics.fmean(bfcls.values()):6.1%}  messen "
                  f"{k['stufen'][kategorie]:6.1%}  {'equal' if not anders else 'DIFFERENT: ' + ', '.join(anders)}")
            if anders:
                sys.exit(1)
        print(f"{art:20} BFCL's multi-turn overall, the mean of the four: {statistics.fmean(anteile):.1%}")
    print(f"{gleich} of {faelle} cases: messen's verdict is BFCL's")
    alle_vier(url, spieler, ordner, urteil, signaturen, n, tmp)


def alle_vier(url, spieler, ordner, urteil, signaturen, n, tmp):
    """The four categories in one run, the ground truth played by a model that cannot tell twins apart (it takes
    the first case whose messages fit): bfcl.multi_turn against BFCL's formula on BFCL's own verdicts."""
    spieler["jetzt"] = bfcl_spieler.Spieler(ordner, None, bfcl_spieler.KATEGORIEN, signaturen)
    r = subprocess.run([sys.executable, str(ROOT / "messen.py"), "--url", url, "--modell", "m", "--faelle",
                        str(ordner), "--stufen", ",".join(bfcl_spieler.KATEGORIEN), "--stichprobe", n, "--tag", "vier",
                        "--ausgabe", str(tmp), "--json"], capture_output=True, text=True, check=True)
    k = json.loads(r.stdout)["bfcl"]
    roh = bfcl_spieler.faelle(ordner)
    je = {kat: [] for kat in bfcl_spieler.KATEGORIEN}
    for zeile in (tmp / "vier.jsonl").read_text().splitlines()[1:]:
        a = json.loads(zeile)
        schritte = [z for z in a["zuege"] if z["zweck"] == "schritt"]
        runden = [[z["nachricht"] for z in schritte if z["runde"] == t] for t in range(schritte[-1]["runde"] + 1)]
        je[a["stufe"]].append(urteil(copy.deepcopy(roh[a["id"]][0]), roh[a["id"]][1], runden))
    formel = statistics.fmean(statistics.fmean(x) for x in je.values())
    print(f"all four in one run: BFCL's formula {formel:.4%}, messen's bfcl.multi_turn {k['multi_turn']:.4%}: "
          f"{'equal' if abs(formel - k['multi_turn']) < 1e-12 else 'DIFFERENT'}")
    if abs(formel - k["multi_turn"]) >= 1e-12:
        sys.exit(1)


if __name__ == "__main__":
    main()
