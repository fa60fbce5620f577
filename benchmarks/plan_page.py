"""The Plan tab's times for 1,000- and 10,000-turn sessions, through the page.

Stores each session through the services in a temporary SQLite database (1 % of its turns
pinned in the session), then requests with Django's test client:

* ``first plan``: the first plan of the session in this process: the stored session is
  unpacked (``services.engine_session_of``), read into planner items, planned and rendered;
* ``another model``: the tab after changing the model (a window not planned before): the
  items are kept, the plan is new, as when a user picks another model;
* ``another pin TTL``: the tab after changing the TTL of the session's pins (the items are
  kept per set of pins; the new TTL is stamped on the pinned ones);
* ``same choices``: the same page again (the plan comes from the cache of plans);
* ``steps``: the step-through fragment, 50 user turns planned and committed;
* ``API, no decisions``: ``POST /api/sessions/{id}/plan`` for another window, without the
  decisions in the answer.

Medians of ``--repeat`` requests after a warm-up (the first plan is measured once per
session). The target: planning a 10,000-turn session well under a second through the page.

    python benchmarks/plan_page.py [--sizes 1000 10000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# A production-like configuration: no debug (so no query log), everything read inline.
DATABASE = Path(tempfile.mkdtemp(prefix="jaato-plan-")) / "plan.sqlite3"
os.environ.update(
    {
        "DJANGO_SETTINGS_MODULE": "jaato_web.settings",
        "DATABASE_URL": f"sqlite:///{DATABASE}",
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": "benchmark-only-" + "x" * 40,
        "DJANGO_SECURE_SSL_REDIRECT": "false",
        "DJANGO_ALLOWED_HOSTS": "testserver",
        "JAATO_UPLOAD_MAX_BYTES": str(1 << 30),
        "JAATO_INLINE_INGEST_BYTES": str(1 << 30),
        "JAATO_GC_ON_UPLOAD": "false",
    }
)

import django  # noqa: E402

django.setup()

from accounts import admin_client  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402

from gcengine import SessionShape, generate_session_file  # noqa: E402
from jaato_web import caches  # noqa: E402
from jaato_web.dashboard import background, services  # noqa: E402
from jaato_web.dashboard.models import AgentSession, Project  # noqa: E402


def build(project: Project, turns: int) -> AgentSession:
    started = time.perf_counter()
    data = json.dumps(generate_session_file(SessionShape(turns=turns, seed=turns))).encode()
    receipt = background.session_upload(project=project, filename=f"{turns}-turns.json", data=data)
    session = receipt.session
    assert session is not None
    for turn in range(0, turns, 100):
        services.session_pin(session=session, turn_index=turn)
    print(
        f"stored {turns:>6,} turns: {len(data) / 1e6:5.1f} MB, {session.total_tokens:>10,} "
        f"tokens, {turns // 100} turns pinned, in {time.perf_counter() - started:5.1f} s"
    )
    return session


def ms(request: Callable[[], Any]) -> float:
    started = time.perf_counter()
    response = request()
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status_code == 200, response.status_code
    return elapsed


def windows() -> Iterator[int]:
    """A window never planned before, each time: a new plan, as after picking a model."""
    window = 150_000
    while True:
        window += 1
        yield window


def median(request: Callable[[], Any], repeat: int) -> float:
    ms(request)
    return statistics.median(ms(request) for _ in range(repeat))


def measure(client: Client, session: AgentSession, repeat: int) -> dict[str, float]:
    plan_url = reverse("session_plan", args=[session.pk])
    steps_url = reverse("session_plan_steps", args=[session.pk])
    api_url = f"/api/sessions/{session.pk}/plan"
    fresh = windows()
    ttls = iter(range(1, 1_000))
    caches.clear_all()
    return {
        "first plan": ms(lambda: client.get(plan_url)),
        "another model": median(
            lambda: client.get(f"{plan_url}?context_length={next(fresh)}&pin_ttl=5"), repeat
        ),
        "another pin TTL": median(lambda: client.get(f"{plan_url}?pin_ttl={next(ttls)}"), repeat),
        "same choices": median(lambda: client.get(f"{plan_url}?pin_ttl=5"), repeat),
        "steps": median(
            lambda: client.get(
                f"{steps_url}?context_length={next(fresh)}&pin_ttl=5",
                headers={"HX-Request": "true"},
            ),
            repeat,
        ),
        "API, no decisions": median(
            lambda: client.post(
                api_url,
                {"context_length": next(fresh), "decisions": False},
                content_type="application/json",
            ),
            repeat,
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--repeat", type=int, default=7, help="timed requests per case")
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    project = services.project_default()
    sessions = [build(project, turns) for turns in args.sizes]
    client = admin_client(project)
    results = [measure(client, session, args.repeat) for session in sessions]

    print(f"\nwall ms (first plan once, the others medians of {args.repeat})")
    print(f"{'':<20}" + "".join(f"{f'{n:,} turns':>16}" for n in args.sizes))
    for case in results[0]:
        print(f"{case:<20}" + "".join(f"{r[case]:>16.1f}" for r in results))
    print(f"(database: {DATABASE}; delete it when done)")


if __name__ == "__main__":
    main()
