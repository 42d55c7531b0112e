"""Temporal benchmark: 200 sequential no-op activities, C++ worker vs Python temporalio worker.

Starts its own dev server (temporal::DevServer through temporal_dev_server, next to the C++
worker; see tests/cli/dev_server.py), runs each worker in its own process against it, in the same run,
and prints per-activity overhead (workflow wall time / activities) and worker RSS (peak and final),
with ratios C++/Python.

  .venv/bin/python bench/temporal/run_bench.py --cpp-worker build/bench/temporal/temporal_bench_worker
"""
import argparse
import asyncio
import os
import subprocess
import sys
import time
import uuid

from temporalio.client import Client

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "cli"))
from dev_server import dev_server  # noqa: E402


def rss_kib(pid: int) -> dict:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                k, v = line.split(":")
                out[k] = int(v.split()[0])
    return out


def tree_pids(pid: int) -> list:
    pids = [pid]
    try:
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
        for c in out.split():
            pids += tree_pids(int(c))
    except OSError:
        pass
    return pids


async def run_one(client: Client, argv: list, n: int, runs: int) -> dict:
    queue = "bench-" + uuid.uuid4().hex[:8]
    proc = subprocess.Popen(argv + ["--task-queue", queue], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        if "ready" not in line:
            raise RuntimeError(f"worker {argv[0]} did not start")
        # Warm-up: first workflow and activity tasks, connections, caches.
        await client.execute_workflow("Bench", 5, id=f"{queue}-warm", task_queue=queue)
        times = []
        for r in range(runs):
            t0 = time.perf_counter()
            res = await client.execute_workflow("Bench", n, id=f"{queue}-{r}", task_queue=queue)
            times.append(time.perf_counter() - t0)
            assert res == n, res
        mem = {"VmRSS": 0, "VmHWM": 0}
        for p in tree_pids(proc.pid):
            m = rss_kib(p)
            mem["VmRSS"] += m.get("VmRSS", 0)
            mem["VmHWM"] += m.get("VmHWM", 0)
        return {"best_s": min(times), "median_s": sorted(times)[len(times) // 2], **mem}
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


async def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--cpp-worker", required=True)
    p.add_argument("--activities", type=int, default=200)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--temporal", default=None, help="the temporal CLI (default: as temporal_dev_server finds it)")
    p.add_argument("--dev-server", default=None, help="temporal_dev_server (default: next to --cpp-worker)")
    args = p.parse_args()
    program = args.dev_server or os.path.join(os.path.dirname(os.path.abspath(args.cpp_worker)), "temporal_dev_server")
    with dev_server(program, args.temporal) as address:
        client = await Client.connect(address)
        n = args.activities
        cpp = await run_one(client, [args.cpp_worker, "--address", address], n, args.runs)
        py = await run_one(client, [sys.executable, os.path.join(HERE, "py_worker.py"), "--address", address], n,
                           args.runs)
        print(f"Temporal benchmark: workflow of {n} sequential no-op activities, best of {args.runs} runs, "
              f"same dev server")
        print(f"{'worker':<10}{'wall (s)':>10}{'per activity (ms)':>20}{'RSS (MiB)':>12}{'peak RSS (MiB)':>16}")
        for name, r in (("C++", cpp), ("Python", py)):
            print(f"{name:<10}{r['best_s']:>10.3f}{r['best_s'] / n * 1000:>20.3f}{r['VmRSS'] / 1024:>12.1f}"
                  f"{r['VmHWM'] / 1024:>16.1f}")
        print(f"ratio C++/Python: per-activity overhead {cpp['best_s'] / py['best_s']:.2f} (target <= 1.00), "
              f"RSS {cpp['VmRSS'] / py['VmRSS']:.2f} (target <= 0.33), "
              f"peak RSS {cpp['VmHWM'] / py['VmHWM']:.2f}")
        return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
