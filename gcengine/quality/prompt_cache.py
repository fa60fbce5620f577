"""What a replay costs once the provider's prompt cache is counted.

Providers cache a prompt's prefix: the next request that starts with the same tokens reads
them from the cache at a tenth of the input price (or less), and what follows is written
(Anthropic charges a quarter more for writing; OpenAI nothing extra). A collection that
rewrites the middle of the history breaks the prefix there, so everything after it is written
again: a policy that sends fewer tokens can cost more ("51 % smaller prompt, ~90 % more cost",
DeepSeek-Reasonix #238).

The model, per request of a replay (one request before each model message that follows a
non-model message):

* the prefix it shares with the request before is read from the cache, if that request was
  cached and the prefix reaches the provider's minimum cacheable length;
* the rest is written to the cache, if the prompt reaches that minimum;
* a prompt shorter than the minimum is neither read nor written: all of it is uncached.

It assumes every request comes within the cache's lifetime of the one before (five minutes by
default on Anthropic, up to an hour on OpenAI), that the prompt is laid out system, tools,
other entries, then the conversation, and it counts input only: output tokens are the same
whatever the policy, and an LLM summarizer's own calls are not priced.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, computed_field

from gcengine.errors import PriceTableError, format_json_path


class PromptRequest(BaseModel):
    """One request of a replay: the prompt's tokens, and how many of them start it exactly as
    they started the request before (its cacheable prefix)."""

    turn_index: int | None
    tokens: int = Field(ge=0)
    shared_prefix_tokens: int = Field(ge=0)


class PromptCacheUsage(BaseModel):
    """Tokens of a replay's requests by how the provider bills them."""

    requests: int = 0
    tokens_sent: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    uncached_tokens: int = 0


class ModelPrice(BaseModel):
    """Prices of one model family in dollars per million input tokens, for models whose name
    starts with ``model``; with the page they were read from and when."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, max_length=200)
    label: str = Field(default="", max_length=200)
    input_per_mtok: float = Field(ge=0, allow_inf_nan=False)
    cache_write_per_mtok: float = Field(ge=0, allow_inf_nan=False)
    cache_read_per_mtok: float = Field(ge=0, allow_inf_nan=False)
    min_cacheable_tokens: int = Field(default=0, ge=0)
    output_per_mtok: float | None = Field(
        default=None,
        ge=0,
        allow_inf_nan=False,
        description="dollars per million output tokens; None where the table gives none (a "
        "replay's input cost needs none)",
    )
    source: str = Field(default="", max_length=500)
    as_of: str = Field(default="", max_length=40)


class CacheCost(BaseModel):
    """A replay's input cost under one price: with the cache, and what the same requests
    would cost with every token at the input price."""

    usage: PromptCacheUsage
    price: ModelPrice

    @computed_field  # type: ignore[prop-decorator]
    @property
    def dollars(self) -> float:
        usage, price = self.usage, self.price
        return (
            usage.cache_read_tokens * price.cache_read_per_mtok
            + usage.cache_write_tokens * price.cache_write_per_mtok
            + usage.uncached_tokens * price.input_per_mtok
        ) / 1_000_000

    @computed_field  # type: ignore[prop-decorator]
    @property
    def dollars_without_cache(self) -> float:
        return self.usage.tokens_sent * self.price.input_per_mtok / 1_000_000


def prompt_cache_usage(
    requests: Sequence[PromptRequest], min_cacheable_tokens: int = 0
) -> PromptCacheUsage:
    """The requests' tokens split into cache reads, cache writes and uncached tokens."""
    usage = PromptCacheUsage(requests=len(requests))
    cached = 0  # the prefix the provider holds from the request before
    for request in requests:
        usage.tokens_sent += request.tokens
        if request.tokens < max(min_cacheable_tokens, 1):
            usage.uncached_tokens += request.tokens
            cached = 0
            continue
        read = min(request.shared_prefix_tokens, cached, request.tokens)
        if read < min_cacheable_tokens:
            read = 0
        usage.cache_read_tokens += read
        usage.cache_write_tokens += request.tokens - read
        cached = request.tokens
    return usage


def cache_cost(requests: Sequence[PromptRequest], price: ModelPrice) -> CacheCost:
    return CacheCost(usage=prompt_cache_usage(requests, price.min_cacheable_tokens), price=price)


