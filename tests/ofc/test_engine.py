"""The hand engine, scripted like a rules book: whole hands with the boards and points
written out, the deal order, Fantasyland (entry, stay, cap, 13-17 cards, several seats at
once), the button, every rejection, views and events.

Seeds are ``n.to_bytes(32, "big")``; each scripted hand names the dealt batches so the deal
order is checked along the way. Boards are written top / middle / bottom.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence

import pytest
from ofc.cards import Card, format_cards, parse_cards
from ofc.codec import hand_history, state_as_written, state_from_dict, state_to_dict
from ofc.engine import (
    Action,
    ButtonMoved,
    CardsDealt,
    CardsPlaced,
    DiscardMade,
    Event,
    FantasylandRevealed,
    FantasylandSet,
    HandSettled,
    HandStarted,
    MatchState,
    Place,
    Seat,
    SeatTaken,
    SeatVacated,
    SeedRevealed,
    SetFantasyland,
    SitDown,
    StandUp,
    StartHand,
    Timeout,
    TimeoutApplied,
    apply,
    apply_unheld,
    can_apply,
    deal_positions,
    event_for_viewer,
    new_match,
    replay,
    seats_to_act,
    verify,
    view,
    visible_to,
)
from ofc.errors import (
    CardNotDealtError,
    DiscardNotAllowedError,
    DuplicateCardError,
    FantasylandOwedError,
    HandInProgressError,
    HandNotInProgressError,
    InFantasylandError,
    InvalidCardError,
    InvalidInputError,
    InvalidRowError,
    InvalidRulesetError,
    InvalidSeedError,
    MatchOverError,
    NotEnoughPlayersError,
    NotInFantasylandError,
    NotYourTurnError,
    OfcError,
    PlayerAlreadySeatedError,
    RowFullError,
    SeatTakenError,
    UnknownSeatError,
    WrongCardCountError,
    WrongPlayerCountError,
    WrongRowSizeError,
)
from ofc.policy import TIMEOUT_POLICY, timeout
from ofc.rulesets import ROWS, Row, Ruleset, Street, get_ruleset
from ofc.scoring import Board
from ofc.shuffle import commitment, shuffle_deck

CLASSIC = get_ruleset("classic")
PINEAPPLE = get_ruleset("pineapple")
PROGRESSIVE = get_ruleset("progressive-pineapple")
TURBO = get_ruleset("turbo")
NAMES = ("ann", "bob", "cat", "dan")


# --- helpers (also used by the other engine test modules) -----------------------------------
def seed(n: int) -> bytes:
    return n.to_bytes(32, "big")


def table(
    ruleset: Ruleset | str,
    players: int,
    *,
    button: int = 0,
    owed: Mapping[int, int] | None = None,
    streaks: Mapping[int, int] | None = None,
    hands_played: int = 0,
    pair_units: Mapping[tuple[int, int], int] | None = None,
) -> MatchState:
    """A table with seats 0..players-1 taken, optionally with Fantasylands owed."""
    state = new_match(ruleset, seats=players, button=button, pair_units=pair_units)
    for seat in range(players):
        state, _ = apply(state, SitDown(seat, NAMES[seat]))
    owed, streaks = owed or {}, streaks or {}
    seats = tuple(
        dataclasses.replace(s, fantasyland=owed.get(i, 0), fantasyland_streak=streaks.get(i, 0))
        for i, s in enumerate(state.seats)
    )
    return dataclasses.replace(state, seats=seats, hands_played=hands_played)


def move_towards(state: MatchState, seat: int, target: Board, at_ms: int = 0) -> Action:
    """The action that plays ``seat``'s dealt cards towards ``target`` (the rest discarded)."""
    assert state.hand is not None
    hand_seat = state.hand.seat(seat)
    if hand_seat.in_fantasyland:
        unused = tuple(c for c in hand_seat.pending if c not in target.cards)
        return SetFantasyland(seat, target.top, target.middle, target.bottom, unused, at_ms)
    row_of = {c: row for row in ROWS for c in target.row(row)}
    kept = tuple((c, row_of[c]) for c in hand_seat.pending if c in row_of)
    rest = [c for c in hand_seat.pending if c not in row_of]
    assert len(rest) <= 1, f"seat {seat}: target keeps too few of {format_cards(hand_seat.pending)}"
    return Place(seat, kept, rest[0] if rest else None, at_ms)


def play_to(
    state: MatchState, boards: Mapping[int, str], *, fantasyland_first: bool = False
) -> tuple[MatchState, list[Event]]:
    """Play the hand to the end, every seat building its target board."""
    targets = {seat: Board.parse(text) for seat, text in boards.items()}
    events: list[Event] = []
    clock = 1
    while waiting := seats_to_act(state):
        seat = waiting[-1] if fantasyland_first else waiting[0]
        state, produced = apply(state, move_towards(state, seat, targets[seat], clock))
        events += produced
        clock += 1
    return state, events


def play_with_timeouts(state: MatchState) -> tuple[MatchState, list[Event]]:
    events: list[Event] = []
    while waiting := seats_to_act(state):
        state, produced = apply(state, timeout(state, waiting[0]))
        events += produced
    return state, events


def start(state: MatchState, n: int, client_seed: bytes = b"") -> tuple[MatchState, list[Event]]:
    state, events = apply(state, StartHand(seed(n), client_seed, at_ms=0))
    return state, list(events)


def rows(board: Board | str) -> tuple[frozenset[Card], ...]:
    """A board's rows as sets (cards keep the order they were placed in)."""
    b = Board.parse(board) if isinstance(board, str) else board
    return tuple(frozenset(r) for r in b.rows)


def boards_by_seat(state: MatchState) -> dict[int, tuple[frozenset[Card], ...]]:
    assert state.hand is not None
    return {s.seat: rows(s.board) for s in state.hand.seats}


def settled(events: Sequence[Event]) -> HandSettled:
    (result,) = [e for e in events if isinstance(e, HandSettled)]
    return result


def points_by_seat(events: Sequence[Event]) -> dict[int, int]:
    result = settled(events)
    return {seat: p.points for seat, p in zip(result.seats, result.settlement.players, strict=True)}


def batches(events: Sequence[Event], seat: int) -> list[str]:
    return [format_cards(e.cards) for e in events if isinstance(e, CardsDealt) and e.seat == seat]


def types(events: Sequence[Event]) -> list[str]:
    return [type(e).__name__ for e in events]


