"""A Hypothesis-driven probe of what each seat is told, over real gRPC.

Each example opens a table (classic, Pineapple, or a classic variant where any legal board
earns a 14-card Fantasyland, so face-down sets happen), seats 2-3 players and plays 1-2
hands with random legal moves (or the engine's default move), sometimes illegal ones.
Every seat, a spectator and an operator (``as_seat``) watch the table the whole time.

The test keeps its own copy of the table in the engine (it knows the server seeds: it
hands them out), so for every version it knows exactly which cards each viewer may know:
its own dealt cards, discards and board, the face-up boards, and every board once the hand
is over. Then:

- no response (views, errors) and no watch message sent to a viewer holds any other card
  (another seat's batch or discards, a face-down Fantasyland set, the undealt deck), and
  none holds the server seed of a hand not yet over;
- every mutating call without credentials, with another seat's or table's token, with a
  made-up token or a wrong API key is refused with UNAUTHENTICATED / PERMISSION_DENIED
  and changes nothing; illegal moves are refused and change nothing.

Server seeds are drawn one hand ahead (at CreateTable, then at each StartHand for the next
hand): none is ever sent before its hand is over, only its commitment. Some tables let the
players add seeds of their own (CLIENT_SEED_POLICY_PLAYERS); the test's engine copy deals
from the combination the protos document, so every dealt card checks it too.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st
from ofc import engine
from ofc.cards import Card
from ofc.engine import MatchState
from ofc.policy import TIMEOUT_POLICY
from ofc.rulesets import Row, Ruleset, resolve_ruleset
from ofc.shuffle import combine_client_seeds, commitment
from ofc_client.requests import ruleset_spec
from ofc_service.server.background import BackgroundServer
from ofcpoker.v1 import cards_pb2
from ofcpoker.v1 import table_service_pb2 as pb
from ofcpoker.v1 import table_service_pb2_grpc as pb_grpc

from tests.e2e.tablekit import (
    API_KEY,
    LONG_TURN_MS,
    RawWatch,
    cards_in,
    start_server,
    wait_until,
)

RULESETS: dict[str, Any] = {
    "classic": "classic",
    "pineapple": "pineapple",
    "easy-fantasyland": {
        "preset": "classic",
        "max_players": 3,
        "fantasyland_entry": [{"category": "high_card", "min_rank": "2", "cards": 14}],
    },
}
OPERATOR = (("x-ofc-api-key", API_KEY),)
UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED
PERMISSION_DENIED = grpc.StatusCode.PERMISSION_DENIED
ROWS = {
    Row.TOP: cards_pb2.ROW_POSITION_TOP,
    Row.MIDDLE: cards_pb2.ROW_POSITION_MIDDLE,
    Row.BOTTOM: cards_pb2.ROW_POSITION_BOTTOM,
}
ROW_SIZES = {Row.TOP: 3, Row.MIDDLE: 5, Row.BOTTOM: 5}
CARD_CODE = re.compile(r"\b(?:10|[2-9TJQKA])[cdhs]\b")  # a card as the server writes one
TABLE_ID = re.compile(r"'[A-Za-z0-9_-]{22}'")  # as the server quotes one in a message


class Seeds:
    """The server's seed source: a fixed sequence, and what it handed out last."""

    def __init__(self) -> None:
        self.count = 0
        self.last = b""

    def __call__(self) -> bytes:
        self.count += 1
        self.last = hashlib.sha256(b"probe-%d" % self.count).digest()
        return self.last


@dataclass
class Probe:
    server: BackgroundServer
    seeds: Seeds
    stub: pb_grpc.TableServiceStub
    tables: int = 0


@pytest.fixture(scope="module")
def probe() -> Iterator[Probe]:
    with start_server() as server, grpc.insecure_channel(server.address) as channel:
        seeds = Seeds()
        server.server.sweeper.manager.server_seed = seeds
        yield Probe(server, seeds, pb_grpc.TableServiceStub(channel))


