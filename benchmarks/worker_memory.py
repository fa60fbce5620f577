"""How much memory a task worker takes to read one large upload, and how long it takes.

A throwaway SQLite database is migrated, a generated session is uploaded through the upload
service (over ``JAATO_INLINE_INGEST_BYTES``, so it becomes a background job), then a real
``manage.py db_worker --batch`` process reads it and exits. Its peak resident memory comes
from ``wait4``; an idle worker (a batch with nothing to do) is measured the same way, so what
the upload itself costs can be told from Django's and tiktoken's own footprint.

Shapes: ``turns`` (the reference shape: requests, answers and a tool result every third turn;
10,000 turns is about 45 MB) and ``single-text`` (one request of ``--megabytes`` of words, as
a pasted log would be). Each is read by a fresh worker, then two more files of the shape by
another, whose second upload is read by a worker that holds what reading one left behind.
Target: the upload's share of the peak under 4x the file. A worker loads its token
vocabulary as it starts (``manage.py db_worker``), so the idle worker's figure holds it.

Measured on the shared 2-vCPU machine: ``turns``, 10,000 of them (45.5 MB): idle worker 117
MB; a fresh worker 246 MB, a share of 129 MB = 2.8x the file; the next upload 259 MB, 142 MB =
3.1x (306 MB against an idle worker without its vocabulary, 79 MB, and 401 MB for the next
upload, before SQLite's large values were read and written a piece at a time, the original was
packed before the file is read, a worker let the session it held go before reading the next
and the record held the user inputs as places in the history; the upload request packs the
original now, and the worker only reads it back). The session itself is about 105 MB of Python
memory. ``single-text`` (49 MB): 272 MB, a share of 155 MB = 3.2x, and 278 MB for the next
(664 MB, 12.0x, before a long text was counted a piece at a time and its preview read only its
start: the list of its 12 million token ids and of its 8 million words).

    python benchmarks/worker_memory.py [--shape turns --turns 10000] [--shape single-text
        --megabytes 49] [--gc-on-upload]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def session_file(shape: str, turns: int, megabytes: float, seed: int) -> bytes:
    from gcengine import SessionShape, generate_session_file

    if shape == "turns":
        return json.dumps(generate_session_file(SessionShape(turns=turns, seed=seed))).encode()
    # One request of that many characters and a short answer; the file's list of the user's
    # inputs would hold the request a second time.
    chars = int(megabytes * 1e6)
    one = SessionShape(turns=1, user_chars=chars, model_chars=20, tool_every=0, seed=seed)
    return json.dumps({**generate_session_file(one), "user_inputs": []}).encode()


def environment(database: Path, gc_on_upload: bool) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{database}",  # an absolute path: sqlite:////tmp/...
        "JAATO_TASK_BACKEND": "database",
        "JAATO_GC_ON_UPLOAD": "true" if gc_on_upload else "false",
        "DJANGO_SETTINGS_MODULE": "jaato_web.settings",
    }


def prepare(step: str, args: argparse.Namespace) -> None:
    """Migrate the database, or upload a session (seeded by ``--seed``): in a process of its
    own, so the one that starts the workers stays small (a forked child's peak RSS counts its
    parent's pages)."""
    import django

    django.setup()
    from django.core.management import call_command

    from jaato_web.dashboard import background, services

    if step == "migrate":
        call_command("migrate", verbosity=0)
        return
    data = session_file(args.shape, args.turns, args.megabytes, args.seed)
    receipt = background.session_upload(
        project=services.project_default(), filename="bench.json", data=data
    )
    assert receipt.job is not None, "the upload was read inline: make it larger"
    print(len(data))


def run(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Run a command to its end: its peak RSS in MB, its run time in seconds, its output."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed (exit {os.waitstatus_to_exitcode(status)})")
    return usage.ru_maxrss / 1024, elapsed, output  # Linux reports kilobytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=["turns", "single-text"], default="turns")
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--megabytes", type=float, default=49)
    parser.add_argument("--gc-on-upload", action="store_true", help="also run a default policy")
    parser.add_argument("--prepare", choices=["migrate", "upload"], help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=7, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prepare:
        prepare(args.prepare, args)
        return

    worker = [sys.executable, "manage.py", "db_worker", "--batch", "--no-reload"]
    worker += ["--no-startup-delay", "--verbosity", "0"]
    this = [sys.executable, __file__, "--shape", args.shape, "--turns", str(args.turns)]
    this += ["--megabytes", str(args.megabytes)]
    with tempfile.TemporaryDirectory() as folder:
        database = Path(folder) / "bench.sqlite3"
        env = environment(database, args.gc_on_upload)
        run([*this, "--prepare", "migrate"], env)
        idle_rss, _, _ = run(worker, env)
        _, _, size = run([*this, "--prepare", "upload"], env)
        first_rss, elapsed, _ = run(worker, env)
        # Two more files of the same shape, read by one worker: the second is read by a worker
        # that holds what reading the first left (its caches, its allocator's free memory).
        for seed in (8, 9):
            run([*this, "--prepare", "upload", "--seed", str(seed)], env)
        next_rss, _, _ = run(worker, env)
        check = "from jaato_web.dashboard.models import IngestJob as J; "
        check += "print([(j.status, j.error) for j in J.objects.exclude(status='done')])"
        _, _, failed = run([sys.executable, "manage.py", "shell", "-v", "0", "-c", check], env)
        assert failed.strip() == "[]", failed

    megabytes = int(size) / 1e6
    print(f"upload       : {args.shape}, {megabytes:.1f} MB")
    print(f"read in      : {elapsed:.1f} s (worker start included)")
    print(f"idle worker  : {idle_rss:.0f} MB peak RSS")
    for name, peak_rss in (("a fresh worker", first_rss), ("the next one", next_rss)):
        share = peak_rss - idle_rss
        print(
            f"{name:15}: {peak_rss:.0f} MB peak RSS; the upload's share {share:.0f} MB, "
            f"{share / megabytes:.1f}x the file (target < 4x)"
        )


if __name__ == "__main__":
    main()
