"""Behind a TLS-terminating proxy: what the environment says about the proxy, and what the
dashboard then believes of a request (its scheme, its origin, its client's address).

The settings are read from the settings file as a deployment runs it (``runpy`` with the
variables set); the answers are checked with those values applied to the test's settings.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import httpx2
import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.test import Client, RequestFactory

from jaato_web import settings as project_settings
from jaato_web.http import client_address
from jaato_web.teams import services as team_services
from jaato_web.teams.models import SignInAttempt
from tests.web.test_mcp_http import LIST_TOOLS, MCP_HEADERS, over_asgi

from .conftest import Caller

SETTINGS_FILE = Path(project_settings.__file__)
SIGN_IN = "/accounts/sign-in/"
PROXY = "10.1.2.3"
PUBLIC = "https://gc.example.com"


def settings_with(monkeypatch: pytest.MonkeyPatch, **env: str) -> dict[str, Any]:
    monkeypatch.setenv("DJANGO_DEBUG", "false")
    monkeypatch.setenv("DJANGO_SECRET_KEY", "s" * 50)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(SETTINGS_FILE))


@pytest.fixture
def behind_proxy(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    """The test's settings as a deployment behind a TLS proxy at ``PROXY`` has them."""
    deployed = settings_with(
        monkeypatch,
        DJANGO_ALLOWED_HOSTS="gc.example.com,web",
        DJANGO_SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto",
        DJANGO_CSRF_TRUSTED_ORIGINS=PUBLIC,
        JAATO_TRUSTED_PROXIES=f"{PROXY},fd00::/8",
    )
    for key in (
        "ALLOWED_HOSTS",
        "SECURE_PROXY_SSL_HEADER",
        "CSRF_TRUSTED_ORIGINS",
        "JAATO_TRUSTED_PROXIES",
        "SECURE_SSL_REDIRECT",
        "SECURE_REDIRECT_EXEMPT",
    ):
        setattr(settings, key, deployed[key])


# --- The environment ---------------------------------------------------------------------------


def test_the_proxy_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    deployed = settings_with(
        monkeypatch,
        DJANGO_SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto",
        DJANGO_CSRF_TRUSTED_ORIGINS=f"{PUBLIC}, https://*.example.org",
        JAATO_TRUSTED_PROXIES="10.0.0.0/8, 127.0.0.1,::1",
    )

    assert deployed["SECURE_PROXY_SSL_HEADER"] == ("HTTP_X_FORWARDED_PROTO", "https")
    assert deployed["CSRF_TRUSTED_ORIGINS"] == [PUBLIC, "https://*.example.org"]
    assert deployed["JAATO_TRUSTED_PROXIES"] == ["10.0.0.0/8", "127.0.0.1", "::1"]


def test_without_a_proxy_nothing_forwarded_is_believed(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "DJANGO_SECURE_PROXY_SSL_HEADER",
        "DJANGO_CSRF_TRUSTED_ORIGINS",
        "JAATO_TRUSTED_PROXIES",
    ):
        monkeypatch.delenv(name, raising=False)
    deployed = settings_with(monkeypatch)

    assert deployed["SECURE_PROXY_SSL_HEADER"] is None
    assert deployed["CSRF_TRUSTED_ORIGINS"] == []
    assert deployed["JAATO_TRUSTED_PROXIES"] == []


@pytest.mark.parametrize(
    ("name", "value", "named"),
    [
        ("JAATO_TRUSTED_PROXIES", "10.0.0.0/8,proxy.internal", "'proxy.internal'"),
        ("JAATO_TRUSTED_PROXIES", "10.0.0.300", "'10.0.0.300'"),
        ("DJANGO_SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto: https", "X-Forwarded-Proto"),
    ],
)
def test_a_mistyped_proxy_setting_stops_start_up(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, named: str
) -> None:
    with pytest.raises(ImproperlyConfigured, match=f"{name}.*{named}"):
        settings_with(monkeypatch, **{name: value})


# --- The scheme: HTTPS as the proxy says ---------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.usefixtures("behind_proxy")
def test_a_request_the_proxy_received_over_tls_is_secure_and_not_redirected() -> None:
    over_tls = Client().get(SIGN_IN, HTTP_HOST="gc.example.com", HTTP_X_FORWARDED_PROTO="https")
    plain = Client().get(SIGN_IN, HTTP_HOST="gc.example.com")

    assert over_tls.status_code == 200
    assert plain.status_code == 301
    assert plain["Location"] == f"{PUBLIC}{SIGN_IN}"


@pytest.mark.django_db
@pytest.mark.usefixtures("behind_proxy")
def test_health_probes_over_plain_http_are_answered() -> None:
    assert Client().get("/api/health", HTTP_HOST="web").status_code == 200


# --- The origin: forms posted through the proxy ---------------------------------------------------


