"""What a session tells the anchor finder about itself, and the anchor shapes that need it.

One file is spelled several ways in a session (``/home/me/repo/src/tax.py``, ``./src/tax.py``,
``src/tax.py``); a reader counts it once. The project root the session ran in (the ``cwd``
Claude Code records on each row, else the folder every absolute path of the session's tool
calls shares) turns each spelling into the repository-relative one, and a relative key is
found as whole words inside any longer spelling, so a summary naming the file either way keeps
it.

An issue tracker's ids are the session's own words: ``spotter-4te.3`` is a child issue
wherever it is written, but ``spotter-4te`` is one only because the session names its children
(or a tracker command, ``bd show spotter-4te``, names it); ``spotter-hook`` is not.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gcengine.anchors import argument_path
from gcengine.messages import Message

# A tracker's child issue (``spotter-4te.3``, ``proj-a1b.12``): a project word, a short id with
# a letter, and a child number.
_CHILD_ISSUE = re.compile(r"(?<![\w.-])([a-z][a-z0-9]*-(?=[a-z0-9]*[a-z])[a-z0-9]{3,4})\.\d{1,3}\b")
# A tracker command naming an issue (beads' ``bd show``, ``bd close``, ...), not the parent of
# the child it names (``bd show spotter-4te.1`` names spotter-4te.1 alone).
_TRACKER_COMMAND = re.compile(
    r"\bbd (?:show|close|update|create|reopen|dep add|edit)\s+([a-z][a-z0-9]*-[a-z0-9]{3,4})"
    r"(?![\w-]|\.\d)"
)
# What every child issue holds, led by its dash: a search skips to the dashes, where the
# child's own pattern (led by a look behind) is tried at every character.
_CHILD_CUE = re.compile(r"-[a-z0-9]{3,4}\.\d")
_BARE_ISSUE = re.compile(r"(?<![\w./-])([a-z][a-z0-9]*-[a-z0-9]{3,4})(?![\w-]|\.\d)")
# What every bare issue id holds, led by its dash (as ``_CHILD_CUE``).
_BARE_CUE = re.compile(r"-[a-z0-9]{3,4}(?![\w-]|\.\d)")
# Folders a root must be deeper than: every absolute path shares these.
_MIN_ROOT_PARTS = 2
# A root is looked for among this many folders, by this many of the session's paths.
_ROOT_CANDIDATES = 4
_ROOT_PATHS = 24


@dataclass(frozen=True, slots=True)
class AnchorContext:
    """What the anchors of one session are read with: its project root (lower case, ending
    in a slash) and the issue ids it names bare."""

    root: str | None = None
    issues: frozenset[str] = frozenset()

    def path_key(self, key: str) -> str:
        """A normalised path as the repository-relative spelling: the root and a leading
        ``./`` taken off (``/home/me/repo/src/tax.py`` and ``./src/tax.py`` are
        ``src/tax.py``); the root itself stays as written."""
        if self.root is not None and key.startswith(self.root) and len(key) > len(self.root):
            key = key[len(self.root) :]
        while key.startswith("./") and len(key) > 2:
            key = key[2:]
        return key


NO_CONTEXT = AnchorContext()


def issue_ids(sentence: str, context: AnchorContext) -> list[str]:
    """The tracker issue ids a normalised sentence names: child ids always, a bare id when the
    session knows it as one (or a tracker command names it here)."""
    found = [m.group(0) for m in _CHILD_ISSUE.finditer(sentence)] if _child_cue(sentence) else []
    if "bd " in sentence:
        found.extend(m.group(1) for m in _TRACKER_COMMAND.finditer(sentence))
    if context.issues and _BARE_CUE.search(sentence) is not None:
        found.extend(
            m.group(1) for m in _BARE_ISSUE.finditer(sentence) if m.group(1) in context.issues
        )
    return list(dict.fromkeys(found))


def _child_cue(text: str) -> bool:
    return _CHILD_CUE.search(text) is not None


def anchor_context(messages: Iterable[Message], texts: Iterable[str] = ()) -> AnchorContext:
    """The context a session's anchors are read with, from its messages (the ``cwd`` their
    source rows record, the paths their tool calls name) and ``texts``, what they say (the
    issue ids)."""
    roots: Counter[str] = Counter()
    absolute: list[str] = []
    for message in messages:
        source = message.metadata.get("source") if message.metadata else None
        if isinstance(source, Mapping) and isinstance(cwd := source.get("cwd"), str):
            roots[cwd] += 1
        for part in message.parts:
            call = part.function_call
            if call is not None and (path := argument_path(call.args)) and path.startswith("/"):
                absolute.append(path)
    issues: set[str] = set()
    said: list[str] = []
    for text in texts:
        said.append(text)
        if "-" not in text:
            continue
        if _child_cue(text):
            issues.update(m.group(1) for m in _CHILD_ISSUE.finditer(text))
        if "bd " in text:
            issues.update(m.group(1) for m in _TRACKER_COMMAND.finditer(text))
    root = roots.most_common(1)[0][0] if roots else _shared_folder(absolute, said)
    return AnchorContext(_as_root(root), frozenset(issues))


def _shared_folder(paths: list[str], texts: list[str]) -> str | None:
    """The folder the session's absolute paths are relative to: of the folder they all share
    and the ones above it (deeper than ``/home/me``), the one whose relative spellings the
    session writes most (``lib/tax.ex`` for ``/repo/lib/tax.ex``: the root is ``/repo``, not
    ``/repo/lib``); the shared folder itself when the session writes none."""
    if len(paths) < 2:
        return None
    common = os.path.commonpath([os.path.dirname(p) for p in paths])
    candidates: list[str] = []
    while common.count("/") >= _MIN_ROOT_PARTS and len(candidates) < _ROOT_CANDIDATES:
        candidates.append(common)
        common = os.path.dirname(common)
    if len(candidates) < 2:
        return candidates[0] if candidates else None
    written = "\n".join(texts).lower()
    sample = sorted({p.lower() for p in paths})[:_ROOT_PATHS]

    def spelled_relative(folder: str) -> int:
        relative = [p[len(folder) + 1 :] for p in sample]
        # written as it is, not as the end of a longer path (``./lib/x`` is; ``repo/lib/x`` not)
        return sum(len(re.findall(r"(?<![\w-]/)" + re.escape(r), written)) for r in relative if r)

    best = max(candidates, key=spelled_relative)
    return best if spelled_relative(best) > 0 else candidates[0]


def _as_root(folder: Any) -> str | None:
    if not isinstance(folder, str) or folder.count("/") < _MIN_ROOT_PARTS:
        return None
    return folder.lower().rstrip("/") + "/"
