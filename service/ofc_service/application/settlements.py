"""Money in matches: one settlement record per settled hand, and the relay that feeds them out.

A record (:class:`SettlementRecord`) is built from the engine's :class:`~ofc.engine.HandSettled`
event in the same commit as the move that ended the hand, and written to the table's outbox
(:mod:`ofc_service.store.base`). Its id ``"<table_id>:<hand_number>"`` is stable: the same
hand always yields the same id, so a ledger that upserts by id stays exact however often a
record is delivered. Points and money are integers (money in the smallest currency unit:
each pair's capped points times its unit value) and sum to zero over the seats, as does each
pair. The loss cap is applied to points by :func:`ofc.scoring.settle` (largest remainder,
ties to the player earlier in the hand's order; see docs/settlement-feed.md), before the
money is computed, so no rounding ever happens on money.

:class:`SettlementRelay` moves records from the tables' outboxes to the global
:class:`~ofc_service.store.feed.SettlementFeed`: right after each settling commit, and in a
periodic sweep that every replica runs (safe: the feed ignores a settlement id it has seen).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

from ofc import engine
from ofc.engine import Event, HandSettled, MatchState

from ofc_service.application.periodic import Periodic
from ofc_service.store import SettlementFeed, StoreUnavailableError, TableStore
from ofc_service.store.feed import DEFAULT_RETENTION_SECONDS

log = logging.getLogger("ofc.settlements")

RELAY_TABLE_S = 2.0
"""How long a relay sweep gives one table's outbox before it goes on (tried again, last,
next sweep): a Redis Cluster node that takes no answer holds up no other table's records."""

RECORD_FORMAT: Final = 2
RECORD_FORMATS: Final = (1, RECORD_FORMAT)  # 1: before the seats' Fantasyland tiers
_HAND_NUMBER_RE: Final = re.compile(r"0|[1-9][0-9]{0,15}")


def settlement_id(table_id: str, hand_number: int) -> str:
    """The stable id of a hand's settlement.

    >>> settlement_id("t-1", 3)
    't-1:3'
    >>> parse_settlement_id(settlement_id("t-1", 3))
    ('t-1', 3)
    """
    return f"{table_id}:{hand_number}"


def parse_settlement_id(text: str) -> tuple[str, int]:
    """The inverse of :func:`settlement_id`; ``ValueError`` for anything else.

    >>> parse_settlement_id("t-1:²")
    Traceback (most recent call last):
    ...
    ValueError: invalid settlement id: 't-1:²'
    >>> parse_settlement_id("t-1")
    Traceback (most recent call last):
    ...
    ValueError: invalid settlement id: 't-1'
    """
    table_id, _, number = text.rpartition(":")
    # ASCII digits, canonical: str.isdigit() also takes "²", which int() rejects.
    if not table_id or not _HAND_NUMBER_RE.fullmatch(number):
        raise ValueError(f"invalid settlement id: {text!r}")
    return table_id, int(number)


@dataclass(frozen=True, slots=True)
class SeatSettlement:
    """One seat's result in a hand, and its running totals at the table after it; from
    record format 2 on also its Fantasyland: ``fantasyland_cards`` the tier it played (the
    cards of its Fantasyland hand, 0 for a normal hand), ``fantasyland_next_cards`` the
    cards of the Fantasyland hand it is owed next (0: none)."""

    seat: int
    player_id: str
    points: int
    units: int
    total_points: int
    total_units: int
    fouled: bool
    fantasyland_cards: int = 0
    fantasyland_next_cards: int = 0


@dataclass(frozen=True, slots=True)
class PairSettlement:
    """One pair's result from ``seat_a``'s side (``seat_b`` gets the negatives)."""

    seat_a: int
    seat_b: int
    points: int  # before the loss cap
    capped_points: int
    unit_value: int
    units: int  # capped_points * unit_value


