"""What several families' endpoints share: the policy a run or a replay is given."""

from __future__ import annotations

import gcengine
from jaato_web.dashboard import selectors
from jaato_web.dashboard.models import AgentSession, PolicyKind, PolicyVersion


def config_source(
    session: AgentSession, policy_version_id: int | None, config: dict[str, object] | None
) -> tuple[PolicyVersion | None, object]:
    """A stored version of the session's own project, or a pasted gc.json; exactly one."""
    if policy_version_id is not None:
        version = selectors.policy_version_get(
            projects=[session.project_id], version_id=policy_version_id, kind=PolicyKind.GC
        )
        return version, version.config
    if config is None:
        raise gcengine.ConfigError("give policy_version_id or config (a gc.json object)")
    return None, config
