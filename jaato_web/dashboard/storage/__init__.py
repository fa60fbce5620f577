"""Engine values turned into what the dashboard stores, and read back.

A session is stored flat, once, when it is uploaded (and a run's results when it finishes), so
pages page through rows instead of walking a 26,000-leaf tree per request. Its history is kept
once, turn by turn: one ``SessionTurn`` row per turn holds each of that turn's messages' figure
and the messages as pydantic writes them, compressed (``turn_row_batches``); the history view is
made from a page of them (``StoredMessage``), and reopening the session validates them straight
from their bytes and counts nothing again (``gcengine.session_from_record``). The budget tree is
stored as ``BudgetNode`` rows only above the turns: the conversation's turns and messages are
drawn from the turn rows that already hold them, and a run's turns from the session's, except
the few it changed (``after_turns``). A replay is stored as compact step tuples. Writers (the
services) and readers (the presenters) share these shapes, so a field renamed on one side is a
type error on the other.

One module per concern, every name used outside the package exported here: ``packing`` (how
anything is compressed, and an upload's original), ``turns`` (the turn rows and the history
view), ``budget`` (the tree above the turns, and a run's turns after it), ``documents`` (a
session's document, the session a run left, a run's stash) and ``records`` (JSON kept on rows:
retention, a replay's series, drift, the agent's state); and ``text``, the fields that keep text
holding NUL in columns PostgreSQL would refuse it in.
"""

from jaato_web.dashboard.storage.budget import (
    CONVERSATION,
    AfterTurn,
    NodeRow,
    after_turns,
    budget_rows,
)
from jaato_web.dashboard.storage.documents import (
    DOCUMENT_FORMAT,
    pack_session,
    pack_session_after,
    pack_stash,
    unpack_session,
    unpack_session_after,
    unpack_stash,
)
from jaato_web.dashboard.storage.packing import (
    PACK_LEVEL,
    Original,
    decompressed,
    original_of,
    pack_original,
    packed,
    unpack_original,
    unpacked,
)
from jaato_web.dashboard.storage.records import (
    DRIFT_MESSAGES_SHOWN,
    STATE_ITEMS_SHOWN,
    STATE_TEXT_CHARS,
    StoredAgentState,
    agent_state_record,
    drift_record,
    figure_sources,
    recorded_calls,
    replay_series,
    requests_read,
    retention_figures,
    retention_read,
    retention_record,
)
from jaato_web.dashboard.storage.text import (
    NulSafeCharField,
    NulSafeJSONField,
    NulSafeText,
    NulSafeTextField,
    escape_nul_in,
)
from jaato_web.dashboard.storage.turns import (
    PART_TEXT_CHARS,
    PREVIEW_CHARS,
    MessageFigure,
    StoredMessage,
    StoredPart,
    TurnFields,
    TurnRow,
    clipped,
    message_figures,
    message_views,
    part_row,
    pretty_json,
    preview_of,
    turn_figures,
    turn_row_batches,
    turn_rows,
    unpack_turn,
    unpack_turns,
)

__all__ = [
    "CONVERSATION",
    "DOCUMENT_FORMAT",
    "DRIFT_MESSAGES_SHOWN",
    "PACK_LEVEL",
    "PART_TEXT_CHARS",
    "PREVIEW_CHARS",
    "STATE_ITEMS_SHOWN",
    "STATE_TEXT_CHARS",
    "AfterTurn",
    "MessageFigure",
    "NodeRow",
    "NulSafeCharField",
    "NulSafeJSONField",
    "NulSafeText",
    "NulSafeTextField",
    "Original",
    "StoredAgentState",
    "StoredMessage",
    "StoredPart",
    "TurnFields",
    "TurnRow",
    "after_turns",
    "agent_state_record",
    "budget_rows",
    "clipped",
    "decompressed",
    "drift_record",
    "escape_nul_in",
    "figure_sources",
    "message_figures",
    "message_views",
    "original_of",
    "pack_original",
    "pack_session",
    "pack_session_after",
    "pack_stash",
    "packed",
    "part_row",
    "pretty_json",
    "preview_of",
    "recorded_calls",
    "replay_series",
    "requests_read",
    "retention_figures",
    "retention_read",
    "retention_record",
    "turn_figures",
    "turn_row_batches",
    "turn_rows",
    "unpack_original",
    "unpack_session",
    "unpack_session_after",
    "unpack_stash",
    "unpack_turn",
    "unpack_turns",
    "unpacked",
]
