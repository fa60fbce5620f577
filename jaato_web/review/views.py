"""The review queue: runs and policy versions that wait for a verdict."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from jaato_web.teams.access import requires
from jaato_web.teams.permissions import Action


@require_GET
@requires(Action.VIEW)
def queue(request: HttpRequest) -> HttpResponse:
    return render(request, "review/queue.html", {})
