"""The snapshot of the user namespace on the sandbox's volume (format in the package docstring):
which names are pickled how (cloudpickle, or references to importable modules, functions and
classes), the manifest as the single commit point, the commit after every cell, the restore at
start-up, and the execution records committed with the state. Main thread only."""

import json
import os
import sys
import time
import types

from .atomic_files import fsync_dir, unlink_quiet, write_atomic
from .protocol import OpError, encode
from .values import kind as kind_of, short, type_name

MAX_EXECUTION_RECORDS = 10_000
VERIFY_MAX_BYTES = 16 << 20  # restore verifies the sha256 of objects up to this size
SPILL_BYTES = 4 << 20
_PRIMITIVES = (int, float, complex, str, bytes, bool, type(None))

_live_ns = None


def bind_namespace(ns):
    """The namespace that functions loaded from the snapshot get as their globals."""
    global _live_ns
    _live_ns = ns


def _rt_namespace():
    """Unpickling hook: functions saved by the kernel get the live namespace as globals."""
    return _live_ns


# Saved pickles name the hook _codeact_kernel_rt.namespace: keep that module name.
_rt = types.ModuleType("_codeact_kernel_rt")
_rt_namespace.__module__ = "_codeact_kernel_rt"
_rt_namespace.__qualname__ = _rt_namespace.__name__ = "namespace"
_rt.namespace = _rt_namespace
sys.modules["_codeact_kernel_rt"] = _rt


_MISSING = object()


def import_ref(obj):
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


def resolve_ref(module, qualname):
    import importlib

    target = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


class SpillSink:
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
            unlink_quiet(self.spill_path)


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


