"""codeact as a library others build on: `cmake --install` of this build into a fresh prefix,
then projects outside the source tree configured against it with find_package(codeact), or
compiled with `pkg-config --cflags --libs codeact` alone, as a user's would be. The consumer
fixture (tests/install/consumer/) runs an agent with one host function in a real sandbox (Docker)
with a scripted FunctionModel; the examples are built."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("CODEACT_BUILD_DIR", ROOT / "build"))


def run(cmd, **kw):
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def work():
    # Inside the build tree, so ccache (CCACHE_BASEDIR) reuses objects between runs.
    path = BUILD / "install-test"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def prefix(work):
    out = work / "prefix"
    run(["cmake", "--install", str(BUILD), "--prefix", str(out)])
    return out


def configure_and_build(source, build, prefix):
    args = ["cmake", "-S", str(source), "-B", str(build), f"-DCMAKE_PREFIX_PATH={prefix}"]
    if shutil.which("ninja"):
        args += ["-G", "Ninja"]
    if shutil.which("ccache"):
        args += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
    run(args)
    run(["cmake", "--build", str(build), "-j2"])


def test_install_lays_out_cli_libraries_headers_and_package(prefix):
    assert run([str(prefix / "bin" / "codeact"), "--version"]).stdout.startswith("codeact 0.1.0")
    # `codeact` hands the commands that reach Temporal to codeact-full, installed beside it.
    assert "Usage: codeact run" in run([str(prefix / "bin" / "codeact"), "run", "--help"]).stdout
    for lib in ("core", "agent", "codeact", "durable", "temporal", "temporal_protos", "server"):
        assert (prefix / "lib" / f"libcodeact_{lib}.a").is_file(), lib
    assert (prefix / "include" / "codeact" / "codeact" / "codeact_agent.hpp").is_file()
    assert (prefix / "lib" / "cmake" / "codeact" / "codeactConfig.cmake").is_file()
    assert (prefix / "share" / "man" / "man1" / "codeact.1.gz").is_file()
    assert (prefix / "share" / "codeact" / "sandbox-image" / "Dockerfile").is_file()
    # Nothing installed points back into the source or build tree.
    pc = prefix / "lib" / "pkgconfig" / "codeact.pc"
    for cmake_file in [*(prefix / "lib" / "cmake" / "codeact").glob("*.cmake"), pc]:
        text = cmake_file.read_text()
        assert str(ROOT) not in text and str(BUILD) not in text, cmake_file


def test_consumer_runs_an_agent_with_a_host_function(work, prefix):
    configure_and_build(ROOT / "tests" / "install" / "consumer", work / "consumer", prefix)
    env = dict(os.environ, CODEACT_HOME=str(work / "home"))
    done = subprocess.run([str(work / "consumer" / "consumer")], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    # 200 * 1.19: the tax rate exists only on the host, so the cell called the host function.
    assert "gross 238.0" in done.stdout, done.stdout + done.stderr


def test_pkg_config_builds_the_consumer_without_cmake(work, prefix):
    env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    flags = run(["pkg-config", "--cflags", "--libs", "codeact"], env=env).stdout.split()
    # Relocatable: the flags point into the prefix it was installed to.
    dirs = {f[:2] + os.path.normpath(f[2:]) for f in flags if f[:2] in ("-I", "-L")}
    assert f"-I{prefix}/include" in dirs and f"-L{prefix}/lib" in dirs, flags
    assert run(["pkg-config", "--modversion", "codeact"], env=env).stdout.strip() == "0.1.0"
    exe = work / "consumer-pc"
    compiler = ["ccache", "g++"] if shutil.which("ccache") else ["g++"]
    run([*compiler, "-std=c++20", "-O1", str(ROOT / "tests" / "install" / "consumer" / "main.cpp"),
         "-o", str(exe), *flags])
    done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, CODEACT_HOME=str(work / "home-pc")))
    assert done.returncode == 0, done.stderr
    assert "gross 238.0" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("example", ["simple_agent", "sandbox_tools_agent", "data_analysis_agent",
                                     "temporal_hello"])
def test_example_builds_against_the_install(work, prefix, example):
    configure_and_build(ROOT / "examples" / example, work / example, prefix)
