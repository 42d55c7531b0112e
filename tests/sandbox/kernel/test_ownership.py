"""Ownership epochs (ownership.py): a kernel started for placement n of a sandbox on shared
storage stops without committing once a newer placement exists, so a host that was cut off and
comes back never overwrites its successor's state. What the host sees: the kernel's exit status
76, the state of the last commit unchanged, and a start refused while a newer placement exists.
"""
import os
import threading
import time

import pytest


def owner_dir(kernel):
    return os.path.join(kernel.base, "owner")


def place(kernel, n, host):
    """What a host does when it places the sandbox (shared_storage.cpp take_placement)."""
    os.makedirs(owner_dir(kernel), exist_ok=True)
    with open(os.path.join(owner_dir(kernel), str(n)), "w") as f:
        f.write(host + "\n")


def start(kernel, epoch, **env):
    return kernel.start(CODEACT_EPOCH=str(epoch), CODEACT_OWNER_DIR=owner_dir(kernel), **env)


def state_files(kernel):
    """Every file of the kernel's state directory and its content (a commit writes objects,
    execution records and a checkpoint record before the manifest)."""
    out = {}
    for root, _, files in os.walk(kernel.state):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, kernel.state)] = f.read()
    return out


def wait_exit(kernel, timeout=10):
    kernel.proc.wait(timeout)
    return kernel.proc.returncode


def test_a_cell_that_finds_a_newer_placement_at_its_commit_exits_without_committing(
        kernel_factory):
    k = kernel_factory(start=False)
    place(k, 1, "h1")
    start(k, 1, CODEACT_OWNER_CHECK_SECONDS="0")  # only the commit's own checks
    c = k.client()
    assert c.run("x = 1")["status"] == "ok"
    before = state_files(k)
    # The sandbox is placed on h2 while a cell runs here; the cell ends and would commit.
    threading.Timer(0.3, place, (k, 2, "h2")).start()
    with pytest.raises(Exception):
        c.run("import time\ntime.sleep(0.6)\nx = 2", timeout=30)
    assert wait_exit(k) == 76
    assert state_files(k) == before, "the fenced cell wrote to the state"
    assert "placed on host h2 (epoch 2; this container has epoch 1)" in k.read_log()


def test_an_idle_kernel_exits_within_seconds_of_a_newer_placement(kernel_factory):
    k = kernel_factory(start=False)
    place(k, 1, "h1")
    start(k, 1)
    c = k.client()
    assert c.run("y = 'kept'")["status"] == "ok"
    placed = time.monotonic()
    place(k, 2, "h2")
    assert wait_exit(k) == 76
    assert time.monotonic() - placed < 5


def test_a_kernel_of_an_older_placement_does_not_start_and_one_of_the_newest_restores(
        kernel_factory):
    k = kernel_factory(start=False)
    place(k, 1, "h1")
    start(k, 1)
    assert k.client().run("z = 41")["status"] == "ok"
    place(k, 2, "h2")
    assert wait_exit(k) == 76
    k.kill9()
    with pytest.raises(RuntimeError, match="exited with 76"):
        start(k, 1)
    k.kill9()
    start(k, 2)
    assert k.client().run("z + 1")["result"] == "42"


def test_without_an_epoch_nothing_is_checked(kernel_factory):
    k = kernel_factory(start=False)
    place(k, 5, "elsewhere")
    k.start(CODEACT_OWNER_DIR=owner_dir(k))
    assert k.client().run("w = 1")["status"] == "ok"
    assert k.proc.poll() is None
