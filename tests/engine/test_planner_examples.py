"""The specification's ten worked examples (context_planner.md, section 9), verbatim.

Shared settings unless an example says otherwise: context length 2000, request max 500,
safety buffer 100 (B = 1400), shares 15 / 55 / 30, TTL policy automatic, spillover on, and a
200-token system prompt ``sys`` at seq 0.
"""

from __future__ import annotations

import pytest

from gcengine.planner import (
    ContextPlan,
    Detail,
    ModelCaps,
    PlannerConfig,
    Reason,
    TTLPolicy,
    TTLState,
    commit_plan,
    plan_context,
    prompt_budget,
)
from tests.engine.planner_items import (
    HIGH,
    LOW,
    NONE_REMAINING,
    NORMAL,
    SHARED_CAPS,
    UNLIMITED,
    Items,
    allocation,
    decisions,
    excluded_codes,
    included_ids,
    shared_config,
)


def plan(items: Items, **config: object) -> ContextPlan:
    return plan_context(items.items, SHARED_CAPS, shared_config(**config))


# Example 1: budget arithmetic and fallbacks (step 1 only).


@pytest.mark.parametrize(
    ("caps", "safety", "expected"),
    [
        pytest.param(ModelCaps(), 512, (32768, 4096, 512, 28160), id="a-no-caps"),
        pytest.param(
            ModelCaps(context_length=8192, request_max_tokens=1024),
            256,
            (8192, 1024, 256, 6912),
            id="b-request-max",
        ),
        pytest.param(
            ModelCaps(context_length=8192, request_max_tokens=1024, max_prompt_tokens=4000),
            256,
            (8192, 1024, 256, 3744),
            id="c-max-prompt-tokens",
        ),
        pytest.param(
            ModelCaps(context_length=4096), 512, (4096, 1024, 512, 2560), id="d-quarter-window"
        ),
        pytest.param(
            ModelCaps(context_length=128000, provider_max_completion_tokens=16384),
            512,
            (128000, 4096, 512, 123392),
            id="e-provider-max",
        ),
        pytest.param(
            ModelCaps(context_length=1000, request_max_tokens=900),
            200,
            (1000, 900, 200, 0),
            id="f-no-room",
        ),
    ],
)
def test_example_1_budget_arithmetic(
    caps: ModelCaps, safety: int, expected: tuple[int, int, int, int]
) -> None:
    budget = prompt_budget(caps, PlannerConfig(safety_buffer=safety))
    assert (
        budget.model_context_len,
        budget.max_completion_tokens,
        budget.safety_buffer,
        budget.prompt_budget,
    ) == expected


def test_example_1a_sources_are_the_defaults() -> None:
    sources = prompt_budget(ModelCaps(), PlannerConfig()).sources
    assert (sources.context_length, sources.max_completion_tokens) == ("default", "default")
    sources = prompt_budget(ModelCaps(context_length=8192), PlannerConfig()).sources
    assert sources.context_length == "model"


def test_example_1f_any_required_item_is_over_budget() -> None:
    items = Items()
    items.sys()
    items.msg("u1", 1, turn=1)
    result = plan_context(
        items.items,
        ModelCaps(context_length=1000, request_max_tokens=900),
        PlannerConfig(safety_buffer=200),
    )
    assert result.prompt_budget == 0
    assert result.over_budget
    assert result.overflow_tokens == 201


# Example 2: everything fits.


def example_2() -> Items:
    items = Items()
    items.sys()
    items.pin("P1", 50, HIGH, 5)
    items.msg("u1", 40, turn=1)
    items.msg("a1", 60, turn=1)
    items.msg("u2", 30, turn=2)
    items.rag("r1", 100, 0.9)
    items.rag("r2", 80, 0.5)
    return items


