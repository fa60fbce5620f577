"""The MCP Inspector's CLI, a client on the official TypeScript SDK, driving a server of ours.

Python clients are lenient where the TypeScript SDK's are strict (a result whose structured
content does not match the tool's output schema is a protocol error there), so both servers
are driven by this client too. CI installs the pinned version once (``.ci/run``) and names it
in ``JAATO_MCP_INSPECTOR``; elsewhere ``npx`` fetches it. Without either the tests are skipped,
except under CI, where they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import UNDER_CI
from tests.mcp_results import REFUSAL

VERSION = "2.12.0"
PACKAGE = f"@modelcontextprotocol/inspector@{VERSION}"
# One call starts Node, the client and, over stdio, the server: seconds, more on a first npx.
CALL_SECONDS = 180


def inspector() -> list[str]:
    """The command that runs the pinned Inspector, or a skip (a failure under CI)."""
    installed = os.environ.get("JAATO_MCP_INSPECTOR", "").strip()
    if installed:
        return [installed]
    npx = shutil.which("npx")
    if npx is not None:
        return [npx, "--yes", PACKAGE]
    message = (
        f"no npx to run the MCP Inspector ({PACKAGE}): install Node.js with npm, or set "
        "JAATO_MCP_INSPECTOR to its mcp-inspector script"
    )
    if UNDER_CI:
        pytest.fail(f"{message}; under CI the TypeScript client must run.", pytrace=False)
    pytest.skip(message)


@dataclass(frozen=True)
class Answer:
    """What the CLI printed and its exit status: 0 for an answer, 5 for a tool's error result
    (printed as the result); anything else is the client's own failure, such as a protocol
    error, said on stderr."""

    status: int
    result: dict[str, Any] | None
    stderr: str

    def refusal(self) -> dict[str, Any]:
        """The refusal's status, code and message, as the client received it."""
        assert self.status == 5, self.stderr
        assert self.result is not None
        assert self.result.get("isError") is True, self.result
        assert "structuredContent" not in self.result, self.result
        (content,) = self.result["content"]
        found = REFUSAL.fullmatch(content["text"])
        assert found is not None, content["text"]
        return {"status": int(found["status"]), "code": found["code"], "message": found["message"]}


def inspect(target: list[str], *arguments: str) -> Answer:
    """Run the CLI once against ``target`` (a server command, or a URL with its options)."""
    env = {**os.environ, "NO_COLOR": "1", "npm_config_update_notifier": "false"}
    completed = subprocess.run(
        [*inspector(), "--cli", *target, *arguments],
        capture_output=True,
        text=True,
        timeout=CALL_SECONDS,
        check=False,
        env=env,
    )
    try:
        result = json.loads(completed.stdout) if completed.stdout.strip() else None
    except json.JSONDecodeError:
        result = None
    return Answer(completed.returncode, result, completed.stderr + completed.stdout)


def call(target: list[str], tool: str, **arguments: Any) -> Answer:
    """``tools/call`` of ``tool``; every argument is sent as JSON."""
    pairs = [f"{key}={json.dumps(value)}" for key, value in arguments.items()]
    return inspect(target, "--method", "tools/call", "--tool-name", tool, "--tool-arg", *pairs)
