#!/usr/bin/env bash
# Build (if needed) and run every test suite. Usage: scripts/test.sh [--sanitize]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "$@"
dir=build; [ "${1:-}" = "--sanitize" ] && dir=build-asan
ctest --test-dir "$dir" --output-on-failure -j"$(nproc)"
