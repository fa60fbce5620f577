"""Planning uploaded sessions: ``plan_items`` on the reference files and on generated
sessions, pins, RAG parts, model caps, the commit step's checks, errors, and the command
line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

import gcengine
from gcengine import InstructionSource, MessageKind, PlannerError, Session
from gcengine.context_limits import KNOWN_MODEL_LIMITS, model_limits
from gcengine.planner import (
    ContextPlan,
    Detail,
    ExcludedItem,
    ItemRole,
    ModelCaps,
    Pin,
    PlannerConfig,
    PlannerItem,
    Priority,
    Reason,
    Section,
    Source,
    TTLState,
    commit_plan,
    model_caps,
    plan_context,
    plan_items,
    session_caps,
)
from gcengine.synthetic import SessionShape, generate_session_file
from gcengine.tokens import TokenCounter
from tests.engine.conftest import EXAMPLES, example
from tests.engine.planner_items import SHARED_CAPS, Items, shared_config
from tests.engine.strategies import jaato_session_files
from tests.engine.test_replay_cli_llm import run_cli

V21 = EXAMPLES / "jaato_session_v2.1.json"
SNAPSHOT = EXAMPLES / "jaato_budget_snapshot.json"
INCLUSION_DETAILS = {
    Detail.SYSTEM,
    Detail.LATEST_USER_MESSAGE,
    Detail.CURRENT_TURN,
    Detail.STICKY,
    Detail.TTL_GRACE,
    Detail.TTL_IGNORED,
}
BUDGET_DETAILS = {Detail.DOES_NOT_FIT, Detail.BEHIND_CUT, Detail.REQUIRED_EXCEEDS_BUDGET}


def leaf_figures(session: Session) -> dict[str, int]:
    """The budget's figure for each message, by message id."""
    conversation = session.budget.get_entry(InstructionSource.CONVERSATION)
    assert conversation is not None
    return {
        entry.message_ids[0]: entry.tokens
        for _, entry in conversation.walk()
        if not entry.children and len(entry.message_ids) == 1
    }


def by_id(plan: ContextPlan) -> dict[str, str]:
    return {item.id: item.code for item in (*plan.included, *plan.excluded)}


# The reference files.


def test_a_jaato_session_becomes_one_item_per_message_with_the_budget_figures(
    counter: TokenCounter,
) -> None:
    session = gcengine.load_session(V21, counter=counter)
    items = plan_items(session)
    assert [item.id for item in items] == [m.message_id for m in session.history]
    assert {item.id: item.tokens for item in items} == leaf_figures(session)
    assert [(item.role, item.turn) for item in items] == [
        (ItemRole.USER, 0),
        (ItemRole.ASSISTANT, 0),
        (ItemRole.TOOL, 0),
        (ItemRole.ASSISTANT, 0),
        (ItemRole.USER, 1),
        (ItemRole.ASSISTANT, 1),
    ]
    assert (items[1].tool_calls, items[2].tool_call_ids) == (("call_001",), ("call_001",))
    assert [item.seq for item in items] == list(range(6))
    # Labels number turns as every page does: the second turn (index 1) is "turn 2".
    assert items[4].label == "turn 2 user"
    # The recorded figures win where they cover the message: JAATO's 12 for the request.
    assert items[0].tokens == 12


def test_both_jaato_formats_give_the_same_items(counter: TokenCounter) -> None:
    v21 = gcengine.load_session(V21, counter=counter)
    v210 = gcengine.load_session(EXAMPLES / "jaato_session_v2.10.json", counter=counter)
    assert plan_items(v21) == plan_items(v210)


def test_the_example_session_fits_and_every_item_says_why(counter: TokenCounter) -> None:
    session = gcengine.load_session(V21, counter=counter)
    plan = plan_context(plan_items(session), session_caps(session), PlannerConfig())
    assert plan.status_line == "ctx tokens: 102 / 195392 (window 200000)"
    assert plan.budget_sources.context_length == "model"
    assert [item.code for item in plan.included] == [
        "recent",
        "recent",
        "recent",
        "recent",
        "required/latest_user_message",
        "required/current_turn",
    ]
    assert all(item.explanation for item in plan.included)


