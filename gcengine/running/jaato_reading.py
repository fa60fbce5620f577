"""JAATO's objects read into the engine's model, for the JAATO plugins (``jaato_plugins``):
a history's messages (``engine_message``) and a budget (``read_budget``). Attributes are only
read here: JAATO is never imported (``jaato_plugins`` imports it, when JAATO calls a plugin).
A 10,000-turn history has tens of thousands of messages, so the loops read JAATO's objects a
field at a time where they can, at C speed."""

from __future__ import annotations

import base64
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate, chain, compress, count, islice, repeat
from operator import attrgetter, is_, is_not, ne, not_, or_, sub
from typing import Any

from gcengine._fast import construct, entries_made, entry_maker, joined
from gcengine.budget import GCPolicy, InstructionBudget, InstructionSource, SourceEntry
from gcengine.foreign import ForeignHistory
from gcengine.gc.plan import BudgetLeaf
from gcengine.messages import (
    FunctionCall,
    FunctionResponse,
    InlineData,
    Message,
    MessageKind,
    Part,
    PartType,
    Role,
    ToolTraffic,
)

# JAATO's part fields the engine carries without reading, and the opaque kind each becomes.
_OPAQUE_FIELDS = ("executable_code", "code_execution_result")


# Makers taking every field, for the loops that convert a whole history and budget (the
# conversion is most of what a plugin costs JAATO: a 10,000-turn history has 40,000 messages).
_new_part = entry_maker(Part)
_new_call = entry_maker(FunctionCall)
_new_response = entry_maker(FunctionResponse)
_new_entry = entry_maker(SourceEntry)
_ROLES = {role.value: role for role in Role}
_SOURCES = {source.value: source for source in InstructionSource}
_POLICIES = {policy.value: policy for policy in GCPolicy}


def _text_fields(kind: PartType, text: str) -> dict[str, Any]:
    """Every field of a text part, for making it without pydantic's checks."""
    return {
        "type": kind,
        "text": text,
        "function_call": None,
        "function_response": None,
        "inline_data": None,
        "opaque": None,
        "extra": {},
    }


def _text_part(kind: PartType, text: str) -> Part:
    return _new_part(_text_fields(kind, text))


def engine_part(part: Any) -> Part | None:
    """One JAATO ``Part`` as the engine's (None for a part carrying nothing)."""
    if part.text is not None:
        return _text_part(PartType.TEXT, part.text)
    call = part.function_call
    if call is not None:
        made = _new_call({"id": call.id, "name": call.name or "", "args": dict(call.args or {})})
        return _new_part(
            {
                "type": PartType.FUNCTION_CALL,
                "text": None,
                "function_call": made,
                "function_response": None,
                "inline_data": None,
                "opaque": None,
                "extra": {},
            }
        )
    response = part.function_response
    if response is not None:
        extra: dict[str, Any] = {}
        attachments = getattr(response, "attachments", None)
        if attachments:
            # Counted like inline data: their payload is sent with the result.
            extra["attachments"] = [
                {"mime_type": getattr(a, "mime_type", None), "bytes": _size(a.data)}
                for a in attachments
            ]
        answer = _new_response(
            {
                "call_id": response.call_id,
                "name": response.name or "",
                "result": response.result,
                "is_error": bool(response.is_error),
                "extra": extra,
            }
        )
        return _new_part(
            {
                "type": PartType.FUNCTION_RESPONSE,
                "text": None,
                "function_call": None,
                "function_response": answer,
                "inline_data": None,
                "opaque": None,
                "extra": {},
            }
        )
    inline = part.inline_data
    if inline:
        data = inline.get("data")
        if isinstance(data, bytes | bytearray):
            data = base64.b64encode(data).decode("ascii")
        return Part.from_inline_data(
            construct(
                InlineData,
                mime_type=str(inline.get("mime_type") or "application/octet-stream"),
                data=data if isinstance(data, str) else "",
                extra={},
            )
        )
    if part.thought is not None:
        return _text_part(PartType.THOUGHT, part.thought)
    for name in _OPAQUE_FIELDS:
        value = getattr(part, name, None)
        if value is not None:
            return Part.from_opaque(name, {"value": value})
    return None


