"""``manage.py load_demo``: what a fresh dashboard shows on day one, and loading it again."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from jaato_web.dashboard.models import (
    AgentSession,
    BudgetNode,
    GCRun,
    JobStatus,
    Policy,
    PolicyVersion,
    Removal,
    Replay,
    StashedSegment,
    Summary,
)
from jaato_web.teams.management.commands.load_demo import DEMO_FILENAME, DEMO_USER
from jaato_web.teams.models import Membership
from jaato_web.teams.permissions import Role

pytestmark = pytest.mark.django_db


def load_demo() -> str:
    out = StringIO()
    call_command("load_demo", stdout=out)
    return out.getvalue()


def test_a_fresh_dashboard_gets_the_session_a_budget_run_and_a_summary_chain() -> None:
    assert "Demo session loaded" in load_demo()
    session = AgentSession.objects.select_related("project").get(label=DEMO_FILENAME)
    project = session.project
    assert 80 <= session.utilization_percent <= 90
    assert project.default_policy is not None
    assert project.default_policy.name == "Budget 80/60"

    tree = BudgetNode.objects.filter(session=session, run=None)
    sources = {n.key: n for n in tree.filter(depth=0)}
    for source in ("system", "plugin", "enrichment", "conversation", "thinking"):
        assert sources[source].tokens > 0, source
    assert {"locked", "preservable", "partial", "ephemeral"} <= set(
        tree.values_list("policy", flat=True)
    )

    runs = {
        run.policy_version.policy.name: run
        for run in GCRun.objects.filter(session=session).select_related("policy_version__policy")
    }
    assert set(runs) == {"Budget 80/60", "Summarize old turns", "Reachability stash"}
    assert all(run.status == JobStatus.DONE for run in runs.values())
    budget, summarize = runs["Budget 80/60"], runs["Summarize old turns"]
    assert (budget.tokens_freed or 0) > 0
    assert Removal.objects.filter(run=budget, reason="enrichment_bulk_clear").exists()
    written = Summary.objects.get(run=summarize, written_by_run=True)
    assert written.number == 1
    assert written.covers_turns
    assert "src/billing/" in written.text
    assert written.summarizer == "extractive"
    stashed = runs["Reachability stash"]
    assert StashedSegment.objects.filter(run=stashed).count() == stashed.items_collected > 0

    replays = Replay.objects.filter(session=session)
    assert replays.count() == 2
    assert all(replay.status == JobStatus.DONE for replay in replays)
    # Each replay names the version it was drawn for.
    assert sorted(replays.values_list("policy_label", flat=True)) == [
        "Budget 80/60 v1",
        "Continuous budget v1",
    ]
    assert all(replay.policy_version is not None for replay in replays)
    demo = User.objects.get(username=DEMO_USER)
    assert Membership.objects.get(project=project, user=demo).role == Role.ADMIN


def test_loading_the_demo_again_duplicates_nothing() -> None:
    load_demo()
    models = (
        AgentSession,
        GCRun,
        Summary,
        Removal,
        Replay,
        Policy,
        PolicyVersion,
        BudgetNode,
        User,
        Membership,
    )
    counts = {model.__name__: model.objects.count() for model in models}
    assert "already loaded" in load_demo()
    assert {model.__name__: model.objects.count() for model in models} == counts
    assert counts["AgentSession"] == 1
    assert counts["GCRun"] == 3
