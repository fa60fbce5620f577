"""Reading and writing session files, whatever produced them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gcengine._json import find_non_finite, json_type
from gcengine.errors import SessionFormatError
from gcengine.formats import (
    anthropic,
    claude_code,
    codex,
    jaato,
    langfuse,
    openai,
    openhands,
    otel,
    swe_agent,
)
from gcengine.formats.common import (
    DEFAULT_LIMITS,
    Archive,
    LoadLimits,
    ParsedSession,
    SessionSource,
    assemble,
    decode_source,
)
from gcengine.session import Session, SourceFormat
from gcengine.tokens import TokenCounter

__all__ = [
    "READABLE_CONTAINERS",
    "READABLE_FORMATS",
    "LoadLimits",
    "ReadableFormat",
    "SessionSource",
    "detect_and_parse",
    "dump_in_source_format",
    "dump_session",
    "load_session",
    "source_export_suffix",
]


@dataclass(frozen=True)
class ReadableFormat:
    """A format ``load_session`` reads: what people call it and what holds it. The one list
    the engine's refusals and the dashboard's upload page both name formats from."""

    source_format: SourceFormat
    name: str
    holds: str


READABLE_FORMATS: tuple[ReadableFormat, ...] = (
    ReadableFormat(SourceFormat.JAATO, "JAATO session file", "1.x, 2.1, 2.10, or its history"),
    ReadableFormat(SourceFormat.JAATO_BUDGET_SNAPSHOT, "JAATO budget snapshot", "its entries"),
    ReadableFormat(SourceFormat.OPENAI_CHAT, "OpenAI Chat Completions", "messages (JSON)"),
    ReadableFormat(SourceFormat.OPENAI_RESPONSES, "OpenAI Responses", "items (JSON)"),
    ReadableFormat(SourceFormat.ANTHROPIC_MESSAGES, "Anthropic Messages", "messages (JSON)"),
    ReadableFormat(
        SourceFormat.CLAUDE_CODE,
        "Claude Code transcript",
        "<session>.jsonl, with its subagents/agent-*.jsonl files",
    ),
    ReadableFormat(SourceFormat.CODEX, "Codex CLI rollout", "rollout-*.jsonl"),
    ReadableFormat(SourceFormat.OTEL_GENAI, "OpenTelemetry GenAI spans", "OTLP JSON"),
    ReadableFormat(SourceFormat.LANGFUSE, "Langfuse export", "a trace with its observations"),
    ReadableFormat(SourceFormat.OPENHANDS, "OpenHands event stream", "events (JSON)"),
    ReadableFormat(SourceFormat.SWE_AGENT, "SWE-agent trajectory", ".traj"),
)

# What holds several files of one session together, read as one upload.
READABLE_CONTAINERS: tuple[str, ...] = (
    "a zip of a session with its sub-agents' files",
    "a Claude Code session's files chosen or dropped together, or its folder",
)

_WHAT_WE_READ = "one of: " + ", ".join(f"{f.name} ({f.holds})" for f in READABLE_FORMATS)


def detect_and_parse(data: Any) -> ParsedSession:
    """Pick the reader from the shape of the data; the first reader that claims it wins."""
    if isinstance(data, Archive):
        if len(data.members) == 1:
            return detect_and_parse(next(iter(data.members.values())))
        return claude_code.read_archive(data)
    if isinstance(data, Mapping):
        if otel.looks_like_otel(data):
            return otel.read_spans(data)
        if langfuse.looks_like_langfuse(data):
            return langfuse.read_export(data)
        if claude_code.looks_like_claude_code([data]):  # a file of one line is plain JSON
            return claude_code.read_transcript([data])
        if codex.looks_like_codex([data]):
            return codex.read_rollout([data])
        if swe_agent.looks_like_swe_agent(data):
            return swe_agent.read_trajectory(data)
        if openhands.looks_like_openhands(data):
            return openhands.read_events(data)
        if jaato.looks_like_session_file(data):
            return jaato.read_session_file(data)
        if jaato.looks_like_budget_snapshot(data):
            return jaato.read_budget_snapshot(data)
        if "messages" in data:
            if anthropic.looks_like_anthropic(data):
                return anthropic.read_messages(data)
            return openai.read_chat_completions(data)
        if any(isinstance(data.get(key), list) for key in ("items", "input", "output")):
            return openai.read_responses_items(data)
        if "history" in data:
            raise SessionFormatError("a JAATO session file needs a version", ("version",))
        raise SessionFormatError(f"not a session this engine reads: expected {_WHAT_WE_READ}")
    if isinstance(data, list):
        if not data:
            raise SessionFormatError("the file holds an empty list: there is no conversation")
        if claude_code.looks_like_claude_code(data):
            return claude_code.read_transcript(data)
        if codex.looks_like_codex(data):
            return codex.read_rollout(data)
        if otel.looks_like_otel(data):
            return otel.read_spans(data)
        if langfuse.looks_like_langfuse(data):
            return langfuse.read_export(data)
        if openhands.looks_like_openhands(data):
            return openhands.read_events(data)
        if openai.looks_like_responses_items(data):
            return openai.read_responses_items(data)
        if anthropic.looks_like_anthropic(data):
            return anthropic.read_messages(data)
        if jaato.looks_like_history(data):
            return jaato.read_history(data)
        return openai.read_chat_completions(data)
    raise SessionFormatError(
        f"not a session this engine reads ({json_type(data)}): expected {_WHAT_WE_READ}"
    )


def load_session(
    source: SessionSource,
    *,
    counter: TokenCounter | None = None,
    limits: LoadLimits = DEFAULT_LIMITS,
) -> Session:
    """Read a session from bytes, JSON text, a parsed dict or list, or a path object.

    A ``str`` is always the document's text, never a file name: pass a ``pathlib.Path``.

    The format is detected from the content. Without ``counter`` the best offline counter for
    the session's model is used (``Session.token_counter`` names it). Raises
    ``SessionFormatError`` (and nothing else) for input it cannot read.
    """
    data = decode_source(source, limits)
    # The file's bytes or text go once decoded, if the caller handed over its only reference
    # (``load_session(upload.pop())``): a 45 MB file is not held through counting its tokens.
    del source
    parsed = detect_and_parse(data)
    # The decoded JSON's objects and lists go now; the session keeps the strings it holds.
    del data
    if len(parsed.history) > limits.max_messages:
        raise SessionFormatError(
            f"the session has {len(parsed.history):,} messages; "
            f"the limit is {limits.max_messages:,}"
        )
    return assemble(parsed, counter)


def dump_session(session: Session, *, indent: int | None = 2) -> str:
    """The session as a JAATO 2.1 file; ``load_session`` of the result gives an equal session.

    ``indent=None`` writes it compact, without a space between tokens: an indented export of a
    large session is half again its size, too large to upload again under the limit that let
    the original in. Always valid JSON: a session holding NaN or Infinity (built in code; a load
    refuses them) is refused, naming where."""
    written = jaato.write_session_file(session)
    separators = (",", ":") if indent is None else None
    try:
        return json.dumps(
            written, indent=indent, separators=separators, ensure_ascii=False, allow_nan=False
        )
    except ValueError:
        found = find_non_finite(written)
        assert found is not None
        raise SessionFormatError(*found) from None


# The formats a session can be written back in, with the file name's ending for each.
_SOURCE_WRITERS = {SourceFormat.CLAUDE_CODE: (claude_code.write_transcript, "jsonl")}


def source_export_suffix(session: Session) -> str | None:
    """The file ending of ``dump_in_source_format``'s output for ``session``, or None when its
    format cannot be written back (only JAATO's own file can then hold it)."""
    writer = _SOURCE_WRITERS.get(session.source_format)
    return writer[1] if writer else None


def dump_in_source_format(session: Session) -> str | None:
    """The session in the format it was read from, where that format can hold a collected
    context and be resumed from (a Claude Code transcript: ``claude_code.write_transcript``);
    None for the others."""
    writer = _SOURCE_WRITERS.get(session.source_format)
    return writer[0](session) if writer else None
