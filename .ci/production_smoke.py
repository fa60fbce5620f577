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
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from live import (  # noqa: E402
    Browser,
    LiveFailure,
    Server,
    check,
    csrf_token,
    drop_database,
    end_server,
    fresh_database,
    make_token,
    multipart,
    sign_in,
    start_server,
    static_file,
    step,
    stop_server,
    wait_until,
)

from gcengine.synthetic import SessionShape, generate_session_file  # noqa: E402

SMOKE_DATABASE = "jaato_production_smoke"
TASK_SECONDS = 120
# schemathesis: each run ends when every operation has had its coverage cases (the schema's
# boundary values) and this many generated ones, never at a time limit (with one it starts
# over until the time is up, so what a run checks would depend on the machine's speed).
# With a token every operation does its work; without one each is refused at once, so
# fewer cases show all the refusals.
FUZZ_EXAMPLES = {True: 25, False: 8}
SCHEMATHESIS_HOOKS = ROOT / ".ci" / "schemathesis_hooks.py"
HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


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


def operations(server: Server) -> set[str]:
    """Every operation of the live OpenAPI, named as schemathesis names them: "GET /api/health"."""
    paths: dict[str, dict[str, Any]] = Browser(server.port).get("/api/openapi.json").json()["paths"]
    return {
        f"{method.upper()} {path}"
        for path, item in paths.items()
        for method in item
        if method in HTTP_METHODS
    }


def fuzz(server: Server, token: str | None, report: Path) -> None:
    """schemathesis over the live OpenAPI: no server error, every response as documented, and
    every error in JSON (``schemathesis_hooks.error_is_json``)."""
    who = "with a token" if token else "without a token"
    examples = FUZZ_EXAMPLES[token is not None]
    command = [
        str(ROOT / ".venv" / "bin" / "schemathesis"),
        "run",
        f"http://127.0.0.1:{server.port}/api/openapi.json",
        "--checks",
        "not_a_server_error,response_schema_conformance,content_type_conformance,error_is_json",
        "--max-examples",
        str(examples),
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
        "--continue-on-failure",
        "--no-color",
    ]
    if token:
        command += ["--header", f"Authorization: Bearer {token}"]
    step(f"schemathesis {who} (coverage cases, then {examples} examples per operation)")
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
    # A run bounded by examples ends when each operation has had its cases: all must have.
    cases = ElementTree.parse(report).getroot().iter("testcase")
    tested = {case.get("name") for case in cases if case.find("skipped") is None}
    expected = operations(server)
    check(not expected - tested, f"schemathesis {who} left untested: {sorted(expected - tested)}")
    step(
        f"schemathesis {who}: all {len(expected)} operations tested, no failure,"
        f" in {time.monotonic() - started:.0f} s"
    )


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
    passed = False
    started = time.monotonic()
    try:
        server = start_server(fresh_database(postgres, SMOKE_DATABASE), workdir / "server.log")
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
        passed = True
    except LiveFailure as failure:
        print(f"smoke FAILED: {failure}", file=sys.stderr)
        status = 1
    finally:
        if server is not None and not options.keep:
            end_server(server)
        if status and (workdir / "server.log").exists():
            print("smoke: the server's log:", file=sys.stderr)
            print((workdir / "server.log").read_text(errors="replace")[-20000:], file=sys.stderr)
        if not options.keep:
            drop_database(postgres, SMOKE_DATABASE)
        if passed:  # the server's log and schemathesis's reports matter only after a failure
            shutil.rmtree(workdir)
    return status


if __name__ == "__main__":
    sys.exit(main())
