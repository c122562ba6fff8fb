"""``ofc serve --workers N`` as real processes on a throwaway Redis: every worker serves on
the one port, one /metrics sums them, a dead worker is logged and replaced, SIGTERM stops
them all, and the in-memory store is refused."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from ofcpoker.v1 import rules_service_pb2 as pb
from ofcpoker.v1.rules_service_pb2_grpc import RulesServiceStub

from tests.api.wire import EXAMPLE_1_B, EXAMPLE_A, hand

OFC = Path(sys.executable).with_name("ofc")
GRACE_SECONDS = 5
MAX_CONNECTIONS = 200  # SO_REUSEPORT hashes each connection: all on one worker is 2**-199
SETTLE_REQUEST = pb.SettleHandRequest(hand=hand(EXAMPLE_A, EXAMPLE_1_B))


class Workers:
    """``ofc serve --workers 2`` on port 0 (the supervisor picks one), its stderr collected."""

    def __init__(self, redis_url: str) -> None:
        env = {**os.environ, "OFC_API_KEYS": "", "OFC_REDIS_URL": redis_url}
        self.process = subprocess.Popen(
            [str(OFC), "serve", "--workers", "2", "--listen", "127.0.0.1:0",
             "--metrics-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0",
             "--log-level", "debug",
             "--grace-seconds", str(GRACE_SECONDS)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.lines: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        serving = self.wait_for(lambda line: line["msg"] == "serving" and "pids" in line)
        self.address: str = serving["listen"]
        self.metrics_url = f"http://127.0.0.1:{serving['metrics_port']}/metrics"
        self.http_url = f"http://{serving['http_listen']}"
        self.pids: list[int] = serving["pids"]
        self.metrics_dir: str = serving["metrics_dir"]

    def _read(self) -> None:
        assert self.process.stderr is not None
        for text in self.process.stderr:
            self.lines.append(json.loads(text))  # a line that is not JSON fails the test

    def wait_for(self, match: Callable[[dict[str, Any]], bool], seconds: float = 30) -> Any:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if match(line):
                    return line
            if self.process.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.05)
        raise AssertionError(f"no such log line; the log: {self.lines}")

    def settle_on_new_connections(self, tag: str, until_pids: set[int]) -> dict[int, int]:
        """SettleHand once per new connection until workers ``until_pids`` each answered
        one: how many calls each worker (pid) answered, from the access log."""
        served: dict[int, int] = {}
        for k in range(MAX_CONNECTIONS):
            # A private subchannel pool: a new TCP connection, not the shared one.
            options = (("grpc.use_local_subchannel_pool", 1),)
            with grpc.insecure_channel(self.address, options=options) as channel:
                request_id = f"{tag}-{k}"
                response = RulesServiceStub(channel).SettleHand(
                    SETTLE_REQUEST, metadata=(("x-request-id", request_id),), timeout=20
                )
                assert [p.points for p in response.settlement.players] == [8, -8]
            line = self.wait_for(_request_line(request_id))
            served[line["pid"]] = served.get(line["pid"], 0) + 1
            if until_pids <= set(served):
                return served
        raise AssertionError(f"not every worker answered in {MAX_CONNECTIONS}: {served}")

    def settle_over_connect(self, tag: str) -> dict[int, int]:
        """Connect JSON SettleHand on a new HTTP connection each time until every worker
        answered one: how many each worker (pid) answered, from the access log."""
        body = json_format.MessageToJson(SETTLE_REQUEST).encode()
        served: dict[int, int] = {}
        for k in range(MAX_CONNECTIONS):
            request_id = f"{tag}-{k}"
            call = urllib.request.Request(
                f"{self.http_url}/ofcpoker.v1.RulesService/SettleHand",
                data=body,
                headers={"content-type": "application/json", "x-request-id": request_id,
                         "connection": "close"},
            )  # fmt: skip
            with urllib.request.urlopen(call, timeout=20) as response:
                points = [p["points"] for p in json.load(response)["settlement"]["players"]]
            assert points == [8, -8]
            line = self.wait_for(_request_line(request_id))
            served[line["pid"]] = served.get(line["pid"], 0) + 1
            if set(self.pids) <= set(served):
                return served
        raise AssertionError(f"not every worker answered in {MAX_CONNECTIONS}: {served}")

    def metric(self, name: str, labels: str) -> float:
        with urllib.request.urlopen(self.metrics_url, timeout=5) as scrape:
            text = scrape.read().decode()
        match = re.search(rf"^{name}{{{labels}}} (\S+)$", text, re.MULTILINE)
        return float(match[1]) if match else 0.0

    def settled(self) -> float:
        return self.metric(
            "grpc_server_handled_total",
            'grpc_code="OK",grpc_method="SettleHand",'
            'grpc_service="ofcpoker.v1.RulesService",grpc_type="unary",protocol="grpc"',
        )

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=GRACE_SECONDS + 10)
        self._reader.join(timeout=5)
        return code


def _request_line(request_id: str) -> Callable[[dict[str, Any]], bool]:
    return lambda line: line.get("request_id") == request_id


def _shutting_down(pid: int) -> Callable[[dict[str, Any]], bool]:
    return lambda line: line["msg"] == "shutting down" and line.get("pid") == pid


@pytest.fixture
def workers(redis_url: str) -> Iterator[Workers]:
    w = Workers(redis_url)
    try:
        yield w
    finally:
        if w.process.poll() is None:
            w.process.kill()
            w.process.wait()
        for pid in w.pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) is not serving.
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"


def _wait_until(condition: Callable[[], bool], seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_both_workers_serve_one_port_and_one_endpoint_sums_their_metrics(
    workers: Workers,
) -> None:
    assert len(set(workers.pids)) == 2 and workers.process.pid not in workers.pids
    served = workers.settle_on_new_connections("spread", set(workers.pids))
    assert set(served) == set(workers.pids)
    calls = sum(served.values())
    assert _wait_until(lambda: workers.settled() == calls), (workers.settled(), calls)
    assert workers.metric("ofc_hands_settled_total", 'ruleset="classic",source="rules"') == calls

    sent_at = time.monotonic()
    assert workers.stop() == 0
    assert time.monotonic() - sent_at < GRACE_SECONDS + 2
    assert not any(_alive(pid) for pid in workers.pids)
    assert not os.path.exists(workers.metrics_dir)  # the supervisor's temp dir is removed
    stopped = [line for line in workers.lines if line["msg"] == "worker stopped"]
    assert sorted((line["pid"], line["status"]) for line in stopped) == sorted(
        (pid, "exit 0") for pid in workers.pids
    )
    assert workers.lines[-1]["msg"] == "stopped" and workers.lines[-1]["logger"] == "ofc.workers"


def test_both_workers_serve_the_http_port_too(workers: Workers) -> None:
    """The Connect port is shared like the gRPC one (SO_REUSEPORT): port 0 is resolved once
    by the supervisor, and new connections reach every worker."""
    assert workers.http_url.rsplit(":", 1)[1] != "0"
    served = workers.settle_over_connect("http")
    assert set(served) == set(workers.pids)
    assert workers.stop() == 0


def test_a_worker_that_dies_is_logged_and_replaced_and_its_counts_stay(
    workers: Workers,
) -> None:
    served = workers.settle_on_new_connections("before", set(workers.pids))
    before = sum(served.values())
    assert _wait_until(lambda: workers.settled() == before)
    victim, survivor = workers.pids
    os.kill(victim, signal.SIGKILL)
    exited = workers.wait_for(lambda line: line["msg"] == "worker exited")
    assert (exited["pid"], exited["status"], exited["restart"]) == (victim, "signal SIGKILL", True)
    replaced = workers.wait_for(
        lambda line: line["msg"] == "worker serving" and line["pid"] not in workers.pids
    )
    assert replaced["worker"] == exited["worker"]
    workers.pids.append(replaced["pid"])

    served = workers.settle_on_new_connections("after", {survivor, replaced["pid"]})
    assert victim not in served
    after = sum(served.values())
    # The dead worker's calls stay in the sums: a counter never goes backwards.
    assert _wait_until(lambda: workers.settled() == before + after)
    assert workers.stop() == 0
    assert not any(_alive(pid) for pid in workers.pids)


def _children(parent: int) -> set[int]:
    """The live processes whose parent is ``parent`` (from /proc: no helper package)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue  # gone meanwhile
        if int(fields[1]) == parent and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


