"""Django settings for the jaato GC dashboard.

This is the only module that reads the environment, so every knob a deployment
can turn is visible in one place (and listed in the README). Local development
needs no variables at all; production refuses to start without a real secret.
"""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def env_bool(name: str, default: bool) -> bool:
    """Read a boolean variable strictly, so a typo such as DJANGO_DEBUG=flase
    stops the process instead of silently meaning one thing or the other."""
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name}={raw!r} is not a boolean; use one of {sorted(_TRUE | _FALSE)}."
    )


def env_list(name: str, default: list[str]) -> list[str]:
    """Comma lists are what shells and container platforms pass most easily."""
    raw = os.environ.get(name, "")
    if not raw.strip():
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_int(name: str, default: int) -> int:
    """Sizes and counts; a non-number stops start-up with the variable's name."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a whole number.") from None


def env_networks(name: str) -> list[str]:
    """Addresses and networks (``10.0.0.0/8``), checked now so a typo stops start-up rather
    than making the check quietly trust nothing (or everything)."""
    networks = env_list(name, [])
    for network in networks:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            raise ImproperlyConfigured(
                f"{name}: {network!r} is not an IP address or network (such as 10.0.0.0/8)."
            ) from None
    return networks


def proxy_ssl_header(name: str) -> tuple[str, str] | None:
    """Django's form of the header a TLS proxy sets, from its HTTP name (X-Forwarded-Proto)."""
    header = os.environ.get(name, "").strip()
    if not header:
        return None
    if not re.fullmatch(r"[A-Za-z0-9-]+", header):
        raise ImproperlyConfigured(
            f"{name}={header!r} is not a header name; write one such as X-Forwarded-Proto."
        )
    return "HTTP_" + header.upper().replace("-", "_"), "https"


