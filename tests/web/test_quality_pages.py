"""Compaction quality on the dashboard: anchor retention on runs, replays, previews and the
agent's own compactions; gates and the review queue; prompt-cache cost; the ranking on the
compare page; export to other frameworks; and the same through the API."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

import gcengine
from jaato_web.dashboard import background, presenters, services, storage
from jaato_web.dashboard.models import AgentSession, GCRun, Policy, Project, Removal, Replay
from jaato_web.dashboard.services import quality
from jaato_web.teams.permissions import Role
from tests.web.conftest import make_member, signed_in_client
from tests.web.policy_data import form_data
from tests.web.test_compactions import claude_code_file

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.web.policy_fixtures"]

# The demo's coding agent over 40 turns, about 78,000 tokens: against a 20,000-token window
# every policy below has work to do, and its turns hold paths, errors, decisions, open work.
WINDOW = 20_000
TRUNCATE = {"type": "truncate", "threshold_percent": 80, "target_percent": 40}
CONTINUOUS = {
    "type": "budget",
    "threshold_percent": 80,
    "target_percent": 60,
    "pressure_percent": 0,
    "preserve_recent_turns": 2,
}


@pytest.fixture
def demo(project: Project) -> AgentSession:
    data = json.dumps(gcengine.generate_demo_session(gcengine.DemoShape(turns=40))).encode()
    receipt = background.session_upload(project=project, filename="demo-40.json", data=data)
    assert receipt.session is not None
    return receipt.session


@pytest.fixture
def truncate(project: Project) -> Policy:
    return services.policy_create(project=project, name="Truncate 80/40", config=TRUNCATE)


@pytest.fixture
def continuous(project: Project) -> Policy:
    return services.policy_create(project=project, name="Continuous 80/60", config=CONTINUOUS)


def engine_of(session: AgentSession) -> gcengine.Session:
    return gcengine.with_context_limit(services.engine_session_of(session), WINDOW)


@pytest.fixture
def truncated(demo: AgentSession, truncate: Policy, run_finished: Callable[..., GCRun]) -> GCRun:
    return run_finished(demo, policy_version=truncate.versions.get(), context_limit=WINDOW)


# --- Runs, gates and the review queue --------------------------------------------------------


def test_a_run_stores_the_engines_score_of_what_it_took_out(
    truncated: GCRun, demo: AgentSession
) -> None:
    before = engine_of(demo)
    after = gcengine.run_gc(before, gcengine.load_gc_config(TRUNCATE, env={})).session.history
    expected = gcengine.score_collection(before, after)
    stored = storage.retention_read(truncated.retention)
    assert stored == expected
    assert stored is not None
    assert stored.anchors > 100


def test_the_run_page_says_what_was_kept_and_flags_the_gates(
    client: Client, truncated: GCRun
) -> None:
    retention = storage.retention_read(truncated.retention)
    assert retention is not None
    html = client.get(reverse("run_detail", args=[truncated.pk])).content.decode()
    kept = sum(c.retained for c in retention.classes)
    assert (
        f"Anchor retention {presenters.share(retention.score)}: {kept:,} of the "
        f"{retention.anchors:,} anchors in the context before the run are still in view after "
        f"it, weighted by class, in {retention.tokens_after:,} tokens (of "
        f"{retention.tokens_before:,} before)."
    ) in html
    # A truncation keeps none of the decisions it removes, only the ones it leaves: the
    # share of the whole context's is under the gate.
    decisions = retention.of_class(gcengine.AnchorClass.DECISIONS).recall
    assert decisions is not None
    assert decisions < 0.95
    assert "Under the project's retention gates:" in html
    assert (
        f"decisions and constraints {presenters.share(decisions)}, under the gate of 95.0 %"
    ) in html
    assert 'data-under-gate="decisions"' in html
    assert "It is not what the agent remembers" in html
    # Each class's row: its anchors in the context before, then those still in view after.
    assert '<th scope="col" class="num">In the context before</th><th scope="col" ' in html
    paths = retention.of_class(gcengine.AnchorClass.PATHS)
    assert paths.anchors > paths.retained
    assert (
        f'<td class="num">{paths.anchors:,}</td>\n          <td class="num">{paths.retained:,}</td>'
    ) in html
    # What went is what the run's ledger freed, the figures the agent recorded included.
    freed = sum(Removal.objects.filter(run=truncated).values_list("tokens_freed", flat=True))
    assert retention.removed_tokens == freed
    assert (f"for the {retention.removed_messages:,} messages ({freed:,} tokens) that went") in html
    # A run keeps the anchors it lost, and lists the first of each class.
    assert "First lost" in html
    assert '<td class="lost"><code>' in html
    # One anchor a line: an anchor can hold commas of its own ("1 failed, 18 passed").
    assert "</code>, <code>" not in html
    assert "</code><code>" in html


def test_the_review_queue_flags_a_run_under_a_gate_and_not_one_above(
    client: Client,
    project: Project,
    truncated: GCRun,
    demo: AgentSession,
    run_finished: Callable[..., GCRun],
) -> None:
    gentle = services.policy_create(
        project=project,
        name="Gentle",
        config={"type": "truncate", "threshold_percent": 99, "target_percent": 98},
    )
    untouched = run_finished(demo, policy_version=gentle.versions.get())
    # A run that removed nothing is listed only when asked for.
    html = client.get(reverse("review_queue") + "?empty=1").content.decode()
    rows = {
        run.pk: html.split(f"Run {run.pk}</a>", 1)[1].split("</tr>", 1)[0]
        for run in (truncated, untouched)
    }
    retention = storage.retention_read(truncated.retention)
    assert retention is not None
    decisions = retention.of_class(gcengine.AnchorClass.DECISIONS).recall
    assert "under a gate" in rows[truncated.pk]
    assert f"decisions and constraints {presenters.share(decisions)}" in rows[truncated.pk]
    assert "under a gate" not in rows[untouched.pk]
    assert "100.0 %" in rows[untouched.pk]  # it took nothing out: it kept every anchor


def test_a_run_is_done_with_its_ledger_before_its_retention_is_scored(
    client: Client,
    project: Project,
    demo: AgentSession,
    truncate: Policy,
    run_finished: Callable[..., GCRun],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Scoring a long session takes seconds: the run page shows the ledger meanwhile, says the
    score is coming and follows it, and the API says so too."""
    score = gcengine.score_collection
    seen: dict[str, Any] = {}

    def score_while_looking(*args: Any, **kwargs: Any) -> gcengine.AnchorRetention:
        run = GCRun.objects.get(session=demo)
        seen["run"] = (run.status, run.retention_pending, run.retention, run.removals.count())
        seen["page"] = client.get(reverse("run_detail", args=[run.pk])).content.decode()
        seen["poll"] = client.get(reverse("run_retention", args=[run.pk])).content.decode()
        seen["api"] = client.get(f"/api/runs/{run.pk}").json()
        return score(*args, **kwargs)

    monkeypatch.setattr(gcengine, "score_collection", score_while_looking)
    run = run_finished(demo, policy_version=truncate.versions.get(), context_limit=WINDOW)

    status, pending, retention, removals = seen["run"]
    assert (status, pending, retention) == ("done", True, None)
    assert removals == run.removals.count() > 0
    assert "data-scoring" in seen["page"]
    assert f'hx-get="{reverse("run_retention", args=[run.pk])}"' in seen["page"]
    assert 'id="ledger-heading"' in seen["page"]
    assert "data-scoring" in seen["poll"]
    assert "hx-trigger" in seen["poll"]
    assert seen["api"]["retention_pending"] is True
    assert seen["api"]["anchor_retention"] is None

    assert (run.retention_pending, run.claimed_by, run.lease_until) == (False, "", None)
    retention = storage.retention_read(run.retention)
    assert retention is not None
    poll = client.get(reverse("run_retention", args=[run.pk])).content.decode()
    assert "data-scoring" not in poll
    assert "hx-trigger" not in poll
    assert f"Anchor retention {presenters.share(retention.score)}: " in poll
    # The gate flag above the figures arrives with the score.
    assert 'id="run-gate-flag" hx-swap-oob="true"' in poll
    assert "Under the project's retention gates:" in poll
    assert client.get(f"/api/runs/{run.pk}").json()["retention_pending"] is False


