"""Big numpy arrays in the snapshot as fixed-size chunks named by their content hash.

A plain ndarray (not a subclass) of a non-object dtype bigger than one chunk is not written into
the pickle of the names holding it: the pickle keeps a small header in its place (dtype, shape,
memory order, chunk size, the chunks' sha256), saved as a call to
_codeact_kernel_rt.chunked_array, and the array's bytes go to state/chunks/<sha256>, one file per
chunk (tmp + rename; with durability fsync, all of a commit's chunks are fsynced before its
manifest is written). A chunk already on disk is never written again, so a one-element change
writes one chunk, and equal chunks (zeros) are stored once. Every chunk is still hashed at each
save of its array: the pickle's own sha256 then covers the array's content, and an unchanged
array writes nothing.

Chunk size: CODEACT_STATE_CHUNK_BYTES (default 16 MiB; 0 turns chunking off, so arrays are
pickled whole as before). Which chunks the manifest references is the entries' "chunks" lists;
the store removes the others after a commit. Main thread only."""

import hashlib
import importlib
import os
import sys

from .atomic_files import fsync_dir, unlink_quiet, write_atomic

DEFAULT_CHUNK_BYTES = 16 << 20
MIN_CHUNK_BYTES = 64 << 10

_load_dir = None  # state/chunks of the store that restores (set by ArrayChunks)


class SnapshotWriteError(OSError):
    """Writing a file of the snapshot failed while pickling (a full disk, an I/O error): the
    commit fails as a whole (the last committed state stays), rather than the value being
    reported as unpicklable and dropped from the snapshot."""

    @classmethod
    def of(cls, e, what):
        return cls(e.errno, e.strerror or str(e), what)


def chunk_bytes_from_env():
    """The chunk size CODEACT_STATE_CHUNK_BYTES asks for (0: no chunking)."""
    raw = os.environ.get("CODEACT_STATE_CHUNK_BYTES", "").strip()
    if not raw:
        return DEFAULT_CHUNK_BYTES
    try:
        n = int(raw)
    except ValueError:
        return DEFAULT_CHUNK_BYTES
    return 0 if n <= 0 else max(n, MIN_CHUNK_BYTES)


def _raw_bytes(arr, fortran):
    """The array's memory as a flat uint8 array (a view, no copy). REQUIRES: arr contiguous in
    the order given."""
    np = sys.modules["numpy"]
    return (arr.T if fortran else arr).reshape(-1).view(np.uint8)


def chunked_array(dtype, shape, fortran, chunk_bytes, hashes):
    """Unpickling hook: the array rebuilt from its chunk files, read straight into its memory."""
    np = importlib.import_module("numpy")
    arr = np.empty(shape, dtype=dtype, order="F" if fortran else "C")
    raw = memoryview(_raw_bytes(arr, fortran))
    n = raw.nbytes
    if len(hashes) != -(-n // chunk_bytes):
        raise ValueError("chunked array header lists %d chunks for %d bytes" % (len(hashes), n))
    for i, h in enumerate(hashes):
        piece = raw[i * chunk_bytes:(i + 1) * chunk_bytes]
        path = os.path.join(_load_dir, h)
        with open(path, "rb", buffering=0) as f:
            got = 0
            while got < piece.nbytes:
                k = f.readinto(piece[got:])
                if not k:
                    break
                got += k
            if got != piece.nbytes or f.read(1):
                raise ValueError("chunk file chunks/%s has the wrong size" % h)
    return arr


class ChunkUse:
    """What one pickle's arrays used: chunk names (ordered, unique), the arrays' bytes and the
    bytes of chunks written for it."""

    def __init__(self):
        self.chunks = {}  # sha256 -> chunk length
        self.array_bytes = 0
        self.written_bytes = 0


class ArrayChunks:
    """The chunk files of one state directory and the arrays seen during the commit running."""

    def __init__(self, state_dir, chunk_bytes, fsync):
        global _load_dir
        self.dir = os.path.join(state_dir, "chunks")
        _load_dir = self.dir
        self.chunk_bytes = chunk_bytes
        self.fsync = fsync
        self.on_disk = set()  # chunk names known to be complete files in self.dir
        self.written = set()  # chunk names written and not yet referenced by a manifest
        self._unsynced = []  # paths written since begin(), fsynced by end()
        self._seen = {}  # id(array) -> (array, header, bytes written): hashed once per commit

    def accepts(self, arr):
        """Whether arr (an exact numpy.ndarray) is stored as chunks."""
        return (self.chunk_bytes > 0 and arr.nbytes > self.chunk_bytes
                and not arr.dtype.hasobject)

    def begin(self):
        self._seen = {}
        self._unsynced = []

    def release(self):
        """After the commit (also a failed one): drops the references to the arrays seen."""
        self._seen = {}

    def sync(self):
        """Before the manifest that references them: makes the chunks written since begin()
        durable (durability fsync). They are written without fsync and synced together here, so
        the disk writes back earlier chunks while later ones are hashed."""
        paths, self._unsynced = self._unsynced, []
        if not self.fsync or not paths:
            return
        for path in paths:
            try:
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as e:
                raise SnapshotWriteError.of(e, path)
        fsync_dir(self.dir)

    def reduce(self, arr, use):
        """The pickle reduce value standing for arr; writes the chunks that are not on disk yet.
        use: the ChunkUse of the pickle being made."""
        hit = self._seen.get(id(arr))
        if hit is None or hit[0] is not arr:
            hit = (arr,) + self._store(arr)
            self._seen[id(arr)] = hit
        header = hit[1]
        size = arr.nbytes
        use.array_bytes += size
        use.written_bytes += hit[2]
        cb = header[3]
        for i, h in enumerate(header[4]):
            use.chunks[h] = min(cb, size - i * cb)
        return (chunked_array, header)

    def _store(self, arr):
        """(header, bytes written) for arr."""
        fortran = bool(arr.flags.f_contiguous and not arr.flags.c_contiguous)
        if not (arr.flags.c_contiguous or arr.flags.f_contiguous):
            arr = sys.modules["numpy"].ascontiguousarray(arr)
        raw = memoryview(_raw_bytes(arr, fortran))
        cb = self.chunk_bytes
        hashes = []
        written = 0
        for off in range(0, raw.nbytes, cb):
            piece = raw[off:off + cb]
            h = hashlib.sha256(piece).hexdigest()
            if h not in self.on_disk:
                if not self.written and not os.path.isdir(self.dir):
                    os.makedirs(self.dir, exist_ok=True)
                path = os.path.join(self.dir, h)
                try:
                    write_atomic(path, piece, False)
                except OSError as e:
                    raise SnapshotWriteError.of(e, "state/chunks/" + h)
                self._unsynced.append(path)
                self.on_disk.add(h)
                self.written.add(h)
                written += piece.nbytes
            hashes.append(h)
        return (arr.dtype, tuple(arr.shape), fortran, cb, tuple(hashes)), written

    def remove(self, names):
        """Deletes chunk files (no longer referenced by the manifest)."""
        for h in names:
            unlink_quiet(os.path.join(self.dir, h))
            self.on_disk.discard(h)
