"""With ``wait_replicas`` (``OFC_REDIS_WAIT_REPLICAS``) a caller is shown nothing a failover
may take back: not only is a commit acknowledged once that many replicas have it, but what
any replica shows of a table (a view, events, a history, a retry's recorded answer, a
settlement to relay) waits for the same confirmation. A commit another replica made and no
Redis replica has yet (its master then dies: the move is gone) was shown: a retry through
another server was told the move succeeded, a watcher saw a hand's end and its server seed,
and the hand was then played on from before its end, with the same deck.

Here one Redis without replicas stands for a master whose replicas fell behind: WAIT 1
never succeeds on it, so everything a server with ``wait_replicas=0`` wrote stays
unconfirmed, and a server with ``wait_replicas=1`` must show none of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
import pytest
from ofc import engine
from ofc_service.api.tables import SERVICE, ProtobufPresenter, TableHandlers
from ofc_service.application.commands import TimeOut
from ofc_service.application.manager import Request, TableManager
from ofc_service.application.settlements import SettlementRelay
from ofc_service.application.watch import WatchHub
from ofc_service.auth import Authenticator
from ofc_service.store import (
    MemorySettlementFeed,
    RedisSettlementFeed,
    RedisTableStore,
    StoreUnavailableError,
)
from ofcpoker.v1 import table_service_pb2 as pb
from redis.asyncio import Redis

from tests.api.test_create_table import Aborted, Context
from tests.conftest import RedisServer
from tests.in_process import InProcess

from .conftest import Backend
from .test_conformance import play

KEY = "operator-key"
OPERATOR = (("x-ofc-api-key", KEY),)
UNAVAILABLE = (grpc.StatusCode.UNAVAILABLE, "STORE_UNAVAILABLE")
T = TypeVar("T")


class Server:
    """One server of the service on ``url``, its store waiting for ``wait_replicas``."""

    def __init__(self, url: str, wait_replicas: int) -> None:
        self.store = RedisTableStore.from_url(url, wait_replicas=wait_replicas, wait_timeout_ms=20)
        self.manager = TableManager(self.store, Authenticator([KEY]), ProtobufPresenter())
        self.api = InProcess(TableHandlers(self.manager), SERVICE)

    async def call(self, method: str, request: Any, metadata: Any = OPERATOR) -> Any:
        return await getattr(self.api, method)(request, Context(metadata=metadata))

    async def refused(self, method: str, request: Any, metadata: Any = OPERATOR) -> Any:
        with pytest.raises(Aborted) as caught:
            await self.call(method, request, metadata)
        return caught.value.code, caught.value.reason

    async def first(self, request: pb.WatchRequest) -> Any:
        """The first message of a Watch, or its refusal."""
        stream: AsyncIterator[Any] = self.api.Watch(request, Context(metadata=OPERATOR))
        try:
            async for message in stream:
                return message
        except Aborted as refused:
            return refused.code, refused.reason
        finally:
            await stream.aclose()  # type: ignore[attr-defined]


async def test_what_no_replica_confirmed_is_shown_to_no_one(redis_backend: Backend) -> None:
    assert redis_backend.url is not None
    plain, waiting = Server(redis_backend.url, 0), Server(redis_backend.url, 1)
    try:
        await _shown_to_no_one(plain, waiting)
    finally:
        await plain.store.close()
        await waiting.store.close()


async def _shown_to_no_one(plain: Server, waiting: Server) -> None:
    create = pb.CreateTableRequest(seats=2, request_id="c")
    table_id = (await plain.call("CreateTable", create)).table_id
    joins = [
        pb.JoinSeatRequest(table_id=table_id, seat=s, player_id=p, expected_version=s + 1,
                           request_id=f"j{s}")
        for s, p in enumerate(("ann", "bob"))
    ]  # fmt: skip
    tokens = [(await plain.call("JoinSeat", join, ())).seat_token for join in joins]
    start = pb.StartHandRequest(table_id=table_id, expected_version=3, request_id="s")
    await plain.call("StartHand", start)
    while waiting_seats := engine.seats_to_act((await plain.manager.load(table_id))[0].match):
        _, version, _ = await plain.manager.load(table_id)
        await plain.manager.run(
            Request(table_id, version, f"t{version}"), TimeOut(waiting_seats[0])
        )
    # The hand is over on the master: its history, its settlement in the outbox, its seed
    # in the view and the events. Through the server that waits for a replica, none of it.
    view = pb.GetTableRequest(table_id=table_id)
    assert (await plain.call("GetTable", view)).table.hand.over
    assert await waiting.refused("GetTable", view) == UNAVAILABLE
    assert await waiting.first(pb.WatchRequest(table_id=table_id)) == UNAVAILABLE
    assert await waiting.first(pb.WatchRequest(table_id=table_id, after_event_id="0")) == (
        UNAVAILABLE
    )
    history = pb.GetHandHistoryRequest(table_id=table_id, hand_number=1)
    assert (await plain.call("GetHandHistory", history)).hand_number == 1
    assert await waiting.refused("GetHandHistory", history) == UNAVAILABLE
    assert await waiting.refused("ListHands", pb.ListHandsRequest(table_id=table_id)) == UNAVAILABLE
    # A retry (same request id, same credentials) is not told that what it asked for was
    # done: neither from the answer kept whole (bob's join) nor from the table as it is
    # (the hand's start, whose record the hand's moves left as it was)
    assert (await plain.call("JoinSeat", joins[1], ())).seat_token == tokens[1]
    assert await waiting.refused("JoinSeat", joins[1], ()) == UNAVAILABLE
    assert await waiting.refused("StartHand", start) == UNAVAILABLE
    assert await waiting.refused("CreateTable", create) == UNAVAILABLE  # the table, claimed
    # The relay publishes no settlement a failover may take back; it stays in the outbox.
    feed = MemorySettlementFeed()
    with pytest.raises(StoreUnavailableError, match="not confirmed by 1 Redis replica"):
        await SettlementRelay(waiting.store, feed).relay_table(table_id)
    assert await feed.read_new("g", "c") == []
    assert await SettlementRelay(plain.store, feed).relay_table(table_id) == 1


async def test_confirm_waits_on_the_node_of_the_table(any_redis_backend: Backend) -> None:
    """On a cluster (a replica per master) what a table holds is confirmed, through the node
    of its slot; on one Redis without replicas it never is."""
    assert any_redis_backend.url is not None
    # a cluster's replica answers as soon as it has the writes (a loaded one may lag); one
    # Redis waits the whole timeout for a replica it does not have
    wait_ms = 10_000 if any_redis_backend.kind == "cluster" else 200
    store = RedisTableStore.from_url(
        any_redis_backend.url, wait_replicas=1, wait_timeout_ms=wait_ms
    )
    plain = RedisTableStore.from_url(any_redis_backend.url)
    try:
        for table_id in ("alpha", "bravo", "charlie"):  # slots on different masters
            await plain.create_table(table_id, b"v1")
            if any_redis_backend.kind == "cluster":
                await store.confirm(table_id)
            else:
                with pytest.raises(StoreUnavailableError, match="not confirmed by 1 Redis"):
                    await store.confirm(table_id)
        await plain.confirm("alpha")  # a store that waits for nothing confirms at once
    finally:
        await store.close()
        await plain.close()


async def test_a_watch_feed_sends_no_event_no_replica_confirmed(redis_backend: Backend) -> None:
    """The feed a replica's watchers share reads the log once for all of them: neither its
    wake-ups nor the log read that catches a watcher up send an event before it is
    confirmed (the watchers end UNAVAILABLE and resume, from what they were sent)."""
    assert redis_backend.url is not None
    plain = RedisTableStore.from_url(redis_backend.url)
    waiting = RedisTableStore.from_url(redis_backend.url, wait_replicas=1, wait_timeout_ms=20)
    hub = WatchHub(waiting)
    try:
        newest = (await plain.create_table("t", b"v1", events=[b"e1.0"])).event_ids[0]
        live = hub.follow("t", newest, newest=newest)
        woken = asyncio.create_task(anext(live))
        await asyncio.sleep(0.05)  # the feed waits in its read
        await play(plain, "t", 1)
        with pytest.raises(StoreUnavailableError, match="not confirmed by 1 Redis replica"):
            await asyncio.wait_for(woken, 10)
        behind = hub.follow("t", "0", newest=newest)  # before the window: the log is read
        with pytest.raises(StoreUnavailableError, match="not confirmed by 1 Redis replica"):
            await asyncio.wait_for(anext(behind), 10)
        await live.aclose()
        await behind.aclose()
    finally:
        await hub.close()
        await plain.close()
        await waiting.close()


async def _once_confirmed(call: Callable[[], Awaitable[T]]) -> T:
    """``call()`` retried while it is UNAVAILABLE (its replica catching up), for 10 s."""
    for _ in range(500):
        with contextlib.suppress(StoreUnavailableError):
            return await call()
        await asyncio.sleep(0.02)
    raise AssertionError("the replica never confirmed")


async def test_a_write_refused_is_no_confirmation() -> None:
    """``confirm`` writes to have something to ``WAIT`` for: when Redis refuses that write
    (full), ``WAIT`` would count the connection's last write, long confirmed, and pass
    what no replica has; the refusal is UNAVAILABLE instead."""
    master, replica = RedisServer(), RedisServer()
    admin, follower = Redis.from_url(master.url), Redis.from_url(replica.url)
    store = RedisTableStore.from_url(master.url, wait_replicas=1, wait_timeout_ms=200)
    plain = RedisTableStore.from_url(master.url)
    try:
        await follower.execute_command("REPLICAOF", "127.0.0.1", master.port)  # type: ignore[no-untyped-call]
        await plain.create_table("u", b"v1")
        await _once_confirmed(lambda: store.confirm("u"))  # the replica has caught up
        assert replica.process is not None
        replica.process.send_signal(signal.SIGSTOP)
        try:
            await plain.create_table("v", b"v1")  # on the master alone
            await admin.config_set("maxmemory", "1")
            with pytest.raises(StoreUnavailableError, match="refuses writes"):
                await store.confirm("v")
        finally:
            replica.process.send_signal(signal.SIGCONT)
            await admin.config_set("maxmemory", "0")
    finally:
        await admin.aclose()
        await follower.aclose()
        await store.close()
        await plain.close()
        master.stop()
        replica.stop()


async def test_a_settlement_appended_before_is_confirmed_with_its_replicas_or_not_at_all() -> None:
    """A relay's append of a settlement another relay (or a try of its own) appended already
    writes nothing, and ``WAIT`` counts the replicas holding its connection's writes: with
    none on that connection it could pass at once, and the relay would drop its outbox
    record of a hand no replica holds. The append writes a key of the stream's slot before
    its ``WAIT``, so the answer is the replicas' for the record too: UNAVAILABLE while the
    replica is stopped, the id's stream id once it has caught up."""
    master, replica = RedisServer(), RedisServer()
    follower = Redis.from_url(replica.url)
    feed = RedisSettlementFeed.from_url(master.url, wait_replicas=1, wait_timeout_ms=200)
    plain = RedisSettlementFeed.from_url(master.url)
    try:
        await follower.execute_command("REPLICAOF", "127.0.0.1", master.port)  # type: ignore[no-untyped-call]
        await _once_confirmed(lambda: feed.publish("t:1", b"{}"))  # the replica has caught up
        assert replica.process is not None
        replica.process.send_signal(signal.SIGSTOP)
        try:
            assert await plain.publish("t:2", b"{}") is not None  # on the master alone
            for _ in range(3):  # never "already appended", however often it is asked
                with pytest.raises(StoreUnavailableError, match="not confirmed"):
                    await feed.publish("t:2", b"{}")
        finally:
            replica.process.send_signal(signal.SIGCONT)
        assert await _once_confirmed(lambda: feed.publish("t:2", b"{}")) is None  # appended once
    finally:
        await follower.aclose()
        await feed.close()
        await plain.close()
        master.stop()
        replica.stop()
