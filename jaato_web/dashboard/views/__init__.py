"""Views of the dashboard pages, one module per page family.

Every view follows the same four steps: find the project, read through a selector scoped to
it (a 404 for anything outside), shape with a presenter, render the page or, for an htmx
request, one of the page's ``{% partialdef %}`` fragments. Writes go through ``services``.

Every view declares the action it performs with ``requires``; objects are then found through
``request.access``, which looks only among the user's projects and checks their role there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from jaato_web.teams.access import Access

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class HtmxHttpRequest(HttpRequest):
    """What ``django_htmx.middleware.HtmxMiddleware`` adds to every request."""

    htmx: HtmxDetails
    access: Access
    user: User


def redirect_after_post(request: HtmxHttpRequest, url: str) -> HttpResponse:
    """A redirect that works for a plain form post and an htmx one.

    htmx would follow a 302 itself and swap the whole next page into the form's target, so an
    htmx request is told to navigate instead.
    """
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)


def htmx_target(request: HtmxHttpRequest) -> str | None:
    """The id of the element an htmx request will swap, or None for a normal request."""
    return request.htmx.target if request.htmx else None


def query_id(value: str | None) -> int | None:
    """An object id from the query string, or None when absent or not a number."""
    return int(value) if value is not None and value.isdigit() else None


def query_int(value: str | None, default: int = 0) -> int:
    """A non-negative whole number from the query string; anything else is the default."""
    if value is None or not value.isdigit():
        return default
    return int(value)
