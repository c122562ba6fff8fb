"""``ofc serve`` as a real process: flags and env vars, /metrics, JSON logs, graceful SIGTERM."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from ofcpoker.v1 import rules_service_pb2 as pb
from ofcpoker.v1.rules_service_pb2_grpc import RulesServiceStub

from tests.api.wire import EXAMPLE_1_B, EXAMPLE_A, hand
from tests.conftest import free_port

GRACE_SECONDS = 5
OFC = Path(sys.executable).with_name("ofc")


def _requests(
    q: queue.Queue[pb.SettleHandsStreamRequest | None],
) -> Iterator[pb.SettleHandsStreamRequest]:
    while (item := q.get(timeout=30)) is not None:
        yield item


def test_sigterm_drains_in_flight_calls_and_exits_0() -> None:
    port, metrics_port = free_port(), free_port()
    env = {
        **os.environ,
        "OFC_METRICS_LISTEN": f"127.0.0.1:{metrics_port}",
        "OFC_GRACE_SECONDS": str(GRACE_SECONDS),
        "OFC_LOG_LEVEL": "debug",
        "OFC_LISTEN": "127.0.0.1:1",  # the flag wins over the environment
    }
    process = subprocess.Popen(
        [str(OFC), "serve", "--listen", f"127.0.0.1:{port}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            health = health_pb2_grpc.HealthStub(channel)
            ready = health.Check(health_pb2.HealthCheckRequest(), timeout=20, wait_for_ready=True)
            assert ready.status == health_pb2.HealthCheckResponse.SERVING
            watch = health.Watch(health_pb2.HealthCheckRequest())
            assert next(watch).status == health_pb2.HealthCheckResponse.SERVING

            # A stream in flight when SIGTERM arrives.
            q: queue.Queue[pb.SettleHandsStreamRequest | None] = queue.Queue()
            responses = RulesServiceStub(channel).SettleHandsStream(
                _requests(q), metadata=(("x-request-id", "drain-me"),)
            )
            q.put(pb.SettleHandsStreamRequest(hand_id="before", hand=hand(EXAMPLE_A, EXAMPLE_1_B)))
            assert next(responses).hand_id == "before"

            url = f"http://127.0.0.1:{metrics_port}/metrics"
            with urllib.request.urlopen(url, timeout=5) as scrape:
                assert "grpc_server_started_total" in scrape.read().decode()

            sent_at = time.monotonic()
            process.send_signal(signal.SIGTERM)
            assert next(watch).status == health_pb2.HealthCheckResponse.NOT_SERVING
            watch.cancel()

            q.put(pb.SettleHandsStreamRequest(hand_id="after", hand=hand(EXAMPLE_A, EXAMPLE_1_B)))
            after = next(responses)
            assert after.hand_id == "after" and after.outcome.settlement.players[0].points == 8
            q.put(None)
            assert list(responses) == []  # the stream ends with OK, not CANCELLED

        assert process.wait(timeout=GRACE_SECONDS + 10) == 0
        assert time.monotonic() - sent_at < GRACE_SECONDS + 2
        assert process.stderr is not None
        stderr = process.stderr.read()
        assert "Traceback" not in stderr, stderr  # every line is a JSON log line; say why not
        lines = [json.loads(line) for line in stderr.splitlines()]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    messages = [line["msg"] for line in lines]
    assert messages[0] == "serving" and lines[0]["listen"] == f"127.0.0.1:{port}"
    assert "shutting down" in messages and messages[-1] == "stopped"
    streamed = [line for line in lines if line.get("request_id") == "drain-me"]
    assert [(s["method"], s["code"]) for s in streamed] == [
        ("/ofcpoker.v1.RulesService/SettleHandsStream", "OK")
    ]


def test_bad_configuration_exits_2_with_the_variable_named() -> None:
    env = {**os.environ, "OFC_MAX_MESSAGE_BYTES": "lots"}
    result = subprocess.run(
        [str(OFC), "serve"], env=env, capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 2
    assert "OFC_MAX_MESSAGE_BYTES / --max-message-bytes" in result.stderr
