"""The evaluator: one value for 3- and 5-card rows on one scale, checked exhaustively.

Every five-card hand (2,598,960) and every three-card top (22,100) is evaluated; the
category counts are the textbook ones and the order agrees with an independent evaluator
(treys for five cards, eval7 for three, and eval7 again for tops against five-card rows).
"""

from __future__ import annotations

import random
import warnings
from collections import Counter
from collections.abc import Sequence
from itertools import combinations, pairwise, starmap

import pytest
import treys
from hypothesis import given
from hypothesis import strategies as st
from ofc.cards import CARD_CODES, Card, Rank, parse_cards
from ofc.errors import WrongRowSizeError
from ofc.evaluator import (
    Category,
    HandValue,
    category_of,
    evaluate,
    primary_rank,
    rank3,
    rank5,
    rank_row,
)

with warnings.catch_warnings():  # eval7 uses pyparsing names that now warn on import
    warnings.simplefilter("ignore", DeprecationWarning)
    import eval7

C = Category

# --- exhaustive: all 2,598,960 five-card hands ----------------------------------------------
FIVE_CARD_COUNTS = {
    C.ROYAL_FLUSH: 4,
    C.STRAIGHT_FLUSH: 36,
    C.QUADS: 624,
    C.FULL_HOUSE: 3_744,
    C.FLUSH: 5_108,
    C.STRAIGHT: 10_200,
    C.TRIPS: 54_912,
    C.TWO_PAIR: 123_552,
    C.PAIR: 1_098_240,
    C.HIGH_CARD: 1_302_540,
}
# Distinct values per category: the textbook 7,462 equivalence classes.
FIVE_CARD_CLASSES = {
    C.ROYAL_FLUSH: 1,
    C.STRAIGHT_FLUSH: 9,
    C.QUADS: 156,
    C.FULL_HOUSE: 156,
    C.FLUSH: 1_277,
    C.STRAIGHT: 10,
    C.TRIPS: 858,
    C.TWO_PAIR: 858,
    C.PAIR: 2_860,
    C.HIGH_CARD: 1_277,
}


@pytest.fixture(scope="module")
def five_card_values() -> list[int]:
    """rank5 of every five-card hand, in itertools.combinations(range(52), 5) order."""
    return list(starmap(rank5, combinations(range(52), 5)))


@pytest.mark.slow
def test_five_card_category_counts(five_card_values: list[int]) -> None:
    assert len(five_card_values) == 2_598_960
    counts = Counter(v >> 20 for v in five_card_values)
    assert {Category(k): n for k, n in counts.items()} == FIVE_CARD_COUNTS
    # Straight flush including royal: 40.
    assert counts[C.STRAIGHT_FLUSH] + counts[C.ROYAL_FLUSH] == 40


@pytest.mark.slow
def test_five_card_distinct_values(five_card_values: list[int]) -> None:
    distinct = set(five_card_values)
    assert len(distinct) == 7_462
    assert Counter(category_of(v) for v in distinct) == FIVE_CARD_CLASSES


@pytest.mark.slow
def test_five_card_order_agrees_with_treys(five_card_values: list[int]) -> None:
    """Our value -> treys' rank is a well-defined, strictly decreasing bijection.

    treys ranks 1 (royal flush) .. 7462 (7-5-4-3-2), smaller is stronger.
    """
    to_treys = [treys.Card.new(code) for code in CARD_CODES]
    five = treys.Evaluator()._five
    treys_ranks = [
        five([to_treys[a], to_treys[b], to_treys[c], to_treys[d], to_treys[e]])
        for a, b, c, d, e in combinations(range(52), 5)
    ]
    pairs = set(zip(five_card_values, treys_ranks, strict=True))
    # 7,462 distinct (ours, treys) pairs, 7,462 distinct values on each side: a bijection.
    assert len(pairs) == 7_462
    assert len({ours for ours, _ in pairs}) == 7_462
    assert {theirs for _, theirs in pairs} == set(range(1, 7_463))
    by_ours = sorted(pairs)
    assert [theirs for _, theirs in by_ours] == list(range(7_462, 0, -1))


