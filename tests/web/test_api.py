"""The JSON API: the same services as the pages, errors as JSON with what and where."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

import gcengine
from jaato_web.api import PUBLISHED_IDS
from jaato_web.dashboard.models import AgentSession, Replay
from tests.web.uploads import BUDGET_POLICY, HYBRID_POLICY, session_file

pytestmark = pytest.mark.django_db


def upload(client: Client, data: bytes, name: str = "session.json"):
    return client.post("/api/sessions", {"file": SimpleUploadedFile(name, data)})


@pytest.fixture
def session_id(client: Client) -> int:
    return upload(client, session_file(20)).json()["session"]["id"]


@pytest.fixture
def run(client: Client, session_id: int, django_capture_on_commit_callbacks) -> dict:
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(
            f"/api/sessions/{session_id}/runs",
            {"config": HYBRID_POLICY},
            content_type="application/json",
        )
    assert started.status_code == 202, started.content
    return client.get(f"/api/runs/{started.json()['id']}").json()


def test_upload_answers_201_then_200_for_the_same_bytes(client):
    first = upload(client, session_file(6))
    again = upload(client, session_file(6), name="copy.json")

    assert first.status_code == 201
    assert first.json()["session"]["turn_count"] == 6
    assert again.status_code == 200
    assert again.json()["duplicate"] is True
    assert again.json()["session"]["id"] == first.json()["session"]["id"]


def test_malformed_upload_is_400_with_the_json_path(client):
    document = json.loads(session_file(3))
    document["history"][1]["parts"] = "oops"

    answer = upload(client, json.dumps(document).encode())

    assert answer.status_code == 400
    assert answer.json()["json_path"] == "history[1].parts"
    assert "history[1].parts" in answer.json()["detail"]
    assert AgentSession.objects.count() == 0


def test_oversized_upload_is_413(client, settings):
    settings.JAATO_UPLOAD_MAX_BYTES = 50

    answer = upload(client, session_file(3))

    assert answer.status_code == 413
    assert answer.json()["limit_bytes"] == 50


def test_large_upload_is_202_with_a_job_to_follow(
    client, settings, django_capture_on_commit_callbacks
):
    settings.JAATO_INLINE_INGEST_BYTES = 10
    with django_capture_on_commit_callbacks(execute=True):
        answer = upload(client, session_file(5))

    assert answer.status_code == 202
    job = client.get(f"/api/sessions/uploads/{answer.json()['job']['id']}").json()
    assert job["status"] == "done"
    assert client.get(f"/api/sessions/{job['session_id']}").json()["turn_count"] == 5


def test_list_searches_and_sorts(client):
    upload(client, session_file(4, seed=1), name="alpha.json")
    upload(client, session_file(9, seed=2), name="beta.json")

    by_tokens = client.get("/api/sessions", {"sort": "tokens"}).json()
    found = client.get("/api/sessions", {"search": "alp"}).json()

    assert [s["label"] for s in by_tokens["items"]] == ["beta.json", "alpha.json"]
    assert [s["label"] for s in found["items"]] == ["alpha.json"]
    assert found["count"] == 1


def test_budget_tree_opens_one_level_at_a_time(client, session_id):
    top = client.get(f"/api/sessions/{session_id}/budget").json()
    conversation = next(n for n in top["items"] if n["key"] == "conversation")
    turns = client.get(
        f"/api/sessions/{session_id}/budget", {"parent": conversation["path"]}
    ).json()

    assert turns["total"] == conversation["child_count"] == 20
    assert sum(n["tokens"] for n in turns["items"]) == conversation["tokens"]
    assert turns["items"][0]["policy"] in {"locked", "partial"}
    assert {n["indicator"] for n in top["items"]} <= set(gcengine.GC_POLICY_INDICATORS.values())


def test_history_pages_carry_messages_with_tokens_and_policy(client, session_id):
    page = client.get(f"/api/sessions/{session_id}/turns", {"page": 1}).json()

    first = page["items"][0]
    assert page["count"] == 20
    assert first["messages"][0]["policy"] == "locked"
    assert all(m["tokens"] > 0 for m in first["messages"])


def test_original_download_is_byte_for_byte(client):
    data = session_file(4)
    session_id = upload(client, data).json()["session"]["id"]

    answer = client.get(f"/api/sessions/{session_id}/original")

    assert answer.content == data


def test_run_results_ledger_summaries_diff_and_exports(client, run):
    assert run["status"] == "done", run["error"]
    ledger = client.get(f"/api/runs/{run['id']}/ledger").json()
    summaries = client.get(f"/api/runs/{run['id']}/summaries").json()
    diff = client.get(f"/api/runs/{run['id']}/diff").json()
    exported = client.get(f"/api/runs/{run['id']}/session")
    as_csv = client.get(f"/api/runs/{run['id']}/ledger.csv")
    as_json = client.get(f"/api/runs/{run['id']}/ledger.json")

    assert ledger["count"] == run["items_collected"]
    assert [s["written_by_run"] for s in summaries] == [True]
    # What the ledger freed, less the summary put in their place, is what the run freed.
    freed = sum(i["tokens_freed"] for i in ledger["items"])
    assert freed - summaries[0]["tokens"] == run["tokens_freed"]
    assert {"removed", "kept"} <= {t["state"] for t in diff["items"]}
    after = gcengine.load_session(exported.content)
    assert after.budget.total_tokens() == run["tokens_after"]
    assert exported.content == gcengine.dump_session(after, indent=None).encode()
    assert any(m.kind is gcengine.MessageKind.SUMMARY for m in after.history)
    rows = list(csv.DictReader(io.StringIO(as_csv.content.decode())))
    assert len(rows) == len(as_json.json()) == run["items_collected"]
    assert as_csv["Content-Disposition"].endswith('ledger.csv"')


def test_the_ledger_gives_the_turn_number_people_read_beside_the_index(client, run):
    items = client.get(f"/api/runs/{run['id']}/ledger").json()["items"]
    as_json = client.get(f"/api/runs/{run['id']}/ledger.json").json()
    rows = list(csv.DictReader(io.StringIO(client.get(f"/api/runs/{run['id']}/ledger.csv").text)))

    turned = [i for i in items if i["turn_index"] is not None]
    assert turned
    assert all(i["turn_number"] == i["turn_index"] + 1 for i in turned)
    shown = len(items)  # the first page of the ledger; the files hold all of it
    assert [r["turn_number"] for r in as_json[:shown]] == [i["turn_number"] for i in items]
    assert [r["turn_number"] for r in rows[:shown]] == [str(i["turn_number"] or "") for i in items]


def test_run_with_a_bad_policy_is_400_naming_the_key(client, session_id):
    answer = client.post(
        f"/api/sessions/{session_id}/runs",
        {"config": {**BUDGET_POLICY, "threshold_percent": 150}},
        content_type="application/json",
    )

    assert answer.status_code == 400
    assert answer.json()["key"] == "threshold_percent"


def test_unknown_objects_are_404_json(client):
    assert client.get("/api/sessions/999").json() == {"detail": "Not found."}
    assert client.get("/api/runs/999").status_code == 404


def test_replay_series_through_the_api(client, session_id, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(
            f"/api/sessions/{session_id}/replays",
            {"config": {**BUDGET_POLICY, "threshold_percent": 50, "target_percent": 40}},
            content_type="application/json",
        )
    replay = client.get(f"/api/replays/{started.json()['id']}").json()

    assert replay["status"] == "done"
    assert replay["series"]["events"], "usage passes 50 % in this session, so GC must run"
    # Scored after it was drawn, by the same task.
    assert (replay["retention_pending"], replay["unscored_because"]) == (False, "")
    assert replay["anchor_retention"]["compactions"] == len(replay["series"]["events"])
    assert all("retention" in event for event in replay["series"]["events"])


def test_a_replay_being_scored_says_so_through_the_api(
    client, session_id, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        started = client.post(
            f"/api/sessions/{session_id}/replays",
            {"config": {**BUDGET_POLICY, "threshold_percent": 50, "target_percent": 40}},
            content_type="application/json",
        )
    replay_id = started.json()["id"]
    Replay.objects.filter(pk=replay_id).update(
        status="done",
        retention_pending=True,
        series={"steps": [[0, "post_turn", 10, 10]], "events": [], "context_limit": 100},
    )

    replay = client.get(f"/api/replays/{replay_id}").json()

    assert (replay["status"], replay["retention_pending"]) == ("done", True)
    assert replay["anchor_retention"] is None


def test_policy_versions_and_conflicting_save(client):
    created = client.post(
        "/api/policies",
        {
            "name": "team",
            "config": {"plugin": "gc_budget", "config": {"threshold_percent": 85}},
        },
        content_type="application/json",
    ).json()
    policy_id = created["id"]
    saved = client.post(
        f"/api/policies/{policy_id}/versions",
        {"config": {**BUDGET_POLICY}, "base_version": 1},
        content_type="application/json",
    )
    stale = client.post(
        f"/api/policies/{policy_id}/versions",
        {"config": {**BUDGET_POLICY, "target_percent": 45}, "base_version": 1},
        content_type="application/json",
    )
    exported = client.get(f"/api/policies/versions/{saved.json()['id']}/gc.json")

    assert created["latest"]["config"]["threshold_percent"] == 85
    assert saved.status_code == 201
    assert saved.json()["number"] == 2
    assert stale.status_code == 409
    assert stale.json()["current_version"] == 2
    assert gcengine.load_gc_config(exported.content, env={}).target_percent == 30


def test_an_endpoint_moved_to_its_familys_module_keeps_its_published_id(client: Client) -> None:
    """Clients generated from the OpenAPI document name their methods after operation ids; an
    entry of ``PUBLISHED_IDS`` that names no endpoint any more would change one silently."""
    document = client.get("/api/openapi.json").json()
    ids = {op["operationId"] for ops in document["paths"].values() for op in ops.values()}

    assert set(PUBLISHED_IDS.values()) <= ids
