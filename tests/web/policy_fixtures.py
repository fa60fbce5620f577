"""Fixtures for the policy editor's tests: a project, a stored session, a policy.

Test modules load them with ``pytest_plugins = ["tests.web.policy_fixtures"]``; the values
they use are in ``tests.web.policy_data``.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from jaato_web.dashboard import services
from jaato_web.dashboard.models import AgentSession, Policy, Project
from tests.web.policy_data import TRUNCATE_POLICY, stored_session


@pytest.fixture
def project(db: None) -> Project:
    return services.project_default()


@pytest.fixture
def agent_session(project: Project) -> AgentSession:
    """20 turns of gpt-4 (8,192-token window), about 70 % full."""
    return stored_session(project)


@pytest.fixture
def policy(project: Project, member: User) -> Policy:
    return services.policy_create(
        project=project, name="Truncate 80/40", config=TRUNCATE_POLICY, actor=member
    )
