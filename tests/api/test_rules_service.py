"""Every RulesService method over a real channel, checked against rules.md and the core."""

from __future__ import annotations

import uuid

import grpc
import pytest
from ofc.rulesets import PRESETS, resolve_ruleset
from ofc.scoring import Board, settle
from ofc.shuffle import commitment
from ofc_service.api.convert import ruleset_to_proto
from ofcpoker.v1 import cards_pb2, ruleset_pb2, settlement_pb2
from ofcpoker.v1 import rules_service_pb2 as pb
from ofcpoker.v1 import table_service_pb2 as table_pb
from ofcpoker.v1.rules_service_pb2_grpc import RulesServiceStub
from ofcpoker.v1.table_service_pb2_grpc import TableServiceStub

from tests.api.wire import (
    EXAMPLE_1_B,
    EXAMPLE_2_B,
    EXAMPLE_3_FOULED,
    EXAMPLE_4,
    EXAMPLE_5_A,
    EXAMPLE_5_B,
    EXAMPLE_A,
    board,
    hand,
)

SEED_HEX = bytes(range(32)).hex()
VECTOR_COMMITMENT = "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd"
VECTOR_BLOCK_0 = "acbcbada65c670e7e5fbcd883f37913b3dbad66fdb57892d906a7028660462e5"
VECTOR_DECK = [
    "Qs",
    "6d",
    "Ad",
    "Td",
    "6s",
    "4s",
    "8s",
    "Kc",
    "Kh",
    "7d",
    "8d",
    "Ts",
    "Jc",
    "4d",
    "Js",
    "5c",
    "5s",
    "7h",
    "Ac",
    "9s",
    "Kd",
    "9d",
    "Ah",
    "3s",
    "9c",
    "2s",
    "3h",
    "As",
    "2d",
    "Jd",
    "3d",
    "7s",
    "3c",
    "2c",
    "Tc",
    "Qc",
    "4c",
    "8h",
    "Th",
    "4h",
    "5h",
    "Qd",
    "6h",
    "8c",
    "5d",
    "7c",
    "Jh",
    "Ks",
    "Qh",
    "6c",
    "9h",
    "2h",
]


# --- SettleHand: the worked examples of rules.md ---------------------------------------------
@pytest.mark.parametrize(
    ("a", "b", "a_points"),
    [
        (EXAMPLE_A, EXAMPLE_1_B, 8),  # 3 rows + 3 scoop + 2 royalty
        (EXAMPLE_5_A, EXAMPLE_5_B, 6),
        # Example 3's fouled board against a legal one that shares no card with it.
        (EXAMPLE_3_FOULED, "Ks 3c 2d / 5c 5d 9d 8h 4d / 7c 7h Qd Js 4s", -6),
    ],
    ids=["example-1", "example-5", "fouled"],
)
def test_worked_examples_settle_over_the_wire(
    stub: RulesServiceStub, a: str, b: str, a_points: int
) -> None:
    response = stub.SettleHand(pb.SettleHandRequest(hand=hand(a, b)))
    assert [p.points for p in response.settlement.players] == [a_points, -a_points]


@pytest.mark.parametrize("b", [EXAMPLE_2_B, EXAMPLE_3_FOULED])
def test_examples_2_and_3_share_cards_with_a_so_the_server_refuses_them(
    stub: RulesServiceStub, b: str
) -> None:
    # rules.md examples 2 and 3 illustrate scoring, but each B board repeats one of A's cards
    # (6d, Ac): one deck cannot deal them, and the API says so instead of settling.
    response = stub.SettleHands(pb.SettleHandsRequest(hands=[hand(EXAMPLE_A, b)]))
    assert response.results[0].error.reason == "DUPLICATE_CARD"


