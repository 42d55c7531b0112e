"""Sandboxes pinned to their host (issue #13): with three hosts (three Docker engines, a worker
on each) behind one Temporal, every activity of a run that touches its sandbox runs on the host
that started it; a run whose host is lost fails saying why instead of hanging, or, with shared
storage, moves to one of the live hosts and applies each cell once.

What a user notices: every run answers right with its sandbox's state intact (each cell applied
once, on one engine); the live view says where the sandbox is; the run's history shows which
worker ran what (worker identities name their host); a lost host is an error that names it, or a
move the model is told of.
"""
import collections
import json
import os
import signal
import subprocess
import time
import uuid

from chaos_model import ANSWER, CELLS, expected_state, expected_state_check, tool_log_lines
from conftest import BIN
from hosts_harness import (TEMPORAL, Hosts, activity_hosts, placements, shared_durable,  # noqa: F401
                           volume_host, wait_for_calls)


def test_each_runs_sandbox_work_runs_on_the_host_that_started_it(tmp_path, engines):
    hosts = Hosts(tmp_path, engines)
    runs = []
    try:
        tag = uuid.uuid4().hex[:6]
        # Six runs at once over the three hosts: two pinned to h1 (two sandboxes on one host),
        # one to h2, one to h3 (--host), two placed wherever their start lands.
        plan = [("h1", ["--host", "h1"]), ("h1", ["--host", "h1"]), ("h2", ["--host", "h2"]),
                ("h3", ["--host", "h3"]), (None, []), (None, [])]
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
        assert set(placed) == {"h1", "h2", "h3"}, placed
        # Every cell's host-side tool call was made once.
        calls = collections.Counter(tool_log_lines(str(hosts.calls_log)))
        assert {line: n for line, n in calls.items() if n > 1} == {}
        assert len(calls) == len(runs) * CELLS
    finally:
        hosts.close()
        for wid, _, _ in runs:
            hosts.remove(wid)


def test_a_run_whose_host_is_lost_fails_naming_it_and_nothing_hangs(tmp_path, engines):
    # Short heartbeats (a dead worker is noticed in 2 s) and a 5 s host timeout.
    # Each cell runs long enough to lose its host.
    hosts = Hosts(tmp_path, engines, shared_durable(host_timeout=5), cell_seconds=30)
    wid = f"lost-{uuid.uuid4().hex[:6]}"
    try:
        proc = hosts.run(wid, "--host", "h2")
        # Wait until cell 1 runs in h2's sandbox, then lose h2: its worker and its engine.
        deadline = time.monotonic() + 120
        while not os.path.exists(hosts.calls_log) or not tool_log_lines(str(hosts.calls_log)):
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read()
            time.sleep(0.2)
        lost_at = time.monotonic()
        hosts.lose("h2")
        out, err = proc.communicate(timeout=120)
        took = time.monotonic() - lost_at
        assert proc.returncode != 0, out
        for part in ('host "h2" is lost', f"{hosts.queue}@h2", "local volume", "--host h2"):
            assert part in err, err[-3000:]
        # Two hosts were live all along: the run did not start its sandbox on either.
        assert volume_host({h: engines[h] for h in ("h1", "h3")}, wid) == []
        print(f"the run failed {took:.1f} s after its host was lost: {err.strip().splitlines()[-1]}")
    finally:
        if not engines["h2"].running():
            engines["h2"].start()
        hosts.close()
        hosts.remove(wid)


def shared_hosts(tmp_path, engines, cell_seconds):
    """Hosts whose workers keep sandboxes under one shared directory (standing in for the NFS
    mount every host has at the same path), with a 5 s host timeout."""
    shared = tmp_path / "shared"
    shared.mkdir()
    hosts = Hosts(tmp_path, engines, shared_durable(host_timeout=5),
                  env={"CODEACT_SHARED_DIR": str(shared)}, cell_seconds=cell_seconds)
    return hosts, shared


def moved_to(shared, wid):
    """The host of the sandbox's last placement: where it moved. It first went to h2, and then
    to one of the two hosts that were live."""
    owners = placements(shared, wid)
    assert owners.get(1) == "h2", owners
    to_host = owners[max(owners)]
    assert to_host in ("h1", "h3"), owners
    return to_host


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
        hosts.lose("h2")
        resumed_at = wait_for_calls(hosts, proc, 3)
        # The placements (ownership epochs on the shared storage): h2 first, then h1 or h3.
        to_host = moved_to(shared, wid)
        check_moved_run(hosts, engines, wid, proc, to_host)
        print(f"host lost to the next cell running on another host ({to_host}): "
              f"{resumed_at - lost_at:.1f} s (host timeout 5 s)")
        assert os.path.isdir(shared / wid), "the state is not on the shared storage"
        # From the move's start on, every activity went to the new host's queue and ran there.
        ran = activity_hosts(hosts.history(wid))
        starts = [i for i, (name, *_) in enumerate(ran) if name == "codeact.sandbox_start"]
        assert len(starts) >= 2, ran
        assert ran[starts[-1]][2] == to_host, ran
        after = {(queue, ran_on) for _, queue, ran_on, _ in ran[starts[-1] + 1:]}
        assert after == {(f"{hosts.queue}@{to_host}", to_host)}, ran
        hosts.save_history(wid, "task_moved_host.json")
    finally:
        if not engines["h2"].running():
            engines["h2"].start()
        hosts.close()
        hosts.remove(wid, shared)


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
        # The run moves to h1 or h3 and finishes there while h2 is frozen.
        wait_for_calls(hosts, proc, 3)
        to_host = moved_to(shared, wid)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        before = subprocess.run([BIN, "sandbox", "exec", wid, "--json", expected_state_check()],
                                env=dict(os.environ, DOCKER_HOST=engines[to_host].host,
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
        assert f"placed on host {to_host}" in logs.stdout + logs.stderr, logs.stderr[-2000:]
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
                               env=dict(os.environ, DOCKER_HOST=engines[to_host].host,
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
        hosts.remove(wid, shared)
