"""Anchors: the concrete facts an agent needs after a compaction, found without a model.

An anchor is a file path, an identifier, a number with a unit, an error, a URL, a commit
hash, a decision or constraint, or a piece of open work, found without a model in what a
compaction removed. Paths, identifiers, error codes, URLs and issue tags are what
``gcengine.anchors`` finds, as reachability reads them too; numbers, commits and the sentences
are found here by regular expressions. Each class has a weight (how much losing one costs the
agent) and a matching rule:

* ``literal`` anchors (paths, identifiers, numbers, error codes, URLs, commits) are kept when
  their normalised text appears as a whole word or words inside one sentence of what the
  model still sees;
* ``terms`` anchors (error messages, decisions and constraints, open work) are whole sentences
  that a summary rewords, so one is kept when a single sentence of what the model sees holds
  at least three quarters of its key terms.

Text is normalised the same way on both sides (lower case, one space between words, no
thousands separators, straight quotes), and split into sentences with the summarizer's
splitter, so an anchor never spans two sentences. That is what makes the score's properties
hold: cutting a word out of the visible text never joins the text around it into a new match.

Keyword survival overstates what a model recalls (on Lost in Compaction's data, keywords
survived at 82-93 % where recall was 0-7 %), so this is "anchor retention", a floor on what was
lost, never a measure of what the agent remembers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gcengine.anchors import AnchorKind, Found, argument_path, found_in
from gcengine.messages import Message, MessageKind, PartType, Role
from gcengine.quality import anchor_cues as cues
from gcengine.quality import anchor_shapes as shapes
from gcengine.quality import named_tests

# What scoring reads text with is ``anchor_text``'s; read from here too, where anchors are.
from gcengine.quality.anchor_text import EDGE_PUNCTUATION, WORD_CHARS, folded, key_terms
from gcengine.quality.anchor_text import is_literal_word as is_literal_word
from gcengine.quality.anchor_text import literal_found as literal_found
from gcengine.quality.anchor_text import literal_words as literal_words
from gcengine.quality.anchor_text import normalised as normalised
from gcengine.quality.anchor_text import normalised_sentences as normalised_sentences
from gcengine.quality.anchor_text import sentence_terms as sentence_terms
from gcengine.quality.anchor_text import vocabulary_words as vocabulary_words
from gcengine.quality.session_anchors import NO_CONTEXT, AnchorContext, issue_ids
from gcengine.text import sentences


class AnchorClass(StrEnum):
    PATHS = "paths"
    IDENTIFIERS = "identifiers"
    NUMBERS = "numbers"
    ERRORS = "errors"
    URLS = "urls"
    COMMITS = "commits"
    DECISIONS = "decisions"
    OPEN_WORK = "open_work"
    ISSUES = "issues"
    REQUESTS = "requests"
    TESTS = "tests"
    TASKS = "tasks"


class MatchRule(StrEnum):
    LITERAL = "literal"
    TERMS = "terms"


@dataclass(frozen=True)
class AnchorClassInfo:
    """One class of anchors: what is found, its weight, and why it weighs that much."""

    anchor_class: AnchorClass
    label: str
    weight: int
    finds: str
    why: str


ANCHOR_CLASSES: tuple[AnchorClassInfo, ...] = (
    AnchorClassInfo(
        AnchorClass.PATHS,
        "file paths",
        3,
        "file names with a known extension, paths with a folder and an extension or rooted or "
        "two folders deep, tool arguments that name a file, and a path's line or line range "
        "(src/tax.py:38) as an anchor of its own",
        "every summarizer measured is weakest at tracking which files were read and changed, "
        "and an agent that loses a path edits the wrong file or reads it again",
    ),
    AnchorClassInfo(
        AnchorClass.IDENTIFIERS,
        "identifiers",
        2,
        "a name in backticks, snake_case, camelCase and CamelCase names of four characters or "
        "more (HTTPError too, not a plural like APIs), and calls written as name()",
        "the names the work is about; a lost one can usually be found again by searching",
    ),
    AnchorClassInfo(
        AnchorClass.NUMBERS,
        "numbers with units",
        2,
        "amounts with a currency or a unit (47,500 tokens, 300 ms, 12 %), versions (3.12.3) "
        "and HTTP status codes; not counts of things (5 tests) or code's values (width: 100%)",
        "a rounded or invented figure ('about 50,000') reads as true; a figure matches with "
        "or without its thousands separators",
    ),
    AnchorClassInfo(
        AnchorClass.ERRORS,
        "errors",
        3,
        "error codes (BILL-4012, F401, TS2345, [arg-type]) and error sentences: the first "
        "line of a failed tool result, and lines naming an Error, Exception, Traceback or "
        "FAILED",
        "the evidence a fix rests on; an agent without it repeats the failing step",
    ),
    AnchorClassInfo(
        AnchorClass.URLS,
        "URLs",
        1,
        "http and https addresses",
        "usually reachable again from the files or the user",
    ),
    AnchorClassInfo(
        AnchorClass.COMMITS,
        "commit hashes",
        2,
        "hexadecimal words of 7 to 12 or 40 characters holding both a digit and a letter, "
        "not parts of a UUID",
        "the exact state work started from or must return to",
    ),
    AnchorClassInfo(
        AnchorClass.DECISIONS,
        "decisions and constraints",
        3,
        "the user's sentences with must, never, don't, always, only, instead, prefer, avoid, "
        "keep or make sure, and anyone's with decided, agreed, chose, going with, will use "
        "or signed off",
        "an agent that forgets a constraint breaks it; compaction gates ask for at least 0.95",
    ),
    AnchorClassInfo(
        AnchorClass.OPEN_WORK,
        "open work",
        2,
        "sentences with TODO, FIXME, next step, remaining, still failing, not yet, pending, "
        "follow-up or blocked, and pending or in-progress items of a todo tool's list",
        "what is left to do; losing it ends the task early or does it twice",
    ),
    AnchorClassInfo(
        AnchorClass.ISSUES,
        "issue and ticket ids",
        3,
        "a tracker's ids (spotter-4te.3, and spotter-4te where the session names its children "
        "or a tracker command names it), #123, PROJ-42 outside an error, and links to GitHub "
        "or GitLab issues and pull requests",
        "the work the session is for; an agent that loses the id closes or updates the wrong one",
    ),
    AnchorClassInfo(
        AnchorClass.REQUESTS,
        "the user's requests",
        3,
        "the sentences of the user's own prompts (not tool results, summaries or injected "
        "notices) that ask for something (please, can you, I want, let's, or opening with a "
        "verb of work such as fix, add or run) and are no decision, up to five a prompt; and "
        "the user's answers to the agent's questions, as decisions",
        "what the user asked for is the task; a summary that drops it leaves the agent "
        "guessing, and answers to the agent's questions are the user's decisions",
    ),
    AnchorClassInfo(
        AnchorClass.TESTS,
        "test names",
        2,
        "pytest node ids (tests/test_tax.py::test_cap), test functions (test_cap, TestCap), "
        'ExUnit tests (test "renders the page"), the failing tests a run lists, and JavaScript '
        "tests by name: it(...), test(...) and describe(...) in sources, a test run's lines",
        "the check that says whether the work is done; a lost name means running everything "
        "again or forgetting which one failed",
    ),
    AnchorClassInfo(
        AnchorClass.TASKS,
        "task-list items",
        2,
        "every item of a todo tool's list whatever its status, and markdown checkboxes "
        "(- [ ] and - [x])",
        "the plan the agent made; losing it repeats done items or skips planned ones",
    ),
)

CLASS_INFO: dict[AnchorClass, AnchorClassInfo] = {c.anchor_class: c for c in ANCHOR_CLASSES}
LITERAL_CLASSES = frozenset(
    {
        AnchorClass.PATHS,
        AnchorClass.IDENTIFIERS,
        AnchorClass.NUMBERS,
        AnchorClass.URLS,
        AnchorClass.COMMITS,
        AnchorClass.ISSUES,
        AnchorClass.TESTS,
    }
)

# A terms anchor is kept when one sentence holds this share of its key terms.
TERMS_SHARE = 0.75
# Sentences shorter than this many key terms say too little to be an anchor (longer ones count
# their first terms only: ``MAX_TERMS``).
MIN_TERMS = 2
# A tool result can hold a whole log; its first error lines are the signature.
ERROR_LINES_PER_RESULT = 5
ANCHOR_TEXT_CHARS = 200


@dataclass(frozen=True, slots=True)
class Anchor:
    """One anchor. ``key`` is its normalised text, what it is matched and counted by;
    ``text`` is how it was written, for showing; ``terms`` are a terms anchor's key terms."""

    anchor_class: AnchorClass
    key: str
    text: str
    rule: MatchRule
    terms: frozenset[str] = frozenset()

    @property
    def weight(self) -> int:
        return CLASS_INFO[self.anchor_class].weight

    def needed(self) -> int:
        """How many of a terms anchor's terms one sentence must hold."""
        return math.ceil(TERMS_SHARE * len(self.terms))


