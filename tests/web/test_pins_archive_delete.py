"""Pins that say what they touch, and archiving and deleting what is no longer needed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

import gcengine
from jaato_web.dashboard import background, previews, services
from jaato_web.dashboard.models import (
    AgentSession,
    AuditAction,
    AuditEvent,
    BudgetNode,
    GCRun,
    Policy,
    Project,
    Removal,
    SessionDocument,
    SessionTurn,
)
from jaato_web.review import services as review_services
from jaato_web.review.targets import Target
from jaato_web.teams.permissions import Role
from tests.web.conftest import make_member, signed_in_client
from tests.web.uploads import BUDGET_POLICY, session_file

pytestmark = pytest.mark.django_db


def _upload(project: Project, name: str, seed: int) -> AgentSession:
    receipt = background.session_upload(
        project=project, filename=name, data=session_file(20, seed=seed)
    )
    assert receipt.session is not None
    return receipt.session


@pytest.fixture
def two_sessions(project: Project) -> tuple[AgentSession, AgentSession]:
    return _upload(project, "one.json", 1), _upload(project, "two.json", 2)


def _removed_turns(run: GCRun) -> set[int]:
    return {t for t in run.removals.values_list("turn_index", flat=True) if t is not None}


def test_a_session_pin_keeps_the_turn_in_that_session_and_touches_no_other(
    two_sessions: tuple[AgentSession, AgentSession],
    run_finished: Callable[..., GCRun],
) -> None:
    one, two = two_sessions
    first_removed = min(_removed_turns(run_finished(one, config=BUDGET_POLICY)))

    services.session_pin(session=one, turn_index=first_removed)
    pinned_run = run_finished(one, config=BUDGET_POLICY)
    other_run = run_finished(two, config=BUDGET_POLICY)

    assert first_removed not in _removed_turns(pinned_run)
    assert first_removed in pinned_run.config["pinned_turn_indices"]
    assert other_run.config.get("pinned_turn_indices", []) == []
    assert not Policy.objects.exists()  # pinning a session writes no policy version
    assert first_removed in _removed_turns(other_run) | {first_removed}


def test_a_session_pin_is_kept_by_previews_and_replays_too(
    two_sessions: tuple[AgentSession, AgentSession],
) -> None:
    one, _ = two_sessions
    config = services.config_validated(BUDGET_POLICY)
    before = previews.preview(one, config)
    turn = min(before.removed_turns)

    services.session_pin(session=one, turn_index=turn)
    after = previews.preview(one, config)
    replay = background.replay_request(session=one, config=BUDGET_POLICY)

    assert turn not in after.removed_turns
    assert previews.PINS_NOTE in after.notes
    assert turn in replay.config["pinned_turn_indices"]


def test_pinning_twice_unpins_and_a_missing_turn_is_refused(
    two_sessions: tuple[AgentSession, AgentSession],
) -> None:
    one, _ = two_sessions

    assert services.session_pin(session=one, turn_index=3) is True
    assert services.session_pin(session=one, turn_index=3) is False
    with pytest.raises(services.PinError, match="has no turn 999"):
        services.session_pin(session=one, turn_index=999)
    assert services.session_pins(session=one) == (set(), set())
    actions = list(AuditEvent.objects.values_list("action", flat=True))
    assert actions.count(AuditAction.PIN) == 1
    assert actions.count(AuditAction.UNPIN) == 1


def test_the_audit_log_names_a_pinned_turn_as_the_session_page_does(
    two_sessions: tuple[AgentSession, AgentSession],
) -> None:
    one, _ = two_sessions

    services.session_pin(session=one, turn_index=1)

    event = AuditEvent.objects.get(action=AuditAction.PIN)
    assert event.target == f"turn 2 of {one.label}"
    assert event.detail["turn_index"] == 1


def test_policy_pins_change_is_one_version_with_a_message(project: Project) -> None:
    policy = services.policy_create(project=project, name="Budget", config=BUDGET_POLICY)

    version = services.policy_pins_change(
        policy=policy,
        change=services.PinChange(pin_turns=(5, 3), pin_messages=("m-1",)),
        message="keep the task statement",
    )
    same = services.policy_pins_change(policy=policy, change=services.PinChange(pin_turns=(3,)))
    described = services.policy_pins_change(
        policy=policy, change=services.PinChange(unpin_turns=(3, 5))
    )

    assert version.number == 2
    assert version.config["pinned_turn_indices"] == [3, 5]
    assert version.config["pinned_message_ids"] == ["m-1"]
    assert version.message == "keep the task statement"
    assert same.pk == version.pk  # nothing changed, nothing stored
    # Stored by index, described by the numbers the session page shows (index 3 is turn 4).
    assert described.message == "unpinned turns 4, 6"
    assert policy.versions.count() == 3


def test_the_api_pins_in_a_session_and_in_a_policy(
    client: Client, two_sessions: tuple[AgentSession, AgentSession], project: Project
) -> None:
    one, two = two_sessions
    policy = services.policy_create(project=project, name="Budget", config=BUDGET_POLICY)

    here = client.post(
        f"/api/sessions/{one.pk}/pins", {"turn_index": 2}, content_type="application/json"
    )
    batch = client.post(
        f"/api/policies/{policy.pk}/pins",
        {"pin_turn_indices": [1, 4], "message": "both", "session_id": two.pk},
        content_type="application/json",
    )
    missing = client.post(
        f"/api/policies/{policy.pk}/pins",
        {"pin_turn_indices": [900], "session_id": two.pk},
        content_type="application/json",
    )

    assert here.json() == {"pinned_turn_indices": [2], "pinned_message_ids": []}
    assert client.get(f"/api/sessions/{two.pk}/pins").json()["pinned_turn_indices"] == []
    assert batch.json()["pinned_turn_indices"] == [1, 4]
    assert batch.json()["version"]["message"] == "both"
    assert missing.status_code == 400
    assert missing.json()["key"] == "turn_index"


def test_a_turn_the_session_lacks_is_refused_naming_it_and_the_range(
    client: Client, two_sessions: tuple[AgentSession, AgentSession], project: Project
) -> None:
    """20-turn sessions have turn indices 0 to 19; a pin beyond them would keep nothing."""
    one, _ = two_sessions
    policy = services.policy_create(project=project, name="Budget", config=BUDGET_POLICY)

    in_session = client.post(
        f"/api/sessions/{one.pk}/pins", {"turn_index": 20}, content_type="application/json"
    )
    in_policy = client.post(
        f"/api/policies/{policy.pk}/pins",
        {"pin_turn_indices": [3, 25, 20], "session_id": one.pk},
        content_type="application/json",
    )

    assert (in_session.status_code, in_session.json()["key"]) == (400, "turn_index")
    assert in_session.json()["reason"] == (
        f"{one.label} has no turn 20: its turn indices run from 0 to 19"
    )
    assert (in_policy.status_code, in_policy.json()["key"]) == (400, "turn_index")
    assert in_policy.json()["reason"] == (
        f"{one.label} has no turns 20, 25: its turn indices run from 0 to 19"
    )
    assert policy.versions.count() == 1
    assert not one.pins.exists()


@pytest.mark.parametrize("field", ["pin_turn_indices", "unpin_turn_indices"])
def test_a_policy_pin_beyond_any_storable_turn_is_refused(
    client: Client, project: Project, field: str
) -> None:
    """A policy's pins apply to every session, so without ``session_id`` no session's range
    bounds them; but no session can have a turn past a stored turn index's 32 bits."""
    policy = services.policy_create(project=project, name="Budget", config=BUDGET_POLICY)

    answer = client.post(
        f"/api/policies/{policy.pk}/pins",
        {field: [2**63 - 1]},
        content_type="application/json",
    )
    session_pin = client.post(
        "/api/sessions/1/pins", {"turn_index": 2**31}, content_type="application/json"
    )

    assert answer.status_code == 422
    assert answer.json()["detail"][0]["loc"][-2:] == [field, 0]
    assert session_pin.status_code == 422
    assert policy.versions.count() == 1


