"""What only the Redis store has: its key layout, scripts, deadline hints and faults."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import signal
import time
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from ofc_service.store import (
    AlreadyAppliedError,
    Commit,
    CommitResult,
    EventsTrimmedError,
    RedisSettlementFeed,
    RedisTableStore,
    RequestIdReusedError,
    StaleVersionError,
    StoreError,
    StoreUnavailableError,
    TableNotFoundError,
    TableStore,
    open_store,
)
from ofc_service.store.redis_io import (
    EVENT_DICTIONARY,
    EVENT_FIELD,
    INDEX_SHARDS,
    RESPONSE_DICTIONARY,
    DirectCalls,
    Marker,
    index_shard,
    marker_field,
    pack_event,
    text,
    unpack_event,
    unpack_response,
)
from redis import exceptions as redis_errors
from redis.asyncio import Connection, Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.crc import key_slot

from bench.tables import CountingConnection
from tests.conftest import RedisServer, free_port

from .conftest import Backend, Harness
from .test_conformance import hand_begun, payloads, play


def deadline_index(table_id: str) -> str:
    """The shard of the deadline index that holds ``table_id``'s hint."""
    return f"ofc:{{deadlines-{index_shard(table_id):02d}}}"


async def all_hints(admin: Redis, index: str = "deadlines") -> list[tuple[bytes, float]]:
    """Every shard's entries, by score then member."""
    entries: list[tuple[bytes, float]] = []
    for shard in range(INDEX_SHARDS):
        page: list[Any] = await admin.zrange(f"ofc:{{{index}-{shard:02d}}}", 0, -1, withscores=True)
        entries += [(bytes(member), float(score)) for member, score in page]
    return sorted(entries, key=lambda e: (e[1], e[0]))


def admin_of(h: Harness) -> Redis:
    assert isinstance(h.admin, Redis)
    return h.admin


async def test_key_layout_and_ttls(redis_backend: Backend) -> None:
    async with redis_backend.open() as h:
        admin = admin_of(h)
        await h.store.create_table("t", b"v1", ttl_seconds=600)
        await play(
            h.store,
            "t",
            1,
            request_id="r1",
            deadline_ms=1_000,
            extra={"hand:1": b"h"},
            ttl_seconds=600,
            request_ttl_seconds=60,
        )
        keys = sorted(k.decode() if isinstance(k, bytes) else k for k in await admin.keys("*"))
        create_record = next(k for k in keys if ":req:create:" in k)
        assert keys == sorted(
            [
                deadline_index("t"),
                "ofc:{t}:events",
                "ofc:{t}:extra",
                "ofc:{t}:extra_index",
                "ofc:{t}:req:r1",
                "ofc:{t}:requests",
                "ofc:{t}:state",
                create_record,
            ]
        )
        # the request log: each record's key after the table's last event at its commit
        log = [text(entry) for entry in await admin.lrange("ofc:{t}:requests", 0, -1)]
        assert [entry.split(" ")[1] for entry in log] == [create_record, "ofc:{t}:req:r1"]
        table_keys = [k for k in keys if k != deadline_index("t")]
        assert len({key_slot(k.encode()) for k in table_keys}) == 1
        assert key_slot(deadline_index("t").encode()) != key_slot(table_keys[0].encode())
        for key in keys:
            ttl = await admin.ttl(key)
            if key == deadline_index("t"):
                assert ttl == -1  # shared by all tables; entries are removed by the sweep
            elif key.endswith(":req:r1"):
                assert 50 < ttl <= 60
            elif key == create_record:
                assert 0 < ttl <= 60
            else:
                assert 590 < ttl <= 600
        assert await admin.hgetall("ofc:{t}:state") == {
            b"version": b"2",
            b"state": b"v2",
            b"deadline": b"1000",
            b"last_event": (await h.store.load("t")).last_event_id.encode(),
            b"layout": b"1",
        }
        assert await all_hints(admin) == [(b"t", 1000.0)]

        await admin.hset("ofc:{t}:state", "layout", "2")
        with pytest.raises(StoreError, match="unknown layout"):
            await h.store.load("t")


async def test_scripts_reload_after_script_flush(redis_backend: Backend) -> None:
    async with redis_backend.open() as h:
        admin = admin_of(h)
        await admin.script_flush()
        await h.store.create_table("t", b"v1")
        await admin.script_flush()
        await play(h.store, "t", 1)  # a direct EVALSHA
        await admin.script_flush()
        await play(h.store, "t", 2, deadline_ms=1_000)  # EVALSHA inside the ZADD pipeline
        await admin.script_flush()
        await play(h.store, "t", 3, extra={"hand:1": b"h"})
        await admin.script_flush()
        assert (await h.store.list_extra("t", "hand")).items == ((1, b"h"),)
        await play(h.store, "t", 4, deadline_ms=None)
        await admin.script_flush()
        assert await h.store.due_deadlines(2_000) == []  # runs the compare-and-set script
        assert await all_hints(admin) == []
        table = await h.store.load("t")
        assert (table.version, table.state) == (5, b"v5")
        assert payloads(await h.store.read_events("t")) == [b"e%d.0" % v for v in range(2, 6)]


