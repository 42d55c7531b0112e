"""The kernel process: builds the parts (workspace, namespace, state store, output capture,
watchdog, bridge, cells, file and process ops, the server), starts up (privileges, workspace,
restore, socket), routes each request to where it runs, and goes down (shutdown, or exit 75 when
a cell closed the kernel's socket)."""

import builtins
import os
import queue
import sys
import threading
import time

from . import auth, descriptors, forks, privileges, state_store
from . import log as kernel_log
from .atomic_files import unlink_quiet
from .bridge import Bridge, PossiblyAppliedError, ToolError
from .cells import Cells
from .file_ops import Workspace
from .log import log
from .namespace import Namespace
from .output_capture import OutputRouter
from .ownership import Ownership
from .process_ops import ProcessOps
from .protocol import PROTOCOL_VERSION, OpError, Server, answer, bind_listener, error_reply
from .provided import ProvidedLog
from .run_once import RunOnce, execution_id
from .state_store import StateStore
from .time_travel import TimeTravel
from .watchdog import Watchdog
from .workers import WorkerPool

KERNEL_VERSION = "0.2.0"
# Ops touching the namespace run one at a time on the main thread, in arrival order.
MAIN_OPS = frozenset(
    ["execute", "execution.get", "vars", "get", "clear", "define", "bridge.register",
     "shutdown", "checkpoints", "rewind", "checkpoints.export", "checkpoints.release",
     "checkpoints.import"])
# Ops that never touch the namespace run on fixed pools of threads started with the kernel.
PROCESS_OPS = frozenset(["bash", "install"])
FILE_OPS = frozenset(["files.list", "files.read", "files.write"])
PROCESS_WORKERS = 4
FILE_WORKERS = 2
# Ops after which the next cell rescans the output dir.
_WRITES_OUTPUT = frozenset(["bash", "install", "files.write"])
# Exit status when a cell closed the kernel's listening socket (EX_TEMPFAIL): the container
# stops, and the host restarts it from the snapshot.
EXIT_LOST_SOCKET = privileges.EXIT_LOST_SOCKET
_WAKE = (None, None, False)  # a job that only makes the main thread look at self.lost


