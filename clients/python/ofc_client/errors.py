"""Typed exceptions carrying the server's ErrorInfo reason and field path.

Catch :class:`InvalidRequestError` to report a bad request (never retry it unchanged),
:class:`RetryableError` to retry with backoff, :class:`OfcClientError` for all of them.
"""

from __future__ import annotations

import grpc
from google.rpc import error_details_pb2, status_pb2

STATUS_DETAILS_KEY = "grpc-status-details-bin"
REQUEST_ID_KEY = "x-request-id"


class OfcClientError(Exception):
    """A call that failed: gRPC ``code``, ErrorInfo ``reason`` and ``field``, and a message."""

    def __init__(
        self,
        message: str,
        *,
        code: grpc.StatusCode,
        reason: str = "",
        field: str = "",
        request_id: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason or code.name
        self.field = field
        self.request_id = request_id

    def __str__(self) -> str:
        where = f" at {self.field}" if self.field else ""
        return f"{self.reason}{where}: {self.message}"


class InvalidRequestError(OfcClientError):
    """INVALID_ARGUMENT: the request is wrong (``reason`` says how, ``field`` where)."""


class RequestIdReusedError(InvalidRequestError):
    """INVALID_ARGUMENT (REQUEST_ID_REUSED): this request_id was already sent, by the same
    credentials, with a different request; the first one's answer is not this one's. Send
    the new request with a new request_id (``field`` is ``request_id``)."""


class FailedPreconditionError(OfcClientError):
    """FAILED_PRECONDITION: well formed but not allowed in the current state."""


class RetryableError(OfcClientError):
    """UNAVAILABLE, ABORTED, RESOURCE_EXHAUSTED or DEADLINE_EXCEEDED: may succeed later."""


class StaleVersionError(RetryableError):
    """ABORTED (STALE_VERSION): the table moved on; re-read it, then decide again."""


class NotFoundError(OfcClientError):
    """NOT_FOUND: no such table (TABLE_NOT_FOUND) or finished hand (HAND_NOT_FOUND)."""


class UnauthenticatedError(OfcClientError):
    """UNAUTHENTICATED: credentials missing or unknown (seat token, API key)."""


class PermissionDeniedError(OfcClientError):
    """PERMISSION_DENIED: a valid credential that may not do this (a seat token acting for
    another seat, another table's token, a seat token where an operator key is required).
    A move out of turn is FailedPreconditionError, reason NOT_YOUR_TURN."""


class ServerError(OfcClientError):
    """INTERNAL, UNKNOWN or another code a correct request should never get."""


_CLASSES: dict[grpc.StatusCode, type[OfcClientError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidRequestError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.UNAVAILABLE: RetryableError,
    grpc.StatusCode.ABORTED: StaleVersionError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: RetryableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: RetryableError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
}


# Reasons with a class of their own (a subclass of their code's class).
_REASON_CLASSES: dict[str, type[OfcClientError]] = {
    "REQUEST_ID_REUSED": RequestIdReusedError,
}


def error_class(code: grpc.StatusCode, reason: str = "") -> type[OfcClientError]:
    """The exception class for a status code and ErrorInfo reason.

    >>> error_class(grpc.StatusCode.INVALID_ARGUMENT, "REQUEST_ID_REUSED").__name__
    'RequestIdReusedError'
    >>> error_class(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_CARD").__name__
    'InvalidRequestError'
    """
    by_code = _CLASSES.get(code, ServerError)
    by_reason = _REASON_CLASSES.get(reason)
    return by_reason if by_reason is not None and issubclass(by_reason, by_code) else by_code


def from_rpc_error(error: grpc.RpcError) -> OfcClientError:
    """The typed exception for a failed call, with ErrorInfo/BadRequest unpacked."""
    code: grpc.StatusCode = error.code()
    message: str = error.details() or code.name
    reason = ""
    field = ""
    request_id = ""
    for key, value in error.trailing_metadata() or ():
        if key == REQUEST_ID_KEY and isinstance(value, str):
            request_id = value
        elif key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                    info = error_details_pb2.ErrorInfo()
                    detail.Unpack(info)
                    reason = info.reason
                    field = field or info.metadata.get("field", "")
                elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                    bad = error_details_pb2.BadRequest()
                    detail.Unpack(bad)
                    if bad.field_violations:
                        field = bad.field_violations[0].field
    error_type = error_class(code, reason)
    return error_type(message, code=code, reason=reason, field=field, request_id=request_id)