def test_example_1_full_breakdown(stub: RulesServiceStub) -> None:
    s = stub.SettleHand(
        pb.SettleHandRequest(hand=hand(EXAMPLE_A, EXAMPLE_1_B, ids=("a", "b")))
    ).settlement
    assert s.ruleset == "classic"
    a, b = s.players
    assert (a.player_id, a.index, a.points, a.units) == ("a", 0, 8, 8)
    assert (b.player_id, b.index, b.points, b.units) == ("b", 1, -8, -8)
    assert a.board.royalties == settlement_pb2.Royalties(top=0, middle=0, bottom=2, total=2)
    assert a.board.bottom.category == cards_pb2.HAND_CATEGORY_STRAIGHT
    assert a.board.bottom.name == "straight, nine high"
    assert a.board.middle.ranks == ["6", "9", "8", "4"]
    assert not a.board.fouled and not a.board.fantasyland.qualifies
    (pair,) = s.pairs
    assert (pair.a, pair.b, pair.top, pair.middle, pair.bottom, pair.scoop) == (0, 1, 1, 1, 1, 1)
    assert (pair.row_points, pair.royalties, pair.points, pair.capped_points) == (6, 2, 8, 8)
    assert (pair.unit_value, pair.units, pair.a_fouled, pair.b_fouled) == (1, 8, False, False)


def test_settlement_matches_the_core_with_overrides_pair_units_and_fantasyland(
    stub: RulesServiceStub,
) -> None:
    boards = (
        "Qc Qd 2c / Th Jh Qh Kh Ah / Ts Js Qs Ks As",
        "Kd 3c 4d / 5c 5d 9d 8h 4h / 7c 7h Jd 8c 4s",
        "6s 6c 3s / 9c 9h 9s 5h 2h / 7d 8d 6d 3d 2d",
    )
    message = hand(*boards)
    message.ruleset.CopyFrom(
        ruleset_pb2.RulesetSpec(
            preset="classic",
            overrides=ruleset_pb2.RulesetOverrides(loss_cap=30, scoring_scheme="2-4"),
        )
    )
    message.players[2].in_fantasyland = True
    message.pair_unit_values.append(settlement_pb2.PairUnitValue(a=0, b=2, unit_value=20))
    got = stub.SettleHand(pb.SettleHandRequest(hand=message)).settlement

    ruleset = resolve_ruleset({"preset": "classic", "loss_cap": 30, "scoring": "2-4"})
    want = settle(
        [Board.parse(b) for b in boards],
        ruleset,
        in_fantasyland=[False, False, True],
        fantasyland_streaks=[0, 0, 1],
        pair_units={(0, 2): 20},
    )
    assert got.ruleset == want.ruleset == "classic+custom"
    assert [(p.points, p.units) for p in got.players] == [(p.points, p.units) for p in want.players]
    assert sum(p.points for p in got.players) == 0
    assert [
        (p.a, p.b, (p.top, p.middle, p.bottom), p.scoop, p.row_points, p.royalties, p.points,
         p.capped_points, p.unit_value, p.units)
        for p in got.pairs
    ] == [
        (p.a, p.b, p.rows, p.scoop, p.row_points, p.royalties, p.points, p.capped_points,
         p.unit_value, p.units)
        for p in want.pairs
    ]  # fmt: skip
    assert [p.board.fantasyland.qualifies for p in got.players] == [
        p.fantasyland.qualifies for p in want.players
    ]


# --- EvaluateRow, ValidateBoard --------------------------------------------------------------
def test_evaluate_row_names_and_royalty(stub: RulesServiceStub) -> None:
    response = stub.EvaluateRow(
        pb.EvaluateRowRequest(cards=["Kh", "kd", "A♣"], row=cards_pb2.ROW_POSITION_TOP)
    )
    assert response.hand.category == cards_pb2.HAND_CATEGORY_PAIR
    assert response.hand.name == "pair of kings, ace kicker"
    assert list(response.hand.ranks) == ["K", "A"]
    assert response.royalty == 8  # KK on top
    plain = stub.EvaluateRow(pb.EvaluateRowRequest(cards=["Ks", "Kc", "Qd", "7h", "3c"]))
    assert plain.royalty == 0
    assert response.hand.value > plain.hand.value  # one scale: K-K-A beats K-K-Q-7-3


def test_validate_board_example_4_royalties_and_fantasyland(stub: RulesServiceStub) -> None:
    a = stub.ValidateBoard(pb.ValidateBoardRequest(board=board(EXAMPLE_4))).assessment
    assert not a.fouled
    assert a.royalties == settlement_pb2.Royalties(top=7, middle=50, bottom=25, total=82)
    assert a.fantasyland == settlement_pb2.FantasylandOutcome(qualifies=True, cards=13)
    assert a.middle.category == cards_pb2.HAND_CATEGORY_ROYAL_FLUSH


