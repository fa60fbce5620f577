"""What a JAATO plugin read of JAATO's objects at its last collection, kept on the plugin
(``jaato_plugins.JaatoPlugin``) to take over at the next what has not changed since: JAATO
hands a plugin the same message objects collection after collection. Only attributes are
read here (JAATO is never imported): each history and budget is compared a field at a time,
as flat lists, at C speed, since a session has tens of thousands of messages."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter, is_
from typing import Any

from gcengine._fast import joined
from gcengine.budget import GCPolicy
from gcengine.conversation import ConversationIndex
from gcengine.foreign import ForeignHistory

_MESSAGE_ID = attrgetter("message_id")
_ROLE = attrgetter("role")
_PARTS = attrgetter("parts")


@dataclass(frozen=True)
class Seen:
    """What a history's messages were when read: each message's id, role and part objects, as
    flat lists compared at C speed (a history has tens of thousands of messages)."""

    messages: list[Any]
    ids: list[Any]
    roles: list[Any]
    counts: list[int]
    parts: list[Any]

    @classmethod
    def of(cls, history: Sequence[Any]) -> Seen | None:
        """None for a history with a message without a list of parts (read one by one)."""
        try:
            lists = list(map(_PARTS, history))
            counts = list(map(len, lists))
            parts = joined(lists)
        except TypeError:
            return None
        return cls(
            list(history), list(map(_MESSAGE_ID, history)), list(map(_ROLE, history)), counts, parts
        )

    def holds(self, history: Sequence[Any]) -> bool:
        """Whether ``history`` is this one still: the very message objects, each with the same
        id, role and part objects, compared as read rather than read into a new ``Seen``
        first: a plugin asks this of every history it is handed, and most are the one it read
        last."""
        if len(history) != len(self.messages) or not all(map(is_, history, self.messages)):
            return False
        try:
            lists = list(map(_PARTS, history))
            if list(map(len, lists)) != self.counts:
                return False
        except TypeError:
            return False
        return (
            list(map(_MESSAGE_ID, history)) == self.ids
            and all(map(is_, map(_ROLE, history), self.roles))
            and all(map(is_, joined(lists), self.parts))
        )


@dataclass(frozen=True)
class LeafFigures:
    """A budget's conversation leaves as read (``jaato_plugins.BudgetReading``), compared at
    C speed: the ids they name flattened, since JAATO's lists of ids are its own and may
    change, with how many each names (None when each names one: a session's budget)."""

    tokens: list[int]
    policies: list[GCPolicy]
    created: list[float | None]
    sizes: list[int] | None
    ids: list[str]

    @classmethod
    def of(
        cls,
        tokens: list[int],
        policies: list[GCPolicy],
        created: list[float | None],
        named: list[Sequence[str]],
        flat: list[str],
    ) -> LeafFigures:
        """The leaves as four parallel lists (each leaf's tokens, policy, time and the ids it
        names, none empty), copied, with those ids flattened (``flat``, kept as given)."""
        sizes = None if len(flat) == len(named) else list(map(len, named))
        return cls(list(tokens), list(policies), list(created), sizes, flat)


@dataclass
class LastRead:
    """The last history a plugin collected, as read: JAATO's messages and what they were
    (``seen``), the history the strategy read of them, and the index made of it with the
    budget's leaves."""

    seen: Seen | None
    messages: ForeignHistory
    index: ConversationIndex | None = None
    leaves: LeafFigures | None = None
