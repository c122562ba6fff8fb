"""The server never answers UNKNOWN, and a call its client cancels is recorded as CANCELLED.

protos/README.md promises both. Handlers that let an exception escape (gRPC itself would
answer UNKNOWN) are answered INTERNAL with an ErrorInfo by the interceptor; a cancelled
stream, whichever way its handler ends (CancelledError while it waits, or its generator
closed while it was suspended in a send), is counted and logged as CANCELLED, at warning
level: it is the client's choice, not a server error for the OfcHighErrorRate alert.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from ofc_service.metrics import GRPC_HANDLED
from ofc_service.server.background import BackgroundServer
from ofc_service.server.config import ServerConfig
from ofc_service.server.interceptors import (
    ObservabilityInterceptor,
    _Probe,
    _wrap_streaming_response,
)
from ofcpoker.v1 import table_service_pb2 as tables_pb
from ofcpoker.v1.table_service_pb2_grpc import TableServiceStub

from tests.conftest import RedisServer

SERVICE = "test.v1.Faulty"


def _handled(method: str, code: str, service: str = SERVICE) -> float:
    grpc_type = "unary" if method.startswith("Unary") else "server_stream"
    value = GRPC_HANDLED.labels(grpc_type, service, method, "grpc", code)._value.get()
    return float(value)


async def _unary_raises(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    raise RuntimeError("a bug")


async def _stream_raises(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
    yield b"first"
    raise KeyError("a bug after the first message")


async def _stream_forever(
    request: bytes, context: grpc.aio.ServicerContext
) -> AsyncIterator[bytes]:
    while True:  # as fast as the transport takes them: the cancel lands mid-send
        yield b"x" * 65536


def _faulty_handlers() -> grpc.GenericRpcHandler:
    identity = bytes  # raw bytes in and out
    return grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "UnaryRaises": grpc.unary_unary_rpc_method_handler(
                _unary_raises, request_deserializer=identity, response_serializer=identity
            ),
            "StreamRaises": grpc.unary_stream_rpc_method_handler(
                _stream_raises, request_deserializer=identity, response_serializer=identity
            ),
            "StreamForever": grpc.unary_stream_rpc_method_handler(
                _stream_forever, request_deserializer=identity, response_serializer=identity
            ),
        },
    )


def _reason(error: grpc.aio.AioRpcError) -> str:
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info):
                    return str(info.reason)
    return ""


def test_escaped_exceptions_are_internal_with_a_reason_never_unknown() -> None:
    async def scenario() -> None:
        server = grpc.aio.server(interceptors=[ObservabilityInterceptor()])
        server.add_generic_rpc_handlers((_faulty_handlers(),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                with pytest.raises(grpc.aio.AioRpcError) as unary:
                    await channel.unary_unary(f"/{SERVICE}/UnaryRaises")(b"")
                stream = channel.unary_stream(f"/{SERVICE}/StreamRaises")(b"")
                assert await stream.read() == b"first"
                with pytest.raises(grpc.aio.AioRpcError) as streamed:
                    await stream.read()
                for error in (unary.value, streamed.value):
                    assert error.code() == grpc.StatusCode.INTERNAL
                    assert _reason(error) == "INTERNAL"
        finally:
            await server.stop(0)

    before = {m: _handled(m, "UNKNOWN") for m in ("UnaryRaises", "StreamRaises")}
    internal = {m: _handled(m, "INTERNAL") for m in before}
    asyncio.run(scenario())
    for method in before:
        assert _handled(method, "UNKNOWN") == before[method]
        assert _handled(method, "INTERNAL") == internal[method] + 1


def test_a_stream_cancelled_mid_send_is_cancelled(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        server = grpc.aio.server(interceptors=[ObservabilityInterceptor()])
        server.add_generic_rpc_handlers((_faulty_handlers(),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                for _ in range(5):
                    call = channel.unary_stream(f"/{SERVICE}/StreamForever")(b"")
                    await call.read()
                    call.cancel()
            deadline = time.monotonic() + 10
            while _handled("StreamForever", "CANCELLED") < before + 5:
                assert time.monotonic() < deadline, "the cancelled calls were never recorded"
                await asyncio.sleep(0.02)
        finally:
            await server.stop(0)

    before = _handled("StreamForever", "CANCELLED")
    unknown = _handled("StreamForever", "UNKNOWN")
    with caplog.at_level(logging.WARNING, logger="ofc.access"):
        asyncio.run(scenario())
    assert _handled("StreamForever", "UNKNOWN") == unknown
    cancelled = [r for r in caplog.records if getattr(r, "fields", {}).get("code") == "CANCELLED"]
    assert cancelled and all(r.levelno == logging.WARNING for r in cancelled)


class _Context:
    """Just enough of a ServicerContext for the interceptor's bookkeeping."""

    def invocation_metadata(self) -> tuple[()]:
        return ()

    def peer(self) -> str:
        return "ipv4:127.0.0.1:1"

    def set_trailing_metadata(self, metadata: Any) -> None:
        pass

    def cancelled(self) -> bool:
        return False  # the generator is closed before gRPC marks the call

    def code(self) -> None:
        return None

    def details(self) -> str:
        return ""


