"""The production server on a loopback port, and a client that talks to it as a browser
behind the TLS proxy would: shared by the CI's production smoke and ``benchmarks/load.py``.

``start_server`` runs the documented production command (``./dev production``) with
``DJANGO_DEBUG=0`` on a fresh PostgreSQL database beside the one a URL names, as if behind a
TLS proxy on the same machine, and loads the demo (user ``demo``, with a password of its own).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import psycopg

ROOT = Path(__file__).resolve().parents[1]
START_SECONDS = 240  # collectstatic and migrations on a fresh database, on a busy machine
STOP_SECONDS = 90


class LiveFailure(Exception):
    """What a script expected of the live server and did not get."""


def step(text: str) -> None:
    print(f"live: {text}", flush=True)


def check(condition: bool, what: str) -> None:
    if not condition:
        raise LiveFailure(what)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def add_postgres_option(parser: argparse.ArgumentParser) -> None:
    """``--database-url``: the PostgreSQL server a benchmark makes its own database on."""
    parser.add_argument(
        "--database-url",
        default=os.environ.get("JAATO_TEST_POSTGRES_URL", ""),
        help="a PostgreSQL server's URL whose role may create databases "
        "(default: $JAATO_TEST_POSTGRES_URL)",
    )


def postgres_url(parser: argparse.ArgumentParser, options: argparse.Namespace) -> str:
    """The ``--database-url`` given, or the command line's usage error without one."""
    url: str = options.database_url
    if not url.startswith(("postgres://", "postgresql://")):
        parser.error("give --database-url postgresql://... (or set JAATO_TEST_POSTGRES_URL)")
    return url


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def fresh_database(url: str, database: str) -> str:
    """A new, empty database beside the one ``url`` names; its URL."""
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {database}")
        connection.execute(f"CREATE DATABASE {database}")
    return with_database(url, database)


def drop_database(url: str, database: str) -> None:
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


