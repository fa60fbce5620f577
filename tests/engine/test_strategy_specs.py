"""A strategy has one home: its module declares it (``SPEC``, its keys), and everything else,
the registry, ``GCConfig``, the tables, the entry points and the docs, agrees with that.

Each check fails naming what to change, so a strategy added in the wrong way (its spec not
registered, its keys not in ``GCConfig``, a docs table left behind) is caught here.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import gcengine
import gcengine.strategies
from gcengine import (
    GC_JSON_FIELDS,
    GC_JSON_SUBFIELDS,
    NEW_POLICY_STRATEGY,
    PLUGIN_CONFIG_FIELDS,
    STRATEGY_SPECS,
    GCConfig,
    dump_gc_config,
    load_gc_config,
    starter_policies,
    strategy_spec,
)
from gcengine.strategies import ENGINE_STRATEGIES, budget
from gcengine.strategies.common import (
    EVERY_STRATEGY_READS,
    NOOP_TEMPLATE,
    CommonKeys,
    TrailingKeys,
)
from gcengine.strategies.keys import declared_keys, key_spec

REPO = Path(gcengine.__file__).resolve().parent.parent
DOCS = REPO / "docs"
NAMES = [spec.name for spec in STRATEGY_SPECS]
FIELDS = {field.key: field for field in GC_JSON_FIELDS}
# The variables every one of JAATO's templates may use, whatever the strategy.
JAATO_VARIABLES = {"removed", "kept", "truncated", "summarized", "items", "freed", "tokens_freed"}


# --- One home ---------------------------------------------------------------------------------


def strategy_modules() -> dict[str, Any]:
    """Every module of ``gcengine/strategies`` that declares a ``SPEC``, by module name."""
    found = {}
    for info in pkgutil.iter_modules(gcengine.strategies.__path__):
        module = importlib.import_module(f"gcengine.strategies.{info.name}")
        if hasattr(module, "SPEC"):
            found[info.name] = module
    return found


def test_every_strategy_module_is_in_the_registry() -> None:
    modules = strategy_modules()
    unregistered = [name for name, m in modules.items() if m.SPEC not in STRATEGY_SPECS]
    assert unregistered == [], "add each module's SPEC to gcengine/strategies/__init__.py"
    assert len(modules) == len(STRATEGY_SPECS)
    for spec in STRATEGY_SPECS:
        assert modules[spec.short_name].SPEC is spec, "a strategy's module is named after it"


def test_the_registry_finds_a_strategy_by_either_name() -> None:
    for spec in STRATEGY_SPECS:
        assert strategy_spec(spec.name) is strategy_spec(spec.short_name) is spec
        assert spec.name == spec.plugin.name == f"gc_{spec.short_name}"
        assert ENGINE_STRATEGIES[spec.name] is spec.plugin
    assert NAMES == ["gc_truncate", "gc_summarize", "gc_hybrid", "gc_budget", "gc_reachability"]
    with pytest.raises(KeyError, match="no strategy named 'fifo'"):
        strategy_spec("fifo")


def key_declarations() -> list[tuple[str, type[BaseModel]]]:
    """Who declares keys: the common models, and each strategy its own."""
    return [
        ("every strategy", CommonKeys),
        ("every strategy", TrailingKeys),
        *((spec.name, spec.keys) for spec in STRATEGY_SPECS if spec.keys is not None),
    ]


def test_gcconfig_is_composed_of_every_declared_key_and_holds_no_other() -> None:
    missing = [
        f"{model.__name__} ({owner})"
        for owner, model in key_declarations()
        if not issubclass(GCConfig, model)
    ]
    assert missing == [], "add these models to GCConfig's bases in gcengine/config.py"
    declared: dict[str, str] = {}
    for owner, model in key_declarations():
        for name, _, _ in declared_keys(model):
            assert name not in declared, f"{name} is declared by {declared[name]} and {owner}"
            declared[name] = owner
    undeclared = sorted(set(GCConfig.model_fields) - {"plugin"} - set(declared))
    assert undeclared == [], "every key GCConfig holds is declared by a strategy or in common"
    assert sorted(set(declared) - set(GCConfig.model_fields)) == []
    unannotated = [n for n, f in GCConfig.model_fields.items() if key_spec(f) is None]
    assert unannotated == [], "every key has a KeySpec: its label, help and kind"


def test_what_a_strategy_reads_is_a_key_and_its_own_keys_are_read() -> None:
    options = {f"plugin_config.{field.key}" for field in PLUGIN_CONFIG_FIELDS}
    for spec in STRATEGY_SPECS:
        assert set(spec.reads) <= set(FIELDS) | options, spec.name
        assert set(spec.own_keys) <= set(spec.reads), spec.name
        assert {f"plugin_config.{option}" for option in spec.options} <= set(spec.reads)
        assert set(EVERY_STRATEGY_READS) <= set(spec.reads), spec.name
        assert (NOOP_TEMPLATE in spec.reads) == spec.noop_notice, spec.name
        assert spec.summarizes == ("summary" in spec.inserts)


def test_every_declared_key_says_what_it_is() -> None:
    rows = [*GC_JSON_FIELDS, *PLUGIN_CONFIG_FIELDS]
    rows += [option for options in GC_JSON_SUBFIELDS.values() for option in options]
    for row in rows:
        assert row.label, row.key
        assert row.help.endswith("."), row.key
        assert (row.kind == "choice") == bool(row.choices), row.key
        if row.kind == "percent":
            assert (row.minimum, row.maximum) == (0, 100), row.key
    assert (FIELDS["batch_size"].minimum, FIELDS["batch_size"].maximum) == (5, 20)
    assert FIELDS["batch_size"].unit == "segments"


def test_each_strategys_notices_render_with_what_it_provides() -> None:
    for spec in STRATEGY_SPECS:
        assert set(spec.placeholders) >= JAATO_VARIABLES, spec.name
        assert all(meaning for meaning in spec.placeholders.values()), spec.name
        policy = {"type": spec.name, "notify_on_gc": True, "notification_template": spec.template}
        assert load_gc_config(policy, env={}).warnings == []


def test_starter_policies_load_as_their_strategy_and_come_in_the_demos_order() -> None:
    policies = starter_policies()
    assert list(policies) == [
        "Budget 80/60",
        "Continuous budget",
        "Summarize old turns",
        "Hybrid (summarize the middle)",
        "Reachability stash",
    ]
    assert NEW_POLICY_STRATEGY is budget.SPEC
    assert policies["Budget 80/60"]["type"] == NEW_POLICY_STRATEGY.name
    for spec in STRATEGY_SPECS:
        for name, policy in spec.starter_policies.items():
            assert load_gc_config(policy, env={}).plugin == spec.name, name
    policies["Budget 80/60"]["threshold_percent"] = 1
    assert starter_policies()["Budget 80/60"]["threshold_percent"] == 80, "a new copy each time"


def test_the_entry_points_name_each_strategys_jaato_plugin_under_its_own_name() -> None:
    """Registered for JAATO under the names the specs declare, never one of JAATO's own (which
    would replace JAATO's plugins), each pointing at that strategy's JAATO plugin class."""
    from gcengine.running.jaato_plugins import JAATO_PLUGINS

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    registered = project["entry-points"]["jaato.gc_plugins"]
    module = "gcengine.running.jaato_plugins"
    assert registered == {
        spec.jaato_plugin: f"{module}:{JAATO_PLUGINS[spec.jaato_plugin].__qualname__}"
        for spec in STRATEGY_SPECS
    }
    assert not set(registered) & {"gc_truncate", "gc_summarize", "gc_hybrid", "gc_budget"}
    plugins = importlib.import_module(module)
    for spec in STRATEGY_SPECS:
        plugin = JAATO_PLUGINS[spec.jaato_plugin]
        assert plugin.spec is spec
        assert getattr(plugins, plugin.__qualname__) is plugin, "what the entry point loads"


# --- The docs list what the specs declare -----------------------------------------------------


def table(document: str, header: str) -> list[list[str]]:
    """The rows of the table in ``docs/<document>`` whose header row is ``header``."""
    lines = (DOCS / document).read_text(encoding="utf-8").splitlines()
    assert header in lines, f"docs/{document} has no table headed {header!r}"
    start = lines.index(header) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip()[1:-1].split("|")])
    return rows


def code(cell: str) -> str:
    """A cell's text without the backticks around it."""
    return cell.removeprefix("`").removesuffix("`")


