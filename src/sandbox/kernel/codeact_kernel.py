#!/usr/bin/env python3
"""codeact sandbox kernel: the long-lived Python process inside every sandbox container.

It keeps one namespace alive across cells, snapshots it to the sandbox's volume after every
cell (before the reply leaves), and serves the host over a unix socket. Standard library only,
plus cloudpickle (imported lazily, only when a non-trivial value is saved).

Invocation
    python3 codeact_kernel.py [--socket PATH] [--workspace DIR] [--sandbox-id ID]
    Environment: CODEACT_SOCKET (default /run/codeact/kernel.sock), CODEACT_SANDBOX_ID (required
    without --sandbox-id), CODEACT_STORAGE (default /persistent-storage; workspace =
    $CODEACT_STORAGE/$ID), CODEACT_DURABILITY = fsync (default) | rename,
    CODEACT_PERSISTENCE = 1 (default) | 0 (no state written, nothing restored).
    Start: create workspace/{state,output,python}; point $CODEACT_STORAGE/.current at $ID (how
    /output reaches the volume; failure tolerated); put workspace/python (pip --target) on
    sys.path; chdir to workspace/output; restore state; bind the socket (mode 0666); print
    "codeact-kernel ready" on stderr.

Wire protocol (version 1)
    Unix stream socket; several connections at once. Frame = 4-byte big-endian unsigned length +
    UTF-8 JSON object. Request {"id": int, "op": str, ...}. Final answer on the same connection:
        {"id", "type": "reply", "ok": true, ...fields}
        {"id", "type": "reply", "ok": false, "error": {"type", "message"}}   (failed operation;
            type is a canonical code: InvalidArgument, NotFound, FailedPrecondition,
            PermissionDenied, Unimplemented, DataLoss, Internal)
    A cell that raises is NOT a failed operation: ok is true, "status" is "error", "error" is set.
    Frames with a missing/invalid JSON body get a reply with "id": null. Text is UTF-8; bytes a
    process wrote that are not UTF-8 are replaced (U+FFFD).
    Events before the reply, same id: {"type": "stream", "name": "stdout"|"stderr", "text"}
    (execute with "stream": true; at most 20 frames/s, coalesced, at most max_output_bytes per
    stream) and bridge calls (below). Ops touching the namespace (execute, vars, get, clear,
    define, bridge.register, shutdown) run one at a time on the main thread, in arrival order;
    hello answers at once; bash, install and files.* run on their own threads.

    hello   -> kernel_version, protocol: 1, python_version, pid, sandbox_id, cell (last
               committed cell), restored: [names], restore_errors: [{name, reason}], persistence
    execute {code, execution_id?, timeout? (s, 0 = none), persist? = true, variables? {name: json},
             max_output_bytes? = 65536 (per stream), stream? = false}
            -> status "ok"|"error", stdout, stderr, result (repr of a final expression, <= 8 KB,
               null for None), error null | {type, message, traceback} (kernel frames removed,
               user code shows as File "<cell N>"), outputs [{type: "image/png", path}] (open
               matplotlib figures, saved and closed), files [output paths created or modified
               since the previous cell, figures included, not counting bash/files.write/install],
               not_persisted [{name, reason}] (every name currently not in the snapshot),
               duration_ms, execution_id, cell, truncated {stdout?, stderr?: omitted bytes},
               replayed, timed_out; persist_error (only when writing the snapshot failed).
               A known execution_id returns the recorded reply with replayed: true, running
               nothing. Timeout: the main thread gets SIGINT (again every second until the cell
               ends); the cell reports TimeoutError "cell exceeded its timeout of Ns".
               Output: head and tail halves of max_output_bytes kept, with a line
               "... [N bytes omitted] ..." between. Output is captured at the file-descriptor
               level, so subprocesses and C extensions are captured too.
    bash    {script, timeout?, cwd?, max_output_bytes?, execution_id?} -> exit_code (128+signal
               when killed), stdout, stderr, timed_out, duration_ms, truncated, replayed.
               /bin/bash -c in its own process group; the group is killed on timeout. cwd
               defaults to the output dir and is confined like files. With an execution_id the
               script runs once: a known id returns the recorded reply (replayed: true), and a
               request with the id of a script still running waits for it and gets its reply.
               Records are files under state/once/ (the last MAX_EXECUTION_RECORDS kept); a
               script cut short by a kernel crash has no record and runs again.
    vars    -> variables [{name, type, kind data|function|class|module, persisted, reason?,
               size?, preview}] (user names: no _-prefixed, kernel-provided or builtin names)
    get     {name} -> name, value_type (qualified type name; not "type", which the envelope
               uses), repr (<= 64 KB), value (JSON or null); NotFound if absent
    clear   -> cleared [names]; empties namespace and snapshot (execution records kept)
    files.list {path?} -> root, files [{path, size, mtime}] (recursive, regular files, sorted)
    files.read {path} -> path, size, data_b64
    files.write {path, data_b64, make_dirs? = true} -> path, size (tmp + rename)
               Paths: relative -> output dir, /output/... -> output dir; the real path must lie in
               the workspace, else PermissionDenied. Paths are reported as seen in the sandbox
               (/output/... inside the output dir).
    install {packages, timeout?} -> status, stdout, stderr, installed, duration_ms[, hint]
               Names validated (InvalidArgument); pip --target workspace/python, argument list.
    bridge.register {functions: [{name, signature: "def f(a: int) -> Any", doc}]} -> registered
    define  {source} -> defined [names] (kernel-provided: not listed, not persisted)
    shutdown -> reply, commit, exit 0

    Bridge call, kernel -> host, on the connection of the running execute:
        {"id": <request id>, "type": "bridge_call", "call_id": int, "name", "args", "kwargs"}
    host -> kernel: {"type": "bridge_result", "call_id", "ok": true, "value"} or
        {"type": "bridge_result", "call_id", "ok": false, "error": {"type", "message"}}
    The stub returns value or raises ToolError (a RuntimeError, available as a builtin).
    Positional-or-keyword arguments travel as kwargs; arguments left at their default are omitted.

Persistence (workspace/state)
    manifest.json is the single commit point: {"version": 1, "cell", "entries": {name: {kind,
    file: "objects/<name>.<cell>.pkl" | null, module, qualname?, type, sha256, size}},
    "executions": {execution_id: "executions/<hash>.json"}, "not_persisted": {name: reason}}.
    file is null for references: modules (module = real name, so `import numpy as np` restores
    np) and functions/classes importable as module + qualname (`from os.path import join`).
    Object files are cloudpickle (protocol 5); cell-defined functions and classes by value.
    After every execute (failed and timed-out ones too), before the reply: new object files and
    the execution record (tmp + rename each), then the manifest (tmp, fsync if durability=fsync,
    rename, fsync of the directories). Only candidates are pickled: new names, rebound names,
    names the cell's code mentions, and names mentioned by user functions/classes the cell
    reaches (and names touched by persist=false cells or define since the last commit).
    Unchanged bytes (sha256) are not rewritten; untouched names are not even pickled. Functions
    keep resolving globals from the live namespace after a restore. Names starting with "_" are
    not persisted. Each name is its own file, so aliasing between names (b = a) is not kept.
    Restore order: references, data, functions, classes; each failure is a restore_error and
    does not stop the others. A manifest that cannot be read is moved aside (*.unreadable-<t>).
    A name whose restore failed keeps its entry (a later restart may succeed) until the name is
    bound again or state is cleared.
    Test hooks: CODEACT_TEST_CRASH_BEFORE_COMMIT=1 / CODEACT_TEST_CRASH_AFTER_COMMIT=1 exit with
    status 137 just before / just after the manifest rename (after: before the reply is sent).
"""

import builtins
import io
import json
import os
import queue
import signal
import socket
import struct
import sys
import threading
import time
import types

KERNEL_VERSION = "0.1.0"
PROTOCOL_VERSION = 1
MAX_FRAME_BYTES = 1 << 30
DEFAULT_MAX_OUTPUT = 65536
RESULT_REPR_CAP = 8 * 1024
PREVIEW_CAP = 200
GET_REPR_CAP = 64 * 1024
GET_VALUE_MAX_ELEMENTS = 10_000
MAX_EXECUTION_RECORDS = 10_000
MEMORY_RECORDS_BYTES = 64 << 20
GET_VALUE_BUDGET = 100_000
VERIFY_MAX_BYTES = 16 << 20  # restore verifies the sha256 of objects up to this size
SPILL_BYTES = 4 << 20
OUTPUT_SCAN_LIMIT = 20_000
READ_FILE_LIMIT = 64 << 20  # base64 in one frame, inside a container of a few hundred MB
MAIN_OPS = frozenset(
    ["execute", "vars", "get", "clear", "define", "bridge.register", "shutdown"])
THREAD_OPS = frozenset(["bash", "install", "files.list", "files.read", "files.write"])
KERNEL_FILE = os.path.abspath(__file__)
_LEN = struct.Struct(">I")
_PRIMITIVES = (int, float, complex, str, bytes, bool, type(None))

PACKAGE_RE_SOURCE = (
    r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?"
    r"((===|==|!=|<=|>=|~=|<|>)[A-Za-z0-9.*+!_-]+(,(===|==|!=|<=|>=|~=|<|>)[A-Za-z0-9.*+!_-]+)*)?$")
NETWORK_HINT = "the sandbox has no network; start it with --network"
_NETWORK_MARKERS = (
    "Failed to establish a new connection", "Temporary failure in name resolution",
    "Network is unreachable", "Name or service not known", "No address associated",
    "Could not fetch URL", "connection broken", "Max retries exceeded", "NewConnectionError",
    "Connection refused", "No matching distribution found", "ProxyError")


