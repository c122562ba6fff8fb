"""``ofc.verify`` and ``ofc verify``: untampered histories verify, every tampering is named.

The tampering table reads like an audit report: what was changed, the code the verifier
gives and the JSON path it points at. Locations are chosen so they do not depend on what
the timeout policy happens to play (the last card of a classic hand has one free slot; a
card from the bottom of the deck was never dealt).
"""

from __future__ import annotations

import copy
import dataclasses
import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ofc.cards import card_codes
from ofc.codec import FORMAT_VERSION, hand_history
from ofc.engine import (
    Action,
    SitDown,
    StartHand,
    apply,
    new_match,
    replay,
    seats_to_act,
)
from ofc.policy import timeout
from ofc.rulesets import PRESETS, Ruleset, get_ruleset, resolve_ruleset
from ofc.shuffle import commitment, shuffle_deck
from ofc.verify import SECTION_CODES, Code, Discrepancy, verify_history, verify_history_json
from ofc_cli.main import main

SEED = bytes(32)
History = dict[str, Any]


def play_history(
    ruleset: str | Ruleset = "classic",
    players: int = 3,
    *,
    seed: bytes = SEED,
    client_seed: bytes = b"",
    button: int = 0,
    fantasyland: dict[int, int] | None = None,
    explicit: bool = False,
    pair_units: dict[tuple[int, int], int] | None = None,
) -> History:
    """One hand played by the timeout policy: as timeouts (what ``ofc play`` records) or,
    with ``explicit``, as the place/set_fantasyland moves a player would send."""
    table, _ = replay(
        new_match(ruleset, seats=players, button=button, pair_units=pair_units),
        [SitDown(s, f"player-{s}") for s in range(players)],
    )
    if fantasyland:
        seats = list(table.seats)
        for seat, cards in fantasyland.items():
            seats[seat] = dataclasses.replace(seats[seat], fantasyland=cards)
        table = dataclasses.replace(table, seats=tuple(seats))
    actions: list[Action] = [StartHand(seed, client_seed, at_ms=1_000)]
    state, _ = apply(table, actions[0])
    while waiting := seats_to_act(state):
        at_ms = 1_000 + len(actions)
        timed_out = timeout(state, waiting[0], at_ms=at_ms)
        move: Action = timed_out.move if explicit else timed_out
        state, _ = apply(state, move)
        actions.append(move)
    return hand_history(table, actions)


TIMEOUTS = play_history()  # every move a timeout, like `ofc play`
EXPLICIT = play_history(explicit=True)
PINEAPPLE = play_history("pineapple", explicit=True, client_seed=b"table-7")
FANTASYLAND = play_history("progressive-pineapple", fantasyland={1: 15}, explicit=True)
FANTASYLAND_TIMEOUTS = play_history("classic", 4, fantasyland={2: 13, 3: 13}, button=1)
BASES = {
    "timeouts": TIMEOUTS,
    "explicit": EXPLICIT,
    "pineapple": PINEAPPLE,
    "fantasyland": FANTASYLAND,
    "fantasyland_timeouts": FANTASYLAND_TIMEOUTS,
}


def _never_dealt(h: History) -> str:
    """A card of the deck that nobody was dealt (the last position)."""
    deck = shuffle_deck(bytes.fromhex(h["server_seed"]), bytes.fromhex(h["client_seed"]), 1)
    return str(deck[51])


def _other_card(card: str) -> str:
    return "2c" if card != "2c" else "3c"


def _first_nonzero_player(h: History) -> int:
    return next(i for i, p in enumerate(h["settlement"]["players"]) if p["points"])


# --- untampered histories -------------------------------------------------------------------
@pytest.mark.parametrize("name", list(BASES))
def test_untampered_histories_verify(name: str) -> None:
    history = BASES[name]
    assert verify_history(history) is None
    assert verify_history_json(json.dumps(history)) is None
    assert verify_history_json(json.dumps(history, indent=2).encode()) is None


STAKES = play_history(pair_units={(0, 1): 20, (0, 2): 15}, explicit=True)  # version 2


def test_a_history_carries_the_agreed_pair_unit_values_and_verifies() -> None:
    assert verify_history(STAKES) is None
    assert STAKES["initial_state"]["pair_unit_values"] == [
        {"a": 0, "b": 1, "unit_value": 20},
        {"a": 0, "b": 2, "unit_value": 15},
    ]
    agreed = {(0, 1): 20, (0, 2): 15, (1, 2): 1}
    pairs = STAKES["settlement"]["pairs"]
    assert {(min(p["a"], p["b"]), max(p["a"], p["b"])): p["unit_value"] for p in pairs} == agreed
    assert all(p["units"] == p["capped_points"] * p["unit_value"] for p in pairs)
    assert sum(p["units"] for p in STAKES["settlement"]["players"]) == 0
    assert "pair_unit_values" not in TIMEOUTS["initial_state"]  # none agreed: not written


