"""Running GC from the session page, the run page's sections, and its exports."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

import gcengine
from jaato_web.dashboard import background, selectors
from jaato_web.dashboard.models import AgentSession, GCRun, JobStatus, Policy, Removal
from tests.web.conftest import TIGHT_BUDGET, TIGHT_SUMMARIZE

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


def run_url(run: GCRun) -> str:
    return reverse("run_detail", args=[run.pk])


# --- Starting a run from the session page ---------------------------------------------------


def test_run_with_a_stored_policy_goes_to_the_run_page(
    client: Client,
    stored_session: AgentSession,
    budget_policy: Policy,
    django_capture_on_commit_callbacks: Any,
) -> None:
    version = budget_policy.versions.get()
    url = reverse("run_create", args=[stored_session.pk])

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"policy_version": str(version.pk)})

    run = GCRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == run_url(run)
    assert run.policy_version == version
    assert run.status == JobStatus.DONE
    assert "Removal ledger" in client.get(run_url(run)).content.decode()


def test_htmx_run_is_told_to_navigate(
    client: Client, stored_session: AgentSession, budget_policy: Policy
) -> None:
    version = budget_policy.versions.get()
    url = reverse("run_create", args=[stored_session.pk])

    response = client.post(url, {"policy_version": str(version.pk)}, headers=HTMX)

    assert response.status_code == 200
    assert response["HX-Redirect"] == run_url(GCRun.objects.get())


def test_run_with_a_pasted_gc_json_and_plugin_override(
    client: Client, stored_session: AgentSession
) -> None:
    url = reverse("run_create", args=[stored_session.pk])

    response = client.post(url, {"gc_json": json.dumps(TIGHT_BUDGET), "plugin": "gc_truncate"})

    run = GCRun.objects.get()
    assert response.status_code == 302
    assert run.policy_version is None
    assert run.plugin == "gc_truncate"
    assert run.config["threshold_percent"] == 1


@pytest.mark.parametrize(
    ("gc_json", "message"),
    [
        ('{"type": "gc_budget", "treshold_percent": 80}', "treshold_percent: unknown key"),
        ('{"type": "gc_budget", "target_percent": 90}', "target_percent"),
        ("{not json", "not valid JSON"),
        ("/etc/passwd", "not valid JSON"),  # text is never taken for a file name
    ],
)
@pytest.mark.parametrize("headers", [{}, HTMX], ids=["page", "htmx"])
def test_invalid_gc_json_is_shown_next_to_the_field(
    client: Client,
    stored_session: AgentSession,
    gc_json: str,
    message: str,
    headers: dict[str, str],
) -> None:
    url = reverse("run_create", args=[stored_session.pk])

    response = client.post(url, {"gc_json": gc_json}, headers=headers)

    html = response.content.decode()
    assert response.status_code == 400
    assert not GCRun.objects.exists()
    field = html.index('name="gc_json"')
    errors = html.index('id="id_gc_json_error"')
    assert message in html[errors : errors + 600]
    assert abs(field - errors) < 1200, "the error sits with the gc.json field"
    assert 'aria-invalid="true"' in html
    if headers:
        assert "<html" not in html
        assert html.lstrip().startswith('<form id="run-form"')


def test_run_without_policy_or_gc_json_asks_for_one(
    client: Client, stored_session: AgentSession
) -> None:
    url = reverse("run_create", args=[stored_session.pk])

    response = client.post(url, {}, headers=HTMX)

    assert response.status_code == 400
    assert "Choose a stored policy or paste a gc.json." in response.content.decode()


def test_run_form_needs_a_post(client: Client, stored_session: AgentSession) -> None:
    url = reverse("run_create", args=[stored_session.pk])

    assert client.get(url).status_code == 405


# --- The run page ---------------------------------------------------------------------------


def test_run_page_figures_and_config(client: Client, finished_run: GCRun) -> None:
    html = client.get(run_url(finished_run)).content.decode()

    assert '<span class="badge badge--done">Done</span>' in html
    assert f"{finished_run.tokens_before:,}" in html
    assert f"{finished_run.tokens_after:,}" in html
    assert f"{finished_run.tokens_freed:,}" in html
    assert "Share of the context limit" in html
    assert "Tight budget v1" in html
    assert "<code>gc_budget</code>" in html
    assert "&quot;threshold_percent&quot;: 1" in html  # the config, pretty printed
    assert "every 2s" not in html


def test_ledger_lists_every_item_with_a_link_to_what_went(
    client: Client, finished_run: GCRun
) -> None:
    html = client.get(run_url(finished_run)).content.decode()

    removals = list(selectors.run_removals(run=finished_run))
    assert removals
    assert f"{len(removals)} items, in the order GC removed them" in html
    for removal in removals:
        link = reverse("run_removal", args=[finished_run.pk, removal.seq])
        assert f'hx-get="{link}"' in html
        assert removal.message_ids[0][:8] in html


def test_ledger_pages_through_htmx(
    client: Client, finished_run: GCRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selectors, "LEDGER_PER_PAGE", 2)

    response = client.get(
        run_url(finished_run), {"ledger": "2"}, headers={**HTMX, "HX-Target": "ledger"}
    )

    html = response.content.decode()
    assert "<html" not in html
    assert html.lstrip().startswith('<div id="ledger">')
    assert re.findall(r'<td class="num">(\d+)</td>\s*<td><span class="badge">', html) == ["2", "3"]
    assert "Page 2 of" in html


def test_removed_content_shows_the_messages_that_went(client: Client, finished_run: GCRun) -> None:
    removal = Removal.objects.filter(run=finished_run).order_by("seq").first()
    assert removal is not None
    url = reverse("run_removal", args=[finished_run.pk, removal.seq])

    fragment = client.get(url, headers=HTMX).content.decode()
    page = client.get(url).content.decode()

    assert "<html" not in fragment
    assert f"{len(removal.message_ids)} message" in fragment
    assert fragment.count('class="message message--') == len(removal.message_ids)
    assert "message--removed" in fragment
    assert f"Item {removal.seq} of the removal ledger" in page


def test_removed_budget_entry_outside_the_conversation_is_named(
    client: Client, finished_run: GCRun
) -> None:
    Removal.objects.create(
        run=finished_run,
        seq=999,
        source="enrichment",
        child_key="",
        reason="enrichment",
        tokens_freed=0,
        message_ids=[],
    )

    html = client.get(reverse("run_removal", args=[finished_run.pk, 999])).content

    assert "The budget entry <strong>enrichment</strong>" in html.decode()


def removed_turns(html: str) -> list[int]:
    """The turns a run page's history diff marks removed, by the numbers it shows."""
    found = re.findall(
        r"<strong>Turn (\d+)</strong>\s*<span class=\"num\">[^<]*</span>\s*"
        r"<span class=\"badge badge--removed\">removed</span>",
        html,
    )
    return [int(number) for number in found]


