"""The production server under load, on loopback: latency under concurrent readers, and
concurrent uploads and runs that all complete exactly once.

Starts the production command (``./dev production``, ``DJANGO_DEBUG=0``, PostgreSQL) on a
fresh database beside the one ``--database-url`` names, signs in and makes an API token, then:

1. uploads a ``--turns`` session (10,000 by default, about 45 MB) through the API, waits for
   the background reader and for the default policy's GC run on it; exports a run of it that
   keeps every turn and uploads that export again (it must fit under the upload limit);
2. runs ``--clients`` concurrent clients for ``--seconds`` seconds, each requesting in turn
   the session page, the run page and the sessions API of that session over a kept-alive
   connection, and reports p50/p95/p99 and errors per address;
3. uploads ``--uploads`` different files at once, then the same files again at once (each
   must be stored once, then recognised), then starts a GC run on each new session at once
   (each must finish, once).

Loopback only; every loop is bounded in count or time. The client shares the machine's
cores with the server, so figures are the pair's; the load average is printed before and
after.

    .venv/bin/python benchmarks/load.py --database-url postgresql://...   # or set
                                                   # JAATO_TEST_POSTGRES_URL
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from live import (  # noqa: E402
    Browser,
    LiveFailure,
    Server,
    add_postgres_option,
    check,
    drop_database,
    end_server,
    fresh_database,
    make_token,
    multipart,
    postgres_url,
    sign_in,
    start_server,
    step,
    stop_server,
    wait_until,
)

from gcengine import SessionShape, generate_session_file  # noqa: E402

LOAD_DATABASE = "jaato_load_benchmark"
UPLOAD_LIMIT = 50 * 1024 * 1024  # JAATO_UPLOAD_MAX_BYTES's default, which the server keeps
INGEST_SECONDS = 900
RUN_SECONDS = 900
# A run that removes nothing: its export is the whole session, the largest an export can be.
KEEP_ALL = {"type": "gc_truncate", "threshold_percent": 99, "preserve_recent_turns": 100_000}
SMALL_RUN = {"type": "gc_budget", "threshold_percent": 1, "target_percent": 0.5}


@dataclass
class Api:
    browser: Browser
    token: str

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", **(extra or {})}

    def get(self, path: str) -> Any:
        answer = self.browser.get(path, self.headers())
        check(answer.status == 200, f"GET {path} answered {answer.status}: {answer.text[:200]}")
        return answer.json()

    def post_json(self, path: str, body: Any) -> tuple[int, Any]:
        answer = self.browser.request(
            "POST",
            path,
            json.dumps(body).encode(),
            self.headers({"Content-Type": "application/json"}),
        )
        return answer.status, answer.json()

    def upload(self, name: str, data: bytes) -> tuple[int, Any]:
        body, content_type = multipart({}, {"file": (name, data)})
        answer = self.browser.request(
            "POST", "/api/sessions", body, self.headers({"Content-Type": content_type})
        )
        return answer.status, answer.json()

    def stored(self, status: int, answer: Any, name: str) -> int:
        """The session an upload became, once the background reader is done with it."""
        check(status in {200, 201, 202}, f"uploading {name} answered {status}: {answer}")
        if answer["session"] is not None:
            return int(answer["session"]["id"])
        job = answer["job"]["id"]

        def read() -> int | None:
            found = self.get(f"/api/sessions/uploads/{job}")
            check(found["status"] != "failed", f"reading {name} failed: {found['error']}")
            return found["session_id"] if found["status"] == "done" else None

        return int(wait_until(f"{name} read in the background", INGEST_SECONDS, read))

    def finished_run(self, run_id: int) -> dict[str, Any]:
        def done() -> dict[str, Any] | None:
            run: dict[str, Any] = self.get(f"/api/runs/{run_id}")
            return run if run["status"] in {"done", "failed"} else None

        run = wait_until(f"run {run_id} finished", RUN_SECONDS, done)
        check(run["status"] == "done", f"run {run_id} failed: {run['error']}")
        return run


def session_ids(api: Api) -> set[int]:
    ids: set[int] = set()
    page, pages = 1, 1
    while page <= pages:
        listed = api.get(f"/api/sessions?page={page}")
        ids |= {s["id"] for s in listed["items"]}
        page, pages = page + 1, listed["pages"]
    return ids


def session_file(turns: int, seed: int) -> bytes:
    return json.dumps(generate_session_file(SessionShape(turns=turns, seed=seed))).encode()


# --- 1. The large session ------------------------------------------------------------------------


def large_session(api: Api, turns: int, reupload: bool) -> tuple[int, int]:
    """The stored large session and the default policy's run on it."""
    data = session_file(turns, seed=turns)
    started = time.monotonic()
    session_id = api.stored(*api.upload(f"{turns}-turns.json", data), f"{turns}-turns.json")
    step(
        f"{turns:,}-turn session ({len(data) / 1e6:.1f} MB) uploaded and read in "
        f"{time.monotonic() - started:.0f} s: session {session_id}"
    )
    started = time.monotonic()

    def upload_run() -> int | None:
        runs = api.get(f"/api/sessions/{session_id}/runs")
        return runs[0]["id"] if runs else None

    run = api.finished_run(wait_until("the default policy's run", RUN_SECONDS, upload_run))
    step(
        f"default policy's run {run['id']} done {time.monotonic() - started:.0f} s later: "
        f"{run['tokens_before']:,} -> {run['tokens_after']:,} tokens"
    )
    if reupload:
        export_again(api, session_id)
    return session_id, int(run["id"])


