"""The HTTP port: Connect, gRPC-Web and the web table, in the gRPC server's event loop.

One ASGI application, served by Hypercorn (HTTP/1.1, and HTTP/2: h2c in cleartext, h2 over
TLS with the gRPC port's certificate):

- ``/ofcpoker.v1.<Service>/<Method>``: every RPC of the rules, table and settlement-feed
  services over Connect (JSON and binary; the rules service's unary methods, marked
  ``NO_SIDE_EFFECTS`` in the protos, also as GET), gRPC-Web (binary, and text: base64, as
  grpc-web's JavaScript client sends by default) and gRPC, through the generated applications
  (service/ofcpoker/v1/*_connect.py) and the Connect adapter (:mod:`ofc_service.api.connect`);
- ``/healthz``: ``SERVING`` (200) or ``NOT_SERVING`` (503), the gRPC health status of the
  server or of ``?service=<name>``;
- ``/``: the web table (clients/web/dist, packaged as ``ofc_service/server/web``).

What reaches the Connect applications is what they can answer as the client's mistake:
header values that are not UTF-8 are read as the Latin-1 text HTTP/1.1 defines them to be
(a credential of that kind is then unknown: UNAUTHENTICATED, not a failed request), an
enveloped message flagged compressed on a request that names no compression is
MALFORMED_REQUEST (connectrpc would answer INTERNAL), and gRPC on a connection without
HTTP trailers (HTTP/1.1) is UNIMPLEMENTED: it needs HTTP/2. Every refusal connectrpc makes
carries an ErrorInfo reason, as the handlers' errors do: what it would refuse before reading
the request without one (a deadline header that is not one: INVALID_TIMEOUT; a Connect
protocol version other than 1) is refused here with it, a request of none or several
messages where one is due is WRONG_MESSAGE_COUNT, and the rest (too large, truncated, an
unknown compression) is given its reason by :class:`~ofc_service.api.connect.TransportErrors`.

CORS: browsers on the origins of ``OFC_CORS_ORIGINS`` (``*``: any) may call the RPCs from
other sites; preflights are answered here, and the Connect, gRPC-Web and request-id headers
are exposed to them. None by default: the web table is served from this same origin.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
import mimetypes
import re
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import h2.utilities
import hyperframe.frame
from connectrpc.errors import ConnectError
from grpc_health.v1 import health, health_pb2
from hypercorn.asyncio import tcp_server as hypercorn_tcp
from hypercorn.asyncio.run import worker_serve
from hypercorn.config import Config as HypercornConfig
from hypercorn.events import Closed, RawData
from hypercorn.protocol import h2 as hypercorn_h2
from hypercorn.utils import wrap_app
from ofcpoker.v1 import (
    rules_service_connect,
    rules_service_pb2,
    settlement_feed_connect,
    settlement_feed_pb2,
    table_service_connect,
    table_service_pb2,
)

from ofc_service.api.connect import (
    TransportErrors,
    codecs,
    connect_service,
    end_refusal,
    malformed_request,
    refusal,
    refuse_before_reading,
)
from ofc_service.api.errors import (
    ConnectionRetiredError,
    InvalidTimeoutError,
    MalformedRequestError,
    RequestBodyTimeoutError,
    WrongMessageCountError,
)
from ofc_service.api.shutdown import Shutdown
from ofc_service.server.config import DEFAULT_HTTP_BODY_SECONDS, ServerConfig

log = logging.getLogger("ofc.http")

WEB_DIR = Path(__file__).resolve().parent / "web"
SERVICES = (
    (rules_service_pb2, "RulesService", rules_service_connect.RulesServiceASGIApplication),
    (table_service_pb2, "TableService", table_service_connect.TableServiceASGIApplication),
    (settlement_feed_pb2, "SettlementFeedService",
     settlement_feed_connect.SettlementFeedServiceASGIApplication),
)  # fmt: skip
# What a browser on another origin may send and read (Connect, gRPC-Web, ours).
CORS_ALLOW_HEADERS = (
    "content-type, connect-protocol-version, connect-timeout-ms, connect-accept-encoding, "
    "connect-content-encoding, grpc-timeout, grpc-accept-encoding, x-grpc-web, x-user-agent, "
    "authorization, x-ofc-seat-token, x-ofc-api-key, x-request-id, x-ofc-table-id"
)
CORS_EXPOSE_HEADERS = (
    "grpc-status, grpc-message, grpc-status-details-bin, grpc-encoding, connect-content-encoding, "
    "content-encoding, x-request-id"
)
CORS_MAX_AGE_SECONDS = "7200"
# The web table's files: its own scripts, styles and calls only (no inline script or style,
# nothing from elsewhere), and not framed by another site, where a hidden frame could steer
# a player's clicks; its address (a table id) is not sent on to any link it might show.
PAGE_HEADERS = (
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
)

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class HttpApp:
    """The ASGI application: the services by path prefix, ``/healthz``, the bundle at ``/``."""

    def __init__(
        self,
        handlers: Mapping[str, object],
        health_servicer: health.aio.HealthServicer,
        *,
        cors_origins: Sequence[str] = (),
        read_max_bytes: int | None = None,
        body_seconds: float = DEFAULT_HTTP_BODY_SECONDS,
        web_dir: Path = WEB_DIR,
        stopping: Shutdown | None = None,
    ) -> None:
        self.stopping = stopping
        # The stream calls (Watch, Subscribe) under way, by the client address of their
        # connection: a connection retired for its age ends them first (retire_streams).
        self.streams: dict[Any, set[asyncio.Task[Any]]] = {}
        self.apps: dict[str, Any] = {}
        # the methods whose request is one message (unary and server-streaming)
        self.one_message: frozenset[str] = frozenset()
        self.server_streaming: frozenset[str] = frozenset()  # (Watch, Subscribe)
        for module, name, application in SERVICES:
            service = module.DESCRIPTOR.services_by_name[name]
            transport = TransportErrors()
            self.apps[f"/{service.full_name}/"] = application(
                connect_service(handlers[service.full_name], service, transport),
                interceptors=(transport,),
                read_max_bytes=read_max_bytes,
                codecs=codecs(),
            )
            self.one_message |= {f"/{service.full_name}/{m.name}" for m in service.methods
                                 if not m.client_streaming}  # fmt: skip
            self.server_streaming |= {f"/{service.full_name}/{m.name}" for m in service.methods
                                      if m.server_streaming and not m.client_streaming}  # fmt: skip
        self.body_seconds = body_seconds
        self.health = health_servicer
        self.cors_origins = frozenset(cors_origins)
        # Only the bundle's own files are served: no path from a request reaches the disk.
        self.static: dict[str, tuple[bytes, str]] = {}
        if web_dir.is_dir():
            for file in sorted(web_dir.iterdir()):
                if file.is_file():
                    self.static[f"/{file.name}"] = (file.read_bytes(), _content_type(file.name))
        if "/index.html" in self.static:
            self.static["/"] = self.static["/index.html"]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] == "websocket":
            # Nothing here is a WebSocket: closed before it is accepted, which the server
            # answers 403 (returning unanswered would be its 500).
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            return
        if scope.get("http_version", "1.1").startswith("1"):
            receive, send = _reading_the_rest_first(receive, send, self.body_seconds)
        path: str = scope["path"]
        raw_path = scope.get("raw_path")
        if raw_path is not None and raw_path != path.encode():
            # A percent-encoded path (``%2F`` for a slash): no method or file needs one, and a
            # proxy in front that filters by path would see another path than the one served.
            await _respond(send, 404, b"not found\n", "text/plain; charset=utf-8")
            return
        origin = _header(scope, b"origin")
        if origin is not None and "*" not in self.cors_origins and origin not in self.cors_origins:
            origin = None  # not an origin this server lets in: no CORS headers at all
        prefix = path[: path.find("/", 1) + 1] if path.count("/") >= 2 else ""
        app = self.apps.get(prefix)
        if app is not None:
            if scope["method"] == "OPTIONS":
                await self._preflight(scope, send, origin)
                return
            scope = _lower_caseless(_utf8_headers(scope))
            if self.cors_origins:  # what a cache keeps varies with the Origin, even without one
                send = _with_cors(send, origin)
            content_type = _header(scope, b"content-type") or ""
            if _is_grpc(content_type) and _TRAILERS not in scope.get("extensions", {}):
                await _grpc_needs_http2(send)
                return
            one = path in self.one_message
            if one:
                receive = _body_in_time(receive, self.body_seconds)
            if content_type.startswith(_GRPC_WEB_TEXT):
                scope, receive, send = _grpc_web_text(scope, receive, send)
                content_type = _header(scope, b"content-type") or ""
            receive = _checked_envelopes(scope, receive, content_type, one_message=one)
            if self.stopping is not None and self.stopping.started:
                # As on the gRPC port: a call that comes once the server is stopping does
                # nothing and is refused UNAVAILABLE, SERVER_SHUTTING_DOWN (sent again, it
                # goes to another replica; over HTTP/1.1 on a new connection).
                refused: tuple[bytes, ConnectError] | None = b"", refusal(self.stopping.refuse())
                if scope.get("http_version", "1.1").startswith("1"):
                    send = _closing(send)
            else:
                refused = _header_refusal(scope, content_type)
            if refused is None:
                if path in self.server_streaming:
                    await self._stream(app, scope, receive, send)
                else:
                    await app(scope, receive, send)
                return
            header, error = refused
            token = refuse_before_reading(error)
            try:
                headers = [(k, v) for k, v in scope["headers"] if k != header]
                await app({**scope, "headers": headers}, receive, send)
            finally:
                end_refusal(token)
        elif path == "/healthz":
            await self._healthz(scope, send)
        else:
            await self._static(scope, send)

    async def _stream(self, app: Any, scope: Scope, receive: Receive, send: Send) -> None:
        """A stream call, known by its connection's client address while it runs."""
        client = scope.get("client")
        task = asyncio.current_task()
        if client is None or task is None:
            await app(scope, receive, send)
            return
        key = tuple(client)
        self.streams.setdefault(key, set()).add(task)
        try:
            await app(scope, receive, send)
        finally:
            running = self.streams.get(key, set())
            running.discard(task)
            if not running:
                self.streams.pop(key, None)

    async def retire_streams(self, client: Any) -> None:
        """End the stream calls of the connection from ``client`` (a retired connection,
        past its grace) with UNAVAILABLE, CONNECTION_RETIRED, as each waits for its next
        item, and wait up to :data:`RETIRE_STREAMS_S` for them to send that end: their
        clients read an answer (a Connect end message, gRPC-Web's or gRPC's trailers), not
        a connection cut in the middle of a response, and resume at once. One busy sending
        (to a client that does not read) is left to the connection's close."""
        tasks = self.streams.get(tuple(client), set()) if client is not None else set()
        if self.stopping is None or not tasks:
            return
        error = ConnectionRetiredError(
            "this connection reached its maximum age: reconnect and resume where the stream ended"
        )
        ending = [task for task in list(tasks) if self.stopping.interrupt(task, error)]
        if ending:
            await asyncio.wait(ending, timeout=RETIRE_STREAMS_S)

    async def _preflight(self, scope: Scope, send: Send, origin: str | None) -> None:
        if origin is None:
            await _respond(send, 403, b"origin not allowed\n", "text/plain; charset=utf-8")
            return
        await send({"type": "http.response.start", "status": 204, "headers": [
            (b"access-control-allow-origin", origin.encode()),
            (b"access-control-allow-methods", b"POST, GET"),
            (b"access-control-allow-headers", CORS_ALLOW_HEADERS.encode()),
            (b"access-control-expose-headers", CORS_EXPOSE_HEADERS.encode()),
            (b"access-control-max-age", CORS_MAX_AGE_SECONDS.encode()),
            (b"vary", b"Origin"),
        ]})  # fmt: skip
        await send({"type": "http.response.body", "body": b""})

    async def _healthz(self, scope: Scope, send: Send) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        service = query.get("service", [""])[0]
        status = await _health_status(self.health, service)
        if status is None:
            await _respond(send, 404, b"SERVICE_UNKNOWN\n", "text/plain; charset=utf-8")
            return
        name = health_pb2.HealthCheckResponse.ServingStatus.Name(status)
        ok = status == health_pb2.HealthCheckResponse.SERVING
        await _respond(send, 200 if ok else 503, f"{name}\n".encode(), "text/plain; charset=utf-8")

    async def _static(self, scope: Scope, send: Send) -> None:
        found = self.static.get(scope["path"])
        if scope["method"] not in ("GET", "HEAD") or found is None:
            await _respond(send, 404, b"not found\n", "text/plain; charset=utf-8")
            return
        body, kind = found
        await _respond(
            send, 200, body if scope["method"] == "GET" else b"", kind, len(body), PAGE_HEADERS
        )


