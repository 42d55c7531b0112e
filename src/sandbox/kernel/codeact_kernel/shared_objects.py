"""Which names share objects, so the store pickles them together and the pickle's memo keeps
their identity across a restore (`a = [1]; b = a`, `d = {'k': a}`, an attribute, a list element).

reach() walks what a value holds, breadth first, within a budget of objects: the items of lists,
tuples, sets, dicts (keys and values) and deques, instance attributes (__dict__ and __slots__),
the defaults and closure cells of functions defined in cells, the attributes of classes defined in
cells, bound methods and functools.partial. Leaves are not entered: numpy arrays, bytes, modules,
imported functions and classes (those are pickled by reference, so identity survives anyway).
Small numbers, short strings, None, empty tuples are not shared objects: the interpreter shares
them between unrelated values. A walk that runs out of budget keeps what it found (at least the
value itself: top-level identity). The walk reads containers through their base types' C methods
and attributes through object.__getattribute__, so user __iter__/__getattr__ code does not run.

SharingIndex remembers, per persisted name, the ids its value reached at its last save or restore
(at most REMEMBERED_PER_NAME, and REMEMBERED_IN_ALL over all names; always the value itself), so
a new name that shares an object with an untouched name joins that name's group. An id of an
object that died since may be reused by an unrelated one: that only groups names needlessly (one
bigger pickle), never loses a value. Main thread only."""

import collections
import functools
import itertools
import sys
import types

WALK_BUDGET = 100_000  # objects examined per commit (and per restore), over all names
REMEMBERED_PER_NAME = 10_000
REMEMBERED_IN_ALL = 200_000  # bounds the index's memory (some tens of MB at most)
BIG_TEXT = 4096  # str/bytes this long count as shared objects (shorter ones are interned)

_SCALARS = frozenset((int, float, complex, bool, type(None), type(Ellipsis),
                      type(NotImplemented), range, slice))
_LEAVES = (types.ModuleType, types.BuiltinFunctionType, types.BuiltinMethodType,
           types.WrapperDescriptorType, types.MethodWrapperType, types.MethodDescriptorType,
           types.GetSetDescriptorType, types.MemberDescriptorType, types.CodeType)


def _numpy_children(obj):
    """None for numpy scalars and dtypes (cached singletons such as numpy.True_), else () (an
    array: one shared object, never entered)."""
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, (np.generic, np.dtype)):
        return None
    return ()


def _slot_names(t, cache):
    """The __slots__ attribute names of t and its bases (private names mangled)."""
    names = cache.get(t)
    if names is None:
        names = []
        for k in t.__mro__:
            slots = vars(k).get("__slots__", ())
            for s in ((slots,) if isinstance(slots, str) else slots):
                if s in ("__dict__", "__weakref__"):
                    continue
                if s.startswith("__") and not s.endswith("__"):
                    s = "_%s%s" % (k.__name__.lstrip("_"), s)
                names.append(s)
        cache[t] = names = tuple(names)
    return names


def _children(obj, t, ns, slot_cache):
    """The objects obj holds that may be shared, or None when obj is not a shared object."""
    if t is list or t is set:
        return obj
    if t is tuple or t is frozenset:
        return obj if obj else None  # () and frozenset() are singletons
    if t is dict:
        return itertools.chain(dict.keys(obj), dict.values(obj)) if obj is not ns else None
    if t is types.FunctionType:
        if obj.__globals__ is not ns:
            return None  # from a module: pickled by reference
        parts = [obj.__defaults__ or (), (obj.__kwdefaults__ or {}).values(),
                 obj.__dict__.values()]
        for cell in obj.__closure__ or ():
            try:
                parts.append((cell.cell_contents,))
            except ValueError:  # an empty cell
                pass
        return itertools.chain.from_iterable(parts)
    if isinstance(obj, type):
        return tuple(vars(obj).values()) if obj.__module__ == "__main__" else None
    if t is types.MethodType:
        return (obj.__self__, obj.__func__)
    if isinstance(obj, _LEAVES):
        return None
    if t is functools.partial:
        return itertools.chain((obj.func,), obj.args, (obj.keywords or {}).values())
    mod = getattr(t, "__module__", None) or ""
    if mod == "numpy" or mod.startswith("numpy."):
        return _numpy_children(obj)
    parts = []
    if isinstance(obj, dict):
        parts += [dict.keys(obj), dict.values(obj)]
    elif isinstance(obj, list):
        parts.append(list.__iter__(obj))
    elif isinstance(obj, tuple):
        parts.append(tuple.__iter__(obj))
    elif isinstance(obj, set):
        parts.append(set.__iter__(obj))
    elif isinstance(obj, frozenset):
        parts.append(frozenset.__iter__(obj))
    elif isinstance(obj, collections.deque):
        parts.append(collections.deque.__iter__(obj))
    if t.__dictoffset__:
        try:
            d = object.__getattribute__(obj, "__dict__")
        except Exception:
            d = None
        if type(d) is dict:
            parts.append(dict.values(d))
    for s in _slot_names(t, slot_cache):
        try:
            parts.append((object.__getattribute__(obj, s),))
        except Exception:  # an unset slot
            pass
    return itertools.chain.from_iterable(parts)