def test_summary_chain_of_a_summarizing_run(client: Client, summarize_run: GCRun) -> None:
    html = client.get(run_url(summarize_run)).content.decode()

    summary = selectors.run_summaries(run=summarize_run).get()
    removed = removed_turns(html)
    assert "Summary 1" in html
    assert "written by this run" in html
    # The turns it stands for, numbered as the diff below numbers the turns it removed.
    assert removed == list(range(removed[0], removed[-1] + 1))
    assert f"Stands for turns {removed[0]}–{removed[-1]}." in html
    assert f"standing for turns {removed[0]}–{removed[-1]} (" in html
    assert "<code>extractive</code> summarizer" in html
    assert f"{summary.tokens:,} tokens" in html
    assert "[Context Summary" in html  # its text
    # The diff shows where it went in.
    assert "Summary 1 went in here" in html


def test_summary_chain_folds_in_an_earlier_summary(
    client: Client,
    summarize_run: GCRun,
    project: Any,
    run_finished: Callable[..., GCRun],
) -> None:
    # Upload the collected session and collect it again: summary 2 folds in summary 1.
    exported = client.get(reverse("run_export_session", args=[summarize_run.pk]))
    receipt = background.session_upload(
        project=project, filename="collected.json", data=exported.content
    )
    assert receipt.session is not None
    config = {**TIGHT_SUMMARIZE, "threshold_percent": 0.5, "target_percent": 0.2}
    again = run_finished(receipt.session, config={**config, "preserve_recent_turns": 1})

    html = client.get(run_url(again)).content.decode()

    # Summary 1 went into summary 2, which stands for it and for the turn it summarized.
    (removed,) = removed_turns(html)
    assert "Summary 2" in html
    assert "written by this run" in html
    assert f"Stands for turn {removed}, and folds in summary 1." in html


