"""Our ``gc_budget`` against JAATO's own (jaato-server), on the same sessions, side by side.

jaato-server is never a dependency of this project: install it in a throwaway virtualenv and
name its interpreter::

    python -m venv /tmp/jaato-venv && /tmp/jaato-venv/bin/pip install jaato-server
    python benchmarks/jaato_side_by_side.py --jaato-python /tmp/jaato-venv/bin/python \\
        [--sizes 100 1000 10000] [--no-pair-heavy] [--repeat 5]

(or set ``JAATO_PYTHON``). Each shape of ``benchmarks/gc.py`` (reference shape at 85 % usage,
and the pair-heavy one) is generated once with ``gcengine.synthetic`` and written as a JAATO
session file (``dump_session`` plus the budget as ``budget_state``) next to a ``gc.json``
(``dump_gc_config``: gc_budget, threshold 80, target 60, pressure 90, preserve 5).
``benchmarks/jaato_timing.py`` then runs under JAATO's interpreter, loads them with JAATO's own
serializer and ``load_gc_from_file``, and times JAATO's ``collect`` on two budgets (see that
file): ``file``, JAATO's load path restoring the file's budget, the same tree and figures as
ours; ``rebuilt``, the per-message budget a running JAATO session makes (chars/4). Ours is
timed in this process on the same history and tree.

Figures are medians of ``--repeat`` runs. When the engine is importable under JAATO's
interpreter too (installed in its venv, as the ``inside`` column needs), our ``collect`` and
``run_gc`` are timed there as well, on the same generated session, in turn with JAATO's
collect round by round, and the ``ours ms``, ``run_gc``, ``ratio`` and ``run`` columns are
those: both sides under the same load. Otherwise they are timed in this process, after
JAATO's side has finished:

* ``collect``: collect on a budget built just before and not timed, nor is the usage handed
  to it (JAATO's session works that out, ``get_context_usage``, before it calls whichever
  plugin it has: the same cost for both sides). Our budget carries its conversation index,
  made while the budget is built, so this excludes building the index;
* ``build+collect``: building the budget (ours: ``rebuild_budget``, index included, token
  counter cache warm; JAATO file: ``restore_conversation_from_snapshot``; JAATO rebuilt:
  ``_update_conversation_budget``, which also makes the budget snapshot it emits) and collect;
* ``run_gc``: our whole run on the loaded session (collect, the new session and its budget
  updated from what the run removed and inserted). Two ratios are printed: ``ratio`` is
  collect against collect, ``run`` JAATO's collect alone against our whole run;
* ``inside``: when the engine is installed in JAATO's venv too, JAATO's collect against our
  ``gc_gcengine_budget`` plugin called by the timing script as JAATO calls it, with JAATO's
  own history and budget objects (converting them and the answer back included), on the same
  budget: one plugin for every collection, as a session keeps it, which reuses the messages
  it converted the time before (the first of the runs converts them all); ``cold``, a new
  plugin for each collection, which converts every message every time. JAATO's collect and
  ours in JAATO are timed in turn, round by round, in JAATO's process, so the ``inside`` and
  ``cold`` ratios compare runs under the same load.

Whichever release pip installs works: jaato-server 1.x (``jaato_server.shared``; Python 3.12 or
later gets it) and 0.x (a top-level ``shared`` package; what pip picks under Python 3.11).

The benchmark pauses Python's cycle collector on neither side (our plugin in JAATO pauses it
for its own call, as it always does); each timed call starts after a full collection, untimed,
so that none pays for the garbage of the one before. JAATO's trace log (on by default in
JAATO: a line per removed item appended to a file in the temp directory) is switched off with
its own ``JAATO_TRACE_LOG=""`` unless ``--jaato-trace`` is given; ours has nothing similar.

The freed columns are items in the removal list, messages gone from the history and budget
tokens freed, each in that budget's own units, with usage after; they show whether the two did
comparable work. JAATO's result is its own return
value; JAATO does not change the budget in ``collect`` (the session applies the removal list).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gcengine
from gcengine import (
    GCTriggerReason,
    SessionShape,
    context_usage,
    counter_by_name,
    generate_session_file,
    load_counter,
    load_gc_plugin,
    plugin_options,
)

USAGE_PERCENT = 85
POLICY = {
    "type": "budget",
    "threshold_percent": 80,
    "target_percent": 60,
    "pressure_percent": 90,
    "preserve_recent_turns": 5,
}
PAIR_HEAVY = SessionShape(turns=8_000, tool_every=1, user_chars=80, model_chars=80, seed=3)
TIMING_SCRIPT = Path(__file__).resolve().parent / "jaato_timing.py"
JAATO_MODES = ("file", "rebuilt")


class Blocked(Exception):
    """The JAATO side cannot run; the message says why."""


def session_at(shape: SessionShape, usage: float) -> gcengine.Session:
    session = gcengine.load_session(generate_session_file(shape))
    limit = int(session.budget.total_tokens() * 100 / usage)
    session = session.model_copy(update={"context_limit": limit})
    session.budget = gcengine.rebuild_budget(session)
    return session


def median_ms(times: list[float]) -> float:
    return statistics.median(times) * 1000


Timed = Callable[[], Callable[[], Any]]
"""Prepares one timed call (untimed: a budget built, say) and returns it."""


def engine_timers(session: gcengine.Session, config: gcengine.GCConfig) -> dict[str, Timed]:
    """Our two timed calls on ``session``: ``collect`` (on a budget built, and the usage
    worked out, before it) and the whole ``run_gc``. ``jaato_timing.py`` times them too, in
    turn with JAATO's collect, when the engine is importable beside JAATO."""
    plugin = load_gc_plugin("gc_budget", plugin_options(config))
    counter = counter_by_name(session.token_counter)
    collect_counter = load_counter()
    turns = len(session.turns())

    def collect() -> Callable[[], Any]:
        budget = gcengine.rebuild_budget(session, counter)
        usage = context_usage(budget, turns)
        return lambda: plugin.collect(  # type: ignore[call-arg]
            session.history,
            usage,
            config,
            GCTriggerReason.THRESHOLD,
            budget,
            counter=collect_counter,
        )

    def run() -> Callable[[], Any]:
        return lambda: gcengine.run_gc(session, config, plugin=plugin)

    return {"ours_collect": collect, "ours_run": run}


