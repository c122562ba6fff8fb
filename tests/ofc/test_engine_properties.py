"""Engine invariants under random play (Hypothesis, derandomised by tests/conftest.py).

Random legal play from random seeds, seats, buttons and owed Fantasylands, for every preset:
every hand completes with 13 cards a board, no card is ever in two places, settlement is
zero-sum, the state survives JSON (its compact form read strictly and as a server's own
record alike), views and events never show a seat a card it may not see, and replaying the
actions gives the same state and events; a history written from the played hand (no replay)
is the replayed one, byte for byte. Random actions are accepted exactly when an independent
legality check says so, and a rejected one changes nothing.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Protocol, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ofc.cards import ALL_CARDS, Card, deck_cards
from ofc.codec import (
    HandContext,
    TurnClock,
    action_from_dict,
    action_from_own_dict,
    action_to_dict,
    event_to_dict,
    hand_history,
    history_of_hand,
    state_from_dict,
    state_from_own_dict,
    state_from_own_parts,
    state_to_dict,
    state_to_own_parts,
)
from ofc.engine import (
    Action,
    CardsDealt,
    CardsPlaced,
    DiscardMade,
    Event,
    FantasylandRevealed,
    FantasylandSet,
    HandSettled,
    MatchState,
    Place,
    Seat,
    SetFantasyland,
    SitDown,
    StandUp,
    StartHand,
    TableView,
    Timeout,
    TimeoutApplied,
    apply,
    dealt_batches,
    event_for_viewer,
    replay,
    seats_to_act,
    view,
)
from ofc.errors import OfcError
from ofc.rulesets import BOARD_SIZE, PRESETS, ROWS, Row, Ruleset

from tests.ofc.test_engine import NAMES, start, table

ROW_CHOICES = (Row.TOP, Row.MIDDLE, Row.BOTTOM)
_T = TypeVar("_T")


class Draw(Protocol):
    """``st.DrawFn`` or ``DataObject.draw``."""

    def __call__(self, strategy: st.SearchStrategy[_T]) -> _T: ...


# --- building random tables -----------------------------------------------------------------
@st.composite
def tables(draw: st.DrawFn, ruleset: Ruleset) -> MatchState:
    """A table between hands: some seats taken, some owed Fantasyland, a random button."""
    size = draw(st.integers(ruleset.min_players, ruleset.max_players))
    taken = draw(
        st.lists(st.integers(0, size - 1), min_size=ruleset.min_players, max_size=size, unique=True)
    )
    fantasyland_sizes = sorted({e.cards for e in ruleset.fantasyland_entry} | {ruleset.stay_cards})
    seats = []
    for i in range(size):
        if i not in taken:
            seats.append(Seat())
            continue
        owed = draw(st.sampled_from([0, 0, *fantasyland_sizes]))
        streak = draw(st.integers(0, 2)) if owed else 0
        seats.append(Seat(NAMES[i], draw(st.integers(-50, 50)), owed, streak))
    points = sum(s.points for s in seats)
    first = next(i for i, s in enumerate(seats) if s.player_id)
    seats[first] = dataclasses.replace(seats[first], points=seats[first].points - points)
    return MatchState(
        ruleset,
        tuple(seats),
        button=draw(st.integers(0, size - 1)),
        hands_played=draw(st.integers(0, 5)),
    )


def random_move(draw: Draw, state: MatchState, seat: int) -> Action:
    """A uniformly random legal move for ``seat`` (or, sometimes, a timeout carrying one:
    the engine applies a timeout's move whoever chose it)."""
    move = _random_legal_move(draw, state, seat)
    if draw(st.integers(0, 9)) == 0:
        at_ms = draw(st.integers(0, 10**6))
        return Timeout(seat, dataclasses.replace(move, at_ms=at_ms), "random-1", at_ms)
    return move


def _random_legal_move(draw: Draw, state: MatchState, seat: int) -> Place | SetFantasyland:
    hand = state.hand
    assert hand is not None
    hand_seat = hand.seat(seat)
    cards = draw(st.permutations(hand_seat.pending))
    if hand_seat.in_fantasyland:
        return SetFantasyland(
            seat, tuple(cards[:3]), tuple(cards[3:8]), tuple(cards[8:13]), tuple(cards[13:])
        )
    street = state.ruleset.streets[hand.street]
    kept, discards = cards[: street.place], cards[street.place :]
    room = {row: row.size - len(hand_seat.board.row(row)) for row in ROWS}
    placements = []
    for card in kept:
        row = draw(st.sampled_from([r for r in ROW_CHOICES if room[r] > 0]))
        room[row] -= 1
        placements.append((card, row))
    return Place(seat, tuple(placements), discards[0] if discards else None)


# --- what a seat may see --------------------------------------------------------------------
def allowed_cards(state: MatchState, viewer: int | None) -> set[Card]:
    hand = state.hand
    if hand is None:
        return set()
    seen: set[Card] = set()
    for s in hand.seats:
        if not s.in_fantasyland or hand.over:
            seen.update(s.board.cards)
        if s.seat == viewer:
            seen.update(s.board.cards, s.pending, s.discards)
    return seen


def view_cards(table_view: TableView) -> set[Card]:
    if table_view.hand is None:
        return set()
    cards: set[Card] = set()
    for s in table_view.hand.seats:
        cards.update(s.board.cards, s.pending, s.discards)
    return cards


def event_cards(event: Event) -> set[Card]:
    if isinstance(event, CardsDealt):
        return set(event.cards)
    if isinstance(event, CardsPlaced):
        return {c for c, _ in event.placements}
    if isinstance(event, DiscardMade):
        return set() if event.card is None else {event.card}
    if isinstance(event, FantasylandSet):
        return {*event.board.cards, *event.discards}
    if isinstance(event, FantasylandRevealed):
        return set(event.board.cards)
    if isinstance(event, TimeoutApplied):
        move = event.action
        if isinstance(move, Place):
            return {c for c, _ in move.placements} | ({move.discard} if move.discard else set())
        if isinstance(move, SetFantasyland):
            return {*move.top, *move.middle, *move.bottom, *move.discards}
        return set()
    if isinstance(event, HandSettled):
        return {c for b in event.boards for c in b.cards}
    return set()


def check_invariants(state: MatchState, events: tuple[Event, ...]) -> None:
    hand = state.hand
    assert hand is not None
    # Every card in exactly one place: a board, a batch, a discard pile or the undealt deck.
    held = [c for s in hand.seats for c in (*s.board.cards, *s.pending, *s.discards)]
    assert len(held) == len(set(held))
    assert sorted(held + list(hand.deck[hand.dealt :])) == list(deck_cards(state.ruleset.jokers))
    assert set(held) == set(hand.deck[: hand.dealt])
    # The state survives JSON exactly.
    assert state_from_dict(json.loads(json.dumps(state_to_dict(state)))) == state
    # A server's own compact form reads back the same without the strict checks.
    compact = json.loads(json.dumps(state_to_dict(state, compact=True)))
    own = state_from_own_dict(compact, ruleset=state.ruleset)
    assert own == state_from_dict(compact, ruleset=state.ruleset) == state
    assert own.hand is not None
    assert all(type(c) is Card for s in own.hand.seats for c in (*s.board.cards, *s.pending))
    # ... and so do its parts as a table record stores them (the deck stored, not shuffled).
    parts = state_to_own_parts(state)
    assert state_from_own_parts(parts, ruleset=state.ruleset) == state
    viewers: list[int | None] = [None, *range(len(state.seats))]
    for viewer in viewers:
        allowed = allowed_cards(state, viewer)
        table_view = view(state, viewer)
        assert view_cards(table_view) <= allowed
        assert table_view.hand is not None
        assert (table_view.hand.server_seed is not None) == hand.over
        assert table_view.hand.deck_remaining == len(hand.deck) - hand.dealt
        for event in events:
            shown = event_for_viewer(event, viewer)
            assert event_cards(shown) <= allowed, (viewer, shown)
            json.dumps(event_to_dict(shown))


def play_hand(
    draw: Draw, state: MatchState, *, checks: bool = True
) -> Iterator[tuple[MatchState, Action, tuple[Event, ...]]]:
    """Start a hand and play it with random legal moves, yielding each step."""
    start = StartHand(draw(st.binary(min_size=32, max_size=32)), draw(st.binary(max_size=8)))
    state, events = apply(state, start)
    if checks:
        check_invariants(state, events)
    yield state, start, events
    while waiting := seats_to_act(state):
        seat = draw(st.sampled_from(waiting))
        action = random_move(draw, state, seat)
        state, events = apply(state, action)
        if checks:
            check_invariants(state, events)
            stored = json.loads(json.dumps(action_to_dict(action)))
            assert action_from_own_dict(stored) == action_from_dict(stored) == action
        yield state, action, events


# --- properties -----------------------------------------------------------------------------
PRESET_NAMES = sorted(PRESETS)


@pytest.mark.parametrize("name", PRESET_NAMES)
@settings(max_examples=25)
@given(data=st.data())
def test_random_legal_play_completes_consistently(name: str, data: st.DataObject) -> None:
    ruleset = PRESETS[name]
    initial = data.draw(tables(ruleset))
    state = initial
    actions: list[Action] = []
    all_events: list[Event] = []
    for _ in range(2):  # two hands: the second plays the Fantasylands the first earned
        before = state
        for step, action, events in play_hand(data.draw, before):
            actions.append(action)
            all_events += events
            state = step
        hand = state.hand
        assert hand is not None and hand.over
        assert all(len(s.board.cards) == BOARD_SIZE for s in hand.seats)
        assert len(hand.seats) == sum(s.occupied for s in before.seats)
        result = next(e for e in all_events[::-1] if isinstance(e, HandSettled))
        assert sum(p.points for p in result.settlement.players) == 0
        for seat, player in zip(result.seats, result.settlement.players, strict=True):
            assert state.seats[seat].points == before.seats[seat].points + player.points
            assert state.seats[seat].fantasyland == (
                player.fantasyland.cards if player.fantasyland.qualifies else 0
            )
        assert sum(s.points for s in state.seats) == 0
    assert replay(initial, actions) == (state, tuple(all_events))
    # The action log survives JSON and replays to the same state.
    logged = [action_from_dict(json.loads(json.dumps(action_to_dict(a)))) for a in actions]
    assert logged == actions
    assert replay(initial, logged)[0] == state


def legal(state: MatchState, action: Action) -> bool:
    """An independent statement of when an action is allowed."""
    n = len(state.seats)
    hand = state.hand
    in_progress = hand is not None and not hand.over
    if isinstance(action, SitDown):
        return (
            0 <= action.seat < n
            and not state.seats[action.seat].player_id
            and bool(action.player_id)
            and all(s.player_id != action.player_id for s in state.seats)
        )
    if isinstance(action, StandUp):
        if not (0 <= action.seat < n and state.seats[action.seat].player_id):
            return False
        if in_progress and hand is not None and action.seat in hand.order:
            return False
        return not state.seats[action.seat].fantasyland
    if isinstance(action, StartHand):
        return not in_progress and sum(bool(s.player_id) for s in state.seats) >= 2
    if not in_progress or hand is None or action.seat not in hand.order:
        return False
    hand_seat = hand.seat(action.seat)
    if isinstance(action, Timeout):  # a waited-for seat, and its move is legal (same seat, time)
        move = action.move
        return (
            not hand_seat.done
            and (hand_seat.in_fantasyland or hand.turn == action.seat)
            and (move.seat, move.at_ms) == (action.seat, action.at_ms)
            and legal(state, move)
        )
    if isinstance(action, SetFantasyland):
        cards = [*action.top, *action.middle, *action.bottom, *action.discards]
        return (
            hand_seat.in_fantasyland
            and not hand_seat.done
            and (len(action.top), len(action.middle), len(action.bottom)) == (3, 5, 5)
            and sorted(cards) == sorted(hand_seat.pending)
        )
    if hand_seat.in_fantasyland or hand.turn != action.seat:
        return False
    street = state.ruleset.streets[hand.street]
    cards = [c for c, _ in action.placements] + ([] if action.discard is None else [action.discard])
    rows = [r for _, r in action.placements]
    return (
        len(action.placements) == street.place
        and len(cards) == street.deal
        and sorted(cards) == sorted(hand_seat.pending)
        and all(rows.count(r) <= r.size - len(hand_seat.board.row(r)) for r in ROWS)
    )


@st.composite
def random_actions(draw: st.DrawFn, state: MatchState) -> Action:
    """Mostly near-misses: the right seat's cards with something changed."""
    seat = draw(st.integers(-1, len(state.seats)))
    any_card = st.sampled_from(ALL_CARDS)
    kind = draw(
        st.sampled_from(["place", "place", "place", "set", "timeout", "sit", "stand", "start"])
    )
    if kind == "sit":
        return SitDown(seat, draw(st.sampled_from(["", *NAMES, "eve"])))
    if kind == "stand":
        return StandUp(seat)
    if kind == "start":
        return StartHand(bytes(32))
    hand = state.hand
    pool: list[Card] = []
    if hand is not None and draw(st.booleans()):
        holder = draw(st.sampled_from(hand.seats))
        seat, pool = holder.seat, list(holder.pending)
    cards = draw(
        st.lists(st.one_of(st.sampled_from(pool), any_card) if pool else any_card, max_size=17)
    )
    move: Place | SetFantasyland
    if kind == "set" or (kind == "timeout" and draw(st.booleans())):
        move = SetFantasyland(
            seat, tuple(cards[:3]), tuple(cards[3:8]), tuple(cards[8:13]), tuple(cards[13:])
        )
    else:
        rows = draw(
            st.lists(st.sampled_from(ROW_CHOICES), min_size=len(cards), max_size=len(cards))
        )
        split = draw(st.integers(0, len(cards)))
        discard = cards[split] if split < len(cards) and draw(st.booleans()) else None
        move = Place(seat, tuple(zip(cards[:split], rows[:split], strict=True)), discard)
    # a timeout carries any move; now and then one of another seat, checked all the same
    return Timeout(seat, move) if kind == "timeout" else move


@pytest.mark.parametrize("name", PRESET_NAMES)
@settings(max_examples=30)
@given(data=st.data())
def test_random_actions_are_accepted_exactly_when_legal(name: str, data: st.DataObject) -> None:
    ruleset = PRESETS[name]
    state = data.draw(tables(ruleset))
    state = (
        dataclasses.replace(
            state, seats=tuple(dataclasses.replace(s, fantasyland=0) for s in state.seats)
        )
        if data.draw(st.booleans())
        else state
    )
    steps = data.draw(st.integers(0, 12))
    for k, (step, _, _) in enumerate(play_hand(data.draw, state, checks=False)):
        state = step
        if k >= steps:
            break
    for _ in range(8):
        action = data.draw(random_actions(state))
        before = json.dumps(state_to_dict(state))
        try:
            new_state, _ = apply(state, action)
        except OfcError as error:
            assert not legal(state, action), (action, error)
            assert error.reason.isupper()
            assert json.dumps(state_to_dict(state)) == before
        else:
            assert legal(state, action), action
            state = new_state


@settings(max_examples=60)
@given(data=st.data())
def test_states_and_actions_round_trip_through_json(data: st.DataObject) -> None:
    ruleset = PRESETS[data.draw(st.sampled_from(PRESET_NAMES))]
    state = data.draw(tables(ruleset))
    steps = data.draw(st.integers(0, 40))
    for k, (step, action, _) in enumerate(play_hand(data.draw, state, checks=False)):
        state = step
        text = json.dumps(action_to_dict(action))
        assert action_from_dict(json.loads(text)) == action
        if k >= steps:
            break
    text = json.dumps(state_to_dict(state))
    assert state_from_dict(json.loads(text)) == state
    assert json.dumps(state_to_dict(state_from_dict(json.loads(text)))) == text


def test_a_corrupted_state_is_refused_on_load() -> None:
    state, _ = start(table("classic", 2), 3)
    good = state_to_dict(state)
    bad_deck = json.loads(json.dumps(good))
    deck = bad_deck["hand"]["deck"]
    deck[0], deck[1] = deck[1], deck[0]
    moved = json.loads(json.dumps(good))
    seat = next(s for s in moved["hand"]["seats"] if s["pending"])
    seat["board"]["top"].append(seat["pending"].pop())
    for broken, field in (
        (bad_deck, "hand.deck"),
        (moved, "hand.seats[0]"),
        ({**good, "format_version": 3}, "format_version"),
        ({**good, "button": "0"}, "button"),
    ):
        with pytest.raises(OfcError) as caught:
            state_from_dict(broken)
        assert caught.value.field == field


@st.composite
def contexts(draw: st.DrawFn, state: MatchState) -> HandContext | None:
    """What a table adds to a history, or nothing (a history of format 1, 2 or 4)."""
    if draw(st.booleans()):
        return None
    clock = draw(st.none() | st.builds(TurnClock, st.integers(1, 10**6), st.integers(1, 10**6)))
    units = draw(st.none() | st.tuples(*(st.integers(-(10**6), 10**6) for _ in state.seats)))
    changes = draw(st.none() | st.just((SitDown(0, NAMES[0], 5), StandUp(1, 9))))
    return HandContext(draw(st.sampled_from(["", "ab" * 32])), clock, units, changes)


@pytest.mark.parametrize("name", PRESET_NAMES)
@settings(max_examples=20)
@given(data=st.data())
def test_a_history_of_the_played_hand_is_the_replayed_one(name: str, data: st.DataObject) -> None:
    state = data.draw(tables(PRESETS[name]))
    for _ in range(2):  # the second hand starts from a table holding the first, over
        initial = state
        actions: list[Action] = []
        dealt: list[Event] = []
        for step, action, events in play_hand(data.draw, initial, checks=False):
            actions.append(action)
            dealt += [e for e in events if isinstance(e, CardsDealt)]
            state = step
            assert state.hand is not None
            # The batches read from the hand are the ones dealt so far, in order.
            assert dealt_batches(state.hand, state.ruleset) == tuple(dealt)
        settled = next(e for e in events if isinstance(e, HandSettled))
        context = data.draw(contexts(state))
        version = data.draw(st.none() | st.sampled_from([3, 4]))
        replayed = hand_history(initial, actions, context, version=version)
        played = history_of_hand(initial, actions, state, settled, context, version=version)
        assert json.dumps(played) == json.dumps(replayed)
