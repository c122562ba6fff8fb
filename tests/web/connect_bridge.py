"""A development bridge, not part of the product: Connect and gRPC-Web over HTTP in front of
a running gRPC server, and the web table (clients/web/dist) at ``/``.

It stands in until the service serves Connect itself on its HTTP port; the browser test
(tests/web/test_browser_table.py) starts it next to the server. It knows no RPC by name:
every method of the services below is built from the protobuf descriptors and forwarded
over one grpc.aio channel, with the request's headers as metadata (the seat token and API
key headers, ``authorization``), the Connect timeout as the gRPC deadline, and a gRPC error
returned as the same Connect error: code, message and the ``google.rpc.Status`` details
(ErrorInfo, BadRequest) from ``grpc-status-details-bin``.

    python -m tests.web.connect_bridge --grpc 127.0.0.1:50051 --listen 127.0.0.1:8080
"""

from __future__ import annotations

import argparse
import base64
import mimetypes
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc
import uvicorn
from connectrpc.code import Code
from connectrpc.compat import google_protobuf_codecs
from connectrpc.errors import ConnectError, ErrorDetail
from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType
from connectrpc.request import RequestContext
from connectrpc.server import ConnectASGIApplication, Endpoint
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass
from google.rpc import status_pb2
from ofcpoker.v1 import rules_service_pb2, settlement_feed_pb2, table_service_pb2
from protobuf.wkt import Any as AnyDetail

STATIC_DIR = Path(__file__).resolve().parents[2] / "clients" / "web" / "dist"
SERVICES: tuple[ServiceDescriptor, ...] = (
    rules_service_pb2.DESCRIPTOR.services_by_name["RulesService"],
    table_service_pb2.DESCRIPTOR.services_by_name["TableService"],
    settlement_feed_pb2.DESCRIPTOR.services_by_name["SettlementFeedService"],
)
STATUS_DETAILS = "grpc-status-details-bin"
# Request headers that belong to HTTP or to the Connect protocol, not to the call.
_NOT_METADATA = frozenset((
    "host", "content-type", "content-length", "content-encoding", "accept", "accept-encoding",
    "accept-language", "connection", "keep-alive", "te", "trailer", "transfer-encoding",
    "upgrade", "user-agent", "origin", "referer", "cookie", "priority", "cache-control",
    "pragma", "dnt", "x-user-agent", "x-grpc-web",
))  # fmt: skip
_NOT_METADATA_PREFIXES = ("connect-", "grpc-", "sec-", ":")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def metadata_of(headers: Mapping[str, str]) -> tuple[tuple[str, str | bytes], ...]:
    """The call's gRPC metadata from its HTTP request headers (``-bin`` values decoded)."""
    out: list[tuple[str, str | bytes]] = []
    for key, value in headers.items():
        key = key.lower()
        if key in _NOT_METADATA or key.startswith(_NOT_METADATA_PREFIXES):
            continue
        if key.endswith("-bin"):
            out.append((key, base64.b64decode(value + "=" * (-len(value) % 4))))
        else:
            out.append((key, value))
    return tuple(out)


def connect_error(error: grpc.aio.AioRpcError) -> ConnectError:
    """The Connect error of a failed gRPC call: same code, message and status details."""
    name = error.code().name
    code = Code.CANCELED if name == "CANCELLED" else Code[name]
    details: list[ErrorDetail] = []
    for key, value in error.trailing_metadata() or ():
        if key == STATUS_DETAILS and isinstance(value, bytes):
            status = status_pb2.Status.FromString(value)
            details = [
                ErrorDetail(AnyDetail(type_url=d.type_url, value=d.value)) for d in status.details
            ]
    return ConnectError(code, error.details() or "", details)


