"""Hand values for 3- and 5-card rows on one scale.

A row's value is one ``int``: ``category << 20`` then up to five 4-bit rank slots, the
ranks that define the category first, then kickers, highest first. A slot holds
``rank + 1`` (1..13), and 0 where the row has no card left, so a 3-card top compared
with a 5-card middle runs out of kickers first and loses the tie (rules.md "one scale"):

>>> top, middle = evaluate(parse_cards("Kh Kd Ac")), evaluate(parse_cards("Ks Kc Qd 7h 3c"))
>>> top > middle, str(top)
(True, 'pair of kings, ace kicker')
>>> evaluate(parse_cards("Kh Kd Qc")) < middle
True

The hot paths :func:`rank5` and :func:`rank3` take card ids and do one product of primes
and one dict lookup (plus a suit test for 5 cards); :func:`evaluate` wraps the same value
in a :class:`HandValue` with names.

A joker (card ids 52, 53) stands for the card that makes the row strongest among the cards
not already in that row, and ranks exactly as that card: its row's value is that natural
value, so a joker row and a natural row with the same ranks tie, royalties and Fantasyland
read the hand it makes, and the top-vs-middle rule stays the one comparison of ints
(docs/jokers.md):

>>> str(evaluate(parse_cards("X1 Kd 7c"))), str(evaluate(parse_cards("X1 X2 9h 8h 2h")))
('pair of kings, seven kicker', 'flush, A-K-9-8-2')
>>> evaluate(parse_cards("Ks X2 7h")) == evaluate(parse_cards("Ks Kd 7c"))
True

Rows with jokers leave the hot path once (an ``IndexError`` on the 52-entry prime table,
free when it does not happen) for tables of the best substitution, built below.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from itertools import combinations, combinations_with_replacement

from ofc.cards import NATURAL_CARDS, RANK_CHARS, Rank, parse_cards
from ofc.errors import WrongRowSizeError

__all__ = [
    "Category",
    "HandValue",
    "evaluate",
    "parse_cards",
    "rank3",
    "rank5",
    "rank_row",
]


class Category(IntEnum):
    HIGH_CARD = 0
    PAIR = 1
    TWO_PAIR = 2
    TRIPS = 3
    STRAIGHT = 4
    FLUSH = 5
    FULL_HOUSE = 6
    QUADS = 7
    STRAIGHT_FLUSH = 8
    # Only the ace-high straight flush; kept apart because royalty tables price it apart.
    ROYAL_FLUSH = 9

    @property
    def label(self) -> str:
        return _CATEGORY_LABELS[self]


_CATEGORY_LABELS = (
    "high card", "pair", "two pair", "three of a kind", "straight", "flush",
    "full house", "four of a kind", "straight flush", "royal flush",
)  # fmt: skip

_RANK_NAMES = (
    "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "jack", "queen", "king", "ace",
)  # fmt: skip
_RANK_PLURALS = tuple("sixes" if n == "six" else n + "s" for n in _RANK_NAMES)

_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)
_CATEGORY_SHIFT = 20


def _pack(category: Category, ranks: Sequence[int]) -> int:
    value = int(category)
    for slot in range(5):
        value = (value << 4) | (ranks[slot] + 1 if slot < len(ranks) else 0)
    return value


def _straight_high(distinct_desc: Sequence[int]) -> int | None:
    if len(distinct_desc) != 5:
        return None
    if distinct_desc[0] - distinct_desc[4] == 4:
        return distinct_desc[0]
    if list(distinct_desc) == [Rank.ACE, Rank.FIVE, Rank.FOUR, Rank.THREE, Rank.TWO]:
        return Rank.FIVE  # the wheel is five-high
    return None


def _value_of_ranks(ranks: Sequence[int], *, flush: bool) -> int:
    """Value of a row given its ranks; the slow, obvious definition the tables cache."""
    counts = Counter(ranks)
    # Ranks ordered by how many of them, then by rank: the category's ranks come first.
    ordered = sorted(counts, key=lambda r: (counts[r], r), reverse=True)
    shape = sorted(counts.values(), reverse=True)
    if len(ranks) == 3:
        category = {3: Category.TRIPS, 2: Category.PAIR}.get(shape[0], Category.HIGH_CARD)
        return _pack(category, ordered)
    high = _straight_high(ordered)
    if high is not None:
        if flush:
            category = Category.ROYAL_FLUSH if high == Rank.ACE else Category.STRAIGHT_FLUSH
        else:
            category = Category.STRAIGHT
        return _pack(category, [high])
    if flush:
        return _pack(Category.FLUSH, ordered)
    category = {
        (4, 1): Category.QUADS,
        (3, 2): Category.FULL_HOUSE,
        (3, 1, 1): Category.TRIPS,
        (2, 2, 1): Category.TWO_PAIR,
        (2, 1, 1, 1): Category.PAIR,
    }.get(tuple(shape), Category.HIGH_CARD)
    return _pack(category, ordered)


def _product(ranks: Sequence[int]) -> int:
    product = 1
    for rank in ranks:
        product *= _PRIMES[rank]
    return product


def _build_tables() -> tuple[dict[int, int], dict[int, int], dict[int, int]]:
    unsuited5: dict[int, int] = {}
    for ranks in combinations_with_replacement(range(13), 5):
        if max(Counter(ranks).values()) <= 4:
            unsuited5[_product(ranks)] = _value_of_ranks(ranks, flush=False)
    flush5 = {_product(r): _value_of_ranks(r, flush=True) for r in combinations(range(13), 5)}
    top3 = {
        _product(r): _value_of_ranks(r, flush=False)
        for r in combinations_with_replacement(range(13), 3)
    }
    return unsuited5, flush5, top3


_UNSUITED5, _FLUSH5, _TOP3 = _build_tables()
# Per card id: its rank's prime. Only the 52 natural cards: a joker's id is past the end.
_CARD_PRIME = tuple(_PRIMES[i >> 2] for i in range(NATURAL_CARDS))


def _build_joker_tables() -> tuple[dict[int, int], dict[int, int], dict[int, int]]:
    """Best values of rows with jokers, keyed by the product of the natural cards' primes.

    A joker is any card not in its row, so the rank it takes may repeat a natural rank (at
    most four of a rank in all) and makes a flush only with natural cards of one suit and
    ranks not among theirs. ``plain5`` and ``suited5`` cover 5-card rows with one or two
    jokers (``suited5``: the natural cards share a suit); ``top3`` 3-card tops with one or
    two. Keys of one and two jokers never collide: the products have 4 and 3 prime factors.
    """
    plain5: dict[int, int] = {}
    suited5: dict[int, int] = {}
    top3: dict[int, int] = {}
    for jokers in (1, 2):
        for naturals in combinations_with_replacement(range(13), 5 - jokers):
            key = _product(naturals)
            subs = list(combinations_with_replacement(range(13), jokers))
            # -1: that substitution would make five of a rank (a card that is in the row).
            plain5[key] = max(_UNSUITED5.get(key * _product(s), -1) for s in subs)
            if len(set(naturals)) == len(naturals):
                flushes = [
                    _FLUSH5[key * _product(s)]
                    for s in subs
                    if len(set(s)) == jokers and not set(s) & set(naturals)
                ]
                suited5[key] = max([plain5[key], *flushes])
        for naturals in combinations_with_replacement(range(13), 3 - jokers):
            key = _product(naturals)
            top3[key] = max(
                _TOP3[key * _product(s)] for s in combinations_with_replacement(range(13), jokers)
            )
    return plain5, suited5, top3


_JOKER_PLAIN5, _JOKER_SUITED5, _JOKER_TOP3 = _build_joker_tables()


def _rank_with_jokers(cards: Sequence[int]) -> int:
    """Value of a 3- or 5-card row holding one or two jokers (ids 52, 53)."""
    naturals = [c for c in cards if c < NATURAL_CARDS]
    jokers = len(cards) - len(naturals)
    if not 1 <= jokers <= 2 or any(c > NATURAL_CARDS + 1 for c in cards):
        raise IndexError(f"not a row of distinct cards: {list(cards)!r}")
    key = _product([c >> 2 for c in naturals])
    if len(cards) == 3:
        return _JOKER_TOP3[key]
    if len({c & 3 for c in naturals}) == 1:
        return _JOKER_SUITED5[key]
    return _JOKER_PLAIN5[key]


def rank5(
    a: int,
    b: int,
    c: int,
    d: int,
    e: int,
    *,
    _p: tuple[int, ...] = _CARD_PRIME,
    _flush: dict[int, int] = _FLUSH5,
    _plain: dict[int, int] = _UNSUITED5,
) -> int:
    """Value of five distinct card ids (bigger is stronger).

    >>> from ofc.cards import Card
    >>> rank5(*parse_cards("Ah Kh Qh Jh Th")) > rank5(*parse_cards("9s 9h 9d 9c 2c"))
    True
    """
    # Suit is id & 3. The chain stops at the first mismatch: usually after one comparison.
    try:
        if a & 3 == b & 3 == c & 3 == d & 3 == e & 3:
            return _flush[_p[a] * _p[b] * _p[c] * _p[d] * _p[e]]
        return _plain[_p[a] * _p[b] * _p[c] * _p[d] * _p[e]]
    except IndexError:  # a joker's id is past the prime table
        return _rank_with_jokers((a, b, c, d, e))


def rank3(
    a: int,
    b: int,
    c: int,
    *,
    _p: tuple[int, ...] = _CARD_PRIME,
    _top: dict[int, int] = _TOP3,
) -> int:
    """Value of a 3-card top, on the same scale as :func:`rank5`.

    >>> rank3(*parse_cards("Qs Qd 2c")) > rank5(*parse_cards("Qh Qc Ad Kd Jc"))
    False
    """
    try:
        return _top[_p[a] * _p[b] * _p[c]]
    except IndexError:  # a joker's id is past the prime table
        return _rank_with_jokers((a, b, c))


def rank_row(cards: Sequence[int]) -> int:
    """Value of a full 3- or 5-card row given as card ids."""
    if len(cards) == 5:
        return rank5(*cards)
    if len(cards) == 3:
        return rank3(*cards)
    raise WrongRowSizeError(f"a row has 3 or 5 cards, not {len(cards)}")


# Enum lookups by value cost a Python call each; names are built ~10^4 times a second.
_CATEGORIES: tuple[Category, ...] = tuple(Category)
_RANKS: tuple[Rank, ...] = tuple(Rank)


def category_of(value: int) -> Category:
    """The category of a value from :func:`rank5` / :func:`rank3`."""
    category = value >> _CATEGORY_SHIFT
    if 0 <= category < len(_CATEGORIES):
        return _CATEGORIES[category]
    return Category(category)  # the ValueError naming it


def primary_rank(value: int) -> Rank:
    """The rank that defines the category (the pair's, the trips', a straight's high card)."""
    return Rank(((value >> 16) & 15) - 1)


@dataclass(frozen=True, slots=True, order=True)
class HandValue:
    """A row's value with names; compares like the int it wraps.

    >>> v = evaluate(parse_cards("5d 4c 3h 2s Ac"))
    >>> v.category.name, v.ranks, str(v)
    ('STRAIGHT', (<Rank.FIVE: 3>,), 'straight, five high')
    """

    value: int

    @property
    def category(self) -> Category:
        return category_of(self.value)

    @property
    def ranks(self) -> tuple[Rank, ...]:
        """Category ranks then kickers, highest first; each distinct rank once."""
        value, ranks = self.value, _RANKS
        nibbles = [(value >> shift) & 15 for shift in (16, 12, 8, 4, 0)]
        return tuple([ranks[n - 1] if n <= len(ranks) else Rank(n - 1) for n in nibbles if n])

    def __str__(self) -> str:
        cat, ranks = self.category, self.ranks
        names = [_RANK_NAMES[r] for r in ranks]
        if cat in (Category.STRAIGHT, Category.STRAIGHT_FLUSH):
            return f"{cat.label}, {names[0]} high"
        if cat == Category.ROYAL_FLUSH:
            return cat.label
        if cat in (Category.HIGH_CARD, Category.FLUSH):
            return f"{cat.label}, {'-'.join(RANK_CHARS[r] for r in ranks)}"
        plural = [_RANK_PLURALS[r] for r in ranks]
        if cat == Category.PAIR:
            head = f"pair of {plural[0]}"
        elif cat == Category.TWO_PAIR:
            head = f"two pair, {plural[0]} and {plural[1]}"
            return head + (f", {names[2]} kicker" if len(names) > 2 else "")
        elif cat == Category.TRIPS:
            head = f"three {plural[0]}"
        elif cat == Category.FULL_HOUSE:
            return f"full house, {plural[0]} full of {plural[1]}"
        else:
            head = f"four {plural[0]}"
        if len(ranks) == 1:
            return head
        if len(ranks) == 2:
            return f"{head}, {names[1]} kicker"
        return f"{head}, {'-'.join(RANK_CHARS[r] for r in ranks[1:])} kickers"


def evaluate(cards: Sequence[int]) -> HandValue:
    """Evaluate a 3- or 5-card row (card ids or :class:`~ofc.cards.Card`).

    >>> str(evaluate(parse_cards("Ah Ad Ac")))
    'three aces'
    """
    return HandValue(rank_row(cards))