def seat_md(token: str) -> tuple[tuple[str, str], ...]:
    return (("x-ofc-seat-token", token),)


def visible_cards(state: MatchState, viewer: int | None) -> set[Card]:
    """What ``viewer`` may know of the current hand: its own cards and the face-up boards."""
    hand = state.hand
    if hand is None:
        return set()
    seen: set[Card] = set()
    for s in hand.seats:
        if s.seat == viewer:
            seen |= {*s.pending, *s.discards, *s.board.cards}
        elif not s.in_fantasyland or hand.over:
            seen |= set(s.board.cards)
    return seen


@dataclass
class Table:
    """One probed table: the server's answers checked against the test's own engine copy."""

    probe: Probe
    ruleset: Ruleset
    table_id: str = ""
    tokens: dict[int, str] = field(default_factory=dict)
    states: dict[int, MatchState] = field(default_factory=dict)  # version -> state
    seen: list[tuple[int | None, int, Message]] = field(default_factory=list)
    refusals: int = 0
    next_seed: bytes = b""  # the server seed drawn for the next hand
    revealed_at: dict[bytes, int | None] = field(default_factory=dict)  # seed -> version
    players_seeds: bool = False  # CLIENT_SEED_POLICY_PLAYERS
    own_seeds: dict[int, bytes] = field(default_factory=dict)

    @property
    def version(self) -> int:
        return max(self.states)

    @property
    def state(self) -> MatchState:
        return self.states[self.version]

    def applied(self, action: engine.Action, version: int) -> None:
        assert version == self.version + 1, f"version {version} after {self.version}"
        self.states[version], _ = engine.apply(self.state, action)
        hand = self.states[version].hand
        if hand is not None and hand.over and self.revealed_at.get(hand.server_seed, 0) is None:
            self.revealed_at[hand.server_seed] = version

    def unchanged(self, version: int) -> None:
        """A version that changed nothing the engine knows (a player's own client seed)."""
        assert version == self.version + 1, f"version {version} after {self.version}"
        self.states[version] = self.state

    def drew(self, seed: bytes) -> None:
        """The server drew ``seed`` for the table's next hand (it must stay secret)."""
        self.next_seed = seed
        self.revealed_at[seed] = None

    def hand_client_seed(self) -> bytes:
        if not self.players_seeds:
            return b"probe"
        seats = range(len(self.state.seats))
        return combine_client_seeds([b"probe", *(self.own_seeds.get(s, b"") for s in seats)])

    def saw(self, viewer: int | None, version: int, message: Message) -> None:
        self.seen.append((viewer, version, message))

    def check_seen(self) -> None:
        for viewer, version, message in self.seen:
            state = self.states[version]
            extra = cards_in(message) - visible_cards(state, viewer)
            assert not extra, f"viewer {viewer} at v{version} was sent {sorted(map(str, extra))}"
            sent = message.SerializeToString()
            for seed, public_at in self.revealed_at.items():
                if public_at is None or version < public_at:
                    assert seed not in sent, f"a server seed leaked at v{version}"

    def refused(
        self,
        call: Callable[[], object],
        codes: set[grpc.StatusCode],
        *,
        viewer: int | None,
        sent: frozenset[Card] = frozenset(),
    ) -> None:
        """``call`` fails with one of ``codes``; its message names no card the viewer may
        not know (beyond what the request itself sent); the table did not change."""
        with pytest.raises(grpc.RpcError) as caught:
            call()
        error: Any = caught.value
        assert error.code() in codes, (error.code(), error.details())
        # Table ids (random URL-safe text) may hold a card-like run such as "Jd-": not cards.
        details = TABLE_ID.sub("<table>", error.details() or "")
        named = {Card.parse(t) for t in CARD_CODE.findall(details)}
        known = visible_cards(self.state, viewer) if self.states else set()
        assert named <= known | sent, error.details()
        if self.table_id:
            view = self.probe.stub.GetTable(pb.GetTableRequest(table_id=self.table_id)).table
            assert view.version == self.version
        self.refusals += 1


