"""``TableClient``: live tables (ofcpoker.v1.TableService) from Python.

    host = TableClient("127.0.0.1:50051")   # api_key="..." when the server has operator keys
    table = host.create_table(seats=2)
    ann, bob = TableClient("127.0.0.1:50051"), TableClient("127.0.0.1:50051")
    token = ann.join(table.table_id, 0, "ann")            # ann now acts as seat 0
    bob.join(table.table_id, 1, "bob")                    # a hand needs two players
    ann.get(table.table_id)                               # the version bob's join made
    ann.start_hand(table.table_id).hand.number            # 1

A complete session is examples/table_session.py (the README walks through it).

What the client does for you:

- **Versions.** Every mutating call needs the table version it was based on. The client
  remembers, per table, the highest version it has seen (in any response or watched event)
  since it last read the table whole (:meth:`TableClient.get`, or a watch's snapshot: those
  set it to the table's version as it is, lower too, as after a store failover that lost the
  last writes) and sends that; pass ``expected_version=`` to override. A table it has not
  seen yet is read first. A stale version raises :class:`StaleVersionError`: call
  :meth:`TableClient.get` (or watch) and decide again.
- **Request ids.** Every mutating call gets a fresh ``uuid4`` request id (or the
  ``request_id=`` you pass). UNAVAILABLE answers (a replica or the store briefly down), and
  CANCELLED ones (a replica that stopped before it ran the call), are retried ``retries``
  times with the *same* request, so a move is applied at most once;
  :meth:`TableClient.retry` sends the last mutating request again, unchanged (its
  credentials too), whenever you decide to (the server answers a request id it has seen
  with its first result, to the credentials that sent it).
- **Routing.** Every call about a table carries its id as ``x-ofc-table-id`` metadata, so a
  proxy that hashes on it (deploy/'s Envoy) sends one table's calls to one replica.
  CreateTable, whose id the server picks, has none.
- **Credentials.** :meth:`TableClient.join` keeps the returned seat token and sends it
  (``x-ofc-seat-token``) on every later call about that table; :meth:`use_seat` restores a
  saved one. Otherwise the ``api_key`` (``x-ofc-api-key``), if any, is sent.
- **Errors** are the typed exceptions of :mod:`ofc_client.errors`, carrying the server's
  ErrorInfo ``reason`` (``NOT_YOUR_TURN``, ``STALE_VERSION``, ...) and ``field``.
- **Watching.** :meth:`TableClient.watch` yields the caller's view as a snapshot, then each
  event; after a dropped connection it resumes after the last event it yielded (no gap, no
  duplicate), for up to ``reconnect_timeout`` seconds of failures.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

import grpc
from ofcpoker.v1 import table_service_pb2 as pb
from ofcpoker.v1 import table_service_pb2_grpc as pb_grpc

from ofc_client.errors import REQUEST_ID_KEY, OfcClientError, from_rpc_error
from ofc_client.models import BoardLike, RulesetLike
from ofc_client.requests import board_message, card_list, invalid, row_position, ruleset_spec
from ofc_client.table_models import (
    CLIENT_SEED_POLICIES,
    HandHistory,
    HandPage,
    HandSummary,
    TableEvent,
    TableView,
    WatchItem,
)

DEFAULT_TIMEOUT = 10.0
SEAT_TOKEN_HEADER = "x-ofc-seat-token"
API_KEY_HEADER = "x-ofc-api-key"
TABLE_ID_HEADER = "x-ofc-table-id"
"""Routing only: a proxy hashes on it so that one table's calls reach one replica (its
decoded table stays cached there). The server never reads it; the table is the message's."""
ROWS = ("top", "middle", "bottom")

Placements = Mapping[str, str] | Sequence[tuple[str, str]]
"""``{"As": "bottom", "Kd": "top"}`` or ``[("As", "bottom"), ("Kd", "top")]``."""


@dataclass(frozen=True, slots=True)
class _Request:
    """A mutating request as sent, so it can be sent again unchanged: with the credentials
    it was first sent with (the server answers a retry only to those; a JoinSeat's retry
    must not carry the seat token it returned)."""

    table_id: str | None  # None: CreateTable (the server names the table)
    method: Callable[..., Any]
    message: Any
    on_success: Callable[[Any], TableView]
    credentials: tuple[tuple[str, str], ...]
    # the table's version is read (GetTable) when the request is first sent, not before it
    # is the one retry() sends: a read that fails leaves this request to retry
    version_unread: bool = False


