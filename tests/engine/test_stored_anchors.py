"""A session's anchors kept as a record: read back, they score every compaction, replay and
observed compaction of the session as reading it afresh does, reading none of its messages
again; a record of another extractor or another corpus is not read back."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gcengine
from gcengine.quality import counting, reading, stored_anchors, stored_count
from tests.engine.anchor_reads import anchors_read, extractor_changed

SPOTTER = Path(__file__).parents[1] / "fixtures" / "formats" / "spotter"
# A real Claude Code session with one compaction of its own (the manual one, at 142,431).
REAL = SPOTTER / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"


@pytest.fixture(scope="module")
def session() -> gcengine.Session:
    """The session against a 40,000-token window (it holds 74,047 after its compaction), so
    every policy collects."""
    return gcengine.with_context_limit(gcengine.load_session(REAL.read_bytes()), 40_000)


def kept(session: gcengine.Session) -> dict[str, Any]:
    """The session's anchors as a caller keeps them: read, written as JSON, read back."""
    return json.loads(json.dumps(gcengine.anchors_record(gcengine.anchor_cache(session))))


def read_back(session: gcengine.Session, record: dict[str, Any]) -> gcengine.AnchorCache:
    cache = gcengine.cache_from_record(gcengine.anchor_cache(session).messages, record)
    assert cache is not None
    return cache


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return anchors_read(monkeypatch)


def test_stored_anchors_score_every_policy_as_reading_the_session_does_and_read_none_again(
    session: gcengine.Session, reads: list[str]
) -> None:
    afters = {
        name: gcengine.run_gc(session, gcengine.load_gc_config(config, env={})).session.history
        for name, config in gcengine.starter_policies().items()
    }
    fresh = {name: gcengine.score_collection(session, after) for name, after in afters.items()}
    record = kept(session)
    said = {m.message_id for m in gcengine.anchor_cache(session).messages}
    reads.clear()

    cache = read_back(session, record)
    stored = {
        name: gcengine.score_collection(session, after, cache) for name, after in afters.items()
    }

    assert stored == fresh
    assert any(r.score is not None and r.score < 1 for r in fresh.values())
    assert not said & set(reads)  # only what a collection wrote (summaries) is read


def test_stored_anchors_score_replays_and_the_agents_own_compaction_as_reading_it_does(
    session: gcengine.Session, reads: list[str]
) -> None:
    config = gcengine.load_gc_config(gcengine.starter_policies()["Summarize old turns"], env={})
    fresh = gcengine.simulate(session, config, score_anchors=True).events
    observed = gcengine.score_observed_compactions(session)
    record = kept(session)
    reads.clear()

    cache = read_back(session, record)
    scorer = gcengine.replay_scorer(session, cache)
    replayed = gcengine.simulate(session, config, score_anchors=True, scorer=scorer).events

    assert [e.retention for e in replayed] == [e.retention for e in fresh]
    assert any(e.retention is not None for e in fresh)
    assert gcengine.score_observed_compactions(session, cache) == observed
    assert not {m.message_id for m in cache.messages} & set(reads)


def test_a_read_back_cache_holds_every_anchor_as_reading_gave_it(
    session: gcengine.Session,
) -> None:
    """Every field of every anchor (a text other than its key, a terms anchor's terms, each
    class), the anchor context and the vocabulary."""
    fresh = gcengine.anchor_cache(session)
    cache = read_back(session, kept(session))

    held = cache.read_all()
    assert held == fresh.read_all()
    anchors = {a for h in held for a in h.anchors}
    assert len({hash(a) for a in anchors}) == len(anchors)  # hashed by their fields, as made
    assert {a.rule for a in anchors} == set(gcengine.MatchRule)
    assert any(a.text != a.key for a in anchors)
    assert (cache.context, cache.vocabulary) == (fresh.context, fresh.vocabulary)


@pytest.fixture(scope="module")
def session_record(session: gcengine.Session) -> dict[str, Any]:
    return kept(session)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_any_collection_scores_alike_from_a_read_back_cache_and_a_fresh_one(
    session: gcengine.Session, session_record: dict[str, Any], data: st.DataObject
) -> None:
    """Whatever a collection keeps of the history, in order: the score read back is the score
    read afresh."""
    history = session.history
    taken = data.draw(st.sets(st.integers(0, len(history) - 1), max_size=len(history)))
    after = [m for i, m in enumerate(history) if i not in taken]

    stored = gcengine.score_collection(session, after, read_back(session, session_record))

    assert stored == gcengine.score_collection(session, after)


