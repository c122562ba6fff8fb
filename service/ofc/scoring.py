"""Boards, fouls, royalties, Fantasyland qualification and pairwise settlement.

>>> a = Board.parse("Ac 3d 2h / 6c 6d 9h 8s 4c / 9c 8c 7d 6h 5s")
>>> b = Board.parse("Kd 3c 2d / 5c 5d 9d 8h 4d / 7c 7h Qd Js 4s")
>>> s = settle([a, b])
>>> [p.points for p in s.players], s.pairs[0].rows, s.pairs[0].royalties
([8, -8], (1, 1, 1), 2)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import NamedTuple

from ofc.cards import ALL_CARDS, Card, format_cards, parse_cards
from ofc.errors import (
    DuplicateCardError,
    InvalidInputError,
    WrongPlayerCountError,
    WrongRowSizeError,
)
from ofc.evaluator import Category, HandValue, rank3, rank5
from ofc.rulesets import DEFAULT_RULESET, ROWS, Row, RoyaltyTable, Ruleset

__all__ = [
    "Board",
    "BoardResult",
    "FantasylandResult",
    "PairResult",
    "PlayerResult",
    "Settlement",
    "assess",
    "row_royalty",
    "settle",
    "validate_boards",
]


@dataclass(frozen=True, slots=True)
class Board:
    """A player's three rows (card ids); may be partial while a hand is played.

    >>> str(Board.parse("Qc Qd 2c / Th Jh Qh Kh Ah / Ts Js Qs Ks As"))
    'Qc Qd 2c / Th Jh Qh Kh Ah / Ts Js Qs Ks As'
    """

    top: tuple[Card, ...] = ()
    middle: tuple[Card, ...] = ()
    bottom: tuple[Card, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Board:
        """Rows separated by ``/``, top first."""
        parts = text.split("/")
        if len(parts) != 3:
            raise InvalidInputError(f"a board is 'top / middle / bottom', got {text!r}")
        top, middle, bottom = (parse_cards(p) for p in parts)
        return cls(top, middle, bottom)

    def row(self, row: Row) -> tuple[Card, ...]:
        return self.top if row is Row.TOP else self.middle if row is Row.MIDDLE else self.bottom

    @property
    def rows(self) -> tuple[tuple[Card, ...], tuple[Card, ...], tuple[Card, ...]]:
        return (self.top, self.middle, self.bottom)

    @property
    def cards(self) -> tuple[Card, ...]:
        return self.top + self.middle + self.bottom

    @property
    def is_complete(self) -> bool:
        return len(self.top) == 3 and len(self.middle) == 5 and len(self.bottom) == 5

    def __str__(self) -> str:
        return " / ".join(format_cards(r) for r in self.rows)


class FantasylandResult(NamedTuple):
    """Whether the board earns a Fantasyland hand next, and how many cards it deals."""

    qualifies: bool = False
    cards: int = 0


NO_FANTASYLAND = FantasylandResult()
_NO_ROYALTIES = (0, 0, 0)
_ROW_INDEX = {row: i for i, row in enumerate(ROWS)}
_CARD_IDS = frozenset(ALL_CARDS)


class BoardResult(NamedTuple):
    """What a complete board is worth on its own, before any opponent."""

    values: tuple[int, int, int]  # top, middle, bottom (evaluator values)
    fouled: bool
    royalties: tuple[int, int, int]  # all 0 when fouled
    fantasyland: FantasylandResult

    @property
    def total_royalties(self) -> int:
        return self.royalties[0] + self.royalties[1] + self.royalties[2]

    def hand(self, row: Row) -> HandValue:
        return HandValue(self.values[ROWS.index(row)])


class PairResult(NamedTuple):
    """One pair's settlement, from player ``a``'s side (``b`` gets the negatives).

    ``rows``: per row top/middle/bottom, +1 a won, -1 b won, 0 tie. ``scoop``: +1 a won all
    three, -1 b did. ``row_points``: the scheme's points for the rows. ``royalties``:
    royalties a received minus royalties a paid. ``points`` = row_points + royalties;
    ``capped_points`` after the ruleset's loss cap; ``units`` = capped_points x unit value.
    """

    a: int
    b: int
    rows: tuple[int, int, int]
    scoop: int
    row_points: int
    royalties: int
    points: int
    capped_points: int
    unit_value: int

    @property
    def units(self) -> int:
        return self.capped_points * self.unit_value


class PlayerResult(NamedTuple):
    """One player's result: the board's own worth and the net over all opponents."""

    index: int  # type: ignore[assignment]  # the seat; shadows tuple.index on purpose
    board: BoardResult
    points: int  # net, after the loss cap; zero-sum over players
    units: int  # net money in units (points x each pair's unit value)

    @property
    def fouled(self) -> bool:
        return self.board.fouled

    @property
    def royalties(self) -> tuple[int, int, int]:
        return self.board.royalties

    @property
    def fantasyland(self) -> FantasylandResult:
        return self.board.fantasyland


class Settlement(NamedTuple):
    """One settled hand: the ruleset's name, one result per board, one per pair of boards."""

    ruleset: str
    players: tuple[PlayerResult, ...]
    pairs: tuple[PairResult, ...]


