"""Ranking policies over sessions: each policy version replayed on each session, its figures
added up (staying within the window, anchor retention against the project's gates, tokens
sent, prompt-cache cost), the versions ranked, and the sessions where they differ most.

Retention ranks at equal size: each version collects each session's whole history once, and
every version's context after is cut to the smallest one's tokens (oldest first, summaries
last) before it is scored, so a version that removes less gains nothing from it.

Each replay is the one a preview's chart draws (``policies.replay``), scored, and kept in
the same cache. A ranking is worked out by a worker (``ranking_draw``, under the lease of its
``PolicyRanking`` row), which says after each replay how far it got, and stores the ranking
as the API answers it (``ranking_record``), so the pages read it back (``ranking_read``)
instead of replaying again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

import gcengine
from jaato_web.dashboard import presenters, services, storage
from jaato_web.dashboard.models import AgentSession, PolicyRanking, PolicyVersion
from jaato_web.dashboard.previews.policies import _scorer, dry_run_config, replay
from jaato_web.dashboard.services import RANK_ORDERS
from jaato_web.dashboard.services.work import Lease

# The sessions listed where the policies differ most.
DIFFER_MOST_SHOWN = 5

# Told before each replay: how many are done, and the session and version replayed next.
Progress = Callable[[int, AgentSession, Any], None]


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
    by: str = "retention"

    @property
    def ranked_by(self) -> str:
        """What was ranked first, in words."""
        return RANK_ORDERS[self.by]


def _on_session(
    session: AgentSession,
    config: gcengine.GCConfig,
    gates: gcengine.RetentionGates,
    prices: list[gcengine.ModelPrice],
    context_limit: int | None,
    shared: tuple[list[gcengine.PromptRequest], gcengine.AnchorScorer],
    at_equal_size: gcengine.AnchorRetention,
) -> PolicyOnSession:
    without_gc, scorer = shared
    series = replay(
        session, config, context_limit, scored=True, without_gc=without_gc, scorer=scorer
    )
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
        at_equal_size=at_equal_size,
    )


def _at_equal_size(
    session: AgentSession, configs: list[gcengine.GCConfig], context_limit: int | None
) -> list[gcengine.AnchorRetention]:
    """Each config's collection of the session's whole history, as a dry run would make it,
    scored at the size of the smallest context any of them leaves.

    Configs that leave the same context (a threshold policy and its continuous twin often
    do, collecting the whole history once) share its score: scoring a whole history is most
    of this, and the same context scores the same."""
    engine = services.engine_session_of(session, context_limit)
    afters: dict[str, list[gcengine.Message]] = {}
    names = []
    for n, config in enumerate(configs):
        after = gcengine.run_gc(engine, dry_run_config(session, config)[0]).session.history
        name = next((name for name, other in afters.items() if other == after), str(n))
        afters.setdefault(name, after)
        names.append(name)
    scores = gcengine.scores_at_equal_size(_scorer(session, engine), engine.history, afters)
    return [scores[name] for name in names]


def _spread(values: list[float]) -> float:
    return max(values) - min(values) if len(values) > 1 else 0.0


def rank(
    sessions: list[AgentSession],
    versions: list[Any],
    gates: gcengine.RetentionGates,
    prices: list[gcengine.ModelPrice],
    by: str = "retention",
    context_limit: int | None = None,
    progress: Progress | None = None,
) -> Ranking:
    """``versions`` (policy versions) replayed on each of ``sessions`` (against
    ``context_limit`` tokens instead of each one's window, when given), ranked ``by`` one of
    ``RANK_ORDERS`` (see ``PolicyRank.order``), with the sessions where they differ most: the
    widest spread of anchor retention at equal size, then of cost relative to the
    cheapest. ``progress`` is told before each replay (the inputs are checked by
    ``services.ranking_get_or_queue``).

    A session is read once, its requests without GC replayed once (every version's cost is
    weighed against the same baseline) and each of its messages' anchors read once, whatever
    the number of versions."""
    configs = [services.config_validated(version.config) for version in versions]
    on: list[list[PolicyOnSession]] = [[] for _ in versions]
    done = 0
    for session in sessions:
        engine = services.engine_session_of(session, context_limit)
        equal = _at_equal_size(session, configs, context_limit)
        # The scorer of every version's replays, reading the anchors the equal-size scores
        # read (both from what the session's upload stored).
        replay_scorer = services.session_replay_scorer(
            session, engine, _scorer(session, engine).cache
        )
        shared = (gcengine.requests_without_gc(engine), replay_scorer)
        for position, (version, config) in enumerate(zip(versions, configs, strict=True)):
            if progress is not None:
                progress(done, session, version)
            on[position].append(
                _on_session(session, config, gates, prices, context_limit, shared, equal[position])
            )
            done += 1
    ranks = sorted(
        (PolicyRank(version=v, sessions=s) for v, s in zip(versions, on, strict=True)),
        key=lambda r: r.order(by),
    )
    return _ranking(
        [PolicyRank(r.version, r.sessions, rank=n) for n, r in enumerate(ranks, 1)],
        sessions,
        [s for s in sessions if gcengine.price_for_model(s.model_name, prices) is None],
        by,
    )


def _ranking(
    ranks: list[PolicyRank], sessions: list[AgentSession], unpriced: list[AgentSession], by: str
) -> Ranking:
    """The ranking of ``ranks`` (ranked already), with the sessions where they differ most."""
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
        unpriced=unpriced,
        by=by,
    )


# --- Stored: what the worker keeps, and what the pages read back ------------------------------


def _figures(on: PolicyOnSession | PolicyRank) -> dict[str, Any]:
    at_equal_size = on.at_equal_size
    return {
        "collections": on.collections,
        "over_window_checks": on.over_window_checks,
        "tokens_sent": on.tokens_sent,
        "tokens_without_gc": on.tokens_without_gc,
        "anchor_retention": storage.retention_record(on.retention),
        "anchor_retention_at_equal_size": (
            storage.retention_record(at_equal_size) if at_equal_size is not None else None
        ),
        "collections_under_gate": on.collections_under_gate,
        "cost": on.cost,
        "cost_without_gc": on.cost_without_gc,
    }


def ranking_record(ranking: Ranking) -> dict[str, Any]:
    """The ranking as it is stored and as the API answers it (``RankOut``)."""
    return {
        "by": ranking.by,
        "ranks": [
            {
                "rank": r.rank,
                "policy_version_id": r.version.pk,
                "policy": presenters.policy_name(r.version),
                **_figures(r),
                "sessions": [{"session_id": on.session.pk, **_figures(on)} for on in r.sessions],
            }
            for r in ranking.ranks
        ],
        "differ_most": [s.session.pk for s in ranking.differ_most],
        "unpriced_session_ids": [s.pk for s in ranking.unpriced],
    }


def _on_session_read(record: dict[str, Any], session: AgentSession) -> PolicyOnSession:
    at_equal_size = record["anchor_retention_at_equal_size"]
    return PolicyOnSession(
        session=session,
        collections=record["collections"],
        over_window_checks=record["over_window_checks"],
        tokens_sent=record["tokens_sent"],
        tokens_without_gc=record["tokens_without_gc"],
        retention=gcengine.AnchorRetention.model_validate(record["anchor_retention"]),
        collections_under_gate=record["collections_under_gate"],
        cost=record["cost"],
        cost_without_gc=record["cost_without_gc"],
        at_equal_size=(
            gcengine.AnchorRetention.model_validate(at_equal_size) if at_equal_size else None
        ),
    )


def _inputs(row: PolicyRanking) -> tuple[list[AgentSession], list[PolicyVersion]] | None:
    """The sessions and versions of ``row`` in the order it ranked them; None when one of
    them has been deleted since."""
    sessions = AgentSession.objects.in_bulk(row.session_ids)
    versions = PolicyVersion.objects.select_related("policy").in_bulk(row.version_ids)
    if len(sessions) != len(row.session_ids) or len(versions) != len(row.version_ids):
        return None
    return [sessions[i] for i in row.session_ids], [versions[i] for i in row.version_ids]


def ranking_read(row: PolicyRanking) -> Ranking | None:
    """The ranking ``row`` stored, as ``rank`` made it; None until it is done, or when a
    session or version it ranked has been deleted since."""
    inputs = _inputs(row) if row.result is not None else None
    if inputs is None:
        return None
    sessions, versions = inputs
    by_pk = {s.pk: s for s in sessions}
    ranks = [
        PolicyRank(
            version=versions[row.version_ids.index(r["policy_version_id"])],
            sessions=[_on_session_read(on, by_pk[on["session_id"]]) for on in r["sessions"]],
            rank=r["rank"],
        )
        for r in row.result["ranks"]
    ]
    unpriced = [by_pk[i] for i in row.result["unpriced_session_ids"]]
    return _ranking(ranks, sessions, unpriced, row.by)


def ranking_draw(*, ranking_id: int, lease: Lease) -> None:
    """Work out a queued ranking under ``lease``, saying before each replay how many are done
    and what is replayed next, and store it."""
    row = PolicyRanking.objects.select_related("project").get(pk=ranking_id)
    inputs = _inputs(row)
    if inputs is None:
        lease.failed("a session or policy version it ranks was deleted since it was asked for")
        return
    sessions, versions = inputs
    total = len(sessions) * len(versions)
    lease.progress("reading the sessions", started_at=timezone.now(), replays_total=total)

    def report(done: int, session: AgentSession, version: Any) -> None:
        name = presenters.policy_name(version)
        lease.progress(f"replaying {session.label} under {name}", replays_done=done)

    project = row.project
    try:
        ranking = rank(
            sessions,
            versions,
            services.project_gates(project),
            services.project_prices(project),
            by=row.by,
            context_limit=row.context_limit,
            progress=report,
        )
    except gcengine.GCEngineError as error:
        lease.failed(str(error))
        return
    lease.done(result=ranking_record(ranking), replays_done=total)