def _redacted(url: str) -> str:
    """Error messages end up in logs, so they show the URL without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


# SQLite lets one connection write at a time. A transaction that began by reading and then
# writes cannot wait for the lock without risking a deadlock, so SQLite fails it at once with
# "database is locked". Beginning every transaction IMMEDIATE takes the write lock first,
# which the busy timeout then waits for: concurrent writers queue instead of failing, and an
# optimistic check inside a transaction (a policy's latest version) sees the last committed
# write. Write-ahead logging lets readers go on while one connection writes.
SQLITE_OPTIONS: dict[str, Any] = {
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
}


def database_from_url(url: str) -> dict[str, Any]:
    """Turn a DATABASE_URL into a Django DATABASES entry.

    Written against urllib.parse rather than a helper package so the dashboard
    keeps a short dependency list; only the two backends it supports are
    accepted, and anything else fails at start-up rather than at first query.

    Relative SQLite paths (sqlite:///name.db) are taken from the repository
    root so the result does not depend on the directory a command ran from;
    absolute ones need four slashes (sqlite:////var/lib/jaato/db.sqlite3).
    """
    url = url.strip()
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    shown = _redacted(url)

    if scheme == "sqlite":
        if parts.netloc:
            raise ImproperlyConfigured(
                f"DATABASE_URL {shown!r}: a SQLite URL has no host; "
                "write sqlite:///relative/path.db or sqlite:////absolute/path.db."
            )
        raw_path = unquote(parts.path)[1:]  # drop the slash that separates host and path
        if not raw_path:
            raise ImproperlyConfigured(f"DATABASE_URL {shown!r} names no SQLite file.")
        name: str | Path = raw_path if raw_path == ":memory:" else BASE_DIR / raw_path
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": name,
            "OPTIONS": dict(SQLITE_OPTIONS),
        }

    if scheme in {"postgres", "postgresql"}:
        try:
            port = parts.port
        except ValueError as exc:
            raise ImproperlyConfigured(f"DATABASE_URL {shown!r} has an invalid port.") from exc
        db_name = unquote(parts.path.lstrip("/"))
        if not db_name:
            raise ImproperlyConfigured(
                f"DATABASE_URL {shown!r} names no database; "
                "write postgres://user:password@host:5432/name."
            )
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": db_name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": unquote(parts.hostname or ""),
            "PORT": str(port) if port is not None else "",
            "OPTIONS": dict(parse_qsl(parts.query)),
        }

    raise ImproperlyConfigured(
        f"DATABASE_URL scheme {parts.scheme!r} is not supported; "
        "use postgres://, postgresql:// or sqlite:///."
    )


# --- Core -------------------------------------------------------------------

# Defaults favour a developer's first run; deployments switch DEBUG off.
DEBUG = env_bool("DJANGO_DEBUG", default=True)

_secret_key = os.environ.get("DJANGO_SECRET_KEY", "")
if not _secret_key:
    if not DEBUG:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is false; "
            'generate one with: python -c "import secrets; print(secrets.token_urlsafe(50))"'
        )
    _secret_key = "django-insecure-local-development-only-never-use-in-production"
SECRET_KEY = _secret_key

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    # Before django_tasks_db: its db_worker command replaces the package's own with one that
    # keeps leases on the work it runs (jaato_web/dashboard/management/commands/db_worker.py).
    "jaato_web.dashboard",
    "django_tasks_db",
    "ninja",
    "jaato_web.teams",
    "jaato_web.review",
    "jaato_web.pages",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "jaato_web.api.middleware.ApiErrorsInJsonMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "jaato_web.api.middleware.ApiBodyCheckMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "jaato_web.pages.middleware.PagesLoginRequiredMiddleware",
    "jaato_web.pages.middleware.NoProjectMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "jaato_web.urls"
WSGI_APPLICATION = "jaato_web.wsgi.application"
ASGI_APPLICATION = "jaato_web.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "jaato_web.pages.context_processors.projects",
                "jaato_web.pages.context_processors.background",
            ],
        },
    },
]

# --- Database ---------------------------------------------------------------

DATABASES = {
    "default": database_from_url(
        os.environ.get("DATABASE_URL", "").strip() or "sqlite:///db.sqlite3"
    )
}
# On PostgreSQL each process keeps its connections open in a pool rather than opening one per
# request (a new server process each time): the pool hands a request a connection already
# signed in and gets it back when the request ends. Django's own persistent connections
# (CONN_MAX_AGE) are per thread, and the ASGI server runs each request on a thread of its own,
# so they would pile up instead. On by default when DEBUG is off; JAATO_DB_POOL_SIZE bounds the
# connections a process holds (a request waits for one when all are busy).
if env_bool("JAATO_DB_POOL", default=not DEBUG) and DATABASES["default"]["ENGINE"].endswith(
    "postgresql"
):
    DATABASES["default"]["OPTIONS"]["pool"] = {
        "min_size": 1,
        "max_size": env_int("JAATO_DB_POOL_SIZE", 8),
        "timeout": 30,
    }
    # A connection is checked (one empty round trip) before a request gets it, so a database
    # server restarted under the pool costs a reconnection, not an error.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True

# --- Background tasks -------------------------------------------------------

# Long work (GC runs) goes through django.tasks. With the database backend a
# task is a row that `manage.py db_worker` processes claim and run; with the
# immediate backend it runs inside the request that enqueues it.
_TASK_BACKENDS = {
    "database": "django_tasks_db.DatabaseBackend",
    "immediate": "django.tasks.backends.immediate.ImmediateBackend",
}
_task_backend = os.environ.get("JAATO_TASK_BACKEND", "").strip().lower() or "database"
if _task_backend not in _TASK_BACKENDS:
    raise ImproperlyConfigured(
        f"JAATO_TASK_BACKEND={_task_backend!r} is not a task backend; "
        f"use one of {sorted(_TASK_BACKENDS)}."
    )
TASKS = {"default": {"BACKEND": _TASK_BACKENDS[_task_backend]}}
# A worker holds an upload, run or replay it works on for this long and renews the hold four
# times as often; when it stops renewing (killed, or its machine gone) another worker tries
# the work once more after this long, then marks it failed. The pages say no worker is
# running when none has been seen for this long.
JAATO_TASK_LEASE_SECONDS = env_int("JAATO_TASK_LEASE_SECONDS", 60)
if JAATO_TASK_LEASE_SECONDS < 1:
    raise ImproperlyConfigured("JAATO_TASK_LEASE_SECONDS must be at least 1.")

# --- Accounts ---------------------------------------------------------------

LOGIN_URL = "sign_in"
LOGIN_REDIRECT_URL = "home"
# A signed-in browser stays signed in for two weeks of inactivity at most.
SESSION_COOKIE_AGE = env_int("JAATO_SESSION_AGE_SECONDS", 60 * 60 * 24 * 14)
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"

# --- Passwords, i18n --------------------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Sessions and GC ----------------------------------------------------------

# Uploads above this size are refused with 413 before anything is read or stored.
JAATO_UPLOAD_MAX_BYTES = env_int("JAATO_UPLOAD_MAX_BYTES", 50 * 1024 * 1024)
# The key of the provider that writes summaries, for projects whose admin set no key of their
# own (never shown, exported or logged).
JAATO_GC_PROVIDER_API_KEY = os.environ.get("JAATO_GC_PROVIDER_API_KEY", "").strip()
# Uploads up to this size are read during the request (errors come back at once); larger
# ones are read by the background worker while the page shows progress.
JAATO_INLINE_INGEST_BYTES = env_int("JAATO_INLINE_INGEST_BYTES", 2 * 1024 * 1024)
# Run the project's default policy on every new upload.
JAATO_GC_ON_UPLOAD = env_bool("JAATO_GC_ON_UPLOAD", default=True)
# Django refuses request bodies above this before our own check could give a clear answer.
DATA_UPLOAD_MAX_MEMORY_SIZE = JAATO_UPLOAD_MAX_BYTES + 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

# --- Static files -----------------------------------------------------------

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
# The app serves its own static files (WhiteNoise), so a deployment needs no separate file
# server. While debugging they come straight from the source folders; otherwise from
# `manage.py collectstatic`'s output, each under a name carrying its content's hash (cached
# for a year, as nothing else is ever served under that name) and stored gzip- and
# Brotli-compressed beside the original.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG
WHITENOISE_KEEP_ONLY_HASHED_FILES = True

# --- Security ---------------------------------------------------------------

# Everything the pages load comes from this origin; the only scripts and style
# blocks allowed inline are the ones a template stamps with the request nonce.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF, CSP.NONCE],
    "img-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
}

X_FRAME_OPTIONS = "DENY"

# A TLS-terminating proxy that forwards plain HTTP would loop on this redirect;
# such deployments switch it off and let the proxy redirect instead.
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", default=not DEBUG)

# --- Behind a TLS proxy ------------------------------------------------------

# The header a TLS-terminating proxy sets on every request it forwards (overwriting any the
# client sent), whose value "https" says the client came over TLS. Unset: only the
# connection the app itself received counts, which is plain HTTP behind such a proxy.
SECURE_PROXY_SSL_HEADER = proxy_ssl_header("DJANGO_SECURE_PROXY_SSL_HEADER")
# Origins (https://gc.example.com) whose forms and API calls pass the CSRF check although
# they are not the dashboard's own host as the request names it.
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])
# The proxies in front of the app, as addresses or networks. A request from one of them is
# counted for the client its X-Forwarded-For names (the sign-in throttle's address); from
# anywhere else that header is the client's own to forge, and only the connection counts.
JAATO_TRUSTED_PROXIES = env_networks("JAATO_TRUSTED_PROXIES")
# Health probes come over plain HTTP from inside the host or container, never redirected.
SECURE_REDIRECT_EXEMPT = [r"^api/health$"]

if not DEBUG:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = 60 * 60 * 24 * 365
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_REFERRER_POLICY = "same-origin"
    SECURE_CONTENT_TYPE_NOSNIFF = True

# --- Logging ----------------------------------------------------------------

# Console only: the process manager or container runtime owns log files.
LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "{asctime} {levelname} {name}: {message}", "style": "{"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain"},
    },
    "root": {"handlers": ["console"], "level": "INFO"},
    "loggers": {
        # Replaces Django's defaults (console only under DEBUG, mail to admins)
        # so production errors reach the console and development sees no duplicates.
        "django": {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}
