"""The engine's strategies as plugins JAATO loads and runs, under names of their own.

JAATO finds GC plugins through the ``jaato.gc_plugins`` entry points and calls them with its
own objects: ``jaato.Message`` histories, its ``GCConfig``, its ``InstructionBudget`` and its
``GCTriggerReason``. Each class here is one strategy (``StrategySpec.jaato_plugin`` names it,
``gcengine_budget`` for instance, never one of JAATO's own names). This module, with
``jaato_reading`` and ``jaato_seen`` beside it, is the one place the engine meets JAATO's
types: a call converts JAATO's history, policy and budget into the engine's model
(``jaato_reading``), runs the strategy, and answers with JAATO's ``GCResult`` and
``GCRemovalItem``. Kept messages are the very objects JAATO gave; summaries and notices are
made by JAATO's own ``create_summary_message`` and ``create_gc_notification_message``; every
removal names the budget child JAATO keys the removed message by, so JAATO's
``apply_gc_removal_list`` keeps its budget in step with the history.

JAATO is imported only when JAATO calls a plugin (it is never a dependency of the engine),
and nothing else in the engine imports it.
"""

from __future__ import annotations

import importlib
from bisect import bisect_right
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain, islice, repeat
from operator import attrgetter, is_, lt, sub
from typing import Any, ClassVar, cast

