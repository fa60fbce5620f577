"""Token counting: offline, labelled, complete, and cached."""

from __future__ import annotations

import base64
import struct
import sys
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gcengine
from gcengine import ApproxCounter, FunctionCall, FunctionResponse, InlineData, Message, Part, Role
from gcengine import tokens as token_module
from gcengine.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    CachingCounter,
    TiktokenCounter,
    TokenCounter,
    count_message,
    count_messages,
    count_texts,
    encoding_for_model,
    load_counter,
)
from tests.engine.conftest import example


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
        assert not token_module.is_encoding_available_offline("p50k_base")
        assert load_counter("p50k_base").name == "tiktoken:cl100k_base"
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


def test_thoughts_cost_nothing(counter: TokenCounter) -> None:
    thought = Part.from_thought("a long private chain of reasoning " * 20)
    assert count_message(message(thought), counter) == MESSAGE_OVERHEAD_TOKENS


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def png(width: int, height: int) -> bytes:
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + header + b"\0" * 4


def jpeg(width: int, height: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\0" + b"\1\1\0\0\1\0\1\0\0"
    frame = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\1\x11\0"
    return b"\xff\xd8" + app0 + frame + b"\xff\xd9"


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\0\0\0"


def webp(width: int, height: int) -> bytes:
    extended = b"VP8X" + struct.pack("<I", 10) + b"\0\0\0\0"
    size = (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", 30) + b"WEBP" + extended + size


@pytest.mark.parametrize("make", [png, jpeg, gif, webp], ids=["png", "jpeg", "gif", "webp"])
def test_image_dimensions_are_read_from_the_file_header(make: Any) -> None:
    assert gcengine.image_dimensions(make(1, 1)) == (1, 1)
    assert gcengine.image_dimensions(make(1200, 800)) == (1200, 800)
    assert gcengine.image_dimensions(b"%PDF-1.4") is None


@pytest.mark.parametrize(
    ("provider", "tiny", "square", "large"),
    [
        ("anthropic", 1, 1399, 1534),  # w*h/750, scaled to 1568 px and 1.15 megapixels
        ("openai", 255, 765, 765),  # 85 + 170 per 512 px tile, short side scaled to 768
        ("google", 258, 1032, 258 * 6 * 4),  # 258 a 768 px tile
    ],
)
def test_images_cost_what_their_provider_publishes(
    provider: Any, tiny: int, square: int, large: int
) -> None:
    for size, expected in (((1, 1), tiny), ((1024, 1024), square), ((4000, 3000), large)):
        cost = gcengine.media_cost(
            InlineData(mime_type="image/png", data=b64(png(*size))), provider
        )
        assert (cost.tokens, cost.basis, (cost.width, cost.height)) == (
            expected,
            "dimensions",
            size,
        )
        assert cost.exact


def test_media_without_dimensions_is_estimated_from_its_size_and_says_so() -> None:
    pdf = gcengine.media_cost(InlineData(mime_type="application/pdf", data=b64(b"%" * 92)))
    assert (pdf.tokens, pdf.basis, pdf.size_bytes) == (3, "size", 92)
    assert not pdf.exact
    assert "92 bytes" in pdf.description
    audio = gcengine.media_cost(InlineData(mime_type="audio/mpeg", data=b64(b"\0" * 16_000)))
    assert (audio.tokens, audio.basis) == (32, "size")  # about one second of sound
    linked = gcengine.media_cost(
        InlineData(mime_type="image/*", data="https://example.com/a.png", extra={"url": True})
    )
    assert (linked.basis, linked.tokens) == ("flat", 1399)


def test_a_one_pixel_image_no_longer_costs_a_thousand(counter: TokenCounter) -> None:
    image = Part.from_inline_data(InlineData(mime_type="image/png", data=b64(png(1, 1))))
    assert count_message(message(image, role=Role.USER), counter) == MESSAGE_OVERHEAD_TOKENS + 1


def test_a_session_says_which_media_figures_are_estimates() -> None:
    data = example("jaato_session_v2.1.json")
    data["history"][0]["parts"] += [
        {"type": "inline_data", "mime_type": "image/png", "data": b64(png(1, 1))},
        {"type": "inline_data", "mime_type": "application/pdf", "data": b64(b"%" * 92)},
    ]
    session = gcengine.load_session(data)
    request = session.budget.entries[gcengine.InstructionSource.CONVERSATION].children["turn_0"]
    first = next(iter(request.children.values()))
    text_only = count_message(
        session.history[0].model_copy(update={"parts": session.history[0].parts[:1]}),
        load_counter(),
    )
    assert first.tokens == text_only + 1 + 3  # the 1x1 image by its pixels, the PDF by size
    counting = session.token_counting
    assert not counting.exact
    assert counting.notes[-1] == "1 media part estimated: 92 bytes, estimated from the size"


def test_o200k_ships_offline_and_counts_as_openai_does() -> None:
    """gpt-4.1 and every current OpenAI model use o200k_base: its vocabulary ships with the
    product, is checked against tiktoken's published hash, and counts what OpenAI counts."""
    o200k = load_counter("o200k_base")
    assert o200k.name == "tiktoken:o200k_base"
    assert o200k.exact
    assert o200k.count("hello world") == 2  # [24912, 2375] in o200k_base
    assert load_counter("o200k_harmony").name == "tiktoken:o200k_harmony"
    session = gcengine.load_session(
        {"model": "gpt-4.1", "messages": [{"role": "user", "content": "Why does CI fail?"}]}
    )
    assert session.token_counter == "tiktoken:o200k_base+media:openai"
    assert session.token_counting.exact
    assert session.token_counting.notes == []


@settings(deadline=None)
@given(text=st.text(max_size=200))
def test_o200k_counts_match_an_independent_implementation(text: str) -> None:
    """bpe-openai's own tokenizer (a separate implementation of the same vocabulary)."""
    bpe_openai = pytest.importorskip("bpe_openai")
    expected = len(bpe_openai.get_encoding("o200k_base").encode(text))
    assert load_counter("o200k_base").count(text) == expected


def test_a_vocabulary_that_cannot_be_loaded_makes_the_session_say_estimate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token_module._cached_counter.cache_clear()
    token_module._o200k_ranks.cache_clear()
    token_module._load_o200k_encoding.cache_clear()
    monkeypatch.setattr(token_module, "_O200K_SHA256", "0" * 64)  # not the published file
    try:
        session = gcengine.load_session(
            {"model": "gpt-4.1", "messages": [{"role": "user", "content": "Why?"}]}
        )
        assert session.token_counter == "tiktoken:cl100k_base+media:openai"
        counting = session.token_counting
        assert not counting.exact
        assert counting.notes == [
            "o200k_base (the tokenizer of gpt-4.1) could not be loaded here; counted with "
            "cl100k_base, an estimate"
        ]
    finally:
        monkeypatch.undo()
        token_module._cached_counter.cache_clear()
        token_module._o200k_ranks.cache_clear()
        token_module._load_o200k_encoding.cache_clear()


def test_a_model_without_a_shipped_tokenizer_is_counted_as_an_estimate() -> None:
    counting = gcengine.token_counting("claude-sonnet-4", "tiktoken:cl100k_base")
    assert not counting.exact
    assert counting.notes == [
        "claude-sonnet-4 has no tokenizer the engine ships; counted with cl100k_base, an estimate"
    ]
    approx = gcengine.token_counting("gpt-4.1", "approx:4chars/token+media:openai")
    assert approx.notes == [
        "no tokenizer vocabulary could be loaded: about four characters a token"
    ]


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
    for n in range(CachingCounter.MAX_TEXTS + 50):
        shared.count(f"text {n}")
    assert CachingCounter.MAX_TEXTS // 2 < shared.cached_texts <= CachingCounter.MAX_TEXTS


def test_the_cache_keeps_no_text_alive() -> None:
    """Texts made only to be counted (tool arguments written as JSON) and the texts of a session
    no longer open go as soon as nothing else holds them: the cache keeps counts, not texts."""
    cached = CachingCounter(ApproxCounter())
    texts = ["".join(["made to be counted ", str(n)]) for n in range(3)]
    before = [sys.getrefcount(text) for text in texts]
    assert cached.count_many(texts) == [5, 5, 5]
    assert cached.count(texts[0]) == 5
    assert cached.cached_texts == 3
    assert [sys.getrefcount(text) for text in texts] == before


def test_the_cache_holds_at_most_its_number_of_texts() -> None:
    spy = SpyCounter()
    cached = CachingCounter(spy, max_texts=100)
    for n in range(1_000):
        cached.count(f"text {n}")
    assert cached.cached_texts == 100
    spy.calls.clear()
    assert cached.count("text 999") == len("text 999")
    assert cached.count("text 899") == len("text 899")
    assert spy.calls == ["text 899"]  # the newest hundred are kept, the older ones counted anew


def test_the_oldest_counted_go_first_a_generation_at_a_time_and_counts_stay_right() -> None:
    spy = SpyCounter()
    cached = CachingCounter(spy, max_texts=4)  # two generations of two
    for text in ("a" * 10, "b" * 10, "c" * 10):
        cached.count(text)
    assert cached.count("a" * 10) == 10  # a hit, in the previous generation
    cached.count("d" * 10)
    cached.count("e" * 10)  # the current generation (c, d) is full: a and b go
    spy.calls.clear()
    assert [cached.count(t * 10) for t in "cdeab"] == [10, 10, 10, 10, 10]
    assert spy.calls == ["a" * 10, "b" * 10]
    assert cached.cached_texts == 3


def test_the_cache_takes_the_same_memory_after_each_large_session() -> None:
    """Entries are only ever added to a generation's table, so it grows to the same size each
    time: a worker holds as much after its tenth large session as after its first."""
    cached = CachingCounter(ApproxCounter(), max_texts=3_000)
    held = []
    tracemalloc.start()
    try:
        for session in range(4):
            cached.count_many([f"session {session} text {n}" for n in range(2_950)])
            held.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    assert max(held[1:]) <= held[0]


def test_texts_of_one_length_or_one_prefix_keep_their_own_counts() -> None:
    spy = SpyCounter()
    cached = CachingCounter(spy)
    texts = [f"{n:04d}" for n in range(2_000)] + ["", "a", "a" * 2, "\N{GRINNING FACE}"]
    assert cached.count_many(texts) == [len(text) for text in texts]
    spy.calls.clear()
    assert [cached.count(text) for text in texts] == [len(text) for text in texts]
    assert spy.calls == []


@given(
    st.lists(st.text(max_size=12), max_size=200),
    st.integers(min_value=1, max_value=20),
)
def test_the_cache_answers_what_its_counter_would_and_stays_within_its_bound(
    texts: list[str], max_texts: int
) -> None:
    cached = CachingCounter(SpyCounter(), max_texts=max_texts)
    for text in texts:
        assert cached.count(text) == len(text)
        assert cached.cached_texts <= max_texts


def test_many_texts_at_once_are_each_counted_as_alone(counter: TokenCounter) -> None:
    # Enough text that the batch is split among threads, in runs of unequal lengths.
    texts = [f"line {n}: " + "def f(x): return x * 2\n" * (n % 97) for n in range(3_000)]
    texts += ["", "<|endoftext|> is ordinary text here", "ünïcödé ✓"]
    assert sum(map(len, texts)) > token_module._THREADED_BATCH_CHARS
    tiktoken_counter = counter.inner if isinstance(counter, CachingCounter) else counter
    assert isinstance(tiktoken_counter, TiktokenCounter)
    assert tiktoken_counter.count_many(texts) == [tiktoken_counter.count(t) for t in texts]
    assert count_texts(counter, texts) == [counter.count(t) for t in texts]


@given(st.lists(st.text(max_size=40), max_size=60), st.integers(1, 8))
def test_text_runs_for_threads_keep_every_text_in_order(texts: list[str], parts: int) -> None:
    runs = token_module._slices(texts, parts)
    assert [text for run in runs for text in run] == texts
    assert all(runs)


@given(
    st.lists(st.sampled_from(["", "a", "bb", "ccc", "dddd", "e" * 9, "f" * 31]), max_size=80),
    st.integers(min_value=1, max_value=6),
)
def test_a_batch_through_the_cache_counts_as_one_by_one_and_each_new_text_once(
    texts: list[str], max_texts: int
) -> None:
    spy = SpyCounter()
    cached = CachingCounter(spy, max_texts=max_texts)
    cached.count("bb")
    spy.calls.clear()
    assert cached.count_many(texts) == [len(text) for text in texts]
    assert spy.calls == list(dict.fromkeys(t for t in texts if t != "bb"))
    assert cached.cached_texts <= max_texts
    spy.calls.clear()
    assert [cached.count(text) for text in texts] == [len(text) for text in texts]


def test_a_batch_is_remembered_as_counting_one_by_one_would() -> None:
    spy = SpyCounter()
    cached = CachingCounter(spy, max_texts=4)
    cached.count_many(["a" * 10, "b" * 10, "c" * 10, "a" * 10, "d" * 10])
    cached.count("e" * 10)  # as after a, b, c, a, d one by one: a and b go
    spy.calls.clear()
    assert [cached.count(t * 10) for t in "cdab"] == [10, 10, 10, 10]
    assert spy.calls == ["a" * 10, "b" * 10]


@settings(max_examples=30)
@given(st.lists(st.sampled_from(["text", "call", "result", "thought", "image", "opaque"])))
def test_messages_counted_together_count_as_each_alone(kinds: list[str]) -> None:
    image = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 64).decode()
    parts = {
        "text": Part.from_text("plain words, and more words"),
        "call": Part.from_function_call(FunctionCall(name="grep", args={"q": "x", "n": 3})),
        "result": Part.from_function_response(
            FunctionResponse(name="grep", result={"lines": ["a", "b"], "ok": True})
        ),
        "thought": Part.from_thought("thinking"),
        "image": Part.from_inline_data(InlineData(mime_type="image/png", data=image)),
        "opaque": Part.from_opaque("code_execution", {"code": "print(1)"}),
    }
    messages = [message(*(parts[k] for k in kinds[:n])) for n in range(len(kinds) + 1)]
    for counter in (load_counter(), ApproxCounter(), SpyCounter()):
        assert count_messages(messages, counter) == [count_message(m, counter) for m in messages]


# Letters (with and without case, and marks that join them), digits, runs of spaces and line
# breaks, apostrophes of contractions, punctuation: the pieces of text the encodings' patterns
# tell apart, so a cut in the wrong place changes a count.
TEXT_FRAGMENTS = [
    "a",
    "Word",
    "éte",
    "STRASSE",
    "ßtraße",
    "Ωмега",
    "中文",
    "e\u0301",
    "'s",
    "'LL",
    "’re",
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\n\n",
    " \n",
    "\r\n",
    "0",
    "12",
    "3456",
    ".",
    ",",
    "--",
    "/",
    "_",
    "(x)",
    "🙂",
]
texts = st.lists(st.sampled_from(TEXT_FRAGMENTS), max_size=80).map("".join)


@pytest.mark.parametrize("encoding_name", ["cl100k_base", "o200k_base"])
@settings(max_examples=300, deadline=None)
@given(text=texts, size=st.integers(1, 30))
def test_a_long_text_counted_a_piece_at_a_time_counts_as_a_whole(
    encoding_name: str, text: str, size: int
) -> None:
    encode = tiktoken_encoding(encoding_name).encode_ordinary

    pieces = list(token_module.text_pieces(text, size))

    assert "".join(pieces) == text
    assert sum(len(encode(piece)) for piece in pieces) == len(encode(text))
    assert all(len(piece) >= size for piece in pieces[:-1])


def test_a_pasted_log_is_counted_without_a_list_of_its_every_token() -> None:
    counter = load_counter("cl100k_base")
    words = " ".join(f"word{n % 97} value={n} path/to/file_{n}.py" for n in range(60_000))
    text = f"{words}\n{words}"  # 4.6 MB: several pieces

    tracemalloc.start()
    try:
        counted = counter.count(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert counted == len(tiktoken_encoding("cl100k_base").encode_ordinary(text))
    # Its 1.7 million tokens as a list would take 60 MB; a piece's take a few.
    assert peak < 30_000_000


def tiktoken_encoding(name: str) -> Any:
    counter = load_counter(name)
    assert isinstance(counter, CachingCounter)
    inner = counter.inner
    assert isinstance(inner, TiktokenCounter)
    return inner.encoding
