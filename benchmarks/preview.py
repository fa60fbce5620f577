"""How fast the policy editor's live preview answers on a stored 1,000-turn session.

The session is generated in the shape JAATO's maintainers measured with (200-token requests,
300-token answers, a 1,000-token tool result every third turn), its context limit set so usage
is ``--usage`` percent, and stored through the upload service in a throwaway SQLite database.
Policy: budget, threshold 80, target 60, preserve 5; pressure 90 (threshold mode) or 0
(continuous mode). Medians of ``--repeat`` runs:

* ``unpack``: reading the stored session (compressed JSON into a gcengine.Session), which the
  editor's in-process cache saves on every preview after the first;
* ``preview, cold``: the first preview of the session (unpack + collection);
* ``preview``: a preview once the session is cached (what each edit costs), each with a
  different target so nothing but the session is reused;
* ``request``: the same through the preview endpoint (form, engine, template), as htmx posts it;
* ``replay``: the replay chart (``gcengine.simulate`` over every turn), asked for separately
  so the ledger never waits for it, and cached per session and gc.json once drawn.

    python benchmarks/preview.py [--turns 1000] [--repeat 5] [--usage 85] [--skip-continuous]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

THRESHOLD: dict[str, Any] = {
    "type": "budget",
    "threshold_percent": 80,
    "target_percent": 60,
    "pressure_percent": 90,
    "preserve_recent_turns": 5,
}
CONTINUOUS = {**THRESHOLD, "pressure_percent": 0}


def setup_django(database: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"  # an absolute path: sqlite:////tmp/...
    os.environ["JAATO_GC_ON_UPLOAD"] = "false"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jaato_web.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def timed(function: Callable[[], object]) -> float:
    started = time.perf_counter()
    function()
    return (time.perf_counter() - started) * 1000


def median_ms(function: Callable[[int], object], repeat: int) -> float:
    return statistics.median(timed(lambda i=i: function(i)) for i in range(repeat))


def stored_session(turns: int, usage: float) -> Any:
    import gcengine
    from gcengine import SessionShape, generate_session_file
    from jaato_web.dashboard import background, selectors, services

    engine = gcengine.load_session(generate_session_file(SessionShape(turns=turns)))
    limit = int(engine.budget.total_tokens() * 100 / usage)
    engine = engine.model_copy(update={"context_limit": limit})
    data = gcengine.dump_session(engine).encode()
    project = services.project_default()
    receipt = background.session_upload(project=project, filename="bench.json", data=data)
    if receipt.session is None:  # over the inline limit: read it now rather than wait
        assert receipt.job is not None
        background.ingest_job_execute(job_id=receipt.job.pk)
        return selectors.ingest_job_get(projects=[project.pk], job_id=receipt.job.pk).session
    return receipt.session


def form(config: dict[str, Any], session_id: int) -> dict[str, Any]:
    from jaato_web.pages.forms import form_values

    data = {k: v for k, v in form_values(config).items() if v is not None and v is not False}
    return {**{k: "on" if v is True else v for k, v in data.items()}, "session": session_id}


def report(session: Any, name: str, config: dict[str, Any], repeat: int, replay: bool) -> None:
    from accounts import admin_client
    from django.urls import reverse

    from jaato_web import caches
    from jaato_web.dashboard import previews, services

    client = admin_client(session.project)
    url = reverse("policy_preview")
    validated = services.config_validated(config)

    def varied(i: int) -> Any:
        return services.config_validated({**config, "target_percent": 60 - i % 5})

    caches.clear_all()
    cold = timed(lambda: previews.preview(session, validated))
    warm = median_ms(lambda i: previews.preview(session, varied(i)), repeat)

    def request(i: int) -> None:
        data = form({**config, "target_percent": 60 - i % 5}, session.pk)
        answer = client.post(url, data, headers={"HX-Request": "true"})
        if b'data-preview-state="ok"' not in answer.content:
            raise SystemExit(f"the preview failed: {answer.status_code} {answer.content[:300]!r}")

    posted = median_ms(request, repeat)
    preview = previews.preview(session, validated)
    print(
        f"{name:<10} preview, cold {cold:7.0f} ms   preview {warm:6.0f} ms   "
        f"request {posted:6.0f} ms   ({len(preview.items)} items, "
        f"{preview.percent_before:.0f} % -> {preview.percent_after:.0f} %)"
    )
    if not replay:
        print(f"{name:<10} replay skipped (--skip-continuous)")
        return
    previews.policies._replays.clear()  # the session stays read; only the replay is drawn anew
    replay_ms = timed(lambda: previews.replay(session, validated))
    series = previews.replay(session, validated)
    again = timed(lambda: previews.replay(session, validated))
    quick = previews.replay_is_quick(session, validated)
    print(
        f"{name:<10} replay {replay_ms:9.0f} ms   cached {again:6.2f} ms   "
        f"({len(series['events'])} GC events over {len(series['steps'])} checks; "
        f"{'drawn with the preview' if quick else 'drawn on request'})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--usage", type=float, default=85.0)
    parser.add_argument(
        "--skip-continuous",
        action="store_true",
        help="skip the continuous-mode replay (it collects after nearly every turn)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        setup_django(Path(folder) / "bench.sqlite3")
        from jaato_web.dashboard import services

        started = time.perf_counter()
        session = stored_session(args.turns, args.usage)
        stored = time.perf_counter() - started
        print(
            f"session: {session.turn_count} turns, {session.total_tokens:,} tokens, "
            f"{session.utilization_percent:.0f} % of {session.context_limit:,} "
            f"(stored in {stored:.1f} s)"
        )
        unpack = median_ms(lambda i: services.engine_session_of(session), args.repeat)
        print(f"unpack     {unpack:7.0f} ms (once per session per process; then cached)")
        report(session, "threshold", THRESHOLD, args.repeat, replay=True)
        report(session, "continuous", CONTINUOUS, args.repeat, replay=not args.skip_continuous)
        print("policies:", json.dumps(THRESHOLD), "and pressure_percent 0")


if __name__ == "__main__":
    main()
