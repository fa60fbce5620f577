"""Summaries a model writes, through the user's own provider, with the deterministic summarizer
behind it.

Two protocols, each through its official SDK: an OpenAI-compatible ``/chat/completions``
endpoint (OpenAI itself, and local servers such as Ollama, vLLM and llama.cpp) and Anthropic's
Messages API. The SDKs are an optional extra (``jaato-gc[summaries]``) and imported only when a
summary is asked for, so the engine imports without them.

Each call is bounded: in time (``timeout`` seconds, no retries) and in tokens (the summary's
cap is the call's ``max_tokens``). What it cost is recorded (``SummaryCall``: tokens in and out,
the model, dollars when the caller gives the model's price: the price table lives above the
collection machinery, in ``gcengine.quality.prompt_cache``). When it fails (a timeout, an HTTP
error, an answer that is not the protocol's, a refusal, no text), the fallback summarizer writes
the summary instead and the record says why, so a collection never fails for a provider.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, ValidationError

from gcengine.errors import SummarizerError
from gcengine.gc.summarizers import (
    PROMPT,
    ExtractiveSummarizer,
    Summarizer,
    SummaryRequest,
    summarizer_from_options,
    transcript,
)

ProviderProtocol = Literal["openai", "anthropic"]
PROTOCOLS: tuple[ProviderProtocol, ...] = ("openai", "anthropic")
DEFAULT_TIMEOUT_SECONDS = 60.0


class ProviderSettings(BaseModel):
    """Where summaries are written: the protocol, the endpoint (None: the SDK's default, the
    provider's own API), the model and the key (never shown: ``SecretStr``)."""

    protocol: ProviderProtocol
    model: str = Field(min_length=1, max_length=200)
    base_url: str | None = Field(default=None, max_length=500)
    api_key: SecretStr | None = None
    timeout: float = Field(default=DEFAULT_TIMEOUT_SECONDS, gt=0, le=600)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> ProviderSettings:
        """``JAATO_GC_PROVIDER`` (openai or anthropic), ``JAATO_GC_PROVIDER_MODEL``, and
        optionally ``JAATO_GC_PROVIDER_BASE_URL``, ``JAATO_GC_PROVIDER_API_KEY`` and
        ``JAATO_GC_PROVIDER_TIMEOUT`` (seconds)."""
        env = os.environ if environ is None else environ
        protocol, model = env.get("JAATO_GC_PROVIDER"), env.get("JAATO_GC_PROVIDER_MODEL")
        if not protocol or not model:
            raise SummarizerError(
                "the provider summarizer needs JAATO_GC_PROVIDER (openai or anthropic) and "
                "JAATO_GC_PROVIDER_MODEL"
            )
        try:
            return cls(
                protocol=protocol,
                model=model,
                base_url=env.get("JAATO_GC_PROVIDER_BASE_URL") or None,
                api_key=env.get("JAATO_GC_PROVIDER_API_KEY") or None,
                timeout=env.get("JAATO_GC_PROVIDER_TIMEOUT") or DEFAULT_TIMEOUT_SECONDS,
            )
        except ValidationError as error:
            problem = error.errors()[0]
            field = str(problem["loc"][0]) if problem["loc"] else "settings"
            raise SummarizerError(
                f"the provider summarizer's {field} is invalid: {problem['msg']}"
            ) from None


class SummaryCall(BaseModel):
    """One summary asked of the provider: what it cost, and who wrote the summary in the end."""

    protocol: ProviderProtocol | None = Field(default=None, description="None: nothing called")
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    dollars: float | None = Field(default=None, description="None when the model is unpriced")
    seconds: float = 0.0
    written_by: str = Field(description="the model, or the fallback summarizer's name")
    fallback_reason: str | None = Field(
        default=None, description="why the fallback wrote it (None: the model did)"
    )


class _Failed(Exception):
    """The provider gave no usable summary; the message says why, for the run."""

    def __init__(self, reason: str, usage: tuple[int | None, int | None] = (None, None)) -> None:
        super().__init__(reason)
        self.usage = usage


class ProviderSummarizer:
    """Asks the provider for each summary; the fallback writes it when the provider fails.

    ``last_call`` is the record of the latest summary, read by the collection that asked for
    it (``gcengine.gc.summarizing``); ``name`` is who wrote that summary.
    """

    def __init__(
        self,
        settings: ProviderSettings | None,
        fallback: Summarizer,
        price_per_mtok: tuple[float, float] | None = None,
        *,
        unavailable: str = "",
    ) -> None:
        """``price_per_mtok``: the model's dollars per million input and output tokens.
        Without ``settings`` nothing is called: the fallback writes every summary, and the
        record says why (``unavailable``: "model-written summaries are off", say)."""
        self.settings = settings
        self.fallback = fallback
        self.price_per_mtok = price_per_mtok
        self.unavailable = unavailable or "no provider is set"
        self.last_call: SummaryCall | None = None

    @property
    def name(self) -> str:
        if self.last_call is not None:
            return self.last_call.written_by
        if self.settings is None:
            return self.fallback.name
        return f"{self.settings.protocol}:{self.settings.model}"

    def summarize(self, request: SummaryRequest) -> str:
        started = time.monotonic()
        settings = self.settings
        if settings is None:
            self.last_call = SummaryCall(
                written_by=self.fallback.name, fallback_reason=self.unavailable
            )
            return self.fallback.summarize(request)
        try:
            text, (tokens_in, tokens_out) = self._ask(settings, request)
            reason = None
        except _Failed as failure:
            text, (tokens_in, tokens_out) = self.fallback.summarize(request), failure.usage
            reason = str(failure)
        dollars = None
        if self.price_per_mtok is not None and tokens_in is not None:
            per_in, per_out = self.price_per_mtok
            dollars = (tokens_in * per_in + (tokens_out or 0) * per_out) / 1_000_000
        self.last_call = SummaryCall(
            protocol=settings.protocol,
            model=settings.model,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            dollars=dollars,
            seconds=round(time.monotonic() - started, 3),
            written_by=self.fallback.name if reason else f"{settings.protocol}:{settings.model}",
            fallback_reason=reason,
        )
        return text

    @staticmethod
    def _ask(
        settings: ProviderSettings, request: SummaryRequest
    ) -> tuple[str, tuple[int | None, int | None]]:
        text = transcript(request.turns)
        if request.previous_summary:
            text = f"PREVIOUS SUMMARY:\n{request.previous_summary}\n\nCONVERSATION:\n{text}"
        system = PROMPT.format(max_tokens=request.max_tokens)
        if settings.protocol == "anthropic":
            return _ask_anthropic(settings, system, text, request.max_tokens)
        return _ask_openai(settings, system, text, request.max_tokens)


def _sdk(name: str) -> Any:
    try:
        return __import__(name)
    except ImportError:
        raise _Failed(
            f"the {name} package is not installed (pip install 'jaato-gc[summaries]')"
        ) from None


def _ask_openai(
    settings: ProviderSettings, system: str, text: str, max_tokens: int
) -> tuple[str, tuple[int | None, int | None]]:
    openai = _sdk("openai")
    client = openai.OpenAI(
        base_url=settings.base_url,
        # Local servers take any key; the SDK insists on one.
        api_key=settings.api_key.get_secret_value() if settings.api_key else "none",
        timeout=settings.timeout,
        max_retries=0,
    )
    with _sdk_failures(openai, openai.OpenAIError, "an OpenAI chat completion", settings):
        answer = client.chat.completions.create(
            model=settings.model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": text}],
            max_tokens=max_tokens,
            temperature=0,
        )
    counts = _usage_counts(answer, "prompt_tokens", "completion_tokens")
    choices = getattr(answer, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise _Failed("the answer is not an OpenAI chat completion (no choices)", counts)
    message = getattr(choices[0], "message", None)
    refusal = getattr(message, "refusal", None)
    if refusal or getattr(choices[0], "finish_reason", None) == "content_filter":
        raise _Failed(f"the model refused: {refusal or 'content filter'}", counts)
    content = getattr(message, "content", None)
    if not isinstance(content, str) or not content.strip():
        raise _Failed("the model returned an empty summary", counts)
    return content.strip(), counts


def _ask_anthropic(
    settings: ProviderSettings, system: str, text: str, max_tokens: int
) -> tuple[str, tuple[int | None, int | None]]:
    anthropic = _sdk("anthropic")
    client = anthropic.Anthropic(
        base_url=settings.base_url,
        api_key=settings.api_key.get_secret_value() if settings.api_key else "none",
        timeout=settings.timeout,
        max_retries=0,
    )
    with _sdk_failures(anthropic, anthropic.AnthropicError, "an Anthropic message", settings):
        answer = client.messages.create(
            model=settings.model,
            system=system,
            messages=[{"role": "user", "content": text}],
            max_tokens=max_tokens,
            temperature=0,
        )
    counts = _usage_counts(answer, "input_tokens", "output_tokens")
    blocks = getattr(answer, "content", None)
    if not isinstance(blocks, list):
        raise _Failed("the answer is not an Anthropic message (no content)", counts)
    if getattr(answer, "stop_reason", None) == "refusal":
        raise _Failed("the model refused", counts)
    content = "".join(
        getattr(block, "text", "") or "" for block in blocks if getattr(block, "type", "") == "text"
    )
    if not content.strip():
        raise _Failed("the model returned an empty summary", counts)
    return content.strip(), counts


def summarizer_for(options: Mapping[str, object]) -> Summarizer:
    """The summarizer a policy asks for: ``provider`` (set by the environment, the extractive
    summarizer behind it), or any other of ``summarizer_from_options``."""
    if options.get("summarizer") == "provider":
        return ProviderSummarizer(ProviderSettings.from_environment(), ExtractiveSummarizer())
    return summarizer_from_options(options)


@contextmanager
def _sdk_failures(
    sdk: Any, base: type[Exception], answer: str, settings: ProviderSettings
) -> Iterator[None]:
    """A call through either official SDK, its failures said alike: both name their timeout,
    status and connection errors the same."""
    try:
        yield
    except sdk.APITimeoutError:
        raise _Failed(f"no answer within {settings.timeout:g} s") from None
    except sdk.APIStatusError as error:
        raise _Failed(f"the endpoint answered HTTP {error.status_code}") from None
    except sdk.APIConnectionError as error:
        raise _Failed(f"cannot reach the endpoint: {error}") from None
    except (base, ValueError) as error:
        raise _Failed(f"the answer is not {answer}: {error}") from None


def _usage_counts(answer: Any, given: str, written: str) -> tuple[int | None, int | None]:
    """Tokens in and out as the answer's usage names them, None where it has none."""
    usage = getattr(answer, "usage", None)
    if usage is None:
        return None, None
    return getattr(usage, given, None), getattr(usage, written, None)