def _size(data: Any) -> int:
    if isinstance(data, bytes | bytearray):
        return len(data)
    return len(data) * 3 // 4 if isinstance(data, str) else 0


_TEXT = attrgetter("text")


def engine_messages(history: Sequence[Any]) -> list[Message]:
    """Each JAATO ``Message`` of ``history`` as the engine's, under the same id, made in a few
    passes over all their parts rather than a few calls a part: text parts (most of a
    history's) are made in one loop, the others one by one (``engine_part``), which drops a
    part carrying nothing."""
    lists = [message.parts or () for message in history]
    flat = list(chain.from_iterable(lists))
    texts = list(map(_TEXT, flat))
    others = [engine_part(part) for text, part in zip(texts, flat, strict=True) if text is None]
    made = iter(
        entries_made(
            Part,
            [_text_fields(PartType.TEXT, text) for text in texts if text is not None],
        )
    )
    rest = iter(others)
    parts = [next(made) if text is not None else next(rest) for text in texts]
    at = iter(parts)
    grouped = [list(islice(at, size)) for size in map(len, lists)]
    if any(part is None for part in others):
        grouped = [[part for part in group if part is not None] for group in grouped]
    return entries_made(
        Message,
        [
            {
                # The member's own attribute: ``value`` is a property, run a message at a time.
                "role": _ROLES[message.role._value_],
                "parts": group,
                "message_id": message.message_id,
                "kind": MessageKind.CHAT,
                "turn_index": None,
                "metadata": {},
            }
            for message, group in zip(history, grouped, strict=True)
        ],
    )


_CALL = attrgetter("function_call")
_RESPONSE = attrgetter("function_response")


def foreign_history(
    history: list[Any],
    ids: list[str],
    roles: list[Any],
    counts: list[int],
    parts: list[Any],
    make: Callable[[list[Any]], list[Message]],
) -> ForeignHistory:
    """JAATO's ``history`` as a ``ForeignHistory``: what a collection reads of every message,
    read in one pass over their parts (``ids``, JAATO's ``roles``, each message's count of
    ``parts`` and those parts, flattened), as the engine's copy made by ``make`` would read:
    a part with text is text whatever else it holds, then a call, then a result
    (``engine_part``). Only the parts holding a call or a result are looked at one by one."""
    engine_roles = list(map(_ROLES.__getitem__, map(_VALUE, roles)))
    answers_call = list(map(is_, engine_roles, repeat(Role.TOOL)))
    traffic: list[ToolTraffic | None] = [None] * len(history)
    calls = list(map(_CALL, parts))
    responses = list(map(_RESPONSE, parts))
    holding = map(or_, map(is_not, calls, repeat(None)), map(is_not, responses, repeat(None)))
    tool_parts = list(compress(count(), holding))
    if tool_parts:
        # A part with text is text, whatever else it holds.
        texts = map(_TEXT, map(parts.__getitem__, tool_parts))
        tool_parts = list(compress(tool_parts, map(is_, texts, repeat(None))))
        ends = list(accumulate(counts))
        positions = map(bisect_right, repeat(ends), tool_parts)
        for at, position in zip(tool_parts, positions, strict=True):
            call = calls[at]
            if call is None:
                answers_call[position] = True
                named, side = responses[at].call_id, 1
            else:
                named, side = call.id, 0
            if named:
                made = traffic[position]
                if made is None:
                    made = traffic[position] = ([], [])
                made[side].append(named)
    return ForeignHistory(history, ids, engine_roles, traffic, answers_call, make)


