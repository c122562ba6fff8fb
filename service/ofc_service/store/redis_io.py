"""What the Redis stores share: connections (one server or a cluster), script sources, the retry
policy, error and reply handling."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import struct
import zlib
from collections import deque
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final, TypeAlias
from urllib.parse import unquote

from redis import exceptions as redis_errors
from redis._parsers.commands import AsyncCommandsParser
from redis.asyncio import Redis, RedisCluster
from redis.asyncio.cluster import ClusterNode, PipelineCommand
from redis.asyncio.connection import AbstractConnection, ConnectionPool
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from zlib_ng import zlib_ng

from .base import StoreError, StoreUnavailableError

RETRIES: Final = 3  # per call, with 20-500 ms jittered backoff: a reconnect, not an outage
CLUSTER_SCHEMES: Final = ("redis+cluster://", "rediss+cluster://")
"""URL schemes of a Redis Cluster: ``redis+cluster://[user:password@]host:port[,host:port...]``
(``rediss+cluster`` for TLS); the hosts are seeds, the client discovers the rest."""
INDEX_SHARDS: Final = 16
"""How many shards each global hint index (deadlines, outboxes) is split into, each with its
own hash tag. Fixed, not a setting: a reader finds a table's hint only in the shard the table
hashes to, so every replica (and every release) must agree on the number."""
SOCKET_TIMEOUT_S: Final = 5.0
"""How long a command waits for Redis (a server or a cluster's master) that has gone silent
(paused, partitioned without a reset, stuck) before the call fails UNAVAILABLE and may be
retried (its request id makes that safe); a cluster's client fails over to the new master.
A ``socket_timeout`` in the URL overrides it."""
BLOCKING_CONNECTIONS: Final = 100_000  # per node: one per waiting watcher, never the limit
CONNECTIONS: Final = 1000
"""Connections in use at once per node (one server, or each node of a cluster) for commands:
past it, a call through redis-py's pool is refused at once ("Too many connections",
UNAVAILABLE) and a store's own call (:class:`DirectCalls`) waits for one to be given back.
redis-py 8's default is 100, which a replica's burst of retries reached."""

RedisClient: TypeAlias = Redis | RedisCluster
"""A store's connection: one Redis server (or a Sentinel-free primary) or a Redis Cluster."""


