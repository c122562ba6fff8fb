"""Live tables end to end: real gRPC channels, the in-memory store and a real Redis server
(two replicas sharing it), seat tokens, versions, request-id replays, watches, deadlines."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from ofc.shuffle import commitment
from ofc_service.server.background import BackgroundServer
from ofc_service.server.config import ServerConfig
from ofcpoker.v1 import cards_pb2
from ofcpoker.v1 import table_service_pb2 as pb
from ofcpoker.v1 import table_service_pb2_grpc as pb_grpc
from prometheus_client import REGISTRY

API_KEY = "test-operator-key"
OPERATOR = (("x-ofc-api-key", API_KEY),)
ROWS = (cards_pb2.ROW_POSITION_BOTTOM, cards_pb2.ROW_POSITION_MIDDLE, cards_pb2.ROW_POSITION_TOP)
ROW_SIZE = {
    cards_pb2.ROW_POSITION_TOP: 3,
    cards_pb2.ROW_POSITION_MIDDLE: 5,
    cards_pb2.ROW_POSITION_BOTTOM: 5,
}


def start_server(
    redis_url: str = "", *, event_log_hands: int = 2, http: bool = False
) -> BackgroundServer:
    """A server with the operator key (``http``: with its HTTP port too)."""
    config = ServerConfig(
        listen="127.0.0.1:0",
        metrics_listen="",
        http_listen="127.0.0.1:0" if http else "",
        redis_url=redis_url,
        grace_seconds=1,
        api_keys=API_KEY,
        event_log_hands=event_log_hands,
    )
    return BackgroundServer(config)


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


def stub_for(server: BackgroundServer) -> Iterator[pb_grpc.TableServiceStub]:
    with grpc.insecure_channel(server.address) as channel:
        yield pb_grpc.TableServiceStub(channel)


@pytest.fixture
def stubs(servers: list[BackgroundServer]) -> Iterator[list[pb_grpc.TableServiceStub]]:
    channels = [grpc.insecure_channel(s.address) for s in servers]
    try:
        yield [pb_grpc.TableServiceStub(c) for c in channels]
    finally:
        for c in channels:
            c.close()


def seat_md(token: str) -> tuple[tuple[str, str], ...]:
    return (("x-ofc-seat-token", token),)


def error_reason(err: grpc.RpcError) -> tuple[grpc.StatusCode, str]:
    trailers = dict(err.trailing_metadata() or ())
    status = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
    info = error_details_pb2.ErrorInfo()
    status.details[0].Unpack(info)
    return err.code(), info.reason


def expect_error(call: object, code: grpc.StatusCode, reason: str) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        call()  # type: ignore[operator]
    assert error_reason(caught.value) == (code, reason)


class Table:
    """A two-seat classic table with both seats joined, driven through the API."""

    def __init__(
        self, stub: pb_grpc.TableServiceStub, name: str, *, turn_time_limit_ms: int = 0
    ) -> None:
        self.stub = stub
        created = stub.CreateTable(
            pb.CreateTableRequest(
                seats=2,
                request_id=f"create-{name}",
                client_seed="e2e",
                turn_time_limit_ms=turn_time_limit_ms,
            ),
            metadata=OPERATOR,
        )
        self.id = created.table_id
        self.version = created.table.version
        self.tokens: dict[int, str] = {}
        for seat, player in ((0, "ann"), (1, "bob")):
            joined = stub.JoinSeat(
                pb.JoinSeatRequest(
                    table_id=self.id, seat=seat, player_id=player,
                    expected_version=self.version, request_id=f"join-{name}-{seat}",
                )
            )  # fmt: skip
            self.tokens[seat] = joined.seat_token
            self.version = joined.table.version

    def view(self, seat: int | None) -> pb.TableView:
        md = () if seat is None else seat_md(self.tokens[seat])
        table: pb.TableView = self.stub.GetTable(
            pb.GetTableRequest(table_id=self.id), metadata=md
        ).table
        self.version = table.version
        return table

    def start(self) -> pb.TableView:
        table: pb.TableView = self.stub.StartHand(
            pb.StartHandRequest(
                table_id=self.id, expected_version=self.version, request_id=f"start-{self.version}"
            ),
            metadata=seat_md(self.tokens[0]),
        ).table
        self.version = table.version
        return table

    def placement_for(self, seat: int) -> pb.PlaceCardsRequest:
        """Fill bottom, then middle, then top, in dealt order (fouls now and then: fine)."""
        table = self.view(seat)
        me = next(s for s in table.hand.seats if s.seat == seat)
        room = {
            cards_pb2.ROW_POSITION_TOP: 3 - len(me.board.top),
            cards_pb2.ROW_POSITION_MIDDLE: 5 - len(me.board.middle),
            cards_pb2.ROW_POSITION_BOTTOM: 5 - len(me.board.bottom),
        }
        placements = []
        for card in me.pending:
            row = next(r for r in ROWS if room[r] > 0)
            room[row] -= 1
            placements.append(pb.Placement(card=card, row=row))
        return pb.PlaceCardsRequest(
            table_id=self.id, seat=seat, placements=placements,
            expected_version=table.version, request_id=f"place-{table.version}",
        )  # fmt: skip

    def fantasyland_board_for(self, seat: int) -> pb.SetFantasylandRequest:
        """A Fantasyland seat's whole board, its dealt cards in dealt order."""
        table = self.view(seat)
        cards = list(next(s for s in table.hand.seats if s.seat == seat).pending)
        board = cards_pb2.Board(bottom=cards[:5], middle=cards[5:10], top=cards[10:13])
        return pb.SetFantasylandRequest(
            table_id=self.id, seat=seat, board=board, discards=cards[13:],
            expected_version=table.version, request_id=f"fantasyland-{table.version}",
        )  # fmt: skip

    def play_hand(self) -> pb.TableView:
        """Play a hand to its end: naive placements; a Fantasyland seat (the naive play
        earns one now and then) sets its whole board when dealt."""
        table = self.start()
        while not table.hand.over:
            # to_act: the turn seat, then the Fantasyland seats that have not set yet
            unset = [
                s.seat
                for s in table.hand.seats
                if s.fantasyland_cards and s.seat in table.hand.to_act
            ]
            if unset:
                table = self.stub.SetFantasyland(
                    self.fantasyland_board_for(unset[0]), metadata=seat_md(self.tokens[unset[0]])
                ).table
            else:
                seat = table.hand.turn
                table = self.stub.PlaceCards(
                    self.placement_for(seat), metadata=seat_md(self.tokens[seat])
                ).table
            self.version = table.version
        return table


