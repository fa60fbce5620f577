"""What the loader accepts can be stored: nesting and lone surrogates are refused at parse time.

Python's JSON reader accepts objects nested about a thousand levels deep and strings holding
half of a UTF-16 pair (``"\\ud800"``); pydantic then refuses to write such a session
("maximum serialization depth exceeded") or to read it back, and UTF-8 cannot encode the
surrogate. Both are refused where they stand, whichever way the JSON arrived, with the path
to the value, so nothing the loader accepts fails later when it is stored.
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import hypothesis
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gcengine
from gcengine import SessionFormatError
from gcengine._json import MAX_NESTING, NOT_TAKEN, _deeper_than, loads_fast, loads_strict
from tests.engine.conftest import example
from tests.engine.test_malformed import ANTHROPIC, CHAT

V21 = example("jaato_session_v2.1.json")
TOO_DEEP = f"nest more than {MAX_NESTING} levels deep"
# Where the reference Anthropic sample keeps its tool call's input: inside the document, the
# messages list, the message, its content list and the tool_use block (five levels).
ANTHROPIC_INPUT = ("messages", 1, "content", 1, "input")


def nested(levels: int) -> Any:
    """An object ``levels`` deep: ``{"a": {"a": ... 1}}``."""
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


def anthropic_with_input(value: Any) -> dict[str, Any]:
    document = copy.deepcopy(ANTHROPIC)
    document["messages"][1]["content"][1]["input"] = value
    return document


def jaato_with_text(text: str) -> dict[str, Any]:
    document = copy.deepcopy(V21)
    document["history"][0]["parts"] = [{"type": "text", "text": text}]
    return document


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def stored_and_read_back(session: gcengine.Session) -> None:
    """What the dashboard does with a loaded session: store it as JSON, read it back, and
    export it as a JAATO file that can be loaded again."""
    again = gcengine.Session.model_validate_json(session.model_dump_json())
    assert again.history == session.history
    assert gcengine.load_session(gcengine.dump_session(session, indent=None)).history


# --- The fast reader -------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=["Cs"])),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=40,
)


@given(JSON_VALUES, st.booleans())
def test_the_fast_reader_reads_a_file_as_the_standard_reader_does(
    value: Any, ascii_only: bool
) -> None:
    """Files are read from their bytes by pydantic-core's reader first: what it gives must be
    what Python's reader gives, value for value and type for type."""
    text = json.dumps(value, ensure_ascii=ascii_only)
    expected = json.loads(text)
    read = loads_fast(text.encode())
    assert read == expected
    assert json.dumps(read) == json.dumps(expected)  # 1 stays an int and 1.0 a float


@pytest.mark.parametrize(
    "text",
    [
        b'{"a": [1, 2, 1e999]}',
        b"[-1e400]",
        b"1e999",
        b'["\\ud800"]',
        b"[NaN]",
        b"[" + b"9" * 4301 + b"]",
        b"[" * (MAX_NESTING + 1) + b"]" * (MAX_NESTING + 1),
        b"\xef\xbb\xbf[1]",
        b'{"a": 1} {"b": 2}',
    ],
)
def test_what_the_fast_reader_cannot_take_is_left_to_the_reader_that_says_why(
    text: bytes,
) -> None:
    assert loads_fast(text) is NOT_TAKEN


def test_a_number_too_large_is_refused_at_its_path_in_a_file_read_as_bytes() -> None:
    with pytest.raises(ValueError, match="1e999 is too large") as refused:
        loads_strict(b'{"a": [1, 2, 1e999]}')
    assert refused.value.path == ("a", 2)  # type: ignore[attr-defined]


# --- Nesting -------------------------------------------------------------------------------

JSON_WITH_INFINITIES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=30,
)


def holds_infinity(value: Any) -> bool:
    """Whether an object or list holds an infinite number, at any depth."""
    children = value.values() if isinstance(value, dict) else value
    if not isinstance(value, dict | list):
        return False
    return any(child in (math.inf, -math.inf) or holds_infinity(child) for child in children)


@settings(max_examples=300)
@given(JSON_WITH_INFINITIES, st.integers(0, 6), st.booleans())
@hypothesis.example({"a": [1, {"b": -math.inf}]}, 6, True)
@hypothesis.example([[], {"a": [math.inf]}], 6, True)
@hypothesis.example([[[]], {"a": {"b": {}}}], 3, False)
def test_the_nesting_check_finds_what_a_recursive_walk_finds(
    value: Any, allowed: int, or_infinite: bool
) -> None:
    """Every file read is checked for nesting (and, read fast, for numbers too large, read as
    infinity) by a walk a level at a time; it must say what walking every value says."""
    expected = depth(value) > allowed or (or_infinite and holds_infinity(value))
    assert _deeper_than(value, allowed, or_infinite=or_infinite) is expected


def test_the_deepest_document_the_loader_takes_is_stored_and_read_back() -> None:
    deepest = anthropic_with_input(nested(MAX_NESTING - len(ANTHROPIC_INPUT)))
    assert depth(deepest) == MAX_NESTING

    session = gcengine.load_session(json.dumps(deepest).encode())

    stored_and_read_back(session)