@dataclass
class BudgetReading:
    """JAATO's ``InstructionBudget`` as the engine reads it, in one pass over its tree.

    ``budget`` is the engine's copy of every source but the conversation, whose entry is an
    empty container: the conversation is its leaves naming messages, as four parallel lists
    (``tokens``, ``policies``, ``created``, ``named``: each leaf's tokens, stored policy, time
    and the ids it names), which the engine's index of the history is made from
    (``index_by_id``). A conversation holding tokens no leaf names (a bare figure, a summary
    child naming no message) is copied whole instead, and ``copied`` says so: the engine reads
    it as it reads its own budgets, so every token of it counts.

    What a removal must name for JAATO's ``apply_gc_removal_list``, which removes top-level
    children only: ``keys``, the top-level conversation child each leaf is in, ``owner``,
    the leaf naming each message id (the first, if several do), and ``conversation``,
    JAATO's own entry, read again only for the children a collection touches when they are
    containers (``leaf_children`` false). Parallel lists, no container per leaf: a session's
    budget has a leaf per message, and the cycle collector (left running in JAATO's process)
    walks every container made.

    ``in_order`` says the leaves name the messages of the history read with the budget, one
    a leaf, in the history's order (as a session's budget and a restored one do): leaf and
    message position are then one number, and ``owner`` is the history's own map of ids to
    positions, made once per history rather than per budget."""

    budget: InstructionBudget
    copied: bool
    tokens: list[int] = field(default_factory=list)
    policies: list[GCPolicy] = field(default_factory=list)
    created: list[float | None] = field(default_factory=list)
    named: list[Sequence[str]] = field(default_factory=list)
    # Each leaf's top-level child (``keys``); None when made from ``run_keys`` when asked for.
    _keys: list[str] | None = field(default_factory=list)
    # Each top-level child's key in the tree's order, when every leaf of children that are
    # all containers was read (``leaf_runs``): a collection taking whole children names
    # them by these alone, never asking for a key per leaf.
    run_keys: list[str] | None = None
    # The ids the leaves name, flattened in the leaves' order.
    flat: list[str] = field(default_factory=list)
    in_order: bool = False
    # Whether every top-level conversation child is a leaf (a session's budget): a child's
    # figures are then its leaf's, as read. Else whether every one is a container of leaves
    # read in the tree's order (a budget restored from a file: a container per turn): a
    # child's are then those of the run of leaves it holds.
    leaf_children: bool = True
    leaf_runs: bool = False
    conversation: Any = None
    _owner: dict[str, int] | None = None

    @property
    def owner(self) -> dict[str, int]:
        """The leaf naming each message id (the first, if several do), made when a removal
        first asks: the pairs in reverse, so that the first leaf is written last."""
        if self._owner is None:
            leaf_of_id = chain.from_iterable(map(repeat, count(), map(len, self.named)))
            self._owner = dict(zip(reversed(self.flat), reversed(list(leaf_of_id)), strict=True))
        return self._owner

    @property
    def keys(self) -> list[str]:
        """The top-level conversation child each leaf is in."""
        if self._keys is None:
            sizes = map(sub, self.run_ends, self.run_starts)
            self._keys = list(chain.from_iterable(map(repeat, self.run_keys or (), sizes)))
        return self._keys

    def run_key(self, run: int) -> str:
        """The key of the top-level child holding run ``run`` of leaves (``leaf_runs``)."""
        if self.run_keys is not None:
            return self.run_keys[run]
        return self.keys[self.run_starts[run]]

    @cached_property
    def run_ends(self) -> list[int]:
        """Where each top-level child's run of leaves ends (``leaf_runs``): a child's leaves
        are read one after another, so its run ends where the next leaf's key differs.
        ``_flat_leaves`` sets it from the children's sizes when it reads every leaf."""
        keys = self.keys
        return [*compress(count(1), map(ne, keys, islice(keys, 1, None))), len(keys)]

    @cached_property
    def run_starts(self) -> list[int]:
        """Where each top-level child's run of leaves begins (``leaf_runs``)."""
        return [0, *self.run_ends[:-1]]

    def leaves(self) -> Iterator[BudgetLeaf]:
        return zip(self.tokens, self.policies, self.created, self.named, strict=True)

    def child(self, key: str, leaf: int) -> tuple[int, list[str]]:
        """Top-level conversation child ``key`` of JAATO's budget, which holds leaf ``leaf``:
        its tokens (its leaves') and every message it names."""
        if self.leaf_children:
            return self.tokens[leaf], list(self.named[leaf])
        if self.leaf_runs:
            run = bisect_right(self.run_ends, leaf)
            start, end = self.run_starts[run], self.run_ends[run]
            # In the order of the walk below, which meets a container's leaves last first.
            if self.in_order:  # a leaf names one message
                named = self.flat[start:end]
                named.reverse()
            else:
                named = list(chain.from_iterable(reversed(self.named[start:end])))
            return sum(self.tokens[start:end]), named
        node = self.conversation.children[key]
        if not node.children:  # a session's budget: the message's leaf
            if not node.message_ids:
                return 0, []
            return max(0, int(node.tokens)), list(node.message_ids)
        total, every = 0, []
        stack = [node]
        while stack:
            node = stack.pop()
            if node.children:
                stack.extend(node.children.values())
            elif node.message_ids:
                total += max(0, int(node.tokens))
                every.extend(node.message_ids)
        return total, every


