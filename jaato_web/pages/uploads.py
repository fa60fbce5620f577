"""Uploading session files, and following the ones read in the background."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core.files.uploadedfile import UploadedFile
from django.db.models import QuerySet
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers

import gcengine
from jaato_web.dashboard import selectors, services
from jaato_web.dashboard.models import AgentSession, IngestJob, JobStatus, Project
from jaato_web.http import PageRequest, query_id
from jaato_web.pages import forms
from jaato_web.teams.access import CURRENT_PROJECT_KEY, Access, requires
from jaato_web.teams.permissions import Action

if TYPE_CHECKING:
    from django.contrib.auth.models import User


@dataclass(frozen=True)
class UploadOutcome:
    """What became of one file: stored, duplicate, queued, too_large or malformed."""

    filename: str
    state: str
    status: int
    session: AgentSession | None = None
    job: IngestJob | None = None
    message: str = ""
    json_path: str = ""


@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
@requires(Action.UPLOAD)
def session_upload(request: PageRequest) -> HttpResponse:
    """Each file is stored on its own; the answer lists every file's outcome.

    The status is 200 when at least one file was taken; when none was, it is the failure's
    (413 too large, 400 malformed), and the same page or fragment still says why for each.
    """
    access = request.access
    projects = upload_projects(access)
    if request.method == "GET":
        # The current project when the user may upload there, else the first one they may.
        remembered = request.session.get(CURRENT_PROJECT_KEY)
        allowed = [p.pk for p in projects]
        current = access.project(remembered if remembered in allowed else None)
        form = forms.UploadForm(projects=projects, initial={"project": current.pk})
        return render(request, "uploads/upload.html", {"form": form})
    # A project the user cannot upload to answers as every other route does (404 outside
    # their projects, 403 for their role) rather than as an invalid choice of the form.
    access.project(query_id(request.POST.get("project")), request)
    form = forms.UploadForm(request.POST, request.FILES, projects=projects)
    outcomes: list[UploadOutcome] = []
    status = 400
    if form.is_valid():
        chosen = form.cleaned_data["project"]
        project = access.project(chosen.pk if chosen else None, request)
        outcomes = [_upload(project, upload, request.user) for upload in form.cleaned_data["files"]]
        status = _status(outcomes)
    context = {"form": form, "outcomes": outcomes}
    template = "uploads/upload.html#upload-results" if request.htmx else "uploads/upload.html"
    return render(request, template, context, status=status)


@require_GET
@vary_on_headers("HX-Request")
@requires(Action.VIEW)
def ingest_job(request: PageRequest, job_id: int) -> HttpResponse:
    """A file being read in the background; the status fragment polls until it is done."""
    job = request.access.ingest_job(job_id)
    template = "uploads/job.html#job-status" if request.htmx else "uploads/job.html"
    return render(request, template, {"job": job})


def upload_projects(access: Access) -> QuerySet[Project]:
    """The projects this user may upload to, for the form's project choice."""
    allowed = [pk for pk in access.project_ids if access.allows(pk, Action.UPLOAD)]
    return Project.objects.filter(pk__in=allowed).order_by("name")


def _upload(project: Project, upload: UploadedFile[Any], actor: User) -> UploadOutcome:
    name = upload.name or "upload.json"
    try:
        services.upload_size_check(upload.size or 0)  # before reading a byte of it
        receipt = services.session_upload(
            project=project, filename=name, data=upload.read(), actor=actor
        )
    except services.UploadTooLarge as error:
        return UploadOutcome(name, "too_large", 413, message=error.reason)
    except gcengine.SessionFormatError as error:
        return UploadOutcome(
            name, "malformed", 400, message=error.reason, json_path=error.json_path
        )
    if receipt.job is None:
        state = "duplicate" if receipt.duplicate else "stored"
        return UploadOutcome(name, state, 200, session=receipt.session)
    # Read again: a synchronous task backend has already read the file by now.
    job = selectors.ingest_job_get(projects=[project.pk], job_id=receipt.job.pk)
    if job.status == JobStatus.DONE and job.session is not None:
        return UploadOutcome(name, "stored", 200, session=job.session)
    if job.status == JobStatus.FAILED:
        reason = job.error.removeprefix(f"{job.error_path}: ") if job.error_path else job.error
        return UploadOutcome(name, "malformed", 400, message=reason, json_path=job.error_path)
    return UploadOutcome(name, "queued", 200, job=job)


def _status(outcomes: list[UploadOutcome]) -> int:
    if any(o.status < 400 for o in outcomes):
        return 200
    failures = {o.status for o in outcomes}
    return failures.pop() if len(failures) == 1 else 400
