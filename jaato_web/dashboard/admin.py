"""The Django admin for what the dashboard stores: for looking only.

Projects, sessions, policies, runs, ledgers, summaries and replays are written by the
services and read by the pages; the admin shows them but never edits them, so an uploaded
original or a run's ledger stays what it was, and every change goes through the services that
check concurrent edits and write the audit log.

List pages never load the big columns: the original bytes, packed sessions, message JSON and
replay series are deferred or left out.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from jaato_web.dashboard.models import (
    AgentSession,
    AuditEvent,
    GCRun,
    IngestJob,
    Policy,
    PolicyRanking,
    PolicyVersion,
    Project,
    Removal,
    Replay,
    SessionTurn,
    Summary,
)
from jaato_web.readonly_admin import ReadOnlyAdmin


@admin.register(Project)
class ProjectAdmin(ReadOnlyAdmin):
    list_display = ("name", "slug", "default_policy", "run_default_policy_on_upload", "created_at")
    list_select_related = ("default_policy",)
    search_fields = ("name", "slug")


@admin.register(AgentSession)
class AgentSessionAdmin(ReadOnlyAdmin):
    list_display = (
        "label",
        "project",
        "source_format",
        "model_name",
        "turn_count",
        "total_tokens",
        "utilization_percent",
        "created_at",
    )
    list_select_related = ("project",)
    list_filter = ("source_format", "project")
    search_fields = ("label", "model_name", "sha256", "engine_session_id")
    date_hierarchy = "created_at"
    exclude = ("drift",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[AgentSession]:
        return super().get_queryset(request).defer("drift", "warnings")


@admin.register(SessionTurn)
class SessionTurnAdmin(ReadOnlyAdmin):
    list_display = ("session", "position", "turn_index", "kind", "policy", "tokens", "tool_calls")
    list_select_related = ("session",)
    list_filter = ("kind", "policy")
    search_fields = ("session__label", "preview")
    exclude = ("packed",)
    show_full_result_count = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[SessionTurn]:
        return super().get_queryset(request).defer("packed")


class PolicyVersionInline(admin.TabularInline):
    model = PolicyVersion
    fields = ("number", "config", "message", "author", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Policy)
class PolicyAdmin(ReadOnlyAdmin):
    list_display = ("name", "project", "created_at")
    list_select_related = ("project",)
    search_fields = ("name", "description")
    inlines = (PolicyVersionInline,)


@admin.register(PolicyVersion)
class PolicyVersionAdmin(ReadOnlyAdmin):
    list_display = ("policy", "number", "message", "author", "created_at")
    list_select_related = ("policy",)
    search_fields = ("policy__name", "message", "author")


@admin.register(GCRun)
class GCRunAdmin(ReadOnlyAdmin):
    list_display = (
        "pk",
        "session",
        "plugin",
        "policy_version",
        "status",
        "trigger",
        "tokens_before",
        "tokens_after",
        "items_collected",
        "created_at",
    )
    list_select_related = ("session", "policy_version__policy")
    list_filter = ("status", "plugin", "trigger")
    search_fields = ("session__label", "plugin", "error")
    date_hierarchy = "created_at"
    exclude = ("session_after", "after_turns")

    def get_queryset(self, request: HttpRequest) -> QuerySet[GCRun]:
        return (
            super().get_queryset(request).defer("session_after", "after_turns", "result", "config")
        )


@admin.register(Removal)
class RemovalAdmin(ReadOnlyAdmin):
    list_display = ("run", "seq", "reason", "source", "turn_index", "tokens_freed")
    list_select_related = ("run",)
    list_filter = ("reason", "source")
    search_fields = ("child_key",)
    show_full_result_count = False


@admin.register(Summary)
class SummaryAdmin(ReadOnlyAdmin):
    list_display = ("run", "number", "summarizer", "tokens", "written_by_run")
    list_select_related = ("run",)
    list_filter = ("written_by_run", "summarizer")
    search_fields = ("message_id",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Summary]:
        return super().get_queryset(request).defer("text", "covers_turns")


@admin.register(Replay)
class ReplayAdmin(ReadOnlyAdmin):
    list_display = ("pk", "session", "status", "created_at")
    list_select_related = ("session",)
    list_filter = ("status",)
    search_fields = ("session__label",)
    exclude = ("series",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Replay]:
        return super().get_queryset(request).defer("series")


@admin.register(PolicyRanking)
class PolicyRankingAdmin(ReadOnlyAdmin):
    list_display = ("pk", "project", "status", "replays_done", "replays_total", "created_at")
    list_select_related = ("project",)
    list_filter = ("status",)
    exclude = ("result",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[PolicyRanking]:
        return super().get_queryset(request).defer("result")


@admin.register(IngestJob)
class IngestJobAdmin(ReadOnlyAdmin):
    list_display = ("filename", "project", "status", "size_bytes", "session", "created_at")
    list_select_related = ("project", "session")
    list_filter = ("status",)
    search_fields = ("filename", "sha256")


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "actor_name", "action", "target", "project")
    list_filter = ("action", "project")
    search_fields = ("actor_name", "target")
