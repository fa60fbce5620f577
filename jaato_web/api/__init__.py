"""JSON API of the dashboard.

One NinjaAPI instance serves every endpoint so there is a single OpenAPI document (browsable at
/api/docs) for scripts, agents and CI pipelines. Routers per area call the same services and
selectors the pages call; engine errors become JSON answers here, in one place.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI, Schema

import gcengine
from gcengine.gc import PluginError
from jaato_web.api import policies, review, runs, sessions, teams
from jaato_web.dashboard import policy_presenters
from jaato_web.dashboard.services import (
    PinError,
    PolicyConflict,
    PolicyNameError,
    UploadTooLarge,
)
from jaato_web.review.services import ReviewError
from jaato_web.teams.access import NoProject

DISTRIBUTION = "jaato-gc-web"

api = NinjaAPI(title="jaato GC API", version="1", urls_namespace="api")
api.add_router("/sessions", sessions.router)
api.add_router("/", runs.router)
api.add_router("/policies", policies.router)
api.add_router("/", teams.router)
api.add_router("/", review.router)


class Health(Schema):
    """Liveness answer; the version lets a client tell which build it reached."""

    status: str
    version: str


def package_version() -> str:
    """A source checkout that was never pip-installed has no metadata; the
    health check must still answer there, so it reports a placeholder."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0.0.0"


@api.get("/health", response=Health, summary="Liveness check")
def health(request: HttpRequest) -> Health:
    """Cheap on purpose: load balancers call it often, so it touches no database."""
    return Health(status="ok", version=package_version())


@api.exception_handler(gcengine.SessionFormatError)
def session_format_error(request: HttpRequest, error: gcengine.SessionFormatError) -> HttpResponse:
    return api.create_response(
        request,
        {"detail": str(error), "reason": error.reason, "json_path": error.json_path},
        status=400,
    )


@api.exception_handler(gcengine.ConfigError)
def config_error(request: HttpRequest, error: gcengine.ConfigError) -> HttpResponse:
    return api.create_response(
        request, {"detail": str(error), "reason": error.reason, "key": error.key}, status=400
    )


@api.exception_handler(PluginError)
def plugin_error(request: HttpRequest, error: PluginError) -> HttpResponse:
    return api.create_response(request, {"detail": str(error)}, status=400)


@api.exception_handler(UploadTooLarge)
def upload_too_large(request: HttpRequest, error: UploadTooLarge) -> HttpResponse:
    return api.create_response(
        request, {"detail": str(error), "limit_bytes": error.limit}, status=413
    )


@api.exception_handler(PolicyConflict)
def policy_conflict(request: HttpRequest, error: PolicyConflict) -> HttpResponse:
    return api.create_response(
        request,
        {
            "detail": str(error),
            "key": "base_version",
            "base_version": error.base,
            "current_version": error.current.number,
            "current_author": error.current.author,
            "current_message": error.current.message,
            "current_config": error.current.config,
            # What changed between the version the client started from and the stored one.
            "differences": policy_presenters.config_changes(
                error.base_config or {}, error.current.config
            ),
        },
        status=409,
    )


@api.exception_handler(PolicyNameError)
def policy_name_error(request: HttpRequest, error: PolicyNameError) -> HttpResponse:
    return api.create_response(
        request, {"detail": str(error), "reason": error.reason, "key": error.key}, status=400
    )


@api.exception_handler(PinError)
def pin_error(request: HttpRequest, error: PinError) -> HttpResponse:
    return api.create_response(
        request, {"detail": str(error), "reason": error.reason, "key": error.key}, status=400
    )


@api.exception_handler(ReviewError)
def review_error(request: HttpRequest, error: ReviewError) -> HttpResponse:
    return api.create_response(
        request, {"detail": str(error), "reason": error.reason, "key": error.key}, status=400
    )


@api.exception_handler(Http404)
def not_found(request: HttpRequest, error: Http404) -> HttpResponse:
    return api.create_response(request, {"detail": "Not found."}, status=404)


@api.exception_handler(PermissionDenied)
def permission_denied(request: HttpRequest, error: PermissionDenied) -> HttpResponse:
    """The caller reaches the project but their role lacks the action; the message says which."""
    return api.create_response(request, {"detail": str(error) or "Not allowed."}, status=403)


@api.exception_handler(NoProject)
def no_project(request: HttpRequest, error: NoProject) -> HttpResponse:
    return api.create_response(request, {"detail": str(error)}, status=404)
