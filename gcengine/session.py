"""A loaded agent session, and the budget the engine builds for it.

Whatever the file format, a session ends up as one ``Session``: the history, the budget, what
the file recorded about tokens, and everything else the file carried (kept so that writing it
back loses nothing).

Budget layout built from a history (``build_budget``)::

    conversation (PARTIAL)
      turn_<index>               one container per turn, keyed by its stable index
        <message_id>             one leaf per message, holding that message's id
    system                       one LOCKED child per system instruction the file carried
    thinking                     the reasoning tokens the file recorded (not in the context)

Message policies follow how JAATO fills its budget, without its two mistakes (the first user
message of the session is locked even after a notice is put before it; every complex turn keeps
its closing answer, not only the last turn):

* the session's original request (first user message of the conversation): LOCKED;
* the closing text answer of a turn that used tools over several model messages: PRESERVABLE;
* summaries written by a collector: PRESERVABLE;
* a clarification question or answer, as the file recorded it (``recorded_clarifications``):
  PRESERVABLE, JAATO's default for both; everything else: EPHEMERAL.

A message's figure is the one the file recorded for it when that recording covers everything
the message sends, else the counter's (JAATO's own figures leave out function calls and media).
Each leaf says which in ``metadata["counted_by"]``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from itertools import chain, compress, count, repeat
from operator import is_, is_not, itemgetter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, computed_field, field_serializer

from gcengine._fast import construct, entry_maker, set_fresh
from gcengine.budget import (
    DEFAULT_SOURCE_POLICIES,
    GCPolicy,
    InstructionBudget,
    InstructionSource,
    Revision,
    SourceEntry,
)
from gcengine.conversation import (
    ConversationIndex,
    Exchange,
    ExchangeGroup,
    Figure,
    FigureBasis,
    TrafficMember,
    history_layout,
    index_of,
    turn_exchange_figures,
    turn_exchanges,
    turn_key_of,
)
from gcengine.errors import CompactionNotFoundError
from gcengine.media import media_cost
from gcengine.messages import (
    FunctionCall,
    Message,
    MessageKind,
    PartType,
    Readings,
    Role,
    ToolPairProblem,
    Turn,
    TurnLayout,
    relaid_out,
    split_into_turns,
    tool_pair_problems,
    tool_traffic,
    turn_layout,
    turn_number,
)
from gcengine.tokens import (
    TokenCounter,
    TokenCounting,
    count_message,
    count_messages,
    counter_by_name,
    load_counter,
    media_of,
    token_counting,
)


class SourceFormat(StrEnum):
    JAATO = "jaato"
    JAATO_BUDGET_SNAPSHOT = "jaato_budget_snapshot"
    OPENAI_CHAT = "openai_chat"
    OPENAI_RESPONSES = "openai_responses"
    ANTHROPIC_MESSAGES = "anthropic_messages"
    CLAUDE_CODE = "claude_code"
    CODEX = "codex"
    OTEL_GENAI = "otel_genai"
    LANGFUSE = "langfuse"
    OPENHANDS = "openhands"
    SWE_AGENT = "swe_agent"


class ContextLimitOrigin(StrEnum):
    FILE = "file"
    MODEL = "model"
    DEFAULT = "default"
    OVERRIDE = "override"  # set by whoever asks "what if the window were this size?"


class SystemInstruction(BaseModel):
    """Text the model sees before the conversation (system or developer prompt)."""

    key: str
    label: str
    text: str


class TurnAccounting(BaseModel):
    """One turn's provider-reported usage, as JAATO records it: a record of what happened,
    never edited (frozen, so a long session's ten thousand of them can share their
    fields-sets)."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    prompt: int = Field(default=0, ge=0)
    output: int = Field(default=0, ge=0)
    total: int = Field(default=0, ge=0)
    start_time: str | None = None
    end_time: str | None = None
    duration_seconds: float | None = None
    function_calls: list[dict[str, Any]] = Field(default_factory=list)
    cache_read: int | None = None
    cache_creation: int | None = None
    thinking: int | None = None


_ACCOUNTING = TypeAdapter(list[TurnAccounting])


class InterruptedTurn(BaseModel):
    """A turn that was running when the session was saved (its tool calls never answered)."""

    model_config = ConfigDict(extra="allow", strict=True)

    agent_id: str | None = None
    pending_tool_calls: list[FunctionCall] = Field(default_factory=list)
    user_prompt: str = ""
    started_at: str | None = None


