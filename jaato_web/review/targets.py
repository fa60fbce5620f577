"""What a comment or a verdict is about: a run, one removal item of a run, or a policy version.

Services and selectors take a ``Target`` rather than three optional objects, so the rule
"exactly one target, and a removal item also names its run" is written once, here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from jaato_web.dashboard.models import GCRun, PolicyVersion, Project, Removal


@dataclass(frozen=True)
class Target:
    project: Project
    run: GCRun | None = None
    removal: Removal | None = None
    policy_version: PolicyVersion | None = None

    @classmethod
    def of_run(cls, run: GCRun) -> Target:
        return cls(project=run.session.project, run=run)

    @classmethod
    def of_removal(cls, run: GCRun, removal: Removal) -> Target:
        return cls(project=run.session.project, run=run, removal=removal)

    @classmethod
    def of_version(cls, version: PolicyVersion) -> Target:
        return cls(project=version.policy.project, policy_version=version)

    @property
    def kind(self) -> str:
        """``run``, ``removal`` or ``policy_version``, as the API and the audit log name it."""
        if self.removal is not None:
            return "removal"
        return "run" if self.run is not None else "policy_version"

    @property
    def takes_verdicts(self) -> bool:
        """Runs and policy versions are approved as a whole; removal items only get comments."""
        return self.removal is None

    def fields(self) -> dict[str, Any]:
        """The target's columns, to filter comments and verdicts or to create them."""
        return {"run": self.run, "removal": self.removal, "policy_version": self.policy_version}

    def verdict_fields(self) -> dict[str, Any]:
        return {"run": self.run, "policy_version": self.policy_version}

    def label(self) -> str:
        """The target in words, for the audit log and page titles."""
        if self.removal is not None and self.run is not None:
            return f"item {self.removal.seq} of run {self.run.pk}"
        if self.run is not None:
            return f"run {self.run.pk}"
        assert self.policy_version is not None
        version = self.policy_version
        return f"{version.policy.name} v{version.number}"

    def url(self) -> str:
        """The page that shows the target's review."""
        if self.removal is not None and self.run is not None:
            return reverse("run_removal", args=[self.run.pk, self.removal.seq])
        if self.run is not None:
            return reverse("run_detail", args=[self.run.pk])
        assert self.policy_version is not None
        version = self.policy_version
        return reverse("version_review", args=[version.policy_id, version.number])

    def comment_url(self) -> str:
        """Where the page's comment and reply forms post."""
        if self.removal is not None and self.run is not None:
            return reverse("removal_comment", args=[self.run.pk, self.removal.seq])
        if self.run is not None:
            return reverse("run_comment", args=[self.run.pk])
        assert self.policy_version is not None
        version = self.policy_version
        return reverse("version_comment", args=[version.policy_id, version.number])

    def verdict_url(self) -> str:
        if self.run is not None:
            return reverse("run_verdict", args=[self.run.pk])
        assert self.policy_version is not None
        version = self.policy_version
        return reverse("version_verdict", args=[version.policy_id, version.number])
