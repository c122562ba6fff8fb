"""The Kubernetes manifests hang together and keep their promises.

kubernetes-validate (schemas of Kubernetes 1.27 and 1.37, strict) and the Prometheus Operator
schemas run in scripts/check_deploy.sh; these tests check what no schema knows: selectors
that select, ports that exist, the shutdown arithmetic, who may connect.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from ofc_service.server.supervisor import KILL_MARGIN_S

from tests.deploy.deployfiles import (
    COMPOSE,
    K8S,
    K8S_CLUSTER,
    Document,
    find_object,
    k8s_files,
    k8s_objects,
    load_documents,
    load_yaml,
)

DEPLOYMENT = find_object("Deployment", "ofc")
POD = DEPLOYMENT["spec"]["template"]
POD_LABELS: dict[str, str] = POD["metadata"]["labels"]
(CONTAINER,) = POD["spec"]["containers"]
ENV: dict[str, Any] = {e["name"]: e.get("value", e.get("valueFrom")) for e in CONTAINER["env"]}
CONTAINER_PORTS: dict[str, int] = {p["name"]: p["containerPort"] for p in CONTAINER["ports"]}


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    match = selector.get("matchLabels", selector)
    return all(labels.get(key) == value for key, value in match.items())


def test_three_replicas_with_requests_and_limits() -> None:
    assert DEPLOYMENT["spec"]["replicas"] == 3
    assert selects(DEPLOYMENT["spec"]["selector"], POD_LABELS)
    resources = CONTAINER["resources"]
    assert set(resources["requests"]) == {"cpu", "memory"} and set(resources["limits"]) == {
        "cpu",
        "memory",
    }


def test_probes_use_native_grpc_health_on_the_grpc_port() -> None:
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert CONTAINER[probe]["grpc"]["port"] == CONTAINER_PORTS["grpc"], probe
    # Readiness follows the overall ("") status, which is NOT_SERVING while the store is
    # unreachable (tests/e2e/test_health_store.py); liveness and startup ask the rules
    # service, which needs no store, so a Redis outage unreadies pods but restarts none.
    assert "service" not in CONTAINER["readinessProbe"]["grpc"], "the overall ('') status"
    for probe in ("startupProbe", "livenessProbe"):
        assert CONTAINER[probe]["grpc"]["service"] == "ofcpoker.v1.RulesService", probe
    assert int(ENV["OFC_LISTEN"].rsplit(":", 1)[1]) == CONTAINER_PORTS["grpc"]
    assert int(ENV["OFC_HTTP_LISTEN"].rsplit(":", 1)[1]) == CONTAINER_PORTS["http"]
    assert int(ENV["OFC_METRICS_LISTEN"].rsplit(":", 1)[1]) == CONTAINER_PORTS["metrics"]


def test_termination_grace_covers_prestop_plus_server_grace() -> None:
    """kubelet's SIGKILL deadline runs from the start of preStop, so it must cover both."""
    command = CONTAINER["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep"
    pre_stop = float(command[1])
    grace = float(ENV["OFC_GRACE_SECONDS"])
    total = POD["spec"]["terminationGracePeriodSeconds"]
    readiness = CONTAINER["readinessProbe"]
    assert pre_stop >= 5, "long enough for endpoints and DNS (5 s TTL) to drop the pod"
    assert pre_stop >= readiness["periodSeconds"], "and at least one readiness period"
    # The server exits by itself within grace + EXIT_MARGIN_S of SIGTERM whatever its store
    # does; a worker of --workers N is killed by its supervisor at grace + KILL_MARGIN_S.
    assert total >= pre_stop + grace + KILL_MARGIN_S, (
        f"{total} < preStop {pre_stop} + grace {grace} + {KILL_MARGIN_S} s margin"
    )


def test_connections_are_aged_so_scale_out_rebalances() -> None:
    assert 60 <= float(ENV["OFC_MAX_CONNECTION_AGE_SECONDS"]) <= 3600


def test_operator_keys_come_from_the_secret_the_repo_describes() -> None:
    ref = ENV["OFC_API_KEYS"]["secretKeyRef"]
    secret = find_object("Secret", ref["name"])
    assert ref["key"] in secret["stringData"]


def test_container_is_locked_down() -> None:
    pod_security = POD["spec"]["securityContext"]
    assert pod_security["runAsNonRoot"] is True and pod_security["runAsUser"] == 10001
    security = CONTAINER["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]


def test_headless_service_for_client_side_balancing_and_clusterip_for_proxies() -> None:
    headless = find_object("Service", "ofc-headless")
    cluster_ip = find_object("Service", "ofc")
    assert headless["spec"]["clusterIP"] == "None"
    assert (
        cluster_ip["spec"].get("type", "ClusterIP") == "ClusterIP"
        and "clusterIP" not in cluster_ip["spec"]
    )
    for service in (headless, cluster_ip):
        assert selects(service["spec"]["selector"], POD_LABELS)
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in CONTAINER_PORTS, port
        grpc_port = next(p for p in service["spec"]["ports"] if p["name"] == "grpc")
        assert grpc_port["appProtocol"] == "kubernetes.io/h2c"
        http_port = next(p for p in service["spec"]["ports"] if p["name"] == "http")
        assert CONTAINER_PORTS[http_port["targetPort"]] == http_port["port"] == 8080


def test_hpa_and_pdb_fit_the_deployment() -> None:
    hpa = find_object("HorizontalPodAutoscaler", "ofc")
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "ofc",
    }
    assert hpa["spec"]["minReplicas"] == DEPLOYMENT["spec"]["replicas"] < hpa["spec"]["maxReplicas"]
    pdb = find_object("PodDisruptionBudget", "ofc")
    assert selects(pdb["spec"]["selector"], POD_LABELS)
    assert pdb["spec"]["maxUnavailable"] < hpa["spec"]["minReplicas"]


def ingress_peers(policy: Document, port_name: str) -> list[Document]:
    return [
        peer
        for rule in policy["spec"]["ingress"]
        if any(p["port"] == port_name for p in rule["ports"])
        for peer in rule["from"]
    ]


PROMETHEUS_PEER = {
    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
    "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
}


def test_only_the_platform_and_prometheus_reach_the_service() -> None:
    policy = find_object("NetworkPolicy", "ofc")
    assert selects(policy["spec"]["podSelector"], POD_LABELS)
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert {
        p for rule in policy["spec"]["ingress"] for p in (x["port"] for x in rule["ports"])
    } == {"grpc", "http", "metrics"}
    for port in ("grpc", "http"):  # Envoy's pods (the platform label) reach both
        assert ingress_peers(policy, port) == [
            {"namespaceSelector": {"matchLabels": {"ofc.dev/platform": "true"}}},
            {"podSelector": {"matchLabels": {"ofc.dev/platform": "true"}}},
        ]
    assert ingress_peers(policy, "metrics") == [PROMETHEUS_PEER]


def test_only_ofc_and_prometheus_reach_redis() -> None:
    policy = find_object("NetworkPolicy", "redis")
    redis_pod = find_object("StatefulSet", "redis")["spec"]["template"]
    assert selects(policy["spec"]["podSelector"], redis_pod["metadata"]["labels"])
    assert ingress_peers(policy, "redis") == [
        {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "ofc"}}}
    ]
    assert ingress_peers(policy, "metrics") == [PROMETHEUS_PEER]
    redis_ports = {p["name"] for c in redis_pod["spec"]["containers"] for p in c["ports"]}
    assert {"redis", "metrics"} <= redis_ports


