"""The live-table benches run end to end (tiny settings) and print every figure they claim."""

from __future__ import annotations

import asyncio
import re

import pytest
from ofc import codec
from ofc.engine import HandSeat
from ofc_service.application import records
from ofc_service.store import MemoryTableStore

from bench import miss_path, move_floor, redis_exchange, tables


def test_move_floor_prints_its_three_rows_and_the_verdict(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert move_floor.main(["--seconds", "0.3", "--tables", "2"]) == 0
    out = capsys.readouterr().out
    for name in ("SettleHand", "empty move", "stored empty move"):
        row = re.search(rf"^{name} +(\d+) +(\d+\.\d\d)$", out, re.M)
        assert row is not None, out
        assert int(row[1]) > 0, out  # calls were made and answered
    assert re.search(r"could reach \d+% of SettleHand .*\[target 60%: ", out), out


@pytest.mark.parametrize("store", [["--memory"], []], ids=["memory", "redis"])
def test_miss_path_prints_both_modes_and_their_ratio(
    store: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert miss_path.main(["--moves", "8", "--warmup", "4", "--tables", "2", *store]) == 0
    out = capsys.readouterr().out
    for mode in miss_path.MODES:
        assert re.search(rf"^{mode}: 8 PlaceCards, \d+ us CPU per move$", out, re.M), out
    assert re.search(r"^alternating / affine \(process CPU per move\): \d+\.\d\dx$", out, re.M)


@pytest.mark.parametrize("mode", miss_path.MODES)
def test_miss_path_replicas_read_each_others_seats_from_their_bytes(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each in-process replica decodes with caches of its own, as a process does: a record
    the other replica wrote has seats this one never read (a replica that wrote the last
    record reads its seats back from its own caches)."""
    seats_parsed = 0
    parse = codec.seat_from_own_bytes

    def counted(raw: bytes) -> HandSeat:
        nonlocal seats_parsed
        seats_parsed += 1
        return parse(raw)

    monkeypatch.setattr(records, "seat_from_own_bytes", counted)
    measured, _ = asyncio.run(miss_path.play(MemoryTableStore(), mode, tables=2, warmup=4, moves=8))
    assert measured == 8
    if mode == "affine":  # one replica moves: every seat it meets, it wrote
        assert seats_parsed == 0
    else:  # each move changes the mover's seat, read by the other replica at its next move
        assert seats_parsed >= measured, seats_parsed


def test_redis_exchange_prints_each_way_of_a_round_trip(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert redis_exchange.main(["--calls", "80", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    for way in ("redis-py pipeline", "direct, a clock per step", "direct, one clock"):
        assert re.search(rf"^{way} +\d+\.\d$", out, re.M), out


def test_tables_bench_prints_round_trips_memory_and_both_rpcs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--seconds", "0.6", "--rounds", "1", "--in-flight", "2", "--servers", "1",
            "--moves", "20", "--hands", "1"]  # fmt: skip
    assert tables.main(argv) == 0
    out = capsys.readouterr().out
    trips = re.search(r"round trips per PlaceCards .*: (\d+\.\d\d)", out)
    assert trips is not None and 1.0 <= float(trips[1]) <= 2.0, out
    assert re.search(r"hand history \d+ B", out), out
    for rpc in ("PlaceCards", "SettleHand"):
        row = re.search(rf"^ +1 {rpc} +2 +(\d+) .* (\d+\.\d\d)$", out, re.M)
        assert row is not None and int(row[1]) > 0, out
    assert "1 server(s), 2 in flight: place/settle" in out, out
