"""The settlement feed and the outbox relay, run against both backends (memory and Redis):
outbox writes ride on the table commit, the relay publishes each record once however often
it runs, and consumer groups deliver at least once with pending records first."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from ofc import engine
from ofc.engine import SitDown
from ofc.rulesets import resolve_ruleset
from ofc_service.application import commands, settlements
from ofc_service.application.deadlines import DeadlineSweeper
from ofc_service.application.manager import Request, TableManager
from ofc_service.application.records import TableRecord
from ofc_service.application.settlements import SettlementRecord, SettlementRelay
from ofc_service.auth import Authenticator
from ofc_service.store import (
    Commit,
    FeedEntry,
    InvalidIdError,
    MemorySettlementFeed,
    RedisSettlementFeed,
    RedisTableStore,
    SettlementFeed,
    StaleVersionError,
    StoreUnavailableError,
    TableNotFoundError,
)
from ofc_service.store import redis as redis_store
from ofc_service.store.redis import OUTBOX_RESCAN_MS
from ofc_service.store.redis_io import index_shard
from prometheus_client import REGISTRY
from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from tests.silent import SilentPresenter

from .conftest import Backend, Harness
from .test_conformance import play


@dataclass
class Feeds:
    """A harness (two table stores) plus two feeds on the same backend (two replicas)."""

    h: Harness
    feed: SettlementFeed
    other: SettlementFeed

    def relay(self, *, other: bool = False) -> SettlementRelay:
        return SettlementRelay(
            self.h.other if other else self.h.store,
            self.other if other else self.feed,
            clock_ms=lambda: time.time_ns() // 1_000_000,
        )


@asynccontextmanager
async def open_feeds(backend: Backend) -> AsyncIterator[Feeds]:
    async with backend.open() as h:
        if backend.url is None:
            memory = MemorySettlementFeed(clock=h.clock)
            yield Feeds(h, memory, memory)
            await memory.close()
            return
        feeds = [RedisSettlementFeed.from_url(backend.url) for _ in range(2)]
        try:
            yield Feeds(h, feeds[0], feeds[1])
        finally:
            for feed in feeds:
                await feed.close()


async def settle(f: Feeds, table_id: str, version: int, hands: list[int]) -> None:
    """Commit ``version -> version + 1`` with one outbox record per hand number."""
    outbox = {f"{table_id}:{n}": b"record %d" % n for n in hands}
    await f.h.store.commit(
        Commit(
            table_id,
            expected_version=version,
            state=b"v%d" % (version + 1),
            events=[],
            response=b"",
            request_id=f"settle-{version}",
            deadline_ms=None,
            outbox=outbox,
        )
    )


def ids(entries: Sequence[FeedEntry]) -> list[str]:
    return [e.settlement_id for e in entries]


# --- the outbox -----------------------------------------------------------------------------------
async def test_an_outbox_record_is_written_with_its_commit_only(backend: Backend) -> None:
    async with open_feeds(backend) as f:
        await f.h.store.create_table("t", b"v1")
        await settle(f, "t", 1, [1])
        assert await f.h.other.read_outbox("t") == {"t:1": b"record 1"}
        assert await f.h.other.pending_outboxes(0) == ["t"]
        # a stale commit and a replayed one write nothing to the outbox
        with pytest.raises(StaleVersionError):
            await play(f.h.store, "t", 1, request_id="late")
        again = await f.h.store.commit(Commit(
            "t", expected_version=1, state=b"x", events=[], response=b"", request_id="settle-1",
            deadline_ms=None, outbox={"t:9": b"never"},
        ))  # fmt: skip
        assert again.replayed
        assert await f.h.store.read_outbox("t") == {"t:1": b"record 1"}
        await f.h.store.remove_from_outbox("t", ["t:1", "t:404"])
        assert await f.h.store.read_outbox("t") == {}
        assert await f.h.store.pending_outboxes(int(time.time() * 1000)) == []
        with pytest.raises(InvalidIdError):
            await f.h.store.commit(Commit(
                "t", expected_version=2, state=b"", events=[], response=b"", request_id="r",
                deadline_ms=None, outbox={"has space": b""},
            ))  # fmt: skip


async def test_the_outbox_outlives_its_table(backend: Backend) -> None:
    async with open_feeds(backend) as f:
        await f.h.store.create_table("t", b"v1")  # (the commit's TTL is the table's)
        await f.h.store.commit(Commit(
            "t", expected_version=1, state=b"v2", events=[], response=b"", request_id="r",
            deadline_ms=None, ttl_seconds=1, outbox={"t:1": b"late but kept"},
        ))  # fmt: skip
        await f.h.advance(1.2)
        with pytest.raises(TableNotFoundError):  # the table is gone
            await f.h.store.load("t")
        assert await f.h.store.read_outbox("t") == {"t:1": b"late but kept"}
        assert await f.relay().sweep_once() == 1
        assert ids(await f.feed.read_new("g", "c")) == ["t:1"]


# --- the relay ------------------------------------------------------------------------------------
async def test_the_relay_publishes_each_record_once_in_hand_order(backend: Backend) -> None:
    async with open_feeds(backend) as f:
        for table_id in ("a", "b"):
            await f.h.store.create_table(table_id, b"v1")
            await settle(f, table_id, 1, [10, 2])
        # a relay that crashed after publishing "a:2" and before emptying the outbox
        await f.feed.publish("a:2", b"record 2")
        relays = [f.relay(), f.relay(other=True)]
        published = await asyncio.gather(*(r.sweep_once() for r in relays))
        assert sum(published) == 3
        assert await f.h.store.pending_outboxes(0) == []
        entries = await f.feed.read_new("ledger", "one", count=100)
        assert sorted(ids(entries)) == ["a:10", "a:2", "b:10", "b:2"]
        assert ids([e for e in entries if e.settlement_id.startswith("b")]) == ["b:2", "b:10"]
        # the outboxes are empty, and publishing again is ignored
        assert await relays[0].sweep_once() == 0
        assert await f.other.publish("b:2", b"again") is None
        assert await f.feed.read_new("ledger", "one") == []


async def test_relay_table_needs_no_hint(backend: Backend) -> None:
    async with open_feeds(backend) as f:
        await f.h.store.create_table("t", b"v1")
        await settle(f, "t", 1, [1])
        assert await f.relay().relay_table("t") == 1
        assert await f.relay().relay_table("t") == 0
        assert await f.h.store.read_outbox("t") == {}


# --- the feed -------------------------------------------------------------------------------------
async def test_publish_ignores_a_settlement_id_seen_before(backend: Backend) -> None:
    async with open_feeds(backend) as f:
        first = await f.feed.publish("t:1", b"one")
        assert first is not None
        assert await f.other.publish("t:1", b"one again") is None
        second = await f.other.publish("t:2", b"two")
        assert second is not None and second > first
        assert await f.feed.stream_ids(["t:1", "t:2", "t:3"]) == {"t:1": first, "t:2": second}


async def test_a_consumer_gets_its_unacknowledged_records_back_first(backend: Backend) -> None:
    async with open_feeds(backend) as f:
        for n in range(1, 6):
            await f.feed.publish(f"t:{n}", b"r%d" % n)
        handed = await f.feed.read_new("ledger", "c1", count=3)
        assert ids(handed) == ["t:1", "t:2", "t:3"]
        done = await f.other.acknowledge("ledger", [handed[0].stream_id])
        assert [(e.settlement_id, e.data) for e in done] == [("t:1", b"r1")]
        assert await f.feed.acknowledge("ledger", [handed[0].stream_id]) == []  # once only
        # "c1" crashed: it restarts with the same name and gets t:2, t:3 back, then the rest
        assert ids(await f.other.read_pending("ledger", "c1")) == ["t:2", "t:3"]
        assert ids(await f.other.read_pending("ledger", "c1", after=handed[1].stream_id)) == ["t:3"]
        assert ids(await f.other.read_pending("ledger", "c1", count=1)) == ["t:2"]
        assert await f.other.read_pending("ledger", "c2") == []
        assert ids(await f.other.read_new("ledger", "c2")) == ["t:4", "t:5"]
        assert await f.feed.read_new("ledger", "c1") == []
        # another group reads everything from the start, on its own
        assert ids(await f.feed.read_new("audit", "x", count=10)) == [f"t:{n}" for n in range(1, 6)]
        assert await f.feed.acknowledge("nobody", [handed[1].stream_id]) == []


async def test_read_new_waits_for_a_publish_through_another_replica(backend: Backend) -> None:
    async with open_feeds(backend) as f:
        assert await f.feed.read_new("g", "c", block_s=0.05) == []
        # (a bound for failing: the other replica's first publish may be slow when loaded)
        waiting = asyncio.create_task(f.feed.read_new("g", "c", block_s=30))
        await asyncio.sleep(0.1)
        assert not waiting.done()
        await f.other.publish("t:1", b"x")
        assert ids(await asyncio.wait_for(waiting, 40)) == ["t:1"]


async def test_trim_keeps_what_any_group_has_not_acknowledged(backend: Backend) -> None:
    async with open_feeds(backend) as f:
        for n in range(1, 5):
            await f.feed.publish(f"t:{n}", b"")
        late = int(time.time() * 1000) + 10**9  # every record is old enough
        assert await f.feed.trim(late) == 0  # no group: nothing is trimmed
        a = await f.feed.read_new("a", "c", count=10)
        await f.feed.acknowledge("a", [e.stream_id for e in a[:3]])
        b = await f.feed.read_new("b", "c", count=2)
        await f.feed.acknowledge("b", [b[0].stream_id])
        assert await f.feed.trim(late) == 1  # t:1 only: b has t:2 pending
        await f.feed.acknowledge("b", [b[1].stream_id])
        assert await f.feed.trim(0) == 0  # nothing old enough
        assert await f.feed.trim(late) == 1  # t:2; t:3 was never read by b
        assert ids(await f.feed.read_new("b", "c", count=10)) == ["t:3", "t:4"]
        assert ids(await f.feed.read_new("new", "c", count=10)) == ["t:3", "t:4"]


async def test_bad_names_and_ids_are_refused(backend: Backend) -> None:
    async with open_feeds(backend) as f:
        for call in (
            f.feed.read_new("two words", "c"),
            f.feed.read_new("g", ""),
            f.feed.read_pending("g", "c" * 65),
            f.feed.acknowledge("g", ["17"]),
            f.feed.acknowledge("g", ["1-2-3"]),
            f.feed.publish("a{b}:1", b""),
            f.feed.stream_ids(["with space"]),
        ):
            with pytest.raises(InvalidIdError):
                await call
        with pytest.raises(ValueError, match="count"):
            await f.feed.read_new("g", "c", count=0)


OUTBOX_INDEX_T = f"ofc:{{outbox-{index_shard('t'):02d}}}"  # table t's shard of the outbox hints


# --- Redis only -----------------------------------------------------------------------------------
async def test_redis_keys_hints_and_the_rescan_backstop(redis_backend: Backend) -> None:
    async with open_feeds(redis_backend) as f:
        admin = f.h.admin
        assert isinstance(admin, Redis)
        await f.h.store.create_table("t", b"v1")
        await settle(f, "t", 1, [1])
        assert await admin.type("ofc:{t}:outbox") == b"hash"
        assert await admin.ttl("ofc:{t}:outbox") == -1  # no TTL: outlives the table
        assert await admin.zscore(OUTBOX_INDEX_T, "t") is not None
        await f.relay().sweep_once()
        assert await admin.type("ofc:{settlements}:stream") == b"stream"
        assert await admin.get("ofc:{settlements}:relayed:t:1") is not None
        assert await admin.ttl("ofc:{settlements}:relayed:t:1") > 0
        # an emptied outbox keeps its hint for the grace period (a commit may be in flight)
        now = int(time.time() * 1000)
        assert await f.h.store.pending_outboxes(now) == []
        assert await admin.zscore(OUTBOX_INDEX_T, "t") is not None
        assert await f.h.store.pending_outboxes(now + 60_000) == []
        assert await admin.zscore(OUTBOX_INDEX_T, "t") is None
        # a record whose hint was lost is found by the rescan, at most once an hour over
        # every process sharing the store (another store of it skips it meanwhile)
        await settle(f, "t", 2, [2])
        await admin.zrem(OUTBOX_INDEX_T, "t")
        assert await f.h.store.pending_outboxes(now) == []
        assert await f.h.store.pending_outboxes(now, rescan=True) == ["t"]
        assert 0 < await admin.pttl("ofc:{outbox-rescan}") <= OUTBOX_RESCAN_MS
        await admin.zrem(OUTBOX_INDEX_T, "t")
        assert await f.h.other.pending_outboxes(now, rescan=True) == []
        await admin.delete("ofc:{outbox-rescan}")
        assert await f.h.store.pending_outboxes(now, rescan=True) == ["t"]


async def test_redis_the_rescan_restores_a_lost_deadline_hint_no_later_than_the_deadline(
    redis_backend: Backend,
) -> None:
    """A table's deadline hint lost (a cluster's hint write that failed in a process that
    died before its next sweep) or left later than the table's deadline: the hourly rescan
    puts it back at the deadline, so the turn clock fires; an earlier hint is left as it is
    (the sweep corrects early ones)."""
    async with open_feeds(redis_backend) as f:
        admin = f.h.admin
        assert isinstance(admin, Redis)
        deadlines = f"ofc:{{deadlines-{index_shard('t'):02d}}}"
        for table_id in ("t", "u", "v"):
            await f.h.store.create_table(table_id, b"v1")
            await play(f.h.store, table_id, 1, deadline_ms=5_000)
        await admin.zrem(deadlines, "t")
        await admin.zadd(f"ofc:{{deadlines-{index_shard('u'):02d}}}", {"u": 9_000})  # late
        await admin.zadd(f"ofc:{{deadlines-{index_shard('v'):02d}}}", {"v": 1_000})  # early
        assert await f.h.store.due_deadlines(6_000) == [("v", 5_000)]  # t lost, u late
        await f.h.store.pending_outboxes(0, rescan=True)
        assert await f.h.store.due_deadlines(6_000) == [("t", 5_000), ("u", 5_000), ("v", 5_000)]


async def test_redis_the_rescan_writes_many_hints_in_bounded_commands(
    redis_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rescan writes what it restores in ZADDs of _SCAN_COUNT members at most (one
    command a shard would be 40 MB and a second of its node at a million tables): with a
    count of 2, 7 tables whose deadline hints were lost come back, over several commands."""
    monkeypatch.setattr(redis_store, "_SCAN_COUNT", 2)
    async with open_feeds(redis_backend) as f:
        admin = f.h.admin
        assert isinstance(admin, Redis)
        shard = index_shard("r0")  # all in one shard: one ZADD of 7 without the bound
        tables = [t for t in (f"r{n}" for n in range(400)) if index_shard(t) == shard][:7]
        for table_id in tables:
            await f.h.store.create_table(table_id, b"v1")
            await play(f.h.store, table_id, 1, deadline_ms=5_000)
        for n in range(16):
            await admin.delete(f"ofc:{{deadlines-{n:02d}}}")
        assert await f.h.store.due_deadlines(6_000) == []
        sent: list[int] = []
        zadd = Pipeline.zadd

        def counted(pipe: Any, name: Any, mapping: Any, **options: Any) -> Any:
            sent.append(len(mapping))
            return zadd(pipe, name, mapping, **options)

        monkeypatch.setattr(Pipeline, "zadd", counted)
        await admin.delete("ofc:{outbox-rescan}")
        await f.h.store.pending_outboxes(0, rescan=True)
        assert await f.h.store.due_deadlines(6_000) == sorted((t, 5_000) for t in tables)
        assert sum(sent) >= 7 and max(sent) <= 2


