"""One aio server interceptor for everything that crosses every call.

- Request id: metadata ``x-request-id`` (1..128 printable ASCII) or a generated one, set
  for the call (``request_id_var``) and echoed in the ``x-request-id`` trailer.
- Prometheus: the standard ``grpc_server_*`` metrics for unary and streaming calls.
- Logs: one JSON line per call at debug level; calls that end with an error always
  (warning, or error for INTERNAL/UNKNOWN/DATA_LOSS).
- Robust decoding: request bytes that do not decode become INVALID_ARGUMENT with reason
  MALFORMED_REQUEST (gRPC itself would answer INTERNAL).
- No UNKNOWN, ever: an exception a handler lets escape (gRPC would answer UNKNOWN) is
  logged and answered INTERNAL with an ErrorInfo; a call its client cancelled (or whose
  deadline passed) is recorded as CANCELLED, at warning level, however the handler ended.

Handlers are wrapped once per method and cached, so the per-call cost is a few counters.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from ofc_service.api.errors import (
    REQUEST_ID_KEY,
    MalformedRequestError,
    internal_error,
    reported,
    request_id_var,
    undecodable,
)
from ofc_service.api.rpc import abort
from ofc_service.api.shutdown import Shutdown
from ofc_service.metrics import RpcMetrics

access_log = logging.getLogger("ofc.access")
log = logging.getLogger("ofc.server")

MAX_REQUEST_ID_CHARS = 128
_SERVER_ERRORS = frozenset(
    {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.DATA_LOSS}
)


class Undecodable:
    """Stands in for a request message whose bytes did not decode."""

    __slots__ = ("error",)

    def __init__(self, error: MalformedRequestError) -> None:
        self.error = error


def tolerant(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    if deserializer is None:
        return None

    def deserialize(data: bytes) -> Any:
        try:
            return deserializer(data)
        except MalformedRequestError as exc:  # api.decode's: it names the field
            return Undecodable(exc)
        except Exception as exc:  # protobuf's DecodeError, or anything a deserializer raises
            return Undecodable(undecodable(exc))

    return deserialize


def _request_id(context: grpc.aio.ServicerContext) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == REQUEST_ID_KEY and isinstance(value, str):
            if 0 < len(value) <= MAX_REQUEST_ID_CHARS and value.isprintable() and value.isascii():
                return value
            break
    return secrets.token_hex(8)


class _Probe(RpcMetrics):
    """The metric children and log fields of one method."""

    __slots__ = ("grpc_type", "method")

    def __init__(self, full_method: str, grpc_type: str) -> None:
        service, _, name = full_method.lstrip("/").rpartition("/")
        self.method = full_method
        self.grpc_type = grpc_type
        super().__init__(grpc_type, service, name, "grpc")

    def begin(self, context: grpc.aio.ServicerContext) -> tuple[str, float]:
        self.started.inc()
        request_id = _request_id(context)
        request_id_var.set(request_id)
        _peer_var.set(context.peer())  # now: after a cancelled stream, peer() can segfault
        context.set_trailing_metadata(((REQUEST_ID_KEY, request_id),))
        return request_id, time.perf_counter()

    def end(
        self,
        context: grpc.aio.ServicerContext,
        request_id: str,
        start: float,
        code: grpc.StatusCode,
    ) -> None:
        elapsed = time.perf_counter() - start
        self.handled(code.name, elapsed)
        if code is grpc.StatusCode.OK:
            if access_log.isEnabledFor(logging.DEBUG):
                access_log.debug(
                    "rpc", extra={"fields": self._fields(context, request_id, code, elapsed)}
                )
            return
        level = logging.ERROR if code in _SERVER_ERRORS else logging.WARNING
        fields = self._fields(context, request_id, code, elapsed)
        fields["details"] = context.details() or ""
        access_log.log(level, "rpc", extra={"fields": fields})

    def _fields(
        self,
        context: grpc.aio.ServicerContext,
        request_id: str,
        code: grpc.StatusCode,
        elapsed: float,
    ) -> dict[str, Any]:
        return {
            "request_id": request_id,
            "method": self.method,
            "grpc_type": self.grpc_type,
            "code": code.name,
            "duration_ms": round(elapsed * 1000, 3),
            "peer": _peer_var.get(""),
        }


_peer_var: contextvars.ContextVar[str] = contextvars.ContextVar("ofc_peer")


def _final_code(context: grpc.aio.ServicerContext, exc: BaseException | None) -> grpc.StatusCode:
    """The status the call ended with, as recorded in metrics and logs: never UNKNOWN."""
    # A cancelled call (by its client, or its deadline) ends the handler with CancelledError,
    # or, for a stream suspended in a send, closes its generator later (GeneratorExit).
    if isinstance(exc, asyncio.CancelledError | GeneratorExit) or context.cancelled():
        return grpc.StatusCode.CANCELLED
    code = context.code()
    if isinstance(code, grpc.StatusCode):
        return code
    # Handlers abort with a status (context.code() above); anything else became INTERNAL.
    return grpc.StatusCode.OK if exc is None else grpc.StatusCode.INTERNAL


async def _internal(context: grpc.aio.ServicerContext, probe: _Probe, exc: Exception) -> None:
    """Answer INTERNAL (with ErrorInfo) for an exception a handler let escape, where gRPC
    would answer UNKNOWN; an abort the handler made already (or a usage error) goes on."""
    if isinstance(exc, grpc.aio.AbortError | grpc.aio.UsageError) or context.code() is not None:
        raise exc
    log.error("unhandled error in %s", probe.method, exc_info=exc)
    await abort(context, internal_error())


async def _check(request: Any, context: grpc.aio.ServicerContext) -> None:
    if isinstance(request, Undecodable):  # counted by reason, as the HTTP port counts it
        await abort(context, reported(request.error, "the gRPC port"))


async def _checked_stream(
    requests: AsyncIterator[Any], context: grpc.aio.ServicerContext, probe: _Probe
) -> AsyncIterator[Any]:
    async for request in requests:
        await _check(request, context)
        probe.received.inc()
        yield request


Behavior = Callable[..., Any]


def _wrap_unary_response(
    probe: _Probe, behavior: Behavior, streaming_request: bool, stopping: Shutdown | None
) -> Behavior:
    async def handle(request: Any, context: grpc.aio.ServicerContext) -> Any:
        request_id, start = probe.begin(context)
        error: BaseException | None = None
        try:
            if stopping is not None and stopping.started:  # not started: refused, retryable
                await abort(context, reported(stopping.refuse(), probe.method))
            if streaming_request:
                request = _checked_stream(request, context, probe)
            else:
                await _check(request, context)
                probe.received.inc()  # a unary call's message too, as the HTTP port counts it
            result = behavior(request, context)
            try:
                response = await result if inspect.isawaitable(result) else result
            except Exception as exc:
                await _internal(context, probe, exc)
                raise
            probe.sent.inc()
            return response
        except BaseException as exc:
            error = exc
            raise
        finally:
            probe.end(context, request_id, start, _final_code(context, error))

    return handle


def _wrap_streaming_response(
    probe: _Probe, behavior: Behavior, streaming_request: bool
) -> Behavior:
    def prepare(request: Any, context: grpc.aio.ServicerContext) -> Any:
        return _checked_stream(request, context, probe) if streaming_request else request

    if inspect.isasyncgenfunction(behavior):

        async def generate(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            request_id, start = probe.begin(context)
            error: BaseException | None = None
            try:
                if not streaming_request:
                    await _check(request, context)
                    probe.received.inc()
                try:
                    async for response in behavior(prepare(request, context), context):
                        probe.sent.inc()
                        yield response
                except Exception as exc:
                    await _internal(context, probe, exc)
                    raise
            except BaseException as exc:
                error = exc
                raise
            finally:
                probe.end(context, request_id, start, _final_code(context, error))

        return generate

    async def write(request: Any, context: grpc.aio.ServicerContext) -> None:  # context.write style
        request_id, start = probe.begin(context)
        error: BaseException | None = None
        try:
            if not streaming_request:
                await _check(request, context)
                probe.received.inc()
            result: Awaitable[None] = behavior(prepare(request, context), context)
            try:
                await result
            except Exception as exc:
                await _internal(context, probe, exc)
                raise
        except BaseException as exc:
            error = exc
            raise
        finally:
            probe.end(context, request_id, start, _final_code(context, error))

    return write


class ObservabilityInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Request ids, standard Prometheus metrics, JSON access logs, tolerant decoding; with
    ``stopping``, the service's unary calls that start once the server is stopping are
    refused (UNAVAILABLE, SERVER_SHUTTING_DOWN: :meth:`Shutdown.refuse`), while health
    checks and reflection go on answering."""

    def __init__(self, stopping: Shutdown | None = None) -> None:
        self._wrapped: dict[str, tuple[Any, Any]] = {}
        self._stopping = stopping

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        method: str = handler_call_details.method
        cached = self._wrapped.get(method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        stopping = self._stopping if method.startswith(_SERVICE_PREFIX) else None
        wrapped = _wrap(method, handler, stopping)
        self._wrapped[method] = (handler, wrapped)
        return wrapped


_SERVICE_PREFIX = "/ofcpoker."  # the service's own methods (not health, not reflection)


def _wrap(method: str, handler: Any, stopping: Shutdown | None = None) -> Any:
    deserializer = tolerant(handler.request_deserializer)
    serializer = handler.response_serializer
    if handler.unary_unary:
        probe = _Probe(method, "unary")
        return grpc.unary_unary_rpc_method_handler(
            _wrap_unary_response(probe, handler.unary_unary, False, stopping),
            request_deserializer=deserializer,
            response_serializer=serializer,
        )
    if handler.stream_unary:
        probe = _Probe(method, "client_stream")
        return grpc.stream_unary_rpc_method_handler(
            _wrap_unary_response(probe, handler.stream_unary, True, stopping),
            request_deserializer=deserializer,
            response_serializer=serializer,
        )
    if handler.unary_stream:
        probe = _Probe(method, "server_stream")
        return grpc.unary_stream_rpc_method_handler(
            _wrap_streaming_response(probe, handler.unary_stream, False),
            request_deserializer=deserializer,
            response_serializer=serializer,
        )
    probe = _Probe(method, "bidi_stream")
    return grpc.stream_stream_rpc_method_handler(
        _wrap_streaming_response(probe, handler.stream_stream, True),
        request_deserializer=deserializer,
        response_serializer=serializer,
    )
