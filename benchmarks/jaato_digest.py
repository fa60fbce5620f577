"""A digest of our ``gc_gcengine_budget`` plugin's answers inside JAATO, to check that a change
made for speed answers exactly as before: run it on the code before and on the code after, and
compare the digests it prints.

Run by JAATO's interpreter with the engine importable (installed in JAATO's virtualenv, as
``jaato_side_by_side.py``'s ``inside`` column needs, or named by ``PYTHONPATH``)::

    PYTHONPATH=. /tmp/jaato-venv/bin/python benchmarks/jaato_digest.py [--sizes 12 60 300 1500]
        [--seeds 2]

Sessions are generated (``gcengine.synthetic``) at each size and seed in four shapes (the
reference one; a tool exchange every turn with two calls in parallel; thoughts, inline data
and opaque parts; no tools at all), at 85 % and at 97 % usage, written as JAATO session files
and read back by JAATO's own serializer, as ``jaato_side_by_side.py`` does. Each is collected
on both of ``jaato_timing.py``'s budgets (``file``, restored from the file; ``rebuilt``, the
one a running session makes) under three policies: threshold, continuous with pinned turns,
and the engine's rules. A plugin kept across calls (``warm``) collects the history, then the
same history again on a budget built anew, then the history it answered on that first
budget once JAATO has applied its removal list (``apply_gc_removal_list``, which changes the
budget in place), twice; a new plugin (``cold``) collects the first and the third.

Each answer is hashed whole: every ``GCResult`` field, every removal item (its type too), and
the new history as the position and id of each message it kept, which must be the very
object JAATO gave, and the role and text of each message it wrote. Prints the number of
collections (and how many removed something), the digest of all of them and one per kind
of call.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Callable
from typing import Any

import jaato_timing as jaato
from jaato_side_by_side import jaato_file, session_at
from shared.gc_support import apply_gc_removal_list
from shared.plugins.gc import GCConfig

from gcengine import SessionShape

# The shapes each size and seed is generated in (``SessionShape`` fields besides those two).
SHAPES: tuple[dict[str, Any], ...] = (
    {},
    {"tool_every": 1, "parallel_calls": 2},
    {"thoughts": True, "inline_data_every": 4, "opaque_every": 7},
    {"tool_every": 0},
)
USAGES = (85, 97)
POLICIES: tuple[dict[str, Any], ...] = (
    {
        "threshold_percent": 80.0,
        "target_percent": 60.0,
        "pressure_percent": 90.0,
        "preserve_recent_turns": 5,
    },
    {
        "threshold_percent": 70.0,
        "target_percent": 40.0,
        "pressure_percent": 0.0,
        "preserve_recent_turns": 2,
        "pinned_turn_indices": [0, 3],
    },
    {
        "threshold_percent": 80.0,
        "target_percent": 50.0,
        "pressure_percent": 95.0,
        "preserve_recent_turns": 3,
        "plugin_config": {"rules": "engine"},
    },
)


def answer_text(given: list[Any], new_history: list[Any], result: Any) -> str:
    """One collection's whole answer as text: what is hashed."""
    positions = {id(message): at for at, message in enumerate(given)}
    history = []
    for message in new_history:
        at = positions.get(id(message))
        if at is None:  # written by the plugin: a summary or a notice
            history.append(("new", message.role.value, [p.text for p in message.parts or ()]))
        else:  # kept: the very object given, at a position
            history.append(("kept", at, message.message_id))
    removals = [
        (
            item.source.value,
            item.child_key,
            item.tokens_freed,
            item.reason,
            list(item.message_ids),
            type(item.message_ids).__name__,
        )
        for item in result.removal_list
    ]
    reason = result.trigger_reason
    return repr(
        (
            result.success,
            result.items_collected,
            result.tokens_before,
            result.tokens_after,
            result.plugin_name,
            reason.value if reason is not None else None,
            result.notification,
            json.dumps(result.details, sort_keys=True, default=repr),
            result.error,
            removals,
            history,
        )
    )


class Digests:
    """The running digest of every collection, and one per kind of call."""

    def __init__(self) -> None:
        self.count = 0
        self.removing = 0  # collections that removed something
        self.total = hashlib.sha256()
        self.kinds: dict[str, Any] = {}

    def add(self, kind: str, result: Any, text: str) -> None:
        self.count += 1
        self.removing += bool(result.removal_list)
        self.total.update(text.encode())
        self.kinds.setdefault(kind, hashlib.sha256()).update(text.encode())


def collect_all(
    state: Any, shape: dict[str, Any], plugin: Callable[[], Any], digests: Digests
) -> None:
    """Every call of the module's docstring on one loaded session, both budgets, each policy."""
    turns = len(state.turn_accounting)
    for mode in ("file", "rebuilt"):
        if mode == "file":
            build = jaato.file_builder(state, shape["context_limit"])
        else:
            build = jaato.rebuilt_builder(state, shape["percent"])
        for policy in POLICIES:
            config = GCConfig(**policy)

            def collect(
                made: Any, history: list[Any], budget: Any, config: Any = config
            ) -> tuple[list[Any], Any]:
                usage = jaato.usage_of(budget, history, turns)
                reason = jaato.GCTriggerReason.THRESHOLD
                return made.collect(list(history), usage, config, reason, budget=budget)

            warm, given = plugin(), list(state.history)
            first = build()
            answered, result = collect(warm, given, first)
            digests.add("warm first", result, answer_text(given, answered, result))
            again, again_result = collect(warm, given, build())
            digests.add("warm same history", again_result, answer_text(given, again, again_result))
            cold, cold_result = collect(plugin(), given, build())
            digests.add("cold first", cold_result, answer_text(given, cold, cold_result))
            if result.success:
                apply_gc_removal_list(
                    result, budget=first, cache_plugin=None, on_trace=lambda *_, **__: None
                )
            for kind in ("warm after removal", "warm after removal, again"):
                new, new_result = collect(warm, answered, first)
                digests.add(kind, new_result, answer_text(answered, new, new_result))
            cold, cold_result = collect(plugin(), answered, first)
            digests.add("cold after removal", cold_result, answer_text(answered, cold, cold_result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[12, 60, 300, 1_500])
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args()
    factory = jaato.JAATO["gc"].discover_gc_plugins().get("gc_gcengine_budget")
    if factory is None:
        jaato.fail("the engine's plugin is not installed beside JAATO")

    def plugin() -> Any:
        made = factory()
        made.initialize({})
        return made

    digests = Digests()
    for turns in args.sizes:
        for seed in range(1, args.seeds + 1):
            for fields in SHAPES:
                for usage in USAGES:
                    session = session_at(
                        SessionShape(turns=turns, seed=seed * 100 + turns, **fields), usage
                    )
                    data = json.loads(jaato_file(session))
                    state = jaato.deserialize_session_state(data)
                    for message, raw in zip(state.history, data["history"], strict=True):
                        message.message_id = raw["message_id"]  # as jaato_timing.py does
                    shape = {"context_limit": session.context_limit, "percent": usage}
                    collect_all(state, shape, plugin, digests)
    print(
        f"{digests.count} collections ({digests.removing} removing something): "
        f"{digests.total.hexdigest()}"
    )
    for kind, digest in digests.kinds.items():
        print(f"  {kind}: {digest.hexdigest()}")


if __name__ == "__main__":
    main()
