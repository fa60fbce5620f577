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
from pathlib import Path

import pytest

import gcengine
from tests.structure import (
    described,
    find_cycle,
    imported_names,
    long_modules,
    module_imports,
    unit_imports,
    unit_of,
)

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


def test_no_module_of_the_engine_is_over_800_lines() -> None:
    """A module that long holds several concerns; split it by concern into a package."""
    assert long_modules(PACKAGE, 800) == []