def test_a_pins_body_with_fields_the_endpoint_does_not_know_is_refused(
    client: Client, two_sessions: tuple[AgentSession, AgentSession], project: Project
) -> None:
    """The body an older docs/api.md described: its fields would be ignored, pinning nothing."""
    one, _ = two_sessions
    policy = services.policy_create(project=project, name="Budget", config=BUDGET_POLICY)

    answer = client.post(
        f"/api/policies/{policy.pk}/pins",
        {"turn_index": 3, "pinned": True, "session_id": one.pk, "author": "me"},
        content_type="application/json",
    )

    assert answer.status_code == 422
    unknown = {
        error["loc"][-1] for error in answer.json()["detail"] if error["type"] == "extra_forbidden"
    }
    assert unknown == {"turn_index", "pinned", "author"}
    assert policy.versions.count() == 1


def test_archived_items_leave_lists_and_pickers_and_come_back(
    client: Client, two_sessions: tuple[AgentSession, AgentSession], project: Project
) -> None:
    one, _ = two_sessions
    policy = services.policy_create(project=project, name="Budget", config=BUDGET_POLICY)
    services.project_set_default_policy(project=project, policy=policy)

    client.post(f"/api/sessions/{one.pk}/archive", {}, content_type="application/json")
    client.post(f"/api/policies/{policy.pk}/archive", {}, content_type="application/json")

    listed = [s["label"] for s in client.get("/api/sessions").json()["items"]]
    archived = [s["label"] for s in client.get("/api/sessions?archived=true").json()["items"]]
    project.refresh_from_db()
    assert listed == ["two.json"]
    assert archived == ["one.json"]
    assert client.get("/api/policies").json() == []
    assert project.default_policy_id is None  # an archived policy runs on no upload
    assert client.get(f"/api/sessions/{one.pk}").status_code == 200  # still readable

    client.post(
        f"/api/sessions/{one.pk}/archive", {"archived": False}, content_type="application/json"
    )
    assert len(client.get("/api/sessions").json()["items"]) == 2


