"""A cell that closes the kernel's descriptors (issue #17 §3): the kernel keeps its own above
1024, out of reach of the usual os.closerange(3, 1024); when a cell closes them anyway, the
kernel commits and exits with status 75 so that the host restarts the sandbox from its snapshot
(instead of staying alive but deaf)."""

import os
import time

import pytest

from conftest import STARTS_AS_ROOT

EXIT_LOST_SOCKET = 75


def kernel_fds(pid):
    out = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            out[int(fd)] = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            pass
    return out


def test_the_kernels_own_descriptors_are_above_1024(kernel, client):
    fds = kernel_fds(kernel.kernel_pid)
    sockets = [fd for fd, target in fds.items() if target.startswith("socket:")]
    pipes = [fd for fd, target in fds.items() if target.startswith("pipe:") and fd > 2]
    assert sockets and all(fd >= 1024 for fd in sockets), fds
    assert pipes and all(fd >= 1024 for fd in pipes), fds


def test_a_cell_closing_descriptors_below_1024_changes_nothing(kernel, client):
    client.run("x = 41")
    r = client.run("import os\nos.closerange(3, 1024)\nx + 1")
    assert r["result"] == "42"
    assert client.run("print('still here')")["stdout"] == "still here\n"
    assert client.ok("bash", script="echo bash too")["stdout"] == "bash too\n"
    assert kernel.client().run("x")["result"] == "41"  # new connections too


def test_a_cell_closing_every_descriptor_makes_the_kernel_exit_75_after_committing(kernel,
                                                                                      client):
    client.run("before = 1")
    client.send({"id": 99, "op": "execute",
                 "code": "import os\nduring = 2\nos.closerange(3, 1 << 16)"})
    with pytest.raises((EOFError, OSError)):
        client.recv()  # its connection went with the descriptors
    assert kernel.proc.wait(10) == EXIT_LOST_SOCKET
    if STARTS_AS_ROOT:  # the kernel's log went with its descriptors; its init says why
        assert "a cell closed the kernel's socket" in kernel.read_log()
    kernel.start()
    c = kernel.client()
    assert c.run("(before, during)")["result"] == "(1, 2)"


def test_a_cell_that_closes_everything_and_hangs_is_interrupted(kernel, client):
    """The issue's case: the client gave up, the cell runs on (no timeout); the kernel notices
    its socket is gone, interrupts the cell, commits and exits 75 within seconds."""
    client.send({"id": 5, "op": "execute",
                 "code": "import os, time\nmark = 'committed'\nos.closerange(3, 1 << 16)\n"
                         "time.sleep(600)"})
    time.sleep(0.3)
    client.close()
    t0 = time.monotonic()
    assert kernel.proc.wait(15) == EXIT_LOST_SOCKET
    took = time.monotonic() - t0
    assert took < 5, took
    kernel.start()
    assert kernel.client().run("mark")["result"] == "'committed'"


def test_a_thread_closing_the_socket_between_cells_is_noticed(kernel, client):
    client.run("import os, threading, time\n"
               "def later():\n    time.sleep(0.3)\n    os.closerange(3, 1 << 16)\n"
               "threading.Thread(target=later).start()\nkept = 'yes'")
    assert kernel.proc.wait(10) == EXIT_LOST_SOCKET
    kernel.start()
    assert kernel.client().run("kept")["result"] == "'yes'"