def test_each_service_monitor_selects_exactly_one_service_with_its_port() -> None:
    services = [doc for _, doc in k8s_objects() if doc["kind"] == "Service"]
    monitors = [doc for _, doc in k8s_objects() if doc["kind"] == "ServiceMonitor"]
    assert {m["metadata"]["name"] for m in monitors} == {"ofc", "redis"}
    for monitor in monitors:
        chosen = [
            s for s in services if selects(monitor["spec"]["selector"], s["metadata"]["labels"])
        ]
        assert [s["metadata"]["name"] for s in chosen] == [monitor["metadata"]["name"]], (
            "one Service per monitor, named like the `job` label the alerts use"
        )
        port_names = {p["name"] for p in chosen[0]["spec"]["ports"]}
        for endpoint in monitor["spec"]["endpoints"]:
            assert endpoint["port"] in port_names


def test_prometheus_rule_carries_exactly_the_compose_alerts() -> None:
    rule = find_object("PrometheusRule", "ofc")
    assert rule["spec"]["groups"] == load_yaml(COMPOSE / "prometheus" / "alerts.yml")["groups"]


def test_redis_statefulset_persists_aof_with_the_shared_config() -> None:
    config = find_object("ConfigMap", "redis-config")
    assert config["data"]["redis.conf"] == (COMPOSE / "redis" / "redis.conf").read_text()
    statefulset = find_object("StatefulSet", "redis")
    assert statefulset["spec"]["serviceName"] == "redis"
    assert find_object("Service", "redis")["spec"]["clusterIP"] == "None"
    redis_container = next(
        c for c in statefulset["spec"]["template"]["spec"]["containers"] if c["name"] == "redis"
    )
    assert redis_container["command"][:2] == ["redis-server", "/etc/redis/redis.conf"]
    mounts = {m["name"]: m["mountPath"] for m in redis_container["volumeMounts"]}
    assert mounts["data"] == "/data", "the image's working directory, where redis.conf writes"
    (claim,) = statefulset["spec"]["volumeClaimTemplates"]
    assert claim["metadata"]["name"] == "data"
    assert ENV["OFC_REDIS_URL"] == "redis://redis.ofc.svc.cluster.local:6379/0"


