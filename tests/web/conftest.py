"""Fixtures for the dashboard's tests (pytest-django)."""

from __future__ import annotations

import pytest
from pytest_django.fixtures import Settings

IMMEDIATE_TASKS = {"default": {"BACKEND": "django.tasks.backends.immediate.ImmediateBackend"}}


@pytest.fixture(autouse=True)
def _tasks_run_immediately(settings: Settings) -> None:
    """Tasks run inside the call that enqueues them, so tests need no worker.

    The dashboard itself defaults to the database backend and a worker; a test
    of that path switches TASKS back with the `settings` fixture.
    """
    settings.TASKS = IMMEDIATE_TASKS