def _pair_of_seats(h: History, a: int, b: int) -> int:
    pairs = h["settlement"]["pairs"]
    return next(k for k, p in enumerate(pairs) if {p["a"], p["b"]} == {a, b})


@pytest.mark.parametrize(
    ("mutate", "code", "location"),
    [
        (lambda h: h["initial_state"]["pair_unit_values"][0].update(unit_value=21),
         Code.SETTLEMENT_MISMATCH, "settlement"),
        (lambda h: h["initial_state"].pop("pair_unit_values"),
         Code.MALFORMED_HISTORY, "initial_state.format_version"),
        (lambda h: [h["initial_state"].pop("pair_unit_values"),
                    h["initial_state"].update(format_version=1), h.update(format_version=1)],
         Code.SETTLEMENT_MISMATCH, "settlement"),
        (lambda h: h.update(format_version=1), Code.MALFORMED_HISTORY, "format_version"),
        (lambda h: h["settlement"]["pairs"][_pair_of_seats(h, 0, 2)].update(unit_value=16),
         Code.SETTLEMENT_MISMATCH, "settlement.pairs"),
        (lambda h: h["initial_state"]["pair_unit_values"].reverse(),
         Code.MALFORMED_HISTORY, "initial_state.pair_unit_values[1]"),
        (lambda h: h["initial_state"]["pair_unit_values"][1].update(b=3),
         Code.MALFORMED_HISTORY, "initial_state.pair_unit_values[1].b"),
    ],
    ids=["stake-changed", "stakes-removed", "stakes-and-version-removed", "version-1",
         "pair-unit-changed", "unordered", "no-such-seat"],
)  # fmt: skip
def test_a_changed_pair_unit_value_is_caught(
    mutate: Callable[[History], object], code: Code, location: str
) -> None:
    history = copy.deepcopy(STAKES)
    mutate(history)
    found = verify_history(history)
    assert found is not None and found.code == code, found
    assert found.location.startswith(location), found


def test_the_fixtures_cover_discards_fantasyland_and_both_move_forms() -> None:
    kinds = {a["type"] for h in BASES.values() for a in h["actions"]}
    assert kinds == {"start_hand", "place", "set_fantasyland", "timeout"}
    resolved = {a["resolved"]["type"] for a in FANTASYLAND_TIMEOUTS["actions"] if "resolved" in a}
    assert resolved == {"place", "set_fantasyland"}
    assert any(b["discards"] for b in PINEAPPLE["boards"])
    assert [d["street"] for d in FANTASYLAND["deals"][:1]] == [None]


def test_what_the_live_tables_add_is_not_checked() -> None:
    stored = {**EXPLICIT, "table_id": "t-1", "settled_at_ms": 1_700_000_000_000, "note": [1]}
    assert verify_history(stored) is None
    bad = {**EXPLICIT, "settled_at_ms": "yesterday"}
    assert _code_at(verify_history(bad)) == (Code.MALFORMED_HISTORY, "settled_at_ms")


def test_the_compared_sections_are_every_key_of_the_format() -> None:
    assert list(SECTION_CODES) == list(TIMEOUTS)


# --- tampering ------------------------------------------------------------------------------
Mutation = Callable[[History], None]


def _set(path: Sequence[str | int], value: Any) -> Mutation:
    def mutate(h: History) -> None:
        target: Any = h
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value(target[path[-1]]) if callable(value) else value

    return mutate


def _swap(path: Sequence[str | int], i: int, j: int) -> Mutation:
    def mutate(h: History) -> None:
        target: Any = h
        for key in path:
            target = target[key]
        target[i], target[j] = target[j], target[i]

    return mutate


def _all(*mutations: Mutation) -> Mutation:
    def mutate(h: History) -> None:
        for m in mutations:
            m(h)

    return mutate


def _reseed(h: History) -> None:
    """Another server seed everywhere, with its own (consistent) commitment."""
    seed = "ab" * 32
    h["server_seed"], h["commitment"] = seed, commitment(bytes.fromhex(seed))
    h["actions"][0]["server_seed"] = seed


def _drop_last_action(h: History) -> None:
    h["actions"].pop()


def _repeat_last_action(h: History) -> None:
    h["actions"].append(copy.deepcopy(h["actions"][-1]))


def _never_dealt_card_in_last_place(h: History) -> None:
    h["actions"][-1]["placements"][0][0] = _never_dealt(h)


def _last_place_to_another_row(h: History) -> None:
    card, row = h["actions"][-1]["placements"][0]
    h["actions"][-1]["placements"][0] = [card, "top" if row != "top" else "bottom"]


