"""What one request to each address ``load.py`` reads costs the server, in-process.

The session page, the run page and the sessions API of a stored ``--turns`` session (10,000
by default) and of the default policy's run on it, as ``load.py`` builds them, requested with
Django's test client under production settings (``DJANGO_DEBUG=0``, PostgreSQL). Per address:
the median wall and CPU milliseconds of ``--repeat`` requests after two warm-ups, the SQL
queries one request makes and the bytes it answers. ``--profile`` adds the functions that
took the most CPU time over those requests (cProfile, cumulative).

The database (``jaato_request_cost`` beside the one ``--database-url`` names) is kept, so a
second run measures at once; reading the session and running GC on it the first time takes
a few minutes. ``--fresh`` builds it again. CPU time is this process's: PostgreSQL's own work
is on the query count and the wall time.

    .venv/bin/python benchmarks/request_cost.py --database-url postgresql://...  # or set
                                                    # JAATO_TEST_POSTGRES_URL
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

DATABASE = "jaato_request_cost"
DEMO_FILENAME = "demo-session.json"
DEMO_USER = "demo"


def kept_database(url: str, fresh: bool) -> str:
    """The benchmark's database beside the one ``url`` names (created when missing)."""
    with psycopg.connect(url, autocommit=True) as connection:
        if fresh:
            connection.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        found = connection.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]
        ).fetchone()
        if found is None:
            connection.execute(f"CREATE DATABASE {DATABASE}")
    from live import with_database

    return str(with_database(url, DATABASE))


def configure(database_url: str) -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "jaato_web.settings",
            "DATABASE_URL": database_url,
            "DJANGO_DEBUG": "false",
            "DJANGO_SECRET_KEY": "benchmark-only-" + "x" * 40,
            "DJANGO_SECURE_SSL_REDIRECT": "false",
            "DJANGO_ALLOWED_HOSTS": "testserver",
            "JAATO_INLINE_INGEST_BYTES": str(1 << 30),
            # The default policy's run on upload finishes inside the upload, as a worker's would.
            "JAATO_TASK_BACKEND": "immediate",
            "JAATO_DEMO_PASSWORD": "benchmark-only",
        }
    )
    import django

    django.setup()


def built(turns: int) -> tuple[int, int]:
    """The ``turns`` session and the default policy's run on it, stored once in the demo's
    project (whose default policy runs on every upload), as ``load.py`` stores them."""
    from django.core.management import call_command

    from gcengine import SessionShape, generate_session_file
    from jaato_web.dashboard import background
    from jaato_web.dashboard.models import AgentSession, GCRun

    session = AgentSession.objects.filter(turn_count=turns).first()
    if session is None:
        call_command("load_demo", verbosity=0)
        demo = AgentSession.objects.get(label=DEMO_FILENAME)
        started = time.perf_counter()
        data = json.dumps(generate_session_file(SessionShape(turns=turns, seed=turns))).encode()
        receipt = background.session_upload(
            project=demo.project, filename=f"{turns}-turns.json", data=data
        )
        assert receipt.session is not None
        session = receipt.session
        seconds = time.perf_counter() - started
        print(f"stored {turns:,} turns and ran the default policy in {seconds:.0f} s")
    run = GCRun.objects.filter(session=session, trigger="upload").get()
    assert run.status == "done", run.error
    return session.pk, run.pk


def clients(project: Any) -> tuple[Any, dict[str, str]]:
    """The demo user's signed-in page client, and the headers of a token of theirs."""
    from django.contrib.auth.models import User
    from django.test import Client

    from jaato_web.teams.services import token_create

    user = User.objects.get(username=DEMO_USER)
    page_client = Client()
    page_client.force_login(user)
    secret = token_create(user=user, name="bench", projects=[project]).secret
    return page_client, {"Authorization": f"Bearer {secret}"}


def measured(
    client: Any, url: str, headers: dict[str, str], repeat: int, profile: bool
) -> tuple[float, float, int, int, str]:
    """Median wall and CPU ms, queries and bytes of one request, and the profile if asked."""
    from django.db import connection

    for _ in range(2):
        assert client.get(url, headers=headers).status_code == 200, url
    sql: list[str] = []

    def counted(execute: Any, query: str, *args: Any) -> Any:
        sql.append(query)
        return execute(query, *args)

    with connection.execute_wrapper(counted):
        response = client.get(url, headers=headers)
    walls, cpus = [], []
    profiler = cProfile.Profile(time.process_time) if profile else None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        answer = client.get(url, headers=headers)
        if profiler:
            profiler.disable()
        cpus.append((time.process_time() - cpu) * 1000)
        walls.append((time.perf_counter() - wall) * 1000)
        assert answer.status_code == 200, url
    report = ""
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(40)
        report = out.getvalue()
    return (
        statistics.median(walls),
        statistics.median(cpus),
        len(sql),
        len(response.content),
        report,
    )


def main() -> None:
    from live import add_postgres_option, postgres_url

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_postgres_option(parser)
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20, help="timed requests per address")
    parser.add_argument("--fresh", action="store_true", help="build the database again")
    parser.add_argument("--profile", action="store_true", help="print where the time goes")
    options = parser.parse_args()
    database_url = postgres_url(parser, options)
    configure(kept_database(database_url, options.fresh))

    from django.core.management import call_command

    from jaato_web.dashboard.models import AgentSession

    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)  # the pages name them
    session_id, run_id = built(options.turns)
    page_client, api_headers = clients(AgentSession.objects.get(pk=session_id).project)
    addresses = [
        ("session page", page_client, f"/sessions/{session_id}/", {}),
        ("run page", page_client, f"/runs/{run_id}/", {}),
        ("sessions API", page_client, f"/api/sessions/{session_id}", api_headers),
    ]
    print(
        f"\n{options.turns:,}-turn session {session_id}, run {run_id}: medians of "
        f"{options.repeat} requests after 2 warm-ups"
    )
    print(f"{'address':<14}{'wall ms':>9}{'CPU ms':>9}{'queries':>9}{'bytes':>10}")
    reports = []
    for name, client, url, headers in addresses:
        wall, cpu, queries, size, report = measured(
            client, url, headers, options.repeat, options.profile
        )
        print(f"{name:<14}{wall:>9.1f}{cpu:>9.1f}{queries:>9}{size:>10,}")
        reports.append((name, report))
    for name, report in reports:
        if report:
            print(f"\n--- {name}\n{report}")


if __name__ == "__main__":
    main()
