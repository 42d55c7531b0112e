#!/usr/bin/env python3
"""Failover time (issue #13): from a host's death to the run's next cell completing on another
host, with shared storage, against the target "<= 2 x the host timeout + one restore".

Three hosts as in tests/hosts (its harness, tests/hosts/hosts_harness.py): each a private Docker
engine in a network namespace of its own with a `codeact worker --host-id hN` on it, one Temporal
dev server, every worker with CODEACT_SHARED_DIR on one directory (standing in for the NFS mount
of every host) and durable.activities.host_timeout_seconds = --host-timeout (heartbeats 2 s).
Each repetition runs the chaos model's 4 cells (tests/chaos/chaos_model.py; each cell makes a
host-side tool call, then sleeps --cell-seconds) pinned to a victim host (h1, h2, h3 in turn)
and, once cell 2 has made its call (it is running), kills the victim's worker and its dockerd
(SIGKILL, as tests/hosts does). Figures, per repetition:

  failover    the kill to the first model request carrying a cell's result together with the
              note "The sandbox moved from host ..." (the local model server timestamps it): the
              interrupted cell restored and run again to completion on a live host. It includes
              that cell's own run (--cell-seconds) and the step's Temporal round trips.
  restore     the move's codeact.sandbox_start in the run's history, scheduled to completed: the
              sandbox placed on the live host and its last committed cell restored from the
              shared directory. This is the "one restore" of the target, measured in the same run.
  detection   the kill to that start being scheduled (heartbeat timeout + the host timeout the
              retry waits on the lost host's queue).
  CLI restore (a cross-check) after the run, `codeact sandbox start --id ID` plus a first
              `sandbox exec` on the third host (neither the victim nor where it moved):
              a cold start of the same sandbox from the shared directory, to first result.

Reports each figure, its target 2 x T + restore and the ratio, and the p50s. Needs root (network
namespaces, dockerd). Default run time: about 2 minutes (engines and image load ~40 s,
~30 s a repetition). Cleans up its engines, namespaces, dev server, workers and sandboxes.

    sudo .venv/bin/python bench/hosts/failover_bench.py --codeact build/src/cli/codeact [--reps 3]
"""
import argparse
import datetime
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(REPO, "tests", "hosts"))
from hosts_harness import (Hosts, activity_hosts, placements, shared_durable,  # noqa: E402
                           start_engines, stop_engines)
from chaos_model import ANSWER, CELLS, tool_log_lines  # noqa: E402

HOSTS = ("h1", "h2", "h3")
MOVED = "The sandbox moved from host"


def event_time(e):
    """An event's eventTime (RFC 3339, nanoseconds) as seconds since the epoch."""
    s = re.sub(r"(\.\d{6})\d+", r"\1", e["eventTime"]).replace("Z", "+00:00")
    return datetime.datetime.fromisoformat(s).timestamp()


def move_start(events):
    """(scheduled, completed) wall-clock times of the run's last codeact.sandbox_start: the
    move's."""
    scheduled, done = {}, {}
    for e in events:
        a = e.get("activityTaskScheduledEventAttributes")
        if a and a["activityType"]["name"] == "codeact.sandbox_start":
            scheduled[str(e["eventId"])] = event_time(e)
        a = e.get("activityTaskCompletedEventAttributes")
        if a and str(a["scheduledEventId"]) in scheduled:
            done[str(a["scheduledEventId"])] = event_time(e)
    last = max(done, key=int)
    return scheduled[last], done[last]


def calls_of(hosts, wid):
    return [line for line in tool_log_lines(str(hosts.calls_log)) if line.startswith(wid + " ")]


