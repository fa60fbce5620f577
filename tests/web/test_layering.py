"""The shell's layers, read from the source: who may import whom.

From the top: the doors (``pages``, ``api`` and the ``client`` command line, side by side,
none importing another),
then ``review``, ``teams``, ``dashboard``, and the engine at the bottom. A module may import
its own layer and the layers below it, never one above; so a reader can tell from the tree
alone where a page, an endpoint and a rule live, and a rule can never depend on a page.
Exceptions are listed below, each with its reason; anything else fails this test by name.
"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import pytest

import gcengine
from tests.structure import described, find_cycle, long_modules, module_imports

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "jaato_web"

# Top to bottom. Modules in one entry are one layer; doors are separate layers of equal rank.
# ``client`` is the ``jaato-gc`` command line, a door over the API that needs no Django;
# ``mcp`` serves the agent tools at /mcp.
DOORS = ("jaato_web.pages", "jaato_web.api", "jaato_web.client", "jaato_web.mcp")
LAYERS = ("jaato_web.review", "jaato_web.teams", "jaato_web.dashboard")
# Modules any layer may use: settings and helpers with no rules in them.
NEUTRAL = (
    "jaato_web.caches",
    "jaato_web.errors",
    "jaato_web.http",
    "jaato_web.readonly_admin",
    "jaato_web.settings",
)
# The entry points that put the doors together: routes, and the ASGI app.
ROOTS = ("jaato_web.urls", "jaato_web.asgi")
# (importer, imported): why the rule does not apply.
ALLOWED = {
    ("jaato_web.urls", "jaato_web.api"): "the root URL list mounts the API (pages by name)",
    ("jaato_web.asgi", "jaato_web.mcp"): "the ASGI app serves /mcp beside Django",
    ("jaato_web.http", "jaato_web.teams"): (
        "the page request names teams' Access, for type checking only"
    ),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _owner(module: str) -> str | None:
    """The layer (or door, or neutral module) a module belongs to."""
    for top in (*DOORS, *LAYERS, *NEUTRAL, *ROOTS):
        if module == top or module.startswith(top + "."):
            return top
    return None


def _rank(owner: str) -> int:
    """Doors rank 0; the apps below them 1, 2, 3."""
    return 0 if owner in DOORS else LAYERS.index(owner) + 1


def _violation(importer: str, imported: str) -> str | None:
    source, target = _owner(importer), _owner(imported)
    if target is None or source == target or target in NEUTRAL:
        return None
    if source is None:
        return f"{importer} belongs to no layer; add it to one in this test"
    if (source, target) in ALLOWED:
        return None
    if source in NEUTRAL or source in ROOTS:
        return f"{importer} is neutral but imports {imported}"
    if target in ROOTS:
        return None
    if target in DOORS:
        return f"{importer} imports the door {imported}"
    if _rank(target) < _rank(source):
        return f"{importer} ({source}) imports {imported} from the layer above it ({target})"
    return None


def _shell_modules() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if "migrations" not in path.parts)


def test_every_import_respects_the_layers() -> None:
    problems = [
        problem
        for path in _shell_modules()
        for imported in sorted(_imports(path))
        if imported.startswith("jaato_web")
        and (problem := _violation(_module_name(path), imported)) is not None
    ]
    assert not problems, "\n".join(problems)


def _engine_modules(path: Path) -> set[str]:
    """The engine modules a file imports (``from gcengine.gc import x`` names ``gcengine.gc``)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(a.name for a in node.names if a.name.split(".")[0] == "gcengine")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "gcengine":
            modules.add(node.module or "")
    return modules


# The engine's front doors: ``gcengine``, and ``gcengine.mcp_tools`` for the agent tools,
# which needs the MCP SDK that ``import gcengine`` must not load.
FRONT_DOORS = ("gcengine", "gcengine.mcp_tools")


def test_the_shell_uses_the_engine_through_its_front_door() -> None:
    """``import gcengine`` only (and ``gcengine.mcp_tools`` for the agent tools): what the shell
    needs is exported from there (``tests/engine/test_front_door.py`` checks every name is),
    so the engine can rearrange its modules without breaking the dashboard."""
    deep = [
        f"{_module_name(path)} imports {module}"
        for path in _shell_modules()
        for module in sorted(_engine_modules(path))
        if module not in FRONT_DOORS
    ]
    assert not deep, "\n".join(deep)


