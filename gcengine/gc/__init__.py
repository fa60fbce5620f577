"""Collection strategies, their contract, and running them on sessions."""

from gcengine.errors import PluginError, SummarizerError
from gcengine.gc.registry import ENTRY_POINT_GROUP, discover_gc_plugins, load_gc_plugin
from gcengine.gc.run import GCOutcome, plugin_options, run_gc, would_collect
from gcengine.gc.simulate import (
    Simulation,
    SimulationEvent,
    SimulationStep,
    requests_without_gc,
    simulate,
)
from gcengine.gc.strategies import (
    BudgetStrategy,
    HybridStrategy,
    SummarizeStrategy,
    TruncateStrategy,
)
from gcengine.gc.summarizers import (
    ExtractiveSummarizer,
    LLMSummarizer,
    Summarizer,
    SummaryRequest,
)
from gcengine.gc.types import (
    GCPlugin,
    GCRemovalItem,
    GCResult,
    GCTriggerReason,
    RemovalReason,
    RemovalVerdict,
    context_usage,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "BudgetStrategy",
    "ExtractiveSummarizer",
    "GCOutcome",
    "GCPlugin",
    "GCRemovalItem",
    "GCResult",
    "GCTriggerReason",
    "HybridStrategy",
    "LLMSummarizer",
    "PluginError",
    "RemovalReason",
    "RemovalVerdict",
    "Simulation",
    "SimulationEvent",
    "SimulationStep",
    "SummarizeStrategy",
    "Summarizer",
    "SummarizerError",
    "SummaryRequest",
    "TruncateStrategy",
    "context_usage",
    "discover_gc_plugins",
    "load_gc_plugin",
    "plugin_options",
    "requests_without_gc",
    "run_gc",
    "simulate",
    "would_collect",
]