def ours(session: gcengine.Session, config: gcengine.GCConfig, repeat: int) -> dict[str, Any]:
    timers = engine_timers(session, config)
    counter = counter_by_name(session.token_counter)

    def build() -> gcengine.InstructionBudget:
        return gcengine.rebuild_budget(session, counter)

    def timed(prepare: Timed) -> float:
        call = prepare()
        gc.collect()  # what the last call left is not this one's to collect
        started = time.perf_counter()
        call()
        return time.perf_counter() - started

    collect_times = [timed(timers["ours_collect"]) for _ in range(repeat)]
    total_times, build_times = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        build()
        built = time.perf_counter() - started
        total_times.append(built + timed(timers["ours_collect"]))
        build_times.append(built)
    run_times = [timed(timers["ours_run"]) for _ in range(repeat)]
    budget = build()
    new_history, result = timers["ours_collect"]()()
    total = budget.total_tokens()
    freed = sum(item.tokens_freed for item in result.removal_list)
    kept = {message.message_id for message in new_history}
    return {
        "collect_ms": median_ms(collect_times),
        "build_collect_ms": median_ms(total_times),
        "build_ms": median_ms(build_times),
        "run_ms": median_ms(run_times),
        "budget_tokens": total,
        "items": result.items_collected,
        "reasons": dict(Counter(str(item.reason.value) for item in result.removal_list)),
        "messages_removed": sum(1 for m in session.history if m.message_id not in kept),
        "budget_tokens_freed": freed,
        "percent_after": (total - freed) * 100 / session.context_limit,
    }


def jaato_file(session: gcengine.Session) -> str:
    """The session as a JAATO file with its budget as ``budget_state``, as a running JAATO
    saves one (``dump_session`` writes a budget only when the file it read recorded one)."""
    written = json.loads(gcengine.dump_session(session, indent=None))
    conversation = session.budget.get_entry(gcengine.InstructionSource.CONVERSATION)
    assert conversation is not None
    written["budget_state"] = conversation.to_dict()
    return json.dumps(written, separators=(",", ":"), ensure_ascii=False)


def jaato_python(argument: str | None) -> str:
    chosen = argument or os.environ.get("JAATO_PYTHON")
    if not chosen:
        raise Blocked(
            "no JAATO interpreter: pass --jaato-python or set JAATO_PYTHON (a virtualenv with "
            "jaato-server installed, e.g. python -m venv /tmp/jaato-venv && "
            "/tmp/jaato-venv/bin/pip install jaato-server)"
        )
    found = shutil.which(chosen)
    if found is None:
        raise Blocked(f"JAATO interpreter {chosen!r} not found or not executable")
    return found


def run_jaato(python: str, manifest: Path, timeout: float, trace: bool) -> dict[str, Any]:
    environment = dict(os.environ)
    if not trace:
        environment["JAATO_TRACE_LOG"] = ""  # JAATO's own switch: an empty value disables it
    try:
        finished = subprocess.run(
            [python, str(TIMING_SCRIPT), str(manifest)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=environment,
        )
    except subprocess.TimeoutExpired as error:
        raise Blocked(f"the JAATO timing script did not finish in {timeout:.0f} s") from error
    except OSError as error:
        raise Blocked(f"cannot start {python}: {error}") from error
    lines = finished.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):
        stderr = finished.stderr.strip().splitlines()[-5:]
        raise Blocked(
            f"the JAATO timing script exited {finished.returncode} without a result; "
            "its last words: " + (" | ".join(stderr) or "(nothing)")
        )
    if "error" in answer:
        raise Blocked(f"JAATO side: {answer['error']}")
    return answer


