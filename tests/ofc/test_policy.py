"""The timeout policy: legal, deterministic, foul-averse, and much better than random."""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ofc.cards import ALL_CARDS, Card, parse_cards
from ofc.errors import InvalidInputError, WrongCardCountError
from ofc.policy import (
    CATEGORY_WEIGHT,
    FANTASYLAND_BONUS,
    FOUL_COST,
    FOUL_GUARD,
    TOP_START_MAX,
    choose_fantasyland,
    choose_placement,
)
from ofc.rulesets import PRESETS, ROWS, Row, Ruleset, get_ruleset
from ofc.scoring import Board, assess

from bench.policy import run, versus_random

PINEAPPLE = get_ruleset("pineapple")


def placed(board: Board, placements: tuple[tuple[Card, Row], ...]) -> Board:
    rows = {row: list(board.row(row)) for row in ROWS}
    for card, row in placements:
        rows[row].append(card)
    return Board(*(tuple(rows[row]) for row in ROWS))


@settings(max_examples=40)
@given(data=st.data())
def test_a_placement_is_legal_and_deterministic(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(["classic", "pineapple", "turbo"]))
    ruleset = get_ruleset(name)
    street_index = data.draw(st.integers(0, len(ruleset.streets) - 1))
    street = ruleset.streets[street_index]
    cards = data.draw(st.permutations(ALL_CARDS))
    before = sum(s.place for s in ruleset.streets[:street_index])
    sizes = data.draw(
        st.tuples(st.integers(0, 3), st.integers(0, 5), st.integers(0, 5)).filter(
            lambda t: sum(t) == before
        )
    )
    board = Board(
        tuple(cards[: sizes[0]]),
        tuple(cards[sizes[0] : sizes[0] + sizes[1]]),
        tuple(cards[sizes[0] + sizes[1] : before]),
    )
    batch = tuple(cards[before : before + street.deal])
    dead = tuple(cards[before + street.deal : before + street.deal + 6])
    placements, discards = choose_placement(board, batch, street.place, ruleset, dead=dead)
    assert len(placements) == street.place and len(discards) == street.deal - street.place
    assert sorted([c for c, _ in placements] + list(discards)) == sorted(batch)
    after = placed(board, placements)
    assert all(len(after.row(r)) <= r.size for r in ROWS)
    # The same question gets the same answer, whatever order the dead cards come in.
    again = choose_placement(board, batch, street.place, ruleset, dead=dead[::-1])
    assert again == (placements, discards)


def test_the_last_card_goes_where_it_does_not_foul() -> None:
    board = Board.parse("Ah 2c / Kc Kd 7h 5s 3c / Qs Qh Qd 9c")
    placements, _ = choose_placement(board, parse_cards("As"), 1)
    assert placements == ((Card.parse("As"), Row.BOTTOM),)  # AA on top would beat KK
    board = Board.parse("Ah 2c 3d / Kc Kd 7h 5s / Qs Qh Qd 9c 8c")
    placements, _ = choose_placement(board, parse_cards("Ks"), 1)
    assert placements == ((Card.parse("Ks"), Row.MIDDLE),)


def test_pineapple_discard_keeps_the_board_legal() -> None:
    # Only the middle and bottom have room; a king would pair the middle above the bottom.
    board = Board.parse("Kc 5d 4h / Qh Qs 9c 8d / Jc Jd Js 2c")
    placements, discards = choose_placement(board, parse_cards("Kd Jh 3c"), 2, PINEAPPLE)
    final = placed(board, placements)
    assert not assess(final, PINEAPPLE).fouled
    assert discards == (Card.parse("Kd"),)


def test_strong_first_cards_go_low_and_weak_ones_high() -> None:
    placements, _ = choose_placement(Board(), parse_cards("Ah Ad 7c 3s 2d"), 5)
    rows = {str(c): r for c, r in placements}
    assert rows["Ah"] == rows["Ad"] == Row.BOTTOM
    assert Counter(rows.values())[Row.TOP] <= 3


@pytest.mark.parametrize("ruleset", ["classic", "pineapple"])
def test_a_first_street_keeps_high_cards_off_the_top_and_the_middle_no_heavier(
    ruleset: str,
) -> None:
    deals = random.Random(f"first-{ruleset}")
    for _ in range(12):
        batch = tuple(deals.sample(ALL_CARDS, 5))
        placements, _ = choose_placement(Board(), batch, 5, get_ruleset(ruleset))
        rows = Counter(row for _, row in placements)
        top = [card.rank for card, row in placements if row is Row.TOP]
        assert rows[Row.MIDDLE] <= rows[Row.BOTTOM], placements
        assert all(rank <= TOP_START_MAX or top.count(rank) > 1 for rank in top), placements


def score(board: Board, ruleset: Ruleset) -> float:
    """The policy's documented worth of a final board, from ``assess``."""
    result = assess(board, ruleset)
    if result.fouled:
        return -FOUL_COST
    categories = sum(value >> 20 for value in result.values)
    bonus = FANTASYLAND_BONUS if result.fantasyland.qualifies else 0.0
    return sum(result.royalties) + CATEGORY_WEIGHT * categories + bonus


