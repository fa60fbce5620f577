"""A pytest plugin that runs JAATO's own GC plugin tests against this project's plugins.

Used only by CI's JAATO step (``.ci/jaato``), in a venv holding jaato-server and the engine
installed without extras: ``pytest -p tests.jaato.swap -c tests/jaato/pytest.ini <JAATO's test
files> tests/jaato/in_the_loop.py``. The project's main test run never loads it (no file here
is a conftest or named ``test_*.py``).

* The swap: JAATO's test modules import ``create_plugin`` and the plugin class from
  ``shared.plugins.gc_truncate`` (and summarize, hybrid, budget). Before any is collected,
  those names are pointed at the project's classes, loaded through JAATO's own
  ``discover_gc_plugins`` under the project's names (``gcengine_truncate``, ...), so the tests
  exercise exactly what a JAATO user's gc.json loads.
* The plugin's name: the one fact that differs by design (the project never registers under
  JAATO's names). In JAATO's test modules each of JAATO's four names is read as the project's
  (an AST rewrite of those string literals), so a test asserting ``plugin.name ==
  "gc_truncate"`` asserts ``"gc_gcengine_truncate"``.
* Exclusions: ``excluded.txt`` lists by node id each test left out, with its reason; a listed
  test that is not collected fails the run, so the list stays true.
"""

from __future__ import annotations

import ast
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from _pytest.assertion.rewrite import rewrite_asserts

# JAATO's plugin module, the class name its tests import, and the project's plugin name.
SWAPS = {
    "shared.plugins.gc_truncate": ("TruncateGCPlugin", "gc_gcengine_truncate"),
    "shared.plugins.gc_summarize": ("SummarizeGCPlugin", "gc_gcengine_summarize"),
    "shared.plugins.gc_hybrid": ("HybridGCPlugin", "gc_gcengine_hybrid"),
    "shared.plugins.gc_budget": ("BudgetGCPlugin", "gc_gcengine_budget"),
}
RENAMED = {"gc_" + ours.removeprefix("gc_gcengine_"): ours for _, ours in SWAPS.values()}
EXCLUDED_FILE = Path(__file__).with_name("excluded.txt")


def excluded() -> dict[str, str]:
    """Node id (relative to JAATO's ``shared`` package) -> why it is left out."""
    reasons: dict[str, str] = {}
    for line in EXCLUDED_FILE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            node, _, why = line.partition(" ")
            reasons[node] = why.strip()
    return reasons


def pytest_configure(config: pytest.Config) -> None:
    import importlib

    from shared.plugins.gc import discover_gc_plugins

    found = discover_gc_plugins()
    for module_name, (class_name, ours) in SWAPS.items():
        if ours not in found:
            raise pytest.UsageError(f"{ours} is not registered under jaato.gc_plugins")
        plugin = found[ours]
        module = importlib.import_module(module_name)
        setattr(module, class_name, plugin)
        module.create_plugin = plugin  # type: ignore[attr-defined]


class _Renamer(ast.NodeTransformer):
    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        if isinstance(node.value, str) and node.value in RENAMED:
            return ast.copy_location(ast.Constant(RENAMED[node.value]), node)
        return node


def _module_name(path: Path) -> str:
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").exists():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)


class JaatoTestModule(pytest.Module):
    """One of JAATO's test modules, with JAATO's plugin names read as the project's."""

    def _getobj(self) -> Any:
        name = _module_name(self.path)
        source = self.path.read_text()
        tree = _Renamer().visit(ast.parse(source, str(self.path)))
        ast.fix_missing_locations(tree)
        rewrite_asserts(tree, source.encode(), self.path, self.config)
        module = types.ModuleType(name)
        module.__file__ = str(self.path)
        module.__package__ = name.rpartition(".")[0]
        sys.modules[name] = module
        exec(compile(tree, str(self.path), "exec"), module.__dict__)
        return module


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> Any:
    if "shared" in module_path.parts and module_path.name.startswith("test_"):
        return JaatoTestModule.from_parent(parent, path=module_path)
    return None


def _jaato_node(item: pytest.Item) -> str | None:
    parts = item.path.parts
    if "shared" not in parts:
        return None
    at = len(parts) - 1 - parts[::-1].index("shared")
    return "/".join(parts[at + 1 :]) + "::" + item.nodeid.split("::", 1)[1]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reasons = excluded()
    kept, left_out, seen, files = [], [], set(), set()
    for item in items:
        node = _jaato_node(item)
        if node is not None:
            files.add(node.split("::")[0])
        if node in reasons:
            seen.add(node)
            left_out.append(item)
        else:
            kept.append(item)
    missing = sorted(n for n in set(reasons) - seen if n.split("::")[0] in files)
    if missing:
        raise pytest.UsageError(f"{EXCLUDED_FILE.name} lists tests not collected: {missing}")
    items[:] = kept
    config.hook.pytest_deselected(items=left_out)