_new_object = object.__new__
# The fields' own setters: a frozen dataclass with slots holds each field in a slot.
_set_class, _set_key, _set_text, _set_rule, _set_terms = (
    vars(Anchor)[field].__set__ for field in ("anchor_class", "key", "text", "rule", "terms")
)


def _anchor(
    anchor_class: AnchorClass,
    key: str,
    text: str,
    rule: MatchRule,
    terms: frozenset[str] = frozenset(),
) -> Anchor:
    """``Anchor(...)`` in half the time: a session's anchors are made by the hundred thousand,
    and a frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``; this
    sets its slots directly, to the same anchor."""
    anchor = _new_object(Anchor)
    _set_class(anchor, anchor_class)
    _set_key(anchor, key)
    _set_text(anchor, text)
    _set_rule(anchor, rule)
    _set_terms(anchor, terms)
    return anchor


# --- Finding anchors in one sentence ---------------------------------------------------------

_DIGIT = re.compile(r"\d")
# What makes a sentence an error sentence (``_names_error``). Only ever searched for: a word
# ending in error or exception (ValueError) is found at that ending, where looking for its
# start too (``\w*`` in front) backtracked through every word; and led by those words, the
# search skips the text between them.
_ERROR_WORD = re.compile(r"(?:error|exception)\b")
_ERROR_MARK = re.compile(r"\b(?:traceback|failed)\b|\b(?:fail|fatal|panic):")
# Every match of ``_ERROR_MARK`` and ``ERROR_LINE`` holds one of these: text without any is
# not searched (``in`` costs a fraction of a search, which tries the pattern at every
# character).
_ERROR_MARK_CUES = ("traceback", "fail", "fatal:", "panic:")
_ERROR_LINE_CUES = ("error", "exception", "warning", "traceback", "failed", "fatal", "panic")
_ERROR_LINE_STARTS = ("traceback", "fatal", "panic", "error")
# Alternatives of whole words, the words as they are written.
_CONSTRAINT_WORDS = (
    r"must|mustn't|never|don't|do not|always|only|instead|prefer|avoid|keep|make sure|should|"
    r"shouldn't"
)
_DECISION_WORDS = (
    r"decided|decide|decision|agreed|chose|choose|going with|will use|we'll use|let's use|"
    r"signed off|settled on|confirmed"
)
_OPEN_WORK_WORDS = (
    r"todo|fixme|next step|next steps|next:|remaining|still failing|still fails|not yet|pending|"
    r"follow-up|follow up|left to do|blocked"
)
_CONSTRAINT = re.compile(rf"\b(?:{_CONSTRAINT_WORDS})\b")
# In what the user did not type (a summary, an injected notice) "only" and "instead" describe
# ("Dialyzer infers only :error", "used X instead"); the other words still direct.
_RESTATED_CONSTRAINT = re.compile(
    r"\b(?:" + "|".join(sorted(set(_CONSTRAINT_WORDS.split("|")) - {"only", "instead"})) + r")\b"
)
_DECISION = re.compile(rf"\b(?:{_DECISION_WORDS})\b")
_OPEN_WORK = re.compile(rf"\b(?:{_OPEN_WORK_WORDS})\b")