def test_everything_is_in_the_ofc_namespace_and_kustomization_lists_all_but_the_secret() -> None:
    for path, doc in k8s_objects():
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "ofc", f"{path.name}: {doc['kind']}"
    listed = load_yaml(K8S / "kustomization.yaml")["resources"]
    assert sorted(listed) == sorted(p.name for p in k8s_files() if p.name != "secret.yaml")
    images = load_yaml(K8S / "kustomization.yaml")["images"]
    assert CONTAINER["image"] == f"{images[0]['name']}:{images[0]['newTag']}"


def normalized_envoy_config(text: str) -> str:
    """Envoy's config without what may differ between compose and k8s: upstream and origins."""
    text = re.sub(
        r"socket_address: \{address: [\w.-]+, port_value: (50051|8080)\}", r"UPSTREAM:\1", text
    )
    return re.sub(r"- safe_regex: \{regex: .*\}", "ORIGINS", text)


def test_k8s_envoy_runs_the_compose_config_against_the_headless_service() -> None:
    compose_config = (COMPOSE / "envoy" / "envoy.yaml").read_text()
    k8s_config = find_object("ConfigMap", "envoy-config")["data"]["envoy.yaml"]
    assert normalized_envoy_config(k8s_config) == normalized_envoy_config(compose_config)
    headless = find_object("Service", "ofc-headless")
    fqdn = f"{headless['metadata']['name']}.{headless['metadata']['namespace']}.svc.cluster.local"
    clusters = yaml.safe_load(k8s_config)["static_resources"]["clusters"]
    ports = {p["name"]: p["port"] for p in headless["spec"]["ports"]}
    upstreams = {}
    for cluster in clusters:
        endpoint = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]
        upstreams[cluster["name"]] = endpoint["address"]["socket_address"]
    assert upstreams == {
        "ofc": {"address": fqdn, "port_value": ports["grpc"]},
        "ofc_http": {"address": fqdn, "port_value": ports["http"]},
    }


