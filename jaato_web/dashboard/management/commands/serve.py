"""The production server: the ASGI app under uvicorn with several processes, and task workers.

``./dev production`` and the container image run this command; ``./dev serve`` is the
development server. It refuses to run while ``DJANGO_DEBUG`` is on or before
``collectstatic`` has written the static files the pages name, applies migrations, then
starts and supervises (``jaato_web.supervisor``):

- uvicorn on ``jaato_web.asgi:application`` (pages, API and ``/mcp``) with ``--workers``
  processes, which it restarts itself when one dies;
- ``--task-workers`` task workers (``manage.py db_worker``), started again when one dies.

Forwarded headers are left to the app (``SECURE_PROXY_SSL_HEADER``, ``JAATO_TRUSTED_PROXIES``),
so a request means the same whichever ASGI server runs it.
"""

from __future__ import annotations

import sys
from typing import Any

from django.conf import settings
from django.contrib.staticfiles.storage import staticfiles_storage
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from jaato_web.supervisor import Child, Supervisor

DEFAULT_ADDR = "127.0.0.1:8000"
# Long enough for a request in flight and for most tasks to finish; a container runtime's own
# stop timeout should be longer (the compose file gives 90 s).
GRACE_SECONDS = 60


def web_command(host: str, port: int, workers: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "jaato_web.asgi:application",
        "--host",
        host,
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--no-proxy-headers",
        "--no-server-header",
        "--timeout-graceful-shutdown",
        str(GRACE_SECONDS // 2),
    ]


def task_worker_command() -> list[str]:
    return [sys.executable, str(settings.BASE_DIR / "manage.py"), "db_worker", "--no-reload"]


def address(addrport: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[::1]:PORT`` or ``PORT`` (on 127.0.0.1)."""
    host, _, port = addrport.rpartition(":")
    if not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        raise CommandError(f"{addrport!r} is not HOST:PORT or PORT (such as 0.0.0.0:8000).")
    return host.strip("[]") or "127.0.0.1", int(port)


class Command(BaseCommand):
    help = (
        "Serve the dashboard in production: uvicorn with several processes on the ASGI app "
        "(pages, API and /mcp) and task workers beside it, restarted when they die. Needs "
        "DJANGO_DEBUG=0 and collectstatic; applies migrations first."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "addrport", nargs="?", default=DEFAULT_ADDR, help=f"HOST:PORT (default {DEFAULT_ADDR})"
        )
        parser.add_argument(
            "--workers",
            type=int,
            default=2,
            help="web server processes (default 2; 0 runs task workers only)",
        )
        parser.add_argument(
            "--task-workers",
            type=int,
            default=1,
            help="task worker processes (default 1; 0 when other hosts run them)",
        )
        parser.add_argument(
            "--no-migrate",
            dest="migrate",
            action="store_false",
            help="do not apply migrations first (when another process does)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.DEBUG:
            raise CommandError(
                "this is the production server: set DJANGO_DEBUG=0 (and DJANGO_SECRET_KEY); "
                "for development run ./dev serve."
            )
        workers: int = options["workers"]
        task_workers: int = options["task_workers"]
        if workers < 0 or task_workers < 0:
            raise CommandError("--workers and --task-workers count processes: 0 or more.")
        children: list[Child] = []
        if workers:
            self.check_static_files()
            host, port = address(options["addrport"])
            children.append(Child("web server", web_command(host, port, workers), restart=False))
        if task_workers and settings.TASKS["default"]["BACKEND"].startswith("django_tasks_db"):
            children += [
                Child(f"task worker {n}", task_worker_command(), restart=True)
                for n in range(1, task_workers + 1)
            ]
        if not children:
            raise CommandError("nothing to run: --workers and --task-workers are both 0.")
        if settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
            self.stderr.write(
                "warning: DATABASE_URL is SQLite, which serves one machine and queues every "
                "write; production runs on PostgreSQL (postgres://...)."
            )
        if options["migrate"]:
            call_command("migrate", interactive=False, verbosity=options["verbosity"])
        supervisor = Supervisor(children, log=lambda line: self.stdout.write(f"serve: {line}"))
        status = supervisor.run(GRACE_SECONDS)
        if status:
            raise CommandError(f"the service stopped with status {status}.", returncode=status)

    def check_static_files(self) -> None:
        """The pages name their scripts and styles through the manifest: without it every page
        would fail, so the server does not start."""
        try:
            staticfiles_storage.url("css/app.css")
        except ValueError as error:
            raise CommandError(
                f"the static files are not collected ({error}); run: "
                "python manage.py collectstatic --noinput"
            ) from None
