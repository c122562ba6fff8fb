"""Turn clocks at a live table, on a clock the test moves (no sleeping, nothing timed).

The rule (docs/hand-history.md, "Turn clocks"): a seat playing street by street gets a full
turn for each batch it is dealt, from the move that dealt it; a Fantasyland seat has one
clock for the hand, from its start. The sweep plays a seat's timeout exactly when its time
is up, never a millisecond before, and the history records each deadline, which the
verifier checks by the same rule.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from ofc import engine
from ofc.policy import TIMEOUT_POLICY
from ofc.rulesets import Row
from ofc.verify import Code, check_history
from ofc_service.application import commands
from ofc_service.application.manager import Request, TableManager
from ofc_service.application.records import TableRecord, unpack_history
from ofc_service.auth import Authenticator, Credentials
from ofc_service.store import MemoryTableStore

from tests.silent import SilentPresenter

TURN, FANTASYLAND = 1_000, 4_000
START = 1_000_000
KEY = "clock-key"
OPERATOR = Credentials(api_key=KEY)


def batch_placed(match: engine.MatchState, seat: int) -> commands.PlaceCards:
    """The seat's batch placed bottom first (the last card discarded on a street with a
    discard)."""
    hand = match.hand
    assert hand is not None
    me = hand.seat(seat)
    batch = list(me.pending)
    street = match.ruleset.streets[hand.street]
    discard = batch.pop() if street.deal > street.place else None
    room = {r: r.size - len(me.board.row(r)) for r in (Row.BOTTOM, Row.MIDDLE, Row.TOP)}
    placements = []
    for card in batch:
        row = next(r for r, free in room.items() if free)
        room[row] -= 1
        placements.append((card, row))
    return commands.PlaceCards(seat, tuple(placements), discard)


class Table:
    """One table on an in-memory store, its manager reading ``self.now``."""

    def __init__(self, ruleset: str, seats: int, owed: dict[int, int]) -> None:
        self.now = START - 100
        self.store = MemoryTableStore(clock=lambda: self.now / 1000)
        self.manager = TableManager(
            self.store, Authenticator((KEY,)), SilentPresenter(), clock_ms=lambda: self.now
        )
        match, _ = engine.replay(
            engine.new_match(ruleset, seats=seats),
            [engine.SitDown(s, f"p{s}") for s in range(seats)],
        )
        players = [
            dataclasses.replace(s, fantasyland=owed.get(i, 0)) for i, s in enumerate(match.seats)
        ]
        match = dataclasses.replace(match, seats=tuple(players))
        self.record = TableRecord("clock", match, TURN, FANTASYLAND, b"", 0)
        self.version = 0
        self.requests = 0

    def run(self, job: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        return asyncio.run(job())

    async def _create(self) -> None:
        await self.manager.create(self.record)

    async def _refresh(self) -> None:
        self.record, self.version, _ = await self.manager.load("clock")

    async def _change(self, command: commands.Command) -> None:
        self.requests += 1
        request = Request("clock", self.version, f"r{self.requests}")
        await self.manager.run(request, command, OPERATOR)
        await self._refresh()

    def start(self) -> None:
        async def job() -> None:
            await self._create()
            await self._refresh()
            self.now = START
            await self._change(commands.StartHand())

        self.run(job)

    def place(self, seat: int, at: int) -> None:
        """The seat places its batch at ``at`` (:func:`batch_placed`)."""
        self.now = at
        move = batch_placed(self.record.match, seat)
        self.run(lambda: self._change(move))

    def sweep(self, at: int) -> int:
        """The deadline sweep at ``at``: how many timeouts it played (one per call)."""
        self.now = at

        async def job() -> int:
            applied = await self.manager.apply_due_timeouts("clock")
            await self._refresh()
            return applied

        return int(self.run(job))

    @property
    def deadlines(self) -> dict[int, int]:
        return dict(self.record.seat_deadlines)

    def history(self) -> dict[str, Any]:
        async def job() -> bytes | None:
            return await self.store.get_extra("clock", "hand:1")

        raw = self.run(job)
        assert raw is not None
        history: dict[str, Any] = json.loads(unpack_history(raw))
        return history


def test_the_one_seat_left_playing_gets_a_full_turn_for_each_batch() -> None:
    """Pineapple, seats 0 and 2 in Fantasyland: seat 1 alone is dealt street by street. It
    used to keep its first batch's deadline for the later ones (timed out 760-940 ms early)."""
    table = Table("pineapple", 3, {0: 14, 2: 14})
    table.start()
    assert table.deadlines == {1: START + TURN, 0: START + FANTASYLAND, 2: START + FANTASYLAND}
    table.place(1, START + 700)  # street 2 dealt to it at +700: a turn from there
    assert table.deadlines[1] == START + 700 + TURN
    table.place(1, START + 1_500)
    assert table.deadlines[1] == START + 1_500 + TURN
    assert table.sweep(START + 2_499) == 0  # one millisecond before: nothing
    assert table.sweep(START + 2_500) == 1  # its timeout, at its own deadline
    assert table.deadlines[1] == START + 2_500 + TURN  # the timeout dealt its next batch
    assert table.deadlines[0] == table.deadlines[2] == START + FANTASYLAND  # unchanged


