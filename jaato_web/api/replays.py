"""Replays: a session replayed turn by turn under a policy, and the series it drew."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Status

from jaato_web.api.auth import RUN, VIEW, access_of
from jaato_web.api.common import config_source
from jaato_web.api.schemas import Problem, ReplayIn, ReplayOut
from jaato_web.dashboard import background
from jaato_web.dashboard.models import Replay

router = Router(tags=["replays"])


@router.post(
    "/sessions/{int:session_id}/replays",
    response={202: ReplayOut, 200: ReplayOut, 400: Problem},
    summary="Replay a session turn by turn under a policy",
    auth=RUN,
)
def start_replay(request: HttpRequest, session_id: int, payload: ReplayIn) -> Status[Replay]:
    """200 with the stored replay when this policy was replayed before, else 202 (poll it)."""
    session = access_of(request).session(session_id)
    version, config = config_source(session, payload.policy_version_id, payload.config)
    replay = background.replay_request(
        session=session,
        policy_version=version,
        config=config,
        context_limit=payload.context_limit,
        compaction_id=payload.compaction_id,
        actor=access_of(request).user,
    )
    replay.refresh_from_db()
    return Status(200 if replay.status == "done" else 202, replay)


@router.get("/replays/{int:replay_id}", response=ReplayOut, summary="A replay's series", auth=VIEW)
def get_replay(request: HttpRequest, replay_id: int) -> Replay:
    return access_of(request).replay(replay_id)
