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

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from itertools import compress, count, islice
from operator import is_not, itemgetter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field

from gcengine._fast import construct, remember, set_fresh
from gcengine.budget import (
    DEFAULT_SOURCE_POLICIES,
    GCPolicy,
    InstructionBudget,
    InstructionSource,
    SourceEntry,
)
from gcengine.conversation import (
    ConversationIndex,
    Exchange,
    ExchangeGroup,
    Figure,
    FigureBasis,
    TrafficMember,
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
    Role,
    ToolPairProblem,
    Turn,
    TurnLayout,
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
    """One turn's provider-reported usage, as JAATO records it."""

    model_config = ConfigDict(extra="allow", strict=True)

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

    def turns(self) -> list[Turn]:
        return split_into_turns(self.history)

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


def message_figure(
    message: Message, counter: TokenCounter, recorded_figures: Mapping[str, int]
) -> tuple[int, str]:
    """A message's tokens in the budget, and what made the figure (``recorded`` or a counter)."""
    recorded = recorded_figures.get(message.message_id)
    if recorded is not None and _recording_is_complete(message):
        return recorded, "recorded"
    return count_message(message, counter), counter.name


def _role_label(message: Message) -> str:
    if message.kind is MessageKind.SUMMARY:
        return "summary"
    if message.kind is MessageKind.NOTICE:
        return "notice"
    if message.role is Role.MODEL:
        return "output (model)"
    if message.is_function_response:
        names = sorted({r.name for r in message.function_responses if r.name})
        return f"input (tool = {', '.join(names)})" if names else "input (tool)"
    return "input (external)"


def _closing_answer_ids(turn: Sequence[Message]) -> set[str]:
    """The answer that closes a turn which took several model messages and used tools."""
    model_messages = 0
    used_tools = False
    closing: Message | None = None
    for message in turn:
        if message.role is not Role.MODEL:
            continue
        model_messages += 1
        if message.is_text_only:
            closing = message
        elif any(part.type is PartType.FUNCTION_CALL for part in message.parts):
            used_tools = True
    if model_messages < 2 or not used_tools or closing is None:
        return set()
    return {closing.message_id}


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
    message: Message, original: str | None, closing: set[str], clarifications: frozenset[str]
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
) -> tuple[ConversationIndex, int]:
    """The conversation of a history laid out flat, without building its budget tree, and how
    many of its first turns are ``reuse``'s unchanged.

    Each message's figure is ``message_figure`` with ``counter`` and ``recorded_figures``, or
    what ``figure`` gives: a replay, which lays out windows of the same messages at every
    collection, passes one that works each out once. ``clarifications`` are the messages the
    file recorded as clarifications (``recorded_clarifications``): preservable.

    ``reuse`` is an index this function made, with the same arguments, for another history: a
    shorter one this history extends, or the history a collection started from. Its figures
    stand in for working out those of the messages it holds, and the whole turns the two
    histories share at their start and at their end (the same messages, the same original
    request) are copied from it, the ones at the end only moved; only the turns between are
    read, usually the few a collection touched or the turns added since.

    Every turn's tool exchanges are recorded, with their figures (``exchange_figures``: a
    collection taking thousands of them then only reads them) or as positions only, whose
    figures a collection works out for the few it takes (a replay's small collections).
    """
    recorded = recorded_figures or {}
    basis: FigureBasis = (counter.name, recorded, clarifications)
    if figure is None:

        def figure(message: Message) -> tuple[int, str]:
            return message_figure(message, counter, recorded)

    if reuse is not None:
        figure = reuse.reusing(basis, figure)
    messages = list(history)
    layout = turn_layout(messages)
    request = original_request(messages)
    original = messages[request].message_id if request is not None else None
    old = (
        reuse
        if reuse is not None and _can_copy_turns(reuse, basis, original, exchange_figures)
        else None
    )
    head, tail = _shared_turns(old, messages, layout) if old is not None else (0, 0)
    body_end = len(layout) - tail
    split = layout.starts[head] if head < len(layout) else len(messages)
    tokens: list[int] = []
    counted_by: list[str] = []
    policies: list[GCPolicy] = []
    created: list[float] = []
    exchanges: list[Exchange] = []
    groups: list[ExchangeGroup] = []
    if old is not None and head:
        tokens, counted_by = old.tokens[:split], list(old.counted_by or ())[:split]
        policies, created = old.policies[:split], old.created_at[:split]
        exchanges = [e for e in old.exchanges or () if e.turn < head]
        groups = [g for g in old.exchange_groups or () if g[0] < head]
    for turn in range(head, body_end):
        start, end = layout.span(turn)
        turn_messages = messages[start:end]
        closing = _closing_answer_ids(turn_messages)
        traffic: list[TrafficMember] = []
        for position, message in enumerate(turn_messages, start):
            message_tokens, made_by = figure(message)
            tokens.append(message_tokens)
            counted_by.append(made_by)
            policies.append(_message_policy(message, original, closing, clarifications))
            created.append(created_base + position / 1000)
            made = tool_traffic(message)
            if made is not None:
                traffic.append((position, *made))
        if traffic:
            found = [(turn, positions) for positions in turn_exchanges(traffic)]
            groups.extend(found)
            if exchange_figures:
                exchanges.extend(_figured(found, messages, layout, tokens, policies, created))
    if old is not None and tail:
        # The turns at the end, moved: the same figures at new positions and turn numbers.
        new_start = layout.starts[body_end]
        old_turn = len(old.layout) - tail
        old_start = old.layout.starts[old_turn]
        tokens += old.tokens[old_start:]
        counted_by += list(old.counted_by or ())[old_start:]
        policies += old.policies[old_start:]
        created += [created_base + p / 1000 for p in range(new_start, len(messages))]
        shift, turn_shift = new_start - old_start, body_end - old_turn
        old_groups = (
            [(e.turn, e.positions) for e in old.exchanges]
            if old.exchanges is not None
            else old.exchange_groups or []
        )
        moved = [
            (turn + turn_shift, [p + shift for p in positions])
            for turn, positions in old_groups[
                bisect_left(old_groups, old_turn, key=itemgetter(0)) :
            ]
        ]
        groups.extend(moved)
        if exchange_figures:
            exchanges.extend(_figured(moved, messages, layout, tokens, policies, created))
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
    )
    return index, head


