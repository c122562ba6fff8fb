"""Three ``ofc serve`` processes on one Redis, hammered by concurrent players.

Every seat is a thread with its own seat token and three clients on three different
replicas: one watches the seat's stream and reacts to it, one moves, one sends the same
moves again (duplicate request ids) or different moves with the same expected version (a
race only one may win); both seats race to start each next hand. Afterwards, per table:

- the accepted requests produced the versions 2..V, each exactly once (none applied twice,
  none lost), and each accepted move is the move the stream records at its version;
- the stream replays through the engine to exactly the stored state (``audit_table``);
- every seat's watch saw every event of the stream exactly once, in order.

The second test kills one of the servers with SIGKILL in the middle of the load: clients
name all replicas in their target and move on (the same request again), watches resume
after their last event, and the same checks hold.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest
from ofc.rulesets import get_ruleset
from ofc_client import StaleVersionError, TableClient, TableEvent, TableView
from ofc_client.table_models import (
    ButtonMovedEvent,
    CardsDealtEvent,
    CardsPlacedEvent,
    HandSettledEvent,
)

from tests.e2e.tablekit import (
    API_KEY,
    LONG_TURN_MS,
    ROW_ORDER,
    ServeProcess,
    audit_table,
    check_saw_each_event_once,
    failover_target,
    naive_move,
    solved_fantasyland,
    start_processes,
    stored_table,
    wait_until,
)

TABLES = 6
SEATS = 2
HANDS = 3
CLASSIC = get_ruleset("classic")


@dataclass
class Ledger:
    """Every request a server accepted: table -> request id -> (version, what it did)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    accepted: dict[str, dict[str, tuple[int, object]]] = field(default_factory=dict)
    races: int = 0
    duplicates: int = 0

    def accept(self, table_id: str, request_id: str, version: int, what: object) -> None:
        with self.lock:
            table = self.accepted.setdefault(table_id, {})
            first = table.setdefault(request_id, (version, what))
            assert first == (version, what), f"{request_id} answered twice differently"

    def moves(self) -> int:
        with self.lock:
            return sum(len(t) for t in self.accepted.values())


def made(view: TableView, expected_version: int) -> int:
    """The version a change sent with ``expected_version`` made: the next one. Its answer
    shows it, or, when a retry found only the request's marker (its hand over, or its seat
    moved since: docs/security.md), the table as it is now, later still."""
    assert view.version > expected_version, (view.version, expected_version)
    return expected_version + 1


def _move_key(placements: dict[str, str], discard: str | None) -> object:
    return ("place", tuple(sorted(placements.items())), discard)


