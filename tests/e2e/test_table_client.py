"""ofc_client.TableClient against a live server: versions and request ids handled for the
caller, retries with the same id, typed errors with the ErrorInfo reason, watches."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest
from ofc.rulesets import get_ruleset
from ofc_client import (
    FailedPreconditionError,
    InvalidRequestError,
    NotFoundError,
    OfcClientError,
    PermissionDeniedError,
    RetryableError,
    StaleVersionError,
    TableClient,
    TableEvent,
    TableView,
    UnauthenticatedError,
)
from ofc_client import tables as tables_module
from ofc_client.table_models import CardsDealtEvent
from ofc_service.server.background import BackgroundServer
from ofcpoker.v1 import table_service_pb2 as pb

from tests.conftest import free_port
from tests.e2e.tablekit import API_KEY, LONG_TURN_MS, Watcher, naive_move, start_server

CLASSIC = get_ruleset("classic")


@pytest.fixture(scope="module")
def live() -> Iterator[BackgroundServer]:
    with start_server() as running:
        yield running


@pytest.fixture
def seated(live: BackgroundServer) -> Iterator[tuple[str, TableClient, TableClient, TableClient]]:
    """A fresh two-seat table: (table id, the operator, ann in seat 0, bob in seat 1)."""
    host = TableClient(live.address, api_key=API_KEY)
    ann, bob = TableClient(live.address), TableClient(live.address)
    # No Fantasyland (its deal takes another path): a random deal must not decide the test.
    no_fantasyland = {"preset": "classic", "fantasyland_entry": []}
    table_id = host.create_table(
        seats=2, ruleset=no_fantasyland, turn_time_limit_ms=LONG_TURN_MS
    ).table_id
    ann.join(table_id, 0, "ann")
    bob.join(table_id, 1, "bob")
    yield table_id, host, ann, bob
    for c in (host, ann, bob):
        c.close()


def turn_client(table_id: str, view: TableView, *players: TableClient) -> TableClient:
    assert view.hand is not None and view.hand.turn is not None
    return players[view.hand.turn]


def test_moves_use_the_last_version_seen_and_a_fresh_uuid4_request_id(
    seated: tuple[str, TableClient, TableClient, TableClient], live: BackgroundServer
) -> None:
    table_id, _, ann, bob = seated
    assert (ann.seat_of(table_id), bob.seat_of(table_id)) == (0, 1)
    assert ann.version(table_id) == 2 and bob.version(table_id) == 3  # each saw its own join
    with pytest.raises(StaleVersionError) as stale:
        ann.start_hand(table_id)  # ann has not seen bob join
    assert (stale.value.code, stale.value.reason, stale.value.field) == (
        grpc.StatusCode.ABORTED,
        "STALE_VERSION",
        "expected_version",
    )
    assert isinstance(stale.value, RetryableError)
    ann.get(table_id)
    started = ann.start_hand(table_id)
    assert started.version == 4 and ann.version(table_id) == 4
    assert uuid.UUID(ann.last_request_id).version == 4
    player = turn_client(table_id, started, ann, bob)
    mine = player.get(table_id)
    placements, _ = naive_move(mine, CLASSIC)
    moved = player.place(table_id, placements)
    assert moved.version == 5 and moved.my_seat is not None and moved.my_seat.pending == ()
    first_id = player.last_request_id
    # retry(): the same request again, answered with the first result, applied once
    assert player.retry() == moved and player.last_request_id == first_id
    assert player.get(table_id).version == 5
    # the same id from another client (say, after a crash) changes nothing either
    other = TableClient(live.address)
    token = player.seat_token(table_id)
    assert mine.viewer_seat is not None and token is not None
    other.use_seat(table_id, mine.viewer_seat, token)
    again = other.place(table_id, placements, request_id=first_id, expected_version=4)
    assert again == moved
    other.close()


def test_errors_are_typed_and_carry_the_server_reason(
    seated: tuple[str, TableClient, TableClient, TableClient], live: BackgroundServer
) -> None:
    table_id, host, ann, bob = seated
    with pytest.raises(NotFoundError) as missing:
        ann.get("no-such-table")
    assert missing.value.reason == "TABLE_NOT_FOUND"
    with pytest.raises(UnauthenticatedError) as no_key:
        ann.create_table(seats=2)
    assert no_key.value.reason == "UNAUTHENTICATED"
    ann.get(table_id)
    with pytest.raises(FailedPreconditionError) as not_started:
        ann.place(table_id, {"As": "top"})
    assert not_started.value.reason == "HAND_NOT_IN_PROGRESS"
    host.get(table_id)
    started = host.start_hand(table_id)
    assert started.viewer_seat is None and started.hand is not None
    waiting = ann if started.hand.turn == 1 else bob
    mover = bob if waiting is ann else ann
    waiting.get(table_id)
    mover.get(table_id)
    with pytest.raises(PermissionDeniedError) as not_mine:
        waiting.place(table_id, {"As": "top"}, seat=started.hand.turn)
    assert not_mine.value.reason == "PERMISSION_DENIED"
    with pytest.raises(FailedPreconditionError) as early:
        waiting.place(table_id, {"As": "top"})
    assert early.value.reason == "NOT_YOUR_TURN"
    with pytest.raises(InvalidRequestError) as bad_card:
        mover.place(table_id, {"Zz": "top"})
    assert (bad_card.value.reason, bad_card.value.field) == ("INVALID_CARD", "placements[0].card")
    with pytest.raises(InvalidRequestError) as bad_row:
        mover.place(table_id, {"As": "sideways"})  # refused before anything is sent
    assert bad_row.value.field == "row"
    with pytest.raises(InvalidRequestError):
        mover.place(table_id, {"As": "top"}, bottom="Kd")
    with pytest.raises(NotFoundError) as not_over:
        ann.hand_history(table_id, 1)
    assert not_over.value.reason == "HAND_NOT_FOUND"
    with pytest.raises(InvalidRequestError) as no_seat:
        host.place(table_id, {"As": "top"})
    assert no_seat.value.field == "seat"
    assert host.get(table_id).version == started.version  # nothing above changed the table


class _CallFailed(grpc.RpcError):  # type: ignore[misc]
    """A call that failed with ``code`` on the client's side of the channel."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> tuple[()]:
        return ()


