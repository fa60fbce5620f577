"""A scorer counts each context from what it counted of the one before (a replay's next context
is the last one's after and a few more turns): each of its scores must be what a plain recount
of that context alone gives, anchor by anchor, whatever order contexts come in. What a score
read of a session, kept (``anchor_cache``), spares later scores reading it again."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gcengine
from gcengine import AnchorRetention, AnchorScorer, Message, Part, Role
from gcengine.quality import reading
from gcengine.quality.anchors import (
    ANCHOR_CLASSES,
    CLASS_INFO,
    Anchor,
    AnchorClass,
    MatchRule,
    literal_found,
    message_anchors,
    normalised,
    normalised_sentences,
    sentence_terms,
    visible_pieces,
)
from gcengine.quality.retention import LOST_SHOWN, scores_at_equal_size, session_corpus
from gcengine.quality.session_anchors import NO_CONTEXT, AnchorContext
from gcengine.quality.tally import Held, Tally, held
from tests.engine.test_anchor_retention import FACTS, TEXTS, summary

PROPERTY = settings(max_examples=120, deadline=None)


def tokens(message: Message) -> int:
    return len(message.text)


def recount(
    before: Sequence[Message],
    after: Sequence[Message],
    removed: Sequence[Message],
    context: AnchorContext,
) -> dict[str, object]:
    """The score's figures by their definition: every anchor of every message of ``before``,
    its last mention, kept when a message kept unchanged holds it or when what is in view
    shows it (a literal one as whole words of the text, a terms one in one sentence)."""
    gone = {m.message_id for m in removed}
    last: dict[tuple[AnchorClass, str], tuple[Anchor, int]] = {}
    carried: set[tuple[AnchorClass, str]] = set()
    for position, message in enumerate(before):
        for anchor in message_anchors(message, context):
            key = (anchor.anchor_class, anchor.key)
            last[key] = (anchor, position)
            if message.message_id not in gone:
                carried.add(key)
    pieces = [normalised(piece) for m in after for piece in visible_pieces(m)]
    text = "\n".join(pieces)
    sentences = [sentence_terms(s) for piece in pieces for s in normalised_sentences(piece)]

    def shown(anchor: Anchor) -> bool:
        if anchor.rule is MatchRule.LITERAL:
            return literal_found(text, anchor.key)
        needed = math.ceil(0.75 * len(anchor.terms))
        return any(len(anchor.terms & words) >= needed for words in sentences)

    counts = {c.anchor_class: [0, 0] for c in ANCHOR_CLASSES}
    lost: dict[AnchorClass, list[str]] = {c.anchor_class: [] for c in ANCHOR_CLASSES}
    thirds = {-1: [0, 0], 1: [0, 0]}
    for key, (anchor, position) in last.items():
        kept = key in carried or shown(anchor)
        counts[anchor.anchor_class][0] += 1
        counts[anchor.anchor_class][1] += kept
        if not kept and len(lost[anchor.anchor_class]) < LOST_SHOWN:
            lost[anchor.anchor_class].append(anchor.text)
        share = (position + 0.5) / len(before)
        third = -1 if share < 1 / 3 else 1 if share > 2 / 3 else 0
        if third:
            weight = CLASS_INFO[anchor.anchor_class].weight
            thirds[third][0] += weight
            thirds[third][1] += weight if kept else 0
    return {
        "classes": {c.value: (*counts[c], lost[c]) for c in counts},
        "recency": (*thirds[-1], *thirds[1]),
        "tokens": (sum(map(tokens, before)), sum(map(tokens, after))),
    }


def figures(retention: AnchorRetention) -> dict[str, object]:
    recency = retention.recency
    return {
        "classes": {
            c.anchor_class.value: (c.anchors, c.retained, c.lost) for c in retention.classes
        },
        "recency": (
            recency.oldest_weight,
            recency.oldest_retained,
            recency.newest_weight,
            recency.newest_retained,
        ),
        "tokens": (retention.tokens_before, retention.tokens_after),
    }


def _alike(one: Message, other: Message) -> bool:
    """The same message as the model reads it: a copy marked in its metadata is."""
    return (one.message_id, one.role, one.kind, one.parts) == (
        other.message_id,
        other.role,
        other.kind,
        other.parts,
    )


def message(text: str, number: int, user: bool) -> Message:
    role = Role.USER if user else Role.MODEL
    return Message(role=role, parts=[Part.from_text(text)], message_id=f"m{number}")


# One step of a replay-like sequence: turns come in, then a collection keeps some of the window
# (by a mask over it), now and then with a summary put in, a kept message rewritten, or one
# marked in its metadata (a copy the model reads alike).
STEPS = st.lists(
    st.tuples(
        st.lists(st.tuples(TEXTS, st.booleans()), min_size=0, max_size=5),
        st.lists(st.booleans(), min_size=8, max_size=8),
        st.one_of(st.none(), st.none(), st.none(), TEXTS),
        st.one_of(st.none(), st.none(), st.none(), FACTS),
        st.booleans(),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=400, deadline=None)
@given(STEPS)
def test_a_scorer_kept_along_a_replay_scores_each_collection_as_a_recount_does(
    steps: list[tuple[list[tuple[str, bool]], list[bool], str | None, str | None, bool]],
) -> None:
    scorer = AnchorScorer([], tokens)
    window: list[Message] = []
    number = 0
    for step, (incoming, mask, written, rewrite, mark) in enumerate(steps):
        for text, user in incoming:
            window.append(message(text, number, user))
            number += 1
        if not window:
            continue
        before = list(window)
        after = [m for m, keep in zip(before, mask * len(before), strict=False) if keep]
        if written is not None:
            after.insert(len(after) // 2, summary(written, f"summary-{step}"))
        if rewrite is not None and after:
            first = after[0]
            after[0] = first.model_copy(update={"parts": [Part.from_text(f"{rewrite}.")]})
        if mark and after:
            after[-1] = after[-1].model_copy(update={"metadata": {"marked": step}})
        scored = scorer.score_change(before, after)
        removed = [m for m in before if not any(_alike(m, o) for o in after)]
        assert figures(scored) == recount(before, after, removed, scorer.context)
        window = after


@PROPERTY
@given(st.lists(TEXTS, min_size=1, max_size=8), st.lists(st.sets(st.integers(0, 7)), max_size=3))
def test_policies_compared_against_one_context_score_as_recounts_do(
    texts: list[str], kept: list[set[int]]
) -> None:
    """A ranking scores several contexts after against one context before with one scorer."""
    before = [message(text, n, n % 2 == 0) for n, text in enumerate(texts)]
    afters = {
        f"policy {n}": [m for i, m in enumerate(before) if i in chosen]
        for n, chosen in enumerate(kept)
    }
    scorer = AnchorScorer(before, tokens)
    for name, retention in scores_at_equal_size(scorer, before, afters).items():
        size = retention.size
        assert size is not None
        cut = afters[name]
        while sum(map(tokens, cut)) > size:
            cut = cut[1:]
        removed = [m for m in before if m not in cut]
        assert figures(retention) == recount(before, cut, removed, scorer.context)


# --- What a cache kept from an earlier score saves -----------------------------------------------


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the messages whose anchors are read from now on."""
    reads: list[str] = []
    read = reading.message_anchors

    def counted(message: Message, context: AnchorContext) -> list[Anchor]:
        reads.append(message.message_id)
        return read(message, context)

    monkeypatch.setattr(reading, "message_anchors", counted)
    return reads


