"""bench.connect runs end to end (tiny settings) and prints its three rows per level."""

from __future__ import annotations

import re

import pytest

from bench import connect


def test_connect_bench_prints_grpc_and_both_connect_codecs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert connect.main(["--seconds", "0.3", "--in-flight", "1,2"]) == 0
    out = capsys.readouterr().out
    for protocol in ("grpc", "connect-binary", "connect-json"):
        for level in (1, 2):
            row = re.search(
                rf"^{protocol} +{level} +(\d+) +[\d.]+ +[\d.]+ +(\d+) us +(\d+)%$", out, re.M
            )
            assert row is not None, out
            assert int(row[1]) > 0 and int(row[2]) > 0, out  # calls answered, CPU measured
