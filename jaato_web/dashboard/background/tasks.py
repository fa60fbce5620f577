"""Background work from its start to its end: the actions that start it, the tasks a worker
runs, and each use case carried out under its lease.

Starting: the doors call ``session_upload``, ``run_start``, ``replay_request``,
``ranking_request`` and the others here, not the services beneath them. Each records the work
through its service, then enqueues its task when the transaction commits, so a worker never
looks for a row not yet written, and work rolled back is never started.

Running: ids in, services inside, so a task survives a JSON round trip and a worker on another
machine reads the same rows. A worker (``manage.py db_worker``) runs one task at a time in a
process of its own, so there the cycle collector is paused while a task builds and drops
hundreds of thousands of engine values (a 10,000-turn run takes a third of the time). A task run
inside a web request (the immediate backend, for tests and small setups) does not pause it for
the whole task: that would stop the collector for every other request the process is serving
for seconds (only reading a stored session back pauses it, for a fraction of a second).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.tasks import Task, task, task_backends
from django.tasks.backends.immediate import ImmediateBackend

import gcengine
from jaato_web.dashboard.background.lease import work_carry_out
from jaato_web.dashboard.models import (
    AgentSession,
    GCRun,
    IngestJob,
    PolicyRanking,
    PolicyVersion,
    Project,
    Replay,
)
from jaato_web.dashboard.previews import ranking
from jaato_web.dashboard.services import policies, replays, runs, uploads
from jaato_web.dashboard.services.work import Lease

if TYPE_CHECKING:
    from jaato_web.dashboard.services.common import Actor


def _in_worker(work: Callable[[], None]) -> None:
    if isinstance(task_backends["default"], ImmediateBackend):
        work()
        return
    with gcengine.cyclic_gc_paused():
        work()


@task
def ingest_upload(job_id: int) -> None:
    _in_worker(lambda: ingest_job_execute(job_id=job_id))


@task
def execute_run(run_id: int) -> None:
    _in_worker(lambda: run_execute(run_id=run_id))


@task
def execute_replay(replay_id: int) -> None:
    _in_worker(lambda: replay_execute(replay_id=replay_id))


@task
def execute_ranking(ranking_id: int) -> None:
    _in_worker(lambda: ranking_execute(ranking_id=ranking_id))


def _enqueue_on_commit(work: Task[[int], None], pk: int) -> None:
    """Hand the work of row ``pk`` to a worker once the row is committed (at once outside a
    transaction); rolled back, it is never handed over."""
    transaction.on_commit(partial(work.enqueue, pk))


# --- Carrying work out under its lease -------------------------------------------------------


def ingest_job_execute(*, job_id: int) -> None:
    """Read a queued upload; on success store the session and run the project's default
    policy on it, on failure keep only the error."""

    def read_then_run(lease: Lease) -> None:
        stored = uploads.upload_read(job_id=job_id, lease=lease)
        if stored is not None:
            _run_on_upload(stored)

    work_carry_out(IngestJob, job_id, "reading the file and counting tokens", read_then_run)


def run_execute(*, run_id: int) -> None:
    """Run the engine for a queued run and store everything its pages and exports show."""
    work_carry_out(
        GCRun,
        run_id,
        "loading the session",
        lambda lease: runs.run_collect(run_id=run_id, lease=lease),
    )


def replay_execute(*, replay_id: int) -> None:
    """Replay a queued replay, store its chart, then score it."""
    work_carry_out(
        Replay,
        replay_id,
        "replaying turn by turn",
        lambda lease: replays.replay_draw(replay_id=replay_id, lease=lease),
    )


def ranking_execute(*, ranking_id: int) -> None:
    """Rank a queued ranking's versions over its sessions and store the ranking."""
    work_carry_out(
        PolicyRanking,
        ranking_id,
        "reading the sessions",
        lambda lease: ranking.ranking_draw(ranking_id=ranking_id, lease=lease),
    )


# --- Starting work ---------------------------------------------------------------------------


def session_upload(
    *, project: Project, filename: str, data: bytes, actor: Actor = None
) -> uploads.UploadReceipt:
    """Store an uploaded session, or say it is already here (``uploads.upload_receive``), and
    start what it asks for: a worker to read a large one, the default policy's run on a session
    stored now."""
    return _receipt_started(
        uploads.upload_receive(project=project, filename=filename, data=data, actor=actor)
    )


