"""A generated autonomous session: one user request, then hundreds of model calls and tool
exchanges in the same turn, as coding agents run today (nothing here is a real session).

Each step is the model's text, then a call and its result; now and then the model thinks
aloud between exchanges with no call. Results vary in size, as file reads and test logs do.
"""

from __future__ import annotations

import random

import gcengine
from gcengine import (
    ContextLimitOrigin,
    FunctionCall,
    FunctionResponse,
    Message,
    Part,
    Role,
    Session,
    SourceFormat,
)
from gcengine.tokens import TokenCounter

REQUEST = "Refactor the billing module so that invoices are computed in one place; run the tests."
_TOOLS = ("read_file", "run_tests", "grep_content", "edit_file")


def autonomous_history(messages: int = 400, seed: int = 0) -> list[Message]:
    """One turn of about ``messages`` messages: the request, then model calls and results."""
    rng = random.Random(seed)
    history = [Message(role=Role.USER, parts=[Part.from_text(REQUEST)], message_id="request")]
    step = 0
    while len(history) < messages - 1:
        step += 1
        if step % 5 == 0:  # the model's text between exchanges
            history.append(
                Message(
                    role=Role.MODEL,
                    parts=[Part.from_text(f"Step {step}: the tests in src/billing/tax.py " * 6)],
                    message_id=f"text-{step}",
                )
            )
            continue
        call = f"call-{step}"
        name = rng.choice(_TOOLS)
        history.append(
            Message(
                role=Role.MODEL,
                parts=[
                    Part.from_text(f"Next I check step {step}."),
                    Part.from_function_call(
                        FunctionCall(id=call, name=name, args={"path": f"src/mod{step}.py"})
                    ),
                ],
                message_id=f"model-{step}",
            )
        )
        body = f"line {step}: def compute_{step}(x): return x * {step}\n" * rng.randint(5, 60)
        history.append(
            Message(
                role=Role.TOOL,
                parts=[
                    Part.from_function_response(
                        FunctionResponse(call_id=call, name=name, result=body)
                    )
                ],
                message_id=f"result-{step}",
            )
        )
    history.append(
        Message(
            role=Role.MODEL,
            parts=[Part.from_text("Done: invoices are computed in one place.")],
            message_id="answer",
        )
    )
    return history


def session_at_usage(
    history: list[Message], counter: TokenCounter, usage: float, session_id: str = "autonomous"
) -> Session:
    """A session of ``history`` whose window puts it at ``usage`` percent."""
    budget = gcengine.build_budget(history, counter, context_limit=1_000_000)
    limit = max(1, int(budget.total_tokens() * 100 / usage))
    return Session(
        session_id=session_id,
        source_format=SourceFormat.JAATO,
        context_limit=limit,
        context_limit_origin=ContextLimitOrigin.FILE,
        history=history,
        budget=gcengine.build_budget(history, counter, context_limit=limit),
        token_counter=counter.name,
    )
