"""Anchor retention: what is an anchor, sessions whose retention is worked out by hand, the
agent's own compactions, and the score's three properties."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gcengine
from gcengine import (
    AnchorClass,
    AnchorScorer,
    FunctionCall,
    FunctionResponse,
    Message,
    MessageKind,
    Part,
    Role,
)
from tests.engine.agent_transcripts import Shape, generated_codex_lines
from tests.engine.conftest import example
from tests.engine.strategies import model, user

# --- What an anchor is ------------------------------------------------------------------------


def found(*messages: Message) -> set[tuple[str, str]]:
    return {(a.anchor_class.value, a.key) for m in messages for a in gcengine.message_anchors(m)}


def call(name: str, args: dict[str, Any], mid: str) -> Message:
    part = Part.from_function_call(FunctionCall(id=f"{mid}-call", name=name, args=args))
    return Message(role=Role.MODEL, parts=[part], message_id=mid)


def tool_result(name: str, result: Any, mid: str, *, failed: bool = False) -> Message:
    response = FunctionResponse(call_id=f"{mid}-call", name=name, result=result, is_error=failed)
    return Message(role=Role.TOOL, parts=[Part.from_function_response(response)], message_id=mid)


def summary(text: str, mid: str = "summary-1") -> Message:
    return Message(
        role=Role.USER, parts=[Part.from_text(text)], message_id=mid, kind=MessageKind.SUMMARY
    )


def test_paths_with_their_line_ranges_and_urls() -> None:
    message = user(
        "Fix src/billing/tax.py:38-40 and docs/billing.md, as https://example.com/issues/7 says.",
        "u1",
    )
    assert found(message) == {
        ("paths", "src/billing/tax.py"),
        ("paths", "src/billing/tax.py:38-40"),
        ("paths", "docs/billing.md"),
        ("urls", "https://example.com/issues/7"),
        # the user asks for it
        (
            "requests",
            "fix src/billing/tax.py:38-40 and docs/billing.md, as "
            "https://example.com/issues/7 says.",
        ),
    }


def test_identifiers_numbers_and_commits() -> None:
    message = model(
        "`total_with_tax` calls round_money() and parseConfig. The import took 300 ms, cost "
        "$47,500 and went to 3.12.3 in #412 after HTTP 503; we are back on a1b2c3d4e5.",
        "m1",
    )
    assert found(message) == {
        ("identifiers", "total_with_tax"),
        ("identifiers", "round_money"),
        ("identifiers", "parseconfig"),
        ("numbers", "300 ms"),
        ("numbers", "$47500"),
        ("numbers", "3.12.3"),
        ("issues", "#412"),
        ("numbers", "503"),
        ("commits", "a1b2c3d4e5"),
    }


def test_errors_come_from_failed_results_and_error_lines_not_from_code_that_names_one() -> None:
    failed = tool_result(
        "run_command",
        {"stdout": "collected 3 items\nFAILED tests/test_tax.py::test_cap - BILL-4012 cap"},
        "t1",
    )
    crashed = tool_result(
        "run_command", "ModuleNotFoundError: No module named 'requests'\nmore", "t2", failed=True
    )
    source = tool_result("read_file", {"content": 'raise InvoiceError("negative total")'}, "t3")
    errors = {key for cls, key in found(failed, crashed, source) if cls == "errors"}
    assert errors == {
        "failed tests/test_tax.py::test_cap - bill-4012 cap",
        "bill-4012",
        "modulenotfounderror: no module named 'requests'",
    }


def test_decisions_are_the_users_constraints_and_anyones_decisions() -> None:
    constraint = user("You must never push to main.", "u1")
    decided = model("We decided to use Postgres for the ledger.", "m1")
    advice = model("You must run the linter.", "m2")  # the agent's, not a constraint
    assert found(constraint, decided, advice) == {
        ("decisions", "you must never push to main."),
        ("decisions", "we decided to use postgres for the ledger."),
    }


def test_open_work_from_todo_lines_and_a_todo_tools_open_items() -> None:
    note = model("TODO: migrate the invoices table.", "m1")
    todos = call(
        "TodoWrite",
        {
            "todos": [
                {"content": "Add the refunds migration", "status": "pending"},
                {"content": "Write the changelog entry", "status": "completed"},
                {"content": "Backfill old invoices", "status": "in_progress"},
            ]
        },
        "m2",
    )
    assert {key for cls, key in found(note, todos) if cls == "open_work"} == {
        "todo: migrate the invoices table.",
        "add the refunds migration",
        "backfill old invoices",
    }


def test_ordinary_words_are_not_anchors() -> None:
    assert found(user("Python and/or Rust, 3 apples, version two, e.g. this one.", "u1")) == set()


def test_every_class_has_a_documented_weight() -> None:
    assert [c.anchor_class for c in gcengine.ANCHOR_CLASSES] == list(AnchorClass)
    for info in gcengine.ANCHOR_CLASSES:
        assert info.weight in (1, 2, 3)
        assert info.finds
        assert info.why


# --- Sessions worked out by hand --------------------------------------------------------------


def hand_session() -> gcengine.Session:
    """A request, then four messages holding seven anchors, then a short answer:

    * "You must never edit tests/test_tax.py." - a path (3) and a constraint (3);
    * "round_money lives in src/billing/tax.py:38." - an identifier (2), a path and its line
      (3 each);
    * "The import took 300 ms." - a number (2);
    * "TODO: switch round_money to half-up." - open work (2), round_money again.
    """
    messages = [
        {"role": "user", "content": "Please fix the rounding bug."},
        {"role": "assistant", "content": "On it."},
        {"role": "user", "content": "You must never edit tests/test_tax.py."},
        {"role": "assistant", "content": "round_money lives in src/billing/tax.py:38."},
        {"role": "user", "content": "Go on."},
        {"role": "assistant", "content": "The import took 300 ms."},
        {"role": "user", "content": "And then?"},
        {"role": "assistant", "content": "TODO: switch round_money to half-up."},
        {"role": "user", "content": "Thanks."},
    ]
    return gcengine.load_session(json.dumps(messages).encode(), counter=gcengine.ApproxCounter())


def without_the_middle(session: gcengine.Session, *inserted: Message) -> list[Message]:
    """The first two and the last message kept, the six between them taken out."""
    history = session.history
    return [*history[:2], *inserted, history[-1]]


def test_a_truncation_that_keeps_none_of_them_keeps_only_the_request() -> None:
    session = hand_session()
    retention = gcengine.score_collection(session, without_the_middle(session))
    assert retention.removed_messages == 6
    assert retention.anchors == 8  # the seven in the middle, and the request, kept
    assert (retention.of_class(AnchorClass.REQUESTS).retained, retention.score) == (1, 3 / 21)
    assert retention.compression_ratio == 0
    assert retention.of_class(AnchorClass.PATHS).lost == [
        "tests/test_tax.py",
        "src/billing/tax.py",
        "src/billing/tax.py:38",
    ]
    assert retention.invented.checked == 0
    assert retention.invented.rate is None


def test_the_tokens_that_went_are_what_the_session_says_they_cost() -> None:
    """A run frees what the budget says each message costs: the figure the agent recorded,
    where the file has one. Its anchor retention says the same tokens went, as a replay's
    does, not the messages counted again."""
    session = gcengine.load_session(example("jaato_session_v2.1.json"))
    after = session.history[:1]
    figures = gcengine.budget_figures(session)[1:]
    assert "recorded" in {made_by for _, made_by in figures}
    counter = gcengine.counter_by_name(session.token_counter)
    recounted = sum(gcengine.count_message(m, counter) for m in session.history[1:])

    retention = gcengine.score_collection(session, after)

    assert retention.removed_tokens == sum(tokens for tokens, _ in figures) != recounted


def test_a_summary_is_credited_with_what_it_states_and_rewords_closely() -> None:
    session = hand_session()
    written = summary(
        "The user said never to edit tests/test_tax.py. "
        "Next: switch round_money to half-up in src/billing/tax.py."
    )
    retention = gcengine.score_collection(session, without_the_middle(session, written))
    recall = {c.anchor_class.value: (c.retained, c.anchors) for c in retention.classes}
    assert recall == {
        "paths": (2, 3),  # the line of tax.py is lost
        "identifiers": (1, 1),
        "numbers": (0, 1),  # 300 ms is lost
        "errors": (0, 0),
        "urls": (0, 0),
        "commits": (0, 0),
        # "never to edit tests/test_tax.py" holds 4 of the constraint's 5 key terms
        "decisions": (1, 1),
        # "switch round_money to half-up" holds 3 of "todo switch round_money half"
        "open_work": (1, 1),
        "issues": (0, 0),
        "requests": (1, 1),  # "Please fix the rounding bug.", kept
        "tests": (0, 0),
        "tasks": (0, 0),
    }
    assert retention.score == pytest.approx((2 * 3 + 2 + 3 + 2 + 3) / (3 * 3 + 2 + 2 + 3 + 2 + 3))
    assert retention.of_class(AnchorClass.PATHS).lost == ["src/billing/tax.py:38"]
    assert retention.invented.model_dump() == {
        "checked": 3,  # tests/test_tax.py, round_money, src/billing/tax.py
        "invented": 0,
        "examples": [],
        "rate": 0.0,
    }
    assert 0 < retention.compression_ratio < 1


def test_a_summary_that_rewords_too_far_loses_the_sentence() -> None:
    session = hand_session()
    written = summary("Leave the test file alone. round_money needs work.")
    retention = gcengine.score_collection(session, without_the_middle(session, written))
    assert retention.of_class(AnchorClass.DECISIONS).recall == 0
    assert retention.of_class(AnchorClass.OPEN_WORK).recall == 0
    assert retention.of_class(AnchorClass.IDENTIFIERS).recall == 1


def test_an_anchor_the_session_never_had_is_invented() -> None:
    session = hand_session()
    written = summary("Edited src/billing/taxes.py; it took 450 ms. round_money is done.")
    retention = gcengine.score_collection(session, without_the_middle(session, written))
    assert retention.invented.checked == 3
    assert retention.invented.invented == 2
    assert retention.invented.examples == ["src/billing/taxes.py", "450 ms"]


def test_recency_compares_the_oldest_third_with_the_newest() -> None:
    session = hand_session()
    written = summary("Still to do: switch round_money to half-up.")
    retention = gcengine.score_collection(session, without_the_middle(session, written))
    # Of the nine messages of the context before, the first three are the oldest third (the
    # request, kept, the constraint and tests/test_tax.py: weight 9) and the last three the
    # newest (round_money and the open work, weight 4); the summary keeps only the newest.
    assert retention.recency.model_dump() == {
        "oldest_weight": 9,
        "oldest_retained": 3,
        "newest_weight": 4,
        "newest_retained": 4,
        "oldest": pytest.approx(1 / 3),
        "newest": 1.0,
        "bias": pytest.approx(2 / 3),
    }


def test_what_was_lost_is_shown_as_written() -> None:
    """Anchors are matched lower-cased, but a user reads (and searches the code for) the
    name as the agent wrote it."""
    before = [
        user("The nightly job fails with `billing.errors.InvoiceError: [BILL-4011]`.", "u1"),
        model("InvoiceError comes from parse_Amount in src/Billing/Tax.py, status 422.", "m1"),
        model("Done.", "m2"),
    ]
    retention = AnchorScorer(before, lambda m: 10).score_change(before, before[2:])
    lost = {c.anchor_class.value: c.lost for c in retention.classes if c.lost}
    assert lost == {
        "paths": ["src/Billing/Tax.py"],
        # Code in backticks is read word by word unless it is a single name: the error's
        # class and its code, as reachability reads them.
        "identifiers": ["InvoiceError", "parse_Amount"],
        "numbers": ["422"],
        "errors": [
            "BILL-4011",
            "The nightly job fails with `billing.errors.InvoiceError: [BILL-4011]`.",
            "InvoiceError comes from parse_Amount in src/Billing/Tax.py, status 422.",
        ],
    }


def test_content_replaced_in_place_counts_as_removed() -> None:
    """A stash that leaves a placeholder under the same message id: the model no longer sees
    what was there."""
    before = [
        user("Run the tests.", "u1"),
        call("run_command", {"command": "pytest"}, "m1"),
        tool_result("run_command", "KeyError: 'EU-HR' in rate_for_region", "t1", failed=True),
        model("Looking.", "m2"),
    ]
    placeholder = tool_result("run_command", "[stashed: 1 result]", "t1")
    scorer = AnchorScorer(before, lambda m: 10)
    retention = scorer.score_change(before, [*before[:2], placeholder, before[3]])
    assert retention.removed_messages == 1
    assert retention.of_class(AnchorClass.ERRORS).lost == ["KeyError: 'EU-HR' in rate_for_region"]
    assert retention.replacement_tokens == 10


def test_a_run_of_a_real_strategy_is_scored_against_what_it_left() -> None:
    session = gcengine.with_context_limit(
        gcengine.load_session(gcengine.generate_demo_session(gcengine.DemoShape(turns=40))),
        20_000,
    )
    outcome = gcengine.run_gc(session, gcengine.load_gc_config({"type": "truncate"}, env={}))
    retention = gcengine.score_collection(session, outcome.session.history)
    removed = {i for item in outcome.result.removal_list for i in item.message_ids}
    assert retention.removed_messages == len(removed)
    assert retention.anchors > 50
    assert retention.score is not None
    assert 0 < retention.score < 1
    assert retention.invented.checked == 0  # a truncation writes nothing


# --- Gates -------------------------------------------------------------------------------------


def test_a_class_under_its_gate_fails_and_one_without_anchors_passes() -> None:
    session = hand_session()
    written = summary("Next: switch round_money to half-up.")
    retention = gcengine.score_collection(session, without_the_middle(session, written))
    gates = {AnchorClass.DECISIONS: 0.95, AnchorClass.OPEN_WORK: 0.95, AnchorClass.URLS: 1.0}
    failures = gcengine.gate_failures(retention, gates)
    assert [(f.anchor_class, f.recall, f.minimum) for f in failures] == [
        (AnchorClass.DECISIONS, 0.0, 0.95)
    ]


@pytest.mark.parametrize(
    ("data", "key"),
    [({"decisionz": 0.9}, "decisionz"), ({"paths": 1.5}, "paths"), ({"paths": True}, "paths")],
)
def test_gates_are_read_strictly(data: dict[str, Any], key: str) -> None:
    with pytest.raises(gcengine.RetentionGateError) as raised:
        gcengine.load_retention_gates(data)
    assert raised.value.key == key
    assert gcengine.load_retention_gates({"open_work": 1}) == {AnchorClass.OPEN_WORK: 1.0}


def test_pooling_counts_every_anchor_once_and_skips_the_unscorable() -> None:
    session = hand_session()
    kept = gcengine.score_collection(
        session, without_the_middle(session, summary("Next: switch round_money to half-up."))
    )
    lost = gcengine.score_collection(session, without_the_middle(session))
    unscorable = gcengine.AnchorRetention(unscorable="encrypted")
    pooled = gcengine.pooled_retention([kept, lost, unscorable])
    assert pooled.compactions == 2
    assert pooled.anchors == kept.anchors + lost.anchors
    weight = 2 * (3 * 3 + 2 + 2 + 3 + 2 + 3)
    # round_money and the open work the summary kept, and the request both kept.
    assert pooled.score == pytest.approx((2 + 2 + 3 + 3) / weight)


# --- The agent's own compactions ---------------------------------------------------------------


def claude_code_transcript() -> bytes:
    """A request, a read, the agent's compaction, and one more turn, in Claude Code's rows."""
    rows: list[dict[str, Any]] = []
    parent: str | None = None

    def row(kind: str, **fields: Any) -> None:
        nonlocal parent
        uuid = f"00000000-0000-4000-8000-{len(rows):012d}"
        rows.append(
            {"parentUuid": parent, "sessionId": "hand", "type": kind, "uuid": uuid, **fields}
        )
        parent = uuid

    def said(role: str, text: str) -> dict[str, Any]:
        return {"role": role, "content": text}

    row("user", message=said("user", "Fix src/app.py; you must never touch the tests."))
    row(
        "assistant",
        message={**said("assistant", "Reading src/app.py:10 first."), "id": "msg_1"},
    )
    boundary_parent = parent
    parent = None
    row(
        "system",
        subtype="compact_boundary",
        content="Conversation compacted",
        logicalParentUuid=boundary_parent,
        compactMetadata={"trigger": "manual", "preTokens": 900},
    )
    row(
        "user",
        message=said("user", "Summary: the user wants src/app.py fixed."),
        isCompactSummary=True,
        isVisibleInTranscriptOnly=True,
    )
    row("user", message=said("user", "Go on."))
    row("assistant", message={**said("assistant", "Done."), "id": "msg_2"})
    return "\n".join(json.dumps(r) for r in rows).encode()


def test_the_agents_own_compaction_is_scored_against_its_summary() -> None:
    session = gcengine.load_session(claude_code_transcript())
    (compaction,) = session.compactions
    scores = gcengine.score_observed_compactions(session)
    retention = scores[compaction.compaction_id]
    recall = {c.anchor_class.value: (c.retained, c.anchors) for c in retention.classes}
    assert recall["paths"] == (1, 2)  # src/app.py kept, src/app.py:10 lost
    assert recall["decisions"] == (0, 1)  # "never touch the tests" is gone
    assert retention.removed_messages == 2
    assert retention.invented.checked == 1  # src/app.py
    assert retention.invented.invented == 0


def test_an_encrypted_compaction_is_unscorable() -> None:
    lines = generated_codex_lines(Shape(turns=4, compact_after=(2,), extras={"remote": True}))
    session = gcengine.load_session("\n".join(json.dumps(line) for line in lines).encode())
    (retention,) = gcengine.score_observed_compactions(session).values()
    assert retention.unscorable is not None
    assert "encrypted" in retention.unscorable
    assert retention.score is None
    assert gcengine.gate_failures(retention, gcengine.DEFAULT_RETENTION_GATES) == []


def test_a_replay_scores_each_collection_when_asked() -> None:
    session = gcengine.with_context_limit(
        gcengine.load_session(gcengine.generate_demo_session(gcengine.DemoShape(turns=60))),
        20_000,
    )
    config = gcengine.load_gc_config({"type": "summarize"}, env={})
    scored = gcengine.simulate(session, config, score_anchors=True)
    assert all(e.retention is not None for e in scored.events)
    # A collection that finds only the chain's own summary left to take writes no summary of
    # it (it would cover no turn): it took nothing, and nothing went out of view.
    took = [e for e in scored.events if e.result.items_collected]
    assert took
    assert all(e.retention and e.retention.anchors for e in took)
    summarized = [e for e in took if "summary_number" in e.result.details]
    assert summarized
    assert all(e.retention and e.retention.invented.checked for e in summarized)
    idle = [e for e in scored.events if not e.result.items_collected]
    assert all(e.retention and e.retention.removed_messages == 0 for e in idle)
    plain = gcengine.simulate(session, config)
    assert [e.retention for e in plain.events] == [None] * len(plain.events)
    assert plain.steps == scored.steps


# --- The three properties ----------------------------------------------------------------------

WORDS = ["alpha", "beta", "ledger", "invoice", "refund", "cache", "parser", "tax"]
FACTS = st.one_of(
    st.builds(
        "{}/{}.{}".format,
        st.sampled_from(["src", "lib/core", "tests"]),
        st.sampled_from(WORDS),
        st.sampled_from(["py", "md", "json"]),
    ),
    st.builds("{}_{}".format, st.sampled_from(WORDS), st.sampled_from(WORDS)),
    st.builds("{} ms".format, st.integers(1, 999)),
    # An issue number of one digit ("#5") is too often a list item or a count to be one.
    st.builds("#{}".format, st.integers(10, 999)),
    st.builds("ValueError: bad {} in {}".format, st.sampled_from(WORDS), st.sampled_from(WORDS)),
    st.builds(
        "we decided to use {} for the {}".format, st.sampled_from(WORDS), st.sampled_from(WORDS)
    ),
    st.builds("todo: rewrite the {} {}".format, st.sampled_from(WORDS), st.sampled_from(WORDS)),
    st.sampled_from(WORDS),
)
SENTENCES = st.lists(FACTS, min_size=1, max_size=4).map(lambda facts: " and ".join(facts) + ".")
TEXTS = st.lists(SENTENCES, min_size=1, max_size=4).map(" ".join)


@st.composite
def compactions(draw: st.DrawFn) -> tuple[list[Message], list[Message]]:
    """Messages that went (the first holding at least one anchor) and messages still in view
    (with a summary of a few sentences)."""
    removed = [
        Message(
            role=draw(st.sampled_from([Role.USER, Role.MODEL])),
            parts=[Part.from_text(draw(TEXTS))],
            message_id=f"gone-{n}",
        )
        for n in range(draw(st.integers(1, 4)))
    ]
    first = draw(FACTS.filter(lambda fact: fact not in WORDS))
    removed[0] = user(f"{first}. {removed[0].text}", "gone-0")
    kept = [model(draw(TEXTS), f"kept-{n}") for n in range(draw(st.integers(0, 2)))]
    return removed, [*kept, summary(draw(TEXTS))]


def score(
    removed: list[Message], visible: list[Message], after: list[Message] | None = None
) -> gcengine.AnchorRetention:
    """The context before is what went and what was kept (``visible`` but its summary); the
    context after is ``visible``, or ``after`` when given."""
    before = [*removed, *visible[:-1]]
    after = visible if after is None else after
    return AnchorScorer([*removed, *visible, *after], lambda m: 1).score_change(before, after)


def recalls(retention: gcengine.AnchorRetention) -> list[tuple[int, int]]:
    return [(c.retained, c.anchors) for c in retention.classes]


PROPERTY = settings(max_examples=150, deadline=None)


@PROPERTY
@given(compactions())
def test_a_compaction_that_keeps_everything_scores_one(
    case: tuple[list[Message], list[Message]],
) -> None:
    removed, visible = case
    verbatim = summary("\n".join(m.text for m in removed))
    retention = score(removed, [*visible[:-1], verbatim])
    assert retention.anchors > 0
    assert retention.score == 1.0
    assert all(c.retained == c.anchors for c in retention.classes)


def _cut(text: str, pieces: list[str]) -> str:
    """``text`` (lower-cased, as it is matched) with every whole-word occurrence of each piece
    replaced by a line break."""
    text = text.lower()
    for piece in pieces:
        before = r"(?<![a-z0-9_])" if re.match(r"[a-z0-9_]", piece) else ""
        after = r"(?![a-z0-9_])" if re.search(r"[a-z0-9_]$", piece) else ""
        text = re.sub(before + re.escape(piece) + after, "\n", text)
    return text


@PROPERTY
@given(compactions(), st.data())
def test_removing_an_anchor_from_what_is_kept_never_raises_the_score(
    case: tuple[list[Message], list[Message]], data: st.DataObject
) -> None:
    removed, visible = case
    anchors = [a for m in removed for a in gcengine.message_anchors(m)]
    anchor = data.draw(st.sampled_from(anchors))
    pieces = sorted(anchor.terms) if anchor.terms else [anchor.key]
    cut = [m.model_copy(update={"parts": [Part.from_text(_cut(m.text, pieces))]}) for m in visible]
    before, after = score(removed, visible), score(removed, visible, cut)
    assert before.score is not None
    assert after.score is not None
    assert after.score <= before.score
    for was, now in zip(recalls(before), recalls(after), strict=True):
        assert now[0] <= was[0]


@PROPERTY
@given(compactions(), st.randoms(use_true_random=False))
def test_the_order_of_kept_sentences_does_not_change_the_score(
    case: tuple[list[Message], list[Message]], random: Any
) -> None:
    removed, visible = case
    sentences = [s for m in visible for s in re.split(r"(?<=\.) ", m.text)]
    random.shuffle(sentences)
    shuffled = [summary("\n".join(sentences))]
    before, after = score(removed, visible), score(removed, visible, shuffled)
    assert after.score == before.score
    assert recalls(after) == recalls(before)


@PROPERTY
@given(
    st.lists(TEXTS, min_size=2, max_size=6),
    st.lists(st.sets(st.integers(0, 5)), min_size=2, max_size=6),
)
def test_a_scorer_kept_from_one_context_to_the_next_scores_each_as_a_new_one(
    texts: list[str], contexts: list[set[int]]
) -> None:
    """A replay scores all its collections with one scorer, which keeps the words in view up
    to date from one context to the next instead of reading each context again."""
    pool = [model(text, f"m{n}") for n, text in enumerate(texts)]
    windows = [[pool[i] for i in sorted(chosen) if i < len(pool)] for chosen in contexts]
    kept = AnchorScorer(pool, lambda m: 1)
    for before, after in itertools.pairwise(windows):
        fresh = AnchorScorer(pool, lambda m: 1).score_change(before, after)
        assert kept.score_change(before, after) == fresh
