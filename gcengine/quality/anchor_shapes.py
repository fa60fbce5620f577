"""The shapes the anchor finder (``gcengine.quality.anchors``) reads lines and sentences by:
where output reports an error and where it shows a file's code, what a user's request, a test
name, a task-list item and a link to an issue look like. Patterns only, matched against
normalised text (lower case) unless they say otherwise."""

from __future__ import annotations

import re

# In raw output an error is a line that reports one at its head, after what a tool writes
# first (a location, a time, a level, a list marker): not code that names one ("raise
# InvoiceError(...)" in a file that was read, logger.error("sync failed")).
ERROR_LINE = re.compile(
    r"^(?:[-*•❯×✗>|]+ )*(?:\S+:\d+(?::\d+)?:? )?(?:[\d:.]+ )?(?:\[\w+\] )?(?:e +)?"
    r"(?:(?:\*\* \()?[\w.]*(?:error|exception|warning)\)?(?:\[[\w-]+\])?:|traceback\b|"
    r"(?:fatal|panic):|(?:[\w.=~/-]+ ){0,4}failed\b)"
)

# A line of a file as a read shows it (``  12→code``, cat -n's ``    12\tcode``).
SOURCE_LINE = re.compile(r"\s*\d+(?:→|\t)")

EXIT_CODE = re.compile(r"exit code \d+", re.IGNORECASE)

# An ExUnit failure (``  1) test renders the page (SpotterWeb.PageTest)``).
FAILED_TEST = re.compile(r"\s*\d+\) test (.{3,120}?) \([\w.]+\)\s*$")

# What a user's sentence that asks for something holds: a polite or direct ask, or a verb of
# work at its start.
REQUEST = re.compile(
    r"\b(?:please|can you|could you|would you|i want|i'd like|i need|we need|let's|make it)\b|"
    r"^(?:add|fix|implement|make|run|check|create|update|remove|write|change|use|move|rename|"
    r"refactor|investigate|review|commit|push|merge|close|open|start|continue|look|find|"
    r"show|explain|test|build|deploy|debug|try|set|replace|delete|do|go|work)\b"
)

# What Claude Code puts in a user row that the user did not type.
INJECTED = ("<", "[request interrupted", "caveat:", "this session is being continued")

REQUESTS_PER_PROMPT = 5

# A command's output Claude Code shows in a user row: what it prints, nobody's sentences.
COMMAND_OUTPUT = ("<local-command-stdout>", "<local-command-stderr>", "<bash-stdout>")

# A heading ("Pending Tasks:", "Optional Next Step:") announces open work, it is none.
HEADING = re.compile(r"#{1,6} .*|[\W\d]*(?:\w+ ){0,4}\w+\W*:\W*")

CHECKBOX = re.compile(r"^\s*[-*] \[[ xX]\] (.{3,200})$", re.MULTILINE)

QUESTION_TOOLS = frozenset({"AskUserQuestion"})

# A test function (pytest's test_cap, Go's and JUnit's TestCap), a pytest node id, an ExUnit
# test.
TEST_NAME = re.compile(r"test_\w|Test[A-Z]")

TEST_ID = re.compile(r"[\w./-]+\.py(?:::[\w\[\]-]+)+|\btest \"[^\"\n]{3,120}\"")

ISSUE_URL = re.compile(r"//(?:www\.)?git(?:hub|lab)\.[\w./-]+/(?:issues|pull|merge_requests)/\d+")

# Errors as a topic, not one that happened ("error messages", "error handling").
GENERIC_ERROR = re.compile(r"\berrors? (?:messages?|handling|output|paths?|cases?|codes?)\b")

# A colour written as digits (background: #333), which reads as an issue tag.
COLOUR = re.compile(r"(?:colou?r|background|border|fill|stroke)[\w-]*: ?#\d{3}(?:\d{3})?\b")

# Open-work words that say nothing open: a value in code ('pending').
CODE_VALUE = re.compile(r"['\"`](?:pending|todo|blocked)['\"`]")

# The agent saying what it does next ("Let me check the remaining work", "Now mark error
# spans"): no error, decision or open work of its own.
NARRATION = re.compile(r"(?:let me|now|i'll|i will|next, i)\b")

# What makes a one-digit tag an issue or pull request ("fixes #4"), not a label ("Step #4").
ISSUE_WORD = re.compile(
    r"\b(?:issues?|pr|pull request|ticket|fix(?:es|ed)?|close[sd]?|resolve[sd]?) #"
)

# A URL that names no page: a template (http://127.0.0.1:${PORT}), a placeholder
# (github.com/user/repo), a bare host (https://hexdocs.pm), an empty search (?q=).
NO_ADDRESS = re.compile(r"\{|github\.com/(?:user|owner|org)/repo\b|^https?://[^/]+/?$|[?&]q=$")

# Numbers: a quantity with its unit, a version, an HTTP status, a commit.
UNIT_WORDS = (
    "% ms µs us ns s sec secs second seconds min mins minute minutes h hr hrs hour hours day "
    "days kb mb gb tb kib mib gib byte bytes token tokens k m x rpm rps qps usd eur gbp "
    "lines files tests turns requests"
)
UNITS = sorted(UNIT_WORDS.split(), key=len, reverse=True)
QUANTITY = re.compile(
    r"(?<![\w.$€£])([$€£] ?)?(\d+(?:\.\d+)?)(?: ?(" + "|".join(map(re.escape, UNITS)) + r"))?"
    r"(?![\w%])"
)
# Where a quantity can start: a currency sign, or a digit that does not continue a word or a
# number. Led by the characters it looks for, this search skips the rest of the text; the
# quantity's own pattern is tried at every character.
QUANTITY_START = re.compile(r"[$€£\d](?<![\w.$€£]\d)")
VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+\.\d+(?:[-+][0-9a-z.]+)?(?![\w.])")
HTTP_STATUS = re.compile(r"\b(?:http|status|status code)[ :=]*([1-5]\d\d)\b")
# Seven to twelve digits (a short hash) or forty (a whole one), not a part of a UUID
# (5a430368-9e91-...) or another hash's length (an MD5's 32).
COMMIT = re.compile(
    r"(?<![\w-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])(?:[0-9a-f]{40}|[0-9a-f]{7,12})(?![\w-])"
)
# A commit is seven hexadecimal digits in a row at least: with each of them marked, ``in``
# looks for the run far faster than the pattern is tried at every character.
HEX_MARKS = str.maketrans(dict.fromkeys("0123456789abcdef", "\x01"))
HEX_RUN = "\x01" * 7
