"""``bench.hand_phases`` times the calls of whole hands and splits them by phase."""

from __future__ import annotations

import re

import pytest

from bench import hand_phases


def test_each_hand_gives_one_start_first_and_last_move_and_its_middle_ones(
    redis_url: str,
) -> None:
    found = hand_phases.measure(redis_url, 2)
    assert len(found["StartHand"]) == len(found["first"]) == len(found["last"]) == 2
    # two seats of classic: 5 cards placed at once, then 8 streets of one: 18 moves a hand
    assert len(found["moves"]) == 36
    assert len(found["middle"]) == 36 - 2 * 2
    assert len(found["all"]) == 36 + 2  # and each hand's StartHand
    assert all(cpu > 0 for cpu in found["all"])


def test_the_figures_are_printed_with_the_all_in_ratio(
    redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert hand_phases.main(["--hands", "1", "--redis-url", redis_url]) == 0
    out = capsys.readouterr().out
    for phase in ("StartHand", "PlaceCards, first", "PlaceCards, middle", "PlaceCards, last"):
        assert re.search(rf"^{phase} +\d+\.\d\b", out, re.M), out
    all_in = r"^all in, per PlaceCards +\d+\.\d += \d+\.\d\dx a middle move \(hands 1, "
    assert re.search(all_in, out, re.M), out


def test_a_hand_is_counted_from_its_start_hand_to_the_next_one() -> None:
    calls = [("CreateTable", 9.0), ("StartHand", 4.0), ("PlaceCards", 2.0),
             ("PlaceCards", 1.0), ("PlaceCards", 3.0), ("StartHand", 5.0),
             ("PlaceCards", 2.0)]  # fmt: skip  # (the second hand is cut short: not counted)
    found = hand_phases.phases(calls)
    phases = (found["StartHand"], found["first"], found["middle"], found["last"])
    assert phases == ([4.0], [2.0], [1.0], [3.0])
    assert found["all"] == [4.0, 2.0, 1.0, 3.0]