async def test_store_survives_a_server_restart(
    redis_backend: Backend, redis_server: RedisServer
) -> None:
    async with redis_backend.open() as h:
        await h.store.create_table("before", b"v1")
        await play(h.store, "before", 1, deadline_ms=1_000)
        redis_server.restart()  # no persistence: data and scripts are gone
        with pytest.raises(TableNotFoundError):
            await h.store.load("before")
        await h.store.create_table("after", b"v1")
        await play(h.store, "after", 1, deadline_ms=1_000)
        waiting = (await h.store.load("after")).last_event_id
        assert await h.store.wait_events("after", after=waiting, timeout_s=0.05) == []
        redis_server.restart()
        await h.other.create_table("again", b"v1")
        await play(h.other, "again", 1)
        await play(h.other, "again", 2, deadline_ms=1_000)
        assert await h.store.due_deadlines(1_000) == [("again", 1_000)]
        last = (await h.store.load("again")).last_event_id
        # (a bound for failing: its reconnection on a loaded machine may take a while)
        waiter = asyncio.create_task(h.store.wait_events("again", after=last, timeout_s=30))
        await asyncio.sleep(0.05)
        await play(h.other, "again", 3)
        assert payloads(await waiter) == [b"e4.0"]  # the blocking pool reconnected too


async def test_unavailable_server_is_reported_then_recovered(
    redis_backend: Backend, redis_server: RedisServer
) -> None:
    async with redis_backend.open() as h:
        await h.store.create_table("t", b"v1")
        redis_server.stop()
        try:
            with pytest.raises(StoreUnavailableError) as caught:
                await h.store.load("t")
            assert caught.value.reason == "STORE_UNAVAILABLE"
            with pytest.raises(StoreUnavailableError):
                await play(h.store, "t", 1, deadline_ms=5)
        finally:
            redis_server.start()
        await h.store.create_table("t", b"v1")
        assert (await play(h.store, "t", 1)).version == 2


async def test_a_silent_server_fails_calls_rather_than_holding_them() -> None:
    """A Redis that stops answering (paused, or cut off without a reset) fails each call
    UNAVAILABLE after the socket timeout (5 s; here the URL's 2 s), so that the call can be
    retried, instead of holding it for as long as Redis is silent; once, not after three
    retries more of as long (a client's deadline of a few seconds would pass first)."""
    server = RedisServer()
    store = RedisTableStore.from_url(server.url + "?socket_timeout=2")
    try:
        await store.create_table("t", b"v1")
        assert server.process is not None
        server.process.send_signal(signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailableError):
                # the guard only keeps a broken build from hanging the suite
                await asyncio.wait_for(store.load("t"), 60)
            # one timeout, not four (8 s and more): 3 s of room for a loaded machine
            assert time.monotonic() - started < 5
        finally:
            server.process.send_signal(signal.SIGCONT)
        assert (await store.load("t")).state == b"v1"
    finally:
        await store.close()
        server.stop()


@pytest.mark.parametrize(
    "refuse",
    [
        ("CONFIG", "SET", "maxmemory", "1"),  # full, maxmemory-policy noeviction
        ("REPLICAOF", "127.0.0.1", "1"),  # a replica now (as after a failover demoted it)
    ],
    ids=["full", "read-only"],
)
async def test_a_server_refusing_writes_is_unavailable_and_nothing_is_applied(
    refuse: tuple[str, ...],
) -> None:
    server = RedisServer()
    store = RedisTableStore.from_url(server.url)
    admin = Redis.from_url(server.url)
    try:
        await store.create_table("t", b"v1")
        await admin.execute_command(*refuse)  # type: ignore[no-untyped-call]
        # (Redis lets a script that has already written, by a deletion, write on when full:
        # a commit may then pass; what it refuses, it refuses whole.)
        with pytest.raises(StoreUnavailableError, match="refuses writes") as caught:
            await store.claim_table_id("create-1", "u")  # a CreateTable's first write
        assert caught.value.reason == "STORE_UNAVAILABLE"
        assert (await store.load("t")).version == 1  # reads go on
        await admin.execute_command("REPLICAOF", "NO", "ONE")  # type: ignore[no-untyped-call]
        await admin.config_set("maxmemory", "0")
        assert await store.claim_table_id("create-1", "u") == "u"  # the retry applies it
    finally:
        await admin.aclose()
        await store.close()
        server.stop()


