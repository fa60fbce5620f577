"""A reachability run's stash (search it, restore from it), why it kept what it kept, and the
reference graph around a turn of a session."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Status

import gcengine
from jaato_web.api.auth import RUN, VIEW, access_of
from jaato_web.api.paging import paged
from jaato_web.api.schemas import (
    KeptPage,
    PageNumber,
    Problem,
    RestoreOut,
    StashPage,
    StashRestoreIn,
    TurnReferencesOut,
)
from jaato_web.dashboard import presenters, selectors, services

router = Router(tags=["stash"])


@router.get("/runs/{int:run_id}/stash", response=StashPage, summary="What a run stashed", auth=VIEW)
def run_stash(
    request: HttpRequest, run_id: int, q: str = "", anchor: str = "", page: PageNumber = 1
) -> dict[str, object]:
    """A reachability run's stash, in the order it took it; ``q`` finds text in what a segment
    says, ``anchor`` a file, name or error code it holds (both ignore case)."""
    found = selectors.run_stashed(run=access_of(request).run(run_id), text=q, anchor=anchor)
    return paged(found, page, selectors.STASH_PER_PAGE)


@router.post(
    "/runs/{int:run_id}/stash/restore",
    response={201: RestoreOut, 400: Problem, 404: Problem},
    summary="Restore stashed segments into a new session",
    auth=RUN,
)
def restore_segments(request: HttpRequest, run_id: int, payload: StashRestoreIn) -> Status[object]:
    """A new session: the one the run left, with the named segments back where they were.
    The run and its sessions stay as they are; the same segments again give the same session."""
    run = access_of(request).run(run_id)
    session = services.stash_restore(
        run=run, segment_ids=payload.segment_ids, actor=access_of(request).user
    )
    return Status(201, session)


@router.get(
    "/runs/{int:run_id}/kept", response=KeptPage, summary="Why a run kept what it kept", auth=VIEW
)
def run_kept(
    request: HttpRequest,
    run_id: int,
    turn: PageNumber | None = None,
    q: str = "",
    page: PageNumber = 1,
) -> dict[str, object]:
    """A reachability run's kept segments with their reasons, in history order; ``turn`` (from
    1, as JAATO numbers them) keeps one turn's, ``q`` searches the reasons."""
    run = access_of(request).run(run_id)
    index = presenters.turn_index_of(turn) if turn else None
    kept = selectors.run_kept(run=run, turn_index=index, text=q)
    return paged(kept, page, selectors.KEPT_PER_PAGE)


@router.get(
    "/sessions/{int:session_id}/references",
    response={200: TurnReferencesOut, 400: Problem},
    summary="The reference graph around a turn",
    auth=VIEW,
)
def session_references(
    request: HttpRequest, session_id: int, turn: PageNumber
) -> gcengine.TurnReferences:
    """What the segments of turn ``turn`` (from 1, as JAATO numbers turns) refer to, and what
    refers to them: what a reachability policy follows."""
    session = access_of(request).session(session_id)
    index = presenters.turn_index_of(turn)
    return gcengine.turn_references(services.engine_session_of(session), index)
