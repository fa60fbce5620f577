"""What the lease keeper of every worker does (``manage.py db_worker``): say the worker is
alive, renew the leases it holds, and sweep work whose worker stopped (``lease`` says how).
"""

from __future__ import annotations

import logging
import os
import socket
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.tasks import Task, TaskResultStatus, task_backends
from django.utils import timezone
from django_tasks_db.backend import DatabaseBackend
from django_tasks_db.models import DBTaskResult

import gcengine
from jaato_web.dashboard import storage
from jaato_web.dashboard.background import tasks
from jaato_web.dashboard.background.lease import lease_length, work_end
from jaato_web.dashboard.models import GCRun, IngestJob, JobStatus, PolicyRanking, Replay, Worker
from jaato_web.dashboard.services.work import DOING, ScoredModel, WorkModel

logger = logging.getLogger(__name__)

WORK_MODELS: tuple[WorkModel, ...] = (IngestJob, GCRun, Replay, PolicyRanking)
# A worker that stops twice on the same work is not sent to it a third time.
MAX_ATTEMPTS = 2
# A worker not seen for this long is forgotten (its row only says it was once alive).
FORGET_WORKERS_AFTER = timedelta(days=1)


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


def _task_of(model: WorkModel) -> Task[[int], None]:
    """The task that runs this kind of work."""
    if model is IngestJob:
        return tasks.ingest_upload
    if model is PolicyRanking:
        return tasks.execute_ranking
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
        progress=f"the worker stopped while {DOING[model]}; waiting for another to retry",
    )
    if moved:
        transaction.on_commit(partial(_task_of(model).enqueue, pk))
    return moved


def _given_up(model: WorkModel, pk: int, still: Any, attempts: int) -> int:
    times = "twice" if attempts == 2 else f"{attempts} times"
    reason = f"the worker stopped while {DOING[model]}; tried {times}, so it is not tried again"
    return work_end(still, model, pk, status=JobStatus.FAILED, error=reason)
