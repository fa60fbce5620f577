"""The policy API: every editor action, with the editor's validation; errors name the key."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

import gcengine
from jaato_web.dashboard.models import GCRun, Policy, Project
from tests.web.policy_data import (
    DESIGN_SHAPE_FILE,
    JAATO_REPO_FILE,
    JAATO_TUI_EXAMPLE_FILE,
    TRUNCATE_POLICY,
    gc_file,
    stored_session,
)

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.web.policy_fixtures"]


def post(client: Client, url: str, body: object):
    return client.post(url, body, content_type="application/json")


def test_create_save_and_list(client: Client):
    created = post(client, "/api/policies", {"name": "p", "config": TRUNCATE_POLICY}).json()

    saved = post(
        client,
        f"/api/policies/{created['id']}/versions",
        {"config": {**TRUNCATE_POLICY, "target_percent": 50}, "base_version": 1, "message": "m"},
    )
    listed = client.get("/api/policies").json()

    assert created["latest"]["author"] == "ann"
    assert saved.status_code == 201
    assert saved.json()["number"] == 2
    assert listed[0]["latest"]["number"] == 2


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"target_percent": 90}, "target_percent"),
        ({"type": "gc_magic"}, "type"),
        ({"notify_on_gc": True, "notification_template": "{nope}"}, "notification_template"),
        ({"shiny": True}, "shiny"),
        (
            {"plugin_config": {"preserve_recent_turns": "three"}},
            "plugin_config.preserve_recent_turns",
        ),
    ],
)
def test_invalid_config_is_400_with_the_key(client: Client, policy, change, key):
    answer = post(
        client,
        f"/api/policies/{policy.pk}/versions",
        {"config": {**TRUNCATE_POLICY, **change}, "base_version": 1},
    )

    assert answer.status_code == 400
    assert answer.json()["key"] == key
    assert answer.json()["detail"].startswith(f"{key}:")


def test_duplicate_name_is_400_on_name(client: Client, policy):
    answer = post(client, "/api/policies", {"name": policy.name, "config": TRUNCATE_POLICY})

    assert answer.status_code == 400
    assert answer.json()["key"] == "name"


def test_concurrent_save_is_409_with_the_current_config_and_differences(client: Client, policy):
    url = f"/api/policies/{policy.pk}/versions"
    post(client, url, {"config": {**TRUNCATE_POLICY, "target_percent": 50}, "base_version": 1})

    answer = post(
        client, url, {"config": {**TRUNCATE_POLICY, "preserve_recent_turns": 9}, "base_version": 1}
    )

    body = answer.json()
    assert answer.status_code == 409
    assert body["current_version"] == 2
    assert body["current_config"]["target_percent"] == 50
    assert body["differences"] == [{"key": "target_percent", "a": 40.0, "b": 50.0}]
    assert policy.versions.count() == 2


@pytest.mark.parametrize(
    "path", [JAATO_REPO_FILE, JAATO_TUI_EXAMPLE_FILE, DESIGN_SHAPE_FILE], ids=lambda p: p.stem
)
def test_import_file_and_export_round_trip(client: Client, path):
    imported = client.post(
        "/api/policies/import", {"file": SimpleUploadedFile(f"{path.stem}.json", path.read_bytes())}
    )
    assert imported.status_code == 201, imported.content
    policy_id = imported.json()["id"]

    exported = client.get(f"/api/policies/{policy_id}/versions/1/gc.json").content
    again = post(client, "/api/policies", {"name": "again", "config": json.loads(exported)})

    assert imported.json()["name"] == path.stem
    # JAATO's plugin named, no rules: stored with JAATO's rules, exported to run so in JAATO.
    read_as_jaato, _ = gcengine.load_jaato_gc_config(path.read_bytes(), env={})
    assert imported.json()["latest"]["config"]["rules"] == "jaato"
    assert gcengine.load_gc_config(exported, env={}) == read_as_jaato
    assert again.json()["latest"]["config"] == imported.json()["latest"]["config"]


def test_json_body_import_takes_the_design_shape(client: Client):
    answer = post(client, "/api/policies", {"name": "d", "config": gc_file(DESIGN_SHAPE_FILE)})

    assert answer.status_code == 201
    assert answer.json()["latest"]["config"]["type"] == "budget"


def test_restore_compare_and_versions(client: Client, policy):
    post(
        client,
        f"/api/policies/{policy.pk}/versions",
        {"config": {**TRUNCATE_POLICY, "target_percent": 50}, "base_version": 1},
    )

    restored = post(client, f"/api/policies/{policy.pk}/versions/1/restore", {})
    compared = client.get(f"/api/policies/{policy.pk}/versions/compare?a=1&b=2").json()
    stale = post(client, f"/api/policies/{policy.pk}/versions/2/restore", {"base_version": 2})

    assert restored.status_code == 201
    assert restored.json()["number"] == 3
    assert restored.json()["message"] == "restored version 1"
    assert restored.json()["config"] == policy.versions.get(number=1).config
    assert compared["differences"] == [{"key": "target_percent", "a": 40.0, "b": 50.0}]
    assert stale.status_code == 409


def test_default_is_set_and_unset(client: Client, project, policy):
    client.put(f"/api/policies/{policy.pk}/default")
    project.refresh_from_db()
    assert project.default_policy == policy
    assert client.get(f"/api/policies/{policy.pk}").json()["is_default"] is True

    client.delete(f"/api/policies/{policy.pk}/default")
    project.refresh_from_db()
    assert project.default_policy is None


def test_pin_and_unpin_make_versions(client: Client, policy, agent_session):
    url = f"/api/policies/{policy.pk}/pins"

    pinned = post(client, url, {"pin_turn_indices": [4], "session_id": agent_session.pk}).json()
    unpinned = post(client, url, {"unpin_turn_indices": [4]}).json()
    missing = post(client, url, {"pin_turn_indices": [400], "session_id": agent_session.pk})

    assert pinned["pinned_turn_indices"] == [4]
    assert pinned["version"]["message"] == "pinned turn 5"  # index 4 is the page's turn 5
    assert unpinned["pinned_turn_indices"] == []
    assert unpinned["version"]["number"] == 3
    assert missing.status_code == 400
    assert missing.json()["key"] == "turn_index"


def test_preview_gives_the_ledger_and_figures(client: Client, agent_session, policy):
    answer = post(
        client,
        "/api/policies/preview",
        {"session_id": agent_session.pk, "config": TRUNCATE_POLICY, "replay": True},
    ).json()
    by_version = post(
        client,
        "/api/policies/preview",
        {"session_id": agent_session.pk, "policy_version_id": policy.versions.get().pk},
    ).json()

    assert answer["tokens_before"] == agent_session.total_tokens
    assert answer["tokens_after"] == answer["tokens_before"] - answer["tokens_freed"]
    assert answer["ledger"]
    assert [i["turn_index"] for i in answer["ledger"]] == answer["removed_turns"]
    assert answer["replay"]["series"]["steps"]
    assert by_version["ledger"] == answer["ledger"]
    assert by_version["replay"] is None


def test_preview_of_an_invalid_config_is_400_with_the_key(client: Client, agent_session):
    answer = post(
        client,
        "/api/policies/preview",
        {"session_id": agent_session.pk, "config": {**TRUNCATE_POLICY, "threshold_percent": 0}},
    )

    assert answer.status_code == 400
    assert answer.json()["key"] == "threshold_percent"


def test_a_pin_leaves_the_preview_ledger(client: Client, agent_session):
    url = "/api/policies/preview"
    plain = post(client, url, {"session_id": agent_session.pk, "config": TRUNCATE_POLICY}).json()
    first = plain["removed_turns"][0]

    pinned = post(
        client,
        url,
        {
            "session_id": agent_session.pk,
            "config": {**TRUNCATE_POLICY, "pinned_turn_indices": [first]},
        },
    ).json()

    assert first not in pinned["removed_turns"]


def test_compare_reports_only_a_and_only_b(client: Client, agent_session):
    url = "/api/policies/preview"
    first = post(client, url, {"session_id": agent_session.pk, "config": TRUNCATE_POLICY}).json()[
        "removed_turns"
    ][0]

    answer = post(
        client,
        "/api/policies/compare",
        {
            "session_id": agent_session.pk,
            "a": {"config": TRUNCATE_POLICY},
            "b": {"config": {**TRUNCATE_POLICY, "pinned_turn_indices": [first]}},
        },
    ).json()

    assert first in answer["only_a_turns"]
    assert first not in answer["only_b_turns"]
    assert answer["only_b_turns"]
    assert answer["differences"] == [{"key": "pinned_turn_indices", "a": [], "b": [first]}]


def test_compare_needs_one_source_per_side(client: Client, agent_session):
    answer = post(
        client,
        "/api/policies/compare",
        {"session_id": agent_session.pk, "a": {}, "b": {"config": TRUNCATE_POLICY}},
    )

    assert answer.status_code == 400


def test_bulk_apply_creates_a_run_per_session_and_reports_progress(
    client: Client, project, policy, django_capture_on_commit_callbacks
):
    sessions = [stored_session(project, turns=12, seed=seed) for seed in (4, 5, 6)]

    with django_capture_on_commit_callbacks(execute=True):
        answer = post(
            client, f"/api/policies/{policy.pk}/apply", {"session_ids": [s.pk for s in sessions]}
        )

    assert answer.status_code == 202
    run_ids = [r["id"] for r in answer.json()["runs"]]
    assert GCRun.objects.filter(pk__in=run_ids).count() == 3
    status = client.get(f"/api/policies/runs?ids={','.join(map(str, run_ids))}").json()
    assert status["total"] == 3
    assert status["done"] == 3
    assert status["pending"] == 0


def test_apply_without_sessions_is_400(client: Client, policy):
    answer = post(client, f"/api/policies/{policy.pk}/apply", {"session_ids": [999]})

    assert answer.status_code == 400
    assert answer.json()["key"] == "session_ids"


def test_other_projects_policies_are_404(client: Client, policy):
    other = Project.objects.create(name="other", slug="other")
    theirs = Policy.objects.create(project=other, name="theirs")

    assert client.get(f"/api/policies/{theirs.pk}").status_code == 404
    assert client.get(f"/api/policies/{policy.pk}").status_code == 200
