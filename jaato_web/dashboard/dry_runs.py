"""Dry runs: what a policy would do to a stored session, computed in this process, never stored.

The policy editor previews every edit (debounced) and the compare page runs two policies side
by side, so what matters is the cost per request:

* reopening a stored session (its turn rows read back, nothing counted) costs a few hundredths
  of a second at 1,000 turns, so sessions are kept in a small LRU keyed by id and sha256,
  bounded by the messages it holds; uploads are immutable, so an entry never goes stale, and
  the engine never mutates a session it is handed;
* ``gcengine.run_gc`` on the whole session gives the ledger (about 0.1 s at 1,000 turns);
* the replay (``gcengine.simulate``) is the slow part, and its cost depends on the mode:
  threshold mode collects a few times, continuous mode after nearly every turn past the
  target. Replays are cached by session and gc.json (bounded by their steps), and drawn
  without being asked when the session is short enough for the mode (``QUICK_REPLAY_TURNS``).

An LLM summarizer is never called from here: a dry run swaps in the offline extractive one and
says so in its notes.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import gcengine
from jaato_web.dashboard import presenters, services, storage
from jaato_web.dashboard.memo import BoundedLRU
from jaato_web.dashboard.models import AgentSession

# What the caches may hold, by what takes memory: messages of the sessions kept (one
# 10,000-turn session has about 27,000) and steps of the replays kept (two a turn). The entry
# used last is always kept, so a process that reads many large sessions holds one at a time.
SESSION_CACHE_MESSAGES = 30_000
REPLAY_CACHE_STEPS = 200_000
# Sessions up to this many turns are replayed as soon as a preview asks (in a second request,
# after the ledger); longer ones wait for a click. A replay is linear in turns: a 10,000-turn
# session replays in a few seconds in either mode (benchmarks/gc.py --replay).
QUICK_REPLAY_TURNS = {"threshold": 10_000, "continuous": 10_000}
PINS_NOTE = "It keeps what is pinned in this session, as every run of the session does."
LLM_NOTE = (
    "This preview summarizes with the offline extractive summarizer; "
    "a real run calls the LLM endpoint."
)


_sessions: BoundedLRU[tuple[int, str], gcengine.Session] = BoundedLRU(
    SESSION_CACHE_MESSAGES, lambda session: len(session.history)
)
_replays: BoundedLRU[tuple[int, str, str, int | None], dict[str, Any]] = BoundedLRU(
    REPLAY_CACHE_STEPS, lambda series: len(series["steps"])
)


def clear_caches(*, sessions: bool = True, replays: bool = True) -> None:
    if sessions:
        _sessions.clear()
    if replays:
        _replays.clear()


def engine_session(session: AgentSession, context_limit: int | None = None) -> gcengine.Session:
    """The engine's session for a stored one, unpacked once and then served from memory;
    against ``context_limit`` tokens instead of its own window when one is given."""
    key = (session.pk, session.sha256)
    cached = _sessions.get(key)
    if cached is None:
        cached = services.engine_session_of(session)
        _sessions.put(key, cached)
    return gcengine.with_context_limit(cached, context_limit) if context_limit else cached


def dry_run_config(
    session: AgentSession, config: gcengine.GCConfig
) -> tuple[gcengine.GCConfig, list[str]]:
    """The config a dry run of this session uses, and notes on what it adds to the policy.

    Like a real run, it keeps what is pinned in the session; unlike one, it never calls an
    LLM summarizer."""
    notes = []
    pinned = services.config_with_session_pins(config, session)
    if pinned is not config:
        notes.append(PINS_NOTE)
    if pinned.plugin_config.get("summarizer") != "llm":
        return pinned, notes
    data = gcengine.dump_gc_config(pinned)
    data["plugin_config"] = {**data["plugin_config"], "summarizer": "extractive"}
    return services.config_validated(data), [*notes, LLM_NOTE]


@dataclass(frozen=True)
class Preview:
    """What ``config`` would do to a session if it ran now, with the figures around it."""

    config: gcengine.GCConfig
    context_limit: int
    turn_count: int
    tokens_before: int
    tokens_after: int
    success: bool
    error: str | None
    items: list[gcengine.GCRemovalItem]
    notification: str | None
    would_trigger: bool
    trigger_reason: str | None
    elapsed_ms: float
    notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    left: presenters.Left | None = None

    @property
    def tokens_freed(self) -> int:
        return max(self.tokens_before - self.tokens_after, 0)

    def percent(self, tokens: int) -> float:
        return round(tokens / self.context_limit * 100, 1) if self.context_limit else 0.0

    @property
    def percent_before(self) -> float:
        return self.percent(self.tokens_before)

    @property
    def percent_after(self) -> float:
        return self.percent(self.tokens_after)

    @cached_property
    def story(self) -> presenters.PreviewStory:
        """What the preview says beside its figures."""
        return presenters.preview_story(
            strategy=self.config.plugin,
            tokens_before=self.tokens_before,
            tokens_after=self.tokens_after,
            limit=self.context_limit,
            items=len(self.items),
            config=gcengine.dump_gc_config(self.config),
            details=self.details,
            left=self.left,
        )

    @property
    def removed_turns(self) -> frozenset[int]:
        """Stable indices of the turns the run takes something from."""
        return frozenset(i.turn_index for i in self.items if i.turn_index is not None)

    @property
    def removed_message_ids(self) -> frozenset[str]:
        return frozenset(m for i in self.items for m in i.message_ids)


def preview(
    session: AgentSession, config: gcengine.GCConfig, context_limit: int | None = None
) -> Preview:
    """Run ``config`` on the session now (as a manual run would), and say whether its
    trigger would have fired on its own at the session's current usage (against
    ``context_limit`` tokens instead of the session's window, when given)."""
    started = time.perf_counter()
    engine = engine_session(session, context_limit)
    used, notes = dry_run_config(session, config)
    outcome = gcengine.run_gc(engine, used)
    wanted, reason = gcengine.would_collect(engine, used)
    result = outcome.result
    return Preview(
        config=config,
        context_limit=engine.context_limit,
        turn_count=session.turn_count,
        tokens_before=outcome.budget_before.total_tokens(),
        tokens_after=outcome.budget_after.total_tokens(),
        success=result.success,
        error=result.error,
        items=list(result.removal_list),
        notification=result.notification,
        would_trigger=wanted,
        trigger_reason=reason.value if reason is not None else None,
        elapsed_ms=round((time.perf_counter() - started) * 1000, 1),
        notes=notes,
        details=dict(result.details),
        left=presenters.Left(
            locked=outcome.budget_after.locked_tokens(),
            preservable=outcome.budget_after.preservable_tokens(),
            eligible=outcome.budget_after.gc_eligible_tokens(),
        ),
    )


