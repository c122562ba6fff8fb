"""gRPC load driver: SettleHand next to an empty health check, in the same run.

    .venv/bin/python -m bench.grpc_load                 # starts `ofc serve` on a free port
    .venv/bin/python -m bench.grpc_load --target HOST:PORT --seconds 5 --in-flight 1,16,64

For each number of calls in flight (default 1 and 64), N grpc.aio workers on one channel
call the method back to back for T seconds (after a short warm-up), first the health check
(grpc.health.v1.Health/Check, empty service: the server's ceiling for a unary call with the
same interceptors) and then SettleHand (rules.md worked example 1). Requests and responses
travel as pre-serialized bytes on the client, so both rows pay the same client cost and the
ratio measures what settling adds on the server. Prints requests/s, p50 and p99 latency,
the settle/health throughput ratio and the issue-4 targets (settle >= 80% of health at 64 in
flight, p99 < 50 ms at 64, p50 < 2 ms at 1). ``--check`` exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2
from ofcpoker.v1 import cards_pb2, settlement_pb2
from ofcpoker.v1 import rules_service_pb2 as pb

HEALTH = "/grpc.health.v1.Health/Check"
SETTLE = "/ofcpoker.v1.RulesService/SettleHand"
EXAMPLE_1 = (
    "Ac 3d 2h / 6c 6d 9h 8s 4c / 9c 8c 7d 6h 5s",
    "Kd 3c 2d / 5c 5d 9d 8h 4d / 7c 7h Qd Js 4s",
)
TARGET_RATIO = 0.80
TARGET_P99_MS_AT_64 = 50.0
TARGET_P50_MS_AT_1 = 2.0


@dataclass(frozen=True)
class Result:
    rpc: str
    in_flight: int
    requests: int
    seconds: float
    requests_per_second: float
    p50_ms: float
    p99_ms: float


def settle_request() -> bytes:
    players = []
    for text in EXAMPLE_1:
        top, middle, bottom = (row.split() for row in text.split("/"))
        board = cards_pb2.Board(top=top, middle=middle, bottom=bottom)
        players.append(settlement_pb2.PlayerHand(board=board))
    request = pb.SettleHandRequest(hand=settlement_pb2.Hand(players=players))
    return request.SerializeToString()


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of sorted values.

    >>> percentile([1.0, 2.0, 3.0, 4.0], 0.5), percentile([1.0, 2.0, 3.0, 4.0], 0.99)
    (2.0, 4.0)
    """
    if not sorted_values:
        return float("nan")
    rank = max(1, min(len(sorted_values), round(q * len(sorted_values) + 0.5)))
    return sorted_values[rank - 1]


async def _measure(
    channel: grpc.aio.Channel, method: str, request: bytes, in_flight: int, seconds: float
) -> tuple[list[float], float]:
    """Latencies of back-to-back calls from ``in_flight`` workers, and the elapsed time."""
    call = channel.unary_unary(method)  # bytes in, bytes out: no client-side (de)serialization
    latencies: list[float] = []
    loop = asyncio.get_running_loop()

    async def worker(until: float) -> None:
        while loop.time() < until:
            start = time.perf_counter()
            await call(request)
            latencies.append(time.perf_counter() - start)

    started = time.perf_counter()
    until = loop.time() + seconds
    await asyncio.gather(*(worker(until) for _ in range(in_flight)))
    return latencies, time.perf_counter() - started


def _result(rpc: str, in_flight: int, latencies: list[float], elapsed: float) -> Result:
    latencies.sort()
    return Result(
        rpc=rpc,
        in_flight=in_flight,
        requests=len(latencies),
        seconds=round(elapsed, 3),
        requests_per_second=round(len(latencies) / elapsed, 1),
        p50_ms=round(percentile(latencies, 0.50) * 1000, 3),
        p99_ms=round(percentile(latencies, 0.99) * 1000, 3),
    )