# Whether a sentence holds any of those words: most do not, and this one search (a word
# boundary checked once a character, not once a word) spares the three.
_TRIGGER_WORDS = f"{_CONSTRAINT_WORDS}|{_DECISION_WORDS}|{_OPEN_WORK_WORDS}".split("|")
_ANY_TRIGGER_WORD = re.compile(r"\b" + shapes.shared_beginnings(_TRIGGER_WORDS) + r"\b")
# Which sentences may hold one, told at C speed by their words (the search is sparingly run).
_TRIGGERS = cues.WordAlternatives(_TRIGGER_WORDS)
# What each of ``REQUEST``'s asks holds but the verbs it starts with: a sentence without any
# is asked only whether it starts with one (a search tries the pattern at every character).
_ASKING = ("please", "you", "i want", "i'd like", "need", "let's", "make it")
# A search pattern (\bname\b, *.py) is not a fact about the work.
_PATTERN_KEYS = frozenset({"pattern", "regex", "glob", "include", "exclude"})
_OPEN_TODO = frozenset({"pending", "in_progress", "in progress", "todo", "open"})
# A todo tool's list and its items' text: Claude Code's TodoWrite, Codex's update_plan.
_TODO_KEYS, _TODO_TEXT = frozenset({"todos", "plan"}), ("content", "title", "text", "step")
# The class each kind ``gcengine.anchors`` finds is counted in; an issue tag is a number.
_CLASS_OF = {
    AnchorKind.FILE: AnchorClass.PATHS,
    AnchorKind.NAME: AnchorClass.IDENTIFIERS,
    AnchorKind.CODE: AnchorClass.ERRORS,
    AnchorKind.URL: AnchorClass.URLS,
    AnchorKind.TAG: AnchorClass.ISSUES,
}