# --- exhaustive: all 22,100 three-card tops -------------------------------------------------
THREE_CARD_COUNTS = {C.TRIPS: 52, C.PAIR: 3_744, C.HIGH_CARD: 18_304}


def _eval7_cards() -> list[eval7.Card]:
    return [eval7.Card(code) for code in CARD_CODES]


def _eval7(cards: list[eval7.Card], ids: Sequence[int]) -> int:
    value: int = eval7.evaluate([cards[i] for i in ids])
    return value


@pytest.fixture(scope="module")
def three_card_values() -> list[int]:
    return list(starmap(rank3, combinations(range(52), 3)))


def test_three_card_category_counts(three_card_values: list[int]) -> None:
    assert len(three_card_values) == 22_100
    counts = Counter(category_of(v) for v in three_card_values)
    assert counts == THREE_CARD_COUNTS
    distinct = set(three_card_values)
    assert len(distinct) == 455
    assert Counter(category_of(v) for v in distinct) == {C.TRIPS: 13, C.PAIR: 156, C.HIGH_CARD: 286}


def test_three_card_order_agrees_with_eval7(three_card_values: list[int]) -> None:
    cards = _eval7_cards()
    theirs = [eval7.evaluate([cards[i] for i in top]) for top in combinations(range(52), 3)]
    pairs = sorted(set(zip(three_card_values, theirs, strict=True)))
    assert len(pairs) == 455
    assert len({t for _, t in pairs}) == 455
    assert all(x[1] < y[1] for x, y in pairwise(pairs))  # strictly increasing


@pytest.mark.slow
def test_tops_and_five_card_rows_share_one_scale_with_eval7(
    three_card_values: list[int], five_card_values: list[int]
) -> None:
    """All 455 top classes and all 7,462 five-card classes, merged in our order, are in
    eval7's order too: every top-vs-row comparison agrees, none ties."""
    cards = _eval7_cards()
    tops = dict(zip(three_card_values, combinations(range(52), 3), strict=True))
    fives = dict(zip(five_card_values, combinations(range(52), 5), strict=True))
    merged = sorted(
        [(v, eval7.evaluate([cards[i] for i in hand])) for v, hand in tops.items()]
        + [(v, eval7.evaluate([cards[i] for i in hand])) for v, hand in fives.items()]
    )
    assert len(merged) == 455 + 7_462
    assert len({ours for ours, _ in merged}) == len(merged)  # a top never ties a 5-card row
    assert all(x[1] < y[1] for x, y in pairwise(merged))


def test_sampled_top_vs_middle_comparisons_agree_with_eval7() -> None:
    """Tops and middles dealt from one deck, compared by us and by eval7."""
    rng = random.Random(20_260_101)
    cards = _eval7_cards()
    for _ in range(20_000):
        hand = rng.sample(range(52), 8)
        top, middle = hand[:3], hand[3:]
        ours = rank3(*top) - rank5(*middle)
        theirs = _eval7(cards, top) - _eval7(cards, middle)
        assert (ours > 0) - (ours < 0) == (theirs > 0) - (theirs < 0), (top, middle)


def _tying_middles(top: Sequence[int]) -> list[tuple[int, ...]]:
    """Every five-card row (one pick of suits per rank choice) that has the top's category
    and repeats every rank the top is compared on, plus two extra kickers: the rows a top
    ties with on all compared ranks. Straights and flushes are left out. Cards come from
    outside the top where the deck allows (a trips top leaves one card of its rank)."""
    category, compared = _shape(top)
    if category is C.TRIPS:
        allowed = [r for r in range(13) if r != compared[0]]
    elif category is C.PAIR:
        allowed = [r for r in range(compared[1]) if r != compared[0]]
    else:
        allowed = list(range(compared[-1]))
    by_preference = [c for c in range(52) if c not in top] + list(top)
    rows = []
    for kicker_hi, kicker_lo in combinations(sorted(allowed, reverse=True), 2):
        taken: list[int] = []
        for rank in [c >> 2 for c in top] + [kicker_hi, kicker_lo]:
            taken.append(next(c for c in by_preference if c >> 2 == rank and c not in taken))
        if _shape(taken)[0] is category:  # not a straight or a flush
            rows.append(tuple(taken))
    return rows


