"""Drives C++-hosted workflows with the official Python temporalio client.

Usage: client_scenarios.py SCENARIO --address HOST:PORT --task-queue Q --workflow-id ID
Prints one JSON object on stdout with what the Python client saw.
"""
import argparse
import asyncio
import json
import os
import sys
from datetime import timedelta

from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError


async def scenario(client: Client, args) -> dict:
    handle = await client.start_workflow(
        "Scenario", {"name": "Ada", "sleep_ms": 300}, id=args.workflow_id, task_queue=args.task_queue,
        execution_timeout=timedelta(seconds=60))
    # Wait until the workflow waits for its signal, answering queries on the way.
    stages = []
    for _ in range(300):
        state = await handle.query("state")
        if not stages or stages[-1] != state["stage"]:
            stages.append(state["stage"])
        if state["stage"] == "waiting":
            break
        await asyncio.sleep(0.05)
    await handle.signal("finish", {"by": "python", "n": 42})
    result = await handle.result()
    final_state = await handle.query("state")
    return {"result": result, "stages": stages, "final_state": final_state}


async def reject(client: Client, args) -> dict:
    try:
        result = await client.execute_workflow(
            "Reject", "", id=args.workflow_id, task_queue=args.task_queue,
            execution_timeout=timedelta(seconds=60))
        return {"unexpected_result": result}
    except WorkflowFailureError as err:
        cause = err.cause
        out = {"error": type(cause).__name__, "message": str(cause.message if hasattr(cause, "message") else cause)}
        if isinstance(cause, ApplicationError):
            out.update({"type": cause.type, "non_retryable": cause.non_retryable})
        return out


async def hello(client: Client, args) -> dict:
    result = await client.execute_workflow(
        "HelloWorkflow", "Python", id=args.workflow_id, task_queue=args.task_queue,
        execution_timeout=timedelta(seconds=60))
    return {"result": result}


async def cancel(client: Client, args) -> dict:
    handle = await client.start_workflow(
        "Cancellable", args=[args.arg, "throw"], id=args.workflow_id, task_queue=args.task_queue,
        execution_timeout=timedelta(seconds=60))
    # Cancel once the workflow's activity is running.
    for _ in range(300):
        desc = await handle.describe()
        if desc.raw_description.pending_activities:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)
    await handle.cancel()
    out = {}
    try:
        out["unexpected_result"] = await handle.result()
    except WorkflowFailureError as err:
        out["error"] = type(err.cause).__name__
    desc = await handle.describe()
    out["status"] = desc.status.name if desc.status else None
    return out


async def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("scenario", choices=["scenario", "reject", "hello", "cancel"])
    p.add_argument("--address", required=True)
    p.add_argument("--task-queue", required=True)
    p.add_argument("--workflow-id", required=True)
    p.add_argument("--arg", default="")
    args = p.parse_args()
    client = await Client.connect(args.address)
    fn = {"scenario": scenario, "reject": reject, "hello": hello, "cancel": cancel}[args.scenario]
    out = await asyncio.wait_for(fn(client, args), timeout=90)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    code = asyncio.run(main())
    sys.stdout.flush()
    # Skip interpreter teardown: the SDK's native runtime has been seen to crash there.
    os._exit(code)
