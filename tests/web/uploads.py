"""Session files for web tests, generated so each test states the shape it needs."""

from __future__ import annotations

import json
from typing import Any

from gcengine.synthetic import SessionShape, generate_session_file


def session_file(
    turns: int = 20, *, seed: int = 1, tool_every: int = 3, model: str = "gpt-4"
) -> bytes:
    """A JAATO 2.1 file; gpt-4's 8,192-token window makes 20 short turns about 70 % full."""
    shape = SessionShape(
        turns=turns,
        user_chars=300,
        model_chars=400,
        tool_result_chars=1200,
        tool_every=tool_every,
        seed=seed,
    )
    document = generate_session_file(shape)
    document["connection"]["model"] = model
    return json.dumps(document).encode()


BUDGET_POLICY = {
    "type": "gc_budget",
    "threshold_percent": 80,
    "target_percent": 30,
    "pressure_percent": 90,
    "preserve_recent_turns": 2,
}
HYBRID_POLICY = {
    "type": "gc_hybrid",
    "threshold_percent": 80,
    "target_percent": 10,
    "preserve_recent_turns": 2,
    "summarize_middle_turns": 4,
}


def jaato_file_with_state() -> dict[str, Any]:
    """A JAATO 2.1 file saved mid-turn: two tool calls waiting, one failed tool result in the
    history, a sub-agent and two plugins' states, as JAATO writes them."""
    document = generate_session_file(
        SessionShape(turns=3, user_chars=80, model_chars=80, tool_result_chars=80, seed=6)
    )
    failing = next(
        part
        for message in document["history"]
        for part in message["parts"]
        if part["type"] == "function_response"
    )
    failing["result"] = {"error": "pytest: 3 failed, 12 passed"}
    failing["is_error"] = True
    document["interrupted_turn"] = {
        "agent_id": "main",
        "pending_tool_calls": [
            {"id": "call_9", "name": "run_tests", "args": {"k": "slow"}},
            {"id": "call_10", "name": "grep_content", "args": {"pattern": "TODO"}},
        ],
        "user_prompt": "Run the slow tests and list the TODOs",
        "started_at": "2026-03-01T10:16:00+00:00",
    }
    document["metadata"] = {
        "subagents": {
            "version": "1.0",
            "agents": [
                {
                    "agent_id": "sub1",
                    "profile_name": "explorer",
                    "status": "idle",
                    "turn_count": 4,
                    "max_turns": 20,
                }
            ],
        },
        "plugin_states": {"todo": {"items": 3}, "memory": {"notes": ["uses uv"]}},
    }
    return document