def test_example_2_everything_fits() -> None:
    result = plan(example_2())
    assert result.required_tokens == 230
    assert allocation(result) == (175, 644, 351)
    assert decisions(result) == {
        "sys": "required/system",
        "u2": "required/latest_user_message",
        "P1": "pinned",
        "u1": "recent",
        "a1": "recent",
        "r1": "relevant",
        "r2": "relevant",
    }
    assert result.excluded == ()
    assert result.estimated_tokens_total == 560
    assert result.status_line == "ctx tokens: 560 / 1400 (window 2000)"
    assert included_ids(result) == ["sys", "P1", "r1", "r2", "u1", "a1", "u2"]


# Example 3: reallocation when a section is empty.


def example_3(with_rag: bool) -> Items:
    items = Items()
    items.sys()
    items.pin("P1", 50, HIGH, 5)
    items.msg("u1", 100, turn=1)
    items.msg("a1", 800, turn=1)
    items.msg("u2", 30, turn=2)
    if with_rag:
        items.rag("r1", 10, 0.9)
    return items


def test_example_3a_an_empty_section_gives_its_share_away() -> None:
    result = plan(example_3(with_rag=False), spillover=False)
    assert allocation(result) == (250, 920, 0)
    assert decisions(result)["u1"] == decisions(result)["a1"] == "recent"
    assert decisions(result)["P1"] == "pinned"
    assert result.estimated_tokens_total == 1180


def test_example_3b_with_rag_the_turn_does_not_fit_its_share() -> None:
    result = plan(example_3(with_rag=True), spillover=False)
    assert allocation(result) == (175, 644, 351)
    assert excluded_codes(result) == {"u1": "budget/does_not_fit", "a1": "budget/does_not_fit"}
    assert decisions(result)["P1"] == "pinned"
    assert decisions(result)["r1"] == "relevant"
    assert result.estimated_tokens_total == 290


def test_example_3c_spillover_brings_the_turn_back_in_pass_2() -> None:
    result = plan(example_3(with_rag=True))
    sections = result.sections
    pool = sum(
        usage.allocated - (usage.used - usage.spill_in)
        for usage in (sections.system_pinned, sections.conversation, sections.rag)
    )
    assert pool == 125 + 644 + 341 == 1110
    turn_1 = [item for item in result.included if item.id in ("u1", "a1")]
    assert [(item.code, item.pass_) for item in turn_1] == [("recent", 2), ("recent", 2)]
    assert sections.conversation.spill_in == 900
    assert result.estimated_tokens_total == 1190


# Example 4: conversation stays contiguous.


def test_example_4_conversation_stays_contiguous() -> None:
    items = Items()
    items.sys()
    items.msg("u1", 25, turn=1)
    items.msg("a1", 25, turn=1)
    items.msg("u2", 50, turn=2)
    items.msg("a2", 50, turn=2)
    items.msg("u3", 100, turn=3)
    items.msg("a3", 1000, turn=3)
    items.msg("u4", 30, turn=4)
    result = plan(items)
    assert result.required_tokens == 230
    assert allocation(result) == (0, 1170, 0)
    assert decisions(result) == {
        "sys": "required/system",
        "u4": "required/latest_user_message",
        "u3": "recent",
        "a3": "recent",
        "u2": "budget/does_not_fit",
        "a2": "budget/does_not_fit",
        "u1": "budget/behind_cut",
        "a1": "budget/behind_cut",
    }
    # Turn 2 was tried again in pass 2 with the 70 tokens left, and still did not fit.
    assert {item.id: item.tokens_left for item in result.excluded if item.id == "u2"} == {"u2": 70}
    assert result.estimated_tokens_total == 1330


# Example 5: the latest user message alone is over budget.


