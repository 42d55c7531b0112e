#!/usr/bin/env python3
"""Checkpoints (issue #15, docs/time-travel.md), each against a baseline of the same run:

  storage per cell   what one cell changing a small variable adds to the checkpoint log (its
                     record's added_bytes, and the growth of the state directory on disk) next
                     to --state-mb of unchanged state (a random float64 array and a file of the
                     same size under /output). Target: <= 64 KiB.
  cell latency       a trivial cell's round trip (median of --cells, interleaved rounds) keeping
                     every checkpoint against CODEACT_CHECKPOINTS=1 (last 1), with that state.
                     Target: <= 1.10x.
  fork               `codeact sandbox fork` of a real sandbox holding that state, against a full
                     copy of its state directory (`cp -a` inside its container), and the storage
                     the fork adds. Target: >= 20x faster, <= 1 MiB added.

The first two run the kernel on the host (the kernel pytest suite's harness, durability fsync as
in a sandbox); the fork needs Docker and the codeact binary (--codeact, default
build/src/cli/codeact).

    .venv/bin/python bench/sandbox/checkpoint_bench.py [--state-mb 200] [--cells 60] [--runs 3]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "sandbox", "kernel"))
import conftest  # noqa: E402  (the kernel process harness of the pytest suite)

KIB, MIB = 1 << 10, 1 << 20


def run(c, code):
    r = c.run(code)
    if r["status"] != "ok":
        raise RuntimeError("cell failed: %s" % r["error"])
    return r


def du(path):
    total = 0
    seen = set()
    for root, _, files in os.walk(path):
        for f in files:
            try:
                s = os.lstat(os.path.join(root, f))
            except OSError:
                continue
            if s.st_ino not in seen:
                seen.add(s.st_ino)
                total += s.st_blocks * 512
    return total


def make_state(c, state_mb):
    n = state_mb * MIB // 8
    run(c, "import numpy as np\nbig = np.random.default_rng(1).random(%d)\n"
           "open('data.bin', 'wb').write(np.random.default_rng(2).bytes(%d))" % (n, state_mb * MIB))


def kernel(retention):
    base = tempfile.mkdtemp(prefix="cb-", dir="/tmp")
    k = conftest.KernelProcess(base, "sbx-bench", env={"CODEACT_DURABILITY": "fsync",
                                                      "CODEACT_CHECKPOINTS": retention})
    k.start()
    return base, k


def storage_per_cell(state_mb):
    base, k = kernel("all")
    try:
        c = k.client(timeout=1800)
        make_state(c, state_mb)
        before = du(k.state)
        run(c, "counter = 1")
        rec = c.ok("checkpoints")["checkpoints"][-1]
        return rec["added_bytes"], du(k.state) - before
    finally:
        k.stop()
        shutil.rmtree(base, ignore_errors=True)


def latency(state_mb, cells, runs):
    medians = {"all": [], "1": []}
    kernels = {}
    try:
        for retention in ("all", "1"):
            base, k = kernel(retention)
            kernels[retention] = (base, k)
            c = k.client(timeout=1800)
            make_state(c, state_mb)
            run(c, "counter = 0")
        for _ in range(runs):
            for retention in ("all", "1"):
                c = kernels[retention][1].clients[-1]
                times = []
                for _ in range(cells):
                    t0 = time.perf_counter()
                    run(c, "counter += 1")
                    times.append((time.perf_counter() - t0) * 1000)
                medians[retention].append(statistics.median(times))
    finally:
        for base, k in kernels.values():
            k.stop()
            shutil.rmtree(base, ignore_errors=True)
    return statistics.median(medians["all"]), statistics.median(medians["1"])


def sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True)


def fork(codeact, state_mb, runs):
    sid = "bench-cp-" + uuid.uuid4().hex[:6]
    children = []
    try:
        sh(codeact, "sandbox", "start", "--id", sid, "--memory", "2g")
        n = state_mb * MIB // 8
        sh(codeact, "sandbox", "exec", sid,
           "import numpy as np\nbig = np.random.default_rng(1).random(%d)\n"
           "open('/output/data.bin', 'wb').write(np.random.default_rng(2).bytes(%d))"
           % (n, state_mb * MIB))
        h = json.loads(sh(codeact, "sandbox", "history", sid, "--json").stdout)
        at = str(h["current"])
        ws = "/persistent-storage/%s" % sid
        fork_ms, copy_ms, added = [], [], []
        for i in range(runs):
            t0 = time.perf_counter()
            sh("docker", "exec", "-u", "1000", "codeact-" + sid, "cp", "-a", ws + "/state",
               ws + "/state-copy")
            copy_ms.append((time.perf_counter() - t0) * 1000)
            sh("docker", "exec", "-u", "1000", "codeact-" + sid, "rm", "-rf", ws + "/state-copy")
            child = "%s-f%d" % (sid, i)
            children.append(child)
            t0 = time.perf_counter()
            sh(codeact, "sandbox", "fork", sid, "--at", at, "--id", child)
            fork_ms.append((time.perf_counter() - t0) * 1000)
            usage = sh("docker", "exec", "codeact-" + child, "du", "-sk",
                       "/persistent-storage/" + child).stdout.split()[0]
            added.append(int(usage) * KIB)
        return statistics.median(fork_ms), statistics.median(copy_ms), statistics.median(added)
    finally:
        for child in children:
            sh(codeact, "sandbox", "rm", child, "--volume", check=False)
        sh(codeact, "sandbox", "rm", sid, "--volume", check=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--state-mb", type=int, default=200)
    ap.add_argument("--cells", type=int, default=60)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--codeact", default=os.path.join(REPO, "build", "src", "cli", "codeact"))
    ap.add_argument("--no-fork", action="store_true", help="skip the part that needs Docker")
    a = ap.parse_args()

    print("checkpoint storage per cell (%d MB unchanged state) ..." % a.state_mb, flush=True)
    record, disk = storage_per_cell(a.state_mb)
    print("  record added_bytes %.1f KiB; state directory grew %.1f KiB (target <= 64 KiB)"
          % (record / KIB, disk / KIB))
    print("cell latency, all checkpoints vs last 1 ...", flush=True)
    all_ms, last1_ms = latency(a.state_mb, a.cells, a.runs)
    print("  p50 %.2f ms vs %.2f ms: %.2fx (target <= 1.10x)" % (all_ms, last1_ms,
                                                                 all_ms / last1_ms))
    if not a.no_fork:
        print("fork of a %d MB sandbox vs cp -a of its state ..." % a.state_mb, flush=True)
        fork_ms, copy_ms, added = fork(a.codeact, a.state_mb, a.runs)
        print("  fork %.0f ms vs copy %.0f ms: %.2fx faster (target >= 20x); the fork's volume "
              "holds %.1f MiB (target <= 1 MiB)" % (fork_ms, copy_ms, copy_ms / fork_ms,
                                                    added / MIB))


if __name__ == "__main__":
    main()
