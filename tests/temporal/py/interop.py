"""The driver the cross-SDK scripts share (patch_interop.py, local_activity_interop.py): run a
Python twin of a C++ test workflow in a Python worker and write its history, or replay a history
(e.g. one the C++ worker wrote) against the twin. Prints one JSON object on stdout:

  SCRIPT run --address A --task-queue Q --workflow-id ID --out FILE   -> {"result": ...}
  SCRIPT replay --history FILE                                         -> {"ok": bool[, "error"]}
"""
import argparse
import asyncio
import json
import os
import sys
from datetime import timedelta

from temporalio import activity
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner, Worker


@activity.defn(name="compose_greeting")
async def compose_greeting(name: str) -> str:
    return f"Hello, {name}!"


async def _run(args, workflow_cls, name) -> dict:
    client = await Client.connect(args.address)
    async with Worker(client, task_queue=args.task_queue, workflows=[workflow_cls],
                      activities=[compose_greeting], workflow_runner=UnsandboxedWorkflowRunner()):
        handle = await client.start_workflow(
            name, id=args.workflow_id, task_queue=args.task_queue,
            execution_timeout=timedelta(seconds=60))
        result = await handle.result()
        history = await handle.fetch_history()
    with open(args.out, "w") as f:
        f.write(history.to_json())
    return {"result": result}


async def _replay(args, workflow_cls) -> dict:
    with open(args.history) as f:
        text = f.read()
    history = WorkflowHistory.from_json("interop", text)
    replayer = Replayer(workflows=[workflow_cls], workflow_runner=UnsandboxedWorkflowRunner())
    try:
        await replayer.replay_workflow(history)
        return {"ok": True}
    except Exception as err:  # the replayer's nondeterminism error, reported to the C++ test
        return {"ok": False, "error": f"{type(err).__name__}: {err}"}


def main(workflow_cls, name) -> None:
    """Runs the command line above for `workflow_cls`, registered as workflow type `name`."""
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["run", "replay"])
    p.add_argument("--address")
    p.add_argument("--task-queue")
    p.add_argument("--workflow-id")
    p.add_argument("--out")
    p.add_argument("--history")
    args = p.parse_args()
    work = _run(args, workflow_cls, name) if args.mode == "run" else _replay(args, workflow_cls)
    print(json.dumps(asyncio.run(asyncio.wait_for(work, timeout=90))))
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown, as client_scenarios.py does
