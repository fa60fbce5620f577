"""What every format reader shares: decoding the input, limits, and assembling a ``Session``."""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import stat
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from gcengine._fast import set_fresh
from gcengine._json import (
    NOT_TAKEN,
    UnreadableValue,
    describe_syntax_error,
    find_non_finite,
    json_type,
    loads_fast,
    loads_strict,
    show,
    storable_check,
    text_or_none,
)
from gcengine.budget import InstructionBudget
from gcengine.context_limits import choose_window
from gcengine.errors import JsonPath, SessionFormatError
from gcengine.messages import InlineData, Message, MessageKind, Part, Turn, split_into_turns
from gcengine.session import (
    ContextLimitOrigin,
    InterruptedTurn,
    ObservedCompaction,
    RecordedUsage,
    Session,
    SourceFormat,
    Subagent,
    SystemInstruction,
    TurnAccounting,
    rebuild_budget,
    user_inputs_shared,
)
from gcengine.session.calibration import ProviderCounting, measure_provider_counting
from gcengine.tokens import ScaledCounter, TokenCounter, counter_for_model, model_encoding

SessionSource = bytes | bytearray | str | os.PathLike[str] | Mapping[str, Any] | list[Any]


@dataclass(frozen=True)
class LoadLimits:
    """Guards against inputs that would exhaust memory or the stack.

    The defaults are far above real sessions (a 10,000-turn session is about 45 MB) and well
    below what would hurt a server. Two limits hold for every load, whatever these say, because
    a session beyond them could be read but not stored: objects and lists nested more than
    ``MAX_NESTING`` (100) levels deep, counting JSON held in a string from where the string
    is, and strings holding a lone surrogate (``\\ud800``) are refused where they stand.
    """

    max_bytes: int = 256 * 1024 * 1024
    max_messages: int = 1_000_000
    max_archive_members: int = 10_000


DEFAULT_LIMITS = LoadLimits()


class JsonLines(list[Any]):
    """The records of a JSON Lines file, each with the label errors name it by (``line 12``)."""

    def __init__(self, records: list[Any], labels: list[str]) -> None:
        super().__init__(records)
        self.labels = labels


def record_step(records: list[Any], position: int) -> str | int:
    """How an error names record ``position``: its line in a JSON Lines file, else its index."""
    if isinstance(records, JsonLines):
        return records.labels[position]
    return position


@dataclass(frozen=True)
class Archive:
    """A zip archive's members, decoded (a session with its sub-agents' transcripts)."""

    members: dict[str, Any]


_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_ARCHIVE_LITTER = ("__MACOSX/", ".DS_Store")


def decode_source(source: SessionSource, limits: LoadLimits) -> Any:
    """Turn any accepted input into decoded JSON, with a clear error for everything else."""
    if isinstance(source, Mapping | list):
        # Decoded elsewhere, perhaps by a reader that lets NaN through: refused here as in text.
        found = find_non_finite(source)
        if found is not None:
            raise SessionFormatError(*found)
        try:
            storable_check(source)
        except UnreadableValue as error:
            raise SessionFormatError(error.reason, error.path) from None
        return source
    if isinstance(source, os.PathLike):
        return decode_source(_read_path(Path(source), limits), limits)
    if isinstance(source, str):
        if not source.strip():
            raise SessionFormatError("the input is empty")
        # Text is always the document: only a path object names a file, so text that came
        # from a user can never make the caller read a file.
        _check_size(len(source), limits, lambda: len(source.encode()))
        return _parse_json_text(source, limits)
    if isinstance(source, bytes | bytearray):
        _check_size(len(source), limits, lambda: len(source))
        if bytes(source[:4]) in _ZIP_MAGIC:
            return _read_archive(bytes(source), limits)
        return _parse_json_bytes(bytes(source), limits)
    raise SessionFormatError(f"cannot read a session from {type(source).__name__}")


def _utf8(data: bytes, where: str | None) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise SessionFormatError(
            f"the file is not UTF-8 text (invalid byte at offset {error.start})",
            (where,) if where else (),
        ) from None


