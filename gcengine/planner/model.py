"""The planner's values: what goes in (items, model caps, settings) and what comes out (the
plan, one decision per item with its reason, the telemetry record).

All are frozen pydantic models that forbid unknown keys. Building one from bad input raises
``PlannerError`` (a ``GCEngineError``) naming the value and the field, never pydantic's own
error, so callers handle one error family.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_serializer,
    field_validator,
    model_validator,
)

from gcengine.errors import PlannerError

Tokens = Annotated[int, Field(ge=0, strict=True)]


class TTLState(StrEnum):
    """The two TTL states that are not a count of turns left."""

    UNLIMITED = "unlimited"
    NONE_REMAINING = "none_remaining"


TTL = Annotated[int, Field(ge=0, strict=True)] | TTLState | None
"""How many more committed plans an item may be sent in: ``n`` (Limited(n), n >= 1),
``none_remaining``, ``unlimited``, or None (the item never expires). ``0`` reads as
``none_remaining``."""


def ttl_label(ttl: int | TTLState | None) -> str:
    """The TTL as the specification writes it: ``Limited(3)``, ``NoneRemaining``, ``Unlimited``."""
    if ttl is None:
        return "-"
    if ttl is TTLState.UNLIMITED:
        return "Unlimited"
    if ttl is TTLState.NONE_REMAINING:
        return "NoneRemaining"
    return f"Limited({ttl})"


def normalize_ttl(value: int | TTLState | None) -> int | TTLState | None:
    """``Limited(0)`` is ``NoneRemaining``: an item reaches the same state after a commit."""
    return TTLState.NONE_REMAINING if value == 0 else value


class Source(StrEnum):
    SYSTEM = "system"
    PINNED = "pinned"
    CONVERSATION = "conversation"
    RAG = "rag"


class ItemRole(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    NOTE = "note"


class Priority(StrEnum):
    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"

    @property
    def rank(self) -> int:
        """0 for high, 1 for normal, 2 for low: pins are taken in this order."""
        return _PRIORITY_RANKS[self]


_PRIORITY_RANKS = {Priority.HIGH: 0, Priority.NORMAL: 1, Priority.LOW: 2}


class Section(StrEnum):
    """The three budgets optional items compete in (system items belong to none)."""

    SYSTEM_PINNED = "system_pinned"
    CONVERSATION = "conversation"
    RAG = "rag"


class TTLPolicy(StrEnum):
    """What happens to an item whose TTL ran out: left out, reviewed once, or kept."""

    AUTOMATIC = "automatic"
    ASK = "ask"
    UNLIMITED = "unlimited"


class Reason(StrEnum):
    """Why an item is in (the first four) or out (the last two)."""

    REQUIRED = "required"
    PINNED = "pinned"
    RECENT = "recent"
    RELEVANT = "relevant"
    BUDGET = "budget"
    POLICY = "policy"


class Detail(StrEnum):
    """The finer reason under a ``Reason``; together they make a decision's stable code."""

    SYSTEM = "system"
    LATEST_USER_MESSAGE = "latest_user_message"
    CURRENT_TURN = "current_turn"
    STICKY = "sticky"
    TTL_GRACE = "ttl_grace"
    TTL_IGNORED = "ttl_ignored"
    DOES_NOT_FIT = "does_not_fit"
    BEHIND_CUT = "behind_cut"
    REQUIRED_EXCEEDS_BUDGET = "required_exceeds_budget"
    TTL_EXPIRED = "ttl_expired"
    TTL_REVIEW_EXPIRED = "ttl_review_expired"
    ORPHAN_TOOL_RESULT = "orphan_tool_result"
    DANGLING_TOOL_CALL = "dangling_tool_call"
    DUPLICATE = "duplicate"
    NOT_MODEL_VISIBLE = "not_model_visible"


