"""The settlement feed end to end: real gRPC channels, the in-memory store and a real Redis
server (two replicas sharing it). Several tables play several hands; a ledger consumer is
cancelled in the middle of a batch, restarts under the same name, and ends up with every
settlement exactly once, its per-player sums equal to the tables' running totals."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from ofc import engine
from ofc.engine import SitDown, StartHand
from ofc.rulesets import Row
from ofc_cli.main import main as cli_main
from ofc_service.api.settlement_feed import SERVICE, SettlementFeedHandlers
from ofc_service.application.settlements import PairSettlement, SeatSettlement, SettlementRecord
from ofc_service.auth import Authenticator
from ofc_service.server.background import BackgroundServer
from ofc_service.server.config import ServerConfig
from ofc_service.store import MemorySettlementFeed
from ofcpoker.v1 import cards_pb2, rules_service_pb2, ruleset_pb2, settlement_pb2
from ofcpoker.v1 import rules_service_pb2_grpc as rules_grpc
from ofcpoker.v1 import settlement_feed_pb2 as feed_pb
from ofcpoker.v1 import settlement_feed_pb2_grpc as feed_grpc
from ofcpoker.v1 import table_service_pb2 as pb
from ofcpoker.v1 import table_service_pb2_grpc as pb_grpc
from prometheus_client import REGISTRY

from tests.in_process import InProcess

API_KEY = "feed-operator-key"
OPERATOR = (("x-ofc-api-key", API_KEY),)
ROWS = (cards_pb2.ROW_POSITION_BOTTOM, cards_pb2.ROW_POSITION_MIDDLE, cards_pb2.ROW_POSITION_TOP)
LEDGER = "ledger"


def start_server(redis_url: str = "") -> BackgroundServer:
    config = ServerConfig(
        listen="127.0.0.1:0", metrics_listen="", http_listen="", redis_url=redis_url,
        grace_seconds=1,
        api_keys=API_KEY,
    )  # fmt: skip
    return BackgroundServer(config)


def seat_md(token: str) -> tuple[tuple[str, str], ...]:
    return (("x-ofc-seat-token", token),)


def error_reason(err: grpc.RpcError) -> tuple[grpc.StatusCode, str]:
    trailers = dict(err.trailing_metadata() or ())
    status = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
    info = error_details_pb2.ErrorInfo()
    status.details[0].Unpack(info)
    return err.code(), info.reason


URL_FIXTURES = {"redis": "redis_url", "cluster": "redis_cluster_url"}


@pytest.fixture(params=["memory", "redis", "cluster"])
def servers(request: pytest.FixtureRequest) -> Iterator[list[BackgroundServer]]:
    """One replica on the in-memory store, or two replicas sharing one Redis (or one Redis
    Cluster)."""
    if request.param == "memory":
        with start_server() as one:
            yield [one]
    else:
        url = request.getfixturevalue(URL_FIXTURES[request.param])
        with start_server(url) as a, start_server(url) as b:
            yield [a, b]


@pytest.fixture
def channels(servers: list[BackgroundServer]) -> Iterator[list[grpc.Channel]]:
    opened = [grpc.insecure_channel(s.address) for s in servers]
    try:
        yield opened
    finally:
        for channel in opened:
            channel.close()


class Match:
    """A classic table without Fantasyland (every hand is street by street), money on,
    driven through the API; moves alternate between the replicas' stubs."""

    def __init__(
        self,
        stubs: list[pb_grpc.TableServiceStub],
        name: str,
        players: list[str],
        *,
        unit_value: int,
        loss_cap: int = 0,
        pair_units: dict[tuple[int, int], int] | None = None,
    ) -> None:
        self.stubs = stubs
        self.calls = 0
        overrides = ruleset_pb2.RulesetOverrides(unit_value=unit_value, loss_cap=loss_cap)
        overrides.fantasyland_entry.SetInParent()  # an empty list: nobody enters Fantasyland
        stakes = [
            settlement_pb2.PairUnitValue(a=a, b=b, unit_value=u)
            for (a, b), u in (pair_units or {}).items()
        ]
        created = self.stub.CreateTable(
            pb.CreateTableRequest(
                seats=len(players), request_id=f"create-{name}", client_seed=name,
                ruleset=ruleset_pb2.RulesetSpec(preset="classic", overrides=overrides),
                pair_unit_values=stakes,
            ),
            metadata=OPERATOR,
        )  # fmt: skip
        self.id = created.table_id
        self.version = created.table.version
        self.tokens: dict[int, str] = {}
        for seat, player in enumerate(players):
            joined = self.stub.JoinSeat(
                pb.JoinSeatRequest(
                    table_id=self.id, seat=seat, player_id=player,
                    expected_version=self.version, request_id=f"join-{name}-{seat}",
                )
            )  # fmt: skip
            self.tokens[seat] = joined.seat_token
            self.version = joined.table.version

    @property
    def stub(self) -> pb_grpc.TableServiceStub:
        self.calls += 1
        return self.stubs[self.calls % len(self.stubs)]

    def view(self, seat: int | None = None) -> pb.TableView:
        md = () if seat is None else seat_md(self.tokens[seat])
        response = self.stub.GetTable(pb.GetTableRequest(table_id=self.id), metadata=md)
        table: pb.TableView = response.table
        return table

    def play_hand(self) -> None:
        table = self.stub.StartHand(
            pb.StartHandRequest(
                table_id=self.id, expected_version=self.version, request_id=f"start-{self.version}"
            ),
            metadata=OPERATOR,
        ).table
        while not table.hand.over:
            seat = table.hand.turn
            mine = self.view(seat)
            me = next(s for s in mine.hand.seats if s.seat == seat)
            room = {
                ROWS[0]: 5 - len(me.board.bottom),
                ROWS[1]: 5 - len(me.board.middle),
                ROWS[2]: 3 - len(me.board.top),
            }
            placements = []
            for card in me.pending:
                row = next(r for r in ROWS if room[r] > 0)
                room[row] -= 1
                placements.append(pb.Placement(card=card, row=row))
            table = self.stub.PlaceCards(
                pb.PlaceCardsRequest(
                    table_id=self.id, seat=seat, placements=placements,
                    expected_version=mine.version, request_id=f"place-{mine.version}",
                ),
                metadata=seat_md(self.tokens[seat]),
            ).table  # fmt: skip
        self.version = table.version


