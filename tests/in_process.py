"""A service's gRPC methods called in this process, as the server runs them.

``InProcess(handlers, service).CreateTable(request, context)`` goes through the method
handler :func:`ofc_service.api.rpc.method_handlers` builds for the server (the one adapter
:func:`~ofc_service.api.rpc.add_handlers` registers): the request serialised and parsed by
the method's deserializer, the adapted handler called with ``context`` (a stand-in with what
the call uses: ``invocation_metadata``, ``abort``, ...), each response serialised by the
method's serializer and parsed with its response type, so a test sees what a client would,
without a port.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from google.protobuf import message_factory
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import Message
from ofc_service.api.rpc import method_handlers


class InProcess:
    def __init__(self, handlers: object, service: ServiceDescriptor) -> None:
        self._handlers = method_handlers(handlers, service)
        self._service = service

    def __getattr__(self, name: str) -> Callable[[Message, Any], Any]:
        handler = self._handlers[name]
        method = self._service.methods_by_name[name]
        response_type: Any = message_factory.GetMessageClass(method.output_type)

        def parse(request: Message) -> Any:
            data = request.SerializeToString()
            deserialize = handler.request_deserializer
            return data if deserialize is None else deserialize(data)  # None: the bytes

        def respond(response: Any) -> Any:
            return response_type.FromString(handler.response_serializer(response))

        if method.client_streaming:
            raise TypeError(f"{name} reads a stream of requests: call it over a port")
        if method.server_streaming:

            async def stream(request: Message, context: Any) -> AsyncIterator[Any]:
                responses = handler.unary_stream(parse(request), context)
                try:
                    async for response in responses:
                        yield respond(response)
                finally:
                    await responses.aclose()  # as grpc closes it when the call ends

            return stream

        async def unary(request: Message, context: Any) -> Any:
            return respond(await handler.unary_unary(parse(request), context))

        return unary
