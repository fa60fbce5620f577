"""Token counting: offline, labelled, complete, and cached."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcengine import ApproxCounter, FunctionCall, FunctionResponse, InlineData, Message, Part, Role
from gcengine import tokens as token_module
from gcengine.tokens import (
    INLINE_DATA_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
    CachingCounter,
    TokenCounter,
    count_message,
    encoding_for_model,
    load_counter,
)


def message(*parts: Part, role: Role = Role.MODEL) -> Message:
    return Message(role=role, parts=list(parts), message_id="m")


def test_default_counter_is_the_bundled_vocabulary(counter: TokenCounter) -> None:
    assert counter.name == "tiktoken:cl100k_base"
    assert counter.exact
    assert counter.count("hello world") == 2


def test_special_token_text_in_a_message_is_counted_not_rejected(counter: TokenCounter) -> None:
    assert counter.count("<|endoftext|>") > 1


def test_an_uncached_encoding_falls_back_to_the_bundled_one_without_network(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    token_module._cached_counter.cache_clear()
    try:
        assert not token_module.is_encoding_available_offline("o200k_base")
        assert load_counter("o200k_base").name == "tiktoken:cl100k_base"
    finally:
        token_module._cached_counter.cache_clear()


def test_without_any_vocabulary_the_counter_is_approximate_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(token_module, "_load_offline_encoding", lambda name: None)
    monkeypatch.setattr(token_module, "_load_cached_encoding", lambda name: None)
    token_module._cached_counter.cache_clear()
    try:
        fallback = load_counter()
        assert fallback.name.startswith("approx:")
        assert not fallback.exact
        assert fallback.count("abcdefgh") == 2
    finally:
        token_module._cached_counter.cache_clear()


def test_model_names_pick_their_encoding() -> None:
    assert encoding_for_model("gpt-4o-mini") == "o200k_base"
    assert encoding_for_model("openai/gpt-4.1") == "o200k_base"
    assert encoding_for_model("gpt-4-0613") == "cl100k_base"
    assert encoding_for_model("claude-sonnet-4") == "cl100k_base"
    assert encoding_for_model(None) == "cl100k_base"


def test_function_calls_count_their_name_and_arguments(counter: TokenCounter) -> None:
    call = FunctionCall(
        id="c1", name="grep_content", args={"pattern": "TODO", "path": "src/app.py"}
    )
    text_only = message(Part.from_text("I'll search the file first."))
    with_call = message(
        Part.from_text("I'll search the file first."), Part.from_function_call(call)
    )
    extra = count_message(with_call, counter) - count_message(text_only, counter)
    assert extra == counter.count("grep_content") + counter.count(
        '{"pattern":"TODO","path":"src/app.py"}'
    )


def test_function_results_count_their_json(counter: TokenCounter) -> None:
    response = FunctionResponse(call_id="c1", name="grep_content", result={"matches": [1, 2]})
    tokens = count_message(message(Part.from_function_response(response), role=Role.TOOL), counter)
    assert tokens == MESSAGE_OVERHEAD_TOKENS + counter.count("grep_content") + counter.count(
        '{"matches":[1,2]}'
    )


def test_media_has_a_fixed_cost_and_thoughts_cost_nothing(counter: TokenCounter) -> None:
    image = Part.from_inline_data(InlineData(mime_type="image/png", data="aGVsbG8="))
    assert (
        count_message(message(image, role=Role.USER), counter)
        == MESSAGE_OVERHEAD_TOKENS + INLINE_DATA_TOKENS
    )
    thought = Part.from_thought("a long private chain of reasoning " * 20)
    assert count_message(message(thought), counter) == MESSAGE_OVERHEAD_TOKENS


def test_each_distinct_text_is_counted_once() -> None:
    calls: list[str] = []

    class Spy:
        name = "spy"
        exact = True

        def count(self, text: str) -> int:
            calls.append(text)
            return len(text)

    cached = CachingCounter(Spy())
    for _ in range(5):
        assert cached.count("same text") == 9
    cached.count("other")
    assert calls == ["same text", "other"]


def test_approx_counter_is_chars_over_four() -> None:
    approx = ApproxCounter()
    assert approx.count("") == 0
    assert approx.count("x" * 40) == 10
    assert isinstance(approx, TokenCounter)


class SpyCounter:
    """Counts characters and records every text it was asked about."""

    name = "spy"
    exact = True

    def __init__(self) -> None:
        self.calls: list[str] = []

    def count(self, text: str) -> int:
        self.calls.append(text)
        return len(text)


def test_the_process_wide_counter_keeps_its_cache_within_the_documented_bound() -> None:
    # A web worker counts distinct texts for as long as it lives: the cache must stop growing.
    shared = load_counter("approx")
    assert isinstance(shared, CachingCounter)
    large = 1_000_000
    for n in range(CachingCounter.MAX_CHARS // large + 8):
        text = f"{n:08d}" + "x" * (large - 8)
        assert shared.count(text) == large // 4
        assert shared.cached_chars <= CachingCounter.MAX_CHARS
    assert shared.cached_texts <= CachingCounter.MAX_TEXTS


def test_the_cache_holds_at_most_its_number_of_texts() -> None:
    cached = CachingCounter(SpyCounter(), max_texts=100)
    for n in range(1_000):
        cached.count(f"text {n}")
    assert cached.cached_texts == 100
    assert cached.cached_chars == sum(len(f"text {n}") for n in range(900, 1_000))


def test_the_least_recently_counted_text_goes_first_and_counts_stay_right() -> None:
    spy = SpyCounter()
    cached = CachingCounter(spy, max_chars=30)
    for text in ("a" * 10, "b" * 10, "c" * 10):
        cached.count(text)
    assert cached.count("a" * 10) == 10  # a hit: "a" is now the most recent
    cached.count("d" * 10)  # over 30 characters: the least recent, "b", goes
    spy.calls.clear()
    assert [cached.count(t * 10) for t in "acdb"] == [10, 10, 10, 10]
    assert spy.calls == ["b" * 10]
    assert cached.cached_chars <= 30


def test_a_text_longer_than_the_whole_cache_is_counted_but_not_kept() -> None:
    spy = SpyCounter()
    cached = CachingCounter(spy, max_chars=30)
    cached.count("kept")
    assert cached.count("y" * 31) == 31
    assert cached.count("y" * 31) == 31
    assert spy.calls == ["kept", "y" * 31, "y" * 31]
    assert cached.cached_texts == 1


@given(
    st.lists(st.text(max_size=12), max_size=200),
    st.integers(min_value=1, max_value=20),
    st.integers(min_value=0, max_value=60),
)
def test_the_cache_answers_what_its_counter_would_and_stays_within_its_bounds(
    texts: list[str], max_texts: int, max_chars: int
) -> None:
    cached = CachingCounter(SpyCounter(), max_texts=max_texts, max_chars=max_chars)
    for text in texts:
        assert cached.count(text) == len(text)
        assert cached.cached_texts <= max_texts
        assert cached.cached_chars <= max_chars
