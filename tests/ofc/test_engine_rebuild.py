"""The engine builds each new state by its constructor, field by field (cheaper than
``dataclasses.replace``): rebuilt with nothing changed, every value must come back equal, so
a field added to a state type later cannot be silently reset on every move."""

from __future__ import annotations

import dataclasses

from ofc import engine
from ofc.engine import HandSeat, HandState, MatchState, SitDown, StartHand, apply, new_match


def _mid_hand() -> MatchState:
    state, _ = apply(new_match("classic", seats=3), SitDown(0, "ann"))
    state, _ = apply(state, SitDown(2, "bob"))
    state, _ = apply(state, StartHand(bytes(range(32)), client_seed=b"c"))
    return state


# What the constructors in ofc.engine copy: a field added to one of these types must be
# copied there too (``_next_match``, ``_next_hand``, ``_hand_seat_with``), then listed here.
_COPIED = {
    MatchState: {"ruleset", "seats", "button", "hands_played", "max_hands", "hand", "pair_units"},
    HandState: {"number", "button", "server_seed", "client_seed", "deck", "dealt", "seats",
                "street", "turn", "started_at_ms", "updated_at_ms"},
    HandSeat: {"seat", "fantasyland", "fantasyland_streak", "board", "pending", "discards"},
}  # fmt: skip


def test_every_field_of_a_rebuilt_type_is_one_the_engine_copies() -> None:
    for kind, copied in _COPIED.items():
        assert {f.name for f in dataclasses.fields(kind)} == copied, kind.__name__


def test_a_match_rebuilt_with_nothing_changed_is_the_same_match() -> None:
    state = _mid_hand()
    assert engine._next_match(state, state.hand) == state
    assert engine._next_match(state, None) == dataclasses.replace(state, hand=None)


def test_a_hand_rebuilt_with_nothing_changed_is_the_same_hand() -> None:
    hand = _mid_hand().hand
    assert isinstance(hand, HandState)
    rebuilt = engine._next_hand(
        hand, hand.seats, dealt=hand.dealt, street=hand.street, turn=hand.turn,
        updated_at_ms=hand.updated_at_ms,
    )  # fmt: skip
    assert rebuilt == hand


def test_a_hand_seat_rebuilt_with_nothing_changed_is_the_same_seat() -> None:
    hand = _mid_hand().hand
    assert hand is not None
    for seat in hand.seats:
        assert isinstance(seat, HandSeat)
        assert engine._hand_seat_with(seat, seat.board, seat.pending, seat.discards) == seat