async def test_a_blocking_read_redis_ends_is_unavailable() -> None:
    """Redis ends a blocking read with ``UNBLOCKED`` rather than answering it: a
    Subscribe's XREADGROUP when a failover demotes its master (on a cluster, a Watch's XREAD
    too), any of them on ``CLIENT UNBLOCK ... ERROR``. That is UNAVAILABLE, so that clients
    read again (from the new master); it was INTERNAL, and clients gave up."""
    server = RedisServer()
    store = RedisTableStore.from_url(server.url)
    feed = RedisSettlementFeed.from_url(server.url)
    admin = Redis.from_url(server.url)

    async def blocked() -> list[str]:  # the ids of the clients blocked (flag b) in a read
        for _ in range(500):
            found = [c["id"] for c in await admin.client_list() if "b" in c["flags"]]
            if found:
                return found
            await asyncio.sleep(0.01)
        raise AssertionError("the read never blocked")

    async def unavailable(read: Awaitable[object]) -> None:
        with pytest.raises(StoreUnavailableError, match="ended a blocking read") as caught:
            await asyncio.wait_for(read, 10)
        assert caught.value.reason == "STORE_UNAVAILABLE"

    try:
        await store.create_table("t", b"v1", events=[b"e1"])
        newest = (await store.read_events("t", after="0"))[-1].event_id
        watch = asyncio.create_task(store.wait_events("t", after=newest, timeout_s=20))
        (reader,) = await blocked()
        await admin.execute_command("CLIENT", "UNBLOCK", reader, "ERROR")  # type: ignore[no-untyped-call]
        await unavailable(watch)
        assert await feed.read_new("ledger", "c") == []  # the group, before the read blocks
        subscribe = asyncio.create_task(feed.read_new("ledger", "c", block_s=20))
        await blocked()
        await admin.execute_command("REPLICAOF", "127.0.0.1", "1")  # type: ignore[no-untyped-call]
        await unavailable(subscribe)
    finally:
        await admin.aclose()
        await feed.close()
        await store.close()
        server.stop()


async def test_killed_connections_leave_tables_consistent(redis_backend: Backend) -> None:
    """Connections are killed under load; callers retry with the same request id, as the
    contract allows. Every table's state, version and events agree afterwards, and no
    change was applied twice or lost."""
    async with redis_backend.open() as h:
        admin = admin_of(h)
        tables = ["a", "b"]
        for table_id in tables:
            await h.store.create_table(table_id, b"v1", events=[b"e1.0"])
        stop = asyncio.Event()
        applied: dict[str, set[int]] = {t: set() for t in tables}

        async def mover(store: TableStore, table_id: str, name: str) -> None:
            while not stop.is_set():
                try:
                    version = (await store.load(table_id)).version
                except StoreUnavailableError:
                    continue
                while True:  # one logical request, retried until it has an answer
                    try:
                        result = await play(
                            store, table_id, version, request_id=f"{name}-{version}"
                        )
                    except StoreUnavailableError:
                        continue
                    except StaleVersionError:
                        break
                    applied[table_id].add(result.version)
                    break

        killed = 0

        async def killer() -> None:
            nonlocal killed
            while not stop.is_set():
                killed += await admin.client_kill_filter(_type="normal", skipme=True)
                await asyncio.sleep(0.003)

        tasks = [
            asyncio.create_task(mover(store, table_id, f"{table_id}{i}"))
            for i, store in enumerate([h.store, h.other, h.store, h.other])
            for table_id in tables
        ]
        tasks.append(asyncio.create_task(killer()))
        # Until enough happened (a second on an idle machine; a loaded one needs longer).
        loop = asyncio.get_running_loop()
        give_up = loop.time() + 30.0
        while loop.time() < give_up and not (
            killed > 20 and all(len(applied[t]) >= 5 for t in tables)
        ):
            await asyncio.sleep(0.05)
        stop.set()
        await asyncio.gather(*tasks)
        assert killed > 20
        for table_id in tables:
            table = await h.store.load(table_id)
            assert table.version > 5
            assert table.state == b"v%d" % table.version
            events = await h.store.read_events(table_id, limit=10_000)
            assert payloads(events) == [b"e%d.0" % v for v in range(1, table.version + 1)]
            assert applied[table_id] == set(range(2, table.version + 1))


async def test_deadline_hints_are_repaired(redis_backend: Backend) -> None:
    async with redis_backend.open() as h:
        admin = admin_of(h)

        async def hint(table_id: str) -> float | None:
            score: float | None = await admin.zscore(deadline_index(table_id), table_id)
            return score

        for table_id in ("early", "stale", "lost"):
            await h.store.create_table(table_id, b"v1")
        await play(h.store, "early", 1, deadline_ms=5_000)
        with pytest.raises(StaleVersionError):  # an earlier hint from a losing commit stays
            await play(h.other, "early", 1, request_id="x", deadline_ms=1_000)
        assert await hint("early") == 1_000
        with pytest.raises(StaleVersionError):  # a later one is lowered back at once
            await play(h.other, "early", 1, request_id="y", deadline_ms=9_000)
        assert await hint("early") == 5_000
        await admin.zadd(deadline_index("early"), {"early": 1_000})
        await play(h.store, "stale", 1, deadline_ms=1_000)
        await play(h.store, "stale", 2, deadline_ms=None)
        await play(h.store, "lost", 1, deadline_ms=1_000)
        await admin.delete("ofc:{lost}:state")  # as if the table had expired
        await admin.zadd(deadline_index("absent"), {"absent": 1_500})

        assert await h.store.due_deadlines(2_000) == []
        assert await all_hints(admin) == [(b"early", 5000.0)]
        assert await h.store.due_deadlines(5_000) == [("early", 5_000)]
        assert await hint("early") == 5_000  # kept until the sweeper's commit moves it


