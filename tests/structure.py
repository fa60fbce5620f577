"""Reading a package's imports from its source, for the tests that keep its structure.

Every import a module makes counts, at the top or inside a function; only ``if
TYPE_CHECKING:`` blocks (names for annotations, never run) do not. So a cycle hidden in a
function body, which Python tolerates at import time, is still a cycle here.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterable, Mapping
from pathlib import Path

# Generated schema history: long by nature, never edited by hand.
GENERATED = ("migrations",)


def long_modules(root: Path, limit: int) -> list[str]:
    """Modules under ``root`` longer than ``limit`` lines, with their length."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if any(part in GENERATED for part in path.relative_to(root).parts):
            continue
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found.append(f"{path.relative_to(root.parent)}: {lines} lines")
    return found


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
