"""Table records of format 7 as a release wrote them (tests/store/format7_records, made by its
generate.py) read as that release meant them, and their tables play on.

Format 7's parts are binary and read by their bytes, so a change to how a part is read can
misread every record of live tables left by the release before, without any round-trip
test of today's code noticing. Each file here comes with every field of the record as the
release that wrote it read it (``<shape>.expected.json``); today's reading must give the same,
the hand must replay to the stored table, and the table must finish its hand (its seats'
clocks left to run out) with a history that verifies.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from ofc import engine
from ofc.codec import action_to_dict, state_to_dict
from ofc.verify import check_history

RECORDS = Path(__file__).parent / "format7_records"
FILES = sorted(RECORDS.glob("*.record.json"))
SHAPES = (
    "classic-mid-hand",
    "pineapple-fantasyland-mid-hand",
    "pineapple-jokers-mid-hand",
    "tiers-mid-hand",
    "house-rules-hand-over",
    "pineapple-leaving-mid-hand",
)


def describe(record: Any) -> dict[str, Any]:
    """Every field of a :class:`~ofc_service.application.records.TableRecord` as JSON."""

    def changes(found: Any) -> Any:
        return None if found is None else [action_to_dict(a) for a in found]

    start = record.hand_start
    return {
        "table_id": record.table_id,
        "match": state_to_dict(record.match),
        "turn_time_limit_ms": record.turn_time_limit_ms,
        "fantasyland_time_limit_ms": record.fantasyland_time_limit_ms,
        "client_seed": record.client_seed.hex(),
        "created_at_ms": record.created_at_ms,
        "seat_tokens": [list(t) for t in record.seat_tokens],
        "hand_start": None if start is None else state_to_dict(start),
        "hand_actions": [action_to_dict(a) for a in record.hand_actions],
        "seat_deadlines": [list(d) for d in record.seat_deadlines],
        "seat_units": None if record.seat_units is None else list(record.seat_units),
        "client_seed_policy": record.client_seed_policy,
        "seat_client_seeds": [[s, seed.hex()] for s, seed in record.seat_client_seeds],
        "next_server_seed": record.next_server_seed.hex(),
        "seat_changes": changes(record.seat_changes),
        "hand_seat_changes": changes(record.hand_seat_changes),
        "hand_deadlines": record.hand_deadlines,
        "leaving_seats": list(record.leaving_seats),
        "leaving_changes": [list(c) for c in record.leaving_changes],
    }


# Fields a release before them did not describe, as it read every record: no seat marked
# leaving (1dfdb1f on; an earlier release's head had no such keys)
LATER_FIELDS: dict[str, Any] = {"leaving_seats": [], "leaving_changes": []}


def test_the_format_7_records_are_there() -> None:
    found = {p.name.split("-", 1)[1].removesuffix(".record.json") for p in FILES}
    assert found == set(SHAPES)
    for path in FILES:
        assert json.loads(path.read_bytes())["format"] == 7
        assert path.with_name(path.name.replace(".record.", ".expected.")).exists()


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_a_format_7_record_reads_as_its_release_read_it(path: Path) -> None:
    from ofc_service.application.records import TableRecord

    record = TableRecord.from_bytes(path.read_bytes())
    expected = json.loads(path.with_name(path.name.replace(".record.", ".expected.")).read_text())
    assert describe(record) == {**LATER_FIELDS, **expected}
    assert record.hand_start is not None
    replayed, _ = engine.replay(record.hand_start, record.hand_actions)
    assert replayed == record.match
    # hidden while the hand is played: a Fantasyland seat's set, the deck, the next seed
    hand = record.match.hand
    assert hand is not None
    if "fantasyland" in path.name:
        assert hand.seat(1).in_fantasyland and len(hand.seat(1).pending) == 14


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_a_format_7_table_plays_on_and_its_history_verifies(path: Path) -> None:
    from tests.store.test_legacy_records import finish

    expected = json.loads(path.with_name(path.name.replace(".record.", ".expected.")).read_text())
    now_ms = expected["hand_actions"][-1]["at_ms"]  # the clock as the record was written
    histories = asyncio.run(finish(path.read_bytes(), now_ms=now_ms))
    (history,) = histories
    assert check_history(history).ok
    # the hand the record held, or the next one: its number, seed and the money before it
    from ofc_service.application.records import TableRecord

    hand = TableRecord.from_bytes(path.read_bytes()).match.hand
    assert hand is not None
    if hand.over:
        assert history["hand_number"] == hand.number + 1
        assert history["server_seed"] == expected["next_server_seed"]
    else:
        assert history["hand_number"] == hand.number
        assert history["server_seed"] == expected["hand_actions"][0]["server_seed"]
    assert history["seat_units"] == expected["seat_units"]  # after a hand over: its result in


def test_a_format_7_seat_marked_leaving_is_stood_up_by_the_change_that_ends_its_hand() -> None:
    from ofc_service.application.manager import TableManager
    from ofc_service.auth import Authenticator
    from ofc_service.store import MemoryTableStore

    from tests.silent import SilentPresenter
    from tests.store.test_legacy_records import Clock, _played_out

    (path,) = (p for p in FILES if p.name.endswith("-pineapple-leaving-mid-hand.record.json"))
    expected = json.loads(path.with_name(path.name.replace(".record.", ".expected.")).read_text())
    assert (expected["leaving_seats"], expected["leaving_changes"]) == ([2], [[0, 2], [2, 1]])

    async def played_out() -> Any:
        clock = Clock(expected["hand_actions"][-1]["at_ms"])
        store = MemoryTableStore(clock=lambda: clock.ms / 1000)
        manager = TableManager(store, Authenticator(), SilentPresenter(), clock_ms=clock)
        await store.create_table("legacy", path.read_bytes())
        return await _played_out(manager, clock)

    record = asyncio.run(played_out())
    players = [seat.player_id for seat in record.match.seats]
    assert players == ["player-0", "player-1", ""]  # seat 0 withdrew its mark: it stays
    assert (record.leaving_seats, record.leaving_changes) == ((), ())
    # in the commit of the timeout that ended the hand, at its time: the next hand's change
    assert record.match.hand is not None and record.match.hand.over
    assert record.seat_changes == (engine.StandUp(2, at_ms=record.hand_actions[-1].at_ms),)
