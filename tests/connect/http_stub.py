"""A table-service stub over the HTTP port: Connect JSON, Connect binary, gRPC-Web (binary
or text: base64, grpc-web's JavaScript default).

:class:`HttpStub` has the shape of a generated gRPC stub (``stub.PlaceCards(request,
metadata=..., timeout=...)``, ``stub.Watch(request, metadata=...)`` an iterator with
``cancel()``), so the gRPC end-to-end tests' drivers run over the HTTP port unchanged. It
speaks the wire protocols itself, over one HTTP/1.1 connection per call, so that the test
sees every byte the server sent: each call's status line, headers, body and trailers are
kept as an :class:`Exchange` (``stub.exchanges``) for the leak scans. An error is an
:class:`HttpRpcError`, a :class:`grpc.RpcError` with the code, the message and the
``grpc-status-details-bin`` trailer a gRPC client sees, built from Connect's error JSON
(its details base64-encoded protobuf) or from gRPC-Web's trailers.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import socket
import threading
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import status_pb2
from ofcpoker.v1 import table_service_pb2 as pb

PROTOCOLS = ("connect-json", "connect-proto", "grpc-web", "grpc-web-text")
SERVICE = pb.DESCRIPTOR.services_by_name["TableService"]
TIMEOUT_S = 30.0
END_STREAM = 0x02  # Connect's end-of-stream envelope
TRAILERS = 0x80  # gRPC-Web's trailers frame
# Connect's error codes (snake_case) and HTTP statuses, as the gRPC codes they stand for
CONNECT_CODES = {c.name.lower(): c for c in grpc.StatusCode}
CONNECT_CODES["canceled"] = grpc.StatusCode.CANCELLED
GRPC_CODES = {c.value[0]: c for c in grpc.StatusCode}
UNARY_TYPES = {"connect-json": "application/json", "connect-proto": "application/proto"}
STREAM_TYPES = {
    "connect-json": "application/connect+json",
    "connect-proto": "application/connect+proto",
    "grpc-web": "application/grpc-web+proto",
    "grpc-web-text": "application/grpc-web-text+proto",
}


@dataclass
class Exchange:
    """One call as it crossed the wire: what was sent, to whom, and everything that came
    back (trailers: gRPC-Web's trailer frame, Connect's ``trailer-`` headers or its
    end-of-stream metadata; ``error``: the Connect error JSON, raw)."""

    method: str
    metadata: tuple[tuple[str, str], ...]
    sent: bytes
    status: int = 0
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    trailers: list[tuple[str, str]] = field(default_factory=list)
    error: bytes = b""
    done: bool = False  # everything has come back (a stream: it ended)
    text: bool = False  # gRPC-Web text: ``body`` is base64 of the frames

    def frame_bytes(self) -> bytes:
        """The body's frames (gRPC-Web text: decoded)."""
        return b64_quanta_decode(self.body) if self.text else self.body

    def wire(self) -> bytes:
        """Every byte that came back (the status line's reason aside)."""
        lines = [f"{k}: {v}" for k, v in (*self.headers, *self.trailers)]
        return "\r\n".join(lines).encode() + b"\r\n\r\n" + self.body

    def payloads(self) -> list[bytes]:
        """What came back, and what is encoded in it that a byte search would not see:
        each Connect error detail (base64 in the error JSON) and a ``-bin`` header or
        trailer (base64), decoded."""
        found = [self.wire()]
        if self.text:
            found.append(self.frame_bytes())
        if self.error:
            for detail in json.loads(self.error).get("details", ()):
                found.append(unpadded_b64decode(detail["value"]))
        for key, value in (*self.headers, *self.trailers):
            if key.endswith("-bin"):
                found.append(unpadded_b64decode(value))
        return found


def b64_quanta_decode(text: bytes) -> bytes:
    """Base64 sent in pieces each padded: every 4-character quantum decoded on its own."""
    whole = len(text) - len(text) % 4
    return b"".join(base64.b64decode(text[i : i + 4]) for i in range(0, whole, 4))


def unpadded_b64decode(text: str) -> bytes:
    """Base64 as Connect and gRPC-Web write it (padding optional, either alphabet)."""
    padded = text.replace("+", "-").replace("/", "_") + "=" * (-len(text) % 4)
    return base64.urlsafe_b64decode(padded)


class HttpRpcError(grpc.RpcError):  # type: ignore[misc]  # grpc is untyped
    """A failed call over the HTTP port, seen as a gRPC client sees one."""

    def __init__(self, status: status_pb2.Status, trailers: Sequence[tuple[str, str]] = ()):
        super().__init__(status.message)
        self.status = status
        self.http_trailers = tuple(trailers)

    def code(self) -> grpc.StatusCode:
        return GRPC_CODES.get(self.status.code, grpc.StatusCode.UNKNOWN)

    def details(self) -> str:
        return str(self.status.message)

    def trailing_metadata(self) -> tuple[tuple[str, str | bytes], ...]:
        raw: tuple[tuple[str, str | bytes], ...] = (
            ("grpc-status-details-bin", self.status.SerializeToString()),
        )
        return (*self.http_trailers, *raw) if self.status.details else self.http_trailers

    def __repr__(self) -> str:
        return f"HttpRpcError({self.code().name}, {self.details()!r})"


