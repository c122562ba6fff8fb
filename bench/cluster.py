"""One Redis against a Redis Cluster, in the same run: ``.venv/bin/python -m bench.cluster``.

    .venv/bin/python -m bench.cluster                    # throwaway servers, defaults below
    .venv/bin/python -m bench.cluster --seconds 5 --in-flight 64 --servers 1

Starts, on free ports: one ``redis-server`` with one replica, and a Redis Cluster of three
masters each with one replica (the test suite's ``LocalRedisCluster``). Then, for each of
them, without and with ``OFC_REDIS_WAIT_REPLICAS=1`` (WAIT 1 after each commit):

1. **Store commits/s**, in process (``bench.store``'s workload: load + commit, 1 KiB state,
   64 tables in flight, a deadline on each commit, so the hint ``ZADD`` goes to its shard).
2. **Moves/s** through ``ofc serve`` processes (``bench.tables``' load: PlaceCards with each
   table's seats driven by Watch streams, next to SettleHand in alternating rounds), with
   p50/p99 latency and the server processes' CPU per call.
3. **Redis CPU per move**: the Redis processes' CPU time (from ``/proc``) over the moves
   of part 2, per PlaceCards (settles do not touch Redis).

Everything shares this machine's cores (servers, Redis processes, the client), so read the
figures side by side: the ratio between rows is the point, not the absolute rates. Each
row starts from empty databases.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ofc_service.store import RedisTableStore

from bench import store as store_bench
from bench import tables as tables_bench

CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Backend:
    name: str
    url: str
    redis_pids: tuple[int, ...]


def redis_cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU of the Redis processes so far (their children are the BGSAVEs)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLK_TCK


@contextmanager
def backends() -> Iterator[list[Backend]]:
    from tests.conftest import LocalRedisCluster, RedisServer, flush_url

    single = RedisServer()
    replica = RedisServer("--replicaof", "127.0.0.1", str(single.port))
    cluster = LocalRedisCluster()
    try:
        cluster.wait_replicas_online()
        flush_url(single.url)
        assert single.process is not None and replica.process is not None
        yield [
            Backend("one Redis", single.url, (single.process.pid, replica.process.pid)),
            Backend("cluster 3x2", cluster.url, tuple(p.pid for p in cluster.processes.values())),
        ]
    finally:
        cluster.stop()
        replica.stop()
        single.stop()


async def store_commits(url: str, seconds: float, wait: int) -> store_bench.Row:
    store = RedisTableStore.from_url(url, key_prefix=store_bench.PREFIX, wait_replicas=wait)
    try:
        return await store_bench.run("redis", store, in_flight=64, deadline=True, seconds=seconds)
    finally:
        await store.close()


@dataclass(frozen=True)
class Line:
    backend: str
    wait: int
    commits: store_bench.Row
    place: tables_bench.Row
    settle: tables_bench.Row
    redis_cpu_ms_per_move: float


def measure(backend: Backend, wait: int, args: argparse.Namespace) -> Line:
    from tests.conftest import flush_url

    flush_url(backend.url)
    commits = asyncio.run(store_commits(backend.url, args.seconds, wait))
    flush_url(backend.url)
    os.environ["OFC_REDIS_WAIT_REPLICAS"] = str(wait)  # read by the ofc serve processes
    try:
        before = redis_cpu_seconds(backend.redis_pids)
        rows = tables_bench.run_load(
            backend.url, args.servers, [args.in_flight], args.seconds, args.rounds
        )
        redis_cpu = redis_cpu_seconds(backend.redis_pids) - before
    finally:
        del os.environ["OFC_REDIS_WAIT_REPLICAS"]
    place = next(r for r in rows if r.rpc == "PlaceCards")
    settle = next(r for r in rows if r.rpc == "SettleHand")
    return Line(backend.name, wait, commits, place, settle, 1000 * redis_cpu / place.calls)


def report(lines: Sequence[Line], args: argparse.Namespace) -> list[str]:
    out = [
        f"{args.servers} ofc serve process(es), {args.in_flight} tables in flight, "
        f"{args.seconds:g} s per row in {args.rounds} alternating rounds",
        f"{'backend':<12}{'WAIT':>5}{'commits/s':>11}{'moves/s':>9}{'p50 ms':>8}{'p99 ms':>8}"
        f"{'server CPU ms/move':>20}{'Redis CPU ms/move':>19}{'settles/s':>11}",
    ]
    for line in lines:
        out.append(
            f"{line.backend:<12}{line.wait:>5}{line.commits.per_second:>11.0f}"
            f"{line.place.per_second:>9.0f}{line.place.p50_ms:>8.2f}{line.place.p99_ms:>8.2f}"
            f"{line.place.cpu_ms_per_call:>20.2f}{line.redis_cpu_ms_per_move:>19.3f}"
            f"{line.settle.per_second:>11.0f}"
        )
    by = {(line.backend, line.wait): line for line in lines}
    for (name, wait), line in by.items():
        base = by.get(("one Redis", 0))
        if base is None or (name, wait) == ("one Redis", 0):
            continue
        ratio = line.place.per_second / base.place.per_second
        extra_ms = line.place.p50_ms - base.place.p50_ms
        out.append(
            f"{name}, WAIT {wait}: moves/s {ratio:.0%} of one Redis without WAIT; "
            f"p50 {extra_ms:+.2f} ms per move"
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster", description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds per row")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per row")
    parser.add_argument("--in-flight", type=int, default=64, help="tables in play at once")
    parser.add_argument("--servers", type=int, default=1, help="ofc serve processes")
    args = parser.parse_args(argv)
    lines = []
    with backends() as found:
        for backend in found:
            for wait in (0, 1):
                lines.append(measure(backend, wait, args))
    print("\n".join(report(lines, args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