def test_a_full_hand_settles_zero_sum_and_its_history_reveals_the_committed_seed(
    stubs: list[pb_grpc.TableServiceStub],
) -> None:
    table = Table(stubs[0], "full")
    settled_before = settled_at_tables()
    started = table.start()
    committed = started.hand.commitment
    assert started.hand.server_seed == b""
    # play the rest through the other replica when there is one
    table.stub = stubs[-1]
    while not (view := table.view(0)).hand.over:
        seat = view.hand.turn
        done = table.stub.PlaceCards(
            table.placement_for(seat), metadata=seat_md(table.tokens[seat])
        )
        table.version = done.table.version
    final = table.view(None)
    assert final.hand.over
    assert sum(p.points for p in final.hand.settlement.players) == 0
    # counted once, by the replica whose move ended it, beside the settle RPCs' hands
    fouled = sum(p.board.fouled for p in final.hand.settlement.players)
    assert settled_at_tables() == (settled_before[0] + 1, settled_before[1] + fouled)
    assert [p.player_id for p in final.hand.settlement.players] == [
        "bob",
        "ann",
    ]  # left of button first
    assert commitment(final.hand.server_seed) == committed
    history = table.stub.GetHandHistory(pb.GetHandHistoryRequest(table_id=table.id, hand_number=1))
    assert history.commitment == committed and history.server_seed == final.hand.server_seed
    assert [p.points for p in history.settlement.players] == [
        p.points for p in final.hand.settlement.players
    ]
    assert '"format_version"' in history.history_json
    listed = table.stub.ListHands(pb.ListHandsRequest(table_id=table.id))
    assert [h.hand_number for h in listed.hands] == [1] and listed.next_page_token == ""
    assert sorted(final.seats[s].points for s in (0, 1)) == sorted(
        p.points for p in final.hand.settlement.players
    )


