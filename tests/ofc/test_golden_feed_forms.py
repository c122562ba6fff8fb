"""Live tables' settlement feeds as releases delivered them, in every form an auditor may
hold: the stream's records (``feed.raw.jsonl``), ``Subscribe`` answers in protobuf JSON
(``feed.subscribe.jsonl``) and the same with the .proto's field names
(``feed.subscribe-protonames.jsonl``). ``tests/golden/<commit>/feed-forms/`` holds a table of
that commit played over gRPC with its Fantasyland hands (``SOURCE`` says how): 10c2cc1's
records are format 1 and its answers carry no ``format``; 7cf969b's are format 2, with the
seats' Fantasyland fields. Each form verifies with its hands, and a changed Fantasyland
field is caught in each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ofc.verify import Code, verify_match
from ofc_cli.cmd_verify import read_feed

GOLDEN = Path(__file__).parents[1] / "golden"
TABLES = sorted(p for p in GOLDEN.glob("*/feed-forms") if p.is_dir())
FORMS = ("feed.raw.jsonl", "feed.subscribe.jsonl", "feed.subscribe-protonames.jsonl")


def hands(directory: Path) -> list[tuple[str, Any]]:
    return [(p.name, json.loads(p.read_text())) for p in sorted(directory.glob("hand-????.json"))]


def test_both_releases_are_here() -> None:
    assert [p.parent.name for p in TABLES] == ["10c2cc1", "7cf969b"]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("table", TABLES, ids=lambda p: p.parent.name)
def test_every_form_verifies_with_its_hands(table: Path, form: str) -> None:
    played = hands(table)
    feed = read_feed(str(table / form))
    assert len(feed) == len(played) >= 5
    report = verify_match(played, feed)
    count = len(played)
    assert (report.hands, report.verified, list(report.discrepancies)) == (count, count, [])
    owed = [f for _, h in played for f in h["fantasyland_next"]]
    assert owed, "the table played Fantasyland hands"
    formats = {record["format"] for _, record in feed}
    assert formats == ({1} if table.parent.name == "10c2cc1" else {2})


def _set_fantasyland(line: dict[str, Any], value: int) -> None:
    """Seat 0's Fantasyland owed, in whichever form ``line`` is."""
    record = line.get("record", line)
    seat = next(s for s in record["seats"] if s.get("seat", 0) == 0)
    key = next(
        (k for k in ("fantasyland_next_cards", "fantasylandNextCards") if k in seat),
        "fantasylandNextCards" if "settlementId" in record else "fantasyland_next_cards",
    )
    seat[key] = value


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("table", TABLES, ids=lambda p: p.parent.name)
def test_a_changed_fantasyland_field_is_caught_in_every_form(
    table: Path, form: str, tmp_path: Path
) -> None:
    lines = [json.loads(line) for line in (table / form).read_text().splitlines() if line]
    _set_fantasyland(lines[0], 17)  # no hand of these tables owed 17 cards
    changed = tmp_path / form
    changed.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = verify_match(hands(table), read_feed(str(changed)))
    assert [(d.code, d.hand_number, d.location) for d in report.discrepancies] == [
        (Code.FEED_RECORD_MISMATCH, 1, "seats[0].fantasyland_next_cards")
    ]
