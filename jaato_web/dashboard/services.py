"""Write-side use cases: the only module that both calls the engine and writes the database.

Pages, the API and management commands call these functions and nothing else to change state,
so an upload or a run behaves the same whichever door it came through.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from functools import cache, partial
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, connection, models, transaction
from django.db.models import Count
from django.urls import reverse
from django.utils import timezone
from pydantic_core import to_json

import gcengine
from jaato_web.dashboard import background, blobs, presenters, storage, tasks
from jaato_web.dashboard.audit import actor_name, audit_record
from jaato_web.dashboard.memo import BoundedLRU
from jaato_web.dashboard.models import (
    AgentSession,
    AuditAction,
    BudgetNode,
    GCRun,
    IngestJob,
    IngestUpload,
    JobStatus,
    KeptSegment,
    Policy,
    PolicyKind,
    PolicyVersion,
    Project,
    Removal,
    Replay,
    SessionDocument,
    SessionPin,
    SessionTurn,
    StashedSegment,
    Summary,
)
from jaato_web.errors import InputError

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    Actor = AbstractBaseUser | AnonymousUser | None

logger = logging.getLogger(__name__)

DEFAULT_PROJECT_SLUG = "default"
# A gc.json is small; anything bigger is not a policy (JAATO's own files are under 1 KB).
POLICY_MAX_BYTES = 256 * 1024
BULK_BATCH = 1000


class UploadTooLarge(InputError):
    """The upload is over ``JAATO_UPLOAD_MAX_BYTES``; nothing was read or stored."""

    status = 413

    def __init__(self, size: int, limit: int, what: str = "file") -> None:
        self.size = size
        self.limit = limit
        super().__init__(f"the {what} is {size:,} bytes; the limit is {limit:,} bytes")

    def details(self) -> dict[str, Any]:
        return {"limit_bytes": self.limit}


class PolicyConflict(InputError):
    """A save based on an older version than the one stored now.

    ``base_config`` is the gc.json of the version the change was made from (None when that
    number does not exist), so callers can show what changed underneath the user.
    """

    status = 409

    def __init__(
        self,
        policy: Policy,
        base: int,
        current: PolicyVersion,
        base_config: dict[str, Any] | None = None,
    ) -> None:
        self.policy = policy
        self.base = base
        self.current = current
        self.base_config = base_config
        super().__init__(
            f"{policy.name} changed since you loaded version {base}: "
            f"version {current.number} was saved by {current.author or 'someone'}",
            "base_version",
        )

    def details(self) -> dict[str, Any]:
        return {
            "base_version": self.base,
            "current_version": self.current.number,
            "current_author": self.current.author,
            "current_message": self.current.message,
            "current_config": self.current.config,
            # What changed between the version the client started from and the stored one.
            "differences": presenters.config_changes(self.base_config or {}, self.current.config),
        }


class PolicyNameError(InputError):
    """A policy name that is empty, too long, or already used in the project."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, "name")


class PinError(InputError):
    """A pin that cannot be placed: no policy to hold it, or no such turn in the session."""


class PolicyKindError(InputError):
    """A planner config where a GC policy is needed (a run, a default, pins), or the other
    way round."""

    def __init__(self, policy: Policy, key: str = "policy") -> None:
        wanted = "planner config" if policy.kind == PolicyKind.GC else "GC policy"
        super().__init__(f"{policy.name} is a {policy.get_kind_display()}, not a {wanted}", key)


class PlannerConfigError(InputError):
    """Planner settings the engine refuses; ``key`` names the setting (``shares.rag``)."""

    def __init__(self, error: gcengine.PlannerError) -> None:
        key, reason = _planner_problem(str(error))
        super().__init__(reason, key)


# How the engine names what it validates in a PlannerError ("planner settings: ttl_policy:
# ...", "section shares: rag: ..."), and where those settings sit in a planner config.
_PLANNER_WHAT = {"planner settings": "", "section shares": "shares"}


def _planner_problem(message: str) -> tuple[str | None, str]:
    """The setting a planner error names (dotted, from the config's top) and its reason."""
    what, _, rest = message.partition(": ")
    if what not in _PLANNER_WHAT or not rest:
        return None, message
    base = _PLANNER_WHAT[what]
    where, _, reason = rest.partition(": ")
    if reason and all(step.isidentifier() for step in where.split(".")):
        return ".".join(filter(None, (base, where))), reason
    return base or None, rest


@dataclass(frozen=True)
class UploadReceipt:
    """What an upload became: a stored session, or a job reading it in the background."""

    filename: str
    session: AgentSession | None = None
    job: IngestJob | None = None
    duplicate: bool = False


def project_default() -> Project:
    project, _ = Project.objects.get_or_create(
        slug=DEFAULT_PROJECT_SLUG, defaults={"name": "Default project"}
    )
    return project


def config_validated(config: Any) -> gcengine.GCConfig:
    """The engine's reading of a gc.json, independent of this server's environment."""
    return gcengine.load_gc_config(config, env={})


def planner_config_validated(config: Any) -> gcengine.PlannerConfig:
    """The engine's reading of planner settings (``PlannerConfigError`` names the one at
    fault)."""
    if isinstance(config, gcengine.PlannerConfig):
        return config
    try:
        return gcengine.PlannerConfig.model_validate(config)
    except gcengine.PlannerError as error:
        raise PlannerConfigError(error) from None


def config_canonical(config: Any, kind: str = PolicyKind.GC) -> dict[str, Any]:
    """What is stored for a policy: the flat gc.json JAATO's own loader accepts, or for a
    planner config every setting the engine reads, defaults written out.

    Every version is stored whole and copied into every run, so one size limit applies to
    every door (a gc.json is a few hundred bytes; the limit leaves room for long pin lists).
    """
    if kind == PolicyKind.PLANNER:
        stored = planner_config_validated(config).model_dump(mode="json")
    else:
        stored = gcengine.dump_gc_config(config_validated(config))
    policy_size_check(len(json.dumps(stored)))
    return stored


def gc_policy_checked(policy: Policy, key: str = "policy") -> Policy:
    """``policy`` when it is a GC policy; a planner config cannot run, pin or be a default."""
    if policy.kind != PolicyKind.GC:
        raise PolicyKindError(policy, key)
    return policy


# --- Uploads ---------------------------------------------------------------------------------


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


