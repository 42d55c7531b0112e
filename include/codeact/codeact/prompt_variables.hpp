// The seed's prompt variables, read from a live sandbox, and the instructions re-rendered from
// them before every model request.
//
//   container_id            the sandbox id
//   python_packages         from the sandbox's labels (what it was started or installed with)
//   system_packages         likewise
//   sandbox_variable_names  name -> type name, from the kernel
//   sandbox_files           paths under /output
//   tools_as_func           the functions cells may call (SandboxFunctions::tools_as_func),
//                           [] without
//
// Both functions read the sandbox through a SandboxBackend (blocking). Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "codeact/agent/agent.hpp"
#include "codeact/agent/prompts.hpp"
#include "codeact/core/result.hpp"
#include "codeact/functions/sandbox_functions.hpp"
#include "codeact/sandbox/sandbox_backend.hpp"

namespace codeact::codeact {

// The variables of `sandbox_id` now. `functions` may be null. Errors of the backend (and of
// analysing Python functions) are returned.
core::Result<agent::PromptVariables> sandbox_prompt_variables(
    sandbox::SandboxBackend& backend, const std::string& sandbox_id,
    functions::SandboxFunctions* functions);

// Instructions rendered from `prompt`'s instructions template with sandbox_prompt_variables
// before every model request (the reading runs on a thread when the RunContext has an executor).
// tools_as_func is computed once per returned function: functions do not change during a run.
// The backend and functions are shared, and must outlive the function.
agent::InstructionsFn sandbox_instructions(std::shared_ptr<const agent::AgentPrompt> prompt,
                                           std::shared_ptr<sandbox::SandboxBackend> backend,
                                           std::string sandbox_id,
                                           std::shared_ptr<functions::SandboxFunctions> functions);

}  // namespace codeact::codeact