class Kernel:
    def __init__(self, sandbox_id, storage, workspace, socket_path, listener, fsync,
                 persistence, token=None, init_pid=None):
        """listener: the bound, listening socket at socket_path. token: the auth token (None:
        auth optional). init_pid: the pid of the init of ours that reaps orphans, if any."""
        self.sandbox_id = sandbox_id
        self.storage = storage
        self.socket_path = socket_path
        self.persistence = persistence
        self.init_pid = init_pid
        self.ws = Workspace(workspace, fsync)
        self.store = StateStore(self.ws.state_dir, fsync)
        self.ownership = Ownership(os.environ.get("CODEACT_OWNER_DIR", "/run/codeact-owner"),
                                   os.environ.get("CODEACT_EPOCH"),
                                   os.environ.get("CODEACT_OWNER_CHECK_SECONDS"))
        self.store.fence = self.ownership.check
        self.bridge = Bridge()
        self.names = Namespace(self.store, persistence, self.bridge)
        state_store.bind_namespace(self.names.ns)
        self.watchdog = Watchdog(threading.get_ident())
        self.processes = ProcessOps(self.ws)
        once = self.once = RunOnce(self.ws.state_dir, fsync)
        self.process_pool = WorkerPool("codeact-process", PROCESS_WORKERS)
        self.file_pool = WorkerPool("codeact-files", FILE_WORKERS)
        self.process_limit = forks.ProcessLimit(
            init_pid, lambda: [p for p in (self.processes.supervisor.pid(),) if p])
        self.server = Server(listener, auth.Authenticator(sandbox_id, token), self.dispatch,
                             self.bridge.deliver, self.bridge.connection_closed, self._on_lost)
        self.lost = None  # why the kernel must go (its socket is gone), once it must
        self.router = None
        self.cells = None
        self.restored = []
        self.restore_errors = []
        self.jobs = queue.SimpleQueue()
        # Functions the host provides are made again by a restarted kernel (provided.py).
        self.provided = ProvidedLog(self.ws.state_dir, fsync)
        # Ops that change something run once per execution id (run_once.py).
        travel = self.time_travel = TimeTravel(self)
        self.main_handlers = {
            "vars": self.names.op_vars, "get": self.names.op_get,
            "clear": once.wrap("clear", self.names.op_clear),
            "checkpoints": travel.op_checkpoints,
            "rewind": once.wrap("rewind", travel.op_rewind),
            "checkpoints.export": travel.op_export,
            "checkpoints.release": travel.op_release,
            "checkpoints.import": once.wrap("checkpoints.import", travel.op_import),
            "bridge.register": self.provided.wrap("bridge.register",
                                                  self.names.op_bridge_register)}
        self.pool_handlers = {
            "bash": once.wrap("bash", self.processes.op_bash),
            "install": once.wrap("install", self.processes.op_install),
            "files.list": self.ws.op_files_list, "files.read": self.ws.op_files_read,
            "files.write": once.wrap("files.write", self.ws.op_files_write)}

    # ----------------------------------------------------------------- startup

    def start(self):
        t0 = time.perf_counter()
        self.ownership.check("starting")  # another host owns the sandbox: exit, restore nothing
        self.ownership.watch()
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
        log_fd = descriptors.move_high(os.dup(2))
        kernel_log.set_fd(log_fd)
        self.router = OutputRouter(log_fd)
        self.cells = Cells(self.names, self.store, self.persistence, self.ws, self.router,
                           self.watchdog, self.bridge, self.process_limit)
        self.main_handlers["define"] = self.provided.wrap("define", self.cells.op_define)
        self.main_handlers["execution.get"] = self.op_execution_get
        forks.install([self.server.kernel_fds, self.router.fds, self.processes.supervisor.fds,
                       self.process_limit.fds, lambda: [log_fd]], self.processes.supervisor.pid)
        builtins.ToolError = ToolError
        builtins.PossiblyAppliedError = PossiblyAppliedError
        self.cells.install_sigint()
        # Every thread and helper process the kernel needs, started now: none is created later
        # for a connection or a request.
        self.watchdog.start()
        self.process_pool.start()
        self.file_pool.start()
        try:
            self.processes.supervisor.start()
        except OpError as e:
            log("codeact-kernel: the process supervisor did not start: %s" % e.message)
        if self.persistence:
            self.time_travel.clean_exports()
            self.restored, self.restore_errors = self.store.restore(self.names.ns)
            self.cells.cell = self.store.cell
        self.restore_errors += self.provided.replay({
            "bridge.register": self.names.op_bridge_register, "define": self.cells.op_define})
        self.server.start()
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
        """On the server thread: answers hello, queues the rest where it runs."""
        rid = msg.get("id")
        op = msg.get("op")
        if op == "hello":
            answer(conn, rid, self.op_hello)
        elif op in MAIN_OPS:
            queued = False
            running = self.cells.running if op == "execute" else None
            if running is not None:
                cell, exec_id, since = running
                conn.send({"id": rid, "type": "queued", "running": {
                    "cell": cell, "execution_id": exec_id,
                    "running_ms": round((time.monotonic() - since) * 1000)}})
                queued = True
            self.jobs.put((conn, msg, queued))
        elif op in PROCESS_OPS or op in FILE_OPS:
            handler = self.pool_handlers[op]
            if op in _WRITES_OUTPUT:
                handler = self._touching_output(handler)
            pool = self.process_pool if op in PROCESS_OPS else self.file_pool
            pool.submit(answer, conn, rid, handler, msg)
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
                conn, msg, queued = self.jobs.get()
            except KeyboardInterrupt:
                continue
            if conn is not None:
                op = msg.get("op")
                rid = msg.get("id")
                if op == "execute":
                    answer(conn, rid, self.cells.op_execute, conn, msg, queued)
                elif op == "shutdown":
                    answer(conn, rid, lambda: {"shutting_down": True})
                    self.shutdown()
                else:
                    answer(conn, rid, self.main_handlers[op], msg)
            self._check_descriptors()

    def _check_descriptors(self):
        """After every op: a cell that closed the kernel's socket ends the kernel (exit 75),
        after committing what it can, so the host restarts the sandbox from its snapshot."""
        if self.lost is None and not self.server.listener_intact():
            self.lost = "a cell closed the kernel's listening socket"
        if self.lost is not None:
            log("codeact-kernel: %s; exiting with status %d after the commit of cell %d, so "
                "that the sandbox restarts from its snapshot" % (self.lost, EXIT_LOST_SOCKET,
                                                                  self.cells.cell))
            self._commit_pending()
            self.router.flush_python()
            os._exit(EXIT_LOST_SOCKET)

    def _on_lost(self, reason):
        """On the server thread, which stops: gets the main thread to _check_descriptors soon,
        interrupting a running cell."""
        self.lost = reason
        self.watchdog.interrupt_always()
        self.jobs.put(_WAKE)

    def _commit_pending(self):
        if self.persistence and self.names.pending_dirty:
            try:
                self.store.commit(self.names.ns, self.names.user_names(), self.cells.cell,
                                  set(self.names.pending_dirty))
            except Exception as e:
                log("codeact-kernel: final commit failed: %s" % e)

    def shutdown(self):
        self._commit_pending()
        self.server.close(self.socket_path)
        self.router.flush_python()
        os._exit(0)

    # ----------------------------------------------------------------- ops

    def op_execution_get(self, msg):
        """Whether execution_id committed, and its recorded reply: what a host that lost the
        kernel mid-execute asks the restarted one before it reports the execute as lost."""
        exec_id = execution_id(msg)
        if exec_id is None:
            raise OpError("InvalidArgument", "execution.get needs an execution_id")
        reply = self.cells.recorded(exec_id)
        return {"found": reply is not None, "reply": reply}

    def op_hello(self):
        lost = list(self.restore_errors)
        return {"kernel_version": KERNEL_VERSION, "protocol": PROTOCOL_VERSION,
                "python_version": sys.version.split()[0], "pid": os.getpid(),
                "sandbox_id": self.sandbox_id, "cell": self.store.cell,
                "restored": list(self.restored), "lost": lost, "restore_errors": lost,
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
    epoch = os.environ.get("CODEACT_EPOCH", "").strip()
    if epoch and not epoch.isdigit():
        sys.stderr.write("codeact-kernel: CODEACT_EPOCH must be digits, got %r\n" % epoch)
        return 2
    try:
        float(os.environ.get("CODEACT_OWNER_CHECK_SECONDS") or "1")
    except ValueError:
        sys.stderr.write("codeact-kernel: CODEACT_OWNER_CHECK_SECONDS must be a number\n")
        return 2
    persistence = os.environ.get("CODEACT_PERSISTENCE", "1").strip().lower() not in (
        "0", "false", "no", "off")
    try:
        token = auth.take_token()  # before anything can copy the environment
    except auth.BadToken as e:
        sys.stderr.write("codeact-kernel: %s\n" % e)
        return 2
    descriptors.make_room()
    init_pid = None
    if os.geteuid() == 0:
        try:
            listener = privileges.start_as_root(args["socket"], bind_listener)
        except privileges.StartupError as e:
            sys.stderr.write("codeact-kernel: %s\n" % e)
            return 1
        init_pid = os.getppid()  # only the kernel process gets here, as uid 1000
    else:
        listener = bind_listener(args["socket"])
    kernel = Kernel(args["sandbox_id"], storage, workspace, args["socket"], listener,
                    durability == "fsync", persistence, token, init_pid)
    kernel.start()
    kernel.serve_forever()
    return 0