_ANTHROPIC = "https://platform.claude.com/docs/en/about-claude/pricing"
_ANTHROPIC_MINIMUM = "https://platform.claude.com/docs/en/build-with-claude/prompt-caching"
_OPENAI = "https://developers.openai.com/api/docs/pricing"

DEFAULT_PRICES: tuple[ModelPrice, ...] = (
    ModelPrice(
        model="claude-sonnet-4",
        label="Claude Sonnet 4, 4.5 and 4.6",
        input_per_mtok=3.0,
        cache_write_per_mtok=3.75,
        cache_read_per_mtok=0.30,
        min_cacheable_tokens=1024,
        output_per_mtok=15.0,
        source=f"{_ANTHROPIC} (5-minute cache writes); minimum: {_ANTHROPIC_MINIMUM}",
        as_of="2026-11-25",
    ),
    ModelPrice(
        model="claude-sonnet-5",
        label="Claude Sonnet 5",
        input_per_mtok=2.0,
        cache_write_per_mtok=2.50,
        cache_read_per_mtok=0.20,
        min_cacheable_tokens=1024,
        source=f"{_ANTHROPIC} (5-minute cache writes); minimum: {_ANTHROPIC_MINIMUM}",
        as_of="2026-11-25",
    ),
    ModelPrice(
        model="claude-opus-4",
        label="Claude Opus 4.5 to 4.8",
        input_per_mtok=5.0,
        cache_write_per_mtok=6.25,
        cache_read_per_mtok=0.50,
        min_cacheable_tokens=4096,
        output_per_mtok=25.0,
        source=f"{_ANTHROPIC} (5-minute cache writes; Opus 4 and 4.1 cost three times as "
        f"much); minimum: {_ANTHROPIC_MINIMUM}",
        as_of="2026-11-25",
    ),
    ModelPrice(
        model="claude-haiku-4",
        label="Claude Haiku 4.5",
        input_per_mtok=1.0,
        cache_write_per_mtok=1.25,
        cache_read_per_mtok=0.10,
        min_cacheable_tokens=4096,
        output_per_mtok=5.0,
        source=f"{_ANTHROPIC} (5-minute cache writes); minimum: {_ANTHROPIC_MINIMUM}",
        as_of="2026-11-25",
    ),
    ModelPrice(
        model="gpt-5",
        label="GPT-5 (writes cost the input price)",
        input_per_mtok=1.25,
        cache_write_per_mtok=1.25,
        cache_read_per_mtok=0.125,
        min_cacheable_tokens=1024,
        output_per_mtok=10.0,
        source=_OPENAI,
        as_of="2026-11-25",
    ),
    ModelPrice(
        model="gpt-4.1",
        label="GPT-4.1 (writes cost the input price)",
        input_per_mtok=2.0,
        cache_write_per_mtok=2.0,
        cache_read_per_mtok=0.50,
        min_cacheable_tokens=1024,
        output_per_mtok=8.0,
        source=_OPENAI,
        as_of="2026-11-25",
    ),
)


def price_for_model(model: str | None, table: Sequence[ModelPrice]) -> ModelPrice | None:
    """The entry whose ``model`` is the longest start of the model's name (case ignored)."""
    if not model:
        return None
    name = model.lower()
    matching = [p for p in table if name.startswith(p.model.lower())]
    return max(matching, key=lambda p: len(p.model), default=None)


def load_price_table(data: Any) -> list[ModelPrice]:
    """A price table from JSON (a list of entries), strict: an error names the entry and the
    field (``prices[2].input_per_mtok``), and two entries for one model are refused."""
    if not isinstance(data, list):
        raise PriceTableError("a price table is a list of model entries", "prices")
    table: list[ModelPrice] = []
    seen: set[str] = set()
    for position, entry in enumerate(data):
        try:
            price = ModelPrice.model_validate(entry, strict=False)
        except ValidationError as error:
            problem = error.errors()[0]
            key = format_json_path(("prices", position, *problem["loc"]))
            raise PriceTableError(problem["msg"], key) from None
        name = price.model.lower()
        if name in seen:
            key = format_json_path(("prices", position, "model"))
            raise PriceTableError(f"{price.model!r} is priced twice", key)
        seen.add(name)
        table.append(price)
    return table
