"""The gRPC adapter: transport-neutral handlers served over grpc.aio.

A handler is an async method named after its RPC taking ``(request, credentials)`` — the
request message and the caller's :class:`~ofc_service.auth.Credentials`, read from the
call's metadata — and returning the response message (a server-streaming RPC: an async
iterator of them; a client-streaming one gets an async iterator of requests), or the
response already serialised, as ``bytes`` (a move's response is serialised once, before its
commit, so that a retry gets the same bytes: :func:`add_handlers` sends them as they are).
:func:`add_handlers` is the one way a service is served over gRPC: the server's three
services, the benches' servers, and (through :func:`method_handlers`, what it registers) the
tests that call a method in process. A handler raises what it meets;
:func:`~ofc_service.api.errors.api_error` maps that to one
:class:`~ofc_service.api.errors.ApiError`, sent here as the call's rich status. Nothing
but this module (and the server) knows grpc.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, NoReturn

import grpc
from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message

from ofc_service.api import decode
from ofc_service.api.errors import (
    REQUEST_ID_KEY,
    STATUS_DETAILS_KEY,
    ApiError,
    Code,
    reported,
    request_id_var,
    rich_status,
)
from ofc_service.api.serialized import Handler
from ofc_service.auth import Credentials


def status_code(code: Code) -> grpc.StatusCode:
    """gRPC's status code of a canonical code (the same number)."""
    return _STATUS_CODES[code]


_STATUS_CODES = {Code(code.value[0]): code for code in grpc.StatusCode}


async def abort(context: grpc.aio.ServicerContext, error: ApiError) -> NoReturn:
    """End the call with the error's rich status (and the request id in the trailers)."""
    request_id = request_id_var.get()
    status = rich_status(error)
    trailers: Sequence[tuple[str, str | bytes]] = (
        (STATUS_DETAILS_KEY, status.SerializeToString()),
        *(((REQUEST_ID_KEY, request_id),) if request_id else ()),
    )
    await context.abort(status_code(error.code), status.message, trailers)
    raise AssertionError("context.abort returned")  # pragma: no cover


async def fail(context: grpc.aio.ServicerContext, exc: Exception, method: str) -> NoReturn:
    """End the call with ``exc`` as the error table says (a bug: INTERNAL, logged)."""
    await abort(context, reported(exc, method))


def credentials(context: grpc.aio.ServicerContext) -> Credentials:
    return Credentials.from_metadata(context.invocation_metadata())


def unary(handler: Handler, name: str) -> Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]:
    """A handler returning one response as a grpc.aio method (unary or client-streaming)."""

    async def method(request: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            return await handler(request, credentials(context))
        except (grpc.aio.AbortError, grpc.aio.UsageError):
            raise
        except Exception as exc:
            await fail(context, exc, name)

    return method


def streaming(
    handler: Handler, name: str
) -> Callable[[Any, grpc.aio.ServicerContext], AsyncIterator[Any]]:
    """A handler returning an async iterator of responses as a server-streaming method."""

    async def method(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        try:
            async for response in handler(request, credentials(context)):
                yield response
        except (grpc.aio.AbortError, grpc.aio.UsageError):
            raise
        except Exception as exc:
            await fail(context, exc, name)

    return method


def adapt(method: MethodDescriptor, handler: Handler) -> Callable[..., Any]:
    return (streaming if method.server_streaming else unary)(handler, method.name)


def serialize(response: Message | bytes) -> bytes:
    """A response's bytes: a message serialised, bytes (already serialised) as they are."""
    if isinstance(response, bytes):
        return response
    data: bytes = response.SerializeToString()
    return data


def method_handlers(
    handlers: object, service: ServiceDescriptor
) -> dict[str, grpc.RpcMethodHandler]:
    """The grpc method handler of each method of ``service``, by method name: ``handlers``'
    method of the same name, adapted, its requests parsed with the method's request type and
    its responses sent by :func:`serialize` (a handler's bytes go out unparsed). A method
    ``handlers.RAW_REQUESTS`` names gets its request's bytes as they came: it parses what it
    must and refuses bytes that do not decode as the parser would
    (:func:`~ofc_service.api.errors.undecodable`); other transports give it the message."""
    raw: frozenset[str] = getattr(handlers, "RAW_REQUESTS", frozenset())
    methods: dict[str, grpc.RpcMethodHandler] = {}
    for method in service.methods:
        behaviour = adapt(method, getattr(handlers, method.name))
        request_type: Any = message_factory.GetMessageClass(method.input_type)
        kind = _METHOD_HANDLERS[method.client_streaming, method.server_streaming]
        methods[method.name] = kind(
            behaviour,
            request_deserializer=None if method.name in raw else decode.parser(request_type),
            response_serializer=serialize,
        )
    return methods


def add_handlers(server: grpc.aio.Server, handlers: object, service: ServiceDescriptor) -> None:
    """Serve ``service`` on ``server`` with :func:`method_handlers` (registered as the
    generated ``add_*Servicer_to_server`` would: generic, and by name before the start)."""
    methods = method_handlers(handlers, service)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service.full_name, methods),)
    )
    server.add_registered_method_handlers(service.full_name, methods)


_METHOD_HANDLERS: dict[tuple[bool, bool], Callable[..., grpc.RpcMethodHandler]] = {
    (False, False): grpc.unary_unary_rpc_method_handler,
    (False, True): grpc.unary_stream_rpc_method_handler,
    (True, False): grpc.stream_unary_rpc_method_handler,
    (True, True): grpc.stream_stream_rpc_method_handler,
}


__all__ = [
    "abort",
    "add_handlers",
    "credentials",
    "fail",
    "method_handlers",
    "serialize",
    "status_code",
]
