"""The Connect adapter: the transport-neutral handlers served over Connect and gRPC-Web.

The same handlers as the gRPC adapter's (:mod:`ofc_service.api.rpc`): an async method
named after its RPC taking ``(request, credentials)`` and returning the response (a
server-streaming RPC: an async iterator of them; a client- or bidi-streaming one gets an
async iterator of requests), raising what it meets. :func:`connect_service` wraps each as
the method of the service object that the generated ``<Service>ASGIApplication``
(service/ofcpoker/v1/*_connect.py) serves; connectrpc speaks the wire protocols (Connect
JSON and binary, gRPC-Web, gRPC over HTTP/2), the deadline and the client's going away.

What crosses every call is done here once, as the gRPC interceptor does it for gRPC:
credentials from the request headers (the same ``x-ofc-seat-token``, ``x-ofc-api-key`` or
``authorization`` as gRPC metadata), the request id (``x-request-id`` in, echoed in the
response headers), the ``grpc_server_*`` metrics labelled with the protocol, an access log
line for every failed call, a request that does not decode answered MALFORMED_REQUEST, and
an error turned by the one error table (:func:`~ofc_service.api.errors.reported`) into the
same ``google.rpc.Status`` a gRPC client gets: the code, the message and its details
(ErrorInfo, BadRequest) as Connect's error details.
"""

from __future__ import annotations

import contextvars
import functools
import json
import logging
import re
import secrets
import time
from collections.abc import AsyncIterator, Callable, Mapping
from types import SimpleNamespace
from typing import Any

from connectrpc.code import Code as ConnectCode
from connectrpc.codec import Codec
from connectrpc.compat import google_protobuf_binary_codec
from connectrpc.errors import ConnectError, ErrorDetail
from connectrpc.request import RequestContext
from google.protobuf import json_format
from google.protobuf.descriptor import (
    Descriptor,
    FieldDescriptor,
    MethodDescriptor,
    ServiceDescriptor,
)
from google.rpc import status_pb2
from protobuf.wkt import Any as AnyDetail

from ofc_service.api import decode
from ofc_service.api.errors import (
    REQUEST_ID_KEY,
    MalformedRequestError,
    MessageTooLargeError,
    UnsupportedCompressionError,
    reported,
    request_id_var,
    rich_status,
)
from ofc_service.api.json_errors import json_error_field, located
from ofc_service.api.serialized import Handler, parsing_bytes
from ofc_service.auth import AuthError, Credentials
from ofc_service.metrics import RpcMetrics

access_log = logging.getLogger("ofc.access")


MAX_REQUEST_ID_CHARS = 128
_CODES = {
    0: None,
    1: ConnectCode.CANCELED,
    2: ConnectCode.UNKNOWN,
    3: ConnectCode.INVALID_ARGUMENT,
    4: ConnectCode.DEADLINE_EXCEEDED,
    5: ConnectCode.NOT_FOUND,
    6: ConnectCode.ALREADY_EXISTS,
    7: ConnectCode.PERMISSION_DENIED,
    8: ConnectCode.RESOURCE_EXHAUSTED,
    9: ConnectCode.FAILED_PRECONDITION,
    10: ConnectCode.ABORTED,
    11: ConnectCode.OUT_OF_RANGE,
    12: ConnectCode.UNIMPLEMENTED,
    13: ConnectCode.INTERNAL,
    14: ConnectCode.UNAVAILABLE,
    15: ConnectCode.DATA_LOSS,
    16: ConnectCode.UNAUTHENTICATED,
}
_GRPC_NAMES = {code: name for name, code in (
    ("CANCELLED", ConnectCode.CANCELED), *((c.name, c) for c in ConnectCode if c.name != "CANCELED")
)}  # fmt: skip
_SERVER_ERRORS = frozenset((ConnectCode.INTERNAL, ConnectCode.UNKNOWN, ConnectCode.DATA_LOSS))


def snake_case(name: str) -> str:
    """The generated service's method name of an RPC.

    >>> snake_case("SettleHandsStream"), snake_case("GetHandHistory")
    ('settle_hands_stream', 'get_hand_history')
    """
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def protocol_of(content_type: str) -> str:
    """The ``protocol`` metric label of a request's content type.

    >>> [protocol_of(t) for t in ("application/json", "application/grpc-web+proto",
    ...                           "application/grpc")]
    ['connect', 'grpc-web', 'grpc']
    """
    if content_type.startswith("application/grpc-web"):
        return "grpc-web"
    return "grpc" if content_type.startswith("application/grpc") else "connect"


