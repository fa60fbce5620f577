"""Anthropic Messages: ``tool_use`` / ``tool_result`` blocks, thinking and compaction blocks.

A user message made only of tool results becomes a TOOL message, as JAATO's Anthropic provider
stores it; one that mixes results and text stays a user message carrying both (it still counts
as a tool result, so it never starts a turn).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gcengine._fast import construct
from gcengine._json import (
    default_if_null,
    expect_list,
    expect_mapping,
    expect_str,
    json_type,
    parse_count,
    show,
    text_or_none,
)
from gcengine.errors import JsonPath, SessionFormatError
from gcengine.formats.common import ParsedSession, image_part_from_url, text_of_blocks
from gcengine.messages import (
    FunctionCall,
    FunctionResponse,
    InlineData,
    Message,
    MessageKind,
    Part,
    PartType,
    Role,
    derive_message_id,
)
from gcengine.session import SourceFormat, SystemInstruction

_TEXT = frozenset({"text"})
ANTHROPIC_BLOCK_TYPES = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "compaction"}
)


def looks_like_anthropic(data: Any) -> bool:
    """Anthropic exports carry ``system`` at the top, or blocks only Anthropic uses."""
    if isinstance(data, Mapping):
        if "system" in data:
            return True
        model = data.get("model")
        if isinstance(model, str) and model.lower().startswith("claude"):
            return True
        messages = data.get("messages")
    else:
        messages = data
    if not isinstance(messages, list):
        return False
    return any(
        isinstance(block, Mapping) and text_or_none(block.get("type")) in ANTHROPIC_BLOCK_TYPES
        for message in messages
        if isinstance(message, Mapping) and isinstance(message.get("content"), list)
        for block in message["content"]
    )


def read_messages(data: Any) -> ParsedSession:
    if isinstance(data, Mapping):
        container: Mapping[str, Any] = data
        raw_messages = expect_list(data.get("messages"), ("messages",))
        base: JsonPath = ("messages",)
    else:
        container, raw_messages, base = {}, data, ()
    parsed = ParsedSession(source_format=SourceFormat.ANTHROPIC_MESSAGES, history=[])
    parsed.model = expect_str(container.get("model"), ("model",), optional=True)
    system = container.get("system")
    if system:
        parsed.system_instructions.append(
            SystemInstruction(
                key="system", label="System prompt", text=text_of_blocks(system, ("system",), _TEXT)
            )
        )
    parsed.recorded_prompt_tokens = _prompt_tokens(container)
    call_names: dict[str, str] = {}
    for position, raw in enumerate(raw_messages):
        path = (*base, position)
        message = expect_mapping(raw, path)
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise SessionFormatError(
                f"{show(role)} is not a message role (user, assistant)", (*path, "role")
            )
        parts = read_blocks(message.get("content"), (*path, "content"), call_names)
        if not parts:
            raise SessionFormatError("the message has no content", (*path, "content"))
        if role == "assistant":
            mapped = Role.MODEL
        elif all(part.type is PartType.FUNCTION_RESPONSE for part in parts):
            mapped = Role.TOOL
        else:
            mapped = Role.USER
        parsed.history.append(
            construct(
                Message,
                role=mapped,
                parts=parts,
                message_id=derive_message_id(position, mapped, parts),
                kind=MessageKind.CHAT,
                turn_index=None,
                metadata={},
            )
        )
    return parsed


def _prompt_tokens(container: Mapping[str, Any]) -> int | None:
    """Anthropic reports cached input apart from ``input_tokens``; the prompt is all three."""
    usage = container.get("usage")
    if not isinstance(usage, Mapping) or "input_tokens" not in usage:
        return None
    keys = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    return sum(parse_count(usage[k], ("usage", k)) for k in keys if usage.get(k) is not None)


def read_blocks(content: Any, path: JsonPath, call_names: dict[str, str]) -> list[Part]:
    """A message's content (a string or a list of blocks) as parts; ``call_names`` collects
    each tool call's name by id, so the results that follow are named too."""
    if isinstance(content, str):
        return [Part.from_text(content)] if content else []
    if not isinstance(content, list):
        raise SessionFormatError(
            f"must be a string or a list of content blocks, not {json_type(content)}", path
        )
    parts = []
    for position, raw in enumerate(expect_list(content, path)):
        block_path = (*path, position)
        block = expect_mapping(raw, block_path)
        parts.append(_block(block, block_path, call_names))
    return parts


def _block(block: Mapping[str, Any], path: JsonPath, call_names: dict[str, str]) -> Part:
    kind = text_or_none(block.get("type"))
    rest = {k: v for k, v in block.items() if k != "type"}
    if kind == "text":
        visible = Part.from_text(str(expect_str(block.get("text"), (*path, "text"))))
        return _with_extra(visible, rest, "text")
    if kind == "tool_use":
        call_id = str(expect_str(block.get("id"), (*path, "id")))
        name = str(expect_str(block.get("name"), (*path, "name")))
        call_names[call_id] = name
        arguments = default_if_null(block.get("input"), {})
        call = FunctionCall(
            id=call_id, name=name, args=dict(expect_mapping(arguments, (*path, "input")))
        )
        return _with_extra(Part.from_function_call(call), rest, "id", "name", "input")
    if kind == "tool_result":
        call_id = str(expect_str(block.get("tool_use_id"), (*path, "tool_use_id")))
        is_error = block.get("is_error", False)
        if not isinstance(is_error, bool):
            raise SessionFormatError(
                f"must be true or false, not {json_type(is_error)}", (*path, "is_error")
            )
        result = block.get("content", "")
        if isinstance(result, list) and all(
            isinstance(b, Mapping) and b.get("type") == "text" for b in result
        ):
            result = text_of_blocks(result, (*path, "content"), _TEXT)
        elif result is not None and not isinstance(result, str | list):
            raise SessionFormatError(
                f"must be a string or a list of blocks, not {json_type(result)}", (*path, "content")
            )
        response = FunctionResponse(
            call_id=call_id,
            name=call_names.get(call_id, ""),
            result=result,
            is_error=is_error,
            extra={
                k: v for k, v in rest.items() if k not in ("tool_use_id", "content", "is_error")
            },
        )
        return Part.from_function_response(response)
    if kind == "thinking":
        text = str(expect_str(block.get("thinking"), (*path, "thinking")))
        return Part.from_thought(text, {k: v for k, v in rest.items() if k != "thinking"})
    if kind == "image":
        source = expect_mapping(block.get("source"), (*path, "source"))
        if source.get("type") == "base64":
            media = str(expect_str(source.get("media_type"), (*path, "source", "media_type")))
            data = str(expect_str(source.get("data"), (*path, "source", "data")))
            return Part.from_inline_data(InlineData(mime_type=media, data=data))
        if source.get("type") == "url":
            return image_part_from_url(str(expect_str(source.get("url"), (*path, "source", "url"))))
        return Part.from_opaque("image", rest)
    if kind is not None:
        # redacted_thinking, compaction, server tool blocks: kept whole, never shown as text.
        return Part.from_opaque(kind, rest)
    raise SessionFormatError(
        f"a content block needs a type, not {json_type(block.get('type'))}", (*path, "type")
    )


def _with_extra(part: Part, fields: Mapping[str, Any], *read: str) -> Part:
    """Keep a block's fields the part has no place for (``cache_control``, ``citations``)."""
    extra = {k: v for k, v in fields.items() if k not in read}
    return part.model_copy(update={"extra": extra}) if extra else part
