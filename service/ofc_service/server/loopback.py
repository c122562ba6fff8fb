"""Handlers that answer by calling this server's own gRPC services over a private socket.

The Connect adapter (:mod:`ofc_service.api.connect`) serves handlers: an async method per
RPC taking ``(request, credentials)``. Until the servicers are such handlers themselves,
these are: each forwards its call to the same process's gRPC server over a Unix socket only
this process can reach (a folder of mode 0700), with the credentials as the same metadata
and the request id, so both ports share one implementation of every RPC, its stores, watch
hub, authentication, error table and shutdown. A failed call raises :class:`LoopbackError`
with the ``google.rpc.Status`` the gRPC client would have got.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from types import SimpleNamespace
from typing import Any

import grpc
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass
from google.rpc import code_pb2, status_pb2

from ofc_service.api.errors import REQUEST_ID_KEY, STATUS_DETAILS_KEY, request_id_var
from ofc_service.auth import API_KEY_HEADER, SEAT_TOKEN_HEADER, Credentials

INTERNAL_MESSAGE = "internal error; report the request id"


class LoopbackError(Exception):
    """A forwarded call's failure, as its ``google.rpc.Status``."""

    def __init__(self, status: status_pb2.Status) -> None:
        super().__init__(status.message)
        self.status = status


def status_of(exc: Exception) -> status_pb2.Status:
    """The status a client gets for what a forwarded call raised (anything else: a bug)."""
    if isinstance(exc, LoopbackError):
        return exc.status
    return status_pb2.Status(code=code_pb2.INTERNAL, message=INTERNAL_MESSAGE)


def _status(error: grpc.aio.AioRpcError) -> status_pb2.Status:
    for key, value in error.trailing_metadata() or ():
        if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            return status_pb2.Status.FromString(value)
    return status_pb2.Status(code=error.code().value[0], message=error.details() or "")


def _metadata(credentials: Credentials) -> tuple[tuple[str, str], ...]:
    metadata = [(REQUEST_ID_KEY, request_id_var.get(""))]
    if credentials.seat_token is not None:
        metadata.append((SEAT_TOKEN_HEADER, credentials.seat_token))
    if credentials.api_key is not None:
        metadata.append((API_KEY_HEADER, credentials.api_key))
    return tuple((k, v) for k, v in metadata if v)


class Loopback:
    """The private socket (``address`` for the gRPC server to bind) and a channel to it."""

    def __init__(self) -> None:
        self._folder = tempfile.mkdtemp(prefix="ofc-loopback-")
        os.chmod(self._folder, 0o700)
        self.address = f"unix:{os.path.join(self._folder, 'grpc.sock')}"
        self._channel: grpc.aio.Channel | None = None

    @property
    def channel(self) -> grpc.aio.Channel:
        if self._channel is None:  # made on the server's loop, at first use
            self._channel = grpc.aio.insecure_channel(self.address)
        return self._channel

    def handlers(self, service: ServiceDescriptor) -> Any:
        """An object with one handler per RPC of ``service``, named after it."""
        return SimpleNamespace(**{m.name: self._handler(m) for m in service.methods})

    def _handler(self, method: MethodDescriptor) -> Callable[..., Any]:
        path = f"/{method.containing_service.full_name}/{method.name}"
        request_class: type[Message] = GetMessageClass(method.input_type)
        response_class: type[Message] = GetMessageClass(method.output_type)
        kind = (method.client_streaming, method.server_streaming)
        factory = {
            (False, False): "unary_unary",
            (True, False): "stream_unary",
            (False, True): "unary_stream",
            (True, True): "stream_stream",
        }[kind]

        def call(request: Any, credentials: Credentials) -> Any:
            multicallable = getattr(self.channel, factory)(
                path,
                request_serializer=request_class.SerializeToString,
                response_deserializer=response_class.FromString,
            )
            return multicallable(request, metadata=_metadata(credentials))

        async def one(request: Any, credentials: Credentials) -> Any:
            try:
                return await call(request, credentials)
            except grpc.aio.AioRpcError as error:
                raise LoopbackError(_status(error)) from None

        async def many(request: Any, credentials: Credentials) -> AsyncIterator[Any]:
            stream = call(request, credentials)
            try:
                async for response in stream:
                    yield response
            except grpc.aio.AioRpcError as error:
                raise LoopbackError(_status(error)) from None
            finally:
                stream.cancel()  # the HTTP client went away: end the gRPC call too

        return many if method.server_streaming else one

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
        shutil.rmtree(self._folder, ignore_errors=True)


__all__ = ["Loopback", "LoopbackError", "status_of"]
