"""Runs the real sandbox kernel on the host as a subprocess (no Docker) and talks to it over its
unix socket with a small framed-JSON client, like the C++ channel does.

How the kernel is started depends on who runs the tests, to cover the ways it runs for real:
  - as root (CI, the containers' way): the kernel starts as root, creates its socket in a
    root-owned directory, forks its init and drops to uid 1000 (the storage belongs to 1000);
  - as root with CODEACT_TEST_KERNEL_UID=1000: the kernel starts as that user directly (the way
    an image without the root start-up ran it);
  - as anyone else: the kernel runs as that user.
Environment knobs:
  CODEACT_TEST_KERNEL_PYTHON  interpreter for the kernel (default: the one running pytest),
                              e.g. /usr/bin/python3 with Debian's python3-cloudpickle
  CODEACT_TEST_KERNEL_UID     start the kernel as this uid (and gid) instead of root; needs root
"""

import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
# The package directory, run the way the image runs it: python3 /opt/codeact/codeact_kernel
KERNEL = os.path.join(REPO, "src", "sandbox", "kernel", "codeact_kernel")
KERNEL_PYTHON = os.environ.get("CODEACT_TEST_KERNEL_PYTHON") or sys.executable
KERNEL_UID = int(os.environ["CODEACT_TEST_KERNEL_UID"]) if os.environ.get(
    "CODEACT_TEST_KERNEL_UID") else None
# The kernel starts as root and drops privileges itself, as in the sandbox container.
STARTS_AS_ROOT = os.geteuid() == 0 and KERNEL_UID is None
SANDBOX_UID = 1000  # what the kernel drops to
KERNEL_PYTHONPATH = None


def _others_can_read(path):
    """Whether a user other than the owner can reach path (every directory above it searchable
    by others)."""
    path = os.path.realpath(path)
    while True:
        if not os.stat(path).st_mode & 0o001:
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent


if os.geteuid() == 0 and not os.environ.get("CODEACT_TEST_KERNEL_PYTHON"):
    import site
    import sysconfig

    # The kernel ends up running as another user, who must read the interpreter's standard
    # library: a root-only one (e.g. pyenv under /root) cannot be used. Debian's python3 with
    # this venv's packages can.
    if not _others_can_read(sysconfig.get_paths()["stdlib"]):
        KERNEL_PYTHON = "/usr/bin/python3"
        KERNEL_PYTHONPATH = os.pathsep.join(site.getsitepackages())
_LEN = struct.Struct(">I")


def new_token():
    return os.urandom(32).hex()


def expected_mac(token, sandbox_id, nonce):
    return hmac.new(bytes.fromhex(token), b"codeact-kernel-auth\0" + sandbox_id.encode() + b"\0"
                    + nonce.encode(), hashlib.sha256).hexdigest()


class KernelError(Exception):
    pass


class Client:
    """One connection to the kernel. request() returns the final reply and keeps the events
    (stream frames, bridge calls) that arrived before it in .events."""

    def __init__(self, path, timeout=30.0, auth=None):
        """auth: (sandbox_id, token) to authenticate first (and check the kernel's answer)."""
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.next_id = 0
        self.events = []
        if auth is not None:
            sandbox_id, token = auth
            nonce = os.urandom(32).hex()
            r = self.request("auth", sandbox_id=sandbox_id, nonce=nonce)
            assert r["ok"], r
            assert r["mac"] == expected_mac(token, sandbox_id, nonce), r

    def close(self):
        self.sock.close()

    def send(self, obj):
        data = json.dumps(obj).encode("utf-8")
        self.sock.sendall(_LEN.pack(len(data)) + data)

    def send_together(self, *objs):
        """Several frames in one write, as the host pipelines auth with the first request."""
        frames = b""
        for obj in objs:
            data = json.dumps(obj).encode("utf-8")
            frames += _LEN.pack(len(data)) + data
        self.sock.sendall(frames)

    def send_raw(self, data):
        self.sock.sendall(_LEN.pack(len(data)) + data)

    def _exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise EOFError("kernel closed the connection")
            buf += chunk
        return buf

    def recv(self):
        (n,) = _LEN.unpack(self._exact(4))
        return json.loads(self._exact(n).decode("utf-8"))

    def request(self, op, on_bridge=None, **fields):
        self.next_id += 1
        rid = self.next_id
        self.send(dict(fields, id=rid, op=op))
        self.events = []
        while True:
            msg = self.recv()
            assert msg.get("id") == rid, msg
            if msg["type"] == "reply":
                return msg
            self.events.append(msg)
            if msg["type"] == "bridge_call":
                assert on_bridge is not None, "unexpected bridge call %r" % msg
                try:
                    value = on_bridge(msg["name"], msg["args"], msg["kwargs"])
                    answer = {"ok": True, "value": value}
                except KernelError as e:
                    answer = {"ok": False, "error": {"type": "ToolFailed", "message": str(e)}}
                self.send(dict(answer, type="bridge_result", call_id=msg["call_id"]))

    def ok(self, op, **fields):
        reply = self.request(op, **fields)
        assert reply["ok"], reply
        return reply

    def run(self, code, **fields):
        """execute; asserts the operation succeeded (the cell itself may have failed)."""
        return self.ok("execute", code=code, **fields)


