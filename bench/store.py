"""Commits per second for each table store: ``.venv/bin/python -m bench.store``.

Each worker owns one table and plays moves as the table service will: ``load`` the table,
then ``commit`` the next version (1 KiB state, one 200-byte event, a 300-byte response, a
fresh request id, optionally a deadline). Rows: the in-memory store and Redis, with 1 and
64 workers in flight, without and with a deadline (with one, the commit pipelines the
deadline-index ``ZADD`` in front of the script: still one round trip). Redis is a private
``redis-server`` on a free port unless ``--redis-url`` names one (the bench then writes keys
under the prefix ``ofcbench`` and deletes them afterwards).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from ofc_service.store import Commit, MemoryTableStore, RedisTableStore, TableStore
from redis.asyncio import Redis

STATE = os.urandom(1024)
EVENT = os.urandom(200)
RESPONSE = os.urandom(300)
PREFIX = "ofcbench"


@dataclass(frozen=True, slots=True)
class Row:
    store: str
    in_flight: int
    deadline: bool
    commits: int
    seconds: float
    latencies_ms: list[float]

    @property
    def per_second(self) -> float:
        return self.commits / self.seconds

    def line(self) -> str:
        quantiles = statistics.quantiles(self.latencies_ms, n=100)
        return (
            f"{self.store:<7} {self.in_flight:>9} {'yes' if self.deadline else 'no':>8} "
            f"{self.per_second:>11,.0f} {quantiles[49]:>13.2f} {quantiles[98]:>13.2f}"
        )


HEADER = (
    f"{'store':<7} {'in flight':>9} {'deadline':>8} {'commits/s':>11} "
    f"{'commit p50 ms':>13} {'commit p99 ms':>13}"
)


async def run(
    name: str, store: TableStore, *, in_flight: int, deadline: bool, seconds: float
) -> Row:
    run_id = os.urandom(4).hex()
    tables = [f"bench-{run_id}-{i}" for i in range(in_flight)]
    for table_id in tables:
        await store.create_table(table_id, STATE)
    latencies: list[float] = []
    stop_at = time.perf_counter() + seconds

    async def worker(table_id: str) -> None:
        move = 0
        while time.perf_counter() < stop_at:
            table = await store.load(table_id)
            move += 1
            started = time.perf_counter()
            await store.commit(
                Commit(
                    table_id,
                    expected_version=table.version,
                    state=STATE,
                    events=[EVENT],
                    response=RESPONSE,
                    request_id=f"m{move}",
                    deadline_ms=int(time.time() * 1000) + 30_000 if deadline else None,
                )
            )
            latencies.append((time.perf_counter() - started) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(worker(t) for t in tables))
    elapsed = time.perf_counter() - started
    return Row(name, in_flight, deadline, len(latencies), elapsed, latencies)


async def bench(url: str, seconds: float, say: Callable[[str], None]) -> None:
    say(HEADER)
    memory = MemoryTableStore()
    for in_flight in (1, 64):
        row = await run("memory", memory, in_flight=in_flight, deadline=False, seconds=seconds)
        say(row.line())
    store = RedisTableStore(Redis.from_url(url), key_prefix=PREFIX)
    admin = Redis.from_url(url)
    try:
        for in_flight in (1, 64):
            for deadline in (False, True):
                row = await run(
                    "redis", store, in_flight=in_flight, deadline=deadline, seconds=seconds
                )
                say(row.line())
    finally:
        await store.close()
        async for key in admin.scan_iter(match=f"{PREFIX}:*", count=1000):
            await admin.delete(key)
        await admin.aclose()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.store", description=__doc__)
    parser.add_argument("--redis-url", help="an existing Redis (default: a private one)")
    parser.add_argument("--seconds", type=float, default=2.0, help="per row (default 2)")
    args = parser.parse_args(argv)
    if args.redis_url:
        asyncio.run(bench(args.redis_url, args.seconds, print))
        return
    from tests.conftest import RedisServer  # the test suite's throwaway redis-server

    server = RedisServer()
    try:
        asyncio.run(bench(server.url, args.seconds, print))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
