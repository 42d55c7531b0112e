"""`codeact server` as a test starts it: a real process on a free port, against a Temporal dev
server, with a worker in the process (unless no_worker). `ServerProcess.start()` waits for the
URL it prints; `kill()` is SIGKILL, `stop()` SIGTERM."""
import os
import re
import signal
import subprocess
import sys
import threading
import time

import requests

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from worker_process import FAST_DURABLE  # noqa: E402,F401  (re-exported for the server suites)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
BIN = os.environ.get("CODEACT_BIN", os.path.join(REPO, "build/src/cli/codeact"))
PROMPTS = os.path.join(REPO, "config", "agent_prompts.yml")


class ServerProcess:
    def __init__(self, temporal, queue, config_path, model=None, env=None, no_worker=False, listen="127.0.0.1:0"):
        self.temporal = temporal
        self.args = [os.path.abspath(BIN), "server", "--listen", listen, "--temporal", temporal,
                     "--task-queue", queue, "--config", config_path, "--prompts", PROMPTS]
        if model:
            self.args += ["--model", model]
        if no_worker:
            self.args.append("--no-worker")
        self.env = dict(os.environ, **(env or {}))
        self.proc = None
        self.url = None
        self.stderr_lines = []

    def start(self, timeout=60):
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env,
                                     text=True)
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        deadline = time.time() + timeout
        line = ""
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            m = re.match(r"open (http://\S+)", line.strip())
            if m:
                self.url = m.group(1).rstrip("/")
                return self
        raise AssertionError(f"codeact server did not start (exit {self.proc.poll()}): {self.stderr()}")

    def _drain_stderr(self):
        for line in self.proc.stderr:
            self.stderr_lines.append(line)

    def stderr(self):
        return "".join(self.stderr_lines)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout=60):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode if self.proc else None


# Every run and session a Client saw created, so the tests remove their sandboxes (and only those).
CREATED = set()


def remove_created_sandboxes():
    for sid in sorted(CREATED):
        subprocess.run([os.path.abspath(BIN), "sandbox", "rm", sid, "--volume"], capture_output=True, timeout=120)
    CREATED.clear()


class Client:
    """requests with a base URL and a key; remembers the ids of what it created."""

    def __init__(self, url, key=None):
        self.url = url
        self.s = requests.Session()
        if key:
            self.s.headers["Authorization"] = f"Bearer {key}"

    def get(self, path, **kw):
        return self.s.get(self.url + path, timeout=kw.pop("timeout", 60), **kw)

    def post(self, path, json=None, **kw):
        r = self.s.post(self.url + path, json=json, timeout=kw.pop("timeout", 60), **kw)
        try:
            body = r.json()
            for key in ("id", "workflow_id"):
                if isinstance(body, dict) and isinstance(body.get(key), str):
                    CREATED.add(body[key])
        except ValueError:
            pass
        return r

    def put(self, path, data, **kw):
        return self.s.put(self.url + path, data=data, timeout=kw.pop("timeout", 60), **kw)

    def delete(self, path, **kw):
        return self.s.delete(self.url + path, timeout=kw.pop("timeout", 60), **kw)

    def events(self, path, last_event_id=None, until=None, timeout=120, arrivals=None):
        """Reads Server-Sent Events of `path` until `until(event)` is true (or the stream ends);
        returns [(id, type, data)]; `arrivals` (a list) gets the time each one came."""
        import json as _json
        headers = {"Accept": "text/event-stream"}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        out = []
        with self.s.get(self.url + path, headers=headers, stream=True, timeout=timeout) as r:
            assert r.status_code == 200, r.text
            event = {}
            deadline = time.time() + timeout
            for raw in r.iter_lines(decode_unicode=True):
                if time.time() > deadline:
                    raise AssertionError(f"no end within {timeout}s; got {out}")
                if raw == "":
                    if "data" in event:
                        e = (event.get("id"), event.get("event", "message"), _json.loads(event["data"]))
                        out.append(e)
                        if arrivals is not None:
                            arrivals.append(time.time())
                        if until and until(e):
                            return out
                    event = {}
                    continue
                if raw.startswith(":"):
                    continue
                k, _, v = raw.partition(":")
                event[k] = v[1:] if v.startswith(" ") else v
        return out