def _demo(turns: int) -> bytes:
    return json.dumps(gcengine.generate_demo_session(gcengine.DemoShape(turns=turns))).encode()


def test_a_run_scored_with_the_cache_of_an_earlier_score_reads_no_message_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = _demo(40)
    session = gcengine.with_context_limit(gcengine.load_session(data), 12_000)
    config = gcengine.load_gc_config({"type": "budget", "target_percent": 40}, env={})
    runs = [gcengine.run_gc(session, config).session.history, session.history[5:]]
    cache = gcengine.anchor_cache(session)
    reads = _counting_reads(monkeypatch)
    first = gcengine.score_collection(session, runs[0], cache)
    assert len(reads) == len(session.history)
    # The same stored session read again: other objects, the same messages.
    again = gcengine.with_context_limit(gcengine.load_session(data), 12_000)
    reads.clear()
    rerun = gcengine.run_gc(again, config).session.history
    assert gcengine.score_collection(again, rerun, cache) == first
    assert gcengine.score_collection(session, runs[1], cache) == gcengine.score_collection(
        session, runs[1]
    )
    assert reads == [m.message_id for m in session.history]  # only the scores without it
    # A message changed under its id is read again.
    changed = session.history[3].model_copy(update={"parts": [Part.from_text("src/new.py.")]})
    history = [*session.history[:3], changed, *session.history[4:]]
    edited = session.model_copy(update={"history": history})
    reads.clear()
    assert gcengine.score_collection(edited, history[2:], cache) == gcengine.score_collection(
        edited, history[2:]
    )
    assert reads.count(changed.message_id) == 2
    assert len(reads) == len(history) + 1


