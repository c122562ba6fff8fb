"""SolveFantasyland over a real channel: the same answer as the core solver, and every bad
input refused with its reason and field (never INTERNAL)."""

from __future__ import annotations

import random

import grpc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ofc.cards import CARD_CODES, card_codes, parse_cards
from ofc.rulesets import PRESETS, ruleset_from_dict
from ofc.solver import DEFAULT_FANTASYLAND_VALUE, FantasylandSolution, solve_fantasyland
from ofc_client import FantasylandSet, InvalidRequestError, OfcClient
from ofc_service.api.errors import DOMAIN
from ofc_service.server.background import BackgroundServer
from ofcpoker.v1 import rules_service_pb2 as pb
from ofcpoker.v1.rules_service_pb2_grpc import RulesServiceStub

from tests.api.test_fuzz import DOCUMENTED_REASONS
from tests.api.wire import wire_error

QUEENS = "Qc Qd Qh 9s 8h 7d 6c 5s Ac Kc Tc 4c 2c"  # the solver's own doctest hand
BROADWAY = "As Ks Qs Js Ts 9h 9d 9c 4c 4d 7h 2s 3h Ad"


def request(
    cards: str | list[str],
    *,
    preset: str = "",
    in_fantasyland: bool = False,
    value: int | None = None,
    streak: int | None = None,
) -> pb.SolveFantasylandRequest:
    message = pb.SolveFantasylandRequest(
        cards=cards.split() if isinstance(cards, str) else cards, in_fantasyland=in_fantasyland
    )
    if preset:
        message.ruleset.preset = preset
    if value is not None:
        message.fantasyland_value = value
    if streak is not None:
        message.fantasyland_streak = streak
    return message


def rows(response: pb.SolveFantasylandResponse) -> tuple[list[str], ...]:
    b = response.board
    return list(b.top), list(b.middle), list(b.bottom), list(response.discards)


def local_rows(s: FantasylandSolution) -> tuple[list[str], ...]:
    return card_codes(s.top), card_codes(s.middle), card_codes(s.bottom), card_codes(s.discards)


def assert_same(response: pb.SolveFantasylandResponse, s: FantasylandSolution) -> None:
    assert rows(response) == local_rows(s)
    assert (response.royalties, response.fantasyland_next, response.objective) == (
        s.royalties,
        s.fantasyland_next,
        s.objective,
    )


# --- answers -------------------------------------------------------------------------------
def test_trips_on_top_stay_in_fantasyland(stub: RulesServiceStub) -> None:
    response = stub.SolveFantasyland(request(QUEENS, in_fantasyland=True))
    assert rows(response) == (
        ["Qh", "Qd", "Qc"],
        ["9s", "8h", "7d", "6c", "5s"],
        ["Ac", "Kc", "Tc", "4c", "2c"],
        [],
    )
    # 20 (QQQ on top) + 4 (middle straight) + 4 (bottom flush), + 10 for staying in.
    assert (response.royalties, response.fantasyland_next, response.objective) == (28, True, 38)


def test_fourteen_cards_one_discard(stub: RulesServiceStub) -> None:
    response = stub.SolveFantasyland(request(BROADWAY, in_fantasyland=True))
    assert rows(response) == (
        ["Ad", "7h", "3h"],
        ["9h", "9d", "9c", "4d", "4c"],
        ["As", "Ks", "Qs", "Js", "Ts"],
        ["2s"],
    )
    # 25 (royal flush) + 12 (middle full house); a full house in the middle stays in.
    assert (response.royalties, response.fantasyland_next, response.objective) == (37, True, 47)


def test_fantasyland_value_zero_is_royalties_only(stub: RulesServiceStub) -> None:
    response = stub.SolveFantasyland(request(BROADWAY, in_fantasyland=True, value=0))
    assert (response.royalties, response.objective) == (37, 37)
    unset = stub.SolveFantasyland(request(BROADWAY, in_fantasyland=True))
    assert unset.objective == 37 + DEFAULT_FANTASYLAND_VALUE


def test_a_streak_at_the_cap_cannot_stay(stub: RulesServiceStub) -> None:
    message = request(QUEENS, in_fantasyland=True, streak=1)
    message.ruleset.overrides.max_consecutive_fantasylands = 1
    response = stub.SolveFantasyland(message)
    capped = ruleset_from_dict({"max_consecutive_fantasylands": 1}, base=PRESETS["classic"])
    local = solve_fantasyland(
        parse_cards(QUEENS), capped, in_fantasyland=True, fantasyland_streak=1
    )
    assert not response.fantasyland_next
    assert response.objective == response.royalties
    assert_same(response, local)
    # Unset (or 0) means this is the first Fantasyland hand: under the cap of 2 it stays.
    message.ClearField("fantasyland_streak")
    message.ruleset.overrides.max_consecutive_fantasylands = 2
    assert stub.SolveFantasyland(message).fantasyland_next


@pytest.mark.parametrize("size", [13, 14, 15, 16, 17])
@pytest.mark.parametrize("preset", list(PRESETS))
def test_random_hands_match_the_core_solver(stub: RulesServiceStub, preset: str, size: int) -> None:
    rng = random.Random(f"{preset}-{size}")
    for k in range(3):
        codes = rng.sample(CARD_CODES, size)
        in_fantasyland = k != 1
        value = (None, 0, 25)[k]
        response = stub.SolveFantasyland(
            request(codes, preset=preset, in_fantasyland=in_fantasyland, value=value)
        )
        local = solve_fantasyland(
            parse_cards(" ".join(codes)),
            PRESETS[preset],
            in_fantasyland=in_fantasyland,
            fantasyland_value=DEFAULT_FANTASYLAND_VALUE if value is None else value,
            fantasyland_streak=1 if in_fantasyland else 0,
        )
        assert_same(response, local)


