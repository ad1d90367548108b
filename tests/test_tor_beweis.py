"""The gate weighs every answer the runs received: a re-ask adds a draw, a count outweighs a label, a server is its
build and its template, a model a cache answered for was not asked, and a way out names the run, the cases and the
command. Each over loopback HTTP, as --vergleich --streng runs in a fine-tuner's CI."""

import hashlib
import json
import random
import uuid

import pytest

import messen

from conftest import (FAELLE, TEXT_ANTWORT, completion, messung, openai_nachricht, richtig, vorbereitet,
                      zeilen)
from test_tor import ABGESCHNITTEN, LEER_UNGEZAEHLT, STILL, sonst_richtig, tor

GRENZE = ("--extra", '{"max_tokens": 256}')
AM_LIMIT = {"prompt_tokens": 900, "completion_tokens": 256}  # every token max_tokens allowed


def am_limit(text):
    """An answer of text that used the whole token budget, labelled stop (llama.cpp before #7198)."""
    return completion({"role": "assistant", "content": text}, "stop", AM_LIMIT)


# ---------------------------------------------------------------------------
# A count outweighs a label
# ---------------------------------------------------------------------------

SCHLEIFE = "Let me see. " + "and then I look at the calendar again, " * 12


@pytest.mark.parametrize("text, grenze", [
    (SCHLEIFE, GRENZE),  # a loop, labelled stop
    (SCHLEIFE, ()),  # a loop is one under any limit: more tokens only make it longer
    ("Let me check which contact you mean before I change anything, since the request names", GRENZE),  # cut
], ids=["schleife", "schleife_ohne_grenze", "mitten_im_satz"])
def test_am_limit_mit_stop_ist_abgeschnitten(cli, endpunkt, text, grenze):
    """B uses the whole budget in every S4/S5 case and says stop: cut, the model's under the cap both runs had."""
    rc, out, err = tor(cli, endpunkt, richtig, sonst_richtig({i: am_limit(text) for i in STILL}), *grenze)
    assert (rc, err) == (3, "messen: b is worse than a beyond chance at 5 % over all cases "
                            f"(p = {2 / 2 ** 14:.3g}) and in holding still (p = {2 * 2 / 2 ** 14:.3g}, "
                            "Holm-corrected); --streng exits 3\n")
    k = json.loads(cli("--bewerten", "b", "--json")[1])
    assert (k["stillgehalten"], k["diagnose"]["abgeschnitten"] + k["diagnose"]["schleife"]) == (0 / 14, 14)


def test_am_limit_ohne_grenze_zaehlt_das_label(cli, endpunkt):
    """Without max_tokens sent, no count can reach it: a text labelled stop that does not loop is an answer."""
    rc, out, err = tor(cli, endpunkt, richtig, sonst_richtig({i: am_limit(TEXT_ANTWORT) for i in STILL}))
    assert (rc, err) == (0, "")


def alles_tool_calls(fall, body, nummer):
    """A proxy that labels every answer tool_calls, text answers too."""
    antwort = richtig(fall, body, nummer) if fall else completion({"role": "assistant", "content": "OK"})
    return dict(antwort, choices=[dict(antwort["choices"][0], finish_reason="tool_calls")])


def test_ein_umgeschriebenes_label_wird_genannt(cli, endpunkt):
    status, out, err = cli(*messung(endpunkt(alles_tool_calls).url))
    assert status == 0, err
    assert ("  label_umgeschrieben 14: answers of text alone labelled finish_reason tool_calls, where every answer "
            "is so labelled: a proxy or the server rewrites the label; remove what rewrites it and measure again: a "
            "cut answer or lost calls cannot be told by it here. They are graded as calls announced and lost "
            "(angekuendigt), whose they are cannot be told.") in out.splitlines()


def test_pruefen_mit_umgeschriebenem_label_ist_nicht_bereit(cli, endpunkt):
    status, out, err = cli("--pruefen", *messung(endpunkt(alles_tool_calls).url))
    assert ("  FAIL  usage and finish_reason are present, but the answer to \"Say OK.\", asked without tools, is "
            "labelled finish_reason tool_calls: a proxy or the server rewrites the label, so lost calls cannot be "
            "told from it") in out.splitlines()
    assert status == 1 and "set up for a measurement" not in out


# ---------------------------------------------------------------------------
# No answer is thrown away
# ---------------------------------------------------------------------------

WACKELIG = [f["id"] for f in FAELLE][:16]  # S1-1 ... S2-8
IM_DENKEN = completion({"role": "assistant", "content": None, "reasoning_content": "The user wants the contact."})


