"""The many-host harness (issue #13) that tests/hosts and bench/hosts share: "hosts" that are each
a Docker engine of their own (tests/cli/private_engine.py, in a network namespace of its own) with
a `codeact worker --host-id hN` whose DOCKER_HOST is that engine, behind one Temporal dev server.
Root only; the standard library and the tests' helpers.

    engines = start_engines(workdir, ("h1", "h2", "h3"))   # each holding the sandbox image
    hosts = Hosts(tmp, engines)                            # a dev server and a worker per engine
    proc = hosts.run("wid", "--host", "h2")                # a `codeact run --no-worker`
    ...
    hosts.close(); stop_engines(engines)
"""
import concurrent.futures
import json
import os
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))  # dev_server, private_engine, worker_process
sys.path.insert(0, os.path.join(HERE, "..", "chaos"))  # chaos_model: cells that a ledger counts

from chaos_model import CELLS, ChaosModel, tool_log_lines  # noqa: E402
from dev_server import DevServer  # noqa: E402
from private_engine import PrivateEngine, main_docker, main_env  # noqa: E402
from worker_process import WorkerProcess, durable_config, record_mcp_config  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, "../.."))
BIN = os.path.abspath(os.environ.get("CODEACT_BIN", os.path.join(REPO, "build/src/cli/codeact")))
PROMPTS = os.path.join(REPO, "config", "agent_prompts.yml")
TEMPORAL = os.path.join(REPO, ".venv", "bin", "temporal")


def start_engines(workdir, names, codeact=BIN):
    """A private engine per name, each holding the build's sandbox image: started at once, the
    image saved once from the machine's engine and loaded into each at once. Returns {name:
    engine}; stops whatever it started if one fails."""
    image = subprocess.run([codeact, "image", "build"], env=main_env(), capture_output=True,
                           text=True)  # the image's tag; built by scripts/setup.sh
    assert image.returncode == 0, image.stderr
    tag = image.stdout.strip()
    os.makedirs(str(workdir), exist_ok=True)
    engines = {n: PrivateEngine(os.path.join(str(workdir), n), n) for n in names}
    tarball = os.path.join(str(workdir), "image.tar")
    try:
        with concurrent.futures.ThreadPoolExecutor(len(names) + 1) as pool:
            started = [pool.submit(e.start) for e in engines.values()]
            saved = main_docker("save", "-o", tarball, tag, capture_output=True, text=True)
            for f in started:
                f.result()
            if saved.returncode != 0:
                raise RuntimeError(f"docker save {tag}: {saved.stderr}")

            def load(engine):
                if engine.docker("image", "inspect", tag).returncode == 0:
                    return
                p = engine.docker("load", "-q", "-i", tarball)
                if p.returncode != 0:
                    raise RuntimeError(f"could not load {tag} into {engine.host}: {p.stderr}")

            for f in [pool.submit(load, e) for e in engines.values()]:
                f.result()
    except BaseException:
        stop_engines(engines)
        raise
    finally:
        if os.path.exists(tarball):
            os.remove(tarball)
    return engines


def stop_engines(engines):
    """Stops each engine (its containers, namespace and files go), all at once."""
    with concurrent.futures.ThreadPoolExecutor(max(1, len(engines))) as pool:
        list(pool.map(lambda e: e.stop(), engines.values()))


def shared_durable(host_timeout=5):
    """The tests' durable section (a dead worker is noticed in 2 s) with a host timeout."""
    return durable_config().replace(
        "  activities:\n", f"  activities:\n    host_timeout_seconds: {host_timeout}\n")


