"""Deterministic default moves: what the table plays for a seat whose clock ran out.

:func:`choose_placement` places a dealt batch (and picks the discard) by a one-step
look-ahead. Every legal way to place the batch is scored on the same fixed set of sampled
completions: the cards the seat has not seen, drawn in a pseudo-random order that is a
pure function of what the seat can see (its board, its batch and the dead cards), fill the
empty slots. A completion that fouls costs :data:`FOUL_COST`; a legal one is worth its
royalties, a small bonus per row category (rows that win more often) and a bonus for
qualifying for Fantasyland. The placement with the best average wins; ties go to the
first in a fixed enumeration that prefers lower rows. With many placements (a five-card
first street) a short screen on a few samples keeps the best dozen for the full count.

Filling slots at random plays the future worse than the seat would, so the estimate is
pessimistic about fragile boards: strong cards on top, a middle that may outgrow the
bottom. That bias is what a timeout wants — avoid fouling. ``python -m bench.policy``
measures it against random placement.

:func:`choose_fantasyland` sets a Fantasyland hand with the exact solver
(:func:`ofc.solver.solve_fantasyland`), which never fouls.

>>> from ofc.cards import parse_cards
>>> placements, discards = choose_placement(Board(), parse_cards("Ah Ad 7c 3s 2d"), 5)
>>> sorted((r.value, str(c)) for c, r in placements)
[('bottom', 'Ad'), ('bottom', 'Ah'), ('top', '2d'), ('top', '3s'), ('top', '7c')]
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from itertools import combinations, product

from ofc.cards import ALL_CARDS, Card
from ofc.errors import InvalidInputError, WrongCardCountError
from ofc.evaluator import rank3, rank5
from ofc.rulesets import BOARD_SIZE, DEFAULT_RULESET, Row, Ruleset
from ofc.scoring import Board, row_royalty
from ofc.solver import solve_fantasyland

__all__ = ["FOUL_COST", "choose_fantasyland", "choose_placement"]

FOUL_COST = 8.0
"""What a fouled completion scores: the 6 a foul pays plus a typical opponent's royalties."""

CATEGORY_WEIGHT = 0.35
"""Bonus per category step of each row (a pair beats high cards more often, and so on)."""

FANTASYLAND_BONUS = 6.0
"""Bonus for a completion that qualifies for Fantasyland next hand."""

SAMPLES = 96
SCREEN_SAMPLES = 12
SCREEN_KEEP = 24
_MASK = (1 << 64) - 1
# Rows in the order candidates try them: ties go to the lower row.
_ROW_ORDER = (Row.BOTTOM, Row.MIDDLE, Row.TOP)

Placements = tuple[tuple[Card, Row], ...]


def choose_placement(
    board: Board,
    batch: Sequence[Card],
    place: int,
    ruleset: Ruleset = DEFAULT_RULESET,
    *,
    dead: Iterable[Card] = (),
    samples: int | None = None,
) -> tuple[Placements, tuple[Card, ...]]:
    """Place ``place`` cards of ``batch`` on ``board`` (discarding the rest); returns the
    (card, row) pairs in batch order and the discards. ``dead``: other cards the seat has
    seen (its earlier discards, the other boards' face-up cards).

    Deterministic: the same arguments always give the same answer.

    >>> from ofc.cards import format_cards, parse_cards
    >>> from ofc.rulesets import get_ruleset
    >>> board = Board.parse("Kc 5d 4h / Qh Qs 9c 8d / Jc Jd Js 2c")
    >>> pineapple = get_ruleset("pineapple")
    >>> placements, discards = choose_placement(board, parse_cards("Kd Jh 3c"), 2, pineapple)
    >>> [(str(c), r.value) for c, r in placements], format_cards(discards)
    ([('Jh', 'bottom'), ('3c', 'middle')], 'Kd')
    """
    batch = tuple(batch)
    free = (3 - len(board.top), 5 - len(board.middle), 5 - len(board.bottom))
    if not 0 < place <= len(batch) or place > sum(free):
        raise WrongCardCountError(
            f"cannot place {place} of {len(batch)} cards with {sum(free)} slots free", field="place"
        )
    if len(set(batch)) != len(batch):
        raise InvalidInputError("the batch holds a card twice", field="batch")
    candidates = _candidates(board, batch, place, free)
    if len(candidates) == 1:
        return _answer(candidates[0])
    seen = set(board.cards) | set(batch) | set(dead)
    unknown = [c for c in ALL_CARDS if c not in seen]
    to_fill = BOARD_SIZE - len(board.cards) - place
    count = SAMPLES if samples is None else max(1, samples)
    fills = _fills(unknown, to_fill, count, _seed(board, batch, seen)) if to_fill else [()]
    scorer = _Scorer(ruleset)
    indices = list(range(len(candidates)))
    if len(candidates) > SCREEN_KEEP and len(fills) > SCREEN_SAMPLES:
        screen = fills[:SCREEN_SAMPLES]
        quick = [scorer.total(candidates[i][0], screen) for i in indices]
        indices = sorted(sorted(indices, key=lambda i: -quick[i])[:SCREEN_KEEP])
    best = max(indices, key=lambda i: (scorer.total(candidates[i][0], fills), -i))
    return _answer(candidates[best])


