"""An in-process server on a free port for the API tests, and a channel to it."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from ofc_service.server.background import BackgroundServer
from ofc_service.server.config import ServerConfig
from ofcpoker.v1 import rules_service_pb2_grpc

# Small enough that the fuzz test's oversized messages are cheap to build.
MAX_MESSAGE_BYTES = 256 * 1024


@pytest.fixture(scope="package")
def server() -> Iterator[BackgroundServer]:
    config = ServerConfig(
        listen="127.0.0.1:0",
        metrics_listen="127.0.0.1:0",
        http_listen="127.0.0.1:0",
        max_message_bytes=MAX_MESSAGE_BYTES,
        grace_seconds=1,
    )
    with BackgroundServer(config) as running:
        yield running


@pytest.fixture(scope="package")
def channel(server: BackgroundServer) -> Iterator[grpc.Channel]:
    # The client may send more than the server accepts (to test RESOURCE_EXHAUSTED).
    options = [("grpc.max_send_message_length", 8 * MAX_MESSAGE_BYTES)]
    with grpc.insecure_channel(server.address, options) as ch:
        yield ch


@pytest.fixture(scope="package")
def stub(channel: grpc.Channel) -> rules_service_pb2_grpc.RulesServiceStub:
    return rules_service_pb2_grpc.RulesServiceStub(channel)