class RecordedUsage(BaseModel):
    """One model call's usage as the provider reported it (a point of the real usage curve).

    ``prompt_tokens`` is everything the call sent, cached or not: the context size at that call.
    A response a file splits over several records is one call, counted once.
    """

    model_config = ConfigDict(strict=True)

    prompt_tokens: int = Field(ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cache_read_tokens: int | None = Field(default=None, ge=0)
    cache_creation_tokens: int | None = Field(default=None, ge=0)
    message_id: str | None = Field(
        default=None, description="the first message the response produced"
    )
    response_id: str | None = None
    at: str | None = Field(default=None, description="when, as the file recorded it")
    context_window: int | None = Field(
        default=None, ge=0, description="the model's window, where the file recorded it"
    )


class ObservedCompaction(BaseModel):
    """A compaction the agent itself performed, as its file recorded it.

    It sits before turn ``before_turn`` (a stable index) and message ``before_message_id`` of
    the context that followed (the summary, where there is one). ``replaced`` holds the
    messages it took out of the context, which no later context holds; ``context_before``
    names, in order, every message of the context just before it (``history_before`` puts that
    context back together). Figures are the file's own, None where it recorded none.
    """

    compaction_id: str
    source_format: SourceFormat
    at: str | None = None
    trigger: str | None = Field(default=None, description="as recorded: auto, manual, ...")
    tokens_before: int | None = Field(default=None, ge=0)
    tokens_after: int | None = Field(default=None, ge=0)
    summary: str | None = Field(default=None, description="None when the file holds none readable")
    summary_message_id: str | None = None
    before_turn: int | None = None
    before_message_id: str | None = None
    replaced: list[Message] = Field(default_factory=list)
    context_before: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="the compaction's record(s), as the file had them"
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def replaced_message_ids(self) -> list[str]:
        return [message.message_id for message in self.replaced]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def replaced_count(self) -> int:
        return len(self.replaced)


class Subagent(BaseModel):
    """A sub-agent's own conversation (a separate context, outside the session's budget)."""

    agent_id: str
    history: list[Message] = Field(default_factory=list)
    parent_call_id: str | None = Field(
        default=None, description="the tool call of the main history that started it"
    )
    is_compaction: bool = Field(default=False, description="the agent that wrote a compaction")
    recorded_usage: list[RecordedUsage] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class SubagentRecord(BaseModel):
    """A sub-agent as JAATO's ``metadata.subagents.agents`` records it: who it was and how it
    stood when the session was saved (JAATO keeps its conversation in a file of its own).

    Each field is the recorded value when it has the expected type, else None; ``record`` is
    the entry exactly as the file had it.
    """

    agent_id: str | None = None
    profile_name: str | None = None
    status: str | None = None
    created_at: str | None = None
    last_activity: str | None = None
    turn_count: int | None = None
    max_turns: int | None = None
    record: dict[str, Any] = Field(default_factory=dict)


def _subagent_record(raw: Mapping[str, Any]) -> SubagentRecord:
    def text(key: str) -> str | None:
        value = raw.get(key)
        return value if isinstance(value, str) else None

    def whole(key: str) -> int | None:
        value = raw.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    return SubagentRecord(
        agent_id=text("agent_id"),
        profile_name=text("profile_name"),
        status=text("status"),
        created_at=text("created_at"),
        last_activity=text("last_activity"),
        turn_count=whole("turn_count"),
        max_turns=whole("max_turns"),
        record=dict(raw),
    )


class Session(BaseModel):
    session_id: str
    source_format: SourceFormat
    format_version: str | None = None
    model: str | None = None
    context_limit: int = Field(ge=0)
    context_limit_origin: ContextLimitOrigin
    description: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    history: list[Message] = Field(default_factory=list)
    system_instructions: list[SystemInstruction] = Field(default_factory=list)
    budget: InstructionBudget
    recorded_budget: InstructionBudget | None = Field(
        default=None, description="the budget exactly as the file recorded it, if it had one"
    )
    recorded_prompt_tokens: int | None = Field(
        default=None, description="the provider's last reported prompt size, if recorded"
    )
    turn_accounting: list[TurnAccounting] = Field(default_factory=list)
    user_inputs: list[str] = Field(default_factory=list)
    interrupted_turn: InterruptedTurn | None = None
    recorded_usage: list[RecordedUsage] = Field(
        default_factory=list, description="each model call's usage the file recorded, in order"
    )
    compactions: list[ObservedCompaction] = Field(
        default_factory=list, description="compactions the agent performed, in order"
    )
    subagents: list[Subagent] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    extra: dict[str, Any] = Field(
        default_factory=dict, description="other top-level fields of the file, kept verbatim"
    )
    token_counter: str = Field(description="the counter that made the budget's counted figures")
    warnings: list[str] = Field(default_factory=list)

    @field_serializer("turn_accounting")
    def _accounting_as_recorded(self, accounting: list[TurnAccounting]) -> list[dict[str, Any]]:
        """Each turn's accounting with the fields its file gave and no defaults: a session
        stored, read back and written out says no more than its file did (not ``"output": 0``
        for a turn whose file gave no output)."""
        written: list[dict[str, Any]] = _ACCOUNTING.dump_python(
            accounting, mode="json", exclude_unset=True
        )
        return written

    def turns(self) -> list[Turn]:
        return split_into_turns(self.history)

    def turn_count(self) -> int:
        """``len(self.turns())``, read from the budget's index when it describes the history:
        a run's figures need the count of a 10,000-turn history, not its turns built."""
        return len(history_layout(self.history, self.budget))

    def message_turns(self) -> dict[str, int]:
        """Each history message's turn (its position in ``turns()``) by message id, without
        building the turns: a run's ledger places each item it took by its turn."""
        layout = history_layout(self.history, self.budget)
        sizes = [end - start for start, end in map(layout.span, range(len(layout)))]
        turns = chain.from_iterable(map(repeat, count(), sizes))
        return dict(zip(layout.message_ids, turns, strict=True))

    @property
    def pending_tool_calls(self) -> list[FunctionCall]:
        """The tool calls of the turn that was running when the session was saved, never
        answered (JAATO answers them with a ``tool_interrupted`` error when it resumes)."""
        return list(self.interrupted_turn.pending_tool_calls) if self.interrupted_turn else []

    @property
    def subagent_records(self) -> list[SubagentRecord]:
        """JAATO's record of the session's sub-agents (``metadata.subagents.agents``), in the
        file's order; empty when the file has none (or not in JAATO's shape)."""
        subagents = self.metadata.get("subagents")
        agents = subagents.get("agents") if isinstance(subagents, Mapping) else None
        if not isinstance(agents, list):
            return []
        return [_subagent_record(agent) for agent in agents if isinstance(agent, Mapping)]

    @property
    def token_counting(self) -> TokenCounting:
        """How the session's figures were counted, and what makes any of them an estimate:
        the counter (another model's vocabulary, one that could not be loaded) and media
        whose size in pixels the file does not tell."""
        counting = token_counting(self.model, self.token_counter)
        provider = media_of(counter_by_name(self.token_counter))
        estimated = [
            cost
            for message in self.history
            for part in message.parts
            if part.inline_data is not None
            and not (cost := media_cost(part.inline_data, provider)).exact
        ]
        if not estimated:
            return counting
        note = (
            f"{len(estimated):,} media part{'s' if len(estimated) > 1 else ''} "
            f"estimated: {estimated[0].description}"
            + (f", and {len(estimated) - 1:,} more" if len(estimated) > 1 else "")
        )
        return TokenCounting(counting.counter, False, [*counting.notes, note])

    @property
    def plugin_states(self) -> dict[str, Any]:
        """What JAATO's plugins saved with the session (``metadata.plugin_states``), by plugin
        name, as the file had it."""
        states = self.metadata.get("plugin_states")
        return dict(states) if isinstance(states, Mapping) else {}


def iso_to_epoch(value: str | None) -> float | None:
    """JAATO writes naive ISO times; read them as UTC so results do not depend on the machine."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def _recorded_message_leaves(recorded: InstructionBudget | None) -> Iterator[SourceEntry]:
    """The leaves of a recorded conversation that name exactly one message."""
    if recorded is None:
        return
    conversation = recorded.get_entry(InstructionSource.CONVERSATION)
    if conversation is None:
        return
    for _, entry in conversation.walk():
        if not entry.children and len(entry.message_ids) == 1:
            yield entry


def recorded_message_figures(recorded: InstructionBudget | None) -> dict[str, int]:
    """Per-message token figures a recorded budget holds."""
    return {entry.message_ids[0]: entry.tokens for entry in _recorded_message_leaves(recorded)}


CLARIFICATION_TURN_TYPES = frozenset({"clarification_q", "clarification_a"})
"""JAATO's ``ConversationTurnType`` values for a clarification question and its answer."""


def recorded_clarifications(recorded: InstructionBudget | None) -> frozenset[str]:
    """Messages a recorded budget names as clarifications: a leaf whose ``metadata["turn_type"]``
    is JAATO's ``clarification_q`` or ``clarification_a``.

    Only the agent knows that a question it asked, or the user's answer, settled something the
    rest of the work depends on, so the file is the only place that can say so. JAATO's default
    policy for both is preservable. Nothing else a recording says raises a policy: JAATO also
    records its one "turn summary" as preservable (the last answer of the session, wherever
    its turn was) and locks whatever user message comes first, a notice included.
    """
    return frozenset(
        entry.message_ids[0]
        for entry in _recorded_message_leaves(recorded)
        if entry.metadata.get("turn_type") in CLARIFICATION_TURN_TYPES
    )


_PARTS_JAATO_DOES_NOT_COUNT = frozenset({PartType.FUNCTION_CALL, PartType.INLINE_DATA})


def _recording_is_complete(message: Message) -> bool:
    return not any(part.type in _PARTS_JAATO_DOES_NOT_COUNT for part in message.parts)


RECORDED = "recorded"
"""What made a message's figure when the file recorded it (else the counter's name)."""


def message_figure(
    message: Message, counter: TokenCounter, recorded_figures: Mapping[str, int]
) -> tuple[int, str]:
    """A message's tokens in the budget, and what made the figure (``recorded`` or a counter)."""
    recorded = recorded_figures.get(message.message_id)
    if recorded is not None and _recording_is_complete(message):
        return recorded, RECORDED
    return count_message(message, counter), counter.name


def counted_figures(
    messages: Sequence[Message], counter: TokenCounter, recorded_figures: Mapping[str, int]
) -> Figure:
    """``message_figure`` for the messages of a history, those without a recorded figure
    counted together beforehand (``count_messages``: on several threads, for tiktoken)."""
    to_count = [
        message
        for message in messages
        if recorded_figures.get(message.message_id) is None or not _recording_is_complete(message)
    ]
    counts = dict(zip(map(id, to_count), count_messages(to_count, counter), strict=True))
    name = counter.name

    def figure(message: Message) -> tuple[int, str]:
        tokens = counts.get(id(message))
        if tokens is None:
            return message_figure(message, counter, recorded_figures)
        return tokens, name

    return figure


def _role_label(message: Message) -> str:
    if message.kind is MessageKind.CHAT:
        if message.role is Role.MODEL:  # the commonest message: answered without its parts
            return "output (model)"
    elif message.kind is MessageKind.SUMMARY:
        return "summary"
    else:
        return "notice"
    if message.is_function_response:
        names = sorted({r.name for r in message.function_responses if r.name})
        return f"input (tool = {', '.join(names)})" if names else "input (tool)"
    return "input (external)"


def _closing_answer_ids(turn: Sequence[Message]) -> frozenset[str]:
    """The answer that closes a turn which took several model messages and used tools."""
    answers = [message for message in turn if message.role is Role.MODEL]
    if len(answers) < 2:  # most turns: one answer, which closes nothing
        return frozenset()
    used_tools = False
    closing: Message | None = None
    for message in answers:
        if message.is_text_only:
            closing = message
        elif any(part.type is PartType.FUNCTION_CALL for part in message.parts):
            used_tools = True
    if not used_tools or closing is None:
        return frozenset()
    return frozenset((closing.message_id,))


def original_request(history: Sequence[Message]) -> int | None:
    """Where the user's first request is: the first user message that is not a tool result or
    notice."""
    for position, message in enumerate(history):
        if (
            message.role is Role.USER
            and message.kind is MessageKind.CHAT
            and not message.is_function_response
        ):
            return position
    return None


def _message_policy(
    message: Message,
    original: str | None,
    closing: frozenset[str],
    clarifications: frozenset[str],
) -> GCPolicy:
    if message.message_id == original:
        return GCPolicy.LOCKED
    if (
        message.kind is MessageKind.SUMMARY
        or message.message_id in closing
        or message.message_id in clarifications
    ):
        return GCPolicy.PRESERVABLE
    return GCPolicy.EPHEMERAL


def turn_key(turn: Turn) -> str:
    """Budget key of a turn (``turn_key_of``)."""
    return turn_key_of(turn.index, turn.messages[0])


def turn_time(indices: Sequence[int | None], turn: int) -> tuple[float, float]:
    """When turn ``turn`` of a layout (its stable ``indices``) was created, relative to the
    session's start, and the span its messages take: ``(clock, width)``; message ``k`` of
    ``n`` was created at ``clock + k * width / n``.

    Times follow stable turn indices, not positions: uploaded turn ``i`` takes
    ``[i, i + 1/2)`` whatever was removed before it, so the budget entries of every turn a
    collection leaves alone are the same values after it, and a budget is updated by what a
    run changed rather than rebuilt. Turns a collector inserted (summaries, notices) share the
    half after the uploaded turn before them (``[-1/2, 0)`` at the start), in history order.
    Times increase along a history whose stable indices do, as the builder's always do.
    """
    index = indices[turn]
    if index is not None:
        return float(index), 0.5
    first = turn
    while first and indices[first - 1] is None:
        first -= 1
    end = turn + 1
    while end < len(indices) and indices[end] is None:
        end += 1
    before = indices[first - 1] if first else None
    width = 0.5 / (end - first)
    return (before if before is not None else -1) + 0.5 + (turn - first) * width, width


Copied = list[tuple[int, int, int]]
"""Runs of turns copied from another index: ``(first turn, end turn, its first turn there)``."""


def index_conversation(
    history: Sequence[Message],
    counter: TokenCounter,
    *,
    recorded_figures: Mapping[str, int] | None = None,
    clarifications: frozenset[str] = frozenset(),
    created_base: float = 0.0,
    figure: Figure | None = None,
    reuse: ConversationIndex | None = None,
    exchange_figures: bool = True,
) -> tuple[ConversationIndex, Copied]:
    """The conversation of a history laid out flat, without building its budget tree, and
    the runs of its turns copied unchanged from ``reuse``.

    Each message's figure is ``message_figure`` with ``counter`` and ``recorded_figures``, or
    what ``figure`` gives: a replay, which lays out windows of the same messages at every
    collection, passes one that works each out once. ``clarifications`` are the messages the
    file recorded as clarifications (``recorded_clarifications``): preservable.

    ``reuse`` is an index this function made, with the same arguments, for another history: a
    shorter one this history extends, or the history a collection started from. Its figures
    stand in for working out those of the messages it holds, and every uploaded turn both
    histories hold alike (the same messages under the same stable index, with the same
    original request) is copied from it, moved to where it stands now; only the other turns
    are read: the few a collection touched, or the turns added since. Turns copied are found
    run by run (see ``_copied_runs``), so what a collection left alone costs next to nothing.

    Every turn's tool exchanges are recorded, with their figures (``exchange_figures``: a
    collection taking thousands of them then only reads them) or as positions only, whose
    figures a collection works out for the few it takes (a replay's small collections).
    """
    recorded = recorded_figures or {}
    basis: FigureBasis = (counter.name, recorded, clarifications)
    messages = list(history)
    if reuse is not None and not reuse.unedited():
        reuse = None  # what it says of its messages no longer holds
    if figure is None and reuse is None:
        figure = counted_figures(messages, counter, recorded)
    elif figure is None:

        def figure(message: Message) -> tuple[int, str]:
            return message_figure(message, counter, recorded)

    layout = (
        relaid_out(messages, reuse.messages, reuse.layout)
        if reuse is not None
        else turn_layout(messages)
    )
    request = original_request(messages)
    original = messages[request].message_id if request is not None else None
    old = (
        reuse
        if reuse is not None
        and _can_copy_turns(reuse, basis, original, created_base, exchange_figures)
        else None
    )
    if old is not None:
        copied, mapped = _copied_runs(old, messages, layout)
    else:
        copied, mapped = [], []
        if reuse is not None:
            figure = reuse.reusing(basis, figure)
    tokens: list[int] = []
    counted_by: list[str] = []
    policies: list[GCPolicy] = []
    created: list[float] = []
    readings: list[Readings] = []
    exchanges: list[Exchange] = []
    groups: list[ExchangeGroup] = []
    starts, size = layout.starts, len(messages)

    def read(first: int, end: int) -> None:
        """Lay out turns ``first`` to ``end`` from their messages; the figures of messages the
        same turn of ``old`` holds are taken from it (a turn a collection took a part of)."""
        for turn in range(first, end):
            start = starts[turn]
            stop = starts[turn + 1] if turn + 1 < len(starts) else size
            turn_messages = messages[start:stop]
            closing = _closing_answer_ids(turn_messages)
            clock, width = turn_time(layout.indices, turn)
            step = width / (stop - start)
            traffic: list[TrafficMember] = []
            old_turn = mapped[turn] if mapped else None
            known = _old_figures(old, old_turn) if old_turn is not None else {}
            for offset, message in enumerate(turn_messages):
                was = known.get(id(message)) if known else None
                message_tokens, made_by = was[1] if was and was[0] is message else figure(message)
                tokens.append(message_tokens)
                counted_by.append(made_by)
                readings.append(message.readings())
                policies.append(_message_policy(message, original, closing, clarifications))
                created.append(created_base + clock + offset * step)
                made = tool_traffic(message)
                if made is not None:
                    traffic.append((start + offset, *made))
            if traffic:
                found = turn_exchanges(traffic)
                if exchange_figures:
                    exchanges.extend(
                        turn_exchange_figures(
                            turn, found, messages, layout, tokens, policies, created
                        )
                    )
                else:
                    groups.extend([(turn, positions) for positions in found])

    done = 0
    for first, end, old_first in copied:
        assert old is not None
        read(done, first)
        done = end
        old_layout = old.layout
        old_start = old_layout.starts[old_first]
        old_stop = old_layout.span(old_first + end - first - 1)[1]
        tokens += old.tokens[old_start:old_stop]
        counted_by += (old.counted_by or ())[old_start:old_stop]
        policies += old.policies[old_start:old_stop]
        created += old.created_at[old_start:old_stop]
        readings += old.readings[old_start:old_stop]
        shift, turn_shift = starts[first] - old_start, first - old_first
        if exchange_figures:
            exchanges += [
                e._replace(turn=e.turn + turn_shift, positions=[p + shift for p in e.positions])
                for e in _in_turns(old.exchanges or [], old_first, old_first + end - first)
            ]
        else:
            groups += [
                (turn + turn_shift, [p + shift for p in positions])
                for turn, positions in _in_turns(
                    old.exchange_groups or [], old_first, old_first + end - first
                )
            ]
    read(done, len(starts))
    index = ConversationIndex(
        messages,
        layout,
        tokens,
        policies,
        created,
        counted_by,
        basis,
        exchanges=exchanges if exchange_figures else None,
        exchange_groups=None if exchange_figures else groups,
        original=original,
        created_base=created_base,
        readings=readings,
    )
    return index, copied


def _old_figures(
    old: ConversationIndex | None, turn: int
) -> dict[int, tuple[Message, tuple[int, str]]]:
    """The figures of ``old``'s turn ``turn``, by message identity."""
    assert old is not None
    assert old.counted_by is not None
    start, stop = old.layout.span(turn)
    tokens, counted_by, messages = old.tokens, old.counted_by, old.messages
    return {id(messages[p]): (messages[p], (tokens[p], counted_by[p])) for p in range(start, stop)}


def _in_turns[T: tuple[Any, ...]](found: Sequence[T], first: int, end: int) -> Sequence[T]:
    """The exchanges (or groups) of turns ``first`` to ``end``: they are in turn order."""
    key = itemgetter(0)
    return found[bisect_left(found, first, key=key) : bisect_left(found, end, key=key)]


def _can_copy_turns(
    old: ConversationIndex,
    basis: FigureBasis,
    original: str | None,
    created_base: float,
    exchange_figures: bool,
) -> bool:
    """Whether ``old`` holds what copying its turns needs: the builder's figures on the same
    basis, the same original request (it decides a policy) and the same start of the session
    (times follow from it), exchanges recorded the same way."""
    recorded = old.exchanges if exchange_figures else old.exchange_groups
    return (
        old.counted_by is not None
        and old.basis == basis
        and old.original == original
        and old.created_base == created_base
        and recorded is not None
    )


def _copied_runs(
    old: ConversationIndex, messages: list[Message], layout: TurnLayout
) -> tuple[Copied, list[int | None]]:
    """The runs of uploaded turns ``messages`` holds as ``old``'s history does, and for every
    turn the turn of ``old`` with its stable index (None for none).

    A turn is copied when it holds the same messages (equal, and most often the very same
    objects) under the same stable index: its figures, policies and times depend only on its
    own messages, its index and the original request. Turns whose stable indices follow each
    other in both histories are compared as one span of messages; where the span differs, the
    turn holding the first difference is left out and the rest compared again. A collection
    changes a few places of a long history, so that is a few comparisons of long spans.
    """
    old_layout, old_messages = old.layout, old.messages
    old_turn_of: dict[int | None, int] = dict(zip(old_layout.indices, count(), strict=False))
    mapped: list[int | None] = list(map(old_turn_of.get, layout.indices))
    if None in old_turn_of:  # inserted turns have no stable index: nothing to map them to
        for turn in compress(count(), map(is_, layout.indices, repeat(None))):
            mapped[turn] = None
    size, old_size = len(messages), len(old_messages)
    starts, old_starts = layout.starts, old_layout.starts

    def stop(turn: int) -> int:
        return starts[turn + 1] if turn + 1 < len(starts) else size

    def old_stop(turn: int) -> int:
        return old_starts[turn + 1] if turn + 1 < len(old_starts) else old_size

    def same(first: int, end: int, old_first: int) -> bool:
        """Whether turns ``first`` to ``end`` are old turns ``old_first`` on: the same messages
        in spans of the same length, which then split into turns alike (both begin a turn, and
        whether a message starts one depends only on it and the turn's first, ``starts_turn``)."""
        if end <= first:
            return True
        start, old_start = starts[first], old_starts[old_first]
        span, old_end = stop(end - 1) - start, old_stop(old_first + end - first - 1)
        return old_end - old_start == span and (
            _first_unequal(messages, start, old_messages, old_start, span) == span
        )

    def first_different(first: int, end: int, old_first: int) -> int | None:
        """The first of turns ``first`` to ``end`` that is not old turn ``old_first`` on
        (None when all are): the turn holding the first message that differs, or the one before
        it when that message begins a turn here and not there."""
        if same(first, end, old_first):
            return None
        start, old_start = starts[first], old_starts[old_first]
        old_span = old_stop(old_first + end - first - 1) - old_start
        span = stop(end - 1) - start
        offset = _first_unequal(messages, start, old_messages, old_start, min(span, old_span))
        turn = layout.turn_of(start + offset) if offset < span else end - 1
        turn = min(max(turn, first), end - 1)
        while not same(first, turn, old_first):
            turn -= 1
        return turn

    runs: Copied = []
    turn, turns = 0, len(mapped)
    while turn < turns:
        old_first = mapped[turn]
        if old_first is None:
            turn += 1
            continue
        end = turn + 1
        while end < turns and mapped[end] == old_first + end - turn:
            end += 1
        first = turn
        while first < end:
            different = first_different(first, end, old_first + first - turn)
            if different is None:
                runs.append((first, end, old_first + first - turn))
                break
            if different > first:
                runs.append((first, different, old_first + first - turn))
            first = different + 1
        turn = end
    return runs, mapped


def _first_unequal(
    new: Sequence[Message], new_start: int, old: Sequence[Message], old_start: int, size: int
) -> int:
    """How many messages from ``new_start`` and ``old_start`` are equal (most often the very
    same objects), compared in chunks that double: what it costs follows the answer, not the
    length of the histories. Messages are compared by identity first, then by id: comparing
    two models field by field (pydantic's ``==``) cost more than the rest of the search, and
    messages with different ids are never equal."""
    done, chunk = 0, 8
    while done < size:
        end = min(size, done + chunk)
        others = compress(
            count(done),
            map(
                is_not,
                new[new_start + done : new_start + end],
                old[old_start + done : old_start + end],
            ),
        )
        for offset in others:
            one, other = new[new_start + offset], old[old_start + offset]
            if one.message_id != other.message_id or one != other:
                return offset
        done, chunk = end, chunk * 2
    return size


def build_conversation(
    history: Sequence[Message],
    counter: TokenCounter,
    *,
    recorded_figures: Mapping[str, int] | None = None,
    clarifications: frozenset[str] = frozenset(),
    created_base: float = 0.0,
    reuse: SourceEntry | None = None,
    figure: Figure | None = None,
) -> SourceEntry:
    """The CONVERSATION entry for a history: one container per turn, one leaf per message.

    The arguments are ``index_conversation``'s; ``reuse`` is an entry this function made (with
    the same arguments) for another history, whose index is reused, and whose tree gives the
    turns the two histories hold alike: the very same entries, so a budget after a collection
    costs what the collection changed. The entry keeps its index, which a collection reads
    instead of the tree, until an entry of the tree is edited: every entry of the tree counts
    its edits against one ``Revision``, the one of ``reuse`` when entries are taken from it.
    """
    known = index_of(reuse)
    index, copied = index_conversation(
        history,
        counter,
        recorded_figures=recorded_figures,
        clarifications=clarifications,
        created_base=created_base,
        reuse=known,
        figure=figure,
    )
    kept: list[tuple[str, SourceEntry]] = []
    revision = None
    if reuse is not None and known is not None:
        revision = reuse.revision()
        if len(reuse.children) == len(known.layout):
            kept = list(reuse.children.items())  # one entry per turn of ``known``, in order
    conversation = conversation_tree(
        index, created_base, copied if kept else [], kept, revision or Revision()
    )
    conversation.keep_index(index)
    return conversation


def conversation_tree(
    index: ConversationIndex,
    created_base: float = 0.0,
    copied: Copied | None = None,
    kept: Sequence[tuple[str, SourceEntry]] = (),
    revision: Revision | None = None,
) -> SourceEntry:
    """The CONVERSATION entry of an index: one container per turn and one leaf per message,
    except the runs of turns ``copied`` from another index, whose entries are that index's
    tree's (``kept``: its turns' keys and entries, in order). Every entry made is stamped with
    ``revision`` (a new one by default): the kept ones must have it already."""
    revision = revision or Revision()
    children: dict[str, SourceEntry] = {}
    done = 0
    for first, end, old_first in copied or ():
        _turn_entries(index, done, first, children, revision)
        children.update(kept[old_first : old_first + end - first])
        done = end
    _turn_entries(index, done, len(index.layout), children, revision)
    conversation = construct(
        SourceEntry,
        source=InstructionSource.CONVERSATION,
        tokens=index.total,
        gc_policy=DEFAULT_SOURCE_POLICIES[InstructionSource.CONVERSATION],
        label="Conversation",
        children=children,
        metadata={},
        created_at=created_base,
        message_ids=[],
    )
    conversation.stamp(revision)
    return conversation


def user_inputs_shared(user_inputs: list[str], history: Sequence[Message]) -> list[str]:
    """``user_inputs`` with each prompt a user message holds as well made that message's very
    string: JAATO keeps every prompt twice, in the history and in ``user_inputs`` (a
    10,000-turn session's 8.5 MB, held twice otherwise)."""
    said = {
        part.text: part.text
        for message in history
        if message.role is Role.USER
        for part in message.parts
        if part.text
    }
    return [said.get(text, text) for text in user_inputs]


def turn_name(index: int | None, kind: MessageKind) -> str:
    """A turn's label in the budget tree: JAATO's ``turn_1`` for the turn with stable index 0,
    the kind (``summary``, ``notice``) for one a collector inserted."""
    return f"turn_{turn_number(index)}" if index is not None else kind.value


def _turn_entries(
    index: ConversationIndex,
    first: int,
    end: int,
    children: dict[str, SourceEntry],
    revision: Revision,
) -> None:
    """Add the entries of turns ``first`` to ``end`` of the index to ``children``, each
    stamped with ``revision``.

    A conversation has an entry per message, so this is the budget builder's inner loop: it
    reads the index's flat lists by position and builds each entry straight from its fields
    (``entry_maker``), with nothing worked out twice (labels, keys, spans).
    """
    messages, layout = index.messages, index.layout
    tokens, policies, created, counted_by = (
        index.tokens,
        index.policies,
        index.created_at,
        index.counted_by,
    )
    assert counted_by is not None, "only an index the builder made says what made each figure"
    ids, starts, indices, kinds = layout.message_ids, layout.starts, layout.indices, layout.kinds
    size, turns = len(messages), len(starts)
    entry = entry_maker(SourceEntry)
    stamp = SourceEntry.stamp
    conversation = InstructionSource.CONVERSATION
    for turn in range(first, end):
        start = starts[turn]
        stop = starts[turn + 1] if turn + 1 < turns else size
        turn_index, kind = indices[turn], kinds[turn]
        name = turn_name(turn_index, kind)
        # JAATO's label: ``turn_1`` for the first turn (the key keeps the stable index).
        turn_label = name if turn_index is not None else "inserted"
        leaves: dict[str, SourceEntry] = {}
        for position in range(start, stop):
            message = messages[position]
            message_id = ids[position]
            leaves[message_id] = leaf = entry(
                {
                    "source": conversation,
                    "tokens": tokens[position],
                    "gc_policy": policies[position],
                    "label": f"{turn_label} {_role_label(message)}",
                    "children": {},
                    "metadata": {
                        "counted_by": counted_by[position],
                        "role": _ROLE_VALUES[message.role],
                    },
                    "created_at": created[position],
                    "message_ids": [message_id],
                }
            )
            stamp(leaf, revision)
        children[turn_key_of(turn_index, messages[start])] = container = entry(
            {
                "source": conversation,
                "tokens": sum(tokens[start:stop]),
                "gc_policy": GCPolicy.PARTIAL,
                "label": name,
                "children": leaves,
                "metadata": {"turn_index": turn_index, "kind": _KIND_VALUES[kind]},
                "created_at": created[start],
                "message_ids": ids[start:stop],
            }
        )
        stamp(container, revision)


_ROLE_VALUES = {role: role.value for role in Role}
_KIND_VALUES = {kind: kind.value for kind in MessageKind}
"""Enum values by member: a dict read costs a fraction of ``.value`` on an inner loop."""


def build_budget(
    history: Sequence[Message],
    counter: TokenCounter | None = None,
    *,
    session_id: str = "",
    agent_id: str = "main",
    context_limit: int,
    system_instructions: Sequence[SystemInstruction] = (),
    recorded_budget: InstructionBudget | None = None,
    thinking_tokens: int | None = None,
    created_base: float = 0.0,
    reuse: SourceEntry | None = None,
    figure: Figure | None = None,
) -> InstructionBudget:
    """Build the budget of a history; sources the history cannot tell come from the recording.

    With no history (a bare budget snapshot) the recorded conversation is all there is, so it is
    kept as recorded. ``reuse`` and ``figure`` are ``build_conversation``'s.
    """
    counter = counter or load_counter()
    budget = InstructionBudget.create_default(
        session_id=session_id, agent_id=agent_id, context_limit=context_limit
    )
    if recorded_budget is not None:
        budget.agent_type = recorded_budget.agent_type
        for source, entry in recorded_budget.entries.items():
            budget.entries[source] = entry.model_copy(deep=True)
    if system_instructions:
        # The budget is new and nobody holds it yet: filled in place, not edited.
        system = budget.entries[InstructionSource.SYSTEM]
        for position, instruction in enumerate(system_instructions):
            system.children[instruction.key] = construct(
                SourceEntry,
                source=InstructionSource.SYSTEM,
                tokens=counter.count(instruction.text),
                gc_policy=GCPolicy.LOCKED,
                label=instruction.label,
                children={},
                metadata={"counted_by": counter.name},
                created_at=created_base + position / 1000,
                message_ids=[],
            )
        set_fresh(system, "tokens", sum(child.tokens for child in system.children.values()))
    if history or recorded_budget is None or not _has_conversation(recorded_budget):
        budget.entries[InstructionSource.CONVERSATION] = build_conversation(
            history,
            counter,
            recorded_figures=recorded_message_figures(recorded_budget),
            clarifications=recorded_clarifications(recorded_budget),
            created_base=created_base,
            reuse=reuse,
            figure=figure,
        )
    if thinking_tokens is not None and not _has_thinking(recorded_budget):
        set_fresh(budget.entries[InstructionSource.THINKING], "tokens", thinking_tokens)
    return budget


def _has_conversation(budget: InstructionBudget) -> bool:
    return InstructionSource.CONVERSATION in budget.entries


def _has_thinking(budget: InstructionBudget | None) -> bool:
    return budget is not None and InstructionSource.THINKING in budget.entries


def rebuild_budget(
    session: Session,
    counter: TokenCounter | None = None,
    *,
    reuse: InstructionBudget | None = None,
    figure: Figure | None = None,
) -> InstructionBudget:
    """The budget the session's history implies now (after an edit or a collection).

    ``reuse`` is a budget this function made, with the same counter and recording, for a
    session with another history (a shorter one, or the one a collection started from): what
    the two histories share is taken from it rather than worked out again (see
    ``index_conversation``). ``figure`` gives each message's figure where the caller kept
    them (``gcengine.stored``). The result is exactly the budget rebuilt from scratch.
    """
    thinking = [t.thinking for t in session.turn_accounting if t.thinking is not None]
    return build_budget(
        session.history,
        counter,
        session_id=session.session_id,
        context_limit=session.context_limit,
        system_instructions=session.system_instructions,
        recorded_budget=session.recorded_budget,
        thinking_tokens=sum(thinking) if thinking else None,
        created_base=iso_to_epoch(session.created_at) or 0.0,
        reuse=reuse.get_entry(InstructionSource.CONVERSATION) if reuse is not None else None,
        figure=figure,
    )


class MessageDrift(BaseModel):
    message_id: str
    label: str
    recorded: int
    counted: int

    @property
    def difference(self) -> int:
        return self.counted - self.recorded


class TokenDrift(BaseModel):
    """How far the figures a file recorded are from what the engine counts."""

    counter: str
    messages: list[MessageDrift]
    recorded_total: int
    counted_total: int
    provider_prompt_tokens: int | None
    counted_context_tokens: int

    @property
    def difference(self) -> int:
        return self.counted_total - self.recorded_total

    @property
    def difference_percent(self) -> float | None:
        if self.recorded_total == 0:
            return None
        return self.difference / self.recorded_total * 100


def message_counts(
    session: Session, counter: TokenCounter, *, recorded: bool = False
) -> Callable[[Message], int]:
    """``count_message(m, counter)``, taken from the budget for the history messages its
    builder counted with a counter of the same name, counted for any other message; with
    ``recorded``, the figures the file recorded are taken from the budget too: what the
    session says each message costs, as its runs and replays count it.

    A drift check follows a load, and the loader's counts used to be found again in the
    counter's content cache; that cache is bounded now, and a long session outgrows it, so
    only the messages whose figure the file recorded are counted again (drift compares the
    two). Scoring what a run removed asks for tens of thousands of messages' figures the
    budget holds, recorded ones included, so that the tokens it says went are the run's.
    """
    index = index_of(session.budget.get_entry(InstructionSource.CONVERSATION))
    known: dict[int, tuple[Message, int]] = {}
    if index is not None and index.counted_by is not None and index.describes(session.history):
        taken = {counter.name, RECORDED} if recorded else {counter.name}
        known = {
            id(message): (message, tokens)
            for message, tokens, counted_by in zip(
                index.messages, index.tokens, index.counted_by, strict=True
            )
            if counted_by in taken
        }

    def count(message: Message) -> int:
        figure = known.get(id(message))
        if figure is not None and figure[0] is message:
            return figure[1]
        return count_message(message, counter)

    return count


def token_drift(session: Session, counter: TokenCounter | None = None) -> TokenDrift:
    """Compare recorded per-message figures (and the provider's prompt size) with fresh counts."""
    counter = counter or counter_by_name(session.token_counter)
    figures = recorded_message_figures(session.recorded_budget)
    conversation = session.budget.get_entry(InstructionSource.CONVERSATION)
    labels = {  # of the messages compared: those the file recorded a figure for
        entry.message_ids[0]: entry.label or ""
        for entry in (conversation.leaves() if conversation and figures else ())
        if entry.message_ids
    }
    counts = list(map(message_counts(session, counter), session.history))
    drifts = [
        MessageDrift(
            message_id=message.message_id,
            label=labels.get(message.message_id, ""),
            recorded=figures[message.message_id],
            counted=counted,
        )
        for message, counted in zip(session.history, counts, strict=True)
        if message.message_id in figures
    ]
    counted_context = sum(counts) + sum(counter.count(i.text) for i in session.system_instructions)
    return TokenDrift(
        counter=counter.name,
        messages=drifts,
        recorded_total=sum(d.recorded for d in drifts),
        counted_total=sum(d.counted for d in drifts),
        provider_prompt_tokens=session.recorded_prompt_tokens,
        counted_context_tokens=counted_context,
    )


def history_before(session: Session, compaction: ObservedCompaction | str) -> Session:
    """The session as it stood just before one of its observed compactions (given or named by
    ``compaction_id``): the context the agent compacted, with the compactions, sub-agents and
    recorded usage that came before, and its budget counted with the session's counter.

    A policy replayed on it shows what the policy would have done where the agent compacted.
    Messages keep their ids and stable turn indices. Raises ``CompactionNotFoundError`` for a
    compaction the session does not hold.
    """
    wanted = compaction if isinstance(compaction, str) else compaction.compaction_id
    position = next(
        (i for i, c in enumerate(session.compactions) if c.compaction_id == wanted), None
    )
    if position is None:
        raise CompactionNotFoundError(f"the session has no compaction {wanted!r}")
    chosen = session.compactions[position]
    earlier = session.compactions[:position]
    pool = {m.message_id: m for m in session.history}
    for other in session.compactions:
        pool.update((m.message_id, m) for m in other.replaced)
    context = [pool[mid] for mid in chosen.context_before if mid in pool]
    seen = {m.message_id for m in context}
    seen.update(m.message_id for c in earlier for m in c.replaced)
    usage = [u for u in session.recorded_usage if u.message_id in seen]
    before = session.model_copy(
        update={
            "session_id": f"{session.session_id}@{chosen.compaction_id}",
            "history": context,
            "compactions": earlier,
            "recorded_usage": usage,
            "recorded_prompt_tokens": (
                chosen.tokens_before
                if chosen.tokens_before is not None
                else (usage[-1].prompt_tokens if usage else None)
            ),
            "interrupted_turn": None,
        }
    )
    before.budget = rebuild_budget(before, counter_by_name(session.token_counter))
    return before


def tool_pair_report(session: Session) -> list[ToolPairProblem]:
    """Every tool result without its call and every call without its result, in the session's
    context and then in each sub-agent's conversation (see ``tool_pair_problems``)."""
    problems = tool_pair_problems(session.history)
    for agent in session.subagents:
        problems.extend(tool_pair_problems(agent.history, agent.agent_id))
    return problems
