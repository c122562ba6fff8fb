"""Write table records as a release stored them: the code on the path writes, and the files
are named by the commit given (942c985 wrote record format 4, cefcfb2 format 5)::

    git worktree add /tmp/old-942c985 942c985
    PYTHONPATH=/tmp/old-942c985/service .venv/bin/python \
        tests/store/format4_records/generate.py tests/store/format4_records 942c985
    git worktree add /tmp/old-cefcfb2 cefcfb2
    PYTHONPATH=/tmp/old-cefcfb2/service .venv/bin/python \
        tests/store/format4_records/generate.py tests/store/format5_records cefcfb2

Each file is one record's bytes (JSON) from a table played through that release's own
``TableManager`` on a memory store: two seats (one taken, left and taken again, so that the
seat changes are recorded), a pair unit value, one hand over and the second mid-hand (a
timeout among its actions); and the same table with the second hand over. Nothing runs this
during the tests; the files are committed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from ofc import engine
from ofc.rulesets import Row
from ofc_service.application import commands
from ofc_service.application.manager import Request, TableManager
from ofc_service.auth import Authenticator, Credentials
from ofc_service.store import MemoryTableStore

OPERATOR = Credentials(api_key="format4-key")


class Clock:
    def __init__(self) -> None:
        self.ms = 1_700_000_000_000

    def __call__(self) -> int:
        self.ms += 700
        return self.ms


async def play(out: Path, commit: str) -> None:
    clock = Clock()
    store = MemoryTableStore()
    seeds = iter(bytes([n]) * 32 for n in range(1, 100))
    manager = TableManager(
        store, Authenticator(("format4-key",)), _Silent(), clock_ms=clock,
        server_seed=lambda: next(seeds),
    )  # fmt: skip
    match = engine.new_match(seats=2, pair_units={(0, 1): 25})
    spec = commands.NewTable(match, 30_000, 120_000, b"format4-client-seed", "table")
    await manager.create(manager.new_record("t4", spec))
    version = 1

    async def run(command: commands.Command, name: str) -> None:
        nonlocal version
        await manager.run(Request("t4", version, name), command, OPERATOR)
        version += 1

    await run(commands.JoinSeat(0, "ann"), "j0")
    await run(commands.JoinSeat(1, "bob"), "j1")
    for number in (1, 2):
        await run(commands.StartHand(), f"s{number}")
        moves = 0
        while True:
            record, _, _ = await manager.load("t4")
            hand = record.match.hand
            assert hand is not None
            if hand.over:
                break
            seat = hand.turn
            assert seat is not None
            if number == 2 and moves == 3:  # the seat's clock runs out
                clock.ms = max(ms for _, ms in record.seat_deadlines) + 1
                await manager.run(Request("t4", version, f"t{moves}"), commands.TimeOut(seat))
                version += 1
            else:
                await run(_naive(record.match, seat), f"p{number}-{moves}")
            moves += 1
            if number == 2 and moves == 5:
                (out / f"{commit}-classic-mid-hand.json").write_bytes(
                    (await store.load("t4")).state
                )
        if number == 1:  # a seat left and taken again between the hands
            await run(commands.LeaveSeat(1), "l1")
            await run(commands.JoinSeat(1, "cid"), "j1b")
    (out / f"{commit}-classic-hand-over.json").write_bytes((await store.load("t4")).state)


def _naive(state: engine.MatchState, seat: int) -> commands.PlaceCards:
    """The seat's batch to the first rows with room, bottom first; the last card discarded
    where the street discards one."""
    hand = state.hand
    assert hand is not None
    own = hand.seat(seat)
    batch = own.pending
    street = state.ruleset.streets[hand.street]
    keep = batch[: street.place]
    room = {row: row.size - len(own.board.row(row)) for row in (Row.BOTTOM, Row.MIDDLE, Row.TOP)}
    placements = []
    for card in keep:
        row = next(r for r, n in room.items() if n > 0)
        room[row] -= 1
        placements.append((card, row))
    discard = batch[street.place] if len(batch) > street.place else None
    return commands.PlaceCards(seat, tuple(placements), discard)


class _Silent:
    def event(self, event: object, version: int, record: object) -> bytes:
        return b""

    def response(self, outcome: object) -> bytes:
        return b""

    def answers(self, command: object, response: bytes, table_id: str, actor: int | None) -> bool:
        return False


if __name__ == "__main__":
    asyncio.run(play(Path(sys.argv[1]), sys.argv[2]))