def _read_archive(data: bytes, limits: LoadLimits) -> Archive:
    """The JSON members of a zip, read in memory, never written anywhere.

    Refused: more members than the limit, more uncompressed bytes than ``max_bytes`` (checked
    while reading too, so a member cannot lie about its size), names that could point outside
    a folder (absolute, ``..``, backslashes, drive letters), links and encrypted members.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as error:
        raise SessionFormatError(f"not a readable zip archive: {error}") from None
    with archive:
        entries = [e for e in archive.infolist() if not e.is_dir() and not _is_litter(e.filename)]
        if len(entries) > limits.max_archive_members:
            raise SessionFormatError(
                f"the archive has {len(entries):,} files; the limit is "
                f"{limits.max_archive_members:,}"
            )
        if not entries:
            raise SessionFormatError("the archive holds no files")
        declared = sum(entry.file_size for entry in entries)
        if declared > limits.max_bytes:
            raise SessionFormatError(
                f"the archive unpacks to {declared:,} bytes; the limit is {limits.max_bytes:,}"
            )
        members: dict[str, Any] = {}
        budget = limits.max_bytes
        for entry in entries:
            name = entry.filename
            _check_member(entry)
            try:
                with archive.open(entry) as member:
                    content = member.read(budget + 1)
            except (
                zipfile.BadZipFile,
                zlib.error,
                EOFError,
                OSError,
                NotImplementedError,  # a compression method Python lacks
                RuntimeError,  # a password is needed
            ) as error:
                raise SessionFormatError(f"cannot unpack: {error}", (name,)) from None
            budget -= len(content)
            if budget < 0:
                raise SessionFormatError(
                    f"the archive unpacks to more than {limits.max_bytes:,} bytes", (name,)
                )
            members[name] = _parse_json_bytes(content, limits, name)
    return Archive(members)


def _is_litter(name: str) -> bool:
    """Files a desktop's zip tool adds on its own."""
    return name.startswith(_ARCHIVE_LITTER[0]) or name.rsplit("/", 1)[-1] == _ARCHIVE_LITTER[1]


def _check_member(entry: zipfile.ZipInfo) -> None:
    name = entry.filename
    steps = name.split("/")
    if (
        name.startswith("/")
        or "\\" in name
        or "\x00" in name
        or ".." in steps
        or (len(name) > 1 and name[1] == ":")
    ):
        raise SessionFormatError("a file name that points outside the archive's folder", (name,))
    if stat.S_ISLNK(entry.external_attr >> 16):
        raise SessionFormatError("a link, not a file", (name,))
    if entry.flag_bits & 0x1:
        raise SessionFormatError("an encrypted file", (name,))
    if not name.endswith(".jsonl") and not name.endswith(".json"):
        raise SessionFormatError(
            "not a transcript: the archive may hold only .jsonl files", (name,)
        )


def _check_size(length: int, limits: LoadLimits, exact: Callable[[], int]) -> None:
    """Refuse input over the limit; ``exact`` is consulted only when ``length`` may undercount
    (characters of text, which take up to four bytes each)."""
    if length > limits.max_bytes or (length * 4 > limits.max_bytes and exact() > limits.max_bytes):
        size = max(length, exact())
        raise SessionFormatError(f"the input is {size:,} bytes; the limit is {limits.max_bytes:,}")


def _read_path(path: Path, limits: LoadLimits) -> bytes:
    try:
        size = path.stat().st_size
        if size > limits.max_bytes:
            raise SessionFormatError(f"{path} is {size:,} bytes; the limit is {limits.max_bytes:,}")
        return path.read_bytes()
    except (OSError, ValueError) as error:  # ValueError: a NUL byte in the path
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise SessionFormatError(f"cannot read {str(path)!r}: {reason}") from None


def _parse_json_bytes(data: bytes, limits: LoadLimits, where: str | None = None) -> Any:
    """A file's JSON, read from its bytes when it is plain UTF-8 JSON: never decoded to one
    string as large as the file first. Anything else (a byte-order mark, another encoding,
    JSON Lines, a mistake to report) is decoded and read as text."""
    value = loads_fast(data)
    if value is not NOT_TAKEN:
        return value
    return _parse_json_text(_utf8(data, where), limits, where)