def test_example_5_required_items_over_budget_are_never_trimmed() -> None:
    items = Items()
    items.sys()
    items.pin("P1", 50, HIGH, 5)
    items.msg("u1", 40, turn=1)
    items.msg("a1", 60, turn=1)
    items.msg("u2", 1300, turn=2)
    items.rag("r1", 100, 0.9)
    result = plan(items)
    assert result.required_tokens == 1500
    assert result.over_budget
    assert result.overflow_tokens == 100
    assert allocation(result) == (0, 0, 0)
    assert included_ids(result) == ["sys", "u2"]
    assert excluded_codes(result) == dict.fromkeys(
        ["P1", "u1", "a1", "r1"], "budget/required_exceeds_budget"
    )
    assert result.estimated_tokens_total == 1500
    assert result.status_line == "ctx tokens: 1500 / 1400 (window 2000) over budget +100"
    assert {item.id: item.tokens for item in result.included}["u2"] == 1300


# Example 6: tool chains, turn units, orphans.


def test_example_6_tool_chains_leave_with_their_exchange() -> None:
    items = Items()
    items.sys()
    items.msg("u1", 20, turn=1)
    items.msg("a1", 10, turn=1, calls=("c1",))
    items.msg("t1", 700, turn=1, result=("c1",))
    items.msg("a1b", 30, turn=1)
    items.msg("u2", 20, turn=2)
    items.msg("a2", 10, turn=2, calls=("c2",))
    items.msg("t9", 15, turn=2, result=("c9",))
    items.msg("a2b", 20, turn=2)
    items.msg("u3", 25, turn=3)
    items.msg("a3", 10, turn=3, calls=("c3",))
    items.msg("t3", 500, turn=3, result=("c3",))
    result = plan(items)
    assert result.required_tokens == 735
    assert allocation(result) == (0, 665, 0)
    assert decisions(result) == {
        "sys": "required/system",
        "u3": "required/latest_user_message",
        "a3": "required/current_turn",
        "t3": "required/current_turn",
        "u2": "recent",
        "a2b": "recent",
        "a2": "policy/dangling_tool_call",
        "t9": "policy/orphan_tool_result",
        # Turn 1 works with tools and does not fit whole: its newest exchange that fits (the
        # answer after its call) goes; the call leaves with its result.
        "a1b": "recent",
        "u1": "budget/does_not_fit",
        "a1": "budget/does_not_fit",
        "t1": "budget/does_not_fit",
    }
    turn_1 = [item for item in result.excluded if item.turn == 1]
    assert {item.atom_id for item in turn_1} == {"turn_1"}
    assert result.estimated_tokens_total == 775 + 30


# Example 7: pin priorities, sticky pins, newest-first tie-break.


def example_7() -> Items:
    items = Items()
    items.sys()
    items.pin("S1", 400, LOW, UNLIMITED)
    items.pin("H1", 120, HIGH, 5, seq=3)
    items.pin("N1", 60, NORMAL, seq=5)
    items.pin("N2", 60, NORMAL, seq=6)
    items.pin("L1", 10, LOW, seq=7)
    items.msg("u1", 60, turn=1)
    items.msg("a1", 500, turn=1)
    items.msg("u2", 30, turn=2)
    return items


def test_example_7_pins_by_priority_and_newest_first() -> None:
    result = plan(example_7())
    assert result.required_tokens == 630
    assert allocation(result) == (165, 605, 0)
    by_id = {item.id: item for item in result.included}
    assert [(by_id[i].code, by_id[i].pass_) for i in ("S1", "H1", "N2")] == [
        ("pinned/sticky", 0),
        ("pinned", 1),
        ("pinned", 2),
    ]
    assert decisions(result) == {
        "sys": "required/system",
        "u2": "required/latest_user_message",
        "S1": "pinned/sticky",
        "H1": "pinned",
        "N2": "pinned",
        "u1": "recent",
        "a1": "recent",
        "N1": "budget/does_not_fit",
        "L1": "budget/behind_cut",
    }
    assert result.estimated_tokens_total == 1370


def test_example_7_without_spillover() -> None:
    result = plan(example_7(), spillover=False)
    assert excluded_codes(result) == {
        "N2": "budget/does_not_fit",
        "N1": "budget/behind_cut",
        "L1": "budget/behind_cut",
    }
    assert result.estimated_tokens_total == 1310


