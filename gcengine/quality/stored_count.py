"""A stored session's anchors and their count read back as the record's columns: an anchor,
a message's ``Held`` and the count's ``last`` are made only when something reads them.

A run's score of a stored session reads little of its record: which anchors the few hundred
messages the run kept hold, the one-word anchors whose word is still in view, the anchors it
looks for one by one, and the first lost ones of each class. Made whole, the record is
242,000 anchors, 26,000 ``Held`` and a dict of every key on a 10,000-turn session, about
half of what reading it back cost; counted from the columns, a run's score makes only the
anchors it looks for one by one (17,000 there) and no ``Held``.

A replay, which reads every message's ``Held``, has them all made at its first ask, as
reading the record whole made them (``RecordColumns.held_each``).
"""

from __future__ import annotations

import sys
from array import array
from base64 import b64decode, b64encode
from bisect import bisect_left, bisect_right
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import fields
from functools import cached_property
from itertools import chain, compress, repeat
from typing import Any

from gcengine.messages import Message
from gcengine.quality.anchors import CLASS_INFO, Anchor, AnchorClass, MatchRule
from gcengine.quality.counting import ContextAnchors, InView, Kept, lost_to_show
from gcengine.quality.tally import AnchorKey, Held

_NONE: frozenset[str] = frozenset()


class RecordColumns:
    """The columns of a record ``anchors_record`` wrote, as read back: the distinct anchors
    (each field a column, by their place in the record), each corpus message's places among
    them (one array, with where each message's places start), and the corpus's count by key (each
    key's anchor of its last mention and where that is, by first mention; each key's place
    in the record's anchors is its ``key_of``)."""

    def __init__(self, record: dict[str, Any]) -> None:
        named: dict[str, str] = record["class_codes"]
        self.class_of = {letter: AnchorClass(value) for letter, value in named.items()}
        named = record["rule_codes"]
        self._rule_of = {letter: MatchRule(value) for letter, value in named.items()}
        # The letter of a literal anchor's rule: the rule the words in view decide.
        self.literal = next(k for k, rule in self._rule_of.items() if rule is MatchRule.LITERAL)
        self.classes: str = record["classes"]
        self.rules: str = record["rules"]
        self.keys = lines(record["keys"])
        self._texts_at = ints(record["texts_at"])
        self._texts = lines(record["texts"])
        self._terms_at = ints(record["terms_at"])
        self._terms: str | list[list[str]] = record["terms"]
        self.places = ints(record["messages"])
        self.starts = ints(record["message_starts"])
        self.key_of = ints(record["key_of"])
        self.last_anchors = ints(record["last_anchors"])
        self.last_at = ints(record["last_at"])
        self.one_by_one = ints(record["one_by_one"])
        self.last_weights = ints(record["last_weights"])
        self.per_class = Counter({AnchorClass(value): n for value, n in record["per_class"]})
        self._weight_of = {letter: CLASS_INFO[c].weight for letter, c in self.class_of.items()}

    @cached_property
    def texts(self) -> dict[int, str]:
        """The anchors' texts where they are not their keys (most are), by place."""
        return dict(zip(self._texts_at, self._texts, strict=True))

    def text(self, place: int) -> str:
        return self.texts.get(place, self.keys[place])

    def said(self, word: str) -> range:
        """The places of the anchors whose key is ``word``: the anchors are in the order of
        their keys, so they are found by bisection, never by reading every key (hashing a
        10,000-turn session's 19 MB of keys took longer than the rest of a run's count)."""
        keys = self.keys
        start = bisect_left(keys, word)
        return range(start, bisect_right(keys, word, start))

    def key(self, place: int) -> AnchorKey:
        return (self.class_of[self.classes[place]], self.keys[place])

    def anchors(self, places: Sequence[int]) -> list[Anchor]:
        """The anchors at ``places``, as ``anchors_record`` read them."""
        keys = list(map(self.keys.__getitem__, places))
        return self._made(
            places,
            keys,
            list(map(self.texts.get, places, keys)),
            list(map(self._terms_by_place.get, places, repeat(_NONE))),
        )

    @cached_property
    def _terms_by_place(self) -> dict[int, frozenset[str]]:
        """The terms anchors' terms, by place: read when an anchor is first made, one
        frozenset each, shared by every anchor made of that place."""
        return dict(zip(self._terms_at, map(frozenset, term_lists(self._terms)), strict=True))

    @cached_property
    def every_anchor(self) -> list[Anchor]:
        """Every anchor, in the record's order (what a replay's ``Held`` hold)."""
        texts = list(self.keys)
        for place, text in zip(self._texts_at, self._texts, strict=True):
            texts[place] = text
        terms = [_NONE] * len(self.keys)
        for place, said in self._terms_by_place.items():
            terms[place] = said
        return self._made(range(len(self.keys)), self.keys, texts, terms)

    def _made(
        self,
        places: Sequence[int],
        keys: list[str],
        texts: list[str],
        terms: list[frozenset[str]],
    ) -> list[Anchor]:
        letters = map(self.classes.__getitem__, places)
        return unchecked(
            Anchor,
            anchor_class=list(map(self.class_of.__getitem__, letters)),
            key=keys,
            text=texts,
            rule=list(map(self._rule_of.__getitem__, map(self.rules.__getitem__, places))),
            terms=terms,
        )

    @cached_property
    def every_key(self) -> list[AnchorKey]:
        return list(zip(map(self.class_of.__getitem__, self.classes), self.keys, strict=True))

    def held_each(self) -> list[Held]:
        """Each corpus message's ``Held``, in order: most messages hold no anchor, or the
        same few as another, so one ``Held`` is made for each distinct set."""
        keys, anchors = self.every_key, self.every_anchor
        weights = list(map(self._weight_of.__getitem__, self.classes))
        distinct: dict[tuple[int, ...], int] = {}
        each = map(self.places.__getitem__, map(slice, self.starts, self.starts[1:]))
        which = [distinct.setdefault(places, len(distinct)) for places in map(tuple, each)]
        made = unchecked(
            Held,
            keys=[tuple(map(keys.__getitem__, places)) for places in distinct],
            anchors=[tuple(map(anchors.__getitem__, places)) for places in distinct],
            weights=[tuple(map(weights.__getitem__, places)) for places in distinct],
        )
        return list(map(made.__getitem__, which))

    def last(self) -> dict[AnchorKey, tuple[Anchor, int]]:
        """Each key's anchor of its last mention and where that is, by first mention (a
        ``ContextAnchors``' ``last``)."""
        keys, anchors = self.every_key, self.every_anchor
        mentions = zip(map(anchors.__getitem__, self.last_anchors), self.last_at, strict=True)
        return dict(zip(map(keys.__getitem__, self.last_anchors), mentions, strict=True))


