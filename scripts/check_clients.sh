#!/usr/bin/env bash
# Client generation that CI can prove offline: TypeScript with the protobuf-es plugin from the
# npm registry, through the same clients/buf-gen template a user runs; the generated files are
# type-checked by tsc; clients/web commits the same output (scripts/check_web.sh). (Go, Java,
# C#, Swift use buf's remote plugins: they need the Buf Schema Registry, which this CI cannot
# reach.) Tools pinned in scripts/npm_tools.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/npm_tools.sh
PREFIX=$PROTOC_GEN_ES_PREFIX
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
generate_typescript "$out"
count=$(find "$out/gen/typescript" -name '*_pb.ts' | wc -l)
[ "$count" -ge 6 ] || { echo "expected TypeScript for every .proto, got $count files" >&2; exit 1; }
ln -s "$PWD/$PREFIX/node_modules" "$out/node_modules"
"$PREFIX/node_modules/.bin/tsc" --noEmit --strict --target es2022 --module nodenext \
    --moduleResolution nodenext --skipLibCheck $(find "$out/gen/typescript" -name '*.ts')
echo "clients: TypeScript generated from protos/ ($count files) and type-checked"
# The Node verifier's unit tests (clients/node/test: Node's built-ins only, no install needed);
# tests/e2e/test_node_client.py and test_node_agrees.py run it against the service and ofc verify.
node --test clients/node/test/*.test.js >/dev/null || node --test clients/node/test/*.test.js
echo "clients: clients/node unit tests pass"
