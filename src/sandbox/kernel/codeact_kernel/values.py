"""How values appear in replies: bounded reprs, conversion to plain JSON, qualified type names,
kinds (data, function, class, module) and short one-line texts."""

import builtins
import json
import time
import types

GET_REPR_CAP = 64 * 1024


def elapsed_ms(t0):
    """Milliseconds since t0 (a time.perf_counter() value), rounded to microseconds."""
    return round((time.perf_counter() - t0) * 1000.0, 3)


def class_name(t):
    """Qualified name of a class; builtins and __main__ ones unqualified."""
    mod = getattr(t, "__module__", None)
    qual = getattr(t, "__qualname__", t.__name__)
    if mod in (None, "builtins", "__main__"):
        return qual
    return mod + "." + qual


def type_name(obj):
    return class_name(type(obj))


def kind(obj):
    if isinstance(obj, types.ModuleType):
        return "module"
    if isinstance(obj, type):
        return "class"
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return "function"
    if type(obj).__name__ == "partial" and type(obj).__module__ == "functools":
        return "function"
    return "data"


def short(text, limit=300):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


_REPR = None


def bounded_repr(obj, cap):
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
        text = "<repr failed: %s: %s>" % (type(e).__name__, short(e, 200))
    if not isinstance(text, str):
        text = str(text)
    if len(text) > cap:
        text = text[: max(cap - 3, 0)] + "..."
    return text


class NotJson(Exception):
    pass


def to_json(value, max_elements=None, depth=0, budget=None):
    """Convert value to plain JSON types (numpy via tolist, tuples/sets to lists) or raise
    NotJson. max_elements bounds each container/array, budget (a one-item list) all elements."""
    if depth > 100:
        raise NotJson("nested too deeply")
    if budget is not None:
        budget[0] -= 1
        if budget[0] < 0:
            raise NotJson("too many elements in all")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise NotJson("%r is not a JSON number" % value)
        return float(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        if max_elements is not None and len(value) > max_elements:
            raise NotJson("more than %d elements" % max_elements)
        items = value if isinstance(value, (list, tuple)) else list(value)
        return [to_json(v, max_elements, depth + 1, budget) for v in items]
    if isinstance(value, dict):
        if max_elements is not None and len(value) > max_elements:
            raise NotJson("more than %d elements" % max_elements)
        out = {}
        for k, v in value.items():
            if isinstance(k, str):
                key = k
            elif isinstance(k, (int, float, bool)) or k is None:
                key = json.dumps(k)
            else:
                raise NotJson("dict key of type %s" % type(k).__name__)
            out[key] = to_json(v, max_elements, depth + 1, budget)
        return out
    mod = type(value).__module__ or ""
    if mod.split(".")[0] == "numpy" and hasattr(value, "tolist"):
        size = getattr(value, "size", 1)
        if max_elements is not None and size > max_elements:
            raise NotJson("array of %d elements (more than %d)" % (size, max_elements))
        return to_json(value.tolist(), None, depth + 1, budget)
    raise NotJson("%s is not JSON-serializable" % type_name(value))
