"""What a move costs a server before any game logic: ``.venv/bin/python -m bench.move_floor``.

    .venv/bin/python -m bench.move_floor                 # throwaway redis-server, 64 tables
    .venv/bin/python -m bench.move_floor --seconds 5 --tables 64

``bench.tables`` compares PlaceCards with SettleHand. This section asks how much of the
gap is the shape of a move rather than the code that judges it: a server process (the
same grpc.aio server, interceptor, redis-py client and collector settings as ``ofc serve``)
answers

- ``SettleHand``: the real RPC, the yardstick of ``bench.tables``;
- an empty move: a unary call with no work, on a table whose two watchers each get one
  stream message per move (what a PlaceCards causes besides its logic, without Redis);
- a stored empty move: the same, plus the Redis traffic of a real move: one pipelined
  round trip (a ZADD deadline hint and a script that appends two events to the table's
  stream) and, per table, one shared blocking XREAD (pipelined with an HMGET, like the
  watch feed's trim-mark read) that wakes the watchers.

N tables (``--tables``) are driven the way ``bench.tables`` drives them: a table's next
move is sent when its watcher's message for the last one arrives. Prints calls/s and the
server process's CPU time per call, and what the stored empty move leaves of the 60%
place/settle target: its CPU per call next to SettleHand's is the ratio a PlaceCards with
no game logic at all could reach on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from ofc_service.api.rpc import add_handlers
from ofc_service.api.rules import SERVICE as RULES_SERVICE
from ofc_service.api.rules import RulesHandlers
from ofc_service.server.interceptors import ObservabilityInterceptor
from ofc_service.server.logs import configure_logging
from ofc_service.server.main import tune_collector
from redis.asyncio import Redis

from bench.grpc_load import SETTLE, settle_request
from bench.tables import TARGET_RATIO, cpu_seconds

SERVICE = "ofcbench.MoveFloor"
MOVE, STORED_MOVE, WATCH = (f"/{SERVICE}/{m}" for m in ("Move", "StoredMove", "Watch"))
APPEND_TWO_EVENTS = """
redis.call('XADD', KEYS[1], '*', 'd', ARGV[1])
redis.call('XADD', KEYS[1], '*', 'd', ARGV[1])
return {'ok', 1}
"""
EVENT = b"e" * 60  # about a CardsPlaced event's stored size


class _Table:
    """One table's watchers, woken by a move (empty moves) or by the shared XREAD."""

    def __init__(self) -> None:
        self.moves = 0  # a watcher compares it with what it last saw: no wake-up can be missed
        self.changed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.reader: asyncio.Task[None] | None = None

    def wake(self) -> None:
        self.moves += 1
        changed, self.changed = self.changed, asyncio.get_running_loop().create_future()
        changed.set_result(None)

    async def moved_since(self, seen: int) -> int:
        """Wait until a move after ``seen`` (at once if one already came); the count now."""
        while self.moves == seen:
            await asyncio.shield(self.changed)
        return self.moves


class FloorServer:
    def __init__(self, redis: Redis, blocking: Redis, script_sha: str) -> None:
        self.redis, self.blocking, self.sha = redis, blocking, script_sha
        self.tables: dict[bytes, _Table] = {}

    def table(self, table_id: bytes) -> _Table:
        return self.tables.setdefault(table_id, _Table())

    async def move(self, table_id: bytes, context: Any) -> bytes:
        self.table(table_id).wake()
        return b""

    async def stored_move(self, table_id: bytes, context: Any) -> bytes:
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.zadd("floor:deadlines", {table_id: 1})
            pipe.evalsha(self.sha, 1, b"floor:events:" + table_id, EVENT)
            await pipe.execute()
        return b""

    async def watch(self, request: bytes, context: Any) -> AsyncIterator[bytes]:
        stored, table_id = request[:1] == b"s", request[1:]
        table = self.table(table_id)
        if stored and table.reader is None:
            table.reader = asyncio.create_task(self._read(table_id, table))
        seen = table.moves
        yield b"open"  # the client moves only once its watchers are open
        while True:
            # A move may wake the table while this generator still waits to resume after
            # its last yield (a loaded machine): counting moves, not waiting for the next
            # wake-up, answers it anyway.
            seen = await table.moved_since(seen)
            yield b"event"

    async def _read(self, table_id: bytes, table: _Table) -> None:
        last: bytes | str = "0-0"  # a fresh table: from its first event, which may come first
        while True:
            async with self.blocking.pipeline(transaction=False) as pipe:
                pipe.xread({b"floor:events:" + table_id: last}, block=5000)
                pipe.hmget(b"floor:state:" + table_id, ["version", "events_from"])
                entries, _ = await pipe.execute()
            if entries:
                last = entries[0][1][-1][0]
                table.wake()


