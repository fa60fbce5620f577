"""Anchor text, normalised and matched: what the anchor finder (``gcengine.quality.anchors``)
and scoring both read text as.

Text is normalised the same way on both sides (lower case, one space between words, no
thousands separators, straight quotes); a literal anchor is found as whole words, and a terms
anchor by its key terms.
"""

from __future__ import annotations

import re

from gcengine.quality import anchor_shapes as shapes
from gcengine.text import sentences

# A sentence's first key terms are all its terms: one run-on sentence cannot become
# unmatchable.
MAX_TERMS = 16

# Runs of spaces and any other horizontal whitespace become one space (a lone space is left
# alone: most text has nothing to change, and a no-op substitution still copies it). The
# pattern starts with the whitespace it replaces, so the search skips every other character
# without trying a match there: ``[^\S\n]{2,}|[^\S\n ]`` found the same runs at twice the cost.
_HORIZONTAL_SPACE = re.compile(r"[^\S\n](?:(?<! )|[^\S\n])[^\S\n]*")
# Led by the comma it takes out (``,(?<=\d,)`` is ``(?<=\d),``): a search skips to the commas,
# where a pattern led by a look behind is tried at every character.
_THOUSANDS = re.compile(r",(?<=\d,)(?=\d{3}(?!\d))")
_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "\u00a0": " "})
# The characters of a word of normalised text (``TERM``).
WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")
# A word of normalised text: letters, digits and underscores.
TERM = re.compile(r"[a-z0-9_]+")
# Every byte but a word's characters made a space: an ASCII text's words are then what a split
# at spaces gives. Translating and splitting in C reads a long text in about 3/4 of the time
# ``TERM.findall`` takes, and a replay's scorer reads every word of a session's tens of
# megabytes of text.
_SPACED_WORDS = bytes(byte if chr(byte) in WORD_CHARS else ord(" ") for byte in range(256))
_VOCABULARY_WORD = re.compile(r"[a-z0-9_]+(?:\.[a-z0-9_]+)*")
# What a literal anchor found by a pattern is trimmed of at its ends.
EDGE_PUNCTUATION = ".,;:!?'\"("


def normalised(text: str) -> str:
    """Lower case, straight quotes, no thousands separators, one space between words."""
    return _HORIZONTAL_SPACE.sub(" ", folded(text))


def folded(text: str) -> str:
    """``normalised`` but for the spaces: what a caller that splits the text into words anyway
    (and so collapses every run of whitespace itself) needs."""
    text = text.lower()
    if not text.isascii():
        text = text.translate(_QUOTES)
    if "," in text:
        text = _THOUSANDS.sub("", text)
    return text


def normalised_sentences(text: str) -> list[str]:
    """The text's sentences, normalised and stripped, empty ones left out."""
    return [s for piece in sentences(normalised(text)) if (s := piece.strip())]


def literal_found(haystack: str, key: str) -> bool:
    """Whether ``key`` occurs in ``haystack`` as whole words: an end of the key that is a
    letter, digit or underscore must not continue a longer word there."""
    start = haystack.find(key)
    if start < 0 or not key:
        return False
    open_start, open_end = key[0] in WORD_CHARS, key[-1] in WORD_CHARS
    while start >= 0:
        end = start + len(key)
        before_ok = not open_start or start == 0 or haystack[start - 1] not in WORD_CHARS
        after_ok = not open_end or end == len(haystack) or haystack[end] not in WORD_CHARS
        if before_ok and after_ok:
            return True
        start = haystack.find(key, start + 1)
    return False


def key_terms(sentence: str) -> frozenset[str]:
    """The words of a normalised sentence that carry its meaning: not stop words, and three
    characters or more (two for numbers)."""
    terms: list[str] = []
    # Read word by word: a long sentence's first terms are all it needs.
    for match in TERM.finditer(sentence.replace("'", "")):
        word = match.group()
        if word in shapes.STOP_WORDS or (len(word) < 3 and not word.isdigit()) or word in terms:
            continue
        terms.append(word)
        if len(terms) == MAX_TERMS:
            break
    return frozenset(terms)


def sentence_terms(sentence: str) -> frozenset[str]:
    """Every word of normalised text, which a terms anchor's terms are looked for in."""
    return _words(sentence, b"'")


def literal_words(text: str) -> frozenset[str]:
    """Every run of letters, digits and underscores in normalised text, as written: a literal
    anchor found as whole words is made of such runs, each a whole one there."""
    return _words(text, b"")


def _words(text: str, dropped: bytes) -> frozenset[str]:
    """The words (``TERM``) of ``text`` once the characters ``dropped`` are taken out (an
    apostrophe joins the two halves of "don't")."""
    if text.isascii():
        spaced = text.encode("ascii").translate(_SPACED_WORDS, dropped)
        return frozenset(spaced.decode("ascii").split())
    for character in dropped.decode("ascii"):
        text = text.replace(character, "")
    return frozenset(TERM.findall(text))


def is_literal_word(text: str) -> bool:
    """Whether normalised text is a single one of ``literal_words``."""
    return TERM.fullmatch(text) is not None


def vocabulary_words(text: str) -> list[str]:
    """Words with their inner dots kept (tax.py, 3.12.3, 47500): what an invented anchor is
    checked against."""
    return _VOCABULARY_WORD.findall(text)
