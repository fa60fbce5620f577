"""Planning speed: ``plan_items`` and ``plan_context`` on long generated sessions.

Sessions of JAATO's benchmark shape (200-token requests, 300-token answers, a 1,000-token tool
result every third turn; 10,000 turns are 26,666 messages and 7.2 M tokens), planned for two
windows:

* ``claude``: the session's model (claude-sonnet-4, 200,000 tokens), so the plan keeps the most
  recent turns and leaves out nearly all the others, each with its reason;
* ``roomy``: a window that holds the whole session, so every message is sent.

Each session pins 1 % of its turns (priorities and TTLs mixed). Three medians of ``--repeat``
runs per case: ``plan_items`` (the session to items), ``plan_context`` (the plan, its id a
digest of the inputs; and with an id the caller gives, which skips the digest) and both
together. The target is under 100 ms for planning a
10,000-turn session.

    python benchmarks/planner.py [--sizes 1000 10000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gcengine
from gcengine import (
    ContextPlan,
    ModelCaps,
    Pin,
    PlannerConfig,
    Priority,
    SessionShape,
    generate_session_file,
    plan_context,
    plan_items,
    session_caps,
)


def median_ms(function: Callable[[], object], repeat: int) -> float:
    """Median time of ``function``, each run starting with nothing left for the cycle
    collector (as ``timeit`` does): its passes over a whole loaded session would otherwise land
    in whichever run happens to trigger them."""
    times = []
    for _ in range(repeat):
        gc.collect()
        started = time.perf_counter()
        result = function()
        times.append((time.perf_counter() - started) * 1000)
        del result  # kept while timing: a caller keeps its plan, freeing it is not planning
    return statistics.median(times)


def pins_for(turns: int) -> list[Pin]:
    """One turn in a hundred pinned, with every priority and a mix of TTLs."""
    priorities = list(Priority)
    return [
        Pin(turn=turn, priority=priorities[turn % 3], ttl=(None, 5, 1)[turn % 3])
        for turn in range(0, turns, 100)
    ]


def plan_both(
    session: gcengine.Session, pins: list[Pin], caps: ModelCaps, config: PlannerConfig
) -> ContextPlan:
    return plan_context(plan_items(session, pins=pins), caps, config)


def measure(turns: int, repeat: int) -> None:
    session = gcengine.load_session(generate_session_file(SessionShape(turns=turns, seed=turns)))
    pins = pins_for(turns)
    items = plan_items(session, pins=pins)
    total = sum(item.tokens for item in items)
    config = PlannerConfig()
    print(
        f"{turns:,} turns: {len(session.history):,} messages, {total:,} tokens, "
        f"{len(pins)} pinned turns"
    )
    for name, caps in (
        ("claude", session_caps(session)),
        ("roomy", session_caps(session, context_length=total * 2)),
    ):
        plan = plan_context(items, caps, config)
        items_ms = median_ms(partial(plan_items, session, pins=pins), repeat)
        plan_ms = median_ms(partial(plan_context, items, caps, config), repeat)
        given_ms = median_ms(partial(plan_context, items, caps, config, plan_id="p"), repeat)
        both_ms = median_ms(partial(plan_both, session, pins, caps, config), repeat)
        print(
            f"  {name:<7} window {plan.model_context_len:>10,}  "
            f"sent {len(plan.included):>6,}  left out {len(plan.excluded):>6,}   "
            f"plan_items {items_ms:6.1f} ms  plan_context {plan_ms:6.1f} ms "
            f"({given_ms:6.1f} ms with a given id)  together {both_ms:6.1f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    for turns in args.sizes:
        measure(turns, args.repeat)


if __name__ == "__main__":
    main()
