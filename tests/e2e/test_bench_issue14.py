"""The issue-14 benches run end to end (tiny settings) and print every figure they claim."""

from __future__ import annotations

import asyncio
import itertools
import random
import re
from typing import Any

import pytest

from bench import batch, issue14, move_path, open_loop
from bench.tables import Gate, Seat, TablePlayer


class RecordingStub:
    """A stand-in for a TableService stub that records which one a move went to."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    async def PlaceCards(self, request: Any, metadata: Any = ()) -> None:
        self.log.append(self.name)


def test_an_alternating_player_sends_each_move_to_the_other_replica() -> None:
    log: list[str] = []
    a, b = RecordingStub("a", log), RecordingStub("b", log)

    async def four_moves(player: TablePlayer) -> None:
        player.seats = [Seat("token")]
        for _ in range(4):
            await player.place(None, 0)  # type: ignore[arg-type]

    asyncio.run(four_moves(TablePlayer(a, b, Gate(), alternate=b)))  # type: ignore[arg-type]
    assert log == ["a", "b", "a", "b"]
    log.clear()
    asyncio.run(four_moves(TablePlayer(a, b, Gate())))  # type: ignore[arg-type]
    assert log == ["a", "a", "a", "a"]


def test_a_move_path_ratio_is_the_median_of_its_pairs_each_printed() -> None:
    line = move_path._paired([(2.0, 1.0), (3.0, 1.0), (1.4, 1.0)], 1.5)
    assert line == (
        "median 2.00x of 3 pairs (2.00 / 1.00 ms = 2.00x, 3.00 / 1.00 ms = 3.00x, "
        "1.40 / 1.00 ms = 1.40x) [target <= 1.5x: MISS]"
    )
    assert move_path._paired([(1.4, 1.0), (2.4, 1.0), (1.1, 1.0)], 1.5).endswith("PASS]")
    assert move_path._paired([(1.1, 1.0)], 1.15).startswith("median 1.10x of 1 pair (")


def test_the_open_loop_schedule_is_fixed_by_its_seed() -> None:
    first = open_loop.schedule(500.0, 2.0, random.Random(open_loop.SEED))
    again = open_loop.schedule(500.0, 2.0, random.Random(open_loop.SEED))
    assert first == again and 800 < len(first) < 1200
    gaps = [b - a for a, b in itertools.pairwise(first)]
    assert min(gaps) >= 0 and abs(sum(gaps) / len(gaps) - 1 / 500) < 0.0005


def test_the_batch_and_open_loop_commands_pass_their_arguments_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Their measurements run in the issue-14 bench below; here, what each command line
    asks of them (the runs stand in, the printing is real)."""
    asked: list[dict[str, Any]] = []

    def batch_run(**kwargs: Any) -> list[batch.Figure]:
        asked.append(kwargs)
        return [batch.Figure("SettleHands", 2000.0, 1000.0, 0.5, 0.4, 0.4)]

    def open_loop_run(url: str, **kwargs: Any) -> tuple[dict[str, float], list[open_loop.Row]]:
        asked.append({"url": url.startswith("redis://"), **kwargs})
        rows = [
            open_loop.Row(rpc, 0.5, 10.0, 10.0, 5, 1.0, 2.0) for rpc in ("PlaceCards", "SettleHand")
        ]
        return {"PlaceCards": 20.0, "SettleHand": 40.0}, rows

    monkeypatch.setattr(batch, "run", batch_run)
    monkeypatch.setattr(open_loop, "run", open_loop_run)
    small = ["--hands", "50", "--rounds", "2", "--seconds", "0.3", "--cli-hands", "7"]
    assert batch.main(small) == 0
    assert batch.main(["--hands", "500", "--stream-hands", "20"]) == 0
    assert open_loop.main(["--seconds", "0.5", "--tables", "8", "--fractions", "0.5,0.9"]) == 0
    assert asked == [
        {"hands": 50, "rounds": 2, "seconds": 0.3, "cli_hands": 7, "stream_hands": 50},
        {"hands": 500, "rounds": 3, "seconds": 1.0, "cli_hands": 20_000, "stream_hands": 20},
        {"url": True, "fractions": [0.5, 0.9], "seconds": 0.5, "tables": 8},
    ]
    out = capsys.readouterr().out
    settle_hands = r"^  SettleHands +1\.0 +50\.0% +2\.0 +40\.0%   target >= 40% ok"
    assert re.search(settle_hands, out, re.M), out
    assert "p99 at 50% of the maximum: PlaceCards 2.0 ms, SettleHand 2.0 ms" in out, out


@pytest.mark.slow
def test_issue14_bench_prints_every_figure(
    redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    tiny = issue14.Settings(
        seconds=0.4, rounds=1, batch_rounds=1, cli_hands=100, open_loop_seconds=0.4, pairs=1
    )
    issue14.run(redis_url, tiny)
    out = capsys.readouterr().out
    # each ratio: the median of its pairs (one here; three in the test above), each shown
    pairs = r"median \d+\.\d\dx of 1 pair \(\d+\.\d\d / \d+\.\d\d ms = \d+\.\d\dx\)"
    floor = rf"^1\. PlaceCards / no-logic floor .*: {pairs} \[target <= 1.5x: (PASS|MISS)\]"
    assert re.search(floor, out, re.M), out
    replicas = rf"^2\. moves alternating .*: {pairs} \[target <= 1.15x: (PASS|MISS)\]; moves/s"
    assert re.search(replicas, out, re.M), out
    workers = re.search(r"^3\. .*1 worker (\d+)/s .*--workers 2 (\d+)/s", out, re.M)
    assert workers is not None and int(workers[1]) > 0 and int(workers[2]) > 0, out
    # 4: batch scoring, each path with its target, and the one-hand form beside it without
    assert re.search(r"^  in process \(ofc.scoring.settle\) +\d+\.\d +\d+\.\d", out, re.M), out
    targets = (
        ("SettleHands", 40),
        (f"SettleHandsStream, {batch.STREAM_HANDS} a message", 25),
        ("ofc score --jsonl", 30),
    )
    for path, target in targets:
        pattern = rf"^  {re.escape(path)} +(\d+\.\d) +(\d+\.\d)% .* target >= {target}%"
        row = re.search(pattern, out, re.M)
        assert row is not None and float(row[1]) > 0, out
    one = re.search(r"^  SettleHandsStream, 1 a message +(\d+\.\d) +\d+\.\d%(.*)$", out, re.M)
    assert one is not None and float(one[1]) > 0 and "target" not in one[2], out
    # 5: open-loop p99 of both RPCs at each load
    for fraction in ("50%", "80%"):
        for rpc in ("PlaceCards", "SettleHand"):
            row = re.search(rf"^{rpc} +{fraction} +(\d+) +(\d+) +\d+\.\d\d +\d+\.\d\d", out, re.M)
            assert row is not None and int(row[2]) > 0, out
        assert re.search(rf"p99 at {fraction} of the maximum: PlaceCards \d", out), out
