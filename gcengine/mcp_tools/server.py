"""One MCP server over one store, with every tool of every concern registered."""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer

from gcengine.mcp_tools.store import ToolStore
from gcengine.mcp_tools.tools import CONCERNS

INSTRUCTIONS = """\
Tools for context garbage collection (GC): see how full a session's context window is, keep \
what matters from being collected, tune the policy that decides what goes, see what a \
collection would take and why (context_gc_analyze), prune with a stash (context_gc_prune), and \
find and get back what was stashed (context_stash_search, context_stash_retrieve). These tools \
act on sessions this server stores (or on messages you pass, for an answer with nothing \
stored); they cannot remove messages from your own context. Start with context_analyze_usage."""


def build_server(store: ToolStore, name: str = "jaato-gc", **options: Any) -> MCPServer:
    """A server with every tool, acting on ``store``; ``options`` go to ``MCPServer``."""
    server: MCPServer = MCPServer(name, instructions=INSTRUCTIONS, **options)
    for concern in CONCERNS:
        concern.register(server, store)
    return server