def _clip(text: str) -> str:
    """``text`` with one space between its words, cut to ``ANCHOR_TEXT_CHARS``. Of a long text
    only its head is spaced when that is long enough: the words of a head are the text's first
    words (the last maybe cut short), so its spacing is the start of the text's."""
    if len(text) > 2 * ANCHOR_TEXT_CHARS:
        head = " ".join(text[: 2 * ANCHOR_TEXT_CHARS].split())
        if len(head) > ANCHOR_TEXT_CHARS:
            return head[: ANCHOR_TEXT_CHARS - 1] + "…"
    text = " ".join(text.split())
    return text if len(text) <= ANCHOR_TEXT_CHARS else text[: ANCHOR_TEXT_CHARS - 1] + "…"


def _literal(anchor_class: AnchorClass, key: str, sentence: str, raw: str) -> Anchor | None:
    """``_literal_as_found`` for what a pattern matched, trimmed of edge punctuation."""
    key = key.strip().strip(EDGE_PUNCTUATION).strip()
    return _literal_as_found(anchor_class, key, sentence, raw)


def _literal_as_found(
    anchor_class: AnchorClass, key: str, sentence: str, raw: str
) -> Anchor | None:
    """A literal anchor for ``key`` if it is one: found in its own sentence by the rule that
    matches it (so a text that repeats the sentence keeps it); its text spelled as in
    ``raw``, the sentence as written (``_as_written``). Not trimmed: ``gcengine.anchors``
    trims what it finds itself, and a relative path keeps its ``./``."""
    if len(key) < 2 or not literal_found(sentence, key):
        return None
    return _anchor(anchor_class, key, _clip(_as_written(key, raw)), MatchRule.LITERAL)


def _as_written(key: str, raw: str) -> str:
    """``key`` with the capitals ``raw`` wrote it with: matched lower-cased, an anchor is read
    (and searched for in the code) as written, ``InvoiceError``. The key itself where ``raw``
    spells it otherwise (spacing, quotes, thousands separators: the key has one space between
    its words already) or lower-casing changes the text's length."""
    if key in raw:
        return key
    lowered = raw.lower()
    start = lowered.find(key)
    if start < 0 or len(lowered) != len(raw):
        return key
    return raw[start : start + len(key)]


