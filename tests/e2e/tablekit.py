"""Helpers for the live-table end-to-end tests: players, plans, watchers, servers, audits.

- :func:`start_server` (from test_tables.py) runs an in-process server with the operator key.
- :func:`naive_move` places a dealt batch bottom row first (always legal, often fouls);
  :func:`fantasyland_plan` finds a deal (server seed) and the moves that earn one seat a
  Fantasyland, from the known deck, so Fantasyland hands are reproducible.
- :class:`Watcher` collects a :class:`~ofc_client.TableWatch` in a thread; :class:`RawWatch`
  a raw Watch stream and the status it ended with.
- :class:`ServeProcess` runs ``ofc serve`` as a real process on a free port.
- :func:`audit_table` checks one table in the store: its event stream, grouped by the
  version each event produced, replays through the engine to exactly the stored state.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import grpc
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from ofc import engine
from ofc.cards import Card
from ofc.engine import Action, MatchState
from ofc.rulesets import Row, Ruleset
from ofc.solver import solve_fantasyland
from ofc_client import TableClient, TableEvent, TableView, TableWatch
from ofc_client.table_models import WatchItem
from ofc_service.api.tables import decode_event, event_to_proto
from ofc_service.application.records import TableRecord
from ofc_service.store import RedisTableStore, StoredEvent
from ofcpoker.v1 import cards_pb2
from ofcpoker.v1 import table_service_pb2 as pb
from ofcpoker.v1 import table_service_pb2_grpc as pb_grpc

from tests.conftest import free_port
from tests.e2e.test_tables import API_KEY as API_KEY  # re-exported: one server setup
from tests.e2e.test_tables import start_server as start_server

LONG_TURN_MS = 600_000  # no turn runs out during a test unless it wants one to
ROW_ORDER = ("bottom", "middle", "top")
ROW_SIZES = {"top": 3, "middle": 5, "bottom": 5}
_ROWS = {"top": Row.TOP, "middle": Row.MIDDLE, "bottom": Row.BOTTOM}
_PROTO_ROWS = {
    cards_pb2.ROW_POSITION_TOP: Row.TOP,
    cards_pb2.ROW_POSITION_MIDDLE: Row.MIDDLE,
    cards_pb2.ROW_POSITION_BOTTOM: Row.BOTTOM,
}
OFC = Path(sys.executable).with_name("ofc")
T = TypeVar("T")


def wait_until(check: Callable[[], bool], *, timeout: float = 15.0, what: str = "") -> None:
    """Poll ``check`` until it is true; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or check}")
        time.sleep(0.01)


