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
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.tasks import TaskResultStatus, task_backends
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.backend import DatabaseBackend
from django_tasks_db.models import DBTaskResult

import gcengine
from jaato_web.dashboard import storage, tasks
from jaato_web.dashboard.audit import actor_name, audit_record
from jaato_web.dashboard.models import (
    AuditAction,
    GCRun,
    IngestJob,
    IngestUpload,
    JobStatus,
    Project,
    Replay,
    Worker,
)
from jaato_web.errors import InputError

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    Actor = AbstractBaseUser | AnonymousUser | None

logger = logging.getLogger(__name__)

Work = IngestJob | GCRun | Replay
WorkModel = type[IngestJob] | type[GCRun] | type[Replay]
# The work that is done before its anchor retention is scored.
ScoredModel = type[GCRun] | type[Replay]
WORK_MODELS: tuple[WorkModel, ...] = (IngestJob, GCRun, Replay)
# A worker that stops twice on the same work is not sent to it a third time.
MAX_ATTEMPTS = 2
# A worker not seen for this long is forgotten (its row only says it was once alive).
FORGET_WORKERS_AFTER = timedelta(days=1)

# What the worker was doing, for the messages that say it stopped.
_DOING = {
    IngestJob: "reading this file",
    GCRun: "collecting this session",
    Replay: "replaying this session",
}


class WorkLost(Exception):
    """The work was cancelled, or given to another worker after this one's lease lapsed."""


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


def _end(work: Any, model: WorkModel, pk: int, **fields: Any) -> int:
    """End ``work`` (a query of the row as it must still be) with ``fields``: no worker holds
    it any more, a run records when it ended, and an upload's bytes go, whichever way it
    ended (the session keeps its own copy)."""
    cleared: dict[str, Any] = {"claimed_by": "", "lease_until": None, "progress": ""}
    if model is GCRun:
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


def work_progress(model: WorkModel, pk: int, text: str) -> None:
    """Say what the work is doing now, renewing the lease; ``WorkLost`` if it is not ours."""
    if not _held(model, pk).update(progress=text, lease_until=timezone.now() + lease_length()):
        raise WorkLost


def work_done(model: WorkModel, pk: int, **fields: Any) -> None:
    """End the work as done with ``fields``; ``WorkLost`` if it is no longer ours. Inside the
    transaction that stores the result, so a lost claim rolls the result back."""
    if not _end(_held(model, pk), model, pk, **fields, status=JobStatus.DONE):
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
    _end(_held(model, pk), model, pk, **fields, status=JobStatus.FAILED, error=error)


def work_run(model: WorkModel, pk: int, body: Callable[[], None]) -> None:
    """Run claimed work. Work lost meanwhile is dropped; any other error ends it failed with
    a message the page shows, and is raised again so the task and the log keep its
    traceback."""
    try:
        body()
    except WorkLost:
        logger.info("%s %s was cancelled or taken over; dropped", model.__name__, pk)
    except Exception as error:
        logger.exception("%s %s failed", model.__name__, pk)
        work_failed(model, pk, internal_error(model, error))
        raise


def internal_error(model: WorkModel, error: Exception) -> str:
    what = "nothing was stored" if model is IngestJob else "nothing of it was kept"
    return (
        f"the server failed while {_DOING[model]} ({type(error).__name__}); {what}. "
        "Try again; if it fails again, the server log says why."
    )


# --- Workers: alive, renewing, sweeping ------------------------------------------------------


def worker_beat(*, name: str, started_at: datetime) -> None:
    """A worker is alive: renew the leases it holds and note when it was seen."""
    now = timezone.now()
    Worker.objects.update_or_create(
        name=name,
        defaults={"seen_at": now},
        create_defaults={"started_at": started_at, "seen_at": now},
    )
    for model in WORK_MODELS:  # running work, and done runs being scored
        model.objects.filter(lease_until__isnull=False, claimed_by=name).update(
            lease_until=now + lease_length()
        )
    Worker.objects.filter(seen_at__lt=now - FORGET_WORKERS_AFTER).delete()


def worker_gone(*, name: str) -> None:
    """A worker that stops cleanly says so, so pages do not count on it."""
    Worker.objects.filter(name=name).delete()


def _task_of(model: WorkModel) -> Any:
    """The task that runs this kind of work (looked up when needed: ``tasks`` imports the
    services, which import this module)."""
    if model is IngestJob:
        return tasks.ingest_upload
    return tasks.execute_run if model is GCRun else tasks.execute_replay


def work_sweep() -> int:
    """Work whose worker stopped: queued again for another worker when it was its first
    attempt, failed with the reason otherwise. Returns how much was swept.

    A worker has stopped when its lease lapsed, or at once when it ran on this machine and its
    process is gone (a restarted worker takes up what the killed one held without waiting out
    the lease). Every worker sweeps; each change is made only if the row is still as it was
    read, so two sweepers at once move each piece of work once."""
    now = timezone.now()
    swept = 0
    for model in WORK_MODELS:
        held = model.objects.filter(status=JobStatus.RUNNING, lease_until__isnull=False)
        for pk, attempts, worker, lease in held.values_list(
            "pk", "attempts", "claimed_by", "lease_until"
        ):
            if lease is not None and lease >= now and not _gone_from_here(worker):
                continue
            with transaction.atomic():
                still = model.objects.filter(
                    pk=pk, status=JobStatus.RUNNING, claimed_by=worker, lease_until=lease
                )
                if attempts < MAX_ATTEMPTS:
                    moved = _retried(model, pk, still)
                else:
                    moved = _given_up(model, pk, still, attempts)
            if moved:
                logger.warning("%s %s: worker %s stopped; swept", model.__name__, pk, worker)
                swept += moved
    return swept + _scoring_sweep(now) + _unstarted_sweep(now)


