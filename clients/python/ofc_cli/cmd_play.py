"""``ofc play``: one complete hand through the engine, every seat played by the timeout policy.

Prints the hand history as JSON (seeds, commitment, every dealt batch, every action in
order, final boards, settlement): an audit example and a fixture. Nothing reads a clock or
draws a random number — the actions carry ``at_ms`` 0, 1, 2, ... — so the same arguments
always print the same bytes.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ofc.engine import SitDown, StartHand, Timeout, apply, new_match, seats_to_act
from ofc.engine_json import hand_history
from ofc.shuffle import parse_seed_hex

from ofc_cli.args import utf8


def register(subparsers: Any) -> None:
    play = subparsers.add_parser(
        "play", help="play one hand with the timeout policy for every seat; print its history"
    )
    play.add_argument("--seed", required=True, help="server seed: 32 bytes as 64 hex digits")
    play.add_argument("--ruleset", default="classic", help="preset name (default classic)")
    play.add_argument("--players", type=int, default=2, help="seated players (default 2)")
    play.add_argument("--client-seed", default="", help="text, UTF-8 encoded (may be empty)")
    play.set_defaults(handler=run_play)


def run_play(args: argparse.Namespace) -> int:
    seed = parse_seed_hex(args.seed)
    state = new_match(args.ruleset, seats=args.players)
    for seat in range(args.players):
        state, _ = apply(state, SitDown(seat, f"player-{seat}"))
    initial = state
    actions: list[Any] = [StartHand(seed, utf8(args.client_seed, "client_seed"), at_ms=0)]
    state, _ = apply(state, actions[0])
    while waiting := seats_to_act(state):
        action = Timeout(waiting[0], at_ms=len(actions))
        state, _ = apply(state, action)
        actions.append(action)
    print(json.dumps(hand_history(initial, actions), indent=2))
    return 0