def one_failover(hosts, engines, shared, victim, codeact, seen):
    """One repetition; returns its figures (seconds) and where the sandbox went."""
    wid = f"failover-{uuid.uuid4().hex[:6]}"
    seen.clear()
    proc = hosts.run(wid, "--host", victim)
    try:
        deadline = time.monotonic() + 120
        while len(calls_of(hosts, wid)) < 2:  # cell 2 made its call: it is running now
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit(f"{wid}: cell 2 did not start:\n{proc.stderr.read()[-3000:]}")
            time.sleep(0.02)
        killed_wall, killed = time.time(), time.monotonic()
        hosts.lose(victim)
        out, err = proc.communicate(timeout=300)
        if proc.returncode != 0 or ANSWER not in out:
            raise SystemExit(f"{wid} failed after losing {victim}:\n{err[-3000:]}")
        done = [t for t, text in list(seen)
                if t > killed and MOVED in text and "result: 'done " in text]
        if not done:
            raise SystemExit(f"{wid}: no cell result after the move reached the model")
        owners = placements(shared, wid)
        to_host = owners[max(owners)]
        if owners.get(1) != victim or to_host == victim:
            raise SystemExit(f"{wid}: placements {owners}, the victim was {victim}")
        events = hosts.history(wid)
        ran = activity_hosts(events)
        if ran[-1][2] != to_host:
            raise SystemExit(f"{wid}: moved to {to_host} but its last activity ran on {ran[-1][2]}")
        scheduled, completed = move_start(events)
        # The cross-check: the same sandbox started cold from the shared directory on the third host.
        third = next(h for h in HOSTS if h not in (victim, to_host))
        env = dict(os.environ, DOCKER_HOST=engines[third].host, CODEACT_SHARED_DIR=str(shared))
        t = time.monotonic()
        start = subprocess.run([codeact, "sandbox", "start", "--id", wid], env=env,
                               capture_output=True, text=True, timeout=300)
        first = subprocess.run([codeact, "sandbox", "exec", wid, "--json", "counter"], env=env,
                               capture_output=True, text=True, timeout=300)
        cli_restore = time.monotonic() - t
        if (start.returncode != 0 or first.returncode != 0
                or json.loads(first.stdout).get("result") != str(CELLS)):
            raise SystemExit(f"{wid}: the CLI restore on {third} failed:\n{start.stderr}\n"
                             f"{first.stdout}\n{first.stderr}")
        return dict(victim=victim, to=to_host, third=third, failover=done[0] - killed,
                    restore=completed - scheduled, detection=scheduled - killed_wall,
                    cli_restore=cli_restore)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if not engines[victim].running():
            engines[victim].start()
        if hosts.workers[victim].proc.poll() is not None:
            hosts.workers[victim].start(stderr=open(hosts.tmp / f"worker-{victim}.log", "ab"))
        hosts.remove(wid, shared)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--codeact", default=os.path.join(REPO, "build/src/cli/codeact"),
                    help="the codeact binary (default: build/src/cli/codeact); the Temporal dev "
                         "server program is taken from its build tree, else the repo's build/")
    ap.add_argument("--reps", type=int, default=3, help="repetitions (default 3)")
    ap.add_argument("--host-timeout", type=float, default=5,
                    help="durable.activities.host_timeout_seconds, T of the target (default 5)")
    ap.add_argument("--cell-seconds", type=float, default=0.5,
                    help="how long each cell sleeps after its tool call (default 0.5)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("failover_bench needs root (private Docker engines in network namespaces)")
    codeact = os.path.abspath(args.codeact)
    with tempfile.TemporaryDirectory(prefix="codeact-failover-") as workdir:
        work = pathlib.Path(workdir)
        engines = start_engines(work / "engines", HOSTS, codeact=codeact)
        hosts = None
        try:
            shared = work / "shared"
            shared.mkdir()
            (work / "hosts").mkdir()
            hosts = Hosts(work / "hosts", engines, shared_durable(args.host_timeout),
                          env={"CODEACT_SHARED_DIR": str(shared)}, codeact=codeact,
                          cell_seconds=args.cell_seconds)
            seen = []  # (time, the last tool result of a model request)

            def on_request(k, body):
                tools = [m for m in body.get("messages", []) if m.get("role") == "tool"]
                if tools:
                    seen.append((time.monotonic(), str(tools[-1].get("content"))))

            hosts.model.on_request = on_request
            rows = []
            for r in range(args.reps):
                row = one_failover(hosts, engines, shared, HOSTS[(r + 1) % len(HOSTS)], codeact,
                                   seen)
                rows.append(row)
                print(f"repetition {r + 1}/{args.reps} done", file=sys.stderr)
        finally:
            if hosts:
                hosts.close()
            stop_engines(engines)
    T = args.host_timeout
    print(f"failover with shared storage: host timeout T = {T:g} s, heartbeat 2 s, cells of "
          f"{args.cell_seconds:g} s (load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)")
    print(f"{'rep':>3}  {'lost':>4} {'moved to':>8}  {'failover':>8}  {'detection':>9}  "
          f"{'restore':>7}  {'target 2T+restore':>17}  {'ratio':>5}  {'CLI restore':>11}")
    for i, row in enumerate(rows, 1):
        target = 2 * T + row["restore"]
        print(f"{i:>3}  {row['victim']:>4} {row['to']:>8}  {row['failover']:>7.2f}s  "
              f"{row['detection']:>8.2f}s  {row['restore']:>6.2f}s  {target:>16.2f}s  "
              f"{row['failover'] / target:>5.2f}  {row['cli_restore']:>10.2f}s")
    p50 = {k: statistics.median(r[k] for r in rows)
           for k in ("failover", "detection", "restore", "cli_restore")}
    target = 2 * T + p50["restore"]
    met = "met" if p50["failover"] <= target else "missed"
    print(f"p50: failover {p50['failover']:.2f} s (detection {p50['detection']:.2f} s), restore "
          f"{p50['restore']:.2f} s, target 2 x {T:g} + {p50['restore']:.2f} = {target:.2f} s: "
          f"ratio {p50['failover'] / target:.2f}, {met}; CLI restore {p50['cli_restore']:.2f} s")


if __name__ == "__main__":
    main()
