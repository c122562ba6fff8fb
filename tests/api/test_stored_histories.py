"""The hand history a table stores is the one a replay of the hand writes, byte for byte.

The table writes a finished hand's history from the hand as it played it (its final state
and the actions it kept), not from a replay of those actions. Random hands played through
the pipeline, with timeouts, Fantasylands and seats changing hands between hands, compare
the stored bytes with the history :func:`ofc.codec.hand_history` writes by replaying the
table's kept hand start and actions (what the table stored before), and each still verifies.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ofc import engine
from ofc.codec import context_from_dict, hand_history
from ofc.rulesets import PRESETS
from ofc.verify import check_history_json
from ofc_service.application import commands
from ofc_service.application.manager import Request, TableManager
from ofc_service.application.records import HAND_PREFIX, TableRecord, unpack_history
from ofc_service.auth import Authenticator, Credentials
from ofc_service.store import MemoryTableStore

from tests.ofc.test_engine_properties import random_move
from tests.silent import SilentPresenter

KEY = "history-key"
OPERATOR = Credentials(api_key=KEY)
TURN = 100_000
RULESETS = ("classic", "pineapple", "progressive-pineapple", "turbo", "classic-joker")


def _command(move: engine.Action) -> commands.Command:
    if isinstance(move, engine.Timeout):  # the table's own timeout move (its policy's)
        return commands.TimeOut(move.seat)
    if isinstance(move, engine.Place):
        return commands.PlaceCards(move.seat, move.placements, move.discard)
    assert isinstance(move, engine.SetFantasyland)
    return commands.SetFantasyland(move.seat, move.top, move.middle, move.bottom, move.discards)


@pytest.mark.parametrize("name", RULESETS)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_a_stored_history_is_the_replayed_one(name: str, data: st.DataObject) -> None:
    ruleset = PRESETS[name]
    seats = data.draw(st.integers(2, min(3, ruleset.max_players)))
    owed = sorted({e.cards for e in ruleset.fantasyland_entry})
    now = [1_000_000]
    store = MemoryTableStore(clock=lambda: now[0] / 1000)
    manager = TableManager(
        store,
        Authenticator((KEY,)),
        SilentPresenter(),
        clock_ms=lambda: now[0],
        server_seed=lambda: data.draw(st.binary(min_size=32, max_size=32)),
    )
    match, _ = engine.replay(
        engine.new_match(ruleset, seats=seats),
        [engine.SitDown(s, f"p{s}") for s in range(seats)],
    )
    players = tuple(
        dataclasses.replace(s, fantasyland=data.draw(st.sampled_from([0, 0, *owed])))
        for s in match.seats
    )
    match = dataclasses.replace(match, seats=players)
    table = TableRecord("t", match, TURN, 4 * TURN, data.draw(st.binary(max_size=8)), 0)
    requests = iter(range(10**6))

    async def play() -> list[tuple[bytes, str]]:
        version = await manager.create(table)
        written: list[tuple[bytes, str]] = []
        for _ in range(2):
            if data.draw(st.booleans()):  # a seat changes hands between hands
                record, version, _ = await manager.load("t")
                # nobody leaves while a Fantasyland hand earned at the table is owed
                held = any(p.fantasyland for p in record.match.seats)
                free = [] if held else list(range(len(record.match.seats)))
                if free:
                    seat = data.draw(st.sampled_from(free))
                    for change in (
                        commands.LeaveSeat(seat),
                        commands.JoinSeat(seat, f"new{next(requests)}"),
                    ):
                        await manager.run(
                            Request("t", version, f"r{next(requests)}"), change, OPERATOR
                        )
                        version += 1
            await manager.run(
                Request("t", version, f"r{next(requests)}"), commands.StartHand(), OPERATOR
            )
            version += 1
            while True:
                record, version, _ = await manager.load("t")
                waiting = engine.seats_to_act(record.match)
                if not waiting:
                    break
                now[0] += data.draw(st.integers(1, 50))
                move = random_move(data.draw, record.match, data.draw(st.sampled_from(waiting)))
                if isinstance(move, engine.Timeout):  # made once the seat's time is up
                    now[0] = max(now[0], dict(record.seat_deadlines)[move.seat])
                request = Request("t", version, f"r{next(requests)}")
                await manager.run(request, _command(move), OPERATOR)
            hand = record.match.hand
            assert hand is not None and record.hand_start is not None
            raw = await store.get_extra("t", f"{HAND_PREFIX}:{hand.number}")
            assert raw is not None
            stored = unpack_history(raw)
            history = json.loads(stored)
            # What the table wrote before: a replay of the hand start and actions it keeps
            # (the table's context, which this change leaves as it was, read back).
            context = context_from_dict(history) if history["format_version"] >= 3 else None
            replayed = hand_history(record.hand_start, record.hand_actions, context)
            replayed["table_id"], replayed["settled_at_ms"] = "t", history["settled_at_ms"]
            assert stored == json.dumps(replayed, separators=(",", ":")).encode()
            written.append((stored, name))
        return written

    for stored, _ in asyncio.run(play()):
        verdict = check_history_json(stored)
        assert verdict.ok, str(verdict.discrepancy)
