"""The dashboard skeleton: pages answer, the API answers, settings are strict.

Only the page tests touch the database (the sessions list reads it); the API and
settings tests need none.
"""

from __future__ import annotations

import json
import re
import runpy
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from jaato_web import settings as project_settings
from jaato_web.settings import database_from_url

SETTINGS_FILE = Path(project_settings.__file__)


@pytest.mark.django_db
def test_home_leads_to_the_sessions_list(client: Client) -> None:
    response = client.get("/", follow=True)

    assert response.status_code == 200
    assert response.redirect_chain == [("/sessions/", 302)]
    html = response.content.decode()
    assert "jaato GC" in html
    assert "<h1>Sessions</h1>" in html
    for link in ("/sessions/", "/sessions/upload/", "/api/docs", "/review/", "/audit/"):
        assert f'href="{link}"' in html


@pytest.mark.django_db
def test_pages_send_strict_csp_with_the_nonce_their_scripts_carry(client: Client) -> None:
    response = client.get("/sessions/")

    policy = response.headers["Content-Security-Policy"]
    match = re.search(r"'nonce-([^']+)'", policy)
    assert match, policy
    assert "object-src 'none'" in policy
    assert "base-uri 'none'" in policy
    assert "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy
    # The htmx <script> must carry the same nonce, or the browser would block it.
    assert f'nonce="{match.group(1)}"' in response.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/sessions/", "/sessions/upload/"])
def test_pages_have_no_inline_styles_or_scripts(client: Client, url: str) -> None:
    html = client.get(url).content.decode()

    assert "style=" not in html
    assert "<style" not in html
    assert "hx-on" not in html
    for script in re.findall(r"<script[^>]*>", html):
        assert "src=" in script, script


@pytest.mark.django_db
def test_htmx_swaps_form_errors_but_no_other_error(client: Client) -> None:
    html = client.get("/sessions/").content.decode()

    match = re.search(r'<meta name="htmx-config" content=\'([^\']+)\'>', html)
    assert match
    config = json.loads(match.group(1))
    assert config["allowEval"] is False
    assert config["includeIndicatorStyles"] is False
    rules = config["responseHandling"]
    swapped = {rule["code"]: rule["swap"] for rule in rules}
    assert swapped["^(400|413)$"] is True
    assert swapped["[45].."] is False
    assert [r["code"] for r in rules].index("^(400|413)$") < [r["code"] for r in rules].index(
        "[45].."
    )


def test_api_health_answers_ok_with_a_version(client: Client) -> None:
    response = client.get("/api/health")

    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["status"] == "ok"
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", body["version"])


def test_api_docs_answer(client: Client) -> None:
    response = client.get("/api/docs")

    assert response.status_code == 200
    assert b"swagger" in response.content.lower()


def test_database_url_postgres() -> None:
    config = database_from_url("postgres://gc:p%40ss@db.example.com:6543/jaato?sslmode=require")

    assert config == {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "jaato",
        "USER": "gc",
        "PASSWORD": "p@ss",
        "HOST": "db.example.com",
        "PORT": "6543",
        "OPTIONS": {"sslmode": "require"},
    }


def test_database_url_postgresql_scheme_without_port() -> None:
    config = database_from_url("postgresql://gc@localhost/jaato")

    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert config["NAME"] == "jaato"
    assert config["HOST"] == "localhost"
    assert config["PORT"] == ""
    assert config["PASSWORD"] == ""


def test_database_url_sqlite_relative_absolute_and_memory() -> None:
    relative = database_from_url("sqlite:///var/gc.sqlite3")
    absolute = database_from_url("sqlite:////tmp/gc.sqlite3")
    memory = database_from_url("sqlite:///:memory:")

    assert relative["ENGINE"] == "django.db.backends.sqlite3"
    assert relative["NAME"] == project_settings.BASE_DIR / "var" / "gc.sqlite3"
    assert absolute["NAME"] == Path("/tmp/gc.sqlite3")
    assert memory["NAME"] == ":memory:"


@pytest.mark.parametrize(
    "url",
    [
        "mysql://user:pass@localhost/jaato",
        "redis://localhost:6379/0",
        "db.sqlite3",
        "postgres://user@localhost",  # no database name
        "postgres://user@localhost:notaport/jaato",
        "sqlite://host/db.sqlite3",
    ],
)
def test_database_url_rejects_what_it_cannot_serve(url: str) -> None:
    with pytest.raises(ImproperlyConfigured):
        database_from_url(url)


