"""Background work: ids in, services inside, so a task survives a JSON round trip and a
worker on another machine reads the same rows.

A worker (``manage.py db_worker``) runs one task at a time in a process of its own, so there
the cycle collector is paused while a task builds and drops hundreds of thousands of engine
values (a 10,000-turn run takes a third of the time). A task run inside a web request (the
immediate backend, for tests and small setups) does not pause it for the whole task: that
would stop the collector for every other request the process is serving for seconds (only
reading a stored session back pauses it, for a fraction of a second).

``services`` imports this module too; each uses the other only at call time.
"""

from __future__ import annotations

from collections.abc import Callable

from django.tasks import task, task_backends
from django.tasks.backends.immediate import ImmediateBackend

import gcengine
from jaato_web.dashboard import services


def _in_worker(work: Callable[[], None]) -> None:
    if isinstance(task_backends["default"], ImmediateBackend):
        work()
        return
    with gcengine.cyclic_gc_paused():
        work()


@task
def ingest_upload(job_id: int) -> None:
    _in_worker(lambda: services.ingest_job_execute(job_id=job_id))


@task
def execute_run(run_id: int) -> None:
    _in_worker(lambda: services.run_execute(run_id=run_id))


@task
def execute_replay(replay_id: int) -> None:
    _in_worker(lambda: services.replay_execute(replay_id=replay_id))
