"""Counting a whole context's anchors at once, and finding which lost ones are still in view.

A scorer's first score of a context (a run's score, the first of a ranking's) counts every
anchor of that context: a 10,000-turn session's history holds 280,000 mentions of 242,000
distinct anchors, and a run that keeps a few hundred of its messages loses nearly all of them.
Counted anchor by anchor in Python (``Tally``, built for a replay's small steps), that is most
of a second; here each step is one pass made in C over every mention (``dict``, ``set``,
``Counter``, ``map``, ``compress``), and Python touches only what is left to decide one by
one: the sentence anchors and the literal anchors longer than a word.

Everything gives the same figures as the anchor-by-anchor count: the anchors no kept message
holds in the order of their first mention, each with its last mention and where that is;
each message's last weight; which of them are in view.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain, compress, count, product, repeat
from operator import and_, attrgetter, is_, itemgetter, le, not_
from typing import TYPE_CHECKING

from gcengine.messages import Message
from gcengine.quality.anchor_text import is_literal_word, literal_found, literal_words
from gcengine.quality.anchors import ANCHOR_CLASSES, CLASS_INFO, Anchor, AnchorClass, MatchRule
from gcengine.quality.tally import AnchorKey, Held

if TYPE_CHECKING:
    from gcengine.quality.reading import View

_KEYS, _ANCHORS = attrgetter("keys"), attrgetter("anchors")
_KEY, _RULE, _CLASS, _TEXT = attrgetter("key"), attrgetter("rule"), itemgetter(0), itemgetter(1)
_WEIGHT = {anchor_class: info.weight for anchor_class, info in CLASS_INFO.items()}
# The characters of a word (``TERM``): a key that is nothing but these is one word. Stripping
# them tells it in C, where a regular expression's match is several times the cost.
_WORD_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"
# From this many anchors to look for one by one, the words of the views in view are gathered
# (about what looking for that many lost sentence anchors in every view costs): most scores of
# a replay look for a few, a run's score for thousands.
_GATHERED_FROM = 32


@dataclass(frozen=True, slots=True)
class Kept:
    """What a compaction kept in view of a context's anchors: how many of each class, the
    first ones of each class it lost (as written, by first mention), and the weight of the
    anchors mentioned last in the context's oldest and newest thirds, all and kept."""

    retained: Counter[AnchorClass]
    lost_shown: dict[AnchorClass, list[str]]
    oldest: int
    oldest_retained: int
    newest: int
    newest_retained: int


