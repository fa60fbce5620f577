"""Answers for requests no endpoint handled: JSON under /api/, the usual pages elsewhere.

Django calls these (``handler404`` and ``handler500`` in the root URLs) for an address no route
matches and for a failure nothing caught; a script talking to the API should never have to
read an HTML error page.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import page_not_found
from django.views.defaults import server_error as page_server_error

from jaato_web.api.middleware import API_PREFIX


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": f"Not found: no API route at {request.path}."}, status=404)
    return page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse(
            {"detail": "The server failed to answer; the error is in its log."}, status=500
        )
    return page_server_error(request)
