"""What scoring anchor retention and recording requests add to a run and a replay.

The session is the demo's coding agent (``gcengine.demo``: paths, errors, decisions and open
work in every stretch), tried against a window small enough that policies collect. Medians of
``--repeat`` runs, the cycle collector paused as the CLI and workers run:

* ``run_gc`` and ``score_collection`` of its result (what a stored run adds);
* ``simulate`` in threshold and continuous mode, without and with ``score_anchors`` (what a
  stored replay adds), and the replay without GC its cost is weighed against;
* ``score_observed_compactions`` on a generated Claude Code transcript with compactions;
* with ``--synthetic 10000``: a generated session of that many turns (JAATO's benchmark
  shape, ``gcengine.synthetic``), ``score_collection`` of a gc_budget run of it, first with
  nothing read yet (every message's anchors are read), then with the session's
  ``anchor_cache`` kept from an earlier score (its messages read and its history counted:
  what a process that keeps the cache pays for the session's later runs), and with a cache
  read back from its record (``cache_from_record``: what the dashboard's scores of a stored
  session count, the record's reading aside), interleaved; and continuous replays of it
  without scores, with them, and with them and the cache (one run each: a replay takes
  seconds): truncate, whose window stays at the target, and gc_budget, which never takes
  preservable content in continuous mode, so its context climbs past the window
  (``--budget-replay``: minutes at 10,000 turns). The scored truncate replays use the
  replay's own scorer (``gcengine.quality.replay_scoring``); figures in ``docs/engine.md``
  (Cost): on a quiet machine the unscored truncate replay took 3.15 s before its window was
  laid out before each collection as the last index grown (3.11 s of CPU after, against 4.28 s
  before, at load 9-10).
  The first score is mostly finding every message's anchors: 4.84 s of CPU at load
  10 once the anchor finder's patterns were tried only on text that may hold a match
  (``gcengine/quality/anchor_cues.py``), where the code before took 6.53 s at load 8.4-9.4.

The load average is printed before and after: the machine is shared.

    python benchmarks/quality.py [--turns 240] [--window 60000] [--repeat 3]
        [--synthetic 10000 [--budget-replay]]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import gcengine  # noqa: E402

THRESHOLD = {
    "type": "budget",
    "threshold_percent": 80,
    "target_percent": 60,
    "pressure_percent": 90,
    "preserve_recent_turns": 5,
}
CONTINUOUS = {**THRESHOLD, "pressure_percent": 0}
TRUNCATE_CONTINUOUS = {
    "type": "truncate",
    "threshold_percent": 80,
    "target_percent": 60,
    "pressure_percent": 0,
}
SUMMARIZE = {"type": "summarize", "threshold_percent": 80, "target_percent": 60}


def median_ms(function: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def claude_code_with_compactions(turns: int) -> bytes:
    from tests.engine.agent_transcripts import Shape, generated_claude_code_rows

    every = max(turns // 5, 1)
    rows = generated_claude_code_rows(
        Shape(turns=turns, compact_after=tuple(range(every, turns, every)))
    )
    return "\n".join(json.dumps(row) for row in rows).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=240)
    parser.add_argument("--window", type=int, default=60_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--synthetic", type=int, default=0, metavar="TURNS")
    parser.add_argument("--budget-replay", action="store_true")
    args = parser.parse_args()
    print(f"load average {load()}")

    demo = gcengine.generate_demo_session(gcengine.DemoShape(turns=args.turns))
    session = gcengine.with_context_limit(gcengine.load_session(json.dumps(demo)), args.window)
    print(
        f"demo session: {args.turns} turns, {session.budget.total_tokens():,} tokens, "
        f"window {args.window:,}; medians of {args.repeat}"
    )
    with gcengine.cyclic_gc_paused():
        for name, policy in (("summarize", SUMMARIZE), ("budget", THRESHOLD)):
            config = gcengine.load_gc_config(policy, env={})
            outcome = gcengine.run_gc(session, config)
            run = median_ms(lambda c=config: gcengine.run_gc(session, c), args.repeat)
            score = median_ms(
                lambda o=outcome: gcengine.score_collection(session, o.session.history),
                args.repeat,
            )
            removed = sum(len(item.message_ids) for item in outcome.result.removal_list)
            print(
                f"run {name:<9} run_gc {run:8.1f} ms; score_collection {score:8.1f} ms "
                f"({removed:,} messages taken out)"
            )
        for name, policy in (("threshold", THRESHOLD), ("continuous", CONTINUOUS)):
            config = gcengine.load_gc_config(policy, env={})
            plain = median_ms(lambda c=config: gcengine.simulate(session, c), args.repeat)
            scored = median_ms(
                lambda c=config: gcengine.simulate(session, c, score_anchors=True), args.repeat
            )
            events = len(gcengine.simulate(session, config).events)
            print(
                f"replay {name:<10} simulate {plain:8.1f} ms; with scores {scored:8.1f} ms "
                f"({events:,} collections)"
            )
        baseline = median_ms(lambda: gcengine.requests_without_gc(session), args.repeat)
        print(f"replay without GC (the cost baseline) {baseline:8.1f} ms")
        transcript = gcengine.load_session(claude_code_with_compactions(args.turns))
        observed = median_ms(lambda: gcengine.score_observed_compactions(transcript), args.repeat)
        print(
            f"observed compactions: {len(transcript.compactions)} in a {args.turns}-turn "
            f"Claude Code transcript scored in {observed:8.1f} ms"
        )
        if args.synthetic:
            synthetic(args.synthetic, args.repeat, budget_replay=args.budget_replay)
    print(f"load average {load()}")


def wall_and_cpu(function: Callable[[], object]) -> tuple[float, float]:
    """Seconds ``function`` took, on the clock and of this process's CPU time: on a shared
    machine the CPU time sees through the load."""
    wall, cpu = time.perf_counter(), time.process_time()
    function()
    return time.perf_counter() - wall, time.process_time() - cpu


def seconds(times: list[tuple[float, float]]) -> str:
    """The medians of ``wall_and_cpu``'s figures."""
    wall = statistics.median(t[0] for t in times)
    return f"{wall:6.2f} s ({statistics.median(t[1] for t in times):.2f} s CPU)"


