"""Number formatting for the dashboard's templates: formatting only, no queries.

``floatformat`` localises through ``Decimal`` on every call, which is a large share of a page
that shows a few hundred figures; these filters write the same English figures directly.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django import template
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from jaato_web.dashboard.presenters import counted, dollars, policy_name, turn_number_of
from jaato_web.dashboard.presenters import share as share_of
from jaato_web.dashboard.presenters import turn_numbers as numbers_of_turns

register = template.Library()

MISSING = "–"


@register.filter
def tokens(value: Any) -> str:
    """A whole number with thousands separators: ``168761`` -> ``168,761``."""
    if value is None or value == "":
        return MISSING
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def count(value: Any, noun: str) -> str:
    """A count with separators and the noun it agrees with: ``{{ n|count:"turn" }}`` ->
    ``1 turn``, ``1,234 turns``; ``"summary,summaries"`` gives an irregular plural."""
    if value is None or value == "":
        return MISSING
    singular, _, plural = noun.partition(",")
    try:
        return counted(int(value), singular, plural)
    except (TypeError, ValueError):
        return str(value)


@register.filter
def turn_number(index: Any) -> str:
    """A stable turn index as JAATO's logs number the turn (from 1): ``0`` -> ``1``."""
    if index is None or index == "":
        return MISSING
    try:
        return str(turn_number_of(int(index)))
    except (TypeError, ValueError):
        return str(index)


@register.filter
def turn_numbers(indices: Any) -> list[int]:
    """Stable turn indices as the numbers the session page shows: ``[0, 4]`` -> ``[1, 5]``."""
    return numbers_of_turns(indices)


@register.filter
def as_datetime(value: Any) -> datetime | None:
    """A time stamp a session file holds as ISO 8601 text (``2026-03-01T10:16:00Z``) as a
    datetime, so ``date`` writes it as the page writes every time; None when it is not one.
    A stamp without a zone is read in the server's."""
    if isinstance(value, datetime):
        return value
    try:
        moment = parse_datetime(str(value or "").strip())
    except ValueError:
        return None
    if moment is not None and timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return moment


@register.filter
def pct(value: Any, places: int = 1) -> str:
    """A percentage figure with ``places`` decimals (without the sign): ``84.38`` -> ``84.4``."""
    if value is None or value == "":
        return MISSING
    try:
        return f"{float(value):.{int(places)}f}"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def policy_of(item: Any) -> str:
    """The policy a run or a replay used, by name: ``{{ run|policy_of }}`` -> ``Budget 80/60
    v3``, the name it had when deleted since, or a pasted gc.json."""
    return policy_name(item.policy_version, item.policy_label)


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    """``mapping[key]``, or None: a dict's entry by a key the template holds in a variable."""
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def share(value: Any) -> str:
    """A recall or rate from 0 to 1 as a percentage with one decimal: ``0.949`` ->
    ``94.9 %``; ``n/a`` when there is none (nothing to count)."""
    if value is None or value == "":
        return share_of(None)
    try:
        return share_of(float(value))
    except (TypeError, ValueError):
        return str(value)


@register.filter
def usd(value: Any) -> str:
    """Dollars with cents, or four decimals under a dollar: ``$21.22``, ``$0.0063``."""
    if value is None or value == "":
        return MISSING
    try:
        return dollars(float(value))
    except (TypeError, ValueError):
        return str(value)


@register.filter
def as_json(value: Any) -> str:
    """A setting's value as it is written in JSON: ``true``, ``{"type": "input_tokens"}``."""
    return json.dumps(value, ensure_ascii=False)
