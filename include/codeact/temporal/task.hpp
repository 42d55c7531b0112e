// Task<T>: the coroutine type of workflow code, core's one Task (core/task.hpp). A workflow
// function returns Task<Json>; helper coroutines, and the agent loop, are Tasks too and are
// awaited directly. In a workflow, Tasks are resumed only by the workflow's deterministic
// executor (workflow.hpp); an exception escaping a Task propagates to its awaiter.
#pragma once

#include "codeact/core/task.hpp"

namespace codeact::temporal {

using core::Task;

}  // namespace codeact::temporal
