"""Run-once records: an op sent with an execution id (bash, install, files.write, clear) runs at
most once; its reply is recorded in state/once/<sha256(kind \\0 id)[:40]>.json, and the same
kind and id again gets the recorded reply with replayed: true (a retried activity after a crash
of the host or of the kernel). The oldest records beyond MAX_EXECUTION_RECORDS are pruned."""

import hashlib
import os
import threading

from .atomic_files import read_json_quiet, unlink_quiet, write_atomic
from .protocol import OpError, encode
from .state_store import MAX_EXECUTION_RECORDS


def execution_id(msg):
    """The request's execution_id (None when absent or empty); InvalidArgument when it is not a
    string."""
    exec_id = msg.get("execution_id")
    if exec_id is not None and not isinstance(exec_id, str):
        raise OpError("InvalidArgument", "execution_id must be a string, got %r" % (exec_id,))
    return exec_id or None


class RunOnce:
    """Thread-safe: a second request for an id that is still running waits for the first and
    gets its reply."""

    def __init__(self, state_dir, fsync):
        self.dir = os.path.join(state_dir, "once")
        self.fsync = fsync
        self.lock = threading.Lock()
        self.running = {}  # record path -> threading.Event; GUARDED_BY(lock)
        self.writes = 0  # GUARDED_BY(lock)

    def wrap(self, kind, handler):
        """handler(msg) -> reply, made run-once for requests with an execution id."""
        return lambda msg: self.run(kind, msg, lambda: handler(msg))

    def run(self, kind, msg, fn):
        """fn() -> reply dict, run at most once per (kind, the request's execution id); without
        an id, just fn(). The reply gets replayed: false (true when it is the record's)."""
        exec_id = execution_id(msg)
        if exec_id is None:
            return dict(fn(), replayed=False)
        digest = hashlib.sha256(
            (kind + "\0" + exec_id).encode("utf-8", "surrogatepass")).hexdigest()[:40]
        path = os.path.join(self.dir, digest + ".json")
        while True:
            with self.lock:
                running = self.running.get(path)
                if running is None:
                    recorded = read_json_quiet(path)
                    if recorded is not None:
                        recorded["replayed"] = True
                        return recorded
                    done = threading.Event()
                    self.running[path] = done
                    break
            running.wait()  # then look again: the record is there unless the run failed
        try:
            out = dict(fn(), replayed=False)
            os.makedirs(self.dir, exist_ok=True)
            write_atomic(path, encode(out), self.fsync)
            self._prune()
            return out
        finally:
            with self.lock:
                self.running.pop(path, None)
            done.set()

    def _prune(self):
        with self.lock:
            self.writes += 1
            if self.writes % 100:
                return
        try:
            names = [os.path.join(self.dir, n) for n in os.listdir(self.dir)
                     if n.endswith(".json")]
            if len(names) <= MAX_EXECUTION_RECORDS:
                return
            names.sort(key=lambda n: os.stat(n).st_mtime)
            for n in names[:len(names) - MAX_EXECUTION_RECORDS]:
                unlink_quiet(n)
        except OSError:
            pass
