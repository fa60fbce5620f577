"""Engine values turned into what the dashboard stores, and read back.

A session is stored flat, once, when it is uploaded (and a run's results when it finishes), so
pages page through rows instead of walking a 26,000-leaf tree per request: the budget tree as
one ``BudgetNode`` row per node, the history as one ``SessionTurn`` row per turn with its
messages as JSON in the shape ``StoredMessage`` declares, the engine's session packed, and a
replay as compact step tuples. Writers (the services) and readers (the presenters) share these
shapes, so a field renamed on one side is a type error on the other.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any, TypedDict

import gcengine

PREVIEW_CHARS = 200
# Tool arguments and results can be megabytes; the history view shows the start and says so.
PART_TEXT_CHARS = 4000


class StoredPart(TypedDict):
    """One part of a stored message, as the history view shows it."""

    type: str
    title: str
    text: str
    clipped: bool
    length: int


class StoredMessage(TypedDict):
    """One message of a ``SessionTurn.messages`` list."""

    id: str
    role: str
    kind: str
    tokens: int
    policy: str
    counted_by: str
    parts: list[StoredPart]
    metadata: dict[str, Any]


@dataclass(frozen=True)
class NodeRow:
    path: str
    parent_path: str
    position: int
    depth: int
    key: str
    label: str
    policy: str
    tokens: int
    child_count: int
    message_ids: list[str]


def budget_rows(budget: gcengine.InstructionBudget) -> list[NodeRow]:
    """Every node of the tree, parents before children, figures computed bottom-up once."""
    rows: list[NodeRow] = []
    for position, (source, entry) in enumerate(budget.entries.items()):
        _flatten(entry, source.value, "", position, 0, rows)
    return rows


def _flatten(
    entry: gcengine.SourceEntry,
    key: str,
    parent_path: str,
    position: int,
    depth: int,
    rows: list[NodeRow],
) -> tuple[int, str]:
    path = f"{parent_path}/{key}" if parent_path else key
    slot = len(rows)
    rows.append(NodeRow(path, parent_path, position, depth, key, "", "", 0, 0, []))
    if entry.children:
        tokens = 0
        policies: set[str] = set()
        for child_position, (child_key, child) in enumerate(entry.children.items()):
            child_tokens, child_policy = _flatten(
                child, child_key, path, child_position, depth + 1, rows
            )
            tokens += child_tokens
            policies.add(child_policy)
        policy = policies.pop() if len(policies) == 1 else gcengine.GCPolicy.PARTIAL.value
    else:
        tokens, policy = entry.tokens, entry.gc_policy.value
    rows[slot] = NodeRow(
        path=path,
        parent_path=parent_path,
        position=position,
        depth=depth,
        key=key,
        label=entry.label or key,
        policy=policy,
        tokens=tokens,
        child_count=len(entry.children),
        message_ids=list(entry.message_ids),
    )
    return tokens, policy


@dataclass(frozen=True)
class TurnRow:
    position: int
    turn_index: int | None
    kind: str
    tokens: int
    policy: str
    tool_calls: int
    preview: str
    messages: list[StoredMessage]


def message_figures(budget: gcengine.InstructionBudget) -> dict[str, tuple[int, str, str]]:
    """Per message: tokens, policy and how the figure was made, read from budget leaves."""
    conversation = budget.get_entry(gcengine.InstructionSource.CONVERSATION)
    figures: dict[str, tuple[int, str, str]] = {}
    if conversation is None:
        return figures
    stack = [conversation]
    while stack:
        entry = stack.pop()
        if entry.children:
            stack.extend(entry.children.values())
        elif len(entry.message_ids) == 1:
            counted_by = str(entry.metadata.get("counted_by", ""))
            figures[entry.message_ids[0]] = (entry.tokens, entry.gc_policy.value, counted_by)
    return figures


def clipped(text: str, limit: int = PART_TEXT_CHARS) -> tuple[str, bool]:
    """The start of a long text and whether it was cut."""
    return (text, False) if len(text) <= limit else (text[:limit], True)


def part_row(part: gcengine.Part) -> StoredPart:
    """A part as the history view shows it: its kind, a readable body, and whether it is cut."""
    kind = part.type.value
    if part.function_call is not None:
        body = pretty_json(part.function_call.args)
        title = part.function_call.name
    elif part.function_response is not None:
        body = pretty_json(part.function_response.result)
        title = part.function_response.name
    elif part.inline_data is not None:
        body = f"{part.inline_data.mime_type}, {len(part.inline_data.data):,} characters of data"
        title = "media"
    elif part.opaque is not None:
        body = pretty_json(part.opaque.data)
        title = part.opaque.kind
    else:
        body = part.text or ""
        title = ""
    text, cut = clipped(body)
    return {"type": kind, "title": title, "text": text, "clipped": cut, "length": len(body)}


def pretty_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=1, default=str)
    except (TypeError, ValueError):
        return repr(value)


def turn_rows(session: gcengine.Session) -> list[TurnRow]:
    """The history, turn by turn, each message with its tokens and policy from the budget."""
    figures = message_figures(session.budget)
    counter: gcengine.TokenCounter | None = None
    rows: list[TurnRow] = []
    for position, turn in enumerate(session.turns()):
        messages: list[StoredMessage] = []
        turn_tokens = 0
        policies: list[str] = []
        for message in turn.messages:
            if message.message_id in figures:
                tokens, policy, counted_by = figures[message.message_id]
            else:
                counter = counter or gcengine.load_counter()
                tokens = gcengine.count_message(message, counter)
                policy, counted_by = gcengine.GCPolicy.EPHEMERAL.value, counter.name
            turn_tokens += tokens
            policies.append(policy)
            messages.append(
                {
                    "id": message.message_id,
                    "role": message.role.value,
                    "kind": message.kind.value,
                    "tokens": tokens,
                    "policy": policy,
                    "counted_by": counted_by,
                    "parts": [part_row(p) for p in message.parts],
                    "metadata": message.metadata if message.kind.value != "chat" else {},
                }
            )
        first_text = next((m.text for m in turn.messages if m.text), "")
        rows.append(
            TurnRow(
                position=position,
                turn_index=turn.index,
                kind=turn.kind.value,
                tokens=turn_tokens,
                policy=gcengine.most_protective(policies).value,
                tool_calls=sum(len(m.function_calls) for m in turn.messages),
                preview=clipped(" ".join(first_text.split()), PREVIEW_CHARS)[0],
                messages=messages,
            )
        )
    return rows


def replay_series(simulation: gcengine.Simulation) -> dict[str, Any]:
    """A replay as stored: compact step tuples (a 10,000-turn replay has 20,000 steps)."""
    return {
        "plugin": simulation.plugin,
        "context_limit": simulation.context_limit,
        "threshold_percent": simulation.threshold_percent,
        "target_percent": simulation.target_percent,
        "pressure_percent": simulation.pressure_percent,
        "continuous_mode": simulation.continuous_mode,
        "steps": [
            [s.turn_index, s.point, s.tokens_before, s.tokens_after] for s in simulation.steps
        ],
        "events": [
            {
                "turn_index": e.turn_index,
                "point": e.point,
                "reason": e.reason.value,
                "success": e.result.success,
                "items": e.result.items_collected,
                "tokens_before": e.result.tokens_before,
                "tokens_after": e.result.tokens_after,
                "error": e.result.error,
            }
            for e in simulation.events
        ],
    }


def pack_session(session: gcengine.Session) -> bytes:
    """How engine sessions are stored: JSON, compressed (a 10,000-turn session: 62 -> 17 MB)."""
    return zlib.compress(session.model_dump_json().encode(), 1)


def unpack_session(packed: bytes) -> gcengine.Session:
    return gcengine.Session.model_validate_json(zlib.decompress(packed))


def exported_session(packed: bytes) -> str:
    """A stored session as the JAATO file the run page and the API export: compact, so a
    session that was uploaded can be uploaded again after GC."""
    return gcengine.dump_session(unpack_session(packed), indent=None)


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
        for _, leaf in entry.walk():
            if leaf.children or (not leaf.tokens and not is_message):
                continue
            made_by = leaf.metadata.get("counted_by")
            if made_by is None or made_by == "recorded":
                recorded_tokens += leaf.tokens
                recorded, recorded_other = (
                    (recorded + 1, recorded_other) if is_message else (recorded, recorded_other + 1)
                )
            else:
                counted_tokens += leaf.tokens
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
    usage: list[list[int]]


def _turn_of(message: gcengine.Message) -> int | None:
    return gcengine.turn_number(message.turn_index) if message.turn_index is not None else None


def agent_state_record(engine: gcengine.Session) -> StoredAgentState:
    """The state a page can show without the engine: an interrupted turn and the calls it left
    waiting, sub-agents, plugin states, failed tool results, the compactions the agent itself
    performed, and tool calls and results that lost their other half."""
    interrupted = engine.interrupted_turn
    failed = [
        {
            "turn": _turn_of(message),
            "message_id": message.message_id,
            "tool": response.name,
            "text": clipped(pretty_json(response.result), STATE_TEXT_CHARS)[0],
        }
        for message in engine.history
        for response in message.function_responses
        if response.is_error
    ]
    problems = gcengine.tool_pair_report(engine)
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
        "failed_tool_results": failed[:STATE_ITEMS_SHOWN],
        "failed_tool_result_count": len(failed),
        "compactions": [
            {
                "id": compaction.compaction_id,
                "at": compaction.at,
                "trigger": compaction.trigger,
                "tokens_before": compaction.tokens_before,
                "tokens_after": compaction.tokens_after,
                "summary": compaction.summary,
                "before_turn": gcengine.turn_number(compaction.before_turn)
                if compaction.before_turn is not None
                else None,
                "replaced": compaction.replaced_count,
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
        "usage": recorded_usage_curve(engine),
    }


# The agent's recorded usage is drawn, not listed: more points than a chart has pixels only
# cost storage, and each bucket keeps its lowest and highest call so no drop or peak is lost.
USAGE_POINTS = 2000


def recorded_usage_curve(engine: gcengine.Session) -> list[list[int]]:
    """The context size each model call reported, as [turn number, prompt tokens] in call
    order: the session's real usage curve, compactions included (the file's own figures)."""
    turn_of = {m.message_id: m.turn_index for m in engine.history}
    for compaction in engine.compactions:
        turn_of.update((m.message_id, m.turn_index) for m in compaction.replaced)
    points = [
        [gcengine.turn_number(turn), usage.prompt_tokens]
        for usage in engine.recorded_usage
        if (turn := turn_of.get(usage.message_id or "")) is not None
    ]
    if len(points) <= USAGE_POINTS:
        return points
    bucket = -(-len(points) // (USAGE_POINTS // 2))
    kept: list[list[int]] = []
    for start in range(0, len(points), bucket):
        chunk = points[start : start + bucket]
        low = min(range(len(chunk)), key=lambda i: chunk[i][1])
        high = max(range(len(chunk)), key=lambda i: chunk[i][1])
        kept.extend(chunk[i] for i in sorted({low, high}))
    return kept
