"""NUL characters (``\\x00``) everywhere text goes in: real tool output holds them.

PostgreSQL refuses NUL in text columns and ``\\u0000`` in ``jsonb``; the CI leg that runs these
tests with ``DATABASE_URL`` on PostgreSQL is the one that matters. A session whose tool output
holds NUL is stored, shown, searched and exported unchanged, read during the request or in the
background; and every text input there is (each form field of every page, each string of every
API operation's body, query and form, each string argument of every agent tool), found by
walking the pages, the OpenAPI document and the tools' schemas so that a new input is covered
without a list to keep, answers NUL with what it stored or a 4xx naming the field: never 500.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Awaitable, Callable, Iterator
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import Client
from django.urls import reverse
from mcp import Client as McpClient
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

import gcengine
from jaato_web.api import api
from jaato_web.dashboard import background
from jaato_web.dashboard.models import (
    AgentSession,
    AuditAction,
    AuditEvent,
    GCRun,
    IngestJob,
    Project,
    StashedSegment,
)
from jaato_web.dashboard.storage.text import (
    ESCAPE,
    ESCAPED_NUL,
    escape_nul,
    unescape_nul,
)
from jaato_web.mcp.http import mcp_server
from tests.event_loops import run_async
from tests.web.conftest import Caller
from tests.web.test_permission_walk import (  # noqa: F401  (world is a fixture)
    BODIES,
    FILES,
    QUERIES,
    Route,
    World,
    walk_routes,
    world,
)

NUL = "nul\x00here"


@pytest.fixture
def walked(world: World) -> World:  # noqa: F811  (the walk's fixture, imported above)
    """The permission walk's world: a project with one of everything, and a second project."""
    return world


# Well over a collection's target on the demo's window: the run stashes a good part of it.
REACHABILITY = {
    "type": "gc_reachability",
    "threshold_percent": 30,
    "target_percent": 20,
    "preserve_recent_turns": 3,
}


# --- The escape ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["", "plain", "\x00", "a\x00b\x00", ESCAPE, ESCAPE + ESCAPED_NUL, "\x00" + ESCAPE * 3]
)
def test_the_escape_is_undone_exactly_and_leaves_no_nul(text: str) -> None:
    escaped = escape_nul(text)

    assert "\x00" not in escaped
    assert unescape_nul(escaped) == text


def test_a_text_holds_a_pattern_exactly_when_their_escapes_do() -> None:
    texts = ["x\x00y", "x" + ESCAPE + "y", "\x00\x00", "xy", ESCAPE + ESCAPED_NUL]
    patterns = ["\x00", "x\x00", ESCAPE, "\x00\x00", "y", ESCAPE + ESCAPED_NUL]
    for text in texts:
        for pattern in patterns:
            assert (escape_nul(pattern) in escape_nul(text)) == (pattern in text), (text, pattern)


@pytest.mark.django_db
def test_text_cut_to_its_column_keeps_no_half_code(project: Project) -> None:
    """A text that fit its column may not once each NUL takes two characters: it is cut, as a
    preview is, at a whole code."""
    event = AuditEvent.objects.create(
        project=project, actor_name="x", action=AuditAction.PIN, target="a" + "\x00" * 299
    )

    event.refresh_from_db()
    assert event.target == "a" + "\x00" * 149  # 1 + 2 x 149 of the column's 300


# --- A session whose tool output holds NUL ---------------------------------------------------


def session_with_nul() -> tuple[bytes, list[str]]:
    """The demo session with a NUL-holding ``raw`` output in every tool result (the engine
    keeps a result as JSON, NUL written ``\\u0000``) and NUL in every text part (kept as is),
    and the tool outputs."""
    document = gcengine.generate_demo_session(gcengine.DemoShape(turns=40, seed=5))
    outputs = []
    for message in document["history"]:
        for part in message["parts"]:
            if part["type"] == "text":
                part["text"] += "\n\x00\x7fELF\x00 pasted binary"
            if part["type"] == "function_response" and isinstance(part["result"], dict):
                output = f"binary{len(outputs)}\x00\x00\x7fELF\x00tail"
                part["result"] = {"raw": output, **part["result"]}  # first: inside the clip
                outputs.append(output)
    return json.dumps(document).encode(), outputs


