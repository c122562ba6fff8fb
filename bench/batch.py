"""Batch scoring for back offices: ``.venv/bin/python -m bench.batch``.

    .venv/bin/python -m bench.batch                       # starts `ofc serve` on a free port
    .venv/bin/python -m bench.batch --hands 1000 --rounds 5 --seconds 1

The same 1,000 random two-player hands (bench.core's settlement deals: random 13-card
boards, the stronger five below, about a third foul) settled four ways, in interleaved
rounds of one run, each figure the best round:

- **in process**: ``ofc.scoring.settle`` on ready boards, the core's settle rate;
- **SettleHands**: one call of 1,000 hands at a time (two in flight, so the client's send
  overlaps the server's work), against ``ofc serve``;
- **SettleHandsStream**: one stream, the client writing while it reads (a back office
  pipelining its day), against the same server: ``--stream-hands`` hands a message (100:
  ``SettleHandsStreamRequest.hands``), and, beside it, every hand its own message (the
  one-hand form, whose cost is gRPC's per message);
- **ofc score --jsonl**: the command on a file of ``--cli-hands`` lines, output to
  /dev/null; its figure leaves out the command's start-up (timed on an empty file, and
  printed beside it).

The gRPC client sends pre-serialised requests and takes the responses as bytes, so the
figures are the server's. Each path is measured twice: hands per second of wall clock, and
hands per CPU second of the process doing the work (the in-process loop's thread, the
server process with gRPC's own threads, the ``ofc score`` process). On a machine other
work shares, the wall clock also measures the neighbours, so the targets (SettleHands >=
40% of the in-process rate, SettleHandsStream with many hands a message >= 25%, ofc score
--jsonl >= 30%) are judged
on the CPU rates, as the live-table figures are; both are printed. ``run()`` returns the
figures for the aggregate ``python -m bench``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import grpc
from ofc.cards import CARD_CODES
from ofc.scoring import Board, settle
from ofcpoker.v1 import cards_pb2, settlement_pb2
from ofcpoker.v1 import rules_service_pb2 as pb

from bench.core import _deals
from bench.grpc_load import start_server

SETTLE_HANDS = "/ofcpoker.v1.RulesService/SettleHands"
SETTLE_STREAM = "/ofcpoker.v1.RulesService/SettleHandsStream"
STREAM_HANDS = 100  # hands a message on the stream (SettleHandsStreamRequest.hands)
BATCH_IN_FLIGHT = 2


def stream_path(hands_a_message: int) -> str:
    """The figure's name: ``SettleHandsStream, 100 a message`` (or ``1 a message``)."""
    return f"SettleHandsStream, {hands_a_message} a message"


def targets(stream_hands: int) -> dict[str, float | None]:
    """Each path's target (share of the in-process rate per CPU second); the one-hand
    stream is printed beside the one that has it, without."""
    return {
        "SettleHands": 0.40,
        stream_path(stream_hands): 0.25,
        stream_path(1): None,
        "ofc score --jsonl": 0.30,
    }


@dataclass(frozen=True)
class Figure:
    path: str
    hands_per_second: float  # wall clock
    hands_per_cpu_second: float  # CPU time of the process that does the work
    ratio: float | None = None  # of the in-process rate per CPU second, same run
    wall_ratio: float | None = None  # the same, by the wall clock
    target: float | None = None
    note: str = ""

    @property
    def met(self) -> bool | None:
        return None if self.target is None or self.ratio is None else self.ratio >= self.target


def proto_hand(boards: Sequence[Board]) -> settlement_pb2.Hand:
    def codes(row: Sequence[int]) -> list[str]:
        return [CARD_CODES[c] for c in row]

    return settlement_pb2.Hand(
        players=[
            settlement_pb2.PlayerHand(
                board=cards_pb2.Board(
                    top=codes(b.top), middle=codes(b.middle), bottom=codes(b.bottom)
                )
            )
            for b in boards
        ]
    )


def json_hand(boards: Sequence[Board]) -> str:
    """One line of ``ofc score --jsonl`` input."""
    players = [
        {
            "id": f"p{i}",
            "top": " ".join(CARD_CODES[c] for c in b.top),
            "middle": " ".join(CARD_CODES[c] for c in b.middle),
            "bottom": " ".join(CARD_CODES[c] for c in b.bottom),
        }
        for i, b in enumerate(boards)
    ]
    return json.dumps({"players": players})