def test_k8s_envoy_pods_are_admitted_and_serve_their_listener() -> None:
    deployment = find_object("Deployment", "ofc-envoy")
    pod = deployment["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    compose = load_yaml(COMPOSE / "docker-compose.yml")["services"]["envoy"]
    assert container["image"] == compose["image"]
    platform_peer = {"podSelector": {"matchLabels": {"ofc.dev/platform": "true"}}}
    assert platform_peer in ingress_peers(find_object("NetworkPolicy", "ofc"), "grpc")
    assert selects(platform_peer["podSelector"], pod["metadata"]["labels"])
    mount = next(m for m in container["volumeMounts"] if m["name"] == "config")
    config_path = container["args"][container["args"].index("-c") + 1]
    assert config_path == f"{mount['mountPath']}/envoy.yaml"
    listener = yaml.safe_load(find_object("ConfigMap", "envoy-config")["data"]["envoy.yaml"])
    port = listener["static_resources"]["listeners"][0]["address"]["socket_address"]["port_value"]
    assert container["ports"] == [{"name": "http", "containerPort": port, "protocol": "TCP"}]
    service = find_object("Service", "ofc-envoy")
    assert selects(service["spec"]["selector"], pod["metadata"]["labels"])
    assert selects(
        find_object("PodDisruptionBudget", "ofc-envoy")["spec"]["selector"],
        pod["metadata"]["labels"],
    )
    pre_stop = float(container["lifecycle"]["preStop"]["exec"]["command"][1])
    assert pod["spec"]["terminationGracePeriodSeconds"] > pre_stop


# --- the Redis Cluster overlay (deploy/k8s-cluster) -----------------------------------------------
def cluster_overlay() -> tuple[Document, dict[tuple[str, str], Document]]:
    kustomization = load_yaml(K8S_CLUSTER / "kustomization.yaml")
    objects = {
        (doc["kind"], doc["metadata"]["name"]): doc
        for doc in load_documents(K8S_CLUSTER / "redis-cluster.yaml")
    }
    return kustomization, objects


def test_cluster_overlay_swaps_the_redis_pod_for_six_cluster_nodes_under_the_same_labels() -> None:
    kustomization, objects = cluster_overlay()
    assert kustomization["resources"] == ["../k8s", "redis-cluster.yaml"]
    patches = [yaml.safe_load(p["patch"]) for p in kustomization["patches"]]
    assert {"$patch": "delete", "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "redis", "namespace": "ofc"}} in patches  # fmt: skip
    base = find_object("StatefulSet", "redis")
    nodes = objects["StatefulSet", "redis-cluster"]
    assert nodes["spec"]["replicas"] == 6 and nodes["spec"]["serviceName"] == "redis"
    labels = nodes["spec"]["template"]["metadata"]["labels"]
    assert labels == base["spec"]["template"]["metadata"]["labels"]
    assert find_object("Service", "redis")["spec"]["selector"].items() <= labels.items()
    (redis,) = [c for c in nodes["spec"]["template"]["spec"]["containers"] if c["name"] == "redis"]
    flags = dict(zip(redis["command"][2::2], redis["command"][3::2], strict=False))
    assert flags["--cluster-enabled"] == "yes"
    assert flags["--cluster-config-file"].startswith("/data/")  # on the PersistentVolume
    assert flags["--cluster-announce-hostname"] == "$(POD_NAME).redis.ofc.svc.cluster.local"
    assert {p["name"]: p["containerPort"] for p in redis["ports"]} == {
        "redis": 6379, "cluster-bus": 16379
    }  # fmt: skip
    exporters = [c for c in nodes["spec"]["template"]["spec"]["containers"] if c != redis]
    assert [c["name"] for c in exporters] == ["redis-exporter"]  # one node per exporter


def test_cluster_overlay_points_ofc_at_the_nodes_and_joins_them_once() -> None:
    kustomization, objects = cluster_overlay()
    patches = [yaml.safe_load(p["patch"]) for p in kustomization["patches"]]
    (deployment,) = [p for p in patches if p["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["OFC_REDIS_WAIT_REPLICAS"] == "1"
    seeds = env["OFC_REDIS_URL"].removeprefix("redis+cluster://").split(",")
    assert seeds == [f"redis-cluster-{i}.redis.ofc.svc.cluster.local:6379" for i in range(3)]
    names = {e["name"] for e in find_object("Deployment", "ofc")["spec"]["template"]["spec"][
        "containers"][0]["env"]}  # fmt: skip
    assert "OFC_REDIS_URL" in names  # the patch replaces the base's value by name
    job = objects["Job", "redis-cluster-create"]["spec"]["template"]["spec"]
    script = job["containers"][0]["command"][-1]
    assert "--cluster-replicas 1" in script and "cluster_state:ok" in script
    assert "for i in 0 1 2 3 4 5" in script
    peers = objects["NetworkPolicy", "redis-cluster-peers"]["spec"]
    assert peers["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "redis"}
    assert {"port": "cluster-bus"} in peers["ingress"][0]["ports"]
