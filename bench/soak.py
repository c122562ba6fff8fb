"""A soak run (not in CI): ``.venv/bin/python -m bench.soak --minutes 10``.

    .venv/bin/python -m bench.soak                       # 10 minutes on a local Redis Cluster
    .venv/bin/python -m bench.soak --minutes 30 --tables 40 --single

Starts a Redis Cluster of local processes (three masters, three replicas; ``--single``: one
``redis-server``) and one ``ofc serve`` process on it, with the shortest retry window
(``OFC_REQUEST_WINDOW_SECONDS=60``). ``--tables`` tables are played for the whole run, each by
a steady turnover of players: two join, each opens a Watch stream of its seat, they play
``--hands`` hands, both leave, their streams end, and two new players join the same table.
Every ``--every`` seconds it samples the server's RSS, the Redis masters' ``used_memory``,
the part of it that grows with the hands played by design (``MEMORY USAGE`` of each table's
hand histories, kept with the table until it expires, and of the settlement feed's stream,
kept until a consumer group acknowledges it: the run has no consumer; docs/capacity.md), the
Watch streams open, and the errors seen.

At the end it prints the samples and compares the last third of the run with the middle
third: RSS, Redis memory without the histories, and open streams must not grow by more than
10% (the first third is warm-up: caches, connection pools, the first records of the retry
window). Only errors the run provokes count as expected (none here: every call is valid); any
other makes the run fail. Exit status 0 when flat and error-free.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from ofcpoker.v1 import table_service_pb2 as pb
from ofcpoker.v1 import table_service_pb2_grpc as pb_grpc
from redis import Redis, RedisCluster

from bench import tables as tables_bench

GROWTH_LIMIT = 0.10


@dataclass
class Tally:
    hands: int = 0
    lives: int = 0
    streams_open: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    table_ids: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Sample:
    at_s: float
    rss_mb: float
    redis_mb: float
    histories_mb: float
    streams: int
    hands: int

    @property
    def redis_without_histories_mb(self) -> float:
        return self.redis_mb - self.histories_mb


async def watch(stub: pb_grpc.TableServiceStub, table_id: str, token: str, tally: Tally) -> None:
    tally.streams_open += 1
    try:
        call = stub.Watch(
            pb.WatchRequest(table_id=table_id, batch_events=True),
            metadata=(("x-ofc-seat-token", token),),
        )
        async for _ in call:
            pass
    except grpc.aio.AioRpcError as error:
        # the seat's stream ends UNAUTHENTICATED when it leaves: what the run provokes
        if error.code() not in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.CANCELLED):
            tally.errors[error.code().name] += 1
    finally:
        tally.streams_open -= 1


async def table_life(
    stub: pb_grpc.TableServiceStub, hands: int, stop_at: float, tally: Tally
) -> None:
    """A table for the whole run: players join, watch, play, leave, and new ones come. A call
    that fails is counted, and the run goes on at a new table (the seats may be left taken)."""
    while time.monotonic() < stop_at:
        table_id, version, seats = await tables_bench.open_table(stub)
        tally.table_ids.append(table_id)
        try:
            while time.monotonic() < stop_at:
                version, seats = await one_turnover(stub, table_id, version, seats, hands, tally)
        except grpc.aio.AioRpcError as error:
            tally.errors[error.code().name] += 1


async def owes_fantasyland(stub: pb_grpc.TableServiceStub, table_id: str) -> bool:
    view = (await stub.GetTable(pb.GetTableRequest(table_id=table_id))).table
    return any(seat.fantasyland_cards for seat in view.seats)


async def one_turnover(
    stub: pb_grpc.TableServiceStub,
    table_id: str,
    version: int,
    seats: list[tables_bench.Seat],
    hands: int,
    tally: Tally,
) -> tuple[int, list[tables_bench.Seat]]:
    """Two players watch and play ``hands`` hands (more while one is owed Fantasyland),
    leave, and two new ones join."""
    watchers = [asyncio.create_task(watch(stub, table_id, s.token, tally)) for s in seats]
    try:
        played = 0
        # A player owed a Fantasyland hand may not leave before playing it (the rules):
        # the pair plays on until nobody is owed one.
        while played < hands or await owes_fantasyland(stub, table_id):
            version = await tables_bench.play_sequentially(stub, table_id, version, seats)
            tally.hands += 1
            played += 1
        for number, seat in enumerate(seats):
            left = await stub.LeaveSeat(
                pb.LeaveSeatRequest(
                    table_id=table_id, seat=number, expected_version=version,
                    request_id=uuid.uuid4().hex,
                ),
                metadata=seat.md,
            )  # fmt: skip
            version = left.table.version
    finally:
        for task in watchers:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(task, timeout=10)
    tally.lives += 1
    joined_seats = []
    for number in range(2):
        joined = await stub.JoinSeat(
            pb.JoinSeatRequest(
                table_id=table_id, seat=number, player_id=f"p{tally.lives}-{number}",
                expected_version=version, request_id=uuid.uuid4().hex,
            )
        )  # fmt: skip
        version = joined.table.version
        joined_seats.append(tables_bench.Seat(joined.seat_token))
    return version, joined_seats


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def redis_memory_mb(url: str, table_ids: Sequence[str]) -> tuple[float, float]:
    """used_memory of every master, and what the tables' history hashes take of it."""
    client: Redis | RedisCluster
    if url.startswith("redis+cluster://"):
        host, port = url.removeprefix("redis+cluster://").split(",")[0].split(":")
        client = RedisCluster(host=host, port=int(port))
        infos = client.info("memory", target_nodes=RedisCluster.PRIMARIES)
        used = sum(int(i["used_memory"]) for i in infos.values())
    else:
        client = Redis.from_url(url)
        used = int(client.info("memory")["used_memory"])
    histories = sum(
        int(client.memory_usage(f"ofc:{{{t}}}:{part}") or 0)
        for t in table_ids
        for part in ("extra", "extra_index")  # the histories and their list
    )
    # The settlement feed keeps what no consumer group has acknowledged (none here).
    feed = int(client.memory_usage("ofc:{settlements}:stream") or 0)
    client.close()
    return used / 2**20, (histories + feed) / 2**20


