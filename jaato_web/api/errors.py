"""Answers for requests no endpoint handled: JSON under /api/, the usual pages elsewhere.

Django calls these (``handler400``, ``handler403``, ``handler404`` and ``handler500`` in the
root URLs) for a request it cannot read, a refusal a page raised, an address no route matches
and a failure nothing caught; a script talking to the API should never have to read an HTML
error page, and a person refused a page is told which page, their role, the role it needs and
the way back.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse, multipartparser
from django.http.multipartparser import MultiPartParserError
from django.shortcuts import render
from django.urls import reverse
from django.views.defaults import bad_request as page_bad_request
from django.views.defaults import page_not_found
from django.views.defaults import server_error as page_server_error

from jaato_web.api.middleware import API_PREFIX
from jaato_web.dashboard.models import Project
from jaato_web.http import local_url
from jaato_web.teams.access import RoleRefused
from jaato_web.teams.permissions import ACTION_LABELS


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": f"Not found: no API route at {request.path}."}, status=404)
    return page_not_found(request, exception)


# Django's limit on each multipart part's headers, which its type stubs do not declare.
HEADERS_MAX_BYTES: int = multipartparser.MAX_TOTAL_HEADER_SIZE  # type: ignore[attr-defined]


def unreadable_upload_reason(error: MultiPartParserError) -> str:
    """What to tell the sender of an upload Django could not read.

    The one a person meets is a long file name: Django reads at most ``HEADERS_MAX_BYTES``
    bytes of each form part's headers, and the file name is among them, so a name of about
    1,000 characters stops the whole upload before any view sees it.
    """
    if "header size" in str(error):
        return (
            "the upload could not be read: a file name is too long. Each file's headers, its "
            f"file name included, may hold at most {HEADERS_MAX_BYTES:,} bytes; rename the "
            "file to under 900 characters (the first 255 are kept as its name)"
        )
    return f"the upload could not be read: {error}"


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """An upload Django could not read says why; any other 400 (a host not allowed, say)
    keeps Django's answer, which tells a stranger nothing."""
    if not isinstance(exception, MultiPartParserError):
        return page_bad_request(request, exception)
    reason = unreadable_upload_reason(exception)
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": reason, "reason": reason}, status=400)
    return render(request, "uploads/unreadable.html", {"reason": reason}, status=400)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": str(exception) or "Not allowed."}, status=403)
    referer = request.headers.get("referer", "")
    match = request.resolver_match
    context: dict[str, object] = {
        "page": (match.url_name or "").replace("_", " ").capitalize() if match else "",
        "path": request.path,
        "reason": str(exception) or "You may not open this page.",
        "back": referer if referer and local_url(request, referer) else reverse("session_list"),
    }
    if isinstance(exception, RoleRefused):
        context |= {
            "role": exception.role.label.lower(),
            "needed": exception.needed.label.lower(),
            "action": ACTION_LABELS[exception.action],
            "project": Project.objects.filter(pk=exception.project_id).first(),
        }
    return render(request, "403.html", context, status=403)


def server_error(request: HttpRequest) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse(
            {"detail": "The server failed to answer; the error is in its log."}, status=500
        )
    return page_server_error(request)
