"""The run page, its polling status, the removed content of one ledger item, and exports."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any, cast

from django.db.models import QuerySet
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import render
from django.template.loader import get_template
from django.urls import reverse
from django.utils.http import content_disposition_header
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

import gcengine
from jaato_web.dashboard import presenters, selectors, services, storage
from jaato_web.dashboard.models import GCRun, JobStatus
from jaato_web.http import PageRequest, htmx_target
from jaato_web.pages import fragments
from jaato_web.review import presenters as review_presenters
from jaato_web.review import selectors as review_selectors
from jaato_web.review.targets import Target
from jaato_web.teams.access import requires
from jaato_web.teams.permissions import Action


@require_GET
@vary_on_headers("HX-Request", "HX-Target")
@requires(Action.VIEW)
def run_detail(request: PageRequest, run_id: int) -> HttpResponse:
    run = request.access.run(run_id)
    target = htmx_target(request)
    if target == "ledger":
        return render(request, "runs/detail.html#ledger", {"run": run, **_ledger(run, request.GET)})
    if target == "diff":
        return render(request, "runs/detail.html#diff", {"run": run, **_diff(run, request.GET)})
    review = review_presenters.review_panel(Target.of_run(run), page=request.GET.get("comments"))
    if target == "review":
        return render(request, "review/panel.html#panel", {"review": review})
    session = run.session
    context: dict[str, Any] = {
        "run": run,
        "review": review,
        "session": session,
        "figures": presenters.run_figures(run, session),
        "config_json": storage.pretty_json(run.config),
        "legend": presenters.policy_legend(),
    }
    gates = services.project_gates(session.project)
    if run.compaction_id:
        compactions = session.agent_state.get("compactions") or []
        compaction: dict[str, Any] = next(
            (c for c in compactions if c["id"] == run.compaction_id), {}
        )
        context["compaction"] = compaction
        context["agent_retention"] = presenters.retention_view(
            storage.retention_read(compaction.get("retention")),
            gates,
            what="the agent's compaction",
        )
    if run.status == JobStatus.DONE:
        summaries = presenters.summary_views(selectors.run_summaries(run=run))
        context |= {
            "summaries": summaries,
            "story": presenters.run_story(run, summaries),
            "retention": presenters.run_retention(run, gates),
            "tree_before": fragments.budget_tree(
                session,
                label="Budget before the run",
                url=reverse("session_tree", args=[session.pk]),
            ),
            "tree_after": fragments.budget_tree(
                session,
                label="Budget after the run",
                url=reverse("run_tree", args=[run.pk]),
                run=run,
            ),
            **_ledger(run, request.GET),
            **_diff(run, request.GET),
        }
    return render(request, "runs/detail.html", context)


@require_GET
@requires(Action.VIEW)
def run_status(request: PageRequest, run_id: int) -> HttpResponse:
    """What the run page polls while the run waits or works; once it ends, reload the page."""
    run = request.access.run(run_id)
    response = render(request, "runs/detail.html#run-status", {"run": run})
    if not run.is_pending:
        response["HX-Refresh"] = "true"
    return response


@require_GET
@requires(Action.VIEW)
def run_retention(request: PageRequest, run_id: int) -> HttpResponse:
    """What the run page polls while the run's anchor retention is scored; once scored, the
    section and the gate flag above the figures."""
    run = request.access.run(run_id)
    gates = services.project_gates(run.session.project)
    context = {
        "run": run,
        "retention": presenters.run_retention(run, gates),
        "swap_gate_flag": not run.retention_pending,
    }
    return render(request, "runs/detail.html#run-retention", context)


@require_GET
@vary_on_headers("HX-Request", "HX-Target")
@requires(Action.VIEW)
def run_removal(request: PageRequest, run_id: int, seq: int) -> HttpResponse:
    """What one ledger item took away: its messages, or the budget entry that went."""
    run = request.access.run(run_id)
    removal = selectors.run_removal(run=run, seq=seq)
    if htmx_target(request) == "review":  # the comments' pager
        review = review_presenters.review_panel(
            Target.of_removal(run, removal), page=request.GET.get("comments")
        )
        return render(request, "review/panel.html#panel", {"review": review})
    context: dict[str, Any] = {"run": run, "removal": removal}
    if removal.turn_position is not None:
        turn = selectors.session_turn(session=run.session, position=removal.turn_position)
        context["turn"] = turn
        context["removed_messages"] = presenters.removed_message_views(
            turn.messages, removal.message_ids
        )
    else:
        path = "/".join(part for part in (removal.source, removal.child_key) if part)
        entry = selectors.budget_node_find(session=run.session, run=None, path=path)
        context["entry"] = (
            presenters.tree_rows([entry], run.session.total_tokens)[0] if entry else None
        )
    if request.htmx:  # the ledger row that unfolds what the item removed
        return render(request, "runs/removal.html#removed-content", context)
    context["review"] = review_presenters.review_panel(
        Target.of_removal(run, removal), page=request.GET.get("comments")
    )
    return render(request, "runs/removal.html", context)


@require_GET
@requires(Action.VIEW)
def run_export_session(request: PageRequest, run_id: int) -> HttpResponse:
    """The session as the run left it, as a JAATO session file."""
    run = request.access.run(run_id)
    after = services.session_after_of(run)
    if after is None:
        raise Http404("This run has not finished, so there is no collected session.")
    # Compact, as it was most likely uploaded: indented, a 10,000-turn session is 72 MB, not 61.
    text = gcengine.dump_session(after, indent=None)
    return _attachment(text, _export_name(run, "gc.json"), "application/json")


@require_GET
@requires(Action.VIEW)
def run_export_source(request: PageRequest, run_id: int) -> HttpResponse:
    """The session as the run left it, in the format it was uploaded in (a Claude Code
    transcript Claude Code can resume), where that format can hold it."""
    run = request.access.run(run_id)
    after = services.session_after_of(run)
    if after is None:
        raise Http404("This run has not finished, so there is no collected session.")
    text = gcengine.dump_in_source_format(after)
    if text is None:
        raise Http404(f"A {after.source_format} session cannot be written back in its format.")
    suffix = gcengine.source_export_suffix(after)
    return _attachment(text, _export_name(run, f"gc.{suffix}"), "application/jsonl")


@require_GET
@requires(Action.VIEW)
def run_export_ledger_json(request: PageRequest, run_id: int) -> HttpResponse:
    run = request.access.run(run_id)
    records = presenters.ledger_records(selectors.run_removals(run=run))
    body = gcengine.compact_json({"run": run.pk, "session": run.session_id, "ledger": records})
    return _attachment(body, _export_name(run, "ledger.json"), "application/json")


@require_GET
@requires(Action.VIEW)
def run_export_ledger_csv(request: PageRequest, run_id: int) -> HttpResponse:
    run = request.access.run(run_id)
    body = presenters.ledger_csv(presenters.ledger_records(selectors.run_removals(run=run)))
    return _attachment(body, _export_name(run, "ledger.csv"), "text/csv")


def _ledger(run: GCRun, query: QueryDict) -> dict[str, Any]:
    # Each row says how many comments its item has (a subquery, not a query per row).
    removals = review_selectors.with_comment_counts(selectors.run_removals(run=run))
    page = selectors.page_of(removals, query.get("ledger"), selectors.LEDGER_PER_PAGE)
    # Each row links its removed content; one reverse() for the page instead of one per row.
    removals_url = reverse("run_removal", args=[run.pk, 0]).removesuffix("0/")

    def draw() -> SafeString:
        context = {"ledger_page": page, "removals_url": removals_url, "run": run}
        return mark_safe(get_template("runs/detail.html#ledger-rows").render(context))

    # A finished run's rows change only in their comment counts, read without the rows.
    rows = cast("QuerySet[Any]", page.object_list)  # a slice of ``removals``, not yet read
    counts = tuple(rows.values_list("comment_count", flat=True))
    return {
        # What an empty ledger says depends on the run's figures only, not on its summaries.
        "nothing": presenters.run_story(run, []).nothing,
        "ledger_page": page,
        "ledger_pager": presenters.pager(page, "ledger"),
        "ledger_rows": fragments.finished_run_fragment(
            run, "ledger", (page.number, page.paginator.per_page, counts), draw
        ),
    }


def _diff(run: GCRun, query: QueryDict) -> dict[str, Any]:
    page = selectors.session_turn_page(session=run.session, number=query.get("diff"))

    def draw() -> SafeString:
        turns = presenters.diff_views(selectors.run_diff(run=run, turns=list(page)))
        return mark_safe(get_template("runs/detail.html#diff-list").render({"diff_turns": turns}))

    return {
        "diff_pager": presenters.pager(page, "diff"),
        "diff_list": fragments.finished_run_fragment(
            run, "diff", (page.number, page.paginator.per_page), draw
        ),
    }


def _export_name(run: GCRun, suffix: str) -> str:
    """``demo-session-run12.gc.json``: the uploaded name, tamed for a download header."""
    stem = PurePosixPath(run.session.label).name.split(".")[0]
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", stem).strip("-")[:80] or "session"
    return f"{stem}-run{run.pk}.{suffix}"


def _attachment(body: str, filename: str, content_type: str) -> HttpResponse:
    response = HttpResponse(body, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response
