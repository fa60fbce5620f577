"""Speed of the reachability strategy: the dry run (``analyze``) and a full collection.

Sessions of 1,000, 10,000 and 30,000 turns, each measured in a process of its own (so nothing
one size reads is known to the next):

* ``demo``: the demo session (``generate_demo_session``), a coding agent whose later turns
  name earlier files, identifiers and error codes: what the reference graph is made of;
* ``jaato``: JAATO's benchmark shape (``generate_session_file``, 200-token requests, 300-token
  answers, a 1,000-token tool result every third turn): more tokens a turn (8 M+ at 10,000
  turns), and word salad with nothing to refer to.

The context limit is set so usage is 85 %; the policy is the reachability strategy's defaults
(threshold 80, target 60, preserve 5, stash). Figures:

* ``first``: the first ``analyze`` of a loaded session: it reads every message's anchors
  (tens of megabytes of text) and lays out the segment graph, and remembers both with the
  session's values;
* ``analyze``: the median of ``--repeat`` further ones (what a policy editor, a second
  policy, or an agent checking after each turn pays): roots, marks, scores and the sweep;
* ``run_gc``: the median full collection, with its sentences, its stash and the budget of the
  new history;
* per 1,000 turns, so growth is seen to be linear.

Everything runs inside ``gcengine.cyclic_gc_paused()``, as a background worker runs the engine.

    python benchmarks/reachability.py [--sizes 1000 10000 30000] [--shapes demo jaato] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gcengine

POLICY = {"type": "reachability", "threshold_percent": 80, "target_percent": 60}


def session_of(shape: str, turns: int) -> gcengine.Session:
    if shape == "demo":
        data: Any = gcengine.generate_demo_session(gcengine.DemoShape(turns=turns, seed=turns))
    else:
        data = gcengine.generate_session_file(gcengine.SessionShape(turns=turns, seed=turns))
    session = gcengine.load_session(data)
    return gcengine.with_context_limit(session, int(session.budget.total_tokens() / 0.85))


def measure(shape: str, turns: int, repeat: int) -> dict[str, Any]:
    """One size, in this process: the figures as a JSON-ready dict."""
    with gcengine.cyclic_gc_paused():
        session = session_of(shape, turns)
        config = gcengine.load_gc_config(POLICY, env={})
        started = time.perf_counter()
        analysis = gcengine.analyze(session, config)
        first = time.perf_counter() - started
        analyses = []
        for _ in range(repeat):
            started = time.perf_counter()
            gcengine.analyze(session, config)
            analyses.append(time.perf_counter() - started)
        runs = []
        for _ in range(repeat):
            started = time.perf_counter()
            outcome = gcengine.run_gc(session, config)
            runs.append(time.perf_counter() - started)
    stash = outcome.result.stash
    return {
        "shape": shape,
        "turns": turns,
        "messages": len(session.history),
        "tokens": session.budget.total_tokens(),
        "segments": len(analysis.segments),
        "reachable": sum(1 for s in analysis.segments if s.reachable),
        "taken": len(analysis.taken),
        "stashed": len(stash.segments) if stash else 0,
        "after_percent": round(outcome.budget_after.utilization_percent(), 1),
        "first_ms": first * 1000,
        "analyze_ms": statistics.median(analyses) * 1000,
        "run_gc_ms": statistics.median(runs) * 1000,
    }


def report(figures: dict[str, Any]) -> str:
    per = 1000 / figures["turns"]
    return (
        f"{figures['shape']:<5} {figures['turns']:>6,} turns "
        f"{figures['tokens'] / 1e6:5.1f} M tokens "
        f"{figures['segments']:>6,} segments ({figures['reachable']:,} reachable)  "
        f"first {figures['first_ms']:7.0f} ms  analyze {figures['analyze_ms']:6.0f} ms  "
        f"run_gc {figures['run_gc_ms']:6.0f} ms  | per 1,000 turns: first "
        f"{figures['first_ms'] * per:5.0f}, analyze {figures['analyze_ms'] * per:4.1f}, "
        f"run_gc {figures['run_gc_ms'] * per:5.0f} ms  | takes {figures['taken']:,} "
        f"({figures['stashed']:,} stashed) -> {figures['after_percent']} %"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 30000])
    parser.add_argument("--shapes", nargs="+", choices=["demo", "jaato"], default=["demo", "jaato"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--one", nargs=2, metavar=("SHAPE", "TURNS"), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.one:
        shape, turns = arguments.one
        print(json.dumps(measure(shape, int(turns), arguments.repeat)))
        return
    for shape in arguments.shapes:
        for turns in arguments.sizes:
            child = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--one",
                    shape,
                    str(turns),
                    "--repeat",
                    str(arguments.repeat),
                ],
                check=True,
                capture_output=True,
                text=True,
            )
            print(report(json.loads(child.stdout)), flush=True)


if __name__ == "__main__":
    main()
