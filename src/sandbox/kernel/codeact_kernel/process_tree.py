"""Processes as /proc shows them, and killing a set of them that keeps forking.

freeze_and_kill() stops every process find() returns (SIGSTOP), looks again until no new one
appears (a stopped process cannot fork; a fork racing the stop shows up in the next look), then
kills them all (SIGKILL) and starts over until find() returns none: a fork bomb cannot outrun it.

Standard library only and no relative imports: the supervisor imports it with `python3 -I -S`."""

import os
import signal
import time

_CLK_TCK = os.sysconf("SC_CLK_TCK")


class Proc:
    __slots__ = ("pid", "ppid", "pgrp", "comm", "state", "start")

    def __init__(self, pid, ppid, pgrp, comm, state, start):
        self.pid, self.ppid, self.pgrp = pid, ppid, pgrp
        self.comm, self.state, self.start = comm, state, start

    @property
    def alive(self):
        return self.state not in ("Z", "X")


def _read(path):
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def stat(pid):
    """The Proc of pid, or None when it is gone."""
    try:
        data = _read("/proc/%d/stat" % pid)
    except OSError:
        return None
    right = data.rfind(b")")
    comm = data[data.find(b"(") + 1:right].decode("utf-8", "replace")
    fields = data[right + 2:].split()
    return Proc(pid, int(fields[1]), int(fields[2]), comm, fields[0].decode(), int(fields[19]))


def cmdline(pid):
    """pid's command line, arguments joined with spaces ("" for a zombie or when it is gone)."""
    try:
        fd = os.open("/proc/%d/cmdline" % pid, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        data = os.read(fd, 4096)
    except OSError:
        return ""
    finally:
        os.close(fd)
    return data.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")


def all_processes(on_each=None):
    """{pid: Proc} of every process this /proc shows; on_each(proc) is called as each is read
    (to stop a forking process at once rather than after the whole scan)."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            p = stat(int(name))
            if p is not None:
                out[p.pid] = p
                if on_each is not None:
                    on_each(p)
    return out


def boot_ticks():
    """Now, in the unit of Proc.start (clock ticks since boot)."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * _CLK_TCK)


_children_files = None  # whether /proc/<pid>/task/<tid>/children exists (CONFIG_PROC_CHILDREN)


def descendants(root):
    """Pids of root's living descendants."""
    global _children_files
    if _children_files is None:
        _children_files = os.path.exists("/proc/self/task/%d/children" % os.getpid())
    if not _children_files:
        procs = all_processes()
        return {p for p in subtree(procs, [root]) if p != root and procs[p].alive}
    out = set()
    stack = [root]
    while stack:
        pid = stack.pop()
        try:
            tids = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for tid in tids:
            try:
                children = _read("/proc/%d/task/%s/children" % (pid, tid)).split()
            except OSError:
                continue
            for c in children:
                c = int(c)
                if c not in out:
                    out.add(c)
                    stack.append(c)
    return {pid for pid in out if (stat(pid) or Proc(pid, 0, 0, "", "X", 0)).alive}


def subtree(procs, roots):
    """roots plus every descendant of them in procs ({pid: Proc})."""
    children = {}
    for p in procs.values():
        children.setdefault(p.ppid, []).append(p.pid)
    out = set()
    stack = list(roots)
    while stack:
        pid = stack.pop()
        if pid in out:
            continue
        out.add(pid)
        stack.extend(children.get(pid, ()))
    return out


def stop(pid):
    try:
        os.kill(pid, signal.SIGSTOP)
    except OSError:
        pass


def _signal(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def freeze_and_kill(find, reap=None, budget_s=30.0):
    """Kills every process find() returns, and every one they fork meanwhile, until find()
    returns none (or budget_s passed). reap() is called after each round. Returns the pids
    killed."""
    killed = set()
    deadline = time.monotonic() + budget_s
    while time.monotonic() < deadline:
        live = set(find())
        if not live:
            break
        if live <= killed:  # killed already, still exiting
            if reap is not None:
                reap()
            time.sleep(0.002)
            continue
        stopped = set()
        while live - stopped and time.monotonic() < deadline:
            _signal(live - stopped, signal.SIGSTOP)
            stopped |= live
            live = set(find())
        _signal(stopped, signal.SIGKILL)
        killed |= stopped
        if reap is not None:
            reap()
    return killed
