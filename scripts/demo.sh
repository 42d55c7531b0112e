#!/usr/bin/env bash
# The main job, for now: set up, start a sandbox, run cells in it, kill its container, and show
# that variables, functions, classes and imports survived.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/setup.sh" --build-dir "$BUILD_DIR"
codeact="$BUILD_DIR/src/cli/codeact"
id="${1:-demo}"
printf '\n== Start sandbox %s\n' "$id"
"$codeact" sandbox start --id "$id"
printf '\n== A cell\n'
"$codeact" sandbox exec "$id" '
import numpy as np
data = np.arange(10) ** 2
def total(xs): return int(xs.sum())
class Counter:
    def __init__(self): self.n = 0
    def inc(self): self.n += 1; return self.n
c = Counter(); c.inc()
print("sum of squares:", total(data))
total(data)'
printf '\n== Kill the container (docker kill codeact-%s)\n' "$id"
docker kill "codeact-$id" >/dev/null
printf '\n== The next cell still sees everything\n'
"$codeact" sandbox exec "$id" 'print(np.mean(data), total(data), c.inc())'
printf '\nsandbox %s is still running; remove it with: %s sandbox rm %s --volume\n' "$id" "$codeact" "$id"
