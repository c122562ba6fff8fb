"""``python -m bench.verify`` keeps working: a tiny run, and its histories verify."""

from __future__ import annotations

import json

import pytest
from ofc.verify import check_history

from bench import verify as bench_verify


def test_the_bench_s_histories_are_format_3_with_deadlines_and_verify() -> None:
    for number in range(3):
        history = bench_verify.history(number)
        assert history["format_version"] == 3 and history["clock"] is not None
        assert all(a["deadline_ms"] for a in history["actions"] if a["type"] == "timeout")
        assert check_history(history).ok


def test_main_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_verify.main(["--hands", "6", "--jobs", "1", "2", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["hands"] == 6 and set(figures["rates"]) == {"1", "2"}
    assert all(rate["per_second"] > 0 for rate in figures["rates"].values())


def test_main_times_the_node_verifier_too(capsys: pytest.CaptureFixture[str]) -> None:
    """``--node`` (node must be on PATH here: clients/node is part of the suite)."""
    assert bench_verify.main(["--hands", "4", "--jobs", "1", "--node", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert set(figures["node_rates"]) == {"1"} and figures["node_rates"]["1"]["per_second"] > 0
