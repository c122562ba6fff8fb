"""Inputs at the edges of what ``ofc verify`` reads, each judged as the Node verifier judges it
(clients/node/test/verify.test.js holds the same cases with the same expected answers): a
differential fuzz of the two found each of these answered differently.

Histories: a format version past 2^53 is newer, never malformed; JSON nested more than 500
deep, or an integer of more than 4300 digits, is not JSON (fixed limits, where Python's own
moved with its call stack); a card with a character Python's ``str.strip`` removes reads as
that card, in the wrong form. Feeds: JSON Lines end at ``\\n`` only; each line is strict JSON
(no NaN, UTF-8); a whole number written ``1.0`` is no integer; a protobuf JSON record's integers
are JSON integers or strings of digits. Matches: a hand numbered 0 takes no place in the
chain.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from ofc.verify import check_history_json, verify_match
from ofc_cli.cmd_verify import read_feed

GOLDEN = Path(__file__).parents[1] / "golden"
PLAY = GOLDEN / "971f768" / "play-classic-2.json"
FANTASYLAND_SET = GOLDEN / "d3fcbf2" / "explicit-fantasyland-pineapple-3.json"  # actions[11]
MATCH = GOLDEN / "971f768" / "match"


def verdict(text: str | bytes) -> tuple[str, str]:
    report = check_history_json(text)
    if report.ok:
        return ("OK", "")
    assert report.discrepancy is not None
    return (report.discrepancy.code.value, report.discrepancy.location)


def history(path: Path = PLAY) -> Any:
    return json.loads(path.read_text())


def test_a_format_version_past_2_to_the_53_is_newer() -> None:
    for version in (2**53 - 1, 2**53, 2**64):
        assert verdict(json.dumps({**history(), "format_version": version})) == (
            "NEWER_FORMAT_VERSION",
            "format_version",
        )


@pytest.mark.parametrize(("depth", "refused"), [(500, False), (501, True), (990, True)])
def test_json_nested_more_than_500_deep_is_not_json(depth: int, refused: bool) -> None:
    """``depth`` arrays and objects one inside another: the history's object and, under a key
    it does not know (and ignores), arrays."""
    text = json.dumps(history())
    nested = "[" * (depth - 1) + "]" * (depth - 1)
    report = check_history_json(text.replace("{", '{"x": ' + nested + ", ", 1))
    if not refused:
        assert report.ok
        return
    assert report.discrepancy is not None
    assert (report.discrepancy.message, report.discrepancy.location) == (
        "not JSON: nested too deeply",
        "",
    )


@pytest.mark.parametrize(("digits", "refused"), [(4300, False), (4301, True)])
def test_an_integer_of_more_than_4300_digits_is_not_json(digits: int, refused: bool) -> None:
    text = json.dumps(history()).replace("{", '{"x": ' + "1" * digits + ", ", 1)
    report = check_history_json(text)
    message = "" if report.discrepancy is None else report.discrepancy.message
    assert (message == "not JSON: a number of more than 4300 digits") == refused


@pytest.mark.parametrize(
    ("end", "location"),
    [
        ("\x1c", "actions[11].top[0]"),  # Python's str.strip takes it off (JavaScript's trim not)
        ("\x85", "actions[11].top[0]"),
        ("\u3000", "actions[11].top[0]"),
        ("\ufeff", "actions[11].top"),  # JavaScript's trim takes it off (Python's strip not)
    ],
)
def test_a_card_with_a_character_str_strip_removes_reads_as_that_card(
    end: str, location: str
) -> None:
    h = history(FANTASYLAND_SET)
    assert h["actions"][11]["type"] == "set_fantasyland"
    h["actions"][11]["top"][0] += end
    assert verdict(json.dumps(h)) == ("MALFORMED_HISTORY", location)


def match_hands() -> list[tuple[str, Any]]:
    return [(p.name, json.loads(p.read_text())) for p in sorted(MATCH.glob("hand-????.json"))]


def feed_lines() -> list[str]:
    return (MATCH / "feed.jsonl").read_text().splitlines()


def feed_found(tmp_path: Path, text: str | bytes) -> list[tuple[str, str, str]]:
    path = tmp_path / "feed.jsonl"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    report = verify_match(match_hands(), read_feed(str(path)))
    return [(d.code.value, d.source.rsplit("/", 1)[-1], d.location) for d in report.discrepancies]


def test_the_golden_feed_verifies(tmp_path: Path) -> None:
    assert feed_found(tmp_path, "\n".join(feed_lines()) + "\n") == []


@pytest.mark.parametrize(
    ("old", "new", "location"),
    [
        ('"settled_at_ms":1796158703826', '"settled_at_ms":1796158703826.0', "settled_at_ms"),
        ('"hand_number":1,', '"hand_number":1.0,', ""),  # not a settlement record
        ('"player_id":"ann"', '"player_id":"ann\\u2028"', "seats[0].player_id"),
        ('"player_id":"ann"', '"player_id":"ann\\u001c\\u0085"', "seats[0].player_id"),
        # as they are, not escaped: str.splitlines would break the line at either
        ('"player_id":"ann"', '"player_id":"ann\u2028\x85"', "seats[0].player_id"),
    ],
)
def test_a_feed_record_is_judged_as_written(
    tmp_path: Path, old: str, new: str, location: str
) -> None:
    lines = feed_lines()
    assert old in lines[0]
    lines[0] = lines[0].replace(old, new, 1)
    assert feed_found(tmp_path, "\n".join(lines) + "\n") == [
        ("FEED_RECORD_MISMATCH", "feed.jsonl:1", location)
    ]


@pytest.mark.parametrize(
    "bad",
    [
        lambda line: line.replace('"capped_points":', '"capped_points":NaN,"x":', 1),
        lambda line: line.replace('"format":1', '"format":1,"format":1', 1),  # a key twice
        lambda line: line.encode().replace(b"ann", b"ann\xff", 1),  # not UTF-8
    ],
    ids=["NaN", "a key twice", "not UTF-8"],
)
def test_a_feed_that_is_not_strict_json_is_refused(tmp_path: Path, bad: Any) -> None:
    lines: list[Any] = feed_lines()
    lines[0] = bad(lines[0])
    text = b"\n".join(x if isinstance(x, bytes) else x.encode() for x in lines)
    path = tmp_path / "feed.jsonl"
    path.write_bytes(text)
    with pytest.raises(ValueError):
        read_feed(str(path))


def subscribe_line(record: dict[str, Any]) -> dict[str, Any]:
    """A stored record as ``Subscribe`` answers it in protobuf JSON (camelCase, 64-bit
    integers as strings)."""

    def camel(key: str) -> str:
        first, *rest = key.split("_")
        return first + "".join(w.title() for w in rest)

    wide = {"hand_number", "settled_at_ms", "points", "units", "total_points", "total_units",
            "capped_points"}  # fmt: skip

    def convert(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {camel(k): convert(v, k) for k, v in value.items() if v not in (None, 0, False)}
        if isinstance(value, list):
            return [convert(v) for v in value]
        return str(value) if key in wide else value

    return {"record": convert(record)}


@pytest.mark.parametrize(
    ("edit", "accepted"),
    [
        (lambda r: r, True),
        (lambda r: r["pairs"][0].update(seatA=True), False),
        (lambda r: r["pairs"][0].update(points=r["pairs"][0]["points"] + "\n"), False),
        (lambda r: r.update(handNumber=1.0), False),
        (lambda r: r.update(handNumber="1e0"), False),
        (lambda r: r.update(unitValue=-1), False),
        (lambda r: r.update(tableId=5), False),
        (lambda r: r["seats"][0].update(fouled="true"), False),
    ],
    ids=["as written", "a bool", "a newline", "1.0", "1e0", "out of range", "a number", "a str"],
)
def test_a_protobuf_json_record_takes_integers_as_printers_write_them(
    tmp_path: Path, edit: Any, accepted: bool
) -> None:
    lines = [subscribe_line(json.loads(line)) for line in feed_lines()]
    edit(lines[0]["record"])
    text = "".join(json.dumps(line) + "\n" for line in lines)
    if accepted:
        assert feed_found(tmp_path, text) == []
        return
    with pytest.raises(ValueError, match="not a settlement record"):
        feed_found(tmp_path, text)


def test_a_hand_numbered_0_takes_no_place_in_the_chain() -> None:
    hands = copy.deepcopy(match_hands())
    hands[0][1]["hand_number"] = 0
    report = verify_match(hands)
    assert [(d.code.value, d.source, d.location) for d in report.discrepancies] == [
        ("MALFORMED_HISTORY", "hand-0001.json", "hand_number")
    ]