class KernelProcess:
    """The kernel as a child process with its own storage dir; restartable, killable. proc is
    the process started (the kernel's init when it starts as root), kernel_pid the kernel's."""

    def __init__(self, base, sandbox_id="sbx-test", env=None, token=None, cgroup=None):
        """token: CODEACT_KERNEL_TOKEN for the kernel (clients then authenticate). cgroup: a
        cgroup directory to start the kernel in (e.g. one with a pids limit), or a list of them
        (one per controller of a v1 hierarchy)."""
        self.base = base
        self.storage = os.path.join(base, "storage")
        self.sandbox_id = sandbox_id
        self.workspace = os.path.join(self.storage, sandbox_id)
        self.output = os.path.join(self.workspace, "output")
        self.state = os.path.join(self.workspace, "state")
        # The socket's directory belongs to the host user (root), as in the container.
        self.run_dir = os.path.join(base, "run")
        self.socket = os.path.join(self.run_dir, "k.sock")
        self.env_extra = dict(env or {})
        self.token = token
        self.cgroups = [cgroup] if isinstance(cgroup, str) else list(cgroup or ())
        self.proc = None
        self.kernel_pid = None
        self.clients = []
        self.log_path = os.path.join(base, "kernel.log")
        self.startup_s = None

    def start(self, **env):
        os.makedirs(self.storage, exist_ok=True)
        os.makedirs(self.run_dir, exist_ok=True)
        e = dict(os.environ)
        e.update({"CODEACT_STORAGE": self.storage, "CODEACT_SANDBOX_ID": self.sandbox_id,
                  "CODEACT_SOCKET": self.socket, "MPLBACKEND": "Agg", "HOME": self.base,
                  "CODEACT_DURABILITY": "rename"})
        if KERNEL_PYTHONPATH:
            e["PYTHONPATH"] = KERNEL_PYTHONPATH
        if self.token:
            e["CODEACT_KERNEL_TOKEN"] = self.token
        e.update(self.env_extra)
        e.update(env)
        self.log = open(self.log_path, "ab")
        offset = self.log.tell()
        t0 = time.monotonic()
        user = {}
        owner = KERNEL_UID if KERNEL_UID is not None else SANDBOX_UID if STARTS_AS_ROOT else None
        if owner is not None:
            if KERNEL_UID is not None:
                user = {"user": KERNEL_UID, "group": KERNEL_UID, "extra_groups": []}
            os.chmod(self.base, 0o755)
            for root, dirs, files in os.walk(self.base):
                for n in [root] + [os.path.join(root, f) for f in dirs + files]:
                    if STARTS_AS_ROOT and (n == self.run_dir or n.startswith(self.run_dir + "/")):
                        continue
                    os.lchown(n, owner, owner)
        preexec = self._join_cgroups if self.cgroups else None
        if KERNEL_UID is not None:  # it joins after becoming that user
            for d in self.cgroups:
                os.chown(os.path.join(d, "cgroup.procs"), KERNEL_UID, -1)
        self.proc = subprocess.Popen([KERNEL_PYTHON, KERNEL], env=e, stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=self.log, preexec_fn=preexec,
                                     **user)
        deadline = t0 + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("kernel exited with %s:\n%s" % (self.proc.returncode,
                                                                   self.read_log()))
            if "codeact-kernel ready" in self.read_log()[offset:]:
                try:
                    c = Client(self.socket)
                    c.close()
                    break
                except OSError:
                    pass
            time.sleep(0.005)
        else:
            raise RuntimeError("kernel did not become ready:\n" + self.read_log())
        self.startup_s = time.monotonic() - t0
        c = self.client()
        self.kernel_pid = c.ok("hello")["pid"]
        self.clients.remove(c)
        c.close()
        return self

    def _join_cgroups(self):  # in the child, before exec: the kernel starts inside them
        for d in self.cgroups:
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    def read_log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def client(self, timeout=30.0, authenticate=True):
        auth = (self.sandbox_id, self.token) if self.token and authenticate else None
        c = Client(self.socket, timeout, auth)
        self.clients.append(c)
        return c

    def kill9(self):
        """Kills the kernel as a crash would: SIGKILL to the kernel (its init, if any, then
        exits with 137 as in the container)."""
        for c in self.clients:
            c.close()
        self.clients = []
        if self.proc and self.proc.poll() is None:
            if self.kernel_pid and self.kernel_pid != self.proc.pid:
                try:
                    os.kill(self.kernel_pid, signal.SIGKILL)
                except OSError:
                    pass
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    pass
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGKILL)
                self.proc.wait()
        self.log.close()

    def restart(self, **env):
        self.kill9()
        return self.start(**env)

    def stop(self):
        self.kill9()


