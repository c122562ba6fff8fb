"""Seats over their whole life, tried as an attacker would, on both stores and on three
replicas sharing one Redis (docs/security.md has the threat model these tests check).

- A Watch stream is sent every event as its credentials may see it *then*: a seat token's
  stream ends (UNAUTHENTICATED) when its seat is left, before any later event, so the
  seat's next player shares nothing with it; a seat token resuming from before its seat
  was taken gets those events as a spectator does.
- A request id answers only the credentials that sent it: anyone else's call with it is
  judged as a new request of theirs (credentials first, then the version).
- The same request id with another request is refused (REQUEST_ID_REUSED), for every
  mutating RPC.
- A Hypothesis state machine plays random lifecycles (join, leave, another player taking
  the seat, watches, resumes, reconnects, retries with old, foreign and reused request ids,
  operator calls, Fantasyland hands, timeouts) and checks after every step that no
  response, error or stream message sent to any credential holds a card or a server seed
  it may not know at that version (tests/e2e/lifecycle_model.py keeps the engine's side),
  and at its end that every hand the table finished verifies, the hands as one match.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any, ClassVar

import grpc
import pytest
from google.protobuf.message import Message
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from ofc import engine
from ofc.cards import Card
from ofc.policy import DEFAULT_POLICY
from ofc.rulesets import resolve_ruleset
from ofc.verify import verify_match
from ofc_client import RequestIdReusedError, TableClient
from ofc_client.requests import ruleset_spec
from ofc_service.application.manager import MAX_LEAVE_CHANGES
from ofcpoker.v1 import cards_pb2
from ofcpoker.v1 import table_service_pb2 as pb

from tests.conftest import RedisServer
from tests.e2e.lifecycle_model import (
    OPERATOR,
    Audience,
    Cluster,
    Holder,
    Metadata,
    TableModel,
    open_cluster,
    seat_md,
    wire_status,
)
from tests.e2e.tablekit import API_KEY, RawWatch, wait_until
from tests.e2e.test_table_security import (
    CARD_CODE,
    RULESETS,
    TABLE_ID,
    place_request,
    random_fantasyland,
    random_place,
    set_request,
)

TURN_MS = 5_000  # on the test's clock: a turn runs out only when the test moves it
UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED
PERMISSION_DENIED = grpc.StatusCode.PERMISSION_DENIED
REFUSED = {UNAUTHENTICATED, PERMISSION_DENIED}
WRONG_KEY = (("x-ofc-api-key", "not-the-key"),)
REUSED = (grpc.StatusCode.INVALID_ARGUMENT, "REQUEST_ID_REUSED", "request_id")
# No Fantasyland: a seat may always leave once its hand is over.
PINEAPPLE_ONLY = {"preset": "pineapple", "fantasyland_entry": []}
CLASSIC_ONLY = {"preset": "classic", "fantasyland_entry": []}
EXAMPLES = itertools.count()  # every example its own table (its own create request id)


@pytest.fixture(scope="module", params=["memory", "redis"])
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """One replica on the in-memory store, or three replicas on one Redis."""
    if request.param == "memory":
        with open_cluster(None, 1) as one:
            yield one
    else:
        redis: RedisServer = request.getfixturevalue("redis_server")
        with open_cluster(redis, 3) as three:
            yield three


def fresh(request: Message, suffix: str) -> Any:
    """``request`` under a request id of its own."""
    copy: Any = type(request)()
    copy.CopyFrom(request)
    copy.request_id = f"{copy.request_id}-{suffix}"
    return copy


class Driver:
    """One table of the cluster, driven through its replicas, with its engine model."""

    def __init__(
        self,
        cluster: Cluster,
        name: str,
        ruleset: Any = "classic",
        *,
        seats: int = 2,
        policy: pb.ClientSeedPolicy.ValueType = pb.CLIENT_SEED_POLICY_TABLE,
        create_id: str = "",
        first_seed: bytes = b"",
    ) -> None:
        self.cluster = cluster
        # the same deals for the same moves: replays are exact
        cluster.seeds.reset(name, first=first_seed)
        spec = ruleset_spec(ruleset)
        assert spec is not None
        self.create_request = pb.CreateTableRequest(
            ruleset=spec, seats=seats, turn_time_limit_ms=TURN_MS, client_seed="lifecycle",
            client_seed_policy=policy, request_id=create_id or f"{name}-create",
        )  # fmt: skip
        created = self.stub(0).CreateTable(self.create_request, metadata=OPERATOR)
        self.table_id = created.table_id
        self.model = TableModel(cluster, self.table_id, resolve_ruleset(ruleset), seats)
        self.model.sync()
        self.holders: dict[int, Holder] = {}
        self.ids = itertools.count()

    # what tests/e2e/test_table_security.py's move builders read of a table
    @property
    def state(self) -> engine.MatchState:
        return self.model.state

    @property
    def ruleset(self) -> Any:
        return self.model.ruleset

    def stub(self, replica: int) -> Any:
        return self.cluster.stubs[replica % len(self.cluster.stubs)]

    def request_id(self, what: str) -> str:
        return f"{self.table_id}-{what}-{next(self.ids)}"

    def join(self, seat: int, player: str, *, replica: int = 0) -> Holder:
        request = pb.JoinSeatRequest(
            table_id=self.table_id, seat=seat, player_id=player,
            expected_version=self.model.version, request_id=self.request_id("join"),
        )  # fmt: skip
        joined = self.stub(replica).JoinSeat(request)
        self.model.sync()
        holder = Holder(joined.seat_token, seat, player, joined.table.version)
        self.holders[seat] = holder
        self.model.check(holder, holder.joined, joined, "JoinSeat")
        return holder

    def leave(
        self, seat: int, *, replica: int = 0
    ) -> tuple[pb.LeaveSeatRequest, pb.LeaveSeatResponse]:
        holder = self.holders.pop(seat)
        request = pb.LeaveSeatRequest(
            table_id=self.table_id, seat=seat, expected_version=self.model.version,
            request_id=self.request_id("leave"),
        )  # fmt: skip
        left: pb.LeaveSeatResponse = self.stub(replica).LeaveSeat(request, metadata=holder.md)
        holder.left = left.table.version
        self.model.sync()
        return request, left

    def start(self, *, replica: int = 0) -> pb.StartHandResponse:
        request = pb.StartHandRequest(
            table_id=self.table_id, expected_version=self.model.version,
            request_id=self.request_id("start"),
        )  # fmt: skip
        started: pb.StartHandResponse = self.stub(replica).StartHand(request, metadata=OPERATOR)
        self.model.sync()
        return started

    def move_request(self, seat: int) -> tuple[Any, str]:
        """The engine's default move for ``seat`` as a request, and the RPC it goes to."""
        move = DEFAULT_POLICY.choose(self.state, seat)
        table: Any = self  # what the probe's move builders read: table_id
        if isinstance(move, engine.SetFantasyland):
            request: Any = set_request(table, move, self.model.version)
            method = "SetFantasyland"
        else:
            request = place_request(table, move, self.model.version)
            method = "PlaceCards"
        request.request_id = self.request_id(method)
        return request, method

    def move(self, seat: int, *, replica: int = 0) -> Any:
        request, method = self.move_request(seat)
        holder = self.holders[seat]
        response = getattr(self.stub(replica), method)(request, metadata=holder.md)
        self.model.sync()
        self.model.check(holder, response.table.version, response, method)
        return response

    def play_out(self) -> None:
        """Every seat the table waits for makes its default move, to the hand's end."""
        replicas = itertools.count()
        while waiting := engine.seats_to_act(self.state):
            self.move(waiting[0], replica=next(replicas))

    def watch(
        self, md: Metadata, *, replica: int = 0, as_seat: int | None = None, **kwargs: Any
    ) -> RawWatch:
        request = pb.WatchRequest(table_id=self.table_id, **kwargs)
        if as_seat is not None:
            request.as_seat = as_seat
        return RawWatch(self.stub(replica), request, md)

    def caught_up(self, *watches: RawWatch) -> None:
        version = self.model.version
        for w in watches:
            wait_until(
                lambda w=w: w.version() >= version or w.ended.is_set(),  # type: ignore[misc]
                what=f"a watch to reach v{version}",
            )
            assert w.error is None, wire_status(w.error)

    def check_stream(self, audience: Audience, watch: RawWatch, what: str) -> None:
        for m in watch.messages:
            if m.HasField("snapshot"):
                self.model.check(audience, m.snapshot.version, m, what)
        for e in watch.events():
            self.model.check(audience, e.version, e, what)