def test_several_seats_each_get_a_full_turn_from_their_deal() -> None:
    table = Table("classic", 3, {})
    table.start()
    first = table.record.match.hand
    assert first is not None and first.order == (1, 2, 0)
    assert table.deadlines == {1: START + TURN}
    table.place(1, START + 400)
    assert table.deadlines == {2: START + 400 + TURN}
    assert table.sweep(START + 1_399) == 0
    assert table.sweep(START + 1_400) == 1  # seat 2 timed out: seat 0 is dealt at +1400
    assert table.deadlines == {0: START + 1_400 + TURN}
    table.place(0, START + 2_000)  # street 2: seat 1 again, a full turn from +2000
    assert table.deadlines == {1: START + 2_000 + TURN}


def test_fantasyland_seats_race_their_one_deadline_from_the_start() -> None:
    """Classic, 4 seats, two in Fantasyland: their clocks run from the start whatever the
    others do; both run out at the same millisecond, one timeout per sweep call."""
    table = Table("classic", 4, {2: 13, 3: 13})
    table.start()
    assert table.deadlines[2] == table.deadlines[3] == START + FANTASYLAND
    for k in range(3):  # the street seats play on; the Fantasyland clocks do not move
        seat = engine.seats_to_act(table.record.match)[0]
        table.place(seat, START + 500 * (k + 1))
        assert table.deadlines[2] == table.deadlines[3] == START + FANTASYLAND
    street_seat = engine.seats_to_act(table.record.match)[0]
    assert table.deadlines[street_seat] == START + 1_500 + TURN  # dealt at the third move
    assert table.sweep(START + 2_500) == 1  # its turn runs out; the next seat is dealt
    table.place(engine.seats_to_act(table.record.match)[0], START + 3_400)
    assert table.sweep(START + FANTASYLAND - 1) == 0  # nobody's time is up yet
    for _ in range(2):  # both Fantasyland seats' at the same millisecond, one per call
        assert table.sweep(START + FANTASYLAND) == 1
    assert table.sweep(START + FANTASYLAND) == 0  # the street seat has until +4400
    assert {2, 3}.isdisjoint(engine.seats_to_act(table.record.match))
    assert set(table.deadlines.values()) == {START + 3_400 + TURN}


def test_a_fantasyland_set_does_not_restart_the_street_seat_s_clock() -> None:
    table = Table("pineapple", 3, {0: 14})
    table.start()
    turn = table.record.match.hand
    assert turn is not None and turn.turn is not None
    before = table.deadlines[turn.turn]
    table.now = START + 300
    top, middle, bottom, discards = _solved(table)
    move = commands.SetFantasyland(0, top, middle, bottom, tuple(discards))
    table.run(lambda: table._change(move))
    assert table.deadlines == {turn.turn: before}


def _solved(table: Table) -> tuple[Any, ...]:
    from ofc.solver import solve_fantasyland

    hand = table.record.match.hand
    assert hand is not None
    s = solve_fantasyland(hand.seat(0).pending, table.record.match.ruleset, in_fantasyland=True)
    return s.top, s.middle, s.bottom, s.discards


