"""Redis going away mid-game: calls fail with UNAVAILABLE (STORE_UNAVAILABLE) while it is
down, and the game goes on afterwards with nothing lost. (A server process killed with
SIGKILL mid-load is in test_table_replicas.py.)

The test's Redis writes an append-only file, fsynced on every write
(``--appendonly yes --appendfsync always``), so stopping and starting it is a real outage
(connections refused, scripts flushed) that loses no committed move, as a production Redis
with AOF would behave. Pausing the process (SIGSTOP) would not do: with no socket timeout
on the store's connections, calls would hang until their deadline instead of failing fast.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import grpc
import pytest
from ofc.rulesets import get_ruleset
from ofc_client import RetryableError, TableClient, TableView

from tests.conftest import RedisServer
from tests.e2e.tablekit import (
    API_KEY,
    LONG_TURN_MS,
    Watcher,
    audit_table,
    check_saw_each_event_once,
    naive_move,
    start_server,
    stored_table,
)

CLASSIC = get_ruleset("classic")


@pytest.fixture
def durable_redis() -> Iterator[RedisServer]:
    server = RedisServer("--appendonly", "yes", "--appendfsync", "always")
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)


def mover_of(view: TableView, players: list[TableClient], table_id: str) -> TableClient:
    assert view.hand is not None and view.hand.turn is not None
    player = players[view.hand.turn]
    player.get(table_id)
    return player


def test_a_redis_outage_fails_calls_as_unavailable_and_loses_nothing(
    durable_redis: RedisServer,
) -> None:
    with start_server(durable_redis.url) as a, start_server(durable_redis.url) as b:
        host = TableClient(a.address, api_key=API_KEY, retries=0)
        table_id = host.create_table(seats=2, turn_time_limit_ms=LONG_TURN_MS).table_id
        players = [TableClient(a.address, retries=0), TableClient(b.address, retries=0)]
        tokens = [p.join(table_id, s, f"p{s}") for s, p in enumerate(players)]
        eyes = TableClient(b.address)  # seat 0's watch, on the other replica
        eyes.use_seat(table_id, 0, tokens[0])
        watcher = Watcher(eyes, table_id).wait_for_snapshot()
        try:
            players[0].get(table_id)
            view = players[0].start_hand(table_id)
            for _ in range(3):
                player = mover_of(view, players, table_id)
                view = player.place(table_id, naive_move(player.get(table_id), CLASSIC)[0])
            before = host.get(table_id)
            player = mover_of(view, players, table_id)
            placements, _ = naive_move(player.get(table_id), CLASSIC)

            durable_redis.stop()
            with pytest.raises(RetryableError) as move_down:
                player.place(table_id, placements)
            with pytest.raises(RetryableError) as read_down:
                host.get(table_id)
            for down in (move_down.value, read_down.value):
                assert (down.code, down.reason) == (
                    grpc.StatusCode.UNAVAILABLE,
                    "STORE_UNAVAILABLE",
                )
            durable_redis.start()

            assert host.get(table_id) == before  # nothing lost, nothing half-applied
            moved = player.retry()  # the same request id, now that the store is back
            assert moved.version == before.version + 1
            assert player.retry() == moved and host.get(table_id).version == moved.version
            view = moved
            assert view.hand is not None
            while not view.hand.over:
                player = mover_of(view, players, table_id)
                view = player.place(table_id, naive_move(player.get(table_id), CLASSIC)[0])
                assert view.hand is not None
            record, version, stream = stored_table(durable_redis.url, table_id)
            watcher.wait_for_event_id(stream[-1].event_id, timeout=30)
        finally:
            watcher.stop()
        # Its stream either rode out the outage on the store's own retries or broke and was
        # resumed after its last event: either way, every event exactly once.
        check_saw_each_event_once(watcher, stream)
        audit_table(record, version, stream)
        history = host.hand_history(table_id, 1)
        final = view.hand
        assert final is not None and final.settlement is not None
        assert history.settlement.points == final.settlement.points