def shown(value: Any) -> str:
    """A default as the docs show it: JSON, whole numbers without a decimal point."""

    def plain(item: Any) -> Any:
        if isinstance(item, BaseModel):
            return plain(item.model_dump())
        if isinstance(item, dict):
            return {key: plain(inner) for key, inner in item.items()}
        if isinstance(item, float) and item.is_integer():
            return int(item)
        return item

    return json.dumps(plain(value))


def readers(strategies: tuple[str, ...]) -> str:
    if list(strategies) == NAMES:
        return "all"
    return ", ".join(strategy_spec(name).short_name for name in strategies) or "none"


def test_the_engine_docs_list_every_key_with_its_default_readers_and_help() -> None:
    defaults = dump_gc_config(GCConfig())
    rows = table("engine.md", "| key | default | read by | what it is |")
    assert [
        (code(key), code(default), read_by, help_text) for key, default, read_by, help_text in rows
    ] == [
        (
            field.key,
            shown(defaults.get(field.key, field.default)),
            readers(field.strategies),
            field.help,
        )
        for field in GC_JSON_FIELDS
    ]


def test_the_engine_docs_list_the_strategies_as_their_specs_say() -> None:
    rows = table(
        "engine.md", "| strategy | `type` | in a line | its own keys | writes | no-op notice |"
    )
    assert rows == [
        [
            f"`{spec.name}`",
            f"`{spec.short_name}`",
            spec.description,
            ", ".join(
                f"`{key}`"
                for key in (*spec.own_keys, *(f"plugin_config.{o}" for o in spec.options))
            ),
            ", ".join(spec.inserts),
            "yes" if spec.noop_notice else "no",
        ]
        for spec in STRATEGY_SPECS
    ]
    assert [code(row[0]) for row in table("engine.md", "| strategy | removes |")] == NAMES


