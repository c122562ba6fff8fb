"""The Fantasyland solver: exact against a plain enumeration, hand-checked hands, input errors.

The brute force below tries every (bottom, middle, top) of the hand, keeps the legal ones,
asks ``scoring.assess`` what each is worth, and takes the maximum of the documented key:
(objective, bottom value, middle value, top value, bottom cards, middle cards, top cards),
cards compared as ids sorted highest first. It shares nothing with the solver's search.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import pytest
from ofc.cards import Card, format_cards, parse_cards
from ofc.errors import DuplicateCardError, InvalidInputError, WrongCardCountError
from ofc.evaluator import Category, rank3, rank5
from ofc.rulesets import (
    DEFAULT_RULESET,
    UKRAINIAN_ROYALTIES,
    Row,
    RoyaltyTable,
    Ruleset,
    StayCondition,
    get_ruleset,
)
from ofc.scoring import Board, assess
from ofc.solver import (
    DEFAULT_FANTASYLAND_VALUE,
    FantasylandSolution,
    FantasylandValue,
    _strongest_rows,
    solve_fantasyland,
)

Rows = tuple[tuple[Card, ...], tuple[Card, ...], tuple[Card, ...]]

# A table that is not monotone anywhere (and pays for weak rows), with odd stay rules: the
# solver's bounds must not assume that stronger rows pay more.
WEIRD = DEFAULT_RULESET.replace(
    name="weird",
    royalties=RoyaltyTable(
        name="weird",
        bottom=(1, 3, 0, 5, 2, 1, 0, 7, 0, 4),
        middle=(0, 2, 9, 1, 6, 3, 12, 0, 5, 0),
        top_pair=(3, 0, 0, 8, 1, 0, 2, 0, 11, 0, 1, 4, 0),
        top_trips=(0, 15, 2, 0, 7, 1, 0, 0, 3, 9, 0, 0, 1),
    ),
    stay_conditions=(
        StayCondition(Row.TOP, Category.PAIR),
        StayCondition(Row.MIDDLE, Category.TRIPS),
    ),
    stay_min_row_royalty=8,
)

# (ruleset, keyword arguments) pairs the exactness tests cycle through.
CONFIGS: list[tuple[Ruleset, dict[str, Any]]] = [
    (DEFAULT_RULESET, {}),
    (DEFAULT_RULESET, {"in_fantasyland": False}),
    (get_ruleset("progressive-pineapple"), {"in_fantasyland": False, "fantasyland_value": 30}),
    (DEFAULT_RULESET.replace(royalties=UKRAINIAN_ROYALTIES), {"fantasyland_value": 0}),
    (DEFAULT_RULESET.replace(stay_min_row_royalty=10), {"fantasyland_value": 25}),
    (DEFAULT_RULESET.replace(max_consecutive_fantasylands=1), {"fantasyland_streak": 1}),
    (WEIRD, {"fantasyland_value": 6}),
]
CONFIG_IDS = [
    "stay",
    "entry",
    "progressive",
    "ukrainian-no-fl-value",
    "stay-royalty",
    "capped",
    "weird",
]


def brute_force(
    cards: Sequence[Card],
    ruleset: Ruleset = DEFAULT_RULESET,
    *,
    in_fantasyland: bool = True,
    fantasyland_value: FantasylandValue = DEFAULT_FANTASYLAND_VALUE,
    fantasyland_streak: int = 0,
) -> tuple[int, Rows]:
    """(objective, (top, middle, bottom)) of the best legal board, by trying them all. In
    Fantasyland the tier is the hand's size; a next Fantasyland hand of n cards is worth
    ``fantasyland_value`` (or its entry for n)."""
    hand = sorted(cards, reverse=True)
    tier = len(hand) if in_fantasyland else 0
    worth: dict[tuple[int, int, int], int] = {}  # assess depends on the three values only
    best: tuple[Any, ...] | None = None
    for bottom in combinations(hand, 5):
        vb = rank5(*bottom)
        rest = [c for c in hand if c not in bottom]
        for middle in combinations(rest, 5):
            vm = rank5(*middle)
            if vm > vb:
                continue  # fouled
            left = [c for c in rest if c not in middle]
            for top in combinations(left, 3):
                vt = rank3(*top)
                if vt > vm:
                    continue  # fouled
                objective = worth.get((vt, vm, vb))
                if objective is None:
                    result = assess(
                        Board(top, middle, bottom),
                        ruleset,
                        fantasyland_cards=tier,
                        fantasyland_streak=fantasyland_streak,
                    )
                    assert not result.fouled
                    qualifies, next_cards = result.fantasyland
                    bonus = 0
                    if qualifies:
                        bonus = (
                            fantasyland_value[next_cards]
                            if isinstance(fantasyland_value, Mapping)
                            else fantasyland_value
                        )
                    objective = worth[(vt, vm, vb)] = result.total_royalties + bonus
                key = (objective, vb, vm, vt, bottom, middle, top)
                if best is None or key > best:
                    best = key
    assert best is not None
    return best[0], (best[6], best[5], best[4])


def random_hands(
    seed: int, size: int, count: int, deck: Sequence[int] = range(52)
) -> list[tuple[Card, ...]]:
    rng = random.Random(seed)
    return [tuple(Card(c) for c in rng.sample(deck, size)) for _ in range(count)]


# Nines to aces, all suits: hands full of trips, quads, full houses, straight flushes and
# rows of equal value in different suits (the tie-breaks).
RICH_DECK = range(4 * 7, 52)


def check_against_brute_force(hand: Sequence[Card], config: int) -> None:
    ruleset, kwargs = CONFIGS[config]
    solution = solve_fantasyland(hand, ruleset, **kwargs)
    objective, (top, middle, bottom) = brute_force(hand, ruleset, **kwargs)
    assert (solution.objective, solution.top, solution.middle, solution.bottom) == (
        objective,
        top,
        middle,
        bottom,
    ), f"hand {format_cards(hand)} config {CONFIG_IDS[config]}"
    check_consistent(hand, solution, ruleset, **kwargs)


def check_consistent(
    hand: Sequence[Card], solution: FantasylandSolution, ruleset: Ruleset, **kwargs: Any
) -> None:
    """The solution is a partition of the hand, legal, and worth what assess says."""
    rows = (solution.top, solution.middle, solution.bottom, solution.discards)
    assert [len(r) for r in rows] == [3, 5, 5, len(hand) - 13]
    assert sorted(c for r in rows for c in r) == sorted(hand)
    assert all(list(r) == sorted(r, reverse=True) for r in rows)
    kwargs.pop("fantasyland_value", None)
    kwargs.setdefault("in_fantasyland", True)  # the solver's default, not assess's
    result = assess(solution.board, ruleset, **kwargs)
    assert not result.fouled
    assert solution.royalties == result.total_royalties
    assert solution.fantasyland_next == result.fantasyland.qualifies


# --- exact: the same answer as trying everything ------------------------------------------
@pytest.mark.parametrize("index", range(21))
def test_matches_brute_force_13_cards(index: int) -> None:
    deck = RICH_DECK if index % 3 == 0 else range(52)
    hand = random_hands(seed=1300 + index, size=13, count=1, deck=deck)[0]
    check_against_brute_force(hand, index % len(CONFIGS))


@pytest.mark.parametrize("config", range(len(CONFIGS)), ids=CONFIG_IDS)
def test_matches_brute_force_14_cards(config: int) -> None:
    hand = random_hands(seed=1400 + config, size=14, count=1)[0]
    check_against_brute_force(hand, config)


@pytest.mark.slow
@pytest.mark.parametrize("config", range(len(CONFIGS)), ids=CONFIG_IDS)
def test_matches_brute_force_13_cards_many(config: int) -> None:
    for hand in random_hands(seed=13_000 + config, size=13, count=30):
        check_against_brute_force(hand, config)
    for hand in random_hands(seed=13_100 + config, size=13, count=10, deck=RICH_DECK):
        check_against_brute_force(hand, config)


@pytest.mark.slow
@pytest.mark.parametrize("config", range(len(CONFIGS)), ids=CONFIG_IDS)
def test_matches_brute_force_14_cards_many(config: int) -> None:
    for hand in random_hands(seed=14_000 + config, size=14, count=6):
        check_against_brute_force(hand, config)
    for hand in random_hands(seed=14_100 + config, size=14, count=2, deck=RICH_DECK):
        check_against_brute_force(hand, config)


def solution_key(solution: FantasylandSolution) -> tuple[Any, ...]:
    rows = (solution.bottom, solution.middle, solution.top)
    values = (rank5(*solution.bottom), rank5(*solution.middle), rank3(*solution.top))
    return (solution.objective, *values, *rows)


@pytest.mark.parametrize("size", [15, 16, 17])
@pytest.mark.parametrize("config", range(len(CONFIGS)), ids=CONFIG_IDS)
def test_more_cards_is_the_best_of_one_card_fewer(size: int, config: int) -> None:
    # With n cards the best board is the best over the n (n-1)-card hands (one card
    # discarded first): checks 15..17 cards against the 14-card case the brute force covers.
    ruleset, kwargs = CONFIGS[config]
    deck = RICH_DECK if size == 16 else range(52)
    hand = random_hands(seed=size * 100 + config, size=size, count=1, deck=deck)[0]
    solution = solve_fantasyland(hand, ruleset, **kwargs)
    check_consistent(hand, solution, ruleset, **kwargs)
    smaller = [solve_fantasyland(sub, ruleset, **kwargs) for sub in combinations(hand, size - 1)]
    assert solution_key(solution) == max(map(solution_key, smaller))


def test_answer_does_not_depend_on_card_order() -> None:
    for hand in random_hands(seed=5, size=16, count=5):
        shuffled = list(hand)
        random.Random(6).shuffle(shuffled)
        assert solve_fantasyland(hand) == solve_fantasyland(shuffled)


def test_strongest_rows_never_foul() -> None:
    # Why the solver never returns a fouled board: this one is always legal.
    for size in range(13, 18):
        for hand in random_hands(seed=size, size=size, count=40):
            bottom, middle, top = _strongest_rows(hand)
            assert not assess(Board(top, middle, bottom)).fouled


# --- hand-checked hands ---------------------------------------------------------------------
def solve_text(text: str, ruleset: Ruleset = DEFAULT_RULESET, **kwargs: Any) -> FantasylandSolution:
    return solve_fantasyland(parse_cards(text), ruleset, **kwargs)


def test_trips_on_top_stay_in_fantasyland() -> None:
    # QQQ on top (20) needs a middle above it: the 9-high straight (4); clubs flush bottom
    # (4). No pair besides the queens, so no full house: 28 royalties + 10 for staying.
    s = solve_text("Qc Qd Qh 9s 8h 7d 6c 5s Ac Kc Tc 4c 2c")
    assert str(s.board) == "Qh Qd Qc / 9s 8h 7d 6c 5s / Ac Kc Tc 4c 2c"
    assert (s.royalties, s.fantasyland_next, s.objective, s.discards) == (28, True, 38, ())


def test_royal_flush_bottom() -> None:
    # Royal (25) + nines full of fours in the middle (12, stays in); 999 on top would need
    # a middle above trips, and no other straight or flush exists. Ace-high top beats 7-3-2.
    s = solve_text("As Ks Qs Js Ts 9h 9d 9c 4c 4d 7h 2s 3h Ad")
    assert str(s.board) == "Ad 7h 3h / 9h 9d 9c 4d 4c / As Ks Qs Js Ts"
    assert (format_cards(s.discards), s.royalties, s.fantasyland_next, s.objective) == (
        "2s",
        37,
        True,
        47,
    )


def test_progressive_17_cards() -> None:
    # Progressive Pineapple, 17 cards after entering with trips. Royal spades (25), KKK-QQ
    # (12) and AAA on top (22) = 59; quads in the middle would take a spade from the royal
    # (and QQQQ/JJJJ likewise), and bottom quads + middle quads + trips top is at most 52.
    ruleset = get_ruleset("progressive-pineapple")
    s = solve_text("As Ah Ad Ac Ks Kh Kd Kc Qs Qh Qd Qc Js Jh Jd Jc Ts", ruleset)
    assert str(s.board) == "Ah Ad Ac / Kh Kd Kc Qh Qd / As Ks Qs Js Ts"
    assert format_cards(s.discards) == "Qc Jh Jd Jc"
    assert (s.royalties, s.fantasyland_next, s.objective) == (59, True, 69)


def test_17_cards_two_straights_and_tie_breaks() -> None:
    # One flush (clubs A-T-6-5-2) but then no straight is left for the middle (4 < 6), no
    # pair of sixes or better for the top: two straights, A-high bottom (2) and 9-high
    # middle (4). The middle may use 5s or 5c: equal value, so the higher id (5s) is taken;
    # the top is then the best of what is left, 4-4-5.
    s = solve_text("2c 3d 4h 5s 6c 7d 8h 9s Tc Jd Qh Ks Ac 2d 3h 4s 5c")
    assert str(s.board) == "5c 4s 4h / 9s 8h 7d 6c 5s / Ac Ks Qh Jd Tc"
    assert format_cards(s.discards) == "3h 3d 2d 2c"
    assert (s.royalties, s.fantasyland_next, s.objective) == (6, False, 6)


def test_fantasyland_value_decides() -> None:
    # Royalties alone: heart flush middle (8) over fives full (6) = 14, no Fantasyland.
    # With the default value 10: quad fives on the bottom (10) stay in: 10 + 10 = 20.
    text = "8c 5d 3s 6h 5c 3d Ah As 5s 5h 7d Qh Kh"
    plain = solve_text(text, fantasyland_value=0)
    assert str(plain.board) == "As 8c 7d / Ah Kh Qh 6h 5h / 5s 5d 5c 3s 3d"
    assert (plain.royalties, plain.fantasyland_next, plain.objective) == (14, False, 14)
    stay = solve_text(text)
    assert str(stay.board) == "8c 7d 6h / Ah Kh Qh 3s 3d / As 5s 5h 5d 5c"
    assert (stay.royalties, stay.fantasyland_next, stay.objective) == (10, True, 20)


def test_entry_rule_when_not_in_fantasyland() -> None:
    # Not in Fantasyland: QQ on top earns entry (7 + 10), the stay rule does not apply.
    s = solve_text("Qs Qd 8d Th 9s 8s 7h 6h Jc Tc 6c 3c 2c", in_fantasyland=False)
    assert str(s.board) == "Qs Qd 8d / Th 9s 8s 7h 6h / Jc Tc 6c 3c 2c"
    assert (s.royalties, s.fantasyland_next, s.objective) == (15, True, 25)
    assert solve_text("Qs Qd 8d Th 9s 8s 7h 6h Jc Tc 6c 3c 2c").fantasyland_next is False


def test_consecutive_cap_means_no_fantasyland_bonus() -> None:
    capped = DEFAULT_RULESET.replace(max_consecutive_fantasylands=2)
    text = "8c 5d 3s 6h 5c 3d Ah As 5s 5h 7d Qh Kh"
    s = solve_text(text, capped, fantasyland_streak=2)
    assert (s.objective, s.fantasyland_next) == (14, False)
    assert solve_text(text, capped, fantasyland_streak=1).objective == 20


# --- bad input ------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [0, 12, 18])
def test_wrong_card_count(size: int) -> None:
    with pytest.raises(WrongCardCountError) as raised:
        solve_fantasyland([Card(c) for c in range(size)])
    assert raised.value.field == "cards"
    assert f"got {size}" in str(raised.value)


def test_duplicate_card() -> None:
    with pytest.raises(DuplicateCardError, match="duplicate card As") as raised:
        solve_text("As Ks Qs Js Ts 9h 9d 9c 4c 4d 7h 2s As")
    assert raised.value.field == "cards"


@pytest.mark.parametrize("bad", [52, -1, "As", True, 3.0])
def test_not_a_card(bad: Any) -> None:
    cards: list[Any] = [*parse_cards("Ks Qs Js Ts 9h 9d 9c 4c 4d 7h 2s 3h"), bad]
    with pytest.raises(InvalidInputError) as raised:
        solve_fantasyland(cards)
    assert raised.value.field == "cards"


@pytest.mark.parametrize("value", [-1, True, 2.5, "10"])
def test_bad_fantasyland_value(value: Any) -> None:
    with pytest.raises(InvalidInputError) as raised:
        solve_text("As Ks Qs Js Ts 9h 9d 9c 4c 4d 7h 2s 3h", fantasyland_value=value)
    assert raised.value.field == "fantasyland_value"
