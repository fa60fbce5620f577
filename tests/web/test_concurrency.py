"""Writes that arrive at once: each waits its turn, and a real conflict answers 409.

Threads stand for concurrent requests: each has its own database connection, as each request
of a threaded server does, against a database file (SQLite) or server (PostgreSQL). On SQLite
every transaction begins IMMEDIATE and waits for the write lock (the busy timeout) instead of
failing with "database is locked"; on PostgreSQL the policy's row lock orders the saves.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client

from jaato_web.dashboard import services
from jaato_web.dashboard.models import AgentSession, Policy, PolicyVersion, Project, SessionPin
from tests.web.conftest import TIGHT_BUDGET, signed_in_client

pytestmark = pytest.mark.django_db(transaction=True)


def at_once(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run every call in its own thread, all released together; what each returned or raised."""
    start = threading.Barrier(len(calls))
    outcomes: list[Any] = [None] * len(calls)

    def run(position: int, call: Callable[[], Any]) -> None:
        try:
            start.wait()
            outcomes[position] = call()
        except Exception as error:  # the test looks at what each call raised
            outcomes[position] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return outcomes


def status_of(client: Client, url: str, body: dict[str, Any]) -> Callable[[], int]:
    return lambda: client.post(url, body, content_type="application/json").status_code


def test_twenty_saves_from_the_same_version_store_one_and_answer_409_to_the_rest(
    member: User, budget_policy: Policy
) -> None:
    url = f"/api/policies/{budget_policy.pk}/versions"
    saves = [
        status_of(
            signed_in_client(member),
            url,
            {"config": {**TIGHT_BUDGET, "target_percent": 0.1 + i / 100}, "base_version": 1},
        )
        for i in range(20)
    ]

    statuses = Counter(at_once(saves))

    assert statuses == {201: 1, 409: 19}
    assert list(budget_policy.versions.values_list("number", flat=True)) == [2, 1]


def test_restores_and_pin_changes_racing_a_save_never_lose_a_version(
    member: User, budget_policy: Policy
) -> None:
    """Every write that succeeds gets the next number; the others are told to reload."""
    services.policy_save(policy=budget_policy, config=TIGHT_BUDGET, base_number=1)
    url = f"/api/policies/{budget_policy.pk}"
    writes = [
        status_of(signed_in_client(member), f"{url}/versions/1/restore", {"base_version": 2}),
        status_of(signed_in_client(member), f"{url}/pins", {"pin_turn_indices": [1]}),
        status_of(
            signed_in_client(member), f"{url}/versions", {"config": TIGHT_BUDGET, "base_version": 2}
        ),
    ] * 4

    statuses = at_once(writes)

    assert set(statuses) <= {201, 200, 409}
    numbers = list(budget_policy.versions.values_list("number", flat=True))
    assert numbers == list(range(len(numbers), 0, -1))  # no gap, no number twice


def test_ninety_mixed_writes_at_once_all_succeed(
    project: Project, member: User, stored_session: AgentSession
) -> None:
    """Pins, new policies and replays from thirty clients at once: none answers 500."""
    session_url = f"/api/sessions/{stored_session.pk}"
    writes: list[Callable[[], int]] = []
    for i in range(30):
        client = signed_in_client(member)
        writes += [
            status_of(client, f"{session_url}/pins", {"turn_index": i % 8, "pinned": True}),
            status_of(
                client,
                f"/api/policies?project={project.pk}",
                {"name": f"p{i}", "config": TIGHT_BUDGET},
            ),
            status_of(
                client,
                f"{session_url}/replays",
                {"config": {**TIGHT_BUDGET, "target_percent": 0.1 + i / 100}},
            ),
        ]

    statuses = Counter(at_once(writes))

    assert set(statuses) <= {200, 201, 202}, statuses
    assert Policy.objects.filter(project=project).count() == 30
    assert SessionPin.objects.filter(session=stored_session).count() == 8
    assert stored_session.replays.count() == 30
    assert PolicyVersion.objects.filter(policy__project=project).count() == 30