def load() -> str:
    return ", ".join(f"{figure:.2f}" for figure in os.getloadavg())


def synthetic(turns: int, repeat: int, *, budget_replay: bool) -> None:
    shape = gcengine.SessionShape(turns=turns, seed=1)
    session = gcengine.load_session(json.dumps(gcengine.generate_session_file(shape)).encode())
    config = gcengine.load_gc_config(THRESHOLD, env={})
    after = gcengine.run_gc(session, config).session.history
    cache = gcengine.anchor_cache(session)
    gcengine.score_collection(session, after, cache)
    record = gcengine.anchors_record(cache)
    first: list[tuple[float, float]] = []
    cached: list[tuple[float, float]] = []
    read_back: list[tuple[float, float]] = []
    for _ in range(repeat):  # interleaved, so all see the same load
        first.append(wall_and_cpu(lambda: gcengine.score_collection(session, after)))
        cached.append(wall_and_cpu(lambda: gcengine.score_collection(session, after, cache)))
        stored = gcengine.cache_from_record(cache.messages, record)  # the dashboard's
        read_back.append(wall_and_cpu(partial(gcengine.score_collection, session, after, stored)))
    print(
        f"generated session: {turns:,} turns, {session.budget.total_tokens():,} tokens; "
        f"score_collection of a gc_budget run ({len(session.history) - len(after):,} messages "
        f"taken out): {seconds(first)} reading every message, {seconds(cached)} with the "
        f"session's anchor cache, {seconds(read_back)} with a cache read back from its record"
    )
    policies = [("truncate", TRUNCATE_CONTINUOUS)]
    if budget_replay:
        policies.append(("gc_budget", CONTINUOUS))
    for name, policy in policies:
        config = gcengine.load_gc_config(policy, env={})
        replay = gcengine.simulate(session, config)
        plain = median_ms(lambda c=config: gcengine.simulate(session, c), 1)
        scored = median_ms(lambda c=config: gcengine.simulate(session, c, score_anchors=True), 1)
        kept = median_ms(
            lambda c=config: gcengine.simulate(session, c, score_anchors=True, anchor_cache=cache),
            1,
        )
        print(
            f"continuous {name} replay ({len(replay.events):,} collections, "
            f"{replay.steps[-1].tokens_after:,} tokens at the end): simulate "
            f"{plain / 1000:6.2f} s; with scores {scored / 1000:6.2f} s, and with the anchor "
            f"cache {kept / 1000:6.2f} s"
        )


if __name__ == "__main__":
    main()
