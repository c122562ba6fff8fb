"""A move that meets another replica's record, in process: ``.venv/bin/python -m bench.miss_path``.

    .venv/bin/python -m bench.miss_path                     # a private redis-server
    .venv/bin/python -m bench.miss_path --memory            # the in-memory store
    .venv/bin/python -m bench.miss_path --callgrind --moves 200   # instructions per move

Two :class:`~ofc_service.application.manager.TableManager` replicas share one store, each
with record caches of its own, as two processes have (:class:`_ProcessCaches`); each
table is watched through replica B (its watch feed reads the table with its events, as a
``Watch`` stream does) and its hands are started on replica A. Each PlaceCards goes to A
(``affine``: the replica meets the record it wrote) or to A and B in turn
(``alternating``: every move meets the other replica's record, half of them on the replica
that watches the table and half on the one that does not). The moves are fixed in advance
(the same deal and placements every run), so the work per move is the same from run to run.

Prints the process CPU per move of each mode and their ratio. CPU time moves with whatever
else the machine runs; instruction counts do not (to a fraction of a percent):
``--callgrind`` runs each mode under ``valgrind --tool=callgrind`` with no measured move
and with ``--moves`` (the same set-up and warm-up either way) and divides the difference
of the two totals by ``--moves``. ``bench.move_path`` measures the same ratio on two
``ofc serve`` processes, gRPC included (target <= 1.15x there).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ofc import engine
from ofc.engine import MatchState
from ofc.rulesets import ROWS
from ofc_service.api.tables import ProtobufPresenter
from ofc_service.application import commands, records
from ofc_service.application.manager import Request, TableManager
from ofc_service.application.records import TableRecord
from ofc_service.application.watch import WatchHub
from ofc_service.auth import Authenticator
from ofc_service.store import MemoryTableStore, StoredTable, TableStore

from bench import tables as bench_tables

NOW_MS = 1_700_000_000_000  # one clock reading for every move: no deadline ever passes
SERVER_SEED = bytes(range(32))
MODES = ("affine", "alternating")
SCRIPTED_MOVES = 2400


@dataclass(frozen=True, slots=True)
class Step:
    command: commands.Command
    on_either: bool  # a PlaceCards or SetFantasyland: the mode picks the replica


def script(table: int, steps: int) -> list[Step]:
    """The commands of one table's play, two seats, hand after hand (cards placed row by
    row), as the engine plays them with this module's clock and seeds."""
    client_seed = b"table-%d" % table
    state = engine.new_match("classic", seats=2)
    out: list[Step] = []
    for taken in (0, 1):
        player = f"p{table}-{taken}"
        out.append(Step(commands.JoinSeat(taken, player), False))
        state, _ = engine.apply(state, engine.SitDown(taken, player, NOW_MS))
    while len(out) < steps:
        out.append(Step(commands.StartHand(), False))
        state, _ = engine.apply(state, engine.StartHand(SERVER_SEED, client_seed, NOW_MS))
        while (seat := _to_act(state)) is not None and len(out) < steps:
            move = _fill(state, seat)
            state, _ = engine.apply(state, move)
            if isinstance(move, engine.Place):
                out.append(Step(commands.PlaceCards(seat, move.placements, move.discard), True))
            else:
                command = commands.SetFantasyland(
                    seat, move.top, move.middle, move.bottom, move.discards
                )
                out.append(Step(command, True))
    return out


def _fill(state: MatchState, seat: int) -> engine.Place | engine.SetFantasyland:
    """The seat's cards in the first rows with room (fouls and all: the cost is the point)."""
    hand = state.hand
    assert hand is not None
    mine = hand.seat(seat)
    batch = mine.pending
    if mine.in_fantasyland:
        top, middle, bottom = batch[:3], batch[3:8], batch[8:13]
        return engine.SetFantasyland(seat, top, middle, bottom, batch[13:], NOW_MS)
    keep = state.ruleset.streets[hand.street].place
    free = [row for row in ROWS for _ in range(row.size - len(mine.board.row(row)))]
    placements = tuple(zip(batch[:keep], free, strict=False))
    return engine.Place(seat, placements, batch[keep] if keep < len(batch) else None, NOW_MS)


