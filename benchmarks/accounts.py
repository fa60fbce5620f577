"""A signed-in client for the page benchmarks: every page needs a member of the project."""

from __future__ import annotations

from typing import Any


def admin_client(project: Any) -> Any:
    """Django's test client signed in as ``bench``, admin of ``project`` (created if needed)."""
    from django.contrib.auth.models import User
    from django.test import Client

    from jaato_web.teams.models import Membership
    from jaato_web.teams.permissions import Role

    user, _ = User.objects.get_or_create(username="bench")
    Membership.objects.get_or_create(project=project, user=user, defaults={"role": Role.ADMIN})
    client = Client()
    client.force_login(user)
    return client
