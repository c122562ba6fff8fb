"""TableManager's kept records: one store round trip per move, and never a wrong state."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from ofc import engine
from ofc_service.api.tables import ProtobufPresenter
from ofc_service.application import commands
from ofc_service.application.manager import Request, TableManager
from ofc_service.application.records import TableRecord
from ofc_service.auth import Authenticator, Credentials
from ofc_service.store import Commit, MemoryTableStore, StaleVersionError, StoredTable

from .conftest import Backend


class CountingLoads:
    """A store whose loads and commits are counted (everything else passes through)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.loads = 0
        self.commits = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def load(self, table_id: str) -> StoredTable:
        self.loads += 1
        return await self.store.load(table_id)  # type: ignore[no-any-return]

    async def commit(self, commit: Commit) -> Any:
        self.commits += 1
        return await self.store.commit(commit)


class VersionPresenter(ProtobufPresenter):
    """The real events; a response that is just the version the move made."""

    def response(self, outcome: commands.Outcome) -> bytes:
        return b"v%d" % outcome.version


async def join(manager: TableManager, version: int, seat: int, player: str) -> bytes:
    request = Request("t", version, f"join-{version}")
    return await manager.run(request, commands.JoinSeat(seat, player), Credentials())


async def leave(manager: TableManager, version: int, seat: int, who: str = "a") -> bytes:
    # The server's own request (no credentials): the seat's token is not what is tested.
    request = Request("t", version, f"leave-{version}-{who}")
    return await manager.run(request, commands.LeaveSeat(seat))


async def open_table(backend: Backend, test: Any) -> None:
    async with backend.open() as h:
        counted = CountingLoads(h.store)
        manager = TableManager(counted, Authenticator(), VersionPresenter())
        other = TableManager(h.other, Authenticator(), VersionPresenter())
        record = TableRecord("t", engine.new_match("classic", seats=3), 30_000, 120_000, b"", 0)
        await manager.create(record)
        await test(h, counted, manager, other)


async def test_moves_after_this_replicas_own_commit_skip_the_load(backend: Backend) -> None:
    async def test(h: Any, counted: CountingLoads, manager: TableManager, other: Any) -> None:
        assert await join(manager, 1, 0, "ann") == b"v2"  # nothing kept yet: load + commit
        assert (counted.loads, counted.commits) == (1, 1)
        assert await join(manager, 2, 1, "bob") == b"v3"  # kept at version 2: commit only
        assert await join(manager, 3, 2, "cy") == b"v4"
        assert (counted.loads, counted.commits) == (1, 3)
        # Another replica moves: this one's kept record is behind, its commit is refused as
        # stale, and the move is judged against the store (a stale version, as it should).
        await leave(other, 4, 2, who="b")
        with pytest.raises(StaleVersionError):
            await leave(manager, 4, 2)
        assert await leave(manager, 5, 1) == b"v6"  # loaded again: and on it goes
        stored, version, _ = await other.load("t")
        assert version == 6 and [s.player_id for s in stored.match.seats] == ["ann", "", ""]

    await open_table(backend, test)


async def test_a_kept_record_never_stands_in_for_another_state_at_its_version(
    backend: Backend,
) -> None:
    async def test(h: Any, counted: CountingLoads, manager: TableManager, other: Any) -> None:
        await join(manager, 1, 0, "ann")
        kept_bytes = (await h.store.load("t")).state
        # The store loses that write and reaches version 2 again with another state (a Redis
        # restart without its last writes, then another replica's move): same version, other
        # bytes. The kept record must not be used: its SHA-1 no longer matches.
        theirs = TableRecord.from_bytes(kept_bytes)
        theirs = dataclasses.replace(
            theirs,
            match=engine.apply(engine.new_match("classic", seats=3), engine.SitDown(0, "zed"))[0],
        )
        await overwrite_state(h, theirs.to_bytes())
        assert (await h.store.load("t")).version == 2
        loads = counted.loads
        assert await join(manager, 2, 1, "bob") == b"v3"
        assert counted.loads == loads + 1  # refused by the commit, then loaded and applied
        stored, _, _ = await other.load("t")
        assert [s.player_id for s in stored.match.seats] == ["zed", "bob", ""]

    await open_table(backend, test)


class RewoundAfterLoad(CountingLoads):
    """A store that, right after its next load, runs ``rewind``: what another replica's
    write after a lost one does between this replica's load and its commit."""

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.rewind: Any = None

    async def load(self, table_id: str) -> StoredTable:
        stored = await super().load(table_id)
        rewind, self.rewind = self.rewind, None
        if rewind is not None:
            await rewind()
        return stored


