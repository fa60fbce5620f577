"""Sessions recorded as model calls (tracing exports): each call's input and output messages.

A tracer records what each call sent, not the conversation, so the history is put back
together call by call, in the order the calls started:

* an input that repeats the context so far and adds to it continues the conversation: only
  the new messages are added, then the call's output;
* an input that does not continue the context and that the call marks as compacted, or that
  starts like the context so far but then differs, replaced the context: that is an observed
  compaction (its ``metadata["marked"]`` says whether the call said so), and the input becomes
  the new context; so is the first marked call of a file, whose earlier context the file does
  not hold (nothing replaced is known), while later calls marked because they go on using the
  compacted context are not;
* any other input is a tracer that records only each call's new messages: all of it is added.

Messages get ids from their place in that history, so the same file always gives the same ids.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gcengine._fast import construct
from gcengine.formats.common import ParsedSession, Replacement, settle_replacements
from gcengine.messages import Message, derive_message_id
from gcengine.session import RecordedUsage


@dataclass
class RecordedCall:
    """One model call as a tracer recorded it."""

    call_id: str
    inputs: list[Message]
    outputs: list[Message]
    at: str | None = None
    usage: RecordedUsage | None = None
    compacted: bool = False
    summary: str | None = None
    record: dict[str, Any] = field(default_factory=dict)


def _signature(message: Message) -> str:
    """What a message says, whatever id a call gave it."""
    return json.dumps(
        [
            message.role.value,
            message.kind.value,
            [p.model_dump(mode="json") for p in message.parts],
        ],
        sort_keys=True,
    )


def assemble_calls(parsed: ParsedSession, calls: list[RecordedCall]) -> None:
    """Fill ``parsed``'s history, recorded usage and compactions from its calls."""
    context: list[Message] = []
    signatures: list[str] = []
    replacements: list[Replacement] = []
    made = 0
    last_prompt: int | None = None

    def add(message: Message, signature: str) -> str:
        nonlocal made
        fresh = construct(
            Message,
            role=message.role,
            parts=message.parts,
            message_id=derive_message_id(made, message.role, message.parts),
            kind=message.kind,
            turn_index=None,
            metadata=message.metadata,
        )
        made += 1
        context.append(fresh)
        signatures.append(signature)
        return fresh.message_id

    was_compacted = False
    for call in calls:
        inputs = [_signature(m) for m in call.inputs]
        continues = bool(signatures) and inputs[: len(signatures)] == signatures
        rewritten = bool(signatures) and bool(inputs) and inputs[0] == signatures[0]
        replaced = bool(context) and not continues and (call.compacted or rewritten)
        # Calls go on being marked while they use the compacted context: only the first is new.
        newly = call.compacted and not was_compacted and not continues
        was_compacted = call.compacted
        if replaced or newly:
            replacements.append(
                Replacement(
                    compaction_id=call.call_id,
                    replaced=context,
                    at=call.at,
                    tokens_before=last_prompt,
                    tokens_after=call.usage.prompt_tokens if call.usage else None,
                    summary=call.summary,
                    metadata={"marked": call.compacted, **call.record},
                )
            )
            context, signatures = [], []
            new = list(zip(call.inputs, inputs, strict=True))
        elif continues:
            new = list(zip(call.inputs, inputs, strict=True))[len(context) :]
        else:
            new = list(zip(call.inputs, inputs, strict=True))
        for message, signature in new:
            add(message, signature)
        first_output = None
        for message in call.outputs:
            made_id = add(message, _signature(message))
            first_output = first_output or made_id
        if call.usage is not None:
            parsed.recorded_usage.append(call.usage.model_copy(update={"message_id": first_output}))
            last_prompt = call.usage.prompt_tokens
    parsed.history = context
    if parsed.recorded_usage:
        parsed.recorded_prompt_tokens = parsed.recorded_usage[-1].prompt_tokens
    settle_replacements(parsed, replacements)