def test_views_never_show_another_seats_cards_or_the_seed(
    stubs: list[pb_grpc.TableServiceStub],
) -> None:
    table = Table(stubs[0], "hidden")
    table.start()
    turn = table.view(None).hand.turn
    other = 1 - turn
    mine = next(s for s in table.view(turn).hand.seats if s.seat == turn)
    assert len(mine.pending) == 5
    for viewer in (None, other):
        seen = table.view(viewer)
        seat = next(s for s in seen.hand.seats if s.seat == turn)
        assert list(seat.pending) == [] and seat.pending_count == 5
        assert seen.hand.server_seed == b""
        assert "deck" not in str(seen).lower() or seen.hand.deck_remaining == 47


def settled_at_tables() -> tuple[float, float]:
    """ofc_hands_settled_total and ofc_fouls_total of classic hands at tables (this process)."""
    labels = {"ruleset": "classic", "source": "table"}
    return tuple(  # type: ignore[return-value]
        REGISTRY.get_sample_value(name, labels) or 0.0
        for name in ("ofc_hands_settled_total", "ofc_fouls_total")
    )


def moves_counted(kind: str) -> float:
    """ofc_moves_total of this process (the servers of these tests run in it)."""
    return REGISTRY.get_sample_value("ofc_moves_total", {"kind": kind}) or 0.0


