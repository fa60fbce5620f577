"""Reachability and anchor retention read the same anchors: one recogniser (``gcengine.anchors``)
decides whether a path, an identifier, an error code, a URL or an issue tag is one, and each
reader only normalises what it finds its own way (reachability: ``file:src/tax.py`` with the
line apart; retention: lower case, the line as an anchor of its own, a tag among numbers)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gcengine
from gcengine import AnchorClass, MatchRule, Message, Part, Role
from gcengine.anchors import AnchorKind, anchor_key
from gcengine.quality.anchor_shapes import FOREIGN_PATH
from gcengine.reachability.anchors import message_anchors as reachability_anchors

Seen = set[tuple[str, str]]
_CLASS_KIND = {
    AnchorClass.PATHS: AnchorKind.FILE,
    AnchorClass.IDENTIFIERS: AnchorKind.NAME,
    AnchorClass.ERRORS: AnchorKind.CODE,
    AnchorClass.URLS: AnchorKind.URL,
    AnchorClass.NUMBERS: AnchorKind.TAG,
    AnchorClass.TESTS: AnchorKind.NAME,
}
_ISSUE_KIND = re.compile(r"(#)|https?://|[a-z][a-z0-9]{1,9}-\d")
_LINES = re.compile(r"(.+):(\d+)(?:-\d+)?")


def said(text: str) -> Message:
    return Message(role=Role.MODEL, parts=[Part.from_text(text)], message_id="m1")


def reachability_sees(text: str) -> Seen:
    """The anchors reachability reads in ``text``, and the lines it names (``line``), lower
    case."""
    found = reachability_anchors(said(text))
    seen = {(kind, value.lower()) for kind, _, value in (a.partition(":") for a in found.anchors)}
    seen.update(("line", f"{key.lower()}:{line}") for key, line in found.lines)
    return seen


def retention_sees(text: str) -> Seen:
    """The anchors of those kinds retention reads in ``text``, as reachability writes them: a
    path by its key (``anchor_key``), a path's line apart, a tag out of the numbers."""
    seen: Seen = set()
    for anchor in gcengine.message_anchors(said(text)):
        kind = _CLASS_KIND.get(anchor.anchor_class)
        if anchor.anchor_class is AnchorClass.ISSUES:
            # an issue is a tag, a link or a tracker's code to reachability
            shape = _ISSUE_KIND.match(anchor.key)
            kind = None if shape is None else AnchorKind.TAG if shape[1] else None
            kind = kind or (AnchorKind.URL if anchor.key.startswith("http") else AnchorKind.CODE)
            kind = kind if shape is not None else None
        if anchor.rule is not MatchRule.LITERAL or kind is None or "::" in anchor.key:
            continue
        if kind == AnchorKind.TAG and not anchor.key.startswith("#"):
            continue  # a number with a unit, a version, a status: retention's own
        lines = _LINES.fullmatch(anchor.key) if kind == AnchorKind.FILE else None
        if lines is not None:
            seen.add(("line", f"{anchor_key(kind, lines[1])}:{lines[2]}"))
        else:
            kind, _, value = anchor_key(kind, anchor.key).partition(":")
            seen.add((kind, value))
    return seen


# Each decision where the two readers used to differ, and what both read now.
DECIDED = [
    # A file named with its lines: the file, and its first line apart.
    (
        "Fix src/billing/tax.py:38-40 now.",
        {("file", "src/billing/tax.py"), ("line", "file:src/billing/tax.py:38")},
    ),
    # Rooted or two folders deep without an extension: a path; a bare /help is no path.
    (
        "rootdir: /home/dev/billing-service, see ~/.ssh/config and src/billing/rules; /help",
        {
            ("file", "/home/dev/billing-service"),
            ("file", "~/.ssh/config"),
            ("file", "src/billing/rules"),
        },
    ),
    # Any extension with a folder, a known one without; console.log is a call, not a file.
    (
        "See infra/app.dockerfile, README.md and console.log output.",
        {("file", "infra/app.dockerfile"), ("file", "readme.md")},
    ),
    # A relative path keeps its ./ as retention matches it; reachability's key drops it.
    (
        "Run ./scripts/run.sh then .eslintrc.json.",
        {("file", "scripts/run.sh"), ("file", ".eslintrc.json")},
    ),
    # A capital inside a name makes an identifier, an acronym's plural does not.
    (
        "HTTPError and IOError, not APIs or TODOs; parseConfig too.",
        {("name", "httperror"), ("name", "ioerror"), ("name", "parseconfig")},
    ),
    # A leading underscore, a qualified name's parts, a call, a name in backticks.
    (
        "self._quantize_all calls convert() and `round`; pkg:InvoiceError/ValueError.",
        {
            ("name", "_quantize_all"),
            ("name", "convert"),
            ("name", "round"),
            ("name", "invoiceerror"),
            ("name", "valueerror"),
        },
    ),
    # Code in backticks is read word by word unless it is a single name.
    (
        "It says `billing.errors.InvoiceError: [BILL-4011] bad` and `F401`.",
        {("name", "invoiceerror"), ("code", "bill-4011"), ("code", "f401")},
    ),
    # Linters' codes with two or three letters count; so do checkers' bracketed codes.
    (
        "ruff:SIM905, TS2345 and [arg-type]",
        {("code", "sim905"), ("code", "ts2345"), ("code", "[arg-type]")},
    ),
    # A bracketed code ends its line as written: a URL after it, in the sentence or not, makes
    # it none.
    ("see [aa-aa] https://a.com/a. a.py", {("url", "https://a.com/a"), ("file", "a.py")}),
    # A URL keeps its query; a tag is not an HTML character reference.
    (
        "See https://example.com/a?q=1&x=2. (#412) &#413;",
        {("url", "https://example.com/a?q=1&x=2"), ("tag", "#412")},
    ),
    # Typographic quotes end an anchor as straight ones do.
    ("“src/q.py” and ‘InvoiceError’", {("file", "src/q.py"), ("name", "invoiceerror")}),
    ("Python and/or Rust, 3 apples, version two, e.g. this one.", set()),
]