def test_a_budget_snapshot_is_planned_from_its_figures(counter: TokenCounter) -> None:
    session = gcengine.load_session(SNAPSHOT, counter=counter)
    items = plan_items(session)
    system = [(item.id, item.tokens, item.label) for item in items if item.source is Source.SYSTEM]
    assert system == [
        ("system/base", 16, "Base Instructions"),
        ("system/client", 4, "Client Instructions"),
        ("system/framework", 420, "Framework"),
        ("plugin/filesystem_query", 812, "filesystem_query"),
        ("plugin/mermaid_formatter", 150, "mermaid_formatter"),
    ]
    conversation = [item for item in items if item.source is Source.CONVERSATION]
    assert [(item.role, item.turn, item.tokens) for item in conversation] == [
        (ItemRole.USER, 0, 12),
        (ItemRole.ASSISTANT, 0, 6),
        (ItemRole.TOOL, 0, 26),
        (ItemRole.ASSISTANT, 0, 17),
        (ItemRole.USER, 1, 8),
        (ItemRole.ASSISTANT, 1, 16),
    ]
    plan = plan_context(items, session_caps(session), PlannerConfig())
    latest = [item.id for item in plan.included if item.detail is Detail.LATEST_USER_MESSAGE]
    assert latest == ["00000000-0000-4000-8000-000000000005"]
    # Everything the snapshot counts as context (all but thinking) is sent.
    assert plan.estimated_tokens_total == session.budget.total_tokens() == 1487


def test_enrichment_entries_are_rag_parts_ranked_by_their_scores(counter: TokenCounter) -> None:
    snapshot = example("jaato_budget_snapshot.json")
    snapshot["entries"]["enrichment"]["children"] = {
        "docs": {"source": "enrichment", "tokens": 300, "metadata": {"score": 0.4}},
        "code": {"source": "enrichment", "tokens": 200, "metadata": {"score": 0.8}},
        "notes": {"source": "enrichment", "tokens": 100},
    }
    session = gcengine.load_session(snapshot, counter=counter)
    items = plan_items(session)
    rag = {item.id: item.score for item in items if item.source is Source.RAG}
    assert rag == {"enrichment/docs": 0.4, "enrichment/code": 0.8, "enrichment/notes": 0.0}
    assert [item.source for item in items[-3:]] == [Source.RAG] * 3  # RAG parts come last
    rescored = plan_items(session, rag_scores={"notes": 0.9, "enrichment/docs": 0.1})
    plan = plan_context(rescored, session_caps(session), PlannerConfig())
    ranked = [item.id for item in plan.included if item.source is Source.RAG]
    assert ranked == ["enrichment/notes", "enrichment/code", "enrichment/docs"]


# Generated sessions.


