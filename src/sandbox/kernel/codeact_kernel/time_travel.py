"""Time travel over the checkpoint log (checkpoints.py): the ops that list the checkpoints, rewind
the live kernel to one, and carry one into another sandbox (a fork).

- checkpoints {} -> {checkpoints: [{n, cell, execution_id, time, changed, files_changed,
  not_persisted, added_bytes, current}], current, keep_last, budget}
- rewind {to, execution_id?} -> {checkpoint, previous, restored, restore_errors, files_restored,
  files_removed, files_left}: what the cells not yet committed changed is committed first (a
  checkpoint of its own), then the namespace and the files under /output become checkpoint
  `to`'s. Later checkpoints are kept: rewinding to `previous` undoes it. Run once per id.
- checkpoints.export {at, name} -> {path, checkpoint, files_left}: the workspace of checkpoint
  `at` (its state files, its /output files and the installed packages, all hard links) under
  state/exports/<name>, for the host to copy out. checkpoints.release {name} deletes it;
  exports left behind are deleted when the kernel starts.
- checkpoints.import {path, source, execution_id?} -> {checkpoint, restored, restore_errors,
  files}: replaces this sandbox's state by an export the host copied to `path` (inside the
  workspace); the result is checkpoint 1 of a fresh log. Run once per id."""

import json
import os
import shutil

from . import output_tree
from .atomic_files import unlink_quiet, write_atomic
from .protocol import OpError, encode

EXPORT_META = "export.json"


def _number(msg, key):
    v = msg.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise OpError("InvalidArgument", "%s must be a checkpoint number (1 or more), got %r"
                      % (key, v))
    return v


def _name(msg):
    v = msg.get("name")
    if not isinstance(v, str) or not v or "/" in v or v in (".", "..") or len(v) > 200:
        raise OpError("InvalidArgument", "name must be a plain file name, got %r" % (v,))
    return v


def _link_tree(src, dst):
    """A copy of the directory src at dst made of hard links (symbolic links copied as such)."""
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        target = os.path.join(dst, rel) if rel != "." else dst
        os.makedirs(target, exist_ok=True)
        for fn in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            s, d = os.path.join(root, fn), os.path.join(target, fn)
            if os.path.islink(s):
                os.symlink(os.readlink(s), d)
            else:
                os.link(s, d)


def _move_tree(src, dst):
    """Moves the contents of src into dst (same file system), replacing files of the same
    name."""
    if not os.path.isdir(src):
        return
    os.makedirs(dst, exist_ok=True)
    for fn in os.listdir(src):
        s, d = os.path.join(src, fn), os.path.join(dst, fn)
        if os.path.isdir(s) and not os.path.islink(s) and os.path.isdir(d):
            _move_tree(s, d)
        else:
            if os.path.isdir(d) and not os.path.islink(d):
                shutil.rmtree(d)
            os.replace(s, d)


