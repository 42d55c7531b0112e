import json
import os
import subprocess
import uuid

import pytest

from dev_server import DevServer

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


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory):
    """A Temporal dev server of this session (dev_server.py)."""
    server = DevServer(tmp_path_factory.mktemp("temporal"))
    yield server.start()
    server.stop()
