"""The admin base every app's read-only model admin shares."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest


class ReadOnlyAdmin(admin.ModelAdmin):
    """Viewable, not editable: no add, no change, no delete.

    Rows such as uploads, ledgers, comments and audit events are written only by their own
    services, which keep history and the audit log consistent; the admin is for looking.
    """

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