class _NoSuchService:
    """The context the health servicer's Check needs: it aborts for an unknown service."""

    async def abort(self, *_: object) -> None:
        raise LookupError


async def _health_status(servicer: health.aio.HealthServicer, service: str) -> int | None:
    try:
        answer = await servicer.Check(health_pb2.HealthCheckRequest(service=service),
                                      _NoSuchService())  # fmt: skip
    except LookupError:
        return None
    return int(answer.status)


def _content_type(name: str) -> str:
    kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
    if kind.startswith("text/") or kind == "application/javascript":
        kind += "; charset=utf-8"
    return kind


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


_TRAILERS = "http.response.trailers"  # the ASGI extension gRPC's trailers need
_ENVELOPED = ("application/connect+", "application/grpc")  # gRPC-Web's, and gRPC's (h2c)
_COMPRESSION_HEADERS = (b"connect-content-encoding", b"grpc-encoding")


def _is_grpc(content_type: str) -> bool:
    return content_type.startswith("application/grpc") and not content_type.startswith(
        "application/grpc-web"
    )


_CASELESS_HEADERS = frozenset((b"content-encoding", b"connect-content-encoding", b"content-type"))


def _lower_caseless(scope: Scope) -> Scope:
    """``scope`` with its content codings and media type in lower case: HTTP compares both
    without case (RFC 9110, 8.4.1 and 8.3.1), connectrpc and this port's own checks compare
    them as written (an ``Application/Connect+Json`` stream went past the checks of its
    envelopes, and a malformed one was answered INTERNAL)."""
    headers = scope.get("headers", ())
    if not any(k in _CASELESS_HEADERS and v != v.lower() for k, v in headers):
        return scope
    lowered = [(k, v.lower() if k in _CASELESS_HEADERS else v) for k, v in headers]
    return {**scope, "headers": lowered}


