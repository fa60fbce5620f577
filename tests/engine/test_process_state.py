"""What the engine keeps for the life of a process: only bounded memos of pure functions.

A worker reads session after session in one process; anything a module keeps across calls
must give the same answer a fresh process would and stay bounded whatever the files say.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import gcengine
from gcengine.tokens import _cached_counter, load_counter

PACKAGE = Path(gcengine.__file__).resolve().parent
MEMOS = re.compile(r"functools\.(cache|lru_cache)\b")


def test_every_memo_of_the_engine_says_why_it_is_bounded() -> None:
    """A ``functools`` memo decorates only a pure function, and a comment on the lines before
    it (or on its own line) says what bounds it."""
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, ast.FunctionDef):
                continue
            for decorator in node.decorator_list:
                line = decorator.lineno - 1
                if not MEMOS.search(lines[line]):
                    continue
                comment = lines[line]
                while line > 0 and lines[line - 1].lstrip().startswith("#"):
                    line -= 1
                    comment = lines[line] + comment
                if "bounded" not in comment.lower():
                    unexplained.append(f"{path.relative_to(PACKAGE)}:{node.name}")
    assert unexplained == []


def test_encoding_names_read_from_files_keep_no_counter_of_their_own() -> None:
    """A stored figure names its counter; any name tiktoken publishes no file for is counted
    as the bundled encoding is, by the bundled encoding's counter, and adds none."""
    bundled = load_counter()
    kept = _cached_counter.cache_info().currsize
    for number in range(50):
        assert load_counter(f"made-up-{number}") is bundled
        assert gcengine.counter_by_name(f"tiktoken:made-up-{number}") is bundled
    assert _cached_counter.cache_info().currsize == kept
