"""Latency under an open-loop load: ``.venv/bin/python -m bench.open_loop``.

    .venv/bin/python -m bench.open_loop                   # throwaway redis-server, `ofc serve`
    .venv/bin/python -m bench.open_loop --seconds 5 --fractions 0.5,0.8

A closed loop (N callers, each sending when its last call returns) never offers more than
the server answers: at 64 in flight its latencies mostly measure the queue it keeps itself.
Here calls arrive on a fixed schedule, a seeded Poisson process at a set rate, whether or
not the earlier ones have returned, and each latency is measured from the call's
*scheduled* send time, so a server (or this client) that falls behind shows it as latency
rather than as fewer calls.

1. The maximum: closed-loop throughput at 64 in flight, as ``bench.tables`` measures it
   (PlaceCards on 64 tables, SettleHand from 64 callers), against one ``ofc serve`` on a
   private ``redis-server``.
2. For each fraction of it (default 50% and 80%): PlaceCards arriving at that share of
   its maximum, then SettleHand at that share of its own. A move is legal only when its
   seat has cards to place, so ``--tables`` tables are kept in play and each arrival takes
   the next table that is ready; were none ready, the arrival would wait, and that wait
   counts in its latency (the share of arrivals that waited is printed).

Prints the offered and achieved rates, p50 and p99 per RPC and fraction, PlaceCards next
to SettleHand. ``run()`` returns the rows for the aggregate ``python -m bench``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import grpc
from ofcpoker.v1 import table_service_pb2 as pb
from ofcpoker.v1 import table_service_pb2_grpc as pb_grpc

from bench.grpc_load import SETTLE, percentile, settle_request
from bench.tables import Gate, TablePlayer, load, redis_for, start_servers

MAX_IN_FLIGHT = 64
DEFAULT_FRACTIONS = (0.5, 0.8)
SEED = 14


@dataclass(frozen=True)
class Row:
    rpc: str
    fraction: float  # of the closed-loop maximum
    offered_per_second: float
    achieved_per_second: float
    calls: int
    p50_ms: float
    p99_ms: float
    waited_for_a_table: float = 0.0  # share of PlaceCards arrivals with no table ready
    failed: tuple[str, ...] = ()  # status codes of calls that failed (no latency counted)


Ready = tuple["ReadyPlayer", pb.PlaceCardsRequest, int, "asyncio.Future[None]"]


class ReadyPlayer(TablePlayer):
    """A table whose moves are sent by the schedule: each ready move waits in ``ready``
    until an arrival takes it, and the table's next move waits for this one."""

    def __init__(
        self,
        moves: pb_grpc.TableServiceStub,
        watches: pb_grpc.TableServiceStub,
        gate: Gate,
        ready: asyncio.Queue[Ready],
    ) -> None:
        super().__init__(moves, watches, gate)
        self.ready = ready

    async def place(self, request: pb.PlaceCardsRequest, seat: int) -> None:
        sent: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        await self.ready.put((self, request, seat, sent))
        await sent


def schedule(rate: float, seconds: float, rng: random.Random) -> list[float]:
    """Arrival times (seconds from the start) of a Poisson process of ``rate`` per second.

    >>> times = schedule(100.0, 10.0, random.Random(1))
    >>> 900 < len(times) < 1100 and times == sorted(times) and times[-1] < 10.0
    True
    """
    times, t = [], rng.expovariate(rate)
    while t < seconds:
        times.append(t)
        t += rng.expovariate(rate)
    return times


async def _open_loop_places(
    ready: asyncio.Queue[Ready], times: Sequence[float]
) -> tuple[list[float], float, int, list[str]]:
    """Latencies from the scheduled times, the elapsed time, how many arrivals found no
    table ready, and the status codes of the calls that failed."""
    loop = asyncio.get_running_loop()
    start = loop.time() + 0.01
    latencies: list[float] = []
    failures: list[str] = []
    waited = 0

    async def send(player: ReadyPlayer, request: pb.PlaceCardsRequest, seat: int,
                   sent: asyncio.Future[None], due: float) -> None:  # fmt: skip
        try:
            await player._send(player.moves.PlaceCards, request, seat, timed=False)
            latencies.append(loop.time() - due)
        except grpc.aio.AioRpcError as error:  # counted; that table takes no more moves
            failures.append(error.code().name)
        finally:
            sent.set_result(None)

    tasks = []
    for offset in times:
        due = start + offset
        if (delay := due - loop.time()) > 0:
            await asyncio.sleep(delay)
        if ready.empty():
            waited += 1
        player, request, seat, sent = await ready.get()
        tasks.append(asyncio.create_task(send(player, request, seat, sent, due)))
    await asyncio.gather(*tasks)
    return latencies, loop.time() - start, waited, failures


async def _open_loop_settles(
    channel: grpc.aio.Channel, times: Sequence[float]
) -> tuple[list[float], float, list[str]]:
    call = channel.unary_unary(SETTLE)
    request = settle_request()
    loop = asyncio.get_running_loop()
    start = loop.time() + 0.01
    latencies: list[float] = []
    failures: list[str] = []

    async def send(due: float) -> None:
        try:
            await call(request)
        except grpc.aio.AioRpcError as error:  # counted: a lost call is not a fast one
            failures.append(error.code().name)
            return
        latencies.append(loop.time() - due)

    tasks = []
    for offset in times:
        due = start + offset
        if (delay := due - loop.time()) > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(send(due)))
    await asyncio.gather(*tasks)
    return latencies, loop.time() - start, failures


