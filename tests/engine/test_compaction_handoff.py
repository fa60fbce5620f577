"""What a hook hands an agent after its compaction: the anchors the compaction left out."""

from __future__ import annotations

from pathlib import Path

import pytest

import gcengine
from gcengine.quality.handoff import PER_CLASS, compaction_handoff
from gcengine.tokens import TokenCounter

SPOTTER = Path(__file__).parents[1] / "fixtures" / "formats" / "spotter"
COMPACTED = sorted(p for p in SPOTTER.glob("*.jsonl") if p.name != "short.jsonl")


@pytest.mark.parametrize("path", COMPACTED, ids=lambda p: p.name[:8])
def test_it_names_files_the_replaced_context_held_and_the_summary_does_not(
    path: Path, counter: TokenCounter
) -> None:
    session = gcengine.load_session(path, counter=counter)
    [compaction] = session.compactions
    handed = compaction_handoff(session)

    files = handed.split("Files:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert 0 < len(files) <= PER_CLASS
    replaced = "\n".join(str(m.model_dump()) for m in compaction.replaced)
    for line in files:
        path_named = line.removeprefix("- ")
        assert path_named in replaced
        assert path_named not in (compaction.summary or "")


def test_a_session_without_a_compaction_hands_nothing(counter: TokenCounter) -> None:
    session = gcengine.load_session(SPOTTER / "short.jsonl", counter=counter)
    assert compaction_handoff(session) == ""