async def test_hints_of_the_unsharded_indexes_are_still_served_and_drained(
    redis_backend: Backend,
) -> None:
    # Releases before the sharded indexes wrote every hint to ofc:deadlines / ofc:outbox.
    # After an upgrade those tables still time out and relay; their hints move to the shards.
    async with redis_backend.open() as h:
        admin = admin_of(h)
        for table_id in ("due", "later", "gone", "settled"):
            await h.store.create_table(table_id, b"v1")
        await play(h.store, "due", 1, deadline_ms=1_000)
        await play(h.store, "later", 1, deadline_ms=9_000)
        await play(h.store, "settled", 1)
        await h.store.commit(
            Commit(
                "settled", expected_version=2, state=b"v3", request_id="s", deadline_ms=None,
                outbox={"settled:1": b"record"},
            )
        )  # fmt: skip
        for index in ("deadlines", "outbox"):  # as the older release left them
            for shard in range(INDEX_SHARDS):
                await admin.delete(f"ofc:{{{index}-{shard:02d}}}")
        await admin.zadd("ofc:deadlines", {"due": 1_000, "later": 500, "gone": 700})
        await admin.zadd("ofc:outbox", {"settled": 1_000})

        assert await h.store.deadline_count() == 3
        assert await h.store.due_deadlines(2_000) == [("due", 1_000)]
        # the early hint moved to its shard at the real deadline, the stale one is dropped
        assert await admin.zrange("ofc:deadlines", 0, -1, withscores=True) == [(b"due", 1000.0)]
        assert await all_hints(admin) == [(b"later", 9000.0)]
        assert await h.store.due_deadlines(9_000) == [("due", 1_000), ("later", 9_000)]
        assert await h.store.pending_outboxes(2_000) == ["settled"]
        await h.store.remove_from_outbox("settled", ["settled:1"])
        assert await h.store.pending_outboxes(10**13) == []
        assert await admin.exists("ofc:outbox") == 0


async def test_open_store_picks_the_backend(redis_url: str) -> None:
    store = open_store(redis_url)
    assert isinstance(store, RedisTableStore)
    try:
        await store.create_table("t", b"v1")
        assert (await play(store, "t", 1)).version == 2
    finally:
        await store.close()


async def test_a_burst_past_redis_pys_default_pool_size_is_served(redis_url: str) -> None:
    """redis-py 8 lets a pool have 100 connections in use and refuses the next call at once
    ("Too many connections"): a replica's burst of calls through the store's pool, and of
    its feed's blocking reads, is served, not refused UNAVAILABLE."""
    store = RedisTableStore.from_url(redis_url, key_prefix="burst")
    feed = RedisSettlementFeed.from_url(redis_url, key_prefix="burst")
    try:
        claims = [store.claim_timeout(f"t{k}", 1, ttl_ms=60_000) for k in range(300)]
        assert await asyncio.gather(*claims) == [True] * 300
        reads = [feed.read_new("g", f"c{k}", block_s=0.5) for k in range(150)]
        assert await asyncio.gather(*reads) == [[]] * 150
    finally:
        await store.close()
        await feed.close()


async def test_request_records_are_compact_strings_and_old_hash_records_still_answer(
    redis_backend: Backend,
) -> None:
    async with redis_backend.open() as h:
        admin = admin_of(h)
        await h.store.create_table("t", b"v1")
        response = b"a view " * 40
        first = await h.store.commit(Commit(
            "t", expected_version=1, state=b"v2", events=[b"e"], response=response,
            request_id="new", deadline_ms=None,
        ))  # fmt: skip
        assert await admin.type("ofc:{t}:req:new") == b"string"
        assert await admin.ttl("ofc:{t}:req:new") > 0
        stored = await admin.get("ofc:{t}:req:new")
        assert isinstance(stored, bytes)
        assert stored.startswith(b"2 " + first.event_ids[0].encode() + b"\n")
        assert len(stored) < len(response) // 2  # the response is compressed
        assert await h.other.get_response("t", "new") == response
        again = await h.other.commit(Commit(
            "t", expected_version=1, state=b"x", events=[b"x"], response=b"x",
            request_id="new", deadline_ms=None,
        ))  # fmt: skip
        assert (again.version, again.response, again.replayed) == (2, response, True)
        assert again.event_ids == first.event_ids
        # A record written before the string layout (a hash) answers its retries as it did.
        await admin.hset(
            "ofc:{t}:req:old", mapping={"version": 2, "events": "1-0 1-1", "response": b"first"}
        )
        assert await h.other.get_response("t", "old") == b"first"
        old = await h.other.commit(Commit(
            "t", expected_version=2, state=b"x", events=[], response=b"x",
            request_id="old", deadline_ms=None,
        ))  # fmt: skip
        assert (old.version, old.response, old.replayed, old.event_ids) == (
            2, b"first", True, ("1-0", "1-1"),
        )  # fmt: skip
        # A request without events (a timeout's empty answer) round-trips too.
        bare = await h.store.commit(Commit(
            "t", expected_version=2, state=b"v3", events=[], response=b"",
            request_id="bare", deadline_ms=None,
        ))  # fmt: skip
        assert await h.other.get_response("t", "bare") == b""
        replay = await h.other.commit(Commit(
            "t", expected_version=2, state=b"x", events=[], response=b"x",
            request_id="bare", deadline_ms=None,
        ))  # fmt: skip
        assert (replay.version, replay.response, replay.event_ids) == (bare.version, b"", ())
        # A record with its request's digest: "#<digest>" closes the first line; the old
        # hash layout has none, so a request with a digest never matches it.
        await h.store.commit(Commit(
            "t", expected_version=3, state=b"v4", events=[b"e"], response=b"r",
            request_id="digested", deadline_ms=None, request_digest="abc123",
        ))  # fmt: skip
        stored = await admin.get("ofc:{t}:req:digested")
        assert isinstance(stored, bytes) and stored.split(b"\n", 1)[0].endswith(b" #abc123")
        assert await h.other.get_response("t", "digested", request_digest="abc123") == b"r"
        with pytest.raises(RequestIdReusedError):
            await h.other.get_response("t", "old", request_digest="abc123")
        assert await h.other.get_response("t", "old", request_digest="") == b"first"


