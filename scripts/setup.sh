#!/usr/bin/env bash
# Installs everything codeact needs on a fresh Debian bookworm machine, idempotently, then builds
# it. Safe to run again: each step is skipped when already done.
#
#   scripts/setup.sh [--no-image] [--build-dir DIR]
#
# Steps: Debian packages (scripts/deps/*.apt), the Python venv for test harnesses and the Temporal
# dev server (scripts/deps/*.pip -> .venv), the CMake build, the sandbox image (built beside the
# tests once the CLI is: they need nothing of each other).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
WITH_IMAGE=1
while [ $# -gt 0 ]; do
  case "$1" in
    --no-image) WITH_IMAGE=0 ;;
    --build-dir) BUILD_DIR="$2"; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
say() { printf '\n== %s\n' "$*"; }

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

say "Debian packages"
mapfile -t wanted < <(cat "$ROOT"/scripts/deps/*.apt | sed 's/#.*//' | tr -s ' \t' '\n' | grep -v '^$' | sort -u)
missing=()
for p in "${wanted[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then missing+=("$p"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "all ${#wanted[@]} present"
fi

say "Python environment (.venv)"
PY="${PYTHON:-python3}"
if [ ! -x "$ROOT/.venv/bin/python" ]; then
  "$PY" -m venv "$ROOT/.venv"
fi
req="$(cat "$ROOT"/scripts/deps/*.pip | sed 's/#.*//' | grep -v '^\s*$' | sort -u)"
stamp="$ROOT/.venv/.codeact-requirements"
if [ "$(cat "$stamp" 2>/dev/null)" != "$req" ]; then
  echo "$req" > "$ROOT/.venv/requirements.txt"
  "$ROOT/.venv/bin/pip" install -q --disable-pip-version-check -r "$ROOT/.venv/requirements.txt"
  echo "$req" > "$stamp"
else
  echo "up to date"
fi

say "Build ($BUILD_DIR)"
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
jobs="${CODEACT_BUILD_JOBS:-2}"
if [ "$WITH_IMAGE" != 1 ]; then
  cmake --build "$BUILD_DIR" -j"$jobs"
  say "Setup done"
  exit 0
fi
# The sandbox image needs only the CLI: it is built (debootstrap and apt, mostly network and disk)
# while the compiler builds the tests, and its log is shown once both are done.
cmake --build "$BUILD_DIR" -j"$jobs" --target codeact
image_log="$BUILD_DIR/image-build.log"
echo "(the sandbox image is built meanwhile; its log: $image_log)"
"$BUILD_DIR/src/cli/codeact" image build >"$image_log" 2>&1 &
image_pid=$!
build_status=0
cmake --build "$BUILD_DIR" -j"$jobs" || build_status=$?
image_status=0
wait "$image_pid" || image_status=$?
say "Sandbox image"
cat "$image_log"
if [ "$build_status" != 0 ]; then
  echo "setup.sh: the build failed (see above)" >&2
  exit "$build_status"
fi
if [ "$image_status" != 0 ]; then
  echo "setup.sh: building the sandbox image failed (its log is above)" >&2
  exit "$image_status"
fi
say "Setup done"