def test_run_without_summaries_says_so(client: Client, finished_run: GCRun) -> None:
    html = client.get(run_url(finished_run)).content.decode()

    assert "No summaries" in html


def test_diff_marks_kept_removed_and_partial_turns(client: Client, finished_run: GCRun) -> None:
    html = client.get(run_url(finished_run)).content.decode()

    states = re.findall(r'<li class="diff-turn diff-turn--(\w+)">', html)
    assert {"kept", "removed", "partial"} <= set(states)
    assert re.search(r"\d of \d messages removed", html)
    assert "<del>" in html
    assert "(removed)" in html


def test_diff_pages_through_htmx(
    client: Client, finished_run: GCRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selectors, "TURNS_PER_PAGE", 3)

    response = client.get(
        run_url(finished_run), {"diff": "3"}, headers={**HTMX, "HX-Target": "diff"}
    )

    html = response.content.decode()
    assert html.lstrip().startswith('<div id="diff">')
    assert "Turn 7" in html
    assert "Turn 8" in html
    assert "Turn 6" not in html


def test_budget_trees_before_and_after(client: Client, finished_run: GCRun) -> None:
    html = client.get(run_url(finished_run)).content.decode()

    assert f"Before ({finished_run.tokens_before:,} tokens)" in html
    assert f"After ({finished_run.tokens_after:,} tokens)" in html
    before_tree = reverse("session_tree", args=[finished_run.session_id])
    after_tree = reverse("run_tree", args=[finished_run.pk])
    assert f'hx-get="{before_tree}?path=conversation"' in html
    assert f'hx-get="{after_tree}?path=conversation"' in html


def test_after_tree_children_are_the_runs(client: Client, finished_run: GCRun) -> None:
    url = reverse("run_tree", args=[finished_run.pk])

    after = client.get(url, {"path": "conversation"}, headers=HTMX).content.decode()
    before = client.get(
        reverse("session_tree", args=[finished_run.session_id]),
        {"path": "conversation"},
        headers=HTMX,
    ).content.decode()

    assert "<html" not in after
    assert after.count('class="tree-node"') < before.count('class="tree-node"')


def test_pending_run_polls_its_status(client: Client, stored_session: AgentSession) -> None:
    run = background.run_start(session=stored_session, config=TIGHT_BUDGET)  # never committed

    page = client.get(run_url(run)).content.decode()
    status = client.get(reverse("run_status", args=[run.pk]), headers=HTMX)

    assert 'hx-trigger="every 2s"' in page
    assert f'hx-get="{reverse("run_status", args=[run.pk])}"' in page
    assert "waiting for a worker" in page
    assert "Removal ledger" not in page
    assert "HX-Refresh" not in status
    assert 'hx-trigger="every 2s"' in status.content.decode()


def test_finished_run_status_stops_polling_and_reloads(client: Client, finished_run: GCRun) -> None:
    response = client.get(reverse("run_status", args=[finished_run.pk]), headers=HTMX)

    assert response["HX-Refresh"] == "true"
    assert "every 2s" not in response.content.decode()


def test_failed_run_shows_its_error(client: Client, stored_session: AgentSession) -> None:
    run = background.run_start(session=stored_session, config=TIGHT_BUDGET)
    GCRun.objects.filter(pk=run.pk).update(status=JobStatus.FAILED, error="the summarizer failed")

    html = client.get(run_url(run)).content.decode()

    assert '<span class="badge badge--failed">Failed</span>' in html
    assert "the summarizer failed" in html
    assert "every 2s" not in html


