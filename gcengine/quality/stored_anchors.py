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
from enum import Enum
from itertools import accumulate, chain
from operator import attrgetter
from types import ModuleType
from typing import Any

from gcengine.messages import Message
from gcengine.quality import reading
from gcengine.quality.anchors import CLASS_INFO, AnchorClass, MatchRule
from gcengine.quality.reading import AnchorCache
from gcengine.quality.session_anchors import AnchorContext
from gcengine.quality.stored_count import (
    RecordColumns,
    StoredCount,
    ints_text,
    joined,
    terms_text,
)

_KEY, _MESSAGE_ID = attrgetter("key"), attrgetter("message_id")
# The record's own shape; a new one makes every older record another extractor's.
ANCHORS_FORMAT = 4


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
    return hashlib.sha256("\n".join(map(_MESSAGE_ID, messages)).encode()).hexdigest()


def anchors_record(cache: AnchorCache) -> dict[str, Any]:
    """Everything ``cache`` reads of its corpus, read now, as JSON: each distinct anchor
    once (a path a session names in hundreds of messages is one entry), each message as the
    places of its anchors among them.

    In columns, each field of the anchors in a list or string of its own, so reading it back
    makes no object per anchor but the anchor: a class and a rule as one letter each, a
    text only where it is not the key (most are), terms only where there are any; the keys
    as one string, a line each (``_joined``), the vocabulary as one string, split only when a
    score needs it.

    Reading makes hundreds of thousands of objects, none in a cycle: an entry point that owns
    its process pauses the cycle collector around this (``cyclic_gc_paused``), as the
    dashboard's stored sessions do."""
    held_each = cache.read_all()
    distinct = dict.fromkeys(anchor for held in held_each for anchor in held.anchors)
    # By key, so a score finds the anchors of a word by bisection (``RecordColumns.said``).
    table = {anchor: i for i, anchor in enumerate(sorted(distinct, key=_KEY))}
    context = cache.context
    # The corpus counted at once, as a run's score counts the session's history.
    counted = cache.counted(cache.messages)
    order = {key: i for i, key in enumerate(counted.last)}
    places = [[table[anchor] for anchor in held.anchors] for held in held_each]
    last_weights = [0] * len(cache.messages)
    for key, (_, at) in counted.last.items():
        last_weights[at] += CLASS_INFO[key[0]].weight
    return {
        "format": ANCHORS_FORMAT,
        "extractor": extractor_version(),
        "corpus": _corpus_digest(cache.messages),
        "context": {"root": context.root, "issues": sorted(context.issues)},
        "vocabulary": " ".join(sorted(cache.vocabulary)),  # its words hold no space
        "class_codes": _CLASS_CODES.named,
        "rule_codes": _RULE_CODES.named,
        "classes": "".join([_CLASS_CODES.code[a.anchor_class] for a in table]),
        "rules": "".join([_RULE_CODES.code[a.rule] for a in table]),
        "keys": joined([a.key for a in table]),
        "texts_at": ints_text(i for i, a in enumerate(table) if a.text != a.key),
        "texts": joined([a.text for a in table if a.text != a.key]),
        "terms_at": ints_text(i for i, a in enumerate(table) if a.terms),
        "terms": terms_text([sorted(a.terms) for a in table if a.terms]),
        "messages": ints_text(chain.from_iterable(places)),
        "message_starts": ints_text(chain((0,), accumulate(map(len, places)))),
        # The count: each distinct key's anchor of its last mention and where that is, by
        # first mention; which of them are looked for one by one.
        "last_anchors": ints_text(table[anchor] for anchor, _ in counted.last.values()),
        "last_at": ints_text(at for _, at in counted.last.values()),
        "one_by_one": ints_text(order[key] for key in counted.one_by_one()),
        # Read by a score without making the anchors: each anchor's key's place in the
        # count, each message's weight of the keys mentioned last there, each class's keys.
        "key_of": ints_text(order[(a.anchor_class, a.key)] for a in table),
        "last_weights": ints_text(last_weights),
        "per_class": [[c.value, n] for c, n in counted.per_class.items()],
    }


def cache_from_record(corpus: Iterable[Message], record: dict[str, Any]) -> AnchorCache | None:
    """A cache of ``corpus`` holding what ``record`` read; None when ``record`` is another
    extractor's or another corpus's (a caller then reads the corpus afresh).

    The record's columns are kept as they are read (``RecordColumns``): a run's score counts
    what it kept from them (``StoredCount``), and the anchors and each message's ``Held`` are
    made, all at once, only when something asks for one (a replay, a summary's score).
    Hundreds of thousands of objects on a long session then, none in a cycle: the collector
    walking the session held beside them took as long as making them, so an entry point
    owning its process pauses it around this (``cyclic_gc_paused``)."""
    cache = AnchorCache(corpus)
    if (
        record.get("format") != ANCHORS_FORMAT
        or record.get("extractor") != extractor_version()
        or record.get("corpus") != _corpus_digest(cache.messages)
    ):
        return None
    columns = RecordColumns(record)
    context = record["context"]
    vocabulary: str = record["vocabulary"]
    return AnchorCache.having_read(
        cache.messages,
        AnchorContext(context["root"], frozenset(context["issues"])),
        lambda: frozenset(vocabulary.split(" ")) if vocabulary else _NONE,
        columns.held_each,
        lambda: StoredCount(cache.messages, columns),
    )


class _Codes[E: Enum]:
    """The members of an enum as one letter each, and the names the letters stand for (kept
    in the record: what a letter means never depends on the code reading it)."""

    def __init__(self, members: Iterable[E]) -> None:
        self.code = {m: chr(ord("a") + i) for i, m in enumerate(members)}
        self.named = {letter: m.value for m, letter in self.code.items()}
        self._by_value = {m.value: m for m in self.code}

    def column(self, named: dict[str, str], letters: str) -> list[E]:
        """The members ``letters`` stand for, by the names the record gives them."""
        member = {letter: self._by_value[value] for letter, value in named.items()}
        return list(map(member.__getitem__, letters))


_CLASS_CODES = _Codes(AnchorClass)
_RULE_CODES = _Codes(MatchRule)
_NONE: frozenset[str] = frozenset()
