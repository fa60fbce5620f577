"""Admin for members (editable: a site admin can seat a project's first admin) and read-only
views of tokens, sign-in attempts and the audit log, which only their own flows may write."""

from __future__ import annotations

from django.contrib import admin

from jaato_web.dashboard.admin import ReadOnlyAdmin
from jaato_web.teams.models import ApiToken, AuditEvent, Membership, SignInAttempt


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "project", "role", "created_at")
    list_filter = ("role", "project")
    search_fields = ("user__username", "project__name")


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    list_display = ("name", "prefix", "user", "created_at", "last_used_at", "revoked_at")
    exclude = ("digest",)


@admin.register(SignInAttempt)
class SignInAttemptAdmin(ReadOnlyAdmin):
    list_display = ("username", "ip_address", "succeeded", "created_at")
    list_filter = ("succeeded",)
    search_fields = ("username", "ip_address")


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "actor_name", "action", "target", "project")
    list_filter = ("action", "project")
    search_fields = ("actor_name", "target")
