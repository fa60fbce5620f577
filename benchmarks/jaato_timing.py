"""JAATO's side of ``jaato_side_by_side.py``: run by JAATO's interpreter, never by ours.

Imports the standard library and jaato-server (``jaato_server``, ``jaato_sdk``), and the
engine only when it is installed beside JAATO (its plugin in JAATO, and its own collect and
``run_gc`` timed in turn with JAATO's, see ``measure``). Reads a
manifest (argument 1) naming JAATO session files, a ``gc.json`` and a repeat count; loads each
file with JAATO's own serializer, builds JAATO's ``InstructionBudget`` and times the
``gc_budget`` plugin's ``collect``. Prints one JSON object on stdout; on failure, an object
with ``error`` and exit status 2.

Two budgets per session:

* ``file``: the load path of JAATO's daemon: ``deserialize_session_state``, then
  ``InstructionBudget.create_default`` and ``restore_conversation_from_snapshot`` of the
  file's ``budget_state``. JAATO 1.2.0 does not read ``message_id`` back (every loaded message
  gets a new one), so the restored budget would name no message of the history and collect
  would free nothing; the ids are put back from the file so the plugin does real work;
* ``rebuilt``: the budget a running JAATO session makes from that history after its next
  response: ``JaatoSession._update_conversation_budget`` (one ``msg_<i>`` child per message,
  counted by JAATO, chars/4 without a provider), driven on a session object that has only the
  attributes that method reads. The context limit puts usage at the same percentage.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
import traceback
from collections import Counter
from importlib import import_module
from importlib.metadata import version
from types import SimpleNamespace
from typing import Any


def fail(message: str) -> None:
    print(json.dumps({"error": message}))
    sys.exit(2)


def jaato_modules() -> dict[str, Any]:
    """JAATO's GC modules, wherever this release keeps them: ``jaato_server.shared`` (1.x),
    or a top-level ``shared`` package (0.x, the release pip picks under Python 3.11)."""
    errors = []
    for root in ("jaato_server.shared", "shared"):
        try:
            return {
                "InstructionBudget": import_module(f"{root}.instruction_budget").InstructionBudget,
                "InstructionTokenCache": import_module(
                    f"{root}.instruction_token_cache"
                ).InstructionTokenCache,
                "JaatoSession": import_module(f"{root}.jaato_session").JaatoSession,
                "gc": import_module(f"{root}.plugins.gc"),
                "history_media_bytes": import_module(
                    f"{root}.plugins.gc.utils"
                ).history_media_bytes,
                "deserialize_session_state": import_module(
                    f"{root}.plugins.session.serializer"
                ).deserialize_session_state,
            }
        except Exception as error:  # the next layout, then reported to the driver
            errors.append(f"{root}: {type(error).__name__}: {error}")
    fail("cannot import jaato-server's GC modules (" + "; ".join(errors) + ")")
    raise AssertionError  # fail() exits


JAATO = jaato_modules()
InstructionBudget = JAATO["InstructionBudget"]
InstructionTokenCache = JAATO["InstructionTokenCache"]
JaatoSession = JAATO["JaatoSession"]
GCTriggerReason = JAATO["gc"].GCTriggerReason
load_gc_from_file = JAATO["gc"].load_gc_from_file
history_media_bytes = JAATO["history_media_bytes"]
deserialize_session_state = JAATO["deserialize_session_state"]


def median_ms(times: list[float]) -> float:
    return round(statistics.median(times) * 1000, 3)


def usage_of(budget: Any, history: list[Any], turns: int) -> dict[str, Any]:
    """The keys of ``JaatoSession.get_context_usage()`` that the GC reads."""
    return {
        "context_limit": budget.context_limit,
        "total_tokens": effective_total(budget),
        "percent_used": budget.utilization_percent(),
        "tokens_remaining": budget.available_tokens(),
        "effective_input_limit": input_limit(budget),
        "turns": turns,
        "media_bytes": history_media_bytes(history),
    }


def effective_total(budget: Any) -> int:
    """The total the GC threshold is judged on: 1.x scales it by a calibration factor, 0.x
    has only the budget's own total."""
    method = getattr(budget, "effective_total_tokens", None)
    return int(method() if method is not None else budget.total_tokens())


