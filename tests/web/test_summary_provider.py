"""Model-written summaries through a project's own provider: off until an admin sets it, the
key write-only, the call's cost on the run page, and the extractive summary with the reason
when the provider fails or is off (a server on the loopback, no network)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from jaato_web.dashboard import background
from jaato_web.dashboard.models import (
    AgentSession,
    AuditEvent,
    GCRun,
    Project,
    Replay,
    SummaryProvider,
)
from jaato_web.teams.permissions import Role
from tests.chat_server import FakeChatServer
from tests.web.conftest import TIGHT_SUMMARIZE, make_member, signed_in_client

pytestmark = pytest.mark.django_db

PROVIDER_SUMMARIZE = {**TIGHT_SUMMARIZE, "plugin_config": {"summarizer": "provider"}}
KEY = "sk-very-secret-key"


def provider_of(project: Project) -> SummaryProvider:
    return SummaryProvider.objects.get(project=project)


def save_provider(client: Client, project: Project, **fields: Any) -> Any:
    data = {
        "protocol": "anthropic",
        "model": "claude-haiku-4-5",
        "base_url": "",
        "api_key": KEY,
        "timeout": "5",
        **fields,
    }
    return client.post(reverse("project_provider_save", args=[project.pk]), data)


def test_an_admin_sets_the_provider_and_the_key_is_never_shown_back(
    client: Client, project: Project
) -> None:
    page = reverse("project_quality", args=[project.pk])
    assert "Off." in client.get(page).content.decode()
    response = save_provider(client, project)
    assert response.status_code == 302
    assert (provider_of(project).protocol, provider_of(project).api_key) == ("anthropic", KEY)
    html = client.get(page).content.decode()
    assert "a key is stored (never shown)" in html
    assert KEY not in html
    audit = AuditEvent.objects.filter(target__startswith="summary provider").get()
    assert KEY not in str(audit.detail)
    assert audit.detail["key_set"] is True
    # Saving again without a key keeps the stored one; "remove" drops it.
    save_provider(client, project, api_key="", model="claude-sonnet-4-5")
    assert (provider_of(project).model, provider_of(project).api_key) == ("claude-sonnet-4-5", KEY)
    save_provider(client, project, api_key="", remove_key="on")
    assert provider_of(project).api_key == ""
    # Turned off.
    save_provider(client, project, protocol="")
    assert not SummaryProvider.objects.filter(project=project).exists()


def test_only_admins_set_the_provider(project: Project) -> None:
    editor = signed_in_client(make_member(project, "eve", Role.EDITOR))
    assert save_provider(editor, project).status_code == 403
    assert not SummaryProvider.objects.filter(project=project).exists()
    html = editor.get(reverse("project_quality", args=[project.pk])).content.decode()
    assert 'id="provider-form"' not in html
    assert "Only admins of the project set the provider" in html


def test_a_provider_without_a_model_is_refused_with_the_field_named(
    client: Client, project: Project
) -> None:
    response = save_provider(client, project, model="")
    assert response.status_code == 400
    assert "Name the model that writes the summaries." in response.content.decode()
    assert not SummaryProvider.objects.filter(project=project).exists()


def test_a_run_summarizes_through_the_projects_provider_and_shows_the_cost(
    client: Client,
    project: Project,
    stored_session: AgentSession,
    run_finished: Callable[..., GCRun],
    chat_server: str,
) -> None:
    save_provider(client, project, base_url=chat_server.removesuffix("/v1"))
    run = run_finished(stored_session, config=PROVIDER_SUMMARIZE)
    call = run.result["details"]["summary_call"]
    assert call["written_by"] == "anthropic:claude-haiku-4-5"
    assert (call["input_tokens"], call["output_tokens"]) == (1200, 40)
    assert call["dollars"] is not None
    assert FakeChatServer.requests[-1]["api_key"] == KEY
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "claude-haiku-4-5 wrote the summary through the anthropic API" in html
    assert "1,200 tokens in and 40 out" in html


def test_a_failing_provider_leaves_the_extractive_summary_with_the_reason_on_the_run(
    client: Client,
    project: Project,
    stored_session: AgentSession,
    run_finished: Callable[..., GCRun],
    chat_server: str,
) -> None:
    FakeChatServer.status = 500
    save_provider(client, project, base_url=chat_server.removesuffix("/v1"))
    run = run_finished(stored_session, config=PROVIDER_SUMMARIZE)
    assert run.result["details"]["summary_call"]["written_by"] == "extractive"
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "The provider did not write the summary (the endpoint answered HTTP 500)" in html


def test_while_off_the_run_says_so_and_calls_nothing(
    client: Client,
    stored_session: AgentSession,
    run_finished: Callable[..., GCRun],
    chat_server: str,
) -> None:
    run = run_finished(stored_session, config=PROVIDER_SUMMARIZE)
    assert FakeChatServer.requests == []
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "model-written summaries are off in this project" in html


def test_a_replay_summarizes_through_the_projects_provider_once_per_collection(
    client: Client,
    project: Project,
    stored_session: AgentSession,
    chat_server: str,
    django_capture_on_commit_callbacks: Any,
) -> None:
    save_provider(client, project, base_url=chat_server.removesuffix("/v1"))
    with django_capture_on_commit_callbacks(execute=True):
        background.replay_request(session=stored_session, config=PROVIDER_SUMMARIZE)
    replay = Replay.objects.get()
    assert replay.status == "done", replay.error
    collections = [e for e in replay.series["events"] if e["success"]]
    assert collections
    assert len(FakeChatServer.requests) == len(collections)
