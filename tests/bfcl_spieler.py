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
    def __init__(self, ordner, plan=None, kategorien=KATEGORIEN, signaturen=None, der_reihe_nach=False):
        self.faelle = faelle(ordner, kategorien)
        self.nach_frage = {}
        for i, (f, _) in self.faelle.items():
            self.nach_frage.setdefault(erste_frage(f), []).append(i)
        self.plan = plan
        self.signaturen = signaturen or {}  # name -> parameter names, to give positional values their keywords
        self.zaehler = 0
        # der_reihe_nach: the cases come one at a time (--parallel 1) in the order of the files and categories, so
        # twins alike in messages and tools are told apart by that order: the next of them not asked yet
        self.offen = {frage: list(ids) for frage, ids in self.nach_frage.items()} if der_reihe_nach else None
        self.jetzt = {}

    def wo(self, body):
        """(case id, turn, step) of a request."""
        nachrichten = body["messages"]
        gefragt = [m["content"] for m in nachrichten if m["role"] == "user"]
        if self.offen is not None:
            if len(gefragt) == 1 and not any(m["role"] == "assistant" for m in nachrichten):
                self.jetzt[gefragt[0]] = self.offen[gefragt[0]].pop(0)  # a case begins
            fall_id = self.jetzt[gefragt[0]]
        else:
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


# ---------------------------------------------------------------------------
# Departures from the ground truth, each a plan: (case, ground truth), turn, step, its calls -> what to answer
# ---------------------------------------------------------------------------


LESEN = {"GorillaFileSystem": ("pwd", {}), "MathAPI": ("mean", {"numbers": [1.0, 2.0]}),
         "MessageAPI": ("list_users", {}), "TwitterAPI": ("posting_get_login_status", {}),
         "TicketAPI": ("ticket_get_login_status", {}), "TradingBot": ("get_watchlist", {}),
         "TravelAPI": ("travel_get_login_status", {}), "VehicleControlAPI": ("check_tire_pressure", {})}


def lesen(fall):
    """A call that reads and changes nothing (not even a draw of the class's random numbers)."""
    return LESEN[fall[0]["involved_classes"][0]]


def erste_mit(fall, mindestens=1):
    """The first turn whose ground truth has at least that many calls."""
    return next(t for t, soll in enumerate(fall[1]) if len(soll) >= mindestens)


def normal(runde, schritt, soll):
    return soll if schritt == 0 and soll else None


def weggelassen(fall, runde, schritt, soll):
    return soll[:-1] if schritt == 0 and runde == erste_mit(fall) else normal(runde, schritt, soll)


def wert_geaendert(fall, runde, schritt, soll):
    if schritt == 0 and runde == erste_mit(fall):
        name, args = soll[0]
        k = next((k for k, v in args.items() if isinstance(v, str)), None)
        return [(name, {**args, k: args[k] + "x"} if k else {**args, "zusatz": 1})] + soll[1:]
    return normal(runde, schritt, soll)


def extra_lesen(fall, runde, schritt, soll):
    return [*soll, lesen(fall)] if schritt == 0 and soll else None


def vertauscht(fall, runde, schritt, soll):
    t = next((t for t, s in enumerate(fall[1]) if len(s) >= 2), None)
    return [soll[1], soll[0], *soll[2:]] if schritt == 0 and runde == t else normal(runde, schritt, soll)


def zu_frueh(fall, runde, schritt, soll):
    """The first call of the second turn with calls, made at the end of the turn before it."""
    mit = [t for t, s in enumerate(fall[1]) if s]
    if len(mit) < 2 or schritt:
        return normal(runde, schritt, soll)
    naechste = als_aufruf(fall[1][mit[1]][0])
    if runde == mit[1] - 1:
        return [*soll, (naechste[0], naechste[2])] if soll or naechste[2] else None
    return soll[1:] if runde == mit[1] and naechste[2] else soll or None


def ungefragt(fall, runde, schritt, soll):
    """In a turn whose ground truth has no call (miss_param: a value is missing), the next turn's calls guessed."""
    danach = [s for s in fall[1][runde + 1:] if s]
    if schritt == 0 and not soll and danach:
        return [(n, kw) for n, _, kw in map(als_aufruf, danach[0])]
    return normal(runde, schritt, soll)


def nicht_angeboten(fall, runde, schritt, soll):
    """A name no class has beside the first turn's calls, and the held-back function (miss_func) called in the
    first turn as the ground truth calls it after its turn: BFCL runs any method of the classes, offered or not."""
    if schritt == 0 and runde == 0:
        t, (name, *_) = next(iter(fall[0].get("missed_function", {}).items()), ("0", (None,)))
        spaeter = [als_aufruf(c) for s in fall[1][int(t):] for c in s]
        return [*soll, ("format_disk", {"drive": "c"}), *((n, kw) for n, _, kw in spaeter if n == name)][:len(soll) + 2]
    return normal(runde, schritt, soll)


def falscher_typ(fall, runde, schritt, soll):
    if schritt == 0 and runde == erste_mit(fall):
        neu = []
        for name, args in soll:
            k = next((k for k, v in args.items() if isinstance(v, (int, float)) and not isinstance(v, bool)), None)
            neu.append((name, {**args, k: str(args[k])} if k else args))
        return neu
    return normal(runde, schritt, soll)


def einundzwanzig(fall, runde, schritt, soll):
    """21 steps with a read in the first turn with calls, its calls in the last: BFCL force-quits the case."""
    if runde == erste_mit(fall):
        return [lesen(fall)] if schritt < 20 else soll if schritt == 20 else None
    return normal(runde, schritt, soll)


def zwanzig(fall, runde, schritt, soll):
    """Exactly 20 steps with calls, then a text: no force-quit."""
    if runde == erste_mit(fall):
        return [lesen(fall)] if schritt < 19 else soll if schritt == 19 else None
    return normal(runde, schritt, soll)


def kaputt(fall, runde, schritt, soll):
    """Arguments that do not decode in the first turn with calls: the turn ends there."""
    if runde == erste_mit(fall) and schritt == 0:
        return [(soll[0][0], "{\"x\": ")]
    return normal(runde, schritt, soll)


ABWEICHUNGEN = {"weggelassen": weggelassen, "wert_geaendert": wert_geaendert, "extra_lesen": extra_lesen,
                "vertauscht": vertauscht, "zu_frueh": zu_frueh, "ungefragt": ungefragt,
                "nicht_angeboten": nicht_angeboten, "falscher_typ": falscher_typ, "einundzwanzig": einundzwanzig,
                "zwanzig": zwanzig, "kaputt": kaputt}


def leer_im_ersten(fall, runde, schritt, soll):
    """An empty answer where the first turn with calls is due (the server counted 20 tokens for it)."""
    if runde == erste_mit(fall) and schritt == 0:
        return {"role": "assistant", "content": ""}
    return normal(runde, schritt, soll)


def als_text_im_ersten(fall, runde, schritt, soll):
    """The first turn's calls written as text in a chat template's form, never read into tool_calls."""
    if runde == erste_mit(fall) and schritt == 0:
        return {"role": "assistant", "content": "".join(
            f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>" for n, a in soll)}
    return normal(runde, schritt, soll)
