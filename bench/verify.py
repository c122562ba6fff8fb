"""Hand histories verified per second, as an auditor verifies a day's play.

    .venv/bin/python -m bench.verify [--hands 600] [--jobs 1 2] [--node] [--json]

Writes ``--hands`` histories of format 3 (with a clock, every move a timeout: a third
classic with 2 seats, a third Pineapple with 3, a third progressive Pineapple with 3 of
which one plays a 15-card Fantasyland hand) to a temporary directory, one file each, then
times ``ofc verify -q -j N DIR`` in this process for each N: every check of every file,
reading included, the process pool's start included, in wall-clock time and in CPU time
(of this process and its workers: what the figure is on a machine others share). The
timeouts carry a simple legal move (rows bottom first), so writing the histories is quick;
verifying one costs what verifying any timeout does, since the verifier never runs a
policy. ``--node`` also times the independent Node verifier on the same files,
``node clients/node/verify.js -q -j N DIR`` (a child process: its start included).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ofc import engine
from ofc.codec import HandContext, TurnClock, hand_history
from ofc.rulesets import ROWS
from ofc_cli.main import main as ofc_main

CLOCK = TurnClock(30_000, 120_000)
VERIFY_JS = Path(__file__).resolve().parents[1] / "clients" / "node" / "verify.js"
TABLES: tuple[tuple[str, int, dict[int, int]], ...] = (
    ("classic", 2, {}),
    ("pineapple", 3, {}),
    ("progressive-pineapple", 3, {1: 15}),
)


def _bottom_first(
    state: engine.MatchState, seat: int, at: int
) -> engine.Place | engine.SetFantasyland:
    hand = state.hand
    assert hand is not None
    me = hand.seat(seat)
    cards = list(me.pending)
    if me.in_fantasyland:
        return engine.SetFantasyland(
            seat, tuple(cards[:3]), tuple(cards[3:8]), tuple(cards[8:13]), tuple(cards[13:]), at
        )
    street = state.ruleset.streets[hand.street]
    discard = cards.pop() if street.deal > street.place else None
    room = {r: r.size - len(me.board.row(r)) for r in reversed(ROWS)}
    placements = []
    for card in cards:
        row = next(r for r, free in room.items() if free)
        room[row] -= 1
        placements.append((card, row))
    return engine.Place(seat, tuple(placements), discard, at)


def history(number: int) -> dict[str, Any]:
    """The ``number``-th history: one hand at a table of the mix, every move a timeout at
    its deadline."""
    ruleset, seats, owed = TABLES[number % len(TABLES)]
    sit = tuple(engine.SitDown(s, f"player-{s}") for s in range(seats))
    table, _ = engine.replay(engine.new_match(ruleset, seats=seats), sit)
    players = [
        dataclasses.replace(s, fantasyland=owed.get(i, 0)) for i, s in enumerate(table.seats)
    ]
    table = dataclasses.replace(table, seats=tuple(players))
    seed = hashlib.sha256(b"bench-verify-%d" % number).digest()
    start = engine.StartHand(seed, b"bench", 1_000)
    actions: list[engine.Action] = [start]
    state, events = engine.apply(table, start)
    dealt: dict[int, int] = {}
    now = start.at_ms
    while waiting := engine.seats_to_act(state):
        dealt.update(
            (e.seat, now)
            for e in events
            if isinstance(e, engine.CardsDealt) and e.street is not None
        )
        hand = state.hand
        assert hand is not None
        deadlines = {
            s: start.at_ms + CLOCK.fantasyland_time_limit_ms
            if hand.seat(s).in_fantasyland
            else dealt[s] + CLOCK.turn_time_limit_ms
            for s in waiting
        }
        seat = min(waiting, key=deadlines.__getitem__)
        now = max(now, deadlines[seat])
        move = _bottom_first(state, seat, now)
        actions.append(engine.Timeout(seat, move, "bench-bottom-first-1", now, deadlines[seat]))
        state, events = engine.apply(state, actions[-1])
    context = HandContext("", CLOCK, (0,) * seats, sit)
    return hand_history(table, actions, context)


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished workers (user + system)."""
    own, workers = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime


def _rate(hands: int, elapsed: float, used: float) -> dict[str, float]:
    return {
        "seconds": elapsed,
        "per_second": hands / elapsed,
        "cpu_seconds": used,  # this process and its workers, all cores
        "cpu_ms_per_history": 1000 * used / hands,
    }


def _node_rate(node: str, directory: str, hands: int, count: int) -> dict[str, float]:
    started, cpu = time.perf_counter(), _cpu_seconds()
    done = subprocess.run(
        [node, str(VERIFY_JS), "-q", "-j", str(count), directory],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed, used = time.perf_counter() - started, _cpu_seconds() - cpu
    assert done.returncode == 0 and done.stdout == f"{hands} verified, 0 failed\n", done.stdout
    return _rate(hands, elapsed, used)


def run(hands: int, jobs: Sequence[int], *, node: str | None = None) -> dict[str, Any]:
    figures: dict[str, Any] = {"hands": hands, "cpus": os.cpu_count(), "rates": {}}
    if node is not None:
        figures["node_rates"] = {}
    with tempfile.TemporaryDirectory(prefix="ofc-bench-verify-") as directory:
        day = Path(directory)
        distinct = [json.dumps(history(n)) for n in range(min(hands, 30))]
        for n in range(hands):
            (day / f"hand-{n:05d}.json").write_text(distinct[n % len(distinct)])
        for count in jobs:
            out = io.StringIO()
            started, cpu = time.perf_counter(), _cpu_seconds()
            with contextlib.redirect_stdout(out):
                status = ofc_main(["verify", "-q", "-j", str(count), directory])
            elapsed, used = time.perf_counter() - started, _cpu_seconds() - cpu
            assert status == 0 and out.getvalue() == f"{hands} verified, 0 failed\n", out.getvalue()
            figures["rates"][str(count)] = _rate(hands, elapsed, used)
            if node is not None:
                figures["node_rates"][str(count)] = _node_rate(node, directory, hands, count)
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.verify", description=__doc__)
    parser.add_argument("--hands", type=int, default=600)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--node", action="store_true", help="also time clients/node/verify.js")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    node = shutil.which("node") if args.node else None
    if args.node and node is None:
        parser.error("--node: node is not on PATH")
    figures = run(args.hands, args.jobs, node=node)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"ofc verify -q -j N DIR over {args.hands} histories (format 3, {os.cpu_count()} cores):")
    for name, key in (("ofc verify", "rates"), ("node verify.js", "node_rates")):
        for jobs, rate in figures.get(key, {}).items():
            print(
                f"  {name} -j {jobs}: {rate['per_second']:8.0f} histories/s  "
                f"({rate['seconds']:.2f} s; {rate['cpu_ms_per_history']:.1f} ms of CPU per history)"
            )
    print(
        f"  (load average {os.getloadavg()[0]:.1f}: other work on the machine slows the wall clock)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
