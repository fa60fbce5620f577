"""Cancelling background work from its page: an upload being read, a run, a replay.

Each needs the action that started the work (``upload``, or ``run`` for runs and replays);
the page it came from opens again, no longer following the work.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from jaato_web.dashboard import background
from jaato_web.http import PageRequest, redirect_after_post
from jaato_web.teams.access import requires
from jaato_web.teams.permissions import Action


def _cancel(request: PageRequest, work: background.Work, page: str) -> HttpResponse:
    try:
        background.work_cancel(work=work, actor=request.user)
    except background.WorkEnded as ended:
        messages.info(request, f"Not cancelled: {ended.reason}.")
    else:
        messages.success(request, "Cancelled; nothing of it was kept.")
    return redirect_after_post(request, page)


@require_POST
@requires(Action.UPLOAD)
def ingest_job_cancel(request: PageRequest, job_id: int) -> HttpResponse:
    job = request.access.ingest_job(job_id)
    return _cancel(request, job, reverse("ingest_job", args=[job.pk]))


@require_POST
@requires(Action.RUN)
def run_cancel(request: PageRequest, run_id: int) -> HttpResponse:
    run = request.access.run(run_id)
    return _cancel(request, run, reverse("run_detail", args=[run.pk]))


@require_POST
@requires(Action.RUN)
def replay_cancel(request: PageRequest, replay_id: int) -> HttpResponse:
    replay = request.access.replay(replay_id)
    return _cancel(request, replay, reverse("replay_detail", args=[replay.pk]))
