"""GC runs: a run queued (validated and recorded, for a worker to carry out), and a run
collected: the engine run on the stored session, its ledger, summaries, stash and budget tree
stored, then its anchor retention scored.

``background.run_start`` queues a run through this module and hands it to a worker when the
transaction commits; the worker carries it out with ``run_collect`` under its lease.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.urls import reverse

import gcengine
from jaato_web import caches
from jaato_web.dashboard import storage
from jaato_web.dashboard.audit import audit_record
from jaato_web.dashboard.models import (
    AgentSession,
    AuditAction,
    GCRun,
    KeptSegment,
    PolicyVersion,
    Removal,
    StashedSegment,
    Summary,
)
from jaato_web.dashboard.services import stored_sessions
from jaato_web.dashboard.services.common import (
    compaction_checked,
    config_validated,
    config_with_project_summarizer,
    config_with_session_pins,
    gc_policy_checked,
)
from jaato_web.dashboard.services.stored_sessions import BULK_BATCH
from jaato_web.dashboard.services.work import Lease

if TYPE_CHECKING:
    from jaato_web.dashboard.services.common import Actor

logger = logging.getLogger(__name__)


_plugins: caches.BoundedLRU[tuple[()], tuple[str, ...]] = caches.bounded(
    "installed GC plugins", 1, caches.each_weighs_one, "lists"
)


def plugin_names() -> tuple[str, ...]:
    """The installed GC plugins, for the run form.

    Scanning entry points takes milliseconds, and a newly installed plugin needs a restart
    to be importable anyway, so the list is read once per process.
    """
    names = _plugins.get(())
    if names is None:
        names = tuple(sorted(gcengine.discover_gc_plugins()))
        _plugins.put((), names)
    return names


def run_queue(
    *,
    session: AgentSession,
    policy_version: PolicyVersion | None = None,
    config: Any = None,
    plugin: str | None = None,
    trigger: str = "manual",
    context_limit: int | None = None,
    compaction_id: str = "",
    actor: Actor = None,
) -> GCRun:
    """Queue a run of a stored policy version, or of a gc.json given as is, or of both: a
    version's ``config`` changed for this run (an agent's prune: its action, the segments it
    names), recorded as run under that version.

    The gc.json is validated here (``gcengine.ConfigError`` names the key), so a run that is
    queued can only fail for reasons the engine finds while collecting. ``context_limit``
    runs it against another window than the session's own ("what if it were 8,000?");
    ``compaction_id`` runs it on the history just before that compaction the agent performed,
    to set the policy's removals and summary beside the agent's own. The run waits for a
    worker that ``background.run_start`` asks for.
    """
    if context_limit is not None:
        gcengine.context_limit_checked(context_limit)
    compaction_checked(session, compaction_id)
    if policy_version is not None:
        gc_policy_checked(policy_version.policy, "policy_version")
        config = policy_version.config if config is None else config
    if config is None:
        raise gcengine.ConfigError("a run needs a policy version or a gc.json")
    validated = config_with_session_pins(config_validated(config), session)
    plugin_name = plugin or validated.plugin
    installed = gcengine.discover_gc_plugins()
    if plugin_name not in installed:
        names = ", ".join(sorted(installed))
        raise gcengine.PluginError(f"no GC plugin named {plugin_name!r} (installed: {names})")
    with transaction.atomic():
        run = GCRun.objects.create(
            session=session,
            policy_version=policy_version,
            policy_label=str(policy_version) if policy_version is not None else "",
            config=gcengine.dump_gc_config(validated),
            plugin=plugin_name,
            trigger=trigger,
            context_limit=context_limit or session.context_limit,
            compaction_id=compaction_id,
            progress="waiting for a worker",
        )
        audit_record(
            project=session.project,
            actor=actor,
            action=AuditAction.RUN,
            target=f"run {run.pk} of {session.label}",
            target_url=reverse("run_detail", args=[run.pk]),
            detail={
                "session": session.pk,
                "plugin": plugin_name,
                "trigger": trigger,
                "policy_version": policy_version.pk if policy_version else None,
                "context_limit": context_limit,
            },
        )
    return run


def run_collect(*, run_id: int, lease: Lease) -> None:
    """Run the engine for a queued run under ``lease`` and store everything its pages and
    exports show."""
    run = GCRun.objects.select_related("session__project").get(pk=run_id)
    before = stored_sessions.engine_session_of(run.session, run.context_limit, run.compaction_id)
    config = config_with_project_summarizer(config_validated(run.config), run.session.project)
    lease.progress(f"collecting with {run.plugin}")
    try:
        outcome = gcengine.run_gc(before, config, plugin=run.plugin)
    except gcengine.GCEngineError as error:
        lease.failed(str(error))
        return
    result = outcome.result
    if not result.success:
        lease.failed(
            result.error or "the strategy reported a failure",
            result=result.model_dump(mode="json", exclude={"removal_list", "stash"}),
        )
        return
    lease.progress("storing the ledger")
    _run_store(run, before, outcome, lease)
    # After the run is stored and done, its ledger readable: scoring reads every message the
    # run took out of view, seconds on a long session.
    lease.scored(retention=storage.retention_record(_retention_of(run, before, outcome)))


def _retention_of(
    run: GCRun, before: gcengine.Session, outcome: gcengine.GCOutcome
) -> gcengine.AnchorRetention:
    """The run's anchor retention, read from the session's stored anchors (unless the run is
    of the session before one of its compactions); a scorer that fails says so on the run,
    which stands."""
    try:
        anchors = None if run.compaction_id else stored_sessions.session_anchors(run.session)
        # Paused as a replay is: scoring a 10,000-turn run beside the session took half as
        # long again with the collector walking it.
        with gcengine.cyclic_gc_paused():
            return gcengine.score_collection(before, outcome.session.history, anchors)
    except Exception as error:
        logger.exception("scoring the anchor retention of a run failed")
        return gcengine.AnchorRetention(
            unscorable=f"scoring it failed ({type(error).__name__}); the server log says why"
        )


@transaction.atomic
def _run_store(
    run: GCRun, before: gcengine.Session, outcome: gcengine.GCOutcome, lease: Lease
) -> None:
    result = outcome.result
    position_of = before.message_turns()
    removals = [
        (
            seq,
            _SOURCE_VALUES[item.source],
            (item.child_key or "")[:400],
            str(item.reason),
            item.tokens_freed,
            item.message_ids,
            item.turn_index,
            _first_turn(item.message_ids, position_of),
            *_verdict_fields(item.verdict),
        )
        for seq, item in enumerate(result.removal_list)
    ]
    stored_sessions.rows_insert(
        Removal,
        (
            "run",
            "seq",
            "source",
            "child_key",
            "reason",
            "tokens_freed",
            "message_ids",
            "turn_index",
            "turn_position",
            *VERDICT_FIELDS,
        ),
        [(run.pk, *removal) for removal in removals],
    )
    touched = [removal[7] for removal in removals if removal[7] is not None]
    Summary.objects.bulk_create(_summaries(run, outcome, touched, position_of))
    if run.stashes:
        _reachability_store(run, before, outcome)
    stored_sessions.budget_store(run.session, run, outcome.budget_after)
    after_turns = storage.after_turns(outcome.budget_before, outcome.budget_after)
    lease.done_scoring(  # a run cancelled meanwhile raises, and none of this is kept
        tokens_before=outcome.budget_before.total_tokens(),
        tokens_after=outcome.budget_after.total_tokens(),
        tokens_freed=outcome.budget_before.total_tokens() - outcome.budget_after.total_tokens(),
        locked_after=outcome.budget_after.locked_tokens(),
        preservable_after=outcome.budget_after.preservable_tokens(),
        eligible_after=outcome.budget_after.gc_eligible_tokens(),
        items_collected=result.items_collected,
        turns_after=outcome.session.turn_count(),
        result=_result_record(result),
        session_after=storage.pack_session_after(outcome.session, before),
        after_turns=storage.packed(after_turns),
    )


def _result_record(result: gcengine.GCResult) -> dict[str, Any]:
    """A result as ``GCRun.result`` keeps it: the ledger and the stash have rows of their own."""
    return result.model_dump(mode="json", exclude={"removal_list", "stash"})


# A ledger item's reachability figures and sentence, as ``Removal`` stores them.
VERDICT_FIELDS = ("reachable", "score", "explanation", "action")


_SOURCE_VALUES = {source: source.value for source in gcengine.InstructionSource}


def _first_turn(message_ids: list[str], position_of: dict[str, int]) -> int | None:
    """The first turn a ledger item takes from. A long session's run has thirteen thousand
    items, most naming one message, whose turn is looked up alone (a generator and ``min``
    for each cost twice as much)."""
    if len(message_ids) == 1:
        return position_of.get(message_ids[0])
    return min((position_of[i] for i in message_ids if i in position_of), default=None)


def _verdict_fields(verdict: gcengine.RemovalVerdict | None) -> tuple[Any, ...]:
    """``VERDICT_FIELDS`` of a ledger item: empty for strategies that give no verdict."""
    if verdict is None:
        return (None, None, "", "")
    return (verdict.reachable, verdict.score, verdict.sentence, verdict.action)


def _reachability_store(run: GCRun, before: gcengine.Session, outcome: gcengine.GCOutcome) -> None:
    """What a reachability run adds to its ledger: the stash (whole, to restore from, and one
    row a segment, to list and search) and why it kept every other segment."""
    stash = outcome.result.stash
    if stash is not None:
        removal_of = dict(Removal.objects.filter(run=run).values_list("child_key", "pk"))
        StashedSegment.objects.bulk_create(
            (
                StashedSegment(
                    run=run,
                    removal_id=removal_of[segment.segment_id[:400]],
                    segment_id=segment.segment_id[:400],
                    kind=segment.kind.value,
                    turn_index=segment.turn_index,
                    tokens=segment.tokens,
                    score=segment.score,
                    reachable=segment.reachable,
                    reason=segment.reason,
                    anchors=segment.shown_anchors,
                    anchors_text="\n".join(segment.shown_anchors),
                    text=segment.text,
                )
                for segment in stash.segments
            ),
            batch_size=BULK_BATCH,
        )
        GCRun.objects.filter(pk=run.pk).update(stash=storage.pack_stash(stash))
    analysis = gcengine.analyze(before, config_validated(run.config))
    KeptSegment.objects.bulk_create(
        (
            KeptSegment(
                run=run,
                position=position,
                segment_id=segment.segment_id[:400],
                kind=segment.kind.value,
                turn_index=segment.turn_index,
                tokens=segment.tokens,
                score=segment.score,
                reachable=segment.reachable,
                root=segment.root,
                reason=segment.reason,
            )
            for position, segment in enumerate(analysis.segments)
            if segment.proposed == "keep"
        ),
        batch_size=BULK_BATCH,
    )


def _summaries(
    run: GCRun,
    outcome: gcengine.GCOutcome,
    touched: list[int],
    position_of: dict[str, int],
) -> list[Summary]:
    """The chain after the run: summaries it kept and the one it wrote, in history order;
    ``touched`` are the positions of the turns the run took something from; ``position_of``
    places each message of the session before by its turn (one the run wrote is not there)."""
    figures = storage.message_figures(outcome.budget_after)
    # A new summary goes in before the first turn anything was taken from.
    first_touched = min(touched, default=None)
    rows = []
    for message in outcome.session.history:
        if message.kind is not gcengine.MessageKind.SUMMARY:
            continue
        written = message.message_id not in position_of
        number = message.metadata.get("summary_number")
        rows.append(
            Summary(
                run=run,
                number=number if isinstance(number, int) else None,
                message_id=message.message_id,
                text=message.text,
                tokens=figures[message.message_id][0] if message.message_id in figures else 0,
                covers_turns=list(message.metadata.get("covers_turns") or []),
                covers_summary=message.metadata.get("covers_summary"),
                summarizer=str(message.metadata.get("summarizer") or ""),
                written_by_run=written,
                inserted_before_position=first_touched
                if written
                else position_of.get(message.message_id),
            )
        )
    return rows
