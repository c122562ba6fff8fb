"""Jokers in the evaluator: every row with one or two jokers, against a brute force.

A joker stands for the card not in its row that makes the row strongest, and ranks as that
card (docs/jokers.md). The brute force here tries every such card (every pair of distinct
cards for two jokers) with the 52-card evaluator, whose own values the exhaustive tests in
``test_evaluator.py`` check against treys and eval7; it shares nothing with the joker
tables. Every 5-card row with one joker (270,725 of them) and with two (22,100), and every
3-card top with one (1,326) or two (52), is compared value for value; the category counts
are written out below. With the 2,598,960 natural hands and each joker of a 54-card deck,
they cover all 3,162,510 five-card hands of that deck.
"""

from __future__ import annotations

import random
from collections import Counter
from itertools import combinations, permutations

import pytest
from ofc.cards import NATURAL_CARDS, Card, parse_cards
from ofc.evaluator import Category, evaluate, rank3, rank5, rank_row
from ofc.rulesets import get_ruleset
from ofc.scoring import Board, assess

C = Category
X1, X2 = 52, 53
NATURAL = range(NATURAL_CARDS)

# Category counts over every 5-card row of 4 natural cards and one joker.
ONE_JOKER_FIVE = {
    C.ROYAL_FLUSH: 20,  # 4 suits x the 5 cards the joker can replace
    C.STRAIGHT_FLUSH: 144,
    C.QUADS: 2_509,  # 13 natural quads + 13 x 4 x 48 trips with a kicker
    C.FULL_HOUSE: 2_808,  # every two pair: C(13,2) x 6 x 6
    C.FLUSH: 2_696,
    C.STRAIGHT: 10_332,
    C.TRIPS: 82_368,
    C.TWO_PAIR: 0,  # a pair and a joker make trips, never two pair
    C.PAIR: 169_848,
    C.HIGH_CARD: 0,
}
# ... of 3 natural cards and two jokers.
TWO_JOKER_FIVE = {
    C.ROYAL_FLUSH: 40,
    C.STRAIGHT_FLUSH: 216,
    C.QUADS: 3_796,
    C.FULL_HOUSE: 0,
    C.FLUSH: 888,
    C.STRAIGHT: 3_840,
    C.TRIPS: 13_320,
    C.TWO_PAIR: 0,
    C.PAIR: 0,
    C.HIGH_CARD: 0,
}
ONE_JOKER_TOP = {C.TRIPS: 78, C.PAIR: 1_248}  # 78: the pairs; 1,248: two ranks x 16
TWO_JOKER_TOP = {C.TRIPS: 52}


def brute_five(naturals: tuple[int, ...]) -> int:
    """Best rank5 over every set of distinct cards outside the row standing in for jokers."""
    free = [c for c in NATURAL if c not in naturals]
    return max(rank5(*naturals, *subs) for subs in combinations(free, 5 - len(naturals)))


def brute_top(naturals: tuple[int, ...]) -> int:
    free = [c for c in NATURAL if c not in naturals]
    return max(rank3(*naturals, *subs) for subs in combinations(free, 3 - len(naturals)))


def counts(values: list[int]) -> dict[Category, int]:
    tally = Counter(v >> 20 for v in values)
    return {c: tally[c] for c in Category}


@pytest.mark.slow
def test_every_five_card_row_with_one_joker() -> None:
    values = []
    for a, b, c, d in combinations(NATURAL, 4):
        value = rank5(a, b, c, d, X1)
        assert value == brute_five((a, b, c, d)), (a, b, c, d)
        values.append(value)
    assert len(values) == 270_725
    assert counts(values) == ONE_JOKER_FIVE


@pytest.mark.slow
def test_every_five_card_row_with_two_jokers() -> None:
    values = []
    for a, b, c in combinations(NATURAL, 3):
        value = rank5(X1, a, X2, b, c)
        assert value == brute_five((a, b, c)), (a, b, c)
        values.append(value)
    assert len(values) == 22_100
    assert counts(values) == TWO_JOKER_FIVE


def test_every_top_with_jokers() -> None:
    one = [rank3(a, X2, b) for a, b in combinations(NATURAL, 2)]
    assert one == [brute_top(pair) for pair in combinations(NATURAL, 2)]
    two = [rank3(X1, X2, a) for a in NATURAL]
    assert two == [brute_top((a,)) for a in NATURAL]
    assert Counter(C(v >> 20) for v in one) == ONE_JOKER_TOP
    assert Counter(C(v >> 20) for v in two) == TWO_JOKER_TOP


def test_either_joker_in_any_position_is_the_same_row() -> None:
    rng = random.Random(18)
    for _ in range(300):
        size = rng.choice((3, 5))
        jokers = rng.sample((X1, X2), rng.randint(1, 2))
        row = [*rng.sample(NATURAL, size - len(jokers)), *jokers]
        swapped = [X1 + X2 - c if c >= X1 else c for c in row]
        expected = rank_row(row)
        assert all(rank_row(p) == expected for p in permutations(row))
        assert rank_row(swapped) == expected