class WatchLog(RawWatch):
    """A raw Watch stream read in a thread (viewer: the seat it sees as, None: spectator)."""

    def __init__(
        self, stub: pb_grpc.TableServiceStub, request: pb.WatchRequest, md: Any, viewer: int | None
    ) -> None:
        super().__init__(stub, request, md)
        self.viewer = viewer


def attack_move(
    table: Table, data: st.DataObject, request: Message, method: Any, seat: int | None
) -> None:
    """Send ``request`` (a move for ``seat``; None: any seat may send it, like StartHand)
    with wrong credentials; each must be refused."""
    others = [] if seat is None else [s for s in table.tokens if s != seat]
    attempts = data.draw(
        st.lists(
            st.sampled_from(["none", "other-seat", "other-table", "made-up", "bad-key"]),
            max_size=2,
            unique=True,
        ),
        label="attacks",
    )
    for kind in attempts:
        md: tuple[tuple[str, str], ...]
        if kind == "none":
            md, codes = (), {UNAUTHENTICATED}
        elif kind == "other-seat" and others:
            md, codes = seat_md(table.tokens[others[0]]), {PERMISSION_DENIED}
        elif kind == "other-table":
            md, codes = seat_md(OTHER_TABLE_TOKEN[0]), {PERMISSION_DENIED}
        elif kind == "made-up":
            md, codes = seat_md(f"st_{table.table_id}.{'A' * 32}"), {UNAUTHENTICATED}
        else:
            md, codes = (("x-ofc-api-key", "not-the-key"),), {UNAUTHENTICATED}
        table.refused(partial(method, request, metadata=md), codes, viewer=None)


OTHER_TABLE_TOKEN: list[str] = []


def random_place(
    table: Table, data: st.DataObject, seat: int, hand: engine.HandState, style: str
) -> engine.Place:
    """A random legal placement of the seat's batch, or the engine's default move (which
    seldom fouls: with the easy ruleset, a seat playing it earns Fantasyland)."""
    if style == "default" or (style == "mixed" and data.draw(st.booleans(), label="default")):
        move = TIMEOUT_POLICY.choose(table.state, seat)
        assert isinstance(move, engine.Place)
        return move
    me = hand.seat(seat)
    batch = list(me.pending)
    street = table.ruleset.streets[hand.street]
    discard = None
    if street.discard:
        discard = data.draw(st.sampled_from(batch), label="discard")
        batch.remove(discard)
    room = {row: ROW_SIZES[row] - len(me.board.row(row)) for row in ROW_SIZES}
    placements = []
    for card in batch:
        row = data.draw(st.sampled_from([r for r in ROW_SIZES if room[r] > 0]), label="row")
        room[row] -= 1
        placements.append((card, row))
    return engine.Place(seat, tuple(placements), discard)


def random_fantasyland(
    table: Table, data: st.DataObject, seat: int, hand: engine.HandState
) -> engine.SetFantasyland:
    if data.draw(st.booleans(), label="solver"):
        move = TIMEOUT_POLICY.choose(table.state, seat)
        assert isinstance(move, engine.SetFantasyland)
        return move
    cards = data.draw(st.permutations(hand.seat(seat).pending), label="arrangement")
    return engine.SetFantasyland(
        seat, tuple(cards[:3]), tuple(cards[3:8]), tuple(cards[8:13]), tuple(cards[13:])
    )


def place_request(table: Table, move: engine.Place, version: int) -> pb.PlaceCardsRequest:
    return pb.PlaceCardsRequest(
        table_id=table.table_id,
        seat=move.seat,
        expected_version=version,
        request_id=f"{table.table_id}-{version}",
        placements=[pb.Placement(card=str(c), row=ROWS[r]) for c, r in move.placements],
        discard="" if move.discard is None else str(move.discard),
    )