def _literal_anchors(
    raw: str, sentence: str, context: AnchorContext = NO_CONTEXT
) -> Iterator[Anchor]:
    """Literal anchors of one sentence: ``raw`` as written (what ``gcengine.anchors`` reads,
    and to show each anchor as written) and ``sentence``, its normalised form (what numbers and
    commits are found in, and what every anchor is checked against).

    Numbers and commits are looked for in the sentence without its paths and URLs (a commit in
    a URL is not one of its own), and a pattern is tried only on a sentence holding what every
    match of it holds (a digit, a dot, a run of seven hexadecimal digits): a pattern is tried
    at every character, and most sentences are ruled out for a fraction of that.
    """
    unpathed = sentence
    for found in _in_order(raw):
        if found.kind == AnchorKind.NAME:  # most are identifiers: the steps a name takes, alone
            if (anchor := _name_anchor(found.value, sentence, raw)) is not None:
                yield anchor
            continue
        key = folded(found.value)
        if found.kind == AnchorKind.URL and (
            shapes.NO_ADDRESS.search(key) or _cut_by_placeholder(key, sentence)
        ):
            continue  # a template, a placeholder, a bare host or a search: no address
        if found.kind == AnchorKind.TAG and (
            shapes.COLOUR.search(sentence)
            or (len(key) == 2 and not shapes.ISSUE_WORD.search(sentence))
        ):
            continue  # a colour (background: #333) or a label (Correction #4), no issue
        anchor_class = _class_of(found, key, sentence)
        if found.kind == AnchorKind.FILE:  # after a variable (${LIB_DIR}/x.sh), no root
            key = context.path_key(key.removeprefix("/") if f"}}{key}" in sentence else key)
        # an installed library's or a temporary file is not one the session works on
        dependency = found.kind == AnchorKind.FILE and shapes.FOREIGN_PATH.search(key)
        anchor = None if dependency else _literal_as_found(anchor_class, key, sentence, raw)
        if anchor is not None:
            yield anchor
        if found.kind == AnchorKind.URL or found.kind == AnchorKind.FILE:
            unpathed = unpathed.replace(key, " " * len(key))
        if found.start is not None and not dependency:
            lines = f":{found.start}" + (f"-{found.end}" if found.end is not None else "")
            ranged = _literal_as_found(AnchorClass.PATHS, key + lines, sentence, raw)
            if ranged is not None:
                yield ranged
    quantities = (
        shapes.QUANTITY.finditer(unpathed)
        if cues.may_start_quantity(unpathed) and shapes.QUANTITY_START.search(unpathed)
        else ()
    )
    for match in quantities:
        if not (match.group(1) or match.group(3)) or shapes.code_value(unpathed, match):
            continue  # no unit, or code's (width: 100%, "$0")
        if anchor := _literal(AnchorClass.NUMBERS, match.group(0), sentence, raw):
            yield anchor
    if "-" in sentence:
        for issue in issue_ids(sentence, context):
            if (anchor := _literal_as_found(AnchorClass.ISSUES, issue, sentence, raw)) is not None:
                yield anchor
    if "::" in sentence or 'test "' in sentence:
        for match in shapes.TEST_ID.finditer(sentence):
            test = match.group(0).rstrip(".,;:!?(")
            if (anchor := _literal_as_found(AnchorClass.TESTS, test, sentence, raw)) is not None:
                yield anchor
    for test in named_tests.source_names(sentence):
        if (anchor := _literal_as_found(AnchorClass.TESTS, test, sentence, raw)) is not None:
            yield anchor
    digits = _DIGIT.search(unpathed) is not None
    for match in shapes.VERSION.finditer(unpathed) if digits and "." in unpathed else ():
        if (anchor := _literal(AnchorClass.NUMBERS, match.group(0), sentence, raw)) is not None:
            yield anchor
    status = "http" in unpathed or "status" in unpathed
    for match in shapes.HTTP_STATUS.finditer(unpathed) if status else ():
        if (anchor := _literal(AnchorClass.NUMBERS, match.group(1), sentence, raw)) is not None:
            yield anchor
    commits = digits and cues.holds_hex_run(unpathed)
    for match in shapes.COMMIT.finditer(unpathed) if commits else ():
        if (anchor := _literal(AnchorClass.COMMITS, match.group(0), sentence, raw)) is not None:
            yield anchor


def _cut_by_placeholder(url: str, sentence: str) -> bool:
    """Whether a URL runs on into a placeholder (``.../packages/<name>``): a template."""
    at = sentence.find(url)
    return at >= 0 and sentence[at + len(url) : at + len(url) + 1] in shapes.URL_PLACEHOLDER


def _name_anchor(name: str, sentence: str, raw: str) -> Anchor | None:
    """``_literal_as_found`` for a name ``gcengine.anchors`` found (a test function is a test
    name): a name holds no space, so one ``raw`` spells as its key, as most are, is shown as
    its key (``_clip`` and ``_as_written`` leave it as it is)."""
    key = name.lower() if name.isascii() and "," not in name else folded(name)
    size = len(key)
    at = sentence.find(key)
    if size < 2 or at < 0:
        return None
    # Where a name is first written is a whole word in most sentences: a look at the
    # characters on either side then spares ``literal_found``'s search from the start.
    end = at + size
    whole = (at == 0 or sentence[at - 1] not in WORD_CHARS) and (
        end == len(sentence) or sentence[end] not in WORD_CHARS
    )
    if not whole and not literal_found(sentence, key):
        return None
    test = name.startswith(("test_", "Test")) and shapes.TEST_NAME.match(name)  # what it starts
    anchor_class = AnchorClass.TESTS if test else AnchorClass.IDENTIFIERS
    # A sentence as written is most often its normalised form but for capitals: the key is
    # then where the sentence has it, which a comparison tells without searching ``raw``.
    written = raw[at:end] == key or key in raw
    shown = key if size <= ANCHOR_TEXT_CHARS and written else _clip(_as_written(key, raw))
    return _anchor(anchor_class, key, shown, MatchRule.LITERAL)


