"""Local activity markers across SDKs: the Python temporalio SDK runs or replays workflow
"LocalInterop", the twin of the C++ local_interop_workflow (tests/temporal/local_activity_test.cpp):

    a = local activity compose_greeting("local"); b = activity compose_greeting("remote")
    return a + " " + b

Usage:
  local_activity_interop.py run --address A --task-queue Q --workflow-id ID --out FILE
      hosts LocalInterop and compose_greeting in a Python worker, runs it, writes the history JSON
  local_activity_interop.py replay --history FILE
      replays a history (e.g. written by the C++ worker) with the Python LocalInterop
Prints one JSON object on stdout.
"""
import argparse
import asyncio
import json
import os
import sys
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner, Worker


@activity.defn(name="compose_greeting")
async def compose_greeting(name: str) -> str:
    return f"Hello, {name}!"


@workflow.defn(name="LocalInterop")
class LocalInterop:
    @workflow.run
    async def run(self) -> str:
        a = await workflow.execute_local_activity(
            "compose_greeting", "local", start_to_close_timeout=timedelta(seconds=10))
        b = await workflow.execute_activity(
            "compose_greeting", "remote", start_to_close_timeout=timedelta(seconds=10))
        return a + " " + b


async def run(args) -> dict:
    client = await Client.connect(args.address)
    async with Worker(client, task_queue=args.task_queue, workflows=[LocalInterop],
                      activities=[compose_greeting], workflow_runner=UnsandboxedWorkflowRunner()):
        handle = await client.start_workflow(
            "LocalInterop", id=args.workflow_id, task_queue=args.task_queue,
            execution_timeout=timedelta(seconds=60))
        result = await handle.result()
        history = await handle.fetch_history()
    with open(args.out, "w") as f:
        f.write(history.to_json())
    return {"result": result}


async def replay(args) -> dict:
    with open(args.history) as f:
        text = f.read()
    history = WorkflowHistory.from_json("local-interop", text)
    replayer = Replayer(workflows=[LocalInterop], workflow_runner=UnsandboxedWorkflowRunner())
    try:
        await replayer.replay_workflow(history)
    except Exception as e:  # noqa: BLE001 - the message is the test's evidence
        return {"ok": False, "error": f"{type(e).__name__}: {e}"}
    return {"ok": True}


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--address", required=True)
    r.add_argument("--task-queue", required=True)
    r.add_argument("--workflow-id", required=True)
    r.add_argument("--out", required=True)
    p = sub.add_parser("replay")
    p.add_argument("--history", required=True)
    args = parser.parse_args()
    out = asyncio.run(asyncio.wait_for(run(args) if args.command == "run" else replay(args), 90))
    print(json.dumps(out))
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown, as client_scenarios.py does


if __name__ == "__main__":
    main()
