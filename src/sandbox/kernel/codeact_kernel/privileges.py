"""Start-up as root (the container runs the kernel as uid 0 with only CAP_SETUID, CAP_SETGID and
CAP_SETPCAP, no-new-privileges and no docker init), so that:
  - the listening socket is created by the owner of its directory (the host user, e.g. root),
    in a directory the sandbox user cannot write: sandbox code can neither replace nor redirect
    it (issue #17 §1);
  - pid 1 is a minimal init of ours that forwards SIGTERM/SIGINT/SIGHUP/SIGQUIT to the kernel,
    reaps orphans and exits with the kernel's status (exit code, or 128 + signal);
  - then both processes become uid/gid 1000 for good (real, effective and saved ids, no
    supplementary groups, no capabilities, an empty bounding set: CAP_SETPCAP is there only to
    empty it, so that not even a setuid-root binary could give a capability back), checked,
    before any user-controlled code (the restore unpickles) runs.
Started as another user, the kernel skips all this and just binds the socket itself."""

import errno
import os
import signal

from .prctl import (PR_CAPBSET_DROP, PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE, PR_SET_PDEATHSIG,
                    prctl)

SANDBOX_UID = 1000
SANDBOX_GID = 1000
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
EXIT_LOST_SOCKET = 75  # EX_TEMPFAIL: the kernel lost its socket, restart from the snapshot
EXIT_FENCED = 76  # another host owns the sandbox now (ownership.py)
EXIT_EXPLAINED = {
    EXIT_LOST_SOCKET: ": a cell closed the kernel's socket (its file descriptors); restart the "
                      "sandbox from its snapshot",
    EXIT_FENCED: ": the sandbox was placed on another host; this container must not run it",
    137: " (killed: SIGKILL, out of memory?)",
}


class StartupError(Exception):
    pass


def start_as_root(socket_path, bind):
    """Runs as uid 0. bind(path) makes the listening socket. Returns it in the kernel process,
    which runs as SANDBOX_UID from then on; the calling process becomes init and never returns.
    Raises StartupError (nothing forked yet) when the socket cannot be made."""
    directory = os.path.dirname(socket_path) or "."
    try:
        st = os.stat(directory)
    except OSError as e:
        raise StartupError("the socket directory %s is not there: %s" % (directory, e.strerror))
    try:
        if st.st_gid != 0:
            os.setegid(st.st_gid)
        if st.st_uid != 0:
            os.seteuid(st.st_uid)
    except OSError as e:
        raise StartupError(
            "cannot act as %d:%d, the owner of %s, to create the socket there: %s (the container "
            "needs CAP_SETUID and CAP_SETGID)" % (st.st_uid, st.st_gid, directory, e.strerror))
    try:
        listener = bind(socket_path)
    finally:
        os.seteuid(0)
        os.setegid(0)
    init_pid = os.getpid()
    kernel_pid = os.fork()
    if kernel_pid == 0:
        _become_kernel(init_pid)
        return listener
    listener.close()
    _run_init(kernel_pid)


def _become_kernel(init_pid):
    try:
        drop_to(SANDBOX_UID, SANDBOX_GID)
        prctl(PR_SET_DUMPABLE, 1)  # /proc/self stays the kernel's own (owned by uid 1000)
        # Set after the drop, which clears it: the kernel dies with init (pid 1 in a container
        # takes everything with it anyway; on a host, a kernel must not outlive its init).
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (StartupError, OSError) as e:
        _fail("codeact-kernel: %s" % e)
    if os.getppid() != init_pid:
        os._exit(1)


def _run_init(kernel_pid):
    try:
        prctl(PR_SET_CHILD_SUBREAPER, 1)  # pid 1 in a container is one already; on a host not
    except OSError:
        pass
    try:
        drop_to(SANDBOX_UID, SANDBOX_GID)
        prctl(PR_SET_DUMPABLE, 0)  # cells (uid 1000 too) cannot ptrace init or read its /proc
    except (StartupError, OSError) as e:
        try:
            os.kill(kernel_pid, signal.SIGKILL)
        except OSError:
            pass
        _fail("codeact-kernel init: %s" % e)

    def forward(signum, frame):
        try:
            os.kill(kernel_pid, signum)
        except OSError:
            pass

    for s in FORWARDED_SIGNALS:
        signal.signal(s, forward)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(0)
        if pid == kernel_pid:
            code = os.waitstatus_to_exitcode(status)
            code = code if code >= 0 else 128 - code
            if code:  # the kernel's own log may be gone with its descriptors
                _say("codeact-kernel init: the kernel (pid %d) exited with status %d%s"
                     % (kernel_pid, code, EXIT_EXPLAINED.get(code, "")))
            os._exit(code)


def drop_to(uid, gid):
    """Becomes uid/gid for good and checks it: real, effective and saved ids, no supplementary
    groups, no effective, permitted, ambient or inheritable capabilities, an empty bounding set.
    Raises StartupError otherwise."""
    drop_bounding_set()
    try:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    except OSError as e:
        raise StartupError("could not drop privileges to uid %d, gid %d: %s" % (uid, gid, e))
    problems = []
    if os.getresuid() != (uid, uid, uid):
        problems.append("uids are %s" % (os.getresuid(),))
    if os.getresgid() != (gid, gid, gid):
        problems.append("gids are %s" % (os.getresgid(),))
    if os.getgroups():
        problems.append("supplementary groups %s" % os.getgroups())
    caps = capabilities()
    for name in ("CapEff", "CapPrm", "CapAmb", "CapInh", "CapBnd"):
        if caps.get(name, 0):
            problems.append("%s is %x" % (name, caps[name]))
    if problems:
        raise StartupError("privileges not dropped to uid %d, gid %d: %s"
                           % (uid, gid, "; ".join(problems)))


def drop_bounding_set():
    """Empties the capability bounding set (needs CAP_SETPCAP). Raises StartupError when a
    capability stays in it."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):
        try:
            prctl(PR_CAPBSET_DROP, cap)
        except OSError as e:
            if e.errno == errno.EINVAL:  # not a capability of this kernel
                continue
            raise StartupError("cannot drop capability %d from the bounding set: %s (the "
                               "container needs CAP_SETPCAP)" % (cap, e.strerror))


def capabilities():
    """{"CapEff": int, "CapPrm": int, ...} of this process (from /proc/self/status)."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Cap"):
                key, _, value = line.partition(":")
                out[key] = int(value.strip(), 16)
    return out


def _say(message):
    try:
        os.write(2, (message.rstrip("\n") + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


def _fail(message):
    _say(message)
    os._exit(70)  # EX_SOFTWARE