def _row(rpc: str, fraction: float, rate: float, latencies: list[float], elapsed: float,
         waited: float = 0.0, failed: Sequence[str] = ()) -> Row:  # fmt: skip
    latencies.sort()
    return Row(
        rpc, fraction, rate, len(latencies) / elapsed, len(latencies),
        percentile(latencies, 0.50) * 1000, percentile(latencies, 0.99) * 1000, waited,
        tuple(sorted(failed)),
    )  # fmt: skip


async def measure(
    address: str, fractions: Sequence[float], seconds: float, tables: int
) -> tuple[dict[str, float], list[Row]]:
    """The closed-loop maxima, then the open-loop rows."""
    closed = await load([address], [MAX_IN_FLIGHT], seconds, 1)
    maxima = {r.rpc: r.per_second for r in closed}
    rng = random.Random(SEED)
    rows: list[Row] = []
    async with grpc.aio.insecure_channel(address) as channel:
        stub = pb_grpc.TableServiceStub(channel)
        ready: asyncio.Queue[Ready] = asyncio.Queue()
        gate = Gate()
        gate.open.set()  # the players never hold a move back: the schedule sends them
        players = [ReadyPlayer(stub, stub, gate, ready) for _ in range(tables)]
        for player in players:
            await player.start()
        try:
            await _open_loop_places(ready, schedule(maxima["PlaceCards"] / 2, 0.5, rng))
            for fraction in fractions:
                rate = maxima["PlaceCards"] * fraction
                times = schedule(rate, seconds, rng)
                latencies, elapsed, waited, failed = await _open_loop_places(ready, times)
                share = waited / max(1, len(times))
                rows.append(_row("PlaceCards", fraction, rate, latencies, elapsed, share, failed))
                rate = maxima["SettleHand"] * fraction
                times = schedule(rate, seconds, rng)
                latencies, elapsed, failed = await _open_loop_settles(channel, times)
                rows.append(_row("SettleHand", fraction, rate, latencies, elapsed, failed=failed))
        finally:
            for player in players:
                await player.stop()
    return maxima, rows


def run(
    redis_url: str,
    *,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    seconds: float = 3.0,
    tables: int = 128,
) -> tuple[dict[str, float], list[Row]]:
    processes = start_servers(redis_url, 1)
    try:
        return asyncio.run(measure(processes[0][1], fractions, seconds, tables))
    finally:
        for process, _ in processes:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:  # still draining an overload's backlog
                process.kill()
                process.wait()


def report(maxima: dict[str, float], rows: Sequence[Row]) -> list[str]:
    lines = [
        "open loop (Poisson arrivals; latency from the scheduled send time), one server",
        f"closed-loop maximum at {MAX_IN_FLIGHT} in flight: PlaceCards "
        f"{maxima['PlaceCards']:.0f}/s, SettleHand {maxima['SettleHand']:.0f}/s",
        f"{'rpc':<12}{'load':>6}{'offered/s':>11}{'achieved/s':>12}{'p50 ms':>9}{'p99 ms':>9}",
    ]
    for r in rows:
        line = (
            f"{r.rpc:<12}{r.fraction:>6.0%}{r.offered_per_second:>11.0f}"
            f"{r.achieved_per_second:>12.0f}{r.p50_ms:>9.2f}{r.p99_ms:>9.2f}"
        )
        if r.rpc == "PlaceCards" and r.waited_for_a_table:
            line += f"   ({r.waited_for_a_table:.1%} of arrivals waited for a ready table)"
        if r.failed:
            codes = ", ".join(f"{code} {n}" for code, n in Counter(r.failed).items())
            line += f"   ({len(r.failed)} calls failed: {codes}; left out of the latencies)"
        lines.append(line)
    by = {(r.rpc, r.fraction): r for r in rows}
    for fraction in sorted({r.fraction for r in rows}):
        place, settle = by.get(("PlaceCards", fraction)), by.get(("SettleHand", fraction))
        if place and settle:
            lines.append(
                f"p99 at {fraction:.0%} of the maximum: PlaceCards {place.p99_ms:.1f} ms, "
                f"SettleHand {settle.p99_ms:.1f} ms"
            )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.open_loop", description=__doc__)
    parser.add_argument("--redis-url", help="an existing, empty Redis (default: a private one)")
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per row")
    parser.add_argument("--fractions", default="0.5,0.8", help="shares of the maximum")
    parser.add_argument("--tables", type=int, default=128, help="tables kept in play")
    args = parser.parse_args(argv)
    fractions = [float(f) for f in args.fractions.split(",") if f.strip()]
    with redis_for(args.redis_url) as url:
        maxima, rows = run(url, fractions=fractions, seconds=args.seconds, tables=args.tables)
    print("\n".join(report(maxima, rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
