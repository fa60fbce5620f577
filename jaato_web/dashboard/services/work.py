"""What a use case carried out in the background and the lease that wraps it agree on.

Reading an upload, a run, a replay and a ranking of policies are carried out by a worker under
a lease (``dashboard.background``): the worker claims the work, hands the use case a ``Lease``, and
ends the work failed if the use case raises. The use case reports through that lease alone, so
it never imports the background package that calls it.
"""

from __future__ import annotations

from typing import Any, Protocol

from jaato_web.dashboard.models import GCRun, IngestJob, PolicyRanking, Replay

Work = IngestJob | GCRun | Replay | PolicyRanking
WorkModel = type[IngestJob] | type[GCRun] | type[Replay] | type[PolicyRanking]
# The work that is done before its anchor retention is scored.
ScoredModel = type[GCRun] | type[Replay]

# What the worker was doing, for the messages that say it stopped or failed.
DOING: dict[WorkModel, str] = {
    IngestJob: "reading this file",
    GCRun: "collecting this session",
    Replay: "replaying this session",
    PolicyRanking: "ranking these policies",
}


class WorkLost(Exception):
    """The work was cancelled, or given to another worker after this one's lease lapsed."""


class Lease(Protocol):
    """The hold this worker has on the work a use case carries out. Every write through it
    renews the hold or ends the work, and raises ``WorkLost`` when the work is no longer this
    worker's (``failed`` and ``scored`` then change nothing instead)."""

    def progress(self, text: str, **fields: Any) -> None:
        """Say what the work is doing now (and store ``fields``: how far a ranking got)."""

    def done(self, **fields: Any) -> None:
        """End the work as done with ``fields``, inside the transaction that stores its
        result, so a lost claim rolls the result back."""

    def done_scoring(self, **fields: Any) -> None:
        """End a run or replay as done with ``fields``, the hold kept while its anchor
        retention is scored."""

    def scored(self, **scores: Any) -> None:
        """Store the anchor retention of a run or replay ended with ``done_scoring``, and
        let go of it."""

    def failed(self, error: str, **fields: Any) -> None:
        """End the work as failed with ``error`` (and ``fields``)."""


def internal_error(model: WorkModel, error: Exception) -> str:
    """What a page says of work the server failed at (the log keeps the traceback)."""
    what = "nothing was stored" if model is IngestJob else "nothing of it was kept"
    return (
        f"the server failed while {DOING[model]} ({type(error).__name__}); {what}. "
        "Try again; if it fails again, the server log says why."
    )