def _class_of(found: Found, key: str, sentence: str) -> AnchorClass:
    """The class of what ``gcengine.anchors`` found in a sentence, a name aside
    (``_name_anchor``): a link to an issue or pull request an issue, a tracker's ``PROJ-42``
    an issue but in a sentence about an error (``BILL-4012``), an issue tag an issue."""
    if found.kind == AnchorKind.URL and shapes.ISSUE_URL.search(key):
        return AnchorClass.ISSUES
    if found.kind == AnchorKind.CODE and "-" in key and key[0] != "[":
        return AnchorClass.ERRORS if _names_error(sentence) else AnchorClass.ISSUES
    return _CLASS_OF[found.kind]


def _in_order(raw: str) -> Iterable[Found]:
    """The anchors ``gcengine.anchors`` finds in ``raw``, each once, in the order it finds
    them: the order a sentence's lost anchors are listed in, the same in every process."""
    return dict.fromkeys(found_in(raw))


def _terms_anchor(anchor_class: AnchorClass, raw: str, sentence: str) -> Anchor | None:
    terms = key_terms(sentence)
    if len(terms) < MIN_TERMS:
        return None
    return _anchor(anchor_class, sentence, _clip(raw), MatchRule.TERMS, terms)


# --- Finding anchors in messages -------------------------------------------------------------


