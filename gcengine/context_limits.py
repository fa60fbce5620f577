"""Context windows and output limits of well-known models, used when a file or a caller does
not state them.

Matching is by the longest prefix of the lower-cased model name (a ``provider/`` prefix is
ignored), so dated snapshots such as ``claude-sonnet-4-5-20250929`` find their family. Figures
are the providers' published standard limits; opt-in extended windows are not assumed: a Claude
4.x model runs in 200,000 tokens unless its id asks for the 1M context (Claude Code's ``[1m]``
suffix, as in ``claude-opus-4-6[1m]``; the API's ``context-1m-2025-08-07`` beta) or a file
shows a context above 200,000 (``choose_window``).
``max_completion_tokens`` is the most a model may write in one response; None where the
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

from collections.abc import Sequence
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
    # 4.6: 1M only with the 1M-context beta or a ``[1m]`` id (Claude Code sessions of these
    # models auto-compact at about 167,000 tokens: they ran in 200,000).
    "claude-opus-4-6": ModelLimits(200_000, 128_000, _ANTHROPIC),
    "claude-sonnet-4-6": ModelLimits(200_000, 128_000, _ANTHROPIC),
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


EXTENDED_CLAUDE_WINDOW = 1_000_000
"""The Claude 1M context, opted into per request (the ``context-1m`` beta)."""
_EXTENDED_SUFFIX = "[1m]"


def model_limits(model: str | None) -> ModelLimits | None:
    """The table's row for ``model`` (longest matching prefix), or None when it has none; a
    Claude id ending in ``[1m]`` (how Claude Code names the 1M context) gets that window."""
    if not model:
        return None
    name = model.lower().rsplit("/", 1)[-1]
    extended = name.endswith(_EXTENDED_SUFFIX)
    name = name.removesuffix(_EXTENDED_SUFFIX)
    matches = [prefix for prefix in KNOWN_MODEL_LIMITS if name.startswith(prefix)]
    if not matches:
        return None
    row = KNOWN_MODEL_LIMITS[max(matches, key=len)]
    if extended and name.startswith("claude"):
        return row._replace(context_length=max(row.context_length, EXTENDED_CLAUDE_WINDOW))
    return row


def context_limit_for_model(model: str | None) -> int | None:
    """The known window for ``model``, or None when the table has no entry for it."""
    limits = model_limits(model)
    return limits.context_length if limits is not None else None


# Claude Code's auto-compaction rule, read from its source (``services/compact/autoCompact.ts``,
# as quoted in https://zhanghandong.github.io/harness-engineering-from-cc-to-ai-coding/en/part3/ch09.html):
# it compacts once the context reaches the window less min(max output, 20,000) reserved for
# the summary, less a 13,000-token buffer; 167,000 tokens (83.5 %) of a 200,000 window, which
# ``/context`` shows as a ~33k "autocompact buffer". Anthropic's own docs do not state it, and
# the check runs after a call, so the recorded ``preTokens`` can pass the threshold by a few
# thousand: the rule only says which standard window a compaction fits, never a figure.
CLAUDE_CODE_COMPACT_SOURCE = (
    "https://zhanghandong.github.io/harness-engineering-from-cc-to-ai-coding/en/part3/ch09.html"
)
_SUMMARY_RESERVE = 20_000
_AUTOCOMPACT_BUFFER = 13_000
_COMPACT_SLACK = 0.9
"""An auto-compaction fits a window when its figure is at most the window and at least this
share of the window's threshold (a user's ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` moves it)."""
_CLAUDE_WINDOWS = (200_000, EXTENDED_CLAUDE_WINDOW)


def auto_compact_threshold(window: int, max_output: int | None) -> int:
    """Where Claude Code auto-compacts a context of ``window`` tokens (see above)."""
    reserve = min(max_output or _SUMMARY_RESERVE, _SUMMARY_RESERVE)
    return window - reserve - _AUTOCOMPACT_BUFFER


class WindowChoice(NamedTuple):
    """A session's window, where it came from (a ``ContextLimitOrigin`` value) and, in words,
    why."""

    limit: int
    origin: str
    source: str


def choose_window(
    model: str | None,
    *,
    file_limit: int | None = None,
    peak_prompt: int | None = None,
    auto_compactions: Sequence[int] = (),
) -> WindowChoice:
    """The window a session ran in: the file's, else the model table's, checked against what
    the file shows (``peak_prompt``, the largest prompt a call recorded, and the figures of
    the agent's own auto-compactions).

    A Claude context above the table's window can only be the 1M context; an auto-compaction
    picks the standard Claude window whose Claude Code threshold it fits, the table's when it
    fits that one. A file's own figure is never second-guessed.
    """
    if file_limit is not None:
        return WindowChoice(file_limit, "file", "the file records it")
    row = model_limits(model)
    claude = "claude" in (model or "").lower()
    if row is None and not (claude and auto_compactions):
        return WindowChoice(
            DEFAULT_CONTEXT_LIMIT, "default", f"no window known for {model or 'the model'}"
        )
    table = (
        f"model table: {model} runs in {row.context_length:,} tokens ({row.source})"
        if row is not None
        else ""
    )
    if (
        claude
        and peak_prompt is not None
        and row is not None
        and row.context_length < peak_prompt <= EXTENDED_CLAUDE_WINDOW
    ):
        return WindowChoice(
            EXTENDED_CLAUDE_WINDOW,
            "inferred",
            f"a call recorded a {peak_prompt:,}-token prompt, more than the "
            f"{row.context_length:,} standard window: the 1M context",
        )
    if not (claude and auto_compactions):
        assert row is not None
        return WindowChoice(row.context_length, "model", table)
    largest = max(auto_compactions)
    max_output = row.max_completion_tokens if row is not None else None

    def fits(window: int) -> bool:
        threshold = auto_compact_threshold(window, max_output)
        return threshold * _COMPACT_SLACK <= largest <= window

    rule = (
        f"the agent auto-compacted at {largest:,} tokens; Claude Code compacts at the window "
        f"less {_SUMMARY_RESERVE + _AUTOCOMPACT_BUFFER:,} (summary reserve and buffer, "
        f"{CLAUDE_CODE_COMPACT_SOURCE})"
    )
    if row is not None and fits(row.context_length):
        return WindowChoice(row.context_length, "model", f"{table}; {rule}, which fits it")
    fitting = [window for window in _CLAUDE_WINDOWS if fits(window)]
    if fitting:
        return WindowChoice(fitting[0], "inferred", f"{rule}: a {fitting[0]:,}-token window")
    if row is not None:
        return WindowChoice(
            row.context_length, "model", f"{table}; {rule}, which fits no standard window"
        )
    return WindowChoice(DEFAULT_CONTEXT_LIMIT, "default", f"{rule}, which fits no standard window")


__all__ = [
    "CLAUDE_CODE_COMPACT_SOURCE",
    "DEFAULT_CONTEXT_LIMIT",
    "EXTENDED_CLAUDE_WINDOW",
    "KNOWN_CONTEXT_LIMITS",
    "KNOWN_MODEL_LIMITS",
    "ModelLimits",
    "WindowChoice",
    "auto_compact_threshold",
    "choose_window",
    "context_limit_for_model",
    "model_limits",
]