def _to_act(state: MatchState) -> int | None:
    hand = state.hand
    if hand is None or hand.over:
        return None
    for s in hand.seats:
        if s.in_fantasyland and s.pending:
            return s.seat
    return hand.turn


class _Offers:
    """Replica B's tables as its watch feeds read them; the driver waits for each move's."""

    def __init__(self, manager: TableManager) -> None:
        self.manager = manager
        self.versions: dict[str, int] = {}
        self.changed = asyncio.Event()

    def wants(self, table_id: str) -> bool:
        return self.manager.wants(table_id)

    def offer(self, table: StoredTable) -> None:
        self.manager.offer(table)
        self.versions[table.table_id] = table.version
        self.changed.set()

    async def reached(self, table_id: str, version: int) -> None:
        while self.versions.get(table_id, 0) < version:
            self.changed.clear()
            await self.changed.wait()


class _ProcessCaches:
    """The record caches of :mod:`ofc_service.application.records` (what a replica decoded,
    and what it wrote, by bytes or by value) are a process's: two replicas in one process
    would share them, and each would decode the parts the other just wrote as if it had read
    them before, which two ``ofc serve`` processes never do. So each replica here has a set
    of its own, put in place before each of its steps (steps run one at a time)."""

    def __init__(self, own: TableManager, other: TableManager) -> None:
        self._caches = records.caches()
        self._sets = {
            own: [c._entries for c in self._caches],  # the process's own
            other: [OrderedDict() for _ in self._caches],
        }

    def use(self, replica: TableManager) -> None:
        """Put ``replica``'s caches in place."""
        for cache, entries in zip(self._caches, self._sets[replica], strict=True):
            cache._entries = entries


async def _watch(manager: TableManager, table_id: str, newest: str, started: asyncio.Event) -> None:
    feed = manager.follow(table_id, newest, newest=newest)
    started.set()
    async for _ in feed:
        pass


async def play(
    store: TableStore, mode: str, *, tables: int, warmup: int, moves: int
) -> tuple[int, float]:
    """Warm-up rounds, then ``moves`` PlaceCards (one table after another, as many in
    flight as tables); the moves measured and their process CPU seconds."""
    presenter = ProtobufPresenter()
    a, b = (
        TableManager(store, Authenticator(), presenter, clock_ms=lambda: NOW_MS,
                     server_seed=lambda: SERVER_SEED)
        for _ in range(2)
    )  # fmt: skip
    offers = _Offers(b)
    b.hub = WatchHub(store, offers)
    # The same script whatever the count measured (up to SCRIPTED_MOVES), so that runs of
    # two counts differ only by the moves played.
    per_table = 2 + max(SCRIPTED_MOVES, warmup + moves) // tables * 3 // 2 + 40
    scripts = [script(t, per_table) for t in range(tables)]
    ids = [f"bench-miss-{mode[:3]}-{t}" for t in range(tables)]  # one Redis, both modes
    versions = []
    for t, table_id in enumerate(ids):
        record = TableRecord(table_id, engine.new_match("classic", seats=2), 30_000, 120_000,
                             b"table-%d" % t, NOW_MS)  # fmt: skip
        versions.append(await a.create(record))
    watchers: list[asyncio.Task[None]] = []
    positions = [0] * tables
    placed = [0] * tables
    replicas = (a, b) if mode == "alternating" else (a, a)
    caches = _ProcessCaches(a, b)

    async def step(t: int, watched: bool = True) -> bool:
        """The table's next command; whether it was a timed move."""
        item = scripts[t][positions[t]]
        positions[t] += 1
        manager = replicas[placed[t] % 2] if item.on_either else a
        caches.use(manager)
        request = Request(ids[t], versions[t], f"r{positions[t]}")
        await manager.run(request, item.command)
        versions[t] += 1
        if watched:
            await offers.reached(ids[t], versions[t])
        placed[t] += item.on_either
        return item.on_either

    for t in range(tables):  # both seats taken, then the watch opens
        await step(t, watched=False)
        await step(t, watched=False)
        caches.use(b)
        _, _, newest = await b.load(ids[t])  # the Watch snapshot's load keeps the table
        started = asyncio.Event()
        watchers.append(asyncio.create_task(_watch(b, ids[t], newest, started)))
        await started.wait()

    async def run_moves(count: int) -> int:
        done = 0
        while done < count:
            for t in range(tables):
                while not await step(t):
                    pass
                done += 1
        return done

    await run_moves(warmup)
    gc.collect()
    gc.freeze()  # as ofc serve does once started: the collector skips what set-up made
    cpu = time.process_time()
    measured = await run_moves(moves)
    cpu = time.process_time() - cpu
    caches.use(a)  # the process's own again
    for w in watchers:
        w.cancel()
    await asyncio.gather(*watchers, return_exceptions=True)
    await b.hub.close()
    await store.close()
    return measured, cpu