def _utf8_headers(scope: Scope) -> Scope:
    """``scope`` with every header value that is not UTF-8 read as Latin-1 (HTTP's own
    charset for them) and written as UTF-8, as connectrpc reads headers."""
    headers = scope.get("headers", ())
    if all(value.isascii() for _, value in headers):
        return scope
    fixed = []
    for key, value in headers:
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            value = value.decode("latin-1").encode("utf-8")
        fixed.append((key, value))
    return {**scope, "headers": fixed}


async def _grpc_needs_http2(send: Send) -> None:
    """A trailers-only gRPC answer: UNIMPLEMENTED, gRPC needs HTTP/2 (h2c, or the gRPC
    port)."""
    message = (
        b"gRPC%20needs%20HTTP/2%20on%20this%20port%20(h2c%20or%20TLS),%20or%20the%20gRPC%20port"
    )
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"content-type", b"application/grpc"),
        (b"grpc-status", b"12"),
        (b"grpc-message", message),
    ]})  # fmt: skip
    await send({"type": "http.response.body", "body": b""})


DRAIN_BYTES_MAX = 64 << 20
"""The most of an unread request body read and dropped before the end of its answer goes
over HTTP/1.1 (:func:`_reading_the_rest_first`); past it the connection is closed unread."""
DRAIN_IDLE_S = 1.0
"""...and how long each next part of it may take to come."""


