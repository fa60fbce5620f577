"""Uploads: a session file received (stored at once when small, else queued for a worker to
read), several files taken or refused each on its own, and a queued upload read.

Starting the work an upload asks for (a worker to read it, the project's default policy to run
on it) is ``dashboard.background``'s: it receives the file through this module, then starts
what the receipt asks for.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile, UploadedFile
from django.db import IntegrityError, transaction
from django.urls import reverse

import gcengine
from jaato_web.dashboard import blobs, storage
from jaato_web.dashboard.audit import audit_record
from jaato_web.dashboard.models import (
    AgentSession,
    AuditAction,
    IngestJob,
    IngestUpload,
    JobStatus,
    PolicyVersion,
    Project,
)
from jaato_web.dashboard.services import stored_sessions
from jaato_web.dashboard.services.common import UploadTooLarge
from jaato_web.dashboard.services.work import Lease, WorkLost, internal_error
from jaato_web.errors import InputError

if TYPE_CHECKING:
    from jaato_web.dashboard.services.common import Actor

logger = logging.getLogger(__name__)


# What file systems and the stored label hold; a longer name is a mistake worth saying.
FILENAME_MAX_CHARS = 255


class UploadNameError(InputError):
    """An uploaded file's name that nothing can store."""

    def __init__(self, length: int) -> None:
        super().__init__(
            f"the file name is {length:,} characters long; at most {FILENAME_MAX_CHARS} "
            "characters are kept",
            "file",
        )


def upload_size_check(size: int) -> None:
    """Refuse an oversized upload from its declared size, before it is read into memory."""
    if size > settings.JAATO_UPLOAD_MAX_BYTES:
        raise UploadTooLarge(size, settings.JAATO_UPLOAD_MAX_BYTES)


def upload_name_check(filename: str) -> None:
    if len(filename) > FILENAME_MAX_CHARS:
        raise UploadNameError(len(filename))


@dataclass(frozen=True)
class UploadReceipt:
    """What an upload became: a stored session, or a job reading it in the background."""

    filename: str
    session: AgentSession | None = None
    job: IngestJob | None = None
    duplicate: bool = False

    @property
    def stored_now(self) -> bool:
        """Whether this upload stored a session the project did not hold."""
        return self.session is not None and not self.duplicate


def upload_file_receive(
    *, project: Project, upload: UploadedFile[Any], actor: Actor = None
) -> UploadReceipt:
    """``upload_receive`` of an uploaded file, read whole only when the project lacks it.

    Django writes a large upload to a temporary file as it arrives; its SHA-256 is read from
    there chunk by chunk, so a file sent again is recognised without holding it in memory.
    """
    filename = upload.name or "session.json"
    upload_name_check(filename)
    upload_size_check(upload.size or 0)  # before reading a byte of it
    digest = hashlib.sha256()
    for chunk in upload.chunks():
        digest.update(chunk)
    existing = AgentSession.objects.filter(project=project, sha256=digest.hexdigest()).first()
    if existing is not None:
        return UploadReceipt(filename, session=existing, duplicate=True)
    upload.seek(0)
    data = upload.read()
    upload_size_check(len(data))  # what was read, which the size declared may not have been
    # Hashed once, as it was read: a 45 MB file took 0.02 s more hashed again.
    return _new_upload(project, filename, data, digest.hexdigest(), actor)


def upload_receive(
    *, project: Project, filename: str, data: bytes, actor: Actor = None
) -> UploadReceipt:
    """Store an uploaded session, or say it is already here.

    Small files are read now, so a malformed one raises ``gcengine.SessionFormatError`` with
    nothing stored; large ones become an ``IngestJob`` for a worker (``background.session_upload``
    hands it to one, and runs the default policy on a session stored now).
    """
    upload_name_check(filename)
    upload_size_check(len(data))
    digest = hashlib.sha256(data).hexdigest()
    existing = AgentSession.objects.filter(project=project, sha256=digest).first()
    if existing is not None:
        return UploadReceipt(filename, session=existing, duplicate=True)
    return _new_upload(project, filename, data, digest, actor)