def connect_status(error: dict[str, Any]) -> status_pb2.Status:
    """Connect's error JSON (``{"code", "message", "details": [{"type", "value"}]}``) as the
    ``google.rpc.Status`` it carries."""
    status = status_pb2.Status(
        code=CONNECT_CODES[error["code"]].value[0], message=error.get("message", "")
    )  # fmt: skip
    for detail in error.get("details", ()):
        value = unpadded_b64decode(detail["value"])
        status.details.add(type_url=f"type.googleapis.com/{detail['type']}", value=value)
    return status


def grpc_web_status(trailers: Sequence[tuple[str, str]]) -> status_pb2.Status | None:
    """The status of gRPC-Web trailers (None: OK)."""
    found = dict(trailers)
    code = int(found.get("grpc-status", "2"))
    if code == 0:
        return None
    raw = found.get("grpc-status-details-bin")
    if raw is not None:
        return status_pb2.Status.FromString(unpadded_b64decode(raw))
    message = urllib.parse.unquote(found.get("grpc-message", ""))
    return status_pb2.Status(code=code, message=message)


def envelope(data: bytes, flags: int = 0) -> bytes:
    return bytes([flags]) + len(data).to_bytes(4, "big") + data


class HttpStub:
    """The table service (or ``service``) over ``base_url`` in ``protocol``."""

    def __init__(self, base_url: str, protocol: str, service: Any = SERVICE) -> None:
        assert protocol in PROTOCOLS, protocol
        self.base = urllib.parse.urlsplit(base_url)
        self.protocol = protocol
        self.service = service
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        method = self.service.methods_by_name.get(name)
        if method is None:
            raise AttributeError(name)
        if method.server_streaming:
            return lambda request, metadata=(), timeout=None: self.stream(method, request, metadata)
        return lambda request, metadata=(), timeout=TIMEOUT_S: self.unary(
            method, request, metadata, timeout
        )

    # --- encoding ----------------------------------------------------------------------------
    @property
    def json(self) -> bool:
        return self.protocol == "connect-json"

    @property
    def grpc_web(self) -> bool:
        return self.protocol.startswith("grpc-web")

    @property
    def text(self) -> bool:
        return self.protocol == "grpc-web-text"

    def framed(self, body: bytes) -> bytes:
        """A gRPC-Web body as it is sent (text: base64)."""
        return base64.b64encode(body) if self.text else body

    def encode(self, message: Message) -> bytes:
        if self.json:
            return json.dumps(json_format.MessageToDict(message)).encode()
        return message.SerializeToString()

    def decode(self, data: bytes, kind: Any) -> Any:
        message = kind()
        if self.json:
            json_format.Parse(data, message)
        else:
            message.ParseFromString(data)
        return message

    def headers(
        self, content_type: str, metadata: Sequence[tuple[str, str]]
    ) -> list[tuple[str, str]]:
        """The request's headers: the metadata as given, a key given twice sent twice."""
        protocol = ("x-grpc-web", "1") if self.grpc_web else ("connect-protocol-version", "1")
        return [("content-type", content_type), *metadata, protocol]

    # --- calls -------------------------------------------------------------------------------
    def post(
        self, path: str, body: bytes, headers: Sequence[tuple[str, str]], timeout: float | None
    ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        conn = http.client.HTTPConnection(self.base.hostname or "", self.base.port, timeout=timeout)
        conn.putrequest("POST", path)
        for key, value in [*headers, ("content-length", str(len(body)))]:
            conn.putheader(key, value)
        conn.endheaders(body)
        return conn, conn.getresponse()

    def keep(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)

    def unary(
        self, method: Any, request: Message, metadata: Sequence[tuple[str, str]], timeout: float
    ) -> Any:
        path = f"/{self.service.full_name}/{method.name}"
        if self.grpc_web:
            body = self.framed(envelope(request.SerializeToString()))
            content_type = STREAM_TYPES[self.protocol]
        else:
            body = self.encode(request)
            content_type = UNARY_TYPES[self.protocol]
        exchange = Exchange(method.name, tuple(metadata), body, text=self.text)
        self.keep(exchange)
        conn, answer = self.post(path, body, self.headers(content_type, metadata), timeout)
        try:
            exchange.status = answer.status
            exchange.headers = [(k.lower(), v) for k, v in answer.getheaders()]
            exchange.body = answer.read()
        finally:
            conn.close()
            exchange.done = True
        if self.grpc_web:
            messages, trailers = self.frames(exchange)
            status = grpc_web_status(trailers)
            if status is not None:
                raise HttpRpcError(status, trailers)
            assert len(messages) == 1, (method.name, exchange)
            return self.decode_binary(messages[0], method)
        exchange.trailers = [(k, v) for k, v in exchange.headers if k.startswith("trailer-")]
        if exchange.status != 200:
            exchange.error = exchange.body
            raise HttpRpcError(connect_status(json.loads(exchange.body)), exchange.trailers)
        return self.decode(exchange.body, method.output_type._concrete_class)

    def decode_binary(self, data: bytes, method: Any) -> Any:
        return method.output_type._concrete_class.FromString(data)

    def frames(self, exchange: Exchange) -> tuple[list[bytes], list[tuple[str, str]]]:
        """A gRPC-Web body's messages and trailers (its headers, for a trailers-only answer)."""
        messages, trailers = [], []
        data = exchange.frame_bytes()
        while data:
            flags, size = data[0], int.from_bytes(data[1:5], "big")
            chunk, data = data[5 : 5 + size], data[5 + size :]
            if flags & TRAILERS:
                trailers = parse_trailers(chunk)
            else:
                messages.append(chunk)
        if not trailers:
            trailers = [(k, v) for k, v in exchange.headers if k.startswith("grpc-")]
        exchange.trailers = trailers
        return messages, trailers

    def stream(self, method: Any, request: Message, metadata: Sequence[tuple[str, str]]) -> Any:
        path = f"/{self.service.full_name}/{method.name}"
        data = request.SerializeToString() if not self.json else self.encode(request)
        body = self.framed(envelope(data))
        exchange = Exchange(method.name, tuple(metadata), body, text=self.text)
        self.keep(exchange)
        headers = self.headers(STREAM_TYPES[self.protocol], metadata)
        return HttpStream(self, method, exchange, *self.post(path, body, headers, TIMEOUT_S))


def parse_trailers(block: bytes) -> list[tuple[str, str]]:
    out = []
    for line in block.decode("latin-1").split("\r\n"):
        if line:
            key, _, value = line.partition(":")
            out.append((key.strip().lower(), value.strip()))
    return out


class HttpStream:
    """A server stream over the HTTP port: iterate for its messages; it ends by raising an
    :class:`HttpRpcError` when the server ends it with an error (CANCELLED after
    :meth:`cancel`)."""

    def __init__(
        self,
        stub: HttpStub,
        method: Any,
        exchange: Exchange,
        conn: http.client.HTTPConnection,
        answer: http.client.HTTPResponse,
    ) -> None:
        self.stub, self.method, self.exchange = stub, method, exchange
        self.conn, self.answer = conn, answer
        self.cancelled = False
        self.decoded = b""  # gRPC-Web text: the frames decoded, not yet read
        self.undecoded = b""  # and the base64 after the last whole quantum
        exchange.status = answer.status
        exchange.headers = [(k.lower(), v) for k, v in answer.getheaders()]

    def cancel(self) -> None:
        self.cancelled = True
        sock = self.conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):  # gone already
                sock.shutdown(socket.SHUT_RDWR)

    def __iter__(self) -> Iterator[Any]:
        try:
            yield from self._read()
        finally:
            self.conn.close()
            self.exchange.done = True

    def _read(self) -> Iterator[Any]:
        exchange = self.exchange
        if exchange.status != 200:  # a Connect stream refused before it began (gRPC-Web: 200)
            exchange.body = exchange.error = self.answer.read()
            raise HttpRpcError(connect_status(json.loads(exchange.body)))
        while True:
            try:
                header = self.read(5)
                size = int.from_bytes(header[1:5], "big") if len(header) == 5 else 0
                data = self.read(size) if size else b""
            except (OSError, http.client.HTTPException):
                header, data = b"", b""
            if not self.stub.text:
                exchange.body += header + data
            if len(header) < 5:
                if self.cancelled:
                    raise HttpRpcError(status_pb2.Status(code=1, message="cancelled by us"))
                if self.stub.grpc_web:  # trailers-only: the status in headers
                    self.stub.frames(exchange)
                    status = grpc_web_status(exchange.trailers)
                    if status is not None:
                        raise HttpRpcError(status, exchange.trailers)
                raise HttpRpcError(status_pb2.Status(code=14, message="the stream broke off"))
            flags = header[0]
            if self.stub.grpc_web and flags & TRAILERS:
                exchange.trailers = parse_trailers(data)
                status = grpc_web_status(exchange.trailers)
                if status is not None:
                    raise HttpRpcError(status, exchange.trailers)
                return
            if not self.stub.grpc_web and flags & END_STREAM:
                end = json.loads(data)
                exchange.trailers = [
                    (k, v) for k, values in end.get("metadata", {}).items() for v in values
                ]
                if "error" in end:
                    exchange.error = json.dumps(end["error"]).encode()
                    raise HttpRpcError(connect_status(end["error"]), exchange.trailers)
                return
            yield self.stub.decode(data, self.method.output_type._concrete_class)

    def read(self, size: int) -> bytes:
        """``size`` bytes of the frames (fewer at the end); gRPC-Web text: decoded from the
        base64 as it comes, the text kept in the exchange."""
        if not self.stub.text:
            return self.answer.read(size)
        while len(self.decoded) < size:
            text = self.answer.read1(65536)
            if not text:
                break
            self.exchange.body += text
            pending = self.undecoded + text
            whole = len(pending) - len(pending) % 4
            self.decoded += b64_quanta_decode(pending[:whole])
            self.undecoded = pending[whole:]
        data, self.decoded = self.decoded[:size], self.decoded[size:]
        return data
