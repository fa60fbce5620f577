"""Dry runs: what a policy would remove from a stored session, computed and never stored."""

from __future__ import annotations

import pytest

from jaato_web import caches
from jaato_web.dashboard import presenters, previews, selectors, services
from jaato_web.dashboard.models import GCRun, Replay
from jaato_web.dashboard.services import stored_sessions
from tests.web.policy_data import BUDGET_POLICY, TRUNCATE_POLICY

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.web.policy_fixtures"]


def config(**changes: object):
    return services.config_validated({**TRUNCATE_POLICY, **changes})


def expected_truncation(session, target_percent: float, keep: set[int]) -> tuple[list[int], int]:
    """Oldest removable turns first until usage is at or below the target, from the figures
    stored at upload: the turn holding the locked request, the recent ones and ``keep`` stay."""
    turns = list(selectors.session_turns(session=session))
    recent = {t.turn_index for t in turns[-TRUNCATE_POLICY["preserve_recent_turns"] :]}
    target = session.context_limit * target_percent / 100
    total, removed = session.total_tokens, []
    for turn in turns:
        if total <= target:
            break
        if turn.policy == "locked" or turn.turn_index in recent | keep:
            continue
        removed.append(turn.turn_index)
        total -= turn.tokens
    return removed, total


def test_preview_removes_the_oldest_turns_down_to_the_target(agent_session):
    preview = previews.preview(agent_session, config())

    turns, tokens_after = expected_truncation(agent_session, 40, keep=set())
    assert [item.turn_index for item in preview.items] == turns
    assert {item.reason for item in preview.items} == {"truncated"}
    assert preview.tokens_before == agent_session.total_tokens
    assert preview.tokens_after == tokens_after
    assert preview.percent_after <= 40
    assert preview.tokens_freed == sum(item.tokens_freed for item in preview.items)


def test_preview_stores_nothing(agent_session):
    previews.preview(agent_session, config())

    assert GCRun.objects.count() == 0
    assert Replay.objects.count() == 0


def test_a_higher_target_removes_less(agent_session):
    low = previews.preview(agent_session, config(target_percent=30))
    high = previews.preview(agent_session, config(target_percent=55))

    assert len(high.items) < len(low.items)
    assert high.tokens_after > low.tokens_after


def test_a_pinned_turn_leaves_the_ledger(agent_session):
    first = previews.preview(agent_session, config()).items[0].turn_index
    assert first is not None

    pinned = previews.preview(agent_session, config(pinned_turn_indices=[first]))

    turns, tokens_after = expected_truncation(agent_session, 40, keep={first})
    assert first not in pinned.removed_turns
    assert [item.turn_index for item in pinned.items] == turns
    assert pinned.tokens_after == tokens_after


def test_trigger_state_follows_the_threshold(agent_session):
    usage = agent_session.utilization_percent

    below = previews.preview(agent_session, config(threshold_percent=usage + 5))
    above = previews.preview(agent_session, config(threshold_percent=usage - 5))

    assert below.would_trigger is False
    assert above.would_trigger is True
    assert above.trigger_reason == "threshold"


def test_the_llm_summarizer_is_swapped_for_the_offline_one(agent_session, monkeypatch):
    monkeypatch.delenv("JAATO_GC_LLM_BASE_URL", raising=False)
    llm = services.config_validated(
        {**TRUNCATE_POLICY, "type": "summarize", "plugin_config": {"summarizer": "llm"}}
    )

    preview = previews.preview(agent_session, llm)

    assert preview.success
    assert preview.notes == [previews.LLM_NOTE]
    assert {item.reason for item in preview.items} == {"summarized"}


def test_sessions_are_unpacked_once(agent_session, monkeypatch):
    caches.clear_all()  # a process that has not read it yet
    calls = []
    original = stored_sessions._stored_engine_session
    monkeypatch.setattr(
        stored_sessions, "_stored_engine_session", lambda s: calls.append(s.pk) or original(s)
    )

    previews.preview(agent_session, config())
    previews.preview(agent_session, config(target_percent=30))
    previews.replay(agent_session, config())

    assert calls == [agent_session.pk]


def test_replays_are_cached_per_gc_json(agent_session):
    assert previews.replay_cached(agent_session, config()) is None

    series = previews.replay(agent_session, config())

    assert previews.replay_cached(agent_session, config()) is series
    assert previews.replay_cached(agent_session, config(target_percent=30)) is None
    assert len(series["steps"]) >= agent_session.turn_count
    assert presenters.replay_chart(series).mode == "threshold"
    figures = presenters.replay_figures(series)
    assert figures.events == len(series["events"])