Rates = tuple[float, float]
"""Hands per second of wall clock, and per CPU second."""


def _in_process(deals: Sequence[Sequence[Board]], seconds: float) -> Rates:
    done, started, cpu = 0, time.perf_counter(), time.thread_time()
    while (elapsed := time.perf_counter() - started) < seconds:
        for boards in deals:
            settle(boards)
        done += len(deals)
    return done / elapsed, done / (time.thread_time() - cpu)


def _server_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def _batches(
    channel: grpc.aio.Channel, request: bytes, hands: int, seconds: float
) -> tuple[int, float]:
    call = channel.unary_unary(SETTLE_HANDS)  # bytes in, bytes out
    loop = asyncio.get_running_loop()
    done = 0

    async def worker(until: float) -> None:
        nonlocal done
        while loop.time() < until:
            await call(request)
            done += hands

    started = time.perf_counter()
    until = loop.time() + seconds
    await asyncio.gather(*(worker(until) for _ in range(BATCH_IN_FLIGHT)))
    return done, time.perf_counter() - started


async def _stream(
    channel: grpc.aio.Channel, messages: Sequence[bytes], seconds: float, hands_a_message: int
) -> tuple[int, float]:
    """One stream: the messages (of ``hands_a_message`` hands each), again and again for
    ``seconds``, written while read; returns the hands settled."""
    call = channel.stream_stream(SETTLE_STREAM)()
    sent = 0
    loop = asyncio.get_running_loop()
    until = loop.time() + seconds

    async def write() -> None:
        nonlocal sent
        while loop.time() < until:
            for message in messages:
                await call.write(message)
            sent += len(messages)
        await call.done_writing()

    started = time.perf_counter()
    writer = asyncio.create_task(write())
    received = 0
    while await call.read() is not grpc.aio.EOF:
        received += 1
    await writer
    assert received == sent, (received, sent)
    return received * hands_a_message, time.perf_counter() - started


