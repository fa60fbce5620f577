"""Test data shared by the engine tests: Hypothesis strategies and plain builders.

Hypothesis strategies generate JAATO session files (as decoded JSON) and bare budget trees;
the builders at the end make the small sessions, messages and policies that strategy tests
use, so every test module builds them the same way.

Session files are generated turn by turn, the way JAATO writes them: a user request, zero to
three tool rounds (a model message calling one to three tools, answered either by one ``tool``
message or, Google style, by a ``user`` message carrying the results), then the model's
answer. Around the turns: an occasional leading model message, collector summaries and
notices, thoughts, inline images and parts JAATO could not interpret.

Thought texts always contain :data:`THOUGHT_MARKER`, a private-use character that visible
texts never contain, so a test can tell whether a thought leaked into visible text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

import gcengine
from gcengine import (
    FunctionCall,
    FunctionResponse,
    GCConfig,
    GCPolicy,
    InstructionBudget,
    InstructionSource,
    Message,
    Part,
    Role,
    Session,
    SourceEntry,
    split_into_turns,
)
from gcengine.gc import GCPlugin, GCResult, GCTriggerReason, context_usage
from gcengine.synthetic import SessionShape, generate_session_file
from gcengine.tokens import TokenCounter

THOUGHT_MARKER = "\ue000"
SUMMARY_TEXT = (
    "[Context Summary - Previous conversation compressed]\n"
    "The user asked for a refactor of src/app.py; two helpers were extracted.\n"
    "[End Context Summary]"
)
NOTICE_TEXT = "[System: Context cleaned: removed 3 old turns, kept 5 recent turns.]"
CREATED_AT = "2026-03-01T10:15:00"
UPDATED_AT = "2026-03-01T11:02:41"

_SPECIAL_TEXTS = [
    "<|endoftext|>",
    "👋 hello 🌍",
    "👨‍👩‍👧‍👦 family emoji",
    "naïve café résumé",
    "日本語のテキスト",
    "",
    " ",
    "line one\nline two",
]
_TOOL_NAMES = ["grep_content", "read_file", "run_tests", "web_search", "list_dir"]

# Any Unicode text except surrogates and private-use characters (the thought marker).
_VISIBLE_CHARS = st.characters(codec="utf-8", exclude_categories=("Cs", "Co"))

texts: st.SearchStrategy[str] = st.one_of(
    st.text(_VISIBLE_CHARS, max_size=12),
    st.sampled_from(_SPECIAL_TEXTS),
    st.sampled_from(_SPECIAL_TEXTS).map(lambda text: f"before {text} after"),
)

thought_texts: st.SearchStrategy[str] = texts.map(lambda text: f"{THOUGHT_MARKER}{text}")

json_scalars: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), st.integers(-1000, 1000), texts
)
tool_results: st.SearchStrategy[Any] = st.one_of(
    texts,
    st.dictionaries(st.sampled_from(["output", "matches", "exit_code"]), json_scalars, max_size=3),
)


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def thought_part(text: str) -> dict[str, Any]:
    """A thought the way JAATO writes it: an ``unknown`` part that says it is a thought."""
    return {"type": "unknown", "repr": f"Part(thought={text!r})", "kind": "thought", "text": text}


def inline_image_part() -> dict[str, Any]:
    return {"type": "inline_data", "mime_type": "image/png", "data": "aGVsbG8="}


def unknown_part() -> dict[str, Any]:
    return {"type": "unknown", "repr": "Part(executable_code=ExecutableCode(code='print(1)'))"}


@dataclass
class _CallIds:
    """Hands out ``call_<n>`` ids, unique within one session file."""

    issued: int = 0

    def next(self) -> str:
        self.issued += 1
        return f"call_{self.issued}"


@dataclass
class GeneratedTurn:
    """One turn's messages, as JAATO file messages."""

    messages: list[dict[str, Any]] = field(default_factory=list)


# Strategies drawn inside loops are built once: building them per draw dominates the run time.
_booleans = st.booleans()
_round_count = st.integers(0, 3)
_call_count = st.integers(1, 3)
_one_in_six = st.integers(0, 5).map(lambda n: n == 5)
_one_in_ten = st.integers(0, 9).map(lambda n: n == 9)
_tool_names = st.sampled_from(_TOOL_NAMES)
_call_args = st.dictionaries(st.sampled_from(["path", "q"]), json_scalars, max_size=2)
_thoughts = st.lists(thought_texts, max_size=1)
_counts = st.integers(0, 10_000)