class _Forward:
    """One method's forwarding: the gRPC call it makes and its metadata and deadline."""

    def __init__(self, bridge: Bridge, method: MethodDescriptor) -> None:
        self.bridge = bridge
        self.path = f"/{method.containing_service.full_name}/{method.name}"
        self.request_class: type[Message] = GetMessageClass(method.input_type)
        self.response_class: type[Message] = GetMessageClass(method.output_type)
        kind = (method.client_streaming, method.server_streaming)
        self.stream_type = {
            (False, False): StreamType.UNARY,
            (False, True): StreamType.SERVER_STREAM,
            (True, False): StreamType.CLIENT_STREAM,
            (True, True): StreamType.BIDI_STREAM,
        }[kind]
        self.info: MethodInfo[Message, Message] = MethodInfo(
            name=method.name,
            service_name=method.containing_service.full_name,
            input=self.request_class,
            output=self.response_class,
            idempotency_level=IdempotencyLevel.UNKNOWN,
            stream_type=self.stream_type,
        )

    def _multicallable(self) -> Any:
        channel = self.bridge.channel
        factory = {
            StreamType.UNARY: channel.unary_unary,
            StreamType.SERVER_STREAM: channel.unary_stream,
            StreamType.CLIENT_STREAM: channel.stream_unary,
            StreamType.BIDI_STREAM: channel.stream_stream,
        }[self.stream_type]
        return factory(
            self.path,
            request_serializer=self.request_class.SerializeToString,
            response_deserializer=self.response_class.FromString,
        )

    @staticmethod
    def _options(ctx: RequestContext[Message, Message]) -> dict[str, Any]:
        timeout_ms = ctx.timeout_ms
        return {
            "metadata": metadata_of(ctx.request_headers),
            "timeout": None if timeout_ms is None else max(timeout_ms, 0) / 1000,
        }

    async def unary(self, request: Any, ctx: RequestContext[Message, Message]) -> Message:
        call = self._multicallable()(request, **self._options(ctx))
        try:
            response: Message = await call
        except grpc.aio.AioRpcError as error:
            raise connect_error(error) from None
        await _copy_metadata(call, ctx)
        return response

    async def server_stream(
        self, request: Any, ctx: RequestContext[Message, Message]
    ) -> AsyncIterator[Message]:
        call = self._multicallable()(request, **self._options(ctx))
        try:
            async for response in call:
                yield response
        except grpc.aio.AioRpcError as error:
            raise connect_error(error) from None
        finally:
            call.cancel()  # the browser went away: end the gRPC stream too

    async def client_stream(
        self, requests: AsyncIterator[Any], ctx: RequestContext[Message, Message]
    ) -> Message:
        call = self._multicallable()(requests, **self._options(ctx))
        try:
            response: Message = await call
        except grpc.aio.AioRpcError as error:
            raise connect_error(error) from None
        await _copy_metadata(call, ctx)
        return response

    async def bidi_stream(
        self, requests: AsyncIterator[Any], ctx: RequestContext[Message, Message]
    ) -> AsyncIterator[Message]:
        call = self._multicallable()(requests, **self._options(ctx))
        try:
            async for response in call:
                yield response
        except grpc.aio.AioRpcError as error:
            raise connect_error(error) from None
        finally:
            call.cancel()

    def endpoint(self) -> Any:
        if self.stream_type is StreamType.UNARY:
            return Endpoint.unary(self.info, self.unary)
        if self.stream_type is StreamType.SERVER_STREAM:
            return Endpoint.server_stream(self.info, self.server_stream)
        if self.stream_type is StreamType.CLIENT_STREAM:
            return Endpoint.client_stream(self.info, self.client_stream)
        return Endpoint.bidi_stream(self.info, self.bidi_stream)


async def _copy_metadata(call: Any, ctx: RequestContext[Message, Message]) -> None:
    for key, value in await call.initial_metadata() or ():
        if isinstance(value, str):
            ctx.response_headers.add(key, value)
    for key, value in await call.trailing_metadata() or ():
        if isinstance(value, str) and key != STATUS_DETAILS:
            ctx.response_trailers.add(key, value)


class _ServiceApp(ConnectASGIApplication[None]):
    """connectrpc's ASGI application for one service, its endpoints made from descriptors."""

    def __init__(self, bridge: Bridge, service: ServiceDescriptor) -> None:
        self._path = f"/{service.full_name}"
        endpoints = {f.path: f.endpoint() for f in (_Forward(bridge, m) for m in service.methods)}
        super().__init__(
            service=None, endpoints=lambda _: endpoints, codecs=google_protobuf_codecs()
        )

    @property
    def path(self) -> str:
        return self._path


class Bridge:
    """The ASGI application: each service under ``/<package.Service>/``, the bundle at ``/``."""

    def __init__(
        self,
        grpc_target: str,
        services: Sequence[ServiceDescriptor] = SERVICES,
        static_dir: Path = STATIC_DIR,
    ) -> None:
        self.grpc_target = grpc_target
        self._channel: grpc.aio.Channel | None = None
        self.apps = {f"/{s.full_name}/": _ServiceApp(self, s) for s in services}
        # Only the bundle's own files are served: no path from a request reaches the disk.
        self.static = (
            {f"/{p.name}": p for p in sorted(static_dir.iterdir()) if p.is_file()}
            if static_dir.is_dir()
            else {}
        )
        if "/index.html" in self.static:
            self.static["/"] = self.static["/index.html"]

    @property
    def channel(self) -> Any:
        if self._channel is None:  # made in the server's event loop, on first use
            self._channel = grpc.aio.insecure_channel(self.grpc_target)
        return self._channel

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        path: str = scope["path"]
        for prefix, app in self.apps.items():
            if path.startswith(prefix):
                await app(scope, receive, send)
                return
        await self._static(scope, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._channel is not None:
                    await self._channel.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _static(self, scope: Scope, send: Send) -> None:
        file = self.static.get(scope["path"])
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD") or file is None:
            await _respond(send, 404, b"not found\n", "text/plain; charset=utf-8")
            return
        kind = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        if kind.startswith("text/") or kind == "application/javascript":
            kind += "; charset=utf-8"
        body = file.read_bytes() if scope["method"] == "GET" else b""
        await _respond(send, 200, body, kind)


async def _respond(send: Send, status: int, body: bytes, content_type: str) -> None:
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", content_type.encode()),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-cache"),
            (b"x-content-type-options", b"nosniff"),
        ],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": body})


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--grpc", required=True, help="the gRPC server, HOST:PORT")
    parser.add_argument("--listen", default="127.0.0.1:8080", help="HTTP address, HOST:PORT")
    parser.add_argument("--static", type=Path, default=STATIC_DIR, help="the web bundle")
    args = parser.parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    bridge = Bridge(args.grpc, static_dir=args.static)
    uvicorn.run(bridge, host=host, port=int(port), log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
