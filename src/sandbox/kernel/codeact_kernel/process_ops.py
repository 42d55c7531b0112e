"""Process ops: bash scripts and pip installs, each run under a supervisor (supervisor.py) that
ends the script's whole process tree with it (issue #17 §3), with capped output and a timeout.
(Run once per execution id: run_once.py, applied where the kernel routes the ops.)"""

import json
import os
import socket
import subprocess
import sys
import threading
import time

from .cgroups import MemoryLimit
from .descriptors import move_high, move_socket_high
from .log import fd as log_fd
from .output_capture import DEFAULT_MAX_OUTPUT, Capped
from .protocol import OpError
from .values import elapsed_ms

PACKAGE_RE_SOURCE = (
    r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?"
    r"((===|==|!=|<=|>=|~=|<|>)[A-Za-z0-9.*+!_-]+(,(===|==|!=|<=|>=|~=|<|>)[A-Za-z0-9.*+!_-]+)*)?$")
NETWORK_HINT = "the sandbox has no network; start it with --network"
# Checked first: the network is there, but the index's certificate is not trusted (a
# TLS-inspecting proxy on the way, or a private index with its own CA).
TLS_HINT = ("the package index's TLS certificate is not trusted (a TLS-inspecting proxy or a "
            "private CA?); point PIP_CERT at that CA bundle or use a trusted index")
_TLS_MARKERS = ("CERTIFICATE_VERIFY_FAILED", "certificate verify failed", "SSLCertVerificationError")
_NETWORK_MARKERS = (
    "Failed to establish a new connection", "Temporary failure in name resolution",
    "Network is unreachable", "Name or service not known", "No address associated",
    "Could not fetch URL", "connection broken", "Max retries exceeded", "NewConnectionError",
    "Connection refused", "No matching distribution found", "ProxyError")
NO_PROCESS_SLOTS = ("no free process slots in the sandbox (pids limit); a process is forking "
                    "without end")
SUPERVISOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "supervisor.py")
_SUPERVISOR_GRACE_S = 30.0  # past the job's timeout, the supervisor itself is given up on


class Supervisor:
    """The kernel's end of the process supervisor (one long-lived helper process, started with
    the kernel, restarted when it died). Thread-safe."""

    def __init__(self):
        self.lock = threading.Lock()
        self.sock = None  # GUARDED_BY(lock)
        self.proc = None  # GUARDED_BY(lock)

    def start(self):
        """Starts the helper; raises OpError(ResourceExhausted) without free process slots."""
        with self.lock:
            self._start()

    def _start(self):
        if self.proc is not None:
            self.proc.poll()  # reap the one that died
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", SUPERVISOR, "--serve", str(child.fileno())],
                pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL, stdout=log_fd(),
                stderr=log_fd(), process_group=0)  # its group is the one clones join
        except BlockingIOError:
            parent.close()
            raise OpError("ResourceExhausted", NO_PROCESS_SLOTS)
        finally:
            child.close()
        self.sock = move_socket_high(parent)

    def pid(self):
        proc = self.proc
        return proc.pid if proc is not None else None

    def fds(self):
        sock = self.sock
        return [sock.fileno()] if sock is not None else []

    def submit(self, fds):
        """Hands a job's descriptors (stdout, stderr, status, job) to the helper."""
        for attempt in (1, 2):
            with self.lock:
                if self.sock is None or self.proc.poll() is not None:
                    self._start()
                sock = self.sock
            try:
                socket.send_fds(sock, [b"job"], fds)
                return
            except OSError:
                with self.lock:
                    if self.sock is sock:
                        sock.close()
                        self.sock = None
        raise OpError("Unavailable", "the process supervisor does not accept jobs")