# --- classic: a foul, a Fantasyland earned, then played and kept, then capped ---------------
HAND_1 = {  # classic, 3 seats, button 0, seed 4: seat 1 acts first
    1: "Kh Kd 5h / Ts Td 7h 6s 6c / Ad Qs 3s 3h 3d",  # KK on top: royalty 8, Fantasyland
    2: "Qc Qh Ac / 8s 8d Th Jd 7c / 2s 2d 4h 5d 3c",  # QQ on top over 88 in the middle: foul
    0: "4s 2c 5s / Js Jc 9h Tc Qd / 5c 6h 7d 8h 9d",  # straight on the bottom: royalty 2
}
HAND_2 = {  # seed 16, button 1: seat 1 plays Fantasyland (13 cards) and keeps it (quads)
    1: "6d 5h 4s / Ts 9c 8h 7d 6h / Ac Qs Qh Qd Qc",  # straight 4 + quads 10
    2: "2h 4c 5d / Ah Kh Js 7c 6s / 8d 8c 8s 3c 3d",  # full house 6
    0: "As Jh 7h / Th Td 2c 2d 9d / Kc Jc Tc 6c 5c",  # flush 4
}
HAND_3 = {  # seed 51, button 2: seat 1's second Fantasyland in a row; a full house middle
    1: "5c 3c 2h / Td Tc 8h 8d 8c / As Ah Ac Kh Kd",  # full houses 12 + 6
    0: "6s 4h Th / Qd Qs Jc Jd Kc / 9s 9d 9c 2s 2c",  # full house 6; top ties seat 2's
    2: "4d 6d Ts / Qc Qh Jh Js 9h / 3d 4s 5d 6c 7c",  # straight 2
}


def test_classic_hand_deals_in_order_and_settles_a_foul_and_a_fantasyland() -> None:
    state, events = start(table(CLASSIC, 3), 4)
    assert state.hand is not None
    assert state.hand.order == (1, 2, 0)
    assert state.hand.commitment == commitment(seed(4))
    state, rest = play_to(state, HAND_1)
    events += rest
    assert batches(events, 1) == ["Kh Ad Td Qs 3s", "3h", "3d", "Ts", "6s", "7h", "6c", "5h", "Kd"]
    assert batches(events, 2) == ["8s 2s Qc Th Ac", "4h", "5d", "Jd", "2d", "7c", "Qh", "8d", "3c"]
    assert batches(events, 0) == ["4s 5c 8h 2c Js", "5s", "9d", "6h", "7d", "9h", "Tc", "Jc", "Qd"]
    dealt = [e for e in events if isinstance(e, CardsDealt)]
    assert [(e.seat, e.street, e.position) for e in dealt[:6]] == [
        (1, 0, 0), (2, 0, 5), (0, 0, 10), (1, 1, 15), (2, 1, 16), (0, 1, 17),
    ]  # fmt: skip
    assert boards_by_seat(state) == {seat: rows(b) for seat, b in HAND_1.items()}
    # Seat 1 vs seat 0: top and middle to seat 1, bottom to seat 0 (+1), royalties 8 - 2.
    # Against the foul: 6 plus the legal board's royalties (14 and 8).
    assert points_by_seat(events) == {1: 7 + 14, 2: -14 - 8, 0: -7 + 8}
    result = settled(events)
    assert [p.fouled for p in result.settlement.players] == [False, True, False]
    assert result.fantasyland_next == ((1, 13),)
    assert [s.points for s in state.seats] == [1, 21, -22]
    assert [(s.fantasyland, s.fantasyland_streak) for s in state.seats] == [(0, 0), (13, 0), (0, 0)]
    assert state.button == 1 and events[-1] == ButtonMoved(0, 1)
    assert types(events)[-3:] == ["HandSettled", "SeedRevealed", "ButtonMoved"]
    assert events[-2] == SeedRevealed(1, seed(4), b"", commitment(seed(4)))


@pytest.mark.parametrize(
    ("cap", "owed_after"), [(None, 13), (2, 0)], ids=["no-cap-stays", "cap-2-leaves"]
)
def test_fantasyland_is_earned_kept_and_capped(cap: int | None, owed_after: int) -> None:
    ruleset = CLASSIC.replace(name="classic-capped", max_consecutive_fantasylands=cap)
    state, _ = start(table(ruleset, 3), 4)
    state, _ = play_to(state, HAND_1)

    state, events = start(state, 16)
    assert state.hand is not None and state.hand.order == (2, 0, 1)
    assert next(e for e in events if isinstance(e, HandStarted)).fantasyland == ((1, 13),)
    # The Fantasyland seat takes the top 13 cards first, then the others street by street.
    assert batches(events, 1) == ["Qh Ac 6h 9c Qc Qd Ts 7d Qs 6d 8h 4s 5h"]
    assert batches(events, 2) == ["2h 4c 5d 3c 3d"]
    assert state.hand.seat(1).fantasyland_streak == 1
    state, rest = play_to(state, HAND_2, fantasyland_first=True)
    # Seat 1 scoops seat 2 (6 + 14 - 6); beats seat 0 on middle and bottom (1 + 14 - 4);
    # seat 0 takes top and middle from seat 2, loses the bottom, and pays 6 - 4 royalties.
    assert points_by_seat(rest) == {2: 1 - 14, 0: -1 - 11, 1: 14 + 11}
    assert settled(rest).fantasyland_next == ((1, 13),)  # quads on the bottom keep it
    assert [(s.fantasyland, s.fantasyland_streak) for s in state.seats] == [(0, 0), (13, 1), (0, 0)]
    assert state.button == 2  # the preset moves the button in Fantasyland hands too

    state, events = start(state, 51)
    assert state.hand is not None and state.hand.order == (0, 1, 2)
    assert state.hand.seat(1).fantasyland_streak == 2
    assert batches(events, 1) == ["As 2h Ah 5c Tc Td 8h Kd Ac 8c Kh 3c 8d"]
    state, rest = play_to(state, HAND_3)
    # Seat 1 vs 0: middle and bottom (+1), royalties 18 - 6; vs 2: the same, 18 - 2.
    # Seat 0 vs 2: the tops tie (T-6-4 each), so two rows and no scoop, royalties 6 - 2.
    assert points_by_seat(rest) == {0: -13 + 6, 1: 13 + 17, 2: -6 - 17}
    # A full house in the middle keeps Fantasyland, unless this was the second in a row.
    assert state.seats[1].fantasyland == owed_after
    assert state.seats[1].fantasyland_streak == 2
    assert [s.points for s in state.seats] == [1 - 12 - 7, 21 + 25 + 30, -22 - 13 - 23]
    assert state_from_dict(json.loads(json.dumps(state_to_dict(state)))) == state  # custom rules