class _LoseAnswers(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Lets the next ``lost`` calls of ``method`` reach the server, then loses their answers."""

    def __init__(self, method: str, lost: int) -> None:
        self.method, self.lost, self.answers = method, lost, list[Any]()

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        outcome = continuation(details, request)
        if details.method.endswith(self.method) and self.lost:
            self.lost -= 1
            self.answers.append(outcome.result())
            # the answer lost after the server applied it (a deadline that passed on the way)
            raise _CallFailed(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
        return outcome


def test_retry_sends_a_create_table_whose_answer_was_lost_not_the_request_before(
    live: BackgroundServer,
) -> None:
    """CreateTable is a mutating request like the others: after its answer is lost,
    retry() sends that create again (the same table comes back, none is made twice), not
    the request the client sent before it."""
    losing = _LoseAnswers("/CreateTable", lost=0)
    channel = grpc.intercept_channel(grpc.insecure_channel(live.address), losing)
    client = TableClient(live.address, api_key=API_KEY, channel=channel)
    first = client.create_table(seats=2)
    client.join(first.table_id, 0, "ann")
    losing.lost = 1
    with pytest.raises(RetryableError):
        client.create_table(seats=3)
    (made,) = losing.answers
    again = client.retry()
    assert (again.table_id, len(again.seats)) == (made.table.table_id, 3)
    assert again.table_id != first.table_id
    assert client.retry().table_id == made.table.table_id  # and again: still that one table
    client.close()


class _FailReads(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """The next ``failing`` GetTable calls fail UNAVAILABLE before they reach the server."""

    def __init__(self, failing: int) -> None:
        self.failing = failing

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        if details.method.endswith("/GetTable") and self.failing:
            self.failing -= 1
            raise _CallFailed(grpc.StatusCode.UNAVAILABLE, "the replica is away")
        return continuation(details, request)


def test_retry_sends_a_join_whose_version_read_failed(live: BackgroundServer) -> None:
    """A change sent without an expected version reads the table's first (GetTable): when
    that read fails, retry() sends that change (reading the version then), not the request
    before it, nor "no mutating request to retry"."""
    host = TableClient(live.address, api_key=API_KEY)
    table_id = host.create_table(seats=2).table_id
    host.join(table_id, 0, "ann")
    failing = _FailReads(2)  # the read and the client's own retry of it
    channel = grpc.intercept_channel(grpc.insecure_channel(live.address), failing)
    bob = TableClient(live.address, channel=channel, retries=1, retry_delay=0.01)
    with pytest.raises(RetryableError):
        bob.join(table_id, 1, "bob")  # this client has not seen the table: version unknown
    joined = bob.retry()
    assert joined.seats[1].player_id == "bob" and bob.seat_token(table_id) is not None
    assert bob.retry().version == joined.version  # sent again: its first answer
    assert host.get(table_id).version == joined.version
    bob.close()
    host.close()


def test_unavailable_is_retried_then_raised_as_retryable() -> None:
    nowhere = TableClient(f"127.0.0.1:{free_port()}", retries=2, retry_delay=0.01, timeout=2)
    with pytest.raises(RetryableError) as down:
        nowhere.get("t")
    assert down.value.code == grpc.StatusCode.UNAVAILABLE
    nowhere.close()


def test_a_call_the_server_cancelled_is_sent_again_unchanged() -> None:
    """A replica that stops before it runs a call may end it CANCELLED (gRPC's own stop):
    the client sends the very same request again (a move's request id makes that safe), as
    for UNAVAILABLE, and gives up after ``retries`` like there."""
    seen: list[bytes] = []
    answers = [grpc.StatusCode.CANCELLED, grpc.StatusCode.CANCELLED, grpc.StatusCode.OK]

    def join(request: bytes, context: grpc.ServicerContext) -> bytes:
        seen.append(request)
        code = answers.pop(0) if answers else grpc.StatusCode.CANCELLED
        if code is not grpc.StatusCode.OK:
            context.abort(code, "stopped before it ran the call")
        return pb.JoinSeatResponse(
            seat_token="st_t.x", table=pb.TableView(version=2)
        ).SerializeToString()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    handler = grpc.unary_unary_rpc_method_handler(join)  # bytes in, bytes out
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("ofcpoker.v1.TableService", {"JoinSeat": handler}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        client = TableClient(f"127.0.0.1:{port}", retries=3, retry_delay=0.01, timeout=5)
        assert client.join("t", 0, "ann", expected_version=1) == "st_t.x"
        assert len(seen) == 3 and len(set(seen)) == 1  # the same request, its id included
        assert pb.JoinSeatRequest.FromString(seen[0]).request_id
        seen.clear()
        with pytest.raises(OfcClientError) as cancelled:  # every answer CANCELLED from now on
            client.join("t", 1, "bob", expected_version=2)
        assert cancelled.value.code == grpc.StatusCode.CANCELLED and len(seen) == 4
        client.close()
    finally:
        server.stop(None)


def test_a_table_read_whole_sets_the_version_even_when_lower() -> None:
    """A store that failed over may lose a table's last writes: the table is back at an
    earlier version. After a stale refusal the client reads the table (as its docs say) and
    its next move must expect that version, not the higher one it saw before the loss."""
    table = {"version": 6}
    expected: list[int] = []

    def start_hand(request: bytes, context: grpc.ServicerContext) -> bytes:
        asked = pb.StartHandRequest.FromString(request).expected_version
        expected.append(asked)
        if asked != table["version"]:
            context.abort(grpc.StatusCode.ABORTED, "stale version")
        table["version"] += 1
        return pb.StartHandResponse(
            table=pb.TableView(table_id="t", version=table["version"])
        ).SerializeToString()

    def get_table(request: bytes, context: grpc.ServicerContext) -> bytes:
        return pb.GetTableResponse(
            table=pb.TableView(table_id="t", version=table["version"])
        ).SerializeToString()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    handlers = {
        "StartHand": grpc.unary_unary_rpc_method_handler(start_hand),
        "GetTable": grpc.unary_unary_rpc_method_handler(get_table),
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("ofcpoker.v1.TableService", handlers),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        client = TableClient(f"127.0.0.1:{port}", retries=0, timeout=5)
        assert client.get("t").version == 6
        client.start_hand("t")
        assert client.version("t") == 7
        table["version"] = 5  # the store lost the last two writes
        with pytest.raises(OfcClientError):
            client.start_hand("t")
        assert client.get("t").version == 5 and client.version("t") == 5
        assert client.start_hand("t").version == 6
        assert expected == [6, 7, 5]
        client.close()
    finally:
        server.stop(None)


def test_join_leave_and_resume_a_seat_with_a_saved_token(live: BackgroundServer) -> None:
    host = TableClient(live.address, api_key=API_KEY)
    table_id = host.create_table(seats=3).table_id
    cy = TableClient(live.address)
    request_id = str(uuid.uuid4())
    token = cy.join(table_id, 2, "cy", request_id=request_id)
    assert token.startswith("st_")
    assert cy.retry().viewer_seat == 2 and cy.seat_token(table_id) == token  # same token again
    elsewhere = TableClient(live.address)
    elsewhere.use_seat(table_id, 2, token)
    assert elsewhere.get(table_id).viewer_seat == 2
    left = elsewhere.leave(table_id)
    assert left.seats[2].player_id == "" and elsewhere.seat_of(table_id) is None
    assert elsewhere.get(table_id).viewer_seat is None  # a spectator now
    with pytest.raises(UnauthenticatedError):
        cy.get(table_id)  # the old token is gone with the seat: it is no credential any more
    for c in (host, cy, elsewhere):
        c.close()


def test_watch_snapshot_events_resume_and_hand_listing(
    seated: tuple[str, TableClient, TableClient, TableClient],
) -> None:
    table_id, host, ann, bob = seated
    watcher = Watcher(ann, table_id).wait_for_snapshot()
    host.get(table_id)
    for _ in range(3):  # three hands, both seats by the naive player
        host.start_hand(table_id)
        while True:
            view = host.get(table_id)
            assert view.hand is not None
            if view.hand.over:
                break
            player = turn_client(table_id, view, ann, bob)
            placements, _ = naive_move(player.get(table_id), CLASSIC)
            player.place(table_id, placements)
    final = host.get(table_id)
    watcher.wait_for_event_id(final.last_event_id)
    watcher.stop()
    snapshot = watcher.snapshot
    assert snapshot.viewer_seat == 0 and snapshot.version == 3
    events = watcher.events
    assert [e.version for e in events] == sorted(e.version for e in events)
    assert events[-1].version == final.version and ann.version(table_id) == final.version
    dealt = [e.detail for e in events if isinstance(e.detail, CardsDealtEvent)]
    assert all(bool(d.cards) == (d.seat == 0) for d in dealt)
    # resume in the middle: exactly the rest
    middle = events[len(events) // 2]
    resumed = ann.watch(table_id, after_event_id=middle.event_id)
    rest: list[TableEvent] = []
    for item in resumed:
        assert isinstance(item, TableEvent)
        rest.append(item)
        if item.event_id == final.last_event_id:
            resumed.cancel()
    assert rest == events[len(events) // 2 + 1 :]
    assert list(resumed) == []  # cancelled: iteration is over
    # finished hands, page by page
    page = host.list_hands(table_id, page_size=2)
    assert [h.hand_number for h in page.hands] == [1, 2] and page.next_page_token
    summaries = list(host.iter_hands(table_id, page_size=2))
    assert [h.hand_number for h in summaries] == [1, 2, 3]
    history = host.hand_history(table_id, 3)
    assert history.history["hand_number"] == 3
    assert history.settlement.points == summaries[2].points
    assert sum(s.points for s in final.seats) == 0


def test_a_table_with_unit_values_agreed_per_pair_of_seats(live: BackgroundServer) -> None:
    with TableClient(live.address, api_key=API_KEY) as host:
        created = host.create_table(seats=3, pair_units={(0, 2): 15, (0, 1): 20})
        assert created.pair_units == ((0, 1, 20), (0, 2, 15))
        assert host.get(created.table_id).pair_units == ((0, 1, 20), (0, 2, 15))
        assert host.create_table(seats=2).pair_units == ()
        with pytest.raises(InvalidRequestError) as refused:
            host.create_table(seats=3, pair_units={(1, 3): 5})
        assert refused.value.reason == "INVALID_INPUT"
        assert refused.value.field == "pair_unit_values[0].b"


def test_a_watch_cancelled_while_its_stream_is_being_opened_stops(
    seated: tuple[str, TableClient, TableClient, TableClient],
) -> None:
    """cancel() from another thread that comes while the watch is opening a stream (its
    first, or one reopened at once after a retired connection) finds no call to cancel: the
    watch cancels the stream it opened itself, rather than wait on it, on a quiet table,
    until the next event or the next end of its connection."""
    table_id, _host, ann, _bob = seated
    watch = ann.watch(table_id, after_event_id=ann.get(table_id).last_event_id)
    opened = watch._open

    def open_then_cancelled() -> Any:
        call = opened()
        watch.cancel()  # as another thread's cancel() before _call is set: it sees None
        return call

    watch._open = open_then_cancelled  # type: ignore[method-assign]
    ended: list[str] = []
    reader = threading.Thread(target=lambda: ended.extend(str(i) for i in watch), daemon=True)
    reader.start()
    reader.join(timeout=10)  # a bound for failing: a quiet table sends nothing
    assert not reader.is_alive(), "the cancelled watch still waits on the stream it opened"
    assert ended == []


def test_a_watch_whose_every_stream_fails_slowly_gives_up_in_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A proxy in front of replicas it cannot reach fails each stream after its connect
    timeout (a second or so), with no reason: the streams stood a while, but the server
    never said it ended them on purpose, so the failures are one run and the watch gives up
    after ``reconnect_timeout``, as with streams refused at once."""
    monkeypatch.setattr(tables_module, "STEADY_STREAM_S", 0.05)

    def failing_later() -> Iterator[pb.WatchResponse]:
        time.sleep(0.15)  # longer than STEADY_STREAM_S, shorter than reconnect_timeout
        raise _CallFailed(grpc.StatusCode.UNAVAILABLE, "upstream connect error")
        yield  # a generator, as a call's responses are

    with TableClient("127.0.0.1:1") as client:  # never dialled: every stream is the fake's
        watch = client.watch("t", after_event_id="1-0", reconnect_timeout=0.5)
        watch._open = failing_later  # type: ignore[method-assign]
        started = time.monotonic()
        with pytest.raises(OfcClientError) as failed:
            next(iter(watch))
    assert failed.value.code == grpc.StatusCode.UNAVAILABLE
    assert time.monotonic() - started < 10, "a bound for failing: it gave up, not never"
    assert watch.reconnects >= 2