class ProcessOps:
    """bash and install; safe on any thread (several may run at once)."""

    def __init__(self, workspace, memory_limit=None):
        """memory_limit: a cgroups.MemoryLimit (default: the sandbox's), to tell a script that
        processes were killed for memory while it ran."""
        self.ws = workspace
        self.supervisor = Supervisor()
        self.memory_limit = memory_limit if memory_limit is not None else MemoryLimit()
        self.package_re = None

    def _run_process(self, argv, timeout, cwd, max_out):
        """Runs argv under a supervisor with capped output: at its end (or timeout) every process
        it left behind is killed. Raises OpError when it cannot start."""
        import selectors

        t0 = time.perf_counter()
        oom_kills_before = self.memory_limit.oom_kills()
        pipes = [os.pipe() for _ in range(4)]  # stdout, stderr, status, job
        (out_r, out_w), (err_r, err_w), (st_r, st_w), (job_r, job_w) = pipes
        reads = [move_high(fd) for fd in (out_r, err_r, st_r)]
        try:
            self.supervisor.submit([out_w, err_w, st_w, job_r])
        except BaseException:
            for fd in reads + [job_w]:
                os.close(fd)
            raise
        finally:
            for fd in (out_w, err_w, st_w, job_r):
                os.close(fd)
        out_r, err_r, st_r = reads
        try:
            job = json.dumps({"argv": argv, "cwd": cwd, "env": dict(os.environ),
                              "timeout": timeout}).encode()
            while job:
                job = job[os.write(job_w, job):]
        except OSError:
            pass  # the supervisor could not start; its status says why
        finally:
            os.close(job_w)
        bufs = {out_r: Capped(max_out), err_r: Capped(max_out)}
        status_bytes = bytearray()
        sel = selectors.DefaultSelector()
        for fd in reads:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout + _SUPERVISOR_GRACE_S if timeout > 0 else None
        given_up = False
        try:
            while sel.get_map():
                wait = None if deadline is None else deadline - time.monotonic()
                if wait is not None and wait <= 0:
                    given_up = True
                    break
                for key, _ in sel.select(wait):
                    try:
                        data = os.read(key.fd, 65536)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        sel.unregister(key.fd)
                    elif key.fd == st_r:
                        status_bytes += data
                    else:
                        bufs[key.fd].add(data)
        finally:
            sel.close()
            for fd in reads:
                os.close(fd)
        status = {}
        for line in bytes(status_bytes).splitlines():
            try:
                status.update(json.loads(line))
            except ValueError:
                pass
        if given_up:
            pid = status.get("supervisor")
            if pid:
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
            raise OpError("Internal", "the process supervisor did not end %s within %gs of its "
                          "timeout; it was killed" % (argv[0], _SUPERVISOR_GRACE_S))
        if "error" in status:
            err = status["error"]
            raise OpError(err.get("type") or "Internal", err.get("message") or "failed")
        if "exit_code" not in status:
            raise OpError("Internal", "the process supervisor ended without a status (killed?)")
        out, out_omitted = bufs[out_r].text()
        err, err_omitted = bufs[err_r].text()
        truncated = {}
        if out_omitted:
            truncated["stdout"] = out_omitted
        if err_omitted:
            truncated["stderr"] = err_omitted
        result = {"exit_code": status["exit_code"], "stdout": out, "stderr": err,
                  "timed_out": bool(status.get("timed_out")), "duration_ms": elapsed_ms(t0),
                  "truncated": truncated}
        if status.get("killed_processes"):
            result["killed_processes"] = status["killed_processes"]
        oom_kills_after = self.memory_limit.oom_kills()
        if None not in (oom_kills_before, oom_kills_after) and oom_kills_after > oom_kills_before:
            # Exit status 137 alone reads like a timeout or a kill by hand.
            result["oom_kills"] = oom_kills_after - oom_kills_before
            result["notice"] = self.memory_limit.ran_out_text(result["oom_kills"])
        return result

    def op_bash(self, msg):
        script = msg.get("script")
        if not isinstance(script, str):
            raise OpError("InvalidArgument", "bash needs a string field \"script\"")
        try:
            timeout = float(msg.get("timeout") or 0)
            max_out = int(msg.get("max_output_bytes") or DEFAULT_MAX_OUTPUT)
        except (TypeError, ValueError):
            raise OpError("InvalidArgument", "timeout and max_output_bytes must be numbers")
        cwd = msg.get("cwd")
        cwd = self.ws.resolve(cwd, "cwd") if cwd else self.ws.output_dir
        if not os.path.isdir(cwd):
            raise OpError("NotFound", "cwd %s is not a directory" % self.ws.display(cwd))
        return self._run_process(["/bin/bash", "-c", script], timeout, cwd, max_out)

    def op_install(self, msg):
        import importlib
        import re

        packages = msg.get("packages")
        if not isinstance(packages, list) or not packages:
            raise OpError("InvalidArgument", "install needs a non-empty list \"packages\"")
        if self.package_re is None:
            self.package_re = re.compile(PACKAGE_RE_SOURCE)
        for p in packages:
            if not isinstance(p, str) or not self.package_re.match(p):
                raise OpError("InvalidArgument",
                              "%r is not a valid package requirement (expected name[extras]"
                              "[version specifiers], e.g. \"numpy==1.26.4\")" % (p,))
        try:
            timeout = float(msg.get("timeout") or 0)
        except (TypeError, ValueError):
            raise OpError("InvalidArgument", "timeout must be a number")
        argv = [sys.executable, "-m", "pip", "install", "--no-input",
                "--disable-pip-version-check", "--target", self.ws.python_dir] + packages
        res = self._run_process(argv, timeout, self.ws.output_dir, DEFAULT_MAX_OUTPUT)
        ok = res["exit_code"] == 0 and not res["timed_out"]
        out = {"status": "ok" if ok else "error", "stdout": res["stdout"],
               "stderr": res["stderr"], "duration_ms": res["duration_ms"],
               "installed": [re.split(r"[\[=!<>~]", p, 1)[0] for p in packages] if ok else []}
        if res["timed_out"]:
            out["stderr"] += "\n[codeact] pip was killed after %gs\n" % timeout
        said = res["stdout"] + res["stderr"]
        hint = None
        if not ok and any(m in said for m in _TLS_MARKERS):
            hint = TLS_HINT
        elif not ok and any(m in said for m in _NETWORK_MARKERS):
            hint = NETWORK_HINT
        if hint:
            out["hint"] = hint
            out["stderr"] += "\nhint: %s\n" % hint
        if ok:
            try:
                import site

                site.addsitedir(self.ws.python_dir)
            except Exception:
                pass
            importlib.invalidate_caches()
        return out