def call_error(call: Any, request: Message, md: Metadata) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call(request, metadata=md)
    error: grpc.RpcError = caught.value
    return error


# --- a stream outlives no seat --------------------------------------------------------------------
def test_a_watch_ends_when_its_seat_is_left_and_shares_nothing_with_the_next_player(
    cluster: Cluster,
) -> None:
    t = Driver(cluster, "watch-ends", PINEAPPLE_ONLY)
    ann, bob = t.join(0, "ann"), t.join(1, "bob", replica=1)
    ann_batched = t.watch(ann.md, replica=0, batch_events=True)
    ann_single = t.watch(ann.md, replica=2)
    operator = t.watch(OPERATOR, replica=1, as_seat=0, batch_events=True)
    spectator = t.watch((), replica=2)
    t.caught_up(ann_batched, ann_single, operator, spectator)
    t.start(replica=1)
    t.play_out()
    t.caught_up(ann_batched, ann_single, operator, spectator)
    hand_1 = next(e.event_id for e in spectator.events() if e.HasField("hand_started"))

    _, left = t.leave(0, replica=2)
    for own in (ann_batched, ann_single):
        assert own.ended.wait(10), "ann's stream outlived her seat"
        assert own.error is not None
        assert wire_status(own.error)[:2] == (UNAUTHENTICATED, "UNAUTHENTICATED")
        assert all(e.version < left.table.version for e in own.events())  # nothing after
    refused = call_error(t.stub(0).GetTable, pb.GetTableRequest(table_id=t.table_id), ann.md)
    assert refused.code() == UNAUTHENTICATED

    cy = t.join(0, "cy", replica=1)
    joined_view = t.stub(0).GetTable(pb.GetTableRequest(table_id=t.table_id), metadata=cy.md)
    last_hand_seat_0 = next(s for s in joined_view.table.hand.seats if s.seat == 0)
    assert last_hand_seat_0.discard_count > 0 and not last_hand_seat_0.discards  # ann's
    # cy resumes from inside ann's hand: those events as a spectator sees them, all of them
    resumed = t.watch(cy.md, replica=2, after_event_id=hand_1, batch_events=True)
    cy_live = t.watch(cy.md, replica=0)
    t.caught_up(resumed, cy_live)
    t.start(replica=2)
    t.play_out()
    t.caught_up(operator, spectator, resumed, cy_live)

    after = [e.event_id for e in t.model.log if e.event_id > hand_1]
    assert [e.event_id for e in resumed.events()] == sorted(after, key=_position)
    dealt_0 = [e for e in resumed.events() if e.HasField("cards_dealt") and e.cards_dealt.seat == 0]
    assert {bool(e.cards_dealt.cards) for e in dealt_0 if e.version < cy.joined} == {False}
    assert {bool(e.cards_dealt.cards) for e in dealt_0 if e.version > cy.joined} == {True}
    operator_dealt = [e for e in operator.events() if e.HasField("cards_dealt")]
    assert {e.version > cy.joined for e in operator_dealt if e.cards_dealt.cards} == {False, True}
    for audience, watch in (
        (ann, ann_batched), (ann, ann_single), (0, operator), (None, spectator),
        (cy, resumed), (cy, cy_live),
    ):  # fmt: skip
        t.check_stream(audience, watch, "Watch")
    for w in (operator, spectator, resumed, cy_live):
        w.stop()
    del bob


