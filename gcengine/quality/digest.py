"""The digest against the agent's own summary, at the agent's size: for each compaction the
agent performed, the context just before it summarized by the ``digest`` summarizer within the
tokens of the agent's summary, both scored alike against that context.

Both are scored as if each summary were all that stayed in view, so the figures compare the
summaries, not what the agent kept besides. They count anchors still in view (keyword
survival), a floor on what was lost, not what the agent would recall.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from gcengine.gc.digest import DigestSummarizer
from gcengine.gc.plan import marked_message
from gcengine.gc.summarizers import SummaryRequest
from gcengine.messages import MessageKind
from gcengine.quality.anchors import AnchorClass
from gcengine.quality.retention import AnchorRetention, session_scorer
from gcengine.session import Session, history_before
from gcengine.tokens import counter_by_name

CAVEAT = (
    "keyword survival: anchors still in view, a floor on what was lost, not what the agent "
    "would recall"
)


class SummaryAtSize(BaseModel):
    """One compaction: the agent's summary and the digest of the same context at its size."""

    compaction_id: str
    agent_tokens: int
    digest_tokens: int
    agent: AnchorRetention
    digest: AnchorRetention
    caveat: str = Field(default=CAVEAT)

    def kept(self, which: AnchorRetention) -> dict[AnchorClass, int]:
        return {part.anchor_class: part.retained for part in which.classes}

    @property
    def ratio(self) -> float | None:
        """Anchors the digest kept over those the agent's summary kept."""
        agent = sum(part.retained for part in self.agent.classes)
        return sum(part.retained for part in self.digest.classes) / agent if agent else None


def digest_against_agent(session: Session) -> list[SummaryAtSize]:
    """Every compaction of ``session`` whose summary the file holds as a message, in order."""
    counter = counter_by_name(session.token_counter)
    pool = {m.message_id: m for m in session.history}
    for compaction in session.compactions:
        pool.update((m.message_id, m) for m in compaction.replaced)
    compared: list[SummaryAtSize] = []
    for compaction in session.compactions:
        agents = pool.get(compaction.summary_message_id or "")
        if agents is None or not agents.text.strip():
            continue
        before = history_before(session, compaction)
        size = counter.count(agents.text)
        body = DigestSummarizer().summarize(SummaryRequest(before.turns(), None, size, counter))
        digest = marked_message(MessageKind.SUMMARY, body, [])
        scorer = session_scorer(before)
        compared.append(
            SummaryAtSize(
                compaction_id=compaction.compaction_id,
                agent_tokens=size,
                digest_tokens=counter.count(body),
                agent=scorer.score(before.history, [agents], before.history, [agents]),
                digest=scorer.score(before.history, [digest], before.history, [digest]),
            )
        )
    return compared