def choose_fantasyland(
    cards: Sequence[Card],
    ruleset: Ruleset = DEFAULT_RULESET,
    *,
    fantasyland_streak: int = 1,
) -> tuple[tuple[Card, ...], tuple[Card, ...], tuple[Card, ...], tuple[Card, ...]]:
    """Top, middle, bottom and discards for a Fantasyland seat (the solver's best set).

    >>> from ofc.cards import format_cards, parse_cards
    >>> rows = choose_fantasyland(parse_cards("As Ks Qs Js Ts 9h 9d 9c 4c 4d 7h 2s 3h Ad"))
    >>> [format_cards(r) for r in rows]
    ['Ad 7h 3h', '9h 9d 9c 4d 4c', 'As Ks Qs Js Ts', '2s']
    """
    solution = solve_fantasyland(
        cards, ruleset, in_fantasyland=True, fantasyland_streak=fantasyland_streak
    )
    return solution.top, solution.middle, solution.bottom, solution.discards


# --- candidates -----------------------------------------------------------------------------
_Rows = tuple[tuple[Card, ...], tuple[Card, ...], tuple[Card, ...]]
_Candidate = tuple[_Rows, Placements, tuple[Card, ...]]


def _candidates(
    board: Board, batch: tuple[Card, ...], place: int, free: tuple[int, int, int]
) -> list[_Candidate]:
    found: list[_Candidate] = []
    for discards in combinations(batch, len(batch) - place):
        keep = [c for c in batch if c not in discards]
        for rows in product(_ROW_ORDER, repeat=len(keep)):
            added: dict[Row, tuple[Card, ...]] = {Row.TOP: (), Row.MIDDLE: (), Row.BOTTOM: ()}
            for card, row in zip(keep, rows, strict=True):
                added[row] += (card,)
            if (
                len(added[Row.TOP]) > free[0]
                or len(added[Row.MIDDLE]) > free[1]
                or len(added[Row.BOTTOM]) > free[2]
            ):
                continue
            after = (
                board.top + added[Row.TOP],
                board.middle + added[Row.MIDDLE],
                board.bottom + added[Row.BOTTOM],
            )
            found.append((after, tuple(zip(keep, rows, strict=True)), discards))
    return found


def _answer(candidate: _Candidate) -> tuple[Placements, tuple[Card, ...]]:
    return candidate[1], candidate[2]


# --- deterministic samples ------------------------------------------------------------------
def _seed(board: Board, batch: tuple[Card, ...], seen: set[Card]) -> int:
    data = bytes([*board.top, 64, *board.middle, 64, *board.bottom, 64, *batch, 64, *sorted(seen)])
    return int.from_bytes(
        hashlib.blake2b(data, digest_size=8, person=b"ofc-policy").digest(), "big"
    )


def _splitmix64(state: int) -> Iterable[int]:
    while True:
        state = (state + 0x9E3779B97F4A7C15) & _MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        yield z ^ (z >> 31)


def _fills(unknown: list[Card], count: int, samples: int, seed: int) -> list[tuple[Card, ...]]:
    """``samples`` draws of ``count`` distinct cards from ``unknown`` (partial Fisher-Yates)."""
    words = iter(_splitmix64(seed))
    n = len(unknown)
    count = min(count, n)
    fills = []
    for _ in range(samples):
        pool = unknown[:]
        for i in range(count):
            j = i + next(words) % (n - i)
            pool[i], pool[j] = pool[j], pool[i]
        fills.append(tuple(pool[:count]))
    return fills


# --- scoring completions --------------------------------------------------------------------
class _Scorer:
    def __init__(self, ruleset: Ruleset) -> None:
        table = ruleset.royalties
        self.table = table
        self.middle = table.middle
        self.bottom = table.bottom
        self.fantasyland = (
            min(
                (e.requirement.category << 20) | ((e.requirement.min_rank + 1) << 16)
                for e in ruleset.fantasyland_entry
            )
            if ruleset.fantasyland_entry
            else 1 << 40
        )

    def total(self, rows: _Rows, fills: Sequence[tuple[Card, ...]]) -> float:
        top, middle, bottom = rows
        a = 3 - len(top)
        b = a + 5 - len(middle)
        table, mid_table, bot_table, fl = self.table, self.middle, self.bottom, self.fantasyland
        total = 0.0
        for fill in fills:
            vt = rank3(*top, *fill[:a])
            vm = rank5(*middle, *fill[a:b])
            vb = rank5(*bottom, *fill[b:])
            if vt > vm or vm > vb:
                total -= FOUL_COST
                continue
            total += (
                row_royalty(Row.TOP, vt, table)
                + mid_table[vm >> 20]
                + bot_table[vb >> 20]
                + CATEGORY_WEIGHT * ((vt >> 20) + (vm >> 20) + (vb >> 20))
                + (FANTASYLAND_BONUS if vt >= fl else 0.0)
            )
        return total / len(fills)
