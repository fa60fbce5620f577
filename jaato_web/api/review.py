"""Review through the API: comments on runs, removal items and policy versions, verdicts, and
the queue. The same services as the pages, so the same rules; a refused comment or verdict
answers 400 with ``detail`` and ``key`` (the field at fault)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema, Status
from pydantic import Field

from jaato_web.api.auth import COMMENT, REVIEW, VIEW, access_of
from jaato_web.api.paging import paged
from jaato_web.api.schemas import Id, ObjectIn, PageNumber, Problem
from jaato_web.dashboard import selectors as dashboard_selectors
from jaato_web.dashboard.models import GCRun, PolicyVersion
from jaato_web.review import selectors, services
from jaato_web.review.models import Comment, Verdict
from jaato_web.review.targets import Target

router = Router(tags=["review"])


class CommentIn(ObjectIn):
    body: str
    parent: Id | None = None


class CommentOut(Schema):
    id: int
    target: str
    run: int | None
    removal_seq: int | None
    policy_version: int | None
    parent: int | None
    author: str
    body: str
    created_at: datetime

    @staticmethod
    def resolve_target(comment: Comment) -> str:
        if comment.removal_id is not None:
            return "removal"
        return "run" if comment.run_id is not None else "policy_version"

    @staticmethod
    def resolve_run(comment: Comment) -> int | None:
        return comment.run_id

    @staticmethod
    def resolve_removal_seq(comment: Comment) -> int | None:
        return comment.removal.seq if comment.removal is not None else None

    @staticmethod
    def resolve_policy_version(comment: Comment) -> int | None:
        return comment.policy_version_id

    @staticmethod
    def resolve_parent(comment: Comment) -> int | None:
        return comment.parent_id

    @staticmethod
    def resolve_author(comment: Comment) -> str:
        return comment.author_name


class CommentPage(Schema):
    count: int
    page: int
    pages: int
    items: list[CommentOut]


class VerdictIn(ObjectIn):
    decision: str
    note: str = ""


class VerdictOut(Schema):
    id: int
    decision: str
    status: str
    reviewer: str
    note: str
    created_at: datetime

    @staticmethod
    def resolve_reviewer(verdict: Verdict) -> str:
        return verdict.reviewer_name


class ReviewOut(Schema):
    """The status (the latest verdict's decision, or pending) and the verdicts, newest first."""

    status: str
    count: int
    page: int
    pages: int
    items: list[VerdictOut]


class QueueRunOut(Schema):
    id: int
    session: int
    session_label: str
    policy_version: int | None
    finished_at: datetime | None
    tokens_freed: int | None
    latest_reviewer: str | None = None

    @staticmethod
    def resolve_session(run: GCRun) -> int:
        return run.session_id

    @staticmethod
    def resolve_session_label(run: GCRun) -> str:
        return run.session.label

    @staticmethod
    def resolve_policy_version(run: GCRun) -> int | None:
        return run.policy_version_id


class QueueVersionOut(Schema):
    id: int
    policy: int
    policy_name: str
    number: int
    author: str
    message: str
    created_at: datetime
    latest_reviewer: str | None = None

    @staticmethod
    def resolve_policy(version: PolicyVersion) -> int:
        return version.policy_id

    @staticmethod
    def resolve_policy_name(version: PolicyVersion) -> str:
        return version.policy.name


class QueueRunPage(Schema):
    count: int
    page: int
    pages: int
    items: list[QueueRunOut]


class QueueVersionPage(Schema):
    count: int
    page: int
    pages: int
    items: list[QueueVersionOut]


class QueueOut(Schema):
    project: int
    pending_runs: QueueRunPage
    pending_runs_removed_nothing: int = Field(
        description="How many runs waiting for a verdict removed nothing: left out of "
        "``pending_runs`` unless ``empty=true``"
    )
    pending_versions: QueueVersionPage
    changes_requested_runs: QueueRunPage
    changes_requested_versions: QueueVersionPage


# --- Targets, found through the caller's access (404 outside their projects, 403 for a role
# without the operation's action) ------------------------------------------------------------


def _run(request: HttpRequest, run_id: int) -> Target:
    return Target.of_run(access_of(request).run(run_id))


def _removal(request: HttpRequest, run_id: int, seq: int) -> Target:
    run = access_of(request).run(run_id)
    return Target.of_removal(run, dashboard_selectors.run_removal(run=run, seq=seq))


def _version(request: HttpRequest, version_id: int) -> Target:
    version = access_of(request).policy_version(version_id)
    return Target.of_version(version)


def _comments(target: Target, page: int) -> dict[str, Any]:
    return paged(selectors.comment_list(target=target), page, selectors.COMMENTS_PER_API_PAGE)


def _comment_add(request: HttpRequest, target: Target, payload: CommentIn) -> Status[Comment]:
    comment = services.comment_add(
        target=target, author=access_of(request).user, body=payload.body, parent_id=payload.parent
    )
    return Status(201, comment)


def _review(target: Target, page: int) -> dict[str, Any]:
    return {
        "status": selectors.review_status(target=target),
        **paged(selectors.verdict_list(target=target), page, selectors.VERDICTS_SHOWN),
    }


def _verdict_give(request: HttpRequest, target: Target, payload: VerdictIn) -> Status[Verdict]:
    verdict = services.verdict_give(
        target=target,
        reviewer=access_of(request).user,
        decision=payload.decision,
        note=payload.note,
    )
    return Status(201, verdict)


COMMENT_ANSWERS: dict[int, Any] = {201: CommentOut, 400: Problem, 403: Problem, 404: Problem}
VERDICT_ANSWERS: dict[int, Any] = {201: VerdictOut, 400: Problem, 403: Problem, 404: Problem}

# --- Runs ----------------------------------------------------------------------------------


@router.get(
    "/runs/{int:run_id}/comments", response=CommentPage, summary="A run's comments", auth=VIEW
)
def list_run_comments(request: HttpRequest, run_id: int, page: PageNumber = 1) -> dict[str, Any]:
    """Comments on the run itself (not on its removal items), oldest first; a reply names its
    ``parent``."""
    return _comments(_run(request, run_id), page)


@router.post(
    "/runs/{int:run_id}/comments",
    response=COMMENT_ANSWERS,
    summary="Comment on a run",
    auth=COMMENT,
)
def add_run_comment(request: HttpRequest, run_id: int, payload: CommentIn) -> Status[Comment]:
    """Plain text, at most 5,000 characters; ``parent`` replies in that comment's thread."""
    return _comment_add(request, _run(request, run_id), payload)


@router.get(
    "/runs/{int:run_id}/removals/{int:seq}/comments",
    response=CommentPage,
    summary="A removal item's comments",
    auth=VIEW,
)
def list_removal_comments(
    request: HttpRequest, run_id: int, seq: int, page: PageNumber = 1
) -> dict[str, Any]:
    return _comments(_removal(request, run_id, seq), page)


@router.post(
    "/runs/{int:run_id}/removals/{int:seq}/comments",
    response=COMMENT_ANSWERS,
    summary="Comment on a removal item",
    auth=COMMENT,
)
def add_removal_comment(
    request: HttpRequest, run_id: int, seq: int, payload: CommentIn
) -> Status[Comment]:
    return _comment_add(request, _removal(request, run_id, seq), payload)


@router.get(
    "/runs/{int:run_id}/verdicts",
    response=ReviewOut,
    summary="A run's review status and verdicts",
    auth=VIEW,
)
def list_run_verdicts(request: HttpRequest, run_id: int, page: PageNumber = 1) -> dict[str, Any]:
    return _review(_run(request, run_id), page)


@router.post(
    "/runs/{int:run_id}/verdicts",
    response=VERDICT_ANSWERS,
    summary="Approve a run or request changes",
    auth=REVIEW,
)
def give_run_verdict(request: HttpRequest, run_id: int, payload: VerdictIn) -> Status[Verdict]:
    """``decision`` is ``approve`` or ``request_changes``; only a finished run can be judged.
    The newest verdict is the run's status."""
    return _verdict_give(request, _run(request, run_id), payload)


# --- Policy versions -------------------------------------------------------------------------


@router.get(
    "/policies/versions/{int:version_id}/comments",
    response=CommentPage,
    summary="A policy version's comments",
    auth=VIEW,
)
def list_version_comments(
    request: HttpRequest, version_id: int, page: PageNumber = 1
) -> dict[str, Any]:
    return _comments(_version(request, version_id), page)


@router.post(
    "/policies/versions/{int:version_id}/comments",
    response=COMMENT_ANSWERS,
    summary="Comment on a policy version",
    auth=COMMENT,
)
def add_version_comment(
    request: HttpRequest, version_id: int, payload: CommentIn
) -> Status[Comment]:
    return _comment_add(request, _version(request, version_id), payload)


@router.get(
    "/policies/versions/{int:version_id}/verdicts",
    response=ReviewOut,
    summary="A policy version's review status and verdicts",
    auth=VIEW,
)
def list_version_verdicts(
    request: HttpRequest, version_id: int, page: PageNumber = 1
) -> dict[str, Any]:
    return _review(_version(request, version_id), page)


@router.post(
    "/policies/versions/{int:version_id}/verdicts",
    response=VERDICT_ANSWERS,
    summary="Approve a policy version or request changes",
    auth=REVIEW,
)
def give_version_verdict(
    request: HttpRequest, version_id: int, payload: VerdictIn
) -> Status[Verdict]:
    return _verdict_give(request, _version(request, version_id), payload)


# --- The queue -------------------------------------------------------------------------------


@router.get("/review/queue", response=QueueOut, summary="What waits for review", auth=VIEW)
def review_queue(
    request: HttpRequest, project: Id | None = None, page: PageNumber = 1, empty: bool = False
) -> dict[str, Any]:
    """Finished runs and latest policy versions without a verdict, oldest first, and those whose
    latest verdict requests changes; ``page`` pages each list. Runs that removed nothing are
    counted, and listed only with ``empty=true``."""
    chosen = access_of(request).project(project)
    per_page = selectors.QUEUE_PER_PAGE
    pending = selectors.queue_pending_runs(project=chosen, removed_nothing=empty)
    return {
        "project": chosen.pk,
        "pending_runs": paged(pending, page, per_page),
        "pending_runs_removed_nothing": selectors.queue_pending_removed_nothing(project=chosen),
        "pending_versions": paged(selectors.queue_pending_versions(project=chosen), page, per_page),
        "changes_requested_runs": paged(
            selectors.queue_changes_runs(project=chosen), page, per_page
        ),
        "changes_requested_versions": paged(
            selectors.queue_changes_versions(project=chosen), page, per_page
        ),
    }
