"""What a strategy decides to take, and the messages a collector writes."""

from __future__ import annotations

import hashlib
import heapq
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from gcengine.budget import InstructionSource
from gcengine.conversation import turn_key_of
from gcengine.gc.types import (
    GCRemovalItem,
    RemovalReason,
)
from gcengine.messages import (
    Message,
    MessageKind,
    Part,
    Role,
    uuid_shaped,
)

if TYPE_CHECKING:
    # Policies sit above the machinery that carries them out: named in signatures only.
    pass


from gcengine.gc.plan.collection import Collection, Planned
from gcengine.gc.plan.units import Unit


def marked_message(kind: MessageKind, text: str, seed: Iterable[str], **metadata: Any) -> Message:
    """A summary or notice: a user-role message (JAATO's shape) that says what it is."""
    digest = hashlib.blake2b(f"{kind.value}:{text}".encode(), digest_size=16)
    for message_id in seed:
        digest.update(message_id.encode())
    return Message(
        role=Role.USER,
        parts=[Part.from_text(text)],
        message_id=uuid_shaped(digest.hexdigest()),
        kind=kind,
        metadata=metadata,
    )


def notice_message(collection: Collection, decision: Decision, notification: str) -> Message:
    """The notice a collection leaves: JAATO's ``[System: ...]`` user message."""
    return marked_message(
        MessageKind.NOTICE,
        f"[System: {notification}]",
        sorted({collection.ids[p] for p in decision.removed_positions}),
    )


@dataclass
class Decision:
    """What a strategy chose; ``apply`` turns it into a history and a result.

    ``taken`` holds what was taken, in order, each with why: ``Unit``s, or units decided on by
    position (``Planned``) whose ``Unit`` is made only when ``removed`` is read; the result's
    removal items are made from either (``removal_items``)."""

    taken: list[tuple[Unit | Planned, str]] = field(default_factory=list)
    inserted: Message | None = None
    details: dict[str, Any] = field(default_factory=dict)
    # Both kept as units are added: strategies ask after every candidate.
    freed: int = 0
    removed_positions: set[int] = field(default_factory=set)
    # The most the summary this decision will write may cost (0 while it writes none).
    summary_reserve: int = 0
    # ``removed`` as last made: the units of the first so many of ``taken``.
    _units: list[tuple[Unit, str]] = field(default_factory=list, repr=False)

    @property
    def removed(self) -> list[tuple[Unit, str]]:
        """Every unit taken, in order, with why (units decided on by position made now, once)."""
        units, taken = self._units, self.taken
        if len(units) < len(taken):
            units.extend(
                (unit if isinstance(unit, Unit) else unit.unit(), why)
                for unit, why in taken[len(units) :]
            )
        return units

    @property
    def items(self) -> int:
        """How many units were taken: the entries of the removal list."""
        return len(self.taken)

    def reasons(self) -> dict[str, int]:
        """How many units were taken for each reason."""
        return Counter(map(itemgetter(1), self.taken))

    def removal_items(self) -> list[GCRemovalItem]:
        """The result's removal list: an item a unit taken, in order, each as of its ``Unit``;
        one loop, a unit decided on by position read as the tuple it is (a collection takes
        thousands, and reading their fields by name cost as much as making the items)."""
        items: list[GCRemovalItem] = []
        add, conversation = items.append, InstructionSource.CONVERSATION
        # What is read of a unit's collection, looked up again only when the collection
        # changes (a decision's units are all of one).
        read_of: Collection | None = None
        indices: list[int | None] = []
        ids: list[str] = []
        for unit, why in self.taken:
            if isinstance(unit, Unit):
                add(
                    GCRemovalItem(
                        unit.source,
                        unit.key,
                        unit.tokens,
                        why,
                        [*unit.message_ids],
                        unit.turn_index,
                        unit.verdict,
                    )
                )
                continue
            collection, turn, positions, tokens, _, _, whole, key, message_ids = unit
            if collection is not read_of:
                read_of, indices, ids = collection, collection.layout.indices, collection.ids
            index = indices[turn]
            if whole:  # a whole turn: its key and ids are the collection's
                start = positions[0]
                key = turn_key_of(index, None if index is not None else collection.history[start])
                message_ids = ids[start : start + len(positions)]
            else:
                assert message_ids is not None
                message_ids = [*message_ids]
            add(GCRemovalItem(conversation, key, tokens, why, message_ids, index, None))
        return items

    def remove(self, unit: Unit, reason: str) -> None:
        self.take((unit,), reason, None)

    def take(self, units: Iterable[Unit | Planned], reason: str, enough: int | None) -> None:
        """Remove ``units`` in turn, stopping once ``enough`` tokens are freed (None: all):
        one loop with nothing looked up per unit, as a collection takes thousands."""
        removed, positions = self.taken.append, self.removed_positions.update
        freed = self.freed
        try:
            for unit in units:
                removed((unit, reason))
                freed += unit.tokens
                positions(unit.positions)
                if enough is not None and freed >= enough:
                    break
        finally:
            self.freed = freed

    def turns_taken_whole(self) -> set[int]:
        """The positions of the turns a whole-turn unit took: every message they had left."""
        return {
            unit.turn_position
            for unit, _ in self.taken
            if unit.whole_turn and unit.turn_position is not None
        }

    @property
    def inserted_tokens(self) -> int:
        return int(self.details.get("summary_tokens") or 0) if self.inserted is not None else 0

    def truncate_instead(self, why: str) -> None:
        """Drop the summary and truncate the turns it would have replaced, saying why."""
        self.taken = [
            (unit, RemovalReason.TRUNCATED if reason == RemovalReason.SUMMARIZED else reason)
            for unit, reason in self.taken
        ]
        self._units = [
            (unit, RemovalReason.TRUNCATED if reason == RemovalReason.SUMMARIZED else reason)
            for unit, reason in self._units
        ]
        self.inserted = None
        self.summary_reserve = 0
        summarized = int(self.details.pop("turns_summarized", 0) or 0)
        for key in ("summary_number", "summarizer"):
            self.details.pop(key, None)
        if "turns_truncated" in self.details:
            self.details["turns_truncated"] = int(self.details["turns_truncated"]) + summarized
            self.details["turns_summarized"] = 0
        self.details["summary_tokens"] = 0
        self.details["summary_skipped"] = why


