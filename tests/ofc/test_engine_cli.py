"""``ofc play``: one hand through the engine with the timeout policy; byte-identical output."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from typing import Any

import pytest
from ofc.cards import card_codes
from ofc.codec import action_from_dict, board_to_dict, state_from_dict
from ofc.engine import replay
from ofc.shuffle import shuffle_deck
from ofc_cli.main import main

SEED = "00" * 31 + "2a"


def play(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["play", *args])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize(
    ("ruleset", "players"),
    [("classic", 2), ("classic", 4), ("pineapple", 3), ("progressive-pineapple", 2), ("turbo", 3)],
)
def test_play_prints_a_complete_reproducible_history(
    capsys: pytest.CaptureFixture[str], ruleset: str, players: int
) -> None:
    args = ["--seed", SEED, "--ruleset", ruleset, "--players", str(players), "--client-seed", "t1"]
    status, out, err = play(capsys, *args)
    assert status == 0 and err == ""
    assert play(capsys, *args)[1] == out  # the same arguments, the same bytes
    history: dict[str, Any] = json.loads(out)
    seed = bytes.fromhex(SEED)
    assert history["server_seed"] == SEED and history["client_seed"] == b"t1".hex()
    assert history["commitment"] == hashlib.sha256(seed).hexdigest()
    assert history["ruleset"] == ruleset and history["hand_number"] == 1
    # Every dealt batch is the next slice of the ofc-shuffle-v1 deck.
    deck = [str(c) for c in shuffle_deck(seed, b"t1", 1)]
    position = 0
    for deal in history["deals"]:
        assert deal["position"] == position
        assert deal["cards"] == deck[position : position + deal["count"]]
        position += deal["count"]
    boards = history["boards"]
    assert len(boards) == players
    assert all(len(b["top"]) + len(b["middle"]) + len(b["bottom"]) == 13 for b in boards)
    assert sum(p["points"] for p in history["settlement"]["players"]) == 0
    assert history["actions"][0]["type"] == "start_hand"
    assert all("resolved" in a for a in history["actions"][1:])
    assert [a["at_ms"] for a in history["actions"]] == list(range(len(history["actions"])))
    # The history alone replays to the same boards.
    initial = state_from_dict(history["initial_state"])
    final, _ = replay(initial, [action_from_dict(a) for a in history["actions"]])
    assert final.hand is not None
    replayed = [
        {"seat": s.seat, **board_to_dict(s.board), "discards": card_codes(s.discards)}
        for s in final.hand.seats
    ]
    assert replayed == boards


def test_play_output_does_not_depend_on_the_process() -> None:
    command = [sys.executable, "-m", "ofc_cli.main", "play", "--seed", SEED,
               "--ruleset", "pineapple", "--players", "3"]  # fmt: skip
    outputs = {
        subprocess.run(
            command,
            capture_output=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        ).stdout
        for hash_seed in ("1", "2")
    }
    assert len(outputs) == 1


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--seed", "abc"], "INVALID_SEED"),
        (["--seed", SEED, "--players", "5"], "WRONG_PLAYER_COUNT"),
        (["--seed", SEED, "--ruleset", "pineapple", "--players", "4"], "WRONG_PLAYER_COUNT"),
        (["--seed", SEED, "--ruleset", "omaha"], "UNKNOWN_RULESET"),
    ],
)
def test_play_reports_bad_input(
    capsys: pytest.CaptureFixture[str], args: list[str], reason: str
) -> None:
    status, out, err = play(capsys, *args)
    assert status == 2 and out == ""
    assert err.startswith(f"error: {reason}")