def test_every_allowed_exception_is_still_needed() -> None:
    """An exception that nothing uses any more is removed, so the list stays true."""
    used = {
        (_owner(_module_name(path)), _owner(imported))
        for path in _shell_modules()
        for imported in _imports(path)
        if imported.startswith("jaato_web")
    }
    assert set(ALLOWED) <= used


@pytest.mark.parametrize(
    ("importer", "imported", "expected"),
    [
        ("jaato_web.dashboard.services", "jaato_web.teams.audit", "layer above"),
        ("jaato_web.teams.access", "jaato_web.review.models", "layer above"),
        ("jaato_web.review.selectors", "jaato_web.pages.forms", "door"),
        ("jaato_web.api.runs", "jaato_web.pages.runs", "door"),
        ("jaato_web.pages.runs", "jaato_web.api.schemas", "door"),
        ("jaato_web.pages.runs", "jaato_web.review.selectors", None),
        ("jaato_web.review.models", "jaato_web.dashboard.models", None),
        ("jaato_web.teams.access", "jaato_web.http", None),
    ],
)
def test_the_rule_itself(importer: str, imported: str, expected: str | None) -> None:
    problem = _violation(importer, imported)
    if expected is None:
        assert problem is None
    else:
        assert problem is not None
        assert expected in problem


# --- The write side: one home per family -----------------------------------------------------

SERVICES = "jaato_web.dashboard.services"
# What several families of use cases need: any family may import these, and they no family.
SHARED_SERVICES = (f"{SERVICES}.common", f"{SERVICES}.stored_sessions", f"{SERVICES}.work")
# (importer, imported): why a family uses another family's module. None so far: what two
# families need lives in a shared module.
FAMILY_EXCEPTIONS: dict[tuple[str, str], str] = {}
BACKGROUND = "jaato_web.dashboard.background"


