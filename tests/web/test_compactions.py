"""What an agent did to its own context, on the dashboard: the compactions of an imported
session, its real usage curve, and a policy tried on the history just before a compaction."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.template.defaultfilters import linebreaksbr
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from jaato_web.dashboard import background, selectors, services
from jaato_web.dashboard.models import AgentSession, GCRun, Policy, Project, Replay
from tests.engine.agent_transcripts import Shape, generated_claude_code_rows
from tests.web.uploads import BUDGET_POLICY

pytestmark = pytest.mark.django_db


def claude_code_file(turns: int = 30, compact_after: tuple[int, ...] = (10, 20)) -> bytes:
    """A generated Claude Code transcript (JSON Lines) whose agent compacted after the given
    turns; named as generated, not after a real transcript."""
    rows = generated_claude_code_rows(Shape(turns=turns, compact_after=compact_after))
    return "\n".join(json.dumps(row) for row in rows).encode()


@pytest.fixture
def compacted(project: Project) -> AgentSession:
    receipt = background.session_upload(
        project=project, filename="generated-claude-code.jsonl", data=claude_code_file()
    )
    assert receipt.session is not None
    return receipt.session


@pytest.fixture
def policy(project: Project) -> Policy:
    return services.policy_create(project=project, name="Budget", config=BUDGET_POLICY)


def test_the_session_page_shows_each_compaction_its_summary_and_the_real_usage(
    client: Client, compacted: AgentSession
) -> None:
    html = client.get(reverse("session_detail", args=[compacted.pk])).content.decode()

    state = compacted.agent_state
    first, second = state["compactions"]
    assert "Compactions the agent performed (2)" in html
    assert f"Before turn {first['before_turn']}" in html
    # The file's time stamp (2026-03-01T10:10:05.000Z) as every time on the page is written.
    assert first["at"].startswith("2026-03-01T10:10:05")
    assert '<time datetime="2026-03-01T10:10:05+00:00">2026-03-01 10:10 UTC</time>,' in html
    assert first["at"] not in html
    assert f"{first['tokens_before']:,} → {first['tokens_after']:,} tokens as recorded" in html
    assert "The agent's summary" in html
    assert first["summary"].split("\n")[0][:40] in html
    assert "data-usage-chart" in html
    # The history marks where it happened: the page holding the first compaction's turn.
    assert html.count("The agent compacted its context here") >= 1
    assert f"The agent compacted before turn {second['before_turn']} (auto)" in html
    assert len(state["calls"]) == 60  # one row per model call the transcript records


def test_a_policy_replayed_before_a_compaction_is_drawn_beside_the_agent(
    client: Client,
    compacted: AgentSession,
    policy: Policy,
    django_capture_on_commit_callbacks: Any,
) -> None:
    first = compacted.agent_state["compactions"][0]

    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(
            reverse("replay_create", args=[compacted.pk]),
            {"policy_version": policy.versions.get().pk, "compaction": first["id"]},
        )

    replay = Replay.objects.get(session=compacted)
    assert replay.compaction_id == first["id"]
    assert answer.status_code == 302
    assert answer["Location"] == reverse("replay_detail", args=[replay.pk])
    page = client.get(answer["Location"]).content.decode()
    assert "Beside what the agent did" in page
    assert f"before turn {first['before_turn']}" in page
    assert "would have kept the context between" in page


def test_a_policy_run_before_a_compaction_sets_its_removals_beside_the_agents_summary(
    client: Client,
    compacted: AgentSession,
    policy: Policy,
    run_finished: Callable[..., GCRun],
) -> None:
    first = compacted.agent_state["compactions"][0]

    run = run_finished(compacted, policy_version=policy.versions.get(), compaction_id=first["id"])

    page = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert run.compaction_id == first["id"]
    assert "Beside the agent's own compaction" in page
    assert f"The agent went from {first['tokens_before']:,} tokens" in page
    assert "left out; the ledger above lists every removal" in page


def test_the_api_gives_the_state_and_tries_policies_before_a_compaction(
    client: Client, compacted: AgentSession, policy: Policy
) -> None:
    detail = client.get(f"/api/sessions/{compacted.pk}").json()
    first = detail["agent_state"]["compactions"][0]

    replay = client.post(
        f"/api/sessions/{compacted.pk}/replays",
        {"policy_version_id": policy.versions.get().pk, "compaction_id": first["id"]},
        content_type="application/json",
    )
    unknown = client.post(
        f"/api/sessions/{compacted.pk}/runs",
        {"policy_version_id": policy.versions.get().pk, "compaction_id": "no-such-compaction"},
        content_type="application/json",
    )

    assert detail["agent_state"]["tool_pair_problem_count"] == 0
    assert replay.json()["compaction_id"] == first["id"]
    assert unknown.status_code == 400
    assert "has no compaction 'no-such-compaction'" in unknown.json()["detail"]
    assert not GCRun.objects.exists()


def test_a_summarizing_run_before_a_compaction_sets_its_summary_beside_the_agents(
    client: Client,
    compacted: AgentSession,
    project: Project,
    run_finished: Callable[..., GCRun],
) -> None:
    """Run on the history just before the agent's second compaction (a 1,000-token window,
    so the policy has work to do): the page shows the agent's own summary of that compaction,
    whole and open, beside the policy's figures, and the policy's summary in the chain. The
    summary the agent wrote at its first compaction is the only record of what it compacted:
    below the pressure setting (this policy has none) the run keeps it as it is, and its own
    summary does not fold it in."""
    summarize = services.policy_create(
        project=project,
        name="Summarize",
        config={
            "type": "gc_summarize",
            "threshold_percent": 80,
            "target_percent": 40,
            "preserve_recent_turns": 2,
        },
    )
    first, second = compacted.agent_state["compactions"]

    run = run_finished(
        compacted,
        policy_version=summarize.versions.get(),
        compaction_id=second["id"],
        context_limit=1_000,
    )

    page = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    beside = page[page.index('id="beside-the-agent"') : page.index('id="summaries"')]
    chain = page[page.index('id="summaries"') : page.index('id="diff-heading"')]
    (written,) = selectors.run_summaries(run=run).filter(written_by_run=True)
    assert run.tokens_after < run.tokens_before
    assert (
        f"This policy went from {run.tokens_before:,} tokens to {run.tokens_after:,} tokens "
        f"(counted here), removing {run.items_collected:,} items."
    ) in beside
    assert (
        "<details open>\n    <summary>The agent's summary</summary>\n"
        f'    <div class="part__text">{linebreaksbr(second["summary"])}</div>'
    ) in beside
    assert linebreaksbr(first["summary"]) not in beside
    assert "Summary 1" in chain
    assert "written by this run" in chain
    assert escape(written.text) in chain
    assert first["summary"] not in written.text
    kept = [s.text for s in selectors.run_summaries(run=run).filter(written_by_run=False)]
    assert kept == [first["summary"]]
