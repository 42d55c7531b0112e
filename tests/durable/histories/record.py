#!/usr/bin/env python3
"""Records the histories of the durable CodeAct workflows that tests/durable/replay_test.cpp
replays (see README.md next to this file). Run by hand, never in CI:

    python3 tests/durable/histories/record.py --codeact build-x/src/cli/codeact --out tests/durable/histories

It starts its own Temporal dev server (own SQLite file, free 127.0.0.1 port), one `codeact worker`
on the real Docker engine, and local OpenAI-compatible servers that script the model
(tests/cli/scripted_model.py), drives each scenario with `codeact run` or the `temporal` CLI,
checks that the run really did what the file is meant to cover (a retried cell, a continue-as-new,
...), and exports each workflow run with `temporal workflow show --output json`. The worker holds a
dummy API key; an exported file containing it, or the value of any *KEY*/*TOKEN*/*SECRET*
variable of this environment, is refused. Only the standard library is needed."""
import argparse
import base64
import binascii
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))
sys.path.insert(0, os.path.join(REPO, "tests", "cli"))
from dev_server import DevServer, default_program  # noqa: E402
from scripted_model import ScriptedModel, python_turn  # noqa: E402
from worker_process import FAST_DURABLE, WorkerProcess  # noqa: E402

PROMPTS = os.path.join(REPO, "config", "agent_prompts.yml")
DUMMY_KEY = "dummy-key-not-a-secret"
QUEUE = "codeact-histories"

# Short heartbeats, so a killed worker's activity is retried within seconds (the values are part of
# each run's input, hence of its history); no reaper.
CONFIG = FAST_DURABLE.replace("reap_interval_seconds: 1", "reap_interval_seconds: 0")


def tool_turn(call_id, name, args):
    return {"content": None, "tool_calls": [{"id": call_id, "type": "function",
                                             "function": {"name": name, "arguments": json.dumps(args)}}]}


def log(msg):
    print(f"[record] {msg}", file=sys.stderr, flush=True)