def _can_copy_turns(
    old: ConversationIndex, basis: FigureBasis, original: str | None, exchange_figures: bool
) -> bool:
    """Whether ``old`` holds what copying its turns needs: the builder's figures on the same
    basis, the same original request (it decides a policy), exchanges recorded the same way."""
    recorded = old.exchanges if exchange_figures else old.exchange_groups
    return (
        old.counted_by is not None
        and old.basis == basis
        and old.original == original
        and recorded is not None
    )


def _shared_turns(
    old: ConversationIndex, messages: Sequence[Message], layout: TurnLayout
) -> tuple[int, int]:
    """How many whole turns ``messages`` shares with ``old``'s history at the start, and at the
    end after those: the same message objects, split into the same turns with the same stable
    indices (a turn's figures depend only on its own messages and the original request).

    Splitting is causal (``starts_turn``): turns ending before the first message that differs
    are split alike in both histories, and so is everything after a turn both start with the
    same message, once the rest is the same; only those two boundaries are checked.
    """
    size, old_size = len(messages), len(old.messages)
    old_layout = old.layout
    limit = min(size, old_size)
    same_start = next(compress(count(), map(is_not, messages, old.messages)), limit)
    if same_start == size == old_size:
        return len(layout), 0
    head = max(bisect_right(layout.starts, same_start) - 1, 0)
    # The turn before ``head`` ends at ``layout.starts[head]``: at the first difference at the
    # latest, where the old history must end a turn as well.
    boundary = head and layout.starts[head] == same_start and same_start != old_size
    if boundary and old_layout.turn_starting_at(same_start) is None:
        head -= 1
    same_end = next(
        compress(count(), map(is_not, reversed(messages), reversed(old.messages))), limit
    )
    first_new = bisect_left(layout.starts, size - same_end)
    first_new = max(first_new, head)
    if first_new >= len(layout):
        return head, 0
    shift = size - old_size
    first_old = old_layout.turn_starting_at(layout.starts[first_new] - shift)
    if (
        first_old is None
        or first_old < head
        or len(old_layout) - first_old != len(layout) - first_new
        or layout.indices[first_new:] != old_layout.indices[first_old:]
    ):
        return head, 0
    return head, len(layout) - first_new


def _figured(
    found: Sequence[ExchangeGroup],
    messages: Sequence[Message],
    layout: TurnLayout,
    tokens: Sequence[int],
    policies: Sequence[GCPolicy],
    created: Sequence[float],
) -> Iterator[Exchange]:
    for turn, positions in found:
        yield from turn_exchange_figures(
            turn, [positions], messages, layout, tokens, policies, created
        )


