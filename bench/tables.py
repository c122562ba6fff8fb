"""Live tables on Redis: ``.venv/bin/python -m bench.tables``.

    .venv/bin/python -m bench.tables                      # all figures, throwaway redis-server
    .venv/bin/python -m bench.tables --seconds 5 --in-flight 1,16,64 --servers 1,2

Three parts, all on a private ``redis-server`` on a free port (or ``--redis-url``; the
bench then writes under its own key prefix only in the in-process parts and FLUSHes
nothing, so give it an empty database):

1. **Round trips per move**, in process: a TableService on a store whose Redis
   connections count what they send (one ``send_packed_command`` is one round trip: a
   command, or a whole pipeline). ``--moves`` PlaceCards calls are counted one by one, and
   the Redis commands they caused are read from ``INFO commandstats`` (script-internal
   calls included). Target: at most 2 round trips per move (1 when the replica holds the
   table's record at the move's version, as when it made the table's last move: the
   commit checks the stored state's SHA-1 instead of loading it).
2. **Memory**, in process (``--memory-only``: this part alone): ``MEMORY USAGE`` of a
   table's keys when it is idle (created, two seats joined) and after ``--hands`` finished
   hands, per hand: the hand history, the event stream (a new hand trims the log to the
   previous hand and itself, so its share per hand falls as hands go on), and the request
   records (the current hand's whole, the previous hand's as markers) with their markers'
   hashes; and what the table
   keeps live (state, event log, request records and log: everything but its histories and
   settlement outbox), after the last hand and the most after any hand. Targets: under 4 KiB
   per finished hand; at most 32 KiB live per table, however many hands it played.
3. **Throughput and latency**, against ``ofc serve`` processes (1 and 2, on the same
   Redis): PlaceCards with N tables in play at once (N = "in flight"; each table's two
   seats are driven by their own Watch streams, on the other replica when there are two:
   a move is sent when the seat's cards are dealt, so each table has at most one
   PlaceCards in flight; the watches ask for ``batch_events``, ``--event-messages`` for one
   message per event) next to SettleHand from N workers, in alternating rounds of the
   same run. Prints moves/s, p50 and p99 latency, the server processes' CPU time per call
   (from ``/proc``: for a move, everything it causes, its watch messages included; steadier
   than the rates on a shared machine) and the place/settle ratio. Targets: PlaceCards >=
   60% of SettleHand throughput, p99 < 50 ms at 64 in flight.

The client is one Python process (grpc.aio); on a small machine it shares the cores with
the servers and Redis, so the absolute figures are the machine's, the ratio is the point.
A move costs more than a settle by what it must do besides the call: one Redis round trip
(two when the record is not held), the engine step and the record, and the events sent to
the table's two watchers (a message each with batching) after their shared log read (one
more Redis round trip per replica watching). Run it on an otherwise idle machine: another
busy process, even at a low priority, delays every wake-up and inflates the latencies.
``python -m bench.move_floor`` measures that shape alone, with no game logic: the most the
place/settle ratio can be on this stack and machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from ofc.cards import Card
from ofc.solver import solve_fantasyland
from ofc_service.api import tables as table_api
from ofc_service.api.rpc import add_handlers
from ofc_service.api.tables import ProtobufPresenter, TableHandlers
from ofc_service.application.manager import TableManager
from ofc_service.application.settlements import SettlementRelay
from ofc_service.auth import Authenticator
from ofc_service.store import RedisSettlementFeed, RedisTableStore
from ofcpoker.v1 import cards_pb2
from ofcpoker.v1 import rules_service_pb2 as rules_pb
from ofcpoker.v1 import table_service_pb2 as pb
from ofcpoker.v1 import table_service_pb2_grpc as pb_grpc
from redis.asyncio import Redis
from redis.asyncio.connection import Connection

from bench.grpc_load import SETTLE, percentile, settle_request

API_KEY = "bench-operator-key"
OPERATOR = (("x-ofc-api-key", API_KEY),)
PLACE = "/ofcpoker.v1.TableService/PlaceCards"
TARGET_ROUND_TRIPS = 2
TARGET_RATIO = 0.60
TARGET_P99_MS = 50.0
TARGET_HAND_BYTES = 4096
LONG_TURN_MS = 3_600_000
ROWS = (
    (cards_pb2.ROW_POSITION_BOTTOM, 5),
    (cards_pb2.ROW_POSITION_MIDDLE, 5),
    (cards_pb2.ROW_POSITION_TOP, 3),
)


# --- 1. round trips ------------------------------------------------------------------------
class CountingConnection(Connection):
    """A Redis connection that counts what it sends: each call is one round trip."""

    sent = 0

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountingConnection.sent += 1
        await super().send_packed_command(command, check_health)


@dataclass
class InProcess:
    """A TableService in this process on a counting Redis store (no sweeper, no relay)."""

    url: str
    prefix: str = field(default_factory=lambda: f"bench{uuid.uuid4().hex[:8]}")
    server: grpc.aio.Server | None = None
    stub: pb_grpc.TableServiceStub | None = None
    channel: grpc.aio.Channel | None = None
    store: RedisTableStore | None = None

    async def __aenter__(self) -> InProcess:
        client = Redis.from_url(self.url, connection_class=CountingConnection)
        self.store = RedisTableStore(client, key_prefix=self.prefix, owns_clients=True)
        manager = TableManager(self.store, Authenticator([API_KEY]), ProtobufPresenter())
        self.server = grpc.aio.server()
        add_handlers(self.server, TableHandlers(manager), table_api.SERVICE)
        port = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        self.stub = pb_grpc.TableServiceStub(self.channel)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.channel and self.server and self.store
        await self.channel.close()
        await self.server.stop(0)
        await self.store.close()


@dataclass
class Seat:
    token: str
    counts: list[int] = field(default_factory=lambda: [0, 0, 0])  # bottom, middle, top placed

    @property
    def md(self) -> tuple[tuple[str, str], ...]:
        return (("x-ofc-seat-token", self.token),)


def placements(seat: Seat, cards: Sequence[str]) -> list[pb.Placement]:
    """Cards to rows with room, bottom first (the bench does not care about fouls)."""
    out = []
    for card in cards:
        k = next(i for i, (_, size) in enumerate(ROWS) if seat.counts[i] < size)
        seat.counts[k] += 1
        out.append(pb.Placement(card=card, row=ROWS[k][0]))
    return out


def fantasyland_request(table_id: str, seat: int, cards: Sequence[str]) -> pb.SetFantasylandRequest:
    solution = solve_fantasyland([Card.parse(c) for c in cards])
    board = cards_pb2.Board(
        top=[str(c) for c in solution.top],
        middle=[str(c) for c in solution.middle],
        bottom=[str(c) for c in solution.bottom],
    )
    return pb.SetFantasylandRequest(
        table_id=table_id, seat=seat, board=board, discards=[str(c) for c in solution.discards]
    )


async def open_table(stub: pb_grpc.TableServiceStub, seats: int = 2) -> tuple[str, int, list[Seat]]:
    created = await stub.CreateTable(
        pb.CreateTableRequest(
            seats=seats, request_id=uuid.uuid4().hex, turn_time_limit_ms=LONG_TURN_MS
        ),
        metadata=OPERATOR,
    )
    version = created.table.version
    players = []
    for s in range(seats):
        joined = await stub.JoinSeat(
            pb.JoinSeatRequest(
                table_id=created.table_id, seat=s, player_id=f"p{s}",
                expected_version=version, request_id=uuid.uuid4().hex,
            )
        )  # fmt: skip
        version = joined.table.version
        players.append(Seat(joined.seat_token))
    return created.table_id, version, players


async def _nothing() -> None:
    return None


async def play_sequentially(
    stub: pb_grpc.TableServiceStub,
    table_id: str,
    version: int,
    seats: list[Seat],
    *,
    before_move: Callable[[], Awaitable[None]] = _nothing,
    after_move: Callable[[], Awaitable[None]] = _nothing,
) -> int:
    """One hand, seats moving in turn, each reading its own view first; the new version."""
    for seat in seats:
        seat.counts = [0, 0, 0]
    started = await stub.StartHand(
        pb.StartHandRequest(
            table_id=table_id, expected_version=version, request_id=uuid.uuid4().hex
        ),
        metadata=seats[0].md,
    )
    version = started.table.version
    hand = started.table.hand
    while not hand.over:
        waiting = hand.to_act[0]
        seat = seats[waiting]
        view = (await stub.GetTable(pb.GetTableRequest(table_id=table_id), metadata=seat.md)).table
        own = next(s for s in view.hand.seats if s.seat == waiting)
        if own.fantasyland_cards:
            request: Any = fantasyland_request(table_id, waiting, own.pending)
            method: Any = stub.SetFantasyland
        else:
            request = pb.PlaceCardsRequest(
                table_id=table_id, seat=waiting, placements=placements(seat, own.pending)
            )
            method = stub.PlaceCards
        request.expected_version = version
        request.request_id = uuid.uuid4().hex
        await before_move()
        moved = await method(request, metadata=seat.md)
        await after_move()
        version = moved.table.version
        hand = moved.table.hand
    return version


@dataclass(frozen=True)
class RoundTrips:
    moves: int
    round_trips: float
    commands: float
    by_command: dict[str, float]


async def count_round_trips(url: str, moves: int) -> RoundTrips:
    """Round trips and Redis commands of each move alone (reads before it not counted)."""
    admin = Redis.from_url(url, decode_responses=True)
    counted = trips = 0
    calls: dict[str, int] = {}
    mark = 0
    stats: dict[str, Any] = {}

    async def before() -> None:
        nonlocal mark, stats
        stats = await admin.info("commandstats")
        mark = CountingConnection.sent

    async def after() -> None:
        nonlocal trips, counted
        trips += CountingConnection.sent - mark
        counted += 1
        for name, now in (await admin.info("commandstats")).items():
            delta = now["calls"] - stats.get(name, {"calls": 0})["calls"]
            if delta and name not in ("cmdstat_info",):
                key = name.removeprefix("cmdstat_")
                calls[key] = calls.get(key, 0) + delta

    async with InProcess(url) as live:
        assert live.stub is not None
        table_id, version, seats = await open_table(live.stub)
        version = await play_sequentially(live.stub, table_id, version, seats)  # warm up
        while counted < moves:
            version = await play_sequentially(
                live.stub, table_id, version, seats, before_move=before, after_move=after
            )
    await admin.aclose()
    per_move = {k: v / counted for k, v in sorted(calls.items())}
    return RoundTrips(counted, trips / counted, sum(per_move.values()), per_move)


# --- 2. memory -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Memory:
    idle_table: dict[str, int]
    idle_requests: int
    hands: int
    per_hand: dict[str, float]  # what each finished hand adds for the table's lifetime
    requests_per_hand: float  # request records: kept for the table's current and previous hand
    outbox_per_hand: float  # settlement records: kept until the relay moves them to the feed
    feed_per_hand: float  # the feed's record: kept for the retention, and until acknowledged
    dedupe_per_hand: float  # the settlement id remembered: kept three times as long
    history_blob: float
    live: dict[str, int]  # what the table keeps live after its last hand, by part
    live_max: int  # the most it kept live after any hand
    seats: int = 2


KEPT_PER_HAND = ("events", "extra", "extra_index")  # the event log, the hand history + index
LIVE_PARTS = ("state", "events", "req", "requests")  # all but the histories and the outbox
TARGET_LIVE_BYTES = 32 * 1024


async def measure_memory(url: str, hands: int, seats: int = 2) -> Memory:
    admin = Redis.from_url(url)

    async def usage(prefix: str, table_id: str) -> dict[str, int]:
        out: dict[str, int] = {}
        async for key in admin.scan_iter(match=f"{prefix}:{{{table_id}}}:*", count=1000):
            part = key.decode().split("}:", 1)[1]
            part = "req" if part.startswith(("req:", "replies:", "markers:")) else part
            out[part] = out.get(part, 0) + int(await admin.memory_usage(key, samples=0) or 0)
        return out

    async with InProcess(url) as live:
        assert live.stub is not None
        table_id, version, players = await open_table(live.stub, seats)
        idle = await usage(live.prefix, table_id)
        live_max = 0
        for _ in range(hands):
            version = await play_sequentially(live.stub, table_id, version, players)
            after = await usage(live.prefix, table_id)
            live_max = max(live_max, sum(after.get(part, 0) for part in LIVE_PARTS))
        blobs = await admin.hvals(f"{live.prefix}:{{{table_id}}}:extra")
        # the hands' settlements relayed to the feed (its stream and dedupe keys)
        assert live.store is not None
        feed = RedisSettlementFeed(Redis.from_url(url), key_prefix=live.prefix, owns_clients=True)
        relayed = await SettlementRelay(live.store, feed).relay_table(table_id)
        await feed.close()
        feed_keys: dict[str, int] = {}
        async for key in admin.scan_iter(match=f"{live.prefix}:{{settlements}}:*", count=1000):
            part = "dedupe" if b":relayed:" in key else "stream"
            feed_keys[part] = feed_keys.get(part, 0) + int(await admin.memory_usage(key) or 0)
    await admin.aclose()
    grown = {k: (after.get(k, 0) - idle.get(k, 0)) / hands for k in set(after) | set(idle)}
    return Memory(
        idle_table={k: v for k, v in sorted(idle.items()) if k != "req"},
        idle_requests=idle.get("req", 0),
        hands=hands,
        per_hand={k: grown.get(k, 0.0) for k in KEPT_PER_HAND},
        requests_per_hand=grown.get("req", 0.0),
        outbox_per_hand=grown.get("outbox", 0.0),
        feed_per_hand=feed_keys.get("stream", 0) / max(1, relayed),
        dedupe_per_hand=feed_keys.get("dedupe", 0) / max(1, relayed),
        history_blob=sum(len(b) for b in blobs) / max(1, len(blobs)),
        live={part: after.get(part, 0) for part in LIVE_PARTS},
        live_max=live_max,
        seats=seats,
    )


# --- 3. load -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Row:
    servers: int
    rpc: str
    in_flight: int
    calls: int
    seconds: float
    p50_ms: float
    p99_ms: float
    server_cpu_s: float = 0.0  # CPU time the server processes used in the row's rounds

    @property
    def per_second(self) -> float:
        return self.calls / self.seconds

    @property
    def cpu_ms_per_call(self) -> float:
        return self.server_cpu_s * 1000 / max(1, self.calls)


@dataclass
class Gate:
    """Open while PlaceCards rounds run; latencies of calls that began inside the round."""

    open: asyncio.Event = field(default_factory=asyncio.Event)
    latencies: list[float] = field(default_factory=list)
    in_flight: int = 0
    errors: int = 0


class TablePlayer:
    """One table, its two seats driven by their Watch streams. With ``alternate``, each
    PlaceCards goes to the other replica than the one before (``moves``, ``alternate``,
    ``moves``, ...): what per-request round robin in front of two replicas does."""

    def __init__(
        self,
        moves: pb_grpc.TableServiceStub,
        watches: pb_grpc.TableServiceStub,
        gate: Gate,
        *,
        batch_events: bool = True,
        alternate: pb_grpc.TableServiceStub | None = None,
    ) -> None:
        self.moves, self.watches, self.gate = moves, watches, gate
        self.batch_events = batch_events
        self.place_on = [moves] if alternate is None else [moves, alternate]
        self.places = 0
        self.queue: asyncio.Queue[tuple[int, pb.TableEvent]] = asyncio.Queue()
        self.tasks: list[asyncio.Task[None]] = []
        self.calls: list[Any] = []

    async def start(self) -> None:
        self.table_id, self.version, self.seats = await open_table(self.moves)
        for s, seat in enumerate(self.seats):
            request = pb.WatchRequest(table_id=self.table_id, batch_events=self.batch_events)
            call = self.watches.Watch(request, metadata=seat.md)
            snapshot = await call.read()  # the stream is open: no event of ours can be missed
            self.version = max(self.version, snapshot.snapshot.version)
            self.calls.append(call)
            self.tasks.append(asyncio.create_task(self._listen(s, call)))
        self.tasks.append(asyncio.create_task(self._play()))

    async def _listen(self, seat: int, call: Any) -> None:
        while (message := await call.read()) is not grpc.aio.EOF:
            events = message.events.events if message.HasField("events") else [message.event]
            for event in events:
                dealt_here = event.HasField("cards_dealt") and event.cards_dealt.seat == seat
                hand_over = event.HasField("button_moved") and seat == 0
                if dealt_here or hand_over:
                    await self.queue.put((seat, event))

    async def _play(self) -> None:
        await self._send(self.moves.StartHand, self._start_request(self.version), 0, timed=False)
        while True:
            seat, event = await self.queue.get()
            await self.gate.open.wait()
            if event.HasField("button_moved"):
                request: Any = self._start_request(event.version)
                await self._send(self.moves.StartHand, request, 0, timed=False)
                continue
            dealt = event.cards_dealt
            if not dealt.HasField("street"):  # a Fantasyland hand: set it (rare, not timed)
                fantasyland = fantasyland_request(self.table_id, seat, dealt.cards)
                fantasyland.expected_version = event.version
                fantasyland.request_id = uuid.uuid4().hex
                await self._send(self.moves.SetFantasyland, fantasyland, seat, timed=False)
                continue
            if dealt.street == 0:
                self.seats[seat].counts = [0, 0, 0]
            request = pb.PlaceCardsRequest(
                table_id=self.table_id, seat=seat,
                placements=placements(self.seats[seat], dealt.cards),
                expected_version=event.version, request_id=uuid.uuid4().hex,
            )  # fmt: skip
            await self.place(request, seat)

    async def place(self, request: pb.PlaceCardsRequest, seat: int) -> None:
        """Send one move (timed while the gate is open)."""
        stub = self.place_on[self.places % len(self.place_on)]
        self.places += 1
        await self._send(stub.PlaceCards, request, seat, timed=True)

    def _start_request(self, version: int) -> pb.StartHandRequest:
        return pb.StartHandRequest(
            table_id=self.table_id, expected_version=version, request_id=uuid.uuid4().hex
        )

    async def _send(self, method: Any, request: Any, seat: int, *, timed: bool) -> None:
        """One call; a stale version (a Fantasyland seat moved meanwhile) is read and sent
        again on the current version."""
        while True:
            started = time.perf_counter()
            self.gate.in_flight += 1
            try:
                await method(request, metadata=self.seats[seat].md)
            except grpc.aio.AioRpcError as error:
                if error.code() != grpc.StatusCode.ABORTED:
                    raise
                self.gate.errors += 1
                view = await self.moves.GetTable(pb.GetTableRequest(table_id=self.table_id))
                request.expected_version = view.table.version
                request.request_id = uuid.uuid4().hex
                continue
            finally:
                self.gate.in_flight -= 1
            if timed and self.gate.open.is_set():
                self.gate.latencies.append(time.perf_counter() - started)
            return

    async def stop(self) -> None:
        for call in self.calls:
            call.cancel()
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
                await task


async def settle_round(
    channels: Sequence[grpc.aio.Channel], workers: int, seconds: float
) -> list[float]:
    request = settle_request()
    calls = [c.unary_unary(SETTLE) for c in channels]
    latencies: list[float] = []
    loop = asyncio.get_running_loop()
    until = loop.time() + seconds

    async def worker(k: int) -> None:
        call = calls[k % len(calls)]
        while loop.time() < until:
            started = time.perf_counter()
            await call(request)
            latencies.append(time.perf_counter() - started)

    await asyncio.gather(*(worker(k) for k in range(workers)))
    return latencies


async def place_round(gate: Gate, seconds: float) -> tuple[list[float], float]:
    gate.latencies = []
    started = time.perf_counter()
    gate.open.set()
    await asyncio.sleep(seconds)
    gate.open.clear()
    elapsed = time.perf_counter() - started
    while gate.in_flight:  # calls begun in the round finish (and count) before settling runs
        await asyncio.sleep(0.001)
    return gate.latencies, elapsed


def _row(
    servers: int, rpc: str, n: int, latencies: list[float], seconds: float, cpu_s: float
) -> Row:
    latencies.sort()
    return Row(
        servers, rpc, n, len(latencies), seconds,
        percentile(latencies, 0.50) * 1000, percentile(latencies, 0.99) * 1000, cpu_s,
    )  # fmt: skip


def cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU time the processes used so far (Linux ``/proc``; 0 elsewhere)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / os.sysconf("SC_CLK_TCK")


async def load(
    addresses: Sequence[str],
    levels: Sequence[int],
    seconds: float,
    rounds: int,
    batch: bool = True,
    pids: Sequence[int] = (),
    *,
    alternate: bool = False,
    connections: int = 1,
) -> list[Row]:
    """PlaceCards and SettleHand rows at each level. ``alternate``: each table's moves go
    to the two addresses in turn (:class:`TablePlayer`). ``connections``: TCP connections
    per address (each its own subchannel), which ``ofc serve --workers N`` spreads over its
    workers; a table's moves stay on one."""
    options = [("grpc.use_local_subchannel_pool", 1)]
    channels = [
        grpc.aio.insecure_channel(a, options=options) for a in addresses for _ in range(connections)
    ]
    stubs = [pb_grpc.TableServiceStub(c) for c in channels]
    for c in channels:
        await asyncio.wait_for(c.channel_ready(), timeout=20)
    check = rules_pb.SettleHandResponse.FromString(
        await channels[0].unary_unary(SETTLE)(settle_request())
    )
    assert [p.points for p in check.settlement.players] == [8, -8]
    rows: list[Row] = []
    try:
        for n in levels:
            gate = Gate()
            players = []
            for i in range(n):
                other = stubs[(i + 1) % len(stubs)]
                players.append(
                    TablePlayer(
                        stubs[i % len(stubs)],
                        other,
                        gate,
                        batch_events=batch,
                        alternate=other if alternate else None,
                    )
                )
            for p in players:
                await p.start()
            await place_round(gate, min(1.0, seconds / 2))  # warm-up: tables in play
            await settle_round(channels, n, min(0.5, seconds / 4))
            place: tuple[list[float], float, float] = ([], 0.0, 0.0)
            settle: tuple[list[float], float, float] = ([], 0.0, 0.0)
            for _ in range(rounds):
                cpu = cpu_seconds(pids)
                lat, elapsed = await place_round(gate, seconds / rounds)
                place = (place[0] + lat, place[1] + elapsed, place[2] + cpu_seconds(pids) - cpu)
                started, cpu = time.perf_counter(), cpu_seconds(pids)
                lat = await settle_round(channels, n, seconds / rounds)
                elapsed, cpu = time.perf_counter() - started, cpu_seconds(pids) - cpu
                settle = (settle[0] + lat, settle[1] + elapsed, settle[2] + cpu)
            for p in players:
                await p.stop()
            rows.append(_row(len(addresses), "PlaceCards", n, *place))
            rows.append(_row(len(addresses), "SettleHand", n, *settle))
    finally:
        for c in channels:
            await c.close()
    return rows