class Value(BaseModel):
    """Base of the planner's values: immutable, unknown keys refused, errors in our family."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="wrap")
    @classmethod
    def _as_planner_error(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            value = handler(data)
        except ValidationError as error:
            raise PlannerError(_first_problem(cls, data, error)) from None
        problem = value.inconsistency()
        if problem is not None:
            raise PlannerError(f"{_what(cls, data)}: {problem}")
        return value

    def inconsistency(self) -> str | None:
        """What is wrong between the fields of a value whose fields are each valid."""
        return None


def _what(model: type[BaseModel], data: Any) -> str:
    what = _WHAT.get(model.__name__, model.__name__)
    if isinstance(data, dict) and isinstance(data.get("id"), str):
        what = f"{what} {data['id']!r}"
    return what


def _first_problem(model: type[BaseModel], data: Any, error: ValidationError) -> str:
    problem = error.errors(include_url=False)[0]
    # Union members add their type tags ("constrained-int") to the location: not for users.
    steps = [s for s in problem["loc"] if isinstance(s, int) or s.isidentifier()]
    where = ".".join(str(step) for step in steps)
    what, message = _what(model, data), str(problem["msg"])
    return f"{what}: {where}: {message}" if where else f"{what}: {message}"


_WHAT = {
    "PlannerItem": "planner item",
    "ModelCaps": "model caps",
    "PlannerConfig": "planner settings",
    "SectionShares": "section shares",
    "Pin": "pin",
}


class PlannerItem(Value):
    """One thing that may go into the prompt.

    ``tokens`` is what the item costs in the prompt, counted beforehand (per-message framing
    included). ``seq`` orders items (higher is newer) and must be unique. ``turn`` groups
    conversation items; a pinned message may carry its turn too, and is then also a member of
    that turn (paid for once). ``tool_calls`` are the call ids an assistant message makes;
    ``tool_call_ids`` the call ids a tool result answers (one result may answer several).
    """

    id: str = Field(min_length=1)
    source: Source
    role: ItemRole
    tokens: Tokens
    seq: int = Field(strict=True)
    turn: int | None = Field(default=None, strict=True)
    priority: Priority = Priority.NORMAL
    ttl: TTL = None
    review_pending: bool = False
    score: float = Field(default=0.0, allow_inf_nan=False)
    tool_calls: tuple[str, ...] = ()
    tool_call_ids: tuple[str, ...] = ()
    model_visible: bool = True
    label: str = ""

    _normalize_ttl = field_validator("ttl")(normalize_ttl)

    def inconsistency(self) -> str | None:
        if self.source is Source.CONVERSATION and self.turn is None:
            return "a conversation item needs its turn"
        if self.source in (Source.SYSTEM, Source.RAG) and self.turn is not None:
            return f"a {self.source.value} item belongs to no turn"
        if self.tool_calls and self.role is not ItemRole.ASSISTANT:
            return "only an assistant message makes tool calls"
        if self.tool_call_ids and self.role is not ItemRole.TOOL:
            return "only a tool message answers tool calls"
        if (self.tool_calls or self.tool_call_ids) and self.source is not Source.CONVERSATION:
            return (
                "a tool call or result can only be sent with its partner, so it cannot be "
                "pinned (or be a system or RAG item) on its own; pin the turn's other messages"
            )
        return None


class ModelCaps(Value):
    """What is known about the model and the request; every figure is optional."""

    model: str | None = None
    context_length: int | None = Field(default=None, ge=0, strict=True)
    provider_max_completion_tokens: int | None = Field(default=None, ge=0, strict=True)
    max_prompt_tokens: int | None = Field(default=None, ge=0, strict=True)
    request_max_tokens: int | None = Field(default=None, ge=1, strict=True)


class SectionShares(Value):
    """Percent of the optional budget each section gets; whole numbers adding up to 100."""

    system_pinned: int = Field(default=15, ge=0, strict=True)
    conversation: int = Field(default=55, ge=0, strict=True)
    rag: int = Field(default=30, ge=0, strict=True)

    def inconsistency(self) -> str | None:
        total = self.system_pinned + self.conversation + self.rag
        return f"the shares must add up to 100, not {total}" if total != 100 else None

    def of(self, section: Section) -> int:
        share: int = getattr(self, section.value)
        return share


class PlannerConfig(Value):
    """The planner's settings. Each field's description is what editors and schemas show, so
    the words live once, beside the setting."""

    default_context_length: int = Field(
        default=32_768, ge=1, strict=True, description="The window L when the model's is not known."
    )
    default_max_completion_tokens: int = Field(
        default=4_096,
        ge=0,
        strict=True,
        description=(
            "The completion reservation C when the request sets no max_tokens (at most the "
            "model's output limit and a quarter of the window)."
        ),
    )
    safety_buffer: int = Field(
        default=512,
        ge=0,
        strict=True,
        description="S: tokens kept free for what counting cannot see. B = L − C − S.",
    )
    shares: SectionShares = Field(
        default=SectionShares(),
        description=(
            "Percent of what the required items leave of B, per section; whole numbers adding "
            "up to 100. A section without candidates gives its share to the others."
        ),
    )
    ttl_policy: TTLPolicy = Field(
        default=TTLPolicy.AUTOMATIC,
        description=(
            "automatic: an item whose TTL ran out is left out; ask: it is kept one more turn "
            "and a review is asked for; unlimited: TTLs are ignored."
        ),
    )
    spillover: bool = Field(
        default=True,
        description="What a section leaves unused goes to the others in a second pass.",
    )
    default_pin_ttl: int = Field(
        default=15, ge=1, strict=True, description="The turns a re-pin grants."
    )


ContextLengthSource = Literal["model", "default"]
CompletionSource = Literal["request", "model", "default", "quarter_window"]
PromptBudgetSource = Literal["window", "max_prompt_tokens"]


class BudgetSources(Value):
    """Where each budget figure came from.

    ``context_length``: the model caps or the configured default. ``max_completion_tokens``:
    the request's own ``max_tokens``, the model's output limit, the configured default, or a
    quarter of the window, whichever was smallest. ``prompt_budget``: the window less the
    reservations, or the endpoint's prompt limit when that is lower.
    """

    context_length: ContextLengthSource
    max_completion_tokens: CompletionSource
    prompt_budget: PromptBudgetSource


class PromptBudget(Value):
    """Step 1: the window L, the completion reservation C, the safety buffer S and the prompt
    budget B = L - C - S (capped by the endpoint's prompt limit). Send the request with
    ``max_tokens = max_completion_tokens`` so the reservation is real."""

    model_context_len: int
    max_completion_tokens: int
    safety_buffer: int
    prompt_budget: int
    sources: BudgetSources


class SectionUsage(Value):
    """One section's share (percent), the tokens allocated to it, the tokens it used (both
    passes) and, of those, the tokens it took from what other sections left (pass 2)."""

    share: int
    allocated: int
    used: int
    spill_in: int


class Sections(Value):
    system_pinned: SectionUsage
    conversation: SectionUsage
    rag: SectionUsage


class PlannedItem(NamedTuple):
    """An item the plan sends. ``atom_id`` names what it was decided with (its turn, or
    itself); ``pass_`` (``pass`` in JSON) is 0 for required items, 1 or 2 for the pass that
    fitted it.

    A plan holds one decision per item, tens of thousands for a long session: decisions are
    named tuples, built several times faster than models, and dumped as objects.
    """

    id: str
    source: Source
    section: Section | None
    role: ItemRole
    priority: Priority
    ttl: int | TTLState | None
    reason: Reason
    detail: Detail | None
    tokens: int
    atom_id: str
    pass_: int
    seq: int
    turn: int | None
    label: str

    @property
    def code(self) -> str:
        """The decision's stable code: ``recent``, ``required/latest_user_message``."""
        return decision_code(self.reason, self.detail)

    @property
    def explanation(self) -> str:
        """The decision in a sentence for the user."""
        return explain_inclusion(self)


