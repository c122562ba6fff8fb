"""Timeout policy figures: against random placement, and head to head against the first policy.

    .venv/bin/python -m bench.policy [--hands 500] [--ruleset classic|all] [--json]

**Against random placement.** Hand ``i`` is a fresh two-seat table, server seed
``SHA-256("bench-policy-<i>")``: one seat is played by the timeout policy (``Timeout``
actions, exactly what the table does when a clock runs out), the other places every batch
uniformly at random among the legal placements (a ``random.Random(i)``; the discard too).
The policy takes the first seat to act on even hands and the second on odd ones. The first
policy (``bench/policy_v1.py``) plays the same hands against the same random seat, which
places the same cards the same way (it sees nothing of the other board).

**Head to head.** ``--hands`` hands again, in pairs: hands ``2k`` and ``2k + 1`` deal the same
cards (server seed ``SHA-256("bench-policy-h2h-<k>")``) with the two policies in swapped
seats, so each plays both sets of cards. The current policy acts through ``Timeout``, the
first one is given what the engine gives a timeout (its board, its batch, its discards
and the other board's face-up cards). ``±`` is the standard error of the current
policy's points per hand, over the pairs.

**Time per move**: milliseconds of each ``Timeout`` of the current policy against random
placement (the first street costs the most), p50 / p99 / max of the wall clock and of this
process's CPU time, which a busy machine does not inflate.

The same arguments give the same figures (the times aside). ``run()`` returns them for an
aggregate ``bench`` command.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from ofc.engine import (
    HandSettled,
    MatchState,
    Place,
    SitDown,
    StartHand,
    apply,
    new_match,
    seats_to_act,
)
from ofc.policy import timeout
from ofc.rulesets import PRESETS, ROWS, Row, Ruleset
from ofc.scoring import PlayerResult

from bench.policy_v1 import choose_placement_v1

Player = Callable[[MatchState, int], Place]
"""Picks the move of a seat whose turn it is (random placement, the first policy)."""


@dataclass(frozen=True, slots=True)
class Figures:
    ruleset: str
    hands: int
    # against random placement; the random seat's points are the negative (zero-sum)
    policy_foul_rate: float
    random_foul_rate: float
    policy_points: float  # average per hand
    random_points: float
    policy_royalties: float
    random_royalties: float
    policy_fantasyland_rate: float
    v1_foul_rate: float  # the first policy on the same hands, against the same random seat
    v1_points: float
    v1_royalties: float
    # head to head: h2h_hands // 2 deals, each played twice with the seats swapped
    h2h_hands: int
    h2h_policy_foul_rate: float
    h2h_v1_foul_rate: float
    h2h_policy_points: float  # the first policy's are the negative
    h2h_points_stderr: float
    h2h_policy_royalties: float
    h2h_v1_royalties: float
    # the current policy's time per move against random placement: wall clock, and the CPU
    # time of this process (what a busy machine does not inflate)
    policy_ms_per_decision: float  # mean, wall clock
    policy_ms_p50: float
    policy_ms_p99: float
    policy_ms_max: float
    policy_cpu_ms_p50: float
    policy_cpu_ms_p99: float
    policy_cpu_ms_max: float


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


def v1_place(state: MatchState, seat: int) -> Place:
    """The first policy's move (``ofc-timeout-1``) for ``seat``, seeing what
    :class:`ofc.policy.TimeoutPolicy` lets a seat see."""
    hand = state.hand
    assert hand is not None
    hand_seat = hand.seat(seat)
    dead = list(hand_seat.discards)
    for other in hand.seats:
        if other.seat != seat and not other.in_fantasyland:
            dead.extend(other.board.cards)
    placements, discards = choose_placement_v1(
        hand_seat.board,
        hand_seat.pending,
        state.ruleset.streets[hand.street].place,
        state.ruleset,
        dead=dead,
    )
    return Place(seat, placements, discards[0] if discards else None)


def play_hand(
    rules: Ruleset,
    server_seed: bytes,
    players: tuple[Player | None, Player | None],
    times: list[tuple[float, float]] | None = None,
) -> tuple[PlayerResult, PlayerResult]:
    """One hand at a fresh two-seat table; ``None`` is the timeout policy (``Timeout``; its
    wall-clock and CPU seconds appended to ``times``). Returns the two seats' results."""
    state = new_match(rules, seats=2)
    state, _ = apply(state, SitDown(0, "seat-0"))
    state, _ = apply(state, SitDown(1, "seat-1"))
    state, events = apply(state, StartHand(server_seed, b"", at_ms=0))
    while waiting := seats_to_act(state):
        seat = waiting[0]
        player = players[seat]
        if player is None:
            start, cpu = time.perf_counter(), time.process_time()
            state, events = apply(state, timeout(state, seat))
            if times is not None:
                times.append((time.perf_counter() - start, time.process_time() - cpu))
        else:
            state, events = apply(state, player(state, seat))
    settled = next(e for e in events if isinstance(e, HandSettled))
    by_seat = dict(zip(settled.seats, settled.settlement.players, strict=True))
    return by_seat[0], by_seat[1]


