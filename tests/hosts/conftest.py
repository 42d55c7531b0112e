"""Many hosts (issue #13): each "host" is a Docker engine of the test's own (private_engine.py,
in a network namespace of its own) with a `codeact worker --host-id hN` whose DOCKER_HOST is that
engine; one Temporal dev server. Three hosts, started and stopped by the suite itself (root only);
hosts_harness.py is the harness, which bench/hosts uses too."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from hosts_harness import BIN, REPO, start_engines, stop_engines  # noqa: E402,F401

HOSTS = ("h1", "h2", "h3")


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    """Three private engines, h1, h2 and h3, each holding the build's sandbox image (started and
    loaded at once)."""
    made = start_engines(tmp_path_factory.mktemp("engines"), HOSTS)
    try:
        yield made
    finally:
        stop_engines(made)