# --- validation -----------------------------------------------------------------------------
def validate_boards(boards: Sequence[Board], *, complete: bool = True) -> None:
    """Raise a typed error naming ``players[i].row`` for a wrong row size or a card that
    appears twice anywhere; ``complete=False`` allows rows that are not full yet.

    >>> validate_boards([Board.parse("7s 7d 2c / 3c 3d 4h 5h 6h / 7s 8s 9s Ts Js")])
    Traceback (most recent call last):
    ...
    ofc.errors.DuplicateCardError: duplicate card 7s: players[0].top and players[0].bottom
    """
    if complete:
        # Fast path: right sizes, known cards, none twice; the slow loop below only runs
        # to name the offending place.
        cards: list[int] = []
        for board in boards:
            top, middle, bottom = board.top, board.middle, board.bottom
            if len(top) != 3 or len(middle) != 5 or len(bottom) != 5:
                break
            cards += top
            cards += middle
            cards += bottom
        else:
            # All known and none twice: nothing is lost when keeping only the known ones.
            if len(_CARD_IDS.intersection(cards)) == len(cards):
                return
    seen: dict[int, str] = {}
    for i, board in enumerate(boards):
        for row in ROWS:
            size = len(board.row(row))
            place = f"players[{i}].{row.value}"
            if not (size == row.size if complete else size <= row.size):
                raise WrongRowSizeError(
                    f"{place} has {size} cards; the {row.value} row holds {row.size}",
                    field=place,
                )
            for card in board.row(row):
                if card not in _CARD_IDS:
                    raise InvalidInputError(f"{place} holds {card!r}, not a Card", field=place)
                first = seen.get(card)
                if first is not None:  # also within one row
                    message = f"duplicate card {card}: {first} and {place}"
                    raise DuplicateCardError(message, field=place)
                seen[card] = place


# --- one board ------------------------------------------------------------------------------
def row_royalty(row: Row, value: int, table: RoyaltyTable) -> int:
    """Royalty points for a row value under ``table`` (no foul check).

    >>> from ofc.rulesets import STANDARD_ROYALTIES as T
    >>> row_royalty(Row.TOP, rank3(*parse_cards("6c 6d 2h")), T), row_royalty(Row.MIDDLE, rank5(*parse_cards("2c 2d 2h 9s 4c")), T)
    (1, 2)
    """  # noqa: E501
    if row is Row.TOP:
        return _top_royalty(value, table)
    return (table.middle if row is Row.MIDDLE else table.bottom)[value >> 20]


_PAIR, _TRIPS = int(Category.PAIR), int(Category.TRIPS)  # plain ints: enum lookups are slow


def _top_royalty(value: int, table: RoyaltyTable) -> int:
    # The first rank slot is the pair's, the trips' or (unpaired) the highest card's.
    category = value >> 20
    by_rank = (
        table.top_pair
        if category == _PAIR
        else table.top_trips
        if category == _TRIPS
        else (table.top_high_card)
    )
    return by_rank[((value >> 16) & 15) - 1]