class ExcludedItem(NamedTuple):
    """An item the plan leaves out. ``tokens_left`` is the budget that was left when its unit
    was last tried and did not fit (``does_not_fit`` only)."""

    id: str
    source: Source
    section: Section | None
    role: ItemRole
    priority: Priority
    ttl: int | TTLState | None
    reason: Reason
    detail: Detail
    tokens: int
    atom_id: str
    tokens_left: int | None
    seq: int
    turn: int | None
    label: str

    @property
    def code(self) -> str:
        """The decision's stable code: ``budget/does_not_fit``, ``policy/duplicate``."""
        return decision_code(self.reason, self.detail)

    @property
    def explanation(self) -> str:
        """The decision in a sentence for the user."""
        return explain_exclusion(self)


def decision_json(decision: PlannedItem | ExcludedItem) -> dict[str, Any]:
    """A decision as a JSON object: its fields (``pass_`` as ``pass``), code and explanation."""
    data = decision._asdict()
    if "pass_" in data:
        data["pass"] = data.pop("pass_")
    data["code"] = decision.code
    data["explanation"] = decision.explanation
    return data


def _decision_fields(value: Any) -> Any:
    """Read decisions back from their JSON objects (``decision_json``)."""
    if not isinstance(value, list | tuple):
        return value
    read = []
    for entry in value:
        if isinstance(entry, dict):
            entry = {k: v for k, v in entry.items() if k not in ("code", "explanation")}
            if "pass" in entry:
                entry["pass_"] = entry.pop("pass")
        read.append(entry)
    return read


