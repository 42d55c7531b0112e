"""The snapshot of the user namespace on the sandbox's volume (format in the package docstring):
which names are pickled how (cloudpickle, or references to importable modules, functions and
classes), which names are pickled together (shared_objects: names whose values share objects
share one pickle, so identity survives a restore), big arrays as chunks (array_chunks), the
manifest as the single commit point, the commit after every cell, the restore at start-up, and
the execution records committed with the state. Main thread only."""

import errno
import json
import os
import sys
import time
import types

from . import forks, output_tree
from .array_chunks import (ArrayChunks, ChunkUse, SnapshotWriteError, chunk_bytes_from_env,
                           chunked_array)
from .atomic_files import fsync_dir, unlink_quiet, write_all, write_atomic
from .checkpoints import CheckpointLog, record_refs
from .log import log
from .protocol import OpError, encode
from .shared_objects import WALK_BUDGET, SharingIndex, components, reach_all
from .values import kind as kind_of, short, type_name

MANIFEST_VERSION = 2  # version 1 (every pickled name its own file, no chunks) still restores
MAX_EXECUTION_RECORDS = 10_000
VERIFY_MAX_BYTES = 16 << 20  # restore verifies the sha256 of objects up to this size
SPILL_BYTES = 4 << 20
SLOW_SAVE_SECONDS = 1.0  # a save this long is reported in the reply's notice
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
# ... and _codeact_kernel_rt.chunked_array, the loader of arrays stored as chunks.
chunked_array.__module__ = "_codeact_kernel_rt"
_rt.chunked_array = chunked_array
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
        try:
            if self.fd is None:  # spill before appending: a big buffer is never copied
                self.fd = os.open(self.spill_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                                  0o644)
                self.spilled = True
                self._write_fd(memoryview(self.buf))
                self.buf = bytearray()
            self._write_fd(view)
        except OSError as e:
            raise SnapshotWriteError.of(e, self.spill_path)
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
            when loaded (so a restored function sees later assignments, like before), and
            that big numpy arrays go to chunk files (chunks.reduce) when chunks is given."""

            def __init__(self, file, ns, chunks=None, use=None):
                super().__init__(file, protocol=5)
                self._ns = ns
                np = sys.modules.get("numpy")
                self._ndarray = np.ndarray if chunks is not None and np is not None else None
                self._chunks = chunks
                self.chunk_use = use
                # A dict subclass: the C pickler consults reducer_override only for objects
                # that are not exact dicts, lists, tuples, ...
                self._ns_token = _NsToken()
                self.globals_ref[id(ns)] = self._ns_token

            def reducer_override(self, obj):
                if obj is self._ns_token:
                    return (_rt_namespace, ())
                if type(obj) is self._ndarray and self._chunks.accepts(obj):
                    return self._chunks.reduce(obj, self.chunk_use)
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


def _size_text(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return "%.1f %s" % (n / (1 << shift), unit)
    return "%d B" % n


class GroupSave:
    """What saving one group of names cost (for the notice of a slow save)."""

    def __init__(self, names, types_, total_bytes, written_bytes, seconds):
        self.names, self.types = names, types_
        self.total_bytes, self.written_bytes, self.seconds = total_bytes, written_bytes, seconds

    def text(self):
        names = ", ".join(self.names[:3]) + (", ..." if len(self.names) > 3 else "")
        what = "%s (%s %s)" % (names, _size_text(self.total_bytes), ", ".join(self.types))
        if not self.written_bytes:
            return what + " checked, unchanged"
        if self.written_bytes >= self.total_bytes:
            return what + " rewritten"
        return "%s: %s of it written" % (what, _size_text(self.written_bytes))


def _chunk_refs(entries):
    """The chunk files entries reference."""
    refs = set()
    for e in entries.values():
        refs.update(e.get("chunks") or ())
    return refs


def _members_by_file(entries):
    """object file -> the names whose entries use it."""
    out = {}
    for name, e in entries.items():
        if e.get("file"):
            out.setdefault(e["file"], set()).add(name)
    return out


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
        self.chunks = ArrayChunks(state_dir, chunk_bytes_from_env(), fsync)
        self.sharing = SharingIndex()  # what each saved name reached at its last save/restore
        self.last_saves = []  # [GroupSave] of the last commit
        self.dropped_for_room = []  # checkpoints the last commit dropped for room on a full disk
        self.log = CheckpointLog(state_dir, fsync)  # every commit's checkpoint
        self.blobs_dir = os.path.join(state_dir, "blobs")
        self.tree = {}  # the /output tree of the current checkpoint (output_tree.py)
        # Called with what is about to be committed: at the start of a commit, before its
        # checkpoint record, and right before the manifest is replaced (the commit point):
        # Ownership.check, which exits when the sandbox moved (ownership.py).
        self.fence = None

    def load_manifest(self):
        try:
            with open(self.manifest_path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return None
        m = json.loads(raw)
        if not isinstance(m, dict) or m.get("version") not in (1, MANIFEST_VERSION):
            raise ValueError("unsupported manifest version %r" % (m.get("version"),))
        return m

    def object_file(self, names, seq, variant=0):
        """objects/<name>.<cell>.pkl for one name, objects/<first>+<others>.<cell>.pkl for a
        group (names are identifiers: no "+" or "-" in them)."""
        name = names[0]
        stem = name
        if len(name.encode("utf-8")) > 150:
            import hashlib

            stem = "h" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:40]
        if len(names) > 1:
            stem += "+%d" % (len(names) - 1)
        if variant:
            return "objects/%s.%d-%d.pkl" % (stem, seq, variant)
        return "objects/%s.%d.pkl" % (stem, seq)

    @staticmethod
    def record_file(execution_id):
        import hashlib

        return "executions/%s.json" % hashlib.sha256(
            execution_id.encode("utf-8", "surrogatepass")).hexdigest()[:40]

    def remove_orphans(self):
        """Deletes object, chunk and record files the manifest does not reference (crash
        leftovers)."""
        keep = {e.get("file") for e in self.entries.values() if e.get("file")}
        keep.update(self.executions.values())
        keep.update("chunks/" + h for h in _chunk_refs(self.entries))
        keep.update(record_refs({"files": self.tree}))
        keep.update(self.log.counts)
        for sub in ("objects", "executions", "chunks", "blobs", "trees"):
            d = os.path.join(self.dir, sub)
            try:
                names = os.listdir(d)
            except OSError:
                continue
            for fn in names:
                if "%s/%s" % (sub, fn) not in keep:
                    unlink_quiet(os.path.join(d, fn))
        try:
            present = set(os.listdir(self.chunks.dir))
        except OSError:
            present = set()
        self.chunks.on_disk = present & (_chunk_refs(self.entries) | {
            p[len("chunks/"):] for p in self.log.counts if p.startswith("chunks/")})
        for fn in os.listdir(self.dir):
            if fn.startswith("manifest.json.tmp"):
                unlink_quiet(os.path.join(self.dir, fn))

    def write_manifest(self, cell, entries, executions, not_persisted):
        forks.leave_if_clone()  # a clone of the kernel (user code forked) never commits
        data = encode({"version": MANIFEST_VERSION, "cell": cell, "entries": entries,
                        "executions": executions, "not_persisted": not_persisted,
                        "checkpoint": self.log.current, "last_checkpoint": self.log.last})
        tmp = self.manifest_path + ".tmp-%d" % os.getpid()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            write_all(fd, data, self.fsync)
        finally:
            os.close(fd)
        if self.fence is not None:
            self.fence("committing cell %d" % cell)  # exits when another host owns the sandbox
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
            for src in (st.manifest_path, st.objects_dir, st.exec_dir, st.chunks.dir,
                        st.log.dir, st.blobs_dir, os.path.join(st.dir, "trees")):
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
        st.log.current = int(m.get("checkpoint") or 0)
        restore_errors += st.log.load(int(m.get("last_checkpoint") or st.log.current))
        st.tree = {}
        if st.log.current in st.log.summaries:
            try:
                st.tree = st.log.read(st.log.current).get("files") or {}
            except OpError as e:
                restore_errors.append({"name": "<checkpoint>", "reason": e.message})
        st.not_persisted = {}
        got, errors = st.load_values(ns, not_persisted)
        return restored + got, restore_errors + errors

    def load_values(self, ns, not_persisted):
        """Loads the values of the entries into ns (start-up, a rewind, an import); returns
        (restored names, [{name, reason}]). not_persisted: the names the state lacks, reported
        as such."""
        st = self
        restored, restore_errors = [], []
        for name, reason in not_persisted.items():
            restore_errors.append(
                {"name": name, "reason": "was not persisted: %s" % reason})
        # One load per object file: the names of a group come back from one pickle, sharing
        # their objects. References first, then data, then functions, then classes (so that a
        # class mutated after its instances were saved ends with its latest definition); a
        # group ranks as its last-ranked member.
        order = {"module": 0, "data": 1, "function": 2, "class": 3}
        groups = {}
        for name, e in st.entries.items():
            groups.setdefault(e.get("file") or (None, name), []).append(name)

        def rank(key):
            names = groups[key]
            if not isinstance(key, str):
                return (0, names[0])
            return (max(order.get(st.entries[n].get("kind"), 1) for n in names), min(names))

        pickled = []
        for key in sorted(groups, key=rank):
            names = sorted(groups[key])
            try:
                values = self._load(key, names)
                forks.leave_if_clone()  # a __setstate__ that forked: the clone leaves here
            except BaseException as ex:  # anything a user class's __setstate__ may raise
                forks.leave_if_clone()
                for name in names:
                    restore_errors.append(
                        {"name": name, "reason": "%s: %s" % (type(ex).__name__, short(ex))})
                    st.restore_failed.add(name)
                continue
            for name in names:
                if name not in values:
                    restore_errors.append({"name": name, "reason": "missing from %s" % key})
                    st.restore_failed.add(name)
                    continue
                ns[name] = values[name]
                st.committed[name] = values[name]
                restored.append(name)
                if isinstance(key, str):
                    pickled.append(name)
        reaches, _ = reach_all(sorted(pickled), ns, WALK_BUDGET)
        for name, ids in reaches.items():
            st.sharing.remember(name, ids)
        st.remove_orphans()
        return restored, restore_errors

    def _load(self, key, names):
        """{name: value} of one group: a reference entry (key (None, name)) or an object file
        (a name's value, or {name: value} for a group of several)."""
        import hashlib
        import pickle

        e = self.entries[names[0]]
        if not isinstance(key, str):
            if e.get("qualname"):
                return {names[0]: resolve_ref(e["module"], e["qualname"])}
            import importlib

            return {names[0]: importlib.import_module(e["module"])}
        # Hash in chunks, then unpickle from the file: a big array needs its own size in memory,
        # not twice that. Big objects skip the check: the atomic commit already guarantees
        # complete files, and hashing 200 MB would double the restore time; a damaged big
        # pickle still fails to load and is reported. (Array chunks: their sizes are checked.)
        with open(os.path.join(self.dir, key), "rb") as f:
            if e.get("sha256") and (e.get("size") or 0) <= VERIFY_MAX_BYTES:
                h = hashlib.sha256()
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
                if h.hexdigest() != e["sha256"]:
                    raise ValueError("%s is corrupt (sha256 mismatch)" % key)
                f.seek(0)
            obj = pickle.load(f)
        if not e.get("shared"):
            return {names[0]: obj}
        if not isinstance(obj, dict):
            raise ValueError("%s does not hold a group of names" % key)
        return obj

    def _serialize(self, ns, name, obj, seq, old=None, values=None):
        """Pickles obj into a SpillSink (hash, size, bytes or spill file); raises if obj
        cannot be pickled. Returns (sink, ChunkUse). When the saved version is big, a first pass
        only hashes: if nothing changed (a big value that a cell only read), nothing is written
        at all. Returns the hash-only sink in that case. values: the names' values obj holds
        (obj itself when None)."""
        st = self
        if old and old.get("sha256") and (old.get("size") or 0) > SPILL_BYTES:
            use = ChunkUse()
            probe = self._serialize_into(ns, SpillSink(None), obj, use, values)
            if probe.sha.hexdigest() == old["sha256"]:
                return probe, use
        spill = os.path.join(st.objects_dir, ".spill-%s.%d" % (name[:100], seq))
        use = ChunkUse()
        return self._serialize_into(ns, SpillSink(spill), obj, use, values), use

    def _serialize_into(self, ns, sink, obj, use, values=None):
        try:
            if type(obj) in _PRIMITIVES:
                import pickle

                pickle.Pickler(sink, protocol=5).dump(obj)
            else:
                for value in values if values is not None else (obj,):
                    if isinstance(value, type) and value.__module__ == "__main__":
                        # Pickling an instance makes copyreg cache __slotnames__ on its class;
                        # do it first so the class's bytes do not change the next time.
                        import copyreg

                        copyreg._slotnames(value)
                _pickler_class()(sink, ns, self.chunks, use).dump(obj)
        except BaseException:
            sink.discard()
            raise
        return sink

    @staticmethod
    def _reference_entry(obj):
        """The entry of a value stored as a reference (a module, an importable function or
        class), else None."""
        if isinstance(obj, types.ModuleType) and sys.modules.get(obj.__name__) is obj:
            return {"kind": "module", "file": None, "module": obj.__name__,
                    "type": "module", "sha256": None, "size": 0}
        ref = import_ref(obj)
        if ref is not None:
            return {"kind": kind_of(obj), "file": None, "module": ref[0], "qualname": ref[1],
                    "type": type_name(obj), "sha256": None, "size": 0}
        return None

    def commit(self, ns, user, seq, candidates, make_record=None, output=None):
        """_commit_once, and when the disk is full, again after dropping the older half of the
        checkpoints other than the current one (what only they held is deleted, with the object
        files the failed attempt wrote), until it fits or none is left to drop; then the disk's
        error is raised. dropped_for_room lists the checkpoints dropped (make_record sees it)."""
        if self.fence is not None:
            self.fence("committing cell %d" % seq)  # before writing anything of it
        self.dropped_for_room = []
        while True:
            try:
                return self._commit_once(ns, user, seq, candidates, make_record, output)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                dropped, freed = self.log.drop_oldest_half()
                if not dropped:
                    raise
                self.dropped_for_room += dropped
                log("codeact-kernel: the disk is full; dropped checkpoints %s to make room"
                    % ", ".join(map(str, dropped)))
                self.delete_unused(freed)
                self._remove_unreferenced_objects()

    def _remove_unreferenced_objects(self):
        """Deletes the object files neither the manifest nor a kept checkpoint references (what
        a failed commit wrote)."""
        keep = {e.get("file") for e in self.entries.values() if e.get("file")}
        try:
            names = os.listdir(self.objects_dir)
        except OSError:
            return
        for fn in names:
            rel = "objects/" + fn
            if rel not in keep and not self.log.holds(rel):
                unlink_quiet(os.path.join(self.objects_dir, fn))

    def _commit_once(self, ns, user, seq, candidates, make_record=None, output=None):
        """Writes the snapshot for cell seq, and its checkpoint. candidates: names to examine
        besides new and rebound ones. make_record(not_persisted) returns (execution_id, reply
        payload) or None; it is called once the objects are written, so the recorded reply can
        list what this very commit could not persist. The record is committed atomically with
        the state. user: the user names of ns (the ones to persist). output: (output dir,
        {path: (mtime_ns, size, ino)}) of the files the checkpoint keeps (None: those of the
        last one). Sets last_saves; returns the checkpoint's number."""
        st = self
        if not os.path.isdir(st.objects_dir):
            os.makedirs(st.objects_dir, exist_ok=True)
        user_set = set(user)
        c = _Commit(st, ns, seq, user_set)
        for name in list(c.entries):
            if name not in user_set and name not in st.restore_failed:
                c.drop(name)
                c.committed.pop(name, None)
        for name in list(c.committed):
            if name not in user_set:
                del c.committed[name]
        changed = []  # names to pickle because they are new, rebound or candidates
        for name in user:
            obj = ns[name]
            if name in c.committed and c.committed[name] is obj and name not in candidates:
                continue
            c.committed[name] = obj
            old = c.entries.get(name)
            if old is not None and old.get("file"):
                c.regroup.update(c.members.get(old["file"], ()))
            if obj is ns:
                c.not_persisted[name] = ("is the namespace itself (globals()); rebind it with "
                                         "%s = globals()" % name)
                c.drop(name)
                continue
            entry = self._reference_entry(obj)
            if entry is not None:
                c.drop(name)
                c.entries[name] = entry
                c.not_persisted.pop(name, None)
                st.restore_failed.discard(name)
                continue
            changed.append(name)
        st.chunks.begin()
        st.last_saves = []
        try:
            for group in c.groups(changed):
                c.save(group)
            st.chunks.sync()
        finally:
            st.chunks.release()
        entries, not_persisted = c.entries, c.not_persisted
        executions = st.executions
        wrote_record = False
        tree, files_changed = st.tree, set()
        if output is not None:
            tree, files_changed = output_tree.update(output[0], output[1], st.tree,
                                                     st.blobs_dir, st.fsync)
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
                c.obsolete.append(executions.pop(oldest))
        if st.fsync:
            if c.wrote_objects:
                fsync_dir(st.objects_dir)
            if wrote_record:
                fsync_dir(st.exec_dir)
        n = st._checkpoint(seq, record[0] if record else None, entries, not_persisted, tree,
                           files_changed)
        st._write_manifest_of(n, seq, entries, executions, not_persisted)
        st.cell = seq
        old_chunks = _chunk_refs(st.entries)
        st.entries = entries
        st.executions = executions
        st.not_persisted = not_persisted
        st.tree = tree
        st.committed = c.committed
        for name in c.forgotten:
            st.sharing.forget(name)
        for name, ids in c.remembered.items():
            st.sharing.remember(name, ids)
        unused = {rel for rel in c.obsolete if rel and rel not in executions.values()}
        unused |= {"chunks/" + h for h in old_chunks | st.chunks.written}
        st.chunks.written = set()
        st.delete_unused(unused | st.log.prune())
        return n

    def _checkpoint(self, seq, exec_id, entries, not_persisted, tree, files_changed,
                    changed=None, **extra):
        """Writes the checkpoint record of the state about to be committed (before the manifest
        that names it) and makes it the current one; returns its number. changed: the names
        it changed (None: those whose entries differ from the manifest's)."""
        forks.leave_if_clone()  # a clone of the kernel (user code forked) never commits
        if self.fence is not None:
            self.fence("recording checkpoint of cell %d" % seq)
        old = self.entries
        if changed is None:
            changed = sorted(n for n in set(old) | set(entries) if old.get(n) != entries.get(n))
        n = self.log.next_number()
        self.log.current_before = self.log.current
        self.log.add(dict(extra, n=n, cell=seq, execution_id=exec_id,
                          time=round(time.time(), 3), changed=changed,
                          files_changed=sorted("/output/" + p for p in files_changed),
                          not_persisted=not_persisted, entries=entries,
                          files_tree=self.log.store_tree(tree)))
        self.log.current = n
        return n

    def live_refs(self):
        """The state-relative paths the manifest references (objects, chunks, file blobs)."""
        return record_refs({"entries": self.entries, "files": self.tree})

    def import_checkpoint(self, meta, tree):
        """After an import (time_travel.py): the imported entries, already loaded, and tree
        become the first checkpoint of this sandbox; returns its number."""
        n = self._checkpoint(self.cell, None, self.entries, {}, tree, set(tree),
                             changed=sorted(self.entries),
                             forked_from={"sandbox": meta.get("source"),
                                          "checkpoint": meta.get("checkpoint")})
        self.tree = tree
        self._write_manifest_of(n, self.cell, self.entries, self.executions, {})
        return n

    def _write_manifest_of(self, n, cell, entries, executions, not_persisted):
        """write_manifest for checkpoint n, just recorded: when the manifest cannot be written,
        the record goes too and the previous checkpoint stays the current one."""
        previous = self.log.current_before
        try:
            self.write_manifest(cell, entries, executions, not_persisted)
        except BaseException:
            self.log.drop(n)
            self.log.current = previous
            raise

    def delete_unused(self, paths):
        """Deletes the state-relative paths that neither the manifest nor a kept checkpoint
        references."""
        live = self.live_refs()
        chunks = set()
        for rel in paths:
            if rel in live or self.log.holds(rel):
                continue
            if rel.startswith("chunks/"):
                chunks.add(rel[len("chunks/"):])
            else:
                unlink_quiet(os.path.join(self.dir, rel))
        self.chunks.remove(chunks)

    def slow_save_notice(self, seconds):
        """For a save (the last commit) that took seconds: None when that is short (under
        CODEACT_SLOW_SAVE_SECONDS, default 1), else a line saying how long and which values
        took it, slowest first ("saving the state took 9.1 s: arr (2.0 GiB ndarray)
        rewritten")."""
        try:
            limit = float(os.environ.get("CODEACT_SLOW_SAVE_SECONDS") or SLOW_SAVE_SECONDS)
        except ValueError:
            limit = SLOW_SAVE_SECONDS
        if seconds < limit:
            return None
        slowest = sorted(self.last_saves, key=lambda s: -s.seconds)[:3]
        parts = [s.text() for s in slowest if s.seconds >= 0.1 * seconds]
        return "saving the state took %.1f s: %s" % (
            seconds, "; ".join(parts) if parts else "no single value stood out")

    def clear(self):
        """Empties the snapshot (execution records kept): a checkpoint too, so that a clear can
        be rewound."""
        old = record_refs({"entries": self.entries})
        n = self._checkpoint(self.cell, None, {}, {}, self.tree, set())
        self._write_manifest_of(n, self.cell, {}, self.executions, {})
        self.forget_all()
        self.delete_unused(old | self.log.prune())

    def forget_all(self):
        self.entries, self.not_persisted, self.committed = {}, {}, {}
        self.restore_failed.clear()
        self.sharing.clear()

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


class _Commit:
    """One commit in progress: the entries being built, which names are pickled together, and
    the object files written. The store's own fields change only when the commit succeeded."""

    def __init__(self, store, ns, seq, user_set):
        self.st, self.ns, self.seq, self.user_set = store, ns, seq, user_set
        self.entries = dict(store.entries)
        self.not_persisted = {n: r for n, r in store.not_persisted.items() if n in user_set}
        self.committed = dict(store.committed)
        self.members = _members_by_file(store.entries)  # file -> names, as last committed
        self.in_use = set(self.members)  # object files the working entries may still use
        self.obsolete = []  # files maybe no longer referenced (deleted after the commit)
        self.regroup = set()  # names whose group file is rewritten: a group-mate changed
        self.wrote_objects = False
        self.remembered = {}  # name -> ids its value reaches (saved by this commit)
        self.forgotten = set()  # names no longer saved by pickle

    def drop(self, name):
        """Removes name's entry (its group-mates are then saved again without it)."""
        e = self.entries.pop(name, None)
        self.forgotten.add(name)
        if e is not None and e.get("file"):
            self.obsolete.append(e["file"])
            self.regroup.update(self.members.get(e["file"], ()))

    def groups(self, changed):
        """The groups to pickle: the changed names, the members of their old groups, and every
        saved name that shares an object with them (the remembered reach of untouched names),
        as connected components of the objects they reach."""
        st, ns = self.st, self.ns
        to_pickle = set()
        fresh = []

        def join(names, forced):
            stack = list(names)
            while stack:
                n = stack.pop()
                if n in to_pickle or n not in self.user_set:
                    continue
                if n not in forced:
                    e = self.entries.get(n)
                    if e is None or not e.get("file"):
                        continue  # not saved by pickle (a reference, not persisted)
                to_pickle.add(n)
                fresh.append(n)
                old = st.entries.get(n)
                if old is not None and old.get("file"):
                    stack.extend(self.members.get(old["file"], ()))

        forced = set(changed)
        join(sorted(changed) + sorted(self.regroup), forced)
        reaches = {}
        budget = WALK_BUDGET
        while fresh:
            batch = sorted(fresh)
            fresh.clear()
            got, budget = reach_all(batch, ns, budget)
            reaches.update(got)
            for ids in got.values():
                for i in ids:
                    other = st.sharing.owner(i)
                    if other is not None and other not in to_pickle:
                        join((other,), forced)
        self.reaches = reaches
        return components(reaches)

    def save(self, names):
        """Pickles the group names (one name: its value; several: {name: value}) unless its
        bytes are those of its current file; names that cannot be pickled are reported and the
        others saved without them."""
        st, ns = self.st, self.ns
        old = [st.entries.get(n) for n in names]
        old_file = old[0].get("file") if old[0] else None
        same = (old_file is not None and all(o is not None and o.get("file") == old_file
                                             for o in old)
                and self.members.get(old_file) == set(names))
        values = [ns[n] for n in names]
        payload = values[0] if len(names) == 1 else dict(zip(names, values))
        t0 = time.perf_counter()
        try:
            sink, use = st._serialize(ns, names[0], payload, self.seq, old[0] if same else None,
                                      values)
        except SnapshotWriteError:
            raise  # the disk, not the value: the whole commit fails
        except BaseException as e:
            forks.leave_if_clone()  # a __reduce__ that forked
            if len(names) == 1:
                self._not_persisted(names[0], e)
                return
            self._save_separable(names)
            return
        forks.leave_if_clone()
        sha = sink.sha.hexdigest()
        kinds = [kind_of(ns[n]) for n in names]
        for n in names:
            self.not_persisted.pop(n, None)
            st.restore_failed.discard(n)
            self.remembered[n] = self.reaches.get(n, ())
            self.forgotten.discard(n)
        size = sink.size + sum(use.chunks.values())
        types_ = [type(ns[n]).__name__ for n in names]
        if same and old[0].get("sha256") == sha and all(
                o.get("kind") == k for o, k in zip(old, kinds)):
            sink.discard()
            st.last_saves.append(GroupSave(names, types_, size, use.written_bytes,
                                           time.perf_counter() - t0))
            return
        variant = 0
        rel = st.object_file(names, self.seq)
        # Never overwrite a file the manifest or a kept checkpoint uses: cell numbers repeat
        # (a restart resumes from the last commit, a fork starts again at 1).
        while (rel in self.in_use or st.log.holds(rel)
               or os.path.exists(os.path.join(st.dir, rel))):
            variant += 1
            rel = st.object_file(names, self.seq, variant)
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
        self.wrote_objects = True
        self.in_use.add(rel)
        for n, o in zip(names, old):
            if o is not None and o.get("file") and o["file"] != rel:
                self.obsolete.append(o["file"])
        for n, k in zip(names, kinds):
            entry = {"kind": k, "file": rel, "type": type_name(ns[n]), "sha256": sha,
                     "size": size}
            if len(names) > 1:
                entry["shared"] = True
            if use.chunks:
                entry["chunks"] = list(use.chunks)
            self.entries[n] = entry
        st.last_saves.append(GroupSave(names, types_, size, sink.size + use.written_bytes,
                                       time.perf_counter() - t0))

    def _save_separable(self, names):
        """A group that failed to pickle: finds the members that cannot be pickled on their
        own, reports them, and saves the others (together, or one by one if that fails too)."""
        good = []
        for n in names:
            try:
                self.st._serialize_into(self.ns, SpillSink(None), self.ns[n], ChunkUse())
            except SnapshotWriteError:
                raise
            except BaseException as e:
                forks.leave_if_clone()
                self._not_persisted(n, e)
            else:
                forks.leave_if_clone()
                good.append(n)
        if len(good) == len(names):  # only fails together: keep the values, not the sharing
            for n in names:
                self.save([n])
        elif good:
            self.save(good)

    def _not_persisted(self, name, e):
        if isinstance(e, KeyboardInterrupt):
            reason = "interrupted while pickling"
        else:
            reason = "%s: %s" % (type(e).__name__, short(e, 200))
        self.not_persisted[name] = reason
        self.drop(name)
        self.st.restore_failed.discard(name)
