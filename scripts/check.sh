#!/usr/bin/env bash
# Everything CI checks, in order of speed; stops at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin

echo "== ruff"; $BIN/ruff check .
echo "== mypy --strict"; $BIN/mypy
echo "== import-linter"; $BIN/lint-imports
echo "== pytest"; $BIN/pytest -q "$@"
