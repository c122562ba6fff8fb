"""Ending long-lived streams when the server stops.

A ``Watch`` or ``Subscribe`` stream has no end of its own: left alone it would hold a
stopping replica for its whole grace period. On SIGTERM the server calls
:meth:`Shutdown.begin`, and every stream read through :meth:`Shutdown.until` ends at once
with UNAVAILABLE, reason ``SERVER_SHUTTING_DOWN``: the client reconnects (to another
replica, through its load balancer) and resumes where it was (``after_event_id``; a
consumer's pending records). Unary calls in flight are left to finish within the grace.

A unary call the server had received but not yet started when it began to stop is refused
the same way (:meth:`Shutdown.refuse`; it had no effect: send it again, with the same
request id, and another replica answers), and the server goes on taking calls off its
connections until none has come for :data:`QUIET_S` (:meth:`Shutdown.quiet`): gRPC's own
stop would end the calls still waiting in its queue as CANCELLED, which clients do not
retry.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TypeVar

from ofc.errors import OfcError

from ofc_service.api.errors import ServerShuttingDownError

T = TypeVar("T")
CLOSE_TIMEOUT_S = 0.5
QUIET_S = 0.1  # no call refused for this long: the calls received before the stop are answered
QUIET_LIMIT_S = 1.0  # refusing for at most this long (clients that keep sending get GOAWAY next)


class Shutdown:
    """One per server: whether it is stopping, and a way for streams to notice at once."""

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None
        self.started = False
        # Streams of cancellable sources waiting for their next item, and those of them
        # that begin() or interrupt() cancelled, with the error their CancelledError becomes
        # (SERVER_SHUTTING_DOWN; interrupt()'s own).
        self._waiting: set[asyncio.Task[object]] = set()
        self._interrupted: dict[asyncio.Task[object], OfcError] = {}
        self._refused_at = 0.0  # loop time of the last call refused since the stop began

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
        for task in self._waiting:
            if task not in self._interrupted:  # else interrupt()'s cancellation is on its way
                task.cancel()  # (cancelled twice, it would be left cancelling once)
            self._interrupted[task] = self.error()

    def interrupt(self, task: asyncio.Task[object], error: OfcError) -> bool:
        """End the stream read in ``task`` through :meth:`until` (cancellable) with ``error``,
        if it waits for its next item (True); a stream busy sending is left as it is, and
        one already being cancelled (its client went away, its deadline passed) ends as
        cancelled, not with ``error``."""
        if task not in self._waiting or task in self._interrupted or task.cancelling():
            return False  # not waiting, or its end on its way (a cancellation: its client's)
        self._interrupted[task] = error
        task.cancel()
        return True

    def error(self) -> ServerShuttingDownError:
        return ServerShuttingDownError(
            "this server is shutting down: reconnect (another replica will answer) and "
            "resume where the stream ended"
        )

    def refuse(self) -> ServerShuttingDownError:
        """The error of a unary call that arrives (or waited to start) once the server is
        stopping: it did nothing, and is answered at once."""
        self._refused_at = asyncio.get_running_loop().time()
        return ServerShuttingDownError(
            "this server is shutting down and did not run the call: send it again, with the "
            "same request id (another replica will answer)"
        )

    async def quiet(self, quiet_s: float = QUIET_S, limit_s: float = QUIET_LIMIT_S) -> None:
        """Once the stop has begun: return when no call has been refused for ``quiet_s``
        (the calls waiting to start have been answered), or after ``limit_s``."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        self._refused_at = started
        while (now := loop.time()) - self._refused_at < quiet_s and now - started < limit_s:
            await asyncio.sleep(min(quiet_s / 4, limit_s - (now - started)))

    def until(
        self, source: AsyncIterator[T], *, cancellable: bool = False
    ) -> AsyncGenerator[T, None]:
        """The items of ``source`` until the server begins to stop, then
        :class:`ServerShuttingDownError` (``source`` is closed either way).

        ``cancellable``: every wait of ``source`` ends when its task is cancelled (it waits
        on asyncio futures, not in a client that may swallow a cancellation): the stream's
        task is then cancelled when the server begins to stop, and its items cost nothing
        more. Otherwise each item is awaited in a task of its own, raced with the stop."""
        if cancellable:
            return self._until_cancelled(source)
        return self._until_raced(source)

    async def _until_cancelled(self, source: AsyncIterator[T]) -> AsyncGenerator[T, None]:
        task = asyncio.current_task()
        assert task is not None
        try:
            while True:
                if self.started:
                    raise self.error()
                self._waiting.add(task)
                try:
                    item = await anext(source)
                except StopAsyncIteration:
                    return
                except asyncio.CancelledError:
                    error = self._ours(task)
                    if error is None:
                        raise
                    raise error from None
                finally:
                    self._waiting.discard(task)
                if (error := self._ours(task)) is not None:  # the source went on regardless
                    raise error
                yield item
        finally:
            self._interrupted.pop(task, None)
            close = getattr(source, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()

    def _ours(self, task: asyncio.Task[object]) -> OfcError | None:
        """The error ``task``'s stream ends with if :meth:`begin` or :meth:`interrupt`
        cancelled it (that cancellation is taken back: the stream ends with the error, not
        as cancelled); None otherwise."""
        error = self._interrupted.pop(task, None)
        if error is not None:
            task.uncancel()
        return error

    async def _until_raced(self, source: AsyncIterator[T]) -> AsyncGenerator[T, None]:
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


__all__ = ["QUIET_LIMIT_S", "QUIET_S", "Shutdown"]