def _replay_key(
    session: AgentSession, config: gcengine.GCConfig, context_limit: int | None
) -> tuple[int, str, str, int | None]:
    canonical = json.dumps(gcengine.dump_gc_config(config), sort_keys=True)
    return (session.pk, session.sha256, canonical, context_limit)


def replay_is_quick(session: AgentSession, config: gcengine.GCConfig) -> bool:
    mode = "continuous" if config.continuous_mode else "threshold"
    return int(session.turn_count) <= QUICK_REPLAY_TURNS[mode]


def replay_cached(
    session: AgentSession, config: gcengine.GCConfig, context_limit: int | None = None
) -> dict[str, Any] | None:
    used, _ = dry_run_config(session, config)
    return _replays.get(_replay_key(session, used, context_limit))


def replay(
    session: AgentSession, config: gcengine.GCConfig, context_limit: int | None = None
) -> dict[str, Any]:
    """The turn-by-turn replay series (``storage.replay_series``), computed once per
    session, gc.json and window."""
    used, _ = dry_run_config(session, config)
    key = _replay_key(session, used, context_limit)
    series = _replays.get(key)
    if series is None:
        engine = engine_session(session, context_limit)
        series = storage.replay_series(gcengine.simulate(engine, used))
        _replays.put(key, series)
    return series


@dataclass(frozen=True)
class Comparison:
    """Two policies on one session: what each removes, and what only one of them does."""

    a: Preview
    b: Preview

    @property
    def only_a_turns(self) -> list[int]:
        return sorted(self.a.removed_turns - self.b.removed_turns)

    @property
    def only_b_turns(self) -> list[int]:
        return sorted(self.b.removed_turns - self.a.removed_turns)

    @property
    def both_turns(self) -> list[int]:
        return sorted(self.a.removed_turns & self.b.removed_turns)

    @property
    def only_a_message_ids(self) -> list[str]:
        return sorted(self.a.removed_message_ids - self.b.removed_message_ids)

    @property
    def only_b_message_ids(self) -> list[str]:
        return sorted(self.b.removed_message_ids - self.a.removed_message_ids)

    @property
    def both_message_ids(self) -> list[str]:
        return sorted(self.a.removed_message_ids & self.b.removed_message_ids)


def compare(
    session: AgentSession,
    a: gcengine.GCConfig,
    b: gcengine.GCConfig,
    context_limit: int | None = None,
) -> Comparison:
    return Comparison(preview(session, a, context_limit), preview(session, b, context_limit))