def gezogen(p, seed, daneben):
    """Right with probability p in the WACKELIG cases, else `daneben`; drawn per request from seed."""
    zufall = random.Random(seed)

    def antwort(fall, body, nummer):
        richtig_ = zufall.random() < p
        return richtig(fall, body, nummer) if fall["id"] not in WACKELIG or richtig_ else daneben(fall)
    return antwort


def falsch(fall):
    return completion(openai_nachricht([{"name": "list_calendars", "args": {}}]), "tool_calls")


def test_klaeren_wiederholt_gibt_dem_gewiederholten_nie_recht(cli, endpunkt):
    """At --temp 0.7, B is right 3 in 10 in 16 cases and else leaves its answer in reasoning_content; A is right 6
    in 10. Asked again six times, B's cannot-tell draws count with its others: never exit 0 (had each re-ask
    replaced its draw, B would end right in about 9 of 10 and better beyond chance)."""
    temp = ("--temp", "0.7", "--n", "3")
    vorbereitet(cli, *messung(endpunkt(gezogen(0.6, 1, falsch)).url, "--tag", "a", *temp))
    b = endpunkt(gezogen(0.3, 2, lambda fall: IM_DENKEN))
    vorbereitet(cli, *messung(b.url, "--tag", "b", *temp))
    for runde in range(6):
        status, out, err = cli("--vergleich", "a", "b", "--streng")
        assert status in (2, 3), (runde, err)
        vorbereitet(cli, *messung(b.url, "--tag", "b", *temp, "--klaeren"))
    status, out, err = cli("--vergleich", "a", "b", "--streng")
    assert status in (2, 3), err
    b_zeilen = zeilen(cli.ausgabe / "b.jsonl")[1:]
    wieder = [a for a in b_zeilen if a.get("frueher")]
    zahl = sum(len(a["frueher"]) for a in wieder)
    assert zahl == b.zahl() - 3 * 42 and len(wieder) <= 3 * 16  # every request's answer is in the file
    assert (f"Asked again: b asked {len(wieder)} outputs again, {zahl} times in all (--klaeren); the figures grade "
            "each output's last draw, a comparison counts every draw the server did not spoil; ") in out


@pytest.mark.parametrize("gleich", [False, True], ids=["richtig", "dieselbe"])
def test_eine_spaetere_zeile_behaelt_die_fruehere_als_beleg(cli, endpunkt, gleich):
    """A later line for the same output, as a re-ask appends it, stands for it; the earlier is kept as evidence,
    also where it came back to the letter the same (at temperature 0 it may). At temperature 0 a later draw that is
    evidence on the model settles an earlier one that could not be told: the model answers one way there."""
    vorbereitet(cli, *messung(endpunkt().url, "--tag", "a"))
    vorbereitet(cli, *messung(endpunkt(sonst_richtig({"S2-1": LEER_UNGEZAEHLT})).url, "--tag", "b"))
    pfad = cli.ausgabe / "b.jsonl"
    spaeter = next(z for z in zeilen(pfad if gleich else cli.ausgabe / "a.jsonl")[1:] if z["id"] == "S2-1")
    with open(pfad, "a", encoding="utf-8") as f:  # S2-1 asked again, without frueher: right, or the same again
        f.write(json.dumps(dict(spaeter, sitzung=1)) + "\n")
    v = json.loads(cli("--vergleich", "a", "b", "--json")[1])
    if gleich:  # B: both draws cannot tell
        assert (v["unklar"], v["test"], v["modell"]["gesamt"]["gegen_b"]["schlechter"]) == (["S2-1"], "permutation",
                                                                                           ["S2-1"])
    else:  # the right draw settles the empty one before it
        assert (v["unklar"], v["test"], v["modell"]["gesamt"]["gegen_b"]["schlechter"]) == ([], "sign", [])
        assert cli("--vergleich", "a", "b", "--streng")[::2] == (0, "")
    status, out, err = cli("--bewerten", "b")
    assert ("Asked again: b asked 1 output again, 1 time in all (--klaeren); the figures grade each output's last "
            "draw, a comparison counts every draw the server did not spoil" + (
                "; 1 came back failing as the draw before, for the same reason: its cause was not fixed" if gleich
                else "") + ".") in out.splitlines()


def test_klaeren_fragt_auch_was_nicht_zu_klaeren_war(cli, endpunkt):
    """--klaeren asks again the cannot-tell outputs (an empty answer without a token count), not only the server's."""
    server = endpunkt(sonst_richtig({"S2-1": lambda nummer: LEER_UNGEZAEHLT if nummer == 1 else None}))
    vorbereitet(cli, *messung(server.url, "--tag", "b"))
    status, out, err = cli(*messung(server.url, "--tag", "b", "--klaeren"))
    assert (status, server.zahl("S2-1"), server.zahl()) == (0, 2, 43)
    s21 = next(a for a in zeilen(cli.ausgabe / "b.jsonl")[1:] if a["id"] == "S2-1")
    assert [z["nachricht"]["content"] for z in s21["frueher"][0]] == [None]  # the empty draw, kept


