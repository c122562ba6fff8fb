"""The Grafana dashboard and the alert rules show and watch what the service exports.

promtool parses every expression (scripts/check_deploy.sh: ``check rules`` on alerts.yml and on
the dashboard's queries turned into recording rules, and ``test rules`` on alerts_test.yml).
These tests check that the panels and alerts the issue asks for exist and that they only
use metrics of the agreed interface; test_image_steps.py checks the server declares them.
"""

from __future__ import annotations

import json
import re
from typing import Any

import grpc
import pytest

from tests.deploy.deployfiles import COMPOSE, DASHBOARD, dashboard_targets, load_yaml, metric_names

DASH: dict[str, Any] = json.loads(DASHBOARD.read_text())
TARGETS = dashboard_targets(DASH)
ALERTS: dict[str, Any] = {
    rule["alert"]: rule
    for group in load_yaml(COMPOSE / "prometheus" / "alerts.yml")["groups"]
    for rule in group["rules"]
}

HISTOGRAMS = {"grpc_server_handling_seconds", "ofc_settlement_lag_seconds"}
# The agreed metrics of `ofc serve`, by type, and what Prometheus and redis_exporter add.
SERVICE_METRICS = {
    "grpc_server_started_total": "counter",
    "grpc_server_handled_total": "counter",
    "ofc_hands_settled_total": "counter",
    "ofc_fouls_total": "counter",
    "ofc_moves_total": "counter",
    "ofc_active_tables": "gauge",
    **{name: "histogram" for name in HISTOGRAMS},
}
SCRAPE_METRICS = {"up", "redis_up", "ALERTS"}
# redis_exporter's, from INFO and CLUSTER INFO: the cluster and memory alerts read them.
REDIS_METRICS = {
    "redis_cluster_enabled",
    "redis_cluster_state",
    "redis_cluster_slots_fail",
    "redis_cluster_current_epoch",
    "redis_instance_info",
    "redis_connected_slaves",
    "redis_memory_used_bytes",
    "redis_memory_max_bytes",
}


def series_names() -> set[str]:
    names = {name for name, kind in SERVICE_METRICS.items() if kind != "histogram"}
    names |= {f"{name}_{suffix}" for name in HISTOGRAMS for suffix in ("bucket", "sum", "count")}
    return names | SCRAPE_METRICS


def exprs_with(metric: str) -> list[str]:
    return [expr for _, _, expr in TARGETS if metric in metric_names(expr)]


def test_dashboard_uses_only_agreed_metrics() -> None:
    used = {name for _, _, expr in TARGETS for name in metric_names(expr)}
    assert used <= series_names(), used - series_names()
    assert set(SERVICE_METRICS) - {"grpc_server_started_total"} <= {
        re.sub(r"_(bucket|sum|count)$", "", name) for name in used
    }, "every agreed metric except started_total is on the dashboard"


def test_alerts_use_only_agreed_metrics() -> None:
    used = {name for rule in ALERTS.values() for name in metric_names(rule["expr"])}
    assert used <= series_names() | REDIS_METRICS, used - series_names() - REDIS_METRICS


def test_requests_per_second_per_method() -> None:
    assert any(
        "rate(grpc_server_handled_total" in e and "by (grpc_service, grpc_method)" in e
        for e in exprs_with("grpc_server_handled_total")
    )


@pytest.mark.parametrize("quantile", ["0.5", "0.95", "0.99"])
def test_latency_quantile_per_method(quantile: str) -> None:
    assert any(
        e.startswith(f"histogram_quantile({quantile},")
        and "by (le, grpc_service, grpc_method)" in e
        for e in exprs_with("grpc_server_handling_seconds_bucket")
    )


def test_errors_by_code() -> None:
    assert any(
        "by (grpc_code)" in e and 'grpc_code!="OK"' in e
        for e in exprs_with("grpc_server_handled_total")
    )


@pytest.mark.parametrize(
    ("metric", "shape"),
    [
        ("ofc_moves_total", "rate(ofc_moves_total"),
        ("ofc_active_tables", "ofc_active_tables{"),
        (
            "ofc_settlement_lag_seconds_bucket",
            "histogram_quantile(0.99, sum by (le) (rate(ofc_settlement_lag_seconds_bucket",
        ),
    ],
)
def test_game_panels(metric: str, shape: str) -> None:
    assert any(shape in e for e in exprs_with(metric)), metric


def test_counters_are_rated_and_histograms_read_through_buckets() -> None:
    exprs = [expr for _, _, expr in TARGETS] + [rule["expr"] for rule in ALERTS.values()]
    for expr in exprs:
        for name in metric_names(expr):
            if name.endswith("_total"):
                assert re.search(rf"(rate|increase)\({name}\b", expr), (
                    f"raw counter {name} in {expr}"
                )
            if name.endswith("_bucket"):
                assert "histogram_quantile(" in expr, expr


def test_panels_are_well_formed() -> None:
    ids = [panel["id"] for panel in DASH["panels"]]
    assert len(ids) == len(set(ids))
    for panel in DASH["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "prometheus"}
            assert panel["targets"], panel["title"]
    titles = [panel["title"] for panel in DASH["panels"]]
    assert len(titles) == len(set(titles))
    ref_ids = [(title, ref) for title, ref, _ in TARGETS]
    assert len(ref_ids) == len(set(ref_ids))


def test_alerts_cover_errors_latency_and_redis() -> None:
    assert {"OfcHighErrorRate", "OfcHighLatency", "RedisDown"} <= set(ALERTS)
    cluster = {"RedisClusterStateNotOk", "RedisClusterSlotsFailing", "RedisClusterFailover"}
    cluster |= {"RedisMasterWithoutReplica"}
    assert cluster | {"RedisMemoryHigh"} <= set(ALERTS)
    for name, rule in ALERTS.items():
        assert rule["labels"]["severity"] in {"page", "warn"}, name
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name
        assert "for" in rule, f"{name} fires on a single bad scrape"


def test_dashboard_and_alert_agree_on_what_a_server_error_is() -> None:
    codes = re.compile(r'grpc_code=~"([^"]+)"')
    alert_codes = set(codes.findall(ALERTS["OfcHighErrorRate"]["expr"]))
    dashboard_codes = {match for _, _, expr in TARGETS for match in codes.findall(expr)}
    assert len(alert_codes) == 1 and alert_codes == dashboard_codes
    (listed,) = alert_codes
    assert not {"INVALID_ARGUMENT", "FAILED_PRECONDITION", "NOT_FOUND"} & set(listed.split("|"))


def test_codes_are_matched_as_the_service_labels_them() -> None:
    """``grpc_code`` holds the status names of gRPC's Python library (``INTERNAL``,
    ``DEADLINE_EXCEEDED``), as the service records them: an alert or panel (or the alert
    rules' unit tests) naming go-grpc-prometheus's ``Internal`` would match nothing
    (tests/connect/test_http_port.py reads the counter under such names)."""
    names = {code.name for code in grpc.StatusCode}
    in_rules = [
        *re.findall(r'grpc_code(?:=~|!=|=)"([^"]+)"', ALERTS["OfcHighErrorRate"]["expr"]),
        *(m for _, _, expr in TARGETS for m in re.findall(r'grpc_code(?:=~|!=|=)"([^"]+)"', expr)),
        *re.findall(
            r'grpc_code="([^"]+)"', (COMPOSE / "prometheus" / "alerts_test.yml").read_text()
        ),
    ]
    assert len(in_rules) >= 4
    for listed in in_rules:
        assert set(listed.split("|")) <= names, listed