class StateTransition(Value):
    """A change the commit step makes besides TTLs: under the Ask policy, an expired pin that
    was kept for one more turn becomes ``review_pending``."""

    item_id: str
    seq: int
    review_pending: bool = True


class PlanTelemetry(Value):
    """The one log record of a plan. Provider usage, once the request has run, belongs to the
    same ``plan_id``: it is attached to this record, never a second one."""

    plan_id: str
    request_id: str | None
    model: str | None
    model_context_len: int
    max_completion_tokens: int
    safety_buffer: int
    prompt_budget: int
    budget_sources: BudgetSources
    ttl_policy: TTLPolicy
    spillover: bool
    sections: Sections
    included_by_reason: dict[str, int]
    excluded_by_reason: dict[str, int]
    required_tokens: int
    included_tokens: int
    excluded_tokens: int
    over_budget: bool
    overflow_tokens: int
    review_requests: int


class ContextPlan(Value):
    """What goes into the next request, in prompt order, and why for every item.

    ``included`` is the prompt order: system items, pins, RAG parts by rank, then the
    conversation (a pinned message whose turn is sent sits in its turn). ``excluded`` is in
    input order. ``caps`` and ``config`` are the inputs, kept so the plan can be replayed.
    """

    plan_id: str
    model: str | None
    model_context_len: int
    max_completion_tokens: int
    safety_buffer: int
    prompt_budget: int
    budget_sources: BudgetSources
    sections: Sections
    included: tuple[PlannedItem, ...]
    excluded: tuple[ExcludedItem, ...]
    estimated_tokens_total: int
    required_tokens: int
    over_budget: bool
    overflow_tokens: int
    review_requests: tuple[str, ...]
    state_transitions: tuple[StateTransition, ...]
    ttl_policy: TTLPolicy
    spillover: bool
    caps: ModelCaps
    config: PlannerConfig
    telemetry: PlanTelemetry

    _read_decisions = field_validator("included", "excluded", mode="before")(_decision_fields)

    @field_serializer("included", "excluded")
    def _decisions_as_objects(
        self, decisions: tuple[PlannedItem | ExcludedItem, ...]
    ) -> list[dict[str, Any]]:
        return [decision_json(decision) for decision in decisions]

    @property
    def status_line(self) -> str:
        """``ctx tokens: 560 / 1400 (window 2000)``, flagged when required items overflow."""
        line = (
            f"ctx tokens: {self.estimated_tokens_total} / {self.prompt_budget} "
            f"(window {self.model_context_len})"
        )
        return f"{line} over budget +{self.overflow_tokens}" if self.over_budget else line


def decision_code(reason: Reason, detail: Detail | None) -> str:
    return f"{reason.value}/{detail.value}" if detail is not None else reason.value


