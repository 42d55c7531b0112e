"""Cells: execute and define run user code on the main thread in the user namespace. An execute
captures the cell's output, interrupts it at its timeout, reports its value or error (kernel
frames removed), saves open matplotlib figures, lists the output files it changed, commits the
snapshot before the reply, and answers a repeated execution id from its record."""

import os
import signal
import sys
import time

from . import cgroups, forks, process_tree
from .call_journal import CallJournal
from .checkpoints import number_ranges
from .log import log
from .namespace import code_names
from .output_capture import DEFAULT_MAX_OUTPUT, CellOutput
from .protocol import OpError
from .state_store import MAX_EXECUTION_RECORDS
from .values import bounded_repr, class_name, elapsed_ms

RESULT_REPR_CAP = 8 * 1024
MEMORY_RECORDS_BYTES = 64 << 20
OUTPUT_SCAN_LIMIT = 20_000
_NO_PROCESS_MARKERS = ("BlockingIOError", "Resource temporarily unavailable",
                       "can't start new thread")
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class Cells:
    """Main thread only, except output_touched, which any thread may set."""

    def __init__(self, names, store, persistence, workspace, router, watchdog, bridge,
                 process_limit, memory_limit=None):
        """process_limit: a forks.ProcessLimit (a cell that hits it has its processes killed,
        one that does not is told what it left running). memory_limit: a cgroups.MemoryLimit
        (default: the sandbox's), to tell a cell that processes were killed for memory."""
        self.names = names
        self.store = store
        self.persistence = persistence
        self.ws = workspace
        self.router = router
        self.watchdog = watchdog
        self.bridge = bridge
        self.cell = 0
        self.records = {}  # execution id -> (reply, size), kept in memory only
        self.records_bytes = 0
        self.in_user = False
        self.process_limit = process_limit
        self.memory_limit = memory_limit if memory_limit is not None else cgroups.MemoryLimit()
        self._refused_before = None  # the limit's refusal count when the running cell started
        # (cell, execution id, monotonic start) of the execute running now, else None. Set and
        # cleared by the main thread, read by the server thread (one reference: atomic).
        self.running = None
        self._plain_cells = []
        self._sigint = self._on_sigint
        # The output dir as the last cell left it; reused as the next cell's "before" unless an
        # op that writes files (bash, files.write, install) ran in between.
        self._output_snapshot = None
        self.output_touched = True

    def install_sigint(self):
        # User code may have replaced the handler; one cheap check per cell (_signal: no enum
        # conversion).
        import _signal

        if _signal.getsignal(signal.SIGINT) is not self._sigint:
            signal.signal(signal.SIGINT, self._sigint)

    def _on_sigint(self, signum, frame):
        if self.in_user:
            forks.interrupting(True)
            raise KeyboardInterrupt
        # Outside user code the kernel ignores interrupts (a late timeout signal, ^C).

    def recorded(self, exec_id):
        """The committed reply of execution exec_id (kept in memory, else the snapshot's record),
        or None when that execution has not committed."""
        kept = self.records.get(exec_id)
        if kept is not None:
            return kept[0]
        return self.store.read_record(exec_id)

    def op_execute(self, conn, msg, queued=False):
        """queued: the request waited behind another execute (it was sent a "queued" event);
        it is sent a "started" event when it runs."""
        t0 = time.perf_counter()
        code = msg.get("code")
        if not isinstance(code, str):
            raise OpError("InvalidArgument", "execute needs a string field \"code\"")
        exec_id = msg.get("execution_id")
        if exec_id is not None and not isinstance(exec_id, str):
            raise OpError("InvalidArgument", "execution_id must be a string, got %r" % (exec_id,))
        if exec_id:
            recorded = self.recorded(exec_id)
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

        self.cell += 1
        seq = self.cell
        self.running = (seq, exec_id, time.monotonic())
        try:
            if queued:
                conn.send({"id": msg.get("id"), "type": "started", "cell": seq})
            return self._execute(conn, msg, seq, code, exec_id, timeout, max_out, variables,
                                 persist, t0)
        finally:
            self.running = None  # before the reply leaves: a request after it is not queued

    def _execute(self, conn, msg, seq, code, exec_id, timeout, max_out, variables, persist,
                 t0):
        stream_to = (conn, msg.get("id")) if msg.get("stream") else None
        before = self._output_snapshot
        if before is None or self.output_touched:
            before = self._scan_output()
        capture = CellOutput(max_out, stream_to)
        self.router.start(capture)
        journal = CallJournal(os.path.join(self.ws.state_dir, "calls"), exec_id,
                              self.ws.fsync) if exec_id else None
        self.bridge.active = (conn, msg.get("id"))
        self.bridge.journal = journal
        refused_before = self._refused_before = self.process_limit.refused()
        oom_kills_before = self.memory_limit.oom_kills()
        since = process_tree.boot_ticks()
        if refused_before is not None:
            forks.watch_limit(lambda: self._hit_process_limit(refused_before, None))
        try:
            self.names.ns.update(variables)
            status, result, error, names, timed_out = self._run_cell(code, seq, timeout)
        finally:
            forks.watch_limit(None)
            self.bridge.active = None
            self.bridge.journal = None
            self.router.stop()
        hit_limit = self._hit_process_limit(refused_before, error)
        killed = self.process_limit.clean_up(since) if hit_limit else 0
        # What a model cannot see from inside the cell: processes it started that still run,
        # and processes the out-of-memory killer ended (a subprocess's returncode is just -9).
        left = [] if hit_limit else self.process_limit.left_running(since)
        oom_kills_after = self.memory_limit.oom_kills()
        oom_kills = 0 if None in (oom_kills_before, oom_kills_after) else \
            oom_kills_after - oom_kills_before
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
        notices = []
        if oom_kills > 0:
            reply["oom_kills"] = oom_kills
            notices.append(self.memory_limit.ran_out_text(oom_kills))
        if hit_limit:  # said even when the bomb's processes had all ended by themselves
            reply["killed_processes"] = killed
            notices.append(forks.hit_limit_text(self.process_limit.limit, killed))
        if left:
            reply["left_running"] = [{"pid": pid, "command": command} for pid, command in left]
            notices.append(forks.left_running_text(left))
        if notices:
            reply["notice"] = "; ".join(notices)
        candidates = self.names.closure_names(names | set(variables)) | self.names.pending_dirty
        reply["duration_ms"] = elapsed_ms(t0)

        t_save = time.perf_counter() if self.persistence and persist else None
        reply["snapshot_ms"] = 0.0

        def final_reply(not_persisted):
            reply["not_persisted"] = [{"name": n, "reason": r}
                                      for n, r in sorted(not_persisted.items())]
            if t_save is not None:
                self._note_save(reply, t_save)
                reply["checkpoint"] = self.store.log.next_number()  # the one this commit makes
                dropped = self.store.dropped_for_room
                if dropped:  # said once, also when a retry of the commit calls this again
                    text = ("the disk was full: checkpoint%s %s dropped to make room"
                            % ("s" if len(dropped) > 1 else "", number_ranges(dropped)))
                    notice = reply.get("notice") or ""
                    if "the disk was full: checkpoint" in notice:
                        notice = notice[:notice.index("the disk was full: checkpoint")]
                        notice = notice[:-2] if notice.endswith("; ") else notice
                    reply["notice"] = "%s; %s" % (notice, text) if notice else text
            return (exec_id, reply) if exec_id else None

        if self.persistence and persist:
            try:
                self.store.commit(self.names.ns, self.names.user_names(), seq, candidates,
                                  final_reply, (self.ws.output_dir, self._output_snapshot))
                reply["snapshot_ms"] = elapsed_ms(t_save)  # the manifest's write included
                self.names.pending_dirty.clear()
                self._forget(exec_id)
                if journal is not None:
                    journal.drop()
            except Exception as e:
                reply["persist_error"] = "state not saved: %s: %s" % (type(e).__name__, e)
                self.names.pending_dirty |= candidates
                log("codeact-kernel: commit of cell %d failed: %s" % (seq, e))
                final_reply(self.store.not_persisted)
                reply.pop("checkpoint", None)  # none was made
                if exec_id:
                    self._remember(exec_id, reply)
        else:
            self.names.pending_dirty |= candidates
            final_reply(self.store.not_persisted if self.persistence else {})
            if exec_id:
                self._remember(exec_id, reply)
        return reply

    def _note_save(self, reply, t_save):
        """snapshot_ms (time spent saving the state so far), and when that was long a notice
        saying what took it (appended to a notice already there)."""
        reply["snapshot_ms"] = elapsed_ms(t_save)
        text = self.store.slow_save_notice(reply["snapshot_ms"] / 1000.0)
        if text:
            reply["notice"] = "%s; %s" % (reply["notice"], text) if reply.get("notice") else text

    def _hit_process_limit(self, refused_before, error):
        """Whether the sandbox's process limit refused a fork while the cell ran: the pids
        cgroup's counter rose, or (where it is not visible) the cell failed for want of a
        process or thread."""
        if refused_before is not None:
            refused = self.process_limit.refused()
            return refused is not None and refused > refused_before
        if not error:
            return False
        text = "%s: %s" % (error.get("type"), error.get("message"))
        return any(m in text for m in _NO_PROCESS_MARKERS)

    def _on_timeout(self):
        """On the watchdog's thread, when the running cell passed its timeout: a fork bomb's
        clones are stopped at once, so that the interrupt reaches the cell in time (they are
        killed when it ends)."""
        if self._refused_before is not None and self._hit_process_limit(self._refused_before,
                                                                        None):
            self.process_limit.freeze()

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
            code_names(body, names)
            expr_code = None
            if expr is not None:
                expr_code = compile(expr, filename, "eval")
                code_names(expr_code, names)
        except (SyntaxError, ValueError, OverflowError, RecursionError) as e:
            return "error", None, self.format_error(e, None, False, 0), names, False
        value = result = None
        timed_out = False
        self.install_sigint()
        self.router.repair()
        if timeout > 0:
            self.watchdog.arm(timeout, self._on_timeout)
        try:
            try:
                self.in_user = True
                exec(body, self.names.ns)
                if expr_code is not None:
                    value = eval(expr_code, self.names.ns)
                    if value is not None:  # a user __repr__ is user code too
                        result = bounded_repr(value, RESULT_REPR_CAP)
            finally:
                forks.leave_if_clone()  # a clone's cell ended: it never returns into the kernel
                self.in_user = False
                forks.interrupting(False)
                if timeout > 0:
                    timed_out = self.watchdog.disarm()
        except BaseException as e:
            if timeout > 0 and not timed_out:
                timed_out = self.watchdog.disarm()
            # Past its timeout the cell timed out, whatever user code made of the interrupt.
            return "error", None, self.format_error(e, e.__traceback__, timed_out, timeout), \
                names, timed_out
        return "ok", result, None, names, False

    def format_error(self, e, tb, timed_out, timeout):
        import traceback

        te = traceback.TracebackException(type(e), e, tb, compact=True)
        strip_kernel_frames(te, set())
        lines = list(te.format())
        if timed_out:
            message = "cell exceeded its timeout of %gs" % timeout
            type_name = "TimeoutError"
            if lines:
                lines[-1] = "TimeoutError: %s\n" % message
        else:
            type_name = class_name(type(e))
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
            while os.path.exists(os.path.join(self.ws.output_dir, fname)):
                # cell numbers restart from the last snapshot after a crash: never overwrite
                n += 1
                fname = "figure-%d-%d-%d.png" % (seq, k, n)
            try:
                fig = plt.figure(num)
                fig.savefig(os.path.join(self.ws.output_dir, fname), format="png")
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
        stack = [self.ws.output_dir]
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
        self.output_touched = False
        after = self._output_snapshot = self._scan_output()
        return sorted(self.ws.display(p) for p, sig in after.items() if before.get(p) != sig)

    def op_define(self, msg):
        source = msg.get("source")
        if not isinstance(source, str):
            raise OpError("InvalidArgument", "define needs a string field \"source\"")
        ns = self.names.ns
        before = {k: v for k, v in ns.items()}
        err = None
        try:
            code = compile(source, "<define>", "exec")
            # The source may touch user variables too: re-examine them at the next commit.
            self.names.pending_dirty |= code_names(code)
            self.install_sigint()
            self.in_user = True
            try:
                exec(code, ns)
            finally:
                forks.leave_if_clone()
                self.in_user = False
                forks.interrupting(False)
        except BaseException as e:
            err = e
        defined = []
        for k, v in list(ns.items()):
            if k.startswith("__") or (k in before and before[k] is v):
                continue
            self.names.provided[k] = v
            defined.append(k)
        if err is not None:
            info = self.format_error(err, err.__traceback__, False, 0)
            raise OpError("InvalidArgument", "define failed: %s: %s\n%s"
                          % (info["type"], info["message"], info["traceback"]))
        return {"defined": sorted(defined)}


def strip_kernel_frames(te, seen):
    if id(te) in seen:
        return
    seen.add(id(te))
    import traceback

    te.stack = traceback.StackSummary.from_list(
        [f for f in te.stack if not f.filename.startswith(_PACKAGE_DIR)])
    for sub in (te.__cause__, te.__context__):
        if sub is not None:
            strip_kernel_frames(sub, seen)
    for sub in getattr(te, "exceptions", None) or ():
        strip_kernel_frames(sub, seen)
