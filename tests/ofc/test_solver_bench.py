"""``python -m bench.solver`` keeps working: a tiny run, table and JSON."""

from __future__ import annotations

import json

import pytest

from bench import solver as bench_solver


def test_run_reports_each_card_count() -> None:
    rows = bench_solver.run(hands=2, repeat=1, sizes=(13, 17))
    assert [r["cards"] for r in rows] == [13, 17]
    for row in rows:
        assert row["hands"] == 2
        assert 0 < row["median_ms"] <= row["p90_ms"] <= row["max_ms"]
        assert row["target_median_ms"] == bench_solver.TARGET_MS[row["cards"]]


def test_main_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_solver.main(["--hands", "1", "--repeat", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["cards"] for r in rows] == [13, 14, 15, 16, 17]
