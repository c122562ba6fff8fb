"""The production settlement feed: one Redis Stream with consumer groups.

Keys (``ofc`` is ``key_prefix``; all share the hash tag ``{settlements}``, so every script
here runs on one Redis Cluster slot, whatever slot a table lives in):

============================================  ======  ==========================================
``ofc:{settlements}:stream``                  stream  one entry per settlement: fields ``id``
                                                      (settlement id) and ``d`` (record bytes)
``ofc:{settlements}:relayed:<settlement id>``  string  the entry's stream id; expires after
                                                      ``dedupe_ttl_seconds``: a second publish
                                                      of the id inside that time is ignored
============================================  ======  ==========================================

Reading is ``XREADGROUP``: pending records with ``0`` (then the last id read) and new ones with
``>``; groups are created at ``0`` with ``MKSTREAM`` on first use. Blocking reads go through a
second connection pool without a socket timeout, like the table store's ``wait_events``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from redis import exceptions as redis_errors
from redis.commands.core import AsyncScript

from .base import StoreUnavailableError, check_at_least, format_event_id, parse_event_id
from .feed import (
    DEFAULT_DEDUPE_TTL_SECONDS,
    FeedEntry,
    check_count,
    check_name,
    check_settlement_id,
    check_stream_id,
)
from .redis_io import (
    RedisClient,
    SlotMapReader,
    blocking_read,
    confirmation,
    confirmed_count,
    connect,
    lua,
    on_one_connection,
    ping,
    text,
    unavailable,
    unconfirmed,
)

_BLOCK_GRACE_S: Final = 5.0


def _entries(flat: list[Any]) -> list[FeedEntry]:
    """Script replies of flat (stream id, settlement id, record) triples as entries."""
    return [
        FeedEntry(text(flat[i]), text(flat[i + 1]), bytes(flat[i + 2]))
        for i in range(0, len(flat), 3)
    ]


class RedisSettlementFeed:
    """:class:`~ofc_service.store.feed.SettlementFeed` on a Redis Stream (module docstring)."""

    def __init__(
        self,
        client: RedisClient,
        *,
        blocking: RedisClient | None = None,
        key_prefix: str = "ofc",
        dedupe_ttl_seconds: int = DEFAULT_DEDUPE_TTL_SECONDS,
        owns_clients: bool = False,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 500,
    ) -> None:
        """``client`` must not decode responses; ``blocking`` (default: ``client``) serves
        ``XREADGROUP BLOCK`` and should have no socket timeout. ``wait_replicas`` > 0: each
        record appended is followed by ``WAIT wait_replicas wait_timeout_ms`` on its
        connection, as the table store's commits are, and one fewer replicas confirmed raises
        :class:`StoreUnavailableError`: the relay then keeps the hand's outbox record (which
        its commit had confirmed) and appends again later (the append is idempotent by
        settlement id), so that no failover loses both."""
        self._wait = (
            check_at_least(wait_replicas, 0, what="wait_replicas"),
            check_at_least(wait_timeout_ms, 1, what="wait_timeout_ms"),
        )
        self._client = client
        self._blocking = blocking if blocking is not None else client
        self._prefix = key_prefix
        self._dedupe_ttl = check_at_least(dedupe_ttl_seconds, 1, what="dedupe_ttl_seconds")
        self._owns_clients = owns_clients
        self._stream = f"{key_prefix}:{{settlements}}:stream"
        self._confirm_key = f"{key_prefix}:{{settlements}}:confirm"  # (_append_and_wait)
        self._groups: set[str] = set()  # groups this instance knows to exist
        self._slot_map = SlotMapReader(client)  # read again after a node did not answer
        self._publish: AsyncScript = client.register_script(lua("feed_publish.lua"))
        self._pending: AsyncScript = client.register_script(lua("feed_pending.lua"))
        self._ack: AsyncScript = client.register_script(lua("feed_ack.lua"))
        self._trim: AsyncScript = client.register_script(lua("feed_trim.lua"))

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        key_prefix: str = "ofc",
        dedupe_ttl_seconds: int = DEFAULT_DEDUPE_TTL_SECONDS,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 500,
    ) -> RedisSettlementFeed:
        """A feed with its own two connection pools (commands, and blocking reads), on one
        server or a Redis Cluster (:func:`~.redis_io.connect`)."""

        return cls(
            connect(url, wait_timeout_ms=wait_timeout_ms),
            blocking=connect(url, blocking=True),
            key_prefix=key_prefix,
            dedupe_ttl_seconds=dedupe_ttl_seconds,
            owns_clients=True,
            wait_replicas=wait_replicas,
            wait_timeout_ms=wait_timeout_ms,
        )

    def _dedupe_key(self, settlement_id: str) -> str:
        return f"{self._prefix}:{{settlements}}:relayed:{check_settlement_id(settlement_id)}"

    # --- writing ----------------------------------------------------------------------------
    @property
    def dedupe_ttl_seconds(self) -> int:
        """How long a settlement id is remembered: published again inside it, it is not
        appended again."""
        return self._dedupe_ttl

    async def publish(self, settlement_id: str, data: bytes) -> str | None:
        keys = [self._stream, self._dedupe_key(settlement_id)]
        args: list[bytes | str | int] = [settlement_id, data, self._dedupe_ttl]
        with unavailable():
            if self._wait[0]:
                added, stream_id = await self._published_and_confirmed(keys, args)
            else:
                added, stream_id = await self._publish(keys=keys, args=args)
        return text(stream_id) if added else None

    async def _published_and_confirmed(
        self, keys: list[str], args: list[bytes | str | int]
    ) -> list[Any]:
        """The append script, confirmed by ``WAIT`` (else StoreUnavailableError)."""
        reply, *replies = await self._append_and_wait(keys, args)
        if isinstance(reply, redis_errors.NoScriptError):
            await self._client.script_load(self._publish.script)  # every master
            reply, *replies = await self._append_and_wait(keys, args)
        if isinstance(reply, Exception):
            raise reply
        confirmed = confirmed_count(*replies)
        if unconfirmed(confirmed, self._wait[0]):
            raise StoreUnavailableError(
                f"the feed record {args[0]!r} was not confirmed by {self._wait[0]} Redis "
                f"replica(s) within {self._wait[1]} ms ({confirmed!r}); the relay appends it "
                "again (once) later"
            )
        result: list[Any] = reply
        return result

    async def _append_and_wait(self, keys: list[str], args: list[bytes | str | int]) -> list[Any]:
        """The append script and a :func:`~.redis_io.confirmation` on a key of the stream's
        slot, on one connection to the stream's master; their replies (errors in their
        places). The script writes nothing for a settlement id already appended (a retry,
        another replica's relay): the confirmation's own write confirms the record too."""
        return await on_one_connection(
            self._client,
            keys[0],
            [
                ("EVALSHA", self._publish.sha, len(keys), *keys, *args),
                *confirmation(self._confirm_key, self._wait),
            ],
            self._slot_map,
        )

    # --- groups -----------------------------------------------------------------------------
    async def _ensure_group(self, group: str) -> None:
        if group in self._groups:
            return
        try:
            await self._client.xgroup_create(self._stream, group, id="0", mkstream=True)
        except redis_errors.ResponseError as error:
            if "BUSYGROUP" not in str(error):
                raise
        self._groups.add(group)

    async def _in_group(self, group: str, call: Any) -> Any:
        """Run ``call()`` with the group in place; once more if it vanished meanwhile (the
        stream was deleted), after creating it again."""
        await self._ensure_group(group)
        try:
            return await call()
        except redis_errors.ResponseError as error:
            if "NOGROUP" not in str(error):
                raise
            self._groups.discard(group)
            await self._ensure_group(group)
            return await call()

    # --- reading ----------------------------------------------------------------------------
    async def read_pending(
        self, group: str, consumer: str, *, after: str = "0", count: int = 100
    ) -> list[FeedEntry]:
        check_name(group, what="group")
        check_name(consumer, what="consumer")
        start = format_event_id(*parse_event_id(after))
        check_count(count)

        async def call() -> list[Any]:
            reply: list[Any] = await self._pending(
                keys=[self._stream], args=[group, consumer, start, count]
            )
            return reply

        with unavailable():
            return _entries(await self._in_group(group, call))

    async def read_new(
        self, group: str, consumer: str, *, count: int = 100, block_s: float = 0.0
    ) -> list[FeedEntry]:
        check_name(group, what="group")
        check_name(consumer, what="consumer")
        check_count(count)
        block_ms = max(1, round(block_s * 1000)) if block_s > 0 else None
        client = self._blocking if block_ms is not None else self._client

        async def call() -> list[Any]:
            async with blocking_read(client, self._stream, block_s + _BLOCK_GRACE_S):
                reply: Any = await client.xreadgroup(
                    group, consumer, {self._stream: ">"}, count=count, block=block_ms
                )
            # [[stream, entries]] (RESP2) or {stream: entries} (RESP3, unified replies)
            streams = reply.items() if isinstance(reply, dict) else reply or ()
            return [entry for _, entries in streams for entry in entries]

        with unavailable():
            entries = await self._in_group(group, call)
        found = []
        for stream_id, fields in entries:
            found.append(FeedEntry(text(stream_id), text(fields[b"id"]), bytes(fields[b"d"])))
        return found

    async def acknowledge(self, group: str, stream_ids: Sequence[str]) -> list[FeedEntry]:
        check_name(group, what="group")
        ids = [check_stream_id(s) for s in stream_ids]
        if not ids:
            return []
        with unavailable():
            reply: list[Any] = await self._ack(keys=[self._stream], args=[group, *ids])
        return _entries(reply)

    async def stream_ids(self, settlement_ids: Sequence[str]) -> dict[str, str]:
        keys = [self._dedupe_key(s) for s in settlement_ids]
        if not keys:
            return {}
        with unavailable():
            values: list[Any] = await self._client.mget(keys)
        return {s: text(v) for s, v in zip(settlement_ids, values, strict=True) if v is not None}

    async def trim(self, before_ms: int) -> int:
        check_at_least(before_ms, 0, what="before_ms")
        with unavailable():
            return int(await self._trim(keys=[self._stream], args=[f"{before_ms}-0"]))

    async def ping(self) -> None:
        with unavailable():
            await ping(self._client)

    async def close(self) -> None:
        await self._slot_map.close()
        if self._owns_clients:
            await self._client.aclose()
            if self._blocking is not self._client:
                await self._blocking.aclose()
