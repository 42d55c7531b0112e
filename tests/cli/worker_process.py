"""A `codeact worker` process that tests and tools SIGKILL and start again on purpose
(tests/cli/test_durable_cli.py, tests/durable/histories/record.py). Only the standard library."""
import signal
import subprocess


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
