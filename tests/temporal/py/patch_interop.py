"""Patch markers across SDKs: the Python temporalio SDK runs or replays workflow "Interop",
the twin of the C++ interop_workflow (tests/temporal/test_workflows.hpp):

    if patched("greet-v2"): return compose_greeting("v2") else: return compose_greeting("v1")

Usage:
  patch_interop.py run --address A --task-queue Q --workflow-id ID --out FILE
      hosts Interop and compose_greeting in a Python worker, runs it, writes the history JSON
  patch_interop.py replay --history FILE
      replays a history (e.g. written by the C++ worker) with the Python Interop
Prints one JSON object on stdout.
"""
import argparse
import asyncio
import json
import os
import sys
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner, Worker
from temporalio.client import WorkflowHistory


@activity.defn(name="compose_greeting")
async def compose_greeting(name: str) -> str:
    return f"Hello, {name}!"


@workflow.defn(name="Interop")
class Interop:
    @workflow.run
    async def run(self) -> str:
        name = "v2" if workflow.patched("greet-v2") else "v1"
        return await workflow.execute_activity(
            "compose_greeting", name, start_to_close_timeout=timedelta(seconds=10))


async def run(args) -> dict:
    client = await Client.connect(args.address)
    async with Worker(client, task_queue=args.task_queue, workflows=[Interop],
                      activities=[compose_greeting], workflow_runner=UnsandboxedWorkflowRunner()):
        handle = await client.start_workflow(
            "Interop", id=args.workflow_id, task_queue=args.task_queue,
            execution_timeout=timedelta(seconds=60))
        result = await handle.result()
        history = await handle.fetch_history()
    with open(args.out, "w") as f:
        f.write(history.to_json())
    return {"result": result}


async def replay(args) -> dict:
    with open(args.history) as f:
        text = f.read()
    history = WorkflowHistory.from_json("interop", text)
    replayer = Replayer(workflows=[Interop], workflow_runner=UnsandboxedWorkflowRunner())
    try:
        await replayer.replay_workflow(history)
        return {"ok": True}
    except Exception as err:  # the replayer's nondeterminism error, reported to the C++ test
        return {"ok": False, "error": f"{type(err).__name__}: {err}"}


async def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["run", "replay"])
    p.add_argument("--address")
    p.add_argument("--task-queue")
    p.add_argument("--workflow-id")
    p.add_argument("--out")
    p.add_argument("--history")
    args = p.parse_args()
    fn = run if args.mode == "run" else replay
    out = await asyncio.wait_for(fn(args), timeout=90)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    code = asyncio.run(main())
    sys.stdout.flush()
    os._exit(code)  # skip interpreter teardown, as client_scenarios.py does
