"""CreateTable in process, on the in-memory store with a clock the test moves: a request id
names one table for the retry window (a retry returns it, and creates it when the first
call stopped between claiming the id and creating the table); after the window the same
request id makes a new table with a new id, so a table id (and a settlement id) is never
reused. Also the agreed pair unit values, checked like SettleHand's."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from ofc.shuffle import commitment
from ofc_service.api.errors import STATUS_DETAILS_KEY
from ofc_service.api.tables import SERVICE, ProtobufPresenter, TableHandlers
from ofc_service.application.manager import TableManager
from ofc_service.application.records import TableRecord
from ofc_service.auth import Authenticator
from ofc_service.store import DEFAULT_REQUEST_TTL_SECONDS, MemoryTableStore, StoreUnavailableError
from ofcpoker.v1 import ruleset_pb2, settlement_pb2
from ofcpoker.v1 import table_service_pb2 as pb

from tests.in_process import InProcess
from tests.records4 import format_4

KEYS = ("key-of-platform-a", "key-of-platform-b")
START_S = 1_700_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = START_S

    def __call__(self) -> float:
        return self.now


class CrashingStore(MemoryTableStore):
    """Fails the next ``crashes`` table creations as a lost connection would (after the
    claim was made: the first call stops between its two steps)."""

    crashes = 0

    async def create_table(self, table_id: str, state: bytes, **kwargs: Any) -> Any:
        if self.crashes:
            self.crashes -= 1
            raise StoreUnavailableError("connection lost")
        return await super().create_table(table_id, state, **kwargs)


class Aborted(Exception):
    def __init__(self, code: grpc.StatusCode, reason: str, field: str) -> None:
        super().__init__(f"{code} {reason} {field}")
        self.code, self.reason, self.field = code, reason, field


class Context:
    """Just enough of a servicer context: the caller's metadata, and abort."""

    def __init__(self, api_key: str = "", *, metadata: Sequence[tuple[str, str]] = ()) -> None:
        self.metadata = tuple(metadata) or (("x-ofc-api-key", api_key),)

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self.metadata

    async def abort(
        self, code: grpc.StatusCode, details: str, trailers: Sequence[tuple[str, Any]]
    ) -> None:
        status = status_pb2.Status.FromString(dict(trailers)[STATUS_DETAILS_KEY])
        info = error_details_pb2.ErrorInfo()
        status.details[0].Unpack(info)
        raise Aborted(code, info.reason, info.metadata.get("field", ""))


class Service:
    def __init__(self, window_s: int = DEFAULT_REQUEST_TTL_SECONDS) -> None:
        self.clock = Clock()
        self.store = CrashingStore(clock=self.clock)
        manager = TableManager(
            self.store,
            Authenticator(KEYS),
            ProtobufPresenter(),
            clock_ms=lambda: int(self.clock.now * 1000),
            request_ttl_seconds=window_s,
        )
        self.handlers = TableHandlers(manager)
        self.servicer = InProcess(self.handlers, SERVICE)

    def create(
        self, request: pb.CreateTableRequest, *, key: str = KEYS[0]
    ) -> pb.CreateTableResponse:
        context: Any = Context(key)

        async def call() -> pb.CreateTableResponse:
            response: pb.CreateTableResponse = await self.servicer.CreateTable(request, context)
            return response

        return asyncio.run(call())

    def join(self, request: pb.JoinSeatRequest) -> pb.JoinSeatResponse:
        context: Any = Context(KEYS[0])

        async def call() -> pb.JoinSeatResponse:
            response: pb.JoinSeatResponse = await self.servicer.JoinSeat(request, context)
            return response

        return asyncio.run(call())


def test_a_request_id_names_one_table_for_the_window_and_a_new_one_after() -> None:
    service = Service()
    request = pb.CreateTableRequest(seats=2, request_id="match-42")
    first = service.create(request)
    assert len(first.table_id) == 22 and first.table.version == 1
    assert first.table.table_id == first.table_id
    # a retry inside the window: the same table, as it is now (nothing created twice)
    service.clock.now += DEFAULT_REQUEST_TTL_SECONDS - 1
    assert service.create(request).table_id == first.table_id
    # another caller's request id is its own
    other = service.create(request, key=KEYS[1])
    assert other.table_id != first.table_id
    # after the window the request id is a new request: a new table, never the old id
    service.clock.now += 2
    later = service.create(request)
    assert later.table_id not in {first.table_id, other.table_id}
    assert service.create(request).table_id == later.table_id  # and it is kept in turn
    # the first table lives on (its own time-to-live is a week), untouched
    assert set(service.store._tables) == {first.table_id, other.table_id, later.table_id}