def _other_card_in_last_timeout(h: History) -> None:
    placement = h["actions"][-1]["resolved"]["placements"][0]
    placement[0] = _other_card(placement[0])


def _unit_value(h: History) -> None:
    h["initial_state"]["ruleset"]["unit_value"] = 3


def _rename_ruleset(h: History) -> None:
    h["initial_state"]["ruleset"]["name"] = "classic-house"


def _drop_fantasyland(h: History) -> None:
    h["initial_state"]["seats"][1]["fantasyland"] = 0


# (name, base, mutation, code, location); a location ending in "[" is a prefix.
TAMPERING: list[tuple[str, str, Mutation, Code, str]] = [
    # the seeds and the deck
    ("server seed", "timeouts", _set(["server_seed"], "11" * 32),
     Code.COMMITMENT_MISMATCH, "commitment"),
    ("commitment", "timeouts", _set(["commitment"], "22" * 32),
     Code.COMMITMENT_MISMATCH, "commitment"),
    ("seed and commitment, not the start", "explicit",
     _all(_set(["server_seed"], "ab" * 32), _set(["commitment"], commitment(b"\xab" * 32))),
     Code.DECK_MISMATCH, "actions[0].server_seed"),
    ("another seed everywhere", "explicit", _reseed, Code.DEAL_MISMATCH, "deals[0].cards["),
    ("client seed", "pineapple", _set(["client_seed"], "00"),
     Code.DECK_MISMATCH, "actions[0].client_seed"),
    ("hand number (the nonce)", "timeouts", _set(["hand_number"], 2),
     Code.DECK_MISMATCH, "hand_number"),
    # the deals
    ("one card of a deal", "explicit", _set(["deals", 3, "cards", 0], _other_card),
     Code.DEAL_MISMATCH, "deals[3].cards[0]"),
    ("a deal's position", "timeouts", _set(["deals", 2, "position"], lambda p: p + 1),
     Code.DEAL_MISMATCH, "deals[2].position"),
    ("two deals swapped", "pineapple", _swap(["deals"], 0, 1), Code.DEAL_MISMATCH, "deals[0].seat"),
    ("a deal dropped", "timeouts", _set(["deals"], lambda d: d[:-1]),
     Code.DEAL_MISMATCH, "deals[26]"),
    ("a deal added", "timeouts", _set(["deals"], lambda d: [*d, d[-1]]),
     Code.DEAL_MISMATCH, "deals[27]"),
    ("a Fantasyland block's size", "fantasyland", _set(["deals", 0, "count"], 14),
     Code.DEAL_MISMATCH, "deals[0].count"),
    ("a Fantasyland block as a street", "fantasyland", _set(["deals", 0, "street"], 0),
     Code.DEAL_MISMATCH, "deals[0].street"),
    ("a Fantasyland taken away", "fantasyland", _drop_fantasyland,
     Code.DEAL_MISMATCH, "deals[0].street"),
    # the actions
    ("an action's card", "explicit", _never_dealt_card_in_last_place,
     Code.ILLEGAL_ACTION, "actions[27].placements[0][0]"),
    ("an action's row", "explicit", _last_place_to_another_row,
     Code.ILLEGAL_ACTION, "actions[27].placements[0][1]"),
    ("a timeout's recorded move", "timeouts", _other_card_in_last_timeout,
     Code.ILLEGAL_ACTION, "actions[27].resolved.placements[0][0]"),
    ("a Fantasyland set's card", "fantasyland",
     _set(["actions", -1, "top", 0], lambda c: _never_dealt(FANTASYLAND)),
     Code.ILLEGAL_ACTION, "actions[11].top[0]"),
    ("two actions swapped", "explicit", _swap(["actions"], 1, 2),
     Code.ILLEGAL_ACTION, "actions[1].seat"),
    ("an action dropped", "timeouts", _set(["actions"], lambda a: a[:2] + a[3:]),
     Code.ILLEGAL_ACTION, "actions[2].seat"),
    ("the last action dropped", "explicit", _drop_last_action, Code.INCOMPLETE_HAND, "actions[27]"),
    ("an action after the end", "explicit", _repeat_last_action,
     Code.ILLEGAL_ACTION, "actions[28]"),
    # the header, boards and result
    ("the button", "explicit", _set(["button"], 2), Code.HEADER_MISMATCH, "button"),
    ("the turn order", "explicit", _set(["order"], lambda o: o[::-1]),
     Code.HEADER_MISMATCH, "order[0]"),
    ("a player id", "explicit", _set(["players", 1, "player_id"], "mallory"),
     Code.HEADER_MISMATCH, "players[1].player_id"),
    ("the ruleset's name", "explicit", _rename_ruleset, Code.HEADER_MISMATCH, "ruleset"),
    ("two cards of a board", "explicit", _swap(["boards", 0, "middle"], 0, 1),
     Code.BOARD_MISMATCH, "boards[0].middle[0]"),
    ("a discard", "pineapple", _set(["boards", 2, "discards", 0], _other_card),
     Code.BOARD_MISMATCH, "boards[2].discards[0]"),
    ("a player's points", "explicit", _set(["settlement", "players", 0, "points"], lambda p: p + 1),
     Code.SETTLEMENT_MISMATCH, "settlement.players[0].points"),
    ("a pair's units", "pineapple", _set(["settlement", "pairs", 2, "units"], lambda u: u - 1),
     Code.SETTLEMENT_MISMATCH, "settlement.pairs[2].units"),
    ("a royalty total", "explicit",
     _set(["settlement", "players", 1, "royalties", "total"], lambda t: t + 2),
     Code.SETTLEMENT_MISMATCH, "settlement.players[1].royalties.total"),
    ("a foul", "explicit", _set(["settlement", "players", 2, "fouled"], lambda f: not f),
     Code.SETTLEMENT_MISMATCH, "settlement.players[2].fouled"),
    ("the Fantasyland owed next", "explicit",
     _set(["fantasyland_next"], [{"seat": 0, "cards": 13}]),
     Code.SETTLEMENT_MISMATCH, "fantasyland_next[0]"),
    ("the next button", "explicit", _set(["button_next"], 0),
     Code.SETTLEMENT_MISMATCH, "button_next"),
    # the ruleset's parameters: a change that plays a part in the hand shows in the result
    ("the unit value", "timeouts", _unit_value, Code.SETTLEMENT_MISMATCH,
     f"settlement.players[{_first_nonzero_player(TIMEOUTS)}].units"),
    ("the scoring", "explicit", _set(["initial_state", "ruleset", "scoring", "row_value"], 5),
     Code.SETTLEMENT_MISMATCH, "settlement.players["),
    ("the streets", "timeouts",
     _set(["initial_state", "ruleset", "streets"], [[5, 5], [4, 4], [4, 4]]),
     Code.DEAL_MISMATCH, "deals[3].count"),
]  # fmt: skip


