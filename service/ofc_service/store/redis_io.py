"""What the Redis stores share: connections (one server or a cluster), script sources, the retry
policy, error and reply handling."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from typing import Final, TypeAlias
from urllib.parse import unquote

from redis import exceptions as redis_errors
from redis.asyncio import Redis, RedisCluster
from redis.asyncio.cluster import ClusterNode
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff

from .base import StoreError, StoreUnavailableError

RETRIES: Final = 3  # per call, with 20-500 ms jittered backoff: a reconnect, not an outage
CLUSTER_SCHEMES: Final = ("redis+cluster://", "rediss+cluster://")
"""URL schemes of a Redis Cluster: ``redis+cluster://[user:password@]host:port[,host:port...]``
(``rediss+cluster`` for TLS); the hosts are seeds, the client discovers the rest."""
INDEX_SHARDS: Final = 16
"""How many shards each global hint index (deadlines, outboxes) is split into, each with its
own hash tag. Fixed, not a setting: a reader finds a table's hint only in the shard the table
hashes to, so every replica (and every release) must agree on the number."""
CLUSTER_SOCKET_TIMEOUT_S: Final = 5.0  # a master gone silent: fail over to the new one
BLOCKING_CONNECTIONS: Final = 100_000  # per node: one per waiting watcher, never the limit

RedisClient: TypeAlias = Redis | RedisCluster
"""A store's connection: one Redis server (or a Sentinel-free primary) or a Redis Cluster."""


def lua(name: str) -> str:
    """The source of a Lua script shipped beside this module."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


RESPONSE_DICTIONARY: Final = resources.files(__package__).joinpath("responses-1.zdict").read_bytes()
"""A preset zlib dictionary for request records' responses: three serialised responses of
one classic two-seat hand (the view's ruleset and layout repeat in every answer), which
halves a compressed response (≈ 480 -> 250 B). Its bytes never change: a record names it
by its Adler-32 in the zlib header; a new dictionary is a new file beside it."""
_DICTIONARIES: Final = {zlib.adler32(RESPONSE_DICTIONARY): RESPONSE_DICTIONARY}
# A 4 KiB window holds the dictionary and a response; with memory level 5 the compressor's
# tables are small, so copying one primed with the dictionary (below) costs less than
# setting the dictionary up again for every response (level 1: ~8 µs).
_PACKER: Final = zlib.compressobj(1, zlib.DEFLATED, 12, 5, zdict=RESPONSE_DICTIONARY)


def pack_response(response: bytes) -> bytes:
    """``response`` zlib-compressed with :data:`RESPONSE_DICTIONARY`."""
    packer = _PACKER.copy()
    return packer.compress(response) + packer.flush()


def unpack_response(stored: bytes) -> bytes:
    """A stored response: :func:`pack_response`'s, or plain zlib (records of earlier
    releases, and those not packed with the dictionary).

    >>> unpack_response(pack_response(b"view")), unpack_response(zlib.compress(b"view"))
    (b'view', b'view')
    """
    if len(stored) >= 6 and stored[1] & 0x20:  # FDICT: the dictionary's Adler-32 follows
        dictionary = _DICTIONARIES.get(int.from_bytes(stored[2:6], "big"))
        if dictionary is None:
            raise StoreError("a request record packed with a dictionary this release lacks")
        unpacker = zlib.decompressobj(zdict=dictionary)
        return unpacker.decompress(stored) + unpacker.flush()
    return zlib.decompress(stored)


def retry() -> Retry:
    """The retry policy of every store connection: :data:`RETRIES` tries of a call cut by a
    dropped connection, then the error is reported."""
    return Retry(ExponentialWithJitterBackoff(cap=0.5, base=0.02), RETRIES)


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


def connect(url: str, *, blocking: bool = False) -> RedisClient:
    """A client for ``url``: :class:`~redis.asyncio.RedisCluster` for a cluster URL (it follows
    ``MOVED``/``ASK``, refreshes the slot map after a failover and retries), else
    :class:`~redis.asyncio.Redis`. No connection is made until the first call. ``blocking``:
    for ``XREAD BLOCK`` and the like (no socket timeout, a connection per waiting caller)."""
    if not is_cluster_url(url):
        if blocking:
            return Redis.from_url(url, retry=retry(), socket_timeout=None)
        return Redis.from_url(url, retry=retry())
    seeds, user, password, tls = cluster_seeds(url)
    return RedisCluster(
        startup_nodes=[ClusterNode(host, port) for host, port in seeds],
        username=user,
        password=password,
        ssl=tls,
        retry=retry(),
        max_connections=BLOCKING_CONNECTIONS if blocking else 1000,
        socket_timeout=None if blocking else CLUSTER_SOCKET_TIMEOUT_S,
    )


def index_shard(table_id: str) -> int:
    """The shard of the global hint indexes a table belongs to (stable across processes and
    releases: CRC-32 of the id, not Python's salted ``hash``).

    >>> index_shard("t-1"), index_shard("t-1") == index_shard("t-1")
    (11, True)
    """
    return zlib.crc32(table_id.encode()) % INDEX_SHARDS


@contextmanager
def unavailable() -> Iterator[None]:
    """Connection errors and timeouts as :class:`StoreUnavailableError` (UNAVAILABLE); on a
    cluster also a slot with no reachable master (during a failover), after the retries."""
    try:
        yield
    except (
        redis_errors.ConnectionError,
        redis_errors.TimeoutError,
        redis_errors.ClusterDownError,
        redis_errors.TryAgainError,
        redis_errors.SlotNotCoveredError,
        TimeoutError,
    ) as error:
        raise StoreUnavailableError(f"redis unavailable: {error}") from error


def text(value: bytes | str) -> str:
    """A reply as text (the stores' clients return bytes)."""
    return value if isinstance(value, str) else value.decode()