def test_scoring_from_a_read_back_cache_reads_the_text_of_only_what_stays_in_view(
    session: gcengine.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run of a long session keeps a few of its messages in view: the others' text is not
    read again to score it (it was, for every message, at each score of a stored session)."""
    after = gcengine.run_gc(
        session, gcengine.load_gc_config(gcengine.starter_policies()["Summarize old turns"], env={})
    ).session.history
    fresh = gcengine.score_collection(session, after)
    cache = read_back(session, kept(session))
    shown: list[str] = []
    pieces = reading.visible_pieces

    def counted(message: Any) -> Any:
        shown.append(message.message_id)
        return pieces(message)

    monkeypatch.setattr(reading, "visible_pieces", counted)

    assert gcengine.score_collection(session, after, cache) == fresh
    in_view = {m.message_id for m in after}
    assert shown
    assert set(shown) <= in_view
    assert len(in_view) < len(session.history) / 2


def test_a_record_of_another_extractor_or_another_corpus_is_not_read_back(
    session: gcengine.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = kept(session)
    before = gcengine.history_before(session, session.compactions[0].compaction_id)

    assert gcengine.cache_from_record(gcengine.anchor_cache(before).messages, record) is None
    older = record | {"format": stored_anchors.ANCHORS_FORMAT - 1}
    assert gcengine.cache_from_record(gcengine.anchor_cache(session).messages, older) is None
    extractor_changed(monkeypatch, "another extractor")
    assert gcengine.cache_from_record(gcengine.anchor_cache(session).messages, record) is None


@pytest.mark.parametrize(
    "changed",
    ["gcengine.quality.anchors", "gcengine.quality.anchor_shapes", "gcengine.text"],
)
def test_a_change_to_any_module_reading_anchors_makes_another_extractor_version(
    changed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored_anchors.extractor_version.cache_clear()
    before = gcengine.extractor_version()
    source = inspect.getsource

    def edited(module: Any) -> str:
        return source(module) + ("\n# edited" if module.__name__ == changed else "")

    monkeypatch.setattr(inspect, "getsource", edited)
    stored_anchors.extractor_version.cache_clear()
    try:
        assert gcengine.extractor_version() != before
    finally:
        monkeypatch.undo()
        stored_anchors.extractor_version.cache_clear()
    assert gcengine.extractor_version() == before


@pytest.fixture(scope="module")
def generated() -> gcengine.Session:
    """A generated session with no compaction: its history is its whole corpus, so a run's
    score counts the history the record counted (a real one's holds its summary instead)."""
    shape = gcengine.SessionShape(turns=150, seed=3)
    return gcengine.load_session(json.dumps(gcengine.generate_session_file(shape)).encode())


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_a_read_back_cache_scores_a_run_from_the_stored_count_as_counting_afresh_does(
    generated: gcengine.Session, data: st.DataObject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The history's count (each anchor's last mention, the ones looked for one by one) is
    read back with the record, not counted again, and scores any collection as a fresh
    count does."""
    history = generated.history
    taken = data.draw(st.sets(st.integers(0, len(history) - 1), max_size=len(history)))
    after = [m for i, m in enumerate(history) if i not in taken]
    fresh = gcengine.score_collection(generated, after)
    cache = read_back(generated, kept(generated))
    assert cache.messages == history

    with monkeypatch.context() as patched:
        patched.setattr(counting.ContextAnchors, "__init__", _counted_again)
        stored = gcengine.score_collection(generated, after, cache)

    assert stored == fresh
    counted, recounted = cache.counted(history), gcengine.anchor_cache(generated).counted(history)
    assert list(counted.last.items()) == list(recounted.last.items())  # in first-mention order
    assert counted.one_by_one() == recounted.one_by_one()
    assert counted.per_class == recounted.per_class


def _counted_again(*_: object) -> None:
    raise AssertionError("the history was counted again")


def test_a_runs_score_from_a_read_back_cache_makes_no_messages_held_and_few_anchors(
    generated: gcengine.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's score counts what it kept from the record's columns: no message's ``Held``
    and not every anchor is made (most of what reading a long session's record back cost),
    only the anchors it looks for one by one."""
    history = generated.history
    after = history[: len(history) // 10] + history[-len(history) // 10 :]
    fresh = gcengine.score_collection(generated, after)
    cache = read_back(generated, kept(generated))
    made: list[int] = []
    anchors = stored_count.RecordColumns.anchors

    def counted(columns: stored_count.RecordColumns, places: Any) -> Any:
        made.append(len(places))
        return anchors(columns, places)

    with monkeypatch.context() as patched:
        patched.setattr(stored_count.RecordColumns, "held_each", _made_whole)
        patched.setattr(stored_count.RecordColumns, "anchors", counted)
        stored = gcengine.score_collection(generated, after, cache)

    assert stored == fresh
    assert 0 < sum(made) < len(cache.counted(history).last) / 2


def _made_whole(*_: object) -> None:
    raise AssertionError("every message's Held was made")


@given(st.lists(st.text()))
def test_strings_kept_as_lines_read_back_as_written(items: list[str]) -> None:
    """Keys and texts are kept as one string, a line each, unless one holds a line break."""
    assert stored_count.lines(json.loads(json.dumps(stored_count.joined(items)))) == items


@given(st.lists(st.lists(st.text(), min_size=1)))
def test_terms_kept_as_lines_read_back_as_written(terms: list[list[str]]) -> None:
    written = json.loads(json.dumps(stored_count.terms_text(terms)))
    assert stored_count.term_lists(written) == terms


@given(st.lists(st.integers(0, 2**31 - 1)))
def test_integers_kept_as_base64_read_back_as_written(values: list[int]) -> None:
    assert list(stored_count.ints(json.loads(json.dumps(stored_count.ints_text(values))))) == values