def _code_at(found: Discrepancy | None) -> tuple[Code, str] | None:
    return None if found is None else (found.code, found.location)


@pytest.mark.parametrize(
    ("base", "mutate", "code", "location"),
    [pytest.param(*case[1:], id=case[0]) for case in TAMPERING],
)
def test_tampering_is_caught_and_named(
    base: str, mutate: Mutation, code: Code, location: str
) -> None:
    history = copy.deepcopy(BASES[base])
    mutate(history)
    assert history != BASES[base]
    found = verify_history(history)
    assert found is not None, "tampering went unnoticed"
    assert found.code == code, str(found)
    if location.endswith("["):
        assert found.location.startswith(location), str(found)
    else:
        assert found.location == location, str(found)
    assert found.message and str(found).startswith(f"{code} at {found.location}: ")
    # The same answer from the JSON text.
    assert verify_history_json(json.dumps(history)) == found


def test_illegal_actions_quote_the_engine_reason() -> None:
    history = copy.deepcopy(EXPLICIT)
    _swap(["actions"], 1, 2)(history)
    found = verify_history(history)
    assert found is not None and found.message.startswith("NOT_YOUR_TURN: ")
    history = copy.deepcopy(EXPLICIT)
    _never_dealt_card_in_last_place(history)
    found = verify_history(history)
    assert found is not None and found.message.startswith("CARD_NOT_DEALT: ")


def test_a_deal_mismatch_names_the_deck_card() -> None:
    history = copy.deepcopy(TIMEOUTS)
    recorded = history["deals"][1]["cards"][2]
    history["deals"][1]["cards"][2] = _other_card(recorded)
    found = verify_history(history)
    assert found == Discrepancy(
        Code.DEAL_MISMATCH,
        "deals[1].cards[2]",
        f"recorded {_other_card(recorded)!r}, the deck from position 5 has {recorded!r}",
    )


# --- the agreed ruleset ---------------------------------------------------------------------
def test_a_parameter_the_hand_never_used_needs_the_agreed_ruleset() -> None:
    history = copy.deepcopy(EXPLICIT)
    history["initial_state"]["ruleset"]["royalties"]["bottom"]["royal_flush"] = 99
    assert verify_history(history) is None  # consistent: no board made a royal flush
    classic = get_ruleset("classic")
    found = verify_history(history, expected_ruleset=classic)
    assert _code_at(found) == (
        Code.RULESET_MISMATCH,
        "initial_state.ruleset.royalties.bottom.royal_flush",
    )
    assert verify_history(EXPLICIT, expected_ruleset=classic) is None


