#!/usr/bin/env python3
"""Noisy neighbour: how much a sandbox running a CPU bomb and a memory bomb slows a trivial cell in
another sandbox on the same machine (issue #18 §3; target: p50 within 5x of idle).

Starts two sandboxes through the `codeact` CLI. Sandbox B runs `1+1` (`codeact sandbox exec B
1+1`, timed from the CLI's start to its exit, as a user or a model's tool call sees it) --samples
times while A is idle, then again while A runs, in one bash script under its limits (--memory,
--cpus): one busy loop per core the sandbox sees, and a loop that allocates (and touches) memory
until the sandbox's memory limit kills it, over and over. Prints p50/p90 of both, the ratio of the
p50s and whether it is within 5x, and how often A's memory bomb reached the limit.

    bench/sandbox/noisy_neighbour.py [--codeact build/src/cli/codeact] [--samples 30]
                                     [--memory 512m] [--cpus 1]

Both sandboxes are removed at the end, on Ctrl-C too.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TARGET_RATIO = 5.0
RAMP_UP_S = 3.0  # the bombs reach full strength (busy loops started, first limit reached)

# One busy loop per core the sandbox sees, and a memory bomb restarted each time the limit kills
# it; each end of the memory bomb prints a line ("limit"). All of it ends with the script.
BOMBS = r"""
for _ in $(seq "$(nproc)"); do python3 -c 'while True: pass' & done
while true; do
  python3 -c '
chunks = []
while True:
    chunks.append(b"m" * (16 << 20))'
  echo limit
done
"""


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


class Sandboxes:
    def __init__(self, codeact):
        self.codeact = codeact
        self.ids = []

    def cli(self, *args, timeout=600):
        return subprocess.run([self.codeact, *args], capture_output=True, text=True,
                              timeout=timeout)

    def start(self, *flags):
        sid = f"bench-noisy-{uuid.uuid4().hex[:8]}"
        self.ids.append(sid)
        p = self.cli("sandbox", "start", "--id", sid, *flags)
        if p.returncode != 0:
            raise SystemExit(f"sandbox start failed:\n{p.stderr}")
        return sid

    def remove_all(self):
        for sid in self.ids:
            self.cli("sandbox", "rm", sid, "--volume", timeout=120)
        self.ids = []


def trivial_cell_ms(sandboxes, sid):
    t0 = time.perf_counter()
    p = sandboxes.cli("sandbox", "exec", sid, "--json", "--timeout", "60", "1+1")
    ms = (time.perf_counter() - t0) * 1000
    if p.returncode != 0 or json.loads(p.stdout)["result"] != "2":
        raise SystemExit(f"the trivial cell failed in {sid}:\n{p.stdout}\n{p.stderr}")
    return ms


def sample(sandboxes, sid, n, until=None):
    """n timings of the trivial cell in sid (fewer if until() turns true first)."""
    out = []
    for _ in range(n):
        if until is not None and until():
            break
        out.append(trivial_cell_ms(sandboxes, sid))
    return out


def main():
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--codeact", default=os.environ.get(
        "CODEACT_BIN", os.path.join(REPO, "build", "src", "cli", "codeact")),
        help="the codeact binary (default: $CODEACT_BIN, else build/src/cli/codeact)")
    ap.add_argument("--samples", type=int, default=30,
                    help="timings of the trivial cell, idle and loaded each (default 30)")
    ap.add_argument("--memory", default="512m",
                    help="memory limit of the bombing sandbox A (default 512m)")
    ap.add_argument("--cpus", default="1", help="CPU limit of the bombing sandbox A (default 1)")
    args = ap.parse_args()
    # Ctrl-C and SIGTERM both end in the finally below, which removes the sandboxes.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    sandboxes = Sandboxes(os.path.abspath(args.codeact))
    try:
        b = sandboxes.start()
        a = sandboxes.start("--memory", args.memory, "--cpus", args.cpus)
        sample(sandboxes, b, 3)  # first-use costs
        idle = sample(sandboxes, b, args.samples)

        # Long enough for the ramp-up and every sample at 20x the idle p50, at least 15 s.
        window_s = max(15.0, args.samples * statistics.median(idle) / 1000 * 20)
        bomb = {}

        def run_bombs():
            bomb["proc"] = sandboxes.cli("sandbox", "bash", a, "--json", "--timeout",
                                         str(RAMP_UP_S + window_s), BOMBS)

        thread = threading.Thread(target=run_bombs, daemon=True)
        thread.start()
        time.sleep(RAMP_UP_S)
        loaded = sample(sandboxes, b, args.samples, until=lambda: not thread.is_alive())
        thread.join()
        reply = json.loads(bomb["proc"].stdout or "{}")
        limit_hits = reply.get("stdout", "").count("limit")
    finally:
        sandboxes.remove_all()

    if not loaded:
        raise SystemExit(f"the bombs ended before any loaded sample:\n{bomb['proc'].stderr}")
    if len(loaded) < args.samples:
        print(f"warning: the bombs ended after {len(loaded)} of {args.samples} loaded samples",
              file=sys.stderr)
    i50, l50 = statistics.median(idle), statistics.median(loaded)
    ratio = l50 / i50
    print(f"noisy neighbour: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
          f"sandbox A (--memory {args.memory} --cpus {args.cpus}) ran one busy loop per core "
          f"and a memory bomb that reached its limit {limit_hits} times; "
          f"sandbox B ran `1+1` through the CLI")
    print("| sandbox B's trivial cell | p50 | p90 | samples |")
    print("| --- | --- | --- | --- |")
    print(f"| A idle | {i50:.1f} ms | {percentile(idle, 90):.1f} ms | {len(idle)} |")
    print(f"| A bombing | {l50:.1f} ms | {percentile(loaded, 90):.1f} ms | {len(loaded)} |")
    verdict = "within" if ratio <= TARGET_RATIO else "NOT within"
    print(f"loaded/idle p50: {ratio:.2f}x ({verdict} {TARGET_RATIO:g}x)")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit("interrupted; the sandboxes were removed")