class Ledger:
    """A platform's ledger: books each record by settlement id (an upsert), acknowledges
    every ``ack_every`` records, and remembers every delivery it saw."""

    def __init__(self, feed: feed_grpc.SettlementFeedServiceStub, consumer: str) -> None:
        self.feed = feed
        self.consumer = consumer
        self.booked: dict[str, feed_pb.SettlementRecord] = {}
        self.deliveries: list[tuple[str, bool]] = []

    def run(self, *, until: int, crash_after: int | None = None, ack_every: int = 2) -> None:
        """Consume until ``until`` records are booked and acknowledged, or, with
        ``crash_after``, stop dead after that many deliveries (unacknowledged ones stay)."""
        stream = self.feed.Subscribe(
            feed_pb.SubscribeRequest(group=LEDGER, consumer=self.consumer, batch_size=4),
            metadata=OPERATOR,
            timeout=30,
        )
        unacked: list[str] = []
        try:
            for message in stream:
                record = message.record
                self.booked[record.settlement_id] = record  # upsert: a repeat changes nothing
                self.deliveries.append((record.settlement_id, message.redelivered))
                unacked.append(record.settlement_id)
                if crash_after is not None and len(self.deliveries) == crash_after:
                    return  # the crash: no acknowledgement of what is in `unacked`
                if len(unacked) == ack_every or len(self.booked) == until:
                    done = self.feed.Acknowledge(
                        feed_pb.AcknowledgeRequest(group=LEDGER, settlement_ids=unacked),
                        metadata=OPERATOR,
                    )
                    assert done.acknowledged == len(unacked) and not done.unknown_settlement_ids
                    unacked = []
                if len(self.booked) == until and not unacked:
                    return
        finally:
            stream.cancel()


def lag_count() -> float:
    return REGISTRY.get_sample_value("ofc_settlement_lag_seconds_count") or 0.0


