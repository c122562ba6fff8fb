"""The embedded store: the same contract as Redis, in one process's memory.

Used when no Redis URL is configured; one process only (replicas would each have their own
tables). Every method runs its checks and writes without an ``await`` in between, so on the
event loop each commit is atomic just as the Lua script is on Redis; an ``asyncio.Lock``
would guard nothing more. Time comes from ``clock`` (seconds since the epoch) so tests can
move it: it stamps event ids (``"<ms>-<seq>"`` like Redis) and expires tables
(``ttl_seconds`` after their last write) and request records (``request_ttl_seconds``).
Like a Redis stream trimmed with ``MAXLEN ~``, a table keeps at least ``max_events`` events,
dropping the oldest in batches of :data:`TRIM_BATCH`. Outboxes live beside the tables (they
outlive an expired table, as on Redis); the tables whose outbox holds records are the hints.
"""

from __future__ import annotations

import asyncio
import bisect
import dataclasses
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from .base import (
    DEFAULT_MAX_EVENTS,
    DEFAULT_REQUEST_TTL_SECONDS,
    DEFAULT_TABLE_TTL_SECONDS,
    RECORD_SEGMENTS,
    AlreadyAppliedError,
    Commit,
    CommitResult,
    EventsTrimmedError,
    ExtraPage,
    RequestIdReusedError,
    StaleVersionError,
    StoredEvent,
    StoredTable,
    TableExistsError,
    TableNotFoundError,
    check_at_least,
    check_digest,
    check_extra_key,
    check_id,
    check_lane,
    check_outbox,
    check_page,
    check_prefix,
    check_write,
    format_event_id,
    parse_event_id,
)

REQUEST_LOG_CAP: Final = 1000
"""The request records a table lists for trimming with their segment (Redis: the same)."""
TRIM_BATCH: Final = 100
"""Events beyond ``max_events`` are dropped once this many have piled up (Redis: one node)."""


@dataclass(slots=True)
class _Table:
    version: int
    state: bytes
    expires_at: float
    deadline_ms: int | None = None
    events: list[tuple[tuple[int, int], StoredEvent]] = field(default_factory=list)
    last_event: tuple[int, int] = (0, 0)
    # Once trimmed: the newest event id dropped (a reader that has seen it has missed
    # nothing; after a trim by the cap, the first one kept instead) and the first one kept.
    trimmed: tuple[tuple[int, int], tuple[int, int]] | None = None
    # First event ids of the segments kept; what came before the first one counts as one.
    segments: list[tuple[int, int]] = field(default_factory=lambda: [(0, 0)])
    extra: dict[str, bytes] = field(default_factory=dict)
    index: dict[str, list[int]] = field(default_factory=dict)
    # (prefix, number) of a numbered extra blob written with a ttl -> when it expires
    extra_expiry: dict[tuple[str, int], float] = field(default_factory=dict)
    # (last event id at the commit, request id) of each request record, while segments are
    # kept: a new segment drops the records of the segments it trims away.
    requests: list[tuple[tuple[int, int], str]] = field(default_factory=list)
    # request lane -> its latest record that may shrink in the newest segment (request id)
    lanes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Record:
    result: CommitResult
    expires_at: float
    digest: str = ""
    compact: bool = False  # may shrink to a marker once its segment is not the newest
    marker: bool = False  # shrunk: the request was applied, its response is not kept


