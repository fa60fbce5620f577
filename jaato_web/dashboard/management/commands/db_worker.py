"""``manage.py db_worker``: django-tasks-db's worker, with the lease keeper beside it.

This app comes before ``django_tasks_db`` in ``INSTALLED_APPS``, so this command replaces the
package's own under the same name (as ``staticfiles`` replaces ``runserver``): every way of
starting a worker, ``./dev serve``, ``./dev worker`` or a deployment's ``manage.py
db_worker``, runs the keeper. The keeper is a thread of the worker process; every quarter
of ``JAATO_TASK_LEASE_SECONDS`` it says the worker is alive, renews the leases of the work the
worker holds, and sweeps work whose worker stopped (``dashboard/background/``). It lives and
dies with the process, so a killed worker stops renewing at once.
"""

from __future__ import annotations

import logging
import os
import threading
from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone
from django.utils.autoreload import DJANGO_AUTORELOAD_ENV
from django_tasks_db.management.commands import db_worker

import gcengine
from jaato_web.dashboard import background

logger = logging.getLogger(__name__)


class LeaseKeeper(threading.Thread):
    """Says the worker is alive, renews its leases and sweeps, until told to stop."""

    def __init__(self) -> None:
        super().__init__(name="lease-keeper", daemon=True)
        self.worker = background.process_name()
        self.started_at = timezone.now()
        self._stopping = threading.Event()

    def run(self) -> None:
        try:
            while True:
                self.tick()
                if self._stopping.wait(background.beat_interval()):
                    return
        finally:
            connection.close()

    def tick(self) -> None:
        try:
            background.worker_beat(name=self.worker, started_at=self.started_at)
            background.work_sweep()
        except DatabaseError:
            # The database may be restarting; the next beat tries again on a new connection.
            logger.exception("the lease keeper could not reach the database")
            connection.close()

    def stop(self) -> None:
        self._stopping.set()
        self.join()
        background.worker_gone(name=self.worker)


# How often an idle worker looks for work, in seconds (django-tasks-db's default is 1): what a
# page waits for before a worker takes up what it asked for, which a ranking of seconds felt
# (0.8-1.0 s of 4 s from the click to the table). An idle look is one small indexed query.
IDLE_LOOK_SECONDS = 0.25


class Command(db_worker.Command):
    help = (
        "Run a database background worker that holds its work under a lease, so work of a "
        "worker that stops is tried again by another, then failed."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        super().add_arguments(parser)
        parser.set_defaults(interval=IDLE_LOOK_SECONDS)

    def handle(self, *args: Any, **options: Any) -> None:
        # Under DEBUG Django renders every query with its parameters into a query log, which
        # a worker never reads and never empties: storing one 45 MB upload rendered its bytes
        # as SQL text and took 360 MB more. A worker keeps no query log, whatever DEBUG says
        # for the pages (``--reload`` was decided from DEBUG already).
        settings.DEBUG = False
        if options["reload"] and not options["batch"] and not os.environ.get(DJANGO_AUTORELOAD_ENV):
            # The reloader's parent runs no task: it starts the child that does, and the
            # child, running this command again, starts its own keeper.
            super().handle(*args, **options)
            return
        # Every upload a worker reads is counted with the default vocabulary (cl100k_base, about
        # 40 MB in memory): it is loaded as the worker starts, once, rather than within the
        # first upload, which it made slower.
        gcengine.load_counter()
        keeper = LeaseKeeper()
        keeper.start()
        try:
            super().handle(*args, **options)
        finally:
            keeper.stop()
