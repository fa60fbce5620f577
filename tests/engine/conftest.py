"""Fixtures for engine tests: no Django, no database, no network."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gcengine.tokens import TokenCounter, load_counter

# The reference examples live beside the repository (``../shared/reference/examples``).
EXAMPLES = Path(__file__).resolve().parents[3] / "shared" / "reference" / "examples"


def example(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLES / name).read_text())
    return data


@pytest.fixture(scope="session")
def counter() -> TokenCounter:
    """The offline tiktoken counter (bundled cl100k_base): exact, and needs no network."""
    return load_counter()
