"""Shared fixtures: deterministic Hypothesis, and throwaway Redis (one server, or a cluster).

Tests never touch the machine's own Redis on 6379. ``redis_url`` (one server) and
``redis_cluster_url`` (a Redis Cluster: three masters, each with one replica) come from, in
this order (see tests/README.md):

1. ``REDIS_URL`` / ``REDIS_CLUSTER_URL`` when set: a throwaway instance, emptied per test;
2. testcontainers when a Docker engine answers (``redis:7.0``; the cluster runs six
   ``redis-server``s in one container on the host network, so Linux engines only);
3. else private ``redis-server`` processes on free ports, started from the local binary
   (no persistence), as on machines without Docker.

The session says which source it used at the end of the run (``redis: ...``). Tests that
stop, restart or kill Redis take ``redis_server`` / ``fresh_cluster`` instead: those are
always local processes.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, settings

settings.register_profile(
    "deterministic",
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

# Scripts that write test data with older releases' code on the path: not collected.
collect_ignore = [
    "golden/generate.py",
    "store/legacy_records/generate.py",
    "store/format7_records/generate.py",
]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    """A certificate for ``localhost`` and 127.0.0.1 (its own CA) and its key: PEM files."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext",
         "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


class RedisServer:
    """A private redis-server process; ``restart()`` keeps the port (scripts are flushed)."""

    def __init__(self, *extra_args: str) -> None:
        """``extra_args`` go last on the command line (``"--appendonly", "yes"`` wins)."""
        self.extra_args = extra_args
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not on PATH (apt-get install redis-server)")
        self.binary = binary
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="ofc-redis-")
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir, "--protected-mode", "no",
             *self.extra_args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)


CLUSTER_NODES = 6  # three masters, each with one replica
CLUSTER_NODE_TIMEOUT_MS = 1000  # a dead master's replica takes over after about two of these
SHARED_CLUSTER_NODE_TIMEOUT_MS = 15_000
"""The session's shared cluster, whose tests assume no fault: a node of a saturated machine
(four test workers and their servers on two cores) can miss a 1 s timeout, and the failover
that follows would answer their calls UNAVAILABLE or, with no ``WAIT``, take two winners of
one version (as documented). The tests that provoke faults take :func:`fresh_cluster`."""


def cluster_ports(count: int) -> list[int]:
    """Free ports whose cluster bus port (port + 10000) is free too."""
    ports: list[int] = []
    while len(ports) < count:
        port = random.randrange(20000, 30000)
        if port in ports:
            continue
        try:
            for candidate in (port, port + 10000):
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                    sock.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        ports.append(port)
    return ports


