"""Every error reason over the wire: status code, one ErrorInfo, the field violation, the id.

The table below is the contract of protos/ofcpoker/v1/errors.proto: for each reason the
service can produce, a request that produces it and the exact field path it names.
"""

from __future__ import annotations

import inspect
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message
from google.rpc import error_details_pb2
from ofc import errors as core
from ofc_service.api.errors import DOMAIN, ERRORS, MAX_MESSAGE_CHARS, api_error, rich_status
from ofc_service.api.rules import MAX_BATCH_HANDS
from ofcpoker.v1 import cards_pb2, ruleset_pb2, settlement_pb2
from ofcpoker.v1 import rules_service_pb2 as pb
from ofcpoker.v1.rules_service_pb2_grpc import RulesServiceStub

from tests.api.conftest import MAX_MESSAGE_BYTES
from tests.api.wire import EXAMPLE_1_B, EXAMPLE_A, board, hand, wire_error

INVALID = grpc.StatusCode.INVALID_ARGUMENT


def _settle(h: settlement_pb2.Hand) -> tuple[str, Message]:
    return "SettleHand", pb.SettleHandRequest(hand=h)


def _with_ruleset(spec: ruleset_pb2.RulesetSpec) -> tuple[str, Message]:
    h = hand(EXAMPLE_A, EXAMPLE_1_B)
    h.ruleset.CopyFrom(spec)
    return _settle(h)


def _overrides(**fields: Any) -> tuple[str, Message]:
    return _with_ruleset(ruleset_pb2.RulesetSpec(overrides=ruleset_pb2.RulesetOverrides(**fields)))


def _player(**fields: Any) -> tuple[str, Message]:
    h = hand(EXAMPLE_A, EXAMPLE_1_B)
    for key, value in fields.items():
        setattr(h.players[1], key, value)
    return _settle(h)


def _pair_units(a: int, b: int, units: int) -> tuple[str, Message]:
    h = hand(EXAMPLE_A, EXAMPLE_1_B)
    h.pair_unit_values.append(settlement_pb2.PairUnitValue(a=a, b=b, unit_value=units))
    return _settle(h)


def _unknown_category() -> ruleset_pb2.CategoryPoints:
    points = ruleset_pb2.CategoryPoints(points=1)
    points.category = 99  # type: ignore[assignment]  # an enum number no client knows
    return points


def _unknown_row() -> pb.EvaluateRowRequest:
    request = pb.EvaluateRowRequest(cards=["As", "Kd", "Qd"])
    request.row = 7  # type: ignore[assignment]
    return request