def start_servers(redis_url: str, count: int) -> list[tuple[subprocess.Popen[bytes], str]]:
    from tests.conftest import free_port

    ofc = Path(sys.executable).with_name("ofc")
    out = []
    for _ in range(count):
        address = f"127.0.0.1:{free_port()}"
        process = subprocess.Popen(
            [str(ofc), "serve", "--listen", address, "--metrics-listen", "", "--http-listen", "",
             "--redis-url",
             redis_url, "--log-level", "error"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "OFC_API_KEYS": API_KEY},
        )  # fmt: skip
        out.append((process, address))
    return out


def run_load(
    redis_url: str,
    servers: int,
    levels: Sequence[int],
    seconds: float,
    rounds: int,
    batch: bool = True,
) -> list[Row]:
    processes = start_servers(redis_url, servers)
    try:
        addresses, pids = [a for _, a in processes], [p.pid for p, _ in processes]
        return asyncio.run(load(addresses, levels, seconds, rounds, batch, pids))
    finally:
        for process, _ in processes:
            process.terminate()
            process.wait(timeout=30)


@contextlib.contextmanager
def redis_for(url: str | None) -> Iterator[str]:
    """``url``, or a private throwaway ``redis-server`` (the test suite's) while the block runs."""
    if url is not None:
        yield url
        return
    from tests.conftest import RedisServer

    server = RedisServer()
    try:
        yield server.url
    finally:
        server.stop()


