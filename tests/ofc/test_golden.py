"""Every golden history (tests/golden: written by each release, from before format 3 on)
verifies with today's code, and a tampered copy of each is rejected with the expected code.

The golden files are never edited: a release that stops verifying one is wrong. A match
directory (``match/``) also verifies as one chain with its settlement feed, and breaking the
chain (a hand missing, a doctored running total, a feed record that disagrees) is caught.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ofc.verify import Code, check_history, check_history_json, verify_match

GOLDEN = Path(__file__).parents[1] / "golden"
FILES = sorted(p for p in GOLDEN.rglob("*.json"))
IDS = [str(p.relative_to(GOLDEN)) for p in FILES]
MATCHES = sorted(p for p in GOLDEN.glob("*/match*") if p.is_dir())  # match/, match-jokers/
TIER_CHAINS = sorted(p for p in GOLDEN.glob("*/tiers") if p.is_dir())
SEAT_CHAINS = sorted(p for p in GOLDEN.glob("*/seats") if p.is_dir())
AFTER_HAND = sorted(p for p in GOLDEN.glob("*/match-after-hand") if p.is_dir())
JOINED_IN_HAND = sorted(p for p in GOLDEN.glob("*/match-joined-in-hand") if p.is_dir())
History = dict[str, Any]


def load(path: Path) -> tuple[History, Callable[[History], Any]]:
    """The history in a golden file and how to put a changed one back in the file's form
    (a GetHandHistory response carries it as its ``historyJson`` string)."""
    data = json.loads(path.read_text())
    if "historyJson" in data:
        return json.loads(data["historyJson"]), lambda h: {**data, "historyJson": json.dumps(h)}
    return data, lambda h: h


def test_the_golden_files_are_there() -> None:
    releases = {p.relative_to(GOLDEN).parts[0] for p in FILES}
    assert {
        "10c2cc1", "f66bf42", "75a55fb", "b8846da", "971f768", "18a23e9", "c044494", "7cf969b",
        "d3fcbf2", "2edd693", "1dfdb1f",
    } <= releases  # fmt: skip
    shapes = {p.name for p in FILES if p.parent.name == "d3fcbf2"}
    assert {"explicit-fantasyland-pineapple-3.json", "house-rules-4.json"} <= shapes
    shapes = {p.name for p in FILES if p.parent.name == "2edd693"}
    assert {
        "custom-streets-3.json", "fantasyland-everyone-classic-4.json",
        "joker-top-pineapple-jokers-2.json", "two-jokers-pineapple-jokers-3.json",
        "joker-fantasyland-pineapple-jokers-3.json", "play-classic-3-clock.json",
    } <= shapes and SEAT_CHAINS  # fmt: skip
    assert len(FILES) >= 37 and MATCHES and AFTER_HAND and JOINED_IN_HAND


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_every_golden_history_verifies(path: Path) -> None:
    verdict = check_history_json(path.read_bytes(), check_policy=True)
    assert verdict.ok, str(verdict.discrepancy)
    history, _ = load(path)
    timeouts = any(a["type"] == "timeout" for a in history["actions"])
    if history["format_version"] < 3 and timeouts:  # no policy named: only say so
        assert any("not checkable with this release" in n for n in verdict.notes)


def _other_card(card: str) -> str:
    return "2c" if card != "2c" else "3c"


def _card_of_another_seat(history: History, seat: int) -> str:
    card: str = next(d["cards"][0] for d in reversed(history["deals"]) if d["seat"] != seat)
    return card


def _tamper_card(h: History) -> str:
    h["deals"][0]["cards"][0] = _other_card(h["deals"][0]["cards"][0])
    return "deals[0].cards[0]"


def _tamper_seed(h: History) -> str:
    h["server_seed"] = "ab" * 32
    return "commitment"


def _tamper_placement(h: History) -> str:
    """The first card the first move places becomes one dealt to another seat."""
    action = h["actions"][1]
    move, path = (
        (action["resolved"], "actions[1].resolved")
        if "resolved" in action
        else (
            action,
            "actions[1]",
        )
    )
    other = _card_of_another_seat(h, move["seat"])
    if move["type"] == "place":
        move["placements"][0][0] = other
        return f"{path}.placements[0][0]"
    move["top"][0] = other
    return f"{path}.top[0]"


def _tamper_score(h: History) -> str:
    h["settlement"]["players"][0]["points"] += 1
    return "settlement.players[0].points"


TAMPERS: dict[str, tuple[Callable[[History], str], Code]] = {
    "card": (_tamper_card, Code.DEAL_MISMATCH),
    "seed": (_tamper_seed, Code.COMMITMENT_MISMATCH),
    "placement": (_tamper_placement, Code.ILLEGAL_ACTION),
    "score": (_tamper_score, Code.SETTLEMENT_MISMATCH),
}


def _tampered(
    history: History, rewrap: Callable[[History], Any], mutate: Callable[[History], str], code: Code
) -> Any:
    """A copy changed by ``mutate`` is rejected with ``code`` where ``mutate`` says."""
    tampered = copy.deepcopy(history)
    location = mutate(tampered)
    found = check_history_json(json.dumps(rewrap(tampered))).discrepancy
    assert found is not None, "tampering went unnoticed"
    assert (found.code, found.location) == (code, location), str(found)
    return found


@pytest.mark.parametrize("tamper", list(TAMPERS))
@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_a_tampered_golden_history_is_rejected(path: Path, tamper: str) -> None:
    history, rewrap = load(path)
    found = _tampered(history, rewrap, *TAMPERS[tamper])
    if tamper == "placement":
        assert found.message.startswith("CARD_NOT_DEALT: ")
    assert check_history(history).ok  # the original still verifies


# --- jokers: format 4, ofc-shuffle-v2 -------------------------------------------------------------
JOKER_FILES = [p for p in FILES if "joker" in p.name]


def test_the_joker_histories_are_format_4_with_jokers_on_boards() -> None:
    assert {p.name for p in JOKER_FILES} >= {
        "play-classic-joker-2.json",
        "play-classic-joker-4.json",
        "play-pineapple-jokers-3.json",
        "fantasyland-pineapple-jokers-3.json",
    }
    placed = set()
    for path in JOKER_FILES:
        history, _ = load(path)
        jokers = history["initial_state"]["ruleset"]["jokers"]
        assert (history["format_version"], history["algorithm"]) == (4, "ofc-shuffle-v2")
        assert history["deck_size"] == 52 + jokers
        placed |= {c for b in history["boards"] for r in ("top", "middle", "bottom") for c in b[r]}
    assert {"X1", "X2"} <= placed  # both jokers were played in a row somewhere


def _first_joker(h: History) -> tuple[int, str, int]:
    return next(
        (i, row, k)
        for i, b in enumerate(h["boards"])
        for row in ("top", "middle", "bottom")
        for k, c in enumerate(b[row])
        if c.startswith("X")
    )


def _named_v1(h: History) -> str:
    h["algorithm"] = "ofc-shuffle-v1"
    return "algorithm"


def _deck_of_52(h: History) -> str:
    h["deck_size"] = 52
    return "deck_size"


def _no_deck_size(h: History) -> str:
    del h["deck_size"]
    return "deck_size"


def _as_format_3(h: History) -> str:
    h["format_version"] = 3
    return "format_version"  # "the ruleset uses options of version 4 (..., jokers)"


def _one_joker_fewer(h: History) -> str:
    h["initial_state"]["ruleset"]["jokers"] -= 1
    # One joker left: the deck size no longer agrees; none: a 52-card ruleset writes no key.
    return (
        "deck_size" if h["initial_state"]["ruleset"]["jokers"] else "initial_state.ruleset.jokers"
    )


JOKER_TAMPERS: dict[str, tuple[Callable[[History], str], Code]] = {
    "v1 named": (_named_v1, Code.MALFORMED_HISTORY),
    "deck size": (_deck_of_52, Code.MALFORMED_HISTORY),
    "no deck size": (_no_deck_size, Code.MALFORMED_HISTORY),
    "format 3": (_as_format_3, Code.MALFORMED_HISTORY),
    "one joker fewer": (_one_joker_fewer, Code.MALFORMED_HISTORY),
}


@pytest.mark.parametrize("tamper", list(JOKER_TAMPERS))
@pytest.mark.parametrize("path", JOKER_FILES, ids=[p.name for p in JOKER_FILES])
def test_a_tampered_joker_history_is_rejected(path: Path, tamper: str) -> None:
    history, rewrap = load(path)
    _tampered(history, rewrap, *JOKER_TAMPERS[tamper])


def test_a_joker_on_a_board_turned_into_the_card_it_stood_for_is_caught() -> None:
    path = next(p for p in JOKER_FILES if p.name == "play-pineapple-jokers-3.json")
    history, _ = load(path)
    seat, row, k = _first_joker(history)
    tampered = copy.deepcopy(history)
    tampered["boards"][seat][row][k] = "2c" if "2c" not in str(history["boards"]) else "2d"
    found = check_history_json(json.dumps(tampered)).discrepancy
    assert found is not None, "tampering went unnoticed"
    location = f"boards[{seat}].{row}[{k}]"
    assert (found.code, found.location) == (Code.BOARD_MISMATCH, location), str(found)


# --- matches ------------------------------------------------------------------------------------
def match_inputs(
    directory: Path,
) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    hands = [(p.name, json.loads(p.read_text())) for p in sorted(directory.glob("hand-????.json"))]
    lines = (directory / "feed.jsonl").read_text().splitlines()
    feed = [(f"feed.jsonl:{i}", json.loads(line)) for i, line in enumerate(lines, start=1)]
    return hands, feed


@pytest.mark.parametrize("directory", MATCHES, ids=[str(m.relative_to(GOLDEN)) for m in MATCHES])
def test_a_golden_match_verifies_as_one_chain_and_breaking_it_is_caught(directory: Path) -> None:
    hands, feed = match_inputs(directory)
    report = verify_match(hands, feed)
    assert report.ok, [str(d) for d in report.discrepancies]
    assert (report.hands, report.verified) == (len(hands), len(hands)) and len(hands) >= 4

    def codes(histories: list[tuple[str, Any]], records: list[tuple[str, Any]] | None) -> list[Any]:
        found = verify_match(histories, records).discrepancies
        return [(d.code, d.source, d.location) for d in found]

    # a hand missing from the match (and its feed record left over)
    assert codes(hands[:1] + hands[2:], feed) == [
        (Code.HAND_MISSING, hands[2][0], "hand_number"),
        (Code.FEED_RECORD_EXTRA, "feed.jsonl:2", "hand_number"),
    ]
    # a doctored running total in the feed
    doctored = copy.deepcopy(feed)
    doctored[2][1]["seats"][1]["total_units"] += 5
    assert codes(hands, doctored) == [
        (Code.RUNNING_TOTAL_MISMATCH, "feed.jsonl:3", "seats[1].total_units")
    ]
    # a doctored running total in a history: the chain gives another, before and after
    history = copy.deepcopy(hands[1][1])
    history["initial_state"]["seats"][0]["points"] += 3
    assert codes([hands[0], (hands[1][0], history), *hands[2:]], None) == [
        (Code.CHAIN_STATE_MISMATCH, hands[1][0], "initial_state.seats[0].points"),
        (Code.CHAIN_STATE_MISMATCH, hands[2][0], "initial_state.seats[0].points"),
    ]
    # a feed record that disagrees with its hand
    disagreeing = copy.deepcopy(feed)
    disagreeing[0][1]["seats"][0]["units"] -= 1
    assert codes(hands, disagreeing) == [
        (Code.FEED_RECORD_MISMATCH, "feed.jsonl:1", "seats[0].units")
    ]
    # format 3: each hand's commitment is the one the hand before it published
    if hands[0][1]["format_version"] >= 3:
        broken = copy.deepcopy(hands)
        broken[1][1]["next_commitment"] = "ab" * 32
        assert codes(broken, feed) == [(Code.CHAIN_COMMITMENT_MISMATCH, hands[2][0], "commitment")]
        assert hands[2][1]["seat_changes"] and hands[2][1]["seat_units"] is not None
    # the hands in any order, the feed's redeliveries: the same answer
    assert verify_match(hands[::-1], feed + feed[:2]).ok


@pytest.mark.parametrize(
    "directory", TIER_CHAINS, ids=[str(m.relative_to(GOLDEN)) for m in TIER_CHAINS]
)
def test_a_golden_chain_across_fantasyland_tiers_verifies_and_a_changed_tier_is_caught(
    directory: Path,
) -> None:
    hands = [(p.name, json.loads(p.read_text())) for p in sorted(directory.glob("hand-????.json"))]
    assert verify_match(hands).ok and len(hands) >= 3
    first = hands[0][1]
    # seat 0 plays 16 cards and seat 2 17 (progressive-pineapple-keep), and both stay at
    # their tiers: who owes a Fantasyland, and with how many cards, carries across hands
    assert first["format_version"] == 4
    assert {p["seat"]: p["fantasyland"] for p in first["players"]} == {0: 16, 1: 0, 2: 17}
    assert first["fantasyland_next"] == [{"seat": 2, "cards": 17}, {"seat": 0, "cards": 16}]
    assert {p["seat"]: p["fantasyland"] for p in hands[1][1]["players"]} == {0: 16, 1: 0, 2: 17}

    def codes(histories: list[tuple[str, Any]]) -> list[Any]:
        return [(d.code, d.location) for d in verify_match(histories).discrepancies]

    # the next hand owing 14 cards, not the 16 this one earned
    lowered = copy.deepcopy(hands)
    lowered[0][1]["fantasyland_next"][1]["cards"] = 14
    assert codes(lowered)[0] == (Code.SETTLEMENT_MISMATCH, "fantasyland_next[1].cards")
    # a hand that says seat 0 was owed 14 cards, where it was dealt the 16 it earned
    owed = copy.deepcopy(hands)
    owed[1][1]["initial_state"]["seats"][0]["fantasyland"] = 14
    assert codes(owed) == [(Code.DEAL_MISMATCH, "deals[1].count")]
    # the same history claiming format 3
    older = copy.deepcopy(first)
    older["format_version"] = 3
    assert codes([(hands[0][0], older)]) == [(Code.MALFORMED_HISTORY, "format_version")]


def test_the_new_shapes_hold_what_they_are_named_for() -> None:
    """Each shape file of 2edd693 shows the case it was made for (the verifier is tested on
    them by the tests above)."""
    folder = GOLDEN / "2edd693"

    def read(name: str) -> History:
        history: History = json.loads((folder / f"{name}.json").read_text())
        return history

    jokers = {"X1", "X2"}
    streets = read("custom-streets-3")["initial_state"]["ruleset"]["streets"]
    assert streets == [[5, 5], [4, 3], [4, 3], [2, 2]]
    everyone = read("fantasyland-everyone-classic-4")
    assert [d["count"] for d in everyone["deals"]] == [13] * 4
    top = read("joker-top-pineapple-jokers-2")
    assert any(jokers & set(b["top"]) for b in top["boards"])
    both = read("two-jokers-pineapple-jokers-3")
    assert any(jokers <= {*b["top"], *b["middle"], *b["bottom"]} for b in both["boards"])
    own = read("joker-fantasyland-pineapple-jokers-3")
    assert jokers & set(own["deals"][0]["cards"]) and own["deals"][0]["count"] == 14
    assert any(a["type"] == "set_fantasyland" for a in own["actions"])
    clocked = read("play-classic-3-clock")
    assert clocked["clock"] is not None and len(clocked["players"]) == 3


@pytest.mark.parametrize(
    "directory", SEAT_CHAINS, ids=[str(m.relative_to(GOLDEN)) for m in SEAT_CHAINS]
)
def test_a_seat_taken_and_left_within_a_hand_chains_and_a_changed_record_is_caught(
    directory: Path,
) -> None:
    hands = [(p.name, json.loads(p.read_text())) for p in sorted(directory.glob("hand-????.json"))]
    assert verify_match(hands).ok and len(hands) == 2
    assert [(c["type"], c["seat"]) for c in hands[1][1]["seat_changes"]] == [
        ("sit_down", 2),
        ("stand_up", 2),
    ]

    def codes(edit: Callable[[History], Any]) -> list[Any]:
        changed = copy.deepcopy(hands)
        edit(changed[1][1])
        return [(d.code, d.location) for d in verify_match(changed).discrepancies]

    # eve still seated at hand 2: her stand-up left out
    assert codes(lambda h: h["seat_changes"].pop()) == [
        (Code.CHAIN_STATE_MISMATCH, "initial_state.seats[2].player_id")
    ]
    # leaving a seat before anyone sat there
    assert codes(lambda h: h["seat_changes"].reverse()) == [
        (Code.ILLEGAL_ACTION, "seat_changes[0].seat")
    ]


@pytest.mark.parametrize(
    "directory", AFTER_HAND, ids=[str(m.relative_to(GOLDEN)) for m in AFTER_HAND]
)
def test_a_player_stood_up_by_the_move_that_ended_her_hand_chains_and_a_change_is_caught(
    directory: Path,
) -> None:
    hands, feed = match_inputs(directory)
    assert verify_match(hands, feed).ok
    second, third = hands[1][1], hands[2][1]
    # cy played hand 2 to its end and was settled in it (history and feed); the server stood
    # her up in the commit of the hand's last move, at that move's time; dee then sat down
    assert second["initial_state"]["seats"][2]["player_id"] == "cy"
    assert 2 in {p["seat"] for p in second["settlement"]["players"]}
    assert [s["player_id"] for s in feed[1][1]["seats"] if s["seat"] == 2] == ["cy"]
    changes = third["seat_changes"]
    assert [(c["type"], c["seat"]) for c in changes] == [("stand_up", 2), ("sit_down", 2)]
    assert changes[0]["at_ms"] == second["actions"][-1]["at_ms"] == second["settled_at_ms"]
    assert third["initial_state"]["seats"][2] == {
        "player_id": "dee", "points": 0, "fantasyland": 0, "fantasyland_streak": 0,
    }  # fmt: skip

    def codes(edit: Callable[[History], Any]) -> list[Any]:
        changed = copy.deepcopy(hands)
        edit(changed[2][1])
        return [(d.code, d.source, d.location) for d in verify_match(changed).discrepancies]

    # cy still seated (her stand-up left out): dee cannot sit in her seat
    assert codes(lambda h: h["seat_changes"].pop(0)) == [
        (Code.ILLEGAL_ACTION, hands[2][0], "seat_changes[0].seat")
    ]
    # cy's points carried over to dee
    assert codes(lambda h: h["initial_state"]["seats"][2].update(points=5)) == [
        (Code.CHAIN_STATE_MISMATCH, hands[2][0], "initial_state.seats[2].points"),
        (Code.CHAIN_STATE_MISMATCH, hands[3][0], "initial_state.seats[2].points"),
    ]


@pytest.mark.parametrize(
    "directory", JOINED_IN_HAND, ids=[str(m.relative_to(GOLDEN)) for m in JOINED_IN_HAND]
)
def test_a_button_moved_to_a_seat_taken_during_the_hand_verifies_and_is_chained(
    directory: Path,
) -> None:
    hands, feed = match_inputs(directory)
    report = verify_match(hands, feed)
    assert report.ok, [str(d) for d in report.discrepancies]
    first = hands[0][1]
    # ann (seat 0, the button) and cy (seat 2) play hand 1; bob sits down at seat 1 during it,
    # and the button moves to him as it ends: the replay of hand 1 alone would give seat 2
    assert (first["button"], first["button_next"]) == (0, 1)
    assert [s["player_id"] for s in first["initial_state"]["seats"]] == ["ann", "", "cy"]
    assert [(c["type"], c["seat"]) for c in hands[1][1]["seat_changes"]] == [("sit_down", 1)]
    alone = check_history(first)
    assert alone.ok and alone.notes == (
        "button_next: seat 1, empty when the hand began: taken during the hand, as only the "
        "next hand's seat_changes can show (a match with that hand checks it)",
    )

    def codes(edit: Callable[[list[tuple[str, Any]]], Any]) -> list[Any]:
        changed = copy.deepcopy(hands)
        edit(changed)
        return [(d.code, d.source, d.location) for d in verify_match(changed).discrepancies]

    # the button at seat 1 with nobody sitting down there: the chain says so
    assert codes(lambda h: h[1][1]["seat_changes"].clear())[0] == (
        Code.CHAIN_STATE_MISMATCH, hands[0][0], "button_next",
    )  # fmt: skip
    # a seat the button did not pass on its way to cy's (ann's own): the replay's stands
    changed = copy.deepcopy(first)
    changed["button_next"] = 0
    refused = check_history(changed).discrepancy
    assert refused is not None and (refused.code, refused.location, refused.message) == (
        Code.SETTLEMENT_MISMATCH, "button_next", "recorded 0, recomputed 2",
    )  # fmt: skip
