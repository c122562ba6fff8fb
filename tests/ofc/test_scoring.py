"""Scoring as a rules book: fouls, royalties, schemes, pairwise settlement, Fantasyland.

Boards are written top / middle / bottom. Points are from the first player's side unless a
table says otherwise; every number below was worked out by hand from rules.md.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ofc.cards import ALL_CARDS, Card, parse_cards
from ofc.errors import (
    DuplicateCardError,
    InvalidInputError,
    WrongPlayerCountError,
    WrongRowSizeError,
)
from ofc.evaluator import rank3, rank5
from ofc.rulesets import (
    PRESETS,
    STANDARD_ROYALTIES,
    UKRAINIAN_ROYALTIES,
    Row,
    Ruleset,
    get_ruleset,
    resolve_ruleset,
)
from ofc.scoring import (
    Board,
    FantasylandResult,
    Settlement,
    assess,
    row_royalty,
    settle,
    validate_boards,
)

CLASSIC = get_ruleset("classic")

# --- rules.md, "Public worked examples (1-6, standard royalties)" ----------------------------
EX1_A = "Ac 3d 2h / 6c 6d 9h 8s 4c / 9c 8c 7d 6h 5s"  # A-high / pair of 6s / 9-high straight
EX1_B = "Kd 3c 2d / 5c 5d 9d 8h 4d / 7c 7h Qd Js 4s"  # K-high / pair of 5s / pair of 7s
EX2_B_AS_PRINTED = "As 3h 2c / 6h 6s 9d 8d 4h / 9s 8h 7c 6d 5c"  # needs six sixes with A
EX3_B_AS_PRINTED = "Ac Ad 2c / Kc Kd 9h 8s 4c / 9c 8c 7d 6h 5s"  # shares Ac and a bottom with A
EX3_B = "Ad Ah 2c / Kc Kd 9d 8d 4d / 9s 8h 7c 6s 5c"  # the same ranks, one deck: AA over KK
EX4 = "Qc Qd 2c / Th Jh Qh Kh Ah / Ts Js Qs Ks As"
EX5_A = "Ac 9d 4s / Kh Kd 8s 6c 2d / Ah Ad Qs Tc 3h"
EX5_B = "Ks 8c 3s / Jh Jd 9h 5d 2c / Qh Qc As 7c 4d"
# Example 2 meant "every row tied"; with one deck that needs other ranks than the sixes.
TIED_A = "Ac 3d 2h / 4c 4d Kh Qs Jc / Tc 9c 8d 7h 6s"
TIED_B = "Ad 3c 2d / 4h 4s Kd Qh Jd / Td 9d 8c 7c 6d"


def boards(*texts: str) -> list[Board]:
    return [Board.parse(t) for t in texts]


# a, b, a's rows (top, middle, bottom), scoop, row points, royalties (a's minus b's), a's points
WORKED_EXAMPLES = [
    pytest.param(EX1_A, EX1_B, (1, 1, 1), 1, 6, 2, 8, id="1: 3 rows + 3 scoop + 2 royalty"),
    pytest.param(TIED_A, TIED_B, (0, 0, 0), 0, 0, 0, 0, id="2: every row tied, royalties cancel"),
    pytest.param(EX1_A, EX3_B, (1, 1, 1), 1, 6, 2, 8, id="3: B fouled (top AA beats middle KK)"),
    pytest.param(EX5_A, EX5_B, (1, 1, 1), 1, 6, 0, 6, id="5: a scoop, no royalties"),
]


@pytest.mark.parametrize(
    ("a", "b", "rows", "scoop", "row_points", "royalties", "points"), WORKED_EXAMPLES
)
def test_worked_examples(
    a: str, b: str, rows: tuple[int, int, int], scoop: int, row_points: int, royalties: int,
    points: int,
) -> None:  # fmt: skip
    settlement = settle(boards(a, b))
    (pair,) = settlement.pairs
    assert (pair.a, pair.b, pair.rows, pair.scoop) == (0, 1, rows, scoop)
    assert (pair.row_points, pair.royalties, pair.points, pair.capped_points) == (
        row_points, royalties, points, points,
    )  # fmt: skip
    assert [p.points for p in settlement.players] == [points, -points]
    assert [p.units for p in settlement.players] == [points, -points]
    # Seen from the other side, everything is negated.
    (mirror,) = settle(boards(b, a)).pairs
    assert mirror.rows == tuple(-r for r in rows)
    assert (mirror.scoop, mirror.row_points, mirror.royalties, mirror.points) == (
        -scoop, -row_points, -royalties, -points,
    )  # fmt: skip


def test_worked_example_1_in_detail() -> None:
    a, b = settle(boards(EX1_A, EX1_B)).players
    assert (a.fouled, a.royalties, a.fantasyland) == (False, (0, 0, 2), FantasylandResult(False, 0))
    assert (b.fouled, b.royalties, b.fantasyland) == (False, (0, 0, 0), FantasylandResult(False, 0))
    assert [str(a.board.hand(r)) for r in Row] == [
        "high card, A-3-2", "pair of sixes, 9-8-4 kickers", "straight, nine high",
    ]  # fmt: skip
    assert [str(b.board.hand(r)) for r in Row] == [
        "high card, K-3-2", "pair of fives, 9-8-4 kickers", "pair of sevens, Q-J-4 kickers",
    ]  # fmt: skip


def test_worked_example_3_the_fouled_board_earns_nothing() -> None:
    a, b = settle(boards(EX1_A, EX3_B)).players
    assert (a.points, b.points) == (8, -8)
    # B's top AA would be worth 9 and Fantasyland on a legal board.
    assert b.fouled
    assert b.royalties == (0, 0, 0)
    assert b.fantasyland == FantasylandResult(False, 0)


def test_worked_example_4_royalties() -> None:
    result = assess(Board.parse(EX4))
    assert (result.fouled, result.royalties, result.total_royalties) == (False, (7, 50, 25), 82)
    assert result.fantasyland == FantasylandResult(True, 13)
    opponent = "Kd 3c 2d / 5c 5d 9d 8h 4d / 7c 7d Jc 9c 3h"  # K-high / 55 / 77, no royalties
    (pair,) = settle(boards(EX4, opponent)).pairs
    assert (pair.rows, pair.row_points, pair.royalties, pair.points) == ((1, 1, 1), 6, 82, 88)


# Printed examples 2 and 3 share cards between the two boards: impossible with one deck.
AS_PRINTED = [
    # a, b, field of the second sighting, message
    (EX1_A, EX2_B_AS_PRINTED, "players[1].middle",
     "duplicate card 6h: players[0].bottom and players[1].middle"),
    (EX1_A, EX3_B_AS_PRINTED, "players[1].top",
     "duplicate card Ac: players[0].top and players[1].top"),
]  # fmt: skip


@pytest.mark.parametrize(("a", "b", "field", "message"), AS_PRINTED)
def test_worked_examples_as_printed_are_rejected(a: str, b: str, field: str, message: str) -> None:
    with pytest.raises(DuplicateCardError) as info:
        settle(boards(a, b))
    assert (info.value.field, info.value.message, info.value.reason) == (
        field, message, "DUPLICATE_CARD",
    )  # fmt: skip


# --- seed 003's two example boards each hold a card twice -------------------------------------
SEED_003_LEGAL = "9♣ 9♥ 2♦ / K♥ K♠ Q♦ Q♣ 4♦ / A♠ A♣ A♦ 7♠ 7♠"  # 7♠ twice in the bottom
SEED_003_FOULED = "3♦ 3♠ K♦ / A♣ A♠ 6♥ 6♣ 3♦ / 8♥ 8♣ 5♦ 4♠ 2♥"  # 3♦ on top and in the middle
CLEAN_OPPONENT = "Jd Tc 2c / 5c 5h 9d 8d 7d / Qh Qs Th Js 4c"  # shares no card with either
SEED_003 = [
    # board, seat, field, duplicated card
    (SEED_003_LEGAL, 0, "players[0].bottom", "7s"),
    (SEED_003_LEGAL, 1, "players[1].bottom", "7s"),
    (SEED_003_FOULED, 0, "players[0].middle", "3d"),
    (SEED_003_FOULED, 1, "players[1].middle", "3d"),
]


@pytest.mark.parametrize(("board", "seat", "field", "card"), SEED_003)
def test_seed_003_boards_are_rejected(board: str, seat: int, field: str, card: str) -> None:
    seated = [CLEAN_OPPONENT, board] if seat else [board, CLEAN_OPPONENT]
    with pytest.raises(DuplicateCardError) as info:
        settle(boards(*seated))
    assert info.value.field == field
    assert f"duplicate card {card}" in info.value.message
    with pytest.raises(DuplicateCardError):
        validate_boards([Board.parse(board)])


# --- royalty tables, row by row -----------------------------------------------------------------
ROYALTIES = [
    # row, cards, standard, ukrainian (seed 002)
    (Row.BOTTOM, "Ah Qd 9s 7c 2d", 0, 0),
    (Row.BOTTOM, "Th Td 8s 7c 2d", 0, 0),
    (Row.BOTTOM, "Jh Jd 4s 4c Ac", 0, 0),
    (Row.BOTTOM, "Qh Qd Qs 7c 2d", 0, 0),
    (Row.BOTTOM, "5d 4c 3h 2s Ac", 2, 2),  # straight (the wheel counts)
    (Row.BOTTOM, "Ah Kd Qc Js Th", 2, 2),
    (Row.BOTTOM, "Ah 9h 7h 4h 2h", 4, 4),  # flush
    (Row.BOTTOM, "Kh Kd Ks 2c 2d", 6, 6),  # full house
    (Row.BOTTOM, "9d 9h 9s 9c 2c", 10, 8),  # quads
    (Row.BOTTOM, "5s 4s 3s 2s As", 15, 10),  # straight flush (the steel wheel)
    (Row.BOTTOM, "Kd Qd Jd Td 9d", 15, 10),
    (Row.BOTTOM, "Ah Kh Qh Jh Th", 25, 15),  # royal flush
    (Row.MIDDLE, "Ah Qd 9s 7c 2d", 0, 0),
    (Row.MIDDLE, "Th Td 8s 7c 2d", 0, 0),
    (Row.MIDDLE, "Jh Jd 4s 4c Ac", 0, 0),
    (Row.MIDDLE, "Qh Qd Qs 7c 2d", 2, 2),  # trips
    (Row.MIDDLE, "6c 5d 4h 3s 2c", 4, 4),  # straight
    (Row.MIDDLE, "Ah 9h 7h 4h 2h", 8, 8),  # flush
    (Row.MIDDLE, "Kh Kd Ks 2c 2d", 12, 12),  # full house
    (Row.MIDDLE, "9d 9h 9s 9c 2c", 20, 16),  # quads
    (Row.MIDDLE, "Kd Qd Jd Td 9d", 30, 20),  # straight flush
    (Row.MIDDLE, "Ah Kh Qh Jh Th", 50, 30),  # royal flush
    (Row.TOP, "Ah Kd Qc", 0, 0),
    (Row.TOP, "2h 2d Ac", 0, 0),
    (Row.TOP, "5h 5d Ac", 0, 0),
    (Row.TOP, "6h 6d 2c", 1, 1),
    (Row.TOP, "7h 7d 2c", 2, 2),
    (Row.TOP, "8h 8d 2c", 3, 3),
    (Row.TOP, "9h 9d 2c", 4, 4),
    (Row.TOP, "Th Td 2c", 5, 5),
    (Row.TOP, "Jh Jd 2c", 6, 6),
    (Row.TOP, "Qh Qd 2c", 7, 7),
    (Row.TOP, "Kh Kd 2c", 8, 8),
    (Row.TOP, "Ah Ad Kc", 9, 9),
    (Row.TOP, "2h 2d 2c", 10, 10),
    (Row.TOP, "3h 3d 3c", 11, 11),
    (Row.TOP, "4h 4d 4c", 12, 12),
    (Row.TOP, "5h 5d 5c", 13, 13),
    (Row.TOP, "6h 6d 6c", 14, 14),
    (Row.TOP, "7h 7d 7c", 15, 15),
    (Row.TOP, "8h 8d 8c", 16, 16),
    (Row.TOP, "9h 9d 9c", 17, 17),
    (Row.TOP, "Th Td Tc", 18, 18),
    (Row.TOP, "Jh Jd Jc", 19, 19),
    (Row.TOP, "Qh Qd Qc", 20, 20),
    (Row.TOP, "Kh Kd Kc", 21, 21),
    (Row.TOP, "Ah Ad Ac", 22, 22),
]


@pytest.mark.parametrize(("row", "cards", "standard", "ukrainian"), ROYALTIES)
def test_royalty_tables(row: Row, cards: str, standard: int, ukrainian: int) -> None:
    parsed = parse_cards(cards)
    value = rank3(*parsed) if row is Row.TOP else rank5(*parsed)
    assert row_royalty(row, value, STANDARD_ROYALTIES) == standard
    assert row_royalty(row, value, UKRAINIAN_ROYALTIES) == ukrainian


# Full boards: royalties per row through assess, both tables.
ROYALTY_BOARDS = [
    # board, standard (top, middle, bottom), ukrainian
    (EX4, (7, 50, 25), (7, 30, 15)),
    ("Ah Ad Ac / 9d 9h 9s 9c Kd / 2c 3c 4c 5c 6c", (22, 20, 15), (22, 16, 10)),
    ("Qh Qd 2c / 9c 9s 9h 5c 5s / Kc Ks Kh Kd 8s", (7, 12, 10), (7, 12, 8)),
    ("Jh Jd Ac / 9c Tc Js Qs Kc / 3d 5d 7d 9d Td", (6, 4, 4), (6, 4, 4)),
    (EX1_A, (0, 0, 2), (0, 0, 2)),
]


@pytest.mark.parametrize(("board", "standard", "ukrainian"), ROYALTY_BOARDS)
def test_royalties_of_whole_boards(
    board: str, standard: tuple[int, int, int], ukrainian: tuple[int, int, int]
) -> None:
    assert assess(Board.parse(board)).royalties == standard
    ukr = resolve_ruleset({"royalties": "ukrainian"})
    assert assess(Board.parse(board), ukr).royalties == ukrainian


# --- scoring schemes on real boards -------------------------------------------------------------
# Boards for the scheme table (each pair drawn from one deck).
A_WINS_2_LOSES_1 = (EX1_A, "Kd 3c 2d / 7c 7h Qd Js 4s / Tc Td Th 2s 3s")  # loses the middle
A_WINS_1_LOSES_1 = (EX1_A, "As 3c 2d / 7c 7h Qd Js 4s / Tc Td Th 2s 3s")  # ties the top
A_WINS_1_TIES_2 = (TIED_A, "Ad 3c 2d / 4h 4s Kd Qh Jd / 8c 8h 8s 2s 3s")  # wins the bottom
FOULED = "Ad Ac 3c / Kc Kd 9d 8d 4d / 9s 8h 7c 6s 5c"  # AA on top over KK in the middle
SCHEMES = [
    # pair, scheme, a's rows, row points, royalties, points
    ((EX1_A, EX1_B), "1-6", (1, 1, 1), 6, 2, 8),
    ((EX1_A, EX1_B), "1-4", (1, 1, 1), 4, 2, 6),
    ((EX1_A, EX1_B), "2-4", (1, 1, 1), 4, 2, 6),
    ((EX1_A, EX1_B), "row-2", (1, 1, 1), 6, 2, 8),
    (A_WINS_2_LOSES_1, "1-6", (1, -1, 1), 1, 2, 3),
    (A_WINS_2_LOSES_1, "1-4", (1, -1, 1), 1, 2, 3),
    (A_WINS_2_LOSES_1, "2-4", (1, -1, 1), 2, 2, 4),
    (A_WINS_2_LOSES_1, "row-2", (1, -1, 1), 2, 2, 4),
    (A_WINS_1_LOSES_1, "1-6", (0, -1, 1), 0, 2, 2),
    (A_WINS_1_LOSES_1, "1-4", (0, -1, 1), 0, 2, 2),
    (A_WINS_1_LOSES_1, "2-4", (0, -1, 1), 0, 2, 2),
    (A_WINS_1_LOSES_1, "row-2", (0, -1, 1), 0, 2, 2),
    (A_WINS_1_TIES_2, "1-6", (0, 0, 1), 1, 2, 3),
    (A_WINS_1_TIES_2, "1-4", (0, 0, 1), 1, 2, 3),
    (A_WINS_1_TIES_2, "2-4", (0, 0, 1), 2, 2, 4),
    (A_WINS_1_TIES_2, "row-2", (0, 0, 1), 2, 2, 4),
    # A fouled board against a legal one loses every row, the scoop, and the royalties.
    ((FOULED, EX4), "1-6", (-1, -1, -1), -6, -82, -88),
    ((FOULED, EX4), "1-4", (-1, -1, -1), -4, -82, -86),
    ((FOULED, EX4), "2-4", (-1, -1, -1), -4, -82, -86),
    ((FOULED, EX4), "row-2", (-1, -1, -1), -6, -82, -88),
]


@pytest.mark.parametrize(("pair", "scheme", "rows", "row_points", "royalties", "points"), SCHEMES)
def test_scoring_schemes(
    pair: tuple[str, str], scheme: str, rows: tuple[int, int, int], row_points: int,
    royalties: int, points: int,
) -> None:  # fmt: skip
    ruleset = resolve_ruleset({"scoring": scheme})
    (result,) = settle(boards(*pair), ruleset).pairs
    assert (result.rows, result.row_points, result.royalties, result.points) == (
        rows, row_points, royalties, points,
    )  # fmt: skip
    assert result.scoop == (1 if rows == (1, 1, 1) else -1 if rows == (-1, -1, -1) else 0)


def test_a_tie_never_pays_a_scoop() -> None:
    (pair,) = settle(boards(*A_WINS_1_TIES_2)).pairs
    assert (pair.rows, pair.scoop, pair.row_points) == ((0, 0, 1), 0, 1)


# --- royalties: netted pairwise (default) or only to the row's winner ---------------------------
# Both bottoms straights (seed 000): the royalties cancel and only the row points move.
BOTH_STRAIGHTS = (EX1_A, "Kd 3c 2d / 5c 5d 9d 8h 4d / 8d 7c 6s 5h 4s")
# A wins top and middle but its bottom flush (4) loses to B's full house (6).
FLUSH_LOSES_TO_FULL_HOUSE = (
    "Ah Kd 2c / 6c 6d 9h 8s 4c / Qh Th 7h 5h 3h",
    "Kc 3d 2d / 5c 5d 9d 8h 4d / Js Jc Jd 2s 2h",
)
WINNER_ONLY = [
    # pair, royalties_to_row_winner_only, rows, row points, royalties, points
    (BOTH_STRAIGHTS, False, (1, 1, 1), 6, 0, 6),
    (BOTH_STRAIGHTS, True, (1, 1, 1), 6, 2, 8),
    (FLUSH_LOSES_TO_FULL_HOUSE, False, (1, 1, -1), 1, -2, -1),
    (FLUSH_LOSES_TO_FULL_HOUSE, True, (1, 1, -1), 1, -6, -5),
    ((FOULED, EX4), True, (-1, -1, -1), -6, -82, -88),
    ((EX1_A, EX1_B), True, (1, 1, 1), 6, 2, 8),
]


@pytest.mark.parametrize(
    ("pair", "winner_only", "rows", "row_points", "royalties", "points"), WINNER_ONLY
)
def test_royalties_netted_or_to_the_row_winner_only(
    pair: tuple[str, str], winner_only: bool, rows: tuple[int, int, int], row_points: int,
    royalties: int, points: int,
) -> None:  # fmt: skip
    ruleset = resolve_ruleset({"royalties_to_row_winner_only": winner_only})
    (result,) = settle(boards(*pair), ruleset).pairs
    assert (result.rows, result.row_points, result.royalties, result.points) == (
        rows, row_points, royalties, points,
    )  # fmt: skip


# --- fouls --------------------------------------------------------------------------------------
FOULED_TOO = "Qh Qs 2d / Jh Jd 5h 4h 3h / Th Ts 6d 7d 2h"  # QQ over JJ, and JJ over TT


def test_foul_against_legal_pays_six_plus_the_legal_royalties() -> None:
    fouled, legal = settle(boards(FOULED, EX4)).players
    assert (fouled.fouled, fouled.royalties, fouled.points) == (True, (0, 0, 0), -88)
    assert (legal.fouled, legal.royalties, legal.points) == (False, (7, 50, 25), 88)


def test_two_fouled_boards_score_zero() -> None:
    settlement = settle(boards(FOULED, FOULED_TOO))
    (pair,) = settlement.pairs
    assert (pair.rows, pair.scoop, pair.row_points, pair.royalties, pair.points) == (
        (0, 0, 0), 0, 0, 0, 0,
    )  # fmt: skip
    assert [(p.fouled, p.points, p.royalties) for p in settlement.players] == [
        (True, 0, (0, 0, 0)), (True, 0, (0, 0, 0)),
    ]  # fmt: skip


FOUL_TABLE = [
    # board, fouled
    ("Kh Kd Ac / Ks Kc Qd 7h 3c / 2c 2d 2h 2s 3d", True),  # top K-K-A beats middle K-K-Q-7-3
    ("Kh Kd Qc / Ks Kc Qd 7h 3c / 2c 2d 2h 2s 3d", False),  # middle K-K-Q-7-3 beats K-K-Q
    ("Ah Kd Qc / As Kc Qd Jh 9c / 2c 2d 2h 2s 3d", False),  # A-K-Q vs A-K-Q-J-9
    ("Ah Kd Qc / As Kc Qd Jh 9c / Ad Kh Qs Js 9d", False),  # equal middle and bottom: legal
    ("2h 3d 4c / As Kc Qd Jh 9c / Ad Kh Qs Js 8d", True),  # middle beats bottom by a kicker
    ("Qh Qd 2c / Jc Jh Ac Kc Qs / 2s 3s 4s 5s 7s", True),  # QQ top over a JJ middle
    (EX3_B, True),
    (EX1_A, False),
]


@pytest.mark.parametrize(("board", "fouled"), FOUL_TABLE)
def test_fouls(board: str, fouled: bool) -> None:
    result = assess(Board.parse(board))
    assert result.fouled is fouled
    if fouled:
        assert result.royalties == (0, 0, 0)
        assert result.fantasyland == FantasylandResult(False, 0)


# --- 3 and 4 players: every pair settled separately ---------------------------------------------
MULTI_C = "Qc Qh 2s / Tc Td Th 4h 3s / Ad Ah As Kc Kh"  # QQ (7) / trips (2) / full house (6)
MULTI_D = "5h 3h 2c / Jc Jd 8d 7s 6s / Ks Qs Jh Ts 9s"  # 5-high / JJ / K-high straight (2)
MULTI_PAIRS = [
    # a, b, a's rows, row points, royalties, points
    (0, 1, (1, 1, 1), 6, 2, 8),  # EX1 A vs B
    (0, 2, (-1, -1, -1), -6, -13, -19),  # C sweeps A; royalties 2 - 15
    (0, 3, (1, -1, -1), -1, 0, -1),  # A-3-2 beats 5-3-2; straights' royalties cancel
    (1, 2, (-1, -1, -1), -6, -15, -21),
    (1, 3, (1, -1, -1), -1, -2, -3),
    (2, 3, (1, 1, 1), 6, 13, 19),
]


def test_three_player_settlement() -> None:
    settlement = settle(boards(EX1_A, EX1_B, MULTI_C))
    expected = [row for row in MULTI_PAIRS if row[1] < 3]
    assert [(p.a, p.b, p.rows, p.row_points, p.royalties, p.points) for p in settlement.pairs] == [
        *expected
    ]
    assert [p.points for p in settlement.players] == [8 - 19, -8 - 21, 19 + 21]  # -11, -29, 40
    assert settlement.players[2].fantasyland == FantasylandResult(True, 13)
    assert settlement.players[2].royalties == (7, 2, 6)


def test_four_player_settlement() -> None:
    settlement = settle(boards(EX1_A, EX1_B, MULTI_C, MULTI_D))
    assert [(p.a, p.b, p.rows, p.row_points, p.royalties, p.points) for p in settlement.pairs] == (
        MULTI_PAIRS
    )
    assert [p.points for p in settlement.players] == [-12, -32, 59, -15]
    assert sum(p.points for p in settlement.players) == 0
    assert [len(b.cards) for b in boards(EX1_A, EX1_B, MULTI_C, MULTI_D)] == [13] * 4


def test_pineapple_settles_three_players_at_most() -> None:
    settle(boards(EX1_A, EX1_B, MULTI_C), get_ruleset("pineapple"))
    with pytest.raises(WrongPlayerCountError):
        settle(boards(EX1_A, EX1_B, MULTI_C, MULTI_D), get_ruleset("pineapple"))


# --- units: the ruleset's unit value and per-pair stakes (seed 001: $20 here, $15 there) -------
def test_unit_value_multiplies_points() -> None:
    settlement = settle(boards(EX1_A, EX1_B, MULTI_C), resolve_ruleset({"unit_value": 5}))
    assert [p.points for p in settlement.players] == [-11, -29, 40]
    assert [p.units for p in settlement.players] == [-55, -145, 200]
    assert [p.units for p in settlement.pairs] == [40, -95, -105]


def test_pair_units() -> None:
    settlement = settle(boards(EX1_A, EX1_B, MULTI_C), pair_units={(0, 1): 20, (0, 2): 15})
    assert [(p.unit_value, p.units) for p in settlement.pairs] == [(20, 160), (15, -285), (1, -21)]
    assert [p.points for p in settlement.players] == [-11, -29, 40]
    assert [p.units for p in settlement.players] == [160 - 285, -160 - 21, 285 + 21]
    assert sum(p.units for p in settlement.players) == 0


# --- loss cap ("table stakes") ------------------------------------------------------------------
# B and C are legal with no royalties; A fouls and owes each of them 6.
CAP_A = FOULED
CAP_B = "Kh 3d 2d / 5d 5h 9h 8s 4h / 7d 7h Qd Js 4s"
CAP_C = "Ks 3h 2h / 6c 6d 9c 8c 4c / Tc Th Qc Jc 2s"


def capped(boards_: list[Board], cap: int) -> tuple[list[int], list[int]]:
    settlement = settle(boards_, resolve_ruleset({"loss_cap": cap}))
    return [p.capped_points for p in settlement.pairs], [p.points for p in settlement.players]


def test_loss_cap_two_players() -> None:
    settlement = settle(boards(FOULED, EX4), resolve_ruleset({"loss_cap": 30}))
    (pair,) = settlement.pairs
    assert (pair.points, pair.capped_points, pair.units) == (-88, -30, -30)
    assert [p.points for p in settlement.players] == [-30, 30]
    # Under the cap nothing changes.
    assert capped(boards(EX1_A, EX1_B), 8) == ([8], [8, -8])


LOSS_CAP = [
    # seats, cap, capped pair points (01, 02, 12), players' points
    ("ABC", None, [-6, -6, -2], [-12, 4, 8]),
    ("ABC", 12, [-6, -6, -2], [-12, 4, 8]),
    # A may lose 5 of the 12 it owes: 6x5/12 = 2.5 each; the odd point goes to the lower seat.
    ("ABC", 5, [-3, -2, -2], [-5, 1, 4]),
    ("ACB", 5, [-3, -2, 2], [-5, 5, 0]),  # C is the lower seat now: C 3, B 2
    # A may lose 7: 3.5 each, the odd point again to the lower seat.
    ("ABC", 7, [-4, -3, -2], [-7, 2, 5]),
]


@pytest.mark.parametrize(("seats", "cap", "pairs", "players"), LOSS_CAP)
def test_loss_cap_three_players(
    seats: str, cap: int | None, pairs: list[int], players: list[int]
) -> None:
    by_name = {"A": CAP_A, "B": CAP_B, "C": CAP_C}
    seated = boards(*(by_name[s] for s in seats))
    ruleset = resolve_ruleset({"loss_cap": cap})
    settlement = settle(seated, ruleset)
    assert [p.capped_points for p in settlement.pairs] == pairs
    assert [p.points for p in settlement.players] == players
    assert sum(players) == 0


def test_loss_cap_largest_remainder() -> None:
    # B owes A 8 and C 21 (29 in all); a cap of 20: A gets 8x20/29 = 5.52, C 21x20/29 = 14.48;
    # the spare point goes to the larger remainder (A's .52): A 6, C 14.
    settlement = settle(boards(EX1_A, EX1_B, MULTI_C), resolve_ruleset({"loss_cap": 20}))
    pairs = [(p.points, p.capped_points) for p in settlement.pairs]
    assert pairs == [(8, 6), (-19, -19), (-21, -14)]
    assert [p.points for p in settlement.players] == [-13, -20, 33]


def test_loss_cap_cascades() -> None:
    """Cutting what a capped player pays can leave another over the cap; it is cut in turn."""
    p0 = "Jc 6d 6h / 3d 7h Ks 8h 4d / 3s 3c 9h Qc Kh"  # fouled: 66 over K-high
    p1 = "2d Ad 8s / Kd Ac 2h Td 8c / Qh Jd 4h Ah 4c"  # sweeps p2
    p2 = "6c Th Jh / 7s 3h 5d Qd Kc / Js 2c Tc 2s As"
    settlement = settle(boards(p0, p1, p2), resolve_ruleset({"loss_cap": 3}))
    # Uncapped: p0 -12 (6 to each), p1 +12, p2 0.
    assert [p.points for p in settlement.pairs] == [-6, -6, 6]
    # p0 pays 3: 1.5 each, the odd point to p1 -> 2 and 1. Then p2 is at 1 - 6 = -5 and
    # pays p1 only 4.
    assert [p.capped_points for p in settlement.pairs] == [-2, -1, 4]
    assert [p.points for p in settlement.players] == [-3, 6, -3]


# --- Fantasyland entry and stay ------------------------------------------------------------------
def fl_board(top: str) -> Board:
    """A legal board around ``top``: K-high straight in the middle (4), a flush below (4)."""
    return Board.parse(f"{top} / 9c Tc Js Qs Kc / 3d 5d 7d 9d Td")


ENTRY = [
    # top, classic, pineapple, progressive-pineapple, turbo (cards next hand, 0 = none)
    ("Ah Kd 2c", 0, 0, 0, 0),
    ("Jh Jd Ac", 0, 0, 0, 0),
    ("Qh Qd 2c", 13, 14, 14, 13),
    ("Qh Qd Ac", 13, 14, 14, 13),
    ("Kh Kd 2c", 13, 14, 15, 13),
    ("Ah Ad 2c", 13, 14, 16, 13),
    ("2h 2d 2c", 13, 14, 17, 13),
    ("Ah Ad Ac", 13, 14, 17, 13),
]


@pytest.mark.parametrize(("top", "classic", "pineapple", "progressive", "turbo"), ENTRY)
def test_fantasyland_entry(
    top: str, classic: int, pineapple: int, progressive: int, turbo: int
) -> None:
    expected = {"classic": classic, "pineapple": pineapple, "progressive-pineapple": progressive,
                "turbo": turbo}  # fmt: skip
    for name, cards in expected.items():
        result = assess(fl_board(top), PRESETS[name])
        assert not result.fouled
        assert result.fantasyland == FantasylandResult(cards > 0, cards), name


def test_a_fouled_board_never_enters_fantasyland() -> None:
    board = Board.parse("Ah Ad Ac / Kc Kd 9d 8d 4d / 9s 8h 7c 6s 5c")
    for ruleset in PRESETS.values():
        result = assess(board, ruleset)
        assert result.fouled and result.fantasyland == FantasylandResult(False, 0)


STAY = [
    # board, stays (default rule: trips top, or full house+ middle, or quads+ bottom)
    ("2h 2d 2c / 9c Tc Js Qs Kc / 3d 5d 7d 9d Td", True),  # trips on top
    ("Jh Jd Ac / 9c 9s 9h 5c 5s / Kc Ks Kh 8c 8s", True),  # full house in the middle
    ("Jh Jd Ac / 9c 9s 9h 9d 5s / Kc Ks Kh Kd 8s", True),  # quads in the middle
    ("Jh Jd Ac / 9c Tc Js Qs Kc / 8c 8d 8h 8s 2s", True),  # quads on the bottom
    ("Jh Jd Ac / 9c Tc Js Qs Kc / 3d 4d 5d 6d 7d", True),  # straight flush on the bottom
    ("Qh Qd 2c / 9c Tc Js Qs Kc / 3d 5d 7d 9d Td", False),  # QQ enters but does not stay
    ("Ah Ad 2c / 9c Tc Js Qs Kc / 8c 8d 8h 2s 2d", False),  # AA, bottom full house
    ("Jh Jd Ac / 2c 3d 4h 5s 6c / 9c 9s 9h 5c 5d", False),  # a full house on the bottom only
    ("Ah Ad Ac / Kc Kd 9d 8d 4d / 9s 8h 7c 6s 5c", False),  # trips on a fouled board
]
STAY_CARDS = {"classic": 13, "pineapple": 14, "progressive-pineapple": 14, "turbo": 13}


@pytest.mark.parametrize(("board", "stays"), STAY)
def test_fantasyland_stay(board: str, stays: bool) -> None:
    for name, cards in STAY_CARDS.items():
        ruleset = PRESETS[name]
        result = assess(Board.parse(board), ruleset, in_fantasyland=True, fantasyland_streak=1)
        assert result.fantasyland == FantasylandResult(stays, cards if stays else 0), name


# Some Pineapple rooms drop the middle full house clause; seed 001 adds "10 or more royalty
# points in one row".
NO_MIDDLE_CLAUSE = [{"row": "top", "category": "trips"}, {"row": "bottom", "category": "quads"}]
STAY_OPTIONS = [
    # overrides, board, stays
    ({"stay_conditions": NO_MIDDLE_CLAUSE}, "Jh Jd Ac / 9c 9s 9h 5c 5s / Kc Ks Kh 8c 8s", False),
    ({"stay_conditions": NO_MIDDLE_CLAUSE}, "2h 2d 2c / 9c Tc Js Qs Kc / 3d 5d 7d 9d Td", True),
    ({"stay_conditions": NO_MIDDLE_CLAUSE, "stay_min_row_royalty": 10},
     "Jh Jd Ac / 9c 9s 9h 5c 5s / Kc Ks Kh 8c 8s", True),  # middle full house: 12 points
    ({"stay_conditions": [], "stay_min_row_royalty": 10},
     "Jh Jd Ac / 9c Ts Jc Qc Kc / 3d 5d 7d 9d Td", False),  # best row: 6 (JJ)
    ({"stay_conditions": [], "stay_min_row_royalty": 10},
     "Jh Jd Ac / 9c Tc Js Qs Kc / 8c 8d 8h 8s 2s", True),  # bottom quads: 10 points
    ({"stay_conditions": [], "stay_min_row_royalty": 10, "royalties": "ukrainian"},
     "Jh Jd Ac / 9c Tc Js Qs Kc / 8c 8d 8h 8s 2s", False),  # bottom quads: 8 points there
    ({"stay_conditions": [], "stay_min_row_royalty": 6},
     "Jh Jd Ac / 9c Ts Jc Qc Kc / 3d 5d 7d 9d Td", True),  # JJ's 6 meets a bar of 6
]  # fmt: skip


@pytest.mark.parametrize(("overrides", "board", "stays"), STAY_OPTIONS)
def test_fantasyland_stay_options(overrides: dict[str, Any], board: str, stays: bool) -> None:
    ruleset = resolve_ruleset(overrides)
    result = assess(Board.parse(board), ruleset, in_fantasyland=True, fantasyland_streak=1)
    assert result.fantasyland == FantasylandResult(stays, 13 if stays else 0)


MAX_CONSECUTIVE = [
    # max_consecutive_fantasylands, streak (Fantasyland hands in a row, this one counted), stays
    (None, 1, True),
    (None, 5, True),
    (2, 1, True),  # seed 002: at most two in a row
    (2, 2, False),
    (2, 3, False),
    (1, 1, False),
]


@pytest.mark.parametrize(("cap", "streak", "stays"), MAX_CONSECUTIVE)
def test_max_consecutive_fantasylands(cap: int | None, streak: int, stays: bool) -> None:
    ruleset = resolve_ruleset({"max_consecutive_fantasylands": cap})
    trips_top = Board.parse("2h 2d 2c / 9c Tc Js Qs Kc / 3d 5d 7d 9d Td")
    result = assess(trips_top, ruleset, in_fantasyland=True, fantasyland_streak=streak)
    assert result.fantasyland == FantasylandResult(stays, 13 if stays else 0)
    # The cap only limits staying; entering from a normal hand is unaffected.
    assert assess(trips_top, ruleset).fantasyland == FantasylandResult(True, 13)


def test_fantasyland_through_settle() -> None:
    trips_top = "2h 2d 2c / 9c Tc Js Qs Kc / 3d 5d 7d 9d Td"
    queens_top = "Qh Qd Ac / 9h Th Jc Qc Ks / 3s 5s 7s 9s Ts"
    ruleset = get_ruleset("progressive-pineapple")
    settlement = settle(boards(trips_top, queens_top), ruleset, in_fantasyland=[True, True],
                        fantasyland_streaks=[1, 3])  # fmt: skip
    assert [p.fantasyland for p in settlement.players] == [(True, 14), (False, 0)]
    settlement = settle(boards(trips_top, queens_top), ruleset)
    assert [p.fantasyland for p in settlement.players] == [(True, 17), (True, 14)]


# --- errors name the player and the row -----------------------------------------------------------
def cards(text: str) -> tuple[Card, ...]:
    return parse_cards(text)


SIZE_ERRORS = [
    # boards (as rows), field, message
    ([("Ac 3d 2h", "6c 6d 9h 8s", "9c 8c 7d 6h 5s"), EX1_B], "players[0].middle",
     "players[0].middle has 4 cards; the middle row holds 5"),
    ([EX1_A, ("Kd 3c 2d 5c", "5d 9d 8h 4d Qc", "7c 7h Qd Js 4s")], "players[1].top",
     "players[1].top has 4 cards; the top row holds 3"),
    ([EX1_A, ("Kd 3c 2d", "5c 5d 9d 8h 4d", "7c 7h Qd Js 4s Qc")], "players[1].bottom",
     "players[1].bottom has 6 cards; the bottom row holds 5"),
    ([EX1_A, ("Kd 3c 2d", "5c 5d 9d 8h 4d", "")], "players[1].bottom",
     "players[1].bottom has 0 cards; the bottom row holds 5"),
]  # fmt: skip


def _board(spec: str | tuple[str, str, str]) -> Board:
    if isinstance(spec, str):
        return Board.parse(spec)
    return Board(*(cards(row) for row in spec))


@pytest.mark.parametrize(("specs", "field", "message"), SIZE_ERRORS)
def test_wrong_row_sizes_name_the_player_and_row(
    specs: list[str | tuple[str, str, str]], field: str, message: str
) -> None:
    with pytest.raises(WrongRowSizeError) as info:
        settle([_board(s) for s in specs])
    assert (info.value.field, info.value.message, info.value.reason) == (
        field, message, "WRONG_ROW_SIZE",
    )  # fmt: skip


DUPLICATES = [
    # boards, field, message
    ([EX1_A, "Kd 3c 2d / 5c 5d 9d 8h 4d / 7c 7h Qd Js 4c"], "players[1].bottom",
     "duplicate card 4c: players[0].middle and players[1].bottom"),
    (["Ac 3d 2h / 6c 6d 9h 8s 4c / 9c 8c 7d 6h 6c", EX1_B], "players[0].bottom",
     "duplicate card 6c: players[0].middle and players[0].bottom"),
    (["Ac Ac 2h / 6c 6d 9h 8s 4c / 9c 8c 7d 6h 5s", EX1_B], "players[0].top",
     "duplicate card Ac: players[0].top and players[0].top"),  # twice in one row
    ([EX1_A, EX1_B, "Qc Qh 2s / Tc Td Th 4h 3s / Ad Ah As Kc Kd"], "players[2].bottom",
     "duplicate card Kd: players[1].top and players[2].bottom"),
]  # fmt: skip


@pytest.mark.parametrize(("specs", "field", "message"), DUPLICATES)
def test_duplicates_name_the_player_and_row(specs: list[str], field: str, message: str) -> None:
    with pytest.raises(DuplicateCardError) as info:
        settle(boards(*specs))
    assert (info.value.field, info.value.message) == (field, message)


@pytest.mark.parametrize("count", [0, 1, 5])
def test_wrong_player_count(count: int) -> None:
    deck = ALL_CARDS * 2
    seated = [Board(deck[13 * i : 13 * i + 3], deck[13 * i + 3 : 13 * i + 8],
                    deck[13 * i + 8 : 13 * i + 13]) for i in range(count)]  # fmt: skip
    with pytest.raises(WrongPlayerCountError) as info:
        settle(seated)
    assert info.value.field == "players"
    assert f"settles 2..4 boards, got {count}" in info.value.message


def test_unknown_card_names_the_place() -> None:
    bad = Board(cards("Ac 3d 2h"), cards("6c 6d 9h 8s 4c"), (*cards("9c 8c 7d 6h"), 52))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError) as info:
        settle([Board.parse(EX1_B), bad])
    assert info.value.field == "players[1].bottom"
    assert "52" in info.value.message


def test_fantasyland_flags_need_one_entry_per_board() -> None:
    with pytest.raises(InvalidInputError, match="one entry per board"):
        settle(boards(EX1_A, EX1_B), in_fantasyland=[True])
    with pytest.raises(InvalidInputError, match="one entry per board"):
        settle(boards(EX1_A, EX1_B), fantasyland_streaks=[1, 1, 1])


def test_validate_partial_boards() -> None:
    partial = [Board(cards("Ac"), cards("6c 6d"), ()), Board((), cards("5c 5d 9d 8h 4d"), ())]
    validate_boards(partial, complete=False)
    with pytest.raises(WrongRowSizeError) as too_many:
        validate_boards([Board(cards("Ac 2c 3c 4c"), (), ())], complete=False)
    assert too_many.value.field == "players[0].top"
    with pytest.raises(DuplicateCardError) as dup:
        validate_boards([Board(cards("Ac"), (), ()), Board((), (), cards("Ac"))], complete=False)
    assert dup.value.field == "players[1].bottom"
    with pytest.raises(WrongRowSizeError):
        validate_boards(partial)


def test_board_parse_and_format() -> None:
    board = Board.parse("qc qd 2c / 10h jh qh kh ah / T♠ J♠ Q♠ K♠ A♠")
    assert str(board) == EX4
    assert board.is_complete
    assert len(board.cards) == 13
    assert board.row(Row.MIDDLE) == board.middle == cards("Th Jh Qh Kh Ah")
    with pytest.raises(InvalidInputError, match="top / middle / bottom"):
        Board.parse("Qc Qd 2c / Th Jh Qh Kh Ah")


def test_settlement_is_a_plain_value() -> None:
    first = settle(boards(EX1_A, EX1_B))
    assert isinstance(first, Settlement)
    assert first == settle(boards(EX1_A, EX1_B))
    assert first.ruleset == "classic"
    assert settle(boards(EX1_A, EX1_B), get_ruleset("turbo")).ruleset == "turbo"


# --- properties -----------------------------------------------------------------------------------
RULESETS: list[Ruleset] = [
    *PRESETS.values(),
    resolve_ruleset({"scoring": "2-4"}),
    resolve_ruleset({"scoring": "1-4", "royalties": "ukrainian"}),
    resolve_ruleset({"scoring": "row-2", "royalties_to_row_winner_only": True}),
    resolve_ruleset({"loss_cap": 10}),
    resolve_ruleset({"loss_cap": 1, "unit_value": 3}),
    resolve_ruleset({"preset": "pineapple", "loss_cap": 25, "royalties_to_row_winner_only": True}),
]


@st.composite
def hands(draw: st.DrawFn, *, caps: bool = True) -> tuple[Ruleset, list[Board]]:
    """A ruleset and 2-4 boards dealt from one shuffled deck. Most boards keep their
    stronger five-card row at the bottom, so legal and fouled boards both show up."""
    choices = RULESETS if caps else [r for r in RULESETS if r.loss_cap is None]
    ruleset = draw(st.sampled_from(choices))
    n = draw(st.integers(ruleset.min_players, ruleset.max_players))
    deck = draw(st.permutations(ALL_CARDS))
    dealt = []
    for i in range(n):
        seat = deck[13 * i : 13 * i + 13]
        top, middle, bottom = seat[:3], seat[3:8], seat[8:]
        if draw(st.booleans()) and rank5(*middle) > rank5(*bottom):
            middle, bottom = bottom, middle
        dealt.append(Board(tuple(top), tuple(middle), tuple(bottom)))
    return ruleset, dealt


@given(hands(), st.data())
def test_settlements_are_zero_sum(hand: tuple[Ruleset, list[Board]], data: st.DataObject) -> None:
    ruleset, seated = hand
    n = len(seated)
    units = data.draw(st.dictionaries(
        st.sampled_from([(i, j) for i in range(n) for j in range(i + 1, n)]),
        st.integers(1, 50),
    ))  # fmt: skip
    settlement = settle(seated, ruleset, pair_units=units)
    assert sum(p.points for p in settlement.players) == 0
    assert sum(p.units for p in settlement.players) == 0
    for pair in settlement.pairs:
        assert pair.points == pair.row_points + pair.royalties
        assert pair.units == pair.capped_points * units.get((pair.a, pair.b), ruleset.unit_value)
        if ruleset.loss_cap is None:
            assert pair.capped_points == pair.points
        else:
            # The cap only shrinks a payment towards zero, never flips it.
            assert 0 <= pair.capped_points * (1 if pair.points >= 0 else -1) <= abs(pair.points)
    for player in settlement.players:
        mine = [p.capped_points for p in settlement.pairs if p.a == player.index] + [
            -p.capped_points for p in settlement.pairs if p.b == player.index
        ]
        assert player.points == sum(mine)
        if ruleset.loss_cap is not None:
            assert player.points >= -ruleset.loss_cap


@given(hands())
def test_settlements_are_antisymmetric(hand: tuple[Ruleset, list[Board]]) -> None:
    """Swapping two seats negates their pair and swaps their results."""
    ruleset, seated = hand
    ab = settle(seated[:2], ruleset)
    ba = settle(seated[1::-1], ruleset)
    (forward,), (backward,) = ab.pairs, ba.pairs
    assert backward.rows == tuple(-r for r in forward.rows)
    assert (backward.scoop, backward.row_points, backward.royalties, backward.points) == (
        -forward.scoop, -forward.row_points, -forward.royalties, -forward.points,
    )  # fmt: skip
    assert backward.capped_points == -forward.capped_points
    assert [p.points for p in ba.players] == [p.points for p in reversed(ab.players)]
    assert [p.board for p in ba.players] == [p.board for p in reversed(ab.players)]


@given(hands(caps=False), st.randoms(use_true_random=False))
def test_seat_order_does_not_change_anyone_s_result(
    hand: tuple[Ruleset, list[Board]], rng: random.Random
) -> None:
    ruleset, seated = hand
    order = list(range(len(seated)))
    rng.shuffle(order)
    before = settle(seated, ruleset)
    after = settle([seated[i] for i in order], ruleset)
    assert [after.players[k].points for k in range(len(order))] == [
        before.players[i].points for i in order
    ]


@given(hands(), st.booleans(), st.integers(0, 4))
def test_a_fouled_board_never_earns_royalties_or_fantasyland(
    hand: tuple[Ruleset, list[Board]], in_fantasyland: bool, streak: int
) -> None:
    ruleset, seated = hand
    for board in seated:
        result = assess(board, ruleset, in_fantasyland=in_fantasyland, fantasyland_streak=streak)
        top, middle, bottom = rank3(*board.top), rank5(*board.middle), rank5(*board.bottom)
        assert result.values == (top, middle, bottom)
        assert result.fouled == (not top <= middle <= bottom)
        if result.fouled:
            assert result.royalties == (0, 0, 0)
            assert result.fantasyland == FantasylandResult(False, 0)
    settlement = settle(seated, ruleset)
    for player in settlement.players:
        if player.fouled:
            assert player.royalties == (0, 0, 0)
            assert not player.fantasyland.qualifies
            assert player.points <= 0
