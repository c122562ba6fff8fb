"""Settlement records: ids, points and money per seat and per pair, zero-sum, the loss cap's
rounding rule, running totals, and the table record's money field (format 2, reads 1)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ofc import engine
from ofc.engine import HandSettled, Seat, SeatTaken, SeatVacated, SitDown, StartHand
from ofc.policy import timeout
from ofc.rulesets import resolve_ruleset
from ofc.scoring import Board, settle
from ofc_service.application.records import NewerRecordError, TableRecord
from ofc_service.application.settlements import (
    PairSettlement,
    SeatSettlement,
    SettlementRecord,
    money_totals,
    parse_settlement_id,
    settlement_id,
)

from tests.records4 import format_4

CAPPED = resolve_ruleset({"preset": "classic", "loss_cap": 5, "unit_value": 25})
FOULED = Board.parse("Ac Ad 2c / Kc Kd 9h 8s 4c / 9c 8c 7d 6h 5s")  # middle beats bottom
KING_HIGH = Board.parse("Ks 3c 2d / 5c 5d 9d 8h 4d / 7c 7h Qd Js 4s")
TRIP_JACKS = Board.parse("Qs 3h 2s / 6c 6d Td Th 3s / Jc Jh Qc Jd Ts")


def test_a_three_player_capped_hand_is_cut_by_largest_remainder_and_stays_zero_sum() -> None:
    """cy (seat 2) fouls: she owes ann and bob 6 points each, 12 in all, but may lose only 5.
    Each payment is cut in proportion: 6 x 5 / 12 = 2.5 each; the whole parts (2 + 2) leave
    1 point, which goes to the larger remainder, and on a tie (0.5 = 0.5) to the player
    earlier in the hand's order (HandSettled.seats): ann (seat 0) gets 3, bob (seat 1) 2.
    Money is capped points x 25, so it is never rounded."""
    result = settle([FOULED, KING_HIGH, TRIP_JACKS], CAPPED)  # players 0, 1, 2 = seats 2, 0, 1
    seats = (2, 0, 1)
    match = dataclasses.replace(
        engine.new_match(CAPPED, seats=3),
        seats=(Seat("ann", 2 + 10), Seat("bob", 3), Seat("cy", -5 - 10)),
    )
    event = HandSettled(4, seats, (FOULED, KING_HIGH, TRIP_JACKS), result, (), (-15, 12, 3), 99)
    units = money_totals((250, 0, -250), 3, [event])
    record = SettlementRecord.from_event("tbl", event, match, units, settled_at_ms=1234)

    assert record.settlement_id == "tbl:4" and record.hand_number == 4
    assert (record.ruleset, record.unit_value, record.loss_cap) == ("classic+custom", 25, 5)
    assert record.seats == (
        SeatSettlement(0, "ann", 2, 50, 12, 300, False),  # +3 from cy, -1 to bob
        SeatSettlement(1, "bob", 3, 75, 3, 75, False),  # +2 from cy, +1 from ann
        SeatSettlement(2, "cy", -5, -125, -15, -375, True),
    )
    assert record.pairs == (
        PairSettlement(2, 0, -6, -3, 25, -75),
        PairSettlement(2, 1, -6, -2, 25, -50),
        PairSettlement(0, 1, -1, -1, 25, -25),
    )
    assert sum(s.points for s in record.seats) == 0 and sum(s.units for s in record.seats) == 0
    assert SettlementRecord.from_bytes(record.to_bytes()) == record
    assert json.loads(record.to_bytes())["format"] == 2
    assert json.loads(record.to_bytes())["seats"][0]["fantasyland_next_cards"] == 0

    # The tie goes by the hand's order, not the seat number: with bob (seat 1) before ann
    # (seat 0) in the hand, bob gets the 3 points from cy.
    bob_first = dataclasses.replace(event, seats=(2, 1, 0))
    units = money_totals((0, 0, 0), 3, [bob_first])
    record = SettlementRecord.from_event("tbl", bob_first, match, units, settled_at_ms=0)
    assert [(p.seat_a, p.seat_b, p.capped_points) for p in record.pairs] == [
        (2, 1, -3), (2, 0, -2), (1, 0, -1)
    ]  # fmt: skip


def test_a_record_that_does_not_add_up_is_refused() -> None:
    good = SettlementRecord(
        "t:1", "t", 1, "classic", 1, None, 0,
        (SeatSettlement(0, "a", 6, 6, 6, 6, False), SeatSettlement(1, "b", -6, -6, -6, -6, True)),
        (PairSettlement(0, 1, 6, 6, 1, 6),),
    )  # fmt: skip
    good.check()
    with pytest.raises(ValueError, match="zero-sum"):
        dataclasses.replace(good, seats=(good.seats[0],)).check()
    with pytest.raises(ValueError, match="pairs"):
        dataclasses.replace(good, pairs=(PairSettlement(0, 1, 5, 5, 1, 5),)).check()
    with pytest.raises(ValueError, match="unit"):
        dataclasses.replace(good, pairs=(PairSettlement(0, 1, 6, 6, 2, 6),)).check()


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("t:1", ("t", 1)), ("a:b:12", ("a:b", 12)), ("x", None), ("t:", None), ("t:01", None)],
)
def test_settlement_ids_round_trip(text: str, parsed: tuple[str, int] | None) -> None:
    if parsed is None:
        with pytest.raises(ValueError, match="invalid settlement id"):
            parse_settlement_id(text)
    else:
        assert parse_settlement_id(text) == parsed
        assert settlement_id(*parsed) == text


def test_money_totals_add_hands_and_restart_with_a_new_player() -> None:
    result = settle([FOULED, KING_HIGH], CAPPED)  # 5 points capped: 125 units
    hand = HandSettled(1, (1, 0), (FOULED, KING_HIGH), result, (), (0, 0), 0)
    totals = money_totals((), 3, [hand, hand])
    assert totals == (250, -250, 0)
    assert money_totals(totals, 3, [SeatVacated(1, "x", 0), SeatTaken(1, "y")]) == (250, 0, 0)


@settings(max_examples=15)  # each example plays two whole hands
@given(
    players=st.integers(2, 3),
    loss_cap=st.sampled_from([None, 1, 4, 9]),
    unit_value=st.sampled_from([1, 7, 100]),
    seed=st.binary(min_size=32, max_size=32),
)
def test_every_played_hand_gives_a_zero_sum_record_matching_the_totals(
    players: int, loss_cap: int | None, unit_value: int, seed: bytes
) -> None:
    rules = resolve_ruleset({"preset": "classic", "loss_cap": loss_cap, "unit_value": unit_value})
    state = engine.new_match(rules, seats=players)
    units: tuple[int, ...] = ()
    for seat in range(players):
        state, events = engine.apply(state, SitDown(seat, f"p{seat}"))
    for number in (1, 2):
        state, events = engine.apply(state, StartHand(seed, b"c", number))
        settled = []
        while engine.seats_to_act(state):
            state, events = engine.apply(state, timeout(state, engine.seats_to_act(state)[0]))
            units = money_totals(units, players, events)
            settled += [e for e in events if isinstance(e, HandSettled)]
        (event,) = settled
        record = SettlementRecord.from_event("t", event, state, units, settled_at_ms=0)
        assert record.hand_number == number
        for s in record.seats:
            assert (s.total_points, s.total_units) == (state.seats[s.seat].points, units[s.seat])
            assert s.units == s.points * unit_value  # one unit value at a table
    assert sum(units) == 0 and sum(s.points for s in state.seats) == 0


def test_the_table_record_keeps_money_and_seeds_and_still_reads_formats_1_to_6() -> None:
    state, _ = engine.replay(engine.new_match(seats=2), [SitDown(0, "a"), SitDown(1, "b")])
    record = TableRecord(
        "t", state, 30_000, 120_000, b"c", 5, seat_units=(40, -40),
        client_seed_policy="players", seat_client_seeds=((1, b"bee"),),
        next_server_seed=bytes(range(32)),
    )  # fmt: skip
    raw = record.to_bytes()
    assert json.loads(raw)["format"] == 7
    assert TableRecord.from_bytes(raw) == record
    assert TableRecord.from_bytes(record.packed_6_bytes()) == record  # format 6, still read
    assert TableRecord.from_bytes(record.parts_bytes()) == record  # format 5, still read
    old = format_4(record)
    assert TableRecord.from_bytes(json.dumps(old).encode()) == record
    for key in ("seat_changes", "hand_seat_changes", "hand_deadlines"):
        del old[key]
    old["format"] = 3  # before seat changes were collected: not known
    three = TableRecord.from_bytes(json.dumps(old).encode())
    assert (three.seat_changes, three.hand_seat_changes, three.hand_deadlines) == (None, None, True)
    assert dataclasses.replace(three, seat_changes=(), hand_seat_changes=()) == record
    for key in ("client_seed_policy", "seat_client_seeds", "next_server_seed"):
        del old[key]
    old["format"] = 2  # before seed policies: the table's seed, no seed drawn ahead
    two = TableRecord.from_bytes(json.dumps(old).encode())
    assert (two.client_seed_policy, two.seat_client_seeds, two.next_server_seed) == (
        "table",
        (),
        b"",
    )
    assert two.next_commitment == "" and two.hand_client_seed() == b"c"
    old["format"] = 1
    del old["seat_units"]
    loaded = TableRecord.from_bytes(json.dumps(old).encode())  # no money kept: not known
    assert loaded.seat_units is None and loaded.units_of(1) == 0
    assert dataclasses.replace(loaded, seat_units=(40, -40)) == two
    # written again (format 7), it is still not known (the manager restores it first)
    assert TableRecord.from_bytes(loaded.to_bytes()).seat_units is None
    old["format"] = 8  # a newer server's record (rolling upgrade): retryable elsewhere
    with pytest.raises(NewerRecordError, match=r"newer server version .*format 8"):
        TableRecord.from_bytes(json.dumps(old).encode())
    old["format"] = 0
    with pytest.raises(ValueError, match="unknown table record format 0"):
        TableRecord.from_bytes(json.dumps(old).encode())


def test_a_record_carries_each_seats_fantasyland_tier_and_reads_format_1() -> None:
    """Record format 2: per seat the tier it played and the cards it is owed next. A
    progressive-pineapple-keep table: seat 0 plays a 16-card Fantasyland and stays at 16."""
    keep = resolve_ruleset("progressive-pineapple-keep")
    aces = Board.parse("Ac Ad 2c / 3h 3d 5s 5c 7d / Ts Js Qs Ks 2s")
    other = Board.parse("Kd 3c 2d / 5h 5d 9d 8h 4d / 7c 7h Qd Jh 4s")
    result = settle([aces, other], keep, fantasyland_cards=[16, 0], fantasyland_streaks=[1, 0])
    hand = engine.HandState(
        number=2,
        button=1,
        server_seed=bytes(32),
        client_seed=b"",
        deck=(),
        dealt=0,
        seats=(engine.HandSeat(0, 16, 1, aces), engine.HandSeat(1, 0, 0, other)),
        street=5,
        turn=None,
    )
    match = dataclasses.replace(
        engine.new_match(keep, seats=2), seats=(Seat("ann", 0, 16, 1), Seat("bob")), hand=hand
    )
    event = HandSettled(2, (0, 1), (aces, other), result, ((0, 16),), (0, 0), 5)
    record = SettlementRecord.from_event("t", event, match, (0, 0), settled_at_ms=5)
    assert [(s.fantasyland_cards, s.fantasyland_next_cards) for s in record.seats] == [
        (16, 16),
        (0, 0),
    ]
    data = json.loads(record.to_bytes())
    assert data["format"] == 2
    assert [(s["fantasyland_cards"], s["fantasyland_next_cards"]) for s in data["seats"]] == [
        (16, 16),
        (0, 0),
    ]
    assert SettlementRecord.from_bytes(record.to_bytes()) == record
    # a format-1 record (an older server's) reads, and is written back as it was
    old = {**data, "format": 1, "seats": [
        {k: v for k, v in s.items() if not k.startswith("fantasyland")} for s in data["seats"]
    ]}  # fmt: skip
    read = SettlementRecord.from_dict(old)
    assert read.format == 1 and read.seats[0].fantasyland_cards == 0
    assert read.to_dict() == old
    with pytest.raises(ValueError, match="unknown settlement record format 3"):
        SettlementRecord.from_dict({**data, "format": 3})
