"""The retry-window audit over the HTTP port: Connect JSON, Connect binary, gRPC-Web and gRPC-Web
text (base64).

The HTTP port serves the same handlers as the gRPC port, through another adapter: its own
credentials from headers, its own error encoding (Connect's error JSON with its details in
base64, gRPC-Web's trailers), its own streams. Here the whole life of a seat of
tests/e2e/test_table_retry_window.py is played over each of the three protocols (one
replica on the in-memory store, two on one Redis): every request retried by its sender and
replayed under every other credential (each must get exactly what its own new request
would), every watch resumed from the log kept, every answer checked against what its
receiver may know; and on top of that every byte that came back (status line, headers,
body, trailers, the error details decoded) is searched for a seed not yet revealed, raw,
in hex and in base64 (Connect JSON writes bytes fields in base64), and every error detail
for a card its receiver may not know.

Then what arrives in headers: no, wrong and another seat's or table's credentials are
refused with the codes and ErrorInfo reasons a gRPC client gets for the same call; and what
arrives in the body: oversized, malformed, unknown fields, the wrong content type, a
compressed message that names no compression, headers that are not UTF-8, gRPC on HTTP/1.1:
each a clear client error (never INTERNAL, UNKNOWN or an HTTP 5xx), and the table unchanged.
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import gzip
import http.client
import itertools
import json
import socket
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import h2.config
import h2.connection
import h2.events
import pytest
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2
from ofc_service.server.background import BackgroundServer
from ofc_service.server.config import ServerConfig
from ofcpoker.v1 import table_service_pb2 as pb
from ofcpoker.v1.table_service_pb2_grpc import TableServiceStub

from tests.conftest import RedisServer
from tests.connect.http_stub import (
    PROTOCOLS,
    STREAM_TYPES,
    UNARY_TYPES,
    Exchange,
    HttpRpcError,
    HttpStub,
    connect_status,
    envelope,
    unpadded_b64decode,
)
from tests.e2e.lifecycle_model import (
    OPERATOR,
    Cluster,
    Metadata,
    open_cluster,
    wire_status,
)
from tests.e2e.tablekit import API_KEY, RawWatch, wait_until
from tests.e2e.test_table_lifecycles import cards_of
from tests.e2e.test_table_retry_window import Attack, fantasyland_face_down, whole_life
from tests.e2e.test_table_security import CARD_CODE, TABLE_ID

TABLE_SERVICE = "/ofcpoker.v1.TableService"
LIMIT = 16 * 1024  # the message size limit of the server that gets the bad requests
TABLES = itertools.count()


@pytest.fixture(scope="module", params=["memory", "redis"])
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """One replica on the in-memory store, or two on one Redis; both keep two hands' log
    and serve their HTTP port."""
    if request.param == "memory":
        with open_cluster(None, 1, event_log_hands=2, http=True) as one:
            yield one
    else:
        redis: RedisServer = request.getfixturevalue("redis_server")
        with open_cluster(redis, 2, event_log_hands=2, http=True) as two:
            yield two


def seed_forms(seed: bytes) -> list[bytes]:
    """Every way a seed may be written on the wire: raw, hex, base64 (both alphabets, with
    and without padding)."""
    b64 = base64.b64encode(seed)
    url = base64.urlsafe_b64encode(seed)
    return [seed, seed.hex().encode(), seed.hex().upper().encode(), b64, url,
            b64.rstrip(b"="), url.rstrip(b"=")]  # fmt: skip


def leaked_seeds(exchange: Exchange, secrets: list[bytes]) -> list[str]:
    """The secret seeds (hex) found anywhere in what came back in ``exchange``."""
    payloads = exchange.payloads()
    return [
        s.hex() for s in secrets if any(f in p for f in seed_forms(s) for p in payloads)
    ]  # fmt: skip


def detail_texts(error: HttpRpcError) -> list[str]:
    """Every text an error's details carry: ErrorInfo's reason and metadata, BadRequest's
    fields and descriptions."""
    texts = []
    for detail in error.status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            texts += [info.reason, *info.metadata.values()]
        elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            texts += [t for v in bad.field_violations for t in (v.field, v.description)]
    return texts


class WireAttack(Attack):
    """:class:`Attack` over the HTTP port, and every byte that came back searched."""

    def __init__(self, cluster: Cluster, protocol: str, **table: Any) -> None:
        # each replica's stub speaks ``protocol`` on its HTTP port (the same calls as gRPC's)
        self.http = [HttpStub(bg.http_url, protocol) for bg in cluster.servers]
        stubs: list[Any] = list(self.http)
        super().__init__(dataclasses.replace(cluster, stubs=stubs), **table)
        self.scanned: set[int] = set()

    def scan(self) -> None:
        """Every exchange completed since the last scan holds no seed that is secret now
        (a seed secret now was secret when it was sent)."""
        model = self.t.model
        secrets = model.secret_seeds(model.version)
        for stub in self.http:
            for exchange in list(stub.exchanges):
                if exchange.done and id(exchange) not in self.scanned:
                    self.scanned.add(id(exchange))
                    leaked = leaked_seeds(exchange, secrets)
                    assert not leaked, f"{exchange.method} to {exchange.metadata}: {leaked}"

    def send(self, *args: Any, **kwargs: Any) -> Any:
        response = super().send(*args, **kwargs)
        self.scan()
        return response

    def unchanged(self, what: str) -> None:
        super().unchanged(what)
        self.scan()

    def check_error(self, error: grpc.RpcError, md: Metadata, request: Any, what: str) -> None:
        super().check_error(error, md, request, what)
        assert isinstance(error, HttpRpcError), what
        model = self.t.model
        named = set(CARD_CODE.findall(TABLE_ID.sub("", " ".join(detail_texts(error)))))
        known = {str(c) for c in model.may_know(self.audience(md), model.version)}
        assert named <= known | {str(c) for c in cards_of(request)}, (what, error.status)

    def attack(self) -> None:
        super().attack()
        self.scan()
        assert {id(e) for s in self.http for e in s.exchanges} <= self.scanned


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_no_retry_resume_or_rejoin_over_http_tells_a_seat_what_it_may_not_know(
    cluster: Cluster, protocol: str
) -> None:
    whole_life(WireAttack(cluster, protocol))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_fantasyland_set_stays_face_down_over_http(cluster: Cluster, protocol: str) -> None:
    fantasyland_face_down(lambda **table: WireAttack(cluster, protocol, **table))


def test_the_scan_finds_a_seed_in_every_form_and_a_card_in_the_details() -> None:
    """The searches above can fail: a seed written raw, in hex, in base64 in a JSON body,
    inside a base64 error detail or a ``-bin`` trailer is found."""
    seed = bytes(range(32))
    inner = status_pb2.Status(code=3, message="x")
    inner.details.add(type_url="type.googleapis.com/x", value=b"\x0a\x20" + seed)
    detail = base64.b64encode(inner.details[0].value).decode().rstrip("=")
    cases = [
        Exchange("M", (), b"", body=b'{"serverSeed":"' + base64.b64encode(seed) + b'"}'),
        Exchange("M", (), b"", body=b"\x0a\x20" + seed),
        Exchange("M", (), b"", headers=[("x", seed.hex().upper())]),
        Exchange("M", (), b"", error=json.dumps({"details": [{"value": detail}]}).encode()),
        Exchange("M", (), b"", trailers=[("grpc-status-details-bin",
                                          base64.b64encode(inner.SerializeToString()).decode())]),
    ]  # fmt: skip
    for exchange in cases:
        assert leaked_seeds(exchange, [seed]) == [seed.hex()], exchange
    assert leaked_seeds(Exchange("M", (), b"", body=b"nothing"), [seed]) == []
    error = HttpRpcError(status_pb2.Status(code=3, message="m"))
    bad = error_details_pb2.BadRequest()
    bad.field_violations.add(field="placements[0]", description="Kd is not yours")
    error.status.details.add().Pack(bad)
    assert CARD_CODE.findall(" ".join(detail_texts(error))) == ["Kd"]


# --- credentials in headers ----------------------------------------------------------------------
@dataclasses.dataclass
class Seated:
    """A table with two players seated and a hand in play, over gRPC and over HTTP."""

    grpc: Any
    http_url: str
    table_id: str
    tokens: list[str]
    foreign_token: str = ""  # a seat token of another table

    def version(self) -> int:
        got = self.grpc.GetTable(pb.GetTableRequest(table_id=self.table_id), metadata=OPERATOR)
        return int(got.table.version)


def seat_two(stub: Any, http_url: str, foreign_token: str = "") -> Seated:
    """A new table on ``stub``'s server, two players seated and the first hand started."""
    created = stub.CreateTable(
        pb.CreateTableRequest(seats=2, request_id=f"audit-{next(TABLES)}"), metadata=OPERATOR
    )
    tokens = []
    for seat in range(2):
        joined = stub.JoinSeat(pb.JoinSeatRequest(
            table_id=created.table_id, seat=seat, player_id=f"p{seat}",
            expected_version=seat + 1, request_id=f"{created.table_id}-{seat}",
        ))  # fmt: skip
        tokens.append(joined.seat_token)
    stub.StartHand(
        pb.StartHandRequest(table_id=created.table_id, expected_version=3, request_id="s"),
        metadata=OPERATOR,
    )
    return Seated(stub, http_url, created.table_id, tokens, foreign_token)