_INCLUDED_SENTENCES: dict[tuple[Reason, Detail | None], str] = {
    (Reason.REQUIRED, Detail.SYSTEM): "Always sent: system instructions and tool definitions.",
    (Reason.REQUIRED, Detail.LATEST_USER_MESSAGE): "Always sent: the latest user message.",
    (Reason.REQUIRED, Detail.CURRENT_TURN): "Always sent: part of the current turn.",
    (Reason.PINNED, Detail.STICKY): "Always sent: pinned without expiry.",
    (Reason.PINNED, None): "Pinned, and it fits the budget for pins.",
    (Reason.PINNED, Detail.TTL_GRACE): (
        "Its pin expired; it is kept for this turn while you decide whether to re-pin it."
    ),
    (Reason.PINNED, Detail.TTL_IGNORED): (
        "Its pin expired, but the TTL policy keeps expired items."
    ),
    (Reason.RECENT, None): "Part of the most recent history that fits.",
    (Reason.RECENT, Detail.TTL_GRACE): (
        "Part of the most recent history that fits; its TTL ran out and a review was asked for."
    ),
    (Reason.RECENT, Detail.TTL_IGNORED): (
        "Part of the most recent history that fits; its TTL ran out, which the policy ignores."
    ),
    (Reason.RELEVANT, None): "Among the most relevant retrieved parts that fit.",
    (Reason.RELEVANT, Detail.TTL_GRACE): (
        "A relevant retrieved part that fits; its TTL ran out and a review was asked for."
    ),
    (Reason.RELEVANT, Detail.TTL_IGNORED): (
        "A relevant retrieved part that fits; its TTL ran out, which the policy ignores."
    ),
}

_EXCLUDED_SENTENCES: dict[Detail, str] = {
    Detail.REQUIRED_EXCEEDS_BUDGET: (
        "Left out: the items that must be sent already exceed the prompt budget."
    ),
    Detail.TTL_EXPIRED: "Left out: its TTL ran out (TTL policy automatic).",
    Detail.TTL_REVIEW_EXPIRED: (
        "Left out: its TTL ran out and it was not re-pinned after the review request."
    ),
    Detail.ORPHAN_TOOL_RESULT: "Left out: a tool result whose call is not in its turn.",
    Detail.DANGLING_TOOL_CALL: "Left out: a tool call whose result is not in its turn.",
    Detail.DUPLICATE: "Left out: another item with the same id is considered instead.",
    Detail.NOT_MODEL_VISIBLE: "Left out: it is not meant for the model.",
}


def explain_inclusion(item: PlannedItem) -> str:
    sentence = _INCLUDED_SENTENCES.get((item.reason, item.detail), item.reason.value)
    if item.pass_ == 2:
        sentence += " It used budget another section left unused."
    return sentence


# What each section's budget is for, as a sentence names it.
_SECTION_WORDS: dict[Section, str] = {
    Section.SYSTEM_PINNED: "system items and pins",
    Section.CONVERSATION: "the conversation",
    Section.RAG: "retrieved parts",
}


def explain_exclusion(item: ExcludedItem) -> str:
    if item.detail is Detail.DOES_NOT_FIT:
        unit = "its turn" if item.section is Section.CONVERSATION else "it"
        if item.tokens_left is None:
            return f"Left out: {unit} did not fit in the budget."
        # What was still free when the unit was tried: the figure says how far it was from fitting.
        left = item.tokens_left
        budget = (
            f"the budget for {_SECTION_WORDS[item.section]}"
            if item.section is not None
            else "the prompt budget"
        )
        verb = "was" if left == 1 else "were"
        return (
            f"Left out: {unit} did not fit: when it was tried, only {left:,} "
            f"token{'' if left == 1 else 's'} of {budget} {verb} still free."
        )
    if item.detail is Detail.BEHIND_CUT:
        if item.section is Section.CONVERSATION:
            return (
                "Left out: a more recent turn did not fit, and sending an older one would "
                "leave a gap in the history."
            )
        return "Left out: a pin ranked above it did not fit, and pins are taken in rank order."
    return _EXCLUDED_SENTENCES.get(item.detail, item.code)
