"""Checkpoints (issue #15): every committed cell leaves a checkpoint of the namespace and of the
files under /output; the kernel lists them, rewinds to one (undoable), exports one for a fork and
imports it in another sandbox; retention and garbage collection keep what is referenced."""

import json
import os
import re
import subprocess

import pytest


def ok(c, code, **fields):
    r = c.run(code, **fields)
    assert r["status"] == "ok", r
    return r


def history(c):
    return c.ok("checkpoints")


def state_files(k, sub):
    try:
        return set(os.listdir(os.path.join(k.state, sub)))
    except FileNotFoundError:
        return set()


def test_every_cell_is_a_numbered_checkpoint_with_what_it_changed(kernel, client):
    r1 = ok(client, "a = [1, 2, 3]\nopen('notes.txt', 'w').write('v1')",
            execution_id="e1")
    r2 = ok(client, "b = 'x' * 1000", execution_id="e2")
    r3 = ok(client, "a.append(4)\nopen('notes.txt', 'w').write('v2')")
    assert [r1["checkpoint"], r2["checkpoint"], r3["checkpoint"]] == [1, 2, 3]
    h = history(client)
    assert h["current"] == 3
    cps = h["checkpoints"]
    assert [cp["n"] for cp in cps] == [1, 2, 3]
    assert [cp["execution_id"] for cp in cps] == ["e1", "e2", None]
    assert cps[0]["changed"] == ["a"] and cps[1]["changed"] == ["b"]
    assert cps[2]["changed"] == ["a"]
    assert cps[0]["files_changed"] == ["/output/notes.txt"]
    assert cps[1]["files_changed"] == []
    assert cps[2]["files_changed"] == ["/output/notes.txt"]
    assert all(cp["added_bytes"] > 0 and cp["time"] > 0 for cp in cps)
    assert [cp["current"] for cp in cps] == [False, False, True]
    # A cell that only read the state is a checkpoint that adds almost nothing.
    r4 = ok(client, "len(a)")
    assert r4["checkpoint"] == 4
    assert history(client)["checkpoints"][-1]["changed"] == []


def test_rewind_restores_values_and_files_and_is_undone_by_rewinding_to_previous(kernel, client):
    np = pytest.importorskip("numpy")
    del np
    ok(client, "import numpy as np\ndf = {'price': np.arange(5.0)}\n"
               "open('report.csv', 'w').write('price\\n0\\n1\\n')")
    ok(client, "open('extra.txt', 'w').write('later')")
    bad = ok(client, "df['price'][:] = -1\nopen('report.csv', 'w').write('corrupt')")
    assert bad["checkpoint"] == 3
    r = client.ok("rewind", to=1)
    assert r["checkpoint"] == 1 and r["previous"] == 3
    assert r["files_restored"] == 1 and r["files_removed"] == 1 and r["files_left"] == []
    assert ok(client, "df['price'].tolist()")["result"] == "[0.0, 1.0, 2.0, 3.0, 4.0]"
    with open(os.path.join(kernel.output, "report.csv")) as f:
        assert f.read() == "price\n0\n1\n"
    assert not os.path.exists(os.path.join(kernel.output, "extra.txt"))
    # The later checkpoints are kept: the rewind is undone by rewinding to `previous`.
    h = history(client)
    assert [cp["n"] for cp in h["checkpoints"]] == [1, 2, 3, 4]
    u = client.ok("rewind", to=r["previous"])
    assert u["checkpoint"] == 3
    assert ok(client, "df['price'].tolist()")["result"] == "[-1.0, -1.0, -1.0, -1.0, -1.0]"
    with open(os.path.join(kernel.output, "report.csv")) as f:
        assert f.read() == "corrupt"
    assert open(os.path.join(kernel.output, "extra.txt")).read() == "later"
    # A rewind survives a crash: the manifest names the checkpoint.
    client.ok("rewind", to=1)
    kernel.restart()
    c = kernel.client()
    assert ok(c, "df['price'].tolist()")["result"] == "[0.0, 1.0, 2.0, 3.0, 4.0]"


