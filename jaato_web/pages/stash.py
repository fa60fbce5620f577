"""A reachability run's stash (search it, restore from it), why it kept what it kept, and the
reference graph around a turn of a session."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers

import gcengine
from jaato_web.dashboard import presenters, selectors, services
from jaato_web.dashboard.models import GCRun
from jaato_web.http import PageRequest, htmx_target, query_id, redirect_after_post
from jaato_web.pages import forms
from jaato_web.teams.access import requires
from jaato_web.teams.permissions import Action


@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request", "HX-Target")
@requires(Action.VIEW, writes=Action.RUN)
def run_stash(request: PageRequest, run_id: int) -> HttpResponse:
    """What the run stashed, searchable by text and anchor; a POST restores the ticked
    segments into a new session and goes there."""
    run = request.access.run(run_id)
    form = forms.RestoreForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            session = services.stash_restore(
                run=run, segment_ids=form.cleaned_data["segments"], actor=request.user
            )
        except services.RestoreError as error:
            form.add_error("segments", error.reason)
        else:
            messages.success(
                request,
                f"Restored {presenters.counted(len(session.restored_segments), 'segment')} "
                f"from run {run.pk} into {session.label}.",
            )
            return redirect_after_post(request, reverse("session_detail", args=[session.pk]))
    context = {"run": run, "session": run.session, "form": form, **_stash(run, request.GET)}
    if htmx_target(request) == "stash-list":
        return render(request, "stash/stash.html#stash-list", context)
    status = 400 if form.errors else 200
    return render(request, "stash/stash.html", context, status=status)


def _stash(run: GCRun, query: QueryDict) -> dict[str, Any]:
    text = query.get("q", "").strip()[: selectors.SEARCH_MAX_CHARS]
    anchor = query.get("anchor", "").strip()[: selectors.SEARCH_MAX_CHARS]
    found = selectors.run_stashed(run=run, text=text, anchor=anchor)
    page = selectors.page_of(found, query.get("page"), selectors.STASH_PER_PAGE)
    return {
        "text": text,
        "anchor": anchor,
        "stash_page": page,
        "stash_pager": presenters.pager(page, "page"),
        "stash_size": selectors.run_stash_size(run=run),
        "derived": list(selectors.derived_sessions(run=run)[:20]),
    }


@require_GET
@vary_on_headers("HX-Request", "HX-Target")
@requires(Action.VIEW)
def run_kept(request: PageRequest, run_id: int) -> HttpResponse:
    """Why a reachability run kept what it kept: all of it, one turn's (JAATO's number, from
    1), or what a search of the reasons finds."""
    run = request.access.run(run_id)
    number = query_id(request.GET.get("turn"))
    text = request.GET.get("q", "").strip()[: selectors.SEARCH_MAX_CHARS]
    index = presenters.turn_index_of(number) if number else None
    kept = selectors.run_kept(run=run, turn_index=index, text=text)
    page = selectors.page_of(kept, request.GET.get("page"), selectors.KEPT_PER_PAGE)
    context = {
        "run": run,
        "session": run.session,
        "turn": number,
        "text": text,
        "kept_page": page,
        "kept_pager": presenters.pager(page, "page"),
    }
    if request.htmx:
        return render(request, "stash/kept.html#kept-list", context)
    return render(request, "stash/kept.html", context)


@require_GET
@vary_on_headers("HX-Request")
@requires(Action.VIEW)
def session_references(request: PageRequest, session_id: int) -> HttpResponse:
    """The reference graph around one turn (JAATO's number, from 1): what its segments refer
    to and what refers to them, drawn and in words."""
    session = request.access.session(session_id)
    number = query_id(request.GET.get("turn"))
    context: dict[str, Any] = {"session": session, "turn": number}
    if number:
        engine = services.engine_session_of(session)
        try:
            graph = gcengine.turn_references(engine, number - 1)
        except gcengine.TurnNotFoundError:
            context["missing"] = (
                f"{session.label} has no turn {number}: its turns run from 1 to "
                f"{session.turn_count:,}."
            )
        else:
            context["picture"] = presenters.reference_picture(graph)
    template = "stash/references.html"
    return render(request, f"{template}#references" if request.htmx else template, context)
