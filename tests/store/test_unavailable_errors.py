"""Which Redis client errors a caller sees as UNAVAILABLE (retry with the same request id)."""

from __future__ import annotations

import pytest
from ofc_service.store import StoreUnavailableError
from ofc_service.store.redis_io import unavailable
from redis import exceptions as redis_errors


@pytest.mark.parametrize(
    "error",
    [
        redis_errors.ConnectionError("Connection refused"),
        redis_errors.TimeoutError("Timeout reading from socket"),
        TimeoutError(),
        redis_errors.ClusterDownError("CLUSTERDOWN The cluster is down"),
        redis_errors.TryAgainError("TRYAGAIN Multiple keys request during rehashing of slot"),
        redis_errors.SlotNotCoveredError("Slot 1234 not covered by the cluster"),
        # redis-py's RedisCluster when a slot kept moving past its redirections (a reshard
        # under load): the command never ran.
        redis_errors.ClusterError("TTL exhausted."),
    ],
    ids=lambda error: type(error).__name__,
)
def test_transient_store_errors_are_unavailable(error: Exception) -> None:
    with pytest.raises(StoreUnavailableError, match="redis unavailable"), unavailable():
        raise error


@pytest.mark.parametrize(
    "error",
    [
        redis_errors.ResponseError("WRONGTYPE Operation against a key holding the wrong kind"),
        redis_errors.NoScriptError("NOSCRIPT No matching script"),
        ValueError("a bug of ours"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_other_errors_pass_through(error: Exception) -> None:
    with pytest.raises(type(error)), unavailable():
        raise error