def test_stale_versions_replays_and_credentials(stubs: list[pb_grpc.TableServiceStub]) -> None:
    stub = stubs[0]
    table = Table(stub, "errors")
    table.start()
    turn = table.view(None).hand.turn
    placed_before = moves_counted("place")
    request = table.placement_for(turn)
    # the wrong seat's token, no token, a token of another table, a wrong API key
    expect_error(
        lambda: stub.PlaceCards(request, metadata=seat_md(table.tokens[1 - turn])),
        grpc.StatusCode.PERMISSION_DENIED, "PERMISSION_DENIED",
    )  # fmt: skip
    expect_error(
        lambda: stub.PlaceCards(request), grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED"
    )
    other = Table(stub, "errors-other")
    expect_error(
        lambda: stub.PlaceCards(request, metadata=seat_md(other.tokens[turn])),
        grpc.StatusCode.PERMISSION_DENIED, "PERMISSION_DENIED",
    )  # fmt: skip
    expect_error(
        lambda: stub.PlaceCards(request, metadata=(("x-ofc-api-key", "nope"),)),
        grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED",
    )  # fmt: skip
    # made-up tokens: no credential, unless they could be another table's (the older form)
    for made_up, code, reason in (
        (f"st_{table.id}.{'A' * 32}", grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED"),
        ("hello", grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED"),
        ("st_" + "A" * 32, grpc.StatusCode.PERMISSION_DENIED, "PERMISSION_DENIED"),
    ):
        expect_error(
            lambda: stub.PlaceCards(request, metadata=seat_md(made_up)),  # noqa: B023
            code, reason,
        )  # fmt: skip
    expect_error(
        lambda: stub.CreateTable(
            pb.CreateTableRequest(request_id="x"), metadata=seat_md(table.tokens[0])
        ),
        grpc.StatusCode.PERMISSION_DENIED, "PERMISSION_DENIED",
    )  # fmt: skip
    # out of turn, a card not dealt, a stale version: all leave the table as it was
    wrong_turn = pb.PlaceCardsRequest()
    wrong_turn.CopyFrom(request)
    wrong_turn.seat = 1 - turn
    expect_error(
        lambda: stub.PlaceCards(wrong_turn, metadata=OPERATOR),
        grpc.StatusCode.FAILED_PRECONDITION,
        "NOT_YOUR_TURN",
    )
    not_dealt = pb.PlaceCardsRequest()
    not_dealt.CopyFrom(request)
    dealt = {p.card for p in request.placements}
    not_dealt.placements[0].card = next(
        c for c in ("2c", "3c", "4c", "5c", "6c", "7c") if c not in dealt
    )
    expect_error(
        lambda: stub.PlaceCards(not_dealt, metadata=OPERATOR),
        grpc.StatusCode.FAILED_PRECONDITION,
        "CARD_NOT_DEALT",
    )
    stale = pb.PlaceCardsRequest()
    stale.CopyFrom(request)
    stale.expected_version -= 1
    stale.request_id = "stale"
    expect_error(
        lambda: stub.PlaceCards(stale, metadata=OPERATOR), grpc.StatusCode.ABORTED, "STALE_VERSION"
    )
    assert table.view(None).version == request.expected_version
    # the move, then its retry: the same answer, applied once
    first = stub.PlaceCards(request, metadata=seat_md(table.tokens[turn]))
    again = stub.PlaceCards(request, metadata=seat_md(table.tokens[turn]))
    assert first == again
    assert table.view(None).version == request.expected_version + 1
    assert moves_counted("place") == placed_before + 1  # refusals and the replay: not moves
    expect_error(
        lambda: stub.GetTable(pb.GetTableRequest(table_id="no-such-table")),
        grpc.StatusCode.NOT_FOUND, "TABLE_NOT_FOUND",
    )  # fmt: skip
    expect_error(
        lambda: stub.GetHandHistory(pb.GetHandHistoryRequest(table_id=table.id, hand_number=1)),
        grpc.StatusCode.NOT_FOUND, "HAND_NOT_FOUND",
    )  # fmt: skip


def test_join_retry_returns_the_same_token_and_create_retry_the_same_table(
    stubs: list[pb_grpc.TableServiceStub],
) -> None:
    stub = stubs[0]
    created = stub.CreateTable(pb.CreateTableRequest(seats=2, request_id="same"), metadata=OPERATOR)
    again = stub.CreateTable(pb.CreateTableRequest(seats=2, request_id="same"), metadata=OPERATOR)
    assert created.table_id == again.table_id
    join = pb.JoinSeatRequest(
        table_id=created.table_id, seat=1, player_id="cy", expected_version=1, request_id="j"
    )
    first = stub.JoinSeat(join)
    retry = stub.JoinSeat(join)
    assert first.seat_token == retry.seat_token and first.seat_token.startswith("st_")
    assert stub.GetTable(pb.GetTableRequest(table_id=created.table_id)).table.version == 2
    expect_error(
        lambda: stub.JoinSeat(
            pb.JoinSeatRequest(
                table_id=created.table_id, seat=1, player_id="dee",
                expected_version=2, request_id="k",
            )
        ),
        grpc.StatusCode.FAILED_PRECONDITION, "SEAT_TAKEN",
    )  # fmt: skip


def test_watch_sends_a_snapshot_then_each_event_as_that_seat_may_see_it_and_resumes(
    stubs: list[pb_grpc.TableServiceStub],
) -> None:
    table = Table(stubs[0], "watch")
    watcher_stub = stubs[-1]  # another replica, when there are two
    received: list[pb.WatchResponse] = []
    stream = watcher_stub.Watch(
        pb.WatchRequest(table_id=table.id), metadata=seat_md(table.tokens[0])
    )

    def read() -> None:
        try:
            for message in stream:
                received.append(message)
        except grpc.RpcError:
            pass

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 5
    while not received and time.monotonic() < deadline:
        time.sleep(0.02)
    table.play_hand()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not any(
        m.event.HasField("button_moved") for m in received
    ):
        time.sleep(0.05)
    stream.cancel()
    reader.join(5)
    assert received[0].HasField("snapshot")
    events = [m.event for m in received[1:]]
    assert any(e.HasField("hand_settled") for e in events)
    ids = [e.event_id for e in events]
    assert len(ids) == len(set(ids))
    for event in events:
        if event.HasField("cards_dealt"):
            dealt = event.cards_dealt
            assert (len(dealt.cards) == dealt.count) if dealt.seat == 0 else list(dealt.cards) == []
    # resume in the middle: exactly the rest, no gap, no duplicate
    middle = len(events) // 2
    resumed = watcher_stub.Watch(
        pb.WatchRequest(table_id=table.id, after_event_id=ids[middle]),
        metadata=seat_md(table.tokens[0]),
    )
    rest: list[str] = []
    for message in resumed:
        rest.append(message.event.event_id)
        if len(rest) == len(ids) - middle - 1:
            break
    resumed.cancel()
    assert rest == ids[middle + 1 :]


def _events_until_button_moves(stream: Any, hands: int) -> list[pb.TableEvent]:
    """The events of a Watch stream (single or batched) until ``hands`` hands ended."""
    events: list[pb.TableEvent] = []
    for message in stream:
        if message.HasField("snapshot"):
            continue
        batch = message.events.events if message.HasField("events") else [message.event]
        assert batch, "a batch holds at least one event"
        events += batch
        if sum(e.HasField("button_moved") for e in events) == hands:
            break
    stream.cancel()
    return events


def test_batched_watch_sends_the_same_events_and_old_hands_are_trimmed_from_the_log(
    stubs: list[pb_grpc.TableServiceStub],
) -> None:
    table = Table(stubs[0], "batched")
    md = seat_md(table.tokens[1])

    def watch(after: str = "", *, batch: bool) -> Any:
        request = pb.WatchRequest(table_id=table.id, after_event_id=after, batch_events=batch)
        return stubs[-1].Watch(request, metadata=md, timeout=30)

    live: dict[bool, list[pb.TableEvent]] = {}
    streams = {batch: watch(batch=batch) for batch in (False, True)}
    for stream in streams.values():
        assert next(stream).HasField("snapshot")  # the stream is open: nothing can be missed
    readers = [
        threading.Thread(target=lambda b=b: live.__setitem__(b, _events_until_button_moves(
            streams[b], 3)))
        for b in streams
    ]  # fmt: skip
    for reader in readers:
        reader.start()
    for _ in range(3):
        table.play_hand()
    for reader in readers:
        reader.join(30)
    single, batched = live[False], live[True]
    assert [e.SerializeToString() for e in batched] == [e.SerializeToString() for e in single]
    assert [e.WhichOneof("kind") for e in single].count("hand_settled") == 3
    for event in batched:  # seat 1's watch: seat 0's cards stay hidden in batches too
        if event.HasField("cards_dealt") and event.cards_dealt.seat == 0:
            assert list(event.cards_dealt.cards) == []

    # The log keeps the last two hands (the server's default): resuming inside hand 1 is
    # refused (the hand lives on in its history); from hand 2's start both forms replay.
    with pytest.raises(grpc.RpcError) as caught:
        next(iter(watch(single[0].event_id, batch=True)))
    assert error_reason(caught.value) == (grpc.StatusCode.OUT_OF_RANGE, "EVENTS_TRIMMED")
    # A resume point after the newest event (another table's id, or events a failover
    # lost) is refused alike, not waited on: the events before it would be skipped unseen.
    newest = single[-1].event_id
    ms, seq = (int(n) for n in newest.split("-"))
    for ahead in (f"{ms}-{seq + 1}", f"{ms + 1}-0", "18446744073709551615-0"):
        with pytest.raises(grpc.RpcError) as caught:
            next(iter(watch(ahead, batch=True)))
        assert error_reason(caught.value) == (grpc.StatusCode.OUT_OF_RANGE, "EVENTS_TRIMMED")
        assert f"has no event {ahead}: its newest is {newest}" in caught.value.details()
    history = stubs[0].GetHandHistory(pb.GetHandHistoryRequest(table_id=table.id, hand_number=1))
    assert history.hand_number == 1
    hand_2 = next(
        k for k, e in enumerate(single) if e.HasField("hand_started") and e.hand_started.number == 2
    )
    for batch in (False, True):
        rest = _events_until_button_moves(watch(single[hand_2].event_id, batch=batch), 2)
        assert [e.event_id for e in rest] == [e.event_id for e in single[hand_2 + 1 :]]
        # From hand 1's last event, the newest one trimmed (where a client that saw hand 1
        # to its end stands), nothing is missing: the log from hand 2's start.
        rest = _events_until_button_moves(watch(single[hand_2 - 1].event_id, batch=batch), 2)
        assert [e.event_id for e in rest] == [e.event_id for e in single[hand_2:]]


def test_a_turn_that_runs_out_is_played_by_the_server_exactly_once(
    stubs: list[pb_grpc.TableServiceStub],
) -> None:
    table = Table(stubs[0], "deadline", turn_time_limit_ms=1000)
    started = table.start()
    turn = started.hand.turn
    assert started.deadline_ms > 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        view = table.view(None)
        if view.hand.turn != turn:
            break
        time.sleep(0.1)
    seat = next(s for s in view.hand.seats if s.seat == turn)
    assert len(seat.board.top) + len(seat.board.middle) + len(seat.board.bottom) == 5
    # Every version after the start is one timeout move of one batch, whatever the replica
    # count (the next seat's clock may run out too on a slow machine): none applied twice.
    placed = sum(
        len(s.board.top) + len(s.board.middle) + len(s.board.bottom) for s in view.hand.seats
    )
    assert view.version > started.version and placed == 5 * (view.version - started.version)
