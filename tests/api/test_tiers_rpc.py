"""Fantasyland tiers and the top high-card royalty over a real channel: the tier crosses the
API as ``fantasyland_cards`` (SettleHand, ValidateBoard), ``fantasyland_next_cards`` and
per-size ``fantasyland_values`` (SolveFantasyland); rulesets carry tiers, a stay condition's
rank and a top high-card table (ListPresets, ResolveRuleset, overrides); bad input is
INVALID_INPUT or INVALID_RULESET with its field, never INTERNAL."""

from __future__ import annotations

import grpc
import pytest
from ofc.cards import parse_cards
from ofc.rulesets import PRESETS
from ofc.solver import solve_fantasyland
from ofc_client import OfcClient, PlayerInput
from ofc_service.api.convert import ruleset_to_proto
from ofc_service.server.background import BackgroundServer
from ofcpoker.v1 import cards_pb2, ruleset_pb2, settlement_pb2
from ofcpoker.v1 import rules_service_pb2 as pb
from ofcpoker.v1.rules_service_pb2_grpc import RulesServiceStub

from tests.api.wire import board, hand, wire_error

ACES = "Ac Ad 2c / 3h 3d 5s 5c 7d / Ts Js Qs Ks 2s"  # AA top, two pair, flush
OTHER = "Kd 3c 2d / 5h 5d 9d 8h 4d / 7c 7h Qd Jh 4s"


def settle_keep(stub: RulesServiceStub, **player0: object) -> settlement_pb2.PlayerResult:
    message = hand(ACES, OTHER, preset="progressive-pineapple-keep")
    for key, value in player0.items():
        setattr(message.players[0], key, value)
    response: pb.SettleHandResponse = stub.SettleHand(pb.SettleHandRequest(hand=message))
    return response.settlement.players[0]


@pytest.mark.parametrize(
    ("player0", "expected"),
    [
        ({"fantasyland_cards": 16}, (True, 16)),  # AA on top keeps a 16-card Fantasyland
        ({"fantasyland_cards": 14}, (True, 14)),  # and a 14-card one, at 14
        ({"fantasyland_cards": 17}, (False, 0)),  # a 17-card one needs trips or quads
        ({"in_fantasyland": True}, (True, 14)),  # the yes/no form: the smallest tier
        ({"in_fantasyland": True, "fantasyland_cards": 16}, (True, 16)),
        ({}, (True, 16)),  # entry: AA on top earns 16
    ],
)
def test_settle_hand_takes_the_tier(
    stub: RulesServiceStub, player0: dict[str, object], expected: tuple[bool, int]
) -> None:
    outcome = settle_keep(stub, **player0).board.fantasyland
    assert (outcome.qualifies, outcome.cards) == expected


def test_validate_board_takes_the_tier_and_refuses_a_bad_one(stub: RulesServiceStub) -> None:
    spec = ruleset_pb2.RulesetSpec(preset="progressive-pineapple-keep")
    request = pb.ValidateBoardRequest(board=board(ACES), ruleset=spec, fantasyland_cards=16)
    outcome = stub.ValidateBoard(request).assessment.fantasyland
    assert (outcome.qualifies, outcome.cards) == (True, 16)
    for bad, field in [(12, "fantasyland_cards"), (18, "fantasyland_cards")]:
        request.fantasyland_cards = bad
        with pytest.raises(grpc.RpcError) as caught:
            stub.ValidateBoard(request)
        error = wire_error(caught.value)
        assert (error.code, error.reason, error.info_field) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_INPUT",
            field,
        )
    message = hand(ACES, OTHER, preset="progressive-pineapple-keep")
    message.players[1].fantasyland_cards = 9
    with pytest.raises(grpc.RpcError) as caught:
        stub.SettleHand(pb.SettleHandRequest(hand=message))
    assert wire_error(caught.value).info_field == "hand.players[1].fantasyland_cards"


def test_a_top_high_card_royalty_over_the_wire(stub: RulesServiceStub) -> None:
    top = "As Kc Qc / 3h 3d 5s 5c 7d / Ts Js Qs Ks 2s"
    response = stub.SettleHand(
        pb.SettleHandRequest(hand=hand(top, OTHER, preset="pineapple-top-high-card"))
    )
    royalties = response.settlement.players[0].board.royalties
    assert (royalties.top, royalties.middle, royalties.bottom) == (1, 0, 4)
    plain = stub.SettleHand(pb.SettleHandRequest(hand=hand(top, OTHER, preset="pineapple")))
    assert plain.settlement.players[0].board.royalties.top == 0
    # any top category in a custom table: an override
    table = ruleset_pb2.RoyaltyTable(
        name="house", top_high_card=[ruleset_pb2.RankPoints(rank="A", points=2)]
    )
    spec = ruleset_pb2.RulesetSpec(
        preset="pineapple", overrides=ruleset_pb2.RulesetOverrides(royalties=table)
    )
    row = pb.EvaluateRowRequest(
        cards=["As", "Kc", "Qc"], row=cards_pb2.ROW_POSITION_TOP, ruleset=spec
    )
    assert stub.EvaluateRow(row).royalty == 2


