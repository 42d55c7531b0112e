"""The `codeact` binary run as a user types it, for the pytest suites (tests/cli, tests/mcp/cli,
tests/sandbox/hostile). Only the standard library.

    cli = Cli()                                   # $CODEACT_BIN, else the checkout's build/
    p = cli("sandbox", "ls", check=0)             # p.out, p.err: decoded stdout and stderr
    p, j = cli.json("sandbox", "exec", sid, "--json", "1 + 1")
"""
import json
import os
import subprocess

BIN = os.environ.get("CODEACT_BIN", os.path.join(os.path.dirname(__file__),
                                                 "../../build/src/cli/codeact"))


class Cli:
    def __init__(self):
        self.bin = os.path.abspath(BIN)

    def __call__(self, *args, input=None, check=None, timeout=300, env=None):
        """Runs `codeact ARGS`; with `check`, asserts that exit status, showing both streams."""
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        p = subprocess.run([self.bin, *args], input=input, capture_output=True, timeout=timeout,
                           env=full_env)
        p.out = p.stdout.decode(errors="replace")
        p.err = p.stderr.decode(errors="replace")
        if check is not None:
            assert p.returncode == check, f"exit {p.returncode}\nstdout:\n{p.out}\nstderr:\n{p.err}"
        return p

    def json(self, *args, **kw):
        p = self(*args, **kw)
        return p, json.loads(p.out)