def input_limit(budget: Any) -> int:
    """The prompt size a request can carry: 1.x subtracts the output it reserves, 0.x
    measures against the whole window."""
    method = getattr(budget, "effective_input_limit", None)
    return int(method() if method is not None else budget.context_limit)


def file_builder(state: Any, context_limit: int):
    def build() -> Any:
        budget = InstructionBudget.create_default(state.session_id, context_limit=context_limit)
        budget.restore_conversation_from_snapshot(state.budget_state)
        return budget

    return build


def rebuilt_builder(state: Any, percent: float):
    session = object.__new__(JaatoSession)
    attributes = {
        "_history": SimpleNamespace(messages=state.history),
        "_provider": None,
        "_provider_name_override": None,
        "_runtime": SimpleNamespace(
            provider_name="benchmark", instruction_token_cache=InstructionTokenCache()
        ),
        "_msg_token_cache": {},
        "_turn_model_response_count": 0,
        "_turn_had_tool_calls": False,
        "_cache_plugin": None,
        "_on_instruction_budget_updated": None,
        "_ui_hooks": None,
        "_trace": lambda *args, **kwargs: None,
    }
    for name, value in attributes.items():
        object.__setattr__(session, name, value)
    limit = 0

    def build() -> Any:
        budget = InstructionBudget.create_default(state.session_id, context_limit=limit or 1)
        object.__setattr__(session, "_instruction_budget", budget)
        JaatoSession._update_conversation_budget(session)
        return budget

    limit = int(build().total_tokens() * 100 / percent)
    return build