class SeatPlayer:
    """One seat: reacts to its own watch stream until the last hand's button moves."""

    def __init__(
        self, table_id: str, seat: int, token: str, targets: tuple[str, str, str], ledger: Ledger
    ) -> None:
        self.table_id, self.seat, self.ledger = table_id, seat, ledger
        self.mover, self.twin, self.eyes = (TableClient(t, retries=10) for t in targets)
        for client in (self.mover, self.twin, self.eyes):
            client.use_seat(table_id, seat, token)
        self.watch = self.eyes.watch(table_id)
        self.items: list[TableView | TableEvent] = []
        self.error: BaseException | None = None
        self.moves = 0
        self.pool = ThreadPoolExecutor(2)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @property
    def events(self) -> list[TableEvent]:
        return [i for i in self.items if isinstance(i, TableEvent)]

    def _run(self) -> None:
        try:
            settled = 0
            for item in self.watch:
                self.items.append(item)
                if isinstance(item, TableView):
                    continue
                detail = item.detail
                if isinstance(detail, CardsDealtEvent) and detail.seat == self.seat:
                    self._play()
                elif isinstance(detail, HandSettledEvent):
                    settled = detail.number
                elif isinstance(detail, ButtonMovedEvent):
                    if settled == HANDS:
                        return
                    self._start_next(item.version)
        except BaseException as error:  # reported by the test
            self.error = error
        finally:
            self.watch.cancel()
            self.pool.shutdown(wait=False)

    def _start_next(self, version: int) -> None:
        """Both seats try to start the next hand from the same version: one wins."""
        try:
            view = self.mover.start_hand(self.table_id, expected_version=version)
        except StaleVersionError:
            with self.ledger.lock:
                self.ledger.races += 1
            return
        self.ledger.accept(self.table_id, self.mover.last_request_id, made(view, version), "start")

    def _play(self) -> None:
        while True:  # a Fantasyland seat setting meanwhile may make us stale: look again
            mine = self.mover.get(self.table_id)
            me = mine.my_seat
            if me is None or not me.pending:
                return  # already placed (our retry after a failover found it done)
            try:
                self._move(mine)
                return
            except StaleVersionError:
                continue

    def _move(self, mine: TableView) -> None:
        me = mine.my_seat
        assert me is not None
        self.moves += 1
        if me.fantasyland_cards:
            board, discards = solved_fantasyland(mine, CLASSIC)
            view = self.mover.set_fantasyland(
                self.table_id, board, discards, expected_version=mine.version
            )
            made_version = made(view, mine.version)
            self.ledger.accept(self.table_id, self.mover.last_request_id, made_version, "set")
            return
        placements, discard = naive_move(mine, CLASSIC)
        version = mine.version
        if self.moves % 3 == 1:  # the same request twice, through two replicas at once
            request_id = f"dup-{self.table_id}-{self.seat}-{version}"
            both = [
                self.pool.submit(
                    c.place,
                    self.table_id,
                    placements,
                    discard=discard,
                    expected_version=version,
                    request_id=request_id,
                )
                for c in (self.mover, self.twin)
            ]
            first, second = (f.result() for f in both)
            assert made(first, version) == made(second, version)
            with self.ledger.lock:
                self.ledger.duplicates += 1
            self.ledger.accept(
                self.table_id, request_id, version + 1, _move_key(placements, discard)
            )
        elif self.moves % 3 == 2:  # two different moves on the same version: one wins
            other = _another_placement(mine, placements)
            tries = {
                f"race-a-{self.table_id}-{version}": placements,
                f"race-b-{self.table_id}-{version}": other,
            }
            futures: dict[str, Future[TableView]] = {
                rid: self.pool.submit(
                    c.place,
                    self.table_id,
                    p,
                    discard=discard,
                    expected_version=version,
                    request_id=rid,
                )
                for (rid, p), c in zip(tries.items(), (self.mover, self.twin), strict=True)
            }
            won = []
            for rid, future in futures.items():
                try:
                    view = future.result()
                except StaleVersionError:
                    continue
                won.append(rid)
                key = _move_key(tries[rid], discard)
                self.ledger.accept(self.table_id, rid, made(view, version), key)
            assert len(won) == 1, f"race on version {version}: {won} won"
            with self.ledger.lock:
                self.ledger.races += 1
        else:
            view = self.mover.place(
                self.table_id, placements, discard=discard, expected_version=version
            )
            self.ledger.accept(
                self.table_id,
                self.mover.last_request_id,
                made(view, version),
                _move_key(placements, discard),
            )

    def stop(self) -> None:
        self.watch.cancel()
        self.thread.join(timeout=10)
        for client in (self.mover, self.twin, self.eyes):
            client.close()


def _another_placement(mine: TableView, placements: dict[str, str]) -> dict[str, str]:
    """A different legal placement of the same cards when there is one (else the same)."""
    me = mine.my_seat
    assert me is not None
    room = {
        row: size - len(me.board.row(row))
        for row, size in (("bottom", 5), ("middle", 5), ("top", 3))
    }
    cards = list(placements)
    if len(cards) == 1:
        options = [r for r in ROW_ORDER if room[r] > 0 and r != placements[cards[0]]]
        return {cards[0]: options[0]} if options else dict(placements)
    other = dict(placements)
    other[cards[-1]] = "middle"  # first street: four to the bottom, one to the middle
    return other


