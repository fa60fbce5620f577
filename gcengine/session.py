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
* summaries written by a collector: PRESERVABLE; everything else: EPHEMERAL.

A message's figure is the one the file recorded for it when that recording covers everything
the message sends, else the counter's (JAATO's own figures leave out function calls and media).
Each leaf says which in ``metadata["counted_by"]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

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
    Figure,
    FigureBasis,
    TrafficMember,
    budget_index,
    index_of,
    turn_exchange_figures,
    turn_exchanges,
    turn_key_of,
)
from gcengine.messages import (
    FunctionCall,
    Message,
    MessageKind,
    PartType,
    Role,
    Turn,
    split_into_turns,
    tool_traffic,
    turn_layout,
)
from gcengine.tokens import TokenCounter, count_message, counter_by_name, load_counter


class SourceFormat(StrEnum):
    JAATO = "jaato"
    JAATO_BUDGET_SNAPSHOT = "jaato_budget_snapshot"
    OPENAI_CHAT = "openai_chat"
    OPENAI_RESPONSES = "openai_responses"
    ANTHROPIC_MESSAGES = "anthropic_messages"


class ContextLimitOrigin(StrEnum):
    FILE = "file"
    MODEL = "model"
    DEFAULT = "default"


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
    metadata: dict[str, Any] = Field(default_factory=dict)
    extra: dict[str, Any] = Field(
        default_factory=dict, description="other top-level fields of the file, kept verbatim"
    )
    token_counter: str = Field(description="the counter that made the budget's counted figures")
    warnings: list[str] = Field(default_factory=list)

    def turns(self) -> list[Turn]:
        return split_into_turns(self.history)


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


def recorded_message_figures(recorded: InstructionBudget | None) -> dict[str, int]:
    """Per-message token figures a recorded budget holds (leaves that name exactly one message)."""
    if recorded is None:
        return {}
    conversation = recorded.get_entry(InstructionSource.CONVERSATION)
    if conversation is None:
        return {}
    return {
        entry.message_ids[0]: entry.tokens
        for _, entry in conversation.walk()
        if not entry.children and len(entry.message_ids) == 1
    }


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


def _message_policy(message: Message, original: str | None, closing: set[str]) -> GCPolicy:
    if message.message_id == original:
        return GCPolicy.LOCKED
    if message.kind is MessageKind.SUMMARY or message.message_id in closing:
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
    created_base: float = 0.0,
    figure: Figure | None = None,
    built: tuple[ConversationIndex, int] | None = None,
    reuse: ConversationIndex | None = None,
) -> tuple[ConversationIndex, int]:
    """The conversation of a history laid out flat, without building its budget tree, and the
    first turn worked out here (the ones before it were ``built``'s).

    Each message's figure is ``message_figure`` with ``counter`` and ``recorded_figures``, or
    what ``figure`` gives: a replay, which lays out windows of the same messages at every
    collection, passes one that works each out once. ``reuse`` is an earlier index whose
    figures (for the messages it holds) are taken instead of working them out.

    ``built`` is an index this function made, with the same arguments, for the first messages
    of ``history``, and how many. Its turns are kept when nothing later can change them (a turn
    starts there, and the session's original request is among them); only the rest are read.
    """
    recorded = recorded_figures or {}
    basis: FigureBasis = (counter.name, recorded)
    if figure is None:

        def figure(message: Message) -> tuple[int, str]:
            return message_figure(message, counter, recorded)

    if reuse is not None:
        figure = reuse.reusing(basis, figure)
    messages = list(history)
    layout = turn_layout(messages)
    request = original_request(messages)
    original = messages[request].message_id if request is not None else None
    tokens: list[int] = []
    counted_by: list[str] = []
    policies: list[GCPolicy] = []
    created: list[float] = []
    exchanges: list[Exchange] = []
    first_turn = 0
    if built is not None:
        known, covered = built
        resume = layout.turn_starting_at(covered)
        if (
            resume is not None
            and request is not None
            and request < covered
            and known.basis == basis
            and known.counted_by is not None
            and known.exchanges is not None
            and known.describes(messages[:covered])
        ):
            tokens, counted_by = list(known.tokens), list(known.counted_by)
            policies, created = list(known.policies), list(known.created_at)
            exchanges = list(known.exchanges)
            first_turn = resume
    for turn in range(first_turn, len(layout)):
        start, end = layout.span(turn)
        turn_messages = messages[start:end]
        closing = _closing_answer_ids(turn_messages)
        traffic: list[TrafficMember] = []
        for position, message in enumerate(turn_messages, start):
            message_tokens, made_by = figure(message)
            tokens.append(message_tokens)
            counted_by.append(made_by)
            policies.append(_message_policy(message, original, closing))
            created.append(created_base + position / 1000)
            made = tool_traffic(message)
            if made is not None:
                traffic.append((position, *made))
        if traffic:
            groups = turn_exchanges(traffic)
            exchanges.extend(
                turn_exchange_figures(turn, groups, messages, layout, tokens, policies, created)
            )
    index = ConversationIndex(
        messages, layout, tokens, policies, created, counted_by, basis, exchanges=exchanges
    )
    return index, first_turn


