"""``ofc.codec.settlement_json`` writes exactly ``json.dumps(settlement_to_dict(...))``.

``ofc score`` prints the fast one; the dict form is the reference (and what the history and
verify code build on). Random hands of every shape: legal and fouled boards, 2-4 players,
loss caps, other scoring schemes, pair unit values, Fantasyland, ids that JSON escapes.
"""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ofc.cards import CARD_CODES
from ofc.codec import score_json, score_request_from_dict, settlement_json, settlement_to_dict
from ofc.errors import InvalidInputError, OfcError
from ofc.rulesets import PRESETS
from ofc.scoring import Settlement, settle

from tests.ofc.test_scoring import hands

ids = st.one_of(st.text(max_size=6), st.sampled_from(["", 'quo"te', "back\\slash", "ĉu 🂡"]))


@st.composite
def settlements(draw: st.DrawFn) -> tuple[Settlement, list[str]]:
    """A settled hand of any shape (pair unit values, Fantasyland) and its player ids."""
    ruleset, boards = draw(hands())
    n = len(boards)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    units = draw(st.dictionaries(st.sampled_from(pairs), st.integers(1, 10**6)))
    flags = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    streaks = [draw(st.integers(1, 3)) if f else 0 for f in flags]
    player_ids = draw(st.lists(ids, min_size=n, max_size=n, unique=True))
    settlement = settle(
        boards, ruleset, in_fantasyland=flags, fantasyland_streaks=streaks, pair_units=units
    )
    return settlement, player_ids


@settings(max_examples=300)
@given(settlements())
def test_the_fast_text_is_the_dict_dumped(settled: tuple[Settlement, list[str]]) -> None:
    settlement, player_ids = settled
    text = settlement_json(settlement, player_ids)
    assert text == json.dumps(settlement_to_dict(settlement, player_ids))


# --- score_json: the ``ofc score`` result straight from its input -------------------------
def _reference(data: Any) -> str:
    """The request read in full (players that are mappings but not dicts skip every
    shortcut), settled, and the settlement's dict dumped; an error as ``(type, message,
    field)``."""
    if isinstance(data, dict) and isinstance(data.get("players"), list):
        players = [MappingProxyType(p) if isinstance(p, dict) else p for p in data["players"]]
        data = {**data, "players": players}
    try:
        request = score_request_from_dict(data)
        return json.dumps(settlement_to_dict(request.settle(), request.ids))
    except OfcError as error:
        return repr((type(error), error.message, error.field))


def _score_json(data: Any) -> str:
    try:
        return score_json(data)
    except OfcError as error:
        return repr((type(error), error.message, error.field))


# How a player's row may be written: the plain codes the shortcut reads, and every spelling
# (and mistake) it leaves to the full reading.
row_spellings = st.sampled_from(
    [
        lambda codes: " ".join(codes),
        lambda codes: ",".join(codes),
        lambda codes: list(codes),
        lambda codes: " ".join(c.lower() for c in codes),
        lambda codes: " ".join(codes[:-1]),  # a card short
        lambda codes: " ".join([*codes, "Zz"]),
        lambda codes: " ".join(codes) + " " + codes[0],  # a card twice
        lambda codes: 7,
    ]
)
extras: st.SearchStrategy[dict[str, Any]] = st.sampled_from(
    [{}, {}, {}, {"fantasyland_cards": 14}, {"in_fantasyland": False}, {"note": 1}, {"id": None}]
)


@st.composite
def score_inputs(draw: st.DrawFn) -> Any:
    """``ofc score`` input of any shape: mostly plain hands, some with other spellings,
    Fantasyland, bad rows, repeated or missing ids, a ruleset named or not."""
    ruleset, boards = draw(hands())
    players = []
    for board in boards:
        player: dict[str, Any] = {}
        if draw(st.booleans()):
            player["id"] = draw(st.sampled_from(["a", "b", "c", "0", "1"]))
        plain = draw(st.integers(0, 9)) > 0
        for name, row in zip(("top", "middle", "bottom"), board.rows, strict=True):
            codes = [CARD_CODES[c] for c in row]
            player[name] = " ".join(codes) if plain else draw(row_spellings)(codes)
        player.update(draw(extras))
        players.append(player)
    data: dict[str, Any] = {"players": players}
    if draw(st.booleans()):
        data["ruleset"] = ruleset.name if ruleset.name in PRESETS else "classic"
    return data


@settings(max_examples=400)
@given(score_inputs())
def test_score_json_is_the_full_reading_settled(data: Any) -> None:
    assert _score_json(data) == _reference(data)


@pytest.mark.parametrize(
    "data", [None, [], {"players": []}, {"players": {}}, {"players": [1, 2]}, {"ruleset": "x"}]
)
def test_score_json_refuses_what_the_full_reading_refuses(data: Any) -> None:
    assert _score_json(data) == _reference(data)


_ROWS = {"top": "Ac 3d 2h", "middle": "6c 6d 9h 8s 4c", "bottom": "9c 8c 7d 6h 5s"}
_OTHER_ROWS = {"top": "Kd 3c 2d", "middle": "5c 5d 9d 8h 4d", "bottom": "7c 7h Qd Js 4s"}


@pytest.mark.parametrize(
    "players",
    [
        [{"id": "1", **_ROWS}, _OTHER_ROWS],  # the second's index is the first's id
        [_ROWS, {"id": "0", **_OTHER_ROWS}],
        [{"id": "a", **_ROWS}, {"id": "a", **_OTHER_ROWS}],
    ],
    ids=["index-after-id", "id-after-index", "same-id"],
)
def test_a_repeated_player_id_is_refused_as_the_full_reading_refuses_it(
    players: list[dict[str, str]],
) -> None:
    data = {"players": players}
    assert _score_json(data) == _reference(data)
    with pytest.raises(InvalidInputError, match="unique"):
        score_request_from_dict(data)


@pytest.mark.parametrize("streak", [None, 0, 1, 2])
def test_a_fantasyland_hand_counts_itself_in_its_streak_as_settle_hand_does(
    streak: int | None,
) -> None:
    """Trips on top would keep a Fantasyland player there, but the cap of one Fantasyland
    in a row ends it: a streak of 0 (or none) in Fantasyland is this hand itself, 1."""
    player = {
        "id": "p0",
        "top": "7c 7d 7h",
        "middle": "Jc Jd Js 4s 2s",
        "bottom": "Ac Kc Tc 5c 3c",
        "in_fantasyland": True,
    }
    if streak is not None:
        player["fantasyland_streak"] = streak
    other = {"id": "p1", "top": "Kd 8h 3d", "middle": "Qh Qs 9s 6h 5h", "bottom": "As Ad Ah 9d 8s"}
    capped = {"preset": "classic", "max_consecutive_fantasylands": 1}
    players = json.loads(score_json({"ruleset": capped, "players": [player, other]}))["players"]
    assert players[0]["fantasyland_next"] == {"qualifies": False, "cards": 0}
    uncapped = json.loads(score_json({"players": [player, other]}))["players"]
    assert uncapped[0]["fantasyland_next"] == {"qualifies": True, "cards": 13}