def test_the_agreed_ruleset_may_be_a_house_variant() -> None:
    house = resolve_ruleset({"preset": "pineapple", "loss_cap": 30})
    history = play_history(house, 2)
    assert verify_history(history, expected_ruleset=house) is None
    found = verify_history(history, expected_ruleset=get_ruleset("pineapple"))
    # the parameter that differs, not the name that says only that one does
    assert _code_at(found) == (Code.RULESET_MISMATCH, "initial_state.ruleset.loss_cap")
    named = resolve_ruleset({"preset": "pineapple", "loss_cap": 30, "name": "house"})
    assert _code_at(verify_history(history, expected_ruleset=named)) == (
        Code.RULESET_MISMATCH,
        "initial_state.ruleset.name",
    )


# --- malformed histories --------------------------------------------------------------------
MALFORMED: list[tuple[str, Mutation, str]] = [
    ("format version", _set(["format_version"], 2), "format_version"),
    ("algorithm", _set(["algorithm"], "ofc-shuffle-v2"), "algorithm"),
    ("missing key", lambda h: h.pop("deals"), "deals"),
    ("not a card", _set(["deals", 0, "cards", 1], "Zz"), "deals[0].cards[1]"),
    ("ten as 10", _set(["boards", 0, "top", 0], "10h"), "boards[0].top[0]"),
    ("upper-case hex", _set(["server_seed"], "AB" * 32), "server_seed"),
    ("odd hex", _set(["client_seed"], "abc"), "client_seed"),
    ("a bool for a number", _set(["button"], True), "button"),
    ("a float for a number", _set(["settlement", "players", 0, "points"], 1.0),
     "settlement.players[0].points"),
    ("unknown key in a board", _set(["boards", 0, "extra"], 1), "boards[0].extra"),
    ("missing at_ms", lambda h: h["actions"][1].pop("at_ms"), "actions[1].at_ms"),
    ("placement as object",
     _set(["actions", 1, "placements", 0], lambda p: {"card": p[0], "row": p[1]}),
     "actions[1].placements[0]"),
    ("bad row", _set(["actions", 1, "placements", 0, 1], "side"), "actions[1].placements[0][1]"),
    ("first action not a start", _swap(["actions"], 0, 1), "actions[0].type"),
    ("a second start", _set(["actions"], lambda a: [a[0], *a]), "actions[1].type"),
    ("a move marked resolved", _set(["actions", 1, "resolved"], None), "actions[1].resolved"),
    ("incomplete ruleset", lambda h: h["initial_state"]["ruleset"].pop("loss_cap"),
     "initial_state.ruleset.loss_cap"),
    ("invalid ruleset", _set(["initial_state", "ruleset", "streets"], [[5, 5]]),
     "initial_state.ruleset.streets"),
    ("zero royalty written out",
     _set(["initial_state", "ruleset", "royalties", "bottom", "pair"], 0),
     "initial_state.ruleset.royalties.bottom.pair"),
    ("a hand in the initial state", _set(["initial_state", "hand"], {}),
     "initial_state.hand.number"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutate", "location"), [pytest.param(*case[1:], id=case[0]) for case in MALFORMED]
)
def test_malformed_histories_are_named(mutate: Mutation, location: str) -> None:
    history = copy.deepcopy(EXPLICIT)
    mutate(history)
    assert _code_at(verify_history(history)) == (Code.MALFORMED_HISTORY, location)


def test_a_timeout_without_its_move_is_malformed() -> None:
    history = copy.deepcopy(TIMEOUTS)
    del history["actions"][3]["resolved"]
    assert _code_at(verify_history(history)) == (Code.MALFORMED_HISTORY, "actions[3].resolved")
    history = copy.deepcopy(TIMEOUTS)
    history["actions"][3]["resolved"] = {"type": "timeout", "seat": 0, "at_ms": 0}
    assert _code_at(verify_history(history)) == (
        Code.MALFORMED_HISTORY,
        "actions[3].resolved.type",
    )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "[1, 2]",
        '"history"',
        "null",
        b"\x80{}",
        '{"a": 1, "a": 2}',
        '{"format_version": NaN}',
        "[" * 100_000 + "]" * 100_000,
    ],
    ids=["empty", "truncated", "list", "string", "null", "bad utf-8", "repeated key", "NaN",
         "deep nesting"],
)  # fmt: skip
def test_text_that_is_not_a_history(text: str | bytes) -> None:
    found = verify_history_json(text)
    assert found is not None and (found.code, found.location) == (Code.MALFORMED_HISTORY, "")


