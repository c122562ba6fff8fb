"""The one error table: every error a request can meet, as one typed :class:`ApiError`.

A handler raises whatever it meets (a core rule error, a credential or store error, a
table record from a newer server); :func:`api_error` turns it into an :class:`ApiError`
through :data:`ERRORS`, the one table of status codes and ErrorInfo reasons. A transport
sends an ApiError as a ``google.rpc.Status`` (:func:`rich_status`) with one ``ErrorInfo``
(domain ``ofc.poker``, the stable ``reason``, ``metadata["field"]``) and, when the error
names a field, a ``BadRequest`` with one ``FieldViolation``; the gRPC adapter
(:mod:`ofc_service.api.rpc`) puts it in the ``grpc-status-details-bin`` trailer. Nothing here
imports grpc. The protos document the same table for clients
(protos/ofcpoker/v1/errors.proto).

>>> from ofc.errors import DuplicateCardError
>>> api_error(DuplicateCardError("duplicate card 7s", field="board.top")).code.name
'INVALID_ARGUMENT'
"""

from __future__ import annotations

import contextvars
import enum
import logging
from dataclasses import dataclass
from typing import Any

from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from ofc import errors as core
from ofcpoker.v1 import errors_pb2

from ofc_service import auth, store
from ofc_service.application.manager import HandNotFoundError
from ofc_service.application.records import (
    ClientSeedPolicyError,
    LeaveChangesSpentError,
    NewerRecordError,
)
from ofc_service.metrics import REQUEST_ERRORS

log = logging.getLogger("ofc.api")

DOMAIN = "ofc.poker"
REQUEST_ID_KEY = "x-request-id"
STATUS_DETAILS_KEY = "grpc-status-details-bin"
MAX_MESSAGE_CHARS = 512  # messages quote input: keep trailers far below metadata limits
INTERNAL_MESSAGE = "internal error; report the request id"


class Code(enum.IntEnum):
    """The canonical status codes (google.rpc.Code; gRPC's and Connect's, by number)."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


class ApiError(Exception):
    """A request's failure as a client sees it: a status ``code``, the ErrorInfo ``reason``,
    a message, and the request ``field`` it names ("" for none: no BadRequest)."""

    def __init__(self, code: Code, reason: str, message: str, field: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.field = field

    @property
    def field_violations(self) -> tuple[tuple[str, str], ...]:
        """The BadRequest field violations, (field, description): one when a field is named."""
        return ((self.field, _short(self.message)),) if self.field else ()

    def __repr__(self) -> str:
        return f"ApiError({self.code.name}, {self.reason!r}, {self.message!r}, {self.field!r})"


def internal_error() -> ApiError:
    """A server bug surfaced as a status; never raised for a user mistake."""
    return ApiError(Code.INTERNAL, "INTERNAL", INTERNAL_MESSAGE)


class MalformedRequestError(core.InvalidInputError):
    """Request bytes that do not decode as the method's message (e.g. invalid UTF-8)."""

    reason = "MALFORMED_REQUEST"


def undecodable(error: Exception) -> MalformedRequestError:
    """The refusal of request bytes whose parsing raised ``error`` (the server's
    deserializer, or a handler that takes its request's bytes and parses what it must)."""
    return MalformedRequestError(f"the request does not decode: {type(error).__name__}: {error}")


class BatchTooLargeError(core.InvalidInputError):
    """More items in one batch call than the documented limit."""

    reason = "BATCH_TOO_LARGE"


class MessageTooLargeError(core.OfcError):
    """A request message (or, over the HTTP port, a request body) over the server's size
    limit (``--max-message-bytes``): split it, a retry unchanged fails the same way."""

    reason = "MESSAGE_TOO_LARGE"


class InvalidTimeoutError(core.InvalidInputError):
    """A deadline header (``connect-timeout-ms``, ``grpc-timeout``) that is not one."""

    reason = "INVALID_TIMEOUT"


class RequestBodyTimeoutError(core.OfcError):
    """(HTTP port) a call that takes one request message whose body did not arrive in full
    within ``--http-body-seconds`` of its headers: nothing was done; send it again."""

    reason = "REQUEST_BODY_TIMEOUT"