def _unstarted_sweep(now: datetime) -> int:
    """Queued work no task will start: the worker that took its task stopped before it
    claimed the work (django-tasks-db hands a task to one worker, marks it running, and never
    hands it again). Such work gets a task again; a second task for work another worker
    claimed meanwhile finds it taken and does nothing, so an extra one costs nothing."""
    if not isinstance(task_backends["default"], DatabaseBackend):
        return 0
    swept = 0
    for model in WORK_MODELS:
        unstarted = set(model.objects.filter(status=JobStatus.QUEUED).values_list("pk", flat=True))
        if not unstarted:
            continue
        task = _task_of(model)
        coming = DBTaskResult.objects.filter(task_path=task.module_path).filter(
            Q(status=TaskResultStatus.READY)
            | Q(status=TaskResultStatus.RUNNING, started_at__gte=now - lease_length())
        )
        for args_kwargs in coming.values_list("args_kwargs", flat=True):
            unstarted.difference_update(args_kwargs["args"][:1])
        for pk in sorted(unstarted):
            logger.warning(
                "%s %s: queued, and no task will start it; queued again", model.__name__, pk
            )
            task.enqueue(pk)
        swept += len(unstarted)
    return swept


# What a run or replay whose worker stopped while scoring it says about its anchor retention.
SCORING_STOPPED: dict[ScoredModel, str] = {
    GCRun: "the worker stopped while scoring this run, so it was not scored; run the policy "
    "again to see its anchor retention",
    Replay: "the worker stopped while scoring this replay, so it was not scored; replay it "
    "again to see its anchor retention",
}


def _scoring_stopped(model: ScoredModel) -> dict[str, Any]:
    """What a sweep stores on work of ``model`` whose worker stopped while scoring it."""
    said = SCORING_STOPPED[model]
    if model is GCRun:
        return {"retention": storage.retention_record(gcengine.AnchorRetention(unscorable=said))}
    return {"unscored_because": said}


def _scoring_sweep(now: datetime) -> int:
    """Done runs and replays whose worker stopped while scoring them: not scored, said so
    (scoring is not tried on its own again: the ledger or chart stands without it, and a
    session that stops a worker while it is scored would stop the next one too)."""
    swept = 0
    for model in (GCRun, Replay):
        scoring = model.objects.filter(retention_pending=True, lease_until__isnull=False)
        for pk, worker, lease in scoring.values_list("pk", "claimed_by", "lease_until"):
            if lease is not None and lease >= now and not _gone_from_here(worker):
                continue
            swept += model.objects.filter(
                pk=pk, retention_pending=True, claimed_by=worker, lease_until=lease
            ).update(
                **_scoring_stopped(model), retention_pending=False, claimed_by="", lease_until=None
            )
    return swept


def _gone_from_here(worker: str) -> bool:
    """Whether ``worker`` ran on this machine and its process no longer exists."""
    host, _, pid = worker.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, under another user
        return False
    return False


def _retried(model: WorkModel, pk: int, still: Any) -> int:
    moved: int = still.update(
        status=JobStatus.QUEUED,
        claimed_by="",
        lease_until=None,
        progress=f"the worker stopped while {_DOING[model]}; waiting for another to retry",
    )
    if moved:
        transaction.on_commit(partial(_task_of(model).enqueue, pk))
    return moved


def _given_up(model: WorkModel, pk: int, still: Any, attempts: int) -> int:
    times = "twice" if attempts == 2 else f"{attempts} times"
    reason = f"the worker stopped while {_DOING[model]}; tried {times}, so it is not tried again"
    return _end(still, model, pk, status=JobStatus.FAILED, error=reason)


# --- Cancelling --------------------------------------------------------------------------------


def work_cancel(*, work: Work, actor: Actor = None) -> None:
    """Stop queued or running work: it ends failed, "cancelled by ann", and its page stops
    following it. A worker busy with it drops it at its next step and stores nothing. Work
    that has ended already raises ``WorkEnded``."""
    model = type(work)
    pending = model.objects.filter(pk=work.pk, status__in=(JobStatus.QUEUED, JobStatus.RUNNING))
    reason = f"cancelled by {actor_name(actor)}"
    with transaction.atomic():
        cancelled = _end(pending, model, work.pk, status=JobStatus.FAILED, error=reason)
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
    session = work.session
    if isinstance(work, GCRun):
        return (
            session.project,
            f"run {work.pk} of {session.label}",
            reverse("run_detail", args=[work.pk]),
        )
    return session.project, f"replay of {session.label}", reverse("replay_detail", args=[work.pk])
