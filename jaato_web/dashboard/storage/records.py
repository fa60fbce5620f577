"""What a row keeps as JSON of an engine value: anchor retention, a replay's series, the drift
between recorded and counted figures, and the agent's own state beyond the conversation."""

from __future__ import annotations

import dataclasses
from typing import Any, TypedDict

import gcengine
from jaato_web.dashboard.storage.turns import clipped, pretty_json

# In a replay's series each collection keeps its figures, not the anchors it lost.
_FIGURES_ONLY: Any = {"classes": {"__all__": {"lost"}}, "invented": {"examples"}}


def retention_record(retention: gcengine.AnchorRetention) -> dict[str, Any]:
    """How a run or an agent's compaction stores its score: all of it, with what it lost."""
    return retention.model_dump(mode="json")


def retention_figures(retention: gcengine.AnchorRetention) -> dict[str, Any]:
    """How a replay stores a collection's score: the figures, without the anchors."""
    return retention.model_dump(mode="json", exclude=_FIGURES_ONLY)


def retention_read(record: dict[str, Any] | None) -> gcengine.AnchorRetention | None:
    """None for a record stored before scores counted the whole context (it has no tokens
    before): its figure scored only what went, which cannot be compared with the new one."""
    if record is None or "tokens_before" not in record:
        return None
    return gcengine.AnchorRetention.model_validate(record)


def _requests(requests: list[gcengine.PromptRequest]) -> list[list[int | None]]:
    return [[r.turn_index, r.tokens, r.shared_prefix_tokens] for r in requests]


def requests_read(rows: list[list[Any]]) -> list[gcengine.PromptRequest]:
    return [
        gcengine.PromptRequest(turn_index=turn, tokens=tokens, shared_prefix_tokens=shared)
        for turn, tokens, shared in rows
    ]


def replay_series(
    simulation: gcengine.Simulation, without_gc: list[gcengine.PromptRequest], *, scored: bool
) -> dict[str, Any]:
    """A replay as stored: compact step tuples [turn index, point, tokens before, after, the
    recorded call it came before or None] (a 10,000-turn replay has 20,000 steps), each
    request as [turn index, tokens, tokens shared with the request before], the same replay's
    requests without GC, and when ``scored`` each collection's anchor retention (None for a
    collection that failed). A series not scored has no ``retention`` in its events."""
    return {
        "plugin": simulation.plugin,
        "context_limit": simulation.context_limit,
        "threshold_percent": simulation.threshold_percent,
        "target_percent": simulation.target_percent,
        "pressure_percent": simulation.pressure_percent,
        "continuous_mode": simulation.continuous_mode,
        "steps": [
            [s.turn_index, s.point, s.tokens_before, s.tokens_after, s.call_number]
            for s in simulation.steps
        ],
        "events": [
            {
                "turn_index": e.turn_index,
                "point": e.point,
                "call": e.call_number,
                "reason": e.reason.value,
                "success": e.result.success,
                "items": e.result.items_collected,
                "tokens_before": e.result.tokens_before,
                "tokens_after": e.result.tokens_after,
                "error": e.result.error,
                **(
                    {"retention": retention_figures(e.retention) if e.retention else None}
                    if scored
                    else {}
                ),
            }
            for e in simulation.events
        ],
        "requests": _requests(simulation.requests),
        "requests_without_gc": _requests(without_gc),
    }


# The largest differences are what a reader acts on; the rest is a count.
DRIFT_MESSAGES_SHOWN = 20


def drift_record(engine: gcengine.Session) -> dict[str, Any]:
    """Recorded against counted figures, as ``AgentSession.drift`` keeps them."""
    drift = gcengine.token_drift(engine)
    largest = sorted(drift.messages, key=lambda m: abs(m.counted - m.recorded), reverse=True)
    return {
        "counter": drift.counter,
        "figures": figure_sources(engine),
        "compared_messages": len(drift.messages),
        "recorded_total": drift.recorded_total,
        "counted_total": drift.counted_total,
        "difference": drift.difference,
        "difference_percent": drift.difference_percent,
        "provider_prompt_tokens": drift.provider_prompt_tokens,
        "counted_context_tokens": drift.counted_context_tokens,
        "window_source": engine.context_limit_source,
        "local_estimate": _local_estimate(engine),
        "largest": [
            {
                "message_id": m.message_id,
                "label": m.label,
                "recorded": m.recorded,
                "counted": m.counted,
            }
            for m in largest[:DRIFT_MESSAGES_SHOWN]
            if m.counted != m.recorded
        ],
    }


