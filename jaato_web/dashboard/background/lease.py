"""Background work's lease: which worker runs an upload, a run or a replay, until when, and
what becomes of the work when that worker is gone.

django-tasks-db hands a task to one worker and never again, so a worker killed mid-task would
leave its work "running" for good. The work rows therefore carry a lease of their own:

1. A worker claims queued work: running, ``claimed_by`` its ``host:pid``, a lease of
   ``JAATO_TASK_LEASE_SECONDS``, one attempt more.
2. While the worker lives, the keeper thread of ``manage.py db_worker`` renews the lease four
   times per lease and says the worker is alive (``Worker.seen_at``); progress renews it too.
3. Every later write of the worker names the worker. Work cancelled, or given to another
   worker after the lease lapsed, is no longer its own: the write changes nothing and the
   worker drops the work (``WorkLost``), so nothing is stored twice or over a cancel.
4. Each keeper sweeps: work whose lease lapsed (or whose worker ran on this machine and is
   gone) is queued again once, then failed with a reason the page shows; queued work whose
   task a worker took and never started gets a task again.
5. Any error while working ends the work failed with a message (the traceback goes to the
   log), never "running" forever.
6. A run is done, its ledger readable, and a replay done, its chart drawn, before their
   anchor retention is scored: the worker keeps the lease while it scores, so a worker that
   stops then is swept too, and the work says it was not scored instead of "being scored"
   for good.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from jaato_web.dashboard.audit import actor_name, audit_record
from jaato_web.dashboard.models import (
    AuditAction,
    GCRun,
    IngestJob,
    IngestUpload,
    JobStatus,
    PolicyRanking,
    Project,
)
from jaato_web.dashboard.services.work import (
    Lease,
    ScoredModel,
    Work,
    WorkLost,
    WorkModel,
    internal_error,
)
from jaato_web.errors import InputError

if TYPE_CHECKING:
    from jaato_web.dashboard.services.common import Actor

logger = logging.getLogger(__name__)


class WorkEnded(InputError):
    """Work that cannot be cancelled: it is done or failed already."""

    status = 409

    def __init__(self, work: Work) -> None:
        super().__init__(f"it has already ended ({work.status}); there is nothing to cancel")


def process_name() -> str:
    """How a worker process is named on the work it holds: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"[:100]


def lease_length() -> timedelta:
    return timedelta(seconds=settings.JAATO_TASK_LEASE_SECONDS)


def beat_interval() -> float:
    """How often a worker renews its leases and says it is alive: four times per lease."""
    return settings.JAATO_TASK_LEASE_SECONDS / 4


def work_end(work: Any, model: WorkModel, pk: int, **fields: Any) -> int:
    """End ``work`` (a query of the row as it must still be) with ``fields``: no worker holds
    it any more, a run records when it ended, and an upload's bytes go, whichever way it
    ended (the session keeps its own copy)."""
    cleared: dict[str, Any] = {"claimed_by": "", "lease_until": None, "progress": ""}
    if model is GCRun or model is PolicyRanking:
        cleared["finished_at"] = timezone.now()
    ended: int = work.update(**{**cleared, **fields})
    if ended and model is IngestJob:
        IngestUpload.objects.filter(job_id=pk).delete()
    return ended


def work_claim(model: WorkModel, pk: int, progress: str) -> bool:
    """Take queued work for this process; False when it is not queued (another worker took
    it, or it was cancelled)."""
    now = timezone.now()
    return bool(
        model.objects.filter(pk=pk, status=JobStatus.QUEUED).update(
            status=JobStatus.RUNNING,
            claimed_by=process_name(),
            lease_until=now + lease_length(),
            attempts=F("attempts") + 1,
            progress=progress,
            error="",
        )
    )


def _held(model: WorkModel, pk: int) -> Any:
    return model.objects.filter(pk=pk, status=JobStatus.RUNNING, claimed_by=process_name())


def work_progress(model: WorkModel, pk: int, text: str, **fields: Any) -> None:
    """Say what the work is doing now (with ``fields``), renewing the lease; ``WorkLost`` if
    it is not ours."""
    renewed = timezone.now() + lease_length()
    if not _held(model, pk).update(**fields, progress=text, lease_until=renewed):
        raise WorkLost


def work_done(model: WorkModel, pk: int, **fields: Any) -> None:
    """End the work as done with ``fields``; ``WorkLost`` if it is no longer ours. Inside the
    transaction that stores the result, so a lost claim rolls the result back."""
    if not work_end(_held(model, pk), model, pk, **fields, status=JobStatus.DONE):
        raise WorkLost