def session_upload_file(
    *, project: Project, upload: UploadedFile[Any], actor: Actor = None
) -> uploads.UploadReceipt:
    """``session_upload`` of an uploaded file, read whole only when the project lacks it."""
    return _receipt_started(
        uploads.upload_file_receive(project=project, upload=upload, actor=actor)
    )


def sessions_upload(
    *, project: Project, files: Iterable[UploadedFile[Any]], actor: Actor = None
) -> list[uploads.UploadOutcome]:
    """Upload several files at once, each on its own: one that is empty, too large or not a
    session file is reported and stores nothing, and the others are stored all the same."""
    return uploads.upload_outcomes(
        files, lambda upload: session_upload_file(project=project, upload=upload, actor=actor)
    )


def _receipt_started(receipt: uploads.UploadReceipt) -> uploads.UploadReceipt:
    """``receipt``, once what it asks for is started."""
    if receipt.job is not None:
        _enqueue_on_commit(ingest_upload, receipt.job.pk)
    elif receipt.stored_now:
        assert receipt.session is not None
        _run_on_upload(receipt.session)
    return receipt


def _run_on_upload(session: AgentSession) -> None:
    """Queue the run of the project's default policy on a session just uploaded, if any."""
    version = uploads.version_run_on_upload(session)
    if version is not None:
        run_start(session=session, policy_version=version, trigger="upload")


def run_start(
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
    """Queue a run (``runs.run_queue`` says of what, and checks it) for a worker to carry
    out."""
    with transaction.atomic():
        run = runs.run_queue(
            session=session,
            policy_version=policy_version,
            config=config,
            plugin=plugin,
            trigger=trigger,
            context_limit=context_limit,
            compaction_id=compaction_id,
            actor=actor,
        )
        _enqueue_on_commit(execute_run, run.pk)
    return run


def policy_apply(
    *,
    version: PolicyVersion,
    sessions: list[AgentSession],
    trigger: str = "manual",
    actor: Actor = None,
) -> list[GCRun]:
    """Queue one run of ``version`` per session; they run in the background, in order."""
    with transaction.atomic():
        return [
            run_start(session=s, policy_version=version, trigger=trigger, actor=actor)
            for s in sessions
        ]


def replay_request(
    *,
    session: AgentSession,
    policy_version: PolicyVersion | None = None,
    config: Any = None,
    context_limit: int | None = None,
    compaction_id: str = "",
    actor: Actor = None,
) -> Replay:
    """The replay of a session under a stored version or a gc.json
    (``replays.replay_get_or_queue``): the stored one, or one queued now for a worker."""
    with transaction.atomic():
        replay, queued = replays.replay_get_or_queue(
            session=session,
            policy_version=policy_version,
            config=config,
            context_limit=context_limit,
            compaction_id=compaction_id,
            actor=actor,
        )
        if queued:
            _enqueue_on_commit(execute_replay, replay.pk)
    return replay


def ranking_request(
    *,
    project: Project,
    sessions: list[AgentSession],
    versions: list[PolicyVersion],
    by: str = "retention",
    context_limit: int | None = None,
) -> PolicyRanking:
    """The ranking of ``versions`` over ``sessions`` (``policies.ranking_get_or_queue``): the
    one stored for the same inputs, or one queued now for a worker."""
    with transaction.atomic():
        row, queued = policies.ranking_get_or_queue(
            project=project,
            sessions=sessions,
            versions=versions,
            by=by,
            context_limit=context_limit,
        )
        if queued:
            _enqueue_on_commit(execute_ranking, row.pk)
    return row


# How often a caller waiting for a ranking reads it again, in seconds.
RANKING_WAIT_POLL = 0.1


def ranking_wait(*, ranking: PolicyRanking, seconds: float) -> PolicyRanking:
    """``ranking`` as it stands once it has ended, or once ``seconds`` have passed (for the
    API and the agent tool, which answer with the ranking rather than a page that polls)."""
    deadline = time.monotonic() + seconds
    while ranking.is_pending and time.monotonic() < deadline:
        time.sleep(min(RANKING_WAIT_POLL, max(deadline - time.monotonic(), 0.0)))
        ranking.refresh_from_db()
    return ranking
