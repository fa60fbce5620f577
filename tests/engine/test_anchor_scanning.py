"""The anchor finder's fast checks answer exactly as the patterns they stand in for: each
skips work a plain search does, never a match."""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from gcengine.quality import anchor_shapes as shapes
from gcengine.quality import anchors

# Pieces that make the edges of an error's name (word characters of several scripts, a digit
# of another script, capitals, an underscore) meet in every order.
_ERROR_PIECES = st.sampled_from(
    ["Error", "Exception", "error", "exception", "ERROR", "E", "e", "rror", "Bad", "x", "_",
     "1", "٣", "é", "É", "ß", " ", ".", "(", "\n"]
)  # fmt: skip


@given(st.lists(_ERROR_PIECES, max_size=8).map("".join))
def test_names_error_is_error_name_found(text: str) -> None:
    assert shapes.names_error(text) is (shapes.ERROR_NAME.search(text) is not None)


def test_names_error_tells_a_type_from_a_name_ending_in_one() -> None:
    assert shapes.names_error("raised BadMapError here")
    assert shapes.names_error("Error: no such file")
    assert not shapes.names_error("lastSyncError is set")
    assert not shapes.names_error("set_error and errors")


_REQUEST_PIECES = st.sampled_from(
    ["please", "can you", "could", "you", "i want", "i'd like", "i need", "need", "let's",
     "make it", "make", "add", "fix", "run", "x", "'", " ", ".", "-"]
)  # fmt: skip


@given(st.lists(_REQUEST_PIECES, max_size=6).map("".join))
def test_asks_is_request_found(sentence: str) -> None:
    assert anchors._asks(sentence) is (shapes.REQUEST.search(sentence) is not None)


def _names_error_by_patterns(sentence: str, raw: str) -> bool:
    """``_names_error`` as the patterns alone say it: its specification."""
    if "error" in sentence:
        sentence = shapes.GENERIC_ERROR.sub(" ", sentence)
    named = re.search(r"(?:error|exception)\b", sentence)
    if named and shapes.ERROR_NAME.search(shapes.GENERIC_ERROR.sub(" ", raw)):
        return True
    return re.search(r"\b(?:traceback|failed)\b|\b(?:fail|fatal|panic):", sentence) is not None


_SENTENCE_PIECES = st.sampled_from(
    ["Error", "error", "errors", "ValueError", "Exception", "exception", "error messages",
     "returns an error", "Raises Error", "FAILED", "fatal:", "x", "é", "_", " ", "  ", "."]
)  # fmt: skip


@given(st.lists(_SENTENCE_PIECES, max_size=8).map("".join))
def test_names_error_of_a_sentence_is_the_patterns(raw: str) -> None:
    sentence = " ".join(anchors.folded(raw).split())
    assert anchors._names_error(sentence, raw) == _names_error_by_patterns(sentence, raw)


_CLIP_PIECES = st.sampled_from(["word", "x" * 150, " ", "   ", "\t", "\u00a0", " " * 300, "é"])


@given(st.lists(_CLIP_PIECES, max_size=12).map("".join))
def test_clip_of_a_long_text_spaces_its_head_as_the_whole(text: str) -> None:
    spaced = " ".join(text.split())
    limit = anchors.ANCHOR_TEXT_CHARS
    expected = spaced if len(spaced) <= limit else spaced[: limit - 1] + "…"
    assert anchors._clip(text) == expected


def test_anchors_made_fast_are_anchors_made_plainly() -> None:
    fields = [field.name for field in dataclasses.fields(anchors.Anchor)]
    values = (anchors.AnchorClass.ERRORS, "key", "Key", anchors.MatchRule.TERMS, frozenset({"k"}))
    assert fields == ["anchor_class", "key", "text", "rule", "terms"]  # every one set
    fast, plain = anchors._anchor(*values), anchors.Anchor(*values)
    assert (fast, hash(fast), repr(fast)) == (plain, hash(plain), repr(plain))
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.key = "other"  # type: ignore[misc]


# Word characters, each separator ASCII has (whitespace ``split`` knows of included), an
# apostrophe, and characters of other scripts, which end a word as any separator does.
_WORD_PIECES = st.sampled_from(
    ["ab", "z9", "_", "0", "'", " ", "\n", "\t", "\x0b", "\x0c", "\r", "\x1c", "\x1f", "\x00",
     "\x7f", ".", "-", "A", "é", "’", "\x85", "\xa0", "٣"]
)  # fmt: skip


@given(st.lists(_WORD_PIECES, max_size=12).map("".join))
def test_words_of_a_text_are_the_word_pattern_found(text: str) -> None:
    """ASCII text is split in C rather than searched: the words are the pattern's all the same."""
    assert anchors.literal_words(text) == frozenset(re.findall(r"[a-z0-9_]+", text))
    terms = frozenset(re.findall(r"[a-z0-9_]+", text.replace("'", "")))
    assert anchors.sentence_terms(text) == terms


# Pieces that make a name meet the text around it in every way: inside a longer word, in
# capitals, after a thousands separator, beside characters of other scripts.
_NAME_PIECES = st.sampled_from(
    ["round_money", "Round_Money", "ROUND_MONEY", "round_money_all", "x", "_", "1", ",", "000",
     " ", ".", "é", "\u212a", "\u2019", "  "]
)  # fmt: skip


def _name_anchor_by_steps(name: str, sentence: str, raw: str) -> tuple[str, str] | None:
    """``_name_anchor``'s key and text as its rule says them: the key found as whole words
    anywhere in the sentence, shown as its key when ``raw`` writes it so."""
    key = anchors.folded(name)
    if len(key) < 2 or not anchors.literal_found(sentence, key):
        return None
    shown = key if key in raw else anchors._clip(anchors._as_written(key, raw))
    return key, shown


@given(
    st.sampled_from(["round_money", "Round_Money", "\u212aey_name"]),
    st.lists(_NAME_PIECES, max_size=8).map("".join),
)
@example("round_money", "round_money_all, Round_Money")  # whole only where written again
def test_a_name_is_found_where_its_key_is_a_whole_word(name: str, raw: str) -> None:
    sentence = anchors.cues.one_spaced(anchors.folded(raw))
    anchor = anchors._name_anchor(name, sentence, raw)
    found = None if anchor is None else (anchor.key, anchor.text)
    assert found == _name_anchor_by_steps(name, sentence, raw)
