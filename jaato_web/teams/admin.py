"""Read-only admin views of members, tokens and sign-in attempts, which only their own flows
may write (the Members page keeps every project with an admin and writes the audit log)."""

from __future__ import annotations

from django.contrib import admin

from jaato_web.readonly_admin import ReadOnlyAdmin
from jaato_web.teams.models import ApiToken, Membership, SignInAttempt


@admin.register(Membership)
class MembershipAdmin(ReadOnlyAdmin):
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
