"""Collection speed of every strategy, in the shapes JAATO's maintainers measured.

Sessions of 100, 1,000 and 10,000 turns (200-token requests, 300-token answers, a 1,000-token
tool result every third turn) with the context limit set so usage is 85 %; policy threshold 80,
target 60, pressure 90, preserve 5. Two figures per strategy, medians of ``--repeat`` runs:

* ``collect``: the plugin's ``collect`` with the budget already built (what JAATO's figures
  time). A built budget carries its conversation laid out flat (``ConversationIndex``), made
  while it was built;
* ``cold``: the same on a copy of the budget, which has no index yet: the collection reads the
  budget tree first (and remembers what it read, so only the first collection pays);
* ``build``: building the session's budget (``rebuild_budget``, as a load does), which makes
  the index along with the tree;
* ``run_gc``: the whole run, including rebuilding the budget of the new history (the figures
  of the messages kept are taken from the budget before).

The pair-heavy case is the one that is quadratic in JAATO (a linear scan of the budget per
tool result removed): every turn has a tool exchange and only exchanges need to go.

The replay figure is ``simulate`` (what a policy editor previews) on the 1,000-turn session
with a context limit a tenth of its size, under gc_budget: threshold mode collects now and
then, continuous mode (pressure 0) after nearly every turn.

Everything runs inside ``gcengine.cyclic_gc_paused()``, as the command line and a background
worker run the engine (a web request leaves the cycle collector alone, and is slower for it).

JAATO's medians on a 2-vCPU machine (reference section 9), for comparison:
gc_budget 1.9-2.1 ms (100 turns), 16.8-18.7 ms (1,000), 194-225 ms (10,000);
truncate 0.8 / 6.8-9.5 / 92-186 ms. Pair-heavy in JAATO: 10-12 s at 24,000 children.

    python benchmarks/gc.py [--sizes 100 1000 10000] [--repeat 5] [--replay-turns 1000 ...]
                            [--replay]

``--replay`` times the replay alone; several ``--replay-turns`` show how it grows (its time per
1,000 turns at each size). ``benchmarks/jaato_side_by_side.py`` times JAATO's own
gc_budget (jaato-server, in a separate virtualenv) against ours on these shapes.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path

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
    run_gc,
    simulate,
)

STRATEGIES = ("gc_truncate", "gc_summarize", "gc_hybrid", "gc_budget")
POLICY = {
    "threshold_percent": 80,
    "target_percent": 60,
    "pressure_percent": 90,
    "preserve_recent_turns": 5,
}


def session_at(shape: SessionShape, usage: float) -> gcengine.Session:
    session = gcengine.load_session(generate_session_file(shape))
    limit = int(session.budget.total_tokens() * 100 / usage)
    session = session.model_copy(update={"context_limit": limit})
    session.budget = gcengine.rebuild_budget(session)
    return session


def median_ms(function: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()  # type: ignore[operator]
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def measure(session: gcengine.Session, config: gcengine.GCConfig, name: str, repeat: int) -> str:
    plugin = load_gc_plugin(name, plugin_options(config))
    usage = context_usage(session.budget, len(session.turns()))
    counter = load_counter()

    def collect(budget: gcengine.InstructionBudget) -> None:
        plugin.collect(  # type: ignore[call-arg]
            session.history, usage, config, GCTriggerReason.THRESHOLD, budget, counter=counter
        )

    collect_ms = median_ms(functools.partial(collect, session.budget), repeat)
    copies = [session.budget.model_copy(deep=True) for _ in range(repeat)]
    cold_ms = median_ms(lambda: collect(copies.pop()), repeat)
    outcome = run_gc(session, config, plugin=plugin)
    run_ms = median_ms(lambda: run_gc(session, config, plugin=plugin), repeat)
    after = outcome.budget_after.utilization_percent()
    return (
        f"{name:<13} collect {collect_ms:7.1f} ms  cold {cold_ms:7.1f} ms  "
        f"run_gc {run_ms:7.1f} ms  {outcome.result.items_collected:5} items -> {after:5.1f} %"
    )


def build_ms(session: gcengine.Session, repeat: int) -> float:
    """Building the session's budget, index included (the counter's text cache is warm)."""
    counter = counter_by_name(session.token_counter)
    return median_ms(functools.partial(gcengine.rebuild_budget, session, counter), repeat)


def replay(turns: int, repeat: int) -> dict[str, float]:
    """Milliseconds of each mode's replay of a ``turns``-turn session."""
    session = gcengine.load_session(generate_session_file(SessionShape(turns=turns, seed=turns)))
    session = session.model_copy(update={"context_limit": session.budget.total_tokens() // 10})
    session.budget = gcengine.rebuild_budget(session)
    print(f"replay: {turns:,} turns, context limit a tenth of the session, gc_budget")
    taken = {}
    for mode, pressure in (("threshold", 90), ("continuous", 0)):
        config = gcengine.load_gc_config(
            {**POLICY, "type": "budget", "pressure_percent": pressure}, env={}
        )
        collections = len(simulate(session, config).events)
        taken[mode] = median_ms(functools.partial(simulate, session, config), repeat)
        print(f"  {mode:<13} simulate {taken[mode]:8.1f} ms   {collections:5} collections")
    return taken


def replay_sizes(sizes: list[int], repeat: int) -> None:
    """Replays at each size, and each mode's time per 1,000 turns (linear: the same at each)."""
    taken = {turns: replay(turns, repeat) for turns in sizes}
    if len(sizes) > 1:
        for mode in ("threshold", "continuous"):
            rates = ", ".join(f"{taken[t][mode] / t * 1000:.0f}" for t in sizes)
            print(f"  {mode:<13} ms per 1,000 turns at {', '.join(map(str, sizes))}: {rates}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1_000, 10_000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--replay-turns", type=int, nargs="+", default=[1_000])
    parser.add_argument("--replay", action="store_true", help="only the replay")
    args = parser.parse_args()
    with gcengine.cyclic_gc_paused():
        measure_all(args)


def measure_all(args: argparse.Namespace) -> None:
    if args.replay:
        replay_sizes(args.replay_turns, args.repeat)
        return
    config = gcengine.load_gc_config(POLICY, env={})
    for turns in args.sizes:
        session = session_at(SessionShape(turns=turns, seed=turns), 85)
        tokens = session.budget.total_tokens()
        print(
            f"{turns:,} turns, {len(session.history):,} messages, {tokens:,} tokens, "
            f"budget build {build_ms(session, args.repeat):.1f} ms"
        )
        for name in STRATEGIES:
            print("  " + measure(session, config, name, args.repeat))
    pair_heavy = session_at(
        SessionShape(turns=8_000, tool_every=1, user_chars=80, model_chars=80, seed=3), 85
    )
    print(f"pair-heavy: {len(pair_heavy.history):,} messages, every turn a tool exchange")
    print("  " + measure(pair_heavy, config, "gc_budget", args.repeat))
    replay_sizes(args.replay_turns, args.repeat)


if __name__ == "__main__":
    main()
