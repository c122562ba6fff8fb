"""One store round trip, by the client's CPU: ``.venv/bin/python -m bench.redis_exchange``.

    .venv/bin/python -m bench.redis_exchange                  # a private redis-server
    .venv/bin/python -m bench.redis_exchange --calls 20000 --rounds 5

The same three-command pipeline (a 1 KB SET, a GET, a ZADD: the size of a move's commit
and deadline hint) sent 8 at a time over one client, three ways, in interleaved rounds:

- **redis-py pipeline**: ``client.pipeline(transaction=False)``, as ``bench.move_floor``
  sends its stored empty move;
- **direct, a clock per step**: the store's :class:`~ofc_service.store.redis_io.DirectCalls`
  with redis-py's own bounds on each step (a ``wait_for`` task on the write, a timeout
  context on each reply), as releases before this one sent a commit;
- **direct, one clock**: ``DirectCalls`` as the store sends a load or a commit (one bound on
  the whole exchange).

Prints the process's CPU time per round trip, each the best of ``--rounds``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ofc_service.store.redis_io import DirectCalls, encode
from redis.asyncio import Redis
from redis.asyncio.connection import AbstractConnection

IN_FLIGHT = 8
COMMANDS = (
    (b"SET", b"bench:exchange", b"x" * 1000),
    (b"GET", b"bench:exchange"),
    (b"ZADD", b"bench:exchange:z", b"1", b"t"),
)


class _ClockPerStep(DirectCalls):
    """``DirectCalls`` with redis-py's bound on each step of an exchange."""

    def _connection(self) -> AbstractConnection:
        connection: AbstractConnection = self._pool.make_connection()  # type: ignore[no-untyped-call]
        self._made.append(connection)
        return connection

    async def _send(self, connection: AbstractConnection, commands: Sequence[bytes]) -> list[Any]:
        return await self._exchange(connection, commands)


async def _cpu_us_per_call(call: Callable[[], Awaitable[object]], calls: int) -> float:
    async def worker(count: int) -> None:
        for _ in range(count):
            await call()

    started = time.process_time()
    await asyncio.gather(*(worker(calls // IN_FLIGHT) for _ in range(IN_FLIGHT)))
    return (time.process_time() - started) / calls * 1e6


async def measure(redis_url: str, *, calls: int, rounds: int) -> dict[str, float]:
    """Microseconds of CPU per round trip of each way, the best of ``rounds``."""
    client = Redis.from_url(redis_url)  # the store's non-blocking client: a 5 s timeout
    packed = [encode(*command) for command in COMMANDS]
    per_step, one_clock = _ClockPerStep(client.connection_pool), DirectCalls(client.connection_pool)

    async def pipeline() -> object:
        async with client.pipeline(transaction=False) as pipe:
            for command in COMMANDS:
                pipe.execute_command(*command)
            return await pipe.execute()

    ways: dict[str, Callable[[], Awaitable[object]]] = {
        "redis-py pipeline": pipeline,
        "direct, a clock per step": lambda: per_step.execute(packed),
        "direct, one clock": lambda: one_clock.execute(packed),
    }
    best = dict.fromkeys(ways, float("inf"))
    try:
        for call in ways.values():  # warm-up: connections made, code paths hot
            await _cpu_us_per_call(call, calls // 10)
        for _ in range(rounds):
            for name, call in ways.items():
                best[name] = min(best[name], await _cpu_us_per_call(call, calls))
    finally:
        await per_step.close()
        await one_clock.close()
        await client.aclose()
    return best


def report(best: dict[str, float]) -> list[str]:
    lines = [f"{'':<26}{'CPU µs per round trip':>22}"]
    lines += [f"{name:<26}{us:>22.1f}" for name, us in best.items()]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.redis_exchange", description=__doc__)
    parser.add_argument("--calls", type=int, default=20_000, help="round trips per way a round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--redis-url", help="an existing Redis (default: a private one)")
    args = parser.parse_args(argv)
    from bench.tables import redis_for

    with redis_for(args.redis_url) as url:
        best = asyncio.run(measure(url, calls=args.calls, rounds=args.rounds))
    print("\n".join(report(best)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
