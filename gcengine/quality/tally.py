"""What scoring counts of a context's anchors, kept from one context to the next.

A score needs, of the context before a compaction: its distinct anchors per class, which of
its messages hold each (an anchor some kept message holds is still in view), and where each is
mentioned last (recency). Read anchor by anchor, that is every anchor of the context at every
score: hundreds of thousands on a long session, and a replay scores a context that mostly
repeats the one before at each of its thousands of collections.

So each message's anchors are read once into a ``Held`` (its distinct anchors, in the order
first found), and a ``Tally`` counts a context from those: it grows at its end (the turns a
replay adds) and loses messages anywhere (what a collection removed), each step costing the
anchors of the messages concerned, never the whole context's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import is_, is_not

from gcengine.messages import Message
from gcengine.quality.anchors import CLASS_INFO, Anchor, AnchorClass

AnchorKey = tuple[AnchorClass, str]
"""What an anchor is counted by: its class and its normalised text."""


@dataclass(frozen=True, slots=True)
class Held:
    """The anchors one message holds: each key once, in the order first found, with the
    anchor of its last mention in the message (what is shown and matched, as a context's
    last mention is) and its class's weight."""

    keys: tuple[AnchorKey, ...]
    anchors: tuple[Anchor, ...]
    weights: tuple[int, ...]


def held(anchors: Iterable[Anchor]) -> Held:
    """``anchors`` of one message, each key once."""
    last: dict[AnchorKey, Anchor] = {}
    for anchor in anchors:
        last[(anchor.anchor_class, anchor.key)] = anchor
    return Held(tuple(last), tuple(last.values()), tuple(CLASS_INFO[c].weight for c, _ in last))


class Tally[View]:
    """A context's messages in order, the ``Held`` of each, its tokens and its view (what the
    model reads of it, in view after a compaction that keeps it), and what scoring
    counts of them: which messages hold each key (as slots, numbered in the order they came
    in, so a key's holders are in context order and its last holder is the last slot), how
    many distinct keys each class has, and each message's ``last weight``, the weight of the
    keys it is the last holder of (summed by third for recency)."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.held: list[Held] = []
        self.costs: list[int] = []
        self.views: list[View] = []
        self.tokens = 0
        # One holder's slot, or several in order (most keys have one: a list each would be
        # most of a long context's tally).
        self.holders: dict[AnchorKey, int | list[int]] = {}
        self.per_class: Counter[AnchorClass] = Counter()
        self._slots: list[int] = []
        self._last_weight: dict[int, int] = {}
        self._next_slot = 0

    def extends_to(self, context: Sequence[Message]) -> bool:
        """Whether ``context`` is this one's messages (the same objects) and then more."""
        mine = self.messages
        return len(context) >= len(mine) and all(map(is_, mine, context))

    def extend(
        self,
        messages: Iterable[Message],
        held_of: Callable[[Message], Held],
        tokens: Callable[[Message], int],
        view_of: Callable[[Message], View],
    ) -> None:
        """Add ``messages`` at the end of the context."""
        holders, last_weight, per_class = self.holders, self._last_weight, self.per_class
        for message in messages:
            slot = self._next_slot
            self._next_slot += 1
            entry = held_of(message)
            for key, weight in zip(entry.keys, entry.weights, strict=True):
                holding = holders.get(key)
                if holding is None:
                    holders[key] = slot
                    per_class[key[0]] += 1
                elif isinstance(holding, int):
                    last_weight[holding] -= weight
                    holders[key] = [holding, slot]
                else:
                    last_weight[holding[-1]] -= weight
                    holding.append(slot)
            last_weight[slot] = sum(entry.weights)
            cost = tokens(message)
            self.messages.append(message)
            self.held.append(entry)
            self.costs.append(cost)
            self.views.append(view_of(message))
            self._slots.append(slot)
            self.tokens += cost

    def drop(
        self,
        positions: Sequence[int],
        keep: bytes,
        kept: list[Message],
        tokens: Callable[[Message], int],
    ) -> None:
        """Take the messages at ``positions`` out of the context; ``keep`` is 1 at every other
        position, 0 at those. ``kept`` is the rest as the context now holds it: the same
        messages, or copies a collection made that the model reads alike (a message marked in
        its metadata), whose tokens are counted again."""
        self._forget(positions)
        rest = list(compress(self.messages, keep))
        self.held = list(compress(self.held, keep))
        self.costs = list(compress(self.costs, keep))
        for position in compress(range(len(kept)), map(is_not, kept, rest)):
            cost = tokens(kept[position])
            self.tokens += cost - self.costs[position]
            self.costs[position] = cost
        self.messages = kept
        self.views = list(compress(self.views, keep))
        self._slots = list(compress(self._slots, keep))

    def take(self, first: int, end: int) -> None:
        """Take the run of messages ``first`` to ``end`` out of the context, every other one
        staying as it is (a truncation): ``drop`` without comparing the rest to what the
        context holds, and the lists cut in place rather than copied."""
        self._forget(range(first, end))
        for kept in (self.messages, self.held, self.costs, self.views, self._slots):
            del kept[first:end]

    def _forget(self, positions: Iterable[int]) -> None:
        """Count the messages at ``positions`` out of the holders, the classes' keys, the
        last weights and the tokens (their entries in the lists stay, for the caller)."""
        holders, last_weight, per_class = self.holders, self._last_weight, self.per_class
        for position in positions:
            slot, entry = self._slots[position], self.held[position]
            for key, weight in zip(entry.keys, entry.weights, strict=True):
                holding = holders[key]
                if isinstance(holding, int):
                    del holders[key]
                    per_class[key[0]] -= 1
                    continue
                was_last = holding[-1] == slot
                holding.remove(slot)
                if was_last:
                    last_weight[holding[-1]] += weight
                if len(holding) == 1:
                    holders[key] = holding[0]
            del last_weight[slot]
            self.tokens -= self.costs[position]

    def holding(self, key: AnchorKey) -> int:
        """How many of the context's messages hold ``key``."""
        holding = self.holders[key]
        return 1 if isinstance(holding, int) else len(holding)

    def last_weights(self) -> list[int]:
        """Each message's last weight, in context order."""
        return list(map(self._last_weight.__getitem__, self._slots))