def test_klaeren_fragt_keinen_schnitt_den_nur_eine_grenze_klaert(cli, endpunkt):
    """A cut answer without a limit the user set cannot be told (as the verdict says); asked again under the same
    settings it is cut again, so --klaeren leaves it: a limit set for both runs settles it (KLAERT)."""
    server = endpunkt(sonst_richtig({"S2-1": ABGESCHNITTEN}))
    vorbereitet(cli, *messung(server.url, "--tag", "b"))
    status, out, err = cli(*messung(server.url, "--tag", "b", "--klaeren"))
    assert (status, server.zahl("S2-1"), server.zahl()) == (0, 1, 42)
    assert err.splitlines()[0].endswith("holds a complete run, shown as saved (--neu measures anew)")


@pytest.mark.parametrize("na, nb", [(1, 1), (3, 3), (1, 3)])
def test_ein_wackeliges_modell_gegen_sich_selbst(na, nb):
    """A/A: one flaky model against itself, at n 1, n 3 and mixed, is called worse in at most 5 % of pairs."""
    from test_tor import gezogener_lauf
    zufall, paare, schlechter = random.Random(10 * na + nb), 200, 0
    for _ in range(paare):
        p = {f["id"]: zufall.choice([0.2, 0.5, 0.8, 0.95]) for f in FAELLE}
        v = messen.vergleiche(gezogener_lauf(zufall, p, na, "a"), gezogener_lauf(zufall, p, nb, "b"))
        assert v.nicht_vergleichbar is None  # no rule of evidence fires on one honest model against itself
        schlechter += v.ergebnis == "schlechter"
    assert schlechter <= 0.05 * paare


# ---------------------------------------------------------------------------
# A server is its build and its template; one server is one server
# ---------------------------------------------------------------------------

def llama(build, vorlage):
    return {"/v1/models": {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "llamacpp"}]},
            "/props": {"build_info": build, "chat_template": vorlage, "chat_template_caps": {"supports_tools": True}}}


QWEN = "{% for tool in tools %}{{ tool }}{% endfor %}<tool_call>"
OHNE_PARALLEL = "{% for tool in tools %}{{ tool }}{% endfor %}<tool_call>{# one call per turn #}"


def kurz(vorlage):
    return hashlib.sha256(vorlage.encode()).hexdigest()[:12]


ANDERER_BUILD = "another build or version, whose own limits are measured with its model; measure both on one build"


@pytest.mark.parametrize("seiten_b, was", [
    (llama("b7011", OHNE_PARALLEL), ANDERER_BUILD.replace("version", "version and chat template")),
    (llama("b6800", OHNE_PARALLEL), "another chat template, whose rendering is measured with its model; measure both "
     "on one, or, where the fine-tune ships its own template, compare each model with its own: --mit-vorlage"),
    (llama("b7011", QWEN), ANDERER_BUILD)], ids=["beides", "vorlage", "build"])
def test_ein_anderer_build_oder_eine_andere_vorlage_ist_nicht_vergleichbar(cli, endpunkt, seiten_b, was):
    vorbereitet(cli, *messung(endpunkt(seiten=llama("b6800", QWEN)).url, "--tag", "a"))
    vorbereitet(cli, *messung(endpunkt(seiten=seiten_b).url, "--tag", "b"))
    wort = lambda s: f"llama.cpp {s['/props']['build_info']} (/v1/models: owned_by llamacpp; chat template " \
        f"{kurz(s['/props']['chat_template'])})"  # noqa: E731
    assert cli("--vergleich", "a", "b", "--streng")[::2] == (2, (
        f"messen: cannot tell whether the model of b is worse than a's: a was served by {wort(llama('b6800', QWEN))}, "
        f"b by {wort(seiten_b)}: {was}; --streng exits 2\n"))


