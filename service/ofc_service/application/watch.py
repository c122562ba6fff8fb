"""Watching tables: one reader per watched table in a replica, shared by all its watchers.

Without it every Watch stream would read the table's event log itself, so a move seen by a
table's two players and three spectators on one replica costs five store reads. Here a
:class:`_Feed` per table blocks on the log once and keeps the newest entries (a contiguous
window); each watcher takes what follows its own cursor from that window. A watcher whose
cursor is older than the window (a resume from long ago) reads the log directly until it
catches up, so every watcher still gets each event exactly once, in order, with no gap.

A feed reads the table as stored along with its events, in the same round trip, when the
replica's :class:`TableStates` wants it (the manager: a table it moves here), so the replica
that did not make a table's last move need not load the table for its next one.

Store errors of the shared read (the table expired, the log was trimmed, the store is
unavailable) end every stream of that table with the error, as a direct read would; the
feed is dropped and the next watcher starts a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncGenerator
from typing import Protocol

from ofc_service.store import StoredEvent, StoredTable, TableStore, parse_event_id

log = logging.getLogger("ofc.watch")

POLL_S = 5.0  # the shared read re-arms this often (and notices a table that expired)
WINDOW = 128  # events a feed keeps for watchers a little behind (a few hands)


class TableStates(Protocol):
    """Who takes the tables the feeds read with their events."""

    def wants(self, table_id: str) -> bool:
        """Whether the next read of this table's log should bring its state too."""
        ...

    def offer(self, table: StoredTable) -> None:
        """The table as stored right after its newest events were read."""
        ...


class _Feed:
    """The shared read of one table's event log, and the window of its newest entries."""

    def __init__(
        self, store: TableStore, table_id: str, start: str, states: TableStates | None = None
    ) -> None:
        self.store = store
        self.table_id = table_id
        self.states = states
        self.window: deque[tuple[tuple[int, int], StoredEvent]] = deque(maxlen=WINDOW)
        self.base = parse_event_id(start)  # the window covers (base, last]
        self.last = self.base
        self.watchers = 0
        self.error: Exception | None = None
        self._changed = asyncio.get_running_loop().create_future()
        self._stopping = False
        self._task = asyncio.create_task(self._read(), name=f"watch {table_id}")

    async def _read(self) -> None:
        try:
            while not self._stopping:
                after = f"{self.last[0]}-{self.last[1]}" if self.last != (0, 0) else "0"
                states = self.states
                offer = states.offer if states is not None and states.wants(self.table_id) else None
                events = await self.store.wait_events(
                    self.table_id, after=after, timeout_s=POLL_S, on_table=offer
                )
                if not events:
                    continue
                # none is sent before it is held as a commit is acknowledged (with WAIT: a
                # failover must not take back an event its watchers saw, a seed reveal above all)
                await self.store.confirm(self.table_id)
                for event in events:
                    position = parse_event_id(event.event_id)
                    if len(self.window) == self.window.maxlen:
                        self.base = self.window[0][0]
                    self.window.append((position, event))
                    self.last = position
                self._wake()
        except Exception as error:  # every watcher of the table ends with it
            self.error = error
            self._wake()

    def _wake(self) -> None:
        changed, self._changed = self._changed, asyncio.get_running_loop().create_future()
        changed.set_result(None)

    async def changed(self) -> None:
        await asyncio.shield(self._changed)

    def after(self, position: tuple[int, int]) -> list[StoredEvent] | None:
        """The window's events after ``position``; None when it does not reach back that far."""
        if position < self.base:
            return None
        newer = []
        for at, event in reversed(self.window):  # watchers are rarely more than a move behind
            if at <= position:
                break
            newer.append(event)
        newer.reverse()
        return newer

    def cancel(self) -> None:
        # The flag too: redis-py on Python 3.11 can swallow a cancellation mid-read.
        self._stopping = True
        self._task.cancel()

    async def stop(self) -> None:
        self.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


class WatchHub:
    """The feeds of the tables watched through this replica."""

    def __init__(self, store: TableStore, states: TableStates | None = None) -> None:
        self.store = store
        self.states = states
        self._feeds: dict[str, _Feed] = {}

    async def follow(
        self, table_id: str, after: str, *, newest: str
    ) -> AsyncGenerator[list[StoredEvent], None]:
        """Batches of the table's events after the event id ``after``, in order, forever
        (until the caller stops iterating or a store error is raised). ``newest``: the id of
        the table's newest event as just loaded; a new feed starts there (never at a
        watcher's own cursor, whose errors, such as a trimmed resume, are its own)."""
        position = parse_event_id(after)
        feed = self._feeds.get(table_id)
        if feed is None or feed.error is not None:
            feed = self._feeds[table_id] = _Feed(self.store, table_id, newest, self.states)
        feed.watchers += 1
        try:
            while True:
                events = feed.after(position)
                if events is None:  # behind the window: read the log itself to catch up
                    events = await self.store.read_events(
                        table_id, after=f"{position[0]}-{position[1]}"
                    )
                    await self.store.confirm(table_id)
                if events:
                    position = parse_event_id(events[-1].event_id)
                    yield events
                    continue
                if feed.error is not None:
                    raise feed.error
                await feed.changed()
        finally:
            feed.watchers -= 1
            if feed.watchers == 0:
                if self._feeds.get(table_id) is feed:
                    del self._feeds[table_id]
                feed.cancel()

    async def close(self) -> None:
        feeds, self._feeds = list(self._feeds.values()), {}
        for feed in feeds:
            await feed.stop()


__all__ = ["POLL_S", "WINDOW", "TableStates", "WatchHub"]
