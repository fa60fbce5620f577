"""The engine's strategies as plugins JAATO loads and runs, under names of their own.

JAATO finds GC plugins through the ``jaato.gc_plugins`` entry points and calls them with its
own objects: ``jaato.Message`` histories, its ``GCConfig``, its ``InstructionBudget`` and its
``GCTriggerReason``. Each class here is one strategy (``StrategySpec.jaato_plugin`` names it,
``gcengine_budget`` for instance, never one of JAATO's own names), and is the one place the
engine meets JAATO's types: a call converts JAATO's history, policy and budget into the
engine's model, runs the strategy, and answers with JAATO's ``GCResult`` and
``GCRemovalItem``. Kept messages are the very objects JAATO gave; summaries and notices are
made by JAATO's own ``create_summary_message`` and ``create_gc_notification_message``; every
removal names the budget child JAATO keys the removed message by, so JAATO's
``apply_gc_removal_list`` keeps its budget in step with the history.

JAATO is imported only when JAATO calls a plugin (it is never a dependency of the engine),
and nothing else in the engine imports it.
"""

from __future__ import annotations

import base64
import importlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from operator import attrgetter, is_, not_
from typing import Any, ClassVar

from gcengine._fast import construct, cyclic_gc_paused, entry_maker
from gcengine.budget import GCPolicy, InstructionBudget, InstructionSource, SourceEntry
from gcengine.config import GCConfig
from gcengine.conversation import ConversationIndex
from gcengine.gc.plan import BudgetLeaf, index_by_id
from gcengine.gc.strategy import Strategy
from gcengine.gc.types import GCRemovalItem, GCResult, GCTriggerReason
from gcengine.messages import (
    FunctionCall,
    FunctionResponse,
    InlineData,
    Message,
    MessageKind,
    Part,
    PartType,
    Role,
    turn_layout,
)
from gcengine.running.jaato_seen import LastRead, LeafFigures, Seen
from gcengine.strategies import STRATEGY_SPECS
from gcengine.strategies.common import CommonKeys
from gcengine.strategies.keys import checked, declared_keys
from gcengine.strategies.spec import StrategySpec
from gcengine.tokens import ApproxCounter, TokenCounter

# JAATO's own estimate (characters / 4), so the figures a plugin reports read alike to JAATO's
# and to the budget JAATO builds with the same estimate.
_COUNTER: TokenCounter = ApproxCounter()

# The reasons JAATO does not have: both mean "usage passed the target", which JAATO reports
# as a threshold collection.
_AS_THRESHOLD = frozenset({GCTriggerReason.CONTINUOUS, GCTriggerReason.INCREMENTAL})

# JAATO's part fields the engine carries without reading, and the opaque kind each becomes.
_OPAQUE_FIELDS = ("executable_code", "code_execution_result")


@dataclass(frozen=True)
class _Jaato:
    """The JAATO names a plugin needs, imported when JAATO first calls one."""

    GCResult: Any
    GCRemovalItem: Any
    GCTriggerReason: Any
    InstructionSource: Any
    Message: Any
    Part: Any
    Role: Any
    create_summary_message: Any
    create_gc_notification_message: Any
    media_pressure_reason: Any


def _jaato() -> _Jaato:
    """JAATO's types and helpers (``importlib`` caches the modules: cheap after the first)."""
    gc = importlib.import_module("shared.plugins.gc")
    budget = importlib.import_module("shared.instruction_budget")
    types = importlib.import_module("jaato_sdk.plugins.model_provider.types")
    return _Jaato(
        GCResult=gc.GCResult,
        GCRemovalItem=gc.GCRemovalItem,
        GCTriggerReason=gc.GCTriggerReason,
        InstructionSource=budget.InstructionSource,
        Message=types.Message,
        Part=types.Part,
        Role=types.Role,
        create_summary_message=gc.create_summary_message,
        create_gc_notification_message=gc.create_gc_notification_message,
        media_pressure_reason=gc.media_pressure_reason,
    )


# --- JAATO's objects into the engine's model ------------------------------------------------