def _new_upload(
    project: Project, filename: str, data: bytes, digest: str, actor: Actor
) -> UploadReceipt:
    """``upload_receive`` of a file the project did not hold, ``digest`` its SHA-256."""
    if len(data) > settings.JAATO_INLINE_INGEST_BYTES:
        with transaction.atomic():
            job = IngestJob.objects.create(
                project=project,
                filename=filename,
                sha256=digest,
                size_bytes=len(data),
                progress="waiting for a worker",
            )
            # Packed as the session will keep it: the worker reads it back and the session's
            # document copies it from here, so the 45 MB of a 10,000-turn session are written
            # once, as 13.7 MB, instead of as uploaded and then again packed. By the job's id:
            # made with the job, the row would stay cached on it, its bytes and all.
            IngestUpload.objects.create(job_id=job.pk, data=storage.pack_original(data))
            _upload_audit(project, actor, filename, len(data), job=job)
        return UploadReceipt(filename, job=job)
    engine_session = gcengine.load_session(data)
    try:
        with transaction.atomic():
            session = stored_sessions.session_store(
                project, filename, storage.original_of(data), digest, engine_session
            )
            _upload_audit(project, actor, filename, len(data), session=session)
    except IntegrityError:
        # The same file arrived twice at once; the other request stored it.
        return UploadReceipt(
            filename,
            session=AgentSession.objects.get(project=project, sha256=digest),
            duplicate=True,
        )
    return UploadReceipt(filename, session=session)


class UploadState(StrEnum):
    """What became of one uploaded file."""

    STORED = "stored"
    DUPLICATE = "duplicate"
    QUEUED = "queued"
    TOO_LARGE = "too_large"
    BAD_NAME = "bad_name"
    EMPTY = "empty"
    MALFORMED = "malformed"
    FAILED = "failed"  # the server's fault, not the file's: said, and the others go on


@dataclass(frozen=True)
class UploadOutcome:
    """One file's result in an upload of several: each file is taken or refused on its own."""

    filename: str
    state: UploadState
    status: int
    session: AgentSession | None = None
    job: IngestJob | None = None
    reason: str = ""
    json_path: str = ""

    @property
    def taken(self) -> bool:
        return self.status < 400


def upload_outcomes(
    files: Iterable[UploadedFile[Any]], receive: Callable[[UploadedFile[Any]], UploadReceipt]
) -> list[UploadOutcome]:
    """Several files uploaded at once, each ``receive``d on its own: one that is empty, too
    large or not a session file is reported and stores nothing, and the others are stored all
    the same. A Claude Code session's sub-agent files that come with it are one upload with it
    (``uploads_grouped``)."""
    return [_upload_one(upload, receive) for upload in uploads_grouped(files)]


# How far into a sub-agent's file its first row, which names its session, is looked for.
_FIRST_ROWS_BYTES = 256 * 1024


def uploads_grouped(files: Iterable[UploadedFile[Any]]) -> list[UploadedFile[Any]]:
    """The files of an upload as the sessions they hold: each Claude Code sub-agent file
    (``agent-*.jsonl``, from the session's ``subagents`` folder) that came with its session's
    file (the one named ``<sessionId>.jsonl``, or whose rows carry that ``sessionId``) joins
    it in one zip, ``<session>.zip``, read as a zip of a session and its sub-agents is; every
    other file stays an upload of its own.

    Files chosen together or a folder dropped or chosen whole (a browser sends a folder's
    files without their folders) so become the session the agent wrote, not one session per
    file.
    """
    uploads = list(files)
    agents = [u for u in uploads if _is_agent_file(u.name or "")]
    if not agents:
        return uploads
    sessions = {
        key: upload
        for upload in uploads
        if upload not in agents and (upload.name or "").endswith(".jsonl")
        for key in {(upload.name or "").removesuffix(".jsonl"), _session_id_of(upload)}
        if key
    }
    joined: dict[int, list[UploadedFile[Any]]] = {}
    for agent in agents:
        session = sessions.get(_session_id_of(agent) or "")
        if session is not None:
            joined.setdefault(id(session), []).append(agent)
    taken = {id(agent) for group in joined.values() for agent in group}
    grouped: list[UploadedFile[Any]] = []
    for upload in uploads:
        if id(upload) in taken:
            continue
        with_agents = joined.get(id(upload))
        grouped.append(_session_zip(upload, with_agents) if with_agents else upload)
    return grouped