async def test_a_table_playing_hands_keeps_one_hash_of_records_per_hand(
    redis_backend: Backend,
) -> None:
    # Upgrading: string records of the release before (listed in the request log) still
    # answer and go with their hand; new records go to their hand's hash, which the next
    # hand shrinks to markers (in a hash of their own, a listpack) and the one after deletes.
    async with redis_backend.open() as h:
        admin = admin_of(h)
        await h.store.create_table("t", b"v1", ttl_seconds=600)
        view = RESPONSE_DICTIONARY[:665]  # the first of the dictionary's responses

        async def start(version: int, name: str) -> CommitResult:
            return await h.store.commit(Commit(
                "t", expected_version=version, state=b"s", events=[b"start"], response=view,
                request_id=name, deadline_ms=None, keep_segments=2, compact_response=True,
                ttl_seconds=600, request_ttl_seconds=60,
            ))  # fmt: skip

        first = await start(1, "start-1")
        hand_1 = f"ofc:{{t}}:replies:{first.event_ids[0]}"
        # a record of the release before, written during hand 1 (a string and its log entry)
        old = b"3 " + first.event_ids[0].encode() + b" #d\n" + zlib.compress(b"old view")
        await admin.set("ofc:{t}:req:old", old, ex=60)
        await admin.rpush("ofc:{t}:requests", f"{first.event_ids[0]} ofc:{{t}}:req:old")
        assert await h.other.get_response("t", "old", request_digest="d") == b"old view"
        replay = await h.other.commit(Commit(
            "t", expected_version=2, state=b"x", events=[], response=b"x", request_id="old",
            deadline_ms=None, request_digest="d",
        ))  # fmt: skip
        assert (replay.replayed, replay.response, replay.version) == (True, b"old view", 3)

        assert await admin.type(hand_1) == b"hash"
        assert not await admin.exists("ofc:{t}:req:start-1")
        assert 590 < await admin.ttl(hand_1) <= 600  # the table's, the longer
        stored = await admin.hget(hand_1, "start-1")
        assert isinstance(stored, bytes)
        head, packed = stored.split(b"\n", 1)
        tokens = head.split()
        assert tokens[:2] == [b"2", first.event_ids[0].encode()] and tokens[-1] == b"~"
        assert tokens[2].startswith(b"@")  # the end of its retry window, in ms
        assert zlib.decompress(packed) == view  # a zlib stream any release inflates
        assert unpack_response(packed) == view == await h.other.get_response("t", "start-1")

        second = await start(2, "start-2")
        assert not await admin.exists(hand_1)  # no whole record left: its markers only
        markers_1 = f"ofc:{{t}}:markers:{first.event_ids[0]}"
        assert await admin.object("encoding", markers_1) == b"listpack"
        assert 590 < await admin.ttl(markers_1) <= 600  # as long as its hand's records
        assert await admin.hkeys(markers_1) == [marker_field("start-1")]
        value = await admin.hget(markers_1, marker_field("start-1"))
        assert isinstance(value, bytes) and len(value) == 26
        marker = Marker.from_bytes(value)
        assert marker.version == 2 and marker.made_by("")
        assert 0 < marker.expires_ms - time.time() * 1000 <= 60_000  # its retry window
        assert await h.other.get_response("t", "old", request_digest="d") == b"old view"
        await start(3, "start-3")
        assert not await admin.exists(markers_1, "ofc:{t}:req:old")  # hand 1 is gone
        assert await admin.llen("ofc:{t}:requests") == 0
        markers_2 = f"ofc:{{t}}:markers:{second.event_ids[0]}"
        assert await admin.hkeys(markers_2) == [marker_field("start-2")]


async def test_create_claims_keep_the_digest_beside_the_claimed_table_id(
    redis_backend: Backend,
) -> None:
    """The claimed table id stays alone in its key (releases before digests read it as it
    is); the digest is a second key of the same slot, with the same time to live."""
    async with redis_backend.open() as h:
        admin = admin_of(h)
        assert await h.store.claim_table_id("c", "t-1", request_digest="d1", ttl_seconds=60) == (
            "t-1"
        )
        assert await admin.get("ofc:{create:c}:table") == b"t-1"
        assert await admin.get("ofc:{create:c}:digest") == b"d1"
        assert 0 < await admin.ttl("ofc:{create:c}:digest") <= 60
        # a claim written by a release before digests (SET NX GET of the table id only)
        await admin.set("ofc:{create:old}:table", "t-0", ex=60)
        assert await h.other.claim_table_id("old", "t-2", request_digest="d2") == "t-0"
        assert await admin.get("ofc:{create:old}:digest") is None