@pytest.fixture(scope="module")
def seated(cluster: Cluster) -> Seated:
    return seat_two(cluster.stubs[0], cluster.servers[0].http_url, cluster.foreign_token)


def credential_cases(t: Seated) -> list[tuple[str, Metadata, grpc.StatusCode]]:
    """(what, headers, the code a move of seat 0 gets) for every wrong credential."""
    made_up = f"st_{t.table_id}.{'A' * 32}"
    return [
        ("no credentials", (), grpc.StatusCode.UNAUTHENTICATED),
        ("a made-up seat token", (("x-ofc-seat-token", made_up),), grpc.StatusCode.UNAUTHENTICATED),
        ("a made-up bearer token", (("authorization", f"Bearer {made_up}"),),
         grpc.StatusCode.UNAUTHENTICATED),
        ("another seat's token", (("x-ofc-seat-token", t.tokens[1]),),
         grpc.StatusCode.PERMISSION_DENIED),
        ("another seat's bearer token", (("authorization", f"Bearer {t.tokens[1]}"),),
         grpc.StatusCode.PERMISSION_DENIED),
        ("another table's token", (("x-ofc-seat-token", t.foreign_token),),
         grpc.StatusCode.PERMISSION_DENIED),
        ("a wrong API key", (("x-ofc-api-key", "not-the-key"),), grpc.StatusCode.UNAUTHENTICATED),
        ("a wrong bearer API key", (("authorization", "Bearer not-the-key"),),
         grpc.StatusCode.UNAUTHENTICATED),
        ("a wrong API key beside the seat's own token",
         (("x-ofc-api-key", "not-the-key"), ("x-ofc-seat-token", t.tokens[0])),
         grpc.StatusCode.UNAUTHENTICATED),
        # Two of a kind that differ: never the last (or first) header's, whatever the order.
        ("the seat's own token, then another seat's",
         (("x-ofc-seat-token", t.tokens[0]), ("x-ofc-seat-token", t.tokens[1])),
         grpc.StatusCode.UNAUTHENTICATED),
        ("another seat's token, then the seat's own as a bearer token",
         (("x-ofc-seat-token", t.tokens[1]), ("authorization", f"Bearer {t.tokens[0]}")),
         grpc.StatusCode.UNAUTHENTICATED),
        ("a wrong API key, then the right one",
         (("x-ofc-api-key", "not-the-key"), ("x-ofc-api-key", API_KEY)),
         grpc.StatusCode.UNAUTHENTICATED),
    ]  # fmt: skip


