"""How long the demo session takes to generate and to load, and how full it ends up.

``./dev serve`` generates and loads it on every start (``manage.py load_demo``), so both must
stay small. Target: generating 500 turns well under a second (under 0.25 s).

    python benchmarks/demo.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gcengine import DemoShape, generate_demo_session, load_session

TARGET_SECONDS = 0.25


def median_seconds(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    slow = False
    for turns in (DemoShape().turns, 500):
        shape = DemoShape(turns=turns)
        generate = median_seconds(partial(generate_demo_session, shape), args.repeat)
        data = json.dumps(generate_demo_session(shape)).encode()
        # The first load counts every text; later ones find the counts cached by content.
        cold = median_seconds(partial(load_session, data), 1)
        warm = median_seconds(partial(load_session, data), args.repeat)
        budget = load_session(data).budget
        print(
            f"{turns:>4} turns: generate {generate * 1000:5.1f} ms, load {cold * 1000:5.1f} ms "
            f"(cached counts {warm * 1000:5.1f} ms), "
            f"{len(data) / 1e6:.2f} MB, {budget.total_tokens():,} tokens "
            f"({budget.utilization_percent():.1f} % of {budget.context_limit:,})"
        )
        slow = slow or (turns == 500 and generate > TARGET_SECONDS)
    if slow:
        print(f"generating 500 turns took more than {TARGET_SECONDS} s")
    return 1 if slow else 0


if __name__ == "__main__":
    raise SystemExit(main())