CASES: list[tuple[str, tuple[str, Message], str, str]] = [
    # reason, (method, request), expected field path
    (
        "bad card token",
        _settle(hand(EXAMPLE_A, EXAMPLE_1_B.replace("Qd", "Qx"))),
        "INVALID_CARD",
        "hand.players[1].board.bottom[2]",
    ),
    (
        "empty card",
        ("EvaluateRow", pb.EvaluateRowRequest(cards=["As", "", "Kd"])),
        "INVALID_CARD",
        "cards[1]",
    ),
    (
        "long card",
        ("EvaluateRow", pb.EvaluateRowRequest(cards=["As" * 1000, "Kd", "Qd"])),
        "INVALID_CARD",
        "cards[0]",
    ),
    (
        "card twice in a hand",
        _settle(hand(EXAMPLE_A, EXAMPLE_1_B.replace("Kd", "Ac"))),
        "DUPLICATE_CARD",
        "hand.players[1].board.top",
    ),
    (
        "card twice in a row",
        ("EvaluateRow", pb.EvaluateRowRequest(cards=["As", "Kd", "as"])),
        "DUPLICATE_CARD",
        "cards[2]",
    ),
    (
        "card twice on a board",
        ("ValidateBoard", pb.ValidateBoardRequest(board=board(EXAMPLE_A.replace("3d", "5s")))),
        "DUPLICATE_CARD",
        "board.bottom",
    ),
    (
        "joker on a board whose deck has none",
        ("ValidateBoard", pb.ValidateBoardRequest(board=board(EXAMPLE_A.replace("Ac", "X1")))),
        "INVALID_CARD",
        "board.top",
    ),
    (
        "second joker on a one-joker deck's board",
        (
            "ValidateBoard",
            pb.ValidateBoardRequest(
                board=board(EXAMPLE_A.replace("Ac", "X1").replace("9c", "X2")),
                ruleset=ruleset_pb2.RulesetSpec(preset="classic-joker"),
            ),
        ),
        "INVALID_CARD",
        "board.bottom",
    ),
    (
        "joker in a classic row",
        (
            "EvaluateRow",
            pb.EvaluateRowRequest(cards=["As", "X1", "Kd"], row=cards_pb2.ROW_POSITION_TOP),
        ),
        "INVALID_CARD",
        "cards[1]",
    ),
    (
        "joker the ruleset's deck lacks",
        (
            "EvaluateRow",
            pb.EvaluateRowRequest(
                cards=["As", "Kd", "X2"], ruleset=ruleset_pb2.RulesetSpec(preset="classic-joker")
            ),
        ),
        "INVALID_CARD",
        "cards[2]",
    ),
    (
        "short middle",
        _settle(hand(EXAMPLE_A, "Kd 3c 2d / 5c 5d 9d 8h / 7c 7h Qd Js 4s")),
        "WRONG_ROW_SIZE",
        "hand.players[1].board.middle",
    ),
    (
        "missing board",
        _settle(settlement_pb2.Hand(players=[settlement_pb2.PlayerHand()] * 2)),
        "WRONG_ROW_SIZE",
        "hand.players[0].board.top",
    ),
    (
        "4-card row",
        ("EvaluateRow", pb.EvaluateRowRequest(cards=["As", "Kd", "Qd", "Jd"])),
        "WRONG_ROW_SIZE",
        "cards",
    ),
    (
        "5 cards for the top row",
        (
            "EvaluateRow",
            pb.EvaluateRowRequest(
                cards=["As", "Kd", "Qd", "Jd", "9c"], row=cards_pb2.ROW_POSITION_TOP
            ),
        ),
        "WRONG_ROW_SIZE",
        "cards",
    ),
    ("one board", _settle(hand(EXAMPLE_A)), "WRONG_PLAYER_COUNT", "hand.players"),
    ("empty hand", ("SettleHand", pb.SettleHandRequest()), "WRONG_PLAYER_COUNT", "hand.players"),
    (
        "4 boards in pineapple",
        _settle(hand(*["Ac 3d 2h / 6c 6d 9h 8s 4c / 9c 8c 7d 6h 5s"] * 4, preset="pineapple")),
        "WRONG_PLAYER_COUNT",
        "hand.players",
    ),
    (
        "unknown preset",
        _with_ruleset(ruleset_pb2.RulesetSpec(preset="nope")),
        "UNKNOWN_RULESET",
        "hand.ruleset.preset",
    ),
    (
        "unknown preset with overrides",
        _with_ruleset(
            ruleset_pb2.RulesetSpec(
                preset="x" * 500, overrides=ruleset_pb2.RulesetOverrides(unit_value=2)
            )
        ),
        "UNKNOWN_RULESET",
        "hand.ruleset.preset",
    ),
    (
        "zero unit value",
        _overrides(unit_value=0),
        "INVALID_RULESET",
        "hand.ruleset.overrides.unit_value",
    ),
    (
        "streets placing 12",
        _overrides(streets=ruleset_pb2.StreetList(streets=[ruleset_pb2.Street(deal=12, place=12)])),
        "INVALID_RULESET",
        "hand.ruleset.overrides.streets",
    ),
    (
        "unknown scoring scheme",
        _overrides(scoring_scheme="3-9"),
        "INVALID_RULESET",
        "hand.ruleset.overrides.scoring_scheme",
    ),
    (
        "unknown royalty table",
        _overrides(royalty_table="secret"),
        "INVALID_RULESET",
        "hand.ruleset.overrides.royalty_table",
    ),
    (
        "unknown category value",
        _overrides(royalties=ruleset_pb2.RoyaltyTable(bottom=[_unknown_category()])),
        "INVALID_RULESET",
        "hand.ruleset.overrides.royalties.bottom[0].category",
    ),
    (
        "bad rank",
        _overrides(
            fantasyland_entry=ruleset_pb2.FantasylandEntryList(
                entries=[
                    ruleset_pb2.FantasylandEntry(
                        category=cards_pb2.HAND_CATEGORY_PAIR, min_rank="Z", cards=14
                    )
                ]
            )
        ),
        "INVALID_RULESET",
        "hand.ruleset.overrides.fantasyland_entry.entries[0].min_rank",
    ),
    (
        "unspecified stay row",
        _overrides(
            stay_conditions=ruleset_pb2.StayConditionList(
                conditions=[ruleset_pb2.StayCondition(category=cards_pb2.HAND_CATEGORY_TRIPS)]
            )
        ),
        "INVALID_RULESET",
        "hand.ruleset.overrides.stay_conditions.conditions[0].row",
    ),
    (
        "unknown stay row",  # (INVALID_INPUT before, where an unknown category was INVALID_RULESET)
        _overrides(
            stay_conditions=ruleset_pb2.StayConditionList(
                conditions=[
                    ruleset_pb2.StayCondition(
                        row=cards_pb2.RowPosition.ValueType(99),
                        category=cards_pb2.HAND_CATEGORY_TRIPS,
                    )
                ]
            )
        ),
        "INVALID_RULESET",
        "hand.ruleset.overrides.stay_conditions.conditions[0].row",
    ),
    (
        "too many players for the deck",
        _overrides(stay_cards=17, max_players=4),
        "INVALID_RULESET",
        "hand.ruleset.overrides.max_players",
    ),
    ("empty override name", _overrides(name=""), "INVALID_RULESET", "hand.ruleset.overrides.name"),
    (
        "override name with a bidi control",
        _overrides(name="house \u202erules"),
        "INVALID_RULESET",
        "hand.ruleset.overrides.name",
    ),
    (
        "override name with a line break",
        _overrides(name="house\nrules"),
        "INVALID_RULESET",
        "hand.ruleset.overrides.name",
    ),
    (
        "short seed hex",
        ("DeriveDeck", pb.DeriveDeckRequest(server_seed_hex="abcd")),
        "INVALID_SEED",
        "server_seed_hex",
    ),
    (
        "not hex",
        ("DeriveDeck", pb.DeriveDeckRequest(server_seed_hex="zz" * 32)),
        "INVALID_SEED",
        "server_seed_hex",
    ),
    (
        "huge hex",
        ("DeriveDeck", pb.DeriveDeckRequest(server_seed_hex="00" * 5000)),
        "INVALID_SEED",
        "server_seed_hex",
    ),
    (
        "31 seed bytes",
        ("VerifyCommitment", pb.VerifyCommitmentRequest(server_seed_bytes=bytes(31))),
        "INVALID_SEED",
        "server_seed_bytes",
    ),
    ("no seed", ("DeriveDeck", pb.DeriveDeckRequest(nonce=1)), "INVALID_SEED", "server_seed_hex"),
    (
        "seed hex with spaces",
        ("DeriveDeck", pb.DeriveDeckRequest(server_seed_hex=" ".join(["00"] * 32))),
        "INVALID_SEED",
        "server_seed_hex",
    ),
    (
        "seed hex padded",
        ("VerifyCommitment", pb.VerifyCommitmentRequest(server_seed_hex=f" {'00' * 32}\n")),
        "INVALID_SEED",
        "server_seed_hex",
    ),
    (
        "three jokers",
        ("DeriveDeck", pb.DeriveDeckRequest(server_seed_hex="00" * 32, jokers=3)),
        "INVALID_INPUT",
        "jokers",
    ),
    (
        "bad commitment",
        (
            "VerifyCommitment",
            pb.VerifyCommitmentRequest(server_seed_bytes=bytes(32), commitment="abc"),
        ),
        "INVALID_INPUT",
        "commitment",
    ),
    ("unknown row enum", ("EvaluateRow", _unknown_row()), "INVALID_INPUT", "row"),
    ("duplicate player id", _player(player_id=""), "INVALID_INPUT", "hand.players[1].player_id"),
    ("long player id", _player(player_id="p" * 65), "INVALID_INPUT", "hand.players[1].player_id"),
    # printable, as JoinSeat's player ids: a line break or a bidi control would be shown as
    # it is in answers, logs and histories (the boards-alone path, then the long way)
    (
        "player id with a line break",
        _player(player_id="p\n1"),
        "INVALID_INPUT",
        "hand.players[1].player_id",
    ),
    (
        "player id with a bidi control",
        _player(player_id="p\u202e1", fantasyland_streak=1),
        "INVALID_INPUT",
        "hand.players[1].player_id",
    ),
    (
        "huge streak",
        _player(fantasyland_streak=10**6),
        "INVALID_INPUT",
        "hand.players[1].fantasyland_streak",
    ),
    ("pair out of range", _pair_units(0, 2, 5), "INVALID_INPUT", "hand.pair_unit_values[0].b"),
    (
        "pair unit value 0",
        _pair_units(0, 1, 0),
        "INVALID_INPUT",
        "hand.pair_unit_values[0].unit_value",
    ),
    (
        "streak on a board",
        ("ValidateBoard", pb.ValidateBoardRequest(board=board(EXAMPLE_A), fantasyland_streak=5000)),
        "INVALID_INPUT",
        "fantasyland_streak",
    ),
    (
        "batch too large",
        (
            "SettleHands",
            pb.SettleHandsRequest(hands=[settlement_pb2.Hand()] * (MAX_BATCH_HANDS + 1)),
        ),
        "BATCH_TOO_LARGE",
        "hands",
    ),
]