def test_a_replacement_killed_before_it_serves_is_replaced_again_and_the_others_go_on(
    workers: Workers,
) -> None:
    """A worker killed as it starts (the kernel's OOM killer, say) after its place served:
    not a start-up failure that takes the serving workers down, but a restart like any."""
    victim, survivor = workers.pids
    os.kill(victim, signal.SIGKILL)
    workers.wait_for(lambda line: line["msg"] == "worker exited" and line["pid"] == victim)
    known = {victim, survivor}
    assert _wait_until(lambda: bool(_children(workers.process.pid) - known), 10)
    (starting,) = _children(workers.process.pid) - known
    os.kill(starting, signal.SIGKILL)  # a Python worker takes far longer than this to serve
    exited = workers.wait_for(
        lambda line: line["msg"] == "worker exited" and line["pid"] == starting
    )
    assert (exited["status"], exited["served"], exited["restart"]) == (
        "signal SIGKILL",
        False,
        True,
    )
    assert not any(line["msg"] == "worker exited before it served" for line in workers.lines)
    replaced = workers.wait_for(
        lambda line: line["msg"] == "worker serving" and line["pid"] not in known | {starting}
    )
    workers.pids.append(replaced["pid"])
    assert workers.process.poll() is None  # the supervisor went on, and so did the survivor
    served = workers.settle_on_new_connections("after", {survivor, replaced["pid"]})
    assert set(served) == {survivor, replaced["pid"]}
    assert workers.stop() == 0