# Example 8: TTL under Automatic and under Unlimited, then decrement.


def example_8() -> Items:
    items = Items()
    items.sys()
    items.pin("E1", 40, NORMAL, NONE_REMAINING, seq=1)
    items.pin("K1", 40, NORMAL, 3, seq=2)
    items.pin("Z1", 20, HIGH, 0, seq=3)  # Limited(0) reads as NoneRemaining
    items.msg("u1", 30, turn=1)
    return items


def test_example_8_automatic_drops_expired_pins_and_commit_decrements() -> None:
    items = example_8()
    assert items.items[3].ttl is TTLState.NONE_REMAINING
    result = plan(items)
    assert decisions(result) == {
        "sys": "required/system",
        "u1": "required/latest_user_message",
        "K1": "pinned",
        "E1": "policy/ttl_expired",
        "Z1": "policy/ttl_expired",
    }
    assert allocation(result) == (1170, 0, 0)
    assert result.estimated_tokens_total == 270
    committed = {item.id: item.ttl for item in commit_plan(items.items, result)}
    assert committed == {
        "sys": None,
        "E1": NONE_REMAINING,
        "K1": 2,
        "Z1": NONE_REMAINING,
        "u1": None,
    }


def test_example_8_unlimited_policy_keeps_expired_pins_competing() -> None:
    items = example_8()
    result = plan(items, ttl_policy=TTLPolicy.UNLIMITED)
    pins = [item for item in result.included if item.reason is Reason.PINNED]
    assert [item.id for item in sorted(pins, key=lambda i: i.seq)] == ["E1", "K1", "Z1"]
    assert {item.id: item.detail for item in pins} == {
        "Z1": Detail.TTL_IGNORED,
        "K1": None,
        "E1": Detail.TTL_IGNORED,
    }
    assert result.estimated_tokens_total == 330
    committed = {item.id: item.ttl for item in commit_plan(items.items, result)}
    assert (committed["K1"], committed["E1"], committed["Z1"]) == (
        2,
        NONE_REMAINING,
        NONE_REMAINING,
    )


def test_example_8_pinned_order_is_priority_then_newest() -> None:
    """Under Unlimited all three compete: Z1 (high) first, then K1 (seq 2) before E1 (seq 1);
    squeezing the budget shows the order, as only a prefix of it fits."""
    items = example_8()
    caps = ModelCaps(context_length=2000, request_max_tokens=2000 - 100 - 230 - 60)
    result = plan_context(items.items, caps, shared_config(ttl_policy=TTLPolicy.UNLIMITED))
    assert decisions(result)["Z1"] == "pinned/ttl_ignored"
    assert decisions(result)["K1"] == "pinned"
    assert decisions(result)["E1"] == "budget/does_not_fit"


# Example 9: TTL under Ask, over two turns.


def test_example_9_ask_keeps_an_expired_pin_for_one_turn() -> None:
    turn_k = Items()
    turn_k.sys()
    turn_k.pin("A1", 40, NORMAL, NONE_REMAINING, seq=1)
    turn_k.pin("B1", 40, NORMAL, 1, seq=2)
    turn_k.msg("u1", 30, turn=1)
    result = plan(turn_k, ttl_policy=TTLPolicy.ASK)
    assert decisions(result) == {
        "sys": "required/system",
        "u1": "required/latest_user_message",
        "B1": "pinned",
        "A1": "pinned/ttl_grace",
    }
    assert result.review_requests == ("A1",)
    assert [(t.item_id, t.review_pending) for t in result.state_transitions] == [("A1", True)]
    assert result.estimated_tokens_total == 310
    committed = {item.id: item for item in commit_plan(turn_k.items, result)}
    assert committed["A1"].review_pending
    assert committed["A1"].ttl is NONE_REMAINING
    assert committed["B1"].ttl is NONE_REMAINING

    turn_k1 = Items()
    turn_k1.sys()
    turn_k1.items += [committed["A1"], committed["B1"]]
    turn_k1.next_seq = 3
    turn_k1.msg("u1", 30, turn=1)
    turn_k1.msg("a1", 20, turn=1)
    turn_k1.msg("u2", 30, turn=2)
    result = plan(turn_k1, ttl_policy=TTLPolicy.ASK)
    assert decisions(result) == {
        "sys": "required/system",
        "u2": "required/latest_user_message",
        "A1": "policy/ttl_review_expired",
        "B1": "pinned/ttl_grace",
        "u1": "recent",
        "a1": "recent",
    }
    assert result.review_requests == ("B1",)
    assert allocation(result) == (250, 920, 0)
    assert included_ids(result) == ["sys", "B1", "u1", "a1", "u2"]
    assert result.estimated_tokens_total == 320


