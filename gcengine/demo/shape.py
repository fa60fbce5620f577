"""What a demo session is asked for: its length, its model and how full its window ends."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from gcengine.context_limits import context_limit_for_model
from gcengine.errors import ConfigError

WORKSPACE = "/home/dev/billing-service"
STARTED_AT = datetime(2026, 3, 2, 9, 12, tzinfo=UTC)


@dataclass(frozen=True)
class DemoShape:
    """What to generate: how many turns, for which model, how full its window ends up."""

    turns: int = 240
    model: str = "claude-sonnet-4"
    fill_percent: float = 85.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.turns < 1:
            raise ConfigError(f"a session needs at least one turn, not {self.turns}", "turns")
        if context_limit_for_model(self.model) is None:
            raise ConfigError(
                f"no known context window for {self.model!r}; pick a model the engine knows "
                "(gcengine.context_limits)",
                "model",
            )
        if not 0 < self.fill_percent <= 100:
            raise ConfigError(
                f"must be above 0 and at most 100, not {self.fill_percent}", "fill_percent"
            )

    @property
    def context_limit(self) -> int:
        limit = context_limit_for_model(self.model)
        assert limit is not None  # checked on construction
        return limit