async def serve(port: int, redis_url: str) -> None:
    configure_logging("error")  # as bench.tables runs `ofc serve`: no access log lines
    redis = Redis.from_url(redis_url)
    blocking = Redis.from_url(redis_url, max_connections=1000)
    floor = FloorServer(redis, blocking, await redis.script_load(APPEND_TWO_EVENTS))
    server = grpc.aio.server(interceptors=[ObservabilityInterceptor()])
    add_handlers(server, RulesHandlers(), RULES_SERVICE)
    handlers = {
        "Move": grpc.unary_unary_rpc_method_handler(floor.move),
        "StoredMove": grpc.unary_unary_rpc_method_handler(floor.stored_move),
        "Watch": grpc.unary_stream_rpc_method_handler(floor.watch),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    tune_collector()  # as `ofc serve` does once it serves
    await server.wait_for_termination()


@dataclass(frozen=True)
class Row:
    name: str
    calls: int
    seconds: float
    cpu_s: float

    @property
    def per_second(self) -> float:
        return self.calls / self.seconds

    @property
    def cpu_ms(self) -> float:
        return self.cpu_s * 1000 / max(1, self.calls)


async def _measure(name: str, pid: int, seconds: float, run: Any) -> Row:
    """``run(stop_at) -> calls`` measured for ``seconds`` after a one-second warm-up."""
    loop = asyncio.get_running_loop()
    await run(loop.time() + 1.0)
    cpu, started = cpu_seconds([pid]), time.perf_counter()
    calls = await run(loop.time() + seconds)
    return Row(name, calls, time.perf_counter() - started, cpu_seconds([pid]) - cpu)


async def drive(address: str, pid: int, tables: int, seconds: float) -> list[Row]:
    channel = grpc.aio.insecure_channel(address)
    await asyncio.wait_for(channel.channel_ready(), timeout=20)
    settle_call, request = channel.unary_unary(SETTLE), settle_request()

    async def settle(stop_at: float) -> int:
        loop, calls = asyncio.get_running_loop(), 0

        async def worker() -> None:
            nonlocal calls
            while loop.time() < stop_at:
                await settle_call(request)
                calls += 1

        await asyncio.gather(*(worker() for _ in range(tables)))
        return calls

    rows = [await _measure("SettleHand", pid, seconds, settle)]
    for name, method, tag in (("empty move", MOVE, b"m"), ("stored empty move", STORED_MOVE, b"s")):
        rows.append(await _measure(name, pid, seconds, _moves(channel, method, tag, tables)))
    await channel.close()
    return rows


def _moves(channel: grpc.aio.Channel, method: str, tag: bytes, tables: int) -> Any:
    move, watch = channel.unary_unary(method), channel.unary_stream(WATCH)
    round_number = 0

    async def run(stop_at: float) -> int:
        nonlocal round_number
        round_number += 1  # fresh tables per run: no watcher left over from the last one
        loop, calls = asyncio.get_running_loop(), 0

        async def table(k: int) -> None:
            nonlocal calls
            table_id = f"{tag.decode()}{round_number}-{k}".encode()
            watchers = [watch(tag + table_id) for _ in range(2)]
            for watcher in watchers:  # each says it is open before the first move
                await watcher.read()
            try:
                while loop.time() < stop_at:
                    await move(table_id)
                    await watchers[0].read()  # the next move follows the watcher's message
                    calls += 1
            finally:
                for w in watchers:
                    w.cancel()

        await asyncio.gather(*(table(k) for k in range(tables)))
        return calls

    return run


def report(rows: Sequence[Row], tables: int) -> list[str]:
    lines = [f"{tables} tables (or SettleHand workers) in flight, one server process"]
    lines.append(f"{'':<19}{'calls/s':>9}{'server CPU ms/call':>20}")
    for r in rows:
        lines.append(f"{r.name:<19}{r.per_second:>9.0f}{r.cpu_ms:>20.2f}")
    by = {r.name: r for r in rows}
    settle, stored = by["SettleHand"], by["stored empty move"]
    best = settle.cpu_ms / stored.cpu_ms
    lines.append(
        f"a PlaceCards with no game logic at all could reach {best:.0%} of SettleHand "
        f"(by CPU per call) [target {TARGET_RATIO:.0%}: "
        f"{'reachable' if best >= TARGET_RATIO else 'out of reach with this stack'}]"
    )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.move_floor", description=__doc__)
    parser.add_argument("--seconds", type=float, default=4.0, help="measured seconds per row")
    parser.add_argument("--tables", type=int, default=64, help="tables (calls) in flight")
    parser.add_argument("--serve", nargs=2, metavar=("PORT", "REDIS_URL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        asyncio.run(serve(int(args.serve[0]), args.serve[1]))
        return 0
    from tests.conftest import RedisServer  # the test suite's throwaway redis

    redis_server = RedisServer()
    try:
        rows = run(redis_server.url, tables=args.tables, seconds=args.seconds)
    finally:
        redis_server.stop()
    print("\n".join(report(rows, args.tables)))
    return 0


def run(redis_url: str, *, tables: int = 64, seconds: float = 4.0) -> list[Row]:
    """The three rows, against a floor server of its own on ``redis_url``."""
    from tests.conftest import free_port

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "bench.move_floor", "--serve", str(port), redis_url],
        stderr=subprocess.DEVNULL,  # the watches cancelled at the end of a row log a line each
    )
    try:
        # Bounded: a stuck row is an error, never a bench (or a test) that waits forever.
        rows = drive(f"127.0.0.1:{port}", server.pid, tables, seconds)
        return asyncio.run(asyncio.wait_for(rows, timeout=120 + 6 * (seconds + 1)))
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