def test_the_response_dictionary_never_changes() -> None:
    # Records name it by its Adler-32 and need its exact bytes to unpack: a new dictionary
    # is a new file beside it, never an edit of this one.
    digest = hashlib.sha256(RESPONSE_DICTIONARY).hexdigest()
    assert digest == "dbb671a30dd204c3b70d85339f26d3bad5e5adbcf240fc2feaea4a4793739c97"
    assert zlib.adler32(RESPONSE_DICTIONARY) == 3660550935


def test_the_event_dictionary_never_changes() -> None:
    # Entries name it by their first byte and need its exact bytes to unpack: a new
    # dictionary is a new file and tag beside it, never an edit of this one.
    digest = hashlib.sha256(EVENT_DICTIONARY).hexdigest()
    assert digest == "8055627b2078082065c79b76d9900157f598cd989992f1445c5000495583237b"


@pytest.mark.parametrize(
    "event",
    [b"", b"x", bytes(range(256)) * 3, EVENT_DICTIONARY[:40], EVENT_DICTIONARY[-900:]],
)
def test_packed_events_round_trip(event: bytes) -> None:
    packed = pack_event(event)
    assert unpack_event(EVENT_FIELD, packed) == event
    assert len(packed) <= len(event) + 1  # never more than the tag byte over


def test_an_event_packed_in_an_unknown_way_is_an_error_not_garbage() -> None:
    with pytest.raises(StoreError, match="packed in a way this release lacks"):
        unpack_event(EVENT_FIELD, b"\x07" + b"?" * 10)


async def test_the_event_log_packs_entries_and_still_reads_those_of_the_release_before(
    redis_backend: Backend,
) -> None:
    # A log written during a rolling upgrade: entries of the release before (field 'd', the
    # bytes as they are) between packed ones (field 'z'); readers get every event's bytes.
    async with redis_backend.open() as h:
        admin = admin_of(h)
        await h.store.create_table("t", b"v1", ttl_seconds=600)
        dealt = EVENT_DICTIONARY[-45:]  # the shape of a stored event: it packs well
        first = await h.store.commit(Commit(
            "t", expected_version=1, state=b"s2", events=[dealt, b"b"], response=b"r",
            request_id="r1", deadline_ms=None,
        ))  # fmt: skip
        entries: Any = await admin.xrange("ofc:{t}:events")
        assert [list(fields) for _, fields in entries] == [[b"z"], [b"z"]]
        assert len(entries[0][1][b"z"]) < len(dealt)  # deflated with the dictionary
        old_id = await admin.xadd("ofc:{t}:events", {"d": b"written by the release before"})
        await admin.hset("ofc:{t}:state", "last_event", old_id)
        await h.store.commit(Commit(
            "t", expected_version=2, state=b"s3", events=[b"c"], response=b"r",
            request_id="r2", deadline_ms=None,
        ))  # fmt: skip
        expected = [dealt, b"b", b"written by the release before", b"c"]
        for store in (h.store, h.other):
            assert [e.data for e in await store.read_events("t")] == expected
            later = await store.wait_events("t", after=first.event_ids[0], timeout_s=0)
            assert [e.data for e in later] == expected[1:]
            assert [e.event_id for e in later][1] == text(old_id)


async def test_a_trim_by_the_release_before_voids_the_newest_event_trimmed(
    redis_backend: Backend,
) -> None:
    # A hand's trim keeps the newest event it dropped beside the first one kept ('trimmed'),
    # so a reader that saw that event is served. The release before trims writing
    # 'events_from' alone: the pair no longer matches it and is not read, so a reader at
    # the old pair's event, which has now missed events, is refused, not served a gap.
    async with redis_backend.open() as h:
        admin = admin_of(h)
        created, hand = await hand_begun(h.store, "start")
        newest_dropped = created.event_ids[1]
        state: Any = await admin.hmget("ofc:{t}:state", ["events_from", "trimmed"])
        assert [text(v) for v in state] == [
            hand.event_ids[0],
            f"{newest_dropped} {hand.event_ids[0]}",
        ]
        assert payloads(await h.other.read_events("t", after=newest_dropped)) == [b"h.0"]
        moved = await play(h.store, "t", 2, events=2)
        # the release before trims the log to the move's second event
        await admin.xtrim("ofc:{t}:events", minid=moved.event_ids[1])
        await admin.hset("ofc:{t}:state", "events_from", moved.event_ids[1])
        for store in (h.store, h.other):
            with pytest.raises(EventsTrimmedError):
                await store.read_events("t", after=newest_dropped)
            with pytest.raises(EventsTrimmedError):
                await store.wait_events("t", after=newest_dropped, timeout_s=0)


