"""Table records written by earlier releases (tests/store/legacy_records, made by its
generate.py at commits 971f768, b8846da and 75a55fb) load, finish their hands and write
histories that verify.

Before record format 4 a timeout was stored without its move (the engine chose it). The
move is recovered from the stored hand, named ``ofc-timeout-4`` when that policy makes the
same move (every record format 3 server ran it), and the hand then goes on as any other:
the table's own deadline sweep plays the seats whose time is up.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from ofc import engine
from ofc.verify import check_history, verify_match
from ofc_service.application import commands
from ofc_service.application.manager import Request, TableManager
from ofc_service.application.records import TableRecord, unpack_history
from ofc_service.application.settlements import SettlementRecord
from ofc_service.auth import Authenticator, Credentials
from ofc_service.store import Commit, MemoryTableStore

from tests.silent import SilentPresenter

RECORDS = Path(__file__).parent / "legacy_records"
FILES = sorted(RECORDS.glob("*.json"))


class Clock:
    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


def test_the_records_are_there() -> None:
    names = {p.name for p in FILES}
    for commit, record_format in (("971f768", 3), ("b8846da", 2), ("75a55fb", 2)):
        for shape in ("classic-mid-hand", "pineapple-fantasyland-mid-hand", "classic-hand-over"):
            path = RECORDS / f"{commit}-{shape}.json"
            assert path.name in names
            assert json.loads(path.read_text())["format"] == record_format
    # 75a55fb to c3fb462 kept a table's stakes in a state of format 1
    staked = json.loads((RECORDS / "75a55fb-pineapple-pairs-mid-hand.json").read_text())
    assert staked["match"]["format_version"] == 1 and staked["match"]["pair_unit_values"]


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_a_legacy_record_loads_with_every_timeout_s_move(path: Path) -> None:
    raw = json.loads(path.read_text())
    record = TableRecord.from_bytes(path.read_bytes())
    stored = [a for a in raw["hand_actions"] if a["type"] == "timeout"]
    recovered = [a for a in record.hand_actions if isinstance(a, engine.Timeout)]
    assert stored and len(recovered) == len(stored)
    assert all("resolved" not in a for a in stored)
    for timeout, old in zip(recovered, stored, strict=True):
        assert (timeout.seat, timeout.at_ms, timeout.deadline_ms) == (
            old["seat"],
            old["at_ms"],
            None,
        )
        assert (timeout.move.seat, timeout.move.at_ms) == (timeout.seat, timeout.at_ms)
    if raw["format"] == 3:  # written by servers running ofc-timeout-4
        assert {t.policy for t in recovered} == {"ofc-timeout-4"}
    else:
        assert {t.policy for t in recovered} <= {"ofc-timeout-4", None}
    # the recovered actions replay to exactly the stored hand
    assert record.hand_start is not None
    replayed, _ = engine.replay(record.hand_start, record.hand_actions)
    assert replayed == record.match
    assert (record.seat_changes, record.hand_seat_changes) == (None, None)
    # and the record is written back in this release's format
    again = TableRecord.from_bytes(record.to_bytes())
    assert again == record and json.loads(record.to_bytes())["format"] == 7


async def finish(raw: bytes, *, now_ms: int = 100_000) -> list[dict[str, Any]]:
    """The table of ``raw`` left to its deadline sweep until its hand is over (and, when it
    was over, the next hand too), its clock starting at ``now_ms``; the histories the table
    wrote."""
    clock = Clock(now_ms)
    store = MemoryTableStore(clock=lambda: clock.ms / 1000)
    manager = TableManager(store, Authenticator(), SilentPresenter(), clock_ms=clock)
    await store.create_table("legacy", raw)
    record, version, _ = await manager.load("legacy")
    hand = record.match.hand
    assert hand is not None
    if hand.over:
        request = Request("legacy", version, "start-2")
        await manager.run(request, commands.StartHand(), _operator(manager))
    record = await _played_out(manager, clock)
    number = record.match.hands_played
    histories = []
    for n in range(1, number + 1):
        stored = await store.get_extra("legacy", f"hand:{n}")
        if stored is not None:
            histories.append(json.loads(unpack_history(stored)))
    return histories


async def _played_out(manager: TableManager, clock: Clock) -> TableRecord:
    """The table's hand left to its deadline sweep until it is over: 5 s a step, or at once
    to the first deadline still ahead."""
    for _ in range(100):
        record, _, _ = await manager.load("legacy")
        if record.match.hand is not None and record.match.hand.over:
            return record
        ahead = [ms for _, ms in record.seat_deadlines if ms > clock.ms]
        clock.ms = max(clock.ms + 5_000, min(ahead, default=0))
        await manager.apply_due_timeouts("legacy")
    raise AssertionError("the hand did not end")


def _operator(manager: TableManager) -> Any:
    from ofc_service.auth import Credentials

    manager.auth = Authenticator(("legacy-key",))
    return Credentials(api_key="legacy-key")


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_a_legacy_record_finishes_its_hand_and_the_history_verifies(path: Path) -> None:
    histories = asyncio.run(finish(path.read_bytes()))
    assert len(histories) == 1
    history = histories[0]
    verdict = check_history(history, check_policy=True)
    assert verdict.ok, str(verdict.discrepancy)
    assert history["format_version"] == 3
    assert history["clock"] == {"turn_time_limit_ms": 1_000, "fantasyland_time_limit_ms": 4_000}
    timeouts = [a for a in history["actions"] if a["type"] == "timeout"]
    if "hand-over" in path.name:  # the next hand, begun and played by this release
        assert history["hand_number"] == 2 and history["seat_changes"] is None
        assert all(t["deadline_ms"] is not None for t in timeouts)
        assert {t["policy"] for t in timeouts} == {"ofc-timeout-4"}
    else:  # a hand begun before: its deadlines were not this release's rule
        assert history["hand_number"] == 1 and history["seat_changes"] is None
        assert all(t["deadline_ms"] is None for t in timeouts)


HISTORIES = RECORDS / "histories"


async def _next_hand(raw: bytes, stored: dict[str, bytes]) -> tuple[list[Any], list[Any]]:
    """The table of ``raw`` (a hand over), its finished hands' histories ``stored`` as its
    release kept them: the next hand begun and left to the deadline sweep; every history
    the table holds then, and the settlement records it wrote."""
    clock = Clock(100_000)
    store = MemoryTableStore(clock=lambda: clock.ms / 1000)
    manager = TableManager(store, Authenticator(("legacy-key",)), SilentPresenter(), clock_ms=clock)
    version = (await store.create_table("legacy", raw)).version
    await store.commit(Commit("legacy", version, raw, "kept", None, extra=stored))
    _, version, _ = await manager.load("legacy")
    request = Request("legacy", version, "start-next")
    await manager.run(request, commands.StartHand(), Credentials(api_key="legacy-key"))
    await _played_out(manager, clock)
    page = await store.list_extra("legacy", "hand", start=1, count=100)
    outbox = await store.read_outbox("legacy")
    return [json.loads(unpack_history(blob)) for _, blob in page.items], list(outbox.values())


def test_a_table_stored_before_money_was_kept_takes_it_from_its_hands() -> None:
    """Record format 1 (2dc7389 to aa9fec1) kept no money. The table's finished hands'
    histories give it: the next hand's history says the money the chain from hand 1 gives,
    so the whole match verifies as one, and the settlement feed's running totals agree."""
    raw = (RECORDS / "aa9fec1-classic-hand-over.json").read_bytes()
    assert json.loads(raw)["format"] == 1 and "seat_units" not in json.loads(raw)
    first = (HISTORIES / "aa9fec1-classic-hand-over-hand-0001.json").read_bytes()
    won = {p["seat"]: p["units"] for p in json.loads(first)["settlement"]["players"]}
    assert any(won.values())  # money moved in hand 1
    histories, feed = asyncio.run(_next_hand(raw, {"hand:1": first}))
    assert [h["hand_number"] for h in histories] == [1, 2]
    second = histories[1]
    assert second["seat_units"] == [won[0], won[1]]
    report = verify_match([(f"hand-{h['hand_number']}", h) for h in histories])
    assert report.ok, report.discrepancies
    (record,) = [SettlementRecord.from_bytes(r) for r in feed]
    totals = {s.seat: s.total_units for s in record.seats}
    assert totals == {s: won[s] + s_units for s, s_units in _units(second).items()}


def _units(history: dict[str, Any]) -> dict[int, int]:
    return {p["seat"]: p["units"] for p in history["settlement"]["players"]}


def test_without_its_hands_a_table_s_money_stays_not_known() -> None:
    """Were its finished hands' histories gone, the money stays not known: the next hand's
    history says so (``seat_units`` null) rather than count it from 0."""
    raw = (RECORDS / "aa9fec1-classic-hand-over.json").read_bytes()
    histories, _ = asyncio.run(_next_hand(raw, {}))
    (second,) = histories
    assert second["hand_number"] == 2 and second["seat_units"] is None
    verdict = check_history(second, check_policy=True)
    assert verdict.ok, str(verdict.discrepancy)
