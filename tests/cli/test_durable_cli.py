"""The durable agent as a user runs it: `codeact run` / `codeact worker` / `codeact chat` against a
real Temporal dev server and real Docker, with a local OpenAI-compatible server scripting a
multi-step CodeAct trajectory. Workers are killed with SIGKILL on purpose; runs must still finish
with every cell applied exactly once."""
import base64
import json
import os
import re
import signal
import subprocess
import threading
import time
import uuid

import pytest

from dev_server import DevServer
from scripted_model import ScriptedModel, python_turn
from worker_process import FAST_DURABLE, WorkerProcess, record_mcp_config

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
PROMPTS = os.path.join(REPO, "config", "agent_prompts.yml")

# Each cell appends one line to a file (files are never rolled back: the line count is how many
# times cells really ran) and increments a counter (state restored from snapshots).
COUNT = ("counter = globals().get('counter', 0) + 1\n"
         "open('/output/cells.log', 'a').write('cell %d\\n' % counter)\n")


@pytest.fixture
def config(tmp_path):
    p = tmp_path / "app_conf.yml"
    p.write_text(FAST_DURABLE)
    return str(p)


@pytest.fixture
def wid(cli):
    w = f"durable-{uuid.uuid4().hex[:8]}"
    yield w
    cli("sandbox", "rm", w, "--volume")


class Worker(WorkerProcess):
    """A `codeact worker` on `queue` that can be SIGKILLed and started again."""

    def __init__(self, cli, address, queue, config, env=None):
        super().__init__([cli.bin, "worker", "--temporal", address, "--task-queue", queue, "--config", config,
                          "--prompts", PROMPTS], dict(os.environ, **(env or {})))


@pytest.fixture
def worker_factory(cli, temporal_server, config):
    made = []

    def make(queue, env=None):
        w = Worker(cli, temporal_server, queue, config, env)
        made.append(w)
        return w.start()
    yield make
    for w in made:
        w.stop()


def volume_exists(wid):
    return subprocess.run(["docker", "volume", "inspect", f"workflow-{wid}"], capture_output=True).returncode == 0


def volume_file(wid, name):
    """A file under the sandbox's /output, read from its volume by a throwaway container (the
    volume is a loop-mounted disk that is only mounted while a container uses it). None while the
    volume does not exist: `docker run -v` would create it, unlabelled, and codeact would then
    refuse to remove a volume it did not create."""
    if not volume_exists(wid):
        return None
    p = subprocess.run(["docker", "run", "--rm", "--network", "none", "--user", "1000:1000", "--entrypoint", "cat",
                        "-v", f"workflow-{wid}:/v:ro", "codeact-sandbox:latest", f"/v/{wid}/output/{name}"],
                       capture_output=True, text=True)
    return p.stdout if p.returncode == 0 else None


def run_durable(cli, address, wid, model, config, *extra, check=0, timeout=400):
    p = cli("run", "--temporal", address, "--model", model.model_flag, "--prompts", PROMPTS, "--config", config,
            "--workflow-id", wid, "--json", *extra, check=check, timeout=timeout)
    return p, (json.loads(p.out) if p.returncode == 0 else None)


def test_durable_run_returns_the_answer_and_the_file_is_in_the_volume(cli, temporal_server, wid, config):
    model = ScriptedModel([
        python_turn("call_1", "answer = 6 * 7\nopen('/output/answer.txt', 'w').write(str(answer))\nanswer"),
        {"content": "The answer is 42 (saved in /output/answer.txt)."},
    ])
    try:
        p, j = run_durable(cli, temporal_server, wid, model, config, "--disk", "96m", "Compute 6*7 and save it.")
    finally:
        model.close()
    assert j["output"] == "The answer is 42 (saved in /output/answer.txt)."
    assert j["durable"] is True and j["workflow_id"] == wid and j["sandbox_id"] == wid
    # --disk travelled in the workflow's input to the worker that started the sandbox.
    disk = subprocess.run(["docker", "inspect", "-f", '{{index .Config.Labels "io.codeact.disk"}}', f"codeact-{wid}"],
                          capture_output=True, text=True)
    assert disk.stdout.strip() == "96m", disk
    assert j["files"] == ["/output/answer.txt"]
    assert j["usage"]["requests"] == 2 and j["usage"]["tool_calls"] == 1
    # The live view followed the workflow: the step, the cell and its result.
    assert "step 1" in p.err and "execute_python" in p.err and "result: 42" in p.err
    # The model saw the cell's result and, through the instructions, the sandbox it works in.
    second = json.dumps(model.requests[1]["messages"])
    assert "result: 42" in second and wid in second
    assert volume_file(wid, "answer.txt") == "42"
    # The sandbox was stopped, its volume kept.
    state = subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", f"codeact-{wid}"],
                           capture_output=True, text=True)
    assert state.stdout.strip() != "true"


