"""The kernel process: builds the parts (workspace, namespace, state store, output capture,
watchdog, bridge, cells, file and process ops), starts up (workspace, restore, socket), routes
each request to where it runs, and shuts down."""

import builtins
import os
import queue
import sys
import threading
import time

from . import log as kernel_log
from . import state_store
from .atomic_files import unlink_quiet
from .bridge import Bridge, ToolError
from .cells import Cells
from .file_ops import Workspace
from .log import log
from .namespace import Namespace
from .output_capture import OutputRouter
from .process_ops import ProcessOps
from .protocol import PROTOCOL_VERSION, Listener, answer, error_reply
from .state_store import StateStore
from .watchdog import Watchdog

KERNEL_VERSION = "0.1.0"
# Ops touching the namespace run one at a time on the main thread, in arrival order.
MAIN_OPS = frozenset(
    ["execute", "vars", "get", "clear", "define", "bridge.register", "shutdown"])
# Ops that never touch the namespace run on threads of their own.
THREAD_OPS = frozenset(["bash", "install", "files.list", "files.read", "files.write"])
# Ops after which the next cell rescans the output dir.
_WRITES_OUTPUT = frozenset(["bash", "install", "files.write"])


class Kernel:
    def __init__(self, sandbox_id, storage, workspace, socket_path, fsync, persistence):
        self.sandbox_id = sandbox_id
        self.storage = storage
        self.persistence = persistence
        self.ws = Workspace(workspace, fsync)
        self.store = StateStore(self.ws.state_dir, fsync)
        self.bridge = Bridge()
        self.names = Namespace(self.store, persistence, self.bridge)
        state_store.bind_namespace(self.names.ns)
        self.watchdog = Watchdog(threading.get_ident())
        self.processes = ProcessOps(self.ws)
        self.listener = Listener(socket_path, self.dispatch, self.bridge.deliver,
                                 self.bridge.connection_closed)
        self.router = None
        self.cells = None
        self.restored = []
        self.restore_errors = []
        self.jobs = queue.SimpleQueue()
        self.main_handlers = {
            "vars": self.names.op_vars, "get": self.names.op_get,
            "clear": self.names.op_clear, "bridge.register": self.names.op_bridge_register}
        self.thread_handlers = {
            "bash": self.processes.op_bash, "install": self.processes.op_install,
            "files.list": self.ws.op_files_list, "files.read": self.ws.op_files_read,
            "files.write": self.ws.op_files_write}

    # ----------------------------------------------------------------- startup

    def start(self):
        t0 = time.perf_counter()
        self.ws.create()
        self._point_current()
        python_dir = self.ws.python_dir
        if python_dir not in sys.path:
            sys.path.insert(0, python_dir)
        try:
            import site

            site.addsitedir(python_dir)  # .pth files of installed packages
        except Exception:
            pass
        env = os.environ
        env["PYTHONPATH"] = os.pathsep.join(
            [python_dir] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        env["PATH"] = os.path.join(python_dir, "bin") + os.pathsep + env.get("PATH", "")
        os.chdir(self.ws.output_dir)
        try:
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.close(devnull)
        except OSError:
            pass
        log_fd = os.dup(2)
        os.set_inheritable(log_fd, False)
        kernel_log.set_fd(log_fd)
        self.router = OutputRouter(log_fd)
        self.cells = Cells(self.names, self.store, self.persistence, self.ws, self.router,
                           self.watchdog, self.bridge)
        self.main_handlers["define"] = self.cells.op_define
        builtins.ToolError = ToolError
        self.cells.install_sigint()
        if self.persistence:
            self.restored, self.restore_errors = self.store.restore(self.names.ns)
            self.cells.cell = self.store.cell
        self.listener.listen()
        log("codeact-kernel ready (sandbox %s, cell %d, %d restored, %d restore errors, %.1f ms)"
            % (self.sandbox_id, self.cells.cell, len(self.restored), len(self.restore_errors),
               (time.perf_counter() - t0) * 1000))

    def _point_current(self):
        link = os.path.join(self.storage, ".current")
        tmp = "%s.tmp-%d" % (link, os.getpid())
        try:
            if os.path.islink(link) and os.readlink(link) == self.sandbox_id:
                return
            unlink_quiet(tmp)
            os.symlink(self.sandbox_id, tmp)
            os.replace(tmp, link)
        except OSError as e:
            unlink_quiet(tmp)
            log("codeact-kernel: could not point %s at %s: %s" % (link, self.sandbox_id, e))

    # ----------------------------------------------------------------- dispatch

    def dispatch(self, conn, msg):
        rid = msg.get("id")
        op = msg.get("op")
        if op == "hello":
            answer(conn, rid, self.op_hello)
        elif op in MAIN_OPS:
            self.jobs.put((conn, msg))
        elif op in THREAD_OPS:
            handler = self.thread_handlers[op]
            if op in _WRITES_OUTPUT:
                handler = self._touching_output(handler)
            threading.Thread(target=answer, name="codeact-op", daemon=True,
                             args=(conn, rid, handler, msg)).start()
        else:
            conn.send(error_reply(rid, "Unimplemented", "unknown op %r" % (op,)))

    def _touching_output(self, handler):
        """Marks the output dir as changed outside cells (before and after the op, which may
        run while a cell does), so the next cell rescans it instead of reusing its snapshot."""
        def run(msg):
            self.cells.output_touched = True
            try:
                return handler(msg)
            finally:
                self.cells.output_touched = True
        return run

    def serve_forever(self):
        while True:
            try:
                conn, msg = self.jobs.get()
            except KeyboardInterrupt:
                continue
            op = msg.get("op")
            rid = msg.get("id")
            if op == "execute":
                answer(conn, rid, self.cells.op_execute, conn, msg)
            elif op == "shutdown":
                answer(conn, rid, lambda: {"shutting_down": True})
                self.shutdown()
            else:
                answer(conn, rid, self.main_handlers[op], msg)

    def shutdown(self):
        if self.persistence and self.names.pending_dirty:
            try:
                self.store.commit(self.names.ns, self.names.user_names(), self.cells.cell,
                                  set(self.names.pending_dirty))
            except Exception as e:
                log("codeact-kernel: final commit failed: %s" % e)
        self.listener.close()
        self.router.flush_python()
        os._exit(0)

    # ----------------------------------------------------------------- ops

    def op_hello(self):
        return {"kernel_version": KERNEL_VERSION, "protocol": PROTOCOL_VERSION,
                "python_version": sys.version.split()[0], "pid": os.getpid(),
                "sandbox_id": self.sandbox_id, "cell": self.store.cell,
                "restored": list(self.restored), "restore_errors": list(self.restore_errors),
                "persistence": self.persistence}


USAGE = "usage: codeact_kernel [--socket PATH] [--workspace DIR] [--sandbox-id ID]"


def _parse_args(argv):
    """Returns {"socket", "workspace", "sandbox_id"}; exits 2 with a message on bad input.
    (No argparse: it costs milliseconds of imports on every sandbox start.)"""
    opts = {"--socket": os.environ.get("CODEACT_SOCKET", "/run/codeact/kernel.sock"),
            "--workspace": None, "--sandbox-id": os.environ.get("CODEACT_SANDBOX_ID")}

    def fail(msg):
        sys.stderr.write("%s\ncodeact_kernel: error: %s\n" % (USAGE, msg))
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
    kernel = Kernel(args["sandbox_id"], storage, workspace, args["socket"],
                    durability == "fsync", persistence)
    kernel.start()
    kernel.serve_forever()
    return 0
