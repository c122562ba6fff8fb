"""Every client sends the routing header of table affinity: ``x-ofc-table-id``, equal to the
request's ``table_id``, on every TableService call about a table (CreateTable, whose id the
server picks, goes without). deploy/'s Envoy hashes on it (tests/deploy checks the config);
the server never reads it, so nothing but the choice of replica depends on it.

The Python TableClient and the Node client (clients/node/play.js) talk to a live server
through a recording gRPC proxy that notes each call's method, metadata and request. The web
client's header is checked in its own tests (clients/web/test/api.test.ts, and the browser
test's proxy, clients/web/test/browser/harness.ts).
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.protobuf.message_factory import GetMessageClass
from ofc_client import TableClient
from ofc_client.errors import OfcClientError
from ofc_client.tables import TABLE_ID_HEADER
from ofc_service.server.background import BackgroundServer
from ofc_service.server.config import ServerConfig
from ofcpoker.v1 import table_service_pb2

from tests.conftest import free_port
from tests.e2e import test_node_client

node = test_node_client.node  # the fixture: the node binary, clients/node installed
API_KEY = "affinity-operator-key"
# More operator keys the proxied server accepts (the command-line tests send each their own).
MORE_API_KEYS = ("key-on-the-command-line", "key-from-the-environment")
TABLE_SERVICE = table_service_pb2.DESCRIPTOR.services_by_name["TableService"]
TABLE_SCOPED = frozenset(m.name for m in TABLE_SERVICE.methods if m.name != "CreateTable")
# Metadata that belongs to HTTP/2 or gRPC itself, not to the call: not forwarded.
_NOT_FORWARDED = ("user-agent", "grpc-", ":")


@dataclass(frozen=True)
class Recorded:
    method: str  # "PlaceCards"
    metadata: dict[str, str]
    table_id: str | None  # the request's table_id field (None: the message has none)
    request_id: str | None  # the request's request_id field (None: the message has none)


class RecordingProxy(grpc.GenericRpcHandler):  # type: ignore[misc]
    """A gRPC proxy that forwards every TableService call, bytes unchanged, to ``upstream``
    and records it (unary calls and Watch: what the clients use). The next answer of each
    method in ``lose`` is lost after the server gave it: the client gets UNAVAILABLE."""

    def __init__(self, upstream: str) -> None:
        self.channel = grpc.insecure_channel(upstream)
        self.calls: list[Recorded] = []
        self.lose: set[str] = set()
        self._losing = threading.Lock()  # the server's threads take from ``lose`` one at a time
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), handlers=[self])
        self.address = f"127.0.0.1:{free_port()}"
        self.server.add_insecure_port(self.address)

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        path: str = details.method
        service, _, name = path.lstrip("/").partition("/")
        if service != TABLE_SERVICE.full_name:
            return None
        method = TABLE_SERVICE.methods_by_name[name]
        request_class = GetMessageClass(method.input_type)
        metadata = tuple(
            (k, v) for k, v in details.invocation_metadata if not k.startswith(_NOT_FORWARDED)
        )

        has_table_id = "table_id" in method.input_type.fields_by_name
        has_request_id = "request_id" in method.input_type.fields_by_name

        def record(request: bytes) -> None:
            message: Any = request_class.FromString(request)
            table_id = message.table_id if has_table_id else None
            request_id = message.request_id if has_request_id else None
            self.calls.append(
                Recorded(name, {str(k): str(v) for k, v in metadata}, table_id, request_id)
            )

        def failed(error: grpc.RpcError, context: grpc.ServicerContext) -> None:
            context.set_trailing_metadata(error.trailing_metadata())
            context.abort(error.code(), error.details())

        if method.server_streaming:

            def stream(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
                record(request)
                call = self.channel.unary_stream(path)(request, metadata=metadata)
                context.add_callback(call.cancel)
                try:
                    yield from call
                except grpc.RpcError as error:
                    if context.is_active():
                        failed(error, context)

            return grpc.unary_stream_rpc_method_handler(stream)

        def unary(request: bytes, context: grpc.ServicerContext) -> bytes:
            record(request)
            try:
                answer: bytes = self.channel.unary_unary(path)(
                    request, metadata=metadata, timeout=context.time_remaining()
                )
            except grpc.RpcError as error:
                failed(error, context)
                raise
            with self._losing:
                lost = name in self.lose
                self.lose.discard(name)
            if lost:
                context.abort(grpc.StatusCode.UNAVAILABLE, "the proxy lost the answer")
            return answer

        return grpc.unary_unary_rpc_method_handler(unary)


@pytest.fixture(scope="module")
def proxy() -> Iterator[RecordingProxy]:
    config = ServerConfig(
        listen="127.0.0.1:0", metrics_listen="", http_listen="", grace_seconds=1,
        api_keys=",".join((API_KEY, *MORE_API_KEYS)),
    )  # fmt: skip
    with BackgroundServer(config) as running:
        recording = RecordingProxy(running.address)
        recording.server.start()
        try:
            yield recording
        finally:
            recording.server.stop(grace=None)
            recording.channel.close()


def check_routing(calls: list[Recorded]) -> set[str]:
    """Each table-scoped call carried its table's id as the header, CreateTable none; the
    methods called, for the caller to check what was covered."""
    assert calls, "no call went through the proxy"
    for call in calls:
        if call.method == "CreateTable":
            assert TABLE_ID_HEADER not in call.metadata, call
        else:
            assert call.table_id, call
            assert call.metadata.get(TABLE_ID_HEADER) == call.table_id, call
    return {call.method for call in calls}


def attempt(action: Callable[[], Any]) -> None:
    """A call whose answer does not matter here (it reached the server: that is the point)."""
    with contextlib.suppress(OfcClientError):
        action()


def test_the_python_table_client_sends_the_table_id_on_every_call_about_a_table(
    proxy: RecordingProxy,
) -> None:
    proxy.calls.clear()
    with (
        TableClient(proxy.address, api_key=API_KEY) as host,
        TableClient(proxy.address) as ann,
        TableClient(proxy.address) as bob,
    ):
        table_id = host.create_table(seats=2, client_seed_policy="players").table_id
        ann.join(table_id, 0, "ann")
        bob.join(table_id, 1, "bob")
        bob.leave(table_id)
        bob.join(table_id, 1, "bob")
        ann.get(table_id)  # the version bob's moves made
        ann.set_client_seed(table_id, "ann's seed")
        with ann.watch(table_id) as watch:
            assert next(watch).table_id == table_id  # type: ignore[union-attr]
        ann.start_hand(table_id)
        assert ann.get(table_id).hand is not None
        # Moves the server refuses are calls about the table all the same.
        attempt(lambda: ann.place(table_id, {"2c": "bottom"}))
        attempt(lambda: ann.set_fantasyland(table_id, "Qs Qd 2c / 3c 4c 5c 6c 8d / 9h Th Jh Kh Ah"))
        attempt(lambda: ann.hand_history(table_id, 1))
        ann.list_hands(table_id)
        attempt(ann.retry)  # the last mutating request, sent again
    assert check_routing(proxy.calls) == {"CreateTable", *TABLE_SCOPED}


def test_the_node_client_sends_the_table_id_on_every_call_about_a_table(
    proxy: RecordingProxy, node: str
) -> None:
    proxy.calls.clear()
    played = subprocess.run(
        [node, str(test_node_client.NODE_DIR / "play.js"), proxy.address, API_KEY],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert played.returncode == 0, played.stderr
    assert check_routing(proxy.calls) >= {
        "CreateTable", "JoinSeat", "Watch", "StartHand", "GetTable", "PlaceCards",
        "GetHandHistory",
    }  # fmt: skip
