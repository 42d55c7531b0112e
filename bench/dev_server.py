"""The Temporal dev server of the Python benchmarks.

It is temporal::DevServer, the project's one launcher, run through the `temporal_dev_server`
program (bench/temporal/dev_server_main.cpp): an owned `temporal server start-dev` on a free
127.0.0.1 port with its own SQLite file, ready when its address is printed, killed when its stdin
closes.

    with dev_server("build/bench/temporal/temporal_dev_server") as address:
        ...  # "127.0.0.1:<port>"
"""
import contextlib
import subprocess


@contextlib.contextmanager
def dev_server(program, temporal_cli=None, log_level="error"):
    argv = [program, "--log-level", log_level]
    if temporal_cli:
        argv += ["--temporal", temporal_cli]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        address = proc.stdout.readline().strip()
        if not address:
            raise RuntimeError(f"{program} could not start a Temporal dev server (exit {proc.wait()})")
        yield address
    finally:
        proc.stdin.close()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
