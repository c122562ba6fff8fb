"""Print every performance figure: ``python -m bench [--quick] [SECTION ...]``.

    .venv/bin/python -m bench            # the default sections, in the order below
    .venv/bin/python -m bench --quick    # the same with short runs: a smoke test of them all
    .venv/bin/python -m bench core       # only the rules core
    .venv/bin/python -m bench --list

A section is a module with ``main(argv)`` that prints its own figures with its defaults
and returns an exit status; it runs alone as ``python -m bench.<name>``, with more options,
and so it runs here: each section in a process of its own, so that no section inherits
another's threads, event loops or gRPC state (grpc.aio's poller thread, left bound to an
earlier section's closed event loop, printed tracebacks into later sections). To add one,
add a line to ``SECTIONS`` (and its short arguments to ``QUICK``).
``issue14`` measures the move path's figures and runs ``batch`` and ``open_loop`` itself,
so those two run only when named.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # where `python -m bench.<name>` finds bench

SECTIONS: dict[str, tuple[str, str]] = {
    # name: (module, what it measures)
    "core": ("bench.core", "rules core: evaluator and settlement throughput vs treys, eval7"),
    "solver": ("bench.solver", "Fantasyland solver: ms per hand, 13..17 cards"),
    "policy": ("bench.policy", "timeout policy vs random placement: fouls, points, speed"),
    "verify": ("bench.verify", "ofc verify: hand histories verified per second, -j 1 and -j 2"),
    "tables": ("bench.tables", "live tables on Redis: moves vs settle, round trips, memory"),
    "move_floor": ("bench.move_floor", "a move's server cost with no game logic vs settle"),
    "miss_path": ("bench.miss_path", "moves alternating between two in-process replicas vs one"),
    "hand_phases": ("bench.hand_phases", "CPU per call at a hand's start, middle and end"),
    "redis_exchange": ("bench.redis_exchange", "one store round trip vs redis-py's pipeline"),
    "connect": ("bench.connect", "SettleHand over Connect JSON and binary vs native gRPC"),
    "issue14": ("bench.issue14", "the move path: floor, replicas, workers, batch, open-loop p99"),
    "batch": ("bench.batch", "batch scoring: SettleHands, the stream, ofc score vs in process"),
    "open_loop": ("bench.open_loop", "p99 of PlaceCards and SettleHand under an open-loop load"),
    "cluster": ("bench.cluster", "one Redis vs a Redis Cluster, without and with WAIT 1"),
}
NAMED_ONLY = ("batch", "open_loop")  # run inside issue14 already
QUICK: dict[str, list[str]] = {
    "core": ["--hands", "10000", "--deals", "1000", "--rounds", "3"],
    "solver": ["--hands", "40", "--repeat", "1"],
    "policy": ["--hands", "30"],
    "verify": ["--hands", "150"],
    "tables": ["--seconds", "1", "--rounds", "1", "--moves", "60", "--hands", "3"],
    "move_floor": ["--seconds", "1"],
    "miss_path": ["--moves", "96", "--warmup", "32"],
    "hand_phases": ["--hands", "3"],
    "redis_exchange": ["--calls", "2000", "--rounds", "1"],
    "connect": ["--seconds", "1"],
    "issue14": ["--quick"],
    "batch": ["--rounds", "1", "--cli-hands", "5000"],
    "open_loop": ["--seconds", "1.5"],
    "cluster": ["--seconds", "1", "--rounds", "1"],
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("sections", nargs="*", metavar="SECTION", help="default: all")
    parser.add_argument("--list", action="store_true", help="list the sections and exit")
    parser.add_argument("--quick", action="store_true", help="short runs of every section")
    args = parser.parse_args(argv)
    if args.list:
        for name, (module, what) in SECTIONS.items():
            print(f"{name:<15} {what}  [{module}]")
        return 0
    unknown = [s for s in args.sections if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s): {', '.join(unknown)} (known: {', '.join(SECTIONS)})")
    status = 0
    for name in args.sections or [s for s in SECTIONS if s not in NAMED_ONLY]:
        module_name, what = SECTIONS[name]
        print(f"== {name}: {what}", flush=True)
        start = time.perf_counter()
        section_argv = QUICK.get(name, []) if args.quick else []
        section = subprocess.run([sys.executable, "-m", module_name, *section_argv], cwd=ROOT)
        if section.returncode:
            status = 1
        print(f"   ({time.perf_counter() - start:.1f} s)\n", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