# Makers taking every field, for the loops that convert a whole history and budget (the
# conversion is most of what a plugin costs JAATO: a 10,000-turn history has 40,000 messages).
_new_message = entry_maker(Message)
_new_part = entry_maker(Part)
_new_call = entry_maker(FunctionCall)
_new_entry = entry_maker(SourceEntry)
_ROLES = {role.value: role for role in Role}
_SOURCES = {source.value: source for source in InstructionSource}
_POLICIES = {policy.value: policy for policy in GCPolicy}


def _text_part(kind: PartType, text: str) -> Part:
    return _new_part(
        {
            "type": kind,
            "text": text,
            "function_call": None,
            "function_response": None,
            "inline_data": None,
            "opaque": None,
            "extra": {},
        }
    )


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
        return Part.from_function_response(
            construct(
                FunctionResponse,
                call_id=response.call_id,
                name=response.name or "",
                result=response.result,
                is_error=bool(response.is_error),
                extra=extra,
            )
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


def engine_message(message: Any) -> Message:
    """One JAATO ``Message`` as the engine's, under the same id."""
    parts = [p for p in map(engine_part, message.parts or ()) if p is not None]
    return _new_message(
        {
            "role": _ROLES[message.role.value],
            "parts": parts,
            "message_id": message.message_id,
            "kind": MessageKind.CHAT,
            "turn_index": None,
            "metadata": {},
        }
    )


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
    children only: ``owner``, the top-level conversation child naming each message id (the
    first, if several do), and ``conversation``, JAATO's own entry, read again only for the
    children a collection touches. Parallel lists and one dict of ids, no container per leaf:
    a session's budget has a leaf per message, and the cycle collector (left running in
    JAATO's process) walks every container made."""

    budget: InstructionBudget
    copied: bool
    tokens: list[int] = field(default_factory=list)
    policies: list[GCPolicy] = field(default_factory=list)
    created: list[float | None] = field(default_factory=list)
    named: list[Sequence[str]] = field(default_factory=list)
    owner: dict[str, str] = field(default_factory=dict)
    conversation: Any = None

    def leaves(self) -> Iterator[BudgetLeaf]:
        return zip(self.tokens, self.policies, self.created, self.named, strict=True)

    def child(self, key: str) -> tuple[int, list[str]]:
        """Top-level conversation child ``key`` of JAATO's budget: its tokens (its leaves')
        and every message it names."""
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


def read_budget(budget: Any) -> BudgetReading:
    """One pass over JAATO's budget (see ``BudgetReading``): a session's conversation is a
    leaf per message, so the loop reads each leaf's fields once, straight into the lists."""
    entries: dict[InstructionSource, SourceEntry] = {}
    reading = BudgetReading(construct(InstructionBudget), copied=False)
    tokens, policies, created, named = (
        reading.tokens,
        reading.policies,
        reading.created,
        reading.named,
    )
    owner = reading.owner
    policy_of: dict[Any, GCPolicy] = {}  # JAATO's policies as the engine's, by member
    for jaato_source, entry in budget.entries.items():
        source = _SOURCES[jaato_source.value]
        if source is not InstructionSource.CONVERSATION:
            entries[source] = _engine_entry(entry)
            continue
        reading.conversation = entry
        # Tokens in a leaf naming no message (or in a conversation without children).
        unnamed = not entry.children and bool(entry.tokens) and not entry.message_ids
        flat = _flat_leaves(entry, reading)
        if flat is not None:
            unnamed = unnamed or flat
        for key, child in () if flat is not None else entry.children.items():
            if child.children:
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
                if len(ids) == 1:
                    owner.setdefault(ids[0], key)
                else:
                    for message_id in ids:
                        owner.setdefault(message_id, key)
        if unnamed:
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
    return reading


_CHILDREN = attrgetter("children")
_NAMES = attrgetter("message_ids")
_TOKENS = attrgetter("tokens")
_POLICY = attrgetter("gc_policy")
_CREATED = attrgetter("created_at")


def _flat_leaves(entry: Any, reading: BudgetReading) -> bool | None:
    """``read_budget``'s loop for a conversation whose children are all leaves (a session's
    budget: a child per message), at C speed, a field at a time; None, reading nothing, for
    any other. Else whether a leaf holds tokens naming no message."""
    children = list(entry.children.values())
    if any(map(_CHILDREN, children)):
        return None
    names = list(map(_NAMES, children))
    counts = list(map(_TOKENS, children))
    unnamed = any(compress(counts, map(not_, names)))
    if not all(names):  # leaves naming no message are not read
        children = list(compress(children, names))
        keys = list(compress(entry.children.keys(), names))
        names, counts = list(compress(names, names)), list(compress(counts, names))
    else:
        keys = list(entry.children.keys())
    if children and not (set(map(type, counts)) == {int} and min(counts) >= 0):
        counts = [max(0, int(c)) for c in counts]
    jaato_policies = list(map(_POLICY, children))
    # By the members' identity: hashing a member of JAATO's enum runs Python code.
    policy_of = {id(p): _POLICIES[p.value] for p in {id(p): p for p in jaato_policies}.values()}
    reading.tokens += counts
    reading.policies += map(policy_of.__getitem__, map(id, jaato_policies))
    reading.created += map(_CREATED, children)
    reading.named += names
    # Each id's first child owns it: the pairs in reverse, so the first is written last.
    sizes = list(map(len, names))
    ids = list(chain.from_iterable(names))
    owners = list(chain.from_iterable(map(repeat, keys, sizes)))
    reading.owner.update(zip(reversed(ids), reversed(owners), strict=True))
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


# The JAATO ``GCConfig`` fields the engine's policy has under the same name.
_SHARED_FIELDS = (
    "threshold_percent",
    "target_percent",
    "max_turns",
    "auto_trigger",
    "check_before_send",
    "preserve_recent_turns",
)
_RULES = next(spec for name, _, spec in declared_keys(CommonKeys) if name == "rules")

# Plugin options (JAATO's ``initialize`` config, gc.json's plugin_config merged in) that are
# policy keys in the engine.
_OPTION_KEYS = (
    "notification_template",
    "noop_notification_template",
    "summarize_middle_turns",
    "max_summary_tokens",
)


def engine_config(spec: StrategySpec, config: Any, options: Mapping[str, Any]) -> GCConfig:
    """JAATO's ``GCConfig`` (and the plugin's options) as the engine's policy for ``spec``.

    Its continuous mode is JAATO's: no pressure (0 or None). Notices follow the plugin's
    ``notify_on_gc`` option, off by default as in JAATO's plugins. The media fields are JAATO's
    own trigger (``should_collect`` asks JAATO's ``media_pressure_reason``). The config means
    what JAATO says it means: JAATO's plugins' rules, unless the plugin's options (gc.json's
    ``plugin_config``) say ``"rules": "engine"``."""
    rules = {**(config.plugin_config or {}), **options}.get("rules", "jaato")
    values: dict[str, Any] = {
        "plugin": spec.name,
        "notify_on_gc": False,
        "rules": checked("plugin_config.rules", rules, _RULES),
    }
    for name in _SHARED_FIELDS:
        values[name] = getattr(config, name)
    values["pressure_percent"] = config.pressure_percent or None
    values["pinned_turn_indices"] = list(config.pinned_turn_indices or ())
    values["plugin_config"] = {
        k: v for k, v in (config.plugin_config or {}).items() if not callable(v)
    }
    for key in _OPTION_KEYS:
        if options.get(key) is not None:
            values[key] = options[key]
    return GCConfig.model_validate(values)


# --- The engine's answers as JAATO's ---------------------------------------------------------


# Prefixes a removal's key that names no child of JAATO's budget, so that JAATO removes no
# child for it; JAATO clears the whole source for an empty or missing key.
_NOT_IN_BUDGET = "gcengine:"


def jaato_removals(
    removals: Sequence[GCRemovalItem], reading: BudgetReading | None, jaato: _Jaato
) -> list[Any]:
    """The engine's removal list as JAATO's. A conversation removal becomes one item per
    top-level child of JAATO's budget all of whose messages left the history (its key, its
    tokens), so applying the list removes exactly the children of what went. Messages no
    child names, or named by a child that keeps others, are reported under a key naming no
    child, which JAATO's budget is left alone for: never under no key, which would clear it.
    Without a budget, the engine's own keys stay."""
    conversation = InstructionSource.CONVERSATION
    gone = {i for item in removals if item.source is conversation for i in item.message_ids}
    items: list[Any] = []
    done: set[str] = set()
    for item in removals:
        source = jaato.InstructionSource(item.source.value)
        if item.source is not conversation or reading is None:
            items.append(
                jaato.GCRemovalItem(
                    source, item.child_key, item.tokens_freed, str(item.reason), item.message_ids
                )
            )
            continue
        touched: dict[str, None] = {}
        unmatched: list[str] = []
        for message_id in item.message_ids:
            key = reading.owner.get(message_id)
            if key is None:
                unmatched.append(message_id)
            else:
                touched[key] = None
        for key in touched:
            if key in done:
                continue
            tokens, named = reading.child(key)
            if all(i in gone for i in named):
                done.add(key)
                items.append(jaato.GCRemovalItem(source, key, tokens, str(item.reason), named))
            else:
                unmatched.extend(i for i in named if i in item.message_ids)
        if unmatched:
            key = f"{_NOT_IN_BUDGET}{item.child_key or ''}"
            items.append(jaato.GCRemovalItem(source, key, 0, str(item.reason), unmatched))
    return items


def jaato_history(
    new_history: Sequence[Message], copies: Sequence[Message], history: Sequence[Any], jaato: _Jaato
) -> list[Any]:
    """The engine's new history as JAATO's: kept messages are the objects JAATO gave
    (``history``, whose engine copies are ``copies``, position by position); a summary or
    notice the engine wrote is made by JAATO's own helper.

    A kept message is found by the identity of its copy, or, when the engine kept it as a new
    copy (a closing answer it marks as one while taking the tool work before it), as the next
    message of JAATO's history under its id: a collection keeps messages in their order, so
    the walk never goes back and repeated ids cannot swap them."""
    at = {id(copy): position for position, copy in enumerate(copies)}
    kept = list(map(at.get, map(id, new_history)))
    if None not in kept:  # only messages kept as they were: every one is JAATO's
        return list(map(history.__getitem__, kept))  # type: ignore[arg-type]
    answer: list[Any] = []
    after = 0  # the position in ``history`` after the last message kept
    for message in new_history:
        position = at.get(id(message))
        if position is None and message.kind is MessageKind.CHAT:
            wanted = message.message_id
            position = next(
                (p for p in range(after, len(copies)) if copies[p].message_id == wanted), None
            )
        if position is not None:
            answer.append(history[position])
            after = position + 1
        elif message.kind is MessageKind.SUMMARY:
            answer.append(jaato.create_summary_message(_summary_body(message.text)))
        elif message.kind is MessageKind.NOTICE:
            answer.append(jaato.create_gc_notification_message(_notice_body(message.text)))
        else:  # the engine only ever keeps messages, inserts summaries and notices
            raise AssertionError(f"a message the engine did not keep nor write: {message}")
    return answer


_SUMMARY_HEAD = "[Context Summary - Previous conversation compressed]\n"
_SUMMARY_TAIL = "\n[End Context Summary]"


def _summary_body(text: str) -> str:
    """The summary inside the engine's markers, which JAATO's helper writes around it again."""
    return text.removeprefix(_SUMMARY_HEAD).removesuffix(_SUMMARY_TAIL)


def _notice_body(text: str) -> str:
    return text.removeprefix("[System: ").removesuffix("]")


def jaato_result(
    result: GCResult, name: str, reason: Any, removal_list: list[Any], jaato: _Jaato
) -> Any:
    """The engine's result as JAATO's ``GCResult``, named as the plugin JAATO loaded and with
    the reason JAATO gave (which may be one the engine does not have: media pressure)."""
    return jaato.GCResult(
        success=result.success,
        items_collected=result.items_collected,
        tokens_before=result.tokens_before,
        tokens_after=result.tokens_after,
        plugin_name=name,
        trigger_reason=reason,
        notification=result.notification,
        details=dict(result.details),
        error=result.error,
        removal_list=removal_list,
    )


# --- The plugins ------------------------------------------------------------------------------


class JaatoPlugin:
    """One engine strategy as a JAATO GC plugin (JAATO's ``GCPlugin`` protocol)."""

    spec: ClassVar[StrategySpec]

    def __init__(self) -> None:
        self._strategy: Strategy = self.spec.plugin()
        self._options: dict[str, Any] = {}
        # The engine's copy of each message of the last history collected, by the JAATO
        # object's identity, with what it was made from (see ``_engine_history``).
        self._converted: dict[int, tuple[Any, str, Any, tuple[Any, ...], Message]] = {}
        # What the last collection read, to take over what has not changed since.
        self._last: LastRead | None = None

    @property
    def name(self) -> str:
        """The plugin's name in JAATO: the strategy's own, never one of JAATO's."""
        return self.spec.jaato_plugin

    def initialize(self, config: Mapping[str, Any] | None = None) -> None:
        self._options = dict(config or {})
        self._strategy.initialize(self._options)

    def shutdown(self) -> None:
        self._options = {}
        self._converted = {}
        self._last = None
        self._strategy.shutdown()

    def reset_for_next_session(self) -> None:
        """JAATO asks plugins shared between sessions to forget per-session state: the
        messages remembered from the last collection."""
        self._converted = {}
        self._last = None

    def should_collect(self, context_usage: Mapping[str, Any], config: Any) -> tuple[bool, Any]:
        """JAATO's media pressure first (its own check, in bytes), then the strategy's
        threshold, continuous and turn-limit rules, answered with JAATO's reasons."""
        jaato = _jaato()
        if config.auto_trigger:
            media = jaato.media_pressure_reason(context_usage, config)
            if media is not None:
                return True, media
        policy = engine_config(self.spec, config, self._options)
        collect, reason = self._strategy.should_collect(context_usage, policy)
        if reason is None:
            return collect, None
        value = GCTriggerReason.THRESHOLD if reason in _AS_THRESHOLD else reason
        return collect, jaato.GCTriggerReason(value.value)

    def collect(
        self,
        history: list[Any],
        context_usage: Mapping[str, Any],
        config: Any,
        reason: Any,
        budget: Any = None,
    ) -> tuple[list[Any], Any]:
        """JAATO's ``collect``: the strategy run on JAATO's history and budget, answered in
        JAATO's objects. The given history and budget are never changed."""
        if self._calls_back(config):
            return self._collect(history, context_usage, config, reason, budget)
        with cyclic_gc_paused():
            return self._collect(history, context_usage, config, reason, budget)

    def _calls_back(self, config: Any) -> bool:
        """Whether a collection may call code of JAATO's (a ``summarizer`` callable, say).

        Otherwise ``collect`` runs only the engine's own code, and pauses Python's cycle
        collector while it does (``cyclic_gc_paused``): converting a history makes about ten
        containers a message, and each time the collector walked its oldest generation it
        walked JAATO's whole heap, which made a first collection several times slower. The
        pause is the call's alone: it ends, in ``finally``, when ``collect`` returns or
        raises, and leaves the collector as JAATO had it (off stays off; overlapping calls
        keep it off until the last ends; objects JAATO froze stay frozen). What the engine
        makes holds no cycle, so reference counting frees it; what another thread leaves in
        a cycle meanwhile waits for the next full collection. Code of JAATO's may take as
        long as it likes (an LLM call), so a collection that may call some runs with the
        collector as JAATO left it."""
        return any(map(callable, self._options.values())) or any(
            map(callable, (config.plugin_config or {}).values())
        )

    def _engine_history(self, history: Sequence[Any]) -> list[Message]:
        """The engine's copy of JAATO's history. JAATO hands a plugin the same message objects
        collection after collection (a session's history, less what the last one removed, plus
        the new turns), so a message converted last time is reused while it is the same
        object with the same id, role and part objects; JAATO replaces a part to change it
        (``dataclasses.replace``, as its media eviction does), never edits one in place. Only
        the last history's messages are remembered. A message reused makes nothing new. The
        messages the history begins with that the last one began with, unchanged, are taken
        over at once (``Seen``: compared a field at a time), as when JAATO only appended."""
        last, known = self._last, self._converted
        seen = Seen.of(history)
        same = 0
        if last is not None and last.seen is not None and seen is not None:
            same = last.seen.unchanged_head(seen)
        messages = last.messages[:same] if last is not None else []
        for message in history[same:]:
            hit = known.get(id(message))
            parts = message.parts or ()
            if (
                hit is None
                or hit[0] is not message
                or hit[1] != message.message_id
                or hit[2] is not message.role
                or len(hit[3]) != len(parts)
                or not all(map(is_, hit[3], parts))
            ):
                hit = (
                    message,
                    message.message_id,
                    message.role,
                    tuple(parts),
                    engine_message(message),
                )
                known[id(message)] = hit
            messages.append(hit[4])
        if len(known) > len(messages):  # forget what left the history
            present = set(map(id, history))
            for stale in [k for k in known if k not in present]:
                del known[stale]
        self._last = LastRead(seen=seen, messages=messages)
        return messages

    def _collect(
        self,
        history: list[Any],
        context_usage: Mapping[str, Any],
        config: Any,
        reason: Any,
        budget: Any,
    ) -> tuple[list[Any], Any]:
        jaato = _jaato()
        policy = engine_config(self.spec, config, self._options)
        last = self._last
        messages = self._engine_history(history)
        reading = read_budget(budget) if budget is not None else None
        index = None
        if reading is not None and not reading.copied:
            index = self._index(messages, reading, last)
        try:
            engine_reason = GCTriggerReason(reason.value)
        except ValueError:  # media pressure: the engine collects as for a threshold
            engine_reason = GCTriggerReason.THRESHOLD
        new_history, result = self._strategy.collect(
            messages,
            context_usage,
            policy,
            engine_reason,
            reading.budget if reading is not None else None,
            counter=_COUNTER,
            conversation=index,
        )
        if not result.success:
            return list(history), jaato_result(result, self.name, reason, [], jaato)
        removals = jaato_removals(result.removal_list, reading, jaato)
        return jaato_history(new_history, messages, history, jaato), jaato_result(
            result, self.name, reason, removals, jaato
        )

    def _index(
        self, messages: list[Message], reading: BudgetReading, last: LastRead | None
    ) -> ConversationIndex:
        """The engine's index of the history from JAATO's budget: the last collection's when
        the history is the very same messages and the budget's leaves read the same (a history
        collected again before JAATO changed anything), else made again (on the last layout,
        when only the budget changed)."""
        leaves = LeafFigures.of(reading.tokens, reading.policies, reading.created, reading.named)
        now = self._last
        assert now is not None  # ``_engine_history`` has just read the history
        previous = last.index if last is not None else None
        if previous is not None and not (
            len(now.messages) == len(previous.messages)
            and all(map(is_, now.messages, previous.messages))
        ):
            previous = None
        if previous is not None and last is not None and last.leaves == leaves:
            index = previous
        else:
            # The same messages lay out alike: a budget JAATO rebuilt with new times (as it
            # does after each response) still reuses the layout.
            layout = previous.layout if previous is not None else turn_layout(messages)
            index, _ = index_by_id(messages, layout, reading.leaves(), _COUNTER, budgeted=True)
        now.index, now.leaves = index, leaves
        return index


def _plugin_class(spec: StrategySpec) -> type[JaatoPlugin]:
    name = spec.plugin.__name__.removesuffix("Strategy") + "JaatoPlugin"
    return type(name, (JaatoPlugin,), {"spec": spec, "__doc__": f"{spec.label}, in JAATO."})


JAATO_PLUGINS: dict[str, type[JaatoPlugin]] = {
    spec.jaato_plugin: _plugin_class(spec) for spec in STRATEGY_SPECS
}
"""Each strategy's JAATO plugin class, by its name in JAATO."""


def __getattr__(name: str) -> type[JaatoPlugin]:
    """Each plugin class by its own name (``BudgetJaatoPlugin``), which the entry points in
    ``pyproject.toml`` name: made from the specs, so a new strategy needs no line here."""
    for plugin in JAATO_PLUGINS.values():
        if plugin.__name__ == name:
            return plugin
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
