"""``ofc solve``: text and JSON output, rule switches, and bad input (one line, exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from ofc_cli.main import main

HAND = "Qc Qd Qh 9s 8h 7d 6c 5s Ac Kc Tc 4c 2c"
QUADS = "8c 5d 3s 6h 5c 3d Ah As 5s 5h 7d Qh Kh"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["solve", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, *HAND.split(), "--json")
    assert (status, err) == (0, "")
    assert json.loads(out) == {
        "top": ["Qh", "Qd", "Qc"],
        "middle": ["9s", "8h", "7d", "6c", "5s"],
        "bottom": ["Ac", "Kc", "Tc", "4c", "2c"],
        "discards": [],
        "royalties": 28,
        "fantasyland_next": True,
        "fantasyland_next_cards": 13,
        "objective": 38,
    }


def test_text(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, HAND)  # one argument with spaces works too
    assert status == 0
    assert out.splitlines() == [
        "top        Qh Qd Qc",
        "middle     9s 8h 7d 6c 5s",
        "bottom     Ac Kc Tc 4c 2c",
        "discards   -",
        "royalties  28",
        "fantasyland_next  yes, 13 cards (stay rule)",
        "objective  38",
    ]


def test_progressive_17_cards_with_discards(capsys: pytest.CaptureFixture[str]) -> None:
    cards = "As Ah Ad Ac Ks Kh Kd Kc Qs Qh Qd Qc Js Jh Jd Jc Ts"
    status, out, _ = run(capsys, cards, "--ruleset", "progressive-pineapple", "--json")
    assert status == 0
    result = json.loads(out)
    assert result["discards"] == ["Qc", "Jh", "Jd", "Jc"]
    assert (result["royalties"], result["fantasyland_next"], result["objective"]) == (59, True, 69)


def test_not_in_fantasyland_uses_the_entry_rule(capsys: pytest.CaptureFixture[str]) -> None:
    # In Fantasyland, quad fives on the bottom stay in (10 + 10); not in it, quads earn
    # nothing more and the flush-over-full-house board's 14 royalties win.
    _, out, _ = run(capsys, QUADS, "--json", "--in-fantasyland")
    assert (json.loads(out)["objective"], json.loads(out)["fantasyland_next"]) == (20, True)
    _, out, _ = run(capsys, QUADS, "--json", "--not-in-fantasyland")
    assert (json.loads(out)["objective"], json.loads(out)["fantasyland_next"]) == (14, False)


def test_fantasyland_value(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, QUADS, "--json", "--fantasyland-value", "0")
    assert json.loads(out)["bottom"] == ["5s", "5d", "5c", "3s", "3d"]


def test_rule_switches_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["solve", HAND, "--in-fantasyland", "--not-in-fantasyland"])
    assert raised.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["As", "Ks"],
            "error: WRONG_CARD_COUNT at cards: a Fantasyland hand has 13..17 cards, got 2",
        ),
        ([HAND.replace("Qd", "Qc")], "error: DUPLICATE_CARD at cards: duplicate card Qc"),
        ([HAND, "Xx"], "error: INVALID_CARD: invalid card: 'Xx'"),
        ([HAND, "--ruleset", "nope"], "error: UNKNOWN_RULESET at ruleset: unknown ruleset: 'nope'"),
        (
            [HAND, "--fantasyland-value", "-1"],
            "error: INVALID_INPUT at fantasyland_value: fantasyland_value must be >= 0, got -1",
        ),
    ],
)
def test_bad_input_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], line: str
) -> None:
    status, out, err = run(capsys, *argv)
    assert (status, out) == (2, "")
    assert len(err.splitlines()) == 1
    assert err.startswith(line)


def test_installed_command_exit_status() -> None:
    process = subprocess.run(
        [sys.executable, "-m", "ofc_cli.main", "solve", "As", "Ks", "Qs"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert process.returncode == 2
    assert process.stderr.startswith("error: WRONG_CARD_COUNT")
