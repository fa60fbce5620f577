"""The ASGI app: the pages and the API (Django), and the agent tools at ``/mcp`` (MCP).

Django's own ASGI handler refuses the lifespan protocol, which the MCP endpoint needs to start
its task group, so a small Starlette app is the outer layer: it runs the lifespan and routes
``/mcp`` to the MCP endpoint and everything else to Django. ``./dev serve`` runs it under
uvicorn; any ASGI server can (``jaato_web.asgi:application``).
"""

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import cast

from django.core.asgi import get_asgi_application
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jaato_web.settings")

django_application = get_asgi_application()

# Imported once Django is set up: the endpoint reaches the models.
from jaato_web.mcp.http import MCP_PATH, mcp_endpoint, mcp_server  # noqa: E402


def build_application() -> Starlette:
    """A new app with its own MCP server (a server's lifespan runs once, so tests that start
    and stop the app each build one)."""
    server = mcp_server()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with server.session_manager.run():
            yield

    # Static files are Django's too (WhiteNoise's middleware, see settings).
    # (Django types an ASGI scope as a dict, Starlette as a mapping: the same protocol.)
    pages = cast(ASGIApp, django_application)
    app = Starlette(routes=[Route(MCP_PATH, mcp_endpoint(server))], lifespan=lifespan)
    # Everything else is Django's, whatever the path holds: a mount's pattern would not match
    # a path with a line break in it, and Starlette would answer that itself, in plain text.
    app.router.default = pages
    return app


application = build_application()
