#!/usr/bin/env python3
"""Host routing per cell (issue #13): what running on several hosts adds to a durable run's
step, against a single host in the same run; target <= 1 ms per cell.

A durable run's sandbox activities always go to its host's queue, `<queue>@<host id>`
(include/codeact/durable/sandbox_host.hpp): there is no unrouted mode left to compare with. So
the comparison is one host against three, with everything else equal:

  one host     one `codeact worker --host-id h1` (task queue A);
  three hosts  three `codeact worker --host-id h1|h2|h3` (task queue B), each run's sandbox
               started on whichever worker takes its start, its later activities on that
               host's queue;

both external workers on the machine's own Docker engine (distinct host ids on one engine: only
the routing differs, not the engine), driven by `codeact run --no-worker`. The baseline is an
external worker rather than `codeact run`'s in-process one because in-process against external
also changes the process that runs the workflow and activities; `codeact run` with its in-process
worker (one host) is measured too, as context (--no-in-process leaves it out).

A step is one model request (answered at once by a local OpenAI-compatible server,
tests/cli/scripted_model.py) plus one trivial cell; the server timestamps each request and the
time between consecutive requests is one step, as in bench/durable/run_bench.py. The first step
of a run (the sandbox's start) is dropped. The modes are interleaved run by run, after one
warm-up run each, on one Temporal dev server. Reports p50/p90 per step for each mode, the
difference per cell (three hosts - one host) and the ratio.

    .venv/bin/python bench/hosts/routing_bench.py --codeact build/src/cli/codeact [--runs 4]

Default run time: about 2.5 minutes. Removes its sandboxes and stops its workers and dev server.
"""
import argparse
import collections
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(REPO, "tests", "hosts"))
from hosts_harness import PROMPTS, dev_server_program  # noqa: E402
from dev_server import DevServer  # noqa: E402
from private_engine import main_env  # noqa: E402
from scripted_model import ScriptedModel, python_turn  # noqa: E402
from worker_process import WorkerProcess  # noqa: E402

SANDBOX_HOST = re.compile(r"sandbox \S+ on host (\S+)")


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


class Mode:
    """How runs are started: `workers` host ids of external workers on `queue`, or none for
    `codeact run`'s in-process worker."""

    def __init__(self, name, codeact, address, workers, logdir):
        self.name, self.codeact, self.address = name, codeact, address
        self.queue = f"route-{uuid.uuid4().hex[:6]}"
        self.external = bool(workers)
        self.steps, self.hosts = [], collections.Counter()
        self.workers = []
        for host in workers:
            w = WorkerProcess([codeact, "worker", "--temporal", address, "--task-queue", self.queue,
                               "--prompts", PROMPTS, "--host-id", host], main_env())
            log = open(os.path.join(logdir, f"worker-{name}-{host}.log"), "ab")
            self.workers.append(w.start(stderr=log))

    def run(self, steps, record=True):
        stamps = []
        turns = [python_turn(f"call_{i}", f"x = {i}") for i in range(steps)] + [{"content": "done"}]
        model = ScriptedModel(turns, on_request=lambda k, body: stamps.append(time.perf_counter()))
        sid = f"bench-route-{uuid.uuid4().hex[:8]}"
        argv = [self.codeact, "run", "--temporal", self.address, "--task-queue", self.queue,
                "--model", model.model_flag, "--prompts", PROMPTS, "--workflow-id", sid, "--json",
                "--max-requests", str(steps + 5)]
        argv += ["--no-worker"] if self.external else ["--host-id", "h1"]
        try:
            p = subprocess.run(argv + ["bench"], capture_output=True, text=True, timeout=900,
                               env=main_env())
            if p.returncode != 0:
                raise SystemExit(f"run failed ({self.name}):\n{p.stderr[-3000:]}")
        finally:
            model.close()
            subprocess.run([self.codeact, "sandbox", "rm", sid, "--volume"], capture_output=True,
                           env=main_env())
        if record:
            where = SANDBOX_HOST.search(p.stderr)
            self.hosts[where.group(1) if where else "?"] += 1
            self.steps += [(b - a) * 1000 for a, b in zip(stamps[1:], stamps[2:])]

    def close(self):
        for w in self.workers:
            w.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--codeact", default=os.path.join(REPO, "build/src/cli/codeact"),
                    help="the codeact binary (default: build/src/cli/codeact); the Temporal dev "
                         "server program is taken from its build tree, else the repo's build/")
    ap.add_argument("--steps", type=int, default=30, help="steps per run (default 30)")
    ap.add_argument("--runs", type=int, default=4, help="measured runs per mode (default 4)")
    ap.add_argument("--no-in-process", action="store_true",
                    help="leave out the `codeact run` (in-process worker) context figures")
    args = ap.parse_args()
    codeact = os.path.abspath(args.codeact)
    with tempfile.TemporaryDirectory(prefix="codeact-routing-") as workdir:
        server = DevServer(workdir, program=dev_server_program(codeact), log_level="error")
        address = server.start()
        modes = []
        try:
            modes = [Mode("one host", codeact, address, ["h1"], workdir),
                     Mode("three hosts", codeact, address, ["h1", "h2", "h3"], workdir)]
            if not args.no_in_process:
                modes.append(Mode("in-process", codeact, address, [], workdir))
            for m in modes:
                m.run(args.steps, record=False)  # warm-up: workers polling, image cached
            for r in range(args.runs):  # interleaved, so load changes hit every mode alike
                for m in modes:
                    m.run(args.steps)
                print(f"run {r + 1}/{args.runs} done", file=sys.stderr)
        finally:
            for m in modes:
                m.close()
            server.stop()
    print(f"steps measured per mode: {len(modes[0].steps)} ({args.runs} runs of {args.steps - 1}; "
          f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)")
    for m in modes:
        label = {"one host": "one host (1 external worker, h1)",
                 "three hosts": "three hosts (3 external workers)",
                 "in-process": "`codeact run`, in-process worker"}[m.name]
        print(f"{label:<36} p50 {statistics.median(m.steps):6.1f} ms  "
              f"p90 {percentile(m.steps, 90):6.1f} ms  sandboxes on {dict(sorted(m.hosts.items()))}")
    one, three = statistics.median(modes[0].steps), statistics.median(modes[1].steps)
    added = three - one
    print(f"added per cell by three hosts at p50: {added:+.2f} ms (target <= 1 ms: "
          f"{'met' if added <= 1 else 'missed'}); ratio {three / one:.3f}x; at p90 "
          f"{percentile(modes[1].steps, 90) - percentile(modes[0].steps, 90):+.2f} ms")


if __name__ == "__main__":
    main()
