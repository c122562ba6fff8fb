"""The one table from error classes to gRPC status codes, and the statuses they travel in.

A failed call carries a ``google.rpc.Status`` (trailer ``grpc-status-details-bin``) with one
``ErrorInfo`` (domain ``ofc.poker``, the error's stable ``reason``, ``metadata["field"]``)
and, when the error names a field, a ``BadRequest`` with one ``FieldViolation``. The
protos document the same table for clients (protos/ofcpoker/v1/errors.proto).

>>> from ofc.errors import DuplicateCardError
>>> status_code(DuplicateCardError("duplicate card 7s", field="board.top")).name
'INVALID_ARGUMENT'
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from typing import Any, NoReturn

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from ofc import errors as core
from ofcpoker.v1 import errors_pb2

from ofc_service.tables import ClientSeedPolicyError

DOMAIN = "ofc.poker"
REQUEST_ID_KEY = "x-request-id"
STATUS_DETAILS_KEY = "grpc-status-details-bin"
MAX_MESSAGE_CHARS = 512  # messages quote input: keep trailers far below metadata limits


class MalformedRequestError(core.InvalidInputError):
    """Request bytes that do not decode as the method's message (e.g. invalid UTF-8)."""

    reason = "MALFORMED_REQUEST"


class BatchTooLargeError(core.InvalidInputError):
    """More items in one batch call than the documented limit."""

    reason = "BATCH_TOO_LARGE"


class RequestIdReusedError(core.InvalidInputError):
    """A request_id the caller already used for a different request (within the retry
    window): the first request's answer is not this one's. A new request needs a new id."""

    reason = "REQUEST_ID_REUSED"


class StaleVersionError(core.OfcError):
    """The request's expected_version is not the table's: re-read, then decide again."""

    reason = "STALE_VERSION"


class TableNotFoundError(core.OfcError):
    reason = "TABLE_NOT_FOUND"


class HandNotFoundError(core.OfcError):
    reason = "HAND_NOT_FOUND"


class EventsTrimmedError(core.OfcError):
    """A Watch asked to resume after an event the log no longer holds: start afresh."""

    reason = "EVENTS_TRIMMED"


class StoreUnavailableError(core.OfcError):
    """The table store did not answer; safe to retry with the same request_id."""

    reason = "STORE_UNAVAILABLE"


class NewerServerError(core.OfcError):
    """The table was last written by a newer server version than this replica (during a
    rolling upgrade): retry with the same request_id, another replica will answer."""

    reason = "NEWER_SERVER"


class ServerShuttingDownError(core.OfcError):
    """This replica is stopping and ended a long-lived stream (Watch, Subscribe): reconnect,
    another replica will answer, and resume where the stream ended."""

    reason = "SERVER_SHUTTING_DOWN"


class UnauthenticatedError(core.OfcError):
    reason = "UNAUTHENTICATED"


class PermissionDeniedError(core.OfcError):
    reason = "PERMISSION_DENIED"


class InternalError(core.OfcError):
    """A server bug surfaced as a status; never raised for a user mistake."""

    reason = "INTERNAL"


_INVALID = grpc.StatusCode.INVALID_ARGUMENT
_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION

