"""The shapes the anchor finder (``gcengine.quality.anchors``) reads lines and sentences by:
where output reports an error and where it shows a file's code, what a user's request, a test
name, a task-list item and a link to an issue look like, and the common words that carry no
fact. Patterns only, matched against normalised text (lower case) unless they say otherwise."""

from __future__ import annotations

import re
from collections.abc import Iterable

# In raw output an error is a line that reports one at its head, after what a tool writes
# first (a location, a time, a level, a list marker): not code that names one ("raise
# InvoiceError(...)" in a file that was read, logger.error("sync failed")).
ERROR_LINE = re.compile(
    r"^(?:[-*•❯×✗>|]+ )*(?:\S+:\d+(?::\d+)?:? )?(?:[\d:.]+ )?(?:\[\w+\] )?(?:e +)?"
    r"(?:(?:\*\* \()?[\w.]*(?:error|exception|warning)\)?(?:\[[\w-]+\])?:|traceback\b|"
    r"(?:fatal|panic):|(?:[\w.=~/-]+ ){0,4}(?<!\d )failed\b)"
)
# A tally ("Tests 1 failed | 15 skipped", "1 failed, 2 passed") counts failures; the failing test
# and its assertion are the signature (``failed`` after a count is no error line above).

# What a tool prints while it works ("Compiling 41 files (.ex)", "Getting extensions in current
# project...", "Generated spotter app"): a failed command's first line when it is one of these
# says how far it got, not what went wrong.
PROGRESS_LINE = re.compile(
    r"\s*(?:(?:Compiling|Generated|Getting|Running|Checking|Finding|Resolving|Installing|"
    r"Downloading|Fetching|Building|Loading|Starting|Preparing|Analy[sz]ing|Collecting)\b|"
    r"\S.*(?:\.\.\.|…)\s*$)"
)

# Terminal colour and cursor codes (ESC [ 2 m): formatting, not text (``[2m`` is no quantity).
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")

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
# Code that returns or raises one as behaviour ("API failure → return error") is a topic too.
_ERROR_TOPICS = (
    r"messages?|handling|output|paths?|cases?|codes?|spans?|status|strings?|recovery|states?|"
    r"types?|handlers?|reporting|tracking|responses?|logging|logs?"
)
GENERIC_ERROR = re.compile(
    rf"\berrors? (?:{_ERROR_TOPICS})\b|"
    r"(?:→|->|returns?|raises?|throws?) (?:an? )?(?:error|exception)\b",
    re.IGNORECASE,
)
# The same in lower-case ASCII text, each alternative led by a character of its own
# (``e(?<!\we)`` is ``\be``): a search then skips to the few characters that could start a
# match, where a leading ``\b``, a group or ignoring case has it try every character.
_GENERIC_ERROR_LOWER = re.compile(
    rf"e(?<!\we)rrors? (?:{_ERROR_TOPICS})\b|"
    r"→ (?:an? )?(?:error|exception)\b|-> (?:an? )?(?:error|exception)\b|"
    r"r(?:eturns?|aises?) (?:an? )?(?:error|exception)\b|throws? (?:an? )?(?:error|exception)\b"
)


# Its first alternative alone, led by the whole word it looks for: a search skips to each
# "error" as ``in`` does, where a pattern led by one letter stops at every "e". The others each
# hold one of these (``→`` is no ASCII): lower-case ASCII text without any can match only this.
_GENERIC_ERROR_TOPIC = re.compile(rf"error(?<!\werror)s? (?:{_ERROR_TOPICS})\b")
_GENERIC_ERROR_CUES = ("->", "return", "raise", "throw")


def without_generic_errors(text: str) -> str:
    """``text`` with errors as a topic (``GENERIC_ERROR``) cut out. Most text holds none,
    which the lower-case pattern finds out for a fraction of the cost (ignoring case changes
    nothing in ASCII text but the letters' case)."""
    if text.isascii():
        lower = text.lower()
        behaviour = any(cue in lower for cue in _GENERIC_ERROR_CUES)
        if (_GENERIC_ERROR_LOWER if behaviour else _GENERIC_ERROR_TOPIC).search(lower) is None:
            return text
    return GENERIC_ERROR.sub(" ", text)


