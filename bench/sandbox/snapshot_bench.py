#!/usr/bin/env python3
"""Snapshot time of a big numpy array: the state store's chunked array storage against the
previous format (the array pickled whole, CODEACT_STATE_CHUNK_BYTES=0), same machine, same run.

Runs the real kernel on the host the way the kernel pytest suite does (tests/sandbox/kernel/
conftest.py: a subprocess with its own storage directory, dropping to uid 1000 when started as
root), with durability fsync as in a sandbox. For each array size (1 GiB, and 2 GiB when the
machine has the memory) and each format it measures, from the replies' snapshot_ms:
  first save       the cell that creates the array (np.arange: every chunk distinct)
  one-element      a cell that changes one element (median of --repeat cells)
  read only        a cell that only reads the array (median of --repeat cells)
and the restore (kill -9, start, until the kernel answers). The formats alternate (--runs
rounds of previous, chunked) and each figure is the median over the rounds; then it prints a
table and the ratios (previous format / chunked).

    .venv/bin/python bench/sandbox/snapshot_bench.py [--sizes-gib 1,2] [--repeat 3] [--runs 2]
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "sandbox", "kernel"))
import conftest  # noqa: E402  (the kernel process harness of the pytest suite)

GIB = 1 << 30


def mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def run(c, code):
    r = c.run(code)
    if r["status"] != "ok":
        raise RuntimeError("cell failed: %s" % r["error"])
    return r


def measure(size, chunk_env, repeat):
    base = tempfile.mkdtemp(prefix="cs-", dir="/tmp")
    k = conftest.KernelProcess(base, "sbx-bench", env={"CODEACT_DURABILITY": "fsync",
                                                      "CODEACT_STATE_CHUNK_BYTES": chunk_env})
    try:
        k.start()
        c = k.client(timeout=1800)
        n = size // 8
        first = run(c, "import numpy as np\narr = np.arange(%d, dtype=np.float64)" % n)
        changes, reads, notice = [], [], None
        for i in range(repeat):
            r = run(c, "arr[%d] += 1.0" % (n // 3 + i * 7919))
            changes.append(r["snapshot_ms"])
            notice = r.get("notice") or notice
        for _ in range(repeat):
            reads.append(run(c, "float(arr[-1])")["snapshot_ms"])
        k.kill9()
        t0 = time.monotonic()
        k.start()
        c = k.client(timeout=1800)
        assert c.ok("hello")["restore_errors"] == []
        check = run(c, "float(arr[%d])" % (n // 3))["result"]
        restore_s = time.monotonic() - t0
        assert float(check) == float(n // 3 + 1), check
        return {"first": first["snapshot_ms"], "change": statistics.median(changes),
                "read": statistics.median(reads), "restore": restore_s * 1000,
                "notice": notice}
    finally:
        k.stop()
        shutil.rmtree(base, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes-gib", default="1,2")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    sizes = [float(s) for s in args.sizes_gib.split(",") if s]
    print("snapshot bench: kernel on the host, durability fsync, load average %.1f"
          % os.getloadavg()[0])
    rows = []
    for gib in sizes:
        size = int(gib * GIB)
        if mem_available() < 3 * size:
            print("%g GiB: skipped (MemAvailable %.1f GiB < 3x the array)"
                  % (gib, mem_available() / GIB))
            continue
        runs = {}
        for _ in range(args.runs):
            for label, env in (("previous (whole pickle)", "0"), ("chunked (16 MiB)", "")):
                m = measure(size, env, args.repeat)
                runs.setdefault(label, []).append(m)
                print("%g GiB %-24s first save %8.0f ms  one-element change %8.0f ms  "
                      "read only %7.0f ms  restore %7.0f ms"
                      % (gib, label, m["first"], m["change"], m["read"], m["restore"]))
                if m["notice"]:
                    print("    notice: %s" % m["notice"])
        for label, ms in runs.items():
            med = {key: statistics.median(m[key] for m in ms)
                   for key in ("first", "change", "read", "restore")}
            rows.append((gib, label, med))
    print()
    print("medians of %d runs:" % args.runs)
    print("| array | format | first save | one-element change | read-only cell | restore |")
    print("| --- | --- | --- | --- | --- | --- |")
    for gib, label, m in rows:
        print("| %g GiB | %s | %.2f s | %.2f s | %.2f s | %.2f s |"
              % (gib, label, m["first"] / 1000, m["change"] / 1000, m["read"] / 1000,
                 m["restore"] / 1000))
    for gib in sizes:
        pair = [m for g, _, m in rows if g == gib]
        if len(pair) == 2:
            old, new = pair
            print("%g GiB ratio previous/chunked: first save %.2fx, one-element change %.1fx, "
                  "read only %.2fx, restore %.2fx"
                  % (gib, old["first"] / new["first"], old["change"] / new["change"],
                     old["read"] / max(new["read"], 1e-3), old["restore"] / new["restore"]))


if __name__ == "__main__":
    main()