async def test_a_move_judged_on_a_loaded_table_is_not_committed_on_another_state_at_its_version(
    backend: Backend,
) -> None:
    """The commit after a load checks the state loaded, as one after a kept record does: a
    store that lost a write and took another at the same version (a failover to a replica
    behind, then another replica's move) between the load and the commit refuses it."""
    async with backend.open() as h:
        rewinding = RewoundAfterLoad(h.store)
        manager = TableManager(rewinding, Authenticator(), VersionPresenter())
        other = TableManager(h.other, Authenticator(), VersionPresenter())
        await other.create(
            TableRecord("t", engine.new_match("classic", seats=3), 30_000, 120_000, b"", 0)
        )
        await join(other, 1, 0, "ann")  # version 2, made by the other replica: none kept here
        theirs = TableRecord.from_bytes((await h.store.load("t")).state)
        theirs = dataclasses.replace(
            theirs,
            match=engine.apply(engine.new_match("classic", seats=3), engine.SitDown(0, "zed"))[0],
        )

        async def rewind() -> None:
            await overwrite_state(h, theirs.to_bytes())

        rewinding.rewind = rewind
        with pytest.raises(StaleVersionError) as stale:
            await join(manager, 2, 1, "bob")  # judged on ann's table, which is gone
        assert "changed at version 2" in str(stale.value)
        stored, version, _ = await other.load("t")
        assert version == 2 and [s.player_id for s in stored.match.seats] == ["zed", "", ""]
        assert await join(manager, 2, 1, "bob") == b"v3"  # judged again, on the table as it is


async def overwrite_state(h: Any, state: bytes) -> None:
    """Replace the stored state of table ``t``, keeping its version (a test-only rewind)."""
    if h.admin is None:
        assert isinstance(h.store, MemoryTableStore)
        h.store._tables["t"].state = state
    else:
        await h.admin.hset("ofc:{t}:state", "state", state)


async def test_a_replica_watching_a_table_moves_after_another_replica_without_loading_it(
    backend: Backend,
) -> None:
    async def test(h: Any, counted: CountingLoads, manager: TableManager, other: Any) -> None:
        assert await join(manager, 1, 0, "ann") == b"v2"
        newest = (await h.store.load("t")).last_event_id
        feed = manager.follow("t", newest, newest=newest)
        try:
            seen = asyncio.create_task(anext(feed))
            await asyncio.sleep(0.1)  # the feed waits on the log
            assert await join(other, 2, 1, "bob") == b"v3"  # the other replica moves
            await asyncio.wait_for(seen, 30)  # its events (and the table) came through the feed
            loads = counted.loads
            assert await join(manager, 3, 2, "cy") == b"v4"  # the commit only: no load
            assert counted.loads == loads
        finally:
            await feed.aclose()
        stored, version, _ = await other.load("t")
        assert version == 4 and [s.player_id for s in stored.match.seats] == ["ann", "bob", "cy"]

    await open_table(backend, test)


async def test_a_table_offered_by_a_feed_is_not_trusted(backend: Backend) -> None:
    async def test(h: Any, counted: CountingLoads, manager: TableManager, other: Any) -> None:
        await join(manager, 1, 0, "ann")
        await join(other, 2, 1, "bob")
        real = await h.store.load("t")
        # A feed's table that is not the stored one at its version (bytes of another state):
        # the commit refuses it, the table is loaded and the move judged against it.
        theirs = TableRecord.from_bytes(real.state)
        theirs = dataclasses.replace(
            theirs,
            match=engine.apply(engine.new_match("classic", seats=3), engine.SitDown(0, "zed"))[0],
        )
        manager.offer(dataclasses.replace(real, state=theirs.to_bytes()))
        loads = counted.loads
        assert await join(manager, 3, 2, "cy") == b"v4"
        assert counted.loads == loads + 1
        stored, _, _ = await other.load("t")
        assert [s.player_id for s in stored.match.seats] == ["ann", "bob", "cy"]
        # An older table than the one kept is ignored; a table never moved here is not kept.
        manager.offer(real)
        loads = counted.loads
        assert await leave(manager, 4, 2) == b"v5"  # on the record kept of its own commit
        assert counted.loads == loads
        assert not manager.wants("elsewhere")
        manager.offer(dataclasses.replace(real, table_id="elsewhere"))
        assert not manager.wants("elsewhere")

    await open_table(backend, test)
