"""Fixtures for the store tests: every conformance test runs once per store (memory, one
Redis, a Redis Cluster).

Store tests are ``async def``; the hook below runs each in a fresh event loop, and a test
opens its stores inside that loop with ``async with backend.open() as h`` (redis.asyncio
clients belong to the loop that made them).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest
from ofc_service.store import (
    DEFAULT_MAX_EVENTS,
    MemoryTableStore,
    RedisTableStore,
    TableStore,
)
from ofc_service.store.redis_io import RedisClient, connect

from tests.conftest import RedisServer, flush_url

START = 1_700_000_000.0


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run ``async def`` tests in a fresh event loop (no plugin needed)."""
    test = pyfuncitem.obj
    if not inspect.iscoroutinefunction(test):
        return None
    names = inspect.signature(test).parameters
    asyncio.run(test(**{name: pyfuncitem.funcargs[name] for name in names}))
    return True


@dataclass
class FakeClock:
    now: float = START

    def __call__(self) -> float:
        return self.now


@dataclass
class Harness:
    """Two stores on one backend (two replicas; the in-memory store is its own "other")."""

    kind: str
    store: TableStore
    other: TableStore
    clock: FakeClock = field(default_factory=FakeClock)
    admin: RedisClient | None = None

    async def advance(self, seconds: float) -> None:
        """Let time pass: the fake clock for memory, real time for Redis."""
        if self.admin is None:
            self.clock.now += seconds
        else:
            await asyncio.sleep(seconds)

    async def ttls(self, table_id: str) -> list[float]:
        """Seconds left for each stored part of the table (Redis: each key)."""
        if self.admin is None:
            assert isinstance(self.store, MemoryTableStore)
            table = self.store._tables[table_id]
            return [table.expires_at - self.clock.now]
        # SCAN, not KEYS: a cluster client scans every master (KEYS asks one node)
        keys = [k async for k in self.admin.scan_iter(match=f"ofc:{{{table_id}}}:*")]
        return [await self.admin.pttl(k) / 1000 for k in keys if b":req:" not in k]


@dataclass
class Backend:
    kind: str
    """``memory``, ``redis`` (one server) or ``cluster`` (a Redis Cluster)."""
    url: str | None

    @asynccontextmanager
    async def open(self, *, max_events: int = DEFAULT_MAX_EVENTS) -> AsyncIterator[Harness]:
        if self.url is None:
            clock = FakeClock()
            memory = MemoryTableStore(clock=clock, max_events=max_events)
            yield Harness("memory", memory, memory, clock)
            await memory.close()
            return
        url = self.url
        stores = [RedisTableStore.from_url(url, max_events=max_events) for _ in range(2)]
        admin = connect(url)
        try:
            yield Harness(self.kind, stores[0], stores[1], admin=admin)
        finally:
            for store in stores:
                await store.close()
            await admin.aclose()


@pytest.fixture(params=["memory", "redis", "cluster"])
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param == "memory":
        return Backend("memory", None)
    if request.param == "cluster":
        return Backend("cluster", request.getfixturevalue("redis_cluster_url"))
    return Backend("redis", request.getfixturevalue("redis_url"))


@pytest.fixture
def redis_backend(redis_server: RedisServer) -> Backend:
    """One local Redis process, emptied: the Redis-only tests (some restart it)."""
    flush_url(redis_server.url)
    return Backend("redis", redis_server.url)


@pytest.fixture(params=["redis", "cluster"])
def any_redis_backend(request: pytest.FixtureRequest) -> Backend:
    """One Redis, then a Redis Cluster."""
    if request.param == "cluster":
        return Backend("cluster", request.getfixturevalue("redis_cluster_url"))
    return Backend("redis", request.getfixturevalue("redis_url"))