def build_conversation(
    history: Sequence[Message],
    counter: TokenCounter,
    *,
    recorded_figures: Mapping[str, int] | None = None,
    clarifications: frozenset[str] = frozenset(),
    created_base: float = 0.0,
    reuse: SourceEntry | None = None,
) -> SourceEntry:
    """The CONVERSATION entry for a history: one container per turn, one leaf per message.

    The arguments are ``index_conversation``'s; ``reuse`` is an entry this function made (with
    the same arguments) for another history, whose index is reused, and whose tree keeps the
    turns the two share at the start. The entry is remembered with its index, which a
    collection reads instead of the tree.
    """
    known = index_of(reuse)
    index, head = index_conversation(
        history,
        counter,
        recorded_figures=recorded_figures,
        clarifications=clarifications,
        created_base=created_base,
        reuse=known,
    )
    kept = dict(islice(reuse.children.items(), head)) if reuse is not None and head else {}
    conversation = conversation_tree(index, created_base, head, kept)
    remember(conversation, index)
    return conversation


def conversation_tree(
    index: ConversationIndex,
    created_base: float = 0.0,
    first_turn: int = 0,
    kept: Mapping[str, SourceEntry] | None = None,
) -> SourceEntry:
    """The CONVERSATION entry of an index: ``kept`` turns (an earlier tree's, for the turns
    before ``first_turn``), then one container per turn and one leaf per message."""
    messages, layout = index.messages, index.layout
    tokens, created, counted_by = index.tokens, index.created_at, index.counted_by
    assert counted_by is not None, "only an index the builder made says what made each figure"
    children = dict(kept or {})
    for turn in range(first_turn, len(layout)):
        start, end = layout.span(turn)
        turn_index = layout.indices[turn]
        # JAATO's label: ``turn_1`` for the first turn (the key keeps the stable index).
        turn_name = f"turn_{turn_number(turn_index)}" if turn_index is not None else "inserted"
        leaves: dict[str, SourceEntry] = {}
        for position in range(start, end):
            message = messages[position]
            leaves[message.message_id] = construct(
                SourceEntry,
                source=InstructionSource.CONVERSATION,
                tokens=tokens[position],
                gc_policy=index.policies[position],
                label=f"{turn_name} {_role_label(message)}",
                children={},
                metadata={"counted_by": counted_by[position], "role": message.role.value},
                created_at=created[position],
                message_ids=[message.message_id],
            )
        children[turn_key_of(turn_index, messages[start])] = construct(
            SourceEntry,
            source=InstructionSource.CONVERSATION,
            tokens=sum(tokens[start:end]),
            gc_policy=GCPolicy.PARTIAL,
            label=turn_name if turn_index is not None else f"{layout.kinds[turn].value}",
            children=leaves,
            metadata={"turn_index": turn_index, "kind": layout.kinds[turn].value},
            created_at=created[start],
            message_ids=layout.message_ids[start:end],
        )
    return construct(
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
) -> InstructionBudget:
    """Build the budget of a history; sources the history cannot tell come from the recording.

    With no history (a bare budget snapshot) the recorded conversation is all there is, so it is
    kept as recorded. ``reuse`` is ``build_conversation``'s.
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
) -> InstructionBudget:
    """The budget the session's history implies now (after an edit or a collection).

    ``reuse`` is a budget this function made, with the same counter and recording, for a
    session with another history (a shorter one, or the one a collection started from): what
    the two histories share is taken from it rather than worked out again (see
    ``index_conversation``). The result is exactly the budget rebuilt from scratch.
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


def _fresh_counts(session: Session, counter: TokenCounter) -> list[int]:
    """``count_message(m, counter)`` for every message of the history, taken from the budget
    where its builder counted the message with a counter of the same name.

    A drift check follows a load, and the loader's counts used to be found again in the
    counter's content cache; that cache is bounded now, and a long session outgrows it, so
    only the messages whose figure the file recorded are counted again.
    """
    index = index_of(session.budget.get_entry(InstructionSource.CONVERSATION))
    if index is None or index.counted_by is None or not index.describes(session.history):
        return [count_message(message, counter) for message in session.history]
    name = counter.name
    return [
        tokens if counted_by == name else count_message(message, counter)
        for message, tokens, counted_by in zip(
            session.history, index.tokens, index.counted_by, strict=True
        )
    ]


def token_drift(session: Session, counter: TokenCounter | None = None) -> TokenDrift:
    """Compare recorded per-message figures (and the provider's prompt size) with fresh counts."""
    counter = counter or counter_by_name(session.token_counter)
    figures = recorded_message_figures(session.recorded_budget)
    conversation = session.budget.get_entry(InstructionSource.CONVERSATION)
    labels = {
        entry.message_ids[0]: entry.label or ""
        for _, entry in (conversation.walk() if conversation else iter(()))
        if not entry.children and entry.message_ids
    }
    counts = _fresh_counts(session, counter)
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
