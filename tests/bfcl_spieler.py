"""A scripted model for BFCL's multi-turn cases: it knows each case's ground truth and plays it turn by turn, as a
perfect model would, or with one departure a test names.

    spieler = Spieler(ordner)                     # bfcl_eval/data
    completion = spieler.antwort(body)           # what the endpoint answers one request

It tells the case by its first user message, the turn by the user messages so far, and the step by the assistant
messages since: in a turn whose ground truth has calls, it sends them all in its first step (or as `plan` says),
then closes the turn with a text. `plan((case, ground truth), runde, schritt, soll)` may give other calls for a
step: a list of (name, arguments) or a message dict; None closes the turn with a text.
"""

import ast
import json
from pathlib import Path

NACH = "I have updated some more functions you can choose from. What about now?"  # BFCL's, at a held-back turn
KATEGORIEN = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")


def als_aufruf(text):
    """A ground-truth call (cd(folder='x')) as (name, positional values, keyword values)."""
    knoten = ast.parse(text, mode="eval").body
    return knoten.func.id, [ast.literal_eval(a) for a in knoten.args], \
        {k.arg: ast.literal_eval(k.value) for k in knoten.keywords}


def faelle(ordner, kategorien=KATEGORIEN):
    """id -> (case, ground truth) for every case of the categories in the folder."""
    alle = {}
    for k in kategorien:
        fragen = Path(ordner, f"BFCL_v4_{k}.json").read_text().splitlines()
        antworten = Path(ordner, "possible_answer", f"BFCL_v4_{k}.json").read_text().splitlines()
        for f, a in zip(fragen, antworten):
            f, a = json.loads(f), json.loads(a)
            alle[f["id"]] = (f, a["ground_truth"])
    return alle


def erste_frage(fall):
    return next(m["content"] for t in fall["question"] for m in t if m["role"] == "user")


class Spieler:
    def __init__(self, ordner, plan=None, kategorien=KATEGORIEN, signaturen=None):
        self.faelle = faelle(ordner, kategorien)
        self.nach_frage = {}
        for i, (f, _) in self.faelle.items():
            self.nach_frage.setdefault(erste_frage(f), []).append(i)
        self.plan = plan
        self.signaturen = signaturen or {}  # name -> parameter names, to give positional values their keywords
        self.zaehler = 0

    def wo(self, body):
        """(case id, turn, step) of a request."""
        nachrichten = body["messages"]
        gefragt = [m["content"] for m in nachrichten if m["role"] == "user"]
        fall_id = next(i for i in self.nach_frage[gefragt[0]] if gefragt == self.fragen(i)[:len(gefragt)])
        runde = sum(m["role"] == "user" for m in nachrichten) - 1
        letzte_frage = max(i for i, m in enumerate(nachrichten) if m["role"] == "user")
        schritt = sum(m["role"] == "assistant" for m in nachrichten[letzte_frage:])
        return fall_id, runde, schritt

    def fragen(self, fall_id):
        """A case's user messages turn by turn, a held-back function's turn with BFCL's prompt."""
        fall = self.faelle[fall_id][0]
        return [m["content"] for t in fall["question"] for m in t if m["role"] == "user"] if \
            not fall.get("missed_function") else [
                m["content"] for i, t in enumerate(fall["question"]) for m in (t or [{"role": "user", "content": NACH}])
                if m["role"] == "user"]

    def soll(self, fall_id, runde):
        """The ground truth's calls of a turn as (name, arguments), positional values named by signaturen."""
        aufrufe = []
        for text in self.faelle[fall_id][1][runde]:
            name, pos, kw = als_aufruf(text)
            aufrufe.append((name, {**dict(zip(self.signaturen.get(name, ()), pos)), **kw}))
        return aufrufe

    def antwort(self, body):
        fall_id, runde, schritt = self.wo(body)
        soll = self.soll(fall_id, runde)
        if self.plan:
            was = self.plan(self.faelle[fall_id], runde, schritt, soll)
        else:
            was = soll if schritt == 0 and soll else None
        if isinstance(was, dict):
            return completion(was, "stop")
        if not was:
            return completion({"role": "assistant", "content": "Done."}, "stop")
        rufe = []
        for name, args in was:
            self.zaehler += 1
            rufe.append({"id": f"call_{self.zaehler:08d}", "type": "function",
                         "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}})
        return completion({"role": "assistant", "content": None, "tool_calls": rufe}, "tool_calls")


def completion(nachricht, finish):
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1767225600, "model": "m",
            "choices": [{"index": 0, "message": nachricht, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 20}}


def signaturen(klassen):
    """name -> its parameters' names, for every public method of the classes (BFCL's backends)."""
    import inspect
    return {n: [p for p in inspect.signature(f).parameters if p != "self"] for k in klassen
            for n, f in inspect.getmembers(k, inspect.isfunction) if not n.startswith("_")}
