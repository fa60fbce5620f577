"""The planner configs' pages: list, new, edit with the engine's refusals next to their
settings, conflicts, and the policies' own version, review and archive pages."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from jaato_web.dashboard import services
from jaato_web.dashboard.models import Policy, PolicyKind, Project

pytestmark = pytest.mark.django_db


@pytest.fixture
def planner_config(project: Project) -> Policy:
    return services.policy_create(
        project=project, name="Roomy", config={"safety_buffer": 2048}, kind=PolicyKind.PLANNER
    )


def form_data(**changes: Any) -> dict[str, Any]:
    data = {
        "default_context_length": 32768,
        "default_max_completion_tokens": 4096,
        "safety_buffer": 512,
        "shares_system_pinned": 15,
        "shares_conversation": 55,
        "shares_rag": 30,
        "ttl_policy": "automatic",
        "spillover": "on",
        "default_pin_ttl": 15,
        "message": "first",
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def test_the_list_shows_planner_configs_only(
    client: Client, planner_config: Policy, budget_policy: Policy
) -> None:
    planners = client.get(reverse("planner_config_list")).content.decode()
    policies = client.get(reverse("policy_list")).content.decode()

    assert "Roomy" in planners
    assert "2,048" in planners
    assert "Tight budget" not in planners
    assert "Roomy" not in policies


def test_a_new_config_is_created_from_the_form(client: Client) -> None:
    response = client.post(
        reverse("planner_config_new"), form_data(name="Ask me", ttl_policy="ask")
    )

    created = Policy.objects.get(name="Ask me")
    assert response.status_code == 302
    assert created.kind == "planner"
    assert created.versions.get().config["ttl_policy"] == "ask"


def test_shares_that_do_not_add_up_are_refused_next_to_them(client: Client) -> None:
    response = client.post(reverse("planner_config_new"), form_data(name="Odd", shares_rag=10))
    html = response.content.decode()

    assert response.status_code == 400
    assert "the shares must add up to 100, not 80" in html
    assert 'id="errors-shares_rag"' in html
    assert not Policy.objects.filter(name="Odd").exists()


def test_an_edit_saves_a_version_and_a_stale_one_shows_the_conflict(
    client: Client, planner_config: Policy
) -> None:
    url = reverse("planner_config_edit", args=[planner_config.pk])
    saved = client.post(url, form_data(safety_buffer=1000, base_version=1, message="smaller"))
    stale = client.post(url, form_data(safety_buffer=3000, base_version=1, message="mine"))
    html = stale.content.decode()

    assert saved.status_code == 302
    assert planner_config.versions.count() == 2
    assert "Not saved: Roomy changed while you were editing" in html
    assert 'data-key="safety_buffer"' in html
    assert "Save as version 3" in html


def test_the_versions_compare_and_review_pages_speak_of_settings(
    client: Client, planner_config: Policy
) -> None:
    services.policy_save(
        policy=planner_config, config={"safety_buffer": 2048, "spillover": False}, base_number=1
    )
    versions = client.get(reverse("policy_versions", args=[planner_config.pk])).content.decode()
    compare = client.get(
        reverse("policy_versions_compare", args=[planner_config.pk])
    ).content.decode()
    review = client.get(reverse("version_review", args=[planner_config.pk, 2])).content.decode()

    assert "planner.json" in versions
    assert "gc.json" not in versions
    assert 'data-key="spillover" data-differs' in compare
    assert "1 field differs" in compare
    assert "Planner configs" in review
    assert "planner settings" in review


def test_gc_pages_do_not_open_a_planner_config(client: Client, planner_config: Policy) -> None:
    assert client.get(reverse("policy_edit", args=[planner_config.pk])).status_code == 404
    assert client.get(reverse("policy_export", args=[planner_config.pk, 1])).status_code == 404
    assert client.get(reverse("planner_config_edit", args=[planner_config.pk])).status_code == 200


def test_the_export_is_the_settings_as_json(client: Client, planner_config: Policy) -> None:
    response = client.get(reverse("planner_config_export", args=[planner_config.pk, 1]))

    assert response["Content-Disposition"] == 'attachment; filename="planner.json"'
    assert response.json() == planner_config.versions.get().config


def test_deleting_one_goes_back_to_the_planner_configs(
    client: Client, planner_config: Policy
) -> None:
    response = client.post(reverse("policy_delete", args=[planner_config.pk]))

    assert response["Location"] == reverse("planner_config_list")


def test_a_planner_config_cannot_be_made_the_default_and_the_page_says_why(
    client: Client, project: Project, planner_config: Policy, budget_policy: Policy
) -> None:
    services.project_set_default_policy(project=project, policy=budget_policy)

    response = client.post(
        reverse("policy_default", args=[planner_config.pk]), {"default": "on"}, follow=True
    )

    shown = [str(message) for message in response.context["messages"]]
    assert shown == [
        "Roomy is a planner config, not a GC policy: only a GC policy can be the project's "
        "default, which runs on every upload."
    ]
    project.refresh_from_db()
    assert project.default_policy == budget_policy
