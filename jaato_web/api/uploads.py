"""Uploads: several session files, each on its own, and a queued upload's progress.

The one-file upload (``POST /api/sessions``) is declared in ``sessions``, beside the list that
answers at the same address."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import File, Router, Status, UploadedFile

from jaato_web.api.auth import UPLOAD, VIEW, access_of, project_of
from jaato_web.api.schemas import Id, IngestJobOut, UploadBatchOut, UploadResultOut
from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import IngestJob

router = Router(tags=["uploads"])


@router.post(
    "/sessions/uploads",
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
    target = project_of(request, project)
    actor = access_of(request).user
    outcomes = background.sessions_upload(project=target, files=files, actor=actor)
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
            gc_skipped_because=services.uploads_gc_skipped_because(target, outcomes),
        ),
    )


@router.get(
    "/sessions/uploads/{int:job_id}",
    response=IngestJobOut,
    summary="Background upload status",
    auth=VIEW,
)
def upload_status(request: HttpRequest, job_id: int) -> IngestJob:
    return access_of(request).ingest_job(job_id)
