"""Every `codeact sandbox`, `volume`, `image` and `doctor` command, as a user types it."""
import json
import os
import socket
import subprocess
import uuid


def test_exec_reads_like_a_notebook_cell_and_json_has_the_contract_fields(cli, sandbox):
    p = cli("sandbox", "exec", sandbox, "x = 20\nprint('hello')\nx * 2 + 2", check=0)
    assert "hello\n" in p.out
    assert "Out[" in p.out and "42" in p.out

    p, j = cli.json("sandbox", "exec", sandbox, "--json", "x + 1", check=0)
    for key in ("ok", "stdout", "stderr", "result", "error", "outputs", "not_persisted", "duration_ms", "execution_id"):
        assert key in j, key
    assert j["ok"] is True and j["result"] == "21" and j["error"] is None


def test_exec_exit_status_is_1_when_the_cell_raises_with_traceback(cli, sandbox):
    p = cli("sandbox", "exec", sandbox, "def f():\n    raise ValueError('bad value')\nf()", check=1)
    assert "ValueError: bad value" in p.err
    p, j = cli.json("sandbox", "exec", sandbox, "--json", "1/0", check=1)
    assert j["ok"] is False and j["error"]["type"] == "ZeroDivisionError"
    assert "Traceback" in j["error"]["traceback"]


def test_exec_reads_code_from_stdin_and_honours_exec_id(cli, sandbox):
    cli("sandbox", "exec", sandbox, "-", input=b"n = 0\n", check=0)
    cli("sandbox", "exec", sandbox, "--exec-id", "e1", "n += 1", check=0)
    p, j = cli.json("sandbox", "exec", sandbox, "--exec-id", "e1", "--json", "n += 1", check=0)
    assert j["replayed"] is True and j["execution_id"] == "e1"
    p, j = cli.json("sandbox", "exec", sandbox, "--json", "n", check=0)
    assert j["result"] == "1"


# A cell that, run in the kernel process, makes the kernel die the way a crash would at the worst
# moment: SIGKILL right after its own commit (the manifest naming its execution is written) and
# before its reply leaves.
DIE_AFTER_COMMIT = """import os, signal, sys
_store = next(m for n, m in sys.modules.items() if n.endswith('codeact_kernel.state_store'))
_write_manifest = _store.StateStore.write_manifest
def _then_die(self, *args, **kwargs):
    _write_manifest(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
_store.StateStore.write_manifest = _then_die
applied = globals().get('applied', 0) + 1
print('ran once')
applied"""


def test_a_kernel_killed_after_its_cell_committed_reports_the_cell_done_not_lost(cli, sandbox):
    # Found by the chaos suite: the cell was reported as KernelDied ("changes this cell made are
    # lost") although its state was saved, so the model ran it again and it was applied twice.
    p, j = cli.json("sandbox", "exec", sandbox, "--exec-id", "commit-then-die", "--json",
                    DIE_AFTER_COMMIT, check=0)
    assert j["ok"] is True and j["error"] is None, j
    assert j["result"] == "1" and j["stdout"] == "ran once\n", j
    assert j["replayed"] is True and j["kernel_restarted"] is True, j
    assert "the kernel was killed (SIGKILL), after this cell had completed and its state was " \
           "saved; its recorded reply is given" in j["notice"], j
    # The restarted kernel has the cell's state, once; the same execution again runs nothing.
    p, j = cli.json("sandbox", "exec", sandbox, "--json", "applied", check=0)
    assert j["result"] == "1"
    p, j = cli.json("sandbox", "exec", sandbox, "--exec-id", "commit-then-die", "--json",
                    DIE_AFTER_COMMIT, check=0)
    assert j["replayed"] is True and j["result"] == "1" and not j["kernel_restarted"], j
    p, j = cli.json("sandbox", "exec", sandbox, "--json", "applied", check=0)
    assert j["result"] == "1"


def test_exec_timeout(cli, sandbox):
    p, j = cli.json("sandbox", "exec", sandbox, "--timeout", "1", "--json", "import time; time.sleep(30)", check=1)
    assert j["error"]["type"] == "TimeoutError"
    assert j["duration_ms"] < 10000


def test_usage_errors_exit_2_and_missing_sandbox_exits_3(cli):
    p = cli("sandbox", "exec")
    assert p.returncode == 2
    p = cli("sandbox", "exec", "no-such-sandbox-xyz", "1")
    assert p.returncode == 3
    assert "no sandbox" in p.err
    p = cli("sandbox", "start", "--id", "bad id!")
    assert p.returncode == 2 and "not a valid sandbox id" in p.err