# A colour written as digits (background: #333), which reads as an issue tag.
COLOUR = re.compile(r"(?:colou?r|background|border|fill|stroke)[\w-]*: ?#\d{3}(?:\d{3})?\b")

# Open-work words that say nothing open: a value in code ('pending').
CODE_VALUE = re.compile(r"['\"`](?:pending|todo|blocked)['\"`]")

# "Pending" naming the state of data ("only pending deltas processed", "pending sessions"), not
# of work: it is open work standing alone or before work (pending tasks, changes, review).
PENDING_DATA = re.compile(
    r"\bpending (?!(?:tasks?|work|items?|changes?|reviews?|steps?|issues?|todos?|fix(?:es)?|"
    r"migrations?|commits?|questions?)\b)[a-z]"
)

# The agent saying what it does next ("Let me check the remaining work", "Now mark error
# spans"): no error, decision or open work of its own.
NARRATION = re.compile(r"(?:let me|now|i'll|i will|next, i)\b")

# What makes a one-digit tag an issue or pull request ("fixes #4"), not a label ("Step #4").
ISSUE_WORD = re.compile(
    r"\b(?:issues?|pr|pull request|ticket|fix(?:es|ed)?|close[sd]?|resolve[sd]?) #"
)

# A URL that names no page: a template (http://127.0.0.1:${PORT}), a placeholder
# (github.com/user/repo), a bare host (https://hexdocs.pm), a search (search.hexdocs.pm/?q=,
# google.com/search?q=: a query, no page) or an empty one (?q=).
NO_ADDRESS = re.compile(
    r"\{|github\.com/(?:user|owner|org)/repo\b|^https?://[^/]+/?$|//search\.|/search\?|[?&]q=$"
)
# What a URL is cut short by when it is a template (https://hex.pm/api/packages/<package>).
URL_PLACEHOLDER = ("<", "$", "{")

# An installed dependency's files (node_modules/, site-packages/, Elixir's deps/ and _build/)
# and temporary ones (a background task's /tmp/.../b0be39e.output): not the files the session
# works on.
FOREIGN_PATH = re.compile(
    r"(?:^|/)(?:node_modules|site-packages|dist-packages|\.venv|deps|_build|vendor)/|^/tmp/"
)

# A question tool's answers (``"How should we proceed?"="main was clean; fix the issues"``):
# the answer, without the tool's framing or the question.
ANSWER = re.compile(r'"(?:[^"\\]|\\.)*"="((?:[^"\\]|\\.)*)"')

# An error a sentence names as a word of its own or a type (ValueError, BadMapError), read as
# written: not a name of code that ends in one (lastSyncError, set_error).
ERROR_NAME = re.compile(
    r"(?<![\w])(?:[A-Z]\w*)?(?:Error|Exception)\b|\b(?:error|exception|ERROR)\b"
)
# The words a match of ``ERROR_NAME`` ends with (then a word boundary). No two can match where
# another does, so each is looked for on its own (``str.find`` skips to it at C speed, where a
# search for all five stops at every "e").
_ERROR_NAME_ENDS = ("error", "Error", "exception", "Exception", "ERROR")


def names_error(text: str) -> bool:
    """Whether ``ERROR_NAME`` finds an error in ``text``, several times faster: each word's
    end it could match at, checked for what must start the word (the word's own start, or a
    capital leading a longer word: ``BadMapError``)."""
    for word in _ERROR_NAME_ENDS:
        start = text.find(word)
        while start >= 0:
            end = start + len(word)
            if end == len(text) or not _is_word_char(text[end]):  # the boundary after it
                if start == 0 or not _is_word_char(text[start - 1]):
                    return True
                if word in ("Error", "Exception"):  # after a capital and letters: a type
                    first = start
                    while first > 0 and _is_word_char(text[first - 1]):
                        first -= 1
                    if "A" <= text[first] <= "Z":
                        return True
            start = text.find(word, start + 1)
    return False


def _is_word_char(character: str) -> bool:
    """Whether a pattern's ``\\w`` matches ``character`` (in text, not bytes)."""
    return character.isalnum() or character == "_"