@dataclass(frozen=True, slots=True)
class SettlementRecord:
    """What a ledger books for one settled hand (see the module docstring). ``format``: 2
    for the records this release writes; a format-1 record (read from an older server's
    stream) has no Fantasyland fields and is written back as it was."""

    settlement_id: str
    table_id: str
    hand_number: int
    ruleset: str
    unit_value: int
    loss_cap: int | None
    settled_at_ms: int
    seats: tuple[SeatSettlement, ...]  # ascending seat
    pairs: tuple[PairSettlement, ...]  # the settlement's pair order
    format: int = RECORD_FORMAT

    @classmethod
    def from_event(
        cls,
        table_id: str,
        event: HandSettled,
        match: MatchState,
        seat_units: tuple[int, ...],
        *,
        settled_at_ms: int,
    ) -> SettlementRecord:
        """The record of ``event``; ``match`` and ``seat_units`` are the table right after it
        (for the player ids and running totals)."""
        players = event.settlement.players
        hand = match.hand
        played = {s.seat: s.fantasyland for s in hand.seats} if hand is not None else {}
        owed = dict(event.fantasyland_next)
        seats = [
            SeatSettlement(
                seat=seat,
                player_id=match.seats[seat].player_id,
                points=player.points,
                units=player.units,
                total_points=match.seats[seat].points,
                total_units=seat_units[seat],
                fouled=player.fouled,
                fantasyland_cards=played.get(seat, 0),
                fantasyland_next_cards=owed.get(seat, 0),
            )
            for seat, player in zip(event.seats, players, strict=True)
        ]
        pairs = tuple(
            PairSettlement(
                seat_a=event.seats[p.a],
                seat_b=event.seats[p.b],
                points=p.points,
                capped_points=p.capped_points,
                unit_value=p.unit_value,
                units=p.units,
            )
            for p in event.settlement.pairs
        )
        record = cls(
            settlement_id=settlement_id(table_id, event.number),
            table_id=table_id,
            hand_number=event.number,
            ruleset=event.settlement.ruleset,
            unit_value=match.ruleset.unit_value,
            loss_cap=match.ruleset.loss_cap,
            settled_at_ms=settled_at_ms,
            seats=tuple(sorted(seats, key=lambda s: s.seat)),
            pairs=pairs,
        )
        record.check()
        return record

    def check(self) -> None:
        """Raise ``ValueError`` unless points and money are zero-sum, per pair consistent,
        and the seats' results are the sums of their pairs."""
        if sum(s.points for s in self.seats) or sum(s.units for s in self.seats):
            raise ValueError(f"settlement {self.settlement_id} is not zero-sum")
        points = {s.seat: 0 for s in self.seats}
        units = dict(points)
        for p in self.pairs:
            if p.units != p.capped_points * p.unit_value:
                raise ValueError(f"settlement {self.settlement_id}: pair units != points x unit")
            points[p.seat_a] += p.capped_points
            points[p.seat_b] -= p.capped_points
            units[p.seat_a] += p.units
            units[p.seat_b] -= p.units
        if any(points[s.seat] != s.points or units[s.seat] != s.units for s in self.seats):
            raise ValueError(f"settlement {self.settlement_id}: seats do not add up to pairs")

    def _fantasyland_of(self, seat: SeatSettlement) -> dict[str, int]:
        """A seat's Fantasyland fields as the record's format writes them: both in format 2;
        in format 1, which has none, only those set anyway (no release wrote one), so that
        a verifier compares them rather than passing values it never looked at."""
        fields = {
            "fantasyland_cards": seat.fantasyland_cards,
            "fantasyland_next_cards": seat.fantasyland_next_cards,
        }
        return fields if self.format >= 2 else {k: v for k, v in fields.items() if v}

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "settlement_id": self.settlement_id,
            "table_id": self.table_id,
            "hand_number": self.hand_number,
            "ruleset": self.ruleset,
            "unit_value": self.unit_value,
            "loss_cap": self.loss_cap,
            "settled_at_ms": self.settled_at_ms,
            "seats": [
                {
                    "seat": s.seat,
                    "player_id": s.player_id,
                    "points": s.points,
                    "units": s.units,
                    "total_points": s.total_points,
                    "total_units": s.total_units,
                    "fouled": s.fouled,
                }
                | self._fantasyland_of(s)
                for s in self.seats
            ],
            "pairs": [
                {
                    "seat_a": p.seat_a,
                    "seat_b": p.seat_b,
                    "points": p.points,
                    "capped_points": p.capped_points,
                    "unit_value": p.unit_value,
                    "units": p.units,
                }
                for p in self.pairs
            ],
        }

    def to_bytes(self) -> bytes:
        """Compact JSON: what the outbox and the Redis Stream hold (field ``d``)."""
        return json.dumps(self.to_dict(), separators=(",", ":")).encode()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SettlementRecord:
        found = data.get("format")
        if isinstance(found, bool) or found not in RECORD_FORMATS:
            raise ValueError(f"unknown settlement record format {found!r}")
        return cls(
            settlement_id=str(data["settlement_id"]),
            table_id=str(data["table_id"]),
            hand_number=int(data["hand_number"]),
            ruleset=str(data["ruleset"]),
            unit_value=int(data["unit_value"]),
            loss_cap=None if data["loss_cap"] is None else int(data["loss_cap"]),
            settled_at_ms=int(data["settled_at_ms"]),
            seats=tuple(SeatSettlement(**s) for s in data["seats"]),
            pairs=tuple(PairSettlement(**p) for p in data["pairs"]),
            format=found,
        )

    @classmethod
    def from_bytes(cls, raw: bytes) -> SettlementRecord:
        return cls.from_dict(json.loads(raw))


