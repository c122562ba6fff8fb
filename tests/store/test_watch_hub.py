"""WatchHub: watchers of one table share one log reader and still see every event once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from ofc_service.application import watch
from ofc_service.application.watch import WatchHub
from ofc_service.store import (
    EventsTrimmedError,
    StoredEvent,
    TableNotFoundError,
    TableStore,
)

from .conftest import Backend
from .test_conformance import hand_begun, play


class CountingReads:
    """A store whose log reads are counted (everything else passes through)."""

    def __init__(self, store: TableStore) -> None:
        self.store = store
        self.waits = 0
        self.reads = 0

    async def wait_events(self, table_id: str, **kwargs: Any) -> list[StoredEvent]:
        self.waits += 1
        return await self.store.wait_events(table_id, **kwargs)

    async def read_events(self, table_id: str, **kwargs: Any) -> list[StoredEvent]:
        self.reads += 1
        return await self.store.read_events(table_id, **kwargs)

    async def confirm(self, table_id: str) -> None:
        await self.store.confirm(table_id)


async def collect(stream: AsyncGenerator[list[StoredEvent], None], count: int) -> list[bytes]:
    """The payloads of ``stream``'s batches until at least ``count`` events came."""
    got: list[bytes] = []
    async for batch in stream:
        got += [e.data for e in batch]
        if len(got) >= count:
            break
    return got


async def test_two_watchers_share_one_reader(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the shared read re-arms only when woken, however long a loaded machine takes: each
    # wait counted below is a wake-up's
    monkeypatch.setattr(watch, "POLL_S", 600.0)
    async with backend.open() as h:
        created = await h.store.create_table("t", b"v1", events=[b"e1.0"])
        counted = CountingReads(h.other)
        hub = WatchHub(counted)  # type: ignore[arg-type]
        newest = created.event_ids[0]
        first = hub.follow("t", newest, newest=newest)
        second = hub.follow("t", newest, newest=newest)
        readers = [
            asyncio.create_task(collect(first, 6)),
            asyncio.create_task(collect(second, 6)),
        ]
        await asyncio.sleep(0.05)  # both are waiting on the one feed
        for version in (1, 2, 3):
            await play(h.store, "t", version, events=2)
            await asyncio.sleep(0.02)
        expected = [b"e2.0", b"e2.1", b"e3.0", b"e3.1", b"e4.0", b"e4.1"]
        assert await asyncio.wait_for(asyncio.gather(*readers), 10) == [expected, expected]
        # One shared read per wake-up (plus the one left waiting), never one per watcher.
        assert counted.waits <= 4
        assert counted.reads == 0
        await first.aclose()
        await second.aclose()
        await hub.close()


async def test_a_watcher_behind_the_window_catches_up_in_order(backend: Backend) -> None:
    async with backend.open() as h:
        await h.store.create_table("t", b"v1")
        hub = WatchHub(h.other)
        live = hub.follow("t", "0", newest="0")
        live_reader = asyncio.create_task(collect(live, watch.WINDOW + 10))
        await asyncio.sleep(0.05)
        for version in range(1, 14):  # 13 commits of 12 events: more than the window
            await play(h.store, "t", version, events=12)
        await asyncio.sleep(0.1)
        late = hub.follow("t", "0", newest="0")  # a resume from the start: behind the window
        everything = [b"e%d.%d" % (v, i) for v in range(2, 15) for i in range(12)]
        assert await asyncio.wait_for(collect(late, len(everything)), 10) == everything
        followed = await asyncio.wait_for(live_reader, 10)
        assert len(followed) >= watch.WINDOW + 10
        assert followed == everything[: len(followed)]
        await play(h.store, "t", 14, events=1)  # and then it follows live, like the others
        assert await asyncio.wait_for(collect(late, 1), 10) == [b"e15.0"]
        await late.aclose()
        await live.aclose()
        await hub.close()


async def test_a_table_that_goes_away_ends_every_watcher(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watch, "POLL_S", 0.2)  # the shared read re-arms (and looks) sooner
    async with backend.open() as h:
        created = await h.store.create_table("t", b"v1", events=[b"e1.0"], ttl_seconds=1)
        hub = WatchHub(h.other)
        newest = created.event_ids[0]
        streams = [hub.follow("t", newest, newest=newest) for _ in range(2)]

        async def drain(stream: AsyncGenerator[list[StoredEvent], None]) -> None:
            async for _ in stream:
                pass

        tasks = [asyncio.create_task(drain(s)) for s in streams]
        await asyncio.sleep(0.05)
        await h.advance(1.5)  # the table expires
        for task in tasks:
            with pytest.raises(TableNotFoundError):
                await asyncio.wait_for(task, 10)
        await hub.close()


async def test_the_reader_stops_with_the_last_watcher(backend: Backend) -> None:
    async with backend.open() as h:
        created = await h.store.create_table("t", b"v1", events=[b"e1.0"])
        hub = WatchHub(h.other)
        newest = created.event_ids[0]
        stream = hub.follow("t", newest, newest=newest)
        task = asyncio.create_task(collect(stream, 1))
        await asyncio.sleep(0.05)
        assert len(hub._feeds) == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await stream.aclose()
        assert hub._feeds == {}
        await hub.close()


async def test_a_trimmed_resume_fails_alone_even_when_it_opened_the_feed(backend: Backend) -> None:
    async with backend.open() as h:
        created, new = await hand_begun(h.store, "r")
        newest = new.event_ids[0]
        hub = WatchHub(h.other)
        stale = hub.follow("t", created.event_ids[0], newest=newest)  # e1.1 trimmed away
        live = hub.follow("t", newest, newest=newest)
        failing = asyncio.create_task(anext(stale))  # it opens the table's feed
        reader = asyncio.create_task(collect(live, 1))  # and this one shares it
        await asyncio.sleep(0.05)
        await play(h.store, "t", 2)
        with pytest.raises(EventsTrimmedError):
            await asyncio.wait_for(failing, 10)
        assert await asyncio.wait_for(reader, 10) == [b"e3.0"]
        await live.aclose()
        await hub.close()