def read_budget(budget: Any, history: ForeignHistory | None = None) -> BudgetReading:
    """One pass over JAATO's budget (see ``BudgetReading``): a session's conversation is a
    leaf per message, so each field of every leaf is read in one loop at C speed
    (``_flat_leaves``), and any other tree a leaf at a time. With the ``history`` read beside
    it, whether its leaves name that history's messages in order (``in_order``)."""
    entries: dict[InstructionSource, SourceEntry] = {}
    reading = BudgetReading(construct(InstructionBudget), copied=False)
    for jaato_source, entry in budget.entries.items():
        source = _SOURCES[jaato_source.value]
        if source is not InstructionSource.CONVERSATION:
            entries[source] = _engine_entry(entry)
            continue
        reading.conversation = entry
        # Tokens in a leaf naming no message (or in a conversation without children).
        unnamed = not entry.children and bool(entry.tokens) and not entry.message_ids
        flat = _flat_leaves(entry, reading)
        if flat is None:
            flat = _tree_leaves(entry, reading)
        if unnamed or flat:
            entries[source] = _engine_entry(entry)
            reading.copied = True
        else:
            entries[source] = _new_entry(
                {
                    "source": source,
                    "tokens": 0,
                    "gc_policy": _POLICIES[entry.gc_policy.value],
                    "label": entry.label,
                    "children": {},
                    "metadata": {},
                    "created_at": entry.created_at,
                    "message_ids": [],
                }
            )
    reading.budget = construct(
        InstructionBudget,
        session_id=budget.session_id or "",
        agent_id=budget.agent_id or "main",
        agent_type=budget.agent_type,
        context_limit=int(budget.context_limit),
        entries=entries,
    )
    named = reading.named
    reading.flat = flat_ids = joined(named)
    if (
        history is not None
        and not reading.copied
        # Every leaf read names a message: as many ids as leaves is one id a leaf.
        and len(flat_ids) == len(named)
        and flat_ids == history.ids
    ):
        positions = history.positions()
        if positions is not None:
            reading.in_order, reading._owner = True, positions
    return reading


