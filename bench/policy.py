"""Timeout policy vs random placement: foul rate and points, heads-up through the engine.

    .venv/bin/python -m bench.policy [--hands 500] [--ruleset classic] [--json]

Hand ``i`` is a fresh two-seat table, server seed ``SHA-256("bench-policy-<i>")``: one seat
is played by the timeout policy (``Timeout`` actions, exactly what the table does when a
clock runs out), the other places every batch uniformly at random among the legal
placements (a ``random.Random(i)``; the discard too). The policy takes the first seat to act
on even hands and the second on odd ones. The same arguments give the same figures.
``run()`` returns them for an aggregate ``bench`` command.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from ofc.engine import (
    Event,
    HandSettled,
    MatchState,
    Place,
    SitDown,
    StartHand,
    Timeout,
    apply,
    new_match,
    seats_to_act,
)
from ofc.rulesets import PRESETS, ROWS, Row


@dataclass(frozen=True, slots=True)
class Figures:
    ruleset: str
    hands: int
    policy_foul_rate: float
    random_foul_rate: float
    policy_points: float  # average per hand; the random seat's is the negative (zero-sum)
    random_points: float
    policy_royalties: float
    random_royalties: float
    policy_ms_per_decision: float


def random_place(state: MatchState, seat: int, rng: random.Random) -> Place:
    """A uniformly random legal placement (and discard) of the seat's batch."""
    hand = state.hand
    assert hand is not None
    hand_seat = hand.seat(seat)
    street = state.ruleset.streets[hand.street]
    cards = list(hand_seat.pending)
    rng.shuffle(cards)
    kept, discards = cards[: street.place], cards[street.place :]
    # Uniform over legal row assignments: draw the rows of the free slots without replacement.
    slots: list[Row] = [r for r in ROWS for _ in range(r.size - len(hand_seat.board.row(r)))]
    rows = rng.sample(slots, len(kept))
    return Place(seat, tuple(zip(kept, rows, strict=True)), discards[0] if discards else None)


def run(*, hands: int = 500, ruleset: str = "classic") -> Figures:
    rules = PRESETS[ruleset]
    fouls = [0, 0]  # policy, random
    points = [0, 0]
    royalties = [0, 0]
    decisions = 0
    policy_seconds = 0.0
    for i in range(hands):
        rng = random.Random(i)
        state = new_match(rules, seats=2)
        state, _ = apply(state, SitDown(0, "policy" if i % 2 else "random"))
        state, _ = apply(state, SitDown(1, "random" if i % 2 else "policy"))
        # The button is seat 0, so seat 1 acts first: the policy on even hands.
        policy_seat = 1 if i % 2 == 0 else 0
        server_seed = hashlib.sha256(f"bench-policy-{i}".encode()).digest()
        state, _ = apply(state, StartHand(server_seed, b"", at_ms=0))
        events: tuple[Event, ...] = ()
        while waiting := seats_to_act(state):
            seat = waiting[0]
            if seat == policy_seat:
                start = time.perf_counter()
                state, events = apply(state, Timeout(seat))
                policy_seconds += time.perf_counter() - start
                decisions += 1
            else:
                state, events = apply(state, random_place(state, seat, rng))
        settled = next(e for e in events if isinstance(e, HandSettled))
        for seat, player in zip(settled.seats, settled.settlement.players, strict=True):
            who = 0 if seat == policy_seat else 1
            fouls[who] += player.fouled
            points[who] += player.points
            royalties[who] += sum(player.royalties)
    n = max(hands, 1)
    return Figures(
        ruleset=ruleset,
        hands=hands,
        policy_foul_rate=fouls[0] / n,
        random_foul_rate=fouls[1] / n,
        policy_points=points[0] / n,
        random_points=points[1] / n,
        policy_royalties=royalties[0] / n,
        random_royalties=royalties[1] / n,
        policy_ms_per_decision=1000 * policy_seconds / max(decisions, 1),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.policy", description=__doc__)
    parser.add_argument("--hands", type=int, default=500, help="hands to play (default 500)")
    parser.add_argument(
        "--ruleset", default="classic", choices=[*PRESETS, "all"], help="preset, or all"
    )
    parser.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    args = parser.parse_args(argv)
    names = list(PRESETS) if args.ruleset == "all" else [args.ruleset]
    for name in names:
        figures = run(hands=args.hands, ruleset=name)
        if args.json:
            print(json.dumps(asdict(figures)))
            continue
        print(f"{name}: {figures.hands} hands heads-up, timeout policy vs random placement")
        print(f"  {'':18}{'foul rate':>10}{'points/hand':>13}{'royalties/hand':>16}")
        for label, foul, pts, roy in (
            ("timeout policy", figures.policy_foul_rate, figures.policy_points,
             figures.policy_royalties),
            ("random placement", figures.random_foul_rate, figures.random_points,
             figures.random_royalties),
        ):  # fmt: skip
            print(f"  {label:18}{foul:>10.1%}{pts:>+13.2f}{roy:>16.2f}")
        print(f"  policy: {figures.policy_ms_per_decision:.2f} ms per decision")
    return 0


if __name__ == "__main__":
    sys.exit(main())
