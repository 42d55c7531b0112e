"""Big numpy arrays are saved as content-addressed chunks (state/chunks/<sha256>): a one-element
change writes one chunk, unchanged chunks are never written again, chunks nothing references are
removed after the commit, and the array restores equal (dtype, shape, memory order). Every
execute reply says how long saving took (snapshot_ms) and a slow save says so in its notice.
Snapshots of the previous format (one pickle per name, manifest version 1), written by the
previous kernel itself, still restore."""

import json
import os
import shutil
import subprocess

import pytest

import conftest

np = pytest.importorskip("numpy")

MIB = 1 << 20
CHUNK = MIB  # small chunks keep the arrays of these tests small
OLD_FORMAT_COMMIT = "b21a3e9"  # the last kernel writing manifest version 1


def manifest(k):
    with open(os.path.join(k.state, "manifest.json")) as f:
        return json.load(f)


def chunk_files(k):
    """{name: (inode, mtime_ns)} of the chunk files on disk."""
    d = os.path.join(k.state, "chunks")
    if not os.path.isdir(d):
        return {}
    out = {}
    for fn in os.listdir(d):
        st = os.stat(os.path.join(d, fn))
        out[fn] = (st.st_ino, st.st_mtime_ns)
    return out


@pytest.fixture
def chunked(kernel_factory):
    k = kernel_factory(env={"CODEACT_STATE_CHUNK_BYTES": str(CHUNK)})
    return k, k.client()


def ok(c, code):
    r = c.run(code)
    assert r["status"] == "ok", r
    return r


@pytest.mark.checkpoints(1)  # the replaced files are deleted at once
def test_one_element_change_writes_one_chunk_and_the_array_restores_equal(chunked):
    k, c = chunked
    ok(c, "import numpy as np\nrng = np.random.default_rng(7)\n"
          "arr = rng.random(8 * %d // 8)\nsmall = 1" % CHUNK)
    entry = manifest(k)["entries"]["arr"]
    assert len(entry["chunks"]) == 8
    assert entry["size"] > 8 * CHUNK  # the chunks count in the size vars reports
    pickle_size = os.path.getsize(os.path.join(k.state, entry["file"]))
    assert pickle_size < 4096  # the pickle holds a header, not the data
    before = chunk_files(k)
    assert set(before) == set(entry["chunks"])

    ok(c, "arr[3 * %d // 8 + 5] = -1.0" % CHUNK)  # inside the fourth chunk
    after = chunk_files(k)
    new_entry = manifest(k)["entries"]["arr"]
    written = set(after) - set(before)
    assert len(written) == 1
    assert new_entry["chunks"][3] in written
    assert new_entry["chunks"][:3] + new_entry["chunks"][4:] == \
        entry["chunks"][:3] + entry["chunks"][4:]
    for h in set(before) & set(after):  # the other seven: the same files, not rewritten
        assert after[h] == before[h]
    assert entry["chunks"][3] not in after  # the replaced chunk is removed after the commit

    # Only read: nothing written at all.
    ok(c, "float(arr.sum())")
    assert chunk_files(k) == after
    assert manifest(k)["entries"]["arr"] == new_entry

    want = ok(c, "float(arr.sum()), arr.dtype.str, arr.shape")["result"]
    k.restart()
    c = k.client()
    assert c.ok("hello")["restore_errors"] == []
    assert ok(c, "float(arr.sum()), arr.dtype.str, arr.shape")["result"] == want
    assert ok(c, "float(arr[3 * %d // 8 + 5])" % CHUNK)["result"] == "-1.0"
    assert ok(c, "rng2 = np.random.default_rng(7)\nref = rng2.random(arr.size)\n"
                 "ref[3 * %d // 8 + 5] = -1.0\nbool((ref == arr).all())" % CHUNK)["result"] \
        == "True"