class MemoryTableStore:
    """:class:`~ofc_service.store.base.TableStore` in this process (see the module docstring)."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        max_events: int = DEFAULT_MAX_EVENTS,
    ) -> None:
        self._clock = clock
        self._max_events = check_at_least(max_events, 1, what="max_events")
        self._tables: dict[str, _Table] = {}
        self._records: dict[tuple[str, str], _Record] = {}
        self._signals: dict[str, asyncio.Event] = {}
        self._outboxes: dict[str, dict[str, bytes]] = {}  # table id -> record id -> bytes
        # claim id -> (table id, expires at, request digest)
        self._claims: dict[str, tuple[str, float, str]] = {}
        self._timeout_claims: dict[tuple[str, int], float] = {}  # (table id, version) -> until

    # --- writes -------------------------------------------------------------------------------
    async def create_table(
        self,
        table_id: str,
        state: bytes,
        *,
        events: Sequence[bytes] = (),
        ttl_seconds: int = DEFAULT_TABLE_TTL_SECONDS,
    ) -> CommitResult:
        check_id(table_id, what="table id")
        check_at_least(ttl_seconds, 1, what="ttl_seconds")
        if self._live(table_id) is not None:
            raise TableExistsError(table_id)
        table = _Table(version=1, state=state, expires_at=self._clock() + ttl_seconds)
        self._tables[table_id] = table
        return CommitResult(1, b"", False, self._append(table_id, table, events))

    async def commit(self, commit: Commit) -> CommitResult:
        table_id, request_id, request_digest = (
            commit.table_id,
            commit.request_id,
            commit.request_digest,
        )
        expected_version, expected_state_sha1 = commit.expected_version, commit.expected_state_sha1
        check_id(table_id, what="table id")
        check_id(request_id, what="request id")
        check_digest(request_digest)
        lane = check_lane(commit.request_lane)
        check_at_least(expected_version, 1, what="expected_version")
        blobs = check_write(
            ttl_seconds=commit.ttl_seconds,
            request_ttl_seconds=commit.request_ttl_seconds,
            deadline_ms=commit.deadline_ms,
            extra=commit.extra,
        )
        records = check_outbox(commit.outbox)
        extra_ttl = check_at_least(commit.extra_ttl_seconds, 0, what="extra_ttl_seconds")
        record = self._record(table_id, request_id)
        if record is not None:
            if record.digest != request_digest:
                raise RequestIdReusedError()
            if record.marker:
                raise AlreadyAppliedError(table_id, version=record.result.version)
            return record.result
        table = self._live(table_id)
        if table is None:
            raise TableNotFoundError(table_id)
        if table.version != expected_version or (
            expected_state_sha1 and hashlib.sha1(table.state).hexdigest() != expected_state_sha1
        ):
            raise StaleVersionError(
                table_id, expected_version=expected_version, current_version=table.version
            )
        now = self._clock()
        table.version += 1
        table.state = commit.state
        table.deadline_ms = commit.deadline_ms
        table.expires_at = now + commit.ttl_seconds
        due = sorted((at, named) for named, at in table.extra_expiry.items() if at <= now)
        for _, (prefix, number) in due[:100]:  # as on Redis: a page a commit
            del table.extra_expiry[prefix, number]
            table.extra.pop(f"{prefix}:{number}", None)
            numbers = table.index.get(prefix, [])
            at = bisect.bisect_left(numbers, number)
            if at < len(numbers) and numbers[at] == number:
                del numbers[at]
        for key, value, indexed in blobs:
            table.extra[key] = value
            if indexed is not None:
                numbers = table.index.setdefault(indexed[0], [])
                at = bisect.bisect_left(numbers, indexed[1])
                if at == len(numbers) or numbers[at] != indexed[1]:
                    numbers.insert(at, indexed[1])
                if extra_ttl > 0:
                    table.extra_expiry[indexed] = now + extra_ttl
        if records:
            self._outboxes.setdefault(table_id, {}).update(records)
        ids = self._append(
            table_id,
            table,
            commit.events,
            keep_segments=check_at_least(commit.keep_segments, 0, what="keep_segments"),
            log_by_segments=commit.log_by_segments,
        )
        result = CommitResult(table.version, commit.response, False, ids)
        self._forget_trimmed_requests(
            table_id, table, request_id, new_segment=bool(ids) and commit.keep_segments > 0
        )
        # as on Redis: only records made once the table has segments (hands) shrink
        compact = commit.compact_response and table.segments != [(0, 0)]
        if compact and lane:
            # the lane's earlier record of this segment is superseded: it keeps its marker
            prior = table.lanes.get(lane)
            if prior is not None and prior != request_id:
                self._shrink(table_id, prior)
            table.lanes[lane] = request_id
        self._records[table_id, request_id] = _Record(
            CommitResult(result.version, commit.response, True, result.event_ids),
            now + commit.request_ttl_seconds,
            request_digest,
            compact=compact,
        )
        return result

    def _shrink(self, table_id: str, request_id: str) -> None:
        """The record keeps only that it was applied (if it may shrink and is still whole)."""
        record = self._records.get((table_id, request_id))
        if record is not None and record.compact:
            marker = dataclasses.replace(record.result, response=b"", event_ids=())
            self._records[table_id, request_id] = dataclasses.replace(
                record, result=marker, compact=False, marker=True
            )

    def _forget_trimmed_requests(
        self, table_id: str, table: _Table, request_id: str, *, new_segment: bool
    ) -> None:
        """Request records live as long as their segment (hand) of the log: drop those made
        before the oldest segment kept, shrink those that may in the segments before the
        newest (``new_segment``: this commit began it), then list this commit's."""
        kept, oldest = 0, table.segments[-RECORD_SEGMENTS:][0]
        while kept < len(table.requests) and table.requests[kept][0] < oldest:
            self._records.pop((table_id, table.requests[kept][1]), None)
            kept += 1
        del table.requests[:kept]
        if new_segment:
            table.lanes.clear()  # they pointed into the segment that is no longer the newest
            for at, listed in table.requests:
                if at < table.segments[-1]:
                    self._shrink(table_id, listed)
        table.requests.append((table.last_event, request_id))
        del table.requests[:-REQUEST_LOG_CAP]  # older records still expire with the window

    def _append(
        self,
        table_id: str,
        table: _Table,
        events: Sequence[bytes],
        *,
        keep_segments: int = 0,
        log_by_segments: bool = True,
    ) -> tuple[str, ...]:
        if not events:
            return ()
        first = len(table.events)
        ms, seq = table.last_event
        now_ms = int(self._clock() * 1000)
        ids = []
        for data in events:
            ms, seq = (now_ms, 0) if now_ms > ms else (ms, seq + 1)
            event = StoredEvent(format_event_id(ms, seq), data)
            table.events.append(((ms, seq), event))
            ids.append(event.event_id)
        table.last_event = (ms, seq)
        if keep_segments > 0:
            # the log keeps the newest keep_segments, the request records RECORD_SEGMENTS
            span = max(keep_segments, RECORD_SEGMENTS)
            table.segments = [*table.segments, table.events[first][0]][-span:]
            start = table.segments[-keep_segments:][0]
            keep = next(k for k, (at, _) in enumerate(table.events) if at >= start)
            if keep and log_by_segments:
                self._trim(table, keep, newest_known=True)
        if len(table.events) >= self._max_events + TRIM_BATCH:
            self._trim(table, len(table.events) - self._max_events, newest_known=False)
        signal = self._signals.pop(table_id, None)
        if signal is not None:
            signal.set()
        return tuple(ids)

    @staticmethod
    def _trim(table: _Table, count: int, *, newest_known: bool) -> None:
        """Drops the oldest ``count`` events of ``table``'s log. As Redis does: a hand's trim
        knows the newest event it dropped, the cap's trim (of whole stream nodes there) does
        not, and a reader is then judged by the first event kept."""
        first_kept = table.events[count][0]
        table.trimmed = table.events[count - 1][0] if newest_known else first_kept, first_kept
        del table.events[:count]

    # --- expiry -------------------------------------------------------------------------------
    def _live(self, table_id: str) -> _Table | None:
        table = self._tables.get(table_id)
        if table is not None and table.expires_at <= self._clock():
            del self._tables[table_id]
            return None
        return table

    def _record(self, table_id: str, request_id: str) -> _Record | None:
        now = self._clock()
        while self._records:  # drop expired records from the oldest end
            oldest = next(iter(self._records))
            if self._records[oldest].expires_at > now:
                break
            del self._records[oldest]
        record = self._records.get((table_id, request_id))
        return record if record is not None and record.expires_at > now else None

    def _purge(self) -> None:
        """Drop every expired table (the sweeper's regular due_deadlines call runs it)."""
        now = self._clock()
        for table_id in [t for t, table in self._tables.items() if table.expires_at <= now]:
            del self._tables[table_id]

    def _table(self, table_id: str) -> _Table:
        table = self._live(check_id(table_id, what="table id"))
        if table is None:
            raise TableNotFoundError(table_id)
        return table

    # --- reads --------------------------------------------------------------------------------
    async def load(self, table_id: str) -> StoredTable:
        table = self._table(table_id)
        return StoredTable(
            table_id=table_id,
            version=table.version,
            state=table.state,
            deadline_ms=table.deadline_ms,
            last_event_id="0" if table.last_event == (0, 0) else format_event_id(*table.last_event),
        )

    async def confirm(self, table_id: str) -> None:
        check_id(table_id, what="table id")  # one process: what it holds is all there is

    async def get_response(
        self, table_id: str, request_id: str, *, request_digest: str | None = None
    ) -> bytes | None:
        check_id(table_id, what="table id")
        record = self._record(table_id, check_id(request_id, what="request id"))
        if record is None:
            return None
        if request_digest is not None and record.digest != check_digest(request_digest):
            raise RequestIdReusedError()
        if record.marker:
            raise AlreadyAppliedError(table_id, version=record.result.version)
        return record.result.response

    async def read_events(
        self, table_id: str, *, after: str = "0", limit: int = 1000
    ) -> list[StoredEvent]:
        table = self._table(table_id)
        position = parse_event_id(after)
        check_at_least(limit, 1, what="limit")
        if table.trimmed is not None and position < table.trimmed[0]:
            raise EventsTrimmedError(
                table_id, after=after, first_retained=format_event_id(*table.trimmed[1])
            )
        at = bisect.bisect_right(table.events, position, key=lambda entry: entry[0])
        return [event for _, event in table.events[at : at + limit]]

    async def wait_events(
        self,
        table_id: str,
        *,
        after: str,
        timeout_s: float,
        limit: int = 1000,
        on_table: Callable[[StoredTable], None] | None = None,
    ) -> list[StoredEvent]:
        events = await self.read_events(table_id, after=after, limit=limit)
        if not events and timeout_s > 0:
            signal = self._signals.setdefault(table_id, asyncio.Event())
            try:
                await asyncio.wait_for(signal.wait(), timeout_s)
            except TimeoutError:
                return []
            events = await self.read_events(table_id, after=after, limit=limit)
        if on_table is not None and events:
            on_table(await self.load(table_id))
        return events

    async def get_extra(self, table_id: str, key: str) -> bytes | None:
        check_id(table_id, what="table id")
        table = self._live(table_id)
        return None if table is None else table.extra.get(check_extra_key(key))

    async def list_extra(
        self, table_id: str, prefix: str, *, start: int = 0, count: int = 50
    ) -> ExtraPage:
        check_id(table_id, what="table id")
        check_prefix(prefix)
        check_page(start, count)
        table = self._live(table_id)
        numbers = [] if table is None else table.index.get(prefix, [])
        at = bisect.bisect_left(numbers, start)
        page = numbers[at : at + count]
        extra = {} if table is None else table.extra
        return ExtraPage(
            items=tuple((n, extra[f"{prefix}:{n}"]) for n in page),
            next_start=numbers[at + count] if at + count < len(numbers) else None,
            total=len(numbers),
        )

    # --- deadlines ----------------------------------------------------------------------------
    async def due_deadlines(self, now_ms: int, *, limit: int = 100) -> list[tuple[str, int]]:
        check_at_least(limit, 1, what="limit")
        self._purge()
        due = [
            (table.deadline_ms, table_id)
            for table_id, table in self._tables.items()
            if table.deadline_ms is not None and table.deadline_ms <= now_ms
        ]
        return [(table_id, deadline) for deadline, table_id in sorted(due)[:limit]]

    async def deadline_count(self) -> int:
        return sum(1 for table in self._tables.values() if table.deadline_ms is not None)

    async def claim_timeout(self, table_id: str, version: int, *, ttl_ms: int) -> bool:
        check_id(table_id, what="table id")
        check_at_least(ttl_ms, 1, what="ttl_ms")
        now = self._clock()
        claims = self._timeout_claims
        for key in [k for k, until in claims.items() if until <= now]:
            del claims[key]
        if (table_id, version) in claims:
            return False
        claims[(table_id, version)] = now + ttl_ms / 1000
        return True

    # --- outboxes -----------------------------------------------------------------------------
    async def pending_outboxes(
        self, now_ms: int, *, limit: int = 100, rescan: bool = False
    ) -> list[str]:
        check_at_least(limit, 1, what="limit")
        return [table_id for table_id, records in self._outboxes.items() if records][:limit]

    async def read_outbox(self, table_id: str) -> dict[str, bytes]:
        return dict(self._outboxes.get(check_id(table_id, what="table id"), {}))

    async def remove_from_outbox(self, table_id: str, record_ids: Sequence[str]) -> None:
        records = self._outboxes.get(check_id(table_id, what="table id"), {})
        for record_id in record_ids:
            records.pop(record_id, None)
        if not records:
            self._outboxes.pop(table_id, None)

    async def ping(self) -> None:
        """Always answers: the store is in this process."""

    async def close(self) -> None:
        """Wake every waiting :meth:`wait_events` (they return what is there)."""
        for signal in self._signals.values():
            signal.set()
        self._signals.clear()

    # --- create claims ------------------------------------------------------------------------
    async def claim_table_id(
        self,
        claim_id: str,
        table_id: str,
        *,
        ttl_seconds: int = DEFAULT_REQUEST_TTL_SECONDS,
        request_digest: str = "",
    ) -> str:
        check_id(claim_id, what="claim id")
        check_id(table_id, what="table id")
        check_at_least(ttl_seconds, 1, what="ttl_seconds")
        check_digest(request_digest)
        now = self._clock()
        while self._claims:  # drop expired claims from the oldest end
            oldest, (_, expires_at, _) = next(iter(self._claims.items()))
            if expires_at > now:
                break
            del self._claims[oldest]
        claimed = self._claims.get(claim_id)
        if claimed is None or claimed[1] <= now:
            self._claims.pop(claim_id, None)  # a new claim goes to the young end
            claimed = self._claims[claim_id] = (table_id, now + ttl_seconds, request_digest)
        elif claimed[2] and request_digest and claimed[2] != request_digest:
            raise RequestIdReusedError()
        return claimed[0]
