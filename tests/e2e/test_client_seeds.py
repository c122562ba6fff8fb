"""Client seed policies over real gRPC, two replicas on one Redis.

Every hand's server seed is drawn one hand ahead and only its commitment shown
(``TableView.next_commitment``, ``HandStartedEvent.next_commitment``), so a client seed
chosen afterwards cannot have been known when the server's was fixed. At a table created
with ``CLIENT_SEED_POLICY_PLAYERS`` each player adds a seed of their own: a hand's client
seed is then the table's and each seat's, u32be-length-prefixed in seat order, and the
revealed history re-derives the deck from exactly that.
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from ofc.rulesets import get_ruleset
from ofc.shuffle import combine_client_seeds, commitment, shuffle_deck
from ofc.verify import verify_history
from ofc_client import (
    FailedPreconditionError,
    InvalidRequestError,
    PermissionDeniedError,
    TableClient,
    TableView,
)
from ofc_client.table_models import ClientSeedSetEvent, HandStartedEvent
from ofc_service.server.background import BackgroundServer

from tests.e2e.tablekit import API_KEY, LONG_TURN_MS, Watcher, naive_move, start_server

CLASSIC = get_ruleset("classic")


@pytest.fixture
def replicas(redis_url: str) -> Iterator[tuple[BackgroundServer, BackgroundServer]]:
    with start_server(redis_url) as a, start_server(redis_url) as b:
        yield a, b


def play_out(table_id: str, view: TableView, players: tuple[TableClient, ...]) -> TableView:
    """Naive legal moves until the hand is over (each player acts from its own view)."""
    while view.hand is not None and not view.hand.over:
        assert view.hand.turn is not None
        player = players[view.hand.turn]
        placements, _ = naive_move(player.get(table_id), CLASSIC)
        view = player.place(table_id, placements)
    return view


def test_players_add_seeds_to_a_deal_committed_one_hand_ahead(
    replicas: tuple[BackgroundServer, BackgroundServer],
) -> None:
    a, b = replicas
    host = TableClient(a.address, api_key=API_KEY)
    ann, bob = TableClient(a.address), TableClient(b.address)
    created = host.create_table(
        seats=2,
        client_seed="house",
        client_seed_policy="players",
        turn_time_limit_ms=LONG_TURN_MS,
    )
    table_id = created.table_id
    assert (created.client_seed_policy, created.client_seed) == ("players", b"house")
    first_commitment = created.next_commitment
    assert len(first_commitment) == 64 and first_commitment == first_commitment.lower()
    ann.join(table_id, 0, "ann")
    bob.join(table_id, 1, "bob")
    watcher = Watcher(TableClient(b.address), table_id).wait_for_snapshot()

    ann.get(table_id)  # ann saw her own join only
    seeded = ann.set_client_seed(table_id, "ann's lucky 7", request_id="ann-seed-1")
    assert seeded.seats[0].client_seed == b"ann's lucky 7"
    assert seeded.seats[1].client_seed == b"" and seeded.next_commitment == first_commitment
    # a retry with the same request id: the first answer, applied once
    again = ann.set_client_seed(
        table_id, "ann's lucky 7", request_id="ann-seed-1", expected_version=seeded.version - 1
    )
    assert again == seeded and ann.get(table_id).version == seeded.version
    bob.get(table_id)
    bob.set_client_seed(table_id, "bob")
    bob.set_client_seed(table_id, "")  # bob changes his mind: no seed of his own

    bob.get(table_id)
    started = bob.start_hand(table_id)
    assert started.hand is not None
    assert started.hand.commitment == first_commitment  # the seed committed ahead
    expected_seed = combine_client_seeds([b"house", b"ann's lucky 7", b""])
    assert started.hand.client_seed == expected_seed
    assert expected_seed.hex() == (
        "00000005" + b"house".hex() + "0000000d" + b"ann's lucky 7".hex() + "00000000"
    )
    second_commitment = started.next_commitment
    assert len(second_commitment) == 64 and second_commitment != first_commitment

    over = play_out(table_id, started, (ann, bob))
    assert over.hand is not None and over.hand.server_seed is not None
    assert commitment(over.hand.server_seed) == first_commitment
    history = ann.hand_history(table_id, 1)
    assert history.client_seed == expected_seed
    assert verify_history(history.history) is None  # re-derives deck and score
    deck = [str(c) for c in shuffle_deck(history.server_seed, expected_seed, 1)]
    deals = history.history["deals"]
    assert deals and all(
        d["cards"] == deck[d["position"] : d["position"] + len(d["cards"])] for d in deals
    )

    # Hand 2 is dealt from the seed committed when hand 1 started.
    ann.get(table_id)
    second = ann.start_hand(table_id)
    assert second.hand is not None and second.hand.commitment == second_commitment
    watcher.wait_for_event_id(ann.get(table_id).last_event_id)
    seeds = [e.detail for e in watcher.events if e.kind == "client_seed_set"]
    assert seeds == [
        ClientSeedSetEvent(0, b"ann's lucky 7"),
        ClientSeedSetEvent(1, b"bob"),
        ClientSeedSetEvent(1, b""),
    ]
    hands = [e.detail for e in watcher.events if e.kind == "hand_started"]
    assert all(isinstance(h, HandStartedEvent) for h in hands)
    assert [(h.number, h.commitment, h.client_seed, h.next_commitment) for h in hands] == [  # type: ignore[union-attr]
        (1, first_commitment, expected_seed, second_commitment),
        (2, second_commitment, expected_seed, second.next_commitment),
    ]
    watcher.stop()
    for client in (host, ann, bob):
        client.close()


def test_client_seed_refusals_change_nothing(
    replicas: tuple[BackgroundServer, BackgroundServer],
) -> None:
    a, _ = replicas
    host = TableClient(a.address, api_key=API_KEY)
    ann, bob = TableClient(a.address), TableClient(a.address)
    house_only = host.create_table(seats=2, client_seed="house").table_id
    ann.join(house_only, 0, "ann")
    with pytest.raises(FailedPreconditionError) as policy:
        ann.set_client_seed(house_only, "mine")
    assert (policy.value.code, policy.value.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "CLIENT_SEED_POLICY",
    )

    table_id = host.create_table(seats=3, client_seed_policy="players").table_id
    ann.join(table_id, 0, "ann")
    bob.join(table_id, 1, "bob")
    before = host.get(table_id).version
    with pytest.raises(InvalidRequestError) as too_long:
        ann.get(table_id)
        ann.set_client_seed(table_id, "x" * 257)
    assert (too_long.value.reason, too_long.value.field) == ("INVALID_INPUT", "client_seed")
    with pytest.raises(PermissionDeniedError):
        bob.set_client_seed(table_id, "for ann", seat=0)
    with pytest.raises(FailedPreconditionError) as empty:
        host.set_client_seed(table_id, "nobody's", seat=2)
    assert (empty.value.reason, empty.value.field) == ("UNKNOWN_SEAT", "seat")
    with pytest.raises(ValueError, match="'table' or 'players'"):
        host.create_table(seats=2, client_seed_policy="everyone")
    assert host.get(table_id).version == before

    # A seat's seed leaves with its player: the next player starts without one.
    ann.get(table_id)
    ann.set_client_seed(table_id, "ann")
    ann.leave(table_id)
    assert host.get(table_id).seats[0].client_seed == b""
    for client in (host, ann, bob):
        client.close()