def connect_error(status: status_pb2.Status) -> ConnectError:
    """A ``google.rpc.Status`` as the Connect error that carries it: code, message, details."""
    details = [ErrorDetail(AnyDetail(type_url=d.type_url, value=d.value)) for d in status.details]
    return ConnectError(_CODES.get(status.code) or ConnectCode.UNKNOWN, status.message, details)


class _StrictJsonCodec:
    """Connect JSON as a strict reader and a compact writer.

    connectrpc's own JSON codec drops fields it does not know, so a mistyped field from curl
    would be silently ignored; here it is an error. Responses are written on one line
    (field names in lowerCamelCase, as the JSON mapping of protobuf gives them).
    """

    def name(self) -> str:
        return "json"

    def encode(self, message: Any) -> bytes:
        compact = json.dumps(json_format.MessageToDict(message), separators=(",", ":"),
                             ensure_ascii=False)  # fmt: skip
        return compact.encode()

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        # json_format.Parse's steps, with the shapes checked between its load and its read
        # (one load): UTF-8 only, duplicate keys refused, its errors' wording kept.
        message = message_class()
        try:
            loaded = json.loads(bytes(data).decode("utf-8"), object_pairs_hook=_unique_keys)
        except Exception as exc:  # not JSON, not UTF-8, nested too deep
            raise json_format.ParseError(f"Failed to load JSON: {exc}.") from exc
        check_json_shapes(loaded, message.DESCRIPTOR)
        try:
            json_format.ParseDict(loaded, message, ignore_unknown_fields=False)
        except json_format.ParseError as exc:
            field, text = located(loaded, message.DESCRIPTOR, exc)
            raise JsonShapeError(text, field) from exc
        except Exception as exc:
            raise json_format.ParseError(
                f"Failed to parse JSON: {type(exc).__name__}: {exc}."
            ) from exc
        return message


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's members, refusing a name given twice (protobuf's reader does too)."""
    members: dict[str, Any] = {}
    for name, value in pairs:
        if name in members:
            raise ValueError(f"duplicate key {name}")
        members[name] = value
    return members


class JsonShapeError(json_format.ParseError):
    """A JSON request that does not read as its message, with the path of the field at
    fault (proto names, list indexes): a value of the wrong kind, one protobuf's reader
    would take but should not, a field it does not know."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def _json_kind(value: object) -> str:
    kinds = {type(None): "null", bool: "a boolean", float: "a number with a fraction",
             str: "a string", list: "an array", dict: "an object"}  # fmt: skip
    return kinds.get(type(value), "a number")


def check_json_shapes(value: object, descriptor: Descriptor, path: str = "") -> None:
    """JsonShapeError for what protobuf's JSON reader accepts but should not: a request that
    is not a JSON object, an array or a string where a message is (it reads ``[]`` as an
    empty message), and a boolean or a fraction where an enum is (it reads ``true`` and
    ``1.5`` as the value 1). Everything else it checks itself; null is a field's default.

    >>> from ofcpoker.v1 import rules_service_pb2 as pb
    >>> check_json_shapes({"board": []}, pb.ValidateBoardRequest.DESCRIPTOR)
    Traceback (most recent call last):
    ...
    ofc_service.api.connect.JsonShapeError: board: a message is a JSON object, not an array
    >>> check_json_shapes({"cards": ["As"], "row": 1.5}, pb.EvaluateRowRequest.DESCRIPTOR)
    Traceback (most recent call last):
    ...
    ofc_service.api.connect.JsonShapeError: row: an enum is its value's name or number, not a number with a fraction
    """  # noqa: E501
    if not isinstance(value, dict):
        what = f"{path}: a message" if path else "a request"
        raise JsonShapeError(f"{what} is a JSON object, not {_json_kind(value)}", path)
    fields = _json_fields(descriptor)
    given: dict[str, str] = {}  # each field's name as given
    for name, item in value.items():
        field = fields.get(name)
        if field is None:  # unknown: protobuf's reader names it
            continue
        at = f"{path}.{field.name}" if path else field.name
        # under both its names, protobuf's reader keeps the last: what a proxy or a filter
        # read under one name would not be what is applied
        first = given.setdefault(field.name, name)
        if first != name:
            raise JsonShapeError(f"{at}: given twice, as {first!r} and {name!r}", at)
        if item is None:
            continue
        if not field.is_repeated:
            _check_json_value(item, field, at)
        elif isinstance(item, list):  # else protobuf's reader: "must be in []"
            for k, element in enumerate(item):
                _check_json_value(element, field, f"{at}[{k}]")


