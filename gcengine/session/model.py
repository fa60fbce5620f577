"""A loaded agent session: whatever the file format, a session ends up as one ``Session``.

It holds the history, the budget, what the file recorded about tokens, and everything else the
file carried (kept so that writing it back loses nothing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from itertools import chain, count, repeat
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, computed_field, field_serializer

from gcengine.budget import (
    InstructionBudget,
)
from gcengine.conversation import (
    history_layout,
)
from gcengine.media import media_cost
from gcengine.messages import (
    FunctionCall,
    Message,
    Role,
    Turn,
    split_into_turns,
)
from gcengine.tokens import (
    TokenCounting,
    counter_by_name,
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
    INFERRED = "inferred"  # from what the file shows: a context above the model's window, or
    # the agent's own auto-compactions (``gcengine.context_limits.choose_window``)
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
    model: str | None = Field(
        default=None, description="the model that answered, where the file names it per call"
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
    context_limit_source: str | None = Field(
        default=None, description="why the window is what it is, in words (None: not recorded)"
    )
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
    unseen_overhead: int | None = Field(
        default=None,
        ge=0,
        description="prompt tokens the file does not hold (system prompt, tool definitions, "
        "injected context), measured from its recorded usage; a locked budget entry",
    )
    context_overheads: list[int | None] = Field(
        default_factory=list,
        description="the unseen overhead of each context the file held, in order: the one "
        "each compaction replaced, then the history's (None: not measured); empty when none was",
    )
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
