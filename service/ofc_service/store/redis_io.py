"""What the Redis stores share: script sources, the retry policy, error and reply handling."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from typing import Final

from redis import exceptions as redis_errors
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff

from .base import StoreUnavailableError

RETRIES: Final = 3  # per call, with 20-500 ms jittered backoff: a reconnect, not an outage


def lua(name: str) -> str:
    """The source of a Lua script shipped beside this module."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def retry() -> Retry:
    """The retry policy of every store connection: :data:`RETRIES` tries of a call cut by a
    dropped connection, then the error is reported."""
    return Retry(ExponentialWithJitterBackoff(cap=0.5, base=0.02), RETRIES)


@contextmanager
def unavailable() -> Iterator[None]:
    """Connection errors and timeouts as :class:`StoreUnavailableError` (UNAVAILABLE)."""
    try:
        yield
    except (redis_errors.ConnectionError, redis_errors.TimeoutError, TimeoutError) as error:
        raise StoreUnavailableError(f"redis unavailable: {error}") from error


def text(value: bytes | str) -> str:
    """A reply as text (the stores' clients return bytes)."""
    return value if isinstance(value, str) else value.decode()