def take_until_target(
    collection: Collection, candidates: Iterable[Unit | Planned], reason: str, decision: Decision
) -> None:
    """Take candidates in order until the collection is at or below its target.

    What the run will insert (its summary, the notice) counts: a run stops only once usage
    with those in is at or below the target. Candidates may be generated lazily: none is asked
    for once the target is met.
    """
    if collection.still_short(decision):
        decision.take(candidates, reason, collection.enough(decision))


def take_every_turn(collection: Collection, reason: str, decision: Decision) -> None:
    """JAATO's rules: every turn that is not protected goes whole, whatever the target."""
    for position in collection.removable_turns():
        decision.remove(collection.turn_unit(position), reason)


def jaato_turn_details(collection: Collection, decision: Decision) -> dict[str, Any]:
    """What JAATO's truncate, summarize and hybrid add to the details (beside the turns
    before and after every strategy gives): the recent turns preserved and the positions of
    the turns kept."""
    taken = decision.turns_taken_whole()
    return {
        "preserve_count": collection.preserve_recent,
        "preserved_indices": [p for p in range(collection.turn_count) if p not in taken],
    }


def oldest_first(
    collection: Collection,
    entries: list[Unit],
    turn_units: Iterable[Unit | Planned],
    key: Callable[[Unit | Planned], Any],
) -> Iterable[Unit | Planned]:
    """``sorted(entries + list(turn_units), key=key)``, where ``key`` orders by ``created_at``
    first, without building every turn's units when the order is already known.

    ``turn_units`` come oldest turn first, in history order within a turn. When creation times
    increase along the history, that is their sorted order, so they only need merging with the
    budget entries outside the conversation, lazily; the merge is stable (entries first on
    equal keys), exactly as the sort of the concatenation.
    """
    if not collection.figures.created_in_order:
        return sorted([*entries, *turn_units], key=key)
    if not entries:
        return turn_units
    return heapq.merge(sorted(entries, key=key), turn_units, key=key)


def touched_turns(collection: Collection, decision: Decision) -> set[int]:
    """The turns a decision takes messages from: a conversation unit's own, and those of the
    messages an entry outside the conversation names."""
    touched: set[int] = set()
    for unit, _ in decision.taken:
        if unit.turn_position is not None:
            touched.add(unit.turn_position)
        else:
            touched.update(map(collection.layout.turn_of, unit.positions))
    return touched