# Numbers: a quantity with its unit, a version, an HTTP status, a commit.
# A count of things (5 tests, 150 lines, 2 files) is no unit: how many tests passed is a tally a
# run prints again, not a figure the work rests on.
UNIT_WORDS = (
    "% ms µs us ns s sec secs second seconds min mins minute minutes h hr hrs hour hours day "
    "days kb mb gb tb kib mib gib byte bytes token tokens k m x rpm rps qps usd eur gbp"
)
UNITS = sorted(UNIT_WORDS.split(), key=len, reverse=True)
QUANTITY = re.compile(
    r"(?<![\w.$€£])([$€£] ?)?(\d+(?:\.\d+)?)(?: ?(" + "|".join(map(re.escape, UNITS)) + r"))?"
    r"(?![\w%]|-\w)"  # not a class name's part (Tailwind's mb-2)
)
# Where a quantity can start: a currency sign, or a digit that does not continue a word or a
# number. Led by the characters it looks for, this search skips the rest of the text; the
# quantity's own pattern is tried at every character.
QUANTITY_START = re.compile(r"[$€£\d](?<![\w.$€£]\d)")
VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+\.\d+(?:[-+][0-9a-z.]+)?(?![\w.])")
# Not a status code compares (``assert status == 201``: a test's check, no status reported).
HTTP_STATUS = re.compile(r"\b(?:http|status|status code)(?: ?[:=] ?| )([1-5]\d\d)\b")
# A style declaration's value (min-width: 100%, border-radius:50%): layout, not a figure.
STYLE_VALUE = re.compile(
    r"(?:width|height|margin|padding|border|radius|gap|top|left|right|bottom|size|opacity|"
    r"flex|inset|basis|translate[xy]?)[\w-]*: ?(?:calc\()?$"
)


def code_value(text: str, quantity: re.Match[str]) -> bool:
    """Whether a quantity in ``text`` is code's, no figure: a style declaration's value, or a
    shell's or a regex's positional parameter ("$0", ($1))."""
    at, end = quantity.start(), quantity.end()
    closed = text[end : end + 1] in ('"', "'", ")", "}", "]")
    if quantity.group(1) == "$" and len(quantity.group(2)) == 1 and closed:
        return True
    return ":" in text and STYLE_VALUE.search(text, max(0, at - 40), at) is not None


# Seven to twelve digits (a short hash) or forty (a whole one), not a part of a UUID
# (5a430368-9e91-...) or another hash's length (an MD5's 32), nor a value labelled as an id
# (Claude Code's background tasks: <task-id>b0be39e</task-id>).
COMMIT = re.compile(
    r"(?<![\w-])(?<!id>)(?<!id: )(?<!id=)(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])"
    r"(?:[0-9a-f]{40}|[0-9a-f]{7,12})(?![\w-])"
)


# Common English words that carry no fact of their own. Negations and modal verbs stay terms:
# "never" and "always" are what a constraint says.
STOP_WORDS_TEXT = """
a about above after again all also am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its
itself just me more most my myself no nor now of off on once or other our ours ourselves out
over own same she so some such than that the their theirs them themselves then there these
they this those through to too under until up very was we were what when where which while
who whom why will with would you your yours yourself yourselves let lets please thanks
thank ok okay yes sure one two get got see seen look looks use used using want like
"""
STOP_WORDS = frozenset(STOP_WORDS_TEXT.split())


def shared_beginnings(words: Iterable[str]) -> str:
    """An alternation of ``words`` in which words that begin alike share that beginning
    (``cho(?:ose|se)``), so a search tries each beginning once at a character, not once a
    word. It matches what the plain alternation matches; a search finds the same sentences."""
    branches: dict[str, list[str]] = {}
    for word in words:
        branches.setdefault(word[:1], []).append(word[1:])
    alternatives = [
        re.escape(first) + shared_beginnings(rests) if first else ""
        for first, rests in sorted(branches.items())
    ]
    if len(alternatives) == 1:
        return alternatives[0]
    return "(?:" + "|".join(alternatives) + ")"
