import uuid

import pytest

from cli_runner import Cli
from dev_server import DevServer


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
