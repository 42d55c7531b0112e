"""The Python baseline of the Temporal benchmark: the same "Bench" workflow and "noop" activity."""
import argparse
import asyncio
import signal
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker


@activity.defn(name="noop")
async def noop(i: int) -> int:
    return i


@workflow.defn(name="Bench")
class Bench:
    @workflow.run
    async def run(self, n: int) -> int:
        for i in range(n):
            await workflow.execute_activity("noop", i, start_to_close_timeout=timedelta(seconds=10))
        return n


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--address", required=True)
    p.add_argument("--task-queue", required=True)
    args = p.parse_args()
    client = await Client.connect(args.address)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, stop.set)
    async with Worker(client, task_queue=args.task_queue, workflows=[Bench], activities=[noop]):
        print("ready", flush=True)
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main())
