"""clients/node against the service: a Node.js client plays a hand on a live ``ofc serve``,
and the independent JavaScript verifier (``verify.js``, Node's crypto only) accepts the hand
histories the service writes — for every preset, 2 and 3 players, Fantasyland blocks — and
rejects a tampered one. Needs ``node`` (>= 20) and the npm registry on first run
(``scripts/check_node.sh`` installs clients/node/node_modules with ``npm ci``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from ofc.codec import hand_history
from ofc.engine import (
    Action,
    MatchState,
    SitDown,
    StartHand,
    apply,
    new_match,
    replay,
    seats_to_act,
)
from ofc.policy import timeout
from ofc.verify import example_history

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = ROOT / "clients" / "node"
CHECK_NODE = ROOT / "scripts" / "check_node.sh"
OFC = Path(sys.executable).with_name("ofc")
API_KEY = "node-e2e-operator-key"
PRESETS = ("classic", "pineapple", "progressive-pineapple", "turbo")
SEEDS = ("00" * 32, "5eed" * 16)


def _run(args: list[str], *, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def node() -> str:
    """The node binary, with clients/node/node_modules installed from package-lock.json."""
    binary = shutil.which("node")
    if binary is None:
        pytest.fail("node is not on PATH: clients/node needs Node.js >= 20")
    installed = _run(["bash", str(CHECK_NODE), "--install-only"], timeout=300)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return binary


@pytest.fixture(scope="module")
def node_v3(node: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The node binary, when this tree's verify.js reads hand-history format 3 (what this
    release writes for every hand with a timeout and every live-table hand); the tests that
    need it are skipped for a verify.js that predates the format."""
    probe = tmp_path_factory.mktemp("format-3") / "probe.json"
    probe.write_text(json.dumps(example_history()))
    result = _verify(node, probe)
    if "unsupported 3" in result.stdout + result.stderr:
        pytest.skip("this tree's clients/node/verify.js predates hand-history format 3")
    return node