def test_a_fantasyland_set_stays_face_down_until_every_seat_is_done() -> None:
    state, _ = start(table(CLASSIC, 3, button=1, owed={1: 13}, hands_played=1), 16)
    target = Board.parse(HAND_2[1])
    state, events = apply(state, move_towards(state, 1, target))
    assert types(events) == ["FantasylandSet"]
    assert state.hand is not None and state.hand.seat(1).done
    (set_event,) = events
    assert visible_to(set_event) == 1
    assert event_for_viewer(set_event, 0) == FantasylandSet(1, Board(), ())
    assert event_for_viewer(set_event, 1) is set_event
    for viewer in (0, 2, None):
        seat_view = view(state, viewer).hand.seats[2]  # type: ignore[union-attr]
        assert seat_view.seat == 1 and seat_view.board == Board() and seat_view.board_hidden
        assert seat_view.done and seat_view.pending == () and seat_view.discards == ()
    own = view(state, 1).hand.seats[2]  # type: ignore[union-attr]
    assert own.board == target and not own.board_hidden
    with pytest.raises(NotYourTurnError):  # a set is final
        apply(state, move_towards(state, 1, target))
    state, rest = play_to(state, HAND_2)
    revealed = [e for e in rest if isinstance(e, FantasylandRevealed)]
    assert revealed == [FantasylandRevealed(1, target)]
    assert types(rest).index("FantasylandRevealed") < types(rest).index("HandSettled")
    assert view(state, None).hand.seats[2].board == target  # type: ignore[union-attr]


# --- the other presets ----------------------------------------------------------------------
PINEAPPLE_HAND = {  # pineapple, 3 seats, button 0, seed 1; everyone ends in Fantasyland
    1: "Ks Kd 6s / Th 9h 6h 5h 4h / Qc Js Jh Jd Jc",  # 8 + flush 8 + quads 10
    2: "Qs Qh 4c / Ts 6d 3s 3h 3d / 9d 9c 7s 7h 7d",  # 7 + trips 2 + full house 6
    0: "As Ad Qd / 8c 7c 6c 5d 4d / Kh 2s 2h 2d 2c",  # 9 + straight 4 + quads 10
}


def test_pineapple_hand_with_hidden_discards() -> None:
    state, events = start(table(PINEAPPLE, 3), 1)
    state, rest = play_to(state, PINEAPPLE_HAND)
    events += rest
    assert batches(events, 1) == ["4h Jc 5h Th Jh", "6h Jd 8d", "Ks 5s 6s", "Ac Kd Js", "4s Qc 9h"]
    assert batches(events, 2) == ["6d 9c Ts 9d 7h", "3c 3s 3d", "7s Td Qs", "Qh 8s 7d", "Kc 4c 3h"]
    assert batches(events, 0) == ["Ad Qd 2c Kh As", "2s 5d 8h", "7c 2h 9s", "8c Ah 2d", "Tc 4d 6c"]
    assert state.hand is not None
    assert [format_cards(s.discards) for s in state.hand.seats] == [
        "8d 5s Ac 4s", "3c Td 8s Kc", "8h 9s Ah Tc",
    ]  # fmt: skip
    discards = [e for e in events if isinstance(e, DiscardMade)]
    assert len(discards) == 12 and all(event_for_viewer(e, None).card is None for e in discards)
    # 1 scoops 2 (6 + 26 - 15); 0 scoops 2 (6 + 23 - 15); 1 beats 0 on middle and bottom.
    assert points_by_seat(events) == {1: 17 + 4, 2: -17 - 14, 0: -4 + 14}
    assert settled(events).fantasyland_next == ((1, 14), (2, 14), (0, 14))


def test_pineapple_fantasyland_of_14_for_two_seats_at_once() -> None:
    state, events = start(table(PINEAPPLE, 3, owed={0: 14, 2: 14}), 2)
    # Turn order 1, 2, 0: the Fantasyland seats 2 then 0 take 14 cards each, then seat 1.
    dealt = [(e.seat, e.street, e.position, e.count) for e in events if isinstance(e, CardsDealt)]
    assert dealt == [(2, None, 0, 14), (0, None, 14, 14), (1, 0, 28, 5)]
    assert batches(events, 2) == ["6d Qh 3h 6s Ts 5c 4d 9h 8s 2s Ks Qc Th Ah"]
    assert batches(events, 0) == ["7c 7d 4h 5h 4s As Qd 7s 4c 6c Ad 3d 7h 2d"]
    boards = {
        2: "Qc 6d 5c / Ks Ts 8s 6s 2s / Ah Qh Th 9h 3h",  # two flushes: 8 + 4; discards 4d
        0: "As Ad 4h / 6c 5h 4s 3d 2d / Qd 7s 7h 7d 7c",  # 9 + 4 + quads 10; discards 4c
        1: "Kh Kd 9s / Td 5s 5d 2h 2c / Ac Js Jh Jd Jc",  # 8 + quads 10
    }
    assert seats_to_act(state) == (1, 2, 0)
    state, rest = play_to(state, boards)
    events += rest
    assert state.hand is not None
    assert [format_cards(s.discards) for s in state.hand.seats] == ["8c 8d 8h 3s", "4d", "4c"]
    assert points_by_seat(events) == {1: 7 - 6, 2: -7 - 12, 0: 6 + 12}
    # Seat 0 stays (quads), seat 1 enters (KK), seat 2 drops out.
    assert settled(events).fantasyland_next == ((1, 14), (0, 14))
    owed = [(s.fantasyland, s.fantasyland_streak) for s in state.seats]
    assert owed == [(14, 1), (14, 0), (0, 1)]


def test_progressive_entry_by_top_pair_then_15_and_16_card_fantasylands() -> None:
    state, _ = start(table(PROGRESSIVE, 2), 7)
    state, events = play_to(
        state,
        {
            1: "Ad Ac Jc / Qc Jh Th 9d 8d / Ks 8s 6s 5s 3s",  # AA: 16 cards next
            0: "Kd Kc 4h / 8c 7s 7h 3d 3c / Qh Qd 6h 6d 6c",  # KK: 15 cards next
        },
    )
    assert points_by_seat(events) == {1: 1 + 3, 0: -1 - 3}
    assert settled(events).fantasyland_next == ((1, 16), (0, 15))
    assert state.button == 1

    state, events = start(state, 8)
    assert [(e.seat, e.position, e.count) for e in events if isinstance(e, CardsDealt)] == [
        (0, 0, 15), (1, 15, 16),
    ]  # fmt: skip
    assert state.hand is not None and state.hand.turn is None and seats_to_act(state) == (0, 1)
    state, rest = play_to(
        state,
        {
            0: "As Ah Kd / Tc 9c 8h 7d 6c / Qs Qd 4s 4d 4c",  # discards 3s 2d
            1: "Ad Ac 7h / Jd Jc Ts 8s 8c / Ks Kh 9s 9h 9d",  # discards 6s 6d 4h
        },
    )
    assert state.hand is not None
    assert [format_cards(s.discards) for s in state.hand.seats] == ["2d 3s", "4h 6s 6d"]
    assert points_by_seat(rest) == {0: 1 + 4, 1: -1 - 4}
    assert settled(rest).fantasyland_next == ()  # no stay condition met
    assert [(s.fantasyland, s.fantasyland_streak) for s in state.seats] == [(0, 1), (0, 1)]