class StoredCount(ContextAnchors):
    """A corpus's ``ContextAnchors`` as stored (``RecordColumns``): what a compaction kept
    (``kept``) counted by each key's place among the count's keys, the anchors made only for
    those looked for one by one. ``held`` and ``last`` are made whole when first read."""

    def __init__(self, messages: Sequence[Message], columns: RecordColumns) -> None:
        self.messages = list(messages)
        self.columns = columns
        self.per_class = columns.per_class

    def __getattr__(self, name: str) -> Any:
        """``held`` and ``last`` (which the other ``ContextAnchors`` set as they count),
        made from the columns the first time they are read."""
        if name == "held":
            value: Any = self.columns.held_each()
        elif name == "last":
            value = self.columns.last()
        else:
            raise AttributeError(name)
        setattr(self, name, value)
        return value

    def one_by_one(self) -> list[AnchorKey]:
        columns = self.columns
        return list(map(columns.key, map(columns.last_anchors.__getitem__, columns.one_by_one)))

    def kept(
        self, keep: bytes | bytearray, in_view: InView, thirds: tuple[int, int], shown: int
    ) -> Kept:
        """``ContextAnchors.kept``, each key its place among the count's keys."""
        columns = self.columns
        starts, ends = compress(columns.starts, keep), compress(columns.starts[1:], keep)
        kept_places = map(columns.places.__getitem__, map(slice, starts, ends))
        held = set(map(columns.key_of.__getitem__, chain.from_iterable(kept_places)))
        retained = [*held, *self._by_word_at(held, in_view), *self._found_at(held, in_view)]
        letter_of = columns.classes.__getitem__
        of_retained = list(map(letter_of, map(columns.last_anchors.__getitem__, retained)))
        retained_count = Counter(
            {columns.class_of[letter]: n for letter, n in Counter(of_retained).items()}
        )
        oldest_end, newest_start = thirds
        weights = columns.last_weights
        where = list(map(columns.last_at.__getitem__, retained))
        weighs = list(map(columns._weight_of.__getitem__, of_retained))
        return Kept(
            retained=retained_count,
            lost_shown=self._lost_shown_at(set(retained), retained_count, shown),
            oldest=sum(weights[:oldest_end]),
            oldest_retained=sum(compress(weighs, map(oldest_end.__gt__, where))),
            newest=sum(weights[newest_start:]),
            newest_retained=sum(compress(weighs, map(newest_start.__le__, where))),
        )

    def _by_word_at(self, held: set[int], in_view: InView) -> list[int]:
        """The literal keys no kept message holds whose word is in view (a key is a word
        in view whatever its class)."""
        columns = self.columns
        came, left = in_view.words.came, in_view.words.left.get
        words = [word for word, views in came.items() if views > left(word, 0)]
        said = chain.from_iterable(map(columns.said, words))
        literal, rules, last_anchors = columns.literal, columns.rules, columns.last_anchors
        return [
            key
            for key in dict.fromkeys(map(columns.key_of.__getitem__, said))
            if key not in held and rules[last_anchors[key]] == literal
        ]

    def _found_at(self, held: set[int], in_view: InView) -> list[int]:
        """The keys looked for one by one that no kept message holds and are in view."""
        checked = [key for key in self.columns.one_by_one if key not in held]
        in_view.looking_for(len(checked))
        anchors = self.columns.anchors(list(map(self.columns.last_anchors.__getitem__, checked)))
        return list(compress(checked, map(in_view.retained, anchors)))

    def _lost_shown_at(
        self, retained: set[int], retained_count: Counter[AnchorClass], shown: int
    ) -> dict[AnchorClass, list[str]]:
        """``ContextAnchors._lost_shown``: the first ``shown`` anchors each class lost, read
        until every class has all it will show; the anchors of a class that has are passed
        over in C."""
        columns = self.columns
        lost_shown, wanted = lost_to_show(self.per_class, retained_count, shown)
        showing = {
            letter
            for letter, anchor_class in columns.class_of.items()
            if wanted.get(anchor_class, 0)
        }
        last_anchors = columns.last_anchors
        of_showing = map(showing.__contains__, map(columns.classes.__getitem__, last_anchors))
        for key in compress(range(len(last_anchors)), of_showing):
            if key not in retained:
                place = last_anchors[key]
                letter = columns.classes[place]
                anchor_class = columns.class_of[letter]
                (texts := lost_shown[anchor_class]).append(columns.text(place))
                if len(texts) == wanted[anchor_class]:
                    showing.discard(letter)
                    if not showing:
                        break
        return lost_shown