async def test_redis_a_hint_a_commit_failed_to_write_is_written_by_the_next_sweep(
    redis_backend: Backend,
) -> None:
    """The outbox hint's ZADD failed (its shard refused it) while the commit landed: the
    process writes the hint again when it next looks for outboxes, with no rescan."""
    async with open_feeds(redis_backend) as f:
        admin = f.h.admin
        assert isinstance(admin, Redis)
        await f.h.store.create_table("t", b"v1")
        await admin.set(OUTBOX_INDEX_T, "not a sorted set")  # the ZADD fails: WRONGTYPE
        await settle(f, "t", 1, [1])
        assert await admin.hlen("ofc:{t}:outbox") == 1
        await admin.delete(OUTBOX_INDEX_T)  # the shard takes writes again, without the hint
        assert await admin.zscore(OUTBOX_INDEX_T, "t") is None
        now = int(time.time() * 1000)
        assert await f.h.store.pending_outboxes(now) == ["t"]
        assert await f.relay().sweep_once() == 1


async def test_redis_a_hint_refused_again_holds_up_no_other_outbox(
    redis_backend: Backend,
) -> None:
    """Redis full (noeviction: it refuses writes): the outbox hint a commit failed to write
    is refused again at the next look for outboxes, and the relay still finds the other
    tables' (whose relay and acknowledgement free memory); the hint is kept for later."""
    async with open_feeds(redis_backend) as f:
        admin = f.h.admin
        assert isinstance(admin, Redis)
        await f.h.store.create_table("u", b"v1")
        await settle(f, "u", 1, [1])
        store = f.h.store
        assert isinstance(store, RedisTableStore)
        store._unhinted["t"] = 1  # as a commit whose hint Redis refused leaves it
        before = await admin.config_get("maxmemory*")
        used = int((await admin.info("memory"))["used_memory"])
        await admin.config_set("maxmemory-policy", "noeviction")
        await admin.config_set("maxmemory", str(used // 2))
        try:
            assert await store.pending_outboxes(int(time.time() * 1000)) == ["u"]
        finally:
            for name, value in before.items():
                await admin.config_set(str(name), str(value))
        assert store._unhinted == {"t": 1}


async def test_redis_a_pending_record_gone_from_the_stream_is_skipped(
    redis_backend: Backend,
) -> None:
    async with open_feeds(redis_backend) as f:
        assert f.h.admin is not None
        for n in (1, 2, 3):
            await f.feed.publish(f"t:{n}", b"")
        handed = await f.feed.read_new("g", "c", count=3)
        await f.h.admin.xdel("ofc:{settlements}:stream", handed[1].stream_id)
        assert ids(await f.feed.read_pending("g", "c", count=1)) == ["t:1"]
        assert ids(await f.feed.read_pending("g", "c", after=handed[0].stream_id, count=1)) == [
            "t:3"
        ]
        summary = await f.h.admin.xpending("ofc:{settlements}:stream", "g")
        assert summary["pending"] == 2  # the gone entry was acknowledged, t:1 and t:3 remain
        assert [e.stream_id for e in await f.feed.acknowledge("g", [handed[1].stream_id])] == []


async def test_redis_groups_come_back_after_the_stream_is_deleted(
    redis_backend: Backend,
) -> None:
    async with open_feeds(redis_backend) as f:
        assert f.h.admin is not None
        await f.feed.publish("t:1", b"")
        assert ids(await f.feed.read_new("g", "c")) == ["t:1"]
        await f.h.admin.delete("ofc:{settlements}:stream")
        assert await f.feed.read_pending("g", "c") == []  # the group is made again
        await f.h.admin.delete("ofc:{settlements}:stream")
        assert await f.feed.read_new("g", "c") == []
        await f.other.publish("t:2", b"")
        assert ids(await f.feed.read_new("g", "c")) == ["t:2"]


# --- the shell around it: the background relay, the inline relay, the gauge --------------------
async def test_the_background_relay_sweeps_every_outbox(backend: Backend) -> None:
    async with open_feeds(backend) as f:
        await f.h.store.create_table("t", b"v1")
        await settle(f, "t", 1, [1, 2])
        relay = f.relay(other=True)
        relay._loop.interval_s = 0.01
        relay.start()
        try:
            found: list[str] = []
            for _ in range(200):
                found += ids(await f.feed.read_new("g", "c", count=10, block_s=0.05))
                if len(found) == 2:
                    break
        finally:
            await relay.stop()
        assert found == ["t:1", "t:2"]
        # Stopped (maybe between publishing and emptying the outbox): the next run appends
        # nothing again and empties it.
        assert await f.relay().sweep_once() == 0
        assert await f.h.store.read_outbox("t") == {}


async def two_settled_tables(f: Feeds) -> SettlementRelay:
    """Tables "a" and "b", each with hand 1 settled into its outbox; a relay for them."""
    for table_id in ("a", "b"):
        await f.h.store.create_table(table_id, b"v1")
        await settle(f, table_id, 1, [1])
    return f.relay()


async def test_an_outbox_whose_store_node_is_out_holds_up_no_other(backend: Backend) -> None:
    """On a Redis Cluster the node of one table's outbox may be out alone: the relay's sweep
    relays the others' records all the same; it is retried as a whole (backing off) only
    when every outbox is out of reach."""
    async with open_feeds(backend) as f:
        relay = await two_settled_tables(f)
        read_outbox = relay.store.read_outbox
        out = {"a"}

        async def its_node_is_out(table_id: str) -> dict[str, bytes]:
            if table_id in out:
                raise StoreUnavailableError("the table store is unavailable")
            return await read_outbox(table_id)

        relay.store.read_outbox = its_node_is_out  # type: ignore[method-assign]
        assert await relay.sweep_once() == 1
        assert ids(await f.feed.read_new("g", "c")) == ["b:1"]
        with pytest.raises(StoreUnavailableError):  # only "a" waits now, and it is out
            await relay.sweep_once()
        out.clear()
        assert await relay.sweep_once() == 1
        assert ids(await f.feed.read_new("g", "c")) == ["a:1"]


async def test_an_outbox_whose_store_node_hangs_holds_up_no_other(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table's outbox whose node takes no answer gets RELAY_TABLE_S; the others are
    relayed meanwhile, and it goes last at the next sweep."""
    monkeypatch.setattr(settlements, "RELAY_TABLE_S", 1.0)
    async with open_feeds(backend) as f:
        relay = await two_settled_tables(f)
        read_outbox = relay.store.read_outbox
        tried: list[str] = []

        async def its_node_hangs(table_id: str) -> dict[str, bytes]:
            tried.append(table_id)
            if table_id == "a":
                await asyncio.sleep(3600)
            return await read_outbox(table_id)

        relay.store.read_outbox = its_node_hangs  # type: ignore[method-assign]
        async with asyncio.timeout(20):
            assert await relay.sweep_once() == 1
            assert ids(await f.feed.read_new("g", "c")) == ["b:1"]
            await settle(f, "b", 2, [2])
            tried.clear()
            assert await relay.sweep_once() == 1
        assert tried == ["b", "a"]


class BrokenFeed(MemorySettlementFeed):
    async def publish(self, settlement_id: str, data: bytes) -> str | None:
        raise StoreUnavailableError("the feed is down")


class HungFeed(MemorySettlementFeed):
    """A feed whose Redis node takes no writes for a while (paused, failing over)."""

    async def publish(self, settlement_id: str, data: bytes) -> str | None:
        await asyncio.sleep(60)
        raise AssertionError("not waited for")


@pytest.mark.parametrize("feed_kind", [BrokenFeed, HungFeed])
async def test_a_hand_settles_even_when_the_feed_is_down(
    backend: Backend, caplog: pytest.LogCaptureFixture, feed_kind: type[MemorySettlementFeed]
) -> None:
    """The record rides on the commit that ends the hand; relaying it is best effort then
    (waited for RELAY_WAIT_S at most, not for a hung feed's outage), and the sweep delivers
    it later. The feed's outage is a warning, not an error with a traceback (a failover
    makes one per settling move)."""
    caplog.set_level(logging.WARNING, logger="ofc.tables")
    async with open_feeds(backend) as f:
        down = SettlementRelay(f.h.store, feed_kind())
        manager = TableManager(
            f.h.store, Authenticator(), SilentPresenter(), relay=down, server_seed=lambda: bytes(32)
        )
        rules = resolve_ruleset({"preset": "classic", "unit_value": 5})
        match, _ = engine.replay(
            engine.new_match(rules, seats=2), [SitDown(0, "ann"), SitDown(1, "bob")]
        )
        record = TableRecord("t", match, 30_000, 120_000, b"seed", 0)
        await manager.create(record)

        version = 1
        for n in range(30):
            current, version, _ = await manager.load("t")
            if current.match.hand is not None and current.match.hand.over:
                break
            to_act = engine.seats_to_act(current.match)
            # the server's own requests: a timeout for the seat to act, or the next hand
            command = commands.TimeOut(to_act[0]) if to_act else commands.StartHand()
            async with asyncio.timeout(10):  # not the hung feed's minute
                await manager.run(Request("t", version, f"m{n}"), command)
        final, _, _ = await manager.load("t")
        assert final.match.hand is not None and final.match.hand.over
        outbox = await f.h.store.read_outbox("t")
        assert list(outbox) == ["t:1"]
        settled = SettlementRecord.from_bytes(outbox["t:1"])
        assert [(s.seat, s.total_units) for s in settled.seats] == [
            (0, final.units_of(0)), (1, final.units_of(1))
        ]  # fmt: skip
        assert settled.seats[0].units == 5 * settled.seats[0].points
        deferred = [r for r in caplog.records if r.name == "ofc.tables"]
        assert [(r.levelname, r.getMessage(), r.exc_info) for r in deferred] == [
            ("WARNING", "relay deferred to the sweep", None)
        ]
        assert await f.relay().sweep_once() == 1
        assert ids(await f.feed.read_new("g", "c")) == ["t:1"]


async def test_the_sweeper_counts_the_waiting_tables_every_few_seconds(backend: Backend) -> None:
    async with backend.open() as h:
        far = 10**15  # never due
        for table_id in ("a", "b"):
            await h.store.create_table(table_id, b"v1")
        await play(h.store, "a", 1, deadline_ms=far)
        manager = TableManager(h.store, Authenticator(), SilentPresenter())
        sweeper = DeadlineSweeper(manager, count_interval_s=3600)
        assert await sweeper.sweep_once() == 0
        assert REGISTRY.get_sample_value("ofc_active_tables") == 1  # the first sweep counts
        await play(h.store, "b", 1, deadline_ms=far)
        assert await sweeper.sweep_once() == 0
        assert REGISTRY.get_sample_value("ofc_active_tables") == 1  # not again within the hour
        assert await DeadlineSweeper(manager, count_interval_s=0).sweep_once() == 0
        assert REGISTRY.get_sample_value("ofc_active_tables") == 2


async def test_deadline_count_is_global_and_the_sweeper_reports_it(backend: Backend) -> None:
    async with backend.open() as h:
        far = 10**15  # never due
        for table_id in ("a", "b", "c"):
            await h.store.create_table(table_id, b"v1")
        await play(h.store, "a", 1, deadline_ms=far)
        await play(h.other, "b", 1, deadline_ms=far + 1)
        await play(h.store, "c", 1)
        assert await h.store.deadline_count() == 2 == await h.other.deadline_count()
        manager = TableManager(h.other, Authenticator(), SilentPresenter())
        assert await DeadlineSweeper(manager).sweep_once() == 0
        assert REGISTRY.get_sample_value("ofc_active_tables") == 2
        await play(h.store, "a", 2)  # a's deadline cleared
        assert await h.other.deadline_count() == (1 if h.kind == "memory" else 2)  # a stale hint


async def test_redis_an_outbox_whose_commit_reply_was_lost_is_hinted_by_the_next_sweep(
    redis_backend: Backend,
) -> None:
    """The commit ran but its reply never came back (the connection dropped), and its hint
    did not land: the store, not knowing which, writes the hint again at the next sweep."""
    async with open_feeds(redis_backend) as f:
        admin, store = f.h.admin, f.h.store
        assert isinstance(admin, Redis) and isinstance(store, RedisTableStore)
        await store.create_table("t", b"v1")
        sent = store._direct.execute  # type: ignore[union-attr]

        async def reply_lost(commands: Any) -> Any:
            await sent(commands)
            await admin.zrem(OUTBOX_INDEX_T, "t")
            raise ConnectionError("the connection dropped before the reply")

        store._direct.execute = reply_lost  # type: ignore[union-attr,method-assign]
        with pytest.raises((StoreUnavailableError, ConnectionError)):
            await settle(f, "t", 1, [1])
        store._direct.execute = sent  # type: ignore[union-attr,method-assign]
        assert await admin.hlen("ofc:{t}:outbox") == 1
        assert await store.pending_outboxes(int(time.time() * 1000)) == ["t"]
