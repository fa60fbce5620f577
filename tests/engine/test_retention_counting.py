"""A scorer counts the first context it scores at once (``ContextAnchors``: each anchor's last
mention in one pass, what a compaction kept counted from what it kept) and the contexts after
it with its tally: both must give every figure a plain recount of the context gives, whether
the words in view are gathered or each lost sentence anchor is tried in every view."""

from __future__ import annotations

from itertools import cycle
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

import gcengine
from gcengine import AnchorScorer, Message
from gcengine.quality import counting
from gcengine.quality.retention import LOST_SHOWN
from tests.engine.test_anchor_retention import TEXTS, summary
from tests.engine.test_replay_incremental import synthetic
from tests.engine.test_retention_tally import _alike, figures, message, recount, tokens

# Most scores of a replay try a few anchors one by one, a run's score thousands: the words in
# view are gathered from ``_GATHERED_FROM`` of them on. Both ways are tried on every example.
EVERY_TIME, NEVER = 0, 10**9


def _tallied(before: list[Message], after: list[Message]) -> gcengine.AnchorRetention:
    """``after`` scored by a scorer whose tally counts ``before`` (it scored another context
    first, so it counts this one anchor by anchor)."""
    scorer = AnchorScorer(before, tokens)
    scorer.score_change(before[:1], before[:1])
    return scorer.score_change(before, after)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(TEXTS, st.booleans()), min_size=1, max_size=40),
    st.lists(st.booleans(), min_size=1, max_size=12),
    st.one_of(st.none(), TEXTS),
)
def test_a_first_score_counted_at_once_is_a_recount_and_the_tallys_score(
    texts: list[tuple[str, bool]], mask: list[bool], written: str | None
) -> None:
    before = [message(text, n, user) for n, (text, user) in enumerate(texts)]
    after = [m for m, keep in zip(before, cycle(mask), strict=False) if keep]
    if written is not None:
        after.insert(len(after) // 2, summary(written))
    removed = [m for m in before if not any(_alike(m, o) for o in after)]
    scores = []
    for gathered_from in (EVERY_TIME, NEVER):
        with patch.object(counting, "_GATHERED_FROM", gathered_from):
            scorer = AnchorScorer(before, tokens)
            scores.append(scorer.score_change(before, after))
            assert figures(scores[-1]) == recount(before, after, removed, scorer.context)
            scores.append(_tallied(before, after))
    assert all(score == scores[0] for score in scores)


def test_a_generated_run_counted_at_once_scores_as_a_tally_and_a_recount() -> None:
    """A run that keeps a few of many messages: hundreds of anchors lost, sentence anchors
    among them (tried in view with the words in view gathered), every class showing the
    first ten it lost."""
    session = synthetic(seed=7, turns=160, limit=12_000)
    run = gcengine.run_gc(session, gcengine.load_gc_config({"type": "budget"}, env={}))
    after = run.session.history
    cache = gcengine.anchor_cache(session)
    retention = gcengine.score_collection(session, after, cache)
    assert retention.anchors > 500
    assert retention.score is not None
    assert retention.score < 0.5
    assert max(len(c.lost) for c in retention.classes) == LOST_SHOWN
    again = gcengine.score_collection(session, after, cache)  # the cache's count of the history
    scorer = gcengine.session_scorer(session, cache)
    scorer.score_change(session.history[:1], session.history[:1])
    assert again == retention == scorer.score_change(session.history, after)
    removed = [m for m in session.history if not any(_alike(m, o) for o in after)]
    recounted = recount(session.history, after, removed, scorer.context)
    assert figures(retention)["classes"] == recounted["classes"]
    assert figures(retention)["recency"] == recounted["recency"]