def test_deleting_a_session_removes_all_of_it_and_is_audited(
    client: Client, two_sessions: tuple[AgentSession, AgentSession], project: Project
) -> None:
    one, two = two_sessions
    run = background.run_start(session=one, config=BUDGET_POLICY)
    review_services.comment_add(target=Target.of_run(run), author=None, body="why turn 3?")
    kept_rows = SessionTurn.objects.filter(session=two).count()

    answer = client.delete(f"/api/sessions/{one.pk}")

    assert answer.status_code == 204
    assert not AgentSession.objects.filter(pk=one.pk).exists()
    assert not SessionDocument.objects.filter(session_id=one.pk).exists()
    assert not BudgetNode.objects.filter(session_id=one.pk).exists()
    assert not Removal.objects.filter(run_id=run.pk).exists()
    assert SessionTurn.objects.filter(session=two).count() == kept_rows
    event = AuditEvent.objects.get(action=AuditAction.DELETE)
    assert (event.detail["kind"], event.detail["runs"], event.detail["comments"]) == (
        "session",
        1,
        1,
    )


def test_deleting_a_run_or_a_policy_keeps_the_session(
    client: Client, two_sessions: tuple[AgentSession, AgentSession], project: Project
) -> None:
    one, _ = two_sessions
    policy = services.policy_create(project=project, name="Budget", config=BUDGET_POLICY)
    version = policy.versions.get()
    run = background.run_start(session=one, policy_version=version)

    assert client.delete(f"/api/policies/{policy.pk}").status_code == 204
    run.refresh_from_db()
    assert run.policy_version is None
    assert run.config["type"] == "budget"  # the run keeps the gc.json it used
    assert client.delete(f"/api/runs/{run.pk}").status_code == 204
    assert AgentSession.objects.filter(pk=one.pk).exists()


@pytest.mark.parametrize("role", [Role.VIEWER, Role.REVIEWER])
def test_only_editors_and_admins_archive_and_delete(
    two_sessions: tuple[AgentSession, AgentSession], project: Project, role: Role
) -> None:
    one, _ = two_sessions
    reader = signed_in_client(make_member(project, f"reader-{role}", role))

    answers: list[Any] = [
        reader.delete(f"/api/sessions/{one.pk}"),
        reader.post(f"/api/sessions/{one.pk}/archive", {}, content_type="application/json"),
        reader.post(f"/sessions/{one.pk}/delete/"),
    ]

    assert [a.status_code for a in answers] == [403, 403, 403]
    assert AgentSession.objects.filter(pk=one.pk, archived_at__isnull=True).exists()


def test_the_pages_confirm_before_deleting(
    client: Client, two_sessions: tuple[AgentSession, AgentSession]
) -> None:
    one, _ = two_sessions
    background.run_start(session=one, config=BUDGET_POLICY)

    confirm = client.get(f"/sessions/{one.pk}/delete/")
    done = client.post(f"/sessions/{one.pk}/delete/", follow=True)

    assert "1 GC run with their ledgers" in confirm.content.decode()
    assert AgentSession.objects.filter(pk=one.pk).exists() is False
    assert "Deleted the session one.json" in done.content.decode()


def test_session_pins_reach_the_engine_config_unchanged_otherwise(
    two_sessions: tuple[AgentSession, AgentSession],
) -> None:
    one, _ = two_sessions
    config = services.config_validated(BUDGET_POLICY)

    assert services.config_with_session_pins(config, one) is config
    services.session_pin(session=one, turn_index=4)
    pinned = services.config_with_session_pins(config, one)

    assert isinstance(pinned, gcengine.GCConfig)
    assert pinned.pinned_turn_indices == [4]
    assert {**gcengine.dump_gc_config(pinned), "pinned_turn_indices": []} == {
        **gcengine.dump_gc_config(config),
        "pinned_turn_indices": [],
    }


def test_the_api_previews_runs_and_replays_against_a_tried_window(
    client: Client, project: Project, run_finished: Callable[..., GCRun]
) -> None:
    roomy = background.session_upload(
        project=project,
        filename="roomy.json",
        data=session_file(12, seed=9, model="claude-sonnet-4"),
    ).session
    assert roomy is not None
    body = {"session_id": roomy.pk, "config": BUDGET_POLICY}

    own = client.post("/api/policies/preview", body, content_type="application/json").json()
    tried = client.post(
        "/api/policies/preview", {**body, "context_limit": 2000}, content_type="application/json"
    ).json()
    refused = client.post(
        "/api/policies/preview", {**body, "context_limit": 10}, content_type="application/json"
    )
    replay = client.post(
        f"/api/sessions/{roomy.pk}/replays",
        {"config": BUDGET_POLICY, "context_limit": 2000},
        content_type="application/json",
    ).json()
    run = run_finished(roomy, config=BUDGET_POLICY, context_limit=2000)

    assert (own["context_limit"], own["ledger"]) == (200_000, [])
    assert tried["context_limit"] == 2000
    assert tried["ledger"]
    assert refused.status_code == 422
    assert replay["context_limit"] == 2000
    assert run.context_limit == 2000
    assert (run.items_collected or 0) > 0
