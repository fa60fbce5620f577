"""How a plan is shaped for the Plan tab: the budget in words, section bars, units folded,
planner configs as rows and the step chart. No database."""

from __future__ import annotations

from types import SimpleNamespace

import gcengine
from jaato_web.dashboard import presenters as shape


def conversation(turns: int, tokens: int = 100) -> list[gcengine.PlannerItem]:
    items = [
        gcengine.PlannerItem(id="sys", source="system", role="system", tokens=50, seq=0),
    ]
    for turn in range(turns):
        for offset, role in enumerate(("user", "assistant")):
            items.append(
                gcengine.PlannerItem(
                    id=f"{role[0]}{turn}",
                    source="conversation",
                    role=role,
                    tokens=tokens,
                    seq=1 + 2 * turn + offset,
                    turn=turn,
                    label=f"turn {turn} {role}",
                )
            )
    return items


def plan_of(items: list[gcengine.PlannerItem], window: int) -> gcengine.ContextPlan:
    config = gcengine.PlannerConfig(safety_buffer=0, default_max_completion_tokens=100)
    return gcengine.plan_context(items, gcengine.ModelCaps(context_length=window), config)


def test_the_budget_says_where_each_figure_comes_from() -> None:
    plan = gcengine.plan_context(
        conversation(2), gcengine.model_caps("gpt-4o"), gcengine.PlannerConfig()
    )
    origin = shape.caps_origin(plan.caps, typed_window=False, typed_output=False, file_window=False)

    rows = {row.symbol: row for row in shape.budget_rows(plan, origin, "Roomy v2")}

    assert rows["L"].source == (
        "the model's window: the model table's row for gpt-4o (platform.openai.com)"
    )
    assert rows["C"].tokens == 4096
    assert rows["C"].source == (
        "the default of Roomy v2 (the smallest of the default 4,096, the output limit 16,384 "
        "and a quarter of the window 32,000)"
    )
    assert rows["S"].source == "the safety buffer of Roomy v2"
    assert rows["B"].tokens == 128_000 - 4096 - 512


def test_an_unknown_model_falls_back_on_the_configs_default_window() -> None:
    plan = gcengine.plan_context(
        conversation(1), gcengine.model_caps("my-local-model"), gcengine.PlannerConfig()
    )
    origin = shape.caps_origin(plan.caps, typed_window=False, typed_output=False, file_window=False)

    window = shape.budget_rows(plan, origin)[0]

    assert window.tokens == 32_768
    assert window.source == (
        "the default of the engine's defaults (my-local-model has no known window)"
    )


def test_a_section_without_candidates_says_so() -> None:
    bars = {bar.name: bar for bar in shape.section_bars(plan_of(conversation(3), 2_000))}

    assert bars["system_pinned"].idle
    assert bars["rag"].idle
    assert not bars["conversation"].idle
    assert bars["conversation"].own_width + bars["conversation"].spill_width <= 100


def test_runs_of_turns_with_one_decision_fold_into_a_row() -> None:
    plan = plan_of(conversation(30), 1_200)  # room for four older turns beside the last

    left = shape.excluded_units(plan)
    sent = shape.included_units(plan)

    assert [(u.name, u.turns, u.codes) for u in left] == [
        ("turn 24", 1, ("budget/does_not_fit",)),
        ("turn 23 … turn 0", 24, ("budget/behind_cut",)),
    ]
    assert left[1].count == 48
    assert len(left[1].parts) == shape.TURNS_SHOWN
    assert left[1].hidden_parts == 24 - shape.TURNS_SHOWN
    assert [u.name for u in sent] == ["sys", "turn 25 … turn 28", "turn 29"]
    assert sent[-1].codes == ("required/latest_user_message", "required/current_turn")
    assert sum(u.count for u in sent) == len(plan.included)
    # With the session's own names (pages number turns from 1), rows and members use them.
    names = [f"turn {n + 1}" for n in range(30)]
    named = shape.excluded_units(plan, names)
    assert [u.name for u in named] == ["turn 25", "turn 24 … turn 1"]
    assert [m.label for m in named[0].members] == ["turn 25 user", "turn 25 assistant"]


def test_planner_configs_compare_setting_by_setting() -> None:
    a = gcengine.PlannerConfig().model_dump(mode="json")
    b = gcengine.PlannerConfig(
        shares={"system_pinned": 10, "conversation": 60, "rag": 30}, ttl_policy="ask"
    ).model_dump(mode="json")

    rows = shape.planner_config_table([a, b])

    assert [r.key for r in rows if r.differs] == [
        "shares.system_pinned",
        "shares.conversation",
        "ttl_policy",
    ]
    assert next(r for r in rows if r.key == "spillover").values == ["yes", "yes"]


def step(label: str, tokens: int, **events: object) -> SimpleNamespace:
    return SimpleNamespace(
        label=label,
        tokens=tokens,
        over_budget=events.get("over_budget", False),
        review_requests=events.get("review_requests", ()),
        expired=events.get("expired", ()),
    )


def test_the_step_chart_marks_reviews_and_expiries() -> None:
    steps = [
        step("turn 0", 100),
        step("turn 1", 900, review_requests=("turn 0 user",)),
        step("turn 2", 1_000, expired=("turn 0 user",)),
    ]

    chart = shape.step_chart(steps, budget=1_000)

    assert chart.points.startswith("0.0,")
    assert len(chart.points.split()) == 3
    assert [x for x, _ in chart.reviews] == [450.0]
    assert [x for x, _ in chart.expiries] == [900.0]
    assert (chart.peak_tokens, chart.peak_label) == (1_000, "turn 2")
    assert (chart.review_steps, chart.expiry_steps) == (1, 1)
