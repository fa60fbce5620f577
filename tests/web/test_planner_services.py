"""Planner configs: versioned like GC policies, by the same services, and kept out of
everything only a GC policy can do."""

from __future__ import annotations

import pytest

import gcengine
from jaato_web.dashboard import background, selectors, services
from jaato_web.dashboard.models import AgentSession, Policy, PolicyKind, Project
from jaato_web.review import selectors as review_selectors
from tests.web.conftest import TIGHT_BUDGET

pytestmark = pytest.mark.django_db

ASK = {"ttl_policy": "ask", "safety_buffer": 1000}


@pytest.fixture
def planner_config(project: Project) -> Policy:
    return services.policy_create(
        project=project, name="Ask first", config=ASK, kind=PolicyKind.PLANNER
    )


def test_a_planner_config_is_stored_whole_with_the_engines_defaults(
    planner_config: Policy,
) -> None:
    version = planner_config.versions.get()

    assert planner_config.kind == "planner"
    assert version.config == gcengine.PlannerConfig(
        ttl_policy=gcengine.TTLPolicy.ASK, safety_buffer=1000
    ).model_dump(mode="json")


@pytest.mark.parametrize(
    ("config", "key", "reason"),
    [
        ({"safety_buffer": -1}, "safety_buffer", "Input should be greater than or equal to 0"),
        (
            {"shares": {"system_pinned": 10, "conversation": 10, "rag": 10}},
            "shares",
            "the shares must add up to 100, not 30",
        ),
        ({"shares": {"rag": "x"}}, "shares.rag", "Input should be a valid integer"),
        (
            {"ttl_policy": "later"},
            "ttl_policy",
            "Input should be 'automatic', 'ask' or 'unlimited'",
        ),
        ({"colour": "blue"}, "colour", "Extra inputs are not permitted"),
    ],
)
def test_a_refused_setting_is_named(
    project: Project, config: dict[str, object], key: str, reason: str
) -> None:
    with pytest.raises(services.PlannerConfigError) as refused:
        services.policy_create(project=project, name="Bad", config=config, kind="planner")

    assert (refused.value.key, refused.value.reason) == (key, reason)
    assert not Policy.objects.filter(name="Bad").exists()


def test_saves_conflict_and_restore_as_for_gc_policies(planner_config: Policy) -> None:
    second = services.policy_save(
        policy=planner_config, config={**ASK, "spillover": False}, base_number=1
    )

    with pytest.raises(services.PolicyConflict) as conflict:
        services.policy_save(policy=planner_config, config=ASK, base_number=1)
    restored = services.policy_restore(policy=planner_config, number=1)

    assert second.config["spillover"] is False
    assert conflict.value.details()["differences"] == [{"key": "spillover", "a": True, "b": False}]
    assert restored.number == 3
    assert restored.config == planner_config.versions.get(number=1).config


def test_a_gc_json_is_not_a_planner_config(planner_config: Policy) -> None:
    with pytest.raises(services.PlannerConfigError) as refused:
        services.policy_save(policy=planner_config, config=TIGHT_BUDGET, base_number=1)

    assert refused.value.key == "type"


def test_names_are_per_kind(project: Project, planner_config: Policy) -> None:
    services.policy_create(project=project, name="Ask first", config=TIGHT_BUDGET)

    with pytest.raises(services.PolicyNameError, match="a planner config named 'Ask first'"):
        services.policy_create(project=project, name="Ask first", config={}, kind="planner")


def test_gc_pickers_list_only_gc_policies(
    project: Project, budget_policy: Policy, planner_config: Policy
) -> None:
    gc = selectors.policy_latest_versions(project=project)
    planner = selectors.policy_latest_versions(project=project, kind=PolicyKind.PLANNER)
    choices = selectors.policy_version_choices(project=project)

    assert [v.policy for v in gc] == [budget_policy]
    assert [v.policy for v in planner] == [planner_config]
    assert {v.policy_id for v in choices} == {budget_policy.pk}


def test_a_planner_config_cannot_run_pin_or_be_the_default(
    project: Project, stored_session: AgentSession, planner_config: Policy
) -> None:
    version = planner_config.versions.get()

    with pytest.raises(services.PolicyKindError, match="Ask first is a planner config"):
        background.run_start(session=stored_session, policy_version=version)
    with pytest.raises(services.PinError, match="only a GC policy holds pins"):
        services.policy_pins_change(
            policy=planner_config, change=services.PinChange(pin_turns=(1,))
        )
    with pytest.raises(services.PolicyKindError):
        services.project_set_default_policy(project=project, policy=planner_config)


def test_the_review_queue_holds_planner_config_versions(
    project: Project, budget_policy: Policy, planner_config: Policy
) -> None:
    waiting = review_selectors.queue_pending_versions(project=project)

    assert {v.policy.kind for v in waiting} == {"gc", "planner"}


def test_the_audit_log_says_which_kind_was_saved(planner_config: Policy) -> None:
    event = planner_config.project.audit_events.get(target="Ask first version 1")

    assert event.detail["kind"] == "planner"
    assert services.item_described(planner_config)[0] == "planner config"