@dataclass
class Browser:
    """HTTP as a browser behind the TLS proxy sends it: the proxy's header, the page's own
    origin on every write, and the cookies (marked Secure, so kept by hand)."""

    port: int
    cookies: dict[str, str] = field(default_factory=dict)

    @property
    def origin(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        sent = {"X-Forwarded-Proto": "https", "Accept-Encoding": "identity", **(headers or {})}
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if method != "GET":
            sent.setdefault("Origin", self.origin)
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request(method, path, body=body, headers=sent)
            response = connection.getresponse()
            answer = Answer(response.status, response.headers, response.read())
        finally:
            connection.close()
        for cookie in answer.headers.get_all("Set-Cookie") or []:
            name, _, rest = cookie.partition("=")
            self.cookies[name] = rest.split(";", 1)[0]
        return answer

    def get(self, path: str, headers: dict[str, str] | None = None) -> Answer:
        return self.request("GET", path, headers=headers)

    def post_form(self, path: str, fields: dict[str, str]) -> Answer:
        return self.request(
            "POST",
            path,
            urlencode(fields).encode(),
            {"Content-Type": "application/x-www-form-urlencoded"},
        )


def csrf_token(page: Answer) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    check(found is not None, f"no CSRF token in the page (status {page.status})")
    assert found is not None
    return found[1]


def multipart(fields: dict[str, str], files: dict[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts: list[bytes] = []
    for name, value in fields.items():
        head = f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
        parts.append(f"{head}{value}\r\n".encode())
    for name, (filename, data) in files.items():
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
            f'filename="{filename}"\r\nContent-Type: application/json\r\n\r\n'
        )
        parts.append(head.encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def wait_until(what: str, seconds: float, probe: Any) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(1)
    raise LiveFailure(f"{what}: not within {seconds:.0f} s")


# --- The server ----------------------------------------------------------------------------------


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    port: int
    log: Path
    password: str


def start_server(
    database_url: str,
    log: Path,
    workers: int = 2,
    task_workers: int = 1,
    overrides: dict[str, str] | None = None,
) -> Server:
    """``./dev production`` on a free loopback port, once it answers, with the demo loaded;
    ``overrides`` adds to (or changes) the production settings it runs with."""
    port = free_port()
    password = secrets.token_urlsafe(12)
    env = {
        **os.environ,
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": database_url,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto",
        "JAATO_TRUSTED_PROXIES": "127.0.0.1",
        "JAATO_DEMO_PASSWORD": password,
        "JAATO_TASK_BACKEND": "database",
        **(overrides or {}),
    }
    command = ["bash", str(ROOT / "dev"), "production", f"127.0.0.1:{port}"]
    command += ["--workers", str(workers), "--task-workers", str(task_workers)]
    step(f"starting {' '.join(command[1:])} (DJANGO_DEBUG=0, PostgreSQL; log: {log})")
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    server = Server(process, port, log, password)

    def healthy() -> bool:
        if process.poll() is not None:
            raise LiveFailure(f"the production command exited with status {process.returncode}")
        try:
            return Browser(port).get("/api/health").status == 200
        except OSError:
            return False

    started = time.monotonic()
    wait_until("the server answering /api/health", START_SECONDS, healthy)
    step(f"the server answers on port {port} after {time.monotonic() - started:.0f} s")
    loaded = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "manage.py", "load_demo"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    check(loaded.returncode == 0, f"manage.py load_demo failed:\n{loaded.stdout}{loaded.stderr}")
    return server


def end_server(server: Server) -> None:
    """Stop the server however it is: SIGTERM first, so the supervisor stops its children
    (each in a session of its own), then SIGKILL."""
    if server.process.poll() is not None:
        return
    server.process.send_signal(signal.SIGTERM)
    try:
        server.process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


def stop_server(server: Server) -> None:
    step("stopping the server with SIGTERM")
    server.process.send_signal(signal.SIGTERM)
    try:
        status = server.process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        server.process.kill()
        raise LiveFailure(f"the server did not stop within {STOP_SECONDS} s of SIGTERM") from None
    check(status == 0, f"the server exited with status {status} after SIGTERM")
    log = server.log.read_text(errors="replace")
    check("serve: SIGTERM received; stopping" in log, "the supervisor did not report the stop")
    try:
        Browser(server.port).get("/api/health")
    except OSError:
        return
    raise LiveFailure("something still answers on the port after the server stopped")


# --- What a person and an agent do ---------------------------------------------------------------


def sign_in(server: Server) -> Browser:
    browser = Browser(server.port)
    form = browser.get("/accounts/sign-in/")
    check(form.status == 200, f"the sign-in page answered {form.status}")
    answer = browser.post_form(
        "/accounts/sign-in/",
        {"username": "demo", "password": server.password, "csrfmiddlewaretoken": csrf_token(form)},
    )
    check(answer.status == 302, f"signing in answered {answer.status}: {answer.text[:300]}")
    check("sessionid" in browser.cookies, "signing in set no session cookie")
    home = browser.get("/sessions/")
    check(home.status == 200, f"the sessions page answered {home.status}")
    check("demo-session.json" in home.text, "the sessions page does not list the demo session")
    step("signed in as demo through the page; the sessions page lists the demo session")
    return browser


def static_file(browser: Browser, page: Answer) -> None:
    found = re.search(r'href="(/static/css/app\.[0-9a-f]{12}\.css)"', page.text)
    check(found is not None, "the page names no hashed stylesheet")
    assert found is not None
    answer = browser.get(found[1], {"Accept-Encoding": "br, gzip"})
    check(answer.status == 200, f"{found[1]} answered {answer.status}")
    check(answer.headers["Content-Encoding"] in {"br", "gzip"}, "the stylesheet is not compressed")
    check("immutable" in answer.headers["Cache-Control"], "the stylesheet is not cached for good")
    step(
        f"static file {found[1]}: {answer.headers['Content-Encoding']}, "
        f"{answer.headers['Cache-Control']}"
    )


def make_token(browser: Browser) -> str:
    page = browser.get("/accounts/tokens/")
    check(page.status == 200, f"the tokens page answered {page.status}")
    projects = re.findall(r'name="projects" value="(\d+)"', page.text)
    check(bool(projects), "the tokens page offers no project")
    body = urlencode(
        [("csrfmiddlewaretoken", csrf_token(page)), ("name", "smoke")]
        + [("projects", p) for p in projects]
    ).encode()
    answer = browser.request(
        "POST", "/accounts/tokens/", body, {"Content-Type": "application/x-www-form-urlencoded"}
    )
    secret = re.search(r"jgc_[A-Za-z0-9_-]{20,}", answer.text)
    check(secret is not None, f"no token secret in the answer ({answer.status})")
    assert secret is not None
    step("made an API token on the tokens page")
    return secret[0]
