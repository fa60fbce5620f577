"""Generated JAATO session files for tests, benchmarks and demos.

The default shape is the one JAATO's maintainers measured their collector with: a user
request of about 200 tokens, a model answer of about 300, and on every third turn a tool call
whose result is about 1,000 tokens. Text is drawn from a seeded word list, so files are
reproducible but messages are not copies of each other (a content cache cannot flatter a
benchmark).
"""

from __future__ import annotations

import base64
import random
from dataclasses import dataclass
from typing import Any

_WORDS = [
    "agent",
    "budget",
    "cache",
    "commit",
    "context",
    "deploy",
    "diff",
    "error",
    "file",
    "function",
    "index",
    "kernel",
    "latency",
    "limit",
    "log",
    "memory",
    "merge",
    "module",
    "network",
    "parser",
    "patch",
    "pipeline",
    "policy",
    "queue",
    "request",
    "result",
    "retry",
    "schema",
    "server",
    "session",
    "shard",
    "signal",
    "socket",
    "stack",
    "summary",
    "table",
    "test",
    "thread",
    "token",
    "trace",
    "turn",
    "update",
    "value",
    "vector",
    "window",
    "worker",
    "build",
    "config",
    "branch",
    "review",
    "release",
    "metric",
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "is",
    "that",
    "for",
    "on",
    "with",
    "as",
    "by",
    "at",
    "from",
    "it",
    "this",
    "be",
    "are",
    "was",
    "or",
    "an",
    "not",
]
_TOOLS = ("grep_content", "read_file", "run_tests", "list_dir", "git_diff", "http_get")


@dataclass(frozen=True)
class SessionShape:
    """Knobs for a generated session; the defaults are reference shape of JAATO's benchmark."""

    turns: int = 100
    user_chars: int = 800
    model_chars: int = 1200
    tool_every: int = 3  # turns 1, 4, 7, ... call a tool; 1 means every turn, 0 none
    tool_result_chars: int = 4000
    parallel_calls: int = 1
    thoughts: bool = False
    inline_data_every: int = 0
    opaque_every: int = 0
    with_budget_state: bool = False
    seed: int = 0


def _text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    length = 0
    while length < chars:
        word = rng.choice(_WORDS)
        if rng.random() < 0.08:
            word = f"{word}_{rng.randrange(10_000)}"
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:chars]


def generate_session_file(shape: SessionShape = SessionShape()) -> dict[str, Any]:
    """A JAATO 2.1 session file (as a dict) with the given shape."""
    rng = random.Random(shape.seed)
    history: list[dict[str, Any]] = []
    user_inputs: list[str] = []
    accounting: list[dict[str, Any]] = []
    call_counter = 0
    for turn in range(shape.turns):
        request = _text(rng, shape.user_chars)
        user_inputs.append(request)
        user_parts: list[dict[str, Any]] = [{"type": "text", "text": request}]
        if shape.inline_data_every and turn % shape.inline_data_every == 0:
            payload = base64.b64encode(rng.randbytes(48)).decode()
            user_parts.append({"type": "inline_data", "mime_type": "image/png", "data": payload})
        history.append({"role": "user", "parts": user_parts})
        if shape.tool_every and turn % shape.tool_every == 1 % shape.tool_every:
            calls = []
            for _ in range(shape.parallel_calls):
                call_counter += 1
                calls.append(
                    {
                        "type": "function_call",
                        "id": f"call_{call_counter:06d}",
                        "name": rng.choice(_TOOLS),
                        "args": {
                            "path": f"src/{rng.choice(_WORDS)}.py",
                            "limit": rng.randrange(100),
                        },
                    }
                )
            model_parts: list[dict[str, Any]] = []
            if shape.thoughts:
                model_parts.append(
                    {
                        "type": "unknown",
                        "repr": "Part(thought=...)",
                        "kind": "thought",
                        "text": _text(rng, 200),
                    }
                )
            history.append(
                {
                    "role": "model",
                    "parts": [*model_parts, {"type": "text", "text": _text(rng, 60)}, *calls],
                }
            )
            history.append(
                {
                    "role": "tool",
                    "parts": [
                        {
                            "type": "function_response",
                            "call_id": call["id"],
                            "name": call["name"],
                            "result": {
                                "output": _text(
                                    rng, shape.tool_result_chars // shape.parallel_calls
                                )
                            },
                            "is_error": False,
                        }
                        for call in calls
                    ],
                }
            )
        answer_parts: list[dict[str, Any]] = [
            {"type": "text", "text": _text(rng, shape.model_chars)}
        ]
        if shape.opaque_every and turn % shape.opaque_every == 0:
            answer_parts.append(
                {"type": "unknown", "repr": "Part(executable_code=ExecutableCode(code='print(1)'))"}
            )
        history.append({"role": "model", "parts": answer_parts})
        accounting.append(
            {
                "prompt": 1000 + turn * 10,
                "output": 300,
                "total": 1300 + turn * 10,
                "start_time": "2026-03-01T10:15:00",
                "end_time": "2026-03-01T10:15:05",
                "duration_seconds": 5.0,
                "function_calls": [],
            }
        )
    file: dict[str, Any] = {
        "version": "2.1",
        "session_id": f"20260301_{shape.seed:06d}",
        "description": f"generated session ({shape.turns} turns)",
        "created_at": "2026-03-01T10:15:00",
        "updated_at": "2026-03-01T12:00:00",
        "turn_count": shape.turns,
        "turn_accounting": accounting,
        "user_inputs": user_inputs,
        "metadata": {},
        "connection": {"project": None, "location": None, "model": "claude-sonnet-4"},
        "workspace_path": "/home/dev/project",
        "history": history,
        "budget_state": None,
        "interrupted_turn": None,
    }
    if shape.with_budget_state:
        file["budget_state"] = _jaato_style_budget_state(history)
    return file


def _jaato_style_budget_state(history: list[dict[str, Any]]) -> dict[str, Any]:
    """The per-message conversation budget JAATO itself saves (``msg_<i>`` keys, chars/4)."""
    children: dict[str, dict[str, Any]] = {}
    for index, message in enumerate(history):
        chars = sum(
            len(p.get("text", "")) + len(str(p.get("result", ""))) for p in message["parts"]
        )
        policy = "locked" if index == 0 else "ephemeral"
        children[f"msg_{index}"] = {
            "source": "conversation",
            "tokens": chars // 4,
            "total_tokens": chars // 4,
            "gc_policy": policy,
            "gc_eligible_tokens": 0 if policy == "locked" else chars // 4,
            "indicator": "🔒" if policy == "locked" else "○",
            "label": f"msg {index}",
            "message_ids": [f"00000000-0000-4000-8000-{index:012d}"],
        }
    total = sum(int(c["tokens"]) for c in children.values())
    return {
        "source": "conversation",
        "tokens": total,
        "total_tokens": total,
        "gc_policy": "partial",
        "gc_eligible_tokens": total - int(children["msg_0"]["tokens"]) if children else 0,
        "indicator": "◐",
        "children": children,
    }
