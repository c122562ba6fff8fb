"""Fixtures of the web tests: a server with Redis tables and the URL a browser uses for it.

Until the service serves Connect on its own HTTP port, that URL is the development bridge
(tests/web/connect_bridge.py) in front of the server's gRPC port: ``web_url`` is the one
place to change when the service serves it natively.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from ofc_service.server.background import BackgroundServer
from ofc_service.server.config import ServerConfig

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server(redis_url: str) -> Iterator[BackgroundServer]:
    config = ServerConfig(
        listen="127.0.0.1:0", metrics_listen="", http_listen="", redis_url=redis_url, grace_seconds=1
    )
    with BackgroundServer(config) as running:
        yield running


def wait_for_http(url: str, process: subprocess.Popen[bytes], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the web bridge exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {timeout} s")


@pytest.fixture
def web_url(server: BackgroundServer) -> Iterator[str]:
    """Where the browser finds the service: today the development bridge in front of
    ``server``; once the service serves Connect, its own HTTP port."""
    port = free_port()
    bridge = subprocess.Popen(
        [sys.executable, "-m", "tests.web.connect_bridge", "--grpc", server.address,
         "--listen", f"127.0.0.1:{port}"],
        cwd=ROOT,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for_http(f"{url}/", bridge)
        yield url
    finally:
        bridge.terminate()
        try:
            bridge.wait(timeout=10)
        except subprocess.TimeoutExpired:
            bridge.kill()
            bridge.wait()
