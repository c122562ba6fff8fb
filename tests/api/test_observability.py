"""Health, reflection, /metrics, request ids and access logs of the in-process server."""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from ofc_service.server.background import BackgroundServer
from ofc_service.server.logs import JsonFormatter
from ofcpoker.v1 import rules_service_pb2 as pb
from ofcpoker.v1.rules_service_pb2_grpc import RulesServiceStub

from tests.api.wire import EXAMPLE_1_B, EXAMPLE_3_FOULED, EXAMPLE_A, hand

RULES = "ofcpoker.v1.RulesService"


@pytest.mark.parametrize("service", ["", RULES, "grpc.health.v1.Health"])
def test_health_is_serving(channel: grpc.Channel, service: str) -> None:
    response = health_pb2_grpc.HealthStub(channel).Check(
        health_pb2.HealthCheckRequest(service=service)
    )
    assert response.status == health_pb2.HealthCheckResponse.SERVING


def test_health_of_an_unknown_service_is_not_found(channel: grpc.Channel) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="nope.v1.X")
        )
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND


def test_reflection_lists_the_services_and_serves_the_protos(channel: grpc.Channel) -> None:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    requests = [
        reflection_pb2.ServerReflectionRequest(list_services=""),
        reflection_pb2.ServerReflectionRequest(file_containing_symbol=RULES),
    ]
    listed, files = list(stub.ServerReflectionInfo(iter(requests)))
    names = {s.name for s in listed.list_services_response.service}
    assert {RULES, "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"} <= names
    protos = files.file_descriptor_response.file_descriptor_proto
    assert any(b"ofcpoker/v1/rules_service.proto" in p for p in protos)


def _scrape(server: BackgroundServer) -> str:
    url = f"http://127.0.0.1:{server.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as response:
        text: str = response.read().decode()
    return text


def _value(text: str, name: str, **labels: str) -> float:
    """The sample ``name{labels...}`` (labels may be a subset) from the exposition text."""
    total = 0.0
    for line in text.splitlines():
        match = re.fullmatch(r"([a-z_]+)(?:\{(.*)\})? (\S+)", line)
        if not match or match[1] != name:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match[2] or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(match[3])
    return total


def test_metrics_have_the_standard_names_and_count_calls(
    server: BackgroundServer, stub: RulesServiceStub
) -> None:
    stub.SettleHand(pb.SettleHandRequest(hand=hand(EXAMPLE_A, EXAMPLE_1_B)))
    stub.SettleHands(
        pb.SettleHandsRequest(hands=[hand(EXAMPLE_3_FOULED, EXAMPLE_1_B.replace("Kd", "Ks"))])
    )
    with pytest.raises(grpc.RpcError):
        stub.SettleHand(pb.SettleHandRequest(hand=hand(EXAMPLE_A)))
    text = _scrape(server)
    method = {"grpc_service": RULES, "grpc_method": "SettleHand", "grpc_type": "unary"}
    assert _value(text, "grpc_server_started_total", **method) >= 2
    assert _value(text, "grpc_server_handled_total", grpc_code="OK", **method) >= 1
    assert _value(text, "grpc_server_handled_total", grpc_code="INVALID_ARGUMENT", **method) >= 1
    assert _value(text, "grpc_server_handling_seconds_count", **method) >= 2
    assert _value(text, "grpc_server_handling_seconds_bucket", le="+Inf", **method) >= 2
    assert _value(text, "ofc_hands_settled_total", ruleset="classic") >= 2
    assert _value(text, "ofc_fouls_total", ruleset="classic") >= 1
    assert _value(text, "ofc_request_errors_total", reason="WRONG_PLAYER_COUNT") >= 1