def test_validate_board_foul_and_fantasyland_stay(stub: RulesServiceStub) -> None:
    fouled = stub.ValidateBoard(pb.ValidateBoardRequest(board=board(EXAMPLE_3_FOULED))).assessment
    assert fouled.fouled and fouled.royalties.total == 0 and not fouled.fantasyland.qualifies
    # In Fantasyland, QQ on top no longer qualifies; the middle royal flush (>= full house) stays.
    request = pb.ValidateBoardRequest(
        board=board(EXAMPLE_4),
        in_fantasyland=True,
        ruleset=ruleset_pb2.RulesetSpec(preset="pineapple"),
    )
    stay = stub.ValidateBoard(request).assessment
    assert stay.fantasyland == settlement_pb2.FantasylandOutcome(qualifies=True, cards=14)


# --- batches and streams ---------------------------------------------------------------------
def test_settle_hands_one_bad_hand_does_not_fail_the_batch(stub: RulesServiceStub) -> None:
    bad = hand(EXAMPLE_A, EXAMPLE_A.replace("Ac", "Kh"))  # A's cards twice
    response = stub.SettleHands(
        pb.SettleHandsRequest(
            hands=[hand(EXAMPLE_A, EXAMPLE_1_B), bad, hand(EXAMPLE_5_A, EXAMPLE_5_B)]
        )
    )
    first, second, third = response.results
    assert [p.points for p in first.settlement.players] == [8, -8]
    assert second.WhichOneof("result") == "error"
    assert second.error.reason == "DUPLICATE_CARD"
    assert second.error.field == "players[1].board.top"
    assert second.error.code == 3  # INVALID_ARGUMENT
    assert [p.points for p in third.settlement.players] == [6, -6]


def test_a_player_id_that_is_not_printable_is_refused_in_a_batch_as_alone(
    stub: RulesServiceStub,
) -> None:
    # A player id is shown as it is in answers, logs and histories: printable only, as
    # JoinSeat's. Each way a batch reads a hand: its bytes (boards alone), the long way
    # (a Fantasyland field), and with pair unit values.
    plain, streak, paired = (hand(EXAMPLE_A, EXAMPLE_1_B) for _ in range(3))
    streak.players[1].fantasyland_streak = 1
    paired.pair_unit_values.add(a=0, b=1, unit_value=2)
    for bad_id in ("b\tb", "b\u202e", "b\x7f"):
        batch = []
        for message in (plain, streak, paired):
            message.players[1].player_id = bad_id
            batch.append(message)
        results = stub.SettleHands(pb.SettleHandsRequest(hands=batch)).results
        for result in results:
            assert (result.error.reason, result.error.field) == (
                "INVALID_INPUT",
                "players[1].player_id",
            )
    for message in (plain, streak, paired):  # a printable id, emoji and all, is settled
        message.players[1].player_id = "b\u00e9\U0001f0a1"
    results = stub.SettleHands(pb.SettleHandsRequest(hands=[plain, streak, paired])).results
    assert [[p.player_id for p in r.settlement.players] for r in results] == [
        ["", "b\u00e9\U0001f0a1"]
    ] * 3


def test_a_player_with_nothing_set_is_a_wrong_row_size_wherever_it_sits(
    stub: RulesServiceStub,
) -> None:
    # An empty PlayerHand is two bytes on the wire; last in the hand, the fast reader once
    # read past the end of the hand (INTERNAL instead of the client's mistake).
    empty_last = hand(EXAMPLE_A)
    empty_last.players.add()
    empty_first = settlement_pb2.Hand(players=[settlement_pb2.PlayerHand()])
    empty_first.players.add().CopyFrom(hand(EXAMPLE_A).players[0])
    for message in (empty_last, empty_first):
        seat = 1 if message is empty_last else 0
        with pytest.raises(grpc.RpcError) as refused:
            stub.SettleHand(pb.SettleHandRequest(hand=message))
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        (result,) = stub.SettleHands(pb.SettleHandsRequest(hands=[message])).results
        assert (result.error.reason, result.error.field) == (
            "WRONG_ROW_SIZE",
            f"players[{seat}].board.top",
        )


