"""schemas/hand-history.schema.json: the published JSON Schema of the hand-history format.

Every history ``ofc play`` prints (every preset, every table size) and every shape the
engine writes (Fantasyland blocks and sets, discards, timeouts, what the live tables add)
validates; the schema requires exactly the keys the producers write; and the structural
damage that ``ofc verify`` calls MALFORMED_HISTORY is refused by the schema too, while the
semantic tampering (a wrong card, a wrong score) is left to the verifier.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # test-only dependency, no stubs
import pytest
from ofc.codec import state_to_dict
from ofc.engine import new_match
from ofc.rulesets import DEFAULT_RULESET, PRESETS
from ofc.verify import SECTION_CODES, example_history
from ofc_cli.main import main

from tests.ofc.test_verify import BASES, MALFORMED, STAKES, TAMPERING, Mutation

SCHEMA_PATH = Path(__file__).parents[2] / "schemas" / "hand-history.schema.json"
SCHEMA: dict[str, Any] = json.loads(SCHEMA_PATH.read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def errors(history: Any) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in VALIDATOR.iter_errors(history)
    ]


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


TABLES = [
    (name, players)
    for name, rules in PRESETS.items()
    for players in range(rules.min_players, rules.max_players + 1)
]


@pytest.mark.parametrize(("ruleset", "players"), TABLES, ids=[f"{r}-{n}" for r, n in TABLES])
def test_what_ofc_play_prints_validates(
    capsys: pytest.CaptureFixture[str], ruleset: str, players: int
) -> None:
    seed = f"{players:02x}" * 32
    args = ["play", "--seed", seed, "--ruleset", ruleset, "--players", str(players)]
    assert main([*args, "--client-seed", "schema"]) == 0
    history = json.loads(capsys.readouterr().out)
    assert errors(history) == []


@pytest.mark.parametrize("name", list(BASES))
def test_every_shape_the_engine_writes_validates(name: str) -> None:
    assert errors(BASES[name]) == []


def test_a_history_with_agreed_pair_unit_values_validates() -> None:
    assert errors(STAKES) == []
    assert STAKES["format_version"] == STAKES["initial_state"]["format_version"] == 2
    assert BASES["explicit"]["format_version"] == 1  # no stakes, no timeout: still version 1
    for version_1 in (
        {**STAKES, "format_version": 1},
        {**STAKES, "initial_state": {**STAKES["initial_state"], "format_version": 1}},
    ):
        assert errors(version_1) != []  # pair_unit_values are version 2
    for wrong in ([], [{"a": 0, "b": 1}], [{"a": 0, "b": 1, "unit_value": 0}]):
        history = copy.deepcopy(STAKES)
        history["initial_state"]["pair_unit_values"] = wrong
        assert errors(history) != []


def test_what_the_live_tables_store_validates() -> None:
    stored = {**example_history(), "table_id": "t-9", "settled_at_ms": 1_700_000_000_000}
    assert errors(stored) == []
    assert errors({**stored, "an_extension": {"any": "thing"}}) == []
    assert errors({**stored, "settled_at_ms": -1}) != []


GOLDEN = Path(__file__).parents[1] / "golden"
OLD_TIMEOUT = json.loads((GOLDEN / "f66bf42" / "play-classic-2.json").read_text())["actions"][1]


def test_every_golden_history_validates() -> None:
    for path in sorted(GOLDEN.rglob("hand-*.json")) + sorted(GOLDEN.glob("*/*.json")):
        data = json.loads(path.read_text())
        history = json.loads(data["historyJson"]) if "historyJson" in data else data
        assert errors(history) == [], path


def test_version_3_needs_its_keys_and_its_timeout_form() -> None:
    history = example_history()
    assert errors(history) == []
    for key in ("next_commitment", "clock", "seat_units", "seat_changes"):
        assert errors({k: v for k, v in history.items() if k != key}) != [], key
    old_form = copy.deepcopy(history)
    for action in old_form["actions"][1:]:
        del action["deadline_ms"], action["policy"]
    assert errors(old_form) != []  # a version-1 timeout in a version-3 history
    assert errors({**old_form, "format_version": 1}) == []  # ... is version 1's


def test_the_schema_requires_exactly_what_the_producers_write() -> None:
    history = example_history(4)  # version 3: a timeout of each seat
    assert [*SCHEMA["required"], *SCHEMA["then"]["required"]] == list(history)
    assert list(history) == list(SECTION_CODES)
    defs = SCHEMA["$defs"]
    settlement = defs["settlement"]["properties"]
    # a ruleset's version-4 options are written only when used
    ruleset = defs["ruleset"]
    assert set(ruleset["required"]) == set(DEFAULT_RULESET.to_dict())
    tiered = PRESETS["progressive-pineapple-keep"].to_dict()
    assert (
        set(ruleset["properties"])
        == set(tiered)
        == {*DEFAULT_RULESET.to_dict(), "fantasyland_tiers"}
    )
    royalties = ruleset["properties"]["royalties"]
    assert set(royalties["properties"]) == set(
        PRESETS["pineapple-top-high-card"].to_dict()["royalties"]
    )
    condition = defs["stayConditions"]["items"]
    assert set(condition["properties"]) == set(tiered["fantasyland_tiers"][0]["stay_conditions"][0])
    assert set(condition["required"]) == set(tiered["stay_conditions"][0])
    required_and_written = [
        (defs["deal"], history["deals"][0]),
        (defs["finalBoard"], history["boards"][0]),
        (defs["settlement"], history["settlement"]),
        (settlement["players"]["items"], history["settlement"]["players"][0]),
        (settlement["pairs"]["items"], history["settlement"]["pairs"][0]),
        (defs["startHand"], history["actions"][0]),
        (defs["timeoutV3"], history["actions"][1]),
        (defs["timeout"], OLD_TIMEOUT),
        (defs["sitDown"], history["seat_changes"][0]),
        (defs["standUp"], {"type": "stand_up", "seat": 0, "at_ms": 0}),
        (defs["place"], history["actions"][1]["resolved"]),
        (defs["setFantasyland"], BASES["fantasyland"]["actions"][-1]),
    ]
    for definition, written in required_and_written:
        assert set(definition["required"]) == set(written) == set(definition["properties"])
    # the initial state's one optional key: the agreed stakes, written when a table has any
    initial = defs["initialState"]
    assert set(initial["required"]) == set(history["initial_state"])
    assert set(initial["properties"]) == set(STAKES["initial_state"])
    stakes = initial["properties"]["pair_unit_values"]["items"]
    assert set(stakes["required"]) == set(STAKES["initial_state"]["pair_unit_values"][0])
    for preset in PRESETS.values():  # every preset's parameters fit the ruleset definition
        state = state_to_dict(new_match(preset))
        version = 4 if preset.uses_later_options else 3
        assert errors({**history, "format_version": version, "initial_state": state}) == []
        if preset.uses_later_options:  # and version 4's options need version 4
            assert errors({**history, "initial_state": state}) != []


# What JSON Schema cannot say: 1.0 is an integer to it, and "the streets place 13 cards"
# is a rule across fields. ofc.verify refuses both.
SCHEMA_CANNOT = {"a float for a number", "invalid ruleset"}


@pytest.mark.parametrize(
    "mutate",
    [pytest.param(case[1], id=case[0]) for case in MALFORMED if case[0] not in SCHEMA_CANNOT],
)
def test_the_schema_refuses_what_the_verifier_calls_malformed(mutate: Mutation) -> None:
    history = copy.deepcopy(BASES["explicit"])
    mutate(history)
    assert errors(history) != []


@pytest.mark.parametrize(
    ("base", "mutate"), [pytest.param(case[1], case[2], id=case[0]) for case in TAMPERING]
)
def test_tampering_keeps_the_form_and_is_left_to_the_verifier(base: str, mutate: Mutation) -> None:
    history = copy.deepcopy(BASES[base])
    mutate(history)
    assert errors(history) == []