def assess(
    board: Board,
    ruleset: Ruleset = DEFAULT_RULESET,
    *,
    in_fantasyland: bool = False,
    fantasyland_cards: int = 0,
    fantasyland_streak: int = 0,
) -> BoardResult:
    """Foul, royalties and Fantasyland for one complete board (sizes assumed checked).

    ``fantasyland_cards``: the tier the board was set in, the cards of the Fantasyland hand
    being played (0: a normal hand, the entry rule decides); the tier's stay rule
    (:meth:`~ofc.rulesets.Ruleset.stay_rule`) decides otherwise. ``in_fantasyland`` is the
    older yes/no form: the ruleset's base tier. ``fantasyland_streak``: how many
    Fantasyland hands in a row the player has played, counting this one (used only in
    Fantasyland and with a consecutive cap).

    >>> r = assess(Board.parse("Qc Qd 2c / Th Jh Qh Kh Ah / Ts Js Qs Ks As"))
    >>> r.fouled, r.royalties, r.fantasyland
    (False, (7, 50, 25), FantasylandResult(qualifies=True, cards=13))
    >>> from ofc.rulesets import get_ruleset
    >>> keep = get_ruleset("progressive-pineapple-keep")
    >>> aa = Board.parse("Ac Ad 2c / 3h 3d 5s 5c 7d / Ts Js Qs Ks 2s")
    >>> [assess(aa, keep, fantasyland_cards=n).fantasyland.cards for n in (0, 14, 16, 17)]
    [16, 14, 16, 0]
    """
    tier = ruleset.fantasyland_tier(in_fantasyland=in_fantasyland, cards=fantasyland_cards)
    return _assess(board, ruleset, tier, fantasyland_streak)


# Hot path (settle runs ~10^5 times a second): result tuples are built with tuple.__new__,
# which is what a NamedTuple's generated __new__ does, minus one Python call.
_new = tuple.__new__


def _assess(board: Board, ruleset: Ruleset, tier: int, streak: int) -> BoardResult:
    top = rank3(*board.top)
    middle = rank5(*board.middle)
    bottom = rank5(*board.bottom)
    values = (top, middle, bottom)
    if top > middle or middle > bottom:
        return _new(BoardResult, (values, True, _NO_ROYALTIES, NO_FANTASYLAND))
    table = ruleset.royalties
    royalties = (_top_royalty(top, table), table.middle[middle >> 20], table.bottom[bottom >> 20])
    fantasyland = _fantasyland(values, royalties, ruleset, tier, streak)
    return _new(BoardResult, (values, False, royalties, fantasyland))


def _fantasyland(
    values: tuple[int, int, int],
    royalties: tuple[int, int, int],
    ruleset: Ruleset,
    tier: int,
    streak: int,
) -> FantasylandResult:
    if tier:
        cap = ruleset.max_consecutive_fantasylands
        if cap is not None and streak >= cap:
            return NO_FANTASYLAND
        conditions, stay_cards = ruleset.stay_rule(tier)
        stays = any(c.met_by(values[_ROW_INDEX[c.row]]) for c in conditions)
        threshold = ruleset.stay_min_row_royalty
        if stays or (threshold is not None and max(royalties) >= threshold):
            return FantasylandResult(True, stay_cards)
        return NO_FANTASYLAND
    top = values[0]
    cards = 0
    for entry in ruleset.fantasyland_entry:
        if entry.cards > cards and entry.requirement.met_by(top):
            cards = entry.cards
    return FantasylandResult(True, cards) if cards else NO_FANTASYLAND


# --- settlement -----------------------------------------------------------------------------
def settle(
    boards: Sequence[Board],
    ruleset: Ruleset = DEFAULT_RULESET,
    *,
    in_fantasyland: Sequence[bool] | None = None,
    fantasyland_cards: Sequence[int] | None = None,
    fantasyland_streaks: Sequence[int] | None = None,
    pair_units: Mapping[tuple[int, int], int] | None = None,
) -> Settlement:
    """Settle one hand for 2-4 complete boards; every pair separately, zero-sum.

    Per board, as in :func:`assess`: ``fantasyland_cards`` the tier it was set in (0: not
    in Fantasyland), ``in_fantasyland`` the older yes/no form (the ruleset's base tier
    where ``fantasyland_cards`` gives 0), ``fantasyland_streaks`` the streaks.
    ``pair_units[(i, j)]`` (i < j) overrides the ruleset's unit value for that pair.

    >>> fouled = Board.parse("Ac Ad 2c / Kc Kd 9h 8s 4c / 9c 8c 7d 6h 5s")
    >>> legal = Board.parse("Ks 3c 2d / 5c 5d 9d 8h 4d / 7c 7h Qd Js 4s")
    >>> [p.points for p in settle([fouled, legal]).players]
    [-6, 6]
    """
    n = len(boards)
    if not ruleset.min_players <= n <= ruleset.max_players:
        raise WrongPlayerCountError(
            f"ruleset {ruleset.name!r} settles {ruleset.min_players}..{ruleset.max_players} "
            f"boards, got {n}",
            field="players",
        )
    validate_boards(boards)
    if in_fantasyland is None and fantasyland_cards is None and fantasyland_streaks is None:
        results = [_assess(board, ruleset, 0, 0) for board in boards]
    else:
        flags = (False,) * n if in_fantasyland is None else in_fantasyland
        cards = (0,) * n if fantasyland_cards is None else fantasyland_cards
        streaks = (0,) * n if fantasyland_streaks is None else fantasyland_streaks
        if len(flags) != n or len(cards) != n or len(streaks) != n:
            raise InvalidInputError(
                "in_fantasyland, fantasyland_cards and fantasyland_streaks need one entry per board"
            )
        tiers = [
            ruleset.fantasyland_tier(in_fantasyland=flags[i], cards=cards[i]) for i in range(n)
        ]
        results = [_assess(boards[i], ruleset, tiers[i], streaks[i]) for i in range(n)]
    unit = ruleset.unit_value
    stakes = pair_units or {}
    pairs = [
        _settle_pair(i, j, results[i], results[j], ruleset, stakes.get((i, j), unit))
        for i, j in _SEAT_PAIRS[n]
    ]
    if ruleset.loss_cap is not None:
        capped = _apply_loss_cap(pairs, n, ruleset.loss_cap)
        pairs = [p._replace(capped_points=c) for p, c in zip(pairs, capped, strict=True)]
    points = [0] * n
    units = [0] * n
    for i, j, _, _, _, _, _, capped_points, unit_value in pairs:
        points[i] += capped_points
        points[j] -= capped_points
        units[i] += capped_points * unit_value
        units[j] -= capped_points * unit_value
    players = tuple([_new(PlayerResult, (i, results[i], points[i], units[i])) for i in range(n)])
    return _new(Settlement, (ruleset.name, players, tuple(pairs)))


