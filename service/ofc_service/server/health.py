"""Health that tells the truth: the services that need the store follow the store.

Every second the server pings its table store and settlement feed. While they do not
answer, ``ofcpoker.v1.TableService``, ``ofcpoker.v1.SettlementFeedService`` and the overall
``""`` service are NOT_SERVING; ``ofcpoker.v1.RulesService`` (it needs no store), health and
reflection stay SERVING. ``""`` means "everything this replica offers works": Kubernetes
readiness asks it, so a replica that cannot reach Redis leaves the load balancer until it
can, while liveness asks the rules service, so an outage restarts nothing
(deploy/README.md). The log says it once per change of state, never at every ping.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence

from grpc_health.v1 import health, health_pb2

log = logging.getLogger("ofc.health")

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
CHECK_INTERVAL_S = 1.0
PING_TIMEOUT_S = 2.0  # a store that takes longer than this to answer PING is not serving


class StoreHealth:
    """Keeps the health of the store's services in step with the store (see the module)."""

    def __init__(
        self,
        servicer: health.aio.HealthServicer,
        pings: Sequence[Callable[[], Awaitable[None]]],
        *,
        store_services: Iterable[str],
        other_services: Iterable[str],
        on_recovery: Sequence[Callable[[], None]] = (),
        interval_s: float = CHECK_INTERVAL_S,
        timeout_s: float = PING_TIMEOUT_S,
    ) -> None:
        self.servicer = servicer
        self.pings = pings
        self.store_services = ("", *store_services)
        self.other_services = tuple(other_services)
        self.on_recovery = on_recovery
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.reachable: bool | None = None  # None: not checked yet
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    async def check(self) -> bool:
        """Ping the store once and set every status to match; True when it answered."""
        error = ""
        try:
            # At once: on a Redis Cluster a ping waits CLUSTER_PING_WAIT_S for a node that
            # does not answer, and the table store's and the feed's, one after the other,
            # took the whole bound while one master was paused (NOT_SERVING everywhere).
            async with asyncio.timeout(self.timeout_s):
                await asyncio.gather(*(ping() for ping in self.pings))
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            error = f"no answer within {self.timeout_s} s"
        except Exception as exc:  # StoreUnavailableError, or whatever the client raised
            error = str(exc) or type(exc).__name__
        await self._set(not error, error)
        return not error

    async def _set(self, reachable: bool, error: str) -> None:
        if reachable == self.reachable:
            return
        first = self.reachable is None
        self.reachable = reachable
        status = SERVING if reachable else NOT_SERVING
        for name in self.store_services:
            await self.servicer.set(name, status)
        if first:
            for name in self.other_services:
                await self.servicer.set(name, SERVING)
        fields: dict[str, object] = {"services": list(self.store_services)}
        if not reachable:
            fields.update(error=error, status="NOT_SERVING")
            log.warning("store unreachable", extra={"fields": fields})
        elif not first:
            fields.update(status="SERVING")
            log.info("store reachable", extra={"fields": fields})
            for callback in self.on_recovery:
                callback()

    async def _run(self) -> None:
        while not self._stopping:
            await asyncio.sleep(self.interval_s)
            await self.check()

    async def start(self) -> None:
        """Set every status from a first check, then keep checking in the background."""
        await self.check()
        if self._task is None:
            self._stopping = False
            self._task = asyncio.get_running_loop().create_task(self._run(), name="health")

    async def stop(self) -> None:
        if self._task is not None:
            # The flag ends the loop even when the ping swallows the cancellation: redis-py's
            # asyncio client, cancelled mid-command, often returns the answer instead of
            # raising (most of the time for a PING on a Redis Cluster, on this Python 3.11).
            self._stopping = True
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


__all__ = ["CHECK_INTERVAL_S", "StoreHealth"]