class Hosts:
    """A dev server and a worker per engine, on one task queue. `env`: added to each worker's
    environment (CODEACT_SHARED_DIR, say)."""

    def __init__(self, tmp_path, engines, durable="", env=None, codeact=BIN, cell_seconds=0.2):
        self.tmp, self.engines, self.codeact = tmp_path, engines, codeact
        self.calls_log = tmp_path / "calls.log"
        self.cfg = tmp_path / "app_conf.yml"
        self.cfg.write_text((durable or durable_config()) + record_mcp_config(self.calls_log))
        self.queue = f"q-{uuid.uuid4().hex[:6]}"
        self.server = DevServer(tmp_path, program=dev_server_program(codeact))
        self.address = self.server.start()
        self.model = ChaosModel(cell_seconds=cell_seconds)
        self.workers = {}
        for host, engine in engines.items():
            w = WorkerProcess([codeact, "worker", "--temporal", self.address, "--task-queue",
                               self.queue, "--config", str(self.cfg), "--prompts", PROMPTS,
                               "--host-id", host],
                              dict(os.environ, DOCKER_HOST=engine.host, **(env or {})))
            self.workers[host] = w.start(stderr=open(tmp_path / f"worker-{host}.log", "ab"))

    def run(self, wid, *extra):
        """A `codeact run --no-worker` of the chaos model's cells, started (not waited for)."""
        argv = [self.codeact, "run", "--temporal", self.address, "--no-worker", "--task-queue",
                self.queue, "--model", self.model.model_flag, "--prompts", PROMPTS, "--config",
                str(self.cfg), "--mcp", "fixture", "--workflow-id", wid, "--json", *extra,
                f"Run the {CELLS} cells."]
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def history(self, wid):
        p = subprocess.run([TEMPORAL, "workflow", "show", "--address", self.address,
                            "--workflow-id", wid, "--output", "json"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)["events"]

    def save_history(self, wid, name, run_id=""):
        """With CODEACT_HISTORY_OUT set, writes the run's history there as `name` (the recorded
        histories of moved runs, tests/durable/histories/hosts/, come from here)."""
        out_dir = os.environ.get("CODEACT_HISTORY_OUT")
        if not out_dir:
            return
        extra = ["--run-id", run_id] if run_id else []
        p = subprocess.run([TEMPORAL, "workflow", "show", "--address", self.address,
                            "--workflow-id", wid, *extra, "--output", "json"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(p.stdout)

    def lose(self, host):
        """The host dies: its worker and its engine get SIGKILL."""
        self.workers[host].kill()
        self.engines[host].kill()

    def remove(self, wid, shared=None):
        """Removes the run's sandbox and volume from every running engine."""
        extra = {"CODEACT_SHARED_DIR": str(shared)} if shared else {}
        for engine in self.engines.values():
            if engine.running():
                subprocess.run([self.codeact, "sandbox", "rm", wid, "--volume"],
                               capture_output=True,
                               env=dict(os.environ, DOCKER_HOST=engine.host, **extra))

    def close(self):
        for w in self.workers.values():
            w.stop()
        self.model.close()
        self.server.stop()


def dev_server_program(codeact):
    """temporal_dev_server of the build tree that holds `codeact`, else of the repo's build/ (a
    binary copied elsewhere, e.g. CODEACT_BIN=/tmp/codeact)."""
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(codeact))))
    program = os.path.join(build, "bench", "temporal", "temporal_dev_server")
    if os.access(program, os.X_OK):
        return program
    return os.path.join(REPO, "build", "bench", "temporal", "temporal_dev_server")


def activity_hosts(events):
    """(activity type, task queue, host of the worker that ran it, attempt) per activity run."""
    scheduled = {}
    out = []
    for e in events:
        attrs = e.get("activityTaskScheduledEventAttributes")
        if attrs:
            scheduled[str(e["eventId"])] = (attrs["activityType"]["name"], attrs["taskQueue"]["name"])
        attrs = e.get("activityTaskStartedEventAttributes")
        if attrs:
            name, queue = scheduled[str(attrs["scheduledEventId"])]
            identity = attrs.get("identity", "")
            host = identity.split("@", 1)[1].split(" ", 1)[0] if "@" in identity else ""
            out.append((name, queue, host, int(attrs.get("attempt", 1))))
    return out


def volume_host(engines, wid):
    """The hosts whose engine holds the run's volume."""
    return [h for h, e in engines.items()
            if e.docker("volume", "inspect", f"workflow-{wid}").returncode == 0]


def placements(shared, wid):
    """The sandbox's ownership epochs on the shared storage: {epoch: host}."""
    d = os.path.join(str(shared), ".owners", wid)
    return {int(n): open(os.path.join(d, n)).read().strip() for n in os.listdir(d)}


def wait_for_calls(hosts, proc, n, timeout=120):
    """Waits until n cells made their host-side call (each cell makes one, early)."""
    deadline = time.monotonic() + timeout
    while len(tool_log_lines(str(hosts.calls_log))) < n:
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read()
        time.sleep(0.1)
    return time.monotonic()
