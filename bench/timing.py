"""Shared timing helpers for bench sections: interleaved rounds, best rate, formatting.

Candidates that are compared with each other run in the same process, one after the other
inside every round, so a slow moment on a shared machine hits all of them alike; each
candidate's figure is its best round.

>>> rates = race({"sum": lambda: sum(range(1000)) and 1000}, rounds=2)
>>> list(rates) == ["sum"] and rates["sum"] > 0
True
>>> per_second(3_250_000), per_second(131_000)
('3.25 M/s', '131.0 k/s')
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

Batch = Callable[[], int]
"""Runs one batch of work and returns how many operations it did."""


def race(candidates: Mapping[str, Batch], *, rounds: int) -> dict[str, float]:
    """Best operations per second of each candidate over ``rounds`` interleaved rounds."""
    for batch in candidates.values():
        batch()  # warm up: first-call costs, caches, lazy imports
    best = dict.fromkeys(candidates, 0.0)
    for _ in range(rounds):
        for name, batch in candidates.items():
            start = time.perf_counter()
            done = batch()
            elapsed = time.perf_counter() - start
            best[name] = max(best[name], done / elapsed)
    return best


def per_second(rate: float) -> str:
    """A rate for humans: ``M/s`` from a million up, else ``k/s``."""
    if rate >= 1_000_000:
        return f"{rate / 1_000_000:.2f} M/s"
    return f"{rate / 1_000:.1f} k/s"
