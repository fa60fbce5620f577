"""The dashboard's /mcp over HTTP, driven by the MCP Inspector's CLI, a client on the official
TypeScript SDK, with a member's API token: it lists the tools, answers a call, and each
refusal reaches the client as the tool's error result, not as a protocol error."""

from __future__ import annotations

import pytest

from jaato_web.dashboard.models import AgentSession, GCRun, Policy
from tests.mcp_inspector import call, inspect

from .conftest import Caller
from .test_mcp_http import served

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_typescript_client_lists_calls_and_reads_refusals(
    editor: Caller, stored_session: AgentSession, default_policy: Policy
) -> None:
    session = stored_session.pk
    with served() as base:
        server = [f"{base}/mcp", "--transport", "http"]
        server += ["--header", f"Authorization: Bearer {editor.secret}"]
        listed = inspect(server, "--method", "tools/list")
        answered = call(server, "context_gc_analyze", session_id=session, limit=1)
        confirm = call(server, "context_gc_prune", session_id=session, action="delete")
        pinned = call(server, "context_gc_pin", session_id=session, turn_indices=[0])
        protected = call(server, "context_gc_prune", session_id=session, segment_ids=["turn_0"])
        missing = call(server, "context_gc_prune", session_id=999_999)
    assert listed.status == 0, listed.stderr
    assert listed.result is not None
    assert len(listed.result["tools"]) == 8
    assert answered.status == 0, answered.stderr
    assert answered.result is not None
    assert answered.result["structuredContent"]["plan"]["stash"]["segments"] > 0
    assert pinned.status == 0, pinned.stderr
    assert (confirm.refusal()["status"], confirm.refusal()["code"]) == (400, "confirm_needed")
    assert (protected.refusal()["status"], protected.refusal()["code"]) == (409, "protected")
    assert (missing.refusal()["status"], missing.refusal()["code"]) == (404, "not_found")
    assert not GCRun.objects.exists()
