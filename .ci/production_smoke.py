"""The production smoke: the documented production command, used as a person and an agent would.

Starts ``./dev production`` on a loopback port with ``DJANGO_DEBUG=0`` on a fresh PostgreSQL
database (beside the one ``JAATO_TEST_POSTGRES_URL`` names) with two web processes and a task
worker, as if behind a TLS proxy (every request carries ``X-Forwarded-Proto: https``). Then it
signs in, reads a static file, uploads a session, runs GC through the worker, reads the run
page, makes an API token, calls ``/mcp`` with and without it, and runs schemathesis over the
live OpenAPI with the token and without. Finally it stops the server with SIGTERM and expects
every process gone. Any failure stops it with a message and a non-zero exit; the server's log
is printed then.

    .venv/bin/python .ci/production_smoke.py          # JAATO_TEST_POSTGRES_URL must be set
    .venv/bin/python .ci/production_smoke.py --keep   # leave the server running for a look
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
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import psycopg

from gcengine.synthetic import SessionShape, generate_session_file

ROOT = Path(__file__).resolve().parents[1]
SMOKE_DATABASE = "jaato_production_smoke"
START_SECONDS = 240  # collectstatic and migrations on a fresh database, on a busy machine
TASK_SECONDS = 120
STOP_SECONDS = 90
# schemathesis: bounded so the whole smoke stays within a few minutes.
FUZZ_EXAMPLES = "8"
FUZZ_SECONDS = "240"
SCHEMATHESIS_HOOKS = ROOT / ".ci" / "schemathesis_hooks.py"


class SmokeFailure(Exception):
    pass


def step(text: str) -> None:
    print(f"smoke: {text}", flush=True)


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SmokeFailure(what)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def fresh_database(url: str) -> str:
    """A new, empty database beside the one ``url`` names; its URL."""
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {SMOKE_DATABASE}")
        connection.execute(f"CREATE DATABASE {SMOKE_DATABASE}")
    return with_database(url, SMOKE_DATABASE)


def drop_database(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {SMOKE_DATABASE} WITH (FORCE)")


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
    raise SmokeFailure(f"{what}: not within {seconds:.0f} s")


# --- The server ----------------------------------------------------------------------------------


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    port: int
    log: Path
    password: str


def start_server(database_url: str, log: Path) -> Server:
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
    }
    command = ["bash", str(ROOT / "dev"), "production", f"127.0.0.1:{port}"]
    command += ["--workers", "2", "--task-workers", "1"]
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
            raise SmokeFailure(f"the production command exited with status {process.returncode}")
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


def stop_server(server: Server) -> None:
    step("stopping the server with SIGTERM")
    server.process.send_signal(signal.SIGTERM)
    try:
        status = server.process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        server.process.kill()
        raise SmokeFailure(f"the server did not stop within {STOP_SECONDS} s of SIGTERM") from None
    check(status == 0, f"the server exited with status {status} after SIGTERM")
    log = server.log.read_text(errors="replace")
    check("serve: SIGTERM received; stopping" in log, "the supervisor did not report the stop")
    try:
        Browser(server.port).get("/api/health")
    except OSError:
        return
    raise SmokeFailure("something still answers on the port after the server stopped")


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


def upload(browser: Browser) -> int:
    page = browser.get("/sessions/upload/")
    check(page.status == 200, f"the upload page answered {page.status}")
    project = re.search(r'<option value="(\d+)" selected', page.text)
    check(project is not None, "the upload page offers no project")
    assert project is not None
    shape = SessionShape(turns=120, user_chars=400, model_chars=600, tool_every=3, seed=20)
    data = json.dumps(generate_session_file(shape)).encode()
    body, content_type = multipart(
        {"csrfmiddlewaretoken": csrf_token(page), "project": project[1]},
        {"files": ("smoke-session.json", data)},
    )
    answer = browser.request("POST", "/sessions/upload/", body, {"Content-Type": content_type})
    check(answer.status == 200, f"the upload answered {answer.status}: {answer.text[:300]}")
    stored = re.search(r'href="/sessions/(\d+)/"', answer.text)
    check(stored is not None, "the upload page links no stored session")
    assert stored is not None
    step(f"uploaded smoke-session.json through the page: session {stored[1]}")
    return int(stored[1])


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


def run_gc(browser: Browser, token: str, session_id: int) -> int:
    api = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    config = {"type": "gc_truncate", "threshold_percent": 0.01, "target_percent": 0.005}
    started = browser.request(
        "POST", f"/api/sessions/{session_id}/runs", json.dumps({"config": config}).encode(), api
    )
    check(started.status == 202, f"starting a run answered {started.status}: {started.text[:300]}")
    run_id: int = started.json()["id"]

    def finished() -> dict[str, Any] | None:
        run: dict[str, Any] = browser.get(f"/api/runs/{run_id}", api).json()
        return run if run["status"] in {"done", "failed"} else None

    run = wait_until(f"run {run_id} finished by the task worker", TASK_SECONDS, finished)
    check(run["status"] == "done", f"run {run_id} failed: {run.get('error')}")
    step(f"GC run {run_id} done by the worker: {run['tokens_before']} -> {run['tokens_after']}")
    page = browser.get(f"/runs/{run_id}/")
    check(page.status == 200, f"the run page answered {page.status}")
    check("Removal ledger" in page.text or "ledger" in page.text, "the run page shows no ledger")
    static_file(browser, page)
    step(f"read the run page /runs/{run_id}/")
    return run_id


def call_mcp(browser: Browser, token: str, session_id: int) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    listing = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    refused = browser.request("POST", "/mcp", listing.encode(), headers)
    check(refused.status == 401, f"/mcp without a token answered {refused.status}")
    check("Bearer" in (refused.headers["WWW-Authenticate"] or ""), "/mcp's 401 has no challenge")
    with_token = {**headers, "Authorization": f"Bearer {token}"}
    tools = browser.request("POST", "/mcp", listing.encode(), with_token)
    check(tools.status == 200, f"/mcp tools/list answered {tools.status}: {tools.text[:300]}")
    names = {tool["name"] for tool in tools.json()["result"]["tools"]}
    check("context_analyze_usage" in names, f"/mcp lists {sorted(names)}")
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "context_analyze_usage", "arguments": {"session_id": session_id}},
    }
    answer = browser.request("POST", "/mcp", json.dumps(call).encode(), with_token)
    check(answer.status == 200, f"/mcp tools/call answered {answer.status}")
    result = answer.json()["result"]
    check(not result.get("isError"), f"context_analyze_usage failed: {result}")
    used = result["structuredContent"]["total_tokens"]
    step(f"/mcp: 401 without a token; with it, {len(names)} tools and {used} tokens in use")


def fuzz(server: Server, token: str | None, report: Path) -> None:
    """schemathesis over the live OpenAPI: no server error, every response as documented, and
    every error in JSON (``schemathesis_hooks.error_is_json``)."""
    who = "with a token" if token else "without a token"
    command = [
        str(ROOT / ".venv" / "bin" / "schemathesis"),
        "run",
        f"http://127.0.0.1:{server.port}/api/openapi.json",
        "--checks",
        "not_a_server_error,response_schema_conformance,content_type_conformance,error_is_json",
        "--max-examples",
        FUZZ_EXAMPLES,
        "--max-time",
        FUZZ_SECONDS,
        "--phases",
        "examples,coverage,fuzzing",
        "--seed",
        "20",
        "--workers",
        "2",
        "--no-shrink",
        "--generation-database",
        "none",
        "--request-timeout",
        "30",
        "--suppress-health-check",
        "all",
        "--header",
        "X-Forwarded-Proto: https",
        "--report",
        "junit",
        "--report-junit-path",
        str(report),
        # A token that revoked itself would leave the rest of the run unauthenticated.
        "--exclude-path-regex",
        r"^/tokens/\{",
        "--continue-on-failure",
        "--no-color",
    ]
    if token:
        command += ["--header", f"Authorization: Bearer {token}"]
    step(f"schemathesis {who} (at most {FUZZ_EXAMPLES} examples per operation)")
    started = time.monotonic()
    done = subprocess.run(
        command,
        cwd=ROOT,
        env={
            **os.environ,
            "SCHEMATHESIS_HOOKS": "schemathesis_hooks",
            "PYTHONPATH": str(SCHEMATHESIS_HOOKS.parent),
        },
        check=False,
    )
    check(done.returncode == 0, f"schemathesis {who} found failures (exit {done.returncode})")
    step(f"schemathesis {who}: no failure in {time.monotonic() - started:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="leave the server running")
    parser.add_argument("--no-fuzz", action="store_true", help="skip schemathesis")
    options = parser.parse_args()
    postgres = os.environ.get("JAATO_TEST_POSTGRES_URL", "")
    if not postgres:
        print("smoke: JAATO_TEST_POSTGRES_URL is not set; .ci/run sets it", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="jaato-smoke-"))
    server: Server | None = None
    status = 0
    started = time.monotonic()
    try:
        server = start_server(fresh_database(postgres), workdir / "server.log")
        browser = sign_in(server)
        session_id = upload(browser)
        token = make_token(browser)
        run_gc(browser, token, session_id)
        call_mcp(browser, token, session_id)
        if not options.no_fuzz:
            fuzz(server, token, workdir / "schemathesis-token.xml")
            fuzz(server, None, workdir / "schemathesis-anonymous.xml")
        if options.keep:
            step(f"the server keeps running on port {server.port} (pid {server.process.pid})")
            return 0
        stop_server(server)
        server = None
        step(f"passed in {time.monotonic() - started:.0f} s")
    except SmokeFailure as failure:
        print(f"smoke FAILED: {failure}", file=sys.stderr)
        status = 1
    finally:
        if server is not None and not options.keep:
            # SIGTERM, so the supervisor stops its children (each in a session of its own).
            server.process.send_signal(signal.SIGTERM)
            try:
                server.process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                server.process.kill()
                server.process.wait()
        if status and (workdir / "server.log").exists():
            print("smoke: the server's log:", file=sys.stderr)
            print((workdir / "server.log").read_text(errors="replace")[-20000:], file=sys.stderr)
        if not options.keep:
            drop_database(postgres)
    return status


if __name__ == "__main__":
    sys.exit(main())
