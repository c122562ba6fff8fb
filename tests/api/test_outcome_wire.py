"""Batch settlement's fast paths give exactly what the message API gives.

``SettleHands`` and ``SettleHandsStream`` (a hand a message, or many) read boards from their
wire bytes and write outcomes as wire bytes (``ofc_service.api.outcome_wire``); ``SettleHand``
fills messages field by field. The bytes must be the same, hand for hand, on random hands of
every shape: legal and fouled boards, 2-4 players, loss caps, pair unit values, Fantasyland,
player ids.
"""

from __future__ import annotations

from typing import Any

import grpc
from hypothesis import given, settings
from hypothesis import strategies as st
from ofc.cards import CARD_CODES, CODES
from ofc.errors import OfcError
from ofc.rulesets import PRESETS
from ofc.scoring import Board, Settlement, settle
from ofc_service.api import convert, outcome_wire
from ofcpoker.v1 import cards_pb2, errors_pb2, settlement_pb2
from ofcpoker.v1 import rules_service_pb2 as pb
from ofcpoker.v1.rules_service_pb2_grpc import RulesServiceStub

from tests.api.test_fuzz import hands as request_hands
from tests.api.test_fuzz import tokens
from tests.api.wire import assert_field_numbers, wire_error
from tests.ofc.test_settlement_json import settlements

MESSAGES: dict[str, Any] = {
    "BoardAssessment": settlement_pb2.BoardAssessment,
    "Royalties": settlement_pb2.Royalties,
    "FantasylandOutcome": settlement_pb2.FantasylandOutcome,
    "PlayerResult": settlement_pb2.PlayerResult,
    "PairResult": settlement_pb2.PairResult,
    "Settlement": settlement_pb2.Settlement,
    "HandOutcome": pb.HandOutcome,
}


def test_the_encoder_knows_every_field_of_the_protos() -> None:
    assert_field_numbers(MESSAGES, outcome_wire.FIELD_NUMBERS)


def _reference(settled: convert.SettledHand) -> bytes:
    outcome = pb.HandOutcome()
    convert.write_settlement(settled, outcome.settlement)
    return outcome.SerializeToString()


@settings(max_examples=300)
@given(settlements())
def test_outcome_bytes_are_what_protobuf_writes(settled: tuple[Settlement, list[str]]) -> None:
    settlement, player_ids = settled
    reference = convert.SettledHand(settlement, tuple(player_ids), "custom", 0)
    assert outcome_wire.outcome_bytes(settlement, player_ids) == _reference(reference)


def test_large_numbers_and_long_messages_encode_too() -> None:
    # Units beyond one varint byte, negative sint64s, a name past 127 bytes of message.
    boards = [Board.parse("Ac 3d 2h / 6c 6d 9h 8s 4c / 9c 8c 7d 6h 5s"),
              Board.parse("Kd 3c 2d / 5c 5d 9d 8h 4d / 7c 7h Qd Js 4s")]  # fmt: skip
    settlement = settle(boards, pair_units={(0, 1): 999_999})
    player_ids = ("x" * 64, "é" * 64)
    settled = convert.SettledHand(settlement, player_ids, "classic", 0)
    assert outcome_wire.outcome_bytes(settlement, player_ids) == _reference(settled)
    assert [p.units for p in settlement.players] == [7_999_992, -7_999_992]


def test_error_outcomes_are_what_protobuf_writes() -> None:
    detail = errors_pb2.ErrorDetail(reason="DUPLICATE_CARD", field="players[1]", message="m")
    assert outcome_wire.error_outcome_bytes(detail) == (
        pb.HandOutcome(error=detail).SerializeToString()
    )


rows = st.lists(st.one_of(st.sampled_from(CARD_CODES), tokens), min_size=2, max_size=6)


@st.composite
def boards(draw: st.DrawFn) -> cards_pb2.Board:
    """Canonical boards from one deck (the fast path), and every kind of near miss."""
    if draw(st.booleans()):
        cards = draw(st.permutations(CARD_CODES))[:13]
        if draw(st.booleans()):  # one card in another spelling, or junk
            k = draw(st.integers(0, 12))
            cards[k] = draw(st.one_of(st.sampled_from(["10d", "a♠", "ks", "Q♥", "AS"]), tokens))
        return cards_pb2.Board(top=cards[:3], middle=cards[3:8], bottom=cards[8:])
    return cards_pb2.Board(top=draw(rows), middle=draw(rows), bottom=draw(rows))


def _long_way(board: cards_pb2.Board) -> Board | str:
    try:
        return convert.board_from_proto(board, "board")
    except Exception as exc:
        return type(exc).__name__


