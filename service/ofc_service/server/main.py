"""Build, run and stop the gRPC server.

``create_server(config)`` binds everything (port 0 picks a free port, for tests) and returns
an :class:`OfcServer` that knows its bound ports; ``serve(config)`` runs one until SIGTERM or
SIGINT, then health turns NOT_SERVING, every Watch and Subscribe stream ends at once
(UNAVAILABLE, SERVER_SHUTTING_DOWN: reconnect elsewhere and resume), unary calls received
and not yet started are refused the same way, and those in flight get ``grace_seconds`` to
finish.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIServer

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import start_http_server

from ofc_service.api import rules, settlement_feed, tables
from ofc_service.api.rpc import add_handlers
from ofc_service.api.rules import SERVICE_NAME, RulesHandlers
from ofc_service.api.settlement_feed import SERVICE_NAME as FEED_SERVICE_NAME
from ofc_service.api.settlement_feed import SettlementFeedHandlers
from ofc_service.api.shutdown import QUIET_LIMIT_S, Shutdown
from ofc_service.api.tables import SERVICE_NAME as TABLE_SERVICE_NAME
from ofc_service.api.tables import ProtobufPresenter, TableHandlers
from ofc_service.application.deadlines import DeadlineSweeper
from ofc_service.application.manager import TableManager
from ofc_service.application.settlements import SettlementRelay
from ofc_service.auth import Authenticator
from ofc_service.server.config import ServerConfig, split_address
from ofc_service.server.health import StoreHealth
from ofc_service.server.interceptors import ObservabilityInterceptor
from ofc_service.server.logs import NativeStderr, configure_logging
from ofc_service.server.stopping import STEP_TIMEOUT_S, ExitDeadline, StopSteps, exit_now
from ofc_service.store import SettlementFeed, TableStore, open_feed, open_store
from ofc_service.store.feed import DEDUPE_PER_RETENTION

if TYPE_CHECKING:
    from ofc_service.server.http import HttpServer

log = logging.getLogger("ofc.server")

GC_YOUNG_THRESHOLD = 5000  # the collector's first threshold while serving (CPython's: 700)
HEALTH_SERVICE_NAME = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
SERVICE_NAMES = (
    SERVICE_NAME,
    TABLE_SERVICE_NAME,
    FEED_SERVICE_NAME,
    HEALTH_SERVICE_NAME,
    reflection.SERVICE_NAME,
)


@dataclass
class OfcServer:
    """A started-or-startable server and what it is bound to."""

    config: ServerConfig
    server: grpc.aio.Server
    health: health.aio.HealthServicer
    port: int
    store: TableStore
    sweeper: DeadlineSweeper
    metrics_port: int | None = None
    relay: SettlementRelay | None = None
    feed: SettlementFeed | None = None
    shutdown: Shutdown = field(default_factory=Shutdown)
    store_health: StoreHealth | None = None
    http: HttpServer | None = None
    _metrics_httpd: WSGIServer | None = field(default=None, repr=False)
    _metrics_thread: threading.Thread | None = field(default=None, repr=False)

    async def start(self) -> None:
        await self.server.start()
        if self.http is not None:
            self.http.start()
        self.sweeper.start()
        if self.relay is not None:
            self.relay.start()
        if self.store_health is None:
            for name in ("", *SERVICE_NAMES):
                await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        else:
            await self.store_health.start()
        host, _ = split_address(self.config.listen, what="listen")
        log.info(
            "serving",
            extra={"fields": {"listen": f"{host}:{self.port}", "metrics_port": self.metrics_port,
                              "http_port": None if self.http is None else self.http.port,
                              "tls": bool(self.config.tls_cert),
                              "store": "redis" if self.config.redis_url else "in-memory"}},
        )  # fmt: skip

    async def stop(
        self, grace: float | None = None, *, progress: ExitDeadline | None = None
    ) -> list[str]:
        """Health NOT_SERVING first (load balancers drain), streams end at once (their
        clients reconnect elsewhere), unary calls not yet started are refused until none
        comes for a moment, then in-flight unary calls finish. Every step has a time limit
        (:mod:`.stopping`); the names of those that did not finish in it."""
        grace = self.config.grace_seconds if grace is None else grace
        steps = StopSteps(progress)
        if self.store_health is not None:
            await steps.run({"store health checks": self.store_health.stop()})
        await steps.run({"health NOT_SERVING": self.health.enter_graceful_shutdown()})
        self.shutdown.begin()
        # The service's calls received and not yet started are refused (retryable) before
        # gRPC stops: its stop would end them CANCELLED.
        # (The calls in flight go on meanwhile: the time is part of their grace.)
        loop = asyncio.get_running_loop()
        began = loop.time()
        refusing = self.shutdown.quiet(limit_s=min(grace, QUIET_LIMIT_S))
        await steps.run(
            {"refuse waiting calls": refusing}, timeout_s=QUIET_LIMIT_S + STEP_TIMEOUT_S
        )
        grace = max(0.0, grace - (loop.time() - began))
        drain: dict[str, Coroutine[Any, Any, object]] = {
            "deadline sweeper": self.sweeper.stop(),
            "grpc drain": self.server.stop(grace),
        }
        if self.relay is not None:
            drain["settlement relay"] = self.relay.stop()
        if self.http is not None:  # both ports' in-flight calls finish within the one grace
            drain["http drain"] = self.http.stop(grace)
        await steps.run(drain, timeout_s=grace + STEP_TIMEOUT_S)
        close: dict[str, Coroutine[Any, Any, object]] = {"close table store": self.store.close()}
        if self.feed is not None:
            close["close settlement feed"] = self.feed.close()
        await steps.run(close)
        if self._metrics_httpd is not None:
            self._metrics_httpd.shutdown()
            self._metrics_httpd.server_close()
            self._metrics_httpd = None
        log.info("stopped", extra={"fields": {"unfinished_steps": steps.unfinished}})
        return steps.unfinished


def _server_options(config: ServerConfig, *, reuse_port: bool = False) -> list[tuple[str, int]]:
    options = [
        ("grpc.max_receive_message_length", config.max_message_bytes),
        ("grpc.max_send_message_length", config.max_message_bytes),
        # Off unless this is one of ``--workers N`` processes: a second server started on a
        # port by mistake fails to bind instead of silently taking half the connections.
        ("grpc.so_reuseport", int(reuse_port)),
    ]
    if config.max_connection_age_seconds > 0:
        age_ms = int(config.max_connection_age_seconds * 1000)
        options.append(("grpc.max_connection_age_ms", age_ms))
        options.append(("grpc.max_connection_age_grace_ms", int(config.grace_seconds * 1000)))
    return options


async def create_server(config: ServerConfig, *, reuse_port: bool = False) -> OfcServer:
    """Bind the gRPC server (and the metrics endpoint); call ``start()`` to serve.
    ``reuse_port``: share the port with the other worker processes (SO_REUSEPORT)."""
    shutdown = Shutdown()
    server = grpc.aio.server(
        interceptors=[ObservabilityInterceptor(shutdown)],
        options=_server_options(config, reuse_port=reuse_port),
    )
    store = open_store(
        config.redis_url or None,
        wait_replicas=config.redis_wait_replicas,
        wait_timeout_ms=config.redis_wait_timeout_ms,
    )
    feed = open_feed(
        config.redis_url or None,
        wait_replicas=config.redis_wait_replicas,
        wait_timeout_ms=config.redis_wait_timeout_ms,
        dedupe_ttl_seconds=DEDUPE_PER_RETENTION * config.feed_retention_seconds,
    )
    relay = SettlementRelay(store, feed, retention_s=config.feed_retention_seconds)
    authenticator = Authenticator(config.api_key_list)
    manager = TableManager(
        store,
        authenticator,
        ProtobufPresenter(),
        relay=relay,
        event_log_hands=config.event_log_hands,
        request_ttl_seconds=config.request_window_seconds,
        history_ttl_seconds=config.history_ttl_seconds,
    )
    # One handlers object per service, served on both ports (gRPC here, HTTP below).
    handlers = {
        rules.SERVICE.full_name: RulesHandlers(),
        tables.SERVICE.full_name: TableHandlers(manager, shutdown),
        settlement_feed.SERVICE.full_name: SettlementFeedHandlers(
            feed, authenticator, shutdown=shutdown
        ),
    }
    # A handler's bytes (a move's stored response, a watched event, a batch's outcomes)
    # are sent as they are.
    for service in (rules.SERVICE, tables.SERVICE, settlement_feed.SERVICE):
        add_handlers(server, handlers[service.full_name], service)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(SERVICE_NAMES, server)
    if config.tls_cert:
        with open(config.tls_key, "rb") as key, open(config.tls_cert, "rb") as cert:
            credentials = grpc.ssl_server_credentials([(key.read(), cert.read())])
        port = server.add_secure_port(config.listen, credentials)
    else:
        port = server.add_insecure_port(config.listen)
    if not port:
        raise OSError(f"cannot bind {config.listen}")
    sweeper = DeadlineSweeper(manager)
    ofc_server = OfcServer(config, server, health_servicer, port, store, sweeper)
    if config.http_listen:
        # Hypercorn and connectrpc (about a quarter of a second of imports) only when the HTTP
        # port is on: a gRPC-only replica, and `ofc serve --http-listen ''`, start without them.
        from ofc_service.server.http import create_http_server

        ofc_server.http = create_http_server(
            config, handlers, health_servicer, reuse_port=reuse_port, stopping=shutdown
        )
    ofc_server.relay, ofc_server.feed, ofc_server.shutdown = relay, feed, shutdown
    ofc_server.store_health = StoreHealth(
        health_servicer,
        (store.ping, feed.ping),
        store_services=(TABLE_SERVICE_NAME, FEED_SERVICE_NAME),
        other_services=(SERVICE_NAME, HEALTH_SERVICE_NAME, reflection.SERVICE_NAME),
        on_recovery=(sweeper.wake, relay.wake),
    )
    if config.metrics_listen:
        host, metrics_port = split_address(config.metrics_listen, what="metrics_listen")
        try:
            httpd, thread = start_http_server(metrics_port, host)
        except OSError as error:  # the address in use, say: name it, as the gRPC port does
            raise OSError(f"cannot bind {config.metrics_listen}: {error}") from error
        ofc_server.metrics_port = httpd.server_port
        ofc_server._metrics_httpd = httpd
        ofc_server._metrics_thread = thread
    return ofc_server


def tune_collector() -> None:
    """The garbage collector set for serving, once the server is built.

    Everything built so far (protobuf descriptors, tables, caches) lives as long as the
    process: it is frozen out of the collector's way, so full collections stay short. And a
    loaded server holds ~5,000 young objects alive at any moment (its in-flight calls and
    watch streams: coroutines, async generators, futures), which every young collection
    walks: at CPython's threshold of 700 one ran every ~50 moves (~1.4 ms each) and promoted
    them to be walked again in older collections, ~3% of a move's CPU; at
    :data:`GC_YOUNG_THRESHOLD` the collector costs about a third of that (collections ~8x
    rarer, ~4 ms each; PlaceCards at 64 tables in flight)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])


