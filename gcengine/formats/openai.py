"""OpenAI exports: Chat Completions ``messages`` and Responses / Agents SDK session items.

System and developer messages become system instructions (the budget's SYSTEM source), not
history: JAATO keeps them outside the conversation too, and they are never collected.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gcengine._fast import construct
from gcengine._json import (
    default_if_null,
    embedded_json,
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
    Message,
    MessageKind,
    Part,
    Role,
    derive_message_id,
)
from gcengine.session import SourceFormat, SystemInstruction

_SYSTEM_ROLES = {"system": "System prompt", "developer": "Developer prompt"}
_TEXT_TYPES = frozenset({"text", "input_text", "output_text"})
RESPONSES_ITEM_TYPES = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "reasoning",
        "compaction",
    }
)


def parse_arguments(value: Any, path: JsonPath) -> dict[str, Any]:
    """OpenAI sends tool arguments as a JSON string holding an object."""
    if isinstance(value, Mapping):
        return dict(value)
    text = expect_str(value, path) or ""
    if not text.strip():
        return {}
    parsed = embedded_json(text, path)
    if not isinstance(parsed, Mapping):
        raise SessionFormatError(f"must encode a JSON object, not {json_type(parsed)}", path)
    return dict(parsed)


def content_parts(content: Any, path: JsonPath) -> list[Part]:
    if content is None:
        return []
    if isinstance(content, str):
        return [Part.from_text(content)] if content else []
    if not isinstance(content, list):
        raise SessionFormatError(
            f"must be a string or a list of content parts, not {json_type(content)}", path
        )
    parts = []
    for position, raw in enumerate(expect_list(content, path)):
        block_path = (*path, position)
        block = expect_mapping(raw, block_path)
        kind = text_or_none(block.get("type"))
        if kind in _TEXT_TYPES:
            parts.append(Part.from_text(str(expect_str(block.get("text"), (*block_path, "text")))))
        elif kind == "refusal":
            refusal = expect_str(block.get("refusal"), (*block_path, "refusal"))
            parts.append(Part.from_text(str(refusal)))
        elif kind == "image_url":
            image = expect_mapping(block.get("image_url"), (*block_path, "image_url"))
            parts.append(
                image_part_from_url(
                    str(expect_str(image.get("url"), (*block_path, "image_url", "url")))
                )
            )
        elif kind == "input_image" and isinstance(block.get("image_url"), str):
            parts.append(image_part_from_url(block["image_url"]))
        elif kind is not None:
            parts.append(Part.from_opaque(kind, {k: v for k, v in block.items() if k != "type"}))
        else:
            raise SessionFormatError(
                f"a content part needs a type, not {json_type(block.get('type'))}",
                (*block_path, "type"),
            )
    return parts


def _usage_prompt_tokens(data: Mapping[str, Any], *keys: str) -> int | None:
    usage = data.get("usage")
    if not isinstance(usage, Mapping):
        return None
    for key in keys:
        if key in usage:
            return parse_count(usage[key], ("usage", key))
    return None


def read_chat_completions(data: Any) -> ParsedSession:
    if isinstance(data, Mapping):
        container: Mapping[str, Any] = data
        raw_messages = expect_list(data.get("messages"), ("messages",))
        base: JsonPath = ("messages",)
    else:
        container, raw_messages, base = {}, data, ()
    parsed = ParsedSession(source_format=SourceFormat.OPENAI_CHAT, history=[])
    parsed.model = expect_str(container.get("model"), ("model",), optional=True)
    parsed.recorded_prompt_tokens = _usage_prompt_tokens(container, "prompt_tokens")
    call_names: dict[str, str] = {}
    for position, raw in enumerate(raw_messages):
        path = (*base, position)
        message = expect_mapping(raw, path)
        role = text_or_none(message.get("role"))
        if role in _SYSTEM_ROLES:
            text = text_of_blocks(message.get("content"), (*path, "content"), _TEXT_TYPES)
            parsed.system_instructions.append(
                SystemInstruction(
                    key=f"{role}_{len(parsed.system_instructions)}",
                    label=_SYSTEM_ROLES[str(role)],
                    text=text,
                )
            )
            continue
        if role == "user":
            parts = content_parts(message.get("content"), (*path, "content"))
            mapped = Role.USER
        elif role == "assistant":
            parts = content_parts(message.get("content"), (*path, "content"))
            parts.extend(assistant_calls(message, path, call_names))
            mapped = Role.MODEL
        elif role in ("tool", "function"):
            parts = [_tool_result(message, path, call_names)]
            mapped = Role.TOOL
        else:
            raise SessionFormatError(
                f"{show(message.get('role'))} is not a chat role "
                "(system, developer, user, assistant, tool)",
                (*path, "role"),
            )
        if not parts:
            raise SessionFormatError("the message has no content and no tool calls", path)
        parsed.history.append(
            construct(
                Message,
                role=mapped,
                parts=parts,
                message_id=derive_message_id(position, mapped, parts),
                kind=MessageKind.CHAT,
                turn_index=None,
                metadata={"name": message["name"]} if isinstance(message.get("name"), str) else {},
            )
        )
    return parsed


def assistant_calls(
    message: Mapping[str, Any], path: JsonPath, call_names: dict[str, str]
) -> list[Part]:
    parts = []
    calls = default_if_null(message.get("tool_calls"), [])
    for position, raw in enumerate(expect_list(calls, (*path, "tool_calls"))):
        call_path = (*path, "tool_calls", position)
        call = expect_mapping(raw, call_path)
        function = expect_mapping(call.get("function"), (*call_path, "function"))
        call_id = expect_str(call.get("id"), (*call_path, "id"))
        name = str(expect_str(function.get("name"), (*call_path, "function", "name")))
        call_names[str(call_id)] = name
        arguments = parse_arguments(
            function.get("arguments", ""), (*call_path, "function", "arguments")
        )
        parts.append(Part.from_function_call(FunctionCall(id=call_id, name=name, args=arguments)))
    legacy = message.get("function_call")
    if legacy is not None:
        function = expect_mapping(legacy, (*path, "function_call"))
        name = str(expect_str(function.get("name"), (*path, "function_call", "name")))
        arguments = parse_arguments(
            function.get("arguments", ""), (*path, "function_call", "arguments")
        )
        parts.append(Part.from_function_call(FunctionCall(id=None, name=name, args=arguments)))
    return parts


def _tool_result(message: Mapping[str, Any], path: JsonPath, call_names: dict[str, str]) -> Part:
    if message.get("role") == "function":
        name = str(expect_str(message.get("name"), (*path, "name")))
        call_id = None
    else:
        call_id = str(expect_str(message.get("tool_call_id"), (*path, "tool_call_id")))
        name = call_names.get(call_id, "")
    content = message.get("content")
    if isinstance(content, list):
        content = text_of_blocks(content, (*path, "content"), _TEXT_TYPES)
    elif content is not None and not isinstance(content, str):
        raise SessionFormatError(f"must be a string, not {json_type(content)}", (*path, "content"))
    return Part.from_function_response(
        FunctionResponse(call_id=call_id, name=name, result=content or "")
    )


def looks_like_responses_items(items: list[Any]) -> bool:
    return any(
        isinstance(i, Mapping) and text_or_none(i.get("type")) in RESPONSES_ITEM_TYPES
        for i in items
    )


def read_responses_items(data: Any) -> ParsedSession:
    """Responses items: calls and outputs are separate items, so consecutive ones are merged."""
    container: Mapping[str, Any] = data if isinstance(data, Mapping) else {}
    key = next(
        (k for k in ("items", "input", "output") if isinstance(container.get(k), list)), None
    )
    items = container[key] if key else data
    base: JsonPath = (key,) if key else ()
    parsed = ParsedSession(source_format=SourceFormat.OPENAI_RESPONSES, history=[])
    parsed.model = expect_str(container.get("model"), ("model",), optional=True)
    parsed.recorded_prompt_tokens = _usage_prompt_tokens(container, "input_tokens")
    call_names: dict[str, str] = {}
    for position, raw in enumerate(expect_list(items, base)):
        path = (*base, position)
        read_responses_item(parsed, expect_mapping(raw, path), path, position, call_names)
    return parsed


def read_responses_item(
    parsed: ParsedSession,
    item: Mapping[str, Any],
    path: JsonPath,
    position: int,
    call_names: dict[str, str],
) -> None:
    """Add one Responses item to the history; ``position`` seeds a new message's id."""
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message":
        _responses_message(parsed, item, path, position)
    elif isinstance(kind, str) and kind in _CALL_ITEMS:
        call_id = str(expect_str(item.get("call_id"), (*path, "call_id")))
        if kind == "local_shell_call":
            name = "local_shell"
            args = dict(expect_mapping(item.get("action"), (*path, "action")))
        elif kind == "custom_tool_call":
            name = str(expect_str(item.get("name"), (*path, "name")))
            args = {"input": expect_str(item.get("input"), (*path, "input"))}
        else:
            name = str(expect_str(item.get("name"), (*path, "name")))
            args = parse_arguments(item.get("arguments", ""), (*path, "arguments"))
        call_names[call_id] = name
        part = Part.from_function_call(FunctionCall(id=call_id, name=name, args=args))
        extra = _item_extra(item, _CALL_ITEMS[kind])
        if extra:
            part = part.model_copy(update={"extra": extra})
        _append_to(parsed, Role.MODEL, part, position)
    elif kind in ("function_call_output", "custom_tool_call_output"):
        call_id = str(expect_str(item.get("call_id"), (*path, "call_id")))
        output = item.get("output")
        if isinstance(output, list):
            output = text_of_blocks(output, (*path, "output"), _TEXT_TYPES)
        response = FunctionResponse(
            call_id=call_id,
            name=call_names.get(call_id, ""),
            result=output,
            extra=_item_extra(item, ("call_id", "output")),
        )
        _append_to(parsed, Role.TOOL, Part.from_function_response(response), position)
    elif kind == "reasoning":
        summary = default_if_null(item.get("summary"), [])
        text = "\n".join(
            str(s.get("text", ""))
            for s in expect_list(summary, (*path, "summary"))
            if isinstance(s, Mapping)
        )
        extra = {k: v for k, v in item.items() if k not in ("type", "summary")}
        _append_to(parsed, Role.MODEL, Part.from_thought(text, extra), position)
    elif isinstance(kind, str):
        opaque = Part.from_opaque(kind, {k: v for k, v in item.items() if k != "type"})
        _append_to(parsed, Role.MODEL, opaque, position)
    else:
        raise SessionFormatError("an item needs a type (or a role)", (*path, "type"))


