"""``ofc play``: one complete hand through the engine, every seat played by the timeout policy.

Prints the hand history as JSON (seeds, commitment, every dealt batch, every action in
order, final boards, settlement): an audit example and a fixture. Nothing reads a clock or
draws a random number — the actions carry ``at_ms`` 0, 1, 2, ..., or with
``--turn-time-ms`` each timeout comes exactly at its deadline (and the history records the
clock) — so the same arguments always print the same bytes.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ofc.codec import MAX_TURN_TIME_MS, HandContext, TurnClock, hand_history
from ofc.engine import SitDown, StartHand, new_match, replay
from ofc.errors import InvalidInputError
from ofc.policy import play_by_timeouts
from ofc.shuffle import parse_seed_hex

from ofc_cli.args import integer, utf8


def register(subparsers: Any) -> None:
    play = subparsers.add_parser(
        "play", help="play one hand with the timeout policy for every seat; print its history"
    )
    play.add_argument("--seed", required=True, help="server seed: 32 bytes as 64 hex digits")
    play.add_argument("--ruleset", default="classic", help="preset name (default classic)")
    play.add_argument("--players", type=integer, default=2, help="seated players (default 2)")
    play.add_argument("--client-seed", default="", help="text, UTF-8 encoded (may be empty)")
    play.add_argument(
        "--turn-time-ms",
        type=integer,
        metavar="MS",
        help="play with turn clocks: each batch's turn runs MS, a Fantasyland hand 4 x MS "
        "(the history records the clock and each timeout's deadline)",
    )
    play.set_defaults(handler=run_play)


def run_play(args: argparse.Namespace) -> int:
    seed = parse_seed_hex(args.seed)
    clock = None
    if args.turn_time_ms is not None:
        if not 1 <= args.turn_time_ms <= MAX_TURN_TIME_MS:
            raise InvalidInputError(
                f"--turn-time-ms must be 1..{MAX_TURN_TIME_MS}", field="turn_time_ms"
            )
        clock = TurnClock(args.turn_time_ms, 4 * args.turn_time_ms)
    sit = tuple(SitDown(seat, f"player-{seat}") for seat in range(args.players))
    initial, _ = replay(new_match(args.ruleset, seats=args.players), sit)
    start = StartHand(seed, utf8(args.client_seed, "client_seed"))
    actions = play_by_timeouts(initial, start, clock=clock)
    context = HandContext(clock=clock, seat_units=(0,) * args.players, seat_changes=sit)
    print(json.dumps(hand_history(initial, actions, context), indent=2))
    return 0