from gcengine._fast import Revision, cyclic_gc_paused
from gcengine.budget import InstructionSource
from gcengine.config import GCConfig
from gcengine.conversation import ConversationIndex
from gcengine.foreign import ForeignHistory
from gcengine.gc.plan import index_by_id, index_in_order
from gcengine.gc.strategy import Strategy
from gcengine.gc.types import GCRemovalItem, GCResult, GCTriggerReason
from gcengine.messages import Message, MessageKind, read_new
from gcengine.running.jaato_reading import (
    BudgetReading,
    engine_messages,
    foreign_history,
    read_budget,
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
    if reading is not None and reading.in_order and (reading.leaf_children or reading.leaf_runs):
        batch = _message_removals if reading.leaf_children else _run_removals
        made = batch(removals, reading, jaato)
        if made is not None:
            return made
    conversation = InstructionSource.CONVERSATION
    gone = {i for item in removals if item.source is conversation for i in item.message_ids}
    items: list[Any] = []
    done: set[str] = set()
    owner, keys = (reading.owner, reading.keys) if reading is not None else ({}, [])
    # JAATO's member for each source, looked up once: a collection may remove thousands of items.
    sources = {s: jaato.InstructionSource(s.value) for s in {item.source for item in removals}}
    for item in removals:
        source, reason = sources[item.source], str(item.reason)
        if item.source is not conversation or reading is None:
            items.append(
                jaato.GCRemovalItem(
                    source, item.child_key, item.tokens_freed, reason, item.message_ids
                )
            )
            continue
        touched: dict[str, int] = {}  # each child touched, with a leaf of it
        unmatched: list[str] = []
        for message_id in item.message_ids:
            leaf = owner.get(message_id)
            if leaf is None:
                unmatched.append(message_id)
            else:
                touched.setdefault(keys[leaf], leaf)
        for key, leaf in touched.items():
            if key in done:
                continue
            tokens, named = reading.child(key, leaf)
            if gone.issuperset(named):
                done.add(key)
                items.append(jaato.GCRemovalItem(source, key, tokens, reason, named))
            else:
                unmatched.extend(i for i in named if i in item.message_ids)
        if unmatched:
            key = f"{_NOT_IN_BUDGET}{item.child_key or ''}"
            items.append(jaato.GCRemovalItem(source, key, 0, reason, unmatched))
    return items


_SOURCE = attrgetter("source")
_MESSAGE_IDS = attrgetter("message_ids")
_REASON = attrgetter("reason")


def _message_removals(
    removals: Sequence[GCRemovalItem], reading: BudgetReading, jaato: _Jaato
) -> list[Any] | None:
    """``jaato_removals`` for a budget of a leaf per message naming the history's messages in
    order (a session's): every removed message is a top-level child of its own, so the list
    is an item per message removed, in the removals' order, made in one batch rather than a
    few branches a message (a collection removes thousands). None, for the general way, when
    a removal is not of the conversation, or names a message twice or one no leaf names."""
    conversation = InstructionSource.CONVERSATION
    if not all(map(is_, map(_SOURCE, removals), repeat(conversation))):
        return None
    lists = list(map(_MESSAGE_IDS, removals))
    ids = list(chain.from_iterable(lists))
    found = list(map(reading.owner.get, ids))
    if None in found or len(set(ids)) != len(ids):
        return None
    leaves = cast(list[int], found)  # none is None, as just checked
    reasons = chain.from_iterable(map(repeat, map(str, map(_REASON, removals)), map(len, lists)))
    return list(
        map(
            jaato.GCRemovalItem,
            repeat(jaato.InstructionSource(conversation.value)),
            map(reading.keys.__getitem__, leaves),
            map(reading.tokens.__getitem__, leaves),
            reasons,
            map(list, map(reading.named.__getitem__, leaves)),
        )
    )


def _run_removals(
    removals: Sequence[GCRemovalItem], reading: BudgetReading, jaato: _Jaato
) -> list[Any] | None:
    """``jaato_removals`` for a budget of a container per turn whose leaves name the history's
    messages in order, one a leaf (a budget restored from a file): a message's leaf is its
    position, and its container the run of leaves holding it (``BudgetReading.run_ends``). Which
    runs went whole is found for all removals at once; the items are then made a removal at
    a time, in the general way's order (a run that went whole under the key of its first
    removal, the rest of each removal under a key naming no child), without looking each
    message up again. None, for the general way, when a removal is not of the conversation
    or names a message no leaf names."""
    conversation = InstructionSource.CONVERSATION
    if not all(map(is_, map(_SOURCE, removals), repeat(conversation))):
        return None
    lists = list(map(_MESSAGE_IDS, removals))
    found = list(map(reading.owner.get, chain.from_iterable(lists)))
    if None in found:
        return None
    leaves = cast(list[int], found)  # none is None, as just checked
    source = jaato.InstructionSource(conversation.value)
    sizes = list(map(len, lists))
    made = _within_runs(removals, sizes, leaves, reading, source, jaato.GCRemovalItem)
    if made is not None:
        return made
    starts, ends = reading.run_starts, reading.run_ends
    runs = list(map(bisect_right, repeat(ends), leaves))
    # The runs all of whose leaves went: as many of their leaves gone as they hold.
    gone = Counter(map(bisect_right, repeat(ends), set(leaves)))
    whole = {run for run, size in gone.items() if size == ends[run] - starts[run]}
    make = jaato.GCRemovalItem
    flat = reading.flat
    items: list[Any] = []
    done: set[int] = set()
    at, runs_at = iter(leaves), iter(runs)
    for item, size in zip(removals, sizes, strict=True):
        mine = list(islice(at, size))
        reason = str(item.reason)
        partly: list[int] = []
        for run in dict.fromkeys(islice(runs_at, size)):
            if run not in whole:
                partly.append(run)
            elif run not in done:
                done.add(run)
                items.append(_whole_run_item(make, source, reading, run, reason))
        if partly:
            taken = set(mine)
            unmatched = [
                flat[leaf]
                for run in partly
                for leaf in range(ends[run] - 1, starts[run] - 1, -1)
                if leaf in taken
            ]
            items.append(_unmatched_item(make, source, item, unmatched))
    return items


def _whole_run_item(make: Any, source: Any, reading: BudgetReading, run: int, reason: str) -> Any:
    """JAATO's removal item for a turn container (``run``) that went whole: under its key, its
    leaves' tokens, and the ids it names, last first as ``BudgetReading.child`` names them."""
    start, end = reading.run_starts[run], reading.run_ends[run]
    named = reading.flat[start:end]
    named.reverse()
    return make(source, reading.run_key(run), sum(reading.tokens[start:end]), reason, named)


def _unmatched_item(make: Any, source: Any, item: GCRemovalItem, unmatched: list[str]) -> Any:
    """JAATO's removal item for the ids a removal took from containers that keep others: under
    a key naming no child, freeing nothing JAATO's budget would count twice."""
    key = f"{_NOT_IN_BUDGET}{item.child_key or ''}"
    return make(source, key, 0, str(item.reason), unmatched)


def _within_runs(
    removals: Sequence[GCRemovalItem],
    sizes: list[int],
    leaves: list[int],
    reading: BudgetReading,
    source: Any,
    make: Any,
) -> list[Any] | None:
    """``_run_removals`` when the removals take the leaves in the tree's order, each removal
    leaves of one top-level child (a collection taking exchanges and whole turns of a budget
    with a container per turn): the removals of a child are then next to each other, so
    whether a child went whole, and which removal names it, is known without looking at any
    removal's leaves one by one. The same items, in the same order. None when the leaves
    (``leaves``, each removal's ``sizes`` of them in turn) are not in the tree's order, each
    once, or a removal has none or takes leaves of two children."""
    if not leaves or 0 in sizes or not all(map(lt, leaves, islice(leaves, 1, None))):
        return None
    starts, ends = reading.run_starts, reading.run_ends
    offsets = list(accumulate(sizes, initial=0))
    offsets.pop()  # where the leaves after the last removal would begin
    runs = list(map(bisect_right, repeat(ends), map(leaves.__getitem__, offsets)))
    lasts = map(leaves.__getitem__, map(sub, accumulate(sizes), repeat(1)))
    if not all(map(lt, lasts, map(ends.__getitem__, runs))):
        return None
    gone: dict[int, int] = {}  # each child's leaves taken
    for run, size in zip(runs, sizes, strict=True):
        gone[run] = gone.get(run, 0) + size
    flat = reading.flat
    items: list[Any] = []
    last = -1
    for item, run, at, size in zip(removals, runs, offsets, sizes, strict=True):
        start, end = starts[run], ends[run]
        if gone[run] != end - start:  # the child keeps leaves: under a key naming no child
            unmatched = list(map(flat.__getitem__, reversed(leaves[at : at + size])))
            items.append(_unmatched_item(make, source, item, unmatched))
        elif run != last:  # the child went whole: under its key, with its first removal
            items.append(_whole_run_item(make, source, reading, run, str(item.reason)))
        last = run
    return items


def jaato_history(new_history: Sequence[Any], jaato: _Jaato) -> list[Any]:
    """The engine's new history as JAATO's: a collection cuts it from JAATO's own objects (the
    history is a ``ForeignHistory``), so every message it kept is the very object JAATO gave;
    a summary or notice the engine wrote is made by JAATO's own helper."""
    return [
        _jaato_message(message, jaato) if isinstance(message, Message) else message
        for message in new_history
    ]


def _jaato_message(message: Message, jaato: _Jaato) -> Any:
    """A message the engine wrote, as JAATO's helper writes it."""
    if message.kind is MessageKind.SUMMARY:
        return jaato.create_summary_message(_summary_body(message.text))
    if message.kind is MessageKind.NOTICE:
        return jaato.create_gc_notification_message(_notice_body(message.text))
    # The engine only ever keeps messages, inserts summaries and notices.
    raise AssertionError(f"a message the engine did not keep nor write: {message}")


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
        # What the messages this plugin converts count their edits against.
        self._revision = Revision()

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

    def _history(self, history: Sequence[Any]) -> ForeignHistory:
        """JAATO's history as the engine reads it: what a collection reads of every message
        read in one pass (``foreign_history``), the engine's copy of a message made only when
        the strategy reads it (``_made``). The very history the last collection read (the
        same message objects, each with the same id, role and part objects: ``Seen``) is the
        one it read, with the copies made then."""
        last, known = self._last, self._converted
        if last is not None and last.seen is not None and last.seen.holds(history):
            self._last = LastRead(last.seen, last.messages, last.index, last.leaves)
            return last.messages
        seen = Seen.of(history)
        if known:  # forget what left the history
            present = set(map(id, history))
            for stale in [k for k in known if k not in present]:
                del known[stale]
        if seen is not None:
            ids, roles, counts, parts = seen.ids, seen.roles, seen.counts, seen.parts
        else:  # a message without a list of parts: read one by one, not taken over next time
            lists = [message.parts or () for message in history]
            ids = [message.message_id for message in history]
            roles = [message.role for message in history]
            counts, parts = list(map(len, lists)), list(chain.from_iterable(lists))
        messages = foreign_history(list(history), ids, roles, counts, parts, self._made)
        self._last = LastRead(seen=seen, messages=messages)
        return messages

    def _made(self, originals: list[Any]) -> list[Message]:
        """The engine's copies of JAATO's messages ``originals``. JAATO hands a plugin the
        same message objects collection after collection (a session's history, less what the
        last one removed, plus the new turns), so a copy made before is reused while its
        message is the same object with the same id, role and part objects; JAATO replaces a
        part to change it (``dataclasses.replace``, as its media eviction does), never edits
        one in place. Copies of the messages that left the history are forgotten
        (``_history``); those not made before are made together (``engine_messages``)."""
        known = self._converted
        copies: list[Message | None] = [None] * len(originals)
        fresh: list[Any] = []
        for at, message in enumerate(originals):
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
                fresh.append(message)
            else:
                copies[at] = hit[4]
        made = engine_messages(fresh)
        for message, copy in zip(fresh, made, strict=True):
            known[id(message)] = (
                message,
                message.message_id,
                message.role,
                tuple(message.parts or ()),
                copy,
            )
        # The index of a history (``ConversationIndex``) notes what its messages count their
        # edits against: each copy is told so as it is made, not looked at one by one there.
        read_new(made, self._revision)
        converted = iter(made)
        return [next(converted) if copy is None else copy for copy in copies]

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
        messages = self._history(history)
        reading = read_budget(budget, messages) if budget is not None else None
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
        return jaato_history(new_history, jaato), jaato_result(
            result, self.name, reason, removals, jaato
        )

    def _index(
        self, messages: ForeignHistory, reading: BudgetReading, last: LastRead | None
    ) -> ConversationIndex:
        """The engine's index of the history from JAATO's budget: the last collection's when
        the history is the very same messages and the budget's leaves read the same (a history
        collected again before JAATO changed anything), else made again (on the last layout,
        when only the budget changed)."""
        leaves = LeafFigures.of(
            reading.tokens, reading.policies, reading.created, reading.named, reading.flat
        )
        now = self._last
        assert now is not None  # ``_history`` has just read the history
        previous = last.index if last is not None else None
        if previous is not None and previous.messages is not messages:
            previous = None  # not the history read last time (``_history``)
        if previous is not None and last is not None and last.leaves == leaves:
            index = previous
        else:
            # The same messages lay out alike: a budget JAATO rebuilt with new times (as it
            # does after each response) still reuses the layout.
            layout = previous.layout if previous is not None else messages.layout()
            # Every copy this plugin made counts its edits against its revision (``_made``):
            # the index need not read each for it.
            revisions = {self._revision: self._revision.edits}
            index, _ = index_in_order(
                messages,
                layout,
                reading.tokens,
                reading.policies,
                reading.created,
                reading.named,
                revisions,
                in_order=reading.in_order,
            ) or index_by_id(messages, layout, reading.leaves(), _COUNTER, budgeted=True)
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
