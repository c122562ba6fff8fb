"""The production store: Redis (one server or a Redis Cluster), one Lua script per commit, any
number of stateless replicas.

Key layout (``ofc`` is ``key_prefix``; every key of a table shares the hash tag ``{<table>}``,
so a table lives in one Redis Cluster slot and its script may touch all of them):

======================================  =======  ================================================
``ofc:{<table>}:state``                 hash     ``version``, ``state`` (engine bytes),
                                                 ``deadline`` (ms, absent = none), ``last_event``
                                                 (id, ``0`` = none), ``events_from`` (first
                                                 retained id once trimmed), ``trimmed``
                                                 (``<newest id dropped> <events_from>``,
                                                 when a hand's trim knows it), ``segments``
                                                 (first ids of the segments kept),
                                                 ``layout`` (``1``)
``ofc:{<table>}:events``                stream   one entry per event, field ``z`` = the
                                                 event packed (:func:`~.redis_io.pack_event`;
                                                 entries of earlier releases: field ``d``, the
                                                 bytes as they are, still read);
                                                 ``MAXLEN ~ max_events``, and a new
                                                 hand trims (``MINID``) all before the
                                                 oldest hand kept
``ofc:{<table>}:extra``                 hash     extra key -> bytes (``hand:12`` -> history)
``ofc:{<table>}:extra_index``           zset     ``<prefix>:<16-digit number>`` at score 0,
                                                 paged with ZRANGEBYLEX by :meth:`list_extra`
``ofc:{<table>}:extra_expiry``          zset     the same members written with
                                                 ``extra_ttl_seconds``, at the ms they expire:
                                                 each commit removes those due (blob, index,
                                                 expiry), at most 100 at a time
``ofc:{<table>}:replies:<event id>``    hash     the request records of one kept segment
                                                 (hand; named by its first event id):
                                                 request id -> ``<version> <event id>...
                                                 #<digest> @<expires ms> ~\n<response>``
                                                 (zlib); ``#<digest>`` only with one, ``~``:
                                                 may shrink; when the next hand begins a
                                                 ``~`` record keeps only that it was applied
                                                 (it moves to the hand's markers, below), as
                                                 a lane's (caller's) earlier ``~`` record of
                                                 the hand does once the lane commits a newer
                                                 one (``><lane>`` -> the request id of the
                                                 lane's latest ``~`` record; dropped when the
                                                 next hand begins); markers of the release
                                                 before (a field here, ``<version>
                                                 #<digest> @<ms>``) still answer, and move
                                                 when the next hand begins; a
                                                 hand dropped from the log deletes its hash;
                                                 ``@``: the end of its retry window (a
                                                 record past it is absent); the table's TTL
                                                 (or the window, if longer)
``ofc:{<table>}:markers:<event id>``    hash     the markers of the same hand: the first 24
                                                 hex digits of the SHA-1 of the request id
                                                 -> :class:`~.redis_io.Marker` (26 bytes: a
                                                 listpack however large the hand's answers);
                                                 deleted and expiring with the hand's records
``ofc:{<table>}:req:<request id>``      string   a record made while the table had no
                                                 segment yet (before its first hand, or with
                                                 ``keep_segments`` never set), and the
                                                 records of earlier releases: the same line
                                                 (without ``@``/``~``) and response (older
                                                 still: a hash of ``version``, ``events``,
                                                 ``response``); expires after
                                                 ``request_ttl_seconds``
``ofc:{<table>}:requests``              list     ``<event id> <request record key>`` per such
                                                 string record (the table's last event then):
                                                 a new hand (``keep_segments``) deletes those
                                                 made before the oldest hand kept; at most
                                                 1000 entries; the table's TTL
``ofc:{<table>}:outbox``                hash     settlement id -> record, until relayed to the
                                                 feed (no TTL: it outlives the table)
``ofc:{deadlines-<nn>}``                zset     member table id, score deadline ms: a hint;
                                                 16 shards (``nn`` = CRC-32 of the table id
                                                 mod 16, ``00`` .. ``15``), each its own slot
``ofc:{outbox-<nn>}``                   zset     member table id, score ms of the commit that
                                                 wrote its outbox: a hint, sharded the same
``ofc:{outbox-rescan}``                 string   held for an hour by the process that last
                                                 ran the hint rescan (``SET NX PX``)
``ofc:deadlines``, ``ofc:outbox``       zset     the unsharded hints of earlier releases:
                                                 still read, drained into the shards
``ofc:{create:<claim id>}:table``       string   the table id a create request claimed;
                                                 expires after the retry window; its own
                                                 slot, not the table's
``ofc:{create:<claim id>}:digest``      string   that request's digest, beside it (claims
                                                 written before digests have none)
======================================  =======  ================================================

Redis Cluster: every script touches one slot (a table's keys, a create claim's two keys, one
index shard). Nothing global is one key: the deadline and outbox hints are split into
:data:`~.redis_io.INDEX_SHARDS` shards, each with its own hash tag, so the ``ZADD`` every
commit with a deadline sends spreads over the cluster, and :meth:`RedisTableStore.due_deadlines`,
:meth:`~RedisTableStore.deadline_count` and :meth:`~RedisTableStore.pending_outboxes` read every
shard at each call, one pipeline per node (:meth:`~RedisTableStore._per_node`: on a cluster,
a node that does not answer within :data:`NODE_READ_S` is left out of that sweep, its tables
waiting for it, the others' not): each sweep of each replica covers each shard once (the
sweeper's and relay's compare-and-set make a shard swept by two replicas at once harmless, as
before). Upgrading from the unsharded ``ofc:deadlines`` / ``ofc:outbox`` needs no migration
step: they are read beside the shards; a due hint there is served, an early one moved into its
shard (``ZADD LT``: never later than a commit's own), a stale one dropped, so they empty within
one deadline of each table. The settlement feed stays one stream (``{settlements}``, see
:mod:`.feed_redis`): it takes one write per finished hand, not per move, and its consumers
rely on one order of stream ids.

The table's keys get the table's TTL again on every commit; a request record keeps its own
retry window (a string's TTL; a hand's hash lives at least as long), so a retry is answered
even if the table expired meanwhile.

The deadline index cannot share a table's slot, so a commit with a deadline sends a ``ZADD``
to the table's shard of the deadline index *before* its script in the same pipeline (one
round trip). On a cluster the shard may be on another node than the table, so the ``ZADD``
goes beside the commit, not in its pipeline, and the commit waits for it
:data:`HINT_WAIT_S` at most: a master that is slow, paused or failing over holds up its own
tables' moves, and those whose hints it holds by that much each. A table's hints from one
process are written one after another, sent before the script; one slow to land
(:data:`HINT_LATE_S`: another replica, which sees the move as its script runs, may have
written its own hint meanwhile), or whose commit failed, is lowered to the table's deadline,
if that is earlier, by the same process's next sweep (compare-and-set); one whose commit
lost, as below. A hint such a master
did not take is written again by the same process's next sweep (``ZADD LT``) or as its
store closes; if that process dies first, by the hourly rescan (below). The entry is
therefore only a hint, and it errs early, never late, but for the two exceptions that end
this list:

- a commit that then loses (stale, replayed, missing table) may have overwritten the hint;
  when the table's real deadline is earlier it lowers the hint back (compare-and-set);
- :meth:`RedisTableStore.due_deadlines` re-reads each due table's own deadline, returns only
  tables that are really due, and moves early hints to the real deadline or drops stale ones,
  each by compare-and-set on the score it saw. It only touches entries already due, while
  commits write deadlines still to come, so a commit racing with it changes the score and the
  compare-and-set leaves that entry alone (a commit writing a past deadline would have to hit
  the seen score to the millisecond to be lost);
- the first exception: a cluster's hint not written by a process that died first, as above
  (the table's next commit, or the rescan within the hour, writes it);
- the second: a commit cut off between the ``ZADD`` and its script (redis-py retries the
  whole pipeline a few times first) and never retried leaves a later hint than the table's
  unchanged deadline; that deadline then fires at the hint's time instead.

The outbox index is a hint the same way: the commit sends a ``ZADD`` to the table's shard of
the outbox index before its script in the same pipeline (on a cluster, beside it).
:meth:`RedisTableStore.pending_outboxes` drops a hint only when the outbox is empty and the
hint is older than :data:`~.base.OUTBOX_HINT_GRACE_MS`, by compare-and-set on its score; a
commit cut off between the two leaves a hint with an empty outbox (dropped later), never an
outbox without a hint, unless the ``ZADD`` alone failed: the process writes it again at its
next relay sweep, and the ``rescan`` backstop (``SCAN`` for the hashes ``ofc:{*}:outbox`` and
``ofc:{*}:state``, at most once an hour over all processes) restores the hints of a process
that died first: every non-empty outbox's, and every table's deadline hint no later than its
deadline (``ZADD LT``).

Scripts run by EVALSHA; after ``SCRIPT FLUSH`` or a server restart the ``NOSCRIPT`` reply
makes them load again (redis-py's :class:`~redis.commands.core.AsyncScript` does it for
direct calls; the pipelined commit does it here). Connection errors are retried by redis-py
(its retry policy, :func:`~.redis_io.retry`) and then raised as :class:`StoreUnavailableError`;
retrying a commit is safe because of the request record.

On one Redis server (not a cluster) the calls of every move, :meth:`RedisTableStore.load`,
the commit and a watcher's :meth:`~RedisTableStore.wait_events`, go over connections of the
store's own (:class:`~.redis_io.DirectCalls`:
made with the client's settings, retried by the same policy, one per call in flight) instead
of redis-py's command methods, whose per-call bookkeeping (metric recorders, the pool's lock
and events) is a third of a load's instructions and more of a commit's; on a cluster every call goes
through redis-py's :class:`~redis.asyncio.RedisCluster` (routing, ``MOVED``/``ASK``, slot
map refreshes).

Replication: Redis replicates asynchronously, so a commit acknowledged just before its
master dies may be missing on the promoted replica (the client's retry with the same request
id then applies it afresh, or, carrying an old version, is refused as stale). With
``wait_replicas`` (``OFC_REDIS_WAIT_REPLICAS``) the commit pipeline ends with a
confirmation on the same connection: a ``SET`` of a short-lived key in the table's slot,
then ``WAIT n timeout`` (``WAIT`` counts its connection's writes, and a replay of another
replica's commit writes nothing else). On a cluster the three go on one connection to the
master of the table's slot (:func:`~.redis_io.on_one_connection`), not through the cluster
client's pipeline, which sends a redirected command again alone on another connection and
routes a retried ``WAIT`` to any master: either way a ``WAIT`` answered for other writes. A
commit fewer replicas confirmed raises :class:`StoreUnavailableError` (applied or not, a
retry is safe), so an acknowledged move is on a replica; and
:meth:`RedisTableStore.confirm` sends the same confirmation before a table is shown, so no
one sees a write a failover may take back. A master left with no replica (its replica just
promoted) then acknowledges nothing until one follows it again: run two replicas per master
to keep writing through a failover.

``wait_events`` blocks in ``XREAD BLOCK`` on a second connection pool (one connection per
waiting watcher; on one server, the direct calls' connections made with that pool's
settings), so commits through any replica wake it; the events come back in that same
reply (one round trip per wake-up), with the trim mark and, when asked (``on_table``), the
table as :meth:`~RedisTableStore.load` reads it, all from one ``HMGET`` pipelined behind the
``XREAD``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

from redis import exceptions as redis_errors
from redis.asyncio import RedisCluster
from redis.asyncio.cluster import PipelineCommand
from redis.commands.core import AsyncScript, CoreCommands
from zlib_ng import zlib_ng

from .base import (
    DEFAULT_MAX_EVENTS,
    DEFAULT_REQUEST_TTL_SECONDS,
    DEFAULT_TABLE_TTL_SECONDS,
    OUTBOX_HINT_GRACE_MS,
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
    StoreError,
    StoreUnavailableError,
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
from .redis_io import (
    INDEX_SHARDS,
    NODE_ERRORS,
    Arg,
    Marker,
    RedisClient,
    SlotMapReader,
    blocking_read,
    confirmation,
    confirmed_count,
    connect,
    direct_calls,
    encode,
    index_shard,
    lua,
    marker_field,
    on_one_connection,
    pack_event,
    pack_response,
    ping,
    text,
    unavailable,
    unconfirmed,
    unpack_event,
    unpack_response,
)

LAYOUT: Final = b"1"
_T = TypeVar("_T")
_BLOCK_GRACE_S: Final = 5.0
_CREATE_RECORD_TTL_S: Final = 60  # long enough for redis-py's own retries of a create
_SCAN_COUNT: Final = 1000
_ZADDS_A_PIPELINE: Final = 10  # (of _SCAN_COUNT members each: the rescan's writes)
OUTBOX_RESCAN_MS: Final = 3_600_000
"""The hint rescan backstop runs at most once in this long, over all processes sharing a
store: it is needed only for a hint whose ``ZADD`` failed in a process that then died."""
_HINT_PAGES: Final = 10
HINT_WAIT_S: Final = 0.5
"""On a Redis Cluster, how long a commit waits for its hints (on other nodes than the table's)
once it is made: a node that takes no writes for a while costs the moves whose hints it holds
this much each, not the while (the hints are written later, :meth:`RedisTableStore._send_hints`)."""
HINT_LATE_S: Final = 0.02
"""A cluster's hint that took this long or more to land, after it was sent before its
script, is settled against the table's deadline by the next sweep (:meth:`RedisTableStore.
_write_hints`): a ZADD answered at once needs none."""
NODE_RETRY_S: Final = 1.0
"""On a Redis Cluster, how long the sweeps leave a node that failed to answer alone before
asking it again (:meth:`RedisTableStore._per_node`)."""
NODE_READ_S: Final = 0.5
"""On a Redis Cluster, how long a sweep (of deadlines, of outboxes) waits for a node's part of
a read of the hint shards or of the tables they name, once a sweep: a master that is paused,
hung or being failed over costs a sweep this much at most, and its tables (and those whose
hint shard it holds) wait for it, but the others go on (:meth:`RedisTableStore._per_node`)."""
_MOVED: Final = (redis_errors.MovedError, redis_errors.AskError, redis_errors.TryAgainError)


class _CommandArguments(CoreCommands):
    """A command's arguments and response options as redis-py's command methods write them
    (for a pipeline sent to one node of a cluster: :meth:`RedisTableStore._node_pipeline`)."""

    def execute_command(self, *args: Any, **options: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return args, options


_COMMANDS: Final = _CommandArguments()  # type: ignore[abstract]  # (_event_dispatcher: unused)
CLOSE_HINTS_S: Final = 0.5
"""How long closing the store may take to write the hints still in flight (well within the
server's limit on each step of a stop)."""

_REPLAYS: Final = (b"replay", b"replayed")

log = logging.getLogger("ofc.store.redis")


# What a load reads of a table's state hash (see _stored_table), what a read of events reads
# beside them (the version and the trim mark, see _check_retained), and what a wait for
# events reads after them: the trim mark and, with on_table, the rest of a load.
_TABLE_FIELDS: Final = ("version", "state", "deadline", "last_event", "layout")
_TRIM_FIELDS: Final = ("version", "events_from", "trimmed")
_WAIT_FIELDS: Final = (*_TRIM_FIELDS, *_TABLE_FIELDS[1:])


def _stored_table(table_id: str, fields: Sequence[Any]) -> StoredTable:
    """The table of a state hash's :data:`_TABLE_FIELDS` (:class:`TableNotFoundError`)."""
    version, state, deadline, last_event, layout = fields
    if version is None:
        raise TableNotFoundError(table_id)
    if layout != LAYOUT:
        raise StoreError(f"table {table_id!r} has an unknown layout {layout!r}")
    return StoredTable(
        table_id=table_id,
        version=int(version),
        state=_blob(state) or b"",
        deadline_ms=None if deadline is None else int(deadline),
        last_event_id=text(last_event or "0"),
    )


def _blob(value: bytes | str | None) -> bytes | None:
    """A reply as bytes: the store's clients never decode (this narrows the type)."""
    if isinstance(value, str):
        raise StoreError("the Redis client must be created with decode_responses=False")
    return value


def _reply(value: Any) -> bytes | None:
    """One reply of a pipeline run with ``raise_on_error=False``, as :func:`_blob`; an error
    reply is raised."""
    if isinstance(value, Exception):
        raise value
    return _blob(value)


def _check_retained(
    table_id: str,
    after: str,
    position: tuple[int, int],
    events_from: bytes | None,
    trimmed: bytes | None,
) -> None:
    """Reading after ``after`` must not skip events the log has trimmed away: those before
    ``events_from`` (the first id kept). ``trimmed`` (``<newest id dropped> <first id
    kept>``), while it pairs with ``events_from``: a reader that has seen the newest event
    dropped has missed nothing.

    >>> _check_retained("t", "5-0", (5, 0), b"7-0", b"5-0 7-0")  # saw the last one dropped
    >>> _check_retained("t", "4-0", (4, 0), b"7-0", b"5-0 7-0")
    Traceback (most recent call last):
    ofc_service.store.base.EventsTrimmedError: table 't' keeps events from 7-0, not after 4-0
    >>> _check_retained("t", "5-0", (5, 0), b"9-0", b"5-0 7-0")  # trimmed again since
    Traceback (most recent call last):
    ofc_service.store.base.EventsTrimmedError: table 't' keeps events from 9-0, not after 5-0
    """
    if events_from is None or position >= parse_event_id(text(events_from)):
        return
    if trimmed is not None:
        dropped, _, kept = text(trimmed).partition(" ")
        if kept == text(events_from) and position >= parse_event_id(dropped):
            return
    raise EventsTrimmedError(table_id, after=after, first_retained=text(events_from))


def _entries(read: Any) -> list[Any]:
    """The entries of a one-stream XREAD reply (RESP2: ``[[key, entries]]``, RESP3: a map)."""
    if not read:
        return []
    streams = read.values() if isinstance(read, dict) else (entries for _, entries in read)
    return [entry for entries in streams for entry in entries]


def _stored_events(entries: Sequence[Any]) -> list[StoredEvent]:
    """Stream entries as events: each entry's one field, packed (``z``) or not (``d``)."""
    events = []
    for event_id, fields in entries:
        # redis-py's reply: a dict of the fields; a direct call's: [field, value]
        ((field, value),) = fields.items() if isinstance(fields, dict) else (fields,)
        events.append(StoredEvent(text(event_id), unpack_event(field, value)))
    return events


def _recorded_digest(head: bytes) -> str:
    """The digest in a request record's first line (``#<digest>``), ``""`` for none."""
    marked = [token[1:] for token in head.split() if token.startswith(b"#")]
    return text(marked[0]) if marked else ""


def _packed(args: list[bytes | str | int]) -> bytes:
    """The commit script's arguments as its one argument: each as ``<byte length>:<bytes>``
    (see commit.lua). The client then packs one argument instead of some thirty, each of
    which costs it more than this does.

    >>> _packed([3, b"ab", "", "d:e"])
    b'1:32:ab0:3:d:e'
    """
    parts: list[bytes] = []
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        parts += (b"%d:" % len(data), data)
    return b"".join(parts)


def _answered(replies: list[Any]) -> list[Any]:
    """``replies`` (of :meth:`RedisTableStore._per_node`), unless every one is an error: then
    the first of those is raised, as the store being out."""
    if replies and all(isinstance(reply, BaseException) for reply in replies):
        raise replies[0]
    return replies


async def _pipelined(
    client: RedisClient, command: str, calls: Sequence[tuple[Any, ...]], options: Mapping[str, Any]
) -> list[Any]:
    """``command`` (a pipeline method) with each of ``calls``' arguments, in one pipeline of
    ``client``; the replies in order, a command's error in its place."""
    async with client.pipeline(transaction=False) as pipe:
        for call in calls:
            getattr(pipe, command)(*call, **options)
        return list(await pipe.execute(raise_on_error=False))


def _chunks(entries: Mapping[str, int], size: int) -> list[dict[str, int]]:
    """``entries`` in dicts of ``size`` at most, in order.

    >>> _chunks({"a": 1, "b": 2, "c": 3}, 2)
    [{'a': 1, 'b': 2}, {'c': 3}]
    """
    items = list(entries.items())
    return [dict(items[at : at + size]) for at in range(0, len(items), size)]


def _index_member(prefix: str, number: int) -> str:
    return f"{prefix}:{number:016d}"


@dataclasses.dataclass(slots=True, eq=False)
class _HintWrite:
    """A cluster commit's hints in flight (:meth:`RedisTableStore._send_hints`): after the
    table's write before it; ``settle``: its deadline hint is to be lowered to the table's
    deadline once written (its commit failed)."""

    table_id: str
    hints: dict[str, int]
    before: _HintWrite | None
    task: asyncio.Task[None] = dataclasses.field(init=False)
    settle: bool = False


class RedisTableStore:
    """:class:`~ofc_service.store.base.TableStore` on Redis (see the module docstring)."""

    def __init__(
        self,
        client: RedisClient,
        *,
        blocking: RedisClient | None = None,
        key_prefix: str = "ofc",
        max_events: int = DEFAULT_MAX_EVENTS,
        owns_clients: bool = False,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 500,
    ) -> None:
        """``client`` must not decode responses; ``blocking`` (default: ``client``) serves
        ``XREAD BLOCK`` and should have no socket timeout. On one server, the store's own
        calls (:class:`~.redis_io.DirectCalls`) keep to each client's pool's
        ``max_connections`` in use, the blocking reads apart from the rest (even on one
        client), so that waiting watchers never hold up a move. ``wait_replicas`` > 0: each commit
        is followed by ``WAIT wait_replicas wait_timeout_ms`` on its connection, and a write
        fewer replicas confirmed raises :class:`StoreUnavailableError` (see the module
        docstring)."""
        check_at_least(max_events, 1, what="max_events")
        self._wait = (
            check_at_least(wait_replicas, 0, what="wait_replicas"),
            check_at_least(wait_timeout_ms, 1, what="wait_timeout_ms"),
        )
        self._client = client
        # one server: the hot calls (load, commit) skip redis-py's per-call bookkeeping
        self._direct = direct_calls(client)
        self._blocking = blocking if blocking is not None else client
        self._direct_blocking = direct_calls(self._blocking)
        self._prefix = key_prefix
        self._max_events = max_events
        self._owns_clients = owns_clients
        # The global hint indexes, each in INDEX_SHARDS shards of their own hash tag (and
        # slot), so no one Redis Cluster node takes every commit's ZADD; the unsharded key
        # of releases before the shards is still read (and drained) beside them.
        self._deadline_shards = [f"{key_prefix}:{{deadlines-{i:02d}}}" for i in range(INDEX_SHARDS)]
        self._outbox_shards = [f"{key_prefix}:{{outbox-{i:02d}}}" for i in range(INDEX_SHARDS)]
        self._legacy_deadlines = f"{key_prefix}:deadlines"
        self._legacy_outboxes = f"{key_prefix}:outbox"
        self._rescan_lock = f"{key_prefix}:{{outbox-rescan}}"
        # tables whose outbox hint a commit of this process failed to write: written again
        # by the next pending_outboxes, so the rescan is needed only if this process dies first
        self._unhinted: dict[str, int] = {}  # table id -> failures (a later one is kept)
        # the same for deadline hints, written again by the next due_deadlines: table id ->
        # the earliest deadline not written (a hint errs early, never late)
        self._undeadlined: dict[str, int] = {}
        # deadline hints written that may be later than their table's deadline: table id ->
        # the scores written, lowered by the next due_deadlines (_settle_hints)
        self._unsettled: dict[str, set[int]] = {}
        # on a cluster, the hints in flight, sent beside their commits (_send_hints): all of
        # them, and each table's last (a table's are written one after another)
        self._hint_writes: set[_HintWrite] = set()
        # on a cluster, nodes that failed a sweep's read: name -> when to ask them again
        self._nodes_out: dict[str, float] = {}
        self._slot_map = SlotMapReader(client)  # read again after a node did not answer
        self._last_hint_write: dict[str, _HintWrite] = {}
        self._commit: AsyncScript = client.register_script(lua("commit.lua"))
        self._list_extra: AsyncScript = client.register_script(lua("list_extra.lua"))
        self._fix: AsyncScript = client.register_script(lua("fix_deadlines.lua"))
        self._claim: AsyncScript = client.register_script(lua("claim.lua"))

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        key_prefix: str = "ofc",
        max_events: int = DEFAULT_MAX_EVENTS,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 500,
    ) -> RedisTableStore:
        """A store with its own two connection pools (commands, and blocking reads) on one
        server or, for a ``redis+cluster://`` URL, a Redis Cluster (:func:`~.redis_io.connect`);
        calls cut by a dropped connection are retried :data:`~.redis_io.RETRIES` times, then
        reported."""

        return cls(
            connect(url, wait_timeout_ms=wait_timeout_ms),
            blocking=connect(url, blocking=True),
            key_prefix=key_prefix,
            max_events=max_events,
            owns_clients=True,
            wait_replicas=wait_replicas,
            wait_timeout_ms=wait_timeout_ms,
        )

    # --- keys ---------------------------------------------------------------------------------
    def _table_key(self, table_id: str, part: str) -> str:
        return f"{self._prefix}:{{{table_id}}}:{part}"

    def _table_keys(self, table_id: str) -> list[str]:
        """state, events, extra, extra_index: the keys that share the table's TTL."""
        check_id(table_id, what="table id")
        return [self._table_key(table_id, p) for p in ("state", "events", "extra", "extra_index")]

    def _deadline_index(self, table_id: str) -> str:
        return self._deadline_shards[index_shard(table_id)]

    def _outbox_index(self, table_id: str) -> str:
        return self._outbox_shards[index_shard(table_id)]

    def _hand_key(self, table_id: str, start: str) -> str:
        return self._table_key(table_id, f"replies:{start}")

    def _request_key(self, table_id: str, request_id: str) -> str:
        return self._table_key(table_id, f"req:{check_id(request_id, what='request id')}")

    # --- writes -------------------------------------------------------------------------------
    async def create_table(
        self,
        table_id: str,
        state: bytes,
        *,
        events: Sequence[bytes] = (),
        ttl_seconds: int = DEFAULT_TABLE_TTL_SECONDS,
    ) -> CommitResult:
        # A private request id makes redis-py's own retry of this call harmless: a retry
        # that finds the table already created by this very call is not "exists".
        result = await self._apply(
            Commit(
                table_id,
                expected_version=0,
                state=state,
                request_id=f"create:{secrets.token_hex(12)}",
                deadline_ms=None,
                events=events,
                ttl_seconds=ttl_seconds,
                request_ttl_seconds=_CREATE_RECORD_TTL_S,
            )
        )
        return CommitResult(result.version, b"", False, result.event_ids)

    async def commit(self, commit: Commit) -> CommitResult:
        check_at_least(commit.expected_version, 1, what="expected_version")
        return await self._apply(commit)

    async def _apply(self, commit: Commit) -> CommitResult:
        table_id, events = commit.table_id, commit.events
        keys = [
            *self._table_keys(table_id),
            self._request_key(table_id, commit.request_id),
            self._table_key(table_id, "outbox"),
        ]
        deadline_ms = commit.deadline_ms
        blobs = check_write(
            ttl_seconds=commit.ttl_seconds,
            request_ttl_seconds=commit.request_ttl_seconds,
            deadline_ms=deadline_ms,
            extra=commit.extra,
        )
        records = check_outbox(commit.outbox)
        args: list[bytes | str | int] = [
            commit.expected_version,
            commit.state,
            # a request record's bulk: kept whole only while its hand is the newest
            # (compact_response), a move's is stored as it is; the rest, kept for the whole
            # retry window, deflated
            pack_response(commit.response)
            if commit.compact_response
            else zlib_ng.compress(commit.response, 1),
            "" if deadline_ms is None else deadline_ms,
            commit.ttl_seconds,
            commit.request_ttl_seconds,
            self._max_events,
            len(events),
            len(blobs),
            *map(pack_event, events),
        ]
        for key, value, indexed in blobs:
            args += [key, value, "" if indexed is None else _index_member(*indexed)]
        args.append(len(records))
        for record_id, record in records:
            args += [record_id, record]
        args.append(check_at_least(commit.keep_segments, 0, what="keep_segments"))
        args.append("1" if commit.compact_response else "")
        args.append(check_at_least(commit.extra_ttl_seconds, 0, what="extra_ttl_seconds"))
        args.append(commit.expected_state_sha1)
        args.append(check_digest(commit.request_digest))
        args.append(check_lane(commit.request_lane))
        args.append("1" if commit.log_by_segments else "0")

        hints: dict[str, int] = {}
        if deadline_ms is not None:
            hints[self._deadline_index(table_id)] = deadline_ms
        if records:
            hints[self._outbox_index(table_id)] = time.time_ns() // 1_000_000
        with unavailable():
            reply = await self._run_commit(table_id, keys, [_packed(args)], hints)
            status = reply[0]
            if status == b"ok":
                return CommitResult(
                    int(reply[1]), commit.response, False, tuple(map(text, reply[4:]))
                )
            current = int(reply[2]) if len(reply) > 2 and reply[2] else None
            if deadline_ms is not None and current is not None and current < deadline_ms:
                # Our hint lost to a table whose deadline is earlier: lower it back.
                fix = self._fix(
                    keys=[self._deadline_index(table_id)], args=[table_id, deadline_ms, current]
                )
                if self._direct is not None:
                    await fix
                else:  # a cluster's: bounded, else the next sweep's (one not written yet too)
                    try:
                        await asyncio.wait_for(fix, HINT_WAIT_S)
                    except Exception:
                        self._settle_later(table_id, deadline_ms)
        if status in (b"replay", b"replayed"):
            first = reply[3] if status == b"replay" else unpack_response(reply[3])
            return CommitResult(int(reply[1]), first, True, tuple(map(text, reply[4:])))
        if status == b"applied":
            raise AlreadyAppliedError(table_id, version=int(reply[1]))
        if status == b"stale":
            raise StaleVersionError(
                table_id,
                expected_version=commit.expected_version,
                current_version=int(reply[1]),
            )
        if status == b"exists":
            raise TableExistsError(table_id)
        if status == b"reused":
            raise RequestIdReusedError()
        if status == b"missing":
            raise TableNotFoundError(table_id)
        raise StoreError(f"unexpected reply from the commit script: {reply!r}")

    async def _run_commit(
        self,
        table_id: str,
        keys: list[str],
        args: list[bytes | str | int],
        hints: Mapping[str, int],
    ) -> list[Any]:
        """The commit script, after a ``ZADD`` of the table to each hint index (score), and
        with ``wait_replicas``, a ``WAIT`` behind it on the same connection. On a cluster the
        hints go on their own, beside it (:meth:`_send_hints`)."""
        reply: list[Any]
        if self._direct is None and hints:
            write = self._send_hints(table_id, hints)
            await asyncio.sleep(0)  # the hints' task sends them now, before the script
            try:
                reply = await self._run_commit(table_id, keys, args, {})
            except BaseException:  # not made: its hint may be later than the table's deadline
                self._settle_when_written(write)
                raise
            if not write.task.done():  # (its reply from another node may come a little later)
                await asyncio.wait({write.task}, timeout=HINT_WAIT_S)  # not cancelled with this
            return reply
        if not hints and not self._wait[0] and self._direct is None:
            reply = await self._commit(keys=keys, args=args)
            return reply
        reply, confirmation = await self._pipelined_commit(table_id, keys, args, hints)
        if isinstance(reply, redis_errors.NoScriptError):
            await self._client.script_load(self._commit.script)  # every master of a cluster
            reply, confirmation = await self._pipelined_commit(table_id, keys, args, {})
        if isinstance(reply, Exception):
            raise reply
        wanted = self._wait[0]
        if wanted and reply[0] != b"ok" and reply[0] not in _REPLAYS:
            return reply  # nothing was written: nothing to confirm
        # A replay's answer was recorded by a commit of any replica, perhaps not yet
        # confirmed: the confirmation's own write, after the script, covers it too.
        if wanted and unconfirmed(confirmed := confirmed_count(*confirmation), wanted):
            log.warning(
                "commit not confirmed by replicas",
                extra={"fields": {"table_id": table_id, "confirmed": str(confirmed)}},
            )
            raise StoreUnavailableError(
                f"the commit to table {table_id!r} was not confirmed by {wanted} Redis "
                f"replica(s) within {self._wait[1]} ms ({confirmed!r}); it may be applied, "
                "and a retry with the same request id is safe"
            )
        return reply

    async def _pipelined_commit(
        self,
        table_id: str,
        keys: list[str],
        args: list[bytes | str | int],
        hints: Mapping[str, int],
    ) -> tuple[Any, Any]:
        """One pipeline: the hints' ``ZADD``, ``EVALSHA`` and (``wait_replicas``) the
        confirmation (:meth:`_confirmation`); the script's reply (or error) and the
        confirmation's replies (``None`` without one)."""
        try:
            if self._direct is not None:
                results = await self._direct.execute(
                    [
                        *(encode("ZADD", key, score, table_id) for key, score in hints.items()),
                        encode("EVALSHA", self._commit.sha, len(keys), *keys, *args),
                        *(encode(*c) for c in self._confirmation(table_id) if self._wait[0]),
                    ]
                )
            else:
                # A cluster comes here with wait_replicas only (the script alone goes as
                # _commit), and with no hints: they go beside it (_run_commit).
                results = await on_one_connection(
                    self._client,
                    keys[0],
                    [
                        ("EVALSHA", self._commit.sha, len(keys), *keys, *args),
                        *self._confirmation(table_id),
                    ],
                    self._slot_map,
                )
        except BaseException:
            # The script may have run (on a cluster, on another node than the hint's shard):
            # its outbox hint is written again at the next sweep (a spare one costs nothing).
            if self._outbox_index(table_id) in hints:
                self._hint_lost(table_id)
            raise
        return self._commit_results(table_id, hints, results)

    def _commit_results(
        self, table_id: str, hints: Mapping[str, int], results: list[Any]
    ) -> tuple[Any, Any]:
        added, results = results[: len(hints)], results[len(hints) :]
        for index_key, result in zip(hints, added, strict=True):
            if isinstance(result, Exception) and index_key == self._outbox_index(table_id):
                # The outbox record is written all the same: the hint is written again by
                # the next relay sweep here (the rescan backstop, if this process dies first).
                self._hint_lost(table_id)
                log.warning("outbox hint not written", extra={"fields": {"table_id": table_id}})
        return results[0], results[1:] if self._wait[0] else None

    def _confirmation(self, table_id: str) -> list[tuple[Arg, ...]]:
        """The table's :func:`~.redis_io.confirmation`, on a key of its slot: whatever the
        table held before (another replica's commit, a replay's record, what was read) is
        confirmed with it."""
        return confirmation(self._table_key(table_id, "confirm"), self._wait)

    async def confirm(self, table_id: str) -> None:
        wanted = self._wait[0]
        if not wanted:
            return
        check_id(table_id, what="table id")
        with unavailable():
            if self._direct is not None:
                confirmation = [encode(*c) for c in self._confirmation(table_id)]
                replies = await self._direct.execute(confirmation)
            else:
                replies = await on_one_connection(
                    self._client,
                    self._table_key(table_id, "confirm"),
                    self._confirmation(table_id),
                    self._slot_map,
                )
            confirmed = confirmed_count(*replies)
        if unconfirmed(confirmed, wanted):
            raise StoreUnavailableError(
                f"table {table_id!r} holds writes not confirmed by {wanted} Redis replica(s) "
                f"within {self._wait[1]} ms ({confirmed!r}): not shown until they are"
            )

    # --- reads --------------------------------------------------------------------------------
    async def load(self, table_id: str) -> StoredTable:
        state_key = self._table_keys(table_id)[0]
        with unavailable():
            if self._direct is not None:
                fields = await self._direct.call("HMGET", state_key, *_TABLE_FIELDS)
            else:
                fields = await self._client.hmget(state_key, _TABLE_FIELDS)
        return _stored_table(table_id, fields)

    async def get_response(
        self, table_id: str, request_id: str, *, request_digest: str | None = None
    ) -> bytes | None:
        key = self._request_key(table_id, request_id)
        if request_digest is not None:
            check_digest(request_digest)
        with unavailable():
            segments = _blob(await self._client.hget(self._table_keys(table_id)[0], "segments"))
            # Then every place the record may be, in one round trip: each kept hand's records
            # and markers, the newest hand first, and the key of a record kept on its own.
            starts = list(reversed(text(segments or b"").split()))[:RECORD_SEGMENTS]
            field = marker_field(request_id)
            async with self._client.pipeline(transaction=False) as pipe:
                for start in starts:
                    pipe.hget(self._hand_key(table_id, start), request_id)
                    pipe.hget(self._table_key(table_id, f"markers:{start}"), field)
                pipe.get(key)
                *kept, alone = await pipe.execute(raise_on_error=False)
            record = packed = None
            for found, marker in zip(kept[::2], kept[1::2], strict=True):  # newest hand first
                record = _reply(found)
                if record is not None:
                    break
                packed = _reply(marker)
                if packed is not None:
                    break
            if packed is not None:
                marker = Marker.from_bytes(packed)
                if marker.expires_ms <= time.time_ns() // 1_000_000:
                    return None  # past its retry window
                if request_digest is not None and not marker.made_by(request_digest):
                    raise RequestIdReusedError()
                raise AlreadyAppliedError(table_id, version=marker.version)
            if record is None:
                if isinstance(alone, redis_errors.ResponseError):
                    # WRONGTYPE: a record of the older hash layout
                    old = _blob(await self._client.hget(key, "response"))
                    if old is not None and request_digest:
                        raise RequestIdReusedError() from None
                    return old
                record = _reply(alone)
        if record is None:
            return None
        head, _, response = record.partition(b"\n")
        expires = [int(token[1:]) for token in head.split() if token.startswith(b"@")]
        if expires and expires[0] <= time.time_ns() // 1_000_000:
            return None  # past its retry window (its hand's hash outlives it)
        if request_digest is not None and _recorded_digest(head) != request_digest:
            raise RequestIdReusedError()
        if b"\n" not in record:  # a marker: applied, its response no longer kept
            raise AlreadyAppliedError(table_id, version=int(head.split()[0]))
        return unpack_response(response)

    async def read_events(
        self, table_id: str, *, after: str = "0", limit: int = 1000
    ) -> list[StoredEvent]:
        state_key, events_key = self._table_keys(table_id)[:2]
        position = parse_event_id(after)
        check_at_least(limit, 1, what="limit")
        start = "-" if position == (0, 0) else "(" + format_event_id(*position)
        with unavailable():
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.hmget(state_key, _TRIM_FIELDS)
                pipe.xrange(events_key, start, "+", count=limit)
                (version, events_from, trimmed), entries = await pipe.execute()
        if version is None:
            raise TableNotFoundError(table_id)
        _check_retained(table_id, after, position, events_from, trimmed)
        return _stored_events(entries)

    async def wait_events(
        self,
        table_id: str,
        *,
        after: str,
        timeout_s: float,
        limit: int = 1000,
        on_table: Callable[[StoredTable], None] | None = None,
    ) -> list[StoredEvent]:
        # One round trip: XREAD (blocking until an event comes, or not at all when events
        # are there already) and, pipelined behind it, the trim mark (with ``on_table``, in
        # the same HMGET, the table as load reads it). The mark is read after the events, so
        # a log trimmed past ``after`` before they were read is always seen.
        state_key, events_key = self._table_keys(table_id)[:2]
        position = parse_event_id(after)
        check_at_least(limit, 1, what="limit")
        block_ms = round(timeout_s * 1000) if timeout_s > 0 else None
        with unavailable():
            fields = _WAIT_FIELDS if on_table else _TRIM_FIELDS
            block = ("BLOCK", max(1, block_ms)) if block_ms is not None else ()
            bound_s = max(0.0, timeout_s) + _BLOCK_GRACE_S
            if self._direct_blocking is not None:  # one server
                async with asyncio.timeout(bound_s):
                    replies = await self._direct_blocking.execute(
                        [
                            encode("XREAD", "COUNT", limit, *block, "STREAMS", events_key,
                                   format_event_id(*position)),
                            encode("HMGET", state_key, *fields),
                        ]
                    )  # fmt: skip
                for reply in replies:
                    if isinstance(reply, redis_errors.ResponseError):
                        raise reply
                read, (version, events_from, trimmed, *table) = replies
            else:  # a cluster: past the bound, its slot map is read again
                async with (
                    blocking_read(self._blocking, events_key, bound_s),
                    self._blocking.pipeline(transaction=False) as pipe,
                ):
                    pipe.xread(
                        {events_key: format_event_id(*position)},
                        count=limit,
                        block=max(1, block_ms) if block_ms is not None else None,
                    )
                    pipe.hmget(state_key, fields)
                    read, (version, events_from, trimmed, *table) = await pipe.execute()
        if version is None:
            raise TableNotFoundError(table_id)
        _check_retained(table_id, after, position, events_from, trimmed)
        events = _stored_events(_entries(read))
        if on_table is not None and events:
            on_table(_stored_table(table_id, [version, *table]))
        return events

    async def get_extra(self, table_id: str, key: str) -> bytes | None:
        extra_key = self._table_keys(table_id)[2]
        with unavailable():
            return _blob(await self._client.hget(extra_key, check_extra_key(key)))

    async def list_extra(
        self, table_id: str, prefix: str, *, start: int = 0, count: int = 50
    ) -> ExtraPage:
        extra_key, index_key = self._table_keys(table_id)[2:]
        check_prefix(prefix)
        check_page(start, count)
        with unavailable():
            reply: list[Any] = await self._list_extra(
                keys=[extra_key, index_key], args=[prefix, f"{start:016d}", count]
            )
        numbers = [int(n) for n in reply[1::2]]
        items = tuple(zip(numbers[:count], reply[2::2], strict=False))
        next_start = numbers[count] if len(numbers) > count else None
        return ExtraPage(items=items, next_start=next_start, total=int(reply[0]))

    # --- deadlines ----------------------------------------------------------------------------
    async def due_deadlines(self, now_ms: int, *, limit: int = 100) -> list[tuple[str, int]]:
        check_at_least(limit, 1, what="limit")
        indexes = [*self._deadline_shards, self._legacy_deadlines]
        away: set[str] = set()  # cluster nodes that failed this sweep: not asked again in it
        if self._undeadlined:
            await self._deadlines_again(away)
        if self._unsettled:
            await self._settle_hints(away)
        with unavailable():
            # Every shard at once (one round trip per cluster node): each sweep covers each
            # shard once, whichever replica runs it; on a cluster, a node out is left out.
            pages = _answered(
                await self._per_node(
                    "zrangebyscore",
                    [(key, "-inf", now_ms) for key in indexes],
                    away=away,
                    start=0,
                    num=limit,
                    withscores=True,
                )
            )
            hints = [
                (key, text(member), int(score))
                for key, page in zip(indexes, pages, strict=True)
                if not isinstance(page, BaseException)
                for member, score in page
            ]
            if not hints:
                return []
            table_ids = list(dict.fromkeys(table_id for _, table_id, _ in hints))
            stored = _answered(
                await self._per_node(
                    "hget",
                    [(self._table_key(t, "state"), "deadline") for t in table_ids],
                    away=away,
                )
            )
            deadlines = {
                t: None if d is None else int(d)
                for t, d in zip(table_ids, stored, strict=True)
                if not isinstance(d, BaseException)  # its node out: its hints wait
            }
            due: dict[str, int] = {}
            fixes: dict[str, list[str | int]] = {}
            moved: dict[str, dict[str, int]] = {}
            legacy: list[tuple[str, int, str | None]] = []  # (table, hint, its shard)
            for key, table_id, hint in hints:
                if table_id not in deadlines:
                    continue
                deadline = deadlines[table_id]
                if deadline is not None and deadline <= now_ms:
                    due[table_id] = deadline
                elif key == self._legacy_deadlines:  # an older release's hint: into its shard
                    shard = None if deadline is None else self._deadline_index(table_id)
                    if shard is not None and deadline is not None:
                        moved.setdefault(shard, {})[table_id] = deadline
                    legacy.append((table_id, hint, shard))
                elif deadline != hint:  # early (move it) or stale (drop it)
                    fixes.setdefault(key, []).extend(
                        [table_id, hint, "" if deadline is None else deadline]
                    )
            if moved:  # LT: a hint a commit wrote meanwhile is never made later
                written = await self._per_node("zadd", list(moved.items()), away=away, lt=True)
                failed = {
                    k for k, r in zip(moved, written, strict=True) if isinstance(r, BaseException)
                }
            else:
                failed = set()
            for table_id, hint, shard in legacy:  # dropped once in its shard, not before
                if shard not in failed:
                    fixes.setdefault(self._legacy_deadlines, []).extend([table_id, hint, ""])
            await self._fix_hints(fixes, away)
        return sorted(due.items(), key=lambda item: (item[1], item[0]))[:limit]

    async def deadline_count(self) -> int:
        keys = [*self._deadline_shards, self._legacy_deadlines]
        with unavailable():
            counts = await self._per_node("zcard", [(key,) for key in keys])
            for count in counts:
                if isinstance(count, BaseException):
                    raise count  # a count of some shards only would be wrong
        return sum(counts)

    async def _per_node(
        self,
        command: str,
        calls: Sequence[tuple[Any, ...]],
        *,
        away: set[str] | None = None,
        **options: Any,
    ) -> list[Any]:
        """``command`` (a pipeline method) with each of ``calls``' arguments, whose first is
        its key; their replies in that order, a command's error in its place. One server:
        one pipeline (a connection error raised). A Redis Cluster: one pipeline per node, all
        at once, each for :data:`NODE_READ_S` at most; the calls to a node that failed, or did
        not answer in that time, get its error (a :class:`TimeoutError`) in their place: a
        sweep goes on without them rather than wait for a master that is away. A node in
        ``away`` (one that failed earlier in the same sweep) is not asked again; one that
        fails now is added to it, so that a sweep waits for a master once at most."""
        cluster = self._client
        if not isinstance(cluster, RedisCluster):
            return await _pipelined(cluster, command, calls, options)
        away = set() if away is None else away
        nodes: dict[str, list[int]] = {}
        for i, (key, *_) in enumerate(calls):
            nodes.setdefault(self._node_of(key), []).append(i)
        outcomes = await asyncio.gather(
            *(
                self._on_node(
                    name,
                    away,
                    functools.partial(
                        self._node_pipeline, cluster, name, command, calls, indexes, options
                    ),
                )
                for name, indexes in nodes.items()
            ),
            return_exceptions=True,
        )
        replies: list[Any] = [None] * len(calls)
        for indexes, outcome in zip(nodes.values(), outcomes, strict=True):
            if isinstance(outcome, BaseException) and not isinstance(outcome, NODE_ERRORS):
                raise outcome  # (a cancellation, or a bug: not a node away)
            for n, i in enumerate(indexes):
                replies[i] = outcome if isinstance(outcome, BaseException) else outcome[n]
        return replies

    async def _on_node(self, name: str, away: set[str], work: Callable[[], Awaitable[_T]]) -> _T:
        """``work()``, a call to the cluster node ``name``, for :data:`NODE_READ_S` at most. A
        node in ``away`` (it failed earlier in the same sweep) or failed in the last
        :data:`NODE_RETRY_S` is not asked (TimeoutError); one that fails now is added to both,
        and the client reads the slot map again (:class:`~.redis_io.SlotMapReader`: these
        reads go to nodes directly, and redis-py reads its map again only after its own
        commands meet a connection error or a 5 s socket timeout, which the bound cuts short:
        a server doing nothing else kept asking a hung master after its failover)."""
        if name in away or self._nodes_out.get(name, 0.0) > time.monotonic():
            raise TimeoutError(f"redis node {name} did not answer lately")
        try:
            async with asyncio.timeout(NODE_READ_S):
                return await work()
        except NODE_ERRORS:
            if name:
                away.add(name)
                self._nodes_out[name] = time.monotonic() + NODE_RETRY_S
                self._slot_map.soon(name)
            raise

    async def _node_pipeline(
        self,
        cluster: RedisCluster,
        name: str,
        command: str,
        calls: Sequence[tuple[Any, ...]],
        indexes: list[int],
        options: Mapping[str, Any],
    ) -> list[Any]:
        """The calls at ``indexes`` in one pipeline on the node ``name``, without the cluster
        client's pipeline: on a connection error that one closes every node's connections
        (``aclose``) and retries after 0.25 s, so one master refusing connections failed
        every node's reads, and every sweep, until its failover. A reply that the slot has
        moved is sent again through the client's own routing (which learns the new map)."""
        node = cluster.get_node(node_name=name) if name else None
        if node is None:  # (no master known for the slot: the client finds one)
            return await _pipelined(cluster, command, [calls[i] for i in indexes], options)
        queued = [
            PipelineCommand(n, *args, **kwargs)
            for n, i in enumerate(indexes)
            for args, kwargs in [getattr(_COMMANDS, command)(*calls[i], **options)]
        ]
        await node.execute_pipeline(queued)
        moved = [c for c in queued if isinstance(c.result, _MOVED)]

        async def again(queued_command: PipelineCommand) -> None:
            try:
                queued_command.result = await cluster.execute_command(
                    *queued_command.args, **queued_command.kwargs
                )
            except NODE_ERRORS as error:  # (a slot with no master mid-failover among them)
                queued_command.result = error

        await asyncio.gather(*map(again, moved))
        return [queued_command.result for queued_command in queued]

    def _node_of(self, key: str) -> str:
        """On a cluster, the name of the master of ``key``'s slot as the client knows it
        ("" when it knows none: the pipeline finds out)."""
        cluster = self._client
        if not isinstance(cluster, RedisCluster):
            return ""
        try:
            node = cluster.get_node_from_key(key)
        except redis_errors.RedisClusterException:  # a slot with no master
            return ""
        return "" if node is None else str(node.name)

    async def _fix_hints(
        self, fixes: Mapping[str, list[str | int]], away: set[str] | None = None
    ) -> set[str]:
        """The hint shards' compare-and-set fixes (``fix_deadlines.lua``), one call a shard;
        the shards whose fixes were not made. On a cluster, a shard's node away (in ``away``,
        or failing now: then added to it) leaves its fixes to the next sweep; on one server,
        an error is raised."""
        away = set() if away is None else away

        async def fix(key: str, args: list[str | int]) -> bool:
            if self._direct is not None:
                await self._fix(keys=[key], args=args)
                return True
            try:
                await self._on_node(
                    self._node_of(key), away, lambda: self._fix(keys=[key], args=args)
                )
            except NODE_ERRORS:
                return False
            return True

        made = await asyncio.gather(*(fix(k, a) for k, a in fixes.items()))
        return {key for key, done in zip(fixes, made, strict=True) if not done}

    async def claim_timeout(self, table_id: str, version: int, *, ttl_ms: int) -> bool:
        check_id(table_id, what="table id")
        check_at_least(ttl_ms, 1, what="ttl_ms")
        key = self._table_key(table_id, f"timeout:{version}")  # the table's slot
        with unavailable():
            claimed = await self._client.set(key, b"", nx=True, px=ttl_ms)
        return bool(claimed)

    # --- outboxes -----------------------------------------------------------------------------
    async def pending_outboxes(
        self, now_ms: int, *, limit: int = 100, rescan: bool = False
    ) -> list[str]:
        check_at_least(limit, 1, what="limit")
        pending: dict[str, float] = {}
        drops: dict[str, list[str | int]] = {}
        away: set[str] = set()  # cluster nodes that failed this sweep: not asked again in it
        with unavailable():
            if self._unhinted:
                await self._hint_again(away)
            if rescan:
                await self._rescan_hints()
            # Hints of outboxes already relayed wait out the grace period at the front of
            # each shard: look past them (at most _HINT_PAGES pages) for outboxes with records.
            starts = dict.fromkeys([*self._outbox_shards, self._legacy_outboxes], 0)
            for page_number in range(_HINT_PAGES):
                pages = await self._per_node(
                    "zrange",
                    [(key, start, start + limit - 1) for key, start in starts.items()],
                    away=away,
                    withscores=True,
                )
                if page_number == 0:
                    _answered(pages)
                hints = [
                    (key, text(member), score)
                    for key, page in zip(starts, pages, strict=True)
                    if not isinstance(page, BaseException)  # a node out: its shards wait
                    for member, score in page
                ]
                sizes: list[Any] = []
                if hints:
                    sizes = await self._per_node(
                        "hlen",
                        [(self._table_key(table_id, "outbox"),) for _, table_id, _ in hints],
                        away=away,
                    )
                for (key, table_id, score), size in zip(hints, sizes, strict=True):
                    if isinstance(size, BaseException):
                        continue  # the table's node out: next sweep
                    if size:
                        pending[table_id] = min(score, pending.get(table_id, score))
                    elif score <= now_ms - OUTBOX_HINT_GRACE_MS:
                        drops.setdefault(key, []).extend([table_id, int(score), ""])
                starts = {
                    key: start + limit
                    for (key, start), page in zip(starts.items(), pages, strict=True)
                    if not isinstance(page, BaseException) and len(page) == limit
                }
                if not starts or len(pending) >= limit:
                    break
            await self._fix_hints(drops, away)
        oldest_first = sorted(pending.items(), key=lambda item: (item[1], item[0]))
        return [table_id for table_id, _ in oldest_first[:limit]]

    def _hint_lost(self, table_id: str) -> None:
        self._unhinted[table_id] = self._unhinted.get(table_id, 0) + 1

    def _send_hints(self, table_id: str, hints: Mapping[str, int]) -> _HintWrite:
        """A cluster commit's hints, sent beside its script, not with it: the hint shards
        may live on other nodes than the table, and a node that is slow, paused or failing
        over must not hold up other nodes' moves. A commit waits for them
        :data:`HINT_WAIT_S` at most, so that a hint is normally in place once its move is
        answered; one not written (an error, a timeout) is written again by this process's
        next sweep (:meth:`due_deadlines`, :meth:`pending_outboxes`), or as the store
        closes. If the process dies first, the hourly rescan restores both kinds."""
        write = _HintWrite(table_id, dict(hints), self._last_hint_write.get(table_id))
        write.task = asyncio.ensure_future(self._write_hints(write))
        self._hint_writes.add(write)
        self._last_hint_write[table_id] = write

        def forget(_: asyncio.Task[None]) -> None:
            self._hint_writes.discard(write)
            if self._last_hint_write.get(table_id) is write:
                del self._last_hint_write[table_id]

        write.task.add_done_callback(forget)
        return write

    async def _write_hints(self, write: _HintWrite) -> None:
        """Written after the table's hints still in flight, so that an earlier commit's
        deadline never lands over a later one's from here; a deadline hint that lands
        :data:`HINT_LATE_S` or more after it was sent, or whose commit failed, is settled by
        the next sweep (:meth:`_settle_hints`)."""
        table_id, hints = write.table_id, write.hints
        results: list[Any]
        sent, queued = time.monotonic(), False
        try:
            if write.before is not None:
                queued = not write.before.task.done()  # (then sent after the script)
                await asyncio.wait({write.before.task})
                write.before = None  # no chain of finished writes kept alive
            if len(hints) == 1:  # a move's deadline: one command, cheaper than a pipeline
                ((index_key, score),) = hints.items()
                results = [await self._client.zadd(index_key, {table_id: score})]
            else:
                async with self._client.pipeline(transaction=False) as pipe:
                    for index_key, score in hints.items():
                        pipe.zadd(index_key, {table_id: score})
                    results = await pipe.execute(raise_on_error=False)
        except asyncio.CancelledError as cancelled:  # the store closing: said, not lost
            self._hints_not_written(table_id, hints, [cancelled] * len(hints))
            raise
        except Exception as error:  # whatever it was, the next sweep writes them again
            results = [error] * len(hints)
        self._hints_not_written(table_id, hints, results)
        # Slow to land (a reconnect, a retry, a paused node): another replica, which sees the
        # move as its script runs, may have written a later commit's hint that this one then
        # landed over. (A ZADD sent before the script and answered at once cannot be: that
        # replica's hint needs the script's event, then its own commit.)
        if write.settle or queued or time.monotonic() - sent >= HINT_LATE_S:
            self._settle_later(table_id, hints.get(self._deadline_index(table_id)))

    def _hints_not_written(
        self, table_id: str, hints: Mapping[str, int], results: Sequence[Any]
    ) -> None:
        """Keep the hints whose result is an error for the next sweep to write again."""
        for (index_key, score), result in zip(hints.items(), results, strict=True):
            if not isinstance(result, BaseException):
                continue
            if index_key == self._outbox_index(table_id):
                self._hint_lost(table_id)
            else:
                self._undeadlined[table_id] = min(score, self._undeadlined.get(table_id, score))
            log.warning(
                "hint not written",
                extra={"fields": {"table_id": table_id, "index": index_key, "error": repr(result)}},
            )

    def _settle_when_written(self, write: _HintWrite) -> None:
        """Once ``write``'s hints are written, have the next sweep settle its deadline hint."""
        write.settle = True
        if write.task.done():  # (else _write_hints does, as it ends)
            self._settle_later(
                write.table_id, write.hints.get(self._deadline_index(write.table_id))
            )

    def _settle_later(self, table_id: str, written: int | None) -> None:
        """Have the next sweep lower the table's deadline hint ``written`` (None: none) to the
        table's deadline if that is earlier (:meth:`_settle_hints`)."""
        if written is not None:
            self._unsettled.setdefault(table_id, set()).add(written)

    async def _settle_hints(self, away: set[str] | None = None) -> None:
        """Lower each deadline hint in :attr:`_unsettled` to its table's deadline if that is
        earlier (compare-and-set on the score written: a hint written since is left alone);
        those not reached, or whose fix was not made, are tried again next time."""
        seen = {table_id: set(scores) for table_id, scores in self._unsettled.items()}
        try:
            stored = await self._per_node(
                "hget",
                [(self._table_key(table_id, "state"), "deadline") for table_id in seen],
                away=away,
            )
            fixes: dict[str, list[str | int]] = {}
            read: dict[str, set[int]] = {}
            for (table_id, scores), deadline in zip(seen.items(), stored, strict=True):
                if isinstance(deadline, BaseException):
                    continue
                if deadline is not None:
                    for written in sorted(scores):
                        if int(deadline) < written:
                            fixes.setdefault(self._deadline_index(table_id), []).extend(
                                [table_id, written, int(deadline)]
                            )
                read[table_id] = scores
            failed = await self._fix_hints(fixes, away)
        except (redis_errors.RedisError, OSError):
            return  # a node still away: next sweep
        for table_id, scores in read.items():
            if self._deadline_index(table_id) in failed or table_id not in self._unsettled:
                continue
            self._unsettled[table_id] -= scores
            if not self._unsettled[table_id]:
                del self._unsettled[table_id]

    async def _flush_hints(self) -> None:
        """Before the store closes, :data:`CLOSE_HINTS_S` at most in all: the hints in
        flight, then those not written tried once more and late ones lowered; any left are
        logged (the hourly rescan restores them)."""
        writes = [w.task for w in self._hint_writes]
        with contextlib.suppress(Exception):  # (a TimeoutError included)
            async with asyncio.timeout(CLOSE_HINTS_S):
                if writes:
                    await asyncio.wait(writes)
                if self._undeadlined:
                    await self._deadlines_again()
                if self._unhinted:
                    await self._hint_again()
                if self._unsettled:
                    await self._settle_hints()
        pending = [task for task in writes if not task.done()]
        for task in pending:
            task.cancel()  # (its hints are kept as not written, and said below)
        await asyncio.gather(*pending, return_exceptions=True)
        left = sorted({*self._undeadlined, *self._unhinted, *self._unsettled})
        if left:
            log.warning(
                "hints not written as the store closed",
                extra={"fields": {"tables": ",".join(left[:100]), "count": str(len(left))}},
            )

    async def _deadlines_again(self, away: set[str] | None = None) -> None:
        """The deadline hints this process's commits failed to write (``ZADD LT``: a hint
        a later commit wrote is made earlier at most, which the sweep then corrects); those
        written are forgotten, the others tried again next time."""
        seen = list(self._undeadlined.items())
        try:
            results = await self._per_node(
                "zadd",
                [(self._deadline_index(t), {t: deadline}) for t, deadline in seen],
                away=away,
                lt=True,
            )
        except (redis_errors.RedisError, OSError):
            return  # the shards' node is still away: next sweep
        for (table_id, deadline), result in zip(seen, results, strict=True):
            if (
                not isinstance(result, BaseException)
                and self._undeadlined.get(table_id) == deadline
            ):
                del self._undeadlined[table_id]

    async def _hint_again(self, away: set[str] | None = None) -> None:
        """The hints this process's commits failed to write (``ZADD NX`` at score 0: first in
        line); those written are forgotten, the others (and any that failed again while these
        were written) tried again next time."""
        seen = list(self._unhinted.items())
        results = await self._per_node(
            "zadd",
            [(self._outbox_index(table_id), {table_id: 0}) for table_id, _ in seen],
            away=away,
            nx=True,
        )
        for (table_id, failures), result in zip(seen, results, strict=True):
            if not isinstance(result, BaseException) and self._unhinted.get(table_id) == failures:
                del self._unhinted[table_id]

    async def _rescan_hints(self) -> None:
        """Give every non-empty outbox a hint (``ZADD NX`` at score 0: first in line), and
        every table's deadline one no later than it (``ZADD LT``), at most once every
        :data:`OUTBOX_RESCAN_MS` over all processes of the store (a lock key): a ``SCAN``
        walks every key of every node, ≈ 0.7 s of Redis CPU a million keys, and a feed that
        remembers settlement ids for months keeps hundreds of millions."""
        claimed = await self._client.set(self._rescan_lock, b"", nx=True, px=OUTBOX_RESCAN_MS)
        if not claimed:
            return
        try:
            await self._rescan_hints_now()
        except BaseException:
            with contextlib.suppress(Exception):  # a scan cut short: the next try may go now
                await self._client.delete(self._rescan_lock)
            raise

    async def _rescan_hints_now(self) -> None:
        outboxes: dict[str, dict[str, int]] = {}
        states: list[str] = []
        prefix = f"{self._prefix}:{{"
        # ":state" and ":outbox" (and nothing else of a table's: replies, markers, extra),
        # matched by Redis, so that only those keys come back
        async for key in self._client.scan_iter(
            match=f"{prefix}*}}:[so][tu][at][tb][eo]*", count=_SCAN_COUNT, _type="hash"
        ):
            name = text(key)
            table_id, _, part = name[len(prefix) :].rpartition("}:")
            if part == "outbox":
                outboxes.setdefault(self._outbox_index(table_id), {})[table_id] = 0
            elif part == "state" and table_id:
                states.append(table_id)
        deadlines: dict[str, dict[str, int]] = {}
        for at in range(0, len(states), _SCAN_COUNT):
            batch = states[at : at + _SCAN_COUNT]
            async with self._client.pipeline(transaction=False) as pipe:
                for table_id in batch:
                    pipe.hget(self._table_key(table_id, "state"), "deadline")
                stored: list[bytes | None] = await pipe.execute()
            for table_id, deadline in zip(batch, stored, strict=True):
                if deadline is not None:
                    deadlines.setdefault(self._deadline_index(table_id), {})[table_id] = int(
                        deadline
                    )
        # In commands of _SCAN_COUNT members at most: one ZADD of a shard's million tables
        # would hold its node for a second and be a 40 MB command.
        writes = [
            (index_key, chunk, option)
            for hints, option in ((outboxes, "nx"), (deadlines, "lt"))
            for index_key, entries in hints.items()
            for chunk in _chunks(entries, _SCAN_COUNT)
        ]
        for at in range(0, len(writes), _ZADDS_A_PIPELINE):
            async with self._client.pipeline(transaction=False) as pipe:
                for index_key, chunk, option in writes[at : at + _ZADDS_A_PIPELINE]:
                    pipe.zadd(index_key, chunk, **{option: True})
                await pipe.execute()

    async def read_outbox(self, table_id: str) -> dict[str, bytes]:
        key = self._table_key(check_id(table_id, what="table id"), "outbox")
        with unavailable():
            records: dict[Any, Any] = await self._client.hgetall(key)
        return {text(k): bytes(v) for k, v in records.items()}

    async def remove_from_outbox(self, table_id: str, record_ids: Sequence[str]) -> None:
        key = self._table_key(check_id(table_id, what="table id"), "outbox")
        if record_ids:
            with unavailable():
                await self._client.hdel(key, *record_ids)

    async def ping(self) -> None:
        with unavailable():
            await ping(self._client)

    async def close(self) -> None:
        await self._flush_hints()
        await self._slot_map.close()
        for direct in (self._direct, self._direct_blocking):
            if direct is not None:
                await direct.close()
        if self._owns_clients:
            for client in {self._client, self._blocking}:
                await client.aclose()
                if isinstance(client, RedisCluster):
                    # (aclose closes nothing while the client means to read its map again,
                    # as after a connection error with no command since)
                    for node in client.get_nodes():
                        await node.disconnect()

    # --- create claims ------------------------------------------------------------------------
    async def claim_table_id(
        self,
        claim_id: str,
        table_id: str,
        *,
        ttl_seconds: int = DEFAULT_REQUEST_TTL_SECONDS,
        request_digest: str = "",
    ) -> str:
        claim = f"{self._prefix}:{{create:{check_id(claim_id, what='claim id')}}}"
        check_id(table_id, what="table id")
        check_at_least(ttl_seconds, 1, what="ttl_seconds")
        check_digest(request_digest)
        with unavailable():  # one script: set both unless claimed, and say what was there
            first, digest = await self._claim(
                keys=[f"{claim}:table", f"{claim}:digest"],
                args=[table_id, request_digest, ttl_seconds],
            )
        recorded = text(digest)
        if recorded and request_digest and recorded != request_digest:
            raise RequestIdReusedError()
        return text(first)