def _modules_imported(path: Path) -> set[str]:
    """The modules a file imports, each named as its file is: ``from package import module``
    names ``package.module``, not the package (whose ``__init__`` imports every family)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path.parent)
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = ".".join(filter(None, (parent, base)))
            for alias in node.names:
                named = f"{base}.{alias.name}"
                is_module = any(
                    (ROOT / f"{named.replace('.', '/')}{end}").exists()
                    for end in (".py", "/__init__.py")
                )
                modules.add(named if is_module else base)
    return modules


def _family_violation(importer: str, imported: str) -> str | None:
    """Why ``importer``, a module of the services, may not import ``imported``; None if it may."""
    if imported == BACKGROUND or imported.startswith(BACKGROUND + "."):
        return f"{importer} imports {imported}: the lease wraps the use case, not the other way"
    if not imported.startswith(SERVICES) or imported == importer:
        return None
    if (importer, imported) in FAMILY_EXCEPTIONS or imported in SHARED_SERVICES:
        return None
    if imported == SERVICES:
        return f"{importer} imports the services package, which is every family"
    return f"{importer} imports another family's module {imported}"


def _service_modules() -> list[Path]:
    folder = PACKAGE / "dashboard" / "services"
    return sorted(path for path in folder.glob("*.py") if path.name != "__init__.py")


def test_a_family_of_use_cases_imports_no_other_family() -> None:
    """Each family (uploads, runs, replays, policies, archive, stash, quality) has one home,
    and what several need is shared (``SHARED_SERVICES``), so a family can change without the
    others, and no use case starts or wraps background work itself."""
    assert _service_modules(), "the services are a package of modules"
    problems = [
        problem
        for path in _service_modules()
        for imported in sorted(_modules_imported(path))
        if (problem := _family_violation(_module_name(path), imported)) is not None
    ]
    assert not problems, "\n".join(problems)


def test_every_family_exception_is_still_needed() -> None:
    used = {
        (_module_name(path), imported)
        for path in _service_modules()
        for imported in _modules_imported(path)
    }
    assert set(FAMILY_EXCEPTIONS) <= used


@pytest.mark.parametrize(
    ("importer", "imported", "expected"),
    [
        (f"{SERVICES}.runs", f"{SERVICES}.common", None),
        (f"{SERVICES}.stash", f"{SERVICES}.stored_sessions", None),
        (f"{SERVICES}.archive", f"{SERVICES}.policies", "another family"),
        (f"{SERVICES}.uploads", SERVICES, "every family"),
        (f"{SERVICES}.common", f"{SERVICES}.runs", "another family"),
        (f"{SERVICES}.runs", f"{BACKGROUND}.tasks", "lease wraps"),
        (f"{SERVICES}.runs", "jaato_web.dashboard.storage", None),
    ],
)
def test_the_family_rule_itself(importer: str, imported: str, expected: str | None) -> None:
    problem = _family_violation(importer, imported)
    if expected is None:
        assert problem is None
    else:
        assert problem is not None
        assert expected in problem


# --- Strategies are the engine's: the shell reads their specs, never their names ---------------

TEMPLATES = ROOT / "templates"


def _strategy_names_in_code(path: Path) -> list[str]:
    """String constants of a module that name one of the engine's strategies by its plugin
    name (``gc_...``; a short name can be an ordinary word the shell uses otherwise)."""
    names = {spec.name for spec in gcengine.STRATEGY_SPECS}
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    ]


def test_the_shell_names_no_strategy_and_reads_the_engines_specs_instead() -> None:
    """What a strategy is (its keys, what it keeps, whether it stashes, the policies a new
    installation starts with) is declared once, in its engine module; a page or a service
    that named one would have to be changed with every strategy added."""
    code = [
        found
        for path in sorted(PACKAGE.rglob("*.py"))
        if "migrations" not in path.parts
        for found in _strategy_names_in_code(path)
    ]
    plugin_names = [spec.name for spec in gcengine.STRATEGY_SPECS]
    pages = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted(TEMPLATES.rglob("*.html"))
        for name in plugin_names
        if name in path.read_text()
    ]
    assert code + pages == []


# --- Families: one name in every layer, as docs/architecture.md tables them -------------------

ARCHITECTURE = ROOT / "docs" / "architecture.md"
# Where each column of the families table names its modules; a name with a slash is an app's
# own module (``review/services.py``), under ``jaato_web/``.
FOLDERS = {
    "page": PACKAGE / "pages",
    "API": PACKAGE / "api",
    "service": PACKAGE / "dashboard" / "services",
    "presenter": PACKAGE / "dashboard" / "presenters",
    "preview": PACKAGE / "dashboard" / "previews",
    "templates": TEMPLATES,
    "tests": ROOT / "tests" / "web",
}


def _table(first_column: str) -> list[dict[str, str]]:
    """The rows of the table in docs/architecture.md whose first column is ``first_column``."""
    lines = ARCHITECTURE.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_column} |"))
    table = itertools.takewhile(lambda line: line.startswith("|"), lines[start:])
    header, _, *rows = ([cell.strip() for cell in line.strip("|").split("|")] for line in table)
    return [dict(zip(header, row, strict=True)) for row in rows]


def _named(cell: str) -> list[str]:
    """What a cell names: its names in backticks, before any note in brackets; a dash, none."""
    return [] if cell.startswith("—") else re.findall(r"`([^`]+)`", cell.split("(")[0])


def test_every_module_and_folder_a_family_names_exists() -> None:
    """The table is where a reader looks first, so it may not name a module that moved."""
    missing = [
        f"{row['family']}: {column} {name}"
        for row in _table("family")
        for column, folder in FOLDERS.items()
        for name in _named(row[column])
        if not any((PACKAGE if "/" in name.rstrip("/") else folder).glob(name))
    ]
    assert not missing, "\n".join(missing)


def test_every_module_of_a_layer_is_a_familys_or_shared() -> None:
    """A new module joins a family, under its name, or is listed as shared with its reason."""
    named = {
        (column, name)
        for row in _table("family")
        for column in FOLDERS
        for name in _named(row[column])
    }
    shared = {(row["layer"], name) for row in _table("layer") for name in _named(row["module"])}
    stray = [
        f"{folder.relative_to(ROOT)}/{path.name}"
        for column, folder in FOLDERS.items()
        if column not in ("templates", "tests")
        for path in sorted(folder.glob("*.py"))
        if path.name != "__init__.py" and (column, path.name) not in named | shared
    ]
    assert not stray, "\n".join(stray)


# --- No circles, no module too long -----------------------------------------------------------


def test_the_shells_modules_import_each_other_without_a_cycle() -> None:
    """Counting imports inside functions: a module that must import another at call time to
    dodge a circle is in one all the same."""
    modules = module_imports(PACKAGE)
    cycle = find_cycle({module: list(targets) for module, targets in modules.items()})
    assert cycle is None, described(cycle, modules)


def test_no_module_of_the_shell_is_over_800_lines() -> None:
    """A module that long holds several concerns; split it by concern into a package
    (migrations are generated, and left as they are)."""
    assert long_modules(PACKAGE, 800) == []
