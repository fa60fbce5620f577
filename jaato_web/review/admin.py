"""Comments and verdicts in the admin, read-only: they are a record of what people said."""

from __future__ import annotations

from django.contrib import admin

from jaato_web.readonly_admin import ReadOnlyAdmin
from jaato_web.review.models import Comment, Verdict


@admin.register(Comment)
class CommentAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "author_name", "project", "run", "policy_version", "body")
    list_filter = ("project",)
    search_fields = ("author_name", "body")


@admin.register(Verdict)
class VerdictAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "reviewer_name", "decision", "project", "run", "policy_version")
    list_filter = ("decision", "project")