class OpError(Exception):
    """A failed operation: becomes {"ok": false, "error": {type, message}}."""

    def __init__(self, type_, message):
        super().__init__(message)
        self.type = type_
        self.message = message


class ToolError(RuntimeError):
    """Raised by a bridge function when the host reports that the tool failed."""

    def __init__(self, message, type=None):
        super().__init__(message)
        self.type = type


# Pickled by reference as builtins.ToolError, so saved exceptions restore.
ToolError.__module__ = "builtins"
ToolError.__qualname__ = "ToolError"

_KERNEL = None


def _rt_namespace():
    """Unpickling hook: functions saved by the kernel get the live namespace as globals."""
    return _KERNEL.ns


_rt = types.ModuleType("_codeact_kernel_rt")
_rt_namespace.__module__ = "_codeact_kernel_rt"
_rt_namespace.__qualname__ = _rt_namespace.__name__ = "namespace"
_rt.namespace = _rt_namespace
sys.modules["_codeact_kernel_rt"] = _rt


# --------------------------------------------------------------------------- small helpers

def _log(msg):
    fd = _KERNEL.log_fd if _KERNEL is not None else 2
    try:
        os.write(fd, (msg.rstrip("\n") + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


def _encode(obj):
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from user data
        return text.encode("utf-8", "replace")


def _ms(t0):
    return round((time.perf_counter() - t0) * 1000.0, 3)


def _type_name(obj):
    t = type(obj)
    mod = getattr(t, "__module__", None)
    qual = getattr(t, "__qualname__", t.__name__)
    if mod in (None, "builtins", "__main__"):
        return qual
    return mod + "." + qual


def _exc_type_name(t):
    mod = getattr(t, "__module__", None)
    qual = getattr(t, "__qualname__", t.__name__)
    if mod in (None, "builtins", "__main__"):
        return qual
    return mod + "." + qual


def _kind(obj):
    if isinstance(obj, types.ModuleType):
        return "module"
    if isinstance(obj, type):
        return "class"
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return "function"
    if type(obj).__name__ == "partial" and type(obj).__module__ == "functools":
        return "function"
    return "data"


def _short(text, limit=300):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


_REPR = None


def _bounded_repr(obj, cap):
    """repr(obj), without building megabytes for big builtin containers, capped at cap chars."""
    global _REPR
    if _REPR is None:
        import reprlib

        class _Repr(reprlib.Repr):
            def repr_bytes(self, x, level):
                if len(x) <= self.maxstring:
                    return builtins.repr(x)
                half = self.maxstring // 2
                return builtins.repr(x[:half])[:-1] + "..." + builtins.repr(x[-half:])[2:]

            def repr_instance(self, x, level):
                return builtins.repr(x)

        r = _Repr()
        r.maxlevel = 8
        r.maxlist = r.maxtuple = r.maxset = r.maxfrozenset = r.maxdeque = r.maxarray = 2000
        r.maxdict = 1000
        r.maxstring = 2 * GET_REPR_CAP
        r.maxlong = 100_000
        r.maxother = 1 << 30
        _REPR = r
    try:
        if type(obj) in (list, tuple, dict, set, frozenset, str, bytes):
            text = _REPR.repr(obj)
        else:
            text = builtins.repr(obj)
    except Exception as e:  # a user __repr__ may raise anything; interrupts propagate
        text = "<repr failed: %s: %s>" % (type(e).__name__, _short(e, 200))
    if not isinstance(text, str):
        text = str(text)
    if len(text) > cap:
        text = text[: max(cap - 3, 0)] + "..."
    return text


class _NotJson(Exception):
    pass


def _to_json(value, max_elements=None, depth=0, budget=None):
    """Convert value to plain JSON types (numpy via tolist, tuples/sets to lists) or raise.
    max_elements bounds each container/array, budget (a one-item list) all elements."""
    if depth > 100:
        raise _NotJson("nested too deeply")
    if budget is not None:
        budget[0] -= 1
        if budget[0] < 0:
            raise _NotJson("too many elements in all")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise _NotJson("%r is not a JSON number" % value)
        return float(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        if max_elements is not None and len(value) > max_elements:
            raise _NotJson("more than %d elements" % max_elements)
        items = value if isinstance(value, (list, tuple)) else list(value)
        return [_to_json(v, max_elements, depth + 1, budget) for v in items]
    if isinstance(value, dict):
        if max_elements is not None and len(value) > max_elements:
            raise _NotJson("more than %d elements" % max_elements)
        out = {}
        for k, v in value.items():
            if isinstance(k, str):
                key = k
            elif isinstance(k, (int, float, bool)) or k is None:
                key = json.dumps(k)
            else:
                raise _NotJson("dict key of type %s" % type(k).__name__)
            out[key] = _to_json(v, max_elements, depth + 1, budget)
        return out
    mod = type(value).__module__ or ""
    if mod.split(".")[0] == "numpy" and hasattr(value, "tolist"):
        size = getattr(value, "size", 1)
        if max_elements is not None and size > max_elements:
            raise _NotJson("array of %d elements (more than %d)" % (size, max_elements))
        return _to_json(value.tolist(), None, depth + 1, budget)
    raise _NotJson("%s is not JSON-serializable" % _type_name(value))


_MISSING = object()


def _import_ref(obj):
    """(module, qualname) when obj is a function or class that `import module` gives back by
    that qualified name (e.g. `from collections import OrderedDict`), else None."""
    if not isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
        return None
    mod = getattr(obj, "__module__", None)
    qual = getattr(obj, "__qualname__", None)
    if not isinstance(mod, str) or not isinstance(qual, str) or mod == "__main__" \
            or "<" in qual:
        return None
    target = sys.modules.get(mod)
    if target is None:
        return None
    for part in qual.split("."):
        target = getattr(target, part, _MISSING)
    return (mod, qual) if target is obj else None


def _resolve_ref(module, qualname):
    import importlib

    target = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def _code_names(code, acc=None):
    """co_names of a code object and of every code object nested in it."""
    if acc is None:
        acc = set()
    acc.update(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _code_names(const, acc)
    return acc


def _fsync_dir(path):
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _read_json_quiet(path):
    """The JSON object in `path`, or None when it is missing or unreadable."""
    try:
        with open(path, "rb") as f:
            value = json.loads(f.read())
        return value if isinstance(value, dict) else None
    except (OSError, ValueError):
        return None


def _write_atomic(path, data, fsync):
    tmp = "%s.tmp-%d-%d" % (path, os.getpid(), threading.get_ident())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        if fsync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        _unlink_quiet(tmp)
        raise
    os.close(fd)
    os.replace(tmp, path)


def _unlink_quiet(path):
    try:
        os.unlink(path)
    except OSError:
        pass


# --------------------------------------------------------------------------- output capture

class _Capped:
    """Keeps the first and last halves of `limit` bytes of a stream and counts the rest."""

    def __init__(self, limit):
        self.head_cap = limit // 2
        self.tail_cap = limit - self.head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data):
        self.total += len(data)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data and self.tail_cap > 0:
            self.tail += data
            if len(self.tail) > 2 * self.tail_cap + 65536:
                del self.tail[: len(self.tail) - self.tail_cap]

    def text(self):
        """Returns (text, omitted_bytes)."""
        tail = bytes(self.tail[-self.tail_cap:]) if self.tail_cap > 0 else b""
        omitted = self.total - len(self.head) - len(tail)
        head = self.head.decode("utf-8", "replace")
        if omitted <= 0:
            return (bytes(self.head) + tail).decode("utf-8", "replace"), 0
        sep = "" if head.endswith("\n") or not head else "\n"
        return "%s%s... [%d bytes omitted] ...\n%s" % (
            head, sep, omitted, tail.decode("utf-8", "replace")), omitted


class _CellOutput:
    """Where fds 1 and 2 go while one cell runs; optionally streamed to the host."""

    def __init__(self, limit, stream_to=None):
        self.limit = limit
        self.bufs = {"stdout": _Capped(limit), "stderr": _Capped(limit)}
        self.stream_to = stream_to  # (connection, request id) or None
        self.pending = {"stdout": bytearray(), "stderr": bytearray()}
        self.streamed = {"stdout": 0, "stderr": 0}
        self.decoders = None
        if stream_to is not None:
            import codecs

            self.decoders = {n: codecs.getincrementaldecoder("utf-8")("replace")
                             for n in self.bufs}
        self.send_lock = threading.Lock()
        self.closed = False
        self.frames_last_flush = 0
        self.last_flush = 0.0

    def add(self, name, data):  # REQUIRES: router lock held
        self.bufs[name].add(data)
        if self.stream_to is not None:
            left = self.limit - self.streamed[name]
            if left > 0:
                chunk = data[:left]
                self.pending[name] += chunk
                self.streamed[name] += len(chunk)
                if len(data) > left:
                    self.pending[name] += (
                        b"\n... [streaming stopped at max_output_bytes; the reply keeps "
                        b"head and tail] ...\n")
                    self.streamed[name] = self.limit

    def has_pending(self):
        return bool(self.pending["stdout"] or self.pending["stderr"])

    def flush_stream(self, router, final=False):
        """Sends pending text as stream frames. Frames never follow the reply."""
        with self.send_lock:
            if self.closed:
                return
            with router.lock:
                chunks = []
                for name in ("stdout", "stderr"):
                    if self.pending[name]:
                        chunks.append((name, bytes(self.pending[name])))
                        self.pending[name].clear()
            if final:
                self.closed = True
            conn, rid = self.stream_to
            sent = 0
            for name, data in chunks:
                text = self.decoders[name].decode(data, final)
                if text:
                    conn.send({"id": rid, "type": "stream", "name": name, "text": text})
                    sent += 1
            self.frames_last_flush = sent
            self.last_flush = time.monotonic()


class _OutputRouter:
    """Owns file descriptors 1 and 2 (pipes read by a thread) so that everything a cell writes,
    including subprocesses and C code, reaches the cell's capture; otherwise the container log."""

    def __init__(self, log_fd):
        self.log_fd = log_fd
        self.lock = threading.Lock()  # guards capture and the reads of the pipes
        self.capture = None
        self.names = {}  # read end -> stream name
        self.keep = {}  # 1/2 -> private copy of the pipe's write end, to repair fd 1/2
        self.ino = {}
        for fd, name in ((1, "stdout"), (2, "stderr")):
            r, w = os.pipe()  # both ends non-inheritable; dup2 makes fd 1/2 inheritable
            os.dup2(w, fd)
            os.set_blocking(r, False)
            self.names[r] = name
            self.keep[fd] = w
            self.ino[fd] = os.fstat(w).st_ino
        self.stdout = self._text_stream(1)
        self.stderr = self._text_stream(2)
        sys.stdout, sys.stderr = self.stdout, self.stderr
        sys.__stdout__, sys.__stderr__ = self.stdout, self.stderr
        import select

        self.poller = select.poll()  # for non-blocking drains by the main thread
        for r in self.names:
            self.poller.register(r, select.POLLIN)
        self.streamer_cond = threading.Condition()
        self.streamer = None
        threading.Thread(target=self._pump, name="codeact-output", daemon=True).start()

    @staticmethod
    def _text_stream(fd):
        raw = io.FileIO(fd, "w", closefd=False)
        return io.TextIOWrapper(io.BufferedWriter(raw, 65536), encoding="utf-8",
                                errors="backslashreplace", line_buffering=True)

    def _read_available(self, fd):  # REQUIRES: self.lock held. Returns False at EOF.
        while True:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not data:
                return False
            self._route(self.names[fd], data)

    def _route(self, name, data):  # REQUIRES: self.lock held
        cap = self.capture
        if cap is not None:
            cap.add(name, data)
            if cap.stream_to is not None:
                with self.streamer_cond:
                    self.streamer_cond.notify()
        else:
            try:
                os.write(self.log_fd, data)
            except OSError:
                pass

    def _pump(self):
        import select

        poller = select.poll()
        for fd in self.names:
            poller.register(fd, select.POLLIN)
        while True:
            try:
                ready = poller.poll()
            except InterruptedError:
                continue
            for fd, _ in ready:
                with self.lock:
                    if not self._read_available(fd):
                        poller.unregister(fd)

    def _drain(self):  # REQUIRES: self.lock held
        for fd, _ in self.poller.poll(0):
            self._read_available(fd)

    def start(self, capture):
        self.flush_python()
        with self.lock:
            self._drain()
            self.capture = capture
        if capture.stream_to is not None and self.streamer is None:
            self.streamer = threading.Thread(target=self._stream_loop, name="codeact-stream",
                                             daemon=True)
            self.streamer.start()

    def stop(self):
        """Ends the capture: everything written before this call belongs to the cell."""
        self.flush_python()
        with self.lock:
            self._drain()
            cap, self.capture = self.capture, None
        if cap is not None and cap.stream_to is not None:
            cap.flush_stream(self, final=True)
        return cap

    def repair(self):
        """Undoes what a previous cell may have done to fds 1/2 or sys.stdout/stderr."""
        for fd, w in self.keep.items():
            try:
                intact = os.fstat(fd).st_ino == self.ino[fd]
            except OSError:
                intact = False
            if not intact:
                os.dup2(w, fd)
        if self.stdout.closed:
            self.stdout = self._text_stream(1)
        if self.stderr.closed:
            self.stderr = self._text_stream(2)
        sys.stdout, sys.stderr = self.stdout, self.stderr

    def flush_python(self):
        for stream in (sys.stdout, sys.stderr, self.stdout, self.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        sys.stdout, sys.stderr = self.stdout, self.stderr

    def _stream_loop(self):
        while True:
            with self.streamer_cond:
                while True:
                    cap = self.capture
                    if cap is not None and cap.stream_to is not None and cap.has_pending():
                        break
                    self.streamer_cond.wait()
            # At most 20 frames per second in all: wait 50 ms per frame sent last time.
            wait = cap.last_flush + 0.05 * max(cap.frames_last_flush, 1) - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            cap.flush_stream(self)


# --------------------------------------------------------------------------- connections

class _Connection:
    def __init__(self, kernel, sock):
        self.kernel = kernel
        self.sock = sock
        self.send_lock = threading.Lock()
        self.alive = True

    def send_with_payload(self, obj, key, payload):
        """Sends obj plus obj[key] = payload (ASCII bytes, e.g. base64) without building the
        payload into a JSON string first: one copy of a big file instead of four."""
        head = _encode(obj)
        head = head[:-1] + (b',' if len(head) > 2 else b'') + _encode(key) + b':"'
        tail = b'"}'
        try:
            with self.send_lock:
                self.sock.sendall(_LEN.pack(len(head) + len(payload) + len(tail)) + head)
                self.sock.sendall(payload)
                self.sock.sendall(tail)
            return True
        except OSError:
            self.alive = False
            return False

    def send(self, obj):
        data = _encode(obj)
        try:
            with self.send_lock:
                if len(data) < 65536:
                    self.sock.sendall(_LEN.pack(len(data)) + data)
                else:
                    self.sock.sendall(_LEN.pack(len(data)))
                    self.sock.sendall(data)
            return True
        except OSError:
            self.alive = False
            return False

    def _recv_exact(self, n):
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self.sock.recv_into(view[got:], n - got)
            if k == 0:
                return None
            got += k
        return buf

    def serve(self):
        try:
            while True:
                head = self._recv_exact(4)
                if head is None:
                    break
                (length,) = _LEN.unpack(head)
                if length > MAX_FRAME_BYTES:
                    self.send(_error_reply(None, "InvalidArgument",
                                           "frame of %d bytes exceeds the limit of %d"
                                           % (length, MAX_FRAME_BYTES)))
                    break
                body = self._recv_exact(length)
                if body is None:
                    break
                try:
                    msg = json.loads(body)
                except ValueError as e:
                    self.send(_error_reply(None, "InvalidArgument", "frame is not JSON: %s" % e))
                    continue
                if not isinstance(msg, dict):
                    self.send(_error_reply(None, "InvalidArgument", "frame is not a JSON object"))
                    continue
                if msg.get("type") == "bridge_result":
                    self.kernel.bridge.deliver(self, msg)
                    continue
                self.kernel.dispatch(self, msg)
        except OSError:
            pass
        finally:
            self.alive = False
            self.kernel.bridge.connection_closed(self)
            try:
                self.sock.close()
            except OSError:
                pass


def _error_reply(rid, type_, message):
    return {"id": rid, "type": "reply", "ok": False, "error": {"type": type_, "message": message}}


# --------------------------------------------------------------------------- bridge

class _Bridge:
    """Calls from sandboxed code to host functions, over the running execute's connection."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.lock = threading.Lock()
        self.next_id = 0
        self.waiting = {}  # call_id -> (connection, SimpleQueue); GUARDED_BY(lock)

    def call(self, name, args, kwargs):
        ctx = self.kernel.current_request
        if ctx is None:
            raise ToolError("bridge function %s() can only be called while a cell runs" % name,
                            "FailedPrecondition")
        conn, rid = ctx
        try:
            args = _to_json(list(args))
            kwargs = _to_json(dict(kwargs))
        except _NotJson as e:
            raise TypeError("arguments of %s() must be JSON-serializable: %s" % (name, e)) from None
        answer = queue.SimpleQueue()
        with self.lock:
            self.next_id += 1
            call_id = self.next_id
            self.waiting[call_id] = (conn, answer)
        try:
            if not conn.send({"id": rid, "type": "bridge_call", "call_id": call_id, "name": name,
                              "args": args, "kwargs": kwargs}):
                raise ToolError("%s(): the host connection is closed" % name, "Unavailable")
            msg = answer.get()
        finally:
            with self.lock:
                self.waiting.pop(call_id, None)
        if msg.get("ok"):
            return msg.get("value")
        err = msg.get("error") or {}
        raise ToolError(str(err.get("message") or "%s() failed" % name), err.get("type"))

    def deliver(self, conn, msg):
        with self.lock:
            waiter = self.waiting.get(msg.get("call_id"))
        if waiter is not None:
            waiter[1].put(msg)

    def connection_closed(self, conn):
        with self.lock:
            waiters = [w for w in self.waiting.values() if w[0] is conn]
        for _, answer in waiters:
            answer.put({"ok": False, "error": {"type": "Unavailable",
                                                "message": "the host connection closed"}})

    def make_stub(self, name, signature, doc):
        """A real function with the given signature whose body performs the bridge call."""
        import ast
        import inspect

        if not isinstance(name, str) or not name.isidentifier():
            raise OpError("InvalidArgument", "bridge function name %r is not an identifier" % name)
        src = (signature or "def %s(*args, **kwargs)" % name).strip()
        if src.endswith(":"):
            src = src[:-1]
        try:
            tree = ast.parse(src + ":\n    pass\n")
        except SyntaxError as e:
            raise OpError("InvalidArgument",
                          "signature of %s is not a Python def: %s (%r)" % (name, e.msg, src))
        if (len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef)
                or tree.body[0].decorator_list):
            raise OpError("InvalidArgument",
                          "signature of %s must be a single plain def: %r" % (name, src))
        fdef = tree.body[0]
        fdef.name = name
        body = []
        if doc:
            body.append(ast.Expr(ast.Constant(str(doc))))
        body.append(ast.Return(ast.Call(
            ast.Name("__codeact_bridge__", ast.Load()),
            [ast.Constant(name), ast.Call(ast.Name("locals", ast.Load()), [], [])], [])))
        fdef.body = body
        ast.fix_missing_locations(tree)
        import __future__

        glb = {"__name__": "__main__", "__builtins__": builtins}
        try:
            code = compile(tree, "<bridge %s>" % name, "exec",
                           flags=__future__.annotations.compiler_flag, dont_inherit=True)
            exec(code, glb)
        except Exception as e:
            raise OpError("InvalidArgument", "signature of %s could not be defined: %s: %s"
                          % (name, type(e).__name__, e))
        fn = glb[name]
        params = list(inspect.signature(fn).parameters.values())
        bridge = self

        def caller(fname, loc):
            args, kwargs = [], {}
            for p in params:
                v = loc[p.name]
                if p.kind is p.POSITIONAL_ONLY:
                    args.append(v)
                elif p.kind is p.VAR_POSITIONAL:
                    args.extend(v)
                elif p.kind is p.VAR_KEYWORD:
                    kwargs.update(v)
                elif p.default is p.empty or v is not p.default:
                    kwargs[p.name] = v
            return bridge.call(fname, args, kwargs)

        glb["__codeact_bridge__"] = caller
        return fn


# --------------------------------------------------------------------------- watchdog

class _Watchdog:
    """Interrupts the main thread (SIGINT) when a cell passes its timeout, then every second."""

    def __init__(self, main_ident):
        self.main_ident = main_ident
        self.cond = threading.Condition()
        self.deadline = None  # GUARDED_BY(cond)
        self.fired = False  # GUARDED_BY(cond)
        self.thread = None

    def arm(self, timeout):
        with self.cond:
            self.fired = False
            self.deadline = time.monotonic() + timeout
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="codeact-watchdog",
                                               daemon=True)
                self.thread.start()
            self.cond.notify()

    def disarm(self):
        with self.cond:
            self.deadline = None
            fired = self.fired
            self.fired = False
            return fired

    def _run(self):
        with self.cond:
            while True:
                if self.deadline is None:
                    self.cond.wait()
                    continue
                left = self.deadline - time.monotonic()
                if left > 0:
                    self.cond.wait(left)
                    continue
                self.fired = True
                self.deadline = time.monotonic() + 1.0
                try:
                    signal.pthread_kill(self.main_ident, signal.SIGINT)
                except OSError:
                    pass


# --------------------------------------------------------------------------- state store

class _SpillSink:
    """File-like pickle target: hashes everything, keeps small pickles in memory and spills
    big ones to a temporary file in the objects directory (renamed into place if new)."""

    def __init__(self, spill_path):
        """spill_path None: only hash and count (nothing kept, nothing written)."""
        import hashlib

        self.sha = hashlib.sha256()
        self.size = 0
        self.buf = bytearray()
        self.spill_path = spill_path
        self.fd = None
        self.spilled = False

    def write(self, data):
        # The C pickler hands over bytes, and for big buffers (protocol 5) a PickleBuffer.
        view = memoryview(data)
        try:
            view = view.cast("B")
        except TypeError:  # not contiguous
            view = memoryview(view.tobytes())
        n = view.nbytes
        self.sha.update(view)
        self.size += n
        if self.spill_path is None:
            return n
        if self.fd is None and len(self.buf) + n <= SPILL_BYTES:
            self.buf += view
            return n
        if self.fd is None:  # spill before appending: a big buffer is never copied
            self.fd = os.open(self.spill_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            self.spilled = True
            self._write_fd(memoryview(self.buf))
            self.buf = bytearray()
        self._write_fd(view)
        return n

    def _write_fd(self, view):
        while view:
            k = os.write(self.fd, view)
            view = view[k:]

    def close(self, fsync=False):
        if self.fd is not None:
            if fsync:
                os.fsync(self.fd)
            os.close(self.fd)
            self.fd = None

    def discard(self):
        self.close()
        if self.spilled:
            _unlink_quiet(self.spill_path)


_PICKLER = None


class _NsToken(dict):
    """Stands for the kernel namespace in a pickle; loads as the live namespace."""


def _pickler_class():
    global _PICKLER
    if _PICKLER is None:
        import cloudpickle

        class _StatePickler(cloudpickle.Pickler):
            """cloudpickle, except that functions whose globals are the kernel namespace are
            saved without a copy of the globals they mention and get the live namespace back
            when loaded (so a restored function sees later assignments, like before)."""

            def __init__(self, file, ns):
                super().__init__(file, protocol=5)
                self._ns = ns
                # A dict subclass: the C pickler consults reducer_override only for objects
                # that are not exact dicts, lists, tuples, ...
                self._ns_token = _NsToken()
                self.globals_ref[id(ns)] = self._ns_token

            def reducer_override(self, obj):
                if obj is self._ns_token:
                    return (_rt_namespace, ())
                return super().reducer_override(obj)

            def _dynamic_function_reduce(self, func):
                rv = super()._dynamic_function_reduce(func)
                if func.__globals__ is self._ns and len(rv) >= 3:
                    state = rv[2]
                    if (isinstance(state, tuple) and len(state) == 2
                            and isinstance(state[1], dict) and "__globals__" in state[1]):
                        slots = dict(state[1])
                        slots["__globals__"] = {}
                        rv = (rv[0], rv[1], (state[0], slots)) + tuple(rv[3:])
                return rv

        _PICKLER = _StatePickler
    return _PICKLER


def _user_codes(obj, ns):
    """Code objects of user-defined functions/classes reachable from obj (one level)."""
    codes = []
    if isinstance(obj, types.MethodType):
        obj = obj.__func__
    if isinstance(obj, types.FunctionType):
        if obj.__globals__ is ns:
            codes.append(obj.__code__)
        return codes
    cls = obj if isinstance(obj, type) else type(obj)
    if getattr(cls, "__module__", None) != "__main__":
        return codes
    for klass in cls.__mro__:
        if getattr(klass, "__module__", None) != "__main__":
            continue
        for attr in list(vars(klass).values()):
            for f in (attr, getattr(attr, "__func__", None), getattr(attr, "fget", None),
                      getattr(attr, "fset", None), getattr(attr, "fdel", None)):
                if isinstance(f, types.FunctionType) and f.__globals__ is ns:
                    codes.append(f.__code__)
    return codes


class _Store:
    """The snapshot on disk and what the kernel knows about it. Main thread only."""

    def __init__(self, state_dir, fsync):
        self.dir = state_dir
        self.objects_dir = os.path.join(state_dir, "objects")
        self.exec_dir = os.path.join(state_dir, "executions")
        self.manifest_path = os.path.join(state_dir, "manifest.json")
        self.fsync = fsync
        self.cell = 0
        self.entries = {}  # name -> manifest entry
        self.not_persisted = {}  # name -> reason
        self.executions = {}  # execution id -> relative record path (insertion ordered)
        self.committed = {}  # name -> the object examined at the last commit (identity)
        self.restore_failed = set()  # names whose entries are kept although absent

    def load_manifest(self):
        try:
            with open(self.manifest_path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return None
        m = json.loads(raw)
        if not isinstance(m, dict) or m.get("version") != 1:
            raise ValueError("unsupported manifest version %r" % (m.get("version"),))
        return m

    def object_file(self, name, seq, variant=0):
        stem = name
        if len(name.encode("utf-8")) > 150:
            import hashlib

            stem = "h" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:40]
        if variant:
            return "objects/%s.%d-%d.pkl" % (stem, seq, variant)
        return "objects/%s.%d.pkl" % (stem, seq)

    @staticmethod
    def record_file(execution_id):
        import hashlib

        return "executions/%s.json" % hashlib.sha256(
            execution_id.encode("utf-8", "surrogatepass")).hexdigest()[:40]

    def remove_orphans(self):
        """Deletes object/record files the manifest does not reference (crash leftovers)."""
        keep = {e.get("file") for e in self.entries.values() if e.get("file")}
        keep.update(self.executions.values())
        for sub in ("objects", "executions"):
            d = os.path.join(self.dir, sub)
            try:
                names = os.listdir(d)
            except OSError:
                continue
            for fn in names:
                if "%s/%s" % (sub, fn) not in keep:
                    _unlink_quiet(os.path.join(d, fn))
        for fn in os.listdir(self.dir):
            if fn.startswith("manifest.json.tmp"):
                _unlink_quiet(os.path.join(self.dir, fn))

    def write_manifest(self, cell, entries, executions, not_persisted):
        data = _encode({"version": 1, "cell": cell, "entries": entries,
                        "executions": executions, "not_persisted": not_persisted})
        tmp = self.manifest_path + ".tmp-%d" % os.getpid()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        if os.environ.get("CODEACT_TEST_CRASH_BEFORE_COMMIT") == "1":
            os._exit(137)
        os.replace(tmp, self.manifest_path)
        if self.fsync:
            _fsync_dir(self.dir)
        if os.environ.get("CODEACT_TEST_CRASH_AFTER_COMMIT") == "1":
            os._exit(137)


# --------------------------------------------------------------------------- the kernel

class Kernel:
    def __init__(self, sandbox_id, storage, workspace, socket_path, fsync, persistence):
        self.sandbox_id = sandbox_id
        self.storage = storage
        os.makedirs(workspace, exist_ok=True)
        self.workspace = os.path.realpath(workspace)
        self.state_dir = os.path.join(self.workspace, "state")
        self.output_dir = os.path.join(self.workspace, "output")
        self.python_dir = os.path.join(self.workspace, "python")
        self.socket_path = socket_path
        self.persistence = persistence
        self.store = _Store(self.state_dir, fsync)
        self.ns = {"__name__": "__main__", "__doc__": None, "__builtins__": builtins}
        self.provided = {}  # name -> object put there by the host (bridge stubs, define)
        self.cell = 0
        self.pending_dirty = set()  # names touched by cells not yet committed
        self.records = {}  # execution id -> (reply, size), kept in memory only
        self.once_lock = threading.Lock()
        self.once_running = {}  # record path -> threading.Event, for ops running with an id
        self.once_writes = 0
        self.records_bytes = 0
        self.restored = []
        self.restore_errors = []
        self.jobs = queue.SimpleQueue()
        self.bridge = _Bridge(self)
        self.current_request = None  # (connection, id) of the running execute
        self.in_user = False
        self.main_ident = threading.get_ident()
        self.pid = os.getpid()
        self.watchdog = _Watchdog(self.main_ident)
        self.listener = None
        self.log_fd = 2
        self.router = None
        self.package_re = None
        self._plain_cells = []
        self._sigint = None
        # The output dir as the last cell left it; reused as the next cell's "before" unless an
        # op that writes files (bash, files.write, install) ran in between.
        self._output_snapshot = None
        self._output_touched = True

    # ----------------------------------------------------------------- startup

    def start(self):
        t0 = time.perf_counter()
        for d in (self.state_dir, self.output_dir, self.python_dir):
            os.makedirs(d, exist_ok=True)
        self._point_current()
        if self.python_dir not in sys.path:
            sys.path.insert(0, self.python_dir)
        try:
            import site

            site.addsitedir(self.python_dir)  # .pth files of installed packages
        except Exception:
            pass
        env = os.environ
        env["PYTHONPATH"] = os.pathsep.join(
            [self.python_dir] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        env["PATH"] = os.path.join(self.python_dir, "bin") + os.pathsep + env.get("PATH", "")
        os.chdir(self.output_dir)
        try:
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.close(devnull)
        except OSError:
            pass
        self.log_fd = os.dup(2)
        os.set_inheritable(self.log_fd, False)
        self.router = _OutputRouter(self.log_fd)
        builtins.ToolError = ToolError
        self._sigint = self._on_sigint
        self._install_sigint()
        if self.persistence:
            self._restore()
        self._listen()
        _log("codeact-kernel ready (sandbox %s, cell %d, %d restored, %d restore errors, %.1f ms)"
             % (self.sandbox_id, self.cell, len(self.restored), len(self.restore_errors),
                (time.perf_counter() - t0) * 1000))

    def _point_current(self):
        link = os.path.join(self.storage, ".current")
        tmp = "%s.tmp-%d" % (link, os.getpid())
        try:
            if os.path.islink(link) and os.readlink(link) == self.sandbox_id:
                return
            _unlink_quiet(tmp)
            os.symlink(self.sandbox_id, tmp)
            os.replace(tmp, link)
        except OSError as e:
            _unlink_quiet(tmp)
            _log("codeact-kernel: could not point %s at %s: %s" % (link, self.sandbox_id, e))

    def _listen(self):
        d = os.path.dirname(self.socket_path)
        if d:
            os.makedirs(d, exist_ok=True)
        _unlink_quiet(self.socket_path)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(self.socket_path)
        os.chmod(self.socket_path, 0o666)
        s.listen(64)
        self.listener = s
        threading.Thread(target=self._accept_loop, name="codeact-accept", daemon=True).start()

    def _accept_loop(self):
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                if self.listener is None or self.listener.fileno() < 0:
                    return
                time.sleep(0.01)
                continue
            conn = _Connection(self, sock)
            threading.Thread(target=conn.serve, name="codeact-conn", daemon=True).start()

    def _install_sigint(self):
        # User code may have replaced the handler; one cheap check per cell (_signal: no enum
        # conversion).
        import _signal

        if _signal.getsignal(signal.SIGINT) is not self._sigint:
            signal.signal(signal.SIGINT, self._sigint)

    def _on_sigint(self, signum, frame):
        if self.in_user:
            raise KeyboardInterrupt
        # Outside user code the kernel ignores interrupts (a late timeout signal, ^C).

    # ----------------------------------------------------------------- restore

    def _restore(self):
        st = self.store
        try:
            m = st.load_manifest()
            if m is not None:
                cell = int(m.get("cell") or 0)
                entries = {str(n): dict(e) for n, e in (m.get("entries") or {}).items()}
                executions = {str(k): str(v) for k, v in (m.get("executions") or {}).items()}
                not_persisted = dict(m.get("not_persisted") or {})
        except Exception as e:
            # Cannot happen through the kernel's own writes (rename is atomic); a disk that lost
            # data after a power cut can. Keep everything aside for a human, start empty.
            suffix = ".unreadable-%d" % int(time.time())
            for src in (st.manifest_path, st.objects_dir, st.exec_dir):
                try:
                    os.rename(src, src + suffix)
                except OSError:
                    pass
            self.restore_errors.append(
                {"name": "<manifest>", "reason": "state/manifest.json is unreadable (%s); the "
                 "state was moved aside to state/*%s and the kernel starts empty"
                 % (_short(e), suffix)})
            return
        if m is None:
            return
        st.cell = self.cell = cell
        st.entries = entries
        st.executions = executions
        for name, reason in not_persisted.items():
            self.restore_errors.append(
                {"name": name, "reason": "was not persisted: %s" % reason})
        # Modules and imported names first, then data, then functions, then classes (so that a
        # class mutated after its instances were saved ends with its latest definition).
        order = {"module": 0, "data": 1, "function": 2, "class": 3}

        def rank(n):
            e = st.entries[n]
            return (0 if not e.get("file") else order.get(e.get("kind"), 1), n)

        import hashlib
        import pickle

        for name in sorted(st.entries, key=rank):
            e = st.entries[name]
            try:
                if not e.get("file") and e.get("qualname"):
                    obj = _resolve_ref(e["module"], e["qualname"])
                elif not e.get("file"):
                    import importlib

                    obj = importlib.import_module(e["module"])
                else:
                    # Hash in chunks, then unpickle from the file: a big array needs its own size
                    # in memory, not twice that. Big objects skip the check: the atomic commit
                    # already guarantees complete files, and hashing 200 MB would double the
                    # restore time; a damaged big pickle still fails to load and is reported.
                    with open(os.path.join(st.dir, e["file"]), "rb") as f:
                        if e.get("sha256") and (e.get("size") or 0) <= VERIFY_MAX_BYTES:
                            h = hashlib.sha256()
                            for chunk in iter(lambda: f.read(1 << 20), b""):
                                h.update(chunk)
                            if h.hexdigest() != e["sha256"]:
                                raise ValueError("%s is corrupt (sha256 mismatch)" % e["file"])
                            f.seek(0)
                        obj = pickle.load(f)
            except BaseException as ex:  # anything a user class's __setstate__ may raise
                self.restore_errors.append(
                    {"name": name, "reason": "%s: %s" % (type(ex).__name__, _short(ex))})
                st.restore_failed.add(name)
                continue
            self.ns[name] = obj
            st.committed[name] = obj
            self.restored.append(name)
        st.remove_orphans()

    # ----------------------------------------------------------------- dispatch

    def dispatch(self, conn, msg):
        rid = msg.get("id")
        op = msg.get("op")
        if op == "hello":
            self._reply(conn, rid, self.op_hello)
        elif op in MAIN_OPS:
            self.jobs.put((conn, msg))
        elif op in THREAD_OPS:
            handler = getattr(self, "op_" + op.replace(".", "_"))
            if op in ("bash", "install", "files.write"):
                handler = self._touching_output(handler)
            threading.Thread(target=self._reply, name="codeact-op", daemon=True,
                             args=(conn, rid, handler, msg)).start()
        else:
            conn.send(_error_reply(rid, "Unimplemented", "unknown op %r" % (op,)))

    def _touching_output(self, handler):
        """Marks the output dir as changed outside cells (before and after the op, which may
        run while a cell does), so the next cell rescans it instead of reusing its snapshot."""
        def run(msg):
            self._output_touched = True
            try:
                return handler(msg)
            finally:
                self._output_touched = True
        return run

    def _reply(self, conn, rid, handler, *args):
        try:
            reply = dict(handler(*args))
            reply.update(id=rid, type="reply", ok=True)  # envelope keys always win
            payload = reply.pop("data_b64", None)
            if isinstance(payload, bytes):
                conn.send_with_payload(reply, "data_b64", payload)
                return reply
            if payload is not None:
                reply["data_b64"] = payload
        except OpError as e:
            reply = _error_reply(rid, e.type, e.message)
        except Exception as e:
            import traceback

            _log("codeact-kernel: internal error: " + "".join(traceback.format_exception(e)))
            reply = _error_reply(rid, "Internal", "%s: %s" % (type(e).__name__, e))
        conn.send(reply)
        return reply

    def serve_forever(self):
        while True:
            try:
                conn, msg = self.jobs.get()
            except KeyboardInterrupt:
                continue
            op = msg.get("op")
            if op == "execute":
                self._reply(conn, msg.get("id"), self.op_execute, conn, msg)
            elif op == "shutdown":
                self._reply(conn, msg.get("id"), lambda: {"shutting_down": True})
                self.shutdown()
            else:
                self._reply(conn, msg.get("id"), getattr(self, "op_" + op.replace(".", "_")),
                            msg)

    def shutdown(self):
        if self.persistence and self.pending_dirty:
            try:
                self._commit(self.cell, set(self.pending_dirty))
            except Exception as e:
                _log("codeact-kernel: final commit failed: %s" % e)
        try:
            self.listener.close()
        except OSError:
            pass
        _unlink_quiet(self.socket_path)
        self.router.flush_python()
        os._exit(0)

    # ----------------------------------------------------------------- names

    def _user_names(self):
        prov = self.provided
        return [n for n, v in self.ns.items()
                if not n.startswith("_") and not (n in prov and prov[n] is v)]

    def _closure_names(self, names):
        """names plus every name reachable through user functions/classes they refer to."""
        ns = self.ns
        result = set(names)
        stack = [n for n in result if n in ns]
        seen = set()
        while stack:
            obj = ns.get(stack.pop())
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            for code in _user_codes(obj, ns):
                for n in _code_names(code):
                    if n not in result:
                        result.add(n)
                        if n in ns:
                            stack.append(n)
        return result

    # ----------------------------------------------------------------- commit

    def _serialize(self, name, obj, seq, old=None):
        """Pickles obj into a _SpillSink (hash, size, bytes or spill file); raises if obj
        cannot be pickled. When the saved version is big, a first pass only hashes: if nothing
        changed (a big array that a cell only read), nothing is written at all. Returns the
        hash-only sink in that case."""
        st = self.store
        if old and old.get("sha256") and (old.get("size") or 0) > SPILL_BYTES:
            probe = self._serialize_into(_SpillSink(None), obj)
            if probe.sha.hexdigest() == old["sha256"]:
                return probe
        spill = os.path.join(st.objects_dir, ".spill-%s.%d" % (name[:100], seq))
        return self._serialize_into(_SpillSink(spill), obj)

    def _serialize_into(self, sink, obj):
        try:
            if type(obj) in _PRIMITIVES:
                import pickle

                pickle.Pickler(sink, protocol=5).dump(obj)
            else:
                if isinstance(obj, type) and obj.__module__ == "__main__":
                    # Pickling an instance makes copyreg cache __slotnames__ on its class; do
                    # it first so the class's bytes do not change the next time.
                    import copyreg

                    copyreg._slotnames(obj)
                _pickler_class()(sink, self.ns).dump(obj)
        except BaseException:
            sink.discard()
            raise
        return sink

    def _commit(self, seq, candidates, make_record=None):
        """Writes the snapshot for cell seq. candidates: names to examine besides new and
        rebound ones. make_record(not_persisted) returns (execution_id, reply payload) or None;
        it is called once the objects are written, so the recorded reply can list what this
        very commit could not persist. The record is committed atomically with the state."""
        st = self.store
        ns = self.ns
        if not os.path.isdir(st.objects_dir):
            os.makedirs(st.objects_dir, exist_ok=True)
        user = self._user_names()
        user_set = set(user)
        entries = dict(st.entries)
        not_persisted = {n: r for n, r in st.not_persisted.items() if n in user_set}
        committed = dict(st.committed)
        obsolete = []
        wrote_objects = False
        for name in list(entries):
            if name not in user_set and name not in st.restore_failed:
                f = entries.pop(name).get("file")
                if f:
                    obsolete.append(f)
                committed.pop(name, None)
        for name in list(committed):
            if name not in user_set:
                del committed[name]
        for name in user:
            obj = ns[name]
            if name in committed and committed[name] is obj and name not in candidates:
                continue
            committed[name] = obj
            old = entries.get(name)
            entry = None
            if obj is ns:
                not_persisted[name] = ("is the namespace itself (globals()); rebind it with "
                                       "%s = globals()" % name)
                if old is not None:
                    entries.pop(name)
                    if old.get("file"):
                        obsolete.append(old["file"])
                continue
            if isinstance(obj, types.ModuleType) and sys.modules.get(obj.__name__) is obj:
                entry = {"kind": "module", "file": None, "module": obj.__name__,
                         "type": "module", "sha256": None, "size": 0}
            else:
                ref = _import_ref(obj)
                if ref is not None:  # imported function/class: stored as a reference
                    entry = {"kind": _kind(obj), "file": None, "module": ref[0],
                             "qualname": ref[1], "type": _type_name(obj), "sha256": None,
                             "size": 0}
            if entry is not None:
                if old and old.get("file"):
                    obsolete.append(old["file"])
                entries[name] = entry
                not_persisted.pop(name, None)
                st.restore_failed.discard(name)
                continue
            try:
                sink = self._serialize(name, obj, seq, old)
            except BaseException as e:
                if isinstance(e, KeyboardInterrupt):
                    reason = "interrupted while pickling"
                else:
                    reason = "%s: %s" % (type(e).__name__, _short(e, 200))
                not_persisted[name] = reason
                if old is not None:
                    entries.pop(name)
                    if old.get("file"):
                        obsolete.append(old["file"])
                st.restore_failed.discard(name)
                continue
            sha = sink.sha.hexdigest()
            kind = _kind(obj)
            not_persisted.pop(name, None)
            st.restore_failed.discard(name)
            if old and old.get("sha256") == sha and old.get("kind") == kind and old.get("file"):
                sink.discard()
                continue
            rel = st.object_file(name, seq)
            if old and old.get("file") == rel:  # never overwrite a file the manifest uses
                rel = st.object_file(name, seq, 1)
            path = os.path.join(st.dir, rel)
            try:
                if sink.spilled:
                    sink.close(fsync=st.fsync)
                    os.replace(sink.spill_path, path)
                else:
                    _write_atomic(path, sink.buf, st.fsync)
            except BaseException:
                sink.discard()
                raise
            wrote_objects = True
            if old and old.get("file") and old["file"] != rel:
                obsolete.append(old["file"])
            entries[name] = {"kind": kind, "file": rel, "type": _type_name(obj),
                             "sha256": sha, "size": sink.size}
        executions = st.executions
        wrote_record = False
        record = make_record(not_persisted) if make_record is not None else None
        if record is not None:
            exec_id, payload = record
            rel = st.record_file(exec_id)
            if not os.path.isdir(st.exec_dir):
                os.makedirs(st.exec_dir, exist_ok=True)
            _write_atomic(os.path.join(st.dir, rel), _encode(payload), st.fsync)
            wrote_record = True
            executions = dict(executions)
            executions.pop(exec_id, None)
            executions[exec_id] = rel
            while len(executions) > MAX_EXECUTION_RECORDS:
                oldest = next(iter(executions))
                obsolete.append(executions.pop(oldest))
        if st.fsync:
            if wrote_objects:
                _fsync_dir(st.objects_dir)
            if wrote_record:
                _fsync_dir(st.exec_dir)
        # A cell that changed nothing persistent (no object, no record, same entries) costs no
        # write at all: the snapshot of the last changing cell still describes the state.
        if (wrote_objects or wrote_record or entries != st.entries
                or not_persisted != st.not_persisted):
            st.write_manifest(seq, entries, executions, not_persisted)
            st.cell = seq
        st.entries = entries
        st.executions = executions
        st.not_persisted = not_persisted
        st.committed = committed
        keep = {e.get("file") for e in entries.values()}
        for rel in obsolete:
            if rel and rel not in keep and rel not in executions.values():
                _unlink_quiet(os.path.join(st.dir, rel))

    # ----------------------------------------------------------------- ops

    def op_hello(self):
        return {"kernel_version": KERNEL_VERSION, "protocol": PROTOCOL_VERSION,
                "python_version": sys.version.split()[0], "pid": os.getpid(),
                "sandbox_id": self.sandbox_id, "cell": self.store.cell,
                "restored": list(self.restored), "restore_errors": list(self.restore_errors),
                "persistence": self.persistence}

    def _recorded(self, exec_id):
        kept = self.records.get(exec_id)
        if kept is not None:
            return kept[0]
        rel = self.store.executions.get(exec_id)
        if rel is None:
            return None
        try:
            with open(os.path.join(self.store.dir, rel), "rb") as f:
                return json.loads(f.read())
        except (OSError, ValueError) as e:
            raise OpError("DataLoss", "execution %r was committed but its recorded reply %s is "
                          "unreadable (%s); it was not run again" % (exec_id, rel, e))

    def op_execute(self, conn, msg):
        t0 = time.perf_counter()
        code = msg.get("code")
        if not isinstance(code, str):
            raise OpError("InvalidArgument", "execute needs a string field \"code\"")
        exec_id = msg.get("execution_id")
        if exec_id is not None and not isinstance(exec_id, str):
            raise OpError("InvalidArgument", "execution_id must be a string, got %r" % (exec_id,))
        if exec_id:
            recorded = self._recorded(exec_id)
            if recorded is not None:
                out = dict(recorded)
                out["replayed"] = True
                return out
        try:
            timeout = float(msg.get("timeout") or 0)
            max_out = int(msg.get("max_output_bytes") or DEFAULT_MAX_OUTPUT)
        except (TypeError, ValueError):
            raise OpError("InvalidArgument", "timeout and max_output_bytes must be numbers")
        if timeout < 0 or max_out < 1:
            raise OpError("InvalidArgument",
                          "timeout must be >= 0 and max_output_bytes >= 1 (got %r, %r)"
                          % (timeout, max_out))
        variables = msg.get("variables") or {}
        if not isinstance(variables, dict):
            raise OpError("InvalidArgument", "variables must be an object {name: value}")
        import keyword

        for k in variables:
            if not k.isidentifier() or keyword.iskeyword(k):
                raise OpError("InvalidArgument", "variable name %r is not a Python identifier"
                              % (k,))
        persist = msg.get("persist", True) is not False
        stream_to = (conn, msg.get("id")) if msg.get("stream") else None

        self.cell += 1
        seq = self.cell
        before = self._output_snapshot
        if before is None or self._output_touched:
            before = self._scan_output()
        capture = _CellOutput(max_out, stream_to)
        self.router.start(capture)
        self.current_request = (conn, msg.get("id"))
        try:
            self.ns.update(variables)
            status, result, error, names, timed_out = self._run_cell(code, seq, timeout)
            if os.getpid() != self.pid:  # user code forked and the child came back here
                os._exit(0)
        finally:
            self.current_request = None
            self.router.stop()
        outputs, fig_errors = self._save_figures(seq)
        if fig_errors:
            capture.bufs["stderr"].add(fig_errors.encode("utf-8", "replace"))
        files = self._changed_files(before)
        reply = {"status": status, "result": result, "error": error}
        truncated = {}
        for name in ("stdout", "stderr"):
            text, omitted = capture.bufs[name].text()
            reply[name] = text
            if omitted:
                truncated[name] = omitted
        reply.update({"outputs": outputs, "files": files, "truncated": truncated,
                      "execution_id": exec_id, "cell": seq, "replayed": False,
                      "timed_out": timed_out})
        candidates = self._closure_names(names | set(variables)) | self.pending_dirty
        reply["duration_ms"] = _ms(t0)

        def final_reply(not_persisted):
            reply["not_persisted"] = [{"name": n, "reason": r}
                                      for n, r in sorted(not_persisted.items())]
            return (exec_id, reply) if exec_id else None

        if self.persistence and persist:
            try:
                self._commit(seq, candidates, final_reply)
                self.pending_dirty.clear()
                self._forget(exec_id)
            except Exception as e:
                reply["persist_error"] = "state not saved: %s: %s" % (type(e).__name__, e)
                self.pending_dirty |= candidates
                _log("codeact-kernel: commit of cell %d failed: %s" % (seq, e))
                final_reply(self.store.not_persisted)
                if exec_id:
                    self._remember(exec_id, reply)
        else:
            self.pending_dirty |= candidates
            final_reply(self.store.not_persisted if self.persistence else {})
            if exec_id:
                self._remember(exec_id, reply)
        return reply

    def _remember(self, exec_id, reply):
        """Keeps a reply in memory (persist=false, persistence off, failed commit): the last
        MAX_EXECUTION_RECORDS ids, within MEMORY_RECORDS_BYTES of output."""
        self._forget(exec_id)
        size = 256 + sum(len(reply.get(k) or "") for k in ("stdout", "stderr", "result"))
        self.records[exec_id] = (reply, size)
        self.records_bytes += size
        while self.records and (len(self.records) > MAX_EXECUTION_RECORDS
                                or self.records_bytes > MEMORY_RECORDS_BYTES):
            self._forget(next(iter(self.records)))

    def _forget(self, exec_id):
        old = self.records.pop(exec_id, None)
        if old is not None:
            self.records_bytes -= old[1]

    def _run_cell(self, code, seq, timeout):
        """Runs one cell on the main thread. Returns (status, result, error, names, timed_out)."""
        import ast
        import linecache

        filename = "<cell %d>" % seq
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        # Sources stay for tracebacks and inspect.getsource; cells that define nothing are
        # forgotten after a while.
        if not any(w in code for w in ("def ", "class ", "lambda")):
            self._plain_cells.append(filename)
            if len(self._plain_cells) > 200:
                linecache.cache.pop(self._plain_cells.pop(0), None)
        names = set()
        try:
            tree = ast.parse(code, filename, "exec")
            expr = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                expr = ast.Expression(tree.body.pop().value)
            body = compile(tree, filename, "exec")
            _code_names(body, names)
            expr_code = None
            if expr is not None:
                expr_code = compile(expr, filename, "eval")
                _code_names(expr_code, names)
        except (SyntaxError, ValueError, OverflowError, RecursionError) as e:
            return "error", None, self._format_error(e, None, False, 0), names, False
        value = result = None
        timed_out = False
        self._install_sigint()
        self.router.repair()
        if timeout > 0:
            self.watchdog.arm(timeout)
        try:
            try:
                self.in_user = True
                exec(body, self.ns)
                if expr_code is not None:
                    value = eval(expr_code, self.ns)
                    if value is not None:  # a user __repr__ is user code too
                        result = _bounded_repr(value, RESULT_REPR_CAP)
            finally:
                self.in_user = False
                if timeout > 0:
                    timed_out = self.watchdog.disarm()
        except BaseException as e:
            if timeout > 0 and not timed_out:
                timed_out = self.watchdog.disarm()
            # Past its timeout the cell timed out, whatever user code made of the interrupt.
            return "error", None, self._format_error(e, e.__traceback__, timed_out, timeout), \
                names, timed_out
        return "ok", result, None, names, False

    def _format_error(self, e, tb, timed_out, timeout):
        import traceback

        te = traceback.TracebackException(type(e), e, tb, compact=True)
        _strip_kernel_frames(te, set())
        lines = list(te.format())
        if timed_out:
            message = "cell exceeded its timeout of %gs" % timeout
            type_name = "TimeoutError"
            if lines:
                lines[-1] = "TimeoutError: %s\n" % message
        else:
            type_name = _exc_type_name(type(e))
            try:
                message = str(e)
            except BaseException:
                message = "<str() of the exception failed>"
        return {"type": type_name, "message": message, "traceback": "".join(lines)}

    def _save_figures(self, seq):
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return [], ""
        outputs, errors = [], []
        try:
            nums = list(plt.get_fignums())
        except Exception as e:
            return [], "[codeact] could not list matplotlib figures: %s\n" % e
        for k, num in enumerate(nums, 1):
            fname = "figure-%d-%d.png" % (seq, k)
            n = 1
            while os.path.exists(os.path.join(self.output_dir, fname)):
                # cell numbers restart from the last snapshot after a crash: never overwrite
                n += 1
                fname = "figure-%d-%d-%d.png" % (seq, k, n)
            try:
                fig = plt.figure(num)
                fig.savefig(os.path.join(self.output_dir, fname), format="png")
                outputs.append({"type": "image/png", "path": "/output/" + fname})
            except Exception as e:
                errors.append("[codeact] could not save figure %s: %s: %s\n"
                              % (num, type(e).__name__, e))
            finally:
                try:
                    plt.close(num)
                except Exception:
                    pass
        return outputs, "".join(errors)

    def _scan_output(self):
        snap = {}
        stack = [self.output_dir]
        while stack and len(snap) < OUTPUT_SCAN_LIMIT:
            d = stack.pop()
            try:
                it = os.scandir(d)
            except OSError:
                continue
            with it:
                for ent in it:
                    try:
                        if ent.is_dir(follow_symlinks=False):
                            stack.append(ent.path)
                        elif ent.is_file(follow_symlinks=False):
                            s = ent.stat(follow_symlinks=False)
                            snap[ent.path] = (s.st_mtime_ns, s.st_size, s.st_ino)
                    except OSError:
                        continue
        return snap

    def _changed_files(self, before):
        self._output_touched = False
        after = self._output_snapshot = self._scan_output()
        return sorted(self._display(p) for p, sig in after.items() if before.get(p) != sig)

    def op_vars(self, msg):
        st = self.store
        out = []
        for name in sorted(self._user_names()):
            obj = self.ns[name]
            item = {"name": name, "type": _type_name(obj), "kind": _kind(obj)}
            entry = st.entries.get(name)
            if not self.persistence:
                item.update(persisted=False, reason="persistence is disabled")
            elif name in st.not_persisted and st.committed.get(name) is obj:
                item.update(persisted=False, reason=st.not_persisted[name])
            elif entry is not None and st.committed.get(name) is obj \
                    and name not in self.pending_dirty:
                item["persisted"] = True
                if entry.get("file"):
                    item["size"] = entry.get("size")
            else:
                item.update(persisted=False, reason="not saved yet (cell ran with persist=false)")
            item["preview"] = _bounded_repr(obj, PREVIEW_CAP)
            out.append(item)
        return {"variables": out}

    def op_get(self, msg):
        name = msg.get("name")
        if not isinstance(name, str) or name not in self.ns or name == "__builtins__":
            raise OpError("NotFound", "no variable named %r in the sandbox namespace" % (name,))
        obj = self.ns[name]
        try:
            value = _to_json(obj, GET_VALUE_MAX_ELEMENTS, 0, [GET_VALUE_BUDGET])
        except (_NotJson, RecursionError):
            value = None
        except Exception:
            value = None
        # "value_type", not "type": the envelope's "type" is "reply".
        return {"name": name, "value_type": _type_name(obj),
                "repr": _bounded_repr(obj, GET_REPR_CAP), "value": value}

    def op_clear(self, msg):
        cleared = sorted(self._user_names())
        keep = {"__name__", "__doc__", "__builtins__"}
        for name in list(self.ns):
            if name in keep:
                continue
            if name in self.provided and self.provided[name] is self.ns[name]:
                continue
            del self.ns[name]
        self.ns["__builtins__"] = builtins
        st = self.store
        self.pending_dirty.clear()
        if self.persistence:
            old_files = [e.get("file") for e in st.entries.values() if e.get("file")]
            st.write_manifest(st.cell, {}, st.executions, {})
            for rel in old_files:
                _unlink_quiet(os.path.join(st.dir, rel))
        st.entries, st.not_persisted, st.committed = {}, {}, {}
        st.restore_failed.clear()
        return {"cleared": cleared}

    def op_define(self, msg):
        source = msg.get("source")
        if not isinstance(source, str):
            raise OpError("InvalidArgument", "define needs a string field \"source\"")
        before = {k: v for k, v in self.ns.items()}
        err = None
        try:
            code = compile(source, "<define>", "exec")
            # The source may touch user variables too: re-examine them at the next commit.
            self.pending_dirty |= _code_names(code)
            self._install_sigint()
            self.in_user = True
            try:
                exec(code, self.ns)
            finally:
                self.in_user = False
        except BaseException as e:
            err = e
        defined = []
        for k, v in list(self.ns.items()):
            if k.startswith("__") or (k in before and before[k] is v):
                continue
            self.provided[k] = v
            defined.append(k)
        if err is not None:
            info = self._format_error(err, err.__traceback__, False, 0)
            raise OpError("InvalidArgument", "define failed: %s: %s\n%s"
                          % (info["type"], info["message"], info["traceback"]))
        return {"defined": sorted(defined)}

    def op_bridge_register(self, msg):
        functions = msg.get("functions")
        if not isinstance(functions, list):
            raise OpError("InvalidArgument", "bridge.register needs a list \"functions\"")
        stubs = []
        for spec in functions:
            if not isinstance(spec, dict):
                raise OpError("InvalidArgument", "each function must be an object")
            stubs.append((spec.get("name"),
                          self.bridge.make_stub(spec.get("name"), spec.get("signature"),
                                                spec.get("doc"))))
        for name, fn in stubs:
            self.ns[name] = fn
            self.provided[name] = fn
        return {"registered": [n for n, _ in stubs]}

    # ----------------------------------------------------------------- files

    def _display(self, real):
        out = self.output_dir
        if real == out:
            return "/output"
        if real.startswith(out + os.sep):
            return "/output/" + real[len(out) + 1:]
        return real

    def _resolve(self, path, what="path"):
        if not isinstance(path, str) or not path:
            raise OpError("InvalidArgument", "%s must be a non-empty string" % what)
        if "\x00" in path:
            raise OpError("InvalidArgument", "%s contains a NUL byte" % what)
        if path == "/output" or path.startswith("/output/"):
            mapped = self.output_dir + path[len("/output"):]
        elif os.path.isabs(path):
            mapped = path
        else:
            mapped = os.path.join(self.output_dir, path)
        real = os.path.realpath(mapped)
        ws = self.workspace
        if real != ws and not real.startswith(ws + os.sep):
            raise OpError("PermissionDenied",
                          "%s %r resolves to %s, outside the sandbox workspace; allowed: /output "
                          "and %s" % (what, path, real, ws))
        return real

    def op_files_list(self, msg):
        path = msg.get("path")
        root = self._resolve(path) if path not in (None, "") else self.output_dir
        files = []
        if os.path.isfile(root):
            s = os.stat(root)
            files.append({"path": self._display(root), "size": s.st_size, "mtime": s.st_mtime})
        elif not os.path.isdir(root):
            raise OpError("NotFound", "%s does not exist" % self._display(root))
        else:
            for d, dirs, fnames in os.walk(root):
                for fn in fnames:
                    p = os.path.join(d, fn)
                    try:
                        s = os.lstat(p)
                    except OSError:
                        continue
                    if not os.path.isfile(p) or os.path.islink(p):
                        continue
                    files.append({"path": self._display(p), "size": s.st_size,
                                  "mtime": s.st_mtime})
        files.sort(key=lambda f: f["path"])
        return {"root": self._display(root), "files": files}

    def op_files_read(self, msg):
        import base64

        real = self._resolve(msg.get("path"))
        if os.path.isdir(real):
            raise OpError("InvalidArgument", "%s is a directory" % self._display(real))
        try:
            size = os.path.getsize(real)
            if size > READ_FILE_LIMIT:
                raise OpError("ResourceExhausted",
                              "%s is %d bytes; files.read returns at most %d bytes in one reply; "
                              "copy bigger files out of the sandbox's volume instead"
                              % (self._display(real), size, READ_FILE_LIMIT))
            with open(real, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise OpError("NotFound", "%s does not exist" % self._display(real))
        except PermissionError as e:
            raise OpError("PermissionDenied", "%s: %s" % (self._display(real), e.strerror))
        size = len(data)
        return {"path": self._display(real), "size": size,
                "data_b64": base64.b64encode(data)}  # bytes: spliced into the frame

    def op_files_write(self, msg):
        import base64
        import binascii

        real = self._resolve(msg.get("path"))
        b64 = msg.get("data_b64")
        if not isinstance(b64, str):
            raise OpError("InvalidArgument", "files.write needs a string field \"data_b64\"")
        try:
            data = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError) as e:
            raise OpError("InvalidArgument", "data_b64 is not valid base64: %s" % e)
        if os.path.isdir(real):
            raise OpError("InvalidArgument", "%s is a directory" % self._display(real))
        parent = os.path.dirname(real)
        if not os.path.isdir(parent):
            if msg.get("make_dirs", True) is False:
                raise OpError("NotFound", "directory %s does not exist (make_dirs is false)"
                              % self._display(parent))
            os.makedirs(parent, exist_ok=True)
        try:
            _write_atomic(real, data, self.store.fsync)
        except PermissionError as e:
            raise OpError("PermissionDenied", "%s: %s" % (self._display(real), e.strerror))
        return {"path": self._display(real), "size": len(data)}

    # ----------------------------------------------------------------- processes

    def _run_process(self, argv, timeout, cwd, max_out):
        """Runs argv in its own process group with capped output. Kills the group on timeout."""
        import selectors
        import subprocess

        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        bufs = {proc.stdout: _Capped(max_out), proc.stderr: _Capped(max_out)}
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
                "duration_ms": _ms(t0), "truncated": truncated}

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
        cwd = self._resolve(cwd, "cwd") if cwd else self.output_dir
        if not os.path.isdir(cwd):
            raise OpError("NotFound", "cwd %s is not a directory" % self._display(cwd))
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
        once_dir = os.path.join(self.store.dir, "once")
        path = os.path.join(once_dir, digest + ".json")
        while True:
            with self.once_lock:
                running = self.once_running.get(path)
                if running is None:
                    recorded = _read_json_quiet(path)
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
            _write_atomic(path, _encode(out), self.store.fsync)
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
                _unlink_quiet(n)
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
                "--disable-pip-version-check", "--target", self.python_dir] + packages
        res = self._run_process(argv, timeout, self.output_dir, DEFAULT_MAX_OUTPUT)
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

                site.addsitedir(self.python_dir)
            except Exception:
                pass
            importlib.invalidate_caches()
        return out


def _strip_kernel_frames(te, seen):
    if id(te) in seen:
        return
    seen.add(id(te))
    import traceback

    te.stack = traceback.StackSummary.from_list(
        [f for f in te.stack if f.filename != KERNEL_FILE])
    for sub in (te.__cause__, te.__context__):
        if sub is not None:
            _strip_kernel_frames(sub, seen)
    for sub in getattr(te, "exceptions", None) or ():
        _strip_kernel_frames(sub, seen)


USAGE = "usage: codeact_kernel.py [--socket PATH] [--workspace DIR] [--sandbox-id ID]"


def _parse_args(argv):
    """Returns {"socket", "workspace", "sandbox_id"}; exits 2 with a message on bad input.
    (No argparse: it costs milliseconds of imports on every sandbox start.)"""
    opts = {"--socket": os.environ.get("CODEACT_SOCKET", "/run/codeact/kernel.sock"),
            "--workspace": None, "--sandbox-id": os.environ.get("CODEACT_SANDBOX_ID")}

    def fail(msg):
        sys.stderr.write("%s\ncodeact_kernel.py: error: %s\n" % (USAGE, msg))
        sys.exit(2)

    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            sys.stdout.write(USAGE + "\n")
            sys.exit(0)
        key, eq, val = arg.partition("=")
        if key not in opts:
            fail("unknown argument %r" % arg)
        if not eq:
            i += 1
            if i >= len(argv):
                fail("%s needs a value" % key)
            val = argv[i]
        opts[key] = val
        i += 1
    sid = opts["--sandbox-id"]
    if not sid:
        fail("a sandbox id is required: --sandbox-id or CODEACT_SANDBOX_ID")
    if "/" in sid or sid in (".", ".."):
        fail("sandbox id %r must not contain '/'" % sid)
    return {"socket": opts["--socket"], "workspace": opts["--workspace"], "sandbox_id": sid}


def main(argv=None):
    global _KERNEL
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    storage = os.environ.get("CODEACT_STORAGE", "/persistent-storage")
    workspace = args["workspace"] or os.path.join(storage, args["sandbox_id"])
    durability = os.environ.get("CODEACT_DURABILITY", "fsync").strip().lower()
    if durability not in ("fsync", "rename"):
        sys.stderr.write("codeact-kernel: CODEACT_DURABILITY must be fsync or rename, got %r\n"
                         % durability)
        return 2
    persistence = os.environ.get("CODEACT_PERSISTENCE", "1").strip().lower() not in (
        "0", "false", "no", "off")
    _KERNEL = Kernel(args["sandbox_id"], storage, workspace, args["socket"],
                     durability == "fsync", persistence)
    _KERNEL.start()
    _KERNEL.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
