"""Responses a handler returns already serialised, for an adapter that needs messages.

A handler may return (or, streaming, yield) a response as ``bytes``: a move's response is
serialised once, before its commit, and a watched event is its stored bytes. The gRPC
adapter sends those bytes as they are (:func:`ofc_service.api.rpc.add_handlers`); the
Connect adapter, whose codecs (JSON among them) encode messages only, wraps each handler
with :func:`parsing_bytes`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor

from ofc_service.auth import Credentials

Handler = Callable[[Any, Credentials], Any]


def parsing_bytes(method: MethodDescriptor, handler: Handler) -> Handler:
    """``handler`` with each response it gives as bytes parsed into ``method``'s response
    type (messages pass as they are)."""
    response_type: Any = message_factory.GetMessageClass(method.output_type)
    if method.server_streaming:

        async def each_parsed(request: Any, creds: Credentials) -> AsyncIterator[Any]:
            async for response in handler(request, creds):
                yield (
                    response_type.FromString(response) if isinstance(response, bytes) else response
                )

        return each_parsed

    async def parsed(request: Any, creds: Credentials) -> Any:
        return _parsed(response_type, await handler(request, creds))

    return parsed


def _parsed(response_type: Any, response: Any) -> Any:
    return response_type.FromString(response) if isinstance(response, bytes) else response


__all__ = ["Handler", "parsing_bytes"]
