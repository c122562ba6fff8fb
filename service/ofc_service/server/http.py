"""The HTTP port: Connect, gRPC-Web and the web table, in the gRPC server's event loop.

One ASGI application, served by Hypercorn (HTTP/1.1, and HTTP/2: h2c in cleartext, h2 over
TLS with the gRPC port's certificate):

- ``/ofcpoker.v1.<Service>/<Method>``: every RPC of the rules, table and settlement-feed
  services over Connect (JSON and binary; unary calls also as GET for the rules service's
  side-effect-free reads), gRPC-Web and gRPC, through the generated applications
  (service/ofcpoker/v1/*_connect.py) and the Connect adapter (:mod:`ofc_service.api.connect`);
- ``/healthz``: ``SERVING`` (200) or ``NOT_SERVING`` (503), the gRPC health status of the
  server or of ``?service=<name>``;
- ``/``: the web table (clients/web/dist, packaged as ``ofc_service/server/web``).

What reaches the Connect applications is what they can answer as the client's mistake:
header values that are not UTF-8 are read as the Latin-1 text HTTP/1.1 defines them to be
(a credential of that kind is then unknown: UNAUTHENTICATED, not a failed request), an
enveloped message flagged compressed on a request that names no compression is
MALFORMED_REQUEST (connectrpc would answer INTERNAL), and gRPC on a connection without
HTTP trailers (HTTP/1.1) is UNIMPLEMENTED: it needs HTTP/2.

CORS: browsers on the origins of ``OFC_CORS_ORIGINS`` (``*``: any) may call the RPCs from
other sites; preflights are answered here, and the Connect, gRPC-Web and request-id headers
are exposed to them. None by default: the web table is served from this same origin.
"""

from __future__ import annotations

import asyncio
import logging
import mimetypes
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from grpc_health.v1 import health, health_pb2
from hypercorn.asyncio.run import worker_serve
from hypercorn.config import Config as HypercornConfig
from hypercorn.utils import wrap_app
from ofcpoker.v1 import (
    rules_service_connect,
    rules_service_pb2,
    settlement_feed_connect,
    settlement_feed_pb2,
    table_service_connect,
    table_service_pb2,
)

from ofc_service.api.connect import codecs, connect_service, malformed_request
from ofc_service.server.config import ServerConfig

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
        web_dir: Path = WEB_DIR,
    ) -> None:
        self.apps: dict[str, Any] = {}
        for module, name, application in SERVICES:
            service = module.DESCRIPTOR.services_by_name[name]
            self.apps[f"/{service.full_name}/"] = application(
                connect_service(handlers[service.full_name], service),
                read_max_bytes=read_max_bytes,
                codecs=codecs(),
            )
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
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        origin = _header(scope, b"origin")
        if origin is not None and "*" not in self.cors_origins and origin not in self.cors_origins:
            origin = None  # not an origin this server lets in: no CORS headers at all
        prefix = path[: path.find("/", 1) + 1] if path.count("/") >= 2 else ""
        app = self.apps.get(prefix)
        if app is not None:
            if scope["method"] == "OPTIONS":
                await self._preflight(scope, send, origin)
                return
            scope = _utf8_headers(scope)
            send = send if origin is None else _with_cors(send, origin)
            content_type = _header(scope, b"content-type") or ""
            if _is_grpc(content_type) and _TRAILERS not in scope.get("extensions", {}):
                await _grpc_needs_http2(send)
                return
            await app(scope, _checked_envelopes(scope, receive, content_type), send)
        elif path == "/healthz":
            await self._healthz(scope, send)
        else:
            await self._static(scope, send)

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
        await _respond(send, 200, body if scope["method"] == "GET" else b"", kind, len(body))


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
_ENVELOPED = ("application/connect+", "application/grpc-web")
_COMPRESSION_HEADERS = (b"connect-content-encoding", b"grpc-encoding")


def _is_grpc(content_type: str) -> bool:
    return content_type.startswith("application/grpc") and not content_type.startswith(
        "application/grpc-web"
    )


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