def test_docker_unavailable_exits_3_with_the_fix(cli):
    p = cli("sandbox", "ls", env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert p.returncode == 3
    assert "Docker engine" in p.err and "DOCKER_HOST" in p.err


def test_bash_vars_get_clear(cli, sandbox):
    p = cli("sandbox", "bash", sandbox, "echo from-bash; whoami; exit 3")
    assert p.returncode == 1 and "from-bash" in p.out and "sandbox" in p.out
    p, j = cli.json("sandbox", "bash", sandbox, "echo hi", "--json", check=0)
    assert j["exit_code"] == 0 and j["stdout"] == "hi\n"

    cli("sandbox", "exec", sandbox, "import math as m\ndata = {'a': [1, 2]}\ndef sq(v): return v * v", check=0)
    p = cli("sandbox", "vars", sandbox, check=0)
    assert "data" in p.out and "sq" in p.out and "m " in p.out
    p, j = cli.json("sandbox", "vars", sandbox, "--json", check=0)
    names = {v["name"]: v for v in j["variables"]}
    assert names["m"]["kind"] == "module" and names["sq"]["kind"] == "function"
    p, j = cli.json("sandbox", "get", sandbox, "data", "--json", check=0)
    assert j["value"] == {"a": [1, 2]}
    p = cli("sandbox", "get", sandbox, "data", check=0)
    assert "{'a': [1, 2]}" in p.out

    cli("sandbox", "clear", sandbox, check=0)
    p, j = cli.json("sandbox", "vars", sandbox, "--json", check=0)
    assert j["variables"] == []
    p = cli("sandbox", "get", sandbox, "data")
    assert p.returncode != 0


def test_files_read_write_binary_and_confinement(cli, sandbox):
    blob = bytes(range(256)) * 4
    cli("sandbox", "write", sandbox, "/output/bin/b.dat", input=blob, check=0)
    p = cli("sandbox", "read", sandbox, "bin/b.dat", check=0)
    assert p.stdout == blob
    p = cli("sandbox", "files", sandbox, check=0)
    assert "/output/bin/b.dat" in p.out and "1024" in p.out
    p, j = cli.json("sandbox", "files", sandbox, "--json", check=0)
    assert j["files"][0]["path"] == "/output/bin/b.dat"
    p = cli("sandbox", "read", sandbox, "/etc/passwd")
    assert p.returncode != 0 and "/etc/passwd" in p.err


def test_install_rejects_shell_metacharacters(cli, sandbox):
    p = cli("sandbox", "install", sandbox, "numpy;rm -rf /")
    assert p.returncode == 2 and "numpy;rm -rf /" in p.err
    p = cli("sandbox", "install", sandbox, "--system", "curl$(id)")
    assert p.returncode == 2


def test_install_without_network_says_how_to_fix(cli, sandbox):
    p = cli("sandbox", "install", sandbox, "six", timeout=600)
    assert p.returncode != 0
    assert "network" in (p.err + p.out)


def test_stop_restart_keep_state_and_ls(cli, sandbox):
    cli("sandbox", "exec", sandbox, "kept = 'yes'", check=0)
    cli("sandbox", "stop", sandbox, check=0)
    p, j = cli.json("sandbox", "ls", "--json", check=0)
    mine = [s for s in j if s["id"] == sandbox]
    assert mine and mine[0]["running"] is False
    assert mine[0]["host"] == (os.environ.get("CODEACT_HOST_ID") or socket.gethostname())
    p = cli("sandbox", "exec", sandbox, "print(kept)", check=0)
    assert "yes" in p.out
    assert "restarted" in p.err  # the user is told the sandbox was brought back
    cli("sandbox", "restart", sandbox, check=0)
    p = cli("sandbox", "exec", sandbox, "print(kept)", check=0)
    assert "yes" in p.out
    p = cli("sandbox", "ls", check=0)
    assert sandbox in p.out


def test_start_with_resources_and_network_flags(cli):
    sid = "clitest-res"
    try:
        cli("sandbox", "start", "--id", sid, "--memory", "256m", "--cpus", "0.5", "--network", check=0)
        out = subprocess.run(["docker", "inspect", f"codeact-{sid}"], capture_output=True, check=True).stdout
        host = json.loads(out)[0]["HostConfig"]
        assert host["Memory"] == 256 * 1024 * 1024
        assert host["NanoCpus"] == 500000000
        assert host["NetworkMode"] == "bridge"
        p = cli("sandbox", "start", "--id", sid, "--memory", "lots")
        assert p.returncode == 2
    finally:
        cli("sandbox", "rm", sid, "--volume")


def test_rm_and_volume_commands(cli):
    sid = "clitest-vol"
    cli("sandbox", "start", "--id", sid, check=0)
    cli("sandbox", "exec", sid, "v = 1", check=0)
    cli("sandbox", "rm", sid, check=0)  # the volume stays
    p, j = cli.json("volume", "ls", "--json", check=0)
    assert any(v["name"] == f"workflow-{sid}" and v["sandbox_id"] == sid for v in j)
    p = cli("volume", "ls", check=0)
    assert f"workflow-{sid}" in p.out
    cli("sandbox", "start", "--id", sid, check=0)
    p = cli("sandbox", "exec", sid, "print(v)", check=0)
    assert p.out.strip() == "1"
    p = cli("volume", "rm", sid)
    assert p.returncode != 0 and "sandbox rm" in p.err
    cli("sandbox", "rm", sid, check=0)
    cli("volume", "rm", sid, check=0)
    p, j = cli.json("volume", "ls", "--json", check=0)
    assert not any(v["name"] == f"workflow-{sid}" for v in j)


def test_image_build_is_idempotent_and_doctor_is_green(cli):
    p = cli("image", "build", check=0, timeout=1800)
    assert p.out.strip().startswith("codeact-sandbox:")
    assert "already built" in p.err
    p = cli("doctor", check=0)
    assert "Docker engine" in p.out and "sandbox image" in p.out
    p = cli("doctor", env={"DOCKER_HOST": "unix:///nonexistent.sock"})
    assert p.returncode == 3 and "fix:" in p.out


def test_help_describes_every_command(cli):
    p = cli("sandbox", "--help", check=0)
    for sub in ("start", "exec", "bash", "vars", "get", "clear", "files", "read", "write", "install", "stop", "restart", "rm", "ls"):
        assert sub in p.out
    p = cli("sandbox", "exec", "--help", check=0)
    assert "--timeout" in p.out and "--exec-id" in p.out and "--json" in p.out


def test_disk_limit_from_the_flag_and_from_app_conf(cli, tmp_path):
    sid = f"clitest-{uuid.uuid4().hex[:8]}"
    try:
        cli("sandbox", "start", "--id", sid, "--disk", "32m", check=0)
        p = cli("sandbox", "ls")
        row = [line for line in p.out.splitlines() if line.startswith(sid)]
        assert row and " 32m " in row[0], p.out
        p = cli("sandbox", "exec", sid, "open('/output/big', 'wb').write(b'x' * (64 << 20))", check=1)
        assert "No space left on device" in p.err and "limited to 32m" in p.err, p.err
        # The sandbox still works, and its earlier state is there.
        cli("sandbox", "exec", sid, "import os; os.remove('/output/big'); kept = 1", check=0)
        p = cli("sandbox", "start", "--id", sid, "--disk", "64m", check=None)
        assert p.returncode != 0 and "fixed when it is created" in p.err, p.err
    finally:
        cli("sandbox", "rm", sid, "--volume")
    # sandbox.disk in app_conf.yml is the default for new sandboxes; a bad value is an error.
    conf = tmp_path / "app_conf.yml"
    conf.write_text("sandbox:\n  disk: 48m\n")
    sid2 = f"clitest-{uuid.uuid4().hex[:8]}"
    try:
        cli("sandbox", "start", "--id", sid2, check=0, env={"APP_CONFIG_PATH": str(conf)})
        p, info = cli.json("sandbox", "ls", "--json")
        assert [s["disk"] for s in info if s["id"] == sid2] == ["48m"], info
    finally:
        cli("sandbox", "rm", sid2, "--volume")
    conf.write_text("sandbox:\n  disk: lots\n")
    p = cli("sandbox", "start", "--id", sid2, env={"APP_CONFIG_PATH": str(conf)})
    assert p.returncode == 2 and "sandbox.disk" in p.err, p.err
    p = cli("sandbox", "start", "--id", sid2, "--disk", "1m")
    assert p.returncode == 2 and "at least 16m" in p.err, p.err