def test_worker_killed_during_a_model_call_a_cell_and_between_steps(cli, temporal_server, wid, config,
                                                                    worker_factory):
    queue = f"q-{uuid.uuid4().hex[:6]}"
    worker = worker_factory(queue)
    restart_lock = threading.Lock()
    killed = {"model": False}

    def kill_and_restart(delay=0.0):
        time.sleep(delay)
        with restart_lock:
            worker.kill()
            time.sleep(1)
            worker.start()

    def on_request(k, body):
        # During a model call: the worker dies while it waits for the answer to step 2.
        if k == 1 and not killed["model"]:
            killed["model"] = True
            kill_and_restart()
            time.sleep(1)  # the dead worker's request is answered into the void

    turns = [
        python_turn("call_1", COUNT + "'first'"),
        # During a cell: this one sleeps; the worker is killed while it runs.
        python_turn("call_2", "open('/output/cell2.started', 'w').write('x')\nimport time\ntime.sleep(5)\n"
                    + COUNT + "'second'"),
        python_turn("call_3", COUNT + "open('/output/step3.done', 'w').write('x')\n'third'"),
        {"content": "All three cells ran."},
    ]
    model = ScriptedModel(turns, on_request=on_request)
    result = {}

    def run():
        result["p"], result["j"] = run_durable(cli, temporal_server, wid, model, config, "--no-worker",
                                               "--task-queue", queue, "Count three cells.", check=None)

    runner = threading.Thread(target=run)
    runner.start()
    try:
        # During a cell: step 2's cell has started its 5 s sleep.
        deadline = time.time() + 180
        while time.time() < deadline and volume_file(wid, "cell2.started") is None:
            time.sleep(0.05)
        time.sleep(1)
        kill_and_restart()
        # At the step boundary: the moment step 3's cell ends (its last statement), before the next
        # model request.
        while time.time() < deadline and volume_file(wid, "step3.done") is None:
            time.sleep(0.05)
        kill_and_restart()
        runner.join(timeout=300)
    finally:
        model.close()
    assert not runner.is_alive(), "the run did not finish"
    p, j = result["p"], result["j"]
    assert p.returncode == 0, p.err
    assert j["output"] == "All three cells ran."
    assert worker.kills == 3
    # Every cell ran exactly once, whatever was retried.
    assert volume_file(wid, "cells.log") == "cell 1\ncell 2\ncell 3\n"
    # The cell interrupted by the kill reached the model with its real result (recorded, not re-run).
    assert "result: 'second'" in json.dumps(model.requests[-1]["messages"])
    p, cell = cli.json("sandbox", "exec", wid, "--json", "counter", check=0)
    assert cell["result"] == "3"


# How long the Temporal server stays away in the outage test (the figure; more by hand).
OUTAGE_SECONDS = float(os.environ.get("CODEACT_TEST_OUTAGE_SECONDS", "30"))


def test_run_survives_the_temporal_server_going_away_mid_cell(cli, tmp_path, wid, config):
    # A server of this test's own: it is killed during step 2's cell and started again, on the
    # same port and database, OUTAGE_SECONDS later.
    (tmp_path / "temporal").mkdir()
    server = DevServer(tmp_path / "temporal")
    address = server.start()
    port = int(address.rsplit(":", 1)[1])
    turns = [
        python_turn("call_1", COUNT + "'first'"),
        python_turn("call_2", "open('/output/cell2.started', 'w').write('x')\nimport time\ntime.sleep(6)\n"
                    + COUNT + "'second'"),
        python_turn("call_3", COUNT + "'third'"),
        {"content": "All three cells ran."},
    ]
    model = ScriptedModel(turns)
    result = {}

    def run():
        result["p"], result["j"] = run_durable(cli, address, wid, model, config, "Count three cells.",
                                               check=None, timeout=600)

    runner = threading.Thread(target=run)
    runner.start()
    try:
        deadline = time.time() + 180
        while time.time() < deadline and volume_file(wid, "cell2.started") is None:
            time.sleep(0.05)
        server.stop()  # the worker in `codeact run` finishes the cell while the server is away
        time.sleep(OUTAGE_SECONDS)
        server.start(port=port)
        runner.join(timeout=400)
    finally:
        model.close()
        server.stop()
    assert not runner.is_alive(), "the run did not finish"
    p, j = result["p"], result["j"]
    assert p.returncode == 0, p.err
    assert j["output"] == "All three cells ran."
    assert volume_file(wid, "cells.log") == "cell 1\ncell 2\ncell 3\n"
    # Said once each, however many polls, heartbeats and waits failed in between.
    assert p.err.count("does not answer") == 1, p.err
    assert p.err.count("answers again") == 1, p.err


