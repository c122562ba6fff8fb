"""The hand engine: a match at one table as a pure reducer, with views and events.

``apply(state, action) -> (state, events)`` is the only way a match changes. States, actions
and events are frozen dataclasses; the engine reads no clock and draws no random number:
the shell passes in the server seed, the client seed and the times (``at_ms``).

>>> from ofc.cards import format_cards
>>> state = new_match("classic", seats=2)
>>> state, _ = apply(state, SitDown(0, "ann"))
>>> state, _ = apply(state, SitDown(1, "bob"))
>>> state, events = apply(state, StartHand(bytes(range(32)), b"auditor-test"))
>>> [type(e).__name__ for e in events]
['HandStarted', 'CardsDealt']
>>> hand = state.hand
>>> hand.turn, format_cards(hand.seat(1).pending)  # seat 1 sits left of the button (seat 0)
(1, 'Qs 6d Ad Td 6s')
>>> state, events = apply(state, Place.by_rows(1, top="6d", middle="6s Td", bottom="Qs Ad"))
>>> [type(e).__name__ for e in events], format_cards(state.hand.seat(0).pending)
(['CardsPlaced', 'CardsDealt'], '4s 8s Kc Kh 7d')
>>> apply(state, Place.by_rows(1, bottom="Kc"))
Traceback (most recent call last):
...
ofc.errors.NotYourTurnError: it is seat 0's turn, not seat 1's

Deal order (what an auditor re-derives from the hand history alone)
------------------------------------------------------------------
The deck of hand ``n`` is ``deal_deck(server_seed, client_seed, nonce=n, jokers=j)``
(ofc-shuffle-v1 for a 52-card deck, ofc-shuffle-v2 for a ruleset with ``j`` jokers; ``n``
counts the hands started at the table from 1). Cards leave it from
position 0 onward, one after the other, none skipped or burnt:

1. **Turn order** is fixed when the hand starts: the occupied seats in increasing seat
   index, wrapping around, starting with the first seat after the button.
2. **Fantasyland seats first.** Every seat that plays Fantasyland takes all its cards (the
   13..17 it earned) in one block, in turn order, before anyone else is dealt.
3. **Then the other seats, street by street.** For each street ``s`` of ``ruleset.streets``
   and, within it, each non-Fantasyland seat in turn order, the seat takes the next
   ``streets[s].deal`` cards. A batch is taken at the moment that seat's turn comes (lazily:
   the next seat's batch is dealt only once the previous batch has been placed), but since
   the turn passes strictly in this order the positions are fixed in advance. With ``F``
   the Fantasyland cards in all, ``k`` non-Fantasyland seats and ``D_s`` the deal of street
   ``s``, the batch of the ``j``-th of them (0-based, turn order) on street ``s`` starts at
   position ``F + k * (D_0 + ... + D_(s-1)) + j * D_s``.

Every ``CardsDealt`` event carries that ``position``, and :func:`deal_positions` computes
them from the hand's seats, so a history can be checked against the formula.

Turns and Fantasyland
---------------------
Non-Fantasyland seats act one at a time: the seat holding a dealt batch must place it (and
discard what the street discards) before the next seat is dealt. A Fantasyland seat sets all
its cards in one :class:`SetFantasyland` at any time during the hand; the set stays face down
(only its owner sees it) until every seat is done. When the last board is complete the hand
settles in the same ``apply``: Fantasyland boards are revealed, :func:`ofc.scoring.settle`
scores the boards (each pair of seats for the unit value agreed for it in
``MatchState.pair_units``, else the ruleset's), each seat's points and next Fantasyland are
recorded, the server seed is revealed and the button moves — to the next occupied seat, or
it stays put after a hand in which someone played Fantasyland when
``ruleset.button_moves_in_fantasyland`` is false.

Fantasyland bookkeeping: a seat's ``fantasyland`` is the number of cards it is owed next
hand (the settlement's result, which applies the entry rule, the stay rule and
``max_consecutive_fantasylands``); ``fantasyland_streak`` counts the Fantasyland hands it
has just played in a row (0 after a normal hand) and is what the cap is checked against.
A seat cannot stand up while it is owed a Fantasyland, except once the match is over
(``max_hands`` played), when the debt lapses.

Timeouts
--------
A :class:`Timeout` carries the move the table makes for a seat whose clock ran out (the seat
holding the batch, or a Fantasyland seat that has not set) and the identity of the policy
that chose it. The engine does not choose: the rules of the game do not depend on a bot. The
shell asks a default-move policy (:mod:`ofc.policy`, a strategy passed in as data) and the
engine checks the move like any other (the seat's own batch, rows with room, the street's
discard count, a Fantasyland set of the dealt cards) and applies it, emitting
:class:`TimeoutApplied` with it. Replaying a history so applies the recorded move, whatever
a later policy would choose.

Views and events
----------------
:func:`view` is what one seat (or a spectator) may see. Events are produced in full; a
private one (:func:`visible_to` names its owner: a dealt batch, a discard, a Fantasyland set,
a timeout's resolved move) goes to anyone else through :func:`event_for_viewer`, which
empties the cards but keeps the event (others still learn that seat 2 was dealt 3 cards).

Rejections
----------
Every illegal action raises a typed :class:`~ofc.errors.OfcError` (``field`` names the
offending input) and the state, being immutable, is untouched. :func:`verify` raises the same
error without acting; :func:`can_apply` answers yes or no. Checks run in this order: the
hand is in progress, the seat exists and plays it, it is that seat's move, the input is well
formed (cards, rows, no card twice), the counts (placed, discarded), the cards were dealt
to the seat, the rows have room.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

from ofc.cards import Card, parse_cards
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
from ofc.frozen import maker
from ofc.rulesets import BOARD_SIZE, ROWS, Row, Ruleset, resolve_ruleset
from ofc.scoring import Board, Settlement, settle
from ofc.shuffle import SERVER_SEED_BYTES, commitment, deal_deck

__all__ = [
    "MAX_STREET_PLACE",
    "Action",
    "ButtonMoved",
    "CardsDealt",
    "CardsPlaced",
    "DiscardMade",
    "Event",
    "FantasylandRevealed",
    "FantasylandSet",
    "HandSeat",
    "HandSeatView",
    "HandSettled",
    "HandStarted",
    "HandState",
    "HandView",
    "MatchState",
    "Place",
    "Seat",
    "SeatTaken",
    "SeatVacated",
    "SeatView",
    "SeedRevealed",
    "SetFantasyland",
    "SitDown",
    "StandUp",
    "StartHand",
    "TableView",
    "Timeout",
    "TimeoutApplied",
    "apply",
    "apply_unheld",
    "can_apply",
    "check_place_unique",
    "check_playable",
    "check_unique",
    "deal_positions",
    "dealt_batches",
    "event_for_viewer",
    "hand_settlement",
    "new_match",
    "next_occupied",
    "replay",
    "seat_shown",
    "seat_view",
    "seats_to_act",
    "set_card_names",
    "verify",
    "view",
    "visible_to",
]


_T = TypeVar("_T")


# --- state ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Seat:
    """One seat of the table between hands.

    ``player_id`` is ``""`` for an empty seat. ``fantasyland`` is the number of cards the
    seat is owed as a Fantasyland hand next hand (0: none); ``fantasyland_streak`` is how
    many Fantasyland hands in a row it has just played (0 after a normal hand).
    """

    player_id: str = ""
    points: int = 0
    fantasyland: int = 0
    fantasyland_streak: int = 0

    @property
    def occupied(self) -> bool:
        return bool(self.player_id)


@dataclass(frozen=True, slots=True)
class HandSeat:
    """One seat's part of a hand.

    ``fantasyland``: cards dealt at once (0 for a seat playing street by street);
    ``fantasyland_streak``: for a Fantasyland seat, the Fantasyland hands in a row counting
    this one (what :func:`ofc.scoring.settle` needs for a consecutive cap). ``pending``:
    dealt and not yet placed; ``board``: placed cards, each row in the order placed (a
    Fantasyland set as given); ``discards``: in the order discarded.
    """

    seat: int
    fantasyland: int = 0
    fantasyland_streak: int = 0
    board: Board = field(default_factory=Board)
    pending: tuple[Card, ...] = ()
    discards: tuple[Card, ...] = ()

    @property
    def done(self) -> bool:
        return len(self.board.top) + len(self.board.middle) + len(self.board.bottom) == BOARD_SIZE

    @property
    def in_fantasyland(self) -> bool:
        return self.fantasyland > 0


@dataclass(frozen=True, slots=True)
class HandState:
    """A hand in progress, or the last hand once ``over`` (kept until the next starts).

    ``seats`` are in turn order (first after the button first). ``deck`` is the whole
    shuffled deck; ``deck[:dealt]`` has been dealt. ``street`` is the street the
    non-Fantasyland seats are on (``len(ruleset.streets)`` once they are all done) and
    ``turn`` the seat holding the batch to place (``None`` when no such seat is left).
    """

    number: int
    button: int
    server_seed: bytes = field(repr=False)
    client_seed: bytes
    deck: tuple[Card, ...] = field(repr=False)
    dealt: int
    seats: tuple[HandSeat, ...]
    street: int
    turn: int | None
    started_at_ms: int = 0
    updated_at_ms: int = 0

    @property
    def commitment(self) -> str:
        return commitment(self.server_seed)

    @property
    def over(self) -> bool:
        # A loop, not all() over a generator (twice the cost): a move asks several times.
        for seat in self.seats:  # noqa: SIM110
            if not seat.done:
                return False
        return True

    @property
    def order(self) -> tuple[int, ...]:
        return tuple(s.seat for s in self.seats)

    @property
    def deck_remaining(self) -> int:
        return len(self.deck) - self.dealt

    def index(self, seat: int) -> int:
        """Position of ``seat`` in :attr:`seats` (turn order); -1 when it is not in the hand."""
        for i, hand_seat in enumerate(self.seats):
            if hand_seat.seat == seat:
                return i
        return -1

    def seat(self, seat: int) -> HandSeat:
        i = self.index(seat)
        if i < 0:
            raise UnknownSeatError(f"seat {seat} is not playing hand {self.number}", field="seat")
        return self.seats[i]


@dataclass(frozen=True, slots=True)
class MatchState:
    """A table: its ruleset, seats, button, hands started so far and the current hand.

    ``hands_played`` is the number of the last hand started (the next is its successor and
    uses it as the shuffle nonce). ``max_hands``: after that many hands, no more start.
    ``pair_units``: the money units per point agreed for particular pairs of seats when the
    table was made, ``(seat a, seat b, unit value)`` with ``a < b``, ascending; every other
    pair plays for ``ruleset.unit_value``.
    """

    ruleset: Ruleset
    seats: tuple[Seat, ...]
    button: int = 0
    hands_played: int = 0
    max_hands: int | None = None
    hand: HandState | None = None
    pair_units: tuple[tuple[int, int, int], ...] = ()

    @property
    def match_over(self) -> bool:
        return (
            self.max_hands is not None
            and self.hands_played >= self.max_hands
            and (self.hand is None or self.hand.over)
        )

    @property
    def hand_in_progress(self) -> bool:
        return self.hand is not None and not self.hand.over


MAX_STREET_PLACE = 5
"""The most cards a street of a new table places (the first street of every preset's five).
A seat whose clock runs out has its move chosen over every way to place its street, which
grows with the street: 5 cards at most keeps that within ~150 ms; 8 took seconds, 13 a
minute and a GB (tables and histories of earlier rulesets still load, verify and play)."""


def check_playable(rules: Ruleset) -> None:
    """Raise :class:`~ofc.errors.InvalidRulesetError` when a new table cannot play ``rules``
    (its streets are dealt and played move by move): every street discards at most one card
    and places at most :data:`MAX_STREET_PLACE`. A ruleset that fails still settles boards
    (the rules service takes it); tables of earlier rulesets still load and play.

    >>> check_playable(resolve_ruleset("pineapple"))
    >>> check_playable(resolve_ruleset({"preset": "classic", "streets": [[13, 13]]}))
    Traceback (most recent call last):
    ...
    ofc.errors.InvalidRulesetError: ruleset 'classic+custom': a street places at most 5 cards ...
    """
    for i, street in enumerate(rules.streets):
        if street.discard > 1:
            raise InvalidRulesetError(
                f"ruleset {rules.name!r}: the engine supports at most one discard per street",
                field=f"streets[{i}]",
            )
        if street.place > MAX_STREET_PLACE:
            raise InvalidRulesetError(
                f"ruleset {rules.name!r}: a street places at most {MAX_STREET_PLACE} cards "
                f"(the default move of a seat out of time is chosen over every placement of "
                f"its street), not {street.place}",
                field=f"streets[{i}]",
            )


def new_match(
    ruleset: Ruleset | str = "classic",
    *,
    seats: int | None = None,
    button: int = 0,
    max_hands: int | None = None,
    pair_units: Mapping[tuple[int, int], int] | None = None,
) -> MatchState:
    """An empty table: ``seats`` seats (default the ruleset's maximum), button on ``button``;
    ``pair_units[(a, b)]`` (seats ``a < b``) is the unit value agreed for that pair.

    >>> m = new_match("pineapple")
    >>> len(m.seats), m.button, m.hand is None
    (3, 0, True)
    >>> new_match("pineapple", pair_units={(0, 2): 15, (0, 1): 20}).pair_units
    ((0, 1, 20), (0, 2, 15))
    >>> new_match("pineapple", seats=4)
    Traceback (most recent call last):
    ...
    ofc.errors.WrongPlayerCountError: ruleset 'pineapple' plays 2..3 seats, not 4
    """
    rules = resolve_ruleset(ruleset)
    check_playable(rules)
    count = rules.max_players if seats is None else seats
    if (
        isinstance(count, bool)
        or not isinstance(count, int)
        or not (rules.min_players <= count <= rules.max_players)
    ):
        raise WrongPlayerCountError(
            f"ruleset {rules.name!r} plays {rules.min_players}..{rules.max_players} seats, "
            f"not {count}",
            field="seats",
        )
    if isinstance(button, bool) or not isinstance(button, int) or not 0 <= button < count:
        raise UnknownSeatError(f"no seat {button} for the button", field="button")
    if max_hands is not None and (
        isinstance(max_hands, bool) or not isinstance(max_hands, int) or max_hands < 1
    ):
        raise InvalidInputError("max_hands must be a positive integer", field="max_hands")
    stakes: list[tuple[int, int, int]] = []
    for pair, unit in (pair_units or {}).items():
        if not (
            isinstance(pair, tuple)
            and len(pair) == 2
            and all(_is_int(seat) for seat in pair)
            and 0 <= pair[0] < pair[1] < count
        ):
            raise InvalidInputError(
                f"pair_units: {pair!r} is not two seats a < b < {count}", field="pair_units"
            )
        if not _is_int(unit) or unit < 1:
            raise InvalidInputError(
                f"pair_units: the unit value of {pair!r} must be a positive integer",
                field="pair_units",
            )
        stakes.append((pair[0], pair[1], unit))
    return MatchState(
        rules,
        (Seat(),) * count,
        button=button,
        max_hands=max_hands,
        pair_units=tuple(sorted(stakes)),
    )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --- actions --------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SitDown:
    seat: int
    player_id: str
    at_ms: int = 0


@dataclass(frozen=True, slots=True)
class StandUp:
    """Leave the table; refused during the seat's hand, and while any seat owes a Fantasyland
    hand earned at the table (the seat that owes it may go when too few players are seated
    for a hand to start)."""

    seat: int
    at_ms: int = 0


@dataclass(frozen=True, slots=True)
class StartHand:
    """Start the next hand; ``server_seed`` is 32 fresh bytes from the shell's CSPRNG."""

    server_seed: bytes = field(repr=False)
    client_seed: bytes = b""
    at_ms: int = 0


@dataclass(frozen=True, slots=True)
class Place:
    """Place the seat's dealt batch: every card but the discard goes to a row."""

    seat: int
    placements: tuple[tuple[Card, Row], ...]
    discard: Card | None = None
    at_ms: int = 0

    @classmethod
    def by_rows(
        cls,
        seat: int,
        *,
        top: str = "",
        middle: str = "",
        bottom: str = "",
        discard: str | None = None,
        at_ms: int = 0,
    ) -> Place:
        """Spell the placement row by row with card codes.

        >>> p = Place.by_rows(2, top="2c", bottom="As Ks", discard="7d")
        >>> [(str(c), r.value) for c, r in p.placements], str(p.discard)
        ([('2c', 'top'), ('As', 'bottom'), ('Ks', 'bottom')], '7d')
        """
        placements = tuple(
            (card, row)
            for row, text in ((Row.TOP, top), (Row.MIDDLE, middle), (Row.BOTTOM, bottom))
            for card in parse_cards(text)
        )
        return cls(seat, placements, None if discard is None else Card.parse(discard), at_ms)


@dataclass(frozen=True, slots=True)
class SetFantasyland:
    """A Fantasyland seat sets all its cards at once (face down until every seat is done)."""

    seat: int
    top: tuple[Card, ...]
    middle: tuple[Card, ...]
    bottom: tuple[Card, ...]
    discards: tuple[Card, ...] = ()
    at_ms: int = 0


@dataclass(frozen=True, slots=True)
class Timeout:
    """The seat ran out of time; the table makes ``move`` for it (same seat, same time).

    ``policy``: the identity of the policy that chose the move (``"ofc-timeout-4"``;
    ``None`` when not known, as in histories written before policies were named).
    ``deadline_ms``: the deadline that ran out, when the table recorded it. The engine
    checks ``move`` as it checks a :class:`Place` or :class:`SetFantasyland`; it reads no
    clock, so it does not judge the deadline (the verifier does, from a history's times).

    >>> move = Place.by_rows(1, bottom="As")
    >>> Timeout(1, move, "ofc-timeout-4").move is move
    True
    """

    seat: int
    move: Place | SetFantasyland
    policy: str | None = None
    at_ms: int = 0
    deadline_ms: int | None = None


Action = SitDown | StandUp | StartHand | Place | SetFantasyland | Timeout
HandAction = Place | SetFantasyland | Timeout


# --- events ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SeatTaken:
    seat: int
    player_id: str


@dataclass(frozen=True, slots=True)
class SeatVacated:
    """The player left with ``points`` (the seat starts again from zero)."""

    seat: int
    player_id: str
    points: int


@dataclass(frozen=True, slots=True)
class HandStarted:
    """``order``: turn order; ``fantasyland``: (seat, cards) for each Fantasyland seat."""

    number: int
    button: int
    order: tuple[int, ...]
    fantasyland: tuple[tuple[int, int], ...]
    commitment: str
    client_seed: bytes
    at_ms: int


@dataclass(frozen=True, slots=True)
class CardsDealt:
    """``count`` cards from deck ``position`` to ``seat`` (``street`` None: Fantasyland).

    Private to ``seat``: others get it with ``cards`` empty (see :func:`event_for_viewer`).
    """

    seat: int
    street: int | None
    position: int
    count: int
    cards: tuple[Card, ...] = ()


@dataclass(frozen=True, slots=True)
class CardsPlaced:
    seat: int
    street: int
    placements: tuple[tuple[Card, Row], ...]


@dataclass(frozen=True, slots=True)
class DiscardMade:
    """Private to ``seat``: others get it with ``card`` None."""

    seat: int
    street: int
    card: Card | None


@dataclass(frozen=True, slots=True)
class TimeoutApplied:
    """The move made for ``seat`` (its :class:`Timeout`'s); private to it (others get
    ``action`` None and see the placement in the :class:`CardsPlaced` that follows)."""

    seat: int
    action: Place | SetFantasyland | None


@dataclass(frozen=True, slots=True)
class FantasylandSet:
    """Private to ``seat`` until the reveal: others get an empty board and no discards."""

    seat: int
    board: Board
    discards: tuple[Card, ...]


@dataclass(frozen=True, slots=True)
class FantasylandRevealed:
    seat: int
    board: Board


@dataclass(frozen=True, slots=True)
class HandSettled:
    """The result. ``seats[i]`` is the seat of ``boards[i]`` and of the settlement's player
    ``i``; ``fantasyland_next``: (seat, cards) owed next hand; ``totals``: each of those
    seats' cumulative points after the hand."""

    number: int
    seats: tuple[int, ...]
    boards: tuple[Board, ...]
    settlement: Settlement
    fantasyland_next: tuple[tuple[int, int], ...]
    totals: tuple[int, ...]
    at_ms: int


@dataclass(frozen=True, slots=True)
class SeedRevealed:
    number: int
    server_seed: bytes
    client_seed: bytes
    commitment: str


@dataclass(frozen=True, slots=True)
class ButtonMoved:
    """Emitted after every hand; ``to_seat == from_seat`` when the Fantasyland rule keeps it."""

    from_seat: int
    to_seat: int


Event = (
    SeatTaken
    | SeatVacated
    | HandStarted
    | CardsDealt
    | CardsPlaced
    | DiscardMade
    | TimeoutApplied
    | FantasylandSet
    | FantasylandRevealed
    | HandSettled
    | SeedRevealed
    | ButtonMoved
)
Events = tuple[Event, ...]
_E = TypeVar("_E", bound=Event)


def visible_to(event: Event) -> int | None:
    """The only seat that may see ``event`` in full, or ``None`` when it is public.

    >>> visible_to(DiscardMade(2, 1, Card.parse("7d"))), visible_to(ButtonMoved(0, 1))
    (2, None)
    """
    if isinstance(event, CardsDealt | DiscardMade | TimeoutApplied | FantasylandSet):
        return event.seat
    return None


def event_for_viewer(event: _E, viewer: int | None) -> _E:
    """``event`` as ``viewer`` (a seat, or ``None`` for a spectator) may see it.

    Private events are never dropped, only emptied of what the viewer may not see.

    >>> e = CardsDealt(1, 0, 0, 2, (Card.parse("As"), Card.parse("Kd")))
    >>> event_for_viewer(e, 1) is e, event_for_viewer(e, 0).cards, event_for_viewer(e, None).count
    (True, (), 2)
    """
    owner = visible_to(event)
    if owner is None or owner == viewer:
        return event
    redacted: Event
    if isinstance(event, CardsDealt):
        redacted = CardsDealt(event.seat, event.street, event.position, event.count)
    elif isinstance(event, DiscardMade):
        redacted = DiscardMade(event.seat, event.street, None)
    elif isinstance(event, TimeoutApplied):
        redacted = TimeoutApplied(event.seat, None)
    else:
        assert isinstance(event, FantasylandSet)
        redacted = FantasylandSet(event.seat, Board(), ())
    return cast(_E, redacted)


# --- checks ---------------------------------------------------------------------------------
_ROW_NAMES = frozenset(r.value for r in ROWS)


def _check_int(value: object, name: str, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidInputError(
            f"{name} must be an integer >= {minimum}, got {value!r}", field=name
        )
    return value


def _check_table_seat(state: MatchState, seat: object) -> int:
    number = _check_int(seat, "seat")
    if number >= len(state.seats):
        raise UnknownSeatError(
            f"no seat {number} at this table (seats 0..{len(state.seats) - 1})", field="seat"
        )
    return number


def _check_card(value: object, name: str) -> Card:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidCardError(f"{name}: not a card: {value!r}", field=name)
    try:
        return Card(value)
    except OfcError:
        raise InvalidCardError(f"{name}: not a card: {value!r}", field=name) from None


def _check_cards(value: object, name: str) -> tuple[Card, ...]:
    if not isinstance(value, tuple | list):
        raise InvalidInputError(f"{name} must be a sequence of cards", field=name)
    return tuple(_check_card(c, f"{name}[{i}]") for i, c in enumerate(value))


def _check_row(value: object, name: str) -> Row:
    if isinstance(value, str) and value in _ROW_NAMES:
        return Row(value)
    raise InvalidRowError(f"{name}: not a row: {value!r} (top, middle, bottom)", field=name)


def _hand_in_progress(state: MatchState) -> HandState:
    hand = state.hand
    if hand is None or hand.over:
        raise HandNotInProgressError("no hand is in progress", field="")
    return hand


def _hand_seat(state: MatchState, seat: object) -> tuple[HandState, int, HandSeat]:
    hand = _hand_in_progress(state)
    number = _check_table_seat(state, seat)
    i = hand.index(number)
    if i < 0:
        raise UnknownSeatError(f"seat {number} is not playing hand {hand.number}", field="seat")
    return hand, i, hand.seats[i]


def _check_turn(hand: HandState, hand_seat: HandSeat) -> None:
    if hand_seat.in_fantasyland:
        raise InFantasylandError(
            f"seat {hand_seat.seat} plays Fantasyland: it sets all its cards with SetFantasyland",
            field="seat",
        )
    if hand_seat.done:
        raise NotYourTurnError(f"seat {hand_seat.seat} has completed its board", field="seat")
    if hand.turn != hand_seat.seat:
        raise NotYourTurnError(
            f"it is seat {hand.turn}'s turn, not seat {hand_seat.seat}'s", field="seat"
        )


def check_unique(cards: Sequence[tuple[Card, str]]) -> None:
    """Raise DuplicateCardError at the second of two equal cards, each given with the name
    of its field (a move's cards: checked before the table's state is, by an API that
    refuses a malformed move the same way in every state).

    >>> from ofc.cards import Card
    >>> check_unique([(Card.parse("As"), "top[0]"), (Card.parse("As"), "discards[0]")])
    Traceback (most recent call last):
    ...
    ofc.errors.DuplicateCardError: card As appears twice: top[0] and discards[0]
    """
    seen: dict[Card, str] = {}
    for card, name in cards:
        if card in seen:
            raise DuplicateCardError(
                f"card {card} appears twice: {seen[card]} and {name}", field=name
            )
        seen[card] = name


def _checked_place(
    state: MatchState, action: Place
) -> tuple[HandState, int, tuple[tuple[Card, Row], ...], Card | None]:
    hand, i, hand_seat = _hand_seat(state, action.seat)
    _check_int(action.at_ms, "at_ms")
    _check_turn(hand, hand_seat)
    if not isinstance(action.placements, tuple | list):
        raise InvalidInputError(
            "placements must be a sequence of (card, row) pairs", field="placements"
        )
    placements: list[tuple[Card, Row]] = []
    for k, pair in enumerate(action.placements):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise InvalidInputError(
                f"placements[{k}] must be a (card, row) pair, got {pair!r}",
                field=f"placements[{k}]",
            )
        card, row = pair
        # A Card and a Row are checked already (the only instances there are): a field's
        # name is written out only for a value that needs checking.
        placements.append(
            (
                card if type(card) is Card else _check_card(card, f"placements[{k}].card"),
                row if type(row) is Row else _check_row(row, f"placements[{k}].row"),
            )
        )
    discard = None if action.discard is None else _check_card(action.discard, "discard")
    check_place_unique(placements, discard)
    cards = [c for c, _ in placements]
    if discard is not None:
        cards.append(discard)
    street = state.ruleset.streets[hand.street]
    if len(placements) != street.place:
        raise WrongCardCountError(
            f"street {hand.street + 1} places {street.place} card(s), got {len(placements)}",
            field="placements",
        )
    if street.discard == 0 and discard is not None:
        raise DiscardNotAllowedError(f"street {hand.street + 1} has no discard", field="discard")
    if street.discard == 1 and discard is None:
        raise WrongCardCountError(f"street {hand.street + 1} discards one card", field="discard")
    pending = hand_seat.pending
    if not all(card in pending for card in cards):
        for card, name in _named(placements, discard):
            if card not in pending:
                _check_in_deck(state, card, name)
                raise CardNotDealtError(
                    f"{name}: {card} is not in seat {hand_seat.seat}'s dealt batch", field=name
                )
    room = {row: row.size - len(hand_seat.board.row(row)) for row in ROWS}
    for k, (_, row) in enumerate(placements):
        room[row] -= 1
        if room[row] < 0:
            raise RowFullError(
                f"placements[{k}]: the {row.value} row of seat {hand_seat.seat} is full",
                field=f"placements[{k}].row",
            )
    return hand, i, tuple(placements), discard


def _named(placements: Sequence[tuple[Card, Row]], discard: Card | None) -> list[tuple[Card, str]]:
    """Each card of a Place with the name of its field, for an error that names it."""
    named = [(c, f"placements[{k}].card") for k, (c, _) in enumerate(placements)]
    return named if discard is None else [*named, (discard, "discard")]


def check_place_unique(placements: Sequence[tuple[Card, Row]], discard: Card | None) -> None:
    """:func:`check_unique` of a Place's cards, each named as the field that holds it
    (``placements[k].card``, ``discard``); the names are written out only for a duplicate.

    >>> from ofc.cards import Card
    >>> from ofc.rulesets import Row
    >>> check_place_unique([(Card.parse("As"), Row.TOP)], Card.parse("As"))
    Traceback (most recent call last):
    ...
    ofc.errors.DuplicateCardError: card As appears twice: placements[0].card and discard
    """
    cards = {c for c, _ in placements}
    if len(cards) != len(placements) or discard in cards:
        check_unique(_named(placements, discard))


def set_card_names(
    rows: Sequence[Sequence[Card]], discards: Sequence[Card], prefix: str = ""
) -> list[tuple[Card, str]]:
    """Each card of a Fantasyland set (its top, middle and bottom rows, then its discards)
    with the name of its field, the rows' under ``prefix`` (``"board."``: a request's)."""
    named = [
        (c, f"{prefix}{row.value}[{k}]")
        for row, cards in zip(ROWS, rows, strict=True)
        for k, c in enumerate(cards)
    ]
    return named + [(c, f"discards[{k}]") for k, c in enumerate(discards)]


def _checked_set(
    state: MatchState, action: SetFantasyland
) -> tuple[HandState, int, Board, tuple[Card, ...]]:
    hand, i, hand_seat = _hand_seat(state, action.seat)
    _check_int(action.at_ms, "at_ms")
    if not hand_seat.in_fantasyland:
        raise NotInFantasylandError(
            f"seat {hand_seat.seat} does not play Fantasyland this hand", field="seat"
        )
    if hand_seat.done:
        raise NotYourTurnError(f"seat {hand_seat.seat} has already set its cards", field="seat")
    rows = []
    for row in ROWS:
        cards = _check_cards(getattr(action, row.value), row.value)
        if len(cards) != row.size:
            raise WrongRowSizeError(
                f"the {row.value} row holds {row.size} cards, got {len(cards)}", field=row.value
            )
        rows.append(cards)
    discards = _check_cards(action.discards, "discards")
    named = set_card_names(rows, discards)
    check_unique(named)
    if len(discards) != hand_seat.fantasyland - BOARD_SIZE:
        raise WrongCardCountError(
            f"seat {hand_seat.seat} was dealt {hand_seat.fantasyland} cards: it discards "
            f"{hand_seat.fantasyland - BOARD_SIZE}, got {len(discards)}",
            field="discards",
        )
    for card, name in named:
        if card not in hand_seat.pending:
            _check_in_deck(state, card, name)
            raise CardNotDealtError(
                f"{name}: {card} was not dealt to seat {hand_seat.seat}", field=name
            )
    return hand, i, Board(rows[0], rows[1], rows[2]), discards


def _check_in_deck(state: MatchState, card: Card, name: str) -> None:
    """A card not dealt to the seat that no deck of the table has (a joker, the ruleset
    having fewer) is an invalid card, as everywhere else, not one dealt to someone else."""
    jokers = state.ruleset.jokers
    if card >= state.ruleset.deck_size:
        have = f"{jokers} joker{'' if jokers == 1 else 's'}"
        raise InvalidCardError(
            f"{name} is the joker {card}, but the table's deck has {have}", field=name
        )


def _checked_timeout(state: MatchState, action: Timeout) -> Place | SetFantasyland:
    """The timeout's own checks (the seat is waited for; the move is that seat's, at that
    time); the move itself is checked when it is applied."""
    hand, _, hand_seat = _hand_seat(state, action.seat)
    _check_int(action.at_ms, "at_ms")
    if action.deadline_ms is not None:
        _check_int(action.deadline_ms, "deadline_ms")
    if action.policy is not None and (not isinstance(action.policy, str) or not action.policy):
        raise InvalidInputError("policy must be a non-empty string or None", field="policy")
    if not hand_seat.in_fantasyland:
        _check_turn(hand, hand_seat)
    elif hand_seat.done:
        raise NotYourTurnError(f"seat {hand_seat.seat} has already set its cards", field="seat")
    move = action.move
    if not isinstance(move, Place | SetFantasyland):
        raise InvalidInputError(
            f"a timeout's move is a Place or a SetFantasyland, not {move!r}", field="move"
        )
    if move.seat != action.seat:
        raise InvalidInputError(
            f"the move of seat {action.seat}'s timeout is seat {move.seat}'s", field="move.seat"
        )
    if move.at_ms != action.at_ms:
        raise InvalidInputError(
            f"the move of a timeout at {action.at_ms} ms is timed {move.at_ms} ms",
            field="move.at_ms",
        )
    return move


def _as_move_error(exc: OfcError) -> OfcError:
    """An error of a timeout's move, its field made relative to the timeout."""
    exc.field = f"move.{exc.field}" if exc.field else "move"
    return exc


def _check_sit_down(state: MatchState, action: SitDown) -> int:
    seat = _check_table_seat(state, action.seat)
    _check_int(action.at_ms, "at_ms")
    if not isinstance(action.player_id, str) or not action.player_id:
        raise InvalidInputError("player_id must be a non-empty string", field="player_id")
    taken = state.seats[seat].player_id
    if taken:
        raise SeatTakenError(f"seat {seat} is taken by {taken!r}", field="seat")
    for other, s in enumerate(state.seats):
        if s.player_id == action.player_id:
            raise PlayerAlreadySeatedError(
                f"player {action.player_id!r} already sits at seat {other}", field="player_id"
            )
    return seat


def _check_stand_up(state: MatchState, action: StandUp, *, held: bool = True) -> int:
    seat = _check_table_seat(state, action.seat)
    _check_int(action.at_ms, "at_ms")
    if not state.seats[seat].occupied:
        raise UnknownSeatError(f"seat {seat} is empty", field="seat")
    if state.hand_in_progress and state.hand is not None and state.hand.index(seat) >= 0:
        raise HandInProgressError(f"seat {seat} is playing hand {state.hand.number}", field="seat")
    if state.match_over:
        return seat
    # Nobody leaves before a Fantasyland hand earned at the table is played: neither the
    # seat that earned it nor the others it is to be played against. The seat that earned
    # it may go when too few players are seated for any hand to start. (Not ``held``: the
    # rule of the releases before, see apply_unheld.)
    owed = state.seats[seat].fantasyland
    seated = sum(s.occupied for s in state.seats)
    if owed and (not held or seated >= state.ruleset.min_players):
        raise FantasylandOwedError(
            f"seat {seat} earned a Fantasyland hand ({owed} cards) here and must play it first",
            field="seat",
        )
    other = next((s for s, w in enumerate(state.seats) if w.fantasyland and s != seat), None)
    if held and other is not None:
        raise FantasylandOwedError(
            f"seat {other} earned a Fantasyland hand here; nobody leaves the table before it "
            "is played",
            field="seat",
        )
    return seat


def _check_start(state: MatchState, action: StartHand) -> None:
    if state.hand_in_progress:
        raise HandInProgressError(f"hand {state.hands_played} is still in progress", field="")
    if state.match_over:
        raise MatchOverError(f"the match is over after {state.max_hands} hands", field="")
    if not isinstance(action.server_seed, bytes) or len(action.server_seed) != SERVER_SEED_BYTES:
        raise InvalidSeedError(
            f"server seed must be {SERVER_SEED_BYTES} bytes", field="server_seed"
        )
    if not isinstance(action.client_seed, bytes):
        raise InvalidSeedError("client seed must be bytes", field="client_seed")
    _check_int(action.at_ms, "at_ms")
    seated = sum(s.occupied for s in state.seats)
    if seated < state.ruleset.min_players:
        raise NotEnoughPlayersError(
            f"{seated} player(s) seated; ruleset {state.ruleset.name!r} needs "
            f"{state.ruleset.min_players}",
            field="",
        )


def verify(state: MatchState, action: Action) -> None:
    """Raise the typed error :func:`apply` would raise for ``action``; do nothing else.

    >>> verify(new_match(), StartHand(bytes(32)))
    Traceback (most recent call last):
    ...
    ofc.errors.NotEnoughPlayersError: 0 player(s) seated; ruleset 'classic' needs 2
    """
    if isinstance(action, Place):
        _checked_place(state, action)
    elif isinstance(action, SetFantasyland):
        _checked_set(state, action)
    elif isinstance(action, Timeout):
        move = _checked_timeout(state, action)
        try:
            verify(state, move)
        except OfcError as exc:
            raise _as_move_error(exc) from None
    elif isinstance(action, SitDown):
        _check_sit_down(state, action)
    elif isinstance(action, StandUp):
        _check_stand_up(state, action)
    elif isinstance(action, StartHand):
        _check_start(state, action)
    else:
        raise InvalidInputError(f"not an action: {action!r}", field="action")


def can_apply(state: MatchState, action: Action) -> bool:
    """Whether :func:`apply` would accept ``action`` now.

    >>> can_apply(new_match(), SitDown(0, "ann")), can_apply(new_match(), SitDown(9, "ann"))
    (True, False)
    """
    try:
        verify(state, action)
    except OfcError:
        return False
    return True


# --- reducers -------------------------------------------------------------------------------
def apply(state: MatchState, action: Action) -> tuple[MatchState, Events]:
    """The state after ``action`` and the events it produced; raises a typed
    :class:`~ofc.errors.OfcError` (and changes nothing) when ``action`` is illegal.

    >>> state, events = apply(new_match(seats=2), SitDown(1, "bob"))
    >>> state.seats[1].player_id, events
    ('bob', (SeatTaken(seat=1, player_id='bob'),))
    """
    if isinstance(action, Place):
        hand, i, placements, discard = _checked_place(state, action)
        return _place(state, hand, i, placements, discard, action.at_ms)
    if isinstance(action, SetFantasyland):
        hand, i, board, discards = _checked_set(state, action)
        return _set_fantasyland(state, hand, i, board, discards, action.at_ms)
    if isinstance(action, Timeout):
        move = _checked_timeout(state, action)
        try:
            new_state, events = apply(state, move)
        except OfcError as exc:
            raise _as_move_error(exc) from None
        return new_state, (TimeoutApplied(action.seat, move), *events)
    if isinstance(action, SitDown):
        seat = _check_sit_down(state, action)
        seats = _replace_at(state.seats, seat, Seat(action.player_id))
        return _next_match(state, state.hand, seats=seats), (SeatTaken(seat, action.player_id),)
    if isinstance(action, StandUp):
        return _stand_up(state, action, held=True)
    if isinstance(action, StartHand):
        _check_start(state, action)
        return _start(state, action)
    raise InvalidInputError(f"not an action: {action!r}", field="action")


def _stand_up(state: MatchState, action: StandUp, *, held: bool) -> tuple[MatchState, Events]:
    seat = _check_stand_up(state, action, held=held)
    left = state.seats[seat]
    seats = _replace_at(state.seats, seat, Seat())
    vacated = SeatVacated(seat, left.player_id, left.points)
    return _next_match(state, state.hand, seats=seats), (vacated,)


def apply_unheld(state: MatchState, action: StandUp) -> tuple[MatchState, Events]:
    """``action`` as :func:`apply` took it before a Fantasyland hand held the whole table:
    releases before 2026-12-06 let a seat leave while *another* seat owed one (and the seat
    that owed one only at the end of the match). For verifying the seat changes their
    histories record; a live table takes seat changes through :func:`apply` only.

    >>> import dataclasses
    >>> state, _ = replay(new_match(seats=2), [SitDown(0, "ann"), SitDown(1, "bob")])
    >>> ann, bob = state.seats
    >>> owing = dataclasses.replace(state, seats=(dataclasses.replace(ann, fantasyland=14), bob))
    >>> can_apply(owing, StandUp(1)), apply_unheld(owing, StandUp(1))[1]
    (False, (SeatVacated(seat=1, player_id='bob', points=0),))
    >>> alone = dataclasses.replace(owing, seats=(owing.seats[0], Seat()))
    >>> can_apply(alone, StandUp(0))  # too few seated for her hand: ann may go now
    True
    >>> try:
    ...     apply_unheld(alone, StandUp(0))
    ... except FantasylandOwedError as error:
    ...     print(error.reason)
    FANTASYLAND_OWED
    """
    if not isinstance(action, StandUp):
        raise InvalidInputError(f"not a stand-up: {action!r}", field="action")
    return _stand_up(state, action, held=False)


def replay(initial: MatchState, actions: Iterable[Action]) -> tuple[MatchState, Events]:
    """Apply ``actions`` in order; the final state and every event, in order.

    >>> state, events = replay(new_match(seats=2), [SitDown(0, "ann"), SitDown(1, "bob")])
    >>> [s.player_id for s in state.seats], len(events)
    (['ann', 'bob'], 2)
    """
    state = initial
    events: list[Event] = []
    for action in actions:
        state, produced = apply(state, action)
        events.extend(produced)
    return state, tuple(events)


def _replace_at(items: tuple[_T, ...], index: int, item: _T) -> tuple[_T, ...]:
    return (*items[:index], item, *items[index + 1 :])


def _turn_order(state: MatchState) -> tuple[int, ...]:
    n = len(state.seats)
    order = ((state.button + k) % n for k in range(1, n + 1))
    return tuple(s for s in order if state.seats[s].occupied)


def _next_match(
    state: MatchState,
    hand: HandState | None,
    *,
    seats: tuple[Seat, ...] | None = None,
    button: int | None = None,
    hands_played: int | None = None,
) -> MatchState:
    """``state`` with ``hand``, and the seats, button or hand count given (None: as they
    are). The reducers below build each new value with a constructor that sets its slots
    (:func:`ofc.frozen.maker`) rather than with ``dataclasses.replace`` (about twice the
    cost of ``__init__``) or ``__init__`` (a wrapped ``object.__setattr__`` per field):
    a move makes several."""
    return make_match(
        state.ruleset,
        state.seats if seats is None else seats,
        state.button if button is None else button,
        state.hands_played if hands_played is None else hands_played,
        state.max_hands,
        hand,
        state.pair_units,
    )


def _next_hand(
    hand: HandState,
    seats: tuple[HandSeat, ...],
    *,
    dealt: int,
    street: int,
    turn: int | None,
    updated_at_ms: int,
) -> HandState:
    return make_hand(
        hand.number,
        hand.button,
        hand.server_seed,
        hand.client_seed,
        hand.deck,
        dealt,
        seats,
        street,
        turn,
        hand.started_at_ms,
        updated_at_ms,
    )


def _hand_seat_with(
    seat: HandSeat, board: Board, pending: tuple[Card, ...], discards: tuple[Card, ...]
) -> HandSeat:
    return make_hand_seat(
        seat.seat, seat.fantasyland, seat.fantasyland_streak, board, pending, discards
    )


# Constructors of the engine's values taking every field in order and setting them slot by
# slot (ofc.frozen.maker): the reducers' (see _next_match), and the readers' of values the
# engine already checked (the service's own records and requests, ofc.codec's own bytes).
make_match = maker(MatchState)
make_hand = maker(HandState)
make_hand_seat = maker(HandSeat)
make_board = maker(Board)


def _start(state: MatchState, action: StartHand) -> tuple[MatchState, Events]:
    number = state.hands_played + 1
    deck = deal_deck(action.server_seed, action.client_seed, number, jokers=state.ruleset.jokers)
    order = _turn_order(state)
    seats: list[HandSeat] = []
    events: list[Event] = []
    dealt = 0
    for seat in order:
        owed = state.seats[seat].fantasyland
        if owed:
            cards = deck[dealt : dealt + owed]
            seats.append(
                HandSeat(seat, owed, state.seats[seat].fantasyland_streak + 1, pending=cards)
            )
            events.append(CardsDealt(seat, None, dealt, owed, cards))
            dealt += owed
        else:
            seats.append(HandSeat(seat))
    started = HandStarted(
        number,
        state.button,
        order,
        tuple((s.seat, s.fantasyland) for s in seats if s.in_fantasyland),
        commitment(action.server_seed),
        action.client_seed,
        action.at_ms,
    )
    streets = state.ruleset.streets
    street, turn = 0, None
    first = next((i for i, s in enumerate(seats) if not s.in_fantasyland), None)
    if first is None:  # every seat plays Fantasyland: no street is dealt
        street = len(streets)
    else:
        turn, dealt = _deal_into(seats, first, deck, dealt, 0, streets[0].deal, events)
    hand = HandState(
        number=number,
        button=state.button,
        server_seed=action.server_seed,
        client_seed=action.client_seed,
        deck=deck,
        dealt=dealt,
        seats=tuple(seats),
        street=street,
        turn=turn,
        started_at_ms=action.at_ms,
        updated_at_ms=action.at_ms,
    )
    return _next_match(state, hand, hands_played=number), (started, *events)


def _deal_into(
    seats: list[HandSeat],
    index: int,
    deck: tuple[Card, ...],
    dealt: int,
    street: int,
    count: int,
    events: list[Event],
) -> tuple[int, int]:
    """Deal the next ``count`` cards of ``deck`` (``dealt`` are gone) to ``seats[index]``,
    in place, and add its :class:`CardsDealt`; the seat whose turn it is, and the new
    ``dealt``."""
    seat = seats[index]
    cards = deck[dealt : dealt + count]
    seats[index] = _hand_seat_with(seat, seat.board, cards, seat.discards)
    events.append(CardsDealt(seat.seat, street, dealt, count, cards))
    return seat.seat, dealt + count


def _place(
    state: MatchState,
    hand: HandState,
    index: int,
    placements: tuple[tuple[Card, Row], ...],
    discard: Card | None,
    at_ms: int,
) -> tuple[MatchState, Events]:
    seat = hand.seats[index]
    top, middle, bottom = seat.board.top, seat.board.middle, seat.board.bottom
    for card, row in placements:
        if row is Row.TOP:
            top = (*top, card)
        elif row is Row.MIDDLE:
            middle = (*middle, card)
        else:
            bottom = (*bottom, card)
    discards = seat.discards if discard is None else (*seat.discards, discard)
    seats = list(hand.seats)
    seats[index] = _hand_seat_with(seat, make_board(top, middle, bottom), (), discards)
    events: list[Event] = [CardsPlaced(seat.seat, hand.street, placements)]
    if discard is not None:
        events.append(DiscardMade(seat.seat, hand.street, discard))
    # The turn passes to the next seat playing street by street; after the last of them,
    # to the first of them on the next street.
    streets = state.ruleset.streets
    street, dealt, turn = hand.street, hand.dealt, None
    after = next((i for i in range(index + 1, len(seats)) if not seats[i].in_fantasyland), None)
    if after is None:
        street += 1
        if street < len(streets):
            after = next(i for i, s in enumerate(seats) if not s.in_fantasyland)
    if after is not None:
        deal = streets[street].deal
        turn, dealt = _deal_into(seats, after, hand.deck, dealt, street, deal, events)
    new_hand = _next_hand(
        hand, tuple(seats), dealt=dealt, street=street, turn=turn, updated_at_ms=at_ms
    )
    return _maybe_finish(state, new_hand, events, at_ms)


def _set_fantasyland(
    state: MatchState,
    hand: HandState,
    index: int,
    board: Board,
    discards: tuple[Card, ...],
    at_ms: int,
) -> tuple[MatchState, Events]:
    seat = _hand_seat_with(hand.seats[index], board, (), discards)
    hand = _next_hand(
        hand,
        _replace_at(hand.seats, index, seat),
        dealt=hand.dealt,
        street=hand.street,
        turn=hand.turn,
        updated_at_ms=at_ms,
    )
    return _maybe_finish(state, hand, [FantasylandSet(seat.seat, board, discards)], at_ms)


def _maybe_finish(
    state: MatchState, hand: HandState, events: list[Event], at_ms: int
) -> tuple[MatchState, Events]:
    if not hand.over:
        return _next_match(state, hand), tuple(events)
    events.extend(FantasylandRevealed(s.seat, s.board) for s in hand.seats if s.in_fantasyland)
    result = hand_settlement(hand, state.ruleset, pair_units=state.pair_units)
    seats = list(state.seats)
    for hand_seat, player in zip(hand.seats, result.players, strict=True):
        before = seats[hand_seat.seat]
        fantasyland = player.fantasyland
        seats[hand_seat.seat] = Seat(
            player_id=before.player_id,
            points=before.points + player.points,
            fantasyland=fantasyland.cards if fantasyland.qualifies else 0,
            fantasyland_streak=hand_seat.fantasyland_streak if hand_seat.in_fantasyland else 0,
        )
    events.append(
        HandSettled(
            hand.number,
            hand.order,
            tuple(s.board for s in hand.seats),
            result,
            tuple(
                (s.seat, seats[s.seat].fantasyland) for s in hand.seats if seats[s.seat].fantasyland
            ),
            tuple(seats[s.seat].points for s in hand.seats),
            at_ms,
        )
    )
    events.append(SeedRevealed(hand.number, hand.server_seed, hand.client_seed, hand.commitment))
    button = state.button
    played_fantasyland = any(s.in_fantasyland for s in hand.seats)
    if state.ruleset.button_moves_in_fantasyland or not played_fantasyland:
        button = next_occupied(seats, button)
    events.append(ButtonMoved(state.button, button))
    return _next_match(state, hand, seats=tuple(seats), button=button), tuple(events)


def next_occupied(seats: Sequence[Seat], button: int) -> int:
    """The seat the button moves to from ``button``: the next one taken, in seat order (the
    button itself when no other is).

    >>> next_occupied((Seat("ann"), Seat(), Seat("cy")), 0), next_occupied((Seat("ann"), Seat()), 0)
    (2, 0)
    """
    n = len(seats)
    for k in range(1, n + 1):
        if seats[(button + k) % n].occupied:
            return (button + k) % n
    return button


def hand_settlement(
    hand: HandState, ruleset: Ruleset, *, pair_units: Iterable[tuple[int, int, int]] = ()
) -> Settlement:
    """Settle a finished hand's boards (player ``i`` of the result is ``hand.seats[i]``).

    ``pair_units`` are the table's agreed ``(seat a, seat b, unit value)`` triples
    (:attr:`MatchState.pair_units`); pairs of seats not listed play for
    ``ruleset.unit_value``. Deterministic: it is what the hand's :class:`HandSettled` event
    carries.

    >>> from ofc.policy import timeout
    >>> setup = [SitDown(0, "a"), SitDown(1, "b"), StartHand(bytes(32))]
    >>> state, _ = replay(new_match(seats=2), setup)
    >>> while seats_to_act(state):
    ...     state, _ = apply(state, timeout(state, seats_to_act(state)[0]))
    >>> result = hand_settlement(state.hand, state.ruleset)
    >>> sum(p.points for p in result.players), [s.points for s in state.seats] == [
    ...     result.players[1].points, result.players[0].points]
    (0, True)
    >>> staked = hand_settlement(state.hand, state.ruleset, pair_units=[(0, 1, 20)])
    >>> [(p.capped_points, p.unit_value, p.units) for p in staked.pairs] == [
    ...     (result.pairs[0].capped_points, 20, 20 * result.pairs[0].capped_points)]
    True
    """
    index = {s.seat: i for i, s in enumerate(hand.seats)}  # seat -> player in the result
    stakes = {
        (min(index[a], index[b]), max(index[a], index[b])): unit
        for a, b, unit in pair_units
        if a in index and b in index
    }
    return settle(
        [s.board for s in hand.seats],
        ruleset,
        fantasyland_cards=[s.fantasyland for s in hand.seats],
        fantasyland_streaks=[s.fantasyland_streak for s in hand.seats],
        pair_units=stakes or None,
    )


# --- turns ----------------------------------------------------------------------------------
def seats_to_act(state: MatchState) -> tuple[int, ...]:
    """Seats the table is waiting for (the shell runs their clocks): the seat holding a
    batch, then the Fantasyland seats that have not set, in turn order.

    >>> seats_to_act(new_match())
    ()
    """
    hand = state.hand
    if hand is None or hand.over:
        return ()
    waiting = [] if hand.turn is None else [hand.turn]
    waiting += [s.seat for s in hand.seats if s.in_fantasyland and not s.done]
    return tuple(waiting)


def deal_positions(hand: HandState, ruleset: Ruleset) -> dict[tuple[int, int | None], int]:
    """Where each batch of ``hand`` starts in its deck, by (seat, street); street ``None``
    is a Fantasyland seat's block. The closed form of the deal order in the module doc.

    >>> setup = [SitDown(0, "a"), SitDown(1, "b"), StartHand(bytes(32))]
    >>> state, _ = replay(new_match(seats=2), setup)
    >>> sorted(deal_positions(state.hand, state.ruleset).items())[:3]
    [((0, 0), 5), ((0, 1), 11), ((0, 2), 13)]
    """
    positions: dict[tuple[int, int | None], int] = {}
    fantasyland = 0
    for s in hand.seats:
        if s.in_fantasyland:
            positions[(s.seat, None)] = fantasyland
            fantasyland += s.fantasyland
    normal = [s.seat for s in hand.seats if not s.in_fantasyland]
    before = 0
    for street_index, street in enumerate(ruleset.streets):
        for j, seat in enumerate(normal):
            positions[(seat, street_index)] = fantasyland + len(normal) * before + j * street.deal
        before += street.deal
    return positions


def dealt_batches(hand: HandState, ruleset: Ruleset) -> tuple[CardsDealt, ...]:
    """Every batch dealt so far in ``hand``, in the order dealt, as the :class:`CardsDealt`
    events (cards included) that the hand's actions emitted: read from the hand itself,
    since a batch's place in the deck is fixed in advance (:func:`deal_positions`) and
    batches leave the deck in the order of their positions. What a history needs of a hand
    without replaying it.

    >>> setup = [SitDown(0, "a"), SitDown(1, "b"), StartHand(bytes(32))]
    >>> state, events = replay(new_match(seats=2), setup)
    >>> dealt_batches(state.hand, state.ruleset) == events[-1:]
    True
    """
    batches = []
    for (seat, street), position in deal_positions(hand, ruleset).items():
        count = hand.seat(seat).fantasyland if street is None else ruleset.streets[street].deal
        if position + count <= hand.dealt:
            cards = hand.deck[position : position + count]
            batches.append(CardsDealt(seat, street, position, count, cards))
    batches.sort(key=lambda batch: batch.position)
    return tuple(batches)


# --- views ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SeatView:
    seat: int
    player_id: str
    points: int
    fantasyland: int
    fantasyland_streak: int


@dataclass(frozen=True, slots=True)
class HandSeatView:
    """One seat of the hand as the viewer sees it.

    ``board``: face-up cards (a Fantasyland set shows only to its owner until every seat is
    done; ``board_hidden`` says when a set exists but is not shown). ``pending`` and
    ``discards`` are the viewer's own only; the counts are public.
    """

    seat: int
    fantasyland: int
    board: Board
    board_hidden: bool
    pending: tuple[Card, ...]
    pending_count: int
    discards: tuple[Card, ...]
    discard_count: int
    done: bool


@dataclass(frozen=True, slots=True)
class HandView:
    """``server_seed`` is ``None`` until the hand is over; ``settlement`` likewise."""

    number: int
    button: int
    commitment: str
    client_seed: bytes
    server_seed: bytes | None
    street: int
    turn: int | None
    to_act: tuple[int, ...]
    deck_remaining: int
    seats: tuple[HandSeatView, ...]
    over: bool
    settlement: Settlement | None
    started_at_ms: int
    updated_at_ms: int


@dataclass(frozen=True, slots=True)
class TableView:
    viewer: int | None
    ruleset: str
    seats: tuple[SeatView, ...]
    button: int
    hands_played: int
    max_hands: int | None
    hand: HandView | None


def view(state: MatchState, viewer: int | None) -> TableView:
    """What ``viewer`` (a seat, or ``None`` for a spectator) may see of the table.

    Never another seat's dealt batch, discards or face-down Fantasyland set, never the
    undealt deck (only its size) and never the server seed before the hand is over.

    >>> setup = [SitDown(0, "a"), SitDown(1, "b"), StartHand(bytes(32))]
    >>> state, _ = replay(new_match(seats=2), setup)
    >>> [len(s.pending) for s in view(state, 1).hand.seats]
    [5, 0]
    >>> [(len(s.pending), s.pending_count) for s in view(state, None).hand.seats]
    [(0, 5), (0, 0)]
    """
    if viewer is not None:
        _check_table_seat(state, viewer)
    seats = tuple(
        SeatView(i, s.player_id, s.points, s.fantasyland, s.fantasyland_streak)
        for i, s in enumerate(state.seats)
    )
    hand = state.hand
    hand_view = None
    if hand is not None:
        over = hand.over
        hand_view = HandView(
            number=hand.number,
            button=hand.button,
            commitment=hand.commitment,
            client_seed=hand.client_seed,
            server_seed=hand.server_seed if over else None,
            street=hand.street,
            turn=hand.turn,
            to_act=seats_to_act(state),
            deck_remaining=hand.deck_remaining,
            seats=tuple(seat_view(s, viewer, over) for s in hand.seats),
            over=over,
            settlement=(
                hand_settlement(hand, state.ruleset, pair_units=state.pair_units) if over else None
            ),
            started_at_ms=hand.started_at_ms,
            updated_at_ms=hand.updated_at_ms,
        )
    return TableView(
        viewer,
        state.ruleset.name,
        seats,
        state.button,
        state.hands_played,
        state.max_hands,
        hand_view,
    )


def seat_view(s: HandSeat, viewer: int | None, over: bool) -> HandSeatView:
    """What ``viewer`` (a seat, or ``None`` for a spectator) may see of one seat of a hand
    (``over``: the hand is over), as :func:`view` shows it: it depends on nothing else, so a
    seat that did not change shows the same to the same viewer.

    >>> setup = [SitDown(0, "a"), SitDown(1, "b"), StartHand(bytes(32))]
    >>> state, _ = replay(new_match(seats=2), setup)
    >>> seat = state.hand.seat(1)  # first to act: dealt five
    >>> [len(seat_view(seat, v, False).pending) for v in (1, 0, None)]
    [5, 0, 0]
    """
    own, hidden = seat_shown(s, viewer, over)
    return HandSeatView(
        seat=s.seat,
        fantasyland=s.fantasyland,
        board=Board() if hidden else s.board,
        board_hidden=hidden,
        pending=s.pending if own else (),
        pending_count=len(s.pending),
        discards=s.discards if own else (),
        discard_count=len(s.discards),
        done=s.done,
    )


def seat_shown(s: HandSeat, viewer: int | None, over: bool) -> tuple[bool, bool]:
    """The redaction :func:`seat_view` applies, for writers of a view that do not build one:
    ``(own, hidden)``, whether ``viewer`` sees the seat's private cards (its pending cards and
    discards: its own seat only) and whether the seat's board is face down to ``viewer`` (a
    Fantasyland set, until the hand is over).

    >>> setup = [SitDown(0, "a"), SitDown(1, "b"), StartHand(bytes(32))]
    >>> state, _ = replay(new_match(seats=2), setup)
    >>> [seat_shown(state.hand.seat(1), v, False) for v in (1, 0, None)]
    [(True, False), (False, False), (False, False)]
    """
    own = viewer == s.seat
    return own, s.fantasyland > 0 and not over and not own and s.done