# --- properties -----------------------------------------------------------------------------
@st.composite
def histories(draw: st.DrawFn) -> History:
    name = draw(st.sampled_from(sorted(PRESETS)))
    rules = PRESETS[name]
    players = draw(st.integers(rules.min_players, rules.max_players))
    sizes = sorted({e.cards for e in rules.fantasyland_entry} | {rules.stay_cards})
    owed = draw(st.lists(st.sampled_from([0, 0, *sizes]), min_size=players, max_size=players))
    return play_history(
        name,
        players,
        seed=draw(st.binary(min_size=32, max_size=32)),
        client_seed=draw(st.binary(max_size=12)),
        button=draw(st.integers(0, players - 1)),
        fantasyland={seat: cards for seat, cards in enumerate(owed) if cards},
        explicit=draw(st.booleans()),
    )


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories())
def test_untampered_histories_always_verify(history: History) -> None:
    assert verify_history(history) is None
    assert verify_history_json(json.dumps(history, indent=2)) is None


def _leaves(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaves(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _leaves(v, (*path, i))] or [path]
    return [path]


LEAVES = _leaves(EXPLICIT)
UNBOUND = {("initial_state", "seats"), ("initial_state", "max_hands"), ("initial_state", "ruleset")}
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 60) | st.text(max_size=4)
    | st.sampled_from(card_codes(shuffle_deck(SEED))),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(path=st.sampled_from(LEAVES), value=json_values)
def test_any_changed_value_gives_an_answer_never_an_exception(
    path: tuple[str | int, ...], value: Any
) -> None:
    history = copy.deepcopy(EXPLICIT)
    _set(path, value)(history)
    found = verify_history(history)
    if found is None and history != EXPLICIT:
        # Unbound by the checks: the times, the table's running totals and limits, and
        # ruleset parameters that played no part in the hand (docs/hand-history.md).
        assert path[-1] == "at_ms" or path[:2] in UNBOUND, (path, value)


# --- the command line -----------------------------------------------------------------------
def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["verify", *args])
    out, err = capsys.readouterr()
    return status, out, err


def _write(tmp_path: Path, name: str, history: Any) -> str:
    path = tmp_path / name
    path.write_text(history if isinstance(history, str) else json.dumps(history, indent=2))
    return str(path)


def test_cli_prints_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, _write(tmp_path, "h.json", PINEAPPLE)) == (0, "OK\n", "")


def test_cli_verifies_what_ofc_play_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["play", "--seed", "00" * 32, "--players", "3", "--ruleset", "turbo"]) == 0
    printed = capsys.readouterr().out
    assert _run(capsys, _write(tmp_path, "play.json", printed)) == (0, "OK\n", "")


def test_cli_prints_the_first_discrepancy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = copy.deepcopy(EXPLICIT)
    history["settlement"]["players"][0]["points"] += 1
    status, out, err = _run(capsys, _write(tmp_path, "h.json", history))
    assert (status, err) == (1, "")
    assert out.startswith("SETTLEMENT_MISMATCH at settlement.players[0].points: recorded ")
    assert out.count("\n") == 1


@pytest.mark.parametrize("content", ["{not json", '{"format_version": 1}'])
def test_cli_malformed_history_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    status, out, err = _run(capsys, _write(tmp_path, "h.json", content))
    assert (status, out) == (2, "")
    assert err.startswith("error: MALFORMED_HISTORY") and err.count("\n") == 1


def test_cli_unreadable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "missing.json")
    status, out, err = _run(capsys, missing)
    assert (status, out) == (2, "")
    assert err == f"error: INVALID_INPUT: cannot read {missing}: No such file or directory\n"


def test_cli_several_files_and_stdin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    tampered = copy.deepcopy(TIMEOUTS)
    tampered["commitment"] = "00" * 32
    good, bad = _write(tmp_path, "good.json", TIMEOUTS), _write(tmp_path, "bad.json", tampered)
    status, out, err = _run(capsys, good, bad)
    assert (status, err) == (1, "")
    assert out.splitlines() == [
        f"{good}: OK",
        f"{bad}: COMMITMENT_MISMATCH at commitment: SHA-256 of server_seed is "
        f"{TIMEOUTS['commitment']}, not {'00' * 32}",
        "1 verified, 1 failed",
    ]

    class Stdin:
        buffer = io.BytesIO(json.dumps(FANTASYLAND).encode())

    monkeypatch.setattr("sys.stdin", Stdin)
    assert _run(capsys, "-") == (0, "OK\n", "")


def test_cli_expected_ruleset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "h.json", PINEAPPLE)
    assert _run(capsys, path, "--expect-ruleset", "pineapple") == (0, "OK\n", "")
    house = '{"preset": "pineapple", "loss_cap": 9}'
    status, out, _ = _run(capsys, path, "--expect-ruleset", house)
    assert status == 1 and out.startswith(
        "RULESET_MISMATCH at initial_state.ruleset.loss_cap: recorded None, expected 9"
    )
    status, out, err = _run(capsys, path, "--expect-ruleset", "nope")
    assert (status, out) == (2, "") and err.startswith("error: UNKNOWN_RULESET")
    status, out, err = _run(capsys, path, "--expect-ruleset", "{nope")
    assert (status, out) == (2, "") and err.startswith("error: INVALID_RULESET")


