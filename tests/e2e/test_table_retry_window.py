"""A seat's whole life against the retry window as a production server keeps it: the last
hands' events, a caller's earlier moves shrunk to markers, the previous hand's records too
(tests/e2e/test_table_lifecycles.py plays random lifecycles with the whole log and every
answer kept; these tables keep what ``ofc serve`` keeps by default).

Alice plays a hand at seat 0 and leaves; Bob takes her seat and is dealt the next hand; Alice
comes back at seat 2. At every step of the next two hands, every request anyone ever sent is
sent again: by its sender (with the seat token it had, revoked or not), by the seat's next
player, by Alice's new token and by a spectator, and every watch is resumed from the event
ids of the log kept. Each answer, error and stream message is checked against what its
receiver may know at its version (tests/e2e/lifecycle_model.py), and no retry changes the
table: a retry has its effect once.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from ofc import engine
from ofc.policy import DEFAULT_POLICY
from ofc.rulesets import resolve_ruleset
from ofcpoker.v1 import cards_pb2
from ofcpoker.v1 import table_service_pb2 as pb

from tests.conftest import RedisServer
from tests.e2e.lifecycle_model import (
    OPERATOR,
    Audience,
    Cluster,
    Holder,
    Metadata,
    open_cluster,
    wire_status,
)
from tests.e2e.tablekit import (
    FantasylandPlan,
    RawWatch,
    fantasyland_plan,
    full_event,
    wait_until,
)
from tests.e2e.test_table_lifecycles import PINEAPPLE_ONLY, Driver, cards_of, fresh
from tests.e2e.test_table_security import CARD_CODE, TABLE_ID

UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED
TRIMMED = (grpc.StatusCode.OUT_OF_RANGE, "EVENTS_TRIMMED", "after_event_id")
TABLES = itertools.count()
ROW_CODES = {
    "top": cards_pb2.ROW_POSITION_TOP,
    "middle": cards_pb2.ROW_POSITION_MIDDLE,
    "bottom": cards_pb2.ROW_POSITION_BOTTOM,
}


@pytest.fixture(scope="module", params=["memory", "redis", "redis, whole log"])
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """One replica on the in-memory store, or two on one Redis; they keep two hands' log,
    or the whole log (``OFC_EVENT_LOG_HANDS=0``), whose request records must be as bounded."""
    if request.param == "memory":
        with open_cluster(None, 1, event_log_hands=2) as one:
            yield one
    else:
        redis: RedisServer = request.getfixturevalue("redis_server")
        hands = 0 if request.param.endswith("whole log") else 2
        with open_cluster(redis, 2, event_log_hands=hands) as two:
            yield two


@dataclass
class Sent:
    """A mutating request that took effect: as sent, by whom, and its first answer."""

    method: str
    request: Any
    md: Metadata
    audience: Audience
    response: Any
    segment: int  # the hands started when it was sent: its record lives with that hand


class Attack:
    """One table, every request sent to it, and every credential ever issued at it."""

    def __init__(
        self, cluster: Cluster, ruleset: Any = PINEAPPLE_ONLY, *, seats: int = 3,
        first_seed: bytes = b"",
    ) -> None:  # fmt: skip
        name = f"retry-window-{next(TABLES)}"  # each table its own create request id
        self.t = Driver(cluster, name, ruleset, seats=seats, first_seed=first_seed)
        self.cluster = cluster
        self.sent: list[Sent] = []
        self.everyone: list[Holder] = []
        self.replicas: Iterator[int] = itertools.count()
        self.ids = itertools.count()

    # --- the table's life ------------------------------------------------------------------
    def call(self, method: str, request: Any, md: Metadata, replica: int | None = None) -> Any:
        """The call through ``replica`` (default: the next one in turn): its answer, or the
        error it failed with."""
        stub = self.t.stub(next(self.replicas) if replica is None else replica)
        try:
            return getattr(stub, method)(request, metadata=md, timeout=15)
        except grpc.RpcError as error:
            return error

    def send(
        self,
        method: str,
        request: Any,
        md: Metadata,
        audience: Audience,
        replica: int | None = None,
    ) -> Any:
        response = self.call(method, request, md, replica)
        assert not isinstance(response, grpc.RpcError), (method, wire_status(response))
        self.t.model.sync()
        self.t.model.check(audience, response.table.version, response, method)
        self.sent.append(Sent(method, request, md, audience, response, self.hands()))
        return response

    def join(self, seat: int, player: str) -> Holder:
        request = pb.JoinSeatRequest(
            table_id=self.t.table_id, seat=seat, player_id=player,
            expected_version=self.t.model.version, request_id=self.t.request_id("join"),
        )  # fmt: skip
        version = self.t.model.version + 1
        joined = self.call("JoinSeat", request, ())
        assert not isinstance(joined, grpc.RpcError), wire_status(joined)
        holder = Holder(joined.seat_token, seat, player, version)
        self.t.model.sync()
        self.t.model.check(holder, version, joined, "JoinSeat")
        self.sent.append(Sent("JoinSeat", request, (), holder, joined, self.hands()))
        self.t.holders[seat] = holder
        self.everyone.append(holder)
        return holder

    def leave(self, seat: int) -> None:
        holder = self.t.holders.pop(seat)
        request = pb.LeaveSeatRequest(
            table_id=self.t.table_id, seat=seat, expected_version=self.t.model.version,
            request_id=self.t.request_id("leave"),
        )  # fmt: skip
        self.send("LeaveSeat", request, holder.md, holder)
        holder.left = self.t.model.version

    def start(self) -> None:
        request = pb.StartHandRequest(
            table_id=self.t.table_id, expected_version=self.t.model.version,
            request_id=self.t.request_id("start"),
        )  # fmt: skip
        self.send("StartHand", request, OPERATOR, None)

    def move(self, seat: int | None = None, *, replica: int | None = None) -> bool:
        """``seat`` (default: the first seat the table waits for) makes its default move
        (False: nobody is waited for)."""
        waiting = engine.seats_to_act(self.t.state)
        if not waiting:
            return False
        seat = waiting[0] if seat is None else seat
        request, method = self.t.move_request(seat)
        holder = self.t.holders[seat]
        self.send(method, request, holder.md, holder, replica)
        return True

    def planned(self, plan: FantasylandPlan) -> None:
        """Hand 1 as ``plan`` has it: its seat earns Fantasyland; the others play by default."""
        while waiting := engine.seats_to_act(self.t.state):
            seat = waiting[0]
            hand = self.t.state.hand
            if seat != plan.seat or hand is None:
                self.move()
                continue
            placements, discard = plan.moves[hand.street]
            request = pb.PlaceCardsRequest(
                table_id=self.t.table_id, seat=seat, expected_version=self.t.model.version,
                request_id=self.t.request_id("planned"), discard=discard or "",
                placements=[pb.Placement(card=c, row=ROW_CODES[r]) for c, r in placements.items()],
            )  # fmt: skip
            holder = self.t.holders[seat]
            self.send("PlaceCards", request, holder.md, holder)

    def play(self, moves: int) -> None:
        for _ in range(moves):
            if not self.move():
                return

    def hands(self) -> int:
        return self.t.state.hands_played

    # --- the attacks -------------------------------------------------------------------------
    def audience(self, md: Metadata) -> Audience:
        held = [h for h in self.everyone if h.md == md]
        return held[0] if held else None

    def callers(self) -> list[Metadata]:
        """Every credential a caller might present here: none, and every seat token issued."""
        return [(), *(h.md for h in self.everyone)]

    def check_error(self, error: grpc.RpcError, md: Metadata, request: Any, what: str) -> None:
        """A refusal with an ErrorInfo, naming no card and no seed its receiver may not know
        (the cards the request carried aside)."""
        wire_status(error)
        model = self.t.model
        named = set(CARD_CODE.findall(TABLE_ID.sub("", error.details() or "")))
        known = {str(c) for c in model.may_know(self.audience(md), model.version)}
        assert named <= known | {str(c) for c in cards_of(request)}, (what, error.details())
        trailers = b"".join(v for _, v in error.trailing_metadata() or () if isinstance(v, bytes))
        for seed in model.secret_seeds(model.version):
            assert seed not in trailers and seed.hex().encode() not in trailers, what

    def answered(self, response: Any, md: Metadata, request: Any, what: str) -> None:
        """Whatever came back to ``md`` holds nothing it may not know."""
        if isinstance(response, grpc.RpcError):
            self.check_error(response, md, request, what)
        else:
            self.t.model.check(self.audience(md), response.table.version, response, what)

    def unchanged(self, what: str) -> None:
        version = self.t.model.version
        self.t.model.sync()
        assert self.t.model.version == version, f"{what} changed the table"

    def retry_everything(self) -> None:
        """Every request sent again by everyone, each judged; none may change the table."""
        model = self.t.model
        for sent in self.sent:
            what = f"{sent.method} {sent.request.request_id}"
            again = self.call(sent.method, sent.request, sent.md)
            self.answered(again, sent.md, sent.request, f"a retry of {what}")
            self.unchanged(f"a retry of {what}")
            holder = sent.audience if isinstance(sent.audience, Holder) else None
            if sent.segment < self.hands() - 1:  # an older hand's: judged as a new request
                assert isinstance(again, grpc.RpcError), f"a retry of {what} of an older hand"
            elif sent.method in ("JoinSeat", "LeaveSeat"):  # their first answer, always
                assert again == sent.response, f"a retry of {what} answered differently"
            elif isinstance(again, grpc.RpcError):
                # only a token that left its seat, for a move whose answer is no longer kept
                assert holder is not None and holder.left is not None, wire_status(again)
                assert again.code() == UNAUTHENTICATED, wire_status(again)
            elif again != sent.response:  # the table as it is now, for the sender now
                assert again.table.version == model.version, f"a retry of {what}"
                assert holder is None or holder.left is None, f"{what}: a revoked token"
            for md in self.callers():
                if md == sent.md:
                    continue
                replayed = self.call(sent.method, sent.request, md)
                self.answered(replayed, md, sent.request, f"{what} replayed by another")
                self.unchanged(f"{what} replayed by another")
                if sent.method == "JoinSeat":  # anyone with its id: its first answer
                    continue
                own = self.call(sent.method, fresh(sent.request, f"own-{next(self.ids)}"), md)
                self.unchanged(f"{what} under another's own id")
                assert isinstance(replayed, grpc.RpcError), f"{what} replayed by another"
                assert isinstance(own, grpc.RpcError), f"{what} sent by another"
                assert wire_status(replayed) == wire_status(own), what

    def read_everything(self) -> None:
        """GetTable and a new Watch for every credential; every Watch resumed from the event
        ids kept (a sample) by every credential: each message checked, revoked tokens sent
        nothing."""
        model = self.t.model
        for md in self.callers():
            got = self.call("GetTable", pb.GetTableRequest(table_id=self.t.table_id), md)
            self.answered(got, md, None, "GetTable")
            audience = self.audience(md)
            revoked = isinstance(audience, Holder) and audience.left is not None
            assert isinstance(got, grpc.RpcError) == revoked, "GetTable"
        self.read_histories()
        logged = [e.event_id for e in model.log]
        cursors = ["", "0", *logged[:-1:15], *self.around_seat_changes()]
        for md in self.callers():
            for cursor in cursors:
                self.watch(md, cursor)

    def read_histories(self) -> None:
        """The hands over have histories, to anyone; the hand in play has none yet, and no
        history holds a seed that is still secret (the hand in play's, the next one's)."""
        model, table_id = self.t.model, self.t.table_id
        hand = self.t.state.hand
        over = self.hands() if hand is None or hand.over else self.hands() - 1
        listed = self.call("ListHands", pb.ListHandsRequest(table_id=table_id), ())
        assert [h.hand_number for h in listed.hands] == list(range(1, over + 1))
        secrets = model.secret_seeds(model.version)
        for number in range(1, self.hands() + 1):
            got = self.call(
                "GetHandHistory",
                pb.GetHandHistoryRequest(table_id=table_id, hand_number=number),
                (),
            )
            if number > over:
                assert isinstance(got, grpc.RpcError), f"the history of hand {number} in play"
                self.check_error(got, (), None, f"GetHandHistory of hand {number} in play")
                continue
            sent = got.SerializeToString()
            for seed in secrets:
                assert seed not in sent and seed.hex().encode() not in sent, number

    def around_seat_changes(self) -> list[str]:
        """The event ids just before and at every seat change of the log."""
        log = self.t.model.log
        out = []
        for k, stored in enumerate(log[:-1]):
            event = full_event(stored)
            if event.HasField("seat_taken") or event.HasField("seat_vacated"):
                out += [e.event_id for e in log[max(k - 1, 0) : k + 1]]
        return out

    def watch(self, md: Metadata, cursor: str) -> None:
        model = self.t.model
        audience = self.audience(md)
        revoked = isinstance(audience, Holder) and audience.left is not None
        request = pb.WatchRequest(table_id=self.t.table_id, after_event_id=cursor)
        watch = RawWatch(self.t.stub(next(self.replicas)), request, md)
        try:
            wait_until(
                lambda: watch.version() >= model.version or watch.ended.is_set(),
                what=f"a watch from {cursor!r} to catch up",
            )
        finally:
            watch.stop()
        if watch.error is not None:
            status = wire_status(watch.error)
            assert revoked or status == TRIMMED, status
            assert not watch.messages, "a refused watch was sent something"
            return
        assert not revoked, "a revoked token's watch"
        for m in watch.messages:
            if m.HasField("snapshot"):
                model.check(audience, m.snapshot.version, m, f"a snapshot from {cursor!r}")
        for e in watch.events():
            model.check(audience, e.version, e, f"an event resumed from {cursor!r}")

    def attack(self) -> None:
        self.retry_everything()
        self.read_everything()


def test_no_retry_resume_or_rejoin_tells_a_seat_what_it_may_not_know(cluster: Cluster) -> None:
    whole_life(Attack(cluster))


def whole_life(a: Attack) -> None:
    """Alice plays, leaves, Bob takes her seat, Alice comes back at another: every step
    attacked."""
    alice, _carol = a.join(0, "alice"), a.join(1, "carol")
    a.start()
    a.play(3)
    a.attack()  # the hand's earlier moves are markers now, the latest ones whole
    a.play(1000)
    a.leave(0)  # Alice's records of the hand are whole (the hand is the table's last)
    a.attack()
    bob = a.join(0, "bob")  # her seat's next player
    assert bob.token != alice.token
    a.attack()  # Bob sees the hand Alice played as a spectator does, by any route
    a.start()  # her records of the hand before shrink; Bob is dealt her seat's cards
    a.play(2)
    a.attack()
    a.join(2, "alice")  # Alice again, at another seat, sitting the hand out
    a.attack()
    a.play(1000)
    a.start()  # the first hand's records and events go; the second's shrink
    a.play(4)
    a.attack()


def test_a_fantasyland_set_stays_face_down_to_every_retry_and_resume(cluster: Cluster) -> None:
    """A seat that earned Fantasyland sets its board face down while the other plays on:
    no retry, replay, read or resumed watch of anyone else shows it before the reveal."""
    fantasyland_face_down(lambda **table: Attack(cluster, **table))


def fantasyland_face_down(attack: Callable[..., Attack]) -> None:
    """The Fantasyland hand of the test above on a table made by ``attack(**table)``."""
    plan = fantasyland_plan(resolve_ruleset("pineapple"), 2, b"lifecycle")
    a = attack(ruleset="pineapple", seats=2, first_seed=plan.server_seed)
    a.join(0, "p0"), a.join(1, "p1")
    a.start()
    a.planned(plan)
    assert a.t.state.seats[plan.seat].fantasyland == plan.fantasyland_cards
    a.start()  # the Fantasyland seat is dealt its cards at once
    fantasyland = a.t.state.hand
    assert fantasyland is not None and fantasyland.seat(plan.seat).in_fantasyland
    assert plan.seat in engine.seats_to_act(a.t.state)
    a.attack()  # dealt, not set
    a.move(plan.seat)  # set face down, while the other seat plays on
    fantasyland = a.t.state.hand
    assert fantasyland is not None and fantasyland.seat(plan.seat).done
    assert not fantasyland.over
    a.attack()
    a.play(1)
    a.attack()
    a.play(1000)  # the reveal
    a.attack()


def moves_left(state: engine.MatchState) -> int:
    """How many default moves the hand in play has left."""
    count = 0
    while waiting := engine.seats_to_act(state):
        state, _ = engine.apply(state, DEFAULT_POLICY.choose(state, waiting[0]))
        count += 1
    return count


def test_a_retry_through_a_replica_that_missed_the_moves_since(redis_server: RedisServer) -> None:
    """A replica keeps the table as it last saw it and commits a move on it in one round
    trip; a retry that reaches a replica which missed the moves since is answered by the
    commit script itself: a superseded move with the table now, for the credentials now
    (a token whose seat was left: refused), and nothing applied twice."""
    with open_cluster(redis_server, 2, event_log_hands=2) as cluster:
        a = Attack(cluster, seats=2)
        a.join(0, "alice"), a.join(1, "carol")
        a.start()
        a.replicas = itertools.repeat(1)  # every call but those that name replica 0
        a.move(replica=0)  # the last move replica 0 sees
        a.move(replica=1)
        earlier = a.sent[-1]
        a.move(replica=1)
        a.move(replica=1)  # the same seat again: its earlier move keeps a marker only
        again = a.call(earlier.method, earlier.request, earlier.md, replica=0)
        a.answered(again, earlier.md, earlier.request, "a superseded move via a stale replica")
        a.unchanged("a superseded move via a stale replica")
        assert again.table.version == a.t.model.version != earlier.response.table.version
        while moves_left(a.t.state) > 2:
            a.move(replica=1)
        a.move(replica=0)
        a.move(replica=1)  # the hand's last move
        last = a.sent[-1]
        assert isinstance(last.audience, Holder) and a.t.state.hand is not None
        assert a.t.state.hand.over
        a.leave(last.audience.seat)  # through replica 1, as everything below
        a.join(last.audience.seat, "bob")
        a.start()  # the hand before's records shrink to markers
        refused = a.call(last.method, last.request, last.md, replica=0)
        a.answered(refused, last.md, last.request, "a left seat's move via a stale replica")
        a.unchanged("a left seat's move via a stale replica")
        assert isinstance(refused, grpc.RpcError) and refused.code() == UNAUTHENTICATED
