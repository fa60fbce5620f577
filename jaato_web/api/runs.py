"""GC runs: start them, follow them, and read what they removed and why."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from ninja import Router, Status

import gcengine
from jaato_web.api.auth import DELETE, RUN, VIEW, access_of
from jaato_web.api.common import config_source
from jaato_web.api.paging import node_page, paged
from jaato_web.api.schemas import (
    ArchiveIn,
    ArchiveOut,
    DiffPage,
    Index,
    NodePage,
    PageNumber,
    Problem,
    RemovalPage,
    RunDetailOut,
    RunIn,
    RunOut,
    SummaryOut,
)
from jaato_web.dashboard import background, presenters, selectors, services, storage
from jaato_web.dashboard.models import GCRun, Summary

router = Router(tags=["runs"])


def _run(request: HttpRequest, run_id: int) -> GCRun:
    return access_of(request).run(run_id)


@router.post(
    "/sessions/{int:session_id}/runs",
    response={202: RunOut, 400: Problem, 404: Problem},
    summary="Start a GC run",
    auth=RUN,
)
def start_run(request: HttpRequest, session_id: int, payload: RunIn) -> Status[GCRun]:
    """Runs in the background; poll ``GET /api/runs/{id}`` until ``status`` is done or failed."""
    session = access_of(request).session(session_id)
    version, config = config_source(session, payload.policy_version_id, payload.config)
    run = background.run_start(
        session=session,
        policy_version=version,
        config=config,
        plugin=payload.plugin,
        context_limit=payload.context_limit,
        compaction_id=payload.compaction_id,
        actor=access_of(request).user,
    )
    run.refresh_from_db()
    return Status(202, run)


@router.get(
    "/sessions/{int:session_id}/runs", response=list[RunOut], summary="A session's runs", auth=VIEW
)
def list_runs(request: HttpRequest, session_id: int, archived: bool = False) -> list[GCRun]:
    """The runs in use, newest first; ``archived=true`` lists the archived ones instead."""
    session = access_of(request).session(session_id)
    return list(selectors.run_list(session=session, archived=archived))


@router.get(
    "/runs/{int:run_id}", response=RunDetailOut, summary="A run: status and figures", auth=VIEW
)
def get_run(request: HttpRequest, run_id: int) -> GCRun:
    return _run(request, run_id)


@router.get(
    "/runs/{int:run_id}/ledger", response=RemovalPage, summary="The removal ledger", auth=VIEW
)
def run_ledger(request: HttpRequest, run_id: int, page: PageNumber = 1) -> dict[str, object]:
    return paged(selectors.run_removals(run=_run(request, run_id)), page, selectors.LEDGER_PER_PAGE)


@router.get("/runs/{int:run_id}/ledger.json", summary="The whole ledger as a JSON file", auth=VIEW)
def run_ledger_json(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _run(request, run_id)
    records = presenters.ledger_records(selectors.run_removals(run=run))
    response = HttpResponse(
        gcengine.compact_json(records), content_type="application/json; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-ledger.json"'
    return response


@router.get("/runs/{int:run_id}/ledger.csv", summary="The whole ledger as CSV", auth=VIEW)
def run_ledger_csv(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _run(request, run_id)
    records = presenters.ledger_records(selectors.run_removals(run=run))
    response = HttpResponse(presenters.ledger_csv(records), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-ledger.csv"'
    return response


@router.get(
    "/runs/{int:run_id}/summaries", response=list[SummaryOut], summary="Summary chain", auth=VIEW
)
def run_summaries(request: HttpRequest, run_id: int) -> list[Summary]:
    return list(selectors.run_summaries(run=_run(request, run_id)))


@router.get(
    "/runs/{int:run_id}/budget",
    response=NodePage,
    summary="One level of the after-run tree",
    auth=VIEW,
)
def run_budget(
    request: HttpRequest, run_id: int, parent: str = "", offset: Index = 0
) -> dict[str, object]:
    run = _run(request, run_id)
    nodes, total = selectors.budget_children_page(
        session=run.session, run=run, parent_path=parent, offset=offset
    )
    return node_page(nodes, total, parent, offset)


@router.get(
    "/runs/{int:run_id}/diff", response=DiffPage, summary="Before/after, turn by turn", auth=VIEW
)
def run_diff(request: HttpRequest, run_id: int, page: PageNumber = 1) -> dict[str, object]:
    run = _run(request, run_id)
    turns = selectors.page_of(
        selectors.session_turns(session=run.session), page, selectors.TURNS_PER_PAGE
    )
    rows = selectors.run_diff(run=run, turns=list(turns.object_list))
    return {
        "page": turns.number,
        "pages": turns.paginator.num_pages,
        "count": turns.paginator.count,
        "items": [
            {
                "position": row.turn.position,
                "turn_index": row.turn.turn_index,
                "state": row.state,
                "removed_message_ids": sorted(row.removed_ids),
                "summaries_inserted_before": [s.message_id for s in row.summaries_before],
            }
            for row in rows
        ],
    }


@router.get(
    "/runs/{int:run_id}/session",
    response={200: None, 409: Problem},
    summary="The session after the run, as a JAATO file",
    auth=VIEW,
)
def run_session_export(
    request: HttpRequest, run_id: int, source_format: bool = False
) -> HttpResponse:
    """``source_format=true``: in the format it was uploaded in (a Claude Code transcript),
    refused with 409 for a format that cannot hold it."""
    run = _run(request, run_id)
    after = services.session_after_of(run)
    if after is None:
        return HttpResponse(
            storage.pretty_json({"detail": f"run {run.pk} is {run.status}; nothing to export"}),
            status=409,
            content_type="application/json",
        )
    if source_format:
        text = gcengine.dump_in_source_format(after)
        if text is None:
            detail = f"a {after.source_format} session cannot be written back in its format"
            return HttpResponse(
                storage.pretty_json({"detail": detail}),
                status=409,
                content_type="application/json",
            )
        response = HttpResponse(text, content_type="application/jsonl; charset=utf-8")
        suffix = gcengine.source_export_suffix(after)
        response["Content-Disposition"] = f'attachment; filename="run-{run.pk}.session.{suffix}"'
        return response
    document = gcengine.dump_session(after, indent=None)
    response = HttpResponse(document, content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}.session.json"'
    return response


@router.post(
    "/runs/{int:run_id}/archive",
    response=ArchiveOut,
    summary="Archive a run (or bring it back)",
    auth=DELETE,
)
def archive_run(request: HttpRequest, run_id: int, payload: ArchiveIn) -> GCRun:
    """An archived run leaves its session's list of runs; its ledger and comments stay."""
    run = access_of(request).run(run_id)
    services.archive_set(item=run, archived=payload.archived, actor=access_of(request).user)
    return run


@router.delete("/runs/{int:run_id}", response={204: None}, summary="Delete a run", auth=DELETE)
def delete_run(request: HttpRequest, run_id: int) -> Status[None]:
    """Its ledger, summaries, after-tree and comments go; the session is untouched."""
    services.item_delete(item=access_of(request).run(run_id), actor=access_of(request).user)
    return Status(204, None)
