"""Sessions: list, read (figures, budget tree, history, the original bytes), pin, archive and
delete; and the one-file upload, which answers at the list's address."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.utils.http import content_disposition_header
from ninja import File, Router, Status, UploadedFile

from jaato_web.api.auth import DELETE, PIN, UPLOAD, VIEW, access_of, project_of
from jaato_web.api.paging import node_page, paged
from jaato_web.api.schemas import (
    ArchiveIn,
    ArchiveOut,
    Id,
    Index,
    NodePage,
    PageNumber,
    Problem,
    SessionDetailOut,
    SessionPage,
    SessionPinIn,
    SessionPinsOut,
    TurnPage,
    UploadOut,
)
from jaato_web.dashboard import background, selectors, services
from jaato_web.dashboard.models import AgentSession

router = Router(tags=["sessions"])


# The single-file upload is an uploads endpoint, but it answers at the list's own address
# (``POST /api/sessions`` beside ``GET``), and an address is served by the one router that
# declares it first: the other router's methods would answer 405. So it is declared here,
# filed under the uploads tag.
@router.post(
    "",
    response={201: UploadOut, 200: UploadOut, 202: UploadOut, 400: Problem, 413: Problem},
    summary="Upload a session file",
    auth=UPLOAD,
    tags=["uploads"],
)
def upload_session(
    request: HttpRequest, file: File[UploadedFile], project: Id | None = None
) -> Status[UploadOut]:
    """201 stored; 200 already stored (the same bytes); 202 queued for the background reader.

    400 names what is wrong and its JSON path; 413 when over the size limit. A failed upload
    stores nothing. ``project`` is the project's id; without it, the first project of yours
    that you may upload to.
    """
    target = project_of(request, project)
    receipt = background.session_upload_file(
        project=target, upload=file, actor=access_of(request).user
    )
    status = 200 if receipt.duplicate else (202 if receipt.job is not None else 201)
    return Status(
        status,
        UploadOut(
            filename=receipt.filename,
            duplicate=receipt.duplicate,
            session=receipt.session,  # type: ignore[arg-type]
            job=receipt.job,  # type: ignore[arg-type]
            gc_skipped_because="" if receipt.duplicate else services.gc_skipped_because(target),
        ),
    )


@router.get("", response=SessionPage, summary="List a project's sessions", auth=VIEW)
def list_sessions(
    request: HttpRequest,
    search: str = "",
    sort: str = "newest",
    page: PageNumber = 1,
    project: Id | None = None,
    archived: bool = False,
) -> dict[str, object]:
    """Sessions in use; ``archived=true`` lists the archived ones instead."""
    target = project_of(request, project)
    sessions = selectors.session_list(project=target, search=search, sort=sort, archived=archived)
    return paged(sessions, page, selectors.SESSIONS_PER_PAGE)


@router.get(
    "/{int:session_id}", response=SessionDetailOut, summary="A session's figures", auth=VIEW
)
def get_session(request: HttpRequest, session_id: int) -> AgentSession:
    return access_of(request).session(session_id)


@router.get(
    "/{int:session_id}/budget",
    response=NodePage,
    summary="One level of the budget tree",
    auth=VIEW,
)
def session_budget(
    request: HttpRequest, session_id: int, parent: str = "", offset: Index = 0
) -> dict[str, object]:
    """Top-level sources without ``parent``; a node's children with ``parent=<its path>``."""
    session = access_of(request).session(session_id)
    nodes, total = selectors.budget_children_page(
        session=session, parent_path=parent, offset=offset
    )
    return node_page(nodes, total, parent, offset)


@router.get(
    "/{int:session_id}/turns", response=TurnPage, summary="A page of the history", auth=VIEW
)
def session_turns(request: HttpRequest, session_id: int, page: PageNumber = 1) -> dict[str, object]:
    session = access_of(request).session(session_id)
    return paged(selectors.session_turns(session=session), page, selectors.TURNS_PER_PAGE)


@router.get("/{int:session_id}/original", summary="The uploaded file, byte for byte", auth=VIEW)
def session_original(request: HttpRequest, session_id: int) -> HttpResponse:
    session = access_of(request).session(session_id)
    original = selectors.session_original(session=session)
    response = HttpResponse(original, content_type="application/octet-stream")
    # The label is the uploader's file name: quoted, so it cannot add header parameters.
    response["Content-Disposition"] = content_disposition_header(True, session.label)
    return response


@router.get(
    "/{int:session_id}/pins",
    response=SessionPinsOut,
    summary="What this session keeps in every run",
    auth=VIEW,
)
def session_pins(request: HttpRequest, session_id: int) -> dict[str, object]:
    turns, ids = services.session_pins(session=access_of(request).session(session_id))
    return {"pinned_turn_indices": sorted(turns), "pinned_message_ids": sorted(ids)}


@router.post(
    "/{int:session_id}/pins",
    response={200: SessionPinsOut, 400: Problem},
    summary="Pin or unpin a turn or a message in this session only",
    auth=PIN,
)
def pin_in_session(
    request: HttpRequest, session_id: int, payload: SessionPinIn
) -> dict[str, object]:
    """Every later run, preview and replay of this session keeps what is pinned here, with
    any policy; other sessions are not touched. Answers the session's pins after the change."""
    access = access_of(request)
    session = access.session(session_id)
    services.session_pin(
        session=session,
        turn_index=payload.turn_index,
        message_id=payload.message_id,
        pinned=payload.pinned,
        actor=access.user,
    )
    turns, ids = services.session_pins(session=session)
    return {"pinned_turn_indices": sorted(turns), "pinned_message_ids": sorted(ids)}


@router.post(
    "/{int:session_id}/archive",
    response=ArchiveOut,
    summary="Archive a session (or bring it back)",
    auth=DELETE,
)
def archive_session(request: HttpRequest, session_id: int, payload: ArchiveIn) -> AgentSession:
    """An archived session leaves the list (``?archived=true`` lists them) and the pickers;
    nothing of it is removed."""
    session = access_of(request).session(session_id)
    services.archive_set(item=session, archived=payload.archived, actor=access_of(request).user)
    return session


@router.delete("/{int:session_id}", response={204: None}, summary="Delete a session", auth=DELETE)
def delete_session(request: HttpRequest, session_id: int) -> Status[None]:
    """The original upload goes with it, and so do its turns, runs, replays and comments."""
    session = access_of(request).session(session_id)
    services.item_delete(item=session, actor=access_of(request).user)
    return Status(204, None)
