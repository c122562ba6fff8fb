"""The move path against its floors: ``.venv/bin/python -m bench.move_path``.

    .venv/bin/python -m bench.move_path                  # private redis-server, 64 tables
    .venv/bin/python -m bench.move_path --seconds 3 --rounds 3

Two same-run ratios of server CPU per call, on one private ``redis-server``:

1. **PlaceCards over the no-logic floor**: CPU per PlaceCards of one ``ofc serve``
   (``bench.tables``: 64 tables in play, each seat driven by its Watch) over CPU per stored
   empty move (``bench.move_floor``: a move's I/O, no game logic). Target <= 1.5x.
2. **Alternating replicas**: two ``ofc serve`` on the one Redis, 64 tables; CPU per move of
   both processes when each PlaceCards goes to the other replica than the one before (what
   per-request round robin does) over the same when each table's moves go to one replica
   (a move there meets the record it wrote). Target <= 1.15x.

On a machine other work shares the absolute figures move from run to run; the ratios,
taken within one run, are the point.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from collections.abc import Callable, Sequence

from bench import move_floor, tables

TARGET_FLOOR_RATIO = 1.5
TARGET_ALTERNATING_RATIO = 1.15
IN_FLIGHT = 64


def place_row(
    redis_url: str, servers: int, *, seconds: float, rounds: int, alternate: bool = False
) -> tables.Row:
    """The PlaceCards row of ``servers`` fresh ``ofc serve`` processes at 64 in flight."""
    processes = tables.start_servers(redis_url, servers)
    try:
        addresses, pids = [a for _, a in processes], [p.pid for p, _ in processes]
        rows = asyncio.run(
            tables.load(addresses, [IN_FLIGHT], seconds, rounds, True, pids, alternate=alternate)
        )
    finally:
        for process, _ in processes:
            process.terminate()
        for process, _ in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:  # a server slow to drain its watches
                process.kill()
                process.wait()
    return next(r for r in rows if r.rpc == "PlaceCards")


def figures(
    redis_url: str, *, seconds: float = 3.0, rounds: int = 3, say: Callable[[str], None] = print
) -> list[str]:
    """Both ratios, each with the two costs it is made of and its target (each line also
    given to ``say`` as soon as it is measured)."""
    lines: list[str] = []
    floor_rows = move_floor.run(redis_url, tables=IN_FLIGHT, seconds=seconds)
    floor = next(r for r in floor_rows if r.name == "stored empty move")
    place = place_row(redis_url, 1, seconds=seconds, rounds=rounds)
    over_floor = place.cpu_ms_per_call / floor.cpu_ms
    lines.append(
        f"PlaceCards / no-logic floor (server CPU per call, {IN_FLIGHT} tables, one server): "
        f"{place.cpu_ms_per_call:.2f} ms / {floor.cpu_ms:.2f} ms = {over_floor:.2f}x "
        f"[target <= {TARGET_FLOOR_RATIO}x: {_verdict(over_floor <= TARGET_FLOOR_RATIO)}]"
    )
    say(lines[-1])
    affine = place_row(redis_url, 2, seconds=seconds, rounds=rounds)
    alternating = place_row(redis_url, 2, seconds=seconds, rounds=rounds, alternate=True)
    over_affine = alternating.cpu_ms_per_call / affine.cpu_ms_per_call
    lines.append(
        f"moves alternating between two replicas / each table on one replica (server CPU per "
        f"move, both servers): {alternating.cpu_ms_per_call:.2f} ms / "
        f"{affine.cpu_ms_per_call:.2f} ms = {over_affine:.2f}x "
        f"[target <= {TARGET_ALTERNATING_RATIO}x: "
        f"{_verdict(over_affine <= TARGET_ALTERNATING_RATIO)}]; moves/s "
        f"{alternating.per_second:.0f} vs {affine.per_second:.0f}"
    )
    say(lines[-1])
    return lines


def _say(line: str) -> None:
    print(line, flush=True)


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.move_path", description=__doc__)
    parser.add_argument("--redis-url", help="an existing, empty Redis (default: a private one)")
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds per row")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per row")
    args = parser.parse_args(argv)
    with tables.redis_for(args.redis_url) as url:
        figures(url, seconds=args.seconds, rounds=max(1, args.rounds), say=_say)
    return 0


if __name__ == "__main__":
    sys.exit(main())