def test_a_rewind_runs_once_per_execution_id_and_refuses_unknown_checkpoints(kernel, client):
    ok(client, "x = 1")
    ok(client, "x = 2")
    r = client.ok("rewind", to=1, execution_id="rw-1")
    assert r["replayed"] is False and r["previous"] == 2
    ok(client, "x = 3")
    again = client.ok("rewind", to=1, execution_id="rw-1")
    assert again["replayed"] is True
    assert ok(client, "x")["result"] == "3"  # not rewound a second time
    missing = client.request("rewind", to=99)
    assert missing["error"]["type"] == "NotFound"
    assert "there is no checkpoint 99" in missing["error"]["message"]
    bad = client.request("rewind", to="one")
    assert bad["error"]["type"] == "InvalidArgument"


def test_uncommitted_changes_become_a_checkpoint_before_a_rewind(kernel, client):
    ok(client, "x = 1")
    ok(client, "x = 2", persist=False)
    r = client.ok("rewind", to=1)
    assert r["previous"] == 2  # the persist=false cell's state was committed first
    assert ok(client, "x")["result"] == "1"
    client.ok("rewind", to=2)
    assert ok(client, "x")["result"] == "2"


def test_clear_is_a_checkpoint_that_can_be_rewound(kernel, client):
    ok(client, "keep = {'a': 1}")
    client.ok("clear")
    assert client.request("get", name="keep")["error"]["type"] == "NotFound"
    h = history(client)
    assert h["current"] == 2 and h["checkpoints"][1]["changed"] == ["keep"]
    client.ok("rewind", to=1)
    assert ok(client, "keep")["result"] == "{'a': 1}"


def test_checkpoints_survive_kill_and_a_kill_during_commit(kernel_factory):
    k = kernel_factory()
    c = k.client()
    ok(c, "a = 1")
    ok(c, "a = 2")
    k.restart()
    c = k.client()
    assert [cp["n"] for cp in history(c)["checkpoints"]] == [1, 2]
    # Killed after the checkpoint record and before the manifest: that cell never committed,
    # and its record does not survive the restart.
    k.restart(CODEACT_TEST_CRASH_BEFORE_COMMIT="1")
    c = k.client()
    with pytest.raises((EOFError, ConnectionError, OSError)):
        c.run("a = 3")
    k.restart()
    c = k.client()
    h = history(c)
    assert [cp["n"] for cp in h["checkpoints"]] == [1, 2] and h["current"] == 2
    r = ok(c, "a")  # a cell that only reads is a checkpoint too
    assert r["result"] == "2" and r["checkpoint"] == 3
    c.ok("rewind", to=1)
    assert ok(c, "a")["result"] == "1"


@pytest.mark.checkpoints(2)
def test_retention_keeps_the_last_n_and_frees_only_unreferenced_files(kernel_factory):
    pytest.importorskip("numpy")
    kernel = kernel_factory(env={"CODEACT_STATE_CHUNK_BYTES": str(64 << 10)})
    client = kernel.client()
    ok(client, "import numpy as np\nbig = np.arange(300_000, dtype=np.float64)\nsmall = 1")
    chunks_1 = state_files(kernel, "chunks")
    assert chunks_1
    ok(client, "big = big + 1")  # new chunks; checkpoint 1 still holds the old ones
    assert chunks_1 < state_files(kernel, "chunks")
    ok(client, "small = 2")  # checkpoint 1 pruned: its chunks are freed
    h = history(client)
    assert [cp["n"] for cp in h["checkpoints"]] == [2, 3] and h["keep_last"] == 2
    assert not (chunks_1 & state_files(kernel, "chunks"))
    assert sorted(os.listdir(os.path.join(kernel.state, "checkpoints"))) == ["2.json", "3.json"]
    # Everything a kept checkpoint references is still there: each restores.
    client.ok("rewind", to=2)
    assert ok(client, "(big[:3].tolist(), small)")["result"] == "([1.0, 2.0, 3.0], 1)"
    client.ok("rewind", to=3)
    assert ok(client, "(big[:3].tolist(), small)")["result"] == "([1.0, 2.0, 3.0], 2)"
    assert client.request("rewind", to=1)["error"]["type"] == "NotFound"


