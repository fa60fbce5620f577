"""The admin shows what the dashboard stores, without editing it or loading big columns."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import reverse

from jaato_web.dashboard import background
from jaato_web.dashboard.models import (
    AgentSession,
    GCRun,
    IngestJob,
    Policy,
    PolicyVersion,
    Project,
    Removal,
    Replay,
    SessionTurn,
    Summary,
)

pytestmark = pytest.mark.django_db

MODELS = [
    Project,
    AgentSession,
    SessionTurn,
    Policy,
    PolicyVersion,
    GCRun,
    Removal,
    Summary,
    Replay,
    IngestJob,
]


def admin_url(model: type, view: str, *args: object) -> str:
    return reverse(f"admin:dashboard_{model._meta.model_name}_{view}", args=args)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_changelists_load(admin_client: Client, summarize_run: GCRun, model: type) -> None:
    background.replay_request(session=summarize_run.session, config=summarize_run.config)
    IngestJob.objects.create(
        project=summarize_run.session.project, filename="x.json", sha256="0" * 64, size_bytes=1
    )

    response = admin_client.get(admin_url(model, "changelist"))

    assert response.status_code == 200
    assert "0 results" not in response.content.decode()


def test_session_is_read_only_and_its_original_is_not_shown(
    admin_client: Client, stored_session: AgentSession
) -> None:
    response = admin_client.get(admin_url(AgentSession, "change", stored_session.pk))

    html = response.content.decode()
    assert response.status_code == 200
    assert stored_session.sha256 in html
    assert 'name="label"' not in html  # read-only: no inputs
    assert admin_client.get(admin_url(AgentSession, "add")).status_code == 403
    assert admin_client.get(admin_url(AgentSession, "delete", stored_session.pk)).status_code == 403


def test_run_page_in_admin_leaves_out_the_collected_session(
    admin_client: Client, finished_run: GCRun
) -> None:
    html = admin_client.get(admin_url(GCRun, "change", finished_run.pk)).content.decode()

    assert "gc_budget" in html
    assert "session_after" not in html
    assert "Session after" not in html


@pytest.mark.parametrize(
    "model",
    [m for m in admin.site._registry if m._meta.app_label in {"dashboard", "review", "teams"}],
    ids=lambda m: m.__name__,
)
def test_every_stored_model_is_read_only(admin_client: Client, model: type) -> None:
    """What the dashboard stores is written only by its services (which keep history and the
    audit log); the admin may show it but never add, change or delete it."""
    model_admin = admin.site._registry[model]
    request = admin_client.get("/admin/").wsgi_request

    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)
    for inline in model_admin.get_inline_instances(request):
        assert not inline.has_add_permission(request, None)
        assert not inline.has_change_permission(request)
        assert not inline.has_delete_permission(request)


def test_a_project_cannot_be_edited_in_the_admin(admin_client: Client, project: Project) -> None:
    url = reverse("admin:dashboard_project_change", args=[project.pk])

    response = admin_client.post(
        url, {"name": "Renamed", "slug": project.slug, "run_default_policy_on_upload": "on"}
    )

    assert response.status_code == 403
    project.refresh_from_db()
    assert project.name != "Renamed"
    assert admin_client.get(url).status_code == 200  # still shown