def test_settle_hands_stream_answers_in_order_with_ids(stub: RulesServiceStub) -> None:
    requests = [
        pb.SettleHandsStreamRequest(hand_id="h1", hand=hand(EXAMPLE_A, EXAMPLE_1_B)),
        pb.SettleHandsStreamRequest(hand_id="h2", hand=hand(EXAMPLE_A)),
        pb.SettleHandsStreamRequest(hand_id="h3", hand=hand(EXAMPLE_5_A, EXAMPLE_5_B)),
    ]
    responses = list(stub.SettleHandsStream(iter(requests)))
    assert [r.hand_id for r in responses] == ["h1", "h2", "h3"]
    assert responses[0].outcome.settlement.players[0].points == 8
    assert responses[1].outcome.error.reason == "WRONG_PLAYER_COUNT"
    assert responses[1].outcome.error.field == "players"
    assert responses[2].outcome.settlement.players[0].points == 6


def test_settle_hands_stream_takes_many_hands_a_message_beside_one_hand_ones(
    stub: RulesServiceStub,
) -> None:
    many = pb.SettleHandsStreamRequest(
        hands=[
            pb.IdentifiedHand(hand_id="m1", hand=hand(EXAMPLE_A, EXAMPLE_1_B)),
            pb.IdentifiedHand(hand_id="m2", hand=hand(EXAMPLE_A, EXAMPLE_A)),  # A's cards twice
            pb.IdentifiedHand(hand_id="x" * 129, hand=hand(EXAMPLE_5_A, EXAMPLE_5_B)),
            pb.IdentifiedHand(hand=hand(EXAMPLE_5_A, EXAMPLE_5_B, ids=("ann", "bob"))),
        ]
    )
    requests = [
        pb.SettleHandsStreamRequest(hand_id="h1", hand=hand(EXAMPLE_A, EXAMPLE_1_B)),
        many,
        pb.SettleHandsStreamRequest(hand_id="h3", hand=hand(EXAMPLE_5_A, EXAMPLE_5_B)),
    ]
    first, second, third = stub.SettleHandsStream(iter(requests))
    assert (first.hand_id, first.outcome.settlement.players[0].points) == ("h1", 8)
    assert not first.results
    # a message of hands: one result per hand, in order, and nothing in the one-hand fields
    assert (second.hand_id, second.HasField("outcome")) == ("", False)
    assert [r.hand_id for r in second.results] == ["m1", "m2", "x" * 128, ""]
    m1, m2, long_id, ids = second.results
    assert [p.points for p in m1.outcome.settlement.players] == [8, -8]
    assert (m2.outcome.error.reason, m2.outcome.error.field) == (
        "DUPLICATE_CARD",
        "players[1].board.top",
    )
    assert (long_id.outcome.error.reason, long_id.outcome.error.field) == (
        "INVALID_INPUT",
        "hand_id",
    )
    assert [(p.player_id, p.points) for p in ids.outcome.settlement.players] == [
        ("ann", 6),
        ("bob", -6),
    ]
    assert (third.hand_id, third.outcome.settlement.players[0].points) == ("h3", 6)


def test_a_stream_message_of_both_forms_or_too_many_hands_is_refused_alone(
    stub: RulesServiceStub,
) -> None:
    entry = pb.IdentifiedHand(hand_id="e", hand=hand(EXAMPLE_A, EXAMPLE_1_B))
    alone = pb.IdentifiedHand(hand_id="e", hand=hand(EXAMPLE_A))  # a short answer: an error
    requests = [
        pb.SettleHandsStreamRequest(hand_id="both", hands=[entry]),
        pb.SettleHandsStreamRequest(hand=hand(EXAMPLE_A, EXAMPLE_1_B), hands=[entry]),
        pb.SettleHandsStreamRequest(hands=[alone] * 1001),
        pb.SettleHandsStreamRequest(hands=[alone] * 999 + [entry]),
    ]
    both_id, both_hand, too_many, most = stub.SettleHandsStream(iter(requests))
    for refused, reason in ((both_id, "INVALID_INPUT"), (both_hand, "INVALID_INPUT"),
                            (too_many, "BATCH_TOO_LARGE")):  # fmt: skip
        assert not refused.results
        assert (refused.outcome.error.reason, refused.outcome.error.field) == (reason, "hands")
        assert refused.outcome.error.code == 3  # INVALID_ARGUMENT
    assert both_id.hand_id == "both"
    assert len(most.results) == 1000 and not most.HasField("outcome")
    assert {r.outcome.error.reason for r in most.results[:999]} == {"WRONG_PLAYER_COUNT"}
    assert [p.points for p in most.results[999].outcome.settlement.players] == [8, -8]