def session_upload_file(
    *, project: Project, upload: UploadedFile[Any], actor: Actor = None
) -> UploadReceipt:
    """``session_upload`` of an uploaded file, read whole only when the project lacks it.

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


def session_upload(
    *, project: Project, filename: str, data: bytes, actor: Actor = None
) -> UploadReceipt:
    """Store an uploaded session, or say it is already here.

    Small files are read now, so a malformed one raises ``gcengine.SessionFormatError`` with
    nothing stored; large ones become an ``IngestJob`` for the worker.
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
    """``session_upload`` of a file the project did not hold, ``digest`` its SHA-256."""
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
            transaction.on_commit(partial(tasks.ingest_upload.enqueue, job.pk))
        return UploadReceipt(filename, job=job)
    engine_session = gcengine.load_session(data)
    try:
        with transaction.atomic():
            session = _session_store(
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
    _run_on_upload(session)
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


def sessions_upload(
    *, project: Project, files: Iterable[UploadedFile[Any]], actor: Actor = None
) -> list[UploadOutcome]:
    """Upload several files at once, each on its own: one that is empty, too large or not a
    session file is reported and stores nothing, and the others are stored all the same."""
    return [_upload_one(project, upload, actor) for upload in files]


def uploads_status(outcomes: list[UploadOutcome]) -> int:
    """One status for an upload of several files: 200 when any file was taken, otherwise the
    refusals' own status (413 too large, 500 the server's failure, 400 otherwise or when they
    differ)."""
    if any(o.taken for o in outcomes):
        return 200
    refusals = {o.status for o in outcomes}
    return refusals.pop() if len(refusals) == 1 else 400


def _upload_one(project: Project, upload: UploadedFile[Any], actor: Actor) -> UploadOutcome:
    name = upload.name or "upload.json"
    size = upload.size or 0
    if size == 0:
        return UploadOutcome(name, UploadState.EMPTY, 400, reason="the file is empty")
    try:
        receipt = session_upload_file(project=project, upload=upload, actor=actor)
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
    return UploadOutcome(
        name, UploadState.FAILED, 500, reason=background.internal_error(IngestJob, error)
    )


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


def ingest_job_execute(*, job_id: int) -> None:
    """Read a queued upload; on success store the session, on failure keep only the error."""
    if background.work_claim(IngestJob, job_id, "reading the file and counting tokens"):
        background.work_run(IngestJob, job_id, partial(_ingest_claimed, job_id))


def _ingest_claimed(job_id: int) -> None:
    job = IngestJob.objects.get(pk=job_id)
    _sessions.make_room(job.size_bytes // FILE_BYTES_PER_MESSAGE)
    packed = blobs.blob_of(IngestUpload, job_id, "data")
    if packed is None:
        raise background.WorkLost  # cancelled before the bytes were read
    upload = [storage.unpack_original(packed)]
    del packed
    try:
        # The bytes are handed over, held by nothing else: they go once parsed.
        engine_session = gcengine.load_session(upload.pop())
    except gcengine.SessionFormatError as error:
        # A path deep in a file can be longer than the field; its start says where to look.
        background.work_failed(IngestJob, job_id, str(error), error_path=error.json_path[:400])
        return
    background.work_progress(IngestJob, job_id, f"storing {len(engine_session.history):,} messages")
    # Copied in the database from the upload's row, which ending the job deletes: so the job
    # ends last, and a cancel meanwhile rolls the stored session back.
    original = storage.Original(job.size_bytes, blobs.StoredBlob(IngestUpload, job_id, "data"))
    with transaction.atomic():
        same = AgentSession.objects.filter(project_id=job.project_id, sha256=job.sha256)
        session = same.first()
        created = session is None
        if session is None:
            try:
                session = _session_store(
                    job.project, job.filename, original, job.sha256, engine_session
                )
            except IntegrityError:  # the same file, uploaded twice at once, stored by the other
                session, created = same.get(), False
        background.work_done(IngestJob, job_id, session=session)
    if created:
        _run_on_upload(session)


@transaction.atomic
def _session_store(
    project: Project,
    filename: str,
    original: storage.Original,
    digest: str,
    engine: gcengine.Session,
) -> AgentSession:
    budget = engine.budget
    total = budget.total_tokens()
    session = AgentSession.objects.create(
        project=project,
        label=filename[:300],
        sha256=digest,
        size_bytes=original.size,
        source_format=engine.source_format.value,
        format_version=engine.format_version or "",
        model_name=engine.model or "",
        engine_session_id=engine.session_id[:200],
        context_limit=budget.context_limit,
        context_limit_origin=engine.context_limit_origin.value,
        turn_count=0,  # counted as its turns are written, below
        message_count=len(engine.history),
        total_tokens=total,
        locked_tokens=budget.locked_tokens(),
        preservable_tokens=budget.preservable_tokens(),
        eligible_tokens=budget.gc_eligible_tokens(),
        utilization_percent=budget.utilization_percent(),
        token_counter=engine.token_counter,
        drift=storage.drift_record(engine),
        warnings=list(engine.warnings),
        agent_state=storage.agent_state_record(engine),
    )
    # The turns are written a batch at a time, each before the next is packed, and before the
    # document is: a long session's packed turns and its document are never held together.
    turn_count = 0
    for batch in storage.turn_row_batches(engine):
        _rows_insert(SessionTurn, _TURN_COLUMNS, [(session.pk, *_turn_values(r)) for r in batch])
        turn_count += len(batch)
    session.turn_count = turn_count
    AgentSession.objects.filter(pk=session.pk).update(turn_count=turn_count)
    # By the session's id: a document set on the session would stay cached on it, its bytes
    # and all. Its values are written into the row after it (``blobs``), the original copied
    # there in the database when the upload's row holds it.
    SessionDocument.objects.create(session_id=session.pk, original=b"", engine_session=b"")
    values = {"original": original.packed, "engine_session": storage.pack_session(engine)}
    if not blobs.blobs_set(SessionDocument, session.pk, values):
        raise background.WorkLost  # the upload was cancelled: its bytes are gone
    _budget_store(session, None, budget)
    # What was just read is what a run of it (the default policy, on upload) reads back.
    _sessions.put(_session_key(session), engine)
    return session


# A ``SessionTurn`` row's columns, as ``_turn_values`` gives them after the session's.
_TURN_COLUMNS = (
    "session",
    "position",
    "turn_index",
    "kind",
    "budget_key",
    "budget_label",
    "budget_policy",
    "message_count",
    "tokens",
    "policy",
    "tool_calls",
    "preview",
    "packed",
)


def _turn_values(row: storage.TurnRow) -> tuple[Any, ...]:
    return (
        row.position,
        row.turn_index,
        row.kind,
        row.budget_key[:200],
        row.budget_label[:300],
        row.budget_policy,
        row.message_count,
        row.tokens,
        row.policy,
        row.tool_calls,
        row.preview,
        row.packed,
    )


def _budget_store(
    session: AgentSession, run: GCRun | None, budget: gcengine.InstructionBudget
) -> None:
    BudgetNode.objects.bulk_create(
        (
            BudgetNode(
                session=session,
                run=run,
                path=row.path,
                parent_path=row.parent_path,
                position=row.position,
                depth=row.depth,
                key=row.key[:200],
                label=row.label[:300],
                policy=row.policy,
                tokens=row.tokens,
                child_count=row.child_count,
                message_ids=row.message_ids,
            )
            for row in storage.budget_rows(budget)
        ),
        batch_size=BULK_BATCH,
    )


def _run_on_upload(session: AgentSession) -> None:
    project = session.project
    if not (settings.JAATO_GC_ON_UPLOAD and project.run_default_policy_on_upload):
        return
    if project.default_policy_id is None:
        return
    version = (
        PolicyVersion.objects.filter(policy_id=project.default_policy_id)
        .order_by("-number")
        .first()
    )
    if version is not None:
        run_start(session=session, policy_version=version, trigger="upload")


# --- GC runs ---------------------------------------------------------------------------------


@cache
def plugin_names() -> tuple[str, ...]:
    """The installed GC plugins, for the run form.

    Scanning entry points takes milliseconds, and a newly installed plugin needs a restart
    to be importable anyway, so the list is read once per process.
    """
    return tuple(sorted(gcengine.discover_gc_plugins()))


def run_start(
    *,
    session: AgentSession,
    policy_version: PolicyVersion | None = None,
    config: Any = None,
    plugin: str | None = None,
    trigger: str = "manual",
    context_limit: int | None = None,
    compaction_id: str = "",
    actor: Actor = None,
) -> GCRun:
    """Queue a run of a stored policy version, or of a gc.json given as is, or of both: a
    version's ``config`` changed for this run (an agent's prune: its action, the segments it
    names), recorded as run under that version.

    The gc.json is validated here (``gcengine.ConfigError`` names the key), so a run that is
    queued can only fail for reasons the engine finds while collecting. ``context_limit``
    runs it against another window than the session's own ("what if it were 8,000?");
    ``compaction_id`` runs it on the history just before that compaction the agent performed,
    to set the policy's removals and summary beside the agent's own.
    """
    if context_limit is not None:
        gcengine.context_limit_checked(context_limit)
    compaction_checked(session, compaction_id)
    if policy_version is not None:
        gc_policy_checked(policy_version.policy, "policy_version")
        config = policy_version.config if config is None else config
    if config is None:
        raise gcengine.ConfigError("a run needs a policy version or a gc.json")
    validated = config_with_session_pins(config_validated(config), session)
    plugin_name = plugin or validated.plugin
    installed = gcengine.discover_gc_plugins()
    if plugin_name not in installed:
        names = ", ".join(sorted(installed))
        raise gcengine.PluginError(f"no GC plugin named {plugin_name!r} (installed: {names})")
    with transaction.atomic():
        run = GCRun.objects.create(
            session=session,
            policy_version=policy_version,
            policy_label=str(policy_version) if policy_version is not None else "",
            config=gcengine.dump_gc_config(validated),
            plugin=plugin_name,
            trigger=trigger,
            context_limit=context_limit or session.context_limit,
            compaction_id=compaction_id,
            progress="waiting for a worker",
        )
        audit_record(
            project=session.project,
            actor=actor,
            action=AuditAction.RUN,
            target=f"run {run.pk} of {session.label}",
            target_url=reverse("run_detail", args=[run.pk]),
            detail={
                "session": session.pk,
                "plugin": plugin_name,
                "trigger": trigger,
                "policy_version": policy_version.pk if policy_version else None,
                "context_limit": context_limit,
            },
        )
        transaction.on_commit(partial(tasks.execute_run.enqueue, run.pk))
    return run


def run_execute(*, run_id: int) -> None:
    """Run the engine for a queued run and store everything its pages and exports show."""
    if background.work_claim(GCRun, run_id, "loading the session"):
        background.work_run(GCRun, run_id, partial(_run_execute_claimed, run_id))


def _run_execute_claimed(run_id: int) -> None:
    run = GCRun.objects.select_related("session").get(pk=run_id)
    before = engine_session_of(run.session, run.context_limit, run.compaction_id)
    config = config_validated(run.config)
    background.work_progress(GCRun, run_id, f"collecting with {run.plugin}")
    try:
        outcome = gcengine.run_gc(before, config, plugin=run.plugin)
    except gcengine.GCEngineError as error:
        background.work_failed(GCRun, run_id, str(error))
        return
    result = outcome.result
    if not result.success:
        background.work_failed(
            GCRun,
            run_id,
            result.error or "the strategy reported a failure",
            result=result.model_dump(mode="json", exclude={"removal_list", "stash"}),
        )
        return
    background.work_progress(GCRun, run_id, "storing the ledger")
    _run_store(run, before, outcome)
    # After the run is stored and done, its ledger readable: scoring reads every message the
    # run took out of view, seconds on a long session.
    background.work_scored(
        GCRun, run_id, retention=storage.retention_record(_retention_of(before, outcome))
    )


def _retention_of(
    before: gcengine.Session, outcome: gcengine.GCOutcome
) -> gcengine.AnchorRetention:
    """The run's anchor retention; a scorer that fails says so on the run, which stands."""
    try:
        return gcengine.score_collection(before, outcome.session.history)
    except Exception as error:
        logger.exception("scoring the anchor retention of a run failed")
        return gcengine.AnchorRetention(
            unscorable=f"scoring it failed ({type(error).__name__}); the server log says why"
        )


@transaction.atomic
def _run_store(run: GCRun, before: gcengine.Session, outcome: gcengine.GCOutcome) -> None:
    result = outcome.result
    position_of = before.message_turns()
    removals = [
        (
            seq,
            _SOURCE_VALUES[item.source],
            (item.child_key or "")[:400],
            str(item.reason),
            item.tokens_freed,
            item.message_ids,
            item.turn_index,
            _first_turn(item.message_ids, position_of),
            *_verdict_fields(item.verdict),
        )
        for seq, item in enumerate(result.removal_list)
    ]
    _rows_insert(
        Removal,
        (
            "run",
            "seq",
            "source",
            "child_key",
            "reason",
            "tokens_freed",
            "message_ids",
            "turn_index",
            "turn_position",
            *VERDICT_FIELDS,
        ),
        [(run.pk, *removal) for removal in removals],
    )
    touched = [removal[7] for removal in removals if removal[7] is not None]
    Summary.objects.bulk_create(_summaries(run, outcome, touched, position_of))
    if run.plugin == "gc_reachability":
        _reachability_store(run, before, outcome)
    _budget_store(run.session, run, outcome.budget_after)
    after_turns = storage.after_turns(outcome.budget_before, outcome.budget_after)
    background.work_done_scoring(  # a run cancelled meanwhile raises, and none of this is kept
        GCRun,
        run.pk,
        tokens_before=outcome.budget_before.total_tokens(),
        tokens_after=outcome.budget_after.total_tokens(),
        tokens_freed=outcome.budget_before.total_tokens() - outcome.budget_after.total_tokens(),
        locked_after=outcome.budget_after.locked_tokens(),
        preservable_after=outcome.budget_after.preservable_tokens(),
        eligible_after=outcome.budget_after.gc_eligible_tokens(),
        items_collected=result.items_collected,
        turns_after=outcome.session.turn_count(),
        result=_result_record(result),
        session_after=storage.pack_session_after(outcome.session, before),
        after_turns=storage.packed(after_turns),
    )


def _result_record(result: gcengine.GCResult) -> dict[str, Any]:
    """A result as ``GCRun.result`` keeps it: the ledger and the stash have rows of their own."""
    return result.model_dump(mode="json", exclude={"removal_list", "stash"})


# A ledger item's reachability figures and sentence, as ``Removal`` stores them.
VERDICT_FIELDS = ("reachable", "score", "explanation", "action")


_SOURCE_VALUES = {source: source.value for source in gcengine.InstructionSource}


def _first_turn(message_ids: list[str], position_of: dict[str, int]) -> int | None:
    """The first turn a ledger item takes from. A long session's run has thirteen thousand
    items, most naming one message, whose turn is looked up alone (a generator and ``min``
    for each cost twice as much)."""
    if len(message_ids) == 1:
        return position_of.get(message_ids[0])
    return min((position_of[i] for i in message_ids if i in position_of), default=None)


def _verdict_fields(verdict: gcengine.RemovalVerdict | None) -> tuple[Any, ...]:
    """``VERDICT_FIELDS`` of a ledger item: empty for strategies that give no verdict."""
    if verdict is None:
        return (None, None, "", "")
    return (verdict.reachable, verdict.score, verdict.sentence, verdict.action)


def _reachability_store(run: GCRun, before: gcengine.Session, outcome: gcengine.GCOutcome) -> None:
    """What a reachability run adds to its ledger: the stash (whole, to restore from, and one
    row a segment, to list and search) and why it kept every other segment."""
    stash = outcome.result.stash
    if stash is not None:
        removal_of = dict(Removal.objects.filter(run=run).values_list("child_key", "pk"))
        StashedSegment.objects.bulk_create(
            (
                StashedSegment(
                    run=run,
                    removal_id=removal_of[segment.segment_id[:400]],
                    segment_id=segment.segment_id[:400],
                    kind=segment.kind.value,
                    turn_index=segment.turn_index,
                    tokens=segment.tokens,
                    score=segment.score,
                    reachable=segment.reachable,
                    reason=segment.reason,
                    anchors=segment.shown_anchors,
                    anchors_text="\n".join(segment.shown_anchors),
                    text=segment.text,
                )
                for segment in stash.segments
            ),
            batch_size=BULK_BATCH,
        )
        GCRun.objects.filter(pk=run.pk).update(stash=storage.pack_stash(stash))
    analysis = gcengine.analyze(before, config_validated(run.config))
    KeptSegment.objects.bulk_create(
        (
            KeptSegment(
                run=run,
                position=position,
                segment_id=segment.segment_id[:400],
                kind=segment.kind.value,
                turn_index=segment.turn_index,
                tokens=segment.tokens,
                score=segment.score,
                reachable=segment.reachable,
                root=segment.root,
                reason=segment.reason,
            )
            for position, segment in enumerate(analysis.segments)
            if segment.proposed == "keep"
        ),
        batch_size=BULK_BATCH,
    )


def _preparer(field: models.Field[Any, Any]) -> Callable[[Any], Any]:
    """A column's value as the database takes it. A JSON value is written as JSON text by
    pydantic-core, which every database takes for a JSON column: a run's ledger has a list of
    message ids on each of its 13,000 rows, and ``JSONField.get_db_prep_save`` (``json.dumps``
    through the database's adapter) cost 3 microseconds a row, this a fifth of one."""
    if isinstance(field, models.JSONField):
        assert field.encoder is None, f"{field} has an encoder of its own, which this ignores"
        return lambda value: None if value is None else to_json(value).decode()
    return lambda value: field.get_db_prep_save(value, connection)


def _rows_insert(
    model: type[models.Model], names: tuple[str, ...], rows: list[tuple[Any, ...]]
) -> None:
    """Insert plain values as rows of ``model``, one value per name of ``names``.

    A long session is stored as tens of thousands of rows (its turns, a run's ledger), and
    ``bulk_create`` spent most of their time building a model instance for each and preparing
    every value through its field; here only values a column cannot take as they are (JSON,
    bytes) go through their field.
    """
    fields = {field.name: field for field in model._meta.concrete_fields}
    prepared = [
        (number, _preparer(fields[name]))
        for number, name in enumerate(names)
        if isinstance(fields[name], models.JSONField | models.BinaryField)
    ]
    quote = connection.ops.quote_name
    sql = (
        f"INSERT INTO {quote(model._meta.db_table)} "
        f"({', '.join(quote(str(fields[name].column)) for name in names)}) "
        f"VALUES ({', '.join(['%s'] * len(names))})"
    )

    def row(values: tuple[Any, ...]) -> tuple[Any, ...]:
        if not prepared:
            return values
        ready = list(values)
        for number, prepare in prepared:
            ready[number] = prepare(ready[number])
        return tuple(ready)

    with connection.cursor() as cursor:
        for start in range(0, len(rows), BULK_BATCH):
            cursor.executemany(sql, [row(values) for values in rows[start : start + BULK_BATCH]])


def _summaries(
    run: GCRun,
    outcome: gcengine.GCOutcome,
    touched: list[int],
    position_of: dict[str, int],
) -> list[Summary]:
    """The chain after the run: summaries it kept and the one it wrote, in history order;
    ``touched`` are the positions of the turns the run took something from; ``position_of``
    places each message of the session before by its turn (one the run wrote is not there)."""
    figures = storage.message_figures(outcome.budget_after)
    # A new summary goes in before the first turn anything was taken from.
    first_touched = min(touched, default=None)
    rows = []
    for message in outcome.session.history:
        if message.kind is not gcengine.MessageKind.SUMMARY:
            continue
        written = message.message_id not in position_of
        number = message.metadata.get("summary_number")
        rows.append(
            Summary(
                run=run,
                number=number if isinstance(number, int) else None,
                message_id=message.message_id,
                text=message.text,
                tokens=figures[message.message_id][0] if message.message_id in figures else 0,
                covers_turns=list(message.metadata.get("covers_turns") or []),
                covers_summary=message.metadata.get("covers_summary"),
                summarizer=str(message.metadata.get("summarizer") or ""),
                written_by_run=written,
                inserted_before_position=first_touched
                if written
                else position_of.get(message.message_id),
            )
        )
    return rows


# Sessions read back are kept in memory, by the messages they hold: one 10,000-turn session
# has about 27,000. The one read last always stays, and room is made before a session is read
# (the stored one by its message count, an upload by its size), so a worker reading many large
# sessions holds one at a time, not the last beside the next. Uploads are immutable and the
# engine never changes a session it is handed, so an entry never goes stale; the key holds the
# counter the figures were made with.
SESSION_CACHE_MESSAGES = 30_000
# What a message takes of a file, at least most often (1.7 KB in JAATO's files, several KB in
# Claude Code's): a file's size over this is how many messages reading it may build. Smaller
# messages only leave a session cached a while longer than they would.
FILE_BYTES_PER_MESSAGE = 1000
_sessions: BoundedLRU[tuple[int, str, str], gcengine.Session] = BoundedLRU(
    SESSION_CACHE_MESSAGES, lambda engine: len(engine.history)
)


def clear_caches() -> None:
    """Forget the sessions read back (as a worker that has read none)."""
    _sessions.clear()


def _session_key(session: AgentSession) -> tuple[int, str, str]:
    return (session.pk, session.sha256, session.token_counter)


def engine_session_of(
    session: AgentSession, context_limit: int | None = None, compaction_id: str = ""
) -> gcengine.Session:
    """The engine's session as uploaded; against ``context_limit`` tokens when one is given;
    as it stood just before the agent's own compaction ``compaction_id``, when one is named.
    Read from its rows once, then from memory."""
    engine = _sessions.get(_session_key(session))
    if engine is None:
        _sessions.make_room(session.message_count)
        engine = _stored_engine_session(session)
        _sessions.put(_session_key(session), engine)
    if compaction_id:
        engine = gcengine.history_before(engine, compaction_id)
    return gcengine.with_context_limit(engine, context_limit) if context_limit else engine


def _stored_engine_session(session: AgentSession) -> gcengine.Session:
    """The session as stored: its document and its turn rows, read back without counting.

    With the cycle collector paused, in a web process too: reading a 10,000-turn session
    back makes about 500,000 objects, none of them in a cycle, and the collections they set
    off walked every object of the process, which nearly doubled the reading (0.36 s paused,
    0.66 s not). Other requests go on meanwhile; the next full collection collects their cycles.
    The session read back goes to the collector's oldest generation as the pause ends
    (``cyclic_gc_paused``): walked as young objects, it cost a web request 0.12 s more.
    """
    document = SessionDocument.objects.values_list("engine_session", flat=True).get(session=session)
    turns = storage.unpack_turns(
        SessionTurn.objects.filter(session=session)
        .order_by("position")
        .values_list("packed", flat=True)
        .iterator(chunk_size=2000)
    )
    with gcengine.cyclic_gc_paused():
        return storage.unpack_session(document, turns)


def session_after_of(run: GCRun) -> gcengine.Session | None:
    """The session as the run left it (None before it finished), for exports."""
    packed = GCRun.objects.filter(pk=run.pk).values_list("session_after", flat=True).first()
    if packed is None:
        return None
    before = engine_session_of(run.session, run.context_limit, run.compaction_id)
    return storage.unpack_session_after(packed, before)


def compaction_checked(session: AgentSession, compaction_id: str) -> str:
    """``compaction_id`` if the session holds that compaction (so a queued run or replay of
    the history before it cannot fail for naming none)."""
    known = {c["id"] for c in session.agent_state.get("compactions") or []}
    if compaction_id and compaction_id not in known:
        raise gcengine.CompactionNotFoundError(
            f"{session.label} has no compaction {compaction_id!r}"
        )
    return compaction_id


# --- Replays ---------------------------------------------------------------------------------


def replay_request(
    *,
    session: AgentSession,
    policy_version: PolicyVersion | None = None,
    config: Any = None,
    context_limit: int | None = None,
    compaction_id: str = "",
    actor: Actor = None,
) -> Replay:
    """The replay of a session under a stored version or a gc.json (against ``context_limit``
    tokens instead of the session's window, when given): the stored one, or a newly queued
    one. Asked for by a version, the replay names that version from then on (another version
    with the same gc.json draws the same chart)."""
    if policy_version is not None:
        gc_policy_checked(policy_version.policy, "policy_version")
        config = policy_version.config if config is None else config
    if config is None:
        raise gcengine.ConfigError("a replay needs a policy version or a gc.json")
    if context_limit is not None:
        gcengine.context_limit_checked(context_limit)
    compaction_checked(session, compaction_id)
    canonical = gcengine.dump_gc_config(config_with_session_pins(config_validated(config), session))
    window = context_limit if context_limit != session.context_limit else None
    keyed: Any = canonical
    if window or compaction_id:
        keyed = {"gc.json": canonical, "context_limit": window, "compaction": compaction_id}
    digest = hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()
    label = str(policy_version) if policy_version is not None else ""
    with transaction.atomic():
        replay, created = Replay.objects.get_or_create(
            session=session,
            config_digest=digest,
            defaults={
                "config": canonical,
                "context_limit": window,
                "compaction_id": compaction_id,
                "progress": "waiting for a worker",
                "policy_version": policy_version,
                "policy_label": label,
            },
        )
        # A replay that failed (or was cancelled) is tried again when asked for again.
        retried = not created and bool(
            Replay.objects.filter(pk=replay.pk, status=JobStatus.FAILED).update(
                status=JobStatus.QUEUED, error="", progress="waiting for a worker", attempts=0
            )
        )
        if created or retried:
            audit_record(
                project=session.project,
                actor=actor,
                action=AuditAction.REPLAY,
                target=f"replay of {session.label}",
                target_url=reverse("replay_detail", args=[replay.pk]),
                detail={"session": session.pk, "plugin": canonical.get("type"), "policy": label},
            )
            transaction.on_commit(partial(tasks.execute_replay.enqueue, replay.pk))
        if retried:
            replay.refresh_from_db()
        else:
            if policy_version is not None and replay.policy_version_id != policy_version.pk:
                replay.policy_version, replay.policy_label = policy_version, label
                replay.save(update_fields=["policy_version", "policy_label"])
            if replay.status == JobStatus.DONE and (
                "requests" not in (replay.series or {}) or replay.unscored_because
            ):
                # Drawn before replays recorded their requests and scored their collections,
                # or its scoring did not finish: drawn again, so its page can show both.
                Replay.objects.filter(pk=replay.pk).update(
                    status=JobStatus.QUEUED,
                    progress="waiting for a worker",
                    series=None,
                    unscored_because="",
                )
                replay.refresh_from_db()
                transaction.on_commit(partial(tasks.execute_replay.enqueue, replay.pk))
    return replay


def replay_execute(*, replay_id: int) -> None:
    if background.work_claim(Replay, replay_id, "replaying turn by turn"):
        background.work_run(Replay, replay_id, partial(_replay_claimed, replay_id))


def _replay_claimed(replay_id: int) -> None:
    """Replay, store the chart, then score each collection's anchor retention and store the
    series again with the scores.

    Scoring is most of a long replay (a 10,000-turn session in continuous mode: about 2.5 s
    replayed, 9 s more scored), so the chart and its cost are shown first, as a run's ledger
    is before its score. Scoring replays the session again: keeping every collection's
    context until then would hold the session hundreds of times over. A replay is
    deterministic, so the second pass draws the same chart; but with the LLM summarizer each
    collection calls the endpoint, whose summaries may differ, and calling it twice costs
    twice: such a replay is scored as it is drawn, in one pass."""
    replay = Replay.objects.select_related("session").get(pk=replay_id)
    try:
        engine = engine_session_of(replay.session, replay.context_limit, replay.compaction_id)
        config = config_validated(replay.config)
        scored_at_once = config.plugin_config.get("summarizer") == "llm"
        series = replay_series_of(engine, config, scored=scored_at_once)
    except gcengine.GCEngineError as error:
        background.work_failed(Replay, replay_id, str(error))
        return
    if scored_at_once:
        background.work_done(Replay, replay_id, series=series, unscored_because="")
        return
    background.work_done_scoring(Replay, replay_id, series=series, unscored_because="")
    background.work_scored(Replay, replay_id, **_replay_scores(engine, config, series))


# What a replay says when replaying it again to score it collected differently.
REPLAYED_DIFFERENTLY = (
    "replayed again to be scored, the policy collected differently (its plugin does not "
    "collect the same way twice), so the chart stands without scores"
)


def _replay_scores(
    engine: gcengine.Session, config: gcengine.GCConfig, drawn: dict[str, Any]
) -> dict[str, Any]:
    """The series ``drawn`` with each collection scored, from a second replay that scores
    them; a scorer that fails, or a second replay that differs from the chart (a plugin that
    does not collect the same way twice), says so on the replay, whose chart stands."""
    try:
        scored = replay_series_of(engine, config, scored=True)
    except Exception as error:
        logger.exception("scoring the anchor retention of a replay failed")
        return {
            "unscored_because": f"scoring it failed ({type(error).__name__}); "
            "the server log says why"
        }
    if _without_scores(scored) != drawn:
        return {"unscored_because": REPLAYED_DIFFERENTLY}
    return {"series": scored}


def _without_scores(series: dict[str, Any]) -> dict[str, Any]:
    events = [{k: v for k, v in e.items() if k != "retention"} for e in series["events"]]
    return {**series, "events": events}


def replay_series_of(
    engine: gcengine.Session, config: gcengine.GCConfig, *, scored: bool
) -> dict[str, Any]:
    """The stored series of a replay: the policy's (``scored``: with each collection's anchor
    retention), and the requests the same session sends without GC, which its cost is
    weighed against.

    With the cycle collector paused in a web process too (the editor's chart): a replay
    makes millions of short-lived objects, none in a cycle, and the collections they set off
    walked the whole process (a 10,000-turn continuous replay: 2.4 s paused, 2.75 s not)."""
    with gcengine.cyclic_gc_paused():
        simulation = gcengine.simulate(engine, config, score_anchors=scored)
        without_gc = gcengine.requests_without_gc(engine)
    return storage.replay_series(simulation, without_gc, scored=scored)


# --- Policies --------------------------------------------------------------------------------

POLICY_NAME_MAX = 200


def _policy_name_checked(project: Project, name: str, kind: str) -> str:
    name = name.strip()
    noun = PolicyKind(kind).label if kind != PolicyKind.GC else "policy"
    if not name:
        raise PolicyNameError(f"give the {noun} a name")
    if len(name) > POLICY_NAME_MAX:
        raise PolicyNameError(f"at most {POLICY_NAME_MAX} characters")
    if Policy.objects.filter(project=project, kind=kind, name=name).exists():
        raise PolicyNameError(f"a {noun} named {name!r} already exists")
    return name


@transaction.atomic
def policy_create(
    *,
    project: Project,
    name: str,
    config: Any,
    message: str = "",
    actor: Actor = None,
    kind: str = PolicyKind.GC,
) -> Policy:
    """A new policy with ``config`` as version 1: a gc.json, or with ``kind`` "planner"
    planner settings (each kind has its own names)."""
    if kind not in PolicyKind.values:
        raise InputError(f"kind is {' or '.join(PolicyKind.values)}, not {kind!r}", "kind")
    stored = config_canonical(config, kind)
    name = _policy_name_checked(project, name, kind)
    try:
        with transaction.atomic():
            policy = Policy.objects.create(project=project, name=name, kind=kind)
    except IntegrityError:
        # Someone created the same name between the check and the insert.
        raise PolicyNameError(f"a policy named {name!r} already exists") from None
    version = PolicyVersion.objects.create(
        policy=policy,
        number=1,
        config=stored,
        message=message or "created",
        author=_author(actor),
    )
    _policy_audit(version, actor)
    return policy


def policy_import(
    *,
    project: Project,
    data: bytes | str,
    filename: str = "",
    name: str = "",
    message: str = "",
    actor: Actor = None,
) -> Policy:
    """Create a policy from a gc.json file's bytes or pasted text, in either shape.

    Without a name, the policy is named after the file (``budget-80-60.json`` gives
    ``budget-80-60``); a file that says nothing by its name (``gc.json``, JAATO's own name for
    every policy, or pasted text) is named after its strategy, numbered if that name is taken.
    Text is encoded before it reaches the engine, which would read a string that does not look
    like JSON as a path on this server.
    """
    raw = data.encode() if isinstance(data, str) else data
    policy_size_check(len(raw))
    config = config_validated(raw)
    given = name.strip()
    if not given:
        named = policy_name_from_file(filename) or f"Imported {config.strategy_name} policy"
        given = _policy_name_free(project, named)
    return policy_create(
        project=project, name=given, config=raw, message=message or "imported", actor=actor
    )


def policy_size_check(size: int) -> None:
    """Refuse a gc.json over the limit from its size, before it is read or parsed."""
    if size > POLICY_MAX_BYTES:
        raise UploadTooLarge(size, POLICY_MAX_BYTES, what="gc.json")


def policy_name_from_file(filename: str) -> str:
    """A policy's name from its file's (``budget-80-60.json`` gives ``budget-80-60``); empty
    for a name that tells nothing: ``gc.json`` is what JAATO calls every policy file."""
    stem = PurePath(filename).name.removesuffix(".json").strip()
    return "" if stem == "gc" else stem[:POLICY_NAME_MAX]


def _policy_name_free(project: Project, name: str) -> str:
    """``name``, or ``name 2``, ``name 3``... whichever the project does not use yet."""
    taken = set(
        Policy.objects.filter(
            project=project, kind=PolicyKind.GC, name__startswith=name
        ).values_list("name", flat=True)
    )
    candidate, number = name, 1
    while candidate in taken:
        number += 1
        candidate = f"{name} {number}"
    return candidate


def _author(actor: Actor) -> str:
    """The name stored on a version; "system" for the demo loader and other scripts."""
    return actor_name(actor)


def _policy_audit(version: PolicyVersion, actor: Actor, action: AuditAction | None = None) -> None:
    policy = version.policy
    audit_record(
        project=policy.project,
        actor=actor,
        action=action or AuditAction.POLICY_SAVE,
        target=f"{policy.name} version {version.number}",
        target_url=reverse("policy_versions", args=[policy.pk]),
        detail={
            "policy": policy.pk,
            "kind": policy.kind,
            "version": version.number,
            "message": version.message,
        },
    )


def _latest_locked(policy: Policy) -> PolicyVersion:
    """The newest version, with the policy row locked until the transaction ends."""
    Policy.objects.select_for_update().filter(pk=policy.pk).get()
    current = policy.versions.order_by("-number").first()
    assert current is not None  # every policy is created with version 1
    return current


@transaction.atomic
def policy_save(
    *, policy: Policy, config: Any, base_number: int, message: str = "", actor: Actor = None
) -> PolicyVersion:
    """Store a new version, unless someone saved since ``base_number`` was loaded."""
    stored = config_canonical(config, policy.kind)
    current = _latest_locked(policy)
    if current.number != base_number:
        base = policy.versions.filter(number=base_number).values_list("config", flat=True).first()
        raise PolicyConflict(policy, base_number, current, base)
    version = PolicyVersion.objects.create(
        policy=policy,
        number=current.number + 1,
        config=stored,
        message=message,
        author=_author(actor),
    )
    _policy_audit(version, actor)
    return version


def policy_restore(
    *, policy: Policy, number: int, base_number: int | None = None, actor: Actor = None
) -> PolicyVersion:
    """Store version ``number``'s gc.json again, as a new version "restored version N".

    History is never rewritten: the restore is itself a version, so it can be undone the same
    way. ``base_number`` guards against restoring over a save the user has not seen.
    """
    old = policy.versions.get(number=number)
    with transaction.atomic():
        current = _latest_locked(policy)
        base = current.number if base_number is None else base_number
        return policy_save(
            policy=policy,
            config=old.config,
            base_number=base,
            message=f"restored version {number}",
            actor=actor,
        )


@dataclass(frozen=True)
class PinChange:
    """Pins to add and to take away, by stable turn index and by message id."""

    pin_turns: tuple[int, ...] = ()
    unpin_turns: tuple[int, ...] = ()
    pin_messages: tuple[str, ...] = ()
    unpin_messages: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.pin_turns or self.unpin_turns or self.pin_messages or self.unpin_messages)

    def describe(self) -> str:
        """ "pinned turns 3, 5; unpinned message m-12", the default version message."""
        parts = []
        for verb, turns, ids in (
            ("pinned", self.pin_turns, self.pin_messages),
            ("unpinned", self.unpin_turns, self.unpin_messages),
        ):
            if turns:
                noun = "turn" if len(turns) == 1 else "turns"
                parts.append(f"{verb} {noun} {', '.join(str(t) for t in sorted(turns))}")
            if ids:
                noun = "message" if len(ids) == 1 else "messages"
                parts.append(f"{verb} {noun} {', '.join(sorted(ids))}")
        return "; ".join(parts)


def policy_pins_change(
    *,
    policy: Policy,
    change: PinChange,
    message: str = "",
    session: AgentSession | None = None,
    actor: Actor = None,
) -> PolicyVersion:
    """Pin and unpin turns and messages in a policy, for every session it runs on, as one new
    version (with ``message``, or one that lists the change). A change that leaves the pins as
    they are stores nothing and returns the newest version. With ``session``, every turn and
    message pinned must exist in it."""
    if policy.kind != PolicyKind.GC:
        raise PinError(f"{policy.name} is a planner config: only a GC policy holds pins", "policy")
    if not change:
        raise PinError("name at least one turn or message to pin or unpin", "turn_index")
    if session is not None:
        _pin_targets_check(session, change.pin_turns, change.pin_messages)
    with transaction.atomic():
        current = _latest_locked(policy)
        config = dict(current.config)
        turns = set(config.get("pinned_turn_indices") or [])
        ids = list(config.get("pinned_message_ids") or [])
        new_turns = (turns | set(change.pin_turns)) - set(change.unpin_turns)
        unpinned = set(change.unpin_messages)
        new_ids = [i for i in dict.fromkeys([*ids, *change.pin_messages]) if i not in unpinned]
        if new_turns == turns and new_ids == ids:
            return current
        config["pinned_turn_indices"] = sorted(new_turns)
        config["pinned_message_ids"] = new_ids
        version = PolicyVersion.objects.create(
            policy=policy,
            number=current.number + 1,
            config=config_canonical(config),
            message=(message.strip() or change.describe())[:500],
            author=_author(actor),
        )
        pinned_more = bool(new_turns - turns) or bool(set(new_ids) - set(ids))
        _policy_audit(version, actor, AuditAction.PIN if pinned_more else AuditAction.UNPIN)
    return version


def session_pins(*, session: AgentSession) -> tuple[set[int], set[str]]:
    """The turns (stable indices) and messages pinned in this session."""
    turns: set[int] = set()
    ids: set[str] = set()
    for turn_index, message_id in session.pins.values_list("turn_index", "message_id"):
        if turn_index is not None:
            turns.add(turn_index)
        else:
            ids.add(message_id)
    return turns, ids


@transaction.atomic
def session_pin(
    *,
    session: AgentSession,
    turn_index: int | None = None,
    message_id: str | None = None,
    pinned: bool | None = None,
    actor: Actor = None,
) -> bool:
    """Pin or unpin one turn (stable index) or message in this session only; ``pinned`` None
    toggles. Every later run, preview and replay of the session keeps what is pinned, with
    any policy. Returns whether the item is pinned now."""
    if (turn_index is None) == (message_id is None):
        raise PinError("give either a turn index or a message id", "turn_index")
    _pin_targets_check(
        session,
        () if turn_index is None else (turn_index,),
        () if message_id is None else (message_id,),
    )
    existing = session.pins.filter(
        turn_index=turn_index, message_id=message_id or ""
    ).select_for_update()
    now = not existing.exists() if pinned is None else pinned
    if now == existing.exists():
        return now
    noun = f"turn {turn_index}" if turn_index is not None else f"message {message_id}"
    if now:
        try:
            with transaction.atomic():
                SessionPin.objects.create(
                    session=session,
                    turn_index=turn_index,
                    message_id=message_id or "",
                    author=_author(actor),
                )
        except IntegrityError:
            return True  # pinned by someone else at the same moment, and recorded by them
    else:
        existing.delete()
    audit_record(
        project=session.project,
        actor=actor,
        action=AuditAction.PIN if now else AuditAction.UNPIN,
        target=f"{noun} of {session.label}",
        target_url=reverse("session_detail", args=[session.pk]),
        detail={"session": session.pk, "turn_index": turn_index, "message_id": message_id},
    )
    return now


def config_with_session_pins(config: gcengine.GCConfig, session: AgentSession) -> gcengine.GCConfig:
    """The policy as it runs on this session: its own pins and the session's together."""
    turns, ids = session_pins(session=session)
    if turns <= set(config.pinned_turn_indices) and ids <= set(config.pinned_message_ids):
        return config
    data = gcengine.dump_gc_config(config)
    data["pinned_turn_indices"] = sorted(set(config.pinned_turn_indices) | turns)
    data["pinned_message_ids"] = list(dict.fromkeys([*config.pinned_message_ids, *sorted(ids)]))
    return config_validated(data)


def _pin_targets_check(
    session: AgentSession, turn_indices: Iterable[int], message_ids: Iterable[str]
) -> None:
    turns = SessionTurn.objects.filter(session=session)
    wanted_turns = set(turn_indices)
    found = set(turns.filter(turn_index__in=wanted_turns).values_list("turn_index", flat=True))
    missing_turns = sorted(wanted_turns - found)
    if missing_turns:
        shown = ", ".join(str(t) for t in missing_turns)
        noun = "turn" if len(missing_turns) == 1 else "turns"
        raise PinError(f"{session.label} has no {noun} {shown}", "turn_index")
    wanted_ids = set(message_ids)
    if wanted_ids:
        # Messages are stored packed, turn by turn; message pins are rare, so scan.
        for packed in turns.values_list("packed", flat=True).iterator():
            wanted_ids -= {m.message_id for m in storage.unpack_turn(packed)[0]}
            if not wanted_ids:
                return
        raise PinError(f"{session.label} has no message {sorted(wanted_ids)[0]!r}", "message_id")


def policy_apply(
    *,
    version: PolicyVersion,
    sessions: list[AgentSession],
    trigger: str = "manual",
    actor: Actor = None,
) -> list[GCRun]:
    """Queue one run of ``version`` per session; they run in the background, in order."""
    with transaction.atomic():
        return [
            run_start(session=s, policy_version=version, trigger=trigger, actor=actor)
            for s in sessions
        ]


@transaction.atomic
def project_set_default_policy(
    *, project: Project, policy: Policy | None, actor: Actor = None
) -> None:
    if policy is not None:
        gc_policy_checked(policy)
    Project.objects.filter(pk=project.pk).update(default_policy=policy)
    project.default_policy = policy
    audit_record(
        project=project,
        actor=actor,
        action=AuditAction.POLICY_DEFAULT,
        target=policy.name if policy else "no default policy",
        target_url=reverse("policy_list"),
        detail={"policy": policy.pk if policy else None},
    )


# --- Archive and delete ----------------------------------------------------------------------


def item_described(item: AgentSession | GCRun | Policy) -> tuple[str, str, Project]:
    """How pages and the audit log name an item: its kind, its name, and its project."""
    if isinstance(item, AgentSession):
        return "session", item.label, item.project
    if isinstance(item, GCRun):
        return "run", f"run {item.pk} of {item.session.label}", item.session.project
    return ("planner config" if item.is_planner else "policy"), item.name, item.project


@transaction.atomic
def archive_set(
    *, item: AgentSession | GCRun | Policy, archived: bool, actor: Actor = None
) -> None:
    """Hide a session, run or policy from lists and pickers (or show it again). Nothing is
    removed: an archived item still opens by its address, and its runs and comments stay."""
    if (item.archived_at is not None) == archived:
        return
    if isinstance(item, Policy) and archived and item.project.default_policy_id == item.pk:
        # An archived policy is offered nowhere, so it cannot go on running on every upload.
        project_set_default_policy(project=item.project, policy=None, actor=actor)
    item.archived_at = timezone.now() if archived else None
    type(item).objects.filter(pk=item.pk).update(archived_at=item.archived_at)
    kind, name, project = item_described(item)
    audit_record(
        project=project,
        actor=actor,
        action=AuditAction.ARCHIVE if archived else AuditAction.UNARCHIVE,
        target=f"{kind} {name}" if kind != "run" else name,
        target_url=_url_of(item),
        detail={"kind": kind, "id": item.pk},
    )


@dataclass(frozen=True)
class DeletionPlan:
    """What deleting an item takes with it, for the page that asks to confirm."""

    kind: str
    name: str
    runs: int = 0
    replays: int = 0
    comments: int = 0
    versions: int = 0
    default_policy: bool = False


def deletion_plan(*, item: AgentSession | GCRun | Policy) -> DeletionPlan:
    kind, name, project = item_described(item)
    if isinstance(item, AgentSession):
        return DeletionPlan(
            kind,
            name,
            runs=item.runs.count(),
            replays=item.replays.count(),
            comments=item.runs.aggregate(n=Count("comments"))["n"] or 0,
        )
    if isinstance(item, GCRun):
        return DeletionPlan(kind, name, comments=item.comments.count())
    return DeletionPlan(
        kind,
        name,
        versions=item.versions.count(),
        comments=item.versions.aggregate(n=Count("comments"))["n"] or 0,
        default_policy=project.default_policy_id == item.pk,
    )


@transaction.atomic
def item_delete(*, item: AgentSession | GCRun | Policy, actor: Actor = None) -> None:
    """Delete a session (with its original upload, turns, runs, replays and their comments),
    a run (with its ledger, summaries and comments), or a policy (with its versions; runs of
    it keep the gc.json they used). The audit log keeps a record of it."""
    kind, name, project = item_described(item)
    plan = deletion_plan(item=item)
    pk = item.pk
    if isinstance(item, AgentSession):
        # A budget node may belong to one of the session's runs as well: delete them first.
        BudgetNode.objects.filter(session=item).delete()
    item.delete()
    audit_record(
        project=project,
        actor=actor,
        action=AuditAction.DELETE,
        target=f"{kind} {name}" if kind != "run" else name,
        detail={"kind": kind, "id": pk, **{k: v for k, v in vars(plan).items() if v}},
    )


def _url_of(item: AgentSession | GCRun | Policy) -> str:
    if isinstance(item, AgentSession):
        return reverse("session_detail", args=[item.pk])
    if isinstance(item, GCRun):
        return reverse("run_detail", args=[item.pk])
    return reverse("policy_versions", args=[item.pk])


# --- Restoring from a stash ------------------------------------------------------------------


class RestoreError(InputError):
    """A restore that cannot be made: a run that stashed nothing, or segments it did not
    stash (or none at all)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, "segments")


def stash_restore(*, run: GCRun, segment_ids: list[str], actor: Actor = None) -> AgentSession:
    """A new session: the one the run left, with the chosen stashed segments back where they
    were. The run, its session and the original upload stay as they are; the new session
    records the run it derives from and what was restored, and is in the audit log. Restoring
    the same segments again gives the session made the first time."""
    wanted = list(dict.fromkeys(i for i in segment_ids if i))
    if not wanted:
        raise RestoreError("choose at least one stashed segment to restore")
    packed = GCRun.objects.filter(pk=run.pk).values_list("stash", flat=True).first()
    after = session_after_of(run)
    if packed is None or after is None:
        raise RestoreError(f"run {run.pk} stashed nothing to restore")
    stash = storage.unpack_stash(bytes(packed))
    known = {segment.segment_id for segment in stash.segments}
    unknown = [i for i in wanted if i not in known]
    if unknown:
        raise RestoreError(f"run {run.pk} stashed no segment {unknown[0]!r}")
    restored = gcengine.restore(after, stash, wanted)
    session = run.session
    noun = "segment" if len(wanted) == 1 else "segments"
    label = f"{session.label} (run {run.pk}, {len(wanted):,} {noun} restored)"
    with transaction.atomic():
        derived, made = _derived_store(run, restored, label, wanted)
        if made:
            audit_record(
                project=session.project,
                actor=actor,
                action=AuditAction.RESTORE,
                target=f"{len(wanted):,} {noun} from run {run.pk} of {session.label}",
                target_url=reverse("session_detail", args=[derived.pk]),
                detail={"run": run.pk, "session": derived.pk, "segments": wanted},
            )
    return derived


def run_result_session(*, run: GCRun) -> AgentSession | None:
    """The session a done run left, stored as a session of its own (derived from the run, as a
    restore's is) so it can be read, pinned, collected and restored into like an upload; the
    same one each time. None while the run is not done. The run's own audit event covers it."""
    after = session_after_of(run)
    if after is None:
        return None
    label = f"{run.session.label} (after run {run.pk})"
    with transaction.atomic():
        return _derived_store(run, after, label, [])[0]


def _derived_store(
    run: GCRun, engine: gcengine.Session, label: str, restored: list[str]
) -> tuple[AgentSession, bool]:
    """``engine`` stored as a session derived from ``run``, with the segments ``restored`` into
    it; the project's session of the same content when there is one (and False)."""
    data = gcengine.dump_session(engine).encode()
    digest = hashlib.sha256(data).hexdigest()
    project = run.session.project
    existing = AgentSession.objects.filter(project=project, sha256=digest).first()
    if existing is not None:
        return existing, False
    derived = _session_store(project, label[:300], storage.original_of(data), digest, engine)
    AgentSession.objects.filter(pk=derived.pk).update(
        derived_from_run=run, restored_segments=restored
    )
    derived.derived_from_run, derived.restored_segments = run, restored
    return derived, True
