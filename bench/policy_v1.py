"""The first timeout policy, frozen: the baseline ``bench.policy`` plays the current one against.

:func:`choose_placement_v1` scores every legal placement of the batch on 96 *random
fills*: the unseen cards, in the same deterministic order the current policy draws its
futures from (``ofc.policy._seed``), dropped into the empty slots row by row. A fouled
fill costs 8; a legal one is worth its royalties, 0.35 per row category and 6 for
Fantasyland; the best average wins (ties: the first placement, lower rows first). More
than 24 placements are first screened on 12 fills. It is kept here, not in the core, only
to be measured against; the checks, the candidate enumeration and the seed it shares with
the core are imported, everything that decides is copied as it was.

>>> from ofc.cards import parse_cards
>>> placements, _ = choose_placement_v1(Board(), parse_cards("Ah Ad 7c 3s 2d"), 5)
>>> sorted((r.value, str(c)) for c, r in placements)
[('bottom', 'Ad'), ('bottom', 'Ah'), ('top', '2d'), ('top', '3s'), ('top', '7c')]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ofc.cards import ALL_CARDS, Card
from ofc.evaluator import rank3, rank5
from ofc.policy import Placements, _answer, _candidates, _seed, _splitmix64
from ofc.rulesets import BOARD_SIZE, DEFAULT_RULESET, Row, Ruleset
from ofc.scoring import Board, row_royalty

FOUL_COST = 8.0
CATEGORY_WEIGHT = 0.35
FANTASYLAND_BONUS = 6.0
SAMPLES = 96
SCREEN_SAMPLES = 12
SCREEN_KEEP = 24

_Rows = tuple[tuple[Card, ...], tuple[Card, ...], tuple[Card, ...]]


def choose_placement_v1(
    board: Board,
    batch: Sequence[Card],
    place: int,
    ruleset: Ruleset = DEFAULT_RULESET,
    *,
    dead: Iterable[Card] = (),
) -> tuple[Placements, tuple[Card, ...]]:
    """The (card, row) pairs in batch order and the discards, as the first policy chose."""
    batch = tuple(batch)
    candidates = _candidates(board, batch, place)
    if len(candidates) == 1:
        return _answer(candidates[0])
    seen = set(board.cards) | set(batch) | set(dead)
    unknown = [c for c in ALL_CARDS if c not in seen]
    to_fill = BOARD_SIZE - len(board.cards) - place
    fills = _fills(unknown, to_fill, SAMPLES, _seed(board, batch, seen)) if to_fill else [()]
    scorer = _Scorer(ruleset)
    indices = list(range(len(candidates)))
    if len(candidates) > SCREEN_KEEP and len(fills) > SCREEN_SAMPLES:
        screen = fills[:SCREEN_SAMPLES]
        quick = [scorer.total(candidates[i][0], screen) for i in indices]
        indices = sorted(sorted(indices, key=lambda i: -quick[i])[:SCREEN_KEEP])
    best = max(indices, key=lambda i: (scorer.total(candidates[i][0], fills), -i))
    return _answer(candidates[best])


def _fills(unknown: list[Card], count: int, samples: int, seed: int) -> list[tuple[Card, ...]]:
    """``samples`` draws of ``count`` distinct cards from ``unknown`` (partial Fisher-Yates)."""
    words = _splitmix64(seed)
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
