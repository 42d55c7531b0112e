"""`codeact mcp ls|call` and `codeact sandbox exec --mcp/--functions`, driven as a user would.

Needs the repo's .venv (scripts/setup.sh) for the MCP servers; the exec test also needs Docker
and the sandbox image.
"""
import json
import os
import subprocess
import uuid

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))
VENV = os.path.join(ROOT, ".venv/bin")
BIN = os.path.abspath(os.environ.get("CODEACT_BIN", os.path.join(ROOT, "build/src/cli/codeact")))
FIXTURE = os.path.join(ROOT, "tests/fixtures/mcp/sdk_server.py")

pytestmark = pytest.mark.skipif(not os.access(os.path.join(VENV, "mcp-server-time"), os.X_OK),
                                reason="no .venv with the MCP servers; run scripts/setup.sh")


@pytest.fixture
def conf(tmp_path):
    p = tmp_path / "app_conf.yml"
    p.write_text(f"""
mcp_servers:
  time: {{ command: {VENV}/mcp-server-time, args: [--local-timezone, UTC], env: {{ TOKEN: "${{MCP_CLI_SECRET}}" }} }}
  fixture: {{ command: {VENV}/python, args: [{FIXTURE}] }}
  broken: {{ url: "http://127.0.0.1:9/mcp", headers: {{ Authorization: "Bearer ${{MCP_CLI_UNSET_TOKEN}}" }} }}
""")
    return str(p)


def run(*args, conf, timeout=120, **env):
    full = dict(os.environ, APP_CONFIG_PATH=conf, MCP_CLI_SECRET="cli-secret-" + uuid.uuid4().hex)
    full.pop("MCP_CLI_UNSET_TOKEN", None)
    full.update(env)
    p = subprocess.run([BIN, *args], capture_output=True, timeout=timeout, env=full, text=True)
    return p


def test_ls_lists_servers_tools_and_python_signatures(conf):
    p = run("mcp", "ls", "--json", conf=conf)
    # A broken entry (unset variable) is reported without hiding the others.
    assert p.returncode == 3, p.stderr
    servers = {s["name"]: s for s in json.loads(p.stdout)["servers"]}
    assert not servers["broken"]["ok"]
    assert "MCP_CLI_UNSET_TOKEN" in servers["broken"]["error"]
    tools = {t["name"]: t for t in servers["time"]["tools"]}
    assert tools["get_current_time"]["python"]["signature"].startswith("def get_current_time(timezone: str)")
    assert servers["time"]["config"]["env"] == {"TOKEN": "***"}
    assert "cli-secret-" not in p.stdout
    add = {t["name"]: t for t in servers["fixture"]["tools"]}["add"]
    assert add["python"]["signature"] == "def add(a: int, b: int = 1) -> int"

    text = run("mcp", "ls", "time", conf=conf)
    assert text.returncode == 0, text.stderr
    assert "def convert_time(source_timezone: str, target_timezone: str, time: str)" in text.stdout
    assert '"""Get current time in a specific timezone' in text.stdout


def test_call_prints_structured_content_and_reports_tool_errors(conf):
    p = run("mcp", "call", "time", "get_current_time", '{"timezone": "Asia/Tokyo"}', conf=conf)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["timezone"] == "Asia/Tokyo"
    err = run("mcp", "call", "fixture", "fail", '{"message": "refused by the server"}', conf=conf)
    assert err.returncode == 1
    assert "refused by the server" in err.stderr
    raw = run("mcp", "call", "fixture", "image", "--json", conf=conf)
    assert json.loads(raw.stdout)["content"][0]["mimeType"] == "image/png"
    bad = run("mcp", "call", "time", "get_current_time", "[1]", conf=conf)
    assert bad.returncode == 2
    missing = run("mcp", "call", "nosuch", "tool", conf=conf)
    assert missing.returncode != 0 and "no MCP server named 'nosuch'" in missing.stderr


def test_sandbox_exec_with_mcp_tools_and_functions(conf, tmp_path):
    funcs = tmp_path / "funcs.py"
    funcs.write_text("import math\n\nasync def hyp(a: float, b: float) -> float:\n"
                     "    \"\"\"Hypotenuse.\"\"\"\n    return math.hypot(a, b)\n")
    sid = "mcpcli-" + uuid.uuid4().hex[:8]
    start = run("sandbox", "start", "--id", sid, conf=conf, timeout=600)
    if start.returncode != 0:
        pytest.skip("no sandbox: " + start.stderr)
    try:
        p = run("sandbox", "exec", sid, "--mcp", "time", "--mcp", "fixture", "--functions", str(funcs),
                "print(get_current_time(timezone='UTC')['timezone'], add(a=1, b=2), hyp(3, 4))", conf=conf)
        assert p.returncode == 0, p.stderr
        assert p.stdout == "UTC 3 5.0\n"
        # Without --mcp the host does not serve the tools: a clear error, not a hang.
        q = run("sandbox", "exec", sid, "print(add(a=1))", conf=conf)
        assert q.returncode == 1
        assert "no host functions are available to this cell (called add)" in q.stdout + q.stderr
    finally:
        run("sandbox", "rm", sid, "--volume", conf=conf)
