"""`codeact model local|status|stop` and `codeact doctor` with a stand-in llama-server
(fake_llama_server.py) installed where codeact keeps the built one, and weights of the right
size (a sparse file): the install is skipped, the server's lifecycle is real. The real download,
build and model are the opt-in suite tests/real_model/ (`scripts/test.sh --real-model`)."""
import json
import os
import shutil
import signal
import socket
import sys
import time

import pytest

LLAMA_VERSION = "11434.0.0"
WEIGHTS_1_5B = ("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", 1117320768)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def home(tmp_path):
    """A data directory with the weights and a stand-in server installed."""
    models = tmp_path / "models"
    (models / "weights").mkdir(parents=True)
    name, size = WEIGHTS_1_5B
    with open(models / "weights" / name, "wb") as f:
        f.truncate(size)
    server_dir = models / f"llama.cpp-{LLAMA_VERSION}"
    server_dir.mkdir()
    server = server_dir / "llama-server"
    src = open(os.path.join(os.path.dirname(__file__), "fake_llama_server.py")).read()
    server.write_text(src.replace("#!/usr/bin/env python3", f"#!{sys.executable}", 1))
    server.chmod(0o755)
    yield tmp_path
    pidfile = models / "server" / "pid"
    if pidfile.exists():
        try:
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def test_status_before_anything_is_installed_says_so(cli, tmp_path):
    p, st = cli.json("model", "status", "--json", env={"CODEACT_HOME": str(tmp_path)})
    assert p.returncode == 3
    assert st["running"] is False and st["model"] is None
    assert st["weights_installed"] is False and st["server_installed"] is False
    p = cli("model", "status", env={"CODEACT_HOME": str(tmp_path)}, check=3)
    assert "not running" in p.out and "codeact model local" in p.out


def test_local_starts_the_server_reuses_it_and_stop_ends_it(cli, home):
    env = {"CODEACT_HOME": str(home)}
    port = free_port()
    p = cli("model", "local", "--port", str(port), env=env, check=0, timeout=60)
    model = p.out.strip()
    assert model == f"openai-compatible:qwen2.5-coder-1.5b-instruct@http://127.0.0.1:{port}/v1"
    assert "ready" in p.err and f"--model {model}" in p.err

    args = json.loads((home / "models" / f"llama.cpp-{LLAMA_VERSION}" / "args.json").read_text())
    assert args[args.index("--host") + 1] == "127.0.0.1"
    assert args[args.index("--alias") + 1] == "qwen2.5-coder-1.5b-instruct"
    assert args[args.index("--model") + 1].endswith(WEIGHTS_1_5B[0])
    assert "--jinja" in args
    template = open(args[args.index("--chat-template-file") + 1]).read()
    assert "```json" in template and "already run" in template
    assert args[args.index("--temp") + 1] == "0.2"

    p, st = cli.json("model", "status", "--json", env=env)
    assert p.returncode == 0
    assert st["running"] is True and st["model"] == model
    assert st["url"] == f"http://127.0.0.1:{port}/v1"
    pid = st["pid"]

    p = cli("model", "local", "--json", env=env, check=0, timeout=60)
    assert json.loads(p.out)["pid"] == pid, "a running server is reused"
    assert "already running" in p.err

    p = cli("doctor", env=env)
    assert f"local model running: --model {model}" in p.out

    p = cli("model", "stop", env=env, check=0)
    assert "stopped" in p.err
    with pytest.raises(ProcessLookupError):
        for _ in range(50):
            os.kill(pid, 0)
            time.sleep(0.1)
    p, st = cli.json("model", "status", "--json", env=env)
    assert p.returncode == 3 and st["running"] is False
    assert st["weights_installed"] is True and st["server_installed"] is True
    p = cli("model", "stop", env=env, check=0)
    assert "was not running" in p.err


def test_a_server_that_fails_to_start_shows_its_log(cli, home):
    p = cli("model", "local", "--port", str(free_port()), timeout=60,
            env={"CODEACT_HOME": str(home), "FAKE_LLAMA_FAIL": "1"})
    assert p.returncode != 0
    assert "llama-server exited while starting" in p.err
    assert "failed to load model" in p.err, "the end of the server's log is shown"


def test_an_unknown_size_is_a_usage_error(cli, tmp_path):
    p = cli("model", "local", "--size", "70b", env={"CODEACT_HOME": str(tmp_path)})
    assert p.returncode == 2
    assert "70b" in p.err and "1.5b" in p.err


def test_a_port_in_use_is_refused_by_name(cli, home):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        p = cli("model", "local", "--port", str(port), env={"CODEACT_HOME": str(home)})
    assert p.returncode == 3
    assert f"port {port}" in p.err and "in use" in p.err
