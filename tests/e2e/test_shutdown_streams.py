"""A stopping replica ends its streams at once, and a watching client resumes elsewhere.

Two replicas on one Redis; the first one stops with a long grace period. Its open Watch and
Subscribe streams end within a second with UNAVAILABLE and reason SERVER_SHUTTING_DOWN, so
the stop takes a moment, not the grace; the Python client's watch (given both replicas)
reconnects to the other one and goes on after the last event it received: the next move
arrives once, nothing is lost or repeated. (The process-level test, SIGTERM to a real
``ofc serve``, is in test_serve_process.py.)
"""

from __future__ import annotations

import threading
import time

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from ofc_client import TableClient
from ofcpoker.v1 import settlement_feed_pb2 as feed_pb
from ofcpoker.v1 import table_service_pb2 as tables_pb
from ofcpoker.v1.settlement_feed_pb2_grpc import SettlementFeedServiceStub
from ofcpoker.v1.table_service_pb2_grpc import TableServiceStub

from tests.e2e.tablekit import API_KEY, Watcher, failover_target, start_server

OPERATOR = (("x-ofc-api-key", API_KEY),)
GRACE_SECONDS = 60.0  # what the streams would hold the stop for: far from the bounds below


def reason_of(error: grpc.RpcError) -> str:
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            for detail in status_pb2.Status.FromString(value).details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info):
                    return str(info.reason)
    return ""


def test_stopping_ends_streams_at_once_and_watchers_resume_elsewhere(any_redis_url: str) -> None:
    with start_server(any_redis_url) as a, start_server(any_redis_url) as b:
        host = TableClient(b.address, api_key=API_KEY)
        table_id = host.create_table(seats=2).table_id
        TableClient(b.address).join(table_id, 0, "first")
        eyes = TableClient(failover_target([a.address, b.address], 0))
        watcher = Watcher(eyes, table_id).wait_for_snapshot()

        with grpc.insecure_channel(a.address) as channel:
            raw_watch = TableServiceStub(channel).Watch(
                tables_pb.WatchRequest(table_id=table_id), metadata=OPERATOR
            )
            next(raw_watch)  # the snapshot: the stream is open on replica a
            subscription = SettlementFeedServiceStub(channel).Subscribe(
                feed_pb.SubscribeRequest(group="ledger", consumer="c1"), metadata=OPERATOR
            )
            time.sleep(0.3)  # both streams reach their handlers and wait for news

            started = time.monotonic()
            stopper = threading.Thread(target=a.stop, kwargs={"grace": GRACE_SECONDS})
            stopper.start()
            for stream in (raw_watch, subscription):
                with pytest.raises(grpc.RpcError) as ended:
                    next(stream)
                assert ended.value.code() == grpc.StatusCode.UNAVAILABLE
                assert reason_of(ended.value) == "SERVER_SHUTTING_DOWN"
                assert time.monotonic() - started < 20.0  # not the grace
            stopper.join(timeout=GRACE_SECONDS + 5)
            stopped_in = time.monotonic() - started
        assert stopped_in < 30.0, f"the stop took {stopped_in:.1f} s: streams held it"

        # The client's watch moved to replica b: the next event arrives, once.
        TableClient(b.address).join(table_id, 1, "second")
        newest = host.get(table_id).last_event_id
        watcher.wait_for_event_id(newest)
        assert watcher.error is None and watcher.watch.reconnects >= 1
        positions = [tuple(map(int, e.event_id.split("-"))) for e in watcher.events]
        assert positions == sorted(set(positions)), "each event once, in order"
        assert all(e.version > watcher.snapshot.version for e in watcher.events)
        watcher.stop()