def test_sandbox_container_killed_mid_run_is_restored_and_the_run_completes(cli, temporal_server, wid, config):
    turns = [
        python_turn("call_1", "data = [1, 2, 3]\n'stored'"),
        python_turn("call_2", "import time\nopen('/output/sleeping', 'w').write('x')\ntime.sleep(8)\n'slept'"),
        python_turn("call_3", "sum(data)"),
        {"content": "The sum is 6."},
    ]
    model = ScriptedModel(turns)
    result = {}

    def run():
        result["p"], result["j"] = run_durable(cli, temporal_server, wid, model, config, "Sum it.", check=None)

    runner = threading.Thread(target=run)
    runner.start()
    try:
        deadline = time.time() + 180
        while time.time() < deadline and volume_file(wid, "sleeping") is None:
            time.sleep(0.1)
        subprocess.run(["docker", "kill", f"codeact-{wid}"], capture_output=True)
        runner.join(timeout=300)
    finally:
        model.close()
    p, j = result["p"], result["j"]
    assert p.returncode == 0, p.err
    assert j["output"] == "The sum is 6."
    # The model was told the killed cell's changes are lost and the kernel came back from its snapshot.
    killed_cell = [m for m in model.requests[2]["messages"] if m.get("role") == "tool"][-1]["content"]
    assert "restarted from the snapshot" in killed_cell, killed_cell
    # The state from before the kill was back for the next cell.
    assert "result: 6" in json.dumps(model.requests[-1]["messages"])


def test_bad_model_output_goes_back_to_the_model_and_the_run_continues(cli, temporal_server, wid, config):
    turns = [
        {"content": None, "tool_calls": [{"id": "bad_1", "type": "function",
                                          "function": {"name": "execute_python", "arguments": "{not json"}}]},
        {"content": None, "tool_calls": [{"id": "bad_2", "type": "function",
                                          "function": {"name": "launch_rockets", "arguments": "{}"}}]},
        python_turn("call_3", "raise ValueError('boom')"),
        {"content": "Recovered."},
    ]
    model = ScriptedModel(turns)
    try:
        p, j = run_durable(cli, temporal_server, wid, model, config, "Try things.")
    finally:
        model.close()
    assert j["output"] == "Recovered."
    conversation = json.dumps(model.requests[3]["messages"])
    assert "launch_rockets" in conversation and "ValueError" in conversation and "boom" in conversation
    assert "{not json" in json.dumps(model.requests[1]["messages"])


def test_usage_limit_ends_the_run_with_a_clear_error_and_the_sandbox_is_removed(cli, temporal_server, wid, config):
    turns = [python_turn(f"call_{i}", f"x{i} = {i}") for i in range(5)]
    model = ScriptedModel(turns)
    try:
        p, _ = run_durable(cli, temporal_server, wid, model, config, "--max-requests", "2", "Loop.", check=None)
    finally:
        model.close()
    assert p.returncode != 0
    assert "request_limit" in p.err or "request limit" in p.err, p.err
    assert len(model.requests) == 2
    # The container is gone; the volume (with x0, x1) is kept.
    state = subprocess.run(["docker", "inspect", f"codeact-{wid}"], capture_output=True, text=True)
    assert state.returncode != 0
    assert subprocess.run(["docker", "volume", "inspect", f"workflow-{wid}"], capture_output=True).returncode == 0


def test_no_credential_in_workflow_history_or_container(cli, temporal_server, wid, config, worker_factory):
    secret = "sk-codeact-test-" + uuid.uuid4().hex
    queue = f"q-{uuid.uuid4().hex[:6]}"
    model = ScriptedModel([python_turn("call_1", "import os\nsorted(os.environ)"), {"content": "ok"}])
    # The worker holds the key and the provider's address; the run names only "openai:scripted".
    worker_factory(queue, env={"OPENAI_API_KEY": secret,
                               "OPENAI_BASE_URL": model.model_flag.split("@", 1)[1]})
    try:
        p = cli("run", "--temporal", temporal_server, "--model", "openai:scripted", "--prompts", PROMPTS,
                "--config", config, "--workflow-id", wid, "--json", "--no-worker", "--task-queue", queue,
                "Look around.", env={"OPENAI_API_KEY": "client-side-key"}, check=0, timeout=300)
    finally:
        model.close()
    # The key was really used, by the worker, to call the provider.
    assert model.headers and all(h.get("Authorization") == f"Bearer {secret}" for h in model.headers)
    history = subprocess.run([os.path.join(REPO, ".venv/bin/temporal"), "workflow", "show", "--address",
                              temporal_server, "--workflow-id", wid, "--output", "json"],
                             capture_output=True, text=True, timeout=60)
    assert history.returncode == 0, history.stderr
    # Model requests are local activities: a marker records each answer (not the request).
    assert "core_local_activity" in history.stdout
    assert "codeact.tool_call" in history.stdout
    assert secret not in history.stdout
    decoded = [base64.b64decode(d).decode("utf-8", "replace")
               for d in re.findall(r'"data":\s*"([A-Za-z0-9+/=]+)"', history.stdout)]
    texts = [history.stdout] + decoded
    assert any("codeact.model_request" in t for t in texts), "the markers name the activity"
    assert all(secret not in t for t in texts)
    inspect = subprocess.run(["docker", "inspect", f"codeact-{wid}"], capture_output=True, text=True)
    assert secret not in inspect.stdout
    assert secret not in json.dumps(model.requests)


