"""A session's anchors as a value to keep: what an ``AnchorCache`` read of its corpus (the
context, the vocabulary, each message's anchors), written as JSON and read back into a cache
that reads none of it again.

Reading a session's anchors is most of what scoring it costs, and a stored session never
changes: a caller that keeps this record beside the session (the dashboard stores it with
the upload) scores every run, replay and ranking of it without reading its anchors again.
The record names the extractor that read it (``extractor_version``, a digest of the code
that reads anchors), so a caller keeping one can tell it from a record an older extractor
wrote, and the corpus it was read from (its message ids), so it is never read back into a
cache of another corpus (the session before one of its compactions, say).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import sys
from collections.abc import Iterable
from types import ModuleType
from typing import Any

from gcengine.messages import Message
from gcengine.quality import reading
from gcengine.quality.anchors import CLASS_INFO, Anchor, AnchorClass, MatchRule
from gcengine.quality.reading import AnchorCache
from gcengine.quality.session_anchors import AnchorContext
from gcengine.quality.tally import Held

# The record's own shape; a new one makes every older record another extractor's.
ANCHORS_FORMAT = 1


@functools.cache  # bounded: one value, of code that does not change while a process runs
def extractor_version() -> str:
    """A digest of the source of every gcengine module reading anchors reaches (from
    ``reading``, through the names each module holds), and of the record's format: any
    change to how anchors are read makes another version, with nothing to remember to bump."""
    seen: dict[str, ModuleType] = {}
    pending = [reading]
    while pending:
        module = pending.pop()
        if module.__name__ in seen:
            continue
        seen[module.__name__] = module
        for value in vars(module).values():
            used = (
                value
                if isinstance(value, ModuleType)
                else sys.modules.get(getattr(value, "__module__", None) or "")
            )
            if used is not None and used.__name__.startswith("gcengine."):
                pending.append(used)
    digest = hashlib.sha256(b"format %d" % ANCHORS_FORMAT)
    for name in sorted(seen):
        digest.update(name.encode() + b"\0" + inspect.getsource(seen[name]).encode() + b"\0")
    return digest.hexdigest()[:32]


def _corpus_digest(messages: Iterable[Message]) -> str:
    return hashlib.sha256("\n".join(m.message_id for m in messages).encode()).hexdigest()


def anchors_record(cache: AnchorCache) -> dict[str, Any]:
    """Everything ``cache`` reads of its corpus, read now, as JSON: each distinct anchor
    once (a path a session names in hundreds of messages is one entry), each message as the
    places of its anchors among them.

    Reading makes hundreds of thousands of objects, none in a cycle: an entry point that owns
    its process pauses the cycle collector around this (``cyclic_gc_paused``), as the
    dashboard's stored sessions do."""
    held_each = cache.read_all()
    table: dict[Anchor, int] = {}
    for held in held_each:
        for anchor in held.anchors:
            table.setdefault(anchor, len(table))
    context = cache.context
    return {
        "format": ANCHORS_FORMAT,
        "extractor": extractor_version(),
        "corpus": _corpus_digest(cache.messages),
        "context": {"root": context.root, "issues": sorted(context.issues)},
        "vocabulary": sorted(cache.vocabulary),
        "anchors": [
            [a.anchor_class.value, a.key, a.text, a.rule.value, sorted(a.terms)] for a in table
        ],
        "messages": [[table[anchor] for anchor in held.anchors] for held in held_each],
    }


def cache_from_record(corpus: Iterable[Message], record: dict[str, Any]) -> AnchorCache | None:
    """A cache of ``corpus`` holding what ``record`` read; None when ``record`` is another
    extractor's or another corpus's (a caller then reads the corpus afresh).

    Hundreds of thousands of objects on a long session, none in a cycle: the collector walking
    the session held beside them took as long as making them, so an entry point owning its
    process pauses it around this (``cyclic_gc_paused``)."""
    cache = AnchorCache(corpus)
    if (
        record.get("format") != ANCHORS_FORMAT
        or record.get("extractor") != extractor_version()
        or record.get("corpus") != _corpus_digest(cache.messages)
    ):
        return None
    anchors = [
        Anchor(_CLASSES[c], key, text, _RULES[rule], frozenset(terms) if terms else _NONE)
        for c, key, text, rule, terms in record["anchors"]
    ]
    keys = [(a.anchor_class, a.key) for a in anchors]
    weights = [CLASS_INFO[a.anchor_class].weight for a in anchors]
    # Most messages hold no anchor, or the same few as another: one ``Held`` for each.
    made: dict[tuple[int, ...], Held] = {}
    held_each = []
    for places in map(tuple, record["messages"]):
        held = made.get(places)
        if held is None:
            held = made[places] = Held(
                tuple([keys[i] for i in places]),
                tuple([anchors[i] for i in places]),
                tuple([weights[i] for i in places]),
            )
        held_each.append(held)
    context = record["context"]
    return AnchorCache.having_read(
        cache.messages,
        AnchorContext(context["root"], frozenset(context["issues"])),
        frozenset(record["vocabulary"]),
        held_each,
    )


# Looked up by value without calling the enums (a call each is most of making an anchor).
_CLASSES = {c.value: c for c in AnchorClass}
_RULES = {r.value: r for r in MatchRule}
_NONE: frozenset[str] = frozenset()
