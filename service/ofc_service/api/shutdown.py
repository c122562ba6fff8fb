"""Ending long-lived streams when the server stops.

A ``Watch`` or ``Subscribe`` stream has no end of its own: left alone it would hold a
stopping replica for its whole grace period. On SIGTERM the server calls
:meth:`Shutdown.begin`, and every stream read through :meth:`Shutdown.until` ends at once
with UNAVAILABLE, reason ``SERVER_SHUTTING_DOWN``: the client reconnects (to another
replica, through its load balancer) and resumes where it was (``after_event_id``; a
consumer's pending records). Unary calls in flight are left to finish within the grace.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TypeVar

from ofc_service.api.errors import ServerShuttingDownError

T = TypeVar("T")
CLOSE_TIMEOUT_S = 0.5


class Shutdown:
    """One per server: whether it is stopping, and a way for streams to notice at once."""

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None
        self.started = False

    def _stopping(self) -> asyncio.Event:
        if self._event is None:  # made on the server's loop, at first use
            self._event = asyncio.Event()
            if self.started:
                self._event.set()
        return self._event

    def begin(self) -> None:
        """Stop every stream (each ends with SERVER_SHUTTING_DOWN) and refuse new ones."""
        self.started = True
        if self._event is not None:
            self._event.set()

    def error(self) -> ServerShuttingDownError:
        return ServerShuttingDownError(
            "this server is shutting down: reconnect (another replica will answer) and "
            "resume where the stream ended"
        )

    async def until(self, source: AsyncIterator[T]) -> AsyncGenerator[T, None]:
        """The items of ``source`` until the server begins to stop, then
        :class:`ServerShuttingDownError` (``source`` is closed either way)."""
        stopped = asyncio.ensure_future(self._stopping().wait())
        step: asyncio.Future[T] | None = None
        try:
            while True:
                if self.started:
                    raise self.error()
                step = asyncio.ensure_future(anext(source))
                await asyncio.wait((step, stopped), return_when=asyncio.FIRST_COMPLETED)
                if not step.done():
                    raise self.error()
                try:
                    item = step.result()
                except StopAsyncIteration:
                    return
                yield item
        finally:
            stopped.cancel()
            if step is not None and not step.done():
                step.cancel()
                # Bounded: a store client that swallows the cancellation must not hold us.
                await asyncio.wait((step,), timeout=CLOSE_TIMEOUT_S)
            if step is not None and step.done() and not step.cancelled():
                step.exception()  # seen: an error after the stream ended is not news
            close = getattr(source, "aclose", None)
            if close is not None and (step is None or step.done()):
                with contextlib.suppress(Exception):
                    await close()


__all__ = ["Shutdown"]