def _item_extra(item: Mapping[str, Any], read: tuple[str, ...]) -> dict[str, Any]:
    """An item's fields its part has no place for; a custom or shell item keeps its type."""
    extra = {k: v for k, v in item.items() if k not in read and k != "type"}
    if item.get("type") not in ("function_call", "function_call_output", None):
        extra["item_type"] = item["type"]
    return extra


# Items that call a tool, with the fields their call is read from (the rest is kept as extra).
_CALL_ITEMS = {
    "function_call": ("call_id", "name", "arguments"),
    "custom_tool_call": ("call_id", "name", "input"),
    "local_shell_call": ("call_id", "action"),
}


def _responses_message(
    parsed: ParsedSession, item: Mapping[str, Any], path: JsonPath, position: int
) -> None:
    role = text_or_none(item.get("role"))
    if role in _SYSTEM_ROLES:
        parsed.system_instructions.append(
            SystemInstruction(
                key=f"{role}_{len(parsed.system_instructions)}",
                label=_SYSTEM_ROLES[str(role)],
                text=text_of_blocks(item.get("content"), (*path, "content"), _TEXT_TYPES),
            )
        )
        return
    if role not in ("user", "assistant"):
        raise SessionFormatError(
            f"{show(item.get('role'))} is not a message role (system, developer, user, assistant)",
            (*path, "role"),
        )
    parts = content_parts(item.get("content"), (*path, "content"))
    if not parts:
        raise SessionFormatError("the message has no content", (*path, "content"))
    mapped = Role.USER if role == "user" else Role.MODEL
    if mapped is Role.MODEL:
        for part in parts:
            _append_to(parsed, Role.MODEL, part, position)
        return
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


def _append_to(parsed: ParsedSession, role: Role, part: Part, position: int) -> None:
    """Add a part to the last message when it has that role, else start a message.

    A model message that already got tool results after it is closed: the next call belongs
    to a new model message, as it would in the provider's own history.
    """
    last = parsed.history[-1] if parsed.history else None
    if last is not None and last.role is role:
        last.parts.append(part)
        return
    parsed.history.append(
        construct(
            Message,
            role=role,
            parts=[part],
            message_id=derive_message_id(position, role, [part]),
            kind=MessageKind.CHAT,
            turn_index=None,
            metadata={},
        )
    )