def _reading_the_rest_first(
    receive: Receive, send: Send, body_seconds: float
) -> tuple[Receive, Send]:
    """``receive`` and ``send`` over HTTP/1.1, where the end of an answer waits until the
    rest of the request body is read and dropped (up to :data:`DRAIN_BYTES_MAX`, while it
    keeps coming, and no later than ``body_seconds`` after the request came: the time a
    body has to arrive, :func:`_body_in_time`). Hypercorn closes a connection whose request
    was not read to its end as soon as the answer ends, and a client still sending the body
    (a call refused before it was read, such as MESSAGE_TOO_LARGE) then fails its send
    (EPIPE, a reset) before it reads the answer; curl, http.client and connect-node all send
    the whole body first."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + body_seconds
    done = False

    async def tracked() -> dict[str, Any]:
        nonlocal done
        message = await receive()
        done = done or _body_ended(message)
        return message

    async def answered(message: dict[str, Any]) -> None:
        nonlocal done
        last = message["type"] == "http.response.body" and not message.get("more_body", False)
        dropped = 0
        while last and not done and dropped <= DRAIN_BYTES_MAX and loop.time() < deadline:
            try:
                async with asyncio.timeout(min(DRAIN_IDLE_S, deadline - loop.time())):
                    part = await receive()
            except TimeoutError:  # the client stopped sending (it is reading, or gone), or
                break  # its time for the body is up
            dropped += len(part.get("body", b""))
            done = _body_ended(part)
        await send(message)

    return tracked, answered


def _body_ended(message: dict[str, Any]) -> bool:
    """Whether the request's body has come in full with ``message`` (its last part, or the
    client gone)."""
    return message["type"] != "http.request" or not message.get("more_body", False)


def _body_in_time(receive: Receive, seconds: float) -> Receive:
    """``receive``, refusing a request body that has not arrived in full ``seconds`` after
    this call (REQUEST_BODY_TIMEOUT): a client that sends its headers and then stalls holds
    the connection and a task until then, and no longer. Hypercorn's own read timeout would
    also close a Watch, whose connection is rightly idle once its request has arrived; what
    is read after the body (a disconnect) is never timed."""
    deadline = asyncio.get_running_loop().time() + seconds
    body_done = False

    async def in_time() -> dict[str, Any]:
        nonlocal body_done
        if body_done:
            return await receive()
        try:
            async with asyncio.timeout_at(deadline):
                message = await receive()
        except TimeoutError:
            raise refusal(RequestBodyTimeoutError(
                f"the request body did not arrive in full within {seconds:g} s; send it again"
            )) from None  # fmt: skip
        body_done = _body_ended(message)
        return message

    return in_time


def _checked_envelopes(
    scope: Scope, receive: Receive, content_type: str, *, one_message: bool
) -> Receive:
    """``receive``, refusing an enveloped message flagged compressed when the request names
    no compression (MALFORMED_REQUEST; connectrpc answers that INTERNAL), and, for a method
    whose request is ``one_message``, a request of none or several (WRONG_MESSAGE_COUNT)."""
    if not content_type.startswith(_ENVELOPED):
        return receive
    # with a compression named, connectrpc decompresses (or refuses an unknown one)
    flag_checked = all(_header(scope, name) in (None, "", "identity")
                       for name in _COMPRESSION_HEADERS)  # fmt: skip
    prefix = bytearray()  # the next envelope's 5-byte prefix, as far as it has come
    rest = 0  # bytes of the current message still to come
    count = 0  # envelopes begun

    async def checked() -> dict[str, Any]:
        nonlocal rest, count
        message = await receive()
        if message["type"] != "http.request":
            return message
        body = memoryview(message.get("body", b""))
        at = 0
        while at < len(body):
            if rest:
                step = min(rest, len(body) - at)
                rest, at = rest - step, at + step
                continue
            if not prefix:
                count += 1
                if one_message and count > 1:
                    raise refusal(WrongMessageCountError(
                        "this method takes one request message, and a second one came"
                    ))  # fmt: skip
            step = min(5 - len(prefix), len(body) - at)
            prefix.extend(body[at : at + step])
            at += step
            if len(prefix) == 5:
                if flag_checked and prefix[0] & 0x01:
                    raise malformed_request(
                        "a message flagged compressed, and no compression named"
                    )
                rest = int.from_bytes(prefix[1:5], "big")
                prefix.clear()
        if one_message and count == 0 and not message.get("more_body", False):
            raise refusal(WrongMessageCountError(
                "this method takes one request message, and the request has none"
            ))  # fmt: skip
        return message

    return checked


_GRPC_TIMEOUT_UNITS = "HMSmun"  # hours, minutes, seconds, milli-, micro-, nanoseconds
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]*={0,2}")


_ONCE_HEADERS = frozenset(
    {
        b"connect-protocol-version",
        b"connect-timeout-ms",
        b"grpc-timeout",
        b"connect-content-encoding",
        b"grpc-encoding",
        b"content-encoding",
    }
)
_ONCE_PARAMETERS = ("encoding", "message", "base64", "compression")


def _header_refusal(scope: Scope, content_type: str) -> tuple[bytes, ConnectError] | None:
    """What connectrpc would refuse with no details, or let through, before reading the
    request, and the refusal with its reason: the header (to be left out: connectrpc would
    refuse it first) of a deadline that is not one (INVALID_TIMEOUT) or of a Connect protocol
    version other than 1 (MALFORMED_REQUEST); a Connect GET's base64 message that is not
    base64 (MALFORMED_REQUEST: connectrpc would skip the characters it does not know); a
    protocol header or GET parameter given twice (MALFORMED_REQUEST: the first would win,
    where a proxy or a filter may have read the other)."""
    headers = scope.get("headers", ())
    seen: set[bytes] = set()
    for name, _ in headers:  # one pass: this runs on every call of the port
        if name in _ONCE_HEADERS:
            if name in seen:
                count = sum(1 for key, _ in headers if key == name)
                why = f"{name.decode()} is given once, not {count} times"
                return name, refusal(MalformedRequestError(why))
            seen.add(name)
    if scope["method"] == "GET":
        text = scope.get("query_string", b"").decode("latin-1")
        query = parse_qs(text, keep_blank_values=True)  # (an empty one counts too)
        connect = query.get("connect", ["v1"])
        if connect != ["v1"]:  # as connect-protocol-version: 1 only
            why = f"connect must be v1, not {connect[0]!r}"
            if len(connect) > 1:
                why = f"connect must be v1, given once, not {len(connect)} times"
            return b"", refusal(MalformedRequestError(why))
        for parameter in _ONCE_PARAMETERS:
            if len(query.get(parameter, ())) > 1:
                why = f"the GET's {parameter} is given once, not {len(query[parameter])} times"
                return b"", refusal(MalformedRequestError(why))
        if query.get("base64") == ["1"]:
            if not _BASE64.fullmatch(query.get("message", [""])[0]):
                return b"", refusal(MalformedRequestError("the GET's message is not base64"))
        elif query.get("encoding") == ["json"]:
            try:  # as a POST's body: JSON is UTF-8 (parse_qs would put U+FFFD for a bad byte)
                parse_qs(text, encoding="utf-8", errors="strict")
            except UnicodeDecodeError:
                return b"", refusal(MalformedRequestError("the GET's message is not UTF-8"))
    if content_type.startswith("application/grpc"):  # gRPC-Web's, and gRPC's (h2c)
        value = _header(scope, b"grpc-timeout")
        digits = (value or "")[:-1]
        if value is not None and not (
            0 < len(digits) <= 8 and value[-1] in _GRPC_TIMEOUT_UNITS
            and digits.isascii() and digits.isdigit() and int(digits) > 0
        ):  # fmt: skip
            why = (
                "grpc-timeout is a positive number (at most 8 digits) and a unit of "
                + _GRPC_TIMEOUT_UNITS
            )
            return b"grpc-timeout", refusal(InvalidTimeoutError(f"{why}, not {value!r}"))
        return None
    value = _header(scope, b"connect-timeout-ms")
    # A deadline of 0 has passed before the call starts: racing it would refuse the call or
    # not, and apply a move or not, by chance (the Connect and gRPC specs: positive).
    if value and not (len(value) <= 10 and value.isascii() and value.isdigit() and int(value)):
        why = f"connect-timeout-ms is milliseconds, 1 to 10 digits and positive, not {value!r}"
        return b"connect-timeout-ms", refusal(InvalidTimeoutError(why))
    version = _header(scope, b"connect-protocol-version")
    if version is not None and version != "1":
        why = f"connect-protocol-version must be 1, not {version!r}"
        return b"connect-protocol-version", refusal(MalformedRequestError(why))
    return None


_GRPC_WEB_TEXT = "application/grpc-web-text"


def _grpc_web_text(scope: Scope, receive: Receive, send: Send) -> tuple[Scope, Receive, Send]:
    """gRPC-Web's text mode (``application/grpc-web-text``, grpc-web's JavaScript default)
    as its binary form: the request body is base64 of the frames (in one piece, or in
    pieces each padded), decoded as it comes (MALFORMED_REQUEST when it is not base64); each
    piece of the answer is sent in base64 (padded), trailers frame included, under the text
    content type. What reaches connectrpc is binary gRPC-Web, with its limits and errors."""
    headers = [
        (k, v.replace(b"application/grpc-web-text", b"application/grpc-web", 1)
         if k == b"content-type" else v)
        for k, v in scope["headers"]
    ]  # fmt: skip
    decoder = _Base64Pieces()

    async def decoded() -> dict[str, Any]:
        message = await receive()
        if message["type"] == "http.request":
            last = not message.get("more_body", False)
            message = {**message, "body": decoder.feed(message.get("body", b""), last=last)}
        return message

    async def encoded(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [
                (k, v.replace(b"application/grpc-web", b"application/grpc-web-text", 1)
                 if k == b"content-type" else v)
                for k, v in message.get("headers", ())
            ]}  # fmt: skip
        elif message["type"] == "http.response.body" and message.get("body"):
            message = {**message, "body": base64.b64encode(message["body"])}
        await send(message)

    return {**scope, "headers": headers}, decoded, encoded


class _Base64Pieces:
    """Base64 text fed in chunks cut anywhere, as the bytes it encodes: a padded quantum
    ends one piece, the next may follow."""

    def __init__(self) -> None:
        self.pending = b""

    def feed(self, chunk: bytes, *, last: bool) -> bytes:
        data = self.pending + bytes(chunk)
        out = bytearray()
        start = 0  # pieces are cut by index: slicing off each would copy the rest (quadratic)
        while (pad := data.find(b"=", start)) >= 0 and len(data) >= (
            end := start + ((pad - start) // 4 + 1) * 4
        ):
            out += self._decode(data[start:end])
            start = end
        rest = len(data) - start
        whole = start + rest - rest % 4 if data.find(b"=", start) < 0 else start
        out += self._decode(data[start:whole])
        self.pending = data[whole:]
        if last and self.pending:
            raise malformed_request("the grpc-web-text body is not base64: it ends mid-quantum")
        return bytes(out)

    @staticmethod
    def _decode(text: bytes) -> bytes:
        try:
            return base64.b64decode(text, validate=True)
        except binascii.Error as exc:
            raise malformed_request(f"the grpc-web-text body is not base64: {exc}") from None


def _closing(send: Send) -> Send:
    """``send`` with ``Connection: close`` on the response (HTTP/1.1): the client's next call
    opens a new connection rather than meeting this one closed under it."""

    async def send_closing(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = {
                **message,
                "headers": [*message.get("headers", ()), (b"connection", b"close")],
            }
        await send(message)

    return send_closing


def _with_cors(send: Send, origin: str | None) -> Send:
    """``send`` adding the CORS headers for an ``origin`` let in (None: none let in), and
    ``Vary: Origin`` either way: a shared cache must not give an answer without them to a
    browser on an origin let in, nor one with them to another (the Fetch standard's "CORS
    protocol and HTTP caches")."""
    cors = [] if origin is None else [
        (b"access-control-allow-origin", origin.encode()),
        (b"access-control-expose-headers", CORS_EXPOSE_HEADERS.encode()),
    ]  # fmt: skip

    async def send_with_cors(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = [*message.get("headers", ()), *cors, (b"vary", b"Origin")]
            message = {**message, "headers": headers}
        await send(message)

    return send_with_cors


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _respond(
    send: Send,
    status: int,
    body: bytes,
    content_type: str,
    length: int | None = None,
    more_headers: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body) if length is None else length).encode()),
        (b"cache-control", b"no-cache"),
        (b"x-content-type-options", b"nosniff"),
        *more_headers,
    ]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})


