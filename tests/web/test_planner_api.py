"""The planner through the API: planning a stored session or items sent inline, and planner
configs through the policies API with ``kind``."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

import gcengine
from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import AgentSession, Policy, PolicyKind, Project
from tests.web.uploads import session_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(project: Project) -> AgentSession:
    receipt = background.session_upload(
        project=project, filename="api-plan.json", data=session_file(20, model="gpt-4o")
    )
    assert receipt.session is not None
    return receipt.session


def post(client: Client, url: str, body: object) -> Any:
    return client.post(url, body, content_type="application/json")


def test_a_session_is_planned_with_reasons_for_every_item(
    client: Client, session: AgentSession
) -> None:
    services.session_pin(session=session, turn_index=1)

    answer = post(
        client,
        f"/api/sessions/{session.pk}/plan",
        {"context_length": 3000, "pin_ttl": 4, "pin_priority": "high"},
    )
    body = answer.json()
    plan = gcengine.ContextPlan.model_validate(body["plan"])

    assert answer.status_code == 200
    assert body["status_line"] == plan.status_line
    assert body["status_line"].endswith("(window 3000)")
    assert body["telemetry"]["model"] == "gpt-4o"
    assert body["pins"] == [
        {"turn": 1, "message_id": None, "priority": "high", "ttl": 4, "review_pending": False}
    ]
    codes = {d["code"] for d in body["plan"]["excluded"]}
    assert codes <= {"budget/does_not_fit", "budget/behind_cut"}
    assert all(d["explanation"] for d in body["plan"]["included"] + body["plan"]["excluded"])


@pytest.mark.parametrize(("ttl", "status", "sticky"), [("unlimited", 200, True), (0, 422, None)])
def test_a_pin_ttl_is_turns_or_unlimited(
    client: Client, session: AgentSession, ttl: object, status: int, sticky: bool | None
) -> None:
    services.session_pin(session=session, turn_index=1)

    answer = post(client, f"/api/sessions/{session.pk}/plan", {"pin_ttl": ttl, "decisions": False})

    assert answer.status_code == status
    if sticky:
        assert answer.json()["pins"][0]["ttl"] == "unlimited"


def test_decisions_can_be_left_out(client: Client, session: AgentSession) -> None:
    body = post(client, f"/api/sessions/{session.pk}/plan", {"decisions": False}).json()

    assert body["plan"] is None
    assert body["telemetry"]["model_context_len"] == 128_000


def test_a_stored_planner_config_or_settings_as_is(
    client: Client, project: Project, session: AgentSession
) -> None:
    config = services.policy_create(
        project=project, name="Tight", config={"safety_buffer": 9000}, kind=PolicyKind.PLANNER
    )
    stored = post(
        client,
        f"/api/sessions/{session.pk}/plan",
        {"planner_config_version_id": config.versions.get().pk, "decisions": False},
    ).json()
    given = post(
        client, f"/api/sessions/{session.pk}/plan", {"config": {"safety_buffer": 100}}
    ).json()

    assert stored["telemetry"]["safety_buffer"] == 9000
    assert given["telemetry"]["safety_buffer"] == 100


def test_a_gc_policy_is_not_a_planner_config(
    client: Client, session: AgentSession, budget_policy: Policy
) -> None:
    answer = post(
        client,
        f"/api/sessions/{session.pk}/plan",
        {"planner_config_version_id": budget_policy.versions.get().pk},
    )

    assert answer.status_code == 404


def test_refused_settings_name_the_setting(client: Client, session: AgentSession) -> None:
    answer = post(
        client,
        f"/api/sessions/{session.pk}/plan",
        {"config": {"shares": {"system_pinned": 50, "conversation": 50, "rag": 50}}},
    )

    assert answer.status_code == 400
    assert answer.json()["key"] == "shares"
    assert answer.json()["reason"] == "the shares must add up to 100, not 150"


ITEMS = [
    {"id": "sys", "source": "system", "role": "system", "tokens": 100, "seq": 0},
    {"id": "u1", "source": "conversation", "role": "user", "tokens": 600, "seq": 1, "turn": 0},
    {"id": "a1", "source": "conversation", "role": "assistant", "tokens": 600, "seq": 2, "turn": 0},
    {"id": "u2", "source": "conversation", "role": "user", "tokens": 50, "seq": 3, "turn": 1},
]


def test_items_are_planned_inline(client: Client) -> None:
    answer = post(
        client,
        "/api/plan",
        {
            "items": ITEMS,
            "caps": {"context_length": 1600},
            "config": {"safety_buffer": 0, "default_max_completion_tokens": 1000},
            "plan_id": "p-1",
            "request_id": "r-1",
        },
    )
    body = answer.json()

    assert answer.status_code == 200
    assert body["status_line"] == "ctx tokens: 150 / 1200 (window 1600)"
    assert body["telemetry"]["request_id"] == "r-1"
    assert [d["id"] for d in body["plan"]["included"]] == ["sys", "u2"]
    assert {d["id"]: d["code"] for d in body["plan"]["excluded"]} == {
        "u1": "budget/does_not_fit",
        "a1": "budget/does_not_fit",
    }


def test_a_model_fills_the_caps_from_the_table(client: Client) -> None:
    body = post(client, "/api/plan", {"items": ITEMS, "model": "gpt-4", "decisions": False}).json()

    assert body["telemetry"]["model_context_len"] == 8192
    assert body["telemetry"]["budget_sources"]["context_length"] == "model"


def test_a_bad_item_is_refused_by_name(client: Client) -> None:
    bad = [*ITEMS[:1], {**ITEMS[1], "tokens": -3}]

    answer = post(client, "/api/plan", {"items": bad})

    assert answer.status_code == 400
    assert answer.json()["detail"].startswith("planner item 'u1': tokens:")


def test_planner_configs_through_the_policies_api(client: Client, budget_policy: Policy) -> None:
    created = post(
        client,
        "/api/policies",
        {"name": "Ask", "kind": "planner", "config": {"ttl_policy": "ask"}},
    )
    saved = post(
        client,
        f"/api/policies/{created.json()['id']}/versions",
        {"config": {"ttl_policy": "unlimited"}, "base_version": 1, "message": "keep all"},
    )
    planners = client.get("/api/policies?kind=planner").json()
    policies = client.get("/api/policies").json()

    assert created.status_code == 201
    assert created.json()["kind"] == "planner"
    assert created.json()["latest"]["config"]["shares"] == {
        "system_pinned": 15,
        "conversation": 55,
        "rag": 30,
    }
    assert saved.json()["config"]["ttl_policy"] == "unlimited"
    assert [p["name"] for p in planners] == ["Ask"]
    assert [p["name"] for p in policies] == [budget_policy.name]


def test_a_planner_config_cannot_be_exported_as_gc_json(client: Client, project: Project) -> None:
    config = services.policy_create(project=project, name="P", config={}, kind=PolicyKind.PLANNER)

    export = client.get(f"/api/policies/{config.pk}/versions/1/gc.json")

    assert export.status_code == 404


def test_a_planner_config_made_the_default_is_refused_naming_why(
    client: Client, project: Project
) -> None:
    config = services.policy_create(project=project, name="P", config={}, kind=PolicyKind.PLANNER)

    answer = client.put(f"/api/policies/{config.pk}/default")

    assert answer.status_code == 400
    assert answer.json()["key"] == "policy"
    assert answer.json()["reason"] == (
        "P is a planner config, not a GC policy: only a GC policy can be the project's "
        "default, which runs on every upload."
    )
    project.refresh_from_db()
    assert project.default_policy is None
