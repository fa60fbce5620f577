"""A worker's lease for ranking tests: it passes what the ranking says on to the lease it
holds, so the ranking is stored as a worker stores it, and lets a test look at each step
(``progress``, which a test overrides) as the page polling it would see it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jaato_web.dashboard.services.work import Lease


@dataclass
class RankingLease(Lease):
    """Passes every report on to ``held``; a ranking is never scored after it is done, so
    those reports fail the test."""

    held: Lease

    def progress(self, text: str, **fields: Any) -> None:
        self.held.progress(text, **fields)

    def done(self, **fields: Any) -> None:
        self.held.done(**fields)

    def done_scoring(self, **fields: Any) -> None:
        raise AssertionError("a ranking is not scored after it is done")

    def scored(self, **scores: Any) -> None:
        raise AssertionError("a ranking is not scored after it is done")

    def failed(self, error: str, **fields: Any) -> None:
        self.held.failed(error, **fields)