async def run(
    config: ServerConfig,
    *,
    reuse_port: bool = False,
    on_ready: Callable[[], None] | None = None,
    stop_on_eof: int | None = None,
) -> None:
    """Serve until SIGTERM/SIGINT, then shut down gracefully. A worker process
    (:mod:`.worker`) says when it serves (``on_ready``) and also stops when its parent's
    pipe closes (``stop_on_eof``, a file descriptor: with the parent gone, nothing else
    would ever stop it)."""
    ofc_server = await create_server(config, reuse_port=reuse_port)
    # Before it serves: a SIGTERM as soon as it is ready is a graceful stop, not a kill.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await ofc_server.start()
    if on_ready is not None:
        on_ready()
    tune_collector()
    if stop_on_eof is not None:
        fd = stop_on_eof

        def wait_for_eof() -> None:  # os.read, not a buffered file: no lock held at exit
            while os.read(fd, 4096):
                pass
            loop.call_soon_threadsafe(stop.set)

        threading.Thread(target=wait_for_eof, name="parent-pipe", daemon=True).start()
    await stop.wait()
    deadline = ExitDeadline(config.grace_seconds)
    deadline.begin(loop)
    log.info("shutting down", extra={"fields": {"grace_seconds": config.grace_seconds,
                                                "exit_within_s": deadline.limit_s}})  # fmt: skip
    if await ofc_server.stop(progress=deadline):
        log.error("exiting: shutdown steps did not finish")
        exit_now()  # what they left running would hold the interpreter's exit
    deadline.finish()