def test_the_engine_docs_list_each_strategys_placeholders() -> None:
    header = "| variable | " + " | ".join(spec.label for spec in STRATEGY_SPECS) + " |"
    provided: dict[str, set[str]] = {spec.name: set() for spec in STRATEGY_SPECS}
    for variables, *cells in table("engine.md", header):
        names = re.findall(r"`([a-z_]+)`", variables)
        for spec, cell in zip(STRATEGY_SPECS, cells, strict=True):
            if cell:
                provided[spec.name].update(names)
    assert provided == {spec.name: set(spec.placeholders) for spec in STRATEGY_SPECS}


def test_the_reachability_docs_list_its_keys_roots_weights_and_actions() -> None:
    reachability = strategy_spec("reachability")
    rows = table("reachability.md", "| key | default | what it is |")
    assert [(code(key), code(default), help_text) for key, default, help_text in rows] == [
        (key, shown(FIELDS[key].default), FIELDS[key].help) for key in reachability.own_keys
    ]
    roots = gcengine.ReachabilityRoots()
    rows = table("reachability.md", "| option | default | what it makes a root |")
    assert [(code(option), default) for option, default, _ in rows] == [
        (option.key, shown(getattr(roots, option.key))) for option in GC_JSON_SUBFIELDS["roots"]
    ]
    weights = gcengine.ScoreWeights()
    rows = table("reachability.md", "| weight | default | what it is |")
    assert [(code(weight), default, help_text) for weight, default, help_text in rows] == [
        (option.key, shown(getattr(weights, option.key)), option.help)
        for option in GC_JSON_SUBFIELDS["weights"]
    ]
    rows = table("reachability.md", "| `action` | what is taken goes |")
    assert [code(action.split(" ")[0]) for action, _ in rows] == list(FIELDS["action"].choices)


def test_the_policy_docs_list_the_starter_policies() -> None:
    rows = table("policies.md", "| policy | `gc.json` |")
    assert {name: json.loads(code(policy)) for name, policy in rows} == starter_policies()
    assert [name for name, _ in rows] == list(starter_policies())
