"""Fantasyland tiers and the top high-card royalty, as rules-book cases with the numbers
written out, and the solver's exactness under them (a plain enumeration on sampled hands).

The issue's examples: in a 14-card Fantasyland QQ, KK or AA on top stays at 14; in a
16-card one AA on top stays at 16; a 17-card one that stays with quads on the bottom or 222
on top gets 17 again, not 14 (``progressive-pineapple-keep``); one engine pays 1 for any
unpaired top on a legal board, e.g. ``As Kd Qc`` (``pineapple-top-high-card``).
"""

from __future__ import annotations

import json
import random

import pytest
from ofc.cards import Card, Rank, card_codes, parse_cards
from ofc.codec import score_request_from_dict, settlement_to_dict
from ofc.errors import InvalidInputError, InvalidRulesetError
from ofc.evaluator import Category
from ofc.rulesets import (
    PRESETS,
    FantasylandTier,
    Row,
    Ruleset,
    StayCondition,
    get_ruleset,
    resolve_ruleset,
    ruleset_from_dict,
)
from ofc.scoring import Board, assess, settle
from ofc.solver import solve_fantasyland

from tests.ofc.test_solver import brute_force

KEEP = get_ruleset("progressive-pineapple-keep")
PROGRESSIVE = get_ruleset("progressive-pineapple")
HIGH = get_ruleset("pineapple-top-high-card")

# Middles and bottoms strong enough under any top below, none of them quads or better.
UNDER = "/ 3h 3d 5s 5c 7d / Ts Js Qs Ks 2s"  # two pair, flush
UNDER_TRIPS = "/ 3h 4d 5s 6c 7d / Ts Js Qs Ks 2s"  # straight, flush
QUADS = "/ 3h 3d 5s 5c 7d / 9s 9h 9d 9c 2s"  # two pair, quads
STRAIGHT_FLUSH = "/ 3h 3d 5s 5c 7d / 9s Ts Js Qs Ks"

# (ruleset, tier played, board, (qualifies, cards next hand))
STAYS = [
    # progressive-pineapple-keep: each tier is kept by its own entry top, or quads+ bottom
    (KEEP, 14, f"Qc Qd 2c {UNDER}", (True, 14)),
    (KEEP, 14, f"Kc Kd 2c {UNDER}", (True, 14)),
    (KEEP, 14, f"Ac Ad 2c {UNDER}", (True, 14)),
    (KEEP, 14, f"Jc Jd Ac {UNDER}", (False, 0)),
    (KEEP, 14, f"Ac Kd 2c {QUADS}", (True, 14)),
    (KEEP, 15, f"Qc Qd 2c {UNDER}", (False, 0)),
    (KEEP, 15, f"Kc Kd 2c {UNDER}", (True, 15)),
    (KEEP, 16, f"Ac Ad 2c {UNDER}", (True, 16)),
    (KEEP, 16, f"Kc Kd 2c {UNDER}", (False, 0)),
    (KEEP, 16, f"2c 2d 2h {UNDER_TRIPS}", (True, 16)),
    (KEEP, 17, f"Ac Ad 2c {UNDER}", (False, 0)),
    (KEEP, 17, f"2c 2d 2h {UNDER_TRIPS}", (True, 17)),
    (KEEP, 17, f"Ac Kd 2c {QUADS}", (True, 17)),
    (KEEP, 17, f"Ac Kd 2c {STRAIGHT_FLUSH}", (True, 17)),
    (KEEP, 17, "Qc Qd 2c / 3h 3d 5s 5c 7d / 9s 9h 9d 4c 4d", (False, 0)),  # a full house
    # entry (not in Fantasyland): the progressive sizes
    (KEEP, 0, f"Qc Qd 2c {UNDER}", (True, 14)),
    (KEEP, 0, f"Kc Kd 2c {UNDER}", (True, 15)),
    (KEEP, 0, f"Ac Ad 2c {UNDER}", (True, 16)),
    (KEEP, 0, f"2c 2d 2h {UNDER_TRIPS}", (True, 17)),
    (KEEP, 0, f"Jc Jd Ac {QUADS}", (False, 0)),
    # progressive-pineapple (every stay is 14 cards, whatever the tier)
    (PROGRESSIVE, 17, f"Ac Kd 2c {QUADS}", (True, 14)),
    (PROGRESSIVE, 17, f"2c 2d 2h {UNDER_TRIPS}", (True, 14)),
    (PROGRESSIVE, 16, f"Ac Ad 2c {UNDER}", (False, 0)),
    # a fouled board neither stays nor enters
    (KEEP, 16, "Ac Ad 2c / 3h 3d 5s 6c 7d / Ts Js Qs Ks 2s", (False, 0)),
]


