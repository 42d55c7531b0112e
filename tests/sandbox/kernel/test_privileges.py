"""The start-up as root (issue #17 §1, the sandbox container's way): the socket is made by the
owner of its directory, pid 1 is an init of the kernel's, and nothing of the sandbox runs as root
or with a capability afterwards. Only when the tests run as root."""

import os
import signal
import time

import pytest

from conftest import SANDBOX_UID, STARTS_AS_ROOT

pytestmark = pytest.mark.skipif(not STARTS_AS_ROOT, reason="the kernel starts as root only "
                                "when the tests run as root (without CODEACT_TEST_KERNEL_UID)")


def status_fields(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            out[key] = value.strip()
    return out


def test_cells_and_scripts_run_as_uid_1000_without_capabilities(kernel, client):
    r = client.run("import os\n"
                   "caps = {}\n"
                   "for line in open('/proc/self/status'):\n"
                   "    k, _, v = line.partition(':')\n"
                   "    if k.startswith('Cap'):\n"
                   "        caps[k] = int(v, 16)\n"
                   "(os.getresuid(), os.getresgid(), os.getgroups(), caps['CapEff'], "
                   "caps['CapPrm'], caps['CapAmb'], caps['CapInh'], caps['CapBnd'])")
    assert r["result"] == repr(((1000,) * 3, (1000,) * 3, [], 0, 0, 0, 0, 0)), r
    b = client.ok("bash", script="id -u; id -G; grep -E '^Cap(Eff|Prm)' /proc/self/status")
    assert b["stdout"].split() == ["1000", "1000", "CapPrm:", "0" * 16, "CapEff:", "0" * 16]
    # init (the process started) dropped too.
    init = status_fields(kernel.proc.pid)
    assert init["Uid"].split() == ["1000"] * 4 and init["CapEff"] == "0" * 16
    assert init["CapPrm"] == "0" * 16 and init["CapBnd"] == "0" * 16


def test_the_socket_belongs_to_the_directory_owner_and_cells_cannot_replace_it(kernel, client):
    st = os.stat(kernel.socket)
    assert st.st_uid == 0 and (st.st_mode & 0o777) == 0o666
    r = client.run("import os\ntry:\n    os.symlink('/tmp/elsewhere', %r + '.new')\n"
                   "    os.replace(%r + '.new', %r)\n    out = 'replaced'\n"
                   "except PermissionError as e:\n    out = 'refused'\nout"
                   % (kernel.socket, kernel.socket, kernel.socket))
    assert r["result"] == "'refused'"
    r = client.run("import os\ntry:\n    os.unlink(%r)\n    out = 'removed'\n"
                   "except PermissionError:\n    out = 'refused'\nout" % kernel.socket)
    assert r["result"] == "'refused'"
    assert os.stat(kernel.socket).st_ino == st.st_ino


def test_init_exits_with_the_kernels_status(kernel_factory):
    k = kernel_factory()
    c = k.client()
    c.send({"id": 1, "op": "execute", "code": "import os\nos._exit(3)"})
    with pytest.raises(EOFError):
        c.recv()
    assert k.proc.wait(5) == 3
    k.start()
    os.kill(k.kernel_pid, signal.SIGKILL)
    assert k.proc.wait(5) == 128 + signal.SIGKILL


def test_init_forwards_sigterm_to_the_kernel(kernel_factory):
    k = kernel_factory()
    assert k.proc.pid != k.kernel_pid
    k.proc.send_signal(signal.SIGTERM)
    assert k.proc.wait(5) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 5
    while os.path.exists("/proc/%d" % k.kernel_pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not os.path.exists("/proc/%d" % k.kernel_pid)


def test_init_is_out_of_reach_of_cells_but_the_kernels_proc_is_its_own(kernel, client):
    r = client.run("import os\ntry:\n    open('/proc/%d/environ').read()\n    out = 'read'\n"
                   "except PermissionError:\n    out = 'refused'\n"
                   "(out, len(os.listdir('/proc/self/fd')) > 2)" % kernel.proc.pid)
    assert r["result"] == "('refused', True)", r


def test_privileged_start_up_keeps_the_kernel_fast(kernel_factory):
    k = kernel_factory()
    assert k.startup_s < 1.5, k.startup_s
    assert status_fields(k.kernel_pid)["Uid"].split() == [str(SANDBOX_UID)] * 4
