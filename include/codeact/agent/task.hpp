// The coroutine vocabulary the agent loop is written in: core's one Task type (core/task.hpp)
// and its executors (core/executor.hpp), under the names agent code has always used.
//
// Why coroutines: the loop is written once and runs in two modes (DESIGN.md §1). In *direct* mode
// a RunLoop drives it on the calling thread and blocking work (a tool body) is offloaded to a
// thread; in *durable* mode a Temporal workflow's single-threaded deterministic executor drives the
// same coroutine and the model request / tool calls are awaitables that schedule activities. The
// loop only ever `co_await`s Tasks, so it never blocks and never touches threads itself. Because
// agent::Task and temporal::Task are the same type, workflow code awaits the loop directly.
#pragma once

#include "codeact/core/executor.hpp"
#include "codeact/core/task.hpp"

namespace codeact::agent {

using core::Executor;
using core::offload;
using core::RunLoop;
using core::Task;
using core::when_all;

}  // namespace codeact::agent
