"""Dashboard page times for a 10-turn and a 10,000-turn session, rendered on the server.

Builds both sessions through the services (upload, then a GC run of the same policy) in a
temporary SQLite database, then requests each page with Django's test client: a warm-up, then
the median of ``--repeat`` requests, the two sessions' requests taking turns. Pages read one
page of turns, one level of the budget tree and one page of the ledger, so the large
session's session and run pages should cost about what the small one's do: the target is at
most 3x. Fragments are listed too; a node's first slice holds 100 children where the small
session's holds 10, so their ratio is about rows drawn, not session size.

Reading 10,000 turns (45 MB, 7 million tokens) and running GC on them takes a few minutes;
the page timings themselves take seconds.

    python benchmarks/pages.py [--turns 10000] [--repeat 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# A production-like configuration: no debug (so no query log), everything read inline.
DATABASE = Path(tempfile.mkdtemp(prefix="jaato-pages-")) / "pages.sqlite3"
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
        # Runs finish inside run_start, so each page has its run's ledger to show.
        "JAATO_TASK_BACKEND": "immediate",
    }
)

import django  # noqa: E402

django.setup()

from accounts import admin_client  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402

from gcengine import SessionShape, generate_session_file  # noqa: E402
from jaato_web.dashboard import background, services  # noqa: E402
from jaato_web.dashboard.models import GCRun, Project  # noqa: E402

# Low enough that both sessions are over it, so both runs have a ledger to page through.
POLICY = {
    "type": "gc_budget",
    "threshold_percent": 2,
    "target_percent": 1,
    "pressure_percent": 90,
    "preserve_recent_turns": 5,
}


def build(project: Project, turns: int, version: Any) -> GCRun:
    started = time.perf_counter()
    data = json.dumps(generate_session_file(SessionShape(turns=turns, seed=turns))).encode()
    receipt = background.session_upload(project=project, filename=f"{turns}-turns.json", data=data)
    assert receipt.session is not None
    stored = time.perf_counter()
    run = background.run_start(session=receipt.session, policy_version=version)
    run.refresh_from_db()
    assert run.status == "done", run.error
    print(
        f"built {turns:>6,} turns: {len(data) / 1e6:6.1f} MB, "
        f"{receipt.session.total_tokens:>10,} tokens, stored in {stored - started:6.1f} s, "
        f"run in {time.perf_counter() - stored:6.1f} s ({run.items_collected:,} items)"
    )
    return run


def timed(client: Client, url: str, headers: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU milliseconds of one request (SQLite runs in this process, so CPU time
    counts the queries too and is not inflated by other work on the machine)."""
    wall, cpu = time.perf_counter(), time.process_time()
    response = client.get(url, headers=headers)
    elapsed = ((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000)
    assert response.status_code == 200, (url, response.status_code)
    return elapsed


def medians(
    client: Client, urls: tuple[str, str], headers: dict[str, str], repeat: int
) -> list[tuple[float, float]]:
    """Median (wall, CPU) per URL; the two URLs take turns so load on the machine hits both."""
    for _ in range(2):
        for url in urls:
            timed(client, url, headers)
    samples: list[list[tuple[float, float]]] = [[], []]
    for _ in range(repeat):
        for i, url in enumerate(urls):
            samples[i].append(timed(client, url, headers))
    return [
        (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
        for runs in samples
    ]


def pages(run: GCRun) -> dict[str, tuple[str, dict[str, str]]]:
    session_url = reverse("session_detail", args=[run.session_id])
    run_url = reverse("run_detail", args=[run.pk])
    tree_url = reverse("session_tree", args=[run.session_id])
    return {
        "session page": (session_url, {}),
        "run page": (run_url, {}),
        "history, page 2 (htmx)": (
            f"{session_url}?turns=2",
            {"HX-Request": "true", "HX-Target": "history"},
        ),
        "conversation node (htmx)": (f"{tree_url}?path=conversation", {"HX-Request": "true"}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000, help="size of the large session")
    parser.add_argument("--repeat", type=int, default=10, help="timed requests per page")
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    project = services.project_default()
    policy = services.policy_create(project=project, name="Benchmark", config=POLICY)
    version = policy.versions.get()
    small = build(project, 10, version)
    large = build(project, args.turns, version)

    client = admin_client(project)
    print(f"\nmedians of {args.repeat} requests after 2 warm-ups, in ms (wall / CPU)")
    large_name = f"{args.turns:,} turns"
    print(f"{'page':<26}{'10 turns':>16}{large_name:>18}{'ratio':>16}")
    worst = 0.0
    small_pages, large_pages = pages(small), pages(large)
    for name, (small_url, headers) in small_pages.items():
        (small_wall, small_cpu), (large_wall, large_cpu) = medians(
            client, (small_url, large_pages[name][0]), headers, args.repeat
        )
        if name in ("session page", "run page"):
            worst = max(worst, large_cpu / small_cpu)
        print(
            f"{name:<26}{small_wall:>8.1f} /{small_cpu:>6.1f}{large_wall:>10.1f} /{large_cpu:>6.1f}"
            f"{large_wall / small_wall:>8.2f}x /{large_cpu / small_cpu:>5.2f}x"
        )
    verdict = "within" if worst <= 3 else "OVER"
    print(f"\nsession and run pages: worst CPU ratio {worst:.2f}x, {verdict} the 3x target")
    print(f"(database: {DATABASE}; delete it when done)")


if __name__ == "__main__":
    main()