def _position(event_id: str) -> tuple[int, int]:
    ms, _, seq = event_id.partition("-")
    return int(ms), int(seq or 0)


# --- a request id is its sender's ----------------------------------------------------------------
def test_a_request_id_answers_only_the_credentials_that_sent_it(cluster: Cluster) -> None:
    t = Driver(cluster, "replays", CLASSIC_ONLY)
    t.join(0, "ann")
    t.join(1, "bob")
    t.start()
    turn = t.state.hand.turn  # type: ignore[union-attr]
    assert turn is not None
    request, method = t.move_request(turn)
    mover, other = t.holders[turn], t.holders[1 - turn]
    first = getattr(t.stub(0), method)(request, metadata=mover.md)
    t.model.sync()
    version = t.model.version
    carried = {Card.parse(p.card) for p in request.placements}
    strangers: list[tuple[Metadata, tuple[grpc.StatusCode, str]]] = [
        ((), (UNAUTHENTICATED, "UNAUTHENTICATED")),
        (other.md, (PERMISSION_DENIED, "PERMISSION_DENIED")),
        (seat_md(f"st_{t.table_id}.{'A' * 32}"), (UNAUTHENTICATED, "UNAUTHENTICATED")),
        (seat_md(cluster.foreign_token), (PERMISSION_DENIED, "PERMISSION_DENIED")),
        (WRONG_KEY, (UNAUTHENTICATED, "UNAUTHENTICATED")),
        (OPERATOR, (grpc.StatusCode.ABORTED, "STALE_VERSION")),  # may act: judged afresh
    ]
    for k, (md, expected) in enumerate(strangers):
        call = getattr(t.stub(k), method)
        replayed = call_error(call, request, md)
        assert wire_status(replayed)[:2] == expected, md
        assert wire_status(call_error(call, fresh(request, "own"), md))[:2] == expected
        named = {Card.parse(c) for c in CARD_CODE.findall(TABLE_ID.sub("", replayed.details()))}
        assert named <= t.model.may_know(None, version) | carried, replayed.details()
    for k in range(3):  # the sender's own retry, through any replica: its first answer
        assert getattr(t.stub(k), method)(request, metadata=mover.md) == first
    # credentials come before the version: a stale request from a stranger is refused
    stale = fresh(request, "stale")
    assert wire_status(call_error(getattr(t.stub(1), method), stale, ()))[0] == UNAUTHENTICATED
    t.model.sync()
    assert t.model.version == version

    # A join needs no credentials: its request id is what proves the joiner (docs/security.md).
    table = Driver(cluster, "replays-join", CLASSIC_ONLY, seats=3)
    ann = table.join(0, "ann")
    join = pb.JoinSeatRequest(
        table_id=table.table_id, seat=2, player_id="cy", expected_version=table.model.version,
        request_id=table.request_id("join"),
    )  # fmt: skip
    joined = table.stub(0).JoinSeat(join)
    table.model.sync()
    for md, code in (
        (OPERATOR, grpc.StatusCode.ABORTED),
        (ann.md, grpc.StatusCode.ABORTED),  # credentials that hold: another caller
        (mover.md, PERMISSION_DENIED),  # another table's token: refused first
        (WRONG_KEY, UNAUTHENTICATED),
    ):
        assert wire_status(call_error(table.stub(1).JoinSeat, join, md))[0] == code
    assert table.stub(2).JoinSeat(join) == joined  # no credentials, as it was sent

    # The LeaveSeat that revoked a token answers that token's retry; nothing else does.
    leave, left = table.leave(0, replica=1)
    assert table.stub(2).LeaveSeat(leave, metadata=ann.md) == left
    cy = seat_md(joined.seat_token)
    assert wire_status(call_error(table.stub(0).LeaveSeat, leave, cy))[0] == PERMISSION_DENIED
    gone = fresh(leave, "again")
    assert wire_status(call_error(table.stub(0).LeaveSeat, gone, ann.md))[0] == UNAUTHENTICATED


