"""Test names in test runners' output (an ExUnit failure's; a JavaScript run's) and in
JavaScript and TypeScript sources (vitest, jest, mocha): in a source, the string an ``it(...)``,
``test(...)`` or ``describe(...)`` call is given; in a run's output, the lines that name a test
once the output shows it is a run (its tally: ``Tests  1 failed | 15 skipped (16)``, ``Tests: 1
failed, 2 total``, ``15 passing``).

A JavaScript test is keyed by its bare name (``sets default context compaction threshold to
90%``), the words a source, a run and a summary all write, so a summary that names the test
keeps it whichever of them it came from. Of a run's ``FAIL file > suite > test`` line or jest's
``● suite › test`` heading, the last part is the test.
"""

from __future__ import annotations

import re

from gcengine.quality import anchor_shapes as shapes

# it("..."), test('...'), describe(`...`, and their .only/.skip/.each(...) forms, then the comma
# before the test's body: not a method called test (/^o1-/.test(id)), not a name alone in prose.
_SOURCE_CALL = re.compile(
    r"(?<![\w.$])(?:it|test|describe)(?:\.(?:only|skip|todo|each|concurrent|sequential|fails)"
    r"(?:\([^()]*\))?)*\(\s*(['\"`])((?:(?!\1)[^\n]){3,120}?)\1\s*,"
)
_SOURCE_CUES = ("it(", "test(", "describe(", "it.", "test.", "describe.")

# A run's tally line (vitest, jest, mocha): what shows an output is a test run.
_TALLY = re.compile(
    r"^\s*(?:(?:tests?|test files|test suites):?\s+\d+ (?:passed|failed|skipped)|"
    r"\d+ (?:passing|failing)\b)",
    re.IGNORECASE | re.MULTILINE,
)
# Every tally holds one of these words (as the runners write them, in lower case).
_TALLY_CUES = ("pass", "fail", "skipped")
# A test's line in a run: a mark and its name, with the time it took (vitest ``× name 1312ms``,
# jest ``✕ name (5 ms)``); vitest's ``FAIL file > suite > name``; jest's ``● suite › name``.
_MARKED = re.compile(r"\s*[✓✔√×✕✗✘]\s+(.{3,200}?)(?:\s+\(?\d+(?:\.\d+)? ?m?s\)?)?\s*$")
_FAIL_LINE = re.compile(r"\s*FAIL\s+\S+\s+>\s+(.{3,300}?)\s*$")
_JEST_HEADING = re.compile(r"\s*●\s+(.+ › .+?)\s*$")


def source_names(sentence: str) -> list[str]:
    """The test and suite names a source's ``it``, ``test`` and ``describe`` calls in a
    (normalised) sentence give."""
    if "(" not in sentence or not any(cue in sentence for cue in _SOURCE_CUES):
        return []
    return [m.group(2).strip() for m in _SOURCE_CALL.finditer(sentence)]


def is_test_run(text: str) -> bool:
    """Whether a tool's output is a JavaScript test run's (it prints a tally)."""
    if not any(word in text for word in _TALLY_CUES):
        return False  # most output is none: a look for the words is a fraction of a search
    return _TALLY.search(text) is not None


def output_test_name(line: str, *, run: bool) -> str | None:
    """The test a line of output names: an ExUnit failure's (``1) test renders the page
    (SpotterWeb.PageTest)``), or in a JavaScript test run (``run``) a test's line."""
    if "test " in line and (test := shapes.FAILED_TEST.match(line)) is not None:
        return f"test {test.group(1)}"
    if not run:
        return None
    if (match := _MARKED.match(line)) is not None:
        return match.group(1).strip()
    if (match := _FAIL_LINE.match(line)) is not None:
        return match.group(1).rsplit(" > ", 1)[-1].strip()
    if (match := _JEST_HEADING.match(line)) is not None:
        return match.group(1).rsplit(" › ", 1)[-1].strip()
    return None
