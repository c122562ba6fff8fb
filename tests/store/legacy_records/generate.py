"""Write table records as an older server stored them, mid-hand: the code on the path writes.

A release's records may still be in Redis when the next release starts (a rolling upgrade,
or a table waiting for its next move), so every release must load them and finish their
hands. Run with that release's code first on the path::

    git worktree add /tmp/old-971f768 971f768
    PYTHONPATH=/tmp/old-971f768/service:/tmp/old-971f768/clients/python \
        .venv/bin/python tests/store/legacy_records/generate.py tests/store/legacy_records 971f768

(For a release whose modules differ from today's, keep the project's editable install from
supplying them: see tests/golden/generate.py.) Each file is one record's bytes (JSON) after
some moves made through that release's own ``TableManager.apply_action`` and
``with_deadlines``, every timeout's move chosen by that release's engine (stored, before
record format 4, without the move); in releases with stakes agreed per pair of seats, also a
Pineapple table with stakes. Names: ``<commit>-<what>.json``. Nothing runs this during the
tests; the files are committed.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ofc import engine
from ofc.cards import Card
from ofc.rulesets import Row
from ofc_service import tables

SEED = bytes(range(32))


def apply(record: Any, action: engine.Action, now: int) -> Any:
    return applied(record, action, now)[0]


def applied(record: Any, action: engine.Action, now: int) -> tuple[Any, Any]:
    """The record after ``action`` (at ``now``) and the events the action made."""
    record, events = tables.TableManager.apply_action(None, record, action, now)  # type: ignore[arg-type]
    return tables.with_deadlines(record, now), events  # type: ignore[call-arg]


def naive(state: engine.MatchState, seat: int, now: int) -> engine.Place:
    """The seat's batch, bottom row first, the last card discarded where one is."""
    hand = state.hand
    assert hand is not None
    me = hand.seat(seat)
    batch = list(me.pending)
    street = state.ruleset.streets[hand.street]
    discard: Card | None = batch.pop() if street.deal > street.place else None
    room = {row: row.size - len(me.board.row(row)) for row in (Row.BOTTOM, Row.MIDDLE, Row.TOP)}
    placements = []
    for card in batch:
        row = next(r for r, free in room.items() if free > 0)
        room[row] -= 1
        placements.append((card, row))
    return engine.Place(seat, tuple(placements), discard, now)


def record_for(
    ruleset: str, seats: int, owed: dict[int, int], pair_units: dict[Any, int] | None = None
) -> Any:
    stakes = {"pair_units": pair_units} if pair_units else {}
    match = engine.new_match(ruleset, seats=seats, **stakes)
    fields = {f.name for f in dataclasses.fields(tables.TableRecord)}
    extra = {"next_server_seed": bytes([9]) * 32} if "next_server_seed" in fields else {}
    record = tables.TableRecord("legacy", match, 1_000, 4_000, b"legacy-table", 0, **extra)
    for seat in range(seats):
        record = apply(record, engine.SitDown(seat, f"p{seat}", seat), seat)
    if owed:
        players = list(record.match.seats)
        for seat, cards in owed.items():
            players[seat] = dataclasses.replace(players[seat], fantasyland=cards)
        match = dataclasses.replace(record.match, seats=tuple(players))
        record = dataclasses.replace(record, match=match)
    return record


def play(record: Any, moves: int, timeouts: set[int]) -> tuple[Any, dict[str, bytes]]:
    """Start a hand at 10 000 ms and make ``moves`` moves, 1 s apart: the ones numbered in
    ``timeouts`` as timeouts of the seat the table waits for last (a Fantasyland seat, when
    one has not set), the others as the first waited-for seat's own placement. The record,
    and the hand's history as the release's table stored it when the hand ended (its
    ``_history_extra``; empty while the hand goes on)."""
    now = 10_000
    record = apply(record, engine.StartHand(SEED, b"legacy-client", now), now)
    stored: dict[str, bytes] = {}
    for k in range(moves):
        now += 1_000
        waiting = engine.seats_to_act(record.match)
        if not waiting:
            break
        action: engine.Action
        if k in timeouts:
            action = engine.Timeout(waiting[-1], now)  # type: ignore[call-arg]
        else:
            action = naive(record.match, waiting[0], now)
        record, events = applied(record, action, now)
        stored = dict(tables._history_extra(SimpleNamespace(record=record, events=events), now))  # type: ignore[arg-type]
    return record, stored


def main(argv: list[str]) -> int:
    out, commit = Path(argv[0]), argv[1]
    shapes = {
        "classic-mid-hand": (record_for("classic", 2, {}), 7, {0, 1, 4}),
        "pineapple-fantasyland-mid-hand": (
            record_for("pineapple", 3, {0: 14, 2: 14}),
            5,
            {1, 3},
        ),
        "classic-hand-over": (record_for("classic", 2, {}), 40, {2, 3}),
    }
    if "pair_units" in inspect.signature(engine.new_match).parameters:  # 75a55fb on
        stakes = {(0, 1): 20, (0, 2): 15}
        shapes["pineapple-pairs-mid-hand"] = (record_for("pineapple", 3, {}, stakes), 6, {1, 4})
    for name, (record, moves, timeouts) in shapes.items():
        played, histories = play(record, moves, timeouts)
        (out / f"{commit}-{name}.json").write_bytes(played.to_bytes() + b"\n")
        if getattr(tables, "RECORD_FORMAT", None) == 1:  # no money kept: the histories give it
            for key, blob in histories.items():
                number = int(key.rpartition(":")[2])
                folder = out / "histories"
                folder.mkdir(exist_ok=True)
                (folder / f"{commit}-{name}-hand-{number:04d}.json").write_bytes(blob)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
