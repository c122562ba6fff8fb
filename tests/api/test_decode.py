"""A number too wide for its 32-bit field is refused, not cut to its low bits.

Protobuf parsers keep the low 32 bits of a wider varint: ``JoinSeat`` with ``seat = 2**32 +
1`` would seat the player at seat 1. No protobuf library writes such bytes, so only a
crafted request has them; every transport refuses it as MALFORMED_REQUEST naming the field,
and the table does not change.
"""

from __future__ import annotations

import json
import struct
import urllib.error
import urllib.request

import grpc
import pytest
from google.protobuf.message import Message
from google.rpc import error_details_pb2
from hypothesis import given
from hypothesis import strategies as st
from ofc_service.api.decode import NAMED_BYTES, out_of_range, parser
from ofc_service.api.errors import MalformedRequestError
from ofc_service.api.outcome_wire import varint
from ofc_service.server.background import BackgroundServer
from ofcpoker.v1 import rules_service_pb2, settlement_pb2
from ofcpoker.v1 import table_service_pb2 as pb

from tests.api.wire import wire_error
from tests.connect.http_stub import unpadded_b64decode

WIDE = 2**32 + 1  # a uint32 field would read 1


def field(number: int, wire_type: int, payload: bytes) -> bytes:
    return varint(number << 3 | wire_type) + payload


def length_delimited(number: int, data: bytes) -> bytes:
    return field(number, 2, varint(len(data)) + data)


def join_seat(table_id: str, seat: int, request_id: bytes = b"join-wide") -> bytes:
    """A JoinSeatRequest's bytes with ``seat`` written as given (any width), at version 1."""
    return (
        length_delimited(1, table_id.encode())
        + field(2, 0, varint(seat))
        + length_delimited(3, b"mallory")
        + field(4, 0, varint(1))
        + length_delimited(5, request_id)
    )


@pytest.mark.parametrize(
    ("message_class", "data", "path", "value"),
    [
        (pb.JoinSeatRequest, join_seat("t", WIDE), "seat", WIDE),
        (pb.JoinSeatRequest, join_seat("t", 2**64 - 1), "seat", 2**64 - 1),
        # an enum: a negative number is ten bytes, a 32-bit one fits, 2**31 does not
        (
            rules_service_pb2.EvaluateRowRequest,
            field(2, 0, varint(2**31)),
            "row",
            2**31,
        ),
        # nested and repeated: the path names the element
        (
            pb.PlaceCardsRequest,
            length_delimited(3, length_delimited(1, b"Kc") + field(2, 0, varint(2)))
            + length_delimited(3, length_delimited(1, b"Qc") + field(2, 0, varint(2**32 + 2))),
            "placements[1].row",
            2**32 + 2,
        ),
        (
            rules_service_pb2.SettleHandsRequest,
            length_delimited(1, length_delimited(1, field(4, 0, varint(2**40)))),
            "hands[0].players[0].fantasyland_streak",
            2**40,
        ),
    ],
)
def test_a_wide_number_is_refused_naming_its_field(
    message_class: type[Message], data: bytes, path: str, value: int
) -> None:
    message_class.FromString(data)  # protobuf itself takes it, cut to 32 bits
    with pytest.raises(MalformedRequestError) as refused:
        parser(message_class)(data)
    assert refused.value.field == path
    assert refused.value.message == (
        f"the request does not decode: {path} is a 32-bit number, got {value}"
    )


@pytest.mark.parametrize(
    "data",
    [
        field(2, 0, b"\x81\x00"),  # seat 1 in two bytes: longer than needed, not wider
        field(2, 0, varint(0)),  # a default written out
        field(2, 0, varint(2**32 - 1)),  # the widest that fits
        field(99, 0, varint(2**63)),  # an unknown field: not ours to judge
        field(2, 0, varint(3)) + field(2, 0, varint(4)),  # repeated scalar: the last wins
    ],
)
def test_numbers_that_fit_are_read_as_protobuf_reads_them(data: bytes) -> None:
    assert parser(pb.JoinSeatRequest)(data) == pb.JoinSeatRequest.FromString(data)