def test_a_ledger_that_crashes_mid_batch_books_every_settlement_once(
    servers: list[BackgroundServer], channels: list[grpc.Channel]
) -> None:
    # Deals from a fixed sequence of seeds (shared by the replicas), so the hands, and the
    # money that changes hands in them, are the same on every run.
    seeds = (hashlib.sha256(b"ledger-%d" % n).digest() for n in itertools.count())
    for replica in servers:
        replica.server.sweeper.manager.server_seed = lambda: next(seeds)
    stubs = [pb_grpc.TableServiceStub(c) for c in channels]
    feeds = [feed_grpc.SettlementFeedServiceStub(c) for c in channels]
    matches = [
        Match(stubs, "capped", ["ann", "bob"], unit_value=25, loss_cap=4),
        Match(stubs, "three", ["ann", "cy", "dee"], unit_value=10),
        Match(stubs, "cents", ["bob", "cy"], unit_value=1, loss_cap=6),
    ]
    for match, hands in zip(matches, (3, 2, 2), strict=True):
        for _ in range(hands):
            match.play_hand()
    lag_before = lag_count()

    ledger = Ledger(feeds[-1], "ledger-1")
    ledger.run(until=8, crash_after=3)  # acks records 1-2, crashes holding 3 (and 4 unsent)
    assert len(ledger.booked) == 3
    matches[2].play_hand()  # the tables play on while the ledger is down
    ledger.feed = feeds[0]  # it restarts, perhaps against another replica, under its name
    ledger.run(until=8)

    played = zip(matches, (3, 2, 3), strict=True)
    expected = {f"{m.id}:{n}" for m, hands in played for n in range(1, hands + 1)}
    assert set(ledger.booked) == expected
    seen = Counter(settlement_id for settlement_id, _ in ledger.deliveries)
    first_batch = [settlement_id for settlement_id, _ in ledger.deliveries[:3]]
    assert seen[first_batch[2]] == 2  # the one held at the crash came again: at least once
    assert all(seen[s] == 1 for s in first_batch[:2])  # acknowledged ones did not
    assert [r for s, r in ledger.deliveries[3:5]] == [True, True]  # pending ones came first
    assert sum(seen.values()) == 9 and lag_count() - lag_before == 8

    # every record is zero-sum and consistent with its table's ruleset
    by_table = {m.id: m for m in matches}
    for record in ledger.booked.values():
        assert sum(s.points for s in record.seats) == 0 and sum(s.units for s in record.seats) == 0
        assert record.settlement_id == f"{record.table_id}:{record.hand_number}"
        assert record.table_id in by_table
        for pair in record.pairs:
            assert pair.units == pair.capped_points * record.unit_value
            if record.loss_cap == 0:
                assert pair.capped_points == pair.points

    # the ledger's sums per player equal the tables' running totals, in points and money
    ledger_totals: Counter[tuple[str, str]] = Counter()
    for record in ledger.booked.values():
        for s in record.seats:
            ledger_totals[s.player_id, "points"] += s.points
            ledger_totals[s.player_id, "units"] += s.units
    table_totals: Counter[tuple[str, str]] = Counter()
    for match in matches:
        for seat in match.view().seats:
            table_totals[seat.player_id, "points"] += seat.points
            table_totals[seat.player_id, "units"] += seat.units
    assert ledger_totals == table_totals
    assert any(value for value in table_totals.values())  # money actually changed hands

    # nothing is pending any more; acknowledging again changes nothing
    again = feeds[0].Acknowledge(
        feed_pb.AcknowledgeRequest(group=LEDGER, settlement_ids=[*sorted(expected), "x:1"]),
        metadata=OPERATOR,
    )
    assert again.acknowledged == 0 and list(again.unknown_settlement_ids) == ["x:1"]

    # another group reads the whole feed on its own, in hand order per table
    audit = feeds[0].Subscribe(
        feed_pb.SubscribeRequest(group="audit", consumer="a"), metadata=OPERATOR, timeout=30
    )
    received = [next(audit).record for _ in range(len(expected))]
    audit.cancel()
    assert {r.settlement_id for r in received} == expected
    for match in matches:
        numbers = [r.hand_number for r in received if r.table_id == match.id]
        assert numbers == sorted(numbers)


def seed_where_every_pair_scores(client_seed: bytes) -> bytes:
    """A server seed whose hand 1, played by :meth:`Match.play_hand`'s rule (each card to the
    lowest row with room) at a 3-seat table, gives every pair of seats points to pay."""
    for n in itertools.count():
        server_seed = n.to_bytes(32, "big")
        state, _ = engine.replay(
            engine.new_match("classic", seats=3),
            [*(SitDown(s, f"p{s}") for s in range(3)), StartHand(server_seed, client_seed)],
        )
        while state.hand is not None and state.hand.turn is not None:
            hand_seat = state.hand.seat(state.hand.turn)
            room = {Row.BOTTOM: 5 - len(hand_seat.board.bottom),
                    Row.MIDDLE: 5 - len(hand_seat.board.middle),
                    Row.TOP: 3 - len(hand_seat.board.top)}  # fmt: skip
            placements = []
            for card in hand_seat.pending:
                row = next(r for r in (Row.BOTTOM, Row.MIDDLE, Row.TOP) if room[r] > 0)
                room[row] -= 1
                placements.append((card, row))
            state, _ = engine.apply(state, engine.Place(hand_seat.seat, tuple(placements)))
        assert state.hand is not None
        result = engine.hand_settlement(state.hand, state.ruleset)
        if all(p.capped_points for p in result.pairs):
            return server_seed
    raise AssertionError("unreachable")


