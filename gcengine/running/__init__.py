"""Running strategies: on a session once (``run_gc``), turn by turn as the agent lived it
(``simulate``), the check an agent makes after a turn (``would_collect``), and finding a
plugin by name, ours or an installed one (``load_gc_plugin``, ``discover_gc_plugins``)."""

from gcengine.errors import PluginError
from gcengine.running.plugins import ENTRY_POINT_GROUP, discover_gc_plugins, load_gc_plugin
from gcengine.running.run import GCOutcome, plugin_options, run_gc, would_collect
from gcengine.running.simulate import (
    Simulation,
    SimulationEvent,
    SimulationStep,
    replay_scorer,
    requests_without_gc,
    simulate,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "GCOutcome",
    "PluginError",
    "Simulation",
    "SimulationEvent",
    "SimulationStep",
    "discover_gc_plugins",
    "load_gc_plugin",
    "plugin_options",
    "replay_scorer",
    "requests_without_gc",
    "run_gc",
    "simulate",
    "would_collect",
]
