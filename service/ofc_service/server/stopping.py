"""A stop that ends within a bound, whatever the store does.

Every step of :meth:`~ofc_service.server.main.OfcServer.stop` is a task given a time limit
(:class:`StopSteps`): a store client that never answers, or swallows its cancellation, may
hold its own step, never the ones after it. A step that does not finish in time is logged
(``shutdown step did not finish``, with its name) and left behind.

Around the whole stop of an ``ofc serve`` process, :class:`ExitDeadline`:

- from the first SIGTERM or SIGINT the process has ``grace_seconds`` + :data:`EXIT_MARGIN_S`
  to exit; a thread watches the clock (it needs nothing from the event loop, which may be
  the thing that is stuck) and past it logs ``shutdown did not finish in time`` with the step
  in progress, then exits with status 1;
- a second SIGTERM or SIGINT means "now": ``exiting at once on a second signal``, with the
  step in progress, and exit status 1;
- a stop whose steps did not all finish exits with status 1 as soon as the last one is
  given up (what they left running could hold the interpreter's exit).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
import time
from collections.abc import Coroutine, Mapping
from types import FrameType
from typing import Any

log = logging.getLogger("ofc.server")

STEP_TIMEOUT_S = 1.0  # every step but the drain (which has the grace period and this)
EXIT_MARGIN_S = 5.0  # past the grace period, a process still running exits (status 1)
EXIT_STATUS_UNFINISHED = 1


class StopSteps:
    """The steps of one stop, run one phase after another, each phase within its limit.

    >>> async def main() -> list[str]:
    ...     steps = StopSteps()
    ...     await steps.run({"quick": asyncio.sleep(0)})
    ...     await steps.run({"stuck": asyncio.Event().wait()}, timeout_s=0.01)
    ...     return steps.unfinished
    >>> asyncio.run(main())
    ['stuck']
    """

    def __init__(self, progress: ExitDeadline | None = None) -> None:
        self.progress = progress
        self.unfinished: list[str] = []

    async def run(
        self,
        steps: Mapping[str, Coroutine[Any, Any, object]],
        *,
        timeout_s: float = STEP_TIMEOUT_S,
    ) -> None:
        """Run ``steps`` (name -> coroutine) side by side for ``timeout_s`` at most; those
        still running are cancelled, logged and left behind (never awaited again)."""
        if self.progress is not None:
            self.progress.step = ", ".join(steps)
        tasks = {name: asyncio.ensure_future(coroutine) for name, coroutine in steps.items()}
        await asyncio.wait(tasks.values(), timeout=timeout_s)
        for name, task in tasks.items():
            if not task.done():
                task.cancel()
                self.unfinished.append(name)
                fields = {"step": name, "timeout_s": timeout_s}
                log.error("shutdown step did not finish", extra={"fields": fields})
            elif not task.cancelled() and (error := task.exception()) is not None:
                fields = {"step": name, "error": str(error) or type(error).__name__}
                log.warning("shutdown step failed", extra={"fields": fields})


class ExitDeadline:
    """The bound on an ``ofc serve`` process's exit once it is told to stop (see the module).
    :meth:`begin` at the first signal; :attr:`step` names what the stop is doing."""

    def __init__(self, grace_s: float, *, margin_s: float = EXIT_MARGIN_S) -> None:
        self.limit_s = grace_s + margin_s
        self.step = "signal received"

    def begin(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the clock, and make a second SIGTERM or SIGINT exit at once."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
            # A plain handler, not the loop's: it runs even while the loop is stuck.
            signal.signal(signum, self._second_signal)
        threading.Thread(target=self._watch, name="exit-deadline", daemon=True).start()

    def finish(self) -> None:
        """The stop is over: the interpreter's own exit is all that is left."""
        self.step = "interpreter exit"

    def _second_signal(self, signum: int, frame: FrameType | None) -> None:
        fields = {"signal": signal.Signals(signum).name, "step": self.step}
        log.error("exiting at once on a second signal", extra={"fields": fields})
        exit_now()

    def _watch(self) -> None:
        time.sleep(self.limit_s)  # a daemon thread: a process that exited first ends it
        fields = {"step": self.step, "limit_s": self.limit_s}
        log.error("shutdown did not finish in time", extra={"fields": fields})
        exit_now()


def exit_now(status: int = EXIT_STATUS_UNFINISHED) -> None:
    """Exit the process at once (no cleanup: what is stuck would hold it), logs flushed."""
    for handler in logging.getLogger().handlers:
        handler.flush()
    os._exit(status)


__all__ = ["EXIT_MARGIN_S", "STEP_TIMEOUT_S", "ExitDeadline", "StopSteps", "exit_now"]