def run_example(script: Path, address: str) -> str:
    """What a documented example prints, run as a user would (``python SCRIPT HOST:PORT``)
    against the server at ``address``; the test fails, with the script's errors, if it does."""
    result = subprocess.run(
        [sys.executable, str(script), address],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


# --- players ----------------------------------------------------------------------------------
def naive_move(view: TableView, ruleset: Ruleset) -> tuple[dict[str, str], str | None]:
    """The viewer's pending batch to rows with room (bottom, middle, top), the last card
    discarded on a street that discards."""
    me = view.my_seat
    assert view.hand is not None and me is not None and me.pending, "no batch to place"
    batch = list(me.pending)
    discard = batch.pop() if ruleset.streets[view.hand.street].discard else None
    room = {row: ROW_SIZES[row] - len(me.board.row(row)) for row in ROW_ORDER}
    chosen: dict[str, str] = {}
    for card in batch:
        row = next(r for r in ROW_ORDER if room[r] > 0)
        room[row] -= 1
        chosen[card] = row
    return chosen, discard


def solved_fantasyland(view: TableView, ruleset: Ruleset) -> tuple[str, tuple[str, ...]]:
    """The viewer's Fantasyland cards set by the exact solver: (board text, discards)."""
    me = view.my_seat
    assert me is not None and me.fantasyland_cards and me.pending
    solution = solve_fantasyland([Card.parse(c) for c in me.pending], ruleset)
    return str(solution.board), tuple(str(c) for c in solution.discards)


@dataclass(frozen=True)
class FantasylandPlan:
    """Hand 1 dealt from ``server_seed``: ``seat`` earns Fantasyland by playing ``moves``
    (street -> (card -> row, discard)); every other seat plays :func:`naive_move`."""

    server_seed: bytes
    seat: int
    moves: dict[int, tuple[dict[str, str], str | None]]
    fantasyland_cards: int


def fantasyland_plan(ruleset: Ruleset, seats: int, client_seed: bytes) -> FantasylandPlan:
    """The first candidate seed (a fixed sequence) whose deal lets some seat earn Fantasyland
    street by street, found with the exact solver on each way to discard."""
    for k in itertools.count():
        seed = hashlib.sha256(f"ofc-e2e-fantasyland:{ruleset.name}:{seats}:{k}".encode()).digest()
        sit = [engine.SitDown(s, f"p{s}") for s in range(seats)]
        state, _ = engine.replay(
            engine.new_match(ruleset, seats=seats), [*sit, engine.StartHand(seed, client_seed)]
        )
        hand = state.hand
        assert hand is not None
        positions = engine.deal_positions(hand, ruleset)
        for seat in hand.order:
            batches = [
                hand.deck[positions[seat, i] : positions[seat, i] + street.deal]
                for i, street in enumerate(ruleset.streets)
            ]
            found = _fantasyland_moves(batches, ruleset)
            if found is not None:
                plan = FantasylandPlan(seed, seat, found, 0)
                earned = _play_plan(state, plan)
                if earned:
                    return dataclasses.replace(plan, fantasyland_cards=earned)
    raise AssertionError("unreachable")


def _fantasyland_moves(
    batches: Sequence[Sequence[Card]], ruleset: Ruleset
) -> dict[int, tuple[dict[str, str], str | None]] | None:
    options = [
        itertools.combinations(batch, street.discard)
        for batch, street in zip(batches, ruleset.streets, strict=True)
    ]
    for discards in itertools.product(*options):
        dropped = {c for group in discards for c in group}
        kept = [c for batch in batches for c in batch if c not in dropped]
        ranks = Counter(c.rank for c in kept)
        if not any(n >= 2 and r.char in "QKA" for r, n in ranks.items()):
            continue
        solution = solve_fantasyland(kept, ruleset, in_fantasyland=False, fantasyland_value=100)
        if not solution.fantasyland_next:
            continue
        row_of = {c: "top" for c in solution.top}
        row_of |= {c: "middle" for c in solution.middle}
        row_of |= {c: "bottom" for c in solution.bottom}
        moves = {}
        for street, (batch, group) in enumerate(zip(batches, discards, strict=True)):
            placements = {str(c): row_of[c] for c in batch if c not in group}
            moves[street] = (placements, str(group[0]) if group else None)
        return moves
    return None


def _play_plan(state: MatchState, plan: FantasylandPlan) -> int:
    """Play hand 1 in the engine as the test will over gRPC; the Fantasyland cards earned."""
    while engine.seats_to_act(state):
        hand = state.hand
        assert hand is not None and hand.turn is not None
        if hand.turn == plan.seat:
            placements, discard = plan.moves[hand.street]
        else:
            placements, discard = naive_move(_engine_view(state, hand.turn), state.ruleset)
        action = engine.Place(
            hand.turn,
            tuple((Card.parse(c), _ROWS[r]) for c, r in placements.items()),
            None if discard is None else Card.parse(discard),
        )
        state, _ = engine.apply(state, action)
    return state.seats[plan.seat].fantasyland


def _engine_view(state: MatchState, seat: int) -> TableView:
    """Just enough of a client view of ``seat`` for :func:`naive_move`."""
    from ofc_service.api.tables import table_view  # the server's own view builder

    record = TableRecord("t", state, 1000, 1000, b"", 0)
    return TableView.from_proto(table_view(record, 1, seat))


# --- watching ---------------------------------------------------------------------------------
class Watcher:
    """A watch read in a background thread: ``items`` grows as messages arrive."""

    def __init__(
        self,
        client: TableClient,
        table_id: str,
        *,
        as_seat: int | None = None,
        after_event_id: str = "",
        reconnect_timeout: float = 30.0,
    ) -> None:
        self.table_id = table_id
        self.watch: TableWatch = client.watch(
            table_id,
            as_seat=as_seat,
            after_event_id=after_event_id,
            reconnect_timeout=reconnect_timeout,
        )
        self.items: list[WatchItem] = []
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for item in self.watch:
                self.items.append(item)
        except BaseException as error:  # reported by the test through .error
            self.error = error

    def wait_for_snapshot(self, timeout: float = 15.0) -> Watcher:
        """Block until the stream is open (its snapshot arrived): later events reach it."""

        def opened() -> bool:
            if self.error is not None:
                raise AssertionError(f"the watch failed: {self.error!r}")
            return bool(self.items)

        wait_until(opened, timeout=timeout, what=f"the snapshot of {self.table_id}")
        return self

    @property
    def snapshot(self) -> TableView:
        first = self.items[0]
        assert isinstance(first, TableView)
        return first

    @property
    def events(self) -> list[TableEvent]:
        return [i for i in self.items if isinstance(i, TableEvent)]

    def wait_for_event_id(self, event_id: str, timeout: float = 15.0) -> None:
        self.wait_for(
            lambda: any(e.event_id == event_id for e in self.events),
            timeout=timeout,
            what=f"event {event_id} on {self.table_id}",
        )

    def wait_for(self, check: Callable[[], bool], *, timeout: float = 15.0, what: str) -> None:
        """Block until ``check`` holds; fail at once if the watch failed (gave up)."""

        def reached() -> bool:
            if self.error is not None:
                raise AssertionError(f"the watch failed: {self.error!r}")
            return check()

        wait_until(reached, timeout=timeout, what=what)

    def stop(self) -> None:
        self.watch.cancel()
        self._thread.join(timeout=10)


class RawWatch:
    """A raw Watch stream read in a thread: every message as it arrived, and the error it
    ended with (``None`` while open, or after a cancel of our own)."""

    def __init__(
        self,
        stub: pb_grpc.TableServiceStub,
        request: pb.WatchRequest,
        metadata: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.request = request
        self.messages: list[pb.WatchResponse] = []
        self.error: grpc.RpcError | None = None
        self.ended = threading.Event()
        self.stopped = False  # cancelled by us
        self.call = stub.Watch(request, metadata=tuple(metadata))
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for message in self.call:
                self.messages.append(message)
        except grpc.RpcError as error:
            if not self.stopped:
                self.error = error
        finally:
            self.ended.set()

    def events(self) -> list[pb.TableEvent]:
        """Every event received, batches flattened, in order."""
        out: list[pb.TableEvent] = []
        for m in list(self.messages):
            if m.HasField("events"):
                out.extend(m.events.events)
            elif m.HasField("event"):
                out.append(m.event)
        return out

    def version(self) -> int:
        """The table version of the newest message received (0: none yet)."""
        for m in reversed(self.messages):
            if m.HasField("events"):
                return m.events.events[-1].version
            return m.event.version if m.HasField("event") else m.snapshot.version
        return 0

    def last_event_id(self) -> str:
        """Where a reconnect resumes: the newest event id received (or the snapshot's)."""
        for m in reversed(self.messages):
            if m.HasField("events"):
                return m.events.events[-1].event_id
            return m.event.event_id if m.HasField("event") else m.snapshot.last_event_id
        return self.request.after_event_id

    def stop(self) -> None:
        self.stopped = True
        self.call.cancel()
        self._thread.join(timeout=10)


def event_ids_after(stream: Sequence[StoredEvent], after: str) -> list[str]:
    """The ids of the stored events after ``after`` (a snapshot's last_event_id)."""
    from ofc_service.store import parse_event_id

    start = parse_event_id(after or "0")
    return [e.event_id for e in stream if parse_event_id(e.event_id) > start]


class Watched(Protocol):
    """What a watch saw: its first snapshot and the events after it."""

    @property
    def table_id(self) -> str: ...
    @property
    def snapshot(self) -> TableView: ...
    @property
    def events(self) -> list[TableEvent]: ...


def check_saw_each_event_once(watcher: Watched, stream: Sequence[StoredEvent]) -> None:
    """The watcher's events are exactly the stream's after its snapshot: no gap, no duplicate,
    in order."""
    seen = [e.event_id for e in watcher.events]
    expected = event_ids_after(stream, watcher.snapshot.last_event_id)
    assert seen == expected, f"watch of {watcher.table_id}: {len(seen)} vs {len(expected)}"


# --- processes --------------------------------------------------------------------------------
class ServeProcess:
    """``ofc serve --redis-url URL`` on a free loopback port, with the operator key."""

    def __init__(self, redis_url: str) -> None:
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        # The audits replay a table's whole event log: keep all of it (no per-hand trim).
        env = {**os.environ, "OFC_API_KEYS": API_KEY, "OFC_EVENT_LOG_HANDS": "0"}
        self.process = subprocess.Popen(
            [
                str(OFC),
                "serve",
                "--listen",
                self.address,
                "--metrics-listen",
                "",
                "--http-listen",
                "",
                "--redis-url",
                redis_url,
                "--log-level",
                "error",
                "--grace-seconds",
                "1",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def wait_ready(self, timeout: float = 30.0) -> None:
        with grpc.insecure_channel(self.address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            reply = health.Check(
                health_pb2.HealthCheckRequest(), timeout=timeout, wait_for_ready=True
            )
            assert reply.status == health_pb2.HealthCheckResponse.SERVING

    def kill(self) -> None:
        """SIGKILL: no goodbye, in-flight calls and streams cut off."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_processes(redis_url: str, count: int) -> list[ServeProcess]:
    processes = [ServeProcess(redis_url) for _ in range(count)]
    try:
        for p in processes:
            p.wait_ready()
    except BaseException:
        for p in processes:
            p.stop()
        raise
    return processes


def failover_target(addresses: Sequence[str], first: int) -> str:
    """A gRPC target naming every replica, ``first`` first: with the default pick_first
    policy the channel uses that one and moves on to the next when it goes away."""
    ordered = [*addresses[first:], *addresses[:first]]
    return "ipv4:" + ",".join(ordered)


# --- the store as an auditor sees it ----------------------------------------------------------
def run_on_store(redis_url: str, job: Callable[[RedisTableStore], Awaitable[T]]) -> T:
    """``job`` on a fresh store over ``redis_url``, in a fresh event loop."""

    async def main() -> T:
        store = RedisTableStore.from_url(redis_url)
        try:
            return await job(store)
        finally:
            await store.close()

    return asyncio.run(main())


async def _all_events(store: RedisTableStore, table_id: str) -> list[StoredEvent]:
    events: list[StoredEvent] = []
    after = "0"
    while batch := await store.read_events(table_id, after=after, limit=1000):
        events.extend(batch)
        after = batch[-1].event_id
    return events


def stored_table(redis_url: str, table_id: str) -> tuple[TableRecord, int, list[StoredEvent]]:
    """The stored record, its version and the whole event stream, read from Redis."""

    async def read(store: RedisTableStore) -> tuple[TableRecord, int, list[StoredEvent]]:
        stored = await store.load(table_id)
        events = await _all_events(store, table_id)
        return TableRecord.from_bytes(stored.state), stored.version, events

    return run_on_store(redis_url, read)


def full_event(stored: StoredEvent) -> pb.TableEvent:
    """A stored event as its owner sees it (everything in it)."""
    owner = stored.data[0]
    return decode_event(stored.data, None if owner == 255 else owner, stored.event_id)


def _without_times(state: MatchState) -> MatchState:
    if state.hand is None:
        return state
    return dataclasses.replace(
        state, hand=dataclasses.replace(state.hand, started_at_ms=0, updated_at_ms=0)
    )


def audit_table(record: TableRecord, version: int, stream: Sequence[StoredEvent]) -> list[int]:
    """Check that the event stream is the table's history: each version from 2 (version 1
    is the empty table) produced at least one event, in order; the events of each version
    make one engine action; replaying those actions from an empty table gives exactly the
    stored match (times aside) and re-creates every stored event. Returns the versions.

    A hand's server seed comes from its SeedRevealed event, or, for the hand in progress,
    from the stored record (the auditor may read it; no client ever can). Each hand's
    commitment is the ``next_commitment`` published when the hand before it started (the
    record's for the hand to come). A SetClientSeed version is one ClientSeedSet event, no
    engine action.
    """
    events = [full_event(e) for e in stream]
    groups: dict[int, list[pb.TableEvent]] = {}
    for event in events:
        groups.setdefault(event.version, []).append(event)
    versions = sorted(groups)
    assert versions == list(range(2, version + 1)), f"versions {versions} vs 2..{version}"
    assert [e.version for e in events] == sorted(e.version for e in events)
    seeds = {
        e.seed_revealed.number: e.seed_revealed.server_seed
        for e in events
        if e.HasField("seed_revealed")
    }
    if record.match.hand is not None:
        seeds.setdefault(record.match.hand.number, record.match.hand.server_seed)
    state = engine.new_match(
        record.match.ruleset, seats=len(record.match.seats), max_hands=record.match.max_hands
    )
    announced = []  # (commitment, next_commitment) of each HandStarted, in order
    for v in versions:
        got = [pb.TableEvent.FromString(e.SerializeToString()) for e in groups[v]]
        for e in got:
            e.event_id = ""
        if got[0].HasField("client_seed_set") or got[0].HasField("seat_leaving"):
            assert len(got) == 1, f"version {v}: a seed change or leave mark is one event"
            continue
        expected = []
        for action in actions_of(groups[v], state, seeds):
            state, produced = engine.apply(state, action)
            ids = tuple(s.player_id for s in state.seats)
            expected += [event_to_proto(e, v, ids) for e in produced]
        for e in got:
            if e.HasField("hand_started"):
                announced.append((e.hand_started.commitment, e.hand_started.next_commitment))
                e.hand_started.next_commitment = ""  # the shell's, checked below
        assert got == expected, f"version {v}: the stored events are not what the action makes"
    for (_, promised), (kept, _) in itertools.pairwise(announced):
        assert kept == promised, "a hand dealt from another seed than the one committed ahead"
    if announced:
        assert announced[-1][1] == record.next_commitment
    assert _without_times(state) == _without_times(record.match), "replay != stored state"
    if record.hand_start is not None:
        replayed, _ = engine.replay(record.hand_start, record.hand_actions)
        assert replayed == record.match, "the recorded hand actions do not give the stored state"
    return versions


def actions_of(
    group: Sequence[pb.TableEvent], state: MatchState, seeds: dict[int, bytes]
) -> list[Action]:
    """The engine actions that made one version's events, in order: none for a seed change
    or a leave mark (the shell's own events); else one action, with a StandUp for each seat
    vacated in the same commit: after it (a seat marked leaving, once its hand ended), or
    before a StartHand (a mark a replica of the release before left in place)."""
    kinds = [e.WhichOneof("kind") for e in group]
    if kinds[0] in ("client_seed_set", "seat_leaving"):
        return []
    vacates = [i for i, kind in enumerate(kinds) if kind == "seat_vacated"]
    if len(vacates) == len(kinds):  # LeaveSeat
        return [engine.StandUp(e.seat_vacated.seat) for e in group]
    first = next(i for i, kind in enumerate(kinds) if kind != "seat_vacated")
    last = max(i for i, kind in enumerate(kinds) if kind != "seat_vacated") + 1
    before = [engine.StandUp(e.seat_vacated.seat) for e in group[:first]]
    after = [engine.StandUp(e.seat_vacated.seat) for e in group[last:]]
    return [*before, action_of(group[first:last], state, seeds), *after]


def action_of(group: Sequence[pb.TableEvent], state: MatchState, seeds: dict[int, bytes]) -> Action:
    """The engine action that made one version's events (``group``, as their owners see
    them), applied to ``state``; ``seeds``: each hand's server seed by hand number."""
    kinds = [e.WhichOneof("kind") for e in group]
    first = group[0]
    if kinds[0] == "seat_taken":
        return engine.SitDown(first.seat_taken.seat, first.seat_taken.player_id)
    if kinds[0] == "seat_vacated":
        return engine.StandUp(first.seat_vacated.seat)
    if kinds[0] == "hand_started":
        started = first.hand_started
        return engine.StartHand(seeds[started.number], started.client_seed)
    moves = [e for e in group if e.WhichOneof("kind") in ("cards_placed", "fantasyland_set")]
    assert len(moves) == 1, f"one move per version, got {kinds}"
    move = moves[0]
    if move.HasField("fantasyland_set"):
        f = move.fantasyland_set

        def cards(codes: Iterable[str]) -> tuple[Card, ...]:
            return tuple(Card.parse(c) for c in codes)

        return engine.SetFantasyland(
            f.seat,
            cards(f.board.top),
            cards(f.board.middle),
            cards(f.board.bottom),
            cards(f.discards),
        )
    placed = move.cards_placed
    discards = [e.discard_made.card for e in group if e.HasField("discard_made")]
    return engine.Place(
        placed.seat,
        tuple((Card.parse(p.card), _PROTO_ROWS[p.row]) for p in placed.placements),
        Card.parse(discards[0]) if discards else None,
    )


# --- cards in a message -----------------------------------------------------------------------
def strings_in(message: Message) -> Iterator[str]:
    """Every string value anywhere in ``message`` (repeated and nested fields included)."""
    for field, value in message.ListFields():
        values = value if field.is_repeated else [value]
        for v in values:
            if isinstance(v, Message):
                yield from strings_in(v)
            elif isinstance(v, str):
                yield v


def cards_in(message: Message) -> set[Card]:
    """Every card code anywhere in ``message``."""
    found = set()
    for text in strings_in(message):
        if 2 <= len(text) <= 3:
            try:
                found.add(Card.parse(text))
            except ValueError:
                continue
    return found