def _local_estimate(engine: gcengine.Session) -> dict[str, Any] | None:
    """The history counted locally beside its scaled figure, for a scaled session."""
    estimate = gcengine.local_estimate(engine)
    if estimate is None:
        return None
    return {
        **dataclasses.asdict(estimate),
        "difference": estimate.scaled_tokens - estimate.local_tokens,
    }


def figure_sources(engine: gcengine.Session) -> dict[str, Any]:
    """Where the session's figures came from, as the session page explains them: each entry's
    tokens (a message, a system instruction, a tool schema...) were either recorded by the
    agent in the file, or counted here with the session's counter. The two add up to the
    session's total (earlier reasoning, not sent to the model, is left out of both)."""
    recorded = counted = recorded_tokens = counted_tokens = 0
    recorded_other = counted_other = 0
    for source, entry in engine.budget.entries.items():
        if source is gcengine.InstructionSource.THINKING:
            continue
        is_message = source is gcengine.InstructionSource.CONVERSATION
        for tokens, made_by in entry.leaf_figures():
            if not tokens and not is_message:
                continue
            if made_by is None or made_by == "recorded":
                recorded_tokens += tokens
                recorded, recorded_other = (
                    (recorded + 1, recorded_other) if is_message else (recorded, recorded_other + 1)
                )
            else:
                counted_tokens += tokens
                counted, counted_other = (
                    (counted + 1, counted_other) if is_message else (counted, counted_other + 1)
                )
    # The counter's shortcomings matter only for the figures it made.
    counting = engine.token_counting if counted else None
    accounting = engine.turn_accounting
    return {
        "snapshot": engine.source_format is gcengine.SourceFormat.JAATO_BUDGET_SNAPSHOT,
        "recorded_messages": recorded,
        "recorded_tokens": recorded_tokens,
        "counted_messages": counted,
        "counted_tokens": counted_tokens,
        "recorded_other": recorded_other,
        "counted_other": counted_other,
        "exact": counting.exact if counting else True,
        "notes": list(counting.notes) if counting else [],
        "turn_accounting": {
            "turns": len(accounting),
            "prompt": sum(t.prompt for t in accounting),
            "output": sum(t.output for t in accounting),
        },
        "recorded_calls": len(engine.recorded_usage),
    }


# A session's state lists are shown in full up to these lengths; the rest is a count.
STATE_ITEMS_SHOWN = 100
STATE_TEXT_CHARS = 600


class StoredAgentState(TypedDict):
    """What the agent's own record says beyond the conversation, as ``AgentSession.agent_state``
    keeps it for the session page and the API."""

    interrupted: dict[str, Any] | None
    subagents: list[dict[str, Any]]
    plugin_states: list[dict[str, str]]
    failed_tool_results: list[dict[str, Any]]
    failed_tool_result_count: int
    compactions: list[dict[str, Any]]
    tool_pair_problems: list[dict[str, Any]]
    tool_pair_problem_count: int
    calls: list[list[int | None]]
    cost_groups: list[list[Any]]


def _turn_of(message: gcengine.Message) -> int | None:
    return gcengine.turn_number(message.turn_index) if message.turn_index is not None else None


