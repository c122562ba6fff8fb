"""Helpers for tests that talk to a real server: building requests, reading rich errors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2
from ofcpoker.v1 import cards_pb2, ruleset_pb2, settlement_pb2

# rules.md worked examples, rows top / middle / bottom
EXAMPLE_A = "Ac 3d 2h / 6c 6d 9h 8s 4c / 9c 8c 7d 6h 5s"
EXAMPLE_1_B = "Kd 3c 2d / 5c 5d 9d 8h 4d / 7c 7h Qd Js 4s"
EXAMPLE_2_B = "As 3h 2c / 6h 6s 9d 8d 4h / 9s 8h 7c 6d 5c"
EXAMPLE_3_FOULED = "Ac Ad 2c / Kc Kd 9h 8s 4c / 9c 8c 7d 6h 5s"
EXAMPLE_4 = "Qc Qd 2c / Th Jh Qh Kh Ah / Ts Js Qs Ks As"
EXAMPLE_5_A = "Ac 9d 4s / Kh Kd 8s 6c 2d / Ah Ad Qs Tc 3h"
EXAMPLE_5_B = "Ks 8c 3s / Jh Jd 9h 5d 2c / Qh Qc As 7c 4d"


def board(text: str) -> cards_pb2.Board:
    top, middle, bottom = (row.split() for row in text.split("/"))
    return cards_pb2.Board(top=top, middle=middle, bottom=bottom)


def hand(*boards: str, preset: str = "", ids: tuple[str, ...] = ()) -> settlement_pb2.Hand:
    message = settlement_pb2.Hand(
        players=[
            settlement_pb2.PlayerHand(board=board(b), player_id=ids[i] if ids else "")
            for i, b in enumerate(boards)
        ]
    )
    if preset:
        message.ruleset.CopyFrom(ruleset_pb2.RulesetSpec(preset=preset))
    return message


@dataclass(frozen=True)
class WireError:
    code: grpc.StatusCode
    reason: str
    domain: str
    info_field: str
    violations: tuple[str, ...]
    request_id: str


def wire_error(error: grpc.RpcError) -> WireError:
    """Unpack a failed call's google.rpc.Status by hand (independently of ofc_client)."""
    reason = domain = info_field = request_id = ""
    violations: tuple[str, ...] = ()
    for key, value in error.trailing_metadata() or ():
        if key == "x-request-id":
            request_id = value
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            assert status.code == error.code().value[0]
            infos = [d for d in status.details if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR)]
            assert len(infos) == 1, "exactly one ErrorInfo"
            info = error_details_pb2.ErrorInfo()
            infos[0].Unpack(info)
            reason, domain, info_field = info.reason, info.domain, info.metadata.get("field", "")
            for detail in status.details:
                if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                    bad = error_details_pb2.BadRequest()
                    detail.Unpack(bad)
                    violations = tuple(v.field for v in bad.field_violations)
    return WireError(error.code(), reason, domain, info_field, violations, request_id)


def assert_field_numbers(messages: Mapping[str, Any], numbers: Mapping[str, Sequence[str]]) -> None:
    """A wire encoder's field table (each message's field names in field-number order from
    1) against the generated descriptors of ``messages``."""
    assert set(messages) == set(numbers)
    for name, message in messages.items():
        fields = sorted(message.DESCRIPTOR.fields, key=lambda f: f.number)
        assert [(f.number, f.name) for f in fields] == list(enumerate(numbers[name], start=1)), name
