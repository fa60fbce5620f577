"""Sessions derived from a run: the session a run left, stored as a session of its own, and a
session with segments a run stashed restored where they were."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from django.db import transaction
from django.urls import reverse

import gcengine
from jaato_web.dashboard import storage
from jaato_web.dashboard.audit import audit_record
from jaato_web.dashboard.models import AgentSession, AuditAction, GCRun, SessionPin
from jaato_web.dashboard.services import stored_sessions
from jaato_web.errors import InputError

if TYPE_CHECKING:
    from jaato_web.dashboard.services.common import Actor


class RestoreError(InputError):
    """A restore that cannot be made: a run that stashed nothing, or segments it did not
    stash (or none at all)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, "segments")


def stash_restore(*, run: GCRun, segment_ids: list[str], actor: Actor = None) -> AgentSession:
    """A new session: the one the run left, with the chosen stashed segments back where they
    were. The run, its session and the original upload stay as they are; the new session
    records the run it derives from and what was restored, and is in the audit log. Restoring
    the same segments again gives the session made the first time."""
    wanted = list(dict.fromkeys(i for i in segment_ids if i))
    if not wanted:
        raise RestoreError("choose at least one stashed segment to restore")
    packed = GCRun.objects.filter(pk=run.pk).values_list("stash", flat=True).first()
    after = stored_sessions.session_after_of(run)
    if packed is None or after is None:
        raise RestoreError(f"run {run.pk} stashed nothing to restore")
    stash = storage.unpack_stash(bytes(packed))
    known = {segment.segment_id for segment in stash.segments}
    unknown = [i for i in wanted if i not in known]
    if unknown:
        raise RestoreError(f"run {run.pk} stashed no segment {unknown[0]!r}")
    restored = gcengine.restore(after, stash, wanted)
    session = run.session
    noun = "segment" if len(wanted) == 1 else "segments"
    label = f"{session.label} (run {run.pk}, {len(wanted):,} {noun} restored)"
    # The pins of the session the prune left when it is stored (pins may have been made in
    # it since), else of the run's own session.
    source = (
        AgentSession.objects.filter(derived_from_run=run, restored_segments=[]).first()
        or run.session
    )
    with transaction.atomic():
        derived, made = _derived_store(run, restored, label, wanted, source)
        if made:
            audit_record(
                project=session.project,
                actor=actor,
                action=AuditAction.RESTORE,
                target=f"{len(wanted):,} {noun} from run {run.pk} of {session.label}",
                target_url=reverse("session_detail", args=[derived.pk]),
                detail={"run": run.pk, "session": derived.pk, "segments": wanted},
            )
    return derived


def run_result_session(*, run: GCRun) -> AgentSession | None:
    """The session a done run left, stored as a session of its own (derived from the run, as a
    restore's is) so it can be read, pinned, collected and restored into like an upload; the
    same one each time. None while the run is not done. The run's own audit event covers it."""
    after = stored_sessions.session_after_of(run)
    if after is None:
        return None
    label = f"{run.session.label} (after run {run.pk})"
    with transaction.atomic():
        return _derived_store(run, after, label, [], run.session)[0]


def _derived_store(
    run: GCRun, engine: gcengine.Session, label: str, restored: list[str], source: AgentSession
) -> tuple[AgentSession, bool]:
    """``engine`` stored as a session derived from ``run``, with the segments ``restored`` into
    it and the pins of ``source``, the session it derives from; the project's session of the
    same content when there is one (and False)."""
    data = gcengine.dump_session(engine).encode()
    digest = hashlib.sha256(data).hexdigest()
    project = run.session.project
    existing = AgentSession.objects.filter(project=project, sha256=digest).first()
    if existing is not None:
        return existing, False
    derived = stored_sessions.session_store(
        project, label[:300], storage.original_of(data), digest, engine
    )
    AgentSession.objects.filter(pk=derived.pk).update(
        derived_from_run=run, restored_segments=restored
    )
    derived.derived_from_run, derived.restored_segments = run, restored
    _pins_carried(source, derived, engine)
    return derived, True


def _pins_carried(source: AgentSession, derived: AgentSession, engine: gcengine.Session) -> None:
    """``source``'s pins on ``derived`` (``engine``), for the turns and messages it holds: a
    turn keeps its stable index and a message its id through a run and a restore, so each pin
    means the same there (and a pinned turn is never taken)."""
    turns = {turn.index for turn in engine.turns()}
    messages = {message.message_id for message in engine.history}
    SessionPin.objects.bulk_create(
        SessionPin(
            session=derived, turn_index=pin.turn_index, message_id=pin.message_id, author=pin.author
        )
        for pin in source.pins.all()
        if (pin.turn_index in turns if pin.turn_index is not None else pin.message_id in messages)
    )