class WrongMessageCountError(core.OfcError):
    """A call that takes one request message sent none or several."""

    reason = "WRONG_MESSAGE_COUNT"


class UnsupportedCompressionError(core.OfcError):
    """A request compressed with a compression the server does not speak."""

    reason = "UNSUPPORTED_COMPRESSION"


class ServerShuttingDownError(core.OfcError):
    """This replica is stopping and ended a long-lived stream (Watch, Subscribe): reconnect,
    another replica will answer, and resume where the stream ended."""

    reason = "SERVER_SHUTTING_DOWN"


class ConnectionRetiredError(core.OfcError):
    """(HTTP port) The connection a long-lived stream (Watch) ran on reached its maximum
    age and its grace: the stream is ended before the connection is closed, so that its
    client reads an end it can act on (reconnect at once and resume) rather than a cut."""

    reason = "CONNECTION_RETIRED"


@dataclass(frozen=True, slots=True)
class ErrorRule:
    """How one class of error reaches a client."""

    code: Code
    reason: str = ""  # the ErrorInfo reason ("": the error's own ``reason``)
    field: str = ""  # the request field it names, when the error itself names none
    message: str = ""  # replaces the error's own message ("": the error's)


_INVALID = Code.INVALID_ARGUMENT
_PRECONDITION = Code.FAILED_PRECONDITION
_CORE: dict[type[core.OfcError], Code] = {
    # malformed or impossible input: fix the request, never retry it unchanged
    core.OfcError: _INVALID,
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
    InvalidTimeoutError: _INVALID,
    # the transport's own refusals
    MessageTooLargeError: Code.RESOURCE_EXHAUSTED,
    WrongMessageCountError: Code.UNIMPLEMENTED,
    UnsupportedCompressionError: Code.UNIMPLEMENTED,
    RequestBodyTimeoutError: Code.DEADLINE_EXCEEDED,
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
    LeaveChangesSpentError: _PRECONDITION,
    HandNotFoundError: Code.NOT_FOUND,
    ServerShuttingDownError: Code.UNAVAILABLE,
    ConnectionRetiredError: Code.UNAVAILABLE,
}

# Every error class a request can meet, with how it reaches the client. Tests check that
# every class in ofc.errors is listed, so a new core error cannot reach a client without a
# decision here; an error not listed is a bug (INTERNAL, logged).
ERRORS: dict[type[Exception], ErrorRule] = {
    **{cls: ErrorRule(code) for cls, code in _CORE.items()},  # each with its own reason
    # tables: the store, the records, the credentials
    store.StaleVersionError: ErrorRule(Code.ABORTED, "STALE_VERSION", "expected_version"),
    store.RequestIdReusedError: ErrorRule(_INVALID, "REQUEST_ID_REUSED", "request_id"),
    store.TableNotFoundError: ErrorRule(Code.NOT_FOUND, "TABLE_NOT_FOUND", "table_id"),
    store.EventsTrimmedError: ErrorRule(Code.OUT_OF_RANGE, "EVENTS_TRIMMED", "after_event_id"),
    store.EventIdAheadError: ErrorRule(Code.OUT_OF_RANGE, "EVENTS_TRIMMED", "after_event_id"),
    store.StoreUnavailableError: ErrorRule(
        Code.UNAVAILABLE, "STORE_UNAVAILABLE", message="the table store is unavailable; retry"
    ),
    store.InvalidIdError: ErrorRule(_INVALID, core.InvalidInputError.reason, "table_id"),
    NewerRecordError: ErrorRule(Code.UNAVAILABLE, NewerRecordError.reason),
    auth.UnauthenticatedError: ErrorRule(Code.UNAUTHENTICATED, "UNAUTHENTICATED"),
    auth.PermissionDeniedError: ErrorRule(Code.PERMISSION_DENIED, "PERMISSION_DENIED"),
}
REASON_CODES: dict[str, Code] = {
    **{
        rule.reason or getattr(cls, "reason"): rule.code  # noqa: B009 - every listed class has one
        for cls, rule in ERRORS.items()
        if cls is not core.OfcError  # only the base of the others: never raised itself
    },
    "INTERNAL": Code.INTERNAL,
}
"""Every ErrorInfo reason the listed errors are sent with, and its status code."""
REASONS = frozenset(REASON_CODES)