class ContextAnchors:
    """A context's anchors, counted at once: each message's ``Held``, the context's distinct
    anchors per class, and each anchor's last mention and where it is, by first mention
    (``last``). An ``AnchorCache`` keeps the last one it counted: every run of a session is
    scored against its history.

    What a compaction kept of them is counted from what it kept (``kept``): an anchor a kept
    message holds, a one-word one whose word is in view, one found in view one by one. A run
    keeps a few hundred of tens of thousands of anchors, and the ones it lost are then a
    count and the first few of each class."""

    def __init__(self, messages: Sequence[Message], held_of: Callable[[Message], Held]) -> None:
        self.messages = list(messages)
        self.held = list(map(held_of, self.messages))
        # Each mention's position: the message's, once per anchor it holds.
        where = chain.from_iterable(map(repeat, count(), map(len, map(_KEYS, self.held))))
        mentions = zip(chain.from_iterable(map(_ANCHORS, self.held)), where, strict=True)
        # A key written again keeps its first place and takes its later mention.
        self.last: dict[AnchorKey, tuple[Anchor, int]] = dict(
            zip(chain.from_iterable(map(_KEYS, self.held)), mentions, strict=True)
        )
        self.per_class = Counter(map(_CLASS, self.last))
        self._one_by_one: list[AnchorKey] | None = None
        # The weight of the anchors mentioned last in the oldest and the newest third, for
        # the thirds they were counted for.
        self._thirds: tuple[tuple[int, int], int, int] | None = None

    @classmethod
    def having_counted(
        cls,
        messages: Sequence[Message],
        held: Sequence[Held],
        last: dict[AnchorKey, tuple[Anchor, int]],
        one_by_one: list[AnchorKey],
    ) -> ContextAnchors:
        """The count of ``messages`` made already (each message's ``held``, the ``last`` and
        ``one_by_one`` a count of them made, kept between processes): a stored session's
        history is counted once, not at every run's score."""
        made = cls.__new__(cls)
        made.messages = list(messages)
        made.held = list(held)
        made.last = last
        made.per_class = Counter(map(_CLASS, last))
        made._one_by_one = one_by_one
        made._thirds = None
        return made

    def counts(self, context: Sequence[Message]) -> bool:
        """Whether ``context`` is this one: the same messages (objects) in the same order."""
        return len(context) == len(self.messages) and all(map(is_, context, self.messages))

    def kept(
        self, keep: bytes | bytearray, in_view: InView, thirds: tuple[int, int], shown: int
    ) -> Kept:
        """What the compaction that left the messages ``keep`` keeps (1 there, 0 where one
        went) and ``in_view`` kept in view: ``thirds`` are where the middle and the newest
        third of the context start, ``shown`` how many lost anchors each class lists."""
        held = set(chain.from_iterable(map(_KEYS, compress(self.held, keep))))
        retained = [*held, *self._by_word(held, in_view), *self._found(held, in_view)]
        retained_count = Counter(map(_CLASS, retained))
        oldest, newest = self._weighed(thirds, self.last)
        kept_oldest, kept_newest = self._weighed(thirds, retained)
        return Kept(
            retained=retained_count,
            lost_shown=self._lost_shown(set(retained), retained_count, shown),
            oldest=oldest,
            oldest_retained=kept_oldest,
            newest=newest,
            newest_retained=kept_newest,
        )

    def _weighed(self, thirds: tuple[int, int], keys: Collection[AnchorKey]) -> tuple[int, int]:
        """The weight of ``keys`` mentioned last in the oldest and in the newest third (which
        start at ``thirds``); the context's own, once for each thirds."""
        every = keys is self.last
        if every and self._thirds is not None and self._thirds[0] == thirds:
            return self._thirds[1:]
        oldest_end, newest_start = thirds
        mentions = self.last.values() if every else map(self.last.__getitem__, keys)
        where = list(map(itemgetter(1), mentions))
        weights = list(map(_WEIGHT.__getitem__, map(_CLASS, keys)))
        weighed = (
            sum(compress(weights, map(oldest_end.__gt__, where))),
            sum(compress(weights, map(newest_start.__le__, where))),
        )
        if every:
            self._thirds = (thirds, *weighed)
        return weighed

    def _by_word(self, held: set[AnchorKey], in_view: InView) -> list[AnchorKey]:
        """The literal anchors of one word no kept message holds whose word is in view: each
        word in view tried as a key of each class."""
        came, left = in_view.words.came, in_view.words.left.get
        words = [word for word, views in came.items() if views > left(word, 0)]
        last, literal = self.last, MatchRule.LITERAL
        return [
            key
            for key in filter(last.__contains__, product(self.per_class, words))
            if key not in held and last[key][0].rule is literal
        ]

    def one_by_one(self) -> list[AnchorKey]:
        """The anchors a score looks for one by one (sentences, literal ones of several
        words), by first mention: the rest are decided by the words in view."""
        if self._one_by_one is None:
            by_word = _decided_by_word(
                map(_TEXT, self.last), map(itemgetter(0), self.last.values())
            )
            self._one_by_one = list(compress(self.last, map(not_, by_word)))
        return self._one_by_one

    def _found(self, held: set[AnchorKey], in_view: InView) -> list[AnchorKey]:
        """The other anchors (sentences, literal ones of several words) no kept message holds
        that are in view, each looked for there."""
        checked = [key for key in self.one_by_one() if key not in held]
        in_view.looking_for(len(checked))
        return [key for key in checked if in_view.retained(self.last[key][0])]

    def _lost_shown(
        self, retained: set[AnchorKey], retained_count: Counter[AnchorClass], shown: int
    ) -> dict[AnchorClass, list[str]]:
        """The first ``shown`` anchors each class lost, read until every class has all it
        will show (a run loses hundreds of thousands); the anchors of a class that has are
        passed over in C."""
        lost_shown, wanted = lost_to_show(self.per_class, retained_count, shown)
        showing = {anchor_class for anchor_class, count in wanted.items() if count}
        of_showing = map(showing.__contains__, map(_CLASS, self.last))
        for key, (anchor, _) in compress(self.last.items(), of_showing):
            if key not in retained:
                (texts := lost_shown[key[0]]).append(anchor.text)
                if len(texts) == wanted[key[0]]:
                    showing.discard(key[0])
                    if not showing:
                        break
        return lost_shown


def lost_to_show(
    per_class: Mapping[AnchorClass, int], retained_count: Counter[AnchorClass], shown: int
) -> tuple[dict[AnchorClass, list[str]], dict[AnchorClass, int]]:
    """Where a score lists the anchors each class lost (empty for every class), and how many
    each will show: ``shown`` at most, fewer where the class lost fewer."""
    lost_shown: dict[AnchorClass, list[str]] = {c.anchor_class: [] for c in ANCHOR_CLASSES}
    wanted = {
        anchor_class: min(anchors - retained_count[anchor_class], shown)
        for anchor_class, anchors in per_class.items()
    }
    return lost_shown, wanted