class LocalRedisCluster:
    """A Redis Cluster of private ``redis-server`` processes: three masters with a replica
    each, slots spread by ``redis-cli --cluster create``. ``kill``/``start`` one node and
    ``wait_ok`` to provoke failovers; ``stop`` ends them all."""

    def __init__(self, *, node_timeout_ms: int = CLUSTER_NODE_TIMEOUT_MS) -> None:
        self.node_timeout_ms = node_timeout_ms
        self.dir = tempfile.mkdtemp(prefix="ofc-redis-cluster-")
        self.ports = cluster_ports(CLUSTER_NODES)
        self.processes: dict[int, subprocess.Popen[bytes]] = {}
        try:
            for port in self.ports:
                self.start(port)
            subprocess.run(
                ["redis-cli", "--cluster", "create",
                 *(f"127.0.0.1:{p}" for p in self.ports),
                 "--cluster-replicas", "1", "--cluster-yes"],
                check=True, capture_output=True, timeout=180,  # slow only on a saturated machine
            )  # fmt: skip
            self.wait_ok()
            self.wait_replicas_online()
        except BaseException:
            self.stop()
            raise

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def client(self, port: int) -> redis.Redis:
        return redis.Redis(port=port, socket_timeout=5)

    def start(self, port: int) -> None:
        """Start (or restart, with its saved cluster config) the node on ``port``."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not on PATH (apt-get install redis-server)")
        self.processes[port] = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir, "--protected-mode", "no",
             "--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf",
             "--cluster-node-timeout", str(self.node_timeout_ms),
             "--repl-diskless-sync-delay", "0"],  # a replica syncs at once, not after 5 s
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(redis.RedisError):
                if self.client(port).ping():
                    return
            time.sleep(0.05)
        raise RuntimeError(f"redis-server did not start on port {port}")

    @contextlib.contextmanager
    def stopped(self, port: int) -> Iterator[None]:
        """SIGSTOP the node for the block (no answer and no error, as a paused VM or a
        partition without resets); meanwhile the helpers ask the live nodes only."""
        process = self.processes.pop(port)
        os.kill(process.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(process.pid, signal.SIGCONT)
            self.processes[port] = process

    def kill(self, port: int) -> None:
        """SIGKILL the node: no goodbye to its replica, as a crashed machine."""
        process = self.processes.pop(port)
        process.kill()
        process.wait(timeout=10)

    def live_ports(self) -> list[int]:
        return [p for p in self.ports if p in self.processes]

    def nodes(self) -> list[dict[str, Any]]:
        """``CLUSTER NODES`` as a live node sees it: port, role, id, master id, slot ranges."""
        client = self.client(self.live_ports()[0])
        parsed: dict[str, Any] = client.execute_command(  # type: ignore[no-untyped-call]
            "CLUSTER NODES"
        )  # redis-py parses the reply: {"host:port": {...}}
        return [
            {
                "port": int(address.rsplit(":", 1)[1]),
                "role": "master" if "master" in node["flags"] else "replica",
                "id": node["node_id"],
                "master": node["master_id"],
                "slots": [(int(part[0]), int(part[-1])) for part in node["slots"]],
            }
            for address, node in parsed.items()
        ]

    def masters(self) -> list[int]:
        """The ports of the live masters that serve slots."""
        return sorted(
            n["port"]
            for n in self.nodes()
            if n["role"] == "master" and n["slots"] and n["port"] in self.processes
        )

    def master_of(self, key: str) -> int:
        """The port of the master serving ``key``'s slot now."""
        slot = self.client(self.live_ports()[0]).cluster("KEYSLOT", key)
        for node in self.nodes():
            serves = any(low <= slot <= high for low, high in node["slots"])
            if node["role"] == "master" and node["port"] in self.processes and serves:
                return int(node["port"])
        raise LookupError(f"no live master serves slot {slot}")

    def replica_of(self, master_port: int, timeout_s: float = 30.0) -> int:
        """The port of the master's replica, as the master itself says: another node's
        ``CLUSTER NODES`` may not have heard of the replica yet (gossip)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with contextlib.suppress(redis.RedisError):
                info = self.client(master_port).info("replication")
                replica = dict(info.get("slave0") or {})
                if replica.get("port"):
                    return int(replica["port"])
            time.sleep(0.1)
        raise RuntimeError(f"the master on {master_port} has no replica")

    def wait_promoted(self, replica_port: int, timeout_s: float = 30.0) -> None:
        """Until ``replica_port`` serves slots as a master and the cluster is ok again."""
        deadline = time.monotonic() + timeout_s
        while replica_port not in self.masters():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the replica on {replica_port} was not promoted")
            time.sleep(0.1)
        self.wait_ok(timeout_s)

    def migrate_slot(self, key: str, to_port: int, *, batch: int = 2, pause_s: float = 0.01) -> int:
        """Move ``key``'s slot to the master on ``to_port`` as ``redis-cli --cluster reshard``
        does (IMPORTING/MIGRATING, MIGRATE the keys in small batches, SETSLOT NODE on every
        master), slowly enough for clients to meet ASK and TRYAGAIN; the keys moved."""
        slot = int(self.client(self.live_ports()[0]).cluster("KEYSLOT", key))
        from_port = self.master_of(key)
        ids = {n["port"]: n["id"] for n in self.nodes()}
        source, target = self.client(from_port), self.client(to_port)
        target.cluster("SETSLOT", slot, "IMPORTING", ids[from_port])
        source.cluster("SETSLOT", slot, "MIGRATING", ids[to_port])
        moved = 0
        while keys := source.cluster("GETKEYSINSLOT", slot, batch):
            source.migrate("127.0.0.1", to_port, keys, 0, 5000)
            moved += len(keys)
            time.sleep(pause_s)
        for port in self.masters():
            self.client(port).cluster("SETSLOT", slot, "NODE", ids[to_port])
        return moved

    def wait_ok(self, timeout_s: float = 30.0) -> None:
        """Until every live node says ``cluster_state:ok`` and agrees all slots are served."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with contextlib.suppress(redis.RedisError):
                infos = [self.client(p).cluster("INFO") for p in self.live_ports()]
                if all(
                    i.get("cluster_state") == "ok" and int(i.get("cluster_slots_ok", 0)) == 16384
                    for i in infos
                ):
                    return
            time.sleep(0.1)
        raise RuntimeError("the Redis Cluster did not reach cluster_state:ok")

    def wait_replicas_online(self, timeout_s: float = 30.0) -> None:
        """Until every master has its replica online (synced): WAIT 1 can then succeed."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with contextlib.suppress(redis.RedisError):
                infos = [self.client(p).info("replication") for p in self.masters()]
                if all(dict(i.get("slave0") or {}).get("state") == "online" for i in infos):
                    return
            time.sleep(0.1)
        raise RuntimeError("the Redis Cluster's replicas did not come online")

    def flush(self) -> None:
        for port in self.masters():
            self.client(port).flushall()

    def stop(self) -> None:
        for port in list(self.processes):
            self.kill(port)  # nothing to keep, and a master would wait for its replica
        shutil.rmtree(self.dir, ignore_errors=True)


def docker_answers() -> bool:
    """Whether a Docker engine is reachable and testcontainers is installed (no engine
    socket and no ``DOCKER_HOST``: no, without importing the Docker SDK)."""
    if not os.environ.get("DOCKER_HOST") and not os.path.exists("/var/run/docker.sock"):
        return False
    try:
        import docker  # type: ignore[import-untyped]  # testcontainers' dependency
        import testcontainers  # noqa: F401

        docker.from_env(timeout=3).ping()
    except Exception:
        return False
    return True


REDIS_IMAGE = "redis:7.0"


@contextlib.contextmanager
def container_redis() -> Iterator[str]:
    """One Redis in a container (testcontainers' ``RedisContainer``)."""
    from testcontainers.community.redis import RedisContainer

    with RedisContainer(REDIS_IMAGE) as container:
        host = container.get_container_host_ip()
        yield f"redis://{host}:{container.get_exposed_port(6379)}/0"


@contextlib.contextmanager
def container_cluster() -> Iterator[str]:
    """A Redis Cluster in one container: six ``redis-server``s on the host network (nodes
    announce addresses the client must reach, which port mapping would hide)."""
    from testcontainers.core.container import DockerContainer

    ports = cluster_ports(CLUSTER_NODES)
    nodes = " ".join(f"127.0.0.1:{p}" for p in ports)
    script = " && ".join(
        [
            *(
                f"redis-server --port {p} --cluster-enabled yes --cluster-config-file "
                f"nodes-{p}.conf --save '' --appendonly no --daemonize yes"
                for p in ports
            ),
            "sleep 1",
            f"redis-cli --cluster create {nodes} --cluster-replicas 1 --cluster-yes",
            "sleep infinity",
        ]
    )
    container = DockerContainer(REDIS_IMAGE).with_kwargs(network_mode="host")
    with container.with_command(["sh", "-c", script]):
        url = "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in ports)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(redis.RedisError):
                if redis.Redis(port=ports[0]).cluster("INFO").get("cluster_state") == "ok":
                    break
            time.sleep(0.2)
        else:
            raise RuntimeError("the containerised Redis Cluster did not reach cluster_state:ok")
        yield url


def flush_url(url: str) -> None:
    """Empty a throwaway Redis or Redis Cluster (every master) before a test."""
    if url.startswith("redis+cluster://") or url.startswith("rediss+cluster://"):
        from ofc_service.store.redis_io import cluster_seeds

        (host, port), *_ = cluster_seeds(url)[0]
        with redis.RedisCluster(host=host, port=port) as cluster:
            cluster.flushall(target_nodes=redis.RedisCluster.PRIMARIES)
        return
    with redis.Redis.from_url(url) as client:
        client.flushall()


def say(request: pytest.FixtureRequest, line: str) -> None:
    """Tell which Redis the session uses (printed with -s; in the report sections)."""
    print(line)
    request.config.stash.setdefault(REDIS_SOURCES, []).append(line)


REDIS_SOURCES = pytest.StashKey[list[str]]()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    for line in config.stash.get(REDIS_SOURCES, []):
        terminalreporter.write_line(line)


def redis_from(
    request: pytest.FixtureRequest,
    *,
    what: str,
    env: str,
    container: Callable[[], contextlib.AbstractContextManager[str]],
    local: str,
) -> Iterator[str]:
    """The URL of a Redis source in the order of the module docstring: ``env``, else a
    ``container`` when Docker answers, else the ``local`` processes' fixture; said aloud."""
    if os.environ.get(env):
        say(request, f"{what}: {env} from the environment")
        yield os.environ[env]
    elif docker_answers():
        say(request, f"{what}: testcontainers ({REDIS_IMAGE})")
        with container() as url:
            yield url
    else:
        say(request, f"{what}: local redis-server processes (no {env}, no Docker engine)")
        source: RedisServer | LocalRedisCluster = request.getfixturevalue(local)
        yield source.url


@pytest.fixture(scope="session")
def redis_source(request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of the session's one-server Redis."""
    yield from redis_from(
        request, what="redis", env="REDIS_URL", container=container_redis, local="redis_server"
    )


@pytest.fixture(scope="session")
def redis_cluster_source(request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of the session's Redis Cluster."""
    yield from redis_from(
        request,
        what="redis cluster",
        env="REDIS_CLUSTER_URL",
        container=container_cluster,
        local="local_cluster",
    )


def new_local_cluster(
    *, node_timeout_ms: int = CLUSTER_NODE_TIMEOUT_MS
) -> Iterator[LocalRedisCluster]:
    cluster = LocalRedisCluster(node_timeout_ms=node_timeout_ms)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def local_cluster() -> Iterator[LocalRedisCluster]:
    """The session's Redis Cluster of local processes (three masters, three replicas)."""
    yield from new_local_cluster(node_timeout_ms=SHARED_CLUSTER_NODE_TIMEOUT_MS)


@pytest.fixture
def fresh_cluster() -> Iterator[LocalRedisCluster]:
    """A Redis Cluster of local processes for this test alone (it may kill or reshard it)."""
    yield from new_local_cluster()


@pytest.fixture
def fresh_steady_cluster() -> Iterator[LocalRedisCluster]:
    """A Redis Cluster of local processes for this test alone, for tests that reshard it or
    stop replicas but kill or stop no master: with the shared cluster's node timeout, so
    that a stall of a loaded machine fails no master over under them (a test without
    ``WAIT`` could then see an acknowledged write lost, as documented)."""
    yield from new_local_cluster(node_timeout_ms=SHARED_CLUSTER_NODE_TIMEOUT_MS)


@pytest.fixture
def redis_url(redis_source: str) -> Iterator[str]:
    """A Redis URL with an empty database for this test."""
    flush_url(redis_source)
    yield redis_source


@pytest.fixture
def redis_cluster_url(redis_cluster_source: str) -> Iterator[str]:
    """A Redis Cluster URL (``redis+cluster://``), every master emptied for this test."""
    flush_url(redis_cluster_source)
    yield redis_cluster_source


@pytest.fixture(params=["single", "cluster"])
def any_redis_url(request: pytest.FixtureRequest) -> str:
    """One Redis server, then a Redis Cluster: the test runs once on each, emptied."""
    name = "redis_url" if request.param == "single" else "redis_cluster_url"
    url: str = request.getfixturevalue(name)
    return url
