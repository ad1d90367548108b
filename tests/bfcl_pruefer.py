"""BFCL's own checker, unchanged, for the tests that hold messen's BFCL verdict against it.

    import bfcl_pruefer
    urteil = bfcl_pruefer.laden()        # None where bfcl-eval is not at hand
    urteil(roh, antwort, nachricht)      # True / False, as BFCL's FC mode grades it

bfcl-eval's package imports every model handler it has (and with them torch and a dozen
SDKs) only to know whether a model's names had their dots replaced; its checker itself
needs none of them. So the package is taken without its dependencies, from the
environment or, with MESSEN_BFCL=1, installed once with `pip install --no-deps` under
~/.cache/messen/, and the one module the checker imports for that question
(bfcl_eval.constants.model_config) is given as a stand-in that says "dots replaced",
as BFCL says it for every OpenAI-style model. The checker's code runs as shipped.
"""

import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

PAKET = "bfcl-eval==2026.3.23"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "messen" / PAKET.replace("==", "-")
MODELL = "messen"  # the name the stand-in's one model goes by


def laden():
    """BFCL's verdict on one answer, as a function (see urteil_von); None without bfcl-eval."""
    if str(CACHE) not in sys.path and CACHE.is_dir():
        sys.path.append(str(CACHE))
    if not _da() and os.environ.get("MESSEN_BFCL") == "1":
        installiere()
        sys.path.append(str(CACHE))
    if not _da():
        return None
    stand_in = types.ModuleType("bfcl_eval.constants.model_config")
    stand_in.MODEL_CONFIG_MAPPING = {MODELL: types.SimpleNamespace(underscore_to_dot=True)}
    sys.modules["bfcl_eval.constants.model_config"] = stand_in
    if "filelock" not in sys.modules and not _da("filelock"):  # bfcl_eval.utils imports it for its result files
        sys.modules["filelock"] = types.SimpleNamespace(FileLock=None)
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
    from bfcl_eval.utils import is_empty_output, is_function_calling_format_output
    return urteil_von(ast_checker, Language.PYTHON, is_empty_output, is_function_calling_format_output)


def installiere():
    """bfcl-eval without its dependencies into CACHE: into a folder of this process's own first, then renamed,
    so that two test processes installing at once never mix their files (the later one's is dropped)."""
    neu = CACHE.with_name(f"{CACHE.name}.{os.getpid()}")
    shutil.rmtree(neu, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(neu), PAKET],
                   check=True, timeout=600)
    try:
        os.replace(neu, CACHE)
    except OSError:  # the other process was first
        shutil.rmtree(neu, ignore_errors=True)


def _da(modul="bfcl_eval"):
    try:
        __import__(modul)
        return True
    except ImportError:
        return False


def decode_ast(result):
    """OpenAICompletionsHandler.decode_ast, its FC branch, as bfcl-eval 2026.3.23 ships it."""
    decoded_output = []
    for invoked_function in result:
        name = list(invoked_function.keys())[0]
        params = json.loads(invoked_function[name])
        decoded_output.append({name: params})
    return decoded_output


def urteil_von(ast_checker, python, is_empty_output, is_function_calling_format_output):
    def urteil(kategorie, roh, antwort, nachricht):
        """BFCL's verdict: roh the case's line, antwort its possible_answer line (None for irrelevance), nachricht
        the answer's message. Its FC handler's reading and decoding, then its runner's rules
        (_evaluate_single_relevance_entry, _evaluate_single_ast_entry), then ast_checker, called unchanged."""
        try:  # OpenAICompletionsHandler._parse_query_response_FC, on the message as a dict
            ergebnis = [{c["function"]["name"]: c["function"]["arguments"]} for c in nachricht["tool_calls"]]
        except (KeyError, TypeError):
            ergebnis = nachricht.get("content")
        try:
            decodiert = decode_ast(ergebnis)
        except Exception:  # noqa: BLE001  as BFCL's runner: any failure to decode is "no call"
            decodiert = None
        if "irrelevance" in kategorie:
            return decodiert is None or is_empty_output(decodiert)
        if decodiert is None or not is_function_calling_format_output(decodiert):
            return False
        return ast_checker(roh["function"], decodiert, antwort["ground_truth"], python, kategorie, MODELL)["valid"]
    return urteil