# --- timeouts: recorded moves, deadlines, policies ------------------------------------------
def naive_history(policy: str | None, *, clock: bool = False) -> History:
    """Every seat times out and the table plays its batch bottom row first: a legal move
    that the shipped policy would not make, recorded under ``policy``'s name."""
    from ofc.codec import HandContext, TurnClock
    from ofc.engine import Place, Timeout
    from ofc.rulesets import ROWS

    table, _ = replay(new_match("classic", seats=2), [SitDown(0, "a"), SitDown(1, "b")])
    actions: list[Action] = [StartHand(SEED, b"", 0)]
    state, _ = apply(table, actions[0])
    while waiting := seats_to_act(state):
        hand = state.hand
        assert hand is not None
        me = hand.seat(waiting[0])
        room = {r: r.size - len(me.board.row(r)) for r in reversed(ROWS)}
        placements = []
        for card in me.pending:
            row = next(r for r, free in room.items() if free)
            room[row] -= 1
            placements.append((card, row))
        at = 1_000 * len(actions)
        move = Place(waiting[0], tuple(placements), None, at)
        actions.append(Timeout(waiting[0], move, policy, at, at if clock else None))
        state, _ = apply(state, actions[-1])
    context = HandContext(clock=TurnClock(1_000, 4_000) if clock else None)
    return hand_history(table, actions, context)


def test_a_recorded_move_is_verified_as_played_whatever_policy_chose_it() -> None:
    from ofc.verify import check_history

    for name in ("ofc-timeout-4", "acme-bot-2", None):
        history = naive_history(name)
        assert verify_history(history) is None, name  # legal moves: the hand verifies
    claimed = check_history(naive_history("ofc-timeout-4"), check_policy=True)
    assert claimed.discrepancy is not None
    assert (claimed.discrepancy.code, claimed.discrepancy.location[:22]) == (
        Code.POLICY_MISMATCH,
        "actions[1].resolved.pl",
    )
    unknown = check_history(naive_history("acme-bot-2"), check_policy=True)
    assert unknown.ok and unknown.notes == (
        "timeout policy not checkable with this release: the policy 'acme-bot-2' is not one "
        "this release ships",
    )
    unnamed = check_history(naive_history(None), check_policy=True)
    assert unnamed.ok and unnamed.notes == (
        "timeout policy not checkable with this release: the history (format version 3) "
        "names no policy",
    )
    newer = check_history(naive_history("ofc-timeout-5"), check_policy=True)
    assert newer.ok and newer.notes == (
        "timeout policy not checkable with this release: the policy 'ofc-timeout-5' is newer "
        "than this release ships",
    )
    # A name of this project's policy that no release wrote (histories name the policy from
    # format 3 on, when ofc-timeout-4 was the only one): refused, so that moves cannot be
    # passed off as an older version's.
    for name in ("ofc-timeout-3", "ofc-timeout-1", "ofc-timeout-04", "ofc-timeout-4.1"):
        assert verify_history(naive_history(name)) is None  # names are checked on request
        refused = check_history(naive_history(name), check_policy=True).discrepancy
        assert refused is not None
        assert (refused.code, refused.location) == (Code.POLICY_UNKNOWN, "actions[1].policy")
        assert refused.message == (
            f"no release of this service wrote a timeout policy {name!r}: its histories name "
            "ofc-timeout-4 or a later version"
        )


def test_deadlines_are_checked_by_the_clock_rule() -> None:
    history = naive_history("acme-bot-2", clock=True)
    assert verify_history(history) is None
    early = copy.deepcopy(history)
    early["actions"][3]["at_ms"] -= 1
    early["actions"][3]["resolved"]["at_ms"] -= 1
    assert _code_at(verify_history(early)) == (Code.TIMEOUT_BEFORE_DEADLINE, "actions[3].at_ms")
    moved = copy.deepcopy(history)
    moved["actions"][3]["deadline_ms"] -= 240
    moved["actions"][3]["at_ms"] -= 240
    moved["actions"][3]["resolved"]["at_ms"] -= 240
    assert _code_at(verify_history(moved)) == (Code.DEADLINE_MISMATCH, "actions[3].deadline_ms")
    other_time = copy.deepcopy(history)
    other_time["actions"][2]["resolved"]["at_ms"] += 1
    assert _code_at(verify_history(other_time)) == (
        Code.TIMEOUT_MISMATCH,
        "actions[2].resolved.at_ms",
    )
    no_clock = copy.deepcopy(history)
    no_clock["clock"] = None
    assert _code_at(verify_history(no_clock)) == (Code.MALFORMED_HISTORY, "actions[1].deadline_ms")
    unrecorded = copy.deepcopy(history)
    for action in unrecorded["actions"][1:]:  # a hand begun by an older server: no deadlines
        action["deadline_ms"] = None
    unrecorded["actions"][-1]["at_ms"] = unrecorded["actions"][-1]["resolved"]["at_ms"] = 17_001
    assert verify_history(unrecorded) is None


