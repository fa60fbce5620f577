"""Comments and verdicts on runs, removal items and policy versions.

A comment has exactly one target: a run, one item of a run's removal ledger (which also names
the run), or a policy version. Replies carry their parent's target, so a thread is one query
on the target. A verdict judges a whole run or a whole policy version; the object's review
status is the decision of its latest verdict (``pending`` while it has none), worked out in
the query that reads it rather than stored beside it, so it can never disagree with the
verdicts themselves.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from jaato_web.dashboard.models import GCRun, PolicyVersion, Project, Removal

COMMENT_MAX_CHARS = 5000
NOTE_MAX_CHARS = 2000


class Decision(models.TextChoices):
    APPROVE = "approve", "Approve"
    REQUEST_CHANGES = "request_changes", "Request changes"


class ReviewStatus(models.TextChoices):
    """What a run or policy version shows: its latest verdict's decision, or pending."""

    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    CHANGES_REQUESTED = "changes_requested", "Changes requested"


STATUS_OF_DECISION: dict[str, ReviewStatus] = {
    Decision.APPROVE: ReviewStatus.APPROVED,
    Decision.REQUEST_CHANGES: ReviewStatus.CHANGES_REQUESTED,
}


def status_of(decision: str | None) -> ReviewStatus:
    """The review status a latest decision gives (``None``: no verdict yet)."""
    return STATUS_OF_DECISION.get(decision or "", ReviewStatus.PENDING)


class Comment(models.Model):
    """A plain-text comment, or a reply to one, on a run, a removal item or a policy version."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(
        GCRun, null=True, blank=True, on_delete=models.CASCADE, related_name="comments"
    )
    removal = models.ForeignKey(
        Removal, null=True, blank=True, on_delete=models.CASCADE, related_name="comments"
    )
    policy_version = models.ForeignKey(
        PolicyVersion, null=True, blank=True, on_delete=models.CASCADE, related_name="comments"
    )
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="replies"
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    author_name = models.CharField(max_length=150, help_text="Kept when the user is deleted.")
    body = models.TextField(max_length=COMMENT_MAX_CHARS)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # Exactly one target: a run (and maybe one of its removal items), or a version.
            models.CheckConstraint(
                condition=Q(run__isnull=False, policy_version__isnull=True)
                | Q(run__isnull=True, removal__isnull=True, policy_version__isnull=False),
                name="comment_one_target",
            ),
            models.CheckConstraint(condition=~Q(body=""), name="comment_body_not_blank"),
        ]
        indexes = [
            models.Index(fields=["run", "removal", "parent", "created_at"]),
            models.Index(fields=["policy_version", "parent", "created_at"]),
        ]

    def __str__(self) -> str:
        return f"comment {self.pk} by {self.author_name}"


class Verdict(models.Model):
    """A reviewer's decision on a run or a policy version; the latest one sets the status."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(
        GCRun, null=True, blank=True, on_delete=models.CASCADE, related_name="verdicts"
    )
    policy_version = models.ForeignKey(
        PolicyVersion, null=True, blank=True, on_delete=models.CASCADE, related_name="verdicts"
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewer_name = models.CharField(max_length=150, help_text="Kept when the user is deleted.")
    decision = models.CharField(max_length=20, choices=Decision.choices)
    note = models.TextField(max_length=NOTE_MAX_CHARS, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(run__isnull=False, policy_version__isnull=True)
                | Q(run__isnull=True, policy_version__isnull=False),
                name="verdict_one_target",
            ),
            models.CheckConstraint(
                condition=Q(decision__in=Decision.values), name="verdict_known_decision"
            ),
        ]
        # The latest verdict of a target is its highest pk: ids only grow.
        indexes = [
            models.Index(fields=["run", "-id"]),
            models.Index(fields=["policy_version", "-id"]),
        ]

    def __str__(self) -> str:
        return f"{self.reviewer_name}: {self.decision}"

    @property
    def status(self) -> ReviewStatus:
        return status_of(self.decision)