def agent_state_record(
    engine: gcengine.Session, anchors: gcengine.AnchorCache | None = None
) -> StoredAgentState:
    """The state a page can show without the engine: an interrupted turn and the calls it left
    waiting, sub-agents, plugin states, failed tool results, the compactions the agent itself
    performed, and tool calls and results that lost their other half. ``anchors``: what
    scoring has read of the session (``gcengine.anchor_cache``), if anything."""
    interrupted = engine.interrupted_turn
    failed = [
        (message, response)
        for message in engine.history
        for response in message.function_responses
        if response.is_error
    ]
    problems = gcengine.tool_pair_report(engine)
    timeline = gcengine.call_timeline(engine)
    placed = {c.compaction_id: c for c in timeline.compactions}
    scores = gcengine.score_observed_compactions(engine, anchors) if engine.compactions else {}
    return {
        "interrupted": None
        if interrupted is None
        else {
            "user_prompt": clipped(interrupted.user_prompt, STATE_TEXT_CHARS)[0],
            "started_at": interrupted.started_at,
            "pending_calls": [
                {
                    "id": call.id,
                    "name": call.name,
                    "args": clipped(pretty_json(call.args), STATE_TEXT_CHARS)[0],
                }
                for call in interrupted.pending_tool_calls[:STATE_ITEMS_SHOWN]
            ],
        },
        "subagents": [
            *(
                {
                    "agent_id": record.agent_id or "",
                    "profile": record.profile_name or "",
                    "status": record.status or "",
                    "turns": record.turn_count,
                    "messages": None,
                    "compaction": False,
                }
                for record in engine.subagent_records[:STATE_ITEMS_SHOWN]
            ),
            *(
                {
                    "agent_id": agent.agent_id,
                    "profile": "",
                    "status": "",
                    "turns": None,
                    "messages": len(agent.history),
                    "compaction": agent.is_compaction,
                }
                for agent in engine.subagents[:STATE_ITEMS_SHOWN]
            ),
        ],
        "plugin_states": [
            {"plugin": name, "state": clipped(pretty_json(state), STATE_TEXT_CHARS)[0]}
            for name, state in list(engine.plugin_states.items())[:STATE_ITEMS_SHOWN]
        ],
        # Only those shown are written out: a long session can fail thousands of calls.
        "failed_tool_results": [
            {
                "turn": _turn_of(message),
                "message_id": message.message_id,
                "tool": response.name,
                "text": clipped(pretty_json(response.result), STATE_TEXT_CHARS)[0],
            }
            for message, response in failed[:STATE_ITEMS_SHOWN]
        ],
        "failed_tool_result_count": len(failed),
        "compactions": [
            {
                "id": compaction.compaction_id,
                "at": compaction.at,
                "trigger": compaction.trigger,
                "tokens_before": compaction.tokens_before,
                # Where the file records no size after it, the first call after it does.
                "tokens_after": placed[compaction.compaction_id].tokens_after,
                "tokens_after_source": placed[compaction.compaction_id].tokens_after_source,
                "after_call": placed[compaction.compaction_id].after_calls
                if timeline.calls
                else None,
                "summary": compaction.summary,
                "before_turn": gcengine.turn_number(compaction.before_turn)
                if compaction.before_turn is not None
                else None,
                "replaced": compaction.replaced_count,
                "retention": retention_record(scores[compaction.compaction_id]),
            }
            for compaction in engine.compactions[:STATE_ITEMS_SHOWN]
        ],
        "tool_pair_problems": [
            {
                "kind": problem.kind.value,
                "call_id": problem.call_id,
                "tool": problem.tool_name,
                "message_id": problem.message_id,
                "turn": gcengine.turn_number(problem.turn) if problem.turn is not None else None,
                "agent_id": problem.agent_id,
            }
            for problem in problems[:STATE_ITEMS_SHOWN]
        ],
        "tool_pair_problem_count": len(problems),
        "calls": recorded_calls(timeline),
        "cost_groups": cost_groups(engine),
    }


def recorded_calls(timeline: gcengine.CallTimeline) -> list[list[int | None]]:
    """Each model call the file recorded, in order, as [call number, turn number, input,
    uncached, cache read, cache write, output] (None where the file gave no figure): the
    session's real usage curve and its table of calls."""
    return [
        [
            call.number,
            gcengine.turn_number(call.turn_index) if call.turn_index is not None else None,
            call.prompt_tokens,
            call.uncached_tokens,
            call.cache_read_tokens,
            call.cache_write_tokens,
            call.output_tokens,
        ]
        for call in timeline.calls
    ]


def cost_groups(engine: gcengine.Session) -> list[list[Any]]:
    """Every recorded call's tokens (all contexts, the compaction call and sub-agents), summed
    per caller and model, ``[caller, model, calls, uncached, read, written, output]``: what the
    session page prices with the project's table as it stands then."""
    groups: dict[tuple[str, str | None], list[Any]] = {}
    for call in gcengine.recorded_cost(engine, ()).calls:
        group = groups.setdefault(
            (call.caller, call.model), [call.caller, call.model, 0, 0, 0, 0, 0]
        )
        group[2] += 1
        group[3] += call.uncached_tokens
        group[4] += call.cache_read_tokens
        group[5] += call.cache_write_tokens
        group[6] += call.output_tokens
    return list(groups.values())
