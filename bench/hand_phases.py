"""CPU per call at each phase of a hand, in process: ``.venv/bin/python -m bench.hand_phases``.

    .venv/bin/python -m bench.hand_phases                 # 60 hands, private redis-server
    .venv/bin/python -m bench.hand_phases --hands 200 --redis-url redis://127.0.0.1:6399/0

``bench.move_path`` divides a server's CPU by its PlaceCards; the StartHand that opens each
hand and the move that ends it (its history, settlement record, the showdown's events) are
paid in that CPU too. This bench plays two seats on one table in process, as
``bench.move_instructions`` does (the same seeds, clock and placements: ``TableHandlers``,
the manager's pipeline, redis-py and a private ``redis-server``; no gRPC, no watchers, no
settlement relay), and prints the process CPU per call (median) of

- **StartHand**;
- a hand's **first** move, its **middle** ones and its **last** one (the one that ends it);
- **all in**: every call of the hands (StartHand included) per PlaceCards, and its ratio
  to a middle move: what a hand's start and end add to the CPU per move.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Awaitable, Sequence
from typing import TypeVar

from bench import move_instructions
from bench.tables import redis_for

T = TypeVar("T")
WARM_UP_HANDS = 3  # the first hands' calls warm caches and imports up: not counted


class _TimedRun(move_instructions._Run):
    """Runs ``bench.move_instructions``' calls, noting each handler call's process CPU."""

    def __init__(self) -> None:
        super().__init__()
        self.timed: list[tuple[str, float]] = []  # (handler method, CPU seconds), in order

    def __call__(self, work: Awaitable[T], *, counted: bool = False) -> T:
        name = getattr(work, "__qualname__", "")
        started = time.process_time()
        result = self.loop.run_until_complete(work)
        if name.startswith("TableHandlers."):
            self.timed.append((name.removeprefix("TableHandlers."), time.process_time() - started))
        return result


def phases(calls: Sequence[tuple[str, float]]) -> dict[str, list[float]]:
    """The CPU seconds of each phase (StartHand, first, middle, last) over the hands in
    ``calls`` (handler calls in order; a hand begins at its StartHand), and ``moves``: the
    hands' PlaceCards and ``all``: every call of them, StartHand included.

    >>> found = phases([("StartHand", 3.0), ("PlaceCards", 2.0), ("PlaceCards", 1.0),
    ...                 ("SetFantasyland", 1.0), ("PlaceCards", 5.0)])
    >>> found["StartHand"], found["first"], found["middle"], found["last"], found["all"]
    ([3.0], [2.0], [1.0, 1.0], [5.0], [3.0, 2.0, 1.0, 1.0, 5.0])
    >>> len(found["moves"])
    3
    """
    found: dict[str, list[float]] = {
        k: [] for k in ("StartHand", "first", "middle", "last", "moves", "all")
    }
    hand: list[tuple[str, float]] = []
    for call in [*calls, ("StartHand", -1.0)]:  # a StartHand ends the hand before it
        if call[0] != "StartHand":
            hand.append(call)
            continue
        if hand and hand[0][0] == "StartHand" and len(hand) >= 3:
            (_, start), (_, first), *middle, (_, last) = hand
            found["StartHand"].append(start)
            found["first"].append(first)
            found["middle"] += [cpu for _, cpu in middle]
            found["last"].append(last)
            found["moves"] += [cpu for name, cpu in hand if name == "PlaceCards"]
            found["all"] += [cpu for _, cpu in hand]
        hand = [call]
    return found


def measure(redis_url: str, hands: int) -> dict[str, list[float]]:
    """Play ``hands`` counted hands (after the warm-up ones) and return :func:`phases`'."""
    run = _TimedRun()
    move_instructions._play(run, redis_url, "place", hands + WARM_UP_HANDS - 1)  # (and one)
    starts = [k for k, (name, _) in enumerate(run.timed) if name == "StartHand"]
    return phases(run.timed[starts[WARM_UP_HANDS] :])


def report(found: dict[str, list[float]]) -> list[str]:
    """The figures' lines."""
    us = 1e6

    def median(key: str) -> float:
        return statistics.median(found[key]) * us

    lines = [
        f"StartHand             {median('StartHand'):8.1f} us CPU per call (median)",
        f"PlaceCards, first     {median('first'):8.1f}",
        f"PlaceCards, middle    {median('middle'):8.1f}",
        f"PlaceCards, last      {median('last'):8.1f}   (ends the hand: history, settlement)",
    ]
    all_in = sum(found["all"]) / len(found["moves"]) * us
    lines.append(
        f"all in, per PlaceCards {all_in:7.1f}   = {all_in / median('middle'):.2f}x a middle move "
        f"(hands {len(found['StartHand'])}, PlaceCards {len(found['moves'])})"
    )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hand_phases", description=__doc__)
    parser.add_argument("--hands", type=int, default=60, help="counted hands")
    parser.add_argument("--redis-url", help="an existing Redis (default: a private one)")
    args = parser.parse_args(argv)
    with redis_for(args.redis_url) as url:
        found = measure(url, max(1, args.hands))
    print("\n".join(report(found)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