@settings(max_examples=40, deadline=None)
@given(jaato_session_files(max_turns=6))
def test_any_generated_session_can_be_planned(file: dict[str, Any]) -> None:
    session = gcengine.load_session(file, counter=gcengine.load_counter("approx"))
    items = plan_items(session)
    conversation = [item for item in items if item.turn is not None]
    assert [item.id for item in conversation] == [m.message_id for m in session.history]
    assert {item.id: item.tokens for item in conversation} == leaf_figures(session)
    notes = {m.message_id for m in session.history if m.kind is not MessageKind.CHAT}
    assert {item.id for item in conversation if item.role is ItemRole.NOTE} == notes
    total = sum(item.tokens for item in items)
    for window in (total // 3 + 600, total + 600):
        caps = ModelCaps(context_length=window, request_max_tokens=100)
        plan = plan_context(items, caps, PlannerConfig(safety_buffer=0))
        assert len(plan.included) + len(plan.excluded) == len(items)
        assert plan.over_budget or plan.estimated_tokens_total <= plan.prompt_budget
        # Whole turns: every turn's messages share one fate, apart from policy removals.
        fates: dict[int | None, set[bool]] = {}
        for item, sent in [(i, True) for i in plan.included] + [(i, False) for i in plan.excluded]:
            if item.reason is not Reason.POLICY:
                fates.setdefault(item.turn, set()).add(sent)
        assert all(len(fate) == 1 for fate in fates.values())


def test_a_long_session_sends_its_most_recent_turns() -> None:
    session = gcengine.load_session(generate_session_file(SessionShape(turns=200, seed=4)))
    items = plan_items(session)
    plan = plan_context(items, ModelCaps(context_length=40_000), PlannerConfig())
    assert not plan.over_budget
    sent = sorted({item.turn for item in plan.included if item.turn is not None})
    assert sent == list(range(200 - len(sent), 200))
    assert 5 < len(sent) < 200
    assert {item.code for item in plan.excluded} <= {"budget/does_not_fit", "budget/behind_cut"}
    assert plan.estimated_tokens_total <= plan.prompt_budget


# Pins.


def tool_session(counter: TokenCounter) -> Session:
    return gcengine.load_session(
        generate_session_file(SessionShape(turns=6, tool_every=1, seed=3)), counter=counter
    )


def test_a_pinned_turn_pins_its_messages_but_not_its_tool_traffic(counter: TokenCounter) -> None:
    session = tool_session(counter)
    items = plan_items(session, pins=[Pin(turn=1, priority=Priority.HIGH, ttl=3)])
    turn_1 = [item for item in items if item.turn == 1]
    assert [(item.role, item.source) for item in turn_1] == [
        (ItemRole.USER, Source.PINNED),
        (ItemRole.ASSISTANT, Source.CONVERSATION),
        (ItemRole.TOOL, Source.CONVERSATION),
        (ItemRole.ASSISTANT, Source.PINNED),
    ]
    pinned = [item for item in items if item.source is Source.PINNED]
    assert {(item.priority, item.ttl) for item in pinned} == {(Priority.HIGH, 3)}


def test_a_sticky_pin_keeps_a_turns_words_when_its_tools_must_go(counter: TokenCounter) -> None:
    session = tool_session(counter)
    items = plan_items(session, pins=[Pin(turn=0, ttl=TTLState.UNLIMITED)])
    pinned = [item for item in items if item.source is Source.PINNED]
    current = [item for item in items if item.turn == 5]
    tight = sum(item.tokens for item in (*pinned, *current)) + 10
    plan = plan_context(
        items, ModelCaps(context_length=tight, request_max_tokens=1), PlannerConfig(safety_buffer=9)
    )
    decided = by_id(plan)
    assert {decided[item.id] for item in pinned} == {"pinned/sticky"}
    tools = [item for item in items if item.turn == 0 and item.source is Source.CONVERSATION]
    assert [item.role for item in tools] == [ItemRole.ASSISTANT, ItemRole.TOOL]
    assert all(decided[item.id].startswith("budget/") for item in tools)
    # The pinned words sit among the pins, ahead of the history they were taken from.
    order = [item.id for item in plan.included]
    assert order[: len(pinned)] == [item.id for item in pinned]


def test_a_message_pin_wins_over_its_turns_pin(counter: TokenCounter) -> None:
    session = tool_session(counter)
    request = session.history[0].message_id
    items = plan_items(
        session,
        pins=[Pin(turn=0, priority=Priority.LOW), Pin(message_id=request, priority=Priority.HIGH)],
    )
    assert {item.id: item.priority for item in items if item.source is Source.PINNED} == {
        request: Priority.HIGH,
        session.history[3].message_id: Priority.LOW,
    }


@pytest.mark.parametrize(
    ("pins", "message"),
    [
        ([Pin(turn=40)], "cannot pin turn 40: the session has no such turn"),
        ([Pin(message_id="nope")], "cannot pin message 'nope': the session has no such message"),
        ([Pin(turn=1), Pin(turn=1, ttl=2)], "turn 1 is pinned twice"),
        ([Pin(message_id="{call}")], "is a tool call or result, which is only sent with its"),
    ],
)
def test_pins_that_cannot_be_honoured_are_errors(
    pins: list[Pin], message: str, counter: TokenCounter
) -> None:
    session = tool_session(counter)
    call = session.history[1].message_id
    pins = [Pin(message_id=call) if pin.message_id == "{call}" else pin for pin in pins]
    with pytest.raises(PlannerError, match=message.replace("(", r"\(")):
        plan_items(session, pins=pins)


def test_a_pin_names_a_turn_or_a_message() -> None:
    with pytest.raises(PlannerError, match="pin: a pin names either a turn or a message id"):
        Pin()
    with pytest.raises(PlannerError, match="pin: a pin names either a turn or a message id"):
        Pin(turn=1, message_id="m")


# Model caps.


@pytest.mark.parametrize(
    ("model", "limits"),
    [
        ("claude-sonnet-4-5-20250929", (200_000, 64_000)),
        ("anthropic/claude-opus-4-6", (200_000, 128_000)),
        ("claude-opus-4-6[1m]", (1_000_000, 128_000)),
        ("gpt-5.4-mini", (1_050_000, 128_000)),
        ("gpt-5-mini", (400_000, 128_000)),
        ("llama-3.3-70b", (131_072, None)),
        ("my-own-model", None),
    ],
)
def test_the_caps_table_matches_the_longest_prefix(
    model: str, limits: tuple[int, int | None] | None
) -> None:
    row = model_limits(model)
    found = (row.context_length, row.max_completion_tokens) if row is not None else None
    assert found == limits


def test_every_row_of_the_caps_table_names_its_source() -> None:
    assert all(row.source.startswith("https://") for row in KNOWN_MODEL_LIMITS.values())


def test_caps_come_from_the_table_and_each_figure_can_be_overridden() -> None:
    assert model_caps("gpt-4o") == ModelCaps(
        model="gpt-4o", context_length=128_000, provider_max_completion_tokens=16_384
    )
    assert model_caps("gpt-4o", context_length=64_000, request_max_tokens=2_000) == ModelCaps(
        model="gpt-4o",
        context_length=64_000,
        provider_max_completion_tokens=16_384,
        request_max_tokens=2_000,
    )
    unknown = plan_context([], model_caps("my-own-model"), PlannerConfig())
    assert (unknown.model_context_len, unknown.budget_sources.context_length) == (
        32_768,
        "default",
    )
    # GPT-4's 8,192-token output limit is above a quarter of its window: the quarter wins.
    gpt4 = plan_context([], model_caps("gpt-4"), PlannerConfig())
    assert (gpt4.max_completion_tokens, gpt4.budget_sources.max_completion_tokens) == (
        2_048,
        "quarter_window",
    )
    small = plan_context([], model_caps("gpt-4", max_completion_tokens=1_000), PlannerConfig())
    assert small.budget_sources.max_completion_tokens == "model"


def test_session_caps_prefer_the_window_the_file_states(counter: TokenCounter) -> None:
    snapshot = gcengine.load_session(SNAPSHOT, counter=counter)
    assert session_caps(snapshot).context_length == 200_000  # stated by the file
    assert session_caps(snapshot, model="gpt-4o").context_length == 128_000
    assert session_caps(snapshot, context_length=9_000).context_length == 9_000
    session = gcengine.load_session(V21, counter=counter)
    assert session_caps(session) == model_caps("claude-sonnet-4")


# The commit step, errors and explanations.


def test_commit_refuses_a_plan_made_for_other_items() -> None:
    items = Items()
    items.sys()
    items.pin("P1", 10, ttl=2)
    items.msg("u1", 10, turn=1)
    plan = plan_context(items.items, SHARED_CAPS, shared_config())
    with pytest.raises(PlannerError, match=r"item 'P1' \(seq 1\) is in the plan but not in"):
        commit_plan([items.items[0], items.items[2]], plan)
    with pytest.raises(PlannerError, match="cannot re-pin 'u1': no pinned item has that id"):
        commit_plan(items.items, plan, repin={"u1"})
    committed = commit_plan(items.items, plan, repin={"P1"})
    assert committed[1].ttl == 15  # re-pinned after the decrement


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"tokens": -1}, "planner item 'x': tokens: Input should be greater than or equal to 0"),
        ({"turn": None}, "planner item 'x': a conversation item needs its turn"),
        ({"tokens": "5"}, "planner item 'x': tokens: Input should be a valid integer"),
        ({"ttl": True}, "planner item 'x': ttl: Input should be a valid integer"),
        ({"colour": "red"}, "planner item 'x': colour: Extra inputs are not permitted"),
        (
            {"source": "pinned", "role": "assistant", "tool_calls": ["c1"]},
            "cannot be pinned",
        ),
        ({"role": "user", "tool_calls": ["c1"]}, "only an assistant message makes tool calls"),
    ],
)
def test_invalid_items_are_planner_errors_that_name_the_item(
    fields: dict[str, Any], message: str
) -> None:
    base = {"id": "x", "source": "conversation", "role": "user", "tokens": 1, "seq": 0, "turn": 0}
    with pytest.raises(PlannerError, match=message):
        PlannerItem.model_validate({**base, **fields})