def test_a_replay_scored_with_a_cache_scores_as_one_without() -> None:
    session = gcengine.with_context_limit(gcengine.load_session(_demo(60)), 20_000)
    config = gcengine.load_gc_config({"type": "truncate", "pressure_percent": 0}, env={})
    cache = gcengine.AnchorCache(session_corpus(session))
    fresh = gcengine.simulate(session, config, score_anchors=True)
    assert fresh.events
    kept = gcengine.simulate(session, config, score_anchors=True, anchor_cache=cache)
    assert kept == fresh
    assert gcengine.simulate(session, config, score_anchors=True, anchor_cache=cache) == fresh


def test_a_message_changed_under_its_id_is_read_as_it_is_after() -> None:
    """A caller's list of what went need not name a message that changed in place: what the
    model sees after is the changed text."""
    earlier, went = message("gamma.", 1, False), message("alpha_beta.", 2, False)
    changed = earlier.model_copy(update={"parts": [Part.from_text("alpha_beta.")]})
    scorer = AnchorScorer([], tokens)
    retention = scorer.score([earlier, went], [changed], [went])
    assert figures(retention) == recount([earlier, went], [changed], [went], scorer.context)
    assert retention.of_class(gcengine.AnchorClass.IDENTIFIERS).retained == 1


def test_a_message_kept_as_it_is_stays_kept_when_a_message_after_shares_its_id() -> None:
    """A summary given the id of a message the compaction kept (both in view after) takes
    nothing from that message: its anchors are kept, not lost."""
    kept = message(
        "Fix the crash in src/engine/parser.py: ParseError E1234 from load_config.", 1, True
    )
    went = message(
        "Then update tests/test_widget.py and docs/guide.md for RenderContext.", 2, False
    )
    last = message(
        "The failure in lib/cache/store.py is a KeyError from CacheStore.evict.", 3, True
    )
    summary_of = Message(role=Role.MODEL, parts=[Part.from_text("Earlier work.")], message_id="m1")
    before, after = [kept, went, last], [kept, summary_of, last]

    def scorer() -> AnchorScorer:
        return AnchorScorer(before, tokens)

    changed = scorer().score_change(before, after)
    assert changed == scorer().score(before, after, [went], [summary_of])
    lost = {text for retention in changed.classes for text in retention.lost}
    assert "src/engine/parser.py" not in lost
    assert "tests/test_widget.py" in lost


def _tally_state(tally: Tally[str]) -> tuple[object, ...]:
    """Everything a tally counts, as a score reads it."""
    return (
        tally.messages,
        tally.held,
        tally.costs,
        tally.views,
        tally.tokens,
        {key: tally.holding(key) for key in tally.holders},
        +tally.per_class,
        tally.last_weights(),
    )


@PROPERTY
@given(
    st.lists(st.tuples(TEXTS, st.booleans()), min_size=1, max_size=12),
    st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), min_size=1, max_size=4),
)
def test_taking_a_run_out_of_a_tally_counts_as_dropping_it(
    texts: list[tuple[str, bool]], runs: list[tuple[int, int]]
) -> None:
    """A truncation's run taken in place (``take``, a replay's scorer) leaves the tally as
    ``drop`` of the same positions does, over several runs in turn, with messages coming in
    between."""
    taken: Tally[str] = Tally()
    dropped: Tally[str] = Tally()
    messages = [message(text, number, user) for number, (text, user) in enumerate(texts)]

    def held_of(one: Message) -> Held:
        return held(message_anchors(one, NO_CONTEXT))

    for tally in (taken, dropped):
        tally.extend(messages, held_of, tokens, lambda one: one.message_id)
    for step, (one, other) in enumerate(runs):
        size = len(taken.messages)
        first, end = sorted((min(one, size), min(other, size)))
        keep = bytes(not first <= position < end for position in range(size))
        taken.take(first, end)
        rest = [m for m, kept in zip(dropped.messages, keep, strict=True) if kept]
        dropped.drop(range(first, end), keep, rest, tokens)
        assert _tally_state(taken) == _tally_state(dropped)
        more = [message(f"{texts[0][0]} {step}", 100 + step, False)]
        for tally in (taken, dropped):
            tally.extend(more, held_of, tokens, lambda one: one.message_id)
    assert _tally_state(taken) == _tally_state(dropped)
