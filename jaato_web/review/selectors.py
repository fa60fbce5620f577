"""Reads of the review: threads, verdicts, statuses and the queue, each in a fixed number of
queries whatever the number of comments, verdicts, runs or versions.

The status of a run or policy version is never stored: it is the decision of its latest
verdict (the highest id), read with a correlated subquery wherever a list shows statuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page
from django.db.models import (
    Case,
    CharField,
    Count,
    Exists,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
    Window,
)
from django.db.models.functions import Coalesce, RowNumber
from django.db.models.lookups import Exact

from jaato_web.dashboard.models import GCRun, JobStatus, PolicyVersion, Project, Removal
from jaato_web.dashboard.selectors import page_of
from jaato_web.review.models import Comment, Decision, ReviewStatus, Verdict, status_of
from jaato_web.review.targets import Target

# Threads (top-level comments) per page of a target's discussion, oldest first.
THREADS_PER_PAGE = 20
# Replies shown under a thread; a longer one says how many more there are (the API has all).
REPLIES_SHOWN = 50
# Verdicts listed on a page, newest first; the status is always the newest one's.
VERDICTS_SHOWN = 20
QUEUE_PER_PAGE = 25
COMMENTS_PER_API_PAGE = 100


# --- Threads ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Thread:
    comment: Comment
    replies: list[Comment]
    reply_count: int

    @property
    def hidden_replies(self) -> int:
        return self.reply_count - len(self.replies)


@dataclass(frozen=True)
class ThreadPage:
    page: Page[Comment]
    threads: list[Thread]


def _roots(target: Target) -> QuerySet[Comment]:
    return Comment.objects.filter(parent=None, **target.fields()).order_by("created_at", "pk")


def thread_page(*, target: Target, number: Any = None) -> ThreadPage:
    """One page of the target's threads, each with its first replies: three queries at most
    (count, threads, replies), however long the discussion."""
    page = page_of(_roots(target).annotate(reply_count=Count("replies")), number, THREADS_PER_PAGE)
    roots = list(page.object_list)
    replies: dict[int, list[Comment]] = {root.pk: [] for root in roots}
    if roots:
        shown = (
            Comment.objects.filter(parent__in=roots)
            .annotate(
                place=Window(
                    RowNumber(), partition_by=F("parent_id"), order_by=("created_at", "pk")
                )
            )
            .filter(place__lte=REPLIES_SHOWN)
            .order_by("parent_id", "created_at", "pk")
        )
        for reply in shown:
            assert reply.parent_id is not None
            replies[reply.parent_id].append(reply)
    threads = [
        Thread(comment=root, replies=replies[root.pk], reply_count=root.reply_count)
        for root in roots
    ]
    return ThreadPage(page=page, threads=threads)


def thread_page_number(*, comment: Comment) -> int:
    """The page of its target's discussion that shows ``comment`` (or the thread it is in)."""
    root = comment.parent if comment.parent_id is not None else comment
    assert root is not None
    earlier = (
        Comment.objects.filter(
            Q(
                parent=None,
                run_id=root.run_id,
                removal_id=root.removal_id,
                policy_version_id=root.policy_version_id,
            )
        )
        .filter(Q(created_at__lt=root.created_at) | Q(created_at=root.created_at, pk__lt=root.pk))
        .count()
    )
    return earlier // THREADS_PER_PAGE + 1


def comment_list(*, target: Target) -> QuerySet[Comment]:
    """Every comment of the target, flat, oldest first: what the API pages through."""
    return (
        Comment.objects.filter(**target.fields())
        .select_related("removal")
        .order_by("created_at", "pk")
    )


