#!/usr/bin/env python3
"""`codeact server` under many watchers: S sessions, W event-stream subscribers spread over them
(default 20 and 200), M messages per session. A local OpenAI-compatible server answers each model
request at once and timestamps the answer.

Reports, from the same run:
  - the server's RSS and thread count with no subscriber, and with all W connected (targets:
    <= 100 MB; threads independent of subscribers);
  - delivery latency of each turn's `final` event to each subscriber, from the worker's event: the
    WorkflowTaskCompleted of the task that took the model's answer, as the workflow's history
    times it; and the same for the C++ Temporal client driving the chat directly
    (server_bench_direct_chat: signal, then poll the agent_output query every 5 ms). The target
    is the server's p99 within 50 ms of what the workflow itself takes. For the burst, the
    direct client drives S other sessions (no subscriber) the same way, all at once, and follows
    each as the server's feed does (history long-poll, then the progress query). From the model's answer
    too (that adds the worker's own queueing: all S sessions answer at once for the server,
    one at a time for the direct client). Measured twice: the M turns sent to all S sessions at
    once, then --sequential turns per session sent one session at a time with all W subscribers
    still connected (one turn in flight, as for the direct client);
  - POST /chat round trip against the direct client's signal + poll, same model, same workflow, taken in turns.

    bench/server/sse_bench.py [--codeact build/src/cli/codeact] [--sessions 20] [--subscribers 200]
                              [--messages 5] [--sequential 2] [--direct-chat build/bench/server/server_bench_direct_chat]
"""
import argparse
import base64
import datetime
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(REPO, "tests", "cli"))
sys.path.insert(0, os.path.join(REPO, "tests", "server"))
from dev_server import dev_server  # noqa: E402
from scripted_model import ScriptedModel  # noqa: E402

PROMPTS = os.path.join(REPO, "config", "agent_prompts.yml")
KEY = "bench-key-0123456789abcdef"


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return int(out["VmRSS"].split()[0]) / 1024, int(out["Threads"])


class Api:
    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port

    def call(self, method, path, body=None, timeout=600):
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {KEY}"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        c.request(method, path, body=data, headers=headers)
        r = c.getresponse()
        text = r.read()
        c.close()
        if r.status >= 300:
            raise SystemExit(f"{method} {path}: {r.status} {text[:500]!r}")
        return json.loads(text) if text else None