def test_example_9_variant_a_repinned_item_is_an_ordinary_pin_again() -> None:
    turn_k = Items()
    turn_k.sys()
    turn_k.pin("A1", 40, NORMAL, NONE_REMAINING, seq=1)
    turn_k.pin("B1", 40, NORMAL, 1, seq=2)
    turn_k.msg("u1", 30, turn=1)
    result = plan(turn_k, ttl_policy=TTLPolicy.ASK)
    committed = {item.id: item for item in commit_plan(turn_k.items, result, repin={"A1"})}
    assert (committed["A1"].ttl, committed["A1"].review_pending) == (15, False)

    turn_k1 = Items()
    turn_k1.items += [committed["A1"], committed["B1"]]
    turn_k1.sys(seq=0)
    turn_k1.next_seq = 3
    turn_k1.msg("u1", 30, turn=1)
    turn_k1.msg("a1", 20, turn=1)
    turn_k1.msg("u2", 30, turn=2)
    result = plan(turn_k1, ttl_policy=TTLPolicy.ASK)
    assert decisions(result)["A1"] == "pinned"


# Example 10: RAG first-fit, id tie-break, spillover into RAG.


def example_10() -> Items:
    items = Items()
    items.sys()
    items.pin("P1", 20, NORMAL, 5)
    items.msg("u0", 10, turn=1)
    items.msg("a0", 10, turn=1)
    items.msg("u1", 30, turn=2)
    items.rag("rA", 300, 0.9, seq=10)
    items.rag("rC", 40, 0.8, seq=11)
    items.rag("rB", 250, 0.8, seq=12)
    items.rag("rD", 600, 0.7, seq=13)
    items.rag("rE", 60, 0.5, seq=14)
    return items


def test_example_10_rag_first_fit_with_spillover() -> None:
    result = plan(example_10())
    assert result.required_tokens == 230
    assert allocation(result) == (175, 644, 351)
    # Prompt order of RAG is its rank: rB before rC on the id tie-break, not by seq.
    rag = [(item.id, item.pass_) for item in result.included if item.reason is Reason.RELEVANT]
    assert rag == [("rA", 1), ("rB", 2), ("rC", 1), ("rE", 2)]
    assert decisions(result) == {
        "sys": "required/system",
        "u1": "required/latest_user_message",
        "P1": "pinned",
        "u0": "recent",
        "a0": "recent",
        "rA": "relevant",
        "rC": "relevant",
        "rB": "relevant",
        "rE": "relevant",
        "rD": "budget/does_not_fit",
    }
    # rD was last scanned in pass 2 right after rB, with 540 tokens left.
    assert [(item.id, item.tokens_left) for item in result.excluded] == [("rD", 540)]
    assert result.estimated_tokens_total == 920
    assert (result.sections.rag.used, result.sections.rag.spill_in) == (650, 310)


def test_example_10_without_spillover() -> None:
    result = plan(example_10(), spillover=False)
    assert excluded_codes(result) == dict.fromkeys(["rB", "rD", "rE"], "budget/does_not_fit")
    assert result.estimated_tokens_total == 610
