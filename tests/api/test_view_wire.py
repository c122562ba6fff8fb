"""A move's response view and events, put together as wire bytes, are what the message API
writes.

``table_view_bytes`` (``ofc_service.api.view_wire``) writes a ``TableView`` without building
the message; the bytes must be ``table_view``'s serialised, byte for byte, for every viewer
(each seat and a spectator, in any order) at every step of random play: Fantasyland sets
face down, a seat's new player, money totals, own client seeds, deadlines, pair unit
values, both client seed policies. The events of a move (``move_event_bytes``) likewise, for
every event of random play in every audience's copy.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ofc import engine
from ofc.rulesets import PRESETS
from ofc_service.api import view_wire
from ofc_service.api.tables import (
    decode_event,
    encode_event,
    event_to_proto,
    table_view,
    table_view_bytes,
)
from ofc_service.application.records import POLICY_PLAYERS, POLICY_TABLE, TableRecord
from ofcpoker.v1 import cards_pb2, settlement_pb2
from ofcpoker.v1 import table_service_pb2 as pb

from tests.api.wire import assert_field_numbers
from tests.ofc.test_engine_properties import Draw, play_hand, tables

MESSAGES: dict[str, Any] = {
    message.DESCRIPTOR.name: message
    for message in (
        pb.TableView, pb.SeatView, pb.HandView, pb.HandSeatView, cards_pb2.Board,
        settlement_pb2.PairUnitValue, pb.TableEvent, pb.CardsDealtEvent, pb.CardsPlacedEvent,
        pb.DiscardMadeEvent, pb.Placement,
    )
}  # fmt: skip


def test_the_encoder_knows_every_field_of_the_protos() -> None:
    assert_field_numbers(MESSAGES, view_wire.FIELD_NUMBERS)


@st.composite
def records(draw: st.DrawFn, state: engine.MatchState, start: engine.MatchState) -> TableRecord:
    """A record of ``state`` (its hand started from ``start``) with random table fields."""
    size = len(state.seats)
    if draw(st.booleans()):  # a seat's player left and another sat down since the hand began
        seat = draw(st.integers(0, size - 1))
        seats = list(state.seats)
        seats[seat] = dataclasses.replace(seats[seat], player_id="newcomer")
        state = dataclasses.replace(state, seats=tuple(seats))
    seeds = draw(st.lists(st.tuples(st.integers(0, size - 1), st.binary(max_size=9))))
    return TableRecord(
        draw(st.sampled_from(["t", "table-é", "x" * 200])),
        state,
        draw(st.integers(1_000, 3_600_000)),
        120_000,
        draw(st.binary(max_size=12)),
        0,
        hand_start=start,
        seat_deadlines=tuple(
            draw(st.lists(st.tuples(st.integers(0, size - 1), st.integers(0, 2**42))))
        ),
        seat_units=tuple(draw(st.lists(st.integers(-(2**40), 2**40), max_size=size))),
        client_seed_policy=draw(st.sampled_from([POLICY_TABLE, POLICY_PLAYERS])),
        seat_client_seeds=tuple(dict(seeds).items()),
        next_server_seed=draw(st.sampled_from([b"", bytes(32)])),
        leaving_seats=tuple(sorted(draw(st.sets(st.integers(0, size - 1))))),
    )


def _pair_units(draw: Draw, size: int) -> tuple[tuple[int, int, int], ...]:
    pairs = draw(st.lists(st.sampled_from(list(itertools.combinations(range(size), 2)))))
    return tuple((a, b, draw(st.integers(1, 10**6))) for a, b in sorted(set(pairs)))


@pytest.mark.parametrize("name", sorted(PRESETS))
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_a_moves_view_is_what_protobuf_writes_for_every_viewer(
    name: str, data: st.DataObject
) -> None:
    state = data.draw(tables(PRESETS[name]))
    size = len(state.seats)
    state = dataclasses.replace(state, pair_units=_pair_units(data.draw, size))
    viewers = [None, *range(size)]
    for _ in range(2):  # two hands: the second plays the Fantasylands the first earned
        start = state
        for step, _action, _events in play_hand(data.draw, start, checks=False):
            state = step
            record = data.draw(records(state, start))
            version = data.draw(st.sampled_from([1, 300, 2**40]))
            for viewer in data.draw(st.permutations(viewers)):  # any audience first
                expected = table_view(record, version, viewer).SerializeToString()
                assert table_view_bytes(record, version, viewer) == expected, viewer


def test_a_face_down_fantasyland_set_stays_hidden_from_everyone_else() -> None:
    ruleset = PRESETS["classic"]
    seats = (engine.Seat("a", fantasyland=14, fantasyland_streak=1), engine.Seat("b"))
    state, _ = engine.apply(engine.MatchState(ruleset, seats), engine.StartHand(bytes(32)))
    assert state.hand is not None
    cards = state.hand.seat(0).pending
    state, _ = engine.apply(
        state,
        engine.SetFantasyland(0, cards[:3], cards[3:8], cards[8:13], cards[13:]),
    )
    record = TableRecord("t", state, 30_000, 120_000, b"", 0, hand_start=state)
    for viewer in (0, None, 1, 0, None):  # each audience again after the others
        view = pb.TableView.FromString(table_view_bytes(record, 7, viewer))
        (fantasyland,) = [s for s in view.hand.seats if s.seat == 0]
        assert fantasyland.board_hidden == (viewer != 0)
        assert len(fantasyland.board.top) == (3 if viewer == 0 else 0)
        assert table_view_bytes(record, 7, viewer) == (
            table_view(record, 7, viewer).SerializeToString()
        )


def test_the_seats_written_follow_the_money_and_seeds_of_the_same_seats() -> None:
    """The seats' bytes are kept by the record's tuple of seats, which a hand's moves keep:
    a record with the same seats and other money or players' seeds is written anew."""
    seats = (engine.Seat("a", points=3), engine.Seat("b", points=-3))
    state = engine.MatchState(PRESETS["classic"], seats)
    views = []
    for units, own_seeds in (((), ()), ((60, -60), ()), ((60, -60), ((1, b"bob"),)), ((), ())):
        record = TableRecord(
            "t", state, 30_000, 120_000, b"", 0,
            seat_units=units, client_seed_policy=POLICY_PLAYERS, seat_client_seeds=own_seeds,
        )  # fmt: skip
        assert record.match.seats is seats
        wire = table_view_bytes(record, 4, None)
        assert wire == table_view(record, 4, None).SerializeToString()
        view = pb.TableView.FromString(wire)
        views.append([(s.points, s.units, s.client_seed) for s in view.seats])
    assert views == [
        [(3, 0, b""), (-3, 0, b"")],
        [(3, 60, b""), (-3, -60, b"")],
        [(3, 60, b""), (-3, -60, b"bob")],
        [(3, 0, b""), (-3, 0, b"")],
    ]