class Subscriber(threading.Thread):
    """Reads one session's events; records when each `final` arrived."""

    def __init__(self, api, sid, finals):
        super().__init__(daemon=True)
        self.api, self.sid, self.finals = api, sid, finals
        self.connected = threading.Event()

    def run(self):
        c = http.client.HTTPConnection(self.api.host, self.api.port, timeout=600)
        c.request("GET", f"/v1/sessions/{self.sid}/events", headers={"Authorization": f"Bearer {KEY}"})
        r = c.getresponse()
        self.connected.set()
        event = None
        while True:
            line = r.fp.readline()
            if not line:
                return
            line = line.decode().rstrip("\r\n")
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "final":
                now = time.perf_counter()
                m = re.search(r"answer (\d+)", line)
                if m:
                    self.finals.append((self.sid, int(m.group(1)), now))
            elif line == "":
                event = None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--codeact", default=os.path.join(REPO, "build/src/cli/codeact"))
    ap.add_argument("--direct-chat", default=os.path.join(REPO, "build/bench/server/server_bench_direct_chat"),
                    help="the C++ direct client (the baseline)")
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--subscribers", type=int, default=200)
    ap.add_argument("--messages", type=int, default=5, help="turns per session sent to all sessions at once")
    ap.add_argument("--sequential", type=int, default=2,
                    help="then turns per session sent one session at a time (as the direct client does)")
    args = ap.parse_args()

    answered = {}  # (sid, turn) -> when the model answered

    def on_request(k, body):
        last = [m for m in body.get("messages", []) if m.get("role") == "user"][-1]
        text = last["content"] if isinstance(last["content"], str) else json.dumps(last["content"])
        m = re.search(r"ping (\S+) (\d+)", text)
        if m:
            answered[(m.group(1), int(m.group(2)))] = time.perf_counter()

    model = ScriptedModel([{"content": f"answer {i}"} for i in range(1000)], on_request=on_request)
    codeact = os.path.abspath(args.codeact)
    sids = []
    with dev_server() as address:
        cfg = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"sse-bench-{os.getpid()}.yml")
        with open(cfg, "w") as f:
            f.write("server:\n  api_keys: [%s]\n  max_active_runs: 1000\n  rate_per_minute: 1000000\n" % KEY)
        server = subprocess.Popen([codeact, "server", "--listen", "127.0.0.1:0", "--temporal", address,
                                   "--task-queue", f"sse-bench-{os.getpid()}", "--config", cfg, "--prompts",
                                   PROMPTS, "--model", model.model_flag],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            url = None
            for line in server.stdout:
                if line.startswith("open "):
                    url = line.split()[1].rstrip("/")
                    break
            if not url:
                raise SystemExit("codeact server did not start")
            api = Api(url)
            print(f"server {url} (pid {server.pid}); creating {args.sessions} sessions", file=sys.stderr)
            for _ in range(args.sessions):
                sids.append(api.call("POST", "/v1/sessions", {})["id"])
            for sid in sids:
                while api.call("GET", f"/v1/sessions/{sid}")["status"] != "idle":
                    time.sleep(0.2)
            time.sleep(1)
            rss0, threads0 = proc_status(server.pid)
            finals = []
            subs = [Subscriber(api, sids[i % len(sids)], finals) for i in range(args.subscribers)]
            for s in subs:
                s.start()
            for s in subs:
                s.connected.wait(60)
            time.sleep(2)
            rss1, threads1 = proc_status(server.pid)
            for m in range(args.messages):
                for sid in sids:
                    api.call("POST", f"/v1/sessions/{sid}/messages", {"message": f"ping {sid} {m}"})
                want = args.subscribers * (m + 1)
                deadline = time.time() + 300
                while len(finals) < want and time.time() < deadline:
                    time.sleep(0.05)
            burst_count = len(finals)
            # One session at a time, all subscribers still connected: the load the direct client has.
            for m in range(args.messages, args.messages + args.sequential):
                for i, sid in enumerate(sids):
                    watchers = sum(1 for k in range(args.subscribers) if k % len(sids) == i)
                    api.call("POST", f"/v1/sessions/{sid}/messages", {"message": f"ping {sid} {m}"})
                    deadline = time.time() + 120
                    while time.time() < deadline and \
                            sum(1 for s_, n, _ in finals if s_ == sid and n == m) < watchers:
                        time.sleep(0.005)
            rss2, threads2 = proc_status(server.pid)
            burst, sequential = finals[:burst_count], [f for f in finals[burst_count:] if f[1] >= args.messages]
            lat = [(t - answered[(sid, n)]) * 1000 for sid, n, t in burst if (sid, n) in answered]
            worker = worker_event_times(address, sids)
            from_worker = [(t - worker[(sid, n)]) * 1000 for sid, n, t in burst if (sid, n) in worker]
            seq_from_worker = [(t - worker[(sid, n)]) * 1000 for sid, n, t in sequential if (sid, n) in worker]

            # The direct client in the same burst: as many other sessions, no subscriber (the
            # server does not watch them), followed as the server follows a feed.
            burst_sids = []
            for _ in range(args.sessions):
                burst_sids.append(api.call("POST", "/v1/sessions", {})["id"])
            sids.extend(burst_sids)  # removed at the end with the others
            for sid in burst_sids:
                while api.call("GET", f"/v1/sessions/{sid}")["status"] != "idle":
                    time.sleep(0.2)
            direct_burst_seen = direct_burst(args.direct_chat, address, burst_sids, args.messages)
            worker = worker_event_times(address, burst_sids)
            direct_burst_from_worker = [(t - worker[k]) * 1000 for k, t in direct_burst_seen.items() if k in worker]

            # The direct client: the same workflows, polled through Temporal itself.
            direct_sids = sids[: min(5, len(sids))]
            direct_seen = direct_turns(args.direct_chat, address, direct_sids, args.messages + args.sequential)
            direct = [(t - answered[k]) * 1000 for k, t in direct_seen.items() if k in answered]
            worker = worker_event_times(address, direct_sids)
            direct_from_worker = [(t - worker[k]) * 1000 for k, t in direct_seen.items() if k in worker]
            chat_rt, direct_rt = chat_round_trips(api, args.direct_chat, address, sids[0],
                                                  args.messages + args.sequential + 3)
        finally:
            server.terminate()
            server.wait(60)
            model.close()
            for sid in sids:
                subprocess.run([codeact, "sandbox", "rm", sid, "--volume"], capture_output=True)

    print(json.dumps({
        "sessions": args.sessions, "subscribers": args.subscribers, "messages_per_session": args.messages,
        "server_rss_mb": {"idle": round(rss0, 1), "subscribed": round(rss1, 1), "after": round(rss2, 1)},
        "server_threads": {"idle": threads0, "subscribed": threads1, "after": threads2},
        "final_event_latency_ms": {
            "from_worker_event": {
                "server_all_sessions_at_once_p50": round(pct(from_worker, 50), 1),
                "server_all_sessions_at_once_p99": round(pct(from_worker, 99), 1),
                "server_one_session_at_a_time_p50": round(pct(seq_from_worker, 50), 1),
                "server_one_session_at_a_time_p99": round(pct(seq_from_worker, 99), 1),
                "direct_p50": round(pct(direct_from_worker, 50), 1),
                "direct_p99": round(pct(direct_from_worker, 99), 1),
                "server_one_at_a_time_minus_direct_p99": round(pct(seq_from_worker, 99) - pct(direct_from_worker, 99), 1),
                "direct_all_sessions_at_once_p50": round(pct(direct_burst_from_worker, 50), 1),
                "direct_all_sessions_at_once_p99": round(pct(direct_burst_from_worker, 99), 1),
                "server_all_at_once_minus_direct_all_at_once_p99":
                    round(pct(from_worker, 99) - pct(direct_burst_from_worker, 99), 1),
                "samples": [len(from_worker), len(seq_from_worker), len(direct_from_worker),
                            len(direct_burst_from_worker)]},
            "from_model_answer": {"server_p50": round(pct(lat, 50), 1), "server_p99": round(pct(lat, 99), 1),
                                  "direct_p50": round(pct(direct, 50), 1), "direct_p99": round(pct(direct, 99), 1),
                                  "samples": len(lat)}},
        "post_chat_ms": {"server_p50": round(pct(chat_rt, 50), 1), "direct_p50": round(pct(direct_rt, 50), 1),
                         "ratio": round(statistics.median(chat_rt) / statistics.median(direct_rt), 2)},
    }, indent=2))


def direct_chat(binary, address, sid, messages):
    """The C++ Temporal client driving the chat itself (server_bench_direct_chat): per message,
    (signalled, answered) in perf_counter seconds."""
    cmd = [binary, "--address", address, "--workflow-id", sid]
    for m in messages:
        cmd += ["--message", m]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"server_bench_direct_chat failed: {out.stderr}")
    return [(r["signalled"], r["answered"]) for r in map(json.loads, out.stdout.splitlines())]


