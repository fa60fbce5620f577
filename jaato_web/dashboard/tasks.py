"""Background work: ids in, services inside, so a task survives a JSON round trip and a
worker on another machine reads the same rows.

``services`` imports this module too; each uses the other only at call time.
"""

from __future__ import annotations

from django.tasks import task

from jaato_web.dashboard import services


@task
def ingest_upload(job_id: int) -> None:
    services.ingest_job_execute(job_id=job_id)


@task
def execute_run(run_id: int) -> None:
    services.run_execute(run_id=run_id)


@task
def execute_replay(replay_id: int) -> None:
    services.replay_execute(replay_id=replay_id)