async def soak(address: str, pid: int, url: str, args: argparse.Namespace) -> list[Sample]:
    tally = Tally()
    started = time.monotonic()
    stop_at = started + args.minutes * 60
    samples: list[Sample] = []
    async with grpc.aio.insecure_channel(address) as channel:
        await asyncio.wait_for(channel.channel_ready(), timeout=60)
        stub = pb_grpc.TableServiceStub(channel)
        lives = [asyncio.create_task(table_life(stub, args.hands, stop_at, tally))
                 for _ in range(args.tables)]  # fmt: skip
        while time.monotonic() < stop_at:
            await asyncio.sleep(min(args.every, max(0.0, stop_at - time.monotonic())))
            used, histories = await asyncio.to_thread(redis_memory_mb, url, tally.table_ids)
            sample = Sample(time.monotonic() - started, rss_mb(pid), used, histories,
                            tally.streams_open, tally.hands)  # fmt: skip
            samples.append(sample)
            print(f"{sample.at_s:7.0f} s  server RSS {sample.rss_mb:6.1f} MB  Redis "
                  f"{sample.redis_mb:7.2f} MB (histories, feed {sample.histories_mb:6.2f}) "
                  f" streams {sample.streams:4d}  hands {sample.hands:6d}"
                  f"  errors {dict(tally.errors)}", flush=True)  # fmt: skip
        await asyncio.gather(*lives)
    print(f"player turnovers {tally.lives}, hands {tally.hands}, errors {dict(tally.errors)}")
    if tally.errors:
        raise SystemExit(f"unexpected errors: {dict(tally.errors)}")
    return samples


def verdict(samples: Sequence[Sample]) -> list[str]:
    third = max(1, len(samples) // 3)
    middle, last = samples[third : 2 * third], samples[-third:]
    lines = []
    ok = True
    for name, value in (
        ("server RSS MB", lambda s: s.rss_mb),
        ("Redis MB without histories and feed", lambda s: s.redis_without_histories_mb),
        ("open Watch streams", lambda s: float(s.streams)),
    ):
        before = sum(map(value, middle)) / len(middle)
        after = sum(map(value, last)) / len(last)
        growth = (after - before) / before if before else 0.0
        flat = growth <= GROWTH_LIMIT
        ok &= flat
        lines.append(f"{name}: middle third {before:.2f}, last third {after:.2f} "
                     f"({growth:+.1%}) [{'FLAT' if flat else 'GROWS'}]")  # fmt: skip
    per_hand = (
        (samples[-1].histories_mb - samples[0].histories_mb)
        * 2**20
        / max(1, samples[-1].hands - samples[0].hands)
    )
    lines.append(f"hand histories: {per_hand:.0f} B per hand played (kept with the table)")
    lines.append("soak: PASS" if ok else "soak: FAIL")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--tables", type=int, default=20, help="tables played at once")
    parser.add_argument("--hands", type=int, default=3, help="hands per pair of players")
    parser.add_argument("--every", type=float, default=30.0, help="seconds between samples")
    parser.add_argument("--single", action="store_true", help="one Redis, not a cluster")
    args = parser.parse_args(argv)
    from tests.conftest import LocalRedisCluster, RedisServer

    backend: LocalRedisCluster | RedisServer = RedisServer() if args.single else LocalRedisCluster()
    os.environ["OFC_REQUEST_WINDOW_SECONDS"] = "60"
    try:
        ((process, address),) = tables_bench.start_servers(backend.url, 1)
        try:
            samples = asyncio.run(soak(address, process.pid, backend.url, args))
        finally:
            process.terminate()
            process.wait(timeout=30)
    finally:
        backend.stop()
    lines = verdict(samples)
    print("\n".join(lines))
    return 0 if lines[-1].endswith("PASS") else 1


if __name__ == "__main__":
    sys.exit(main())
