"""The settlement feed contract: one append-only log of settlement records, read by consumer
groups, with at-least-once delivery and ids that make a consumer's writes idempotent.

Records arrive through :meth:`SettlementFeed.publish` from the settlement relay, which copies
them out of the tables' outboxes (see :mod:`ofc_service.store.base`). ``publish`` appends a
record only if its settlement id was not published before (for ``dedupe_ttl_seconds``,
:data:`DEFAULT_DEDUPE_TTL_SECONDS`), so a relay that crashed after appending and before
emptying the outbox, or two replicas relaying the same outbox at once, append it once.

Reading follows Redis Stream consumer groups: a group has one position in the log shared by
its consumers; :meth:`SettlementFeed.read_new` hands the next records to one consumer and
records them as *pending* for it until :meth:`SettlementFeed.acknowledge`;
:meth:`SettlementFeed.read_pending` gives a consumer back what it was handed and never
acknowledged (after a crash, a consumer restarted under the same name reads these first).
A group is created on first use at the start of the log, so a new group sees every record
still retained.

Retention: :meth:`SettlementFeed.trim` drops records older than a time that *every* group has
acknowledged; a record some group has not acknowledged is never dropped, and with no group
at all nothing is.

Stream ids are ``"<ms>-<seq>"`` in both implementations, ascending in the log.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from .base import InvalidIdError, check_id, format_event_id, parse_event_id

DEFAULT_RETENTION_SECONDS: Final = 30 * 24 * 3600
"""Records every group has acknowledged are trimmed once they are this old."""
DEDUPE_PER_RETENTION: Final = 3
"""A published settlement id is remembered (and a second publish ignored) this many times
as long as the feed keeps its record."""
DEFAULT_DEDUPE_TTL_SECONDS: Final = DEDUPE_PER_RETENTION * DEFAULT_RETENTION_SECONDS
MAX_READ_COUNT: Final = 1000

_NAME_RE: Final = re.compile(r"[A-Za-z0-9._:-]{1,64}")


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """One record in the log: where it is, which settlement it is, and its bytes."""

    stream_id: str
    settlement_id: str
    data: bytes


class SettlementFeed(Protocol):
    """The global settlement log; see the module docstring for the guarantees."""

    async def publish(self, settlement_id: str, data: bytes) -> str | None:
        """Append the record unless ``settlement_id`` was published before; the new stream
        id, or ``None`` for a duplicate (nothing appended)."""
        ...

    async def read_pending(
        self, group: str, consumer: str, *, after: str = "0", count: int = 100
    ) -> list[FeedEntry]:
        """Up to ``count`` records handed to ``consumer`` and not acknowledged, with stream
        ids after ``after``, oldest first (creates the group if it is missing)."""
        ...

    async def read_new(
        self, group: str, consumer: str, *, count: int = 100, block_s: float = 0.0
    ) -> list[FeedEntry]:
        """Up to ``count`` records no consumer of the group was handed yet, now pending for
        ``consumer``; waits up to ``block_s`` for one when there are none (``[]`` then)."""
        ...

    async def acknowledge(self, group: str, stream_ids: Sequence[str]) -> list[FeedEntry]:
        """Mark records done for the group; returns those that were pending (a repeated
        acknowledgement returns nothing; a record gone from the log has empty ids/data)."""
        ...

    async def stream_ids(self, settlement_ids: Sequence[str]) -> dict[str, str]:
        """The stream id of each settlement id published (and still remembered)."""
        ...

    async def trim(self, before_ms: int) -> int:
        """Drop records older than ``before_ms`` that every group has acknowledged; how
        many were dropped (0 when there is no group)."""
        ...

    async def ping(self) -> None:
        """Return once the feed's store answers; :class:`StoreUnavailableError` otherwise."""
        ...

    async def close(self) -> None:
        """Release connections; wakes blocked readers."""
        ...


def check_name(value: str, *, what: str) -> str:
    """A group or consumer name: 1-64 letters, digits, ``.``, ``_``, ``:`` or ``-``.

    >>> check_name("ledger-1", what="group")
    'ledger-1'
    >>> check_name("two words", what="group")
    Traceback (most recent call last):
    ...
    ofc_service.store.base.InvalidIdError: invalid group: 'two words'
    """
    if not isinstance(value, str) or not _NAME_RE.fullmatch(value):
        raise InvalidIdError(f"invalid {what}: {value!r}")
    return value


def check_settlement_id(value: str) -> str:
    """A settlement id: like a table id (no whitespace or braces), up to 200 characters."""
    return check_id(value, what="settlement id")


def check_stream_id(value: str) -> str:
    """A full stream id ``"<ms>-<seq>"`` in its canonical form.

    >>> check_stream_id("1700000000000-0")
    '1700000000000-0'
    >>> check_stream_id("17")
    Traceback (most recent call last):
    ...
    ofc_service.store.base.InvalidIdError: invalid stream id: '17'
    """
    try:
        canonical = "-" in value and format_event_id(*parse_event_id(value)) == value
    except InvalidIdError:
        canonical = False
    if not canonical:
        raise InvalidIdError(f"invalid stream id: {value!r}")
    return value


def check_count(count: int) -> int:
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_READ_COUNT:
        raise ValueError(f"count must be 1..{MAX_READ_COUNT}, not {count!r}")
    return count


__all__ = [
    "DEDUPE_PER_RETENTION",
    "DEFAULT_DEDUPE_TTL_SECONDS",
    "DEFAULT_RETENTION_SECONDS",
    "MAX_READ_COUNT",
    "FeedEntry",
    "SettlementFeed",
    "check_count",
    "check_name",
    "check_settlement_id",
    "check_stream_id",
]
