"""The user namespace: the one dict every cell runs in, the names the host provided (bridge
stubs, define), which names are the user's, and the ops that read or reset it: vars, get, clear,
bridge.register."""

import builtins
import types

from .protocol import OpError
from .values import GET_REPR_CAP, NotJson, bounded_repr, kind, to_json, type_name

PREVIEW_CAP = 200
GET_VALUE_MAX_ELEMENTS = 10_000
GET_VALUE_BUDGET = 100_000


def code_names(code, acc=None):
    """co_names of a code object and of every code object nested in it."""
    if acc is None:
        acc = set()
    acc.update(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            code_names(const, acc)
    return acc


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


class Namespace:
    """Main thread only (the ops that touch it run there one at a time)."""

    def __init__(self, store, persistence, bridge):
        self.store = store
        self.persistence = persistence
        self.bridge = bridge
        self.ns = {"__name__": "__main__", "__doc__": None, "__builtins__": builtins}
        self.provided = {}  # name -> object put there by the host (bridge stubs, define)
        self.pending_dirty = set()  # names touched by cells not yet committed

    def user_names(self):
        prov = self.provided
        return [n for n, v in self.ns.items()
                if not n.startswith("_") and not (n in prov and prov[n] is v)]

    def closure_names(self, names):
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
                for n in code_names(code):
                    if n not in result:
                        result.add(n)
                        if n in ns:
                            stack.append(n)
        return result

    def op_vars(self, msg):
        st = self.store
        out = []
        for name in sorted(self.user_names()):
            obj = self.ns[name]
            item = {"name": name, "type": type_name(obj), "kind": kind(obj)}
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
            item["preview"] = bounded_repr(obj, PREVIEW_CAP)
            out.append(item)
        return {"variables": out}

    def op_get(self, msg):
        name = msg.get("name")
        if not isinstance(name, str) or name not in self.ns or name == "__builtins__":
            raise OpError("NotFound", "no variable named %r in the sandbox namespace" % (name,))
        obj = self.ns[name]
        try:
            value = to_json(obj, GET_VALUE_MAX_ELEMENTS, 0, [GET_VALUE_BUDGET])
        except (NotJson, RecursionError):
            value = None
        except Exception:
            value = None
        # "value_type", not "type": the envelope's "type" is "reply".
        return {"name": name, "value_type": type_name(obj),
                "repr": bounded_repr(obj, GET_REPR_CAP), "value": value}

    def op_clear(self, msg):
        cleared = self.drop_user_values()
        if self.persistence:
            self.store.clear()
        else:
            self.store.forget_all()
        return {"cleared": cleared}

    def drop_user_values(self):
        """Empties the namespace but for what the kernel and the host provide; the store is
        left alone. Returns the names dropped."""
        dropped = sorted(self.user_names())
        keep = {"__name__", "__doc__", "__builtins__"}
        for name in list(self.ns):
            if name in keep:
                continue
            if name in self.provided and self.provided[name] is self.ns[name]:
                continue
            del self.ns[name]
        self.ns["__builtins__"] = builtins
        self.pending_dirty.clear()
        return dropped

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
