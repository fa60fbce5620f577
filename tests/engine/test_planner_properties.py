"""The planner's invariants (specification section 8.13) as properties over generated inputs.

Inputs mix everything the planner distinguishes: system items, pins (some sticky, some
expired, some pinned messages that belong to a turn), turns with tool chains (some broken),
RAG parts with tied scores, duplicate ids, items not meant for the model, and caps and
settings from roomy to far too tight.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gcengine.planner import (
    ContextPlan,
    Detail,
    ExcludedItem,
    ItemRole,
    ModelCaps,
    PlannedItem,
    PlannerConfig,
    PlannerItem,
    Priority,
    Reason,
    SectionShares,
    Source,
    TTLPolicy,
    TTLState,
    commit_plan,
    plan_context,
)

TTLS: list[int | TTLState | None] = [None, None, 1, 2, 5, TTLState.NONE_REMAINING]
TTLS += [TTLState.UNLIMITED]


@st.composite
def turn_messages(draw: st.DrawFn, turn: int) -> list[dict[str, Any]]:
    """One turn: a user request, zero to two tool rounds (sometimes broken), an answer."""
    messages: list[dict[str, Any]] = []
    tokens = st.integers(0, 400)
    if draw(st.integers(0, 9)):  # now and then a turn without its request
        messages.append({"role": ItemRole.USER, "tokens": draw(tokens)})
    for round_number in range(draw(st.integers(0, 2))):
        calls = [f"c{turn}_{round_number}_{n}" for n in range(draw(st.integers(1, 2)))]
        messages.append({"role": ItemRole.ASSISTANT, "tokens": draw(tokens), "calls": calls})
        answered = calls if draw(st.integers(0, 4)) else calls[1:]  # a result may be missing
        if answered:
            messages.append({"role": ItemRole.TOOL, "tokens": draw(tokens), "result": answered})
        if not draw(st.integers(0, 6)):  # a result whose call is nowhere
            messages.append({"role": ItemRole.TOOL, "tokens": draw(tokens), "result": ["lost"]})
    if draw(st.booleans()):
        messages.append({"role": ItemRole.ASSISTANT, "tokens": draw(tokens)})
    return messages


@st.composite
def planner_items(draw: st.DrawFn) -> list[PlannerItem]:
    fields: list[dict[str, Any]] = []
    for number in range(draw(st.integers(0, 2))):
        fields.append(
            {"id": f"sys{number}", "source": Source.SYSTEM, "role": ItemRole.SYSTEM, "turn": None}
        )
    for number in range(draw(st.integers(0, 4))):
        fields.append(
            {
                "id": f"pin{number}",
                "source": Source.PINNED,
                "role": ItemRole.NOTE,
                "turn": None,
                "priority": draw(st.sampled_from(Priority)),
                "ttl": draw(st.sampled_from(TTLS)),
                "review_pending": draw(st.booleans()),
            }
        )
    for turn in range(draw(st.integers(0, 6))):
        for position, message in enumerate(draw(turn_messages(turn))):
            item: dict[str, Any] = {
                "id": f"m{turn}_{position}",
                "source": Source.CONVERSATION,
                "role": message["role"],
                "turn": turn,
                "tool_calls": tuple(message.get("calls", ())),
                "tool_call_ids": tuple(message.get("result", ())),
            }
            plain = not (item["tool_calls"] or item["tool_call_ids"])
            if plain and not draw(st.integers(0, 5)):  # a pinned message, still in its turn
                item["source"] = Source.PINNED
                item["priority"] = draw(st.sampled_from(Priority))
            if not draw(st.integers(0, 6)):
                item["ttl"] = draw(st.sampled_from(TTLS))
            fields.append(item)
    for number in range(draw(st.integers(0, 5))):
        fields.append(
            {
                "id": f"rag{number}",
                "source": Source.RAG,
                "role": ItemRole.SYSTEM,
                "turn": None,
                "score": draw(st.sampled_from([0.1, 0.5, 0.5, 0.9])),
            }
        )
    for item in fields:
        item["tokens"] = draw(st.integers(0, 400))
        item["model_visible"] = bool(draw(st.integers(0, 12)))
    if fields and draw(st.booleans()):  # a copy under the same id
        copy = dict(draw(st.sampled_from(fields)))
        if copy["source"] is Source.RAG:
            copy["score"] = draw(st.sampled_from([0.1, 0.9]))
        fields.insert(draw(st.integers(0, len(fields))), copy)
    seq = draw(st.integers(-5, 5))
    items = []
    for item in fields:
        seq += draw(st.integers(1, 3))
        items.append(PlannerItem.model_validate({**item, "seq": seq}))
    return items


caps_strategy = st.builds(
    ModelCaps,
    context_length=st.one_of(st.none(), st.integers(0, 6000)),
    provider_max_completion_tokens=st.one_of(st.none(), st.integers(0, 3000)),
    max_prompt_tokens=st.one_of(st.none(), st.integers(0, 4000)),
    request_max_tokens=st.one_of(st.none(), st.integers(1, 2000)),
)


@st.composite
def configs(draw: st.DrawFn) -> PlannerConfig:
    first = draw(st.integers(0, 100))
    second = draw(st.integers(0, 100 - first))
    return PlannerConfig(
        default_context_length=draw(st.integers(1, 5000)),
        default_max_completion_tokens=draw(st.integers(0, 2000)),
        safety_buffer=draw(st.integers(0, 300)),
        shares=SectionShares(system_pinned=first, conversation=second, rag=100 - first - second),
        ttl_policy=draw(st.sampled_from(TTLPolicy)),
        spillover=draw(st.booleans()),
    )


inputs = st.tuples(planner_items(), caps_strategy, configs())
Inputs = tuple[list[PlannerItem], ModelCaps, PlannerConfig]


def plan_of(given_inputs: Inputs) -> ContextPlan:
    return plan_context(*given_inputs)


def pin_rank(item: PlannerItem) -> tuple[int, int, str]:
    return (item.priority.rank, -item.seq, item.id)


@settings(max_examples=200)
@given(inputs, st.randoms(use_true_random=False))
def test_the_same_inputs_in_any_order_give_the_same_plan(given_inputs: Inputs, random: Any) -> None:
    items, caps, config = given_inputs
    shuffled = list(items)
    random.shuffle(shuffled)
    assert plan_context(shuffled, caps, config) == plan_context(items, caps, config)


@given(inputs)
def test_the_latest_user_message_is_always_sent(given_inputs: Inputs) -> None:
    result = plan_of(given_inputs)
    removed_first = {"policy/duplicate", "policy/not_model_visible"}
    dropped = {(item.seq, item.id) for item in result.excluded if item.code in removed_first}
    users = [
        item
        for item in given_inputs[0]
        if item.role is ItemRole.USER
        and item.turn is not None
        and (item.seq, item.id) not in dropped
    ]
    latest = [item for item in result.included if item.detail is Detail.LATEST_USER_MESSAGE]
    if not users:
        assert latest == []
        return
    newest = max(users, key=lambda item: item.seq)
    assert [(item.id, item.seq, item.reason) for item in latest] == [
        (newest.id, newest.seq, Reason.REQUIRED)
    ]


@given(inputs)
def test_the_plan_is_within_budget_unless_required_items_alone_exceed_it(
    given_inputs: Inputs,
) -> None:
    result = plan_of(given_inputs)
    required = sum(i.tokens for i in result.included if i.pass_ == 0)
    assert result.required_tokens == required
    assert result.over_budget == (required > result.prompt_budget)
    if not result.over_budget:
        assert result.estimated_tokens_total <= result.prompt_budget
        assert result.overflow_tokens == 0
    else:
        assert result.estimated_tokens_total == required
        assert result.overflow_tokens == required - result.prompt_budget


@given(inputs)
def test_every_input_is_decided_exactly_once(given_inputs: Inputs) -> None:
    items = given_inputs[0]
    result = plan_of(given_inputs)
    decided = [(item.id, item.seq) for item in (*result.included, *result.excluded)]
    assert Counter(decided) == Counter((item.id, item.seq) for item in items)
    assert result.estimated_tokens_total == sum(item.tokens for item in result.included)
    assert [item.seq for item in result.excluded] == sorted(item.seq for item in result.excluded)


def decided(result: ContextPlan) -> list[tuple[PlannedItem | ExcludedItem, bool]]:
    """Every decision, with whether it sends the item."""
    return [(item, True) for item in result.included] + [(item, False) for item in result.excluded]


def current_turn(result: ContextPlan) -> int | None:
    latest = [item for item in result.included if item.detail is Detail.LATEST_USER_MESSAGE]
    return latest[0].turn if latest else None


@given(inputs)
def test_turns_without_tool_calls_are_sent_whole_or_not_at_all(given_inputs: Inputs) -> None:
    """A turn that works with tools may go exchange by exchange (an agent's turn of hundreds
    of calls); any other goes whole, and the current one whole while it fits."""
    result = plan_of(given_inputs)
    current = current_turn(result)
    turns: dict[int, set[bool]] = {}
    with_tools = {item.turn for item in given_inputs[0] if item.tool_calls or item.tool_call_ids}
    for item, in_plan in decided(result):
        if item.source is Source.CONVERSATION and item.reason is not Reason.POLICY:
            assert item.turn is not None
            turns.setdefault(item.turn, set()).add(in_plan)
    sizes: dict[int, int] = {}
    for item in given_inputs[0]:
        if item.turn is not None:
            sizes[item.turn] = sizes.get(item.turn, 0) + item.tokens
    # What stays required beside the current turn: the system prompt and the pins.
    beside = sum(
        item.tokens
        for item, in_plan in decided(result)
        if in_plan and item.turn != current and item.reason in (Reason.REQUIRED, Reason.PINNED)
    )
    for turn, states in turns.items():
        if turn in with_tools:
            continue
        # No room whole beside what else is required: its request stays, the rest competes.
        if turn == current and beside + sizes[turn] > result.prompt_budget:
            continue
        assert len(states) == 1, f"turn {turn} is split"
        if turn == current:
            assert states == {True}


@given(inputs)
def test_no_tool_call_is_sent_without_its_results_nor_a_result_without_its_call(
    given_inputs: Inputs,
) -> None:
    items = {(item.seq, item.id): item for item in given_inputs[0]}
    result = plan_of(given_inputs)
    current = current_turn(result)
    sent = [items[(item.seq, item.id)] for item in result.included]
    for turn in {item.turn for item in sent if item.turn is not None}:
        members = [item for item in sent if item.turn == turn]
        made = {call for item in members for call in item.tool_calls}
        answered = {call for item in members for call in item.tool_call_ids}
        assert answered <= made
        if turn != current:
            assert made <= answered


@given(inputs)
def test_a_pin_is_never_sent_while_a_higher_ranked_pin_is_out_for_budget(
    given_inputs: Inputs,
) -> None:
    result = plan_of(given_inputs)
    pins = [
        item
        for item in (*result.included, *result.excluded)
        if item.source is Source.PINNED
        and item.reason not in (Reason.POLICY, Reason.REQUIRED)
        and item.detail is not Detail.STICKY
    ]
    pins.sort(key=lambda item: (item.priority.rank, -item.seq, item.id))
    out = False
    for pin in pins:
        if pin.reason is Reason.BUDGET and pin.detail is not Detail.REQUIRED_EXCEEDS_BUDGET:
            out = True
        elif pin.reason is Reason.PINNED:
            assert not out, f"{pin.id} is sent after a higher-ranked pin was left out"


@given(inputs)
def test_the_history_sent_is_the_most_recent_turns_without_gaps(given_inputs: Inputs) -> None:
    result = plan_of(given_inputs)
    current = current_turn(result)
    sent: dict[int, bool] = {}
    for item, in_plan in decided(result):
        if (
            item.source is Source.CONVERSATION
            and item.reason not in (Reason.POLICY, Reason.REQUIRED)
            and item.turn != current
        ):
            assert item.turn is not None
            sent[item.turn] = in_plan
    flags = [sent[turn] for turn in sorted(sent, reverse=True)]
    assert flags == sorted(flags, reverse=True), "an older turn is sent while a newer one is not"


@given(inputs)
def test_a_rag_part_left_out_did_not_fit_what_was_left(given_inputs: Inputs) -> None:
    result = plan_of(given_inputs)
    for item in result.excluded:
        if item.detail is Detail.DOES_NOT_FIT:
            assert item.tokens_left is not None
            if item.source is Source.RAG:
                assert item.tokens > item.tokens_left
        else:
            assert item.tokens_left is None


@given(inputs)
def test_under_automatic_no_expired_item_is_sent(given_inputs: Inputs) -> None:
    items, caps, config = given_inputs
    automatic = PlannerConfig.model_validate(
        {**config.model_dump(), "ttl_policy": TTLPolicy.AUTOMATIC}
    )
    result = plan_context(items, caps, automatic)
    assert all(
        item.ttl is not TTLState.NONE_REMAINING
        or item.reason is Reason.REQUIRED
        or item.detail is Detail.STICKY
        for item in result.included
    )
    assert result.review_requests == ()


@given(inputs)
def test_sections_account_for_every_optional_token(given_inputs: Inputs) -> None:
    result = plan_of(given_inputs)
    sections = (result.sections.system_pinned, result.sections.conversation, result.sections.rag)
    optional = sum(item.tokens for item in result.included if item.pass_ > 0)
    assert sum(usage.used for usage in sections) == optional
    assert sum(usage.spill_in for usage in sections) == sum(
        item.tokens for item in result.included if item.pass_ == 2
    )
    if not result.over_budget:
        assert sum(usage.allocated for usage in sections) in (
            0,
            result.prompt_budget - result.required_tokens,
        )
    for usage in sections:
        assert usage.used - usage.spill_in <= usage.allocated
    telemetry = result.telemetry
    assert telemetry.plan_id == result.plan_id
    assert sum(telemetry.included_by_reason.values()) == len(result.included)
    assert sum(telemetry.excluded_by_reason.values()) == len(result.excluded)
    assert telemetry.excluded_tokens == sum(item.tokens for item in result.excluded)


@given(inputs)
def test_a_plan_reads_back_from_its_json(given_inputs: Inputs) -> None:
    result = plan_of(given_inputs)
    assert ContextPlan.model_validate_json(result.model_dump_json()) == result


@given(inputs)
def test_commit_moves_on_only_what_was_sent(given_inputs: Inputs) -> None:
    items = given_inputs[0]
    result = plan_of(given_inputs)
    sent = {(item.seq, item.id) for item in result.included}
    pending = {(change.seq, change.item_id) for change in result.state_transitions}
    for before, after in zip(items, commit_plan(items, result), strict=True):
        key = (before.seq, before.id)
        if key in sent and isinstance(before.ttl, int):
            expected = before.ttl - 1 or TTLState.NONE_REMAINING
            assert after.ttl == expected
        else:
            assert after.ttl == before.ttl
        assert after.review_pending == (before.review_pending or key in pending)
        assert (after.id, after.seq, after.tokens) == (before.id, before.seq, before.tokens)
