"""A page of a 300-turn session costs the same queries as a page of a 3-turn one.

Pages read one page of turns, one level of the budget tree and one page of the ledger, so
the number of queries must not grow with the session. A template reaching for something a
selector did not load would show up here as a difference.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from gcengine.synthetic import SessionShape
from jaato_web.dashboard import background, services
from jaato_web.dashboard.models import AgentSession, GCRun, Policy, Project
from tests.web.conftest import TIGHT_BUDGET, session_bytes

pytestmark = pytest.mark.django_db

# Signing in costs three on every page: the browser session, the user, the user's roles; the
# header's project switcher one more.
ACCESS_QUERIES = 4
# Session page: session with its project, policy versions, replay, the session's own pins,
# the default policy and its pins, the first and last turn the history shows ("Go to turn"),
# runs count and page. The top of its budget tree and its page of turns are read once per
# process, then drawn from memory (jaato_web.pages.fragments).
SESSION_PAGE_QUERIES = ACCESS_QUERIES + 9
# Run page: run with session and policy, summaries, ledger count and the comment counts of its
# page; the review panel's verdicts and comment count (its threads and replies add two more
# once there are comments). Both tree tops, the ledger's rows and the page of turns with its
# removals and inserted summaries are read once per process, then drawn from memory.
RUN_PAGE_QUERIES = ACCESS_QUERIES + 6


def sized_session(project: Project, shape: SessionShape) -> AgentSession:
    receipt = background.session_upload(
        project=project, filename=f"{shape.turns}-turns.json", data=session_bytes(shape)
    )
    assert receipt.session is not None
    return receipt.session


def queries_for(client: Client, url: str, **headers: str) -> list[str]:
    client.get(url, headers=headers)  # warm up: anything cached per process is loaded
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, headers=headers)
    assert response.status_code == 200
    return [q["sql"] for q in captured.captured_queries]


@pytest.fixture
def small_and_large(project: Project, run_finished: Callable[..., GCRun]) -> tuple[GCRun, GCRun]:
    policy: Policy = services.policy_create(project=project, name="Tight", config=TIGHT_BUDGET)
    # A default policy adds the pinned-turns lookup, so both pages do all their work.
    services.project_set_default_policy(project=project, policy=policy)
    version = policy.versions.get()
    # Both over the policy's 1 % threshold, so both runs remove things.
    small = run_finished(sized_session(project, SessionShape(turns=3)), policy_version=version)
    large_shape = SessionShape(turns=300, user_chars=120, model_chars=160, tool_result_chars=300)
    large = run_finished(sized_session(project, large_shape), policy_version=version)
    assert small.items_collected
    assert large.items_collected
    assert large.items_collected > 50
    return small, large


def test_session_page_queries_do_not_grow_with_the_session(
    client: Client, small_and_large: tuple[GCRun, GCRun]
) -> None:
    small, large = small_and_large

    small_queries = queries_for(client, reverse("session_detail", args=[small.session_id]))
    large_queries = queries_for(client, reverse("session_detail", args=[large.session_id]))

    assert len(small_queries) == len(large_queries) == SESSION_PAGE_QUERIES, "\n".join(
        large_queries
    )


def test_run_page_queries_do_not_grow_with_the_session(
    client: Client, small_and_large: tuple[GCRun, GCRun]
) -> None:
    small, large = small_and_large

    small_queries = queries_for(client, reverse("run_detail", args=[small.pk]))
    large_queries = queries_for(client, reverse("run_detail", args=[large.pk]))

    assert len(small_queries) == len(large_queries) == RUN_PAGE_QUERIES, "\n".join(large_queries)


@pytest.mark.parametrize(
    ("name", "target", "query"),
    [
        ("session_detail", "history", {"turns": "2"}),
        ("run_detail", "ledger", {"ledger": "2"}),
        ("run_detail", "diff", {"diff": "2"}),
    ],
)
def test_fragments_cost_the_same_for_both_sizes(
    client: Client,
    small_and_large: tuple[GCRun, GCRun],
    name: str,
    target: str,
    query: dict[str, str],
) -> None:
    counts = []
    for run in small_and_large:
        arg = run.session_id if name == "session_detail" else run.pk
        url = f"{reverse(name, args=[arg])}?{urlencode(query)}"
        counts.append(len(queries_for(client, url, HX_Request="true", HX_Target=target)))

    assert counts[0] == counts[1]


def test_tree_fragment_reads_one_slice(
    client: Client, small_and_large: tuple[GCRun, GCRun]
) -> None:
    _, large = small_and_large
    url = reverse("session_tree", args=[large.session_id]) + "?path=conversation"

    queries = queries_for(client, url, HX_Request="true")

    # The browser session, the user, the user's roles; the session; one slice of children.
    assert len(queries) == 5
