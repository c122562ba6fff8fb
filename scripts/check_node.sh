#!/usr/bin/env bash
# The Node.js client's own checks (clients/node): install the pinned packages with `npm ci`
# (exactly package-lock.json) when node_modules is missing or was installed from another
# lock file, then run the node tests: the ofc-shuffle-v1 vectors of the spec and verify.js
# on histories built from them. The end-to-end tests (tests/e2e/test_node_client.py: play.js
# against a live `ofc serve`, verify.js over histories from `ofc play`) run this script, so
# `make test` covers it through pytest.
#
#   scripts/check_node.sh                 install if needed, then run the node tests
#   scripts/check_node.sh --install-only  install if needed
set -euo pipefail
cd "$(dirname "$0")/../clients/node"

command -v node >/dev/null || { echo "check_node.sh: node is not on PATH (Node.js >= 20 needed)" >&2; exit 1; }
STAMP=node_modules/.ofc-installed
LOCK_SUM="$(sha1sum package-lock.json | cut -c1-40)"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$LOCK_SUM" ]; then
    # --ignore-scripts: no package here needs an install script (protobufjs' only checks versions).
    npm ci --ignore-scripts --no-audit --no-fund
    echo "$LOCK_SUM" >"$STAMP"
fi
[ "${1:-}" = "--install-only" ] && exit 0
node --test test/*.test.js