def test_progressive_three_fantasylands_of_15_16_17() -> None:
    state, events = start(table(PROGRESSIVE, 3, owed={0: 15, 1: 16, 2: 17}), 3)
    dealt = [(e.seat, e.position, e.count) for e in events if isinstance(e, CardsDealt)]
    assert dealt == [(1, 0, 16), (2, 16, 17), (0, 33, 15)]
    assert state.hand is not None and state.hand.deck_remaining == 52 - 48
    state, rest = play_to(
        state,
        {
            1: "Ah 8s 8h / Jd 8d 7d 5d 4d / Kc Tc 9c 6c 2c",  # 3 + 8 + 4
            2: "Ks 6s 6h / Kd Qd 9d 3d 2d / 5s 5h 5c 4h 4c",  # 1 + 8 + 6
            0: "As Ac Kh / Jc Td 9h 8c 7h / Qs Js Ts 9s 2s",  # 9 + 4 + 4
        },
    )
    assert points_by_seat(rest) == {1: -1 - 1, 2: 1 - 1, 0: 1 + 1}
    assert [len(s.discards) for s in state.hand.seats] == [3, 4, 2]  # type: ignore[union-attr]


def test_turbo_hand() -> None:
    state, events = start(table(TURBO, 2), 1)
    state, rest = play_to(
        state,
        {
            1: "Ad Qd Jc / Kh Jh Th 5h 4h / 3s 3d 3c 2s 2c",  # flush 8 + full house 6
            0: "As Ks 5s / Ts 9c 8h 7h 6h / Jd 9d 8d 6d 5d",  # straight 4 + flush 4
        },
    )
    events += rest
    assert batches(events, 1) == ["4h Jc 5h Th Jh", "Ad Qd 2c Kh", "3c 3s 3d 2s"]
    assert batches(events, 0) == ["6d 9c Ts 9d 7h", "As 6h Jd 8d", "5d 8h Ks 5s"]
    assert points_by_seat(events) == {1: 1 + 6, 0: -1 - 6}


def test_four_seats_deal_the_whole_deck() -> None:
    state, _ = start(table(CLASSIC, 4), 9)
    state, rest = play_with_timeouts(state)
    assert state.hand is not None and state.hand.deck_remaining == 0
    cards = [c for s in state.hand.seats for c in s.board.cards]
    assert sorted(cards) == sorted(shuffle_deck(seed(9), b"", 1))
    assert sum(points_by_seat(rest).values()) == 0


def test_deal_positions_match_every_dealt_batch() -> None:
    for ruleset, players, owed in (
        (CLASSIC, 4, {2: 13}),
        (PINEAPPLE, 3, {0: 14}),
        (PROGRESSIVE, 3, {1: 17}),
        (TURBO, 3, {}),
    ):
        state, events = start(table(ruleset, players, button=2, owed=owed), 5)
        state, rest = play_with_timeouts(state)
        assert state.hand is not None
        positions = deal_positions(state.hand, ruleset)
        dealt = [e for e in events + rest if isinstance(e, CardsDealt)]
        assert len(dealt) == len(positions)
        for e in dealt:
            assert positions[(e.seat, e.street)] == e.position
            assert e.cards == state.hand.deck[e.position : e.position + e.count]


def test_the_deck_is_the_shuffle_spec_deck_with_the_hand_number_as_nonce() -> None:
    state = table(CLASSIC, 2, hands_played=0)
    state, _ = apply(state, StartHand(bytes(range(32)), b"auditor-test"))
    assert state.hand is not None and state.hand.number == 1
    assert format_cards(state.hand.deck[:10]) == "Qs 6d Ad Td 6s 4s 8s Kc Kh 7d"


# --- the button -----------------------------------------------------------------------------
@pytest.mark.parametrize(("moves", "button_after"), [(True, 1), (False, 0)])
def test_button_in_a_fantasyland_hand(moves: bool, button_after: int) -> None:
    ruleset = PINEAPPLE.replace(name="pineapple-button", button_moves_in_fantasyland=moves)
    state, _ = start(table(ruleset, 3, owed={2: 14}), 2)
    state, events = play_with_timeouts(state)
    assert state.button == button_after
    assert events[-1] == ButtonMoved(0, button_after)


def test_button_moves_to_the_next_occupied_seat_without_fantasyland() -> None:
    ruleset = CLASSIC.replace(name="classic-button", button_moves_in_fantasyland=False)
    state = new_match(ruleset, seats=4, button=0)
    state, _ = replay(state, [SitDown(0, "ann"), SitDown(3, "dan")])
    state, events = start(state, 1)
    assert state.hand is not None and state.hand.order == (3, 0)
    state, events = play_with_timeouts(state)
    assert state.button == 3 and events[-1] == ButtonMoved(0, 3)
    state, _ = start(state, 2)
    assert state.hand is not None and state.hand.order == (0, 3)
    state, events = play_with_timeouts(state)
    assert state.button == 0


# --- rejections -----------------------------------------------------------------------------
def classic_start() -> MatchState:
    """Classic, 3 seats, seed 4: seat 1 holds Kh Ad Td Qs 3s."""
    return start(table(CLASSIC, 3), 4)[0]


def pineapple_street_2() -> MatchState:
    """Pineapple, 3 seats, seed 1, street 2: seat 1 holds 6h Jd 8d."""
    state, _ = start(table(PINEAPPLE, 3), 1)
    for seat in (1, 2, 0):
        state, _ = apply(state, move_towards(state, seat, Board.parse(PINEAPPLE_HAND[seat])))
    return state


def fantasyland_start() -> MatchState:
    """Pineapple, seats 0 and 2 in Fantasyland with 14 cards, seed 2."""
    return start(table(PINEAPPLE, 3, owed={0: 14, 2: 14}), 2)[0]


def finished() -> MatchState:
    state, _ = play_to(classic_start(), HAND_1)
    return state


def c(text: str) -> Card:
    return Card.parse(text)


def cs(text: str) -> tuple[Card, ...]:
    return parse_cards(text)


T, M, B = Row.TOP, Row.MIDDLE, Row.BOTTOM
FIVE = ((c("Kh"), T), (c("Ad"), B), (c("Td"), M), (c("Qs"), M), (c("3s"), B))

