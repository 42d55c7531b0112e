"""Sandboxes pinned to their host (issue #13): with two hosts (two Docker engines, a worker on
each) behind one Temporal, every activity of a run that touches its sandbox runs on the host that
started it, and a run whose host is lost fails saying why instead of hanging.

What a user notices: every run answers right with its sandbox's state intact (each cell applied
once, on one engine); the live view says where the sandbox is; the run's history shows which
worker ran what (worker identities name their host); a lost host is an error that names it.
"""
import collections
import json
import os
import signal
import subprocess
import time
import uuid

import pytest

from chaos_model import ANSWER, CELLS, ChaosModel, expected_state, expected_state_check, tool_log_lines
from conftest import BIN, REPO
from dev_server import DevServer
from worker_process import WorkerProcess, durable_config, record_mcp_config

PROMPTS = os.path.join(REPO, "config", "agent_prompts.yml")
TEMPORAL = os.path.join(REPO, ".venv", "bin", "temporal")


class Hosts:
    """A dev server and a worker per engine, on one task queue."""

    def __init__(self, tmp_path, engines, durable="", env=None):
        self.tmp, self.engines = tmp_path, engines
        self.calls_log = tmp_path / "calls.log"
        self.cfg = tmp_path / "app_conf.yml"
        self.cfg.write_text((durable or durable_config()) + record_mcp_config(self.calls_log))
        self.queue = f"q-{uuid.uuid4().hex[:6]}"
        self.server = DevServer(tmp_path)
        self.address = self.server.start()
        self.model = ChaosModel(cell_seconds=0.2)
        self.workers = {}
        for host, engine in engines.items():
            w = WorkerProcess([BIN, "worker", "--temporal", self.address, "--task-queue", self.queue,
                               "--config", str(self.cfg), "--prompts", PROMPTS, "--host-id", host],
                              dict(os.environ, DOCKER_HOST=engine.host, **(env or {})))
            self.workers[host] = w.start(stderr=open(tmp_path / f"worker-{host}.log", "ab"))

    def run(self, wid, *extra):
        """A `codeact run --no-worker` of the chaos model's cells, started (not waited for)."""
        argv = [BIN, "run", "--temporal", self.address, "--no-worker", "--task-queue", self.queue,
                "--model", self.model.model_flag, "--prompts", PROMPTS, "--config", str(self.cfg),
                "--mcp", "fixture", "--workflow-id", wid, "--json", *extra,
                f"Run the {CELLS} cells."]
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def history(self, wid):
        p = subprocess.run([TEMPORAL, "workflow", "show", "--address", self.address,
                            "--workflow-id", wid, "--output", "json"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)["events"]

    def close(self):
        for w in self.workers.values():
            w.stop()
        self.model.close()
        self.server.stop()


def activity_hosts(events):
    """(activity type, task queue, host of the worker that ran it, attempt) per activity run."""
    scheduled = {}
    out = []
    for e in events:
        attrs = e.get("activityTaskScheduledEventAttributes")
        if attrs:
            scheduled[str(e["eventId"])] = (attrs["activityType"]["name"], attrs["taskQueue"]["name"])
        attrs = e.get("activityTaskStartedEventAttributes")
        if attrs:
            name, queue = scheduled[str(attrs["scheduledEventId"])]
            identity = attrs.get("identity", "")
            host = identity.split("@", 1)[1].split(" ", 1)[0] if "@" in identity else ""
            out.append((name, queue, host, int(attrs.get("attempt", 1))))
    return out


def volume_host(engines, wid):
    """The hosts whose engine holds the run's volume."""
    return [h for h, e in engines.items()
            if e.docker("volume", "inspect", f"workflow-{wid}").returncode == 0]


def test_each_runs_sandbox_work_runs_on_the_host_that_started_it(tmp_path, engines):
    hosts = Hosts(tmp_path, engines)
    runs = []
    try:
        tag = uuid.uuid4().hex[:6]
        # Two runs pinned to each host (--host), two placed wherever their start lands.
        plan = [("h1", ["--host", "h1"]), ("h1", ["--host", "h1"]), ("h2", ["--host", "h2"]),
                ("h2", ["--host", "h2"]), (None, []), (None, [])]
        runs = [(f"hosts-{tag}-{i}", pinned, hosts.run(f"hosts-{tag}-{i}", *extra))
                for i, (pinned, extra) in enumerate(plan)]
        placed = collections.Counter()
        for wid, pinned, proc in runs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, f"{wid}: {err[-3000:]}"
            assert json.loads(out)["output"] == ANSWER, out
            where = volume_host(engines, wid)
            assert len(where) == 1, f"{wid}: its volume is on {where}"
            host = where[0]
            placed[host] += 1
            if pinned:
                assert host == pinned, f"{wid} was pinned to {pinned} and started on {host}"
            # The stopped sandbox is listed on its engine with the host that made it.
            ls = subprocess.run([BIN, "sandbox", "ls", "--json"], capture_output=True, text=True,
                                env=dict(os.environ, DOCKER_HOST=engines[host].host))
            mine = [s for s in json.loads(ls.stdout) if s["id"] == wid]
            assert mine and mine[0]["host"] == host, ls.stdout
            # The live view says where the sandbox is.
            assert f"── sandbox {wid} on host {host}" in err, err[-2000:]
            # Every activity after the sandbox's start went to its host's queue and was run there,
            # the first time (a model request too: its instructions read the sandbox).
            for name, queue, ran_on, attempt in activity_hosts(hosts.history(wid)):
                if name == "codeact.sandbox_start" and not pinned:
                    assert queue == hosts.queue and ran_on == host, (wid, name, queue, ran_on)
                    continue
                assert (queue, ran_on, attempt) == (f"{hosts.queue}@{host}", host, 1), (wid, name)
            # The state: each cell applied once, its files intact, on that host's engine.
            p = subprocess.run([BIN, "sandbox", "exec", wid, "--json", expected_state_check()],
                               env=dict(os.environ, DOCKER_HOST=engines[host].host),
                               capture_output=True, text=True, timeout=120)
            assert p.returncode == 0, p.stderr
            assert json.loads(p.stdout)["result"] == expected_state(), p.stdout
        assert set(placed) == {"h1", "h2"}, placed
        # Every cell's host-side tool call was made once.
        calls = collections.Counter(tool_log_lines(str(hosts.calls_log)))
        assert {line: n for line, n in calls.items() if n > 1} == {}
        assert len(calls) == len(runs) * CELLS
    finally:
        hosts.close()
        for wid, _, _ in runs:
            for engine in engines.values():
                subprocess.run([BIN, "sandbox", "rm", wid, "--volume"], capture_output=True,
                               env=dict(os.environ, DOCKER_HOST=engine.host))


def test_a_run_whose_host_is_lost_fails_naming_it_and_nothing_hangs(tmp_path, engines):
    # Short heartbeats (a dead worker is noticed in 2 s) and a 5 s host timeout.
    durable = durable_config().replace("  activities:\n", "  activities:\n    host_timeout_seconds: 5\n")
    hosts = Hosts(tmp_path, engines, durable)
    wid = f"lost-{uuid.uuid4().hex[:6]}"
    try:
        hosts.model.close()
        hosts.model = ChaosModel(cell_seconds=30)  # each cell runs long enough to lose its host
        proc = hosts.run(wid, "--host", "h2")
        # Wait until cell 1 runs in h2's sandbox, then lose h2: its worker and its engine.
        deadline = time.monotonic() + 120
        while not os.path.exists(hosts.calls_log) or not tool_log_lines(str(hosts.calls_log)):
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read()
            time.sleep(0.2)
        lost_at = time.monotonic()
        hosts.workers["h2"].kill()
        engines["h2"].kill()
        out, err = proc.communicate(timeout=120)
        took = time.monotonic() - lost_at
        assert proc.returncode != 0, out
        for part in ('host "h2" is lost', f"{hosts.queue}@h2", "local volume", "--host h2"):
            assert part in err, err[-3000:]
        print(f"the run failed {took:.1f} s after its host was lost: {err.strip().splitlines()[-1]}")
    finally:
        if not engines["h2"].running():
            engines["h2"].start()
        hosts.close()
        for host, engine in engines.items():
            subprocess.run([BIN, "sandbox", "rm", wid, "--volume"], capture_output=True,
                           env=dict(os.environ, DOCKER_HOST=engine.host))


def shared_hosts(tmp_path, engines, cell_seconds):
    """Hosts whose workers keep sandboxes under one shared directory (standing in for the NFS
    mount every host has at the same path), with a 5 s host timeout."""
    shared = tmp_path / "shared"
    shared.mkdir()
    durable = durable_config().replace("  activities:\n", "  activities:\n    host_timeout_seconds: 5\n")
    hosts = Hosts(tmp_path, engines, durable, env={"CODEACT_SHARED_DIR": str(shared)})
    hosts.model.close()
    hosts.model = ChaosModel(cell_seconds=cell_seconds)
    return hosts, shared


def wait_for_calls(hosts, proc, n, timeout=120):
    """Waits until n cells made their host-side call (each cell makes one, early)."""
    deadline = time.monotonic() + timeout
    while len(tool_log_lines(str(hosts.calls_log))) < n:
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read()
        time.sleep(0.1)
    return time.monotonic()


def check_moved_run(hosts, engines, wid, proc, to_host):
    """The run answered right, every cell applied once (its ledger, read on the host it moved to)
    and its tool call made once, and the model was told of the move."""
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    assert json.loads(out)["output"] == ANSWER, out
    # What each cell's attempts were told, for a failure below.
    told = "\n".join(f"{m.get('tool_call_id')}: {str(m.get('content'))[:400]}"
                     for m in hosts.model.requests[-1].get("messages", []) if m.get("role") == "tool")
    p = subprocess.run([BIN, "sandbox", "exec", wid, "--json", expected_state_check()],
                       env=dict(os.environ, DOCKER_HOST=engines[to_host].host,
                                CODEACT_SHARED_DIR=hosts.workers[to_host].env["CODEACT_SHARED_DIR"]),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["result"] == expected_state(), f"{p.stdout}\n{told}\n{err[-3000:]}"
    calls = collections.Counter(tool_log_lines(str(hosts.calls_log)))
    assert sorted(calls) == sorted(f"{wid} c{n}-0" for n in range(1, CELLS + 1)), calls
    assert all(n == 1 for n in calls.values()), calls
    told = [m for body in hosts.model.requests for m in body.get("messages", [])
            if m.get("role") == "tool" and "The sandbox moved from host" in str(m.get("content"))]
    assert any(f'moved from host "h2" to host "{to_host}"' in str(m.get("content")) for m in told), \
        f"the model was not told that the sandbox moved from h2 to {to_host}: {told}"
    return err


def test_with_shared_storage_a_run_whose_host_dies_moves_to_another_and_applies_each_cell_once(
        tmp_path, engines):
    hosts, shared = shared_hosts(tmp_path, engines, cell_seconds=3)
    wid = f"move-{uuid.uuid4().hex[:6]}"
    try:
        proc = hosts.run(wid, "--host", "h2")
        # Cell 2 runs on h2 (its host-side call made, its sleep going on): h2 dies.
        wait_for_calls(hosts, proc, 2)
        lost_at = time.monotonic()
        hosts.workers["h2"].kill()
        engines["h2"].kill()
        resumed_at = wait_for_calls(hosts, proc, 3)
        err = check_moved_run(hosts, engines, wid, proc, "h1")
        print(f"host lost to the next cell running on another host: {resumed_at - lost_at:.1f} s "
              f"(host timeout 5 s)")
        assert os.path.isdir(shared / wid), "the state is not on the shared storage"
        # The placements: h2 first, then h1 (ownership epochs on the shared storage).
        owners = {n: (shared / ".owners" / wid / n).read_text().strip()
                  for n in os.listdir(shared / ".owners" / wid)}
        assert owners.get("1") == "h2" and owners.get(str(max(map(int, owners)))) == "h1", owners
    finally:
        if not engines["h2"].running():
            engines["h2"].start()
        hosts.close()
        for engine in engines.values():
            subprocess.run([BIN, "sandbox", "rm", wid, "--volume"], capture_output=True,
                           env=dict(os.environ, DOCKER_HOST=engine.host,
                                    CODEACT_SHARED_DIR=str(shared)))


def test_split_brain_a_frozen_host_that_comes_back_cannot_commit_and_its_container_goes(
        tmp_path, engines):
    hosts, shared = shared_hosts(tmp_path, engines, cell_seconds=3)
    wid = f"brain-{uuid.uuid4().hex[:6]}"
    h2 = engines["h2"]
    try:
        proc = hosts.run(wid, "--host", "h2")
        wait_for_calls(hosts, proc, 2)
        # h2 freezes mid-cell: its worker and its sandbox's processes stop (SIGSTOP, the freezer).
        hosts.workers["h2"].proc.send_signal(signal.SIGSTOP)
        assert h2.docker("pause", f"codeact-{wid}").returncode == 0
        # The run moves to h1 and finishes there while h2 is frozen.
        wait_for_calls(hosts, proc, 3)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        before = subprocess.run([BIN, "sandbox", "exec", wid, "--json", expected_state_check()],
                                env=dict(os.environ, DOCKER_HOST=engines["h1"].host,
                                         CODEACT_SHARED_DIR=str(shared)),
                                capture_output=True, text=True, timeout=120)
        assert before.returncode == 0, before.stderr
        assert json.loads(before.stdout)["result"] == expected_state(), before.stdout
        manifest = (shared / wid / wid / "state" / "manifest.json").read_bytes()
        # h2 comes back, its sandbox first: the kernel finds a newer owner and exits (76) before
        # committing the cell it was running, whose sleep ends meanwhile.
        assert h2.docker("unpause", f"codeact-{wid}").returncode == 0
        deadline = time.monotonic() + 30
        while h2.docker("container", "inspect", "-f", "{{.State.Running}}",
                        f"codeact-{wid}").stdout.strip() == "true":
            assert time.monotonic() < deadline, h2.docker("logs", f"codeact-{wid}").stderr
            time.sleep(0.2)
        state = h2.docker("container", "inspect", "-f", "{{.State.ExitCode}}", f"codeact-{wid}")
        assert state.stdout.strip() == "76", state.stdout + state.stderr
        logs = h2.docker("logs", f"codeact-{wid}")
        assert "placed on host h1" in logs.stdout + logs.stderr, logs.stderr[-2000:]
        time.sleep(4)  # had anything been committed, the manifest would have changed by now
        assert (shared / wid / wid / "state" / "manifest.json").read_bytes() == manifest
        # Then its worker: it removes the container, and leaves the state alone.
        hosts.workers["h2"].proc.send_signal(signal.SIGCONT)
        deadline = time.monotonic() + 60
        while h2.docker("container", "inspect", f"codeact-{wid}").returncode == 0:
            assert time.monotonic() < deadline, h2.docker("ps", "-a").stdout
            time.sleep(0.5)
        hosts.model.requests.clear()
        after = subprocess.run([BIN, "sandbox", "exec", wid, "--json", expected_state_check()],
                               env=dict(os.environ, DOCKER_HOST=engines["h1"].host,
                                        CODEACT_SHARED_DIR=str(shared)),
                               capture_output=True, text=True, timeout=120)
        assert json.loads(after.stdout)["result"] == expected_state(), after.stdout
        calls = collections.Counter(tool_log_lines(str(hosts.calls_log)))
        assert all(n == 1 for n in calls.values()), calls
    finally:
        if hosts.workers["h2"].proc and hosts.workers["h2"].proc.poll() is None:
            hosts.workers["h2"].proc.send_signal(signal.SIGCONT)
        h2.docker("unpause", f"codeact-{wid}")
        hosts.close()
        for engine in engines.values():
            subprocess.run([BIN, "sandbox", "rm", wid, "--volume"], capture_output=True,
                           env=dict(os.environ, DOCKER_HOST=engine.host,
                                    CODEACT_SHARED_DIR=str(shared)))
