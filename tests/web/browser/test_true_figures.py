"""The session page's figures in the browser: a usage bar that stays true past 100 %, earlier
reasoning shown apart from what the model is sent, a window tried instead of the session's
own, and pins that touch only their session."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import AgentSession, GCRun
from tests.web.uploads import BUDGET_POLICY, session_file

pytestmark = pytest.mark.browser


def stored(name: str, data: bytes) -> AgentSession:
    session = background.session_upload(
        project=services.project_default(), filename=name, data=data
    ).session
    assert session is not None
    return session


def widths(page: Page) -> dict[str, float]:
    """Each part of the usage bar's rendered width, and the window mark's position, in px."""
    return page.evaluate(
        """() => {
            const bar = document.querySelector('.usage-bar').getBoundingClientRect();
            const out = {bar: bar.width};
            for (const rect of document.querySelectorAll('.usage-bar__part')) {
                const name = [...rect.classList].find(c => c.startsWith('usage-bar__part--'));
                out[name.slice('usage-bar__part--'.length)] = rect.getBoundingClientRect().width;
            }
            const mark = document.querySelector('.usage-bar__limit').getBoundingClientRect();
            out.limit = mark.left - bar.left;
            return out;
        }"""
    )


def test_a_session_far_over_its_window_keeps_its_proportions(page: Page) -> None:
    # gpt-4's 8,192 tokens and 200 turns: about six times the window.
    session = stored("over.json", session_file(200, model="gpt-4"))
    assert session.total_tokens > 4 * session.context_limit

    page.goto(f"/sessions/{session.pk}/")

    drawn = widths(page)
    eligible_share = session.eligible_tokens / session.total_tokens
    assert drawn["eligible"] / drawn["bar"] == pytest.approx(eligible_share, abs=0.01)
    window_share = session.context_limit / session.total_tokens
    assert drawn["limit"] / drawn["bar"] == pytest.approx(window_share, abs=0.01)
    over = session.total_tokens - session.context_limit
    expect(page.locator("#usage-caption")).to_contain_text(f"over the window by {over:,} tokens")
    expect(page.locator(".usage-bar__overflow")).to_have_count(1)


def test_reasoning_is_shown_apart_and_never_as_a_share(page: Page) -> None:
    document = json.loads(session_file(6))
    for message in document["history"]:
        if message["role"] == "model":
            thought = "weighing the options " * 40
            message["parts"].insert(
                0,
                {
                    "type": "unknown",
                    "repr": f"Part(thought={thought!r})",
                    "kind": "thought",
                    "text": thought,
                },
            )
    session = stored("thinking.json", json.dumps(document).encode())

    page.goto(f"/sessions/{session.pk}/")

    tree = page.get_by_role("list", name="Budget of the session")
    thinking = tree.locator(".tree-node--not-sent")
    expect(thinking).to_have_count(1)
    expect(thinking).to_contain_text("thinking")
    expect(thinking).to_contain_text("not sent to the model")
    expect(thinking.locator(".tree-share")).to_have_count(0)
    shares = [
        float(text.rstrip(" %").replace(",", ""))
        for text in tree.locator(":scope > li .tree-share").all_inner_texts()
    ]
    assert shares
    assert max(shares) <= 100.0
    assert sum(shares) == pytest.approx(100.0, abs=0.5)


def test_a_smaller_window_is_used_by_every_figure_and_the_run_it_starts(page: Page) -> None:
    session = stored("roomy.json", session_file(12, model="claude-sonnet-4"))
    assert session.utilization_percent < 10  # 200,000 tokens: no policy has anything to do

    page.goto(f"/sessions/{session.pk}/")
    page.get_by_label("Try another window").fill("2000")
    page.get_by_role("button", name="Try it").click()

    expect(page).to_have_url(f"/sessions/{session.pk}/?window=2000")
    expect(page.locator(".figures")).to_contain_text("2,000 (tried here; the session's own is")
    expect(page.locator("#usage-caption")).to_contain_text("in a window of 2,000")
    expect(page.locator("#run-form")).to_contain_text("against the window tried above")
    page.locator("#run-form").get_by_label("Or paste a gc.json").fill(json.dumps(BUDGET_POLICY))
    page.locator("#run-form").get_by_role("button", name="Run GC").click()

    page.wait_for_url("**/runs/*/")
    run = GCRun.objects.get(session=session)
    assert run.context_limit == 2000
    assert (run.items_collected or 0) > 0


def test_a_pin_in_one_session_leaves_another_alone(page: Page) -> None:
    one = stored("one.json", session_file(12, seed=1))
    two = stored("two.json", session_file(12, seed=2))

    page.goto(f"/sessions/{one.pk}/")
    turn = page.locator("#history li.turn").nth(3)
    turn.get_by_role("button", name="Pin in this session").click()
    expect(turn.get_by_role("button", name="Pinned in this session")).to_be_visible()
    page.goto(f"/sessions/{two.pk}/")

    expect(page.get_by_role("button", name="Pinned in this session")).to_have_count(0)
    expect(page.locator(".pins-note")).to_contain_text("Nothing is pinned in this session.")
    assert services.session_pins(session=two) == (set(), set())
    assert services.session_pins(session=one)[0] == {3}