def direct_burst(binary, address, sids, rounds):
    """(sid, turn) -> when the direct client saw the turn's final answer, `rounds` messages sent to
    all `sids` at once per round (server_bench_direct_chat --burst: history long-poll, then the
    progress query, as the server's event feed does)."""
    cmd = [binary, "--address", address, "--burst", str(rounds)]
    for sid in sids:
        cmd += ["--workflow-id", sid]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise SystemExit(f"server_bench_direct_chat --burst failed: {out.stderr}")
    return {(r["workflow_id"], r["turn"]): r["answered"] for r in map(json.loads, out.stdout.splitlines())}


def direct_turns(binary, address, sids, messages):
    """(sid, turn) -> when the direct client (polling agent_output every 5 ms) saw the turn
    answered, for 3 turns per session after the first `messages`."""
    out = {}
    for m in range(messages, messages + 3):
        for sid in sids:
            (_, seen), = direct_chat(binary, address, sid, [f"ping {sid} {m}"])
            out[(sid, m)] = seen
    return out


def perf_of_rfc3339(text):
    """A Temporal event time (RFC 3339, UTC, up to nanoseconds) in time.perf_counter seconds."""
    head, _, frac = text.rstrip("Z").partition(".")
    wall = datetime.datetime.fromisoformat(head).replace(tzinfo=datetime.timezone.utc).timestamp()
    wall += float("0." + (frac or "0"))
    return wall - (time.time() - time.perf_counter())


def worker_event_times(address, sids):
    """(sid, turn) -> when the worker completed the workflow task that took the model's answer
    `answer <turn>` (the WorkflowTaskCompleted after that ActivityTaskCompleted), in perf_counter
    seconds: the moment the turn's final answer exists in the workflow."""
    temporal = os.path.join(REPO, ".venv/bin/temporal")
    out = {}
    for sid in sids:
        show = subprocess.run([temporal, "workflow", "show", "--address", address, "--workflow-id", sid,
                               "--output", "json"], capture_output=True, text=True, timeout=120)
        if show.returncode != 0:
            raise SystemExit(f"temporal workflow show {sid}: {show.stderr}")
        doc = json.loads(show.stdout)
        events = doc.get("events", doc) if isinstance(doc, dict) else doc
        turn = None
        for e in events:
            kind = e.get("eventType", "")
            if kind in ("EVENT_TYPE_ACTIVITY_TASK_COMPLETED", "ActivityTaskCompleted"):
                attrs = e.get("activityTaskCompletedEventAttributes", {})
                text = "".join(base64.b64decode(p.get("data", "")).decode("utf-8", "replace")
                               for p in attrs.get("result", {}).get("payloads", []))
                m = re.search(r"answer (\d+)", text)
                turn = int(m.group(1)) if m else None
            elif kind in ("EVENT_TYPE_WORKFLOW_TASK_COMPLETED", "WorkflowTaskCompleted") and turn is not None:
                out[(sid, turn)] = perf_of_rfc3339(e["eventTime"])
                turn = None
    return out


def chat_round_trips(api, binary, address, sid, start, n=20):
    """POST /chat against the direct client's signal + poll until the answer, on one session,
    taken in turns (one of each, n times) so that both see the same machine."""
    chat, direct = [], []
    for i in range(n):
        t = time.perf_counter()
        api.call("POST", "/chat", {"task": f"ping {sid} {start + 100 + i}", "workflow_id": sid})
        chat.append((time.perf_counter() - t) * 1000)
        (a, b), = direct_chat(binary, address, sid, [f"ping {sid} {start + 200 + i}"])
        direct.append((b - a) * 1000)
    return chat, direct


if __name__ == "__main__":
    main()
