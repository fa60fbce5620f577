"""A history read from another framework's message objects, each made into the engine's
``Message`` only when something reads it.

An adapter running inside another framework (the JAATO plugins) hands a strategy the
framework's own history: tens of thousands of messages, of which a collection reads only a
few (the turns it takes a piece of, the latest request). What it needs about every message
(its id, role, tool traffic, and whether it answers a tool call) the adapter reads in one
pass, as flat lists; the engine's copy of a message, about ten containers, is made when a
strategy reads that message (``ForeignHistory[position]``), once.

Every message of a foreign history is conversation carrying no turn index (``MessageKind``
``CHAT``, ``turn_index`` None), as a framework's history is. A collection cuts the new
history from the framework's own objects (``originals``): what it keeps is the very objects
the framework gave, position by position, and only what it writes (a summary, a notice) is
the engine's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import count
from typing import Any, overload

from gcengine.messages import Message, Role, ToolTraffic, TurnLayout, untagged_layout


class ForeignHistory(Sequence[Message]):
    """A framework's history as the engine's, its messages made when read (see the module).

    ``originals`` are the framework's objects, ``ids``, ``roles``, ``traffic`` (what each
    calls and answers, None for a message taking no part in tool traffic: ``tool_traffic``)
    and ``answers_call`` (``Message.is_function_response``) what each of them is, position by
    position, as its engine copy would read. ``make`` makes the engine's copies of the
    originals it is given, in their order."""

    __slots__ = (
        "_made",
        "_positions",
        "answers_call",
        "ids",
        "make",
        "originals",
        "roles",
        "traffic",
    )

    def __init__(
        self,
        originals: list[Any],
        ids: list[str],
        roles: list[Role],
        traffic: list[ToolTraffic | None],
        answers_call: list[bool],
        make: Callable[[list[Any]], list[Message]],
    ) -> None:
        self.originals = originals
        self.ids = ids
        self.roles = roles
        self.traffic = traffic
        self.answers_call = answers_call
        self.make = make
        self._made: list[Message | None] = [None] * len(originals)
        self._positions: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.originals)

    @overload
    def __getitem__(self, position: int) -> Message: ...

    @overload
    def __getitem__(self, position: slice) -> list[Message]: ...

    def __getitem__(self, position: int | slice) -> Message | list[Message]:
        if isinstance(position, slice):
            return self._made_at(range(len(self.originals))[position])
        made = self._made[position]
        if made is None:
            made = self._made[position] = self.make([self.originals[position]])[0]
        return made

    def __iter__(self) -> Iterator[Message]:
        return iter(self._made_at(range(len(self.originals))))

    def _made_at(self, positions: range) -> list[Message]:
        """The engine's copies of the messages at ``positions``, those not made yet made
        together."""
        made = self._made
        wanted = [p for p in positions if made[p] is None]
        if wanted:
            originals = self.originals
            for p, message in zip(wanted, self.make([originals[p] for p in wanted]), strict=True):
                made[p] = message
        return [made[p] for p in positions]  # type: ignore[misc]

    def positions(self) -> dict[str, int] | None:
        """Each message's position by its id, None when two messages share an id. Made once
        and kept with the history: a plugin hands the strategy the same history while its
        messages are the same, and a collection maps the removed messages' ids to positions."""
        if self._positions is None:
            self._positions = dict(zip(self.ids, count()))
        return self._positions if len(self._positions) == len(self.ids) else None

    def layout(self) -> TurnLayout:
        """``turn_layout`` of the engine's copies, from the flat lists."""
        return untagged_layout(self.ids, self.roles, self.answers_call.__getitem__)


def originals_of(history: Sequence[Message]) -> Sequence[Any]:
    """The objects a new history is cut from: a foreign history's originals (the framework's
    own messages), else the history itself."""
    return history.originals if isinstance(history, ForeignHistory) else history