def test_unit_values_agreed_per_pair_of_seats_price_the_table_feed_and_history(
    servers: list[BackgroundServer],
    channels: list[grpc.Channel],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 6: seats 0 and 1 play 20 a unit, seats 0 and 2 play 15, seats 1 and 2 the
    ruleset's 2. The table, the settlement, the feed record and the hand history all say so,
    and the history alone reproduces the money (a changed stake fails verification)."""
    server_seed = seed_where_every_pair_scores(b"stakes")  # money changes hands in every pair
    for replica in servers:
        replica.server.sweeper.manager.server_seed = lambda: server_seed
    stubs = [pb_grpc.TableServiceStub(c) for c in channels]
    agreed = {(0, 1): 20, (0, 2): 15}
    match = Match(stubs, "stakes", ["ann", "bob", "cy"], unit_value=2, pair_units=agreed)
    unit_of = {**agreed, (1, 2): 2}
    stakes = [(p.a, p.b, p.unit_value) for p in match.view().pair_unit_values]
    assert stakes == [(0, 1, 20), (0, 2, 15)]
    match.play_hand()
    table = match.view()
    assert [(p.a, p.b, p.unit_value) for p in table.pair_unit_values] == stakes
    hand_seats = [s.seat for s in table.hand.seats]  # the settlement's player order
    settlement = table.hand.settlement
    pair_units: dict[tuple[int, int], tuple[int, int]] = {}  # seats -> (capped points, units)
    for pair in settlement.pairs:
        a, b = hand_seats[pair.a], hand_seats[pair.b]
        assert pair.unit_value == unit_of[min(a, b), max(a, b)]
        assert pair.units == pair.capped_points * pair.unit_value
        sign = 1 if a < b else -1  # from the lower seat's side
        pair_units[min(a, b), max(a, b)] = (sign * pair.capped_points, sign * pair.units)
    assert all(points for points, _ in pair_units.values())  # every pair has money to move
    seat_units = {
        0: pair_units[0, 1][1] + pair_units[0, 2][1],
        1: -pair_units[0, 1][1] + pair_units[1, 2][1],
        2: -pair_units[0, 2][1] - pair_units[1, 2][1],
    }
    assert sum(seat_units.values()) == 0
    assert {hand_seats[p.index]: p.units for p in settlement.players} == seat_units
    assert {s.seat: s.units for s in table.seats} == seat_units  # the first hand's totals

    # the settlement feed: per pair its own unit value, per seat the same money
    feed = feed_grpc.SettlementFeedServiceStub(channels[-1])
    stream = feed.Subscribe(
        feed_pb.SubscribeRequest(group="stakes", consumer="c"), metadata=OPERATOR, timeout=30
    )
    record = next(stream).record
    stream.cancel()
    assert record.settlement_id == f"{match.id}:1" and record.unit_value == 2
    assert {(p.seat_a, p.seat_b): (p.unit_value, p.units) for p in record.pairs} == {
        (hand_seats[p.a], hand_seats[p.b]): (p.unit_value, p.units) for p in settlement.pairs
    }
    assert {s.seat: (s.units, s.total_units) for s in record.seats} == {
        seat: (units, units) for seat, units in seat_units.items()
    }

    # the hand history carries the stakes and reproduces the settlement alone
    got = match.stub.GetHandHistory(pb.GetHandHistoryRequest(table_id=match.id, hand_number=1))
    assert got.settlement == settlement
    history = json.loads(got.history_json)
    assert history["initial_state"]["pair_unit_values"] == [
        {"a": 0, "b": 1, "unit_value": 20},
        {"a": 0, "b": 2, "unit_value": 15},
    ]
    rules = rules_grpc.RulesServiceStub(channels[0])

    def verify(text: str) -> tuple[rules_service_pb2.VerifyHandHistoryResponse, int, str]:
        answer = rules.VerifyHandHistory(
            rules_service_pb2.VerifyHandHistoryRequest(history_json=text)
        )
        path = tmp_path / "hand.json"
        path.write_text(text)
        status = cli_main(["verify", str(path)])
        return answer, status, capsys.readouterr().out

    answer, status, out = verify(got.history_json)
    assert answer.ok and (status, out) == (0, "OK\n")
    history["initial_state"]["pair_unit_values"][0]["unit_value"] = 21  # 20 a unit, said 21
    answer, status, out = verify(json.dumps(history))
    assert not answer.ok and answer.discrepancy.code == "SETTLEMENT_MISMATCH"
    assert status == 1 and out.startswith("SETTLEMENT_MISMATCH at settlement.")


def test_the_feed_needs_an_operator_key_and_checks_its_input(
    channels: list[grpc.Channel],
) -> None:
    feed = feed_grpc.SettlementFeedServiceStub(channels[0])

    def expect(call: object, code: grpc.StatusCode, reason: str) -> None:
        with pytest.raises(grpc.RpcError) as caught:
            call()  # type: ignore[operator]
        assert error_reason(caught.value) == (code, reason)

    ack = feed_pb.AcknowledgeRequest(group=LEDGER, settlement_ids=["t:1"])
    expect(lambda: feed.Acknowledge(ack), grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED")
    expect(
        lambda: next(feed.Subscribe(feed_pb.SubscribeRequest(group="g", consumer="c"))),
        grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED",
    )  # fmt: skip
    for wrong in (
        feed_pb.SubscribeRequest(group="no spaces", consumer="c"),
        feed_pb.SubscribeRequest(group="g", consumer=""),
        feed_pb.SubscribeRequest(group="g", consumer="c", batch_size=5000),
    ):
        expect(
            lambda w=wrong: next(feed.Subscribe(w, metadata=OPERATOR)),
            grpc.StatusCode.INVALID_ARGUMENT, "INVALID_INPUT",
        )  # fmt: skip
    bad = feed_pb.AcknowledgeRequest(group=LEDGER, stream_ids=["1-0", "yesterday"])
    with pytest.raises(grpc.RpcError) as caught:
        feed.Acknowledge(bad, metadata=OPERATOR)
    assert error_reason(caught.value) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_INPUT")
    trailers = dict(caught.value.trailing_metadata() or ())
    assert b"stream_ids[1]" in trailers["grpc-status-details-bin"]
    many = feed_pb.AcknowledgeRequest(group=LEDGER, settlement_ids=[f"t:{n}" for n in range(1001)])
    expect(
        lambda: feed.Acknowledge(many, metadata=OPERATOR),
        grpc.StatusCode.INVALID_ARGUMENT, "BATCH_TOO_LARGE",
    )  # fmt: skip
    assert feed.Acknowledge(ack, metadata=OPERATOR).unknown_settlement_ids == ["t:1"]


class QuietContext:
    """Just enough of a servicer context for calling Subscribe in-process."""

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return ()

    def cancelled(self) -> bool:
        return False


def record_bytes(settlement: str) -> bytes:
    seats = (
        SeatSettlement(0, "a", 1, 1, 1, 1, False),
        SeatSettlement(1, "b", -1, -1, -1, -1, True),
    )
    return SettlementRecord(
        settlement, "t", int(settlement.split(":")[1]), "classic", 1, None, 0, seats,
        (PairSettlement(0, 1, 1, 1, 1, 1),),
    ).to_bytes()  # fmt: skip


def test_an_idle_subscription_picks_up_records_a_cut_off_call_left_pending() -> None:
    """Two calls under one consumer name (the old one cut off, its cancellation not yet
    seen): records the old call read after the new one passed its pending phase are pending
    for the name; the new call delivers them once idle instead of at the next Subscribe."""

    async def scenario() -> list[tuple[str, bool]]:
        feed = MemorySettlementFeed()
        handlers = SettlementFeedHandlers(feed, Authenticator(), poll_s=0.05)
        servicer = InProcess(handlers, SERVICE)
        context: Any = QuietContext()
        for n in (1, 2):
            await feed.publish(f"t:{n}", record_bytes(f"t:{n}"))
        stream = servicer.Subscribe(feed_pb.SubscribeRequest(group="g", consumer="c"), context)
        got = [await anext(stream), await anext(stream)]
        await feed.publish("t:3", record_bytes("t:3"))
        assert [e.settlement_id for e in await feed.read_new("g", "c")] == ["t:3"]  # the old call
        got.append(await asyncio.wait_for(anext(stream), 5))
        await feed.acknowledge("g", [m.record.stream_id for m in got[:2]])
        await feed.publish("t:4", record_bytes("t:4"))
        got.append(await asyncio.wait_for(anext(stream), 5))
        await stream.aclose()
        return [(m.record.settlement_id, m.redelivered) for m in got]

    delivered = asyncio.run(scenario())
    assert delivered == [("t:1", False), ("t:2", False), ("t:3", True), ("t:4", False)]
