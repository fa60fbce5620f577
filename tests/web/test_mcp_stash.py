"""The pruning and stash tools over the dashboard's store, through the SDK's in-memory client:
analyze, prune (a stored run and the session it left), search the stash, retrieve from it;
what each refuses, and the audit rows the changes leave.

As in ``test_mcp_tools.py``, tools run on worker threads, so the data is committed.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import (
    AgentSession,
    AuditAction,
    AuditEvent,
    GCRun,
    Policy,
    SessionPin,
)
from jaato_web.mcp.http import mcp_server
from tests.event_loops import run_async
from tests.mcp_results import CheckedCalls, ToolSamples, call_every_tool, refusal_of

from .conftest import Caller
from .test_mcp_tools import OPENAI_MESSAGES, audit, call, calls, data_of

pytestmark = pytest.mark.django_db(transaction=True)


def analysis(caller: Caller, session: AgentSession, **arguments: Any) -> dict[str, Any]:
    return data_of(call(caller, "context_gc_analyze", {"session_id": session.pk, **arguments}))


def test_analyze_proposes_a_plan_under_the_projects_policy_and_changes_nothing(
    viewer: Caller, stored_session: AgentSession, default_policy: Policy
) -> None:
    events = AuditEvent.objects.count()
    result = call(viewer, "context_gc_analyze", {"session_id": stored_session.pk, "limit": 3})
    found = data_of(result)
    assert found["policy"] == "Tight budget v1"
    assert found["strategy"] == "gc_budget"  # read as a reachability policy all the same
    assert found["tokens_before"] == stored_session.total_tokens
    assert found["tokens_after"] < found["tokens_before"]
    assert found["plan"]["stash"]["segments"] > 0
    assert found["candidates_total"] + sum(found["kept"].values()) == found["segments"]
    assert len(found["candidates"]) == 3
    first = found["candidates"][0]
    assert first["proposed"] == "stash"
    assert first["reason"].startswith(("unreachable: ", "reachable"))
    assert 0 <= first["score"] <= 1
    assert result.content[0].text.startswith(f"{found['percent_before']:g}% used")  # type: ignore[union-attr]
    assert (GCRun.objects.count(), AuditEvent.objects.count()) == (0, events)


def test_analyze_says_why_a_named_segment_is_kept(
    viewer: Caller, stored_session: AgentSession, default_policy: Policy
) -> None:
    found = analysis(viewer, stored_session, segment_ids=["turn_0"])
    (asked,) = found["asked"]
    assert asked["proposed"] == "keep"
    assert asked["reason"].startswith("kept: ")
    error = refusal_of(
        call(viewer, "context_gc_analyze", {"session_id": stored_session.pk, "segment_ids": ["x"]})
    )
    assert (error["status"], error["message"]) == (404, "the session has no segment 'x'")


def test_prune_stores_a_run_and_the_session_it_left_audited_with_the_tokens_owner(
    editor: Caller, stored_session: AgentSession, default_policy: Policy
) -> None:
    result = call(editor, "context_gc_prune", {"session_id": stored_session.pk})
    pruned = data_of(result)
    run = GCRun.objects.get(pk=pruned["run_id"])
    assert (run.status, run.plugin, run.trigger) == ("done", "gc_reachability", "agent")
    assert run.policy_version == default_policy.versions.get()
    assert run.config["type"] == "reachability"
    derived = AgentSession.objects.get(pk=pruned["new_session_id"])
    assert derived.derived_from_run == run
    assert derived.total_tokens == pruned["tokens_after"] == run.tokens_after
    assert pruned["tokens_before"] == stored_session.total_tokens
    assert pruned["stashed"] == len(pruned["ledger"]) == run.items_collected
    assert all(item["action"] == "stashed" and item["why"] for item in pruned["ledger"])
    assert pruned["run_url"] == f"/runs/{run.pk}/"
    assert audit(AuditAction.RUN) == [("edda", f"run {run.pk} of {stored_session.label}")]
    assert result.content[0].text.startswith(f"Took {run.items_collected} segments")  # type: ignore[union-attr]


def test_prune_named_segments_and_refuse_pinned_ones(
    editor: Caller, stored_session: AgentSession, default_policy: Policy
) -> None:
    candidate = analysis(editor, stored_session)["candidates"][0]["segment_id"]
    pruned = data_of(
        call(
            editor,
            "context_gc_prune",
            {"session_id": stored_session.pk, "segment_ids": [candidate]},
        )
    )
    assert [item["segment_id"] for item in pruned["ledger"]] == [candidate]
    turn = candidate.split("/")[0].removeprefix("turn_")
    services.session_pin(session=stored_session, turn_index=int(turn), pinned=True)
    error = refusal_of(
        call(
            editor,
            "context_gc_prune",
            {"session_id": stored_session.pk, "segment_ids": [candidate]},
        )
    )
    assert (error["status"], error["code"]) == (409, "protected")
    assert error["message"] == (
        f"nothing pruned: {candidate}: this "
        + ("tool output" if "/" in candidate else "turn")
        + " is in a pinned turn, which no collection touches"
    )
    assert GCRun.objects.count() == 1  # the refused prune stored no run
    assert SessionPin.objects.count() == 1


def test_pins_take_the_segment_ids_analyze_lists(
    editor: Caller, stored_session: AgentSession, default_policy: Policy
) -> None:
    session = stored_session.pk
    exchange = next(
        c for c in analysis(editor, stored_session)["candidates"] if "/" in c["segment_id"]
    )
    pinned, pruned, missing = calls(
        editor.secret,
        ("context_gc_pin", {"session_id": session, "segment_ids": [exchange["segment_id"]]}),
        ("context_gc_prune", {"session_id": session, "segment_ids": [exchange["segment_id"]]}),
        ("context_gc_pin", {"session_id": session, "segment_ids": ["turn_99/x"]}),
    )
    assert data_of(pinned)["pinned_turn_indices"] == [exchange["turn_index"]]
    assert list(SessionPin.objects.values_list("turn_index", flat=True)) == [exchange["turn_index"]]
    assert refusal_of(pruned)["code"] == "protected"  # the pin keeps it
    assert refusal_of(missing) == {
        "status": 404,
        "code": "not_found",
        "message": "the session has no segment 'turn_99/x'",
    }


def test_sessions_a_prune_and_a_restore_make_keep_the_pins(
    editor: Caller, stored_session: AgentSession, default_policy: Policy
) -> None:
    message_id = stored_session.turns.get(turn_index=2).messages[0]["id"]
    services.session_pin(session=stored_session, turn_index=0, pinned=True, actor=editor.user)
    services.session_pin(session=stored_session, message_id=message_id, pinned=True)
    pruned = data_of(call(editor, "context_gc_prune", {"session_id": stored_session.pk}))
    first = pruned["ledger"][0]["segment_id"]
    restored = data_of(
        call(editor, "context_stash_retrieve", {"run_id": pruned["run_id"], "segment_ids": [first]})
    )
    pins = {(0, "", "edda"), (None, message_id, "system")}
    for derived in (pruned["new_session_id"], restored["new_session_id"]):
        session = AgentSession.objects.get(pk=derived)
        assert set(session.pins.values_list("turn_index", "message_id", "author")) == pins
        usage = data_of(call(editor, "context_gc_analyze", {"session_id": derived}))
        assert usage["kept"]["pinned"] > 0


def test_delete_needs_confirm(editor: Caller, stored_session: AgentSession) -> None:
    error = refusal_of(
        call(editor, "context_gc_prune", {"session_id": stored_session.pk, "action": "delete"})
    )
    assert (error["status"], error["code"]) == (400, "confirm_needed")
    pruned = data_of(
        call(
            editor,
            "context_gc_prune",
            {
                "session_id": stored_session.pk,
                "action": "delete",
                "confirm": True,
                "segment_ids": [analysis(editor, stored_session)["candidates"][0]["segment_id"]],
            },
        )
    )
    assert (pruned["deleted"], pruned["stashed"]) == (1, 0)


def test_a_viewer_may_analyze_and_search_but_not_prune_or_restore(
    viewer: Caller, editor: Caller, stored_session: AgentSession, default_policy: Policy
) -> None:
    error = refusal_of(call(viewer, "context_gc_prune", {"session_id": stored_session.pk}))
    assert (error["status"], error["code"]) == (403, "forbidden")
    assert not GCRun.objects.exists()
    pruned = data_of(call(editor, "context_gc_prune", {"session_id": stored_session.pk}))
    first = pruned["ledger"][0]["segment_id"]
    found = data_of(call(viewer, "context_stash_search", {"run_id": pruned["run_id"]}))
    assert found["stashed"] == pruned["stashed"]
    content = data_of(
        call(
            viewer,
            "context_stash_retrieve",
            {"run_id": pruned["run_id"], "segment_ids": [first], "into": "content"},
        )
    )
    assert content["segments"][0]["text"]
    refused = refusal_of(
        call(viewer, "context_stash_retrieve", {"run_id": pruned["run_id"], "segment_ids": [first]})
    )
    assert (refused["status"], refused["code"]) == (403, "forbidden")
    assert audit(AuditAction.RESTORE) == []


def test_search_and_retrieve_by_the_pruned_session_audited_as_a_restore(
    editor: Caller, stored_session: AgentSession, default_policy: Policy
) -> None:
    pruned = data_of(call(editor, "context_gc_prune", {"session_id": stored_session.pk}))
    hit = pruned["ledger"][0]
    turn_index = hit["turn_index"]
    found, retrieved, again = calls(
        editor.secret,
        (
            "context_stash_search",
            {"session_id": pruned["new_session_id"], "turn_index": turn_index, "limit": 50},
        ),
        (
            "context_stash_retrieve",
            {"session_id": pruned["new_session_id"], "segment_ids": [hit["segment_id"]]},
        ),
        (
            "context_stash_retrieve",
            {"run_id": pruned["run_id"], "segment_ids": [hit["segment_id"]]},
        ),
    )
    hits = data_of(found)["segments"]
    assert hit["segment_id"] in [h["segment_id"] for h in hits]
    assert all(h["turn_index"] == turn_index and h["preview"] for h in hits)
    restored = data_of(retrieved)
    derived = AgentSession.objects.get(pk=restored["new_session_id"])
    assert derived.restored_segments == [hit["segment_id"]]
    assert data_of(again)["new_session_id"] == derived.pk  # the same segments, the same session
    assert audit(AuditAction.RESTORE) == [
        ("edda", f"1 segment from run {pruned['run_id']} of {stored_session.label}")
    ]


def test_stash_refusals(
    editor: Caller, stored_session: AgentSession, foreign_session: AgentSession
) -> None:
    for arguments, status in [
        ({}, 400),
        ({"run_id": 1, "session_id": stored_session.pk}, 400),
        ({"session_id": stored_session.pk}, 404),  # nothing pruned yet
        ({"session_id": foreign_session.pk}, 404),
        ({"run_id": 999_999}, 404),
    ]:
        assert refusal_of(call(editor, "context_stash_search", arguments))["status"] == status
    error = refusal_of(call(editor, "context_stash_retrieve", {"session_id": stored_session.pk}))
    assert "segment_ids" in error["message"]


def test_prune_of_another_projects_session_is_not_found(
    editor: Caller, foreign_session: AgentSession
) -> None:
    error = refusal_of(call(editor, "context_gc_prune", {"session_id": foreign_session.pk}))
    assert (error["status"], error["code"]) == (404, "not_found")
    assert not GCRun.objects.exists()


def test_inline_prune_stores_nothing(editor: Caller) -> None:
    sessions, events = AgentSession.objects.count(), AuditEvent.objects.count()
    pruned = data_of(
        call(
            editor,
            "context_gc_prune",
            {"messages": OPENAI_MESSAGES * 8, "segment_ids": ["turn_1"]},
        )
    )
    assert (pruned["new_session_id"], pruned["run_id"]) == (None, None)
    assert pruned["session"]["history"]
    assert pruned["stash"]["segments"][0]["segment_id"] == "turn_1"
    assert len(pruned["session"]["history"]) == 14
    assert (AgentSession.objects.count(), AuditEvent.objects.count()) == (sessions, events)


def test_configure_changes_roots_and_batch_size(editor: Caller, budget_policy: Policy) -> None:
    saved = data_of(
        call(
            editor,
            "context_gc_configure",
            {"policy_id": budget_policy.pk, "roots": {"recent_turns": 1}, "batch_size": 5},
        )
    )
    assert saved["changes"] == [
        {"key": "roots.recent_turns", "before": 3, "after": 1},
        {"key": "batch_size", "before": 10, "after": 5},
    ]
    version = budget_policy.versions.get(number=2)
    assert (version.config["roots"]["recent_turns"], version.config["batch_size"]) == (1, 5)


def test_prune_carries_out_its_run_itself_when_no_worker_runs(
    editor: Caller, stored_session: AgentSession, default_policy: Policy, settings: Any
) -> None:
    """With the database backend a run waits for a worker; a prune does not: it claims its
    run and carries it out, and a worker that comes later finds nothing left to do."""
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    pruned = data_of(call(editor, "context_gc_prune", {"session_id": stored_session.pk}))
    run = GCRun.objects.get(pk=pruned["run_id"])
    assert (run.status, run.attempts) == ("done", 1)
    background.run_execute(run_id=run.pk)  # the queued task, run late by a worker
    run.refresh_from_db()
    assert (run.status, run.attempts, run.tokens_after) == ("done", 1, pruned["tokens_after"])


def test_every_answer_and_refusal_matches_the_tools_output_schema(
    editor: Caller, stored_session: AgentSession, default_policy: Policy
) -> None:
    """What a client on the TypeScript SDK checks: each tool's structured content, answers and
    refusals alike, against the output schema it publishes."""
    samples = ToolSamples(
        session=stored_session.pk,
        missing_session=999_999,
        unpin_turn=1,
        protected_segment="turn_0",
        other_stash={"run_id": 999_999},
        configure={"session_id": stored_session.pk},
    )

    async def run() -> CheckedCalls:
        auth_context_var.set(
            AuthenticatedUser(AccessToken(token=editor.secret, client_id="t", scopes=[]))
        )
        async with Client(mcp_server(), raise_exceptions=True) as client:
            return await call_every_tool(client, samples)

    run_async(run).check()
