"""A `codeact worker` process that tests and tools SIGKILL and start again on purpose
(tests/cli/test_durable_cli.py, tests/durable/histories/record.py). Only the standard library."""
import os
import signal
import subprocess

def durable_config(attempts=20, sandbox_attempts=5):
    """app_conf.yml's durable section for tests: short heartbeats, so a killed worker is noticed
    in seconds, and quick retries (`attempts` for model and tool activities)."""
    return f"""
durable:
  reap_interval_seconds: 1
  activities:
    model: {{heartbeat_seconds: 2, start_to_close_seconds: 120, max_attempts: {attempts}, initial_retry_seconds: 0.5}}
    tool: {{heartbeat_seconds: 2, start_to_close_seconds: 300, max_attempts: {attempts}, initial_retry_seconds: 0.5}}
    sandbox: {{heartbeat_seconds: 5, start_to_close_seconds: 600, max_attempts: {sandbox_attempts}, initial_retry_seconds: 0.5}}
"""


FAST_DURABLE = durable_config()


def record_mcp_config(calls_log):
    """app_conf.yml lines for the MCP fixture server (tests/fixtures/mcp/sdk_server.py) as
    "fixture", whose record() tool appends to `calls_log`: the calls really made, counted on the
    host."""
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
    return f"""
mcp_servers:
  fixture:
    command: {os.path.join(repo, ".venv/bin/python")}
    args: ["{os.path.join(repo, "tests/fixtures/mcp/sdk_server.py")}"]
    env: {{CODEACT_TEST_CALL_LOG: "{calls_log}"}}
"""


class WorkerProcess:
    """start() runs `argv` with `env` (again after kill()); stop() asks it to finish (SIGTERM:
    running activities get their grace period), then kills it after `grace` seconds."""

    def __init__(self, argv, env, grace=40):
        self.argv, self.env, self.grace = argv, env, grace
        self.proc = None
        self.kills = 0

    def start(self, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE):
        self.proc = subprocess.Popen(self.argv, stdout=stdout, stderr=stderr, env=self.env)
        return self

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.kills += 1

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=self.grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
