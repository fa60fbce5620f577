"""What a policy or the context planner would do to a stored session, computed in this
process and never stored: ``policies`` previews, replays and compares a policy, ``ranking``
ranks policy versions over sessions (in a worker, which keeps the ranking on its row),
``planner`` plans a session's next request, and ``step_through`` plans it turn by turn as the
agent lived it.

What they compute is kept in the process's caches (``jaato_web.caches``), so the editor's
preview at every edit and the Plan tab's every step read a session once.
"""

from __future__ import annotations

from jaato_web.dashboard.previews.planner import (
    CapsChoice,
    PinChoice,
    SessionPins,
    SessionPlan,
    inline_caps,
    plan_inline,
    plan_session,
    session_items,
    session_pins,
    turn_names,
)
from jaato_web.dashboard.previews.policies import (
    COLLECTION_STEPS,
    LLM_NOTE,
    PINS_NOTE,
    QUICK_REPLAY_TURNS,
    REPLAY_CACHE_STEPS,
    Preview,
    compare,
    preview,
    replay,
    replay_cached,
    replay_is_quick,
    replay_weight,
)
from jaato_web.dashboard.previews.ranking import (
    PolicyOnSession,
    Ranking,
    rank,
    ranking_draw,
    ranking_read,
    ranking_record,
)
from jaato_web.dashboard.previews.step_through import (
    STEPS_PER_PAGE,
    Step,
    plan_steps,
)

__all__ = [
    "COLLECTION_STEPS",
    "LLM_NOTE",
    "PINS_NOTE",
    "QUICK_REPLAY_TURNS",
    "REPLAY_CACHE_STEPS",
    "STEPS_PER_PAGE",
    "CapsChoice",
    "PinChoice",
    "PolicyOnSession",
    "Preview",
    "Ranking",
    "SessionPins",
    "SessionPlan",
    "Step",
    "compare",
    "inline_caps",
    "plan_inline",
    "plan_session",
    "plan_steps",
    "preview",
    "rank",
    "ranking_draw",
    "ranking_read",
    "ranking_record",
    "replay",
    "replay_cached",
    "replay_is_quick",
    "replay_weight",
    "session_items",
    "session_pins",
    "turn_names",
]
