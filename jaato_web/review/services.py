"""Writes of the review: comments and verdicts, each audited in its own transaction.

Both pages and the API call these, so the rules (a non-empty body within the limit, a reply in
its parent's thread, a verdict only on a finished run) hold whichever way a change arrives.
Permission is the caller's business: objects reach a service through ``Access``, which has
already checked the role.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import transaction

from jaato_web.dashboard.audit import actor_name, audit_record
from jaato_web.dashboard.models import AuditAction, JobStatus
from jaato_web.errors import InputError, without_nul
from jaato_web.review.models import (
    COMMENT_MAX_CHARS,
    NOTE_MAX_CHARS,
    Comment,
    Decision,
    Verdict,
)
from jaato_web.review.targets import Target

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class ReviewError(InputError):
    """A comment or verdict that cannot be stored; ``key`` names the field at fault."""


def _plain_text(value: str, *, key: str, limit: int, required: bool) -> str:
    """Trimmed text with ``\\n`` line ends, within ``limit`` characters, without NUL."""
    text = without_nul(value, key, ReviewError).replace("\r\n", "\n").replace("\r", "\n").strip()
    if required and not text:
        raise ReviewError("Write something first: the comment is empty.", key)
    if len(text) > limit:
        raise ReviewError(f"Too long: {len(text):,} characters, at most {limit:,}.", key)
    return text


@transaction.atomic
def comment_add(
    *,
    target: Target,
    author: User | None,
    body: str,
    parent_id: int | None = None,
) -> Comment:
    """A new comment on ``target``, or a reply to the comment ``parent_id`` in its thread.

    Threads are one level deep: a reply to a reply joins the same thread, under the comment
    that started it, so every thread reads top to bottom.
    """
    text = _plain_text(body, key="body", limit=COMMENT_MAX_CHARS, required=True)
    parent = None
    if parent_id is not None:
        # Looked up within the target: a comment of another thread (or project) is not found.
        parent = Comment.objects.filter(pk=parent_id, **target.fields()).first()
        if parent is None:
            raise ReviewError("The comment you reply to is not in this thread.", "parent")
        if parent.parent_id is not None:
            parent = Comment.objects.get(pk=parent.parent_id)
    comment = Comment.objects.create(
        project=target.project,
        parent=parent,
        author=author,
        author_name=actor_name(author),
        body=text,
        **target.fields(),
    )
    audit_record(
        project=target.project,
        actor=author,
        action=AuditAction.COMMENT,
        target=target.label(),
        target_url=f"{target.url()}#comment-{comment.pk}",
        detail={
            "comment": comment.pk,
            "on": target.kind,
            "parent": parent.pk if parent is not None else None,
        },
    )
    return comment


@transaction.atomic
def verdict_give(
    *,
    target: Target,
    reviewer: User | None,
    decision: str,
    note: str = "",
) -> Verdict:
    """A reviewer's decision on a run or policy version; it becomes the object's status."""
    if not target.takes_verdicts:
        raise ReviewError("Verdicts are given on a whole run, not on one removal item.", "target")
    if decision not in Decision.values:
        choices = " or ".join(Decision.values)
        raise ReviewError(f"Decide {choices}, not {decision!r}.", "decision")
    if target.run is not None and target.run.status != JobStatus.DONE:
        raise ReviewError("Only a finished run can be reviewed; this one has not finished.", "run")
    text = _plain_text(note, key="note", limit=NOTE_MAX_CHARS, required=False)
    verdict = Verdict.objects.create(
        project=target.project,
        reviewer=reviewer,
        reviewer_name=actor_name(reviewer),
        decision=decision,
        note=text,
        **target.verdict_fields(),
    )
    audit_record(
        project=target.project,
        actor=reviewer,
        action=AuditAction.VERDICT,
        target=target.label(),
        target_url=target.url(),
        detail={"verdict": verdict.pk, "on": target.kind, "decision": decision},
    )
    return verdict