@pytest.mark.parametrize("name", sorted(PRESETS))
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_a_moves_events_are_what_protobuf_writes_in_every_copy(
    name: str, data: st.DataObject
) -> None:
    state = data.draw(tables(PRESETS[name]))
    viewers = [None, *range(len(state.seats))]
    written = set()
    for _ in range(2):  # two hands: the second plays the Fantasylands the first earned
        start = state
        for step, _action, events in play_hand(data.draw, start, checks=False):
            state = step
            ids = tuple(s.player_id for s in state.seats)
            version = data.draw(st.sampled_from([1, 300, 2**40]))
            for event in events:
                for viewer in viewers:
                    copy = engine.event_for_viewer(event, viewer)
                    wire = view_wire.move_event_bytes(copy, version)
                    if wire is not None:
                        written.add(type(event))
                        assert wire == event_to_proto(copy, version, ids).SerializeToString()
            record = TableRecord("t", state, 30_000, 120_000, b"", 0, hand_start=start)
            for event in events:  # every stored copy parses back to the message's own
                blob = encode_event(event, version, record)
                for viewer in viewers:
                    copy = engine.event_for_viewer(event, viewer)
                    expected = event_to_proto(copy, version, ids)
                    if isinstance(event, engine.HandStarted):
                        expected.hand_started.next_commitment = record.next_commitment
                    assert decode_event(blob, viewer, "") == expected
    assert engine.CardsDealt in written and engine.CardsPlaced in written