def _check_json_value(value: object, field: FieldDescriptor, at: str) -> None:
    # protobuf's reader takes a number in a string as Python's int() does: "٢", "３",
    # "1_000", "+5" and " 7" too, where JSON's numbers are ASCII digits
    if (
        isinstance(value, str)
        and field.type in _NUMBERED_TYPES
        and _DECIMAL.fullmatch(value) is None
        and _int_reads(value)
    ):
        message = f"{at}: a number in a string is ASCII digits, not {value[:24]!r}"
        raise JsonShapeError(message, at)
    if field.type == FieldDescriptor.TYPE_ENUM:
        # 1.0 is 1, as an integer field reads it
        whole = isinstance(value, float) and value.is_integer()
        if isinstance(value, bool) or not (whole or isinstance(value, int | str)):
            message = f"{at}: an enum is its value's name or number, not {_json_kind(value)}"
            raise JsonShapeError(message, at)
    elif field.type == FieldDescriptor.TYPE_BYTES and isinstance(value, str):
        # protobuf's reader skips what is not base64 (and "@@QUJD" reads as "ABC"): a
        # seed typed wrong would be another seed, silently
        if not is_json_base64(value):
            message = f"{at}: bytes are base64 (standard or URL-safe), not {value[:24]!r}"
            raise JsonShapeError(message, at)
    elif field.type == FieldDescriptor.TYPE_MESSAGE and value is not None:
        message_type = field.message_type
        assert message_type is not None
        if not message_type.full_name.startswith("google.protobuf."):  # their own forms
            check_json_shapes(value, message_type, at)


_NUMBERED_TYPES = frozenset({  # integers, and enums (a value's number)
    FieldDescriptor.TYPE_ENUM,
    FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_FIXED32, FieldDescriptor.TYPE_FIXED64, FieldDescriptor.TYPE_SFIXED32,
    FieldDescriptor.TYPE_SFIXED64,
})  # fmt: skip
_DECIMAL = re.compile(r"-?[0-9]+")


def _int_reads(text: str) -> bool:
    """Whether ``int()`` reads ``text`` as a number (then protobuf's JSON reader would)."""
    try:
        int(text)
    except ValueError:
        return False
    return True


_BASE64 = re.compile(r"([A-Za-z0-9+/_-]*)(={0,2})")


def is_json_base64(text: str) -> bool:
    """Whether ``text`` is bytes as protobuf's JSON gives them: base64 in the standard or the
    URL-safe alphabet, padded or not, lines broken or not (as MIME tools write it).

    >>> [is_json_base64(t) for t in ("QUJD", "QUI=", "QUI", "-_8=", "", "QU\\r\\nJD\\n")]
    [True, True, True, True, True, True]
    >>> [is_json_base64(t) for t in ("@@QUJD", "QU*JD", "Q", "QUI==", "QU=I")]
    [False, False, False, False, False]
    """
    text = "".join(text.split())  # whitespace: line breaks, which every decoder skips
    found = _BASE64.fullmatch(text)
    if found is None or len(found[1]) % 4 == 1:  # one character left over is no byte
        return False
    return not found[2] or len(text) % 4 == 0  # padding pads to a whole group


@functools.cache
def _json_fields(descriptor: Descriptor) -> dict[str, FieldDescriptor]:
    """A message's fields by each name JSON may give them (lowerCamelCase or as declared)."""
    return {n: f for f in descriptor.fields for n in (f.json_name, f.name)}


class _TolerantCodec:
    """A codec whose undecodable input is the client's mistake: MALFORMED_REQUEST, with the
    reason and the field named when the parser names one, as gRPC's interceptor answers it
    (connectrpc alone would send no details). A binary one refuses a number too wide for
    its 32-bit field as the gRPC port does (:mod:`.decode`)."""

    def __init__(self, codec: Codec[Any, Any], *, binary: bool = False) -> None:
        self._codec = codec
        self._binary = binary

    def name(self) -> str:
        return self._codec.name()

    def encode(self, message: Any) -> bytes:
        return self._codec.encode(message)

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        try:
            message = self._codec.decode(data, message_class)
        except Exception as exc:
            text = str(exc)
            if isinstance(exc, JsonShapeError):
                field = exc.field
            elif isinstance(exc, json_format.ParseError):
                field = json_error_field(text)
            else:
                field = ""
            raise malformed_request(text, field=field) from None
        if self._binary:
            try:
                decode.checked(message, data)
            except MalformedRequestError as exc:
                raise refusal(exc) from None
        return message