def _strings(value: Any, *, keys: bool = False) -> Iterator[str]:
    """Every string inside a tool argument or result, in order (with the names of its fields,
    when ``keys``: the model reads those too)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if keys:
                yield str(key)
            yield from _strings(item, keys=keys)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item, keys=keys)


def visible_pieces(message: Message) -> Iterator[str]:
    """What of a message a model reads: its text, tool calls (name, argument names and
    values) and tool results (reasoning, media and parts the engine does not interpret are
    left out)."""
    for part in message.parts:
        if part.type is PartType.TEXT and part.text:
            yield part.text
        elif part.function_call is not None:
            yield part.function_call.name
            yield from _strings(part.function_call.args, keys=True)
        elif part.function_response is not None:
            yield part.function_response.name
            yield from _strings(part.function_response.result, keys=True)


def _sentence_pairs(text: str) -> Iterator[tuple[str, str]]:
    """(as written, normalised) for each sentence of ``text``, terminal colour codes left out."""
    if "\x1b" in text:
        text = shapes.ANSI_ESCAPE.sub("", text)
    for piece in sentences(text):
        raw = piece.strip()
        if raw and (sentence := cues.one_spaced(folded(raw))):
            yield raw, sentence


def _mentions(sentence: str, cues: Iterable[str]) -> bool:
    return any(cue in sentence for cue in cues)


def _names_error(sentence: str, raw: str | None = None) -> bool:
    """Whether a normalised sentence names an error: a word ending in error or exception (in
    ``raw``, the sentence as written, an error type or the word itself), traceback, failed, or
    fail:, fatal: or panic:."""
    stripped = sentence
    if "error" in sentence:
        stripped = shapes.without_generic_errors(sentence)
    named = ("error" in stripped or "exception" in stripped) and _ERROR_WORD.search(stripped)
    if named and (raw is None or shapes.names_error(_raw_stripped(raw, sentence, stripped))):
        return True
    return _mentions(stripped, _ERROR_MARK_CUES) and _ERROR_MARK.search(stripped) is not None


def _raw_stripped(raw: str, sentence: str, stripped: str) -> str:
    """``without_generic_errors(raw)``, from what it made of ``sentence`` (``stripped``): a
    sentence as written that is its normalised form but for capitals (most ASCII text) holds
    no error as a topic when the normalised one holds none, and is then left as it is."""
    if stripped is sentence and "error" in sentence and raw.isascii() and raw.lower() == sentence:
        return raw
    return shapes.without_generic_errors(raw)


def _prose_anchors(
    text: str, context: AnchorContext, *, speaker_is_user: bool, prompt: bool = False
) -> Iterator[Anchor]:
    """A message's own text: its literal anchors and its sentences. ``prompt``: the user
    typed it (not an injected notice), so its requests count."""
    opening = text.lstrip()[:40].lower()
    if opening.startswith(shapes.COMMAND_OUTPUT):
        for raw, sentence in _sentence_pairs(text):  # a command's output, shown to the user
            yield from _literal_anchors(raw, sentence, context)
        return
    if prompt and opening.startswith(shapes.INJECTED):
        prompt = False
    requests = 0
    if "[" in text:
        for match in shapes.CHECKBOX.finditer(text):
            item = match.group(1).strip()
            if anchor := _terms_anchor(AnchorClass.TASKS, item, " ".join(folded(item).split())):
                yield anchor
    for raw, sentence, code in _prose_or_code(text):
        yield from _literal_anchors(raw, sentence, context)
        if code:
            continue  # a line of code names what it handles (error, pending) and says nothing
        asked = prompt and requests < shapes.REQUESTS_PER_PROMPT and _asks(sentence)
        request = asked and not _decides(sentence, speaker_is_user=True)
        if request and (anchor := _terms_anchor(AnchorClass.REQUESTS, raw, sentence)):
            requests += 1
            yield anchor
        if shapes.HEADING.fullmatch(sentence) or shapes.NARRATION.match(sentence):
            continue  # a heading announces, the agent's next step narrates: neither is a fact
        error = _names_error(sentence, raw)
        if error and (anchor := _terms_anchor(AnchorClass.ERRORS, raw, sentence)):
            yield anchor
        if not (_TRIGGERS.may_hold(sentence) and _ANY_TRIGGER_WORD.search(sentence)):
            continue
        decided = _decides(sentence, speaker_is_user=speaker_is_user, typed=prompt)
        if decided and (anchor := _terms_anchor(AnchorClass.DECISIONS, raw, sentence)):
            yield anchor
        open_work = _OPEN_WORK.search(sentence) and not (
            shapes.CODE_VALUE.search(sentence) or shapes.PENDING_DATA.search(sentence)
        )
        if open_work and (anchor := _terms_anchor(AnchorClass.OPEN_WORK, raw, sentence)):
            yield anchor


def _prose_or_code(text: str) -> Iterator[tuple[str, str, bool]]:
    """(as written, normalised, whether it is code) for each sentence of ``text``: code is
    what a fenced block (```) holds."""
    if "```" not in text:
        for raw, sentence in _sentence_pairs(text):
            yield raw, sentence, False
        return
    for position, block in enumerate(text.split("```")):
        for raw, sentence in _sentence_pairs(block):
            yield raw, sentence, position % 2 == 1


def _decides(sentence: str, *, speaker_is_user: bool, typed: bool = True) -> bool:
    """Whether a normalised sentence is a decision: anyone's, or the user's constraint
    (``typed``: the user wrote it; else a summary or a notice restates it)."""
    if _DECISION.search(sentence):
        return True
    constraint = _CONSTRAINT if typed else _RESTATED_CONSTRAINT
    return speaker_is_user and constraint.search(sentence) is not None


def _asks(sentence: str) -> bool:
    """Whether a normalised sentence of the user's asks for something."""
    if _mentions(sentence, _ASKING):
        return shapes.REQUEST.search(sentence) is not None
    return shapes.REQUEST.match(sentence) is not None  # without them, only a verb at its start


def _answers(result: Any) -> Iterator[Anchor]:
    """The user's answers to the agent's questions: decisions the user made (each answer the
    tool quotes, else what it says)."""
    for text in _strings(result):
        answers = shapes.ANSWER.findall(text)
        for raw, sentence in (p for a in answers or [text] for p in _sentence_pairs(a)):
            if anchor := _terms_anchor(AnchorClass.DECISIONS, raw, sentence):
                yield anchor


def _call_anchors(args: dict[str, Any], context: AnchorContext) -> Iterator[Anchor]:
    path = argument_path(args)
    if path is not None:
        key = context.path_key(normalised(path))
        if (anchor := _literal_as_found(AnchorClass.PATHS, key, key, path)) is not None:
            yield anchor
    for key, value in args.items():
        todos = value if key.lower() in _TODO_KEYS else None
        for todo in todos if isinstance(todos, list) else ():
            if not isinstance(todo, dict):
                continue
            status = str(todo.get("status", "")).lower()
            content = next((todo[k] for k in _TODO_TEXT if todo.get(k)), None)
            if not isinstance(content, str):
                continue
            item = " ".join(folded(content).split())
            if (anchor := _terms_anchor(AnchorClass.TASKS, content.strip(), item)) is not None:
                yield anchor
            if status in _OPEN_TODO:
                for raw, sentence in _sentence_pairs(content):
                    if anchor := _terms_anchor(AnchorClass.OPEN_WORK, raw, sentence):
                        yield anchor
    for key, value in args.items():
        if key.lower() in _PATTERN_KEYS or (
            key.lower().endswith("id") and isinstance(value, str) and shapes.COMMIT.fullmatch(value)
        ):
            continue  # a search pattern; a task's or a shell's id (task_id: b0be39e), no commit
        for text in _strings(value):
            for raw, sentence in _sentence_pairs(text):
                yield from _literal_anchors(raw, sentence, context)


def _reports_error(sentence: str) -> bool:
    """Whether a normalised sentence of output reports an error (``ERROR_LINE``), searched
    for only when it holds what a match needs: "failed", one of the words a line starts
    with, or a colon and an error, exception or warning."""
    if not (
        "failed" in sentence
        or sentence.startswith(_ERROR_LINE_STARTS)
        or (":" in sentence and _mentions(sentence, ("error", "exception", "warning")))
    ):
        return False
    return shapes.ERROR_LINE.search(sentence) is not None


def _result_anchors(result: Any, *, failed: bool) -> Iterator[Anchor]:
    """A tool result's error signature only: raw output is what a summary is meant to drop.

    Output is most of what a session holds, and most of its lines report nothing: a line
    without a word that could report an error is not split into sentences at all (but a
    failed result's first line, which is its error whatever it says).
    """
    found = 0
    texts = [shapes.ANSI_ESCAPE.sub("", t) if "\x1b" in t else t for t in _strings(result)]
    runs = [named_tests.is_test_run(text) for text in texts]
    tests = [
        (line, name)
        for text, run in zip(texts, runs, strict=True)
        for line in text.splitlines()
        if (run or "test " in line)
        and (name := named_tests.output_test_name(line, run=run)) is not None
    ]
    # A failed result's first line is its error unless a later line reports one or it names
    # the tests that failed; lines that say how far the tool got are no first line.
    first = (
        failed
        and not tests
        and not any(
            _reports_error(" ".join(folded(line).split()))
            for text in texts
            for line in text.splitlines()
            if not shapes.SOURCE_LINE.match(line)
        )
    )
    for line, name in tests:
        spaced = " ".join(folded(line).split())
        if tested := _literal_as_found(AnchorClass.TESTS, folded(name), spaced, line):
            yield tested
    for text in texts:
        for line in text.splitlines():
            if shapes.SOURCE_LINE.match(line) or (
                first
                and (shapes.EXIT_CODE.fullmatch(line.strip()) or shapes.PROGRESS_LINE.match(line))
            ):
                continue  # a line of a file read is code; an exit code or progress says nothing
            if not first and not (
                _mentions(low := line.lower(), _ERROR_LINE_CUES)
                and cues.may_report(line, low, _ERROR_LINE_STARTS)
            ):
                continue
            for raw, sentence in _sentence_pairs(line):
                if found == ERROR_LINES_PER_RESULT:
                    return
                reports = first or _reports_error(sentence)
                first = False
                if not reports:
                    continue
                if (anchor := _terms_anchor(AnchorClass.ERRORS, raw, sentence)) is not None:
                    found += 1
                    yield anchor
                for named in _in_order(raw):
                    if named.kind == AnchorKind.CODE:
                        key = folded(named.value)
                        code = _literal_as_found(AnchorClass.ERRORS, key, sentence, raw)
                        if code is not None:
                            yield code


def message_anchors(message: Message, context: AnchorContext = NO_CONTEXT) -> list[Anchor]:
    """The anchors a message holds for a model that no longer sees it: from its text, its
    tool calls' arguments, and its tool results' error signatures. ``context`` is the
    session's (``anchor_context``): the root its paths are relative to, the issue ids it
    names."""
    speaker_is_user = message.kind is MessageKind.SUMMARY or (
        message.role is Role.USER and not message.is_function_response
    )
    prompt = message.kind is MessageKind.CHAT and speaker_is_user
    anchors: list[Anchor] = []
    for part in message.parts:
        if part.type is PartType.TEXT and part.text:
            anchors.extend(
                _prose_anchors(part.text, context, speaker_is_user=speaker_is_user, prompt=prompt)
            )
        elif part.function_call is not None:
            anchors.extend(_call_anchors(part.function_call.args, context))
        elif part.function_response is not None:
            response = part.function_response
            if response.name in shapes.QUESTION_TOOLS:
                anchors.extend(_answers(response.result))
            else:
                anchors.extend(_result_anchors(response.result, failed=response.is_error))
    return anchors


def literal_anchors_of(message: Message) -> list[Anchor]:
    """Every literal anchor anywhere in what the model reads of a message (a summary's facts,
    checked against the session to find invented ones)."""
    return [
        anchor
        for piece in visible_pieces(message)
        for raw, sentence in _sentence_pairs(piece)
        for anchor in _literal_anchors(raw, sentence)
    ]
