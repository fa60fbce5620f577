"""Finding strategies: ours, and any installed under JAATO's entry-point group.

A package registers a plugin as ``[project.entry-points."jaato.gc_plugins"] gc_x = "pkg:factory"``;
the factory takes no arguments and returns a plugin. This package registers its five
strategies there for JAATO, under names of their own (``gc_gcengine_budget``: JAATO's objects
in, JAATO's out, ``gcengine.running.jaato_plugins``); here those names load the engine's own
strategies.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any

from gcengine.errors import PluginError
from gcengine.gc.types import GCPlugin
from gcengine.strategies import ENGINE_PLUGIN_NAMES, ENGINE_STRATEGIES

ENTRY_POINT_GROUP = "jaato.gc_plugins"


def discover_gc_plugins() -> dict[str, Callable[[], Any]]:
    """Every installed plugin by name, third-party ones included; ours are always there."""
    factories: dict[str, Callable[[], Any]] = dict(ENGINE_STRATEGIES)
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.name in factories or entry_point.name in ENGINE_PLUGIN_NAMES:
            continue  # the engine's own, registered for JAATO
        factories[entry_point.name] = entry_point.load
    return factories


def load_gc_plugin(name: str, config: Mapping[str, Any] | None = None) -> GCPlugin:
    """An initialised plugin. ``truncate``, ``gc_truncate`` and the names it is registered
    under for JAATO (``gcengine_truncate``, ``gc_gcengine_truncate``) are the same strategy.

    The engine's own names win over any installed plugin of the same name, so they are found
    without reading every installed package's entry points (milliseconds a run)."""
    if name in ENGINE_PLUGIN_NAMES:
        name = ENGINE_PLUGIN_NAMES[name].name
    factories: Mapping[str, Callable[[], Any]] = ENGINE_STRATEGIES
    if name not in factories and f"gc_{name}" not in factories:
        factories = discover_gc_plugins()
    key = name if name in factories else f"gc_{name}"
    if key not in factories:
        known = ", ".join(sorted(factories))
        raise PluginError(f"no GC plugin named {name!r} (installed: {known})")
    factory = factories[key]
    if factory is not ENGINE_STRATEGIES.get(key):
        try:
            factory = factory()  # an entry point: load() gives the factory itself
        except Exception as error:  # a broken third-party package must not take us down
            raise PluginError(f"the GC plugin {key!r} failed to load: {error}") from error
    try:
        plugin = factory()
    except Exception as error:
        raise PluginError(f"the GC plugin {key!r} failed to start: {error}") from error
    plugin.initialize(dict(config or {}))
    if not isinstance(plugin, GCPlugin):
        raise PluginError(f"{key!r} does not provide the GC plugin interface")
    return plugin