# What a unary call sends again, unchanged (TableClient._call), and a watch reconnects on.
_RETRIED = frozenset((grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED))


class _Closable(Protocol):
    closed: bool


def check_open(client: _Closable) -> None:
    """InvalidRequestError for a call on a client after ``close()`` (gRPC itself would
    raise a bare ValueError)."""
    if client.closed:
        raise invalid("this client is closed: make a new one", "")


class TableClient:
    """A connection to an ofc server's TableService (see the module docstring).

    ``target`` is ``HOST:PORT`` (or any gRPC target, e.g. ``ipv4:10.0.0.1:50051,10.0.0.2:50051``
    for several replicas); plaintext unless ``credentials`` are given. ``retries``: how
    often an UNAVAILABLE or CANCELLED call is sent again (same request id), waiting ``retry_delay``
    seconds, doubling each time. One client may be used from several threads.
    """

    def __init__(
        self,
        target: str,
        *,
        api_key: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        retries: int = 3,
        retry_delay: float = 0.1,
        credentials: grpc.ChannelCredentials | None = None,
        options: Sequence[tuple[str, Any]] = (),
        channel: grpc.Channel | None = None,
    ) -> None:
        if channel is None:
            channel = (
                grpc.secure_channel(target, credentials, options)
                if credentials is not None
                else grpc.insecure_channel(target, options)
            )
        self.channel = channel
        self.closed = False
        self.api_key = api_key
        self.timeout = timeout
        self.retries = retries
        self.retry_delay = retry_delay
        self._stub = pb_grpc.TableServiceStub(channel)
        self._lock = threading.Lock()
        self._seats: dict[str, tuple[int, str]] = {}
        self._versions: dict[str, int] = {}
        self._last: _Request | None = None
        self.last_request_id = ""
        """The request id of the last mutating call (what :meth:`retry` sends again)."""

    # --- credentials and versions -------------------------------------------------------------
    def use_seat(self, table_id: str, seat: int, token: str) -> None:
        """Act as ``seat`` at ``table_id`` with a seat token saved from :meth:`join`."""
        with self._lock:
            self._seats[table_id] = (seat, token)

    def seat_of(self, table_id: str) -> int | None:
        """The seat this client acts for at ``table_id``, if it holds a token there."""
        held = self._seats.get(table_id)
        return None if held is None else held[0]

    def seat_token(self, table_id: str) -> str | None:
        held = self._seats.get(table_id)
        return None if held is None else held[1]

    def version(self, table_id: str) -> int | None:
        """The version of ``table_id`` that moves expect: the table's as this client last
        read it whole, or a higher one seen since."""
        return self._versions.get(table_id)

    def _saw(self, table_id: str, version: int, *, whole: bool = False) -> None:
        """``whole``: the table read as it is now, whose version stands even if lower than
        one seen before (a store that failed over may have lost the last writes)."""
        with self._lock:
            if whole or version > self._versions.get(table_id, 0):
                self._versions[table_id] = version

    def _view(self, message: pb.TableView, *, whole: bool = False) -> TableView:
        view = TableView.from_proto(message)
        self._saw(view.table_id, view.version, whole=whole)
        return view

    def _metadata(
        self, table_id: str | None, credentials: tuple[tuple[str, str], ...] | None = None
    ) -> tuple[tuple[str, str], ...]:
        """A call's metadata: a fresh log id, the table id to route by (every call about a
        table) and ``credentials`` (default: the ones held)."""
        if credentials is None:
            credentials = self._credentials(table_id)
        routing = () if table_id is None else ((TABLE_ID_HEADER, table_id),)
        return ((REQUEST_ID_KEY, uuid.uuid4().hex), *routing, *credentials)

    def _credentials(self, table_id: str | None) -> tuple[tuple[str, str], ...]:
        held = None if table_id is None else self._seats.get(table_id)
        if held is not None:
            return ((SEAT_TOKEN_HEADER, held[1]),)
        if self.api_key:
            return ((API_KEY_HEADER, self.api_key),)
        return ()

    # --- plumbing -----------------------------------------------------------------------------
    def _call(
        self,
        method: Callable[..., Any],
        message: Any,
        table_id: str | None,
        credentials: tuple[tuple[str, str], ...] | None = None,
    ) -> Any:
        """One unary call; UNAVAILABLE is retried with the very same message (and the same
        ``credentials``, default: the ones held), and so is CANCELLED, which a blocking call
        gets only from the server's side: a replica that stopped before it ran the call (a
        mutation's retry is safe: the request id makes it apply once)."""
        check_open(self)
        if credentials is None:
            credentials = self._credentials(table_id)
        attempt = 0
        while True:
            try:
                metadata = self._metadata(table_id, credentials)
                return method(message, timeout=self.timeout, metadata=metadata)
            except grpc.RpcError as rpc_error:
                error = from_rpc_error(rpc_error)
            if error.code == grpc.StatusCode.UNAUTHENTICATED and table_id is not None:
                # The table no longer knows the seat token sent: its seat was left (perhaps
                # vacated by the service after the hand its player asked to leave after).
                self._forget_seat(table_id, credentials)
            if error.code not in _RETRIED or attempt >= self.retries:
                raise error
            time.sleep(self.retry_delay * 2**attempt)
            attempt += 1

    def _send(self, request: _Request) -> TableView:
        if request.version_unread and not request.message.expected_version:
            assert request.table_id is not None
            version = self.get(request.table_id).version
            with self._lock:  # two threads' retries of it send one version
                if not request.message.expected_version:
                    request.message.expected_version = version
        response = self._call(
            request.method, request.message, request.table_id, request.credentials
        )
        return request.on_success(response)

    def _mutate(
        self,
        table_id: str,
        method: Callable[..., Any],
        message: Any,
        *,
        request_id: str | None,
        expected_version: int | None,
        on_success: Callable[[Any], TableView] | None = None,
    ) -> TableView:
        message.table_id = table_id
        message.request_id = request_id or str(uuid.uuid4())
        if expected_version is None:
            expected_version = self._versions.get(table_id)
        if expected_version is not None:
            message.expected_version = expected_version
        credentials = self._credentials(table_id)
        return self._send_first(
            _Request(
                table_id,
                method,
                message,
                on_success or (lambda response: self._answered(table_id, response, credentials)),
                credentials,
                version_unread=expected_version is None,
            )
        )

    def _answered(
        self, table_id: str, response: Any, credentials: tuple[tuple[str, str], ...]
    ) -> TableView:
        """A change's answer. One to this client's seat token without that seat's view says
        the seat is gone (left, or vacated by the service with this very change: its player
        asked to leave after the hand): the token is dropped with it."""
        if not response.table.HasField("viewer_seat"):
            self._forget_seat(table_id, credentials)
        return self._view(response.table)

    def _forget_seat(self, table_id: str, credentials: tuple[tuple[str, str], ...]) -> None:
        """The seat held at ``table_id`` is gone, if ``credentials`` were its token."""
        with self._lock:
            held = self._seats.get(table_id)
            if held is not None and credentials == ((SEAT_TOKEN_HEADER, held[1]),):
                del self._seats[table_id]

    def _send_first(self, request: _Request) -> TableView:
        """Send a new mutating request, which becomes the one :meth:`retry` sends again
        (before it is sent: a call that fails is the one to retry)."""
        with self._lock:
            self._last = request
            self.last_request_id = request.message.request_id
        return self._send(request)

    def retry(self) -> TableView:
        """Send the last mutating request again (a :meth:`create_table` included), unchanged
        (same request id and expected version; a version the first send failed to read is
        read now): the first result if it was applied, else it is judged now."""
        request = self._last
        if request is None:
            raise invalid("no mutating request to retry", "request_id")
        return self._send(request)

    def _own_seat(self, table_id: str, seat: int | None) -> int:
        if seat is not None:
            return seat
        own = self.seat_of(table_id)
        if own is None:
            raise invalid(
                f"which seat? this client holds no seat token for table {table_id!r}", "seat"
            )
        return own

    def close(self) -> None:
        """Close the channel: every later call raises InvalidRequestError."""
        self.closed = True
        self.channel.close()

    def __enter__(self) -> TableClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- tables and seats ---------------------------------------------------------------------
    def create_table(
        self,
        *,
        ruleset: RulesetLike = None,
        seats: int = 0,
        turn_time_limit_ms: int = 0,
        fantasyland_time_limit_ms: int = 0,
        max_hands: int = 0,
        client_seed: str = "",
        request_id: str | None = None,
        pair_units: Mapping[tuple[int, int], int] | None = None,
        client_seed_policy: str = "table",
    ) -> TableView:
        """Open a table (the operator ``api_key`` when the server has keys configured); the
        spectator's view of it. A retry with the same ``request_id`` (within the server's
        retry window, 24 hours by default) names the same table. ``pair_units[(a, b)]``: the
        unit value agreed for seats ``a < b`` (other pairs play for the ruleset's
        ``unit_value``). ``client_seed_policy="players"``: each player may add a seed of
        their own to the deals (:meth:`set_client_seed`)."""
        if client_seed_policy not in CLIENT_SEED_POLICIES:
            raise ValueError(
                f"client_seed_policy is 'table' or 'players', not {client_seed_policy!r}"
            )
        message = pb.CreateTableRequest(
            seats=seats,
            turn_time_limit_ms=turn_time_limit_ms,
            fantasyland_time_limit_ms=fantasyland_time_limit_ms,
            max_hands=max_hands,
            client_seed=client_seed,
            request_id=request_id or str(uuid.uuid4()),
            client_seed_policy=CLIENT_SEED_POLICIES[client_seed_policy],
        )
        for (a, b), unit_value in sorted((pair_units or {}).items()):
            message.pair_unit_values.add(a=a, b=b, unit_value=unit_value)
        spec = ruleset_spec(ruleset)
        if spec is not None:
            message.ruleset.CopyFrom(spec)
        return self._send_first(
            _Request(
                None,
                self._stub.CreateTable,
                message,
                lambda response: self._view(response.table),
                self._credentials(None),
            )
        )

    def get(self, table_id: str, *, as_seat: int | None = None) -> TableView:
        """The table as this client may see it (its seat's view, else a spectator's; an
        operator may pass ``as_seat``)."""
        message = pb.GetTableRequest(table_id=table_id)
        if as_seat is not None:
            message.as_seat = as_seat
        return self._view(self._call(self._stub.GetTable, message, table_id).table, whole=True)

    def join(
        self,
        table_id: str,
        seat: int,
        player_id: str,
        *,
        expected_version: int | None = None,
        request_id: str | None = None,
    ) -> str:
        """Take ``seat``; returns its seat token, which this client keeps and sends on every
        later call about ``table_id`` (save it to resume elsewhere: :meth:`use_seat`)."""

        def joined(response: pb.JoinSeatResponse) -> TableView:
            self.use_seat(table_id, seat, response.seat_token)
            return self._view(response.table)

        self._mutate(
            table_id,
            self._stub.JoinSeat,
            pb.JoinSeatRequest(seat=seat, player_id=player_id),
            request_id=request_id,
            expected_version=expected_version,
            on_success=joined,
        )
        token = self.seat_token(table_id)
        assert token is not None
        return token

    def leave(
        self,
        table_id: str,
        *,
        seat: int | None = None,
        after_hand: bool = False,
        cancel: bool = False,
        expected_version: int | None = None,
        request_id: str | None = None,
    ) -> TableView:
        """Leave a seat between hands (default: this client's own); its token is dropped.

        ``after_hand``: leave now if the rules allow it, else once they do (the seat is
        marked ``leaving`` and the server vacates it with the move that ends its hand, or
        the Fantasyland hand owed); the token is kept until then. ``cancel``: withdraw
        that; the seat stays."""
        own = self._own_seat(table_id, seat)
        if after_hand and cancel:
            raise ValueError("after_hand and cancel: choose one")
        mode = (
            pb.LEAVE_MODE_CANCEL
            if cancel
            else pb.LEAVE_MODE_AFTER_HAND
            if after_hand
            else pb.LEAVE_MODE_NOW
        )

        # A seat that stays (marked leaving, or its leave withdrawn) is answered with its own
        # view; one that left, with a spectator's: its token is dropped (_answered).
        return self._mutate(
            table_id,
            self._stub.LeaveSeat,
            pb.LeaveSeatRequest(seat=own, mode=mode),
            request_id=request_id,
            expected_version=expected_version,
        )

    def set_client_seed(
        self,
        table_id: str,
        client_seed: str,
        *,
        seat: int | None = None,
        expected_version: int | None = None,
        request_id: str | None = None,
    ) -> TableView:
        """Set the seat's own client seed (default: this client's seat; "" clears it) at a
        table created with ``client_seed_policy="players"``; it counts from the next hand,
        whose server seed is already committed (``TableView.next_commitment``)."""
        return self._mutate(
            table_id,
            self._stub.SetClientSeed,
            pb.SetClientSeedRequest(seat=self._own_seat(table_id, seat), client_seed=client_seed),
            request_id=request_id,
            expected_version=expected_version,
        )

    # --- hands --------------------------------------------------------------------------------
    def start_hand(
        self,
        table_id: str,
        *,
        expected_version: int | None = None,
        request_id: str | None = None,
    ) -> TableView:
        """Start the next hand (any seated player, or an operator)."""
        return self._mutate(
            table_id,
            self._stub.StartHand,
            pb.StartHandRequest(),
            request_id=request_id,
            expected_version=expected_version,
        )

    def place(
        self,
        table_id: str,
        placements: Placements | None = None,
        *,
        top: str | Sequence[str] = (),
        middle: str | Sequence[str] = (),
        bottom: str | Sequence[str] = (),
        discard: str | None = None,
        seat: int | None = None,
        expected_version: int | None = None,
        request_id: str | None = None,
    ) -> TableView:
        """Place the dealt batch: ``placements`` card -> row (``"top"``, ``"middle"``,
        ``"bottom"``), or the cards row by row (``bottom="As Ad", top="7c"``); ``discard``
        on streets that discard (Pineapple)."""
        pairs = _placement_pairs(placements, top=top, middle=middle, bottom=bottom)
        message = pb.PlaceCardsRequest(
            seat=self._own_seat(table_id, seat),
            placements=[pb.Placement(card=card, row=row_position(row)) for card, row in pairs],
            discard=discard or "",
        )
        return self._mutate(
            table_id,
            self._stub.PlaceCards,
            message,
            request_id=request_id,
            expected_version=expected_version,
        )

    def set_fantasyland(
        self,
        table_id: str,
        board: BoardLike,
        discards: str | Sequence[str] = (),
        *,
        seat: int | None = None,
        expected_version: int | None = None,
        request_id: str | None = None,
    ) -> TableView:
        """Set a whole Fantasyland hand: the board (``"Qs Qd 2c / ... / ..."``, a mapping or
        rows) and the dealt cards left off it."""
        message = pb.SetFantasylandRequest(
            seat=self._own_seat(table_id, seat),
            board=board_message(board),
            discards=card_list(discards, "discards"),
        )
        return self._mutate(
            table_id,
            self._stub.SetFantasyland,
            message,
            request_id=request_id,
            expected_version=expected_version,
        )

    def hand_history(self, table_id: str, hand_number: int) -> HandHistory:
        """A finished hand, its server seed revealed (NotFoundError while it is not over)."""
        message = pb.GetHandHistoryRequest(table_id=table_id, hand_number=hand_number)
        return HandHistory.from_proto(self._call(self._stub.GetHandHistory, message, table_id))

    def list_hands(self, table_id: str, *, page_size: int = 0, page_token: str = "") -> HandPage:
        """One page of the table's finished hands, oldest first."""
        message = pb.ListHandsRequest(table_id=table_id, page_size=page_size, page_token=page_token)
        return HandPage.from_proto(self._call(self._stub.ListHands, message, table_id))

    def iter_hands(self, table_id: str, *, page_size: int = 0) -> Iterator[HandSummary]:
        """Every finished hand, oldest first, page after page."""
        token = ""
        while True:
            page = self.list_hands(table_id, page_size=page_size, page_token=token)
            yield from page.hands
            if not page.next_page_token:
                return
            token = page.next_page_token

    def watch(
        self,
        table_id: str,
        *,
        as_seat: int | None = None,
        after_event_id: str = "",
        reconnect_timeout: float = 30.0,
    ) -> TableWatch:
        """The caller's view as a snapshot, then every event as the caller may see it
        (iterate; ``cancel()`` or leave the ``with`` block to stop). ``after_event_id``:
        resume after that event, without a snapshot."""
        check_open(self)
        return TableWatch(
            self,
            table_id,
            as_seat=as_seat,
            after_event_id=after_event_id,
            reconnect_timeout=reconnect_timeout,
        )