def test_a_replay_heavy_with_collections_weighs_what_it_holds_in_the_cache(
    agent_session, monkeypatch
):
    """Each scored collection carries its anchor retention: a scored continuous replay weighs
    more than its steps, so a cache that would fit its steps and another replay's pushes it
    out."""
    continuous = previews.replay(agent_session, config(pressure_percent=0), scored=True)
    assert continuous["events"]
    steps = len(continuous["steps"])  # two a turn, whatever the mode
    weight = steps + previews.COLLECTION_STEPS * len(continuous["events"])
    assert previews.replay_weight(continuous) == weight
    monkeypatch.setattr(previews.policies._replays, "limit", weight + steps - 1)

    previews.replay(agent_session, config())

    assert previews.replay_cached(agent_session, config()) is not None
    assert previews.replay_cached(agent_session, config(pressure_percent=0)) is None


def test_a_chart_is_replayed_without_scores_and_a_scored_replay_serves_it_too(
    agent_session, monkeypatch
):
    """Scoring is most of a long replay and a chart shows no score; what pools the scores
    (a ranking, the API's preview) asks for them, and a chart asked for later reuses that."""
    replayed = []
    series_of = services.replay_series_of
    monkeypatch.setattr(
        services,
        "replay_series_of",
        lambda *args, scored, **shared: (
            replayed.append(scored) or series_of(*args, scored=scored, **shared)
        ),
    )
    continuous = config(pressure_percent=0)

    chart = previews.replay(agent_session, continuous)
    scored = previews.replay(agent_session, continuous, scored=True)
    other = config(target_percent=30)
    scored_first = previews.replay(agent_session, other, scored=True)

    assert replayed == [False, True, True]
    assert chart["events"]
    assert all("retention" not in e for e in chart["events"])
    assert all("retention" in e for e in scored["events"])
    assert [e["tokens_after"] for e in chart["events"]] == [
        e["tokens_after"] for e in scored["events"]
    ]
    assert chart["steps"] == scored["steps"]
    assert previews.replay(agent_session, continuous) is scored
    assert previews.replay(agent_session, other) is scored_first
    assert previews.replay_weight(chart) == len(chart["steps"]) + len(chart["events"])


def test_long_continuous_replays_wait_for_a_click(agent_session, monkeypatch):
    continuous = config(pressure_percent=0)
    assert previews.replay_is_quick(agent_session, continuous)

    monkeypatch.setitem(previews.QUICK_REPLAY_TURNS, "continuous", agent_session.turn_count - 1)

    assert not previews.replay_is_quick(agent_session, continuous)
    assert previews.replay_is_quick(agent_session, config())


def test_compare_tells_what_only_one_policy_removes(agent_session):
    plain = config()
    pinned_turn = previews.preview(agent_session, plain).items[0].turn_index
    assert pinned_turn is not None

    comparison = previews.compare(agent_session, plain, config(pinned_turn_indices=[pinned_turn]))

    assert pinned_turn in comparison.only_a_turns
    assert pinned_turn not in comparison.only_b_turns
    assert comparison.only_b_turns  # B takes a later turn instead
    pinned_ids = {
        m["id"]
        for t in selectors.session_turns(session=agent_session)
        if t.turn_index == pinned_turn
        for m in t.messages
    }
    assert pinned_ids <= set(comparison.only_a_message_ids)
    assert not pinned_ids & set(comparison.only_b_message_ids)


def test_compare_of_two_strategies(agent_session):
    comparison = previews.compare(agent_session, config(), services.config_validated(BUDGET_POLICY))

    assert set(comparison.both_turns) <= comparison.a.removed_turns
    assert set(comparison.only_a_turns).isdisjoint(comparison.b.removed_turns)
    assert set(comparison.only_b_turns).isdisjoint(comparison.a.removed_turns)


def test_the_charts_of_long_sessions_are_kept_one_at_a_time():
    """A 10,000-turn continuous replay (20,000 steps, ~9,600 collections) is 7 MB unscored:
    the cache keeps it alone, so drawing one long session's chart after another holds one."""
    steps = [[turn // 2, "post_turn", 61, 60] for turn in range(20_000)]
    long_chart = {"steps": steps, "events": [{"success": True}] * 9_600}

    weight = previews.replay_weight(long_chart)

    assert weight <= previews.REPLAY_CACHE_STEPS < 2 * weight