# --- a request id names one request ---------------------------------------------------------------
def test_the_same_request_id_with_another_request_is_refused_for_every_mutating_rpc(
    cluster: Cluster,
) -> None:
    def refused_as_reused(call: Any, request: Message, md: Metadata = ()) -> None:
        before = t.model.version
        assert wire_status(call_error(call, request, md)) == REUSED
        t.model.sync()
        assert t.model.version == before

    t = Driver(cluster, "reuse", RULESETS["easy-fantasyland"], policy=pb.CLIENT_SEED_POLICY_PLAYERS)
    stub = t.stub(1)
    # CreateTable: the example, a classic table and then Pineapple for 3 under one id
    create = pb.CreateTableRequest(request_id=t.request_id("create"))
    table_id = stub.CreateTable(create, metadata=OPERATOR).table_id
    pineapple = pb.CreateTableRequest(seats=3, request_id=create.request_id)
    pineapple.ruleset.preset = "pineapple"
    refused_as_reused(t.stub(2).CreateTable, pineapple, OPERATOR)
    assert t.stub(0).CreateTable(create, metadata=OPERATOR).table_id == table_id

    ann = t.join(0, "ann")
    join = pb.JoinSeatRequest(
        table_id=t.table_id, seat=1, player_id="bob", expected_version=t.model.version,
        request_id=t.request_id("join"),
    )  # fmt: skip
    bob_joined = stub.JoinSeat(join)
    t.model.sync()
    t.holders[1] = Holder(bob_joined.seat_token, 1, "bob", bob_joined.table.version)
    other_player = fresh(join, "x")
    other_player.request_id, other_player.player_id = join.request_id, "mallory"
    refused_as_reused(stub.JoinSeat, other_player)

    seed = pb.SetClientSeedRequest(
        table_id=t.table_id, seat=0, client_seed="mine", expected_version=t.model.version,
        request_id=t.request_id("seed"),
    )  # fmt: skip
    stub.SetClientSeed(seed, metadata=ann.md)
    t.model.sync()
    other_seed = fresh(seed, "x")
    other_seed.request_id, other_seed.client_seed = seed.request_id, "yours"
    refused_as_reused(stub.SetClientSeed, other_seed, ann.md)

    start = pb.StartHandRequest(
        table_id=t.table_id, expected_version=t.model.version, request_id=t.request_id("start")
    )
    stub.StartHand(start, metadata=ann.md)
    t.model.sync()
    later = fresh(start, "x")
    later.request_id, later.expected_version = start.request_id, t.model.version
    refused_as_reused(stub.StartHand, later, ann.md)

    seat = engine.seats_to_act(t.state)[0]
    place, method = t.move_request(seat)
    assert method == "PlaceCards"
    getattr(stub, method)(place, metadata=t.holders[seat].md)
    t.model.sync()
    moved = fresh(place, "x")
    moved.request_id = place.request_id
    moved.placements[0].row = (moved.placements[0].row % 3) + 1  # another row
    refused_as_reused(t.stub(0).PlaceCards, moved, t.holders[seat].md)

    t.play_out()  # the easy ruleset: every board that does not foul earns Fantasyland
    t.start()
    fantasyland = [s for s in t.state.hand.seats if s.in_fantasyland]  # type: ignore[union-attr]
    assert fantasyland, "no Fantasyland hand to set"
    seat = fantasyland[0].seat
    setting, method = t.move_request(seat)
    assert method == "SetFantasyland"
    stub.SetFantasyland(setting, metadata=t.holders[seat].md)
    t.model.sync()
    swapped = fresh(setting, "x")
    swapped.request_id = setting.request_id
    middle, bottom = setting.board.middle[0], setting.board.bottom[0]
    swapped.board.middle[0], swapped.board.bottom[0] = bottom, middle
    refused_as_reused(t.stub(2).SetFantasyland, swapped, t.holders[seat].md)

    # The Python client raises the reason's own exception.
    with TableClient(cluster.servers[-1].address, api_key=API_KEY) as host:
        host.set_client_seed(t.table_id, "ours", seat=1, request_id="host-seed")
        t.model.sync()
        with pytest.raises(RequestIdReusedError) as caught:
            host.set_client_seed(t.table_id, "theirs", seat=1, request_id="host-seed")
    assert (caught.value.reason, caught.value.field) == ("REQUEST_ID_REUSED", "request_id")

    t = Driver(cluster, "reuse-leave", seats=3)
    t.join(0, "ann")
    t.join(1, "bob")
    leave = pb.LeaveSeatRequest(
        table_id=t.table_id, seat=0, expected_version=t.model.version,
        request_id=t.request_id("leave"),
    )  # fmt: skip
    t.stub(0).LeaveSeat(leave, metadata=OPERATOR)
    t.model.sync()
    other_seat = fresh(leave, "x")
    other_seat.request_id, other_seat.seat = leave.request_id, 1
    refused_as_reused(t.stub(1).LeaveSeat, other_seat, OPERATOR)


# --- random lifecycles ----------------------------------------------------------------------------
class Stream:
    """A watch the state machine opened, whom it speaks to, and how it must end."""

    def __init__(self, watch: RawWatch, audience: Audience, md: Metadata, base: int) -> None:
        self.watch = watch
        self.audience = audience
        self.md = md
        self.base = base  # the version its cursor stands at (resumed streams)
        self.checked = 0  # messages checked so far
        self.refused_at_open = False

    @property
    def version(self) -> int:
        return max(self.watch.version(), self.base)


SEAT_CHANGES = ("CreateTable", "JoinSeat", "LeaveSeat")  # their answers are kept whole


class Sent:
    """A mutating request that succeeded, as sent, its answer, and the table's hand then
    (0: before the first)."""

    def __init__(self, method: str, request: Any, md: Metadata, response: Any, hand: int) -> None:
        self.method, self.request, self.md, self.response = method, request, md, response
        self.hand = hand


