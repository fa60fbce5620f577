"""Running a coroutine from a synchronous test, whatever else the test process runs.

The browser tests keep Playwright's event loop running in the main thread for the rest of the
session, and a thread runs one loop at a time: so an MCP client a test drives gets a thread,
and a loop, of its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

import anyio


def run_async[T](work: Callable[[], Awaitable[T]]) -> T:
    """``work()`` run to its end on a new event loop in another thread; its result or error."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, work).result()