def test_other_spellings_of_cards_are_read(stub: RulesServiceStub) -> None:
    spelled = "q♣ QD Qh 9s 8h 7d 6c 5s A♣ Kc 10c 4c 2c"
    response = stub.SolveFantasyland(request(spelled, in_fantasyland=True))
    assert response.board.top == ["Qh", "Qd", "Qc"] and response.objective == 38


# --- errors --------------------------------------------------------------------------------
THIRTEEN = QUEENS.split()
SEVENTEEN = [*THIRTEEN, "As", "Ks", "Qs", "Js"]
INVALID = grpc.StatusCode.INVALID_ARGUMENT


def _unknown_ruleset() -> pb.SolveFantasylandRequest:
    return request(THIRTEEN, preset="chinese-checkers")


def _bad_override() -> pb.SolveFantasylandRequest:
    message = request(THIRTEEN)
    message.ruleset.overrides.stay_cards = 99
    return message


ERROR_CASES = [
    ("12 cards", request(THIRTEEN[:12]), "INVALID_INPUT", "cards"),
    ("18 cards", request([*SEVENTEEN, "Ah"]), "INVALID_INPUT", "cards"),
    ("no cards", request([]), "INVALID_INPUT", "cards"),
    ("a huge list", request(["As"] * 5000), "INVALID_INPUT", "cards"),
    ("duplicate", request([*THIRTEEN[:12], "Qd"]), "DUPLICATE_CARD", "cards[12]"),
    ("duplicate spelled", request([*THIRTEEN[:12], "q♦"]), "DUPLICATE_CARD", "cards[12]"),
    ("bad code", request([*THIRTEEN[:5], "Xx", *THIRTEEN[6:]]), "INVALID_CARD", "cards[5]"),
    ("empty code", request(["", *THIRTEEN[1:]]), "INVALID_CARD", "cards[0]"),
    ("long code", request([*THIRTEEN[:12], "A" * 500]), "INVALID_CARD", "cards[12]"),
    ("no such joker", request([*THIRTEEN[:3], "X1", *THIRTEEN[4:]]), "INVALID_CARD", "cards[3]"),
    ("unknown ruleset", _unknown_ruleset(), "UNKNOWN_RULESET", "ruleset.preset"),
    ("bad override", _bad_override(), "INVALID_RULESET", "ruleset.overrides.stay_cards"),
    ("value too big", request(THIRTEEN, value=10_001), "INVALID_INPUT", "fantasyland_value"),
    ("streak too big", request(THIRTEEN, streak=1001), "INVALID_INPUT", "fantasyland_streak"),
]


@pytest.mark.parametrize(
    ("name", "message", "reason", "field"), ERROR_CASES, ids=[c[0] for c in ERROR_CASES]
)
def test_bad_requests_name_the_reason_and_field(
    stub: RulesServiceStub, name: str, message: pb.SolveFantasylandRequest, reason: str, field: str
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        stub.SolveFantasyland(message)
    error = wire_error(caught.value)
    assert (error.code, error.reason, error.domain) == (INVALID, reason, DOMAIN)
    assert error.info_field == field
    assert error.violations == (field,)


def test_the_limits_themselves_are_accepted(stub: RulesServiceStub) -> None:
    response = stub.SolveFantasyland(request(SEVENTEEN, value=10_000, streak=1000))
    assert len(response.discards) == 4


tokens = st.one_of(st.sampled_from(CARD_CODES), st.sampled_from(["10d", "a♠", "", "Xx", "1"]))


@settings(max_examples=40, deadline=None)
@given(
    cards=st.lists(tokens, min_size=11, max_size=19),
    preset=st.sampled_from(["", *PRESETS, "nope"]),
    in_fantasyland=st.booleans(),
    value=st.one_of(st.none(), st.integers(0, 20_000)),
    streak=st.one_of(st.none(), st.integers(0, 2000)),
)
def test_random_requests_get_an_answer_or_a_documented_error(
    stub: RulesServiceStub,
    cards: list[str],
    preset: str,
    in_fantasyland: bool,
    value: int | None,
    streak: int | None,
) -> None:
    message = request(
        cards, preset=preset, in_fantasyland=in_fantasyland, value=value, streak=streak
    )
    try:
        response = stub.SolveFantasyland(message)
    except grpc.RpcError as caught:
        error = wire_error(caught)
        assert error.code == INVALID and error.reason in DOCUMENTED_REASONS, caught.details()
        return
    placed = [*response.board.top, *response.board.middle, *response.board.bottom]
    assert (len(placed), len(placed) + len(response.discards)) == (13, len(cards))


# --- the typed client ----------------------------------------------------------------------
def test_the_client_returns_the_solution(server: BackgroundServer) -> None:
    with OfcClient(server.address) as client:
        solved = client.solve_fantasyland(BROADWAY, ruleset="pineapple", in_fantasyland=True)
        assert solved == FantasylandSet(
            top=("Ad", "7h", "3h"),
            middle=("9h", "9d", "9c", "4d", "4c"),
            bottom=("As", "Ks", "Qs", "Js", "Ts"),
            discards=("2s",),
            royalties=37,
            fantasyland_next=True,
            objective=47,
            fantasyland_next_cards=14,
        )
        with pytest.raises(InvalidRequestError) as caught:
            client.solve_fantasyland(THIRTEEN[:12])
        assert (caught.value.reason, caught.value.field) == ("INVALID_INPUT", "cards")
        with pytest.raises(InvalidRequestError) as caught:
            client.solve_fantasyland(THIRTEEN, fantasyland_value=-1)
        assert (caught.value.reason, caught.value.field) == ("INVALID_INPUT", "fantasyland_value")
