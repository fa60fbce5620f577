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

from collections.abc import Iterable

# Every ASCII letter, digit and underscore (what ``\w`` matches in ASCII) kept; every other
# byte a space, a non-ASCII one too: a character ``\w`` matches outside ASCII (é) then splits
# a run where a pattern's word boundary would not, which only lets more through.
_WORD_BYTES = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
_RUNS_TABLE = bytes(
    byte if byte in _WORD_BYTES else ord(" ") for byte in range(256)
)  # fmt: skip


def word_runs(text: str) -> list[bytes]:
    """The runs of ASCII letters, digits and underscores in ``text``, split at every other
    character: each whole word a pattern finds between word boundaries is one of them."""
    return text.encode("utf-8", "surrogatepass").translate(_RUNS_TABLE).split()


class WordAlternatives:
    """Whether a text may hold one of a pattern's alternatives that the pattern finds
    between word boundaries (``\\b(?:must|do not|next:)\\b``): at a match, each run of
    letters, digits and underscores in the alternative is a whole run of the text (the
    boundary, or a character of the alternative that is no word character, ends it) and the
    alternative itself is in the text. So a text whose runs (``word_runs``) hold no
    alternative's key run (its longest), or that holds none of the alternatives with a key
    run it has, holds no match."""

    def __init__(self, alternatives: Iterable[str]) -> None:
        self._by_key: dict[bytes, list[str]] = {}
        for alternative in alternatives:
            runs = word_runs(alternative)
            key = max(runs, key=len)  # the first of the longest
            self._by_key.setdefault(key, []).append(alternative)
        self._keys = frozenset(self._by_key)

    def may_hold(self, text: str, runs: list[bytes]) -> bool:
        """False when ``text`` (whose ``word_runs`` are ``runs``) holds no alternative."""
        keys = self._keys.intersection(runs)
        return any(alternative in text for key in keys for alternative in self._by_key[key])


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
    """False when ``QUANTITY_START`` finds nothing in ``text``. Exact in ASCII text; any
    other text (a currency sign, a digit of another script, a word character of another
    script before a digit) is left to the pattern: True."""
    if not text.isascii():
        return True
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