class TableWatch:
    """An open watch: iterate for :data:`~ofc_client.table_models.WatchItem` values.

    ``last_event_id`` is the id of the last event yielded (or the snapshot's); a dropped
    stream is reopened after it, so events arrive exactly once. When the server no longer
    holds events that far back (EVENTS_TRIMMED), the watch starts again with a fresh
    snapshot: a snapshot in the middle of a stream means "resynchronise from here". A
    replica that stops ends its streams (UNAVAILABLE, SERVER_SHUTTING_DOWN), and the HTTP
    port ends them on a connection retired for its age (CONNECTION_RETIRED): the watch
    reconnects at once, without backoff, the first time in a run of failures (another such
    end in the same run is retried with backoff), and resumes after the last event received.
    Failures stop being retried once they have gone on for ``reconnect_timeout`` seconds
    since the last message or the last stream that stood (:func:`_stood`: open that long
    itself, or :data:`STEADY_STREAM_S` before the server ended it on purpose), so a quiet
    table's watch, whose connection is retired now and then, never gives up.
    """

    def __init__(
        self,
        client: TableClient,
        table_id: str,
        *,
        as_seat: int | None,
        after_event_id: str,
        reconnect_timeout: float,
    ) -> None:
        self.client = client
        self.table_id = table_id
        self.as_seat = as_seat
        self.last_event_id = after_event_id
        self.reconnect_timeout = reconnect_timeout
        self.reconnects = 0
        self._call: Any = None
        self._cancelled = False
        # Events come in batches (fewer messages); they are handed out one at a time, and a
        # reconnect resumes after the last one received, not the last one handed out.
        self._received: deque[pb.TableEvent] = deque()
        self._cursor = after_event_id
        self._credentials: tuple[tuple[str, str], ...] = ()  # the open stream's
        self._opened_at = 0.0  # when the open stream was opened (time.monotonic)

    def _open(self) -> Any:
        message = pb.WatchRequest(
            table_id=self.table_id, after_event_id=self._cursor, batch_events=True
        )
        if self.as_seat is not None:
            message.as_seat = self.as_seat
        self._credentials = self.client._credentials(self.table_id)
        metadata = self.client._metadata(self.table_id, self._credentials)
        return self.client._stub.Watch(message, timeout=None, metadata=metadata)

    def __iter__(self) -> TableWatch:
        return self

    def __next__(self) -> WatchItem:
        failing_since: float | None = None
        delay = 0.05
        while True:
            if self._cancelled:
                raise StopIteration
            if self._received:
                event = TableEvent.from_proto(self._received.popleft())
                self.last_event_id = event.event_id
                self.client._saw(self.table_id, event.version)
                return event
            if self._call is None:
                self._call = self._open()
                self._opened_at = time.monotonic()
                if self._cancelled:  # cancel() came as it was opened, and saw no call
                    self._call.cancel()
            try:
                message = next(self._call)
            except StopIteration:
                self._call = None
                raise
            except grpc.RpcError as rpc_error:
                self._call = None
                if self._cancelled:
                    raise StopIteration from None
                error = from_rpc_error(rpc_error)
                if _stood(time.monotonic() - self._opened_at, error, self.reconnect_timeout):
                    # A stream that stood (a quiet table sends nothing) ended: a new run of
                    # failures (a connection retired every few minutes is no outage).
                    failing_since, delay = None, 0.05
                if error.code == grpc.StatusCode.UNAUTHENTICATED:
                    # the seat is gone (see TableClient._call): so is the client's token
                    self.client._forget_seat(self.table_id, self._credentials)
                if error.reason == "EVENTS_TRIMMED":
                    self.last_event_id = self._cursor = ""
                    continue
                if error.reason in _REOPENED_AT_ONCE and failing_since is None:
                    failing_since = time.monotonic()  # once at once; again: with backoff
                    self.reconnects += 1
                    continue
                now = time.monotonic()
                failing_since = now if failing_since is None else failing_since
                if not _reconnectable(error) or now - failing_since > self.reconnect_timeout:
                    raise error from None
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
                self.reconnects += 1
                continue
            if message.HasField("snapshot"):
                view = self.client._view(message.snapshot, whole=True)
                self.last_event_id = self._cursor = view.last_event_id
                return view
            events = message.events.events if message.HasField("events") else [message.event]
            self._received.extend(events)
            self._cursor = events[-1].event_id if events else self._cursor

    def cancel(self) -> None:
        """Stop the watch (from any thread); iteration ends."""
        self._cancelled = True
        call = self._call
        if call is not None:
            call.cancel()

    def __enter__(self) -> TableWatch:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cancel()


