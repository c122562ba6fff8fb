"""The move path's figures in one run: ``.venv/bin/python -m bench.issue14 [--quick]``.

Everything on one private ``redis-server``, each figure beside its target:

1. **PlaceCards against the no-logic floor**: server CPU per PlaceCards (``bench.tables``,
   one server, 64 tables in play) over server CPU per stored empty move (``bench.move_floor``:
   a move's I/O with no game logic). Target <= 1.5x.
2. **Alternating replicas**: two servers on the one Redis, 64 tables; server CPU per move
   (both processes) when each PlaceCards goes to the other replica than the one before,
   over the same when a table's moves all go to one replica. Target <= 1.15x.
3. **Worker processes**: PlaceCards/s with ``ofc serve`` and with ``ofc serve --workers 2``
   on one port, 64 tables over 8 connections (the kernel spreads connections over the
   workers; a table's moves stay on one).
4. **Batch scoring** (``bench.batch``): SettleHands, SettleHandsStream (100 hands a message,
   and beside it one a message) and ``ofc score --jsonl`` against the core's in-process
   settle rate. Targets 40%, 25% (many hands a message), 30%.
5. **p99 under an open-loop load** (``bench.open_loop``) at 50% and 80% of the measured
   maximum, PlaceCards next to SettleHand.

``--quick`` shortens every measurement (about a minute and a half on two cores) for a
smoke run; the default takes a few minutes. Figures on a machine other work shares move
from run to run: the ratios, taken within the run, are the point.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import batch, move_path, open_loop, tables

IN_FLIGHT = move_path.IN_FLIGHT
WORKER_CONNECTIONS = 8


@dataclass(frozen=True)
class Settings:
    seconds: float  # per measured row
    rounds: int
    batch_rounds: int
    cli_hands: int
    open_loop_seconds: float
    pairs: int = move_path.PAIRS  # of rows per move_path ratio


FULL = Settings(seconds=3.0, rounds=3, batch_rounds=3, cli_hands=20_000, open_loop_seconds=4.0)
QUICK = Settings(
    seconds=1.0, rounds=1, batch_rounds=1, cli_hands=20_000, open_loop_seconds=1.5, pairs=1
)


def start_workers(redis_url: str, workers: int) -> tuple[subprocess.Popen[str], str, list[int]]:
    """``ofc serve --workers N`` on a free port; returns once every worker serves, with
    the supervisor and the worker pids."""
    from tests.conftest import free_port

    address = f"127.0.0.1:{free_port()}"
    ofc = Path(sys.executable).with_name("ofc")
    process = subprocess.Popen(
        [str(ofc), "serve", "--workers", str(workers), "--listen", address,
         "--metrics-listen", "", "--http-listen", "", "--redis-url", redis_url,
         "--log-level", "info"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "OFC_API_KEYS": tables.API_KEY},
    )  # fmt: skip
    assert process.stderr is not None
    for line in process.stderr:
        entry = json.loads(line)
        if entry.get("logger") == "ofc.workers" and entry["msg"] == "serving":
            pids = [process.pid, *entry["pids"]]
            break
    else:
        raise RuntimeError(f"ofc serve --workers {workers} did not start")
    stderr = process.stderr
    threading.Thread(target=lambda: [None for _ in stderr], daemon=True).start()  # drain
    return process, address, pids


def _worker_moves(redis_url: str, workers: int, settings: Settings) -> tables.Row:
    if workers == 1:
        processes = tables.start_servers(redis_url, 1)
        process, address, pids = processes[0][0], processes[0][1], [processes[0][0].pid]
    else:
        process, address, pids = start_workers(redis_url, workers)  # type: ignore[assignment]
    try:
        rows = asyncio.run(
            tables.load(
                [address],
                [IN_FLIGHT],
                settings.seconds,
                settings.rounds,
                True,
                pids,
                connections=WORKER_CONNECTIONS,
            )
        )
    finally:
        process.terminate()
        process.wait(timeout=30)
    return next(r for r in rows if r.rpc == "PlaceCards")


def run(redis_url: str, settings: Settings) -> list[str]:
    lines: list[str] = []

    def say(text: str) -> None:
        lines.append(text)
        print(text, flush=True)

    # 1 and 2 are bench.move_path's two ratios, numbered here as each is measured.
    numbered = iter(range(1, 3))
    move_path.figures(
        redis_url,
        seconds=settings.seconds,
        rounds=settings.rounds,
        pairs=settings.pairs,
        say=lambda line: say(f"{next(numbered)}. {line}"),
    )
    one, two = (_worker_moves(redis_url, n, settings) for n in (1, 2))
    say(
        f"3. PlaceCards/s, {IN_FLIGHT} tables over {WORKER_CONNECTIONS} connections: "
        f"1 worker {one.per_second:.0f}/s (p99 {one.p99_ms:.1f} ms), --workers 2 "
        f"{two.per_second:.0f}/s (p99 {two.p99_ms:.1f} ms): {two.per_second / one.per_second:.2f}x"
    )
    figures = batch.run(rounds=settings.batch_rounds, seconds=settings.seconds,
                        cli_hands=settings.cli_hands)  # fmt: skip
    say("4. " + "\n".join(batch.format_figures(figures, hands=1000)))
    maxima, rows = open_loop.run(redis_url, seconds=settings.open_loop_seconds)
    say("5. " + "\n".join(open_loop.report(maxima, rows)))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.issue14",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="short rows: a smoke run")
    parser.add_argument("--redis-url", help="an existing, empty Redis (default: a private one)")
    args = parser.parse_args(argv)
    with tables.redis_for(args.redis_url) as url:
        run(url, QUICK if args.quick else FULL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
