"""The checkpoint log: after every committed cell, a record of the state it left, so that the
sandbox can be rewound to it or forked from it (time_travel.py).

state/checkpoints/<n>.json, n counted from 1 in commit order, holds what the manifest held then
(entries, not_persisted), the tree of the files under /output (output_tree.py) by reference
("files_tree": state/trees/<sha256>.json, shared by every record whose tree is the same), and
what the cell changed. A record names files; it never copies one: object files are never
rewritten in place (a changed value gets a new file), chunks, file blobs and trees are named by
their sha256. So a checkpoint costs what its cell changed, and a file is deleted only when
neither the manifest nor any kept record references it.

Written before the manifest that names it (manifest "checkpoint": n): a record above the
manifest's number is the leftover of a commit that did not finish and is deleted at start-up.

Retention (the container's environment): CODEACT_CHECKPOINTS=all (default) or N, the last N
records; CODEACT_CHECKPOINT_BUDGET, bytes (default 1 GiB) that the records other than the
current one may hold on their own; the oldest go first. The current checkpoint is never pruned."""

import hashlib
import json
import os
import time

from .atomic_files import fsync_dir, unlink_quiet, write_atomic
from .protocol import OpError, encode

RECORD_VERSION = 1
DEFAULT_BUDGET = 1 << 30


def retention_from_env(env=None):
    """(keep_last or None for all, budget bytes); a bad value means the default."""
    env = os.environ if env is None else env
    raw = (env.get("CODEACT_CHECKPOINTS") or "all").strip().lower()
    keep = None
    if raw != "all":
        try:
            keep = max(1, int(raw))
        except ValueError:
            keep = None
    try:
        budget = int(env.get("CODEACT_CHECKPOINT_BUDGET") or DEFAULT_BUDGET)
    except ValueError:
        budget = DEFAULT_BUDGET
    return keep, max(0, budget)


def record_refs(record):
    """The state-relative paths entries and an inline tree reference ({"entries", "files"}):
    object files, chunks, file blobs."""
    refs = set()
    for e in (record.get("entries") or {}).values():
        if e.get("file"):
            refs.add(e["file"])
        refs.update("chunks/" + h for h in e.get("chunks") or ())
    for f in (record.get("files") or {}).values():
        if f.get("sha256"):
            refs.add("blobs/" + f["sha256"])
    return refs


