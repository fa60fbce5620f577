"""Give a fresh dashboard something to show: starter policies and planner configs, a demo
session, GC runs.

The session is a generated coding agent fixing a billing service's failing tests
(``gcengine.demo``): every budget source and policy tier holds something. It is collected by
the budget policy and by a summarizing one, so the run pages show a removal ledger and a
summary chain on day one, and replayed under two policies.

Safe to run on every start: the session is recognised by its sha256, the policies by name and
the runs by policy, so nothing is duplicated.
"""

from __future__ import annotations

import json
import os
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

import gcengine
from jaato_web.dashboard import background, selectors, services
from jaato_web.dashboard.models import AgentSession, JobStatus, Policy, PolicyKind, Project
from jaato_web.teams.models import Membership
from jaato_web.teams.permissions import Role

DEMO_FILENAME = "demo-session.json"
DEMO_USER = "demo"
# 240 turns at 85 % of a 200,000-token window: over the 80 % threshold, so every policy has
# something to do, and quick to load.
DEMO_SHAPE = gcengine.DemoShape(seed=7)
# The engine's starter policies come first among the policies it starts with.
DEFAULT_POLICY = next(iter(gcengine.starter_policies()))
# Collected on load: the default policy, one that writes a summary, and one that stashes what
# it takes (so the stash, its search and restore are there on day one).
RUN_POLICIES = (DEFAULT_POLICY, "Summarize old turns", "Reachability stash")
REPLAY_POLICIES = (DEFAULT_POLICY, "Continuous budget")

# Context planner settings to start from; what each leaves out is the engine's default.
STARTER_PLANNER_CONFIGS: dict[str, dict[str, Any]] = {
    "Planner defaults": {},
    "Ask before a pin expires": {"ttl_policy": "ask", "default_pin_ttl": 10},
    "Conversation first": {
        "shares": {"system_pinned": 10, "conversation": 80, "rag": 10},
        "safety_buffer": 1024,
    },
}


class Command(BaseCommand):
    help = (
        "Load starter policies and planner configs and a generated demo session, and run GC on it."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        project = services.project_default()
        self._demo_user(project)
        for kind, starters, message in (
            (PolicyKind.GC, gcengine.starter_policies(), "starter policy"),
            (PolicyKind.PLANNER, STARTER_PLANNER_CONFIGS, "starter planner config"),
        ):
            for name, config in starters.items():
                if not Policy.objects.filter(project=project, kind=kind, name=name).exists():
                    services.policy_create(
                        project=project, name=name, config=config, message=message, kind=kind
                    )
        if project.default_policy_id is None:
            services.project_set_default_policy(
                project=project,
                policy=Policy.objects.get(project=project, kind=PolicyKind.GC, name=DEFAULT_POLICY),
            )
        data = json.dumps(gcengine.generate_demo_session(DEMO_SHAPE)).encode()
        receipt = background.session_upload(project=project, filename=DEMO_FILENAME, data=data)
        session = receipt.session
        if session is None:  # larger than the inline limit: read it now rather than wait
            assert receipt.job is not None
            background.ingest_job_execute(job_id=receipt.job.pk)
            session = selectors.ingest_job_get(projects=[project.pk], job_id=receipt.job.pk).session
        assert session is not None
        self._runs(project, session)
        for name in REPLAY_POLICIES:
            version = Policy.objects.get(
                project=project, kind=PolicyKind.GC, name=name
            ).versions.latest("number")
            replay = background.replay_request(session=session, policy_version=version)
            if replay.status == JobStatus.QUEUED:
                background.replay_execute(replay_id=replay.pk)
        state = "already loaded" if receipt.duplicate else "loaded"
        self.stdout.write(
            f"Demo session {state}: {session.label}, {session.turn_count} turns, "
            f"{session.total_tokens:,} tokens ({session.utilization_percent:.0f} % of "
            f"{session.context_limit:,})."
        )

    def _runs(self, project: Project, session: AgentSession) -> None:
        """One run of each of ``RUN_POLICIES`` (the upload may have queued the default's)."""
        for name in RUN_POLICIES:
            policy = Policy.objects.get(project=project, kind=PolicyKind.GC, name=name)
            if (
                not selectors.run_list(session=session)
                .filter(policy_version__policy=policy)
                .exists()
            ):
                background.run_start(
                    session=session, policy_version=policy.versions.latest("number")
                )
        # A worker may not be running yet; queued work is claimed once, by whoever is first.
        for run in selectors.run_list(session=session).filter(status=JobStatus.QUEUED):
            background.run_execute(run_id=run.pk)

    def _demo_user(self, project: Project) -> None:
        """A user to sign in with: ``demo``, admin of the demo project.

        The password comes from JAATO_DEMO_PASSWORD (default "demo"); an existing user keeps
        the password it has, so a changed one is never reset by loading the demo again.
        """
        user, created = get_user_model().objects.get_or_create(username=DEMO_USER)
        if created:
            user.set_password(os.environ.get("JAATO_DEMO_PASSWORD", "demo"))
            user.save(update_fields=["password"])
        Membership.objects.get_or_create(project=project, user=user, defaults={"role": Role.ADMIN})
        if created:
            self.stdout.write(
                f"Sign in as {DEMO_USER!r} (password from JAATO_DEMO_PASSWORD, default 'demo')."
            )
