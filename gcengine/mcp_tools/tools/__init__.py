"""The tools, one module per concern. Each module's ``register(server, store)`` adds its tools
to a server over a store; ``build_server`` registers every module listed in ``CONCERNS``."""

from __future__ import annotations

from gcengine.mcp_tools.tools import analyze, pins, policy, prune, stash, usage

CONCERNS = (usage, pins, policy, analyze, prune, stash)
