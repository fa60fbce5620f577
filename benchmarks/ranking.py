"""How long compare-and-rank takes at the demo's size: 3 sessions x 4 policies.

The demo is loaded as ``./dev serve`` loads it (``manage.py load_demo``: the starter policies
and a 240-turn session), two more demo sessions of the same shape are uploaded (other seeds),
and the first four starter policies are ranked over the three sessions, every process cache
emptied before each ranking (as a worker that has read nothing), in a throwaway SQLite
database. Each session's anchors are stored before, as its first score (the run on upload)
stores them. Medians of ``--repeat`` rankings:

* ``rank, cold``: ``previews.rank`` in this process, nothing cached (wall time, and the CPU
  time of the process, which other work on a shared machine does not inflate as much);
* ``rank, warm``: the same again with the sessions and replays cached;
* ``rank, cold, no session's anchors stored yet``: the CPU of a cold ranking that is the
  sessions' first score, so it reads their anchors and stores them.

``--profile`` prints where a cold ranking spends its time (cProfile, by cumulative time).

``--end-to-end`` times what a user waits for instead: from asking for the compare page of
the three sessions and four policies (A, B and two more) to the ranked table, with a real
worker (``manage.py db_worker``, started afresh for each ranking, so it has read nothing)
taking the ranking and the page polled as htmx polls it (as often as its ``hx-trigger`` says).
It says how long the page took to answer (it compares A and B meanwhile), how long the
worker took to take the ranking up, how long it worked on it, and the worker's CPU time
meanwhile (what other work on a shared machine does not inflate as much).

    python benchmarks/ranking.py [--repeat 3] [--profile] [--end-to-end]

Measured on the shared 2-vCPU machine (load average 2.5-3 from other work): a cold ranking
took 2.8-3.6 s of CPU (5.0-5.7 s before a ranking shared each session's reading, its
requests without GC and its messages' anchors between its replays, read back replays stored
with their scores, and budgets stopped copying the recorded conversation); from the click to
the table, 3.3-5.5 s (median 4.8 s), of which the worker's CPU 2.8-3.3 s, its taking the
ranking up 0.2 s (0.8-1.0 s when idle workers looked for work every second), the rest the
page and its polling. Scoring each replayed collection's anchor retention and the scores at
equal size were two thirds of the worker's time, reading each session's anchors most of that.

Since each stored session's anchors are read once and read back (``SessionAnchors``), the
equal-size scores and the replays share them, and the page polls every quarter second, timed
interleaved with the code before on the same machine at load average 8-10 (six helpers'
work): a cold ranking's CPU 2.6-2.9 s against 3.6-3.9 s before (medians of 3; 1.9 s at load
10 in a later run, 2.5 s when it is the sessions' first score and reads their anchors, once
for both kinds of score); from the click to the table, median 6.8 s
(6.8-8.0 s; the worker's CPU 1.9-2.3 s, taken up after 0.1-0.26 s, the page answering in
0.4-0.6 s) against 11.1 s before (8.8-14.1 s; its CPU 3.4-4.8 s). At that load a second of
CPU takes three of wall time, so the 3 s goal is not shown here; what is left of the worker's
CPU is scoring the collections (about half of it) and replaying them.

With everything of that round together, on the same machine when it was quiet (load average
1.0), three rankings: a cold ranking's CPU 1.98 s (2.65 s when it is the sessions' first score);
from the click to the table 2.74, 2.43 and 2.43 s (median 2.43 s: the page 0.11-0.17 s, taken
up after 0.16-0.26 s, the worker's work 2.0-2.3 s). Sessions whose anchors no score has stored
yet (none scored since upload, or an extractor changed since) add about 0.7 s of CPU to it.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SESSIONS = 3
POLICIES = 4
TARGET_SECONDS = 3.0


def setup_django(database: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jaato_web.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def demo_inputs() -> tuple[list[Any], list[Any]]:
    """The demo loaded as ``./dev serve`` loads it, two more sessions of its shape, and the
    first ``POLICIES`` starter policies' latest versions."""
    import json
    from dataclasses import replace
    from io import StringIO

    from django.core.management import call_command

    import gcengine
    from jaato_web.dashboard import background, selectors, services
    from jaato_web.dashboard.models import AgentSession, Policy, PolicyKind
    from jaato_web.teams.management.commands.load_demo import DEMO_SHAPE

    call_command("load_demo", stdout=StringIO())
    project = services.project_default()
    for seed in range(1, SESSIONS):
        data = json.dumps(
            gcengine.generate_demo_session(replace(DEMO_SHAPE, seed=DEMO_SHAPE.seed + seed))
        ).encode()
        name = f"demo-{seed}.json"
        receipt = background.session_upload(project=project, filename=name, data=data)
        if receipt.session is None:
            assert receipt.job is not None
            background.ingest_job_execute(job_id=receipt.job.pk)
    sessions = list(AgentSession.objects.filter(project=project).order_by("pk")[:SESSIONS])
    for session in sessions:  # as each one's first score (the run on upload) stores them
        services.session_anchors(session)
    names = list(gcengine.starter_policies())[:POLICIES]
    versions = [
        selectors.policy_latest_version(
            policy=Policy.objects.get(project=project, kind=PolicyKind.GC, name=name)
        )
        for name in names
    ]
    return sessions, versions