def measure(
    build: Any,
    history: list[Any],
    turns: int,
    plugins: dict[str, Any],
    config: Any,
    repeat: int,
    timers: dict[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """Each plugin's figures, by name, timed in turn round by round (JAATO's, then ours in
    JAATO, warm and cold, then each of ``timers``: the engine's own collect and run, each a
    function preparing the call to time): on a loaded machine every side sees the same load,
    so the ratios hold even when the times move."""
    timers = timers or {}
    timer_times: dict[str, list[float]] = {name: [] for name in timers}

    def collect(plugin: Any, budget: Any, usage: dict[str, Any]) -> tuple[list[Any], Any]:
        return plugin.collect(history, usage, config, GCTriggerReason.THRESHOLD, budget=budget)

    # The usage is the session's (``get_context_usage``), worked out before JAATO calls a
    # plugin, the same whichever plugin it calls: it is not timed.
    collect_times: dict[str, list[float]] = {name: [] for name in plugins}
    total_times: dict[str, list[float]] = {name: [] for name in plugins}
    build_times: dict[str, list[float]] = {name: [] for name in plugins}
    for _ in range(repeat):
        for name, plugin in plugins.items():
            budget = build()
            usage = usage_of(budget, history, turns)
            gc.collect()  # what the last call left is not this one's to collect
            started = time.perf_counter()
            collect(plugin, budget, usage)
            collect_times[name].append(time.perf_counter() - started)
        for name, prepare in timers.items():
            call = prepare()
            gc.collect()
            started = time.perf_counter()
            call()
            timer_times[name].append(time.perf_counter() - started)
    for _ in range(repeat):
        for name, plugin in plugins.items():
            started = time.perf_counter()
            budget = build()
            built = time.perf_counter()
            usage = usage_of(budget, history, turns)
            gc.collect()
            resumed = time.perf_counter()
            collect(plugin, budget, usage)
            total_times[name].append(time.perf_counter() - resumed + built - started)
            build_times[name].append(built - started)
    figures: dict[str, dict[str, Any]] = {
        name: {"collect_ms": median_ms(times)} for name, times in timer_times.items()
    }
    for name, plugin in plugins.items():
        budget = build()
        usage = usage_of(budget, history, turns)
        new_history, result = collect(plugin, budget, usage)
        total = budget.total_tokens()
        freed = sum(item.tokens_freed for item in result.removal_list)
        kept = {id(message) for message in new_history}
        figures[name] = {
            "collect_ms": median_ms(collect_times[name]),
            "build_collect_ms": median_ms(total_times[name]),
            "build_ms": median_ms(build_times[name]),
            "budget_tokens": total,
            "context_limit": budget.context_limit,
            "percent_before": round(usage["percent_used"], 2),
            "items": result.items_collected,
            "reasons": dict(Counter(item.reason for item in result.removal_list)),
            "messages_removed": sum(1 for message in history if id(message) not in kept),
            "budget_tokens_freed": freed,
            "percent_after": round((total - freed) * 100 / input_limit(budget), 2),
            "details_tokens_freed": result.details.get("tokens_freed"),
        }
    return figures


def engine_timers(shape: dict[str, Any]) -> dict[str, Any]:
    """The engine's own collect and ``run_gc`` on the session the driver made (the same
    generated shape, made the same way), when the engine is importable here: timed in turn
    with JAATO's collect. None otherwise (the driver then times them in its own process)."""
    try:
        import jaato_side_by_side as driver  # beside this script; it imports the engine
    except ImportError:
        return {}
    import gcengine

    session = driver.session_at(gcengine.SessionShape(**shape["engine_shape"]), shape["percent"])
    config = gcengine.load_gc_config(driver.POLICY, env={})
    return driver.engine_timers(session, config)


class Fresh:
    """A new plugin for every collection: nothing kept from the last one (our plugin reuses
    the messages it converted last time, as a JAATO session calls the same plugin with mostly
    the same messages collection after collection)."""

    def __init__(self, make: Any) -> None:
        self.make = make

    def collect(self, *args: Any, **kwargs: Any) -> Any:
        return self.make().collect(*args, **kwargs)


def run(manifest: dict[str, Any]) -> dict[str, Any]:
    loaded = load_gc_from_file(manifest["gc_config"])
    if loaded is None:
        fail(f"JAATO's load_gc_from_file could not read {manifest['gc_config']}")
    plugin, config = loaded
    if plugin.name != "gc_budget":
        fail(f"gc.json loaded {plugin.name}, not gc_budget")
    # The engine's plugin as JAATO loads it, when the engine is installed beside JAATO.
    inside = None
    factory = JAATO["gc"].discover_gc_plugins().get("gc_gcengine_budget")
    if factory is not None:
        options = dict(plugin._config)

        def inside() -> Any:
            made = factory()
            made.initialize(options)
            return made

    results = []
    for shape in manifest["shapes"]:
        with open(shape["session"], encoding="utf-8") as handle:
            data = json.load(handle)
        state = deserialize_session_state(data)
        if len(state.history) != len(data["history"]):
            fail(f"{shape['name']}: JAATO dropped messages while loading the file")
        for message, raw in zip(state.history, data["history"], strict=True):
            message.message_id = raw["message_id"]
        turns = len(state.turn_accounting) or int(data.get("turn_count") or 0)
        row: dict[str, Any] = {"name": shape["name"], "messages": len(state.history)}
        timers = engine_timers(shape)
        for mode in manifest["modes"]:
            try:
                if mode == "file":
                    build = file_builder(state, shape["context_limit"])
                else:
                    build = rebuilt_builder(state, shape["percent"])
                plugins = {"jaato": plugin}
                if inside is not None:  # ours inside JAATO: its objects in, conversion included
                    plugins.update(inside=inside(), inside_cold=Fresh(inside))
                figures = measure(
                    build, state.history, turns, plugins, config, manifest["repeat"], timers
                )
                row[mode] = figures.pop("jaato")
                row[mode].update(figures)
            except Exception as error:  # one mode failing is reported
                row[mode] = {"error": f"{type(error).__name__}: {error}"}
                traceback.print_exc(file=sys.stderr)
        results.append(row)
    return {
        "jaato_server": version("jaato-server"),
        "python": sys.version.split()[0],
        "rows": results,
    }


def main() -> None:
    if len(sys.argv) != 2:
        fail("usage: jaato_timing.py MANIFEST.json")
    with open(sys.argv[1], encoding="utf-8") as handle:
        manifest = json.load(handle)
    print(json.dumps(run(manifest)))


if __name__ == "__main__":
    main()