def test_fortgesetzt_nach_einem_neuen_build_wird_abgelehnt(cli, endpunkt):
    halt = {"an": True}
    server = endpunkt(lambda fall, body, nummer: (400, {"error": {"message": "bad"}}, {})
                      if halt["an"] and fall["id"] == "S3-1" else richtig(fall, body, nummer), llama("b6800", QWEN))
    assert cli(*messung(server.url, "--tag", "t"))[0] == 1
    halt["an"], server.seiten, vorher = False, llama("b7011", QWEN), server.zahl()
    pfad = cli.ausgabe / "t.jsonl"
    assert cli(*messung(server.url, "--tag", "t"))[::2] == (2, (
        f"messen: {pfad} holds 20 outputs; asking for the rest\n"
        f"messen: {pfad} was measured on llama.cpp b6800 (/v1/models: owned_by llamacpp; chat template {kurz(QWEN)}) "
        f"at {server.url}; {server.url} is now llama.cpp b7011 (/v1/models: owned_by llamacpp; chat template "
        f"{kurz(QWEN)}): resume it on that server, or use another --tag (--neu measures anew)\n"))
    assert server.zahl() == vorher  # nothing asked of it


def test_ein_server_der_sich_im_lauf_aendert(cli, endpunkt):
    def antwort(fall, body, nummer):
        if fall["id"] == "S3-1":  # mid-run, the server is restarted on another build
            server.seiten = llama("b7011", QWEN)
        return richtig(fall, body, nummer)
    server = endpunkt(antwort, llama("b6800", QWEN))
    status, out, err = cli(*messung(server.url, "--tag", "b"))
    assert status == 0
    assert err.splitlines()[-2] == (
        f"messen: the server changed during the run: llama.cpp b6800 (/v1/models: owned_by llamacpp; chat template "
        f"{kurz(QWEN)}) at its start, llama.cpp b7011 (/v1/models: owned_by llamacpp; chat template {kurz(QWEN)}) "
        "at its end; its outputs mix the two (--neu measures anew)")
    vorbereitet(cli, *messung(endpunkt(seiten=llama("b6800", QWEN)).url, "--tag", "a"))
    status, out, err = cli("--vergleich", "a", "b", "--streng")
    assert status == 2 and "the server of b changed during the run: llama.cpp b6800 (" in err


@pytest.mark.parametrize("url, gleich", [
    ("http://localhost:{port}/v1/chat/completions", True), ("http://[::1]:{port}/v1/chat/completions/", True),
    ("http://127.0.0.1:{port}/v1/chat/completions", True), ("http://127.0.0.1:1{port}/v1/chat/completions", False),
])
def test_eine_url_wie_immer_geschrieben(url, gleich):
    port = 8009
    assert (messen.eine_url(url.format(port=port)) == messen.eine_url(f"http://127.0.0.1:{port}/v1/chat/completions")) \
        is gleich
    assert messen.eine_url("http://example.org/v1") == messen.eine_url("http://example.org:80/v1/")


def test_localhost_und_127_sind_ein_server(cli, endpunkt):
    """The same unidentified endpoint, one run saved as asked at localhost: one URL, comparable."""
    server = endpunkt(seiten={})
    vorbereitet(cli, *messung(server.url, "--tag", "a"))
    vorbereitet(cli, *messung(server.url, "--tag", "b"))
    pfad = cli.ausgabe / "b.jsonl"
    z = zeilen(pfad)
    z[0]["einstellungen"]["url"] = server.url.replace("127.0.0.1", "localhost") + "/"
    pfad.write_text("".join(json.dumps(x) + "\n" for x in z), encoding="utf-8")
    assert cli("--vergleich", "a", "b", "--streng")[::2] == (0, "")


@pytest.mark.parametrize("angabe_a, angabe_b, status", [
    ("vLLM 0.11 behind LiteLLM", "vLLM 0.11 behind LiteLLM", 0),
    ("vLLM 0.11 behind LiteLLM", "vLLM 0.12 behind LiteLLM", 2),
    ("vLLM 0.11 behind LiteLLM", None, 2),
])
def test_ein_angegebener_server(cli, endpunkt, angabe_a, angabe_b, status):
    """Two endpoints no page identifies, at two URLs: the user states what serves them (--server)."""
    for tag, angabe in (("a", angabe_a), ("b", angabe_b)):
        vorbereitet(cli, *messung(endpunkt(seiten={}).url, "--tag", tag, *(["--server", angabe] if angabe else [])))
    rc, out, err = cli("--vergleich", "a", "b", "--streng")
    assert rc == status and ("state the one behind both with --server" in err) is (status == 2)
    rc, out, err = cli("--bewerten", "a")
    assert f"Server: not identified (its /v1/models names no owner messen knows, and no page of its own told it); " \
           f"stated as {angabe_a!r} (--server)" in out.splitlines()


