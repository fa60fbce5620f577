"""What any MCP client may check of a tool's result, for the tests of both servers' tools.

A client validates a result's structured content against the output schema the tool
published, whether the result is an error or not (the MCP Inspector, on the official
TypeScript SDK, answers a mismatch with a protocol error in place of the result), and an
answer that is no error must carry structured content. A refusal is therefore text only,
ending with its status and code: ``refusal_of`` reads them back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
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


@dataclass(frozen=True)
class ToolSamples:
    """What a server's tools are called with to answer and refuse once each: the two servers
    name sessions differently and keep different things."""

    session: str | int
    missing_session: str | int
    unpin_turn: int
    protected_segment: str
    other_stash: dict[str, Any]
    configure: dict[str, Any]


async def call_every_tool(client: Any, samples: ToolSamples) -> CheckedCalls:
    """Every tool of ``client``'s server, answering and refusing (confirm_needed, protected,
    not_found), with the tool each result came from."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    checked: list[tuple[Tool, CallToolResult]] = []
    session = samples.session

    async def called(name: str, arguments: dict[str, Any]) -> CallToolResult:
        result: CallToolResult = await client.call_tool(name, arguments)
        checked.append((tools[name], result))
        return result

    await called("context_analyze_usage", {"session_id": session})
    await called("context_analyze_usage", {"session_id": samples.missing_session})
    await called("context_gc_pin", {"session_id": session, "turn_indices": [0]})
    await called("context_gc_unpin", {"session_id": session, "turn_indices": [samples.unpin_turn]})
    await called("context_gc_pin", {"session_id": session, "turn_indices": [99]})
    await called("context_gc_analyze", {"session_id": session, "limit": 2})
    await called("context_gc_analyze", {"session_id": session, "segment_ids": ["x"]})
    await called("context_gc_prune", {"session_id": session, "action": "auto"})
    protected = {"session_id": session, "segment_ids": [samples.protected_segment]}
    await called("context_gc_prune", protected)
    await called("context_gc_prune", {"session_id": session, "segment_ids": ["turn_99"]})
    pruned = (await called("context_gc_prune", {"session_id": session})).structured_content
    assert pruned is not None
    first = pruned["ledger"][0]["segment_id"]
    await called("context_stash_search", {"run_id": pruned["run_id"]})
    await called("context_stash_search", samples.other_stash)
    for into in ("content", "session"):
        await called(
            "context_stash_retrieve",
            {"run_id": pruned["run_id"], "segment_ids": [first], "into": into},
        )
    await called("context_stash_retrieve", {"run_id": pruned["run_id"], "segment_ids": ["gone"]})
    await called("context_gc_configure", {**samples.configure, "threshold_percent": 2})
    await called("context_gc_configure", {**samples.configure, "target_percent": 95})
    return CheckedCalls(set(tools), checked)


@dataclass(frozen=True)
class CheckedCalls:
    """The tools a server listed, and each call made with the tool it went to."""

    listed: set[str]
    calls: list[tuple[Tool, CallToolResult]]

    def check(self) -> None:
        """Every tool called, every result one a strict client accepts, and each kind of
        refusal among them."""
        assert {tool.name for tool, _ in self.calls} == self.listed
        for tool, result in self.calls:
            check_against_schema(tool, result)
        refusals = [result for _, result in self.calls if result.is_error]
        assert {refusal_of(result)["code"] for result in refusals} >= {
            "confirm_needed",
            "protected",
            "not_found",
        }