def grpc_answer(t: Seated, method: str, request: Any, md: Metadata) -> Any:
    """The gRPC port's answer: the response, a refusal's (code, reason, field), or for a
    Watch "open" once its first message came."""
    try:
        if method == "Watch":
            call = t.grpc.Watch(request, metadata=md, timeout=15)
            next(call)
            call.cancel()
            return "open"
        return getattr(t.grpc, method)(request, metadata=md, timeout=15)
    except grpc.RpcError as error:
        return wire_status(error)


def http_answer(stub: HttpStub, method: str, request: Any, md: Metadata) -> Any:
    """The same over the HTTP port."""
    try:
        if method == "Watch":
            call = stub.Watch(request, metadata=md)
            next(iter(call))
            call.cancel()
            return "open"
        return getattr(stub, method)(request, metadata=md)
    except HttpRpcError as error:
        return wire_status(error)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_wrong_credentials_in_headers_get_what_grpc_gets(seated: Seated, protocol: str) -> None:
    """Each wrong credential is refused over HTTP with the code and ErrorInfo reason the
    gRPC port gives the same call (in Connect's error JSON, in gRPC-Web's trailers), and
    nothing changes."""
    t = seated
    version = t.version()
    stub = HttpStub(t.http_url, protocol)
    move = pb.PlaceCardsRequest(table_id=t.table_id, seat=0, expected_version=version,
                                request_id="audit-headers-move")  # fmt: skip
    leave = pb.LeaveSeatRequest(table_id=t.table_id, seat=0, expected_version=version,
                                request_id="audit-headers-leave")  # fmt: skip
    start = pb.StartHandRequest(table_id=t.table_id, expected_version=version,
                                request_id="audit-headers-start")  # fmt: skip
    watch = pb.WatchRequest(table_id=t.table_id, as_seat=0)
    for what, md, code in credential_cases(t):
        for method, request in (("PlaceCards", move), ("LeaveSeat", leave),
                                ("StartHand", start), ("Watch", watch)):  # fmt: skip
            expected = grpc_answer(t, method, request, md)
            got = http_answer(stub, method, request, md)
            assert got == expected, (what, method)
            if method == "Watch":  # a spectator's watch is open to anyone (as_seat aside)
                continue
            assert isinstance(got, tuple), (what, method, "was not refused")
            if method in ("PlaceCards", "LeaveSeat"):  # a seat's own move: its own token only
                assert got[:2] == (code, code.name), (what, method, got)
        assert t.version() == version, f"{what} changed the table"
    for exchange in stub.exchanges:  # every refusal carried its ErrorInfo on the wire
        if exchange.method == "Watch" and not exchange.error and not exchange.trailers:
            continue  # open, then cancelled
        if protocol.startswith("grpc-web"):
            assert "grpc-status-details-bin" in dict(exchange.trailers), exchange
        else:
            error = json.loads(exchange.error)
            assert any(d["type"] == "google.rpc.ErrorInfo" for d in error["details"]), error


