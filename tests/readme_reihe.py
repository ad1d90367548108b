"""The series shown in docs/vergleich.md and its picture, made by messen.py itself.

    python3 tests/readme_reihe.py     # prints the series; writes tests/reihe.png

Three runs against loopback endpoints of the tests (127.0.0.1 only): a baseline wrong
in six cases, a first checkpoint wrong as the chapter's model (S2-9, S5-8), and a
second one that answers every case right. Needs the extras test and bild.
"""

import contextlib
import io
import sys
import tempfile
from pathlib import Path

HIER = Path(__file__).resolve().parent
sys.path.insert(0, str(HIER))

from conftest import KAPITEL_FEHLER, Endpunkt, falsch_in, mit_fehlern, richtig  # noqa: E402  (puts messen on the path)
import messen  # noqa: E402

REIHE = [("basis", falsch_in(["S1-1", "S2-2", "S2-9", "S3-3", "S4-1", "S5-8"])),
         ("ft-1", mit_fehlern(KAPITEL_FEHLER)), ("ft-2", richtig)]


def main():
    with tempfile.TemporaryDirectory() as ordner:
        for tag, antwort in REIHE:
            server = Endpunkt(antwort)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                status = messen.main(["--url", server.url, "--modell", "qwen3-1.7b-ft", "--tag", tag,
                                      "--ausgabe", ordner])
            server.stop()
            if status:
                return status
        return messen.main(["--vergleich", *(t for t, _ in REIHE), "--ausgabe", ordner,
                            "--bild", str(HIER / "reihe.png")])


if __name__ == "__main__":
    sys.exit(main())