def _checked_envelopes(scope: Scope, receive: Receive, content_type: str) -> Receive:
    """``receive``, refusing (MALFORMED_REQUEST) an enveloped message flagged compressed
    when the request names no compression (connectrpc answers that INTERNAL)."""
    if not content_type.startswith(_ENVELOPED):
        return receive
    for name in _COMPRESSION_HEADERS:
        encoding = _header(scope, name)
        if encoding not in (None, "", "identity"):
            return receive  # connectrpc decompresses (or refuses an unknown compression)
    prefix = bytearray()  # the next envelope's 5-byte prefix, as far as it has come
    rest = 0  # bytes of the current message still to come

    async def checked() -> dict[str, Any]:
        nonlocal rest
        message = await receive()
        body = memoryview(message.get("body", b"")) if message["type"] == "http.request" else b""
        at = 0
        while at < len(body):
            if rest:
                step = min(rest, len(body) - at)
                rest, at = rest - step, at + step
                continue
            step = min(5 - len(prefix), len(body) - at)
            prefix.extend(body[at : at + step])
            at += step
            if len(prefix) == 5:
                if prefix[0] & 0x01:
                    raise malformed_request(
                        "a message flagged compressed, and no compression named"
                    )
                rest = int.from_bytes(prefix[1:5], "big")
                prefix.clear()
        return message

    return checked


def _with_cors(send: Send, origin: str) -> Send:
    async def send_with_cors(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [
                *message.get("headers", ()),
                (b"access-control-allow-origin", origin.encode()),
                (b"access-control-expose-headers", CORS_EXPOSE_HEADERS.encode()),
                (b"vary", b"Origin"),
            ]}  # fmt: skip
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
    send: Send, status: int, body: bytes, content_type: str, length: int | None = None
) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body) if length is None else length).encode()),
        (b"cache-control", b"no-cache"),
        (b"x-content-type-options", b"nosniff"),
    ]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})


class HttpServer:
    """Hypercorn serving an ASGI app on ``config.http_listen``: bound by :meth:`bind`,
    serving in the current loop after :meth:`start`, gracefully stopped by :meth:`stop`
    (in-flight calls get the grace; long-lived streams have already ended by then)."""

    def __init__(self, app: HttpApp, config: ServerConfig, *, reuse_port: bool = False) -> None:
        self.app = app
        self.hypercorn = HypercornConfig()
        # Hypercorn sets SO_REUSEPORT on the sockets it creates when it has several workers:
        # ours are ``ofc serve --workers`` processes, each calling this once.
        self.hypercorn.workers = 2 if reuse_port else 1
        self.hypercorn.bind = [config.http_listen]
        self.hypercorn.graceful_timeout = config.grace_seconds
        self.hypercorn.accesslog = None
        self.hypercorn.errorlog = log
        self.hypercorn.include_server_header = False
        if config.tls_cert:
            self.hypercorn.certfile, self.hypercorn.keyfile = config.tls_cert, config.tls_key
        self._sockets = self.hypercorn.create_sockets()
        bound = [*self._sockets.secure_sockets, *self._sockets.insecure_sockets]
        for sock in bound:  # connections queue from now on, until Hypercorn accepts them
            sock.listen(self.hypercorn.backlog)
        self.port: int = bound[0].getsockname()[1]
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
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
) -> HttpServer | None:
    """The HTTP port of ``config`` (None when ``http_listen`` is empty) serving ``handlers``
    (by service name: the same handlers objects the gRPC port serves); ``reuse_port``: shared
    with the other worker processes (SO_REUSEPORT), as the gRPC port is."""
    if not config.http_listen:
        return None
    app = HttpApp(
        handlers,
        health_servicer,
        cors_origins=config.cors_origin_list,
        read_max_bytes=config.max_message_bytes,
    )
    return HttpServer(app, config, reuse_port=reuse_port)


__all__ = ["HttpApp", "HttpServer", "create_http_server"]