def _is_agent_file(name: str) -> bool:
    return name.rsplit("/", 1)[-1].startswith("agent-") and name.endswith(".jsonl")


def _session_id_of(upload: UploadedFile[Any]) -> str | None:
    """The ``sessionId`` the first rows of a JSON Lines file name, if any."""
    upload.seek(0)
    start = upload.read(_FIRST_ROWS_BYTES)
    upload.seek(0)
    for line in start.splitlines()[:20]:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("sessionId"), str):
            return str(row["sessionId"])
    return None


def _session_zip(session: UploadedFile[Any], agents: list[UploadedFile[Any]]) -> UploadedFile[Any]:
    """A session file and its sub-agents' files as one zip, laid out as Claude Code writes
    them: ``<session>.jsonl`` and ``<session>/subagents/agent-*.jsonl``."""
    name = session.name or "session.jsonl"
    stem = name.removesuffix(".jsonl")
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for upload, member in [(session, name)] + [
            (agent, f"{stem}/subagents/{agent.name}") for agent in agents
        ]:
            upload.seek(0)
            archive.writestr(member, upload.read())
    return SimpleUploadedFile(f"{stem}.zip", packed.getvalue(), "application/zip")


def uploads_status(outcomes: list[UploadOutcome]) -> int:
    """One status for an upload of several files: 200 when any file was taken, otherwise the
    refusals' own status (413 too large, 500 the server's failure, 400 otherwise or when they
    differ)."""
    if any(o.taken for o in outcomes):
        return 200
    refusals = {o.status for o in outcomes}
    return refusals.pop() if len(refusals) == 1 else 400


def uploads_gc_skipped_because(project: Project, outcomes: list[UploadOutcome]) -> str:
    """``gc_skipped_because`` for an upload of several files, when one of them stores a new
    session (a duplicate or a refused file runs nothing in any case); else empty."""
    new = any(o.state in (UploadState.STORED, UploadState.QUEUED) for o in outcomes)
    return gc_skipped_because(project) if new else ""


def _upload_one(
    upload: UploadedFile[Any], receive: Callable[[UploadedFile[Any]], UploadReceipt]
) -> UploadOutcome:
    name = upload.name or "upload.json"
    size = upload.size or 0
    if size == 0:
        return UploadOutcome(name, UploadState.EMPTY, 400, reason="the file is empty")
    try:
        receipt = receive(upload)
    except Exception as error:
        return _upload_refused(name, error)
    if receipt.job is None:
        state = UploadState.DUPLICATE if receipt.duplicate else UploadState.STORED
        return UploadOutcome(name, state, 200, session=receipt.session)
    # Read again: a synchronous task backend has already read the file by now.
    job = IngestJob.objects.select_related("session").get(pk=receipt.job.pk)
    if job.status == JobStatus.DONE and job.session is not None:
        return UploadOutcome(name, UploadState.STORED, 200, session=job.session)
    if job.status == JobStatus.FAILED and not job.error_path:
        return UploadOutcome(name, UploadState.FAILED, 500, reason=job.error)
    if job.status == JobStatus.FAILED:
        reason = job.error.removeprefix(f"{job.error_path}: ")
        return UploadOutcome(
            name, UploadState.MALFORMED, 400, reason=reason, json_path=job.error_path
        )
    return UploadOutcome(name, UploadState.QUEUED, 200, job=job)