def with_comment_counts(removals: QuerySet[Removal]) -> QuerySet[Removal]:
    """Ledger rows with ``comment_count``: a subquery per row of the page, not a query."""
    counts = (
        Comment.objects.filter(removal=OuterRef("pk"))
        .order_by()
        .values("removal")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return removals.annotate(
        comment_count=Coalesce(Subquery(counts, output_field=IntegerField()), Value(0))
    )


# --- Verdicts and statuses -------------------------------------------------------------------


def verdict_list(*, target: Target) -> QuerySet[Verdict]:
    """The target's verdicts, newest (the one that sets the status) first."""
    return Verdict.objects.filter(**target.verdict_fields()).order_by("-pk")


@dataclass(frozen=True)
class VerdictHistory:
    status: ReviewStatus
    verdicts: list[Verdict]


def verdict_history(*, target: Target) -> VerdictHistory:
    """The status and the latest verdicts, in one query."""
    verdicts = list(verdict_list(target=target)[:VERDICTS_SHOWN])
    return VerdictHistory(
        status=status_of(verdicts[0].decision if verdicts else None), verdicts=verdicts
    )


def _latest_decision(field: str) -> Subquery:
    return Subquery(
        Verdict.objects.filter(**{field: OuterRef("pk")}).order_by("-pk").values("decision")[:1]
    )


def _latest_reviewer(field: str) -> Subquery:
    return Subquery(
        Verdict.objects.filter(**{field: OuterRef("pk")})
        .order_by("-pk")
        .values("reviewer_name")[:1]
    )


def review_status(*, target: Target) -> ReviewStatus:
    latest = verdict_list(target=target).values_list("decision", flat=True).first()
    return status_of(latest)


def _status(field: str) -> Case:
    """The review status as a column: the latest verdict's decision, else pending."""
    decision = _latest_decision(field)
    return Case(
        When(Exact(decision, Decision.APPROVE), then=Value(ReviewStatus.APPROVED.value)),
        When(
            Exact(decision, Decision.REQUEST_CHANGES),
            then=Value(ReviewStatus.CHANGES_REQUESTED.value),
        ),
        default=Value(ReviewStatus.PENDING.value),
        output_field=CharField(),
    )


def versions_with_review(versions: QuerySet[PolicyVersion]) -> QuerySet[PolicyVersion]:
    """Versions with ``review_status`` and ``comment_count``: subqueries of the same query,
    so a page of versions costs no more queries for showing them."""
    counts = (
        Comment.objects.filter(policy_version=OuterRef("pk"))
        .order_by()
        .values("policy_version")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return versions.annotate(
        review_status=_status("policy_version"),
        comment_count=Coalesce(Subquery(counts, output_field=IntegerField()), Value(0)),
    )


# --- The queue -------------------------------------------------------------------------------


def _queue_runs(project: Project) -> QuerySet[GCRun]:
    return (
        GCRun.objects.filter(session__project=project, status=JobStatus.DONE)
        .select_related("session", "policy_version__policy")
        .only(
            "id",
            "status",
            "plugin",
            "policy_label",
            "trigger",
            "tokens_freed",
            "items_collected",
            "retention",
            "retention_pending",
            "created_at",
            "finished_at",
            "session__id",
            "session__label",
            "policy_version__id",
            "policy_version__number",
            "policy_version__policy__id",
            "policy_version__policy__name",
        )
        .annotate(latest_decision=_latest_decision("run"), latest_reviewer=_latest_reviewer("run"))
        .order_by("finished_at", "pk")
    )


def _latest_versions(project: Project) -> QuerySet[PolicyVersion]:
    """The newest version of each policy: older versions are superseded, not reviewed."""
    newest = (
        PolicyVersion.objects.filter(policy=OuterRef("policy"))
        .order_by("-number")
        .values("number")[:1]
    )
    return (
        PolicyVersion.objects.filter(policy__project=project, number=Subquery(newest))
        .select_related("policy")
        .defer("config")
        .annotate(
            latest_decision=_latest_decision("policy_version"),
            latest_reviewer=_latest_reviewer("policy_version"),
        )
        .order_by("created_at", "pk")
    )


def _pending_runs(project: Project) -> QuerySet[GCRun]:
    return _queue_runs(project).filter(~Exists(Verdict.objects.filter(run=OuterRef("pk"))))


def queue_pending_runs(*, project: Project, removed_nothing: bool = False) -> QuerySet[GCRun]:
    """Finished runs nobody has given a verdict on yet, oldest first; a run that removed
    nothing has no decision to review, so it is left out unless ``removed_nothing``."""
    pending = _pending_runs(project)
    return pending if removed_nothing else pending.exclude(items_collected=0)


def queue_pending_removed_nothing(*, project: Project) -> int:
    """How many runs waiting for a verdict removed nothing (the queue leaves them out)."""
    return _pending_runs(project).filter(items_collected=0).count()


def queue_pending_versions(*, project: Project) -> QuerySet[PolicyVersion]:
    """Latest policy versions without a verdict, oldest first."""
    return _latest_versions(project).filter(
        ~Exists(Verdict.objects.filter(policy_version=OuterRef("pk")))
    )


def queue_changes_runs(*, project: Project) -> QuerySet[GCRun]:
    """Runs whose latest verdict asks for changes."""
    return _queue_runs(project).filter(Q(latest_decision=Decision.REQUEST_CHANGES))


def queue_changes_versions(*, project: Project) -> QuerySet[PolicyVersion]:
    return _latest_versions(project).filter(Q(latest_decision=Decision.REQUEST_CHANGES))