def test_invalid_settings_are_planner_errors() -> None:
    with pytest.raises(PlannerError, match="the shares must add up to 100, not 90"):
        PlannerConfig.model_validate({"shares": {"system_pinned": 10, "conversation": 50}})
    with pytest.raises(PlannerError, match="model caps: request_max_tokens: Input should be"):
        ModelCaps(request_max_tokens=0)


def test_two_items_cannot_share_a_seq() -> None:
    items = Items()
    items.sys()
    items.msg("u1", 10, turn=1, seq=0)
    with pytest.raises(PlannerError, match="items 'sys' and 'u1' share seq 0"):
        plan_context(items.items, SHARED_CAPS, shared_config())


@pytest.mark.parametrize("detail", [d for d in Detail if d not in INCLUSION_DETAILS])
def test_every_exclusion_reads_as_a_sentence(detail: Detail) -> None:
    reason = Reason.BUDGET if detail in BUDGET_DETAILS else Reason.POLICY
    item = ExcludedItem(
        "x",
        Source.PINNED,
        Section.SYSTEM_PINNED,
        ItemRole.NOTE,
        Priority.NORMAL,
        None,
        reason,
        detail,
        10,
        "x",
        5,
        1,
        None,
        "",
    )
    assert item.code == f"{reason.value}/{detail.value}"
    assert item.explanation.startswith("Left out: ")
    assert detail.value not in item.explanation


