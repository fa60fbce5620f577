"""Ranking policies over sessions: each policy version replayed on each session, its figures
added up (staying within the window, anchor retention against the project's gates, tokens
sent, prompt-cache cost), the versions ranked, and the sessions where they differ most.

Retention ranks at equal size: each version collects each session's whole history once, and
every version's context after is cut to the smallest one's tokens (oldest first, summaries
last) before it is scored, so a version that removes less gains nothing from it.

Each replay is the one a preview's chart draws (``policies.replay``), scored, and kept in
the same cache.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import gcengine
from jaato_web.dashboard import services, storage
from jaato_web.dashboard.models import AgentSession
from jaato_web.dashboard.previews.policies import _scorer, dry_run_config, replay
from jaato_web.errors import InputError

# Sessions one ranking replays at most; each is replayed once per policy (and cached).
RANK_SESSIONS_MAX = 20
# The sessions listed where the policies differ most.
DIFFER_MOST_SHOWN = 5
# What a ranking puts first, after staying within the window; the rest break ties.
RANK_ORDERS = {
    "retention": "the fewest collections under a gate, then the highest anchor retention at "
    "equal size",
    "cost": "the lowest cost with prompt caching",
    "tokens": "the fewest tokens sent",
}


class RankError(InputError):
    """A ranking that cannot be made: an unknown order, or sessions and versions of
    different projects (whose gates and prices differ)."""


@dataclass(frozen=True)
class PolicyOnSession:
    """One policy replayed on one session: what it sent, what its collections kept in view of
    the anchors of the context before each, what it keeps of the whole history at the size
    every policy ranked is cut to, and what that costs with the prompt cache counted."""

    session: AgentSession
    collections: int
    over_window_checks: int
    tokens_sent: int
    tokens_without_gc: int
    retention: gcengine.AnchorRetention
    collections_under_gate: int
    cost: float | None
    cost_without_gc: float | None
    at_equal_size: gcengine.AnchorRetention | None = None


@dataclass(frozen=True)
class PolicyRank:
    """A policy over every session of a ranking, its figures added up."""

    version: Any
    sessions: list[PolicyOnSession]
    rank: int = 0

    @property
    def retention(self) -> gcengine.AnchorRetention:
        return gcengine.pooled_retention(s.retention for s in self.sessions)

    @property
    def at_equal_size(self) -> gcengine.AnchorRetention:
        """Each session's history collected once, scored at the size every version ranked
        is cut to there, pooled."""
        return gcengine.pooled_retention(
            s.at_equal_size for s in self.sessions if s.at_equal_size is not None
        )

    @property
    def tokens_sent(self) -> int:
        return sum(s.tokens_sent for s in self.sessions)

    @property
    def tokens_without_gc(self) -> int:
        return sum(s.tokens_without_gc for s in self.sessions)

    @property
    def collections(self) -> int:
        return sum(s.collections for s in self.sessions)

    @property
    def collections_under_gate(self) -> int:
        return sum(s.collections_under_gate for s in self.sessions)

    @property
    def over_window_checks(self) -> int:
        return sum(s.over_window_checks for s in self.sessions)

    @property
    def cost(self) -> float | None:
        """Over the sessions the price table prices; None when it prices none."""
        priced = [s.cost for s in self.sessions if s.cost is not None]
        return sum(priced) if priced else None

    @property
    def cost_without_gc(self) -> float | None:
        priced = [s.cost_without_gc for s in self.sessions if s.cost_without_gc is not None]
        return sum(priced) if priced else None

    def order(self, by: str) -> tuple[float, ...]:
        """Staying within the window first, then ``by`` (a ``RANK_ORDERS`` key), then the
        others: the fewest collections under a gate and the highest anchor retention at equal
        size (a history without anchors counts as nothing lost), the lowest cost, the fewest
        tokens."""
        score = self.at_equal_size.score
        retention = (self.collections_under_gate, -(1.0 if score is None else score))
        cost = (self.cost if self.cost is not None else float("inf"),)
        tokens = (self.tokens_sent,)
        first = {"retention": retention, "cost": cost, "tokens": tokens}[by]
        rest = [
            part
            for key, part in (("retention", retention), ("cost", cost), ("tokens", tokens))
            if key != by
        ]
        return (self.over_window_checks > 0, *first, *rest[0], *rest[1])


@dataclass(frozen=True)
class SessionSpread:
    """A session and how far apart the policies land on it."""

    session: AgentSession
    by_policy: list[PolicyOnSession]
    retention_spread: float
    cost_spread: float


@dataclass(frozen=True)
class Ranking:
    ranks: list[PolicyRank]
    differ_most: list[SessionSpread]
    unpriced: list[AgentSession]


def _on_session(
    session: AgentSession,
    config: gcengine.GCConfig,
    gates: gcengine.RetentionGates,
    prices: list[gcengine.ModelPrice],
    context_limit: int | None,
) -> PolicyOnSession:
    series = replay(session, config, context_limit, scored=True)
    limit = int(series["context_limit"]) or 1
    scored = [
        gcengine.AnchorRetention.model_validate(e["retention"])
        for e in series["events"]
        if e.get("retention")
    ]
    price = gcengine.price_for_model(session.model_name, prices)
    requests = storage.requests_read(series["requests"])
    baseline = storage.requests_read(series["requests_without_gc"])
    return PolicyOnSession(
        session=session,
        collections=sum(1 for e in series["events"] if e["success"]),
        over_window_checks=sum(1 for s in series["steps"] if s[3] > limit),
        tokens_sent=sum(r.tokens for r in requests),
        tokens_without_gc=sum(r.tokens for r in baseline),
        retention=gcengine.pooled_retention(scored),
        collections_under_gate=sum(1 for r in scored if gcengine.gate_failures(r, gates)),
        cost=gcengine.cache_cost(requests, price).dollars if price else None,
        cost_without_gc=gcengine.cache_cost(baseline, price).dollars if price else None,
    )


def _at_equal_size(
    session: AgentSession, configs: list[gcengine.GCConfig], context_limit: int | None
) -> list[gcengine.AnchorRetention]:
    """Each config's collection of the session's whole history, as a dry run would make it,
    scored at the size of the smallest context any of them leaves."""
    engine = services.engine_session_of(session, context_limit)
    afters = {
        str(n): gcengine.run_gc(engine, dry_run_config(session, config)[0]).session.history
        for n, config in enumerate(configs)
    }
    scores = gcengine.scores_at_equal_size(_scorer(session, engine), engine.history, afters)
    return [scores[str(n)] for n in range(len(configs))]


def _spread(values: list[float]) -> float:
    return max(values) - min(values) if len(values) > 1 else 0.0


def rank(
    sessions: list[AgentSession],
    versions: list[Any],
    gates: gcengine.RetentionGates,
    prices: list[gcengine.ModelPrice],
    by: str = "retention",
    context_limit: int | None = None,
) -> Ranking:
    """``versions`` (policy versions) replayed on each of ``sessions`` (against
    ``context_limit`` tokens instead of each one's window, when given), ranked ``by`` one of
    ``RANK_ORDERS`` (see ``PolicyRank.order``), with the sessions where they differ most: the
    widest spread of anchor retention at equal size, then of cost relative to the
    cheapest."""
    if by not in RANK_ORDERS:
        raise RankError(f"no ranking by {by!r} (one of {', '.join(RANK_ORDERS)})", "by")
    projects = {s.project_id for s in sessions} | {v.policy.project_id for v in versions}
    if len(projects) > 1:
        raise RankError("the sessions and versions ranked must be of one project")
    configs = [services.config_validated(version.config) for version in versions]
    equal = [_at_equal_size(session, configs, context_limit) for session in sessions]
    ranks = [
        PolicyRank(
            version=version,
            sessions=[
                replace(
                    _on_session(session, config, gates, prices, context_limit),
                    at_equal_size=equal[index][position],
                )
                for index, session in enumerate(sessions)
            ],
        )
        for position, (version, config) in enumerate(zip(versions, configs, strict=True))
    ]
    ranks.sort(key=lambda r: r.order(by))
    ranks = [PolicyRank(r.version, r.sessions, rank=n) for n, r in enumerate(ranks, 1)]
    spreads = []
    for index, session in enumerate(sessions):
        on_it = [r.sessions[index] for r in ranks]
        scores = [
            s.at_equal_size.score
            for s in on_it
            if s.at_equal_size is not None and s.at_equal_size.score is not None
        ]
        costs = [s.cost for s in on_it if s.cost is not None]
        cheapest = min(costs, default=0.0)
        spreads.append(
            SessionSpread(
                session=session,
                by_policy=on_it,
                retention_spread=_spread(scores),
                cost_spread=_spread(costs) / cheapest if cheapest else 0.0,
            )
        )
    spreads.sort(key=lambda s: (s.retention_spread, s.cost_spread), reverse=True)
    return Ranking(
        ranks=ranks,
        differ_most=[s for s in spreads if s.retention_spread or s.cost_spread][:DIFFER_MOST_SHOWN],
        unpriced=[s for s in sessions if gcengine.price_for_model(s.model_name, prices) is None],
    )
