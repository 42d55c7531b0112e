"""Hostile cells against real Docker, through the `codeact` CLI as a user types it (issue #18 §3).

Every case ends the same way: the hostile cell or script got an error a model can act on, the
sandbox that ran it answers the next trivial cell, a variable it committed before still has its
value, and the victim (a sandbox started before any attack, holding a secret) is untouched.

    CODEACT_BIN=build/src/cli/codeact .venv/bin/python -m pytest -q tests/sandbox/hostile

Sandboxes are shared to keep the suite short: one victim per session, one attacker per module.
Each case commits a variable of its own first, so a case that loses state fails itself.
"""
import ast
import json
import os
import sys
import time
import uuid

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "cli"))
from cli_runner import Cli  # noqa: E402


class Outcome:
    """One CLI call: its process (exit status, stdout, stderr), the JSON it printed, the time."""

    def __init__(self, proc, reply, took):
        self.proc = proc
        self.reply = reply
        self.took = took

    @property
    def error(self):
        return (self.reply or {}).get("error") or {}

    @property
    def message(self):
        """What the user is told went wrong: the error's message, else the CLI's stderr."""
        return self.error.get("message") or self.proc.err

    def describe(self):
        reply = json.dumps(self.reply)[:3000] if self.reply is not None else None
        return (f"exit {self.proc.returncode} after {self.took:.1f} s\nreply: {reply}\n"
                f"stderr:\n{self.proc.err[-3000:]}")


# Run in a sandbox: every process but its init (pid 1), the kernel running this cell and the
# kernel's process supervisor (with its per-script forks), as (pid, state, command line).
_LEFTOVERS = """
def _leftovers():
    import os
    def stat(p):
        try:
            with open(f'/proc/{p}/stat') as f:
                fields = f.read().rsplit(')', 1)[1].split()
            with open(f'/proc/{p}/cmdline') as f:
                return fields[0], int(fields[1]), f.read().replace(chr(0), ' ').strip()
        except (OSError, ValueError):
            return None
    procs = {int(p): s for p in os.listdir('/proc') if p.isdigit() for s in [stat(p)] if s}
    supervisors = {p for p, (_, _, cmd) in procs.items() if 'codeact_kernel/supervisor.py' in cmd}
    return sorted((p, state, cmd) for p, (state, ppid, cmd) in procs.items()
                  if p not in (1, os.getpid()) and p not in supervisors
                  and ppid not in supervisors)
_leftovers()
"""


class Sandbox:
    """One sandbox, driven only through the CLI."""

    def __init__(self, cli, sid):
        self.cli = cli
        self.id = sid

    def exec(self, code, timeout=30):
        """`sandbox exec ID --json --timeout T CODE`."""
        t0 = time.monotonic()
        p = self.cli("sandbox", "exec", self.id, "--json", "--timeout", str(timeout), code,
                     timeout=timeout + 120)
        try:
            reply = json.loads(p.out)
        except ValueError:
            reply = None  # the CLI reported a failure on stderr instead of a cell's result
        return Outcome(p, reply, time.monotonic() - t0)

    def bash(self, script, timeout=30):
        """`sandbox bash ID SCRIPT --json --timeout T`."""
        t0 = time.monotonic()
        p = self.cli("sandbox", "bash", self.id, script, "--json", "--timeout", str(timeout),
                     timeout=timeout + 120)
        reply = json.loads(p.out) if p.out.strip() else None
        return Outcome(p, reply, time.monotonic() - t0)

    def value(self, code, timeout=30):
        """The repr of an expression, from a cell that must succeed."""
        o = self.exec(code, timeout=timeout)
        assert o.reply and o.reply["ok"], o.describe()
        return o.reply["result"]

    def commit(self, name):
        """Commits a variable holding a fresh value; returns the value (see assert_usable)."""
        token = uuid.uuid4().hex
        o = self.exec(f"{name} = {token!r}")
        assert o.reply and o.reply["ok"] and not o.reply["notice"], o.describe()
        return token

    def assert_usable(self, name, token):
        """The next trivial cell answers at once, and the variable committed before the attack
        still holds its value."""
        o = self.exec("1 + 1")
        assert o.reply and o.reply["result"] == "2", o.describe()
        assert o.took < 20, f"the trivial cell took {o.took:.1f} s"
        assert self.value(name) == repr(token)

    def leftovers(self):
        """[(pid, state, command line)] of processes besides the kernel's own ("Z": a zombie)."""
        return ast.literal_eval(self.value(_LEFTOVERS))

    def wait_for_no_leftovers(self, within=5.0):
        deadline = time.monotonic() + within
        while True:
            left = self.leftovers()
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.2)


@pytest.fixture(scope="session")
def cli():
    return Cli()


@pytest.fixture(scope="session")
def sandboxes(cli):
    """start(memory=, disk=) -> Sandbox; every sandbox it started is removed with its volume."""
    started = []

    def start(memory=None, disk=None):
        sid = f"hostile-{uuid.uuid4().hex[:8]}"
        args = ["sandbox", "start", "--id", sid]
        if memory:
            args += ["--memory", memory]
        if disk:
            args += ["--disk", disk]
        started.append(sid)
        p = cli(*args, check=0)
        assert p.out.strip() == sid
        return Sandbox(cli, sid)

    yield start
    for sid in started:
        cli("sandbox", "rm", sid, "--volume", timeout=120)


@pytest.fixture(scope="session")
def victim(sandboxes):
    """A sandbox started before any attack, with a secret in a variable and in a file."""
    v = sandboxes()
    v.value("import os\nsecret = 'B-secret'\n"
            "open('/output/secret.txt', 'w').write('B-file-secret')")

    def assert_untouched():
        # Its state and files are as it left them, and it answers as fast as ever.
        o = v.exec("secret, open('/output/secret.txt').read(), sorted(os.listdir('/output'))")
        assert o.reply and o.reply["ok"], o.describe()
        assert o.reply["result"] == repr(("B-secret", "B-file-secret", ["secret.txt"]))
        assert o.took < 10, f"the victim took {o.took:.1f} s to answer"

    v.assert_untouched = assert_untouched
    return v


@pytest.fixture(scope="module")
def attacker(sandboxes, victim):
    """This module's hostile sandbox, started after the victim, with the default limits."""
    return sandboxes()
