"""Planning stored sessions: the session's pins, the caps asked for, and the step-through that
commits a plan at each user turn."""

from __future__ import annotations

import pytest

import gcengine
from jaato_web.dashboard import background, previews, services
from jaato_web.dashboard.models import AgentSession, Project
from tests.web.uploads import session_file

pytestmark = pytest.mark.django_db


def stored(project: Project, turns: int = 30, **shape: object) -> AgentSession:
    receipt = background.session_upload(
        project=project, filename=f"plan-{turns}.json", data=session_file(turns, **shape)
    )
    assert receipt.session is not None
    return receipt.session


def test_a_session_is_planned_with_its_own_pins(project: Project) -> None:
    session = stored(project)
    services.session_pin(session=session, turn_index=2)

    planned = previews.plan_session(
        session, pins=previews.PinChoice(priority=gcengine.Priority.HIGH, ttl=4)
    )

    pinned = [i for i in planned.items if i.source == "pinned"]
    assert pinned
    assert all(i.ttl == 4 and i.priority == "high" for i in pinned)
    # turn_index 2 is the third turn, which every page calls "turn 3".
    assert {i.label for i in pinned} <= {"turn 3 user", "turn 3 assistant"}
    assert planned.plan.status_line.startswith("ctx tokens: ")


def test_a_pinned_tool_result_is_left_aside_with_a_note(project: Project) -> None:
    session = stored(project, tool_every=1)
    engine = services.engine_session_of(session)
    result = next(m for m in engine.history if m.function_responses)
    services.session_pin(session=session, message_id=result.message_id)

    planned = previews.plan_session(session)

    assert planned.pins.pins == ()
    assert planned.pins.notes == (
        f"Message {result.message_id} is a tool call or result, only ever sent with its "
        "partner: pin its turn to keep it. Its pin is left aside here.",
    )


def test_a_smaller_model_sends_fewer_turns_and_says_why(project: Project) -> None:
    session = stored(project, model="gpt-4o")

    roomy = previews.plan_session(session).plan
    tight = previews.plan_session(session, caps=previews.CapsChoice(model="gpt-3.5-turbo")).plan
    tiny = previews.plan_session(session, caps=previews.CapsChoice(context_length=3000)).plan

    assert roomy.model_context_len == 128_000
    assert not roomy.excluded
    assert tight.model_context_len == 16_385
    assert len(tiny.excluded) > 0
    assert {d.code for d in tiny.excluded} <= {"budget/does_not_fit", "budget/behind_cut"}
    assert tiny.estimated_tokens_total <= tiny.prompt_budget


def test_typed_caps_replace_the_tables(project: Project) -> None:
    session = stored(project, model="gpt-4o")

    plan = previews.plan_session(
        session,
        caps=previews.CapsChoice(max_completion_tokens=1000, max_prompt_tokens=20_000),
    ).plan

    assert plan.max_completion_tokens == 1000
    assert plan.budget_sources.max_completion_tokens == "model"
    assert plan.prompt_budget == 20_000 - plan.safety_buffer
    assert plan.budget_sources.prompt_budget == "max_prompt_tokens"


def _untrimmed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(previews.step_through._Turns, "oldest_needed", lambda self, turn, budget: 0)


@pytest.mark.parametrize("window", [2_500, 5_000])
@pytest.mark.parametrize("policy", ["automatic", "ask", "unlimited"])
def test_leaving_out_turns_behind_the_cut_changes_no_step(
    project: Project, monkeypatch: pytest.MonkeyPatch, window: int, policy: str
) -> None:
    """Pins in turns far behind the cut, tool calls every other turn, every TTL policy."""
    session = stored(project, turns=40, tool_every=2)
    for turn in (1, 5, 20, 33):
        services.session_pin(session=session, turn_index=turn)
    arguments = {
        "caps": previews.CapsChoice(context_length=window),
        "config": gcengine.PlannerConfig(ttl_policy=policy, default_pin_ttl=3),
        "pins": previews.PinChoice(ttl=3),
        "start": 0,
    }

    left_out: list[int] = []
    items_at = previews.step_through._Turns.items_at

    def spied(self: previews.step_through._Turns, *args: object) -> object:
        found = items_at(self, *args)  # type: ignore[arg-type]
        left_out.append(found[1])
        return found

    monkeypatch.setattr(previews.step_through._Turns, "items_at", spied)
    trimmed = previews.plan_steps(session, **arguments)  # type: ignore[arg-type]
    assert max(left_out) > 0  # the later steps did leave turns out
    monkeypatch.undo()
    _untrimmed(monkeypatch)
    whole = previews.plan_steps(session, **arguments)  # type: ignore[arg-type]

    assert [vars(s) for s in trimmed.steps] == [vars(s) for s in whole.steps]
    assert any(s.excluded for s in whole.steps)


