"""What each credential may know of a live table, version by version: the engine's side of
the lifecycle tests (tests/e2e/test_table_lifecycles.py).

A :class:`Cluster` runs replicas of the table service in this process (one on the
in-memory store, or three on one Redis), on a clock and a server-seed source the test
holds: turns run out when the test moves the clock, and every seed the servers draw is
known, so none can leak unseen. A :class:`TableModel` reads the table as an auditor would
(its record and whole event log, from the store), replays the log through the engine and
so knows the exact state at every version; :meth:`TableModel.may_know` says which cards a
credential may know at a version:

- a seat token (:class:`Holder`): the face-up boards, and its seat's own cards only while
  it holds the seat and only of a hand that its player started (a seat's next player never
  learns what the one before was dealt or discarded);
- an operator viewing as seat ``k`` (an ``int``): the face-up boards and seat ``k``'s cards;
- anyone else (``None``: a spectator, an operator without a seat): the face-up boards.

No credential may know the undealt deck, nor a server seed before its hand is over.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import socket
import threading
import time
from collections.abc import Coroutine, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2
from ofc import engine
from ofc.cards import Card
from ofc.engine import MatchState
from ofc.rulesets import Ruleset
from ofc_service.application.records import TableRecord
from ofc_service.server.background import BackgroundServer
from ofc_service.store import StoredEvent, TableStore
from ofcpoker.v1 import table_service_pb2 as pb
from ofcpoker.v1 import table_service_pb2_grpc as pb_grpc

from tests.conftest import RedisServer
from tests.e2e.tablekit import API_KEY, actions_of, cards_in, full_event, start_server

T = TypeVar("T")
OPERATOR = (("x-ofc-api-key", API_KEY),)
Metadata = tuple[tuple[str, str], ...]


def seat_md(token: str) -> Metadata:
    return (("x-ofc-seat-token", token),)


class FakeClock:
    """Unix milliseconds for every replica's table manager: still unless moved."""

    def __init__(self) -> None:
        self.now = time.time_ns() // 1_000_000
        self._lock = threading.Lock()

    def __call__(self) -> int:
        return self.now

    def advance_to(self, ms: int) -> None:
        with self._lock:
            self.now = max(self.now, ms)


class SeedLog:
    """The replicas' server-seed source: a fixed sequence per table, every seed kept."""

    def __init__(self) -> None:
        self.drawn: list[bytes] = []
        self._name = ""
        self._first = b""
        self._lock = threading.Lock()

    def reset(self, name: str, *, first: bytes = b"") -> None:
        """A new table's sequence; ``first``: its first seed (the first hand's) instead."""
        with self._lock:
            self._name, self.drawn, self._first = name, [], first

    def __call__(self) -> bytes:
        with self._lock:
            seed = hashlib.sha256(f"lifecycle:{self._name}:{len(self.drawn)}".encode()).digest()
            if self._first and not self.drawn:
                seed = self._first
            self.drawn.append(seed)
            return seed


@dataclass
class Cluster:
    """Replicas sharing one store, with channels to each; the store read through the first."""

    servers: list[BackgroundServer]
    stubs: list[pb_grpc.TableServiceStub]
    clock: FakeClock
    seeds: SeedLog
    foreign_token: str = ""  # a seat token of another table

    @property
    def store(self) -> TableStore:
        return self.servers[0].server.store

    def run(self, job: Coroutine[Any, Any, T]) -> T:
        """``job`` on the first replica's event loop (where its store lives)."""
        loop = self.servers[0]._loop
        return asyncio.run_coroutine_threadsafe(job, loop).result(timeout=15)


def _flush(redis: RedisServer) -> None:
    with socket.create_connection(("127.0.0.1", redis.port)) as conn:
        conn.sendall(b"FLUSHALL\r\n")
        conn.recv(16)


