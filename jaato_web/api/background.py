"""Cancelling background work: an upload being read, a run, a replay.

Each needs the action that started it (``upload``, or ``run`` for runs and replays) and
answers the work as it stands after the cancel; 409 when it had already ended.
"""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from jaato_web.api.auth import RUN, UPLOAD, access_of
from jaato_web.api.schemas import IngestJobOut, Problem, ReplayOut, RunOut
from jaato_web.dashboard import background
from jaato_web.dashboard.models import GCRun, IngestJob, Replay

router = Router(tags=["background work"])


@router.post(
    "/sessions/uploads/{int:job_id}/cancel",
    response={200: IngestJobOut, 409: Problem},
    summary="Cancel reading an upload",
    auth=UPLOAD,
)
def cancel_upload(request: HttpRequest, job_id: int) -> IngestJob:
    """The upload's bytes are dropped and nothing is stored."""
    job = access_of(request).ingest_job(job_id)
    background.work_cancel(work=job, actor=access_of(request).user)
    return job


@router.post(
    "/runs/{int:run_id}/cancel",
    response={200: RunOut, 409: Problem},
    summary="Cancel a queued or running GC run",
    auth=RUN,
)
def cancel_run(request: HttpRequest, run_id: int) -> GCRun:
    """A worker busy with it drops it at its next step; nothing of it is kept."""
    run = access_of(request).run(run_id)
    background.work_cancel(work=run, actor=access_of(request).user)
    return run


@router.post(
    "/replays/{int:replay_id}/cancel",
    response={200: ReplayOut, 409: Problem},
    summary="Cancel a queued or running replay",
    auth=RUN,
)
def cancel_replay(request: HttpRequest, replay_id: int) -> Replay:
    """Asking for the same replay again queues it again."""
    replay = access_of(request).replay(replay_id)
    background.work_cancel(work=replay, actor=access_of(request).user)
    return replay
