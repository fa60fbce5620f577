"""Every bad request is a 4xx that says what was wrong, in JSON on the API; never a 500."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import AgentSession, GCRun, IngestJob, Policy, Project
from tests.web.test_mcp_http import over_asgi
from tests.web.uploads import BUDGET_POLICY, session_file

pytestmark = pytest.mark.django_db

HUGE = 10**20  # beyond the 64-bit integers the database stores ids in
SUPERSCRIPT_TWO = "²"  # str.isdigit() says yes; int() refuses it


@pytest.fixture
def world(project: Project, stored_session: AgentSession) -> dict[str, Any]:
    policy = services.policy_create(project=project, name="Budget", config=BUDGET_POLICY)
    run = background.run_start(session=stored_session, config=BUDGET_POLICY)
    return {"session": stored_session, "policy": policy, "run": run}


def _get(client: Client, url: str) -> Any:
    client.raise_request_exception = False
    return client.get(url)


def _post(client: Client, url: str, body: Any, content_type: str | None = None) -> Any:
    client.raise_request_exception = False
    if content_type:
        return client.post(url, body, content_type=content_type)
    return client.post(url, body)


@pytest.mark.parametrize(
    "url",
    [
        "/policies/runs/?ids={bad}",
        "/sessions/?project={bad}",
        "/sessions/{session}/?replay={bad}",
        "/sessions/{session}/tree/?offset={bad}",
        "/sessions/{huge}/",
        "/runs/{huge}/",
        "/policies/{huge}/versions/",
    ],
)
def test_pages_answer_odd_numbers_without_failing(
    client: Client, world: dict[str, Any], url: str
) -> None:
    for bad in (SUPERSCRIPT_TWO, str(HUGE)):
        answer = _get(client, url.format(bad=bad, session=world["session"].pk, huge=HUGE))

        assert answer.status_code in (200, 404), (url, bad, answer.status_code)


def test_a_reply_to_an_odd_parent_is_refused_with_a_reason(
    client: Client, world: dict[str, Any]
) -> None:
    answer = _post(
        client, f"/runs/{world['run'].pk}/comments/", {"body": "why?", "parent": SUPERSCRIPT_TWO}
    )

    assert answer.status_code == 400


@pytest.mark.parametrize(
    "url",
    [
        "/api/policies/runs?ids={bad}",
        "/api/sessions?project={bad}",
        "/api/sessions/{session}/budget?offset={bad}",
        "/api/sessions/{huge}",
        "/api/runs/{huge}",
        "/api/policies/{huge}",
    ],
)
def test_the_api_answers_odd_numbers_in_json(
    client: Client, world: dict[str, Any], url: str
) -> None:
    for bad in (SUPERSCRIPT_TWO, str(HUGE)):
        answer = _get(client, url.format(bad=bad, session=world["session"].pk, huge=HUGE))

        assert 400 <= answer.status_code < 500, (url, bad, answer.status_code)
        assert answer["Content-Type"].startswith("application/json"), url
        assert answer.json()["detail"]


@pytest.mark.parametrize(
    ("url", "body"),
    [
        ("/api/policies/{policy}/apply", {"session_ids": [HUGE]}),
        ("/api/policies/{policy}/pins", {"pin_turn_indices": [10**30]}),
        ("/api/sessions/{session}/pins", {"turn_index": 10**30}),
        ("/api/sessions/{session}/runs", {"policy_version_id": HUGE}),
        ("/api/policies/{policy}/versions/1/restore", []),
        ("/api/policies", {"name": "\ud800", "config": {"type": "budget"}}),
        ("/api/runs/{run}/comments", {"body": "fine \ud800 text"}),
    ],
)
def test_the_api_refuses_bad_bodies_in_json(
    client: Client, world: dict[str, Any], url: str, body: Any
) -> None:
    target = url.format(policy=world["policy"].pk, session=world["session"].pk, run=world["run"].pk)
    versions = world["policy"].versions.count()

    answer = _post(client, target, json.dumps(body), "application/json")

    assert 400 <= answer.status_code < 500, (url, answer.status_code, answer.content[:200])
    assert answer["Content-Type"].startswith("application/json")
    assert world["policy"].versions.count() == versions
    assert Policy.objects.count() == 1


def test_a_lone_surrogate_is_named_where_it_is(client: Client, world: dict[str, Any]) -> None:
    answer = _post(
        client,
        "/api/policies",
        '{"name": "ok", "config": {"type": "budget", "agent_name": "a\\ud800"}}',
        "application/json",
    )

    assert answer.status_code == 400
    assert answer.json()["json_path"] == "config.agent_name"
    assert "lone surrogate" in answer.json()["detail"]


def test_a_very_long_search_is_cut_as_the_page_cuts_it(
    client: Client, world: dict[str, Any]
) -> None:
    answer = _get(client, "/api/sessions?search=" + "a" * 60_000)

    assert answer.status_code == 200
    assert answer.json()["count"] == 0


def test_unknown_api_routes_and_failures_answer_json(client: Client, world: dict[str, Any]) -> None:
    missing = _get(client, "/api/no/such/route")

    assert missing.status_code == 404
    assert missing["Content-Type"].startswith("application/json")
    assert missing.json() == {"detail": "Not found: no API route at /api/no/such/route."}


def test_a_body_over_the_limit_is_413(client: Client, world: dict[str, Any], settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    body = json.dumps({"name": "big", "config": {"type": "budget", "_note": "x" * 2_000}})

    answer = _post(client, "/api/policies", body, "application/json")

    assert answer.status_code == 413
    assert answer["Content-Type"].startswith("application/json")
    assert "1,000 bytes" in answer.json()["detail"]


def test_a_file_name_longer_than_a_file_system_takes_is_cut_not_a_failure(
    client: Client, world: dict[str, Any]
) -> None:
    """Django keeps at most 255 characters of an uploaded file's name (keeping its extension)."""
    name = "x" * 1_001 + ".json"

    answer = _post(client, "/api/sessions", {"file": SimpleUploadedFile(name, session_file(4))})

    assert answer.status_code == 201
    label = answer.json()["session"]["label"]
    assert len(label) == 255
    assert label.endswith(".json")


