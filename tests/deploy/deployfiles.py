"""Reading the files under deploy/, for the tests beside this module and for check_deploy.sh.

scripts/check_deploy.sh runs ``python -m tests.deploy.deployfiles COMMAND`` to hand the
external validators what they take: the Kubernetes manifests split by validator, and the
dashboard's PromQL as a rules file that ``promtool check rules`` parses.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
COMPOSE = DEPLOY / "compose"
K8S = DEPLOY / "k8s"
K8S_CLUSTER = DEPLOY / "k8s-cluster"  # the overlay on a Redis Cluster (kustomize, on K8S)
DASHBOARD = COMPOSE / "grafana" / "dashboards" / "ofc.json"

# API groups kubernetes-validate has no schema for; deploy/tools/validate_crds.mjs checks them.
CRD_GROUPS = ("monitoring.coreos.com/",)
# Not a Kubernetes object: kustomize's own file.
NOT_OBJECTS = ("kustomization.yaml",)

# Grafana's variables in dashboard queries, and what stands in for them when promtool parses.
GRAFANA_VARIABLES = {
    "$__rate_interval": "1m",
    "$__interval": "1m",
    "$__range": "1h",
    "$instance": ".*",
}

Document = dict[str, Any]


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str
    stage: int  # index of the FROM it belongs to


def parse_dockerfile(path: Path) -> list[Instruction]:
    """A Dockerfile's instructions, continuation lines joined, comments dropped."""
    text = path.read_text()
    instructions: list[Instruction] = []
    stage = -1
    logical = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            logical += stripped[:-1] + " "
            continue
        logical += stripped
        keyword, _, args = logical.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            stage += 1
        instructions.append(Instruction(keyword, " ".join(args.split()), stage))
        logical = ""
    return instructions


def load_yaml(path: Path) -> Any:
    """The one YAML document in ``path``."""
    return yaml.safe_load(path.read_text())


def load_documents(path: Path) -> list[Document]:
    """Every non-empty document of a multi-document YAML file, in order."""
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def k8s_files() -> list[Path]:
    return sorted(path for path in K8S.glob("*.yaml") if path.name not in NOT_OBJECTS)


def k8s_objects() -> Iterator[tuple[Path, Document]]:
    for path in k8s_files():
        for doc in load_documents(path):
            yield path, doc


def is_crd_object(doc: Document) -> bool:
    """True for resources of a CustomResourceDefinition we use.

    >>> is_crd_object({"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor"})
    True
    >>> is_crd_object({"apiVersion": "apps/v1", "kind": "Deployment"})
    False
    """
    return str(doc.get("apiVersion", "")).startswith(CRD_GROUPS)


def find_object(kind: str, name: str) -> Document:
    """The Kubernetes object of this kind and name in deploy/k8s (exactly one must exist)."""
    found = [
        doc for _, doc in k8s_objects() if doc["kind"] == kind and doc["metadata"]["name"] == name
    ]
    if len(found) != 1:
        raise LookupError(f"expected one {kind}/{name} in deploy/k8s, found {len(found)}")
    return found[0]


def dashboard_targets(dashboard: Document) -> list[tuple[str, str, str]]:
    """(panel title, refId, expr) for every query of every panel, rows' panels included."""
    targets: list[tuple[str, str, str]] = []
    panels: list[Document] = list(dashboard.get("panels", []))
    while panels:
        panel = panels.pop(0)
        panels.extend(panel.get("panels", []))
        for target in panel.get("targets", []):
            targets.append((panel["title"], target["refId"], target["expr"]))
    return targets


def substitute_variables(expr: str) -> str:
    """``expr`` with Grafana's variables replaced by values PromQL accepts.

    >>> substitute_variables('rate(x{instance=~"$instance"}[$__rate_interval])')
    'rate(x{instance=~".*"}[1m])'
    """
    for name in sorted(GRAFANA_VARIABLES, key=len, reverse=True):
        expr = expr.replace(name, GRAFANA_VARIABLES[name])
    leftover = re.search(r"\$\w+", expr)
    if leftover:
        raise ValueError(f"unknown Grafana variable {leftover.group()!r} in {expr!r}")
    return expr


def dashboard_rules(dashboard: Document) -> Document:
    """A Prometheus rules file with one recording rule per dashboard query.

    promtool cannot check a bare expression, but ``promtool check rules`` parses every rule's
    expression, so this is how the dashboard's PromQL gets checked.
    """
    rules = [
        {"record": f"dashboard:panel_{index}_{ref_id.lower()}", "expr": substitute_variables(expr)}
        for index, (_, ref_id, expr) in enumerate(dashboard_targets(dashboard))
    ]
    for annotation in dashboard.get("annotations", {}).get("list", []):
        if "expr" in annotation:
            rules.append(
                {
                    "record": f"dashboard:annotation_{len(rules)}",
                    "expr": substitute_variables(annotation["expr"]),
                }
            )
    return {"groups": [{"name": "dashboard", "rules": rules}]}


PROMQL_KEYWORDS = frozenset(
    {"and", "or", "unless", "bool", "offset", "by", "without", "inf", "nan"}
)


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects.

    >>> sorted(metric_names('sum by (le) (rate(a_bucket{job="x", le!="1"}[5m])) / b_total > 0.5'))
    ['a_bucket', 'b_total']
    >>> sorted(metric_names('absent(up{job="ofc"} == 1) or sum(rate(c[1m])) by (code)'))
    ['c', 'up']
    """
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals
    text = re.sub(r"\{[^}]*\}", "{}", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "[]", text)  # range durations
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = re.findall(r"(?<![\w.:])([a-zA-Z_:][\w:]*)(?![\w:])(?!\s*\()", text)
    return {name for name in names if name.lower() not in PROMQL_KEYWORDS}


def main(argv: Sequence[str]) -> int:
    command = argv[0] if argv else ""
    if command == "dashboard-rules":
        print(json.dumps(dashboard_rules(json.loads(DASHBOARD.read_text())), indent=2))
    elif command == "k8s-builtin-files":
        print(
            "\n".join(
                str(path)
                for path in k8s_files()
                if not all(map(is_crd_object, load_documents(path)))
            )
        )
    elif command == "builtin-documents":  # stdin: rendered manifests; out: built-in kinds only
        documents = [d for d in yaml.safe_load_all(sys.stdin) if d and not is_crd_object(d)]
        print(yaml.safe_dump_all(documents, sort_keys=False), end="")
    elif command == "k8s-configmap" and len(argv) == 3:
        print(find_object("ConfigMap", argv[1])["data"][argv[2]], end="")
    elif command == "k8s-crd-json":
        items = [
            {"file": str(path.relative_to(REPO)), "doc": doc}
            for path, doc in k8s_objects()
            if is_crd_object(doc)
        ]
        print(json.dumps(items))
    else:
        print(
            "usage: python -m tests.deploy.deployfiles"
            " dashboard-rules | k8s-builtin-files | k8s-crd-json | k8s-configmap NAME KEY"
            " | builtin-documents < rendered.yaml",
            file=sys.stderr,
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