@pytest.mark.parametrize(("text", "expected"), DECIDED)
def test_both_readers_read_what_was_decided(text: str, expected: Seen) -> None:
    assert reachability_sees(text) == expected
    assert retention_sees(text) == expected


# --- Generated prose --------------------------------------------------------------------------

_NAME = st.from_regex(r"[a-z][a-z0-9]{0,7}", fullmatch=True)
_EXTENSION = st.sampled_from(["py", "ts", "md", "json", "go", "yaml", "rs", "txt", "lock"])
_PATHS = st.builds(
    lambda start, folders, name, ext, lines: (
        f"{start}{''.join(f + '/' for f in folders)}{name}.{ext}{lines}"
    ),
    st.sampled_from(["", "", "./", "/", "~/", "../"]),
    st.lists(_NAME, max_size=3),
    _NAME,
    _EXTENSION,
    st.sampled_from(["", "", ":12", ":38-40", ":7:3"]),
)
_CAPITALISED = st.from_regex(r"[A-Z][a-z]{2,7}", fullmatch=True)
_IDENTIFIERS = st.one_of(
    st.builds("{}_{}".format, _NAME, _NAME),
    st.builds("{}{}".format, _NAME, _CAPITALISED),
    st.builds("{}{}".format, _CAPITALISED, _CAPITALISED),
    st.from_regex(r"[A-Z]{2,5}_[A-Z]{2,5}", fullmatch=True),
    st.builds("{}()".format, _NAME),
    st.builds("`{}`".format, _NAME),
)
_CODES = st.one_of(
    st.from_regex(r"[A-Z]{2,4}-[0-9]{2,5}", fullmatch=True),
    st.from_regex(r"[A-Z]{1,3}[0-9]{3,4}", fullmatch=True),
    st.from_regex(r"\[[a-z]{2,6}-[a-z]{2,6}\]", fullmatch=True),
)
_URLS = st.builds(
    "https://{}.com/{}{}".format,
    _NAME,
    _NAME,
    st.sampled_from(["", "?q=1", "?a=b&c=d", "/x.html"]),
)
_TAGS = st.from_regex(r"#[1-9][0-9]{0,5}", fullmatch=True)
_PLAIN = st.sampled_from(
    ["the", "Fix", "and", "error", "EU", "API", "APIs", "3", "v2", "e.g.", "and/or", "it's", "-"]
)
_TOKENS = st.one_of(_PATHS, _IDENTIFIERS, _CODES, _URLS, _TAGS, _PLAIN, _PLAIN)
_AROUND = st.sampled_from([("", ""), ("(", ")"), ('"', '"'), ("`", "`"), ("", ":"), ("", ",")])
_BETWEEN = st.sampled_from([" ", " ", ". ", ", ", "; ", "\n", " - "])


@st.composite
def prose(draw: st.DrawFn) -> str:
    parts = []
    for token in draw(st.lists(_TOKENS, min_size=1, max_size=12)):
        before, after = draw(_AROUND)
        parts.append(f"{before}{token}{after}{draw(_BETWEEN)}")
    return "".join(parts)


@settings(max_examples=300, deadline=None)
@given(prose())
def test_every_anchor_one_reader_sees_the_other_sees(text: str) -> None:
    # A one-digit tag is an issue to retention only after an issue word ("fixes #4"): most
    # are labels ("Step #4"). An installed library's file (deps/x.py) is no anchor to it either.
    labels = {
        (kind, value)
        for kind, value in reachability_sees(text)
        if re.fullmatch("#\\d", value) or (kind == "file" and FOREIGN_PATH.search(value))
    }
    assert reachability_sees(text) - labels == retention_sees(text)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(_PATHS, _CODES, _TAGS), min_size=1, max_size=6))
def test_what_is_written_as_a_path_a_code_or_a_tag_is_read_as_one(tokens: list[str]) -> None:
    """Each path, error code and tag in prose is an anchor to both readers."""
    seen = reachability_sees(" and ".join(tokens))
    for token in tokens:
        if token.startswith("#"):
            assert ("tag", token) in seen
        elif token.startswith("["):
            # a bracketed code is mypy's only where it closes the line
            assert (("code", token.lower()) in seen) is (token == tokens[-1])
        elif token[0].isupper():
            assert ("code", token.lower()) in seen
        else:
            path = re.sub(r"(:\d+)+(-\d+)?$", "", token)
            assert ("file", anchor_key(AnchorKind.FILE, path).split(":", 1)[1].lower()) in seen