REJECTIONS: list[tuple[str, object, Action, type[OfcError], str]] = [
    ("not your turn", classic_start, Place(2, ((c("8s"), B),)), NotYourTurnError, "seat"),
    ("no such seat", classic_start, Place(3, FIVE), UnknownSeatError, "seat"),
    ("negative seat", classic_start, Place(-1, FIVE), InvalidInputError, "seat"),
    ("card not dealt", classic_start, Place(1, (*FIVE[:4], (c("2c"), B))), CardNotDealtError,
     "placements[4].card"),
    ("too few cards", classic_start, Place(1, FIVE[:4]), WrongCardCountError, "placements"),
    ("too many cards", classic_start, Place(1, (*FIVE, (c("8s"), B))), WrongCardCountError,
     "placements"),
    ("row full", classic_start, Place(1, tuple((card, T) for card, _ in FIVE)), RowFullError,
     "placements[3].row"),
    ("duplicate card", classic_start, Place(1, (*FIVE[:4], FIVE[0])), DuplicateCardError,
     "placements[4].card"),
    ("discard in classic", classic_start, Place(1, FIVE, c("8s")), DiscardNotAllowedError,
     "discard"),
    ("bad row", classic_start, Place(1, ((c("Kh"), "side"), *FIVE[1:])),  # type: ignore[arg-type]
     InvalidRowError, "placements[0].row"),
    ("bad card", classic_start, Place(1, ((54, T), *FIVE[1:])),  # type: ignore[arg-type]
     InvalidCardError, "placements[0].card"),
    # a card no deck of the table has is invalid, as in the rules calls, not "not dealt"
    ("a joker in a 52-card deck", classic_start, Place(1, ((c("X1"), T), *FIVE[1:])),
     InvalidCardError, "placements[0].card"),
    ("a joker discarded in a 52-card deck", pineapple_street_2,
     Place(1, ((c("6h"), M), (c("Jd"), B)), c("X2")), InvalidCardError, "discard"),
    ("a joker in a 52-card deck's Fantasyland", fantasyland_start,
     SetFantasyland(2, cs("6d Qh 3h"), cs("Ts 5c 4d 9h 8s"), cs("2s Ks Qc Th X1"), cs("6s")),
     InvalidCardError, "bottom[4]"),
    ("set without Fantasyland", classic_start, SetFantasyland(1, (), (), ()), NotInFantasylandError,
     "seat"),
    ("timeout out of turn", classic_start, Timeout(0, Place(0, FIVE)), NotYourTurnError, "seat"),
    ("start during a hand", classic_start, StartHand(seed(9)), HandInProgressError, ""),
    ("stand up during a hand", classic_start, StandUp(1), HandInProgressError, "seat"),
    ("seat taken", classic_start, SitDown(0, "eve"), SeatTakenError, "seat"),
    ("bad time", classic_start, Place(1, FIVE, at_ms=-1), InvalidInputError, "at_ms"),
    ("no discard in pineapple", pineapple_street_2,
     Place(1, ((c("6h"), M), (c("Jd"), B))), WrongCardCountError, "discard"),
    ("discard not dealt", pineapple_street_2,
     Place(1, ((c("6h"), M), (c("Jd"), B)), c("As")), CardNotDealtError, "discard"),
    ("discard also placed", pineapple_street_2,
     Place(1, ((c("6h"), M), (c("Jd"), B)), c("6h")), DuplicateCardError, "discard"),
    ("placement from a Fantasyland seat", fantasyland_start, Place(2, ()), InFantasylandError,
     "seat"),
    ("Fantasyland row too long", fantasyland_start,
     SetFantasyland(2, cs("6d Qh 3h 6s"), cs("Ts 5c 4d 9h 8s"), cs("2s Ks Qc Th Ah")),
     WrongRowSizeError, "top"),
    ("Fantasyland without its discard", fantasyland_start,
     SetFantasyland(2, cs("6d Qh 3h"), cs("Ts 5c 4d 9h 8s"), cs("2s Ks Qc Th Ah")),
     WrongCardCountError, "discards"),
    ("Fantasyland card not dealt", fantasyland_start,
     SetFantasyland(2, cs("6d Qh 3h"), cs("Ts 5c 4d 9h 8s"), cs("2s Ks Qc Th Ac"), cs("6s")),
     CardNotDealtError, "bottom[4]"),
    ("Fantasyland card twice", fantasyland_start,
     SetFantasyland(2, cs("6d Qh 3h"), cs("Ts 5c 4d 9h 8s"), cs("2s Ks Qc Th 6d"), cs("6s")),
     DuplicateCardError, "bottom[4]"),
    ("place after the hand", finished, Place(1, FIVE), HandNotInProgressError, ""),
    ("timeout after the hand", finished, Timeout(1, Place(1, FIVE)), HandNotInProgressError, ""),
    # a timeout's move is checked like any move: its errors name the move's field
    ("timeout's card not dealt", classic_start, Timeout(1, Place(1, (*FIVE[:4], (c("2c"), B)))),
     CardNotDealtError, "move.placements[4].card"),
    ("timeout's row full", classic_start,
     Timeout(1, Place(1, tuple((card, T) for card, _ in FIVE))), RowFullError,
     "move.placements[3].row"),
    ("timeout without its discard", pineapple_street_2,
     Timeout(1, Place(1, ((c("6h"), M), (c("Jd"), B)))), WrongCardCountError, "move.discard"),
    ("timeout with a discard in classic", classic_start, Timeout(1, Place(1, FIVE, c("8s"))),
     DiscardNotAllowedError, "move.discard"),
    ("timeout's move for another seat", classic_start, Timeout(1, Place(2, FIVE)),
     InvalidInputError, "move.seat"),
    ("timeout's move at another time", classic_start, Timeout(1, Place(1, FIVE), at_ms=5),
     InvalidInputError, "move.at_ms"),
    ("timeout's set for a street seat", classic_start,
     Timeout(1, SetFantasyland(1, (), (), ())), NotInFantasylandError, "move.seat"),
    ("timeout's placement for a Fantasyland seat", fantasyland_start, Timeout(2, Place(2, ())),
     InFantasylandError, "move.seat"),
    ("timeout's Fantasyland set of cards not dealt", fantasyland_start,
     Timeout(2, SetFantasyland(2, cs("6d Qh 3h"), cs("Ts 5c 4d 9h 8s"), cs("2s Ks Qc Th Ac"),
                               cs("6s"))), CardNotDealtError, "move.bottom[4]"),
    ("timeout's Fantasyland set without its discard", fantasyland_start,
     Timeout(2, SetFantasyland(2, cs("6d Qh 3h"), cs("Ts 5c 4d 9h 8s"), cs("2s Ks Qc Th Ah"))),
     WrongCardCountError, "move.discards"),
    ("timeout's bad deadline", classic_start, Timeout(1, Place(1, FIVE), deadline_ms=-1),
     InvalidInputError, "deadline_ms"),
    ("timeout's empty policy name", classic_start, Timeout(1, Place(1, FIVE), ""),
     InvalidInputError, "policy"),
    ("leave owing a Fantasyland", finished, StandUp(1), FantasylandOwedError, "seat"),
    ("leave while another seat owes a Fantasyland", finished, StandUp(2), FantasylandOwedError,
     "seat"),
    ("stand up from an empty seat", lambda: new_match(seats=2), StandUp(0), UnknownSeatError,
     "seat"),
    ("start alone", lambda: replay(new_match(seats=2), [SitDown(0, "ann")])[0],
     StartHand(seed(1)), NotEnoughPlayersError, ""),
    ("short seed", lambda: table(CLASSIC, 2), StartHand(b"\x00" * 31), InvalidSeedError,
     "server_seed"),
    ("sit twice", lambda: table(CLASSIC, 3), SitDown(0, "bob"), SeatTakenError, "seat"),
    ("same player twice", lambda: replay(new_match(seats=3), [SitDown(0, "ann")])[0],
     SitDown(1, "ann"), PlayerAlreadySeatedError, "player_id"),
    ("empty player id", lambda: new_match(seats=3), SitDown(1, ""), InvalidInputError,
     "player_id"),
]  # fmt: skip