def _model_extras(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Optional thought parts (before the text) and unknown parts (after it)."""
    before = [thought_part(t) for t in draw(_thoughts)]
    after = [unknown_part()] if draw(_one_in_ten) else []
    return before, after


def _turn(draw: st.DrawFn, ids: _CallIds) -> GeneratedTurn:
    turn = GeneratedTurn()
    request: list[dict[str, Any]] = [text_part(draw(texts))]
    if draw(_one_in_six):
        request.append(inline_image_part())
    turn.messages.append({"role": "user", "parts": request})
    for _ in range(draw(_round_count)):
        calls = [
            {
                "type": "function_call",
                "id": ids.next(),
                "name": draw(_tool_names),
                "args": draw(_call_args),
            }
            for _ in range(draw(_call_count))
        ]
        before, after = _model_extras(draw)
        turn.messages.append(
            {"role": "model", "parts": [*before, text_part(draw(texts)), *calls, *after]}
        )
        responses: list[dict[str, Any]] = [
            {
                "type": "function_response",
                "call_id": call["id"],
                "name": call["name"],
                "result": draw(tool_results),
                "is_error": draw(_booleans),
            }
            for call in calls
        ]
        if draw(_booleans):
            turn.messages.append({"role": "tool", "parts": responses})
        else:
            # Google style: the results come back as a user message, sometimes with text.
            if draw(_booleans):
                responses.append(text_part(draw(texts)))
            turn.messages.append({"role": "user", "parts": responses})
    before, after = _model_extras(draw)
    turn.messages.append({"role": "model", "parts": [*before, text_part(draw(texts)), *after]})
    return turn


def _marker_message(kind: str) -> dict[str, Any]:
    text = SUMMARY_TEXT if kind == "summary" else NOTICE_TEXT
    return {"role": "user", "parts": [text_part(text)]}


@st.composite
def session_turns(draw: st.DrawFn, min_turns: int = 1, max_turns: int = 3) -> list[GeneratedTurn]:
    ids = _CallIds()
    return [_turn(draw, ids) for _ in range(draw(st.integers(min_turns, max_turns)))]


@st.composite
def _file_layout(draw: st.DrawFn, turn_count: int) -> dict[str, Any]:
    """Everything around the turns: a leading model message, markers, accounting."""
    leading = None
    if draw(st.integers(0, 4)) == 4:
        before, after = _model_extras(draw)
        leading = {"role": "model", "parts": [*before, text_part(draw(texts)), *after]}
    # Collector markers, each placed before the turn with the drawn position (or at the end).
    markers = draw(
        st.lists(
            st.tuples(st.integers(0, turn_count), st.sampled_from(["summary", "notice"])),
            max_size=2,
        )
    )
    accounting = None
    if draw(st.booleans()):
        accounting = [
            {
                "prompt": draw(_counts),
                "output": draw(_counts),
                "total": draw(_counts),
                **({"thinking": draw(_counts)} if draw(_booleans) else {}),
            }
            for _ in range(turn_count)
        ]
    instructions = draw(st.none() | texts)
    return {
        "leading": leading,
        "markers": markers,
        "accounting": accounting,
        "instructions": instructions,
    }


def assemble_file(
    turns: list[GeneratedTurn], layout: dict[str, Any], session_id: str = "20260301_101500"
) -> dict[str, Any]:
    """A JAATO 2.1 session file holding ``turns`` arranged as ``layout`` says."""
    history: list[dict[str, Any]] = []
    if layout["leading"] is not None:
        history.append(layout["leading"])
    for position in range(len(turns) + 1):
        for place, kind in layout["markers"]:
            if min(place, len(turns)) == position:
                history.append(_marker_message(kind))
        if position < len(turns):
            history.extend(turns[position].messages)
    file: dict[str, Any] = {
        "version": "2.1",
        "session_id": session_id,
        "created_at": CREATED_AT,
        "updated_at": UPDATED_AT,
        "history": history,
    }
    if layout["accounting"] is not None:
        file["turn_accounting"] = layout["accounting"][: len(turns)]
    if layout["instructions"] is not None:
        file["rendered_instructions"] = layout["instructions"]
    return file


@st.composite
def jaato_session_files(draw: st.DrawFn, min_turns: int = 1, max_turns: int = 3) -> dict[str, Any]:
    """A JAATO 2.1 session file (decoded JSON) without a recorded budget."""
    turns = draw(session_turns(min_turns, max_turns))
    layout = draw(_file_layout(len(turns)))
    return assemble_file(turns, layout)


@st.composite
def session_files_and_continuation(
    draw: st.DrawFn, max_turns: int = 4
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The same session saved twice: once, and again after one more turn."""
    turns = draw(session_turns(2, max_turns + 1))
    layout = draw(_file_layout(len(turns)))
    # Markers belong to the shared beginning, so both files start with the same messages.
    layout["markers"] = [(min(p, len(turns) - 1), k) for p, k in layout["markers"]]
    return assemble_file(turns[:-1], layout), assemble_file(turns, layout)


# --- bare budget trees ---------------------------------------------------------------------

policies = st.sampled_from(list(GCPolicy))
_labels = st.sampled_from([None, "Conversation", "turn 3 input (tool = grep)", "🔒 system"])
_METADATA: list[dict[str, Any]] = [{}, {"turn_index": 2, "kind": "chat"}, {"counted_by": "approx"}]
# Copied per draw, so no two generated entries share one metadata dict.
_metadata: st.SearchStrategy[dict[str, Any]] = st.sampled_from(_METADATA).map(dict)
_created_at = st.none() | st.floats(0, 2e9, allow_nan=False, allow_infinity=False)
_message_ids = st.sampled_from(
    [[], ["3f2b9c0e-58a1-4d7e-9a53-0c1d2e3f4a5b"], ["msg-a", "msg-b"]]
).map(list)
_child_keys = st.lists(
    st.sampled_from(["turn_0", "turn_1", "gc_summary_x", "msg_4", "ü", "a/b", ""]),
    max_size=3,
    unique=True,
)
_tokens = st.integers(0, 5_000)
_depths = st.integers(0, 3)


@st.composite
def source_entries(draw: st.DrawFn, source: InstructionSource, depth: int) -> SourceEntry:
    """A budget node with up to ``depth`` levels of children below it, all of one source."""
    keys = draw(_child_keys) if depth > 0 else []
    return SourceEntry(
        source=source,
        tokens=draw(_tokens),
        gc_policy=draw(policies),
        label=draw(_labels),
        children={key: draw(source_entries(source, depth - 1)) for key in keys},
        metadata=draw(_metadata),
        created_at=draw(_created_at),
        message_ids=draw(_message_ids),
    )


@st.composite
def instruction_budgets(draw: st.DrawFn, max_depth: int = 3) -> InstructionBudget:
    """A budget with some of the five sources, each a tree 0 to ``max_depth`` levels deep."""
    sources = draw(st.lists(st.sampled_from(list(InstructionSource)), unique=True, max_size=5))
    return InstructionBudget(
        session_id=draw(st.text(max_size=8)),
        agent_id=draw(st.sampled_from(["main", "subagent-1"])),
        agent_type=draw(st.none() | st.sampled_from(["main", "explorer"])),
        context_limit=draw(st.integers(0, 200_000)),
        entries={
            source: draw(source_entries(source, min(draw(_depths), max_depth)))
            for source in sources
        },
    )


# --- sessions, messages and policies for strategy tests ------------------------------------


def session_at(turns: int, usage: float, counter: TokenCounter, **shape: Any) -> Session:
    """A generated session whose context limit puts it at ``usage`` percent."""
    session = gcengine.load_session(
        generate_session_file(SessionShape(turns=turns, **shape)), counter=counter
    )
    limit = max(1, int(session.budget.total_tokens() * 100 / usage))
    session = session.model_copy(update={"context_limit": limit})
    session.budget = gcengine.rebuild_budget(session, counter)
    return session


def policy(**fields: Any) -> GCConfig:
    """A policy read the way a ``gc.json`` is, without the runner's environment leaking in."""
    return gcengine.load_gc_config(fields, env={})


def leaves(session: Session) -> dict[str, GCPolicy]:
    """The policy of every message of the session's conversation, by message id."""
    conversation = session.budget.entries[InstructionSource.CONVERSATION]
    return {
        e.message_ids[0]: e.gc_policy
        for _, e in conversation.walk()
        if not e.children and e.message_ids
    }


def user(text: str, mid: str) -> Message:
    return Message(role=Role.USER, parts=[Part.from_text(text)], message_id=mid)


def model(text: str, mid: str, *calls: str) -> Message:
    """A model message with ``text`` and one call (to ``tool``) per id in ``calls``."""
    parts = [Part.from_text(text)] + [
        Part.from_function_call(FunctionCall(id=c, name="tool", args={})) for c in calls
    ]
    return Message(role=Role.MODEL, parts=parts, message_id=mid)


def result(role: Role, mid: str, *calls: str) -> Message:
    """The results of ``calls``: a ``tool`` message, or Google-style a ``user`` one."""
    parts = [
        Part.from_function_response(FunctionResponse(call_id=c, name="tool", result="ok"))
        for c in calls
    ]
    return Message(role=role, parts=parts, message_id=mid)


def collect(
    plugin: GCPlugin,
    history: list[Message],
    config: GCConfig,
    budget: InstructionBudget,
    reason: GCTriggerReason = GCTriggerReason.THRESHOLD,
) -> tuple[list[Message], GCResult]:
    """Call ``plugin.collect`` as an agent framework does, with the usage the budget gives."""
    usage = context_usage(budget, turns=len(split_into_turns(history)))
    return plugin.collect(history, usage, config, reason, budget)
