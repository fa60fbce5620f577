"""Context windows and output limits of well-known models, used when a file or a caller does
not state them.

Matching is by the longest prefix of the lower-cased model name (a ``provider/`` prefix is
ignored), so dated snapshots such as ``claude-sonnet-4-5-20250929`` find their family. Figures
are the providers' published standard limits; opt-in extended windows (1M-token betas) are not
assumed. ``max_completion_tokens`` is the most a model may write in one response; None where the
provider publishes no fixed figure (open-weight models, whose limit is the host's). Each row
names the page its figures come from (read in November 2026):

* Anthropic: https://platform.claude.com/docs/en/models/overview and each model's page there;
* OpenAI: https://platform.openai.com/docs/models (one page per model);
* Google: https://ai.google.dev/gemini-api/docs/models;
* Mistral: https://docs.mistral.ai/getting-started/models/;
* Meta Llama: https://www.llama.com/docs/model-cards-and-prompt-formats/;
* DeepSeek: https://api-docs.deepseek.com/quick_start/pricing;
* Qwen: https://qwenlm.github.io/blog/qwen3/.
"""

from __future__ import annotations

from typing import NamedTuple

from gcengine.budget import DEFAULT_CONTEXT_LIMIT

_ANTHROPIC = "https://platform.claude.com/docs/en/models/overview"
_OPENAI = "https://platform.openai.com/docs/models"
_GOOGLE = "https://ai.google.dev/gemini-api/docs/models"
_MISTRAL = "https://docs.mistral.ai/getting-started/models/"
_META = "https://www.llama.com/docs/model-cards-and-prompt-formats/"
_DEEPSEEK = "https://api-docs.deepseek.com/quick_start/pricing"
_QWEN = "https://qwenlm.github.io/blog/qwen3/"


class ModelLimits(NamedTuple):
    """What a model accepts and writes, and the page the figures come from."""

    context_length: int
    max_completion_tokens: int | None
    source: str


KNOWN_MODEL_LIMITS: dict[str, ModelLimits] = {
    # Anthropic. A bare "claude" (or an unknown Claude) gets the family's standard window only.
    "claude": ModelLimits(200_000, None, _ANTHROPIC),
    "claude-3-": ModelLimits(200_000, 4_096, _ANTHROPIC),
    "claude-3-5": ModelLimits(200_000, 8_192, _ANTHROPIC),
    "claude-3-7-sonnet": ModelLimits(200_000, 64_000, _ANTHROPIC),
    "claude-sonnet-4": ModelLimits(200_000, 64_000, _ANTHROPIC),
    "claude-opus-4": ModelLimits(200_000, 32_000, _ANTHROPIC),
    "claude-opus-4-5": ModelLimits(200_000, 64_000, _ANTHROPIC),
    "claude-haiku-4-5": ModelLimits(200_000, 64_000, _ANTHROPIC),
    "claude-opus-4-6": ModelLimits(1_000_000, 128_000, _ANTHROPIC),
    "claude-sonnet-4-6": ModelLimits(1_000_000, 128_000, _ANTHROPIC),
    "claude-opus-5": ModelLimits(1_000_000, 128_000, _ANTHROPIC),
    "claude-sonnet-5": ModelLimits(1_000_000, 128_000, _ANTHROPIC),
    "claude-fable-5": ModelLimits(1_000_000, 128_000, _ANTHROPIC),
    # OpenAI.
    "gpt-5": ModelLimits(400_000, 128_000, _OPENAI),
    "gpt-5.4": ModelLimits(1_050_000, 128_000, _OPENAI),
    "gpt-4.1": ModelLimits(1_047_576, 32_768, _OPENAI),
    "gpt-4o": ModelLimits(128_000, 16_384, _OPENAI),
    "gpt-4-turbo": ModelLimits(128_000, 4_096, _OPENAI),
    "gpt-4": ModelLimits(8_192, 8_192, _OPENAI),
    "gpt-3.5-turbo": ModelLimits(16_385, 4_096, _OPENAI),
    "o1": ModelLimits(200_000, 100_000, _OPENAI),
    "o3": ModelLimits(200_000, 100_000, _OPENAI),
    "o4-mini": ModelLimits(200_000, 100_000, _OPENAI),
    "gpt-oss": ModelLimits(131_072, 131_072, _OPENAI),
    # Google.
    "gemini-1.5-pro": ModelLimits(2_097_152, 8_192, _GOOGLE),
    "gemini-1.5-flash": ModelLimits(1_048_576, 8_192, _GOOGLE),
    "gemini-2": ModelLimits(1_048_576, 8_192, _GOOGLE),
    "gemini-2.5": ModelLimits(1_048_576, 65_536, _GOOGLE),
    "gemini-3": ModelLimits(1_048_576, 65_536, _GOOGLE),
    # Open-weight and other hosted models.
    "mistral-large": ModelLimits(131_072, None, _MISTRAL),
    "llama-3.1": ModelLimits(131_072, None, _META),
    "llama-3.3": ModelLimits(131_072, None, _META),
    "deepseek": ModelLimits(128_000, 8_192, _DEEPSEEK),
    "deepseek-reasoner": ModelLimits(128_000, 65_536, _DEEPSEEK),
    "qwen3": ModelLimits(131_072, None, _QWEN),
}

KNOWN_CONTEXT_LIMITS: dict[str, int] = {
    prefix: limits.context_length for prefix, limits in KNOWN_MODEL_LIMITS.items()
}


def model_limits(model: str | None) -> ModelLimits | None:
    """The table's row for ``model`` (longest matching prefix), or None when it has none."""
    if not model:
        return None
    name = model.lower().rsplit("/", 1)[-1]
    matches = [prefix for prefix in KNOWN_MODEL_LIMITS if name.startswith(prefix)]
    if not matches:
        return None
    return KNOWN_MODEL_LIMITS[max(matches, key=len)]


def context_limit_for_model(model: str | None) -> int | None:
    """The known window for ``model``, or None when the table has no entry for it."""
    limits = model_limits(model)
    return limits.context_length if limits is not None else None


__all__ = [
    "DEFAULT_CONTEXT_LIMIT",
    "KNOWN_CONTEXT_LIMITS",
    "KNOWN_MODEL_LIMITS",
    "ModelLimits",
    "context_limit_for_model",
    "model_limits",
]
