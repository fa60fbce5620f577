"""A replay's chart: usage turn by turn under a policy, drawn on the server as SVG."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from jaato_web.dashboard import presenters, services, storage
from jaato_web.dashboard.models import JobStatus, Replay
from jaato_web.http import PageRequest
from jaato_web.teams.access import requires
from jaato_web.teams.permissions import Action


@require_GET
@vary_on_headers("HX-Request")
@requires(Action.VIEW)
def replay_detail(request: PageRequest, replay_id: int) -> HttpResponse:
    """The chart; while the replay is pending, a fragment that polls this same URL.

    The session page loads this fragment after the page itself, so a 20,000-step series is
    never read to draw the rest of the session page.
    """
    replay = request.access.replay(replay_id)
    context = _replay_context(replay)
    template = "replays/detail.html#replay-chart" if request.htmx else "replays/detail.html"
    return render(request, template, context)


@require_GET
@requires(Action.VIEW)
def replay_retention(request: PageRequest, replay_id: int) -> HttpResponse:
    """What the replay page polls while its collections are scored; once scored, the section
    and the events with their scores."""
    replay = request.access.replay(replay_id)
    if replay.retention_pending:  # the section as it is: the chart is not drawn for it
        return render(request, "replays/detail.html#replay-retention", {"replay": replay})
    context = {**_replay_context(replay), "swap_events": True}
    return render(request, "replays/detail.html#replay-retention", context)


def _replay_context(replay: Replay) -> dict[str, Any]:
    context: dict[str, Any] = {
        "replay": replay,
        "session": replay.session,
        "title": presenters.replay_title(replay),
        "config_json": storage.pretty_json(replay.config),
    }
    series = replay.series
    if replay.status == JobStatus.DONE and series is not None and not series["steps"]:
        context["no_turns"] = presenters.no_turns(replay.session)
    elif replay.status == JobStatus.DONE and series is not None:
        project = replay.session.project
        gates = services.project_gates(project)
        context |= {
            "chart": presenters.replay_chart(series),
            "story": presenters.replay_story(series, replay.config),
            "events": presenters.replay_events(series, gates),
            "event_count": len(series["events"]),
            "retention": presenters.retention_view(
                presenters.replay_retention(series), gates, what="its collections"
            ),
            "collections_under_gate": presenters.replay_gate_failures(series, gates),
            "cost": presenters.cost_view(
                series, services.project_prices(project), replay.session.model_name
            ),
            "project": project,
        }
        if replay.compaction_id:
            context |= _beside_the_agent(replay, series, context["title"])
    return context


def _beside_the_agent(replay: Replay, series: dict[str, Any], title: str) -> dict[str, Any]:
    """A replay on the history before one of the agent's compactions, drawn over the agent's
    own recorded usage of the same calls (turns, for a session stored before its calls were)."""
    state = replay.session.agent_state
    compactions = state.get("compactions") or []
    compaction = next((c for c in compactions if c["id"] == replay.compaction_id), None)
    return {
        "compaction": compaction,
        "usage_chart": presenters.usage_chart(
            state,
            replay.context_limit or replay.session.context_limit,
            series=series,
            policy_label=title,
            compaction_id=replay.compaction_id,
        ),
        "policy_label": title,
    }
