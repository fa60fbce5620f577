"""A real worker process killed mid-task: the next worker takes the work up again, and when
that one is killed too the work ends failed, saying why.

Each worker is ``manage.py db_worker`` started as its own process against the test database
(a file on SQLite, the server on PostgreSQL), and killed with SIGKILL, so it gets no chance to
tidy up: only the lease and the sweep of the next worker bring the work back. The work is the
background read of a 1,000-turn upload, a few seconds long.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.test import Client
from django.urls import reverse

from gcengine.synthetic import SessionShape, generate_session_file
from jaato_web.dashboard import background
from jaato_web.dashboard.models import AgentSession, IngestJob, IngestUpload, JobStatus, Project

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

DATABASE_TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
GIVE_UP_AFTER_SECONDS = 120


def database_url() -> str:
    """The test database, as the worker process is told where it is."""
    database = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{database['NAME']}"
    user = quote(database["USER"], safe="")
    password = quote(database["PASSWORD"], safe="")
    host = database["HOST"] or ""
    port = f":{database['PORT']}" if database["PORT"] else ""
    # Options such as a Unix socket directory (``?host=/run/...``, as CI's server listens on)
    # travel in the query, as DATABASE_URL carries them.
    options = urlencode({key: str(value) for key, value in database["OPTIONS"].items()})
    query = f"?{options}" if options else ""
    return f"postgres://{user}:{password}@{host}{port}/{database['NAME']}{query}"


@contextmanager
def worker(log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``manage.py db_worker`` in a process of its own, killed at the end if still alive."""
    environment = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "JAATO_TASK_BACKEND": "database",
        "JAATO_TASK_LEASE_SECONDS": "2",
    }
    command = [sys.executable, "manage.py", "db_worker", "--no-reload", "--no-startup-delay"]
    with log.open("ab") as output:
        process = subprocess.Popen(
            [*command, "--interval", "0.1"],
            cwd=django_settings.BASE_DIR,
            env=environment,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


def wait_for(job: IngestJob, what: str, condition: Callable[[IngestJob], bool], log: Path) -> None:
    deadline = time.monotonic() + GIVE_UP_AFTER_SECONDS
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if condition(job):
            return
        time.sleep(0.05)
    pytest.fail(f"gave up waiting for {what}; the workers said:\n{log.read_text()[-3000:]}")


def running_in(process: subprocess.Popen[bytes]) -> Callable[[IngestJob], bool]:
    name = f"{socket.gethostname()}:{process.pid}"
    return lambda job: job.status == JobStatus.RUNNING and job.claimed_by == name


def killed_mid_task(job: IngestJob, log: Path) -> None:
    """Start a worker, let it take the job, and kill it while it reads the file."""
    with worker(log) as process:
        wait_for(job, f"worker {process.pid} to take the job", running_in(process), log)
        process.kill()
        process.wait()
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING  # killed in the middle: nothing says otherwise
    assert not AgentSession.objects.exists()


@pytest.fixture
def queued_upload(project: Project, settings: Any) -> IngestJob:
    settings.TASKS = DATABASE_TASKS
    settings.JAATO_INLINE_INGEST_BYTES = 1000
    data = json.dumps(generate_session_file(SessionShape(turns=1000, seed=11))).encode()
    receipt = background.session_upload(project=project, filename="long.json", data=data)
    assert receipt.job is not None
    return receipt.job


def test_work_of_a_killed_worker_is_taken_up_by_the_next_and_finished(
    queued_upload: IngestJob, tmp_path: Path
) -> None:
    log = tmp_path / "workers.log"
    killed_mid_task(queued_upload, log)

    with worker(log):
        wait_for(queued_upload, "the job to finish", lambda job: not job.is_pending, log)

    job = queued_upload
    assert job.status == JobStatus.DONE, job.error
    assert job.attempts == 2
    assert not IngestUpload.objects.filter(job=job).exists()
    assert AgentSession.objects.get().turn_count == 1000


def test_work_whose_worker_is_killed_twice_ends_failed_saying_why(
    queued_upload: IngestJob, tmp_path: Path, client: Client
) -> None:
    log = tmp_path / "workers.log"
    killed_mid_task(queued_upload, log)
    killed_mid_task(queued_upload, log)

    with worker(log):
        wait_for(queued_upload, "the job to fail", lambda job: not job.is_pending, log)

    job = queued_upload
    reason = "the worker stopped while reading this file; tried twice, so it is not tried again"
    page = client.get(reverse("ingest_job", args=[job.pk])).content.decode()
    assert (job.status, job.error) == (JobStatus.FAILED, reason)
    assert job.attempts == 2
    assert not IngestUpload.objects.filter(job=job).exists()
    assert reason in page
    assert "every 2s" not in page