@pytest.fixture
def base_dir():
    # AF_UNIX paths are limited to ~108 bytes: keep the socket under a short /tmp dir.
    d = tempfile.mkdtemp(prefix="ck-", dir="/tmp")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "checkpoints(n): kernels of the test keep only the last n checkpoints "
        "(CODEACT_CHECKPOINTS=n), so that the files a commit replaces are deleted at once")


@pytest.fixture
def kernel_factory(base_dir, request):
    started = []
    marker = request.node.get_closest_marker("checkpoints")
    retention = {"CODEACT_CHECKPOINTS": str(marker.args[0])} if marker else {}

    def make(sandbox_id="sbx-test", env=None, start=True, token=None, cgroup=None, base=None):
        k = KernelProcess(base or base_dir, sandbox_id, dict(retention, **(env or {})), token,
                          cgroup)
        started.append(k)
        return k.start() if start else k

    yield make
    for k in started:
        k.stop()


@pytest.fixture
def kernel(kernel_factory):
    return kernel_factory()


@pytest.fixture
def client(kernel):
    return kernel.client()


PIDS_LIMIT = 256  # the sandbox container's default


def _cgroup_processes(d):
    try:
        with open(os.path.join(d, "cgroup.procs")) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _limited_cgroup(controller, limits, optional=()):
    """Yields a new cgroup directory of `controller` with `limits` ({"v1": {file: value}, "v2":
    {file: value}}, written in order; files named in `optional` only where they exist), then
    kills what is still in it and removes it. Skips the test without root or a writable
    hierarchy."""
    if os.geteuid() != 0:
        pytest.skip("needs root (a %s cgroup)" % controller)
    for root, v2 in (("/sys/fs/cgroup/" + controller, False), ("/sys/fs/cgroup", True)):
        if os.path.exists(os.path.join(root, "cgroup.procs")) and os.access(root, os.W_OK):
            break
    else:
        pytest.skip("no writable %s cgroup hierarchy" % controller)
    d = os.path.join(root, "codeact-kernel-test-%d-%d" % (os.getpid(), time.monotonic_ns()))
    try:
        os.mkdir(d)
        for name, value in (limits["v2"] if v2 else limits["v1"]).items():
            path = os.path.join(d, name)
            if name in optional and not os.path.exists(path):
                continue  # e.g. swap accounting off
            with open(path, "w") as f:
                f.write(str(value))
    except OSError as e:
        pytest.skip("cannot make a %s cgroup: %s" % (controller, e))
    yield d
    for _ in range(200):
        pids = _cgroup_processes(d)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)
    for _ in range(100):
        try:
            os.rmdir(d)
            break
        except OSError:
            time.sleep(0.05)


@pytest.fixture
def pids_cgroup():
    """A pids cgroup limited to PIDS_LIMIT tasks, like the sandbox container's, to start a
    kernel in (fork bombs stay inside it). Needs root and a writable pids hierarchy (v1 or v2);
    everything still in it is killed at the end."""
    yield from _limited_cgroup("pids", {"v1": {"pids.max": PIDS_LIMIT},
                                        "v2": {"pids.max": PIDS_LIMIT}})


MEMORY_LIMIT = 256 << 20


@pytest.fixture
def memory_cgroup():
    """A memory cgroup limited to MEMORY_LIMIT without swap, like a sandbox container started
    with --memory 256m, to start a kernel in. Needs root and a writable memory hierarchy."""
    mem = MEMORY_LIMIT
    # v1: the memory limit first (memory + swap may not be set below it)
    yield from _limited_cgroup("memory", {
        "v1": {"memory.limit_in_bytes": mem, "memory.memsw.limit_in_bytes": mem},
        "v2": {"memory.max": mem, "memory.swap.max": 0}},
        optional=("memory.memsw.limit_in_bytes", "memory.swap.max"))


def cgroup_processes(d):
    """Pids of the processes in cgroup directory d."""
    return _cgroup_processes(d)