def test_ein_erkannter_und_ein_unerkannter_server_an_zwei_adressen(cli, endpunkt):
    vorbereitet(cli, *messung(endpunkt(seiten=llama("b6800", QWEN)).url, "--tag", "a"))
    b = endpunkt(seiten={})
    vorbereitet(cli, *messung(b.url, "--tag", "b"))
    rc, out, err = cli("--vergleich", "a", "b", "--streng")
    assert rc == 2 and f", b at {b.url}, and the server of b was not identified: whether both are one server " \
                       "cannot be told" in err


# ---------------------------------------------------------------------------
# A model that was not asked is not measured
# ---------------------------------------------------------------------------

def test_ein_cache_der_fuer_das_modell_antwortet(cli, endpunkt):
    """A response cache keyed on the messages answers B with A's answers, tool-call ids included."""
    gesehen = {}

    def mit_ids(fall, body, nummer):
        antwort = json.loads(json.dumps(richtig(fall, body, nummer)))
        for c in antwort["choices"][0]["message"].get("tool_calls") or []:
            c["id"] = f"call_{uuid.uuid4().hex}"  # drawn afresh, as a server does
        return gesehen.setdefault(fall["id"], antwort)
    vorbereitet(cli, *messung(endpunkt(mit_ids).url, "--tag", "a"))
    vorbereitet(cli, *messung(endpunkt(mit_ids).url, "--tag", "a2"))  # the same cache: answers A's again
    gesehen.clear()
    vorbereitet(cli, *messung(endpunkt(mit_ids).url, "--tag", "c"))  # the cache emptied: asked afresh
    rufen = [f["id"] for f in FAELLE if f["erwartet"]]
    assert cli("--vergleich", "a", "a2", "--streng")[::2] == (2, (
        f"messen: cannot tell whether the model of a2 is worse than a's: a2's model was not asked: the answers to "
        f"{len(rufen)} cases ({', '.join(rufen[:12])} and {len(rufen) - 12} more) are a's, tool-call ids included, "
        "as a response cache that keys on the messages and not on the model gives them; measure a2 again with that "
        "cache off (--neu); --streng exits 2\n"))
    assert cli("--vergleich", "a", "c", "--streng")[::2] == (0, "")


def test_mit_wiederholungen_entscheidet_auch_die_groesse(cli, endpunkt):
    """--n 3: in six cases B's outputs are one wrong (the model's) and two empty (the server's): worse both ways,
    by a third or by all of it; in two more A is wrong once. Counted for B the difference is not beyond chance,
    against B it is: the six cases decide by their size alone, and the line names them (never "0 cases ()")."""
    from test_tor import LEER, erfunden
    sechs, zwei = [f["id"] for f in FAELLE][8:14], [f["id"] for f in FAELLE][14:16]
    a = sonst_richtig({i: (lambda nummer, i=i: erfunden(i) if nummer == 3 else None) for i in zwei})
    b = sonst_richtig({i: (lambda nummer, i=i: erfunden(i) if nummer == 1 else LEER) for i in sechs})
    rc, out, err = tor(cli, endpunkt, a, b, "--n", "3")
    v = json.loads(cli("--vergleich", "a", "b", "--json")[1])
    m = v["modell"]["gesamt"]
    assert (m["fuer_b"]["p"], m["gegen_b"]["p"]) == (74 / 256, 8 / 256)
    assert (rc, v["serverseitig"]) == (2, sechs)
    faelle = ", ".join(f"{i} (b #2 of 3, b #3 of 3)" for i in sechs)  # the outputs that decide, named
    assert err.startswith(f"messen: cannot tell whether b is worse than a: 6 cases ({faelle}) could go either way by "
                          "outputs of b that are no evidence on the model")


def test_auf_vllm_nennt_der_ausweg_die_parser_option(cli, endpunkt):
    """On vLLM, B writes bare JSON: whose that is cannot be told there (vLLM forces "required" by a grammar), and
    the way out names vLLM's own option for the form B wrote, as B's diagnosis line does."""
    from test_server import SERVER
    from test_urteil import nackt
    vorbereitet(cli, *messung(endpunkt(seiten=SERVER["vLLM"]).url, "--tag", "a"))
    vorbereitet(cli, *messung(endpunkt(nackt, SERVER["vLLM"]).url, "--tag", "b"))
    status, out, err = cli("--vergleich", "a", "b", "--streng")
    assert (status, err) == (2, "messen: cannot tell whether b is worse than a in what an agent gets done "
                                "(gelungen_nativ): counted against B only, its text calls, whose owner cannot be told "
                                "(the diagnosis names them), make it worse beyond chance; settle that (where b's "
                                "parser is off: --enable-auto-tool-choice with the --tool-call-parser that reads the "
                                "form the model writes (llama3_json for bare JSON)) and measure again; --streng exits "
                                "2\n")