@pytest.fixture(scope="module")
def server_address() -> Iterator[str]:
    """A real ``ofc serve`` process (in-memory tables) with one operator key."""
    port = free_port()
    env = {**os.environ, "OFC_API_KEYS": API_KEY}
    process = subprocess.Popen(
        [str(OFC), "serve", "--listen", f"127.0.0.1:{port}", "--metrics-listen", "",
         "--http-listen", ""],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        address = f"127.0.0.1:{port}"
        with grpc.insecure_channel(address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            ready = health.Check(health_pb2.HealthCheckRequest(), timeout=20, wait_for_ready=True)
            assert ready.status == health_pb2.HealthCheckResponse.SERVING
        yield address
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _verify(node: str, *paths: Path) -> subprocess.CompletedProcess[str]:
    return _run([node, str(NODE_DIR / "verify.js"), *map(str, paths)])


def _ofc_play(seed: str, ruleset: str, players: int, client_seed: str = "") -> dict[str, Any]:
    args = [str(OFC), "play", "--seed", seed, "--ruleset", ruleset, "--players", str(players)]
    result = _run([*args, "--client-seed", client_seed])
    assert result.returncode == 0, result.stderr
    history: dict[str, Any] = json.loads(result.stdout)
    return history


def test_node_unit_tests_pass(node: str) -> None:
    """The spec's vectors (commitment, block 0, deck, rejection) and verify.js's own tests."""
    result = _run(["bash", str(CHECK_NODE)], timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# fail 0" in result.stdout
    assert "# pass 0" not in result.stdout


def test_play_js_plays_a_hand_against_a_live_server(
    node: str, node_v3: str, server_address: str, tmp_path: Path
) -> None:
    history_file = tmp_path / "hand-1.json"
    result = _run(
        [node, str(NODE_DIR / "play.js"), server_address, API_KEY, "--history", str(history_file)]
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)

    players = out["settlement"]["players"]
    assert len(players) == 2
    assert sorted(out["points"]) == ["node-ann", "node-bob"]
    assert sum(p["points"] for p in players) == 0
    assert sum(int(p["units"]) for p in players) == 0  # sint64 travels as a decimal string
    assert out["settlement"]["ruleset"] == "classic" and out["moves"] == 18
    assert out["watch_events"] > 0
    assert out["watch_events"] == sum(out["watch_event_types"].values())
    assert out["watch_event_types"]["cards_dealt"] == 18
    assert out["watch_event_types"]["cards_placed"] == 18
    assert out["watch_event_types"]["hand_settled"] == 1

    # The service's own history of that hand, over gRPC, passes the Node verifier.
    history = json.loads(history_file.read_text())
    assert history["commitment"] == out["commitment"]
    assert history["server_seed"] == out["server_seed"]
    verified = _verify(node, history_file)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert verified.stdout.startswith(f"OK {history_file}: hand 1, commitment {out['commitment']}")


def test_play_js_exits_non_zero_on_a_grpc_error(node: str, server_address: str) -> None:
    result = _run([node, str(NODE_DIR / "play.js"), server_address, "not-the-key"])
    assert result.returncode == 1
    assert "UNAUTHENTICATED" in result.stderr and "CreateTable" in result.stderr
    assert result.stdout == ""


def test_verify_js_accepts_every_preset_from_ofc_play(node_v3: str, tmp_path: Path) -> None:
    node = node_v3
    paths = []
    for seed in SEEDS:
        for ruleset in PRESETS:
            for players in (2, 3):
                path = tmp_path / f"{ruleset}-{players}p-{seed[:4]}.json"
                path.write_text(json.dumps(_ofc_play(seed, ruleset, players)))
                paths.append(path)
    # A non-ASCII client seed: its UTF-8 bytes, length-prefixed, go into every block.
    unicode_seed = tmp_path / "client-seed.json"
    unicode_seed.write_text(json.dumps(_ofc_play(SEEDS[1], "pineapple", 3, "tournoi-№7 ♠")))
    paths.append(unicode_seed)

    result = _verify(node, *paths)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(paths) == 17
    assert all(line.startswith(f"OK {p}: ") for line, p in zip(lines, paths, strict=True))
    # 3 players of classic take 3 * 13 cards; 3 of pineapple 3 * 17 (discards included).
    assert "3 seats, 27 batches (39 cards)" in lines[1]
    assert "3 seats, 15 batches (51 cards)" in lines[3]


def _policy_hand(table: MatchState, client_seed: bytes) -> dict[str, Any]:
    """The history of one hand at ``table``, every move the timeout policy's, made as the
    seat's own move (no timeout: the history keeps the version of its initial state)."""
    actions: list[Action] = [StartHand(bytes(range(32)), client_seed)]
    state, _ = apply(table, actions[0])
    while waiting := seats_to_act(state):
        actions.append(timeout(state, waiting[0], at_ms=len(actions)).move)
        state, _ = apply(state, actions[-1])
    return hand_history(table, actions)


GOLDEN = ROOT / "tests" / "golden"


def test_verify_js_accepts_the_golden_histories_of_earlier_releases(node: str) -> None:
    """Format versions 1 and 2, written by commits 10c2cc1 to 971f768 (tests/golden)."""
    paths = sorted(GOLDEN.glob("*/*.json")) + sorted(GOLDEN.glob("*/match/hand-????.json"))
    old = [p for p in paths if json.loads(p.read_text())["format_version"] < 3]
    assert len(old) >= 36
    result = _verify(node, *old)
    assert result.returncode == 0, result.stdout + result.stderr


def test_verify_js_accepts_the_golden_histories_of_format_3(node_v3: str) -> None:
    paths = sorted(GOLDEN.glob("*/*.json")) + sorted(GOLDEN.glob("*/match/hand-????.json"))
    new = [p for p in paths if json.loads(p.read_text())["format_version"] >= 3]
    assert new, "no golden history of format 3 yet"
    result = _verify(node_v3, *new)
    assert result.returncode == 0, result.stdout + result.stderr


def test_verify_js_checks_fantasyland_blocks_dealt_first(node: str, tmp_path: Path) -> None:
    """A hand 5 with a Fantasyland seat, played by the engine and written by hand_history."""
    table, _ = replay(
        new_match("pineapple", seats=3), [SitDown(0, "ann"), SitDown(1, "bob"), SitDown(2, "cy")]
    )
    owed = dataclasses.replace(table.seats[0], fantasyland=14)
    table = dataclasses.replace(table, seats=(owed, *table.seats[1:]), hands_played=4, button=1)
    history = _policy_hand(table, b"auditor-test")
    first = history["deals"][:3]
    assert [(d["seat"], d["street"], d["position"], d["count"]) for d in first] == [
        (0, None, 0, 14),  # seat 0 is second in turn order (2, 0, 1) but Fantasyland goes first
        (2, 0, 14, 5),
        (1, 0, 19, 5),
    ]
    path = tmp_path / "fantasyland.json"
    path.write_text(json.dumps(history))
    result = _verify(node, path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "hand 5," in result.stdout and "3 seats, 11 batches (48 cards)" in result.stdout


def test_verify_js_reads_version_2_histories_with_agreed_stakes(node: str, tmp_path: Path) -> None:
    """A table with pair unit values writes format_version 2: the deck and deals read the same."""
    table, _ = replay(
        new_match("classic", seats=3, pair_units={(0, 1): 20, (0, 2): 15}),
        [SitDown(0, "ann"), SitDown(1, "bob"), SitDown(2, "cy")],
    )
    history = _policy_hand(table, b"stakes")
    assert history["format_version"] == 2 and history["initial_state"]["pair_unit_values"]
    path = tmp_path / "stakes.json"
    path.write_text(json.dumps(history))
    result = _verify(node, path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 seats, 27 batches (39 cards)" in result.stdout


def test_verify_js_rejects_a_tampered_history(node_v3: str, tmp_path: Path) -> None:
    node = node_v3
    history = _ofc_play(SEEDS[1], "pineapple", 2)
    deal = history["deals"][4]
    original = deal["cards"][1]
    dealt = {card for d in history["deals"] for card in d["cards"]}
    replacement = next(
        r + s for r in "23456789TJQKA" for s in "cdhs" if r + s not in dealt
    )  # an undealt card, so the board check would also notice
    deal["cards"][1] = replacement
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(history))

    result = _verify(node, tampered)
    assert result.returncode == 1
    position = deal["position"] + 1
    assert result.stdout == (
        f"FAIL {tampered}: deals[4].cards[1]: expected {original} (deck position {position}), "
        f'got "{replacement}"\n'
    )

    history["deals"][4]["cards"][1] = original
    history["server_seed"] = "ff" + history["server_seed"][2:]
    reseeded = tmp_path / "reseeded.json"
    reseeded.write_text(json.dumps(history))
    result = _verify(node, reseeded)
    assert result.returncode == 1
    assert result.stdout.startswith(f"FAIL {reseeded}: commitment: SHA-256(server_seed) is ")
