"""The Python client (ofc_client.OfcClient) against a real server."""

from __future__ import annotations

import dataclasses
from typing import Any

import grpc
import pytest
from ofc.rulesets import PRESETS
from ofc_client import (
    HandError,
    HandInput,
    InvalidRequestError,
    OfcClient,
    OfcClientError,
    PlayerInput,
    RetryableError,
    Settlement,
    TableClient,
)
from ofc_service.server.background import BackgroundServer
from ofcpoker.v1 import rules_service_pb2 as pb

from tests.api.wire import EXAMPLE_1_B, EXAMPLE_4, EXAMPLE_5_A, EXAMPLE_5_B, EXAMPLE_A
from tests.conftest import free_port

SEED_HEX = bytes(range(32)).hex()


def test_settle_hand_with_board_strings(client: OfcClient) -> None:
    s = client.settle_hand([EXAMPLE_A, EXAMPLE_1_B])
    assert s.points == (8, -8)
    (pair,) = s.pairs
    assert (pair.rows, pair.scoop, pair.royalties, pair.units) == ((1, 1, 1), 1, 2, 8)
    assert s.players[0].board.bottom.category == "straight"


def test_settle_hand_accepts_mappings_lists_and_player_inputs(client: OfcClient) -> None:
    a = {"top": ["Ac", "3d", "2h"], "middle": "6c 6d 9h 8s 4c", "bottom": "9c,8c,7d,6h,5s"}
    b = PlayerInput(("Kd 3c 2d", "5c 5d 9d 8h 4d", ["7c", "7h", "Qd", "Js", "4s"]), player_id="bob")
    s = client.settle_hand([a, b], ruleset={"preset": "classic", "unit_value": 5})
    assert s.players[1].player_id == "bob"
    assert [p.units for p in s.players] == [40, -40]
    assert s.ruleset == "classic+custom"


def test_pair_units_and_rulesets_by_name(client: OfcClient) -> None:
    s = client.settle_hand([EXAMPLE_5_A, EXAMPLE_5_B], ruleset="turbo", pair_units={(0, 1): 20})
    assert s.points == (6, -6) and s.pairs[0].units == 120 and s.ruleset == "turbo"


def test_errors_are_typed_with_reason_and_field(client: OfcClient) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        client.settle_hand([EXAMPLE_A, EXAMPLE_1_B.replace("Qd", "Zz")])
    error = caught.value
    assert (error.code, error.reason, error.field) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_CARD",
        "hand.players[1].board.bottom[2]",
    )
    assert error.request_id == client.last_request_id != ""
    assert str(error) == "INVALID_CARD at hand.players[1].board.bottom[2]: invalid card: 'Zz'"
    with pytest.raises(InvalidRequestError) as bad_option:
        client.settle_hand([EXAMPLE_A, EXAMPLE_1_B], ruleset={"secret_rule": 1})
    assert (bad_option.value.reason, bad_option.value.field) == (
        "INVALID_RULESET",
        "ruleset.secret_rule",
    )
    with pytest.raises(InvalidRequestError) as unknown:
        client.evaluate_row("As Kd Qc", ruleset="nope", row="top")
    assert (unknown.value.reason, unknown.value.field) == ("UNKNOWN_RULESET", "ruleset.preset")


def test_evaluate_and_validate(client: OfcClient) -> None:
    row = client.evaluate_row("Qh Qs 4d", row="top")
    assert (row.hand.category, row.hand.name, row.royalty) == (
        "pair",
        "pair of queens, four kicker",
        7,
    )
    assessment = client.validate_board(EXAMPLE_4)
    assert assessment.royalties.total == 82 and assessment.fantasyland.cards == 13


def test_batch_and_stream(client: OfcClient) -> None:
    good = HandInput([EXAMPLE_A, EXAMPLE_1_B])
    bad = HandInput([EXAMPLE_A])
    results = client.settle_hands([good, bad])
    assert isinstance(results[0], Settlement) and results[0].points == (8, -8)
    assert isinstance(results[1], HandError) and results[1].reason == "WRONG_PLAYER_COUNT"
    streamed = list(client.settle_stream([("x", good), ("y", bad), ("z", good)]))
    assert [hand_id for hand_id, _ in streamed] == ["x", "y", "z"]
    assert isinstance(streamed[1][1], HandError)


@pytest.mark.parametrize("batch_size", [1, 2, 100])
def test_stream_batches_keep_every_hand_in_order(client: OfcClient, batch_size: int) -> None:
    """Five hands, one a message, two (the last message short) or all in one: the same
    results, in order, each with its id; a bad hand is its own error."""
    good = HandInput([EXAMPLE_A, EXAMPLE_1_B])
    hands = [(f"h{k}", HandInput([EXAMPLE_A]) if k == 3 else good) for k in range(5)]
    streamed = list(client.settle_stream(iter(hands), batch_size=batch_size))
    assert [hand_id for hand_id, _ in streamed] == ["h0", "h1", "h2", "h3", "h4"]
    errors = [k for k, (_, r) in enumerate(streamed) if isinstance(r, HandError)]
    assert errors == [3] and streamed[3][1].reason == "WRONG_PLAYER_COUNT"  # type: ignore[union-attr]
    assert all(r.points == (8, -8) for _, r in streamed if isinstance(r, Settlement))


