"""The table store contract: one Protocol, its value types and its error tree.

A store keeps, per table, an opaque ``state`` blob with a version, an append-only event log, a
bag of ``extra`` blobs (hand histories) and the table's next deadline; the engine owns every
byte format. One :meth:`TableStore.commit` is applied atomically and at most once:

1. if ``request_id`` was already recorded for the table, the first result comes back with
   ``replayed=True`` and nothing changes (checked *before* the version, so a client's retry
   that still carries the old version gets its first answer rather than ``ABORTED``) —
   provided the record's ``request_digest`` is the commit's: a record of another request
   raises :class:`RequestIdReusedError` and nothing changes either;
2. the table must exist (:class:`TableNotFoundError`) and be at ``expected_version``
   (:class:`StaleVersionError`);
3. the state, version + 1, the events, the extra blobs, the request record, the deadline and
   the refreshed time-to-live of every key of the table are written together.

Request ids and digests are opaque to the store. The table manager makes the id from the
caller's identity and the client's request id (so a record answers only the caller that
made it) and the digest from the request's own fields (so the same id with another request
is refused, not answered); the digest of a record written without one is ``""``.

Retry window: a request id is remembered for ``request_ttl_seconds`` after its commit
(:data:`DEFAULT_REQUEST_TTL_SECONDS`, 24 hours, unless the server is told a shorter one). A
retry inside the window gets the first result; after it, the retry is judged afresh (and,
carrying an old version, is refused as stale). A table whose log has segments (hands, see
``keep_segments``) keeps request records only in its newest :data:`RECORD_SEGMENTS`, the
current and the previous hand, however many its log keeps, so its records take a bounded
amount of memory however long it plays; a retry of an older move is judged afresh as well
(STALE_VERSION: the table has moved on; its current state is what GetTable returns). A
record committed with ``compact_response`` keeps its whole response only while its segment
is the newest: in the segments before, a marker (version made, digest) says it was applied
(:class:`AlreadyAppliedError`) and the table as it is now answers; with a ``request_lane``
(its caller), also once the same lane commits a newer such record in its segment. A table
lives ``ttl_seconds`` after its last write (:data:`DEFAULT_TABLE_TTL_SECONDS`).

Event ids are Redis stream ids (``"<ms>-<seq>"``) in both stores; ``"0"`` means "before the
first event". Each table keeps at least its last ``max_events`` events
(:data:`DEFAULT_MAX_EVENTS`). Reading after an id older than the first retained event raises
:class:`EventsTrimmedError` instead of silently skipping: the reader starts again from a
snapshot. :meth:`TableStore.load` returns ``last_event_id`` read together with the state, so
a snapshot plus the events after it has no gap and no duplicate.

Deadlines: each table stores its own next deadline (``StoredTable.deadline_ms``); a global
index only hints which tables to look at. :meth:`TableStore.due_deadlines` returns tables
whose own deadline has passed. It is a hint as well: the sweeper loads the table, runs the
engine's timeout move and commits it with ``expected_version`` (and, say, the request id
``f"timeout:{deadline_ms}"``), so whichever replica commits first wins and the others get
:class:`StaleVersionError` or the replayed result.

Outbox: a commit may carry ``outbox`` records (settlement records, keyed by their stable
settlement id) that must reach the global settlement feed. They are written into the table's
own outbox atomically with the commit, and survive the table's expiry; a global index only
hints which tables have an outbox (written before the commit, like the deadline index, since
a Redis Cluster cannot run one script across slots). :meth:`TableStore.pending_outboxes`
returns hinted tables whose outbox holds records and drops hints it finds empty once they
are older than :data:`OUTBOX_HINT_GRACE_MS` (younger ones may belong to a commit still in
flight); the settlement relay copies each record to the feed (which ignores ids it has
seen) and only then :meth:`TableStore.remove_from_outbox`, so a crash in between relays the
record again and the feed drops the duplicate. See docs/settlement-feed.md.

Create claims: :meth:`TableStore.claim_table_id` keeps, per create request (a ``claim_id``
made from the caller and its request id), the table id the first call chose, and the
create request's digest, for the retry window (the same claim with another digest raises
:class:`RequestIdReusedError`; a claim written without a digest accepts any). A create is
then "claim, then create if absent", each step idempotent, so a retry finds the same table
(and creates it if the first call stopped between the steps), while a request id reused
after the window gets a new table id: table ids are never reused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Protocol

DEFAULT_TABLE_TTL_SECONDS: Final = 7 * 24 * 3600
"""A table, its events and its extra blobs live this long after their last write."""
DEFAULT_REQUEST_TTL_SECONDS: Final = 24 * 3600
"""The retry window: how long a request id keeps returning its first result."""
DEFAULT_MAX_EVENTS: Final = 10_000
"""Each table keeps at least its last this-many events (Redis trims in whole stream nodes)."""
RECORD_SEGMENTS: Final = 2
"""Request records live in the current and the previous segment (hand) of a table's log,
however many segments the log keeps."""
MAX_EXTRA_NUMBER: Final = 10**16 - 1
"""The largest number an indexed extra key (``"<prefix>:<number>"``) may carry."""
NO_EXTRA: Final[Mapping[str, bytes]] = MappingProxyType({})
OUTBOX_HINT_GRACE_MS: Final = 30_000
"""An outbox hint found with an empty outbox is dropped only once it is this old: a younger
one may come from a commit whose script has not run yet (and replicas' clocks may differ)."""

_ID_RE: Final = re.compile(r"[^\s{}\x00-\x1f\x7f]{1,200}")
# ASCII digits only: ``\d`` and ``int`` also take other scripts' digits, Redis does not.
_EVENT_ID_RE: Final = re.compile(r"([0-9]{1,20})(?:-([0-9]{1,20}))?")
_INDEXED_EXTRA_RE: Final = re.compile(r"([^:\s]+):(0|[1-9][0-9]{0,15})")
MAX_EVENT_ID_NUMBER: Final = 2**64 - 1
"""Each half of an event id (a Redis stream id ``<ms>-<seq>``) is an unsigned 64-bit."""
_PREFIX_RE: Final = re.compile(r"[^:\s]+")
_DIGEST_RE: Final = re.compile(r"[0-9A-Za-z_-]{1,64}")


# --- errors -----------------------------------------------------------------------------------
class StoreError(Exception):
    """Base of every error a store raises on purpose; ``reason`` is stable (UPPER_SNAKE)."""

    reason = "STORE_ERROR"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidIdError(StoreError, ValueError):
    """A table id, request id, event id or extra key that the store cannot use."""

    reason = "INVALID_ID"


class TableNotFoundError(StoreError):
    reason = "TABLE_NOT_FOUND"

    def __init__(self, table_id: str) -> None:
        super().__init__(f"no table {table_id!r}")
        self.table_id = table_id


class TableExistsError(StoreError):
    reason = "TABLE_EXISTS"

    def __init__(self, table_id: str) -> None:
        super().__init__(f"table {table_id!r} already exists")
        self.table_id = table_id


class StaleVersionError(StoreError):
    """The table moved on: ``current_version`` is what the caller should reload and retry on."""

    reason = "STALE_VERSION"

    def __init__(self, table_id: str, *, expected_version: int, current_version: int) -> None:
        super().__init__(
            f"table {table_id!r} is at version {current_version}, not {expected_version}"
            if current_version != expected_version
            # the store lost a write and took another at that version: another table state
            else f"table {table_id!r} changed at version {current_version}: read it again"
        )
        self.table_id = table_id
        self.expected_version = expected_version
        self.current_version = current_version


class EventsTrimmedError(StoreError):
    """Events after ``after`` were trimmed from the log: resynchronise from a snapshot."""

    reason = "EVENTS_TRIMMED"

    def __init__(self, table_id: str, *, after: str, first_retained: str) -> None:
        super().__init__(
            f"table {table_id!r} keeps events from {first_retained}, not after {after}"
        )
        self.table_id = table_id
        self.after = after
        self.first_retained = first_retained


class EventIdAheadError(StoreError):
    """A resume point after the table's newest event: another table's id, a made-up one, or
    one of events a store failover lost. Waiting for events after it would skip those
    before it unseen, so the reader resynchronises from a snapshot, as for trimmed events
    (the same reason: clients already do)."""

    reason = EventsTrimmedError.reason

    def __init__(self, table_id: str, *, after: str, newest: str) -> None:
        super().__init__(
            f"table {table_id!r} has no event {after}: its newest is {newest} (an id of "
            "another table, or of events lost); start again from a snapshot"
        )
        self.table_id = table_id
        self.after = after
        self.newest = newest


class RequestIdReusedError(StoreError):
    """A request id already recorded for another request (its digest differs): the first
    request's answer is not this one's, and nothing was changed."""

    reason = "REQUEST_ID_REUSED"

    def __init__(
        self,
        message: str = "this request_id was used for a different request: "
        "a new request needs a new request_id",
    ) -> None:
        super().__init__(message)


class AlreadyAppliedError(StoreError):
    """The request was applied (its commit made ``version``), but only a marker of it is kept,
    not its response: its hand is no longer the table's current one. The table as it is now
    answers the retry; nothing was changed."""

    reason = "ALREADY_APPLIED"

    def __init__(self, table_id: str, *, version: int) -> None:
        super().__init__(
            f"this request was applied to table {table_id!r} (version {version}); its "
            "response is no longer kept"
        )
        self.table_id = table_id
        self.version = version


class StoreUnavailableError(StoreError):
    """The backing server could not be reached; the operation may or may not have happened
    (a retry with the same request id is safe)."""

    reason = "STORE_UNAVAILABLE"


# --- values -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class StoredTable:
    """A table as last committed; ``last_event_id`` is read atomically with ``state``."""

    table_id: str
    version: int
    state: bytes
    deadline_ms: int | None
    last_event_id: str


@dataclass(frozen=True, slots=True)
class StoredEvent:
    event_id: str
    data: bytes


@dataclass(frozen=True, slots=True)
class CommitResult:
    """What a commit did; a replay returns the first commit's ``version``, ``response`` and
    ``event_ids`` with ``replayed=True``."""

    version: int
    response: bytes
    replayed: bool
    event_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Commit:
    """One change of one table, as :meth:`TableStore.commit` applies it: all or nothing,
    at most once per ``request_id`` (see :meth:`TableStore.commit` for each field)."""

    table_id: str
    expected_version: int
    state: bytes
    request_id: str
    deadline_ms: int | None
    events: Sequence[bytes] = ()
    response: bytes = b""
    extra: Mapping[str, bytes] = field(default_factory=lambda: NO_EXTRA)
    outbox: Mapping[str, bytes] = field(default_factory=lambda: NO_EXTRA)
    keep_segments: int = 0
    log_by_segments: bool = True
    compact_response: bool = False
    extra_ttl_seconds: int = 0
    expected_state_sha1: str = ""
    request_digest: str = ""
    request_lane: str = ""
    ttl_seconds: int = DEFAULT_TABLE_TTL_SECONDS
    request_ttl_seconds: int = DEFAULT_REQUEST_TTL_SECONDS


@dataclass(frozen=True, slots=True)
class ExtraPage:
    """One page of a table's numbered extra blobs (``"<prefix>:<number>"``), ascending."""

    items: tuple[tuple[int, bytes], ...]
    next_start: int | None
    """Pass as ``start`` for the next page; ``None`` when this page reached the end."""
    total: int
    """How many numbered blobs the prefix has in all."""


# --- the contract -----------------------------------------------------------------------------
class TableStore(Protocol):
    """Where live tables are kept; see the module docstring for the guarantees."""

    async def create_table(
        self,
        table_id: str,
        state: bytes,
        *,
        events: Sequence[bytes] = (),
        ttl_seconds: int = DEFAULT_TABLE_TTL_SECONDS,
    ) -> CommitResult:
        """Create a table at version 1 (:class:`TableExistsError` if it exists)."""
        ...

    async def load(self, table_id: str) -> StoredTable:
        """The table as last committed (:class:`TableNotFoundError`)."""
        ...

    async def commit(self, commit: Commit) -> CommitResult:
        """Apply ``commit`` atomically and at most once per ``commit.request_id``.

        The commit's table must be at ``expected_version``; ``state``, ``events`` and
        ``response`` (kept under ``request_id`` for the retry window, ``request_ttl_seconds``)
        are written together, and every key of the table lives ``ttl_seconds`` from now.

        ``request_digest`` (1..64 characters without whitespace, or ``""``) is kept with the
        request record: a later commit with the same ``request_id`` is a replay only with
        the same digest, else :class:`RequestIdReusedError`.

        ``deadline_ms`` (epoch ms, normally still to come) replaces the table's deadline;
        ``None`` clears it. ``extra`` blobs are written (or overwritten) by key; keys of the
        form ``"<prefix>:<number>"`` are also listed by :meth:`list_extra`. ``outbox``
        records (id -> bytes) go to the table's outbox, which has no time-to-live.

        ``keep_segments`` > 0 (with events): this commit's events begin a new segment of the
        log (a new hand), and the log keeps only the newest ``keep_segments`` segments (this
        one included; the events before the first segment count as one), dropping what came
        before as trimming does (reads after a dropped id fail with
        :class:`EventsTrimmedError`). Finished hands live on in their histories.
        ``log_by_segments`` False: the log is not trimmed by segments, only by its cap
        (``max_events``). Either way the request records live in the newest
        :data:`RECORD_SEGMENTS` segments only.

        ``extra_ttl_seconds`` > 0: this commit's numbered extra blobs (``"<prefix>:<n>"``,
        hand histories) expire that long after this commit: each commit of the table removes
        those due (blob and listing), so a table that plays on keeps only its recent ones (a
        table that stops keeps them until it expires itself). 0: they live as long as the
        table.

        ``compact_response``: once a later segment begins (the commit's hand is no longer the
        current one), the record may keep only a marker (the version it made and its digest)
        instead of ``response``; a replay then raises :class:`AlreadyAppliedError` instead of
        answering (the caller answers from the table as it is now). Only for responses that
        hold nothing the table cannot show again (not a new seat token). Records made before
        the table's first segment are kept whole until they are dropped.

        ``request_lane`` (1..64 characters without whitespace, or ``""``: none), with
        ``compact_response``: the caller the record belongs to. A client retries only its
        latest request, so this commit's record supersedes the lane's earlier record that may
        shrink in the current segment: that one keeps only its marker from now on (its retry
        raises :class:`AlreadyAppliedError`), and a lane keeps at most one whole record that
        may shrink, its latest.

        ``expected_state_sha1`` (hex; empty: not checked): the commit also requires the stored
        state to have this SHA-1, else :class:`StaleVersionError` (even at the expected
        version). A caller that kept the state it last wrote can so commit without loading
        it first, safely even if the store lost writes and reached that version again.
        """
        ...

    async def confirm(self, table_id: str) -> None:
        """Return once what was read of the table before this call is held as a commit is
        before it is acknowledged (on a Redis with ``wait_replicas``: by that many
        replicas), else raise :class:`StoreUnavailableError`: a caller is shown nothing a
        failover may take back (a replayed answer, a view, events, a history, a settlement
        to relay). A no-op where commits wait for nothing."""
        ...

    async def get_response(
        self, table_id: str, request_id: str, *, request_digest: str | None = None
    ) -> bytes | None:
        """The recorded response of a request inside the retry window, else ``None``. With
        ``request_digest``, a record of another request raises :class:`RequestIdReusedError`
        (as :meth:`commit` does); ``None`` reads the record whatever its digest. A record
        shrunk to its marker (``compact_response``) raises :class:`AlreadyAppliedError`."""
        ...

    async def read_events(
        self, table_id: str, *, after: str = "0", limit: int = 1000
    ) -> list[StoredEvent]:
        """Up to ``limit`` events with ids after ``after``, oldest first."""
        ...

    async def wait_events(
        self,
        table_id: str,
        *,
        after: str,
        timeout_s: float,
        limit: int = 1000,
        on_table: Callable[[StoredTable], None] | None = None,
    ) -> list[StoredEvent]:
        """Like :meth:`read_events`, but waits up to ``timeout_s`` for at least one event
        (committed through any store instance on the same backend); ``[]`` on timeout.

        ``on_table``: when events came, called before returning with the table as
        :meth:`load` would read it then (read after the events, so at their version or a
        later one), in the same round trip: a replica following a table's log so learns of
        its state without loading it."""
        ...

    async def get_extra(self, table_id: str, key: str) -> bytes | None:
        """One extra blob; ``None`` if it was never written or the table expired."""
        ...

    async def list_extra(
        self, table_id: str, prefix: str, *, start: int = 0, count: int = 50
    ) -> ExtraPage:
        """Up to ``count`` blobs ``"<prefix>:<n>"`` with ``n >= start``, ascending ``n``."""
        ...

    async def due_deadlines(self, now_ms: int, *, limit: int = 100) -> list[tuple[str, int]]:
        """``(table_id, deadline_ms)`` of tables whose stored deadline is ``<= now_ms``,
        earliest first; also drops index entries found stale."""
        ...

    async def deadline_count(self) -> int:
        """How many tables have a deadline in the global index (all replicas' tables; stale
        hints included until a sweep drops them): a gauge of tables waiting for a move."""
        ...

    async def claim_timeout(self, table_id: str, version: int, *, ttl_ms: int) -> bool:
        """Whether this caller is the first to claim the timeout move of the table at
        ``version`` within ``ttl_ms``: every replica's sweeper finds the same due table, and
        only the claimant chooses the move (the commit's version check still decides which
        move lands; a claimant that dies leaves it to the others once the claim expires)."""
        ...

    async def pending_outboxes(
        self, now_ms: int, *, limit: int = 100, rescan: bool = False
    ) -> list[str]:
        """Up to ``limit`` tables whose outbox holds records, oldest hint first; drops hints
        of empty outboxes older than :data:`OUTBOX_HINT_GRACE_MS`. ``rescan``: first look
        for outboxes that lost their hint (slow: a scan of the key space; a backstop)."""
        ...

    async def read_outbox(self, table_id: str) -> dict[str, bytes]:
        """The table's outbox records, id -> bytes (also after the table expired)."""
        ...

    async def remove_from_outbox(self, table_id: str, record_ids: Sequence[str]) -> None:
        """Delete these records from the table's outbox (ids not there are ignored)."""
        ...

    async def ping(self) -> None:
        """Return once the store answers; :class:`StoreUnavailableError` when it cannot be
        reached (what the server's health checks ask, every second)."""
        ...

    async def close(self) -> None:
        """Release connections; the store is not used afterwards."""
        ...

    async def claim_table_id(
        self,
        claim_id: str,
        table_id: str,
        *,
        ttl_seconds: int = DEFAULT_REQUEST_TTL_SECONDS,
        request_digest: str = "",
    ) -> str:
        """The table id claimed under ``claim_id`` (a create request): ``table_id`` when no
        live claim exists (it is then kept for ``ttl_seconds``, with ``request_digest``),
        else the id claimed first. Atomic: racing calls with one ``claim_id`` all get the
        same id. A live claim whose digest is another non-empty one raises
        :class:`RequestIdReusedError`. The claim does not depend on the table (it lives in
        its own Redis Cluster slot); after ``ttl_seconds`` the ``claim_id`` is free again."""
        ...


# --- shared checks and formats ------------------------------------------------------------------
def check_id(value: str, *, what: str) -> str:
    """A table or request id: 1-200 characters, no whitespace, control characters or braces
    (braces would break the Redis Cluster hash tag).

    >>> check_id("t-1", what="table id")
    't-1'
    >>> check_id("a{b}", what="table id")
    Traceback (most recent call last):
    ...
    ofc_service.store.base.InvalidIdError: invalid table id: 'a{b}'
    """
    if not _ID_RE.fullmatch(value):
        raise InvalidIdError(f"invalid {what}: {value!r}")
    return value


def check_digest(value: str) -> str:
    """A request digest: ``""`` (none) or 1..64 characters without whitespace.

    >>> check_digest("9f86d081884c7d65"), check_digest("")
    ('9f86d081884c7d65', '')
    """
    if value and not _DIGEST_RE.fullmatch(value):
        raise InvalidIdError(f"invalid request digest: {value!r}")
    return value


def check_lane(value: str) -> str:
    """A request lane (the caller a record belongs to): ``""`` (none) or 1..64 characters
    without whitespace, as a digest.

    >>> check_lane("5d41402abc4b2a76"), check_lane("")
    ('5d41402abc4b2a76', '')
    """
    if value and not _DIGEST_RE.fullmatch(value):
        raise InvalidIdError(f"invalid request lane: {value!r}")
    return value


def check_at_least(value: int, minimum: int, *, what: str) -> int:
    """A whole number no smaller than ``minimum`` (a TTL, a version, a limit)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{what} must be a whole number >= {minimum}, not {value!r}")
    return value


def check_write(
    *,
    ttl_seconds: int,
    request_ttl_seconds: int,
    deadline_ms: int | None,
    extra: Mapping[str, bytes],
) -> list[tuple[str, bytes, tuple[str, int] | None]]:
    """Check what every write shares; the extra blobs with their list position, if any.

    >>> check_write(ttl_seconds=60, request_ttl_seconds=60, deadline_ms=None,
    ...             extra={"hand:3": b"h", "seed": b"s"})
    [('hand:3', b'h', ('hand', 3)), ('seed', b's', None)]
    """
    check_at_least(ttl_seconds, 1, what="ttl_seconds")
    check_at_least(request_ttl_seconds, 1, what="request_ttl_seconds")
    if deadline_ms is not None:
        check_at_least(deadline_ms, 0, what="deadline_ms")
    return [(check_extra_key(k), v, parse_indexed_extra(k)) for k, v in extra.items()]


def check_outbox(outbox: Mapping[str, bytes]) -> list[tuple[str, bytes]]:
    """Outbox records as (id, bytes) pairs; an id follows :func:`check_id`.

    >>> check_outbox({"t-1:3": b"{}"})
    [('t-1:3', b'{}')]
    """
    return [(check_id(k, what="outbox record id"), v) for k, v in outbox.items()]


def parse_event_id(event_id: str) -> tuple[int, int]:
    """An event id as a comparable pair; ``"0"`` (before everything) is ``(0, 0)``.

    >>> parse_event_id("1700000000000-3")
    (1700000000000, 3)
    >>> parse_event_id("0") < parse_event_id("1-0")
    True
    """
    match = _EVENT_ID_RE.fullmatch(event_id)
    if match is None:
        raise InvalidIdError(f"invalid event id: {event_id!r}")
    ms, seq = int(match[1]), int(match[2] or 0)
    if max(ms, seq) > MAX_EVENT_ID_NUMBER:
        raise InvalidIdError(f"invalid event id: {event_id!r} (each number is 0..2**64-1)")
    return ms, seq


def format_event_id(ms: int, seq: int) -> str:
    """The inverse of :func:`parse_event_id`.

    >>> format_event_id(*parse_event_id("1700000000000-3"))
    '1700000000000-3'
    """
    return f"{ms}-{seq}"


def parse_indexed_extra(key: str) -> tuple[str, int] | None:
    """``"hand:12"`` -> ``("hand", 12)``; ``None`` for keys :meth:`TableStore.list_extra`
    does not index (no numeric suffix, a colon in the prefix, leading zeros).

    >>> parse_indexed_extra("hand:12")
    ('hand', 12)
    >>> parse_indexed_extra("hand:012") is None, parse_indexed_extra("seed") is None
    (True, True)
    """
    match = _INDEXED_EXTRA_RE.fullmatch(key)
    return None if match is None else (match[1], int(match[2]))


def check_extra_key(key: str) -> str:
    """An extra key: 1-200 characters without whitespace or control characters."""
    if not key or len(key) > 200 or any(c.isspace() or not c.isprintable() for c in key):
        raise InvalidIdError(f"invalid extra key: {key!r}")
    return key


def check_prefix(prefix: str) -> str:
    """A :meth:`TableStore.list_extra` prefix: no colon and no whitespace."""
    if not _PREFIX_RE.fullmatch(prefix):
        raise InvalidIdError(f"invalid extra prefix: {prefix!r}")
    return prefix


def check_page(start: int, count: int) -> None:
    if not 0 <= start <= MAX_EXTRA_NUMBER or not 1 <= count <= 1000:
        raise ValueError(f"bad page: start={start!r} (0..{MAX_EXTRA_NUMBER}), count={count!r}")