def joined(items: list[str], by: str = "\n") -> str | list[str]:
    """``items`` as one string, joined ``by`` (read back by ``lines``), when none holds it (as
    they are, when one does): one string and a split read back in a tenth of the time of a
    JSON list of 240,000 strings."""
    text = by.join(items)
    return text if items and text.count(by) == len(items) - 1 else items


def lines(said: str | list[str]) -> list[str]:
    """What ``joined`` wrote, as the strings it was given."""
    return said.split("\n") if isinstance(said, str) else said


def terms_text(terms: list[list[str]]) -> str | list[list[str]]:
    """Each anchor's terms a line, joined by spaces (read back by ``term_lists``), when no
    term holds a space or a line break; else as they are."""
    if any(" " in term or "\n" in term for said in terms for term in said):
        return terms
    text = joined([" ".join(said) for said in terms])
    return text if isinstance(text, str) else terms


def term_lists(said: str | list[list[str]]) -> list[list[str]]:
    """What ``terms_text`` wrote, as the lists it was given."""
    return list(map(str.split, lines(said), repeat(" "))) if isinstance(said, str) else said


def ints_text(values: Iterable[int]) -> str:
    """``values`` (non-negative, under 2**31: places and weights in a record) as base64 of
    4-byte little-endian integers (read back by ``ints``): JSON's lists of numbers took
    about eight times as long to read back, and as lists of int objects held several times
    the memory of arrays."""
    column = array("i", values)
    if sys.byteorder == "big":
        column.byteswap()
    return b64encode(column.tobytes()).decode("ascii")


def ints(text: str) -> array[int]:
    """What ``ints_text`` wrote."""
    column = array("i")
    column.frombytes(b64decode(text))
    if sys.byteorder == "big":
        column.byteswap()
    return column


def unchecked[T](kind: type[T], **columns: Sequence[Any]) -> list[T]:
    """The ``kind`` (a frozen dataclass with slots: an anchor, a message's ``Held``) whose
    fields are ``columns`` (one sequence a field, by name), as ``kind(...)`` makes them, each
    field set through its slot: a frozen dataclass's ``__init__`` sets each field by a call
    of its own, which made most of reading a long session's 240,000 anchors back (0.36 s;
    this, 0.1 s). Only for fields read back from a record ``anchors_record`` wrote, which
    ``kind(...)`` made."""
    made = list(map(object.__new__, repeat(kind, len(next(iter(columns.values()))))))
    for field in fields(kind):  # type: ignore[arg-type]  # every field, or a KeyError
        deque(map(getattr(kind, field.name).__set__, made, columns[field.name]), maxlen=0)
    return made