def _stored(client: Client, data: bytes, inline: bool, on_commit: Any) -> AgentSession:
    with on_commit(execute=True):  # the background read is queued when the upload commits
        answer = client.post("/api/sessions", {"file": SimpleUploadedFile("nul.json", data)})
    assert answer.status_code == (201 if inline else 202), answer.content
    if inline:
        return AgentSession.objects.get(pk=answer.json()["session"]["id"])
    job = IngestJob.objects.get(pk=answer.json()["job"]["id"])
    assert job.status == "done", job.error
    assert job.session is not None
    return job.session


@pytest.mark.django_db
@pytest.mark.parametrize("inline", [True, False], ids=["read-in-the-request", "in-the-background"])
def test_a_session_whose_tool_output_holds_nul_is_stored_shown_searched_and_exported(
    client: Client,
    project: Project,
    settings: Any,
    run_finished: Callable[..., GCRun],
    django_capture_on_commit_callbacks: Any,
    inline: bool,
) -> None:
    data, outputs = session_with_nul()
    # Uploads over JAATO_INLINE_INGEST_BYTES (2 MB unless set) are read by the worker.
    settings.JAATO_INLINE_INGEST_BYTES = len(data) + 1 if inline else len(data) // 2

    session = _stored(client, data, inline, django_capture_on_commit_callbacks)

    # Stored unchanged: the original byte for byte, and the engine's reading of it.
    assert client.get(f"/api/sessions/{session.pk}/original").content == data
    turns = client.get(f"/api/sessions/{session.pk}/turns?page=1")
    assert turns.status_code == 200
    # Shown: the session page and its history (the tool output is in the history's pages).
    page = client.get(reverse("session_detail", args=[session.pk]))
    assert page.status_code == 200
    history = json.loads(turns.content)
    texts = [
        part["text"]
        for turn in history["items"]
        for message in turn["messages"]
        for part in message["parts"]
        if part["type"] == "function_response"
    ]
    # The tool's output as the history shows it: its JSON, NUL written \u0000.
    assert json.dumps(outputs[0], ensure_ascii=False)[1:-1] in texts[0]
    # Searched: the sessions list, and the stash of a run that took the tool output.
    assert client.get(reverse("session_list"), {"q": "\x00"}).status_code == 200
    assert client.get("/api/sessions", {"search": "\x00"}).status_code == 200
    run = run_finished(session, config=REACHABILITY)
    found = client.get(f"/api/runs/{run.pk}/stash", {"q": "\x00\x7fELF"}).json()
    texts = dict(StashedSegment.objects.filter(run=run).values_list("segment_id", "text"))
    holding = sorted(i for i, text in texts.items() if "\x00\x7fELF" in text)
    assert holding  # the stash holds the NUL as it was said
    assert found["count"] == len(holding)
    assert {item["segment_id"] for item in found["items"]} <= set(holding)
    assert client.get(f"/api/runs/{run.pk}/stash", {"q": "no such\x00text"}).json()["count"] == 0
    stash_page = client.get(reverse("run_stash", args=[run.pk]), {"q": "\x00\x7fELF"})
    assert stash_page.status_code == 200
    assert found["items"][0]["segment_id"] in stash_page.content.decode()
    assert client.get(reverse("run_stash", args=[run.pk]), {"anchor": "\x00"}).status_code == 200
    # Exported unchanged: what the run kept, with its NUL.
    exported = client.get(f"/api/runs/{run.pk}/session")
    kept = json.loads(exported.content)
    kept_outputs = [
        part["result"]["raw"]
        for message in kept["history"]
        for part in message["parts"]
        if part["type"] == "function_response" and "raw" in part.get("result", {})
    ]
    assert kept_outputs
    assert set(kept_outputs) <= set(outputs)


