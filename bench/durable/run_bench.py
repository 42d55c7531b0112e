#!/usr/bin/env python3
"""Durable overhead per agent step: `codeact run` (a CodeActTaskWorkflow on a local Temporal dev
server, worker in the same process) against `codeact run --no-durable`, same machine, same run.

A step is one model request (answered at once by a local OpenAI-compatible server) plus one
trivial cell. The server timestamps each request; the time between consecutive requests is one
step. Reports p50/p90 per step for each mode and the added time per step: --no-durable, durable
(model requests as local activities, the default) and durable with
`durable.activities.local_model_requests: false` (each model request an activity of its own),
and the history bytes per step of each durable mode (the run's whole history, as
`temporal workflow show --output json` prints it, over its steps).

    bench/durable/run_bench.py --codeact build/src/cli/codeact [--steps 30] [--runs 3]

The Temporal dev server is temporal::DevServer through temporal_dev_server (tests/cli/dev_server.py),
found in the same build tree as --codeact.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(REPO, "tests", "cli"))
from dev_server import dev_server  # noqa: E402
from scripted_model import ScriptedModel, python_turn  # noqa: E402

PROMPTS = os.path.join(REPO, "config", "agent_prompts.yml")


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def history_bytes(address, wid):
    temporal = os.path.join(REPO, ".venv", "bin", "temporal")
    p = subprocess.run([temporal, "workflow", "show", "--address", address, "--workflow-id", wid,
                        "--output", "json"], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise SystemExit(f"temporal workflow show {wid} failed:\n{p.stderr[-2000:]}")
    return len(p.stdout.encode())


def one_run(codeact, steps, durable, address, config=None, sizes=None):
    stamps = []
    turns = [python_turn(f"call_{i}", f"x = {i}") for i in range(steps)] + [{"content": "done"}]
    model = ScriptedModel(turns, on_request=lambda k, body: stamps.append(time.perf_counter()))
    sid = f"bench-durable-{uuid.uuid4().hex[:8]}"
    argv = [codeact, "run", "--model", model.model_flag, "--prompts", PROMPTS, "--workflow-id", sid,
            "--json", "--max-requests", str(steps + 5), "bench"]
    argv += ["--temporal", address] if durable else ["--no-durable"]
    if config:
        argv += ["--config", config]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            raise SystemExit(f"run failed ({'durable' if durable else 'direct'}):\n{p.stderr[-3000:]}")
        if sizes is not None:
            sizes.append(history_bytes(address, sid) / (steps + 1))
    finally:
        model.close()
        subprocess.run([codeact, "sandbox", "rm", sid, "--volume"], capture_output=True)
    # Drop the first step (sandbox start, first-use costs); the rest are steady-state steps.
    return [(b - a) * 1000 for a, b in zip(stamps[1:], stamps[2:])]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--codeact", default=os.path.join(REPO, "build/src/cli/codeact"))
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dev-server", default=None,
                    help="temporal_dev_server (default: bench/temporal/ of the build tree of --codeact)")
    args = ap.parse_args()
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(args.codeact))))
    program = args.dev_server or os.path.join(build, "bench", "temporal", "temporal_dev_server")
    activity_config = os.path.join(tempfile.mkdtemp(prefix="bench-durable-"), "app_conf.yml")
    with open(activity_config, "w") as f:
        f.write("durable:\n  activities:\n    local_model_requests: false\n")
    with dev_server(program) as address:
        direct, local, activity = [], [], []
        local_bytes, activity_bytes = [], []
        for r in range(args.runs):  # interleaved, so load changes hit every mode alike
            direct += one_run(args.codeact, args.steps, False, address)
            local += one_run(args.codeact, args.steps, True, address, sizes=local_bytes)
            activity += one_run(args.codeact, args.steps, True, address, activity_config,
                                activity_bytes)
            print(f"run {r + 1}/{args.runs} done", file=sys.stderr)
    d50 = statistics.median(direct)
    print(f"steps measured per mode: {len(direct)} (load average {os.getloadavg()[0]:.1f}, "
          f"{os.cpu_count()} cores)")
    print(f"--no-durable step:                   p50 {d50:.1f} ms  p90 {percentile(direct, 90):.1f} ms")
    for name, xs, sizes in (("durable, local model requests", local, local_bytes),
                            ("durable, model request activities", activity, activity_bytes)):
        u50, u90 = statistics.median(xs), percentile(xs, 90)
        print(f"{name + ':':36} p50 {u50:.1f} ms  p90 {u90:.1f} ms  added p50 {u50 - d50:.1f} ms "
              f"p90 {u90 - percentile(direct, 90):.1f} ms  ({u50 / d50:.2f}x)  "
              f"history {statistics.median(sizes) / 1024:.1f} KiB per step")
    print("target: added <= 10 ms per step at p50 (floor 20 ms)")


if __name__ == "__main__":
    main()