class CheckpointLog:
    """The records on disk and, in memory, each one's summary and references. Main thread."""

    def __init__(self, state_dir, fsync, env=None):
        self.state_dir = state_dir
        self.dir = os.path.join(state_dir, "checkpoints")
        self.fsync = fsync
        self.keep_last, self.budget = retention_from_env(env)
        self.summaries = {}  # n -> summary (the record without entries and files)
        self.refs = {}  # n -> set of state-relative paths
        self.counts = {}  # path -> number of records referencing it
        self.sizes = {}  # path -> bytes on disk (stat once, when first referenced)
        self.trees = {}  # "trees/<sha>.json" -> the blob paths that tree references
        self.last = 0  # the highest number ever given (a pruned record's is not reused)
        self.current = 0  # the checkpoint whose state is the manifest's
        self.current_before = 0  # the current one before the last add (a failed commit's)

    # ------------------------------------------------------------------ loading

    def load(self, last):
        """Reads the records (start-up). last: the manifest's last checkpoint; a record above it
        is a commit's leftover and goes. An unreadable record is moved aside. Returns the
        notes to report ([{name, reason}])."""
        notes = []
        try:
            names = os.listdir(self.dir)
        except OSError:
            names = []
        for fn in names:
            stem, dot, ext = fn.partition(".")
            if ext != "json" or not stem.isdigit():
                if ".tmp-" in fn:
                    unlink_quiet(os.path.join(self.dir, fn))
                continue
            n = int(stem)
            path = os.path.join(self.dir, fn)
            if n > last:
                unlink_quiet(path)
                continue
            try:
                with open(path, "rb") as f:
                    record = json.loads(f.read())
                if not isinstance(record, dict) or record.get("n") != n:
                    raise ValueError("not a checkpoint record")
            except (OSError, ValueError) as e:
                aside = path + ".unreadable-%d" % int(time.time())
                try:
                    os.rename(path, aside)
                except OSError:
                    pass
                notes.append({"name": "<checkpoint %d>" % n,
                              "reason": "state/checkpoints/%s is unreadable (%s); moved aside to "
                              "%s" % (fn, e, os.path.basename(aside))})
                continue
            self._remember(record)
        self.last = max([last] + list(self.summaries))
        return notes

    def _remember(self, record):
        n = record["n"]
        self.summaries[n] = {k: v for k, v in record.items()
                             if k not in ("entries", "files", "files_tree", "version")}
        refs = record_refs(record)
        tree = record.get("files_tree")
        if tree:
            refs.add(tree)
            if tree not in self.trees:
                self.trees[tree] = record_refs({"files": self.load_tree(tree)})
            refs |= self.trees[tree]
        self.refs[n] = refs
        for p in refs:
            self.counts[p] = self.counts.get(p, 0) + 1
            if p not in self.sizes:
                self.sizes[p] = self._size_of(p)

    def _size_of(self, path):
        try:
            return os.stat(os.path.join(self.state_dir, path)).st_size
        except OSError:
            return 0

    # ------------------------------------------------------------------ queries

    def holds(self, path):
        return self.counts.get(path, 0) > 0

    def store_tree(self, tree):
        """The reference of a tree (state/trees/<sha256>.json, written unless it is there);
        None for an empty one."""
        if not tree:
            return None
        data = json.dumps(tree, sort_keys=True, separators=(",", ":")).encode("utf-8")
        ref = "trees/%s.json" % hashlib.sha256(data).hexdigest()
        if ref not in self.trees:
            path = os.path.join(self.state_dir, ref)
            if not os.path.exists(path):
                os.makedirs(os.path.dirname(path), exist_ok=True)
                write_atomic(path, data, self.fsync)
                if self.fsync:
                    fsync_dir(os.path.dirname(path))
            self.trees[ref] = record_refs({"files": tree})
        return ref

    def load_tree(self, ref):
        """The tree stored as ref ({} for None, or when it cannot be read)."""
        if not ref:
            return {}
        try:
            with open(os.path.join(self.state_dir, ref), "rb") as f:
                tree = json.loads(f.read())
            return tree if isinstance(tree, dict) else {}
        except (OSError, ValueError):
            return {}

    def read(self, n):
        """The full record n, its tree in "files"; NotFound when it was never made or was
        pruned."""
        if n not in self.summaries:
            kept = sorted(self.summaries)
            raise OpError("NotFound", "there is no checkpoint %d (kept: %s)" % (
                n, number_ranges(kept) if kept else "none"))
        path = os.path.join(self.dir, "%d.json" % n)
        try:
            with open(path, "rb") as f:
                record = json.loads(f.read())
        except (OSError, ValueError) as e:
            raise OpError("DataLoss", "checkpoint %d is unreadable: %s" % (n, e))
        if record.get("files_tree"):
            record["files"] = self.load_tree(record["files_tree"])
        return record

    def listing(self):
        return [dict(self.summaries[n], current=(n == self.current))
                for n in sorted(self.summaries)]

    # ------------------------------------------------------------------ writing

    def next_number(self):
        return self.last + 1

    def add(self, record):
        """Writes record (its "n" is next_number()) before the manifest names it; returns the
        bytes it added (new files it references, and itself)."""
        n = record["n"]
        os.makedirs(self.dir, exist_ok=True)
        added = 0
        refs = record_refs(record)
        if record.get("files_tree"):
            refs.add(record["files_tree"])
            refs |= self.trees.get(record["files_tree"], set())
        for p in refs:
            if self.counts.get(p):
                continue
            if p not in self.sizes:
                self.sizes[p] = self._size_of(p)
            added += self.sizes[p]
        record["added_bytes"] = added
        data = encode(dict(record, version=RECORD_VERSION))
        record["added_bytes"] = added + len(data)
        write_atomic(os.path.join(self.dir, "%d.json" % n), data, self.fsync)
        if self.fsync:
            fsync_dir(self.dir)
        self._remember(record)
        self.last = n
        return added

    def prune(self):
        """Drops the oldest records beyond the retention (never the current one). Returns the
        paths no record references any more (the caller deletes those the manifest does not
        use)."""
        freed = set()
        order = sorted(n for n in self.summaries if n != self.current)
        if self.keep_last is not None:
            while order and len(self.summaries) > self.keep_last:
                freed |= self.drop(order.pop(0))
        while order and self._held_bytes() > self.budget:
            freed |= self.drop(order.pop(0))
        return freed

    def drop_oldest_half(self):
        """For room on a full disk: drops the older half (at least one) of the records other
        than the current one. Returns (the numbers dropped, the paths no record references any
        more); no numbers when there was nothing to drop."""
        order = sorted(n for n in self.summaries if n != self.current)
        dropped, freed = order[:max(1, len(order) // 2)] if order else [], set()
        for n in dropped:
            freed |= self.drop(n)
        return dropped, freed

    def _held_bytes(self):
        """Bytes of the files only records other than the current one reference."""
        current = self.refs.get(self.current, set())
        return sum(self.sizes.get(p, 0) for p, c in self.counts.items()
                   if c > 0 and p not in current)

    def drop(self, n):
        """Forgets record n and deletes its file; returns the paths it was the last to hold."""
        freed = set()
        for p in self.refs.pop(n, ()):
            c = self.counts.get(p, 0) - 1
            if c <= 0:
                self.counts.pop(p, None)
                self.sizes.pop(p, None)
                self.trees.pop(p, None)
                freed.add(p)
            else:
                self.counts[p] = c
        self.summaries.pop(n, None)
        unlink_quiet(os.path.join(self.dir, "%d.json" % n))
        return freed

    def forget_all(self):
        """Drops every record (the state was replaced by an imported one)."""
        freed = set()
        for n in list(self.summaries):
            freed |= self.drop(n)
        return freed


def number_ranges(nums):
    """[1, 2, 3, 7] -> "1-3, 7"."""
    out, start, prev = [], None, None
    for n in nums + [None]:
        if start is not None and n == prev + 1:
            prev = n
            continue
        if start is not None:
            out.append(str(start) if start == prev else "%d-%d" % (start, prev))
        start = prev = n
    return ", ".join(out)
