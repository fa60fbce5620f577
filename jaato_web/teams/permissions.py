"""The permission table: what each role may do in a project.

This table is the only place access rules live. Pages and API endpoints name the action they
perform (``requires`` in ``access``); ``Access`` compares it with the user's role in the
object's project. The same table is printed in ``docs/teams.md``, and a test keeps the two
identical and walks every route for every role against it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from django.db import models


class Role(models.TextChoices):
    """Roles in increasing order of power: each may do everything the one before it may."""

    VIEWER = "viewer", "Viewer"
    REVIEWER = "reviewer", "Reviewer"
    EDITOR = "editor", "Editor"
    ADMIN = "admin", "Admin"


ROLE_ORDER: Final[tuple[Role, ...]] = (Role.VIEWER, Role.REVIEWER, Role.EDITOR, Role.ADMIN)


class Action(StrEnum):
    VIEW = "view"
    COMMENT = "comment"
    REVIEW = "review"
    UPLOAD = "upload"
    RUN = "run"
    PIN = "pin"
    EDIT_POLICY = "edit_policy"
    DELETE = "delete"
    MANAGE_MEMBERS = "manage_members"


# The least role that may perform each action.
PERMISSIONS: Final[dict[Action, Role]] = {
    Action.VIEW: Role.VIEWER,
    Action.COMMENT: Role.REVIEWER,
    Action.REVIEW: Role.REVIEWER,
    Action.UPLOAD: Role.EDITOR,
    Action.RUN: Role.EDITOR,
    Action.PIN: Role.EDITOR,
    Action.EDIT_POLICY: Role.EDITOR,
    Action.DELETE: Role.EDITOR,
    Action.MANAGE_MEMBERS: Role.ADMIN,
}

# What each action covers, as the docs and the "you may not" messages say it.
ACTION_LABELS: Final[dict[Action, str]] = {
    Action.VIEW: "read sessions, runs, replays, policies, comments and the audit log",
    Action.COMMENT: "comment on runs, removal items and policy versions",
    Action.REVIEW: "approve or request changes on runs and policy versions",
    Action.UPLOAD: "upload sessions (and cancel one being read)",
    Action.RUN: (
        "start GC runs, replays and bulk applies (and cancel them), and restore stashed segments"
    ),
    Action.PIN: "pin and unpin turns and messages, in a session or in a policy",
    Action.EDIT_POLICY: (
        "create, import, edit, restore and set the default policy; set the quality gates and prices"
    ),
    Action.DELETE: "archive, restore from the archive and delete sessions, runs and policies",
    Action.MANAGE_MEMBERS: (
        "add and remove members and change their roles; set the provider that writes summaries "
        "and its key"
    ),
}


def role_allows(role: str | None, action: Action) -> bool:
    """Whether a member with ``role`` may perform ``action``; ``None`` (no member) never may."""
    if role is None:
        return False
    return ROLE_ORDER.index(Role(role)) >= ROLE_ORDER.index(PERMISSIONS[action])


def permission_table() -> list[tuple[Action, str, list[bool]]]:
    """Rows of the table as the docs print it: action, what it covers, allowed per role."""
    return [
        (action, ACTION_LABELS[action], [role_allows(role, action) for role in ROLE_ORDER])
        for action in Action
    ]
