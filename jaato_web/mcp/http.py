"""The ``/mcp`` endpoint as an ASGI app: Streamable HTTP, personal API tokens, host checks.

Stateless and answered in plain JSON: every request stands alone (no session to keep between
workers) and nothing a tool does needs a stream back to the client. Requests pass three gates
before a tool sees them: the Host and Origin headers must name a host of
``DJANGO_ALLOWED_HOSTS`` (so a web page cannot reach a local dashboard through DNS rebinding),
then a bearer token must be a live personal API token (401 otherwise, with the
``WWW-Authenticate`` header MCP clients look for).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from gcengine.mcp_tools import build_server
from jaato_web.mcp.store import DashboardStore
from jaato_web.teams.access import token_user

MCP_PATH = "/mcp"
# What Django itself accepts when DEBUG is on and ALLOWED_HOSTS is empty.
DEBUG_HOSTS = [".localhost", "127.0.0.1", "[::1]"]


def host_allowed(host: str) -> bool:
    """Whether a Host header (``name[:port]``) names a host Django would serve."""
    allowed = settings.ALLOWED_HOSTS or (DEBUG_HOSTS if settings.DEBUG else [])
    domain, _ = split_domain_port(host)
    return bool(domain) and validate_host(domain, allowed)


def origin_allowed(origin: str) -> bool:
    """An ``Origin`` on an allowed host, or one of ``DJANGO_CSRF_TRUSTED_ORIGINS`` (the origins
    the pages trust behind a proxy, ``https://*.example.com`` covering subdomains as there)."""
    try:
        parts = urlsplit(origin)
    except ValueError:  # such as an unclosed "[" of an IPv6 address
        return False
    if host_allowed(parts.netloc) or origin in settings.CSRF_TRUSTED_ORIGINS:
        return True
    wildcards = [urlsplit(trusted) for trusted in settings.CSRF_TRUSTED_ORIGINS if "*" in trusted]
    return any(
        parts.scheme == trusted.scheme and is_same_domain(parts.netloc, trusted.netloc[1:])
        for trusted in wildcards
    )


class HostCheck:
    """421 for a Host, 403 for an Origin that ``DJANGO_ALLOWED_HOSTS`` does not allow."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            origin = headers.get("origin")
            refusal = None
            if not host_allowed(headers.get("host", "")):
                refusal = PlainTextResponse("Invalid Host header", status_code=421)
            elif origin is not None and not origin_allowed(origin):
                refusal = PlainTextResponse("Invalid Origin header", status_code=403)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _token_owner(raw: str) -> AccessToken | None:
    close_old_connections()
    try:
        found = token_user(raw)
    finally:
        close_old_connections()
    if found is None:
        return None
    user, token = found
    return AccessToken(token=raw, client_id=token.prefix, scopes=[], subject=user.get_username())


class ApiTokenVerifier:
    """The personal API tokens of the dashboard (``jgc_...``), as the SDK's bearer check asks."""

    async def verify_token(self, token: str) -> AccessToken | None:
        return await sync_to_async(_token_owner)(token)


def mcp_server() -> MCPServer:
    return build_server(DashboardStore(), name="jaato-gc")


def mcp_endpoint(server: MCPServer) -> ASGIApp:
    """``server``'s Streamable HTTP app behind the host check and the token check. Its
    session manager must run in the lifespan of the app that mounts this."""
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        # Hosts are checked by HostCheck, with Django's own rules for ALLOWED_HOSTS.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    authenticated = AuthenticationMiddleware(
        AuthContextMiddleware(RequireAuthMiddleware(app, required_scopes=[])),
        backend=BearerAuthBackend(ApiTokenVerifier()),
    )
    return HostCheck(authenticated)
