"""What an image, a document or a sound costs in a prompt, and how the figure was made.

Providers publish how they charge images by their size in pixels, so where a part's bytes say
its width and height (PNG, JPEG, GIF and WebP headers) the provider's own formula is used:

* Anthropic: width x height / 750, after scaling down to at most 1,568 px on the long edge and
  about 1.15 megapixels;
* OpenAI (high detail): fit within 2,048 x 2,048, scale the short side down to 768 px, then 85
  plus 170 for each 512 px tile;
* Google (Gemini): 258 for an image of at most 384 x 384, else 258 for each 768 px tile.

Anything else is estimated from its size and says so: one token for every 32 bytes of a
document (a typical PDF page of 50-100 KB then costs what providers quote for a page, about
1,500-3,000), one for every 500 bytes of audio or video (Gemini charges 32 tokens a second of
audio, about 16 KB of compressed sound). A part that only references its content (a web URL)
costs what the provider charges for a 1,024 x 1,024 image, a flat estimate.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from dataclasses import dataclass
from typing import Literal

from gcengine.messages import InlineData

MediaProvider = Literal["anthropic", "openai", "google"]
MediaBasis = Literal["dimensions", "size", "flat"]
DEFAULT_MEDIA_PROVIDER: MediaProvider = "anthropic"

DOCUMENT_BYTES_PER_TOKEN = 32
AUDIO_VIDEO_BYTES_PER_TOKEN = 500
# Enough of a file to find its dimensions: a JPEG's frame header can follow large metadata.
_HEADER_BYTES = 256 * 1024
_REFERENCE_SIZE = (1024, 1024)


@dataclass(frozen=True, slots=True)
class MediaCost:
    """A media part's tokens and what they rest on: the image's ``dimensions`` under the
    ``provider``'s formula, the part's ``size`` in bytes, or a ``flat`` estimate."""

    tokens: int
    basis: MediaBasis
    provider: MediaProvider
    width: int | None = None
    height: int | None = None
    size_bytes: int | None = None

    @property
    def exact(self) -> bool:
        """Whether the figure is the provider's own formula (not an estimate)."""
        return self.basis == "dimensions"

    @property
    def description(self) -> str:
        if self.basis == "dimensions":
            return f"{self.width}x{self.height} image, {self.provider}'s formula"
        if self.basis == "size":
            return f"{self.size_bytes:,} bytes, estimated from the size"
        return "a referenced file, a flat estimate (a 1,024 x 1,024 image)"


def media_provider_for_model(model: str | None) -> MediaProvider:
    """Whose formula prices a model's media: OpenAI's for GPT and o-series models, Google's
    for Gemini, Anthropic's otherwise (Claude, and any model the engine does not know)."""
    name = (model or "").lower().split("/")[-1]
    if name.startswith(("gpt", "o1", "o3", "o4", "chatgpt", "codex")):
        return "openai"
    if name.startswith(("gemini", "gemma")):
        return "google"
    return "anthropic"


def image_tokens(width: int, height: int, provider: MediaProvider) -> int:
    """The provider's published price of a ``width`` x ``height`` image."""
    if width <= 0 or height <= 0:
        return 0
    if provider == "openai":
        scale = min(1.0, 2048 / max(width, height))
        w, h = width * scale, height * scale
        scale = min(1.0, 768 / min(w, h))
        w, h = w * scale, h * scale
        return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)
    if provider == "google":
        if width <= 384 and height <= 384:
            return 258
        return 258 * math.ceil(width / 768) * math.ceil(height / 768)
    scale = min(1.0, 1568 / max(width, height), math.sqrt(1_150_000 / (width * height)))
    return max(1, math.ceil(width * scale * (height * scale) / 750))


def media_cost(inline: InlineData, provider: MediaProvider = DEFAULT_MEDIA_PROVIDER) -> MediaCost:
    """What an inline part costs under ``provider``'s pricing, and on what the figure rests."""
    if inline.extra.get("url"):  # the part holds a reference, not the bytes
        width, height = _REFERENCE_SIZE
        return MediaCost(image_tokens(width, height, provider), "flat", provider)
    size = _decoded_size(inline.data)
    if inline.mime_type.startswith("image/"):
        dimensions = image_dimensions(_head(inline.data))
        if dimensions is not None:
            width, height = dimensions
            tokens = image_tokens(width, height, provider)
            return MediaCost(tokens, "dimensions", provider, width, height, size)
    per_token = (
        AUDIO_VIDEO_BYTES_PER_TOKEN
        if inline.mime_type.startswith(("audio/", "video/"))
        else DOCUMENT_BYTES_PER_TOKEN
    )
    return MediaCost(max(1, math.ceil(size / per_token)), "size", provider, size_bytes=size)


def _decoded_size(data: str) -> int:
    """Bytes the base64 text holds (without decoding it)."""
    text = data.strip()
    padding = min(2, len(text) - len(text.rstrip("=")))
    return max(0, len(text) * 3 // 4 - padding)


def _head(data: str) -> bytes:
    chunk = data[:_HEADER_BYTES].strip()
    chunk = chunk[: len(chunk) - len(chunk) % 4]
    try:
        return base64.b64decode(chunk)
    except (binascii.Error, ValueError):
        return b""


def image_dimensions(head: bytes) -> tuple[int, int] | None:
    """Width and height from the start of a PNG, JPEG, GIF or WebP file; None otherwise."""
    if head.startswith(b"\x89PNG\r\n\x1a\n") and head[12:16] == b"IHDR":
        width, height = struct.unpack(">II", head[16:24])
        return int(width), int(height)
    if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        width, height = struct.unpack("<HH", head[6:10])
        return int(width), int(height)
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return _webp_dimensions(head)
    if head.startswith(b"\xff\xd8"):
        return _jpeg_dimensions(head)
    return None


def _webp_dimensions(head: bytes) -> tuple[int, int] | None:
    chunk = head[12:16]
    if chunk == b"VP8X" and len(head) >= 30:
        width = int.from_bytes(head[24:27], "little") + 1
        height = int.from_bytes(head[27:30], "little") + 1
        return width, height
    if chunk == b"VP8 " and len(head) >= 30 and head[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", head[26:30])
        return int(width) & 0x3FFF, int(height) & 0x3FFF
    if chunk == b"VP8L" and len(head) >= 25 and head[20] == 0x2F:
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None


# JPEG markers that start a frame (and so carry its size): SOF0-SOF15 but DHT, JPG and DAC.
_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_dimensions(head: bytes) -> tuple[int, int] | None:
    position = 2
    while position + 9 <= len(head):
        if head[position] != 0xFF:
            return None
        marker = head[position + 1]
        if marker == 0xFF:  # fill byte
            position += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length follows
            position += 2
            continue
        (length,) = struct.unpack(">H", head[position + 2 : position + 4])
        if marker in _JPEG_FRAMES:
            height, width = struct.unpack(">HH", head[position + 5 : position + 9])
            return int(width), int(height)
        position += 2 + length
    return None
