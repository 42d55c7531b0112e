"""Processes cannot outlive what started them unnoticed or wedge the kernel (issue #17 §3, #18
§3): a fork bomb in a cell, in bash, background and setsid'd children of a script, processes a
cell leaves running (named in its reply), a subprocess the out-of-memory killer ends. The bombs
run in a pids cgroup limited like the sandbox container (conftest.pids_cgroup), the memory hogs
in a memory cgroup (conftest.memory_cgroup)."""

import os
import time

from conftest import MEMORY_LIMIT, PIDS_LIMIT, cgroup_processes


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def kernel_processes(kernel, cgroup):
    """The processes in the kernel's cgroup other than the kernel's own: its init, itself, its
    supervisor and the supervisor's per-job forks (one may still be exiting after a reply)."""
    procs = cgroup_processes(cgroup)
    helpers = {p for p in procs if parent(p) == kernel.kernel_pid and is_supervisor(p)}
    own = {kernel.proc.pid, kernel.kernel_pid} | helpers
    return [p for p in procs if p not in own and parent(p) not in helpers]


def parent(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def is_supervisor(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return b"supervisor.py\0--serve" in f.read()
    except OSError:
        return False


# --------------------------------------------------------------------------- cells

def test_fork_bomb_in_a_cell_is_killed_and_the_next_request_answered(kernel_factory, pids_cgroup):
    k = kernel_factory(cgroup=pids_cgroup)
    c = k.client(timeout=120)
    c.run("before = 1")
    t0 = time.monotonic()
    # logging (imported by matplotlib and many others) has at-fork hooks; an interrupt landing
    # in one is swallowed by Python: the timeout must still end the cell.
    r = c.run("import logging, os\nwhile True:\n    try:\n        os.fork()\n"
              "    except OSError:\n        pass", timeout=2)
    took = time.monotonic() - t0
    assert r["timed_out"] is True
    assert r["killed_processes"] > PIDS_LIMIT // 2, r
    assert r["notice"] == ("the cell's processes used up the sandbox's process limit (%d); its "
                           "%d forked processes were killed" % (PIDS_LIMIT, r["killed_processes"]))
    # Answered at once, and everything works again: cells, bash (needs a process), state.
    t1 = time.monotonic()
    assert c.run("before + 1")["result"] == "2"
    assert time.monotonic() - t1 < 5
    assert c.ok("bash", script="echo fine")["stdout"] == "fine\n"
    assert wait_for(lambda: kernel_processes(k, pids_cgroup) == []), \
        kernel_processes(k, pids_cgroup)
    print("fork bomb cell: %d processes killed, reply after %.2f s" % (r["killed_processes"], took))


def test_after_a_refused_fork_the_kernels_forks_fail_at_once(kernel_factory, pids_cgroup):
    """Once the limit refused a fork of the cell, the kernel's own os.fork() fails for the rest
    of the cell even with slots free again (what the cell forked is killed at its end anyway):
    a fork bomb's loop in the kernel ends at the first refusal, however busy the machine."""
    k = kernel_factory(cgroup=pids_cgroup)
    c = k.client(timeout=60)
    r = c.run("import os, time\nheld = []\n"
              "while True:\n    try:\n        pid = os.fork()\n    except BlockingIOError:\n"
              "        break\n    if pid == 0:\n        time.sleep(60)\n        os._exit(0)\n"
              "    held.append(pid)\n"
              "for pid in held:\n    os.kill(pid, 9)\n    os.waitpid(pid, 0)\n"
              "os.fork()")
    assert r["error"]["type"] == "BlockingIOError", r
    assert r["error"]["message"] == ("[Errno 11] Resource temporarily unavailable (the sandbox's "
                                     "process limit was reached during this cell)"), r
    # The next cell forks again.
    r = c.run("pid = os.fork()\nif pid == 0:\n    os._exit(0)\nos.waitpid(pid, 0)[1]")
    assert r["result"] == "0", r


def pids_current(cgroup):
    """Tasks charged to the cgroup: threads, and zombies until they are reaped."""
    with open(os.path.join(cgroup, "pids.current")) as f:
        return int(f.read())


def test_fork_bomb_clones_leave_no_zombie_holding_a_process_slot(kernel_factory, pids_cgroup):
    """Most clones of `while True: os.fork()` end by themselves (their first refused fork raises
    in the clone, which leaves); those that are the kernel's own children must be reaped, or each
    keeps one of the sandbox's 256 slots until the container stops. Two bombs: the second gets
    the whole limit again."""
    k = kernel_factory(cgroup=pids_cgroup)
    c = k.client(timeout=120)
    idle = pids_current(pids_cgroup)
    for _ in range(2):
        r = c.run("import os\nwhile True:\n    os.fork()", timeout=10)
        assert r["error"]["type"] == "BlockingIOError", r
        assert "used up the sandbox's process limit" in r["notice"], r
        assert wait_for(lambda: pids_current(pids_cgroup) <= idle, 5), \
            (pids_current(pids_cgroup), idle, zombies_of(k.kernel_pid))
    assert zombies_of(k.kernel_pid) == []


def zombies_of(pid):
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] == "Z" and int(fields[1]) == pid:
                out.append(int(name))
    return out


def test_plain_fork_bomb_ends_with_the_limit_and_leaves_nothing(kernel_factory, pids_cgroup):
    """`while True: os.fork()` (issue #17): every clone ends on its first refused fork; the
    kernel's own refused fork ends the cell; whatever still runs is killed."""
    k = kernel_factory(cgroup=pids_cgroup)
    c = k.client(timeout=120)
    r = c.run("import os\nwhile True:\n    os.fork()", timeout=10)
    assert r["status"] == "error" and r["error"]["type"] == "BlockingIOError", r
    assert r["timed_out"] is False
    # Only the kernel answered (no clone wrote a frame: the client checks every frame's id and
    # keeps events) and only it committed (a clone would commit this cell's number too).
    assert c.events == []
    assert c.run("1 + 1")["result"] == "2" and c.events == []
    assert c.ok("hello")["cell"] == 2
    assert [cp["cell"] for cp in c.ok("checkpoints")["checkpoints"]] == [1, 2]
    assert wait_for(lambda: kernel_processes(k, pids_cgroup) == []), \
        kernel_processes(k, pids_cgroup)


def test_a_clone_returning_from_its_cell_never_commits_or_replies(kernel, client):
    r = client.run("import os\npid = os.fork()\nx = 'clone' if pid == 0 else 'kernel'\n"
                   "if pid:\n    os.waitpid(pid, 0)\nx")
    assert r["result"] == "'kernel'"
    assert client.events == []
    kernel.restart()
    assert kernel.client().ok("get", name="x")["value"] == "kernel"


def test_clones_lose_the_kernel_socket(kernel, client):
    """A forked child that lives on holds none of the kernel's descriptors: once the kernel
    dies, nothing answers on its socket."""
    r = client.run("import os, time\npid = os.fork()\nif pid == 0:\n    time.sleep(30)\n"
                   "    os._exit(0)\npid")
    clone = int(r["result"])

    def comm():
        with open("/proc/%d/comm" % clone) as f:
            return f.read().strip()
    try:
        # The hook names the clone after closing the descriptors (it runs once the clone is
        # scheduled, which may be after the reply).
        assert wait_for(lambda: comm() == "clone-%d" % kernel.kernel_pid, 5), comm()
        fds = os.listdir("/proc/%d/fd" % clone)
        targets = {os.readlink("/proc/%d/fd/%s" % (clone, fd)) for fd in fds}
        assert not any(t.startswith(("socket:", "anon_inode:[eventpoll]")) for t in targets), \
            targets
    finally:
        os.kill(clone, 9)


def test_processes_left_by_a_cell_under_the_limit_are_not_touched(kernel_factory, pids_cgroup):
    """Only a cell that hit the limit gets its processes killed (a model may start a server on
    purpose); the reply names them."""
    k = kernel_factory(cgroup=pids_cgroup)
    c = k.client()
    r = c.run("import subprocess\np = subprocess.Popen(['sleep', '30'])\np.pid")
    pid = int(r["result"])
    assert "killed_processes" not in r
    assert r["left_running"] == [{"pid": pid, "command": "sleep 30"}], r
    assert alive(pid)
    c.run("p.kill(); p.wait()")


def test_processes_a_cell_leaves_running_are_named_in_its_reply(kernel, client):
    r = client.run("import subprocess\n"
                   "server = subprocess.Popen(['sleep', '1003'], start_new_session=True)\n"
                   "server.pid")
    pid = int(r["result"])
    try:
        assert r["status"] == "ok" and alive(pid)
        assert r["left_running"] == [{"pid": pid, "command": "sleep 1003"}], r
        assert r["notice"] == ("the cell left 1 process running: pid %d (sleep 1003); it keeps "
                               "running until it ends or is killed (os.kill(%d, signal.SIGKILL))"
                               % (pid, pid))
        # Said once: the next cell did not start it.
        r = client.run("1 + 1")
        assert "left_running" not in r and "notice" not in r, r
    finally:
        client.run("server.kill(); server.wait()")


def test_several_processes_left_running_are_listed_forks_by_what_they_are(kernel, client):
    r = client.run("import os, subprocess, time\n"
                   "procs = [subprocess.Popen(['sleep', str(2000 + i)]) for i in range(6)]\n"
                   "fork = os.fork()\n"
                   "if fork == 0:\n    time.sleep(60)\n    os._exit(0)\n"
                   "[p.pid for p in procs] + [fork]")
    pids = eval(r["result"])
    try:
        assert [p["pid"] for p in r["left_running"]] == pids, r
        assert r["left_running"][-1]["command"] == "a fork of the kernel"
        assert r["notice"].startswith(
            "the cell left 7 processes running: pid %d (sleep 2000), pid %d (sleep 2001), "
            % tuple(pids[:2])), r["notice"]
        assert r["notice"].endswith(
            ", 2 more; they keep running until they end or are killed "
            "(os.kill(pid, signal.SIGKILL))"), r["notice"]
    finally:
        client.run("for p in procs:\n    p.kill()\n    p.wait()\n"
                   "os.kill(fork, 9)\nos.waitpid(fork, 0)")


def test_processes_that_end_with_the_cell_are_not_mentioned(client):
    r = client.run("import subprocess\nsubprocess.run(['true'])\n"
                   "p = subprocess.Popen(['sleep', '0.1'])\np.wait()\n"
                   "q = subprocess.Popen(['true'])\nimport time\ntime.sleep(0.2)")
    assert r["status"] == "ok", r
    # q exited but was not waited for: a zombie does not run.
    assert "left_running" not in r and "notice" not in r, r


# --------------------------------------------------------------------------- bash

def test_bash_fork_bomb_with_timeout_leaves_no_process(kernel_factory, pids_cgroup):
    k = kernel_factory(cgroup=pids_cgroup)
    c = k.client(timeout=120)
    t0 = time.monotonic()
    r = c.ok("bash", script="bomb() { bomb | bomb & }; bomb; sleep 100", timeout=3)
    took = time.monotonic() - t0
    assert r["timed_out"] is True and r["exit_code"] == 128 + 9
    assert r["killed_processes"] > 10, r
    assert kernel_processes(k, pids_cgroup) == []
    assert c.ok("bash", script="echo next")["stdout"] == "next\n"
    print("bash fork bomb: %d processes killed, reply after %.2f s" % (r["killed_processes"], took))


def test_background_and_setsid_children_end_with_the_script(client):
    r = client.ok("bash", script="setsid sleep 1000 & echo $!\n"
                                 "(sleep 1000 &) ; sleep 0.2; pgrep -f '^sleep 1000$' | sort")
    assert r["exit_code"] == 0
    pids = {int(p) for p in r["stdout"].split()}
    assert len(pids) == 2, r
    assert r["killed_processes"] == 2
    for pid in pids:
        assert not alive(pid), pid


def test_a_script_without_leftovers_reports_no_kills(client):
    r = client.ok("bash", script="sleep 0.1 & wait; echo done")
    assert r["stdout"] == "done\n" and "killed_processes" not in r


def test_bash_without_free_process_slots_says_so(kernel_factory, pids_cgroup):
    k = kernel_factory(cgroup=pids_cgroup)
    c = k.client(timeout=60)
    # A thread of the cell fills the process table after the cell has ended, while no cell
    # runs (a cell would clean up after it).
    c.run("import os, threading, time\nheld = []\n"
          "def fill():\n    time.sleep(0.3)\n    while True:\n        try:\n"
          "            pid = os.fork()\n        except OSError:\n            break\n"
          "        if pid == 0:\n            time.sleep(60)\n            os._exit(0)\n"
          "        held.append(pid)\n    open('full', 'w').close()\n"
          "threading.Thread(target=fill).start()")
    assert wait_for(lambda: os.path.exists(os.path.join(k.output, "full")), 30)
    r = c.request("bash", script="echo hi")
    assert r["ok"] is False and r["error"]["type"] == "ResourceExhausted", r
    assert "no free process slots in the sandbox (pids limit)" in r["error"]["message"]
    c.run("for p in held:\n    os.kill(p, 9)\n    os.waitpid(p, 0)", persist=False)
    assert c.ok("bash", script="echo again")["stdout"] == "again\n"


# --------------------------------------------------------------------------- memory

def test_a_subprocess_killed_for_memory_is_reported(kernel_factory, memory_cgroup):
    """The out-of-memory killer ends the cell's subprocess, not the kernel; all the cell sees is
    returncode -9, so the reply says the sandbox ran out of memory."""
    k = kernel_factory(cgroup=memory_cgroup)
    c = k.client(timeout=120)
    c.run("kept = 'before'")
    r = c.run("import subprocess, sys\n"
              "subprocess.run([sys.executable, '-c', 'x = b\"x\" * (1 << 30)']).returncode")
    assert r["status"] == "ok" and r["result"] == "-9", r
    assert r["oom_kills"] == 1, r
    assert r["notice"] == (
        "the sandbox ran out of memory: its limit (%d MiB) was reached and the system killed 1 "
        "of its processes (a killed subprocess shows returncode -9, a shell exit status 137); "
        "the kernel and its variables are intact" % (MEMORY_LIMIT >> 20)), r
    # Said once, and the kernel is as it was.
    r = c.run("kept")
    assert r["result"] == "'before'" and "notice" not in r, r


def test_a_script_whose_process_is_killed_for_memory_is_told_so(kernel_factory, memory_cgroup):
    """A shell sees exit status 137, as for any SIGKILL: the reply says it was memory."""
    k = kernel_factory(cgroup=memory_cgroup)
    c = k.client(timeout=120)
    r = c.ok("bash", script="python3 -c 'x = b\"x\" * (1 << 30)'; echo $?")
    assert r["stdout"] == "137\n" and r["exit_code"] == 0, r
    assert r["oom_kills"] == 1, r
    assert r["notice"].startswith("the sandbox ran out of memory: its limit (%d MiB) was reached"
                                  % (MEMORY_LIMIT >> 20)), r
    assert "notice" not in c.ok("bash", script="true")
