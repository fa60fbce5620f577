"""Background work always ends: leases, retries, cancels, failures with a message, and a page
that says when no worker is there to take the work.

Leases are tested without waiting for one to lapse: a test sets ``lease_until`` in the past,
or names a worker on another machine (``elsewhere:1``) or a process of this one that is gone.
``test_worker_process.py`` kills a real worker.
"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import OperationalError
from django.tasks import TaskResultStatus
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

import gcengine
from gcengine.synthetic import SessionShape, generate_session_file
from jaato_web.dashboard import background, selectors, storage
from jaato_web.dashboard.background import tasks
from jaato_web.dashboard.models import (
    AgentSession,
    AuditAction,
    AuditEvent,
    BudgetNode,
    GCRun,
    IngestJob,
    IngestUpload,
    JobStatus,
    Project,
    Removal,
    Replay,
    Worker,
)
from jaato_web.dashboard.services import stored_sessions
from jaato_web.teams.permissions import Role
from tests.web.conftest import TIGHT_BUDGET, make_member, session_bytes, signed_in_client

pytestmark = pytest.mark.django_db

DATABASE_TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
ELSEWHERE = "elsewhere:1"  # a worker on another machine: only its lease says it is alive


def queued_run(session: AgentSession) -> GCRun:
    """A run whose task was never handed to a worker (its transaction was never committed)."""
    return background.run_start(session=session, config=TIGHT_BUDGET)


def held(work: Any, *, by: str = ELSEWHERE, attempts: int = 1, lapsed: bool = True) -> None:
    """Make ``work`` look taken by worker ``by``, its lease lapsed or still running."""
    lease = timezone.now() + timedelta(seconds=-1 if lapsed else 60)
    type(work).objects.filter(pk=work.pk).update(
        status=JobStatus.RUNNING, claimed_by=by, attempts=attempts, lease_until=lease
    )


def gone_process() -> str:
    """The name a worker of this machine had, whose process has ended."""
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return f"{socket.gethostname()}:{ended.stdout.strip()}"


def large_upload(project: Project, data: bytes, settings: Any, capture: Any) -> IngestJob:
    settings.JAATO_INLINE_INGEST_BYTES = 10
    with capture(execute=True):
        receipt = background.session_upload(project=project, filename="big.json", data=data)
    assert receipt.job is not None
    return IngestJob.objects.get(pk=receipt.job.pk)


def nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


def session_with_args(args: Any) -> bytes:
    """A generated session whose first tool call has these arguments."""
    document = generate_session_file(SessionShape(turns=3, tool_every=1, seed=5))
    for message in document["history"]:
        for part in message["parts"]:
            if part.get("type") == "function_call":
                part["args"] = args
                return json.dumps(document).encode()
    raise AssertionError("the generated session calls no tool")


# --- Leases ----------------------------------------------------------------------------------


def test_a_worker_claims_queued_work_under_a_lease(stored_session: AgentSession) -> None:
    run = queued_run(stored_session)

    assert background.work_claim(GCRun, run.pk, "loading the session")
    assert not background.work_claim(GCRun, run.pk, "loading the session")  # taken already

    run.refresh_from_db()
    lease = run.lease_until - timezone.now()  # type: ignore[operator]
    assert run.status == JobStatus.RUNNING
    assert run.claimed_by == background.process_name()
    assert run.attempts == 1
    assert timedelta(seconds=55) < lease <= timedelta(seconds=60)


def test_work_whose_lease_lapsed_is_tried_again_by_another_worker(
    stored_session: AgentSession, django_capture_on_commit_callbacks: Any
) -> None:
    run = queued_run(stored_session)
    held(run)

    with django_capture_on_commit_callbacks(execute=True):  # the retry's task runs here
        swept = background.work_sweep()

    run.refresh_from_db()
    assert swept == 1
    assert run.status == JobStatus.DONE
    assert run.attempts == 2
    assert run.tokens_after is not None
    assert run.lease_until is None


@pytest.mark.parametrize(
    ("kind", "doing"),
    [("job", "reading this file"), ("run", "collecting this session")],
)
def test_work_whose_worker_stopped_twice_fails_with_the_reason(
    client: Client,
    project: Project,
    stored_session: AgentSession,
    settings: Any,
    kind: str,
    doing: str,
) -> None:
    if kind == "job":
        settings.JAATO_INLINE_INGEST_BYTES = 10
        other = session_bytes(SessionShape(turns=2, seed=8))
        work: Any = background.session_upload(project=project, filename="b.json", data=other).job
        page = reverse("ingest_job", args=[work.pk])
    else:
        work = queued_run(stored_session)
        page = reverse("run_detail", args=[work.pk])
    held(work, attempts=2)

    assert background.work_sweep() == 1

    work.refresh_from_db()
    reason = f"the worker stopped while {doing}; tried twice, so it is not tried again"
    html = client.get(page).content.decode()
    assert work.status == JobStatus.FAILED
    assert work.error == reason
    assert reason in html
    assert "every 2s" not in html  # the page stops following it
    if kind == "job":
        assert not IngestUpload.objects.filter(job=work).exists()


def test_a_lease_still_running_is_left_alone(stored_session: AgentSession) -> None:
    run = queued_run(stored_session)
    held(run, lapsed=False)

    assert background.work_sweep() == 0
    run.refresh_from_db()
    assert run.status == JobStatus.RUNNING


def test_work_of_a_process_gone_from_this_machine_is_taken_up_at_once(
    stored_session: AgentSession,
) -> None:
    """A restarted worker need not wait out the lease of the one that was killed."""
    run = queued_run(stored_session)
    held(run, by=gone_process(), lapsed=False)

    assert background.work_sweep() == 1
    run.refresh_from_db()
    assert run.status == JobStatus.QUEUED
    assert "the worker stopped while collecting this session" in run.progress


def test_queued_work_whose_task_a_stopped_worker_took_gets_a_task_again(
    stored_session: AgentSession, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """A worker killed after django-tasks-db handed it the task, before it claimed the run:
    the task row says running for good and the run says queued for good, unless swept."""
    settings.TASKS = DATABASE_TASKS
    with django_capture_on_commit_callbacks(execute=True):
        lost, waiting, just_taken = (queued_run(stored_session) for _ in range(3))
    task_of = {row.args_kwargs["args"][0]: row.pk for row in DBTaskResult.objects.all()}
    DBTaskResult.objects.filter(pk=task_of[lost.pk]).update(
        status=TaskResultStatus.RUNNING, started_at=timezone.now() - timedelta(minutes=5)
    )
    DBTaskResult.objects.filter(pk=task_of[just_taken.pk]).update(
        status=TaskResultStatus.RUNNING, started_at=timezone.now()
    )

    assert background.work_sweep() == 1

    ready = sorted(row.args_kwargs["args"][0] for row in DBTaskResult.objects.ready())
    assert ready == sorted([lost.pk, waiting.pk])
    assert background.work_sweep() == 0  # its new task is on its way


def test_a_worker_renews_its_own_leases_and_says_it_is_alive(
    stored_session: AgentSession,
) -> None:
    mine, theirs = queued_run(stored_session), queued_run(stored_session)
    held(mine, by=background.process_name(), lapsed=False)
    held(theirs, lapsed=False)
    before = {r.pk: r.lease_until for r in GCRun.objects.all()}
    started = timezone.now()

    background.worker_beat(name=background.process_name(), started_at=started)

    after = {r.pk: r.lease_until for r in GCRun.objects.all()}
    worker = Worker.objects.get()
    assert after[mine.pk] > before[mine.pk]  # type: ignore[operator]
    assert after[theirs.pk] == before[theirs.pk]
    assert worker.name == background.process_name()
    assert worker.started_at == started


def scoring(work: GCRun | Replay, *, by: str = ELSEWHERE, lapsed: bool = True) -> None:
    """Make a run or replay look done, its anchor retention being scored by worker ``by``."""
    lease = timezone.now() + timedelta(seconds=-1 if lapsed else 60)
    type(work).objects.filter(pk=work.pk).update(
        status=JobStatus.DONE, retention_pending=True, claimed_by=by, lease_until=lease
    )


def test_a_run_whose_worker_stopped_while_scoring_says_it_was_not_scored(
    stored_session: AgentSession,
) -> None:
    stopped, elsewhere, alive = (queued_run(stored_session) for _ in range(3))
    scoring(stopped, by=gone_process(), lapsed=False)  # gone from this machine: at once
    scoring(elsewhere)  # its lease lapsed
    scoring(alive, lapsed=False)

    assert background.work_sweep() == 2

    for run in (stopped, elsewhere):
        run.refresh_from_db()
        retention = storage.retention_read(run.retention)
        assert retention is not None
        assert retention.unscorable == background.SCORING_STOPPED[GCRun]
        assert (run.status, run.retention_pending, run.claimed_by) == (JobStatus.DONE, False, "")
    alive.refresh_from_db()
    assert alive.retention_pending
    assert alive.retention is None


def test_a_replay_whose_worker_stopped_while_scoring_says_so_and_is_replayed_when_asked_again(
    stored_session: AgentSession,
) -> None:
    stopped = background.replay_request(session=stored_session, config=TIGHT_BUDGET)
    alive = background.replay_request(
        session=stored_session, config={**TIGHT_BUDGET, "target_percent": 0.25}
    )
    scoring(stopped, by=gone_process(), lapsed=False)
    scoring(alive, lapsed=False)

    assert background.work_sweep() == 1

    stopped.refresh_from_db()
    assert stopped.unscored_because == background.SCORING_STOPPED[Replay]
    assert (stopped.status, stopped.retention_pending, stopped.claimed_by) == (
        JobStatus.DONE,
        False,
        "",
    )
    alive.refresh_from_db()
    assert alive.retention_pending
    assert not alive.unscored_because

    again = background.replay_request(session=stored_session, config=TIGHT_BUDGET)
    assert again.pk == stopped.pk
    assert (again.status, again.unscored_because) == (JobStatus.QUEUED, "")


def test_a_worker_renews_the_lease_of_a_run_it_scores(stored_session: AgentSession) -> None:
    run = queued_run(stored_session)
    scoring(run, by=background.process_name(), lapsed=False)
    before = GCRun.objects.get(pk=run.pk).lease_until

    background.worker_beat(name=background.process_name(), started_at=timezone.now())

    assert GCRun.objects.get(pk=run.pk).lease_until > before  # type: ignore[operator]
    assert background.work_sweep() == 0


@pytest.mark.parametrize("what_happens", ["cancelled", "taken over"])
def test_a_run_lost_while_it_collects_stores_nothing(
    stored_session: AgentSession,
    member: User,
    monkeypatch: pytest.MonkeyPatch,
    what_happens: str,
) -> None:
    run = queued_run(stored_session)
    collect = gcengine.run_gc

    def collect_and_lose_it(*args: Any, **kwargs: Any) -> gcengine.GCOutcome:
        outcome = collect(*args, **kwargs)
        if what_happens == "cancelled":
            background.work_cancel(work=GCRun.objects.get(pk=run.pk), actor=member)
        else:  # its lease lapsed meanwhile, and another worker took it
            GCRun.objects.filter(pk=run.pk).update(claimed_by=ELSEWHERE)
        return outcome

    monkeypatch.setattr(gcengine, "run_gc", collect_and_lose_it)

    background.run_execute(run_id=run.pk)

    run.refresh_from_db()
    assert not Removal.objects.filter(run=run).exists()
    assert not BudgetNode.objects.filter(run=run).exists()
    assert run.tokens_after is None
    if what_happens == "cancelled":
        assert (run.status, run.error) == (JobStatus.FAILED, "cancelled by ann")
    else:
        assert (run.status, run.claimed_by) == (JobStatus.RUNNING, ELSEWHERE)


# --- Every failure ends the work with a message --------------------------------------------


def failing(monkeypatch: pytest.MonkeyPatch, target: Any, name: str) -> None:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("boom from a bug")

    monkeypatch.setattr(target, name, fail)


def test_an_upload_whose_storing_fails_ends_failed_and_drops_its_bytes(
    project: Project,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    django_capture_on_commit_callbacks: Any,
) -> None:
    failing(monkeypatch, storage, "turn_row_batches")

    with caplog.at_level(logging.ERROR):
        job = large_upload(project, session_bytes(), settings, django_capture_on_commit_callbacks)

    assert job.status == JobStatus.FAILED
    assert job.error.startswith("the server failed while reading this file (ValueError)")
    assert not IngestUpload.objects.filter(job=job).exists()
    assert job.lease_until is None
    assert not AgentSession.objects.exists()
    assert "boom from a bug" in caplog.text  # the traceback is in the log


def test_a_queued_upload_keeps_its_original_exactly_and_its_bytes_row_goes(
    project: Project, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    data = session_bytes(SessionShape(turns=6, tool_every=2, seed=17))

    job = large_upload(project, data, settings, django_capture_on_commit_callbacks)

    assert job.status == JobStatus.DONE
    assert job.session is not None
    assert selectors.session_original(session=job.session) == data
    assert job.session.size_bytes == len(data)
    assert not IngestUpload.objects.filter(job=job).exists()


def test_an_upload_waits_packed_as_its_session_keeps_it(
    project: Project, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """The request packs the file: the worker reads it back whole, and the session keeps the
    same bytes as its original."""
    settings.JAATO_INLINE_INGEST_BYTES = 10
    data = session_bytes(SessionShape(turns=6, tool_every=2, seed=18))
    job = background.session_upload(project=project, filename="big.json", data=data).job
    assert job is not None
    assert not IngestJob.upload.is_cached(job), "the job handed back holds no bytes"
    waiting = bytes(IngestUpload.objects.values_list("data", flat=True).get(job=job))
    assert len(waiting) < len(data) / 2
    assert storage.unpack_original(waiting) == data

    with django_capture_on_commit_callbacks(execute=True):
        tasks.ingest_upload.call(job.pk)

    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    assert job.session is not None
    assert selectors.session_original(session=job.session) == data
    assert job.session.message_count == len(gcengine.load_session(data).history)


def test_an_upload_cancelled_while_its_file_is_read_stores_nothing(
    project: Project,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    load = gcengine.load_session

    def cancelled_meanwhile(data: bytes) -> gcengine.Session:
        loaded = load(data)
        background.work_cancel(work=IngestJob.objects.get())
        return loaded

    monkeypatch.setattr(gcengine, "load_session", cancelled_meanwhile)

    job = large_upload(project, session_bytes(), settings, django_capture_on_commit_callbacks)

    assert job.status == JobStatus.FAILED
    assert job.error == "cancelled by system"
    assert job.session is None
    assert not AgentSession.objects.exists()
    assert not IngestUpload.objects.filter(job=job).exists()


def test_a_run_and_a_replay_that_fail_end_failed_with_a_message(
    stored_session: AgentSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = queued_run(stored_session)
    replay = background.replay_request(session=stored_session, config=TIGHT_BUDGET)
    failing(monkeypatch, gcengine, "run_gc")
    failing(monkeypatch, gcengine, "simulate")

    with pytest.raises(ValueError, match="boom"):
        background.run_execute(run_id=run.pk)
    with pytest.raises(ValueError, match="boom"):
        background.replay_execute(replay_id=replay.pk)

    run.refresh_from_db()
    replay.refresh_from_db()
    assert run.status == replay.status == JobStatus.FAILED
    assert run.error.startswith("the server failed while collecting this session (ValueError)")
    assert replay.error.startswith("the server failed while replaying this session (ValueError)")
    assert run.finished_at is not None


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (nested(1_000), "nest more than 100 levels deep"),
        ({"pattern": "cut \ud83d"}, "lone surrogate"),
    ],
    ids=["nested-1000-deep", "lone-surrogate"],
)
def test_an_upload_the_parser_once_took_is_refused_where_it_stands(
    client: Client,
    project: Project,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
    args: Any,
    reason: str,
) -> None:
    """Both used to pass the parser and fail in storage: a 500 on the page, after storing the
    good file beside it, and a background job "running" forever."""
    bad = session_with_args(args)
    answer = client.post(
        "/sessions/upload/",
        {
            "files": [
                SimpleUploadedFile("good.json", session_bytes()),
                SimpleUploadedFile("bad.json", bad),
            ]
        },
    )
    job = large_upload(project, bad, settings, django_capture_on_commit_callbacks)

    html = answer.content.decode()
    assert answer.status_code == 200
    assert AgentSession.objects.get().label == "good.json"
    assert "not a session file" in html
    assert reason in html
    assert job.status == JobStatus.FAILED
    assert reason in job.error
    assert job.error_path.startswith("history[")
    assert not IngestUpload.objects.filter(job=job).exists()


def test_a_file_whose_storing_fails_is_said_alone_and_the_others_stay_stored(
    client: Client, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = stored_sessions.session_store

    def store_or_fail(project: Project, filename: str, *args: Any) -> AgentSession:
        if filename == "crash.json":
            raise ValueError("boom from a bug")
        return store(project, filename, *args)

    monkeypatch.setattr(stored_sessions, "session_store", store_or_fail)
    other = session_bytes(SessionShape(turns=2, seed=8))

    with caplog.at_level(logging.ERROR):
        answer = client.post(
            "/sessions/upload/",
            {
                "files": [
                    SimpleUploadedFile("good.json", session_bytes()),
                    SimpleUploadedFile("crash.json", other),
                ]
            },
        )

    html = answer.content.decode()
    assert answer.status_code == 200
    assert AgentSession.objects.get().label == "good.json"
    assert "server error" in html
    assert "the server failed while reading this file (ValueError)" in html
    assert "boom from a bug" in caplog.text


# --- Cancelling ------------------------------------------------------------------------------


def test_cancelling_a_run_from_its_page_stops_it_and_the_page_stops_following(
    client: Client, stored_session: AgentSession
) -> None:
    run = queued_run(stored_session)
    page = reverse("run_detail", args=[run.pk])
    assert "data-cancel" in client.get(page).content.decode()

    answer = client.post(reverse("run_cancel", args=[run.pk]))

    run.refresh_from_db()
    html = client.get(page).content.decode()
    assert answer.status_code == 302
    assert answer["Location"] == page
    assert (run.status, run.error) == (JobStatus.FAILED, "cancelled by ann")
    assert run.finished_at is not None
    assert "every 2s" not in html
    assert "data-cancel" not in html
    assert AuditEvent.objects.filter(action=AuditAction.CANCEL, actor_name="ann").count() == 1


def test_the_api_cancels_an_upload_being_read_and_its_bytes_go(
    client: Client, project: Project, settings: Any
) -> None:
    settings.JAATO_INLINE_INGEST_BYTES = 10
    job = background.session_upload(project=project, filename="b.json", data=session_bytes()).job
    assert job is not None
    url = f"/api/sessions/uploads/{job.pk}/cancel"

    answer = client.post(url)
    again = client.post(url)

    job.refresh_from_db()
    assert answer.status_code == 200
    assert answer.json()["status"] == "failed"
    assert answer.json()["error"] == "cancelled by ann"
    assert not IngestUpload.objects.filter(job=job).exists()
    assert again.status_code == 409
    assert "already ended" in again.json()["detail"]


def test_a_cancelled_replay_is_queued_again_when_asked_for_again(
    client: Client, stored_session: AgentSession, django_capture_on_commit_callbacks: Any
) -> None:
    replay = background.replay_request(session=stored_session, config=TIGHT_BUDGET)
    assert client.post(f"/api/replays/{replay.pk}/cancel").json()["status"] == "failed"

    with django_capture_on_commit_callbacks(execute=True):
        again = background.replay_request(session=stored_session, config=TIGHT_BUDGET)

    again.refresh_from_db()
    assert again.pk == replay.pk
    assert again.status == JobStatus.DONE
    assert again.series is not None


def test_only_a_role_that_may_start_the_work_may_cancel_it(
    project: Project, stored_session: AgentSession
) -> None:
    run = queued_run(stored_session)
    viewer = signed_in_client(make_member(project, "vic", Role.VIEWER))

    page = viewer.get(reverse("run_detail", args=[run.pk])).content.decode()
    answer = viewer.post(f"/api/runs/{run.pk}/cancel")

    assert "data-cancel" not in page
    assert answer.status_code == 403
    assert GCRun.objects.get(pk=run.pk).status == JobStatus.QUEUED


# --- Is anyone taking the work? --------------------------------------------------------------


def test_health_says_the_database_answers_and_what_waits_for_a_worker(
    client: Client, settings: Any
) -> None:
    settings.TASKS = DATABASE_TASKS
    tasks.execute_run.enqueue(0)
    tasks.execute_replay.enqueue(0)
    seen = timezone.now()
    Worker.objects.create(name="vm:7", started_at=seen, seen_at=seen)

    answer = Client().get("/api/health")

    body = answer.json()
    assert answer.status_code == 200
    assert (body["status"], body["database"]) == ("ok", "ok")
    assert body["worker"]["queued"] == 2
    assert 0 <= body["worker"]["oldest_queued_seconds"] < 60
    assert body["worker"]["last_seen"].startswith(seen.strftime("%Y-%m-%dT%H:%M"))


def test_health_is_503_when_the_database_does_not_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    def unreachable() -> None:
        raise OperationalError("could not connect to server")

    monkeypatch.setattr("jaato_web.dashboard.selectors.worker_status", unreachable)

    answer = Client().get("/api/health")

    assert answer.status_code == 503
    assert answer.json()["database"] == "unreachable"
    assert answer.json()["worker"] is None


@pytest.mark.parametrize("worker_seen", [None, timedelta(minutes=10), timedelta(seconds=5)])
def test_waiting_work_says_when_no_worker_is_there_to_take_it(
    client: Client,
    stored_session: AgentSession,
    settings: Any,
    worker_seen: timedelta | None,
) -> None:
    settings.TASKS = DATABASE_TASKS
    run = queued_run(stored_session)
    if worker_seen is not None:
        seen = timezone.now() - worker_seen
        Worker.objects.create(name="vm:7", started_at=seen, seen_at=seen)

    html = client.get(reverse("run_status", args=[run.pk])).content.decode()

    absent = worker_seen is None or worker_seen > timedelta(seconds=60)
    assert ("No task worker is running" in html) is absent
    assert ("the last one was seen" in html) is (worker_seen == timedelta(minutes=10))


def test_without_workers_by_design_no_worker_is_missed(
    client: Client, stored_session: AgentSession
) -> None:
    """With the immediate backend, tasks run inside the request: no worker is expected."""
    run = queued_run(stored_session)

    html = client.get(reverse("run_status", args=[run.pk])).content.decode()

    assert "No task worker is running" not in html


def test_replays_queued_again_name_themselves_in_the_audit_log(
    stored_session: AgentSession, member: User
) -> None:
    replay = background.replay_request(session=stored_session, config=TIGHT_BUDGET, actor=member)
    background.work_cancel(work=replay, actor=member)

    background.replay_request(session=stored_session, config=TIGHT_BUDGET, actor=member)

    actions = list(AuditEvent.objects.order_by("pk").values_list("action", flat=True))
    assert actions[-3:] == [AuditAction.REPLAY, AuditAction.CANCEL, AuditAction.REPLAY]
    assert Replay.objects.get().status == JobStatus.QUEUED