@pytest.mark.parametrize(("ruleset", "tier", "board", "expected"), STAYS)
def test_what_keeps_a_player_in_and_with_how_many_cards(
    ruleset: Ruleset, tier: int, board: str, expected: tuple[bool, int]
) -> None:
    parsed = Board.parse(board)
    result = assess(parsed, ruleset, fantasyland_cards=tier, fantasyland_streak=1 if tier else 0)
    assert tuple(result.fantasyland) == expected


def test_the_yes_no_form_means_the_smallest_tier() -> None:
    board = Board.parse(f"Qc Qd 2c {UNDER}")
    assert tuple(assess(board, KEEP, in_fantasyland=True).fantasyland) == (True, 14)
    assert KEEP.base_fantasyland_cards == 14 and PRESETS["classic"].base_fantasyland_cards == 13
    # settle: per board, the tier wins over the flag
    other = Board.parse("Kd 3c 2d / 5h 5d 9d 8h 4d / 7c 7h Qd Jh 4s")
    aces = Board.parse(f"Ac Ad 2c {UNDER}")
    settled = settle([aces, other], KEEP, fantasyland_cards=[16, 0])
    assert [tuple(p.fantasyland) for p in settled.players] == [(True, 16), (False, 0)]
    settled = settle([aces, other], KEEP, in_fantasyland=[True, False])
    assert [tuple(p.fantasyland) for p in settled.players] == [(True, 14), (False, 0)]


def test_the_streak_cap_applies_in_every_tier() -> None:
    capped = KEEP.replace(max_consecutive_fantasylands=2)
    board = Board.parse(f"Ac Ad 2c {UNDER}")
    assert tuple(assess(board, capped, fantasyland_cards=16, fantasyland_streak=1).fantasyland) == (
        True,
        16,
    )
    assert tuple(assess(board, capped, fantasyland_cards=16, fantasyland_streak=2).fantasyland) == (
        False,
        0,
    )


# (ruleset, board, royalties top/middle/bottom)
TOP_HIGH_CARD = [
    (HIGH, f"As Kd Qc {UNDER}", (1, 0, 4)),
    (HIGH, "5c 3d 2h / 6h 6d 8s 9c Td / Ts Js Qs Ks 2s", (1, 0, 4)),
    (HIGH, f"Qc Qd 2c {UNDER}", (7, 0, 4)),
    (PRESETS["pineapple"], f"As Kd Qc {UNDER}", (0, 0, 4)),
    (HIGH, "As Kd Qc / 3h 3d 5s 5c 7d / 8s 8h 4c 6c 9d", (0, 0, 0)),  # fouled: nothing
]


@pytest.mark.parametrize(("ruleset", "board", "royalties"), TOP_HIGH_CARD)
def test_a_top_high_card_royalty(ruleset: Ruleset, board: str, royalties: tuple[int, ...]) -> None:
    assert assess(Board.parse(board), ruleset).royalties == royalties