def test_a_hand_of_timeouts_records_its_deadlines_and_they_verify() -> None:
    """Every shape in one hand: the one seat left playing times out batch after batch, the
    Fantasyland seats at their one deadline. The history carries the clock and every
    deadline; the verifier checks them, and catches a deadline or a time moved."""
    table = Table("pineapple", 3, {0: 14, 2: 14})
    table.start()
    at = START
    while engine.seats_to_act(table.record.match):
        at = min(table.deadlines.values())
        assert table.sweep(at) == 1
    history = table.history()
    assert history["clock"] == {"turn_time_limit_ms": TURN, "fantasyland_time_limit_ms": 4_000}
    timeouts = [(i, a) for i, a in enumerate(history["actions"]) if a["type"] == "timeout"]
    street = [a["deadline_ms"] for _, a in timeouts if a["seat"] == 1]
    assert street == [START + TURN * k for k in range(1, 6)]  # each batch its own turn
    assert sorted(a["deadline_ms"] for _, a in timeouts if a["seat"] != 1) == [START + 4_000] * 2
    assert all(a["at_ms"] == a["deadline_ms"] for _, a in timeouts)
    assert check_history(history, check_policy=True).ok
    index, _ = timeouts[1]
    early = json.loads(json.dumps(history))
    early["actions"][index]["deadline_ms"] -= 760  # the old rule's deadline
    found = check_history(early).discrepancy
    assert found is not None and (found.code, found.location) == (
        Code.DEADLINE_MISMATCH,
        f"actions[{index}].deadline_ms",
    )


class RecordingPolicy:
    """ofc-timeout-4, noting the thread of each choice (or choosing another, scripted move)."""

    name, version = TIMEOUT_POLICY.name, TIMEOUT_POLICY.version

    def __init__(self) -> None:
        self.threads: list[int] = []

    def choose(self, state: engine.MatchState, seat: int) -> engine.Place | engine.SetFantasyland:
        self.threads.append(threading.get_ident())
        return TIMEOUT_POLICY.choose(state, seat)


def test_the_sweep_chooses_the_default_move_off_the_event_loop() -> None:
    # Choosing takes tens of milliseconds (more on a big street): the replica's other calls
    # must go on meanwhile, so the sweep asks the policy in a worker thread and the step
    # applies that move, not a second choice on the loop.
    table = Table("classic", 2, {})
    policy = RecordingPolicy()
    table.manager.policy = policy
    table.start()
    loop_threads: list[int] = []

    async def job() -> int:
        loop_threads.append(threading.get_ident())
        return await table.manager.apply_due_timeouts("clock")

    table.now = START + TURN
    assert table.run(job) == 1
    assert len(policy.threads) == 1 and policy.threads[0] != loop_threads[0]
    table.run(table._refresh)
    (timed_out,) = [a for a in table.record.hand_actions if isinstance(a, engine.Timeout)]
    assert timed_out.at_ms == timed_out.move.at_ms == START + TURN
    assert timed_out.policy == "ofc-timeout-4"


def test_a_move_chosen_for_another_state_is_chosen_again() -> None:
    table = Table("classic", 2, {})
    policy = RecordingPolicy()
    table.manager.policy = policy
    table.start()
    seat = table.record.match.hand.turn if table.record.match.hand else None
    assert seat is not None
    chosen = TIMEOUT_POLICY.choose(table.record.match, seat)
    other = dataclasses.replace(table.record.match)  # equal, but not the match the step meets
    table.now = START + TURN
    table.run(lambda: table._change(commands.TimeOut(seat, chosen, other)))
    assert len(policy.threads) == 1  # asked again, in the step
    table.run(lambda: table._change(commands.TimeOut(1 - seat, None, None)))
    assert len(policy.threads) == 2


def test_of_two_replicas_sweeping_a_due_table_one_chooses_the_move() -> None:
    # Every replica's sweeper finds the same due table; the policy's choice costs tens of
    # milliseconds, so only the replica that claims the timeout makes it.
    table = Table("classic", 2, {})
    first, second = RecordingPolicy(), RecordingPolicy()
    table.manager.policy = first
    other = TableManager(
        table.store, Authenticator((KEY,)), SilentPresenter(), clock_ms=lambda: table.now
    )
    other.policy = second
    table.start()
    table.now = START + TURN

    async def both() -> list[int]:
        return list(
            await asyncio.gather(
                table.manager.apply_due_timeouts("clock"), other.apply_due_timeouts("clock")
            )
        )

    assert sorted(table.run(both)) == [0, 1]
    assert len(first.threads) + len(second.threads) == 1
    table.run(table._refresh)
    assert sum(isinstance(a, engine.Timeout) for a in table.record.hand_actions) == 1