@pytest.mark.parametrize("ruleset", ["classic", "progressive-pineapple"])
def test_with_one_card_to_come_the_choice_is_the_exact_best(ruleset: str) -> None:
    # Two slots left in two rows: the batch card takes one, the last card the other. The
    # policy tries every unseen card as the last one, so its choice is the best expectation
    # computed here by brute force (ties: the lower row), fouls guarded as the policy does.
    rules = get_ruleset(ruleset)
    rng = random.Random(ruleset)
    for _ in range(12):
        deck = rng.sample(ALL_CARDS, 52)
        open_rows = rng.sample(ROWS, 2)
        sizes = [r.size - (r in open_rows) for r in ROWS]
        rows, at = [], 0
        for size in sizes:
            rows.append(tuple(deck[at : at + size]))
            at += size
        board, card, dead = Board(*rows), deck[at], deck[at + 1 : at + 6]
        unseen = [c for c in ALL_CARDS if c not in {*board.cards, card, *dead}]
        # Candidates in the policy's order (lower rows first), so max() breaks ties alike.
        rows_to_try = sorted(open_rows, key=ROWS.index, reverse=True)
        worth = [expected(board, card, row, unseen, rules) for row in rows_to_try]
        best = rows_to_try[worth.index(max(worth))]
        placements, _ = choose_placement(board, (card,), 1, rules, dead=dead)
        assert placements == ((card, best),)


def compared(board: Board, ruleset: Ruleset) -> float:
    """What a final board counts for when the policy compares placements: a foul costs
    ``FOUL_GUARD`` on top of its score."""
    worth = score(board, ruleset)
    return worth - FOUL_GUARD if assess(board, ruleset).fouled else worth


def expected(board: Board, card: Card, row: Row, unseen: list[Card], rules: Ruleset) -> float:
    """The average worth of ``card`` in ``row`` and each unseen card in the last free slot."""
    first = placed(board, ((card, row),))
    other = next(r for r in ROWS if len(first.row(r)) < r.size)
    return sum(compared(placed(first, ((c, other),)), rules) for c in unseen) / len(unseen)


def test_the_last_pineapple_street_is_played_exactly_in_a_future() -> None:
    # Four slots left, all in the bottom, and only three unseen cards: every future deals
    # those three, and the seat places the best two of them. So the choice of discard is
    # the best one computed here by brute force (ties: the first card thrown).
    rng = random.Random("last street")
    for _ in range(60):
        deck = rng.sample(ALL_CARDS, 52)
        board = Board(tuple(deck[:3]), tuple(deck[3:8]), (deck[8],))
        batch, unseen, dead = tuple(deck[9:12]), deck[12:15], deck[15:]
        worth = []
        for thrown in batch:
            kept = [(c, Row.BOTTOM) for c in batch if c != thrown]
            after = placed(board, tuple(kept))
            worth.append(
                max(
                    compared(placed(after, ((a, Row.BOTTOM), (b, Row.BOTTOM))), PINEAPPLE)
                    for a, b in itertools.combinations(unseen, 2)
                )
            )
        _, discards = choose_placement(board, batch, 2, PINEAPPLE, dead=dead)
        assert discards == (batch[worth.index(max(worth))],)


def test_bad_questions_are_refused() -> None:
    with pytest.raises(WrongCardCountError):
        choose_placement(Board(), parse_cards("Ah Ad"), 3)
    with pytest.raises(InvalidInputError):
        choose_placement(Board(), parse_cards("Ah Ah 2c"), 2, PINEAPPLE)


@pytest.mark.parametrize("size", [14, 15, 16, 17])
def test_fantasyland_sets_are_legal_with_the_right_discards(size: int) -> None:
    cards = tuple(ALL_CARDS[i] for i in range(0, 52, 3))[:size]
    top, middle, bottom, discards = choose_fantasyland(cards, get_ruleset("progressive-pineapple"))
    assert (len(top), len(middle), len(bottom), len(discards)) == (3, 5, 5, size - 13)
    assert sorted(top + middle + bottom + discards) == sorted(cards)
    assert not assess(Board(top, middle, bottom)).fouled


@pytest.mark.parametrize("ruleset", ["classic", "pineapple", "turbo"])
def test_the_policy_fouls_far_less_than_random_placement(ruleset: str) -> None:
    # bench.policy's first 40 hands against random placement (it measures 10,000)
    hands = [versus_random(PRESETS[ruleset], i, None) for i in range(40)]
    policy_fouls = sum(policy.fouled for policy, _ in hands)
    random_fouls = sum(other.fouled for _, other in hands)
    assert random_fouls >= 16
    assert policy_fouls * 4 <= random_fouls
    points = sum(policy.points for policy, _ in hands)
    assert points > 0 and points == -sum(other.points for _, other in hands)


def test_the_head_to_head_plays_every_deal_from_both_seats() -> None:
    figures = run(hands=4, ruleset="classic")
    assert figures.h2h_hands == 4 and 0.0 <= figures.h2h_v1_foul_rate <= 1.0
    # Everything but the clocks is a pure function of the arguments.
    again = run(hands=4, ruleset="classic")
    untimed = [f.name for f in dataclasses.fields(figures) if "_ms_" not in f.name]
    assert [getattr(again, n) for n in untimed] == [getattr(figures, n) for n in untimed]
