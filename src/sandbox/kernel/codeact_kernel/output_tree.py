"""The files under /output as a checkpoint keeps them: a tree {relative path: {sha256, size,
mtime_ns, ino}} whose contents are blobs in state/blobs/<sha256>, shared by every checkpoint that
lists the same content. A file whose (mtime, size, inode) did not change since the last tree is
not read again.

A file is left untracked ("sha256": null, with the reason) when it is larger than
CODEACT_CHECKPOINT_FILE_MAX (bytes, default 512 MiB), unreadable, or when the disk is full: a
rewind leaves such a file as it is and says so."""

import errno
import hashlib
import os

from .atomic_files import fsync_dir, unlink_quiet

DEFAULT_FILE_MAX = 512 << 20
_BLOCK = 1 << 20


def file_max():
    try:
        return int(os.environ.get("CODEACT_CHECKPOINT_FILE_MAX") or DEFAULT_FILE_MAX)
    except ValueError:
        return DEFAULT_FILE_MAX


def _store_blob(path, blobs_dir, fsync):
    """Copies path into blobs_dir under the sha256 of the bytes copied (hashed as they are
    copied, so a file still being written cannot give a blob whose name is not its content);
    returns that sha256."""
    tmp = os.path.join(blobs_dir, ".incoming-%d" % os.getpid())
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fin, open(tmp, "wb") as fout:
            for block in iter(lambda: fin.read(_BLOCK), b""):
                h.update(block)
                fout.write(block)
            fout.flush()
            if fsync:
                os.fsync(fout.fileno())
        sha = h.hexdigest()
        blob = os.path.join(blobs_dir, sha)
        if os.path.exists(blob):
            unlink_quiet(tmp)
        else:
            os.replace(tmp, blob)
        return sha
    except BaseException:
        unlink_quiet(tmp)
        raise


def _copy(src, dst, fsync):
    """Copies src to dst through a temporary file renamed into place."""
    tmp = "%s.tmp-%d" % (dst, os.getpid())
    try:
        with open(src, "rb") as fin, open(tmp, "wb") as fout:
            for block in iter(lambda: fin.read(_BLOCK), b""):
                fout.write(block)
            fout.flush()
            if fsync:
                os.fsync(fout.fileno())
        os.replace(tmp, dst)
    except BaseException:
        unlink_quiet(tmp)
        raise


def update(output_dir, scan, previous, blobs_dir, fsync):
    """The tree of output_dir. scan: {absolute path: (mtime_ns, size, ino)} of its regular
    files; previous: the last tree (its hashes are reused for unchanged files). New contents are
    copied to blobs_dir. Returns (tree, {relative paths whose content changed or that went})."""
    tree, changed = {}, set()
    limit = file_max()
    made_dir = False
    for path, (mtime, size, ino) in scan.items():
        rel = os.path.relpath(path, output_dir)
        old = previous.get(rel)
        if old and (old.get("mtime_ns"), old.get("size"), old.get("ino")) == (mtime, size, ino) \
                and (old.get("sha256") or size > limit):
            tree[rel] = old  # unchanged (an untracked big one stays untracked)
            continue
        entry = {"sha256": None, "size": size, "mtime_ns": mtime, "ino": ino}
        if size > limit:
            entry["reason"] = "larger than the %d bytes kept per file" % limit
        else:
            try:
                if not made_dir:
                    os.makedirs(blobs_dir, exist_ok=True)
                    made_dir = True
                entry["sha256"] = _store_blob(path, blobs_dir, fsync)
            except OSError as e:
                entry["reason"] = ("the disk is full" if e.errno == errno.ENOSPC
                                   else "unreadable: %s" % e.strerror)
        tree[rel] = entry
        if not old or old.get("sha256") != entry["sha256"] or not entry["sha256"]:
            changed.add(rel)
    changed.update(rel for rel in previous if rel not in tree)
    if made_dir and fsync:
        fsync_dir(blobs_dir)
    return tree, changed


def restore(output_dir, target, current_scan, current_tree, blobs_dir):
    """Makes output_dir hold target's files: each tracked file whose content differs is written
    from its blob, each file the target does not list is deleted. current_tree: the tree of the
    files now (current_scan), just committed. A file whose content no blob holds (untracked, in
    either tree) is left as it is, never deleted or overwritten. Returns {"restored": n,
    "removed": n, "left": [paths left as they are]}."""
    restored, removed, left = 0, 0, set()
    here = {}  # rel -> the sha256 of its content now (None: kept in no blob)
    for path, sig in current_scan.items():
        rel = os.path.relpath(path, output_dir)
        cur = current_tree.get(rel)
        same = cur and cur.get("sha256") and (cur.get("mtime_ns"), cur.get("size"),
                                              cur.get("ino")) == sig
        here[rel] = cur["sha256"] if same else None
    for rel, entry in target.items():
        sha = entry.get("sha256")
        if not sha or (rel in here and here[rel] is None):
            left.add("/output/" + rel)
            continue
        path = os.path.join(output_dir, rel)
        if here.get(rel) == sha:
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _copy(os.path.join(blobs_dir, sha), path, False)
        restored += 1
    for rel, sha in here.items():
        if rel in target:
            continue
        if sha is None:
            left.add("/output/" + rel)
            continue
        unlink_quiet(os.path.join(output_dir, rel))
        removed += 1
    return {"restored": restored, "removed": removed, "left": sorted(left)}


def link_into(target, blobs_dir, dest_dir):
    """Puts target's tracked files under dest_dir (an export): the first file of each content
    a hard link to its blob, any other with the same content a copy (files that are links to
    each other would stay links in the archive the host makes of the export). Returns the
    untracked paths, which are not exported."""
    left, linked = [], set()
    for rel, entry in sorted(target.items()):
        sha = entry.get("sha256")
        if not sha:
            left.append("/output/" + rel)
            continue
        dst = os.path.join(dest_dir, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if sha in linked:
            _copy(os.path.join(blobs_dir, sha), dst, False)
        else:
            os.link(os.path.join(blobs_dir, sha), dst)
            linked.add(sha)
    return left
