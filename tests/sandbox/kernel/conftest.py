"""Runs the real sandbox kernel on the host as a subprocess (no Docker) and talks to it over its
unix socket with a small framed-JSON client, like the C++ channel does.

Environment knobs, to run the suite the way the image runs the kernel:
  CODEACT_TEST_KERNEL_PYTHON  interpreter for the kernel (default: the one running pytest),
                              e.g. /usr/bin/python3 with Debian's python3-cloudpickle
  CODEACT_TEST_KERNEL_UID     run the kernel as this uid (and gid), e.g. 1000, like the image's
                              non-root user; needs root
"""

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
_LEN = struct.Struct(">I")


class KernelError(Exception):
    pass


class Client:
    """One connection to the kernel. request() returns the final reply and keeps the events
    (stream frames, bridge calls) that arrived before it in .events."""

    def __init__(self, path, timeout=30.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.next_id = 0
        self.events = []

    def close(self):
        self.sock.close()

    def send(self, obj):
        data = json.dumps(obj).encode("utf-8")
        self.sock.sendall(_LEN.pack(len(data)) + data)

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
    """The kernel as a child process with its own storage dir; restartable, killable."""

    def __init__(self, base, sandbox_id="sbx-test", env=None):
        self.base = base
        self.storage = os.path.join(base, "storage")
        self.sandbox_id = sandbox_id
        self.workspace = os.path.join(self.storage, sandbox_id)
        self.output = os.path.join(self.workspace, "output")
        self.state = os.path.join(self.workspace, "state")
        self.socket = os.path.join(base, "k.sock")
        self.env_extra = dict(env or {})
        self.proc = None
        self.clients = []
        self.log_path = os.path.join(base, "kernel.log")
        self.startup_s = None

    def start(self, **env):
        os.makedirs(self.storage, exist_ok=True)
        e = dict(os.environ)
        e.update({"CODEACT_STORAGE": self.storage, "CODEACT_SANDBOX_ID": self.sandbox_id,
                  "CODEACT_SOCKET": self.socket, "MPLBACKEND": "Agg", "HOME": self.base,
                  "CODEACT_DURABILITY": "rename"})
        e.update(self.env_extra)
        e.update(env)
        self.log = open(self.log_path, "ab")
        offset = self.log.tell()
        t0 = time.monotonic()
        user = {}
        if KERNEL_UID is not None:
            user = {"user": KERNEL_UID, "group": KERNEL_UID, "extra_groups": []}
            for root, dirs, files in os.walk(self.base):
                for n in [root] + [os.path.join(root, f) for f in dirs + files]:
                    os.lchown(n, KERNEL_UID, KERNEL_UID)
        self.proc = subprocess.Popen([KERNEL_PYTHON, KERNEL], env=e, stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=self.log, **user)
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
        return self

    def read_log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def client(self, timeout=30.0):
        c = Client(self.socket, timeout)
        self.clients.append(c)
        return c

    def kill9(self):
        for c in self.clients:
            c.close()
        self.clients = []
        if self.proc and self.proc.poll() is None:
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


@pytest.fixture
def kernel_factory(base_dir):
    started = []

    def make(sandbox_id="sbx-test", env=None, start=True):
        k = KernelProcess(base_dir, sandbox_id, env)
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
