"""Where live tables are kept: one :class:`TableStore` contract, two implementations.

:func:`open_store` picks Redis when a URL is configured (production, any number of
replicas) and the in-memory store otherwise (one process). The engine's bytes pass through
unread; see :mod:`ofc_service.store.base` for the guarantees and :mod:`.redis` for the key
layout. The settlement feed (:mod:`.feed`) has the same pair: :func:`open_feed`.
"""

from __future__ import annotations

from .base import (
    DEFAULT_MAX_EVENTS,
    DEFAULT_REQUEST_TTL_SECONDS,
    DEFAULT_TABLE_TTL_SECONDS,
    RECORD_SEGMENTS,
    AlreadyAppliedError,
    Commit,
    CommitResult,
    EventIdAheadError,
    EventsTrimmedError,
    ExtraPage,
    InvalidIdError,
    RequestIdReusedError,
    StaleVersionError,
    StoredEvent,
    StoredTable,
    StoreError,
    StoreUnavailableError,
    TableExistsError,
    TableNotFoundError,
    TableStore,
    format_event_id,
    parse_event_id,
)
from .feed import DEFAULT_DEDUPE_TTL_SECONDS, FeedEntry, SettlementFeed
from .feed_memory import MemorySettlementFeed
from .feed_redis import RedisSettlementFeed
from .memory import MemoryTableStore
from .redis import RedisTableStore

__all__ = [
    "DEFAULT_MAX_EVENTS",
    "DEFAULT_REQUEST_TTL_SECONDS",
    "DEFAULT_TABLE_TTL_SECONDS",
    "RECORD_SEGMENTS",
    "AlreadyAppliedError",
    "Commit",
    "CommitResult",
    "EventIdAheadError",
    "EventsTrimmedError",
    "ExtraPage",
    "FeedEntry",
    "InvalidIdError",
    "MemorySettlementFeed",
    "MemoryTableStore",
    "RedisSettlementFeed",
    "RedisTableStore",
    "RequestIdReusedError",
    "SettlementFeed",
    "StaleVersionError",
    "StoreError",
    "StoreUnavailableError",
    "StoredEvent",
    "StoredTable",
    "TableExistsError",
    "TableNotFoundError",
    "TableStore",
    "format_event_id",
    "open_feed",
    "open_store",
    "parse_event_id",
]


def open_store(
    redis_url: str | None,
    *,
    max_events: int = DEFAULT_MAX_EVENTS,
    wait_replicas: int = 0,
    wait_timeout_ms: int = 500,
) -> TableStore:
    """Redis (one server, or a Redis Cluster for ``redis+cluster://``) when ``redis_url`` is
    given (no connection is made until the first call), else a fresh in-memory store.
    ``wait_replicas``: see :class:`RedisTableStore`.

    >>> type(open_store(None)).__name__, type(open_store("redis://127.0.0.1:1/0")).__name__
    ('MemoryTableStore', 'RedisTableStore')
    """
    if redis_url:
        return RedisTableStore.from_url(
            redis_url,
            max_events=max_events,
            wait_replicas=wait_replicas,
            wait_timeout_ms=wait_timeout_ms,
        )
    return MemoryTableStore(max_events=max_events)


def open_feed(
    redis_url: str | None,
    *,
    wait_replicas: int = 0,
    wait_timeout_ms: int = 500,
    dedupe_ttl_seconds: int = DEFAULT_DEDUPE_TTL_SECONDS,
) -> SettlementFeed:
    """The settlement feed beside :func:`open_store`'s store: the Redis Stream when
    ``redis_url`` is given (its own connections), else a fresh in-memory feed.
    ``wait_replicas``, ``dedupe_ttl_seconds``: see :class:`RedisSettlementFeed`.

    >>> type(open_feed(None)).__name__, type(open_feed("redis://127.0.0.1:1/0")).__name__
    ('MemorySettlementFeed', 'RedisSettlementFeed')
    """
    if redis_url:
        return RedisSettlementFeed.from_url(
            redis_url,
            wait_replicas=wait_replicas,
            wait_timeout_ms=wait_timeout_ms,
            dedupe_ttl_seconds=dedupe_ttl_seconds,
        )
    return MemorySettlementFeed(dedupe_ttl_seconds=dedupe_ttl_seconds)