def test_nobody_leaves_before_a_fantasyland_hand_earned_at_the_table() -> None:
    """bob earned a Fantasyland in hand 1: neither he nor the players it is to be played
    against leave before it is played, unless the match is over, or too few are seated for
    any hand to start (then bob may go: his hand cannot be played)."""
    state = finished()
    assert [seat.fantasyland for seat in state.seats] == [0, 13, 0]
    messages = []
    for seat in range(3):
        with pytest.raises(FantasylandOwedError) as refused:
            apply(state, StandUp(seat))
        messages.append(refused.value.message)
    assert messages == [
        "seat 1 earned a Fantasyland hand here; nobody leaves the table before it is played",
        "seat 1 earned a Fantasyland hand (13 cards) here and must play it first",
        "seat 1 earned a Fantasyland hand here; nobody leaves the table before it is played",
    ]
    over = dataclasses.replace(state, max_hands=1)
    assert [can_apply(over, StandUp(seat)) for seat in range(3)] == [True, True, True]
    ann, bob, _ = state.seats
    alone = dataclasses.replace(state, seats=(Seat(), bob, Seat()))
    assert can_apply(alone, StandUp(1))
    two = dataclasses.replace(state, seats=(ann, bob, Seat()))
    assert not can_apply(two, StandUp(1)) and not can_apply(two, StandUp(0))
    # the rule of the releases before, for their histories: only bob was held
    assert apply_unheld(state, StandUp(0))[0].seats[0] == Seat()
    with pytest.raises(FantasylandOwedError):
        apply_unheld(alone, StandUp(1))


@pytest.mark.parametrize(
    ("make", "action", "error", "field"),
    [r[1:] for r in REJECTIONS],
    ids=[r[0] for r in REJECTIONS],
)
def test_illegal_actions_are_rejected_and_change_nothing(
    make: object, action: Action, error: type[OfcError], field: str
) -> None:
    assert callable(make)
    state = make()
    assert isinstance(state, MatchState)
    before = json.dumps(state_to_dict(state))
    with pytest.raises(error) as caught:
        apply(state, action)
    assert caught.value.field == field
    assert caught.value.reason.isupper()
    with pytest.raises(error):
        verify(state, action)
    assert not can_apply(state, action)
    assert json.dumps(state_to_dict(state)) == before


def test_a_match_ends_after_max_hands_and_then_a_fantasyland_lapses() -> None:
    state = new_match("classic", seats=3, max_hands=1)
    state, _ = replay(state, [SitDown(s, NAMES[s]) for s in range(3)])
    state, _ = start(state, 4)
    state, _ = play_to(state, HAND_1)
    assert state.match_over
    with pytest.raises(MatchOverError):
        apply(state, StartHand(seed(5)))
    state, events = apply(state, StandUp(1))  # the Fantasyland can no longer be played
    assert events == (SeatVacated(1, "bob", 21),)
    assert state.seats[1].player_id == "" and state.seats[1].points == 0


def test_sit_down_and_stand_up_between_hands() -> None:
    state, events = apply(new_match(seats=2), SitDown(1, "bob"))
    assert events == (SeatTaken(1, "bob"),)
    state, events = apply(state, StandUp(1))
    assert events == (SeatVacated(1, "bob", 0),)
    assert state == new_match(seats=2)


def test_a_player_can_sit_down_during_a_hand_and_plays_the_next() -> None:
    state = new_match("classic", seats=3)
    state, _ = replay(state, [SitDown(0, "ann"), SitDown(1, "bob"), StartHand(seed(3))])
    state, _ = apply(state, SitDown(2, "cat"))
    assert state.hand is not None and state.hand.order == (1, 0)
    with pytest.raises(UnknownSeatError):
        apply(state, Timeout(2, Place(2, ())))
    state, _ = apply(state, StandUp(2))  # not in the hand: free to go
    state, _ = apply(state, SitDown(2, "cat"))
    state, _ = play_with_timeouts(state)
    state, _ = start(state, 4)
    assert state.hand is not None and state.hand.order == (2, 0, 1)


def test_rulesets_the_engine_cannot_deal_are_refused() -> None:
    wide = CLASSIC.replace(
        name="pick-2-of-4", streets=(Street(5, 5), *(Street(4, 2),) * 4), max_players=2
    )
    with pytest.raises(InvalidRulesetError) as caught:
        new_match(wide)
    assert caught.value.field == "streets[1]"
    with pytest.raises(WrongPlayerCountError):
        new_match("classic", seats=5)
    with pytest.raises(WrongPlayerCountError):
        new_match("pineapple", seats=4)


# --- timeouts -------------------------------------------------------------------------------
def test_timeout_plays_the_policy_move_and_says_so_privately() -> None:
    state = pineapple_street_2()
    action = timeout(state, 1, at_ms=7)
    move = action.move
    assert isinstance(move, Place) and move.discard is not None and len(move.placements) == 2
    assert (action.policy, move.at_ms, move) == (
        "ofc-timeout-4",
        7,
        dataclasses.replace(TIMEOUT_POLICY.choose(state, 1), at_ms=7),
    )
    after, events = apply(state, action)
    assert events[0] == TimeoutApplied(1, move)
    assert event_for_viewer(events[0], 2) == TimeoutApplied(1, None)
    assert (after, events[1:]) == apply(state, move)
    assert isinstance(events[1], CardsPlaced) and isinstance(events[2], DiscardMade)