def build_conversation(
    history: Sequence[Message],
    counter: TokenCounter,
    *,
    recorded_figures: Mapping[str, int] | None = None,
    created_base: float = 0.0,
    built: tuple[SourceEntry, int] | None = None,
    reuse: ConversationIndex | None = None,
) -> SourceEntry:
    """The CONVERSATION entry for a history: one container per turn, one leaf per message.

    The arguments are ``index_conversation``'s; ``built`` is an entry this function made, whose
    turns are kept where its index's are. The entry is remembered with its index, which a
    collection reads instead of the tree.
    """
    known = index_of(built[0]) if built is not None else None
    index, first_turn = index_conversation(
        history,
        counter,
        recorded_figures=recorded_figures,
        created_base=created_base,
        built=(known, built[1]) if built is not None and known is not None else None,
        reuse=reuse,
    )
    kept = built[0].children if built is not None and first_turn else {}
    conversation = conversation_tree(index, created_base, first_turn, kept)
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
        turn_name = f"turn_{turn_index}" if turn_index is not None else "inserted"
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
    built: tuple[SourceEntry, int] | None = None,
    reuse: ConversationIndex | None = None,
) -> InstructionBudget:
    """Build the budget of a history; sources the history cannot tell come from the recording.

    With no history (a bare budget snapshot) the recorded conversation is all there is, so it is
    kept as recorded. ``built`` and ``reuse`` are ``build_conversation``'s.
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
            created_base=created_base,
            built=built,
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
    built: tuple[InstructionBudget, int] | None = None,
    reuse: InstructionBudget | None = None,
) -> InstructionBudget:
    """The budget the session's history implies now (after an edit or a collection).

    ``built`` is a budget this function
    made, with the same arguments, for a session that differed only in holding the first so
    many messages of this history; its conversation's turns are kept where they cannot change
    (see ``build_conversation``). ``reuse`` is a budget this function made for a session with
    the same counter and recording: the figures of the messages the two share are taken from
    it rather than worked out again (a collection keeps most of a history).
    """
    thinking = [t.thinking for t in session.turn_accounting if t.thinking is not None]
    conversation = None
    if built is not None:
        entry = built[0].get_entry(InstructionSource.CONVERSATION)
        conversation = (entry, built[1]) if entry is not None else None
    return build_budget(
        session.history,
        counter,
        session_id=session.session_id,
        context_limit=session.context_limit,
        system_instructions=session.system_instructions,
        recorded_budget=session.recorded_budget,
        thinking_tokens=sum(thinking) if thinking else None,
        created_base=iso_to_epoch(session.created_at) or 0.0,
        built=conversation,
        reuse=budget_index(reuse),
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
    drifts = [
        MessageDrift(
            message_id=message.message_id,
            label=labels.get(message.message_id, ""),
            recorded=figures[message.message_id],
            counted=count_message(message, counter),
        )
        for message in session.history
        if message.message_id in figures
    ]
    counted_context = sum(count_message(m, counter) for m in session.history) + sum(
        counter.count(i.text) for i in session.system_instructions
    )
    return TokenDrift(
        counter=counter.name,
        messages=drifts,
        recorded_total=sum(d.recorded for d in drifts),
        counted_total=sum(d.counted for d in drifts),
        provider_prompt_tokens=session.recorded_prompt_tokens,
        counted_context_tokens=counted_context,
    )
