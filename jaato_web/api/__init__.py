"""JSON API of the dashboard.

One NinjaAPI instance serves every endpoint so there is a single OpenAPI document (browsable at
/api/docs) for scripts, agents and CI pipelines. Routers per area call the same services and
selectors the pages call; engine errors become JSON answers here, in one place.
"""

from __future__ import annotations

import logging
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version

from django.core.exceptions import PermissionDenied
from django.db import DatabaseError
from django.http import Http404, HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from ninja import Field, NinjaAPI, Schema, Status
from ninja.operation import Operation

import gcengine
from jaato_web.api import (
    background,
    planner,
    policies,
    quality,
    replays,
    review,
    runs,
    sessions,
    stash,
    teams,
    uploads,
)
from jaato_web.api.errors import unreadable_upload_reason
from jaato_web.dashboard import selectors
from jaato_web.errors import InputError
from jaato_web.teams.access import NoProject

DISTRIBUTION = "jaato-gc-web"

# Ninja derives an operation's id from the module that declares it, and clients generated from
# the OpenAPI document name their methods after those ids. These endpoints were published from
# another module before each family had its own, and keep the id they were published under.
PUBLISHED_IDS = {
    "jaato_web.api.uploads.upload_sessions": "jaato_web_api_sessions_upload_sessions",
    "jaato_web.api.uploads.upload_status": "jaato_web_api_sessions_upload_status",
    "jaato_web.api.stash.run_stash": "jaato_web_api_runs_run_stash",
    "jaato_web.api.stash.restore_segments": "jaato_web_api_runs_restore_segments",
    "jaato_web.api.stash.run_kept": "jaato_web_api_runs_run_kept",
    "jaato_web.api.stash.session_references": "jaato_web_api_sessions_session_references",
    "jaato_web.api.replays.start_replay": "jaato_web_api_runs_start_replay",
    "jaato_web.api.replays.get_replay": "jaato_web_api_runs_get_replay",
    "jaato_web.api.quality.project_quality": "jaato_web_api_teams_project_quality",
    "jaato_web.api.quality.set_project_quality": "jaato_web_api_teams_set_project_quality",
    "jaato_web.api.planner.plan_session": "jaato_web_api_plans_plan_session",
    "jaato_web.api.planner.plan_inline": "jaato_web_api_plans_plan_inline",
}


class DashboardAPI(NinjaAPI):
    def get_openapi_operation_id(self, operation: Operation) -> str:
        function = operation.view_func
        published = PUBLISHED_IDS.get(f"{function.__module__}.{function.__name__}")
        return published or super().get_openapi_operation_id(operation)


api = DashboardAPI(title="jaato GC API", version="1", urls_namespace="api")
# One router per family; an address is served by the one router that declares it.
api.add_router("/sessions", sessions.router)
api.add_router("/", uploads.router)
api.add_router("/", runs.router)
api.add_router("/", stash.router)
api.add_router("/", replays.router)
api.add_router("/policies", policies.router)
api.add_router("/", planner.router)
api.add_router("/", quality.router)
api.add_router("/", teams.router)
api.add_router("/", review.router)
api.add_router("/", background.router)

logger = logging.getLogger(__name__)


class WorkerHealth(Schema):
    last_seen: datetime | None = Field(
        description="When a task worker last said it was alive (every quarter lease, busy or "
        "idle); null when none ever has"
    )
    queued: int = Field(description="Tasks waiting for a worker")
    oldest_queued_seconds: int | None = Field(description="How long the oldest has waited")


class Health(Schema):
    """The version lets a client tell which build it reached; ``database`` and ``worker`` say
    whether uploads can be stored and background work will be taken."""

    status: str = Field(description="ok, or unavailable when the database does not answer")
    version: str
    database: str = Field(description="ok or unreachable")
    worker: WorkerHealth | None = Field(description="null when the database does not answer")


def package_version() -> str:
    """A source checkout that was never pip-installed has no metadata; the
    health check must still answer there, so it reports a placeholder."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0.0.0"


@api.get("/health", response={200: Health, 503: Health}, summary="Health check")
def health(request: HttpRequest) -> Status[Health]:
    """Cheap on purpose, as load balancers call it often: three indexed queries. 503 when
    the database does not answer."""
    try:
        workers = selectors.worker_status()
    except DatabaseError:
        logger.exception("the health check could not reach the database")
        down = Health(
            status="unavailable", version=package_version(), database="unreachable", worker=None
        )
        return Status(503, down)
    worker = WorkerHealth(
        last_seen=workers.last_seen,
        queued=workers.queued,
        oldest_queued_seconds=workers.oldest_queued_seconds,
    )
    return Status(200, Health(status="ok", version=package_version(), database="ok", worker=worker))


@api.exception_handler(InputError)
def input_error(request: HttpRequest, error: InputError) -> HttpResponse:
    """Input the caller can fix, refused by a service: the reason, and the field it names."""
    return api.create_response(request, error.payload(), status=error.status)


@api.exception_handler(gcengine.GCEngineError)
def engine_error(request: HttpRequest, error: gcengine.GCEngineError) -> HttpResponse:
    """A session file, gc.json or plugin the engine refuses: where in the input, and why."""
    body: dict[str, object] = {"detail": str(error), "reason": getattr(error, "reason", str(error))}
    if isinstance(error, gcengine.SessionFormatError):
        body["json_path"] = error.json_path
    if isinstance(
        error, gcengine.ConfigError | gcengine.RetentionGateError | gcengine.PriceTableError
    ):
        body["key"] = error.key
    return api.create_response(request, body, status=400)


@api.exception_handler(Http404)
def not_found(request: HttpRequest, error: Http404) -> HttpResponse:
    return api.create_response(request, {"detail": "Not found."}, status=404)


@api.exception_handler(PermissionDenied)
def permission_denied(request: HttpRequest, error: PermissionDenied) -> HttpResponse:
    """The caller reaches the project but their role lacks the action; the message says which."""
    return api.create_response(request, {"detail": str(error) or "Not allowed."}, status=403)


@api.exception_handler(MultiPartParserError)
def unreadable_upload(request: HttpRequest, error: MultiPartParserError) -> HttpResponse:
    """An upload Django cannot read (a file name too long for its headers): 400 saying why,
    where debug mode would otherwise answer django-ninja's 500 with a traceback."""
    reason = unreadable_upload_reason(error)
    return api.create_response(request, {"detail": reason, "reason": reason}, status=400)


@api.exception_handler(NoProject)
def no_project(request: HttpRequest, error: NoProject) -> HttpResponse:
    return api.create_response(request, {"detail": str(error)}, status=404)