def malformed_request(why: str, *, field: str = "") -> ConnectError:
    """The Connect error of a request that does not decode: INVALID_ARGUMENT, reason
    MALFORMED_REQUEST (the field named when known), as the gRPC port answers it."""
    return refusal(MalformedRequestError(f"the request does not decode: {why}", field=field))


def refusal(error: Exception) -> ConnectError:
    """``error`` as the Connect error that carries its status and ErrorInfo (the error
    table's code and reason), counted by reason (``ofc_request_errors_total``) as a
    handler's error is: what the HTTP port refuses before a handler runs."""
    return connect_error(rich_status(reported(error, "the HTTP port")))


# The errors connectrpc raises itself (without details), by code: what each one is. Only
# the transport raises them (everything the handlers raise has its ErrorInfo already).
_TRANSPORT_ERRORS: dict[ConnectCode, Callable[[str], Exception]] = {
    # over the size limit: the body, an envelope's length, a message once decompressed
    ConnectCode.RESOURCE_EXHAUSTED: MessageTooLargeError,
    # a truncated envelope, invalid envelope flags, bytes that do not decompress, a GET
    # without its message or with base64 that is not
    ConnectCode.INVALID_ARGUMENT: lambda why: MalformedRequestError(
        f"the request does not decode: {why}"
    ),
    # a compression it does not speak (a unary call's message count is checked before)
    ConnectCode.UNIMPLEMENTED: UnsupportedCompressionError,
}
_refused: contextvars.ContextVar[ConnectError | None] = contextvars.ContextVar(
    "ofc_connect_refused", default=None
)


def refuse_before_reading(error: ConnectError) -> contextvars.Token[ConnectError | None]:
    """Have the current request refused with ``error`` as soon as the Connect application
    has read its headers (in the request's protocol: Connect's error JSON or end message,
    gRPC-Web's trailers). For what the HTTP port finds in the headers before connectrpc reads
    them (a deadline header that is not one). Returns the token to reset it with."""
    return _refused.set(error)


def end_refusal(token: contextvars.Token[ConnectError | None]) -> None:
    _refused.reset(token)


class _Call:
    """One request on the HTTP port from the moment its headers are read: its request id
    (answered in ``x-request-id`` whatever happens next), when it began, and whether its
    handler was reached (which then counts and logs it)."""

    __slots__ = ("begun", "deadline", "rid", "start")

    def __init__(self, rid: str, timeout_ms: float | None = None) -> None:
        self.rid = rid
        self.start = time.perf_counter()
        self.begun = False
        # when the caller's deadline (connect-timeout-ms, grpc-timeout) passes, if it set one
        self.deadline = None if timeout_ms is None else self.start + timeout_ms / 1000

    def past_deadline(self) -> bool:
        return self.deadline is not None and time.perf_counter() >= self.deadline


_current: contextvars.ContextVar[_Call | None] = contextvars.ContextVar(
    "ofc_connect_call", default=None
)


class TransportErrors:
    """A connectrpc metadata interceptor, run before the request is read: every call gets
    its ``x-request-id``; the refusal :func:`refuse_before_reading` set is raised; every
    error connectrpc raises itself (no details) is given its ErrorInfo reason
    (:data:`_TRANSPORT_ERRORS`), so that a client can tell each refusal by its reason; and a
    call refused before its handler ran (the headers, the body's size, envelopes or
    encoding) is counted and logged as one the handler ended is. One per Connect
    application: :func:`connect_service` enters the application's methods in it."""

    def __init__(self) -> None:
        self.methods: dict[tuple[str, str], _Method] = {}  # (service, method name)

    async def on_start(self, ctx: RequestContext[Any, Any]) -> _Call:
        call = _Call(request_id(ctx.request_headers), ctx.timeout_ms)
        ctx.response_headers[REQUEST_ID_KEY] = call.rid
        request_id_var.set(call.rid)
        _current.set(call)
        refused = _refused.get()
        if refused is not None:
            self._refused_before_handler(ctx, call, refused)
            raise refused
        return call

    async def on_end(
        self, call: _Call, ctx: RequestContext[Any, Any], error: Exception | None, /
    ) -> None:
        answered = error
        if isinstance(error, ConnectError) and not error.details:
            kind = _TRANSPORT_ERRORS.get(error.code)
            if kind is not None:
                answered = refusal(kind(error.message))
        if answered is not None and not call.begun:
            self._refused_before_handler(ctx, call, answered)
        if answered is not None and answered is not error:
            raise answered from None

    def _refused_before_handler(
        self, ctx: RequestContext[Any, Any], call: _Call, error: Exception
    ) -> None:
        method = self.methods.get((ctx.method.service_name, ctx.method.name))
        if method is None:
            return
        probe = method.probes[protocol_of(ctx.request_headers.get("content-type", ""))]
        probe.started.inc()
        connect = error if isinstance(error, ConnectError) else method.error(error)
        probe.end(call.start, _GRPC_NAMES[connect.code], call.rid, connect)