@contextmanager
def open_cluster(
    redis: RedisServer | None, replicas: int, *, event_log_hands: int = 0, http: bool = False
) -> Iterator[Cluster]:
    """``replicas`` servers on a fresh Redis database (or one on the in-memory store), each
    keeping every table's whole event log (the model replays it), or, with
    ``event_log_hands``, the last hands' events and their request records as a production
    server does (the model then reads the log after every step, before it is trimmed);
    ``http``: each with its HTTP port too (Connect, gRPC-Web)."""
    if redis is not None:
        _flush(redis)
    url = "" if redis is None else redis.url
    clock, seeds = FakeClock(), SeedLog()
    with ExitStack() as stack:
        servers = [
            stack.enter_context(start_server(url, event_log_hands=event_log_hands, http=http))
            for _ in range(replicas)
        ]
        for bg in servers:
            manager = bg.server.sweeper.manager
            manager.clock_ms = clock
            manager.server_seed = seeds
        channels = [stack.enter_context(grpc.insecure_channel(bg.address)) for bg in servers]
        cluster = Cluster(servers, [pb_grpc.TableServiceStub(c) for c in channels], clock, seeds)
        other = cluster.stubs[0].CreateTable(
            pb.CreateTableRequest(seats=2, request_id="foreign"), metadata=OPERATOR
        )
        joined = cluster.stubs[-1].JoinSeat(
            pb.JoinSeatRequest(
                table_id=other.table_id, seat=0, player_id="x", expected_version=1,
                request_id="foreign-join",
            )
        )  # fmt: skip
        cluster.foreign_token = joined.seat_token
        yield cluster


@dataclass
class Holder:
    """One seat token over its life: issued by JoinSeat at ``joined``, revoked by LeaveSeat
    at ``left``."""

    token: str
    seat: int
    player_id: str
    joined: int
    left: int | None = None
    # Vacated by the service in the commit of the move that ended its hand (it asked to leave
    # after the hand): the events of that version up to its leaving were still its own.
    left_after_move: bool = False

    @property
    def md(self) -> Metadata:
        return seat_md(self.token)

    def holds_at(self, version: int) -> bool:
        left = self.left
        return self.joined <= version and (
            left is None or version < left or (version == left and self.left_after_move)
        )

    def note_left(self, vacated: list[tuple[int, str, int, bool]]) -> None:
        """``left`` set from the seats the table vacated, (seat, player, version, after a
        move) each: by its LeaveSeat, or by the service once the hand it played ended (leave
        after the hand)."""
        if self.left is not None:
            return
        for seat, player, version, after_move in vacated:
            if (seat, player) == (self.seat, self.player_id) and version > self.joined:
                self.left, self.left_after_move = version, after_move
                return


Audience = Holder | int | None
"""Who a message went to: a seat token's holder, an operator viewing as seat k, or anyone
who sees only public information (None)."""


def _without_times(state: MatchState) -> MatchState:
    if state.hand is None:
        return state
    return dataclasses.replace(
        state, hand=dataclasses.replace(state.hand, started_at_ms=0, updated_at_ms=0)
    )