def work_done_scoring(model: ScoredModel, pk: int, **fields: Any) -> None:
    """End a run or replay as done with ``fields`` while this worker keeps its lease to score
    its anchor retention; ``WorkLost`` if the work is no longer ours."""
    held = {"claimed_by": process_name(), "lease_until": timezone.now() + lease_length()}
    work_done(model, pk, **fields, **held, retention_pending=True)


def work_scored(model: ScoredModel, pk: int, **scores: Any) -> None:
    """Store the anchor retention of done work (``scores``: a run's ``retention``, a
    replay's scored ``series``) and let go of its lease (a sweep that found the worker gone
    meanwhile has already said it was not scored: that stands)."""
    model.objects.filter(pk=pk, retention_pending=True, claimed_by=process_name()).update(
        **scores, retention_pending=False, claimed_by="", lease_until=None
    )


def work_failed(model: WorkModel, pk: int, error: str, **fields: Any) -> None:
    """End the work as failed with ``error`` (and ``fields``); a lost claim changes nothing."""
    work_end(_held(model, pk), model, pk, **fields, status=JobStatus.FAILED, error=error)


def work_carry_out(
    model: WorkModel, pk: int, progress: str, use_case: Callable[[Lease], None]
) -> None:
    """Claim queued work (``progress`` says what it does first) and carry it out: ``use_case``
    reports through the lease it is handed. Work that is not queued any more (another worker
    took it, or it was cancelled) is left alone; work lost meanwhile is dropped; any other
    error ends it failed with a message the page shows, and is raised again so the task and
    the log keep its traceback."""
    if not work_claim(model, pk, progress):
        return
    try:
        use_case(HeldWork(model, pk))
    except WorkLost:
        logger.info("%s %s was cancelled or taken over; dropped", model.__name__, pk)
    except Exception as error:
        logger.exception("%s %s failed", model.__name__, pk)
        work_failed(model, pk, internal_error(model, error))
        raise


@dataclass(frozen=True)
class HeldWork(Lease):
    """The lease this worker holds on one piece of work, as the use case carrying it out
    reports through it (``services.work.Lease``)."""

    model: WorkModel
    pk: int

    def progress(self, text: str, **fields: Any) -> None:
        work_progress(self.model, self.pk, text, **fields)

    def done(self, **fields: Any) -> None:
        work_done(self.model, self.pk, **fields)

    def done_scoring(self, **fields: Any) -> None:
        work_done_scoring(self._scored_model(), self.pk, **fields)

    def scored(self, **scores: Any) -> None:
        work_scored(self._scored_model(), self.pk, **scores)

    def failed(self, error: str, **fields: Any) -> None:
        work_failed(self.model, self.pk, error, **fields)

    def _scored_model(self) -> ScoredModel:
        """The model of work scored once done: a run's or a replay's, never an upload's or a
        ranking's."""
        model = self.model
        if issubclass(model, IngestJob | PolicyRanking):
            raise TypeError(f"{model.__name__} is not scored")
        return model


# --- Cancelling --------------------------------------------------------------------------------


def work_cancel(*, work: Work, actor: Actor = None) -> None:
    """Stop queued or running work: it ends failed, "cancelled by ann", and its page stops
    following it. A worker busy with it drops it at its next step and stores nothing. Work
    that has ended already raises ``WorkEnded``."""
    model = type(work)
    pending = model.objects.filter(pk=work.pk, status__in=(JobStatus.QUEUED, JobStatus.RUNNING))
    reason = f"cancelled by {actor_name(actor)}"
    with transaction.atomic():
        cancelled = work_end(pending, model, work.pk, status=JobStatus.FAILED, error=reason)
        if cancelled:
            project, target, url = _described(work)
            audit_record(
                project=project,
                actor=actor,
                action=AuditAction.CANCEL,
                target=target,
                target_url=url,
                detail={"kind": model.__name__.lower(), "id": work.pk},
            )
    work.refresh_from_db()
    if not cancelled:
        raise WorkEnded(work)


def _described(work: Work) -> tuple[Project, str, str]:
    if isinstance(work, IngestJob):
        return work.project, f"reading {work.filename}", reverse("ingest_job", args=[work.pk])
    if isinstance(work, PolicyRanking):
        return work.project, f"ranking {work.pk}", reverse("policy_ranking", args=[work.pk])
    session = work.session
    if isinstance(work, GCRun):
        return (
            session.project,
            f"run {work.pk} of {session.label}",
            reverse("run_detail", args=[work.pk]),
        )
    return session.project, f"replay of {session.label}", reverse("replay_detail", args=[work.pk])