def test_a_top_high_card_royalty_in_a_settlement() -> None:
    # a: As Kd Qc top (1), flush bottom (4); b: KK top (8), nothing else. b wins the top
    # and the middle, a the bottom: rows 1 - 2 = -1, royalties 5 - 8 = -3: a gets -4 under
    # the 1-6 scheme (-5 without the high-card point).
    a = Board.parse(f"As Kd Qc {UNDER}")
    b = Board.parse("Kc Kh 4d / 4h 4c 8d 8c Td / Ah Ad 6c 6d 8h")
    settled = settle([a, b], HIGH)
    assert [p.royalties for p in settled.players] == [(1, 0, 4), (8, 0, 0)]
    assert settled.pairs[0].rows == (-1, -1, 1)
    assert [p.points for p in settled.players] == [-4, 4]
    standard = settle([a, b], PRESETS["pineapple"])
    assert [p.points for p in standard.players] == [-5, 5]


def test_any_top_category_in_a_custom_table_and_overrides_round_trip() -> None:
    ruleset = resolve_ruleset(
        {
            "preset": "pineapple",
            "royalties": {"name": "house", "top_high_card": {"A": 2, "K": 1}},
            "fantasyland_tiers": [
                {
                    "cards": 14,
                    "stay_conditions": [{"row": "top", "category": "pair", "min_rank": "K"}],
                    "stay_cards": 15,
                }
            ],
        }
    )
    assert ruleset.royalties.top_high_card[Rank.ACE] == 2
    assert ruleset.royalties.top_high_card[Rank.QUEEN] == 0
    assert ruleset.fantasyland_tiers == (
        FantasylandTier(14, (StayCondition(Row.TOP, Category.PAIR, Rank.KING),), 15),
    )
    assert ruleset.stay_rule(14)[1] == 15 and ruleset.stay_rule(16) == (
        ruleset.stay_conditions,
        14,
    )
    assert ruleset_from_dict(json.loads(json.dumps(ruleset.to_dict()))) == ruleset
    assert ruleset.uses_later_options
    assert tuple(
        assess(Board.parse(f"Kc Kd 2c {UNDER}"), ruleset, fantasyland_cards=14).fantasyland
    ) == (True, 15)


def test_older_presets_write_what_they_wrote() -> None:
    for name in ("classic", "pineapple", "progressive-pineapple", "turbo"):
        data = PRESETS[name].to_dict()
        assert "fantasyland_tiers" not in data and "top_high_card" not in data["royalties"]
        assert all("min_rank" not in c for c in data["stay_conditions"])
        assert not PRESETS[name].uses_later_options


@pytest.mark.parametrize(
    ("tiers", "field"),
    [
        ([{"cards": 12, "stay_conditions": [], "stay_cards": 14}], "fantasyland_tiers[0]"),
        ([{"cards": 14, "stay_conditions": [], "stay_cards": 18}], "fantasyland_tiers[0]"),
        (
            [
                {"cards": 14, "stay_conditions": [], "stay_cards": 14},
                {"cards": 14, "stay_conditions": [], "stay_cards": 15},
            ],
            "fantasyland_tiers[1]",
        ),
    ],
)
def test_bad_tiers_are_refused(tiers: list[dict[str, object]], field: str) -> None:
    with pytest.raises(InvalidRulesetError) as caught:
        resolve_ruleset({"preset": "pineapple", "fantasyland_tiers": tiers})
    assert caught.value.field == field


