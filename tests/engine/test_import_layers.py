"""The engine's modules import each other in layers, never in a circle.

Every module of ``gcengine`` is read as source: every import it makes, at the top or inside a
function, counts; only ``if TYPE_CHECKING:`` blocks (names for annotations, never run) do not.
A *unit* is a subpackage (``gcengine.gc``) or a top-level module (``gcengine.session``); the
units must import each other without a cycle, and the modules of one unit too.

The layers, lowest first: the core modules (messages, budget, session, tokens, ...), the
collection machinery (``gc``), the reachability model (``reachability``), the strategies
(``strategies``), policies (``config``), running them (``running``), analysis
(``analysis``), and what sits on top (usage, quality, the command line, the agent tools).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

import gcengine

PACKAGE = Path(gcengine.__file__).resolve().parent
# The named layers, lowest first: a unit never imports one listed after it.
LAYERS = (
    "gcengine.gc",
    "gcengine.reachability",
    "gcengine.strategies",
    "gcengine.config",
    "gcengine.running",
    "gcengine.analysis",
)

Edges = dict[str, dict[str, list[str]]]
"""Importer -> imported -> where (``module:line``), for modules or for units."""


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_names(tree: ast.AST, module: str, is_package: bool) -> Iterable[tuple[str, int]]:
    """Every ``(dotted name, line)`` an import anywhere in ``tree`` names, outside
    TYPE_CHECKING blocks: ``from a.b import c`` names ``a.b.c`` (a module, or a name in one)."""
    package = module if is_package else module.rpartition(".")[0]
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parent, base] if base else parent)
            yield from ((f"{base}.{alias.name}", node.lineno) for alias in node.names)
        stack.extend(ast.iter_child_nodes(node))


def module_imports(root: Path) -> Edges:
    """For each module under ``root``, the modules of the package it imports: a name stands
    for the longest module it starts with (``a.b.c`` for a module ``a.b.c``, else ``a.b``)."""
    paths = {module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    edges: Edges = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found = edges.setdefault(module, {})
        for name, line in imported_names(tree, module, path.name == "__init__.py"):
            target = name
            while target and target not in paths:
                target = target.rpartition(".")[0]
            where = found.setdefault(target, []) if target and target != module else None
            if where is not None and f"{module}:{line}" not in where:
                where.append(f"{module}:{line}")
    return edges


def unit_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def unit_imports(edges: Edges) -> Edges:
    units: Edges = {}
    for module, targets in edges.items():
        for target, where in targets.items():
            if unit_of(module) != unit_of(target):
                units.setdefault(unit_of(module), {}).setdefault(unit_of(target), []).extend(where)
    return units


def find_cycle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """A cycle of ``graph`` as the nodes along it (the first one again at the end), if any."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def described(cycle: list[str], edges: Edges) -> str:
    steps = [f"{a} -> {b} ({', '.join(edges[a][b][:3])})" for a, b in itertools.pairwise(cycle)]
    return "import cycle: " + "; ".join(steps)


MODULES = module_imports(PACKAGE)
UNITS = unit_imports(MODULES)


def test_the_reader_sees_function_imports_and_skips_type_checking_blocks() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "from gcengine.gc import plan\n"
        "if TYPE_CHECKING:\n"
        "    from gcengine.config import GCConfig\n"
        "else:\n"
        "    import gcengine.tokens\n"
        "def later() -> None:\n"
        "    from gcengine.running.run import run_gc\n"
    )
    names = {name for name, _ in imported_names(ast.parse(source), "gcengine.x", False)}
    assert {"gcengine.gc.plan", "gcengine.tokens", "gcengine.running.run.run_gc"} <= names
    assert not any(name.startswith("gcengine.config") for name in names)
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": ["b"], "b": []}) is None


def test_the_reader_finds_the_engines_own_imports() -> None:
    assert "gcengine.gc.plan" in MODULES["gcengine.reachability.graph"]
    assert "gcengine.gc" in UNITS["gcengine.reachability"]
    assert "gcengine.strategies" in UNITS["gcengine.config"]


def test_the_units_import_each_other_without_a_cycle() -> None:
    graph = {unit: list(targets) for unit, targets in UNITS.items()}
    cycle = find_cycle(graph)
    assert cycle is None, described(cycle, UNITS)


@pytest.mark.parametrize("unit", sorted({unit_of(m) for m in MODULES}))
def test_the_modules_of_a_unit_import_each_other_without_a_cycle(unit: str) -> None:
    graph = {
        module: [t for t in targets if unit_of(t) == unit]
        for module, targets in MODULES.items()
        if unit_of(module) == unit
    }
    cycle = find_cycle(graph)
    assert cycle is None, described(cycle, MODULES)


def test_no_layer_imports_one_above_it() -> None:
    upward = [
        f"{unit} imports {target} ({', '.join(UNITS[unit][target][:3])})"
        for low, unit in enumerate(LAYERS)
        for target in UNITS.get(unit, {})
        if target in LAYERS[low + 1 :]
    ]
    assert upward == []