def test_the_telemetry_is_one_record_for_its_plan() -> None:
    items = Items()
    items.sys()
    items.msg("u1", 40, turn=1)
    items.msg("a1", 2000, turn=1)
    items.msg("u2", 30, turn=2)
    plan = plan_context(items.items, SHARED_CAPS, shared_config(), request_id="req-7")
    telemetry = plan.telemetry
    assert (telemetry.plan_id, telemetry.request_id) == (plan.plan_id, "req-7")
    assert telemetry.included_by_reason == {
        "required/latest_user_message": 1,
        "required/system": 1,
    }
    assert telemetry.excluded_by_reason == {"budget/does_not_fit": 2}
    assert (telemetry.required_tokens, telemetry.included_tokens, telemetry.excluded_tokens) == (
        230,
        230,
        2040,
    )
    assert plan_context(items.items, SHARED_CAPS, shared_config(), plan_id="mine").plan_id == "mine"


# The command line.


def test_cli_plan_prints_the_budget_the_sections_and_what_is_left_out(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run_cli("plan", str(V21), "--context-length", "600", capsys=capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    # No budget at all: only the current task, the latest user request, stays required.
    assert lines[0] == "ctx tokens: 8 / 0 (window 600) over budget +8"
    assert "budget    window 600 (model) - completion 150 (quarter_window) - safety 512" in out
    assert "turn_0" in out
    assert "budget/required_exceeds_budget" in out
    code, out, _ = run_cli("plan", str(V21), capsys=capsys)
    assert out.splitlines()[0] == "ctx tokens: 102 / 195392 (window 200000)"
    assert "excluded  0 items" in out


def test_cli_plan_json_is_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli("plan", str(V21), "--model", "gpt-4o", "--json", capsys=capsys)
    assert code == 0
    plan = ContextPlan.model_validate_json(out)
    assert (plan.model, plan.model_context_len) == ("gpt-4o", 128_000)
    assert json.loads(out)["included"][0]["explanation"] == (
        "Part of the most recent history that fits."
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["plan", "/does/not/exist.json"], "cannot read"),
        (["plan", str(V21), "--context-length", "0"], "--context-length must be at least 1"),
        (["plan", str(Path(__file__))], "error: "),
    ],
)
def test_cli_plan_errors_are_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(*args, capsys=capsys)
    assert code == 2
    assert message in err
    assert "Traceback" not in err
    assert err.count("\n") == 1


def test_cli_plan_takes_a_model_or_a_window_not_both(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        run_cli("plan", str(V21), "--model", "gpt-4o", "--context-length", "9", capsys=capsys)
    assert stop.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


# An agent's session: a few prompts, hundreds of calls, resumed after a compaction.

SPOTTER = Path(__file__).parents[1] / "fixtures" / "formats" / "spotter"
SPOTTER_COMPACTED = sorted(p for p in SPOTTER.glob("*.jsonl") if p.name != "short.jsonl")


@pytest.mark.parametrize("path", SPOTTER_COMPACTED, ids=lambda p: p.name[:8])
def test_a_real_agent_session_after_its_compaction_plans_its_task_and_latest_work(
    path: Path, counter: TokenCounter
) -> None:
    session = gcengine.load_session(path, counter=counter)
    caps = gcengine.session_caps(session, context_length=30_000)
    result = gcengine.plan_context(gcengine.plan_items(session), caps, gcengine.PlannerConfig())

    prompts = [
        m
        for m in session.history
        if m.role is gcengine.Role.USER
        and m.kind is MessageKind.CHAT
        and not m.is_function_response
        and "injected" not in m.metadata
    ]
    included = {item.id for item in result.included}
    assert not result.over_budget
    # The current task: the latest request, wherever it stands in its long turn.
    latest = [item for item in result.included if item.detail is Detail.LATEST_USER_MESSAGE]
    assert len(latest) == 1
    if prompts:
        assert prompts[-1].message_id in included
    # Its latest work, up to the budget, instead of nothing.
    assert result.estimated_tokens_total > result.prompt_budget * 0.8
    history = [m for m in session.history if m.message_id in included]
    assert not gcengine.tool_pair_problems(history)
    assert session.history[-1].message_id in included