def _store(redis_url: str | None) -> TableStore:
    if redis_url is None:
        return MemoryTableStore()
    from ofc_service.store import RedisTableStore

    return RedisTableStore.from_url(redis_url)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.miss_path", description=__doc__)
    parser.add_argument("--mode", choices=(*MODES, "both"), default="both")
    parser.add_argument("--moves", type=int, default=600, help="measured PlaceCards per mode")
    parser.add_argument("--warmup", type=int, default=200, help="PlaceCards before measuring")
    parser.add_argument("--tables", type=int, default=8)
    parser.add_argument(
        "--memory", action="store_true", help="on the in-memory store (no redis-py, no I/O)"
    )
    parser.add_argument("--redis-url", help="an existing, empty Redis (default: a private one)")
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="instructions per move instead: each mode run under valgrind --tool=callgrind "
        "with no measured move and with --moves, the difference divided by --moves",
    )
    args = parser.parse_args(argv)
    modes = MODES if args.mode == "both" else (args.mode,)
    if args.callgrind:
        return _callgrind(args, modes)
    cpu_per_move: dict[str, float] = {}
    with contextlib.ExitStack() as stack:
        url = None
        if not args.memory:
            url = stack.enter_context(bench_tables.redis_for(args.redis_url))
        for mode in modes:
            measured, cpu = asyncio.run(
                play(_store(url), mode, tables=args.tables, warmup=args.warmup, moves=args.moves)
            )
            if not measured:
                print(f"{mode}: set-up and warm-up only")
                continue
            cpu_per_move[mode] = cpu / measured
            print(f"{mode}: {measured} PlaceCards, {cpu / measured * 1e6:.0f} us CPU per move")
    if len(cpu_per_move) == 2:
        ratio = cpu_per_move["alternating"] / cpu_per_move["affine"]
        print(f"alternating / affine (process CPU per move): {ratio:.2f}x")
    return 0


def _callgrind(args: argparse.Namespace, modes: Sequence[str]) -> int:
    if args.moves <= 0:
        raise SystemExit("--callgrind needs --moves > 0")
    if args.redis_url:
        raise SystemExit("--callgrind starts a private redis-server per run: no --redis-url")
    per_move: dict[str, float] = {}
    for mode in modes:
        totals = []
        for moves in (0, args.moves):
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "callgrind.out"
                command = [
                    "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                    sys.executable, "-m", "bench.miss_path", "--mode", mode,
                    "--moves", str(moves), "--warmup", str(args.warmup),
                    "--tables", str(args.tables), *(["--memory"] if args.memory else []),
                ]  # fmt: skip
                # one hash seed: set and dict orders, and so the instructions, repeat
                env = {**os.environ, "PYTHONHASHSEED": "0"}
                subprocess.run(command, check=True, capture_output=True, env=env)
                totals.append(_instructions(out))
        measured = -(-args.moves // args.tables) * args.tables  # whole rounds of the tables
        per_move[mode] = (totals[1] - totals[0]) / measured
        print(f"{mode}: {per_move[mode] / 1e6:.3f} M instructions per move (callgrind)")
    if len(per_move) == 2:
        ratio = per_move["alternating"] / per_move["affine"]
        print(f"alternating / affine (instructions per move): {ratio:.3f}x")
    return 0


def _instructions(out: Path) -> int:
    for line in out.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise SystemExit(f"no instruction total in {out}")


if __name__ == "__main__":
    sys.exit(main())