def test_default_database_is_sqlite_at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)

    namespace = runpy.run_path(str(SETTINGS_FILE))

    assert namespace["DATABASES"]["default"] == {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": project_settings.BASE_DIR / "db.sqlite3",
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
        },
    }


def test_production_refuses_to_start_without_secret_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DJANGO_DEBUG", "false")
    monkeypatch.delenv("DJANGO_SECRET_KEY", raising=False)

    with pytest.raises(ImproperlyConfigured, match="DJANGO_SECRET_KEY"):
        runpy.run_path(str(SETTINGS_FILE))


def test_production_turns_on_transport_security(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DJANGO_DEBUG", "false")
    monkeypatch.setenv("DJANGO_SECRET_KEY", "x" * 50)
    monkeypatch.setenv("DJANGO_ALLOWED_HOSTS", "gc.example.com, api.example.com")
    monkeypatch.delenv("DJANGO_SECURE_SSL_REDIRECT", raising=False)

    namespace = runpy.run_path(str(SETTINGS_FILE))

    assert namespace["DEBUG"] is False
    assert namespace["ALLOWED_HOSTS"] == ["gc.example.com", "api.example.com"]
    assert namespace["SECURE_SSL_REDIRECT"] is True
    assert namespace["SESSION_COOKIE_SECURE"] is True
    assert namespace["CSRF_COOKIE_SECURE"] is True
    assert namespace["SECURE_HSTS_SECONDS"] > 0


def test_ssl_redirect_can_be_left_to_a_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DJANGO_DEBUG", "false")
    monkeypatch.setenv("DJANGO_SECRET_KEY", "x" * 50)
    monkeypatch.setenv("DJANGO_SECURE_SSL_REDIRECT", "false")

    assert runpy.run_path(str(SETTINGS_FILE))["SECURE_SSL_REDIRECT"] is False


def test_production_on_postgresql_keeps_its_connections_in_a_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DJANGO_DEBUG", "false")
    monkeypatch.setenv("DJANGO_SECRET_KEY", "x" * 50)
    monkeypatch.setenv("DATABASE_URL", "postgres://gc@db.example.com/jaato")
    monkeypatch.setenv("JAATO_DB_POOL_SIZE", "12")

    pooled = runpy.run_path(str(SETTINGS_FILE))["DATABASES"]["default"]
    monkeypatch.setenv("JAATO_DB_POOL", "false")
    unpooled = runpy.run_path(str(SETTINGS_FILE))["DATABASES"]["default"]
    monkeypatch.setenv("DJANGO_DEBUG", "true")
    monkeypatch.delenv("JAATO_DB_POOL")
    debugging = runpy.run_path(str(SETTINGS_FILE))["DATABASES"]["default"]

    assert pooled["OPTIONS"]["pool"]["max_size"] == 12
    assert pooled.get("CONN_MAX_AGE", 0) == 0  # Django refuses a pool with persistent ones
    assert pooled["CONN_HEALTH_CHECKS"] is True  # each connection checked as it is handed out
    assert "pool" not in unpooled["OPTIONS"]
    assert "pool" not in debugging["OPTIONS"]


def test_sqlite_is_never_pooled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DJANGO_DEBUG", "false")
    monkeypatch.setenv("DJANGO_SECRET_KEY", "x" * 50)
    monkeypatch.setenv("DATABASE_URL", "sqlite:///gc.sqlite3")

    assert "pool" not in runpy.run_path(str(SETTINGS_FILE))["DATABASES"]["default"]["OPTIONS"]


def test_misspelt_boolean_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DJANGO_DEBUG", "flase")

    with pytest.raises(ImproperlyConfigured, match="DJANGO_DEBUG"):
        runpy.run_path(str(SETTINGS_FILE))


def test_database_url_errors_do_not_leak_the_password() -> None:
    with pytest.raises(ImproperlyConfigured) as excinfo:
        database_from_url("postgres://gc:hunter2@localhost:notaport/jaato")

    assert "hunter2" not in str(excinfo.value)
    assert "***" in str(excinfo.value)