def money_totals(
    units: tuple[int, ...], seat_count: int, events: Iterable[Event]
) -> tuple[int, ...]:
    """Each seat's running money total after ``events``: a settled hand adds each seat's
    units; a seat taken or vacated starts again from 0 (as the engine does with points).

    >>> from ofc.engine import SeatTaken
    >>> money_totals((), 2, [SeatTaken(1, "bob")])
    (0, 0)
    >>> units = (5, -5)
    >>> money_totals(units, 2, []) is units  # unchanged: the same tuple
    True
    """
    totals = list(units) + [0] * (seat_count - len(units))
    for event in events:
        if isinstance(event, engine.SeatTaken | engine.SeatVacated):
            totals[event.seat] = 0
        elif isinstance(event, HandSettled):
            for seat, player in zip(event.seats, event.settlement.players, strict=True):
                totals[seat] += player.units
    after = tuple(totals)
    # unchanged (most moves): the same tuple, so that a record written against the one
    # before sees its head unchanged by identity (TableRecord.write)
    return units if after == units else after


def _hand_order(record_id: str) -> tuple[int, str]:
    try:
        return parse_settlement_id(record_id)[1], record_id
    except ValueError:
        return 0, record_id


class SettlementRelay:
    """Copies outbox records to the feed, then empties them from the outbox.

    Safe to run anywhere and concurrently: the feed drops a settlement id it has seen, and a
    record leaves the outbox only after the feed has it. Records of one table are published
    in hand order; across tables there is no order.
    """

    def __init__(
        self,
        store: TableStore,
        feed: SettlementFeed,
        *,
        clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
        interval_s: float = 1.0,
        batch: int = 100,
        rescan_interval_s: float = 300.0,
        trim_interval_s: float = 60.0,
        retention_s: int = DEFAULT_RETENTION_SECONDS,
    ) -> None:
        self.store = store
        self.feed = feed
        self.clock_ms = clock_ms
        self.batch = batch
        self.rescan_interval_s = rescan_interval_s
        self.trim_interval_s = trim_interval_s
        self.retention_s = retention_s
        self._loop = Periodic("settlement relay sweep", self._tick, interval_s)
        self._next_rescan = self._next_trim = 0.0
        self._out: set[str] = set()  # tables whose store was out at the last sweep

    async def relay_table(self, table_id: str, *, within: float | None = None) -> int:
        """Publish the table's outbox records; how many were new to the feed. ``within``:
        seconds at most, else :class:`StoreUnavailableError` (a Redis node that takes no
        answer; what a relay cut short appended is not appended again by the next)."""
        if within is not None:
            try:
                return await asyncio.wait_for(self.relay_table(table_id), within)
            except TimeoutError:
                raise StoreUnavailableError(
                    f"the outbox of table {table_id!r} had no answer within {within} s"
                ) from None
        records = await self.store.read_outbox(table_id)
        if records:  # a settlement a failover may take back is not published
            await self.store.confirm(table_id)
        published = 0
        for record_id in sorted(records, key=_hand_order):
            if await self.feed.publish(record_id, records[record_id]) is not None:
                published += 1
        await self.store.remove_from_outbox(table_id, list(records))
        return published

    async def sweep_once(self, *, rescan: bool = False) -> int:
        """Relay every table whose outbox holds records (up to ``batch`` tables)."""
        tables = await self.store.pending_outboxes(self.clock_ms(), limit=self.batch, rescan=rescan)
        tables.sort(key=lambda table_id: table_id in self._out)  # out at the last sweep: last
        published, outage = 0, None
        self._out.clear()
        for table_id in tables:
            try:
                published += await self.relay_table(table_id, within=RELAY_TABLE_S)
            except StoreUnavailableError as error:
                # On a Redis Cluster, the node of this table's outbox may be out alone: the
                # others are relayed all the same.
                outage = error
                self._out.add(table_id)
            except Exception:  # one bad outbox must not hold up the others
                log.exception("relaying an outbox failed", extra={"fields": {"table_id": table_id}})
        if outage is not None and len(self._out) == len(tables):
            raise outage  # the store is out for every table: the whole sweep is retried
        return published

    async def trim_once(self) -> int:
        """Drop feed records past the retention that every consumer group acknowledged."""
        return await self.feed.trim(self.clock_ms() - self.retention_s * 1000)

    async def _tick(self) -> None:
        now = asyncio.get_running_loop().time()
        rescan = now >= self._next_rescan
        await self.sweep_once(rescan=rescan)
        if rescan:
            self._next_rescan = now + self.rescan_interval_s
        if now >= self._next_trim:
            await self.trim_once()
            self._next_trim = now + self.trim_interval_s

    def start(self) -> None:
        now = asyncio.get_running_loop().time()
        self._next_rescan, self._next_trim = now + self.rescan_interval_s, now
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()

    def wake(self) -> None:
        """Sweep now rather than after the loop's backoff (the store answers again)."""
        self._loop.wake()


__all__ = [
    "PairSettlement",
    "SeatSettlement",
    "SettlementRecord",
    "SettlementRelay",
    "money_totals",
    "parse_settlement_id",
    "settlement_id",
]
