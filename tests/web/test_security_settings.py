"""Production settings and what they do to answers: secure cookies, HSTS, no sniffing, no
framing, a CSP without inline script, and CSRF on every browser write (htmx or not).

The production values are read from the settings file itself (run with DJANGO_DEBUG=false
and a secret, as a deployment runs it) and applied to the test's settings, so the answers
checked here are the ones a deployment sends.
"""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from jaato_web import settings as project_settings
from jaato_web.dashboard.models import AgentSession, GCRun, Policy
from tests.web.conftest import signed_in_client

SETTINGS_FILE = Path(project_settings.__file__)
HOST = "gc.example.com"
# What production changes that the answers below depend on.
PRODUCTION_KEYS = [
    "DEBUG",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_REFERRER_POLICY",
    "SECURE_CONTENT_TYPE_NOSNIFF",
    "SECURE_SSL_REDIRECT",
    "X_FRAME_OPTIONS",
    "SECURE_CSP",
    "SESSION_COOKIE_HTTPONLY",
    "SESSION_COOKIE_SAMESITE",
    "CSRF_COOKIE_SAMESITE",
]


@pytest.fixture
def production(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("DJANGO_DEBUG", "false")
    monkeypatch.setenv("DJANGO_SECRET_KEY", "s" * 50)
    monkeypatch.setenv("DJANGO_ALLOWED_HOSTS", HOST)
    monkeypatch.delenv("DJANGO_SECURE_SSL_REDIRECT", raising=False)
    namespace: dict[str, Any] = runpy.run_path(str(SETTINGS_FILE))
    return namespace


@pytest.fixture
def deployed(production: dict[str, Any], settings: Any) -> dict[str, Any]:
    """The test's settings with production's security values."""
    for key in PRODUCTION_KEYS:
        setattr(settings, key, production[key])
    settings.ALLOWED_HOSTS = [HOST]
    return production


def test_production_settings_are_strict(production: dict[str, Any]) -> None:
    assert production["DEBUG"] is False
    assert production["SESSION_COOKIE_SECURE"] is True
    assert production["CSRF_COOKIE_SECURE"] is True
    assert production["SESSION_COOKIE_HTTPONLY"] is True
    assert production["SECURE_HSTS_SECONDS"] >= 60 * 60 * 24 * 365
    assert production["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is True
    assert production["SECURE_CONTENT_TYPE_NOSNIFF"] is True
    assert production["SECURE_SSL_REDIRECT"] is True
    assert production["X_FRAME_OPTIONS"] == "DENY"
    csp = production["SECURE_CSP"]
    for directive in ("script-src", "style-src", "default-src"):
        assert "'unsafe-inline'" not in csp[directive], directive
        assert "'unsafe-eval'" not in csp[directive], directive
    assert csp["object-src"] == ["'none'"]
    assert csp["frame-ancestors"] == ["'none'"]
    assert "django.middleware.csrf.CsrfViewMiddleware" in production["MIDDLEWARE"]
    assert "django.middleware.csp.ContentSecurityPolicyMiddleware" in production["MIDDLEWARE"]


@pytest.mark.django_db
def test_deployed_answers_carry_the_security_headers(
    deployed: dict[str, Any], member: User
) -> None:
    client = signed_in_client(member)

    plain = client.get("/sessions/", HTTP_HOST=HOST)
    answer = client.get("/sessions/", HTTP_HOST=HOST, secure=True)

    assert plain.status_code == 301
    assert plain["Location"] == f"https://{HOST}/sessions/"
    assert answer.status_code == 200
    assert answer["Strict-Transport-Security"].startswith("max-age=31536000")
    assert "includeSubDomains" in answer["Strict-Transport-Security"]
    assert answer["X-Content-Type-Options"] == "nosniff"
    assert answer["X-Frame-Options"] == "DENY"
    assert answer["Referrer-Policy"] == "same-origin"
    csp = dict(part.strip().split(" ", 1) for part in answer["Content-Security-Policy"].split(";"))
    assert "'nonce-" in csp["script-src"]
    assert "'unsafe-inline'" not in csp["script-src"]
    assert "'unsafe-eval'" not in csp["script-src"]
    # The API's JSON answers are not sniffed into pages either.
    api = client.get("/api/projects", HTTP_HOST=HOST, secure=True)
    assert api["X-Content-Type-Options"] == "nosniff"


@pytest.mark.django_db
def test_deployed_cookies_are_secure_and_http_only(deployed: dict[str, Any], member: User) -> None:
    member.set_password("a-long-password-1")
    member.save()
    client = Client(enforce_csrf_checks=True)
    sign_in_url = reverse("sign_in")
    form = client.get(sign_in_url, HTTP_HOST=HOST, secure=True)
    csrf = form.cookies[django_settings.CSRF_COOKIE_NAME]

    signed_in = client.post(
        sign_in_url,
        {
            "username": member.username,
            "password": "a-long-password-1",
            "csrfmiddlewaretoken": csrf.value,
        },
        HTTP_HOST=HOST,
        HTTP_REFERER=f"https://{HOST}{sign_in_url}",
        secure=True,
    )

    assert signed_in.status_code == 302
    session = signed_in.cookies[django_settings.SESSION_COOKIE_NAME]
    assert session["secure"] is True
    assert session["httponly"] is True
    assert session["samesite"] == "Lax"
    assert csrf["secure"] is True
    assert csrf["samesite"] == "Lax"


# --- CSRF: the page's htmx posts and the API's session-authenticated writes ------------------


def csrf_client(user: User) -> tuple[Client, str]:
    """A browser-like client that is checked for CSRF, and the token a page gave it."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    client.get(reverse("session_list"))
    return client, client.cookies[django_settings.CSRF_COOKIE_NAME].value


@pytest.mark.django_db
def test_htmx_page_post_without_the_csrf_header_is_refused(
    member: User, stored_session: AgentSession, budget_policy: Policy
) -> None:
    client, token = csrf_client(member)
    url = reverse("run_create", args=[stored_session.pk])
    form = {"policy_version": budget_policy.versions.get().pk}

    forged = client.post(url, form, headers={"HX-Request": "true"})
    wrong = client.post(url, form, headers={"HX-Request": "true", "X-CSRFToken": "x" * 32})

    assert forged.status_code == 403
    assert wrong.status_code == 403
    assert not GCRun.objects.exists()
    # The same post with the header the page's htmx sends is accepted.
    sent = client.post(url, form, headers={"HX-Request": "true", "X-CSRFToken": token})
    assert sent.status_code == 200
    assert sent.headers["HX-Redirect"].startswith("/runs/")
    assert GCRun.objects.count() == 1


@pytest.mark.django_db
def test_api_post_with_the_session_cookie_needs_the_csrf_header(
    member: User, stored_session: AgentSession, budget_policy: Policy
) -> None:
    client, token = csrf_client(member)
    url = f"/api/sessions/{stored_session.pk}/runs"
    body = json.dumps({"policy_version_id": budget_policy.versions.get().pk})

    forged = client.post(url, body, content_type="application/json")

    assert forged.status_code == 403
    assert "CSRF" in forged.json()["detail"]
    assert not GCRun.objects.exists()
    sent = client.post(url, body, content_type="application/json", headers={"X-CSRFToken": token})
    assert sent.status_code == 202
    assert GCRun.objects.count() == 1


@pytest.mark.django_db
def test_https_post_from_another_origin_is_refused_even_with_the_token(
    deployed: dict[str, Any], member: User, stored_session: AgentSession
) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    client.get(reverse("session_list"), HTTP_HOST=HOST, secure=True)
    token = client.cookies[django_settings.CSRF_COOKIE_NAME].value
    url = reverse("replay_create", args=[stored_session.pk])

    answer = client.post(
        url,
        {},
        HTTP_HOST=HOST,
        secure=True,
        headers={"X-CSRFToken": token, "Origin": "https://evil.example"},
    )

    assert answer.status_code == 403
    assert b"CSRF" in answer.content
