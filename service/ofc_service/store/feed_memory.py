"""The embedded settlement feed: the same contract as the Redis Stream, in one process.

Paired with :class:`~ofc_service.store.memory.MemoryTableStore` when no Redis URL is
configured. Like that store, every method does its checks and changes without an ``await``
in between, so each is atomic on the event loop. ``clock`` (seconds since the epoch) stamps
stream ids and expires remembered settlement ids.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .base import check_at_least, format_event_id, parse_event_id
from .feed import (
    DEFAULT_DEDUPE_TTL_SECONDS,
    FeedEntry,
    check_count,
    check_name,
    check_settlement_id,
    check_stream_id,
)

_Id = tuple[int, int]


@dataclass(slots=True)
class _Group:
    delivered: _Id = (0, 0)  # the last stream id handed to any consumer
    pending: dict[_Id, str] = field(default_factory=dict)  # stream id -> consumer


class MemorySettlementFeed:
    """:class:`~ofc_service.store.feed.SettlementFeed` in this process."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        dedupe_ttl_seconds: int = DEFAULT_DEDUPE_TTL_SECONDS,
    ) -> None:
        self._clock = clock
        self._dedupe_ttl = check_at_least(dedupe_ttl_seconds, 1, what="dedupe_ttl_seconds")
        self._ids: list[_Id] = []  # ascending; parallel to _entries
        self._entries: dict[_Id, FeedEntry] = {}
        self._last: _Id = (0, 0)
        self._published: dict[str, tuple[str, float]] = {}  # settlement id -> (stream id, expiry)
        self._groups: dict[str, _Group] = {}
        self._signal = asyncio.Event()

    @property
    def dedupe_ttl_seconds(self) -> int:
        """How long a settlement id is remembered: published again inside it, it is not
        appended again."""
        return self._dedupe_ttl

    async def publish(self, settlement_id: str, data: bytes) -> str | None:
        check_settlement_id(settlement_id)
        now = self._clock()
        seen = self._published.get(settlement_id)
        if seen is not None and seen[1] > now:
            return None
        ms, seq = self._last
        now_ms = int(now * 1000)
        position = (now_ms, 0) if now_ms > ms else (ms, seq + 1)
        stream_id = format_event_id(*position)
        self._ids.append(position)
        self._entries[position] = FeedEntry(stream_id, settlement_id, data)
        self._last = position
        self._published[settlement_id] = (stream_id, now + self._dedupe_ttl)
        self._signal.set()
        self._signal = asyncio.Event()
        return stream_id

    def _group(self, group: str) -> _Group:
        return self._groups.setdefault(check_name(group, what="group"), _Group())

    async def read_pending(
        self, group: str, consumer: str, *, after: str = "0", count: int = 100
    ) -> list[FeedEntry]:
        state = self._group(group)
        check_name(consumer, what="consumer")
        start = parse_event_id(after)
        check_count(count)
        mine = sorted(i for i, owner in state.pending.items() if owner == consumer and i > start)
        found = []
        for position in mine:
            entry = self._entries.get(position)
            if entry is None:  # gone from the log: it cannot be delivered any more
                del state.pending[position]
                continue
            found.append(entry)
            if len(found) == count:
                break
        return found

    async def read_new(
        self, group: str, consumer: str, *, count: int = 100, block_s: float = 0.0
    ) -> list[FeedEntry]:
        state = self._group(group)
        check_name(consumer, what="consumer")
        check_count(count)
        if self._last <= state.delivered and block_s > 0:
            try:
                await asyncio.wait_for(self._signal.wait(), block_s)
            except TimeoutError:
                return []
        at = bisect.bisect_right(self._ids, state.delivered)
        positions = self._ids[at : at + count]
        for position in positions:
            state.pending[position] = consumer
        if positions:
            state.delivered = positions[-1]
        return [self._entries[p] for p in positions]

    async def acknowledge(self, group: str, stream_ids: Sequence[str]) -> list[FeedEntry]:
        check_name(group, what="group")
        positions = [parse_event_id(check_stream_id(s)) for s in stream_ids]
        state = self._groups.get(group)
        if state is None:
            return []
        done = []
        for position, stream_id in zip(positions, stream_ids, strict=True):
            if state.pending.pop(position, None) is not None:
                done.append(self._entries.get(position, FeedEntry(stream_id, "", b"")))
        return done

    async def stream_ids(self, settlement_ids: Sequence[str]) -> dict[str, str]:
        now = self._clock()
        found = {}
        for settlement_id in settlement_ids:
            seen = self._published.get(check_settlement_id(settlement_id))
            if seen is not None and seen[1] > now:
                found[settlement_id] = seen[0]
        return found

    async def trim(self, before_ms: int) -> int:
        if not self._groups:
            return 0
        bound = (before_ms, 0)
        for state in self._groups.values():
            acked_below = (state.delivered[0], state.delivered[1] + 1)
            if state.pending:
                acked_below = min(acked_below, min(state.pending))
            bound = min(bound, acked_below)
        cut = bisect.bisect_left(self._ids, bound)
        for position in self._ids[:cut]:
            del self._entries[position]
        del self._ids[:cut]
        now = self._clock()
        for settlement_id in [k for k, (_, expiry) in self._published.items() if expiry <= now]:
            del self._published[settlement_id]
        return cut

    async def ping(self) -> None:
        """Always answers: the feed is in this process."""

    async def close(self) -> None:
        self._signal.set()