@pytest.mark.django_db
@pytest.mark.usefixtures("behind_proxy")
def test_a_trusted_origin_passes_the_csrf_check_and_another_does_not(member: User) -> None:
    """The proxy forwards to ``web`` (its Host), while the browser's origin is the public one."""
    browser = Client(enforce_csrf_checks=True)
    browser.get(SIGN_IN, HTTP_HOST="web", HTTP_X_FORWARDED_PROTO="https")
    token = browser.cookies["csrftoken"].value
    form = {"username": "ann", "password": "ann-password-1", "csrfmiddlewaretoken": token}

    def post(origin: str) -> int:
        return browser.post(
            SIGN_IN,
            form,
            HTTP_HOST="web",
            HTTP_X_FORWARDED_PROTO="https",
            HTTP_ORIGIN=origin,
        ).status_code

    assert post("https://evil.example") == 403
    assert post(PUBLIC) == 302


# --- The client's address: the sign-in throttle -----------------------------------------------


@pytest.mark.parametrize(
    ("peer", "forwarded", "client"),
    [
        # A trusted proxy: the nearest address it did not add itself.
        (PROXY, "203.0.113.9", "203.0.113.9"),
        (PROXY, "198.51.100.1, 203.0.113.9", "203.0.113.9"),  # the left one is the client's
        (PROXY, "203.0.113.9, 10.1.2.3", "203.0.113.9"),  # two trusted hops
        (PROXY, "", PROXY),  # the proxy's own request, such as a health probe
        (PROXY, "not-an-address, 203.0.113.9", "203.0.113.9"),
        (PROXY, "203.0.113.9, garbage", PROXY),  # the proxy wrote nothing usable
        ("fd00::7", "2001:db8::1", "2001:db8::1"),
        # Anyone else: the header is the client's own to forge.
        ("198.51.100.7", "203.0.113.9", "198.51.100.7"),
    ],
)
def test_the_client_address_is_read_from_trusted_proxies_only(
    settings: Any, peer: str, forwarded: str, client: str
) -> None:
    settings.JAATO_TRUSTED_PROXIES = [PROXY, "fd00::/8"]
    request = RequestFactory().get("/", REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR=forwarded)

    assert client_address(request) == client


def test_without_trusted_proxies_the_connection_is_the_client(settings: Any) -> None:
    settings.JAATO_TRUSTED_PROXIES = []
    request = RequestFactory().get("/", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="203.0.113.9")

    assert client_address(request) == PROXY


@pytest.mark.django_db
@pytest.mark.usefixtures("behind_proxy")
def test_the_throttle_counts_each_client_behind_the_proxy_on_its_own(member: User) -> None:
    def sign_in(username: str, password: str, peer: str, forwarded: str) -> int:
        return (
            Client()
            .post(
                SIGN_IN,
                {"username": username, "password": password},
                HTTP_HOST="gc.example.com",
                HTTP_X_FORWARDED_PROTO="https",
                REMOTE_ADDR=peer,
                HTTP_X_FORWARDED_FOR=forwarded,
            )
            .status_code
        )

    for n in range(team_services.SIGN_IN_MAX_FAILURES_PER_ADDRESS):
        assert sign_in(f"guess{n}", "wrong", PROXY, "203.0.113.9") == 400

    # The guesser is stopped; everyone else behind the same proxy still signs in.
    assert sign_in("ann", "ann-password-1", PROXY, "203.0.113.9") == 429
    assert sign_in("ann", "ann-password-1", PROXY, "198.51.100.20") == 302
    assert set(SignInAttempt.objects.values_list("ip_address", flat=True)) == {
        "203.0.113.9",
        "198.51.100.20",
    }
    # A guesser reaching the app directly cannot pose as another client.
    for n in range(team_services.SIGN_IN_MAX_FAILURES_PER_ADDRESS):
        sign_in(f"direct{n}", "wrong", "198.51.100.66", f"192.0.2.{n}")
    assert sign_in("ann", "ann-password-1", "198.51.100.66", "192.0.2.200") == 429


# --- /mcp behind the proxy -----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("behind_proxy")
def test_mcp_answers_the_public_host_and_the_trusted_origins(viewer: Caller) -> None:
    def status(headers: dict[str, str]) -> int:
        async def work(http: httpx2.AsyncClient) -> int:
            answer = await http.post(
                "/mcp",
                json=LIST_TOOLS,
                headers={**MCP_HEADERS, "authorization": f"Bearer {viewer.secret}", **headers},
            )
            return answer.status_code

        return over_asgi(work)

    assert status({"host": "gc.example.com"}) == 200
    assert status({"host": "web", "origin": PUBLIC}) == 200  # the proxy renames the host
    assert status({"host": "localhost"}) == 421
    assert status({"host": "web", "origin": "https://evil.example"}) == 403
    assert status({"host": "web", "origin": "http://["}) == 403  # not a URL at all