async def run(
    target: str, seconds: float, in_flight: Sequence[int], rounds: int = 3
) -> list[Result]:
    """Health and settle at each level of concurrency, on one channel.

    Each row's ``seconds`` are split into ``rounds`` that alternate health and settle, so a
    change in background load on a shared machine hits both rows alike.
    """
    calls = {
        "Health/Check": (HEALTH, health_pb2.HealthCheckRequest().SerializeToString()),
        "SettleHand": (SETTLE, settle_request()),
    }
    gc.collect()
    gc.freeze()  # the driver's own garbage collections should not show up as server latency
    async with grpc.aio.insecure_channel(target) as channel:
        await asyncio.wait_for(channel.channel_ready(), timeout=20)
        check = pb.SettleHandResponse.FromString(
            await channel.unary_unary(SETTLE)(settle_request())
        )
        if [p.points for p in check.settlement.players] != [8, -8]:
            raise RuntimeError("the server does not settle worked example 1 as +8/-8")
        results: list[Result] = []
        for n in in_flight:
            for method, request in calls.values():  # warm-up
                await _measure(channel, method, request, n, min(0.5, seconds / 4))
            samples: dict[str, tuple[list[float], float]] = {name: ([], 0.0) for name in calls}
            for _ in range(rounds):
                for name, (method, request) in calls.items():
                    latencies, elapsed = await _measure(
                        channel, method, request, n, seconds / rounds
                    )
                    total, time_so_far = samples[name]
                    samples[name] = (total + latencies, time_so_far + elapsed)
            results.extend(_result(name, n, *samples[name]) for name in calls)
        return results


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_server() -> tuple[subprocess.Popen[bytes], str]:
    """``ofc serve`` on a free loopback port (metrics endpoint off, warnings only)."""
    address = f"127.0.0.1:{_free_port()}"
    ofc = Path(sys.executable).with_name("ofc")
    command = [
        str(ofc),
        "serve",
        "--listen",
        address,
        "--metrics-listen",
        "",
        "--http-listen",
        "",
        "--log-level",
        "warning",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=os.environ.copy())
    return process, address


def targets(results: Sequence[Result]) -> list[tuple[str, bool]]:
    by = {(r.rpc, r.in_flight): r for r in results}
    checks: list[tuple[str, bool]] = []
    if ("SettleHand", 64) in by and ("Health/Check", 64) in by:
        ratio = (
            by["SettleHand", 64].requests_per_second / by["Health/Check", 64].requests_per_second
        )
        checks.append(
            (f"settle >= 80% of health at 64 in flight ({ratio:.0%})", ratio >= TARGET_RATIO)
        )
        p99 = by["SettleHand", 64].p99_ms
        checks.append(
            (f"settle p99 < 50 ms at 64 in flight ({p99:.2f} ms)", p99 < TARGET_P99_MS_AT_64)
        )
    if ("SettleHand", 1) in by:
        p50 = by["SettleHand", 1].p50_ms
        checks.append(
            (f"settle p50 < 2 ms at 1 in flight ({p50:.2f} ms)", p50 < TARGET_P50_MS_AT_1)
        )
    return checks


def report(results: Sequence[Result], target: str, seconds: float) -> str:
    lines = [
        f"gRPC load against {target}: {seconds:g} s per row in alternating rounds, "
        "grpc.aio client, one channel",
        f"{'rpc':<14}{'in flight':>10}{'requests/s':>13}{'p50 ms':>9}{'p99 ms':>9}",
    ]
    for r in results:
        lines.append(
            f"{r.rpc:<14}{r.in_flight:>10}{r.requests_per_second:>13.1f}{r.p50_ms:>9.2f}{r.p99_ms:>9.2f}"
        )
    health = {r.in_flight: r.requests_per_second for r in results if r.rpc == "Health/Check"}
    for r in results:
        if r.rpc == "SettleHand" and health.get(r.in_flight):
            share = r.requests_per_second / health[r.in_flight]
            lines.append(f"settle/health throughput at {r.in_flight} in flight: {share:.0%}")
    for text, ok in targets(results):
        lines.append(f"{'PASS' if ok else 'MISS'} {text}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.grpc_load", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--target", help="HOST:PORT of a running server (default: start one)")
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds per row")
    parser.add_argument("--in-flight", default="1,64", help="comma-separated concurrency levels")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per row")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    levels = [int(n) for n in args.in_flight.split(",") if n.strip()]
    process = None
    target = args.target
    if target is None:
        process, target = start_server()
    try:
        results = asyncio.run(run(target, args.seconds, levels, max(1, args.rounds)))
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=30)
    if args.json:
        print(json.dumps([asdict(r) for r in results], indent=2))
    else:
        print(report(results, target, args.seconds))
    missed = any(not ok for _, ok in targets(results))
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
