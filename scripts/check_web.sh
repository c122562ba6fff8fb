#!/usr/bin/env bash
# The browser table's checks (clients/web), run by scripts/check.sh:
#   1. install the pinned packages with `npm ci` (exactly package-lock.json) when node_modules
#      is missing or was installed from another lock file;
#   2. the committed TypeScript of protos/ (clients/web/src/gen) is what the shared template
#      clients/buf-gen/buf.gen.typescript.yaml generates now;
#   3. tsc --noEmit --strict over the sources and tests;
#   4. the unit tests (node --test): ofc-shuffle-v1 in WebCrypto against the spec's vectors,
#      the deal check, placement rules, the browser test's leak detector;
#   5. the committed bundle (clients/web/dist) is what esbuild builds from the sources now.
# The browser test itself runs under pytest (tests/web/test_browser_table.py).
#
#   scripts/check_web.sh                 all of the above
#   scripts/check_web.sh --install-only  step 1
#   scripts/check_web.sh --write         regenerate src/gen and rebuild dist in place
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/npm_tools.sh
WEB=clients/web
mode=${1:-check}

command -v node >/dev/null || { echo "check_web.sh: node is not on PATH (Node.js >= 20 needed)" >&2; exit 1; }
STAMP=$WEB/node_modules/.ofc-installed
LOCK_SUM="$(sha1sum "$WEB/package-lock.json" | cut -c1-40)"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$LOCK_SUM" ]; then
    # --ignore-scripts: esbuild's binary comes as its @esbuild/<platform> package.
    (cd "$WEB" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
    echo "$LOCK_SUM" >"$STAMP"
fi
[ "$mode" = "--install-only" ] && exit 0

runtime=$(cd "$WEB" && node -p 'require("./node_modules/@bufbuild/protobuf/package.json").version')
if [ "$runtime" != "$PROTOBUF_ES_VERSION" ]; then
    echo "clients/web pins @bufbuild/protobuf $runtime, the generator is $PROTOBUF_ES_VERSION (scripts/npm_tools.sh)" >&2
    exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
generate_typescript "$tmp"
if [ "$mode" = "--write" ]; then
    rm -rf "$WEB/src/gen"
    mkdir -p "$WEB/src/gen"
    cp -r "$tmp/gen/typescript/." "$WEB/src/gen/"
    (cd "$WEB" && node scripts/build.mjs)
    echo "clients/web: src/gen regenerated, dist rebuilt"
    exit 0
fi
[ "$mode" = "check" ] || { echo "usage: $0 [--install-only|--write]" >&2; exit 2; }

if ! diff -r "$tmp/gen/typescript" "$WEB/src/gen"; then
    echo "clients/web/src/gen is out of date: run scripts/check_web.sh --write" >&2
    exit 1
fi
(cd "$WEB" && node_modules/.bin/tsc -p tsconfig.json)
(cd "$WEB" && node scripts/build-tests.mjs "$tmp/tests" && node --test "$tmp"/tests/*.test.mjs) >"$tmp/unit.log" 2>&1 \
    || { cat "$tmp/unit.log"; exit 1; }
grep -E '^# (pass|fail) ' "$tmp/unit.log" | tr '\n' ' '; echo
(cd "$WEB" && node scripts/build.mjs "$tmp/dist")
if ! diff -r "$tmp/dist" "$WEB/dist" >/dev/null; then
    diff -r "$tmp/dist" "$WEB/dist" | head -5 >&2
    echo "clients/web/dist is not what the sources build: run scripts/check_web.sh --write" >&2
    exit 1
fi
echo "clients/web: generated code and bundle up to date, type-checked, unit tests pass"
