"""Session files for web tests, generated so each test states the shape it needs."""

from __future__ import annotations

import json

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