@pytest.mark.parametrize("batch_size", [0, 1001, 2.5, True])
def test_stream_batch_size_is_checked_before_sending(client: OfcClient, batch_size: Any) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        list(
            client.settle_stream(
                [("x", HandInput([EXAMPLE_A, EXAMPLE_1_B]))], batch_size=batch_size
            )
        )
    assert caught.value.field == "batch_size"
    with pytest.raises(InvalidRequestError):  # at the call itself, before any iteration
        client.settle_stream([], batch_size=batch_size)


def test_a_stream_message_refused_whole_is_each_hands_error(
    client: OfcClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A message the server refuses as a whole (its ``outcome`` set, no ``results``: as a
    server would for more than 1000 hands) gives each of its hands that error."""
    refused = pb.SettleHandsStreamResponse()
    refused.outcome.error.reason = "BATCH_TOO_LARGE"
    refused.outcome.error.field = "hands"

    def stream(requests: Any, **_: Any) -> Any:
        for request in requests:
            yield (
                refused
                if len(request.hands) == 2
                else pb.SettleHandsStreamResponse(
                    results=[pb.IdentifiedOutcome(hand_id=h.hand_id) for h in request.hands]
                )
            )

    monkeypatch.setattr(client._stub, "SettleHandsStream", stream)
    good = HandInput([EXAMPLE_A, EXAMPLE_1_B])
    streamed = list(client.settle_stream([(f"h{k}", good) for k in range(3)], batch_size=2))
    assert [hand_id for hand_id, _ in streamed] == ["h0", "h1", "h2"]
    assert [getattr(r, "reason", None) for _, r in streamed[:2]] == ["BATCH_TOO_LARGE"] * 2


def test_presets_and_overrides_round_trip_in_the_ofc_presets_json_form(client: OfcClient) -> None:
    presets = client.list_presets()
    assert list(presets) == list(PRESETS)
    assert presets["pineapple"]["stay_cards"] == 14
    for name, ruleset in PRESETS.items():
        # Every parameter, in the same JSON form `ofc presets` prints, on top of another preset.
        base = "turbo" if name == "classic" else "classic"
        resolved = client.resolve_ruleset({"preset": base, **ruleset.to_dict()})
        assert resolved == presets[name]


def test_whether_live_tables_can_play_a_ruleset(client: OfcClient) -> None:
    assert [client.live_table_error(name) for name in PRESETS] == [""] * len(PRESETS)
    one_street = {"preset": "classic", "streets": [[13, 13]]}
    assert client.live_table_error(one_street).startswith(
        "ruleset 'classic+custom': a street places at most 5 cards"
    )
    assert client.resolve_ruleset(one_street)["streets"] == [{"deal": 13, "place": 13}]


def test_derive_deck_and_verify_commitment(client: OfcClient) -> None:
    deck = client.derive_deck(
        SEED_HEX, client_seed="auditor-test", nonce=1, include_first_block=True
    )
    assert deck.cards[:5] == ("Qs", "6d", "Ad", "Td", "6s")
    assert deck.first_block_hex.startswith("acbcbada")
    by_bytes = client.derive_deck(bytes(range(32)), client_seed=b"auditor-test", nonce=1)
    assert by_bytes == dataclasses.replace(deck, first_block_hex="")
    assert client.verify_commitment(SEED_HEX, deck.commitment)
    assert not client.verify_commitment(bytes(32), deck.commitment)
    with pytest.raises(InvalidRequestError) as caught:
        client.derive_deck(SEED_HEX, nonce=-1)
    assert caught.value.field == "nonce"


def test_health(client: OfcClient) -> None:
    assert client.health() == "SERVING"


def test_an_unreachable_server_is_a_retryable_error() -> None:
    with (
        OfcClient(f"127.0.0.1:{free_port()}", timeout=2) as client,
        pytest.raises(RetryableError) as caught,
    ):
        client.list_presets()
    assert caught.value.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    assert isinstance(caught.value, OfcClientError)


def test_the_module_example_of_table_client_runs_as_written(server: BackgroundServer) -> None:
    """The ``ofc_client.tables`` docstring's session, its address pointed at the server."""
    import ofc_client.tables

    doc = ofc_client.tables.__doc__ or ""
    start = doc.index("host = ")
    example = doc[start : doc.index("\n\n", start)].replace("127.0.0.1:50051", server.address)
    lines = [line.split("#")[0].rstrip() for line in example.strip().splitlines()]
    scope: dict[str, Any] = {"TableClient": TableClient}
    for line in lines[:-1]:
        exec(line.strip(), scope)
    assert eval(lines[-1].strip(), scope) == 1  # "# 1", as the example says


def test_a_closed_client_says_so_in_its_own_terms(server: BackgroundServer) -> None:
    """After ``close()`` (or the ``with`` block) a call raises the client's own
    InvalidRequestError, as every failure of a method does, not gRPC's bare ValueError."""
    with OfcClient(server.address) as rules:
        assert rules.health() == "SERVING"
    tables = TableClient(server.address)
    tables.close()
    for call in (
        rules.list_presets,
        lambda: rules.settle_stream([]),
        lambda: tables.get("t"),
        lambda: tables.watch("t"),
    ):
        with pytest.raises(InvalidRequestError, match="this client is closed"):
            call()