def test_list_presets_shows_every_option(stub: RulesServiceStub) -> None:
    presets = {p.name: p for p in stub.ListPresets(pb.ListPresetsRequest()).presets}
    assert list(presets) == list(PRESETS)
    keep = presets["progressive-pineapple-keep"]
    assert [(t.cards, t.stay_cards) for t in keep.fantasyland_tiers] == [
        (14, 14),
        (15, 15),
        (16, 16),
        (17, 17),
    ]
    assert [(c.row, c.category, c.min_rank) for c in keep.fantasyland_tiers[2].stay_conditions] == [
        (cards_pb2.ROW_POSITION_TOP, cards_pb2.HAND_CATEGORY_PAIR, "A"),
        (cards_pb2.ROW_POSITION_BOTTOM, cards_pb2.HAND_CATEGORY_QUADS, ""),
    ]
    high = presets["pineapple-top-high-card"].royalties.top_high_card
    assert len(high) == 13 and {r.points for r in high} == {1}
    assert keep == ruleset_to_proto(PRESETS["progressive-pineapple-keep"])


def test_tier_overrides_and_their_errors(stub: RulesServiceStub) -> None:
    tier = ruleset_pb2.FantasylandTier(
        cards=14,
        stay_conditions=[
            ruleset_pb2.StayCondition(
                row=cards_pb2.ROW_POSITION_TOP,
                category=cards_pb2.HAND_CATEGORY_PAIR,
                min_rank="K",
            )
        ],
        stay_cards=15,
    )
    overrides = ruleset_pb2.RulesetOverrides(
        fantasyland_tiers=ruleset_pb2.FantasylandTierList(tiers=[tier])
    )
    spec = ruleset_pb2.RulesetSpec(preset="pineapple", overrides=overrides)
    resolved = stub.ResolveRuleset(pb.ResolveRulesetRequest(ruleset=spec)).ruleset
    assert list(resolved.fantasyland_tiers) == [tier]
    for index, field in [(0, "fantasyland_tiers"), (1, "min_rank")]:
        broken = ruleset_pb2.FantasylandTier()
        broken.CopyFrom(tier)
        if index == 0:
            broken.stay_cards = 18
        else:
            broken.stay_conditions[0].min_rank = "X"
        bad = ruleset_pb2.RulesetOverrides(
            fantasyland_tiers=ruleset_pb2.FantasylandTierList(tiers=[broken])
        )
        request = pb.ResolveRulesetRequest(
            ruleset=ruleset_pb2.RulesetSpec(preset="pineapple", overrides=bad)
        )
        with pytest.raises(grpc.RpcError) as caught:
            stub.ResolveRuleset(request)
        error = wire_error(caught.value)
        assert (error.code, error.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_RULESET")
        assert (
            error.info_field.startswith("ruleset.overrides.fantasyland_tiers")
            and field in error.info_field
        )


SIXTEEN = "As Ad 9s 9h 9d 9c Ks Qs Js 2h 3h 4c 6d 7c 8h Td"


def test_solve_fantasyland_prices_each_next_size(stub: RulesServiceStub) -> None:
    spec = ruleset_pb2.RulesetSpec(preset="progressive-pineapple-keep")
    request = pb.SolveFantasylandRequest(
        cards=SIXTEEN.split(),
        ruleset=spec,
        in_fantasyland=True,
        fantasyland_values=[pb.FantasylandValue(cards=16, value=18)],
    )
    response = stub.SolveFantasyland(request)
    core = solve_fantasyland(
        parse_cards(SIXTEEN),
        PRESETS["progressive-pineapple-keep"],
        fantasyland_value={13: 10, 14: 10, 15: 10, 16: 18, 17: 10},
    )
    assert (response.fantasyland_next, response.fantasyland_next_cards) == (True, 16)
    assert response.objective == core.objective == core.royalties + 18
    for entries, field in [
        ([pb.FantasylandValue(cards=12, value=1)], "fantasyland_values[0].cards"),
        (
            [pb.FantasylandValue(cards=16, value=1), pb.FantasylandValue(cards=16, value=2)],
            "fantasyland_values[1].cards",
        ),
        ([pb.FantasylandValue(cards=16, value=10_001)], "fantasyland_values[0].value"),
    ]:
        del request.fantasyland_values[:]
        request.fantasyland_values.extend(entries)
        with pytest.raises(grpc.RpcError) as caught:
            stub.SolveFantasyland(request)
        error = wire_error(caught.value)
        assert (error.reason, error.info_field) == ("INVALID_INPUT", field)


def test_the_python_client_carries_the_tier(server: BackgroundServer) -> None:
    with OfcClient(server.address) as client:
        settled = client.settle_hand(
            [PlayerInput(ACES, fantasyland_cards=16), PlayerInput(OTHER)],
            ruleset="progressive-pineapple-keep",
        )
        assert settled.players[0].board.fantasyland.cards == 16
        solved = client.solve_fantasyland(
            SIXTEEN,
            ruleset="progressive-pineapple-keep",
            in_fantasyland=True,
            fantasyland_values={16: 18},
        )
        assert (solved.fantasyland_next_cards, solved.objective - solved.royalties) == (16, 18)