def test_a_top_that_ties_on_every_compared_rank_loses_to_the_middle() -> None:
    """rules.md: where the top has run out of cards and all compared ranks are equal, the
    middle is the stronger (it has extra kickers). eval7 agrees on every such pair."""
    cards = _eval7_cards()
    checked = 0
    seen_classes = set()
    for top in combinations(range(52), 3):
        value = rank3(*top)
        if value in seen_classes:
            continue
        seen_classes.add(value)
        for middle in _tying_middles(top):
            middle_value = rank5(*middle)
            assert category_of(middle_value) == category_of(value)
            compared = HandValue(value).ranks
            assert HandValue(middle_value).ranks[: len(compared)] == compared
            assert value < middle_value, (top, middle)
            assert _eval7(cards, top) < _eval7(cards, middle)
            checked += 1
    assert len(seen_classes) == 455
    assert checked > 1_000


# --- rules.md "one scale" and a rules book of rows ------------------------------------------
ONE_SCALE_TABLE = [
    # top, middle, which is stronger (rules.md "one scale" first)
    ("Kh Kd Ac", "Ks Kc Qd 7h 3c", "top"),  # top K-K-A vs middle K-K-Q-7-3: foul
    ("Kh Kd Qc", "Ks Kc Qd 7h 3c", "middle"),  # top K-K-Q vs middle K-K-Q-7-3: legal
    ("Ah Kd Qc", "As Kc Qd Jh 9c", "middle"),  # top A-K-Q vs middle A-K-Q-J-9: legal
    ("Qs Qd 2c", "Qh Qc Ad Kd Jc", "middle"),  # the pair's kicker 2 < A
    ("Qs Qd Ac", "Qh Qc Kd Jd 9c", "top"),  # the kicker decides: A > K
    ("Qs Qd Ac", "Qh Qc Ad Jd 9c", "middle"),  # A = A, then the middle has more
    ("Ah Ad Kc", "Ks Kc Qd Qh 2c", "middle"),  # two pair beats any pair
    ("2h 2d 2c", "As Ac Kd Kh Qc", "top"),  # trips beat two pair
    ("Ah Ad Ac", "2s 3c 4d 5h 6c", "middle"),  # a straight beats any top
    ("Ah Ad Ac", "Ks Kc Kd 5h 6c", "top"),  # trips by rank
    ("7h 7d 7c", "7s Ac Kd 5h 6c", "top"),  # trips beat a pair of the same rank
    ("Ah Kd 2c", "As Kc 4d 3h 2d", "middle"),  # A-K-2 vs A-K-4-3-2: 4 > 2 in the third slot
    ("Ah Kd 5c", "As Kc 4d 3h 2d", "top"),  # A-K-5 vs A-K-4-3-2
    ("9h 9d 5c", "9s 9c 5d 3h 2d", "middle"),  # pair, same kicker, the middle has more
    ("Th Td 5c", "9s 9c Ad Kh Qd", "top"),  # pair rank first
]


@pytest.mark.parametrize(("top", "middle", "stronger"), ONE_SCALE_TABLE)
def test_one_scale(top: str, middle: str, stronger: str) -> None:
    top_value = evaluate(parse_cards(top))
    middle_value = evaluate(parse_cards(middle))
    assert top_value != middle_value
    assert (top_value > middle_value) == (stronger == "top")
    assert (rank3(*parse_cards(top)) > rank5(*parse_cards(middle))) == (stronger == "top")