class Failed(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Failed(what)


class Worker(WorkerProcess):
    """One `codeact worker` process on QUEUE, its output appended to a log file."""

    def start(self, log_path):
        return super().start(stdout=open(log_path, "ab"), stderr=subprocess.STDOUT)


class Recorder:
    def __init__(self, args):
        self.codeact = os.path.abspath(args.codeact)
        self.out = os.path.abspath(args.out)
        self.temporal_bin = args.temporal_bin
        self.tmp = tempfile.mkdtemp(prefix="codeact-histories-")
        self.config = os.path.join(self.tmp, "app_conf.yml")
        with open(self.config, "w") as f:
            f.write(CONFIG)
        # No credential of this environment reaches the worker; the model servers need none.
        self.secrets = [v for k, v in os.environ.items()
                        if any(w in k.upper() for w in ("KEY", "TOKEN", "SECRET", "PASSWORD")) and len(v) >= 8]
        self.env = {k: v for k, v in os.environ.items()
                    if not any(w in k.upper() for w in ("KEY", "TOKEN", "SECRET", "PASSWORD"))}
        self.env.update({"OPENAI_API_KEY": DUMMY_KEY, "CODEACT_HOME": os.path.join(self.tmp, "home"),
                         "PYTHONDONTWRITEBYTECODE": "1"})
        self.address = None
        self.server = None
        self.worker = None
        self.workflow_ids = []
        self.written = []

    # -- processes ------------------------------------------------------------------------------

    def start_server(self):
        self.server = DevServer(self.tmp, binary=self.temporal_bin, program=default_program(self.codeact))
        try:
            self.address = self.server.start()
        except RuntimeError as e:
            raise Failed(str(e))
        log(f"dev server on {self.address}")

    def start_worker(self, default_model):
        argv = [self.codeact, "worker", "--temporal", self.address, "--task-queue", QUEUE, "--config", self.config,
                "--prompts", PROMPTS, "--model", default_model]
        self.worker = Worker(argv, self.env)
        self.worker.start(os.path.join(self.tmp, "worker.log"))

    def restart_worker(self):
        self.worker.kill()
        log("worker SIGKILLed")
        time.sleep(1)
        self.worker.start(os.path.join(self.tmp, "worker.log"))

    def close(self, keep_tmp):
        if self.worker:
            self.worker.stop()
        for wid in self.workflow_ids:
            subprocess.run([self.codeact, "sandbox", "rm", wid, "--volume"], capture_output=True, env=self.env)
        if self.server:
            self.server.stop()
        if keep_tmp:
            log(f"logs kept in {self.tmp}")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # -- tools ----------------------------------------------------------------------------------

    def temporal(self, *args, check=True, timeout=120):
        p = subprocess.run([self.temporal_bin, *args, "--address", self.address], capture_output=True, text=True,
                           timeout=timeout)
        if check and p.returncode != 0:
            raise Failed(f"temporal {' '.join(args)}: {p.stderr.strip()}")
        return p

    def codeact_run(self, model, wid, task, *extra):
        argv = [self.codeact, "run", "--temporal", self.address, "--model", model.model_flag, "--prompts", PROMPTS,
                "--config", self.config, "--workflow-id", wid, "--no-worker", "--task-queue", QUEUE, "--json",
                *extra, task]
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env)

    def new_id(self, name):
        wid = f"history-{name}-{uuid.uuid4().hex[:6]}"
        self.workflow_ids.append(wid)
        return wid

    def volume_file(self, wid, name):
        # A throwaway container reads the volume: a loop-mounted disk is mounted only while in use.
        p = subprocess.run(["docker", "run", "--rm", "--network", "none", "--user", "1000:1000", "--entrypoint", "cat",
                            "-v", f"workflow-{wid}:/v:ro", "codeact-sandbox:latest", f"/v/{wid}/output/{name}"],
                           capture_output=True, text=True)
        return p.stdout if p.returncode == 0 else None

    def wait_for_file(self, wid, name, timeout=180):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.volume_file(wid, name) is not None:
                return
            time.sleep(0.05)
        raise Failed(f"{wid}: /output/{name} did not appear")

    def query(self, wid, name):
        p = self.temporal("workflow", "query", "--workflow-id", wid, "--name", name, "--output", "json")
        return json.loads(p.stdout)["queryResult"][0]

    def history(self, wid, run_id=None):
        args = ["workflow", "show", "--workflow-id", wid, "--output", "json"]
        if run_id:
            args += ["--run-id", run_id]
        p = self.temporal(*args)
        return p.stdout, json.loads(p.stdout)["events"]

    def wait_closed(self, wid, timeout=300):
        deadline = time.time() + timeout
        while time.time() < deadline:
            _, events = self.history(wid)
            if events and events[-1]["eventType"] in CLOSED:
                return events
            time.sleep(0.5)
        raise Failed(f"{wid} did not close within {timeout} s")

    def export(self, name, text, events):
        everything = text + readable(events)
        for s in [DUMMY_KEY, *self.secrets]:
            expect(s not in everything, f"{name}: the history holds a credential; not written")
        path = os.path.join(self.out, name)
        with open(path, "w") as f:
            f.write(text if text.endswith("\n") else text + "\n")
        self.written.append((name, os.path.getsize(path), len(events), events[-1]["eventType"]))
        log(f"wrote {path} ({len(events)} events, ends with {events[-1]['eventType']})")


CLOSED = {"EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED", "EVENT_TYPE_WORKFLOW_EXECUTION_FAILED",
          "EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED", "EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED",
          "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW", "EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT"}


