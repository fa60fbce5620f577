"""/mcp as a client reaches it: through the ASGI app that serves the pages and the API too,
and once from a real uvicorn on a loopback port.

Refusals of the transport are HTTP statuses (401 without a valid token, 421 for a host and
403 for an origin ``DJANGO_ALLOWED_HOSTS`` does not allow). A tool's refusal is its result,
as MCP has it, so the model reads why: an error result carrying the status the API would
answer (403 for a role without the action, 404 for another project's session).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from jaato_web.asgi import build_application
from jaato_web.dashboard.models import (
    AgentSession,
    AuditAction,
    AuditEvent,
    GCRun,
    Policy,
    SessionPin,
)
from tests.event_loops import run_async
from tests.mcp_results import refusal_of

from .conftest import Caller

pytestmark = pytest.mark.django_db(transaction=True)

LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
MCP_HEADERS = {"accept": "application/json, text/event-stream"}
SERVER_START_SECONDS = 20


def over_asgi[T](work: Callable[[httpx2.AsyncClient], Awaitable[T]]) -> T:
    """``work`` with an HTTP client of a freshly built app, its lifespan running."""

    async def run() -> T:
        app = build_application()
        async with app.router.lifespan_context(app):
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(transport=transport, base_url="http://localhost") as http:
                return await work(http)

    return run_async(run)


def tool_calls(
    url: str,
    secret: str,
    requests: list[tuple[str, dict[str, Any]]],
    http: httpx2.AsyncClient,
    mode: str = "auto",
) -> Callable[[], Awaitable[list[CallToolResult]]]:
    """A client that negotiates the protocol (``auto``), or one that opens with the
    ``initialize`` handshake as Claude Code and Codex do (``legacy``)."""

    async def run() -> list[CallToolResult]:
        http.headers["authorization"] = f"Bearer {secret}"
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            return [await client.call_tool(name, arguments) for name, arguments in requests]

    return run


@contextmanager
def served() -> Iterator[str]:
    """uvicorn serving the dashboard's app on a free loopback port, as ``./dev serve`` does,
    until the block ends; its base URL. The app is built anew, as ``jaato_web.asgi`` builds
    ``application``: an MCP server's lifespan runs once, and any number of tests serve it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            "jaato_web.asgi:build_application", factory=True, lifespan="on", log_level="warning"
        )
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + SERVER_START_SECONDS
        while not server.started:
            assert thread.is_alive(), "uvicorn stopped before it started serving"
            assert time.monotonic() < deadline, "uvicorn did not start in time"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=SERVER_START_SECONDS)


def post_mcp(headers: dict[str, str]) -> httpx2.Response:
    async def work(http: httpx2.AsyncClient) -> httpx2.Response:
        return await http.post("/mcp", json=LIST_TOOLS, headers={**MCP_HEADERS, **headers})

    return over_asgi(work)


def test_no_token_is_401_with_a_bearer_challenge() -> None:
    response = post_mcp({})
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith('Bearer error="invalid_token"')


def test_an_unknown_token_is_401(viewer: Caller) -> None:
    assert post_mcp({"authorization": "Bearer jgc_not-a-token"}).status_code == 401
    assert post_mcp({"authorization": f"Bearer {viewer.secret}x"}).status_code == 401


