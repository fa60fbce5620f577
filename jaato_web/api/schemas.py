"""API-only shapes: listings, receipts and pages. Engine values (GCResult, the gc.json) are
passed through as the engine dumps them rather than re-declared here."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field, ModelWrapValidatorHandler, model_validator

import gcengine
from jaato_web.dashboard import presenters, services, storage
from jaato_web.dashboard.models import GCRun, Replay
from jaato_web.http import MAX_ID

# Whole numbers a request may carry. The database stores them in 64 bits, so a larger one
# names nothing and is refused with the field's name rather than failing in a query.
Id = Annotated[int, Field(ge=1, le=MAX_ID)]
Index = Annotated[int, Field(ge=0, le=MAX_ID)]
PageNumber = Annotated[int, Field(ge=1, le=MAX_ID)]
# A stored turn's index is a 32-bit column (``SessionTurn.turn_index``): no session can have a
# turn beyond it, so a pin there, even in a policy for every session, would keep nothing.
TurnIndex = Annotated[int, Field(ge=0, le=2**31 - 1)]


class ObjectIn(Schema):
    """A request body that must be a JSON object: ninja would otherwise read the fields of any
    value given (a list has no ``base_version``, so ``[]`` passed as "nothing given"). A field
    it does not declare is refused (422 naming it) rather than ignored: a misspelt or outdated
    field would otherwise change nothing and answer success."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="wrap")
    @classmethod
    def _an_object(cls, value: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        if not isinstance(value, dict | cls):
            raise ValueError(f"the body must be a JSON object, not {type(value).__name__}")
        return handler(value)


class Problem(Schema):
    """Every error answer: a message, plus where when the engine knows (JSON path or key)."""

    detail: str
    reason: str | None = None
    json_path: str | None = None
    key: str | None = None


class SessionOut(Schema):
    id: int
    label: str
    sha256: str
    size_bytes: int
    source_format: str
    format_version: str
    model_name: str
    context_limit: int
    context_limit_origin: str
    turn_count: int
    message_count: int
    total_tokens: int
    locked_tokens: int
    preservable_tokens: int
    eligible_tokens: int
    utilization_percent: float
    token_counter: str
    created_at: datetime
    archived_at: datetime | None = None
    run_count: int | None = None


class SessionDetailOut(SessionOut):
    """``agent_state``: what the agent's record holds besides the conversation: an
    interrupted turn and its waiting calls, the compactions it performed (when, trigger,
    recorded tokens before and after, what they replaced, the summary; ``after_call``: the
    calls before it; ``tokens_after_source``: ``file``, or ``first call after`` where the file
    records no size after it), tool calls and results that lost their other half, failed tool
    results, sub-agents, plugin states, and each model call the file recorded (``calls``:
    [call number, turn number, input, uncached, cache read, cache write, output]; a session
    stored before calls were kept has ``usage``: [turn number, prompt tokens] instead)."""

    drift: dict[str, Any]
    warnings: list[str]
    agent_state: dict[str, Any]


class IngestJobOut(Schema):
    id: int
    filename: str
    status: str
    progress: str
    error: str
    error_path: str
    session_id: int | None


class UploadOut(Schema):
    """``session`` when stored (or already stored: ``duplicate``), ``job`` when queued."""

    filename: str
    duplicate: bool
    session: SessionOut | None = None
    job: IngestJobOut | None = None
    gc_skipped_because: str = Field(
        "",
        description="Why no GC policy runs on the session this upload stores, and how to set "
        "one; empty when the project's default policy runs on it (and for a duplicate)",
    )


class UploadResultOut(Schema):
    """One file of an upload of several: its state, HTTP-like status, and what it became or
    why it was refused (``reason``, and ``json_path`` for a malformed file)."""

    filename: str
    state: str
    status: int
    session: SessionOut | None = None
    job: IngestJobOut | None = None
    reason: str = ""
    json_path: str = ""


class UploadBatchOut(Schema):
    results: list[UploadResultOut]
    taken: int
    refused: int
    gc_skipped_because: str = Field(
        "",
        description="Why no GC policy runs on the sessions this upload stores, and how to set "
        "one; empty when the project's default policy runs on them (or none was stored)",
    )


class Paged(Schema):
    page: int
    pages: int
    count: int


class SessionPage(Paged):
    items: list[SessionOut]


class NodeOut(Schema):
    path: str
    parent_path: str
    key: str
    label: str
    depth: int
    policy: str
    indicator: str
    tokens: int
    child_count: int


class NodePage(Schema):
    parent_path: str
    offset: int
    total: int
    items: list[NodeOut]


class TurnOut(Schema):
    position: int
    turn_index: int | None
    kind: str
    tokens: int
    policy: str
    tool_calls: int
    preview: str
    messages: list[dict[str, Any]]


class TurnPage(Paged):
    items: list[TurnOut]


class RunIn(ObjectIn):
    """A stored policy version, or a gc.json as is; ``plugin`` overrides its strategy."""

    policy_version_id: Id | None = None
    config: dict[str, Any] | None = None
    plugin: str | None = None
    compaction_id: str = Field(
        default="",
        max_length=200,
        description="collect the history just before this compaction the agent performed",
    )
    context_limit: int | None = Field(
        default=None,
        ge=1_000,
        le=100_000_000,
        description="a context window to use instead of the session's own (what if it were 8k?)",
    )


class RunOut(Schema):
    id: int
    session_id: int
    policy_version_id: int | None
    plugin: str
    trigger: str
    status: str
    progress: str
    error: str
    config: dict[str, Any]
    context_limit: int | None
    compaction_id: str = ""
    tokens_before: int | None
    tokens_after: int | None
    tokens_freed: int | None
    items_collected: int | None
    turns_after: int | None
    created_at: datetime
    finished_at: datetime | None
    archived_at: datetime | None = None


class GateFailureOut(Schema):
    anchor_class: str
    recall: float
    minimum: float


class RunDetailOut(RunOut):
    result: dict[str, Any] | None
    anchor_retention: gcengine.AnchorRetention | None = Field(
        description="What the run kept in view of its context before's anchors; null while "
        "``retention_pending``, for a run not finished, or stored before runs were scored"
    )
    retention_pending: bool = Field(
        description="The run is done and its ledger complete; its anchor retention is being "
        "scored (poll until false)"
    )
    gate_failures: list[GateFailureOut] = Field(
        description="The classes under the project's retention gates"
    )

    @staticmethod
    def resolve_anchor_retention(run: GCRun) -> gcengine.AnchorRetention | None:
        return storage.retention_read(run.retention)

    @staticmethod
    def resolve_gate_failures(run: GCRun) -> list[gcengine.GateFailure]:
        retention = storage.retention_read(run.retention)
        if retention is None:
            return []
        return gcengine.gate_failures(retention, services.project_gates(run.session.project))


class RemovalOut(Schema):
    """A ledger item; a reachability run also says whether anything kept refers to it, its
    score, why it went (``explanation``) and whether it was ``stashed`` or ``deleted``.
    ``turn_number`` is the turn as people read it (from 1), ``turn_index`` its stable index."""

    seq: int
    reason: str
    source: str
    child_key: str
    turn_number: int | None
    turn_index: int | None
    turn_position: int | None
    tokens_freed: int
    message_ids: list[str]
    reachable: bool | None = None
    score: float | None = None
    explanation: str = ""
    action: str = ""

    @staticmethod
    def resolve_turn_number(removal: Any) -> int | None:
        return presenters.turn_number_of(removal.turn_index)


class RemovalPage(Paged):
    items: list[RemovalOut]


class StashedOut(Schema):
    """A segment a reachability run stashed: ``segment_id`` is what a restore names."""

    segment_id: str
    kind: str
    turn_index: int | None
    turn_number: int | None
    tokens: int
    score: float
    reachable: bool
    reason: str
    anchors: list[str]

    @staticmethod
    def resolve_turn_number(segment: Any) -> int | None:
        return presenters.turn_number_of(segment.turn_index)


class StashPage(Paged):
    items: list[StashedOut]


class KeptOut(Schema):
    """A segment a reachability run kept, and why."""

    segment_id: str
    kind: str
    turn_index: int | None
    turn_number: int | None
    tokens: int
    score: float
    reachable: bool
    root: bool
    reason: str

    @staticmethod
    def resolve_turn_number(segment: Any) -> int | None:
        return presenters.turn_number_of(segment.turn_index)


class KeptPage(Paged):
    items: list[KeptOut]


class StashRestoreIn(ObjectIn):
    """The stashed segments to put back, by ``segment_id``."""

    segment_ids: list[str] = Field(max_length=100_000)


class RestoreOut(Schema):
    """The session a restore made (or found: the same segments restored before)."""

    id: int
    label: str
    derived_from_run: int | None = Field(validation_alias="derived_from_run_id")
    restored_segments: list[str]
    turn_count: int
    total_tokens: int


class ReferenceOut(Schema):
    source_id: str
    source_label: str
    target_id: str
    target_label: str
    how: str


class GraphSegmentOut(Schema):
    segment_id: str
    label: str
    kind: str
    tokens: int
    reachable: bool
    root: bool


class TurnReferencesOut(Schema):
    """The reference graph around a turn: its segments, what they refer to, what refers to
    them (an anchor as written, ``reply`` or ``summary`` says how)."""

    turn_index: int
    turn_number: int
    segments: list[GraphSegmentOut]
    outgoing: list[ReferenceOut]
    incoming: list[ReferenceOut]


class SummaryOut(Schema):
    number: int | None
    message_id: str
    text: str
    tokens: int
    covers_turns: list[int | None]
    covers_summary: Any
    summarizer: str
    written_by_run: bool
    inserted_before_position: int | None


class DiffTurnOut(Schema):
    position: int
    turn_index: int | None
    state: str
    removed_message_ids: list[str]
    summaries_inserted_before: list[str]


class DiffPage(Paged):
    items: list[DiffTurnOut]


class ReplayIn(ObjectIn):
    policy_version_id: Id | None = None
    config: dict[str, Any] | None = None
    compaction_id: str = Field(
        default="",
        max_length=200,
        description="collect the history just before this compaction the agent performed",
    )
    context_limit: int | None = Field(
        default=None,
        ge=1_000,
        le=100_000_000,
        description="a context window to use instead of the session's own (what if it were 8k?)",
    )


class PromptCacheOut(Schema):
    model: str = Field(description="The session's model, as the price table was searched")
    price: gcengine.ModelPrice | None = Field(description="The entry that matched, if any")
    policy: gcengine.PromptCacheUsage
    without_gc: gcengine.PromptCacheUsage
    dollars: float | None = Field(description="Input cost under the policy, cache counted")
    dollars_without_gc: float | None


class ReplayOut(Schema):
    id: int
    session_id: int
    policy_version_id: int | None = Field(
        description="The stored version replayed, or null for a pasted gc.json"
    )
    policy_label: str = Field(
        description="That version as named when replayed ('Budget 80/60 v3'); empty when pasted"
    )
    status: str
    progress: str
    error: str
    config: dict[str, Any]
    context_limit: int | None
    compaction_id: str
    series: dict[str, Any] | None
    anchor_retention: gcengine.AnchorRetention | None = Field(
        description="Every collection of the replay pooled, each on its whole context; null "
        "while ``retention_pending``, when ``unscored_because`` says why, or for a replay drawn "
        "before replays were scored"
    )
    retention_pending: bool = Field(
        description="The replay is done and its series complete but for each collection's "
        "anchor retention, which is being scored (poll until false)"
    )
    unscored_because: str = Field(
        description="Why its collections were not scored (its worker stopped, or scoring "
        "failed); empty otherwise. Asking for the replay again replays and scores it."
    )
    prompt_cache: PromptCacheOut | None = Field(
        description="The replay's requests billed with the prompt cache, beside the same "
        "replay without GC, priced with the project's table"
    )

    @staticmethod
    def resolve_anchor_retention(replay: Replay) -> gcengine.AnchorRetention | None:
        if replay.series is None:
            return None
        return presenters.replay_retention(replay.series)

    @staticmethod
    def resolve_prompt_cache(replay: Replay) -> dict[str, Any] | None:
        if replay.series is None:
            return None
        prices = services.project_prices(replay.session.project)
        cost = presenters.cost_view(replay.series, prices, replay.session.model_name)
        if cost is None:
            return None
        return {
            "model": cost.model,
            "price": cost.price,
            "policy": cost.policy,
            "without_gc": cost.without_gc,
            "dollars": cost.dollars,
            "dollars_without_gc": cost.dollars_without_gc,
        }


Kind = Literal["gc", "planner"]
"""What a policy holds: a gc.json, or the context planner's settings."""


class PolicyIn(ObjectIn):
    """A new policy from a gc.json object in either shape (an import, or a fresh policy), or
    with ``kind`` "planner" a planner config (``gcengine.PlannerConfig`` settings)."""

    name: str
    config: dict[str, Any]
    message: str = ""
    kind: Kind = "gc"


class PolicyVersionIn(ObjectIn):
    """``base_version`` is the version the change was made from; a newer one stored since
    makes the save fail with 409 and the current version, so nothing is overwritten."""

    config: dict[str, Any]
    base_version: Index
    message: str = ""


class PolicyVersionOut(Schema):
    id: int
    number: int
    config: dict[str, Any]
    message: str
    author: str
    created_at: datetime


class PolicyOut(Schema):
    id: int
    project: int
    kind: Kind = "gc"
    name: str
    description: str
    is_default: bool
    archived_at: datetime | None = None
    latest: PolicyVersionOut | None


class RestoreIn(ObjectIn):
    """``base_version``: the newest version the client has seen (409 if a newer one exists);
    leave it out to restore on top of whatever is newest."""

    base_version: Index | None = None


class DefaultOut(Schema):
    policy_id: int
    is_default: bool


class PolicyPinsIn(ObjectIn):
    """Pins to add and take away in a policy, for every session it runs on, saved as one
    version with ``message`` (or one listing the change). With ``session_id`` every turn and
    message pinned must exist in that session."""

    pin_turn_indices: list[TurnIndex] = Field(default_factory=list, max_length=10_000)
    unpin_turn_indices: list[TurnIndex] = Field(default_factory=list, max_length=10_000)
    pin_message_ids: list[str] = Field(default_factory=list, max_length=10_000)
    unpin_message_ids: list[str] = Field(default_factory=list, max_length=10_000)
    message: str = Field(default="", max_length=500)
    session_id: Id | None = None


class PolicyPinsOut(Schema):
    pinned_turn_indices: list[int]
    pinned_message_ids: list[str]
    version: PolicyVersionOut


class SessionPinIn(ObjectIn):
    """Pin (or unpin) one turn, by stable index, or one message of this session only;
    ``pinned`` null toggles."""

    turn_index: TurnIndex | None = None
    message_id: str | None = Field(default=None, max_length=200)
    pinned: bool | None = None


class SessionPinsOut(Schema):
    """What this session keeps in every run, whatever the policy."""

    pinned_turn_indices: list[int]
    pinned_message_ids: list[str]


class ArchiveIn(ObjectIn):
    archived: bool = True


class ArchiveOut(Schema):
    id: int
    archived_at: datetime | None


class ConfigRef(ObjectIn):
    """A stored policy version, or a gc.json object as is (exactly one)."""

    policy_version_id: Id | None = None
    config: dict[str, Any] | None = None


class PreviewIn(ConfigRef):
    session_id: Id
    replay: bool = False
    context_limit: int | None = Field(
        default=None,
        ge=1_000,
        le=100_000_000,
        description="a context window to use instead of the session's own (what if it were 8k?)",
    )


class CompareIn(ObjectIn):
    session_id: Id
    a: ConfigRef
    b: ConfigRef
    replay: bool = False
    context_limit: int | None = Field(
        default=None,
        ge=1_000,
        le=100_000_000,
        description="a context window to use instead of the session's own (what if it were 8k?)",
    )


class ReplayFiguresOut(Schema):
    checks: int
    events: int
    collections: int
    failures: int
    items: int
    tokens_freed: int
    peak_percent: float
    series: dict[str, Any]


class LedgerItemOut(Schema):
    reason: str
    source: str
    child_key: str | None
    turn_number: int | None
    turn_index: int | None
    tokens_freed: int
    message_ids: list[str]


class PreviewOut(Schema):
    """What the policy would do to the session now; nothing is stored."""

    session_id: int
    config: dict[str, Any]
    context_limit: int
    tokens_before: int
    tokens_after: int
    tokens_freed: int
    percent_before: float
    percent_after: float
    would_trigger: bool
    trigger_reason: str | None
    success: bool
    error: str | None
    notification: str | None
    notes: list[str]
    removed_turns: list[int]
    ledger: list[LedgerItemOut]
    elapsed_ms: float
    replay: ReplayFiguresOut | None = None
    anchor_retention: gcengine.AnchorRetention | None = None


class ChangeOut(Schema):
    key: str
    a: Any
    b: Any


class CompareOut(Schema):
    a: PreviewOut
    b: PreviewOut
    only_a_turns: list[int]
    only_b_turns: list[int]
    both_turns: list[int]
    only_a_message_ids: list[str]
    only_b_message_ids: list[str]
    both_message_ids: list[str]
    differences: list[ChangeOut]


class VersionCompareOut(Schema):
    a: PolicyVersionOut
    b: PolicyVersionOut
    differences: list[ChangeOut]


class ApplyIn(ObjectIn):
    """Run version ``version`` (its number; default the newest) on each session."""

    session_ids: list[Id] = Field(max_length=10_000)
    version: Index | None = None


class ApplyOut(Schema):
    total: int
    done: int
    failed: int
    pending: int
    runs: list[RunOut]


# --- The context planner ---------------------------------------------------------------------


class PlannerConfigRef(ObjectIn):
    """The planner settings: a stored planner config's version, or settings as is (at most
    one; neither: the engine's defaults)."""

    planner_config_version_id: Id | None = None
    config: dict[str, Any] | None = Field(
        default=None, description="gcengine.PlannerConfig settings; what it leaves out is default"
    )
    decisions: bool = Field(
        default=True,
        description="answer the plan with every decision (false: the status line and telemetry)",
    )


class SessionPlanIn(PlannerConfigRef):
    """What to plan a stored session for; every figure left out is the session's own (its
    model, and its window when the file states one) or the model table's."""

    model: str | None = Field(default=None, max_length=200)
    context_length: int | None = Field(default=None, ge=1, le=100_000_000)
    max_completion_tokens: int | None = Field(default=None, ge=1, le=100_000_000)
    max_prompt_tokens: int | None = Field(default=None, ge=1, le=100_000_000)
    request_max_tokens: int | None = Field(default=None, ge=1, le=100_000_000)
    pin_priority: Literal["high", "normal", "low"] = "normal"
    pin_ttl: Annotated[int, Field(ge=1)] | Literal["unlimited"] | None = Field(
        default=None,
        description="turns each of the session's pins is sent for; null never expires",
    )


class InlinePlanIn(PlannerConfigRef):
    """Items to plan as they are, for a model (its caps from the model table) and/or caps."""

    items: list[gcengine.PlannerItem]
    model: str | None = Field(default=None, max_length=200)
    caps: gcengine.ModelCaps | None = None
    plan_id: str | None = Field(default=None, max_length=200)
    request_id: str | None = Field(default=None, max_length=200)


class PlanOut(Schema):
    """A plan: its status line, its telemetry record, and (unless ``decisions`` is false) the
    whole plan with a code and an explanation for every item, in and out."""

    status_line: str
    telemetry: gcengine.PlanTelemetry
    plan: gcengine.ContextPlan | None
    pins: list[gcengine.Pin] = Field(description="the session's pins as planned")
    notes: list[str] = Field(description="pins left aside, and why")
    elapsed_ms: float