_SEAT_PAIRS = {n: tuple(combinations(range(n), 2)) for n in range(2, 5)}
_NO_ROWS = (0, 0, 0)
_ALL_ROWS_WON = (1, 1, 1)
_ALL_ROWS_LOST = (-1, -1, -1)


def _settle_pair(
    i: int, j: int, a: BoardResult, b: BoardResult, ruleset: Ruleset, unit: int
) -> PairResult:
    va, a_fouled, ra, _ = a
    vb, b_fouled, rb, _ = b
    if a_fouled:
        if b_fouled:
            return _new(PairResult, (i, j, _NO_ROWS, 0, 0, 0, 0, 0, unit))
        rows = _ALL_ROWS_LOST  # a fouled board loses every row to a legal one, scoop included
    elif b_fouled:
        rows = _ALL_ROWS_WON
    else:
        rows = (
            (va[0] > vb[0]) - (va[0] < vb[0]),
            (va[1] > vb[1]) - (va[1] < vb[1]),
            (va[2] > vb[2]) - (va[2] < vb[2]),
        )
    won = rows.count(1)
    lost = rows.count(-1)
    if ruleset.royalties_to_row_winner_only:
        royalties = sum(ra[k] if rows[k] > 0 else -rb[k] if rows[k] < 0 else 0 for k in range(3))
    else:
        royalties = ra[0] + ra[1] + ra[2] - rb[0] - rb[1] - rb[2]
    row_points = ruleset.scoring.points(won, lost)
    total = row_points + royalties
    scoop = (won == 3) - (lost == 3)
    return _new(PairResult, (i, j, rows, scoop, row_points, royalties, total, total, unit))


def _apply_loss_cap(pairs: Sequence[PairResult], n: int, cap: int) -> list[int]:
    """Scale down what any player over the cap pays, proportionally, until nobody is over.

    Payments are cut by largest remainder (ties to the lower seat), so amounts stay
    integers and the hand stays zero-sum. Processing seats in order makes it deterministic.
    """
    owed = [[0] * n for _ in range(n)]  # owed[i][j]: what i receives from j
    for p in pairs:
        owed[p.a][p.b] = p.points
        owed[p.b][p.a] = -p.points
    changed = True
    while changed:
        changed = False
        for i in range(n):
            net = sum(owed[i])
            if net >= -cap:
                continue
            payees = [j for j in range(n) if owed[i][j] < 0]
            paid = -sum(owed[i][j] for j in payees)
            budget = paid - (-net - cap)  # what i may still pay in all
            shares = [(-owed[i][j] * budget, j) for j in payees]
            new = {j: s // paid for s, j in shares}
            leftover = budget - sum(new.values())
            for _, j in sorted(shares, key=lambda sj: (-(sj[0] % paid), sj[1]))[:leftover]:
                new[j] += 1
            for j, amount in new.items():
                owed[i][j], owed[j][i] = -amount, amount
            changed = True
    return [owed[p.a][p.b] for p in pairs]