def _drop_data_of_closed_streams() -> None:
    """Hypercorn 0.18 ends a whole HTTP/2 connection (every call on it, a Watch among them)
    with a KeyError when body data arrives for a stream it has already answered and closed:
    a call refused before its body was read (MESSAGE_TOO_LARGE), whose client is still
    sending it (pgjones/hypercorn#329; the fixes proposed there are not released). Such data
    is acknowledged, so the connection's flow-control window stays open, and dropped; every
    other event goes to Hypercorn's own handler, one at a time, since handling one may close
    the stream the next is for. (Letting Hypercorn's own lookup find a stream that ignores
    the data, in one call per batch, was tried: 29 of 200 oversized calls then ended in
    RST_STREAM, INTERNAL at the client, where one event at a time gave none.)"""
    protocol = hypercorn_h2.H2Protocol
    handle_events = protocol._handle_events
    if getattr(handle_events, "drops_data_of_closed_streams", False):
        return

    async def handle_events_of_open_streams(self: Any, events: list[h2.events.Event]) -> None:
        for event in events:
            if isinstance(event, h2.events.DataReceived) and event.stream_id not in self.streams:
                size = event.flow_controlled_length
                self.connection.acknowledge_received_data(size, event.stream_id)
                await self._flush()
            elif isinstance(event, h2.events.RequestReceived) and self.context.terminated.is_set():
                # A stream opened once Hypercorn stops: refused as REFUSED_STREAM (not run:
                # clients send it again elsewhere; gRPC's read it as UNAVAILABLE), where
                # Hypercorn resets it with NO_ERROR, which gRPC clients read as INTERNAL.
                _refuse(self.connection, event.stream_id)
                self.connection.update_settings(
                    {h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 0}
                )
                await self._flush()
            elif isinstance(event, h2.events.RequestReceived) and event.stream_id > getattr(
                self, "goaway_last_stream_id", event.stream_id
            ):
                # A stream above the last one a GOAWAY let in (one that crossed it): its
                # client takes it for not run and sends it again on a new connection, so it
                # is refused, not run twice (RFC 9113, 6.8).
                _refuse(self.connection, event.stream_id)
                await self._flush()
            else:
                await handle_events(self, [event])

    handle_events_of_open_streams.drops_data_of_closed_streams = True  # type: ignore[attr-defined]
    protocol._handle_events = handle_events_of_open_streams  # type: ignore[method-assign]