# --- the rules, written out -----------------------------------------------------------------
# Each joker row and the natural row it ties with exactly (the joker ranks as the card it
# stands for), with the name the row is shown with.
TIES = [
    ("X1 Kd 7c", "Ks Kd 7c", "pair of kings, seven kicker"),
    ("X1 X2 As", "Ac Ad As", "three aces"),
    ("X2 Qh 3d", "Qs Qh 3d", "pair of queens, three kicker"),  # a pair, never a made kicker
    ("As Kd X1", "As Ad Kd", "pair of aces, king kicker"),
    ("Ah Kh Qh Jh X1", "Ah Kh Qh Jh Th", "royal flush"),
    ("X1 9h 8h 2h 3h", "Ah 9h 8h 2h 3h", "flush, A-9-8-3-2"),  # the ace: highest absent card
    ("X1 X2 9h 8h 2h", "Ah Kh 9h 8h 2h", "flush, A-K-9-8-2"),
    ("Ah X1 9h 8h 2h", "Ah Kh 9h 8h 2h", "flush, A-K-9-8-2"),  # never a second Ah
    ("Ac Ad Ah As X1", "Ac Ad Ah As Kd", "four aces, king kicker"),  # no five of a kind
    ("X1 X2 Ac Ad Ah", "Ac Ad Ah As Kd", "four aces, king kicker"),
    ("X1 2c 3c 4c 5c", "6c 2c 3c 4c 5c", "straight flush, six high"),
    ("X1 2c 3d 4h 5s", "6c 2c 3d 4h 5s", "straight, six high"),
    ("X1 X2 2c 3d 9h", "9c 9d 2c 3d 9h", "three nines, 3-2 kickers"),
    ("X1 Ks Kd 7c 7h", "Kc Ks Kd 7c 7h", "full house, kings full of sevens"),
    ("X1 Kd 9c 7h 2s", "Ks Kd 9c 7h 2s", "pair of kings, 9-7-2 kickers"),
]


@pytest.mark.parametrize(("joker_row", "natural_row", "name"), TIES)
def test_a_joker_row_ties_the_natural_row_it_makes(
    joker_row: str, natural_row: str, name: str
) -> None:
    value = evaluate(parse_cards(joker_row))
    assert value == evaluate(parse_cards(natural_row))
    assert str(value) == name


# Top against middle on the one scale, with jokers: (top, middle, top stronger = foul).
TOP_VS_MIDDLE = [
    ("X1 Kd Ac", "Ks Kc Qd 7h 3c", True),  # KK-A beats KK-Q-7-3
    ("X1 Kd Qc", "Ks Kh Qd 7h 3c", False),  # KK-Q ties on the shared ranks: the middle has more
    ("X1 Kd Qc", "X2 Kh Qd 7h 3c", False),  # the same middle made with a joker
    ("X1 X2 Qc", "Kd Kh Ks 7h 3c", False),  # QQQ under KKK
    ("X1 X2 Kc", "Qd Qh Qs 7h 3c", True),  # KKK over QQQ
    ("X1 As Kc", "Ah Ad 7c 5h 3c", True),  # AA-K over AA-7-5-3
    ("X1 As Kc", "X2 Ad Kd 5h 3c", False),  # AA-K-5-3 over AA-K
]


@pytest.mark.parametrize(("top", "middle", "fouls"), TOP_VS_MIDDLE)
def test_top_against_middle_with_jokers(top: str, middle: str, fouls: bool) -> None:
    assert (evaluate(parse_cards(top)) > evaluate(parse_cards(middle))) is fouls


def test_a_row_of_jokers_only_or_a_bad_id_is_not_a_row() -> None:
    with pytest.raises(IndexError):
        rank3(X1, X2, 54)
    with pytest.raises(IndexError):
        rank5(1, 2, 3, 4, 60)
    assert Card(X1).is_joker


# --- royalties and Fantasyland count the hand a joker makes --------------------------------
# board (top / middle / bottom), royalties (top, middle, bottom), Fantasyland cards next hand
# (not in Fantasyland now; then in Fantasyland now), under pineapple-jokers.
JOKER_BOARDS = [
    ("X1 Qd 5c / 9c 9d 9h 4s 2c / Ts Js Qs Ks 3s", (7, 2, 4), 14, 0),  # QQ: entry, no stay
    ("X1 X2 2c / 9c 9d 9h 4s 4c / Ts Js Qs Ks As", (10, 12, 25), 14, 14),  # 222: stays
    ("Ac Kd 5c / 9c 9d X1 4s 4c / 7s 7h 7d 7c 3d", (0, 12, 10), 0, 14),  # middle full house
    ("Ac Kd 5c / 9c 9d 8h 4s 3c / Ts Js Qs Ks X2", (0, 0, 25), 0, 14),  # royal bottom stays
    ("X1 Kd Ac / Ks Kc Qd 7h 3c / X2 Ah Ad As 2s", (0, 0, 0), 0, 0),  # KK-A over KK-Q: foul
]


@pytest.mark.parametrize(("board", "royalties", "entry", "stay"), JOKER_BOARDS)
def test_royalties_and_fantasyland_with_jokers(
    board: str, royalties: tuple[int, int, int], entry: int, stay: int
) -> None:
    ruleset = get_ruleset("pineapple-jokers")
    parsed = Board.parse(board)
    fresh = assess(parsed, ruleset)
    assert fresh.royalties == royalties
    assert fresh.fantasyland.cards == entry
    assert assess(parsed, ruleset, in_fantasyland=True).fantasyland.cards == stay
    assert fresh.fouled is (board.startswith("X1 Kd Ac"))