# --- report --------------------------------------------------------------------------------
def report(trips: RoundTrips | None, memory: Memory, rows: Sequence[Row]) -> list[str]:
    lines = []
    if trips is not None:
        lines += [
            f"Redis round trips per PlaceCards (in process, {trips.moves} moves): "
            f"{trips.round_trips:.2f}  [target <= {TARGET_ROUND_TRIPS}: "
            f"{'PASS' if trips.round_trips <= TARGET_ROUND_TRIPS else 'MISS'}]",
            f"Redis commands per PlaceCards, script calls included: {trips.commands:.1f} "
            f"({', '.join(f'{k} {v:.2f}' for k, v in trips.by_command.items())})",
            "",
        ]
    lines += [
        f"Redis memory, idle table ({memory.seats} seats joined): "
        f"{sum(memory.idle_table.values())} B "
        f"({', '.join(f'{k} {v}' for k, v in memory.idle_table.items())}) + join request "
        f"records {memory.idle_requests} B (expire after 24 h)",
    ]
    kept = sum(memory.per_hand.values())
    history = memory.per_hand["extra"] + memory.per_hand["extra_index"]
    lines.append(
        f"Redis memory per finished hand ({memory.hands} hands, classic, {memory.seats} seats): "
        f"hand history "
        f"{history:.0f} B (zlib JSON blob {memory.history_blob:.0f} B + hash/index) "
        f"[target < {TARGET_HAND_BYTES}: {'PASS' if history < TARGET_HAND_BYTES else 'MISS'}]; "
        f"with the table's event log (it keeps the last two hands) {kept:.0f} B "
        f"[{'PASS' if kept < TARGET_HAND_BYTES else 'MISS'}]"
    )
    lines.append(
        f"  + transient per hand: request records {memory.requests_per_hand:.0f} B (current "
        f"and previous hand only), settlement outbox {memory.outbox_per_hand:.0f} B (until "
        "relayed)"
    )
    lines.append(
        f"  + settlement feed per hand: record {memory.feed_per_hand:.0f} B (kept "
        f"OFC_FEED_RETENTION_SECONDS, and until acknowledged), settlement id "
        f"{memory.dedupe_per_hand:.0f} B (three times as long)"
    )
    live = sum(memory.live.values())
    verdict = "PASS" if memory.live_max <= TARGET_LIVE_BYTES else "MISS"
    lines.append(
        f"Redis memory per table, live (all but its histories and outbox) after "
        f"{memory.hands} hands: {live} B ({', '.join(f'{k} {v}' for k, v in memory.live.items())}"
        f"); the most after any hand {memory.live_max} B [target <= {TARGET_LIVE_BYTES}: "
        f"{verdict}]"
    )
    if not rows:
        return lines
    lines.append("")
    lines.append(
        f"{'servers':>7} {'rpc':<11}{'in flight':>10}{'calls/s':>10}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'server CPU ms/call':>20}"
    )
    for r in rows:
        lines.append(
            f"{r.servers:>7} {r.rpc:<11}{r.in_flight:>10}{r.per_second:>10.0f}"
            f"{r.p50_ms:>9.2f}{r.p99_ms:>9.2f}{r.cpu_ms_per_call:>20.2f}"
        )
    by = {(r.servers, r.rpc, r.in_flight): r for r in rows}
    for (servers, rpc, n), r in by.items():
        if rpc != "PlaceCards" or (servers, "SettleHand", n) not in by:
            continue
        settle = by[servers, "SettleHand", n]
        ratio = r.per_second / settle.per_second
        verdicts = [f"place/settle {ratio:.0%} [{'PASS' if ratio >= TARGET_RATIO else 'MISS'}]"]
        if settle.cpu_ms_per_call > 0:
            cost = r.cpu_ms_per_call / settle.cpu_ms_per_call
            verdicts.append(f"server CPU per move {cost:.1f}x a settle")
        if n >= 64:
            ok = r.p99_ms < TARGET_P99_MS
            verdicts.append(f"p99 {r.p99_ms:.1f} ms [{'PASS' if ok else 'MISS'}]")
        lines.append(f"{servers} server(s), {n} in flight: {'; '.join(verdicts)}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tables", description=__doc__)
    parser.add_argument("--redis-url", help="an existing, empty Redis (default: a private one)")
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds per row")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per row")
    parser.add_argument("--in-flight", default="1,64", help="comma-separated levels")
    parser.add_argument("--servers", default="1,2", help="comma-separated process counts")
    parser.add_argument("--moves", type=int, default=180, help="moves counted for round trips")
    parser.add_argument("--hands", type=int, default=10, help="hands for the memory figure")
    parser.add_argument("--seats", type=int, default=2, help="seats of the memory figure's table")
    parser.add_argument(
        "--memory-only", action="store_true", help="only the memory figure (part 2; seconds)"
    )
    parser.add_argument(
        "--event-messages",
        action="store_true",
        help="watch with one message per event (default: WatchRequest.batch_events)",
    )
    args = parser.parse_args(argv)
    levels = [int(n) for n in args.in_flight.split(",") if n.strip()]
    server_counts = [int(n) for n in args.servers.split(",") if n.strip()]
    with redis_for(args.redis_url) as url:
        if args.memory_only:
            print(
                "\n".join(
                    report(None, asyncio.run(measure_memory(url, args.hands, args.seats)), [])
                )
            )
            return 0
        trips = asyncio.run(count_round_trips(url, args.moves))
        memory = asyncio.run(measure_memory(url, args.hands, args.seats))
        rows: list[Row] = []
        for count in server_counts:
            rows += run_load(
                url, count, levels, args.seconds, max(1, args.rounds), not args.event_messages
            )
    print("\n".join(report(trips, memory, rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