def _refuse(connection: h2.connection.H2Connection, stream_id: int) -> None:
    """Reset a stream REFUSED_STREAM (not run: its client may send it again), unless its
    client has reset it already, in the same read (a gRPC client does, once it reads a
    GOAWAY): refusing it then raised StreamClosedError, which ended the whole connection."""
    with contextlib.suppress(h2.exceptions.StreamClosedError):
        connection.reset_stream(stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)


_BLANKS = (b" ", b"\t")


def _trim_surrounding_whitespace_of_header_values() -> None:
    """RFC 9113 (8.2.1) lets no field value begin or end with a space or a tab, and h2 4.x
    takes one for a protocol error of the whole connection: a call whose metadata had such a
    value (an API key pasted with a space, ``x-ofc-api-key: "k "``) ended every other call on
    its HTTP/2 connection too, a Watch among them, UNAVAILABLE with no ErrorInfo. The gRPC
    port and HTTP/1.1 (RFC 9110's optional whitespace around a value) read the value without
    it; so does this port now: h2's checks see each value trimmed, and so does everything
    after them. Its other checks (a name's characters, NUL, CR or LF in a value) stand."""
    reject = h2.utilities._reject_illegal_characters
    if getattr(reject, "trims_values", False):
        return

    def trimmed(headers: Any, flags: Any) -> Any:
        return reject(map(_trimmed_value, headers), flags)

    trimmed.trims_values = True  # type: ignore[attr-defined]
    h2.utilities._reject_illegal_characters = trimmed  # type: ignore[assignment]


def _trimmed_value(header: Any) -> Any:
    """A header, its value without surrounding spaces and tabs (of the same tuple type:
    h2 keeps HPACK's never-indexed flag on it)."""
    value = header[1]
    if value[:1] in _BLANKS or value[-1:] in _BLANKS:
        return type(header)(header[0], value.strip(b" \t"))
    return header


UNREAD_BYTES_MAX = 1 << 20
"""Answers of one HTTP/2 stream its client has not read that the server keeps (one message
of any size passes when none waits): past it the stream is reset and its handler ends."""