def cpu_seconds(pid: int) -> float:
    """The CPU time process ``pid`` has used so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def end_to_end(sessions: list[Any], versions: list[Any], repeat: int) -> list[float]:
    """Seconds from asking for the compare page to the ranked table, each with a new worker."""
    import subprocess

    from accounts import admin_client
    from django.urls import reverse

    from jaato_web.dashboard.models import PolicyRanking, Worker

    client = admin_client(sessions[0].project)
    a, b, *also = versions
    query = "&".join(
        [*(f"session={s.pk}" for s in sessions), f"a={a.pk}", f"b={b.pk}"]
        + [f"also={v.pk}" for v in also]
    )
    url = f"{reverse('policy_compare')}?{query}"
    worker = [sys.executable, str(ROOT / "manage.py"), "db_worker", "--no-reload"]
    worker += ["--no-startup-delay", "--verbosity", "0"]
    waited = []
    for _ in range(repeat):
        PolicyRanking.objects.all().delete()
        process = subprocess.Popen(worker, cwd=ROOT, env=os.environ.copy())
        try:
            while not Worker.objects.exists():  # its keeper says it is alive once it runs
                time.sleep(0.1)
            time.sleep(1.0)  # and it has taken what load_demo left queued
            cpu = cpu_seconds(process.pid)
            started = time.perf_counter()
            html = client.get(url).content.decode()
            answered = time.perf_counter() - started
            row = PolicyRanking.objects.get()
            while 'data-ranking-state="done"' not in html:
                if 'data-ranking-state="failed"' in html:
                    raise SystemExit(f"the ranking failed: {PolicyRanking.objects.get().error}")
                time.sleep(poll_seconds(html))
                html = client.get(reverse("policy_ranking", args=[row.pk])).content.decode()
            waited.append(time.perf_counter() - started)
            cpu = cpu_seconds(process.pid) - cpu
            row.refresh_from_db()
            assert row.started_at is not None
            assert row.finished_at is not None
            print(
                f"  click to table {waited[-1]:5.2f} s: page {answered:4.2f} s, taken up after "
                f"{(row.started_at - row.created_at).total_seconds():4.2f} s, worked "
                f"{(row.finished_at - row.started_at).total_seconds():4.2f} s, "
                f"its CPU {cpu:4.2f} s (load average {os.getloadavg()[0]:.2f})"
            )
        finally:
            process.terminate()
            process.wait()
            Worker.objects.all().delete()
    return waited


def poll_seconds(html: str) -> float:
    """How often the page's ranking section asks again while it is pending (its htmx
    ``hx-trigger="every ...ms"``)."""
    found = re.search(r'hx-trigger="every (\d+)ms"', html)
    if found is None:
        raise SystemExit("the pending ranking section does not poll")
    return int(found.group(1)) / 1000


def timed(function: Callable[[], object], clock: Callable[[], float] = time.perf_counter) -> float:
    started = clock()
    function()
    return clock() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--end-to-end", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        setup_django(Path(folder) / "bench.sqlite3")
        from jaato_web import caches
        from jaato_web.dashboard import previews, services
        from jaato_web.dashboard.models import SessionAnchors

        sessions, versions = demo_inputs()
        project = sessions[0].project
        gates, prices = services.project_gates(project), services.project_prices(project)

        def rank() -> Any:
            return previews.rank(sessions, versions, gates, prices)

        cold, cold_cpu, warm, unread_cpu = [], [], [], []
        for _ in range(args.repeat):
            caches.clear_all()
            cold_cpu.append(timed(rank, time.process_time))
            caches.clear_all()
            cold.append(timed(rank))
            warm.append(timed(rank))
            # The same with no session's anchors stored yet: this ranking reads and stores them.
            records = list(SessionAnchors.objects.all())
            SessionAnchors.objects.all().delete()
            caches.clear_all()
            unread_cpu.append(timed(rank, time.process_time))
            SessionAnchors.objects.all().delete()
            SessionAnchors.objects.bulk_create(records)
        print(
            f"{len(sessions)} sessions ({', '.join(str(s.turn_count) for s in sessions)} turns) "
            f"x {len(versions)} policies ({', '.join(v.policy.name for v in versions)})"
        )
        print(
            f"rank, cold {statistics.median(cold):6.2f} s "
            f"(CPU {statistics.median(cold_cpu):5.2f} s)   "
            f"rank, warm {statistics.median(warm):6.2f} s   "
            f"(median of {args.repeat}; load average {os.getloadavg()[0]:.2f})"
        )
        print(
            f"rank, cold, no session's anchors stored yet: CPU "
            f"{statistics.median(unread_cpu):5.2f} s (median of {args.repeat})"
        )
        if args.end_to_end:
            waited = end_to_end(sessions, versions, args.repeat)
            print(f"click to table {statistics.median(waited):6.2f} s (median of {args.repeat})")
        if args.profile:
            caches.clear_all()
            profile = cProfile.Profile()
            profile.runcall(rank)
            out = io.StringIO()
            pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(45)
            print(out.getvalue())
        return 0 if statistics.median(cold) < TARGET_SECONDS else 1


if __name__ == "__main__":
    raise SystemExit(main())
