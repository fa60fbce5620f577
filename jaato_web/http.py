"""What every page view shares: the typed request and the query-string and redirect helpers.

Page views (``jaato_web.pages``) follow the same four steps: find the project, read through a
selector scoped to it (a 404 for anything outside), shape with a presenter, render the page or,
for an htmx request, one of the page's ``{% partialdef %}`` fragments. Writes go through a
service. Every view declares the action it performs with ``teams.access.requires``; objects
are then found through ``request.access``, which looks only among the user's projects and
checks their role there.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from jaato_web.teams.access import Access

# Ids are 64-bit database keys; a longer number names no object and must not reach a query.
MAX_ID = 2**63 - 1


class PageRequest(HttpRequest):
    """A page request as the views see it: ``HtmxMiddleware`` adds ``htmx``, ``requires``
    adds ``access``, and sign-in is required for every page, so ``user`` is a real user."""

    htmx: HtmxDetails
    access: Access
    user: User


def redirect_after_post(request: PageRequest, url: str) -> HttpResponse:
    """A redirect that works for a plain form post and an htmx one.

    htmx would follow a 302 itself and swap the whole next page into the form's target, so an
    htmx request is told to navigate instead.
    """
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)


def htmx_target(request: PageRequest) -> str | None:
    """The id of the element an htmx request will swap, or None for a normal request."""
    return request.htmx.target if request.htmx else None


def query_id(value: object) -> int | None:
    """An object id from the query string or a form (or one already a number), or None when
    absent or not an id.

    Only ASCII digits count: ``str.isdigit`` also accepts characters such as "²" that
    ``int`` refuses, and a number beyond 64 bits would overflow the database's integers.
    """
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_ID else None


def local_url(request: HttpRequest, url: str) -> bool:
    """Whether ``url`` (a form's ``next``, a referer) is on this site, to send the user back
    to; a control character (a NUL in a forged form) would make no header, so it is not."""
    return url.isprintable() and url_has_allowed_host_and_scheme(
        url, {request.get_host()}, require_https=request.is_secure()
    )


def query_int(value: object, default: int = 0) -> int:
    """A non-negative whole number from the query string; anything else is the default."""
    number = query_id(value)
    return default if number is None else number


Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def client_address(request: HttpRequest) -> str | None:
    """The address a request came from, as the sign-in throttle counts it.

    The connection's own address, unless that is one of ``JAATO_TRUSTED_PROXIES``: then the
    nearest address in ``X-Forwarded-For`` that is not a trusted proxy. Each proxy appends the
    address it received the request from, so whatever lies left of the first untrusted entry
    was written by the client and is not believed.
    """
    peer = request.META.get("REMOTE_ADDR") or None
    proxies = [ipaddress.ip_network(net, strict=False) for net in settings.JAATO_TRUSTED_PROXIES]

    def trusted(address: Address) -> bool:
        return any(address in network for network in proxies)

    found = _ip(peer or "")
    if found is None or not trusted(found):
        return peer
    for hop in reversed(request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")):
        forwarded = _ip(hop.strip())
        if forwarded is None:
            break
        found = forwarded
        if not trusted(found):
            break
    return str(found)


def _ip(text: str) -> Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None
