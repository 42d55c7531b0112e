"""Local activity markers across SDKs: the Python temporalio SDK runs or replays workflow
"LocalInterop", the twin of the C++ local_interop_workflow
(tests/temporal/local_activity_workflows.hpp):

    a = local activity compose_greeting("local"); b = activity compose_greeting("remote")
    return a + " " + b

Usage (interop.py): local_activity_interop.py run --address A --task-queue Q --workflow-id ID --out FILE
                    local_activity_interop.py replay --history FILE
"""
from datetime import timedelta

from temporalio import workflow

import interop


@workflow.defn(name="LocalInterop")
class LocalInterop:
    @workflow.run
    async def run(self) -> str:
        a = await workflow.execute_local_activity(
            "compose_greeting", "local", start_to_close_timeout=timedelta(seconds=10))
        b = await workflow.execute_activity(
            "compose_greeting", "remote", start_to_close_timeout=timedelta(seconds=10))
        return a + " " + b


if __name__ == "__main__":
    interop.main(LocalInterop, "LocalInterop")
