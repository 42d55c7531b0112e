"""Forks of the kernel process ("clones": os.fork() in a cell, a fork bomb, multiprocessing).

A clone shares nothing with the kernel but the memory image it was copied from. The at-fork hook
closes the kernel's descriptors in it (listening socket, connections, pipes: a clone that lives on
must not keep the socket reachable or read the kernel's input) and marks it: its process name
becomes "clone-<kernel pid>" and IS_CLONE is set, so that a clone whose cell code ends and
returns into kernel code leaves at once (leave_if_clone) instead of committing a snapshot or
writing a frame. When a cell used up the sandbox's process limit, cleanup() kills the processes
the cell left behind (clones, and what they and the cell started), reported in the reply; when
it did not, left_running() names the same set, so the reply tells the model what still runs."""

import errno
import os
import signal

from . import cgroups, process_tree
from .descriptors import move_high

IS_CLONE = False
_fd_sources = []  # callables returning descriptors a clone closes
_marker = b"clone"
_kernel_pid = None
_clone_group = None  # callable: the process group clones join (not the kernel's), or None


def install(fd_sources, clone_group):
    """Call once in the kernel process. fd_sources: callables returning the kernel's own fds.
    clone_group(): the id of a process group in the kernel's session that the kernel is not in
    (the supervisor's), or None: clones join it, so that one killpg stops them all at once."""
    global _marker, _kernel_pid, _clone_group
    _kernel_pid = os.getpid()
    _marker = ("clone-%d" % _kernel_pid).encode()
    _fd_sources.extend(fd_sources)
    _clone_group = clone_group
    os.register_at_fork(after_in_child=_after_in_child)
    os.fork = _fork


def marker():
    return _marker.decode()


# An interrupt of the running cell (its timeout) is raised by the SIGINT handler at the next
# bytecode, which in a fork loop is most often inside an at-fork hook (logging registers
# some), where Python swallows exceptions: the cell would never end. So the interrupt also
# sticks here, and os.fork() raises it before forking, in the cell's own frame.
_interrupting = False
_real_fork = os.fork


def interrupting(on):
    """Set while the running cell is being interrupted; cleared when it ends."""
    global _interrupting
    _interrupting = on


# A fork bomb's clones die at their first refused fork and free their slots, so the kernel's own
# os.fork() in the bomb's loop may go on succeeding for a long time on a busy machine (until its
# unreaped children fill the table). Once the limit refused any fork of the cell, everything the
# cell forked is killed when it ends anyway: the kernel's next os.fork() fails at once instead.
_limit_reached = None  # callable while a cell runs: whether its forks hit the process limit


def watch_limit(reached):
    """Called by the kernel around a cell: reached() says whether the sandbox's process limit
    refused a fork since the cell started (None between cells)."""
    global _limit_reached
    _limit_reached = reached


def _fork():
    if _interrupting:
        raise KeyboardInterrupt
    if _limit_reached is not None and not IS_CLONE and _limit_reached():
        raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable (the sandbox's "
                              "process limit was reached during this cell)")
    return _real_fork()


_fork.__doc__ = _real_fork.__doc__
_fork.__name__ = _fork.__qualname__ = "fork"
_fork.__module__ = "os"


def _after_in_child():
    global IS_CLONE
    if IS_CLONE:  # a clone's clone: the descriptors are closed already, the group joined
        return
    IS_CLONE = True
    for source in _fd_sources:
        try:
            fds = list(source())
        except Exception:
            continue
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
    try:
        fd = os.open("/proc/self/comm", os.O_WRONLY)
        try:
            os.write(fd, _marker)
        finally:
            os.close(fd)
    except OSError:
        pass
    try:  # named first: the group's members without the name are continued after a stop
        group = _clone_group() if _clone_group is not None else None
        if group:
            os.setpgid(0, group)
    except Exception:
        pass


def leave_if_clone():
    """In a clone, exits at once (status 0); in the kernel, does nothing."""
    if IS_CLONE:
        os._exit(0)


