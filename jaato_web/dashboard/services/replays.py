"""Replays: a session replayed turn by turn under a policy, drawn as a chart of its context
and its cost, then each collection scored.

``background.replay_request`` finds or queues a replay through this module and hands a queued
one to a worker when the transaction commits; the worker draws it with ``replay_draw`` under
its lease.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.urls import reverse

import gcengine
from jaato_web.dashboard import storage
from jaato_web.dashboard.audit import audit_record
from jaato_web.dashboard.models import AgentSession, AuditAction, JobStatus, PolicyVersion, Replay
from jaato_web.dashboard.services import stored_sessions
from jaato_web.dashboard.services.common import (
    compaction_checked,
    config_validated,
    config_with_project_summarizer,
    config_with_session_pins,
    gc_policy_checked,
)
from jaato_web.dashboard.services.work import Lease

if TYPE_CHECKING:
    from jaato_web.dashboard.services.common import Actor

logger = logging.getLogger(__name__)


def replay_get_or_queue(
    *,
    session: AgentSession,
    policy_version: PolicyVersion | None = None,
    config: Any = None,
    context_limit: int | None = None,
    compaction_id: str = "",
    actor: Actor = None,
) -> tuple[Replay, bool]:
    """The replay of a session under a stored version or a gc.json (against ``context_limit``
    tokens instead of the session's window, when given): the stored one, or a newly queued
    one. Asked for by a version, the replay names that version from then on (another version
    with the same gc.json draws the same chart).

    With it, whether it was queued just now (new, failed before, or drawn before it was
    scored), so a worker must be asked for it: ``background.replay_request`` asks.
    """
    if policy_version is not None:
        gc_policy_checked(policy_version.policy, "policy_version")
        config = policy_version.config if config is None else config
    if config is None:
        raise gcengine.ConfigError("a replay needs a policy version or a gc.json")
    if context_limit is not None:
        gcengine.context_limit_checked(context_limit)
    compaction_checked(session, compaction_id)
    canonical, window, digest = _replay_keyed(session, config, context_limit, compaction_id)
    label = str(policy_version) if policy_version is not None else ""
    with transaction.atomic():
        replay, created = Replay.objects.get_or_create(
            session=session,
            config_digest=digest,
            defaults={
                "config": canonical,
                "context_limit": window,
                "compaction_id": compaction_id,
                "progress": "waiting for a worker",
                "policy_version": policy_version,
                "policy_label": label,
            },
        )
        # A replay that failed (or was cancelled) is tried again when asked for again.
        retried = not created and bool(
            Replay.objects.filter(pk=replay.pk, status=JobStatus.FAILED).update(
                status=JobStatus.QUEUED, error="", progress="waiting for a worker", attempts=0
            )
        )
        queued = created or retried
        if queued:
            audit_record(
                project=session.project,
                actor=actor,
                action=AuditAction.REPLAY,
                target=f"replay of {session.label}",
                target_url=reverse("replay_detail", args=[replay.pk]),
                detail={"session": session.pk, "plugin": canonical.get("type"), "policy": label},
            )
        if retried:
            replay.refresh_from_db()
        else:
            if policy_version is not None and replay.policy_version_id != policy_version.pk:
                replay.policy_version, replay.policy_label = policy_version, label
                replay.save(update_fields=["policy_version", "policy_label"])
            if replay.status == JobStatus.DONE and (
                "requests" not in (replay.series or {}) or replay.unscored_because
            ):
                # Drawn before replays recorded their requests and scored their collections,
                # or its scoring did not finish: drawn again, so its page can show both.
                Replay.objects.filter(pk=replay.pk).update(
                    status=JobStatus.QUEUED,
                    progress="waiting for a worker",
                    series=None,
                    unscored_because="",
                )
                replay.refresh_from_db()
                queued = True
    return replay, queued


def _replay_keyed(
    session: AgentSession, config: Any, context_limit: int | None, compaction_id: str = ""
) -> tuple[dict[str, Any], int | None, str]:
    """What a replay of ``session`` under ``config`` is stored by: the gc.json as it runs on
    the session (with its pins), the window when not the session's own, and their digest."""
    canonical = gcengine.dump_gc_config(config_with_session_pins(config_validated(config), session))
    window = context_limit if context_limit != session.context_limit else None
    keyed: Any = canonical
    if window or compaction_id:
        keyed = {"gc.json": canonical, "context_limit": window, "compaction": compaction_id}
    digest = hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()
    return canonical, window, digest


def replay_scored_series(
    session: AgentSession, config: gcengine.GCConfig, context_limit: int | None = None
) -> dict[str, Any] | None:
    """The series of a replay of ``session`` under ``config`` stored done with every
    collection scored, if there is one: what a ranking would replay again otherwise. A
    replay drawn before replays recorded their requests, or left unscored, is not one."""
    _, _, digest = _replay_keyed(session, gcengine.dump_gc_config(config), context_limit)
    series = (
        Replay.objects.filter(
            session=session,
            config_digest=digest,
            status=JobStatus.DONE,
            retention_pending=False,
            unscored_because="",
        )
        .values_list("series", flat=True)
        .first()
    )
    return series if isinstance(series, dict) and "requests" in series else None


def replay_draw(*, replay_id: int, lease: Lease) -> None:
    """Replay under ``lease``, store the chart, then score each collection's anchor retention
    and store the series again with the scores.

    Scoring is most of a long replay (a 10,000-turn session in continuous mode: about 2.5 s
    replayed, 9 s more scored), so the chart and its cost are shown first, as a run's ledger
    is before its score. Scoring replays the session again: keeping every collection's
    context until then would hold the session hundreds of times over. A replay is
    deterministic, so the second pass draws the same chart; but with the LLM summarizer each
    collection calls the endpoint, whose summaries may differ, and calling it twice costs
    twice: such a replay is scored as it is drawn, in one pass."""
    replay = Replay.objects.select_related("session__project").get(pk=replay_id)
    try:
        engine = stored_sessions.engine_session_of(
            replay.session, replay.context_limit, replay.compaction_id
        )
        config = config_validated(replay.config)
        scored_at_once = config.plugin_config.get("summarizer") in ("llm", "provider")
        config = config_with_project_summarizer(config, replay.session.project)
        scorer = _scorer(replay, engine) if scored_at_once else None
        series = replay_series_of(engine, config, scored=scored_at_once, scorer=scorer)
    except gcengine.GCEngineError as error:
        lease.failed(str(error))
        return
    if scored_at_once:
        lease.done(series=series, unscored_because="")
        return
    lease.done_scoring(series=series, unscored_because="")
    lease.scored(**_replay_scores(replay, engine, config, series))


def _scorer(replay: Replay, engine: gcengine.Session) -> gcengine.AnchorScorer | None:
    """The scorer of ``replay``, reading the session's stored anchors; None (the replay's
    own) for the session before one of its compactions, which reads another corpus."""
    if replay.compaction_id:
        return None
    return stored_sessions.session_replay_scorer(replay.session, engine)


# What a replay says when replaying it again to score it collected differently.
REPLAYED_DIFFERENTLY = (
    "replayed again to be scored, the policy collected differently (its plugin does not "
    "collect the same way twice), so the chart stands without scores"
)


def _replay_scores(
    replay: Replay, engine: gcengine.Session, config: gcengine.GCConfig, drawn: dict[str, Any]
) -> dict[str, Any]:
    """The series ``drawn`` with each collection scored, from a second replay that scores
    them; a scorer that fails, or a second replay that differs from the chart (a plugin that
    does not collect the same way twice), says so on the replay, whose chart stands."""
    try:
        scored = replay_series_of(engine, config, scored=True, scorer=_scorer(replay, engine))
    except Exception as error:
        logger.exception("scoring the anchor retention of a replay failed")
        return {
            "unscored_because": f"scoring it failed ({type(error).__name__}); "
            "the server log says why"
        }
    if _without_scores(scored) != drawn:
        return {"unscored_because": REPLAYED_DIFFERENTLY}
    return {"series": scored}


def _without_scores(series: dict[str, Any]) -> dict[str, Any]:
    events = [{k: v for k, v in e.items() if k != "retention"} for e in series["events"]]
    return {**series, "events": events}


def replay_series_of(
    engine: gcengine.Session,
    config: gcengine.GCConfig,
    *,
    scored: bool,
    without_gc: list[gcengine.PromptRequest] | None = None,
    scorer: gcengine.AnchorScorer | None = None,
) -> dict[str, Any]:
    """The stored series of a replay: the policy's (``scored``: with each collection's anchor
    retention), and the requests the same session sends without GC, which its cost is
    weighed against (``without_gc`` when the caller has them already: they are the same for
    every policy, so a ranking replays them once a session; ``scorer`` likewise, a
    ``gcengine.replay_scorer`` of the session, so it reads each message's anchors once).

    With the cycle collector paused in a web process too (the editor's chart): a replay
    makes millions of short-lived objects, none in a cycle, and the collections they set off
    walked the whole process (a 10,000-turn continuous replay: 2.4 s paused, 2.75 s not)."""
    with gcengine.cyclic_gc_paused():
        simulation = gcengine.simulate(engine, config, score_anchors=scored, scorer=scorer)
        if without_gc is None:
            without_gc = gcengine.requests_without_gc(engine)
    return storage.replay_series(simulation, without_gc, scored=scored)