def test_the_size_budget_prunes_the_oldest_checkpoints(kernel_factory):
    k = kernel_factory(env={"CODEACT_CHECKPOINT_BUDGET": str(150_000)})
    c = k.client()
    for i in range(4):
        ok(c, "blob = bytes([%d]) * 100_000" % i)
    h = history(c)
    kept = [cp["n"] for cp in h["checkpoints"]]
    assert kept[-1] == 4 and len(kept) == 2, kept  # 4 and one 100 KB blob within the budget
    assert len(state_files(k, "objects")) == 2


def test_storage_per_cell_is_what_the_cell_changed(kernel, client):
    np = pytest.importorskip("numpy")
    del np
    ok(client, "import os\nimport numpy as np\nbig = np.random.default_rng(0).random(5_000_000)\n"
               "open('data.bin', 'wb').write(os.urandom(2_000_000))")
    first = history(client)["checkpoints"][-1]["added_bytes"]
    assert first > 40_000_000
    ok(client, "counter = 1")
    added = history(client)["checkpoints"][-1]["added_bytes"]
    assert added < 64 * 1024, added


def test_a_file_over_the_limit_is_untracked_and_left_by_a_rewind(kernel_factory):
    k = kernel_factory(env={"CODEACT_CHECKPOINT_FILE_MAX": "1000"})
    c = k.client()
    ok(c, "open('big.bin', 'wb').write(bytes(5000))\n"
          "open('small.txt', 'w').write('one')")
    ok(c, "open('big.bin', 'wb').write(bytes(6000))\n"
          "open('small.txt', 'w').write('two')")
    r = c.ok("rewind", to=1)
    assert r["files_left"] == ["/output/big.bin"]
    assert open(os.path.join(k.output, "small.txt")).read() == "one"
    assert os.path.getsize(os.path.join(k.output, "big.bin")) == 6000


def test_what_cannot_be_restored_is_listed_per_checkpoint(kernel, client):
    ok(client, "import socket\ns = socket.socket()\nn = 1")
    cp = history(client)["checkpoints"][-1]
    assert "s" in cp["not_persisted"] and "n" not in cp["not_persisted"]


def test_an_export_imported_into_another_sandbox_starts_from_that_checkpoint(kernel_factory,
                                                                             base_dir):
    parent = kernel_factory("parent")
    p = parent.client()
    ok(p, "rows = [1, 2]\nopen('a.txt', 'w').write('a1')")
    ok(p, "rows.append(3)\nopen('a.txt', 'w').write('a2')\n"
          "open('b.txt', 'w').write('b')")
    e = p.ok("checkpoints.export", at=1, name="child")
    assert e["path"].endswith("/state/exports/child") and e["files_left"] == []
    child = kernel_factory("child")
    c = child.client()
    # The host copies the export into the child's workspace (here: a rename; docker cp there).
    dest = os.path.join(child.workspace, "incoming")
    os.rename(e["path"], dest)
    p.ok("checkpoints.release", name="child")
    r = c.ok("checkpoints.import", path=dest, execution_id="fork-1")
    assert r["checkpoint"] == 1 and r["restored"] == ["rows"] and r["source"] == "parent"
    assert r["source_checkpoint"] == 1
    assert ok(c, "rows")["result"] == "[1, 2]"
    assert open(os.path.join(child.output, "a.txt")).read() == "a1"
    assert not os.path.exists(os.path.join(child.output, "b.txt"))
    assert not os.path.exists(dest)
    # Independent: a change in one is invisible in the other.
    ok(c, "rows.append(99)")
    assert ok(p, "rows")["result"] == "[1, 2, 3]"
    ok(p, "rows.clear()")
    assert ok(c, "rows")["result"] == "[1, 2, 99]"
    h = history(c)
    assert [cp["n"] for cp in h["checkpoints"]] == [1, 2, 3, 4]
    assert h["checkpoints"][0]["forked_from"] == {"sandbox": "parent", "checkpoint": 1}
    # Run once: the import's retry gets its reply, it does not import again.
    assert c.ok("checkpoints.import", path=dest, execution_id="fork-1")["replayed"] is True
    child.restart()
    c = child.client()
    assert ok(c, "rows")["result"] == "[1, 2, 99]"