def export_again(api: Api, session_id: int) -> None:
    status, started = api.post_json(f"/api/sessions/{session_id}/runs", {"config": KEEP_ALL})
    check(status == 202, f"starting the keep-all run answered {status}: {started}")
    run = api.finished_run(started["id"])
    check(run["tokens_after"] == run["tokens_before"], "the keep-all run removed something")
    answer = api.browser.get(f"/api/runs/{run['id']}/session", api.headers())
    check(answer.status == 200, f"the export answered {answer.status}")
    exported = answer.body
    step(
        f"export of the whole session: {len(exported) / 1e6:.1f} MB "
        f"({len(exported) / UPLOAD_LIMIT:.0%} of the {UPLOAD_LIMIT / 2**20:.0f} MiB upload limit)"
    )
    check(len(exported) < UPLOAD_LIMIT, "the export does not fit under the upload limit")
    started_at = time.monotonic()
    again = api.stored(*api.upload("exported.json", exported), "exported.json")
    step(f"the export uploaded again as session {again} in {time.monotonic() - started_at:.0f} s")


# --- 2. Concurrent readers -----------------------------------------------------------------------


@dataclass
class Sample:
    name: str
    seconds: float
    ok: bool


def read_loop(
    port: int,
    targets: list[tuple[str, str, dict[str, str]]],
    offset: int,
    until: float,
    samples: list[Sample],
    lock: threading.Lock,
) -> None:
    """One client: the targets in turn over one kept-alive connection, until ``until``."""
    mine: list[Sample] = []
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    turn = offset
    while time.monotonic() < until:
        name, path, headers = targets[turn % len(targets)]
        turn += 1
        started = time.monotonic()
        try:
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            response.read()
            ok = response.status == 200
            if response.getheader("Connection", "").lower() == "close":
                connection.close()
        except (OSError, http.client.HTTPException):
            ok = False
            connection.close()
        mine.append(Sample(name, time.monotonic() - started, ok))
    connection.close()
    with lock:
        samples.extend(mine)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def concurrent_reads(api: Api, session_id: int, run_id: int, clients: int, seconds: float) -> None:
    browser = api.browser
    page_headers = {
        "X-Forwarded-Proto": "https",
        "Cookie": "; ".join(f"{k}={v}" for k, v in browser.cookies.items()),
    }
    targets = [
        ("session page", f"/sessions/{session_id}/", page_headers),
        ("run page", f"/runs/{run_id}/", page_headers),
        (
            "sessions API",
            f"/api/sessions/{session_id}",
            api.headers({"X-Forwarded-Proto": "https"}),
        ),
    ]
    for name, path, headers in targets:  # warm each process's caches a little
        for _ in range(2):
            answer = browser.get(path, headers)
            check(answer.status == 200, f"{name} answered {answer.status}")
    samples: list[Sample] = []
    lock = threading.Lock()
    load_before = os.getloadavg()
    step(f"{clients} clients for {seconds:.0f} s on the session page, run page and sessions API")
    until = time.monotonic() + seconds
    threads = [
        threading.Thread(
            target=read_loop, args=(browser.port, targets, n, until, samples, lock), daemon=True
        )
        for n in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=seconds + 120)
    load_after = os.getloadavg()
    print(
        f"\n{'address':<14}{'requests':>9}{'req/s':>8}{'p50 ms':>9}{'p95 ms':>9}"
        f"{'p99 ms':>9}{'max ms':>9}{'errors':>8}"
    )
    for name, _, _ in targets:
        mine = [s for s in samples if s.name == name]
        times = [s.seconds * 1000 for s in mine]
        errors = sum(not s.ok for s in mine)
        print(
            f"{name:<14}{len(mine):>9}{len(mine) / seconds:>8.1f}{percentile(times, 0.5):>9.0f}"
            f"{percentile(times, 0.95):>9.0f}{percentile(times, 0.99):>9.0f}{max(times):>9.0f}"
            f"{errors:>8}"
        )
    everything = [s.seconds * 1000 for s in samples]
    print(
        f"{'all':<14}{len(samples):>9}{len(samples) / seconds:>8.1f}"
        f"{percentile(everything, 0.5):>9.0f}{percentile(everything, 0.95):>9.0f}"
        f"{percentile(everything, 0.99):>9.0f}{max(everything):>9.0f}"
        f"{sum(not s.ok for s in samples):>8}"
    )
    print(
        f"load average (1, 5, 15 min) before {', '.join(f'{x:.2f}' for x in load_before)}; "
        f"after {', '.join(f'{x:.2f}' for x in load_after)}; {os.cpu_count()} cores\n"
    )


