"""Many hosts (issue #13): each "host" is a Docker engine of the test's own (private_engine.py,
in a network namespace of its own) with a `codeact worker --host-id hN` whose DOCKER_HOST is that
engine; one Temporal dev server. Started and stopped by the suite itself (root only)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))  # dev_server, private_engine, worker_process
sys.path.insert(0, os.path.join(HERE, "..", "chaos"))  # chaos_model: cells that a ledger counts

REPO = os.path.abspath(os.path.join(HERE, "../.."))
BIN = os.path.abspath(os.environ.get("CODEACT_BIN", os.path.join(REPO, "build/src/cli/codeact")))


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    """Two private engines, h1 and h2, each holding the build's sandbox image."""
    from private_engine import PrivateEngine, main_env

    image = subprocess.run([BIN, "image", "build"], env=main_env(), capture_output=True, text=True)
    assert image.returncode == 0, image.stderr
    made = []
    try:
        for name in ("h1", "h2"):
            engine = PrivateEngine(tmp_path_factory.mktemp(name), name)
            made.append(engine)
            engine.start()
            engine.copy_image(image.stdout.strip())
        yield dict(zip(("h1", "h2"), made))
    finally:
        for engine in made:
            engine.stop()
