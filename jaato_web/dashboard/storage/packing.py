"""How stored values are packed: Zstandard, one compressor and decompressor per thread, large
data a slice at a time; and an uploaded file as its session keeps it."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

import zstandard
from pydantic_core import from_json

from jaato_web.dashboard.blobs import StoredBlob

# Stored turns, documents and originals are compressed with Zstandard at its fastest level.
# The history's text is most of a session, and every run and replay reads it back: zstd keeps
# a third of it at any level, like zlib's fastest level did, but packs it twice as fast and
# reads it back nearly three times as fast (a 10,000-turn session's 39 MB of turns: 0.06 s
# instead of 0.14 s). Its default level (3) kept 0.4 % less of the turns and 9 % less of an
# original (12.5 MB of a 45.5 MB upload, 13.7 MB at 1) but took a quarter longer to pack
# (0.18 s and 0.155 s instead of 0.14 s and 0.12 s), which every upload waits for.
PACK_LEVEL = 1


class _Codecs(threading.local):
    """A compressor and a decompressor per thread: a zstd context is not safe to share
    between threads, and making one per value cost as much as the packing itself."""

    def __init__(self) -> None:
        self.compressor = zstandard.ZstdCompressor(level=PACK_LEVEL)
        self.decompressor = zstandard.ZstdDecompressor()


_codecs = _Codecs()


def packed(value: Any) -> bytes:
    """A JSON value as stored: compact JSON, compressed."""
    return compress(_json_bytes(value))


# Large data is compressed into chunks of this size (compressing the whole at once reserves an
# output as large as the input), read in pieces eight times as large: each piece is a hand-over
# of the GIL, and beside a thread busy in Python each hand-over waits.
_COMPRESS_SLICE = 1 << 20
_COMPRESS_PIECE = 8 * _COMPRESS_SLICE


def compress(*parts: bytes) -> bytes:
    """The parts, joined, compressed, with the size in the frame (so reading it back reserves
    exactly the room it needs); never joined uncompressed."""
    compressor = _codecs.compressor
    size = sum(map(len, parts))
    if len(parts) == 1 and size <= _COMPRESS_SLICE:
        # zstd's result keeps the room of the worst case (more than the input) after it is
        # written; a copy holds only what was written, so a 10,000-turn session's packed turns
        # take 16 MB while it is stored, not 40.
        return bytes(memoryview(compressor.compress(parts[0])))
    # A chunker, not ``compressobj``: for a 45 MB file beside a thread busy in Python,
    # ``compressobj`` took 0.8 s, the chunker 0.36 s (0.15 s alone).
    packer = compressor.chunker(size=size, chunk_size=_COMPRESS_SLICE)
    written: list[bytes] = []
    for part in parts:
        view = memoryview(part)
        for i in range(0, len(view), _COMPRESS_PIECE):
            written += packer.compress(view[i : i + _COMPRESS_PIECE])
    written += packer.finish()  # type: ignore[no-untyped-call]  # untyped in zstandard's stubs
    return b"".join(written)


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def compressed_each(texts: list[bytes]) -> list[bytes]:
    """``compress`` of each text; those up to a megabyte in one call to zstd, which lets go
    of the GIL until all of them are done (a call each took the GIL back after each text,
    and beside a thread busy in Python each hand-over waits)."""
    small: list[bytes | bytearray | memoryview] = [t for t in texts if len(t) <= _COMPRESS_SLICE]
    written: list[bytes] = []
    if small:
        buffers = _codecs.compressor.multi_compress_to_buffer(small)
        # Copied out of zstd's shared buffer, which holds room for the worst case.
        written = [buffers[number].tobytes() for number in range(len(buffers))]
    ready = iter(written)
    return [compress(text) if len(text) > _COMPRESS_SLICE else next(ready) for text in texts]


def decompressed(data: bytes | memoryview) -> bytes:
    """The bytes a stored value packs (whatever it holds: JSON, or an original as uploaded)."""
    return _codecs.decompressor.decompress(data)


def unpacked(data: bytes | memoryview) -> Any:
    """A value ``packed`` stored, read by pydantic-core's JSON reader (twice as fast as
    Python's on a session's 10 MB document): what was written is JSON this product wrote."""
    return from_json(decompressed(data))


def pack_original(data: bytes) -> bytes:
    """The bytes as uploaded, as stored: compressed (a 10,000-turn session: 45.5 MB -> about
    13.7 MB), and given back exactly by ``unpack_original``.

    On the request's thread alone: zstd's multi-threaded context packed a 45 MB file in half
    the time (0.08 s), but kept 51 MB of buffers after, for as long as its thread lived."""
    return compress(data)


def unpack_original(stored: bytes | memoryview) -> bytes:
    return decompressed(stored)


@dataclass(frozen=True)
class Original:
    """An uploaded file as its session keeps it: its size, and its bytes packed (or where the
    database holds them packed, to copy them there)."""

    size: int
    packed: bytes | StoredBlob


def original_of(data: bytes) -> Original:
    return Original(len(data), pack_original(data))


def decompressed_each(packed: tuple[bytes | memoryview, ...]) -> list[bytes]:
    """``decompressed`` of each value, in one call to zstd (values ``compress`` wrote carry
    their size, which that call needs)."""
    buffers = _codecs.decompressor.multi_decompress_to_buffer(list(packed))
    return [buffers[number].tobytes() for number in range(len(buffers))]
