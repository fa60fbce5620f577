"""Background work: started here, carried out by a worker under a lease, swept when its worker
stops.

The package sits above the services: a task claims the lease and calls the use case, handing
it the lease to report through (``services.work.Lease``), so no use case imports this package.
``lease`` explains the lease (claim, progress, done, failed, scored, cancel); ``keeper`` is what
every worker's lease keeper does (beat, renew, sweep); ``tasks`` holds the tasks and the actions
that start work (an upload read in the background, a run, a replay, a ranking), which the doors
call.
"""

from jaato_web.dashboard.background.keeper import (
    FORGET_WORKERS_AFTER,
    MAX_ATTEMPTS,
    SCORING_STOPPED,
    work_sweep,
    worker_beat,
    worker_gone,
)
from jaato_web.dashboard.background.lease import (
    HeldWork,
    WorkEnded,
    beat_interval,
    lease_length,
    process_name,
    work_cancel,
    work_carry_out,
    work_claim,
    work_done,
    work_done_scoring,
    work_failed,
    work_progress,
    work_scored,
)
from jaato_web.dashboard.background.tasks import (
    ingest_job_execute,
    policy_apply,
    ranking_execute,
    ranking_request,
    ranking_wait,
    replay_execute,
    replay_request,
    run_execute,
    run_start,
    session_upload,
    session_upload_file,
    sessions_upload,
)
from jaato_web.dashboard.services.work import Work, WorkLost

__all__ = [
    "FORGET_WORKERS_AFTER",
    "MAX_ATTEMPTS",
    "SCORING_STOPPED",
    "HeldWork",
    "Work",
    "WorkEnded",
    "WorkLost",
    "beat_interval",
    "ingest_job_execute",
    "lease_length",
    "policy_apply",
    "process_name",
    "ranking_execute",
    "ranking_request",
    "ranking_wait",
    "replay_execute",
    "replay_request",
    "run_execute",
    "run_start",
    "session_upload",
    "session_upload_file",
    "sessions_upload",
    "work_cancel",
    "work_carry_out",
    "work_claim",
    "work_done",
    "work_done_scoring",
    "work_failed",
    "work_progress",
    "work_scored",
    "work_sweep",
    "worker_beat",
    "worker_gone",
]