class PidsLimit:
    """The sandbox's process limit as the pids cgroup shows it (v1 or v2): the limit and the
    count of forks refused for hitting it. Unavailable (None) where no pids cgroup is visible."""

    def __init__(self):
        self.events_fd = None
        self.limit = None
        for d in cgroups.controller_dirs("pids"):
            try:
                fd = os.open(os.path.join(d, "pids.events"), os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            self.events_fd = move_high(fd)
            try:
                with open(os.path.join(d, "pids.max")) as f:
                    text = f.read().strip()
                self.limit = int(text) if text.isdigit() else None
            except OSError:
                pass
            break

    def refused(self):
        """How many forks the limit refused so far (the "max" counter), or None."""
        if self.events_fd is None:
            return None
        try:
            data = os.pread(self.events_fd, 256, 0)
        except OSError:
            return None
        return cgroups.read_counter(data, b"max")

    def fds(self):
        return [] if self.events_fd is None else [self.events_fd]


class ProcessLimit:
    """What cells need about the sandbox's process limit: whether a cell's forks hit it, and
    the clean-up then. init_pid: an init of ours that inherits orphans (or None); spare(): pids
    whose trees are the kernel's own (its supervisor). freeze() is safe on any thread."""

    def __init__(self, init_pid, spare):
        self.pids = PidsLimit()
        self.init_pid = init_pid
        self.spare = spare

    @property
    def limit(self):
        return self.pids.limit

    def refused(self):
        return self.pids.refused()

    def fds(self):
        return self.pids.fds()

    def freeze(self):
        """Stops every clone at once (they are killed or continued later): two system calls,
        no scan (the thread calling it may be fighting a forking main thread for the GIL)."""
        group = _clone_group() if _clone_group is not None else None
        if group:
            try:
                os.killpg(group, signal.SIGSTOP)
                os.kill(group, signal.SIGCONT)  # its leader is the supervisor
            except OSError:
                pass

    def clean_up(self, since):
        """Kills what a cell left running since `since`; returns how many processes."""
        return cleanup(since, self.init_pid, self.spare())

    def left_running(self, since):
        """[(pid, command line)] of what a cell that ran since `since` left running."""
        return left_running(since, self.init_pid, self.spare())


def cleanup(since, init_pid=None, spare=()):
    """Kills what a cell that hit the process limit left running: clones of this kernel born
    since `since` (boot ticks), and every process born since then under the kernel (or under
    init_pid, an init of ours that inherits orphans), except the pids in `spare` and their
    descendants (the kernel's own helpers). Reaps the kernel's own children among them.
    Returns how many processes were killed."""
    me = os.getpid()
    _stop_clone_group(spare)
    roots = [me] + ([init_pid] if init_pid else [])
    marker = _marker.decode()
    direct = set()

    def stop_clone(p):
        # A clone of this kernel born in the cell: stopped at once, so that a fork bomb yields
        # the CPU it takes from this scan (the full criteria follow once the scan is done).
        if p.comm == marker and p.start >= since and p.alive:
            process_tree.stop(p.pid)

    def find():
        procs = process_tree.all_processes(stop_clone)
        found = _born_since(procs, since, roots, spare, marker)
        direct.update(pid for pid in found if procs[pid].ppid == me)
        return found

    def reap():
        for pid in list(direct):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                direct.discard(pid)

    killed = process_tree.freeze_and_kill(find, reap)
    for pid in list(direct):  # killed: they die at once
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    _reap_dead_clones(me, marker, since)
    return len(killed)


def _born_since(procs, since, roots, spare, marker):
    """The living processes in procs ({pid: Proc}) that a cell running since `since` (boot
    ticks) started: those born since then below the roots (the kernel, its init) and clones of
    this kernel born since then, with everything below them; never the roots, nor the pids in
    `spare` and their descendants (the kernel's own helpers)."""
    spared = process_tree.subtree(procs, [p for p in spare if p in procs])
    spared.update(roots)
    found = set()
    for pid in process_tree.subtree(procs, roots) - spared:
        p = procs[pid]
        if p.alive and p.start >= since:
            found.add(pid)
    for p in procs.values():
        if p.comm == marker and p.alive and p.start >= since and p.pid not in spared:
            found.add(p.pid)
    found = process_tree.subtree(procs, found) - spared
    return {pid for pid in found if procs[pid].alive}


def left_running(since, init_pid=None, spare=()):
    """[(pid, command line)] of the processes a cell running since `since` started and left
    running (the same ones cleanup() would kill), oldest first. A fork of the kernel that did
    not exec shows as "a fork of the kernel"."""
    me = os.getpid()
    procs = process_tree.all_processes()
    roots = [me] + ([init_pid] if init_pid else [])
    found = _born_since(procs, since, roots, spare, _marker.decode())
    own = process_tree.cmdline(me)
    out = []
    for pid in sorted(found, key=lambda pid: (procs[pid].start, pid)):
        command = process_tree.cmdline(pid)
        if procs[pid].comm == _marker.decode() or (command and command == own):
            command = "a fork of the kernel"
        out.append((pid, command or "[%s]" % procs[pid].comm))
    return out


LISTED_PROCESSES = 5
COMMAND_CHARS = 100


def left_running_text(processes):
    """The notice for processes a cell left running ([(pid, command line)], not empty)."""
    shown = []
    for pid, command in processes[:LISTED_PROCESSES]:
        if len(command) > COMMAND_CHARS:
            command = command[:COMMAND_CHARS - 3] + "..."
        shown.append("pid %d (%s)" % (pid, command))
    more = len(processes) - len(shown)
    if more:
        shown.append("%d more" % more)
    one = len(processes) == 1
    return ("the cell left %d process%s running: %s; %s until %s or %s killed "
            "(os.kill(%s, signal.SIGKILL))"
            % (len(processes), "" if one else "es", ", ".join(shown),
               "it keeps running" if one else "they keep running",
               "it ends" if one else "they end", "is" if one else "are",
               processes[0][0] if one else "pid"))


def _reap_dead_clones(me, marker, since):
    """Reaps the kernel's own clones of this cell that ended by themselves (a refused fork ends
    a clone of a fork bomb) before they could be killed: nobody waits for them, and each zombie
    would hold one of the sandbox's process slots until the container stops."""
    for p in process_tree.all_processes().values():
        if p.ppid == me and p.comm == marker and not p.alive and p.start >= since:
            try:
                os.waitpid(p.pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _stop_clone_group(spare):
    """Stops every clone at once (one killpg of the group they joined), so that a fork bomb
    gives the CPU back before the scan for them starts; the group's other members (the
    supervisor, a job's supervisor not yet in its own group) are continued."""
    group = _clone_group() if _clone_group is not None else None
    if not group:
        return
    try:
        os.killpg(group, signal.SIGSTOP)
    except OSError:
        return
    marker = _marker.decode()
    for p in process_tree.all_processes().values():
        if p.pgrp == group and p.comm != marker:
            try:
                os.kill(p.pid, signal.SIGCONT)
            except OSError:
                pass


def hit_limit_text(limit, killed):
    return ("the cell's processes used up the sandbox's process limit%s; %s" % (
        " (%d)" % limit if limit else "",
        "its %d forked processes were killed" % killed if killed
        else "none of its forked processes was left running"))


