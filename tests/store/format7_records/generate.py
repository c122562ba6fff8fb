"""Write table records as the releases of record format 7 store them, with what each holds.

A live table's record may wait in Redis through any number of upgrades (a table between
hands, a seat thinking over its move), so every later release must read these bytes as
this release meant them. Run with the code of a release that writes format 7 on the path::

    PYTHONPATH=service:. .venv/bin/python tests/store/format7_records/generate.py \
        tests/store/format7_records

For each shape it writes ``<commit>-<shape>.record.json``, the record's bytes exactly as
``TableRecord.to_bytes`` stores them, and ``<commit>-<shape>.expected.json``, every field of
the record as this release reads it (``tests/store/test_format7_records.py``'s
``describe``). The shapes, each with every optional field of the record set (stakes per
pair of seats, seat tokens, money, players' own client seeds, the next hand's server seed,
seat changes, deadlines):

- ``classic-mid-hand``: two seats of three, a timeout (its move and policy) among the moves;
- ``pineapple-fantasyland-mid-hand``: three seats, seat 1 owed a 14-card Fantasyland it has
  not set yet (its cards face down), seat 2's Pineapple discard made;
- ``pineapple-jokers-mid-hand``: the ``pineapple-jokers`` preset (54 cards, ofc-shuffle-v2);
- ``tiers-mid-hand``: ``progressive-pineapple-keep``, seats owed 16- and 17-card Fantasylands;
- ``house-rules-hand-over``: a four-seat table of two under house rules (another royalty
  table and scoring, a loss cap), its hand over, between hands;
- ``pineapple-leaving-mid-hand`` (1dfdb1f on): three seats, seat 2 marked to leave once the
  hand ends and seat 0 marked and withdrawn (the seats marked, and each seat's changes of
  its mark this hand).

Each table is played through this release's own ``TableManager`` on a memory store (seats
joined, players' seeds set, a seat left and taken again, then the Fantasylands owed and the
money written into its record between hands, as earlier hands would have left them); every
move is the default policy's, sent as the player's own, and a seat's clock runs out once.
Seeds and clock are fixed, so a run writes the same tables; only the seat tokens' hashes
differ from run to run (a server draws its tokens at random). Nothing runs this during the
tests; the files are committed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import subprocess
import sys
from pathlib import Path

from ofc import engine, policy, rulesets
from ofc_service.application import commands
from ofc_service.application.manager import Request, TableManager
from ofc_service.application.records import POLICY_PLAYERS, TableRecord
from ofc_service.auth import Authenticator, Credentials
from ofc_service.store import MemoryTableStore

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tests.silent import SilentPresenter
from tests.store.test_format7_records import describe

KEY = "format7-key"
OPERATOR = Credentials(api_key=KEY)


@dataclasses.dataclass
class Table:
    manager: TableManager
    table_id: str
    clock: list[int]
    version: int = 1
    requests: int = 0

    async def run(self, command: commands.Command) -> None:
        self.requests += 1
        request = Request(self.table_id, self.version, f"r{self.requests}")
        await self.manager.run(request, command, OPERATOR)
        self.version += 1
        self.clock[0] += 700

    async def record(self) -> TableRecord:
        record, self.version, _ = await self.manager.load(self.table_id)
        return record


async def played(
    table_id: str,
    match: engine.MatchState,
    taken: tuple[int, ...],
    *,
    moves: int,
    timeout_at: int | None = None,
    owed: dict[int, int] | None = None,
    marks: tuple[tuple[int, str], ...] = (),
) -> bytes:
    """A table of ``match`` (no seat taken) through a ``TableManager``: ``taken`` seats
    joined with their own client seeds, the last of them left and taken again, ``owed``
    Fantasylands and some money written in as earlier hands would leave them, its hand
    started and ``moves`` moves made (the ``timeout_at``-th by the seat's clock running out),
    then each ``(seat, mode)`` of ``marks`` sent as a ``LeaveSeat``; the record's bytes as
    stored."""
    clock = [1_800_000_000_000]
    store = MemoryTableStore(clock=lambda: clock[0] / 1000)
    seeds = iter(hashlib.sha256(b"%s %d" % (table_id.encode(), n)).digest() for n in range(99))
    manager = TableManager(
        store, Authenticator((KEY,)), SilentPresenter(), clock_ms=lambda: clock[0],
        server_seed=lambda: next(seeds),
    )  # fmt: skip
    spec = commands.NewTable(match, 30_000, 90_000, b"format7-table-seed", POLICY_PLAYERS)
    await manager.create(manager.new_record(table_id, spec))
    table = Table(manager, table_id, clock)
    for s in taken:
        await table.run(commands.JoinSeat(s, f"player-{s}"))
        await table.run(commands.SetClientSeed(s, b"own seed %d" % s))
    await table.run(commands.LeaveSeat(taken[-1]))
    await table.run(commands.JoinSeat(taken[-1], f"player-{taken[-1]}"))
    record = await table.record()
    seats = list(record.match.seats)
    for s, cards in (owed or {}).items():
        seats[s] = dataclasses.replace(seats[s], fantasyland=cards, fantasyland_streak=1)
    units = tuple(100 * s - 150 if s in taken else 0 for s in range(len(seats)))
    between = dataclasses.replace(
        record,
        match=dataclasses.replace(record.match, seats=tuple(seats), hands_played=3),
        seat_units=units,
    )
    store = MemoryTableStore(clock=lambda: clock[0] / 1000)
    manager.store = store
    manager.hub.store = store
    await store.create_table(table_id, between.to_bytes())
    table.version = 1
    await table.run(commands.StartHand())
    for k in range(moves):
        state = (await table.record()).match
        waiting = engine.seats_to_act(state)
        if not waiting:
            break
        if k == timeout_at:
            clock[0] = max(ms for _, ms in (await table.record()).seat_deadlines) + 1
            await manager.apply_due_timeouts(table_id)
            continue
        await table.run(_command(policy.DEFAULT_POLICY.choose(state, waiting[0])))
    for seat, mode in marks:
        await table.run(commands.LeaveSeat(seat, mode))
    return (await store.load(table_id)).state


def _command(move: engine.Place | engine.SetFantasyland) -> commands.Command:
    if isinstance(move, engine.SetFantasyland):
        return commands.SetFantasyland(move.seat, move.top, move.middle, move.bottom, move.discards)
    return commands.PlaceCards(move.seat, move.placements, move.discard)


def shapes() -> dict[str, tuple[str, engine.MatchState, tuple[int, ...], dict[str, object]]]:
    house = dataclasses.replace(
        rulesets.PRESETS["classic"],
        name="classic+house",
        royalties=rulesets.ROYALTY_TABLES["ukrainian"],
        scoring=rulesets.SCORING_SCHEMES["2-4"],
        royalties_to_row_winner_only=True,
        unit_value=5,
        loss_cap=30,
    )
    return {
        "classic-mid-hand": (
            "f7-classic", engine.new_match("classic", seats=3, pair_units={(0, 1): 25}),
            (0, 1), {"moves": 3, "timeout_at": 1},
        ),
        "pineapple-fantasyland-mid-hand": (
            "f7-fantasyland", engine.new_match("pineapple", seats=3), (0, 1, 2),
            {"moves": 3, "owed": {1: 14}},
        ),
        "pineapple-jokers-mid-hand": (
            "f7-jokers", engine.new_match("pineapple-jokers", seats=3), (0, 1, 2),
            {"moves": 4, "timeout_at": 2},
        ),
        "tiers-mid-hand": (
            "f7-tiers", engine.new_match("progressive-pineapple-keep", seats=3), (0, 1, 2),
            {"moves": 2, "owed": {0: 16, 2: 17}},
        ),
        "house-rules-hand-over": (
            "f7-house", engine.new_match(house, seats=4, max_hands=20), (1, 3),
            {"moves": 1_000, "timeout_at": 3},
        ),
        "pineapple-leaving-mid-hand": (
            "f7-leaving", engine.new_match("pineapple", seats=3), (0, 1, 2),
            {"moves": 4, "timeout_at": 1, "marks": (
                (2, commands.LEAVE_AFTER_HAND), (0, commands.LEAVE_AFTER_HAND),
                (0, commands.LEAVE_CANCEL),
            )},
        ),
    }  # fmt: skip


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    for shape, (table_id, match, taken, options) in shapes().items():
        raw = asyncio.run(played(table_id, match, taken, **options))  # type: ignore[arg-type]
        assert json.loads(raw)["format"] == 7
        (out / f"{commit}-{shape}.record.json").write_bytes(raw)
        record = TableRecord.from_bytes(raw)
        expected = json.dumps(describe(record), indent=1, sort_keys=True) + "\n"
        (out / f"{commit}-{shape}.expected.json").write_text(expected)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