ROW_TABLE = [
    # cards, category, ranks (category ranks, then kickers), name
    ("Ah Kh Qh Jh Th", C.ROYAL_FLUSH, "A", "royal flush"),
    ("Ts Js Qs Ks As", C.ROYAL_FLUSH, "A", "royal flush"),
    ("Kd Qd Jd Td 9d", C.STRAIGHT_FLUSH, "K", "straight flush, king high"),
    ("5s 4s 3s 2s As", C.STRAIGHT_FLUSH, "5", "straight flush, five high"),
    ("9d 9h 9s 9c 2c", C.QUADS, "92", "four nines, two kicker"),
    ("Kh Kd Ks 2c 2d", C.FULL_HOUSE, "K2", "full house, kings full of twos"),
    ("2h 2d 2s Kc Kd", C.FULL_HOUSE, "2K", "full house, twos full of kings"),
    ("Ah 9h 7h 4h 2h", C.FLUSH, "A9742", "flush, A-9-7-4-2"),
    ("Ah Kd Qc Js Th", C.STRAIGHT, "A", "straight, ace high"),
    ("6c 5d 4h 3s 2c", C.STRAIGHT, "6", "straight, six high"),
    ("5d 4c 3h 2s Ac", C.STRAIGHT, "5", "straight, five high"),
    ("Qh Qd Qs 7c 2d", C.TRIPS, "Q72", "three queens, 7-2 kickers"),
    ("Jh Jd 4s 4c Ac", C.TWO_PAIR, "J4A", "two pair, jacks and fours, ace kicker"),
    ("Th Td 8s 7c 2d", C.PAIR, "T872", "pair of tens, 8-7-2 kickers"),
    ("6h 6d As Kc Qd", C.PAIR, "6AKQ", "pair of sixes, A-K-Q kickers"),
    ("Ah Qd 9s 7c 2d", C.HIGH_CARD, "AQ972", "high card, A-Q-9-7-2"),
    ("Kh Qd Jc Th 8s", C.HIGH_CARD, "KQJT8", "high card, K-Q-J-T-8"),
    ("4h 3d 2c As Kd", C.HIGH_CARD, "AK432", "high card, A-K-4-3-2"),  # no wrap-around
    # tops: three cards, no straights or flushes
    ("Ah Ad Ac", C.TRIPS, "A", "three aces"),
    ("2h 2d 2c", C.TRIPS, "2", "three twos"),
    ("Kh Kd Ac", C.PAIR, "KA", "pair of kings, ace kicker"),
    ("Qs Qd 2c", C.PAIR, "Q2", "pair of queens, two kicker"),
    ("6s 6d 9c", C.PAIR, "69", "pair of sixes, nine kicker"),
    ("Ah Kd 2c", C.HIGH_CARD, "AK2", "high card, A-K-2"),
    ("Ah Kh Qh", C.HIGH_CARD, "AKQ", "high card, A-K-Q"),  # a 3-card flush does not count
    ("4c 3d 2h", C.HIGH_CARD, "432", "high card, 4-3-2"),  # nor a 3-card straight
]


@pytest.mark.parametrize(("cards", "category", "ranks", "name"), ROW_TABLE)
def test_rows(cards: str, category: Category, ranks: str, name: str) -> None:
    hand = evaluate(parse_cards(cards))
    assert hand.category is category
    assert "".join(r.char for r in hand.ranks) == ranks
    assert str(hand) == name
    assert hand.value == rank_row(parse_cards(cards))
    assert category_of(hand.value) is category
    assert primary_rank(hand.value) is Rank.parse(ranks[0])


def test_category_order_and_labels() -> None:
    assert list(Category) == sorted(Category)
    assert [c.label for c in Category] == [
        "high card", "pair", "two pair", "three of a kind", "straight", "flush",
        "full house", "four of a kind", "straight flush", "royal flush",
    ]  # fmt: skip


STRONGER_TABLE = [
    # weaker, stronger
    ("5d 4c 3h 2s Ac", "6c 5d 4h 3s 2c"),  # the wheel is the lowest straight
    ("5s 4s 3s 2s As", "6h 5h 4h 3h 2h"),  # the steel wheel is the lowest straight flush
    ("Kd Qd Jd Td 9d", "Ah Kh Qh Jh Th"),  # royal above the best straight flush
    ("Ah Kd Qc Js Th", "7h 5h 4h 3h 2h"),  # any flush beats any straight
    ("Ah Ad Ac Kd Kh", "2c 2d 2h 2s 3c"),  # quads beat a full house
    ("Kh Kd Ks Ac Ad", "Ah Ad As 2c 2d"),  # full house by trips rank first
    ("Ah Ad Kc Kd Qs", "2h 2d 2c 3s 4d"),  # trips beat two pair
    ("Jh Jd 4s 4c Ac", "Jh Jd 5s 5c 2c"),  # second pair before the kicker
    ("Th Td 8s 7c 2d", "Th Td 8s 7c 3d"),  # last kicker decides
    ("Ah Qd 9s 7c 2d", "Ah Qd 9s 7c 3d"),
    ("Ah Qd 9s 7c 2d", "2h 2d 3s 4c 5d"),  # any pair beats any high card
]


