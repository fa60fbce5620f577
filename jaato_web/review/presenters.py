"""The review panel as pages show it: status, verdicts, threads and the forms' state.

The same panel is part of the run page, the removal page and a policy version's review page,
and is what an htmx comment or verdict post swaps back in, so one function builds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jaato_web.review import selectors
from jaato_web.review.models import COMMENT_MAX_CHARS, NOTE_MAX_CHARS, ReviewStatus, Verdict
from jaato_web.review.targets import Target


@dataclass(frozen=True)
class FormState:
    """What a refused form shows again: its error and the text the user had written."""

    error: str = ""
    text: str = ""
    parent: int | None = None  # the thread whose reply form it was; None: a new comment


@dataclass(frozen=True)
class ReviewPanel:
    target: Target
    page_url: str
    comment_url: str
    threads: selectors.ThreadPage
    status: ReviewStatus | None = None  # None for removal items, which take no verdicts
    verdicts: list[Verdict] = field(default_factory=list)
    verdict_url: str = ""
    comment_form: FormState = FormState()
    verdict_form: FormState = FormState()
    comment_max: int = COMMENT_MAX_CHARS
    note_max: int = NOTE_MAX_CHARS

    @property
    def takes_verdicts(self) -> bool:
        return self.target.takes_verdicts

    @property
    def can_be_approved(self) -> bool:
        """A run is reviewed once it has finished; a policy version at any time."""
        run = self.target.run
        return run is None or run.status == "done"

    @property
    def comment_error_elsewhere(self) -> bool:
        """A refused reply to a thread this page does not show: the error goes above the
        new-comment form, so it is not lost."""
        form = self.comment_form
        shown = {thread.comment.pk for thread in self.threads.threads}
        return bool(form.error) and form.parent is not None and form.parent not in shown

    @property
    def previous_page(self) -> int | None:
        page = self.threads.page
        return page.previous_page_number() if page.has_previous() else None

    @property
    def next_page(self) -> int | None:
        page = self.threads.page
        return page.next_page_number() if page.has_next() else None


def review_panel(
    target: Target,
    *,
    page: Any = None,
    comment_form: FormState | None = None,
    verdict_form: FormState | None = None,
) -> ReviewPanel:
    extra: dict[str, Any] = {}
    if target.takes_verdicts:
        history = selectors.verdict_history(target=target)
        extra = {
            "status": history.status,
            "verdicts": history.verdicts,
            "verdict_url": target.verdict_url(),
        }
    return ReviewPanel(
        target=target,
        page_url=target.url(),
        comment_url=target.comment_url(),
        threads=selectors.thread_page(target=target, number=page),
        comment_form=comment_form or FormState(),
        verdict_form=verdict_form or FormState(),
        **extra,
    )