STEADY_STREAM_S = 1.0
"""A Watch stream open this long before the server ended it on purpose (a reason of
``_REOPENED_AT_ONCE``) had stood (:func:`_stood`)."""

_REOPENED_AT_ONCE = frozenset({"SERVER_SHUTTING_DOWN", "CONNECTION_RETIRED"})
"""Reasons of a stream ended on purpose, the server well: reopened at once (the first time
in a run of failures), without backoff."""


def _stood(open_s: float, error: OfcClientError, reconnect_timeout: float) -> bool:
    """Whether a Watch stream open ``open_s`` seconds before it failed with ``error`` had
    stood: its failure starts a new run of failures (backoff from its first delay,
    ``reconnect_timeout`` from then), as a message does. A Watch of a quiet table receives
    nothing for minutes while its connection is retired (the server's maximum connection
    age) or a replica stops. A stream the server ended on purpose stood if it was open
    :data:`STEADY_STREAM_S`; any other if it was open ``reconnect_timeout`` itself: a proxy
    failing every stream after its connect timeout (a second or three) is an outage.

    >>> unavailable = grpc.StatusCode.UNAVAILABLE
    >>> retired = OfcClientError("", code=unavailable, reason="CONNECTION_RETIRED")
    >>> cut = OfcClientError("", code=unavailable)
    >>> _stood(1.5, retired, 30.0), _stood(1.5, cut, 30.0), _stood(31.0, cut, 30.0)
    (True, False, True)
    """
    if error.reason in _REOPENED_AT_ONCE:
        return open_s >= STEADY_STREAM_S
    return open_s >= reconnect_timeout


