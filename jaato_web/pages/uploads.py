"""Uploading session files, and following the ones read in the background."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import QuerySet
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers

from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import Project
from jaato_web.http import PageRequest, query_id
from jaato_web.pages import forms
from jaato_web.teams.access import CURRENT_PROJECT_KEY, Access, requires
from jaato_web.teams.permissions import Action

if TYPE_CHECKING:
    pass


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
    outcomes: list[services.UploadOutcome] = []
    gc_skipped_because = ""
    status = 400
    if form.is_valid():
        chosen = form.cleaned_data["project"]
        project = access.project(chosen.pk if chosen else None, request)
        outcomes = background.sessions_upload(
            project=project, files=form.cleaned_data["files"], actor=request.user
        )
        status = services.uploads_status(outcomes)
        gc_skipped_because = services.uploads_gc_skipped_because(project, outcomes)
    context = {"form": form, "outcomes": outcomes, "gc_skipped_because": gc_skipped_because}
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


@require_GET
@requires(Action.VIEW)
def ingest_job_outcome(request: PageRequest, job_id: int) -> HttpResponse:
    """A file being read in the background as the upload page's results list it: the line
    polls until the read ends, then says what became of the file."""
    job = request.access.ingest_job(job_id)
    return render(request, "uploads/upload.html#job-outcome", {"job": job})


def upload_projects(access: Access) -> QuerySet[Project]:
    """The projects this user may upload to, for the form's project choice."""
    allowed = [pk for pk in access.project_ids if access.allows(pk, Action.UPLOAD)]
    return Project.objects.filter(pk__in=allowed).order_by("name")
