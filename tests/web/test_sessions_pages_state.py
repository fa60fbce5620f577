"""The session page tells what a reader cannot see in the conversation alone: each turn's mix
of policies, the state JAATO saved besides the history, and an honest account of which
figures were compared with what."""

from __future__ import annotations

import html as html_lib
import json
import re
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

import gcengine
from gcengine.synthetic import SessionShape, generate_session_file
from jaato_web.dashboard import storage
from jaato_web.dashboard.models import AgentSession, Project
from tests.web.uploads import jaato_file_with_state

pytestmark = pytest.mark.django_db


def uploaded_page(client: Client, name: str, document: Any) -> tuple[AgentSession, str]:
    """Upload through the upload page, as a user does, and read the session's page."""
    answer = client.post(
        reverse("session_upload"),
        {"files": SimpleUploadedFile(name, json.dumps(document).encode(), "application/json")},
    )
    assert answer.status_code == 200, answer.content
    session = AgentSession.objects.get(label=name)
    return session, client.get(reverse("session_detail", args=[session.pk])).content.decode()


def section(html: str, heading_id: str) -> str:
    """The text of one ``<section>`` of the page, from its heading to the section's end."""
    start = html.index(f'id="{heading_id}"')
    return html[start : html.index("</section>", start)]


def text_of(fragment: str) -> str:
    """What a reader sees of a piece of the page: tags dropped, spaces collapsed."""
    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def turn_head(html: str, number: int) -> str:
    """The head line of turn ``number`` in the history."""
    start = html.index(">", html.index(f'id="turn-{number}"')) + 1
    return text_of(html[start : html.index("</div>", start)])


# --- A turn's mix of policies ----------------------------------------------------------------


def test_each_turns_head_shows_its_mix_of_policies(client: Client, project: Project) -> None:
    """Turn 1 holds the locked request beside an ephemeral answer; turn 2 an ephemeral tool
    exchange beside its preservable closing answer; turn 3 only ephemeral messages. The head of
    each says so, with the engine's own figures."""
    document = generate_session_file(
        SessionShape(turns=4, user_chars=200, model_chars=300, tool_result_chars=600, seed=5)
    )
    engine = gcengine.load_session(document)
    conversation = engine.budget.entries[gcengine.InstructionSource.CONVERSATION]
    expected: list[dict[str, int]] = []
    for turn in conversation.children.values():
        mix: dict[str, int] = {}
        for _, leaf in turn.walk():
            if not leaf.children:
                policy = leaf.effective_gc_policy().value
                mix[policy] = mix.get(policy, 0) + leaf.tokens
        expected.append(mix)

    _, html = uploaded_page(client, "mixed-policies.json", document)

    first, second, third = (turn_head(html, n) for n in (1, 2, 3))
    assert expected[0].keys() == {"locked", "ephemeral"}
    assert first == (
        f"Turn 1 chat locked {sum(expected[0].values()):,} tokens "
        f"(locked {expected[0]['locked']:,} · ephemeral {expected[0]['ephemeral']:,}) "
        "Pin in this session"
    )
    assert expected[1].keys() == {"preservable", "ephemeral"}
    assert second == (
        f"Turn 2 chat preservable {sum(expected[1].values()):,} tokens "
        f"(preservable {expected[1]['preservable']:,} · ephemeral {expected[1]['ephemeral']:,}) "
        "Pin in this session"
    )
    assert expected[2].keys() == {"ephemeral"}
    # A turn of one policy shows no mix.
    assert third == f"Turn 3 chat ephemeral {expected[2]['ephemeral']:,} tokens Pin in this session"


# --- JAATO's saved state ---------------------------------------------------------------------


def test_the_state_jaato_saved_is_on_the_session_page(client: Client, project: Project) -> None:
    document = jaato_file_with_state()
    failed_tool = next(
        part["name"]
        for message in document["history"]
        for part in message["parts"]
        if part.get("is_error")
    )
    failed_turn = next(
        t.number
        for t in gcengine.load_session(document).turns()
        if any(r.is_error for m in t.messages for r in m.function_responses)
    )

    _, html = uploaded_page(client, "saved-mid-turn.json", document)

    text = text_of(section(html, "agent-state"))
    assert (
        "Interrupted turn, started 2026-03-01 10:16 UTC: “Run the slow tests and list the "
        "TODOs”. When the session was saved, 2 tool calls had no answer: "
        'run_tests (call_9)arguments{ "k": "slow" }'
        'grep_content (call_10)arguments{ "pattern": "TODO" }'
    ) in text
    assert (
        f"Failed tool results (1) {failed_tool} in turn {failed_turn}"
        'what it returned{ "error": "pytest: 3 failed, 12 passed" }'
    ) in text
    assert "Sub-agents (1) sub1, explorer, idle, 4 turns" in text
    assert (
        'Plugin states todosaved state{ "items": 3 }memorysaved state{ "notes": [ "uses uv" ] }'
        in text
    )
    assert "Nothing: no interrupted turn" not in text
    # Written as every time on the page is, so a browser can show it in the reader's zone.
    assert '<time datetime="2026-03-01T10:16:00+00:00">2026-03-01 10:16 UTC</time>' in html