def _reconnectable(error: OfcClientError) -> bool:
    """A replica or the store went away (or the server ended the stream): try again."""
    return error.code in _RETRIED


def _placement_pairs(
    placements: Placements | None,
    *,
    top: str | Sequence[str],
    middle: str | Sequence[str],
    bottom: str | Sequence[str],
) -> list[tuple[str, str]]:
    """Placements as (card, row) pairs, from a mapping, pairs or rows.

    >>> _placement_pairs({"As": "bottom"}, top=(), middle=(), bottom=())
    [('As', 'bottom')]
    >>> _placement_pairs(None, top="7c", middle=(), bottom="As Ad")
    [('7c', 'top'), ('As', 'bottom'), ('Ad', 'bottom')]
    """
    by_rows = [(card, row) for row, cards in zip(ROWS, (top, middle, bottom), strict=True)
               for card in card_list(cards, f"placements.{row}")]  # fmt: skip
    if placements is None:
        return by_rows
    if by_rows:
        raise invalid("give placements or rows (top=, middle=, bottom=), not both", "placements")
    pairs = list(placements.items()) if isinstance(placements, Mapping) else list(placements)
    for k, pair in enumerate(pairs):
        shaped = isinstance(pair, tuple) and len(pair) == 2
        if not shaped or not all(isinstance(x, str) for x in pair):
            raise invalid(f"a placement is (card, row), got {pair!r}", f"placements[{k}]")
    return pairs