def lua(name: str) -> str:
    """The source of a Lua script shipped beside this module."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


RESPONSE_DICTIONARY: Final = resources.files(__package__).joinpath("responses-1.zdict").read_bytes()
"""The preset zlib dictionary earlier releases deflated request records' responses with
(three serialised responses of one classic two-seat hand). Its bytes never change: such a
record names it by its Adler-32 in the zlib header, and still unpacks with it."""
_DICTIONARIES: Final = {zlib.adler32(RESPONSE_DICTIONARY): RESPONSE_DICTIONARY}


_ZLIB_STORED_HEADER: Final = b"\x78\x01"  # deflate, 32 KiB window, no dictionary
_STORED_BLOCK: Final = struct.Struct("<BHH")  # BFINAL and BTYPE 00, LEN, NLEN
_STORED_MAX: Final = 0xFFFF


def pack_response(response: bytes) -> bytes:
    """``response`` as a request record keeps it: a zlib stream of stored (not compressed)
    blocks, which any zlib inflates, every earlier release's included: the bytes zlib's
    level 0 writes (below 65,532 bytes; it splits longer ones elsewhere), laid out here in
    ≈ 1 µs, where ``zlib.compress(response, 0)`` takes ≈ 30 µs whatever the size (its
    set-up allocates and clears ~256 KB of deflate state).

    Deflating it took ~12 µs with the CPU caches warm and ~60 µs cold (copying a compressor
    primed with :data:`RESPONSE_DICTIONARY`: over 100 KB of zlib-ng state), for ~290 B
    rather than ~680 (a two-seat view); a move's records are kept whole only while their
    hand is the newest (then as markers), so it costs ~0.4 KB of a table's live memory per
    caller (docs/capacity.md).

    >>> pack_response(b"view") == zlib.compress(b"view", 0)
    True
    """
    blocks = [_ZLIB_STORED_HEADER]
    last = max(0, len(response) - 1) // _STORED_MAX * _STORED_MAX  # the last block's start
    for at in range(0, last + 1, _STORED_MAX):
        chunk = response[at : at + _STORED_MAX]
        blocks.append(_STORED_BLOCK.pack(at == last, len(chunk), len(chunk) ^ 0xFFFF))
        blocks.append(chunk)
    blocks.append(zlib.adler32(response).to_bytes(4, "big"))
    return b"".join(blocks)


def unpack_response(stored: bytes) -> bytes:
    """A stored response: :func:`pack_response`'s, or deflated (records of earlier releases,
    with :data:`RESPONSE_DICTIONARY` or without).

    >>> unpack_response(pack_response(b"view")), unpack_response(zlib.compress(b"view"))
    (b'view', b'view')
    """
    if len(stored) >= 6 and stored[1] & 0x20:  # FDICT: the dictionary's Adler-32 follows
        dictionary = _DICTIONARIES.get(int.from_bytes(stored[2:6], "big"))
        if dictionary is None:
            raise StoreError("a request record packed with a dictionary this release lacks")
        unpacker = zlib_ng.decompressobj(zdict=dictionary)
        return unpacker.decompress(stored) + unpacker.flush()
    return zlib_ng.decompress(stored)


EVENT_DICTIONARY: Final = resources.files(__package__).joinpath("events-1.zdict").read_bytes()
"""A preset dictionary for the event log's entries: the last 8,000 bytes of the stored events
of classic two-, three- and four-seat hands (every copy of a dealt card, a placement, a
settlement's names and ranks), which makes the short entries compressible at all (a dealt
card event of ≈ 36 B packs to ≈ 12 B; two four-seat hands' events 6.5 KB to 2.7 KB). Its
bytes never change: an entry names it by its first byte (:data:`EVENT_PACKED`); a new
dictionary is a new file and tag."""
EVENT_FIELD: Final = b"z"
"""The stream field of a packed event (entries of the releases before have ``d``, unpacked)."""
EVENT_RAW: Final = 0  # first byte of a packed entry: the event's bytes follow as they are
EVENT_PACKED: Final = 1  # raw deflate with EVENT_DICTIONARY follows
_EVENT_WBITS: Final = -13  # raw deflate (no header or checksum), an 8 KiB window
# Memory level 2: an entry of a few dozen bytes needs no larger hash table or symbol buffer
# (the same sizes as level 6's, within 0.3%), and copying the primed compressor copies
# half the memory (64 -> 33 KiB; a third fewer instructions per packed event).
_EVENT_PACKER: Final = zlib.compressobj(6, zlib.DEFLATED, _EVENT_WBITS, 2, zdict=EVENT_DICTIONARY)


def pack_event(data: bytes) -> bytes:
    """``data`` as an event log entry stores it (field :data:`EVENT_FIELD`): a tag byte, then
    the bytes deflated with :data:`EVENT_DICTIONARY` (or as they are, when that is no
    shorter). A copy of one primed compressor: ≈ 3 µs, where priming costs ≈ 14 µs.

    >>> pack_event(b"x") == bytes((EVENT_RAW,)) + b"x"
    True
    >>> unpack_event(EVENT_FIELD, pack_event(EVENT_DICTIONARY[-60:])) == EVENT_DICTIONARY[-60:]
    True
    """
    packer = _EVENT_PACKER.copy()
    packed = packer.compress(data) + packer.flush()
    if len(packed) < len(data):
        return bytes((EVENT_PACKED,)) + packed
    return bytes((EVENT_RAW,)) + data


def unpack_event(field: bytes, value: bytes) -> bytes:
    """An event's bytes from its log entry's field and value: :func:`pack_event`'s under
    :data:`EVENT_FIELD`, or as stored under ``d`` (entries of the releases before).

    >>> unpack_event(b"d", b"as written"), unpack_event(EVENT_FIELD, pack_event(b"as written"))
    (b'as written', b'as written')
    """
    if field != EVENT_FIELD:
        return value
    tag = value[0]
    if tag == EVENT_RAW:
        return value[1:]
    if tag != EVENT_PACKED:
        raise StoreError(f"an event log entry packed in a way this release lacks ({tag})")
    unpacker = zlib.decompressobj(_EVENT_WBITS, zdict=EVENT_DICTIONARY)
    return unpacker.decompress(value[1:]) + unpacker.flush()


@dataclass(frozen=True, slots=True)
class Marker:
    """What a request record keeps once its answer is no longer kept: that the request made
    ``version``, until ``expires_ms``. A hand's markers hash (written by the commit script)
    holds them under :func:`marker_field` of the request id, as :meth:`from_bytes` reads
    them: the first 16 hex digits of the SHA-1 of the request's digest (``""``: none), the
    version (4 bytes) and ``expires_ms`` (6 bytes), big-endian.

    >>> value = _sha1_hex("d1", 16) + struct.pack(">IHI", 7, 0, 1000)
    >>> marker = Marker.from_bytes(value)
    >>> marker.version, marker.expires_ms, marker.made_by("d1"), marker.made_by("d2")
    (7, 1000, True, False)
    """

    digest_sha1: bytes
    version: int
    expires_ms: int

    @classmethod
    def from_bytes(cls, value: bytes) -> Marker:
        digest, version, high, low = struct.unpack(">16sIHI", value)
        return cls(digest, version, high << 32 | low)

    def made_by(self, digest: str) -> bool:
        """Whether this is the record of a request with ``digest``."""
        return _sha1_hex(digest, 16) == self.digest_sha1


def marker_field(request_id: str) -> bytes:
    """A request id's field in a markers hash: the first 24 hex digits of its SHA-1."""
    return _sha1_hex(request_id, 24)


def _sha1_hex(value: str, digits: int) -> bytes:
    return hashlib.sha1(value.encode()).hexdigest()[:digits].encode()


def retry() -> Retry:
    """The retry policy of every store connection: :data:`RETRIES` tries of a call cut by a
    dropped connection, then the error is reported. Not of one that timed out: Redis was
    silent for a whole :data:`SOCKET_TIMEOUT_S` already, and the call fails then, as
    documented (retried, it took four times as long, past the deadlines clients set). A
    cluster client retries a timed-out call itself, :data:`RETRIES` times, after reading the
    slot map again (a master failed over meanwhile then answers through its replica).

    >>> retry().get_retries(), redis_errors.TimeoutError in retry()._supported_errors
    (3, False)
    """
    backoff = ExponentialWithJitterBackoff(cap=0.5, base=0.02)
    return Retry(backoff, RETRIES, supported_errors=(redis_errors.ConnectionError,))


def is_cluster_url(url: str) -> bool:
    """Whether ``url`` names a Redis Cluster.

    >>> is_cluster_url("redis+cluster://a:7000,b:7000"), is_cluster_url("redis://a:6379/0")
    (True, False)
    """
    return url.startswith(CLUSTER_SCHEMES)


def cluster_seeds(url: str) -> tuple[list[tuple[str, int]], str | None, str | None, bool]:
    """The seed nodes, user name, password and TLS flag of a cluster URL.

    >>> cluster_seeds("rediss+cluster://ofc:s%40cret@r1:7000,r2:7001")
    ([('r1', 7000), ('r2', 7001)], 'ofc', 's@cret', True)
    >>> cluster_seeds("redis+cluster://r1")
    ([('r1', 6379)], None, None, False)
    >>> cluster_seeds("redis+cluster://r1:7000/2")
    Traceback (most recent call last):
    ...
    ValueError: a Redis Cluster has database 0 only: 'redis+cluster://r1:7000/2'
    """
    scheme, _, rest = url.partition("://")
    if scheme + "://" not in CLUSTER_SCHEMES:
        raise ValueError(f"not a Redis Cluster URL: {url!r}")
    netloc, _, path = rest.partition("/")
    if path.strip("/") not in ("", "0") or "?" in rest:
        raise ValueError(f"a Redis Cluster has database 0 only: {url!r}")
    user: str | None = None
    password: str | None = None
    if "@" in netloc:
        credentials, _, netloc = netloc.rpartition("@")
        name, colon, secret = credentials.partition(":")
        user = unquote(name) or None
        password = unquote(secret) if colon else None
    seeds: list[tuple[str, int]] = []
    for host_port in netloc.split(","):
        host, colon, port = host_port.strip().rpartition(":")
        if not colon:
            host, port = port, "6379"
        if not host or not port.isdigit():
            raise ValueError(f"bad host:port {host_port!r} in {url!r}")
        seeds.append((host.strip("[]"), int(port)))
    return seeds, user, password, scheme == "rediss+cluster"


def connect(url: str, *, blocking: bool = False, wait_timeout_ms: int = 0) -> RedisClient:
    """A client for ``url``: :class:`~redis.asyncio.RedisCluster` for a cluster URL (it follows
    ``MOVED``/``ASK``, refreshes the slot map after a failover and retries), else
    :class:`~redis.asyncio.Redis`. No connection is made until the first call. ``blocking``:
    for ``XREAD BLOCK`` and the like (no socket timeout, a connection per waiting caller);
    else each exchange waits at most :data:`SOCKET_TIMEOUT_S`, plus ``wait_timeout_ms`` for
    the ``WAIT`` a caller may send behind a write (:func:`unconfirmed`).

    >>> connect("redis://127.0.0.1:1/0").connection_pool.connection_kwargs["socket_timeout"]
    5.0
    >>> connect("redis://127.0.0.1:1/0?socket_timeout=2").connection_pool.connection_kwargs[
    ...     "socket_timeout"]
    2.0
    """
    timeout_s = SOCKET_TIMEOUT_S + wait_timeout_ms / 1000
    if not is_cluster_url(url):
        if blocking:
            return Redis.from_url(
                url, retry=retry(), socket_timeout=None, max_connections=BLOCKING_CONNECTIONS
            )
        return Redis.from_url(
            url, retry=retry(), socket_timeout=timeout_s, max_connections=CONNECTIONS
        )
    seeds, user, password, tls = cluster_seeds(url)
    cluster = RedisCluster(
        startup_nodes=[ClusterNode(host, port) for host, port in seeds],
        username=user,
        password=password,
        ssl=tls,
        retry=retry(),
        max_connections=BLOCKING_CONNECTIONS if blocking else CONNECTIONS,
        socket_timeout=None if blocking else timeout_s,
    )
    cluster.commands_parser = _StreamReadKeys()
    return cluster


class _StreamReadKeys(AsyncCommandsParser):
    """redis-py's key finder for a cluster's commands, finding the keys of XREAD and
    XREADGROUP itself (:func:`stream_read_keys`), and reading the command table once.
    redis-py asks its default node for those keys (``COMMAND GETKEYS``) before every such
    read: a round trip more per read, and, while that one node hung, every Watch and feed
    read hung with it, on whatever node their stream lives (the blocking client has no socket
    timeout, so redis-py never moved on from it)."""

    async def initialize(self, node: ClusterNode | None = None) -> None:
        # The command table once: redis-py asks the default node for it again at every
        # re-initialisation, after any error, and hung on it when that node was the one
        # that had stopped answering.
        if node is not None:
            self.node = node
        if not self.commands:
            await super().initialize()

    async def get_keys(self, *args: Any) -> tuple[Any, ...] | None:
        keys = stream_read_keys(args)
        return keys if keys is not None else await super().get_keys(*args)


def stream_read_keys(args: Sequence[Any]) -> tuple[Any, ...] | None:
    """The streams an ``XREAD`` or ``XREADGROUP`` command (its words as sent) reads; ``None``
    for any other command.

    >>> stream_read_keys(("XREAD", "COUNT", 10, "BLOCK", 5000, "STREAMS", "a", "b", "0", "7"))
    ('a', 'b')
    >>> stream_read_keys((b"XREADGROUP", b"GROUP", b"streams", b"STREAMS", b"STREAMS", b"k", b">"))
    (b'k',)
    >>> stream_read_keys(("HGET", "k", "f")) is None
    True
    """
    name = _word(args[0]) if args else ""
    if name not in ("XREAD", "XREADGROUP"):
        return None
    at = 4 if name == "XREADGROUP" else 1  # past GROUP, the group and the consumer
    while at < len(args):
        option = _word(args[at])
        if option == "STREAMS":
            streams = args[at + 1 :]
            return tuple(streams[: len(streams) // 2])
        at += 2 if option in ("COUNT", "BLOCK") else 1  # NOACK has no value
    return None


def _word(arg: Any) -> str:
    return (arg.decode() if isinstance(arg, bytes) else str(arg)).upper()


CLUSTER_PING_WAIT_S: Final = 1.0
"""How long :func:`ping` waits for a cluster's nodes; one slower is taken as not answering."""


async def ping(client: RedisClient) -> None:
    """That the store answers, or an error: one server's ``PING``; on a Redis Cluster, that
    the nodes answering within :data:`CLUSTER_PING_WAIT_S` (one at least) all say
    ``cluster_state:ok``, the cluster's own judgement that it serves (every slot has a
    master, unless ``cluster-require-full-coverage no`` lets it serve the slots it covers; a
    node that refuses ``CLUSTER INFO``, to a user whose ACL lacks it, has answered). redis-py
    would ``PING`` one node only (its default node, the first master it learned of): while
    that node hung, a cluster that had failed it over would look down, and while another
    hung, up."""
    if not isinstance(client, RedisCluster):
        await client.ping()
        return
    if not client.get_nodes():
        # Only before it knows the nodes: once a command met a node that did not answer,
        # the client reads its map again at the next call, from the nodes in a random
        # order; health would hang on a paused node asked first (the next command reads
        # it, asking the node that failed last).
        await client.initialize()
    answers = await _answers(client, "CLUSTER INFO")
    if not answers:
        raise redis_errors.ConnectionError(
            f"no node of the cluster answered within {CLUSTER_PING_WAIT_S} s"
        )
    for name, info in sorted(answers.items()):
        state = info.get("cluster_state") if isinstance(info, dict) else "ok"  # NOPERM: "ok"
        if state != "ok":
            raise redis_errors.ClusterDownError(f"{name} says cluster_state:{state}")


async def _answers(client: RedisCluster, command: str) -> dict[str, Any]:
    """``command``'s reply from every node the client knows that answers it (an error reply,
    e.g. NOPERM, is an answer too) within :data:`CLUSTER_PING_WAIT_S`, by node name."""
    asks = {
        asyncio.ensure_future(node.execute_command(command)): node.name
        for node in client.get_nodes()
    }
    try:
        done, _ = await asyncio.wait(asks, timeout=CLUSTER_PING_WAIT_S)
    finally:  # (also when the caller's own bound cancels the wait)
        for task in asks:
            if not task.done():  # not awaited: redis-py may hold a cancelled read of a hung node
                task.cancel()
            task.add_done_callback(_quietly)  # (an ask that failed, read or not below)
    answers: dict[str, Any] = {}
    for task in done:
        error = task.exception()
        if error is None or isinstance(error, redis_errors.ResponseError):
            answers[asks[task]] = task.result() if error is None else error
    return answers


def _quietly(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: a hung node's read is expected to fail


@contextlib.asynccontextmanager
async def blocking_read(client: RedisClient, key: str, timeout_s: float) -> AsyncIterator[None]:
    """A blocking read of ``key`` (``XREAD BLOCK``, ``XREADGROUP BLOCK``) through ``client``,
    bounded by ``timeout_s``: past it, ``TimeoutError`` (UNAVAILABLE, :func:`unavailable`),
    after :func:`after_silence`."""
    try:
        async with asyncio.timeout(timeout_s):
            yield
    except TimeoutError:
        await after_silence(client, key)
        raise


async def after_silence(client: RedisClient, key: str) -> None:
    """After a blocking read of ``key`` outlived its bound, on a Redis Cluster: read the slot
    map again, from a node that answers, as redis-py does itself after a socket timeout. A
    blocking client has none: a master that stopped answering (and was failed over since)
    would keep every later read of its slots hanging, and each re-reading of the map that
    happened to ask it first (redis-py asks its seeds in a random order, after any error;
    during a failover every node answers CLUSTERDOWN) would hang with it. The node passed
    over is the first known node that does not answer within :data:`CLUSTER_PING_WAIT_S`,
    else ``key``'s. Best effort: a refresh that fails leaves the map as it was, and the next
    silence tries again."""
    if not isinstance(client, RedisCluster):
        return
    with contextlib.suppress(Exception):
        answering = await _answers(client, "PING")
        read = client.get_node_from_key(key)
        silent = next((n.name for n in client.get_nodes() if n.name not in answering), None)
        silent = silent or (None if read is None else read.name)
        async with asyncio.timeout(SOCKET_TIMEOUT_S):
            await read_slot_map(client, silent)


async def read_slot_map(client: RedisCluster, failed: str | None) -> None:
    """Have ``client`` read the cluster's slot map again now, asking the node ``failed``
    last (a failover makes another node the master of its slots). redis-py does so by itself
    only after one of its own commands met a connection error or a socket timeout."""
    if failed is not None:
        client.nodes_manager.move_node_to_end_of_cached_nodes(failed)
    await client.initialize(last_failed_node_name=failed)  # (if it meant to: after an error)
    await client.nodes_manager.initialize(last_failed_node_name=failed)


NODE_ERRORS: Final = (
    redis_errors.RedisError,
    redis_errors.RedisClusterException,
    OSError,
    TimeoutError,
)
"""What a call to one cluster node (or the slot map's read) fails with when the node is away."""
CONFIRM_KEY_MS: Final = 1000  # how long a confirmation's own write outlives it


def confirmation(key: str, wait: tuple[int, int]) -> list[tuple[Arg, ...]]:
    """A write of a short-lived ``key``, then ``WAIT`` (``wait``: replicas, timeout ms), to
    send behind the writes they confirm on one connection (:func:`on_one_connection`):
    ``WAIT`` counts the replicas holding its connection's writes, and replication keeps a
    master's order, so whatever the key's slot held before the write (another replica's
    write, one a script found made already and did not make again) is confirmed with it."""
    return [("SET", key, b"", "PX", CONFIRM_KEY_MS), ("WAIT", *wait)]


def confirmed_count(written: Any, counted: Any) -> Any:
    """A :func:`confirmation`'s replies: its ``WAIT`` count; its write refused (Redis full,
    or a replica now) is raised instead: ``WAIT`` would count older writes, long confirmed."""
    if isinstance(written, Exception):
        raise written
    return counted


SLOT_REFRESH_S: Final = 2.0
"""How long a background read of a cluster's slot map may take (:class:`SlotMapReader`): the
nodes that answer are asked first."""


class SlotMapReader:
    """Has a cluster client read its slot map again, in the background and one read at a
    time, after a call that went to a node directly (not through the client's routing,
    which reads the map by itself after its own errors) met a node that did not answer."""

    def __init__(self, client: RedisClient) -> None:
        self._client = client
        self._reading: asyncio.Future[None] | None = None
        self._closed = False  # (a call failing as its store closes starts no read)

    def soon(self, failed: str | None) -> None:
        """Read it again now, asking the node ``failed`` last (a failover makes another node
        the master of its slots); nothing on one server or while a read is under way."""
        cluster = self._client
        if (
            self._closed
            or not isinstance(cluster, RedisCluster)
            or (self._reading is not None and not self._reading.done())
        ):
            return

        async def read() -> None:
            with contextlib.suppress(*NODE_ERRORS):
                async with asyncio.timeout(SLOT_REFRESH_S):
                    await read_slot_map(cluster, failed)

        self._reading = asyncio.ensure_future(read())

    async def close(self) -> None:
        self._closed = True
        if self._reading is not None:
            self._reading.cancel()
            await asyncio.gather(self._reading, return_exceptions=True)


async def on_one_connection(
    client: RedisClient, key: str, commands: Sequence[Sequence[Arg]], slot_map: SlotMapReader
) -> list[Any]:
    """``commands`` in one pipeline on one connection to the server of ``key`` (on a cluster,
    the master of its slot), their replies (errors in their places): what writes followed by
    a ``WAIT`` need, as ``WAIT`` counts the replicas holding *its connection's* writes.

    A cluster client's own pipeline will not do: it sends a command that met a moved slot
    again alone, on another connection, and after a connection error it sends the whole
    pipeline again with the ``WAIT`` routed to any master; either way the ``WAIT`` could
    answer for other writes than these, and a write no replica held was confirmed. Here a
    slot that moved (MOVED) has the whole pipeline go to the master the reply names, once
    (the commands are ones that may run twice: a request id's commit, a settlement id's
    append); a slot still moving (ASK, TRYAGAIN) or moved again is
    :class:`StoreUnavailableError`, and a node that does not answer, or a slot with no
    master known, is raised (with the slot map read again in the background)."""
    if not isinstance(client, RedisCluster):
        async with client.pipeline(transaction=False) as pipe:
            for args in commands:
                pipe.execute_command(*args)
            replies: list[Any] = await pipe.execute(raise_on_error=False)
        return replies
    for _ in range(2):
        await client.initialize()  # (once; again after an error that had it forget the map)
        try:
            node = client.get_node_from_key(key)
        except redis_errors.SlotNotCoveredError:  # no master known for the slot (a failover)
            node = None
        if node is None:
            slot_map.soon(None)
            raise StoreUnavailableError(f"no master known for the cluster slot of {key!r}")
        queued = [PipelineCommand(n, *args) for n, args in enumerate(commands)]
        try:
            await node.execute_pipeline(queued)
        except (redis_errors.ConnectionError, redis_errors.TimeoutError, OSError):
            slot_map.soon(node.name)
            raise
        replies = [command.result for command in queued]
        if any(isinstance(r, redis_errors.ConnectionError | redis_errors.TimeoutError)
               for r in replies):  # fmt: skip
            slot_map.soon(node.name)
        moved = next((r for r in replies if isinstance(r, redis_errors.MovedError)), None)
        if moved is None:
            # (a MovedError is an AskError too)
            if any(isinstance(r, redis_errors.AskError | redis_errors.TryAgainError)
                   for r in replies):  # fmt: skip
                break  # the slot is being migrated: nothing to learn until that is done
            return replies
        # the reply names the slot's master: go there, as redis-py does (a whole map read now
        # may come from a node that has not heard of the move yet)
        await client.nodes_manager.move_slot(moved)
    raise StoreUnavailableError(f"the cluster slot of {key!r} is moving: retry")


def unconfirmed(confirmed: Any, wanted: int) -> bool:
    """Whether a ``WAIT wanted`` reply (the replica count, or the error in its place in a
    pipeline) says fewer replicas than ``wanted`` have the write before it.

    >>> unconfirmed(1, 1), unconfirmed(0, 1), unconfirmed(ConnectionError(), 1)
    (False, True, True)
    """
    return isinstance(confirmed, Exception) or int(confirmed) < wanted


Arg: TypeAlias = bytes | str | int
"""An argument of a Redis command as :func:`encode` takes it."""


def encode(*args: Arg) -> bytes:
    """One command in the Redis protocol (an array of bulk strings), as redis-py's encoder
    writes it for these types (text as UTF-8, an integer in decimal).

    >>> encode("HMGET", b"k", 7)
    b'*3\\r\\n$5\\r\\nHMGET\\r\\n$1\\r\\nk\\r\\n$1\\r\\n7\\r\\n'
    """
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        parts += (b"$%d\r\n" % len(data), data, b"\r\n")
    return b"".join(parts)


class DirectCalls:
    """Commands sent to one Redis server (never a cluster: its routing, ``MOVED``/``ASK``
    and slot map refreshes stay redis-py's) over connections made by the client's own
    pool settings (connection class, database, credentials, timeouts, health checks and
    :func:`retry` policy), without the bookkeeping redis-py 8 adds to every call: metric
    recorders (no-ops unless its OpenTelemetry is set up, yet a coroutine each, several
    per call), the pool's lock and its release event, command name look-ups; on the move path
    ≈ 0.15 M instructions of a load's 0.41 M, 0.29 M of a commit and 0.41 M of a watch's
    read (``bench.miss_path``).

    Each call takes a connection of its own (an idle one, or a new one while the pool's
    ``max_connections`` allows, else the next one another call gives back) and gives it back
    when done, so concurrent calls never share one and a burst waits its turn rather than
    opening connections without end; a call cut short (an error, a
    cancellation) leaves its connection disconnected (redis-py closes it on any error
    while sending or reading), and the next call on it connects afresh. An error is retried
    as redis-py retries it (the same :class:`~redis.asyncio.retry.Retry` object, :func:`retry`:
    a dropped connection is; disconnect, back off, send again), then raised as redis-py
    raises it, so :func:`unavailable` maps it the same way. An error reply (``ResponseError``, e.g.
    ``NOSCRIPT``) is returned in its command's place, as a pipeline with
    ``raise_on_error=False`` returns it.

    The pool's socket timeout bounds a whole exchange (connecting, the write, every reply)
    as one clock, not each step as redis-py bounds them: its bound on a write is a task of
    its own (``wait_for``) and on each reply a timeout context, which together cost ~19 µs
    of a ~45 µs round trip (a three-command pipeline, ``bench.redis_exchange``). A call past
    it is redis-py's ``TimeoutError`` (not retried, as redis-py would not retry it)."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool
        self._idle: list[AbstractConnection] = []
        self._made: list[AbstractConnection] = []
        self._waiting: deque[asyncio.Future[AbstractConnection]] = deque()
        self._timeout: float | None = None  # the pool's socket timeout, read off a connection

    async def execute(self, commands: Sequence[bytes]) -> list[Any]:
        """The replies to ``commands`` (each :func:`encode`'d), sent in one write."""
        if self._idle:
            connection = self._idle.pop()
        elif len(self._made) < self._pool.max_connections:
            connection = self._connection()
        else:
            connection = await self._given_back()
        try:
            replies: list[Any] = await connection.retry.call_with_retry(
                lambda: self._send(connection, commands),
                lambda error: connection.disconnect(error=error),
            )
            if connection.should_reconnect():  # type: ignore[no-untyped-call]
                await connection.disconnect()
        finally:
            self._give_back(connection)
        return replies

    async def _given_back(self) -> AbstractConnection:
        """The next connection a call gives back: every one the pool allows is in use."""
        waiter: asyncio.Future[AbstractConnection] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # handed over as this call ended
                self._give_back(waiter.result())
            raise

    def _give_back(self, connection: AbstractConnection) -> None:
        while self._waiting:  # the longest waiting call still waiting takes it
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(connection)
                return
        self._idle.append(connection)

    async def call(self, *args: Arg) -> Any:
        """The reply to one command (an error reply raised)."""
        (reply,) = await self.execute([encode(*args)])
        if isinstance(reply, redis_errors.ResponseError):
            raise reply
        return reply

    def _connection(self) -> AbstractConnection:
        connection: AbstractConnection = self._pool.make_connection()  # type: ignore[no-untyped-call]
        # Its connect timeout was set from the socket timeout already, when none was given.
        self._timeout, connection.socket_timeout = connection.socket_timeout, None
        self._made.append(connection)
        return connection

    async def _send(self, connection: AbstractConnection, commands: Sequence[bytes]) -> list[Any]:
        if self._timeout is None:  # a blocking client's: its caller bounds the call
            return await self._exchange(connection, commands)
        try:
            async with asyncio.timeout(self._timeout):
                return await self._exchange(connection, commands)
        except TimeoutError:
            # redis-py disconnected it already (it does on any exception mid-call)
            raise redis_errors.TimeoutError(
                f"Timeout in a Redis call after {self._timeout} s"
            ) from None

    @staticmethod
    async def _exchange(connection: AbstractConnection, commands: Sequence[bytes]) -> list[Any]:
        await connection.send_packed_command(commands)
        replies: list[Any] = []
        for _ in commands:
            try:
                replies.append(await connection.read_response())
            except redis_errors.ResponseError as error:
                replies.append(error)
        return replies

    async def close(self) -> None:
        """Disconnect every connection made (a call still running fails)."""
        for connection in self._made:
            await connection.disconnect()
        self._idle.clear()
        self._made.clear()


def direct_calls(client: RedisClient) -> DirectCalls | None:
    """:class:`DirectCalls` for a client of one Redis server, ``None`` for a cluster."""
    return None if isinstance(client, RedisCluster) else DirectCalls(client.connection_pool)


def index_shard(table_id: str) -> int:
    """The shard of the global hint indexes a table belongs to (stable across processes and
    releases: CRC-32 of the id, not Python's salted ``hash``).

    >>> index_shard("t-1"), index_shard("t-1") == index_shard("t-1")
    (11, True)
    """
    return zlib.crc32(table_id.encode()) % INDEX_SHARDS


def _unblocked(error: redis_errors.ResponseError) -> bool:
    """Whether ``error`` is Redis's ``UNBLOCKED``, alone or as a pipeline reports a command's
    error ("Command # 1 (XREAD ...) of pipeline caused error: ('UNBLOCKED ...',)", as a
    cluster's watch read does).

    >>> _unblocked(redis_errors.ResponseError("UNBLOCKED client unblocked via CLIENT UNBLOCK"))
    True
    >>> _unblocked(redis_errors.ResponseError(
    ...     "Command # 1 (XREAD BLOCK 5000 STREAMS ofc:{t}:events 1-0) of pipeline caused "
    ...     "error: ('UNBLOCKED force unblock from blocking operation, instance state changed "
    ...     "(master -> replica?)',)"))
    True
    >>> _unblocked(redis_errors.ResponseError(
    ...     "Command # 1 (XREAD STREAMS ofc:{UNBLOCKED}:events 1-0) of pipeline caused error: "
    ...     "('WRONGTYPE Operation against a key holding the wrong kind of value',)"))
    False
    """
    message = str(error)
    _, annotated, reported = message.partition(" of pipeline caused error: ")
    return (reported if annotated else message).lstrip("('\"").startswith("UNBLOCKED")


@contextmanager
def unavailable() -> Iterator[None]:
    """Connection errors and timeouts as :class:`StoreUnavailableError` (UNAVAILABLE); on a
    cluster also a slot with no reachable master (during a failover) and a slot still moving
    when the client's redirections ran out (``TRYAGAIN`` or ``ASK`` past redis-py's request
    TTL, a ``ClusterError``), after the retries; a Redis refusing writes (full, or a replica
    now); a blocking read Redis ended (``UNBLOCKED``: its master demoted by a failover).

    A cancellation the client swallowed (redis-py's reads on Python 3.11 do, about once in a
    few hundred cancelled reads: the call then returns as if nothing happened) is raised
    again when the block ends, so that a call's deadline or a client's disconnect still
    ends it: otherwise a stream would wait on for events that may never come."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no event loop: a synchronous caller, nothing to cancel
        task = None
    cancelling = 0 if task is None else task.cancelling()
    try:
        yield
    except (
        redis_errors.ConnectionError,
        redis_errors.TimeoutError,
        redis_errors.ClusterError,  # ClusterDownError among them
        redis_errors.TryAgainError,
        redis_errors.SlotNotCoveredError,
        TimeoutError,
    ) as error:
        raise StoreUnavailableError(f"redis unavailable: {error}") from error
    except redis_errors.RedisClusterException as error:
        # Not a RedisError: redis-py raises it when no node answers its slot map query
        # (the whole cluster down), and for a command it cannot route (a bug of ours).
        if not str(error).startswith(_CLUSTER_UNREACHABLE):
            raise
        raise StoreUnavailableError(f"redis unavailable: {error}") from error
    except (
        redis_errors.OutOfMemoryError,  # full, with maxmemory-policy noeviction
        redis_errors.ReadOnlyError,  # a replica now: a failover demoted it
    ) as error:
        # Up, answering reads, refusing writes (a script is refused before its first write,
        # so nothing of it is applied): the call may be retried once Redis takes writes.
        raise StoreUnavailableError(f"redis refuses writes: {error}") from error
    except redis_errors.ResponseError as error:
        # A blocking read (XREAD, XREADGROUP) ended by Redis, not answered: its master was
        # demoted (a failover), or it was unblocked by CLIENT UNBLOCK; read again.
        if not _unblocked(error):
            raise
        raise StoreUnavailableError(f"redis ended a blocking read: {error}") from error
    except (AttributeError, TypeError) as error:
        if not _torn_down_connection(error):
            raise  # ours: a bug, not an outage
        raise StoreUnavailableError(f"redis unavailable: a connection closed ({error})") from error
    if task is not None and task.cancelling() > cancelling:
        raise asyncio.CancelledError("a cancellation the Redis client swallowed")


_CLUSTER_UNREACHABLE = (
    "Redis Cluster cannot be connected",
    "All slots are not covered",
    "startup_nodes could not agree",
)
_CLIENT_DIRS = (f"{os.sep}redis{os.sep}", f"{os.sep}asyncio{os.sep}")


def _torn_down_connection(error: Exception) -> bool:
    """Whether ``error`` is redis-py writing on a connection its peer, or a concurrent
    disconnect, has just torn down: redis-py 8 lets the transport's ``None`` through as an
    AttributeError or TypeError instead of a ConnectionError (redis/redis-py#4287), raised
    in redis-py's or asyncio's own code, never in ours."""
    trace = error.__traceback__
    while trace is not None and trace.tb_next is not None:
        trace = trace.tb_next
    if trace is None or "NoneType" not in str(error):
        return False
    return any(d in trace.tb_frame.f_code.co_filename for d in _CLIENT_DIRS)


def text(value: bytes | str) -> str:
    """A reply as text (the stores' clients return bytes)."""
    return value if isinstance(value, str) else value.decode()
