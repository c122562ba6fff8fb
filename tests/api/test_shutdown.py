"""Shutdown.until: a stream ends with SERVER_SHUTTING_DOWN when the server begins to stop,
whichever way it waits for its source (a task per item, or its own task cancelled)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from ofc_service.api.errors import ConnectionRetiredError, ServerShuttingDownError
from ofc_service.api.shutdown import Shutdown


class Source:
    """Items put in from outside; records whether it was closed."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[int | None] = asyncio.Queue()
        self.closed = False

    async def items(self) -> AsyncIterator[int]:
        try:
            while (item := await self.queue.get()) is not None:
                yield item
        finally:
            self.closed = True


async def _collect(stream: AsyncIterator[int], into: list[int]) -> None:
    async for item in stream:
        into.append(item)


@pytest.mark.parametrize("cancellable", [False, True])
def test_items_pass_until_the_source_ends(cancellable: bool) -> None:
    async def run() -> list[int]:
        shutdown, source = Shutdown(), Source()
        got: list[int] = []
        for item in (1, 2, 3, None):
            source.queue.put_nowait(item)
        await _collect(shutdown.until(source.items(), cancellable=cancellable), got)
        assert source.closed
        return got

    assert asyncio.run(run()) == [1, 2, 3]


@pytest.mark.parametrize("cancellable", [False, True])
def test_a_waiting_stream_ends_at_once_when_the_server_begins_to_stop(cancellable: bool) -> None:
    async def run() -> None:
        shutdown, source = Shutdown(), Source()
        got: list[int] = []
        source.queue.put_nowait(7)
        task = asyncio.create_task(
            _collect(shutdown.until(source.items(), cancellable=cancellable), got)
        )
        while not got:
            await asyncio.sleep(0)
        shutdown.begin()
        with pytest.raises(ServerShuttingDownError):
            await asyncio.wait_for(task, timeout=5)
        assert got == [7] and source.closed
        assert task.cancelling() == 0  # ended by the error, not as cancelled
        # a stream that begins now is refused at once
        with pytest.raises(ServerShuttingDownError):
            await _collect(shutdown.until(Source().items(), cancellable=cancellable), [])

    asyncio.run(run())


def test_a_cancellation_not_from_the_stop_stays_a_cancellation() -> None:
    async def run() -> None:
        shutdown, source = Shutdown(), Source()
        task = asyncio.create_task(_collect(shutdown.until(source.items(), cancellable=True), []))
        await asyncio.sleep(0.01)
        task.cancel()  # the client went away
        with pytest.raises(asyncio.CancelledError):
            await task
        assert source.closed

    asyncio.run(run())


def test_a_cancellable_source_that_swallows_the_stop_ends_at_its_next_item() -> None:
    """A source promised to end on cancellation that does not (a client swallowing it) still
    ends with the error, as soon as it hands over an item, and its task is not left
    cancelling."""

    async def run() -> None:
        shutdown = Shutdown()
        got: list[int] = []
        release = asyncio.Event()

        async def stubborn() -> AsyncIterator[int]:
            while True:
                try:
                    await release.wait()
                except asyncio.CancelledError:
                    await release.wait()  # swallowed
                release.clear()
                yield 1

        task = asyncio.create_task(_collect(shutdown.until(stubborn(), cancellable=True), got))
        await asyncio.sleep(0.01)
        shutdown.begin()
        await asyncio.sleep(0.01)
        assert not task.done()
        release.set()
        with pytest.raises(ServerShuttingDownError):
            await asyncio.wait_for(task, timeout=5)
        assert got == [] and task.cancelling() == 0

    asyncio.run(run())


def test_a_stream_interrupted_then_stopped_in_the_same_turn_is_cancelled_once() -> None:
    """interrupt() (a retired connection) and begin() (the server stopping) reaching one
    waiting stream before it runs again: it ends with SERVER_SHUTTING_DOWN, its task
    cancelled once and that taken back (it was cancelled twice and left cancelling)."""

    async def run() -> None:
        shutdown, source = Shutdown(), Source()
        task = asyncio.create_task(_collect(shutdown.until(source.items(), cancellable=True), []))
        await asyncio.sleep(0.01)
        assert shutdown.interrupt(task, ConnectionRetiredError("retired"))
        shutdown.begin()
        with pytest.raises(ServerShuttingDownError):
            await asyncio.wait_for(task, timeout=5)
        assert task.cancelling() == 0 and source.closed

    asyncio.run(run())


def test_a_stream_cancelled_by_its_client_is_not_interrupted() -> None:
    """A stream whose task is already being cancelled (its client went away, its deadline
    passed) when its connection is retired ends as cancelled: interrupt() leaves it (it
    turned the cancellation into CONNECTION_RETIRED, taking it back)."""

    async def run() -> None:
        shutdown, source = Shutdown(), Source()
        task = asyncio.create_task(_collect(shutdown.until(source.items(), cancellable=True), []))
        await asyncio.sleep(0.01)
        task.cancel()  # the client went away
        assert not shutdown.interrupt(task, ConnectionRetiredError("retired"))
        with pytest.raises(asyncio.CancelledError):
            await task
        assert source.closed and not shutdown._interrupted

    asyncio.run(run())