@settings(max_examples=300)
@given(boards())
def test_reading_a_board_from_its_bytes_agrees_with_the_long_way(
    board: cards_pb2.Board,
) -> None:
    fast = convert.read_board(board)
    assert fast is None or fast == _long_way(board)
    if _canonical(board):
        assert fast is not None  # the fast path is taken whenever it can be


@st.composite
def plain_hands(draw: st.DrawFn) -> settlement_pb2.Hand:
    """Hands in the shape a back office sends (boards, maybe ids) and near misses."""
    n = draw(st.integers(0, 5))
    deck = draw(st.permutations(CARD_CODES))
    hand = settlement_pb2.Hand()
    for i in range(n):
        cards = list(deck[13 * i : 13 * i + 13]) if 13 * i + 13 <= 52 else list(deck[:13])
        player = hand.players.add(
            board=draw(st.one_of(st.just(None), boards()))
            or cards_pb2.Board(top=cards[:3], middle=cards[3:8], bottom=cards[8:]),
            player_id=draw(st.one_of(st.just(""), st.text(max_size=3), st.text(min_size=120))),
        )
        if draw(st.integers(0, 5)) == 0:
            player.in_fantasyland = True
        if draw(st.integers(0, 5)) == 0:
            player.fantasyland_streak = draw(st.integers(0, 2000))
    if draw(st.integers(0, 5)) == 0:
        hand.ruleset.preset = draw(st.sampled_from(["pineapple", "turbo", "nope"]))
    return hand


@settings(max_examples=300)
@given(plain_hands())
def test_reading_players_from_the_hands_bytes_agrees_with_the_message_api(
    hand: settlement_pb2.Hand,
) -> None:
    read = convert.read_players(hand)
    simple = all(not p.in_fantasyland and not p.fantasyland_streak for p in hand.players)
    expected = [_long_way(p.board) for p in hand.players]
    if read is None:
        # The long way is taken only for more than a board and an id, a long player, or a
        # board not in canonical codes (which the long way then reads or rejects).
        canonical = all(_canonical(p.board) for p in hand.players)
        short = all(len(p.SerializeToString()) < 128 for p in hand.players)
        assert not (simple and canonical and short)
        return
    assert simple
    assert read == (expected, [p.player_id for p in hand.players])


def _canonical(board: cards_pb2.Board) -> bool:
    sizes = (len(board.top), len(board.middle), len(board.bottom))
    return sizes == (3, 5, 5) and all(
        c in CARD_CODES for c in [*board.top, *board.middle, *board.bottom]
    )


@settings(max_examples=60)
@given(st.lists(st.one_of(request_hands(), plain_hands()), min_size=1, max_size=12))
def test_a_batch_answers_each_hand_as_settle_hand_does(
    stub: RulesServiceStub, hands: list[settlement_pb2.Hand]
) -> None:
    batch = stub.SettleHands(pb.SettleHandsRequest(hands=hands)).results
    streamed = [
        r.outcome
        for r in stub.SettleHandsStream(
            iter([pb.SettleHandsStreamRequest(hand_id=str(k), hand=h) for k, h in enumerate(hands)])
        )
    ]
    entries = [pb.IdentifiedHand(hand_id=str(k), hand=h) for k, h in enumerate(hands)]
    (together,) = stub.SettleHandsStream(iter([pb.SettleHandsStreamRequest(hands=entries)]))
    assert [r.hand_id for r in together.results] == [str(k) for k in range(len(hands))]
    in_one_message = [r.outcome for r in together.results]
    assert len(batch) == len(streamed) == len(in_one_message) == len(hands)
    for hand, one, other, grouped in zip(hands, batch, streamed, in_one_message, strict=True):
        assert one == other == grouped
        assert one.SerializeToString() == other.SerializeToString() == grouped.SerializeToString()
        try:
            single = stub.SettleHand(pb.SettleHandRequest(hand=hand))
        except grpc.RpcError as exc:  # the same error, its field under "hand."
            error = wire_error(exc)
            assert one.WhichOneof("result") == "error"
            assert (one.error.reason, "hand." + one.error.field) == (error.reason, error.info_field)
            continue
        assert one.WhichOneof("result") == "settlement"
        assert one.settlement.SerializeToString() == single.settlement.SerializeToString()