def _parse_json_text(text: str, limits: LoadLimits, where: str | None = None) -> Any:
    at: JsonPath = (where,) if where else ()
    if not text.strip():
        raise SessionFormatError("the file is empty", at)
    try:
        return loads_strict(text)
    except json.JSONDecodeError as error:
        if error.msg == "Extra data":
            lines = _parse_json_lines(text, where)
            if lines is not None:
                return lines
        raise SessionFormatError(describe_syntax_error(error), at) from None
    except UnreadableValue as error:
        raise SessionFormatError(error.reason, (*at, *error.path)) from None


def _parse_json_lines(text: str, where: str | None) -> JsonLines | None:
    """JSON Lines (one value a line), as agents store transcripts; None when even the first
    line is not a JSON value of its own. A later line that is not JSON is refused by number."""
    records: list[Any] = []
    labels: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        label = f"{where} line {number}" if where else f"line {number}"
        try:
            # A record sits in the list of records, one level down, as it is read.
            records.append(loads_strict(line, enclosing=1))
        except json.JSONDecodeError as error:
            if not records:
                return None
            raise SessionFormatError(describe_syntax_error(error, line=False), (label,)) from None
        except UnreadableValue as error:
            raise SessionFormatError(error.reason, (label, *error.path)) from None
        labels.append(label)
    return JsonLines(records, labels)


def validate_model[M: BaseModel](model: type[M], data: Any, path: JsonPath) -> M:
    """Validate a sub-object with pydantic, reporting the first problem at its JSON path."""
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise _located(error, path) from None


@functools.cache  # bounded pure memo: one TypeAdapter per model class
def _list_adapter(model: type[BaseModel]) -> TypeAdapter[list[Any]]:
    return TypeAdapter(list[model])  # type: ignore[valid-type]


def validate_models[M: BaseModel](model: type[M], data: Any, path: JsonPath) -> list[M]:
    """Validate a list of sub-objects in one call (one per turn adds up on long sessions)."""
    try:
        return _list_adapter(model).validate_python(data)
    except ValidationError as error:
        raise _located(error, path) from None


_PYDANTIC_REASONS = {
    "model_type": "must be an object",
    "dict_type": "must be an object",
    "model_attributes_type": "must be an object",
    "list_type": "must be a list",
    "int_type": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "greater_than_equal": "must not be negative",
    "missing": "is required",
}


def _located(error: ValidationError, path: JsonPath) -> SessionFormatError:
    first = error.errors()[0]
    location = tuple(step for step in first["loc"] if isinstance(step, str | int))
    reason = _PYDANTIC_REASONS.get(first["type"], first["msg"].lower())
    if first["type"] != "missing":
        reason = f"{reason}, not {show(first.get('input'))}"
    return SessionFormatError(reason, (*path, *location))


