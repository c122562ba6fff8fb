"""Health follows the store: a real redis-server stopped and started under a running server.

While Redis is down the table service, the settlement feed and the overall ("") status are
NOT_SERVING (Kubernetes readiness asks ""), the rules service stays SERVING and answers;
when Redis is back everything is SERVING again. The log says so once per change, and the
background loops say once that they fail (no traceback, no line per try), then back off.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import shutil
import time
from collections.abc import Awaitable, Callable, Iterator

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from ofc_service.application.periodic import MAX_BACKOFF_S, Periodic
from ofc_service.server.background import BackgroundServer
from ofc_service.server.config import ServerConfig
from ofc_service.server.health import StoreHealth
from ofc_service.store import StoreUnavailableError
from ofcpoker.v1 import rules_service_pb2 as rules_pb
from ofcpoker.v1.rules_service_pb2_grpc import RulesServiceStub

from tests.conftest import RedisServer, free_port

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
STORE_SERVICES = ("", "ofcpoker.v1.TableService", "ofcpoker.v1.SettlementFeedService")
RULES = "ofcpoker.v1.RulesService"


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    server = RedisServer()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)


def _statuses(health: health_pb2_grpc.HealthStub) -> dict[str, int]:
    return {
        name: health.Check(health_pb2.HealthCheckRequest(service=name), timeout=5).status
        for name in (*STORE_SERVICES, RULES)
    }


def _wait_for(health: health_pb2_grpc.HealthStub, store_status: int) -> dict[str, int]:
    """Every status, read once every store service has reported ``store_status`` in one
    pass. The server changes them all at once, but a pass reads them one call after
    another: a change between two calls shows the ones read before it unchanged (the more
    likely the slower each call, as on a loaded machine), so a pass that saw only some of
    them change is read again."""
    deadline = time.monotonic() + 15
    while True:
        statuses = _statuses(health)
        if all(statuses[name] == store_status for name in STORE_SERVICES):
            return statuses
        assert time.monotonic() < deadline, f"still {statuses}"
        time.sleep(0.05)


def _evaluates(channel: grpc.Channel) -> bool:
    request = rules_pb.EvaluateRowRequest(cards=["As", "Ad", "Ah"])
    return bool(RulesServiceStub(channel).EvaluateRow(request, timeout=5).hand.name)


def test_health_follows_the_store_and_says_so_once(
    redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A loaded machine may see any PING take longer than the health check waits for it (at
    start, or after the restart): that is a real change of state, said once, and its
    recovery too. So the test waits for the statuses it checks, and reads the log of the
    outage from the moment Redis stops."""
    config = ServerConfig(
        listen="127.0.0.1:0", metrics_listen="", http_listen="", redis_url=redis.url
    )
    with (
        caplog.at_level(logging.INFO, logger="ofc"),
        BackgroundServer(config) as server,
        grpc.insecure_channel(server.address) as channel,
    ):
        health = health_pb2_grpc.HealthStub(channel)
        assert set(_wait_for(health, SERVING).values()) == {SERVING}
        watch = health.Watch(health_pb2.HealthCheckRequest(service=STORE_SERVICES[1]))
        assert next(watch).status == SERVING  # a watch sends a status only when it changes

        outage = len(caplog.records)
        redis.stop()
        down = _wait_for(health, NOT_SERVING)
        assert down == {**dict.fromkeys(STORE_SERVICES, NOT_SERVING), RULES: SERVING}
        assert next(watch).status == NOT_SERVING  # watchers are told, too
        time.sleep(3)  # an outage of a few seconds: the loops try again and again
        assert _evaluates(channel), "the rules service needs no store"
        during = caplog.records[outage:]

        redis.start()
        up = _wait_for(health, SERVING)
        assert set(up.values()) == {SERVING}
        assert next(watch).status == SERVING
        watch.cancel()
        time.sleep(1.5)  # the loops' next step, after their backoff: they say they work
        assert set(_wait_for(health, SERVING).values()) == {SERVING}  # and "reachable" said
        records = [r for r in caplog.records[outage:] if r.name.startswith("ofc")]
    messages = [r.getMessage() for r in records]
    state_lines = ("store unreachable", "store reachable")
    changes = [m for m in messages if m in state_lines]
    # While Redis was down every ping failed: one line, however many pings.
    assert [m for r in during if (m := r.getMessage()) in state_lines] == [state_lines[0]]
    # After it: a line per change of state, each the opposite of the last, ending reachable.
    assert changes[0] == "store unreachable" and changes[-1] == "store reachable", messages
    assert all(a != b for a, b in itertools.pairwise(changes)), messages
    for loop in ("deadline sweep", "settlement relay sweep"):
        assert messages.count(f"{loop} failing") <= 1, messages
    assert all(r.exc_info is None for r in records), "an outage is no traceback"
    # Once per change, not per try: a few lines for a 3-second outage, whatever the loops do.
    assert len([r for r in during if r.levelno >= logging.WARNING]) <= 3, messages


