"""The agent tools over the dashboard's store, through the SDK's in-memory client: what each
tool answers, what it refuses and why, and what it leaves in the audit log.

The caller is set as the HTTP endpoint sets it (the SDK's record of the bearer token the
request was authenticated with), so these run the same lookups as /mcp. Tools run on worker
threads, as they do when served, so the data they read must be committed: these tests use
transactions, not the rollback-per-test of the other web tests.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.types import CallToolResult

from jaato_web.dashboard.models import (
    AgentSession,
    AuditAction,
    AuditEvent,
    Policy,
    SessionPin,
)
from jaato_web.mcp.http import mcp_server
from jaato_web.teams.models import ApiToken
from tests.event_loops import run_async
from tests.mcp_results import refusal_of

from .conftest import Caller

pytestmark = pytest.mark.django_db(transaction=True)

OPENAI_MESSAGES = [
    {"role": "user", "content": "Why does the billing test fail?"},
    {"role": "assistant", "content": "The invoice total is rounded twice."},
]


def calls(secret: str | None, *requests: tuple[str, dict[str, Any]]) -> list[CallToolResult]:
    """``requests`` answered in order, as the holder of the token ``secret`` (None: nobody)."""

    async def run() -> list[CallToolResult]:
        if secret is not None:
            token = AccessToken(token=secret, client_id="test", scopes=[])
            auth_context_var.set(AuthenticatedUser(token))
        async with Client(mcp_server(), raise_exceptions=True) as client:
            return [await client.call_tool(name, arguments) for name, arguments in requests]

    return run_async(run)


def call(caller: Caller | None, name: str, arguments: dict[str, Any]) -> CallToolResult:
    return calls(caller.secret if caller else None, (name, arguments))[0]


def data_of(result: CallToolResult) -> dict[str, Any]:
    assert result.is_error is False, result.content
    assert result.structured_content is not None
    return result.structured_content


def audit(action: AuditAction) -> list[tuple[str, str]]:
    return list(
        AuditEvent.objects.filter(action=action).order_by("pk").values_list("actor_name", "target")
    )


# --- context_analyze_usage -------------------------------------------------------------------


def test_usage_of_a_stored_session_under_its_projects_policy(
    viewer: Caller, stored_session: AgentSession, default_policy: Policy
) -> None:
    result = call(viewer, "context_analyze_usage", {"session_id": stored_session.pk})
    report = data_of(result)
    assert report["total_tokens"] == stored_session.total_tokens
    assert report["context_limit"] == stored_session.context_limit
    assert report["policy"]["threshold_percent"] == 1  # the tight budget, not JAATO's 80
    assert result.content[0].text.endswith("Policy: Tight budget v1.")  # type: ignore[union-attr]


def test_usage_under_another_policy_named_by_id(
    viewer: Caller, stored_session: AgentSession, budget_policy: Policy
) -> None:
    report = data_of(
        call(
            viewer,
            "context_analyze_usage",
            {"session_id": str(stored_session.pk), "policy_id": budget_policy.pk},
        )
    )
    assert report["policy"]["target_percent"] == 0.5


def test_usage_without_a_default_policy_reads_jaatos_defaults(
    viewer: Caller, stored_session: AgentSession
) -> None:
    result = call(viewer, "context_analyze_usage", {"session_id": stored_session.pk})
    assert data_of(result)["policy"]["threshold_percent"] == 80
    assert "JAATO's defaults" in result.content[0].text  # type: ignore[union-attr]


def test_usage_of_inline_messages_stores_nothing(viewer: Caller) -> None:
    sessions, events = AgentSession.objects.count(), AuditEvent.objects.count()
    report = data_of(
        call(viewer, "context_analyze_usage", {"messages": OPENAI_MESSAGES, "context_limit": 8000})
    )
    assert (report["turns"], report["context_limit"]) == (1, 8000)
    assert (AgentSession.objects.count(), AuditEvent.objects.count()) == (sessions, events)


@pytest.mark.parametrize(
    ("arguments", "status", "words"),
    [
        ({"session_id": "agent/session.json"}, 400, "is not a session of the dashboard"),
        ({"session_id": 999_999}, 404, "not found in the projects this token reaches"),
        ({"messages": [{"role": "user", "content": 5}]}, 400, "the session cannot be read"),
    ],
)
def test_usage_refusals(viewer: Caller, arguments: dict[str, Any], status: int, words: str) -> None:
    error = refusal_of(call(viewer, "context_analyze_usage", arguments))
    assert error["status"] == status
    assert words in error["message"]


def test_another_projects_session_is_not_found(
    viewer: Caller, foreign_session: AgentSession
) -> None:
    error = refusal_of(call(viewer, "context_analyze_usage", {"session_id": foreign_session.pk}))
    assert (error["status"], error["code"]) == (404, "not_found")


def test_no_token_or_a_revoked_one_is_unauthenticated(
    viewer: Caller, stored_session: AgentSession
) -> None:
    assert (
        refusal_of(call(None, "context_analyze_usage", {"session_id": stored_session.pk}))["status"]
        == 401
    )
    ApiToken.objects.update(revoked_at="2026-01-01T00:00:00Z")
    error = refusal_of(call(viewer, "context_analyze_usage", {"session_id": stored_session.pk}))
    assert (error["status"], error["code"]) == (401, "unauthenticated")


# --- context_gc_pin / context_gc_unpin -------------------------------------------------------


def test_pin_and_unpin_are_audited_with_the_tokens_owner(
    editor: Caller, stored_session: AgentSession
) -> None:
    message_id = stored_session.turns.get(turn_index=2).messages[0]["id"]
    pinned, unpinned = calls(
        editor.secret,
        (
            "context_gc_pin",
            {"session_id": stored_session.pk, "turn_indices": [0], "message_ids": [message_id]},
        ),
        ("context_gc_unpin", {"session_id": stored_session.pk, "turn_indices": [0]}),
    )
    assert data_of(pinned)["changed"] == ["pinned turn index 0", f"pinned message {message_id}"]
    state = data_of(unpinned)
    assert (state["pinned_turn_indices"], state["pinned_message_ids"]) == ([], [message_id])
    assert list(SessionPin.objects.values_list("message_id", "author")) == [(message_id, "edda")]
    label = stored_session.label
    assert audit(AuditAction.PIN) == [
        ("edda", f"turn 1 of {label}"),
        ("edda", f"message {message_id} of {label}"),
    ]
    assert audit(AuditAction.UNPIN) == [("edda", f"turn 1 of {label}")]


def test_a_viewer_may_not_pin(viewer: Caller, stored_session: AgentSession) -> None:
    error = refusal_of(
        call(viewer, "context_gc_pin", {"session_id": stored_session.pk, "turn_indices": [0]})
    )
    assert (error["status"], error["code"]) == (403, "forbidden")
    assert error["message"] == (
        "As a viewer of this project you may not pin and unpin turns and messages, "
        "in a session or in a policy."
    )
    assert not SessionPin.objects.exists()
    assert audit(AuditAction.PIN) == []


def test_one_missing_turn_pins_nothing(editor: Caller, stored_session: AgentSession) -> None:
    error = refusal_of(
        call(editor, "context_gc_pin", {"session_id": stored_session.pk, "turn_indices": [0, 99]})
    )
    assert (error["status"], error["code"]) == (400, "bad_input")  # as the local server's
    assert error["message"] == (
        f"turn_index: {stored_session.label} has no turn 99: its turn indices run from 0 to 7"
    )
    assert not SessionPin.objects.exists()
    assert audit(AuditAction.PIN) == []


def test_inline_messages_cannot_be_pinned(editor: Caller) -> None:
    error = refusal_of(
        call(editor, "context_gc_pin", {"messages": OPENAI_MESSAGES, "turn_indices": [0]})
    )
    assert error["status"] == 400
    assert "inline messages are not stored" in error["message"]


def test_pinning_another_projects_session_is_not_found(
    editor: Caller, foreign_session: AgentSession
) -> None:
    error = refusal_of(
        call(editor, "context_gc_pin", {"session_id": foreign_session.pk, "turn_indices": [0]})
    )
    assert error["status"] == 404
    assert not SessionPin.objects.exists()


# --- context_gc_configure --------------------------------------------------------------------


def test_configure_saves_a_version_that_waits_for_review(
    editor: Caller, stored_session: AgentSession, default_policy: Policy
) -> None:
    result = call(
        editor,
        "context_gc_configure",
        {"session_id": stored_session.pk, "threshold_percent": 2, "message": "fewer collections"},
    )
    saved = data_of(result)
    version = default_policy.versions.get(number=2)
    assert (version.author, version.message, version.config["threshold_percent"]) == (
        "edda",
        "fewer collections",
        2,
    )
    assert saved["changes"] == [{"key": "threshold_percent", "before": 1, "after": 2}]
    assert (saved["version"], saved["review_status"], saved["author"]) == (2, "pending", "edda")
    assert saved["review_url"] == f"/policies/{default_policy.pk}/versions/2/review/"
    assert audit(AuditAction.POLICY_SAVE)[-1] == ("edda", "Tight budget version 2")
    assert result.content[0].text == (  # type: ignore[union-attr]
        "Tight budget version 2: threshold_percent 1 -> 2; review pending."
    )


def test_configure_a_policy_by_id_to_continuous_mode(editor: Caller, budget_policy: Policy) -> None:
    saved = data_of(
        call(editor, "context_gc_configure", {"policy_id": budget_policy.pk, "pressure_percent": 0})
    )
    assert saved["config"]["pressure_percent"] == 0
    assert budget_policy.versions.count() == 2


def test_the_same_settings_save_no_version(editor: Caller, budget_policy: Policy) -> None:
    saved = data_of(
        call(editor, "context_gc_configure", {"policy_id": budget_policy.pk, "target_percent": 0.5})
    )
    assert (saved["changes"], saved["version"]) == ([], 1)
    assert budget_policy.versions.count() == 1


@pytest.mark.parametrize(
    ("arguments", "status", "code"),
    [
        ({"target_percent": 50}, 400, "bad_input"),  # no policy named
        ({"policy_id": "tight", "target_percent": 5}, 400, "bad_policy"),  # above its 1 %
        ({"messages": OPENAI_MESSAGES, "target_percent": 0.2}, 400, "bad_input"),
        ({"policy_id": 999_999, "target_percent": 0.2}, 404, "not_found"),
    ],
)
def test_configure_refusals_save_nothing(
    editor: Caller, budget_policy: Policy, arguments: dict[str, Any], status: int, code: str
) -> None:
    if arguments.get("policy_id") == "tight":
        arguments = {**arguments, "policy_id": budget_policy.pk}
    error = refusal_of(call(editor, "context_gc_configure", arguments))
    assert (error["status"], error["code"]) == (status, code)
    assert budget_policy.versions.count() == 1


def test_a_viewer_may_not_configure(
    viewer: Caller, stored_session: AgentSession, default_policy: Policy
) -> None:
    error = refusal_of(
        call(viewer, "context_gc_configure", {"session_id": stored_session.pk, "target_percent": 1})
    )
    assert (error["status"], error["code"]) == (403, "forbidden")
    assert default_policy.versions.count() == 1


def test_a_session_without_a_policy_asks_for_one(
    editor: Caller, stored_session: AgentSession
) -> None:
    error = refusal_of(
        call(editor, "context_gc_configure", {"session_id": stored_session.pk, "target_percent": 1})
    )
    assert (error["status"], error["code"]) == (409, "no_policy")
    assert "give policy_id" in error["message"]