def error_rule(error: Exception) -> ErrorRule | None:
    """The table's entry for an error: its class's, else its nearest listed ancestor's."""
    for cls in type(error).__mro__:
        rule = ERRORS.get(cls)
        if rule is not None:
            return rule
    return None


def api_error(error: Exception) -> ApiError:
    """``error`` as the client sees it (an ApiError is itself; an error the table does not
    list is INTERNAL: a bug, which the caller logs).

    >>> from ofc.errors import InvalidCardError
    >>> api_error(InvalidCardError("invalid card: 'Zz'", field="cards[1]"))
    ApiError(INVALID_ARGUMENT, 'INVALID_CARD', "invalid card: 'Zz'", 'cards[1]')
    """
    if isinstance(error, ApiError):
        return error
    rule = error_rule(error)
    if rule is None:
        return internal_error()
    # An error names its own reason (a subclass the table does not list keeps its own,
    # with its nearest listed ancestor's code), unless the table gives it one.
    reason = rule.reason or getattr(error, "reason", "") or "INTERNAL"
    message = rule.message or getattr(error, "message", "") or str(error)
    field = getattr(error, "field", "") or rule.field
    return ApiError(rule.code, reason, message, field)


def reported(error: Exception, method: str) -> ApiError:
    """What a call that raised ``error`` answers, on any transport: ``api_error(error)``,
    counted by reason, and logged with its traceback when it is a bug (INTERNAL)."""
    failure = api_error(error)
    if failure.code is Code.INTERNAL and not isinstance(error, ApiError):
        log.exception("internal error in %s", method, exc_info=error)
    REQUEST_ERRORS.labels(failure.reason).inc()
    return failure


def _short(message: str) -> str:
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    return message[: MAX_MESSAGE_CHARS - 3] + "..."


def _pack(message: Any) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


def rich_status(error: ApiError) -> status_pb2.Status:
    """The ``google.rpc.Status`` for an error: ErrorInfo, plus BadRequest when it names a field.

    >>> from ofc.errors import InvalidCardError
    >>> s = rich_status(api_error(InvalidCardError("invalid card: 'Zz'", field="cards[1]")))
    >>> s.code, len(s.details)
    (3, 2)
    """
    message = _short(error.message)
    info = error_details_pb2.ErrorInfo(reason=error.reason, domain=DOMAIN)
    if error.field:
        info.metadata["field"] = error.field
    details = [_pack(info)]
    violations = [
        error_details_pb2.BadRequest.FieldViolation(field=field, description=description)
        for field, description in error.field_violations
    ]
    if violations:
        details.append(_pack(error_details_pb2.BadRequest(field_violations=violations)))
    return status_pb2.Status(code=int(error.code), message=message, details=details)


def error_detail(error: Exception) -> errors_pb2.ErrorDetail:
    """The same error as a value, for one failed item in a batch or stream."""
    failure = api_error(error)
    return errors_pb2.ErrorDetail(
        reason=failure.reason,
        field=failure.field,
        message=_short(failure.message),
        code=int(failure.code),
    )


# The current call's request id: set by the server's interceptor, echoed in error trailers.
request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("ofc_request_id", default="")


__all__ = [
    "DOMAIN",
    "ERRORS",
    "REASONS",
    "REASON_CODES",
    "ApiError",
    "BatchTooLargeError",
    "Code",
    "ConnectionRetiredError",
    "ErrorRule",
    "InvalidTimeoutError",
    "MalformedRequestError",
    "MessageTooLargeError",
    "ServerShuttingDownError",
    "UnsupportedCompressionError",
    "WrongMessageCountError",
    "api_error",
    "error_detail",
    "error_rule",
    "internal_error",
    "reported",
    "request_id_var",
    "rich_status",
    "undecodable",
]
