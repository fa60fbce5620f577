"""How the anchor precision sample (``tests/fixtures/anchor_precision_sample.json``) is drawn.

From every anchor the real public transcripts under ``tests/fixtures/formats`` hold (each
message of each session, the messages its compactions replaced included, read with the
session's context), counted once per message, class and key: for each class, a random order
(seeded by ``SEED`` and the class) of each transcript's anchors of that class, taken in turns
across the transcripts (in a random order too) until ``PER_CLASS`` are drawn or the class has
no more. Each drawn anchor
is then labelled by hand, reading it in its message.

    python -m tests.engine.anchor_sample > /tmp/drawn.json
"""

from __future__ import annotations

import json
import random
import sys
from collections import defaultdict
from pathlib import Path

import gcengine
from gcengine.quality.retention import session_corpus, session_scorer

FORMATS = Path(__file__).parents[1] / "fixtures" / "formats"
TRANSCRIPTS = (
    "spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    "spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
    "spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
    "codemie_code/session-624a4a58.jsonl",
    "codemie_code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
)
SEED = 36
PER_CLASS = 7


def every_anchor(transcript: str) -> list[dict[str, str]]:
    """Each anchor of a transcript once per message, in the session's order."""
    session = gcengine.load_session(FORMATS / transcript)
    context = session_scorer(session).context
    found: dict[tuple[str, str, str], dict[str, str]] = {}
    for message in session_corpus(session):
        for anchor in gcengine.message_anchors(message, context):
            key = (message.message_id, anchor.anchor_class.value, anchor.key)
            found.setdefault(
                key,
                {
                    "transcript": transcript,
                    "message_id": message.message_id,
                    "anchor_class": anchor.anchor_class.value,
                    "key": anchor.key,
                    "text": anchor.text,
                },
            )
    return list(found.values())


def draw(seed: int = SEED, per_class: int = PER_CLASS) -> list[dict[str, str]]:
    """The sample: up to ``per_class`` anchors a class, spread across the transcripts."""
    pools: dict[str, dict[str, list[dict[str, str]]]] = defaultdict(lambda: defaultdict(list))
    for transcript in TRANSCRIPTS:
        for anchor in every_anchor(transcript):
            pools[anchor["anchor_class"]][transcript].append(anchor)
    sample: list[dict[str, str]] = []
    for anchor_class in sorted(pools):
        rng = random.Random(f"{seed}-{anchor_class}")  # a class's draw is its own
        by_transcript = pools[anchor_class]
        order = sorted(by_transcript)
        rng.shuffle(order)
        for transcript in order:
            rng.shuffle(by_transcript[transcript])
        drawn: list[dict[str, str]] = []
        while len(drawn) < per_class and any(by_transcript[t] for t in order):
            for transcript in order:
                if by_transcript[transcript] and len(drawn) < per_class:
                    drawn.append(by_transcript[transcript].pop())
        sample.extend(drawn)
    return sample


if __name__ == "__main__":
    json.dump(draw(), sys.stdout, indent=1, ensure_ascii=False)