# --- rulesets --------------------------------------------------------------------------------
def test_list_presets_has_every_parameter(stub: RulesServiceStub) -> None:
    presets = stub.ListPresets(pb.ListPresetsRequest()).presets
    assert [p.name for p in presets] == list(PRESETS)
    classic = presets[0]
    assert [(s.deal, s.place) for s in classic.streets] == [(5, 5)] + [(1, 1)] * 8
    assert classic.cards_per_hand == 13 and classic.max_players == 4
    middle = {e.category: e.points for e in classic.royalties.middle}
    assert middle[cards_pb2.HAND_CATEGORY_ROYAL_FLUSH] == 50
    assert {e.rank: e.points for e in classic.royalties.top_pair}["A"] == 9
    assert classic.scoring == ruleset_pb2.ScoringScheme(name="1-6", row_value=1, scoop_bonus=3)
    progressive = presets[2]
    assert [e.cards for e in progressive.fantasyland_entry] == [14, 15, 16, 17]
    decks = {p.name: (p.jokers, p.deck_size) for p in presets}
    assert decks["classic"] == (0, 52)
    assert decks["classic-joker"] == (1, 53) and decks["pineapple-jokers"] == (2, 54)


# --- jokers over the wire ---------------------------------------------------------------------
def test_evaluate_row_with_jokers(stub: RulesServiceStub) -> None:
    one_joker = ruleset_pb2.RulesetSpec(preset="classic-joker")
    top = stub.EvaluateRow(
        pb.EvaluateRowRequest(
            cards=["X1", "Kd", "Ac"], row=cards_pb2.ROW_POSITION_TOP, ruleset=one_joker
        )
    )
    assert (top.hand.name, top.royalty) == ("pair of aces, king kicker", 9)
    natural = stub.EvaluateRow(
        pb.EvaluateRowRequest(cards=["As", "Kd", "Ac"], row=cards_pb2.ROW_POSITION_TOP)
    )
    assert natural.hand.value == top.hand.value  # a joker ranks as the card it stands for
    both = pb.EvaluateRowRequest(
        cards=["x2", "X1", "Th", "Jh", "Ah"],
        ruleset=ruleset_pb2.RulesetSpec(preset="pineapple-jokers"),
    )
    assert stub.EvaluateRow(both).hand.category == cards_pb2.HAND_CATEGORY_ROYAL_FLUSH
    # With neither a row nor a ruleset the cards are only ranked, as `ofc eval` ranks them.
    both.ClearField("ruleset")
    assert stub.EvaluateRow(both).hand.category == cards_pb2.HAND_CATEGORY_ROYAL_FLUSH


def test_a_board_with_a_joker_its_deck_lacks_is_refused_in_its_own_terms(
    stub: RulesServiceStub,
) -> None:
    # rules.md example 1's A with its top Ac a joker: under classic (no jokers) it was once
    # scored as a pair of threes; it is a card the deck does not have.
    joker_a = "X1 3d 2h / 6c 6d 9h 8s 4c / 9c 8c 7d 6h 5s"
    with pytest.raises(grpc.RpcError) as refused:
        stub.ValidateBoard(pb.ValidateBoardRequest(board=board(joker_a)))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details() == "board.top holds the joker X1, but the deck has 0 jokers"
    ok = stub.ValidateBoard(
        pb.ValidateBoardRequest(
            board=board(joker_a), ruleset=ruleset_pb2.RulesetSpec(preset="classic-joker")
        )
    )
    assert ok.assessment.top.name == "pair of threes, two kicker"
    with pytest.raises(grpc.RpcError) as twice:
        stub.ValidateBoard(pb.ValidateBoardRequest(board=board(EXAMPLE_A.replace("6d", "3d"))))
    assert twice.value.details() == "duplicate card 3d: board.top and board.middle"