# --- bad requests ------------------------------------------------------------------------------
def raw_post(
    url: str, path: str, body: bytes, headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    """One POST with exactly these bytes (header values sent as latin-1)."""
    base = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(base.hostname or "", base.port, timeout=15)
    try:
        conn.putrequest("POST", path, skip_accept_encoding=True)
        for key, value in {**headers, "content-length": str(len(body))}.items():
            conn.putheader(key, value.encode("latin-1"))
        conn.endheaders(body)
        answer = conn.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        conn.close()


def outcome(status: int, headers: dict[str, str], body: bytes) -> tuple[int, str, str]:
    """(HTTP status, the gRPC code name, the ErrorInfo reason) of an answer in any of the
    three protocols ("" where there is none: an HTTP-level refusal)."""
    ctype = headers.get("content-type", "")
    found: dict[str, Any] = {}
    if ctype.startswith("application/grpc"):  # gRPC-Web: a trailers frame, or trailers-only
        text = ctype.startswith("application/grpc-web-text")
        exchange = Exchange("", (), b"", status, list(headers.items()), body, text=text)
        HttpStub("http://x:1", "grpc-web").frames(exchange)
        trailers = dict(exchange.trailers)
        code = grpc.StatusCode.OK
        for c in grpc.StatusCode:
            if c.value[0] == int(trailers.get("grpc-status", "0")):
                code = c
        reason = ""
        if "grpc-status-details-bin" in trailers:
            raw = unpadded_b64decode(trailers["grpc-status-details-bin"])
            reason = wire_status(HttpRpcError(status_pb2.Status.FromString(raw)))[1]
        return status, code.name, reason
    if ctype.startswith("application/connect"):  # a Connect stream: its end message
        size = int.from_bytes(body[1:5], "big")
        while body and not body[0] & 0x02:
            body = body[5 + size :]
            size = int.from_bytes(body[1:5], "big")
        found = json.loads(body[5 : 5 + size]).get("error", {})
    elif body and ctype.startswith("application/json") and status != 200:
        found = json.loads(body)
    if not found:
        return status, "OK" if status == 200 else "", ""
    error = HttpRpcError(connect_status(found))
    reason = wire_status(error)[1] if error.status.details else ""
    return status, error.code().name, reason


def bad_requests(
    t: Seated, limit: int
) -> list[tuple[str, str, bytes, dict[str, str], tuple[int, str, str]]]:
    """(what, method, body, headers, expected outcome) of requests the port must refuse."""
    # a move with a stale version: a request that reaches the table is refused ABORTED
    move = pb.PlaceCardsRequest(table_id=t.table_id, seat=0, expected_version=t.version() + 1,
                                request_id="audit-bad")  # fmt: skip
    as_json = json.dumps(json_format.MessageToDict(move)).encode()
    as_proto = move.SerializeToString()
    token = {"x-ofc-seat-token": t.tokens[0]}
    cj, cp, gw, gt = ({"content-type": STREAM_TYPES[p], **token} for p in PROTOCOLS)
    gw["x-grpc-web"] = gt["x-grpc-web"] = "1"
    uj = {"content-type": UNARY_TYPES["connect-json"], **token}
    up = {"content-type": UNARY_TYPES["connect-proto"], **token}
    padded = as_json[:-1] + b" " * limit + b"}"
    huge = pb.PlaceCardsRequest()
    huge.CopyFrom(move)
    huge.request_id = "x" * limit
    malformed = ("INVALID_ARGUMENT", "MALFORMED_REQUEST")
    too_large = ("RESOURCE_EXHAUSTED", "MESSAGE_TOO_LARGE")
    bad_timeout = ("INVALID_ARGUMENT", "INVALID_TIMEOUT")
    not_one = ("UNIMPLEMENTED", "WRONG_MESSAGE_COUNT")
    watch = envelope(json.dumps({"tableId": t.table_id}).encode())
    b64 = base64.b64encode
    compressed = b"\x01" + envelope(as_proto)[1:]  # the compressed flag, and no compression
    return [
        ("an oversized JSON body", "PlaceCards", padded, uj, (429, *too_large)),
        ("an oversized binary body", "PlaceCards", huge.SerializeToString(), up, (429, *too_large)),
        ("an oversized gzip body", "PlaceCards", gzip.compress(padded),
         {**uj, "content-encoding": "gzip"}, (429, *too_large)),
        ("an oversized Connect stream message", "Watch", envelope(padded), cj, (200, *too_large)),
        ("an oversized gRPC-Web message", "PlaceCards", envelope(huge.SerializeToString()), gw,
         (200, *too_large)),
        ("malformed JSON", "PlaceCards", as_json[:-2], uj, (400, *malformed)),
        ("JSON that is not an object", "PlaceCards", b"[1, 2]", uj, (400, *malformed)),
        ("JSON null", "PlaceCards", b"null", uj, (400, *malformed)),
        ("JSON that is not UTF-8", "PlaceCards", as_json[:-1] + b', "requestId": "\xff"}', uj,
         (400, *malformed)),
        ("an unknown JSON field", "PlaceCards", as_json[:-1] + b', "seet": 1}', uj,
         (400, *malformed)),
        ("a wrong-typed JSON field", "PlaceCards", as_json[:-1] + b', "seat": "zero"}', uj,
         (400, *malformed)),
        # int() reads other scripts' digits, and protobuf's reader with it: JSON's are ASCII
        ("a number in a string in other digits", "PlaceCards",
         json.dumps({**json.loads(as_json), "seat": "\u0660"}).encode(), uj, (400, *malformed)),
        ("a number in a string with an underscore", "PlaceCards",
         json.dumps({**json.loads(as_json), "seat": "0_0"}).encode(), uj, (400, *malformed)),
        # protobuf's reader keeps the last of a field's two names: a proxy reads the other
        ("a JSON field under both its names", "PlaceCards",
         as_json[:-1] + b', "table_id": "' + t.table_id.encode() + b'"}', uj, (400, *malformed)),
        ("an unknown field in a Connect stream", "Watch",
         envelope(json.dumps({"tableId": t.table_id, "x": 1}).encode()), cj, (200, *malformed)),
        # binary protobuf skips fields it does not know, over gRPC as here: the move is read
        ("an unknown binary field", "PlaceCards", as_proto + b"\xf8\x3f\x01", up,
         (409, "ABORTED", "STALE_VERSION")),
        ("corrupt protobuf", "PlaceCards", b"\xff\xff\xff", up, (400, *malformed)),
        ("corrupt protobuf over gRPC-Web", "PlaceCards", envelope(b"\xff\xff\xff"), gw,
         (200, *malformed)),
        ("a compressed Connect message naming no compression", "Watch", compressed, cj,
         (200, *malformed)),
        ("a compressed binary Connect message naming no compression", "Watch", compressed, cp,
         (200, *malformed)),
        ("a compressed gRPC-Web message naming no compression", "PlaceCards", compressed, gw,
         (200, *malformed)),
        ("a truncated gRPC-Web message", "PlaceCards", envelope(as_proto)[:-3], gw,
         (200, *malformed)),
        ("a truncated gRPC-Web envelope", "PlaceCards", envelope(as_proto)[:3], gw,
         (200, *malformed)),
        ("a truncated Connect stream message", "Watch", watch[:-2], cj, (200, *malformed)),
        ("invalid envelope flags", "Watch", b"\x04" + watch[1:], cj, (200, *malformed)),
        ("gzip that is not gzip", "PlaceCards", b"\x01" + envelope(b"not gzip")[1:],
         {**gw, "grpc-encoding": "gzip"}, (200, *malformed)),
        ("a compression the server does not speak", "PlaceCards", envelope(as_proto),
         {**gw, "grpc-encoding": "snappy"}, (200, "UNIMPLEMENTED", "UNSUPPORTED_COMPRESSION")),
        ("two messages on a unary gRPC-Web call", "PlaceCards", envelope(as_proto) * 2, gw,
         (200, *not_one)),
        ("no message on a unary gRPC-Web call", "PlaceCards", b"", gw, (200, *not_one)),
        ("two messages opening a Connect stream", "Watch", watch * 2, cj, (200, *not_one)),
        # media types are read without case (RFC 9110): these go through the same checks
        ("a compressed Connect message naming no compression, its media type in capitals",
         "Watch", compressed, {**cj, "content-type": "Application/Connect+Json"},
         (200, *malformed)),
        ("two messages opening a Connect stream, its media type in capitals", "Watch",
         watch * 2, {**cj, "content-type": "APPLICATION/CONNECT+JSON"}, (200, *not_one)),
        ("a compressed gRPC-Web message naming no compression, its media type in capitals",
         "PlaceCards", compressed, {**gw, "content-type": "Application/GRPC-Web+Proto"},
         (200, *malformed)),
        ("no message opening a Connect stream", "Watch", b"", cj, (200, *not_one)),
        ("a connect-timeout-ms that is not a number", "PlaceCards", as_json,
         {**uj, "connect-timeout-ms": "soon"}, (400, *bad_timeout)),
        ("a connect-timeout-ms of 11 digits", "Watch", watch,
         {**cj, "connect-timeout-ms": "1" * 11}, (200, *bad_timeout)),
        # A deadline of 0 would race the call: refused or applied by chance.
        ("a connect-timeout-ms of 0", "PlaceCards", as_json,
         {**uj, "connect-timeout-ms": "0"}, (400, *bad_timeout)),
        ("a grpc-timeout of 0", "PlaceCards", envelope(as_proto),
         {**gw, "grpc-timeout": "0m"}, (200, *bad_timeout)),
        ("a grpc-timeout without its unit", "PlaceCards", envelope(as_proto),
         {**gw, "grpc-timeout": "100"}, (200, *bad_timeout)),
        ("a grpc-timeout of 9 digits", "Watch", envelope(pb.WatchRequest(
            table_id=t.table_id).SerializeToString()), {**gw, "grpc-timeout": "1" * 9 + "m"},
         (200, *bad_timeout)),
        ("a Connect protocol version 2", "PlaceCards", as_json,
         {**uj, "connect-protocol-version": "2"}, (400, *malformed)),
        # gRPC-Web text: base64 of the same frames, the same limits and errors
        ("a move over gRPC-Web text", "PlaceCards", b64(envelope(as_proto)), gt,
         (200, "ABORTED", "STALE_VERSION")),
        ("a move in padded pieces over gRPC-Web text", "PlaceCards",
         b64(envelope(as_proto)[:4]) + b64(envelope(as_proto)[4:]), gt,
         (200, "ABORTED", "STALE_VERSION")),
        ("gRPC-Web text that is not base64", "PlaceCards", b"not base64!", gt, (200, *malformed)),
        ("gRPC-Web text cut mid-quantum", "PlaceCards", b64(envelope(as_proto))[:-1], gt,
         (200, *malformed)),
        ("an oversized gRPC-Web text message", "PlaceCards",
         b64(envelope(huge.SerializeToString())), gt, (200, *too_large)),
        ("a truncated gRPC-Web text message", "PlaceCards", b64(envelope(as_proto)[:-3]), gt,
         (200, *malformed)),
        ("two messages over gRPC-Web text", "PlaceCards", b64(envelope(as_proto) * 2), gt,
         (200, *not_one)),
        ("text/plain", "PlaceCards", as_json, {**uj, "content-type": "text/plain"}, (415, "", "")),
        ("no content type", "PlaceCards", as_json,
         {k: v for k, v in uj.items() if k != "content-type"}, (415, "", "")),
        ("application/xml", "PlaceCards", as_json, {**uj, "content-type": "application/xml"},
         (415, "", "")),
        ("a stream's content type on a unary call", "PlaceCards", envelope(as_json),
         {**uj, "content-type": "application/connect+json"}, (415, "", "")),
        ("a seat token that is not UTF-8", "PlaceCards", as_json,
         {**uj, "x-ofc-seat-token": f"st_{t.table_id}.\xff\xfe"}, (401, "UNAUTHENTICATED",
                                                                   "UNAUTHENTICATED")),
        ("an API key that is not UTF-8 over gRPC-Web", "PlaceCards", envelope(as_proto),
         {**gw, "x-ofc-api-key": "k\xe9y"}, (200, "UNAUTHENTICATED", "UNAUTHENTICATED")),
        ("a request id header that is not UTF-8", "PlaceCards", as_json,
         {**uj, "x-request-id": "r\xff"}, (409, "ABORTED", "STALE_VERSION")),
        ("gRPC over HTTP/1.1", "PlaceCards", envelope(as_proto),
         {"content-type": "application/grpc", **token}, (200, "UNIMPLEMENTED", "")),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def small() -> Iterator[Seated]:
    """A table on a server that takes messages up to :data:`LIMIT` bytes (a body over it is
    refused before the server has read it all: small enough for a client to send it whole)."""
    config = ServerConfig(
        listen="127.0.0.1:0", metrics_listen="", http_listen="127.0.0.1:0", grace_seconds=1,
        api_keys=API_KEY, max_message_bytes=LIMIT,
    )  # fmt: skip
    with BackgroundServer(config) as server, grpc.insecure_channel(server.address) as channel:
        yield seat_two(TableServiceStub(channel), server.http_url)


def test_bad_requests_get_client_errors_and_change_nothing(small: Seated) -> None:
    """Each bad request is refused with its code (and MALFORMED_REQUEST where the body does
    not decode), in the protocol it came in; none is INTERNAL, UNKNOWN or an HTTP 5xx, and
    the table is as it was."""
    t = small
    version = t.version()
    wrong = []
    for what, method, body, headers, expected in bad_requests(t, LIMIT):
        got = outcome(*raw_post(t.http_url, f"{TABLE_SERVICE}/{method}", body, headers))
        if got != expected:
            wrong.append((what, got, expected))
        assert t.version() == version, f"{what} changed the table"
    assert not wrong, "\n".join(map(str, wrong))


@pytest.mark.parametrize("kind", ["connect-json", "connect-proto", "grpc-web"])
def test_an_oversized_body_over_http1_is_answered_not_cut_off(small: Seated, kind: str) -> None:
    """A body far over the limit, and over what the kernel buffers, over HTTP/1.1: the call
    is refused (MESSAGE_TOO_LARGE) before the body is read, and its answer reaches a client
    that sends the whole body before it reads (curl, http.client, connect-node). The server
    used to close the connection at once, unread data and all: the client's send then
    failed (EPIPE, a reset) before it could read the answer, on about half the calls."""
    t = small
    version = t.version()
    request = pb.PlaceCardsRequest(table_id=t.table_id, request_id="x" * (512 * LIMIT))
    body = request.SerializeToString()  # 8 MiB
    headers = {
        "connect-json": {"content-type": "application/json"},
        "connect-proto": {"content-type": "application/proto"},
        "grpc-web": {"content-type": "application/grpc-web+proto", "x-grpc-web": "1"},
    }
    if kind == "connect-json":
        body = json.dumps(json_format.MessageToDict(request)).encode()
    elif kind == "grpc-web":
        body = envelope(body)
    expected = (200 if kind == "grpc-web" else 429, "RESOURCE_EXHAUSTED", "MESSAGE_TOO_LARGE")
    for _ in range(4):
        got = outcome(
            *raw_post(
                t.http_url,
                f"{TABLE_SERVICE}/PlaceCards",
                body,
                {**headers[kind], "x-ofc-seat-token": t.tokens[0]},
            )
        )
        assert got == expected
    assert t.version() == version


def h2c_post(url: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[str, str]:
    """One gRPC call over HTTP/2 without TLS (prior knowledge), these exact bytes as its
    body: (the gRPC code name, the ErrorInfo reason or "")."""
    base = urllib.parse.urlsplit(url)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    answer: dict[str, str] = {}
    with socket.create_connection((base.hostname or "", base.port or 80), timeout=15) as sock:
        conn.initiate_connection()
        stream = conn.get_next_available_stream_id()
        conn.send_headers(stream, [(":method", "POST"), (":scheme", "http"),
                                   (":authority", base.netloc), (":path", path),
                                   ("te", "trailers"), *headers.items()])  # fmt: skip
        size = conn.max_outbound_frame_size  # the bodies here fit the first flow window
        for at in range(0, len(body), size):
            conn.send_data(stream, body[at : at + size])
        conn.end_stream(stream)
        sock.sendall(conn.data_to_send())
        ended = False
        while not ended:
            data = sock.recv(65536)
            assert data, "the server closed the connection unanswered"
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived | h2.events.TrailersReceived):
                    answer.update((k.decode(), v.decode()) for k, v in event.headers)
                elif isinstance(event, h2.events.DataReceived):
                    conn.acknowledge_received_data(event.flow_controlled_length, stream)
                elif isinstance(event, h2.events.StreamReset):
                    raise AssertionError(f"the stream was reset: {event}")
                ended = ended or isinstance(event, h2.events.StreamEnded)
            sock.sendall(conn.data_to_send())
    code = next(c.name for c in grpc.StatusCode if c.value[0] == int(answer["grpc-status"]))
    reason = ""
    if "grpc-status-details-bin" in answer:
        raw = unpadded_b64decode(answer["grpc-status-details-bin"])
        reason = wire_status(HttpRpcError(status_pb2.Status.FromString(raw)))[1]
    return code, reason


def test_bad_grpc_requests_over_http2_on_the_http_port_get_what_grpc_web_gets(
    small: Seated,
) -> None:
    """gRPC itself (``application/grpc`` over h2c) on the HTTP port: each bad request is
    refused with the code and reason its gRPC-Web twin gets, and the table is as it was."""
    t = small
    version = t.version()
    move = pb.PlaceCardsRequest(table_id=t.table_id, seat=0, expected_version=version + 1,
                                request_id="audit-h2c").SerializeToString()  # fmt: skip
    headers = {"content-type": "application/grpc", "x-ofc-seat-token": t.tokens[0]}
    malformed = ("INVALID_ARGUMENT", "MALFORMED_REQUEST")
    bad_timeout = ("INVALID_ARGUMENT", "INVALID_TIMEOUT")
    not_one = ("UNIMPLEMENTED", "WRONG_MESSAGE_COUNT")
    huge = pb.PlaceCardsRequest(table_id=t.table_id, request_id="x" * LIMIT).SerializeToString()
    cases = [
        ("a move", envelope(move), {}, ("ABORTED", "STALE_VERSION")),
        ("a compressed message naming no compression", b"\x01" + envelope(move)[1:], {},
         malformed),
        ("two messages on a unary call", envelope(move) * 2, {}, not_one),
        ("no message on a unary call", b"", {}, not_one),
        ("a truncated message", envelope(move)[:-3], {}, malformed),
        ("corrupt protobuf", envelope(b"\xff\xff\xff"), {}, malformed),
        ("gzip that is not gzip", b"\x01" + envelope(b"not gzip")[1:],
         {"grpc-encoding": "gzip"}, malformed),
        ("a compression the server does not speak", envelope(move), {"grpc-encoding": "snappy"},
         ("UNIMPLEMENTED", "UNSUPPORTED_COMPRESSION")),
        ("a grpc-timeout that is not one", envelope(move), {"grpc-timeout": "abc"}, bad_timeout),
        ("a grpc-timeout of 0", envelope(move), {"grpc-timeout": "0m"}, bad_timeout),
        ("a grpc-timeout of 9 digits", envelope(move), {"grpc-timeout": "1" * 9 + "S"},
         bad_timeout),
        ("an oversized message", envelope(huge), {}, ("RESOURCE_EXHAUSTED", "MESSAGE_TOO_LARGE")),
    ]  # fmt: skip
    wrong = []
    for what, body, extra, expected in cases:
        got = h2c_post(t.http_url, f"{TABLE_SERVICE}/PlaceCards", body, {**headers, **extra})
        if got != expected:
            wrong.append((what, got, expected))
        assert t.version() == version, f"{what} changed the table"
    assert not wrong, "\n".join(map(str, wrong))


def test_body_data_after_an_early_refusal_leaves_the_http2_connection_serving(
    small: Seated,
) -> None:
    """A call refused before its body was read (MESSAGE_TOO_LARGE) is answered and closed
    while its client still sends the body: that data is dropped, and the connection and its
    other calls go on. Hypercorn 0.18 ended the whole connection on such data now and then
    (pgjones/hypercorn#329): the next calls failed INTERNAL or UNAVAILABLE."""
    identity: Callable[[bytes], bytes] = lambda data: data  # noqa: E731
    address = urllib.parse.urlsplit(small.http_url).netloc
    options = [("grpc.max_send_message_length", 64 << 20)]
    with grpc.insecure_channel(address, options=options) as channel:
        settle = channel.unary_unary(
            "/ofcpoker.v1.RulesService/SettleHands",
            request_serializer=identity,
            response_deserializer=identity,
        )
        answers: collections.Counter[str] = collections.Counter()
        for _ in range(40):
            try:
                settle(b"\x0a\x01A" * (64 * LIMIT), timeout=15)
            except grpc.RpcError as error:
                answers[error.code().name] += 1
        assert answers == {"RESOURCE_EXHAUSTED": 40}
        assert settle(b"", timeout=15) == b""  # the connection still serves


def grpc_to_the_http_port(t: Seated) -> grpc.Channel:
    return grpc.insecure_channel(urllib.parse.urlsplit(t.http_url).netloc)


def test_an_http2_connection_to_the_http_port_carries_any_number_of_calls(small: Seated) -> None:
    """Hypercorn ends a connection after 1,000 requests by default: on HTTP/2 the call that
    passed it, and a Watch open on the same connection, ended UNAVAILABLE with no ErrorInfo."""
    with grpc_to_the_http_port(small) as channel:
        stub = TableServiceStub(channel)
        watch = stub.Watch(pb.WatchRequest(table_id=small.table_id), metadata=OPERATOR)
        assert next(watch).HasField("snapshot")
        request = pb.GetTableRequest(table_id=small.table_id)
        for _ in range(1_100):
            assert stub.GetTable(request, metadata=OPERATOR, timeout=15).table.table_id
        assert watch.is_active()
        watch.cancel()


@pytest.mark.parametrize("value", [f"{API_KEY} ", f"  {API_KEY}  "])
def test_a_header_value_with_surrounding_blanks_is_read_as_the_grpc_port_reads_it(
    small: Seated, value: str
) -> None:
    """RFC 9113 refuses such a value; h2 took it for an error of the whole connection, so the
    call, and every other call on its HTTP/2 connection (a Watch), ended UNAVAILABLE with no
    ErrorInfo. The gRPC port (and HTTP/1.1) read the value without its blanks: the same key."""
    request = pb.GetTableRequest(table_id=small.table_id)
    md = (("x-ofc-api-key", value), ("x-request-id", " blanks "))
    on_grpc = small.grpc.GetTable(request, metadata=md, timeout=15)
    with grpc_to_the_http_port(small) as channel:
        stub = TableServiceStub(channel)
        watch = stub.Watch(pb.WatchRequest(table_id=small.table_id), metadata=OPERATOR)
        assert next(watch).HasField("snapshot")
        assert stub.GetTable(request, metadata=md, timeout=15) == on_grpc
        assert watch.is_active()
        assert stub.GetTable(request, metadata=OPERATOR, timeout=15) == on_grpc
        watch.cancel()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_watch_of_a_seat_that_is_left_ends_unauthenticated_before_the_next_event(
    cluster: Cluster, protocol: str
) -> None:
    """A seat token's open watch over the HTTP port ends when its seat is left, with the
    refusal in the protocol's end of stream (Connect's end message, gRPC-Web's trailers),
    before the seat change or anything after it is sent."""
    grpc_stub = cluster.stubs[0]
    created = grpc_stub.CreateTable(
        pb.CreateTableRequest(seats=2, request_id=f"audit-left-{next(TABLES)}"),
        metadata=OPERATOR,
    )
    table_id = created.table_id
    joined = grpc_stub.JoinSeat(pb.JoinSeatRequest(
        table_id=table_id, seat=0, player_id="ann", expected_version=1,
        request_id=f"{table_id}-join",
    ))  # fmt: skip
    stub = HttpStub(cluster.servers[-1].http_url, protocol)
    token = (("x-ofc-seat-token", joined.seat_token),)
    watch = RawWatch(stub, pb.WatchRequest(table_id=table_id), token)  # type: ignore[arg-type]
    wait_until(lambda: bool(watch.messages), what="the snapshot")
    left = grpc_stub.LeaveSeat(
        pb.LeaveSeatRequest(table_id=table_id, seat=0, expected_version=2,
                            request_id=f"{table_id}-leave"),
        metadata=token,
    )  # fmt: skip
    grpc_stub.JoinSeat(pb.JoinSeatRequest(
        table_id=table_id, seat=0, player_id="bob", expected_version=left.table.version,
        request_id=f"{table_id}-join-bob",
    ))  # fmt: skip
    assert watch.ended.wait(15), "the watch went on"
    assert watch.error is not None and wire_status(watch.error)[:2] == (
        grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED"
    )  # fmt: skip
    assert [m.WhichOneof("kind") for m in watch.messages] == ["snapshot"], watch.messages
    (exchange,) = stub.exchanges
    assert exchange.done and b"bob" not in exchange.body
