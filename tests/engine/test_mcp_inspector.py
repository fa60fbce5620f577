"""The local server (``gcengine mcp``) over stdio, driven by the MCP Inspector's CLI, a client
on the official TypeScript SDK: it lists the tools, answers a call, and each refusal reaches
the client as the tool's error result, not as a protocol error."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gcengine import generate_session_file
from tests.mcp_inspector import call, inspect

from .test_mcp_local import LONG, TIGHT, TOOLS, gcengine_command


@pytest.fixture
def server(tmp_path: Path) -> list[str]:
    """The command an agent's configuration names, over a folder with one session."""
    (tmp_path / "agent").mkdir()
    data = generate_session_file(LONG)
    (tmp_path / "agent" / "long.json").write_text(json.dumps(data), encoding="utf-8")
    (tmp_path / "gc.json").write_text(TIGHT)
    # The server gets the client's environment only as given: the code under test is found
    # the way this test process finds it.
    path = os.environ.get("PYTHONPATH")
    env = ["-e", f"PYTHONPATH={path}"] if path else []
    return [*env, gcengine_command(), "mcp", "--root", str(tmp_path)]


def test_the_typescript_client_lists_calls_and_reads_refusals(server: list[str]) -> None:
    listed = inspect(server, "--method", "tools/list")
    assert listed.status == 0, listed.stderr
    assert listed.result is not None
    assert {tool["name"] for tool in listed.result["tools"]} == TOOLS

    answered = call(server, "context_gc_analyze", session_id="agent/long.json", limit=1)
    assert answered.status == 0, answered.stderr
    assert answered.result is not None
    assert answered.result["structuredContent"]["plan"]["stash"]["segments"] > 0

    session = "agent/long.json"
    assert (
        call(server, "context_gc_prune", session_id=session, action="auto").refusal()["code"]
        == "confirm_needed"
    )
    protected = call(server, "context_gc_prune", session_id=session, segment_ids=["turn_11"])
    assert protected.refusal()["status"] == 409
    assert protected.refusal()["code"] == "protected"
    missing = call(server, "context_gc_prune", session_id=session, segment_ids=["turn_99"])
    assert (missing.refusal()["status"], missing.refusal()["code"]) == (404, "not_found")
