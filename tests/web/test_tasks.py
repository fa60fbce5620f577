"""Background tasks: the backend setting, and the database worker really running tasks."""

from __future__ import annotations

import gc
import runpy
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db import connection, transaction
from django.tasks import TaskResultStatus, task
from django_tasks_db.models import DBTaskResult
from pytest_django.fixtures import Settings

from jaato_web import settings as project_settings
from jaato_web.dashboard.background import tasks

SETTINGS_FILE = Path(project_settings.__file__)
DATABASE_TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
WORKER_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT)


@task
def shout(text: str) -> str:
    return text.upper()


@pytest.fixture
def database_tasks(settings: Settings) -> Iterator[None]:
    """Tasks go to the database, and db_worker runs in this process.

    The worker installs its own signal handlers for a graceful stop; they are
    put back afterwards so Ctrl-C still reaches pytest.
    """
    settings.TASKS = DATABASE_TASKS
    saved = {signum: signal.getsignal(signum) for signum in WORKER_SIGNALS}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


def run_worker_batch() -> None:
    """Run every task that is ready, then return: the worker's --batch mode."""
    call_command("db_worker", "--batch", "--no-startup-delay", "--no-reload", verbosity=0)


def test_task_backend_defaults_to_the_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAATO_TASK_BACKEND", raising=False)

    tasks = runpy.run_path(str(SETTINGS_FILE))["TASKS"]

    assert tasks == DATABASE_TASKS


def test_task_backend_can_run_tasks_immediately(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAATO_TASK_BACKEND", " Immediate ")

    tasks = runpy.run_path(str(SETTINGS_FILE))["TASKS"]

    assert tasks["default"]["BACKEND"] == "django.tasks.backends.immediate.ImmediateBackend"


def test_unknown_task_backend_stops_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAATO_TASK_BACKEND", "celery")

    with pytest.raises(ImproperlyConfigured, match="JAATO_TASK_BACKEND"):
        runpy.run_path(str(SETTINGS_FILE))


def test_tests_run_tasks_as_they_are_enqueued() -> None:
    result = shout.enqueue("now")

    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == "NOW"


# Transactional: the worker closes and reopens its connection between tasks, as
# a long-running process must, which would end a test's wrapping transaction.
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("database_tasks")
def test_worker_runs_a_task_enqueued_in_the_database() -> None:
    result = shout.enqueue("collect")
    assert result.status == TaskResultStatus.READY

    run_worker_batch()
    result.refresh()

    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == "COLLECT"
    assert len(result.worker_ids) == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("database_tasks")
def test_worker_skips_a_task_another_worker_has_locked() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("row locks with SKIP LOCKED are PostgreSQL's; on SQLite workers take turns")
    held = shout.enqueue("held")
    free = shout.enqueue("free")
    locked = threading.Event()
    release = threading.Event()

    def hold_row_lock() -> None:
        """What a second worker does while it runs a task: keep the row locked."""
        try:
            with transaction.atomic():
                DBTaskResult.objects.select_for_update().get(id=held.id)
                locked.set()
                release.wait(timeout=30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_row_lock)
    holder.start()
    try:
        assert locked.wait(timeout=30)
        run_worker_batch()
    finally:
        release.set()
        holder.join()
    held.refresh()
    free.refresh()

    assert free.status == TaskResultStatus.SUCCESSFUL
    assert held.status == TaskResultStatus.READY


def test_a_task_in_a_web_request_leaves_the_cycle_collector_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[bool] = []
    monkeypatch.setattr(
        "jaato_web.dashboard.background.tasks.replay_execute",
        lambda **_: seen.append(gc.isenabled()),
    )

    tasks.execute_replay.call(0)

    assert seen == [True]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("database_tasks")
def test_a_worker_pauses_the_cycle_collector_during_engine_work_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[bool] = []
    monkeypatch.setattr(
        "jaato_web.dashboard.background.tasks.replay_execute",
        lambda **_: seen.append(gc.isenabled()),
    )

    tasks.execute_replay.enqueue(0)
    run_worker_batch()

    assert seen == [False]
    assert gc.isenabled()