# Every error class the API can raise, with its status code. Tests check that every class in
# ofc.errors is listed, so a new core error cannot reach a client without a decision here.
STATUS_CODES: dict[type[core.OfcError], grpc.StatusCode] = {
    core.OfcError: _INVALID,
    # malformed or impossible input: fix the request, never retry it unchanged
    core.InvalidInputError: _INVALID,
    core.InvalidCardError: _INVALID,
    core.DuplicateCardError: _INVALID,
    core.WrongRowSizeError: _INVALID,
    core.WrongPlayerCountError: _INVALID,
    core.UnknownRulesetError: _INVALID,
    core.InvalidRulesetError: _INVALID,
    core.InvalidSeedError: _INVALID,
    core.InvalidRowError: _INVALID,
    MalformedRequestError: _INVALID,
    BatchTooLargeError: _INVALID,
    RequestIdReusedError: _INVALID,
    # well formed but not allowed in the current state: re-read the state, then decide
    core.IllegalActionError: _PRECONDITION,
    core.NotYourTurnError: _PRECONDITION,
    core.CardNotDealtError: _PRECONDITION,
    core.RowFullError: _PRECONDITION,
    core.WrongCardCountError: _PRECONDITION,
    core.DiscardNotAllowedError: _PRECONDITION,
    core.HandNotInProgressError: _PRECONDITION,
    core.HandInProgressError: _PRECONDITION,
    core.UnknownSeatError: _PRECONDITION,
    core.SeatTakenError: _PRECONDITION,
    core.FantasylandOwedError: _PRECONDITION,
    core.NotEnoughPlayersError: _PRECONDITION,
    core.MatchOverError: _PRECONDITION,
    core.PlayerAlreadySeatedError: _PRECONDITION,
    core.NotInFantasylandError: _PRECONDITION,
    core.InFantasylandError: _PRECONDITION,
    ClientSeedPolicyError: _PRECONDITION,
    # tables: store and credentials
    StaleVersionError: grpc.StatusCode.ABORTED,
    TableNotFoundError: grpc.StatusCode.NOT_FOUND,
    HandNotFoundError: grpc.StatusCode.NOT_FOUND,
    EventsTrimmedError: grpc.StatusCode.OUT_OF_RANGE,
    StoreUnavailableError: grpc.StatusCode.UNAVAILABLE,
    NewerServerError: grpc.StatusCode.UNAVAILABLE,
    ServerShuttingDownError: grpc.StatusCode.UNAVAILABLE,
    UnauthenticatedError: grpc.StatusCode.UNAUTHENTICATED,
    PermissionDeniedError: grpc.StatusCode.PERMISSION_DENIED,
    # a bug on our side
    InternalError: grpc.StatusCode.INTERNAL,
}


def status_code(error: core.OfcError) -> grpc.StatusCode:
    """The status code for an error: its class's entry, else its nearest listed ancestor."""
    for cls in type(error).__mro__:
        code = STATUS_CODES.get(cls)
        if code is not None:
            return code
    return _INVALID  # pragma: no cover - OfcError itself is listed


def _short(message: str) -> str:
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    return message[: MAX_MESSAGE_CHARS - 3] + "..."


def _pack(message: Any) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


def rich_status(error: core.OfcError) -> status_pb2.Status:
    """The ``google.rpc.Status`` for an error: ErrorInfo, plus BadRequest when it names a field.

    >>> from ofc.errors import InvalidCardError
    >>> s = rich_status(InvalidCardError("invalid card: 'Zz'", field="cards[1]"))
    >>> s.code, len(s.details)
    (3, 2)
    """
    code = status_code(error)
    message = _short(error.message)
    info = error_details_pb2.ErrorInfo(reason=error.reason, domain=DOMAIN)
    if error.field:
        info.metadata["field"] = error.field
    details = [_pack(info)]
    if error.field:
        violation = error_details_pb2.BadRequest.FieldViolation(
            field=error.field, description=message
        )
        details.append(_pack(error_details_pb2.BadRequest(field_violations=[violation])))
    return status_pb2.Status(code=code.value[0], message=message, details=details)


def error_detail(error: core.OfcError) -> errors_pb2.ErrorDetail:
    """The same error as a value, for one failed item in a batch or stream."""
    return errors_pb2.ErrorDetail(
        reason=error.reason,
        field=error.field,
        message=_short(error.message),
        code=status_code(error).value[0],
    )


# The current call's request id: set by the server's interceptor, echoed in error trailers.
request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("ofc_request_id", default="")


async def abort(context: grpc.aio.ServicerContext, error: core.OfcError) -> NoReturn:
    """End the call with the error's rich status (and the request id in the trailers)."""
    request_id = request_id_var.get()
    status = rich_status(error)
    trailers: Sequence[tuple[str, str | bytes]] = (
        (STATUS_DETAILS_KEY, status.SerializeToString()),
        *(((REQUEST_ID_KEY, request_id),) if request_id else ()),
    )
    await context.abort(status_code(error), status.message, trailers)
    raise AssertionError("context.abort returned")  # pragma: no cover


__all__ = [
    "DOMAIN",
    "STATUS_CODES",
    "BatchTooLargeError",
    "InternalError",
    "MalformedRequestError",
    "RequestIdReusedError",
    "ServerShuttingDownError",
    "abort",
    "error_detail",
    "request_id_var",
    "rich_status",
    "status_code",
]