def text_of_blocks(value: Any, path: JsonPath, text_types: frozenset[str]) -> str:
    """Join the text of a content value that is a string or a list of text blocks."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise SessionFormatError(
            f"must be a string or a list of text blocks, not {json_type(value)}", path
        )
    texts = []
    for position, block in enumerate(value):
        if not isinstance(block, Mapping) or text_or_none(block.get("type")) not in text_types:
            raise SessionFormatError("must be a text block", (*path, position))
        text = block.get("text")
        if not isinstance(text, str):
            raise SessionFormatError("must be a string", (*path, position, "text"))
        texts.append(text)
    return "\n".join(texts)


def image_part_from_url(url: str, mime_type: str = "image/*") -> Part:
    """A data URL keeps its bytes; a web URL is kept as a reference (counted like any image)."""
    if url.startswith("data:") and ";base64," in url:
        header, payload = url[5:].split(";base64,", 1)
        return Part.from_inline_data(InlineData(mime_type=header or mime_type, data=payload))
    return Part.from_inline_data(InlineData(mime_type=mime_type, data=url, extra={"url": True}))


@dataclass
class ParsedSession:
    """What a reader found, before the engine assembles it into a ``Session``."""

    source_format: SourceFormat
    history: list[Message]
    format_version: str | None = None
    session_id: str | None = None
    model: str | None = None
    file_context_limit: int | None = None
    system_instructions: list[SystemInstruction] = field(default_factory=list)
    recorded_budget: InstructionBudget | None = None
    recorded_prompt_tokens: int | None = None
    turn_accounting: list[TurnAccounting] = field(default_factory=list)
    user_inputs: list[str] = field(default_factory=list)
    interrupted_turn: InterruptedTurn | None = None
    description: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    context_limit_origin: ContextLimitOrigin | None = None
    context_limit_source: str | None = None
    provider_counting: ProviderCounting | None = None
    recorded_usage: list[RecordedUsage] = field(default_factory=list)
    compactions: list[ObservedCompaction] = field(default_factory=list)
    subagents: list[Subagent] = field(default_factory=list)


def derived_session_id(history: list[Message]) -> str:
    """Files without an id get one from their content: the same file always gets the same id."""
    digest = hashlib.sha256("\n".join(m.message_id for m in history).encode()).hexdigest()
    return f"imported_{digest[:16]}"


def stamp_turn_indices(history: list[Message]) -> None:
    """Give each turn of an upload its stable index (the reader's messages are fresh, so
    they are stamped in place).

    A first upload numbers every turn by position, summaries and notices included, except that
    a tool call and its result always share a turn (``_numbers_keeping_pairs``). A file this
    engine wrote already carries indices: there, summaries and notices a collector inserted
    keep having none, and only new conversation turns are numbered, after the rest.
    """
    first_upload = all(message.turn_index is None for message in history)
    turns = split_into_turns(history)
    numbers = _numbers_keeping_pairs(turns) if first_upload else [t.index for t in turns]
    for turn, index in zip(turns, numbers, strict=True):
        if index is None:
            continue
        for message in turn.messages:
            if message.turn_index is None:
                set_fresh(message, "turn_index", index)


def _numbers_keeping_pairs(turns: list[Turn]) -> list[int | None]:
    """Turn numbers by position, where a turn holding the result of a call made in an earlier
    turn is one turn with it and every turn between (results matched to calls as
    ``tool_pair_problems`` matches them).

    A user message can arrive between a call and its result (the user typed while a tool
    ran); by JAATO's rule it starts a turn, and a collection that removes whole turns would
    then part the pair. Summaries and notices always stand alone.
    """
    reaches = list(range(len(turns)))  # the earliest turn each turn must be one with
    waiting: dict[str, list[int]] = {}  # unanswered calls by id, matched as the report does
    for position, turn in enumerate(turns):
        for message in turn.messages:
            for part in message.parts:
                response, call = part.function_response, part.function_call
                if response is not None and response.call_id in waiting:
                    calls = waiting[response.call_id]
                    reaches[position] = min(reaches[position], calls.pop(0))
                    if not calls:
                        del waiting[response.call_id]
                if call is not None and call.id:
                    waiting.setdefault(call.id, []).append(position)
    numbers: list[int | None] = []
    lowest = len(turns)
    starts = [False] * len(turns)
    for position in range(len(turns) - 1, -1, -1):
        lowest = min(lowest, reaches[position])
        alone = turns[position].kind is not MessageKind.CHAT or (
            position and turns[position - 1].kind is not MessageKind.CHAT
        )
        starts[position] = lowest >= position or bool(alone)
        if starts[position]:
            lowest = position
    number = -1
    for start in starts:
        number += start
        numbers.append(number)
    return numbers


def assemble(parsed: ParsedSession, counter: TokenCounter | None) -> Session:
    """Stamp stable turn indices, settle the context limit and build the budget."""
    history = parsed.history
    stamp_turn_indices(history)
    window = choose_window(
        parsed.model,
        file_limit=parsed.file_context_limit,
        peak_prompt=max((u.prompt_tokens for u in parsed.recorded_usage), default=None),
        auto_compactions=[
            c.tokens_before
            for c in parsed.compactions
            if c.trigger == "auto" and c.tokens_before is not None
        ],
    )
    limit, origin = window.limit, ContextLimitOrigin(window.origin)
    if parsed.file_context_limit is not None:
        origin = parsed.context_limit_origin or ContextLimitOrigin.FILE
    calibration = None
    if counter is None:
        counter = counter_for_model(parsed.model)
        calibration = parsed.provider_counting or provider_counting(parsed, counter)
        if calibration is not None:
            counter = ScaledCounter(counter, calibration.factor)
    session_id = parsed.session_id or derived_session_id(history)
    session = Session.model_construct(  # type: ignore[call-arg]  # budget is set below
        session_id=session_id,
        source_format=parsed.source_format,
        format_version=parsed.format_version,
        model=parsed.model,
        context_limit=limit,
        context_limit_origin=origin,
        context_limit_source=(
            parsed.context_limit_source
            if parsed.file_context_limit is not None and parsed.context_limit_source
            else window.source
            if origin.value == window.origin
            else None
        ),
        description=parsed.description,
        created_at=parsed.created_at,
        updated_at=parsed.updated_at,
        history=history,
        system_instructions=parsed.system_instructions,
        recorded_budget=parsed.recorded_budget,
        recorded_prompt_tokens=parsed.recorded_prompt_tokens,
        turn_accounting=parsed.turn_accounting,
        user_inputs=user_inputs_shared(parsed.user_inputs, history),
        interrupted_turn=parsed.interrupted_turn,
        recorded_usage=parsed.recorded_usage,
        compactions=parsed.compactions,
        subagents=parsed.subagents,
        metadata=parsed.metadata,
        extra=parsed.extra,
        token_counter=counter.name,
        unseen_overhead=calibration.overhead if calibration is not None else None,
        context_overheads=list(calibration.overheads) if calibration is not None else [],
        warnings=parsed.warnings,
    )
    session.budget = rebuild_budget(session, counter)
    return session


def provider_counting(parsed: ParsedSession, counter: TokenCounter) -> ProviderCounting | None:
    """The provider's counting measured from the calls a Claude Code file recorded, where
    ``counter`` only estimates the model's (``gcengine.session.calibration``); None elsewhere.

    Only Claude Code files so far: each of their calls records its whole prompt (cached or
    not) and names the first message it produced, which places it in the conversation.
    """
    if parsed.source_format is not SourceFormat.CLAUDE_CODE or not parsed.recorded_usage:
        return None
    if model_encoding(parsed.model) is not None:
        return None
    contexts = [compaction.replaced for compaction in parsed.compactions] + [parsed.history]
    return measure_provider_counting(contexts, parsed.recorded_usage, counter)


@dataclass
class Replacement:
    """A compaction that replaced the agent's whole context, as a reader found it; the turns
    around it are numbered before it becomes an ``ObservedCompaction``."""

    compaction_id: str
    replaced: list[Message]
    at: str | None = None
    trigger: str | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    summary: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def settle_replacements(parsed: ParsedSession, replacements: list[Replacement]) -> None:
    """Number the turns of every context in the order the agent held them (each replaced
    context, then the history), then record each compaction before the context that followed
    it, with the summary message there, if any, at its start."""
    contexts = [r.replaced for r in replacements] + [parsed.history]
    stamp_turn_indices([message for context in contexts for message in context])
    for number, found in enumerate(replacements):
        after = contexts[number + 1]
        first = after[0] if after else None
        summary = next((m for m in after[:3] if m.kind is MessageKind.SUMMARY), None)
        parsed.compactions.append(
            ObservedCompaction(
                compaction_id=found.compaction_id,
                source_format=parsed.source_format,
                at=found.at,
                trigger=found.trigger,
                tokens_before=found.tokens_before,
                tokens_after=found.tokens_after,
                summary=found.summary,
                summary_message_id=summary.message_id if summary is not None else None,
                before_turn=first.turn_index if first is not None else None,
                before_message_id=first.message_id if first is not None else None,
                replaced=found.replaced,
                context_before=[message.message_id for message in found.replaced],
                metadata=found.metadata,
            )
        )