def test_a_timeout_applies_the_move_it_carries_not_the_policy_s() -> None:
    """The rules do not depend on a bot: any legal move is a timeout's, as it is recorded."""
    state = classic_start()
    naive = Place(1, FIVE, at_ms=3)  # a legal placement the policy would not choose
    assert naive != dataclasses.replace(TIMEOUT_POLICY.choose(state, 1), at_ms=3)
    after, events = apply(state, Timeout(1, naive, "some-bot-1", 3, deadline_ms=3))
    assert events[0] == TimeoutApplied(1, naive)
    assert (after, events[1:]) == apply(state, naive)


def test_timeout_of_a_fantasyland_seat_sets_a_legal_board() -> None:
    state = fantasyland_start()
    action = timeout(state, 0)
    assert isinstance(action.move, SetFantasyland) and len(action.move.discards) == 1
    state, events = apply(state, action)
    assert types(events) == ["TimeoutApplied", "FantasylandSet"]
    state, rest = play_with_timeouts(state)
    assert not settled(rest).settlement.players[2].fouled  # seat 0 is third in turn order


# --- views and events -----------------------------------------------------------------------
def test_views_show_each_seat_only_what_it_may_see() -> None:
    state = pineapple_street_2()  # seats 1, 2, 0 placed street 1; seat 1 holds 6h Jd 8d
    hand = state.hand
    assert hand is not None
    spectator = view(state, None).hand
    assert spectator is not None and spectator.server_seed is None
    assert spectator.commitment == commitment(seed(1)) and spectator.deck_remaining == 52 - 18
    assert spectator.turn == 1 and spectator.to_act == (1,)
    assert [(s.seat, s.pending, s.pending_count) for s in spectator.seats] == [
        (1, (), 3), (2, (), 0), (0, (), 0),
    ]  # fmt: skip
    mine = view(state, 1).hand
    assert mine is not None and mine.seats[0].pending == cs("6h Jd 8d")
    assert [len(s.board.cards) for s in mine.seats] == [5, 5, 5]
    state, _ = apply(state, move_towards(state, 1, Board.parse(PINEAPPLE_HAND[1])))
    own, other = view(state, 1).hand, view(state, 2).hand
    assert own is not None and other is not None
    assert own.seats[0].discards == cs("8d") and own.seats[0].discard_count == 1
    assert other.seats[0].discards == () and other.seats[0].discard_count == 1
    assert other.seats[1].pending == cs("3c 3s 3d")
    with pytest.raises(UnknownSeatError):
        view(state, 3)


def test_the_seed_shows_in_views_only_once_the_hand_is_over() -> None:
    state = finished()
    hand_view = view(state, 2).hand
    assert hand_view is not None and hand_view.over and hand_view.server_seed == seed(4)
    assert hand_view.settlement is not None
    assert [p.points for p in hand_view.settlement.players] == [21, -22, 1]
    assert view(state, 0).seats[1].fantasyland == 13


def test_replay_of_a_hand_gives_the_same_state_and_events() -> None:
    initial = table(CLASSIC, 3)
    actions: list[Action] = [StartHand(seed(4))]
    state, events = apply(initial, actions[0])
    targets = {seat: Board.parse(b) for seat, b in HAND_1.items()}
    all_events = list(events)
    while waiting := seats_to_act(state):
        action = move_towards(state, waiting[0], targets[waiting[0]])
        actions.append(action)
        state, events = apply(state, action)
        all_events += events
    assert replay(initial, actions) == (state, tuple(all_events))


def test_every_event_is_redacted_for_other_viewers() -> None:
    state, events = start(table(PINEAPPLE, 3, owed={0: 14}), 2)
    state, rest = play_with_timeouts(state)
    for event in events + rest:
        owner = visible_to(event)
        for viewer in (None, 0, 1, 2):
            shown = event_for_viewer(event, viewer)
            if owner is None or owner == viewer:
                assert shown is event
            else:
                assert type(shown) is type(event)
                assert shown != event or not _has_cards(event)
                assert not _has_cards(shown)


def _has_cards(event: Event) -> bool:
    if isinstance(event, CardsDealt):
        return bool(event.cards)
    if isinstance(event, DiscardMade):
        return event.card is not None
    if isinstance(event, TimeoutApplied):
        return event.action is not None
    return isinstance(event, FantasylandSet) and bool(event.board.cards)


def test_a_history_needs_one_complete_hand() -> None:
    initial = table(CLASSIC, 2)
    with pytest.raises(InvalidInputError) as caught:
        hand_history(initial, [StartHand(seed(1))])
    assert caught.value.field == "actions"
    actions: list[Action] = [StartHand(seed(1))]
    state, _ = apply(initial, actions[0])
    while waiting := seats_to_act(state):
        actions.append(timeout(state, waiting[0]))
        state, _ = apply(state, actions[-1])
    history = hand_history(initial, actions)
    assert history["server_seed"] == seed(1).hex()
    assert [a["resolved"]["type"] for a in history["actions"][1:]] == ["place"] * 18


# --- unit values agreed per pair of seats -----------------------------------------------------
# HAND_1's points per pair of seats (seat 1 acts first, so the hand's player order is 1, 2, 0):
# seat 1 beats seat 0 by 7, and the foul (seat 2) pays seat 1 14 and seat 0 8.
HAND_1_PAIR_POINTS = {(0, 1): -7, (0, 2): 8, (1, 2): 14}  # from the lower seat's side