class ContextCount:
    """A context counted at once for one scorer (what a ``Tally`` of it holds that a score
    reads but the views, of which a score reads only those it keeps): its ``anchors``, each
    message's cost by the scorer's count, and the context's tokens."""

    def __init__(self, anchors: ContextAnchors, tokens: Callable[[Message], int]) -> None:
        self.anchors = anchors
        self.per_class = anchors.per_class
        self.costs = list(map(tokens, anchors.messages))
        self.tokens = sum(self.costs)

    def counts(self, context: Sequence[Message]) -> bool:
        return self.anchors.counts(context)


def _decided_by_word(keys: Iterable[str], anchors: Iterable[Anchor]) -> Iterator[bool]:
    """For each of ``anchors`` (whose ``keys`` these are), whether it is decided by the count
    of the words in view: a literal anchor of one word (``is_literal_word``, told by stripping
    its word characters, in C). An empty key (none is found) counts as one word here: its word
    is in view nowhere, as its text is found nowhere, so it is lost either way."""
    one_word = map(not_, map(str.strip, keys, repeat(_WORD_CHARS)))
    return map(and_, one_word, map(is_, map(_RULE, anchors), repeat(MatchRule.LITERAL)))


@dataclass
class WordCount:
    """How many views of a context hold each word, as how many times views holding it came
    into the context and left it: both are counted by ``Counter.update``, in C, where
    ``Counter.subtract`` is a Python loop over every word of every view that leaves (a replay
    takes views out at each of its collections)."""

    came: Counter[str] = field(default_factory=Counter)
    left: Counter[str] = field(default_factory=Counter)

    def holds(self, word: str) -> bool:
        return self.came.get(word, 0) > self.left.get(word, 0)


@dataclass
class InView:
    """What a model sees after a compaction: the views of its messages, and how many of them
    hold each literal word."""

    views: Sequence[View]
    words: WordCount
    # Every word of the views in view (``gathered``).
    _anywhere: frozenset[str] | None = None

    @cached_property
    def text(self) -> str:
        """Every view's text, joined only when an anchor has to be looked for in it: most are
        decided by the words in view, and a long context's text is megabytes (a replay scores
        thousands of contexts)."""
        return "\n".join(view.text for view in self.views)

    def looking_for(self, anchors: int) -> None:
        """About to look for ``anchors`` anchors one by one: when there are enough of them
        for it to pay (``_GATHERED_FROM``), gather every word of the views in view, by which a
        sentence anchor that no view could match is told without trying each view (a run
        loses hundreds of them, each tried in every view before)."""
        if anchors >= _GATHERED_FROM and self._anywhere is None:
            self._anywhere = frozenset().union(*(view.words for view in self.views))

    def retained(self, anchor: Anchor) -> bool:
        """Whether ``anchor`` is in view: a literal one found as whole words in the text in
        view, a terms one when one sentence in view holds enough of its terms."""
        if anchor.rule is MatchRule.LITERAL:
            # A key that is one word is found exactly when that word is in view (most are).
            # Each word of a longer key found as whole words is a whole word where it is
            # found, so a key with a word nowhere in view is not looked for in the text.
            holds = self.words.holds
            if is_literal_word(anchor.key):
                return holds(anchor.key)
            if not all(map(holds, literal_words(anchor.key))):
                return False
            return literal_found(self.text, anchor.key)
        terms, needed = anchor.terms, anchor.needed()
        # A view's sentences hold only words of that view (its ``words``).
        if self._anywhere is not None and len(terms - self._anywhere) > len(terms) - needed:
            return False
        for view in self.views:
            if len(terms & view.words) < needed:
                continue
            if any(len(terms & sentence) >= needed for sentence in view.sentences()):
                return True
        return False


def lost_of(unheld: Sequence[tuple[Anchor, int]], in_view: InView) -> list[tuple[Anchor, int]]:
    """Of anchors no message kept holds (each with where it is mentioned last), the ones not in
    view (``InView.retained``). A literal anchor of one word, most of them, is decided by the
    count of the words in view, in C for all at once; the rest one by one."""
    anchors = list(map(itemgetter(0), unheld))
    keys = list(map(_KEY, anchors))
    came, left = in_view.words.came.get, in_view.words.left.get
    lost = list(map(le, map(came, keys, repeat(0)), map(left, keys, repeat(0))))
    by_word = _decided_by_word(keys, anchors)
    one_by_one = list(compress(range(len(anchors)), map(not_, by_word)))
    in_view.looking_for(len(one_by_one))
    for position in one_by_one:
        lost[position] = not in_view.retained(anchors[position])
    return list(compress(unheld, lost))
