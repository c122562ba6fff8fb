"""A real ``ofc serve`` process with its HTTP port, for the tests of Connect and gRPC-Web."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import RedisServer, free_port

ROOT = Path(__file__).resolve().parents[2]
OFC = ROOT / ".venv" / "bin" / "ofc"
API_KEY = "connect-e2e-operator-key"
START_TIMEOUT = 30.0


@dataclass
class Served:
    """A running ``ofc serve``: its gRPC address, HTTP base URL and metrics URL."""

    process: subprocess.Popen[str]
    grpc: str
    http: str
    metrics: str


def serve(redis_url: str = "", **env: str) -> Served:
    grpc, http, metrics = (f"127.0.0.1:{free_port()}" for _ in range(3))
    process = subprocess.Popen(
        [str(OFC), "serve", "--listen", grpc, "--http-listen", http, "--metrics-listen", metrics,
         "--log-level", "warning"],
        env={**os.environ, "OFC_API_KEYS": API_KEY, "OFC_REDIS_URL": redis_url,
             "OFC_GRACE_SECONDS": "2", **env},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    served = Served(process, grpc, f"http://{http}", f"http://{metrics}/metrics")
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"ofc serve exited with {process.returncode}: {process.stderr}")
        try:
            with urllib.request.urlopen(f"{served.http}/healthz", timeout=5) as answer:
                if answer.read() == b"SERVING\n":
                    return served
        except OSError:  # refused, reset, or slow to answer (a loaded machine): asked again
            pass
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"ofc serve did not report SERVING within {START_TIMEOUT} s")
        time.sleep(0.1)


def stop(served: Served) -> int:
    served.process.terminate()
    try:
        return served.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        served.process.kill()
        served.process.wait()
        raise


@pytest.fixture(scope="module", params=["memory", "redis"])
def service(request: pytest.FixtureRequest) -> Iterator[Served]:
    """``ofc serve`` with an operator key, its tables in memory or in a throwaway Redis."""
    redis = RedisServer() if request.param == "redis" else None
    try:
        served = serve(redis.url if redis else "")
        try:
            yield served
        finally:
            stop(served)
    finally:
        if redis is not None:
            redis.stop()


@pytest.fixture(scope="module")
def memory_service() -> Iterator[Served]:
    served = serve()
    try:
        yield served
    finally:
        stop(served)
