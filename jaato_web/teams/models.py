"""Members and their roles, personal API tokens, sign-in attempts and the audit log."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from jaato_web.dashboard.models import Project
from jaato_web.teams.permissions import Role


class Membership(models.Model):
    """A user's place in a project; every read and write is scoped through these rows."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} is {self.role} of {self.project}"


class ApiToken(models.Model):
    """A personal token for the API and scripts.

    Only a SHA-256 digest is stored: the token is shown once, when it is made. Tokens carry
    enough randomness (256 bits) that a salted slow hash would add nothing but latency to
    every API call. The token reaches only the projects it names, and in each only as far as
    its owner's current role there.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(
        max_length=16, help_text="The token's first characters, to tell it apart."
    )
    digest = models.CharField(max_length=64, unique=True)
    projects = models.ManyToManyField(Project, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class SignInAttempt(models.Model):
    """Every sign-in attempt: failures are what throttling counts; a success restarts the count."""

    username = models.CharField(max_length=150)
    ip_address = models.GenericIPAddressField(null=True)
    succeeded = models.BooleanField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["username", "-created_at"])]

    def __str__(self) -> str:
        return f"{'ok' if self.succeeded else 'failed'} sign-in as {self.username}"