def test_a_server_started_while_the_store_is_down_is_not_serving_tables() -> None:
    unreachable = f"redis://127.0.0.1:{free_port()}/0"
    config = ServerConfig(
        listen="127.0.0.1:0", metrics_listen="", http_listen="", redis_url=unreachable
    )
    with BackgroundServer(config) as server, grpc.insecure_channel(server.address) as channel:
        statuses = _statuses(health_pb2_grpc.HealthStub(channel))
        assert statuses == {**dict.fromkeys(STORE_SERVICES, NOT_SERVING), RULES: SERVING}
        assert _evaluates(channel)


def test_an_in_memory_store_is_always_serving() -> None:
    config = ServerConfig(listen="127.0.0.1:0", metrics_listen="", http_listen="")
    with BackgroundServer(config) as server, grpc.insecure_channel(server.address) as channel:
        assert set(_statuses(health_pb2_grpc.HealthStub(channel)).values()) == {SERVING}


def test_a_failing_loop_backs_off_and_says_so_once(caplog: pytest.LogCaptureFixture) -> None:
    outcomes = [StoreUnavailableError("down")] * 5 + [None, RuntimeError("a bug")]

    async def step() -> None:
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome

    loop = Periodic("test loop", step, 0.1)
    delays = []

    async def scenario() -> None:
        for _ in range(7):
            try:
                await loop.step()
            except Exception as error:
                loop._failed(error)
            else:
                loop._worked()
            delays.append(loop.delay_s())

    with caplog.at_level(logging.INFO, logger="ofc.periodic"):
        asyncio.run(scenario())
    assert delays == pytest.approx([0.2, 0.4, 0.8, 1.6, 3.2, 0.1, 0.2])
    assert Periodic("x", step, 0.1, max_backoff_s=MAX_BACKOFF_S).max_backoff_s == MAX_BACKOFF_S
    lines = [(r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert lines == [
        ("WARNING", "test loop failing", False),  # an outage: once, no traceback
        ("INFO", "test loop working again", False),
        ("ERROR", "test loop failing", True),  # a bug: once, with its traceback
    ]


def test_the_backoff_is_capped() -> None:
    async def never() -> None:
        raise StoreUnavailableError("down")

    loop = Periodic("capped", never, 0.25)
    loop.failures = 50
    assert loop.delay_s() == MAX_BACKOFF_S


def test_the_health_checks_stop_even_when_a_ping_swallows_the_cancellation() -> None:
    """redis-py's asyncio client, cancelled mid-command, often returns the answer rather
    than raise: the stop must not wait for a cancellation that never comes."""
    pings = itertools.count()

    async def ping() -> None:
        if next(pings) == 1:  # the first check (at start) and those after this one answer
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(3600)  # the answer "arrives" as the cancellation does

    async def scenario() -> bool:
        checks = StoreHealth(
            health.aio.HealthServicer(),
            (ping,),
            store_services=(),
            other_services=(),
            interval_s=0.01,
        )
        await checks.start()
        await asyncio.sleep(0.1)  # a check is in progress
        stopping = asyncio.ensure_future(checks.stop())
        done, _ = await asyncio.wait((stopping,), timeout=10)  # a bound for failing, not a figure
        if checks._task is not None:  # a loop that went on: end it (its pings now answer)
            checks._task.cancel()
        await stopping
        return bool(done)

    assert asyncio.run(scenario())


def test_the_pings_of_a_check_run_at_once() -> None:
    """On a Redis Cluster each ping (the table store's, the feed's) waits CLUSTER_PING_WAIT_S
    for a node that does not answer: one after the other they took the whole bound while one
    master was paused, and every replica went NOT_SERVING. Here each ping answers only once
    the other has started: pinged one after the other, the first would never answer."""

    async def scenario() -> bool:
        started = [asyncio.Event(), asyncio.Event()]

        def ping(mine: asyncio.Event, other: asyncio.Event) -> Callable[[], Awaitable[None]]:
            async def answer() -> None:
                mine.set()
                await other.wait()  # answers only once the other ping has started, too

            return answer

        checks = StoreHealth(
            health.aio.HealthServicer(),
            (ping(started[0], started[1]), ping(started[1], started[0])),
            store_services=(),
            other_services=(),
            timeout_s=10.0,  # a bound for failing: one after the other, the first never answers
        )
        return await checks.check()

    assert asyncio.run(scenario())