def serve(
    config: ServerConfig,
    *,
    worker: int | None = None,
    on_ready: Callable[[], None] | None = None,
    stop_on_eof: int | None = None,
) -> int:
    """The ``ofc serve`` entry point; returns the exit status (0 after a graceful stop).
    ``worker``: this process is worker ``worker`` of ``--workers N`` (:mod:`.worker`), so it
    shares the port and every log line says which worker wrote it.

    Everything the process writes to stderr is a JSON line: gRPC core's own log lines
    (absl, on file descriptor 2; ``GRPC_VERBOSITY`` sets how many, ``ofc serve`` makes it
    ERROR unless told otherwise) and any stray output are read back and logged as JSON."""
    native = NativeStderr()
    fields = {} if worker is None else {"worker": worker, "pid": os.getpid()}
    configure_logging(config.log_level, native.stream, fields=fields)
    try:
        asyncio.run(
            run(
                config,
                reuse_port=worker is not None,
                on_ready=on_ready,
                stop_on_eof=stop_on_eof,
            )
        )
    except (OSError, RuntimeError) as exc:  # an address in use, a bad certificate
        native.close()  # gRPC core's own reason, already in the pipe, is logged first
        log.error("cannot start", extra={"fields": {"error": str(exc)}})
        return 1
    finally:
        native.close()
    return 0
