"""The anchors found in every message of the real public transcripts and of generated sessions,
against a digest of what the anchor finder found before it was made faster: finding anchors
faster must find the same ones, in the same order, with the same text and terms.

A digest that changes means what is found changed: if that is meant (a new rule), compute the
digests again (``python -m tests.engine.test_anchor_reference``) and say why in the commit.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable

import pytest

import gcengine
from gcengine.messages import Message
from gcengine.quality.anchors import Anchor, literal_anchors_of, message_anchors
from gcengine.quality.retention import anchor_cache, session_corpus
from tests.engine.anchor_sample import FORMATS, TRANSCRIPTS

# Per session: the digest of its context and of each message's anchors (with its context and
# without one) and literal anchors, in the session's order.
EXPECTED = {
    "spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl": (
        "ce1271e549b4a2278233750db04b5a1ef61be7827f622b8b630dbf81c4ff7c7c"
    ),
    "spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl": (
        "3e414924996ea95f3a3d143bd579eb209422fe1ada0f31ef678349cf6bab096f"
    ),
    "spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl": (
        "e04f612e6e6ff3e89c1752aeb38b57141e63fac961e142d548ce0ac0b7b98789"
    ),
    "codemie_code/session-624a4a58.jsonl": (
        "68e1d4c8d17ad7b05e9795c38b733727c26ee354ddba7bd20a211d42a55db46b"
    ),
    "codemie_code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl": (
        "f10e8e75ffe456d0782b99a5a4c999d0facf205113422a730ff35763aafc8c48"
    ),
    "demo": "554a4dc65288039cc921c684325cf145212be70dc15932ef3a6cc3a5be9d0196",
    "synthetic-1": "48ad0c41c23714d6c1d60efe535767d1163415e9e356e8a3b5b97d4917d4ca3a",
    "synthetic-7": "a3767e2c33d268215939519fee66e47d3596ce9150898e9d82e7c58fc669dc81",
}


def _generated(name: str) -> gcengine.Session:
    if name == "demo":
        demo = gcengine.generate_demo_session(gcengine.DemoShape(turns=240))
        return gcengine.load_session(json.dumps(demo))
    shape = gcengine.SessionShape(turns=600, seed=int(name.removeprefix("synthetic-")))
    return gcengine.load_session(json.dumps(gcengine.generate_session_file(shape)).encode())


SESSIONS = (*TRANSCRIPTS, "demo", "synthetic-1", "synthetic-7")


def _session(name: str) -> gcengine.Session:
    return gcengine.load_session(FORMATS / name) if name.endswith(".jsonl") else _generated(name)


def _described(anchors: Iterable[Anchor]) -> list[list[object]]:
    return [[a.anchor_class.value, a.key, a.text, a.rule.value, sorted(a.terms)] for a in anchors]


def digest(session: gcengine.Session) -> str:
    """A digest of every anchor the finder reads in the session's messages."""
    cache = anchor_cache(session)
    context = cache.context
    described: list[object] = [context.root, sorted(context.issues)]
    messages: list[Message] = [
        *session_corpus(session),
        *(m for agent in session.subagents for m in agent.history),
    ]
    for message in messages:
        described.append(
            [
                message.message_id,
                _described(message_anchors(message, context)),
                _described(message_anchors(message)),
                _described(literal_anchors_of(message)),
            ]
        )
    return hashlib.sha256(json.dumps(described).encode()).hexdigest()


@pytest.mark.parametrize("name", SESSIONS)
def test_the_anchors_found_are_the_ones_found_before(name: str) -> None:
    assert digest(_session(name)) == EXPECTED[name]


if __name__ == "__main__":
    json.dump({name: digest(_session(name)) for name in SESSIONS}, sys.stdout, indent=4)
