#!/usr/bin/env bash
# Client generation that CI can prove offline: TypeScript with the protobuf-es plugin from the
# npm registry, through the same clients/buf-gen template a user runs; the generated files are
# type-checked by tsc. (Go, Java, C#, Swift use buf's remote plugins: they need the Buf
# Schema Registry, which this CI cannot reach.) Needs buf from scripts/lint_protos.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=.tools/protoc-gen-es
if [ ! -x "$PREFIX/node_modules/.bin/protoc-gen-es" ] || [ ! -x "$PREFIX/node_modules/.bin/tsc" ]; then
    npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$PREFIX" \
        @bufbuild/protoc-gen-es@2.17.0 @bufbuild/protobuf@2.17.0 typescript@5.9.3 >/dev/null
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
.tools/node_modules/.bin/buf generate protos --template clients/buf-gen/buf.gen.typescript.yaml -o "$out"
count=$(find "$out/gen/typescript" -name '*_pb.ts' | wc -l)
[ "$count" -ge 6 ] || { echo "expected TypeScript for every .proto, got $count files" >&2; exit 1; }
ln -s "$PWD/$PREFIX/node_modules" "$out/node_modules"
"$PREFIX/node_modules/.bin/tsc" --noEmit --strict --target es2022 --module nodenext \
    --moduleResolution nodenext --skipLibCheck $(find "$out/gen/typescript" -name '*.ts')
echo "clients: TypeScript generated from protos/ ($count files) and type-checked"
