"""Sessions: upload, list, read (figures, budget tree, history), and their original bytes."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.utils.http import content_disposition_header
from ninja import File, Router, Status, UploadedFile

import gcengine
from jaato_web.api.auth import DELETE, PIN, UPLOAD, VIEW, access_of, project_of
from jaato_web.api.paging import node_page, paged
from jaato_web.api.schemas import (
    ArchiveIn,
    ArchiveOut,
    Id,
    Index,
    IngestJobOut,
    NodePage,
    PageNumber,
    Problem,
    SessionDetailOut,
    SessionPage,
    SessionPinIn,
    SessionPinsOut,
    TurnPage,
    TurnReferencesOut,
    UploadBatchOut,
    UploadOut,
    UploadResultOut,
)
from jaato_web.dashboard import background, selectors, services
from jaato_web.dashboard.models import AgentSession, IngestJob

router = Router(tags=["sessions"])


@router.post(
    "",
    response={201: UploadOut, 200: UploadOut, 202: UploadOut, 400: Problem, 413: Problem},
    summary="Upload a session file",
    auth=UPLOAD,
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
        ),
    )


@router.post(
    "/uploads",
    response={200: UploadBatchOut, 400: UploadBatchOut, 413: UploadBatchOut, 500: UploadBatchOut},
    summary="Upload several session files, each on its own",
    auth=UPLOAD,
)
def upload_sessions(
    request: HttpRequest, files: File[list[UploadedFile]], project: Id | None = None
) -> Status[UploadBatchOut]:
    """Every file gets its own result: an empty, oversized or malformed file is refused and
    stores nothing, while the others are stored. The answer is 200 when at least one file was
    taken, otherwise the refusal's status (400 when they differ), as the upload page answers.
    """
    outcomes = background.sessions_upload(
        project=project_of(request, project), files=files, actor=access_of(request).user
    )
    taken = sum(1 for o in outcomes if o.taken)
    return Status(
        services.uploads_status(outcomes),
        UploadBatchOut(
            results=[
                UploadResultOut(
                    filename=o.filename,
                    state=o.state.value,
                    status=o.status,
                    session=o.session,  # type: ignore[arg-type]
                    job=o.job,  # type: ignore[arg-type]
                    reason=o.reason,
                    json_path=o.json_path,
                )
                for o in outcomes
            ],
            taken=taken,
            refused=len(outcomes) - taken,
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
    "/uploads/{int:job_id}",
    response=IngestJobOut,
    summary="Background upload status",
    auth=VIEW,
)
def upload_status(request: HttpRequest, job_id: int) -> IngestJob:
    return access_of(request).ingest_job(job_id)


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


@router.get(
    "/{int:session_id}/references",
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
    return gcengine.turn_references(services.engine_session_of(session), turn - 1)


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
