"""Random and malformed requests to every RPC: OK or a documented error, never INTERNAL/UNKNOWN.

Messages are built from strategies that mix valid card codes with junk tokens, unknown enum
numbers, random rulesets and overrides, random seeds; raw random bytes go to every method
(including the stream); oversized messages hit the server's size limit. Every answer must be
OK, INVALID_ARGUMENT with a reason listed in errors.proto, or RESOURCE_EXHAUSTED (size), and
the server must still report SERVING afterwards. Aimed values in every field of every RPC of
the three services, on both stores, are in test_fuzz_fields.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import given, settings
from hypothesis import strategies as st
from ofc.cards import CARD_CODES
from ofc.rulesets import PRESETS
from ofcpoker.v1 import cards_pb2, ruleset_pb2, settlement_pb2
from ofcpoker.v1 import rules_service_pb2 as pb
from ofcpoker.v1.rules_service_pb2_grpc import RulesServiceStub

from tests.api.conftest import MAX_MESSAGE_BYTES
from tests.api.wire import wire_error

ERRORS_PROTO = Path(__file__).parents[2] / "protos/ofcpoker/v1/errors.proto"
DOCUMENTED_REASONS = frozenset(re.findall(r"^// \| ([A-Z_]+) *\|", ERRORS_PROTO.read_text(), re.M))
FUZZ = settings(max_examples=60)

# --- strategies -----------------------------------------------------------------------------
tokens = st.one_of(
    st.sampled_from(CARD_CODES),
    st.sampled_from(["10d", "a♠", "Q♥", "", " ", "Xx", "1", "♠", "As ", "\x00", "AAs", "Tt"]),
    st.text(max_size=6),
)
rows = st.lists(tokens, max_size=7)
enums = st.integers(min_value=-3, max_value=20)
uint32 = st.one_of(st.integers(0, 20), st.integers(0, 2**32 - 1))
names = st.one_of(st.sampled_from([*PRESETS, "", "nope", "Classic"]), st.text(max_size=70))
boards = st.builds(cards_pb2.Board, top=rows, middle=rows, bottom=rows)


@st.composite
def overrides(draw: st.DrawFn) -> ruleset_pb2.RulesetOverrides:
    o = ruleset_pb2.RulesetOverrides()
    for key in ("min_players", "max_players", "unit_value", "loss_cap", "stay_min_row_royalty",
                "stay_cards", "max_consecutive_fantasylands"):  # fmt: skip
        if draw(st.booleans()):
            setattr(o, key, draw(uint32))
    for key in ("royalties_to_row_winner_only", "button_moves_in_fantasyland"):
        if draw(st.booleans()):
            setattr(o, key, draw(st.booleans()))
    if draw(st.booleans()):
        o.name = draw(names)
    if draw(st.booleans()):
        for deal, place in draw(st.lists(st.tuples(uint32, uint32), max_size=10)):
            o.streets.streets.add(deal=deal, place=place)
    choice = draw(st.integers(0, 2))
    if choice == 1:
        o.royalty_table = draw(st.sampled_from(["standard", "ukrainian", "", "nope"]))
    elif choice == 2:
        for attr in ("bottom", "middle"):
            for category, points in draw(st.lists(st.tuples(enums, uint32), max_size=12)):
                getattr(o.royalties, attr).add(category=category, points=points)
        for attr in ("top_pair", "top_trips"):
            for rank, points in draw(st.lists(st.tuples(st.text(max_size=3), uint32), max_size=14)):
                getattr(o.royalties, attr).add(rank=rank, points=points)
    choice = draw(st.integers(0, 2))
    if choice == 1:
        o.scoring_scheme = draw(st.sampled_from(["1-6", "1-4", "2-4", "row-2", "", "9-9"]))
    elif choice == 2:
        o.scoring.row_value, o.scoring.scoop_bonus, o.scoring.majority_value = draw(
            st.tuples(uint32, uint32, uint32)
        )
    if draw(st.booleans()):
        o.fantasyland_entry.SetInParent()
        for category, rank, cards in draw(
            st.lists(st.tuples(enums, st.text(max_size=3), uint32), max_size=5)
        ):
            o.fantasyland_entry.entries.add(category=category, min_rank=rank, cards=cards)
    if draw(st.booleans()):
        o.stay_conditions.SetInParent()
        for row, category in draw(st.lists(st.tuples(enums, enums), max_size=5)):
            o.stay_conditions.conditions.add(row=row, category=category)
    return o


@st.composite
def rulesets(draw: st.DrawFn) -> ruleset_pb2.RulesetSpec | None:
    if draw(st.booleans()):
        return None
    spec = ruleset_pb2.RulesetSpec(preset=draw(names))
    if draw(st.booleans()):
        spec.overrides.CopyFrom(draw(overrides()))
    return spec


def _with_ruleset(message: Any, spec: ruleset_pb2.RulesetSpec | None) -> Any:
    if spec is not None:
        message.ruleset.CopyFrom(spec)
    return message


def _deal_from_deck(draw: st.DrawFn, players: int) -> list[cards_pb2.Board]:
    """Mostly-valid boards (distinct cards from one deck), sometimes damaged."""
    deck = draw(st.permutations(CARD_CODES))
    result = []
    for i in range(players):
        cards = list(deck[13 * i : 13 * i + 13])
        if draw(st.integers(0, 4)) == 0:
            cards[draw(st.integers(0, 12))] = draw(tokens)
        result.append(cards_pb2.Board(top=cards[:3], middle=cards[3:8], bottom=cards[8:]))
    return result


@st.composite
def dealt_boards(draw: st.DrawFn) -> cards_pb2.Board:
    return _deal_from_deck(draw, 1)[0]


@st.composite
def hands(draw: st.DrawFn) -> settlement_pb2.Hand:
    n = draw(st.integers(0, 5))
    boards_ = (
        _deal_from_deck(draw, min(n, 4))
        if draw(st.booleans())
        else draw(st.lists(boards, max_size=n))
    )
    h = settlement_pb2.Hand()
    for board in boards_:
        h.players.add(
            player_id=draw(st.one_of(st.just(""), st.text(max_size=70))),
            board=board,
            in_fantasyland=draw(st.booleans()),
            fantasyland_streak=draw(st.one_of(st.integers(0, 3), uint32)),
        )
    for a, b, units in draw(
        st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), uint32), max_size=3)
    ):
        h.pair_unit_values.add(a=a, b=b, unit_value=units)
    spec = draw(rulesets())
    if spec is not None:
        h.ruleset.CopyFrom(spec)
    return h


seeds_hex = st.one_of(st.binary(min_size=32, max_size=32).map(bytes.hex), st.text(max_size=80))


@st.composite
def derive_requests(draw: st.DrawFn) -> pb.DeriveDeckRequest:
    r = pb.DeriveDeckRequest(
        nonce=draw(st.integers(0, 2**64 - 1)), include_first_block=draw(st.booleans())
    )
    which = draw(st.integers(0, 2))
    if which == 1:
        r.server_seed_hex = draw(seeds_hex)
    elif which == 2:
        r.server_seed_bytes = draw(st.binary(max_size=40))
    if draw(st.booleans()):
        r.client_seed_text = draw(st.text(max_size=20))
    else:
        r.client_seed_bytes = draw(st.binary(max_size=20))
    return r


REQUESTS: dict[str, st.SearchStrategy[Any]] = {
    "EvaluateRow": st.builds(
        lambda cards, row, spec: _with_ruleset(pb.EvaluateRowRequest(cards=cards, row=row), spec),
        rows,
        enums,
        rulesets(),
    ),
    "ValidateBoard": st.builds(
        lambda board, spec, fl, streak: _with_ruleset(
            pb.ValidateBoardRequest(board=board, in_fantasyland=fl, fantasyland_streak=streak), spec
        ),
        st.one_of(boards, dealt_boards()),
        rulesets(),
        st.booleans(),
        uint32,
    ),
    "SettleHand": st.builds(lambda h: pb.SettleHandRequest(hand=h), hands()),
    "SettleHands": st.builds(
        lambda hs: pb.SettleHandsRequest(hands=hs), st.lists(hands(), max_size=4)
    ),
    "ListPresets": st.just(pb.ListPresetsRequest()),
    "ResolveRuleset": st.builds(
        lambda spec: _with_ruleset(pb.ResolveRulesetRequest(), spec), rulesets()
    ),
    "DeriveDeck": derive_requests(),
    "VerifyCommitment": st.builds(
        lambda seed, commitment: pb.VerifyCommitmentRequest(
            server_seed_hex=seed, commitment=commitment
        ),
        seeds_hex,
        st.one_of(st.text(max_size=70), st.binary(min_size=32, max_size=32).map(bytes.hex)),
    ),
}
METHODS = [*REQUESTS, "SettleHandsStream"]
DOCUMENTED_CODES = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED}


def expect_documented(call: Callable[[], Any]) -> None:
    try:
        call()
    except grpc.RpcError as error:
        assert error.code() in DOCUMENTED_CODES, (error.code(), error.details())
        if error.code() == grpc.StatusCode.INVALID_ARGUMENT:
            assert wire_error(error).reason in DOCUMENTED_REASONS, error.details()


def assert_serving(channel: grpc.Channel) -> None:
    health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
    assert health.status == health_pb2.HealthCheckResponse.SERVING


# --- tests ----------------------------------------------------------------------------------
def test_documented_reasons_cover_the_error_table() -> None:
    from ofc_service.api.errors import REASON_CODES, Code

    listed = {reason for reason, code in REASON_CODES.items() if code != Code.FAILED_PRECONDITION}
    assert listed - {"OFC_ERROR"} <= DOCUMENTED_REASONS
    assert "ILLEGAL_ACTION" in DOCUMENTED_REASONS


@pytest.mark.parametrize("method", list(REQUESTS))
def test_random_requests_get_ok_or_a_documented_error(
    stub: RulesServiceStub, channel: grpc.Channel, method: str
) -> None:
    @FUZZ
    @given(request=REQUESTS[method])
    def check(request: Any) -> None:
        expect_documented(lambda: getattr(stub, method)(request))

    check()
    assert_serving(channel)


@given(
    requests=st.lists(
        st.builds(
            lambda i, h: pb.SettleHandsStreamRequest(hand_id=i, hand=h),
            st.text(max_size=140),
            hands(),
        ),
        max_size=4,
    )
)
@FUZZ
def test_random_streams_answer_every_hand(stub: RulesServiceStub, requests: list[Any]) -> None:
    responses = list(stub.SettleHandsStream(iter(requests)))
    assert len(responses) == len(requests)
    for response in responses:
        outcome = response.outcome
        assert (
            outcome.WhichOneof("result") == "settlement"
            or outcome.error.reason in DOCUMENTED_REASONS
        )


@pytest.mark.parametrize("method", METHODS)
def test_random_bytes_to_every_method(channel: grpc.Channel, method: str) -> None:
    path = f"/ofcpoker.v1.RulesService/{method}"
    if method == "SettleHandsStream":
        raw_stream = channel.stream_stream(path)

        @FUZZ
        @given(chunks=st.lists(st.binary(max_size=200), max_size=3))
        def check_stream(chunks: list[bytes]) -> None:
            expect_documented(lambda: list(raw_stream(iter(chunks))))

        check_stream()
    else:
        raw = channel.unary_unary(path)

        @FUZZ
        @given(data=st.binary(max_size=300))
        def check(data: bytes) -> None:
            expect_documented(lambda: raw(data))

        check()
    assert_serving(channel)


@pytest.mark.parametrize("method", METHODS)
def test_oversized_messages_are_resource_exhausted(channel: grpc.Channel, method: str) -> None:
    # A valid encoding of field 1 (a string or bytes in every request) that is too large.
    size = MAX_MESSAGE_BYTES + 1024
    payload = b"\x0a" + _varint(size) + b"A" * size
    path = f"/ofcpoker.v1.RulesService/{method}"
    call: Callable[[], Any]
    if method == "SettleHandsStream":
        call = lambda: list(channel.stream_stream(path)(iter([payload])))  # noqa: E731
    else:
        call = lambda: channel.unary_unary(path)(payload)  # noqa: E731
    with pytest.raises(grpc.RpcError) as caught:
        call()
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert_serving(channel)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)