def _tree_leaves(entry: Any, reading: BudgetReading) -> bool:
    """``read_budget``'s loop for any conversation tree, a leaf at a time, leaves in the
    order of a walk from each top-level child (a container's last child first). Whether a
    leaf holds tokens naming no message."""
    tokens, policies, created, named = (
        reading.tokens,
        reading.policies,
        reading.created,
        reading.named,
    )
    unnamed = False
    policy_of: dict[Any, GCPolicy] = {}  # JAATO's policies as the engine's, by member
    for key, child in entry.children.items():
        if child.children:
            reading.leaf_children = False
            stack, nodes = [child], []
            while stack:
                node = stack.pop()
                if node.children:
                    stack.extend(node.children.values())
                else:
                    nodes.append(node)
        else:  # a session's budget: the child is the message's leaf
            nodes = [child]
        for node in nodes:
            ids = node.message_ids
            if not ids:
                unnamed = unnamed or bool(node.tokens)
                continue
            count = node.tokens
            tokens.append(count if type(count) is int and count > 0 else max(0, int(count)))
            jaato_policy = node.gc_policy
            policy = policy_of.get(jaato_policy)
            if policy is None:
                policy = policy_of[jaato_policy] = _POLICIES[jaato_policy.value]
            policies.append(policy)
            created.append(node.created_at)
            named.append(ids)
            reading.keys.append(key)
    return unnamed


_CHILDREN = attrgetter("children")
_NAMES = attrgetter("message_ids")
_TOKENS = attrgetter("tokens")
_POLICY = attrgetter("gc_policy")
_CREATED = attrgetter("created_at")
# An enum member's own attribute: ``value`` is a property, run a member at a time, and
# hashing a member of JAATO's enum runs Python code; its value is a plain string.
_VALUE = attrgetter("_value_")


def _flat_leaves(entry: Any, reading: BudgetReading) -> bool | None:
    """``read_budget``'s loop for a conversation whose children are all leaves (a session's
    budget: a child per message) or all containers of leaves (a budget JAATO restored from a
    file: a container per turn), at C speed, a field at a time, leaves in the tree's order;
    None, reading nothing, for any other. Else whether a leaf holds tokens naming no message.
    A leaf of a container is owned by the container's key, as ``apply_gc_removal_list``
    removes top-level children only."""
    children = list(entry.children.values())
    keys = list(entry.children.keys())
    groups = list(map(_CHILDREN, children))
    sizes = None  # each child's count of leaves, when children are containers
    if any(groups):
        if not all(groups):
            return None
        children = list(chain.from_iterable(map(dict.values, groups)))
        if any(map(_CHILDREN, children)):
            return None
        reading.leaf_children, reading.leaf_runs = False, True
        sizes = list(map(len, groups))
    names = list(map(_NAMES, children))
    counts = list(map(_TOKENS, children))
    unnamed, every = False, all(names)
    if sizes is not None and every:
        # Every leaf read: each child's run ends where its leaves do, and the children's keys
        # name the runs (a key per leaf only when asked for: ``BudgetReading.keys``).
        reading.run_ends = list(accumulate(sizes))
        reading.run_keys, reading._keys, keys = keys, None, []
    elif sizes is not None:
        keys = list(chain.from_iterable(map(repeat, keys, sizes)))
    if not every:  # leaves naming no message are not read
        unnamed = any(compress(counts, map(not_, names)))
        children = list(compress(children, names))
        keys = list(compress(keys, names))
        names, counts = list(compress(names, names)), list(compress(counts, names))
    if children and not (set(map(type, counts)) == {int} and min(counts) >= 0):
        counts = [max(0, int(c)) for c in counts]
    reading.tokens += counts
    reading.policies += map(_POLICIES.__getitem__, map(_VALUE, map(_POLICY, children)))
    reading.created += map(_CREATED, children)
    reading.named += names
    if keys:
        reading.keys.extend(keys)
    return unnamed


def _engine_entry(entry: Any) -> SourceEntry:
    children = entry.children
    return _new_entry(
        {
            "source": _SOURCES[entry.source.value],
            "tokens": max(0, int(entry.tokens)),
            "gc_policy": _POLICIES[entry.gc_policy.value],
            "label": entry.label,
            "children": {k: _engine_entry(c) for k, c in children.items()} if children else {},
            "metadata": dict(entry.metadata) if entry.metadata else {},
            "created_at": entry.created_at,
            "message_ids": list(entry.message_ids) if entry.message_ids else [],
        }
    )