def run_load(
    addresses: list[str], redis_url: str, *, kill: ServeProcess | None = None
) -> tuple[Ledger, dict[str, list[SeatPlayer]]]:
    """Open the tables, seat the players, start hand 1 everywhere, wait for the end."""
    ledger = Ledger()
    host = TableClient(failover_target(addresses, 0), api_key=API_KEY, retries=10)
    players: dict[str, list[SeatPlayer]] = {}
    count = len(addresses)
    try:
        for t in range(TABLES):
            table_id = host.create_table(seats=SEATS, turn_time_limit_ms=LONG_TURN_MS).table_id
            players[table_id] = []
            for seat in range(SEATS):
                k = t * SEATS + seat
                joiner = TableClient(failover_target(addresses, k % count), retries=10)
                token = joiner.join(table_id, seat, f"t{t}s{seat}")
                ledger.accept(
                    table_id, joiner.last_request_id, joiner.version(table_id) or 0, "join"
                )
                joiner.close()
                a, b, c = (failover_target(addresses, (k + i) % count) for i in range(3))
                players[table_id].append(SeatPlayer(table_id, seat, token, (a, b, c), ledger))
        everyone = [p for ps in players.values() for p in ps]
        wait_until(lambda: all(p.items for p in everyone), what="every watch's snapshot")
        for table_id in players:
            view = host.get(table_id)
            started = host.start_hand(table_id, expected_version=view.version)
            ledger.accept(table_id, host.last_request_id, made(started, view.version), "start")
        if kill is not None:
            total = TABLES * HANDS * 20
            wait_until(lambda: ledger.moves() > total // 3, timeout=60, what="a third of the load")
            kill.kill()

        def finished() -> bool:
            errors = [p.error for p in everyone if p.error is not None]
            if errors:
                raise AssertionError(f"a player failed: {errors[0]!r}") from errors[0]
            return not any(p.thread.is_alive() for p in everyone)

        wait_until(finished, timeout=90, what="every table to finish its hands")
    finally:
        for ps in players.values():
            for p in ps:
                p.stop()
        host.close()
    return ledger, players


def check_tables(redis_url: str, ledger: Ledger, players: dict[str, list[SeatPlayer]]) -> None:
    for table_id, seats in players.items():
        record, version, stream = stored_table(redis_url, table_id)
        assert record.match.hands_played == HANDS and record.match.hand is not None
        assert record.match.hand.over
        accepted = ledger.accepted[table_id]
        produced = sorted(v for v, _ in accepted.values())
        assert produced == list(range(2, version + 1)), "a move applied twice, or one lost"
        audit_table(record, version, stream)
        groups: dict[int, list[TableEvent]] = {}
        for player in seats:
            check_saw_each_event_once(_as_watcher(player), stream)
            for event in player.events:
                groups.setdefault(event.version, []).append(event)
        for v, what in accepted.values():
            if isinstance(what, tuple) and what[0] == "place":
                placed = [e.detail for e in groups[v] if isinstance(e.detail, CardsPlacedEvent)]
                assert placed, f"version {v} has no placement"
                recorded = tuple(sorted(placed[0].placements))
                assert recorded == what[1], f"version {v} placed something else"


@dataclass
class _WatcherView:
    table_id: str
    snapshot: TableView
    events: list[TableEvent]


def _as_watcher(player: SeatPlayer) -> _WatcherView:
    first = player.items[0]
    assert isinstance(first, TableView)
    return _WatcherView(player.table_id, first, player.events)


@pytest.fixture
def replicas(any_redis_url: str) -> Iterator[list[ServeProcess]]:
    """Three ``ofc serve`` processes on one Redis, or on a Redis Cluster."""
    processes = start_processes(any_redis_url, 3)
    try:
        yield processes
    finally:
        for p in processes:
            p.stop()


def test_three_replicas_apply_every_move_exactly_once_under_concurrent_load(
    any_redis_url: str, replicas: list[ServeProcess]
) -> None:
    ledger, players = run_load([p.address for p in replicas], any_redis_url)
    assert ledger.duplicates > 0 and ledger.races > 0
    check_tables(any_redis_url, ledger, players)


@pytest.mark.parametrize("any_redis_url", ["single"], indirect=True)
def test_a_replica_killed_mid_load_leaves_no_table_inconsistent(
    any_redis_url: str, replicas: list[ServeProcess]
) -> None:
    victim = replicas[0]
    ledger, players = run_load([p.address for p in replicas], any_redis_url, kill=victim)
    assert victim.process.returncode == -9
    assert any(p.watch.reconnects for ps in players.values() for p in ps)
    check_tables(any_redis_url, ledger, players)
    for survivor in replicas[1:]:
        survivor.wait_ready(timeout=5)
