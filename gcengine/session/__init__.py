"""A loaded agent session, and the budget the engine builds for it.

``model``: the ``Session`` value and what it holds; ``figures``: what each message counts for
in the budget (its figure, policy and time); ``index``: the conversation laid out flat;
``build``: the budget built from them; ``calibration``: the provider's counting measured from
the recorded calls; ``checks``: what the session's own records say is off.
Everything is importable from ``gcengine.session`` itself.
"""

from gcengine.session.build import (
    build_budget,
    build_conversation,
    conversation_tree,
    history_before,
    rebuild_budget,
    turn_name,
)
from gcengine.session.calibration import (
    LocalEstimate,
    ProviderCounting,
    local_estimate,
    measure_provider_counting,
)
from gcengine.session.calls import CallTimeline, CompactionOnTimeline, ModelCall, call_timeline
from gcengine.session.checks import (
    MessageDrift,
    TokenDrift,
    message_counts,
    token_drift,
    tool_pair_report,
)
from gcengine.session.figures import (
    CLARIFICATION_TURN_TYPES,
    CLOSING_ANSWER_KEY,
    RECORDED,
    closing_answer_ids,
    counted_figures,
    is_agent_summary,
    is_request,
    latest_request,
    message_figure,
    original_request,
    recorded_clarifications,
    recorded_message_figures,
    turn_key,
    turn_time,
    without_needless_marks,
)
from gcengine.session.index import Copied, index_conversation
from gcengine.session.model import (
    ContextLimitOrigin,
    InterruptedTurn,
    ObservedCompaction,
    RecordedUsage,
    Session,
    SourceFormat,
    Subagent,
    SubagentRecord,
    SystemInstruction,
    TurnAccounting,
    iso_to_epoch,
    user_inputs_shared,
)

__all__ = [
    "CLARIFICATION_TURN_TYPES",
    "CLOSING_ANSWER_KEY",
    "RECORDED",
    "CallTimeline",
    "CompactionOnTimeline",
    "ContextLimitOrigin",
    "Copied",
    "InterruptedTurn",
    "LocalEstimate",
    "MessageDrift",
    "ModelCall",
    "ObservedCompaction",
    "ProviderCounting",
    "RecordedUsage",
    "Session",
    "SourceFormat",
    "Subagent",
    "SubagentRecord",
    "SystemInstruction",
    "TokenDrift",
    "TurnAccounting",
    "build_budget",
    "build_conversation",
    "call_timeline",
    "closing_answer_ids",
    "conversation_tree",
    "counted_figures",
    "history_before",
    "index_conversation",
    "is_agent_summary",
    "is_request",
    "iso_to_epoch",
    "latest_request",
    "local_estimate",
    "measure_provider_counting",
    "message_counts",
    "message_figure",
    "original_request",
    "rebuild_budget",
    "recorded_clarifications",
    "recorded_message_figures",
    "token_drift",
    "tool_pair_report",
    "turn_key",
    "turn_name",
    "turn_time",
    "user_inputs_shared",
    "without_needless_marks",
]
