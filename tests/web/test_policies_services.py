"""Policy versions, import, restore, pins and bulk apply: the write path pages and the API share."""

from __future__ import annotations

from typing import Any

import pytest

import gcengine
from jaato_web.dashboard import background, selectors, services
from jaato_web.dashboard.models import GCRun, JobStatus, PolicyVersion
from tests.web.policy_data import (
    BUDGET_POLICY,
    DESIGN_SHAPE_FILE,
    JAATO_REPO_FILE,
    JAATO_TUI_EXAMPLE_FILE,
    TRUNCATE_POLICY,
    stored_session,
)

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.web.policy_fixtures"]


def test_every_save_is_a_new_version_and_restore_copies_an_old_one(policy, member):
    services.policy_save(
        policy=policy,
        config={**TRUNCATE_POLICY, "target_percent": 50},
        base_number=1,
        message="stop earlier",
    )

    restored = services.policy_restore(policy=policy, number=1, actor=member)

    numbers = [v.number for v in selectors.policy_versions(policy=policy)]
    first = policy.versions.get(number=1)
    assert numbers == [3, 2, 1]
    assert restored.number == 3
    assert restored.message == "restored version 1"
    assert restored.author == "ann"
    assert restored.config == first.config


def test_restore_on_a_stale_base_is_refused(policy):
    services.policy_save(policy=policy, config=BUDGET_POLICY, base_number=1, message="budget")

    with pytest.raises(services.PolicyConflict):
        services.policy_restore(policy=policy, number=1, base_number=1)

    assert policy.versions.count() == 2


def test_conflict_carries_the_config_the_user_started_from(policy):
    services.policy_save(policy=policy, config=BUDGET_POLICY, base_number=1, message="budget")

    with pytest.raises(services.PolicyConflict) as caught:
        services.policy_save(policy=policy, config=TRUNCATE_POLICY, base_number=1, message="x")

    assert caught.value.base_config == policy.versions.get(number=1).config
    assert caught.value.current.number == 2


def test_policy_names_are_unique_in_a_project(project, policy):
    with pytest.raises(services.PolicyNameError) as caught:
        services.policy_create(project=project, name=f"  {policy.name} ", config=BUDGET_POLICY)

    assert caught.value.key == "name"
    assert "already exists" in caught.value.reason


@pytest.mark.parametrize(
    "path", [JAATO_REPO_FILE, JAATO_TUI_EXAMPLE_FILE, DESIGN_SHAPE_FILE], ids=lambda p: p.stem
)
def test_import_reads_both_shapes_and_jaato_shipped_files(project, path):
    raw = path.read_bytes()

    policy = services.policy_import(project=project, name=path.stem, data=raw)

    version = policy.versions.get()
    assert version.message == "imported"
    # Read as JAATO reads the file (its names, the keys it leaves out), then stored.
    read_as_jaato, _ = gcengine.load_jaato_gc_config(raw, env={})
    assert version.config == gcengine.dump_gc_config(read_as_jaato)
    exported = gcengine.dump_gc_config(services.config_validated(version.config))
    assert services.config_canonical(exported) == version.config


@pytest.mark.parametrize("spelling", ["gcengine_budget", "gc_gcengine_budget"])
def test_import_reads_a_gc_json_naming_the_engines_jaato_plugin(project, spelling):
    """The gc.json a JAATO user writes for the engine's plugin imports as that strategy."""
    raw = f'{{"type": "{spelling}", "target_percent": 50}}'.encode()

    policy = services.policy_import(project=project, name=spelling, data=raw)

    assert policy.versions.get().config["type"] == "budget"
    assert policy.versions.get().config["target_percent"] == 50


def test_pasted_text_is_never_read_as_a_server_path(project, tmp_path):
    secret = tmp_path / "gc.json"
    secret.write_text('{"type": "budget"}')

    with pytest.raises(gcengine.ConfigError):
        services.policy_import(project=project, name="p", data=str(secret))


def pins(**change: tuple[Any, ...]) -> services.PinChange:
    return services.PinChange(**change)


def test_pin_changes_store_a_version_each_way(policy, agent_session):
    version = services.policy_pins_change(
        policy=policy, change=pins(pin_turns=(3,)), session=agent_session
    )
    again = services.policy_pins_change(
        policy=policy, change=pins(unpin_turns=(3,)), session=agent_session
    )

    assert version.number == 2
    assert version.message == "pinned turn 4"  # index 3, numbered as the session page does
    assert version.config["pinned_turn_indices"] == [3]
    assert again.number == 3
    assert again.message == "unpinned turn 4"
    assert again.config["pinned_turn_indices"] == []


def test_pinning_what_is_already_pinned_stores_nothing(policy):
    services.policy_pins_change(policy=policy, change=pins(pin_turns=(4,)))

    version = services.policy_pins_change(policy=policy, change=pins(pin_turns=(4,)))

    assert version.number == 2
    assert policy.versions.count() == 2


def test_pin_of_a_turn_the_session_lacks_is_refused(policy, agent_session):
    with pytest.raises(services.PinError) as caught:
        services.policy_pins_change(
            policy=policy, change=pins(pin_turns=(2, 999)), session=agent_session
        )

    assert caught.value.key == "turn_index"
    assert "has no turn 999" in caught.value.reason
    assert policy.versions.count() == 1


def test_message_pins_are_checked_against_the_session(policy, agent_session):
    message_id = selectors.session_turns(session=agent_session)[2].messages[0]["id"]

    version = services.policy_pins_change(
        policy=policy, change=pins(pin_messages=(message_id,)), session=agent_session
    )

    assert version.config["pinned_message_ids"] == [message_id]
    assert version.message == f"pinned message {message_id}"
    with pytest.raises(services.PinError):
        services.policy_pins_change(
            policy=policy, change=pins(pin_messages=("no-such-id",)), session=agent_session
        )


def test_bulk_apply_queues_one_run_per_session(project, policy, django_capture_on_commit_callbacks):
    sessions = [stored_session(project, turns=12, seed=seed) for seed in (1, 2, 3)]
    version = policy.versions.get()

    with django_capture_on_commit_callbacks(execute=True):
        runs = background.policy_apply(version=version, sessions=sessions)

    assert [r.session_id for r in runs] == [s.pk for s in sessions]
    stored = GCRun.objects.filter(policy_version=version)
    assert stored.count() == 3
    assert set(stored.values_list("status", flat=True)) == {JobStatus.DONE}


def test_pin_policy_is_the_default_unless_one_is_chosen(project, policy):
    other = services.policy_create(project=project, name="other", config=BUDGET_POLICY)

    assert selectors.pin_policy(project=project) is None
    services.project_set_default_policy(project=project, policy=policy)
    assert selectors.pin_policy(project=project) == policy
    assert selectors.pin_policy(project=project, policy_id=other.pk) == other
    assert PolicyVersion.objects.count() == 2
