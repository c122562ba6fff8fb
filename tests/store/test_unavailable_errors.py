"""Which Redis client errors a caller sees as UNAVAILABLE (retry with the same request id)."""

from __future__ import annotations

import asyncio

import pytest
from ofc_service.store import StoreUnavailableError
from ofc_service.store.redis_io import unavailable
from redis import exceptions as redis_errors


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (redis_errors.ConnectionError("Connection refused"), "redis unavailable"),
        (redis_errors.TimeoutError("Timeout reading from socket"), "redis unavailable"),
        (TimeoutError(), "redis unavailable"),
        (redis_errors.ClusterDownError("CLUSTERDOWN The cluster is down"), "redis unavailable"),
        (
            redis_errors.TryAgainError("TRYAGAIN Multiple keys request during rehashing of slot"),
            "redis unavailable",
        ),
        (redis_errors.SlotNotCoveredError("Slot 1234 not covered by the cluster"), "unavailable"),
        # redis-py's RedisCluster when a slot kept moving past its redirections (a reshard
        # under load): the command never ran.
        (redis_errors.ClusterError("TTL exhausted."), "redis unavailable"),
        # redis-py's RedisCluster when no node answers its slot map query (not a RedisError)
        (
            redis_errors.RedisClusterException(
                "Redis Cluster cannot be connected. Please provide "
                "at least one reachable node: Connection refused"
            ),
            "redis unavailable",
        ),
        (
            redis_errors.RedisClusterException(
                "All slots are not covered after query all startup_nodes. 10 of 16384 covered..."
            ),
            "redis unavailable",
        ),
        # Up but refusing writes (full; a replica since a failover): retry later, as above.
        (
            redis_errors.OutOfMemoryError("command not allowed when used memory > maxmemory"),
            "redis refuses writes",
        ),
        (
            redis_errors.ReadOnlyError("You can't write against a read only replica."),
            "redis refuses writes",
        ),
        (redis_errors.MasterDownError("MASTERDOWN Link with MASTER is down"), "redis unavailable"),
        # a blocking read of a master a failover demoted (XREAD of a Watch, XREADGROUP of the
        # settlement feed's Subscribe): read again, from the new master
        (
            redis_errors.ResponseError(
                "UNBLOCKED force unblock from blocking operation, instance state changed "
                "(master -> replica?)"
            ),
            "redis ended a blocking read",
        ),
        # the same through a pipeline (a cluster's watch read), which names the command
        (
            redis_errors.ResponseError(
                "Command # 1 (XREAD BLOCK 5000 COUNT 1000 STREAMS ofc:{t}:events 1-0) of "
                "pipeline caused error: ('UNBLOCKED force unblock from blocking operation, "
                "instance state changed (master -> replica?)',)"
            ),
            "redis ended a blocking read",
        ),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else "",
)
def test_transient_store_errors_are_unavailable(error: Exception, said: str) -> None:
    with pytest.raises(StoreUnavailableError, match=said), unavailable():
        raise error


@pytest.mark.parametrize(
    "error",
    [
        redis_errors.ResponseError("WRONGTYPE Operation against a key holding the wrong kind"),
        redis_errors.NoScriptError("NOSCRIPT No matching script"),
        redis_errors.RedisClusterException("EVALSHA - all keys must map to the same key slot"),
        ValueError("a bug of ours"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_other_errors_pass_through(error: Exception) -> None:
    with pytest.raises(type(error)), unavailable():
        raise error


def _raised_in(filename: str) -> dict[str, object]:
    """A function ``write(writer)`` whose code says it lives in ``filename``."""
    namespace: dict[str, object] = {}
    source = "def write(writer):\n    writer.writelines([b'x'])\n"
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def test_a_write_on_a_torn_down_connection_is_unavailable() -> None:
    """redis-py 8 writing on a connection that was just closed (by its peer, or by a concurrent
    disconnect) raises AttributeError or TypeError from the transport's None instead of a
    ConnectionError (redis/redis-py#4287): an outage to retry, not a bug of ours."""
    for where in (
        "/venv/site-packages/redis/asyncio/connection.py",
        "/usr/lib/python3/asyncio/streams.py",
    ):
        write = _raised_in(where)["write"]
        with pytest.raises(StoreUnavailableError, match="a connection closed"), unavailable():
            write(None)  # type: ignore[operator]
    # the same error in our own code is a bug: it goes on as it is
    ours = _raised_in("/srv/ofc_service/store/redis.py")["write"]
    with pytest.raises(AttributeError), unavailable():
        ours(None)  # type: ignore[operator]
    with pytest.raises(AttributeError), unavailable():
        None.writelines  # type: ignore[attr-defined]  # noqa: B018


class SwallowingRead:
    """A client read that catches its cancellation and returns as if it had finished (what
    redis-py's reads do now and then on Python 3.11)."""

    def __init__(self) -> None:
        self.cancelled = False

    async def read(self) -> bytes:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            self.cancelled = True
        return b"reply"


def test_a_cancellation_the_client_swallowed_is_raised_again() -> None:
    async def deadline_passes(client: SwallowingRead) -> None:
        async with asyncio.timeout(0.01):
            with unavailable():
                await client.read()
            await asyncio.sleep(10)  # e.g. a Watch waiting for the next event: never reached

    client = SwallowingRead()
    with pytest.raises(TimeoutError):
        asyncio.run(deadline_passes(client))
    assert client.cancelled


def test_a_read_that_was_not_cancelled_goes_on() -> None:
    async def read() -> bytes:
        with unavailable():
            await asyncio.sleep(0)
            return b"reply"

    assert asyncio.run(read()) == b"reply"
    with unavailable():  # outside an event loop (a synchronous caller): nothing to check
        pass
