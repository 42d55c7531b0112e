"""The bridge: calls from sandboxed code to host functions (MCP tools, user functions), sent
as bridge_call events on the connection of the running execute and answered by bridge_result
frames. register() turns a host-supplied signature into a real Python function."""

import builtins
import queue
import threading

from .protocol import OpError
from .values import NotJson, to_json


class ToolError(RuntimeError):
    """Raised by a bridge function when the host reports that the tool failed."""

    def __init__(self, message, type=None):
        super().__init__(message)
        self.type = type


# Pickled by reference as builtins.ToolError, so saved exceptions restore.
ToolError.__module__ = "builtins"
ToolError.__qualname__ = "ToolError"


class Bridge:
    """Calls from sandboxed code to host functions, over the running execute's connection."""

    def __init__(self):
        self.active = None  # (connection, request id) of the running execute, set by cells
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
