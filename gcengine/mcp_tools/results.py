"""How a tool answers: structured JSON with a short text for the model, or a refusal.

Every tool body runs through ``answer``: what the agent did wrong or may not do comes back as
an error result with a message and a status (never a crash, never a traceback), so the model
can read it and try again. Anything else is a bug and is left to the SDK, which reports it
as a failed call without its details.

A refusal is text only, ending with its status and code (``... (409 protected)``): clients
check any structured content against the tool's published output schema, error or not (the
MCP Inspector does), and an answer's schema has no room for a refusal.
"""

from __future__ import annotations

from collections.abc import Callable

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from gcengine.errors import (
    ConfigError,
    GCEngineError,
    SessionFormatError,
    ToolRefusal,
)
from gcengine.mcp_tools.store import ToolStore
from gcengine.strategies.reachability import PruneRefused


def answered(result: BaseModel, summary: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=summary)],
        structured_content=result.model_dump(mode="json"),
    )


def refusal_of(error: GCEngineError) -> ToolRefusal:
    """An engine error as the agent reads it: which input, where, and why."""
    if isinstance(error, ToolRefusal):
        return error
    if isinstance(error, SessionFormatError):
        return ToolRefusal(f"the session cannot be read: {error}", code="bad_session")
    if isinstance(error, ConfigError):
        return ToolRefusal(f"the policy is not valid: {error}", code="bad_policy")
    if isinstance(error, PruneRefused):
        if error.refused:
            return ToolRefusal(str(error), status=409, code="protected")
        return ToolRefusal(str(error), status=404, code="not_found")
    return ToolRefusal(str(error))


def refused(error: ToolRefusal) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=f"{error} ({error.status} {error.code})")],
        is_error=True,
    )


def answer[M: BaseModel](store: ToolStore, work: Callable[[], tuple[M, str]]) -> CallToolResult:
    """Run ``work`` in the store's call context: its result and summary, or its refusal."""
    try:
        with store.calling():
            result, summary = work()
    except GCEngineError as error:
        return refused(refusal_of(error))
    return answered(result, summary)
