"""One use case, two doors: a file posted through a page and through the API is taken or
refused alike, because the rules live in the services both call."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from jaato_web.dashboard import services
from jaato_web.dashboard.models import AgentSession, Policy, Project
from jaato_web.teams.models import Membership
from jaato_web.teams.permissions import Role
from tests.web.conftest import make_member, session_bytes, signed_in_client

BUDGET_GC_JSON = json.dumps(
    {"type": "budget", "threshold_percent": 80, "target_percent": 60, "pressure_percent": 90}
).encode()


@pytest.fixture
def two_projects(db: None) -> tuple[Client, Project, Project]:
    """One admin of two empty projects: one filled through pages, one through the API."""
    page_project = Project.objects.create(name="Through pages", slug="pages")
    api_project = Project.objects.create(name="Through the API", slug="api")
    user = make_member(page_project, "dora", Role.ADMIN)
    Membership.objects.create(project=api_project, user=user, role=Role.ADMIN)
    return signed_in_client(user), page_project, api_project


def _import_on_page(client: Client, project: Project, name: str, data: bytes) -> Any:
    return client.post(
        f"/policies/import/?project={project.pk}",
        {"file": SimpleUploadedFile(name, data, "application/json"), "name": "", "message": ""},
    )


def _import_by_api(client: Client, project: Project, name: str, data: bytes) -> Any:
    return client.post(
        f"/api/policies/import?project={project.pk}",
        {"file": SimpleUploadedFile(name, data, "application/json")},
    )


def _policies(project: Project) -> list[tuple[str, dict[str, Any], str]]:
    return [
        (p.name, p.versions.get().config, p.versions.get().message)
        for p in Policy.objects.filter(project=project).order_by("pk")
    ]


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("gc.json", ["Imported budget policy", "Imported budget policy 2"]),
        ("budget-80-60.json", ["budget-80-60", "budget-80-60 2"]),
    ],
)
def test_a_policy_file_becomes_the_same_policies_through_either_door(
    two_projects: tuple[Client, Project, Project], filename: str, expected: list[str]
) -> None:
    client, page_project, api_project = two_projects

    for _ in range(2):
        page = _import_on_page(client, page_project, filename, BUDGET_GC_JSON)
        api = _import_by_api(client, api_project, filename, BUDGET_GC_JSON)
        assert page.status_code == 302
        assert api.status_code == 201

    assert _policies(page_project) == _policies(api_project)
    assert [name for name, _, _ in _policies(page_project)] == expected


def test_a_policy_file_over_the_limit_is_refused_alike(
    two_projects: tuple[Client, Project, Project],
) -> None:
    client, page_project, api_project = two_projects
    huge = b'{"type": "budget", "_comment": "' + b"x" * services.POLICY_MAX_BYTES + b'"}'

    page = _import_on_page(client, page_project, "gc.json", huge)
    api = _import_by_api(client, api_project, "gc.json", huge)

    reason = api.json()["reason"]
    assert api.status_code == 413
    assert reason.startswith("the gc.json is ")
    assert reason in page.content.decode()
    assert not Policy.objects.exists()


def test_a_policy_created_through_the_api_is_capped_like_an_import(
    two_projects: tuple[Client, Project, Project],
) -> None:
    client, _, api_project = two_projects
    pins = list(range(60_000))  # a pin list no session has; stored whole in every version

    answer = client.post(
        f"/api/policies?project={api_project.pk}",
        {"name": "Pinned", "config": {"type": "budget", "pinned_turn_indices": pins}},
        content_type="application/json",
    )

    assert answer.status_code == 413
    assert not Policy.objects.exists()


def _session_row(project: Project) -> dict[str, Any]:
    session = AgentSession.objects.get(project=project)
    fields = ("label", "source_format", "turn_count", "message_count", "total_tokens")
    return {
        **{field: getattr(session, field) for field in fields},
        "runs": [(r.plugin, r.status, r.tokens_after) for r in session.runs.all()],
    }


def test_a_session_file_is_stored_the_same_through_either_door(
    two_projects: tuple[Client, Project, Project],
) -> None:
    client, page_project, api_project = two_projects
    data = session_bytes()

    page = client.post(
        "/sessions/upload/",
        {"project": page_project.pk, "files": [SimpleUploadedFile("agent.json", data)]},
    )
    api = client.post(
        f"/api/sessions?project={api_project.pk}", {"file": SimpleUploadedFile("agent.json", data)}
    )

    assert page.status_code == 200
    assert api.status_code == 201
    assert _session_row(page_project) == _session_row(api_project)


def test_a_malformed_session_file_is_refused_alike(
    two_projects: tuple[Client, Project, Project],
) -> None:
    client, page_project, api_project = two_projects
    document = json.loads(session_bytes())
    document["history"][1]["parts"] = "not a list"
    data = json.dumps(document).encode()

    page = client.post(
        "/sessions/upload/",
        {"project": page_project.pk, "files": [SimpleUploadedFile("broken.json", data)]},
    )
    api = client.post(
        f"/api/sessions?project={api_project.pk}", {"file": SimpleUploadedFile("broken.json", data)}
    )

    problem = api.json()
    assert (page.status_code, api.status_code) == (400, 400)
    assert problem["json_path"] == "history[1].parts"
    html = page.content.decode()
    assert problem["json_path"] in html
    assert problem["reason"] in html
    assert not AgentSession.objects.exists()