@pytest.mark.parametrize(
    ("unit_value", "pair_units", "units_by_seat", "unit_by_pair"),
    [
        (1, {}, {0: 1, 1: 21, 2: -22}, {(0, 1): 1, (0, 2): 1, (1, 2): 1}),
        (  # the example: seats 0 and 1 play 20 a unit, seats 0 and 2 play 15
            1,
            {(0, 1): 20, (0, 2): 15},
            {0: -7 * 20 + 8 * 15, 1: 7 * 20 + 14, 2: -8 * 15 - 14},  # -20, 154, -134
            {(0, 1): 20, (0, 2): 15, (1, 2): 1},
        ),
        (  # a pair whose seats come in the hand's order 1, 2 (player indexes 0, 1)
            1,
            {(1, 2): 7},
            {0: -7 + 8, 1: 7 + 14 * 7, 2: -8 - 14 * 7},  # 1, 105, -106
            {(0, 1): 1, (0, 2): 1, (1, 2): 7},
        ),
        (  # the ruleset's unit value for the pairs not listed
            5,
            {(0, 2): 3},
            {0: -7 * 5 + 8 * 3, 1: 7 * 5 + 14 * 5, 2: -8 * 3 - 14 * 5},  # -11, 105, -94
            {(0, 1): 5, (0, 2): 3, (1, 2): 5},
        ),
    ],
    ids=["ruleset-unit", "issue-6-example", "pair-in-hand-order", "mixed"],
)
def test_each_pair_of_seats_settles_at_its_agreed_unit_value(
    unit_value: int,
    pair_units: dict[tuple[int, int], int],
    units_by_seat: dict[int, int],
    unit_by_pair: dict[tuple[int, int], int],
) -> None:
    ruleset = CLASSIC.replace(name="classic-stakes", unit_value=unit_value)
    initial = table(ruleset, 3, pair_units=pair_units)
    assert initial.pair_units == tuple((a, b, u) for (a, b), u in sorted(pair_units.items()))
    state, _ = start(initial, 4)
    state, events = play_to(state, HAND_1)
    result = settled(events)
    assert result.seats == (1, 2, 0)
    players = result.settlement.players
    assert {seat: p.units for seat, p in zip(result.seats, players, strict=True)} == units_by_seat
    assert points_by_seat(events) == {1: 21, 2: -22, 0: 1}  # points do not depend on money
    assert sum(p.units for p in players) == 0
    pairs = {}
    for pair in result.settlement.pairs:
        a, b = result.seats[pair.a], result.seats[pair.b]
        sign = 1 if a < b else -1  # seen from the lower seat
        assert pair.units == pair.capped_points * pair.unit_value
        pairs[min(a, b), max(a, b)] = (sign * pair.capped_points, pair.unit_value)
    assert pairs == {k: (HAND_1_PAIR_POINTS[k], unit_by_pair[k]) for k in HAND_1_PAIR_POINTS}
    # the view's settlement is the event's
    table_view = view(state, None)
    assert table_view.hand is not None and table_view.hand.settlement == result.settlement
    # the stakes survive the state's JSON, and the history of the hand carries them
    assert state_from_dict(json.loads(json.dumps(state_to_dict(state)))) == state
    actions: list[Action] = [StartHand(seed(4), b"", at_ms=0)]
    replayed, _ = apply(initial, actions[0])
    targets = {seat: Board.parse(text) for seat, text in HAND_1.items()}
    while waiting := seats_to_act(replayed):
        actions.append(move_towards(replayed, waiting[0], targets[waiting[0]]))
        replayed, _ = apply(replayed, actions[-1])
    history = hand_history(initial, actions)
    assert history["initial_state"].get("pair_unit_values", []) == [
        {"a": a, "b": b, "unit_value": u} for (a, b), u in sorted(pair_units.items())
    ]
    by_seat = {p["seat"]: p["units"] for p in history["settlement"]["players"]}
    assert by_seat == units_by_seat


@pytest.mark.parametrize(
    ("pair_units", "message"),
    [
        ({(0, 3): 5}, "(0, 3) is not two seats a < b < 3"),
        ({(1, 0): 5}, "(1, 0) is not two seats a < b < 3"),
        ({(0, 1): 0}, "the unit value of (0, 1) must be a positive integer"),
        ({(0, 1): True}, "the unit value of (0, 1) must be a positive integer"),
    ],
)
def test_pair_units_name_two_seats_of_the_table_and_a_positive_value(
    pair_units: dict[tuple[int, int], int], message: str
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        new_match(CLASSIC, seats=3, pair_units=pair_units)
    assert caught.value.field == "pair_units" and message in caught.value.message


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ([{"a": 0, "b": 3, "unit_value": 5}], "pair_unit_values[0].b"),
        ([{"a": 0, "b": 1, "unit_value": 0}], "pair_unit_values[0].unit_value"),
        ([{"a": 0, "b": 1}], "pair_unit_values[0].unit_value"),
        ([{"a": 0, "b": 2, "unit_value": 5}, {"a": 0, "b": 1, "unit_value": 5}],
         "pair_unit_values[1]"),
        ([{"a": 0, "b": 1, "unit_value": 5}, {"a": 0, "b": 1, "unit_value": 6}],
         "pair_unit_values[1]"),
        ({"a": 0}, "pair_unit_values"),
    ],
)  # fmt: skip
def test_a_stored_state_s_pair_units_are_read_strictly(values: object, field: str) -> None:
    data = state_to_dict(table(CLASSIC, 3))
    assert "pair_unit_values" not in data  # absent without stakes: older states read as before
    assert data["format_version"] == 1  # and still written in version 1
    data["pair_unit_values"] = values
    # version 2, and version 1 as the releases that kept stakes before version 2 wrote it
    for version in (2, 1):
        data["format_version"] = version
        with pytest.raises(InvalidInputError) as caught:
            state_from_dict(data)
        assert caught.value.field == field


def test_a_state_with_stakes_as_the_releases_before_version_2_wrote_it_reads_the_same() -> None:
    """75a55fb to c3fb462 kept a table's pair unit values in a state of format 1."""
    staked = table(CLASSIC, 3, pair_units={(0, 1): 20, (0, 2): 15})
    data = state_to_dict(staked)
    assert data["format_version"] == 2
    old = {**data, "format_version": 1}
    assert state_from_dict(old) == staked
    assert state_as_written(staked, old) == old and state_as_written(staked, data) == data


@pytest.mark.parametrize(
    ("streets", "refused"),
    [
        ((Street(5, 5), Street(4, 4), Street(4, 4)), None),
        ((Street(6, 5), Street(6, 5), Street(4, 3)), None),
        ((Street(6, 6), Street(7, 7)), ("streets[0]", "places at most 5 cards")),
        ((Street(5, 5), Street(8, 8)), ("streets[1]", "places at most 5 cards")),
        ((Street(14, 13),), ("streets[0]", "places at most 5 cards")),
        ((Street(5, 5), Street(7, 5), Street(3, 3)), ("streets[1]", "at most one discard")),
    ],
)
def test_a_new_table_plays_streets_its_clock_can_play(
    streets: tuple[Street, ...], refused: tuple[str, str] | None
) -> None:
    # The rules allow any streets that place 13 cards; a table plays those whose default
    # moves stay cheap (a street's candidates grow with the cards it places).
    ruleset = dataclasses.replace(get_ruleset("pineapple"), name="custom", streets=streets)
    if refused is None:
        assert new_match(ruleset, seats=2).ruleset.streets == streets
        return
    with pytest.raises(InvalidRulesetError, match=refused[1]) as error:
        new_match(ruleset, seats=2)
    assert error.value.field == refused[0]
