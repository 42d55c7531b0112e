"""The chaos suite's knobs (issue #18 §1). In CI it runs with its defaults (bounded); by hand:

    .venv/bin/python -m pytest tests/chaos --kills 500 --minutes 60     # a soak
    .venv/bin/python -m pytest tests/chaos --seed 1234                  # replay a failure's schedule

The same through the environment (ctest): CODEACT_CHAOS_KILLS, CODEACT_CHAOS_SEED,
CODEACT_CHAOS_MINUTES, CODEACT_CHAOS_RUNS.

CODEACT_TEST_CHAOS=0 skips it (e.g. a quick local `scripts/test.sh`).

What it found so far, each fixed with a test of its own: a `codeact run` started again on a
workflow id whose run had completed the same task did the task again (test_durable_cli.py); a
cell whose kernel or container died right after its commit was reported as lost, so the model ran
it a second time (test_sandbox_cli.py, kernel test_execution_lookup.py).
"""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))  # dev_server, scripted_model, worker_process


def pytest_addoption(parser):
    g = parser.getgroup("chaos")
    g.addoption("--kills", type=int, default=int(os.environ.get("CODEACT_CHAOS_KILLS", "50")),
                help="kills to make before the runs are let finish (default 50)")
    g.addoption("--seed", type=int, default=int(os.environ.get("CODEACT_CHAOS_SEED", "0")) or None,
                help="seed of the kill schedule (default: a fresh one, printed)")
    g.addoption("--minutes", type=float, default=float(os.environ.get("CODEACT_CHAOS_MINUTES", "10")),
                help="the whole suite's time limit (default 10)")
    g.addoption("--runs", type=int, default=int(os.environ.get("CODEACT_CHAOS_RUNS", "3")),
                help="durable runs going at once (default 3)")


@pytest.fixture
def private_engine(tmp_path_factory, monkeypatch):
    """The suite's own Docker engine (private_engine.py), holding the build's sandbox image, as
    DOCKER_HOST for everything the test starts: its daemon can be killed without touching the
    machine's engine."""
    from private_engine import PrivateEngine, main_env

    codeact = os.environ.get("CODEACT_BIN", os.path.join(HERE, "../../build/src/cli/codeact"))
    image = subprocess.run([codeact, "image", "build"], env=main_env(), capture_output=True,
                           text=True)  # the image's tag; built by scripts/setup.sh
    assert image.returncode == 0, image.stderr
    engine = PrivateEngine(tmp_path_factory.mktemp("docker"), "chaos")
    try:
        host = engine.start()
        engine.copy_image(image.stdout.strip())
        monkeypatch.setenv("DOCKER_HOST", host)
        yield engine
    finally:
        engine.stop()


def pytest_collection_modifyitems(config, items):
    if os.environ.get("CODEACT_TEST_CHAOS") != "0" or "--kills" in " ".join(sys.argv):
        return
    for item in items:
        item.add_marker(pytest.mark.skip(reason="CODEACT_TEST_CHAOS=0"))
