"""Keep the processes of a production server running: the web server and the task workers.

``manage.py serve`` starts them as children of one process, so one command (and one container)
runs the whole service. A task worker that dies (killed, out of memory, its database gone for
a moment) is started again, a little later each time it dies young, so the queue keeps being
worked. The web server is different: it supervises its own worker processes, so its end is the
service's end, and everything stops with its exit status for the host or container runtime to
act on. SIGTERM or SIGINT stop every child gracefully: the web server finishes the requests in
flight and each task worker its current task.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType

# A child that lived this long before dying is started again at once; one that died younger
# waits twice as long as last time, up to the ceiling, so a crash loop does not spin.
HEALTHY_SECONDS = 30.0
FIRST_DELAY_SECONDS = 1.0
MAX_DELAY_SECONDS = 30.0
POLL_SECONDS = 0.5


@dataclass
class Child:
    """One process the supervisor runs: ``restart`` for task workers, not the web server."""

    name: str
    command: list[str]
    restart: bool
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    delay: float = FIRST_DELAY_SECONDS
    due: float | None = None  # when a dead child is to be started again
    starts: int = 0


class Supervisor:
    def __init__(
        self,
        children: list[Child],
        log: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.children = children
        self.log = log
        self.clock = clock
        self.stopping = False

    def start(self, child: Child) -> None:
        # A session of its own: Ctrl-C in a terminal reaches the supervisor only, which then
        # stops each child once (a second signal would make the web server skip its grace).
        child.process = subprocess.Popen(child.command, start_new_session=True)
        child.started_at = self.clock()
        child.due = None
        child.starts += 1
        self.log(f"started {child.name} (pid {child.process.pid})")

    def step(self) -> int | None:
        """Look at every child once: start again the dead ones that are due. The exit status
        of the service when a child it cannot do without has ended, else None."""
        now = self.clock()
        for child in self.children:
            if child.process is None:
                continue
            code = child.process.poll()
            if code is None:
                continue
            if not child.restart:
                self.log(f"{child.name} exited with status {code}; stopping the service")
                return code or 1
            if child.due is None:
                lived = now - child.started_at
                child.delay = (
                    FIRST_DELAY_SECONDS
                    if lived >= HEALTHY_SECONDS
                    else min(child.delay * 2, MAX_DELAY_SECONDS)
                )
                child.due = now + child.delay
                self.log(
                    f"{child.name} (pid {child.process.pid}) exited with status {code} after "
                    f"{lived:.0f} s; starting it again in {child.delay:.0f} s"
                )
            elif now >= child.due:
                self.start(child)
        return None

    def stop(self, grace_seconds: float) -> None:
        """SIGTERM to every child, then SIGKILL to those still running after the grace."""
        running = [c.process for c in self.children if c.process and c.process.poll() is None]
        for process in running:
            process.terminate()
        deadline = self.clock() + grace_seconds
        for process in running:
            try:
                process.wait(timeout=max(deadline - self.clock(), 0))
            except subprocess.TimeoutExpired:
                self.log(f"pid {process.pid} did not stop within {grace_seconds:.0f} s; killing it")
                process.kill()
                process.wait()

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        self.log(f"{signal.Signals(signum).name} received; stopping")
        self.stopping = True

    def run(self, grace_seconds: float) -> int:
        """Run until a signal asks to stop (status 0) or the web server ends (its status)."""
        signal.signal(signal.SIGTERM, self.request_stop)
        signal.signal(signal.SIGINT, self.request_stop)
        status = 0
        try:
            for child in self.children:
                self.start(child)
            while not self.stopping:
                ended = self.step()
                if ended is not None:
                    status = ended
                    break
                time.sleep(POLL_SECONDS)
        finally:
            self.stop(grace_seconds)
        return status