def set_request(
    table: Table, move: engine.SetFantasyland, version: int
) -> pb.SetFantasylandRequest:
    return pb.SetFantasylandRequest(
        table_id=table.table_id,
        seat=move.seat,
        expected_version=version,
        request_id=f"{table.table_id}-{version}",
        board=cards_pb2.Board(
            top=[str(c) for c in move.top],
            middle=[str(c) for c in move.middle],
            bottom=[str(c) for c in move.bottom],
        ),
        discards=[str(c) for c in move.discards],
    )


def try_illegal(
    table: Table, data: st.DataObject, seat: int, request: pb.PlaceCardsRequest
) -> None:
    """One illegal variant of a legal PlaceCards request, with the right token."""
    stub, md = table.probe.stub, seat_md(table.tokens[seat])
    kind = data.draw(
        st.sampled_from(["none", "not-dealt", "row-full", "not-your-turn", "stale"]),
        label="illegal",
    )
    bad = pb.PlaceCardsRequest()
    bad.CopyFrom(bad_base := request)
    bad.request_id = bad_base.request_id + "-bad"
    sent = frozenset(Card.parse(p.card) for p in request.placements)
    if kind == "not-dealt":
        hand = table.state.hand
        assert hand is not None
        undealt = hand.deck[hand.dealt]
        bad.placements[0].card = str(undealt)
        table.refused(
            lambda: stub.PlaceCards(bad, metadata=md),
            {grpc.StatusCode.FAILED_PRECONDITION},
            viewer=seat,
            sent=frozenset({undealt}),
        )
    elif kind == "row-full":
        for p in bad.placements:
            p.row = cards_pb2.ROW_POSITION_TOP
        if len(bad.placements) > 3 or _top_room(table, seat) < len(bad.placements):
            table.refused(
                lambda: stub.PlaceCards(bad, metadata=md),
                {grpc.StatusCode.FAILED_PRECONDITION},
                viewer=seat,
                sent=sent,
            )
    elif kind == "not-your-turn":
        others = [s for s in table.tokens if s != seat]
        bad.seat = others[0]
        other_md = seat_md(table.tokens[others[0]])
        table.refused(
            lambda: stub.PlaceCards(bad, metadata=other_md),
            {grpc.StatusCode.FAILED_PRECONDITION},
            viewer=others[0],
            sent=sent,
        )
    elif kind == "stale":
        bad.expected_version -= 1
        table.refused(
            lambda: stub.PlaceCards(bad, metadata=md),
            {grpc.StatusCode.ABORTED},
            viewer=seat,
            sent=sent,
        )


def _top_room(table: Table, seat: int) -> int:
    hand = table.state.hand
    assert hand is not None
    return 3 - len(hand.seat(seat).board.top)


