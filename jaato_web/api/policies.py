"""Policies: gc.json files stored with versions, imported and exported as JAATO reads them,
previewed and compared on sessions, pinned, restored, made the default and applied in bulk.

Every operation calls the services, selectors and dry runs the pages call, so the API accepts
and refuses exactly what the editor does; an engine refusal is a 400 naming the gc.json key.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import File, Form, Router, Schema, Status, UploadedFile
from pydantic import Field

import gcengine
from jaato_web.api.auth import DELETE, EDIT_POLICY, PIN, RUN, VIEW, access_of, project_of
from jaato_web.api.schemas import (
    ApplyIn,
    ApplyOut,
    ArchiveIn,
    ArchiveOut,
    CompareIn,
    CompareOut,
    ConfigRef,
    DefaultOut,
    Id,
    Index,
    Kind,
    ObjectIn,
    PolicyIn,
    PolicyOut,
    PolicyPinsIn,
    PolicyPinsOut,
    PolicyVersionIn,
    PolicyVersionOut,
    PreviewIn,
    PreviewOut,
    Problem,
    RestoreIn,
    VersionCompareOut,
)
from jaato_web.dashboard import (
    background,
    presenters,
    previews,
    selectors,
    services,
    storage,
)
from jaato_web.dashboard.models import (
    AgentSession,
    GCRun,
    JobStatus,
    Policy,
    PolicyKind,
    PolicyRanking,
    PolicyVersion,
)
from jaato_web.errors import InputError
from jaato_web.http import query_id

router = Router(tags=["policies"])


def _policy(request: HttpRequest, policy_id: int, kind: str | None = None) -> Policy:
    """A policy of the caller's projects; ``kind`` for what only a GC policy does (404 for a
    planner config there)."""
    return access_of(request).policy(policy_id, kind)


def _policy_out(policy: Policy, latest: PolicyVersion | None) -> dict[str, object]:
    return {
        "id": policy.pk,
        "project": policy.project_id,
        "kind": policy.kind,
        "name": policy.name,
        "description": policy.description,
        "is_default": policy.project.default_policy_id == policy.pk,
        "archived_at": policy.archived_at,
        "latest": latest,
    }


@router.get(
    "", response=list[PolicyOut], summary="A project's policies, latest versions", auth=VIEW
)
def list_policies(
    request: HttpRequest, project: Id | None = None, archived: bool = False, kind: Kind = "gc"
) -> list[dict[str, object]]:
    """GC policies in use; ``archived=true`` lists the archived ones instead, ``kind=planner``
    the planner configs."""
    target = project_of(request, project)
    versions = selectors.policy_latest_versions(project=target, archived=archived, kind=kind)
    return [_policy_out(v.policy, v) for v in versions]


@router.post(
    "",
    response={201: PolicyOut, 400: Problem, 413: Problem},
    summary="Create (or import) a policy",
    auth=EDIT_POLICY,
)
def create_policy(
    request: HttpRequest, payload: PolicyIn, project: Id | None = None
) -> Status[dict[str, object]]:
    """Either gc.json shape is accepted; it is validated by the engine and stored flat. With
    ``kind`` "planner", ``config`` holds planner settings (``gcengine.PlannerConfig``; the
    defaults fill what it leaves out)."""
    policy = services.policy_create(
        project=project_of(request, project),
        name=payload.name,
        config=payload.config,
        message=payload.message,
        actor=access_of(request).user,
        kind=payload.kind,
    )
    return Status(201, _policy_out(policy, policy.versions.get()))


@router.post(
    "/import",
    response={201: PolicyOut, 400: Problem, 413: Problem},
    summary="Import a gc.json file",
    auth=EDIT_POLICY,
)
def import_policy(
    request: HttpRequest,
    file: File[UploadedFile],
    name: Form[str] = "",
    message: Form[str] = "",
    project: Id | None = None,
) -> Status[dict[str, object]]:
    """The file as uploaded, in either shape; without ``name`` the policy is named after the
    file (or, for ``gc.json``, after its strategy)."""
    services.policy_size_check(file.size or 0)
    policy = services.policy_import(
        project=project_of(request, project),
        data=file.read(),
        filename=file.name or "",
        name=name,
        message=message,
        actor=access_of(request).user,
    )
    return Status(201, _policy_out(policy, policy.versions.get()))


@router.get(
    "/{int:policy_id}", response=PolicyOut, summary="A policy and its latest version", auth=VIEW
)
def get_policy(request: HttpRequest, policy_id: int) -> dict[str, object]:
    policy = _policy(request, policy_id)
    return _policy_out(policy, selectors.policy_latest_version(policy=policy))


@router.get(
    "/{int:policy_id}/versions", response=list[PolicyVersionOut], summary="All versions", auth=VIEW
)
def policy_versions(request: HttpRequest, policy_id: int) -> list[PolicyVersion]:
    return list(selectors.policy_versions(policy=_policy(request, policy_id)))


@router.post(
    "/{int:policy_id}/versions",
    response={201: PolicyVersionOut, 400: Problem, 409: Problem, 413: Problem},
    summary="Save a new version",
    auth=EDIT_POLICY,
)
def save_policy(
    request: HttpRequest, policy_id: int, payload: PolicyVersionIn
) -> Status[PolicyVersion]:
    """409 when ``base_version`` is not the newest: the answer carries the stored config and
    the differences between the version the change started from and the stored one."""
    version = services.policy_save(
        policy=_policy(request, policy_id),
        config=payload.config,
        base_number=payload.base_version,
        message=payload.message,
        actor=access_of(request).user,
    )
    return Status(201, version)


@router.get(
    "/{int:policy_id}/versions/{int:number}",
    response=PolicyVersionOut,
    summary="One version",
    auth=VIEW,
)
def policy_version(request: HttpRequest, policy_id: int, number: int) -> PolicyVersion:
    return selectors.policy_version_by_number(policy=_policy(request, policy_id), number=number)


@router.get(
    "/{int:policy_id}/versions/compare",
    response=VersionCompareOut,
    summary="Two versions, field by field",
    auth=VIEW,
)
def compare_versions(request: HttpRequest, policy_id: int, a: Index, b: Index) -> dict[str, object]:
    policy = _policy(request, policy_id)
    first = selectors.policy_version_by_number(policy=policy, number=a)
    second = selectors.policy_version_by_number(policy=policy, number=b)
    return {
        "a": first,
        "b": second,
        "differences": presenters.config_changes(first.config, second.config),
    }


@router.post(
    "/{int:policy_id}/versions/{int:number}/restore",
    response={201: PolicyVersionOut, 404: Problem, 409: Problem},
    summary="Restore a version (as a new version)",
    auth=EDIT_POLICY,
)
def restore_version(
    request: HttpRequest, policy_id: int, number: int, payload: RestoreIn
) -> Status[PolicyVersion]:
    policy = _policy(request, policy_id)
    selectors.policy_version_by_number(policy=policy, number=number)
    version = services.policy_restore(
        policy=policy,
        number=number,
        base_number=payload.base_version,
        actor=access_of(request).user,
    )
    return Status(201, version)


@router.get(
    "/{int:policy_id}/versions/{int:number}/gc.json", summary="Export as gc.json", auth=VIEW
)
def export_version(request: HttpRequest, policy_id: int, number: int) -> HttpResponse:
    policy = _policy(request, policy_id, PolicyKind.GC)
    version = selectors.policy_version_by_number(policy=policy, number=number)
    return _gc_json(version)


@router.get(
    "/{int:policy_id}/versions/{int:number}/export",
    response={200: gcengine.PolicyExport, 400: Problem},
    summary="A version as other frameworks' settings",
    auth=VIEW,
)
def export_version_elsewhere(
    request: HttpRequest,
    policy_id: int,
    number: int,
    context_window: Id | None = None,
) -> gcengine.PolicyExport:
    """The nearest settings of Anthropic context editing and compaction, OpenAI compaction,
    LangChain, Google ADK, Letta and Claude Code for a model with ``context_window`` tokens
    (by default the window of the project's newest session); each setting names the gc.json
    keys it comes from, every key that does not map says why."""
    policy = _policy(request, policy_id)
    version = selectors.policy_version_by_number(policy=policy, number=number)
    window = selectors.export_window(project=policy.project, window=context_window)
    return gcengine.export_policy(services.config_validated(version.config), window)


@router.get(
    "/versions/{int:version_id}/gc.json", summary="Export a version (by id) as gc.json", auth=VIEW
)
def export_policy(request: HttpRequest, version_id: int) -> HttpResponse:
    return _gc_json(access_of(request).policy_version(version_id, PolicyKind.GC))


def _gc_json(version: PolicyVersion) -> HttpResponse:
    """The flat gc.json that makes JAATO run the version as the engine does: the engine's
    plugin for JAATO, with the policy's rules (``gcengine.export_gc_json``)."""
    document = gcengine.export_gc_json(services.config_validated(version.config))
    response = HttpResponse(
        storage.pretty_json(document) + "\n", content_type="application/json; charset=utf-8"
    )
    response["Content-Disposition"] = 'attachment; filename="gc.json"'
    return response


@router.put(
    "/{int:policy_id}/default", response=DefaultOut, summary="Make it the default", auth=EDIT_POLICY
)
def set_default(request: HttpRequest, policy_id: int) -> dict[str, object]:
    """The default policy runs on every upload, and pins from a history page go to it; a
    planner config is refused by the service, saying why."""
    policy = _policy(request, policy_id)
    services.project_set_default_policy(
        project=policy.project, policy=policy, actor=access_of(request).user
    )
    return {"policy_id": policy.pk, "is_default": True}


@router.delete(
    "/{int:policy_id}/default",
    response=DefaultOut,
    summary="Stop being the default",
    auth=EDIT_POLICY,
)
def unset_default(request: HttpRequest, policy_id: int) -> dict[str, object]:
    policy = _policy(request, policy_id)
    if policy.project.default_policy_id == policy.pk:
        services.project_set_default_policy(
            project=policy.project, policy=None, actor=access_of(request).user
        )
    return {"policy_id": policy.pk, "is_default": False}


@router.post(
    "/{int:policy_id}/pins",
    response={200: PolicyPinsOut, 400: Problem, 404: Problem},
    summary="Pin and unpin turns and messages in a policy, as one version",
    auth=PIN,
)
def pin(request: HttpRequest, policy_id: int, payload: PolicyPinsIn) -> dict[str, object]:
    """A policy's pins apply to every session it runs on: turn 3 here is turn 3 of each. The
    whole change is one new version; a change that leaves the pins as they are stores nothing
    and answers the newest version. To keep a turn in one session only, pin it in the session
    (``POST /api/sessions/{id}/pins``)."""
    policy = _policy(request, policy_id, PolicyKind.GC)
    access = access_of(request)
    session = access.session(payload.session_id) if payload.session_id is not None else None
    version = services.policy_pins_change(
        policy=policy,
        change=services.PinChange(
            pin_turns=tuple(payload.pin_turn_indices),
            unpin_turns=tuple(payload.unpin_turn_indices),
            pin_messages=tuple(payload.pin_message_ids),
            unpin_messages=tuple(payload.unpin_message_ids),
        ),
        message=payload.message,
        session=session,
        actor=access.user,
    )
    return {
        "pinned_turn_indices": version.config.get("pinned_turn_indices") or [],
        "pinned_message_ids": version.config.get("pinned_message_ids") or [],
        "version": version,
    }


@router.post(
    "/{int:policy_id}/archive",
    response=ArchiveOut,
    summary="Archive a policy (or bring it back)",
    auth=DELETE,
)
def archive_policy(request: HttpRequest, policy_id: int, payload: ArchiveIn) -> Policy:
    """An archived policy leaves the lists and pickers; its versions and runs stay."""
    policy = _policy(request, policy_id)
    services.archive_set(item=policy, archived=payload.archived, actor=access_of(request).user)
    return policy


@router.delete("/{int:policy_id}", response={204: None}, summary="Delete a policy", auth=DELETE)
def delete_policy(request: HttpRequest, policy_id: int) -> Status[None]:
    """Its versions and their comments go; runs of it keep the gc.json they used."""
    services.item_delete(item=_policy(request, policy_id), actor=access_of(request).user)
    return Status(204, None)


# --- Dry runs: preview and compare -----------------------------------------------------------


def _config_of(request: HttpRequest, ref: ConfigRef) -> gcengine.GCConfig:
    if (ref.policy_version_id is None) == (ref.config is None):
        raise gcengine.ConfigError("give policy_version_id or config (a gc.json object)")
    if ref.policy_version_id is not None:
        version = access_of(request).policy_version(ref.policy_version_id, PolicyKind.GC)
        return services.config_validated(version.config)
    return services.config_validated(ref.config)


def _preview_out(
    session: AgentSession, preview: previews.Preview, replay: bool, window: int | None
) -> dict[str, object]:
    figures: dict[str, Any] | None = None
    if replay:
        series = previews.replay(session, preview.config, window, scored=True)
        figures = {**vars(presenters.replay_figures(series)), "series": series}
    return {
        "session_id": session.pk,
        "config": gcengine.dump_gc_config(preview.config),
        "context_limit": preview.context_limit,
        "tokens_before": preview.tokens_before,
        "tokens_after": preview.tokens_after,
        "tokens_freed": preview.tokens_freed,
        "percent_before": preview.percent_before,
        "percent_after": preview.percent_after,
        "would_trigger": preview.would_trigger,
        "trigger_reason": preview.trigger_reason,
        "success": preview.success,
        "error": preview.error,
        "notification": preview.notification,
        "notes": preview.notes,
        "removed_turns": sorted(preview.removed_turns),
        "ledger": [presenters.ledger_record(item) for item in preview.items],
        "elapsed_ms": preview.elapsed_ms,
        "replay": figures,
        "anchor_retention": preview.retention,
    }


@router.post(
    "/preview",
    response={200: PreviewOut, 400: Problem, 404: Problem},
    summary="What a policy would remove from a session now (nothing is stored)",
    auth=EDIT_POLICY,
)
def preview(request: HttpRequest, payload: PreviewIn) -> dict[str, object]:
    """A stored version or a gc.json as is; ``replay`` adds the turn-by-turn replay (slow for
    long sessions in continuous mode)."""
    session = access_of(request).session(payload.session_id)
    config = _config_of(request, payload)
    window = payload.context_limit
    return _preview_out(session, previews.preview(session, config, window), payload.replay, window)


@router.post(
    "/compare",
    response={200: CompareOut, 400: Problem, 404: Problem},
    summary="Two policies (or versions) on one session, side by side",
    auth=VIEW,
)
def compare(request: HttpRequest, payload: CompareIn) -> dict[str, object]:
    session = access_of(request).session(payload.session_id)
    a, b = _config_of(request, payload.a), _config_of(request, payload.b)
    window = payload.context_limit
    comparison = previews.compare(session, a, b, window)
    return {
        "a": _preview_out(session, comparison.a, payload.replay, window),
        "b": _preview_out(session, comparison.b, payload.replay, window),
        "only_a_turns": comparison.only_a_turns,
        "only_b_turns": comparison.only_b_turns,
        "both_turns": comparison.both_turns,
        "only_a_message_ids": comparison.only_a_message_ids,
        "only_b_message_ids": comparison.only_b_message_ids,
        "both_message_ids": comparison.both_message_ids,
        "differences": presenters.config_changes(
            gcengine.dump_gc_config(a), gcengine.dump_gc_config(b)
        ),
    }


# The longest an API caller may wait for a ranking in one request, in seconds.
RANK_WAIT_MAX = 30.0


class RankIn(ObjectIn):
    """Stored versions ranked over sessions of one project, by a worker; the ranking is kept,
    and the same one asked for again is read back."""

    session_ids: list[Id] = Field(min_length=1, max_length=20)
    version_ids: list[Id] = Field(min_length=1, max_length=20)
    by: str = Field(
        default="retention",
        description="What ranks first after staying within the window: retention (the "
        "fewest collections under a gate, then anchor retention at equal size), cost or tokens",
    )
    context_limit: int | None = Field(
        default=None,
        ge=1_000,
        le=100_000_000,
        description="a context window to replay against instead of each session's own",
    )
    wait: float = Field(
        default=0.0,
        ge=0.0,
        le=RANK_WAIT_MAX,
        description="seconds to wait for the worker to finish before answering (202 while it "
        "has not)",
    )


class RankedFigures(Schema):
    """What a ranking adds up, for a policy over every session and on each session alike."""

    collections: int
    over_window_checks: int
    tokens_sent: int
    tokens_without_gc: int
    anchor_retention: gcengine.AnchorRetention
    anchor_retention_at_equal_size: gcengine.AnchorRetention
    collections_under_gate: int
    cost: float | None
    cost_without_gc: float | None


class RankedOnSession(RankedFigures):
    session_id: int


class RankedPolicy(RankedFigures):
    rank: int
    policy_version_id: int
    policy: str
    sessions: list[RankedOnSession]


class RankOut(Schema):
    by: str
    ranks: list[RankedPolicy]
    differ_most: list[int] = Field(description="Sessions where the policies differ most")
    unpriced_session_ids: list[int]


class RankingOut(Schema):
    """A ranking worked out by a worker: its progress while it runs, its result once done."""

    id: int
    status: str = Field(description="queued, running, done or failed")
    progress: str = Field(description="what the worker is doing now")
    replays_done: int
    replays_total: int = Field(description="one replay per version and session")
    elapsed_seconds: float | None = Field(description="how long the worker has worked on it")
    error: str = Field(description="why it failed, when it did")
    session_ids: list[int]
    version_ids: list[int]
    url: str = Field(description="where to poll it: GET, with ?wait=seconds to wait for it")
    result: RankOut | None = Field(description="the ranking, once done")


def _ranking_out(row: PolicyRanking) -> Status[dict[str, Any]]:
    """A ranking as the API shows it: 202 while a worker has it to do, 200 once it ended."""
    body = {
        "id": row.pk,
        "status": row.status,
        "progress": row.progress,
        "replays_done": row.replays_done,
        "replays_total": row.replays_total,
        "elapsed_seconds": row.elapsed_seconds,
        "error": row.error,
        "session_ids": row.session_ids,
        "version_ids": row.version_ids,
        "url": reverse("api:policy_ranking", args=[row.pk]),
        "result": row.result if row.status == JobStatus.DONE else None,
    }
    return Status(202 if row.is_pending else 200, body)


@router.post(
    "/rank",
    response={200: RankingOut, 202: RankingOut, 400: Problem, 404: Problem},
    summary="Rank policy versions over sessions by gates, anchor retention, cost or tokens",
    auth=VIEW,
)
def rank(request: HttpRequest, payload: RankIn) -> Status[dict[str, Any]]:
    """Each version replayed turn by turn on each session, as the compare page ranks them, by
    a worker: 202 with the ranking to poll (``url``), or 200 with its ``result`` when the same
    inputs were ranked before or the worker finished within ``wait`` seconds."""
    access = access_of(request)
    sessions = [access.session(i) for i in dict.fromkeys(payload.session_ids)]
    versions = [access.policy_version(i) for i in dict.fromkeys(payload.version_ids)]
    row = background.ranking_request(
        project=sessions[0].project,
        sessions=sessions,
        versions=versions,
        by=payload.by,
        context_limit=payload.context_limit,
    )
    return _ranking_out(background.ranking_wait(ranking=row, seconds=payload.wait))


@router.get(
    "/rankings/{int:ranking_id}",
    response={200: RankingOut, 202: RankingOut, 400: Problem, 404: Problem},
    summary="A ranking: its progress while a worker ranks, its result once done",
    auth=VIEW,
    url_name="policy_ranking",
)
def ranking(request: HttpRequest, ranking_id: int, wait: float = 0.0) -> Status[dict[str, Any]]:
    """``wait`` (seconds, at most 30) holds the answer until the ranking ends or that long
    has passed."""
    if not 0 <= wait <= RANK_WAIT_MAX:
        raise InputError(f"wait at most {RANK_WAIT_MAX:g} seconds, and not less than 0", "wait")
    row = access_of(request).ranking(ranking_id)
    return _ranking_out(background.ranking_wait(ranking=row, seconds=wait))


# --- Apply -----------------------------------------------------------------------------------


def _apply_out(runs: list[GCRun]) -> dict[str, object]:
    done = sum(1 for r in runs if r.status == "done")
    failed = sum(1 for r in runs if r.status == "failed")
    return {
        "total": len(runs),
        "done": done,
        "failed": failed,
        "pending": len(runs) - done - failed,
        "runs": runs,
    }


@router.post(
    "/{int:policy_id}/apply",
    response={202: ApplyOut, 400: Problem, 404: Problem},
    summary="Run a version on one session or many",
    auth=RUN,
)
def apply(request: HttpRequest, policy_id: int, payload: ApplyIn) -> Status[dict[str, Any]]:
    """One background run per session; follow them with ``GET /api/policies/runs?ids=...``."""
    policy = _policy(request, policy_id, PolicyKind.GC)
    project = policy.project
    version = (
        selectors.policy_version_by_number(policy=policy, number=payload.version)
        if payload.version is not None
        else selectors.policy_latest_version(policy=policy)
    )
    sessions = selectors.sessions_by_ids(project=project, ids=payload.session_ids)
    if not sessions:
        detail = "session_ids: no session of this project among them"
        return Status(400, {"detail": detail, "key": "session_ids"})
    runs = background.policy_apply(
        version=version, sessions=sessions, actor=access_of(request).user
    )
    ids = [r.pk for r in runs]
    return Status(202, _apply_out(selectors.runs_by_ids(projects=[project.pk], ids=ids)))


@router.get("/runs", response=ApplyOut, summary="Progress of runs started by an apply", auth=VIEW)
def apply_status(request: HttpRequest, ids: str) -> dict[str, object]:
    """``ids`` is a comma-separated list of run ids (as an apply answered them)."""
    parsed = [query_id(i.strip()) for i in ids.split(",") if i.strip()]
    wanted = [i for i in parsed if i is not None]
    if len(wanted) != len(parsed):
        raise InputError("give run ids as whole numbers separated by commas", "ids")
    return _apply_out(selectors.runs_by_ids(projects=access_of(request).project_ids, ids=wanted))