def test_run_of_another_project_is_not_found(client: Client, finished_run: GCRun) -> None:
    from jaato_web.dashboard.models import Project

    other = Project.objects.create(name="Other", slug="other")
    AgentSession.objects.filter(pk=finished_run.session_id).update(project=other)

    assert client.get(run_url(finished_run)).status_code == 404
    assert client.get(reverse("run_export_session", args=[finished_run.pk])).status_code == 404


# --- Exports --------------------------------------------------------------------------------


def test_export_session_after_gc(client: Client, finished_run: GCRun) -> None:
    response = client.get(reverse("run_export_session", args=[finished_run.pk]))

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert (
        response["Content-Disposition"]
        == f'attachment; filename="small-session-run{finished_run.pk}.gc.json"'
    )
    collected = gcengine.load_session(response.content)
    assert len(collected.turns()) == finished_run.turns_after
    assert collected.budget.total_tokens() == finished_run.tokens_after
    # Compact, so the file uploads again under the limit that let the original in.
    assert response.content == gcengine.dump_session(collected, indent=None).encode()
    assert b"\n" not in response.content


def test_export_ledger_json(client: Client, finished_run: GCRun) -> None:
    response = client.get(reverse("run_export_ledger_json", args=[finished_run.pk]))

    assert response["Content-Disposition"].endswith(f'-run{finished_run.pk}.ledger.json"')
    body = response.json()
    removals = list(selectors.run_removals(run=finished_run))
    assert body["run"] == finished_run.pk
    assert [r["seq"] for r in body["ledger"]] == [r.seq for r in removals]
    assert body["ledger"][0]["message_ids"] == removals[0].message_ids
    assert sum(r["tokens_freed"] for r in body["ledger"]) == sum(r.tokens_freed for r in removals)


def test_export_ledger_csv(client: Client, finished_run: GCRun) -> None:
    response = client.get(reverse("run_export_ledger_csv", args=[finished_run.pk]))

    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].endswith(f'-run{finished_run.pk}.ledger.csv"')
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    removals = list(selectors.run_removals(run=finished_run))
    assert len(rows) == len(removals)
    assert rows[0]["reason"] == removals[0].reason
    assert rows[0]["message_ids"] == " ".join(removals[0].message_ids)


def test_ledger_exports_number_turns_as_the_session_page_does(
    client: Client, finished_run: GCRun
) -> None:
    as_json = client.get(reverse("run_export_ledger_json", args=[finished_run.pk])).json()
    as_csv = client.get(reverse("run_export_ledger_csv", args=[finished_run.pk]))
    rows = list(csv.DictReader(io.StringIO(as_csv.content.decode())))
    indices = [r.turn_index for r in selectors.run_removals(run=finished_run)]

    # The session page calls the turn with stable index 0 "turn 1"; so do the exports, and
    # the index stays beside it under its own name.
    assert [r["turn_index"] for r in as_json["ledger"]] == indices
    assert [r["turn_number"] for r in as_json["ledger"]] == [
        None if i is None else i + 1 for i in indices
    ]
    assert [r["turn_number"] for r in rows] == ["" if i is None else str(i + 1) for i in indices]
    assert [r["turn_index"] for r in rows] == ["" if i is None else str(i) for i in indices]


def test_export_of_an_unfinished_run_is_not_found(
    client: Client, stored_session: AgentSession
) -> None:
    run = background.run_start(session=stored_session, config=TIGHT_BUDGET)

    response = client.get(reverse("run_export_session", args=[run.pk]))

    assert response.status_code == 404


def test_export_filename_is_tamed(client: Client, finished_run: GCRun) -> None:
    AgentSession.objects.filter(pk=finished_run.session_id).update(label='../we"ird name.json')

    response = client.get(reverse("run_export_ledger_csv", args=[finished_run.pk]))

    assert response["Content-Disposition"] == (
        f'attachment; filename="we-ird-name-run{finished_run.pk}.ledger.csv"'
    )
