"""SWE-agent trajectories (``.traj``): ``{environment, trajectory, history, info, ...}``.

``history`` is what the model was sent, message by message (OpenAI's shape, with SWE-agent's
own fields: ``agent``, ``message_type``, ``thought``, ``action``, ``is_demo``, kept in each
message's ``metadata``). The first system message is the system prompt; ``tool_calls`` are
answered by ``tool`` messages through ``tool_call_ids``. Everything else in the file (the
step-by-step ``trajectory``, ``info`` with ``model_stats``, the run configuration) is kept in
``Session.metadata["swe_agent"]``. SWE-agent records token totals for the whole run, not each
call's context, so nothing is recorded as usage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gcengine._fast import construct
from gcengine._json import expect_list, expect_mapping, expect_str, show, text_or_none
from gcengine.errors import JsonPath, SessionFormatError
from gcengine.formats.common import ParsedSession, text_of_blocks
from gcengine.formats.openai import assistant_calls, content_parts
from gcengine.messages import FunctionResponse, Message, MessageKind, Part, Role, derive_message_id
from gcengine.session import SourceFormat, SystemInstruction

_TEXT = frozenset({"text"})
_READ = frozenset(
    {"role", "content", "tool_calls", "tool_call_ids", "tool_call_id", "function_call"}
)


def looks_like_swe_agent(data: Any) -> bool:
    """A trajectory, or a demonstration holding only its history (messages SWE-agent marks with
    ``agent`` or ``message_type``)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("history"), list):
        return False
    return isinstance(data.get("trajectory"), list) or (
        "version" not in data
        and any(
            isinstance(m, Mapping) and ("message_type" in m or "agent" in m)
            for m in data["history"][:20]
        )
    )


def read_trajectory(data: Mapping[str, Any]) -> ParsedSession:
    parsed = ParsedSession(source_format=SourceFormat.SWE_AGENT, history=[])
    raw_history = expect_list(data.get("history"), ("history",))
    call_names: dict[str, str] = {}
    for position, raw in enumerate(raw_history):
        path: JsonPath = ("history", position)
        message = expect_mapping(raw, path)
        role = message.get("role")
        metadata = {k: v for k, v in message.items() if k not in _READ}
        if role == "system":
            parsed.system_instructions.append(
                SystemInstruction(
                    key=f"system_{len(parsed.system_instructions)}",
                    label="System prompt",
                    text=text_of_blocks(message.get("content", ""), (*path, "content"), _TEXT),
                )
            )
            continue
        if role == "user":
            mapped, parts = Role.USER, content_parts(message.get("content"), (*path, "content"))
        elif role == "assistant":
            mapped = Role.MODEL
            parts = content_parts(message.get("content"), (*path, "content"))
            parts.extend(assistant_calls(message, path, call_names))
        elif role == "tool":
            mapped, parts = Role.TOOL, _results(message, path, call_names)
        else:
            raise SessionFormatError(
                f"{show(role)} is not a message role (system, user, assistant, tool)",
                (*path, "role"),
            )
        parsed.history.append(
            construct(
                Message,
                role=mapped,
                parts=parts,
                message_id=derive_message_id(position, mapped, parts),
                kind=MessageKind.CHAT,
                turn_index=None,
                metadata=metadata,
            )
        )
    if not parsed.history:
        raise SessionFormatError("the trajectory's history has no messages", ("history",))
    info = data.get("info")
    if isinstance(info, Mapping):
        stats = info.get("model_stats")
        parsed.model = text_or_none(stats.get("model")) if isinstance(stats, Mapping) else None
    parsed.metadata["swe_agent"] = {k: v for k, v in data.items() if k != "history"}
    return parsed


def _results(message: Mapping[str, Any], path: JsonPath, call_names: dict[str, str]) -> list[Part]:
    """A tool message answers each call it names; the text is the result of the first."""
    ids = message.get("tool_call_ids") or (
        [message["tool_call_id"]] if "tool_call_id" in message else []
    )
    ids = expect_list(ids, (*path, "tool_call_ids"))
    content = message.get("content", "")
    result = (
        content
        if not isinstance(content, list)
        else text_of_blocks(content, (*path, "content"), _TEXT)
    )
    if not ids:
        raise SessionFormatError(
            "a tool message names the call it answers", (*path, "tool_call_ids")
        )
    parts = []
    for index, raw in enumerate(ids):
        call_id = str(expect_str(raw, (*path, "tool_call_ids", index)))
        response = FunctionResponse(
            call_id=call_id, name=call_names.get(call_id, ""), result=result if index == 0 else ""
        )
        parts.append(Part.from_function_response(response))
    return parts
