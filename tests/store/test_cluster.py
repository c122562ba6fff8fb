"""Faults only a Redis Cluster has: a master killed mid-game, a table's slot moved mid-game, a
master that hangs (the first seed of the URL at that).

With ``wait_replicas=1`` a commit is acknowledged only once a replica has it, so the failover
(SIGKILL of the master, its replica promoted) cannot lose an acknowledged move; and a master
without a replica refuses to acknowledge anything until one follows it again.

Each test gets a cluster of its own (``fresh_cluster``; ``fresh_steady_cluster`` when no
master is to fail over). A writer commits moves to a few tables while the fault happens; a
commit that fails UNAVAILABLE is retried with the same request id, as a client does.
Afterwards every acknowledged move must be in the store: the version, the state and the
event log of each table say so.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import random
import secrets
import time
from typing import Any

import pytest
from ofc_service.server.health import PING_TIMEOUT_S
from ofc_service.store import (
    Commit,
    RedisSettlementFeed,
    RedisTableStore,
    StaleVersionError,
    StoreUnavailableError,
    TableStore,
)
from ofc_service.store.redis import (
    CLOSE_HINTS_S,
    HINT_LATE_S,
    HINT_WAIT_S,
    NODE_READ_S,
    NODE_RETRY_S,
)
from ofc_service.store.redis_io import index_shard
from redis import exceptions as redis_errors

from tests.conftest import LocalRedisCluster

from .conftest import Backend
from .test_conformance import payloads, play

TABLES = ("alpha", "bravo", "charlie")


class Writer:
    """Moves to :data:`TABLES` in turn, each retried (same request id) until acknowledged."""

    def __init__(self, store: TableStore) -> None:
        self.store = store
        self.versions = dict.fromkeys(TABLES, 1)
        self.acknowledged = 0
        self.unavailable = 0

    async def create(self, store: TableStore | None = None) -> None:
        for table_id in TABLES:
            await (store or self.store).create_table(table_id, b"v1")

    async def run(self, moves: int, *, timeout_s: float = 40.0) -> None:
        deadline = time.monotonic() + timeout_s
        for n in range(moves):
            table_id = TABLES[n % len(TABLES)]
            version = self.versions[table_id]
            while True:
                assert time.monotonic() < deadline, "the store did not come back"
                try:
                    result = await play(
                        self.store,
                        table_id,
                        version,
                        request_id=f"{table_id}-{version + 1}",
                        deadline_ms=None if n % 2 else 10**13 + n,  # half through the pipeline
                    )
                    break
                except StoreUnavailableError:
                    self.unavailable += 1
                    await asyncio.sleep(0.02)
            assert result.version == version + 1
            self.versions[table_id] = result.version
            self.acknowledged += 1
            await asyncio.sleep(0.002)

    async def check(self, store: TableStore) -> None:
        """Every acknowledged move is there: version, state and the whole event log."""
        for table_id, version in self.versions.items():
            table = await store.load(table_id)
            assert (table.version, table.state) == (version, b"v%d" % version)
            events = await store.read_events(table_id, limit=10_000)
            assert payloads(events) == [b"e%d.0" % v for v in range(2, version + 1)]


async def test_a_killed_master_fails_over_and_no_acknowledged_move_is_lost(
    fresh_cluster: LocalRedisCluster,
) -> None:
    cluster = fresh_cluster
    victim = cluster.master_of("ofc:{alpha}:state")
    replica = cluster.replica_of(victim)
    store = RedisTableStore.from_url(cluster.url, wait_replicas=1, wait_timeout_ms=200)
    try:
        writer = Writer(store)
        # Created without WAIT: a creation is not retried, and on a loaded machine a replica
        # may take more than 200 ms to confirm it. Each confirmed move below confirms it too.
        plain = RedisTableStore.from_url(cluster.url)
        try:
            await writer.create(plain)
        finally:
            await plain.close()
        await writer.run(30)
        playing = asyncio.create_task(writer.run(60))
        await asyncio.sleep(0.05)  # the kill lands mid-game, between or inside commits
        await asyncio.to_thread(cluster.kill, victim)
        await asyncio.to_thread(cluster.wait_promoted, replica)
        # With WAIT 1 the promoted master takes no write until it has a replica again: the
        # old master comes back (as its orchestrator would restart it) and follows it.
        await asyncio.to_thread(cluster.start, victim)
        await asyncio.to_thread(cluster.wait_replicas_online)
        await playing
        assert writer.unavailable > 0  # the game met the failover, and went on
        assert cluster.master_of("ofc:{alpha}:state") == replica
    finally:
        await store.close()
    reader = RedisTableStore.from_url(cluster.url)
    try:
        await writer.check(reader)
    finally:
        await reader.close()


async def test_a_table_slot_moved_mid_game_loses_nothing(
    fresh_steady_cluster: LocalRedisCluster,
) -> None:
    cluster = fresh_steady_cluster
    source = cluster.master_of("ofc:{alpha}:state")
    target = next(port for port in cluster.masters() if port != source)
    store = RedisTableStore.from_url(cluster.url)
    try:
        writer = Writer(store)
        await writer.create()
        await writer.run(60)  # a few dozen request records to move with the table
        playing = asyncio.create_task(writer.run(90))
        moved = await asyncio.to_thread(cluster.migrate_slot, "ofc:{alpha}:state", target)
        await playing
        assert moved > 20
        assert cluster.master_of("ofc:{alpha}:state") == target
        await writer.check(store)  # through the client that followed the move
    finally:
        await store.close()


async def test_wait_replicas_refuses_what_no_replica_confirmed(redis_backend: Backend) -> None:
    # One Redis without replicas: WAIT 1 never succeeds, so the commit is applied but not
    # acknowledged; the retry (same request id) is answered from its record, and refused the
    # same way until a replica confirms it.
    assert redis_backend.url is not None
    store = RedisTableStore.from_url(redis_backend.url, wait_replicas=1, wait_timeout_ms=20)
    plain = RedisTableStore.from_url(redis_backend.url)
    try:
        await plain.create_table("t", b"v1")
        for _ in range(2):
            with pytest.raises(StoreUnavailableError, match="not confirmed by 1 Redis replica"):
                await play(store, "t", 1, request_id="r")
        assert (await plain.load("t")).version == 2  # applied once
        replayed = await play(plain, "t", 1, request_id="r")
        assert (replayed.version, replayed.replayed) == (2, True)
    finally:
        await store.close()
        await plain.close()


async def test_the_feed_appends_only_what_a_replica_confirmed(redis_backend: Backend) -> None:
    """With ``wait_replicas``, a settlement record appended but not confirmed by a replica is
    refused (the relay keeps the hand's outbox and appends again later, once): a failover
    cannot lose the record after the outbox that its commit confirmed is gone."""
    assert redis_backend.url is not None
    feed = RedisSettlementFeed.from_url(redis_backend.url, wait_replicas=1, wait_timeout_ms=20)
    plain = RedisSettlementFeed.from_url(redis_backend.url)
    try:
        with pytest.raises(StoreUnavailableError, match="not confirmed by 1 Redis replica"):
            await feed.publish("t:1", b"{}")  # one Redis, no replica: WAIT 1 never succeeds
        assert await plain.publish("t:1", b"{}") is None  # appended once, all the same
    finally:
        await feed.close()
        await plain.close()


async def test_the_feed_waits_on_the_node_of_its_stream(redis_cluster_url: str) -> None:
    # (WAIT answers once the replica has the append: a loaded machine's replica may lag)
    feed = RedisSettlementFeed.from_url(redis_cluster_url, wait_replicas=1, wait_timeout_ms=10_000)
    try:
        settlement_id = f"wait-{time.time_ns()}:1"
        assert await feed.publish(settlement_id, b"{}") is not None
        assert await feed.publish(settlement_id, b"{}") is None
    finally:
        await feed.close()


async def _created(store: RedisTableStore, table_id: str) -> None:
    """A table created, as set-up, through a store that WAITs for a replica with a short
    timeout: on a loaded machine the replica may confirm it later than that (it lags, it is
    not gone), so the creation is confirmed within a generous bound instead."""
    with contextlib.suppress(StoreUnavailableError):  # made, perhaps not yet confirmed
        await store.create_table(table_id, b"v1")
    await _within(30, lambda: store.confirm(table_id))
    assert (await store.load(table_id)).version == 1


async def test_a_wait_answers_for_the_write_before_it_after_the_slot_moved(
    fresh_steady_cluster: LocalRedisCluster,
) -> None:
    """WAIT counts the replicas holding its own connection's writes. The table's slot moved
    to another master since the store last read the slot map: redis-py's pipeline sent the
    commit script and the confirmation's write again, alone, to the new master, while the
    WAIT had already answered on the old one (for writes long confirmed), and a commit no
    replica held was acknowledged (a probe lost it in a failover). Here the new master's
    replica is stopped: no WAIT there can say 1, so the commit, a confirmation and the feed's
    append are all UNAVAILABLE, and once it is back they are confirmed on the new master."""
    cluster = fresh_steady_cluster
    cluster.wait_replicas_online()
    table_id, stream = "moving-table", "ofc:{settlements}:stream"
    store = RedisTableStore.from_url(cluster.url, wait_replicas=1, wait_timeout_ms=300)
    feed = RedisSettlementFeed.from_url(cluster.url, wait_replicas=1, wait_timeout_ms=300)
    try:
        await _created(store, table_id)  # both clients now know the slot map
        await _within(30, lambda: feed.publish("moving-table:1", b"{}"))  # (as set-up, too)
        for key in (f"ofc:{{{table_id}}}:state", stream):
            new = next(p for p in cluster.masters() if p != cluster.master_of(key))
            cluster.migrate_slot(key, new)
        table_master = cluster.master_of(f"ofc:{{{table_id}}}:state")
        feed_master = cluster.master_of(stream)
        replicas = {cluster.replica_of(table_master), cluster.replica_of(feed_master)}
        with contextlib.ExitStack() as stopped:
            for replica in replicas:
                stopped.enter_context(cluster.stopped(replica))
            with pytest.raises(StoreUnavailableError, match="not confirmed"):
                await store.commit(Commit(table_id, 1, b"v2", "moved-1", None))
            with pytest.raises(StoreUnavailableError):
                await store.confirm(table_id)
            with pytest.raises(StoreUnavailableError, match="not confirmed"):
                await feed.publish("moving-table:2", b"{}")
        result = await _within(
            30, lambda: store.commit(Commit(table_id, 1, b"v2", "moved-1", None))
        )
        assert result.version == 2  # the same request: applied once, now confirmed
        await store.confirm(table_id)
        await _within(30, lambda: feed.publish("moving-table:2", b"{}"))  # confirmed now
        assert cluster.client(feed_master).xlen(stream) == 2  # and appended once
    finally:
        await store.close()
        await feed.close()


async def test_no_wait_is_answered_by_another_master_after_a_failover(
    fresh_cluster: LocalRedisCluster,
) -> None:
    """A table's master is killed and its replica takes over, with no replica of its own
    while the old master stays down: a WAIT 1 there can only say 0. redis-py's pipeline,
    meeting the refused connection, sent itself again with the WAIT routed to any master
    (its node pinned once only), which answered for its own writes: a confirmation, and a
    commit, were acknowledged that no replica held. Every one is UNAVAILABLE now."""
    cluster = fresh_cluster
    cluster.wait_replicas_online()
    # redis-py's default node is the master of slot 0: a table on another master, so that
    # a WAIT sent there would answer for that master's own replica
    first = next(
        n["port"]
        for n in cluster.nodes()
        if n["role"] == "master" and any(low == 0 for low, _ in n["slots"])
    )
    names = [f"failed-over-{n}" for n in range(200)]
    master = next(p for p in cluster.masters() if p != first)
    # a few tables of that master, each retried on its own: the call that straddles the
    # failover is the one a misrouted WAIT answered
    tables = [t for t in names if cluster.master_of(f"ofc:{{{t}}}:state") == master][:6]
    replica = cluster.replica_of(master)
    store = RedisTableStore.from_url(cluster.url, wait_replicas=1, wait_timeout_ms=200)
    answers: list[str] = []

    async def retried(table_id: str, until: asyncio.Future[float]) -> None:
        """A client retrying through the failover, and on for 2 s after it."""
        while not until.done() or time.monotonic() < until.result():
            try:
                await store.confirm(table_id)
                answers.append(f"{table_id} confirmed")
            except StoreUnavailableError:
                answers.append("unavailable")
            try:  # one request, retried: applied once (or not), never confirmed
                await store.commit(Commit(table_id, 1, b"v2", "after-failover", None))
                answers.append(f"{table_id} committed")
            except StoreUnavailableError:
                answers.append("unavailable")
            await asyncio.sleep(0.05)

    try:
        for table_id in tables:
            await _created(store, table_id)
        cluster.kill(master)
        loop = asyncio.get_running_loop()
        until: asyncio.Future[float] = loop.create_future()
        clients = asyncio.gather(*(retried(t, until) for t in tables))
        await asyncio.to_thread(cluster.wait_promoted, replica)
        until.set_result(time.monotonic() + 2.0)
        await clients
        assert set(answers) == {"unavailable"}, answers
    finally:
        await store.close()


async def _within(seconds: float, call: Any, *, attempt_s: float = 15.0) -> Any:
    """``call()`` retried (UNAVAILABLE, or no answer within ``attempt_s``) until it answers,
    for ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            async with asyncio.timeout(min(attempt_s, max(0.1, deadline - time.monotonic()))):
                return await call()
        except (StoreUnavailableError, TimeoutError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


async def test_a_hung_master_holds_up_neither_other_masters_reads_nor_health_after_failover(
    fresh_cluster: LocalRedisCluster,
) -> None:
    """The URL's first seed, a master, stops answering without closing a connection (SIGSTOP,
    as a paused VM or a partition without resets). redis-py asked its default node (that one)
    for every stream read's keys, and health PINGed it: once the cluster had failed it over,
    every Watch read of every table still hung on it, and the store still looked down. Now a
    table on another master is read at once, the store answers as the cluster does, and the
    hung master's own tables are read (and written) on the replica that took over."""
    cluster = fresh_cluster
    hung = cluster.ports[0]
    assert hung in cluster.masters()  # redis-cli --cluster create: the first three
    names = [f"table-{n}" for n in range(200)]
    elsewhere = next(t for t in names if cluster.master_of(f"ofc:{{{t}}}:state") != hung)
    served = next(t for t in names if cluster.master_of(f"ofc:{{{t}}}:state") == hung)
    replica = cluster.replica_of(hung)
    store = RedisTableStore.from_url(cluster.url)
    # The first move is confirmed by a replica (WAIT 1; replication is in order, so the table
    # it was made on is there too): the promoted replica has the hung master's table.
    confirmed = RedisTableStore.from_url(cluster.url, wait_replicas=1, wait_timeout_ms=5000)
    try:
        for table_id in (elsewhere, served):
            await store.create_table(table_id, b"v1")
            await play(confirmed, table_id, 1)
            assert len(await store.wait_events(table_id, after="0", timeout_s=1)) == 1
        await store.ping()
        with cluster.stopped(hung):
            await asyncio.to_thread(cluster.wait_promoted, replica)
            await _within(10, store.ping, attempt_s=PING_TIMEOUT_S)  # as health asks
            started = time.monotonic()
            events = await store.wait_events(elsewhere, after="0", timeout_s=1)
            assert len(events) == 1 and time.monotonic() - started < 3
            await _within(40, lambda: play(store, served, 2))
            events = await _within(40, lambda: store.wait_events(served, after="0", timeout_s=1))
            assert payloads(events) == [b"e2.0", b"e3.0"]
    finally:
        await store.close()
        await confirmed.close()


async def test_health_on_a_cluster_whose_user_may_not_ask_cluster_info(
    local_cluster: LocalRedisCluster,
) -> None:
    """A user whose ACL allows everything but ``CLUSTER INFO``: the nodes answer (refusing),
    so health is up, as a PING of theirs was, not "no node answered"."""
    ports = local_cluster.live_ports()
    for port in ports:
        local_cluster.client(port).execute_command(  # type: ignore[no-untyped-call]
            "ACL", "SETUSER", "limited", "on", ">pw", "~*", "&*", "+@all", "-cluster|info"
        )
    url = local_cluster.url.replace("redis+cluster://", "redis+cluster://limited:pw@")
    store = RedisTableStore.from_url(url)
    try:
        await store.create_table("acl-table", b"v1")
        await store.ping()
    finally:
        await store.close()
        for port in ports:
            local_cluster.client(port).execute_command("ACL", "DELUSER", "limited")  # type: ignore[no-untyped-call]


async def test_a_watch_read_of_a_master_failed_over_by_hand_is_unavailable(
    fresh_cluster: LocalRedisCluster,
) -> None:
    """``CLUSTER FAILOVER`` on a table's replica demotes its master under a watch's blocking
    read: Redis ends the read with ``UNBLOCKED``, which the cluster client's pipeline reports
    wrapped ("Command # 1 (XREAD ...) of pipeline caused error: ('UNBLOCKED ...',)"). That
    is UNAVAILABLE (watchers resume from the new master), not INTERNAL."""
    cluster = fresh_cluster
    store = RedisTableStore.from_url(cluster.url)
    try:
        created = await store.create_table("alpha", b"v1", events=[b"e1.0"])
        master = cluster.master_of("ofc:{alpha}:state")
        replica = cluster.replica_of(master)
        read = asyncio.create_task(
            store.wait_events("alpha", after=created.event_ids[0], timeout_s=20)
        )
        for _ in range(500):  # until the read blocks on the master
            clients = await asyncio.to_thread(cluster.client(master).client_list)
            if any("b" in c["flags"] for c in clients):
                break
            await asyncio.sleep(0.01)
        await asyncio.to_thread(cluster.client(replica).execute_command, "CLUSTER", "FAILOVER")
        with pytest.raises(StoreUnavailableError, match="ended a blocking read"):
            await asyncio.wait_for(read, 15)
    finally:
        await store.close()


def _table_away_from_its_hints(cluster: LocalRedisCluster, prefix: str) -> tuple[str, int]:
    """A table id whose deadline hint shard lives on another master than the table, and
    that master's port."""
    for n in range(200):
        table_id = f"away-{n}"
        shard = f"{prefix}:{{deadlines-{index_shard(table_id):02d}}}"
        hints_on = cluster.master_of(shard)
        if hints_on != cluster.master_of(f"{prefix}:{{{table_id}}}:state"):
            return table_id, hints_on
    raise AssertionError("every table's hints share its master")


async def test_a_paused_master_of_hint_shards_holds_up_no_other_masters_moves(
    local_cluster: LocalRedisCluster,
) -> None:
    """A move's deadline hint lives in a shard of its own slot, on any master: when that
    master stops taking writes (``CLIENT PAUSE ... WRITE``, as during a failover or a slow
    fsync), the commit of a table on a healthy master is answered at once, not after the
    pause (the hint is written when the master takes writes again)."""
    prefix = f"paused{secrets.token_hex(4)}"
    table_id, hints_on = _table_away_from_its_hints(local_cluster, prefix)
    store = RedisTableStore.from_url(local_cluster.url, key_prefix=prefix)
    try:
        await store.create_table(table_id, b"v1")
        await play(store, table_id, 1, deadline_ms=10**13)  # the connections are made
        # (a pause of 30 s, lifted at once: a bound of 10 s tells "at once" from "after it")
        local_cluster.client(hints_on).execute_command("CLIENT", "PAUSE", 30_000, "WRITE")  # type: ignore[no-untyped-call]
        try:
            started = time.monotonic()
            result = await play(store, table_id, 2, deadline_ms=1_000)
            took = time.monotonic() - started
        finally:
            local_cluster.client(hints_on).execute_command("CLIENT", "UNPAUSE")  # type: ignore[no-untyped-call]
        assert result.version == 3
        assert took < 10, f"the move waited {took:.1f} s for another master"
        due = await _within(10, lambda: _due(store, table_id))
        assert due == [(table_id, 1_000)]
    finally:
        await store.close()


async def test_a_deadline_hint_another_master_refused_is_written_again_by_the_sweep(
    local_cluster: LocalRedisCluster,
) -> None:
    """The master of the table's deadline hint shard refuses writes (``NOREPLICAS``): the
    move is made all the same, and the next sweep of the same process writes the hint, so
    the turn clock still fires."""
    prefix = f"refused{secrets.token_hex(4)}"
    table_id, hints_on = _table_away_from_its_hints(local_cluster, prefix)
    hints_master = local_cluster.client(hints_on)
    store = RedisTableStore.from_url(local_cluster.url, key_prefix=prefix)
    try:
        await store.create_table(table_id, b"v1")
        hints_master.config_set("min-replicas-to-write", 5)
        try:
            result = await play(store, table_id, 1, deadline_ms=1_000)
            assert result.version == 2
            for _ in range(500):  # the hint's write, sent beside the commit, is refused
                if not store._hint_writes:
                    break
                await asyncio.sleep(0.02)
            assert not store._hint_writes, "the hint's write never ended"
            assert await store.due_deadlines(10**13) == []  # the shard's master still refuses
        finally:
            hints_master.config_set("min-replicas-to-write", 0)
        assert await store.due_deadlines(10**13) == [(table_id, 1_000)]
    finally:
        await store.close()


async def _due(store: RedisTableStore, table_id: str) -> list[tuple[str, int]]:
    due = await store.due_deadlines(10**13)
    if not due:
        raise StoreUnavailableError(f"no deadline of {table_id} due yet")
    return due


def _slow_next_zadd(store: RedisTableStore, delay_s: float) -> None:
    """The store's next single ZADD (a move's deadline hint, on a cluster) reaches Redis
    ``delay_s`` late, as after a dropped connection retried with backoff."""
    client: Any = store._client
    zadd = client.zadd

    async def late(*args: Any, **kwargs: Any) -> Any:
        client.zadd = zadd
        await asyncio.sleep(delay_s)
        return await zadd(*args, **kwargs)

    client.zadd = late


def _hold_next_zadd(store: RedisTableStore, landed: asyncio.Event | None = None) -> asyncio.Event:
    """The store's next single ZADD (a move's deadline hint, on a cluster) reaches Redis
    only once the returned event is set: an order of landings a test chooses, not a race.
    ``landed`` is set once Redis has answered it; the hint write that sent it goes on to its
    end without yielding (what the next sweep settles is noted by then)."""
    client: Any = store._client
    zadd = client.zadd
    release = asyncio.Event()

    async def held(*args: Any, **kwargs: Any) -> Any:
        client.zadd = zadd
        await release.wait()
        try:
            return await zadd(*args, **kwargs)
        finally:
            if landed is not None:
                landed.set()

    client.zadd = held
    return release


async def _hint_of(cluster: LocalRedisCluster, prefix: str, table_id: str) -> float | None:
    shard = f"{prefix}:{{deadlines-{index_shard(table_id):02d}}}"
    score: float | None = cluster.client(cluster.master_of(shard)).zscore(shard, table_id)
    return score


async def _hint_is(cluster: LocalRedisCluster, prefix: str, table_id: str, score: int) -> None:
    if await _hint_of(cluster, prefix, table_id) != score:
        raise StoreUnavailableError(f"the hint of {table_id} is not {score} yet")


async def test_a_hint_landing_after_another_replicas_earlier_deadline_is_lowered_to_it(
    local_cluster: LocalRedisCluster,
) -> None:
    """Replica A's move answers before its slow deadline hint lands; replica B's next move
    makes the table's deadline earlier and writes its hint at once; A's hint then lands
    over it. A hint errs early, never late: A lowers its own to the table's deadline."""
    prefix = f"landing{secrets.token_hex(4)}"
    table_id, _ = _table_away_from_its_hints(local_cluster, prefix)
    a = RedisTableStore.from_url(local_cluster.url, key_prefix=prefix)
    b = RedisTableStore.from_url(local_cluster.url, key_prefix=prefix)
    try:
        await a.create_table(table_id, b"v1")
        a_landed = asyncio.Event()
        a_hint = _hold_next_zadd(a, a_landed)
        await play(a, table_id, 1, deadline_ms=60_000)  # answered after HINT_WAIT_S
        await play(b, table_id, 2, deadline_ms=45_000)
        await _within(10, lambda: _hint_is(local_cluster, prefix, table_id, 45_000))
        a_hint.set()  # A's hint lands, over B's
        await asyncio.wait_for(a_landed.wait(), 10)  # (and A has noted it for its next sweep)
        assert await _hint_of(local_cluster, prefix, table_id) == 60_000
        assert await a.due_deadlines(0) == []  # A's next sweep settles its late hint
        assert await _hint_of(local_cluster, prefix, table_id) == 45_000
        assert await b.due_deadlines(50_000) == [(table_id, 45_000)]
    finally:
        await a.close()
        await b.close()


async def test_a_losing_move_waits_for_a_paused_hint_master_no_longer_than_a_winning_one(
    local_cluster: LocalRedisCluster,
) -> None:
    """A stale move (its deadline later than the table's) is refused within the same bound,
    and its hint, written once the master takes writes, is lowered to the table's deadline."""
    prefix = f"losing{secrets.token_hex(4)}"
    table_id, hints_on = _table_away_from_its_hints(local_cluster, prefix)
    store = RedisTableStore.from_url(local_cluster.url, key_prefix=prefix)
    try:
        await store.create_table(table_id, b"v1")
        await play(store, table_id, 1, deadline_ms=1_000)
        # (paused as long as for the winning move: its bound, 10 s, is then well short of it)
        local_cluster.client(hints_on).execute_command("CLIENT", "PAUSE", 30_000, "WRITE")  # type: ignore[no-untyped-call]
        try:
            started = time.monotonic()
            with pytest.raises(StaleVersionError):
                await play(store, table_id, 1, request_id="stale", deadline_ms=2_000)
            took = time.monotonic() - started
        finally:
            local_cluster.client(hints_on).execute_command("CLIENT", "UNPAUSE")  # type: ignore[no-untyped-call]
        # its hint's wait and its fix's, HINT_WAIT_S each: the rest is a loaded machine's
        assert took < 10, f"a stale move waited {took:.1f} s for the hints' master"
        assert await _within(10, lambda: _due(store, table_id)) == [(table_id, 1_000)]
    finally:
        await store.close()


async def test_closing_the_store_writes_the_hints_in_flight(
    local_cluster: LocalRedisCluster,
) -> None:
    """A replica stopping (a rolling restart) has hints still in flight: closing its store
    waits for them (a bounded while), so no table's turn clock is lost with the process."""
    prefix = f"closing{secrets.token_hex(4)}"
    table_id, _ = _table_away_from_its_hints(local_cluster, prefix)
    store = RedisTableStore.from_url(local_cluster.url, key_prefix=prefix)
    await store.create_table(table_id, b"v1")
    hint = _hold_next_zadd(store)
    await play(store, table_id, 1, deadline_ms=1_000)  # answered after HINT_WAIT_S
    in_flight = [t for t in asyncio.all_tasks() if "_write_hints" in repr(t.get_coro())]
    closing = asyncio.create_task(store.close())
    await asyncio.sleep(0)  # the store is closing, its hint still held
    hint.set()  # lands within CLOSE_HINTS_S
    await closing
    assert in_flight and await _hint_of(local_cluster, prefix, table_id) == 1_000
    assert not [t for t in asyncio.all_tasks() if "_write_hints" in repr(t.get_coro())]


async def test_a_hint_still_in_flight_when_the_store_closes_is_said(
    local_cluster: LocalRedisCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """Closing waits CLOSE_HINTS_S at most in all (a step of the server's stop has 1 s): a
    hint still on its way then is given up and named in a warning (the hourly rescan writes
    it)."""
    prefix = f"given{secrets.token_hex(4)}"
    table_id, _ = _table_away_from_its_hints(local_cluster, prefix)
    store = RedisTableStore.from_url(local_cluster.url, key_prefix=prefix)
    await store.create_table(table_id, b"v1")
    _slow_next_zadd(store, HINT_WAIT_S + CLOSE_HINTS_S + 4)
    await play(store, table_id, 1, deadline_ms=1_000)
    caplog.set_level(logging.WARNING, logger="ofc.store.redis")
    started = time.monotonic()
    await store.close()
    assert time.monotonic() - started < CLOSE_HINTS_S + 2.5  # not the 4 s more the hint would take
    said = [r for r in caplog.records if r.getMessage() == "hints not written as the store closed"]
    assert [r.fields["tables"] for r in said] == [table_id]  # type: ignore[attr-defined]


async def test_a_hint_landing_soon_after_another_replicas_earlier_deadline_is_lowered(
    local_cluster: LocalRedisCluster,
) -> None:
    """Replica B needs no answer from A to move: it sees A's move as its script runs. A's
    hint, a little late (within HINT_WAIT_S), lands over B's earlier one; A's next sweep
    lowers it to the table's deadline."""
    prefix = f"soon{secrets.token_hex(4)}"
    table_id, _ = _table_away_from_its_hints(local_cluster, prefix)
    a = RedisTableStore.from_url(local_cluster.url, key_prefix=prefix)
    b = RedisTableStore.from_url(local_cluster.url, key_prefix=prefix)
    try:
        await a.create_table(table_id, b"v1")
        a_landed = asyncio.Event()
        a_hint = _hold_next_zadd(a, a_landed)  # A's hint, held while B moves: then it lands
        moving = asyncio.create_task(play(a, table_id, 1, deadline_ms=60_000))
        while (await b.load(table_id)).version != 2:
            await asyncio.sleep(0.005)
        await play(b, table_id, 2, deadline_ms=45_000)
        await _within(10, lambda: _hint_is(local_cluster, prefix, table_id, 45_000))
        await asyncio.sleep(HINT_LATE_S)  # a little late, however fast B was
        a_hint.set()  # (within HINT_WAIT_S of A's move on an idle machine: A still waits)
        await asyncio.wait_for(a_landed.wait(), 10)
        await moving
        assert await _hint_of(local_cluster, prefix, table_id) == 60_000  # over B's
        await a.due_deadlines(0)
        assert await _hint_of(local_cluster, prefix, table_id) == 45_000
    finally:
        await a.close()
        await b.close()


async def test_a_move_its_tables_master_failed_leaves_no_late_hint(
    local_cluster: LocalRedisCluster,
) -> None:
    """The table's master fails the move while the hint's master takes its ZADD: the hint
    holds a deadline the table never got; the next sweep lowers it to the table's own."""
    prefix = f"failed{secrets.token_hex(4)}"
    table_id, _ = _table_away_from_its_hints(local_cluster, prefix)
    store = RedisTableStore.from_url(local_cluster.url, key_prefix=prefix)
    try:
        await store.create_table(table_id, b"v1")
        await play(store, table_id, 1, deadline_ms=10_000)
        script: Any = store._commit

        async def master_down(*args: Any, **kwargs: Any) -> Any:
            raise redis_errors.ConnectionError("the table's master is down")

        store._commit = master_down  # type: ignore[assignment]
        landed = asyncio.Event()
        _hold_next_zadd(store, landed).set()  # not held: only its landing is told
        with pytest.raises(StoreUnavailableError):
            await play(store, table_id, 2, deadline_ms=40_000)
        store._commit = script
        await asyncio.wait_for(landed.wait(), 10)  # the hint has landed
        assert await _hint_of(local_cluster, prefix, table_id) == 40_000
        assert await store.due_deadlines(20_000) == [(table_id, 10_000)]
    finally:
        await store.close()


async def test_without_full_coverage_a_stopped_master_fails_no_other_masters_move(
    fresh_cluster: LocalRedisCluster,
) -> None:
    """With `cluster-require-full-coverage no` (the shipped cluster variants, deploy/README.md)
    a master that stops answering, until its replica takes over, fails no move of a table
    whose keys and hints live on the other masters (Redis' default refuses every command
    with CLUSTERDOWN meanwhile)."""
    cluster = fresh_cluster
    for port in cluster.live_ports():
        cluster.client(port).config_set("cluster-require-full-coverage", "no")
    stopped = cluster.masters()[0]
    prefix = f"covered{secrets.token_hex(4)}"
    table_id = next(
        t
        for t in (f"t{n}" for n in range(500))
        if stopped
        not in (
            cluster.master_of(f"{prefix}:{{{t}}}:state"),
            cluster.master_of(f"{prefix}:{{deadlines-{index_shard(t):02d}}}"),
        )
    )
    replica = cluster.replica_of(stopped)
    store = RedisTableStore.from_url(cluster.url, key_prefix=prefix)
    try:
        await store.create_table(table_id, b"v1")
        version = (await play(store, table_id, 1, deadline_ms=10**13)).version
        with cluster.stopped(stopped):
            promoted = asyncio.create_task(asyncio.to_thread(cluster.wait_promoted, replica))
            slowest = 0.0
            while not promoted.done():  # every move across the failover, none held up
                started = time.monotonic()
                version = (await play(store, table_id, version, deadline_ms=10**13)).version
                slowest = max(slowest, time.monotonic() - started)
                await asyncio.sleep(0.02)
            await promoted
        assert version > 20
        assert slowest < 2, f"a move waited {slowest:.1f} s for the stopped master"
    finally:
        await store.close()


def _away_and_held(cluster: LocalRedisCluster, prefix: str, master: int) -> tuple[str, str]:
    """A table that ``master`` holds nothing of (its keys, its hint shards), and one whose
    keys it holds but not its hint shards."""

    def masters(table_id: str) -> tuple[int, set[int]]:
        n = index_shard(table_id)
        shards = {f"{prefix}:{{{part}-{n:02d}}}" for part in ("deadlines", "outbox")}
        return cluster.master_of(f"{prefix}:{{{table_id}}}:state"), set(
            map(cluster.master_of, shards)
        )

    names = [f"clock-{n}" for n in range(300)]
    away = next(t for t in names if master not in {masters(t)[0], *masters(t)[1]})
    held = next(t for t in names if masters(t)[0] == master and master not in masters(t)[1])
    return away, held


async def test_a_paused_master_holds_up_neither_other_masters_clocks_nor_their_relay(
    local_cluster: LocalRedisCluster,
) -> None:
    """A master stops answering (``CLIENT PAUSE ... ALL``, as a paused VM or a master being
    failed over) while it holds some of the 16 hint shards and a table whose turn ran out.
    The sweeps read every shard, and the tables they name, in one pipeline each: they waited
    for the pause to end (the whole pause, or until the failover), and with them every turn
    clock and the settlement relay of every master. Now each node's part is waited for
    ``NODE_READ_S`` at most: a table elsewhere is due, and its outbox pending, at once; the
    paused master's table comes once it is back."""
    prefix = f"sweeps{secrets.token_hex(4)}"
    store = RedisTableStore.from_url(local_cluster.url, key_prefix=prefix)
    paused = local_cluster.masters()[0]
    elsewhere, held = _away_and_held(local_cluster, prefix, paused)
    shard_masters = (local_cluster.master_of(f"{prefix}:{{deadlines-{n:02d}}}") for n in range(16))
    assert paused in shard_masters
    try:
        for table_id in (elsewhere, held):
            await store.create_table(table_id, b"v1")
            await store.commit(
                Commit(
                    table_id,
                    expected_version=1,
                    state=b"v2",
                    request_id="ran-out",
                    deadline_ms=1_000,
                    outbox={"settled-1": b"record"},
                )
            )
        # healthy yet: each node answers (a loaded machine may miss a sweep's bound: retried)
        due = await _within(30, lambda: _both_due(store, 2))
        assert sorted(due) == sorted([(elsewhere, 1_000), (held, 1_000)])
        local_cluster.client(paused).execute_command("CLIENT", "PAUSE", 8000, "ALL")  # type: ignore[no-untyped-call]
        try:
            started = time.monotonic()
            due = await store.due_deadlines(10**13)
            pending = await store.pending_outboxes(10**13)
            took = time.monotonic() - started
            # each waits for the paused master once at most (the second not at all: it is
            # left alone for NODE_RETRY_S)
            assert took < 2 * NODE_READ_S + 1, f"the sweeps waited {took:.1f} s for a paused master"
            with pytest.raises(StoreUnavailableError):
                await store.deadline_count()  # some shards' count only: refused, not wrong
        finally:
            local_cluster.client(paused).execute_command("CLIENT", "UNPAUSE")  # type: ignore[no-untyped-call]
        assert due == [(elsewhere, 1_000)]
        assert pending == [elsewhere]
        await asyncio.sleep(NODE_RETRY_S)  # (the sweeps leave a node that failed this long)
        due = await _within(30, lambda: _both_due(store, 2))
        assert sorted(due) == sorted([(elsewhere, 1_000), (held, 1_000)])
        assert sorted(await store.pending_outboxes(10**13)) == sorted([elsewhere, held])
        assert await store.deadline_count() == 2
    finally:
        await store.close()


async def test_an_older_releases_deadline_hint_stays_until_its_shard_has_it(
    local_cluster: LocalRedisCluster,
) -> None:
    """A deadline hint in the unsharded index of a release before the shards is moved into
    its table's shard, then dropped. While the shard's master takes no writes the move
    fails (within NODE_READ_S), and the old hint must stay: it was dropped all the same,
    and the table's turn clock waited for the hourly rescan."""
    prefix = f"legacy{secrets.token_hex(4)}"
    legacy = f"{prefix}:deadlines"
    for n in range(300):
        table_id = f"old-{n}"
        shard = f"{prefix}:{{deadlines-{index_shard(table_id):02d}}}"
        shard_on = local_cluster.master_of(shard)
        others = {
            local_cluster.master_of(legacy),
            local_cluster.master_of(f"{prefix}:{{{table_id}}}:state"),
        }
        if shard_on not in others:
            break
    store = RedisTableStore.from_url(local_cluster.url, key_prefix=prefix)
    old = local_cluster.client(local_cluster.master_of(legacy))
    try:
        await store.create_table(table_id, b"v1")
        await play(store, table_id, 1, deadline_ms=5_000)
        local_cluster.client(shard_on).zrem(shard, table_id)
        old.zadd(legacy, {table_id: 1_000})  # early: the sweep moves it into its shard
        local_cluster.client(shard_on).execute_command("CLIENT", "PAUSE", 5000, "WRITE")  # type: ignore[no-untyped-call]
        try:
            assert await store.due_deadlines(2_000) == []
        finally:
            local_cluster.client(shard_on).execute_command("CLIENT", "UNPAUSE")  # type: ignore[no-untyped-call]
        assert old.zscore(legacy, table_id) == 1_000, "dropped before its shard had it"
        await asyncio.sleep(NODE_RETRY_S)  # (the sweeps leave a node that failed this long)
        assert await store.due_deadlines(2_000) == []
        assert old.zscore(legacy, table_id) is None
        assert local_cluster.client(shard_on).zscore(shard, table_id) == 5_000
    finally:
        await store.close()


@pytest.mark.parametrize("fault", ["killed", "hung"])
async def test_a_lost_master_holds_up_neither_other_masters_clocks_nor_their_relay(
    fresh_cluster: LocalRedisCluster, fault: str
) -> None:
    """A master is killed (its port refuses connections until its replica takes over) or
    hangs (SIGSTOP: no answer, no error). The cluster client's pipeline, meeting a refused
    connection, closes every node's connections and retries: the sweeps' reads of the other
    masters failed with it, and every sweep until the failover (every table's turn clock and
    relay stopped, ≈ 8 s here). The sweeps send each node's part to that node alone now: a
    table elsewhere is due, and its outbox pending, at every sweep; and with no other
    traffic the sweeps learn the new master (the client itself reads its map again only
    after a socket timeout of its own, which the sweeps' bound cuts short), so the lost
    master's table comes due once its replica takes over."""
    cluster = fresh_cluster
    for port in cluster.live_ports():  # as the shipped cluster variants (deploy/README.md)
        cluster.client(port).config_set("cluster-require-full-coverage", "no")
    prefix = f"killed{secrets.token_hex(4)}"
    killed = cluster.masters()[0]
    replica = cluster.replica_of(killed)
    elsewhere, held = _away_and_held(cluster, prefix, killed)
    confirmed = RedisTableStore.from_url(
        cluster.url, key_prefix=prefix, wait_replicas=1, wait_timeout_ms=5000
    )
    store = RedisTableStore.from_url(cluster.url, key_prefix=prefix)
    try:
        for table_id in (elsewhere, held):
            await confirmed.create_table(table_id, b"v1")
            await confirmed.commit(
                Commit(table_id, expected_version=1, state=b"v2", request_id="ran-out",
                       deadline_ms=1_000, outbox={"settled-1": b"record"})
            )  # fmt: skip
        assert len(await _within(30, lambda: _both_due(store, 2))) == 2  # healthy yet
        with contextlib.ExitStack() as lost:
            if fault == "killed":
                cluster.kill(killed)
            else:
                lost.enter_context(cluster.stopped(killed))
            for _ in range(6):  # sweeps a quarter of a second apart, until the failover
                started = time.monotonic()
                due = await store.due_deadlines(10**13)
                pending = await store.pending_outboxes(10**13)
                assert time.monotonic() - started < 2 * NODE_READ_S + 1
                # the lost master's table only from its replica, once that has taken over
                # (a loaded machine's sweeps may reach the failover, ~2 s in)
                taken_over = cluster.client(replica).info("replication")["role"] == "master"
                may_be = [[elsewhere]] + ([sorted([elsewhere, held])] if taken_over else [])
                assert sorted(t for t, _ in due) in may_be and set(ms for _, ms in due) == {1_000}
                assert sorted(pending) in may_be
                await asyncio.sleep(0.25)
            await asyncio.to_thread(cluster.wait_promoted, replica)
            due = await _within(30, lambda: _both_due(store, 2))
            assert sorted(due) == sorted([(elsewhere, 1_000), (held, 1_000)])
    finally:
        await store.close()
        await confirmed.close()


async def _both_due(store: RedisTableStore, count: int) -> list[tuple[str, int]]:
    due = await store.due_deadlines(10**13)
    if len(due) < count:
        await asyncio.sleep(0.25)
        raise StoreUnavailableError(f"{len(due)} of {count} tables due")
    return due


async def test_a_paused_master_leaves_health_up(
    local_cluster: LocalRedisCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A master stops answering for a while (``CLIENT PAUSE ... ALL``; no failover yet): the
    other masters say ``cluster_state:ok`` and serve their tables, so the store is up. A
    command that met the paused master has the client read its slot map again; health read
    it too, from the nodes in a random order: asking the paused master first, it hung past
    its bound, and every replica went NOT_SERVING for most of the pause. Health reads no
    map once the client has one (the next command reads it, the paused node last)."""
    paused = local_cluster.masters()[0]
    store = RedisTableStore.from_url(local_cluster.url)
    client: Any = store._client
    try:
        await store.ping()
        # as after a command met the paused master; the map read asks it first
        monkeypatch.setattr(
            random, "shuffle", lambda nodes: nodes.sort(key=lambda node: node.port != paused)
        )
        local_cluster.client(paused).execute_command("CLIENT", "PAUSE", 10000, "ALL")  # type: ignore[no-untyped-call]
        try:
            client._initialize = True
            for _ in range(3):
                async with asyncio.timeout(PING_TIMEOUT_S):
                    await store.ping()  # as health asks
        finally:
            local_cluster.client(paused).execute_command("CLIENT", "UNPAUSE")  # type: ignore[no-untyped-call]
    finally:
        await store.close()


async def test_a_ping_cut_short_leaves_no_task_error_behind(
    local_cluster: LocalRedisCluster,
) -> None:
    """Health bounds its ping; cut short while a paused node's ``CLUSTER INFO`` was still
    out, the asks were left as tasks nobody awaited, and each ended in the log as "Task
    exception was never retrieved" (with a traceback, at ERROR) when its read timed out."""
    paused = local_cluster.masters()[0]
    store = RedisTableStore.from_url(local_cluster.url)
    gc.collect()  # (earlier tests' garbage is not this test's)
    loop = asyncio.get_running_loop()
    unretrieved: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _, context: unretrieved.append(context))
    try:
        await store.ping()
        local_cluster.client(paused).execute_command("CLIENT", "PAUSE", 7000, "ALL")  # type: ignore[no-untyped-call]
        try:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.3):
                    await store.ping()
            await asyncio.sleep(6)  # the paused node's read times out (SOCKET_TIMEOUT_S)
        finally:
            local_cluster.client(paused).execute_command("CLIENT", "UNPAUSE")  # type: ignore[no-untyped-call]
        gc.collect()
        await asyncio.sleep(0)
        said = [c.get("message") for c in unretrieved]
        assert [m for m in said if m == "Task exception was never retrieved"] == []
    finally:
        loop.set_exception_handler(None)
        await store.close()


async def test_a_slot_being_migrated_is_unavailable_and_nothing_is_written(
    fresh_steady_cluster: LocalRedisCluster,
) -> None:
    """A commit confirmed by WAIT goes to the slot's master on one connection, and follows
    no ASK: while the table's slot is being migrated (its keys not moved yet, the script's
    new keys asked of the target) the commit is UNAVAILABLE and runs nowhere; once the
    migration is settled the same request is applied, once."""
    cluster = fresh_steady_cluster
    cluster.wait_replicas_online()
    table_id = "migrating-table"
    key = f"ofc:{{{table_id}}}:state"
    # (WAIT answers once the replica has the writes: a loaded machine's replica may lag)
    store = RedisTableStore.from_url(cluster.url, wait_replicas=1, wait_timeout_ms=10_000)
    try:
        await store.create_table(table_id, b"v1")
        source = cluster.master_of(key)
        target = next(p for p in cluster.masters() if p != source)
        ids = {n["port"]: n["id"] for n in cluster.nodes()}
        slot = int(cluster.client(source).cluster("KEYSLOT", key))
        cluster.client(target).cluster("SETSLOT", slot, "IMPORTING", ids[source])
        cluster.client(source).cluster("SETSLOT", slot, "MIGRATING", ids[target])
        try:
            with pytest.raises(StoreUnavailableError, match="moving"):
                await store.commit(Commit(table_id, 1, b"v2", "mid-migration", None))
            assert (await store.load(table_id)).version == 1
        finally:
            for port in (source, target):
                cluster.client(port).cluster("SETSLOT", slot, "STABLE")
        result = await store.commit(Commit(table_id, 1, b"v2", "mid-migration", None))
        assert (result.version, result.replayed) == (2, False)
    finally:
        await store.close()


async def test_a_closed_store_reads_no_slot_map(local_cluster: LocalRedisCluster) -> None:
    """A call that fails as its store closes (a node away) asks for the slot map to be read
    again in the background: once the store is closed, no read starts, and no connection is
    opened again."""
    store = RedisTableStore.from_url(local_cluster.url, wait_replicas=1)
    feed = RedisSettlementFeed.from_url(local_cluster.url, wait_replicas=1)
    await store.ping()
    await feed.ping()

    def slot_map_reads() -> int:
        return sum(
            int(local_cluster.client(p).info("commandstats").get("cmdstat_cluster|slots", {})
                .get("calls", 0))
            for p in local_cluster.live_ports()
        )  # fmt: skip

    await store.close()
    await feed.close()
    before = slot_map_reads()
    for reader in (store._slot_map, feed._slot_map):
        reader.soon(None)
    await asyncio.sleep(0.5)
    assert slot_map_reads() == before