def test_layouts_and_dtypes_restore_exactly(chunked):
    k, c = chunked
    n = 3 * CHUNK // 8
    ok(c, "import numpy as np\n"
          "f_order = np.asfortranarray(np.arange(%d, dtype=np.float64).reshape(-1, 64))\n"
          "strided = np.arange(%d, dtype=np.int64)[::2]\n"  # not contiguous: saved as a copy
          "rec = np.zeros(%d, dtype=[('a', '<i4'), ('b', '<f8')])\nrec['a'] = 3\n"
          "when = np.arange(0, %d, dtype='datetime64[s]')\n"
          "big_endian = np.arange(%d, dtype='>u4')" % (n, 2 * n + 2, n // 3, n, n * 2))
    entries = manifest(k)["entries"]
    for name in ("f_order", "strided", "rec", "when", "big_endian"):
        assert entries[name].get("chunks"), name
    probe = ("(f_order.flags.f_contiguous, f_order.shape, float(f_order[5, 7]), "
             "strided.shape, int(strided[-1]), rec.dtype.descr, int(rec['a'].sum()), "
             "str(when[-1]), big_endian.dtype.str, int(big_endian[-1]))")
    want = ok(c, probe)["result"]
    k.restart()
    c = k.client()
    assert c.ok("hello")["restore_errors"] == []
    assert ok(c, probe)["result"] == want


@pytest.mark.checkpoints(1)  # the replaced files are deleted at once
def test_equal_chunks_are_stored_once_and_unreferenced_chunks_are_removed(chunked):
    k, c = chunked
    ok(c, "import numpy as np\nzeros = np.zeros(6 * %d, dtype=np.uint8)\n"
          "ones = np.ones(2 * %d, dtype=np.uint8)" % (CHUNK, CHUNK))
    m = manifest(k)["entries"]
    assert len(m["zeros"]["chunks"]) == 1  # the distinct chunk files an entry uses
    assert len(chunk_files(k)) == 2  # one zero chunk, one chunk of ones
    ok(c, "del ones")
    assert set(chunk_files(k)) == set(m["zeros"]["chunks"])
    ok(c, "zeros = np.full(3 * %d, 9, dtype=np.uint8)" % CHUNK)
    now = manifest(k)["entries"]["zeros"]["chunks"]
    assert set(chunk_files(k)) == set(now) and not set(now) & set(m["zeros"]["chunks"])
    ok(c, "del zeros")
    assert chunk_files(k) == {}


def test_fsync_durability_saves_and_restores_chunks(kernel_factory):
    k = kernel_factory(env={"CODEACT_STATE_CHUNK_BYTES": str(CHUNK),
                            "CODEACT_DURABILITY": "fsync"})
    c = k.client()
    ok(c, "import numpy as np\nsynced = np.arange(3 * %d // 8, dtype=np.float64)" % CHUNK)
    before = chunk_files(k)
    ok(c, "synced[-1] = 0.5")
    assert len(set(chunk_files(k)) - set(before)) == 1
    k.restart()
    c = k.client()
    assert ok(c, "float(synced[-1]), float(synced[-2])")["result"] == \
        "(0.5, %r)" % float(3 * CHUNK // 8 - 2)


@pytest.mark.checkpoints(1)  # the replaced files are deleted at once
def test_clear_removes_the_chunks_with_the_state(chunked):
    k, c = chunked
    ok(c, "import numpy as np\ngone = np.arange(3 * %d // 8, dtype=np.float64)" % CHUNK)
    assert len(chunk_files(k)) == 3
    assert c.ok("clear")["cleared"] == ["gone", "np"]
    assert chunk_files(k) == {}
    k.restart()
    assert k.client().ok("hello")["restored"] == []


def test_an_array_shared_by_two_names_is_one_array_after_a_restore(chunked):
    k, c = chunked
    ok(c, "import numpy as np\nbase = np.arange(4 * %d // 8, dtype=np.float64)\n"
          "cfg = {'data': base}" % CHUNK)
    k.restart()
    c = k.client()
    assert ok(c, "cfg['data'] is base")["result"] == "True"
    assert len(chunk_files(k)) == 4


def test_crash_before_the_manifest_leaves_no_chunk_behind(chunked):
    k, c = chunked
    ok(c, "import numpy as np\nkept = np.arange(2 * %d // 8, dtype=np.float64)" % CHUNK)
    kept_chunks = set(chunk_files(k))
    k.restart(CODEACT_TEST_CRASH_BEFORE_COMMIT="1")
    c = k.client()
    with pytest.raises(EOFError):
        c.run("extra = np.ones(3 * %d // 8)" % CHUNK)
    k.kill9()
    assert len(chunk_files(k)) > len(kept_chunks)  # written before the crash
    k.start()
    c = k.client()
    assert c.ok("hello")["restore_errors"] == []
    assert set(chunk_files(k)) == kept_chunks
    assert ok(c, "'extra' in globals(), float(kept[-1])")["result"] == \
        "(False, %r)" % float(2 * CHUNK // 8 - 1)


def test_chunking_off_pickles_arrays_whole_and_both_formats_restore(kernel_factory):
    k = kernel_factory(env={"CODEACT_STATE_CHUNK_BYTES": "0"})
    c = k.client()
    ok(c, "import numpy as np\nwhole = np.arange(3 * %d // 8, dtype=np.float64)" % CHUNK)
    entry = manifest(k)["entries"]["whole"]
    assert "chunks" not in entry and chunk_files(k) == {}
    assert os.path.getsize(os.path.join(k.state, entry["file"])) > 3 * CHUNK
    # Chunking on: the whole pickle restores; the next change stores the array as chunks.
    k.restart(CODEACT_STATE_CHUNK_BYTES=str(CHUNK))
    c = k.client()
    assert c.ok("hello")["restore_errors"] == []
    ok(c, "whole[0] = 5.0")
    assert len(manifest(k)["entries"]["whole"]["chunks"]) == 3
    # And back: chunks restore with chunking off.
    k.restart(CODEACT_STATE_CHUNK_BYTES="0")
    c = k.client()
    assert c.ok("hello")["restore_errors"] == []
    assert ok(c, "float(whole[0] + whole[-1])")["result"] == repr(5.0 + 3 * CHUNK // 8 - 1)


def test_every_execute_reply_says_how_long_saving_took(chunked):
    k, c = chunked
    r = ok(c, "x = 1")
    assert isinstance(r["snapshot_ms"], float) and r["snapshot_ms"] >= 0
    assert "notice" not in r  # a fast save is not a notice
    r = c.run("y = 2", persist=False)
    assert r["snapshot_ms"] == 0.0
    r = ok(c, "import numpy as np\nbulk = np.ones(4 * %d // 8)" % CHUNK)
    assert r["snapshot_ms"] > 0


def test_a_slow_save_says_what_took_the_time(kernel_factory):
    # The threshold (1 s by default) lowered, so a small array is "slow".
    k = kernel_factory(env={"CODEACT_STATE_CHUNK_BYTES": str(CHUNK),
                            "CODEACT_SLOW_SAVE_SECONDS": "0"})
    c = k.client()
    r = ok(c, "import numpy as np\narr = np.arange(4 * %d // 8, dtype=np.float64)" % CHUNK)
    assert r["notice"].startswith("saving the state took ")
    assert "arr (4.0 MiB ndarray) rewritten" in r["notice"], r["notice"]
    r = ok(c, "arr[0] = 1.0")
    assert "arr (4.0 MiB ndarray): 1.0 MiB of it written" in r["notice"], r["notice"]
    r = ok(c, "float(arr[1])")
    assert "arr (4.0 MiB ndarray) checked, unchanged" in r["notice"], r["notice"]


def _old_kernel(tmp):
    """The package of the last kernel that wrote manifest version 1, from git history."""
    try:
        data = subprocess.run(["git", "-C", conftest.REPO, "archive", OLD_FORMAT_COMMIT,
                               "src/sandbox/kernel/codeact_kernel"], check=True,
                              capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip("the previous kernel is not in git history here: %s" % e)
    subprocess.run(["tar", "-x", "-C", tmp], input=data, check=True)
    return os.path.join(tmp, "src", "sandbox", "kernel", "codeact_kernel")


def test_snapshot_of_the_previous_format_restores(kernel_factory, base_dir, monkeypatch):
    old_dir = os.path.join(base_dir, "old-kernel")
    os.makedirs(old_dir)
    old = _old_kernel(old_dir)
    with monkeypatch.context() as mp:
        mp.setattr(conftest, "KERNEL", old)
        k = kernel_factory()
        c = k.client()
        ok(c, "import numpy as np\nfrom collections import OrderedDict\n"
              "arr = np.arange(5 * %d // 8, dtype=np.float64)\n"
              "a = [1]\nb = a\n"
              "def double(v):\n    return 2 * v\n"
              "class Pt:\n    def __init__(self, x):\n        self.x = x\n"
              "p = Pt(3)\nod = OrderedDict(z=1)" % CHUNK)
        k.kill9()
    m = manifest(k)
    assert m["version"] == 1 and "chunks" not in m["entries"]["arr"]
    old_files = {e["file"] for e in m["entries"].values() if e["file"]}
    k.start(CODEACT_STATE_CHUNK_BYTES=str(CHUNK))
    c = k.client()
    h = c.ok("hello")
    assert h["restore_errors"] == []
    assert set(h["restored"]) >= {"np", "OrderedDict", "arr", "a", "b", "double", "Pt", "p",
                                  "od"}
    # A cell that touches none of them keeps the old files.
    ok(c, "n = 1")
    assert old_files <= {e["file"] for e in manifest(k)["entries"].values() if e["file"]}
    probe = "(float(arr.sum()), a, b, double(p.x), type(p) is Pt, dict(od))"
    want = "(%r, [1], [1], 6, True, {'z': 1})" % float(sum(range(5 * CHUNK // 8)))
    assert ok(c, probe)["result"] == want
    # The next save of a value writes the new format (arr as chunks, a and b together).
    ok(c, "arr[0] = 1.0\nb = a")
    m = manifest(k)
    assert m["version"] == 2 and len(m["entries"]["arr"]["chunks"]) == 5
    assert m["entries"]["a"]["file"] == m["entries"]["b"]["file"]
    k.restart()
    c = k.client()
    assert c.ok("hello")["restore_errors"] == []
    assert ok(c, "float(arr[0]), a is b")["result"] == "(1.0, True)"
    shutil.rmtree(old_dir, ignore_errors=True)


@pytest.mark.checkpoints(1)  # the replaced files are deleted at once
def test_a_full_disk_fails_the_save_and_keeps_the_last_committed_state(kernel_factory, base_dir):
    # The storage on a 12 MiB tmpfs: the second cell's array does not fit.
    storage = os.path.join(base_dir, "storage")
    os.makedirs(storage)
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs",
                                            storage], capture_output=True).returncode != 0:
        pytest.skip("needs root and tmpfs mounts (a small filesystem to fill)")
    k = None
    try:
        k = kernel_factory(env={"CODEACT_STATE_CHUNK_BYTES": str(CHUNK)})
        c = k.client()
        ok(c, "import numpy as np\nkeep = np.arange(2 * %d // 8, dtype=np.float64)" % CHUNK)
        r = ok(c, "keep[0] = -1.0\nbig = np.arange(16 * %d // 8, dtype=np.float64)" % CHUNK)
        assert "No space left on device" in r["persist_error"], r
        assert r["not_persisted"] == []  # the disk failed, not the values
        assert manifest(k)["entries"]["keep"]["chunks"]
        assert "big" not in manifest(k)["entries"]
        k.restart()
        c = k.client()
        h = c.ok("hello")
        assert h["restore_errors"] == [] and "keep" in h["restored"]
        assert ok(c, "float(keep[0]), 'big' in globals()")["result"] == "(0.0, False)"
        # Space is back: the next cell saves again and leaves no chunk behind.
        r = ok(c, "keep[0] = -2.0")
        assert "persist_error" not in r
        assert set(chunk_files(k)) == set(manifest(k)["entries"]["keep"]["chunks"])
    finally:
        if k is not None:
            k.stop()  # before the unmount
        subprocess.run(["umount", "-l", storage])