class StateStore:
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
                    unlink_quiet(os.path.join(d, fn))
        for fn in os.listdir(self.dir):
            if fn.startswith("manifest.json.tmp"):
                unlink_quiet(os.path.join(self.dir, fn))

    def write_manifest(self, cell, entries, executions, not_persisted):
        data = encode({"version": 1, "cell": cell, "entries": entries,
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
            fsync_dir(self.dir)
        if os.environ.get("CODEACT_TEST_CRASH_AFTER_COMMIT") == "1":
            os._exit(137)

    def restore(self, ns):
        """Loads the snapshot into ns. Returns (restored names, restore errors [{name, reason}]);
        sets self.cell."""
        st = self
        restored, restore_errors = [], []
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
            restore_errors.append(
                {"name": "<manifest>", "reason": "state/manifest.json is unreadable (%s); the "
                 "state was moved aside to state/*%s and the kernel starts empty"
                 % (short(e), suffix)})
            return restored, restore_errors
        if m is None:
            return restored, restore_errors
        st.cell = cell
        st.entries = entries
        st.executions = executions
        for name, reason in not_persisted.items():
            restore_errors.append(
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
                    obj = resolve_ref(e["module"], e["qualname"])
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
                restore_errors.append(
                    {"name": name, "reason": "%s: %s" % (type(ex).__name__, short(ex))})
                st.restore_failed.add(name)
                continue
            ns[name] = obj
            st.committed[name] = obj
            restored.append(name)
        st.remove_orphans()
        return restored, restore_errors

    def _serialize(self, ns, name, obj, seq, old=None):
        """Pickles obj into a SpillSink (hash, size, bytes or spill file); raises if obj
        cannot be pickled. When the saved version is big, a first pass only hashes: if nothing
        changed (a big array that a cell only read), nothing is written at all. Returns the
        hash-only sink in that case."""
        st = self
        if old and old.get("sha256") and (old.get("size") or 0) > SPILL_BYTES:
            probe = self._serialize_into(ns, SpillSink(None), obj)
            if probe.sha.hexdigest() == old["sha256"]:
                return probe
        spill = os.path.join(st.objects_dir, ".spill-%s.%d" % (name[:100], seq))
        return self._serialize_into(ns, SpillSink(spill), obj)

    @staticmethod
    def _serialize_into(ns, sink, obj):
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
                _pickler_class()(sink, ns).dump(obj)
        except BaseException:
            sink.discard()
            raise
        return sink

    def commit(self, ns, user, seq, candidates, make_record=None):
        """Writes the snapshot for cell seq. candidates: names to examine besides new and
        rebound ones. make_record(not_persisted) returns (execution_id, reply payload) or None;
        it is called once the objects are written, so the recorded reply can list what this
        very commit could not persist. The record is committed atomically with the state.
        user: the user names of ns (the ones to persist)."""
        st = self
        if not os.path.isdir(st.objects_dir):
            os.makedirs(st.objects_dir, exist_ok=True)
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
                ref = import_ref(obj)
                if ref is not None:  # imported function/class: stored as a reference
                    entry = {"kind": kind_of(obj), "file": None, "module": ref[0],
                             "qualname": ref[1], "type": type_name(obj), "sha256": None,
                             "size": 0}
            if entry is not None:
                if old and old.get("file"):
                    obsolete.append(old["file"])
                entries[name] = entry
                not_persisted.pop(name, None)
                st.restore_failed.discard(name)
                continue
            try:
                sink = self._serialize(ns, name, obj, seq, old)
            except BaseException as e:
                if isinstance(e, KeyboardInterrupt):
                    reason = "interrupted while pickling"
                else:
                    reason = "%s: %s" % (type(e).__name__, short(e, 200))
                not_persisted[name] = reason
                if old is not None:
                    entries.pop(name)
                    if old.get("file"):
                        obsolete.append(old["file"])
                st.restore_failed.discard(name)
                continue
            sha = sink.sha.hexdigest()
            kind = kind_of(obj)
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
                    write_atomic(path, sink.buf, st.fsync)
            except BaseException:
                sink.discard()
                raise
            wrote_objects = True
            if old and old.get("file") and old["file"] != rel:
                obsolete.append(old["file"])
            entries[name] = {"kind": kind, "file": rel, "type": type_name(obj),
                             "sha256": sha, "size": sink.size}
        executions = st.executions
        wrote_record = False
        record = make_record(not_persisted) if make_record is not None else None
        if record is not None:
            exec_id, payload = record
            rel = st.record_file(exec_id)
            if not os.path.isdir(st.exec_dir):
                os.makedirs(st.exec_dir, exist_ok=True)
            write_atomic(os.path.join(st.dir, rel), encode(payload), st.fsync)
            wrote_record = True
            executions = dict(executions)
            executions.pop(exec_id, None)
            executions[exec_id] = rel
            while len(executions) > MAX_EXECUTION_RECORDS:
                oldest = next(iter(executions))
                obsolete.append(executions.pop(oldest))
        if st.fsync:
            if wrote_objects:
                fsync_dir(st.objects_dir)
            if wrote_record:
                fsync_dir(st.exec_dir)
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
                unlink_quiet(os.path.join(st.dir, rel))

    def clear(self):
        """Empties the snapshot (execution records kept)."""
        old_files = [e.get("file") for e in self.entries.values() if e.get("file")]
        self.write_manifest(self.cell, {}, self.executions, {})
        for rel in old_files:
            unlink_quiet(os.path.join(self.dir, rel))
        self.forget_all()

    def forget_all(self):
        self.entries, self.not_persisted, self.committed = {}, {}, {}
        self.restore_failed.clear()

    def read_record(self, exec_id):
        """The committed reply of execution exec_id, or None when there is none."""
        rel = self.executions.get(exec_id)
        if rel is None:
            return None
        try:
            with open(os.path.join(self.dir, rel), "rb") as f:
                return json.loads(f.read())
        except (OSError, ValueError) as e:
            raise OpError("DataLoss", "execution %r was committed but its recorded reply %s is "
                          "unreadable (%s); it was not run again" % (exec_id, rel, e))