def test_ttls_count_down_and_expired_pins_leave(project: Project) -> None:
    session = stored(project, turns=12)
    services.session_pin(session=session, turn_index=0)

    page = previews.plan_steps(session, pins=previews.PinChoice(ttl=2), start=0)

    first, second, third = page.steps[:3]
    assert [c.text for c in first.ttl_changes] == [
        "Limited(2) → Limited(1)",
        "Limited(2) → Limited(1)",
    ]
    assert {c.after for c in second.ttl_changes} == {"NoneRemaining"}
    assert third.pins_sent == 0
    # Pages number turns from 1, as JAATO does: stable index 0 is turn 1.
    assert set(third.expired) == {"turn 1 user", "turn 1 assistant"}
    assert page.steps[3].pins_left_out == 2
    assert page.steps[3].expired == ()  # they left once


def test_ask_prompts_appear_and_a_repin_renews_the_lease(project: Project) -> None:
    session = stored(project, turns=12)
    services.session_pin(session=session, turn_index=0)
    ask = gcengine.PlannerConfig(ttl_policy="ask", default_pin_ttl=5)

    left = previews.plan_steps(session, config=ask, pins=previews.PinChoice(ttl=1), start=0)
    renewed = previews.plan_steps(
        session, config=ask, pins=previews.PinChoice(ttl=1), start=0, repin=True
    )

    asked = next(s for s in left.steps if s.review_requests)
    assert {c.text for c in asked.ttl_changes} == {"NoneRemaining, review asked"}
    assert set(asked.review_requests) == {"turn 1 user", "turn 1 assistant"}
    later = left.steps[left.steps.index(asked) + 1]
    assert set(later.expired) == {"turn 1 user", "turn 1 assistant"}
    assert renewed.steps[left.steps.index(asked)].repinned
    assert not any(s.expired for s in renewed.steps)


def test_steps_come_a_page_at_a_time(project: Project) -> None:
    session = stored(project, turns=30)

    last = previews.plan_steps(session, per_page=10)
    first = previews.plan_steps(session, per_page=10, start=0)

    assert last.user_turns == 30
    assert (last.start, last.next_start, last.previous_start) == (20, None, 10)
    assert (first.start, first.next_start, first.previous_start) == (0, 10, None)
    assert [s.label for s in first.steps][:2] == ["turn 1", "turn 2"]
    assert last.steps[-1].label == "turn 30"


def test_another_pin_priority_or_ttl_gives_the_items_the_engine_would(project: Project) -> None:
    session = stored(project, turns=10, tool_every=2)
    for turn in (1, 4):
        services.session_pin(session=session, turn_index=turn)
    engine = services.engine_session_of(session)
    choice = previews.PinChoice(priority=gcengine.Priority.LOW, ttl=gcengine.TTLState.UNLIMITED)

    previews.session_items(session, engine, previews.session_pins(session, engine, choice))
    plain = previews.session_items(
        session, engine, previews.session_pins(session, engine, previews.PinChoice())
    )
    stamped = previews.session_items(
        session, engine, previews.session_pins(session, engine, choice)
    )

    pins = [gcengine.Pin(turn=t, priority="low", ttl="unlimited") for t in (1, 4)]
    assert stamped == gcengine.plan_items(engine, pins=pins)
    assert plain == gcengine.plan_items(engine, pins=[gcengine.Pin(turn=t) for t in (1, 4)])