def _ids() -> list[str]:
    return [case[0] for case in CASES]


@pytest.mark.parametrize(("name", "call", "reason", "field"), CASES, ids=_ids())
def test_error_reason_and_field_over_the_wire(
    stub: RulesServiceStub, name: str, call: tuple[str, Message], reason: str, field: str
) -> None:
    method, request = call
    if name == "duplicate player id":  # both players named "b"
        assert isinstance(request, pb.SettleHandRequest)
        request.hand.players[0].player_id = request.hand.players[1].player_id = "b"
    with pytest.raises(grpc.RpcError) as caught:
        getattr(stub, method)(request, metadata=(("x-request-id", f"test-{reason}"),))
    error = wire_error(caught.value)
    assert (error.code, error.reason, error.domain) == (INVALID, reason, DOMAIN)
    assert error.info_field == field
    assert error.violations == (field,)
    assert error.request_id == f"test-{reason}"
    assert len(caught.value.details()) <= MAX_MESSAGE_CHARS


def test_undecodable_request_is_malformed_request_not_internal(channel: grpc.Channel) -> None:
    # Field 1 of EvaluateRowRequest is a string: invalid UTF-8 does not decode in proto3.
    from ofc_service.metrics import REQUEST_ERRORS

    counted = REQUEST_ERRORS.labels("MALFORMED_REQUEST")
    before = counted._value.get()
    raw = channel.unary_unary("/ofcpoker.v1.RulesService/EvaluateRow")
    with pytest.raises(grpc.RpcError) as caught:
        raw(b"\x0a\x02\xff\xfe")
    error = wire_error(caught.value)
    assert (error.code, error.reason) == (INVALID, "MALFORMED_REQUEST")
    assert counted._value.get() == before + 1  # counted by reason, as a handler's error is