def reach(root, ns, budget):
    """(ids, examined): the ids of the shared objects root reaches, in breadth-first order (a
    dict used as an ordered set), examining at most budget objects, and how many it examined
    (budget: the walk was cut). root comes first when it is a shared object. ns (the namespace)
    is never entered."""
    ids = {}
    queue = collections.deque((root,))
    slot_cache = {}
    left = budget
    while queue and left > 0:
        obj = queue.popleft()
        left -= 1
        t = type(obj)
        if t in _SCALARS:
            continue
        if t is str or t is bytes:
            if len(obj) >= BIG_TEXT:
                ids[id(obj)] = None
            continue
        i = id(obj)
        if i in ids:
            continue
        try:
            kids = _children(obj, t, ns, slot_cache)
        except Exception:  # an odd object: count it, do not enter it
            kids = ()
        if kids is None:
            continue
        ids[i] = None
        room = left - len(queue)
        if room > 0:
            try:
                queue.extend(itertools.islice(kids, room))
            except Exception:  # e.g. a dict another thread resized meanwhile
                pass
    return ids, budget - left


def reach_all(names, ns, budget=WALK_BUDGET):
    """({name: ids} for names (ns[name] each), budget left), sharing one budget fairly: each
    name may use an equal part of what is left, and what it leaves passes on. Every name gets at
    least its own identity."""
    out = {}
    left = budget
    names = list(names)
    for k, name in enumerate(names):
        share = max(left // (len(names) - k), 1)
        out[name], used = reach(ns[name], ns, share)
        left = max(left - used, 0)
    return out, left


def components(reaches):
    """Groups of names whose id sets meet (connected components), each a sorted list, sorted
    by first name."""
    parent = {}

    def find(n):
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    owner = {}
    for name, ids in reaches.items():
        parent.setdefault(name, name)
        for i in ids:
            o = owner.setdefault(i, name)
            if o != name:
                a, b = find(o), find(name)
                if a != b:
                    parent[b] = a
    groups = {}
    for name in reaches:
        groups.setdefault(find(name), []).append(name)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: g[0])


class SharingIndex:
    """id -> the persisted name whose value reached it at its last save or restore."""

    def __init__(self):
        self._ids = {}  # name -> tuple of ids, the value itself first
        self._owner = {}  # id -> name
        self._total = 0  # sum of the tuples' lengths

    def owner(self, i):
        return self._owner.get(i)

    def remember(self, name, ids):
        self.forget(name)
        room = max(min(REMEMBERED_PER_NAME, REMEMBERED_IN_ALL - self._total), 1)
        kept = tuple(itertools.islice(ids, room))
        self._ids[name] = kept
        self._total += len(kept)
        for i in kept:
            self._owner[i] = name

    def forget(self, name):
        kept = self._ids.pop(name, ())
        self._total -= len(kept)
        for i in kept:
            if self._owner.get(i) == name:
                del self._owner[i]

    def clear(self):
        self._ids, self._owner, self._total = {}, {}, 0
