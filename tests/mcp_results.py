"""What any MCP client may check of a tool's result, for the tests of both servers' tools.

A client validates a result's structured content against the output schema the tool
published, whether the result is an error or not (the MCP Inspector, on the official
TypeScript SDK, answers a mismatch with a protocol error in place of the result), and an
answer that is no error must carry structured content. A refusal is therefore text only,
ending with its status and code: ``refusal_of`` reads them back.
"""

from __future__ import annotations

import re
from typing import Any

import jsonschema
from mcp.types import CallToolResult, TextContent, Tool

REFUSAL = re.compile(r"(?P<message>.+) \((?P<status>\d{3}) (?P<code>[a-z_]+)\)", re.DOTALL)


def check_against_schema(tool: Tool, result: CallToolResult) -> None:
    """Fail unless ``result`` is one a strict client accepts from ``tool``."""
    assert tool.output_schema is not None, f"{tool.name} publishes no output schema"
    if not result.is_error:
        assert result.structured_content is not None, f"{tool.name} answered no structured content"
    if result.structured_content is not None:
        jsonschema.validate(result.structured_content, tool.output_schema)


def refusal_of(result: CallToolResult) -> dict[str, Any]:
    """A refusal's status, code and message, read from its text; it has no structured content,
    which no output schema would admit."""
    assert result.is_error is True, result.structured_content
    assert result.structured_content is None, result.structured_content
    assert len(result.content) == 1
    assert isinstance(result.content[0], TextContent)
    found = REFUSAL.fullmatch(result.content[0].text)
    assert found is not None, result.content[0].text
    return {
        "status": int(found["status"]),
        "code": found["code"],
        "message": found["message"],
    }
