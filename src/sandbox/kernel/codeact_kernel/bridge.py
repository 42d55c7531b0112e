"""The bridge: calls from sandboxed code to host functions (MCP tools, user functions), sent
as bridge_call events on the connection of the running execute and answered by bridge_result
frames. make_stub() turns a host-supplied signature into a real Python function. While an
execution with an id runs, its calls go through its CallJournal (call_journal.py): a re-run of
that execution gets the answers of the calls an earlier run made instead of making them again."""

import builtins
import queue
import threading

from . import forks
from .protocol import OpError
from .values import NotJson, to_json


class ToolError(RuntimeError):
    """Raised by a bridge function when the host reports that the tool failed."""

    def __init__(self, message, type=None):
        super().__init__(message)
        self.type = type


class PossiblyAppliedError(ToolError):
    """Raised by a bridge function in a re-run of an execution (after a crash) for a call the
    earlier run sent and got no answer to, or when the host connection closed while the call
    ran: the host may have carried it out. codeact never sends such a call again."""

    def __init__(self, message):
        super().__init__(message, "PossiblyApplied")


# Pickled by reference as builtins.ToolError (and PossiblyAppliedError), so saved exceptions
# restore.
for _cls in (ToolError, PossiblyAppliedError):
    _cls.__module__ = "builtins"
    _cls.__qualname__ = _cls.__name__


class Bridge:
    """Calls from sandboxed code to host functions, over the running execute's connection."""

    def __init__(self):
        self.active = None  # (connection, request id) of the running execute, set by cells
        self.journal = None  # CallJournal of the running execute when it has an id, by cells
        self.lock = threading.Lock()
        self.next_id = 0
        self.waiting = {}  # call_id -> (connection, SimpleQueue); GUARDED_BY(lock)

    def call(self, name, args, kwargs):
        ctx = self.active
        if ctx is None:
            raise ToolError("bridge function %s() can only be called while a cell runs" % name,
                            "FailedPrecondition")
        conn, rid = ctx
        try:
            args = to_json(list(args))
            kwargs = to_json(dict(kwargs))
        except NotJson as e:
            raise TypeError("arguments of %s() must be JSON-serializable: %s" % (name, e)) from None
        journal = None if forks.IS_CLONE else self.journal  # a clone has no connection
        seq = None
        if journal is not None:
            seq, recorded = journal.begin(name, args, kwargs)
            if recorded is not None:
                if recorded["answer"] is None:
                    raise PossiblyAppliedError(
                        "%s() was sent to the host by an earlier run of this cell, which "
                        "crashed before the answer came: it may have been carried out, so it "
                        "is not sent again" % name)
                return self._answer(name, recorded["answer"])
        answer = queue.SimpleQueue()
        with self.lock:
            self.next_id += 1
            call_id = self.next_id
            self.waiting[call_id] = (conn, answer)
        try:
            if not conn.send({"id": rid, "type": "bridge_call", "call_id": call_id, "name": name,
                              "args": args, "kwargs": kwargs}):
                if journal is not None:
                    journal.unsent(seq)
                raise ToolError("%s(): the host connection is closed" % name, "Unavailable")
            msg = answer.get()
        finally:
            with self.lock:
                self.waiting.pop(call_id, None)
        if journal is not None:
            journal.answered(seq, msg)
        return self._answer(name, msg)

    @staticmethod
    def _answer(name, msg):
        """The value of a bridge_result (or a journal's "done" line), or its error raised."""
        if msg.get("ok"):
            return msg.get("value")
        err = msg.get("error") or {}
        text = str(err.get("message") or "%s() failed" % name)
        if err.get("type") == "PossiblyApplied":
            raise PossiblyAppliedError(text)
        raise ToolError(text, err.get("type"))

    def deliver(self, conn, msg):
        with self.lock:
            waiter = self.waiting.get(msg.get("call_id"))
        if waiter is not None:
            waiter[1].put(msg)

    def connection_closed(self, conn):
        with self.lock:
            waiters = [w for w in self.waiting.values() if w[0] is conn]
        for _, answer in waiters:
            answer.put({"ok": False, "error": {
                "type": "PossiblyApplied",
                "message": "the host connection closed while the call ran: it may have been "
                           "carried out"}})

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
