"""The collection machinery every strategy runs on, below the strategies themselves.

A collection laid out in units (``plan``), the decision a strategy makes and its result
(``types``), the base strategy with its notices (``strategy``), summaries (``summarizers``,
``summarizing``), and the stash a reachability run's result carries (``stash``, ``segments``).
The strategies are ``gcengine.strategies``; running them is ``gcengine.running``.
"""

from gcengine.errors import SummarizerError
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
    "ExtractiveSummarizer",
    "GCPlugin",
    "GCRemovalItem",
    "GCResult",
    "GCTriggerReason",
    "LLMSummarizer",
    "RemovalReason",
    "RemovalVerdict",
    "Summarizer",
    "SummarizerError",
    "SummaryRequest",
    "context_usage",
]
