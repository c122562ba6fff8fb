"""Random sequences of operations give the same outcomes on the in-memory store and on Redis.

The conformance suite checks chosen cases; this checks that the two implementations agree on
everything else too: replays against missing or moved-on tables, stale versions, deadlines,
extra blobs. Event ids differ between the stores (they are timestamps), so outcomes are
compared through the events' payloads.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from ofc_service.store import (
    Commit,
    MemoryTableStore,
    RedisTableStore,
    StaleVersionError,
    StoreError,
    TableStore,
)
from redis.asyncio import Redis

from tests.conftest import RedisServer

TABLES = ("a", "b")
Op = tuple[Any, ...]

ops = st.lists(
    st.one_of(
        st.tuples(st.just("create"), st.sampled_from(TABLES), st.integers(0, 2)),
        st.tuples(
            st.just("commit"),
            st.sampled_from(TABLES),
            st.integers(1, 4),  # expected version
            st.sampled_from(["r1", "r2", "r3"]),  # request id
            st.integers(0, 2),  # events
            st.sampled_from([None, 1_000, 2_000]),  # deadline
            st.booleans(),  # write a hand history
        ),
        st.tuples(st.just("load"), st.sampled_from(TABLES)),
        st.tuples(st.just("due"), st.sampled_from([1_500, 2_500])),
        st.tuples(st.just("response"), st.sampled_from(TABLES), st.sampled_from(["r1", "r2"])),
    ),
    max_size=25,
)


async def payload_of(store: TableStore, table_id: str) -> dict[str, bytes]:
    return {e.event_id: e.data for e in await store.read_events(table_id)}


async def step(store: TableStore, i: int, op: Op) -> object:
    kind, *args = op
    try:
        if kind == "create":
            table_id, n = args
            created = await store.create_table(
                table_id, b"s%d" % i, events=[b"e%d.%d" % (i, j) for j in range(n)]
            )
            return ("created", created.version, len(created.event_ids))
        if kind == "commit":
            table_id, expected, request_id, n, deadline, history = args
            result = await store.commit(
                Commit(
                    table_id,
                    expected_version=expected,
                    state=b"s%d" % i,
                    events=[b"e%d.%d" % (i, j) for j in range(n)],
                    response=b"r%d" % i,
                    request_id=request_id,
                    deadline_ms=deadline,
                    extra={f"hand:{i}": b"h%d" % i} if history else {},
                )
            )
            events = await payload_of(store, table_id)
            payloads = [events.get(e) for e in result.event_ids]
            return (result.version, result.response, result.replayed, *payloads)
        if kind == "load":
            table = await store.load(args[0])
            last = (await payload_of(store, args[0])).get(table.last_event_id)
            return (table.version, table.state, table.deadline_ms, last)
        if kind == "due":
            return await store.due_deadlines(args[0])
        return await store.get_response(*args)
    except StaleVersionError as error:
        return ("stale", error.current_version)
    except StoreError as error:
        return (type(error).__name__,)


async def play_all(store: TableStore, sequence: list[Op]) -> list[object]:
    outcomes = [await step(store, i, op) for i, op in enumerate(sequence)]
    for table_id in TABLES:
        outcomes.append(await step(store, len(sequence), ("load", table_id)))
        try:
            outcomes.append([e.data for e in await store.read_events(table_id)])
        except StoreError as error:
            outcomes.append(type(error).__name__)
        outcomes.append(await store.list_extra(table_id, "hand"))
    return outcomes


@settings(max_examples=60)
@given(sequence=ops)
def test_memory_and_redis_agree(redis_server: RedisServer, sequence: list[Op]) -> None:
    async def both() -> tuple[list[object], list[object]]:
        admin = Redis.from_url(redis_server.url)
        await admin.flushall()
        await admin.aclose()
        redis = RedisTableStore.from_url(redis_server.url)
        try:
            return await play_all(MemoryTableStore(), sequence), await play_all(redis, sequence)
        finally:
            await redis.close()

    in_memory, on_redis = asyncio.run(both())
    assert in_memory == on_redis