def test_a_host_outside_allowed_hosts_is_421(viewer: Caller, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["gc.example.com"]
    bearer = {"authorization": f"Bearer {viewer.secret}"}
    assert post_mcp(bearer).status_code == 421  # the client says Host: localhost
    assert post_mcp({**bearer, "host": "gc.example.com"}).status_code == 200


def test_an_origin_outside_allowed_hosts_is_403(viewer: Caller, settings: Any) -> None:
    settings.ALLOWED_HOSTS = [".example.com", "localhost"]
    bearer = {"authorization": f"Bearer {viewer.secret}"}
    assert post_mcp({**bearer, "origin": "http://evil.test"}).status_code == 403
    assert post_mcp({**bearer, "origin": "https://gc.example.com"}).status_code == 200


def test_the_same_app_serves_the_pages_and_the_api() -> None:
    async def work(http: httpx2.AsyncClient) -> tuple[int, int]:
        health = await http.get("/api/health")
        page = await http.get("/sessions/")
        return health.status_code, page.status_code

    assert over_asgi(work) == (200, 302)  # the sessions page sends a stranger to sign in


def test_tool_refusals_over_http_carry_the_apis_status(
    viewer: Caller, stored_session: AgentSession, foreign_session: AgentSession
) -> None:
    forbidden, not_found = over_asgi(
        lambda http: tool_calls(
            "http://localhost/mcp",
            viewer.secret,
            [
                ("context_gc_pin", {"session_id": stored_session.pk, "turn_indices": [0]}),
                ("context_analyze_usage", {"session_id": foreign_session.pk}),
            ],
            http,
        )()
    )
    assert refusal_of(forbidden)["status"] == 403
    assert refusal_of(not_found)["status"] == 404
    assert not SessionPin.objects.exists()


def test_changes_over_http_are_audited_with_the_tokens_owner(
    editor: Caller, stored_session: AgentSession, default_policy: Policy
) -> None:
    pinned, configured = over_asgi(
        lambda http: tool_calls(
            "http://localhost/mcp",
            editor.secret,
            [
                ("context_gc_pin", {"session_id": stored_session.pk, "turn_indices": [1]}),
                ("context_gc_configure", {"policy_id": default_policy.pk, "target_percent": 0.4}),
            ],
            http,
            mode="legacy",
        )()
    )
    assert pinned.is_error is False
    assert configured.is_error is False
    events = AuditEvent.objects.filter(action__in=[AuditAction.PIN, AuditAction.POLICY_SAVE])
    assert sorted(events.exclude(actor=None).values_list("action", "actor__username")) == [
        ("pin", "edda"),
        ("policy_save", "edda"),
    ]
    assert events.filter(actor=None).count() == 1  # the fixture's own policy, by "system"


def test_prune_over_http_is_refused_to_a_viewer_and_another_projects_session_is_not_found(
    viewer: Caller, editor: Caller, stored_session: AgentSession, foreign_session: AgentSession
) -> None:
    forbidden, not_found = over_asgi(
        lambda http: tool_calls(
            "http://localhost/mcp",
            viewer.secret,
            [
                ("context_gc_prune", {"session_id": stored_session.pk}),
                ("context_gc_prune", {"session_id": foreign_session.pk}),
            ],
            http,
        )()
    )
    assert refusal_of(forbidden)["status"] == 403
    assert refusal_of(not_found)["status"] == 404
    assert not GCRun.objects.exists()


def test_prune_and_restore_over_http_are_audited_with_the_tokens_owner(
    editor: Caller, stored_session: AgentSession, default_policy: Policy
) -> None:
    async def work(http: httpx2.AsyncClient) -> tuple[CallToolResult, CallToolResult]:
        (pruned,) = await tool_calls(
            "http://localhost/mcp",
            editor.secret,
            [("context_gc_prune", {"session_id": stored_session.pk})],
            http,
        )()
        assert pruned.structured_content is not None
        first = pruned.structured_content["ledger"][0]["segment_id"]
        (restored,) = await tool_calls(
            "http://localhost/mcp",
            editor.secret,
            [
                (
                    "context_stash_retrieve",
                    {"run_id": pruned.structured_content["run_id"], "segment_ids": [first]},
                )
            ],
            http,
        )()
        return pruned, restored

    pruned, restored = over_asgi(work)
    assert pruned.is_error is False
    assert restored.is_error is False
    events = AuditEvent.objects.filter(action__in=[AuditAction.RUN, AuditAction.RESTORE])
    assert sorted(events.values_list("action", "actor__username")) == [
        ("restore", "edda"),
        ("run", "edda"),
    ]


def test_the_served_app_end_to_end(
    editor: Caller, stored_session: AgentSession, default_policy: Policy
) -> None:
    """uvicorn serving ``jaato_web.asgi:application`` on a loopback port, as ``./dev serve``
    does, driven by the SDK's own HTTP client as an agent would drive it."""
    with served() as base:

        async def drive() -> tuple[list[str], list[CallToolResult], int]:
            async with httpx2.AsyncClient(
                headers={"authorization": f"Bearer {editor.secret}"}
            ) as http:
                async with Client(streamable_http_client(f"{base}/mcp", http_client=http)) as c:
                    names = [tool.name for tool in (await c.list_tools()).tools]
                    results = [
                        await c.call_tool(
                            "context_analyze_usage", {"session_id": stored_session.pk}
                        ),
                        await c.call_tool(
                            "context_gc_pin", {"session_id": stored_session.pk, "turn_indices": [2]}
                        ),
                        await c.call_tool(
                            "context_gc_configure",
                            {"session_id": stored_session.pk, "preserve_recent_turns": 2},
                        ),
                    ]
                    # An agent's round: what would go, prune with a stash, find it, get it back.
                    analysis = await c.call_tool(
                        "context_gc_analyze", {"session_id": stored_session.pk}
                    )
                    prune = await c.call_tool(
                        "context_gc_prune", {"session_id": stored_session.pk, "action": "stash"}
                    )
                    assert prune.structured_content is not None, prune.content
                    pruned = prune.structured_content
                    search = await c.call_tool(
                        "context_stash_search",
                        {"session_id": pruned["new_session_id"], "limit": 1},
                    )
                    assert search.structured_content is not None, search.content
                    found = search.structured_content["segments"][0]["segment_id"]
                    retrieve = await c.call_tool(
                        "context_stash_retrieve",
                        {"run_id": pruned["run_id"], "segment_ids": [found]},
                    )
                    results += [analysis, prune, search, retrieve]
                health = (await http.get(f"{base}/api/health")).status_code
            return names, results, health

        names, (usage, pin, configure, analysis, prune, search, retrieve), health = run_async(drive)
    assert names == [
        "context_analyze_usage",
        "context_gc_pin",
        "context_gc_unpin",
        "context_gc_configure",
        "context_gc_analyze",
        "context_gc_prune",
        "context_stash_search",
        "context_stash_retrieve",
    ]
    assert usage.structured_content is not None
    assert usage.structured_content["total_tokens"] == stored_session.total_tokens
    assert pin.structured_content is not None
    assert pin.structured_content["pinned_turn_indices"] == [2]
    assert configure.structured_content is not None
    assert configure.structured_content["review_status"] == "pending"
    assert default_policy.versions.latest("number").config["preserve_recent_turns"] == 2
    assert health == 200
    assert analysis.structured_content is not None
    proposed = analysis.structured_content["plan"]["stash"]["segments"]
    assert proposed > 0
    pruned = prune.structured_content
    assert pruned is not None
    run = GCRun.objects.get(pk=pruned["run_id"])
    assert (run.status, run.stashed_segments.count()) == ("done", pruned["stashed"])
    assert search.structured_content is not None
    assert search.structured_content["stashed"] == pruned["stashed"]
    assert retrieve.structured_content is not None
    restored = AgentSession.objects.get(pk=retrieve.structured_content["new_session_id"])
    assert restored.derived_from_run == run
    assert restored.total_tokens > pruned["tokens_after"]