def test_exports_left_behind_are_deleted_when_the_kernel_starts(kernel, client):
    ok(client, "x = 1")
    e = client.ok("checkpoints.export", at=1, name="left")
    assert os.path.isdir(e["path"])
    kernel.restart()
    kernel.client()
    assert not os.path.exists(e["path"])


def test_an_unreadable_record_is_moved_aside_and_the_rest_kept(kernel, client):
    ok(client, "x = 1")
    ok(client, "x = 2")
    path = os.path.join(kernel.state, "checkpoints", "1.json")
    with open(path, "w") as f:
        f.write("{not json")
    kernel.restart()
    c = kernel.client()
    hello = c.ok("hello")
    assert any("checkpoint 1" in e["name"] for e in hello["restore_errors"]), hello
    assert [cp["n"] for cp in history(c)["checkpoints"]] == [2]
    assert any(n.startswith("1.json.unreadable") for n in state_files(kernel, "checkpoints"))
    r = ok(c, "x")
    assert r["result"] == "2" and r["checkpoint"] == 3  # numbers are never reused
    with open(os.path.join(kernel.state, "manifest.json")) as f:
        assert json.load(f)["checkpoint"] == 3


def test_a_cell_that_changes_no_file_shares_the_file_tree_of_the_one_before(kernel, client):
    ok(client, "for i in range(2000):\n    open('f%04d.txt' % i, 'w').write(str(i))")
    ok(client, "x = 1")
    last = history(client)["checkpoints"][-1]
    assert last["added_bytes"] < 4096, last  # 2000 files listed once, not per checkpoint
    assert len(state_files(kernel, "trees")) == 1
    ok(client, "open('f0001.txt', 'w').write('changed')")
    assert len(state_files(kernel, "trees")) == 2
    client.ok("rewind", to=2)
    assert open(os.path.join(kernel.output, "f0001.txt")).read() == "1"
    kernel.restart()
    c = kernel.client()
    assert history(c)["current"] == 2
    c.ok("rewind", to=3)
    assert open(os.path.join(kernel.output, "f0001.txt")).read() == "changed"


def test_files_written_outside_cells_are_saved_before_a_rewind_so_it_can_be_undone(kernel,
                                                                                 client):
    ok(client, "x = 1")
    client.ok("files.write", path="/output/by-host.txt", data_b64="aGVsbG8=")  # "hello"
    r = client.ok("rewind", to=1)
    assert r["previous"] == 2  # the write became a checkpoint first
    assert not os.path.exists(os.path.join(kernel.output, "by-host.txt"))
    client.ok("rewind", to=2)
    assert open(os.path.join(kernel.output, "by-host.txt")).read() == "hello"


def test_a_rewind_never_deletes_or_overwrites_a_file_no_checkpoint_holds(kernel_factory):
    k = kernel_factory(env={"CODEACT_CHECKPOINT_FILE_MAX": "1000"})
    c = k.client()
    ok(c, "x = 1")
    ok(c, "open('huge.bin', 'wb').write(bytes(5000))")
    r = c.ok("rewind", to=1)
    assert r["files_left"] == ["/output/huge.bin"] and r["files_removed"] == 0
    assert os.path.getsize(os.path.join(k.output, "huge.bin")) == 5000
    # An untracked file that did not change is not reported as changed by every checkpoint
    # (the first after the rewind lists it: checkpoint 1 did not have it).
    ok(c, "y = 2")
    assert history(c)["checkpoints"][-1]["files_changed"] == ["/output/huge.bin"]
    ok(c, "z = 3")
    assert history(c)["checkpoints"][-1]["files_changed"] == []