def _random_player(rng: random.Random) -> Player:
    return lambda state, seat: random_place(state, seat, rng)


def versus_random(
    rules: Ruleset,
    i: int,
    player: Player | None,
    times: list[tuple[float, float]] | None = None,
) -> tuple[PlayerResult, PlayerResult]:
    """Hand ``i`` against random placement: ``player`` (``None``: the timeout policy) and
    the random seat's results, in that order."""
    server_seed = hashlib.sha256(f"bench-policy-{i}".encode()).digest()
    # The button is seat 0, so seat 1 acts first: the player on even hands.
    seat = 1 if i % 2 == 0 else 0
    players: list[Player | None] = [None, None]
    players[seat] = player
    players[1 - seat] = _random_player(random.Random(i))
    results = play_hand(rules, server_seed, (players[0], players[1]), times)
    return results[seat], results[1 - seat]


@dataclass
class _Tally:
    fouls: int = 0
    points: int = 0
    royalties: int = 0
    fantasylands: int = 0

    def add(self, player: PlayerResult) -> None:
        self.fouls += player.fouled
        self.points += player.points
        self.royalties += sum(player.royalties)
        self.fantasylands += player.board.fantasyland.qualifies


def run(*, hands: int = 500, ruleset: str = "classic") -> Figures:
    rules = PRESETS[ruleset]
    n = max(hands, 1)
    policy, randoms, v1 = _Tally(), _Tally(), _Tally()
    times: list[tuple[float, float]] = []
    for i in range(hands):
        mine, theirs = versus_random(rules, i, None, times)
        policy.add(mine)
        randoms.add(theirs)
        v1.add(versus_random(rules, i, v1_place)[0])
    h2h_policy, h2h_v1 = _Tally(), _Tally()
    pair_points: list[float] = []
    pairs = max(1, hands // 2)
    for k in range(pairs):
        server_seed = hashlib.sha256(f"bench-policy-h2h-{k}".encode()).digest()
        pair = 0
        for seat in (0, 1):
            seats: tuple[Player | None, Player | None] = (
                (None, v1_place) if seat == 0 else (v1_place, None)
            )
            results = play_hand(rules, server_seed, seats)
            h2h_policy.add(results[seat])
            h2h_v1.add(results[1 - seat])
            pair += results[seat].points
        pair_points.append(pair / 2)
    m = 2 * pairs
    ms = sorted(1000 * wall for wall, _ in times) or [0.0]
    cpu_ms = sorted(1000 * cpu for _, cpu in times) or [0.0]
    return Figures(
        ruleset=ruleset,
        hands=hands,
        policy_foul_rate=policy.fouls / n,
        random_foul_rate=randoms.fouls / n,
        policy_points=policy.points / n,
        random_points=randoms.points / n,
        policy_royalties=policy.royalties / n,
        random_royalties=randoms.royalties / n,
        policy_fantasyland_rate=policy.fantasylands / n,
        v1_foul_rate=v1.fouls / n,
        v1_points=v1.points / n,
        v1_royalties=v1.royalties / n,
        h2h_hands=m,
        h2h_policy_foul_rate=h2h_policy.fouls / m,
        h2h_v1_foul_rate=h2h_v1.fouls / m,
        h2h_policy_points=h2h_policy.points / m,
        h2h_points_stderr=(
            statistics.pstdev(pair_points) / len(pair_points) ** 0.5
            if len(pair_points) > 1
            else 0.0
        ),
        h2h_policy_royalties=h2h_policy.royalties / m,
        h2h_v1_royalties=h2h_v1.royalties / m,
        policy_ms_per_decision=statistics.fmean(ms),
        policy_ms_p50=_percentile(ms, 0.5),
        policy_ms_p99=_percentile(ms, 0.99),
        policy_ms_max=ms[-1],
        policy_cpu_ms_p50=_percentile(cpu_ms, 0.5),
        policy_cpu_ms_p99=_percentile(cpu_ms, 0.99),
        policy_cpu_ms_max=cpu_ms[-1],
    )


def _percentile(ordered: Sequence[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _row(label: str, foul_rate: float, points: str, royalties: float) -> None:
    print(f"    {label:26}{foul_rate:>10.1%}{points:>15}{royalties:>16.2f}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.policy",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--hands", type=int, default=500, help="hands to play (default 500)")
    parser.add_argument(
        "--ruleset", default="classic", choices=[*PRESETS, "all"], help="preset, or all"
    )
    parser.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    args = parser.parse_args(argv)
    names = list(PRESETS) if args.ruleset == "all" else [args.ruleset]
    for name in names:
        f = run(hands=args.hands, ruleset=name)
        if args.json:
            print(json.dumps(asdict(f)))
            continue
        print(f"{name}: heads-up, {f.hands} hands vs random, {f.h2h_hands} head to head")
        print(f"  {'':28}{'foul rate':>10}{'points/hand':>15}{'royalties/hand':>16}")
        h2h = f"{f.h2h_policy_points:+.2f} ±{f.h2h_points_stderr:.2f}"
        print("  vs random placement:")
        _row("timeout policy", f.policy_foul_rate, f"{f.policy_points:+.2f}", f.policy_royalties)
        _row("random placement", f.random_foul_rate, f"{f.random_points:+.2f}", f.random_royalties)
        _row("first policy (v1)", f.v1_foul_rate, f"{f.v1_points:+.2f}", f.v1_royalties)
        print("  head to head:")
        _row("timeout policy", f.h2h_policy_foul_rate, h2h, f.h2h_policy_royalties)
        _row("first policy (v1)", f.h2h_v1_foul_rate, f"{-f.h2h_policy_points:+.2f}",
             f.h2h_v1_royalties)  # fmt: skip
        print(
            f"  timeout policy per move: p50 {f.policy_ms_p50:.1f} ms, "
            f"p99 {f.policy_ms_p99:.1f} ms, max {f.policy_ms_max:.1f} ms, "
            f"mean {f.policy_ms_per_decision:.2f} ms (wall clock); CPU p50 "
            f"{f.policy_cpu_ms_p50:.1f} ms, p99 {f.policy_cpu_ms_p99:.1f} ms, "
            f"max {f.policy_cpu_ms_max:.1f} ms"
        )
        rate = f.policy_fantasyland_rate
        print(f"  Fantasyland: the timeout policy qualified in {rate:.1%} of hands vs random")
        print(f"  command: .venv/bin/python -m bench.policy --hands {f.hands} --ruleset {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