def test_progress_is_answered_while_a_long_local_model_request_runs(cli, temporal_server, wid, config,
                                                                   worker_factory):
    # Model requests are local activities: they run inside the workflow task, which the worker
    # renews every 8 s (4/5 of the 10 s task timeout) while one runs. A `progress` query must be
    # answered at a renewal, long before the model does, and show the step the model is on.
    queue = f"q-{uuid.uuid4().hex[:6]}"
    worker_factory(queue)
    thinking = threading.Event()
    answered = {}

    def on_request(k, body):
        if k == 1:
            thinking.set()

    model = ScriptedModel([python_turn("call_1", "6 * 7"), {"content": "It is 42."}],
                          on_request=on_request, delays={1: 25})
    script = f"""
import asyncio, json, time
from temporalio.client import Client

async def main():
    client = await Client.connect("{temporal_server}")
    handle = client.get_workflow_handle("{wid}")
    t0 = time.monotonic()
    progress = await asyncio.wait_for(handle.query("progress", {{"since": 0}}), 60)
    print(json.dumps({{"seconds": time.monotonic() - t0, "progress": progress}}))

asyncio.run(main())
import os, sys
sys.stdout.flush()
os._exit(0)  # temporalio's native runtime may crash at interpreter teardown (see above)
"""
    run = subprocess.Popen([cli.bin, "run", "--temporal", temporal_server, "--model", model.model_flag, "--prompts",
                            PROMPTS, "--config", config, "--workflow-id", wid, "--no-worker", "--task-queue", queue,
                            "--json", "Compute 6*7."], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert thinking.wait(120), "the model was never asked for step 2"
        asked = time.monotonic()
        q = subprocess.run([os.path.join(REPO, ".venv/bin/python"), "-c", script], capture_output=True, text=True,
                           timeout=120)
        answered["after_ask"] = time.monotonic() - asked
        out, err = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
        model.close()
    assert q.returncode == 0, q.stderr
    got = json.loads(q.stdout.strip().splitlines()[-1])
    print(f"progress answered {got['seconds']:.1f} s after it was asked, "
          f"{answered['after_ask']:.1f} s into a 25 s model request")
    # Answered at the task's first renewal (8 s into the request), long before the model answers
    # (25 s): a query held for a second renewal (16 s) was the bug this guards against. The cell's
    # result is in and the second model request started, not finished.
    assert answered["after_ask"] < 13, answered
    kinds = [(e["event_kind"], e.get("run_step")) for e in got["progress"]["events"]]
    assert ("tool_result", 1) in kinds and ("model_request_start", 2) in kinds, kinds
    assert ("model_response", 2) not in kinds and not any(k == "final_result" for k, _ in kinds), kinds
    assert run.returncode == 0, err
    assert json.loads(out)["output"] == "It is 42."


def test_chat_workflow_driven_by_the_python_temporalio_client(cli, temporal_server, wid, config, worker_factory):
    queue = f"q-{uuid.uuid4().hex[:6]}"
    worker_factory(queue)

    # Two messages: the second builds on the first one's variable.
    turns_by_conversation = [
        python_turn("call_1", "total = 40 + 2\ntotal"),
        {"content": "total is 42"},
        python_turn("call_2", "total * 2"),
        {"content": "double is 84"},
    ]
    model = ScriptedModel(turns_by_conversation)
    script = f"""
import asyncio, json
from temporalio.client import Client

async def main():
    client = await Client.connect("{temporal_server}")
    # One message per workflow run: the second message is answered after a continue-as-new.
    handle = await client.start_workflow("CodeActChatWorkflow", {{"model": "{model.model_flag}",
                                                                  "max_turns_per_run": 1}},
                                         id="{wid}", task_queue="{queue}")
    # A message that is not one (a misspelt key) is reported, and the chat goes on.
    await handle.signal("send_user_task", {{"tsak": "compute the total"}})
    for _ in range(600):
        bad = await handle.query("agent_output")
        if bad.get("rejected"):
            break
        await asyncio.sleep(0.2)
    progress = await handle.query("progress", {{"since": 0}})
    await handle.signal("send_user_task", "compute the total")
    for _ in range(600):
        out = await handle.query("agent_output")
        if len(out["turns"]) == 1:
            break
        await asyncio.sleep(0.2)
    await handle.signal("send_user_task", "double it")
    for _ in range(600):
        out = await handle.query("agent_output")
        if len(out["turns"]) == 2:
            break
        await asyncio.sleep(0.2)
    await handle.signal("stop_chat")
    result = await handle.result()
    print(json.dumps({{"query": out, "result": result, "bad": bad, "progress": progress}}))

asyncio.run(main())
import os, sys
sys.stdout.flush()
# Skip interpreter teardown: temporalio's native runtime has been seen to crash there after the
# work is done ("PyGILState_Release ... finalizing", exit -6), as in tests/temporal/py.
os._exit(0)
"""
    try:
        p = subprocess.run([os.path.join(REPO, ".venv/bin/python"), "-c", script], capture_output=True, text=True,
                           timeout=300)
    finally:
        model.close()
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    turns = out["query"]["turns"]
    assert [t["output"] for t in turns] == ["total is 42", "double is 84"]
    assert out["result"]["reason"] == "stopped" and len(out["result"]["turns"]) == 2
    assert out["result"]["runs"] == 3  # continued as new after each message; state carried
    # The malformed message: named in agent_output and in the progress events, answered by no turn.
    assert out["bad"]["turns"] == [] and 'unknown key "tsak"' in out["bad"]["rejected"][0]["error"]
    assert '"tsak"' in out["bad"]["rejected"][0]["sent"]
    rejected = [e for e in out["progress"]["events"] if e["event_kind"] == "message_rejected"]
    assert len(rejected) == 1 and 'unknown key "tsak"' in rejected[0]["error"], out["progress"]
    # The second message's conversation held the first one (one chat, one sandbox).
    assert "total is 42" in json.dumps(model.requests[-1]["messages"])
    assert "result: 84" in json.dumps(model.requests[-1]["messages"])


def test_chat_command_answers_each_line(cli, temporal_server, wid, config):
    model = ScriptedModel([
        python_turn("call_1", "name = 'codeact'\nname"),
        {"content": "stored the name"},
        python_turn("call_2", "name.upper()"),
        {"content": "CODEACT"},
    ])
    try:
        p = cli("chat", "--temporal", temporal_server, "--model", model.model_flag, "--prompts", PROMPTS,
                "--config", config, "--workflow-id", wid, input=b"store the name\nshout it\n", check=0, timeout=300)
    finally:
        model.close()
    assert "── answer\nstored the name" in p.out and "── answer\nCODEACT" in p.out
    assert "'CODEACT'" in p.out  # the second cell's result, shown live
    assert "ended after 2 message(s)" in p.err


def test_a_chat_forked_at_a_turn_keeps_the_turns_before_it_and_their_sandbox_state(
        cli, temporal_server, wid, config):
    model = ScriptedModel([
        python_turn("call_1", "x = 1"),
        {"content": "one"},
        python_turn("call_2", "x += 1\nx"),
        {"content": "two"},
        python_turn("call_3", "x += 100\nx"),
        {"content": "hundred"},
    ])
    fork = wid + "-fork"
    try:
        cli("chat", "--temporal", temporal_server, "--model", model.model_flag, "--prompts", PROMPTS,
            "--config", config, "--workflow-id", wid, input=b"set x\nadd one\nadd a hundred\n",
            check=0, timeout=300)
        asked = len(model.requests)
        # Fork before turn 2: turn 1 is kept (shown, not asked again), the sandbox starts from
        # the checkpoint turn 1's cell left (x == 1), and turn 2 is asked again.
        p = cli("chat", "--temporal", temporal_server, "--model", model.model_flag, "--prompts",
                PROMPTS, "--config", config, "--workflow-id", fork, "--fork", wid, "--turn", "2",
                input=b"add one again\n", check=0, timeout=300)
        assert f"forking chat {wid} before its turn 2: 1 turn(s) kept, sandbox from checkpoint " \
            in p.err, p.err
        assert "you> set x\n── answer\none" in p.out
        assert "── answer\ntwo" in p.out
        assert len(model.requests) - asked == 2  # turn 2's cell and answer; not turn 1's
        users = [m["content"] for m in model.requests[asked]["messages"] if m["role"] == "user"]
        assert users[-2:] == ["set x", "add one again"]
        # The fork's sandbox went on from x == 1; the source's is untouched (x == 102).
        p, j = cli.json("sandbox", "exec", fork, "--json", "x", check=0)
        assert j["result"] == "2"
        p, j = cli.json("sandbox", "exec", wid, "--json", "x", check=0)
        assert j["result"] == "102"
        p = cli("chat", "--temporal", temporal_server, "--model", model.model_flag, "--prompts",
                PROMPTS, "--config", config, "--fork", wid, "--turn", "9", input=b"", timeout=120)
        assert p.returncode == 2 and "turn 9 does not exist: the chat has 3 turn(s)" in p.err, p.err
    finally:
        model.close()
        cli("sandbox", "rm", fork, "--volume")


def test_no_durable_runs_the_same_scenario_in_process(cli, wid):
    model = ScriptedModel([python_turn("call_1", COUNT + "'one'"), {"content": "done"}])
    try:
        p, j = cli.json("run", "--no-durable", "--model", model.model_flag, "--prompts", PROMPTS,
                        "--workflow-id", wid, "--json", "Count.", check=0)
    finally:
        model.close()
    assert j["output"] == "done" and j["durable"] is False and j["files"] == ["/output/cells.log"]


def test_embedded_dev_server_is_started_once_and_reused(cli, tmp_path, wid):
    home = tmp_path / "home"
    cfg = tmp_path / "app_conf.yml"
    cfg.write_text(FAST_DURABLE)
    from dev_server import free_port
    env = {"CODEACT_HOME": str(home), "CODEACT_TEMPORAL_PORT": str(free_port())}
    model = ScriptedModel([{"content": "hello"}])
    pid_file = home / "temporal" / "pid"
    try:
        first = cli("run", "--model", model.model_flag, "--prompts", PROMPTS, "--config", str(cfg),
                    "--workflow-id", wid, "Say hello.", env=env, check=0, timeout=300)
        assert "starting the embedded Temporal dev server" in first.err
        assert first.out.rstrip().endswith("── answer\nhello")
        second = cli("run", "--model", model.model_flag, "--prompts", PROMPTS, "--config", str(cfg),
                     "--workflow-id", wid + "-2", "Say hello.", env=env, check=0, timeout=300)
        assert "already running" in second.err and "starting the embedded" not in second.err
    finally:
        model.close()
        cli("sandbox", "rm", wid + "-2", "--volume")
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text().strip()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


def test_mcp_tools_are_callable_from_cells_of_a_durable_run(cli, temporal_server, wid, tmp_path):
    secret = "mcp-secret-" + uuid.uuid4().hex
    cfg = tmp_path / "mcp_conf.yml"
    cfg.write_text(FAST_DURABLE + f"""
mcp_servers:
  time:
    command: {os.path.join(REPO, ".venv/bin/mcp-server-time")}
    args: ["--local-timezone", "UTC"]
    env: {{CODEACT_TEST_SECRET: "{secret}"}}
""")
    model = ScriptedModel([python_turn("call_1", "get_current_time(timezone='Asia/Tokyo')['timezone']"),
                           {"content": "Tokyo"}])
    try:
        p, j = run_durable(cli, temporal_server, wid, model, str(cfg), "--mcp", "time", "What time is it in Tokyo?")
        bad = cli("run", "--temporal", temporal_server, "--model", model.model_flag, "--config", str(cfg),
                  "--mcp", "nope", "task")
    finally:
        model.close()
    assert j["output"] == "Tokyo"
    # The cell called the tool on the host, through the worker's MCP session.
    assert "result: 'Asia/Tokyo'" in json.dumps(model.requests[1]["messages"])
    # The model saw the tool as a Python signature, and never the server's environment.
    assert "def get_current_time(timezone: str)" in json.dumps(model.requests[0]["messages"])
    assert secret not in json.dumps(model.requests)
    assert bad.returncode == 2 and "--mcp nope" in bad.err and "configured: time" in bad.err


def test_a_cell_run_again_after_a_crash_does_not_call_its_mcp_tool_again(cli, temporal_server, wid, tmp_path):
    # The cell calls a tool whose side effect the host counts, then the machine "crashes" (worker
    # and container killed at once) before the cell commits: the retry runs the cell again from
    # the state before it, and its tool call gets the first call's answer instead of a new call.
    calls = tmp_path / "calls.log"
    cfg = tmp_path / "mcp_conf.yml"
    cfg.write_text(FAST_DURABLE + record_mcp_config(calls))
    queue = f"q-{uuid.uuid4().hex[:6]}"
    worker = Worker(cli, temporal_server, queue, str(cfg)).start()
    model = ScriptedModel([
        python_turn("call_1", "paid = record(text='charge 5 EUR')\n"
                    "open('/output/runs.log', 'a').write('run\\n')\n"
                    "open('/output/called', 'w').write('x')\nimport time\ntime.sleep(6)\npaid"),
        {"content": "Charged once."}])
    result = {}

    def run():
        result["p"], result["j"] = run_durable(cli, temporal_server, wid, model, str(cfg), "--no-worker",
                                               "--task-queue", queue, "--mcp", "fixture", "Charge 5 EUR.",
                                               check=None)

    runner = threading.Thread(target=run)
    runner.start()
    try:
        deadline = time.time() + 180
        while time.time() < deadline and volume_file(wid, "called") is None:
            time.sleep(0.05)
        worker.kill()
        subprocess.run(["docker", "kill", f"codeact-{wid}"], capture_output=True)
        worker.start()
        runner.join(timeout=300)
    finally:
        model.close()
        worker.stop()
    assert not runner.is_alive(), "the run did not finish"
    p, j = result["p"], result["j"]
    assert p.returncode == 0, p.err
    assert j["output"] == "Charged once."
    assert volume_file(wid, "runs.log") == "run\nrun\n"  # the cell really ran twice
    assert calls.read_text() == "charge 5 EUR\n"  # the tool once
    assert "result: 'call 1'" in json.dumps(model.requests[-1]["messages"])


def container_running(wid):
    p = subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", f"codeact-{wid}"], capture_output=True,
                       text=True)
    return p.returncode == 0 and p.stdout.strip() == "true"