def test_a_session_without_saved_state_says_there_is_none(client: Client, project: Project) -> None:
    document = generate_session_file(SessionShape(turns=2, tool_every=0, seed=7))

    _, html = uploaded_page(client, "plain.json", document)

    state = section(html, "agent-state")
    assert "Nothing: no interrupted turn, compaction, sub-agent, plugin state" in state
    assert "Interrupted turn" not in state
    assert "Failed tool results" not in state


# --- What the drift section compared, for provider exports -----------------------------------

REQUEST = "Fix the failing test in tests/test_api.py."
RESULT = "1 failed: test_login (KeyError: 'token')"
ANSWER = "The login handler read the wrong key; it now reads 'access_token'."

ANTHROPIC_EXPORT = {
    "model": "claude-sonnet-4-5",
    "system": "You are a careful coding agent.",
    "messages": [
        {"role": "user", "content": REQUEST},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me run it."},
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "run_tests",
                    "input": {"path": "tests/test_api.py"},
                },
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": RESULT}],
        },
        {"role": "assistant", "content": ANSWER},
    ],
    # The prompt is all three input figures: 120 + 300 + 40.
    "usage": {
        "input_tokens": 120,
        "cache_read_input_tokens": 300,
        "cache_creation_input_tokens": 40,
        "output_tokens": 60,
    },
}
OPENAI_EXPORT = {
    "model": "gpt-4o",
    "messages": [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": REQUEST},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "run_tests",
                        "arguments": json.dumps({"path": "tests/test_api.py"}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": RESULT},
        {"role": "assistant", "content": ANSWER},
    ],
    "usage": {"prompt_tokens": 480, "completion_tokens": 40, "total_tokens": 520},
}


@pytest.mark.parametrize(
    ("document", "prompt"),
    [(ANTHROPIC_EXPORT, 460), (OPENAI_EXPORT, 480)],
    ids=["anthropic", "openai"],
)
def test_a_provider_export_says_what_was_compared_and_what_was_not(
    client: Client, project: Project, document: dict[str, Any], prompt: int
) -> None:
    """Such an export records no figure per message, only the last call's prompt size: the
    page says nothing was compared message by message, names the counter, and sets the
    provider's prompt beside the session's one total."""
    session, html = uploaded_page(client, "export.json", document)

    drift = text_of(section(html, "drift"))
    assert (
        "The file records no figure for a single message, so there is nothing to compare "
        f"message by message: every message was counted here with {session.token_counter}."
    ) in drift
    assert (
        f"The provider reported a last prompt of {prompt:,} tokens; the context counted here "
        f"is {session.total_tokens:,} ({session.total_tokens - prompt:,} from the provider's "
        "figure)."
    ) in drift
    assert "matches the count" not in drift
    assert "Recorded in the file" not in drift
    assert not re.search(r"\b0 message", drift)


def test_an_export_without_usage_claims_no_provider_figure(
    client: Client, project: Project
) -> None:
    document = {k: v for k, v in ANTHROPIC_EXPORT.items() if k != "usage"}

    _, html = uploaded_page(client, "no-usage.json", document)

    drift = section(html, "drift")
    assert "The file records no figure for a single message" in drift
    assert "The provider reported" not in drift
    assert "matches the count" not in drift


def test_failed_tool_results_beyond_those_shown_are_counted_not_written_out() -> None:
    """A long session can fail thousands of tool calls: the page lists the first ones, in
    history order, and says how many there are in all."""
    shown = storage.STATE_ITEMS_SHOWN
    failures = [
        gcengine.Message(
            role=gcengine.Role.USER,
            message_id=f"failed-{number}",
            turn_index=number,
            parts=[
                gcengine.Part.from_function_response(
                    gcengine.FunctionResponse(
                        call_id=f"call-{number}",
                        name="run_tests",
                        result={"error": f"failure {number}"},
                        is_error=True,
                    )
                )
            ],
        )
        for number in range(shown + 5)
    ]
    session = gcengine.load_session(generate_session_file(SessionShape(turns=2, seed=1)))

    record = storage.agent_state_record(session.model_copy(update={"history": failures}))

    assert record["failed_tool_result_count"] == shown + 5
    assert [item["message_id"] for item in record["failed_tool_results"]] == [
        f"failed-{number}" for number in range(shown)
    ]
    assert record["failed_tool_results"][0] == {
        "turn": 1,
        "message_id": "failed-0",
        "tool": "run_tests",
        "text": '{\n "error": "failure 0"\n}',
    }
