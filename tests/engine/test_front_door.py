"""The engine has one front door: everything its callers use is importable from ``gcengine``,
and nothing else is.

The web shell, the benchmarks and the web tests are read as source, not run: every engine
name they use, whichever module they take it from today, must be exported by ``gcengine``
itself, and the benchmarks take nothing from anywhere else. Every name exported is used by
something outside the engine or is part of the API ``docs/engine.md`` describes: what only the
engine uses stays in its module (the engine's own tests import it from there).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import gcengine
import gcengine.mcp_tools

REPO_ROOT = Path(gcengine.__file__).resolve().parent.parent
CALLERS = sorted(
    path
    for folder in ("jaato_web", "benchmarks", "tests/web")
    for path in (REPO_ROOT / folder).rglob("*.py")
)
BENCHMARKS = sorted((REPO_ROOT / "benchmarks").glob("*.py"))
OUTSIDE = sorted(
    path
    for folder in ("jaato_web", "benchmarks", "tests", ".ci", "dev")
    for path in (REPO_ROOT / folder).rglob("*.py")
)
API_DOC = REPO_ROOT / "docs" / "engine.md"
# The agent tools have a front door of their own: they need the MCP SDK, which
# ``import gcengine`` never loads.
FRONT_DOORS = {"gcengine.mcp_tools": gcengine.mcp_tools.__all__}


def engine_names(tree: ast.AST) -> list[tuple[str, str, int]]:
    """Every engine name a module uses: ``(module, name, line)`` for ``from gcengine[.x] import
    name`` and ``("gcengine", name, line)`` for ``gcengine.name``."""
    used: list[tuple[str, str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "gcengine":
            used.extend((node.module or "", alias.name, node.lineno) for alias in node.names)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "gcengine"
        ):
            used.append(("gcengine", node.attr, node.lineno))
    return used


def parsed(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def test_the_scanner_sees_deep_imports_and_attributes() -> None:
    tree = ast.parse("from gcengine.gc import run_gc\nimport gcengine\ngcengine.Session\n")
    assert engine_names(tree) == [("gcengine.gc", "run_gc", 1), ("gcengine", "Session", 3)]


def test_everything_is_listed_in_all_and_importable() -> None:
    assert len(set(gcengine.__all__)) == len(gcengine.__all__)
    missing = [name for name in gcengine.__all__ if not hasattr(gcengine, name)]
    assert missing == []


def documented(text: str) -> set[str]:
    """Every name written as code in ``text``: each identifier in a code block or inside
    backticks."""
    blocks = re.findall(r"^```.*?^```", text, flags=re.DOTALL | re.MULTILINE)
    prose = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    return {
        name
        for code in (*blocks, *re.findall(r"`([^`]+)`", prose))
        for name in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", code)
    }


def test_the_documented_names_are_read_from_code() -> None:
    text = "`load_session(path)`, not plain words\n```\nx = Session\n```\nand `analyze`\n"
    assert documented(text) == {"load_session", "path", "x", "Session", "analyze"}


def test_everything_exported_is_used_outside_the_engine_or_documented() -> None:
    used = {name for path in OUTSIDE for _, name, _ in engine_names(parsed(path))}
    described = documented(API_DOC.read_text(encoding="utf-8"))
    idle = [name for name in gcengine.__all__ if name not in used | described]
    assert idle == []


@pytest.mark.parametrize("path", CALLERS, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_engine_name_a_caller_uses_is_exported_by_gcengine(path: Path) -> None:
    unexported = [
        f"{path.relative_to(REPO_ROOT)}:{line} uses {module}.{name}"
        for module, name, line in engine_names(parsed(path))
        if name not in FRONT_DOORS.get(module, gcengine.__all__)
    ]
    assert unexported == []


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.name)
def test_benchmarks_import_only_the_front_door(path: Path) -> None:
    deep = [
        f"{path.name}:{line} imports from {module}"
        for module, _, line in engine_names(parsed(path))
        if module != "gcengine"
    ]
    assert deep == []
