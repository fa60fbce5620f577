"""What an agent's last compaction left out, said to the agent: files, errors, decisions and
open work that the context it replaced named and that neither its summary nor what it kept
holds any more (``score_observed_compactions``' own finding, never a model's).

Claude Code's hooks can hand text to the agent right after a compaction (a ``SessionStart``
hook, whose ``additionalContext`` joins the new context), not to the compaction itself: a
``PreCompact`` hook can only block it. So this names what was lost, for the agent to look up
again, rather than instructions for the summary.
"""

from __future__ import annotations

from gcengine.quality.anchors import AnchorClass
from gcengine.quality.retention import score_observed_compactions
from gcengine.session import Session

# The classes said, in the order an agent resuming work needs them, each with its heading.
HANDOFF_CLASSES: tuple[tuple[AnchorClass, str], ...] = (
    (AnchorClass.OPEN_WORK, "Open work"),
    (AnchorClass.DECISIONS, "Decisions and constraints"),
    (AnchorClass.ERRORS, "Errors seen"),
    (AnchorClass.PATHS, "Files"),
)
PER_CLASS = 10


def compaction_handoff(session: Session, per_class: int = PER_CLASS) -> str:
    """The anchors the session's last compaction lost, as text for the agent; empty when the
    session has no compaction, its summary cannot be read, or it lost none of these."""
    if not session.compactions:
        return ""
    last = session.compactions[-1]
    retention = score_observed_compactions(session)[last.compaction_id]
    if retention.unscorable is not None:
        return ""
    sections = []
    for anchor_class, heading in HANDOFF_CLASSES:
        lost = retention.of_class(anchor_class).lost[:per_class]
        if lost:
            sections.append(f"{heading}:\n" + "\n".join(f"- {anchor}" for anchor in lost))
    if not sections:
        return ""
    return (
        "The compaction just made left these out of the summary; they were in the "
        "conversation it replaced. Look them up again (the files, the errors) before relying "
        "on memory of them.\n\n" + "\n\n".join(sections)
    )
