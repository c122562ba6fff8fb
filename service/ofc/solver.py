"""Fantasyland solver: the best way to set 13..17 cards at once, exactly.

>>> from ofc.cards import format_cards, parse_cards
>>> s = solve_fantasyland(parse_cards("Qc Qd Qh 9s 8h 7d 6c 5s Ac Kc Tc 4c 2c"))
>>> format_cards(s.top), format_cards(s.middle), format_cards(s.bottom)
('Qh Qd Qc', '9s 8h 7d 6c 5s', 'Ac Kc Tc 4c 2c')
>>> s.royalties, s.fantasyland_next, s.objective  # 20 + 4 + 4, trips on top stay in
(28, True, 38)

How the search works (why it is fast enough in pure Python):

* Every 5-card subset of the hand is evaluated once (``rank5``; 6,188 of them for 17 cards)
  and sorted strongest first. Each subset gets its bottom and middle royalty and whether
  it would keep/earn Fantasyland in that row; every 3-card subset likewise as a top.
* Royalties and Fantasyland only depend on each row's own value, and the rows must satisfy
  ``top <= middle <= bottom``. So for a middle of value ``v`` no top can score more than the
  best top of value ``<= v`` in the whole hand, and a bottom of value ``w`` can be completed
  to at most ``its royalty + max over middles of value <= w of (middle royalty + that top
  bound)``. These chained bounds are prefix/suffix maxima over the sorted lists: O(1) each.
* Bottoms are tried best bound first; within a bottom, middles strongest first, and the scan
  stops as soon as the suffix bound cannot beat the incumbent. Disjointness is only checked
  for the survivors (bit masks over the hand).
* For a surviving (bottom, middle) the top is not searched but chosen: the best top is the
  first one, in the hand's tops ranked by (score, value, cards), that uses none of the ten
  placed cards and is not above the middle (about 20..50 steps for 15..17 cards; with 13
  or 14 cards the 1 or 4 possible tops are looked up directly). The ranking depends only on
  whether the bottom or middle already secured Fantasyland, so two rankings serve all.

* The Fantasyland bonus a top earns is its own (the entry rule maps each top to a hand
  size, and ``fantasyland_value`` may price the sizes differently); a bottom or middle can
  only earn the stay, whose size the tier fixes (:meth:`~ofc.rulesets.Ruleset.stay_rule`),
  so one bonus serves them all.

Exactness does not rely on royalty tables being monotone: every bound is a maximum over a
superset of the real choices. ``tests/ofc/test_solver.py`` compares it with a plain
enumeration.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate, combinations, combinations_with_replacement, starmap

from ofc.cards import ALL_CARDS, Card
from ofc.errors import DuplicateCardError, InvalidInputError, WrongCardCountError
from ofc.evaluator import rank3, rank5
from ofc.rulesets import DEFAULT_RULESET, Row, Ruleset
from ofc.scoring import Board, assess, row_royalty

__all__ = [
    "DEFAULT_FANTASYLAND_VALUE",
    "FantasylandSolution",
    "FantasylandValue",
    "solve_fantasyland",
]

DEFAULT_FANTASYLAND_VALUE = 10
"""Points the objective adds for qualifying for Fantasyland next hand. A round default of
ours, not a measured figure: more than any top pair pays (9 at most in the standard table),
less than a middle full house plus staying. Pass what a Fantasyland hand is worth at your
table; 0 optimises royalties alone."""

FantasylandValue = int | Mapping[int, int]
"""What qualifying for a Fantasyland hand next is worth to the objective: one integer for
any size, or a mapping from the next hand's cards (13..17) to points (sizes not listed are
worth :data:`DEFAULT_FANTASYLAND_VALUE`)."""

FOULED_OBJECTIVE = -1
"""The ``objective`` of a fouled answer (never returned for 13+ cards; see the docstring)."""

_CARD_SET = frozenset(ALL_CARDS)
_NEG = -(1 << 30)  # "no top fits": below any reachable score


@dataclass(frozen=True, slots=True)
class FantasylandSolution:
    """The chosen rows (cards by id, highest first), the discards and their worth.

    ``royalties`` is the board's total as :func:`ofc.scoring.assess` computes it;
    ``fantasyland_next_cards`` the cards of the Fantasyland hand it earns next (0: none);
    ``objective`` is ``royalties`` plus the value of that hand when ``fantasyland_next``.
    """

    top: tuple[Card, ...]
    middle: tuple[Card, ...]
    bottom: tuple[Card, ...]
    discards: tuple[Card, ...]
    royalties: int
    fantasyland_next: bool
    objective: int
    fantasyland_next_cards: int = 0

    @property
    def board(self) -> Board:
        return Board(self.top, self.middle, self.bottom)


def solve_fantasyland(
    cards: Sequence[Card],
    ruleset: Ruleset = DEFAULT_RULESET,
    *,
    in_fantasyland: bool = True,
    fantasyland_value: FantasylandValue = DEFAULT_FANTASYLAND_VALUE,
    fantasyland_streak: int = 0,
) -> FantasylandSolution:
    """Set 13..17 cards: the best legal board and ``len(cards) - 13`` discards.

    **Objective** (maximised, over boards with ``bottom >= middle >= top``, i.e. not fouled):
    ``royalties + (the value of the Fantasyland hand the board earns next, if any)``,
    where both are exactly what ``scoring.assess(board, ruleset, fantasyland_cards=...,
    fantasyland_streak=...)`` reports: with ``in_fantasyland`` (the usual case: the player
    is in Fantasyland now, in the tier of ``len(cards)`` cards) that tier's stay rule
    decides, otherwise the entry rule. ``fantasyland_value`` prices the next hand: a
    non-negative integer for any size, default :data:`DEFAULT_FANTASYLAND_VALUE` (10), 0
    meaning royalties only, or a mapping from its cards to points
    (:data:`FantasylandValue`). ``fantasyland_streak`` is passed to ``assess`` as is (with
    a ``max_consecutive_fantasylands`` cap, a streak at the cap means no Fantasyland next
    hand, so the value is never earned).

    **Ties**, in order: the stronger bottom (evaluator value), then the stronger middle,
    then the stronger top; then, to make the answer unique, the bottom whose cards sorted
    by id highest first (id = 4 x rank + suit, so at equal rank s > h > d > c) are
    lexicographically greatest, then the middle likewise, then the top. The discards are
    what is left.

    A legal board always exists with 13+ cards (the strongest 5 as bottom, the strongest 5
    of the rest as middle, the last 3 as top is never fouled), so a fouled answer cannot
    happen; were it to, the solver would return that strongest-rows board with royalties
    0, ``fantasyland_next`` False and objective :data:`FOULED_OBJECTIVE` (-1).

    Raises :class:`~ofc.errors.WrongCardCountError` (field ``cards``) for fewer than 13 or
    more than 17 cards, :class:`~ofc.errors.DuplicateCardError` for a repeated card and
    :class:`~ofc.errors.InvalidInputError` for a non-card or a bad ``fantasyland_value``.

    >>> from ofc.cards import format_cards, parse_cards
    >>> s = solve_fantasyland(parse_cards("As Ks Qs Js Ts 9h 9d 9c 4c 4d 7h 2s 3h Ad"))
    >>> str(s.board), format_cards(s.discards), s.royalties, s.fantasyland_next
    ('Ad 7h 3h / 9h 9d 9c 4d 4c / As Ks Qs Js Ts', '2s', 37, True)
    >>> solve_fantasyland(s.board.cards, fantasyland_value=0).objective
    37
    """
    hand = _check_cards(cards)
    values = _values_by_cards(fantasyland_value)
    tier = len(hand) if in_fantasyland else 0
    cap = ruleset.max_consecutive_fantasylands
    fl_possible = not (tier and cap is not None and fantasyland_streak >= cap)
    spec = _row_spec(ruleset, tier=tier, values=values if fl_possible else (0,) * 5)
    ids = tuple(sorted(hand))  # local bit i <-> ids[i]; ascending, so masks compare like ids
    found = _search(ids, spec)
    if found is None:
        bottom, middle, top = _strongest_rows(ids)
    else:
        bottom, middle, top = (_cards_of(ids, m) for m in found)
    board = Board(top, middle, bottom)
    result = assess(board, ruleset, fantasyland_cards=tier, fantasyland_streak=fantasyland_streak)
    used = set(board.cards)
    qualifies, next_cards = result.fantasyland
    return FantasylandSolution(
        top=top,
        middle=middle,
        bottom=bottom,
        discards=tuple(c for c in sorted(hand, reverse=True) if c not in used),
        royalties=result.total_royalties,
        fantasyland_next=qualifies,
        objective=FOULED_OBJECTIVE
        if result.fouled
        else result.total_royalties + (values[next_cards - 13] if qualifies else 0),
        fantasyland_next_cards=next_cards,
    )


def _values_by_cards(raw: FantasylandValue) -> tuple[int, int, int, int, int]:
    """The value of a next Fantasyland hand of 13..17 cards, checked."""

    def checked(value: object, field: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidInputError(f"{field} must be an integer, got {value!r}", field=field)
        if value < 0:
            raise InvalidInputError(f"{field} must be >= 0, got {value}", field=field)
        return value

    if not isinstance(raw, Mapping):
        flat = checked(raw, "fantasyland_value")
        return (flat, flat, flat, flat, flat)
    out = [DEFAULT_FANTASYLAND_VALUE] * 5
    for cards, value in raw.items():
        if isinstance(cards, bool) or not isinstance(cards, int) or not 13 <= cards <= 17:
            raise InvalidInputError(
                f"fantasyland_value prices hands of 13..17 cards, not {cards!r}",
                field="fantasyland_value",
            )
        out[cards - 13] = checked(value, f"fantasyland_value[{cards}]")
    return (out[0], out[1], out[2], out[3], out[4])


# --- input ----------------------------------------------------------------------------------
def _check_cards(cards: Sequence[Card]) -> tuple[Card, ...]:
    hand = tuple(cards)
    if not 13 <= len(hand) <= 17:
        raise WrongCardCountError(
            f"a Fantasyland hand has 13..17 cards, got {len(hand)}", field="cards"
        )
    seen: set[int] = set()
    for card in hand:
        if not isinstance(card, int) or isinstance(card, bool) or card not in _CARD_SET:
            raise InvalidInputError(f"not a card: {card!r}", field="cards")
        if card in seen:
            raise DuplicateCardError(f"duplicate card {Card(card)}", field="cards")
        seen.add(card)
    return tuple(Card(c) for c in hand)


def _cards_of(ids: Sequence[int], mask: int) -> tuple[Card, ...]:
    return tuple(Card(ids[i]) for i in range(len(ids) - 1, -1, -1) if mask >> i & 1)


def _strongest_rows(
    ids: Sequence[int],
) -> tuple[tuple[Card, ...], tuple[Card, ...], tuple[Card, ...]]:
    """Strongest bottom, then strongest middle of the rest, then strongest top of the rest."""
    chosen: list[tuple[Card, ...]] = []
    left = sorted(ids, reverse=True)
    for size, rank in ((5, rank5), (5, rank5), (3, rank3)):
        row = max(combinations(left, size), key=lambda c: (rank(*c), sorted(c, reverse=True)))
        chosen.append(tuple(Card(c) for c in row))
        left = [c for c in left if c not in row]
    return chosen[0], chosen[1], chosen[2]


# --- what a row is worth under a ruleset ---------------------------------------------------
@dataclass(frozen=True, slots=True)
class _RowSpec:
    """Per ruleset and Fantasyland situation: royalty and "qualifies" per row value.

    Five-card rows: indexed by value class (:func:`_five_classes`: the category, split where
    a stay condition asks for a rank). Top: a dict over every possible 3-card value, with
    the bonus that top earns on its own. ``stay_bonus``: what a bottom or middle that
    qualifies earns (the stay's one size).
    """

    five_bounds: tuple[int, ...]  # class k: values from five_bounds[k] up to the next bound
    bottom_royalty: tuple[int, ...]
    middle_royalty: tuple[int, ...]
    bottom_qualifies: tuple[bool, ...]
    middle_qualifies: tuple[bool, ...]
    top: dict[int, tuple[int, int]]  # top value -> (royalty, Fantasyland bonus)
    stay_bonus: int


_ALL_TOP_VALUES = tuple(
    sorted(
        {
            rank3(4 * a, 4 * b + 1, 4 * c + 2)
            for a, b, c in combinations_with_replacement(range(13), 3)
        }
    )
)


@lru_cache(maxsize=64)  # bounded: rulesets may come from requests
def _row_spec(ruleset: Ruleset, *, tier: int, values: tuple[int, ...]) -> _RowSpec:
    return _build_spec(ruleset, tier, values)


def _five_classes(ruleset: Ruleset) -> tuple[int, ...]:
    """Lower bounds of the 5-card value classes within which royalty and stay are constant:
    one per category, split at each rank a 5-card stay condition asks for."""
    bounds = {(c << 20) | (1 << 16) for c in range(10)}  # the weakest value of each category
    for tier in (None, *ruleset.fantasyland_tiers):
        conditions = ruleset.stay_conditions if tier is None else tier.stay_conditions
        bounds.update(
            (c.category << 20) | ((c.min_rank + 1) << 16)
            for c in conditions
            if c.row is not Row.TOP and c.min_rank
        )
    return tuple(sorted(bounds))


def _build_spec(ruleset: Ruleset, tier: int, values: tuple[int, ...]) -> _RowSpec:
    table = ruleset.royalties
    threshold = ruleset.stay_min_row_royalty
    conditions, stay_cards = ruleset.stay_rule(tier)
    stay_bonus = values[stay_cards - 13] if tier else 0

    def stays(row: Row, value: int, royalty: int) -> bool:
        # The stay rule of scoring._fantasyland, for one row on its own.
        if not (tier and stay_bonus):
            return False  # not in Fantasyland, or staying is worth nothing here
        if any(c.row is row and c.met_by(value) for c in conditions):
            return True
        return threshold is not None and royalty >= threshold

    bounds = _five_classes(ruleset)

    def five(row: Row) -> tuple[tuple[int, ...], tuple[bool, ...]]:
        by_category = table.bottom if row is Row.BOTTOM else table.middle
        royalties = tuple(by_category[b >> 20] for b in bounds)
        return royalties, tuple(stays(row, b, r) for b, r in zip(bounds, royalties, strict=True))

    top: dict[int, tuple[int, int]] = {}
    for value in _ALL_TOP_VALUES:
        royalty = row_royalty(Row.TOP, value, table)
        bonus = 0
        if tier:
            bonus = stay_bonus if stays(Row.TOP, value, royalty) else 0
        else:
            cards = max(
                (e.cards for e in ruleset.fantasyland_entry if e.requirement.met_by(value)),
                default=0,
            )
            bonus = values[cards - 13] if cards else 0
        top[value] = (royalty, bonus)
    bottom_royalty, bottom_qualifies = five(Row.BOTTOM)
    middle_royalty, middle_qualifies = five(Row.MIDDLE)
    return _RowSpec(
        bounds, bottom_royalty, middle_royalty, bottom_qualifies, middle_qualifies, top, stay_bonus
    )


# --- the search ------------------------------------------------------------------------------
def _search(ids: tuple[int, ...], spec: _RowSpec) -> tuple[int, int, int] | None:
    """Masks (over ``ids``) of the best (bottom, middle, top), or None if all foul."""
    flv = spec.stay_bonus
    n = len(ids)
    bits = [1 << i for i in range(n)]

    # Every 5-card subset, strongest first (ties: higher card ids first, as in the docs).
    fives = sorted(
        zip(starmap(rank5, combinations(ids, 5)), map(sum, combinations(bits, 5)), strict=True),
        reverse=True,
    )
    count = len(fives)
    values = [f[0] for f in fives]
    masks = [f[1] for f in fives]
    bounds = spec.five_bounds
    if len(bounds) == 10:  # one class per category
        cats = [v >> 20 for v in values]
    else:
        cats = [bisect_right(bounds, v) - 1 for v in values]
    rb = [spec.bottom_royalty[c] for c in cats]
    rm = [spec.middle_royalty[c] for c in cats]
    fb = [spec.bottom_qualifies[c] for c in cats]
    fm = [spec.middle_qualifies[c] for c in cats]

    # Every 3-card subset as a top: value, royalty, and royalty plus its own bonus.
    top_of: dict[int, tuple[int, int, int]] = {}
    for value, mask in zip(
        starmap(rank3, combinations(ids, 3)), map(sum, combinations(bits, 3)), strict=True
    ):
        royalty, bonus = spec.top[value]
        top_of[mask] = (value, royalty, royalty + bonus)

    # best_secured[t] / best_open[t]: the best top score among the t weakest tops of the
    # hand ("secured": the bottom or middle already qualifies, so no bonus to earn there).
    tops = sorted(top_of.values())
    top_values = [t[0] for t in tops]
    best_secured = [_NEG, *accumulate((t[1] for t in tops), max)]
    best_open = [_NEG, *accumulate((t[2] for t in tops), max)]

    # Chain bound for k as the middle (its royalty, plus the best top of value <= it anywhere
    # in the hand), then suffix maxima: a bound for "any middle from k on".
    weaker = [bisect_right(top_values, v) for v in values]  # tops of value <= the middle
    chain_secured = [r + best_secured[t] for r, t in zip(rm, weaker, strict=True)]
    chain_open = [
        r + (flv + best_secured[t] if f else best_open[t])
        for r, f, t in zip(rm, fm, weaker, strict=True)
    ]
    suffix_secured = _suffix_max(chain_secured)
    suffix_open = _suffix_max(chain_open)

    # Where each value's group starts: a middle may equal the bottom in value.
    group = [0] * count
    for k in range(1, count):
        group[k] = group[k - 1] if values[k] == values[k - 1] else k

    # Bottoms by bound, best first (bucketed: bounds are small integers).
    buckets: dict[int, list[int]] = {}
    for j in range(count):
        g = group[j]
        ub = rb[j] + (flv + suffix_secured[g] if fb[j] else suffix_open[g])
        buckets.setdefault(ub, []).append(j)

    best_top = _top_chooser(n, top_of)
    best_o = -1
    best: tuple[int, int, int, int, int, int] = (0, 0, 0, 0, 0, 0)  # vb vm vt mb mm mt
    found: tuple[int, int, int] | None = None
    for ub in sorted(buckets, reverse=True):
        if ub < best_o:
            break
        for j in buckets[ub]:
            vb = values[j]
            if ub == best_o and vb < best[0]:
                continue  # can only tie on objective, and loses on bottom strength
            mb = masks[j]
            secured_b = fb[j]
            base = rb[j] + (flv if secured_b else 0)
            suffix, chain = (
                (suffix_secured, chain_secured) if secured_b else (suffix_open, chain_open)
            )
            for k in range(group[j], count):
                bound = base + suffix[k]
                if bound < best_o or (bound == best_o and (vb, values[k]) < best[:2]):
                    break  # values only fall from here, and so does the suffix bound
                mk = masks[k]
                if mk & mb:
                    continue
                vm = values[k]
                bound = base + chain[k]
                if bound < best_o or (bound == best_o and (vb, vm) < best[:2]):
                    continue
                top = best_top(mb | mk, secured_b or fm[k], vm)
                if top is None:
                    continue  # every top left would beat the middle: no legal board here
                score, vt, mt = top
                o = base + rm[k] + (flv if fm[k] and not secured_b else 0) + score
                if o > best_o or (o == best_o and (vb, vm, vt, mb, mk, mt) > best):
                    best_o = o
                    best = (vb, vm, vt, mb, mk, mt)
                    found = (mb, mk, mt)
    return found


def _suffix_max(items: list[int]) -> list[int]:
    """``out[k] = max(items[k:])``."""
    return list(accumulate(reversed(items), max))[::-1]


_TopChoice = tuple[int, int, int]  # score, value, mask


def _top_chooser(
    n: int, top_of: dict[int, tuple[int, int, int]]
) -> Callable[[int, bool, int], _TopChoice | None]:
    """``choose(used, secured, limit)``: the best top among the cards not in ``used`` with
    value ``<= limit``, by (score, value, mask); score counts the Fantasyland bonus only
    when not ``secured``. None when every such top beats ``limit``.
    """
    full = (1 << n) - 1
    if n <= 14:
        # 3 or 4 cards are left: look their 1 or 4 tops up directly.
        def choose_few(used: int, secured: bool, limit: int) -> _TopChoice | None:
            rest = full ^ used
            best: _TopChoice | None = None
            for mask in (rest,) if n == 13 else _drop_each(rest):
                value, royalty, score = top_of[mask]
                choice = (royalty if secured else score, value, mask)
                if value <= limit and (best is None or choice > best):
                    best = choice
            return best

        return choose_few

    # 5..7 cards left: scan all the hand's tops, best first, for the first that fits (on
    # random hands about 20..50 steps, far cheaper than ranking the rest's 10..35 tops).
    ranked_secured = sorted(((r, v, m) for m, (v, r, _) in top_of.items()), reverse=True)
    ranked_open = sorted(((s, v, m) for m, (v, _, s) in top_of.items()), reverse=True)

    def choose_scan(used: int, secured: bool, limit: int) -> _TopChoice | None:
        for top in ranked_secured if secured else ranked_open:
            if not top[2] & used and top[1] <= limit:
                return top
        return None

    return choose_scan


def _drop_each(rest: int) -> list[int]:
    """``rest`` minus each one of its bits in turn."""
    out = []
    bits = rest
    while bits:
        b = bits & -bits
        out.append(rest ^ b)
        bits ^= b
    return out
