"""What the API refuses before any endpoint reads the request: bodies over the size limit, and
JSON no store could keep; and the API's refusals Django itself answers, in JSON.

django-ninja turns every failure to parse a body into one "Cannot parse request body", so the
checks that deserve their own answer run here first, with the same JSON error shape as the
rest of the API:

* a body over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` is 413, said in bytes (Django would answer a
  bare 400 once something read it);
* a lone surrogate (``"\\ud800"``) in a JSON string cannot be encoded as UTF-8, so PostgreSQL
  and every strict reader refuse it; ``NaN``, ``Infinity`` and numbers too large for a double
  are not JSON at all. Each is 400, naming the JSON path where it is.

Uploaded files are multipart and limited by their own rules (``JAATO_UPLOAD_MAX_BYTES``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

import gcengine

API_PREFIX = "/api/"
JsonPath = tuple[str | int, ...]


class BodyProblem(Exception):
    """A JSON body that cannot be stored; ``path`` points at the value."""

    def __init__(self, reason: str, path: JsonPath = ()) -> None:
        self.reason = reason
        self.json_path = gcengine.format_json_path(path)
        super().__init__(f"{self.json_path}: {reason}" if path else reason)


def _refuse_constant(name: str) -> Any:
    raise BodyProblem(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise BodyProblem(f"{text} is too large to store as a number")
    return value


def body_problem(body: bytes) -> BodyProblem | None:
    """What keeps a JSON body from being stored, or None (malformed JSON is ninja's to say)."""
    try:
        data = json.loads(body, parse_constant=_refuse_constant, parse_float=_finite)
    except BodyProblem as problem:
        return problem
    except ValueError:  # malformed JSON, or not UTF-8: ninja answers 400 for it
        return None
    path = gcengine.lone_surrogate_path(data)
    if path is None:
        return None
    return BodyProblem(
        "the text holds a lone surrogate (half of a UTF-16 pair), which no store can keep",
        path,
    )


class ApiBodyCheckMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(API_PREFIX) and request.method in ("POST", "PUT", "PATCH"):
            refused = self._refusal(request)
            if refused is not None:
                return refused
        return self.get_response(request)

    def _refusal(self, request: HttpRequest) -> HttpResponse | None:
        if request.content_type == "multipart/form-data":
            return None
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        length = int(request.META.get("CONTENT_LENGTH") or 0)
        if limit is not None and length > limit:
            return JsonResponse(
                {
                    "detail": f"the request body is {length:,} bytes; the limit is {limit:,} bytes",
                    "limit_bytes": limit,
                },
                status=413,
            )
        if request.content_type != "application/json":
            return None
        problem = body_problem(request.body)
        if problem is None:
            return None
        return JsonResponse(
            {"detail": str(problem), "reason": problem.reason, "json_path": problem.json_path},
            status=400,
        )


class ApiErrorsInJsonMiddleware:
    """Refusals of API requests that Django or django-ninja answer before (or instead of) an
    endpoint, in the JSON shape of every other refusal: 405 for a method the route does not
    take (with its ``Allow`` header), 400 for a host ``DJANGO_ALLOWED_HOSTS`` does not name, 403
    from a CSRF check. Outermost but for security, so each of them passes through here."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            request.path.startswith(API_PREFIX)
            and response.status_code >= 400
            and not response.get("Content-Type", "").startswith("application/json")
        ):
            detail = f"{response.status_code} {response.reason_phrase}"
            if response.status_code == 405:
                detail += f": {request.method} is not one of {response.get('Allow', 'none')}"
            answer = JsonResponse({"detail": detail}, status=response.status_code)
            if response.has_header("Allow"):
                answer["Allow"] = response["Allow"]
            return answer
        return response