def test_a_newer_version_is_named_as_such() -> None:
    found = verify_history({**TIMEOUTS, "format_version": FORMAT_VERSION + 1})
    assert found is not None and (found.code, found.location) == (
        Code.NEWER_FORMAT_VERSION,
        "format_version",
    )
    assert "newer than this verifier reads" in found.message


def test_cli_reads_a_get_hand_history_response_and_checks_policies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    response = {"handNumber": "1", "historyJson": json.dumps(TIMEOUTS)}
    path = _write(tmp_path, "response.json", response)
    assert _run(capsys, path) == (0, "OK\n", "")
    snake = _write(tmp_path, "snake.json", {"history_json": json.dumps(TIMEOUTS)})
    assert _run(capsys, snake, "--check-policy") == (0, "OK\n", "")
    old = str(Path(__file__).parents[1] / "golden" / "f66bf42" / "play-classic-2.json")
    status, out, _ = _run(capsys, old, "--check-policy")
    assert status == 0 and out.splitlines() == [
        "OK",
        "note: timeout policy not checkable with this release: the history (format version 1) "
        "names no policy",
    ]
    newer = _write(tmp_path, "newer.json", {**TIMEOUTS, "format_version": 7})
    status, out, err = _run(capsys, newer)
    assert (status, out) == (2, "") and err.startswith("error: NEWER_FORMAT_VERSION at ")


def test_cli_many_files_in_processes_quietly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    day = tmp_path / "day"
    day.mkdir()
    for k in range(11):
        _write(day, f"hand-{k:02d}.json", TIMEOUTS)
    tampered = copy.deepcopy(TIMEOUTS)
    tampered["settlement"]["players"][0]["points"] += 1
    bad = _write(day, "hand-11.json", tampered)
    status, out, err = _run(capsys, str(day), "-j", "2", "-q")
    assert (status, err) == (1, "")
    assert out.splitlines() == [
        f"{bad}: SETTLEMENT_MISMATCH at settlement.players[0].points: recorded "
        f"{tampered['settlement']['players'][0]['points']}, recomputed "
        f"{TIMEOUTS['settlement']['players'][0]['points']}",
        "11 verified, 1 failed",
    ]
    status, out, _ = _run(capsys, str(day), "-j", "1")
    assert status == 1 and out.count(": OK\n") == 11


def test_cli_shows_a_progress_bar_on_a_terminal_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    paths = [_write(tmp_path, f"h{k}.json", TIMEOUTS) for k in range(3)]
    out, err = io.StringIO(), Terminal()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    assert main(["verify", "-j", "1", *paths]) == 0
    assert out.getvalue().splitlines() == [*(f"{p}: OK" for p in paths), "3 verified, 0 failed"]
    assert "3/3" in err.getvalue()  # tqdm's bar, on stderr
    plain = io.StringIO()
    monkeypatch.setattr("sys.stderr", plain)
    assert main(["verify", "-j", "1", *paths]) == 0
    assert plain.getvalue() == ""  # not a terminal: no bar


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("settlement", "players", 0, "units"), -(2**53)),
        (("initial_state", "seats", 0, "points"), 2**60),
        (("actions", 1, "seat"), 2**53),
        (("initial_state", "ruleset", "unit_value"), 10**30),
    ],
)
def test_an_integer_past_2_to_the_53_is_malformed_but_a_time_is_not(
    path: tuple[str | int, ...], value: int
) -> None:
    """Counts, points, money and stakes past 2^53 - 1 would be read as other numbers by JSON
    readers that round (the Node verifier takes them exactly, and refuses them the same way);
    times may be of any size (tests/golden/c1bb9f1 holds some, and verifies)."""
    from ofc.verify import check_history

    golden = Path(__file__).parents[1] / "golden" / "1dfdb1f" / "play-classic-2.json"
    history = json.loads(golden.read_text())
    inner = history
    for key in path[:-1]:
        inner = inner[key]
    inner[path[-1]] = value
    found = check_history(history).discrepancy
    location = ".".join(str(k) for k in path).replace(".0", "[0]").replace(".1", "[1]")
    assert found is not None and (found.code, found.location, found.message) == (
        Code.MALFORMED_HISTORY,
        location,
        f"must be an integer of at most 2^53 - 1 in size, got {value}",
    )
