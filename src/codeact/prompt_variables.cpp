// Prompt variables from a live sandbox, and instructions rendered from them per request.
#include "codeact/codeact/prompt_variables.hpp"

#include <mutex>
#include <optional>
#include <vector>

namespace codeact::codeact {
namespace {

using core::Json;
using core::Result;

Result<std::vector<std::string>> tools_of(sandbox::SandboxBackend& backend, const std::string& id,
                                          functions::SandboxFunctions* functions) {
  if (functions == nullptr) return std::vector<std::string>{};
  return functions->tools_as_func(backend, id);
}

Result<agent::PromptVariables> gather(sandbox::SandboxBackend& backend, const std::string& id,
                                      std::vector<std::string> tools_as_func) {
  agent::PromptVariables v;
  v.container_id = id;
  CODEACT_TRY(auto info, backend.info(id));
  v.python_packages = info.python_packages;
  v.system_packages = info.system_packages;
  CODEACT_TRY(Json vars, backend.variables(id));
  for (const auto& item : vars.value("variables", Json::array())) {
    v.sandbox_variable_names[core::json_string(item, "name")] = core::json_string(item, "type");
  }
  CODEACT_TRY(auto files, backend.list_files(id, "/output"));
  for (const auto& f : files) v.sandbox_files.push_back(f.path);
  v.tools_as_func = std::move(tools_as_func);
  return v;
}

struct InstructionsState {
  std::shared_ptr<const agent::AgentPrompt> prompt;
  std::shared_ptr<sandbox::SandboxBackend> backend;
  std::string sandbox_id;
  std::shared_ptr<functions::SandboxFunctions> functions;
  std::mutex mu;
  std::optional<std::vector<std::string>> tools_as_func;  // GUARDED_BY(mu)

  Result<agent::PromptVariables> read() {
    std::vector<std::string> tools;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!tools_as_func) {
        CODEACT_TRY(auto t, tools_of(*backend, sandbox_id, functions.get()));
        tools_as_func = std::move(t);
      }
      tools = *tools_as_func;
    }
    return gather(*backend, sandbox_id, std::move(tools));
  }
};

// No temporaries with destructors inside the co_await expression (g++ 12 mishandles them):
// the work and its task are named locals of this frame.
agent::Task<Result<std::string>> render(std::shared_ptr<InstructionsState> st,
                                        agent::Executor* executor) {
  std::function<Result<agent::PromptVariables>()> work = [st] { return st->read(); };
  auto task = agent::offload(executor, work);
  auto vars = co_await task;
  if (!vars.ok())
    co_return std::move(vars).error().with_context("reading sandbox \"" + st->sandbox_id + "\"");
  co_return st->prompt->instructions.render(vars->to_json());
}

}  // namespace

Result<agent::PromptVariables> sandbox_prompt_variables(sandbox::SandboxBackend& backend,
                                                        const std::string& sandbox_id,
                                                        functions::SandboxFunctions* functions) {
  CODEACT_TRY(auto tools, tools_of(backend, sandbox_id, functions));
  return gather(backend, sandbox_id, std::move(tools));
}

agent::InstructionsFn sandbox_instructions(std::shared_ptr<const agent::AgentPrompt> prompt,
                                           std::shared_ptr<sandbox::SandboxBackend> backend,
                                           std::string sandbox_id,
                                           std::shared_ptr<functions::SandboxFunctions> functions) {
  auto st = std::make_shared<InstructionsState>();
  st->prompt = std::move(prompt);
  st->backend = std::move(backend);
  st->sandbox_id = std::move(sandbox_id);
  st->functions = std::move(functions);
  return [st](const agent::RunContext& ctx) { return render(st, ctx.executor); };
}

}  // namespace codeact::codeact