@dataclass
class TableModel:
    """One table as the engine says it went, read from the store after every step."""

    cluster: Cluster
    table_id: str
    ruleset: Ruleset
    seats: int
    states: dict[int, MatchState] = field(default_factory=dict)
    log: list[StoredEvent] = field(default_factory=list)
    version_of_event: dict[str, int] = field(default_factory=dict)
    record: TableRecord | None = None
    hand_seeds: dict[int, bytes] = field(default_factory=dict)
    started_by: dict[int, tuple[str, ...]] = field(default_factory=dict)  # hand -> players
    revealed_at: dict[bytes, int] = field(default_factory=dict)  # seed -> version
    # (seat, player, version, whether in the commit of a move: a leave after the hand)
    vacated: list[tuple[int, str, int, bool]] = field(default_factory=list)
    _applied: int = 0  # log entries replayed

    def __post_init__(self) -> None:
        self.states[1] = engine.new_match(self.ruleset, seats=self.seats)

    @property
    def version(self) -> int:
        return max(self.states)

    @property
    def state(self) -> MatchState:
        return self.states[self.version]

    def sync(self) -> None:
        """Read what the table is now and replay every version committed since."""

        async def read() -> tuple[bytes, int, list[StoredEvent]]:
            stored = await self.cluster.store.load(self.table_id)
            after = self.log[-1].event_id if self.log else "0"
            events: list[StoredEvent] = []
            while batch := await self.cluster.store.read_events(self.table_id, after=after):
                events.extend(batch)
                after = batch[-1].event_id
            return stored.state, stored.version, events

        raw, version, events = self.cluster.run(read())
        record = TableRecord.from_bytes(raw)
        self.record = record
        if record.match.hand is not None:
            self.hand_seeds[record.match.hand.number] = record.match.hand.server_seed
        self.log.extend(events)
        full = [full_event(e) for e in self.log[self._applied :]]
        groups: dict[int, list[pb.TableEvent]] = {}
        for stored, event in zip(self.log[self._applied :], full, strict=True):
            self.version_of_event[stored.event_id] = event.version
            if event.version <= version:
                groups.setdefault(event.version, []).append(event)
        for v in sorted(groups):
            assert v == self.version + 1, f"version {v} after {self.version}"
            self._applied += len(groups[v])
            state = self.state
            actions = actions_of(groups[v], state, self.hand_seeds)
            for action in actions:
                if isinstance(action, engine.StandUp):
                    player = state.seats[action.seat].player_id
                    after_move = not isinstance(actions[0], engine.StandUp)
                    self.vacated.append((action.seat, player, v, after_move))
                before, (state, _) = state, engine.apply(state, action)
                if isinstance(action, engine.StartHand) and state.hand is not None:
                    self.started_by[state.hand.number] = tuple(s.player_id for s in before.seats)
            self.states[v] = state
            hand = state.hand
            if hand is not None and hand.over:
                self.revealed_at.setdefault(hand.server_seed, v)
        assert self.version == version, f"the log reaches v{self.version}, the table v{version}"
        assert _without_times(self.state) == _without_times(record.match), "log != record"

    # --- what each credential may know ------------------------------------------------------
    def may_know(self, audience: Audience, version: int) -> set[Card]:
        state = self.states[version]
        hand = state.hand
        if hand is None:
            return set()
        known = {c for s in hand.seats if not s.in_fantasyland or hand.over for c in s.board.cards}
        seat = audience
        if isinstance(audience, Holder):
            started = self.started_by.get(hand.number, ())
            own_hand = len(started) > audience.seat and started[audience.seat] == audience.player_id
            seat = audience.seat if audience.holds_at(version) and own_hand else None
        if isinstance(seat, int) and hand.index(seat) >= 0:
            mine = hand.seat(seat)
            known |= {*mine.pending, *mine.discards, *mine.board.cards}
        return known

    def secret_seeds(self, version: int) -> list[bytes]:
        """Every server seed drawn for this table and not yet public at ``version``."""
        return [
            s for s in self.cluster.seeds.drawn if self.revealed_at.get(s, version + 1) > version
        ]

    def check(self, audience: Audience, version: int, message: Message, what: str) -> None:
        """``message`` (sent at ``version`` to ``audience``) holds no card and no seed that
        the audience may not know then."""
        extra = cards_in(message) - self.may_know(audience, version)
        assert not extra, f"{what} to {audience!r} at v{version}: {sorted(map(str, extra))}"
        sent = message.SerializeToString()
        for seed in self.secret_seeds(version):
            for form in (seed, seed.hex().encode(), seed.hex().upper().encode()):
                assert form not in sent, f"{what} to {audience!r} at v{version}: a secret seed"


def wire_status(error: grpc.RpcError) -> tuple[grpc.StatusCode, str, str]:
    """(code, ErrorInfo reason, BadRequest field) of a failed call."""
    trailers = dict(error.trailing_metadata() or ())
    raw = trailers.get("grpc-status-details-bin")
    assert isinstance(raw, bytes), f"no status details: {error.code()} {error.details()}"
    reason = violated = ""
    for detail in status_pb2.Status.FromString(raw).details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reason = info.reason
        elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            violated = bad.field_violations[0].field
    assert reason, f"no ErrorInfo: {error.code()} {error.details()}"
    return error.code(), reason, violated
