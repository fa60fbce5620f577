"""A check schemathesis runs beside its own in the production smoke: every error is JSON.

The API promises its refusals as ``{"detail": ...}`` in JSON (docs/api.md), on every route,
matched or not, and for failures of the server too; an HTML error page there is a defect.
"""

from __future__ import annotations

import json
from typing import Any

import schemathesis


@schemathesis.check
def error_is_json(ctx: Any, response: Any, case: Any) -> None:
    if response.status_code < 400:
        return
    content_type = response.headers.get("content-type", [""])
    content_type = content_type[0] if isinstance(content_type, list) else content_type
    if not content_type.startswith("application/json"):
        raise AssertionError(
            f"{response.status_code} answered as {content_type or 'no content type'}, not JSON"
        )
    try:
        json.loads(response.content)
    except ValueError as error:
        raise AssertionError(f"{response.status_code} is not valid JSON: {error}") from None