def test_settle_with_jokers_needs_a_ruleset_with_jokers(stub: RulesServiceStub) -> None:
    joker_a = "X1 3d 2h / 6c 6d 9h 8s 4c / 9c 8c 7d 6h 5s"  # X1 pairs the three: 33 under 66
    message = hand(joker_a, EXAMPLE_1_B)
    refused = stub.SettleHands(pb.SettleHandsRequest(hands=[message]))
    assert refused.results[0].error.reason == "INVALID_CARD"
    message.ruleset.CopyFrom(ruleset_pb2.RulesetSpec(preset="classic-joker"))
    settled = stub.SettleHand(pb.SettleHandRequest(hand=message)).settlement
    # rules.md example 1 with A's top Ac made a pair by the joker: A still wins every row,
    # 3 + 3 scoop + 2 (bottom straight); a pair of threes pays no royalty.
    assert [p.points for p in settled.players] == [8, -8]
    assert settled.players[0].board.top.name == "pair of threes, two kicker"


def _overrides_from(params: ruleset_pb2.RulesetParameters) -> ruleset_pb2.RulesetOverrides:
    """Every parameter of a resolved ruleset, written back as explicit overrides."""
    return ruleset_pb2.RulesetOverrides(
        name=params.name,
        streets=ruleset_pb2.StreetList(streets=params.streets),
        min_players=params.min_players,
        max_players=params.max_players,
        royalties=params.royalties,
        scoring=params.scoring,
        royalties_to_row_winner_only=params.royalties_to_row_winner_only,
        unit_value=params.unit_value,
        loss_cap=params.loss_cap,
        fantasyland_entry=ruleset_pb2.FantasylandEntryList(entries=params.fantasyland_entry),
        stay_conditions=ruleset_pb2.StayConditionList(conditions=params.stay_conditions),
        stay_min_row_royalty=params.stay_min_row_royalty,
        stay_cards=params.stay_cards,
        max_consecutive_fantasylands=params.max_consecutive_fantasylands,
        button_moves_in_fantasyland=params.button_moves_in_fantasyland,
        fantasyland_tiers=ruleset_pb2.FantasylandTierList(tiers=params.fantasyland_tiers),
        jokers=params.jokers,
    )


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_round_trips_through_explicit_overrides(
    stub: RulesServiceStub, name: str
) -> None:
    params = ruleset_to_proto(PRESETS[name])
    # Start from a different preset so that every field must come from the overrides.
    other = "turbo" if name == "classic" else "classic"
    spec = ruleset_pb2.RulesetSpec(preset=other, overrides=_overrides_from(params))
    resolved = stub.ResolveRuleset(pb.ResolveRulesetRequest(ruleset=spec)).ruleset
    assert resolved == params


def test_resolve_ruleset_with_named_overrides(stub: RulesServiceStub) -> None:
    spec = ruleset_pb2.RulesetSpec(
        preset="pineapple",
        overrides=ruleset_pb2.RulesetOverrides(
            scoring_scheme="2-4",
            royalty_table="ukrainian",
            loss_cap=30,
            max_consecutive_fantasylands=2,
        ),
    )
    r = stub.ResolveRuleset(pb.ResolveRulesetRequest(ruleset=spec)).ruleset
    assert (r.name, r.scoring.name, r.royalties.name, r.loss_cap) == (
        "pineapple+custom",
        "2-4",
        "ukrainian",
        30,
    )
    assert r.max_consecutive_fantasylands == 2 and r.max_players == 3
    default = stub.ResolveRuleset(pb.ResolveRulesetRequest()).ruleset
    assert default.name == "classic" and default.loss_cap == 0


PLAYABLE = [
    # preset, streets (deal, place), the live-table error ("" = playable)
    ("classic", None, ""),
    ("pineapple", None, ""),
    ("pineapple", [(5, 5), (3, 2), (3, 2), (3, 2), (3, 2)], ""),
    ("classic", [(13, 13)], "ruleset 'classic+custom': a street places at most 5 cards (the "
     "default move of a seat out of time is chosen over every placement of its street), not 13"),
    ("pineapple", [(17, 13)], "ruleset 'pineapple+custom': the engine supports at most one "
     "discard per street"),
]  # fmt: skip