def test_a_scorer_that_fails_leaves_the_run_done_and_says_so(
    client: Client,
    demo: AgentSession,
    truncate: Policy,
    run_finished: Callable[..., GCRun],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fail(*args: Any, **kwargs: Any) -> gcengine.AnchorRetention:
        raise ValueError("boom from a bug")

    monkeypatch.setattr(gcengine, "score_collection", fail)
    run = run_finished(demo, policy_version=truncate.versions.get(), context_limit=WINDOW)

    retention = storage.retention_read(run.retention)
    assert retention is not None
    assert not run.retention_pending
    assert retention.unscorable == "scoring it failed (ValueError); the server log says why"
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "No anchor retention for the run: scoring it failed (ValueError)" in html
    assert run.removals.exists()


def test_a_project_without_gates_flags_nothing(
    client: Client, project: Project, truncated: GCRun
) -> None:
    quality.project_quality_save(project=project, gates={}, prices=None)
    html = client.get(reverse("run_detail", args=[truncated.pk])).content.decode()
    assert "Under the project's retention gates" not in html
    assert "data-under-gate" not in html


# --- The project's gates and prices ----------------------------------------------------------


def test_gates_and_prices_are_edited_on_their_page(client: Client, project: Project) -> None:
    page = client.get(reverse("project_quality", args=[project.pk])).content.decode()
    defaults = "decisions and constraints at 95.0 % and open work at 95.0 %"
    assert f"The project uses the default gates: {defaults}." in page
    assert 'value="claude-sonnet-4"' in page

    rows = [p.model_dump() for p in gcengine.DEFAULT_PRICES]
    data: dict[str, Any] = {
        "price-count": len(rows) + 1,
        "gate_decisions": "90",
        "gate_paths": "50",
    }
    for n, row in enumerate(rows):
        for key, value in row.items():
            data[f"price-{n}-{key}"] = "" if value is None else value  # as the page shows it
    data["price-0-remove"] = "1"  # drop claude-sonnet-4
    data.update(
        {
            f"price-{len(rows)}-model": "gpt-4",
            f"price-{len(rows)}-input_per_mtok": "30",
            f"price-{len(rows)}-cache_write_per_mtok": "30",
            f"price-{len(rows)}-cache_read_per_mtok": "15",
        }
    )
    answer = client.post(reverse("project_quality_save", args=[project.pk]), data)
    assert answer.status_code == 302
    project.refresh_from_db()
    assert project.retention_gates == {"decisions": 0.9, "paths": 0.5}
    assert [p["model"] for p in project.prices][-1] == "gpt-4"
    assert "claude-sonnet-4" not in [p["model"] for p in project.prices]

    data[f"price-{len(rows)}-input_per_mtok"] = "-1"
    refused = client.post(reverse("project_quality_save", args=[project.pk]), data)
    assert refused.status_code == 400
    assert f"Row {len(rows) + 1}, Input $ / M tokens:" in refused.content.decode()

    client.post(reverse("project_quality_save", args=[project.pk]), {"reset": "defaults"})
    project.refresh_from_db()
    assert project.retention_gates is None
    assert project.prices is None


def test_a_viewer_sees_the_gates_but_may_not_change_them(project: Project) -> None:
    viewer = signed_in_client(make_member(project, "vera", Role.VIEWER))
    page = viewer.get(reverse("project_quality", args=[project.pk]))
    assert page.status_code == 200
    assert "Editors and admins of the project may change these." in page.content.decode()
    refused = viewer.post(reverse("project_quality_save", args=[project.pk]), {"reset": "defaults"})
    assert refused.status_code == 403


# --- Replays: every collection scored, the cost with the cache counted -----------------------


@pytest.fixture
def continuous_replay(
    demo: AgentSession, continuous: Policy, django_capture_on_commit_callbacks: Any
) -> Replay:
    with django_capture_on_commit_callbacks(execute=True):
        replay = background.replay_request(
            session=demo, policy_version=continuous.versions.get(), context_limit=WINDOW
        )
    replay.refresh_from_db()
    assert replay.status == "done"
    return replay


def test_a_replay_scores_each_collection_and_prices_its_requests(
    client: Client, continuous_replay: Replay, demo: AgentSession
) -> None:
    series = continuous_replay.series
    assert series is not None
    engine = engine_of(demo)
    simulation = gcengine.simulate(
        engine, gcengine.load_gc_config(CONTINUOUS, env={}), score_anchors=True
    )
    assert series["requests"] == [
        [r.turn_index, r.tokens, r.shared_prefix_tokens] for r in simulation.requests
    ]
    assert [e["retention"]["score"] for e in series["events"]] == [
        e.retention.score for e in simulation.events if e.retention
    ]
    price = gcengine.price_for_model(demo.model_name, gcengine.DEFAULT_PRICES)
    assert price is not None
    policy = gcengine.cache_cost(simulation.requests, price)
    without = gcengine.cache_cost(gcengine.requests_without_gc(engine), price)

    html = client.get(reverse("replay_detail", args=[continuous_replay.pk])).content.decode()
    assert "Anchor retention of its collections" in html
    assert f"{policy.usage.tokens_sent:,} tokens in all" in html
    assert f"({without.usage.tokens_sent:,})" in html
    change = abs(policy.dollars - without.dollars) / without.dollars * 100
    direction = "more" if policy.dollars > without.dollars else "less"
    assert (
        f"it costs {presenters.dollars(policy.dollars)}, {change:.1f} % {direction} than "
        f"without GC ({presenters.dollars(without.dollars)})."
    ) in html
    rewrites = policy.usage.cache_write_tokens > without.usage.cache_write_tokens
    assert ("Its collections rewrite the prompt" in html) is rewrites


def test_a_session_without_a_price_says_so(
    client: Client, project: Project, continuous_replay: Replay
) -> None:
    quality.project_quality_save(project=project, gates=None, prices=[])
    html = client.get(reverse("replay_detail", args=[continuous_replay.pk])).content.decode()
    assert "price table matches the model claude-sonnet-4, so the cost is not worked out" in html
    assert "Input cost" not in html


def test_a_replay_drawn_before_requests_were_recorded_is_drawn_again(
    continuous_replay: Replay,
    demo: AgentSession,
    continuous: Policy,
    django_capture_on_commit_callbacks: Any,
) -> None:
    series = dict(continuous_replay.series or {})
    del series["requests"], series["requests_without_gc"]
    Replay.objects.filter(pk=continuous_replay.pk).update(series=series)
    with django_capture_on_commit_callbacks(execute=True):
        again = background.replay_request(
            session=demo, policy_version=continuous.versions.get(), context_limit=WINDOW
        )
    again.refresh_from_db()
    assert again.pk == continuous_replay.pk
    assert again.status == "done"
    assert "requests" in (again.series or {})


# --- The agent's own compactions --------------------------------------------------------------


def test_each_compaction_of_the_agent_is_scored_on_the_session_page(
    client: Client, project: Project
) -> None:
    receipt = background.session_upload(
        project=project, filename="generated-claude-code.jsonl", data=claude_code_file()
    )
    session = receipt.session
    assert session is not None
    engine = services.engine_session_of(session)
    expected = gcengine.score_observed_compactions(engine)
    stored = [c["retention"] for c in session.agent_state["compactions"]]
    assert stored == [
        storage.retention_record(expected[c.compaction_id]) for c in engine.compactions
    ]
    html = client.get(reverse("session_detail", args=[session.pk])).content.decode()
    assert html.count("data-compaction-retention") == len(engine.compactions)
    first = expected[engine.compactions[0].compaction_id]
    assert f"Anchor retention: {presenters.share(first.score)}" in html


# --- The editor preview and the compare page ---------------------------------------------------


def test_the_editor_preview_shows_its_anchor_retention(
    client: Client, demo: AgentSession, truncate: Policy
) -> None:
    html = client.post(
        reverse("policy_preview"),
        form_data(TRUNCATE, session=demo.pk, window=WINDOW, policy=truncate.pk),
    ).content.decode()
    engine = engine_of(demo)
    after = gcengine.run_gc(engine, gcengine.load_gc_config(TRUNCATE, env={})).session.history
    score = gcengine.score_collection(engine, after).score
    assert f"Anchor retention: {presenters.share(score)}" in html
    assert "Under the project's retention gates" in html


def ranked_page(client: Client, url: str, capture: Any) -> str:
    """The compare page at ``url`` once the worker has ranked what it asked for."""
    with capture(execute=True):
        assert 'data-ranking-state="queued"' in client.get(url).content.decode()
    return client.get(url).content.decode()


def test_the_compare_page_ranks_policies_over_sessions(
    client: Client,
    demo: AgentSession,
    truncate: Policy,
    continuous: Policy,
    django_capture_on_commit_callbacks: Any,
) -> None:
    a, b = truncate.versions.get(), continuous.versions.get()
    url = reverse("policy_compare")
    query = f"?session={demo.pk}&a={a.pk}&b={b.pk}&window={WINDOW}"
    capture = django_capture_on_commit_callbacks
    by_cost = ranked_page(client, f"{url}{query}&by=cost", capture)
    engine = engine_of(demo)
    price = gcengine.price_for_model(demo.model_name, gcengine.DEFAULT_PRICES)
    assert price is not None
    costs = {
        version.pk: gcengine.cache_cost(
            gcengine.simulate(engine, gcengine.load_gc_config(config, env={})).requests, price
        ).dollars
        for version, config in ((a, TRUNCATE), (b, CONTINUOUS))
    }
    cheaper = min(costs, key=lambda pk: costs[pk])
    assert f'data-rank="1" data-version="{cheaper}"' in by_cost
    assert presenters.dollars(costs[cheaper]) in by_cost
    assert "Ranking over 1 session" in by_cost
    assert "against a window of 20,000 tokens" in by_cost

    by_retention = ranked_page(client, f"{url}{query}", capture)
    # The truncation's collections leave decisions under the gate; the continuous policy's
    # small ones keep the preservable content, so it ranks first by gates and retention.
    assert f'data-rank="1" data-version="{b.pk}"' in by_retention


def test_the_api_ranks_as_the_page_does(
    client: Client,
    demo: AgentSession,
    truncate: Policy,
    continuous: Policy,
    django_capture_on_commit_callbacks: Any,
) -> None:
    a, b = truncate.versions.get(), continuous.versions.get()
    asked = {
        "session_ids": [demo.pk],
        "version_ids": [a.pk, b.pk],
        "by": "cost",
        "context_limit": WINDOW,
    }
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post("/api/policies/rank", asked, content_type="application/json")
    assert started.status_code == 202
    answer = client.get(started.json()["url"])
    assert answer.status_code == 200
    ranks = answer.json()["result"]["ranks"]
    assert [r["rank"] for r in ranks] == [1, 2]
    assert ranks[0]["cost"] <= ranks[1]["cost"]
    assert ranks[0]["sessions"][0]["session_id"] == demo.pk
    # Retention is compared at equal size: the larger context after is cut to the smaller's.
    equal = [r["sessions"][0]["anchor_retention_at_equal_size"] for r in ranks]
    assert equal[0]["size"] == equal[1]["size"] == max(e["tokens_after"] for e in equal) > 0
    assert [r["anchor_retention_at_equal_size"]["size"] for r in ranks] == [equal[0]["size"]] * 2
    refused = client.post(
        "/api/policies/rank",
        {"session_ids": [demo.pk], "version_ids": [a.pk], "by": "mood"},
        content_type="application/json",
    )
    assert refused.status_code == 400
    assert refused.json()["key"] == "by"


# --- Export -----------------------------------------------------------------------------------


def test_a_version_exports_to_other_frameworks_in_page_and_api(
    client: Client, truncate: Policy
) -> None:
    html = client.get(
        reverse("policy_version_export", args=[truncate.pk, 1]) + "?window=100000"
    ).content.decode()
    assert "Anthropic context editing" in html
    assert "Claude Code environment" in html
    assert "export CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=80" in html
    assert "80000" in html  # the trigger, 80 % of 100,000
    assert "with no counterpart" in html

    answer = client.get(f"/api/policies/{truncate.pk}/versions/1/export?context_window=100000")
    assert answer.status_code == 200
    exported = answer.json()
    assert exported["context_window"] == 100_000
    expected = gcengine.export_policy(gcengine.load_gc_config(TRUNCATE, env={}), 100_000)
    assert exported == json.loads(expected.model_dump_json())

    small = client.get(f"/api/policies/{truncate.pk}/versions/1/export?context_window=10")
    assert small.status_code == 400
    assert small.json()["key"] == "context_limit"


def test_an_export_is_for_the_window_of_the_projects_newest_session(
    client: Client, truncate: Policy, demo: AgentSession
) -> None:
    answer = client.get(f"/api/policies/{truncate.pk}/versions/1/export")
    assert answer.status_code == 200
    assert answer.json()["context_window"] == demo.context_limit

    page = client.get(reverse("policy_version_export", args=[truncate.pk, 1]))
    assert page.status_code == 200
    assert f'value="{demo.context_limit}"' in page.content.decode()


def test_an_export_without_a_session_asks_for_the_window(client: Client, truncate: Policy) -> None:
    answer = client.get(f"/api/policies/{truncate.pk}/versions/1/export")
    assert answer.status_code == 400
    assert answer.json()["key"] == "context_window"

    page = client.get(reverse("policy_version_export", args=[truncate.pk, 1]))
    assert page.status_code == 200
    assert "Anthropic context editing" not in page.content.decode()


# --- The API ----------------------------------------------------------------------------------


def test_the_api_gives_a_runs_score_and_gates(client: Client, truncated: GCRun) -> None:
    run = client.get(f"/api/runs/{truncated.pk}").json()
    assert run["anchor_retention"]["score"] == storage.retention_read(truncated.retention).score
    assert {f["anchor_class"] for f in run["gate_failures"]} == {"decisions", "open_work"}


def test_the_api_reads_and_sets_gates_and_prices(client: Client, project: Project) -> None:
    url = f"/api/projects/{project.pk}/quality"
    assert client.get(url).json()["gates"] == {"decisions": 0.95, "open_work": 0.95}
    answer = client.put(url, {"gates": {"errors": 0.5}}, content_type="application/json")
    assert answer.status_code == 200
    assert answer.json()["gates"] == {"errors": 0.5}
    assert answer.json()["prices_are_defaults"] is True
    refused = client.put(
        url, {"prices": [{"model": "x", "input_per_mtok": "lots"}]}, content_type="application/json"
    )
    assert refused.status_code == 400
    assert refused.json()["key"] == "prices[0].input_per_mtok"
