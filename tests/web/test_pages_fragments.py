"""Parts of pages drawn once per process (``jaato_web.pages.fragments``) show what drawing them
again would: after a pin, a comment or another user's visit, each page is the one its own
request would draw, and its forms carry the user's own CSRF token."""

from __future__ import annotations

import re

from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from jaato_web.dashboard import services
from jaato_web.dashboard.models import AgentSession, GCRun, Project
from jaato_web.pages import fragments
from jaato_web.review import services as review_services
from jaato_web.review.targets import Target
from jaato_web.teams.permissions import Role
from tests.web.conftest import make_member, signed_in_client


def html_of(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_a_pin_made_after_the_page_was_drawn_shows_at_once(
    client: Client, stored_session: AgentSession, member: User
) -> None:
    url = reverse("session_detail", args=[stored_session.pk])
    assert 'data-turn="0" data-pinned="false"' in html_of(client, url)

    services.session_pin(session=stored_session, turn_index=0, actor=member)

    assert 'data-turn="0" data-pinned="true"' in html_of(client, url)


def test_a_viewer_after_an_admin_sees_no_pin_toggle_and_each_page_carries_its_own_token(
    project: Project, stored_session: AgentSession, member: User
) -> None:
    url = reverse("session_detail", args=[stored_session.pk])
    admin = Client(enforce_csrf_checks=True)
    admin.force_login(member)
    viewer = signed_in_client(make_member(project, "vic", Role.VIEWER))

    admin_page = html_of(admin, url)
    viewer_page = html_of(viewer, url)

    assert admin_page.count("data-pin-toggle") == stored_session.turn_count
    assert "data-pin-toggle" not in viewer_page
    for page in (admin_page, viewer_page):
        assert fragments.CSRF_PLACEHOLDER not in page
    # The admin's pin toggle, drawn once, posts with the token of the admin's own request.
    token = re.search(
        r'name="csrfmiddlewaretoken" value="([^"]+)">\s*<input type="hidden" '
        r'name="turn"',
        admin_page,
    )
    assert token is not None
    pinned = admin.post(
        reverse("session_pin", args=[stored_session.pk]),
        {"turn": "0", "csrfmiddlewaretoken": token[1]},
    )
    assert pinned.status_code == 302
    assert 'data-turn="0" data-pinned="true"' in html_of(admin, url)


def test_a_comment_made_after_the_ledger_was_drawn_is_counted_at_once(
    client: Client, finished_run: GCRun, member: User
) -> None:
    url = reverse("run_detail", args=[finished_run.pk])
    assert "1 comment<" not in html_of(client, url)
    removal = finished_run.removals.order_by("seq").first()
    assert removal is not None

    review_services.comment_add(
        target=Target.of_removal(finished_run, removal), author=member, body="Why this one?"
    )

    assert "1 comment<" in html_of(client, url)