def test_oversized_request_is_resource_exhausted(stub: RulesServiceStub) -> None:
    too_big = pb.EvaluateRowRequest(cards=["As" * 1000] * (MAX_MESSAGE_BYTES // 1000 + 10))
    with pytest.raises(grpc.RpcError) as caught:
        stub.EvaluateRow(too_big)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


# --- the table itself ------------------------------------------------------------------------
def _core_error_classes() -> list[type[core.OfcError]]:
    return [
        cls
        for _, cls in inspect.getmembers(core, inspect.isclass)
        if issubclass(cls, core.OfcError)
    ]


def test_every_core_error_class_has_a_status_code() -> None:
    missing = [cls.__name__ for cls in _core_error_classes() if cls not in ERRORS]
    assert missing == []


@pytest.mark.parametrize("cls", _core_error_classes(), ids=lambda c: c.__name__)
def test_every_error_becomes_one_error_info_and_a_field_violation(cls: type[core.OfcError]) -> None:
    status = rich_status(api_error(cls("message", field="players[0].top")))
    expected = (
        grpc.StatusCode.FAILED_PRECONDITION
        if issubclass(cls, core.IllegalActionError)
        else grpc.StatusCode.INVALID_ARGUMENT
    )
    assert status.code == expected.value[0]
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert (info.reason, info.domain, info.metadata["field"]) == (
        cls.reason,
        DOMAIN,
        "players[0].top",
    )
    bad = error_details_pb2.BadRequest()
    assert status.details[1].Unpack(bad)
    assert [v.field for v in bad.field_violations] == ["players[0].top"]
    assert cls.reason.isupper() and " " not in cls.reason


def test_errors_the_table_does_not_list_are_internal_and_say_nothing_of_themselves() -> None:
    error = api_error(KeyError("secret internals"))
    assert (error.code.name, error.reason, error.field) == ("INTERNAL", "INTERNAL", "")
    assert "secret" not in error.message