class Lifecycles(RuleBasedStateMachine):
    """One table per example; every rule through a replica the example picks."""

    cluster: ClassVar[Cluster]
    MAX_STREAMS = 6

    def __init__(self) -> None:
        super().__init__()
        self.t: Driver | None = None
        self.everyone: list[Holder] = []  # every seat token ever issued here
        self.sent: list[Sent] = []
        self.streams: list[Stream] = []
        self.delivered: list[tuple[Audience, int, Message, str]] = []
        self.ids = itertools.count()

    # --- plumbing ----------------------------------------------------------------------------
    @property
    def table(self) -> Driver:
        assert self.t is not None
        return self.t

    def call(self, data: st.DataObject, method: str, request: Any, md: Metadata) -> Any:
        """The call through a drawn replica: its response, or the error it failed with."""
        replica = data.draw(st.integers(0, len(self.cluster.stubs) - 1), label="replica")
        try:
            return getattr(self.cluster.stubs[replica], method)(request, metadata=md, timeout=15)
        except grpc.RpcError as error:
            return error

    def audience(self, md: Metadata, seat: int | None = None) -> Audience:
        """Whom an answer to ``md`` speaks to (``seat``: the seat an operator asked for)."""
        if md == OPERATOR:
            return seat
        held = [h for h in self.everyone if md == h.md]
        return held[0] if held else None

    def current(self) -> list[Holder]:
        return [h for h in self.everyone if h.left is None]

    def credentials(self) -> list[Metadata]:
        """Everything a caller might present: nothing, the operator key, every seat token
        ever issued here, and tokens and keys that are not this table's."""
        made_up = seat_md(f"st_{self.table.table_id}.{'B' * 32}")
        junk = [made_up, seat_md(self.cluster.foreign_token), WRONG_KEY]
        return [(), OPERATOR, *(h.md for h in self.everyone), *junk]

    def answered(self, audience: Audience, version: int, message: Message, what: str) -> None:
        self.delivered.append((audience, version, message, what))

    def refused(self, error: object, md: Metadata, what: str, sent: Any = None) -> None:
        """A failed call: an error with an ErrorInfo, naming no card the caller may not
        know (cards the request itself carried aside)."""
        assert isinstance(error, grpc.RpcError), f"{what} succeeded: {error}"
        wire_status(error)
        named = {Card.parse(c) for c in CARD_CODE.findall(TABLE_ID.sub("", error.details()))}
        carried = cards_of(sent) if sent is not None else set()
        known = self.table.model.may_know(self.audience(md), self.table.model.version)
        assert named <= known | carried, (what, error.details())

    def commit(self, method: str, request: Any, md: Metadata, response: Any) -> None:
        assert not isinstance(response, grpc.RpcError), (method, wire_status(response))
        self.sync()
        self.sent.append(Sent(method, request, md, response, self.hand_now()))

    def sync(self) -> None:
        """The model read again, and every token whose seat the table vacated since (its
        LeaveSeat, or the end of the hand its player asked to leave after) revoked."""
        model = self.table.model
        model.sync()
        for holder in self.everyone:
            holder.note_left(model.vacated)
        # A seat marked leaving is one the rules keep (its hand in play, a Fantasyland owed).
        assert model.record is not None
        for seat in model.record.leaving_seats:
            assert not engine.can_apply(model.state, engine.StandUp(seat)), f"seat {seat} kept"

    def hand_now(self) -> int:
        return max(self.table.model.started_by, default=0)

    def record_kept(self, sent: Sent) -> bool:
        """Whether ``sent``'s request record is still kept: a table keeps those of its
        current and previous hand (what came before the first hand counts as one; a
        CreateTable's claim, the whole retry window). An older request is judged afresh."""
        return sent.method == "CreateTable" or self.hand_now() - sent.hand <= 1

    def answered_as_first(self, sent: Sent) -> bool:
        """Whether a retry of ``sent`` gets its first answer again (docs/security.md): a seat
        change, or a request before the first hand, while its record is kept; a move while
        its hand is the current one and its credentials made no move since."""
        if not self.record_kept(sent):
            return False
        if sent.method in SEAT_CHANGES or sent.hand == 0:
            return True
        later = self.sent[self.sent.index(sent) + 1 :]
        return sent.hand == self.hand_now() and not any(
            s.md == sent.md and s.method not in SEAT_CHANGES for s in later
        )

    def request_id(self, what: str) -> str:
        return f"{self.table.table_id}-{what}-{next(self.ids)}"

    # --- the table ---------------------------------------------------------------------------
    @initialize(data=st.data())
    def create(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(RULESETS)), label="ruleset")
        seats = data.draw(st.integers(2, 3), label="seats")
        self.t = Driver(
            self.cluster, "machine", RULESETS[name], seats=seats,
            create_id=f"machine-{next(EXAMPLES)}",
        )  # fmt: skip
        self.sent.append(Sent("CreateTable", self.t.create_request, OPERATOR, None, 0))
        # Every seat taken and watched by its player (the watches a leave must end).
        for seat in range(seats):
            self.join(data, seat=seat)
            self.open_stream(data, self.everyone[-1].md)

    def empty_seats(self) -> list[int]:
        return [k for k, s in enumerate(self.table.state.seats) if not s.player_id]

    @precondition(lambda self: self.t and self.empty_seats())
    @rule(data=st.data())
    def join(self, data: st.DataObject, seat: int | None = None) -> None:
        """A player takes an empty seat: a new one, or one who sat here before."""
        state = self.table.state
        if seat is None:
            seat = data.draw(st.sampled_from(self.empty_seats()), label="seat")
        seated = {s.player_id for s in state.seats}
        former = sorted({h.player_id for h in self.everyone} - seated)
        player = data.draw(st.sampled_from([f"p{next(self.ids)}", *former]), label="player")
        revoked = [h.md for h in self.everyone if h.left is not None]
        md = data.draw(st.sampled_from([(), (), OPERATOR, *revoked]), label="joiner presents")
        request = pb.JoinSeatRequest(
            table_id=self.table.table_id, seat=seat, player_id=player,
            expected_version=self.table.model.version, request_id=self.request_id("join"),
        )  # fmt: skip
        response = self.call(data, "JoinSeat", request, md)
        if md in revoked:  # a left seat's token is no credential, for a join too
            self.refused(response, md, "JoinSeat")
            assert wire_status(response)[0] == UNAUTHENTICATED
            return
        if not engine.can_apply(state, engine.SitDown(seat, player)):
            self.refused(response, md, "JoinSeat")
            return
        self.commit("JoinSeat", request, md, response)
        holder = Holder(response.seat_token, seat, player, response.table.version)
        self.everyone.append(holder)
        self.answered(seat if md == OPERATOR else holder, holder.joined, response, "JoinSeat")

    @precondition(lambda self: self.t and self.current())
    @rule(data=st.data())
    def another_player_takes_a_seat(self, data: st.DataObject) -> None:
        """A player leaves (if the table lets them) and someone sits down in that seat."""
        holder = data.draw(st.sampled_from(self.current()), label="leaver")
        self.leave(data, holder)
        if holder.left is not None:
            self.join(data, seat=holder.seat)

    @precondition(lambda self: self.t and self.current())
    @rule(data=st.data())
    def leave(self, data: st.DataObject, holder: Holder | None = None) -> None:
        if holder is None:
            holder = data.draw(st.sampled_from(self.current()), label="leaver")
        md = data.draw(st.sampled_from([holder.md, OPERATOR]), label="leave by")
        request = pb.LeaveSeatRequest(
            table_id=self.table.table_id, seat=holder.seat,
            expected_version=self.table.model.version, request_id=self.request_id("leave"),
        )  # fmt: skip
        response = self.call(data, "LeaveSeat", request, md)
        if not engine.can_apply(self.table.state, engine.StandUp(holder.seat)):
            self.refused(response, md, "LeaveSeat")
            return
        self.commit("LeaveSeat", request, md, response)
        assert holder.left == response.table.version
        self.answered(None, response.table.version, response, "LeaveSeat")

    @precondition(lambda self: self.t and self.current())
    @rule(data=st.data())
    def leave_after_the_hand(self, data: st.DataObject) -> None:
        """A player asks to leave after the hand (or withdraws that): gone now if the table
        lets them go, else marked, and vacated by the service with the change that lets
        them go (the hand's last move, a timeout's included; see sync)."""
        holder = data.draw(st.sampled_from(self.current()), label="leaver")
        md = data.draw(st.sampled_from([holder.md, OPERATOR]), label="leave by")
        mode = data.draw(
            st.sampled_from(
                [pb.LEAVE_MODE_AFTER_HAND, pb.LEAVE_MODE_AFTER_HAND, pb.LEAVE_MODE_CANCEL]
            ),
            label="mode",
        )
        request = pb.LeaveSeatRequest(
            table_id=self.table.table_id, seat=holder.seat, mode=mode,
            expected_version=self.table.model.version, request_id=self.request_id("leave"),
        )  # fmt: skip
        response = self.call(data, "LeaveSeat", request, md)
        now = mode == pb.LEAVE_MODE_AFTER_HAND and engine.can_apply(
            self.table.state, engine.StandUp(holder.seat)
        )
        record = self.table.model.record
        assert record is not None
        if not now and (holder.seat in record.leaving_seats) == (mode == pb.LEAVE_MODE_AFTER_HAND):
            # the mark it has: answered with the table as it is, no change (and no record)
            assert not isinstance(response, grpc.RpcError), wire_status(response)
            assert response.table.version == self.table.model.version
            self.answered(self.audience(md, holder.seat), response.table.version, response, "no-op")
            return
        if not now and dict(record.leaving_changes).get(holder.seat, 0) >= MAX_LEAVE_CHANGES:
            self.refused(response, md, "LeaveSeat")
            assert wire_status(response)[1] == "LEAVE_CHANGES_SPENT", wire_status(response)
            return
        self.commit("LeaveSeat", request, md, response)
        marks = self.table.model.record.leaving_seats  # type: ignore[union-attr]
        if now:
            assert holder.left == response.table.version
            self.answered(None, response.table.version, response, "LeaveSeat")
            return
        assert holder.left is None and (holder.seat in marks) == (mode == pb.LEAVE_MODE_AFTER_HAND)
        assert response.table.seats[holder.seat].leaving == (holder.seat in marks)
        self.answered(self.audience(md, holder.seat), response.table.version, response, "LeaveSeat")

    @precondition(lambda self: self.t)
    @rule(data=st.data())
    def start(self, data: st.DataObject) -> None:
        md = data.draw(st.sampled_from([OPERATOR, *(h.md for h in self.current())]), label="by")
        request = pb.StartHandRequest(
            table_id=self.table.table_id, expected_version=self.table.model.version,
            request_id=self.request_id("start"),
        )  # fmt: skip
        response = self.call(data, "StartHand", request, md)
        if not engine.can_apply(self.table.state, engine.StartHand(bytes(32))):
            self.refused(response, md, "StartHand")
            return
        self.commit("StartHand", request, md, response)
        self.answered(self.audience(md), response.table.version, response, "StartHand")

    def waiting(self) -> bool:
        return self.t is not None and bool(engine.seats_to_act(self.t.state))

    @precondition(lambda self: self.waiting())
    @rule(data=st.data())
    def moves(self, data: st.DataObject) -> None:
        """A few moves (a street or two) of the seats the table waits for."""
        for _ in range(data.draw(st.integers(1, 8), label="moves")):
            if not self.waiting():
                return
            self.move(data)

    @precondition(lambda self: self.t)
    @rule(data=st.data())
    def hand(self, data: st.DataObject) -> None:
        """A hand from its start to its end (when the table can start one)."""
        self.start(data)
        while self.waiting():
            self.move(data)

    def move(self, data: st.DataObject) -> None:
        """A seat the table waits for moves (its player or the operator): a random legal
        move or the engine's default one."""
        t = self.table
        seat = data.draw(st.sampled_from(engine.seats_to_act(t.state)), label="seat")
        hand = t.state.hand
        assert hand is not None
        holder = next(h for h in self.current() if h.seat == seat)
        md = data.draw(st.sampled_from([holder.md, holder.md, OPERATOR]), label="move by")
        version = t.model.version
        table: Any = t  # what the probe's move builders read: state, ruleset, table_id
        request: Any
        if hand.seat(seat).in_fantasyland:
            fantasyland = random_fantasyland(table, data, seat, hand)
            request, method = set_request(table, fantasyland, version), "SetFantasyland"
        else:
            # mostly random (the engine's default move costs more, and seldom fouls)
            style = data.draw(st.sampled_from(["random", "random", "default"]), label="style")
            place = random_place(table, data, seat, hand, style)
            request, method = place_request(table, place, version), "PlaceCards"
        request.request_id = self.request_id(method)
        response = self.call(data, method, request, md)
        self.commit(method, request, md, response)
        self.answered(self.audience(md, seat), response.table.version, response, method)

    @precondition(lambda self: self.waiting())
    @rule()
    def time_passes(self) -> None:
        """The turn runs out: the replicas' sweepers make the default move, exactly once."""
        t = self.table
        assert t.model.record is not None and t.model.record.deadline_ms is not None
        self.cluster.clock.advance_to(t.model.record.deadline_ms + 1)

        def swept() -> bool:
            self.sync()
            record = t.model.record
            assert record is not None
            return all(ms > self.cluster.clock.now for _, ms in record.seat_deadlines)

        wait_until(swept, what="the sweepers to apply the timeouts")

    # --- watching ------------------------------------------------------------------------------
    def open_stream(
        self, data: st.DataObject, md: Metadata, *, after: str = "", base: int = 0
    ) -> None:
        audience_seat = None
        request = pb.WatchRequest(
            table_id=self.table.table_id,
            after_event_id=after,
            batch_events=data.draw(st.booleans(), label="batches"),
        )
        if md == OPERATOR and data.draw(st.booleans(), label="as a seat"):
            audience_seat = data.draw(st.integers(0, self.table.model.seats - 1), label="as")
            request.as_seat = audience_seat
        replica = data.draw(st.integers(0, len(self.cluster.stubs) - 1), label="replica")
        watch = RawWatch(self.cluster.stubs[replica], request, md)
        stream = Stream(watch, self.audience(md, audience_seat), md, base)
        holder = stream.audience if isinstance(stream.audience, Holder) else None
        stream.refused_at_open = (holder is not None and holder.left is not None) or (
            md != OPERATOR and md != () and holder is None
        )
        self.streams.append(stream)

    def open_streams(self) -> list[Stream]:
        return [s for s in self.streams if not s.watch.ended.is_set()]

    def room_for_a_stream(self) -> bool:
        return len(self.open_streams()) < self.MAX_STREAMS

    @precondition(lambda self: self.t and self.room_for_a_stream())
    @rule(data=st.data())
    def watch(self, data: st.DataObject) -> None:
        """Anyone opens a watch: players (seated or gone), the operator, spectators, junk."""
        self.open_stream(data, data.draw(st.sampled_from(self.credentials()), label="watcher"))

    @precondition(lambda self: self.t and self.t.model.log and self.room_for_a_stream())
    @rule(data=st.data())
    def resume(self, data: st.DataObject) -> None:
        """A watch resumed from any event id of the table (every one was sent to someone),
        by a seated player (one who took the seat after that event, perhaps), the operator
        or a spectator."""
        logged = [e.event_id for e in self.table.model.log]
        cursor = data.draw(st.sampled_from(["0", *logged]), label="after")
        base = self.table.model.version_of_event.get(cursor, 1)
        md = data.draw(
            st.sampled_from([(), OPERATOR, *(h.md for h in self.current())]), label="resumer"
        )
        self.open_stream(data, md, after=cursor, base=base)

    @precondition(lambda self: self.t and self.open_streams())
    @rule(data=st.data())
    def reconnect(self, data: st.DataObject) -> None:
        """A watch drops (or is closed) and, perhaps, reconnects after its last event."""
        stream = data.draw(st.sampled_from(self.open_streams()), label="stream")
        stream.watch.stop()
        if data.draw(st.booleans(), label="reconnect"):
            after = stream.watch.last_event_id()
            base = self.table.model.version_of_event.get(after, stream.version)
            self.open_stream(data, stream.md, after=after, base=base)

    @precondition(lambda self: self.t)
    @rule(data=st.data())
    def get(self, data: st.DataObject) -> None:
        md = data.draw(st.sampled_from(self.credentials()), label="reader")
        request = pb.GetTableRequest(table_id=self.table.table_id)
        seat = None
        if md == OPERATOR and data.draw(st.booleans(), label="as a seat"):
            seat = data.draw(st.integers(0, self.table.model.seats - 1), label="as")
            request.as_seat = seat
        response = self.call(data, "GetTable", request, md)
        audience = self.audience(md, seat)
        if isinstance(response, grpc.RpcError):
            assert response.code() in REFUSED, wire_status(response)
            assert md not in ((), OPERATOR) and not (
                isinstance(audience, Holder) and audience.left is None
            ), wire_status(response)
            self.refused(response, md, "GetTable")
            return
        assert not (isinstance(audience, Holder) and audience.left is not None), "revoked"
        self.answered(audience, response.table.version, response, "GetTable")

    # --- request ids ---------------------------------------------------------------------------
    @precondition(lambda self: self.sent)
    @rule(data=st.data())
    def retry(self, data: st.DataObject) -> None:
        """A request sent again, unchanged, by its sender while its record is kept: its
        first answer, or (a move since superseded) the table as it is now for the
        credentials as they are now, or their refusal; applied once either way."""
        sent = data.draw(st.sampled_from([s for s in self.sent if self.record_kept(s)]))
        first = self.answered_as_first(sent)
        response = self.call(data, sent.method, sent.request, sent.md)
        what = f"a retried {sent.method}"
        if not first and isinstance(response, grpc.RpcError):
            self.refused(response, sent.md, what, sent.request)
            return
        assert not isinstance(response, grpc.RpcError), (sent.method, wire_status(response))
        if sent.method == "CreateTable":
            assert response.table_id == self.table.table_id
            self.answered(None, response.table.version, response, "CreateTable")
        elif first:
            assert response == sent.response, f"{what} answered differently"
        else:
            audience = self.audience(sent.md, getattr(sent.request, "seat", None))
            self.answered(audience, response.table.version, response, what)

    @precondition(lambda self: self.sent)
    @rule(data=st.data())
    def replay_as_someone_else(self, data: st.DataObject) -> None:
        """Another caller sends a request exactly, its request id included: refused just as
        the same request under a request id of its own."""
        sent = data.draw(st.sampled_from(self.sent), label="replayed")
        md = data.draw(st.sampled_from([c for c in self.credentials() if c != sent.md]))
        replayed = self.call(data, sent.method, sent.request, md)
        self.refused(replayed, md, f"a replayed {sent.method}", sent.request)
        own = self.call(data, sent.method, fresh(sent.request, f"own-{next(self.ids)}"), md)
        self.refused(own, md, sent.method, sent.request)
        assert wire_status(replayed) == wire_status(own), (sent.method, md)

    @precondition(lambda self: self.sent)
    @rule(data=st.data())
    def reuse(self, data: st.DataObject) -> None:
        """The sender reuses a request id for another request while its record is kept:
        REQUEST_ID_REUSED."""
        sent = data.draw(st.sampled_from([s for s in self.sent if self.record_kept(s)]))
        changed: Any = type(sent.request)()
        changed.CopyFrom(sent.request)
        if sent.method == "CreateTable":
            changed.max_hands += data.draw(st.integers(1, 5), label="hands")
        else:
            changed.expected_version += data.draw(st.integers(1, 3), label="versions")
        response = self.call(data, sent.method, changed, sent.md)
        assert isinstance(response, grpc.RpcError), f"a reused id made a {sent.method}"
        assert wire_status(response) == REUSED, (sent.method, wire_status(response))

    # --- the promise -----------------------------------------------------------------------------
    @invariant()
    def nothing_is_sent_that_its_receiver_may_not_know(self) -> None:
        if self.t is None:
            return
        model = self.table.model
        self.sync()
        for audience, version, message, what in self.delivered:
            model.check(audience, version, message, what)
        self.delivered.clear()
        for stream in self.streams:
            self.check_stream(stream)

    def check_stream(self, stream: Stream) -> None:
        model, watch, holder = self.table.model, stream.watch, stream.audience
        revoked = isinstance(holder, Holder) and holder.left is not None
        if revoked or stream.refused_at_open:
            assert watch.ended.wait(10), "a watch outlived its credentials"
            if not watch.stopped:  # the server ended it: with the reason why
                assert watch.error is not None, "a watch of revoked credentials ended silently"
        else:
            wait_until(
                lambda: stream.version >= model.version or watch.ended.is_set(),
                what="a watch to catch up",
            )
        if watch.error is not None:
            code, _, _ = wire_status(watch.error)
            assert code in REFUSED and (revoked or stream.refused_at_open), wire_status(watch.error)
        if stream.refused_at_open:
            assert not watch.messages, "a refused watch was sent something"
        messages = watch.messages[stream.checked :]
        stream.checked += len(messages)
        for m in messages:
            if m.HasField("snapshot"):
                model.check(stream.audience, m.snapshot.version, m, "a Watch snapshot")
            events = m.events.events if m.HasField("events") else [m.event]
            for e in events if not m.HasField("snapshot") else ():
                model.check(stream.audience, e.version, e, "a Watch event")
                if isinstance(holder, Holder) and holder.left is not None:
                    assert e.version <= holder.left, "an event after the seat was left"
        # every event after the stream's start, in order: none twice, none missing
        received = [e.event_id for e in watch.events()]
        start = watch.request.after_event_id or (
            watch.messages[0].snapshot.last_event_id if watch.messages else "0"
        )
        logged = [e.event_id for e in model.log]
        first = 0 if start in ("", "0") else logged.index(start) + 1
        assert received == logged[first : first + len(received)], "a gap or a duplicate"

    def teardown(self) -> None:
        for stream in self.streams:
            stream.watch.stop()
        if self.t is not None:
            self.the_hands_verify_as_one_match()

    def the_hands_verify_as_one_match(self) -> None:
        """Every hand the table finished, as anyone reads it, verifies, and the hands chain:
        whatever joined, left or ran out of time between and during them."""
        stub, hands, token = self.cluster.stubs[0], [], ""
        while True:
            page = stub.ListHands(
                pb.ListHandsRequest(table_id=self.table.table_id, page_size=100, page_token=token)
            )
            for summary in page.hands:
                served = stub.GetHandHistory(pb.GetHandHistoryRequest(
                    table_id=self.table.table_id, hand_number=summary.hand_number
                ))  # fmt: skip
                hands.append((f"hand {summary.hand_number}", json.loads(served.history_json)))
            token = page.next_page_token
            if not token:
                break
        report = verify_match(hands)
        assert report.ok, [str(d) for d in report.discrepancies]


def cards_of(request: Any) -> set[Card]:
    """The cards a request carries itself (a caller may be told of its own input)."""
    codes = [p.card for p in getattr(request, "placements", ())]
    codes.append(getattr(request, "discard", ""))
    board: cards_pb2.Board | None = getattr(request, "board", None)
    if board is not None:
        codes += [*board.top, *board.middle, *board.bottom]
    codes += getattr(request, "discards", ())
    return {Card.parse(c) for c in codes if c}


def test_random_lifecycles_never_tell_a_credential_what_it_may_not_know(
    cluster: Cluster,
) -> None:
    Lifecycles.cluster = cluster
    replicas = len(cluster.stubs)
    run_state_machine_as_test(
        Lifecycles,
        settings=settings(
            max_examples=12 if replicas == 1 else 6,
            stateful_step_count=30,
            deadline=None,
            phases=[Phase.explicit, Phase.generate],  # a failing run is long: report it as is
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
