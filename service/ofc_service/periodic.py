"""A background loop that every replica runs: deadline sweeps, settlement relays."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger("ofc.periodic")


class Periodic:
    """Run ``step`` every ``interval_s`` seconds until :meth:`stop`; a failing step is
    logged and the loop goes on (a store hiccup must not end sweeping)."""

    def __init__(self, name: str, step: Callable[[], Awaitable[object]], interval_s: float) -> None:
        self.name = name
        self.step = step
        self.interval_s = interval_s
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    async def _run(self) -> None:
        while not self._stopping:
            try:
                await self.step()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s failed", self.name)
            await asyncio.sleep(self.interval_s)

    def start(self) -> None:
        if self._task is None:
            self._stopping = False
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            # The flag ends the loop even when a redis-py call swallows the cancellation
            # (Python 3.11's wait_for can), one interval later at most.
            self._stopping = True
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
