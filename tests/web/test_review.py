"""Review: comments, verdicts, statuses and the queue, through services, pages and the API."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from jaato_web.dashboard import background
from jaato_web.dashboard import services as dashboard_services
from jaato_web.dashboard.models import (
    AuditAction,
    AuditEvent,
    GCRun,
    Policy,
    PolicyVersion,
    Project,
)
from jaato_web.review import selectors, services
from jaato_web.review.models import COMMENT_MAX_CHARS, Comment, ReviewStatus, Verdict
from jaato_web.review.targets import Target
from jaato_web.teams.permissions import Role
from tests.web.conftest import TIGHT_BUDGET, make_member, session_bytes, signed_in_client

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true", "HX-Target": "review"}


@pytest.fixture
def rita(project: Project) -> User:
    return make_member(project, "rita", Role.REVIEWER)


@pytest.fixture
def viewer(project: Project) -> User:
    return make_member(project, "vic", Role.VIEWER)


@pytest.fixture
def version(budget_policy: Policy) -> PolicyVersion:
    return budget_policy.versions.get()


@pytest.fixture
def other_run(run_finished: Any) -> GCRun:
    """A finished run in a project ann is not a member of."""
    other = Project.objects.create(name="Other", slug="other")
    session = background.session_upload(
        project=other, filename="other.json", data=session_bytes()
    ).session
    assert session is not None
    policy = dashboard_services.policy_create(project=other, name="Other", config=TIGHT_BUDGET)
    run: GCRun = run_finished(session, policy_version=policy.versions.get())
    return run


def run_url(name: str, run: GCRun, *args: object) -> str:
    return reverse(name, args=[run.pk, *args])


def version_url(name: str, version: PolicyVersion) -> str:
    return reverse(name, args=[version.policy_id, version.number])


# --- Services --------------------------------------------------------------------------------


def test_comment_is_trimmed_and_audited(finished_run: GCRun, member: User) -> None:
    target = Target.of_run(finished_run)

    comment = services.comment_add(target=target, author=member, body="  Looks right.\r\n\n")

    assert comment.body == "Looks right."
    assert comment.author_name == "ann"
    assert comment.project == finished_run.session.project
    event = AuditEvent.objects.get(action=AuditAction.COMMENT)
    assert event.actor_name == "ann"
    assert event.target == f"run {finished_run.pk}"
    assert event.detail == {"comment": comment.pk, "on": "run", "parent": None}
    assert event.target_url.endswith(f"#comment-{comment.pk}")


@pytest.mark.parametrize("body", ["", "   \n\t "])
def test_an_empty_comment_is_refused_and_leaves_no_event(
    finished_run: GCRun, member: User, body: str
) -> None:
    with pytest.raises(services.ReviewError) as refused:
        services.comment_add(target=Target.of_run(finished_run), author=member, body=body)

    assert refused.value.key == "body"
    assert not Comment.objects.exists()
    assert not AuditEvent.objects.filter(action=AuditAction.COMMENT).exists()


def test_a_too_long_comment_is_refused(finished_run: GCRun, member: User) -> None:
    with pytest.raises(services.ReviewError, match="at most 5,000"):
        services.comment_add(
            target=Target.of_run(finished_run), author=member, body="x" * (COMMENT_MAX_CHARS + 1)
        )


def test_replies_thread_under_their_parent_one_level_deep(
    finished_run: GCRun, member: User
) -> None:
    target = Target.of_run(finished_run)
    first = services.comment_add(target=target, author=member, body="first")
    second = services.comment_add(target=target, author=member, body="second")
    reply = services.comment_add(target=target, author=member, body="re", parent_id=first.pk)
    # A reply to a reply joins the thread under the comment that started it.
    nested = services.comment_add(target=target, author=member, body="re re", parent_id=reply.pk)

    assert nested.parent_id == first.pk
    page = selectors.thread_page(target=target)
    assert [t.comment.pk for t in page.threads] == [first.pk, second.pk]
    assert [r.pk for r in page.threads[0].replies] == [reply.pk, nested.pk]
    assert page.threads[0].reply_count == 2
    assert page.threads[1].replies == []


def test_a_reply_must_be_in_its_parents_thread(finished_run: GCRun, member: User) -> None:
    removal = finished_run.removals.order_by("seq").first()
    assert removal is not None
    on_run = services.comment_add(target=Target.of_run(finished_run), author=member, body="run")

    with pytest.raises(services.ReviewError) as refused:
        services.comment_add(
            target=Target.of_removal(finished_run, removal),
            author=member,
            body="reply on the item",
            parent_id=on_run.pk,
        )

    assert refused.value.key == "parent"
    assert Comment.objects.count() == 1


def test_removal_comments_are_their_own_thread(finished_run: GCRun, member: User) -> None:
    removal = finished_run.removals.order_by("seq").first()
    assert removal is not None
    services.comment_add(target=Target.of_run(finished_run), author=member, body="on the run")
    on_item = services.comment_add(
        target=Target.of_removal(finished_run, removal), author=member, body="on the item"
    )

    assert on_item.run_id == finished_run.pk
    assert on_item.removal_id == removal.pk
    item_threads = selectors.thread_page(target=Target.of_removal(finished_run, removal))
    run_threads = selectors.thread_page(target=Target.of_run(finished_run))
    assert [t.comment.body for t in item_threads.threads] == ["on the item"]
    assert [t.comment.body for t in run_threads.threads] == ["on the run"]


def test_the_database_refuses_a_comment_with_two_targets(
    finished_run: GCRun, version: PolicyVersion
) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        Comment.objects.create(
            project=version.policy.project,
            run=finished_run,
            policy_version=version,
            author_name="x",
            body="both",
        )


def test_status_follows_the_latest_verdict(finished_run: GCRun, rita: User) -> None:
    target = Target.of_run(finished_run)
    assert selectors.review_status(target=target) == ReviewStatus.PENDING

    services.verdict_give(target=target, reviewer=rita, decision="request_changes", note="why?")
    assert selectors.review_status(target=target) == ReviewStatus.CHANGES_REQUESTED

    services.verdict_give(target=target, reviewer=rita, decision="approve")
    history = selectors.verdict_history(target=target)
    assert history.status == ReviewStatus.APPROVED
    assert [v.decision for v in history.verdicts] == ["approve", "request_changes"]
    events = AuditEvent.objects.filter(action=AuditAction.VERDICT).order_by("pk")
    assert [e.detail["decision"] for e in events] == ["request_changes", "approve"]
    assert {e.actor_name for e in events} == {"rita"}


def test_a_verdict_needs_a_known_decision_and_a_finished_run(
    finished_run: GCRun, rita: User
) -> None:
    with pytest.raises(services.ReviewError) as refused:
        services.verdict_give(target=Target.of_run(finished_run), reviewer=rita, decision="meh")
    assert refused.value.key == "decision"

    GCRun.objects.filter(pk=finished_run.pk).update(status="running")
    finished_run.refresh_from_db()
    with pytest.raises(services.ReviewError) as refused:
        services.verdict_give(target=Target.of_run(finished_run), reviewer=rita, decision="approve")
    assert refused.value.key == "run"
    assert not Verdict.objects.exists()


def test_removal_items_take_no_verdicts(finished_run: GCRun, rita: User) -> None:
    removal = finished_run.removals.order_by("seq").first()
    assert removal is not None
    with pytest.raises(services.ReviewError):
        services.verdict_give(
            target=Target.of_removal(finished_run, removal), reviewer=rita, decision="approve"
        )


def test_queue_lists_pending_and_drops_approved(
    finished_run: GCRun, version: PolicyVersion, rita: User, project: Project
) -> None:
    assert list(selectors.queue_pending_runs(project=project)) == [finished_run]
    assert list(selectors.queue_pending_versions(project=project)) == [version]

    services.verdict_give(target=Target.of_run(finished_run), reviewer=rita, decision="approve")
    services.verdict_give(
        target=Target.of_version(version), reviewer=rita, decision="request_changes"
    )

    assert not selectors.queue_pending_runs(project=project).exists()
    assert not selectors.queue_pending_versions(project=project).exists()
    assert not selectors.queue_changes_runs(project=project).exists()
    assert list(selectors.queue_changes_versions(project=project)) == [version]


def test_queue_shows_only_the_latest_version_of_a_policy(
    budget_policy: Policy, project: Project, rita: User
) -> None:
    first = budget_policy.versions.get()
    services.verdict_give(target=Target.of_version(first), reviewer=rita, decision="approve")
    second = dashboard_services.policy_save(
        policy=budget_policy,
        config={**TIGHT_BUDGET, "target_percent": 0.4},
        base_number=1,
        message="lower",
    )

    assert list(selectors.queue_pending_versions(project=project)) == [second]


# --- Pages -----------------------------------------------------------------------------------


def test_run_page_shows_the_review_panel(client: Client, finished_run: GCRun) -> None:
    response = client.get(reverse("run_detail", args=[finished_run.pk]))

    html = response.content.decode()
    assert 'id="review"' in html
    assert 'data-review-status="pending"' in html
    assert 'name="decision" value="approve"' in html
    assert "Add a comment" in html


def test_viewer_sees_no_comment_or_verdict_forms(
    project: Project, viewer: User, finished_run: GCRun
) -> None:
    response = signed_in_client(viewer).get(reverse("run_detail", args=[finished_run.pk]))

    html = response.content.decode()
    assert 'id="review"' in html
    assert 'name="decision"' not in html
    assert 'name="body"' not in html


def test_comment_form_post_redirects_back_without_js(client: Client, finished_run: GCRun) -> None:
    response = client.post(run_url("run_comment", finished_run), {"body": "Good cut."})

    comment = Comment.objects.get()
    assert response.status_code == 302
    assert response["Location"] == (
        reverse("run_detail", args=[finished_run.pk]) + f"#comment-{comment.pk}"
    )
    page = client.get(response["Location"]).content.decode()
    assert "Good cut." in page


def test_htmx_comment_post_answers_with_the_panel(client: Client, finished_run: GCRun) -> None:
    response = client.post(run_url("run_comment", finished_run), {"body": "a\nb"}, headers=HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="review"')
    assert "a<br>b" in html


def test_empty_comment_answers_400_and_keeps_nothing(client: Client, finished_run: GCRun) -> None:
    htmx = client.post(run_url("run_comment", finished_run), {"body": "  "}, headers=HTMX)
    plain = client.post(run_url("run_comment", finished_run), {"body": ""})

    assert htmx.status_code == plain.status_code == 400
    assert "the comment is empty" in htmx.content.decode()
    assert "<html" in plain.content.decode()
    assert not Comment.objects.exists()


def test_a_reply_to_another_thread_is_refused(client: Client, finished_run: GCRun) -> None:
    removal = finished_run.removals.order_by("seq").first()
    assert removal is not None
    on_run = services.comment_add(
        target=Target.of_run(finished_run), author=None, body="on the run"
    )

    response = client.post(
        run_url("removal_comment", finished_run, removal.seq),
        {"body": "reply", "parent": str(on_run.pk)},
        headers=HTMX,
    )

    assert response.status_code == 400
    assert "not in this thread" in response.content.decode()
    assert Comment.objects.count() == 1


def test_comment_text_is_escaped(client: Client, finished_run: GCRun) -> None:
    client.post(run_url("run_comment", finished_run), {"body": "<script>alert(1)</script>\nok"})

    html = client.get(reverse("run_detail", args=[finished_run.pk])).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;<br>ok" in html


def test_verdict_post_sets_the_status(client: Client, finished_run: GCRun) -> None:
    response = client.post(
        run_url("run_verdict", finished_run), {"decision": "approve", "note": "fine"}
    )

    assert response.status_code == 302
    html = client.get(reverse("run_detail", args=[finished_run.pk])).content.decode()
    assert 'data-review-status="approved"' in html
    assert AuditEvent.objects.filter(action=AuditAction.VERDICT).count() == 1


@pytest.mark.parametrize(
    ("name", "data"),
    [("run_comment", {"body": "hi"}), ("run_verdict", {"decision": "approve"})],
)
def test_viewer_gets_403_on_comment_and_verdict_posts(
    viewer: User, finished_run: GCRun, name: str, data: dict[str, str]
) -> None:
    response = signed_in_client(viewer).post(run_url(name, finished_run), data)

    assert response.status_code == 403
    assert not Comment.objects.exists()
    assert not Verdict.objects.exists()


def test_reviewer_may_comment_and_give_verdicts(rita: User, finished_run: GCRun) -> None:
    reviewer = signed_in_client(rita)

    assert reviewer.post(run_url("run_comment", finished_run), {"body": "hi"}).status_code == 302
    verdict = reviewer.post(run_url("run_verdict", finished_run), {"decision": "approve"})
    assert verdict.status_code == 302


@pytest.mark.parametrize("name", ["run_comment", "run_verdict"])
def test_another_projects_run_is_404(client: Client, other_run: GCRun, name: str) -> None:
    response = client.post(run_url(name, other_run), {"body": "x", "decision": "approve"})

    assert response.status_code == 404


def test_removal_page_has_its_thread(client: Client, finished_run: GCRun) -> None:
    removal = finished_run.removals.order_by("seq").first()
    assert removal is not None
    client.post(run_url("removal_comment", finished_run, removal.seq), {"body": "why this?"})

    page = client.get(reverse("run_removal", args=[finished_run.pk, removal.seq]))
    ledger = client.get(reverse("run_detail", args=[finished_run.pk]))

    assert "why this?" in page.content.decode()
    assert "1 comment<span" in ledger.content.decode()
    assert "why this?" not in ledger.content.decode()  # the run's own thread is separate


def test_version_review_page_comments_and_verdicts(client: Client, version: PolicyVersion) -> None:
    client.post(version_url("version_comment", version), {"body": "threshold too low?"})
    client.post(version_url("version_verdict", version), {"decision": "request_changes"})

    page = client.get(version_url("version_review", version)).content.decode()
    versions = client.get(reverse("policy_versions", args=[version.policy_id]))

    assert "threshold too low?" in page
    assert 'data-review-status="changes_requested"' in page
    assert 'data-review-status="changes_requested"' in versions.content.decode()
    assert "1 comment" in versions.content.decode()


def test_queue_page_lists_pending_and_changes_requested(
    client: Client, finished_run: GCRun, version: PolicyVersion, rita: User
) -> None:
    html = client.get(reverse("review_queue")).content.decode()
    assert f"Run {finished_run.pk}</a>" in html
    assert f"{version.policy.name} v1</a>" in html

    services.verdict_give(
        target=Target.of_run(finished_run), reviewer=rita, decision="request_changes"
    )
    services.verdict_give(target=Target.of_version(version), reviewer=rita, decision="approve")
    html = client.get(reverse("review_queue")).content.decode()
    assert "No finished run waits for review." in html
    assert "No policy version waits for review." in html
    assert f"Run {finished_run.pk}</a>" in html  # under changes requested
    assert "rita" in html


def test_queue_leaves_out_runs_that_removed_nothing_unless_asked(
    client: Client, finished_run: GCRun, run_finished: Any
) -> None:
    relaxed = {**TIGHT_BUDGET, "threshold_percent": 80, "target_percent": 60}
    empty = run_finished(finished_run.session, config=relaxed)
    assert empty.items_collected == 0

    html = client.get(reverse("review_queue")).content.decode()
    shown = client.get(reverse("review_queue"), {"empty": "1"}).content.decode()
    api = client.get("/api/review/queue").json()
    api_all = client.get("/api/review/queue", {"empty": "true"}).json()

    assert f"Run {finished_run.pk}</a>" in html
    assert f"Run {empty.pk}</a>" not in html
    # The page says what it leaves out, and links to the list with them.
    assert "1 run that removed nothing is not listed" in html
    assert 'href="?empty=1#pending-runs"' in html
    assert f"Run {empty.pk}</a>" in shown
    assert "Hide the run that removed nothing" in shown
    assert [r["id"] for r in api["pending_runs"]["items"]] == [finished_run.pk]
    assert api["pending_runs_removed_nothing"] == 1
    assert [r["id"] for r in api_all["pending_runs"]["items"]] == [finished_run.pk, empty.pk]


def test_queue_list_fragment_for_htmx(client: Client, finished_run: GCRun) -> None:
    response = client.get(
        reverse("review_queue"), headers={"HX-Request": "true", "HX-Target": "pending-runs"}
    )

    html = response.content.decode()
    assert html.lstrip().startswith('<div id="pending-runs"')
    assert "<html" not in html


def test_queue_of_a_project_you_are_not_in_is_404(client: Client, other_run: GCRun) -> None:
    other = other_run.session.project
    response = client.get(reverse("review_queue"), {"project": other.pk})

    assert response.status_code == 404


# --- API -------------------------------------------------------------------------------------


def api_post(client: Client, url: str, payload: dict[str, Any]) -> Any:
    return client.post(url, json.dumps(payload), content_type="application/json")


def test_api_comments_on_a_run_thread_and_list(client: Client, finished_run: GCRun) -> None:
    url = f"/api/runs/{finished_run.pk}/comments"
    first = api_post(client, url, {"body": "first"})
    reply = api_post(client, url, {"body": "reply", "parent": first.json()["id"]})

    assert first.status_code == reply.status_code == 201
    assert reply.json()["parent"] == first.json()["id"]
    listed = client.get(url).json()
    assert listed["count"] == 2
    assert [(c["body"], c["parent"]) for c in listed["items"]] == [
        ("first", None),
        ("reply", first.json()["id"]),
    ]
    assert listed["items"][0]["target"] == "run"
    assert listed["items"][0]["author"] == "ann"


def test_api_comments_on_a_removal(client: Client, finished_run: GCRun) -> None:
    removal = finished_run.removals.order_by("seq").first()
    assert removal is not None
    url = f"/api/runs/{finished_run.pk}/removals/{removal.seq}/comments"

    created = api_post(client, url, {"body": "why?"})

    assert created.status_code == 201
    assert created.json()["removal_seq"] == removal.seq
    assert created.json()["run"] == finished_run.pk
    assert client.get(url).json()["count"] == 1
    assert client.get(f"/api/runs/{finished_run.pk}/comments").json()["count"] == 0


def test_api_empty_body_and_wrong_parent_are_400(client: Client, finished_run: GCRun) -> None:
    url = f"/api/runs/{finished_run.pk}/comments"
    empty = api_post(client, url, {"body": "   "})
    orphan = api_post(client, url, {"body": "hi", "parent": 999_999})

    assert empty.status_code == orphan.status_code == 400
    assert empty.json()["key"] == "body"
    assert orphan.json()["key"] == "parent"
    assert "detail" in empty.json()


def test_api_verdicts_on_a_policy_version(client: Client, version: PolicyVersion) -> None:
    url = f"/api/policies/versions/{version.pk}/verdicts"
    assert client.get(url).json()["status"] == "pending"

    given = api_post(client, url, {"decision": "approve", "note": "ok"})
    refused = api_post(client, url, {"decision": "maybe"})

    assert given.status_code == 201
    assert given.json()["status"] == "approved"
    assert refused.status_code == 400
    assert refused.json()["key"] == "decision"
    listed = client.get(url).json()
    assert listed["status"] == "approved"
    assert [v["reviewer"] for v in listed["items"]] == ["ann"]


def test_api_comments_on_a_policy_version(client: Client, version: PolicyVersion) -> None:
    url = f"/api/policies/versions/{version.pk}/comments"
    created = api_post(client, url, {"body": "hm"})

    assert created.status_code == 201
    assert created.json()["policy_version"] == version.pk
    assert client.get(url).json()["items"][0]["body"] == "hm"


def test_api_run_verdicts_and_the_queue(client: Client, finished_run: GCRun) -> None:
    queue = client.get("/api/review/queue").json()
    assert [r["id"] for r in queue["pending_runs"]["items"]] == [finished_run.pk]

    api_post(client, f"/api/runs/{finished_run.pk}/verdicts", {"decision": "request_changes"})

    queue = client.get(f"/api/review/queue?project={finished_run.session.project_id}").json()
    assert queue["pending_runs"]["count"] == 0
    assert [r["id"] for r in queue["changes_requested_runs"]["items"]] == [finished_run.pk]
    run_review = client.get(f"/api/runs/{finished_run.pk}/verdicts").json()
    assert run_review["status"] == "changes_requested"


@pytest.mark.parametrize(
    ("path", "payload"),
    [("comments", {"body": "hi"}), ("verdicts", {"decision": "approve"})],
)
def test_api_viewer_may_read_but_not_write(
    viewer: User, finished_run: GCRun, path: str, payload: dict[str, str]
) -> None:
    api = signed_in_client(viewer)
    url = f"/api/runs/{finished_run.pk}/{path}"

    assert api.get(url).status_code == 200
    refused = api_post(api, url, payload)
    assert refused.status_code == 403


def test_api_another_projects_run_is_404(client: Client, other_run: GCRun) -> None:
    assert client.get(f"/api/runs/{other_run.pk}/comments").status_code == 404
    posted = api_post(client, f"/api/runs/{other_run.pk}/verdicts", {"decision": "approve"})
    assert posted.status_code == 404


# --- Query counts: the panel, the versions page and the queue do not grow with their rows ---


def _query_count(client: Client, url: str) -> int:
    client.get(url)  # warm up: anything cached per process is loaded
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured.captured_queries)


def _discuss(target: Target, author: User, threads: int) -> None:
    for n in range(threads):
        root = services.comment_add(target=target, author=author, body=f"thread {n}")
        for m in range(3):
            services.comment_add(target=target, author=author, body=f"re {m}", parent_id=root.pk)


def test_review_panel_costs_the_same_for_one_thread_or_many(
    client: Client, finished_run: GCRun, member: User
) -> None:
    target = Target.of_run(finished_run)
    url = reverse("run_detail", args=[finished_run.pk])
    _discuss(target, member, 1)
    services.verdict_give(target=target, reviewer=member, decision="approve")
    few = _query_count(client, url)

    _discuss(target, member, 8)
    services.verdict_give(target=target, reviewer=member, decision="request_changes")

    assert _query_count(client, url) == few


def test_versions_page_and_queue_cost_the_same_for_more_rows(
    client: Client,
    project: Project,
    finished_run: GCRun,
    budget_policy: Policy,
    run_finished: Any,
    member: User,
) -> None:
    services.verdict_give(
        target=Target.of_run(finished_run), reviewer=member, decision="request_changes"
    )

    def grow(n: int) -> None:
        """A version with changes requested, and a pending version and run of a new policy."""
        version = dashboard_services.policy_save(
            policy=budget_policy,
            config={**TIGHT_BUDGET, "target_percent": 0.45 - n / 20},
            base_number=n + 1,
        )
        services.comment_add(target=Target.of_version(version), author=member, body="hm")
        services.verdict_give(
            target=Target.of_version(version), reviewer=member, decision="request_changes"
        )
        other = dashboard_services.policy_create(
            project=project, name=f"Policy {n}", config=TIGHT_BUDGET
        )
        run_finished(finished_run.session, policy_version=other.versions.get())

    versions_url = reverse("policy_versions", args=[budget_policy.pk])
    queue_url = reverse("review_queue")
    grow(0)
    before = (_query_count(client, versions_url), _query_count(client, queue_url))

    for n in range(1, 4):
        grow(n)

    assert (_query_count(client, versions_url), _query_count(client, queue_url)) == before
