"""Writes tests/bfcl/antworten.jsonl: answers to the BFCL sample's 220 cases, each with BFCL's own verdict.

    MESSEN_BFCL=1 python3 tests/bfcl_aufnahme.py [ergebnisse/echt.jsonl]

Five answers per case are made here, seeded by the case's id, to walk BFCL's rules:
richtig (the first accepted values), anders (other accepted values, strings in other
case and punctuation, an int for a float, optional arguments left out, parallel calls
in another order), falsch (one fault: a value, a missing or invented argument, a type,
a name, a call too few or too many), text (the right calls written as text, never in
tool_calls) and kaputt (arguments that are no JSON object). An irrelevance case gets
a text answer, an empty one, a call, a call as text and a call with broken arguments.
A results file of messen's run on a real server adds that run's answers as "echt".
Each answer's verdict is BFCL's checker's (tests/bfcl_pruefer.py), so this needs
bfcl-eval; the tests read the file without it.
"""

import json
import random
import sys
from pathlib import Path

import bfcl_pruefer

HIER = Path(__file__).resolve().parent / "bfcl"
VARIANTEN = ("richtig", "anders", "falsch", "text", "kaputt")


def faelle(ordner=HIER):
    """[(category, case line, possible_answer line or None)] of the sample, in file order."""
    aus = []
    for datei in sorted(ordner.glob("BFCL_v*_*.json")):
        kategorie = datei.stem.split("_", 2)[2]
        antworten = ordner / "possible_answer" / datei.name
        pa = {a["id"]: a for a in map(json.loads, antworten.read_text().splitlines())} if antworten.exists() else {}
        aus += [(kategorie, roh, pa.get(roh["id"])) for roh in map(json.loads, datei.read_text().splitlines())]
    return aus


def wert(werte, r, anders):
    """One accepted value (the first, or with anders a random one, reworded as BFCL's rules allow); None: left out."""
    gegeben = [w for w in werte if w != ""]
    if not gegeben or "" in werte and r.random() < (0.5 if anders else 0.3):
        return None
    w = r.choice(gegeben) if anders else gegeben[0]
    return umgeformt(w, r) if anders else eingesetzt(w)


def eingesetzt(w):
    """An accepted dict holds accepted values per key: the first of each, as a model would give it."""
    if isinstance(w, dict):
        return {k: eingesetzt(next((x for x in v if x != ""), v[0])) for k, v in w.items()
                if isinstance(v, list) and any(x != "" for x in v)}
    if isinstance(w, list):
        return [eingesetzt(x) for x in w]
    return w


def umgeformt(w, r):
    """A value BFCL's rules take as the same: other case and spaces in a string, an int for a whole float."""
    w = eingesetzt(w)
    if isinstance(w, str):
        return r.choice([w.upper(), w.lower(), w.replace(" ", ""), w.replace(",", " ,")])
    if isinstance(w, float) and w.is_integer():
        return int(w)
    return w


def aufrufe(pa, r, anders=False):
    liste = []
    for soll in pa["ground_truth"]:
        name, args = next(iter(soll.items()))
        gegeben = {k: wert(v, r, anders) for k, v in args.items()}
        liste.append({"name": name.replace(".", "_"), "args": {k: v for k, v in gegeben.items() if v is not None}})
    if anders:
        r.shuffle(liste)
    return liste


def verfaelscht(liste, roh, r):
    """The right calls with one fault."""
    liste = [dict(c, args=dict(c["args"])) for c in liste]
    c = r.choice(liste)
    fehler = r.choice(["wert", "fehlt", "erfunden", "typ", "name", "weniger", "mehr"])
    if fehler == "wert" and c["args"]:
        k = r.choice(sorted(c["args"]))
        v = c["args"][k]
        c["args"][k] = not v if isinstance(v, bool) else v + 1 if isinstance(v, (int, float)) else "xyz" \
            if isinstance(v, str) else [] if isinstance(v, list) else {}
    elif fehler == "fehlt" and c["args"]:
        del c["args"][r.choice(sorted(c["args"]))]
    elif fehler == "erfunden":
        c["args"]["extra_option"] = "yes"
    elif fehler == "typ" and c["args"]:
        k = r.choice(sorted(c["args"]))
        c["args"][k] = str(c["args"][k])
    elif fehler == "weniger" and len(liste) > 1:
        liste.remove(c)
    elif fehler == "mehr":
        liste.append(c)
    else:
        c["name"] += "_x"
    return liste


def nativ(liste, kaputt=False):
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{i}", "type": "function", "function": {
            "name": c["name"], "arguments": json.dumps(c["args"])[:-1] if kaputt and i == 0 else json.dumps(c["args"])}}
        for i, c in enumerate(liste)]}


def als_text(liste):
    return {"role": "assistant", "content": "\n".join(
        f'<tool_call>\n{json.dumps({"name": c["name"], "arguments": c["args"]})}\n</tool_call>' for c in liste)}


def irgendein_aufruf(roh):
    """A call of the case's first function with its required arguments filled by type: a call where none fits."""
    f = roh["function"][0]
    fuellung = {"integer": 1, "float": 1.0, "boolean": True, "array": [], "tuple": [], "dict": {}}
    return [{"name": f["name"].replace(".", "_"),
             "args": {k: fuellung.get(f["parameters"]["properties"][k].get("type"), "x")
                      for k in f["parameters"].get("required", []) if k in f["parameters"]["properties"]}}]


def antworten(kategorie, roh, pa):
    r = random.Random(roh["id"])
    if pa is None:
        falsch = irgendein_aufruf(roh)
        return {"richtig": {"role": "assistant", "content": "None of the functions I have can answer that."},
                "anders": {"role": "assistant", "content": ""}, "falsch": nativ(falsch), "text": als_text(falsch),
                "kaputt": nativ(falsch, kaputt=True)}
    richtig = aufrufe(pa, r)
    return {"richtig": nativ(richtig), "anders": nativ(aufrufe(pa, r, anders=True)),
            "falsch": nativ(verfaelscht(richtig, roh, r)), "text": als_text(richtig), "kaputt": nativ(richtig, True)}


def echte(pfad):
    """id -> the answer a saved run of messen got to each case's question: (message, finish_reason, usage)."""
    zeilen = [json.loads(z) for z in Path(pfad).read_text().splitlines()[1:]]
    return {a["id"]: (z["nachricht"], z["finish_reason"], z["usage"]) for a in zeilen
            for z in [next(z for z in a["zuege"] if z["zweck"] == "frage")]}


def main(argv):
    urteil = bfcl_pruefer.laden()
    if urteil is None:
        sys.exit("bfcl_aufnahme: needs bfcl-eval (MESSEN_BFCL=1 installs it without its dependencies)")
    echt = echte(argv[0]) if argv else {}
    with open(HIER / "antworten.jsonl", "w") as f:
        for kategorie, roh, pa in faelle():
            je = {v: (n, "tool_calls" if n.get("tool_calls") else "stop", None)
                  for v, n in antworten(kategorie, roh, pa).items()} | (
                {"echt": echt[roh["id"]]} if roh["id"] in echt else {})
            for variante, (nachricht, finish, usage) in je.items():
                f.write(json.dumps({"id": roh["id"], "variante": variante, "nachricht": nachricht,
                                    "finish_reason": finish, "usage": usage,
                                    "bfcl": urteil(kategorie, roh, pa, nachricht)}) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
