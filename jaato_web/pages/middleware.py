"""Sign-in for every page, and the page a user with no project lands on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect

from jaato_web.teams.access import NoProject


class PagesLoginRequiredMiddleware(LoginRequiredMiddleware):
    """Django's sign-in requirement for pages; the API answers 401 itself (``ApiAccess``),
    since a script following a redirect to an HTML form helps nobody."""

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., Any],
        view_args: tuple[Any, ...],
        view_kwargs: dict[str, Any],
    ) -> HttpResponseBase | None:
        match = request.resolver_match
        if match is not None and match.namespace == "api":
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


class NoProjectMiddleware:
    """A signed-in user in no project yet is sent to the project list to start one."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, NoProject):
            return None
        messages.info(
            request,
            "You are not a member of any project yet: start one, or ask an admin to add you.",
        )
        return redirect("project_list")