def play_probe(probe: Probe, data: st.DataObject) -> Table:
    name = data.draw(st.sampled_from(sorted(RULESETS)), label="ruleset")
    ruleset = resolve_ruleset(RULESETS[name])
    event(f"ruleset {name}")
    seats = data.draw(st.integers(2, 3), label="seats")
    hands = 2 if name == "easy-fantasyland" else data.draw(st.integers(1, 2), label="hands")
    stub = probe.stub
    probe.tables += 1
    probe.seeds.count = 0  # every example deals from the same seeds: replays are exact
    table = Table(probe, ruleset)
    table.players_seeds = data.draw(st.booleans(), label="players add seeds")
    event(f"client seed policy {'players' if table.players_seeds else 'table'}")
    request = pb.CreateTableRequest(
        seats=seats,
        request_id=f"probe-{probe.tables}",
        turn_time_limit_ms=LONG_TURN_MS,
        client_seed="probe",
        client_seed_policy=pb.CLIENT_SEED_POLICY_PLAYERS
        if table.players_seeds
        else pb.CLIENT_SEED_POLICY_TABLE,
    )
    spec = ruleset_spec(RULESETS[name])
    assert spec is not None
    request.ruleset.CopyFrom(spec)
    table.refused(lambda: stub.CreateTable(request), {UNAUTHENTICATED}, viewer=None)
    created = stub.CreateTable(request, metadata=OPERATOR)
    table.drew(probe.seeds.last)
    assert created.table.next_commitment == commitment(table.next_seed)
    table.table_id = created.table_id
    table.states[1] = engine.new_match(ruleset, seats=seats)
    table.saw(None, 1, created)
    if not OTHER_TABLE_TOKEN:
        other = stub.CreateTable(
            pb.CreateTableRequest(seats=2, request_id="other"), metadata=OPERATOR
        )
        joined = stub.JoinSeat(
            pb.JoinSeatRequest(
                table_id=other.table_id, seat=0, player_id="x", expected_version=1, request_id="x"
            )
        )
        OTHER_TABLE_TOKEN.append(joined.seat_token)
    for s in range(seats):
        joined = stub.JoinSeat(
            pb.JoinSeatRequest(
                table_id=table.table_id,
                seat=s,
                player_id=f"player-{s}",
                expected_version=table.version,
                request_id=f"{table.table_id}-join-{s}",
            )
        )
        table.applied(engine.SitDown(s, f"player-{s}"), joined.table.version)
        table.tokens[s] = joined.seat_token
        table.saw(s, joined.table.version, joined.table)
        table.refused(
            lambda: stub.CreateTable(
                pb.CreateTableRequest(request_id="nope"), metadata=seat_md(table.tokens[0])
            ),
            {PERMISSION_DENIED},
            viewer=None,
        )
    batch = data.draw(st.booleans(), label="batch_events")  # one message per event, or batches
    watch = pb.WatchRequest(table_id=table.table_id, batch_events=batch)
    watches = [WatchLog(stub, watch, seat_md(table.tokens[s]), s) for s in range(seats)]
    watches.append(WatchLog(stub, watch, (), None))
    as_seat_0 = pb.WatchRequest(table_id=table.table_id, as_seat=0, batch_events=batch)
    watches.append(WatchLog(stub, as_seat_0, OPERATOR, 0))
    try:
        for _ in range(hands):
            play_hand(table, data)
        wait_until(
            lambda: all(w.version() == table.version for w in watches),
            what="every watch to reach the last version",
        )
    finally:
        for w in watches:
            w.stop()
    for w in watches:
        assert w.messages[0].HasField("snapshot")
        for m in w.messages:
            if m.HasField("events"):  # each event of a batch, at its own version
                assert batch and m.events.events
                for batched in m.events.events:
                    table.saw(w.viewer, batched.version, batched)
                continue
            version = m.event.version if m.HasField("event") else m.snapshot.version
            table.saw(w.viewer, version, m)
    return table


def set_own_seeds(table: Table, data: st.DataObject) -> None:
    """Players pick seeds of their own for the next hand (or are refused: table policy)."""
    stub = table.probe.stub
    for seat in sorted(table.tokens):
        if not data.draw(st.booleans(), label="set a seed"):
            continue
        text = data.draw(st.text(max_size=12), label="seed")
        request = pb.SetClientSeedRequest(
            table_id=table.table_id,
            seat=seat,
            client_seed=text,
            expected_version=table.version,
            request_id=f"{table.table_id}-seed-{table.version}",
        )
        if not table.players_seeds:
            table.refused(
                partial(stub.SetClientSeed, request, metadata=seat_md(table.tokens[seat])),
                {grpc.StatusCode.FAILED_PRECONDITION},
                viewer=seat,
            )
            continue
        attack_move(table, data, request, stub.SetClientSeed, seat)
        response = stub.SetClientSeed(request, metadata=seat_md(table.tokens[seat]))
        table.unchanged(response.table.version)
        table.own_seeds[seat] = text.encode()
        event("a player's own seed in the deal")
        table.saw(seat, response.table.version, response.table)
        assert response.table.seats[seat].client_seed == text.encode()


