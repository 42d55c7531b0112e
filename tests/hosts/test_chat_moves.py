"""A chat's sandbox moves off a lost host after the chat continued as new (issue #13): the run
after a continue-as-new starts no sandbox, so it learns from its input that the storage is shared
(TaskInput.shared_storage) and what to start again on another host.

What a user notices: the next message is answered on a live host, with the variables of the
earlier turns there, and the model is told that the sandbox moved. With CODEACT_HISTORY_OUT set,
the second run's history is written there (tests/durable/histories/hosts/ replays it).
"""
import base64
import json
import subprocess
import time
import uuid

from hosts_harness import TEMPORAL
from scripted_model import ScriptedModel, python_turn
from test_hosts import moved_to, shared_hosts

ANSWERS = ["Stored x = 41.", "x + 1 is 42."]


def temporal(hosts, *args, timeout=60):
    p = subprocess.run([TEMPORAL, *args, "--address", hosts.address], capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, f"temporal {' '.join(args)}: {p.stderr}"
    return p.stdout


def events_of(hosts, wid, run_id=""):
    extra = ["--run-id", run_id] if run_id else []
    return json.loads(temporal(hosts, "workflow", "show", "--workflow-id", wid, *extra,
                               "--output", "json"))["events"]


def wait_for(what, check, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.3)


def turns_answered(hosts, wid, n):
    def check():
        try:
            out = json.loads(temporal(hosts, "workflow", "query", "--workflow-id", wid, "--name",
                                      "agent_output", "--output", "json"))["queryResult"][0]
        except (AssertionError, KeyError, json.JSONDecodeError):
            return None
        return out if len(out.get("turns") or []) >= n and out["status"] != "running" else None
    return wait_for(f"{wid}: {n} turns answered", check, timeout=240)


def completed_activities(events, name):
    scheduled = {str(e["eventId"]): e["activityTaskScheduledEventAttributes"]
                 for e in events if "activityTaskScheduledEventAttributes" in e}
    return [scheduled[str(e["activityTaskCompletedEventAttributes"]["scheduledEventId"])]
            for e in events if "activityTaskCompletedEventAttributes" in e
            and scheduled[str(e["activityTaskCompletedEventAttributes"]["scheduledEventId"])]
            ["activityType"]["name"] == name]


def test_a_chat_continued_as_new_moves_its_sandbox_when_its_host_dies(tmp_path, engines):
    hosts, shared = shared_hosts(tmp_path, engines, cell_seconds=0)
    hosts.model.close()
    hosts.model = ScriptedModel([python_turn("call_1", "x = 41\nx"), {"content": ANSWERS[0]},
                                 python_turn("call_2", "x + 1"), {"content": ANSWERS[1]}])
    wid = f"chatmove-{uuid.uuid4().hex[:6]}"
    h2 = engines["h2"]
    try:
        start = {"model": hosts.model.model_flag, "max_turns_per_run": 1, "idle_timeout_seconds": 600,
                 "host": "h2", "activities": {"host_timeout_seconds": 5}}
        first_run = json.loads(temporal(hosts, "workflow", "start", "--type", "CodeActChatWorkflow",
                                        "--task-queue", hosts.queue, "--workflow-id", wid,
                                        "--input", json.dumps(start), "--output", "json"))["runId"]
        temporal(hosts, "workflow", "signal", "--workflow-id", wid, "--name", "send_user_task",
                 "--input", json.dumps("Store 41 in x."))
        turns_answered(hosts, wid, 1)
        # Turn 1 ended the first run (max_turns_per_run 1): the next one carries the shared flag
        # and prepares the agent on h2, where the sandbox still is.
        runs = events_of(hosts, wid, first_run)
        assert runs[-1]["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW", runs[-1]
        second_run = runs[-1]["workflowExecutionContinuedAsNewEventAttributes"]["newExecutionRunId"]
        wait_for("the continued run prepared its agent",
                 lambda: completed_activities(events_of(hosts, wid, second_run), "codeact.agent_prepare"))
        assert not completed_activities(events_of(hosts, wid, second_run), "codeact.sandbox_start")

        hosts.workers["h2"].kill()
        h2.kill()
        lost_at = time.monotonic()
        temporal(hosts, "workflow", "signal", "--workflow-id", wid, "--name", "send_user_task",
                 "--input", json.dumps("Add one to x."))
        out = turns_answered(hosts, wid, 2)
        print(f"host lost to the chat's next turn answered on another host: "
              f"{time.monotonic() - lost_at:.1f} s (host timeout 5 s)")
        assert [t.get("output") for t in out["turns"]] == ANSWERS, out["turns"]
        tool_results = [m for body in hosts.model.requests for m in body.get("messages", [])
                        if m.get("role") == "tool" and m.get("tool_call_id") == "call_2"]
        assert tool_results, "turn 2's cell gave no result"
        text = str(tool_results[-1]["content"])
        to_host = moved_to(shared, wid)
        assert f'moved from host "h2" to host "{to_host}"' in text, text
        assert "42" in text, f"turn 1's x did not move with the sandbox: {text}"

        events = wait_for("turn 2 ended the second run", lambda: (lambda ev: ev if ev[-1][
            "eventType"].startswith("EVENT_TYPE_WORKFLOW_EXECUTION_") else None)(
            events_of(hosts, wid, second_run)))
        starts = completed_activities(events, "codeact.sandbox_start")
        assert [s["taskQueue"]["name"] for s in starts] == [hosts.queue], starts
        temporal(hosts, "workflow", "signal", "--workflow-id", wid, "--name", "stop_chat")
        # Turn 2 ended the second run too; the third (which carried the flag on from the move's
        # start) stops the sandbox where it moved.
        assert events[-1]["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW", events[-1]
        closed = "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"
        last = wait_for("the chat closed", lambda: (lambda ev: ev if ev[-1]["eventType"] == closed
                                                    else None)(events_of(hosts, wid)))
        payload = last[-1]["workflowExecutionCompletedEventAttributes"]["result"]["payloads"][0]
        result = json.loads(base64.b64decode(payload["data"]))
        assert result["reason"] == "stopped" and result["runs"] == 3, result
        hosts.save_history(wid, "chat_moved_after_continue_as_new.json", second_run)
    finally:
        if not h2.running():
            h2.start()
        hosts.close()
        hosts.remove(wid, shared)
