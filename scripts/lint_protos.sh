#!/usr/bin/env bash
# The gRPC contract's checks, run by scripts/check.sh:
#   1. buf lint (STANDARD + COMMENTS, protos/buf.yaml), with buf from the npm registry,
#      installed on first use into .tools/ (gitignored);
#   2. buf breaking (FILE rules) against the previous commit, when it has protos/;
#   3. the generated Python in service/ofcpoker matches protos/ (scripts/gen_protos.sh --check).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/npm_tools.sh
ensure_buf

(cd protos && "$BUF" lint)
echo "buf lint: ok"

if git rev-parse --verify -q HEAD~1 >/dev/null && git cat-file -e HEAD~1:protos/buf.yaml 2>/dev/null; then
    (cd protos && "$BUF" breaking --against "../.git#ref=HEAD~1,subdir=protos")
    echo "buf breaking (FILE) against HEAD~1: ok"
fi

bash scripts/gen_protos.sh --check
