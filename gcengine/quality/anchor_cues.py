"""Checks at C speed that rule a text out before a pattern of the anchor finder is searched.

A regular expression that is not led by a literal is tried at every character of a text, at
10-30 ns a character; a generated session's message is one sentence of 800-4,000 characters
and most of its sentences hold no match of most patterns. Each check here answers "no" only
when the pattern it stands before cannot match, so a caller that skips the search on "no" finds
what the search finds: the reason each is implied by its pattern is written beside it, and
``tests/engine/test_anchor_cues.py`` compares each with its pattern on generated texts.

The checks work on bytes where they can: ``bytes.translate`` and ``in`` on bytes cost under a
nanosecond a character, where ``str.translate`` with a mapping costs ten.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from gcengine.quality import anchor_shapes as shapes

# Every ASCII letter, digit and underscore (what ``\w`` matches in ASCII) kept; every other
# byte a space, a non-ASCII one too: a character ``\w`` matches outside ASCII (é) then ends a
# word where a pattern's word boundary would not, which only lets more through.
_WORD_BYTES = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
_RUNS_TABLE = bytes(
    byte if byte in _WORD_BYTES else ord(" ") for byte in range(256)
)  # fmt: skip


# The same for an alternative's text (ASCII).
_RUNS_TEXT = {byte: " " for byte in range(128) if byte not in _WORD_BYTES}


class WordAlternatives:
    """Whether a text may hold one of a pattern's alternatives that the pattern finds
    between word boundaries (``\\b(?:must|do not|next:)\\b``). At a match the characters
    on either side of it are no word characters (nor, after ``next:``, is its colon): in the
    text with every character but ASCII letters, digits and underscores a space, the
    alternative read the same way (``next``, ``don t``) stands between spaces. That is
    searched for, led by the space a search skips to, where the pattern, led by a word
    boundary, is tried at every character."""

    def __init__(self, alternatives: Iterable[str]) -> None:
        spaced = {" ".join(words.translate(_RUNS_TEXT).split()) for words in alternatives}
        # Alternatives that begin alike share that beginning: tried once a space, not once each.
        self._pattern = re.compile(f" {shapes.shared_beginnings(sorted(spaced))}(?= )".encode())

    def may_hold(self, text: str) -> bool:
        """False when ``text`` holds no alternative."""
        runs = text.encode("utf-8", "surrogatepass").translate(_RUNS_TABLE)
        return self._pattern.search(b" " + runs + b" ") is not None


# A text shorter than this is searched at once: checking it first costs more than it spares.
_SHORT = 128

# ``QUANTITY_START`` (``[$€£\d](?<![\w.$€£]\d)``) in ASCII text matches at a dollar sign or at
# a digit that starts the text or follows neither a word character nor ``.$``: with digits as
# ``0``, those characters and the word characters as ``a``, and the rest as spaces, that is a
# ``$``, a leading ``0`` or a ``0`` after a space.
_QUANTITY_TABLE = bytes(
    ord("$") if byte == ord("$")
    else ord("0") if 0x30 <= byte <= 0x39
    else ord("a") if byte in _WORD_BYTES or byte == ord(".")
    else ord(" ")
    for byte in range(256)
)  # fmt: skip


def may_start_quantity(text: str) -> bool:
    """False when ``QUANTITY_START`` finds nothing in ``text``. Exact in ASCII text of
    ``_SHORT`` characters or more; any other text (a currency sign, a digit of another script,
    a word character of another script before a digit) is left to the pattern: True."""
    if len(text) < _SHORT or not text.isascii():
        return True  # a short text is searched at once, for less than this check costs
    marked = text.encode("ascii").translate(_QUANTITY_TABLE)
    return b"$" in marked or marked[:1] == b"0" or b" 0" in marked


# A commit is seven hexadecimal digits in a row at least (``COMMIT``): each marked as \x01
# (UTF-8 writes no other character with that byte), ``in`` looks for the run.
_HEX_TABLE = bytes.maketrans(b"0123456789abcdef", b"\x01" * 16)
_HEX_RUN = b"\x01" * 7


def holds_hex_run(text: str) -> bool:
    """Whether ``text`` holds seven of ``0-9a-f`` (or \\x01) in a row."""
    return _HEX_RUN in text.encode("utf-8", "surrogatepass").translate(_HEX_TABLE)


def one_spaced(text: str) -> str:
    """``" ".join(text.split())``: ``text`` as it is when it is printable ASCII without two
    spaces in a row or a space at either end (``str.split`` splits ASCII text at a space and
    at control characters, which are not printable), as most sentences are."""
    if (
        text.isascii()
        and text.isprintable()
        and "  " not in text
        and text[:1] != " "
        and text[-1:] != " "
    ):
        return text
    return " ".join(text.split())


def may_report(line: str, lowered: str, starts: tuple[str, ...]) -> bool:
    """False when no sentence of a line of output (``lowered``: its lower case) holds
    "failed" or a colon or starts with one of ``starts``: what every sentence an error line
    is looked for in holds. Normalising a sentence joins no letters and takes out no colon;
    a line without a sentence's end (. ! ?) is one sentence, which starts where the line
    does; one with a terminal code is left to its sentences (taking a code out joins the text
    around it)."""
    if "\x1b" in line or ":" in line or "failed" in lowered:
        return True
    if "." in line or "!" in line or "?" in line:
        return True
    return lowered.lstrip().startswith(starts)