def gesendet():
    """The tools BFCL's generation sends for a case's line (load_dataset_entry's language hint, then
    OpenAICompletionsHandler._compile_tools' convert_to_tool), as a function of the line and its category;
    None without bfcl-eval. The module of convert_to_tool imports response parsers (tree_sitter) and a retry
    decorator (tenacity) it never calls on the way: where they are not installed, stand-ins take their names."""
    if laden() is None:
        return None
    namen = {"tenacity": "retry retry_if_exception_message retry_if_exception_type wait_random_exponential"}
    for teil, was in (("java", "parse_java_function_call"), ("js", "parse_javascript_function_call"),
                      ("json", "parse_json_function_call"),
                      ("xml", "parse_concise_xml_function_call parse_verbose_xml_function_call")):
        namen[f"bfcl_eval.model_handler.parser.{teil}_parser"] = was
    for modul, was in namen.items():
        if not _da(modul):
            sys.modules[modul] = types.SimpleNamespace(**dict.fromkeys(was.split()))
    import copy
    from bfcl_eval.constants.enums import ModelStyle
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
    from bfcl_eval.model_handler.utils import convert_to_tool
    from bfcl_eval.utils import _func_doc_language_specific_pre_processing as mit_hinweis

    def werkzeuge(roh, kategorie):
        funktionen = mit_hinweis(copy.deepcopy(roh["function"]), kategorie)
        return convert_to_tool(funktionen, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)
    return werkzeuge


def mehrzug():
    """BFCL's verdict on a multi-turn transcript, by its own runner's steps (eval_runner's
    _evaluate_single_multi_turn_entry: the force-quit check, decode_execute per step, then multi_turn_checker,
    called unchanged), as a function of the case's line, its ground truth and, per turn, each step's message;
    None without bfcl-eval. Each call runs under a name of its own: BFCL keeps instances in globals() by model
    name and case id, and one name twice would carry a case's state into the next call."""
    if gesendet() is None:
        return None
    import itertools
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import is_empty_execute_response
    from bfcl_eval.model_handler.utils import convert_to_function_call
    zaehler = itertools.count()

    def antwort_von(nachricht):  # OpenAICompletionsHandler._parse_query_response_FC, on the message as a dict
        try:
            return [{c["function"]["name"]: c["function"]["arguments"]} for c in nachricht["tool_calls"]]
        except (KeyError, TypeError):
            return nachricht.get("content")

    def urteil(roh, ground_truth, runden):
        if len(runden) != len(ground_truth):
            return False
        decodiert = []
        for schritte in runden:
            decodiert.append([])
            for nachricht in schritte:
                try:
                    d = convert_to_function_call(antwort_von(nachricht))
                except Exception:  # noqa: BLE001  as BFCL's runner: a step that fails to decode is left out
                    continue
                if not is_empty_execute_response(d):
                    decodiert[-1].append(d)
        name = f"messen{next(zaehler)}"
        return multi_turn_checker(decodiert, ground_truth, dict(roh), roh["id"].rsplit("_", 1)[0], name)["valid"]
    return urteil


def backends():
    """BFCL's backend classes where bfcl-eval is at hand (the list the scripted model names positional values by)."""
    if laden() is None:
        return None
    import importlib
    namen = {"GorillaFileSystem": "gorilla_file_system", "MathAPI": "math_api", "MessageAPI": "message_api",
             "TwitterAPI": "posting_api", "TicketAPI": "ticket_api", "TradingBot": "trading_bot",
             "TravelAPI": "travel_booking", "VehicleControlAPI": "vehicle_control"}
    return [getattr(importlib.import_module(f"bfcl_eval.eval_checker.multi_turn_eval.func_source_code.{m}"), k)
            for k, m in namen.items()]


def daten():
    """The folder bfcl_eval/data of the bfcl-eval at hand, or None."""
    if laden() is None:
        return None
    import bfcl_eval
    return Path(bfcl_eval.__file__).parent / "data"
