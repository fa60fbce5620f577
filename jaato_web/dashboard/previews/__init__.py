"""What a policy or the context planner would do to a stored session, computed in this
process and never stored: ``policies`` previews, replays and compares a policy, ``ranking``
ranks policy versions over sessions, ``planner`` plans a session's next request, and
``step_through`` plans it turn by turn as the agent lived it.

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
    RANK_ORDERS,
    RANK_SESSIONS_MAX,
    PolicyOnSession,
    rank,
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
    "RANK_ORDERS",
    "RANK_SESSIONS_MAX",
    "REPLAY_CACHE_STEPS",
    "STEPS_PER_PAGE",
    "CapsChoice",
    "PinChoice",
    "PolicyOnSession",
    "Preview",
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
    "replay",
    "replay_cached",
    "replay_is_quick",
    "replay_weight",
    "session_items",
    "session_pins",
    "turn_names",
]