class TimeTravel:
    """The ops above, on the kernel's main thread."""

    def __init__(self, kernel):
        self.k = kernel
        self.exports_dir = os.path.join(kernel.ws.state_dir, "exports")

    def clean_exports(self):
        shutil.rmtree(self.exports_dir, ignore_errors=True)

    def _store(self):
        if not self.k.persistence:
            raise OpError("FailedPrecondition", "this sandbox runs without persistence "
                          "(CODEACT_PERSISTENCE=0): it keeps no checkpoints")
        return self.k.store

    def op_checkpoints(self, msg):
        st = self._store()
        return {"checkpoints": st.log.listing(), "current": st.log.current,
                "keep_last": st.log.keep_last, "budget": st.log.budget}

    def op_rewind(self, msg):
        st = self._store()
        n = _number(msg, "to")
        st.log.read(n)  # NotFound before anything changes
        scan = self._save_what_changed()
        previous = st.log.current
        record = st.log.read(n)  # again: the commit's pruning may have dropped it
        files = output_tree.restore(self.k.ws.output_dir, record.get("files") or {}, scan,
                                    st.tree, st.blobs_dir)
        self.k.cells.output_touched = True
        restored, errors = self._become(record, n)
        return {"checkpoint": n, "previous": previous, "restored": restored,
                "restore_errors": errors, "files_restored": files["restored"],
                "files_removed": files["removed"], "files_left": files["left"]}

    def _save_what_changed(self):
        """Commits what changed since the last checkpoint (variables of persist=false cells or
        define, /output files written by bash, files.write or a process) so that a rewind can
        be undone; FailedPrecondition when that commit fails (nothing is changed then). Returns
        the scan of /output."""
        k, st = self.k, self.k.store
        scan = k.cells._scan_output()
        known = {os.path.join(k.ws.output_dir, rel): (e.get("mtime_ns"), e.get("size"),
                                                      e.get("ino"))
                 for rel, e in st.tree.items()}
        if k.names.pending_dirty or scan != known:
            try:
                st.commit(k.names.ns, k.names.user_names(), k.cells.cell,
                          set(k.names.pending_dirty), None, (k.ws.output_dir, scan))
            except Exception as e:
                raise OpError("FailedPrecondition", "the state could not be saved before the "
                              "rewind, which would lose it (%s: %s); nothing was changed"
                              % (type(e).__name__, e))
            k.names.pending_dirty.clear()
        return scan

    def _become(self, record, n):
        """The manifest, then the namespace, become record's (checkpoint n). The manifest goes
        first: when it cannot be written, nothing has changed."""
        k, st = self.k, self.k.store
        entries = dict(record.get("entries") or {})
        not_persisted = record.get("not_persisted") or {}
        before = st.log.current
        st.log.current = n
        try:
            st.write_manifest(st.cell, entries, st.executions, not_persisted)
        except BaseException:
            st.log.current = before
            raise
        k.names.drop_user_values()
        old = st.live_refs()
        st.forget_all()
        st.entries = entries
        st.tree = dict(record.get("files") or {})
        restored, errors = st.load_values(k.names.ns, not_persisted)
        st.delete_unused(old)
        return restored, errors

    def op_export(self, msg):
        k, st = self.k, self._store()
        n = _number(msg, "at")
        name = _name(msg)
        record = st.log.read(n)
        root = os.path.join(self.exports_dir, name)
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(os.path.join(root, "state"))
        from .checkpoints import record_refs

        for rel in sorted(record_refs({"entries": record.get("entries") or {}})):
            dst = os.path.join(root, "state", rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.link(os.path.join(st.dir, rel), dst)
        left = output_tree.link_into(record.get("files") or {}, st.blobs_dir,
                                     os.path.join(root, "output"))
        _link_tree(k.ws.python_dir, os.path.join(root, "python"))
        meta = {"source": k.sandbox_id, "checkpoint": n, "entries": record.get("entries") or {},
                "not_persisted": record.get("not_persisted") or {}}
        write_atomic(os.path.join(root, EXPORT_META), encode(meta), False)
        return {"path": root, "checkpoint": n, "files_left": left}

    def op_release(self, msg):
        shutil.rmtree(os.path.join(self.exports_dir, _name(msg)), ignore_errors=True)
        return {"released": True}

    def op_import(self, msg):
        k, st = self.k, self._store()
        src = k.ws.resolve(msg.get("path"), "path")
        try:
            with open(os.path.join(src, EXPORT_META), "rb") as f:
                meta = json.loads(f.read())
        except (OSError, ValueError) as e:
            raise OpError("InvalidArgument", "%s holds no checkpoint export: %s" % (src, e))
        if st.log.summaries or st.entries or k.cells._scan_output():
            raise OpError("AlreadyExists", "sandbox %s has state of its own (checkpoints, "
                          "variables or /output files); a fork goes into a new sandbox"
                          % k.sandbox_id)
        k.names.drop_user_values()
        old = st.live_refs()
        st.forget_all()
        old |= st.log.forget_all()
        st.tree = {}
        _move_tree(os.path.join(src, "state"), st.dir)
        for rel in list(k.cells._scan_output()):
            unlink_quiet(rel)
        _move_tree(os.path.join(src, "output"), k.ws.output_dir)
        _move_tree(os.path.join(src, "python"), k.ws.python_dir)
        shutil.rmtree(src, ignore_errors=True)
        st.entries = dict(meta.get("entries") or {})
        not_persisted = meta.get("not_persisted") or {}
        restored, errors = st.load_values(k.names.ns, not_persisted)
        tree, _ = output_tree.update(k.ws.output_dir, k.cells._scan_output(), {}, st.blobs_dir,
                                     st.fsync)
        k.cells.output_touched = True
        n = st.import_checkpoint(meta, tree)
        st.delete_unused(old)
        import importlib
        import site

        importlib.invalidate_caches()
        site.addsitedir(k.ws.python_dir)
        return {"checkpoint": n, "restored": restored, "restore_errors": errors,
                "files": len(tree), "source": meta.get("source"),
                "source_checkpoint": meta.get("checkpoint")}