def test_every_message_is_counted_as_the_http_port_counts_it(
    server: BackgroundServer, stub: RulesServiceStub
) -> None:
    """A unary call's request and response are messages too (go-grpc-prometheus counts them,
    and so does the HTTP port): one received per call decoded, one sent per answer."""
    method = {"grpc_service": RULES, "grpc_method": "SettleHand", "grpc_type": "unary"}

    def counts() -> tuple[float, float]:
        text = _scrape(server)
        received = _value(text, "grpc_server_msg_received_total", **method)
        return received, _value(text, "grpc_server_msg_sent_total", **method)

    before = counts()
    stub.SettleHand(pb.SettleHandRequest(hand=hand(EXAMPLE_A, EXAMPLE_1_B)))
    with pytest.raises(grpc.RpcError):
        stub.SettleHand(pb.SettleHandRequest(hand=hand(EXAMPLE_A)))  # refused: no answer
    after = counts()
    assert (after[0] - before[0], after[1] - before[1]) == (2, 1)


def test_streaming_calls_are_counted(server: BackgroundServer, stub: RulesServiceStub) -> None:
    requests = [
        pb.SettleHandsStreamRequest(hand_id=str(i), hand=hand(EXAMPLE_A, EXAMPLE_1_B))
        for i in range(3)
    ]
    assert len(list(stub.SettleHandsStream(iter(requests)))) == 3
    text = _scrape(server)
    method = {"grpc_method": "SettleHandsStream", "grpc_type": "bidi_stream"}
    assert _value(text, "grpc_server_handled_total", grpc_code="OK", **method) >= 1
    assert _value(text, "grpc_server_msg_received_total", **method) >= 3
    assert _value(text, "grpc_server_msg_sent_total", **method) >= 3


def test_request_id_is_echoed_or_generated(stub: RulesServiceStub) -> None:
    _, call = stub.ListPresets.with_call(
        pb.ListPresetsRequest(), metadata=(("x-request-id", "abc-123"),)
    )
    assert dict(call.trailing_metadata())["x-request-id"] == "abc-123"
    _, call = stub.ListPresets.with_call(pb.ListPresetsRequest())
    assert re.fullmatch(r"[0-9a-f]{16}", dict(call.trailing_metadata())["x-request-id"])
    _, call = stub.ListPresets.with_call(
        pb.ListPresetsRequest(), metadata=(("x-request-id", "x" * 500),)
    )
    assert dict(call.trailing_metadata())["x-request-id"] != "x" * 500


def _logged(caplog: pytest.LogCaptureFixture, request_id: str) -> list[logging.LogRecord]:
    """Records for one request; the server logs right after the status goes out, so wait."""
    deadline = time.monotonic() + 30  # a bound for failing: a loaded machine logs late
    while True:
        found = [
            r for r in caplog.records if getattr(r, "fields", {}).get("request_id") == request_id
        ]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.01)


def test_errors_are_logged_as_json_with_the_request_id(
    stub: RulesServiceStub, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="ofc.access"):
        with pytest.raises(grpc.RpcError):
            stub.SettleHand(pb.SettleHandRequest(), metadata=(("x-request-id", "log-me"),))
        records = _logged(caplog, "log-me")
    assert len(records) == 1 and records[0].levelno == logging.WARNING
    line = json.loads(JsonFormatter().format(records[0]))
    assert line["code"] == "INVALID_ARGUMENT"
    assert line["method"] == f"/{RULES}/SettleHand"
    assert line["duration_ms"] >= 0


def test_successful_calls_are_logged_only_at_debug(
    stub: RulesServiceStub, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="ofc.access"):
        stub.ListPresets(pb.ListPresetsRequest(), metadata=(("x-request-id", "loud"),))
        assert _logged(caplog, "loud")
    with caplog.at_level(logging.INFO, logger="ofc.access"):
        stub.ListPresets(pb.ListPresetsRequest(), metadata=(("x-request-id", "quiet"),))
        with pytest.raises(grpc.RpcError):  # an error is logged at INFO: a marker that comes later
            stub.SettleHand(pb.SettleHandRequest(), metadata=(("x-request-id", "marker"),))
        assert _logged(caplog, "marker")
        assert not [
            r for r in caplog.records if getattr(r, "fields", {}).get("request_id") == "quiet"
        ]
