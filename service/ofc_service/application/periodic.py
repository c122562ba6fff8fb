"""A background loop that every replica runs: deadline sweeps, settlement relays."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from ofc_service.store import StoreUnavailableError

log = logging.getLogger("ofc.periodic")

MAX_BACKOFF_S = 5.0  # a failing loop retries at least this often (turn clocks wait on it)


class Periodic:
    """Run ``step`` every ``interval_s`` seconds until :meth:`stop`. A failing step does not
    end the loop (a store outage must not end sweeping): the loop backs off (the interval
    doubles, up to :data:`MAX_BACKOFF_S`) and says so once when it starts failing and once
    when it works again, not at every try. :meth:`wake` ends a wait early (the store is back).
    """

    def __init__(
        self,
        name: str,
        step: Callable[[], Awaitable[object]],
        interval_s: float,
        *,
        max_backoff_s: float = MAX_BACKOFF_S,
    ) -> None:
        self.name = name
        self.step = step
        self.interval_s = interval_s
        self.max_backoff_s = max(max_backoff_s, interval_s)
        self.failures = 0  # consecutive failed steps (0: the last step worked)
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._wake: asyncio.Event | None = None

    def delay_s(self) -> float:
        """How long the loop waits before its next step: the interval, doubled per failure."""
        if not self.failures:
            return self.interval_s
        backoff: float = self.interval_s * 2.0 ** min(self.failures, 32)
        return min(backoff, self.max_backoff_s)

    async def _run(self) -> None:
        self._wake = asyncio.Event()
        while not self._stopping:
            try:
                await self.step()
            except asyncio.CancelledError:
                raise
            except Exception as error:
                self._failed(error)
            else:
                self._worked()
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.delay_s())

    def _failed(self, error: Exception) -> None:
        self.failures += 1
        if self.failures > 1:
            return
        fields = {"loop": self.name, "error": str(error), "retry_max_s": self.max_backoff_s}
        if isinstance(error, StoreUnavailableError):  # an outage, not a bug: no traceback
            log.warning("%s failing", self.name, extra={"fields": fields})
        else:
            log.error("%s failing", self.name, exc_info=error, extra={"fields": fields})

    def _worked(self) -> None:
        if self.failures:
            fields = {"loop": self.name, "failed_steps": self.failures}
            log.info("%s working again", self.name, extra={"fields": fields})
        self.failures = 0

    def wake(self) -> None:
        """Run the next step now (say, because the store answers again)."""
        if self._wake is not None:
            self._wake.set()

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