def _end_streams_their_client_does_not_read() -> None:
    """Hypercorn 0.18's HTTP/2 stream buffer resumes its writer (a handler sending answers)
    whenever it is asked for data it cannot send, as when the client's flow-control window
    is shut (a client that reads nothing), so a stream's answers grew in memory without bound
    (a stalled ``Watch``; ``SettleHandsStream``'s answers, ~0.5 MB a message). Holding the
    writer back instead blocks the whole connection (Hypercorn stops reading it while the
    handler's request queue is full, window updates included): a deadlock. So a stream with
    :data:`UNREAD_BYTES_MAX` unread is reset (RST_STREAM ENHANCE_YOUR_CALM: gRPC clients
    read RESOURCE_EXHAUSTED; a ``Watch`` resumes from its last event) and closed as a reset
    by the client is, so its handler is told (``http.disconnect``: cancelled) and ends.
    (Only ending the buffer sent END_STREAM and dropped the handler's later answers, but
    never told the handler: a stalled ``Watch`` kept reading and encoding every event of
    its table, for nothing, for as long as its client kept the connection.)"""
    buffer = hypercorn_h2.StreamBuffer
    push = buffer.push
    if getattr(push, "ends_unread_streams", False):
        return

    async def push_bounded(self: Any, data: bytes) -> None:
        if self.buffer and len(self.buffer) + len(data) > UNREAD_BYTES_MAX:
            self.unread = True  # for stream_send (below): reset the stream
            await self.close()  # complete and empty: nothing more of it is sent
            raise hypercorn_h2.BufferCompleteError()  # Hypercorn's "stream gone": dropped
        await push(self, data)

    protocol = hypercorn_h2.H2Protocol
    stream_send = protocol.stream_send

    async def stream_send_resetting_unread(self: Any, event: Any) -> None:
        await stream_send(self, event)
        stream_id = getattr(event, "stream_id", None)
        stalled = self.stream_buffers.get(stream_id)
        if not getattr(stalled, "unread", False) or stream_id not in self.streams:
            return  # (not in streams: already closed, by this or by the client)
        with contextlib.suppress(h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
            self.connection.reset_stream(stream_id, h2.errors.ErrorCodes.ENHANCE_YOUR_CALM)
            await self._flush()
        # Then as Hypercorn treats a reset by the client: the handler gets http.disconnect,
        # and Hypercorn's sender, finding the stream closed, drops its buffer.
        await self._close_stream(stream_id)
        await self._window_updated(stream_id)

    push_bounded.ends_unread_streams = True  # type: ignore[attr-defined]
    buffer.push = push_bounded  # type: ignore[method-assign]
    protocol.stream_send = stream_send_resetting_unread  # type: ignore[method-assign]


class _HypercornConfig(HypercornConfig):
    """Hypercorn's settings, how long a connection waits for its client to take what was
    sent (:func:`_close_connections_their_client_does_not_read`), and how long it lives
    (:func:`_retire_connections_past_their_age`)."""

    send_seconds: float | None = None  # None: as long as it takes (Hypercorn's own)
    max_connection_age: float = 0.0  # 0: a connection lives as long as its client keeps it
    connection_age_grace: float = 0.0


def _close_connections_their_client_does_not_read() -> None:
    """Hypercorn 0.18 waits for a connection's socket to drain for as long as it takes: a
    client that stops reading (a Watch over HTTP/1.1, whose answers no HTTP/2 window bounds;
    any connection whose client reads nothing at all) kept its handler, and the socket's
    buffers, for as long as the client kept the connection. With the config's
    ``send_seconds``, a connection whose unsent bytes (64 KiB and more: asyncio's high-water
    mark) do not drain in that time is closed, as if the client had closed it: every handler
    on it gets ``http.disconnect`` and ends (a ``Watch`` resumes from its last event).
    nginx's ``send_timeout`` does the same."""
    server = hypercorn_tcp.TCPServer
    protocol_send = server.protocol_send
    if getattr(protocol_send, "times_out", False):
        return

    async def protocol_send_in_time(self: Any, event: Any) -> None:
        seconds = getattr(self.config, "send_seconds", None)
        if seconds is None or not isinstance(event, RawData):
            await protocol_send(self, event)
            return
        async with self.send_lock:
            try:
                self.writer.write(event.data)
                await _drained_in_time(self.writer, seconds)
            except (ConnectionError, RuntimeError):
                await self.protocol.handle(Closed())
            except TimeoutError:
                self.writer.transport.abort()  # what waits unsent is dropped
                await self.protocol.handle(Closed())

    protocol_send_in_time.times_out = True  # type: ignore[attr-defined]
    server.protocol_send = protocol_send_in_time  # type: ignore[method-assign]


async def _drained_in_time(writer: asyncio.StreamWriter, seconds: float) -> None:
    """``writer.drain()``, timed out (TimeoutError) only once nothing of what waits unsent
    has gone for ``seconds``, as nginx's ``send_timeout`` counts: one answer larger than a
    slow client takes in ``seconds`` (a 4 MiB message on a mobile link) is not cut off while
    the client reads it."""
    transport = writer.transport
    if not transport.get_write_buffer_size():  # the socket took it all (nearly every write)
        await writer.drain()
        return
    while True:
        unsent = transport.get_write_buffer_size()
        try:
            async with asyncio.timeout(seconds):
                await writer.drain()
            return
        except TimeoutError:
            if transport.get_write_buffer_size() >= unsent:
                raise  # nothing went: the client stopped reading


def _retire_connections_past_their_age() -> None:
    """What ``grpc.max_connection_age_ms`` does on the gRPC port, which Hypercorn 0.18 lacks:
    with the config's ``max_connection_age``, a connection that old is retired so that its
    client reconnects (through the balancer: to a replica added since, say). Over HTTP/2 it
    is sent GOAWAY (NO_ERROR: the calls it has started go on; a client opens its next ones
    on a new connection) and closed once they are done; over HTTP/1.1 the next answer that
    starts says ``connection: close``. After ``connection_age_grace`` its streams waiting
    for their next item (a ``Watch``) are ended with CONNECTION_RETIRED and get up to
    :data:`RETIRE_STREAMS_S` more to send that end (HttpApp.retire_streams); then it is
    closed whatever it still carries (a ``Watch`` resumes from its last event)."""
    server = hypercorn_tcp.TCPServer
    run = server.run
    if getattr(run, "retires", False):
        return

    async def run_retiring(self: Any) -> None:
        age = getattr(self.config, "max_connection_age", 0.0)
        if not age:
            await run(self)
            return
        retiring = asyncio.get_running_loop().create_task(_retire(self, age))
        try:
            await run(self)
        finally:
            retiring.cancel()

    run_retiring.retires = True  # type: ignore[attr-defined]
    server.run = run_retiring  # type: ignore[method-assign]


RETIRING_POLL_S = 0.05  # how often a retiring connection checks whether its calls are done
RETIRE_STREAMS_S = 1.0  # how long a retired connection's streams get to send their end


async def _retire(server: Any, age: float) -> None:
    """Retire ``server``'s connection (Hypercorn's ``TCPServer``) at ``age`` seconds."""
    await asyncio.sleep(age)
    wrapper = getattr(server, "protocol", None)  # set once the connection is served
    protocol = getattr(wrapper, "protocol", None)  # HTTP/1.1's, or HTTP/2's (after h2c too)
    if protocol is None:
        return
    grace = getattr(server.config, "connection_age_grace", 0.0)
    if isinstance(protocol, hypercorn_h2.H2Protocol):
        # GOAWAY, written as a frame of its own: h2's close_connection() also shuts its end
        # (the calls under way could not finish: their window updates would be refused)
        last = protocol.connection.highest_inbound_stream_id
        protocol.goaway_last_stream_id = last  # type: ignore[attr-defined]  # later: refused
        goaway = hyperframe.frame.GoAwayFrame(0, error_code=0, last_stream_id=last)
        await protocol._flush()  # what h2 holds goes first
        await protocol.send(RawData(goaway.serialize()))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace):
                while protocol.streams:  # no new ones come: closed as the last ends
                    await asyncio.sleep(RETIRING_POLL_S)
    else:  # Hypercorn's own request limit, reached: its next answer closes the connection
        protocol.keep_alive_requests = sys.maxsize
        await asyncio.sleep(grace)
    # Its streams (a Watch) end with an answer first: closed under them, they were cut in
    # the middle of a response (no Connect end message, no trailers), which a client reads
    # as a broken connection, not as "reconnect and resume".
    app = getattr(getattr(server, "app", None), "app", None)
    if isinstance(app, HttpApp):
        peer = server.writer.get_extra_info("peername")
        await app.retire_streams(None if peer is None else tuple(peer)[:2])
    await server._initiate_server_close()  # every handler still on it gets http.disconnect


