"""The digest: a deterministic summary laid out as the state of the work, not its story.

An agent continuing after a compaction needs what it was asked to do, which files it read and
changed, which errors it met and whether they are fixed, what was decided, what is left, and
the names the work is about. The digest reads those from the turns (tool calls and their
results as Claude Code, JAATO and Codex write them, and the conversation's text) and writes
them in sections, filled by priority within the token cap:

1. the current task (the latest user request, with the ones before it when it says too
   little to stand alone: "continue");
2. the earlier summary it folds in;
3. open work (a todo list's items not completed, the user's requests no answer followed,
   sentences that leave work open: TODO, next step, remaining, blocked);
4. errors, open ones first, each with its status: an error is fixed when a later run of the
   same command, or of the same tool on the same file, succeeds;
5. decisions (the user's instructions, the agent's choices);
6. files, edited and created ones first, with what was done to each;
7. names: the paths, identifiers, codes and URLs the conversation and its tool calls named,
   most mentioned first (what a reader searches for when picking the work up again);
8. the user's earlier requests, newest first.

Each section first gets its share of the cap, then what is left goes to the sections in that
order; within a section lines are kept in order, whole, so the same turns and cap give the
same digest.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gcengine.anchors import argument_path, found_in
from gcengine.messages import Message, MessageKind, Role
from gcengine.text import sentences
from gcengine.tokens import TokenCounter, compact_json

if TYPE_CHECKING:  # the request type lives with the summarizers, which offer this one
    from gcengine.gc.summarizers import SummaryRequest

# Each section's share of the cap in the first pass, in priority order.
_SHARES: tuple[tuple[str, float], ...] = (
    ("Current task", 0.10),
    ("Earlier", 0.15),
    ("Open work", 0.08),
    ("Errors", 0.12),
    ("Decisions", 0.10),
    ("Files", 0.15),
    ("Names", 0.25),
    ("Earlier requests", 0.05),
)
_TASK_CHARS = 1200
# A request of fewer words leans on the one before it; at most this many make the task.
_TASK_WORDS = 6
_TASK_REQUESTS = 3
_LINE_CHARS = 240
_NAMES_PER_LINE = 12

_READ_TOOLS = re.compile(r"read|view|cat|open|glob|grep|search|find|list|ls", re.IGNORECASE)
_EDIT_TOOLS = re.compile(r"edit|replace|patch|update|modify|insert", re.IGNORECASE)
_WRITE_TOOLS = re.compile(r"write|create|save|add", re.IGNORECASE)
_PATCHED = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.MULTILINE)
_COMMAND_KEYS = ("command", "cmd")
_DONE_TODO = frozenset({"completed", "complete", "done", "cancelled"})
_USER_RULE = re.compile(
    r"\b(?:must|mustn't|never|don't|do not|always|only|instead|prefer|avoid|make sure|"
    r"should|shouldn't|use)\b",
    re.IGNORECASE,
)
_AGENT_CHOICE = re.compile(
    r"\b(?:decided|i'll use|i will use|we'll use|let's use|going with|instead of|rather than|"
    r"switch(?:ed|ing)? to|chose|settled on|the fix is|root cause)\b",
    re.IGNORECASE,
)
_ERROR_LINE = re.compile(
    r"error|exception|traceback|failed|failure|fatal|panic|not found|no such file|denied",
    re.IGNORECASE,
)
_FAILED_TAIL = re.compile(r"\b(?:failed|error:|exit code [1-9]|traceback)", re.IGNORECASE)
_OPEN_CUE = re.compile(
    r"\b(?:todo|fixme|next step|remaining|still failing|still fails|not yet|pending|"
    r"follow-up|follow up|left to do|blocked)\b",
    re.IGNORECASE,
)
# Text the agent's harness writes as the user (a command's echo, a reminder, an interruption):
# no request of the user's.
_NOT_A_REQUEST = ("<", "[Request interrupted", "Caveat:")


@dataclass
class _Error:
    key: str
    line: str
    fixed: bool = False


@dataclass
class _Reading:
    """What the digest gathers from the turns, oldest first."""

    requests: list[tuple[str, bool]] = field(default_factory=list)  # (text, answered)
    earlier: list[str] = field(default_factory=list)
    todos: list[str] = field(default_factory=list)
    open_sentences: dict[str, None] = field(default_factory=dict)
    errors: list[_Error] = field(default_factory=list)
    decisions: dict[str, None] = field(default_factory=dict)
    files: dict[str, list[str]] = field(default_factory=dict)
    names: Counter[str] = field(default_factory=Counter)
    # A call's key (its tool and command, or tool and path), and whether it ran a command.
    calls: dict[str, tuple[str, bool]] = field(default_factory=dict)


class DigestSummarizer:
    """The state of the work in sections, deterministic and offline, within the token cap."""

    name = "digest"

    def summarize(self, request: SummaryRequest) -> str:
        reading = _Reading()
        if request.previous_summary:
            reading.earlier.extend(_lines(request.previous_summary))
        for turn in request.turns:
            for message in turn.messages:
                _read(message, reading)
        return _fill(_sections(reading), request.max_tokens, request.counter)


def _one_line(text: str, limit: int = _LINE_CHARS) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _lines(text: str) -> list[str]:
    return [_one_line(line) for line in text.splitlines() if line.strip()]


def _read(message: Message, reading: _Reading) -> None:
    if message.kind is MessageKind.SUMMARY:
        reading.earlier.extend(_lines(message.text))
        return
    if message.kind is not MessageKind.CHAT:
        return
    text = message.text
    is_user = message.role is Role.USER and not message.is_function_response
    if is_user and text.strip() and not text.lstrip().startswith(_NOT_A_REQUEST):
        reading.requests.append((text, False))
        _decisions(text, _USER_RULE, "user", reading)
        _names(text, reading, weight=2)
    elif message.role is Role.MODEL and text.strip():
        reading.requests[:] = [(t, True) for t, _ in reading.requests]
        _decisions(text, _AGENT_CHOICE, "agent", reading)
        _names(text, reading)
    for call in message.function_calls:
        _call(call.id, call.name, call.args, reading)
    for response in message.function_responses:
        key, ran = reading.calls.get(response.call_id or "", (response.name, False))
        _response(key, ran, response.result, response.is_error, reading)


def _decisions(text: str, cue: re.Pattern[str], speaker: str, reading: _Reading) -> None:
    """The sentences that decide something, and those that leave work open."""
    for sentence in sentences(text):
        if len(sentence.split()) < 3:
            continue
        if cue.search(sentence):
            reading.decisions[f"{speaker}: {_one_line(sentence)}"] = None
        if _OPEN_CUE.search(sentence):
            reading.open_sentences[f"{speaker}: {_one_line(sentence)}"] = None


def _names(text: str, reading: _Reading, weight: int = 1) -> None:
    for found in dict.fromkeys(found_in(text)):
        reading.names[found.value] += weight


def _call(call_id: str | None, name: str, args: Mapping[str, Any], reading: _Reading) -> None:
    path = argument_path(args)
    command = next((args[k] for k in _COMMAND_KEYS if isinstance(args.get(k), str)), None)
    patch = next((v for v in args.values() if isinstance(v, str) and "*** " in v), None)
    if patch is not None:
        for verb, patched in _PATCHED.findall(patch):
            _touch(
                reading,
                patched.strip(),
                {"Add": "created", "Delete": "deleted"}.get(verb, "edited"),
            )
    if path is not None:
        if _EDIT_TOOLS.search(name):
            _touch(reading, path, "edited")
        elif _WRITE_TOOLS.search(name):
            _touch(reading, path, "written" if path in reading.files else "created")
        elif _READ_TOOLS.search(name):
            _touch(reading, path, "read")
        else:
            _touch(reading, path, name)
    todos = args.get("todos")
    if isinstance(todos, list):
        reading.todos = [
            f"[{todo.get('status', 'pending')}] {_one_line(str(content))}"
            for todo in todos
            if isinstance(todo, dict)
            and str(todo.get("status", "")).lower() not in _DONE_TODO
            and (content := todo.get("content") or todo.get("title") or todo.get("text"))
        ]
    key = f"{name} {_one_line(command, 120)}" if command else f"{name} {path or ''}".strip()
    if call_id:
        reading.calls[call_id] = (key, command is not None)
    for value in args.values():
        for text in _strings(value):
            _names(text, reading)


def _touch(reading: _Reading, path: str, action: str) -> None:
    actions = reading.files.setdefault(path, [])
    actions.append(action)
    reading.names[path] += 1


def _response(key: str, ran: bool, result: Any, is_error: bool, reading: _Reading) -> None:
    """An error the result reports (flagged by the tool, or a command's output that ends in a
    failure: a file's contents that mention one are no error), or a success that fixes the
    earlier errors of the same call."""
    text = compact_json(result) if not isinstance(result, str) else result
    first = next((line for line in text.splitlines() if _ERROR_LINE.search(line)), None)
    if is_error or (ran and first is not None and _looks_failed(text)):
        line = first or next((line for line in text.splitlines() if line.strip()), "")
        reading.errors.append(_Error(key, _one_line(line)))
        for found in dict.fromkeys(found_in(line)):
            reading.names[found.value] += 1
        return
    for error in reading.errors:
        if error.key == key:
            error.fixed = True


def _looks_failed(text: str) -> bool:
    """Output that reports a failure though the tool did not flag it (a test run's summary,
    a non-zero exit): read from its last lines, where a run says how it ended."""
    return _FAILED_TAIL.search("\n".join(text.splitlines()[-5:])) is not None


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _sections(reading: _Reading) -> list[tuple[str, list[str]]]:
    current = _current_task(reading.requests)
    task = [
        _one_line(sentence)
        for text in current
        for sentence in sentences(text[:_TASK_CHARS])
        if sentence.strip()
    ]
    open_work = [*reading.todos, *reversed(reading.open_sentences)]
    open_work.extend(
        f"unanswered request: {_one_line(text)}"
        for text, answered in reading.requests[:-1]
        if not answered
    )
    open_errors = [e for e in reversed(reading.errors) if not e.fixed]
    fixed_errors = [e for e in reversed(reading.errors) if e.fixed]
    errors = list(
        dict.fromkeys(
            f"{'open' if not e.fixed else 'fixed'}: {e.key}: {e.line}"
            for e in [*open_errors, *fixed_errors]
        )
    )
    changed = [p for p, a in reading.files.items() if any(x != "read" for x in a)]
    read_only = [p for p in reading.files if p not in changed]
    files = [f"{path}: {_actions(reading.files[path])}" for path in [*changed, *read_only]]
    shown = set(reading.files)
    ranked = sorted(
        (n for n in reading.names if n not in shown),
        key=lambda n: -reading.names[n],
    )
    names = [
        ", ".join(ranked[i : i + _NAMES_PER_LINE]) for i in range(0, len(ranked), _NAMES_PER_LINE)
    ]
    lines = {
        "Current task": task,
        "Earlier": reading.earlier,
        "Open work": open_work,
        "Errors": errors,
        "Decisions": list(reading.decisions),
        "Files": files,
        "Names": names,
        "Earlier requests": [
            f"user: {_one_line(text)}"
            for text, _ in reversed(reading.requests[: len(reading.requests) - len(current)])
        ],
    }
    return [(title, lines[title]) for title, _ in _SHARES]


def _current_task(requests: Sequence[tuple[str, bool]]) -> list[str]:
    """The latest request, and when it says too little to stand alone ("continue", "yes, do
    it") the ones before it back to one that does, oldest first."""
    chosen: list[str] = []
    for text, _ in reversed(requests[-_TASK_REQUESTS:]):
        chosen.insert(0, text)
        if len(text.split()) >= _TASK_WORDS:
            break
    return chosen


def _actions(actions: Sequence[str]) -> str:
    counts = Counter(actions)
    return ", ".join(f"{a} x{n}" if n > 1 else a for a, n in counts.items())


def _fill(sections: list[tuple[str, list[str]]], max_tokens: int, counter: TokenCounter) -> str:
    """The sections within ``max_tokens``: each first takes lines up to its share of the cap,
    then the room left goes to the sections in priority order; a line costs its tokens and one
    for its line break, a section's heading likewise when it keeps a line."""
    shares = dict(_SHARES)
    total = sum(len(lines) for _, lines in sections)
    note = f"({total} more facts omitted to stay within {max_tokens} tokens)"
    room = max_tokens - counter.count(note) - 1
    costs = [[counter.count(line) + 1 for line in lines] for _, lines in sections]
    headings = [counter.count(f"## {title}") + 1 for title, _ in sections]
    kept = [0] * len(sections)
    used = 0
    for share_pass in (True, False):
        for position, (title, _) in enumerate(sections):
            budget = int(max_tokens * shares[title]) if share_pass else room - used
            spent = 0
            while kept[position] < len(costs[position]):
                cost = costs[position][kept[position]] + (
                    headings[position] if not kept[position] else 0
                )
                if spent + cost > budget or used + cost > room:
                    break
                spent += cost
                used += cost
                kept[position] += 1
    out: list[str] = []
    for (title, lines), count in zip(sections, kept, strict=True):
        if count:
            out.append(f"## {title}")
            out.extend(lines[:count])
    omitted = total - sum(kept)
    if omitted:
        out.append(f"({omitted} more facts omitted to stay within {max_tokens} tokens)")
    text = "\n".join(out) if out else "(nothing of note)"
    # Tokenizers can merge across a line break: drop the last kept lines until the text fits.
    while counter.count(text) > max_tokens and len(out) > 1:
        out.pop(-2 if omitted else -1)
        text = "\n".join(out)
    return text