def test_a_long_request_is_judged_whole_and_refused_without_a_walk() -> None:
    """Past NAMED_BYTES the bytes are not walked in Python (a crafted request of many unknown
    fields would cost seconds there): a cut number is still refused, its field unnamed, and
    a long request whose numbers all fit is read as protobuf reads it."""
    unknown = field(111, 0, varint(1)) * (NAMED_BYTES // 3 + 1)  # past the walk's limit
    benign = field(2, 0, varint(0)) + unknown  # a default written out: sizes differ
    assert parser(pb.JoinSeatRequest)(benign) == pb.JoinSeatRequest.FromString(benign)
    with pytest.raises(MalformedRequestError) as refused:
        parser(pb.JoinSeatRequest)(field(2, 0, varint(WIDE)) + unknown)
    assert refused.value.field == ""
    assert refused.value.message.endswith("a number is wider than its 32-bit field")


def test_a_negative_enum_value_fits() -> None:
    data = field(2, 0, varint(2**64 - 1))  # row = -1: an int32's ten-byte varint
    assert out_of_range(data, rules_service_pb2.EvaluateRowRequest.DESCRIPTOR) is None


@given(
    seat=st.integers(0, 2**32 - 1),
    version=st.integers(0, 2**64 - 1),
    rows=st.lists(st.integers(-(2**31), 2**31 - 1), max_size=4),
)
def test_every_message_a_protobuf_library_writes_is_read_as_it_was_written(
    seat: int, version: int, rows: list[int]
) -> None:
    request = pb.PlaceCardsRequest(
        table_id="t",
        seat=seat,
        expected_version=version,
        placements=[pb.Placement(card="Kc", row=row) for row in rows],  # type: ignore[arg-type]
    )
    data = request.SerializeToString()
    assert parser(pb.PlaceCardsRequest)(data) == request


def test_settle_hands_refuses_a_wide_streak_over_grpc(channel: grpc.Channel) -> None:
    hand = settlement_pb2.Hand(
        players=[settlement_pb2.PlayerHand(player_id="a"), settlement_pb2.PlayerHand()]
    ).SerializeToString()
    wide_player = length_delimited(1, field(4, 0, varint(2**40)))  # players[2]'s streak
    data = length_delimited(1, hand + wide_player)
    settle = channel.unary_unary("/ofcpoker.v1.RulesService/SettleHands")
    with pytest.raises(grpc.RpcError) as caught:
        settle(data)
    error = wire_error(caught.value)
    assert (error.code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED_REQUEST")
    assert error.info_field == "hands[0].players[2].fantasyland_streak"


def _table(channel: grpc.Channel) -> str:
    create = channel.unary_unary(
        "/ofcpoker.v1.TableService/CreateTable",
        response_deserializer=pb.CreateTableResponse.FromString,
    )
    request = pb.CreateTableRequest(request_id="create-wide")
    table: str = create(request.SerializeToString()).table_id
    return table


def _seats_and_version(channel: grpc.Channel, table_id: str) -> tuple[list[str], int]:
    get = channel.unary_unary(
        "/ofcpoker.v1.TableService/GetTable", response_deserializer=pb.GetTableResponse.FromString
    )
    view = get(pb.GetTableRequest(table_id=table_id).SerializeToString()).table
    return [s.player_id for s in view.seats], view.version


def _http(
    server: BackgroundServer, content_type: str, body: bytes
) -> tuple[int, bytes, dict[str, str]]:
    request = urllib.request.Request(
        f"{server.http_url}/ofcpoker.v1.TableService/JoinSeat",
        data=body,
        headers={"content-type": content_type, "connect-protocol-version": "1"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read(), dict(answer.headers)
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read(), dict(refused.headers)


def _connect_info(body: bytes) -> error_details_pb2.ErrorInfo:
    error = json.loads(body)
    assert error["code"] == "invalid_argument"
    for detail in error["details"]:
        if detail["type"] == "google.rpc.ErrorInfo":
            return error_details_pb2.ErrorInfo.FromString(unpadded_b64decode(detail["value"]))
    raise AssertionError(error)


def test_join_seat_with_a_wide_seat_is_refused_on_every_transport_and_seats_nobody(
    server: BackgroundServer, channel: grpc.Channel
) -> None:
    table_id = _table(channel)
    before = _seats_and_version(channel, table_id)
    data = join_seat(table_id, WIDE)

    join = channel.unary_unary("/ofcpoker.v1.TableService/JoinSeat")
    with pytest.raises(grpc.RpcError) as caught:
        join(data)
    error = wire_error(caught.value)
    assert (error.code, error.reason, error.info_field) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "MALFORMED_REQUEST",
        "seat",
    )

    status, body, _ = _http(server, "application/proto", data)
    info = _connect_info(body)
    assert (status, info.reason, info.metadata["field"]) == (400, "MALFORMED_REQUEST", "seat")

    frame = b"\x00" + struct.pack(">I", len(data)) + data
    status, body, headers = _http(server, "application/grpc-web+proto", frame)
    trailers = body[body.rindex(b"\x80") + 5 :].decode() if status == 200 else ""
    grpc_status = headers.get("grpc-status") or next(
        line.split(":", 1)[1].strip()
        for line in trailers.split("\r\n")
        if line.lower().startswith("grpc-status:")
    )
    assert grpc_status == str(grpc.StatusCode.INVALID_ARGUMENT.value[0])

    assert _seats_and_version(channel, table_id) == before  # nobody took seat 1
    join(join_seat(table_id, 1, b"join-narrow"))  # the same request with seat 1 is taken
    assert _seats_and_version(channel, table_id)[0][1] == "mallory"
