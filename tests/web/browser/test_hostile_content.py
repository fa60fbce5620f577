"""Hostile session content in Chromium: every page that shows it shows it as text.

Session files come from anywhere: an agent that read a web page carries that page's markup in
its tool results. This test uploads a session whose texts, tool names, arguments, results,
file name and model name are script and HTML payloads, collects it with a summarizing policy
(so summaries quote them), names a policy and its version message with payloads too, and then
visits every page that shows any of it, opening folded messages, tree nodes and ledger items.

No payload may run (``window.__pwned`` stays unset, no dialog opens), none may become markup
(no injected element or event-handler attribute in the DOM, no CSP violation), and each page
shows some payload as plain text.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import Dialog, Page, expect

from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import AgentSession, GCRun, IngestJob, JobStatus, Project
from jaato_web.review import services as review_services
from jaato_web.review.targets import Target
from jaato_web.teams import services as team_services
from jaato_web.teams.models import Membership
from tests.web.browser.page_log import PageLog
from tests.web.conftest import TIGHT_SUMMARIZE
from tests.web.uploads import session_file

pytestmark = pytest.mark.browser

SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=1">'
SVG = '"><svg onload="window.__pwned=1">'
QUOTE = '\'><iframe src="javascript:window.__pwned=1"></iframe>'
JS_URL = "javascript:window.__pwned=1"
TEMPLATE = "{{ 7|add:7 }} {% debug %} ${7*7} {{constructor.constructor('window.__pwned=1')()}}"
HTMX = '<div hx-get="/api/health" hx-trigger="load" hx-on::load="window.__pwned=1">htmx</div>'
CLOSERS = "</textarea></title></style></script><script>window.__pwned=1</script>"
PAYLOADS = [SCRIPT, IMG, SVG, QUOTE, JS_URL, TEMPLATE, HTMX, CLOSERS]
LONG_LINE = "A" * 20_000 + SCRIPT

FILE_NAME = '"><img src=x onerror="window.__pwned=1">.json'
MODEL = f"gpt-4{IMG}"
POLICY_NAME = f"{SVG} summarize"
VERSION_MESSAGE = f"{SCRIPT} {QUOTE}"
TOOL_NAME = "<img src=x onerror=window.__pwned=1>"
KEY = '<svg onload="window.__pwned=1">'

# What the DOM must not contain: elements a payload would have made, and any inline event
# handler (the dashboard's own markup has none: its CSP would refuse them).
INJECTED = """() => {
  const found = [];
  for (const element of document.querySelectorAll("*")) {
    for (const attribute of element.getAttributeNames()) {
      if (attribute.startsWith("on") || attribute.startsWith("hx-on")) {
        found.push(element.tagName + "[" + attribute + "]");
      }
    }
  }
  for (const element of document.querySelectorAll("img[src='x'], iframe, a[href^='javascript:']")) {
    found.push(element.outerHTML.slice(0, 80));
  }
  for (const script of document.querySelectorAll("script")) {
    if (script.textContent.includes("__pwned")) found.push("script: " + script.textContent);
  }
  if (document.querySelector("[hx-get='/api/health']")) found.push("htmx element");
  return found;
}"""


def hostile_session() -> bytes:
    """A generated session whose every text, tool name, argument and result is hostile."""
    document = json.loads(session_file(30, model=MODEL))
    payloads = iter(PAYLOADS * 100)
    for message in document["history"]:
        for part in message["parts"]:
            if part["type"] == "text":
                part["text"] = f"{next(payloads)} Decided to keep {next(payloads)}. {part['text']}"
            elif part["type"] == "function_call":
                part["name"] = TOOL_NAME
                part["args"] = {KEY: JS_URL, "path": next(payloads), "limit": 3}
            elif part["type"] == "function_response":
                part["name"] = TOOL_NAME
                part["result"] = {"output": next(payloads), KEY: LONG_LINE}
    document["history"][0]["parts"][0]["text"] = LONG_LINE
    document["user_inputs"] = [SCRIPT for _ in document["user_inputs"]]
    document["description"] = HTMX
    return json.dumps(document).encode()


class Visitor:
    """Opens pages, unfolds what they fold, and checks that nothing hostile ran."""

    def __init__(self, page: Page, log: PageLog) -> None:
        self.page = page
        self.log = log
        self.dialogs: list[str] = []
        self.problems: list[str] = []
        page.on("dialog", self._on_dialog)

    def _on_dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def visit(self, url: str, *, unfold: bool = True) -> None:
        self.page.goto(url)
        self.page.wait_for_load_state("networkidle")
        if unfold:
            self.unfold()
        self.check(url)

    def unfold(self) -> None:
        """Open what loads on demand, one request at a time: the live server shares one
        SQLite connection between its threads, so overlapping requests could collide."""
        page = self.page
        # Ledger items load what they removed when opened.
        for summary in page.locator("details.removed > summary").all()[:3]:
            with page.expect_response(lambda r: "/removals/" in r.url):
                summary.click()
        # Budget tree nodes load their children when first clicked.
        for button in page.locator("button[data-tree-toggle]").all()[:4]:
            if button.is_visible() and button.get_attribute("hx-get"):
                with page.expect_response(lambda r: "/tree/" in r.url):
                    button.click()
        # The rest of the folded content is in the page already; opening a ledger item that
        # loads on toggle would start its request alongside the others.
        page.evaluate(
            "() => document.querySelectorAll('details:not([hx-get])').forEach(d => d.open = true)"
        )
        page.wait_for_load_state("networkidle")

    def check(self, url: str) -> None:
        page = self.page
        if page.evaluate("() => typeof window.__pwned") != "undefined":
            self.problems.append(f"{url}: a payload ran")
        injected = page.evaluate(INJECTED)
        if injected:
            self.problems.append(f"{url}: payload became markup: {injected}")
        text = page.locator("body").inner_text()
        if not any(payload in text for payload in [*PAYLOADS, TOOL_NAME, KEY]):
            self.problems.append(f"{url}: no payload shown as text")

    def assert_clean(self) -> None:
        problems = list(self.problems)
        if self.dialogs:
            problems.append(f"dialogs opened: {self.dialogs}")
        problems += [f"CSP: {line}" for line in self.log.csp_violations()]
        problems += [f"page error: {line}" for line in self.log.errors]
        problems += [f"failed load: {line}" for line in self.log.bad_responses]
        assert not problems, "\n".join(problems)


@pytest.fixture
def hostile_project(project: Project, member: Any) -> Project:
    project.name = f"{IMG} project"
    project.save()
    return project


def upload_through_the_page(page: Page) -> AgentSession:
    page.goto("/sessions/upload/")
    page.locator("input[type=file]").set_input_files(
        [{"name": FILE_NAME, "mimeType": "application/json", "buffer": hostile_session()}]
    )
    page.get_by_role("button", name="Upload", exact=True).click()
    results = page.locator("#upload-results")
    expect(results.get_by_role("heading", name="Results")).to_be_visible()
    # Chromium sends the name's double quotes as %22; the markup arrives as it was.
    expect(results).to_contain_text("<img src=x onerror=")
    return AgentSession.objects.get()


def test_hostile_content_is_shown_as_text_on_every_page(
    page: Page, page_log: PageLog, hostile_project: Project, member: Any
) -> None:
    visitor = Visitor(page, page_log)
    session = upload_through_the_page(page)
    visitor.check("/sessions/upload/ (results)")
    assert session.model_name == MODEL

    policy = services.policy_create(
        project=hostile_project,
        name=POLICY_NAME,
        config=TIGHT_SUMMARIZE,
        message=VERSION_MESSAGE,
        actor=member,
    )
    services.policy_save(
        policy=policy,
        config={**TIGHT_SUMMARIZE, "preserve_recent_turns": 3},
        base_number=1,
        message=f"{IMG} second",
        actor=member,
    )
    first = policy.versions.get(number=1)
    run = background.run_start(session=session, policy_version=first, actor=member)
    run.refresh_from_db()
    assert run.status == "done", run.error
    assert run.summaries.exists()
    assert run.removals.exists()
    assert any(TOOL_NAME in s.text or KEY in s.text for s in run.summaries.all())
    replay = background.replay_request(session=session, config=TIGHT_SUMMARIZE, actor=member)
    applied = background.policy_apply(version=first, sessions=[session], actor=member)
    job = IngestJob.objects.create(
        project=hostile_project,
        filename=FILE_NAME,
        sha256="f" * 64,
        size_bytes=10,
        status=JobStatus.FAILED,
        error=f"history[2].role: {SCRIPT}",
        error_path=f"history[2].{KEY}",
    )
    team_services.token_create(user=member, name=f"{SVG} token", projects=[hostile_project])
    removals = list(run.removals.order_by("seq").values_list("seq", flat=True)[:3])
    versions = list(policy.versions.values_list("pk", flat=True))
    # Comments and verdict notes are typed by people, so they carry payloads too.
    first_removal = run.removals.get(seq=removals[0])
    thread = review_services.comment_add(target=Target.of_run(run), author=member, body=SCRIPT)
    review_services.comment_add(
        target=Target.of_run(run), author=member, body=f"{IMG}\n{SVG}", parent_id=thread.pk
    )
    review_services.comment_add(
        target=Target.of_removal(run, first_removal), author=member, body=SVG
    )
    review_services.comment_add(target=Target.of_version(first), author=member, body=IMG)
    review_services.verdict_give(
        target=Target.of_version(first), reviewer=member, decision="request_changes", note=SCRIPT
    )

    pages = [
        "/sessions/",
        f"/sessions/?q={SCRIPT}",
        f"/sessions/{session.pk}/",
        f"/sessions/{session.pk}/?turns=2&replay={replay.pk}",
        f"/runs/{run.pk}/",
        *[f"/runs/{run.pk}/removals/{seq}/" for seq in removals],
        f"/replays/{replay.pk}/",
        f"/uploads/{job.pk}/",
        "/policies/",
        f"/policies/{policy.pk}/edit/",
        f"/policies/{policy.pk}/versions/",
        f"/policies/{policy.pk}/versions/compare/?a=1&b=2",
        f"/policies/{policy.pk}/versions/1/review/",
        f"/policies/compare/?session={session.pk}&a={versions[0]}&b={versions[-1]}",
        f"/policies/{policy.pk}/apply/",
        f"/policies/runs/?ids={','.join(str(r.pk) for r in applied)}",
        "/audit/",
        "/review/",
        "/accounts/tokens/",
        "/projects/",
        f"/projects/{hostile_project.pk}/members/",
    ]
    for url in pages:
        visitor.visit(url)

    # The history's pager swaps pages in with htmx; the swapped page is checked too.
    page.goto(f"/sessions/{session.pk}/")
    with page.expect_response(lambda r: "turns=2" in r.url):
        page.locator("#history").get_by_role("link", name="Next →").first.click()
    expect(page.locator("#history .turn").first).to_be_visible()
    page.wait_for_load_state("networkidle")
    visitor.unfold()
    visitor.check("history page 2 through htmx")

    assert Membership.objects.filter(project=hostile_project).count() == 1
    assert GCRun.objects.filter(session=session).count() == 2
    visitor.assert_clean()