@pytest.mark.parametrize(("preset", "streets", "error"), PLAYABLE)
def test_resolve_ruleset_says_whether_live_tables_can_play_it(
    channel: grpc.Channel,
    stub: RulesServiceStub,
    preset: str,
    streets: list[tuple[int, int]] | None,
    error: str,
) -> None:
    """What ResolveRuleset says of a ruleset is what CreateTable does with it: a ruleset the
    engine cannot deal street by street settles boards all the same."""
    overrides = ruleset_pb2.RulesetOverrides()
    if streets is not None:
        chosen = [ruleset_pb2.Street(deal=d, place=p) for d, p in streets]
        overrides.streets.CopyFrom(ruleset_pb2.StreetList(streets=chosen))
    spec = ruleset_pb2.RulesetSpec(preset=preset, overrides=overrides)
    resolved = stub.ResolveRuleset(pb.ResolveRulesetRequest(ruleset=spec))
    assert resolved.live_table_error == error
    tables = TableServiceStub(channel)
    request = table_pb.CreateTableRequest(
        ruleset=spec, seats=resolved.ruleset.max_players, request_id=f"playable-{uuid.uuid4()}"
    )
    if not error:
        assert tables.CreateTable(request).table.seats
        return
    with pytest.raises(grpc.RpcError) as refused:
        tables.CreateTable(request)
    assert (refused.value.code(), refused.value.details()) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        error,
    )


# --- fairness --------------------------------------------------------------------------------
def test_derive_deck_reproduces_the_spec_vectors(stub: RulesServiceStub) -> None:
    by_hex = stub.DeriveDeck(
        pb.DeriveDeckRequest(
            server_seed_hex=SEED_HEX,
            client_seed_text="auditor-test",
            nonce=1,
            include_first_block=True,
        )
    )
    assert by_hex.algorithm == "ofc-shuffle-v1"
    assert by_hex.commitment == VECTOR_COMMITMENT
    assert by_hex.first_block_hex == VECTOR_BLOCK_0
    assert list(by_hex.deck) == VECTOR_DECK
    by_bytes = stub.DeriveDeck(
        pb.DeriveDeckRequest(
            server_seed_bytes=bytes(range(32)), client_seed_bytes=b"auditor-test", nonce=1
        )
    )
    assert list(by_bytes.deck) == VECTOR_DECK and by_bytes.first_block_hex == ""
    other_nonce = stub.DeriveDeck(pb.DeriveDeckRequest(server_seed_hex=SEED_HEX, nonce=2**64 - 1))
    assert sorted(other_nonce.deck) == sorted(VECTOR_DECK) and list(other_nonce.deck) != VECTOR_DECK


def test_derive_deck_with_jokers_is_ofc_shuffle_v2(stub: RulesServiceStub) -> None:
    request = pb.DeriveDeckRequest(server_seed_hex=SEED_HEX, client_seed_text="auditor-test")
    request.nonce, request.jokers = 1, 2
    two = stub.DeriveDeck(request)
    assert two.algorithm == "ofc-shuffle-v2" and len(two.deck) == 54
    assert " ".join(two.deck[:6]) == "8s 9s 2d 7s 5h 6h"  # docs/shuffle-v2.md, N = 54
    assert list(two.deck).index("X1") == 42 and list(two.deck).index("X2") == 29
    request.jokers = 1
    one = stub.DeriveDeck(request)
    assert one.algorithm == "ofc-shuffle-v2" and one.deck[37] == "X1" and len(one.deck) == 53


def test_derive_deck_with_three_jokers_is_refused(stub: RulesServiceStub) -> None:
    request = pb.DeriveDeckRequest(server_seed_hex=SEED_HEX, jokers=3)
    with pytest.raises(grpc.RpcError) as info:
        stub.DeriveDeck(request)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "0..2 jokers" in (info.value.details() or "")


def test_verify_commitment(stub: RulesServiceStub) -> None:
    ok = stub.VerifyCommitment(
        pb.VerifyCommitmentRequest(server_seed_hex=SEED_HEX, commitment=VECTOR_COMMITMENT.upper())
    )
    assert ok.valid and ok.computed_commitment == VECTOR_COMMITMENT
    wrong = stub.VerifyCommitment(
        pb.VerifyCommitmentRequest(server_seed_bytes=bytes(32), commitment=VECTOR_COMMITMENT)
    )
    assert not wrong.valid and wrong.computed_commitment == commitment(bytes(32))