def _upload_refused(name: str, error: Exception) -> UploadOutcome:
    """Why one file of several was not taken. A failure of the server's own is logged with its
    traceback and said for this file alone: the files stored before it stay stored, and the
    answer lists them, instead of an error page that hides them."""
    if isinstance(error, UploadTooLarge):
        return UploadOutcome(name, UploadState.TOO_LARGE, 413, reason=error.reason)
    if isinstance(error, UploadNameError):
        return UploadOutcome(name[:80] + "…", UploadState.BAD_NAME, 400, reason=error.reason)
    if isinstance(error, gcengine.SessionFormatError):
        return UploadOutcome(
            name, UploadState.MALFORMED, 400, reason=error.reason, json_path=error.json_path
        )
    logger.error("storing the upload %r failed", name, exc_info=error)
    return UploadOutcome(name, UploadState.FAILED, 500, reason=internal_error(IngestJob, error))


def _upload_audit(
    project: Project,
    actor: Actor,
    filename: str,
    size: int,
    *,
    session: AgentSession | None = None,
    job: IngestJob | None = None,
) -> None:
    if session is not None:
        url = reverse("session_detail", args=[session.pk])
    else:
        assert job is not None
        url = reverse("ingest_job", args=[job.pk])
    audit_record(
        project=project,
        actor=actor,
        action=AuditAction.UPLOAD,
        target=filename,
        target_url=url,
        detail={"bytes": size, "session": session.pk if session else None},
    )


def upload_read(*, job_id: int, lease: Lease) -> AgentSession | None:
    """Read a queued upload under ``lease``; on success store the session, on failure keep
    only the error. The session, when this stored it (not when the project had it already)."""
    job = IngestJob.objects.get(pk=job_id)
    stored_sessions.room_for_upload(job.size_bytes)
    packed = blobs.blob_of(IngestUpload, job_id, "data")
    if packed is None:
        raise WorkLost  # cancelled before the bytes were read
    upload = [storage.unpack_original(packed)]
    del packed
    try:
        # The bytes are handed over, held by nothing else: they go once parsed.
        engine_session = gcengine.load_session(upload.pop())
    except gcengine.SessionFormatError as error:
        # A path deep in a file can be longer than the field; its start says where to look.
        lease.failed(str(error), error_path=error.json_path[:400])
        return None
    lease.progress(f"storing {len(engine_session.history):,} messages")
    # Copied in the database from the upload's row, which ending the job deletes: so the job
    # ends last, and a cancel meanwhile rolls the stored session back.
    original = storage.Original(job.size_bytes, blobs.StoredBlob(IngestUpload, job_id, "data"))
    with transaction.atomic():
        same = AgentSession.objects.filter(project_id=job.project_id, sha256=job.sha256)
        session = same.first()
        created = session is None
        if session is None:
            try:
                session = stored_sessions.session_store(
                    job.project, job.filename, original, job.sha256, engine_session
                )
            except IntegrityError:  # the same file, uploaded twice at once, stored by the other
                session, created = same.get(), False
        lease.done(session=session)
    return session if created else None


def gc_skipped_because(project: Project) -> str:
    """Why a session uploaded to ``project`` gets no GC run, and how to change it, in a
    sentence; empty when its default policy runs on every upload. An upload that runs nothing
    says so, rather than leaving a person to wonder why its session has no run."""
    if not settings.JAATO_GC_ON_UPLOAD:
        return (
            "No policy ran on it: GC on upload is switched off on this server "
            "(JAATO_GC_ON_UPLOAD). Run a policy from the session's page."
        )
    if not project.run_default_policy_on_upload:
        return (
            f"No policy ran on it: {project.name} does not run its default policy on upload. "
            "Run a policy from the session's page."
        )
    if project.default_policy_id is None:
        return (
            f"No policy ran on it: {project.name} has no default policy. Make one the default "
            "(on the Policies page, or PUT /api/policies/{id}/default) and it runs on every "
            "upload; or run a policy from the session's page."
        )
    return ""


def version_run_on_upload(session: AgentSession) -> PolicyVersion | None:
    """The policy version a session just uploaded runs under: the newest of its project's
    default policy, when the server and the project run it on upload; else None."""
    project = session.project
    if gc_skipped_because(project) or project.default_policy_id is None:
        return None  # (no default policy is one of the reasons; named again for the types)
    return (
        PolicyVersion.objects.filter(policy_id=project.default_policy_id)
        .order_by("-number")
        .first()
    )