def test_a_shorter_retry_window_ends_replays_sooner_for_creates_and_moves() -> None:
    """OFC_REQUEST_WINDOW_SECONDS (here 10 minutes): inside it a retry gets the first
    result; after it the request is judged afresh, as any new one."""
    service = Service(window_s=600)
    create = pb.CreateTableRequest(seats=2, request_id="short-window")
    table_id = service.create(create).table_id
    join = pb.JoinSeatRequest(
        table_id=table_id, seat=0, player_id="ann", expected_version=1, request_id="join-1"
    )
    first = service.join(join)
    service.clock.now += 599
    assert service.join(join) == first  # the same seat token, nothing changed
    assert service.create(create).table_id == table_id
    service.clock.now += 2
    with pytest.raises(Aborted) as stale:  # a new request now, on a table that moved on
        service.join(join)
    assert (stale.value.code, stale.value.reason) == (grpc.StatusCode.ABORTED, "STALE_VERSION")
    assert service.create(create).table_id != table_id  # a new table under a new id


def test_a_table_stored_before_seeds_were_drawn_ahead_starts_its_next_hand() -> None:
    """A record of format 2 (written before this server version) holds no seed for its next
    hand: StartHand draws one as it used to, and from then on draws the next one ahead."""
    service = Service()
    seeds = iter([bytes([1]) * 32, bytes([2]) * 32, bytes([3]) * 32])
    manager = service.handlers.manager
    manager.server_seed = lambda: next(seeds)
    table_id = service.create(pb.CreateTableRequest(seats=2, request_id="old")).table_id
    for seat, name in enumerate(("ann", "bob")):
        service.join(
            pb.JoinSeatRequest(
                table_id=table_id, seat=seat, player_id=name, expected_version=seat + 1,
                request_id=f"join-{seat}",
            )
        )  # fmt: skip
    stored = service.store._tables[table_id]
    assert json.loads(stored.state)["format"] == 7
    old = format_4(TableRecord.from_bytes(stored.state))
    assert old["next_server_seed"] == (bytes([1]) * 32).hex()
    for key in ("client_seed_policy", "seat_client_seeds", "next_server_seed"):
        del old[key]
    for key in ("seat_changes", "hand_seat_changes", "hand_deadlines"):  # format 4's
        del old[key]
    old["format"] = 2
    stored.state = json.dumps(old).encode()
    manager._kept.clear()  # this replica never saw the new-format record
    context: Any = Context(KEYS[0])

    async def start() -> pb.StartHandResponse:
        request = pb.StartHandRequest(table_id=table_id, expected_version=3, request_id="s")
        response: pb.StartHandResponse = await service.servicer.StartHand(request, context)
        return response

    started = asyncio.run(start()).table
    assert started.hand.commitment == commitment(bytes([2]) * 32)  # drawn at the start
    assert started.next_commitment == commitment(bytes([3]) * 32)  # and the next one ahead


def test_a_table_written_by_a_newer_server_is_unavailable_here_not_internal() -> None:
    """During a rolling upgrade an old replica meets records of a newer format: it answers
    UNAVAILABLE (NEWER_SERVER), which clients retry with the same request id elsewhere."""
    service = Service()
    table_id = service.create(pb.CreateTableRequest(seats=2, request_id="newer")).table_id
    stored = service.store._tables[table_id]
    newer = json.loads(stored.state)
    newer["format"] += 1
    stored.state = json.dumps(newer).encode()
    service.handlers.manager._kept.clear()
    with pytest.raises(Aborted) as skew:
        service.join(
            pb.JoinSeatRequest(
                table_id=table_id, seat=0, player_id="ann", expected_version=1, request_id="j"
            )
        )
    assert (skew.value.code, skew.value.reason) == (grpc.StatusCode.UNAVAILABLE, "NEWER_SERVER")
    assert service.store._tables[table_id].version == 1