def _cli_seconds(path: Path) -> tuple[float, float]:
    """Wall and CPU seconds of ``ofc score --jsonl path``."""
    ofc = Path(sys.executable).with_name("ofc")
    started, cpu = time.perf_counter(), _children_cpu()
    subprocess.run([str(ofc), "score", "--jsonl", str(path)], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started, _children_cpu() - cpu


def stream_messages(deals: Sequence[Sequence[Board]], hands_a_message: int) -> list[bytes]:
    """The hands as stream messages: one-hand messages for 1, else ``hands`` of that many."""
    if hands_a_message == 1:
        return [
            pb.SettleHandsStreamRequest(hand_id=f"h{k}", hand=proto_hand(d)).SerializeToString()
            for k, d in enumerate(deals)
        ]
    entries = [pb.IdentifiedHand(hand_id=f"h{k}", hand=proto_hand(d)) for k, d in enumerate(deals)]
    return [
        pb.SettleHandsStreamRequest(hands=entries[k : k + hands_a_message]).SerializeToString()
        for k in range(0, len(entries) - hands_a_message + 1, hands_a_message)
    ]


def run(
    *,
    hands: int = 1000,
    rounds: int = 3,
    seconds: float = 1.0,
    cli_hands: int = 20_000,
    stream_hands: int = STREAM_HANDS,
) -> list[Figure]:
    if not 1 < stream_hands <= hands:
        raise ValueError(f"stream_hands must be 2..{hands} (hands), got {stream_hands}")
    deals = _deals(hands, 2, 4)
    request = pb.SettleHandsRequest(hands=[proto_hand(d) for d in deals]).SerializeToString()
    one_a_message = stream_messages(deals, 1)
    many_a_message = stream_messages(deals, stream_hands)
    many, one = stream_path(stream_hands), stream_path(1)
    process, address = start_server()
    paths = ("in process", "SettleHands", many, one, "ofc score --jsonl")
    wall = dict.fromkeys(paths, 0.0)
    per_cpu = dict.fromkeys(paths, 0.0)
    startup = (float("inf"), float("inf"))

    def keep(path: str, rates: Rates) -> None:
        wall[path] = max(wall[path], rates[0])
        per_cpu[path] = max(per_cpu[path], rates[1])

    with tempfile.TemporaryDirectory(prefix="ofc-bench-") as tmp:
        lines = Path(tmp, "hands.jsonl")
        lines.write_text("".join(json_hand(d) + "\n" for d in _deals(cli_hands, 2, 5)))
        empty = Path(tmp, "empty.jsonl")
        empty.write_text("")

        async def served(measure: Any) -> Rates:
            cpu = _server_cpu(process.pid)
            hands, elapsed = await measure
            return hands / elapsed, hands / max(_server_cpu(process.pid) - cpu, 1e-3)

        async def measure() -> None:
            nonlocal startup
            async with grpc.aio.insecure_channel(address) as channel:
                await asyncio.wait_for(channel.channel_ready(), timeout=30)
                await _batches(channel, request, hands, 0.3)  # warm-up
                await _stream(channel, many_a_message, 0.3, stream_hands)
                await _stream(channel, one_a_message, 0.3, 1)
                for _ in range(rounds):
                    keep("in process", _in_process(deals, seconds))
                    keep("SettleHands", await served(_batches(channel, request, hands, seconds)))
                    streamed = _stream(channel, many_a_message, seconds, stream_hands)
                    keep(many, await served(streamed))
                    keep(one, await served(_stream(channel, one_a_message, seconds, 1)))
                    empty_wall, empty_cpu = _cli_seconds(empty)
                    startup = (min(startup[0], empty_wall), min(startup[1], empty_cpu))
                    cli_wall, cli_cpu = _cli_seconds(lines)
                    keep(
                        "ofc score --jsonl",
                        (
                            cli_hands / max(cli_wall - startup[0], 1e-3),
                            cli_hands / max(cli_cpu - startup[1], 1e-3),
                        ),
                    )

        try:
            asyncio.run(measure())
        finally:
            process.terminate()
            process.wait(timeout=30)
    core, core_wall = per_cpu["in process"], wall["in process"]
    figures = [Figure("in process (ofc.scoring.settle)", core_wall, core)]
    goals = targets(stream_hands)
    for path in paths[1:]:
        note = ""
        if path == "ofc score --jsonl":
            note = f"{cli_hands:,} lines; start-up {startup[1]:.2f} CPU s left out"
        elif path == one:
            note = "the one-hand form: gRPC's cost per message"
        share, wall_share = per_cpu[path] / core, wall[path] / core_wall
        figures.append(
            Figure(path, wall[path], per_cpu[path], share, wall_share, goals[path], note)
        )
    return figures


def format_figures(figures: Sequence[Figure], *, hands: int) -> list[str]:
    lines = [
        f"batch scoring, {hands:,} random two-player hands (SettleHands: one call of all)",
        f"  {'':<32}{'k hands/CPU s':>14}{'share':>8}{'k hands/s':>11}{'share':>8}",
    ]
    for f in figures:
        line = f"  {f.path:<32}{f.hands_per_cpu_second / 1000:>14.1f}"
        line += f"{f.ratio:>8.1%}" if f.ratio is not None else f"{'':>8}"
        line += f"{f.hands_per_second / 1000:>11.1f}"
        line += f"{f.wall_ratio:>8.1%}" if f.wall_ratio is not None else f"{'':>8}"
        if f.target is not None:
            line += f"   target >= {f.target:.0%} {'ok' if f.met else 'MISSED'}"
        if f.note:
            line += f"   ({f.note})"
        lines.append(line)
    lines.append("  share: of the in-process rate, same run; targets judged per CPU second")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.batch",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--hands", type=int, default=1000, help="hands per SettleHands call")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds, best kept")
    parser.add_argument("--seconds", type=float, default=1.0, help="seconds per path per round")
    parser.add_argument("--cli-hands", type=int, default=20_000, help="lines for ofc score")
    parser.add_argument(
        "--stream-hands",
        type=int,
        help=f"hands a stream message, 2..--hands (default {STREAM_HANDS}, at most --hands)",
    )
    parser.add_argument("--json", action="store_true", help="the figures as JSON")
    args = parser.parse_args(argv)
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    figures = run(
        hands=args.hands,
        rounds=args.rounds,
        seconds=args.seconds,
        cli_hands=args.cli_hands,
        stream_hands=args.stream_hands or min(STREAM_HANDS, args.hands),
    )
    if args.json:
        print(json.dumps([{**asdict(f), "met": f.met} for f in figures]))
    else:
        print("\n".join(format_figures(figures, hands=args.hands)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
