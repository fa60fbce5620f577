"""Each C-speed check the anchor finder runs before a pattern (``anchor_cues``) answers "no"
only where the pattern finds nothing, on generated texts that hold and lack what the pattern
needs; where a check is exact, it answers as the pattern does."""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from gcengine import anchors as gcanchors
from gcengine.quality import anchor_cues as cues
from gcengine.quality import anchor_shapes as shapes
from gcengine.quality import anchors


def _texts(pieces: list[str], size: int = 10) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(pieces), max_size=size).map("".join)


# Every trigger word, its pieces and near misses, with what can stand around a word.
_TRIGGER_PIECES = [
    *anchors._TRIGGER_WORDS, "do", "not", "yet", "don", "t", "'", "next", ":", "follow", "-",
    "up", "use", "we", "ll", "s", "x", "_", "é", "→", " ", "  ", ".", "\n", "1",
]  # fmt: skip


@given(_texts(_TRIGGER_PIECES))
def test_trigger_words_are_looked_for_only_where_they_may_be(sentence: str) -> None:
    found = anchors._ANY_TRIGGER_WORD.search(sentence) is not None
    may = anchors._TRIGGERS.may_hold(sentence)
    assert may or not found


def test_a_sentence_without_a_trigger_word_is_not_searched() -> None:
    plain = "the agent read the window log and the budget_12 index do nothing now"
    assert not anchors._TRIGGERS.may_hold(plain)
    said = "we do not merge until review (next: deploy)"
    assert anchors._TRIGGERS.may_hold(said)


_QUANTITY_PIECES = ["1", "12", "$", "€", "£", "٣", "a", "_", ".", " ", "-", "(", "x1", "é", ","]


@given(_texts(_QUANTITY_PIECES))
def test_a_quantity_start_is_looked_for_exactly_where_it_may_be(text: str) -> None:
    for padded in (text.rjust(cues._SHORT), text.ljust(cues._SHORT)):  # spaces start none
        found = shapes.QUANTITY_START.search(padded) is not None
        if padded.isascii():
            assert cues.may_start_quantity(padded) is found
        else:
            assert cues.may_start_quantity(padded)


_HEX_PIECES = ["a", "f", "0", "9", "abc", "1234", "g", " ", "\x01", "é", "A", "-"]


@given(_texts(_HEX_PIECES, 14))
def test_a_hex_run_is_told_as_the_pattern_tells_it(text: str) -> None:
    assert cues.holds_hex_run(text) is (re.search(r"[0-9a-f\x01]{7}", text) is not None)
    if shapes.COMMIT.search(text):
        assert cues.holds_hex_run(text)


_SPACE_PIECES = ["a", "b", " ", "  ", "\t", "\n", "\x1c", "\x0b", "\u00a0", "\u2003", "é", "\x7f"]


@given(st.one_of(_texts(["a", "b", " ", "  ", "."]), _texts(_SPACE_PIECES)))
def test_one_spaced_is_split_and_joined(text: str) -> None:
    assert cues.one_spaced(text) == " ".join(text.split())


_GENERIC_PIECES = [
    "error", "errors", "Error", " ", "messages", "handling", "log", "logs", "x", "_", "é",
    "→ ", "-> ", "returns ", "raise ", "throws ", "an ", "a ", "exception", "re", "turn",
]  # fmt: skip


@given(_texts(_GENERIC_PIECES))
def test_errors_as_a_topic_are_cut_as_the_pattern_cuts_them(text: str) -> None:
    assert shapes.without_generic_errors(text) == shapes.GENERIC_ERROR.sub(" ", text)


_LINE_PIECES = [
    "failed", "fail", "ed", "error", "Error", ":", "traceback", "Fatal", "panic", "warning",
    "exception", "x", " ", "\t", "\u00a0", ".", "!", "?", "\x1b", "[0m", "\x1b[0m", "é", "1,000",
]  # fmt: skip


@given(_texts(_LINE_PIECES))
@example("x? Traceback here")  # a sentence that starts after the line's
@example("done. error: it broke")
def test_a_line_passed_over_reports_no_error(line: str) -> None:
    if not cues.may_report(line, line.lower(), anchors._ERROR_LINE_STARTS):
        assert not any(anchors._reports_error(s) for _, s in anchors._sentence_pairs(line))


_WORDING_PIECES = [
    "plain", "words", " ", "  ", "\t", "\n", "\x0c", "\x1c", "round_money", "Error", "A", "a",
    "src/tax.py", "tax.py:38", "#412", "BILL-4012", "F401", ".", ":", "-", "_", "/", "#", "~",
    "@", "+", "(", ")", "é", "É", "٣", "9", "x" * 40, "plain words " * 8,
]  # fmt: skip


@given(_texts(_WORDING_PIECES, 16))
@example("A #412 and x.y, a-b c:d ~/e round_money")  # each character a word may need, alone
def test_words_a_search_skips_are_no_anchors(text: str) -> None:
    words = list(gcanchors._split(text))
    for few in (1, 10**9):  # a search for the words that may be anchors; splitting the text
        original = gcanchors._FEW_ANCHOR_BYTES, gcanchors._SHORT
        gcanchors._FEW_ANCHOR_BYTES, gcanchors._SHORT = few, 0
        try:
            candidates = list(gcanchors._candidates(text))
        finally:
            gcanchors._FEW_ANCHOR_BYTES, gcanchors._SHORT = original
        assert candidates == [word for word in words if word in candidates]
        left_out = [word for word in words if word not in candidates]
        assert not any(gcanchors._classify(word.decode("utf-8", "replace")) for word in left_out)
