"""A replay works at each collection from the one before: it lays the window out from the
last layout, and tells the scorer which run of turns a collection took, so the scorer does not
compare the windows message by message. Its figures must be what laying out the window afresh
and scoring each context with a new scorer give."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import gcengine
from gcengine import AnchorRetention, AnchorScorer, Message, Session
from gcengine.conversation import ConversationIndex
from gcengine.quality.anchor_text import is_literal_word, literal_found
from gcengine.quality.anchors import MatchRule
from gcengine.quality.reading import AnchorCache
from gcengine.quality.replay_scoring import ReplayScorer, _keys, _shows
from gcengine.quality.retention import session_corpus
from gcengine.running import load_gc_plugin, simulate
from gcengine.session import (
    index_conversation,
    iso_to_epoch,
    recorded_clarifications,
    recorded_message_figures,
)
from gcengine.synthetic import SessionShape, generate_session_file

POLICIES = [
    {"type": "truncate", "pressure_percent": 0},
    {"type": "truncate", "pressure_percent": 0, "notify_on_gc": True},
    {"type": "truncate", "preserve_recent_exchanges": None, "pinned_turn_indices": [3]},
    {"type": "budget", "pressure_percent": 0},
    {"type": "budget"},
    {"type": "summarize", "pressure_percent": 0},
    {"type": "hybrid"},
]


def synthetic(seed: int, turns: int, limit: int, recorded: bool = False) -> Session:
    """A generated session; ``recorded``: with JAATO's budget of it, whose entries a
    collection takes out too."""
    shape = SessionShape(turns=turns, seed=seed, with_budget_state=recorded)
    return gcengine.with_context_limit(gcengine.load_session(generate_session_file(shape)), limit)


SESSIONS = st.builds(
    synthetic,
    st.integers(0, 10_000),
    st.integers(12, 60),
    st.sampled_from([6_000, 12_000, 25_000]),
    st.booleans(),
)


class _Counting(AnchorScorer):
    """A scorer kept along the replay, counting the collections it was told the run of."""

    taken = 0

    def score_taken(
        self, before: Sequence[Message], after: Sequence[Message], first: int, end: int
    ) -> AnchorRetention:
        self.taken += 1
        return super().score_taken(before, after, first, end)


class _Recounting(AnchorScorer):
    """Scores every context afresh: a new scorer each time, which compares the windows."""

    def score_change(self, before: Sequence[Message], after: Sequence[Message]) -> AnchorRetention:
        return AnchorScorer(self.cache, lambda m: self.tokens_of([m])).score_change(before, after)

    def score_taken(
        self, before: Sequence[Message], after: Sequence[Message], first: int, end: int
    ) -> AnchorRetention:
        return self.score_change(before, after)


def scorers(session: Session) -> tuple[_Counting, _Recounting]:
    """Two scorers counting a message as the replay does."""
    replays = gcengine.replay_scorer(session)

    def tokens(message: Message) -> int:
        return replays.tokens_of([message])

    return _Counting(session_corpus(session), tokens), _Recounting(session_corpus(session), tokens)


@settings(max_examples=40, deadline=None)
@given(SESSIONS, st.sampled_from(POLICIES))
def test_a_replay_scores_each_collection_as_a_new_scorer_of_that_context_does(
    session: Session, policy: dict[str, Any]
) -> None:
    config = gcengine.load_gc_config(policy, env={})
    kept, fresh = scorers(session)
    scored = simulate(session, config, score_anchors=True, scorer=kept)
    assert scored == simulate(session, config, score_anchors=True, scorer=fresh)
    plain = simulate(session, config)
    assert plain.steps == scored.steps
    assert [e.result for e in plain.events] == [e.result for e in scored.events]


def test_a_truncating_replay_tells_the_scorer_the_run_each_collection_took() -> None:
    session = synthetic(1, 200, 20_000)
    config = gcengine.load_gc_config(POLICIES[0], env={})
    kept, fresh = scorers(session)
    scored = simulate(session, config, score_anchors=True, scorer=kept)
    assert len(scored.events) > 100
    assert kept.taken == len(scored.events)
    assert scored == simulate(session, config, score_anchors=True, scorer=fresh)
    assert scored == simulate(session, config, score_anchors=True)


class _Checking:
    """A plugin the engine does not know, collecting as ``inner`` does: it is handed the
    window's budget tree (laid out from what the replay kept), and checks it and the usage
    the replay's running total gave against the budget built afresh for that window."""

    name = "checking"

    def __init__(self, inner: str, session: Session) -> None:
        self.inner = load_gc_plugin(inner)
        self.session, self.checked = session, 0
        self.usage: dict[str, Any] = {}

    def initialize(self, config: Any = None) -> None: ...

    def shutdown(self) -> None: ...

    def should_collect(self, usage: Any, config: gcengine.GCConfig) -> Any:
        self.usage = dict(usage)
        return self.inner.should_collect(usage, config)

    def collect(self, history: Any, usage: Any, config: Any, reason: Any, budget: Any) -> Any:
        window = self.session.model_copy(update={"history": list(history)})
        built = gcengine.rebuild_budget(window, gcengine.counter_by_name(window.token_counter))
        assert budget == built
        assert self.usage["total_tokens"] == built.total_tokens()
        self.checked += 1
        return self.inner.collect(history, usage, config, reason, budget)


