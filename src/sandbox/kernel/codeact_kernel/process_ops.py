"""Process ops: bash scripts and pip installs as subprocesses with capped output and a
timeout, and the run-once records that make a retried bash call with the same execution id
return the first run's reply instead of running again."""

import os
import signal
import sys
import threading
import time

from .atomic_files import read_json_quiet, unlink_quiet, write_atomic
from .output_capture import DEFAULT_MAX_OUTPUT, Capped
from .protocol import OpError, encode
from .state_store import MAX_EXECUTION_RECORDS
from .values import elapsed_ms

PACKAGE_RE_SOURCE = (
    r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?"
    r"((===|==|!=|<=|>=|~=|<|>)[A-Za-z0-9.*+!_-]+(,(===|==|!=|<=|>=|~=|<|>)[A-Za-z0-9.*+!_-]+)*)?$")
NETWORK_HINT = "the sandbox has no network; start it with --network"
_NETWORK_MARKERS = (
    "Failed to establish a new connection", "Temporary failure in name resolution",
    "Network is unreachable", "Name or service not known", "No address associated",
    "Could not fetch URL", "connection broken", "Max retries exceeded", "NewConnectionError",
    "Connection refused", "No matching distribution found", "ProxyError")


class ProcessOps:
    """bash and install; safe on any thread (several may run at once)."""

    def __init__(self, workspace):
        self.ws = workspace
        self.once_lock = threading.Lock()
        self.once_running = {}  # record path -> threading.Event; GUARDED_BY(once_lock)
        self.once_writes = 0
        self.package_re = None

    def _run_process(self, argv, timeout, cwd, max_out):
        """Runs argv in its own process group with capped output. Kills the group on timeout."""
        import selectors
        import subprocess

        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        bufs = {proc.stdout: Capped(max_out), proc.stderr: Capped(max_out)}
        sel = selectors.DefaultSelector()
        for f in bufs:
            os.set_blocking(f.fileno(), False)
            sel.register(f, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout if timeout > 0 else None
        timed_out = False
        exited_at = None
        while sel.get_map():
            now = time.monotonic()
            if deadline is not None and now >= deadline and not timed_out:
                timed_out = True
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                exited_at = now
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            # Once the main process is gone, background children that keep the pipes open
            # get a short grace period, then they keep running without us listening.
            if exited_at is not None and now - exited_at > (1.0 if timed_out else 0.2):
                break
            wait = 0.05 if exited_at is not None else 0.25
            if deadline is not None and not timed_out:
                wait = min(wait, max(deadline - now, 0))
            for key, _ in sel.select(wait):
                try:
                    data = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if data:
                    bufs[key.fileobj].add(data)
                else:
                    sel.unregister(key.fileobj)
        sel.close()
        for f in bufs:
            f.close()
        try:
            rc = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
        if rc < 0:
            rc = 128 - rc
        out, out_omitted = bufs[proc.stdout].text()
        err, err_omitted = bufs[proc.stderr].text()
        truncated = {}
        if out_omitted:
            truncated["stdout"] = out_omitted
        if err_omitted:
            truncated["stderr"] = err_omitted
        return {"exit_code": rc, "stdout": out, "stderr": err, "timed_out": timed_out,
                "duration_ms": elapsed_ms(t0), "truncated": truncated}

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
        exec_id = msg.get("execution_id")
        if exec_id is not None and not isinstance(exec_id, str):
            raise OpError("InvalidArgument", "execution_id must be a string, got %r" % (exec_id,))

        def run():
            out = self._run_process(["/bin/bash", "-c", script], timeout, cwd, max_out)
            out["replayed"] = False
            return out
        return self._once("bash", exec_id, run) if exec_id else run()

    def _once(self, kind, exec_id, run):
        """Runs `run` at most once per (kind, execution id) and records its reply in a file under
        state/once/: a known id gets the recorded reply (replayed: true); a second request for an
        id that is still running waits for the first and gets its reply."""
        import hashlib

        digest = hashlib.sha256((kind + "\0" + exec_id).encode("utf-8", "surrogatepass")).hexdigest()[:40]
        once_dir = os.path.join(self.ws.state_dir, "once")
        path = os.path.join(once_dir, digest + ".json")
        while True:
            with self.once_lock:
                running = self.once_running.get(path)
                if running is None:
                    recorded = read_json_quiet(path)
                    if recorded is not None:
                        recorded["replayed"] = True
                        return recorded
                    done = threading.Event()
                    self.once_running[path] = done
                    break
            running.wait()  # then look again: the record is there unless the run failed
        try:
            out = run()
            os.makedirs(once_dir, exist_ok=True)
            write_atomic(path, encode(out), self.ws.fsync)
            self._prune_once(once_dir)
            return out
        finally:
            with self.once_lock:
                self.once_running.pop(path, None)
            done.set()

    def _prune_once(self, once_dir):
        self.once_writes += 1
        if self.once_writes % 100:
            return
        try:
            names = [os.path.join(once_dir, n) for n in os.listdir(once_dir) if n.endswith(".json")]
            if len(names) <= MAX_EXECUTION_RECORDS:
                return
            names.sort(key=lambda n: os.stat(n).st_mtime)
            for n in names[:len(names) - MAX_EXECUTION_RECORDS]:
                unlink_quiet(n)
        except OSError:
            pass

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
        if not ok and any(m in res["stdout"] + res["stderr"] for m in _NETWORK_MARKERS):
            out["hint"] = NETWORK_HINT
            out["stderr"] += "\nhint: %s\n" % NETWORK_HINT
        if ok:
            try:
                import site

                site.addsitedir(self.ws.python_dir)
            except Exception:
                pass
            importlib.invalidate_caches()
        return out