@pytest.mark.parametrize(("weaker", "stronger"), STRONGER_TABLE)
def test_stronger(weaker: str, stronger: str) -> None:
    assert evaluate(parse_cards(weaker)) < evaluate(parse_cards(stronger))


def test_suits_never_break_ties() -> None:
    assert evaluate(parse_cards("Ah Kd 7c 5s 2h")) == evaluate(parse_cards("As Kc 7d 5h 2c"))
    assert evaluate(parse_cards("Qs Qd 2c")) == evaluate(parse_cards("Qh Qc 2d"))


@pytest.mark.parametrize("size", [0, 1, 2, 4, 6, 7])
def test_wrong_row_size(size: int) -> None:
    with pytest.raises(WrongRowSizeError, match=f"not {size}"):
        evaluate([Card(i) for i in range(size)])


# --- properties -----------------------------------------------------------------------------
rows = st.one_of(
    st.lists(st.integers(0, 51), min_size=3, max_size=3, unique=True),
    st.lists(st.integers(0, 51), min_size=5, max_size=5, unique=True),
)


def _shape(cards: Sequence[int]) -> tuple[Category, tuple[int, ...]]:
    """Category and ranks from first principles, for the property below."""
    ranks = sorted((c >> 2 for c in cards), reverse=True)
    counts = Counter(ranks)
    ordered = tuple(sorted(counts, key=lambda r: (counts[r], r), reverse=True))
    shape = sorted(counts.values(), reverse=True)
    if len(cards) == 3:
        return {3: C.TRIPS, 2: C.PAIR, 1: C.HIGH_CARD}[shape[0]], ordered
    flush = len({c & 3 for c in cards}) == 1
    wheel = ordered == (12, 3, 2, 1, 0)
    straight = len(counts) == 5 and (ordered[0] - ordered[4] == 4 or wheel)
    if straight:
        high = 3 if wheel else ordered[0]
        if flush:
            return (C.ROYAL_FLUSH if high == 12 else C.STRAIGHT_FLUSH), (high,)
        return C.STRAIGHT, (high,)
    if flush:
        return C.FLUSH, ordered
    by_shape = {
        (4, 1): C.QUADS, (3, 2): C.FULL_HOUSE, (3, 1, 1): C.TRIPS, (2, 2, 1): C.TWO_PAIR,
        (2, 1, 1, 1): C.PAIR, (1, 1, 1, 1, 1): C.HIGH_CARD,
    }  # fmt: skip
    return by_shape[tuple(shape)], ordered


@given(rows, rows)
def test_total_order_is_consistent_with_category(a: list[int], b: list[int]) -> None:
    va, vb = evaluate(a), evaluate(b)
    (cat_a, ranks_a), (cat_b, ranks_b) = _shape(a), _shape(b)
    assert (va.category, tuple(va.ranks)) == (cat_a, ranks_a)
    assert (vb.category, tuple(vb.ranks)) == (cat_b, ranks_b)
    if cat_a != cat_b:
        assert (va < vb) == (cat_a < cat_b)
    elif len(a) == len(b):
        # Same category and size: ranks in order decide, lexicographically.
        assert (va < vb) == (ranks_a < ranks_b)
        assert (va == vb) == (ranks_a == ranks_b)
    else:
        # A top against a five-card row: compare the shared slots; a tie goes to the row.
        short, long_ = (ranks_a, ranks_b) if len(a) == 3 else (ranks_b, ranks_a)
        top_wins = short > long_[: len(short)]
        assert (va > vb) == (top_wins if len(a) == 3 else not top_wins)
    assert (va < vb) + (va == vb) + (va > vb) == 1
