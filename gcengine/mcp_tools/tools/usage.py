"""``context_analyze_usage``: how full the context is, and what the policy makes of it."""

from __future__ import annotations

from typing import Annotated

from mcp.server import MCPServer
from mcp.types import CallToolResult, ToolAnnotations

from gcengine.mcp_tools.inputs import (
    ContextLimit,
    Messages,
    PolicyId,
    SessionId,
    SessionRef,
    inline_session,
    sized,
)
from gcengine.mcp_tools.results import answer
from gcengine.mcp_tools.store import ToolStore
from gcengine.usage import UsageReport, usage_report

ANALYZE_USAGE = """\
How full a session's context window is, read against its GC policy. Read-only: nothing is \
changed or stored.

Returns the tokens used and left, the share of each source (system, plugin, enrichment, \
conversation) and of each tier (locked: never collected; preservable: collected only under \
pressure; eligible: what a collection may take), the policy's threshold, target and pressure, \
and a health level: ok (below target), elevated (above target, below threshold), collect (GC \
would start now), pressure (preservable content is at risk), over_limit (the next request does \
not fit). Warnings say what each level means in tokens.

Call it before a long step, or when a tool result was large. Give `session_id` for a stored \
session, or your own `messages` (with `context_limit` if the model is not named) to ask about \
the conversation you are in."""


def register(server: MCPServer, store: ToolStore) -> None:
    def context_analyze_usage(
        session_id: SessionId = None,
        messages: Messages = None,
        context_limit: ContextLimit = None,
        policy_id: PolicyId = None,
    ) -> Annotated[CallToolResult, UsageReport]:
        def work() -> tuple[UsageReport, str]:
            ref = SessionRef(session_id, messages, context_limit)
            if ref.messages is not None:
                session = inline_session(ref.messages)
            else:
                assert ref.session_id is not None  # a SessionRef holds one or the other
                session = store.session(ref.session_id)
            policy = store.policy(ref.session_id, policy_id)
            report = usage_report(sized(session, context_limit), policy.config)
            return report, f"{report.summary()} Policy: {policy.label}."

        return answer(store, work)

    server.add_tool(
        context_analyze_usage,
        title="Analyze context usage",
        description=ANALYZE_USAGE,
        annotations=ToolAnnotations(
            read_only_hint=True, idempotent_hint=True, open_world_hint=False
        ),
    )
