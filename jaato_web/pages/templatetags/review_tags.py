"""Template filters of the review: a status value in words."""

from __future__ import annotations

from django import template

from jaato_web.review.models import ReviewStatus

register = template.Library()


@register.filter
def status_label(value: str) -> str:
    """``changes_requested`` → ``Changes requested``; an unknown value is shown as it is."""
    try:
        return str(ReviewStatus(value).label)
    except ValueError:
        return value
