#!/usr/bin/env bash
# Regenerate the Python code for protos/ into service/ofcpoker (committed).
#   scripts/gen_protos.sh          regenerate in place
#   scripts/gen_protos.sh --check  regenerate into a temporary folder and fail on any diff (CI)
# Uses grpcio-tools (bundled protoc), mypy-protobuf (.pyi stubs) and protoc-gen-connectrpc
# (*_connect.py: the Connect/gRPC-Web ASGI applications of the services) from .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
mode=${1:-write}

generate() {  # $1: output root; writes $1/ofcpoker/...
    local out=$1
    local wkt
    wkt=$("$BIN/python" -c 'import grpc_tools, os; print(os.path.join(os.path.dirname(grpc_tools.__file__), "_proto"))')
    mkdir -p "$out"
    (cd protos && find ofcpoker -name '*.proto' | LC_ALL=C sort) | (
        cd protos && xargs "../$BIN/python" -m grpc_tools.protoc -I . -I "$wkt" \
            --plugin=protoc-gen-mypy="../$BIN/protoc-gen-mypy" \
            --plugin=protoc-gen-mypy_grpc="../$BIN/protoc-gen-mypy_grpc" \
            --plugin=protoc-gen-connectrpc="../$BIN/protoc-gen-connectrpc" \
            --python_out="$out" --grpc_python_out="$out" \
            --mypy_out="$out" --mypy_grpc_out="$out" \
            --connectrpc_out="$out" --connectrpc_opt=protobuf=google
    ) 2> >(grep -v '^Writing mypy to ' >&2)
    # Regular packages (setuptools finds them; mypy reads the stubs through them).
    find "$out/ofcpoker" -type d | while read -r dir; do
        printf '"""Generated from protos/ by scripts/gen_protos.sh; do not edit."""\n' >"$dir/__init__.py"
    done
    : >"$out/ofcpoker/py.typed"
}

case "$mode" in
    write)
        tmp=$(mktemp -d)
        trap 'rm -rf "$tmp"' EXIT
        generate "$tmp"
        rm -rf service/ofcpoker
        cp -r "$tmp/ofcpoker" service/ofcpoker
        echo "generated service/ofcpoker from protos/"
        ;;
    --check)
        tmp=$(mktemp -d)
        trap 'rm -rf "$tmp"' EXIT
        generate "$tmp"
        if ! diff -r -x __pycache__ "$tmp/ofcpoker" service/ofcpoker; then
            echo "service/ofcpoker is out of date: run scripts/gen_protos.sh" >&2
            exit 1
        fi
        echo "service/ofcpoker matches protos/"
        ;;
    *)
        echo "usage: $0 [--check]" >&2
        exit 2
        ;;
esac