def _multipart_with_name(field: str, filename: str, data: bytes) -> tuple[bytes, str]:
    """A multipart body naming the file as a browser or curl sends it: the test client's own
    files are cut to 255 characters before they are sent, so it never sends a longer name."""
    boundary = "jaato-boundary"
    head = (
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="{field}"; filename="{filename}"\r\n'
        "Content-Type: application/json\r\n\r\n"
    ).encode()
    return head + data + f"\r\n--{boundary}--\r\n".encode(), boundary


@pytest.mark.parametrize(
    ("url", "field"),
    [("/sessions/upload/", "files"), ("/api/sessions", "file"), ("/api/sessions/uploads", "files")],
)
def test_a_file_name_too_long_to_be_read_is_refused_naming_the_limit(
    client: Client, project: Project, url: str, field: str
) -> None:
    body, boundary = _multipart_with_name(field, "x" * 1_005, session_file(4))

    answer = _post(client, url, body, f"multipart/form-data; boundary={boundary}")

    assert answer.status_code == 400
    text = answer.json()["detail"] if url.startswith("/api/") else answer.content.decode()
    assert "file name" in text
    assert "1,024 bytes" in text
    assert not AgentSession.objects.exists()
    assert not IngestJob.objects.exists()
    if not url.startswith("/api/"):
        assert 'rel="stylesheet"' in text  # the dashboard's page, not a bare "Bad Request"


def test_the_service_refuses_a_name_nothing_can_store(project: Project) -> None:
    with pytest.raises(services.UploadNameError, match="at most 255 characters"):
        background.session_upload(project=project, filename="y" * 256, data=session_file(4))


def test_an_import_the_engine_refuses_is_not_a_200(client: Client, world: dict[str, Any]) -> None:
    answer = _post(
        client,
        "/policies/import/",
        {"file": SimpleUploadedFile("gc.json", b'{"type": "budget", "treshold_percent": 80}')},
    )

    assert answer.status_code == 400
    assert "treshold_percent" in answer.content.decode()
    assert GCRun.objects.count() == 1


def test_a_method_a_route_does_not_take_is_405_in_json(client: Client) -> None:
    answer = client.generic("TRACE", "/api/health")
    deleted = client.delete("/api/sessions")

    assert answer.status_code == deleted.status_code == 405
    assert answer["Content-Type"] == "application/json"
    assert answer.json()["detail"] == "405 Method Not Allowed: TRACE is not one of GET"
    assert answer["Allow"] == "GET"
    assert "DELETE is not one of" in deleted.json()["detail"]


def test_a_host_not_allowed_is_400_in_json_on_the_api(client: Client, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["gc.example.com"]
    answer = _get(client, "/api/health")

    assert answer.status_code == 400
    assert answer.json() == {"detail": "400 Bad Request"}
    assert _get(client, "/sessions/")["Content-Type"].startswith("text/html")


@pytest.mark.django_db(transaction=True)
def test_a_path_with_a_line_break_reaches_the_api_and_is_404_in_json() -> None:
    async def work(http: httpx2.AsyncClient) -> httpx2.Response:
        return await http.get("/api/runs/1%0A2")

    answer = over_asgi(work)

    assert answer.status_code == 404
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["detail"] == "Not found: no API route at /api/runs/1\n2."