@pytest.mark.django_db
def test_a_gc_json_whose_plugin_config_holds_nul_is_stored_and_exported_unchanged(
    client: Client, project: Project
) -> None:
    # The escape character itself must come back as it was too.
    note = f"{NUL} {ESCAPE}{ESCAPED_NUL} {ESCAPE}"
    config = {"type": "budget", "threshold_percent": 80, "plugin_config": {"note": note}}

    created = client.post(
        "/api/policies", {"name": "with nul", "config": config}, content_type="application/json"
    )

    assert created.status_code == 201, created.content
    assert created.json()["latest"]["config"]["plugin_config"] == {"note": note}
    exported = client.get(f"/api/policies/{created.json()['id']}/versions/1/gc.json")
    # The export adds the policy's rules, for JAATO's plugin of the engine's.
    assert json.loads(exported.content)["plugin_config"] == {"note": note, "rules": "engine"}


# --- Every text input: the API ---------------------------------------------------------------


def _deref(schema: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    target: Any = document
    for part in ref.lstrip("#/").split("/"):
        target = target[part]
    return _deref(target, document)


def string_paths(
    schema: dict[str, Any], document: dict[str, Any], path: tuple[Any, ...] = ()
) -> Iterator[tuple[Any, ...]]:
    """Where a string may go in a value of ``schema``: keys, and ``0`` for an array's item."""
    schema = _deref(schema, document)
    options = schema.get("anyOf") or schema.get("oneOf") or schema.get("allOf")
    if options:
        seen: set[tuple[Any, ...]] = set()
        for option in options:
            for found in string_paths(option, document, path):
                if found not in seen:
                    seen.add(found)
                    yield found
        return
    kind = schema.get("type")
    if kind == "string" or "enum" in schema:
        yield path
    elif kind == "array" and "items" in schema:
        yield from string_paths(schema["items"], document, (*path, 0))
    elif kind == "object" or "properties" in schema:
        for name, inner in schema.get("properties", {}).items():
            yield from string_paths(inner, document, (*path, name))
        if schema.get("additionalProperties") not in (None, False):
            yield (*path, NUL)  # a free object: a key with NUL, holding NUL


def with_nul(body: Any, path: tuple[Any, ...]) -> Any:
    """``body`` with NUL text at ``path``, made where the body has nothing there."""
    if not path:
        return NUL
    head, rest = path[0], path[1:]
    if head == 0:
        items = list(body) if isinstance(body, list) and body else [None]
        items[0] = with_nul(items[0], rest)
        return items
    value = dict(body) if isinstance(body, dict) else {}
    value[head] = with_nul(value.get(head), rest)
    return value


def api_inputs(walked: World) -> Iterator[tuple[Route, str, dict[str, Any], str]]:
    """Each (route, where, request, label) with NUL in one string input of an API route."""
    document = api.get_openapi_schema()
    routes, _ = walk_routes()
    ids = walked.a.ids("admin")
    for route in routes:
        if not route.kind.endswith("api"):
            continue
        operation = _operation(document, route)
        if operation is None:
            continue
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "query" and list(string_paths(parameter["schema"], document)):
                yield route, "query", {parameter["name"]: NUL}, parameter["name"]
        content = operation.get("requestBody", {}).get("content", {})
        if "application/json" in content and route.name in BODIES:
            schema = content["application/json"]["schema"]
            for path in string_paths(schema, document):
                body = with_nul(copy.deepcopy(BODIES[route.name](ids)), path)
                yield route, "json", body, ".".join(map(str, path))
        if "multipart/form-data" in content and route.name in FILES:
            schema = _deref(content["multipart/form-data"]["schema"], document)
            for name, inner in schema.get("properties", {}).items():
                if _deref(inner, document).get("format") == "binary":
                    continue
                if list(string_paths(inner, document)):
                    yield route, "form", {name: NUL}, name


def _operation(document: dict[str, Any], route: Route) -> dict[str, Any] | None:
    path = "/api/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route.route.removeprefix("api/"))
    operations = document["paths"].get(path.rstrip("/")) or document["paths"].get(path)
    if operations is None:
        return None
    return operations.get(route.method.lower())


def _send(client: Client, route: Route, ids: dict[str, Any], where: str, data: Any) -> Any:
    url = reverse(route.name, kwargs={k: ids[k] for k in route.kwargs})
    query = QUERIES.get(route.name)
    query_string = query(ids) if query else ""
    if where == "query":
        query_string = "&".join(filter(None, [query_string, urlencode(data)]))
    if query_string:
        url = f"{url}?{query_string}"
    with transaction.atomic():
        if where == "json":
            answer = client.generic(
                route.method, url, json.dumps(data), content_type="application/json"
            )
        elif where == "form":
            answer = client.post(url, {**FILES[route.name](), **data})
        elif route.method == "GET":
            answer = client.get(url)
        elif route.name in BODIES:
            body = json.dumps(BODIES[route.name](ids))
            answer = client.generic(route.method, url, body, content_type="application/json")
        elif route.name in FILES:
            answer = client.post(url, FILES[route.name]())
        else:
            answer = client.generic(route.method, url)
        transaction.set_rollback(True)
    return answer


def _admin(walked: World) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(walked.a.members["admin"])
    return client


def test_every_string_the_api_takes_answers_nul_without_a_server_error(walked: World) -> None:
    client = _admin(walked)
    ids = walked.a.ids("admin")
    covered, failures = [], []
    for route, where, data, label in api_inputs(walked):
        answer = _send(client, route, ids, where, data)
        covered.append(f"{route} {where} {label}")
        if answer.status_code >= 500:
            failures.append(f"{route} {where} {label}: {answer.status_code}")
        elif answer.status_code >= 400 and "json" in answer.get("Content-Type", ""):
            assert answer.json().get("detail"), f"{route} {where} {label}: no detail"
    assert len(covered) > 60, covered  # the walk found the API's inputs
    assert failures == [], "\n".join(failures)


# --- Every text input: the pages -------------------------------------------------------------

TEXT_INPUTS = {"text", "search", "hidden", "number", "email", "url", "password", "textarea"}


class _Forms(HTMLParser):
    """The forms of a page: action, method and every field with its value as served."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, Any]] = []
        self._in_textarea: dict[str, Any] | None = None
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append(
                {
                    "action": a.get("action") or a.get("hx-post") or a.get("hx-get") or "",
                    "method": "get"
                    if (a.get("method", "get").lower() == "get" and "hx-post" not in a)
                    else "post",
                    "fields": [],
                }
            )
        elif not self.forms or "name" not in a or "disabled" in a:
            return
        elif tag == "input":
            kind = a.get("type", "text").lower()
            if kind in ("checkbox", "radio") and "checked" not in a:
                return
            if kind in ("submit", "button", "file", "image", "reset"):
                return
            self.forms[-1]["fields"].append([a["name"], kind, a.get("value", "")])
        elif tag == "textarea":
            self._in_textarea = {"field": [a["name"], "textarea", ""]}
            self.forms[-1]["fields"].append(self._in_textarea["field"])
        elif tag == "select":
            self._select = a["name"]
            self.forms[-1]["fields"].append([a["name"], "select", None])
        if tag == "option" and self._select is not None:
            field = self.forms[-1]["fields"][-1]
            if field[2] is None or "selected" in a:
                field[2] = a.get("value", "")

    def handle_data(self, data: str) -> None:
        if self._in_textarea is not None:
            self._in_textarea["field"][2] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea":
            self._in_textarea = None
        elif tag == "select":
            self._select = None


def page_inputs(client: Client, walked: World) -> Iterator[tuple[str, str, str, dict[str, Any]]]:
    """Each (page, form action, field, form data with NUL in the field), once per field."""
    routes, _ = walk_routes()
    ids = walked.a.ids("admin")
    seen: set[tuple[str, str, str]] = set()
    for route in routes:
        if route.kind != "page" or route.method != "GET":
            continue
        url = reverse(route.name, kwargs={k: ids[k] for k in route.kwargs})
        query = QUERIES.get(route.name)
        page = client.get(f"{url}?{query(ids)}" if query else url)
        if page.status_code != 200 or "html" not in page.get("Content-Type", ""):
            continue
        parser = _Forms()
        parser.feed(page.content.decode())
        for form in parser.forms:
            action = form["action"] or url
            for name, kind, _value in form["fields"]:
                if kind not in TEXT_INPUTS or name == "csrfmiddlewaretoken":
                    continue
                key = (form["method"], re.sub(r"\d+", "N", action.split("?")[0]), name)
                if key in seen:
                    continue
                seen.add(key)
                data: dict[str, Any] = {}
                for other, _kind, value in form["fields"]:
                    data.setdefault(other, []).append(value or "")
                data[name] = [NUL]
                yield route.name, f"{form['method'].upper()} {action}", name, data


def test_every_form_field_of_every_page_answers_nul_without_a_server_error(
    walked: World,
) -> None:
    client = _admin(walked)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    covered, failures = [], []
    for page, target, name, data in page_inputs(client, walked):
        method, action = target.split(" ", 1)
        with transaction.atomic():
            answer = client.get(action, data) if method == "GET" else client.post(action, data)
            transaction.set_rollback(True)
        client.cookies[settings.SESSION_COOKIE_NAME] = cookie  # a sign-out form signs out
        covered.append(f"{page}: {target} {name}")
        if answer.status_code >= 500:
            failures.append(f"{page}: {target} {name}: {answer.status_code}")
    assert len(covered) > 40, covered  # the walk found the pages' forms
    assert failures == [], "\n".join(failures)


# --- Every text input: the agent tools -------------------------------------------------------


def _tool_calls(session: AgentSession, run: GCRun) -> Iterator[tuple[str, str, dict[str, Any]]]:
    async def tools() -> Any:
        async with McpClient(mcp_server()) as client:
            return (await client.list_tools()).tools

    for tool in run_async(tools):
        schema = tool.input_schema
        base: dict[str, Any] = {}
        properties = schema.get("properties", {})
        if "session_id" in properties:
            base["session_id"] = session.pk
        if "run_id" in properties:
            base = {"run_id": run.pk}
        if "threshold_percent" in properties:  # configuring needs a setting to change
            base["threshold_percent"] = 85
        for path in string_paths(schema, schema):
            label = ".".join(map(str, path))
            if path[0] in ("session_id", "run_id"):
                yield tool.name, label, with_nul({}, path)
            elif path[0] == "messages":  # inline messages, instead of a stored session
                said = [{"role": "user", "content": NUL}, {"role": "assistant", "content": "ok"}]
                yield tool.name, "messages.content", {"messages": said}
            else:
                yield tool.name, label, with_nul(base, path)


@pytest.mark.django_db(transaction=True)
def test_every_string_an_agent_tool_takes_answers_nul_as_a_tool_answer(
    editor: Caller, project: Project, default_policy: Any, run_finished: Callable[..., GCRun]
) -> None:
    data, _ = session_with_nul()
    receipt = background.session_upload(project=project, filename="nul.json", data=data)
    assert receipt.session is not None
    run = run_finished(receipt.session, config=REACHABILITY)
    covered, failures = [], []

    def call(name: str, arguments: dict[str, Any]) -> Callable[[], Awaitable[Any]]:
        async def run() -> Any:
            token = AccessToken(token=editor.secret, client_id="test", scopes=[])
            auth_context_var.set(AuthenticatedUser(token))
            async with McpClient(mcp_server(), raise_exceptions=True) as client:
                return await client.call_tool(name, arguments)

        return run

    for name, label, arguments in _tool_calls(receipt.session, run):
        covered.append(f"{name} {label}")
        try:
            result = run_async(call(name, arguments))
        except Exception as error:  # a crash instead of the tool's answer
            failures.append(f"{name} {label}: {type(error).__name__}: {error}")
            continue
        if result.is_error and result.structured_content:
            status = result.structured_content.get("error", {}).get("status", 0)
            if status >= 500:
                failures.append(f"{name} {label}: {result.structured_content}")
    assert len(covered) > 15, covered
    assert failures == [], "\n".join(failures)