@settings(max_examples=25, deadline=None)
@given(SESSIONS, st.sampled_from(POLICIES))
def test_a_replay_lays_each_window_out_as_a_budget_built_for_it_afresh(
    session: Session, policy: dict[str, Any]
) -> None:
    config = gcengine.load_gc_config(policy, env={})
    checking = _Checking(policy["type"], session)
    replay = simulate(session, config, plugin=checking)  # type: ignore[arg-type]
    ours = simulate(session, config)
    assert checking.checked == len(replay.events)
    assert json.loads(replay.model_dump_json(exclude={"plugin"})) == json.loads(
        ours.model_dump_json(exclude={"plugin"})
    )


class _Watching(ReplayScorer):
    """The scorer a replay makes for itself, counting the contexts it scored by comparing
    or counting them whole (``AnchorScorer.score``) rather than from the run taken."""

    compared = 0

    def score(self, *args: Any, **kwargs: Any) -> AnchorRetention:
        self.compared += 1
        return super().score(*args, **kwargs)


def watching(session: Session) -> _Watching:
    replays = gcengine.replay_scorer(session)
    return _Watching(replays.cache, lambda m: replays.tokens_of([m]), session.history)


@settings(max_examples=40, deadline=None)
@given(SESSIONS, st.sampled_from(POLICIES))
def test_a_replay_scorer_scores_each_collection_as_a_new_scorer_of_that_context_does(
    session: Session, policy: dict[str, Any]
) -> None:
    config = gcengine.load_gc_config(policy, env={})
    _, fresh = scorers(session)
    scored = simulate(session, config, score_anchors=True, scorer=watching(session))
    assert scored == simulate(session, config, score_anchors=True, scorer=fresh)
    assert scored == simulate(session, config, score_anchors=True)


def test_a_truncating_replay_scores_each_collection_from_the_run_it_took() -> None:
    session = synthetic(2, 300, 20_000)
    config = gcengine.load_gc_config(POLICIES[0], env={})
    replays = watching(session)
    scored = simulate(session, config, score_anchors=True, scorer=replays)
    assert len(scored.events) > 150
    assert replays.compared == 0
    assert scored == simulate(session, config, score_anchors=True, scorer=scorers(session)[1])
    # Shared by a second replay of the session, it starts from an empty window again.
    assert simulate(session, config, score_anchors=True, scorer=replays) == scored
    assert replays.compared == 0


def test_a_replay_scorer_scores_a_window_the_session_does_not_hold_as_any_scorer() -> None:
    session = synthetic(3, 40, 12_000)
    replays = watching(session)
    history = session.history
    stranger = history[5].model_copy(update={"message_id": "not-in-the-session"})
    before = [*history[:20], stranger, *history[20:30]]
    after = before[:1] + before[12:]
    _, fresh = scorers(session)
    assert replays.score_taken(before, after, 1, 12) == fresh.score_change(before, after)
    assert replays.compared == 1
    twice = [*history[:20], history[3]]
    assert replays.score_taken(twice, twice[:2], 2, 21) == fresh.score_change(twice, twice[:2])


def _laid_out(index: ConversationIndex) -> tuple[object, ...]:
    """What an index says of its window, as a collection reads it."""
    layout = index.layout
    return (
        list(index.messages),
        list(layout.starts),
        list(layout.indices),
        index.tokens,
        index.policies,
        index.created_at,
        index.counted_by,
        index.closing,
        index.exchange_groups,
        index.original,
    )


@settings(max_examples=25, deadline=None)
@given(SESSIONS, st.sampled_from(POLICIES))
def test_each_window_a_strategy_collects_is_laid_out_as_if_afresh(
    session: Session, policy: dict[str, Any]
) -> None:
    """The replay lays each window out from the last one (after a collection, by how the
    collection cut it): what the strategy is handed is the window's own layout."""
    config = gcengine.load_gc_config(policy, env={})
    strategy = load_gc_plugin(policy["type"])
    recorded = recorded_message_figures(session.recorded_budget)
    clarifications = recorded_clarifications(session.recorded_budget)
    created_base = iso_to_epoch(session.created_at) or 0.0
    counter = gcengine.counter_by_name(session.token_counter)
    checked = []

    class Checking(type(strategy)):  # type: ignore[misc]
        def collect_cut(self, history: Any, *args: Any, **kwargs: Any) -> Any:
            fresh, _ = index_conversation(
                history,
                counter,
                recorded_figures=recorded,
                clarifications=clarifications,
                created_base=created_base,
                exchange_figures=False,
            )
            assert _laid_out(kwargs["conversation"]) == _laid_out(fresh)
            checked.append(len(history))
            return super().collect_cut(history, *args, **kwargs)

    checking = copy.copy(strategy)
    checking.__class__ = Checking
    replay = simulate(session, config, plugin=checking)
    assert len(checked) == len(replay.events)
    assert replay == simulate(session, config, plugin=strategy)


def test_a_replay_scorer_reads_each_message_as_showing_the_literal_keys_its_text_holds() -> None:
    """What a replay's scorer reads of each message, against what an anchor in view is: a
    literal key of the session (one of several words too: a path) is shown by exactly the
    messages whose text holds it as whole words. Replays reach keys of several words only when
    a message shows one it does not hold, which generated sessions seldom do."""
    session = synthetic(4, 150, 20_000)
    cache = AnchorCache(session_corpus(session))
    history = session.history
    keys = _keys(map(cache.held_of, history), map(cache.view_of, history))
    literal = {
        anchor.key
        for message in history
        for anchor in cache.held_of(message).anchors
        if anchor.rule is MatchRule.LITERAL
    }
    longer = {key for key in literal if not is_literal_word(key)}
    assert len(longer) > 10
    assert not keys.whole_text
    for message in history:
        view = cache.view_of(message)
        shown = set(_shows(view, keys).literal)
        assert shown & longer == {key for key in longer if literal_found(view.text, key)}
        assert shown - longer == view.literal_words & literal