class HttpServer:
    """Hypercorn serving an ASGI app on ``config.http_listen``: bound by :meth:`bind`,
    serving in the current loop after :meth:`start`, gracefully stopped by :meth:`stop`
    (in-flight calls get the grace; long-lived streams have already ended by then)."""

    def __init__(self, app: HttpApp, config: ServerConfig, *, reuse_port: bool = False) -> None:
        self.app = app
        self.hypercorn = _HypercornConfig()
        self.hypercorn.send_seconds = config.http_send_seconds
        self.hypercorn.max_connection_age = config.max_connection_age_seconds
        self.hypercorn.connection_age_grace = config.grace_seconds
        # Hypercorn sets SO_REUSEPORT on the sockets it creates when it has several workers:
        # ours are ``ofc serve --workers`` processes, each calling this once.
        self.hypercorn.workers = 2 if reuse_port else 1
        self.hypercorn.bind = [config.http_listen]
        self.hypercorn.graceful_timeout = config.grace_seconds
        self.hypercorn.accesslog = None
        self.hypercorn.errorlog = log
        self.hypercorn.include_server_header = False
        # Hypercorn ends a connection after 1,000 requests: on HTTP/2 that cut off the
        # calls and Watch streams still open on it (UNAVAILABLE, no ErrorInfo) every 1,000
        # calls of a long-lived gRPC or Connect client. A connection is kept for as many as
        # it carries, as on the gRPC port; idle ones still close after keep_alive_timeout.
        self.hypercorn.keep_alive_max_requests = sys.maxsize
        if config.tls_cert:
            self.hypercorn.certfile, self.hypercorn.keyfile = config.tls_cert, config.tls_key
        try:
            self._sockets = self.hypercorn.create_sockets()
        except OSError as error:  # the address in use, say: name it, as the gRPC port does
            raise OSError(f"cannot bind {config.http_listen}: {error}") from error
        bound = [*self._sockets.secure_sockets, *self._sockets.insecure_sockets]
        for sock in bound:  # connections queue from now on, until Hypercorn accepts them
            sock.listen(self.hypercorn.backlog)
        self.port: int = bound[0].getsockname()[1]
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        _drop_data_of_closed_streams()
        _end_streams_their_client_does_not_read()
        _close_connections_their_client_does_not_read()
        _retire_connections_past_their_age()
        _trim_surrounding_whitespace_of_header_values()
        app = wrap_app(self.app, self.hypercorn.wsgi_max_body_size, "asgi")  # type: ignore[arg-type]
        serving = worker_serve(
            app, self.hypercorn, sockets=self._sockets, shutdown_trigger=self._stop.wait
        )
        self._task = asyncio.get_running_loop().create_task(serving, name="http")

    async def stop(self, grace: float) -> None:
        self.hypercorn.graceful_timeout = grace
        self._stop.set()
        if self._task is not None:
            await self._task
            self._task = None
        else:
            for sock in (*self._sockets.secure_sockets, *self._sockets.insecure_sockets):
                sock.close()


def create_http_server(
    config: ServerConfig,
    handlers: Mapping[str, object],
    health_servicer: health.aio.HealthServicer,
    *,
    reuse_port: bool = False,
    stopping: Shutdown | None = None,
) -> HttpServer | None:
    """The HTTP port of ``config`` (None when ``http_listen`` is empty) serving ``handlers``
    (by service name: the same handlers objects the gRPC port serves); ``reuse_port``: shared
    with the other worker processes (SO_REUSEPORT), as the gRPC port is; ``stopping``: the
    server's, whose calls that come once it stops are refused."""
    if not config.http_listen:
        return None
    app = HttpApp(
        handlers,
        health_servicer,
        cors_origins=config.cors_origin_list,
        read_max_bytes=config.max_message_bytes,
        body_seconds=config.http_body_seconds,
        stopping=stopping,
    )
    return HttpServer(app, config, reuse_port=reuse_port)


__all__ = ["HttpApp", "HttpServer", "create_http_server"]
