"""SIGTERM ends ``ofc serve`` within its grace period and a margin whatever the store does,
and a second SIGTERM ends it at once.

A store whose close never finishes (and swallows its cancellation) holds its own shutdown
step, not the process: the step is logged by name and the process exits with status 1. A
call that holds the drain for the whole grace period gives way to a second SIGTERM. The
bounds below are deadlines for the test to fail rather than hang, not figures.
"""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from ofc_service.server.stopping import EXIT_MARGIN_S
from ofcpoker.v1 import rules_service_pb2 as pb
from ofcpoker.v1.rules_service_pb2_grpc import RulesServiceStub

from tests.api.wire import EXAMPLE_1_B, EXAMPLE_A, hand
from tests.conftest import free_port
from tests.e2e.test_serve_process import OFC

GRACE_SECONDS = 2.0
LONG_GRACE_SECONDS = 120.0


def _log_lines(process: subprocess.Popen[str]) -> list[dict[str, Any]]:
    assert process.stderr is not None
    return [json.loads(line) for line in process.stderr.read().splitlines()]


def _wait_serving(address: str) -> None:
    with grpc.insecure_channel(address) as channel:
        check = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=30, wait_for_ready=True
        )
        assert check.status == health_pb2.HealthCheckResponse.SERVING


def test_a_store_that_never_closes_does_not_hold_the_process() -> None:
    address = f"127.0.0.1:{free_port()}"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.stuck_store", address, str(GRACE_SECONDS)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        _wait_serving(address)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=3 * (GRACE_SECONDS + EXIT_MARGIN_S)) == 1
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    lines = _log_lines(process)
    stuck = [line for line in lines if line["msg"] == "shutdown step did not finish"]
    assert [line["step"] for line in stuck] == ["close table store"], lines
    assert any(line["msg"] == "exiting: shutdown steps did not finish" for line in lines), lines


def _requests(q: queue.Queue[pb.SettleHandsStreamRequest | None]) -> Iterator[Any]:
    while (item := q.get(timeout=60)) is not None:
        yield item


def test_a_second_sigterm_exits_at_once() -> None:
    address = f"127.0.0.1:{free_port()}"
    process = subprocess.Popen(
        [str(OFC), "serve", "--listen", address, "--metrics-listen", "", "--http-listen", "",
         "--grace-seconds", str(LONG_GRACE_SECONDS)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    q: queue.Queue[pb.SettleHandsStreamRequest | None] = queue.Queue()
    try:
        _wait_serving(address)
        with grpc.insecure_channel(address) as channel:
            # A call in flight that never ends by itself: the drain waits the whole grace.
            responses = RulesServiceStub(channel).SettleHandsStream(_requests(q))
            q.put(pb.SettleHandsStreamRequest(hand_id="held", hand=hand(EXAMPLE_A, EXAMPLE_1_B)))
            assert next(responses).hand_id == "held"
            health = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest())
            assert next(health).status == health_pb2.HealthCheckResponse.SERVING
            process.send_signal(signal.SIGTERM)
            assert next(health).status == health_pb2.HealthCheckResponse.NOT_SERVING
            health.cancel()
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=LONG_GRACE_SECONDS / 4) == 1
    finally:
        q.put(None)
        if process.poll() is None:
            process.kill()
            process.wait()
    lines = _log_lines(process)
    second = [line for line in lines if line["msg"] == "exiting at once on a second signal"]
    assert len(second) == 1, lines
    assert second[0]["signal"] == "SIGTERM" and second[0]["step"], lines  # what it cut short
