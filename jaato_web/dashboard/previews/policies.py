"""Dry runs: what a policy would do to a stored session, computed in this process, never stored.

The policy editor previews every edit (debounced) and the compare page runs two policies side
by side, so what matters is the cost per request:

* reopening a stored session (its turn rows read back, nothing counted) costs a few hundredths
  of a second at 1,000 turns, so ``services.engine_session_of`` keeps the sessions read last
  in memory, bounded by the messages they hold; uploads are immutable, so an entry never goes
  stale, and the engine never mutates a session it is handed;
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
from jaato_web import caches
from jaato_web.dashboard import presenters, services
from jaato_web.dashboard.models import AgentSession

# What the replay cache may hold, by what takes memory: steps of the replays kept (two a
# turn), and their collections, each of which weighs about as much as a step, or when scored
# (with its anchor retention) COLLECTION_STEPS steps. Measured on a 10,000-turn replay in
# continuous mode (20,000 steps, ~9,600 collections): 7 MB unscored, 33 MB scored. Such a
# replay is kept alone either way, so a process that draws the charts of one long session
# after another holds one of them, not two; a 1,000-turn one is kept with nine others.
# The entry used last is always kept. Sessions are kept by ``services.engine_session_of``.
REPLAY_CACHE_STEPS = 30_000
COLLECTION_STEPS = 7
# Anchor scorers kept, one a session previewed, bounded like the session cache: by the
# messages they may come to remember (each holds what it read of every message it scored).
SCORER_CACHE_MESSAGES = services.SESSION_CACHE_MESSAGES
# Sessions up to this many turns are replayed as soon as a preview asks (in a second request,
# after the ledger); longer ones wait for a click. A replay is linear in turns: a 10,000-turn
# session replays in a few seconds in either mode (benchmarks/gc.py --replay).
QUICK_REPLAY_TURNS = {"threshold": 10_000, "continuous": 10_000}
PINS_NOTE = "It keeps what is pinned in this session, as every run of the session does."
LLM_NOTE = (
    "This preview summarizes with the offline extractive summarizer; "
    "a real run calls the LLM endpoint."
)


def replay_weight(series: dict[str, Any]) -> int:
    """What a replay weighs in the cache, in steps."""
    collections = sum(COLLECTION_STEPS if "retention" in e else 1 for e in series["events"])
    return len(series["steps"]) + collections


_replays: caches.BoundedLRU[tuple[int, str, str, int | None, bool], dict[str, Any]] = (
    caches.bounded("replays drawn for previews", REPLAY_CACHE_STEPS, replay_weight, "steps")
)
# Each cached session's anchor scorer, which remembers what it read of each message: the
# editor previews the same session at every edit.
_scorers: caches.BoundedLRU[tuple[int, str], gcengine.AnchorScorer] = caches.bounded(
    "anchor scorers of sessions previewed",
    SCORER_CACHE_MESSAGES,
    lambda scorer: scorer.corpus_messages,
    "messages",
)


def _scorer(session: AgentSession, engine: gcengine.Session) -> gcengine.AnchorScorer:
    key = (session.pk, session.sha256)
    scorer = _scorers.get(key)
    if scorer is None:
        scorer = gcengine.session_scorer(engine, services.session_anchors(session))
        _scorers.put(key, scorer)
    return scorer


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
    if pinned.plugin_config.get("summarizer") not in ("llm", "provider"):
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
    retention: gcengine.AnchorRetention | None = None

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
    engine = services.engine_session_of(session, context_limit)
    used, notes = dry_run_config(session, config)
    outcome = gcengine.run_gc(engine, used)
    wanted, reason = gcengine.would_collect(engine, used)
    result = outcome.result
    retention = (
        _scorer(session, engine).score_change(engine.history, outcome.session.history)
        if result.success
        else None
    )
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
        retention=retention,
    )


def _replay_key(
    session: AgentSession, config: gcengine.GCConfig, context_limit: int | None, scored: bool
) -> tuple[int, str, str, int | None, bool]:
    canonical = json.dumps(gcengine.dump_gc_config(config), sort_keys=True)
    return (session.pk, session.sha256, canonical, context_limit, scored)


def replay_is_quick(session: AgentSession, config: gcengine.GCConfig) -> bool:
    mode = "continuous" if config.continuous_mode else "threshold"
    return int(session.turn_count) <= QUICK_REPLAY_TURNS[mode]


def replay_cached(
    session: AgentSession,
    config: gcengine.GCConfig,
    context_limit: int | None = None,
    *,
    scored: bool = False,
) -> dict[str, Any] | None:
    """The series ``replay`` would give, if it is at hand (a scored one serves a chart too)."""
    used, _ = dry_run_config(session, config)
    return _cached_series(session, used, context_limit, scored)


def _cached_series(
    session: AgentSession, used: gcengine.GCConfig, context_limit: int | None, scored: bool
) -> dict[str, Any] | None:
    """``replay_cached`` for the config a dry run uses (``dry_run_config``, which reads the
    session's pins from the database)."""
    series = _replays.get(_replay_key(session, used, context_limit, True))
    if series is None and not scored:
        series = _replays.get(_replay_key(session, used, context_limit, False))
    return series


def replay(
    session: AgentSession,
    config: gcengine.GCConfig,
    context_limit: int | None = None,
    *,
    scored: bool = False,
    without_gc: list[gcengine.PromptRequest] | None = None,
    scorer: gcengine.AnchorScorer | None = None,
) -> dict[str, Any]:
    """The turn-by-turn replay series (``storage.replay_series``), computed once per
    session, gc.json and window; ``scored``, with each collection's anchor retention
    (``without_gc`` and ``scorer``: what the caller shares between replays of one session,
    ``services.replay_series_of``).

    A chart needs no scores, and scoring is most of a long replay (a 10,000-turn session in
    continuous mode: about 2.5 s replayed, 9 s more scored), so only what pools the scores
    (a ranking, the API's preview) asks for them. A replay stored done and scored is read
    back rather than replayed (``services.replay_scored_series``)."""
    used, notes = dry_run_config(session, config)
    series = _cached_series(session, used, context_limit, scored)
    if series is None and LLM_NOTE not in notes:
        # A replay stored with its scores (the session page's) is this one: a dry run differs
        # from it only where it swaps an LLM summarizer for the extractive one.
        series = services.replay_scored_series(session, used, context_limit)
        if series is not None:
            _replays.put(_replay_key(session, used, context_limit, True), series)
    if series is None:
        engine = services.engine_session_of(session, context_limit)
        series = services.replay_series_of(
            engine, used, scored=scored, without_gc=without_gc, scorer=scorer
        )
        _replays.put(_replay_key(session, used, context_limit, scored), series)
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