async def test_markers_of_the_release_before_still_answer_and_move_at_the_next_hand(
    redis_backend: Backend,
) -> None:
    # A rolling upgrade: the release before wrote a marker as a field of its own (and a
    # whole record) in the current hand's hash; both answer here, and when the next hand
    # begins both go to the hand's markers hash with the lane's.
    async with redis_backend.open() as h:
        admin = admin_of(h)
        await h.store.create_table("t", b"v1", ttl_seconds=600)

        async def commit(version: int, name: str, *, start: bool = False) -> CommitResult:
            return await h.store.commit(Commit(
                "t", expected_version=version, state=b"s", events=[b"e"],
                response=b"R" + name.encode(), request_id=name, deadline_ms=None,
                keep_segments=2 if start else 0, compact_response=True,
                request_digest="d-" + name, request_lane="lane",
            ))  # fmt: skip

        first = await commit(1, "start-1", start=True)
        hand_1 = f"ofc:{{t}}:replies:{first.event_ids[0]}"
        expires = int(time.time() * 1000) + 60_000
        await admin.hset(hand_1, "old-marker", f"5 #d-old-marker @{expires}")
        await admin.hset(
            hand_1, "old-whole", f"6 1-1 #d-old-whole @{expires} ~\n".encode() + zlib.compress(b"W")
        )
        await commit(2, "move-1")  # the lane's newer record: start-1 is a marker now
        markers_1 = f"ofc:{{t}}:markers:{first.event_ids[0]}"
        assert await admin.hkeys(markers_1) == [marker_field("start-1")]
        assert not await admin.hexists(hand_1, "start-1")
        with pytest.raises(AlreadyAppliedError) as applied:
            await h.other.get_response("t", "old-marker", request_digest="d-old-marker")
        assert applied.value.version == 5
        assert await h.other.get_response("t", "old-whole", request_digest="d-old-whole") == b"W"
        await commit(3, "start-2", start=True)
        assert not await admin.exists(hand_1)
        names = ("start-1", "move-1", "old-marker", "old-whole")
        assert sorted(await admin.hkeys(markers_1)) == sorted(map(marker_field, names))
        for name, version in (("start-1", 2), ("move-1", 3), ("old-marker", 5), ("old-whole", 6)):
            with pytest.raises(AlreadyAppliedError) as applied:
                await h.other.get_response("t", name)
            assert applied.value.version == version, name
            with pytest.raises(AlreadyAppliedError):  # the script answers the same
                await h.other.commit(Commit(
                    "t", expected_version=1, state=b"x", events=[], response=b"x",
                    request_id=name, deadline_ms=None, request_digest="d-" + name,
                ))  # fmt: skip
            with pytest.raises(RequestIdReusedError):  # another request under the same id
                await h.other.get_response("t", name, request_digest="another")
        assert (await h.store.load("t")).version == 4  # nothing applied twice


async def test_a_request_record_is_found_in_two_round_trips_however_many_hands_are_kept(
    redis_backend: Backend,
) -> None:
    """A retry's record is looked up in the table's hands list, then in every kept hand's
    records and markers and on its own key at once: two round trips, whether the record is
    in the newest hand, a marker of an older one, or nowhere."""
    async with redis_backend.open():  # a flushed server
        store = RedisTableStore(
            Redis.from_url(redis_backend.url or "", connection_class=CountingConnection),
            owns_clients=True,
        )
        await store.create_table("t", b"v1", ttl_seconds=600)
        for version, name in enumerate(("start-1", "move-1", "start-2", "move-2"), start=1):
            await store.commit(Commit(
                "t", expected_version=version, state=b"s", events=[b"e"],
                response=b"R" + name.encode(), request_id=name, deadline_ms=None,
                keep_segments=2 if name.startswith("start") else 0, compact_response=True,
                request_digest="d-" + name, request_lane="lane",
            ))  # fmt: skip
        await store.get_response("t", "warm-up")  # connections made (their handshakes sent)
        for name, expected in (("move-2", b"Rmove-2"), ("move-1", None), ("never", None)):
            CountingConnection.sent = 0
            if name == "move-1":  # a marker of the hand before: applied, not kept
                with pytest.raises(AlreadyAppliedError):
                    await store.get_response("t", name, request_digest="d-" + name)
            else:
                assert await store.get_response("t", name) == expected
            assert CountingConnection.sent == 2, name
        await store.close()


class _CountedConnects(Connection):
    """A connection that counts its attempts to connect."""

    attempts = 0

    async def _connect(self) -> None:
        _CountedConnects.attempts += 1
        await super()._connect()  # type: ignore[no-untyped-call]


async def _attempts_of_redis_py(client: Redis, error: type[Exception]) -> int:
    """How often redis-py's own call tries to connect before it raises ``error``."""
    _CountedConnects.attempts = 0
    with pytest.raises(error):
        await client.hmget("k", ["version"])
    await client.aclose()
    assert _CountedConnects.attempts > 1  # retried at all
    return _CountedConnects.attempts


async def test_the_direct_calls_of_one_server_retry_and_fail_as_redis_py_does() -> None:
    """A store on one server sends its loads and commits itself (not through redis-py's
    command methods): against a server that is not there it tries to connect as often as
    redis-py's own call does, then reports the store unavailable."""
    url = f"redis://127.0.0.1:{free_port()}/0"

    def client() -> Redis:
        return Redis.from_url(url, retry=Retry(NoBackoff(), 2), connection_class=_CountedConnects)

    expected = await _attempts_of_redis_py(client(), redis_errors.ConnectionError)
    store = RedisTableStore(client(), owns_clients=True)
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: store.load("t"),
        lambda: play(store, "t", 1),
        lambda: play(store, "t", 1, deadline_ms=5),
    ]
    for call in calls:
        _CountedConnects.attempts = 0
        with pytest.raises(StoreUnavailableError) as caught:
            await call()
        assert caught.value.reason == "STORE_UNAVAILABLE"
        assert isinstance(caught.value.__cause__, redis_errors.ConnectionError)
        assert _CountedConnects.attempts == expected
    await store.close()


