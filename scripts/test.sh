#!/usr/bin/env bash
# Sets up everything (scripts/setup.sh) and runs every test: unit tests, then integration tests
# against the real Docker engine, a real Temporal dev server and local protocol servers (each
# test starts the services it needs). Extra arguments go to ctest, e.g. `-L unit` or `-R Sandbox`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/setup.sh" --build-dir "$BUILD_DIR"
export PATH="$ROOT/.venv/bin:$PATH"
export CODEACT_HOME="${CODEACT_HOME:-$BUILD_DIR/codeact-home}"
cd "$BUILD_DIR"
printf '\n== Tests\n'
ctest --output-on-failure --timeout 900 -j"${CODEACT_TEST_JOBS:-1}" "$@"