# --- SettleHands over gRPC takes its request's bytes (RulesHandlers.RAW_REQUESTS) ----------
def _preset_hand(draw: st.DrawFn, preset: str) -> settlement_pb2.Hand:
    """A hand of boards alone (maybe ids) under a preset named on the hand: the bytes path."""
    ruleset = PRESETS[preset]
    n = draw(st.integers(1, 5))
    codes = list(CODES[: ruleset.deck_size])
    deck = draw(st.permutations(codes))
    hand = settlement_pb2.Hand()
    for i in range(n):
        cards = list(deck[13 * i : 13 * i + 13]) if 13 * i + 13 <= len(deck) else list(deck[:13])
        hand.players.add(
            board=cards_pb2.Board(top=cards[:3], middle=cards[3:8], bottom=cards[8:]),
            player_id=draw(st.one_of(st.just(""), st.sampled_from(["a", "b", "é"]))),
        )
    if preset != "classic" or draw(st.booleans()):
        hand.ruleset.preset = preset
    return hand


@st.composite
def batch_hands(draw: st.DrawFn) -> settlement_pb2.Hand:
    """Plain hands of every preset (fouls, jokers, too many players, repeated cards and ids),
    and the hands the message API reads (Fantasyland tiers, overrides, other spellings)."""
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(request_hands())
    if kind == 1:
        hand = draw(plain_hands())
        if draw(st.booleans()):
            player = hand.players.add()
            player.board.CopyFrom(draw(boards()))
            player.fantasyland_cards = draw(st.sampled_from([0, 13, 14, 15, 16, 17, 18]))
        return hand
    return _preset_hand(draw, draw(st.sampled_from(sorted(PRESETS))))


@settings(max_examples=80)
@given(st.lists(batch_hands(), max_size=8))
def test_settle_hands_from_its_bytes_answers_as_settle_hand_does(
    stub: RulesServiceStub, hands: list[settlement_pb2.Hand]
) -> None:
    results = stub.SettleHands(pb.SettleHandsRequest(hands=hands)).results
    assert len(results) == len(hands)
    for hand, result in zip(hands, results, strict=True):
        if convert.read_wire(hand.SerializeToString()) is not None:
            # the bytes path; the message path of the same hand gives the same bytes
            settled = None
            try:
                settled = convert.settle_hand(hand, "")
            except OfcError as exc:
                assert result.WhichOneof("result") == "error"
                assert (result.error.reason, result.error.field) == (exc.reason, exc.field)
            if settled is not None:
                assert result.SerializeToString() == _reference(settled)
        try:
            single = stub.SettleHand(pb.SettleHandRequest(hand=hand))
        except grpc.RpcError as exc:
            error = wire_error(exc)
            assert (result.error.reason, "hand." + result.error.field) == (
                error.reason,
                error.info_field,
            )
            continue
        assert result.settlement.SerializeToString() == single.settlement.SerializeToString()


def _refusal(channel: grpc.Channel, request: bytes) -> tuple[grpc.StatusCode, str, str]:
    call = channel.unary_unary("/ofcpoker.v1.RulesService/SettleHands")  # bytes in, bytes out
    try:
        call(request)
    except grpc.RpcError as exc:
        error = wire_error(exc)
        return exc.code(), error.reason, exc.details() or ""
    raise AssertionError("not refused")


def test_request_bytes_that_do_not_decode_are_refused_as_the_parser_refuses_them(
    channel: grpc.Channel,
) -> None:
    plain = settlement_pb2.Hand(
        players=[
            settlement_pb2.PlayerHand(
                board=cards_pb2.Board(top=c[:3], middle=c[3:8], bottom=c[8:]), player_id=pid
            )
            for c, pid in ((CARD_CODES[:13], "a"), (CARD_CODES[13:26], "b"))
        ]
    ).SerializeToString()
    bad_id = plain.replace(b"\x0a\x01a", b"\x0a\x01\xff")  # a player id of invalid UTF-8
    for request in (
        outcome_wire.repeated_field(1, [plain, bad_id]),
        outcome_wire.repeated_field(1, [plain, plain[:-3]]),  # a hand cut short
        outcome_wire.repeated_field(1, [plain]) + b"\x0a\x05ab",  # a field past the end
        b"\x0a" + b"\x80" * 10 + b"\x00",  # a length of more varint bytes than 32 bits take
    ):
        try:
            pb.SettleHandsRequest.FromString(request)
        except Exception as exc:  # what the parser says
            expected = f"the request does not decode: {type(exc).__name__}: {exc}"
        else:
            raise AssertionError("the parser reads it")
        code, reason, details = _refusal(channel, request)
        assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED_REQUEST")
        assert expected in details


def test_more_hands_than_a_batch_holds_are_refused_from_the_bytes_too(
    channel: grpc.Channel,
) -> None:
    hand = settlement_pb2.Hand(players=[settlement_pb2.PlayerHand()]).SerializeToString()
    request = outcome_wire.repeated_field(1, [hand] * 1001)
    code, reason, _ = _refusal(channel, request)
    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "BATCH_TOO_LARGE")