def test_ofc_score_input_takes_the_tier() -> None:
    players = [
        {"top": "Ac Ad 2c", "middle": "3h 3d 5s 5c 7d", "bottom": "Ts Js Qs Ks 2s"},
        {"top": "Kd 3c 2d", "middle": "5h 5d 9d 8h 4d", "bottom": "7c 7h Qd Jh 4s"},
    ]
    cases: list[tuple[dict[str, object], dict[str, object]]] = [
        ({"fantasyland_cards": 16}, {"qualifies": True, "cards": 16}),
        ({"fantasyland_cards": 17}, {"qualifies": False, "cards": 0}),
        ({"in_fantasyland": True}, {"qualifies": True, "cards": 14}),
        ({}, {"qualifies": True, "cards": 16}),  # entry: AA on top
    ]
    for extra, expected in cases:
        request = score_request_from_dict(
            {
                "ruleset": "progressive-pineapple-keep",
                "players": [{**players[0], **extra}, players[1]],
            }
        )
        result = settlement_to_dict(request.settle(), request.ids)
        assert result["players"][0]["fantasyland_next"] == expected, extra
    for bad in (
        {"fantasyland_cards": 12},
        {"fantasyland_cards": True},
        {"in_fantasyland": False, "fantasyland_cards": 16},
    ):
        with pytest.raises(InvalidInputError) as caught:
            score_request_from_dict({"players": [{**players[0], **bad}, players[1]]})
        assert caught.value.field == "players[0].fantasyland_cards"


# --- the solver under tiers: exact, against the plain enumeration of test_solver -----------
# A 13-card tier of its own: stays with a top pair of kings or better, or a middle straight
# of ten-high or better (a rank inside a 5-card category), and earns 15 cards, worth more.
TIERED_13 = PRESETS["classic"].replace(
    name="tiered-13",
    fantasyland_tiers=(
        FantasylandTier(
            13,
            (
                StayCondition(Row.TOP, Category.PAIR, Rank.KING),
                StayCondition(Row.MIDDLE, Category.STRAIGHT, Rank.TEN),
            ),
            15,
        ),
    ),
    max_players=3,
)
PRICED = {13: 10, 14: 6, 15: 25, 16: 18, 17: 30}
SOLVER_CASES = [
    ("tiered-13-stay", TIERED_13, True, PRICED, 13),
    ("progressive-entry-priced", KEEP, False, PRICED, 13),
    ("top-high-card-entry", HIGH, False, {n: 10 for n in range(13, 18)}, 13),
    ("keep-14-stay", KEEP, True, PRICED, 14),
]


@pytest.mark.parametrize(
    ("ruleset", "in_fantasyland", "values", "size"),
    [c[1:] for c in SOLVER_CASES],
    ids=[c[0] for c in SOLVER_CASES],
)
def test_the_solver_stays_exact_under_tiers(
    ruleset: Ruleset, in_fantasyland: bool, values: dict[int, int], size: int
) -> None:
    rng = random.Random(f"tiers-{ruleset.name}-{size}")
    rich = list(range(4 * 6, 52))  # eights to aces: pairs, straights and quads are common
    count = 12 if size == 13 else 2
    for k in range(count):
        deck = rich if k % 2 else list(range(52))
        hand = tuple(Card(c) for c in rng.sample(deck, size))
        solution = solve_fantasyland(
            hand, ruleset, in_fantasyland=in_fantasyland, fantasyland_value=values
        )
        objective, rows = brute_force(
            hand, ruleset, in_fantasyland=in_fantasyland, fantasyland_value=values
        )
        assert (solution.objective, (solution.top, solution.middle, solution.bottom)) == (
            objective,
            rows,
        ), card_codes(hand)


def test_the_value_of_staying_depends_on_the_tier() -> None:
    # 16 cards with two aces and quads: at 16 cards, AA on top stays at 16 (worth 18 here)
    cards = parse_cards("As Ad 9s 9h 9d 9c Ks Qs Js 2h 3h 4c 6d 7c 8h Td")
    solution = solve_fantasyland(cards, KEEP, fantasyland_value=PRICED)
    assert (solution.fantasyland_next, solution.fantasyland_next_cards) == (True, 16)
    assert solution.objective == solution.royalties + 18
    flat = solve_fantasyland(cards, KEEP)
    assert flat.objective == flat.royalties + 10 and flat.fantasyland_next_cards == 16
    with pytest.raises(InvalidInputError):
        solve_fantasyland(cards, KEEP, fantasyland_value={12: 5})