# What a cancelled run does to its sandbox, and says it did: removed with the volume kept by
# default, kept running with --keep-sandbox (the volume too), removed with its volume with
# --remove-volume. (The message once said "removed (volume kept)" in all three cases.)
@pytest.mark.parametrize("flags,says,running,volume", [
    ([], 'its sandbox "{wid}" was removed (volume kept)', False, True),
    (["--keep-sandbox"], 'its sandbox "{wid}" was left running (keep_sandbox; volume kept)', True, True),
    (["--remove-volume"], 'its sandbox "{wid}" was removed with its volume (remove_volume)', False, False),
], ids=["default", "keep-sandbox", "remove-volume"])
def test_ctrl_c_cancels_the_run_and_says_what_became_of_the_sandbox(cli, temporal_server, wid, config, flags, says,
                                                                     running, volume):
    model = ScriptedModel([
        python_turn("call_1", "open('/output/started', 'w').write('x')\nimport time\ntime.sleep(60)"),
        {"content": "never"},
    ])
    try:
        proc = subprocess.Popen([cli.bin, "run", "--temporal", temporal_server, "--model", model.model_flag,
                                 "--prompts", PROMPTS, "--config", config, "--workflow-id", wid, *flags, "Sleep."],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while time.time() < deadline and volume_file(wid, "started") is None:
            time.sleep(0.1)
        started = time.time()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        took = time.time() - started
    finally:
        model.close()
    assert proc.returncode == 130, err
    # The live view's last line (a cancelled workflow's result carries no message).
    assert "cancelling the run" in err and "── the run was cancelled; " + says.format(wid=wid) in out, out + err
    assert took < 45, f"cancellation took {took:.0f} s: the cell was not interrupted"
    assert container_running(wid) == running
    if not running:
        assert subprocess.run(["docker", "inspect", f"codeact-{wid}"], capture_output=True).returncode != 0
    assert volume_exists(wid) == volume
    if volume:
        assert volume_file(wid, "started") == "x"


def test_codeact_run_killed_and_run_again_follows_the_same_workflow_to_the_end(cli, temporal_server, wid, config):
    model = ScriptedModel([
        python_turn("call_1", COUNT + "open('/output/started', 'w').write('x')\nimport time\ntime.sleep(4)\n'slow'"),
        python_turn("call_2", COUNT + "'fast'"),
        {"content": "finished after the crash"},
    ])
    argv = ["run", "--temporal", temporal_server, "--model", model.model_flag, "--prompts", PROMPTS,
            "--config", config, "--workflow-id", wid, "--json", "Two cells."]
    try:
        first = subprocess.Popen([cli.bin, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 120
        while time.time() < deadline and volume_file(wid, "started") is None:
            time.sleep(0.05)
        first.kill()  # SIGKILL: the process hosting the worker is gone mid-cell
        first.communicate()
        p, j = cli.json(*argv, check=0, timeout=300)
        # The same command once more (say its process was killed after the run completed, before
        # the answer was printed): the completed run's answer, the task not done again.
        requests = len(model.requests)
        again, j2 = cli.json(*argv, check=0, timeout=300)
        asked_again = len(model.requests) - requests
        cells_before_other = volume_file(wid, "cells.log")
        other = cli("run", "--temporal", temporal_server, "--model", model.model_flag, "--prompts", PROMPTS,
                    "--config", config, "--workflow-id", wid, "--json", "Another task.", check=None)
    finally:
        model.close()
    assert "already running" in p.err
    assert j["output"] == "finished after the crash" and j["workflow_id"] == wid
    assert cells_before_other == "cell 1\ncell 2\n"
    assert "already completed this task" in again.err and j2["output"] == j["output"]
    assert asked_again == 0
    # Another task on the same workflow id is a new run (in the same sandbox).
    assert other.returncode == 0 and "started on task queue" in other.err, other.err
    assert volume_file(wid, "cells.log") == "cell 1\ncell 2\ncell 3\ncell 4\n"


def test_a_sandbox_that_fails_to_start_is_removed_and_the_run_fails_clearly(cli, temporal_server, wid, config,
                                                                          worker_factory):
    queue = f"q-{uuid.uuid4().hex[:6]}"
    worker_factory(queue)
    # The CLI refuses this combination up front ...
    p = cli("run", "--temporal", temporal_server, "--packages", "numpy", "task")
    assert p.returncode == 2 and "--packages needs --network" in p.err
    # ... a client that asks anyway gets a failed run and no container left behind.
    script = f"""
import asyncio
from temporalio.client import Client, WorkflowFailureError

async def main():
    client = await Client.connect("{temporal_server}")
    try:
        await client.execute_workflow("CodeActTaskWorkflow", {{"task": "x", "python_packages": ["numpy"]}},
                                      id="{wid}", task_queue="{queue}")
    except WorkflowFailureError as e:
        print("FAILED:", e.cause)

asyncio.run(main())
import os, sys
sys.stdout.flush()
# Skip interpreter teardown: temporalio's native runtime has been seen to crash there after the
# work is done ("PyGILState_Release ... finalizing", exit -6), as in tests/temporal/py.
os._exit(0)
"""
    p = subprocess.run([os.path.join(REPO, ".venv/bin/python"), "-c", script], capture_output=True, text=True,
                       timeout=300)
    assert "FAILED:" in p.stdout and "network" in p.stdout, p.stdout + p.stderr
    assert subprocess.run(["docker", "inspect", f"codeact-{wid}"], capture_output=True).returncode != 0


def test_a_misspelt_input_key_fails_the_run_at_once_naming_it(cli, temporal_server, wid, config, worker_factory):
    queue = f"q-{uuid.uuid4().hex[:6]}"
    worker_factory(queue)
    # Before, an unknown key was ignored and the run went on without the packages asked for.
    script = f"""
import asyncio, time
from temporalio.client import Client, WorkflowFailureError

async def main():
    client = await Client.connect("{temporal_server}")
    started = time.monotonic()
    try:
        await client.execute_workflow("CodeActTaskWorkflow", {{"task": "x", "pyhton_packages": ["numpy"]}},
                                      id="{wid}", task_queue="{queue}")
    except WorkflowFailureError as e:
        print("FAILED:", e.cause, "after %.1f s" % (time.monotonic() - started))

asyncio.run(main())
import os, sys
sys.stdout.flush()
# Skip interpreter teardown: temporalio's native runtime has been seen to crash there after the
# work is done ("PyGILState_Release ... finalizing", exit -6), as in tests/temporal/py.
os._exit(0)
"""
    p = subprocess.run([os.path.join(REPO, ".venv/bin/python"), "-c", script], capture_output=True, text=True,
                       timeout=120)
    assert "FAILED:" in p.stdout, p.stdout + p.stderr
    assert 'unknown key "pyhton_packages"' in p.stdout, p.stdout
    assert subprocess.run(["docker", "inspect", f"codeact-{wid}"], capture_output=True).returncode != 0, \
        "no sandbox was started"


def test_a_terminated_run_leaves_no_running_sandbox(cli, temporal_server, wid, config, worker_factory):
    queue = f"q-{uuid.uuid4().hex[:6]}"
    worker_factory(queue)
    model = ScriptedModel([python_turn("call_1", "open('/output/started', 'w').write('x')\nimport time\ntime.sleep(120)")])
    try:
        proc = subprocess.Popen([cli.bin, "run", "--temporal", temporal_server, "--model", model.model_flag,
                                 "--prompts", PROMPTS, "--config", config, "--workflow-id", wid, "--no-worker",
                                 "--task-queue", queue, "Sleep."], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        deadline = time.time() + 120
        while time.time() < deadline and volume_file(wid, "started") is None:
            time.sleep(0.1)
        # Terminate runs no workflow code, so the workflow cannot clean up; the worker's reaper does.
        t = subprocess.run([os.path.join(REPO, ".venv/bin/temporal"), "workflow", "terminate", "--address",
                            temporal_server, "--workflow-id", wid, "--reason", "test"], capture_output=True, text=True)
        assert t.returncode == 0, t.stderr
        out, err = proc.communicate(timeout=60)
        running = True
        deadline = time.time() + 30
        while time.time() < deadline and running:
            state = subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", f"codeact-{wid}"],
                                   capture_output=True, text=True)
            running = state.stdout.strip() == "true"
            time.sleep(0.5)
    finally:
        model.close()
    assert proc.returncode != 0 and "terminated" in err.lower(), err
    assert not running, "the sandbox of a terminated run is still running"
    assert volume_file(wid, "started") == "x"  # the volume is kept


def test_a_misspelt_durable_key_in_app_conf_stops_worker_and_run_at_once_naming_it(cli, tmp_path):
    # Before, durable.reap_interval_secs was ignored (the reaper ran every 60 s) and a string
    # interval read as the default.
    for text, says in [("durable:\n  reap_interval_secs: 1\n", 'durable: unknown key "reap_interval_secs"'),
                       ("durable:\n  reap_interval_seconds: soon\n",
                        'durable: "reap_interval_seconds" must be a number')]:
        cfg = tmp_path / "app_conf.yml"
        cfg.write_text(text)
        started = time.time()
        # 127.0.0.1:1 answers nothing: the error must come before any connection is tried.
        p = cli("worker", "--temporal", "127.0.0.1:1", "--config", str(cfg), "--prompts", PROMPTS, timeout=60)
        assert p.returncode != 0 and says in p.err and str(cfg) in p.err, p.err
        assert time.time() - started < 20
        p = cli("run", "--temporal", "127.0.0.1:1", "--config", str(cfg), "--prompts", PROMPTS, "--model",
                "openai-compatible:x@http://127.0.0.1:1/v1", "task", timeout=60)
        assert p.returncode != 0 and says in p.err and str(cfg) in p.err, p.err