@pytest.mark.parametrize("levels", [MAX_NESTING + 1 - len(ANTHROPIC_INPUT), 300, 1_000, 9_999])
def test_a_document_nested_past_the_limit_is_refused_at_the_deep_value(levels: int) -> None:
    """300 to 9,999 levels used to load, then fail in storage; 10,000 was already refused."""
    # Written out by hand: Python's own encoder gives up near a thousand levels.
    deep = '{"a": ' * levels + "1" + "}" * levels
    text = json.dumps(anthropic_with_input("DEEP")).replace('"DEEP"', deep)
    # The first object past the limit: the input's own levels, then "a" down to it.
    steps = MAX_NESTING - len(ANTHROPIC_INPUT)
    column = text.index(deep) + len('{"a": ') * steps + 1

    for source in (text, text.encode(), anthropic_with_input(nested(levels))):
        with pytest.raises(SessionFormatError) as raised:
            gcengine.load_session(source)

        assert TOO_DEEP in raised.value.reason
        if raised.value.path:
            assert raised.value.path == (*ANTHROPIC_INPUT, *["a"] * steps)
        else:  # so deep that Python's parser gave up: the place is its line and column
            assert raised.value.reason.endswith(f"at line 1, column {column}")


def test_json_held_in_a_string_counts_its_nesting_from_where_the_string_is() -> None:
    """OpenAI tool arguments are JSON in a string; stored, they sit where the string was."""
    chat = copy.deepcopy(CHAT)
    function = chat["messages"][2]["tool_calls"][0]["function"]
    where = ("messages", 2, "tool_calls", 0, "function", "arguments")
    function["arguments"] = json.dumps(nested(MAX_NESTING - len(where)))
    stored_and_read_back(gcengine.load_session(chat))

    function["arguments"] = json.dumps(nested(MAX_NESTING - len(where) + 1))
    with pytest.raises(SessionFormatError) as raised:
        gcengine.load_session(chat)

    assert TOO_DEEP in raised.value.reason
    assert raised.value.path[: len(where)] == where


def test_a_json_lines_record_nested_past_the_limit_is_refused_by_its_line() -> None:
    lines = [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}},
        {"type": "user", "uuid": "u2", "message": {"role": "user", "content": nested(MAX_NESTING)}},
    ]
    text = "\n".join(json.dumps(line) for line in lines)

    with pytest.raises(SessionFormatError) as raised:
        gcengine.load_session(text.encode())

    assert TOO_DEEP in raised.value.reason
    assert raised.value.path[0] == "line 2"


def test_a_gc_json_nested_past_the_limit_is_a_config_error() -> None:
    config = {"type": "gc_budget", "agent_name": nested(MAX_NESTING)}

    for source in (config, json.dumps(config)):
        with pytest.raises(gcengine.ConfigError, match=TOO_DEEP):
            gcengine.load_gc_config(source, env={})


@settings(max_examples=40, deadline=None)
@given(
    value=st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=4)),
        lambda children: st.one_of(
            st.lists(children, max_size=2),
            st.dictionaries(st.text(max_size=3), children, min_size=1, max_size=2),
        ),
        max_leaves=200,
    ),
    extra_levels=st.integers(0, 120),
)
def test_whatever_the_loader_takes_can_be_stored_and_read_back(
    value: Any, extra_levels: int
) -> None:
    document = anthropic_with_input({"x": value, "deep": nested(extra_levels)})
    text = json.dumps(document).encode()

    if depth(document) > MAX_NESTING:
        with pytest.raises(SessionFormatError, match=TOO_DEEP):
            gcengine.load_session(text)
    else:
        stored_and_read_back(gcengine.load_session(text))


# --- Lone surrogates -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "path"),
    [
        pytest.param(
            anthropic_with_input({"pattern": "cut emoji \ud83d"}),
            (*ANTHROPIC_INPUT, "pattern"),
            id="in-a-value",
        ),
        pytest.param(
            anthropic_with_input({"\udc00key": "x"}), (*ANTHROPIC_INPUT, "(key)"), id="in-a-key"
        ),
        pytest.param(
            jaato_with_text("cut \ud800"),
            ("history", 0, "parts", 0, "text"),
            id="in-a-jaato-text",
        ),
    ],
)
def test_a_lone_surrogate_is_refused_where_it_stands(
    document: dict[str, Any], path: tuple[str | int, ...]
) -> None:
    escaped = json.dumps(document)  # ensure_ascii: "\ud800" as an escape, as JavaScript writes
    raw = json.dumps(document, ensure_ascii=False)  # the code point itself, in a str

    for source in (escaped, escaped.encode(), raw, document):
        with pytest.raises(SessionFormatError) as raised:
            gcengine.load_session(source)

        assert "lone surrogate" in raised.value.reason
        assert raised.value.path == path


def test_a_lone_surrogate_inside_json_held_in_a_string_is_refused_at_its_path() -> None:
    chat = copy.deepcopy(CHAT)
    chat["messages"][2]["tool_calls"][0]["function"]["arguments"] = '{"job": "te\\udfffst"}'

    with pytest.raises(SessionFormatError) as raised:
        gcengine.load_session(json.dumps(chat).encode())

    assert "lone surrogate" in raised.value.reason
    assert raised.value.json_path == "messages[2].tool_calls[0].function.arguments.job"


def test_escaped_surrogate_pairs_are_characters_and_load() -> None:
    """Python and JavaScript escape every character beyond the BMP as a pair of them."""
    document = anthropic_with_input({"pattern": "👋 hello 🌍"})
    text = json.dumps(document)
    assert "\\ud83d\\udc4b" in text

    session = gcengine.load_session(text.encode())

    stored_and_read_back(session)
    assert "👋 hello 🌍" in session.model_dump_json()


def test_an_escaped_backslash_before_u_d800_is_text_not_a_surrogate() -> None:
    document = anthropic_with_input({"pattern": "\\ud800"})  # a backslash, then "ud800"

    session = gcengine.load_session(json.dumps(document).encode())

    stored_and_read_back(session)


def test_a_lone_surrogate_in_a_gc_json_is_a_config_error() -> None:
    with pytest.raises(gcengine.ConfigError, match="lone surrogate") as raised:
        gcengine.load_gc_config('{"type": "gc_budget", "agent_name": "a\\ud800"}', env={})

    assert raised.value.key == "agent_name"
