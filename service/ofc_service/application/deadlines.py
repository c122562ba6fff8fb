"""Turn clocks: each seat's deadline after a change, and the sweeper that makes the
timeout move when one passes (in every replica, safely: the store's version check lets one
replica's timeout win; docs/hand-history.md, "Turn clocks", is the rule the verifier checks).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ofc import engine
from ofc.engine import MatchState

from ofc_service.application.periodic import Periodic
from ofc_service.application.records import TableEvent, TableRecord
from ofc_service.metrics import ACTIVE_TABLES
from ofc_service.store import StoreUnavailableError

if TYPE_CHECKING:
    from ofc_service.application.manager import TableManager

log = logging.getLogger("ofc.deadlines")

SWEEP_CONCURRENCY = 8
"""Due tables a sweep times out at once (each its own store calls)."""
SWEEP_TABLE_S = 2.0
"""How long a sweep gives one table's timeout before it goes on (tried again next sweep)."""


def seat_deadlines(
    record: TableRecord, match: MatchState, now: int, events: Iterable[TableEvent] = ()
) -> tuple[tuple[int, int], ...]:
    """The deadline of every seat the table waits for in ``match``, after a change made at
    ``now`` to ``record`` (the table before it: its clocks and running deadlines) that
    produced ``events``: a seat playing street by street gets a full turn for each batch,
    from the change that dealt it; a Fantasyland seat has one clock for the hand, from its
    start. Other seats' clocks keep running. (docs/hand-history.md, "Turn clocks": the
    verifier checks every timeout's deadline by this rule.)"""
    waiting = engine.seats_to_act(match)
    hand = match.hand
    if not waiting or hand is None:
        return ()
    running = dict(record.seat_deadlines)
    dealt = {e.seat for e in events if isinstance(e, engine.CardsDealt) and e.street is not None}
    deadlines = []
    for seat in waiting:
        if hand.seat(seat).in_fantasyland:
            deadline = hand.started_at_ms + record.fantasyland_time_limit_ms
        elif seat in dealt or seat not in running:
            deadline = now + record.turn_time_limit_ms
        else:
            deadline = running[seat]
        deadlines.append((seat, deadline))
    return tuple(deadlines)


class DeadlineSweeper:
    """Applies timeout moves when turns run out; runs in every replica, safely."""

    def __init__(
        self,
        manager: TableManager,
        *,
        interval_s: float = 0.25,
        batch: int = 100,
        count_interval_s: float = 5.0,
    ) -> None:
        self.manager = manager
        self.batch = batch
        self.count_interval_s = count_interval_s
        self._next_count = -math.inf
        self._failing: set[str] = set()  # tables whose timeout failed, logged once each
        self._out: set[str] = set()  # tables whose store was out at the last sweep
        self._loop = Periodic("deadline sweep", self.sweep_once, interval_s)

    async def sweep_once(self) -> int:
        # Tables waiting for a move, all replicas' (the index is global): dashboards take
        # max(). Counted every few seconds, not every sweep: a count reads every index shard
        # (a pipeline of 17 ZCARDs, ~0.4% of a loaded replica's CPU at four sweeps a second),
        # and a scrape comes every 15 s or so.
        if time.monotonic() >= self._next_count:
            # A count while a node of the store is out (on a cluster, a master away) would
            # be some shards' only: the gauge keeps its last value, and the clocks go on.
            with contextlib.suppress(StoreUnavailableError):
                ACTIVE_TABLES.set(await self.manager.store.deadline_count())
            self._next_count = time.monotonic() + self.count_interval_s
        due = await self.manager.store.due_deadlines(self.manager.clock_ms(), limit=self.batch)
        # The tables at once, a few at a time, each for SWEEP_TABLE_S at most, those whose
        # store was out at the last sweep last: on a Redis Cluster one master's outage is its
        # own tables', not a reason to hold up the others' clocks.
        due.sort(key=lambda item: item[0] in self._out)
        slots = asyncio.Semaphore(SWEEP_CONCURRENCY)

        async def time_out(table_id: str) -> int | BaseException:
            async with slots:
                try:
                    return await asyncio.wait_for(
                        self.manager.apply_due_timeouts(table_id), SWEEP_TABLE_S
                    )
                except TimeoutError:  # (its claim, request id and version make a retry safe)
                    return StoreUnavailableError(f"no answer within {SWEEP_TABLE_S} s")
                except Exception as error:
                    return error

        outcomes = await asyncio.gather(*(time_out(table_id) for table_id, _ in due))
        applied = 0
        self._out.clear()
        for (table_id, _), outcome in zip(due, outcomes, strict=True):
            if isinstance(outcome, StoreUnavailableError):
                self._out.add(table_id)
                self._failed(table_id, outcome)
            elif isinstance(outcome, BaseException):
                # The oldest deadline comes first at every sweep, on every replica: a table
                # whose timeout cannot be made must not stop every other table's clock.
                self._failed(table_id, outcome)
            else:
                applied += outcome
                self._failing.discard(table_id)
        outages = [o for o in outcomes if isinstance(o, StoreUnavailableError)]
        if outages and len(outages) == len(outcomes):
            raise outages[0]  # the store is out for every table due: the loop backs off, says so
        return applied

    def _failed(self, table_id: str, error: BaseException) -> None:
        if table_id in self._failing:
            return  # said once; it stays due and is tried again at each sweep
        if len(self._failing) >= self.batch * 10:
            self._failing.clear()
        self._failing.add(table_id)
        fields = {"table_id": table_id}
        if isinstance(error, StoreUnavailableError):  # its store node: no traceback
            fields["error"] = str(error)
            log.warning("timeout move failed; other tables go on", extra={"fields": fields})
            return
        log.error(
            "timeout move failed; other tables go on", exc_info=error, extra={"fields": fields}
        )

    def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()

    def wake(self) -> None:
        """Sweep now rather than after the loop's backoff (the store answers again)."""
        self._loop.wake()


__all__ = ["DeadlineSweeper", "seat_deadlines"]
