"""The process supervisor: runs bash scripts and pip installs so that a script's whole process
tree ends with it (issue #17 §3).

    python3 -I -S supervisor.py --serve FD

is started once by the kernel (it is small and single-threaded, so forking it is cheap and
safe). FD is its end of a SOCK_SEQPACKET socketpair; each message is one job with four
descriptors attached: the job's stdout and stderr (write ends of the kernel's pipes), a status
pipe, and a pipe the kernel writes the job into (JSON {"argv", "cwd", "env", "timeout"}; a pipe,
so a long script fits). For each job it forks a supervisor that
  - becomes a child subreaper, so orphaned descendants (setsid, double fork, `&`) stay below it;
  - starts argv (stdin /dev/null, its own session, default signal dispositions) in cwd with env;
  - waits for it, at most `timeout` seconds (0: no limit);
  - then stops and kills every remaining descendant (process_tree.freeze_and_kill), reaps them,
    and only then exits, so the job's pipes reach EOF exactly when nothing of it is left.
Status lines (JSON, one per line) on the status pipe: {"supervisor": pid} first, then either
{"exit_code": n (128 + signal when killed), "timed_out": bool, "killed_processes": n} or
{"error": {"type", "message"}} when the job could not start (e.g. no free process slots).
The supervisor ends when the kernel closes its end of the socketpair."""

import json
import os
import signal
import socket
import sys

sys.path.append(os.path.dirname(os.path.abspath(__file__)))
import process_tree  # noqa: E402  (the package directory, without importing the package)
from prctl import PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG, prctl  # noqa: E402

NO_PROCESS_SLOTS = ("no free process slots in the sandbox (pids limit); a process is forking "
                    "without end")
_RESET_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD, signal.SIGINT, signal.SIGTERM,
                  signal.SIGHUP, signal.SIGQUIT, signal.SIGALRM)


class _Timeout(Exception):
    pass


def _write_status(fd, obj):
    data = (json.dumps(obj) + "\n").encode()
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass


def _reap_nohang():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def supervise(job, out_fd, err_fd, status_fd):
    """In the forked supervisor: runs one job to its end. Never returns."""
    for fd in (out_fd, err_fd, status_fd):
        os.set_inheritable(fd, False)
    _write_status(status_fd, {"supervisor": os.getpid()})
    try:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
    except OSError as e:
        _write_status(status_fd, {"error": {"type": "Internal", "message": str(e)}})
        os._exit(1)
    try:
        os.chdir(job["cwd"])
    except OSError as e:
        _write_status(status_fd, {"error": {"type": "NotFound", "message": "cwd %s: %s" % (
            job["cwd"], e.strerror)}})
        os._exit(1)
    argv = job["argv"]
    try:
        child = os.posix_spawn(
            argv[0], argv, job["env"],
            file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                          (os.POSIX_SPAWN_DUP2, out_fd, 1), (os.POSIX_SPAWN_DUP2, err_fd, 2)],
            setsid=True, setsigmask=(), setsigdef=_RESET_SIGNALS)
    except BlockingIOError:
        _write_status(status_fd, {"error": {"type": "ResourceExhausted",
                                            "message": NO_PROCESS_SLOTS}})
        os._exit(1)
    except OSError as e:
        _write_status(status_fd, {"error": {"type": "Internal", "message": "cannot start %s: %s"
                                            % (argv[0], e)}})
        os._exit(1)
    os.close(out_fd)
    os.close(err_fd)
    timeout = float(job.get("timeout") or 0)
    timed_out = False
    status = None

    def on_alarm(signum, frame):
        raise _Timeout()

    signal.signal(signal.SIGALRM, on_alarm)
    if timeout > 0:
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        while status is None:
            pid, st = os.waitpid(-1, 0)  # reaps orphans too, until the job's own process ends
            if pid == child:
                status = st
    except _Timeout:
        timed_out = True
    except ChildProcessError:
        pass
    signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        os.killpg(child, signal.SIGSTOP)  # the job's group at once (a bash fork bomb is in it)
    except OSError:
        pass
    me = os.getpid()
    killed = process_tree.freeze_and_kill(lambda: process_tree.descendants(me), _reap_nohang)
    # Everything left is killed: wait for all of it (children, and orphans reparented here),
    # so that nothing of the job is still exiting when the kernel gets the reply.
    while True:
        try:
            pid, st = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == child:
            status = st
    killed.discard(child)
    if status is None:
        code = 128 + signal.SIGKILL
    else:
        code = os.waitstatus_to_exitcode(status)
        if code < 0:
            code = 128 - code
    _write_status(status_fd, {"exit_code": code, "timed_out": timed_out,
                              "killed_processes": len(killed)})
    os._exit(0)


def _read_job(fd):
    data = bytearray()
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data += chunk
    os.close(fd)
    return json.loads(data)


def serve(sock):
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # supervisors are reaped automatically
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a ^C meant for the kernel is not for us
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 1024, 4)
        except InterruptedError:
            continue
        except OSError:
            return
        if not msg:
            return  # the kernel closed its end
        if len(fds) != 4:
            for fd in fds:
                os.close(fd)
            continue
        out_fd, err_fd, status_fd, job_fd = fds
        try:
            pid = os.fork()
        except BlockingIOError:
            _write_status(status_fd, {"error": {"type": "ResourceExhausted",
                                                "message": NO_PROCESS_SLOTS}})
            pid = -1
        if pid == 0:
            sock.close()
            os.setpgid(0, 0)  # out of the helper's group, which the kernel's clones join
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                supervise(_read_job(job_fd), out_fd, err_fd, status_fd)
            except BaseException as e:
                _write_status(status_fd, {"error": {"type": "Internal", "message": "%s: %s" % (
                    type(e).__name__, e)}})
            os._exit(1)
        for fd in fds:
            os.close(fd)


def main(argv):
    if len(argv) != 2 or argv[0] != "--serve":
        sys.stderr.write("usage: supervisor.py --serve FD\n")
        return 2
    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # ends with the kernel
    except OSError:
        pass
    sock = socket.socket(fileno=int(argv[1]))
    serve(sock)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