def test_a_crash_between_the_claim_and_the_create_is_healed_by_the_retry() -> None:
    service = Service()
    request = pb.CreateTableRequest(seats=3, request_id="crashy")
    service.store.crashes = 1
    with pytest.raises(Aborted) as crashed:
        service.create(request)
    assert (crashed.value.code, crashed.value.reason) == (
        grpc.StatusCode.UNAVAILABLE,
        "STORE_UNAVAILABLE",
    )
    # the crashed call claimed a table id but created no table
    claimed = [claim[0] for claim in service.store._claims.values()]
    assert len(claimed) == 1 and not service.store._tables
    retried = service.create(request)  # finds the claim, creates the table it names
    assert retried.table_id == claimed[0]
    assert retried.table.version == 1 and len(retried.table.seats) == 3
    assert service.create(request).table_id == retried.table_id
    assert list(service.store._tables) == [retried.table_id]


def assert_refused(
    service: Service, request: pb.CreateTableRequest, reason: str, field: str
) -> None:
    """INVALID_ARGUMENT with ``reason`` at ``field``, and no table claimed."""
    with pytest.raises(Aborted) as refused:
        service.create(request)
    assert (refused.value.code, refused.value.reason, refused.value.field) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        reason,
        field,
    )
    assert not service.store._tables


@pytest.mark.parametrize(
    ("pairs", "field"),
    [
        ([(0, 3, 5)], "pair_unit_values[0].b"),  # seat 3 at a 3-seat table
        ([(1, 1, 5)], "pair_unit_values[0].b"),
        ([(0, 1, 20), (0, 2, 0)], "pair_unit_values[1].unit_value"),
        ([(0, 1, 20), (0, 2, 1_000_001)], "pair_unit_values[1].unit_value"),
        ([(0, 1, 20), (0, 1, 15)], "pair_unit_values[1]"),
    ],
)
def test_pair_unit_values_are_checked_like_settle_hands(
    pairs: list[tuple[int, int, int]], field: str
) -> None:
    service = Service()
    request = pb.CreateTableRequest(
        seats=3,
        request_id="stakes",
        pair_unit_values=[
            settlement_pb2.PairUnitValue(a=a, b=b, unit_value=u) for a, b, u in pairs
        ],
    )
    assert_refused(service, request, "INVALID_INPUT", field)


def test_the_agreed_pair_unit_values_are_in_the_table_view() -> None:
    service = Service()
    stakes = [
        settlement_pb2.PairUnitValue(a=a, b=b, unit_value=u) for a, b, u in [(1, 2, 15), (0, 1, 20)]
    ]
    created = service.create(
        pb.CreateTableRequest(seats=3, request_id="stakes", pair_unit_values=stakes)
    )
    assert [(p.a, p.b, p.unit_value) for p in created.table.pair_unit_values] == [
        (0, 1, 20),
        (1, 2, 15),
    ]


@pytest.mark.parametrize(
    ("streets", "field"),
    [
        ([(6, 6), (7, 7)], "ruleset.overrides.streets[0]"),
        ([(5, 5), (8, 8)], "ruleset.overrides.streets[1]"),
        ([(14, 13)], "ruleset.overrides.streets[0]"),
        ([(5, 5), (6, 4), (5, 4)], "ruleset.overrides.streets[1]"),  # two discards
    ],
)
def test_a_table_plays_no_street_its_clock_cannot_play(
    streets: list[tuple[int, int]], field: str
) -> None:
    # A seat out of time gets the move the timeout policy chooses over every placement of
    # its street: a street of 8 took seconds, 14 dealt and 13 placed a minute and a GB,
    # on every replica at once. A new table places at most 5 cards a street.
    service = Service()
    overrides = ruleset_pb2.RulesetOverrides(
        streets=ruleset_pb2.StreetList(
            streets=[ruleset_pb2.Street(deal=d, place=p) for d, p in streets]
        ),
        max_players=2,
    )
    request = pb.CreateTableRequest(
        seats=2,
        request_id="big-streets",
        ruleset=ruleset_pb2.RulesetSpec(preset="pineapple", overrides=overrides),
    )
    assert_refused(service, request, "INVALID_RULESET", field)
    five = [ruleset_pb2.Street(deal=6, place=5), ruleset_pb2.Street(deal=6, place=5)]
    request.ruleset.overrides.streets.CopyFrom(
        ruleset_pb2.StreetList(streets=[*five, ruleset_pb2.Street(deal=4, place=3)])
    )
    request.request_id = "five-a-street"
    assert service.create(request).table.ruleset.streets[0].place == 5