def attempts(events, activity_type):
    """The attempt of each started activity of that type (only the last attempt is recorded)."""
    scheduled = {e["eventId"]: e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
                 for e in events if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"}
    return [e["activityTaskStartedEventAttributes"].get("attempt", 1) for e in events
            if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_STARTED"
            and scheduled[e["activityTaskStartedEventAttributes"]["scheduledEventId"]] == activity_type]


def local_markers(events):
    """The local activities' markers (`core_local_activity`, since the `model-request-local`
    patch model requests are local activities)."""
    return [e for e in events if e["eventType"] == "EVENT_TYPE_MARKER_RECORDED"
            and e["markerRecordedEventAttributes"]["markerName"] == "core_local_activity"]


def model_request_retried(events, model):
    """Whether a model request was made again after the worker making it was killed: a
    `codeact.model_request` activity's attempt 2, or, for a local one, a workflow task that timed
    out on the dead worker, then the same request asked of the model twice."""
    if attempts(events, "codeact.model_request"):
        return max(attempts(events, "codeact.model_request")) >= 2
    timed_out = any(e["eventType"] == "EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT" for e in events)
    asked = [json.dumps(b.get("messages")) for b in model.requests]
    return bool(local_markers(events)) and timed_out and len(asked) > len(set(asked))


def readable(value):
    """The history's JSON with every payload's data base64-decoded beside it (payloads are stored
    base64-encoded), so a search for a string finds it whatever payload carries it."""
    parts = []

    def walk(v):
        if isinstance(v, dict):
            for k, x in v.items():
                if k in ("data", "encoding") and isinstance(x, str):
                    try:
                        parts.append(base64.b64decode(x, validate=True).decode("utf-8", "replace"))
                    except (binascii.Error, ValueError):
                        pass
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(value)
    return json.dumps(value) + "\n" + "\n".join(parts)


def last_type(events):
    return events[-1]["eventType"]


# -- scenarios ------------------------------------------------------------------------------------

def simple_agent(r, model):
    """SimpleAgentWorkflow started as the seed does (a bare string; the worker's default model)."""
    wid = r.new_id("simple")
    r.temporal("workflow", "execute", "--type", "SimpleAgentWorkflow", "--task-queue", QUEUE, "--workflow-id", wid,
               "--input", json.dumps("Say hello from the sandbox."), timeout=300)
    text, events = r.history(wid)
    expect(last_type(events) == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED", f"{wid}: {last_type(events)}")
    expect(len(model.requests) == 2, f"{wid}: {len(model.requests)} model requests")
    r.export("simple_agent_completed.json", text, events)


def task_with_retries(r, model, state):
    """Several cells, a bash call, a write_file call, a cell that writes a file; the worker is
    SIGKILLed during a cell and during a model request, so both activities are retried."""
    wid = r.new_id("task")
    proc = r.codeact_run(model, wid, "Summarise some square roots, with a report file.")
    r.wait_for_file(wid, "slow.started")
    time.sleep(1)
    r.restart_worker()  # mid-cell: the tool_call activity times out on heartbeat and is retried
    out, err = proc.communicate(timeout=400)
    expect(proc.returncode == 0, f"{wid}: codeact run exited {proc.returncode}: {err}")
    j = json.loads(out)
    expect(j["output"] == TASK_ANSWER, f"{wid}: answer {j['output']!r}")
    expect(state["model_killed"], f"{wid}: the worker was not killed during a model request")
    expect(sorted(j["files"]) == ["/output/cells.log", "/output/notes.md", "/output/report.txt",
                                  "/output/slow.started"],
           f"{wid}: files {j['files']}")
    expect(r.volume_file(wid, "cells.log") == "slow cell\n", f"{wid}: the slow cell ran {r.volume_file(wid, 'cells.log')!r}")
    text, events = r.history(wid)
    expect(last_type(events) == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED", f"{wid}: {last_type(events)}")
    expect(max(attempts(events, "codeact.tool_call")) >= 2, f"{wid}: no tool_call was retried")
    expect(model_request_retried(events, model), f"{wid}: no model_request was retried")
    r.export("task_cells_bash_file_retried.json", text, events)


TASK_ANSWER = "The mean square root of 0..9 is 2.02; report in /output/report.txt."


def task_turns(r, state):
    def on_request(k, body):
        # The answer to request 5 (after the slow cell) goes to a worker that is dead by then.
        if k == 5 and not state["model_killed"]:
            state["model_killed"] = True
            r.restart_worker()
            time.sleep(1)
    turns = [
        python_turn("call_1", "import math\nroots = [math.sqrt(i) for i in range(10)]\nlen(roots)"),
        tool_turn("call_2", "execute_bash", {"script": "echo bash says hi; ls -a /output | wc -l"}),
        tool_turn("call_3", "write_file", {"path": "notes.md", "content": "# notes\nroots of 0..9\n"}),
        python_turn("call_4", "import time\nopen('/output/slow.started', 'w').write('x')\ntime.sleep(5)\n"
                    "open('/output/cells.log', 'a').write('slow cell\\n')\nmean = sum(roots) / len(roots)\n"
                    "round(mean, 2)"),
        python_turn("call_5", "open('/output/report.txt', 'w').write(f'mean={mean:.2f}\\n')\n"
                    "open('/output/notes.md').read()"),
        python_turn("call_6", "print(open('/output/report.txt').read())"),
        {"content": TASK_ANSWER},
    ]
    return ScriptedModel(turns, on_request=on_request)


def chat_with_continue_as_new(r, model):
    """Three messages with max_turns_per_run 2: the first run answers two and continues as new
    with the third already queued; the second run answers it and ends on stop_chat."""
    wid = r.new_id("chat")
    start = {"model": model.model_flag, "max_turns_per_run": 2, "idle_timeout_seconds": 600}
    p = r.temporal("workflow", "start", "--type", "CodeActChatWorkflow", "--task-queue", QUEUE, "--workflow-id", wid,
                   "--input", json.dumps(start), "--output", "json")
    first_run = json.loads(p.stdout)["runId"]

    def send(task):
        r.temporal("workflow", "signal", "--workflow-id", wid, "--name", "send_user_task", "--input", json.dumps(task))

    def wait_turns(n, timeout=240):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                out = r.query(wid, "agent_output")
                if len(out["turns"] or []) >= n and out["status"] != "running":  # null before the first
                    return out
            except (Failed, KeyError, json.JSONDecodeError):
                pass
            time.sleep(0.3)
        raise Failed(f"{wid}: {n} turns not answered")

    send("Store the numbers 1 to 5 in a list.")
    wait_turns(1)
    send("Add them up.")
    time.sleep(0.5)  # the model answers this message slowly: the next one is queued meanwhile
    # With an id (since at-3b66d7a/): the queued message is carried with it, and its turn has it.
    send({"task": "Double the sum and save it to /output/double.txt.", "id": CARRIED_MESSAGE_ID})
    out = wait_turns(3)
    expect([t["output"] for t in out["turns"]] == CHAT_ANSWERS, f"{wid}: answers {out['turns']}")
    r.temporal("workflow", "signal", "--workflow-id", wid, "--name", "stop_chat")
    r.wait_closed(wid)
    run_id, runs = first_run, []
    while True:
        text, events = r.history(wid, run_id)
        runs.append((text, events))
        if last_type(events) != "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW":
            break
        run_id = events[-1]["workflowExecutionContinuedAsNewEventAttributes"]["newExecutionRunId"]
    expect(len(runs) == 2, f"{wid}: {len(runs)} runs")
    expect(last_type(runs[1][1]) == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED", f"{wid}: {last_type(runs[1][1])}")
    carried = readable(runs[1][1][0]["workflowExecutionStartedEventAttributes"]["input"])
    expect("Double the sum" in carried, f"{wid}: the queued message was not carried over")
    expect(CARRIED_MESSAGE_ID in carried, f"{wid}: the queued message's id was not carried over")
    result = readable(runs[1][1][-1]["workflowExecutionCompletedEventAttributes"]["result"])
    expect(f'"message_id":"{CARRIED_MESSAGE_ID}"' in result.replace(" ", ""),
           f"{wid}: the carried message's turn has no message_id: {result[:400]}")
    expect(r.volume_file(wid, "double.txt") == "30", f"{wid}: double.txt {r.volume_file(wid, 'double.txt')!r}")
    r.export("chat_run1_continued_as_new.json", *runs[0])
    r.export("chat_run2_stopped.json", *runs[1])


CARRIED_MESSAGE_ID = "msg-carried"
CHAT_ANSWERS = ["Stored numbers = [1, 2, 3, 4, 5].", "The sum is 15.", "Saved 30 to /output/double.txt."]


def chat_model():
    # The answer depends on the assistant messages so far, and the conversation is carried from
    # message to message (and across continue-as-new): request k of the whole chat gets turns[k].
    return ScriptedModel([
        python_turn("call_1", "numbers = [1, 2, 3, 4, 5]\nnumbers"),
        {"content": CHAT_ANSWERS[0]},
        python_turn("call_2", "total = sum(numbers)\ntotal"),
        {"content": CHAT_ANSWERS[1]},
        python_turn("call_3", "open('/output/double.txt', 'w').write(str(total * 2))\ntotal * 2"),
        {"content": CHAT_ANSWERS[2]},
    ], delays={2: 3})


def task_cancelled(r):
    """Ctrl-C on `codeact run` during a long cell: the workflow is cancelled, the cell interrupted
    and codeact.sandbox_finish removes the container."""
    model = ScriptedModel([
        python_turn("call_1", "x = 1\nx"),
        python_turn("call_2", "open('/output/started', 'w').write('x')\nimport time\ntime.sleep(120)"),
        {"content": "never"},
    ])
    wid = r.new_id("cancel")
    try:
        proc = r.codeact_run(model, wid, "Wait for a long time.")
        r.wait_for_file(wid, "started")
        time.sleep(1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        model.close()
    expect(proc.returncode == 130, f"{wid}: codeact run exited {proc.returncode}: {err}")
    r.wait_closed(wid)
    text, events = r.history(wid)
    expect(last_type(events) == "EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED", f"{wid}: {last_type(events)}")
    expect(attempts(events, "codeact.sandbox_finish"), f"{wid}: no cleanup activity ran")
    expect(subprocess.run(["docker", "inspect", f"codeact-{wid}"], capture_output=True).returncode != 0,
           f"{wid}: the container is still there")
    r.export("task_cancelled_during_cell.json", text, events)


def task_usage_limit(r):
    """--max-requests 2 on a model that never stops calling tools: the run fails, the container
    is removed."""
    model = ScriptedModel([python_turn(f"call_{i}", f"x{i} = {i}\nx{i}") for i in range(5)])
    wid = r.new_id("limit")
    try:
        proc = r.codeact_run(model, wid, "Loop for ever.", "--max-requests", "2")
        _, err = proc.communicate(timeout=300)
    finally:
        model.close()
    expect(proc.returncode != 0 and "request" in err, f"{wid}: exited {proc.returncode}: {err}")
    text, events = r.history(wid)
    expect(last_type(events) == "EVENT_TYPE_WORKFLOW_EXECUTION_FAILED", f"{wid}: {last_type(events)}")
    r.export("task_failed_usage_limit.json", text, events)


def chat_turn_cancelled(r):
    """A chat turn stopped with cancel_turn during a long cell: the cell is interrupted, the turn
    ends as cancelled, the session keeps its sandbox and answers the next message (whose request
    carries the cancelled one), then stops on stop_chat."""
    model = ScriptedModel([
        python_turn("call_1", "kept = 7\nopen('/output/started', 'w').write('x')\nimport time\ntime.sleep(120)"),
        {"content": CANCEL_ANSWER},
    ])
    wid = r.new_id("turncancel")
    start = {"model": model.model_flag, "idle_timeout_seconds": 600}
    try:
        r.temporal("workflow", "start", "--type", "CodeActChatWorkflow", "--task-queue", QUEUE, "--workflow-id", wid,
                   "--input", json.dumps(start), "--output", "json")
        r.temporal("workflow", "signal", "--workflow-id", wid, "--name", "send_user_task",
                   "--input", json.dumps("Wait for a long time."))
        r.wait_for_file(wid, "started")
        time.sleep(1)
        r.temporal("workflow", "signal", "--workflow-id", wid, "--name", "cancel_turn")
        deadline = time.time() + 120
        out = None
        while time.time() < deadline:
            try:
                out = r.query(wid, "agent_output")
                if len(out["turns"] or []) >= 1 and out["status"] != "running":
                    break
            except (Failed, KeyError, json.JSONDecodeError):
                pass
            time.sleep(0.3)
        expect(out and out["turns"] and out["turns"][0].get("error") == "the turn was cancelled",
               f"{wid}: first turn {out and out['turns']}")
        r.temporal("workflow", "signal", "--workflow-id", wid, "--name", "send_user_task",
                   "--input", json.dumps("Never mind, just say done."))
        deadline = time.time() + 120
        while time.time() < deadline:
            out = r.query(wid, "agent_output")
            if len(out["turns"] or []) >= 2 and out["status"] != "running":
                break
            time.sleep(0.3)
        expect(len(out["turns"]) == 2 and out["turns"][1]["output"] == CANCEL_ANSWER, f"{wid}: turns {out['turns']}")
        expect(any("Wait for a long time." in json.dumps(m) for m in model.requests[-1]["messages"]),
               f"{wid}: the cancelled message is not in the next request")
        r.temporal("workflow", "signal", "--workflow-id", wid, "--name", "stop_chat")
        r.wait_closed(wid)
    finally:
        model.close()
    text, events = r.history(wid)
    expect(last_type(events) == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED", f"{wid}: {last_type(events)}")
    expect(any(e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED" for e in events),
           f"{wid}: the cell's activity was not asked to cancel")
    r.export("chat_turn_cancelled.json", text, events)


CANCEL_ANSWER = "Done."

SCENARIOS = ["simple", "task", "chat", "cancel", "limit", "turncancel"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--codeact", required=True, help="the codeact binary (build-x/src/cli/codeact)")
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)), help="where to write the files")
    ap.add_argument("--temporal-bin", default=os.environ.get("CODEACT_TEMPORAL_BIN",
                                                             os.path.join(REPO, ".venv/bin/temporal")))
    ap.add_argument("--only", nargs="*", choices=SCENARIOS, default=SCENARIOS, help="record only these")
    ap.add_argument("--keep-logs", action="store_true", help="keep the server's and worker's logs")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    r = Recorder(args)
    ok = False
    simple = ScriptedModel([python_turn("call_1", "print('hello from the sandbox')"),
                            {"content": "Hello from the sandbox!"}])
    state = {"model_killed": False}
    task = task_turns(r, state)
    # Its answer to the killed worker's request meets a closed socket: expected, not worth a traceback.
    task.server.handle_error = lambda request, client_address: None
    chat = chat_model()
    try:
        p = subprocess.run([r.codeact, "image", "build"], capture_output=True, text=True, env=r.env, timeout=1800)
        expect(p.returncode == 0, "codeact image build: " + p.stderr)
        r.start_server()
        r.start_worker(simple.model_flag)
        if "simple" in args.only:
            simple_agent(r, simple)
        if "task" in args.only:
            task_with_retries(r, task, state)
        if "chat" in args.only:
            chat_with_continue_as_new(r, chat)
        if "cancel" in args.only:
            task_cancelled(r)
        if "limit" in args.only:
            task_usage_limit(r)
        if "turncancel" in args.only:
            chat_turn_cancelled(r)
        ok = True
    except Failed as e:
        log(f"FAILED: {e}")
    finally:
        for m in (simple, task, chat):
            m.close()
        r.close(keep_tmp=args.keep_logs or not ok)
    for name, size, n, last in r.written:
        print(f"{name}\t{size} bytes\t{n} events\t{last}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
