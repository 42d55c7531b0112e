#!/usr/bin/env bash
# The main job: set everything up, then let a CodeAct agent solve a task in a sandbox as a durable
# Temporal workflow (`codeact run`, embedded Temporal dev server, worker in the same process).
#
#   scripts/demo.sh ["TASK"]
#
# With a model configured (OPENAI_API_KEY, GEMINI_API_KEY, ANTHROPIC_API_KEY, app_conf.yml, or
# CODEACT_MODEL=provider:model), that model solves TASK. Without one (no LLM provider is reachable
# from some machines), a local stand-in model (scripts/demo_model.py) replays a fixed trajectory
# for the default task, so the durable run itself can still be watched end to end.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/setup.sh" --build-dir "$BUILD_DIR"
codeact="$BUILD_DIR/src/cli/codeact"
task="${1:-Make a sales.csv with 18 months of sales, load it, fit a trend, plot it}"
model_args=()
stand_in=""
if [ -n "${CODEACT_MODEL:-}" ]; then
  model_args=(--model "$CODEACT_MODEL")
elif ! { "$codeact" doctor 2>/dev/null || true; } | grep -q "ok    model "; then
  printf '\n== No model configured: using the local stand-in model (scripts/demo_model.py)\n'
  printf '   Set OPENAI_API_KEY (or GEMINI_API_KEY, ANTHROPIC_API_KEY, CODEACT_MODEL) for a real one.\n'
  log="$(mktemp)"
  "$ROOT/.venv/bin/python" "$ROOT/scripts/demo_model.py" >"$log" 2>&1 &
  stand_in=$!
  trap 'kill $stand_in 2>/dev/null || true' EXIT
  for _ in $(seq 50); do [ -s "$log" ] && break; sleep 0.1; done
  model_args=(--model "$(head -1 "$log")")
fi
id="demo-$(date +%H%M%S)"
printf '\n== codeact run --workflow-id %s "%s"\n' "$id" "$task"
"$codeact" run "${model_args[@]}" --workflow-id "$id" "$task"
printf '\nThe files are in the volume workflow-%s: %s sandbox files %s\n' "$id" "$codeact" "$id"
printf 'Its state (variables, imports) is kept: %s sandbox exec %s "df.tail()"\n' "$codeact" "$id"