def freed(figures: dict[str, Any]) -> str:
    return (
        f"{figures['items']:,} items, {figures['messages_removed']:,} msgs, "
        f"{figures['budget_tokens_freed']:,} tok -> {figures['percent_after']:.1f} %"
    )


def print_table(rows: list[dict[str, Any]]) -> None:
    header = (
        f"{'shape':<24} {'JAATO budget':<13} {'JAATO ms':>9} {'+build':>9} "
        f"{'ours ms':>8} {'+build':>8} {'run_gc':>8} {'ratio':>6} {'ratio+b':>7} "
        f"{'run':>6} {'inside':>7} {'cold':>6}  freed (JAATO | ours)"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        mine = row["ours"]
        for mode in JAATO_MODES:
            theirs = row.get(mode)
            if theirs is None:
                continue
            if "error" in theirs:
                print(f"{row['shape']:<24} {mode:<13} unavailable: {theirs['error']}")
                continue
            # Ours timed in turn with JAATO's collect in JAATO's process, where it could be.
            collect_ms = theirs.get("ours_collect", mine)["collect_ms"]
            run_ms = theirs["ours_run"]["collect_ms"] if "ours_run" in theirs else mine["run_ms"]
            ratio = theirs["collect_ms"] / collect_ms
            ratio_built = theirs["build_collect_ms"] / mine["build_collect_ms"]
            ratio_run = theirs["collect_ms"] / run_ms
            ratio_inside, ratio_cold = (
                f"{theirs['collect_ms'] / theirs[key]['collect_ms']:{width}.1f}x"
                if key in theirs
                else " " * (width - 2) + "n/a"
                for key, width in (("inside", 6), ("inside_cold", 5))
            )
            print(
                f"{row['shape']:<24} {mode:<13} {theirs['collect_ms']:9.1f} "
                f"{theirs['build_collect_ms']:9.1f} {collect_ms:8.1f} "
                f"{mine['build_collect_ms']:8.1f} {run_ms:8.1f} {ratio:5.1f}x "
                f"{ratio_built:6.1f}x {ratio_run:5.1f}x {ratio_inside} {ratio_cold}  "
                f"{freed(theirs)} | {freed(mine)}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jaato-python", help="interpreter with jaato-server (or JAATO_PYTHON)")
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 1_000, 10_000])
    parser.add_argument("--no-pair-heavy", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds for JAATO's side")
    parser.add_argument("--json", action="store_true", help="also print every figure as JSON")
    parser.add_argument(
        "--jaato-trace",
        action="store_true",
        help="leave JAATO's trace log on (its default: a line per removed item, to a file)",
    )
    args = parser.parse_args()
    try:
        python = jaato_python(args.jaato_python)
        shapes = [(f"{n:,} turns", SessionShape(turns=n, seed=n)) for n in args.sizes]
        if not args.no_pair_heavy:
            shapes.append(("pair-heavy 8,000 turns", PAIR_HEAVY))
        config = gcengine.load_gc_config(POLICY, env={})
        with tempfile.TemporaryDirectory(prefix="jaato-side-by-side-") as scratch:
            directory = Path(scratch)
            (directory / "gc.json").write_text(json.dumps(gcengine.dump_gc_config(config)))
            sessions, manifest_shapes = [], []
            for index, (name, shape) in enumerate(shapes):
                session = session_at(shape, USAGE_PERCENT)
                path = directory / f"session_{index}.json"
                path.write_text(jaato_file(session), encoding="utf-8")
                sessions.append((name, session))
                manifest_shapes.append(
                    {
                        "name": name,
                        "session": str(path),
                        "context_limit": session.context_limit,
                        "percent": USAGE_PERCENT,
                        "engine_shape": dataclasses.asdict(shape),
                    }
                )
            manifest = {
                "gc_config": str(directory / "gc.json"),
                "repeat": args.repeat,
                "modes": list(JAATO_MODES),
                "shapes": manifest_shapes,
            }
            manifest_path = directory / "manifest.json"
            manifest_path.write_text(json.dumps(manifest))
            jaato = run_jaato(python, manifest_path, args.timeout, args.jaato_trace)
    except Blocked as blocked:
        sys.exit(f"jaato_side_by_side: cannot compare: {blocked}")
    rows = []
    for (name, session), theirs in zip(sessions, jaato["rows"], strict=True):
        rows.append(
            {
                "shape": name,
                "messages": len(session.history),
                "ours": ours(session, config, args.repeat),
                **{mode: theirs[mode] for mode in JAATO_MODES if mode in theirs},
            }
        )
    print(
        f"jaato-server {jaato['jaato_server']} (Python {jaato['python']}) against gcengine "
        f"(Python {sys.version.split()[0]}); usage {USAGE_PERCENT} %, medians of "
        f"{args.repeat} runs; JAATO ms / ours ms = ratio; JAATO trace log "
        f"{'on' if args.jaato_trace else 'off'}"
    )
    for row in rows:
        tokens = row["ours"]["budget_tokens"]
        print(f"  {row['shape']}: {row['messages']:,} messages, {tokens:,} tokens (ours)")
    print_table(rows)
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