def test_a_stream_generator_closed_in_a_send_is_cancelled() -> None:
    """What gRPC does to a server stream cancelled while suspended at ``yield``: the
    generator is closed (GeneratorExit) with no status set. Recorded as CANCELLED."""

    async def events(request: Any, context: Any) -> AsyncIterator[str]:
        while True:
            yield "event"

    probe = _Probe(f"/{SERVICE}/Closed", "server_stream")
    generate = _wrap_streaming_response(probe, events, False)

    async def scenario() -> None:
        stream = generate(b"", _Context())
        assert await stream.__anext__() == "event"
        await stream.aclose()

    before = _handled("Closed", "CANCELLED")
    asyncio.run(scenario())
    assert _handled("Closed", "CANCELLED") == before + 1
    assert _handled("Closed", "UNKNOWN") == 0


@pytest.fixture(params=["memory", "redis"])
def table_server(request: pytest.FixtureRequest) -> Iterator[BackgroundServer]:
    redis = RedisServer() if request.param == "redis" else None
    config = ServerConfig(
        listen="127.0.0.1:0",
        metrics_listen="",
        http_listen="",
        redis_url=redis.url if redis else "",
    )
    try:
        with BackgroundServer(config) as server:
            yield server
    finally:
        if redis is not None:
            redis.stop()


def test_a_watch_cancelled_by_its_client_is_cancelled(table_server: BackgroundServer) -> None:
    method, service = "Watch", "ofcpoker.v1.TableService"
    before = {code: _handled(method, code, service) for code in ("CANCELLED", "UNKNOWN")}
    with grpc.insecure_channel(table_server.address) as channel:
        stub = TableServiceStub(channel)
        table_id = stub.CreateTable(tables_pb.CreateTableRequest(request_id="c1")).table_id
        stub.JoinSeat(  # an event in the log, for the watches that resume from it
            tables_pb.JoinSeatRequest(
                table_id=table_id, player_id="p0", expected_version=1, request_id="j1"
            )
        )
        for batch in (False, True):
            for resume in ("", "0"):  # from a snapshot; from the log (the table's events)
                watch = stub.Watch(
                    tables_pb.WatchRequest(
                        table_id=table_id, after_event_id=resume, batch_events=batch
                    )
                )
                next(watch)
                watch.cancel()
        with pytest.raises(grpc.RpcError) as timed_out:
            list(stub.Watch(tables_pb.WatchRequest(table_id=table_id), timeout=0.3))
        assert timed_out.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    deadline = time.monotonic() + 10
    while _handled(method, "CANCELLED", service) < before["CANCELLED"] + 5:
        assert time.monotonic() < deadline, "the cancelled watches were never recorded"
        time.sleep(0.02)
    assert _handled(method, "UNKNOWN", service) == before["UNKNOWN"]
