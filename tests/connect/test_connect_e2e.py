"""Every RPC over Connect JSON, Connect binary and gRPC-Web from the TypeScript client.

``clients/web/test/connect/rpcs.e2e.ts`` (@connectrpc/connect-node) runs under ``node
--test`` against a real ``ofc serve`` (tables in memory, then in Redis): per protocol a
Pineapple hand played and watched, every RPC of the three services called (the test checks
the list against the services' descriptors), errors with their ErrorInfo and BadRequest, a
deadline and a cancellation. Afterwards the server's metrics show each protocol's calls
under its own ``protocol`` label, and the cancelled watches as CANCELLED.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.connect.conftest import API_KEY, ROOT, Served

WEB_DIR = ROOT / "clients" / "web"


@pytest.fixture(scope="module")
def e2e_script() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("node and npm (Node.js >= 20) are needed for the Connect e2e test")
    installed = subprocess.run(
        ["bash", str(ROOT / "scripts" / "check_web.sh"), "--install-only"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    out = WEB_DIR / ".test-build"
    built = subprocess.run(
        ["node", "scripts/build-tests.mjs", str(out)],
        cwd=WEB_DIR, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    return out / "connect" / "rpcs.e2e.mjs"


def metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for found, value in re.findall(rf"^{name}\{{([^}}]*)\}} (\S+)$", text, re.M):
        got = dict(re.findall(r'(\w+)="([^"]*)"', found))
        if all(got.get(k) == v for k, v in labels.items()):
            total += float(value)
    return total


def test_every_rpc_over_each_protocol_from_typescript(e2e_script: Path, service: Served) -> None:
    got = subprocess.run(
        ["node", "--test", "--test-reporter=tap", str(e2e_script)],
        env={**os.environ, "OFC_HTTP_URL": service.http, "OFC_API_KEY": API_KEY},
        cwd=WEB_DIR, capture_output=True, text=True, timeout=400, check=False,
    )  # fmt: skip
    out = got.stdout + got.stderr
    assert got.returncode == 0, out
    assert "# pass 3" in got.stdout and "# fail 0" in got.stdout, out

    with urllib.request.urlopen(service.metrics, timeout=5) as scrape:
        text = scrape.read().decode()
    for protocol in ("connect", "grpc-web"):
        settle = {"grpc_method": "SettleHand", "protocol": protocol, "grpc_code": "OK"}
        assert metric(text, "grpc_server_handled_total", **settle) >= 1, protocol
        watch = {"grpc_method": "Watch", "protocol": protocol, "grpc_code": "CANCELLED"}
        assert metric(text, "grpc_server_handled_total", **watch) >= 2, protocol
        bad = {"grpc_method": "EvaluateRow", "protocol": protocol, "grpc_code": "INVALID_ARGUMENT"}
        assert metric(text, "grpc_server_handled_total", **bad) >= 1, protocol
