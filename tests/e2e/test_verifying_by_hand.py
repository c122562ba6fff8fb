"""docs/hand-history.md's "Verifying by hand" runs as written on golden histories: the
commitment's two lines agree, the deck ``ofc deal`` derives holds every deal at its position,
and the score of the final boards is the settlement's. The histories cover what broke the
steps before: a table whose players bring seeds (a combined client seed with zero bytes),
decks with jokers, Fantasyland and a seat with a client seed of its own."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.docs import sh_block

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "2edd693"
HISTORIES = [
    "play-classic-2.json",
    "match/hand-0002.json",  # players' seeds, combined: zero bytes in the client seed
    "play-pineapple-jokers-3.json",  # 54 cards, ofc-shuffle-v2
    "joker-top-pineapple-jokers-2.json",
    "fantasyland-classic-4.json",
]


def by_hand_steps() -> str:
    """The shell block under "### Verifying by hand"."""
    return sh_block(ROOT / "docs" / "hand-history.md", "### Verifying by hand")


def test_the_steps_read_a_bare_history_named_h() -> None:
    steps = by_hand_steps()
    assert steps.startswith("H=hand-7.json\n")
    assert "--client-seed-hex" in steps and "--jokers" in steps


@pytest.mark.parametrize("name", HISTORIES)
def test_the_documented_steps_verify_a_golden_history(name: str) -> None:
    for tool in ("bash", "jq", "xxd", "sha256sum"):
        assert shutil.which(tool), f"{tool} is needed to run the documented steps"
    history_path = GOLDEN / name
    history = json.loads(history_path.read_text())
    script = by_hand_steps().replace("H=hand-7.json", f"H={history_path}", 1)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no "ignored null byte" from the shell
    lines = done.stdout.splitlines()
    # 1. the commitment: sha256sum's digest, then the history's
    assert lines[0].split()[0] == lines[1] == history["commitment"]
    # 2. the deck: every deal is the deck's cards from its position
    assert lines[2] == f"commitment {history['commitment']}"
    deck = lines[3].split()
    assert len(deck) == history.get("deck_size", 52)
    for deal in history["deals"]:
        position, cards = deal["position"], deal["cards"]
        assert deck[position : position + len(cards)] == cards, deal
    # 5. the score, last: the settlement's points, seat by seat, when nothing the steps
    # leave to the reader (Fantasyland's cards owed, per-pair stakes) changes it
    score = json.loads(lines[-1]) if lines[-1].startswith("{") else None
    if score is not None and not history["initial_state"].get("pair_unit_values"):
        points = {p["id"]: p["points"] for p in score["players"]}
        players = zip(history["boards"], history["settlement"]["players"], strict=True)
        settled = {str(board["seat"]): player["points"] for board, player in players}
        assert points == settled
