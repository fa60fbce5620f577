"""Whole-context retention: every anchor of the context before counts, so keeping more never
scores lower; policies compare at equal size, each context cut to the smallest one's tokens."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gcengine
from gcengine.messages import Message
from gcengine.quality.retention import (
    AnchorScorer,
    cut_to_size,
    scores_at_equal_size,
    session_corpus,
    session_scorer,
)
from gcengine.tokens import TokenCounter
from tests.engine.test_anchor_retention import TEXTS, model, summary

SPOTTER = Path(__file__).parents[1] / "fixtures" / "formats" / "spotter"
COMPACTED = sorted(p for p in SPOTTER.glob("*.jsonl") if p.name != "short.jsonl")
PROPERTY = settings(max_examples=60, deadline=None)


def tokens(message: Message) -> int:
    return len(message.text)


@st.composite
def contexts(draw: st.DrawFn) -> tuple[list[Message], list[int], list[int], list[Message]]:
    """A context, two sets of its messages kept (the second a superset of the first), and a
    summary written for what went, or none."""
    pool = [model(text, f"m{n}") for n, text in enumerate(draw(st.lists(TEXTS, min_size=1)))]
    kept = sorted(draw(st.sets(st.integers(0, len(pool) - 1))))
    more = sorted(set(kept) | draw(st.sets(st.integers(0, len(pool) - 1))))
    written = [summary(draw(TEXTS))] if draw(st.booleans()) else []
    return pool, kept, more, written


@PROPERTY
@given(contexts())
def test_keeping_a_superset_never_scores_lower(
    case: tuple[list[Message], list[int], list[int], list[Message]],
) -> None:
    pool, kept, more, written = case
    scorer = AnchorScorer([*pool, *written], tokens)
    fewer = scorer.score_change(pool, [*written, *(pool[i] for i in kept)])
    larger = scorer.score_change(pool, [*written, *(pool[i] for i in more)])
    assert fewer.anchors == larger.anchors
    if fewer.score is not None:
        assert larger.score is not None
        assert larger.score >= fewer.score
    for few, many in zip(fewer.classes, larger.classes, strict=True):
        assert many.retained >= few.retained
    assert larger.tokens_after >= fewer.tokens_after


@PROPERTY
@given(contexts(), contexts())
def test_a_comparison_at_equal_size_is_symmetric(
    one: tuple[list[Message], list[int], list[int], list[Message]],
    other: tuple[list[Message], list[int], list[int], list[Message]],
) -> None:
    pool, kept, more, written = one
    _, _, _, other_written = other
    a = [*written, *(pool[i] for i in kept)]
    b = [*other_written, *(pool[i] for i in more)]
    corpus = [*pool, *written, *other_written]
    forth = scores_at_equal_size(AnchorScorer(corpus, tokens), pool, {"a": a, "b": b})
    back = scores_at_equal_size(AnchorScorer(corpus, tokens), pool, {"b": b, "a": a})
    assert forth == back
    size = min(sum(map(tokens, a)), sum(map(tokens, b)))
    assert forth["a"].size == forth["b"].size == size
    assert forth["a"].tokens_after <= size
    assert forth["b"].tokens_after <= size


def test_a_cut_drops_verbatim_messages_oldest_first_and_summaries_last() -> None:
    written = summary("x" * 30)
    context = [model("a" * 10, "m1"), written, model("b" * 10, "m2"), model("c" * 10, "m3")]
    assert cut_to_size(context, tokens, 60) == context
    assert cut_to_size(context, tokens, 45) == [written, context[3]]
    assert cut_to_size(context, tokens, 30) == [written]
    assert cut_to_size(context, tokens, 29) == []


def test_removing_less_no_longer_loses_to_removing_more_on_the_hand_session() -> None:
    """The old figure scored only what went: keeping one message more could score lower.
    Every anchor of the context before counts now."""
    from tests.engine.test_anchor_retention import hand_session

    session = hand_session()
    history = session.history
    # The old figure: 2 of 12 for the first (round_money went but is still in view), 0 of 8
    # for the second, which keeps the message with round_money and the open work too.
    fewer = gcengine.score_collection(session, [history[0], history[3], history[-1]])
    more = gcengine.score_collection(session, [history[0], history[3], history[7], history[-1]])
    assert fewer.anchors == more.anchors == 8  # the seven, and the request both keep
    assert fewer.score is not None
    assert more.score is not None
    assert more.score > fewer.score
    assert more.tokens_after > fewer.tokens_after


def _claude_codes_compaction(
    session: gcengine.Session,
) -> tuple[list[Message], list[Message]]:
    """The context before the agent's compaction, and the one after: its summary and what
    it kept."""
    [compaction] = session.compactions
    pool = {m.message_id: m for m in session_corpus(session)}
    before = [pool[i] for i in compaction.context_before if i in pool]
    replaced = {m.message_id for m in compaction.replaced}
    [written] = [m for m in session.history if m.message_id == compaction.summary_message_id]
    return before, [written, *(m for m in before if m.message_id not in replaced)]


@pytest.mark.parametrize("path", COMPACTED, ids=lambda p: p.name[:8])
def test_claude_codes_compaction_is_scored_on_the_whole_context(
    path: Path, counter: TokenCounter
) -> None:
    """The agent's own compaction scores as a policy's run would: the context before against
    its summary and what it kept, with the tokens of both."""
    session = gcengine.load_session(path, counter=counter)
    [compaction] = session.compactions
    observed = gcengine.score_observed_compactions(session)[compaction.compaction_id]
    before, after = _claude_codes_compaction(session)
    scorer = session_scorer(session)
    assert observed.tokens_before == scorer.tokens_of(before) > 60_000
    assert observed.tokens_after == scorer.tokens_of(after) < 5_000
    assert observed.anchors > 250
    assert observed.score is not None
    assert 0.2 < observed.score < 0.4


@pytest.mark.parametrize("path", COMPACTED, ids=lambda p: p.name[:8])
def test_a_policy_that_keeps_everything_loses_its_lead_at_claude_codes_size(
    path: Path, counter: TokenCounter
) -> None:
    """Keeping the whole context scores 1 as it stands; cut to the size of Claude Code's
    summary and kept messages, it keeps only its newest messages, and the two are compared
    on the same number of tokens."""
    session = gcengine.load_session(path, counter=counter)
    before, claude_code = _claude_codes_compaction(session)
    scorer = session_scorer(session)
    assert scorer.score_change(before, before).score == 1.0
    equal = scores_at_equal_size(scorer, before, {"claude_code": claude_code, "all": before})
    size = scorer.tokens_of(claude_code)
    assert equal["claude_code"].size == equal["all"].size == size
    assert equal["claude_code"].score == scorer.score_change(before, claude_code).score
    assert equal["all"].tokens_after <= size
    assert equal["all"].score is not None
    assert equal["claude_code"].score is not None
    assert equal["all"].score < equal["claude_code"].score


@pytest.mark.parametrize("path", COMPACTED[:1], ids=lambda p: p.name[:8])
def test_policies_on_a_real_context_compare_at_claude_codes_size_in_either_order(
    path: Path, counter: TokenCounter
) -> None:
    """gc_budget and summarize collect the context Claude Code compacted; all three are
    scored at the size of the smallest, the same figures whichever order they come in."""
    session = gcengine.load_session(path, counter=counter)
    before, claude_code = _claude_codes_compaction(session)
    scorer = session_scorer(session)
    alone = gcengine.with_context_limit(
        session.model_copy(update={"history": before, "compactions": []}),
        scorer.tokens_of(before),
    )
    config = {"threshold_percent": 10, "target_percent": 5}
    afters = {"claude_code": claude_code}
    for kind in ("gc_budget", "summarize"):
        policy = gcengine.load_gc_config({"type": kind, **config}, env={})
        afters[kind] = gcengine.run_gc(alone, policy).session.history
    forth = scores_at_equal_size(scorer, before, afters)
    back = scores_at_equal_size(session_scorer(session), before, dict(reversed(afters.items())))
    assert forth == back
    size = scorer.tokens_of(claude_code)
    assert min(scorer.tokens_of(after) for after in afters.values()) == size
    for kind in ("gc_budget", "summarize"):
        whole = scorer.score_change(before, afters[kind])
        assert whole.tokens_after > size
        assert forth[kind].tokens_after <= size
        assert forth[kind].score is not None
        assert whole.score is not None
        assert forth[kind].score < whole.score