def codecs() -> list[Codec[Any, Any]]:
    """The codecs the HTTP port speaks: protobuf binary and strict, compact JSON, each
    answering bad input MALFORMED_REQUEST."""
    return [
        _TolerantCodec(google_protobuf_binary_codec(), binary=True),
        _TolerantCodec(_StrictJsonCodec()),
    ]


def request_id(headers: Mapping[str, str]) -> str:
    """The caller's ``x-request-id`` (1..128 printable ASCII), else a new one."""
    given = headers.get(REQUEST_ID_KEY, "")
    if 0 < len(given) <= MAX_REQUEST_ID_CHARS and given.isprintable() and given.isascii():
        return given
    return secrets.token_hex(8)


class _Probe(RpcMetrics):
    """The metrics and log fields of one method on one protocol."""

    __slots__ = ("method",)

    def __init__(self, method: MethodDescriptor, protocol: str) -> None:
        kind = {(False, False): "unary", (False, True): "server_stream",
                (True, False): "client_stream", (True, True): "bidi_stream"}[
            (method.client_streaming, method.server_streaming)]  # fmt: skip
        self.method = f"/{method.containing_service.full_name}/{method.name}"
        super().__init__(kind, method.containing_service.full_name, method.name, protocol)

    def end(self, start: float, code: str, request_id: str, error: Exception | None) -> None:
        elapsed = time.perf_counter() - start
        self.handled(code, elapsed)
        if error is None and not access_log.isEnabledFor(logging.DEBUG):
            return  # as on the gRPC port: an OK call is one line at debug level only
        level = logging.DEBUG if error is None else logging.WARNING
        if isinstance(error, ConnectError) and error.code in _SERVER_ERRORS:
            level = logging.ERROR
        fields = {"request_id": request_id, "method": self.method, "protocol": self.labels[3],
                  "grpc_type": self.labels[0], "code": code,
                  "duration_ms": round(elapsed * 1000, 3)}  # fmt: skip
        if error is not None:
            fields["details"] = str(error)
        access_log.log(level, "rpc", extra={"fields": fields})