def test_more_than_one_worker_needs_redis() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OFC_REDIS_URL"}
    result = subprocess.run(
        [str(OFC), "serve", "--workers", "2", "--listen", "127.0.0.1:0"],
        env=env, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert "OFC_WORKERS / --workers: 2 workers need a shared store" in result.stderr
    assert "OFC_REDIS_URL" in result.stderr


def test_a_second_sigterm_makes_every_worker_exit_at_once(workers: Workers) -> None:
    q: queue.Queue[pb.SettleHandsStreamRequest | None] = queue.Queue()

    def requests() -> Iterator[pb.SettleHandsStreamRequest]:
        while (item := q.get(timeout=60)) is not None:
            yield item

    try:
        with grpc.insecure_channel(workers.address) as channel:
            # A call in flight that never ends by itself: its worker's drain takes the grace.
            responses = RulesServiceStub(channel).SettleHandsStream(requests())
            q.put(pb.SettleHandsStreamRequest(hand_id="held", hand=hand(EXAMPLE_A, EXAMPLE_1_B)))
            assert next(responses).hand_id == "held"
            workers.process.send_signal(signal.SIGTERM)
            for pid in workers.pids:
                workers.wait_for(_shutting_down(pid))
            workers.process.send_signal(signal.SIGTERM)
            code = workers.process.wait(timeout=GRACE_SECONDS + 10)
    finally:
        q.put(None)
    workers._reader.join(timeout=5)
    messages = [line["msg"] for line in workers.lines]
    assert "second signal: workers told to exit at once" in messages, workers.lines
    assert "exiting at once on a second signal" in messages, workers.lines  # the held worker's
    assert code == 1  # a worker cut short is not a clean stop