# --- 3. Concurrent uploads and runs --------------------------------------------------------------


def concurrent_writes(api: Api, count: int) -> None:
    # Sizes on both sides of the 2 MB inline limit: some read in the request, some by workers.
    files = {
        f"concurrent-{n}.json": session_file(150 + 100 * n, seed=1000 + n) for n in range(count)
    }
    before = session_ids(api)

    def upload(item: tuple[str, bytes]) -> tuple[str, int, Any]:
        # A client of its own per thread: the browser's connection is not shared.
        mine = Api(Browser(api.browser.port), api.token)
        return (item[0], *mine.upload(*item))

    started = time.monotonic()
    with ThreadPoolExecutor(count) as pool:
        answers = list(pool.map(upload, files.items()))
    sessions = {name: api.stored(status, answer, name) for name, status, answer in answers}
    step(
        f"{count} concurrent uploads ({sum(map(len, files.values())) / 1e6:.1f} MB) stored in "
        f"{time.monotonic() - started:.0f} s: {sorted(s for _, s, _ in answers)} statuses"
    )
    after = session_ids(api)
    check(len(set(sessions.values())) == count, f"{count} files became {sessions}")
    check(after - before == set(sessions.values()), "sessions appeared or went missing")

    with ThreadPoolExecutor(count) as pool:
        again = list(pool.map(upload, files.items()))
    check(
        all(status == 200 and answer["duplicate"] for _, status, answer in again),
        "a file sent again was not recognised",
    )
    check(
        {name: answer["session"]["id"] for name, _, answer in again} == sessions,
        "a file sent again was taken for another session",
    )
    check(
        session_ids(api) == after,
        "sending the files again stored something",
    )
    step(f"the same {count} files sent again at once: each recognised, nothing stored")

    def start_run(session_id: int) -> tuple[int, Any]:
        mine = Api(Browser(api.browser.port), api.token)
        return mine.post_json(f"/api/sessions/{session_id}/runs", {"config": SMALL_RUN})

    started = time.monotonic()
    with ThreadPoolExecutor(count) as pool:
        runs = list(pool.map(start_run, sessions.values()))
    check(all(status == 202 for status, _ in runs), f"starting runs answered {runs}")
    run_ids = [answer["id"] for _, answer in runs]
    check(len(set(run_ids)) == count, f"{count} runs started as {run_ids}")
    for run_id in run_ids:
        api.finished_run(run_id)
    for session_id, run_id in zip(sessions.values(), run_ids, strict=True):
        listed = [
            r for r in api.get(f"/api/sessions/{session_id}/runs") if r["trigger"] != "upload"
        ]
        check([r["id"] for r in listed] == [run_id], f"session {session_id} lists {listed}")
    step(f"{count} concurrent runs: all done in {time.monotonic() - started:.0f} s, each once")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_postgres_option(parser)
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--uploads", type=int, default=10, help="concurrent uploads and runs")
    parser.add_argument("--workers", type=int, default=2, help="web server processes")
    parser.add_argument("--task-workers", type=int, default=2)
    parser.add_argument(
        "--no-reupload", action="store_true", help="skip exporting and uploading again"
    )
    options = parser.parse_args()
    database_url = postgres_url(parser, options)
    workdir = Path(tempfile.mkdtemp(prefix="jaato-load-"))
    server: Server | None = None
    try:
        server = start_server(
            fresh_database(database_url, LOAD_DATABASE),
            workdir / "server.log",
            workers=options.workers,
            task_workers=options.task_workers,
        )
        browser = sign_in(server)
        api = Api(browser, make_token(browser))
        session_id, run_id = large_session(api, options.turns, not options.no_reupload)
        concurrent_reads(api, session_id, run_id, options.clients, options.seconds)
        concurrent_writes(api, options.uploads)
        stop_server(server)
        server = None
    except LiveFailure as failure:
        print(f"load FAILED: {failure} (server log: {workdir / 'server.log'})", file=sys.stderr)
        return 1
    finally:
        if server is not None:
            end_server(server)
        drop_database(database_url, LOAD_DATABASE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
