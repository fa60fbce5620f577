"""The production server's command (``manage.py serve``) and the supervisor behind it.

The supervisor is checked on real child processes with a clock the test moves; the whole
command, with uvicorn, PostgreSQL and a worker, is run by the CI's production smoke
(``.ci/production_smoke``), which needs collected static files and a database server.
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from jaato_web.dashboard.management.commands.serve import address
from jaato_web.supervisor import FIRST_DELAY_SECONDS, MAX_DELAY_SECONDS, Child, Supervisor

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]
DIES_AT_ONCE = [sys.executable, "-c", "raise SystemExit(3)"]


def ignores_sigterm(ready: Path) -> list[str]:
    """A child that ignores SIGTERM, and says so by creating ``ready`` once it does."""
    script = (
        "import pathlib, signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "pathlib.Path(sys.argv[1]).touch(); time.sleep(60)"
    )
    return [sys.executable, "-c", script, str(ready)]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def supervised(clock: Clock) -> Iterator[tuple[Supervisor, list[str]]]:
    lines: list[str] = []
    supervisor = Supervisor([], log=lines.append, clock=clock)
    yield supervisor, lines
    supervisor.stop(grace_seconds=5)


def finished(child: Child) -> int:
    assert child.process is not None
    return child.process.wait(timeout=20)


def test_a_task_worker_that_is_killed_is_started_again(
    supervised: tuple[Supervisor, list[str]], clock: Clock
) -> None:
    supervisor, lines = supervised
    worker = Child("task worker 1", SLEEPER, restart=True)
    supervisor.children = [Child("web server", SLEEPER, restart=False), worker]
    for child in supervisor.children:
        supervisor.start(child)
    assert worker.process is not None
    first = worker.process.pid
    clock.now += 120  # a worker that had been running for two minutes

    worker.process.send_signal(signal.SIGKILL)
    finished(worker)
    assert supervisor.step() is None
    assert f"task worker 1 (pid {first}) exited with status -9 after 120 s" in lines[-1]
    assert worker.process.pid == first  # not before the delay
    clock.now += FIRST_DELAY_SECONDS
    assert supervisor.step() is None

    assert worker.process.pid != first
    assert worker.process.poll() is None
    assert worker.starts == 2


def test_a_worker_that_keeps_dying_young_waits_longer_each_time(
    supervised: tuple[Supervisor, list[str]], clock: Clock
) -> None:
    supervisor, _ = supervised
    worker = Child("task worker 1", DIES_AT_ONCE, restart=True)
    supervisor.children = [worker]
    supervisor.start(worker)
    delays = []
    for _ in range(7):
        finished(worker)
        supervisor.step()
        delays.append(worker.delay)
        clock.now += worker.delay
        supervisor.step()

    assert delays == [2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    assert MAX_DELAY_SECONDS == 30.0
    assert worker.starts == 8


def test_the_end_of_the_web_server_is_the_end_of_the_service(
    supervised: tuple[Supervisor, list[str]],
) -> None:
    supervisor, lines = supervised
    web = Child("web server", DIES_AT_ONCE, restart=False)
    supervisor.children = [web, Child("task worker 1", SLEEPER, restart=True)]
    for child in supervisor.children:
        supervisor.start(child)
    finished(web)

    assert supervisor.step() == 3
    assert lines[-1] == "web server exited with status 3; stopping the service"


def test_stopping_kills_a_child_that_ignores_sigterm_after_the_grace(
    supervised: tuple[Supervisor, list[str]], tmp_path: Path
) -> None:
    supervisor, lines = supervised
    ready = tmp_path / "ready"
    stubborn = Child("task worker 1", ignores_sigterm(ready), restart=True)
    polite = Child("task worker 2", SLEEPER, restart=True)
    supervisor.children = [stubborn, polite]
    for child in supervisor.children:
        supervisor.start(child)
    assert stubborn.process is not None
    deadline = time.monotonic() + 20
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)

    supervisor.stop(grace_seconds=1)

    assert finished(polite) == -signal.SIGTERM
    assert finished(stubborn) == -signal.SIGKILL
    assert f"pid {stubborn.process.pid} did not stop within 1 s; killing it" in lines


# --- The command ---------------------------------------------------------------------------------


def test_serve_refuses_to_run_while_debugging(settings: Any) -> None:
    settings.DEBUG = True
    with pytest.raises(CommandError, match=r"DJANGO_DEBUG=0.*\./dev serve"):
        call_command("serve", "--no-migrate")


def test_serve_refuses_to_run_before_collectstatic(settings: Any, tmp_path: Any) -> None:
    settings.DEBUG = False
    settings.STATIC_ROOT = tmp_path
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }
    with pytest.raises(CommandError, match="collectstatic --noinput"):
        call_command("serve", "--no-migrate")


def test_serve_needs_something_to_run(settings: Any) -> None:
    settings.DEBUG = False
    with pytest.raises(CommandError, match="nothing to run"):
        call_command("serve", "--workers", "0", "--task-workers", "0", "--no-migrate")


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("8080", ("127.0.0.1", 8080)),
        ("0.0.0.0:8000", ("0.0.0.0", 8000)),
        ("[::1]:8001", ("::1", 8001)),
        ("localhost:9000", ("localhost", 9000)),
    ],
)
def test_serve_reads_its_address_as_dev_serve_does(given: str, expected: tuple[str, int]) -> None:
    assert address(given) == expected


@pytest.mark.parametrize("given", ["", "host:", "host:http", "host:70000", "host:0", "host:²"])
def test_serve_refuses_an_address_without_a_port(given: str) -> None:
    with pytest.raises(CommandError, match="HOST:PORT"):
        address(given)