def play_hand(table: Table, data: st.DataObject) -> None:
    set_own_seeds(table, data)
    stub = table.probe.stub
    start = pb.StartHandRequest(
        table_id=table.table_id,
        expected_version=table.version,
        request_id=f"{table.table_id}-start-{table.version}",
    )
    attack_move(table, data, start, stub.StartHand, None)
    starter = data.draw(st.sampled_from([None, *sorted(table.tokens)]), label="starter")
    md = OPERATOR if starter is None else seat_md(table.tokens[starter])
    started = stub.StartHand(start, metadata=md)
    assert started.table.hand.commitment == commitment(table.next_seed)  # as committed ahead
    table.applied(
        engine.StartHand(table.next_seed, table.hand_client_seed()), started.table.version
    )
    table.drew(table.probe.seeds.last)  # the next hand's, drawn by this StartHand
    assert started.table.next_commitment == commitment(table.next_seed)
    table.saw(starter, started.table.version, started.table)
    styles = {
        s: data.draw(st.sampled_from(["default", "random", "mixed"]), label="style")
        for s in sorted(table.tokens)
    }
    while engine.seats_to_act(table.state):
        hand = table.state.hand
        assert hand is not None
        waiting = engine.seats_to_act(table.state)
        seat = data.draw(st.sampled_from(waiting), label="seat")
        md = seat_md(table.tokens[seat])
        mine = stub.GetTable(pb.GetTableRequest(table_id=table.table_id), metadata=md).table
        table.saw(seat, mine.version, mine)
        own = next(s for s in mine.hand.seats if s.seat == seat)
        assert {Card.parse(c) for c in own.pending} == set(hand.seat(seat).pending)
        spectator = stub.GetTable(pb.GetTableRequest(table_id=table.table_id)).table
        table.saw(None, spectator.version, spectator)
        version = table.version
        move: engine.Place | engine.SetFantasyland
        if hand.seat(seat).in_fantasyland:
            event("a Fantasyland hand set face down")
            move = random_fantasyland(table, data, seat, hand)
            request: Message = set_request(table, move, version)
            method = stub.SetFantasyland
        else:
            move = random_place(table, data, seat, hand, styles[seat])
            request = place_request(table, move, version)
            method = stub.PlaceCards
            if data.draw(st.booleans(), label="try something illegal"):
                try_illegal(table, data, seat, request)
        attack_move(table, data, request, method, seat)
        response = method(request, metadata=md)
        table.applied(move, response.table.version)
        table.saw(seat, response.table.version, response.table)
        assert method(request, metadata=md) == response  # a retry: the first answer
    leave = pb.LeaveSeatRequest(
        table_id=table.table_id, seat=0, expected_version=table.version, request_id="leave"
    )
    attack_move(table, data, leave, stub.LeaveSeat, 0)
    for s in table.tokens:
        as_seat = stub.GetTable(
            pb.GetTableRequest(table_id=table.table_id, as_seat=s), metadata=OPERATOR
        ).table
        table.saw(s, as_seat.version, as_seat)
    table.refused(
        lambda: stub.GetTable(
            pb.GetTableRequest(table_id=table.table_id), metadata=seat_md(OTHER_TABLE_TOKEN[0])
        ),
        {PERMISSION_DENIED},
        viewer=None,
    )


@settings(
    max_examples=8,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],  # a failing example is big: report it unshrunk
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_no_seat_is_ever_sent_a_card_it_may_not_see_and_wrong_credentials_are_refused(
    probe: Probe, data: st.DataObject
) -> None:
    table = play_probe(probe, data)
    table.check_seen()
    assert table.refusals > 0 and len(table.seen) > 20
