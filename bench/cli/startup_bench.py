#!/usr/bin/env python3
"""CLI start-up (issue #14, README "Benchmarks"), each against baselines of the same run:

  --version          `codeact --version` against `codeact-full --version`: the lean program
                     against the one with every command, which loads gRPC, protobuf and abseil
                     (what every command cost before the split).
  trivial exec       `codeact sandbox exec ID pass` on a running sandbox, against the same command
                     through codeact-full, and against `docker exec CONTAINER python3 -c pass`
                     (the issue's baseline). Target: >= 15x faster than docker exec.

Rounds are interleaved (one run of each command per round) so that load on the machine falls
on all of them alike; medians and p90 over --runs rounds. Needs Docker and a built tree.

    .venv/bin/python bench/cli/startup_bench.py [--codeact build/src/cli/codeact] [--runs 60]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def timed(cmd):
    start = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = (time.perf_counter() - start) * 1000
    if r.returncode != 0:
        sys.exit("startup_bench: %s failed (%d): %s" % (" ".join(cmd), r.returncode,
                                                        r.stderr.decode(errors="replace")))
    return elapsed


def p90(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--codeact", default=os.path.join(REPO, "build", "src", "cli", "codeact"))
    ap.add_argument("--runs", type=int, default=60, help="interleaved rounds (default 60)")
    args = ap.parse_args()
    lean = os.path.abspath(args.codeact)
    full = os.path.join(os.path.dirname(lean), "codeact-full")
    for program in (lean, full):
        if not os.access(program, os.X_OK):
            sys.exit("startup_bench: %s is not built (cmake --build build)" % program)

    sid = "startup-bench-" + uuid.uuid4().hex[:8]
    print("[bench] starting sandbox %s ..." % sid, file=sys.stderr)
    subprocess.run([lean, "sandbox", "start", "--id", sid], check=True, stdout=subprocess.DEVNULL)
    try:
        commands = {
            "codeact --version": [lean, "--version"],
            "codeact-full --version": [full, "--version"],
            "codeact sandbox exec": [lean, "sandbox", "exec", sid, "pass"],
            "codeact-full sandbox exec": [full, "sandbox", "exec", sid, "pass"],
            "docker exec python3 -c pass": ["docker", "exec", "codeact-" + sid, "python3", "-c",
                                            "pass"],
        }
        for cmd in commands.values():  # warm the page cache and the sandbox
            timed(cmd)
        times = {name: [] for name in commands}
        for i in range(args.runs):
            for name, cmd in commands.items():
                times[name].append(timed(cmd))
            if (i + 1) % 10 == 0:
                print("[bench] %d/%d rounds" % (i + 1, args.runs), file=sys.stderr)
    finally:
        subprocess.run([lean, "sandbox", "rm", sid, "--volume"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)

    med = {name: statistics.median(xs) for name, xs in times.items()}
    print("\n%-30s %10s %10s" % ("command", "p50 ms", "p90 ms"))
    for name, xs in times.items():
        print("%-30s %10.1f %10.1f" % (name, med[name], p90(xs)))
    print()
    print("--version: codeact-full / codeact             %5.1fx" %
          (med["codeact-full --version"] / med["codeact --version"]))
    print("exec: codeact-full / codeact                  %5.1fx" %
          (med["codeact-full sandbox exec"] / med["codeact sandbox exec"]))
    print("exec: docker exec python3 / codeact           %5.1fx  (target >= 15x)" %
          (med["docker exec python3 -c pass"] / med["codeact sandbox exec"]))
    print("exec: docker exec python3 / codeact-full      %5.1fx  (before the split)" %
          (med["docker exec python3 -c pass"] / med["codeact-full sandbox exec"]))


if __name__ == "__main__":
    main()