def test_a_file_name_a_kept_checkpoint_uses_is_never_written_again(kernel_factory):
    # Found on review: object files are named by cell number, and a fork counts its cells from 1
    # again, so the fork's cell 3 would have replaced the file its checkpoint 1 (the parent's
    # cell 3) holds.
    parent = kernel_factory("parent4")
    p = parent.client()
    ok(p, "a = 1")
    ok(p, "b = 2")
    ok(p, "x = 'from the parent'")  # objects/x.3.pkl
    e = p.ok("checkpoints.export", at=3, name="c")
    child = kernel_factory("child4")
    c = child.client()
    dest = os.path.join(child.workspace, "incoming")
    os.rename(e["path"], dest)
    c.ok("checkpoints.import", path=dest)
    ok(c, "x = 'one'")    # cell 1
    ok(c, "y = 0")        # cell 2
    ok(c, "x = 'three'")  # cell 3: must not write over the x.3.pkl checkpoint 1 holds
    c.ok("rewind", to=1)
    assert ok(c, "x")["result"] == "'from the parent'"


def test_an_import_refuses_a_sandbox_with_state_of_its_own(kernel_factory):
    parent = kernel_factory("parent2")
    p = parent.client()
    ok(p, "a = 1")
    e = p.ok("checkpoints.export", at=1, name="x")
    child = kernel_factory("busy")
    c = child.client()
    c.ok("files.write", path="/output/mine.txt", data_b64="bWluZQ==")
    dest = os.path.join(child.workspace, "incoming")
    os.rename(e["path"], dest)
    r = c.request("checkpoints.import", path=dest)
    assert r["error"]["type"] == "AlreadyExists", r
    assert open(os.path.join(child.output, "mine.txt")).read() == "mine"


def test_files_with_the_same_content_are_separate_files_in_a_fork(kernel_factory):
    parent = kernel_factory("parent3")
    p = parent.client()
    ok(p, "open('a.txt', 'w').write('same')\nopen('b.txt', 'w').write('same')")
    e = p.ok("checkpoints.export", at=1, name="dup")
    out = os.path.join(e["path"], "output")
    assert os.stat(os.path.join(out, "a.txt")).st_ino != os.stat(os.path.join(out, "b.txt")).st_ino


def test_a_full_disk_drops_the_oldest_checkpoints_to_make_room(kernel_factory, base_dir):
    # The storage on a 12 MiB tmpfs; each cell replaces a 2 MiB array (random: nothing shared),
    # so the checkpoints kept under the default budget soon fill it.
    pytest.importorskip("numpy")
    storage = os.path.join(base_dir, "storage")
    os.makedirs(storage)
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs",
                                            storage], capture_output=True).returncode != 0:
        pytest.skip("needs root and tmpfs mounts (a small filesystem to fill)")
    k = None
    try:
        k = kernel_factory(env={"CODEACT_STATE_CHUNK_BYTES": str(1 << 20)})
        c = k.client()
        ok(c, "import numpy as np")
        notices = []
        for i in range(1, 9):
            r = ok(c, "a = np.random.default_rng(%d).random(2 * 2**20 // 8)\nseed = %d" % (i, i))
            assert "persist_error" not in r, (i, r)  # every cell is saved
            if "the disk was full" in (r.get("notice") or ""):
                notices.append(r["notice"])
        assert notices, "the disk never filled: the test proves nothing"
        # The oldest go first (1 first of all), and the cell says which.
        assert re.match(r"the disk was full: checkpoints? 1\b.* dropped to make room$",
                        notices[0]), notices
        kept = [cp["n"] for cp in history(c)["checkpoints"]]
        assert kept[-1] == 9 and 1 not in kept, kept
        # Every kept checkpoint still restores, and the last one survives a restart.
        for n in kept:
            client_seed = n - 1  # cell n set seed n-1 (cell 1 imported numpy)
            if client_seed < 1:
                continue
            c.ok("rewind", to=n)
            want = "np.random.default_rng(%d).random(4).tolist()" % client_seed
            assert ok(c, "a[:4].tolist() == %s, seed" % want)["result"] == \
                "(True, %d)" % client_seed
        c.ok("rewind", to=kept[-1])
        k.restart()
        c = k.client()
        assert c.ok("hello")["restore_errors"] == []
        assert ok(c, "seed")["result"] == "8"
    finally:
        if k is not None:
            k.stop()  # before the unmount
        subprocess.run(["umount", "-l", storage])
