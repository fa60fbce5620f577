"""Summarizers: what replaces forgotten turns.

* ``ExtractiveSummarizer`` (the default) needs no network and is deterministic. It keeps the
  sentences facts live in (numbers, dates, file paths, names, decisions) and every tool call
  with its key arguments and the gist of its result, within ``max_tokens``. JAATO's summarizer
  saw tool calls only as names, so a summary could not say what a tool found.
* ``DigestSummarizer`` (``gcengine.gc.digest``) is deterministic and offline too, and writes
  the state of the work in sections (task, files, errors and their status, decisions, open
  work, names) filled by priority within ``max_tokens``.
* ``LLMSummarizer`` asks any OpenAI-compatible chat endpoint, configured by environment
  (``JAATO_GC_LLM_BASE_URL``, ``JAATO_GC_LLM_MODEL``, ``JAATO_GC_LLM_API_KEY``,
  ``JAATO_GC_LLM_TIMEOUT``).
* ``provider`` asks the user's own provider through its official SDK, with the deterministic
  summarizer behind it (``gcengine.gc.provider_summaries``).
* Any ``str -> str`` callable (JAATO's interface) is wrapped by ``CallableSummarizer``.

A summarizer that fails raises ``SummarizerError``; the collection then fails and changes
nothing.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from gcengine.errors import SummarizerError
from gcengine.gc.digest import DigestSummarizer
from gcengine.messages import MessageKind, PartType, Turn
from gcengine.text import sentences
from gcengine.tokens import TokenCounter, compact_json

DEFAULT_MAX_SUMMARY_TOKENS = 600


@dataclass(frozen=True)
class SummaryRequest:
    turns: Sequence[Turn]
    previous_summary: str | None
    max_tokens: int
    counter: TokenCounter


class Summarizer(Protocol):
    @property
    def name(self) -> str: ...

    def summarize(self, request: SummaryRequest) -> str: ...


def transcript(turns: Sequence[Turn]) -> str:
    """The turns as JAATO's summarizers receive them, with tool arguments and results kept."""
    lines: list[str] = []
    for turn in turns:
        for message in turn.messages:
            role = message.role.value.upper()
            for part in message.parts:
                if part.type is PartType.TEXT and part.text:
                    lines.append(f"{role}: {part.text}")
                elif part.function_call is not None:
                    call = part.function_call
                    lines.append(f"{role}: [Called {call.name}({compact_json(call.args)})]")
                elif part.function_response is not None:
                    response = part.function_response
                    lines.append(
                        f"{role}: [Response from {response.name}: {compact_json(response.result)}]"
                    )
    return "\n".join(lines)


_FACT = re.compile(
    r"\d|[\w.-]+/[\w./-]+|\b[\w-]+\.(?:py|js|ts|json|md|txt|yaml|yml|toml|cfg|sql|go|rs|java)\b"
    r"|\b(?:decid|agree|chose|choose|must|will|should|fix|fail|error|because|todo|plan)\w*"
    r"|\b[A-Z][a-z]+(?:\s[A-Z][a-z]+)*\b",
    re.IGNORECASE,
)


def _fact_sentences(text: str) -> list[str]:
    return [s.strip() for s in sentences(text) if s.strip() and _FACT.search(s)]