class _Method:
    """One RPC's handler as connectrpc calls it, with everything that crosses every call."""

    def __init__(self, method: MethodDescriptor, handler: Handler) -> None:
        self.handler = handler
        self.name = method.name
        self.server_streaming = method.server_streaming
        self.probes = {protocol: _Probe(method, protocol) for protocol in
                       ("connect", "grpc-web", "grpc")}  # fmt: skip

    def begin(
        self, ctx: RequestContext[Any, Any]
    ) -> tuple[_Probe, str, Credentials | AuthError, float]:
        headers = ctx.request_headers
        probe = self.probes[protocol_of(headers.get("content-type", ""))]
        probe.started.inc()
        call = _current.get()
        assert call is not None, "a Connect application is served with its TransportErrors"
        call.begun = True
        try:
            creds: Credentials | AuthError = Credentials.from_metadata(headers.allitems())
        except AuthError as refused:  # raised by the call below: answered and counted as one
            creds = refused
        return probe, call.rid, creds, time.perf_counter()

    def invoke(self, request: Any, creds: Credentials | AuthError) -> Any:
        """The handler's call (a coroutine, or an async iterator for a server stream), or
        one that raises the credentials' refusal where the call's would be raised."""
        if not isinstance(creds, AuthError):
            return self.handler(request, creds)
        refusal = creds

        async def refused() -> Any:
            raise refusal

        async def refused_stream() -> AsyncIterator[Any]:
            raise refusal
            yield  # pragma: no cover  (an async generator)

        return refused_stream() if self.server_streaming else refused()

    def error(self, exc: BaseException) -> ConnectError:
        if isinstance(exc, ConnectError):
            return exc
        if isinstance(exc, Exception):
            return connect_error(rich_status(reported(exc, self.name)))
        # CancelledError or GeneratorExit: the caller's deadline passed (the client is told
        # DEADLINE_EXCEEDED, and so it is counted), or the client went away.
        call = _current.get()
        if call is not None and call.past_deadline():
            return ConnectError(ConnectCode.DEADLINE_EXCEEDED, "the call's deadline passed")
        return ConnectError(ConnectCode.CANCELED, "the call was cancelled")

    def finish(
        self, probe: _Probe, rid: str, start: float, exc: BaseException | None
    ) -> ConnectError | None:
        error = None if exc is None else self.error(exc)
        code = "OK" if error is None else _GRPC_NAMES[error.code]
        probe.end(start, code, rid, error)
        return error

    async def requests(self, probe: _Probe, requests: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for request in requests:
            probe.received.inc()
            yield request

    async def unary(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        probe, rid, creds, start = self.begin(ctx)
        probe.received.inc()
        return await self._one(probe, rid, start, self.invoke(request, creds))

    async def client_stream(
        self, requests: AsyncIterator[Any], ctx: RequestContext[Any, Any]
    ) -> Any:
        probe, rid, creds, start = self.begin(ctx)
        counted = self.requests(probe, requests)
        return await self._one(probe, rid, start, self.invoke(counted, creds))

    async def _one(self, probe: _Probe, rid: str, start: float, call: Any) -> Any:
        try:
            response = await call
            state = _current.get()
            if state is not None and state.past_deadline():
                # A handler that never waited (a batch settled in one go) is not cut short
                # by the deadline: answered as the gRPC port answers it, not with a late OK.
                raise ConnectError(ConnectCode.DEADLINE_EXCEEDED, "the call's deadline passed")
        except BaseException as exc:
            error = self.finish(probe, rid, start, exc)
            if isinstance(exc, Exception) and error is not None:
                raise error from None
            raise
        probe.sent.inc()
        self.finish(probe, rid, start, None)
        return response

    def server_stream(self, request: Any, ctx: RequestContext[Any, Any]) -> AsyncIterator[Any]:
        probe, rid, creds, start = self.begin(ctx)
        probe.received.inc()
        return self._many(probe, rid, start, self.invoke(request, creds))

    def bidi_stream(
        self, requests: AsyncIterator[Any], ctx: RequestContext[Any, Any]
    ) -> AsyncIterator[Any]:
        probe, rid, creds, start = self.begin(ctx)
        return self._many(probe, rid, start, self.invoke(self.requests(probe, requests), creds))

    async def _many(
        self, probe: _Probe, rid: str, start: float, responses: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        try:
            async for response in responses:
                probe.sent.inc()
                yield response
        except BaseException as exc:
            error = self.finish(probe, rid, start, exc)
            if isinstance(exc, Exception) and error is not None:
                raise error from None
            raise
        self.finish(probe, rid, start, None)

    def adapted(self, method: MethodDescriptor) -> Callable[..., Any]:
        return {
            (False, False): self.unary,
            (True, False): self.client_stream,
            (False, True): self.server_stream,
            (True, True): self.bidi_stream,
        }[(method.client_streaming, method.server_streaming)]


def connect_service(
    handlers: object, service: ServiceDescriptor, transport: TransportErrors
) -> Any:
    """The service object a generated ``<Service>ASGIApplication`` accepts: each RPC of
    ``service`` is ``handlers``' method of the same name, adapted (a response the handler
    gives serialised is parsed first: the codecs encode messages). ``transport``: the
    application's interceptor, which counts what is refused before a method runs."""
    methods = {m.name: _Method(m, parsing_bytes(m, getattr(handlers, m.name)))
               for m in service.methods}  # fmt: skip
    transport.methods.update({(service.full_name, name): m for name, m in methods.items()})
    return SimpleNamespace(**{
        snake_case(m.name): methods[m.name].adapted(m) for m in service.methods
    })  # fmt: skip


__all__ = [
    "TransportErrors",
    "codecs",
    "connect_error",
    "connect_service",
    "end_refusal",
    "json_error_field",
    "malformed_request",
    "protocol_of",
    "refusal",
    "refuse_before_reading",
    "snake_case",
]
