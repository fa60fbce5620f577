"""Context window sizes of well-known models, used when a file does not state its limit.

Matching is by the longest prefix of the lower-cased model name (a ``provider/`` prefix is
ignored), so dated snapshots such as ``claude-sonnet-4-5-20250929`` find their family. Figures
are the providers' published standard input windows; opt-in extended windows (1M-token betas)
are not assumed.
"""

from __future__ import annotations

from gcengine.budget import DEFAULT_CONTEXT_LIMIT

KNOWN_CONTEXT_LIMITS: dict[str, int] = {
    "claude": 200_000,
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "gpt-oss": 131_072,
    "gemini-1.5-pro": 2_097_152,
    "gemini-1.5-flash": 1_048_576,
    "gemini-2": 1_048_576,
    "gemini-3": 1_048_576,
    "mistral-large": 131_072,
    "llama-3.1": 131_072,
    "llama-3.3": 131_072,
    "deepseek": 128_000,
    "qwen3": 131_072,
}


def context_limit_for_model(model: str | None) -> int | None:
    """The known window for ``model``, or None when the table has no entry for it."""
    if not model:
        return None
    name = model.lower().rsplit("/", 1)[-1]
    matches = [prefix for prefix in KNOWN_CONTEXT_LIMITS if name.startswith(prefix)]
    if not matches:
        return None
    return KNOWN_CONTEXT_LIMITS[max(matches, key=len)]


__all__ = ["DEFAULT_CONTEXT_LIMIT", "KNOWN_CONTEXT_LIMITS", "context_limit_for_model"]