def _gist(value: object, limit: int = 160) -> str:
    text = compact_json(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _key_arguments(args: Mapping[str, object], limit: int = 3) -> str:
    shown = [f"{k}={_gist(v, 60)}" for k, v in list(args.items())[:limit]]
    return ", ".join(shown) + (", …" if len(args) > limit else "")


class ExtractiveSummarizer:
    """Keeps what facts live in, deterministically, within the token cap."""

    name = "extractive"

    def summarize(self, request: SummaryRequest) -> str:
        lines: list[str] = []
        if request.previous_summary:
            lines.append(f"Earlier: {request.previous_summary}")
        for turn in request.turns:
            label = f"Turn {turn.number}" if turn.number is not None else "Summary"
            for message in turn.messages:
                if message.kind is MessageKind.SUMMARY:
                    lines.append(f"Earlier: {message.text}")
                    continue
                for call in message.function_calls:
                    lines.append(f"{label}: called {call.name}({_key_arguments(call.args)})")
                for response in message.function_responses:
                    status = "failed" if response.is_error else "returned"
                    lines.append(f"{label}: {response.name} {status} {_gist(response.result)}")
                speaker = "user" if message.role.value == "user" else "agent"
                for sentence in _fact_sentences(message.text):
                    lines.append(f"{label} ({speaker}): {sentence}")
        return _fit(lines, request.max_tokens, request.counter)


def _fit(lines: list[str], max_tokens: int, counter: TokenCounter) -> str:
    """Keep whole lines, oldest facts first, within the cap, the line saying how much was left
    out included; each line costs its tokens and one for the line break."""
    costs = [counter.count(line) + 1 for line in lines]
    if sum(costs) <= max_tokens:
        return "\n".join(lines) if lines else "(nothing of note)"
    # The note on what was left out, as long as it can be (every line omitted).
    note = f"({len(lines)} more facts omitted to stay within {max_tokens} tokens)"
    room = max_tokens - counter.count(note) - 1
    kept: list[str] = []
    for line, cost in zip(lines, costs, strict=True):
        if cost > room:
            break
        kept.append(line)
        room -= cost
    omitted = len(lines) - len(kept)
    kept.append(f"({omitted} more facts omitted to stay within {max_tokens} tokens)")
    return "\n".join(kept)


class CallableSummarizer:
    """JAATO's interface: a function from the transcript to the summary text."""

    def __init__(self, function: Callable[[str], str], name: str = "callable") -> None:
        self._function = function
        self.name = name

    def summarize(self, request: SummaryRequest) -> str:
        text = transcript(request.turns)
        if request.previous_summary:
            text = f"PREVIOUS SUMMARY: {request.previous_summary}\n{text}"
        try:
            summary = self._function(text)
        except Exception as error:  # a user-supplied function may fail in any way
            raise SummarizerError(f"Summarization failed: {error}") from error
        if not isinstance(summary, str) or not summary.strip():
            raise SummarizerError("Summarization failed: the summarizer returned no text")
        return summary


PROMPT = (
    "Summarize this part of an agent's conversation so the agent can continue without it. "
    "Keep every fact: numbers, names, dates, file paths, decisions, and each tool call with "
    "its key arguments and what it returned. Write at most {max_tokens} tokens. "
    "Return only the summary."
)


class LLMSummarizer:
    """An OpenAI-compatible ``/chat/completions`` endpoint."""

    name = "llm"

    def __init__(
        self, base_url: str, model: str, api_key: str | None = None, timeout: float = 60
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> LLMSummarizer:
        env = os.environ if environ is None else environ
        base_url, model = env.get("JAATO_GC_LLM_BASE_URL"), env.get("JAATO_GC_LLM_MODEL")
        if not base_url or not model:
            raise SummarizerError(
                "the llm summarizer needs JAATO_GC_LLM_BASE_URL and JAATO_GC_LLM_MODEL"
            )
        try:
            timeout = float(env.get("JAATO_GC_LLM_TIMEOUT", "60"))
        except ValueError:
            raise SummarizerError("JAATO_GC_LLM_TIMEOUT must be a number of seconds") from None
        return cls(base_url, model, env.get("JAATO_GC_LLM_API_KEY"), timeout)

    def summarize(self, request: SummaryRequest) -> str:
        text = transcript(request.turns)
        if request.previous_summary:
            text = f"PREVIOUS SUMMARY:\n{request.previous_summary}\n\nCONVERSATION:\n{text}"
        body = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": PROMPT.format(max_tokens=request.max_tokens)},
                {"role": "user", "content": text},
            ],
            "max_tokens": request.max_tokens,
            "temperature": 0,
        }
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        http_request = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=json.dumps(body).encode(),
            headers=headers,
            method="POST",
        )
        try:
            with urllib.request.urlopen(http_request, timeout=self.timeout) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as error:
            raise SummarizerError(
                f"Summarization failed: {self.base_url} answered HTTP {error.code}"
            ) from error
        except (urllib.error.URLError, TimeoutError, OSError) as error:
            raise SummarizerError(
                f"Summarization failed: cannot reach {self.base_url}: {error}"
            ) from error
        except json.JSONDecodeError as error:
            raise SummarizerError(
                "Summarization failed: the endpoint did not answer JSON"
            ) from error
        try:
            summary = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise SummarizerError(
                "Summarization failed: the answer has no choices[0].message.content"
            ) from None
        if not isinstance(summary, str) or not summary.strip():
            raise SummarizerError("Summarization failed: the endpoint returned an empty summary")
        return summary.strip()


def summarizer_from_options(options: Mapping[str, object]) -> Summarizer:
    """The summarizer a policy asks for: ``plugin_config["summarizer"]`` is ``extractive``
    (default), ``llm``, or (programmatically) a summarizer object or a callable; ``provider``
    is resolved before (``gcengine.gc.provider_summaries.summarizer_for``)."""
    chosen = options.get("summarizer", "extractive")
    if chosen == "extractive":
        return ExtractiveSummarizer()
    if chosen == "digest":
        return DigestSummarizer()
    if chosen == "llm":
        return LLMSummarizer.from_environment()
    if hasattr(chosen, "summarize") and hasattr(chosen, "name"):
        return chosen
    if callable(chosen):
        return CallableSummarizer(chosen)
    raise SummarizerError(f"unknown summarizer {chosen!r} (extractive, digest, llm or provider)")


def summary_text(body: str) -> str:
    """The message text of a summary, in JAATO's markers (so JAATO recognises it too)."""
    return f"[Context Summary - Previous conversation compressed]\n{body}\n[End Context Summary]"
