"""Sessions: upload, list, read (figures, budget tree, history), and their original bytes."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from ninja import File, Router, Status, UploadedFile

from jaato_web.api.pages import node_page, paged
from jaato_web.api.schemas import (
    IngestJobOut,
    NodePage,
    Problem,
    SessionDetailOut,
    SessionPage,
    TurnPage,
    UploadOut,
)
from jaato_web.dashboard import selectors, services
from jaato_web.dashboard.models import AgentSession, IngestJob

router = Router(tags=["sessions"])


@router.post(
    "",
    response={201: UploadOut, 200: UploadOut, 202: UploadOut, 400: Problem, 413: Problem},
    summary="Upload a session file",
)
def upload_session(request: HttpRequest, file: File[UploadedFile]) -> Status[UploadOut]:
    """201 stored; 200 already stored (the same bytes); 202 queued for the background reader.

    400 names what is wrong and its JSON path; 413 when over the size limit. A failed upload
    stores nothing.
    """
    services.upload_size_check(file.size or 0)  # before reading a byte of it
    receipt = services.session_upload(
        project=services.project_default(), filename=file.name or "session.json", data=file.read()
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


@router.get("", response=SessionPage, summary="List sessions")
def list_sessions(
    request: HttpRequest, search: str = "", sort: str = "newest", page: int = 1
) -> dict[str, object]:
    sessions = selectors.session_list(project=services.project_default(), search=search, sort=sort)
    return paged(sessions, page, selectors.SESSIONS_PER_PAGE)


@router.get("/uploads/{int:job_id}", response=IngestJobOut, summary="Background upload status")
def upload_status(request: HttpRequest, job_id: int) -> IngestJob:
    return selectors.ingest_job_get(project=services.project_default(), job_id=job_id)


@router.get("/{int:session_id}", response=SessionDetailOut, summary="A session's figures")
def get_session(request: HttpRequest, session_id: int) -> AgentSession:
    return selectors.session_get(project=services.project_default(), session_id=session_id)


@router.get("/{int:session_id}/budget", response=NodePage, summary="One level of the budget tree")
def session_budget(
    request: HttpRequest, session_id: int, parent: str = "", offset: int = 0
) -> dict[str, object]:
    """Top-level sources without ``parent``; a node's children with ``parent=<its path>``."""
    session = selectors.session_get(project=services.project_default(), session_id=session_id)
    return node_page(selectors.budget_children(session=session, parent_path=parent), parent, offset)


@router.get("/{int:session_id}/turns", response=TurnPage, summary="A page of the history")
def session_turns(request: HttpRequest, session_id: int, page: int = 1) -> dict[str, object]:
    session = selectors.session_get(project=services.project_default(), session_id=session_id)
    return paged(selectors.session_turns(session=session), page, selectors.TURNS_PER_PAGE)


@router.get("/{int:session_id}/original", summary="The uploaded file, byte for byte")
def session_original(request: HttpRequest, session_id: int) -> HttpResponse:
    session = selectors.session_get(project=services.project_default(), session_id=session_id)
    original = selectors.session_original(session=session)
    response = HttpResponse(original, content_type="application/octet-stream")
    response["Content-Disposition"] = f'attachment; filename="{session.label}"'
    return response
