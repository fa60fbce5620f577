"""The engine's tools for agents, served over MCP (the Model Context Protocol).

``build_server(store)`` makes an MCP server whose tools act on a ``ToolStore``: ``FileStore``
for the local server ``gcengine mcp`` (session files in a folder, no dashboard), or the
dashboard's own store behind its API tokens. The tools are written once, in
``gcengine.mcp_tools.tools``, one module per concern.

Needs the ``mcp`` package (the official SDK), which the engine itself never imports: only
this package does, so ``import gcengine`` stays free of it.
"""

from gcengine.mcp_tools.files import FileStore
from gcengine.mcp_tools.inputs import (
    PolicyChanges,
    SessionRef,
    SettingChange,
    changed_config,
    setting_changes,
)
from gcengine.mcp_tools.results import answer, answered, refusal_of, refused
from gcengine.mcp_tools.server import INSTRUCTIONS, build_server
from gcengine.mcp_tools.stashes import (
    PREVIEW_CHARS,
    LedgerItem,
    Pruned,
    PruneRequest,
    Retrieved,
    RetrievedSegment,
    StashFound,
    StashHit,
    StashQuery,
    StashRef,
    percent,
)
from gcengine.mcp_tools.store import (
    ConfiguredPolicy,
    PinRequest,
    PinState,
    PolicyInUse,
    ToolStore,
)

__all__ = [
    "INSTRUCTIONS",
    "PREVIEW_CHARS",
    "ConfiguredPolicy",
    "FileStore",
    "LedgerItem",
    "PinRequest",
    "PinState",
    "PolicyChanges",
    "PolicyInUse",
    "PruneRequest",
    "Pruned",
    "Retrieved",
    "RetrievedSegment",
    "SessionRef",
    "SettingChange",
    "StashFound",
    "StashHit",
    "StashQuery",
    "StashRef",
    "ToolStore",
    "answer",
    "answered",
    "build_server",
    "changed_config",
    "percent",
    "refusal_of",
    "refused",
    "setting_changes",
]