async def test_the_direct_calls_of_one_server_keep_to_the_pools_connections(
    redis_url: str,
) -> None:
    """A burst of calls larger than the pool's ``max_connections`` waits its turn on that
    many connections, the longest waiting first; a call cancelled while it waits, or just as
    a connection was handed to it, takes none with it."""
    _CountedConnects.attempts = 0
    client = Redis.from_url(redis_url, max_connections=3, connection_class=_CountedConnects)
    calls = DirectCalls(client.connection_pool)
    try:
        replies = await asyncio.gather(*(calls.call("ECHO", str(k)) for k in range(50)))
        assert replies == [str(k).encode() for k in range(50)]
        assert _CountedConnects.attempts == 3
        # This call and two others hold the three connections; three more wait, in turn.
        held = [asyncio.ensure_future(calls.call("BLPOP", "burst:none", "2")) for _ in range(2)]
        cancelled, handed, waiting = (
            asyncio.ensure_future(calls.call("ECHO", text)) for text in ("c", "h", "w")
        )
        asyncio.get_running_loop().call_later(0.1, cancelled.cancel)  # while it waits
        assert await calls.call("BLPOP", "burst:none", "0.2") is None
        # This call's connection went to `handed` (`cancelled` waits no more): cancelled
        # before it could run, it passes the connection on to `waiting`.
        handed.cancel()
        assert await waiting == b"w"
        assert not any(h.done() for h in held)  # `waiting` did not wait for them
        assert cancelled.cancelled() and handed.cancelled()
        assert await asyncio.gather(*held) == [None, None]
        assert await asyncio.gather(*(calls.call("PING") for _ in range(9))) == [b"PONG"] * 9
        assert _CountedConnects.attempts == 3
    finally:
        await calls.close()
        await client.aclose()


async def test_the_direct_calls_of_one_server_time_out_and_retry_as_redis_py_does() -> None:
    """Against a server that takes connections and never answers, a store's load and commit
    are bounded by the client's socket timeout and retried as redis-py retries a timeout
    (as many connections), then the store is reported unavailable."""
    connections: list[asyncio.StreamWriter] = []

    async def mute(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(writer)  # read nothing, answer nothing

    server = await asyncio.start_server(mute, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]

    def client() -> Redis:
        return Redis.from_url(
            f"redis://127.0.0.1:{port}/0",
            retry=Retry(NoBackoff(), 2),
            socket_timeout=0.2,
            connection_class=_CountedConnects,
        )

    try:
        expected = await _attempts_of_redis_py(client(), redis_errors.TimeoutError)
        store = RedisTableStore(client(), owns_clients=True)
        for call in (lambda: store.load("t"), lambda: play(store, "t", 1)):
            _CountedConnects.attempts = 0
            started = time.monotonic()
            with pytest.raises(StoreUnavailableError) as caught:
                await asyncio.wait_for(call(), 10)  # a hang fails here, not at the suite's limit
            assert isinstance(caught.value.__cause__, redis_errors.TimeoutError)
            assert _CountedConnects.attempts == expected
            # each try waited its 0.2 s, and no longer (generous: a loaded machine)
            assert 0.2 * expected <= time.monotonic() - started < 0.2 * expected + 5
        await store.close()
    finally:
        for writer in connections:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_the_direct_calls_of_one_server_never_share_or_desync_a_connection(
    redis_backend: Backend,
) -> None:
    """Concurrent loads each get their own table; a load cancelled while its reply is on
    the way, or answered with an error reply, and a watch's read cancelled while it blocks,
    leave nothing behind for the next call."""
    async with redis_backend.open() as h:
        admin = admin_of(h)
        tables = [f"t{i}" for i in range(20)]
        for table_id in tables:
            await h.store.create_table(table_id, table_id.encode())
        for _ in range(3):
            loaded = await asyncio.gather(*(h.store.load(t) for t in tables))
            assert [t.state for t in loaded] == [t.encode() for t in tables]
            for delay in range(4):  # cut short at each point of its round trip
                cut = asyncio.create_task(h.store.load("t0"))
                for _ in range(delay):
                    await asyncio.sleep(0)
                cut.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await cut
                assert (await h.store.load("t1")).state == b"t1"
        await admin.set("ofc:{wrong}:state", b"a string")
        with pytest.raises(redis_errors.ResponseError, match="WRONGTYPE"):
            await h.store.load("wrong")
        assert (await h.store.load("t2")).state == b"t2"
        assert (await play(h.store, "t2", 1, deadline_ms=5)).version == 2
        # a watch's blocking read, cancelled while it waits, then waited on again
        last = (await h.store.load("t3")).last_event_id
        for cancelled in (True, False):
            waiter = asyncio.create_task(h.store.wait_events("t3", after=last, timeout_s=30))
            await asyncio.sleep(0.05)
            if cancelled:
                waiter.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await waiter
        await play(h.other, "t3", 1)
        assert payloads(await waiter) == [b"e2.0"]
