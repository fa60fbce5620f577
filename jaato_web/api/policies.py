"""Policies: gc.json files stored with versions, imported and exported as JAATO reads them."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from ninja import Router, Status

from jaato_web.api.schemas import PolicyIn, PolicyOut, PolicyVersionIn, PolicyVersionOut, Problem
from jaato_web.dashboard import presenters, selectors, services
from jaato_web.dashboard.models import Policy, PolicyVersion

router = Router(tags=["policies"])


def _policy_out(policy: Policy, latest: PolicyVersion | None) -> dict[str, object]:
    return {
        "id": policy.pk,
        "name": policy.name,
        "description": policy.description,
        "is_default": policy.project.default_policy_id == policy.pk,
        "latest": latest,
    }


@router.get("", response=list[PolicyOut], summary="Policies with their latest version")
def list_policies(request: HttpRequest) -> list[dict[str, object]]:
    project = services.project_default()
    return [_policy_out(v.policy, v) for v in selectors.policy_latest_versions(project=project)]


@router.post("", response={201: PolicyOut, 400: Problem}, summary="Create (or import) a policy")
def create_policy(request: HttpRequest, payload: PolicyIn) -> Status[dict[str, object]]:
    """Either gc.json shape is accepted; it is validated by the engine and stored flat."""
    policy = services.policy_create(
        project=services.project_default(),
        name=payload.name,
        config=payload.config,
        message=payload.message,
    )
    return Status(201, _policy_out(policy, policy.versions.get()))


@router.get("/{int:policy_id}/versions", response=list[PolicyVersionOut], summary="All versions")
def policy_versions(request: HttpRequest, policy_id: int) -> list[PolicyVersion]:
    policy = selectors.policy_get(project=services.project_default(), policy_id=policy_id)
    return list(selectors.policy_versions(policy=policy))


@router.post(
    "/{int:policy_id}/versions",
    response={201: PolicyVersionOut, 400: Problem, 409: Problem},
    summary="Save a new version",
)
def save_policy(
    request: HttpRequest, policy_id: int, payload: PolicyVersionIn
) -> Status[PolicyVersion]:
    policy = selectors.policy_get(project=services.project_default(), policy_id=policy_id)
    version = services.policy_save(
        policy=policy,
        config=payload.config,
        base_number=payload.base_version,
        message=payload.message,
    )
    return Status(201, version)


@router.get("/versions/{int:version_id}/gc.json", summary="Export a version as gc.json")
def export_policy(request: HttpRequest, version_id: int) -> HttpResponse:
    version = selectors.policy_version_get(
        project=services.project_default(), version_id=version_id
    )
    response = HttpResponse(
        presenters.pretty_json(version.config), content_type="application/json; charset=utf-8"
    )
    response["Content-Disposition"] = 'attachment; filename="gc.json"'
    return response
