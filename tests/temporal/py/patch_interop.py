"""Patch markers across SDKs: the Python temporalio SDK runs or replays workflow "Interop",
the twin of the C++ interop_workflow (tests/temporal/test_workflows.hpp):

    if patched("greet-v2"): return compose_greeting("v2") else: return compose_greeting("v1")

Usage (interop.py): patch_interop.py run --address A --task-queue Q --workflow-id ID --out FILE
                    patch_interop.py replay --history FILE
"""
from datetime import timedelta

from temporalio import workflow

import interop


@workflow.defn(name="Interop")
class Interop:
    @workflow.run
    async def run(self) -> str:
        name = "v2" if workflow.patched("greet-v2") else "v1"
        return await workflow.execute_activity(
            "compose_greeting", name, start_to_close_timeout=timedelta(seconds=10))


if __name__ == "__main__":
    interop.main(Interop, "Interop")
