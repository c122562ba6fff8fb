"""``ofc serve`` as a real process: flags and env vars, /metrics, JSON logs, graceful SIGTERM."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from ofcpoker.v1 import rules_service_pb2 as pb
from ofcpoker.v1.rules_service_pb2_grpc import RulesServiceStub

from tests.api.wire import EXAMPLE_1_B, EXAMPLE_A, hand
from tests.conftest import free_port, self_signed_certificate
from tests.e2e.test_shutdown_streams import reason_of

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
        "OFC_HTTP_LISTEN": "",
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


def test_sigterm_refuses_the_calls_waiting_to_start_retryably_never_cancelled() -> None:
    """A busy replica holds calls that gRPC received and the service has not started yet.
    gRPC's own stop would end them CANCELLED (which clients do not retry); the service
    takes them first and refuses them UNAVAILABLE, SERVER_SHUTTING_DOWN (they did
    nothing). Calls already running finish. Forty clients each keep one call in flight."""
    port = free_port()
    process = subprocess.Popen(
        [str(OFC), "serve", "--listen", f"127.0.0.1:{port}", "--http-listen", "",
         "--metrics-listen", "", "--log-level", "error"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    request = pb.SettleHandRequest(hand=hand(EXAMPLE_A, EXAMPLE_1_B))
    sent_sigterm = threading.Event()
    ends: queue.Queue[tuple[grpc.StatusCode, str]] = queue.Queue()

    def client(ready: threading.Barrier) -> None:
        options = [("grpc.use_local_subchannel_pool", 1)]  # a connection of its own
        with grpc.insecure_channel(f"127.0.0.1:{port}", options) as channel:
            settle = RulesServiceStub(channel).SettleHand
            settle(request, timeout=20, wait_for_ready=True)
            ready.wait(timeout=30)
            while not sent_sigterm.is_set():  # the last call is the one in flight at SIGTERM
                try:
                    settle(request, timeout=20)
                except grpc.RpcError as error:
                    ends.put((error.code(), reason_of(error)))
                    return
            ends.put((grpc.StatusCode.OK, ""))

    clients = 40
    ready = threading.Barrier(clients + 1)
    threads = [threading.Thread(target=client, args=(ready,), daemon=True) for _ in range(clients)]
    try:
        for thread in threads:
            thread.start()
        ready.wait(timeout=30)
        time.sleep(0.5)  # every client busy: calls queue up in the server
        process.send_signal(signal.SIGTERM)
        sent_sigterm.set()
        for thread in threads:
            thread.join(timeout=30)
        assert process.wait(timeout=GRACE_SECONDS + 10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    codes = [ends.get_nowait() for _ in range(clients)]
    refused = [c for c in codes if c[0] != grpc.StatusCode.OK]
    assert refused, "no call was waiting at SIGTERM: the test proves nothing"
    assert set(refused) == {(grpc.StatusCode.UNAVAILABLE, "SERVER_SHUTTING_DOWN")}, codes


def test_bad_configuration_exits_2_with_the_variable_named() -> None:
    env = {**os.environ, "OFC_MAX_MESSAGE_BYTES": "lots"}
    result = subprocess.run(
        [str(OFC), "serve"], env=env, capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 2
    assert "OFC_MAX_MESSAGE_BYTES / --max-message-bytes" in result.stderr


def _serve(*flags: str, grace: float = GRACE_SECONDS) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    env = {
        **os.environ,
        "OFC_GRACE_SECONDS": str(grace),
        "OFC_METRICS_LISTEN": "",
        "OFC_HTTP_LISTEN": "",
    }
    env.pop("GRPC_VERBOSITY", None)  # what ofc serve does by itself
    process = subprocess.Popen(
        [str(OFC), "serve", "--listen", f"127.0.0.1:{port}", *flags],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process, f"127.0.0.1:{port}"


def _json_lines(stderr: str) -> list[dict[str, object]]:
    """Every line of stderr, each one a JSON object (the test fails on the first that is not)."""
    lines = []
    for line in stderr.splitlines():
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:
            raise AssertionError(f"not a JSON line on stderr: {line!r}") from None
    return lines


def test_sigterm_ends_watch_streams_at_once_then_drains() -> None:
    from ofcpoker.v1 import table_service_pb2 as tables_pb
    from ofcpoker.v1.table_service_pb2_grpc import TableServiceStub

    from tests.e2e.test_shutdown_streams import reason_of

    grace = 60.0  # what the streams would hold the process for: far from the bounds below
    process, address = _serve(grace=grace)
    try:
        with grpc.insecure_channel(address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            health.Check(health_pb2.HealthCheckRequest(), timeout=20, wait_for_ready=True)
            tables = TableServiceStub(channel)
            table_id = tables.CreateTable(tables_pb.CreateTableRequest(request_id="t")).table_id
            watches = [tables.Watch(tables_pb.WatchRequest(table_id=table_id)) for _ in range(3)]
            for watch in watches:
                next(watch)  # the snapshot: open
            q: queue.Queue[pb.SettleHandsStreamRequest | None] = queue.Queue()
            responses = RulesServiceStub(channel).SettleHandsStream(_requests(q))
            q.put(pb.SettleHandsStreamRequest(hand_id="before", hand=hand(EXAMPLE_A, EXAMPLE_1_B)))
            assert next(responses).hand_id == "before"

            sent_at = time.monotonic()
            process.send_signal(signal.SIGTERM)
            for watch in watches:
                try:
                    next(watch)
                    raise AssertionError("the watch went on after SIGTERM")
                except grpc.RpcError as ended:
                    assert ended.code() == grpc.StatusCode.UNAVAILABLE, ended
                    assert reason_of(ended) == "SERVER_SHUTTING_DOWN"
            watches_ended = time.monotonic() - sent_at
            # The call in flight still finishes (the drain), then the process exits.
            q.put(pb.SettleHandsStreamRequest(hand_id="after", hand=hand(EXAMPLE_A, EXAMPLE_1_B)))
            assert next(responses).hand_id == "after"
            q.put(None)
            assert list(responses) == []
        assert process.wait(timeout=grace + 10) == 0
        exited = time.monotonic() - sent_at
        assert process.stderr is not None
        lines = _json_lines(process.stderr.read())
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert watches_ended < 20.0, f"the watches ended {watches_ended:.1f} s after SIGTERM"
    assert exited < 30.0, f"the process took {exited:.1f} s (grace {grace} s): streams held it"
    codes = [line["code"] for line in lines if str(line.get("method", "")).endswith("/Watch")]
    assert codes == ["UNAVAILABLE"] * 3


def test_stderr_is_json_lines_only_with_tls_and_failed_handshakes(tmp_path: Path) -> None:
    """gRPC core logs failed TLS handshakes itself (``I1201 ... ssl_transport_security.cc``
    lines on fd 2): they, and everything else, come out as JSON lines."""
    cert, key = self_signed_certificate(tmp_path)
    tls = ("--tls-cert", str(cert), "--tls-key", str(key))
    process, address = _serve(*tls, "--log-level", "debug")
    port = address.rsplit(":", 1)[1]
    try:
        trusted = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        with grpc.secure_channel(f"localhost:{port}", trusted) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            ready = health.Check(health_pb2.HealthCheckRequest(), timeout=20, wait_for_ready=True)
            assert ready.status == health_pb2.HealthCheckResponse.SERVING
        for channel in (
            grpc.insecure_channel(address),  # plaintext to a TLS port
            grpc.secure_channel(f"localhost:{port}", grpc.ssl_channel_credentials()),  # untrusted
        ):
            with channel, pytest.raises(grpc.RpcError):
                health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(), timeout=3
                )
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=GRACE_SECONDS + 10) == 0
        assert process.stderr is not None
        lines = _json_lines(process.stderr.read())
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert lines[0]["msg"] == "serving" and lines[0]["tls"] is True
    assert lines[-1]["msg"] == "stopped"


def test_grpc_core_errors_are_json_lines_too() -> None:
    """A port in use: gRPC core says why on fd 2 (``E... add_port.cc``), as a JSON line."""
    first, address = _serve()
    try:
        with grpc.insecure_channel(address) as channel:
            health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=20, wait_for_ready=True
            )
        second = subprocess.run(
            [str(OFC), "serve", "--listen", address, "--metrics-listen", "", "--http-listen", ""],
            env={k: v for k, v in os.environ.items() if k != "GRPC_VERBOSITY"},
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    finally:
        first.terminate()
        first.wait(timeout=GRACE_SECONDS + 10)
    assert second.returncode == 1
    lines = _json_lines(second.stderr)
    assert [line["msg"] for line in lines][-1] == "cannot start"
    native = [line for line in lines if line["logger"] == "ofc.native"]
    assert native and native[0]["level"] == "error" and "add_port" in str(native[0]["source"])
