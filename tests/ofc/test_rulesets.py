"""Rulesets as data: the presets written out, overrides, round-trips and rejections."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pytest
from ofc.cards import Rank, parse_cards
from ofc.errors import InvalidRulesetError, UnknownRulesetError
from ofc.evaluator import Category, rank3
from ofc.rulesets import (
    BOARD_SIZE,
    DEFAULT_RULESET,
    PRESETS,
    ROWS,
    FantasylandEntry,
    Row,
    RoyaltyTable,
    Ruleset,
    ScoringScheme,
    StayCondition,
    Street,
    TopRequirement,
    get_ruleset,
    resolve_ruleset,
    ruleset_from_dict,
)

C = Category

STANDARD = {
    "name": "standard",
    "bottom": {
        "straight": 2, "flush": 4, "full_house": 6, "quads": 10, "straight_flush": 15,
        "royal_flush": 25,
    },
    "middle": {
        "trips": 2, "straight": 4, "flush": 8, "full_house": 12, "quads": 20,
        "straight_flush": 30, "royal_flush": 50,
    },
    "top_pair": {"6": 1, "7": 2, "8": 3, "9": 4, "T": 5, "J": 6, "Q": 7, "K": 8, "A": 9},
    "top_trips": {
        "2": 10, "3": 11, "4": 12, "5": 13, "6": 14, "7": 15, "8": 16, "9": 17, "T": 18,
        "J": 19, "Q": 20, "K": 21, "A": 22,
    },
}  # fmt: skip
ONE_SIX = {"name": "1-6", "row_value": 1, "scoop_bonus": 3, "majority_value": 0}
DEFAULT_STAY = [
    {"row": "top", "category": "trips"},
    {"row": "middle", "category": "full_house"},
    {"row": "bottom", "category": "quads"},
]
CLASSIC_STREETS = [[5, 5], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1]]
PINEAPPLE_STREETS = [[5, 5], [3, 2], [3, 2], [3, 2], [3, 2]]

# Every parameter of every preset, written out.
PRESET_PARAMETERS: dict[str, dict[str, Any]] = {
    "classic": {
        "name": "classic",
        "streets": CLASSIC_STREETS,
        "min_players": 2,
        "max_players": 4,
        "royalties": STANDARD,
        "scoring": ONE_SIX,
        "royalties_to_row_winner_only": False,
        "unit_value": 1,
        "loss_cap": None,
        "fantasyland_entry": [{"category": "pair", "min_rank": "Q", "cards": 13}],
        "stay_conditions": DEFAULT_STAY,
        "stay_min_row_royalty": None,
        "stay_cards": 13,
        "max_consecutive_fantasylands": None,
        "button_moves_in_fantasyland": True,
    },
    "pineapple": {
        "name": "pineapple",
        "streets": PINEAPPLE_STREETS,
        "min_players": 2,
        "max_players": 3,
        "royalties": STANDARD,
        "scoring": ONE_SIX,
        "royalties_to_row_winner_only": False,
        "unit_value": 1,
        "loss_cap": None,
        "fantasyland_entry": [{"category": "pair", "min_rank": "Q", "cards": 14}],
        "stay_conditions": DEFAULT_STAY,
        "stay_min_row_royalty": None,
        "stay_cards": 14,
        "max_consecutive_fantasylands": None,
        "button_moves_in_fantasyland": True,
    },
    "progressive-pineapple": {
        "name": "progressive-pineapple",
        "streets": PINEAPPLE_STREETS,
        "min_players": 2,
        "max_players": 3,
        "royalties": STANDARD,
        "scoring": ONE_SIX,
        "royalties_to_row_winner_only": False,
        "unit_value": 1,
        "loss_cap": None,
        "fantasyland_entry": [
            {"category": "pair", "min_rank": "Q", "cards": 14},
            {"category": "pair", "min_rank": "K", "cards": 15},
            {"category": "pair", "min_rank": "A", "cards": 16},
            {"category": "trips", "min_rank": "2", "cards": 17},
        ],
        "stay_conditions": DEFAULT_STAY,
        "stay_min_row_royalty": None,
        "stay_cards": 14,
        "max_consecutive_fantasylands": None,
        "button_moves_in_fantasyland": True,
    },
    "turbo": {
        "name": "turbo",
        "streets": [[5, 5], [4, 4], [4, 4]],
        "min_players": 2,
        "max_players": 4,
        "royalties": STANDARD,
        "scoring": ONE_SIX,
        "royalties_to_row_winner_only": False,
        "unit_value": 1,
        "loss_cap": None,
        "fantasyland_entry": [{"category": "pair", "min_rank": "Q", "cards": 13}],
        "stay_conditions": DEFAULT_STAY,
        "stay_min_row_royalty": None,
        "stay_cards": 13,
        "max_consecutive_fantasylands": None,
        "button_moves_in_fantasyland": True,
    },
}
# The joker presets: classic and pineapple with one and two jokers (docs/jokers.md).
PRESET_PARAMETERS["classic-joker"] = {
    **PRESET_PARAMETERS["classic"],
    "name": "classic-joker",
    "jokers": 1,
}
PRESET_PARAMETERS["pineapple-jokers"] = {
    **PRESET_PARAMETERS["pineapple"],
    "name": "pineapple-jokers",
    "jokers": 2,
}

# name, cards a normal seat is dealt, discards, most Fantasyland cards
PRESET_SHAPES = [
    ("classic", 13, 0, 13),
    ("pineapple", 17, 4, 14),
    ("progressive-pineapple", 17, 4, 17),
    ("turbo", 13, 0, 13),
    ("classic-joker", 13, 0, 13),
    ("pineapple-jokers", 17, 4, 14),
]


def test_the_presets_are_exactly_these() -> None:
    assert list(PRESETS) == [
        "classic",
        "pineapple",
        "progressive-pineapple",
        "turbo",
        "progressive-pineapple-keep",
        "pineapple-top-high-card",
        "classic-joker",
        "pineapple-jokers",
    ]
    assert DEFAULT_RULESET is PRESETS["classic"]
    assert Ruleset() == PRESETS["classic"]


@pytest.mark.parametrize("name", list(PRESET_PARAMETERS))
def test_preset_parameters(name: str) -> None:
    assert get_ruleset(name).to_dict() == PRESET_PARAMETERS[name]
    assert json.loads(json.dumps(get_ruleset(name).to_dict())) == PRESET_PARAMETERS[name]


@pytest.mark.parametrize(("name", "dealt", "discards", "most_fl_cards"), PRESET_SHAPES)
def test_preset_shapes(name: str, dealt: int, discards: int, most_fl_cards: int) -> None:
    ruleset = get_ruleset(name)
    assert ruleset.cards_per_hand == dealt
    assert sum(s.discard for s in ruleset.streets) == discards
    assert sum(s.place for s in ruleset.streets) == BOARD_SIZE == 13
    assert ruleset.max_fantasyland_cards == most_fl_cards
    assert max(dealt, most_fl_cards) * ruleset.max_players <= ruleset.deck_size


# --- jokers: 0, 1 or 2, as data; the deck they make -------------------------------------------
@pytest.mark.parametrize(
    ("spec", "jokers", "deck_size"),
    [
        ("classic", 0, 52),
        ("classic-joker", 1, 53),
        ("pineapple-jokers", 2, 54),
        ({"preset": "pineapple", "jokers": 1}, 1, 53),
        ({"preset": "classic-joker", "jokers": 0}, 0, 52),
    ],
)
def test_jokers_option(spec: Any, jokers: int, deck_size: int) -> None:
    ruleset = resolve_ruleset(spec)
    assert (ruleset.jokers, ruleset.deck_size) == (jokers, deck_size)
    assert ("jokers" in ruleset.to_dict()) is (jokers > 0)  # 52-card rulesets read as before
    assert ruleset_from_dict(ruleset.to_dict()) == ruleset


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"jokers": 3}, "0..2 jokers, not 3"),
        ({"jokers": -1}, "0..2 jokers, not -1"),
        ({"jokers": True}, "expected an integer"),
        ({"jokers": "1"}, "expected an integer"),
    ],
)
def test_bad_jokers(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidRulesetError, match=re.escape(message)) as info:
        resolve_ruleset(overrides)
    assert info.value.field in ("jokers", "ruleset.jokers")


def test_a_joker_makes_room_for_one_more_card() -> None:
    # Four seats of 13 fill 52 cards; 14-card Fantasylands for four need 56: too many even
    # with two jokers, while three seats of 17 (51) fit any deck.
    with pytest.raises(InvalidRulesetError, match="exceed the 54-card deck"):
        resolve_ruleset({"stay_cards": 14, "jokers": 2})
    assert resolve_ruleset({"preset": "pineapple", "max_players": 3, "jokers": 2}).deck_size == 54


def test_rows() -> None:
    assert [(r.value, r.size) for r in ROWS] == [("top", 3), ("middle", 5), ("bottom", 5)]
    assert Row("middle") is Row.MIDDLE


# --- royalty tables as data: standard and seed 002 ("ukrainian") ------------------------------
def test_royalty_tables_by_category() -> None:
    standard = get_ruleset("classic").royalties
    ukrainian = resolve_ruleset({"royalties": "ukrainian"}).royalties
    #                   HC P 2P TR ST FL FH QU SF RF
    assert standard.bottom == (0, 0, 0, 0, 2, 4, 6, 10, 15, 25)
    assert standard.middle == (0, 0, 0, 2, 4, 8, 12, 20, 30, 50)
    assert ukrainian.bottom == (0, 0, 0, 0, 2, 4, 6, 8, 10, 15)
    assert ukrainian.middle == (0, 0, 0, 2, 4, 8, 12, 16, 20, 30)
    #                      2  3  4  5  6  7  8  9  T  J  Q  K  A
    assert standard.top_pair == (0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
    assert standard.top_trips == (10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22)
    assert (ukrainian.top_pair, ukrainian.top_trips) == (standard.top_pair, standard.top_trips)


# --- overrides on a preset, by name or by value ------------------------------------------------
OVERRIDE_TABLE: list[tuple[Any, str, Any]] = [
    # spec, attribute, expected value
    ({"royalties": "standard"}, "royalties.name", "standard"),
    ({"royalties": "ukrainian"}, "royalties.name", "ukrainian"),
    ({"royalties": "ukrainian"}, "royalties.bottom", (0, 0, 0, 0, 2, 4, 6, 8, 10, 15)),
    ({"scoring": "1-6"}, "scoring", ScoringScheme("1-6", row_value=1, scoop_bonus=3)),
    ({"scoring": "1-4"}, "scoring", ScoringScheme("1-4", row_value=1, scoop_bonus=1)),
    ({"scoring": "2-4"}, "scoring", ScoringScheme("2-4", 0, scoop_bonus=2, majority_value=2)),
    ({"scoring": "row-2"}, "scoring", ScoringScheme("row-2", row_value=2, scoop_bonus=0)),
    ({"scoring": {"name": "row-3", "row_value": 3}}, "scoring", ScoringScheme("row-3", 3, 0)),
    ({"royalties_to_row_winner_only": True}, "royalties_to_row_winner_only", True),
    ({"unit_value": 20}, "unit_value", 20),
    ({"loss_cap": 30}, "loss_cap", 30),
    ({"loss_cap": None}, "loss_cap", None),
    ({"stay_min_row_royalty": 10}, "stay_min_row_royalty", 10),
    ({"max_consecutive_fantasylands": 2}, "max_consecutive_fantasylands", 2),
    ({"button_moves_in_fantasyland": False}, "button_moves_in_fantasyland", False),
    ({"stay_cards": 14, "max_players": 3}, "stay_cards", 14),
    ({"min_players": 3}, "min_players", 3),
    ({"preset": "pineapple", "max_players": 2}, "max_players", 2),
    ({"preset": "turbo"}, "streets", (Street(5, 5), Street(4, 4), Street(4, 4))),
    ({"streets": [[13, 13]]}, "streets", (Street(13, 13),)),
    (
        {"stay_conditions": [DEFAULT_STAY[0], DEFAULT_STAY[2]]},
        "stay_conditions",
        (StayCondition(Row.TOP, C.TRIPS), StayCondition(Row.BOTTOM, C.QUADS)),
    ),
    (
        {
            "fantasyland_entry": [{"category": "pair", "min_rank": "k", "cards": 14}],
            "max_players": 3,
        },
        "fantasyland_entry",
        (FantasylandEntry(TopRequirement(C.PAIR, Rank.KING), 14),),
    ),
    (
        {"royalties": {"name": "flat", "bottom": {"flush": 3}, "top_pair": {"A": 5}}},
        "royalties",
        RoyaltyTable(
            name="flat",
            bottom=(0, 0, 0, 0, 0, 3, 0, 0, 0, 0),
            middle=(0,) * 10,
            top_pair=(0,) * 12 + (5,),
            top_trips=(0,) * 13,
        ),
    ),
]


def _attribute(ruleset: Ruleset, path: str) -> Any:
    value: Any = ruleset
    for part in path.split("."):
        value = getattr(value, part)
    return value


@pytest.mark.parametrize(("spec", "attribute", "expected"), OVERRIDE_TABLE)
def test_overrides(spec: dict[str, Any], attribute: str, expected: Any) -> None:
    ruleset = resolve_ruleset(spec)
    assert _attribute(ruleset, attribute) == expected
    base = get_ruleset(spec.get("preset", "classic"))
    # Everything not overridden comes from the preset.
    changed = {k for k in spec if k != "preset"}
    for field in dataclasses.fields(Ruleset):
        if field.name not in changed and field.name != "name":
            assert getattr(ruleset, field.name) == getattr(base, field.name), field.name
    assert ruleset.name == (f"{base.name}+custom" if changed else base.name)


def test_resolve_ruleset_accepts_names_objects_and_none() -> None:
    assert resolve_ruleset(None) is DEFAULT_RULESET
    assert resolve_ruleset("turbo") is PRESETS["turbo"]
    custom = DEFAULT_RULESET.replace(loss_cap=12)
    assert resolve_ruleset(custom) is custom
    assert resolve_ruleset({"preset": "turbo", "name": "house"}).name == "house"
    assert resolve_ruleset({}) == DEFAULT_RULESET


def test_rulesets_are_frozen_values() -> None:
    ruleset = get_ruleset("classic")
    with pytest.raises(dataclasses.FrozenInstanceError):
        ruleset.loss_cap = 5  # type: ignore[misc]
    assert ruleset.replace(loss_cap=5) == ruleset.replace(loss_cap=5)
    assert ruleset.replace(loss_cap=5) != ruleset
    assert hash(ruleset.replace(loss_cap=5)) == hash(ruleset.replace(loss_cap=5))


# --- to_dict / ruleset_from_dict round-trips ---------------------------------------------------
@pytest.mark.parametrize("name", list(PRESETS))
def test_to_dict_round_trips(name: str) -> None:
    ruleset = PRESETS[name]
    data = json.loads(json.dumps(ruleset.to_dict()))
    assert ruleset_from_dict(data) == ruleset
    assert ruleset_from_dict(data, base=PRESETS["turbo"]) == ruleset
    assert resolve_ruleset(data) == ruleset  # a full dict needs no "preset"


@pytest.mark.parametrize(
    "spec",
    [
        {"preset": "pineapple", "royalties": "ukrainian", "scoring": "2-4", "loss_cap": 40},
        {"scoring": "row-2", "royalties_to_row_winner_only": True, "unit_value": 15},
        {
            "preset": "progressive-pineapple",
            "stay_min_row_royalty": 10,
            "max_consecutive_fantasylands": 2,
        },
        {"stay_conditions": [], "button_moves_in_fantasyland": False},
    ],
)
def test_custom_rulesets_round_trip(spec: dict[str, Any]) -> None:
    ruleset = resolve_ruleset(spec)
    assert ruleset_from_dict(json.loads(json.dumps(ruleset.to_dict()))) == ruleset


# --- rejections: typed errors naming the option -------------------------------------------------
Spec = Any
IR, UR = InvalidRulesetError, UnknownRulesetError
FL_18 = {"fantasyland_entry": [{"category": "pair", "min_rank": "Q", "cards": 18}]}
FL_NO_RANK = {"fantasyland_entry": [{"category": "pair", "cards": 14}]}
INVALID_TABLE: list[tuple[Spec, type[Exception], str, str]] = [
    # spec, error, field, message fragment
    ("nope", UR, "ruleset", "unknown ruleset: 'nope'"),
    ({"preset": "nope"}, UR, "ruleset", "known: classic, pineapple"),
    (5, IR, "ruleset", "a name or an object"),
    (["classic"], IR, "ruleset", "a name or an object"),
    ({"bogus": 1}, IR, "ruleset.bogus", "unknown ruleset option: 'bogus'"),
    ({"scoring": "1-5"}, IR, "ruleset.scoring", "known schemes: 1-6, 1-4, 2-4, row-2"),
    ({"royalties": "american"}, IR, "ruleset.royalties", "known tables: standard, ukrainian"),
    ({"royalties": {"bottom": {"flushy": 1}}}, IR, "ruleset.royalties", "FLUSHY"),
    ({"royalties": {"top_pair": {"1": 1}}}, IR, "ruleset.royalties", "'1'"),
    ({"royalties": {"bottom": {"flush": -1}}}, IR, "royalties.bottom", "non-negative"),
    ({"unit_value": True}, IR, "ruleset.unit_value", "expected an integer"),
    ({"unit_value": "20"}, IR, "ruleset.unit_value", "expected an integer"),
    ({"unit_value": 0}, IR, "unit_value", "at least 1"),
    ({"loss_cap": 0}, IR, "loss_cap", "at least 1"),
    ({"loss_cap": 2.5}, IR, "ruleset.loss_cap", "expected an integer"),
    ({"royalties_to_row_winner_only": 1}, IR, "ruleset.royalties_to_row_winner_only", "true or"),
    ({"name": ""}, IR, "ruleset.name", "non-empty string"),
    ({"streets": [[5, 5]]}, IR, "streets", "exactly 13"),
    ({"streets": [[5, 5], [3, 4], [3, 4]]}, IR, "streets", "1..deal"),
    ({"streets": [[5, 5, 5]]}, IR, "ruleset.streets", "bad value"),
    ({"streets": []}, IR, "streets", "at least 1 card"),
    ({"min_players": 1}, IR, "min_players", "2 <= min_players"),
    ({"min_players": 0, "max_players": 0}, IR, "min_players", "2 <= min_players"),
    ({"min_players": 5}, IR, "min_players", "min_players <= max_players"),
    ({"max_players": 5}, IR, "max_players", "max_players <= 4"),
    ({"min_players": 4, "max_players": 3}, IR, "max_players", "min_players <= max_players"),
    ({"preset": "pineapple", "max_players": 4}, IR, "max_players", "max_players 4 x 17 cards"),
    ({"stay_cards": 14}, IR, "max_players", "max_players 4 x 14 cards"),
    ({"stay_cards": 12}, IR, "stay_cards", "13..17"),
    ({"stay_cards": 18}, IR, "stay_cards", "13..17"),
    (FL_18, IR, "fantasyland_entry", "13..17"),
    (FL_NO_RANK, IR, "ruleset.fantasyland_entry", "min_rank"),
    ({"max_consecutive_fantasylands": 0}, IR, "max_consecutive_fantasylands", "at least 1"),
    ({"stay_min_row_royalty": 0}, IR, "stay_min_row_royalty", "at least 1"),
    ({"stay_min_row_royalty": -5}, IR, "stay_min_row_royalty", "at least 1"),
    ({"scoring": {"row_value": -1, "scoop_bonus": 3}}, IR, "scoring.row_value", "non-negative"),
    ({"scoring": {"row_value": 1, "scoop_bonus": -3}}, IR, "scoring.scoop_bonus", "non-negative"),
    ({"scoring": {"majority_value": -2}}, IR, "scoring.majority_value", "non-negative"),
    ({"stay_conditions": [{"row": "left"}]}, IR, "ruleset.stay_conditions", "'left'"),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "error", "field", "fragment"), INVALID_TABLE)
def test_invalid_rulesets_are_rejected(
    spec: Spec, error: type[Exception], field: str, fragment: str
) -> None:
    with pytest.raises(error) as info:
        resolve_ruleset(spec)
    assert type(info.value) is error
    assert isinstance(info.value, InvalidRulesetError | UnknownRulesetError)
    assert info.value.field == field
    assert fragment in str(info.value)


def test_errors_carry_stable_reasons() -> None:
    with pytest.raises(UnknownRulesetError) as unknown:
        get_ruleset("nope")
    assert unknown.value.reason == "UNKNOWN_RULESET"
    with pytest.raises(InvalidRulesetError) as invalid:
        Ruleset(unit_value=0)
    assert invalid.value.reason == "INVALID_RULESET"
    with pytest.raises(InvalidRulesetError):
        DEFAULT_RULESET.replace(max_players=5)
    with pytest.raises(InvalidRulesetError, match="royalty table top_pair needs 13"):
        RoyaltyTable("short", (0,) * 10, (0,) * 10, (0,) * 12, (0,) * 13)


# --- the scoring schemes' arithmetic -----------------------------------------------------------
SCHEMES = [
    # won, lost (ties are the rest): 1-6, 1-4, 2-4, row-2
    (3, 0, 6, 4, 4, 6),
    (2, 1, 1, 1, 2, 2),
    (2, 0, 2, 2, 2, 4),
    (1, 0, 1, 1, 2, 2),
    (1, 1, 0, 0, 0, 0),
    (0, 0, 0, 0, 0, 0),
    (0, 1, -1, -1, -2, -2),
    (0, 2, -2, -2, -2, -4),
    (1, 2, -1, -1, -2, -2),
    (0, 3, -6, -4, -4, -6),
]


@pytest.mark.parametrize(("won", "lost", "one_six", "one_four", "two_four", "row_two"), SCHEMES)
def test_scheme_points(
    won: int, lost: int, one_six: int, one_four: int, two_four: int, row_two: int
) -> None:
    names = ("1-6", "1-4", "2-4", "row-2")
    schemes = {name: resolve_ruleset({"scoring": name}).scoring for name in names}
    points = {name: scheme.points(won, lost) for name, scheme in schemes.items()}
    assert points == {"1-6": one_six, "1-4": one_four, "2-4": two_four, "row-2": row_two}


def test_top_requirement_thresholds() -> None:
    qq = TopRequirement(C.PAIR, Rank.QUEEN)

    def top(text: str) -> int:
        return rank3(*parse_cards(text))

    tops = ("Jh Jd Ac", "Qh Qd 2c", "Kh Kd 2c", "Ah Ad Kc", "2h 2d 2c")
    assert [qq.met_by(top(t)) for t in tops] == [False, True, True, True, True]
    trips = TopRequirement(C.TRIPS, Rank.TWO)
    assert [trips.met_by(top(t)) for t in ("Ah Ad Kc", "2h 2d 2c", "Ah Ad Ac")] == [
        False, True, True,
    ]  # fmt: skip
